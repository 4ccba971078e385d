#!/usr/bin/env bash
# Issue 27's figures: mst and aim on credit_data (target Status) and attrition
# (target Attrition), 80/20 split, central epsilon 1 and 5 at delta 1e-5,
# logistic regression trained on the synthetic rows and scored on the real
# 20 %, mean of RUNS runs (default 3; each run draws fresh DP noise).
# Prints every run's JSON line, then one summary line per table, method and
# epsilon with the means (acc_synth, tv_mean, seconds, cpu_seconds) next to
# acc_real and acc_majority.
#
#   bench/marginal.sh [BUILD_DIR] [RUNS]       default build, 3
set -euo pipefail
build=${1:-build}
runs=${2:-3}
src=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$build/credit_data.csv" ] || "$src/bench/credit_data.sh" "$build/credit_data.csv"
[ -f "$build/attrition.csv" ] || "$src/bench/attrition.sh" "$build/attrition.csv"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq 1 "$runs"); do
  for table in credit attrition; do
    if [ "$table" = credit ]; then
      args=(--csv "$build/credit_data.csv" --schema "$src/bench/credit_data.schema.json" --target Status)
    else
      args=(--csv "$build/attrition.csv" --schema "$src/bench/attrition.schema.json" --target Attrition)
    fi
    for m in mst aim; do
      for e in 1 5; do
        t0=$(awk '{print $14 + $15}' /proc/$$/stat 2>/dev/null || echo 0)
        line=$( { /usr/bin/time -f 'CPU %U %S' "$build/bin/privgen-bench" credit "${args[@]}" \
                  --methods "$m" --eps "$e" 2>&1 >&3 | grep '^CPU' >&2; } 3>&1 2>"$out.cpu" | grep '"method"')
        cpu=$(awk '{print $2 + $3}' "$out.cpu")
        echo "${line%\}}, \"table\": \"$table\", \"run\": $r, \"cpu_seconds\": $cpu}" | tee -a "$out"
      done
    done
  done
done
python3 - "$out" <<'PY'
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
g = collections.defaultdict(list)
for r in rows:
    g[(r["table"], r["method"], r["epsilon"])].append(r)
for (table, m, e), rs in sorted(g.items()):
    mean = lambda k: sum(r[k] for r in rs) / len(rs)
    print(json.dumps({"bench": "marginal", "table": table, "method": m, "epsilon": e,
                      "runs": len(rs), "acc_synth": round(mean("acc_synth"), 4),
                      "acc_synth_min": min(r["acc_synth"] for r in rs),
                      "acc_real": rs[0]["acc_real"], "acc_majority": rs[0]["acc_majority"],
                      "tv_mean": round(mean("tv_mean"), 4), "tv_floor": rs[0]["tv_floor"],
                      "seconds": round(mean("seconds"), 2),
                      "cpu_seconds": round(mean("cpu_seconds"), 2)}))
PY
