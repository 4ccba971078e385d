#!/usr/bin/env python3
"""Peer for `privgen-bench logreg`: the downstream classifier of the DP
image-generation literature, scikit-learn's LogisticRegression (L-BFGS, the
protocol of paper 001: C = 1, the iteration cap below), against privgen's own
multinomial logistic regression (engine/eval/logreg) on the same training set,
both scored on the 10k Fashion-MNIST test images.

The training set is the 60k real training images (default), or a labelled set
saved by `privgen-bench repro fmnist --save-synthetic PREFIX` (--train PREFIX):
that answers whether a synthetic-data accuracy is limited by the images or by
the classifier.

Prints one JSON line per classifier and a comparison line:
  {"bench":"logreg_peer","train":...,"privgen":acc,"sklearn":acc,
   "difference":privgen-sklearn,"ratio_seconds":sklearn_s/privgen_s}

Usage: logreg.py [--train real|PREFIX] [--max-iter 1000] [--threads 1]
Env PRIVGEN_BENCH: the binary (default build/bin/privgen-bench).
"""
import argparse
import gzip
import json
import os
import sys


def _threads():
    # The BLAS thread count is read when numpy loads, so --threads must be
    # applied before the imports below (and privgen-bench inherits it).
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "1"


os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("OPENBLAS_NUM_THREADS", _threads())
os.environ.setdefault("OMP_NUM_THREADS", _threads())
import subprocess
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

BENCH = os.environ.get("PRIVGEN_BENCH", "build/bin/privgen-bench")
DATA = "/usr/share/datasets/fashion-mnist/"


def idx(name, offset):
    with gzip.open(DATA + name) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def load_real():
    # The scaling privgen's loader uses: pixel / 127.5 - 1, in [-1, 1].
    x = idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 784) / 127.5 - 1
    y = idx("train-labels-idx1-ubyte.gz", 8).astype(int)
    return x.astype(np.float32), y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", default="real")
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()

    out = subprocess.run([BENCH, "logreg", "--train", a.train, "--threads", str(a.threads)],
                         check=True, capture_output=True, text=True).stdout
    ours = json.loads(out.strip().splitlines()[-1])
    print(json.dumps(ours), flush=True)

    if a.train == "real":
        x, y = load_real()
    else:
        x = np.load(a.train + ".x.npy")
        y = np.load(a.train + ".y.npy").astype(int)
    xt = idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784) / 127.5 - 1
    yt = idx("t10k-labels-idx1-ubyte.gz", 8).astype(int)
    t = time.perf_counter()
    c = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = LogisticRegression(C=1.0, max_iter=a.max_iter).fit(x, y)
    secs, cpu = time.perf_counter() - t, time.process_time() - c
    acc = float(clf.score(xt, yt))
    print(json.dumps({"bench": "logreg", "impl": "sklearn", "train": a.train,
                      "accuracy": round(acc, 4), "iterations": int(clf.n_iter_[0]),
                      "max_iter": a.max_iter, "seconds": round(secs, 2),
                      "cpu_seconds": round(cpu, 2)}), flush=True)
    print(json.dumps({"bench": "logreg_peer", "train": a.train, "privgen": ours["accuracy"],
                      "sklearn": round(acc, 4),
                      "difference": round(ours["accuracy"] - acc, 4),
                      "ratio_seconds": round(secs / ours["seconds"], 2)}), flush=True)


if __name__ == "__main__":
    main()
