"""End-to-end tests of `privgen privacy ...` and `privgen privatize`.

Usage: test_cli.py PATH_TO_PRIVGEN. Exits nonzero on the first failure."""
import json
import math
import os
import sys

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from offline import Harness  # noqa: E402

H = Harness(sys.argv[1], "privgen-cli-")
run, case, path = H.run, H.case, H.path


def ok(*args):
    rc, out, err = run(*args)
    assert rc == 0, f"{args}: exit {rc}, stderr {err!r}"
    lines = out.strip().splitlines()
    assert len(lines) == 1, f"{args}: expected one JSON line, got {out!r}"
    return json.loads(lines[0])


def usage_error(*args, out_path=None):
    err = H.usage_error(*args, out_path=out_path)
    assert len(err.strip()) > 12, f"{args}: stderr {err!r}"
    return err


@case
def privacy_epsilon_mnist():
    j = ok("privacy", "epsilon", "--noise-multiplier", 1.1, "--sampling-rate", 256 / 60000,
           "--steps", 14063, "--delta", 1e-5, "--conversion", "classic")
    assert abs(j["epsilon"] - 3.0084) < 1e-3 and round(j["epsilon"], 2) == 3.01, j
    assert j["accountant"] == "rdp_classic" and j["approximate"] is False, j
    ji = ok("privacy", "epsilon", "--noise-multiplier", 1.1, "--sampling-rate", 256 / 60000,
            "--steps", 14063, "--delta", 1e-5)
    assert ji["epsilon"] < j["epsilon"] and ji["accountant"] == "rdp_improved", ji


@case
def privacy_sigma_round_trip():
    j = ok("privacy", "sigma", "--epsilon", 2.0, "--delta", 1e-5, "--sampling-rate", 0.01,
           "--steps", 3000)
    s = j["noise_multiplier"]
    assert j["epsilon"] <= 2.0, j
    back = ok("privacy", "epsilon", "--noise-multiplier", repr(s), "--sampling-rate", 0.01,
              "--steps", 3000, "--delta", 1e-5)
    assert back["epsilon"] <= 2.0 and back["epsilon"] > 1.999, back
    less = ok("privacy", "epsilon", "--noise-multiplier", repr(s * 0.999), "--sampling-rate", 0.01,
              "--steps", 3000, "--delta", 1e-5)
    assert less["epsilon"] > 2.0, less


@case
def privacy_calibrate():
    j = ok("privacy", "calibrate", "--mechanism", "laplace", "--epsilon", 0.5, "--sensitivity", 2)
    assert j["noise_scale"] == 4.0 and j["delta"] is None, j
    a = ok("privacy", "calibrate", "--mechanism", "gaussian", "--epsilon", 1, "--delta", 1e-5,
           "--sensitivity", 1)["noise_scale"]
    c = ok("privacy", "calibrate", "--mechanism", "gaussian", "--epsilon", 1, "--delta", 1e-5,
           "--sensitivity", 1, "--method", "classic")["noise_scale"]
    p = ok("privacy", "calibrate", "--mechanism", "gaussian", "--epsilon", 1, "--delta", 1e-5,
           "--sensitivity", 1, "--method", "paper")["noise_scale"]
    assert abs(c - math.sqrt(2 * math.log(1.25 / 1e-5))) < 1e-12, c
    assert a < c and a < p, (a, c, p)
    # exact analytic-Gaussian condition, checked with scipy
    d = stats.norm.cdf(1 / (2 * a) - a) - math.e * stats.norm.cdf(-1 / (2 * a) - a)
    assert d <= 1e-5 * (1 + 1e-9) and d > 1e-5 * (1 - 1e-6), d
    usage_error("privacy", "calibrate", "--mechanism", "gaussian", "--epsilon", 2, "--delta", 1e-5,
                "--sensitivity", 1, "--method", "classic")
    usage_error("privacy", "calibrate", "--mechanism", "laplace", "--epsilon", 1, "--delta", 1e-5,
                "--sensitivity", 1)
    usage_error("privacy", "calibrate", "--mechanism", "gaussian", "--epsilon", 1,
                "--sensitivity", 1)


@case
def privacy_shuffle_and_swd():
    j = ok("privacy", "shuffle", "--epsilon0", 4, "--n", 100000, "--delta", 1e-6, "--bound",
           "closed")
    assert abs(j["epsilon"] - 0.5378040242374512) < 1e-12 and j["bound"] == "fmt21_closed_form"
    j = ok("privacy", "shuffle", "--epsilon0", 4, "--n", 100000, "--delta", 1e-6)
    assert 0.167 < j["epsilon"] < 0.1728 and j["bound"] == "fmt21_numerical", j
    usage_error("privacy", "shuffle", "--epsilon0", 8, "--n", 1000, "--delta", 1e-6, "--bound",
                "closed")
    j = ok("privacy", "swd-sensitivity", "--dim", 784, "--projections", 200, "--delta", 1e-3,
           "--bound", "clt")
    assert j["approximate"] is True, j
    j2 = ok("privacy", "swd-sensitivity", "--dim", 784, "--projections", 200, "--delta", 1e-3)
    assert j2["approximate"] is False and j2["bound"] == "chernoff" and j2["w"] > j["w"], j2
    j3 = ok("privacy", "swd-sensitivity", "--dim", 784, "--projections", 2000, "--bound",
            "orthogonal")
    assert j3["w"] == 3 and j3["approximate"] is False, j3


@case
def usage_errors():
    for args in [(), ("nope",), ("privacy",), ("privacy", "nope"),
                 ("privacy", "epsilon", "--noise-multiplier", 1, "--sampling-rate", 0.01,
                  "--steps", 10),
                 ("privacy", "epsilon", "--noise-multiplier", 1, "--sampling-rate", 0,
                  "--steps", 10, "--delta", 1e-5),
                 ("privacy", "epsilon", "--noise-multiplier", 1, "--sampling-rate", 0.1,
                  "--steps", 10, "--delta", 1),
                 ("privacy", "epsilon", "--noise-multiplier", "abc", "--sampling-rate", 0.1,
                  "--steps", 10, "--delta", 1e-5),
                 ("privacy", "epsilon", "--noise-multiplier", 1, "--sampling-rate", 0.1,
                  "--steps", -3, "--delta", 1e-5),
                 ("privacy", "epsilon", "--bogus", 1),
                 ("privacy", "epsilon", "--delta"),
                 ("privacy", "sigma", "--epsilon", 0, "--delta", 1e-5, "--sampling-rate", 0.1,
                  "--steps", 10)]:
        usage_error(*args)


def write_npy(name, arr):
    p = path(name)
    np.save(p, arr)
    return p


def project_l1(v, R):
    a = np.abs(v)
    if a.sum() <= R:
        return v
    u = np.sort(a)[::-1]
    cs = np.cumsum(u)
    j = np.arange(1, len(u) + 1)
    rho = np.nonzero(u - (cs - R) / j > 0)[0][-1]
    theta = (cs[rho] - R) / (rho + 1)
    return np.sign(v) * np.maximum(a - theta, 0)


RNG = np.random.default_rng(5)
X = (RNG.normal(size=(4000, 5)) * 1.5).astype(np.float32)


@case
def privatize_gaussian():
    src = write_npy("g_in.npy", X)
    out = path("g_out.npy")
    j = ok("privatize", "--mechanism", "gaussian", "--epsilon", 2, "--delta", 1e-5, "--clip",
           "l2:1", "--in", src, "--out", out)
    assert j["sensitivity"] == 2.0 and j["clip"] == {"norm": "l2", "radius": 1.0}, j
    assert j["rows"] == 4000 and j["cols"] == 5 and j["delta"] == 1e-5, j
    ref = ok("privacy", "calibrate", "--mechanism", "gaussian", "--epsilon", 2, "--delta", 1e-5,
             "--sensitivity", 2)["noise_scale"]
    assert j["noise_scale"] == ref, (j, ref)
    y = np.load(out)
    assert y.shape == X.shape and y.dtype == np.float32
    x = X.astype(np.float64)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    clipped = x * np.minimum(1.0, 1.0 / n)
    resid = (y - clipped).ravel() / ref
    # KS on secure draws: a 1e-3 bar failed CI once (p 6.7e-4); 12 runs of
    # 1e6 residuals gave p 0.10-0.90, so the sampler fits and 1e-7 is the
    # false-alarm rate. A 10 % wrong scale gives p about 1e-11 here.
    assert stats.kstest(resid, "norm").pvalue > 1e-7, stats.kstest(resid, "norm")
    assert abs(resid.std() - 1) < 0.03, resid.std()
    # a second run with the same input gives different noise
    out2 = path("g_out2.npy")
    ok("privatize", "--mechanism", "gaussian", "--epsilon", 2, "--delta", 1e-5, "--clip", "l2:1",
       "--in", src, "--out", out2)
    assert not np.array_equal(np.load(out2), y)


@case
def privatize_clipping_norms():
    # With a huge epsilon the noise is negligible and the output shows the clip.
    src = write_npy("c_in.npy", X)
    out = path("c_out.npy")
    j = ok("privatize", "--mechanism", "gaussian", "--epsilon", 1e7, "--delta", 0.5, "--clip",
           "l2:1.5", "--in", src, "--out", out)
    y = np.load(out).astype(np.float64)
    tol = 12 * j["noise_scale"] * math.sqrt(5)
    assert np.all(np.linalg.norm(y, axis=1) <= 1.5 + tol)
    big = np.linalg.norm(X, axis=1) > 1.5
    assert np.allclose(np.linalg.norm(y[big], axis=1), 1.5, atol=tol)
    assert np.allclose(y[~big], X[~big], atol=tol)
    out = path("c1_out.npy")
    j = ok("privatize", "--mechanism", "laplace", "--epsilon", 1e7, "--sensitivity", 4, "--in",
           src, "--out", out)
    assert j["clip"] == {"norm": "l1", "radius": 2.0} and j["delta"] is None, j
    y = np.load(out).astype(np.float64)
    tol = 40 * j["noise_scale"] * 5
    assert np.all(np.abs(y).sum(axis=1) <= 2.0 + tol)
    want = np.array([project_l1(r, 2.0) for r in X.astype(np.float64)])
    assert np.allclose(y, want, atol=tol + 1e-5)


@case
def privatize_laplace():
    src = write_npy("l_in.npy", X)
    out = path("l_out.npy")
    j = ok("privatize", "--mechanism", "laplace", "--epsilon", 1.0, "--clip", "l1:1", "--in", src,
           "--out", out)
    b = j["noise_scale"]
    assert j["sensitivity"] == 2.0 and 2.0 <= b <= 2.0 * (1 + 1e-6), j
    y = np.load(out).astype(np.float64)
    want = np.array([project_l1(r, 1.0) for r in X.astype(np.float64)])
    resid = (y - want).ravel()
    ks = stats.kstest(resid, "laplace", args=(0, b))
    # False alarm 1e-7 (secure draws; see privatize_gaussian). The 1.1 b
    # misfit: 200 simulated sets of 20000 gave p <= 1.4e-4, median 8e-8.
    assert ks.pvalue > 1e-7, ks
    assert stats.kstest(resid, "laplace", args=(0, 1.1 * b)).pvalue < 1e-3


@case
def privatize_bad_input():
    good = write_npy("ok_in.npy", X)
    bad = X.copy()
    bad[17, 3] = np.nan
    nan_in = write_npy("nan_in.npy", bad)
    inf_in = write_npy("inf_in.npy", np.where(bad != bad, np.inf, bad).astype(np.float32))
    three_d = write_npy("threed.npy", X[:4000].reshape(1000, 4, 5))
    junk = path("junk.npy")
    with open(junk, "wb") as f:
        f.write(b"\x93NUMPY garbage")
    out = path("never.npy")
    g = ("privatize", "--mechanism", "gaussian", "--delta", 1e-5, "--clip", "l2:1", "--out", out)
    err = usage_error(*g, "--epsilon", 1, "--in", nan_in, out_path=out)
    assert "row 18 column 4" in err, err
    usage_error(*g, "--epsilon", 1, "--in", inf_in, out_path=out)
    usage_error(*g, "--epsilon", 1, "--in", three_d, out_path=out)
    usage_error(*g, "--epsilon", 1, "--in", junk, out_path=out)
    usage_error(*g, "--epsilon", 1, "--in", path("missing.npy"), out_path=out)
    usage_error(*g, "--epsilon", 1, "--in", good, "--cols", 4, out_path=out)
    usage_error(*g, "--epsilon", 0, "--in", good, out_path=out)
    usage_error(*g, "--epsilon", -1, "--in", good, out_path=out)
    usage_error(*g, "--epsilon", "nan", "--in", good, out_path=out)
    for d in (0, 1, 1.5, -1e-5):
        usage_error("privatize", "--mechanism", "gaussian", "--epsilon", 1, "--delta", d,
                    "--clip", "l2:1", "--in", good, "--out", out, out_path=out)
    base = ("--in", good, "--out", out, "--epsilon", 1)
    usage_error("privatize", "--mechanism", "gaussian", "--clip", "l2:1", *base, out_path=out)
    usage_error("privatize", "--mechanism", "laplace", "--delta", 1e-5, "--clip", "l1:1", *base,
                out_path=out)
    err = usage_error("privatize", "--mechanism", "laplace", "--clip", "l1:1", "--sensitivity",
                      1.5, *base, out_path=out)
    assert "2R" in err, err
    usage_error("privatize", "--mechanism", "laplace", "--clip", "l2:1", *base, out_path=out)
    usage_error("privatize", "--mechanism", "laplace", "--clip", "l1:0", *base, out_path=out)
    usage_error("privatize", "--mechanism", "laplace", *base, out_path=out)
    usage_error("privatize", "--mechanism", "laplace", "--clip", "l1:1", "--in", good, "--out",
                path("x.txt"), "--epsilon", 1, out_path=path("x.txt"))
    # an unwritable destination is a failure (exit 1), not a usage error
    rc, so, se = run("privatize", "--mechanism", "laplace", "--clip", "l1:1", "--epsilon", 1,
                     "--in", good, "--out", path("no/such/dir/out.npy"))
    assert rc == 1 and so == "" and se.startswith("privgen: cannot write"), (rc, so, se)


def csv_supported():
    csv = path("probe.csv")
    with open(csv, "w") as f:
        f.write("1,2\n3,4\n")
    rc, out, err = run("privatize", "--mechanism", "laplace", "--clip", "l1:1", "--in", csv,
                       "--out", path("probe.npy"), "--epsilon", 1)
    return rc == 0 and os.path.exists(path("probe.npy"))


@case
def privatize_csv():
    # a 1-D array is n rows of one value
    one_d = write_npy("oned.npy", X[:, 0].copy())
    j = ok("privatize", "--mechanism", "laplace", "--epsilon", 1, "--clip", "l1:1", "--in", one_d,
           "--out", path("oned_out.npy"))
    assert j["rows"] == 4000 and j["cols"] == 1 and np.load(path("oned_out.npy")).shape == (4000, 1)
    assert csv_supported(), "CSV input must be supported"
    src = path("rows.csv")
    with open(src, "w") as f:
        f.write("a,b,c\r\n")
        for r in X[:500, :3]:
            f.write(",".join("%.9g" % v for v in r) + "\r\n")
    out = path("csv_out.npy")
    j = ok("privatize", "--mechanism", "gaussian", "--epsilon", 1e7, "--delta", 0.5, "--clip",
           "l2:1", "--in", src, "--out", out)
    assert j["rows"] == 500 and j["cols"] == 3, j
    y = np.load(out).astype(np.float64)
    x = X[:500, :3].astype(np.float64)
    want = x * np.minimum(1.0, 1.0 / np.linalg.norm(x, axis=1, keepdims=True))
    # the Gaussian std shrinks only like 1/sqrt(epsilon): allow 8 of them
    assert np.allclose(y, want, atol=8 * j["noise_scale"] + 1e-6), np.abs(y - want).max()
    never = path("csv_never.npy")
    bad = path("bad.csv")
    for text in ("1,2,3\n4,5\n", "1,2\nnan,3\n", "1,2\ninf,3\n", "x,label\n1,0\n2,1\n"):
        with open(bad, "w") as f:
            f.write(text)
        usage_error("privatize", "--mechanism", "gaussian", "--epsilon", 1, "--delta", 1e-5,
                    "--clip", "l2:1", "--in", bad, "--out", never, out_path=never)
    with open(bad, "w") as f:
        f.write("1,2,3\n4,5,6\n")
    usage_error("privatize", "--mechanism", "gaussian", "--epsilon", 1, "--delta", 1e-5,
                "--clip", "l2:1", "--in", bad, "--out", never, "--cols", 2, out_path=never)


# Every command and subcommand explains itself: --help exits 0, prints on
# stdout (nothing on stderr) a usage line naming the command and every option
# it takes. No server is needed: --help never connects.
HELP = {
    ("privacy",): ["epsilon", "sigma", "calibrate", "shuffle", "swd-sensitivity"],
    ("privacy", "epsilon"): ["--noise-multiplier", "--sampling-rate", "--steps", "--delta",
                             "--conversion"],
    ("privacy", "sigma"): ["--epsilon", "--sampling-rate", "--steps", "--delta", "--conversion"],
    ("privacy", "calibrate"): ["--mechanism", "--epsilon", "--sensitivity", "--delta", "--method"],
    ("privacy", "shuffle"): ["--epsilon0", "--n", "--delta", "--bound"],
    ("privacy", "swd-sensitivity"): ["--dim", "--projections", "--delta", "--bound"],
    ("privatize",): ["--mechanism", "--epsilon", "--delta", "--clip", "--sensitivity", "--in",
                     "--out", "--cols"],
    ("toy",): ["halfcircle", "--n", "--seed", "-o"],
    ("login",): ["--url", "--token", "--token-file"],
    ("datasets",): ["create", "append", "list", "show", "delete", "budget", "--name", "--shape",
                    "--range", "--model", "--num-classes", "--declaration", "--mechanism",
                    "--epsilon", "--delta", "--sensitivity", "--noise-scale", "--budget-epsilon",
                    "--budget-delta", "--spec", "--format", "--rows", "--limit", "--cursor",
                    "--json", "--url", "--token"],
    ("jobs",): ["create", "dry-run", "list", "show", "cancel", "delete", "watch", "--spec",
                "--dataset",
                "--method", "--steps", "--batch", "--seed", "--checkpoint-every",
                "--public-dataset", "--set", "--status", "--limit", "--cursor", "--json"],
    ("samples",): ["-n", "--format", "--seed", "--label", "--checkpoint", "--frame", "-o",
                   "--json"],
    ("checkpoints",): ["--download", "-o", "--json"],
    ("methods",): ["NAME", "--json", "--url", "--token"],
}
# Each subcommand of a client group prints its own help: its usage line,
# its options (and the connection ones), an example invoking it, and none of
# its siblings' options.
SUBHELP = {
    ("datasets", "create"): ["--name", "--shape", "--range", "--model", "--num-classes",
                             "--declaration", "--mechanism", "--epsilon", "--delta",
                             "--sensitivity", "--noise-scale", "--budget-epsilon",
                             "--budget-delta", "--spec", "--schema"],
    ("datasets", "append"): ["ID FILE", "--format", "--rows", "--declaration"],
    ("datasets", "list"): ["--limit", "--cursor"],
    ("datasets", "show"): ["ID"],
    ("datasets", "budget"): ["ID"],
    ("datasets", "delete"): ["ID"],
    ("jobs", "create"): ["--spec", "--dataset", "--method", "--steps", "--batch", "--seed",
                         "--checkpoint-every", "--public-dataset", "--set"],
    ("jobs", "dry-run"): ["--spec", "--dataset", "--method", "--steps", "--batch", "--seed",
                          "--checkpoint-every", "--public-dataset", "--set"],
    ("jobs", "list"): ["--status", "--dataset", "--limit", "--cursor"],
    ("jobs", "show"): ["ID"],
    ("jobs", "cancel"): ["ID"],
    ("jobs", "delete"): ["ID", "running"],
    ("jobs", "watch"): ["ID"],
}
SIBLING_ONLY = {"datasets": ["--budget-epsilon", "--cursor", "--rows"],
                "jobs": ["--status", "--cursor", "--set"]}
for cmd, words in SUBHELP.items():
    HELP[cmd] = words + ["--json", "--url", "--token"]


@case
def subcommand_help_is_its_own():
    for grp in ("datasets", "jobs"):
        subs = [w for w in HELP[(grp,)] if not w.startswith("-")]
        assert sorted(subs) == sorted(c[1] for c in SUBHELP if c[0] == grp), (grp, subs)
    for (grp, sub), words in SUBHELP.items():
        rc, out, err = run(grp, sub, "--help")
        assert rc == 0 and err == "", (grp, sub, rc, err)
        assert out.startswith(f"usage: privgen {grp} {sub}"), (grp, sub, out[:80])
        ex = out.split("Example:\n", 1)
        assert len(ex) == 2 and f"privgen {grp} {sub}" in ex[1], (grp, sub, out)
        foreign = [w for w in SIBLING_ONLY[grp] if w in out and w not in words]
        assert not foreign, (grp, sub, foreign)
        # options before the subcommand, and an id, change nothing
        rc2, out2, _ = run(grp, "--url", "http://127.0.0.1:9", sub, "x1", "-h")
        assert rc2 == 0 and out2 == out, (grp, sub)
    # an unknown subcommand with --help falls back to the group's help
    rc, out, err = run("jobs", "bogus", "--help")
    assert rc == 0 and out.startswith("usage: privgen jobs SUBCOMMAND"), out[:80]


@case
def help_on_every_command():
    for cmd, words in HELP.items():
        for flag in ("--help", "-h"):
            rc, out, err = run(*cmd, flag)
            assert rc == 0 and err == "", (cmd, flag, rc, err)
            assert out.startswith("usage: privgen " + " ".join(cmd[:1])), (cmd, out[:80])
            missing = [w for w in words if w not in out]
            assert not missing, (cmd, missing)
        # --help wins over anything else on the line, and writes nothing
        rc, out, err = run(*cmd, "--bogus", "1", "--help")
        assert rc == 0 and out.startswith("usage: privgen"), (cmd, rc, err)
    rc, out, err = run("--help")
    assert rc == 0 and err == "" and all(c[0] in out for c in HELP), out
    assert "--version" in out


@case
def version():
    cmake = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "CMakeLists.txt")
    want = None
    for line in open(cmake):
        if line.startswith("project(privgen VERSION "):
            want = line.split()[2]
    assert want, "no project version in CMakeLists.txt"
    rc, out, err = run("--version")
    assert rc == 0 and out == f"privgen {want}\n" and err == "", (rc, out, err)


H.finish()
