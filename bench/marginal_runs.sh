#!/usr/bin/env bash
# Mean and standard error of one setting over RUNS runs (each run draws
# fresh DP noise): logistic-regression accuracy (synthetic -> real 20 %) and
# categorical TV and the numbers' mean KS, for judging a change to mst/aim on >= 10 runs.
#
#   bench/marginal_runs.sh BUILD_DIR TABLE METHOD EPS RUNS [--set k=v ...]
#     TABLE: credit or attrition (the CSVs in BUILD_DIR, as bench/marginal.sh)
# Prints one JSON line: table, method, epsilon, runs, acc mean/se, tv mean/se,
# seconds mean, and the extra arguments.
set -euo pipefail
build=$1 table=$2 m=$3 e=$4 runs=$5
shift 5
src=$(cd "$(dirname "$0")/.." && pwd)
if [ "$table" = credit ]; then
  args=(--csv "$build/credit_data.csv" --schema "$src/bench/credit_data.schema.json" --target Status)
else
  args=(--csv "$build/attrition.csv" --schema "$src/bench/attrition.schema.json" --target Attrition)
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq 1 "$runs"); do
  nice -n 5 "$build/bin/privgen-bench" credit "${args[@]}" --methods "$m" --eps "$e" "$@" 2>/dev/null \
    | grep '"method"' >> "$out"
done
python3 - "$out" "$table" "$*" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
acc = [r["acc_synth"] for r in rows]; tv = [r["tv_mean"] for r in rows]
ks = [r.get("ks_mean", float("nan")) for r in rows]
se = lambda v: st.stdev(v) / len(v) ** 0.5 if len(v) > 1 else float("nan")
print(json.dumps({"table": sys.argv[2], "method": rows[0]["method"], "epsilon": rows[0]["epsilon"],
                  "runs": len(rows), "acc": round(st.mean(acc), 4), "acc_se": round(se(acc), 4),
                  "tv": round(st.mean(tv), 4), "tv_se": round(se(tv), 4),
                  "ks": round(st.mean(ks), 4), "ks_se": round(se(ks), 4),
                  "seconds": round(st.mean(r["seconds"] for r in rows), 2),
                  "acc_real": rows[0]["acc_real"], "acc_majority": rows[0]["acc_majority"],
                  "args": sys.argv[3]}))
PY
