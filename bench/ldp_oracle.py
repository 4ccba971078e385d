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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("--eps", default="5,1000")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--split", choices=("label", "even"), default="label",
                    help="how the row's epsilon is split (privgen privatize --split)")
    a = ap.parse_args()
    schema = json.load(open(a.schema))
    cols, X, y = encode(schema, list(csv.DictReader(open(a.csv))))
    perm = np.random.default_rng(19).permutation(len(X))
    tr, te = perm[: int(0.8 * len(X))], perm[int(0.8 * len(X)):]
    maj = np.bincount(y[te]).max() / len(te)
    real = LogisticRegression(max_iter=3000, C=1e4).fit(X[tr], y[tr]).score(X[te], y[te])
    print(json.dumps({"rows": len(X), "width": X.shape[1], "real": round(real, 4),
                      "majority": round(maj, 4)}))
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
