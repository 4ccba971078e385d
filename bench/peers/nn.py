#!/usr/bin/env python3
"""Peer for `privgen-bench nn`: the same generators in PyTorch (CPU), timed the
same way (median per-step forward, backward, Adam step), run back to back with
privgen in the same process tree so both see the same machine load.

Prints the privgen JSON line, a torch JSON line and a ratio line per case:
  {"bench":"nn_ratio","arch":...,"ratio_step":torch_ms/privgen_ms,...}
ratio > 1 means privgen is faster.

On a shared machine one pair of runs says little. With --repeat N each case
runs privgen and torch alternately N times and adds a summary line with the
best and the median ms_step of each, the ratios best/best and median/median,
and the 1-minute load average before and after:
  {"bench":"nn_summary","arch":...,"ratio_best":...,"ratio_median":...}

Usage: nn.py [--threads 2] [--steps 10] [--repeat 1] [--case mlp|dcgan28|conv_small ...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn

BENCH = os.environ.get("PRIVGEN_BENCH", "build/bin/privgen-bench")

CASES = {
    "mlp": 400,
    "dcgan28": 70,
    "conv_small": 100,
}


class Cond(nn.Module):
    """Concatenates a label code (learned embedding or one-hot) to z."""

    def __init__(self, classes, dim):
        super().__init__()
        self.classes = classes
        self.emb = nn.Embedding(classes, dim) if dim else None

    def forward(self, z, y):
        code = self.emb(y) if self.emb is not None else nn.functional.one_hot(y, self.classes).float()
        return torch.cat([z, code], 1)


class Gen(nn.Module):
    def __init__(self, cond, body, latent):
        super().__init__()
        self.cond, self.body, self.latent = cond, body, latent

    def forward(self, z, y):
        x = self.cond(z, y) if self.cond is not None else z
        return self.body(x)


def build(arch, latent=32, hidden=(256, 256), out=784):
    if arch == "mlp":
        layers, w = [], latent
        for h in hidden:
            layers += [nn.Linear(w, h), nn.ReLU()]
            w = h
        layers.append(nn.Linear(w, out))
        return Gen(None, nn.Sequential(*layers), latent)
    if arch == "dcgan28":
        body = nn.Sequential(
            nn.Unflatten(1, (16, 1, 1)),
            nn.ConvTranspose2d(16, 256, 7, 1, 0, bias=False), nn.BatchNorm2d(256), nn.ReLU(),
            nn.ConvTranspose2d(256, 128, 4, 2, 1, bias=False), nn.BatchNorm2d(128), nn.ReLU(),
            nn.ConvTranspose2d(128, 64, 4, 2, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
            nn.ConvTranspose2d(64, 1, 3, 1, 1), nn.Tanh())
        return Gen(Cond(10, 4), body, 12)
    if arch == "conv_small":
        body = nn.Sequential(
            nn.Linear(20, 200), nn.BatchNorm1d(200), nn.ReLU(),
            nn.Linear(200, 784), nn.BatchNorm1d(784),
            nn.Unflatten(1, (16, 7, 7)),
            nn.UpsamplingBilinear2d(scale_factor=2),
            nn.Conv2d(16, 32, 5, 1, 2), nn.ReLU(),
            nn.UpsamplingBilinear2d(scale_factor=2),
            nn.Conv2d(32, 1, 5, 1, 2), nn.Sigmoid())
        return Gen(Cond(10, 0), body, 10)
    raise ValueError(arch)


def torch_bench(arch, batch, steps, warmup, threads):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    net = build(arch)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    z = torch.randn(batch, net.latent)
    y = torch.arange(batch) % 10
    tf, tb, to, tt = [], [], [], []
    for s in range(warmup + steps):
        t0 = time.perf_counter()
        out = net(z, y)
        t1 = time.perf_counter()
        g = (out.detach() / out.numel())
        t2 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        out.backward(g)
        t3 = time.perf_counter()
        opt.step()
        t4 = time.perf_counter()
        if s >= warmup:
            tf.append((t1 - t0) * 1e3)
            tb.append((t3 - t2) * 1e3)
            to.append((t4 - t3) * 1e3)
            tt.append((t1 - t0 + t4 - t2) * 1e3)
    med = statistics.median
    return {"bench": "nn", "impl": "torch", "arch": arch, "batch": batch, "threads": threads,
            "params": sum(p.numel() for p in net.parameters()), "steps": steps,
            "ms_forward": round(med(tf), 4), "ms_backward": round(med(tb), 4),
            "ms_opt": round(med(to), 4), "ms_step": round(med(tt), 4)}


def privgen_bench(arch, batch, steps, warmup, threads):
    cmd = [BENCH, "nn", "--arch", arch, "--batch", str(batch), "--steps", str(steps),
           "--warmup", str(warmup), "--threads", str(threads)]
    res = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--case", action="append", choices=sorted(CASES))
    a = ap.parse_args()
    for arch in a.case or list(CASES):
        batch = CASES[arch]
        load0 = os.getloadavg()[0]
        ps, ts = [], []
        for _ in range(max(1, a.repeat)):
            p = privgen_bench(arch, batch, a.steps, a.warmup, a.threads)
            t = torch_bench(arch, batch, a.steps, a.warmup, a.threads)
            if p["params"] != t["params"]:
                print(f"# parameter counts differ: privgen {p['params']} torch {t['params']}",
                      file=sys.stderr)
            print(json.dumps(p))
            print(json.dumps(t))
            print(json.dumps({"bench": "nn_ratio", "arch": arch, "batch": batch,
                              "threads": a.threads,
                              "ratio_forward": round(t["ms_forward"] / p["ms_forward"], 3),
                              "ratio_backward": round(t["ms_backward"] / p["ms_backward"], 3),
                              "ratio_step": round(t["ms_step"] / p["ms_step"], 3),
                              "blas_fraction": p.get("blas_fraction")}))
            sys.stdout.flush()
            ps.append(p)
            ts.append(t)
        if a.repeat > 1:
            med = statistics.median
            pb = min(x["ms_step"] for x in ps)
            tb = min(x["ms_step"] for x in ts)
            pm = med([x["ms_step"] for x in ps])
            tm = med([x["ms_step"] for x in ts])
            print(json.dumps({"bench": "nn_summary", "arch": arch, "batch": batch,
                              "threads": a.threads, "runs": len(ps),
                              "privgen_best": round(pb, 3), "privgen_median": round(pm, 3),
                              "torch_best": round(tb, 3), "torch_median": round(tm, 3),
                              "ratio_best": round(tb / pb, 3), "ratio_median": round(tm / pm, 3),
                              "blas_fraction_median": med([x["blas_fraction"] for x in ps]),
                              "load_before": round(load0, 2),
                              "load_after": round(os.getloadavg()[0], 2)}))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
