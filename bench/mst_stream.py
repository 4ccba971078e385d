#!/usr/bin/python3
"""Issue 27's scale target: mst on 1 000 000 rows x 15 typed columns through
the service, wall time and peak memory of privgend at several n.

Rows come from a fixed Bayesian network (a tree over discrete latent states,
numeric columns drawn inside their state's slice of the declared range), so
every n draws from the same distribution. For each n: the rows are uploaded
as CSV in pieces of --piece rows (a block each) to a fresh privgend; that
server is stopped and a second one started on the same data, so the job's
peak RSS (VmHWM of /proc/PID/status) is its own, not the upload's; then mst
at epsilon 1 runs to the end and 100 000 samples are read back (mean TV of
the categorical one-ways against the data, a sanity check of quality).

One JSON line per (binary, n); run it with the binary of main and of the
branch to compare:

  bench/mst_stream.py --privgend build/bin/privgend --rows 100000 1000000 \
      [--label after] [--db postgresql://...] [--data /tmp/mst_stream]
"""
import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import numpy as np

# name, type, spec, parent (index or None)
COLS = [
    ("y", "categorical", ["no", "yes"], None),
    ("region", "categorical", [f"r{i}" for i in range(8)], 0),
    ("age", "integer", (18, 90), 1),
    ("income", "continuous", (0, 200000, "log"), 2),
    ("tenure", "integer", (0, 40), 2),
    ("score", "continuous", (300, 850), 3),
    ("plan", "categorical", ["basic", "plus", "pro", "team", "corp"], 0),
    ("owner", "boolean", None, 3),
    ("kids", "integer", (0, 6), 2),
    ("channel", "categorical", ["web", "shop", "phone", "partner"], 6),
    ("spend", "continuous", (0, 5000), 3),
    ("visits", "integer", (0, 100), 9),
    ("rating", "categorical", ["1", "2", "3", "4", "5"], 5),
    ("active", "boolean", None, 11),
    ("segment", "categorical", [f"s{i}" for i in range(6)], 10),
]
LATENT = 10  # states of a numeric column


def schema():
    cols = []
    for name, typ, spec, _ in COLS:
        c = {"name": name, "type": typ}
        if typ == "categorical":
            c["categories"] = spec
        elif typ in ("integer", "continuous"):
            c["min"], c["max"] = spec[0], spec[1]
            if len(spec) > 2:
                c["scale"] = spec[2]
        cols.append(c)
    return {"columns": cols, "label": "y"}


def states(typ, spec):
    return len(spec) if typ == "categorical" else 2 if typ == "boolean" else LATENT


def generate(n, seed=0):
    """Columns as lists of strings (CSV cells), and the categorical codes."""
    net = np.random.default_rng(12345)  # the network: fixed for every n
    rng = np.random.default_rng(seed)
    z, out, cats = [], [], {}
    for j, (name, typ, spec, parent) in enumerate(COLS):
        k = states(typ, spec)
        if parent is None:
            p = net.dirichlet(np.full(k, 2.0))
            s = rng.choice(k, size=n, p=p)
        else:
            kp = states(COLS[parent][1], COLS[parent][2])
            cpt = net.dirichlet(np.full(k, 0.5), size=kp)
            # inverse CDF per row from its parent's state
            cum = np.cumsum(cpt, axis=1)[z[parent]]
            s = (rng.random(n)[:, None] > cum).sum(axis=1).clip(0, k - 1)
        z.append(s)
        if typ == "categorical":
            out.append(np.array(spec)[s])
            cats[name] = (s, len(spec))
        elif typ == "boolean":
            out.append(np.where(s == 1, "true", "false"))
            cats[name] = (s, 2)
        else:
            lo, hi = spec[0], spec[1]
            u = (s + rng.random(n)) / k
            if len(spec) > 2:  # log-spaced: heavy tail
                v = lo + np.expm1(u * np.log1p(hi - lo))
            else:
                v = lo + u * (hi - lo)
            if typ == "integer":
                out.append(np.clip(np.floor(v), lo, hi).astype(np.int64).astype(str))
            else:
                out.append(np.char.mod("%.2f", np.clip(v, lo, hi)))
    return out, cats


def write_pieces(n, piece, path):
    """CSV pieces of `piece` rows under path (reused when present)."""
    done = os.path.join(path, "done")
    if os.path.exists(done):
        return sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".csv"))
    os.makedirs(path, exist_ok=True)
    cols, cats = generate(n)
    np.savez(os.path.join(path, "cats.npz"), **{k: v[0] for k, v in cats.items()})
    header = ",".join(c[0] for c in COLS) + "\n"
    files = []
    for i, a in enumerate(range(0, n, piece)):
        b = min(n, a + piece)
        f = os.path.join(path, f"p{i:04d}.csv")
        with open(f, "w") as fh:
            fh.write(header)
            fh.write("\n".join(map(",".join, zip(*(c[a:b] for c in cols)))))
            fh.write("\n")
        files.append(f)
    open(done, "w").close()
    return files


class Server:
    def __init__(self, privgend, data, db):
        self.tmp = data
        port_file = os.path.join(data, "port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        args = [privgend, "--listen", "127.0.0.1:0", "--data-dir", data, "--port-file", port_file,
                "--workers", "1", "--max-stream-samples", "1000000"]
        if db:
            args += ["--db", db]
        self.proc = subprocess.Popen(args, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        for _ in range(6000):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            if self.proc.poll() is not None:
                raise SystemExit(f"privgend exited with {self.proc.returncode}")
            time.sleep(0.01)
        self.port = int(open(port_file).read())
        self.token = open(os.path.join(data, "admin.token")).read().strip()

    def call(self, method, path, body=None, ctype="application/json", raw=False):
        data = None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", method=method, data=data,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": ctype})
        try:
            with urllib.request.urlopen(req, timeout=3600) as r:
                b = r.read()
                return b if raw else json.loads(b or b"null")
        except urllib.error.HTTPError as e:
            raise SystemExit(f"{method} {path}: {e.code} {e.read().decode(errors='replace')}")

    def cpu_s(self):
        f = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def hwm_mb(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
        return float("nan")

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def loadavg():
    return float(open("/proc/loadavg").read().split()[0])


def one(args, n):
    files = write_pieces(n, args.piece, os.path.join(args.data, f"rows-{n}"))
    data = tempfile.mkdtemp(prefix="mst-stream-", dir=args.tmp)
    res = {"bench": "mst_stream", "label": args.label, "rows": n, "columns": len(COLS),
           "piece_rows": args.piece, "backend": "postgres" if args.db else "sqlite",
           "load_start": loadavg()}
    try:
        if args.db:  # a fresh schema per run: the bench owns this database
            subprocess.run(["psql", args.db, "-qc", "DROP SCHEMA public CASCADE; CREATE SCHEMA public"],
                           check=True, stdout=subprocess.DEVNULL)
        s = Server(args.privgend, data, args.db)
        try:
            body = {"name": f"bn{n}", **schema(),
                    "privacy": {"model": "central", "budget": {"epsilon": 10, "delta": 1e-5}}}
            ds = s.call("POST", "/v1/datasets", body)["id"]
            t0, c0 = time.monotonic(), s.cpu_s()
            nbytes = 0
            for f in files:
                b = open(f, "rb").read()
                nbytes += len(b)
                s.call("POST", f"/v1/datasets/{ds}/rows", b, ctype="text/csv")
            res.update(upload_s=round(time.monotonic() - t0, 2),
                       upload_cpu_s=round(s.cpu_s() - c0, 2), upload_mb=round(nbytes / 2**20, 1),
                       upload_hwm_mb=round(s.hwm_mb(), 1))
        finally:
            s.close()
        s = Server(args.privgend, data, args.db)
        try:
            res["idle_hwm_mb"] = round(s.hwm_mb(), 1)
            spec = {"dataset_id": ds, "method": "mst", "privacy": {"epsilon": args.epsilon},
                    "seed": 1}
            t0, c0 = time.monotonic(), s.cpu_s()
            job = s.call("POST", "/v1/jobs", spec)["id"]
            while True:
                j = s.call("GET", f"/v1/jobs/{job}?history=false")
                if j["status"] in ("failed", "cancelled"):
                    raise SystemExit(f"job {job} {j['status']}: {j.get('error')}")
                if j["status"] == "succeeded":
                    break
                time.sleep(0.05)
            res.update(job_s=round(time.monotonic() - t0, 2), job_cpu_s=round(s.cpu_s() - c0, 2),
                       job_hwm_mb=round(s.hwm_mb(), 1))
            m = 100000
            raw = s.call("GET", f"/v1/jobs/{job}/samples?format=csv&n={m}&seed=3", raw=True)
            rd = csv.DictReader(io.StringIO(raw.decode()))
            syn = {c[0]: [] for c in COLS if c[1] in ("categorical", "boolean")}
            for row in rd:
                for k in syn:
                    syn[k].append(row[k])
            real = np.load(os.path.join(args.data, f"rows-{n}", "cats.npz"))
            tvs = []
            for name, typ, spec, _ in COLS:
                if name not in syn:
                    continue
                levels = spec if typ == "categorical" else ["false", "true"]
                idx = {v: i for i, v in enumerate(levels)}
                q = np.bincount([idx[v] for v in syn[name]], minlength=len(levels)) / len(syn[name])
                p = np.bincount(real[name], minlength=len(levels)) / n
                tvs.append(0.5 * np.abs(p - q).sum())
            res.update(samples=len(syn["y"]), tv_cat_mean=round(float(np.mean(tvs)), 4))
        finally:
            s.close()
    finally:
        shutil.rmtree(data, ignore_errors=True)
    res["load_end"] = loadavg()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--privgend", required=True)
    ap.add_argument("--rows", type=int, nargs="+", default=[100000, 1000000])
    ap.add_argument("--piece", type=int, default=100000, help="rows per upload (one block each)")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--label", default="")
    ap.add_argument("--db", default="", help="postgresql://... (default: SQLite in the data dir)")
    ap.add_argument("--data", default="/tmp/mst_stream", help="cache of the generated CSV pieces")
    ap.add_argument("--tmp", default=None, help="where the servers' data dirs go")
    args = ap.parse_args()
    for n in args.rows:
        print(json.dumps(one(args, n)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
