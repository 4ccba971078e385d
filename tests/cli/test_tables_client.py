"""The `privgen` client on typed tables against a live privgend (port 0,
temporary data dir): datasets create --schema (central and local, the local
one with the declaration privatize --schema printed), append of CSV, JSON
records and NDJSON (content type from the extension), a hostile CSV refused
with row and column and nothing stored, a job, `privgen samples` printing the
first rows as a table and writing CSV/JSON files whose every value is valid
under the schema, and label by category name.

Usage: test_tables_client.py PATH_TO_PRIVGEN PATH_TO_PRIVGEND. Exits nonzero
on failure."""
import csv
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live  # noqa: E402

BIN, DAEMON = sys.argv[1], sys.argv[2]
LIVE = live.Live(DAEMON, "privgen-tables-client-")
TMP = LIVE.tmp


def p(name):
    return os.path.join(TMP, name)


def run(*args):
    return LIVE.run(BIN, args, timeout=120)


def ok(*args):
    rc, out, err = run(*args, "--json")
    assert rc == 0, (args, rc, out, err)
    return json.loads(out)


SCHEMA = {"columns": [
    {"name": "age", "type": "integer", "min": 18, "max": 99, "nullable": True},
    {"name": "income", "type": "continuous", "min": 0, "max": 1500},
    {"name": "job", "type": "categorical", "categories": ["fixed", "free lance", "others"]},
    {"name": "owner", "type": "boolean"},
    {"name": "status", "type": "categorical", "categories": ["good", "bad"]}],
    "label": "status"}
json.dump(SCHEMA, open(p("schema.json"), "w"))


def rows(n, seed):
    out = []
    x = seed
    for i in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        out.append({"age": None if x % 10 == 0 else 18 + x % 82,
                    "income": round((x >> 4) % 150000 / 100, 2),
                    "job": SCHEMA["columns"][2]["categories"][(x >> 8) % 3],
                    "owner": bool((x >> 12) & 1),
                    "status": "good" if (x >> 14) % 10 < 7 else "bad"})
    return out


def write_csv(path, rs, order=("status", "owner", "job", "income", "age")):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(order)
        for r in rs:
            w.writerow(["" if r[k] is None else ("true" if r[k] is True else "false" if r[k] is False else r[k])
                        for k in order])


def valid(rec, label=True):
    """Every value valid under the schema (decoded output)."""
    cols = {c["name"]: c for c in SCHEMA["columns"]}
    assert set(rec) == set(cols) - (set() if label else {"status"}), rec
    for k, v in rec.items():
        c = cols[k]
        if v is None:
            assert c.get("nullable"), (k, rec)
        elif c["type"] == "integer":
            assert isinstance(v, int) and c["min"] <= v <= c["max"], (k, v)
        elif c["type"] == "continuous":
            assert isinstance(v, (int, float)) and c["min"] <= v <= c["max"], (k, v)
        elif c["type"] == "categorical":
            assert v in c["categories"], (k, v)
        else:
            assert v in (True, False), (k, v)


def from_csv_text(text):
    out = []
    for r in csv.DictReader(io.StringIO(text)):
        d = {}
        for k, v in r.items():
            c = next(c for c in SCHEMA["columns"] if c["name"] == k)
            if v == "":
                d[k] = None
            elif c["type"] == "integer":
                assert v.lstrip("-").isdigit(), (k, v)
                d[k] = int(v)
            elif c["type"] == "continuous":
                d[k] = float(v)
            elif c["type"] == "boolean":
                assert v in ("true", "false"), (k, v)
                d[k] = v == "true"
            else:
                d[k] = v
        out.append(d)
    return out


try:
    # a central typed dataset, uploads in three formats
    ds = ok("datasets", "create", "--schema", p("schema.json"), "--name", "loans", "--model",
            "central", "--budget-epsilon", 20, "--budget-delta", 1e-5)
    assert ds["d"] == 7 and ds["num_classes"] == 2 and ds["label"] == "status", ds
    rc, out, err = run("datasets", "show", ds["id"])
    assert rc == 0 and "columns" in out and "age: integer, 18 to 99, may be missing" in out, out
    assert "status: categorical, 2 categories (good, ...) (label)" in out, out
    rc, _, err = run("datasets", "create", "--schema", p("schema.json"), "--name", "x",
                     "--model", "central", "--shape", 7)
    assert rc == 2 and "--schema" in err, (rc, err)
    write_csv(p("a.csv"), rows(800, 1))
    json.dump(rows(30, 2), open(p("b.json"), "w"))
    with open(p("c.ndjson"), "w") as f:
        for r in rows(20, 3):
            f.write(json.dumps(r) + "\n")
    for name, n in (("a.csv", 800), ("b.json", 830), ("c.ndjson", 850)):
        got = ok("datasets", "append", ds["id"], p(name))
        assert got["n"] == n, (name, got)
    bad = rows(5, 4)
    bad[3]["job"] = "pilot"
    write_csv(p("bad.csv"), bad)
    rc, out, err = run("datasets", "append", ds["id"], p("bad.csv"))
    assert rc == 1 and "row 4" in err and "'job'" in err, (rc, out, err)
    assert ok("datasets", "show", ds["id"])["n"] == 850

    job = ok("jobs", "create", "--dataset", ds["id"], "--method", "swd_flow", "--seed", 3,
             "--set", "privacy.noise_multiplier=5", "--set", "flow.steps=10",
             "--set", "flow.particles=100")
    rc, out, err = run("jobs", "watch", job["id"])
    assert rc == 0, (rc, out, err)
    assert ok("jobs", "show", job["id"])["spec"]["table"]["width"] == 7

    # human mode: the first rows as an aligned table
    rc, out, err = run("samples", job["id"], "--seed", 5)
    assert rc == 0, (rc, out, err)
    lines = out.splitlines()
    assert lines[0].split() == ["age", "income", "job", "owner", "status"], out
    assert len(lines) == 11, out
    for line in lines[1:]:
        f = line.split()
        assert f[-1] in ("good", "bad") and f[-2] in ("true", "false"), line
    rc, out, _ = run("samples", job["id"], "-n", 4, "--label", "bad")
    assert rc == 0 and all(l.split()[-1] == "bad" for l in out.splitlines()[1:]), out
    # files: CSV and JSON records, every value valid
    got = ok("samples", job["id"], "-n", 300, "--format", "csv", "--seed", 7, "-o", p("s.csv"))
    assert got["content_type"].startswith("text/csv"), got
    recs = from_csv_text(open(p("s.csv")).read())
    assert len(recs) == 300
    for r in recs:
        valid(r)
    ok("samples", job["id"], "-n", 300, "--format", "json", "--seed", 7, "-o", p("s.json"))
    js = json.load(open(p("s.json")))
    assert len(js) == 300
    for r in js:
        valid(r)
    assert [r["job"] for r in js] == [r["job"] for r in recs]  # same seed, same rows
    rc, out, _ = run("samples", job["id"], "-n", 5, "--format", "ndjson", "--label", "good")
    assert rc == 0 and [json.loads(l)["status"] for l in out.splitlines()] == ["good"] * 5, out
    rc, _, err = run("samples", job["id"], "-n", 5, "--label", "ugly")
    assert rc == 1 and "ugly" in err, err
    # A whole synthetic table in one download. Streamed formats
    # follow --max-stream-samples (default 1000000), not --max-samples
    # (10000, png only); --rows-like-dataset asks for the dataset's rows.
    ok("samples", job["id"], "-n", 16000, "--format", "csv", "--seed", 7, "-o", p("big.csv"))
    assert len(from_csv_text(open(p("big.csv")).read())) == 16000
    got = ok("samples", job["id"], "--rows-like-dataset", "--format", "csv", "--seed", 7,
             "-o", p("like.csv"))
    like = from_csv_text(open(p("like.csv")).read())
    assert len(like) == 850, len(like)
    for r in like[:50]:
        valid(r)
    rc, _, err = run("samples", job["id"], "-n", 16000, "--format", "png", "-o", p("big.png"))
    assert rc == 1 and "--max-samples" in err, (rc, err)
    rc, _, err = run("samples", job["id"], "-n", 1000001, "--format", "csv", "-o", p("x.csv"))
    assert rc == 1 and "--max-stream-samples" in err, (rc, err)
    rc, _, err = run("samples", job["id"], "-n", 5, "--rows-like-dataset")
    assert rc == 2 and "not both" in err, (rc, err)

    # a local typed dataset: privatize --schema, its declaration at creation and upload
    write_csv(p("clean.csv"), rows(600, 9), order=("age", "income", "job", "owner", "status"))
    rc, decl, err = run("privatize", "--schema", p("schema.json"), "--in", p("clean.csv"),
                        "--out", p("noisy.csv"), "--epsilon", 8)
    assert rc == 0, err
    open(p("decl.json"), "w").write(decl)
    d = json.loads(decl)
    d["columns"][2]["keep_probability"] = 0.999
    json.dump(d, open(p("decl_bad.json"), "w"))
    rc, _, err = run("datasets", "create", "--schema", p("schema.json"), "--name", "ldp",
                     "--model", "local", "--declaration", p("decl_bad.json"))
    assert rc == 1 and "privacy.columns[2].keep_probability" in err, err
    lds = ok("datasets", "create", "--schema", p("schema.json"), "--name", "ldp", "--model",
             "local", "--declaration", p("decl.json"))
    assert lds["privacy"]["mechanism"] == "per_column", lds
    rc, out, _ = run("datasets", "show", lds["id"])
    assert rc == 0 and "column by column" in out and "epsilon 8 per row" in out, out
    d = json.loads(decl)
    d["columns"][1]["noise_scale"] *= 2
    json.dump(d, open(p("decl_other.json"), "w"))
    rc, _, err = run("datasets", "append", lds["id"], p("noisy.csv"), "--declaration",
                     p("decl_other.json"))
    assert rc == 1 and "noise_scale" in err, err
    got = ok("datasets", "append", lds["id"], p("noisy.csv"), "--declaration", p("decl.json"))
    assert got["n"] == 600 and got["declaration"] == "matched", got

    # A proposed schema keeps the table's words end to end. Yes/No
    # columns come back as Yes/No (not true/false), integer codes as the same
    # codes, the outcome-like column is the label; JSON records may give a
    # code as a number.
    import random
    rng = random.Random(32)
    with open(p("hr.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Age", "OverTime", "JobLevel", "Attrition"])
        for i in range(400):
            w.writerow([rng.randint(18, 60), rng.choice(["Yes", "No"]), rng.randint(1, 5),
                        "Yes" if rng.random() < 0.2 else "No"])
    rc, out, err = run("schema", "propose", "--in", p("hr.csv"), "--out", p("hr.json"))
    assert rc == 0 and "'Attrition' looks like an outcome" in err, (rc, out, err)
    sc = json.load(open(p("hr.json")))
    cols = {c["name"]: c for c in sc["columns"]}
    assert sc["label"] == "Attrition", sc
    assert cols["OverTime"]["categories"] == ["No", "Yes"], cols
    assert cols["JobLevel"]["categories"] == ["1", "2", "3", "4", "5"], cols
    hr = ok("datasets", "create", "--schema", p("hr.json"), "--name", "hr", "--model",
            "central", "--budget-epsilon", 20, "--budget-delta", 1e-5)
    ok("datasets", "append", hr["id"], p("hr.csv"))
    json.dump([{"Age": 30, "OverTime": "No", "JobLevel": 3, "Attrition": "Yes"}],
              open(p("hr1.json"), "w"))
    assert ok("datasets", "append", hr["id"], p("hr1.json"))["n"] == 401
    hj = ok("jobs", "create", "--dataset", hr["id"], "--method", "swd_flow", "--seed", 3,
            "--set", "privacy.noise_multiplier=5", "--set", "flow.steps=10",
            "--set", "flow.particles=100")
    rc, out, err = run("jobs", "watch", hj["id"])
    assert rc == 0, (rc, out, err)
    ok("samples", hj["id"], "-n", 200, "--format", "csv", "--seed", 1, "-o", p("hr-s.csv"))
    got = list(csv.DictReader(open(p("hr-s.csv"))))
    assert len(got) == 200 and set(got[0]) == {"Age", "OverTime", "JobLevel", "Attrition"}, got[0]
    assert {r["OverTime"] for r in got} <= {"Yes", "No"}, {r["OverTime"] for r in got}
    assert {r["Attrition"] for r in got} <= {"Yes", "No"}, {r["Attrition"] for r in got}
    assert {r["JobLevel"] for r in got} <= {"1", "2", "3", "4", "5"}, {r["JobLevel"] for r in got}
    print("test_tables_client: ok")
finally:
    LIVE.stop()
