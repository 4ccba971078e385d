/* engine/core/cpu.h - one CPU budget shared by everything that computes in a
 * process: jobs, reports and sampling calls each take a share of the cores
 * for a bounded piece of work (a training step, a report stage, a block of
 * samples) and give it back.
 *
 * Guarantees:
 *  - the teams never oversubscribe the cores: non-urgent grants (jobs,
 *    reports) are only made out of free cores, so their sum is <= cores and
 *    an OpenMP team never competes with another team of the process for a
 *    core (no barrier waits on a worker descheduled for a sibling);
 *  - a user alone gets every core it asks for (up to cores, or up to the
 *    cores other processes leave free when the budget follows the load);
 *  - with k non-urgent users joined, an acquisition gets at most
 *    max(1, lendable / k) cores, and never more than are free: grants follow
 *    what is running, step by step; a non-urgent acquisition blocks while no
 *    core is free;
 *  - urgent users (sampling calls: short, latency-bound, on a request thread
 *    that exists anyway) never wait on training, as request handlers must
 *    not: with no core free they get 1 (their own thread, no team), else
 *    at most the free cores. So the threads in flight are <= cores plus the
 *    urgent calls that found no free core, each a single thread; their
 *    cores count as in use, so the next steps of the jobs take fewer.
 *
 * Usage: pg_cpu_join (a job when it starts running; a sampling call when it
 * starts), then pg_cpu_acquire / pg_cpu_release around each piece of work,
 * then pg_cpu_leave (which also releases what is still held, so error paths
 * need only the leave). A share belongs to one thread; the budget is
 * thread-safe and must outlive its shares. A NULL budget grants `want`
 * (clamped to >= 1) without bookkeeping: the unbudgeted case of benchmarks
 * and tests that run one computation.
 *
 * The grant is a thread count for the caller's OpenMP regions:
 * pg_cpu_use(grant) sets it for the calling thread (OpenMP's per-thread
 * nthreads ICV), so the kernels' parallel regions use exactly the grant.
 * Parallel regions of privgen wait passively (see daemon/privgend.c and
 * docs/benchmarks.md): the budget bounds the teams, passive waits make a
 * team that meets a foreign process harmless.
 */
#ifndef PG_CORE_CPU_H
#define PG_CORE_CPU_H

#include <stdbool.h>

#include "engine/core/error.h"

typedef struct pg_cpu_budget pg_cpu_budget;

/* cores <= 0: the online cores of the machine. */
int pg_cpu_budget_create(int cores, pg_cpu_budget **out, pg_error *err);
/* Frees the budget; every share must have left. NULL is a no-op. */
void pg_cpu_budget_destroy(pg_cpu_budget *b);
/* The cores of the budget (1 for NULL). */
int pg_cpu_budget_cores(const pg_cpu_budget *b);

/* Other processes' load: with following on, the budget reads the machine's
 * busy time (/proc/stat) at most every 200 ms, subtracts this process's own
 * CPU time, and lends out only the cores the rest of the machine leaves
 * free: min(cores, online cores - the foreign load rounded), at least 1. On
 * a 2-core box where another process keeps a core busy a job alone gets 1,
 * so no team waits at a barrier for a worker the kernel gave to someone
 * else. Off by default; no effect where /proc/stat cannot be read.
 * pg_cpu_budget_set_external fixes the foreign load instead (cores of the
 * machine kept busy by others, >= 0; negative: follow again): for tests,
 * and for callers that know better. */
void pg_cpu_budget_follow_load(pg_cpu_budget *b, bool on);
void pg_cpu_budget_set_external(pg_cpu_budget *b, double busy_cores);

/* A snapshot of the budget's state (for tests and metrics). */
typedef struct pg_cpu_stats {
    int cores;       /* size of the budget */
    int lendable;    /* cores it lends now: cores less other processes' load */
    double external; /* cores other processes kept busy (last estimate) */
    int in_use;      /* cores granted and not yet released */
    int users;       /* non-urgent shares joined */
    int waiting;     /* acquisitions blocked for a core */
    long grants;     /* acquisitions granted since creation */
    long waits;      /* acquisitions that had to block */
} pg_cpu_stats;
void pg_cpu_budget_stats(const pg_cpu_budget *b, pg_cpu_stats *out);

typedef struct pg_cpu_share {
    pg_cpu_budget *b;
    int held;    /* cores held now (0 between acquisitions) */
    bool urgent; /* never waits; not counted in the fair split */
    bool joined;
} pg_cpu_share;

/* Registers a user of the budget (b may be NULL). Never fails. */
void pg_cpu_join(pg_cpu_budget *b, bool urgent, pg_cpu_share *s);
/* Blocks until at least one core is free and returns the grant, 1..want
 * (want <= 0 or > cores means all cores). A share already holding cores
 * releases them first. */
int pg_cpu_acquire(pg_cpu_share *s, int want);
/* Gives back what the share holds (none: no-op). */
void pg_cpu_release(pg_cpu_share *s);
/* Releases and unregisters; the share may be joined again. Leaving a share
 * that never joined (zeroed) is a no-op. */
void pg_cpu_leave(pg_cpu_share *s);

/* Sets the calling thread's OpenMP team size to n (>= 1): what a grant is
 * for. Returns n. */
int pg_cpu_use(int n);

/* A short, latency-bound call (drawing samples) run under the budget: an
 * urgent share (never waits) of at most `cap` cores (0: no cap) that sets the
 * calling thread's OpenMP team size; end restores the team size and leaves.
 * b NULL: both are no-ops. What is computed must not depend on the grant. */
typedef struct pg_cpu_scope {
    pg_cpu_share share;
    int before; /* the thread's team size before begin */
} pg_cpu_scope;
void pg_cpu_scope_begin(pg_cpu_budget *b, int cap, pg_cpu_scope *sc);
void pg_cpu_scope_end(pg_cpu_scope *sc);

#endif
