/* bench/bench.h - privgen-bench subcommands.
 *
 * Each bench/<name>.c registers one subcommand with PG_BENCH_REGISTER; the
 * dispatcher in main.c finds it by name, so adding a benchmark touches no other
 * file. A subcommand prints exactly one JSON object per result line on stdout
 * and returns a process exit code (0 ok, 1 failure, 2 usage).
 */
#ifndef PG_BENCH_H
#define PG_BENCH_H

#include <stddef.h>

typedef int (*pg_bench_fn)(int argc, char **argv);

void pg_bench_register(const char *name, const char *summary, pg_bench_fn fn);

#define PG_BENCH_REGISTER(name, summary, fn)                                                       \
    __attribute__((constructor)) static void pg_bench_register_##fn(void)                          \
    {                                                                                              \
        pg_bench_register(name, summary, fn);                                                      \
    }

/* Wall-clock milliseconds from a monotonic clock. */
double pg_bench_now_ms(void);

/* Minimal "--key value" option lookup: returns the value after `key` in argv,
 * or `dflt` when absent. pg_bench_has reports a bare flag. */
const char *pg_bench_opt(int argc, char **argv, const char *key, const char *dflt);
int pg_bench_has(int argc, char **argv, const char *key);

/* --contend: forks a child that keeps one core busy (a bare loop) until
 * pg_bench_contend_stop, so a kernel is timed next to a competing CPU-bound
 * process. Returns the child's pid, 0 without the flag, -1 when fork fails.
 * The child dies with its parent. */
int pg_bench_contend_start(int argc, char **argv);
void pg_bench_contend_stop(int pid);

/* --budget: the engine's CPU budget (engine/core/cpu.h) of `threads` cores,
 * following the machine's load as privgend's does; NULL without the flag
 * (the kernel then runs `threads` threads whatever else runs). Takes its
 * first load estimate before returning (0.3 s): start any contender first.
 * The caller destroys it. */
struct pg_cpu_budget;
struct pg_cpu_budget *pg_bench_budget(int argc, char **argv, int threads);

#endif
