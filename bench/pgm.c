/* privgen-bench pgm: cost of the graphical-model fit (engine/pgm).
 *
 * Problems with a known truth (a random model on a fixed structure, N rows'
 * worth of its exact marginals plus Gaussian noise of std sigma; the tree's
 * truth has random potentials, the others are a short fit to skewed random
 * tables):
 *   tree: credit_data-sized, 14 attributes of 4..32 levels, the 13 pairs of
 *         a spanning tree and all 14 one-way marginals measured (MST's shape);
 *   aim:  20 attributes of 6..16 levels, 6 triples and 14 pairs (AIM-like
 *         cliques of 10^3-10^4 cells, ~10^5 cells in all), cold fit then a
 *         warm refit after one more measured pair;
 *   big:  (only with --only big) 7 attributes of 24 levels, two pairs of
 *         triangles of triples: two 4-cliques of 331776 cells (663552 in
 *         all), cold, warm after one more pair, cold again.
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
#include <zlib.h>

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

/* The tree problem's truth, independent of the fit: a model blob written
 * here (format in engine/pgm/pgm_io.c) on the junction tree of the pairs
 * {(i-1)/2, i}, clique i-1 holding pair i, with N(0, 1) potentials. */
static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static int tree_truth(const problem *p, pg_rng *r, double rows, pg_pgm_model **truth, pg_error *err)
{
    size_t cells = 0, d = p->nattr;
    for (size_t i = 1; i < d; i++) cells += p->sizes[(i - 1) / 2] * p->sizes[i];
    size_t n = 8 + 4 + 4 + 4 * d + 16 + 4 + (d - 1) * 13 + 8 * cells + 4;
    unsigned char *b = malloc(n), *q = b;
    memcpy(q, "PGPGM\r\n\0", 8), q += 8;
    put32(q, 1), q += 4;
    put32(q, (uint32_t)d), q += 4;
    for (size_t i = 0; i < d; i++) put32(q, (uint32_t)p->sizes[i]), q += 4;
    put64(q, rows), q += 8;
    put64(q, 1e9), q += 8;
    put32(q, (uint32_t)(d - 1)), q += 4;
    for (size_t i = 1; i < d; i++) {
        size_t pa = (i - 1) / 2;
        *q++ = 2;
        put32(q, (uint32_t)pa), put32(q + 4, (uint32_t)i), q += 8;
        put32(q, i == 1 ? 0xffffffffu : (uint32_t)(pa == 0 ? 0 : pa - 1)), q += 4;
    }
    for (size_t c = 0; c < cells; c++) put64(q, 1.0 * pg_rng_normal(r)), q += 8;
    put32(q, (uint32_t)crc32(crc32(0L, Z_NULL, 0), b, (uInt)(n - 4)));
    int rc = pg_pgm_load(b, n, truth, err);
    free(b);
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
    for (int which = 0; which < 3; which++) {
        problem p;
        memset(&p, 0, sizeof p);
        if (which == 0) {
            if (*only && strcmp(only, "tree")) continue;
            p.name = "tree";
            p.nattr = 14;
            for (size_t i = 0; i < 14; i++) p.sizes[i] = 4 + (i * 7) % 29;
            for (size_t i = 1; i < 14; i++) add(&p, 2, (i - 1) / 2, i, 0);
            for (size_t i = 0; i < 14; i++) add(&p, 1, i, 0, 0);
        } else if (which == 2) {
            if (!*only || strcmp(only, "big")) continue; /* only on request */
            p.name = "big";
            p.nattr = 7;
            for (size_t i = 0; i < 7; i++) p.sizes[i] = 24;
            add(&p, 3, 0, 1, 2);
            add(&p, 3, 1, 2, 3);
            add(&p, 3, 0, 1, 3);
            add(&p, 3, 3, 4, 5);
            add(&p, 3, 4, 5, 6);
            add(&p, 3, 3, 5, 6);
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
        int trc = which == 0 ? tree_truth(&p, &r, rows, &truth, &err)
                             : make_truth(&p, &r, rows, &truth, &err);
        if (trc || measure(&p, 0, truth, &r, sigma, &err)) {
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
        if (which >= 1) {
            /* One more measured pair (AIM's next round), warm from the fit. */
            add(&p, 2, 0, p.nattr - 1, 0);
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
