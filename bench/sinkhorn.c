/* privgen-bench sinkhorn: per-iteration cost of log-domain Sinkhorn.
 *
 * With --iters N it runs exactly N iterations at reg from zero potentials,
 * uniform weights and no eps-scaling (unless --scaling), like POT's
 * sinkhorn2(method='sinkhorn_log', numItermax=N, stopThr=0). ms_exp_limit is
 * the time of n*m float exp evaluations (the solver's own vectorized exp, on
 * a cache-resident buffer, same threads): the compute floor of one
 * half-iteration. Times are the best of --reps runs (default 2); with
 * --cpu-clock they are process CPU time (use with --threads 1 on a loaded
 * machine to get the time on a dedicated core).
 *
 * --contend runs the whole benchmark next to a child process that keeps one
 * core busy; --budget draws each solve's thread count from a CPU budget of
 * --threads cores that follows the machine's load (engine/core/cpu.h, as
 * privgend's jobs do). ms_per_iter_median is the median over the reps, the
 * figure to compare under load; "granted" is the mean thread count the
 * budget granted (threads without --budget). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "engine/core/alloc.h"
#include "engine/core/cpu.h"
#include "engine/core/rng.h"
#include "engine/data/file.h"
#include "engine/data/npy.h"
#include "engine/ot/sinkhorn.h"

static int load_npy(const char *path, pg_mat *out, float **owned)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    pg_error err = {0};
    pg_npy_header h;
    float *data = NULL;
    if (pg_file_read(path, (size_t)1 << 32, &buf, &len, &err) ||
        pg_npy_read(buf, len, &h, &data, &err)) {
        free(buf);
        fprintf(stderr, "privgen-bench: %s: %s\n", path, err.msg);
        return -1;
    }
    free(buf);
    if (h.ndim != 2) {
        fprintf(stderr, "privgen-bench: %s: expected a 2-D array\n", path);
        pg_free(data);
        return -1;
    }
    *out = pg_mat_view(data, h.shape[0], h.shape[1]);
    *owned = data;
    return 0;
}

/* --cpu-clock: time by process CPU time instead of wall clock. On a shared
 * machine with --threads 1 this is the time on a dedicated core. */
static int use_cpu_clock;

static double now_ms(void)
{
    if (!use_cpu_clock) return pg_bench_now_ms();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Time of `halves` half-iterations' worth of exps (count each), as one
 * parallel loop like the solver's; divided by `halves` it is ms_exp_limit.
 * Run right after a solve of the same length, so both see the same load. */
static double exp_limit_ms(size_t count, size_t halves)
{
    /* 4096 values in [-20, 0] (typical (h - C)/reg), reused: no memory traffic. */
    enum { B = 4096 };
    static float v[B];
    for (int i = 0; i < B; i++) v[i] = -20.0f * (float)i / B;
    size_t blocks = (count + B - 1) / B;
    volatile float sink = 0;
    double t0 = now_ms();
    for (size_t h = 0; h < halves; h++) {
        float s = 0;
#pragma omp parallel for reduction(+ : s) schedule(static) if (count >= ((size_t)1 << 18))
        for (size_t b = 0; b < blocks; b++) s += pg_ot_expsum(v, B);
        sink += s;
    }
    (void)sink;
    return (now_ms() - t0) / (double)halves;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int bench_sinkhorn(int argc, char **argv)
{
    const char *xp = pg_bench_opt(argc, argv, "--x", NULL),
               *yp = pg_bench_opt(argc, argv, "--y", NULL);
    const char *cname = pg_bench_opt(argc, argv, "--cost", "sqeuclidean");
    float reg = strtof(pg_bench_opt(argc, argv, "--reg", "0.1"), NULL);
    int iters = atoi(pg_bench_opt(argc, argv, "--iters", "100"));
    int threads = atoi(pg_bench_opt(argc, argv, "--threads", "2"));
    float scaling = strtof(pg_bench_opt(argc, argv, "--scaling", "0"), NULL);
    float tol = strtof(pg_bench_opt(argc, argv, "--tol", "0"), NULL);
    int reps = atoi(pg_bench_opt(argc, argv, "--reps", "2"));
    pg_error err = {0};
    pg_ot_cost cost;
    if (reps < 1 || iters < 1) {
        fprintf(stderr, "privgen-bench sinkhorn: --reps and --iters must be positive\n");
        return 2;
    }
    if (pg_ot_cost_parse(cname, &cost, &err)) {
        fprintf(stderr, "privgen-bench sinkhorn: %s\n", err.msg);
        return 2;
    }
    use_cpu_clock = pg_bench_has(argc, argv, "--cpu-clock");
    threads = pg_threads_set(threads);
    if (reps > 64) reps = 64;
    int contender = pg_bench_contend_start(argc, argv);
    pg_cpu_budget *budget = pg_bench_budget(argc, argv, threads);
    pg_cpu_share share;
    pg_cpu_join(budget, false, &share);
    double solves[64], granted = 0;
    pg_mat x, y;
    float *xo = NULL, *yo = NULL;
    if (xp || yp) {
        if (!xp || !yp) {
            fprintf(stderr, "privgen-bench sinkhorn: give both --x and --y\n");
            return 2;
        }
        if (load_npy(xp, &x, &xo) || load_npy(yp, &y, &yo)) {
            pg_free(xo);
            return 1;
        }
    } else {
        size_t n = strtoul(pg_bench_opt(argc, argv, "--n", "1000"), NULL, 10);
        size_t m = strtoul(pg_bench_opt(argc, argv, "--m", "1000"), NULL, 10);
        size_t d = strtoul(pg_bench_opt(argc, argv, "--d", "784"), NULL, 10);
        uint64_t seed = strtoull(pg_bench_opt(argc, argv, "--seed", "0"), NULL, 10);
        xo = pg_alloc_f32(n * d), yo = pg_alloc_f32(m * d);
        if (!xo || !yo || !n || !m || !d) {
            fprintf(stderr, "privgen-bench sinkhorn: bad sizes\n");
            pg_free(xo), pg_free(yo);
            return 2;
        }
        pg_rng r;
        pg_rng_seeded(&r, seed, 0);
        pg_rng_fill_uniform(&r, xo, n * d, -1, 1);
        pg_rng_fill_uniform(&r, yo, m * d, -1, 1);
        x = pg_mat_view(xo, n, d), y = pg_mat_view(yo, m, d);
    }
    int rc = 1;
    pg_ot_ws ws = {0};
    if (pg_ot_ws_init(&ws, x.rows, y.rows, x.cols, &err)) goto out;
    /* Small-d squared Euclidean costs are computed on the fly inside the
     * iterations (pg_ot_sinkhorn decides): no matrix to build, and the time
     * per iteration includes that work. */
    bool online = cost.kind == PG_OT_SQEUCLIDEAN && x.cols <= PG_OT_ONLINE_MAX_D;
    pg_mat C = pg_ot_ws_cost(&ws, x.rows, y.rows);
    double t0 = now_ms(), t_cost = 0.0;
    if (!online) {
        if (pg_ot_cost_matrix(&cost, &x, NULL, &y, NULL, &C, ws.scratch, &err)) goto out;
        t_cost = now_ms() - t0;
    }
    pg_ot_cloud cx = {x, NULL, NULL}, cy = {y, NULL, NULL};
    pg_sinkhorn_opts o = pg_sinkhorn_defaults(reg);
    o.tol = tol;
    o.max_iter = iters;
    o.scaling = scaling;
    pg_ot_result res;
    /* Best of --reps solves, each followed by its exp-limit twin. */
    double t_solve = 1e30, t_exp = 1e30;
    for (int r = 0; r < reps; r++) {
        int g = budget ? pg_cpu_use(pg_cpu_acquire(&share, threads)) : threads;
        granted += g;
        t0 = now_ms();
        if (online ? pg_ot_sinkhorn(&ws, &cost, &cx, &cy, &o, &res, NULL, NULL, &err)
                   : pg_sinkhorn_solve(&ws, x.rows, y.rows, NULL, NULL, &o, &res, &err))
            goto out;
        double ts = now_ms() - t0;
        pg_cpu_release(&share);
        solves[r] = ts;
        double te = exp_limit_ms(x.rows * y.rows, 2 * (size_t)res.iters);
        if (ts < t_solve) t_solve = ts;
        if (te < t_exp) t_exp = te;
    }
    printf("{\"bench\":\"sinkhorn\",\"n\":%zu,\"m\":%zu,\"d\":%zu,\"cost\":\"%s\",\"reg\":%g,"
           "\"iters\":%d,\"threads\":%d,\"ms_total\":%.3f,\"ms_per_iter\":%.4f,"
           "\"ms_cost_matrix\":%.3f,\"ms_exp_limit\":%.4f,\"value\":%.9g,"
           "\"transport_cost\":%.9g,\"marginal_error\":%.3g,\"lse_redo\":%zu,"
           "\"cost_online\":%s,\"ms_per_iter_median\":%.4f,\"contend\":%s,\"budget\":%s,"
           "\"granted\":%.2f}\n",
           x.rows, y.rows, x.cols, cname, (double)reg, res.iters, threads, t_cost + t_solve,
           t_solve / res.iters, t_cost, t_exp, res.value, res.transport_cost, res.marginal_error,
           res.lse_redo, res.cost_online ? "true" : "false", median_of(solves, reps) / res.iters,
           contender > 0 ? "true" : "false", budget ? "true" : "false", granted / reps);
    rc = 0;
out:
    pg_bench_contend_stop(contender);
    pg_cpu_leave(&share);
    pg_cpu_budget_destroy(budget);
    if (rc) fprintf(stderr, "privgen-bench sinkhorn: %s\n", err.msg);
    pg_ot_ws_free(&ws);
    pg_free(xo), pg_free(yo);
    return rc;
}

PG_BENCH_REGISTER("sinkhorn", "log-domain Sinkhorn per-iteration time", bench_sinkhorn)
