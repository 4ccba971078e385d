#!/usr/bin/python3
"""The eval metrics against independent computations.

eval_driver (argv[1]) runs the C code on .npy files written here and prints
JSON; every figure is recomputed with SciPy, NumPy or scikit-learn from the
same float32 values (promoted to float64) and compared within a tolerance
stated next to each check. Exits nonzero on the first mismatch.
"""
import json
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from scipy.spatial.distance import cdist
from scipy.stats import ks_2samp, wasserstein_distance
from scipy.stats.contingency import association

DRIVER = str(Path(sys.argv[1]).resolve())
FAILS = []


def check(ok, what):
    if not ok:
        FAILS.append(what)
        print("FAIL:", what)


def close(a, b, tol, what, rel=False):
    scale = max(1.0, abs(b)) if rel else 1.0
    check(a is not None and abs(a - b) <= tol * scale, f"{what}: C {a} vs reference {b} (tol {tol})")


def run(tmp, *args):
    out = subprocess.run([DRIVER, *map(str, args)], capture_output=True, text=True, cwd=tmp)
    if out.returncode != 0:
        print(out.stderr)
        sys.exit(f"eval_driver {args[0]} failed")
    return json.loads(out.stdout)


def save(tmp, name, a):
    np.save(Path(tmp) / name, np.ascontiguousarray(a, dtype=np.float32))
    return name


def table_data(rng, n, shift):
    """6 numeric columns (normal, correlated, ties on a 0.5 grid, exponential,
    uniform, a product) and 2 categorical ones (k = 3 tied to column 0, k = 5
    independent, code 4 never drawn)."""
    x0 = rng.normal(shift, 1.0, n)
    x1 = 0.8 * x0 + 0.6 * rng.normal(0, 1, n)
    x2 = np.round(rng.normal(0, 1.5, n) * 2) / 2
    x3 = rng.exponential(1.0 + shift, n)
    x4 = rng.uniform(-1, 1, n)
    x5 = x1 * x4
    c0 = np.where(rng.uniform(size=n) < 0.7, np.clip(np.floor(x0 + 1.5), 0, 2), rng.integers(0, 3, n))
    c1 = rng.integers(0, 4, n)
    return np.stack([x0, x1, x2, x3, x4, x5, c0, c1], axis=1).astype(np.float32)


def check_report(tmp, rng):
    syn = table_data(rng, 700, 0.2)
    ref = table_data(rng, 901, 0.0)
    syn[:, 4] = 0.25  # a constant synthetic column: Pearson undefined on it
    save(tmp, "syn.npy", syn)
    save(tmp, "ref.npy", ref)
    rep = run(tmp, "report", "syn.npy", "ref.npy", "--columns", "n,n,n,n,n,n,c:3,c:5", "--sw", 50,
              "--sinkhorn-rows", 200)
    s, r = syn.astype(np.float64), ref.astype(np.float64)
    cols = rep["marginals"]["columns"]
    for j in range(6):
        c = cols[j]
        # KS: both sides evaluate i/n - j/m in float64 at the same merged values: exact up to 1e-12.
        close(c["ks"], ks_2samp(s[:, j], r[:, j]).statistic, 1e-12, f"KS column {j}")
        # W1: float64 sums of ~1600 terms in different orders: 1e-9 relative.
        close(c["w1"], wasserstein_distance(s[:, j], r[:, j]), 1e-9, f"W1 column {j}", rel=True)
        # Moments: two-pass float64 against numpy's pairwise sums: 1e-10 relative.
        close(c["mean_synthetic"], s[:, j].mean(), 1e-10, f"mean syn {j}", rel=True)
        close(c["mean_real"], r[:, j].mean(), 1e-10, f"mean ref {j}", rel=True)
        close(c["std_synthetic"], s[:, j].std(), 1e-10, f"std syn {j}", rel=True)
        close(c["std_real"], r[:, j].std(), 1e-10, f"std ref {j}", rel=True)
    for j, k in ((6, 3), (7, 5)):
        p = np.bincount(r[:, j].astype(int), minlength=k) / len(r)
        q = np.bincount(s[:, j].astype(int), minlength=k) / len(s)
        # TV: ratios of counts and a sum of k terms: 1e-14.
        close(cols[j]["tv"], 0.5 * np.abs(p - q).sum(), 1e-14, f"TV column {j}")
        check(np.allclose(cols[j]["freq_real"], p, atol=1e-15, rtol=0), f"frequencies {j}")
    # Pearson on the numeric columns against numpy.corrcoef (nan where a column
    # is constant): both in float64, different summation orders: 1e-10.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cr, cs = np.corrcoef(r[:, :6], rowvar=False), np.corrcoef(s[:, :6], rowvar=False)
    pw = rep["pairwise"]
    for name, c_mat, ref_mat in (("real", pw["real"], cr), ("synthetic", pw["synthetic"], cs)):
        for i in range(6):
            for j in range(6):
                v, want = c_mat[i][j], ref_mat[i, j]
                if np.isnan(want):
                    check(v is None, f"Pearson {name} ({i},{j}) should be null, is {v}")
                else:
                    close(v, want, 1e-10, f"Pearson {name} ({i},{j})")
        for i in range(6):
            check(c_mat[i][6] is None and c_mat[7][i] is None, f"mixed pair {name} {i} not null")
    for i in range(8):
        for j in range(8):
            a, b, dv = pw["real"][i][j], pw["synthetic"][i][j], pw["difference"][i][j]
            check((dv is None) == (a is None or b is None), f"difference ({i},{j}) null-ness")
            if dv is not None:
                close(dv, b - a, 1e-15, f"difference ({i},{j})")
    iu = [(i, j) for i in range(6) for j in range(i + 1, 6) if not (np.isnan(cr[i, j]) or np.isnan(cs[i, j]))]
    close(pw["pearson_mean_abs_diff"], np.mean([abs(cs[i, j] - cr[i, j]) for i, j in iu]), 1e-10,
          "Pearson mean abs difference")
    check(pw["pearson_pairs"] == len(iu) == 10, f"Pearson pair count {pw['pearson_pairs']}")

    # Cramér's V against scipy's association(method='cramer') (correction=False)
    # on the table of categories that occur: the same chi2 sum, 1e-12.
    def cramer(a, b):
        _, ia = np.unique(a, return_inverse=True)
        _, ib = np.unique(b, return_inverse=True)
        tab = np.zeros((ia.max() + 1, ib.max() + 1), dtype=np.int64)
        np.add.at(tab, (ia, ib), 1)
        return association(tab, method="cramer")

    for name, x, mat in (("real", r, pw["real"]), ("synthetic", s, pw["synthetic"])):
        close(mat[6][7], cramer(x[:, 6], x[:, 7]), 1e-12, f"Cramér's V {name}")
        close(mat[7][6], mat[6][7], 0, f"Cramér's V symmetric {name}")
        close(mat[6][6], 1.0, 1e-12, f"Cramér's V diagonal {name}")
    close(pw["cramer_mean_abs_diff"], abs(cramer(s[:, 6], s[:, 7]) - cramer(r[:, 6], r[:, 7])), 1e-12,
          "Cramér mean abs difference")
    sp = rep["split"]
    check(sp["reference_half"] == 450 and sp["matched"] == 451 and sp["n_synthetic"] == 700,
          f"split sizes {sp}")
    print("report: KS, W1, moments, TV, Pearson, Cramér's V agree")


def check_table_columns(tmp, rng):
    """The decoded-columns path (report.h with units): numeric columns with
    missing values (NaN) get KS, W1, moments on their present values and
    their missing shares; Pearson uses the rows where both are present;
    categorical columns (missing as a level) get TV and Cramér's V; mean TV
    is over categorical columns; the units (here unrelated noise) feed only
    distribution, utility and memorisation."""
    def cols(n, shift):
        a = rng.normal(40 + shift, 9, n)
        b = 100 * a + rng.normal(0, 300, n)
        b[rng.uniform(size=n) < 0.2] = np.nan  # missing
        c = rng.integers(0, 4, n).astype(float)  # k = 3 + a "(missing)" level
        e = np.where(rng.uniform(size=n) < 0.6, (a > 40 + shift).astype(float), rng.integers(0, 2, n))
        return np.stack([a, b, c, e], axis=1).astype(np.float32)

    syn, ref = cols(500, 3.0), cols(640, 0.0)
    ys, yr = rng.integers(0, 2, 500), (rng.uniform(size=640) < 0.75).astype(int)
    su, ru = rng.normal(0, 1, (500, 7)), rng.normal(0, 1, (640, 7))
    for name, a in (("ts.npy", syn), ("tr.npy", ref), ("tsu.npy", su), ("tru.npy", ru), ("tys.npy", ys),
                    ("tyr.npy", yr)):
        save(tmp, name, a)
    rep = run(tmp, "report", "ts.npy", "tr.npy", "--columns", "n,n,c:4,c:2", "--units", "tsu.npy",
              "tru.npy", "--labels", "tys.npy", "tyr.npy", 2, "--sw", 50, "--sinkhorn-rows", 200)
    s, r = syn.astype(np.float64), ref.astype(np.float64)
    cs = rep["marginals"]["columns"]
    for j in range(2):
        sp, rp = s[~np.isnan(s[:, j]), j], r[~np.isnan(r[:, j]), j]
        close(cs[j]["ks"], ks_2samp(sp, rp).statistic, 1e-12, f"table KS {j}")
        close(cs[j]["w1"], wasserstein_distance(sp, rp), 1e-9, f"table W1 {j}", rel=True)
        close(cs[j]["mean_real"], rp.mean(), 1e-10, f"table mean {j}", rel=True)
        close(cs[j]["std_synthetic"], sp.std(), 1e-10, f"table std {j}", rel=True)
        close(cs[j]["missing_real"], np.isnan(r[:, j]).mean(), 1e-15, f"table missing {j}")
        close(cs[j]["missing_synthetic"], np.isnan(s[:, j]).mean(), 1e-15, f"table missing {j}")
    tvs = []
    for j, k in ((2, 4), (3, 2)):
        p = np.bincount(r[:, j].astype(int), minlength=k) / len(r)
        q = np.bincount(s[:, j].astype(int), minlength=k) / len(s)
        tvs.append(0.5 * np.abs(p - q).sum())
        close(cs[j]["tv"], tvs[-1], 1e-14, f"table TV {j}")
    close(rep["marginals"]["mean_tv"], np.mean(tvs), 1e-14, "table mean TV")
    pw = rep["pairwise"]
    for name, x in (("real", r), ("synthetic", s)):
        ok = ~np.isnan(x[:, 1])
        close(pw[name][0][1], np.corrcoef(x[ok, 0], x[ok, 1])[0, 1], 1e-10, f"table Pearson {name}")
        _, ia = np.unique(x[:, 2], return_inverse=True)
        _, ib = np.unique(x[:, 3], return_inverse=True)
        tab = np.zeros((ia.max() + 1, ib.max() + 1), dtype=np.int64)
        np.add.at(tab, (ia, ib), 1)
        close(pw[name][2][3], association(tab, method="cramer"), 1e-12, f"table Cramér {name}")
    check(pw["pearson_pairs"] == 1 and pw["cramer_pairs"] == 1, f"table pairs {pw}")
    u = rep["utility"]
    # The majority rate is a share of the reference half B (h = 320 rows) of
    # labels that are 1 with probability 0.75.
    m = u["majority_rate"]
    check(u["majority_class"] == 1 and abs(m * 320 - round(m * 320)) < 1e-9 and 0.65 < m < 0.85,
          f"table majority {u}")
    check(rep["split"]["d"] == 4, f"table split {rep['split']}")
    print("table columns: KS, W1, moments, missing shares, TV, mean TV, Pearson (complete pairs), "
          "Cramér's V agree")


def check_nearest(tmp, rng):
    ref = rng.normal(2.0, 1.0, (500, 40)).astype(np.float32)
    q = rng.normal(2.0, 1.0, (300, 40)).astype(np.float32)
    q[::7] = ref[rng.integers(0, 500, len(q[::7]))]  # copies: distance exactly 0
    save(tmp, "q.npy", q)
    save(tmp, "r.npy", ref)
    out = run(tmp, "nearest", "q.npy", "r.npy")
    d = cdist(q.astype(np.float64), ref.astype(np.float64))
    best = d.min(axis=1)
    got = np.array(out["dist"])
    # The winner's distance is exact in float64 (1e-12); a float32 screen may
    # pick a near-tie whose squared distance exceeds the minimum by at most
    # ~1e-6 (|q|^2 + |r|^2) ~ 4e-4 here.
    chosen = d[np.arange(len(q)), out["idx"]]
    check(np.allclose(got, chosen, rtol=1e-12, atol=1e-12), "nearest: distance of the chosen row")
    check(np.all(got**2 <= best**2 + 4e-4), "nearest: chosen row not a near-minimum")
    check(np.all(got[::7] == 0.0), "nearest: copied rows not at 0")
    print(f"nearest: {np.sum(np.array(out['idx']) == d.argmin(axis=1))}/{len(q)} same argmin as cdist")


def check_logreg(tmp, rng):
    from sklearn.linear_model import LogisticRegression

    n, nt, d, k, l2 = 600, 400, 5, 3, 1e-2
    means = rng.normal(0, 1.2, (k, d))
    y = rng.integers(0, k, n)
    yt = rng.integers(0, k, nt)
    x = (means[y] + rng.normal(0, 1, (n, d))).astype(np.float32)
    xt = (means[yt] + rng.normal(0, 1, (nt, d))).astype(np.float32)
    save(tmp, "x.npy", x)
    save(tmp, "y.npy", y)
    save(tmp, "xt.npy", xt)
    out = run(tmp, "logreg", "x.npy", "y.npy", k, l2, "xt.npy")
    w = np.array(out["w"])
    W, b = w[:d], w[d]
    # engine: mean CE + (l2/2)|W|^2; sklearn: C * sum CE + |W|^2 / 2, the same
    # minimizer for C = 1 / (n l2). Intercepts are unpenalized in both.
    sk = LogisticRegression(C=1.0 / (n * l2), multi_class="multinomial", solver="lbfgs", tol=1e-10,
                            max_iter=10000).fit(x.astype(np.float64), y)
    Ws, bs = sk.coef_.T, sk.intercept_

    def objective(W, b):
        z = x.astype(np.float64) @ W + b
        z -= z.max(axis=1, keepdims=True)
        lse = np.log(np.exp(z).sum(axis=1))
        return np.mean(lse - z[np.arange(n), y]) + 0.5 * l2 * np.sum(W * W)

    fo, fs = objective(W, b), objective(Ws, bs)
    # The objective is strictly convex: both solvers must reach the same value.
    # The engine stops at a float32 gradient (|grad|_inf ~ 1e-5), which costs
    # O(|grad|^2 / l2) ~ 1e-8 in the objective: 1e-6 relative is generous.
    close(fo, fs, 1e-6, "logreg objective", rel=True)
    # Coefficients: with strong convexity l2 in W, |W - W*| <= |grad|_2 / l2,
    # about sqrt(18) * 1e-5 / 1e-2 ~ 5e-3 at the engine's stopping gradient.
    # Softmax intercepts are defined up to a common shift: compare centred ones.
    dw = np.abs(W - Ws).max()
    db = np.abs((b - b.mean()) - (bs - bs.mean())).max()
    check(dw <= 5e-3 and db <= 5e-3, f"logreg coefficients differ by {dw:.2e} (W), {db:.2e} (b)")
    pred, pred_sk = np.array(out["pred"]), sk.predict(xt.astype(np.float64))
    agree = np.mean(pred == pred_sk)
    # Near-identical models can only disagree on test points within ~1e-3 of a
    # decision boundary: at most 1 % of 400.
    check(agree >= 0.99, f"logreg predictions agree on {agree:.3f} of test rows")
    acc, acc_sk = np.mean(pred == yt), np.mean(pred_sk == yt)
    close(acc, acc_sk, 0.01, "logreg test accuracy")
    print(f"logreg: objective {fo:.8f} vs sklearn {fs:.8f}, max |dW| {dw:.1e}, |db| {db:.1e}, "
          f"accuracy {acc:.4f} vs {acc_sk:.4f}, stop {out['stop']} after {out['iters']}")


def main():
    rng = np.random.default_rng(20)
    with tempfile.TemporaryDirectory() as tmp:
        check_report(tmp, rng)
        check_table_columns(tmp, rng)
        check_nearest(tmp, rng)
        check_logreg(tmp, rng)
    if FAILS:
        sys.exit(f"{len(FAILS)} mismatches")
    print("all eval figures match their references")


if __name__ == "__main__":
    main()
