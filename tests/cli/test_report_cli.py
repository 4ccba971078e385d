"""End-to-end tests of `privgen report` against a live privgend (port 0,
temporary data dir): the files it writes (report.json equal to the server's
view, decodable PNGs), per-column means and stds of the reference rows
recomputed with numpy, the privacy rule seen from the CLI (a read token is
refused a private dataset, exit 1), --json, --no-wait, --help, usage errors
(exit 2), and `privgen report delete`.

Usage: test_report_cli.py PATH_TO_PRIVGEN PATH_TO_PRIVGEND. Exits nonzero on failure."""
import json
import os
import struct
import sys
import time
import urllib.request

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live  # noqa: E402

BIN, DAEMON = sys.argv[1], sys.argv[2]
LIVE = live.Live(DAEMON, "privgen-report-")
TMP, URL, ADMIN = LIVE.tmp, LIVE.url, LIVE.admin
FAILS = []


def run(*args, token=ADMIN):
    return LIVE.run(BIN, args, token, timeout=120)


def api(method, path, body=None, token=ADMIN):
    req = urllib.request.Request(URL + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {token}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def check(name, cond, detail=""):
    if not cond:
        FAILS.append(f"{name}: {detail}")


def dataset(privacy, rows):
    st, d = api("POST", "/v1/datasets", {"name": "d", "shape": [2], "range": [-4, 4],
                                         "privacy": privacy})
    assert st == 201, d
    st, r = api("POST", f"/v1/datasets/{d['id']}/rows", {"rows": rows.tolist()})
    assert st == 200, r
    return d["id"]


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return 0, 0
    return struct.unpack(">II", head[16:24])


def post_csv(path, text):
    req = urllib.request.Request(URL + path, method="POST", data=text.encode(),
                                 headers={"Authorization": f"Bearer {ADMIN}",
                                          "Content-Type": "text/csv"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def get_text(path):
    req = urllib.request.Request(URL + path, headers={"Authorization": f"Bearer {ADMIN}"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read().decode()


def decoded(text, schema):
    """CSV records as one float column per schema column: numbers (NaN when
    missing), categories and booleans as codes with missing as the last
    level (the report's columns, engine/eval/table_cols.h)."""
    import csv
    import io
    rows = list(csv.DictReader(io.StringIO(text)))
    out = np.zeros((len(rows), len(schema["columns"])))
    for j, c in enumerate(schema["columns"]):
        for i, r in enumerate(rows):
            v = r[c["name"]]
            if c["type"] in ("integer", "continuous"):
                out[i, j] = float(v) if v != "" else np.nan
            elif c["type"] == "boolean":
                out[i, j] = {"false": 0, "true": 1, "": 2}[v]
            else:
                out[i, j] = c["categories"].index(v) if v != "" else len(c["categories"])
    return out


def typed_report():
    """A typed job's report speaks the schema (one column per table column,
    names, categories named, missing as a level, the label's utility with
    the majority rate), its synthetic rows are the rows /samples?seed=S
    serves, and its per-column figures match SciPy on those rows."""
    schema = {"columns": [
        {"name": "age", "type": "integer", "min": 18, "max": 90},
        {"name": "income", "type": "continuous", "min": 0, "max": 1000, "nullable": True},
        {"name": "color", "type": "categorical", "categories": ["red", "green", "blue"],
         "nullable": True},
        {"name": "member", "type": "boolean"},
        {"name": "grade", "type": "categorical", "categories": ["A", "B", "C"]}],
        "label": "grade"}
    g = np.random.default_rng(11)
    n = 400
    lines = ["age,income,color,member,grade"]
    for i in range(n):
        age = int(g.integers(18, 91))
        inc = "" if g.uniform() < 0.1 else f"{min(1000, max(0, g.normal(300 + 3 * age, 80))):.2f}"
        col = "" if g.uniform() < 0.15 else ["red", "green", "blue"][int(g.integers(0, 3))]
        mem = "true" if g.uniform() < 0.3 + 0.005 * age else "false"
        grade = "A" if g.uniform() < 0.7 else ("B" if g.uniform() < 0.7 else "C")
        lines.append(f"{age},{inc},{col},{mem},{grade}")
    text = "\n".join(lines) + "\n"
    st, d = api("POST", "/v1/datasets", dict(schema, name="t", privacy={"model": "public"}))
    assert st == 201, d
    tds = d["id"]
    st, r = post_csv(f"/v1/datasets/{tds}/rows", text)
    assert st == 200, r
    st, d = api("POST", "/v1/datasets", dict(schema, name="tc", privacy={
        "model": "central", "budget": {"epsilon": 20, "delta": 1e-5}}))
    assert st == 201, d
    st, r = post_csv(f"/v1/datasets/{d['id']}/rows", text)
    assert st == 200, r
    # swd_flow: a conditional model (classes balanced by the server);
    # aim: classes drawn with the rows (engine/methods/draw.h).
    for spec in ({"method": "swd_flow", "seed": 3, "privacy": {"noise_multiplier": 5},
                  "flow": {"steps": 10, "particles": 100}},
                 {"method": "aim", "seed": 3, "privacy": {"epsilon": 1, "delta": 1e-6}}):
        tjob = typed_job(spec, d["id"], tds, text, schema)
    # Against an untyped, unlabelled dataset of the same width: no utility,
    # the label column left out (the report once wrote the drawn classes
    # through a NULL pointer here).
    st, u = api("POST", "/v1/datasets", {"name": "u", "shape": [8], "range": [-1, 1],
                                         "privacy": {"model": "public"}})
    assert st == 201, u
    st, r = api("POST", f"/v1/datasets/{u['id']}/rows",
                {"rows": np.random.default_rng(2).uniform(-1, 1, (50, 8)).round(3).tolist()})
    assert st == 200, r
    rc, out, err = run("report", tjob, "--against", u["id"], "-n", 100, "--seed", 1, "-o",
                       os.path.join(TMP, "typed-untyped"))
    check("typed job vs unlabelled rows", rc == 0 and "utility" not in err, out + err)
    if rc == 0:
        res = json.load(open(os.path.join(TMP, "typed-untyped", "report.json")))["result"]
        check("no label column", [c.get("name") for c in res["marginals"]["columns"]]
              == ["age", "income", "color", "member"] and "utility" not in res, res)


def typed_job(spec, central, tds, text, schema):
    from scipy.stats import ks_2samp, wasserstein_distance
    from scipy.stats.contingency import association
    d = {"id": central}
    m_ = spec["method"]

    def chk(name, cond, detail=""):
        check(f"{m_}: {name}", cond, detail)

    st, j = api("POST", "/v1/jobs", dict(spec, dataset_id=d["id"]))
    assert st == 202, j
    tjob = j["id"]
    for _ in range(600):
        st, j = api("GET", f"/v1/jobs/{tjob}")
        if j["status"] in ("succeeded", "failed"):
            break
        time.sleep(0.1)
    assert j["status"] == "succeeded", j
    d3 = os.path.join(TMP, "typed-" + m_)
    rc, out, err = run("report", tjob, "--against", tds, "-n", 600, "--seed", 21, "-o", d3)
    chk("typed report", rc == 0, out + err)
    if rc != 0:
        return
    chk("typed summary", "by column" in err and "utility: accuracy of grade" in err
          and "always guessing the most frequent class" in err and "mean TV" in err
          and "Cramer's V" in err, err)
    res = json.load(open(os.path.join(d3, "report.json")))["result"]
    cols = res["marginals"]["columns"]
    chk("typed columns", [c.get("name") for c in cols] == ["age", "income", "color", "member",
                                                             "grade"], cols)
    chk("typed kinds", [c["kind"] for c in cols] == ["numeric", "numeric", "categorical",
                                                        "categorical", "categorical"], cols)
    chk("category names", cols[2].get("categories") == ["red", "green", "blue", "(missing)"]
          and cols[3].get("categories") == ["false", "true"]
          and cols[4].get("categories") == ["A", "B", "C"], cols)
    chk("units", res["split"]["d"] == 5 and res["split"]["units"] == 1 + 2 + 4 + 1, res["split"])
    u = res.get("utility", {})
    chk("utility label", u.get("label") == "grade" and u.get("classes") == 3
          and 0.5 < u.get("majority_rate", 0) < 0.9 and u.get("majority_class") == "A", u)
    # The same rows as /samples?seed=21&n=600 (CSV), decoded the same way.
    syn = decoded(get_text(f"/v1/jobs/{tjob}/samples?seed=21&n=600&format=csv"), schema)
    ref = decoded(text, schema)
    for j_, c in enumerate(cols):
        if c["kind"] == "numeric":
            s_, r_ = syn[:, j_], ref[:, j_]
            sp, rp = s_[~np.isnan(s_)], r_[~np.isnan(r_)]
            chk(f"same rows: mean {c['name']}", abs(c["mean_synthetic"] - sp.mean())
                  <= 1e-6 * max(1, abs(sp.mean())), (c, sp.mean()))
            chk(f"missing {c['name']}", abs(c["missing_synthetic"] - np.isnan(s_).mean()) < 1e-12
                  and abs(c["missing_real"] - np.isnan(r_).mean()) < 1e-12, c)
            # KS exact up to 1e-12 (an order statistic). W1 and the means to
            # 1e-6 relative: the report decodes the float32 units into float32
            # values while the CSV prints each decoded double shortest (and
            # the reference text has 2 decimals), about 2^-24 apart.
            chk(f"KS {c['name']}", abs(c["ks"] - ks_2samp(sp, rp).statistic) < 1e-12, c)
            w = wasserstein_distance(sp, rp)
            chk(f"W1 {c['name']}", abs(c["w1"] - w) <= 1e-6 * max(1, w), (c["w1"], w))
        else:
            k = len(c["freq_real"])
            p_ = np.bincount(ref[:, j_].astype(int), minlength=k) / len(ref)
            q_ = np.bincount(syn[:, j_].astype(int), minlength=k) / len(syn)
            chk(f"same rows: freq {c['name']}", np.allclose(c["freq_synthetic"], q_, atol=1e-15),
                  (c["freq_synthetic"], q_))
            chk(f"TV {c['name']}", abs(c["tv"] - 0.5 * np.abs(p_ - q_).sum()) < 1e-14, c)
    tvs = [c["tv"] for c in cols if c["kind"] == "categorical"]
    chk("mean TV", abs(res["marginals"]["mean_tv"] - np.mean(tvs)) < 1e-12, res["marginals"])

    def cramer(a, b):
        _, ia = np.unique(a, return_inverse=True)
        _, ib = np.unique(b, return_inverse=True)
        tab = np.zeros((ia.max() + 1, ib.max() + 1), dtype=np.int64)
        np.add.at(tab, (ia, ib), 1)
        return association(tab, method="cramer")

    pw = res["pairwise"]
    chk("pair counts", pw["cramer_pairs"] == 3 and pw["pearson_pairs"] == 1, pw)
    diffs = []
    for a in (2, 3, 4):
        for b in (2, 3, 4):
            if a < b:
                vr, vs = cramer(ref[:, a], ref[:, b]), cramer(syn[:, a], syn[:, b])
                chk(f"Cramer real {a},{b}", abs(pw["real"][a][b] - vr) < 1e-12, (pw["real"][a][b], vr))
                chk(f"Cramer syn {a},{b}", abs(pw["synthetic"][a][b] - vs) < 1e-12, (pw["synthetic"][a][b], vs))
                diffs.append(abs(vs - vr))
    chk("Cramer mean", abs(pw["cramer_mean_abs_diff"] - np.mean(diffs)) < 1e-12, pw)
    # Pearson of age and income over the rows where both are present (numpy.corrcoef).
    for name, x in (("real", ref), ("synthetic", syn)):
        ok_ = ~np.isnan(x[:, 1])
        want = np.corrcoef(x[ok_, 0], x[ok_, 1])[0, 1]
        chk(f"Pearson {name}", abs(pw[name][0][1] - want) < 1e-6, (pw[name][0][1], want))
    chk("typed figures", os.path.exists(os.path.join(d3, "histograms-1.png"))
          and os.path.exists(os.path.join(d3, "correlation.png")), os.listdir(d3))
    return tjob


try:
    rng = np.random.default_rng(4)
    t = rng.uniform(0, np.pi, 400)
    noisy = np.c_[np.cos(t), np.sin(t)] + rng.laplace(0, 0.3, (400, 2))
    local = dataset({"model": "local", "mechanism": "laplace", "epsilon": 5, "sensitivity": 1.42,
                     "noise_scale": 0.3}, np.clip(noisy, -4, 4).round(4))
    t = rng.uniform(0, np.pi, 300)
    holdout = np.c_[np.cos(t), np.sin(t)].round(4)
    pub = dataset({"model": "public"}, holdout)
    priv = dataset({"model": "central", "budget": {"epsilon": 3, "delta": 1e-5}},
                   np.clip(holdout * 0.9, -4, 4).round(4))
    st, j = api("POST", "/v1/jobs", {"dataset_id": local, "method": "entropic_gan",
                                     "model": {"hidden": [16]},
                                     "train": {"steps": 60, "batch_size": 32}, "seed": 3})
    assert st == 202, j
    job = j["id"]
    for _ in range(600):
        st, j = api("GET", f"/v1/jobs/{job}")
        if j["status"] in ("succeeded", "failed"):
            break
        time.sleep(0.1)
    assert j["status"] == "succeeded", j
    st, tok = api("POST", "/v1/tokens", {"scope": "read"})
    reader = tok["token"]

    # --help and usage errors
    rc, out, err = run("report", "--help")
    check("help", rc == 0 and "--against" in out and "report.json" in out, out + err)
    rc, out, err = run("--help")
    check("listed", rc == 0 and "report" in out, out)
    rc, out, err = run("report", job)
    check("no against", rc == 2 and "--against" in err, err)
    rc, out, err = run("report", job, "--against", pub, "-n", "x")
    check("bad n", rc == 2 and "-n" in err or "--n" in err, err)
    rc, out, err = run("report", job, "--against", pub, "--bogus", "1")
    check("unknown option", rc == 2, err)

    # a read token, public holdout: files written, JSON listing them
    d = os.path.join(TMP, "out", "rep")
    rc, out, err = run("report", job, "--against", pub, "-n", 500, "--seed", 9, "-o", d, "--json",
                       token=reader)
    check("report json exit", rc == 0, out + err)
    res = json.loads(out) if rc == 0 else {}
    files = res.get("files", [])
    check("files", sorted(os.path.basename(f) for f in files)
          == ["correlation.png", "histograms-1.png", "report.json", "scatter.png"], out)
    for f in files:
        if f.endswith(".png"):
            w, h = png_size(f)
            check("png " + f, w > 100 and h > 100, (w, h))
    if rc == 0:
        view = json.load(open(os.path.join(d, "report.json")))
        st, live = api("GET", f"/v1/jobs/{job}/reports/{res['id']}", token=reader)
        check("report.json is the view", st == 200 and live == view, "")
        check("marks", view["private"] is True and view["audience"] == "tenant", view)
        # the reference rows' column means and stds, recomputed (all rows of
        # the reference set enter the per-column figures)
        cols = view["result"]["marginals"]["columns"]
        for j_ in range(2):
            c = cols[j_]
            check(f"mean col {j_}", abs(c["mean_real"] - holdout[:, j_].astype(np.float32).mean())
                  < 1e-5, c)
            sd = [holdout[:, j_].astype(np.float32).std(ddof=k) for k in (0, 1)]
            check(f"std col {j_}", min(abs(c["std_real"] - s) for s in sd) < 1e-5, (c, sd))
        check("n", view["n"] == 500 and view["against_n"] == 300
              and view["result"]["split"]["n_synthetic"] == 500, view)
        # the synthetic rows are /samples?seed=9&n=500's (engine/methods/draw.h)
        text_ = get_text(f"/v1/jobs/{job}/samples?seed=9&n=500&format=csv")
        rows_ = np.array([[float(v) for v in l.split(",")] for l in text_.splitlines()
                          if l and (l[0].isdigit() or l[0] == "-")])
        for j_ in range(2):
            c = cols[j_]
            check(f"untyped same rows {j_}", rows_.shape == (500, 2)
                  and abs(c["mean_synthetic"] - rows_[:, j_].astype(np.float32).astype(np.float64)
                          .mean()) < 1e-9, (c, rows_.shape))

    # readable mode: the headline figures on stderr, the files in the id's dir
    rc, out, err = run("report", job, "--against", pub, "-n", 300, token=reader)
    check("human", rc == 0 and "sliced W2" in err and "noise floor" in err
          and "wrote 4 files" in err, out + err)

    # private data: a read token is refused (exit 1, the reason), admin gets
    # the report with the note on stderr
    rc, out, err = run("report", job, "--against", priv, "-n", 200, token=reader)
    check("read token refused", rc == 1 and "admin" in err, out + err)
    d2 = os.path.join(TMP, "priv")
    rc, out, err = run("report", job, "--against", priv, "-n", 200, "-o", d2)
    check("admin private", rc == 0 and "not differentially private" in err, out + err)
    if rc == 0:
        v = json.load(open(os.path.join(d2, "report.json")))
        check("private marks", v["private"] is False and v["audience"] == "data owner"
              and "epsilon" not in v and "epsilon" not in v["result"], v)

    # field errors from the server: exit 1 naming the field
    rc, out, err = run("report", job, "--against", "ds_0000000000000000")
    check("unknown dataset", rc == 1 and "against" in err, err)
    rc, out, err = run("report", job, "--against", pub, "-n", 100001)
    check("n too large", rc == 1 and "n" in err and "422" in err, err)

    # --no-wait --json: the queued view
    rc, out, err = run("report", job, "--against", pub, "-n", 100, "--no-wait", "--no-utility",
                       "--json")
    j = json.loads(out) if rc == 0 else {}
    check("no-wait", rc == 0 and j.get("status") in ("queued", "running", "succeeded")
          and j.get("utility") is False
          and j.get("id", "").startswith("rep_"), out + err)

    # delete: a read token is refused (exit 1), the admin deletes (the
    # report is gone from the server), a second delete is "no such report";
    # usage errors exit 2 before any request
    if rc == 0:
        rid = j["id"]
        for _ in range(600):
            st, v = api("GET", f"/v1/jobs/{job}/reports/{rid}")
            if v.get("status") not in ("queued", "running"):
                break
            time.sleep(0.1)
        rc, out, err = run("report", "delete", job, rid, token=reader)
        check("delete read token", rc == 1 and "admin" in err, out + err)
        rc, out, err = run("report", "delete", job, rid)
        check("delete", rc == 0 and out.strip() == f"{rid} deleted", out + err)
        st, v = api("GET", f"/v1/jobs/{job}/reports/{rid}")
        check("deleted on the server", st == 404, v)
        rc, out, err = run("report", "delete", job, rid, "--json")
        check("delete again", rc == 1 and "no such report" in err, out + err)
    st, d = api("POST", f"/v1/jobs/{job}/reports", {"against": pub, "n": 100, "utility": False})
    if st == 202:
        for _ in range(600):
            st, v = api("GET", f"/v1/jobs/{job}/reports/{d['id']}")
            if v.get("status") not in ("queued", "running"):
                break
            time.sleep(0.1)
        rc, out, err = run("report", "delete", job, d["id"], "--json")
        check("delete json", rc == 0 and json.loads(out or "{}") == {"id": d["id"],
                                                                     "deleted": True}, out + err)
    else:
        check("second report", False, d)
    rc, out, err = run("report", "delete", job)
    check("delete usage", rc == 2 and "REPORT_ID" in err, err)
    rc, out, err = run("report", "delete", job, "rep_1", "--against", pub)
    check("delete with --against", rc == 2, err)
    rc, out, err = run("report", "delete", job, "../x")
    check("delete bad id", rc == 2, err)
    rc, out, err = run("report", "--help")
    check("help names delete", "report delete JOB_ID REPORT_ID" in out, out)

    typed_report()
finally:
    LIVE.stop()

if FAILS:
    for f in FAILS:
        print("FAIL", f)
    sys.exit(1)
print("ok")
