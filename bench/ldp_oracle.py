#!/usr/bin/python3
"""What a locally privatized table can teach a classifier at all (issue 28).

Privatizes the training 80 % of a labelled table the way privgen-bench credit does
for entropic_gan (per-column local DP, the total epsilon split as privgen privatize
--split says: label, the default, or evenly over the columns, label included; Laplace
on numbers with sensitivity hi - lo in the [-1, 1] encoding, a nullable number's
epsilon halved between indicator and value; k-ary randomized
response on categories, booleans and the label), then fits scikit-learn's logistic
regression directly on the privatized rows and labels and scores it on the clean
held-out 20 %. No generator: a reference for the accuracy a synthetic-data pipeline
can hope to reach from the same reports. The split is numpy's permutation with seed
19, not the C bench's, so its majority rate differs slightly.

    bench/ldp_oracle.py --csv build/credit_data.csv --schema bench/credit_data.schema.json \
        --eps 5,20,1000 [--runs 10] [--split label|even]
"""
import argparse
import csv
import json
import math

import numpy as np
from sklearn.linear_model import LogisticRegression


def encode(schema, rows):
    label = schema["label"]
    cols = [c for c in schema["columns"] if c["name"] != label]
    lab_cats = next(c for c in schema["columns"] if c["name"] == label)["categories"]
    X, y = [], []
    for r in rows:
        v = []
        for c in cols:
            s = r[c["name"]]
            miss = s in ("NA", "")
            if c["type"] in ("integer", "continuous"):
                v.append(0.0 if miss else -1 + 2 * (float(s) - c["min"]) / (c["max"] - c["min"]))
                if c.get("nullable"):
                    v.append(1.0 if miss else 0.0)
            elif c["type"] == "boolean":
                v.append(0.0 if miss else float(s in ("yes", "Yes", "TRUE", "true", "1")))
            else:
                k = len(c["categories"])
                o = [0.0] * (k + (1 if c.get("nullable") else 0))
                o[k if miss else c["categories"].index(s)] = 1.0
                v += o
        X.append(v)
        y.append(lab_cats.index(r[label]))
    return cols, np.array(X), np.array(y)


def rr(cur, k, eps, rng):
    keep = math.exp(eps) / (math.exp(eps) + k - 1)
    other = rng.integers(0, k - 1, len(cur))
    other = np.where(other >= cur, other + 1, other)
    return np.where(rng.random(len(cur)) < keep, cur, other)


def rr_gain(k, e):
    """keep minus other probability of k-ary randomized response at e"""
    return -math.expm1(-e) / (1 + (k - 1) * math.exp(-e))


def label_epsilon(schema, eps):
    """The label's share under table_ldp.c's label split, by brute force on a
    grid of 20 000 points (its objective: rr_gain(K, eL)^2 times the mean over
    features of the reports' reliability rho^2 at (eps - eL) / features)."""
    label = schema["label"]
    feats = [c for c in schema["columns"] if c["name"] != label]
    K = len(next(c for c in schema["columns"] if c["name"] == label)["categories"])

    def objective(eL):
        ef, tot = (eps - eL) / len(feats), 0.0
        for c in feats:
            if c["type"] in ("integer", "continuous"):
                ev = ef / 2 if c.get("nullable") else ef
                tot += (1 / 12) / (1 / 12 + 2 / ev ** 2)
            else:
                k = (2 if c["type"] == "boolean" else len(c["categories"])) + bool(c.get("nullable"))
                tot += rr_gain(k, ef) ** 2
        return rr_gain(K, eL) ** 2 * tot / len(feats)

    grid = [eps * i / 20000 for i in range(1, 20000)]
    return max(grid, key=objective)


def privatize(cols, ncols, X, y, eps_total, rng, eps_label=None):
    """eps_label None: the even split; else the label gets it and the
    features share the rest evenly."""
    e = eps_total / ncols if eps_label is None else (eps_total - eps_label) / (ncols - 1)
    el = e if eps_label is None else eps_label
    Xp, j = X.copy(), 0
    for c in cols:
        if c["type"] in ("integer", "continuous"):
            ev = e / 2 if c.get("nullable") else e
            Xp[:, j] += rng.laplace(0, 2 / ev, len(X))
            j += 1
            if c.get("nullable"):
                Xp[:, j] = rr(X[:, j].astype(int), 2, e / 2, rng)
                j += 1
        elif c["type"] == "boolean":
            Xp[:, j] = rr(X[:, j].astype(int), 2, e, rng)
            j += 1
        else:
            k = len(c["categories"]) + (1 if c.get("nullable") else 0)
            new = rr(X[:, j:j + k].argmax(1), k, e, rng)
            Xp[:, j:j + k] = 0
            Xp[np.arange(len(X)), j + new] = 1
            j += k
    return Xp, rr(y, int(y.max()) + 1, el, rng)


def unit_channels(cols, eps_feat):
    """Per encoded unit: (kind, a, b) with E[x~ | x] = a + b x for the unit
    (categorical/boolean/indicator units under randomized response: a = q,
    b = p - q; numbers: a = 0, b = 1) and the noise variance of numbers
    (Laplace 2 (2 / e)^2 on the [-1, 1] unit); blocks of RR units as index
    lists (their conditional covariance is -m_j m_l inside a block)."""
    units, blocks = [], []
    for c in cols:
        if c["type"] in ("integer", "continuous"):
            ev = eps_feat / 2 if c.get("nullable") else eps_feat
            units.append(("num", 0.0, 1.0, 2 * (2 / ev) ** 2))
            if c.get("nullable"):
                p = math.exp(ev) / (math.exp(ev) + 1)
                units.append(("ind", 1 - p, 2 * p - 1, 0.0))
        elif c["type"] == "boolean":
            p = math.exp(eps_feat) / (math.exp(eps_feat) + 1)
            units.append(("ind", 1 - p, 2 * p - 1, 0.0))
        else:
            k = len(c["categories"]) + (1 if c.get("nullable") else 0)
            p = math.exp(eps_feat) / (math.exp(eps_feat) + k - 1)
            q = (1 - p) / (k - 1)
            blocks.append(list(range(len(units), len(units) + k)))
            units += [("rr", q, p - q, 0.0)] * k
    return units, blocks


def debiased_class_stats(Xp, yp, K, P, Q, units, blocks):
    """Class shares, class means of the clean units and the pooled within-class
    covariance of the clean units, from the privatized rows alone: the label
    channel inverted by the weights (1{y~ = c} - Q) / (P - Q), each unit's
    channel by x = (x~ - a) / b, and the channels' own conditional variance
    taken off the covariance (numbers: the noise's; RR units: E[m (1 - m)] on
    the diagonal and -E[m_j m_l] inside a block, m = a + b x)."""
    A = np.array([u[1] for u in units]); B = np.array([u[2] for u in units])
    Xh = (Xp - A) / B
    W = np.stack([((yp == c).astype(float) - Q) / (P - Q) for c in range(K)], 1)
    pi = np.clip(W.mean(0), 1e-3, None); pi /= pi.sum()
    mu = (W.T @ Xh) / (W.sum(0)[:, None])
    tot = np.cov(Xh.T, bias=True)
    noise = np.zeros_like(tot)
    m = np.clip(Xp.mean(0), 0, 1)  # E[x~] of RR units = E[m]
    for j, u in enumerate(units):
        if u[0] == "num":
            noise[j, j] = u[3]
        else:
            v = np.mean(Xp[:, j] * (1 - Xp[:, j])) if False else None
            # E[m(1-m)] with m = a + b x, x in {0,1}: m_x for x=0 and x=1
            e1 = np.clip(Xh[:, j].mean(), 0, 1)
            m0, m1 = u[1], u[1] + u[2]
            noise[j, j] = ((1 - e1) * m0 * (1 - m0) + e1 * m1 * (1 - m1)) / u[2] ** 2
    for bl in blocks:
        for j in bl:
            for l in bl:
                if j != l:
                    # E[m_j m_l]: one-hot, x_j x_l = 0, so m_j m_l = (a + b x_j)(a + b x_l)
                    a, b = units[j][1], units[j][2]
                    ej, el = np.clip(Xh[:, j].mean(), 0, 1), np.clip(Xh[:, l].mean(), 0, 1)
                    noise[j, l] = -(a * a + a * b * (ej + el)) / (b * b)
    between = sum(pi[c] * np.outer(mu[c] - Xh.mean(0), mu[c] - Xh.mean(0)) for c in range(K))
    Sw = tot - noise - between
    return pi, mu, Sw, Xh


def lda_predict(pi, mu, Sw, Xte, shrink):
    """Linear discriminant with the within-class covariance shrunk toward its
    diagonal (and eigenvalues floored) so a noisy estimate stays usable."""
    d = np.diag(np.clip(np.diag(Sw), 1e-4, None))
    S = (1 - shrink) * Sw + shrink * d
    w, V = np.linalg.eigh((S + S.T) / 2)
    S = V @ np.diag(np.clip(w, 1e-4 * max(w.max(), 1e-4), None)) @ V.T
    Si = np.linalg.inv(S)
    sc = np.stack([Xte @ Si @ mu[c] - 0.5 * mu[c] @ Si @ mu[c] + math.log(pi[c])
                   for c in range(len(pi))], 1)
    return sc.argmax(1)


def nb_predict(pi, mu, Sw, Xte):
    """Gaussian naive Bayes on the debiased class means and (pooled,
    diagonal) spreads."""
    var = np.clip(np.diag(Sw), 1e-3, None)
    sc = np.stack([-0.5 * (((Xte - mu[c]) ** 2) / var).sum(1) + math.log(pi[c])
                   for c in range(len(pi))], 1)
    return sc.argmax(1)


def forward_lr(Xp, yp, P, Q, l2):
    """Binary logistic regression fitted through the label's channel
    (Patrini et al.'s forward correction): P(y~ = 1 | x~) = Q + (P - Q)
    sigmoid(w x~ + c), L2 penalty l2 / 2 |w|^2 on the mean loss."""
    from scipy.optimize import minimize
    n, d = Xp.shape
    t = (yp == 1).astype(float)

    def f(th):
        z = Xp @ th[:d] + th[d]
        s = 1 / (1 + np.exp(-np.clip(z, -30, 30)))
        p1 = np.clip(Q + (P - Q) * s, 1e-12, 1 - 1e-12)
        loss = -np.mean(t * np.log(p1) + (1 - t) * np.log(1 - p1)) + 0.5 * l2 * th[:d] @ th[:d]
        g1 = ((p1 - t) / (p1 * (1 - p1))) * (P - Q) * s * (1 - s) / n
        return loss, np.concatenate([Xp.T @ g1 + l2 * th[:d], [g1.sum()]])
    th = minimize(f, np.zeros(d + 1), jac=True, method="L-BFGS-B").x
    return lambda X: (X @ th[:d] + th[d] > 0).astype(int)


def feasibility(a, schema, cols, X, y, tr, te, maj):
    """The best accuracy any of several estimators reaches from the privatized
    training rows (each run privatizes afresh), by epsilon and by table size
    (the training rows resampled with replacement to m times their number;
    the clean test 20 % unchanged)."""
    K = int(y.max()) + 1
    ncols = len(schema["columns"])
    for mult in [int(v) for v in a.mult.split(",")]:
        for eps in [float(v) for v in a.eps.split(",")]:
            res = {}
            for s in range(a.runs):
                rng = np.random.default_rng(1000 + s)
                idx = tr if mult == 1 else rng.choice(tr, mult * len(tr), replace=True)
                el = label_epsilon(schema, eps) if a.split == "label" else None
                Xp, yp = privatize(cols, ncols, X[idx], y[idx], eps, rng, el)
                ef = eps / ncols if el is None else (eps - el) / (ncols - 1)
                e_lab = ef if el is None else el
                P = math.exp(e_lab) / (math.exp(e_lab) + K - 1); Q = (1 - P) / (K - 1)
                units, blocks = unit_channels(cols, ef)
                Xte, yte = X[te], y[te]
                accs = {}
                for C in (1e4, 1e-1, 1e-2):
                    accs["lr_C%g" % C] = LogisticRegression(max_iter=3000, C=C).fit(Xp, yp).score(Xte, yte)
                if K == 2:
                    for l2 in (1e-4, 1e-2):
                        accs["fwd_lr_l2%g" % l2] = float(np.mean(forward_lr(Xp, yp, P, Q, l2)(Xte) == yte))
                pi, mu, Sw, _ = debiased_class_stats(Xp, yp, K, P, Q, units, blocks)
                accs["nb_debiased"] = float(np.mean(nb_predict(pi, mu, Sw, Xte) == yte))
                for sh in (0.5, 0.9):
                    accs["lda_debiased_s%g" % sh] = float(np.mean(lda_predict(pi, mu, Sw, Xte, sh) == yte))
                for k, v in accs.items():
                    res.setdefault(k, []).append(v)
            best = max(res, key=lambda k: np.mean(res[k]))
            out = {"rows": mult * len(tr), "mult": mult, "eps_local_per_row": eps, "split": a.split,
                   "majority": round(maj, 4), "runs": a.runs}
            for k, v in res.items():
                out[k] = "%.3f (%.3f-%.3f) %d/%d" % (np.mean(v), min(v), max(v),
                                                  sum(x > maj for x in v), len(v))
            out["best"] = best
            print(json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--eps", default="5,1000")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--split", choices=("label", "even"), default="label",
                    help="how the row's epsilon is split (privgen privatize --split)")
    ap.add_argument("--feasibility", action="store_true",
                    help="several estimators (LR, LR through the label channel, debiased naive "
                         "Bayes and LDA) by epsilon and table size (--mult)")
    ap.add_argument("--mult", default="1",
                    help="with --feasibility: training rows resampled to these multiples")
    a = ap.parse_args()
    schema = json.load(open(a.schema))
    cols, X, y = encode(schema, list(csv.DictReader(open(a.csv))))
    perm = np.random.default_rng(19).permutation(len(X))
    tr, te = perm[: int(0.8 * len(X))], perm[int(0.8 * len(X)):]
    maj = np.bincount(y[te]).max() / len(te)
    real = LogisticRegression(max_iter=3000, C=1e4).fit(X[tr], y[tr]).score(X[te], y[te])
    print(json.dumps({"rows": len(X), "width": X.shape[1], "real": round(real, 4),
                      "majority": round(maj, 4)}))
    if a.feasibility:
        feasibility(a, schema, cols, X, y, tr, te, maj)
        return
    for eps in [float(v) for v in a.eps.split(",")]:
        for C in (1e4, 1e-2):
            accs = []
            for s in range(a.runs):
                rng = np.random.default_rng(100 + s)
                el = label_epsilon(schema, eps) if a.split == "label" else None
                Xp, yp = privatize(cols, len(schema["columns"]), X[tr], y[tr], eps, rng, el)
                m = LogisticRegression(max_iter=3000, C=C).fit(Xp, yp)
                accs.append(m.score(X[te], y[te]))
            print(json.dumps({"eps_local_per_row": eps, "split": a.split, "C": C, "mean": round(float(np.mean(accs)), 4),
                              "min": round(min(accs), 4), "max": round(max(accs), 4),
                              "above_majority": int(sum(v > maj for v in accs)), "runs": a.runs}))


if __name__ == "__main__":
    main()
