#!/usr/bin/python3
"""Issue 30 items 5, 6, 7 probes against a privgend binary (server CPU from /proc).
usage: issue30_probe.py PRIVGEND [5] [6] [7]"""
import json, os, subprocess, sys, tempfile, time, urllib.request, resource

BIN = sys.argv[1]
items = sys.argv[2:] or ["5", "6", "7"]
d = tempfile.mkdtemp(prefix="probe30-")
pf = os.path.join(d, "port")
srv = subprocess.Popen([BIN, "--listen", "127.0.0.1:0", "--data-dir", d, "--port-file", pf],
                       stderr=open(os.path.join(d, "log"), "w"))
for _ in range(200):
    if os.path.exists(pf) and open(pf).read().strip(): break
    time.sleep(0.05)
time.sleep(0.3)
url = "http://127.0.0.1:%s" % open(pf).read().strip()
tok = open(os.path.join(d, "admin.token")).read().strip()

def call(method, path, body=None):
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    rq = urllib.request.Request(url + path, data=data, method=method,
                                headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(rq, timeout=600) as r: return r.status, r.read()
    except urllib.error.HTTPError as e: return e.code, e.read()

def cpu(): # server process CPU seconds
    with open("/proc/%d/stat" % srv.pid) as f: p = f.read().split(")")[1].split()
    return (int(p[11]) + int(p[12])) / os.sysconf("SC_CLK_TCK")

def short(b): return b[:160].decode(errors="replace")
try:
    if "5" in items:
        cols = [{"name": "c%d" % c, "type": "categorical",
                 "categories": ["%s%08x" % ("k" * 120, i) for i in range(4096)]} for c in range(16)]
        body = {"name": "wide", "privacy": {"model": "public"}, "columns": cols}
        t = cpu(); st, b = call("POST", "/v1/datasets", body)
        print("30.5 create 16x4096x128B (%.1f MB): HTTP %d, server CPU %.2f s: %s" % (len(json.dumps(body)) / 1e6, st, cpu() - t, short(b)))
        if st == 201:
            ds = json.loads(b)["id"]; t = cpu(); st, b = call("GET", "/v1/datasets/" + ds)
            print("30.5 read: HTTP %d, server CPU %.2f s" % (st, cpu() - t))
        for c in cols: c["categories"] = ["%08x" % i for i in range(4096)]
        t = cpu(); st, b = call("POST", "/v1/datasets", body)
        print("30.5 create 16x4096x8B (%.1f MB): HTTP %d, server CPU %.2f s" % (len(json.dumps(body)) / 1e6, st, cpu() - t))
        ds = json.loads(b)["id"]; t = cpu(); st, b = call("GET", "/v1/datasets/" + ds)
        print("30.5 read: HTTP %d, server CPU %.2f s" % (st, cpu() - t))
    if "6" in items or "7" in items:
        st, b = call("POST", "/v1/datasets", {"name": "c", "shape": [2], "range": [-1, 1],
                     "privacy": {"model": "central", "budget": {"epsilon": 100, "delta": 1e-5}}})
        cds = json.loads(b)["id"]
        rows = "\n".join("%f,%f" % (0.5 * ((i * 7) % 13) / 13, -0.3) for i in range(200)).encode()
        rq = urllib.request.Request(url + "/v1/datasets/%s/rows" % cds, data=rows, method="POST",
                                    headers={"Authorization": "Bearer " + tok, "Content-Type": "text/csv"})
        urllib.request.urlopen(rq).read()
    if "6" in items:
        for m in ["dp_sinkhorn", "swd_flow", "swd_flow_r", "swd_gen"]:
            for key, v in [("privacy", {"noise_multiplier": 1e-300}), ("privacy", {"noise_multiplier": 1e-3})] + \
                          ([("calibration", {"class_means": True, "noise_multiplier": 1e-300})] if m == "dp_sinkhorn" else []):
                spec = {"dataset_id": cds, "method": m, key: v}
                if key == "calibration": spec["privacy"] = {"noise_multiplier": 2}
                st, b = call("POST", "/v1/jobs", spec)
                print("30.6 %-11s %s=%s: HTTP %d %s" % (m, key, json.dumps(v), st, short(b)))
    if "7" in items:
        st, b = call("POST", "/v1/datasets", {"name": "r", "shape": [2], "range": [-1e308, 1e308],
                     "privacy": {"model": "public"}})
        print("30.7 range [-1e308,1e308]: HTTP %d %s" % (st, short(b)))
        st, b = call("POST", "/v1/datasets", {"name": "r", "shape": [2], "range": [-1e300, 1e300],
                     "privacy": {"model": "public"}})
        print("30.7 range [-1e300,1e300]: HTTP %d %s" % (st, short(b)))
finally:
    srv.terminate(); srv.wait()
