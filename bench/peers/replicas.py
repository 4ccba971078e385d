#!/usr/bin/env python3
"""Replicas on one PostgreSQL (issue 18's figures) in one run: starts
scripts/replicas.sh (a throwaway cluster, 3 replicas, HAProxy) in a temp dir
and prints JSON lines:

  samples    GET /v1/jobs/{id}/samples?n=64 (JSON) with wrk (-t2 -c32) through
             a balancer over 1 replica and over all 3: requests/s, p99, and
             the CPU each replica and HAProxy used (utime + stime from
             /proc/PID/stat over the run, in cores: 1.0 = one core busy);
             the job is trained once, on whichever replica claims it, so the
             other replicas serve it from its checkpoint
  claim      submission to running (POST answered -> a job view through the
             balancer says running or later, polled every 2 ms), idle
             workers, over BENCH_CLAIMS jobs: median and max
  failover   kill -9 of the replica running a job -> the job running on
             another replica (view `node` changed), with the lease of the
             run (BENCH_LEASE s, heartbeat BENCH_LEASE/5)

The machine's cores are shared by wrk, HAProxy and the replicas, so read the
throughput next to the CPU figures. Environment: PRIVGEN_BENCH (privgen-bench
path; privgend is its sibling), BENCH_SECONDS (wrk duration, default 5),
BENCH_LEASE (default 5), BENCH_CLAIMS (default 8), BENCH_PORT (balancer port,
default 8280; the replicas use the next three, a 1-replica balancer +10),
BENCH_CASES (default samples,claim,failover). Job states are polled on every
replica directly, so a replica that cannot show a job it does not run does
not hide the one that can."""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BENCH = os.environ.get("PRIVGEN_BENCH", "build/bin/privgen-bench")
BUILD = os.path.abspath(os.path.join(os.path.dirname(BENCH), ".."))
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SECONDS = int(os.environ.get("BENCH_SECONDS", "5"))
LEASE = int(os.environ.get("BENCH_LEASE", "5"))
CLAIMS = int(os.environ.get("BENCH_CLAIMS", "8"))
PORT = int(os.environ.get("BENCH_PORT", "8280"))
CASES = os.environ.get("BENCH_CASES", "samples,claim,failover").split(",")
TICK = os.sysconf("SC_CLK_TCK")


def emit(**kw):
    print(json.dumps({"bench": "replicas", **kw}), flush=True)


def call(port, token, method, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer {token}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        if e.code == 404 and method == "GET":
            raise  # a view some replica cannot answer (yet): the caller polls
        raise SystemExit(f"{method} {path}: {e.code} {e.read().decode(errors='replace')}")


def views(token, job, ports):
    """The job's view from each replica asked directly (those that answer)."""
    out = []
    for port in ports:
        try:
            out.append(call(port, token, "GET", f"/v1/jobs/{job}"))
        except (urllib.error.URLError, ConnectionError, TimeoutError, SystemExit):
            pass
    return out


def claim_metric(ports):
    """Sum and count of privgen_claim_latency_seconds over the replicas."""
    total, count = 0.0, 0
    for port in ports:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                text = r.read().decode()
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            continue
        for line in text.splitlines():
            if line.startswith("privgen_claim_latency_seconds_sum"):
                total += float(line.split()[-1])
            elif line.startswith("privgen_claim_latency_seconds_count"):
                count += int(float(line.split()[-1]))
    return total, count


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])  # utime, stime (fields 14, 15)


def wrk(port, path, token):
    cmd = ["wrk", "-t2", "-c32", f"-d{SECONDS}s", "--latency", "-H",
           f"Authorization: Bearer {token}", f"http://127.0.0.1:{port}{path}"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rps = p99 = None
    errors = 0
    for line in out.splitlines():
        f = line.split()
        if line.startswith("Requests/sec:"):
            rps = float(f[1])
        if line.strip().startswith("Non-2xx") or line.strip().startswith("Socket errors"):
            errors += sum(int(x.strip(",")) for x in f if x.strip(",").isdigit())
        if f and f[0] == "99%":
            v = f[1]
            p99 = (float(v[:-2]) if v.endswith("ms") else float(v[:-2]) / 1e3
                   if v.endswith("us") else float(v[:-1]) * 1e3)
    return rps, p99, errors


def haproxy_one(state, port, backend_port):
    """A second balancer with one server: the 1-replica case."""
    cfg = os.path.join(state, "haproxy1.cfg")
    with open(os.path.join(state, "haproxy.cfg")) as f:
        text = f.read()
    head = text.split("frontend privgen")[0]
    with open(cfg, "w") as f:
        f.write(head + f"frontend one\n    bind 127.0.0.1:{port}\n    default_backend one\n\n"
                f"backend one\n    option httpchk GET /readyz\n"
                f"    server r1 127.0.0.1:{backend_port} check inter 1s\n")
    pidf = os.path.join(state, "haproxy1.pid")
    subprocess.run(["haproxy", "-D", "-f", cfg, "-p", pidf], check=True)
    with open(pidf) as f:
        return int(f.read().split()[0])


def wait_done(token, job, ports, limit=600):
    t = time.time()
    while time.time() - t < limit:
        for v in views(token, job, ports):
            if v["status"] in ("succeeded", "failed", "cancelled"):
                return v
        time.sleep(0.05)
    raise SystemExit(f"job {job} did not finish")


def main():
    state = tempfile.mkdtemp(prefix="bench-replicas-")
    env = dict(os.environ, REPLICAS_DIR=state, REPLICAS_PORT=str(PORT), BUILD=BUILD,
               REPLICAS_ARGS=f"--lease-seconds {LEASE} --heartbeat-seconds {max(1, LEASE // 5)} "
                             "--workers 1 --http-threads 4")
    script = os.path.join(ROOT, "scripts", "replicas.sh")
    one_pid = None
    try:
        subprocess.run(["bash", script, "start"], env=env, check=True, stdout=subprocess.DEVNULL)
        token = open(os.path.join(state, "admin.token")).read().strip()
        pids = {f"r{k}": int(open(os.path.join(state, f"r{k}", "pid")).read()) for k in (1, 2, 3)}
        hap = int(open(os.path.join(state, "haproxy.pid")).read().split()[0])

        rows = [[round(0.8 * (1 - 2 * ((i * 37) % 101) / 101), 4),
                 round(0.8 * (1 - 2 * ((i * 53) % 103) / 103), 4)] for i in range(2000)]
        ds = call(PORT, token, "POST", "/v1/datasets",
                  {"name": "bench", "shape": [2], "range": [-1, 1],
                   "privacy": {"model": "central", "budget": {"epsilon": 100, "delta": 1e-5}}})["id"]
        call(PORT, token, "POST", f"/v1/datasets/{ds}/rows", {"rows": rows})

        rports = [PORT + k for k in (1, 2, 3)]
        # samples: one trained job served by every replica
        job = call(PORT, token, "POST", "/v1/jobs",
                   {"dataset_id": ds, "method": "dp_sinkhorn", "model": {"hidden": [256, 256]},
                    "train": {"steps": 4, "batch_size": 64}, "checkpoint_every": 4,
                    "privacy": {"noise_multiplier": 5}, "seed": 3})["id"]
        v = wait_done(token, job, [PORT + k for k in (1, 2, 3)])
        if v["status"] != "succeeded":
            raise SystemExit(f"job {job} {v['status']}")
        path = f"/v1/jobs/{job}/samples?n=64&seed=1"
        if "samples" in CASES:
            for k in (1, 2, 3):  # each replica loads the model once before timing
                for attempt in range(100):  # a copy read while it ran is re-read within 1 s
                    try:
                        call(PORT + k, token, "GET", path)
                        break
                    except SystemExit:
                        if attempt == 99:
                            raise
                        time.sleep(0.1)
            one_pid = haproxy_one(state, PORT + 10, PORT + 1)
            time.sleep(1.5)
        for n, port, lb in ((1, PORT + 10, one_pid), (3, PORT, hap)) if "samples" in CASES else ():
            before = {r: cpu_ticks(p) for r, p in pids.items()}
            lb0, t0 = cpu_ticks(lb), time.time()
            rps, p99, errors = wrk(port, path, token)
            dt = time.time() - t0
            cpu = {r: round((cpu_ticks(p) - before[r]) / TICK / dt, 3) for r, p in pids.items()}
            emit(case="samples_n64", replicas=n, trained_on=v.get("node"), rps=rps, p99_ms=p99,
                 errors=errors, seconds=SECONDS, cpu_cores=cpu,
                 haproxy_cpu_cores=round((cpu_ticks(lb) - lb0) / TICK / dt, 3),
                 machine_cores=os.cpu_count())
        if one_pid:
            os.kill(one_pid, signal.SIGTERM)
            one_pid = None

        # claim latency: idle workers, one job at a time
        lat, nodes = [], []
        small = {"dataset_id": ds, "method": "dp_sinkhorn", "model": {"hidden": [8]},
                 "train": {"steps": 20, "batch_size": 20}, "checkpoint_every": 20,
                 "privacy": {"noise_multiplier": 20}, "seed": 3}
        m0 = claim_metric(rports)
        for _ in range(CLAIMS if "claim" in CASES else 0):
            j = call(PORT, token, "POST", "/v1/jobs", small)["id"]
            t0 = time.time()
            while True:
                if any(w["status"] != "queued" for w in views(token, j, rports)):
                    lat.append(time.time() - t0)
                    break
                if time.time() - t0 > 60:
                    raise SystemExit(f"job {j} not claimed in 60 s")
                time.sleep(0.002)
            while True:
                done = [w for w in views(token, j, rports)
                        if w["status"] in ("succeeded", "failed", "cancelled")]
                if done:
                    nodes.append(done[0].get("node"))
                    break
                time.sleep(0.02)
        if lat:
            m1 = claim_metric(rports)
            emit(case="claim_latency", jobs=CLAIMS,
                 polled_median_ms=round(1e3 * statistics.median(lat), 1),
                 polled_max_ms=round(1e3 * max(lat), 1), polled_min_ms=round(1e3 * min(lat), 1),
                 metric_mean_ms=(round(1e3 * (m1[0] - m0[0]) / (m1[1] - m0[1]), 1)
                                 if m1[1] > m0[1] else None),
                 claim_poll_ms=500, nodes={n: nodes.count(n) for n in sorted(set(map(str, nodes)))})
        if "failover" not in CASES:
            return 0

        # failover: kill -9 the replica running a long job
        j = call(PORT, token, "POST", "/v1/jobs",
                 dict(small, train={"steps": 10 ** 7, "batch_size": 20}, checkpoint_every=2000))["id"]
        w = None
        while not w:
            w = next((v for v in views(token, j, rports)
                      if v["status"] == "running" and v.get("node") in pids), None)
            time.sleep(0.01)
        x = w["node"]
        os.kill(pids[x], signal.SIGKILL)
        t0 = time.time()
        live = [PORT + k for k in (1, 2, 3) if f"r{k}" != x]
        while True:
            w = next((v for v in views(token, j, live)
                      if v["status"] == "running" and v.get("node") not in (x, None)), None)
            if w:
                break
            if time.time() - t0 > 10 * LEASE + 30:
                raise SystemExit(f"job {j} not taken over from {x}")
            time.sleep(0.01)
        emit(case="failover", killed=x, resumed_on=w["node"],
             kill_to_running_s=round(time.time() - t0, 2), lease_s=LEASE,
             heartbeat_s=max(1, LEASE // 5))
        call(PORT + int(w["node"][1:]), token, "POST", f"/v1/jobs/{j}/cancel", {})
    finally:
        if one_pid:
            os.kill(one_pid, signal.SIGTERM)
        subprocess.run(["bash", script, "stop"], env=env, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    sys.exit(main())
