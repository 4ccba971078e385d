#!/usr/bin/env bash
# aim's cost against epsilon (issue 27): one run of aim on credit_data (target
# Status, the issue 19 split) per epsilon, with its accuracy, process CPU
# seconds (user + system), wall seconds and the 1-minute load average when it
# started (the 2 cores are shared: compare CPU seconds across machines).
#
#   bench/marginal_eps.sh [BUILD_DIR] [EPS_LIST] [SET]   default build "1 5 10 20 50" ""
# SET is passed to privgen-bench --set (e.g. "aim.model_cells=8000000" for
# the bound before the auto value).
set -euo pipefail
build=${1:-build}
eps_list=${2:-1 5 10 20 50}
set_arg=${3:-}
src=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$build/credit_data.csv" ] || "$src/bench/credit_data.sh" "$build/credit_data.csv"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for e in $eps_list; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  extra=()
  [ -n "$set_arg" ] && extra=(--set "$set_arg")
  /usr/bin/time -f 'CPU %U %S %e' -o "$tmp" "$build/bin/privgen-bench" credit \
    --csv "$build/credit_data.csv" --schema "$src/bench/credit_data.schema.json" --target Status \
    --methods aim --eps "$e" "${extra[@]}" 2>/dev/null | grep '"method"' > "$tmp.line" || true
  read -r _ u s w < "$tmp"
  line=$(cat "$tmp.line")
  [ -n "$line" ] || line='{"bench": "credit", "method": "aim", "epsilon": '"$e"', "failed": true}'
  echo "${line%\}}, \"bench2\": \"marginal_eps\", \"cpu_seconds\": $(echo "$u + $s" | bc), \"wall_seconds\": $w, \"load1\": $load, \"set\": \"$set_arg\"}"
  rm -f "$tmp.line"
done
