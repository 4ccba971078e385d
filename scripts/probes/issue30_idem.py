"""Issue 30 item 2 probe: a read token replays an admin's Idempotency-Key and
body for a report against private (central) data. Usage: issue30_idem.py BIN (privgend to probe; SQLite in a temporary dir)"""
import shutil, json, math, os, subprocess, sys, tempfile, time, urllib.request
BIN = sys.argv[1]
d = tempfile.mkdtemp(prefix="h30p2-")
port = 18900 + os.getpid() % 90
p = subprocess.Popen([BIN, "--listen", f"127.0.0.1:{port}", "--data-dir", d], stderr=subprocess.DEVNULL)
time.sleep(1.5)
U = f"http://127.0.0.1:{port}"
A = open(f"{d}/admin.token").read().strip()
def call(m, path, tok, body=None, key=None):
    h = {"Authorization": f"Bearer {tok}", "Content-Type": "application/json"}
    if key: h["Idempotency-Key"] = key
    rq = urllib.request.Request(U + path, method=m, headers=h, data=json.dumps(body).encode() if body is not None else None)
    try:
        with urllib.request.urlopen(rq) as r: return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e: return e.code, json.loads(e.read() or b"null")
def ds(priv, n):
    st, o = call("POST", "/v1/datasets", A, {"name": "d", "shape": [2], "range": [-1, 1], "privacy": priv})
    rows = [[0.8 * math.cos(0.37 * i), 0.8 * math.sin(0.37 * i)] for i in range(n)]
    call("POST", f"/v1/datasets/{o['id']}/rows", A, {"rows": rows})
    return o["id"]
loc = ds({"model": "local", "mechanism": "gaussian", "epsilon": 1, "delta": 1e-5, "sensitivity": 0.5, "noise_scale": 2.5}, 300)
priv = ds({"model": "central", "budget": {"epsilon": 5, "delta": 1e-5}}, 200)
st, j = call("POST", "/v1/jobs", A, {"dataset_id": loc, "method": "entropic_gan", "model": {"hidden": [16]}, "train": {"steps": 40, "batch_size": 32}, "ot": {"max_iter": 30}, "seed": 7})
for _ in range(300):
    if call("GET", f"/v1/jobs/{j['id']}", A)[1]["status"] == "succeeded": break
    time.sleep(0.1)
R = call("POST", "/v1/tokens", A, {"scope": "read"})[1]["token"]
path = f"/v1/jobs/{j['id']}/reports"
body = {"against": priv, "n": 200}
print("admin POST report (private data), key k1:", call("POST", path, A, body, "k1")[0])
print("read  POST same body, no key          :", call("POST", path, R, body)[0])
st, o = call("POST", path, R, body, "k1")
print("read  POST same body, key k1          :", st, ("(the admin's report view: id %s)" % o.get("id")) if st == 202 else "")
print("read  POST other body (n 201), key k1 :", call("POST", path, R, {"against": priv, "n": 201}, "k1")[0])
p.terminate(); p.wait()
shutil.rmtree(d, ignore_errors=True)
