#!/usr/bin/python3
"""30.10 probe: GET samples?n=N on a swd_flow job, then `privgen samples`.
usage: FLOW='{"steps": 3000}' issue30_flow_samples.py PRIVGEND PRIVGEN N [rows] [privgend flags...]
e.g. ... 40000 500 --http-timeout-seconds 5 --max-samples 100000 (a block of 4096 rows then
takes longer than the 5 s idle timeout)"""
import json, os, subprocess, sys, tempfile, time, urllib.request, math
BIN, CLI, N = sys.argv[1], sys.argv[2], int(sys.argv[3])
ROWS = int(sys.argv[4]) if len(sys.argv) > 4 else 2000
d = tempfile.mkdtemp(prefix="probe30f-"); pf = os.path.join(d, "port")
srv = subprocess.Popen([BIN, "--listen", "127.0.0.1:0", "--data-dir", d, "--port-file", pf] + sys.argv[5:],
                       stderr=open(os.path.join(d, "log"), "w"))
for _ in range(200):
    if os.path.exists(pf) and open(pf).read().strip(): break
    time.sleep(0.05)
time.sleep(0.3)
url = "http://127.0.0.1:%s" % open(pf).read().strip()
tok = open(os.path.join(d, "admin.token")).read().strip()
def call(method, path, body=None, ctype="application/json"):
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    rq = urllib.request.Request(url + path, data=data, method=method,
                                headers={"Authorization": "Bearer " + tok, "Content-Type": ctype})
    try:
        with urllib.request.urlopen(rq, timeout=900) as r: return r.status, r.read()
    except urllib.error.HTTPError as e: return e.code, e.read()
try:
    st, b = call("POST", "/v1/datasets", {"name": "c", "shape": [2], "range": [-1, 1],
                 "privacy": {"model": "central", "budget": {"epsilon": 10, "delta": 1e-5}}})
    ds = json.loads(b)["id"]
    rows = "\n".join("%f,%f" % (0.8 * math.cos(0.01 * i), 0.8 * math.sin(0.01 * i)) for i in range(ROWS)).encode()
    call("POST", "/v1/datasets/%s/rows" % ds, rows, "text/csv")
    st, b = call("POST", "/v1/jobs", {"dataset_id": ds, "method": "swd_flow", "privacy": {"epsilon": 1, "delta": 1e-5}, "flow": json.loads(os.environ.get("FLOW", "{}"))})
    job = json.loads(b)["id"]
    while json.loads(call("GET", "/v1/jobs/" + job)[1])["status"] in ("queued", "running"): time.sleep(0.5)
    j = json.loads(call("GET", "/v1/jobs/" + job)[1]); print("job", j["status"], j["spec"].get("flow"))
    t = time.time()
    try:
        st, b = call("GET", "/v1/jobs/%s/samples?n=%d&format=csv&seed=1" % (job, N))
        print("GET samples n=%d: HTTP %d, %d bytes, %.1f s" % (N, st, len(b), time.time() - t))
    except Exception as ex:  # a body cut mid-way
        print("GET samples n=%d: cut after %.1f s: %r" % (N, time.time() - t, ex))
    t = time.time()
    p = subprocess.run([CLI, "samples", job, "-n", str(N), "--format", "csv", "--url", url, "--token", tok, "-o", os.path.join(d, "s.csv")],
                       capture_output=True, text=True)
    print("CLI exit %d in %.1f s: %s" % (p.returncode, time.time() - t, (p.stderr or p.stdout)[-300:]))
finally:
    srv.terminate(); srv.wait()
