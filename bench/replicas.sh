#!/usr/bin/env bash
# bench/replicas.sh [BUILD_DIR] - issue 18's figures in one run (JSON lines):
# samples?n=64 throughput and p99 through HAProxy over 1 and 3 replicas with
# each replica's CPU, job claim latency, and kill -9 to running again. See
# bench/peers/replicas.py (also run by `make bench`) for what is measured and
# the BENCH_* settings. Needs wrk and haproxy (scripts/deps.sh --bench).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
if ! command -v wrk >/dev/null 2>&1 || ! command -v haproxy >/dev/null 2>&1; then
  bash scripts/deps.sh --bench
fi
[ -x "$build/bin/privgend" ] || { echo "bench/replicas.sh: no $build/bin/privgend (make build)" >&2; exit 1; }
PRIVGEN_BENCH="$build/bin/privgen-bench" exec /usr/bin/python3 bench/peers/replicas.py
