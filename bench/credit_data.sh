#!/usr/bin/env bash
# Writes `credit_data` (4454 loan applications from the R package modeldata,
# Debian's r-cran-modeldata, installed by `scripts/deps.sh --bench`) as CSV
# with a header row; missing values are written NA (read as missing by
# engine/data/records.h), factors as their level names.
#
#   bench/credit_data.sh [OUT.csv]            default build/credit_data.csv
#   bench/credit_data.sh OUT.csv --check BIN  also runs BIN (privgen) schema
#                                             propose/check and a local
#                                             privatization on it
set -euo pipefail
out=${1:-build/credit_data.csv}
command -v Rscript >/dev/null 2>&1 || {
  echo "credit_data.sh: Rscript is missing: run scripts/deps.sh --bench" >&2
  exit 2
}
tmp="$out.tmp.$$"
trap 'rm -f "$tmp"' EXIT
# The data sit in the package's lazy-load database: data() loads them.
Rscript --vanilla -e '
  out <- commandArgs(trailingOnly = TRUE)[1]
  data(credit_data, package = "modeldata")
  write.csv(credit_data, out, row.names = FALSE)
  cat(sprintf("credit_data: %d rows, %d columns, %d missing values\n",
              nrow(credit_data), ncol(credit_data), sum(is.na(credit_data))), file = stderr())
' "$tmp"
mv "$tmp" "$out"
trap - EXIT

if [ "${2:-}" = "--check" ]; then
  bin=${3:?--check needs the privgen binary}
  "$bin" schema propose --in "$out" --out "${out%.csv}.proposed.json"
  "$bin" schema check --schema "$(dirname "$0")/credit_data.schema.json"
  "$bin" privatize --schema "$(dirname "$0")/credit_data.schema.json" --in "$out" \
    --out "${out%.csv}.ldp.csv" --epsilon 14
fi
