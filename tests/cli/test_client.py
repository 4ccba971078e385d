"""End-to-end tests of the `privgen` HTTP client commands against a live
privgend (port 0, temporary data dir): datasets, jobs, samples, checkpoints,
login and URL/token precedence, --json output, exit codes 0/1/2.

Usage: test_client.py PATH_TO_PRIVGEN PATH_TO_PRIVGEND. Exits nonzero on failure."""
import io
import json
import shlex
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import numpy as np

BIN, DAEMON = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="privgen-client-")
DATA = os.path.join(TMP, "var")
FAILS = []

srv = subprocess.Popen([DAEMON, "--listen", "127.0.0.1:0", "--data-dir", DATA,
                        "--port-file", os.path.join(TMP, "port")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(400):
    if os.path.exists(os.path.join(TMP, "port")) and os.path.exists(os.path.join(DATA, "admin.token")):
        break
    time.sleep(0.025)
PORT = open(os.path.join(TMP, "port")).read().strip()
URL = f"http://127.0.0.1:{PORT}"
TOKEN = open(os.path.join(DATA, "admin.token")).read().strip()
# A dead port for precedence checks: bind, note, close.
import socket
_s = socket.socket()
_s.bind(("127.0.0.1", 0))
DEAD = f"http://127.0.0.1:{_s.getsockname()[1]}"
_s.close()


def env(**kw):
    e = {k: v for k, v in os.environ.items() if not k.startswith("PRIVGEN_")}
    e["XDG_CONFIG_HOME"] = os.path.join(TMP, "cfg-empty")
    e.update({k: v for k, v in kw.items() if v is not None})
    return e


AUTH = env(PRIVGEN_URL=URL, PRIVGEN_TOKEN=TOKEN)


def run(*args, e=None, cwd=TMP, stdin=None):
    p = subprocess.run([BIN, *map(str, args)], capture_output=True, env=e or AUTH, cwd=cwd,
                       input=stdin, timeout=60)
    return p.returncode, p.stdout, p.stderr.decode()


def run_on_tty(*args, e=None):
    """Runs with stdout and stderr on a pseudo-terminal; returns what it printed."""
    import pty
    master, slave = pty.openpty()
    proc = subprocess.Popen([BIN, *map(str, args)], stdout=slave, stderr=slave, env=e or AUTH, cwd=TMP)
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 4096)
        except OSError:
            break
        if not b:
            break
        chunks.append(b)
    proc.wait(timeout=60)
    os.close(master)
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}"
    return b"".join(chunks).decode()


def ok(*args, **kw):
    rc, out, err = run(*args, "--json", **kw)
    assert rc == 0, f"{args}: exit {rc}, stderr {err!r}"
    return json.loads(out)


def code(want, *args, **kw):
    rc, out, err = run(*args, **kw)
    assert rc == want, f"{args}: expected exit {want}, got {rc} (stderr {err!r})"
    assert err.startswith("privgen: "), f"{args}: stderr {err!r}"
    return err


CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def p(name):
    return os.path.join(TMP, name)


def halfcircle(n, seed=0):
    t = np.random.default_rng(seed).uniform(0, np.pi, n)
    return np.stack([np.cos(t), np.sin(t)], 1).astype(np.float32)


LOCAL = {}


@case
def datasets_lifecycle():
    decl = ok("privatize", "--mechanism", "laplace", "--epsilon", 5, "--clip", "l1:1",
              "--in", p("clean.csv"), "--out", p("priv.npy"))
    with open(p("decl.json"), "w") as f:
        json.dump(decl, f)
    d = ok("datasets", "create", "--name", "toy", "--shape", 2, "--range", "-4:4", "--model", "local",
           "--declaration", p("decl.json"))
    assert d["id"].startswith("ds_") and d["privacy"]["noise_scale"] == decl["noise_scale"], d
    LOCAL["id"] = d["id"]
    a = ok("datasets", "append", d["id"], p("priv.npy"))
    assert a["rows_added"] == 500 and a["n"] == 500, a
    # privatize --out - streams NPY on stdout (declaration on stderr) into append via stdin.
    pr = subprocess.run([BIN, "privatize", "--mechanism", "laplace", "--epsilon", "5", "--clip", "l1:1",
                         "--in", p("clean.csv"), "--out", "-"], capture_output=True, env=AUTH, timeout=60)
    assert pr.returncode == 0 and pr.stdout[:6] == b"\x93NUMPY", pr.stderr
    x = np.load(io.BytesIO(pr.stdout))
    assert x.shape == (500, 2) and json.loads(pr.stderr)["noise_scale"] == decl["noise_scale"]
    a = ok("datasets", "append", d["id"], "-", "--format", "npy", stdin=pr.stdout)
    assert a["rows_added"] == 500 and a["n"] == 1000, a
    a = ok("datasets", "append", d["id"], p("clean.csv"))  # CSV by extension
    assert a["n"] == 1500, a
    # raw float32: rows from the file size and the dataset's d, or --rows from a pipe
    raw = halfcircle(7).astype("<f4").tobytes()
    with open(p("rows.f32"), "wb") as f:
        f.write(raw)
    assert ok("datasets", "append", d["id"], p("rows.f32"))["rows_added"] == 7
    assert ok("datasets", "append", d["id"], "-", "--format", "raw", "--rows", 7, stdin=raw)["n"] == 1514
    code(2, "datasets", "append", d["id"], "-", "--format", "raw", stdin=raw)
    with open(p("odd.f32"), "wb") as f:
        f.write(raw[:-4])
    code(2, "datasets", "append", d["id"], p("odd.f32"))
    # CSV from a pipe (chunked upload)
    with open(p("clean.csv"), "rb") as f:
        assert ok("datasets", "append", d["id"], "-", "--format", "csv", stdin=f.read())["n"] == 2014
    s = ok("datasets", "show", d["id"])
    assert s["n"] == 2014 and s["privacy_report"]["epsilon_ldp"] == 5, s
    lst = ok("datasets", "list")
    assert d["id"] in [i["id"] for i in lst["items"]], lst
    rc, out, _ = run("datasets", "list")
    assert rc == 0 and d["id"] in out.decode() and "local" in out.decode()
    c = ok("datasets", "create", "--name", "c", "--shape", 2, "--range", "-1:1", "--model", "central",
           "--budget-epsilon", 3, "--budget-delta", 1e-5)
    b = ok("datasets", "budget", c["id"])
    assert b["cap"] == {"epsilon": 3, "delta": 1e-5} and b["spent_epsilon"] == 0, b
    err = code(1, "datasets", "budget", d["id"])
    assert "central" in err, err
    first = ok("datasets", "list", "--limit", 1)
    assert len(first["items"]) == 1 and first["next_cursor"], first
    second = ok("datasets", "list", "--limit", 1, "--cursor", first["next_cursor"])
    assert second["items"][0]["id"] != first["items"][0]["id"], (first, second)
    rc, out, err = run("datasets", "list", "--limit", 1)
    assert rc == 0 and f"--cursor {first['next_cursor']}" in err, err
    assert ok("datasets", "delete", c["id"]) == {"id": c["id"], "deleted": True}
    err = code(1, "datasets", "show", c["id"])
    assert "no such dataset" in err and "404" in err, err


def _toy():
    rc, _, err = run("toy", "halfcircle", "--n", 500, "--seed", 3, "-o", p("clean.csv"))
    assert rc == 0, err
    x = np.loadtxt(p("clean.csv"), delimiter=",", skiprows=1)
    assert x.shape == (500, 2) and np.allclose(np.hypot(x[:, 0], x[:, 1]), 1, atol=1e-5)
    assert (x[:, 1] >= -1e-6).all()
    return p("clean.csv")


@case
def api_errors_exit_1_with_field_errors():
    err = code(1, "datasets", "create", "--name", "bad", "--shape", 2, "--range", "-1:1",
               "--model", "local", "--mechanism", "laplace", "--epsilon", 1, "--sensitivity", 2,
               "--noise-scale", 0.01)
    assert "HTTP 422" in err and "privacy" in err, err
    err = code(1, "jobs", "create", "--dataset", LOCAL["id"], "--method", "nope")
    assert "method" in err, err
    # --public-dataset reaches the server as public_dataset_id (its field error).
    err = code(1, "jobs", "create", "--dataset", LOCAL["id"], "--method", "entropic_gan",
               "--public-dataset", LOCAL["id"])
    assert "public_dataset_id" in err, err
    assert code(1, "jobs", "show", "job_0000000000000000")
    code(1, "datasets", "list", e=env(PRIVGEN_URL=DEAD, PRIVGEN_TOKEN=TOKEN))


@case
def help_exit_0():
    for cmd in (["datasets"], ["jobs"], ["samples"], ["checkpoints"], ["login"], ["toy"]):
        rc, out, err = run(*cmd, "--help")
        assert rc == 0 and out.decode().startswith("usage: privgen " + cmd[0]) and err == "", (cmd, rc, err)
    rc, out, _ = run("--help")
    assert rc == 0 and b"datasets" in out and b"jobs" in out and b"samples" in out


@case
def usage_errors_exit_2():
    code(2, "datasets")
    code(2, "datasets", "frobnicate")
    code(2, "datasets", "show")
    code(2, "datasets", "create", "--name", "x")
    code(2, "datasets", "create", "--name", "x", "--shape", "a", "--range", "0:1", "--model", "public")
    code(2, "datasets", "append", "ds_x", p("nothing.bin"))
    code(2, "datasets", "append", "ds_x", p("clean.csv"), "--format", "xml")
    code(2, "jobs", "create", "--method", "entropic_gan")
    code(2, "jobs", "create", "--dataset", "d", "--method", "m", "--set", "novalue")
    code(2, "jobs", "create", "--dataset", "d", "--method", "m", "--steps", "-3")
    code(2, "samples", "job_x", "--format", "gif")
    code(2, "samples")
    code(2, "checkpoints", "job_x", "--download", "abc")
    code(2, "jobs", "list", "--bogus", "1")
    code(2, "nonsense")
    code(2, "datasets", "show", "../tokens")
    code(2, "jobs", "show", "job_1?x=1")
    code(2, "samples", "a/b")


@case
def jobs_samples_checkpoints():
    ds = LOCAL["id"]
    dry = ok("jobs", "dry-run", "--dataset", ds, "--method", "entropic_gan", "--steps", 40,
             "--set", "model.hidden=[16]")
    assert dry["plan"]["charges"] is False and dry["spec"]["model"]["hidden"] == [16], dry
    assert ok("jobs", "list", "--dataset", ds)["items"] == [], "dry run created a job"
    with open(p("spec.json"), "w") as f:
        json.dump({"dataset_id": ds, "method": "entropic_gan", "model": {"hidden": [16]},
                   "train": {"steps": 1000, "batch_size": 32}}, f)
    j = ok("jobs", "create", "--spec", p("spec.json"), "--steps", 40, "--set", "ot.max_iter=30",
           "--checkpoint-every", 20, "--seed", 11)
    assert j["spec"]["train"]["steps"] == 40 and j["spec"]["seed"] == 11, j["spec"]
    assert j["spec"]["ot"]["max_iter"] == 30 and j["spec"]["train"]["batch_size"] == 32
    rc, out, err = run("jobs", "watch", j["id"])  # not a TTY: plain lines, final message
    assert rc == 0 and out.decode().strip() == f"job {j['id']} succeeded", (rc, out, err)
    # The job's own warnings follow its last line. This 40-step job trains on
    # data privatized afresh every run, and the loss-trend rule flagged its
    # noisy curve in 1 of 4 full runs (2026-11-28); warnings have their own
    # case (warnings_are_shown), so here they are set aside, not asserted.
    warn = "privgen: warning: "
    lines = [l for l in err.splitlines() if l.strip() and not l.startswith(warn)]
    assert lines and "\r" not in err and "step 40/40" in lines[-1] and "succeeded" in lines[-1], err
    # on a terminal: one line redrawn in place with a bar, ε under a UTF-8 locale
    tty = run_on_tty("jobs", "watch", j["id"], e=dict(AUTH, LANG="C.UTF-8"))
    tty = "".join(l for l in tty.splitlines(True) if not l.startswith(warn))
    assert "\r\x1b[K" in tty and "[" + "#" * 30 + "]" in tty and "step 40/40" in tty, repr(tty)
    assert "\u03b5 spent" in tty and "\n" not in tty.split("job ")[0].strip("\r\n"), repr(tty)
    final = ok("jobs", "watch", j["id"])
    assert final["status"] == "succeeded" and final["progress"]["step"] == 40, final
    assert ok("jobs", "show", j["id"])["id"] == j["id"]
    assert [i["id"] for i in ok("jobs", "list", "--status", "succeeded", "--dataset", ds)["items"]] == [j["id"]]
    ck = ok("checkpoints", j["id"])
    steps = [c["step"] for c in ck["items"]]
    assert steps == [20, 40], ck
    got = ok("checkpoints", j["id"], "--download", 20, "-o", p("ck20.bin"))
    assert got["bytes"] == ck["items"][0]["bytes"] == os.path.getsize(p("ck20.bin")), (got, ck)
    code(1, "checkpoints", j["id"], "--download", 7, "-o", p("ck7.bin"))
    assert not os.path.exists(p("ck7.bin"))
    png = ok("samples", j["id"], "-n", 64, "--format", "png", "-o", p("grid.png"))
    with open(p("grid.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n" and png["content_type"] == "image/png"
    rc, out, _ = run("samples", j["id"], "-n", 17, "--format", "csv", "--seed", 5)
    rows = [l for l in out.decode().splitlines() if l and not l[0].isalpha()]
    assert rc == 0 and len(rows) == 17, out
    rc2, out2, _ = run("samples", j["id"], "-n", 17, "--format", "csv", "--seed", 5)
    assert out2 == out, "same seed, different samples"
    js = ok("samples", j["id"], "-n", 3)
    assert js["n"] == 3 and js["d"] == 2, js
    # cancel: a long job is cancelled and watch reports it with exit 1
    long = ok("jobs", "create", "--dataset", ds, "--method", "entropic_gan", "--steps", 200000,
              "--set", "model.hidden=[16]")
    c = ok("jobs", "cancel", long["id"])
    assert c["status"] in ("cancelled", "cancelling", "running", "queued"), c
    rc, out, err = run("jobs", "watch", long["id"])
    assert rc == 1 and f"privgen: job {long['id']} cancelled" in err and out == b"", (rc, err)


def api(method, path, body=None):
    """The raw API response, for comparison with the CLI's --json."""
    import urllib.request
    req = urllib.request.Request(URL + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {TOKEN}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def r4(v):
    """A figure as the human output shows it: 4 significant digits, shortest form."""
    x = float("%.4g" % v)
    return str(int(x)) if x == int(x) else repr(x)


def human(*args, **kw):
    rc, out, err = run(*args, **kw)
    assert rc == 0, f"{args}: exit {rc}, stderr {err!r}"
    out = out.decode()
    assert not out.lstrip().startswith(("{", "[")), f"{args}: JSON without --json: {out[:80]!r}"
    return out


@case
def human_output_and_json():
    # a central dataset, a dry run, a DP job: each view readable, and --json the API's response
    cds = ok("datasets", "create", "--name", "central", "--shape", 2, "--range", "-1.5:1.5",
             "--model", "central", "--budget-epsilon", 3, "--budget-delta", 1e-5)["id"]
    ok("datasets", "append", cds, p("clean.csv"))
    out = human("datasets", "show", cds)
    assert out.startswith(f"{cds}  central\n"), out
    assert "500 of shape [2], range [-1.5, 1.5]" in out and "epsilon 3, delta 1e-05" in out, out
    assert ok("datasets", "show", cds) == api("GET", f"/v1/datasets/{cds}")[1]
    out = human("datasets", "show", LOCAL["id"])
    ds = api("GET", f"/v1/datasets/{LOCAL['id']}")[1]
    assert f"epsilon {r4(ds['privacy']['epsilon'])} per row" in out, out
    assert f"noise scale {r4(ds['privacy']['noise_scale'])}" in out, out
    flags = ("--dataset", cds, "--method", "dp_sinkhorn", "--steps", 20, "--batch", 50, "--seed", 9,
             "--set", "privacy.epsilon=1", "--set", "privacy.delta=1e-5", "--set", "model.hidden=[16]")
    out = human("jobs", "dry-run", *flags)
    dry = ok("jobs", "dry-run", *flags)
    st, direct = api("POST", "/v1/jobs?dry_run=true",
                     {"dataset_id": cds, "method": "dp_sinkhorn", "seed": 9,
                      "train": {"steps": 20, "batch_size": 50},
                      "privacy": {"epsilon": 1, "delta": 1e-5}, "model": {"hidden": [16]}})
    assert st == 200 and dry == direct, (dry, direct)
    plan = dry["plan"]
    assert out.startswith(f"dry run: dp_sinkhorn on {cds} (nothing was charged)\n"), out
    assert "20 steps, batch 50" in out and "seed         9" in out, out
    assert f"epsilon {r4(plan['epsilon'])}, delta 1e-05" in out, out
    assert f"noise multiplier {r4(plan['noise_multiplier'])}" in out, out
    assert f"sampling rate {r4(plan['sampling_rate'])}" in out and ": fits" in out, out
    assert "0.1000000" not in out and "e-05" in out
    job = ok("jobs", "create", *flags)["id"]
    assert run("jobs", "watch", job)[0] == 0
    out = human("jobs", "show", job)
    view = ok("jobs", "show", job)
    assert view == api("GET", f"/v1/jobs/{job}")[1]
    pv = view["privacy"]
    lines = out.splitlines()
    assert lines[0] == f"{job}  dp_sinkhorn  succeeded", lines
    assert f"step 20/20, loss {r4(view['progress']['loss'])}" in out, out
    assert f"epsilon {r4(pv['epsilon'])}, delta 1e-05 (poisson_subsampled_gaussian: noise " \
           f"multiplier {r4(pv['noise_multiplier'])}, sampling rate {r4(pv['sampling_rate'])}, " \
           f"20 steps)" in out, out
    assert f"checkpoints  {len(view['checkpoints'])}, latest at step 20" in out, out
    assert "warning" not in out  # the view has none
    out = human("datasets", "budget", cds)
    b = ok("datasets", "budget", cds)
    assert b == api("GET", f"/v1/datasets/{cds}/budget")[1]
    assert out.startswith(f"privacy budget of {cds}"), out
    assert "cap          epsilon 3, delta 1e-05" in out, out
    assert f"spent        epsilon {r4(b['spent_epsilon'])}\n" in out, out
    assert f"remaining    epsilon {r4(b['remaining_epsilon'])}\n" in out, out
    row = [l.split() for l in out.splitlines() if l.strip().startswith(job)]
    assert row and row[0][1:] == [r4(b["entries"][0]["epsilon"]), "1e-05",
                                  r4(b["entries"][0]["noise_multiplier"]),
                                  r4(b["entries"][0]["sampling_rate"]), "20", "no"], row
    # checkpoints: a table, and the API's JSON
    ck = ok("checkpoints", job)
    assert ck == api("GET", f"/v1/jobs/{job}/checkpoints")[1]
    out = human("checkpoints", job)
    steps = [int(l.split()[0]) for l in out.splitlines()[1:]]
    assert out.splitlines()[0].split() == ["STEP", "SIZE", "CREATED"]
    assert steps == [c["step"] for c in ck["items"]], (out, ck)
    # cancel prints the new state; the view then says cancelled
    long = ok("jobs", "create", "--dataset", LOCAL["id"], "--method", "entropic_gan",
              "--steps", 200000, "--set", "model.hidden=[16]")["id"]
    out = human("jobs", "cancel", long)
    assert out.split()[0] == long and out.split()[1] in ("cancelled", "running", "queued"), out
    run("jobs", "watch", long)
    out = human("jobs", "show", long)
    assert out.splitlines()[0] == f"{long}  entropic_gan  cancelled", out
    err = code(1, "jobs", "cancel", long)
    assert "409" in err, err
    # delete: gone from the API, a second delete is a 404; --json says so
    out = human("jobs", "delete", long)
    assert out.strip() == f"{long} deleted", out
    assert api("GET", f"/v1/jobs/{long}")[0] == 404
    err = code(1, "jobs", "delete", long)
    assert "404" in err, err
    rc, out, err = run("jobs", "delete", "--help")
    assert rc == 0 and "delete ID" in out.decode() and "ledger" in out.decode(), (rc, out, err)


@case
def methods_from_the_server():
    cat = api("GET", "/v1/algorithms")[1]
    assert ok("methods") == cat
    out = human("methods")
    for m in cat["items"]:
        row = [l for l in out.splitlines() if l.split()[:1] == [m["name"]]]
        assert row and row[0].split()[1] == ",".join(m["accepts"]), (m["name"], row)
    for m in cat["items"]:
        assert ok("methods", m["name"]) == m
        out = human("methods", m["name"])
        assert out.startswith(f"{m['name']}  (accepts {', '.join(m['accepts'])} data)"), out
        for prm in m["parameters"]:
            line = [l for l in out.splitlines() if l.split()[:1] == [prm["name"]]]
            assert line and line[0].split()[1] == prm["type"], (m["name"], prm["name"], line)
            if "default" in prm:
                want = json.dumps(prm["default"], separators=(",", ":"))
                assert f"default {want}" in line[0], (prm, line[0])
            if "enum" in prm:
                assert "one of " + "|".join(prm["enum"]) in line[0], (prm, line[0])
    err = code(2, "methods", "no_such_method")
    assert all(m["name"] in err for m in cat["items"]), err


@case
def errors_without_float_noise():
    # the server's message carries %.17g; the CLI prints the same double, shortest
    err = code(1, "datasets", "create", "--name", "bad", "--shape", 2, "--range", "-1:1",
               "--model", "local", "--mechanism", "laplace", "--epsilon", 0.1, "--sensitivity", 2,
               "--noise-scale", 0.3)
    assert "noise_scale 0.3 is below" in err and "0.2999" not in err, err


@case
def samples_frame():
    jobs = api("GET", f"/v1/jobs?dataset_id={LOCAL['id']}&status=succeeded")[1]["items"]
    job = jobs[0]["id"]
    for frame in ("data", "range"):
        ok("samples", job, "-n", 200, "--seed", 4, "--format", "png", "--frame", frame,
           "-o", p(f"{frame}.png"))
    a, b = open(p("data.png"), "rb").read(), open(p("range.png"), "rb").read()
    assert a[:8] == b"\x89PNG\r\n\x1a\n" and b[:8] == a[:8] and a != b
    assert int.from_bytes(a[16:20], "big") == 540 and int.from_bytes(a[20:24], "big") == 540
    code(2, "samples", job, "--format", "png", "--frame", "middle", "-o", p("x.png"))
    code(2, "samples", job, "--format", "csv", "--frame", "range")
    st, prob = api("GET", f"/v1/jobs/{job}/samples?format=png&frame=middle")
    assert st == 400 and prob["errors"][0]["field"] == "frame", prob


@case
def warnings_are_shown():
    # a stand-in server whose job view carries `warnings` (and a noisy number)
    import http.server
    import threading
    view = {"id": "job_w", "status": "succeeded", "method": "dp_sinkhorn", "dataset_id": "ds_w",
            "public_dataset_id": None,
            "progress": {"step": 10, "total_steps": 10, "loss": 0.5, "epsilon_spent": 1.0},
            "privacy": {"charges": True, "epsilon": 1.0, "delta": 1e-5, "noise_multiplier": 2.0,
                        "sampling_rate": 0.1, "steps": 10,
                        "mechanism": "poisson_subsampled_gaussian"},
            "checkpoints": [], "created_at": "2026-01-01T00:00:00Z", "error": None,
            "warnings": ["the loss rose over the last quarter of training (0.10000000000000001 "
                         "to 0.5)",
                         {"code": "outside_range", "message": "81 % of samples fall outside the "
                                                              "declared range"}]}
    # a trainer's own warning: an object with source and code, announced on
    # the event stream by a `warning` event (no id) before the final state
    tw = {"source": "trainer", "code": "no_class_signal", "step": 0,
          "message": "The privatized rows show no class difference above their noise."}
    view["warnings"].append(tw)

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.endswith("/events"):
                body = (f"event: warning\ndata: {json.dumps(tw)}\n\n"
                        f"event: done\ndata: {json.dumps(view)}\n\n").encode()
                ctype = "text/event-stream"
            elif self.path == "/v1/jobs/job_w":
                body, ctype = json.dumps(view).encode(), "application/json"
            else:
                body = json.dumps({"status": 422, "detail": "seed 18446744073709551615 and "
                                   "job_123456789012345678 kept, 2.5000000000000001e-05 cleaned"}).encode()
                self.send_response(422)
                self.send_header("Content-Type", "application/problem+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv2 = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv2.serve_forever, daemon=True).start()
    try:
        e = env(PRIVGEN_URL=f"http://127.0.0.1:{srv2.server_address[1]}", PRIVGEN_TOKEN="t")
        out = human("jobs", "show", "job_w", e=e)
        assert "  warning: the loss rose over the last quarter of training (0.1 to 0.5)\n" in out, out
        assert "  warning (outside_range): 81 % of samples fall outside the declared range\n" in out, out
        assert ("  warning (no_class_signal): The privatized rows show no class difference above "
                "their noise.\n") in out, out
        rc, out, err = run("jobs", "watch", "job_w", e=e)
        assert rc == 0 and "privgen: warning (outside_range): 81 % of samples fall outside" in err, (rc, err)
        # the trainer's warning as it came (the `warning` event), then in the final list;
        # the event is not taken for a job state
        assert err.count("privgen: warning (no_class_signal): The privatized rows") == 2, err
        assert out.decode() == "job job_w succeeded\n"
        err = code(1, "datasets", "show", "ds_x", e=e)
        assert "seed 18446744073709551615 and job_123456789012345678 kept, 2.5e-05 cleaned" in err, err
    finally:
        srv2.shutdown()


@case
def server_cut_is_not_blamed_on_the_connection():
    # Regression: a server that ends the answer early (its own idle timeout
    # cut a long sample) was reported as "cannot reach ... is privgend
    # running?". A stand-in server: a samples body cut after 10 bytes, and a
    # connection closed without any answer.
    import socket
    import threading
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(8)

    def serve():
        while True:
            try:
                c, _ = lsock.accept()
            except OSError:
                return
            req = c.recv(65536)
            if b"/samples" in req:
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/csv\r\n"
                          b"Content-Length: 100000\r\n\r\nx0,x1\n0.1,")
            c.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        e = env(PRIVGEN_URL=f"http://127.0.0.1:{lsock.getsockname()[1]}", PRIVGEN_TOKEN="t")
        err = code(1, "samples", "job_cut", "-n", 5000, "--format", "csv", "-o", p("cut.csv"), e=e)
        assert "cut its answer short (HTTP 200, 10 bytes received)" in err, err
        assert "is privgend running" not in err, err
        err = code(1, "jobs", "show", "job_cut", e=e)
        assert "closed it without an answer" in err and "is privgend running" not in err, err
        # a dead port is still "cannot reach"
        err = code(1, "jobs", "show", "job_cut", e=env(PRIVGEN_URL=DEAD, PRIVGEN_TOKEN="t"))
        assert "is privgend running" in err, err
    finally:
        lsock.close()


@case
def login_and_precedence():
    cfg = os.path.join(TMP, "cfg")
    work = os.path.join(TMP, "work")
    os.makedirs(os.path.join(work, "var"), exist_ok=True)
    shutil.copy(os.path.join(DATA, "admin.token"), os.path.join(work, "var", "admin.token"))
    base = env(XDG_CONFIG_HOME=cfg)
    # login: default token file ./var/admin.token, URL from --url; checked against the server
    rc, out, err = run("login", "--url", DEAD, e=base, cwd=work)
    assert rc == 1 and not os.path.exists(os.path.join(cfg, "privgen", "config")), err
    j = ok("login", "--url", URL, e=base, cwd=work)
    path = os.path.join(cfg, "privgen", "config")
    assert j["config"] == path and stat.S_IMODE(os.stat(path).st_mode) == 0o600, j
    assert TOKEN in open(path).read()
    empty = os.path.join(TMP, "empty")
    os.makedirs(empty, exist_ok=True)
    code(2, "login", e=base, cwd=empty)  # no ./var/admin.token here
    # the config alone is enough, from any directory
    assert "items" in ok("datasets", "list", e=base, cwd=empty)
    # env beats the config; flags beat env
    code(1, "datasets", "list", e=env(XDG_CONFIG_HOME=cfg, PRIVGEN_URL=DEAD), cwd=TMP)
    assert "items" in ok("datasets", "list", "--url", URL, e=env(XDG_CONFIG_HOME=cfg, PRIVGEN_URL=DEAD))
    err = code(1, "datasets", "list", e=env(XDG_CONFIG_HOME=cfg, PRIVGEN_TOKEN="pgt_wrong"))
    assert "401" in err, err
    assert "items" in ok("datasets", "list", "--token", TOKEN, e=env(XDG_CONFIG_HOME=cfg, PRIVGEN_TOKEN="pgt_wrong"))
    # no config, no token anywhere but ./var/admin.token of the working directory
    noconf = env(PRIVGEN_URL=URL)
    assert "items" in ok("datasets", "list", e=noconf, cwd=work)
    assert "401" in code(1, "datasets", "list", e=noconf, cwd=empty)


def _upload(ds, rows, decl, ctype="application/json", key=None):
    """POST rows with a raw Privgen-Declaration header (None: no header) and
    an optional Idempotency-Key."""
    import urllib.request
    body = json.dumps({"rows": rows}).encode() if ctype == "application/json" else rows
    h = {"Authorization": f"Bearer {TOKEN}", "Content-Type": ctype}
    if decl is not None:
        h["Privgen-Declaration"] = decl if isinstance(decl, str) else json.dumps(decl)
    if key is not None:
        h["Idempotency-Key"] = key
    req = urllib.request.Request(f"{URL}/v1/datasets/{ds}/rows", method="POST", data=body, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def _privatize(name, *args, src=None):
    out = p(name)
    j = ok("privatize", "--mechanism", "laplace", "--in", src or p("clean.csv"), "--out", out, *args)
    with open(out + ".decl.json") as f:
        side = json.load(f)
    assert side == j, (side, j)  # the sidecar is the declaration printed
    x = np.load(out)  # numpy still loads what privatize writes
    assert x.dtype == np.float32 and x.shape == (j["rows"], j["cols"]), x.shape
    return out, j


@case
def uploads_tied_to_their_declaration():
    base_npy, base = _privatize("b.npy", "--epsilon", 2, "--clip", "l1:1")
    d = ok("datasets", "create", "--name", "tied", "--shape", 2, "--range", "-30:30", "--model",
           "local", "--declaration", base_npy + ".decl.json")
    ds = d["id"]
    assert d["privacy"]["cols"] == 2 and d["privacy"]["clip"] == {"norm": "l1", "radius": 1}, d
    rc, out, _ = run("datasets", "show", ds)
    assert rc == 0 and "rows clipped to l1 radius 1;" in out.decode(), out
    a = ok("datasets", "append", ds, base_npy)  # the sidecar goes along by itself
    assert a["rows_added"] == 500 and a["declaration"] == "matched", a

    def refused(npy, decl, want):
        """A mismatching upload: CLI exit 1 naming the fields, API 422 with both values."""
        err = code(1, "datasets", "append", ds, npy)
        assert "422" in err and sorted(want)[0] in err, err
        st, body = _upload(ds, [[0.0, 0.0]], decl)
        assert st == 422 and body["status"] == 422, body
        got = {e["field"]: e["message"] for e in body["errors"]}
        assert set(got) == set(want), (got, want)
        for f, (mine, theirs) in want.items():
            assert got[f] == f"declared {mine}, the dataset's is {theirs}", (f, got[f])

    # another epsilon: epsilon and (so) the Laplace scale differ
    e3, d3 = _privatize("e3.npy", "--epsilon", 3, "--clip", "l1:1")
    assert d3["noise_scale"] != base["noise_scale"]
    refused(e3, d3, {"declaration.epsilon": ("3", "2"),
                     "declaration.noise_scale": ("%.15g" % d3["noise_scale"],
                                                 "%.15g" % base["noise_scale"])})
    # another clip with the same sensitivity (so the same noise): only the clip differs
    c5, dc = _privatize("c5.npy", "--epsilon", 2, "--clip", "l1:0.5", "--sensitivity", 2)
    assert dc["sensitivity"] == base["sensitivity"] and dc["noise_scale"] == base["noise_scale"]
    refused(c5, dc, {"declaration.clip": ("l1:0.5", "l1:1")})
    # another width: three columns
    wide = np.random.default_rng(1).uniform(-0.3, 0.3, (40, 3))
    np.savetxt(p("wide.csv"), wide, delimiter=",")
    w3, dw = _privatize("w3.npy", "--epsilon", 2, "--clip", "l1:1", src=p("wide.csv"))
    want = {"declaration.cols": "declared rows of 3 values, the dataset's rows hold 2"}
    if dw["noise_scale"] != base["noise_scale"]:
        want["declaration.noise_scale"] = (f"declared {dw['noise_scale']:.15g}, the dataset's is "
                                           f"{base['noise_scale']:.15g}")
    err = code(1, "datasets", "append", ds, w3)
    assert "declaration.cols" in err, err
    st, body = _upload(ds, [[0.0, 0.0]], dw)
    assert st == 422 and {e["field"]: e["message"] for e in body["errors"]} == want, body
    # every field at once, and the refusals added nothing
    g = dict(base, mechanism="gaussian", delta=1e-5, sensitivity=4, cols=5,
             clip={"norm": "l2", "radius": 2})
    st, body = _upload(ds, [[0.0, 0.0]], g)
    assert st == 422 and [e["field"] for e in body["errors"]] == [
        "declaration.mechanism", "declaration.delta", "declaration.sensitivity",
        "declaration.clip", "declaration.cols"], body
    assert ok("datasets", "show", ds)["n"] == 500
    # the declared row count must be the upload's
    st, body = _upload(ds, [[0.0, 0.0]] * 3, base)
    assert st == 422 and body["errors"][0]["field"] == "declaration.rows", body
    assert "declared 500 rows, the upload holds 3" in body["detail"], body
    st, body = _upload(ds, [[0.0, 0.0]] * 3, {k: v for k, v in base.items() if k != "rows"})
    assert st == 200 and body["declaration"] == "matched" and body["n"] == 503, body
    # a retried key replays only the same request: a different declaration
    # with the same rows is a different request (422), not a replay
    nodecl = {k: v for k, v in base.items() if k != "rows"}
    st, body = _upload(ds, [[0.0, 0.0]], nodecl, key="decl-idem")
    assert st == 200 and body["n"] == 504, body
    st, body = _upload(ds, [[0.0, 0.0]], nodecl, key="decl-idem")
    assert st == 200 and body["n"] == 504, body  # the replay
    # (the same declaration plus a matching row count: valid on its own)
    st, body = _upload(ds, [[0.0, 0.0]], dict(nodecl, rows=1), key="decl-idem")
    assert st == 422 and "Idempotency-Key" in json.dumps(body), body
    st, body = _upload(ds, [[0.0, 0.0]], None, key="decl-idem")
    assert st == 422 and "Idempotency-Key" in json.dumps(body), body
    assert ok("datasets", "show", ds)["n"] == 504
    # malformed declarations are 400 naming the field
    for bad, field in (("{not json", "declaration"), ("[1]", "declaration"),
                       (json.dumps(dict(base, epsilon="2")), "declaration.epsilon"),
                       (json.dumps(dict(base, mechanism="rr")), "declaration.mechanism"),
                       (json.dumps(dict(base, cols=0)), "declaration.cols"),
                       (json.dumps(dict(base, clip={"norm": "l3", "radius": 1})),
                        "declaration.clip.norm")):
        st, body = _upload(ds, [[0.0, 0.0]], bad)
        assert st == 400 and body["errors"][0]["field"] == field, (bad, st, body)
    # no declaration: accepted, and said so (the CLI notes it on stderr)
    rc, out, err = run("datasets", "append", ds, p("clean.csv"), "--json")
    assert rc == 0 and json.loads(out)["declaration"] == "not checked", out
    assert "not checked" in err, err
    # a stream from privatize --out - with --declaration FILE
    pr = subprocess.run([BIN, "privatize", "--mechanism", "laplace", "--epsilon", "2", "--clip", "l1:1",
                         "--in", p("clean.csv"), "--out", "-"], capture_output=True, env=AUTH, timeout=60)
    with open(p("stream.decl.json"), "wb") as f:
        f.write(pr.stderr)
    a = ok("datasets", "append", ds, "-", "--format", "npy", "--declaration", p("stream.decl.json"),
           stdin=pr.stdout)
    assert a["declaration"] == "matched" and a["n"] == 1504, a
    # privatized rows declared for a central dataset are refused
    c = ok("datasets", "create", "--name", "cen", "--shape", 2, "--range", "-30:30", "--model",
           "central", "--budget-epsilon", 1, "--budget-delta", 1e-5)
    st, body = _upload(c["id"], [[0.0, 0.0]], base)
    assert st == 422 and body["errors"][0]["field"] == "declaration.model", body
    st, body = _upload(c["id"], [[0.0, 0.0]], None)
    assert st == 200 and body["declaration"] == "not applicable", body


@case
def creation_refuses_a_wrong_width_declaration():
    _, decl = _privatize("cw.npy", "--epsilon", 2, "--clip", "l1:1")
    err = code(1, "datasets", "create", "--name", "w", "--shape", 3, "--range", "-30:30", "--model",
               "local", "--declaration", p("cw.npy.decl.json"))
    assert "privacy.cols" in err and "422" in err, err
    priv = {k: decl[k] for k in ("mechanism", "epsilon", "sensitivity", "noise_scale", "cols", "clip")}
    body = {"name": "w", "shape": [3], "range": [-30, 30], "privacy": dict(priv, model="local")}
    st, r = api("POST", "/v1/datasets", body)
    assert st == 422 and r["errors"] == [{"field": "privacy.cols", "message": r["detail"]}], r
    assert "rows of 2 values but shape holds 3" in r["detail"], r
    st, r = api("POST", "/v1/datasets", dict(body, shape=[1, 1, 2]))  # [c,h,w] of width 2 is fine
    assert st == 201, r
    for clip, field in (({"norm": "l2", "radius": 1}, "privacy.clip.norm"),
                        ({"norm": "l1", "radius": 1.5}, "privacy.clip.radius"),
                        ({"norm": "l1"}, "privacy.clip.radius"),
                        ({"norm": "l1", "radius": 1, "x": 1}, "privacy.clip.x"),
                        ("l1:1", "privacy.clip")):
        st, r = api("POST", "/v1/datasets", dict(body, shape=[2], privacy=dict(priv, model="local", clip=clip)))
        assert st == 422 and r["errors"][0]["field"] == field, (clip, r)
    st, r = api("POST", "/v1/datasets", dict(body, shape=[2], privacy=dict(priv, model="local", cols=2.5)))
    assert st == 422 and r["errors"][0]["field"] == "privacy.cols", r


@case
def plain_words_and_one_privacy_vocabulary():
    """append prints readable lines; a central job's delta defaults to
    the cap for every method; a missing epsilon names what to give, without raw
    braces, the same from the CLI and the API; `jobs create --help`'s example
    runs as printed; rows in errors count from 1."""
    cds = ok("datasets", "create", "--name", "vocab", "--shape", 2, "--range", "-1.5:1.5",
             "--model", "central", "--budget-epsilon", 3, "--budget-delta", 1e-5)["id"]
    out = human("datasets", "append", cds, p("clean.csv"))
    assert out == f"appended 500 rows to {cds}: 500 rows in all\n", out
    # the example of `jobs create --help`, with $DS set, exactly as printed
    rc, hout, _ = run("jobs", "create", "--help")
    lines = hout.decode().splitlines()
    ex = lines[lines.index("Example:") + 1].strip()
    assert ex.startswith("privgen jobs create"), ex
    rc, jout, err = run(*shlex.split(ex.replace("$DS", cds))[1:])
    assert rc == 0, (ex, err)
    job = jout.decode().strip()
    st, view = api("GET", f"/v1/jobs/{job}")
    assert view["privacy"]["delta"] == 1e-5 and abs(view["privacy"]["epsilon"] - 1) < 1e-6, \
        view["privacy"]
    api("POST", f"/v1/jobs/{job}/cancel")
    # delta from the cap for every central method, in the resolved spec
    for m in ("dp_sinkhorn", "swd_gen", "swd_flow", "swd_flow_r"):
        st, r = api("POST", "/v1/jobs?dry_run=true",
                    {"dataset_id": cds, "method": m, "privacy": {"epsilon": 1}})
        assert st == 200 and r["spec"]["privacy"]["delta"] == 1e-5, (m, st, r)
        # no epsilon: one message naming the field and what to give
        st, r = api("POST", "/v1/jobs", {"dataset_id": cds, "method": m})
        assert st == 422 and r["errors"][0]["field"] == "privacy.epsilon", (m, r)
        msg = r["errors"][0]["message"]
        assert "privacy.epsilon = 1" in msg and "cap delta" in msg, (m, msg)
        assert "{" not in r["detail"] and "}" not in r["detail"], r["detail"]
        err = code(1, "jobs", "create", "--dataset", cds, "--method", m)
        assert msg in err and "{" not in err, (m, err)
    # rows count from 1 in upload errors (the NaN is on the second row)
    pub = ok("datasets", "create", "--name", "rows", "--shape", 2, "--range", "-1:1",
             "--model", "public")["id"]
    with open(p("nan2.csv"), "w") as f:
        f.write("0.1,0.1\n0.2,nan\n")
    err = code(1, "datasets", "append", pub, p("nan2.csv"))
    assert "row 2, column 2" in err, err
    st, r = api("POST", f"/v1/datasets/{pub}/rows", {"rows": [[0, 0], [0, 2]]})
    assert st == 200 or (st == 422 and r["errors"][0]["field"] == "rows[2]"), (st, r)
    st, r = api("POST", f"/v1/datasets/{pub}/rows", {"rows": [[0, 0], [0, "x"]]})
    assert st == 422 and r["errors"][0]["field"] == "rows[2]" and r["row"] == 2, r
    assert r["detail"] == "row 2, column 2: not a number", r

try:
    _toy()
    for fn in CASES:
        try:
            fn()
            print(f"ok   {fn.__name__}")
        except Exception as ex:  # noqa: BLE001 - any failure fails the case
            FAILS.append(fn.__name__)
            print(f"FAIL {fn.__name__}: {ex}")
finally:
    srv.send_signal(signal.SIGTERM)
    try:
        srv.wait(timeout=20)
    except subprocess.TimeoutExpired:
        srv.kill()
    shutil.rmtree(TMP, ignore_errors=True)
if FAILS:
    print("FAILED:", ", ".join(FAILS))
    sys.exit(1)
print("all passed")
