#!/usr/bin/env python3
"""Serving speed (issue 21's table) in one run: starts privgend on loopback
with a fresh data dir, trains a finished dp_sinkhorn MLP [256, 256] job on a
2-D and on a 784-D ([1, 28, 28]) dataset, then measures with wrk
(-t2 -c32 -d5s) /healthz and samples?n=64 as JSON and NPY on both:

- fresh (the main figures): no seed, every request draws new rows from the
  secure RNG, so every request runs the forward pass and the encoder;
- seeded: the same URL with seed=1 again and again, i.e. hits of the
  server's body cache (api/body_cache.h) after the first request;
- not_modified: seed=1 with If-None-Match: <its ETag>, answered 304 with no
  body (a build without ETags reports null).

Next to each rate: the server's CPU per request; for the fresh ones also the
forward pass alone for n=64 (privgen-bench sample on the job's checkpoint,
one thread; wall time, and CPU time per call, which a loaded machine inflates
less) and the overhead beyond the model (request CPU minus forward CPU),
to compare with /healthz's CPU per request. Then the throughput of one large
NPY response (n = 10000 x 784) next to the forward pass alone for it, whose
ratio is the share of the request spent generating, and the float printer's
speed (privgen-bench fmt). Prints JSON lines with the load average (the
machine is shared: rates move with the load, CPU per request much less).

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


def wrk(url, token, pid=None, headers=()):
    cmd = ["wrk", "-t2", "-c32", f"-d{SECONDS}s", "--latency", url]
    for h in ([f"Authorization: Bearer {token}"] if token else []) + list(headers):
        cmd[1:1] = ["-H", h]
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
    res = {"rps": rps, "p99_ms": p99, "non_2xx_3xx": errors, "load1": round(os.getloadavg()[0], 2)}
    if c0 is not None and c1 is not None and rps:
        # the server's CPU per request: steadier than rates on a shared machine
        res["server_cpu_us"] = round((c1 - c0) / (rps * SECONDS) * 1e6, 1)
    return res


def latest_checkpoint(tmp, job):
    ck_dir = os.path.join(tmp, "data", "checkpoints", job)
    return os.path.join(ck_dir, sorted(os.listdir(ck_dir), key=lambda f: int(f.split(".")[0]))[-1])


def forward_us(tmp, job, env, n=64, reps=500):
    """The forward pass alone for n rows on the job's latest checkpoint
    (privgen-bench sample, one thread): (best wall microseconds per call,
    process CPU microseconds per call over all 3 * reps calls, measured by
    the bench around its loop so start-up and loading are left out), the
    latter comparable with the server's CPU per request on a loaded machine;
    None when unavailable."""
    fwd = subprocess.run([BENCH, "sample", "--checkpoint", latest_checkpoint(tmp, job), "--n",
                          str(n), "--reps", str(reps)], env=env, capture_output=True, text=True)
    if fwd.returncode != 0:  # older builds have no `sample` subcommand
        return None
    out = json.loads(fwd.stdout)
    return round(out["us_per_call"], 1), round(out.get("cpu_us_per_call", float("nan")), 1)


def etag_of(url, token):
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        r.read()
        return r.headers.get("ETag")


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
        hz_cpu = res["healthz"].get("server_cpu_us")
        jobs = (("2d", job2), ("784d", job784))
        forward = {name: forward_us(tmp, job, env) for name, job in jobs}
        for name, job in jobs:
            for fmt in ("json", "npy"):
                r = wrk(f"{base}/v1/jobs/{job}/samples?n=64&format={fmt}", token, srv.pid)
                if forward[name] is not None and "server_cpu_us" in r:
                    r["forward_us"], r["forward_cpu_us"] = forward[name]
                    r["overhead_us"] = round(r["server_cpu_us"] - r["forward_cpu_us"], 1)
                    r["healthz_cpu_us"] = hz_cpu
                res[f"{name}_n64_{fmt}_fresh"] = r
        for name, job in jobs:
            for fmt in ("json", "npy"):
                res[f"{name}_n64_{fmt}_seeded"] = wrk(
                    f"{base}/v1/jobs/{job}/samples?n=64&format={fmt}&seed=1", token, srv.pid)
        for name, job in jobs:
            url = f"{base}/v1/jobs/{job}/samples?n=64&format=json&seed=1"
            etag = etag_of(url, token)
            res[f"{name}_n64_json_not_modified"] = (
                wrk(url, token, srv.pid, [f"If-None-Match: {etag}"]) if etag else None)
        for kind in ("fresh", "seeded"):
            res[f"2d_json_over_healthz_{kind}"] = round(
                res[f"2d_n64_json_{kind}"]["rps"] / res["healthz"]["rps"], 3)
            res[f"784d_json_over_npy_{kind}"] = round(
                res[f"784d_n64_json_{kind}"]["rps"] / res[f"784d_n64_npy_{kind}"]["rps"], 3)
        best = None
        for i in range(3):
            t0 = time.perf_counter()
            body = call(port, token, "GET",
                        f"/v1/jobs/{job784}/samples?n={LARGE_N}&format=npy&seed={i}", raw=True)
            dt = time.perf_counter() - t0
            best = dt if best is None or dt < best else best
        res["784d_n10000_npy"] = {"bytes": len(body), "seconds": round(best, 4),
                                  "gb_per_second": round(len(body) / best / 1e9, 3)}
        fwd = forward_us(tmp, job784, env, LARGE_N, 3)
        if fwd is not None:
            res["784d_n10000_npy"]["forward_seconds"] = round(fwd[0] / 1e6, 4)
            res["784d_n10000_npy"]["forward_share"] = round(fwd[0] / 1e6 / best, 3)
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
