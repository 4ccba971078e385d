#!/usr/bin/env python3
"""Serving speed (issue 21's table) in one run: starts privgend on loopback
with a fresh data dir, trains a finished dp_sinkhorn MLP [256, 256] job on a
2-D and on a 784-D ([1, 28, 28]) dataset, then measures with wrk
(-t2 -c32 -d5s) /healthz and samples?n=64 as JSON and NPY on both, and the
throughput of one large NPY response (n = 10000 x 784) next to the forward
pass alone on the same checkpoint (privgen-bench sample, one thread), whose
ratio is the share of the request spent generating. Also prints the float
printer's speed (privgen-bench fmt). Prints JSON lines, with the server's
CPU per request next to each rate and the load average (the machine is
shared: rates move with the load, CPU per request much less).

Environment: PRIVGEN_BENCH (path of privgen-bench; privgend is its sibling),
PRIVGEN_SERVE_SECONDS (wrk duration, default 5)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

BENCH = os.environ.get("PRIVGEN_BENCH", "build/bin/privgen-bench")
PRIVGEND = os.path.join(os.path.dirname(BENCH), "privgend")
SECONDS = int(os.environ.get("PRIVGEN_SERVE_SECONDS", "5"))
LARGE_N = 10000


def lcg_rows(n, d, lo, hi):
    x, out = 987654321, []
    for _ in range(n):
        row = []
        for _ in range(d):
            x = (x * 1103515245 + 12345) & 0xFFFFFFFF
            row.append(round(lo + (hi - lo) * ((x >> 8) / 16777216.0), 4))
        out.append(row)
    return out


def call(port, token, method, path, body=None, raw=False):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer {token}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        data = r.read()
        return data if raw else json.loads(data or b"null")


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (Linux /proc)."""
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def wrk(url, token, pid=None):
    cmd = ["wrk", "-t2", "-c32", f"-d{SECONDS}s", "--latency", url]
    if token:
        cmd[1:1] = ["-H", f"Authorization: Bearer {token}"]
    c0 = cpu_seconds(pid) if pid else None
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    c1 = cpu_seconds(pid) if pid else None
    rps = p99 = None
    errors = 0
    for line in out.splitlines():
        f = line.split()
        if line.startswith("Requests/sec:"):
            rps = float(f[1])
        if line.strip().startswith("Non-2xx"):
            errors += int(f[-1])
        if f and f[0] == "99%":
            v = f[1]
            p99 = (float(v[:-2]) if v.endswith("ms") else float(v[:-2]) / 1e3
                   if v.endswith("us") else float(v[:-1]) * 1e3)
    res = {"rps": rps, "p99_ms": p99, "non_2xx": errors}
    if c0 is not None and c1 is not None and rps:
        # the server's CPU per request: steadier than rates on a shared machine
        res["server_cpu_us"] = round((c1 - c0) / (rps * SECONDS) * 1e6, 1)
    return res


def train(port, token, shape, rng, n):
    d = 1
    for s in shape:
        d *= s
    ds = call(port, token, "POST", "/v1/datasets",
              {"name": f"serve{d}", "shape": shape, "range": rng,
               "privacy": {"model": "central", "budget": {"epsilon": 100, "delta": 1e-5}}})["id"]
    call(port, token, "POST", f"/v1/datasets/{ds}/rows", {"rows": lcg_rows(n, d, *rng)})
    spec = {"dataset_id": ds, "method": "dp_sinkhorn", "model": {"hidden": [256, 256]},
            "train": {"steps": 4, "batch_size": 64}, "checkpoint_every": 4,
            "privacy": {"epsilon": 50, "delta": 1e-6}, "seed": 3}
    job = call(port, token, "POST", "/v1/jobs", spec)["id"]
    while True:
        j = call(port, token, "GET", f"/v1/jobs/{job}")
        if j["status"] in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.1)
    if j["status"] != "succeeded":
        raise SystemExit(f"job {job} {j['status']}: {j.get('error')}")
    return job


def main():
    if not shutil.which("wrk"):
        print(json.dumps({"bench": "serve", "skipped": "wrk is not installed"}))
        return 0
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    tmp = tempfile.mkdtemp(prefix="pgserve-")
    port_file = os.path.join(tmp, "port")
    srv = subprocess.Popen([PRIVGEND, "--listen", "127.0.0.1:0", "--data-dir", tmp + "/data",
                            "--port-file", port_file, "--max-samples", str(LARGE_N)],
                           env=env, stderr=subprocess.DEVNULL)
    try:
        for _ in range(1000):
            if os.path.exists(port_file):
                break
            time.sleep(0.01)
        port = int(open(port_file).read())
        token = open(tmp + "/data/admin.token").read().strip()
        job2 = train(port, token, [2], [-4, 4], 400)
        job784 = train(port, token, [1, 28, 28], [0, 1], 200)
        base = f"http://127.0.0.1:{port}"
        res = {"bench": "serve", "tool": f"wrk -t2 -c32 -d{SECONDS}s", "model": "dp_sinkhorn [256,256]",
               "load_average_before": round(os.getloadavg()[0], 2)}
        res["healthz"] = wrk(f"{base}/healthz", None, srv.pid)
        for name, job in (("2d", job2), ("784d", job784)):
            for fmt in ("json", "npy"):
                res[f"{name}_n64_{fmt}"] = wrk(
                    f"{base}/v1/jobs/{job}/samples?n=64&format={fmt}&seed=1", token, srv.pid)
        res["2d_json_over_healthz"] = round(res["2d_n64_json"]["rps"] / res["healthz"]["rps"], 3)
        res["784d_json_over_npy"] = round(res["784d_n64_json"]["rps"] / res["784d_n64_npy"]["rps"], 3)
        best = None
        for i in range(3):
            t0 = time.perf_counter()
            body = call(port, token, "GET",
                        f"/v1/jobs/{job784}/samples?n={LARGE_N}&format=npy&seed={i}", raw=True)
            dt = time.perf_counter() - t0
            best = dt if best is None or dt < best else best
        res["784d_n10000_npy"] = {"bytes": len(body), "seconds": round(best, 4),
                                  "gb_per_second": round(len(body) / best / 1e9, 3)}
        ck_dir = os.path.join(tmp, "data", "checkpoints", job784)
        ck = os.path.join(ck_dir, sorted(os.listdir(ck_dir), key=lambda f: int(f.split(".")[0]))[-1])
        fwd = subprocess.run([BENCH, "sample", "--checkpoint", ck, "--n", str(LARGE_N), "--reps", "3"],
                             env=env, capture_output=True, text=True)
        if fwd.returncode == 0:  # older builds have no `sample` subcommand
            us = json.loads(fwd.stdout)["us_per_call"]
            res["784d_n10000_npy"]["forward_seconds"] = round(us / 1e6, 4)
            res["784d_n10000_npy"]["forward_share"] = round(us / 1e6 / best, 3)
        res["load_average_after"] = round(os.getloadavg()[0], 2)
        print(json.dumps(res))
        fmt = subprocess.run([BENCH, "fmt"], env=env, capture_output=True, text=True)
        if fmt.returncode == 0:
            print(fmt.stdout.strip())
    finally:
        srv.terminate()
        srv.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
