"""End-to-end tests of `privgen schema propose|check` and `privgen privatize --schema`.

Usage: test_tables.py PATH_TO_PRIVGEN. Exits nonzero on any failure."""
import csv
import io
import json
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from offline import Harness  # noqa: E402

H = Harness(sys.argv[1], "privgen-tables-")
run, case, path = H.run, H.case, H.path


def ok(*args):
    rc, out, err = run(*args)
    assert rc == 0, f"{args}: exit {rc}, stderr {err!r}"
    lines = out.strip().splitlines()
    assert len(lines) == 1, f"{args}: expected one JSON line, got {out!r}"
    return json.loads(lines[0]), err


def usage_error(*args, out_path=None, needle=None):
    err = H.usage_error(*args, out_path=out_path)
    if needle:
        assert needle in err, f"{args}: {err!r} lacks {needle!r}"
    return err


JOBS = ["fixed", "freelance", "partime", "others, misc"]


def make_table(n, seed=1):
    """A mixed table with missing values, written as CSV; returns the rows."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        rows.append({
            "age": "" if i % 17 == 0 else str(rng.randint(18, 75)),
            "job": rng.choices(JOBS, weights=[0.5, 0.25, 0.15, 0.1])[0],
            "income": "NA" if i % 11 == 0 else f"{rng.uniform(6, 959):.2f}",
            "owner": rng.choice(["yes", "no"]),
            "status": "good" if rng.random() < 0.7 else "bad",
            "id": f"user{i}",
        })
    with open(path("data.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["age", "job", "income", "owner", "status", "id"])
        w.writeheader()
        w.writerows(rows)
    return rows


@case
def propose_guesses_and_warns():
    rows = make_table(400)
    j, err = ok("schema", "propose", "--in", path("data.csv"))
    assert "leak information" in err and "domain knowledge" in err, err
    assert "column 'id'" in err and "left out" in err, err
    cols = {c["name"]: c for c in j["columns"]}
    assert list(cols) == ["age", "job", "income", "owner", "status"], list(cols)
    ages = [int(r["age"]) for r in rows if r["age"]]
    assert cols["age"]["type"] == "integer" and cols["age"]["nullable"] is True
    # Widened outward to multiples of 10 (the power of ten below the largest).
    assert cols["age"]["min"] == 10 * (min(ages) // 10), cols["age"]
    assert cols["age"]["max"] == 10 * math.ceil(max(ages) / 10), cols["age"]
    assert cols["income"]["type"] == "continuous" and cols["income"]["nullable"] is True
    assert cols["income"]["min"] == 0 and cols["income"]["max"] == 1000, cols["income"]
    assert cols["job"] == {"name": "job", "type": "categorical", "categories": sorted(JOBS),
                           "nullable": False}, cols["job"]
    # yes/no keeps its spellings: two categories, not a boolean (true/false)
    assert cols["owner"] == {"name": "owner", "type": "categorical", "categories": ["no", "yes"],
                             "nullable": False}, cols["owner"]
    # "status" is binary and named like an outcome: the proposed label
    assert j["label"] == "status" and "'status' looks like an outcome" in err, (j, err)
    # --out writes an indented, valid schema; check prints its encoding.
    s, _ = ok("schema", "propose", "--in", path("data.csv"), "--out", path("schema.json"),
              "--max-categories", 10)
    assert s["columns"] == 5 and s["rows"] == 400 and s["skipped"] == ["id"], s
    assert "leak" in s["warning"] and s["label"] == "status", s
    assert open(path("schema.json")).read().startswith("{\n  \"columns\"")
    m, _ = ok("schema", "check", "--schema", path("schema.json"), "--json")
    # age 2 units, job 4, income 2, owner 2; status is the label (no units).
    assert m["width"] == 10 and m["classes"] == 2, m
    assert abs(m["row_bounds"]["l2_norm"] - math.sqrt(4)) < 1e-12, m["row_bounds"]
    # without --json: a readable summary, a line per column
    rc, out, _ = run("schema", "check", "--schema", path("schema.json"))
    lines = out.splitlines()
    assert rc == 0 and lines[0].startswith(path("schema.json") + ": 5 columns, encoded in 10 "
                                           "units") and "label 'status' (2 classes)" in lines[0], out
    assert lines[1].split() == ["age", "2", "units", "integer", "10..80,", "nullable"], lines[1]
    assert lines[2].split()[:5] == ["job", "4", "units", "categorical", "(4):"], lines[2]
    assert lines[5].split() == ["status", "label", "categorical", "(2):", "bad,", "good"], lines[5]
    assert lines[6].startswith("encoded row: l2 norm at most 2,"), lines[6]
    # Two categories at most: job no longer fits and is left out.
    _, err = ok("schema", "propose", "--in", path("data.csv"), "--max-categories", 3)
    assert "column 'job'" in err


@case
def propose_keeps_the_tables_words():
    """Yes/No spellings, integer codes and an outcome column."""
    rng = random.Random(7)
    with open(path("hr.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Age", "OverTime", "Remote", "JobLevel", "Trainings", "Visits",
                    "churn_flag", "Attrition"])
        for i in range(300):
            w.writerow([rng.randint(18, 60), rng.choice(["Yes", "No"]),
                        rng.choice(["true", "false"]), rng.randint(1, 5), rng.randint(0, 9),
                        rng.randint(0, 10), rng.choice(["0", "1"]), rng.choice(["Yes", "No"])])
    j, err = ok("schema", "propose", "--in", path("hr.csv"))
    cols = {c["name"]: c for c in j["columns"]}
    assert cols["OverTime"]["type"] == "categorical" and \
        cols["OverTime"]["categories"] == ["No", "Yes"], cols["OverTime"]
    assert cols["Remote"]["type"] == "boolean", cols["Remote"]  # true/false round-trips
    # at most 10 small integer codes stay categories, in numeric order
    assert cols["JobLevel"]["categories"] == ["1", "2", "3", "4", "5"], cols["JobLevel"]
    assert cols["Trainings"]["categories"] == [str(k) for k in range(10)], cols["Trainings"]
    assert "column 'JobLevel' holds a few small integers" in err, err
    # 11 distinct counts are numbers
    assert cols["Visits"]["type"] == "integer", cols["Visits"]
    assert cols["churn_flag"]["categories"] == ["0", "1"], cols["churn_flag"]
    # an exact outcome name beats a name that only contains one
    assert j["label"] == "Attrition", j
    # a short file's handful of distinct numbers stays numeric (each code must
    # be seen 4 times on average)
    with open(path("short.csv"), "w") as f:
        f.write("age\n" + "".join(f"{a}\n" for a in (27, 30, 32, 33, 37, 38, 41, 49, 59)))
    j, _ = ok("schema", "propose", "--in", path("short.csv"))
    assert j["columns"][0]["type"] == "integer", j
    # no outcome-like column: no label, and a note says how to set one
    with open(path("plain.csv"), "w") as f:
        f.write("x,y\n1.5,a\n2.5,b\n")
    j, err = ok("schema", "propose", "--in", path("plain.csv"))
    assert "label" not in j and '"label": "COLUMN"' in err, (j, err)


@case
def schema_errors():
    usage_error("schema", "propose", needle="--in")
    usage_error("schema", "frobnicate", needle="propose, check")
    with open(path("bad.json"), "w") as f:
        json.dump({"columns": [{"name": "a", "type": "integer", "min": 3, "max": 1}]}, f)
    usage_error("schema", "check", "--schema", path("bad.json"), needle="column 'a'")
    with open(path("ragged.csv"), "w") as f:
        f.write("a,b\n1,2\n3\n")
    usage_error("schema", "propose", "--in", path("ragged.csv"), needle="line 3")
    rc, out, _ = run("schema", "--help")
    assert rc == 0 and "propose" in out


def write_schema(name, label=True, **extra):
    s = {"columns": [
        {"name": "age", "type": "integer", "min": 10, "max": 80, "nullable": True},
        {"name": "job", "type": "categorical", "categories": JOBS},
        {"name": "income", "type": "continuous", "min": 0, "max": 1000, "nullable": True},
        {"name": "owner", "type": "boolean"},
        {"name": "status", "type": "categorical", "categories": ["good", "bad"]},
    ]}
    if label:
        s["label"] = "status"
    for c in s["columns"]:
        if c["name"] in extra:
            c["epsilon"] = extra[c["name"]]
    with open(path(name), "w") as f:
        json.dump(s, f)
    return path(name)


def read_csv(p):
    with open(p, newline="") as f:
        return list(csv.DictReader(f))


@case
def privatize_table_large_epsilon_keeps_values():
    rows = make_table(300, seed=2)
    for r in rows:
        del r["id"]
    with open(path("noid.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["status", "income", "owner", "job", "age"])
        w.writeheader()
        w.writerows(rows)
    schema = write_schema("s.json")
    d, _ = ok("privatize", "--schema", schema, "--in", path("noid.csv"), "--out",
              path("noisy.csv"), "--epsilon", 1e7)
    out = read_csv(path("noisy.csv"))
    assert len(out) == 300 and list(out[0]) == ["age", "job", "income", "owner", "status"]
    for a, b in zip(rows, out):
        assert a["job"] == b["job"] and a["status"] == b["status"], (a, b)
        assert (a["owner"] == "yes") == (b["owner"] == "true"), (a, b)
        assert a["age"] == b["age"], (a, b)  # integers (and missing) exact
        if a["income"] == "NA":
            assert b["income"] == "", (a, b)
        else:
            assert abs(float(a["income"]) - float(b["income"])) < 0.1, (a, b)
    assert d["model"] == "local" and d["mechanism"] == "per_column" and d["rows"] == 300
    assert d["neighbouring"] == "any_two_rows" and d["composition"] == "basic"
    assert abs(sum(c["epsilon"] for c in d["columns"]) - 1e7) < 1e-3 and d["epsilon"] == 1e7
    by = {c["name"]: c for c in d["columns"]}
    assert by["job"]["mechanism"] == "randomized_response" and by["job"]["k"] == 4
    assert by["status"]["k"] == 2 and by["owner"]["k"] == 2
    assert by["age"]["mechanism"] == "laplace" and by["age"]["sensitivity"] == 2
    assert by["age"]["missing"]["k"] == 2 and "missing" not in by["job"]
    # JSON records in, NDJSON out, Gaussian numeric noise, labels by name.
    recs = [{"age": int(r["age"]) if r["age"] else None, "job": r["job"],
             "income": None if r["income"] == "NA" else float(r["income"]),
             "owner": r["owner"] == "yes", "status": r["status"]} for r in rows]
    with open(path("recs.json"), "w") as f:
        json.dump(recs, f)
    d, _ = ok("privatize", "--schema", schema, "--in", path("recs.json"), "--out",
              path("noisy.ndjson"), "--epsilon", 1e7, "--mechanism", "gaussian", "--delta", 1e-5)
    back = [json.loads(line) for line in open(path("noisy.ndjson"))]
    assert [b["job"] for b in back] == [r["job"] for r in recs]
    assert [b["age"] for b in back] == [r["age"] for r in recs]
    assert abs(d["delta"] - 1e-5) < 1e-18
    assert {c["mechanism"] for c in d["columns"]} == {"gaussian", "randomized_response"}


@case
def privatize_table_frequencies_recoverable():
    """At a small epsilon the reported frequencies are off, and the declared
    keep probability inverts them back (6 standard deviations: the
    randomization is secure, new every run; 4 categories at 2e-9 each, where
    5 sd was 4 x 5.7e-7)."""
    n = 6000
    rng = random.Random(5)
    truth = [0.6, 0.25, 0.1, 0.05]
    with open(path("cat.csv"), "w") as f:
        f.write("job,owner\n")
        for i in range(n):
            f.write(f"\"{rng.choices(JOBS, weights=truth)[0]}\",{'true' if i % 4 else 'false'}\n")
    with open(path("cat.json"), "w") as f:
        json.dump({"columns": [{"name": "job", "type": "categorical", "categories": JOBS,
                                "epsilon": 0.7},
                               {"name": "owner", "type": "boolean", "epsilon": 0.3}]}, f)
    d, _ = ok("privatize", "--schema", path("cat.json"), "--in", path("cat.csv"), "--out",
              path("cat_noisy.csv"))
    assert abs(d["epsilon"] - 1.0) < 1e-12
    job = d["columns"][0]
    p = job["keep_probability"]
    assert abs(p - math.exp(0.7) / (math.exp(0.7) + 3)) < 1e-12
    q = (1 - p) / 3
    out = read_csv(path("cat_noisy.csv"))
    clean = read_csv(path("cat.csv"))
    for k, name in enumerate(JOBS):
        t = sum(r["job"] == name for r in clean) / n
        f = sum(r["job"] == name for r in out) / n
        est = (f - q) / (p - q)
        fe = q + (p - q) * t
        sd = math.sqrt(fe * (1 - fe) / n) / (p - q)
        assert abs(est - t) < 6 * sd, (name, est, t, sd)
    assert abs(sum(r["job"] == JOBS[0] for r in out) / n - truth[0]) > 0.1


@case
def privatize_table_errors():
    make_table(50, seed=3)
    schema = write_schema("e.json")
    out = path("never.csv")
    # The data has an extra column (id): refused, with the column named.
    usage_error("privatize", "--schema", schema, "--in", path("data.csv"), "--out", out,
                "--epsilon", 1, out_path=out, needle="unknown column 'id'")
    with open(path("oob.csv"), "w") as f:
        f.write("age,job,income,owner,status\n30,fixed,5,true,good\n90,fixed,5,true,good\n")
    usage_error("privatize", "--schema", schema, "--in", path("oob.csv"), "--out", out,
                "--epsilon", 1, out_path=out, needle="row 2 (line 3), column 'age'")
    with open(path("nonint.csv"), "w") as f:
        f.write("age,job,income,owner,status\n30.5,fixed,5,true,good\n")
    usage_error("privatize", "--schema", schema, "--in", path("nonint.csv"), "--out", out,
                "--epsilon", 1, out_path=out, needle="not an integer")
    with open(path("ok.csv"), "w") as f:
        f.write("age,job,income,owner,status\n30,fixed,5,true,good\n")
    usage_error("privatize", "--schema", schema, "--in", path("ok.csv"), "--out", out,
                out_path=out, needle="has no epsilon")
    mixed = write_schema("m.json", job=0.5)
    usage_error("privatize", "--schema", mixed, "--in", path("ok.csv"), "--out", out,
                "--epsilon", 1, out_path=out, needle="not both")
    usage_error("privatize", "--schema", schema, "--in", path("ok.csv"), "--out", out,
                "--epsilon", 1, "--mechanism", "gaussian", out_path=out, needle="delta")
    usage_error("privatize", "--schema", schema, "--in", path("ok.csv"), "--out", out,
                "--epsilon", 1, "--delta", 1e-5, out_path=out, needle="delta")
    usage_error("privatize", "--schema", schema, "--in", path("ok.csv"), "--out",
                path("x.npy"), "--epsilon", 1, needle=".csv, .json")
    usage_error("privatize", "--schema", schema, "--in", path("ok.csv"), "--out", out,
                "--epsilon", 1, "--clip", "l1:1", out_path=out, needle="unknown option --clip")
    # --out - writes CSV to stdout and the declaration to stderr.
    rc, so, se = run("privatize", "--schema", schema, "--in", path("ok.csv"), "--out", "-",
                     "--epsilon", 2)
    assert rc == 0 and so.startswith("age,job,income,owner,status\n"), (rc, so, se)
    assert json.loads(se.strip().splitlines()[-1])["rows"] == 1


@case
def privatize_table_split():
    """--split label on a labelled table: the label's share maximises the
    objective of table_ldp.c (rr gain of the label squared times the mean
    reliability of the features), checked here by brute force on a grid of
    20 000 points; the default and --split even give every column
    E / columns; the columns sum to E."""
    with open(path("sp.csv"), "w") as f:
        f.write("age,job,income,owner,status\n30,fixed,5,true,good\n")
    schema = write_schema("sp.json")
    eps = 5.0
    d, _ = ok("privatize", "--schema", schema, "--in", path("sp.csv"), "--out",
              path("sp_out.csv"), "--epsilon", eps)
    assert all(abs(c["epsilon"] - 1.0) < 1e-15 for c in d["columns"]), d["columns"]
    d, _ = ok("privatize", "--schema", schema, "--in", path("sp.csv"), "--out",
              path("sp_out.csv"), "--epsilon", eps, "--split", "label")
    by = {c["name"]: c["epsilon"] for c in d["columns"]}
    feats = [by[n] for n in ("age", "job", "income", "owner")]
    assert max(feats) == min(feats), by
    assert d["epsilon"] == eps and eps * (1 - 1e-12) <= sum(by.values()) <= eps, by

    def gain(k, e):
        return -math.expm1(-e) / (1 + (k - 1) * math.exp(-e))

    def objective(el):
        ef = (eps - el) / 4
        rel = [(1 / 12) / (1 / 12 + 2 / (ef / 2) ** 2),  # age: nullable integer
               gain(4, ef) ** 2,  # job: 4 categories
               (1 / 12) / (1 / 12 + 2 / (ef / 2) ** 2),  # income: nullable
               gain(2, ef) ** 2]  # owner: boolean
        return gain(2, el) ** 2 * sum(rel) / 4

    h = eps / 20000
    best = max((h * i for i in range(1, 20000)), key=objective)
    assert abs(by["status"] - best) <= 2 * h, (by["status"], best)
    assert by["status"] > eps / 5
    d, _ = ok("privatize", "--schema", schema, "--in", path("sp.csv"), "--out",
              path("sp_out.csv"), "--epsilon", eps, "--split", "even")
    assert all(abs(c["epsilon"] - 1.0) < 1e-15 for c in d["columns"]), d["columns"]
    out = path("never_sp.csv")
    usage_error("privatize", "--schema", write_schema("nolab.json", label=False), "--in",
                path("sp.csv"), "--out", out, "--epsilon", 1, "--split", "label",
                out_path=out, needle="label")
    per_col = write_schema("pc.json", age=1, job=1, income=1, owner=1, status=1)
    usage_error("privatize", "--schema", per_col, "--in", path("sp.csv"), "--out", out,
                "--split", "even", out_path=out, needle="per-column")
    usage_error("privatize", "--schema", schema, "--in", path("sp.csv"), "--out", out,
                "--epsilon", 1, "--split", "odd", out_path=out, needle="--split")


H.finish()
