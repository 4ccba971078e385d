#!/usr/bin/env bash
# Runs every benchmark with its peers; each prints JSON lines. Usage: bench/run.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
export PRIVGEN_BENCH="$build/bin/privgen-bench"
for peer in bench/peers/*.py; do
  [ -e "$peer" ] || continue
  echo "# $peer" >&2
  /usr/bin/python3 "$peer"
done
# Kernels and the service next to a competing process (issue 31); skip with
# PRIVGEN_BENCH_CONTEND=0.
if [ "${PRIVGEN_BENCH_CONTEND:-1}" != 0 ]; then
  echo "# bench/contend.sh" >&2
  bash bench/contend.sh "$build"
fi
