#!/usr/bin/env bash
# Runs one Check case of a replicas suite N times on a throwaway PostgreSQL
# cluster of its own, to measure how flaky it is:
#
#   tests/replicas/loop.sh BUILD SUITE CASE N
#   tests/replicas/loop.sh build-asan test_replicas_cross takeover 20
#
# One line per run (time, exit code, load average, Check's summary and any
# failure) on stdout; the last line counts the failed runs. Several loops
# may run at once: each has its own cluster (the suites' database names
# would collide on a shared one). Load the machine meanwhile to find races.
set -u
[ $# -eq 4 ] || { sed -n '2,12p' "$0"; exit 2; }
build=$1 suite=$2 case=$3 n=$4
src=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "$build" && pwd)/tests/$suite
[ -x "$bin" ] || { echo "no $bin (build it first)" >&2; exit 2; }
dir=$(mktemp -d /tmp/rplloop-XXXXXX)
trap '"$src/scripts/pgtest.sh" stop "$dir" >/dev/null 2>&1; rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM # the EXIT trap then stops the cluster
"$src/scripts/pgtest.sh" start "$dir" >/dev/null || exit 1
asan=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
failed=0
for i in $(seq 1 "$n"); do
  out=$(CK_RUN_CASE=$case CK_DEFAULT_TIMEOUT=300 OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive \
    ASAN_OPTIONS=$asan UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 PRIVGEN_SOURCE_DIR=$src \
    "$src/scripts/pgtest.sh" exec "$dir" loop "$bin" 2>&1)
  rc=$?
  [ $rc -eq 0 ] || failed=$((failed + 1))
  echo "$(date -u +%T) run $i rc $rc load $(cut -d' ' -f1 /proc/loadavg)" \
    "$(echo "$out" | grep -E '^[0-9]+%|:[FE]:' | tr '\n' ' ')"
done
echo "$suite/$case: $failed of $n runs failed"
