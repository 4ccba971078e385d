#!/bin/sh
# bench/tutorial1_runs.sh - repeated runs of README tutorial 1's job through the
# engine: entropic_gan with its defaults on 20 000 half-circle rows privatized
# as the tutorial does (clip l1:1.42, Laplace, local epsilon 5; fresh secure
# noise every run), scored as the tutorial scores (share of 2000 samples
# within 0.1 of the arc, mean radius). Prints one JSON line per run, then
# min / median / max of the share. Runs are niced; pass a spec to try other
# settings, e.g. '{"train": {"batch_size": 512}}'.
#
# usage: bench/tutorial1_runs.sh [RUNS=10] [SPEC_JSON] [BENCH=build/bin/privgen-bench]
set -eu
runs=${1:-10}
spec=${2:-}
bench=${3:-build/bin/privgen-bench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
i=1
while [ "$i" -le "$runs" ]; do
    if [ -n "$spec" ]; then
        nice -n 10 "$bench" defaults --method entropic_gan --data halfcircle --epsilon 5 \
            --n 20000 --threads 1 --seed "$i" --spec "$spec" | tee -a "$out"
    else
        nice -n 10 "$bench" defaults --method entropic_gan --data halfcircle --epsilon 5 \
            --n 20000 --threads 1 --seed "$i" | tee -a "$out"
    fi
    i=$((i + 1))
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
s = sorted(r["arc_within_0.1"] for r in rows)
t = [r["seconds"] for r in rows]
print(f"within 0.1 of the arc over {len(s)} runs: min {s[0]:.3f}, median "
      f"{statistics.median(s):.3f}, max {s[-1]:.3f}; training seconds "
      f"{min(t):.1f}-{max(t):.1f}")
PY
