/* privgen-bench pgm: cost of the graphical-model fit (engine/pgm).
 *
 * Two problems with a known truth (a random model on a fixed structure,
 * N rows' worth of exact marginals plus Gaussian noise of std sigma):
 *   tree: credit_data-sized, 14 attributes of 4..32 levels, the 13 pairs of
 *         a spanning tree and all 14 one-way marginals measured (MST's shape);
 *   aim:  20 attributes of 6..16 levels, 6 triples and 14 pairs (AIM-like
 *         cliques of 10^3-10^4 cells, ~10^5 cells in all), cold fit then a
 *         warm refit after one more measured pair.
 * Prints one JSON line per problem: CPU ms (process), iterations, final loss,
 * duality gap, model cells, and the largest error of the fitted measured
 * marginals against the truth relative to N. Options: --sigma S (default
 * 10), --rows N (default 30000), --iters K (default 2000), --tol T (1e-6),
 * --seed s.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "engine/core/rng.h"
#include "engine/pgm/pgm.h"

static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

typedef struct problem {
    const char *name;
    size_t nattr;
    size_t sizes[32];
    size_t nm;
    pg_pgm_measure m[64];
    double *truth[64];
} problem;

/* The truth: a model fitted (loosely) to skewed random pseudo-marginals of
 * the measured sets, so it has real interactions on exactly that structure;
 * its exact marginals are then measured with noise. */
static int make_truth(problem *p, pg_rng *r, double rows, pg_pgm_model **truth, pg_error *err)
{
    /* Random pseudo-measurements (positive, skewed) make a varied truth. */
    double *tmp[64];
    for (size_t i = 0; i < p->nm; i++) {
        size_t cells = 1;
        for (size_t a = 0; a < p->m[i].k; a++) cells *= p->sizes[p->m[i].attrs[a]];
        tmp[i] = malloc(cells * sizeof **tmp);
        for (size_t j = 0; j < cells; j++)
            tmp[i][j] = rows / (double)cells * exp(1.5 * pg_rng_normal(r));
        p->m[i].y = tmp[i];
        p->m[i].sigma = 1;
    }
    pg_pgm_fit_opts o = {.max_iters = 50, .total = rows};
    int rc = pg_pgm_fit(p->sizes, p->nattr, p->m, p->nm, &o, NULL, truth, err);
    for (size_t i = 0; i < p->nm; i++) free(tmp[i]);
    return rc;
}

static int measure(problem *p, size_t from, const pg_pgm_model *truth, pg_rng *r, double sigma,
                   pg_error *err)
{
    for (size_t i = from; i < p->nm; i++) {
        size_t cells = 1;
        for (size_t a = 0; a < p->m[i].k; a++) cells *= p->sizes[p->m[i].attrs[a]];
        p->truth[i] = malloc(cells * sizeof(double));
        double *y = malloc(cells * sizeof *y);
        int rc = pg_pgm_marginal(truth, p->m[i].attrs, p->m[i].k, p->truth[i], err);
        if (rc) return rc;
        for (size_t j = 0; j < cells; j++) y[j] = p->truth[i][j] + sigma * pg_rng_normal(r);
        p->m[i].y = y;
        p->m[i].sigma = sigma;
    }
    return PG_OK;
}

static double max_err(const problem *p, const pg_pgm_model *m, double rows)
{
    double worst = 0;
    for (size_t i = 0; i < p->nm; i++) {
        size_t cells = 1;
        for (size_t a = 0; a < p->m[i].k; a++) cells *= p->sizes[p->m[i].attrs[a]];
        double *q = malloc(cells * sizeof *q), e = 0;
        if (pg_pgm_marginal(m, p->m[i].attrs, p->m[i].k, q, NULL) == PG_OK)
            for (size_t j = 0; j < cells; j++) e += fabs(q[j] - p->truth[i][j]);
        else
            e = INFINITY;
        free(q);
        if (e / rows > worst) worst = e / rows;
    }
    return worst;
}

static void add(problem *p, size_t k, size_t a, size_t b, size_t c)
{
    pg_pgm_measure *m = &p->m[p->nm++];
    memset(m, 0, sizeof *m);
    m->k = k;
    m->attrs[0] = a;
    m->attrs[1] = b;
    m->attrs[2] = c;
}

static void report(const char *name, const char *phase, double ms, const pg_pgm_model *m,
                   double err_l1)
{
    pg_pgm_fit_stats st;
    pg_pgm_model_stats(m, &st);
    printf("{\"bench\":\"pgm\",\"problem\":\"%s\",\"phase\":\"%s\",\"cpu_ms\":%.1f,\"iters\":%zu,"
           "\"converged\":%d,\"loss\":%.6g,\"gap\":%.3g,\"cells\":%.0f,\"cliques\":%zu,"
           "\"max_tv_vs_truth\":%.4g}\n",
           name, phase, ms, st.iters, st.converged, st.loss, st.gap, pg_pgm_model_cells(m),
           pg_pgm_model_ncliques(m), 0.5 * err_l1);
    fflush(stdout);
}

static int bench_pgm(int argc, char **argv)
{
    double sigma = atof(pg_bench_opt(argc, argv, "--sigma", "10"));
    double rows = atof(pg_bench_opt(argc, argv, "--rows", "30000"));
    size_t iters = strtoull(pg_bench_opt(argc, argv, "--iters", "2000"), NULL, 10);
    double tol = atof(pg_bench_opt(argc, argv, "--tol", "1e-6"));
    uint64_t seed = strtoull(pg_bench_opt(argc, argv, "--seed", "1"), NULL, 10);
    const char *only = pg_bench_opt(argc, argv, "--only", "");
    pg_rng r;
    pg_rng_seeded(&r, seed, 0);
    pg_error err = {0};
    for (int which = 0; which < 2; which++) {
        problem p;
        memset(&p, 0, sizeof p);
        if (which == 0) {
            if (*only && strcmp(only, "tree")) continue;
            p.name = "tree";
            p.nattr = 14;
            for (size_t i = 0; i < 14; i++) p.sizes[i] = 4 + (i * 7) % 29;
            for (size_t i = 1; i < 14; i++) add(&p, 2, (i - 1) / 2, i, 0);
            for (size_t i = 0; i < 14; i++) add(&p, 1, i, 0, 0);
        } else {
            if (*only && strcmp(only, "aim")) continue;
            p.name = "aim";
            p.nattr = 20;
            for (size_t i = 0; i < 20; i++) p.sizes[i] = 8 + (i * 7) % 17;
            /* Overlapping triples around a cycle (fill edges make 4-cliques)
             * and a chain of pairs. */
            size_t tri[7][3] = {{0, 1, 2}, {1, 2, 3}, {3, 4, 5},  {5, 6, 7},
                                {7, 8, 9}, {0, 5, 9}, {9, 10, 11}};
            for (size_t t = 0; t < 7; t++) add(&p, 3, tri[t][0], tri[t][1], tri[t][2]);
            for (size_t i = 11; i < 19; i++) add(&p, 2, i, i + 1, 0);
            for (size_t i = 0; i < 6; i++) add(&p, 1, 2 * i, 0, 0);
        }
        pg_pgm_model *truth = NULL, *fit = NULL, *warm = NULL;
        if (make_truth(&p, &r, rows, &truth, &err) || measure(&p, 0, truth, &r, sigma, &err)) {
            fprintf(stderr, "privgen-bench pgm: %s\n", err.msg);
            return 1;
        }
        pg_pgm_fit_opts o = {.max_iters = iters, .tol = tol, .max_cells = 1e7};
        double t0 = cpu_ms();
        if (pg_pgm_fit(p.sizes, p.nattr, p.m, p.nm, &o, NULL, &fit, &err)) {
            fprintf(stderr, "privgen-bench pgm: %s\n", err.msg);
            return 1;
        }
        report(p.name, "cold", cpu_ms() - t0, fit, max_err(&p, fit, rows));
        if (which == 1) {
            /* One more measured pair (AIM's next round), warm from the fit. */
            add(&p, 2, 0, 19, 0);
            if (measure(&p, 0, truth, &r, sigma, &err)) return 1;
            t0 = cpu_ms();
            if (pg_pgm_fit(p.sizes, p.nattr, p.m, p.nm, &o, fit, &warm, &err)) {
                fprintf(stderr, "privgen-bench pgm: %s\n", err.msg);
                return 1;
            }
            report(p.name, "warm", cpu_ms() - t0, warm, max_err(&p, warm, rows));
            pg_pgm_model_free(warm);
            pg_pgm_model *cold = NULL;
            t0 = cpu_ms();
            if (pg_pgm_fit(p.sizes, p.nattr, p.m, p.nm, &o, NULL, &cold, &err)) return 1;
            report(p.name, "cold_after", cpu_ms() - t0, cold, max_err(&p, cold, rows));
            pg_pgm_model_free(cold);
        }
        /* Sampling speed: 10^6 rows. */
        size_t n = 1000000;
        uint32_t *codes = malloc(n * p.nattr * sizeof *codes);
        pg_rng sr;
        pg_rng_seeded(&sr, 9, 1);
        t0 = cpu_ms();
        pg_pgm_sample(fit, &sr, n, codes, &err);
        printf("{\"bench\":\"pgm\",\"problem\":\"%s\",\"phase\":\"sample\",\"rows\":%zu,\"cpu_ms\":"
               "%.1f}\n",
               p.name, n, cpu_ms() - t0);
        free(codes);
        for (size_t i = 0; i < p.nm; i++) {
            free((void *)p.m[i].y);
            free(p.truth[i]);
        }
        pg_pgm_model_free(truth);
        pg_pgm_model_free(fit);
    }
    return 0;
}

PG_BENCH_REGISTER("pgm", "graphical-model fit, warm refit and sampling (engine/pgm)", bench_pgm)
