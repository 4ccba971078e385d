#!/usr/bin/env bash
# Every figure of issue 31 ("training under load") in one run, ~10 minutes on
# the 2-core box. Prints JSON lines (one per measurement) and a last line
# {"bench":"contend-summary",...} with the "done when" checks.
#
#   bench/contend.sh [BUILD_DIR]        (make bench-contend does the same)
#
# Env:
#   PRIVGEN_BASELINE=path/to/old/privgend  time "one job alone" with it too
#                                          (e.g. main's build before the budget)
#   PRIVGEN_LOAD_STEPS=N   steps per service job (default 2000: ~10-20 s a job, quiet)
#   CONTEND_ROUNDS=R       alternating rounds of the kernel benches (default 5)
#   CONTEND_PEERS=0        skip the POT/PyTorch ratio runs
#
# Kernels (alternating configurations, R rounds, medians): Sinkhorn
# 1000x1000 d 784 (reg 10, 50 iterations, as docs/benchmarks.md) and the MLP
# generator step (batch 400), each at 1 thread, 2 threads (a raw team) and 2
# threads through a load-following CPU budget (--budget, what privgend's jobs
# do), quiet and next to one busy-loop process (--contend). Service
# (bench/service_load.py): two dp_sinkhorn jobs one after the other
# (--workers 1) and together (--workers 2); one job alone (and with
# $PRIVGEN_BASELINE); N jobs with --workers N for N = 1, 2, 4 while a client
# asks for samples?n=64 at 100 req/s.
set -euo pipefail
build=${1:-build}
bench="$build/bin/privgen-bench"
privgend="$build/bin/privgend"
rounds=${CONTEND_ROUNDS:-5}
py=/usr/bin/python3
out=$(mktemp /tmp/contend.XXXXXX)
trap 'rm -f "$out"' EXIT
export PRIVGEN_LOAD_STEPS=${PRIVGEN_LOAD_STEPS:-2000}

emit() { # tags a JSON line with its configuration, prints and keeps it
  local tag=$1
  $py -c '
import json, sys
for line in sys.stdin:
    try:
        d = json.loads(line)
    except ValueError:
        continue
    d["config"] = sys.argv[1]
    print(json.dumps(d), flush=True)' "$tag" | tee -a "$out"
}

sk=(sinkhorn --n 1000 --m 1000 --d 784 --reg 10 --iters 50 --reps 5)
nn=(nn --arch mlp --batch 400 --steps 20)
for r in $(seq "$rounds"); do
  for c in "" --contend; do
    for t in "1" "2" "2 --budget"; do
      # shellcheck disable=SC2086
      "$bench" "${sk[@]}" --threads $t $c | emit "sinkhorn t$t $c"
      # shellcheck disable=SC2086
      "$bench" "${nn[@]}" --threads $t $c | emit "mlp t$t $c"
    done
  done
done

if [ "${CONTEND_PEERS:-1}" != 0 ]; then
  PRIVGEN_BENCH="$bench" $py bench/peers/sinkhorn.py --threads 2 | emit "peer sinkhorn"
  PRIVGEN_BENCH="$bench" $py bench/peers/nn.py --threads 2 --steps 10 --repeat 3 --case mlp |
    emit "peer mlp"
fi

svc() { $py bench/service_load.py --privgend "$privgend" "$@"; }
svc --scenario seq | emit "service seq"
svc --scenario par | emit "service par"
svc --scenario alone | emit "service alone"
if [ -n "${PRIVGEN_BASELINE:-}" ]; then
  $py bench/service_load.py --privgend "$PRIVGEN_BASELINE" --scenario alone |
    emit "service alone baseline"
fi
for n in 1 2 4; do
  svc --scenario sampling --workers "$n" | emit "service sampling $n"
done

$py - "$out" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(config, key):
    v = [r[key] for r in rows if r.get("config", "").strip() == config and key in r]
    return statistics.median(v) if v else None
def one(config):
    return next((r for r in rows if r.get("config") == config), None)
s = {"bench": "contend-summary"}
for k, key in (("sinkhorn", "ms_per_iter_median"), ("mlp", "ms_step")):
    for c in ("", " --contend"):
        for t in ("1", "2", "2 --budget"):
            s[f"{k} t{t}{c}".replace(" --", " ")] = med(f"{k} t{t} {c.strip()}".strip(), key)
    t1, t2, tb = (s[f"{k} t{t} contend"] for t in ("1", "2", "2 budget"))
    s[f"{k}_contend_2budget_over_1"] = round(tb / t1, 3) if tb and t1 else None
    s[f"{k}_contend_2raw_over_1"] = round(t2 / t1, 3) if t2 and t1 else None
q = s["sinkhorn t2"]
s["sinkhorn_quiet_t2_over_0.40"] = round(q / 0.40, 3) if q else None
seq, par = one("service seq"), one("service par")
if seq and par:
    s["two_jobs_together_over_sequential"] = round(par["seconds"] / seq["seconds"], 3)
alone, base = one("service alone"), one("service alone baseline")
if alone and base:
    s["one_job_alone_over_baseline"] = round(alone["seconds"] / base["seconds"], 3)
for n in (1, 2, 4):
    r = one(f"service sampling {n}")
    if r:
        s[f"workers{n}"] = {"jobs_per_hour": r["jobs_per_hour"], "cpu_ms_per_step": r["cpu_ms_per_step"],
                            "p50_ms": r["samples"]["p50_ms"], "p99_ms": r["samples"]["p99_ms"]}
s["checks"] = {
    "sinkhorn_contend_2_no_slower_than_1": (s.get("sinkhorn_contend_2budget_over_1") or 9) <= 1.0,
    "mlp_contend_2_no_slower_than_1": (s.get("mlp_contend_2budget_over_1") or 9) <= 1.0,
    "sinkhorn_quiet_within_1.2x_of_0.40": (s.get("sinkhorn_quiet_t2_over_0.40") or 9) <= 1.2,
    "two_jobs_together_le_1.1x_sequential": (s.get("two_jobs_together_over_sequential") or 9) <= 1.1,
    "one_job_alone_no_slower": (s.get("one_job_alone_over_baseline") or 0) <= 1.0 if base else None,
    "samples_p99_lt_50ms_two_jobs": ((s.get("workers2") or {}).get("p99_ms") or 999) < 50,
}
s["loadavg"] = __import__("os").getloadavg()
print(json.dumps(s))
EOF
