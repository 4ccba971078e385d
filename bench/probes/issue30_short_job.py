#!/usr/bin/python3
"""30.11 probe: a charging job killed (-9) mid-run and resumed; what its view says.
usage: issue30_short_job.py PRIVGEND"""
import json, math, os, signal, subprocess, sys, tempfile, time, urllib.request
BIN = sys.argv[1]
d = tempfile.mkdtemp(prefix="probe30k-"); pf = os.path.join(d, "port")
def start():
    if os.path.exists(pf): os.unlink(pf)
    p = subprocess.Popen([BIN, "--listen", "127.0.0.1:0", "--data-dir", d, "--port-file", pf],
                         stderr=open(os.path.join(d, "log"), "a"))
    for _ in range(200):
        if os.path.exists(pf) and open(pf).read().strip(): break
        time.sleep(0.05)
    time.sleep(0.3)
    return p, "http://127.0.0.1:%s" % open(pf).read().strip()
srv, url = start()
tok = open(os.path.join(d, "admin.token")).read().strip()
def call(method, path, body=None, ctype="application/json"):
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    rq = urllib.request.Request(url + path, data=data, method=method,
                                headers={"Authorization": "Bearer " + tok, "Content-Type": ctype})
    try:
        with urllib.request.urlopen(rq, timeout=60) as r: return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e: return e.code, json.loads(e.read())
_, ds = call("POST", "/v1/datasets", {"name": "c", "shape": [2], "range": [-1, 1],
             "privacy": {"model": "central", "budget": {"epsilon": 5, "delta": 1e-5}}})
rows = "\n".join("%f,%f" % (0.8 * math.cos(0.01 * i), 0.8 * math.sin(0.01 * i)) for i in range(400)).encode()
call("POST", "/v1/datasets/%s/rows" % ds["id"], rows, "text/csv")
_, job = call("POST", "/v1/jobs", {"dataset_id": ds["id"], "method": "dp_sinkhorn", "model": {"hidden": [16]},
              "train": {"steps": 3000, "batch_size": 50}, "privacy": {"noise_multiplier": 8.0},
              "ot": {"max_iter": 20}, "checkpoint_every": 500})
while call("GET", "/v1/jobs/" + job["id"])[1]["progress"]["step"] < 1100: time.sleep(0.05)
srv.send_signal(signal.SIGKILL); srv.wait()
srv, url = start()
while True:
    _, j = call("GET", "/v1/jobs/" + job["id"])
    if j["status"] not in ("queued", "running"): break
    time.sleep(0.2)
p = j["progress"]
print("status %s, step %d of %d, steps_short %s, epsilon_spent %.6g, charged (privacy.epsilon) %.6g" %
      (j["status"], p["step"], p["total_steps"], p.get("steps_short"), p["epsilon_spent"], j["privacy"]["epsilon"]))
print("warnings:", j["warnings"])
srv.terminate(); srv.wait()
