#!/usr/bin/env python3
"""The service under load: N dp_sinkhorn jobs of one fixed spec through a
fresh privgend with --workers W, optionally while an open-loop client asks for
GET /v1/jobs/{model}/samples?n=64 (no seed: every answer is drawn, none comes
from the body cache) at a fixed rate from a model trained beforehand.

Prints one JSON line per scenario: wall seconds from submission to the last
job's end, jobs per hour, privgend's CPU per training step (all of its CPU
while the jobs ran, sampling included, over the steps run), and the samples'
latency p50/p99 measured from each request's scheduled send time (so a
stalled server cannot hide its backlog), plus the load average.

  service_load.py --scenario seq|par|alone|sampling [--workers W] [--jobs N]
                  [--privgend PATH] [--steps S] [--rate R] [--contend]

seq: 2 jobs, --workers 1 (one after the other); par: 2 jobs, --workers 2;
alone: 1 job, --workers 1; sampling: N jobs with --workers N and the client
at --rate req/s. --contend adds a busy-loop child for the scenario's
duration. bench/contend.sh runs every scenario the issue's figures need.
"""
import argparse
import http.client
import json
import os
import queue
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

D = 64
ROWS = 4000


def spec(ds, steps):
    return {"dataset_id": ds, "method": "dp_sinkhorn", "model": {"hidden": [128, 128]},
            "train": {"steps": steps, "batch_size": 256}, "ot": {"max_iter": 50},
            "privacy": {"noise_multiplier": 1.0}, "checkpoint_every": steps, "seed": 3}


def rows(n, d, seed=12345):
    rng = random.Random(seed)
    # two clusters: something for the generator to learn
    return [[max(-1.0, min(1.0, rng.gauss(0.5 if i % 2 else -0.5, 0.2))) for _ in range(d)]
            for i in range(n)]


class Server:
    def __init__(self, privgend, workers, extra):
        self.tmp = tempfile.mkdtemp(prefix="pgload-")
        port_file = os.path.join(self.tmp, "port")
        self.proc = subprocess.Popen(
            [privgend, "--listen", "127.0.0.1:0", "--data-dir", self.tmp + "/data",
             "--port-file", port_file, "--workers", str(workers)] + extra,
            stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        for _ in range(3000):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            if self.proc.poll() is not None:
                raise SystemExit(f"privgend exited with {self.proc.returncode}")
            time.sleep(0.01)
        self.port = int(open(port_file).read())
        self.token = open(self.tmp + "/data/admin.token").read().strip()

    def call(self, method, path, body=None):
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            raise SystemExit(f"{method} {path}: {e.code} {e.read().decode(errors='replace')}")

    def cpu_s(self):
        """privgend's user + system CPU seconds (threads included)."""
        f = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def wait_jobs(self, ids):
        while True:
            js = [self.call("GET", f"/v1/jobs/{i}?history=false") for i in ids]
            bad = [j for j in js if j["status"] in ("failed", "cancelled")]
            if bad:
                raise SystemExit(f"job {bad[0]['id']} {bad[0]['status']}: {bad[0].get('error')}")
            if all(j["status"] == "succeeded" for j in js):
                return js
            time.sleep(0.05)

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


class Sampler:
    """Open loop at a fixed rate: request i is due at t0 + i / rate; a pool of
    keep-alive connections sends it when due (or when a connection frees) and
    its latency runs from the due time to the last byte."""

    def __init__(self, port, token, path, rate, conns=16):
        self.port, self.token, self.path, self.rate = port, token, path, rate
        self.q = queue.Queue()
        self.lat, self.errors, self.stop = [], 0, threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.work, daemon=True) for _ in range(conns)]
        self.sched = threading.Thread(target=self.schedule, daemon=True)

    def start(self):
        for t in self.threads:
            t.start()
        self.sched.start()

    def schedule(self):
        t0, i = time.monotonic(), 0
        while not self.stop.is_set():
            due = t0 + i / self.rate
            dt = due - time.monotonic()
            if dt > 0:
                time.sleep(dt)
            self.q.put(due)
            i += 1

    def work(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        hdr = {"Authorization": f"Bearer {self.token}"}
        while True:
            due = self.q.get()
            if due is None:
                return
            try:
                c.request("GET", self.path, headers=hdr)
                r = c.getresponse()
                r.read()
                ok = r.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                c.close()
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            done = time.monotonic()
            with self.lock:
                if ok:
                    self.lat.append((done - due) * 1e3)
                else:
                    self.errors += 1

    def finish(self):
        self.stop.set()
        self.sched.join()
        for _ in self.threads:
            self.q.put(None)
        for t in self.threads:
            t.join(timeout=30)
        with self.lock:
            return list(self.lat), self.errors


def pct(v, p):
    if not v:
        return None
    v = sorted(v)
    return round(v[min(len(v) - 1, int(p / 100.0 * len(v)))], 2)


def contender():
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def scenario(a):
    workers = {"seq": 1, "par": 2, "alone": 1}.get(a.scenario, a.workers)
    njobs = {"seq": 2, "par": 2, "alone": 1}.get(a.scenario, a.jobs or a.workers)
    extra = a.extra.split() if a.extra else []
    srv = Server(a.privgend, workers, extra)
    busy = None
    try:
        # one dataset per job: each job's privacy spend has a budget of its own
        data = rows(ROWS, D)
        dss = []
        for _ in range(njobs + 1):
            ds = srv.call("POST", "/v1/datasets",
                          {"name": "load", "shape": [D], "range": [-1, 1],
                           "privacy": {"model": "central",
                                       "budget": {"epsilon": 100, "delta": 1e-5}}})["id"]
            srv.call("POST", f"/v1/datasets/{ds}/rows", {"rows": data})
            dss.append(ds)
        sampler, model = None, None
        if a.scenario == "sampling":
            model = srv.call("POST", "/v1/jobs", spec(dss[-1], 20))["id"]
            srv.wait_jobs([model])
        if a.contend:
            busy = contender()
            time.sleep(0.5)
        if model:
            sampler = Sampler(srv.port, srv.token,
                              f"/v1/jobs/{model}/samples?n=64&format=json", a.rate)
            sampler.start()
            time.sleep(1.0)  # the client reaches its rate before the jobs start
        cpu0, t0 = srv.cpu_s(), time.monotonic()
        ids = [srv.call("POST", "/v1/jobs", spec(dss[k], a.steps))["id"] for k in range(njobs)]
        js = srv.wait_jobs(ids)
        t1, cpu1 = time.monotonic(), srv.cpu_s()
        out = {"bench": "service-load", "scenario": a.scenario, "workers": workers,
               "jobs": njobs, "steps_per_job": a.steps, "contend": bool(a.contend),
               "privgend": a.privgend, "extra": a.extra or "",
               "seconds": round(t1 - t0, 3),
               "jobs_per_hour": round(3600.0 * njobs / (t1 - t0), 1),
               "cpu_ms_per_step": round(1e3 * (cpu1 - cpu0) / (njobs * a.steps), 3),
               "job_steps_per_second": [j["progress"]["steps_per_second"] for j in js]}
        if sampler:
            lat, errors = sampler.finish()
            out["samples"] = {"path": "samples?n=64&format=json", "rate": a.rate,
                              "requests": len(lat), "errors": errors,
                              "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99),
                              "max_ms": pct(lat, 100)}
        out["loadavg"] = os.getloadavg()[0]
        print(json.dumps(out), flush=True)
    finally:
        if busy:
            busy.kill()
            busy.wait()
        srv.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", choices=["seq", "par", "alone", "sampling"], required=True)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--jobs", type=int, default=0)
    p.add_argument("--steps", type=int, default=int(os.environ.get("PRIVGEN_LOAD_STEPS", "2000")))
    p.add_argument("--rate", type=float, default=100.0)
    p.add_argument("--privgend", default=os.environ.get("PRIVGEND", "build/bin/privgend"))
    p.add_argument("--extra", default="", help="more privgend flags, one string")
    p.add_argument("--contend", action="store_true")
    scenario(p.parse_args())


if __name__ == "__main__":
    main()
