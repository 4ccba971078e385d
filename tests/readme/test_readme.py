"""Runs the README's tutorials (every ```sh tutorial block, in order, as one
bash script with -euo pipefail) against a live privgend, so the docs cannot rot.

The script runs in a temporary directory laid out like a checkout after
`make run`: ./var is the server's data dir (with admin.token) and ./build
links to the real build tree. PRIVGEN_URL points at the server (it listens on
a free port, not 8080); HOME and XDG_CONFIG_HOME are temporary so `privgen
login` does not touch the user's config.

The tutorials print their own quality figures (arc_score: the share of 2000
samples within 0.1 of the half circle and their mean radius); this test holds
them to what the README promises. The DP noise comes from the secure
generator, so every run differs; the floors sit well below the worst run
observed and well above a broken model:
  tutorial 1 (entropic_gan, 20 000 rows, local eps 5; defaults since issue
    32: a [128, 128] generator whose parameter average the snapshots serve):
    0.70 to 0.96 within 0.1 over 27 runs (median 0.84; 22 through
    bench/tutorial1_runs.sh, 5 of this test), mean radius 0.97 to 1.00; held to >= 0.40 and a radius in [0.92, 1.08]. (The earlier
    [64, 64] last iterate: 0.53 to 0.82 over 23 runs, median 0.75, held to
    >= 0.40.)
  tutorial 2 (dp_sinkhorn, central eps 1, defaults: batch 32 of 20 000 rows,
    2000 steps): 0.46 to 0.67 over 10 runs (median 0.54; privgen-bench
    defaults --n 20000 --spec '{"privacy": {"delta": 1e-6}}', seeds 1-10),
    mean radius 0.94 to 0.99; held to >= 0.20 and a radius in [0.85, 1.15].
    (The earlier batch 17 x 4000 steps scored 0.40 to 0.80 over 19 runs.)
A broken model fails: with tutorial 1's clip at l1:1 the arc is squashed onto
the l1 diamond (measured 0.21 within 0.1, mean radius 0.80), and tutorial 2
stopped after 20 steps is a blob at the origin (0.00, radius 0.12).
Why the floors are that low: 8 more runs of tutorial 1 (bench/tutorial1_runs.sh
on a loaded machine, 2026-11-28) scored 0.93, 0.91, 0.82, 0.87, 0.88, 0.89,
0.76 and 0.70: mean 0.84, standard deviation 0.08, so the earlier floor of
0.65 was 2.4 standard deviations under the mean, a false alarm of about 1 %
per run with fresh noise every run. Tutorial 2's 10 runs span 0.21
(standard deviation about 0.065), and its earlier floor of 0.25 was 4.5 of
them under the median (3e-6). 0.40 and 0.20 are 5.6 and 5.2 standard
deviations under (about 1e-8 and 1e-7) and still about twice the broken
models' scores.

Usage: test_readme.py README.md BUILD_DIR"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import json
import urllib.request


def check_tutorial3(tut, stderr):
    """Tutorial 3 (attrition, 1470 rows x 31 columns, aim with its defaults,
    central eps 1): the report speaks the schema and its figures are what the
    README states."""
    m = re.search(r"utility: accuracy of Attrition trained on synthetic ([0-9.]+), on real "
                  r"([0-9.]+); always guessing the most frequent class ([0-9.]+)", stderr)
    assert m, "tutorial 3's report printed no utility of Attrition"
    acc_syn, acc_real, majority = map(float, m.groups())
    m = re.search(r"categories: mean TV ([0-9.]+) over ([0-9]+) categorical columns", stderr)
    assert m, "tutorial 3's report printed no mean TV"
    mean_tv, ncat = float(m.group(1)), int(m.group(2))
    print(f"tutorial 3 (attrition, aim, central eps 1): accuracy trained on synthetic "
          f"{acc_syn:.3f}, on real {acc_real:.3f}, majority {majority:.3f}; mean TV {mean_tv:.3f} "
          f"over {ncat} categorical columns")
    rep = json.load(open(os.path.join(tut, "report-attrition", "report.json")))["result"]
    cols = rep["marginals"]["columns"]
    names = [c.get("name") for c in cols]
    assert len(cols) == 31 and names[0] == "Age" and "Attrition" in names, names
    for k in (1, 2, 3):
        with open(os.path.join(tut, "report-attrition", f"histograms-{k}.png"), "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n", f"histograms-{k}.png is not a PNG"
    # The reference figures are fixed by the table and the seed (half of the
    # 1470 rows, seed 1): 0.842 of them are "no", and logistic regression
    # trained on the other half scores 0.857 (with the proposed schema: Yes/No and small integer codes as categories).
    assert abs(majority - 0.842) < 0.001 and abs(acc_real - 0.857) < 0.001, (majority, acc_real)
    # aim, central eps 1, defaults, 35 runs (README): accuracy trained on
    # synthetic 0.752 to 0.844 (median 0.82), mean TV 0.039 to 0.076. Held
    # to >= 0.65 and <= 0.12: a model that loses the columns fails the TV
    # bound (dp_sinkhorn on this table, categories nearly uniform: mean TV
    # 0.235 to 0.256 over 9 runs; its accuracy, 0.22 to 0.81, mostly fails
    # the accuracy bound too).
    assert mean_tv <= 0.12 and ncat >= 15, f"tutorial 3's mean TV {mean_tv} over {ncat} columns"
    assert acc_syn >= 0.65, f"tutorial 3's accuracy trained on synthetic rows is {acc_syn}"
    # The report's synthetic rows are the CSV's: the label's frequencies agree.
    import csv
    with open(os.path.join(tut, "attrition-synthetic.csv")) as f:
        vals = [r["Attrition"] for r in csv.DictReader(f)]
    att = cols[names.index("Attrition")]
    got = sorted(vals.count(v) / len(vals) for v in set(vals))
    want = sorted(x for x in att["freq_synthetic"] if x > 0)
    assert len(vals) == 1470 and all(abs(a - b) < 1e-12 for a, b in zip(got, want)) \
        and len(got) == len(want), f"the CSV's Attrition shares {got} are not the report's {want}"


readme, build = sys.argv[1], os.path.abspath(sys.argv[2])
blocks = re.findall(r"^```sh tutorial\n(.*?)^```", open(readme).read(), re.S | re.M)
assert len(blocks) >= 9, f"expected the tutorial blocks in {readme}, found {len(blocks)}"
script = "set -euo pipefail\n" + "\n".join(blocks)

tmp = tempfile.mkdtemp(prefix="privgen-readme-")
os.symlink(build, os.path.join(tmp, "build"))
srv = subprocess.Popen([os.path.join(build, "bin", "privgend"), "--listen", "127.0.0.1:0",
                        "--data-dir", os.path.join(tmp, "var"), "--port-file", os.path.join(tmp, "port")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
rc = 1
try:
    for _ in range(400):
        if os.path.exists(os.path.join(tmp, "port")) and os.path.exists(os.path.join(tmp, "var", "admin.token")):
            break
        time.sleep(0.025)
    port = open(os.path.join(tmp, "port")).read().strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRIVGEN_")}
    env.update(PRIVGEN_URL=f"http://127.0.0.1:{port}", HOME=tmp, XDG_CONFIG_HOME=os.path.join(tmp, "cfg"))
    t0 = time.monotonic()
    p = subprocess.run(["bash", "-c", script], cwd=tmp, env=env, capture_output=True, text=True, timeout=420)
    wall = time.monotonic() - t0
    # Progress lines of `jobs watch` would crowd out everything else.
    shown = "".join(l for l in p.stdout.splitlines(True) if not l.startswith("running "))
    sys.stdout.write(shown[-6000:])
    sys.stderr.write(p.stderr[-3000:])
    assert p.returncode == 0, f"the tutorial failed with exit {p.returncode}"
    assert "refused, as expected" in p.stdout and "(HTTP 409)" in p.stderr, \
        "the over-budget job of tutorial 2 was not refused"
    scores = [(float(a), float(b)) for a, b in re.findall(
        r"^within 0\.1 of the arc: ([0-9.]+), mean radius: ([0-9.]+)$", p.stdout, re.M)]
    assert len(scores) == 2, f"expected two arc scores in the output, found {scores}"
    (near1, rad1), (near2, rad2) = scores
    print(f"tutorial 1 (entropic_gan, 20 000 rows, local eps 5): {near1:.2f} within 0.1, mean radius {rad1:.2f}")
    print(f"tutorial 2 (dp_sinkhorn, central eps 1, default batch and steps): {near2:.2f} within 0.1, mean radius {rad2:.2f}")
    # README: "about 84 % (70 to 96 % over 27 runs) ... at least 40 %", "radius about 1".
    assert near1 >= 0.40 and 0.92 <= rad1 <= 1.08, \
        f"tutorial 1's samples are not on the arc: {near1:.2f} within 0.1, radius {rad1:.2f}"
    # README: "about 55 % (46 to 67 % over 10 runs) ... at least 20 %", "about 0.97".
    assert near2 >= 0.20 and 0.85 <= rad2 <= 1.15, \
        f"tutorial 2's samples are not a half circle: {near2:.2f} within 0.1, radius {rad2:.2f}"
    # Both tutorial jobs learned: their views carry an empty warnings list.
    token = open(os.path.join(tmp, "var", "admin.token")).read().strip()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/jobs?limit=100",
                                 headers={"Authorization": f"Bearer {token}"})
    jobs = json.load(urllib.request.urlopen(req, timeout=10))["items"]
    done = [j for j in jobs if j["status"] == "succeeded"]
    assert len(done) == 3, f"expected the three tutorial jobs to succeed, got {[j['status'] for j in jobs]}"
    for j in done:
        warnings = j["warnings"]
        # Known false alarm, left to the trend rule's owner: tutorial 2's
        # dp_sinkhorn loss starts near 0.10 and settles at 0.30-0.37, drifting
        # up slowly through the last quarter (6 histories measured: slope t
        # -0.9 to 2.8, rise 3 to 19 % of the mean), so the rule (t > 3,
        # rise > 5 %) fired in 3 of 11 runs seen while the samples scored as
        # documented (asserted above). Any other warning, on any job, fails.
        if j["method"] == "dp_sinkhorn":
            warnings = [w for w in warnings if not w.startswith("The training loss rose")]
        # aim at eps 1 on 1470 rows measures a 2-level column with noise sd
        # about 106 counts, so now and then a column's rare level (e.g.
        # PerformanceRating's 15 %) comes out near 0 and the model-only
        # collapse rule rightly says the column "looks" collapsed: 2 of 70
        # tutorial-3 jobs, one column each, after the pile rule's window fix.
        # One such column is the method's noise; two or more, or any other
        # warning, fails.
        if j["method"] == "aim":
            looks = [w for w in warnings if " looks " in w]
            if len(looks) == 1:
                warnings = [w for w in warnings if w not in looks]
        assert warnings == [], f"{j['method']} job warned: {j['warnings']}"
    for png in ("halfcircle.png", "central.png"):
        with open(os.path.join(tmp, "tutorial", png), "rb") as f:
            head = f.read(8)
        assert head == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    check_tutorial3(os.path.join(tmp, "tutorial"), p.stderr)
    cfg = os.path.join(tmp, "cfg", "privgen", "config")
    assert os.stat(cfg).st_mode & 0o077 == 0, "login config readable by others"
    print(f"README tutorials passed in {wall:.1f} s wall time")
    rc = 0
except AssertionError as e:
    print("FAIL:", e)
finally:
    srv.send_signal(signal.SIGTERM)
    try:
        srv.wait(timeout=20)
    except subprocess.TimeoutExpired:
        srv.kill()
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(rc)
