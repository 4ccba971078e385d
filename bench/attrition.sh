#!/usr/bin/env bash
# Writes modeldata's `attrition` (1470 employees, 31 columns, IBM HR sample)
# as CSV with a header row, factors as their level names. Its schema,
# bench/attrition.schema.json, takes bounds from domain knowledge (round
# numbers wider than the data), not from the rows.
#
#   bench/attrition.sh [OUT.csv]      default build/attrition.csv
set -euo pipefail
out=${1:-build/attrition.csv}
command -v Rscript >/dev/null 2>&1 || {
  echo "attrition.sh: Rscript is missing: run scripts/deps.sh --bench" >&2
  exit 2
}
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
Rscript --vanilla -e '
  out <- commandArgs(trailingOnly = TRUE)[1]
  data(attrition, package = "modeldata")
  write.csv(attrition, out, row.names = FALSE)
  cat(sprintf("attrition: %d rows, %d columns\n", nrow(attrition), ncol(attrition)),
      file = stderr())
' "$tmp"
mv "$tmp" "$out"
trap - EXIT
