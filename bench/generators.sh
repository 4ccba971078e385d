#!/usr/bin/env bash
# The central generators on typed tables (issue 28): dp_sinkhorn and swd_gen
# with their labels, on credit_data and attrition, RUNS runs each, then a
# table of mean (min-max) accuracy and categorical TV per (table, method,
# epsilon) next to the real and majority rates. Extra arguments go to every
# privgen-bench call (e.g. --set 'encoding.quantile_map=false' for the old
# encoding, --set 'calibration.class_means=false' for dp_sinkhorn without the per-class
# calibration of its samples, issue 28 fourth pass; --set 'calibration.numeric="shift"' for
# the numbers shifted onto class means instead of mapped onto the per-class CDFs, fifth pass;
# --set 'calibration.independence=0' for dp_sinkhorn as before the sixth pass: the generator's
# within-class dependence, and the releases' noise of the fifth pass with it).
#
#   bench/generators.sh [--runs 3] [--methods dp_sinkhorn,swd_gen] [--eps 1000,5] [ARGS...]
#
# Needs build/credit_data.csv (bench/credit_data.sh) and build/attrition.csv
# (bench/attrition.sh). Each run prints its process CPU time on stderr.
set -euo pipefail
runs=3 methods=dp_sinkhorn,swd_gen eps=1000,5
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --methods) methods=$2; shift 2 ;;
    --eps) eps=$2; shift 2 ;;
    *) break ;;
  esac
done
bench=${PG_BENCH:-build/bin/privgen-bench}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for table in credit attrition; do
  extra=()
  [ "$table" = attrition ] && extra=(--csv build/attrition.csv --schema bench/attrition.schema.json)
  for i in $(seq "$runs"); do
    /usr/bin/time -f "$table run $i: cpu %U+%S s, wall %e s" \
      "$bench" credit --label "${extra[@]}" --methods "$methods" --eps "$eps" "$@" |
      sed "s/^{/{\"table\": \"$table\", /" >>"$out"
  done
done
python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
groups = {}
for r in rows:
    groups.setdefault((r["table"], r["method"], r["epsilon"]), []).append(r)
print("| table | method | epsilon | accuracy: mean (min-max) | runs | TV: mean (min-max) | real | majority |")
print("|---|---|---|---|---|---|---|---|")
for (t, m, e), g in groups.items():
    a = [r["acc_synth"] for r in g]
    tv = [r["tv_mean"] for r in g]
    print(f"| {t} | {m} | {e:g} | {sum(a)/len(a):.3f} ({min(a):.3f}-{max(a):.3f}) | "
          + " / ".join(f"{x:.3f}" for x in a)
          + f" | {sum(tv)/len(tv):.3f} ({min(tv):.3f}-{max(tv):.3f}) | {g[0]['acc_real']:.3f} | {g[0]['acc_majority']:.3f} |")
PY
