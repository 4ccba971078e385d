/* privgen-bench marginal-speed: mst (or aim) on a large synthetic typed table,
 * timed phase by phase (wall and this process's CPU time), with the peak
 * resident memory. Issue 27: mst on 1 000 000 rows x 15 columns.
 *
 *   privgen-bench marginal-speed [--rows 1000000] [--method mst] [--eps 1]
 *                                [--threads 1] [--adaptive true|false]
 *
 * Columns: 5 categorical (6 levels), 5 integer [0, 100], 5 continuous
 * [0, 1000] (one log-scaled), chained so each depends on the previous one.
 * Rows are built in memory and lent to create(); the trainer reads them in
 * passes (engine/data/rowsrc.h) and keeps no copy. The service streams them
 * from storage instead (bench/mst_stream.py measures that). One JSON line. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench/bench.h"
#include "engine/core/alloc.h"
#include "engine/core/rng.h"
#include "engine/data/dataset.h"
#include "engine/data/table.h"
#include "engine/methods/method.h"

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static long peak_rss_mb(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss / 1024;
}

static int bench_marginal_speed(int argc, char **argv)
{
    size_t n = strtoull(pg_bench_opt(argc, argv, "--rows", "1000000"), NULL, 10);
    const char *method = pg_bench_opt(argc, argv, "--method", "mst");
    double eps = atof(pg_bench_opt(argc, argv, "--eps", "1"));
    int threads = atoi(pg_bench_opt(argc, argv, "--threads", "1"));
    json_t *cols = json_array();
    for (int k = 0; k < 15; k++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", k);
        if (k % 3 == 0)
            json_array_append_new(cols, json_pack("{s:s,s:s,s:[s,s,s,s,s,s]}", "name", name, "type",
                                                  "categorical", "categories", "a", "b", "c", "d",
                                                  "e", "f"));
        else if (k % 3 == 1)
            json_array_append_new(cols, json_pack("{s:s,s:s,s:i,s:i}", "name", name, "type",
                                                  "integer", "min", 0, "max", 100));
        else
            json_array_append_new(cols, json_pack("{s:s,s:s,s:f,s:f,s:s}", "name", name, "type",
                                                  "continuous", "min", 0.0, "max", 1000.0, "scale",
                                                  k == 2 ? "log" : "linear"));
    }
    json_t *sj = json_pack("{s:o}", "columns", cols);
    pg_table *t = NULL;
    pg_error err = {0};
    if (pg_table_from_json(sj, &t, &err)) {
        fprintf(stderr, "marginal-speed: %s\n", err.msg);
        return 1;
    }
    json_decref(sj);
    size_t w = t->width;
    double t0 = pg_bench_now_ms(), c0 = cpu_s();
    float *x = pg_alloc_f32(n * w);
    if (!x) return 1;
    pg_rng rng;
    pg_rng_seeded(&rng, 1, 0);
    for (size_t i = 0; i < n; i++) {
        float *row = x + i * w;
        memset(row, 0, w * sizeof *row);
        double prev = pg_rng_uniform(&rng);
        for (size_t c = 0; c < 15; c++) {
            double u = 0.7 * prev + 0.3 * pg_rng_uniform(&rng); /* chained dependence */
            pg_table_value v = {0};
            if (t->cols[c].type == PG_COL_CATEGORICAL)
                v.cat = (size_t)fmin(5, floor(u * 6));
            else if (t->cols[c].type == PG_COL_INTEGER)
                v.num = floor(u * 100);
            else
                v.num = 1000 * u * u;
            pg_table_encode_value(t, c, &v, PG_TABLE_BOUNDS_CLAMP, row, NULL);
            prev = u;
        }
    }
    double gen_s = (pg_bench_now_ms() - t0) / 1000;
    pg_dataset ds;
    size_t shape[1] = {w};
    if (pg_dataset_adopt(&ds, x, NULL, n, shape, 1, 0, (float)t->lo, (float)t->hi, &err)) return 1;
    pg_data_desc desc = {.n = n,
                         .d = w,
                         .ndim = 1,
                         .shape = {w},
                         .lo = (float)t->lo,
                         .hi = (float)t->hi,
                         .model = PG_PRIVACY_CENTRAL,
                         .cap_epsilon = 100,
                         .cap_delta = 1e-6,
                         .table = t};
    pg_job_data in = {.desc = &desc, .rows = &ds};
    const pg_method *m = pg_method_find(method);
    char sbuf[256];
    const char *adaptive = pg_bench_opt(argc, argv, "--adaptive", NULL);
    if (adaptive)
        snprintf(sbuf, sizeof sbuf,
                 "{\"seed\":1,\"privacy\":{\"epsilon\":%g},\"discretize\":{\"adaptive\":%s}}", eps,
                 strcmp(adaptive, "false") ? "true" : "false");
    else
        snprintf(sbuf, sizeof sbuf, "{\"seed\":1,\"privacy\":{\"epsilon\":%g}}", eps);
    json_t *spec = json_loads(sbuf, 0, NULL), *r = NULL;
    pg_spec_errors e = {0};
    double t1 = pg_bench_now_ms(), c1 = cpu_s();
    int rc = m->validate(spec, &in, &r, &e, &err);
    pg_trainer *tr = NULL;
    if (!rc) rc = m->create(r, &in, threads, &tr, &err);
    double create_s = (pg_bench_now_ms() - t1) / 1000, create_cpu = cpu_s() - c1;
    pg_step_report rep = {0};
    long steps = 0;
    double t2 = pg_bench_now_ms(), c2 = cpu_s();
    while (!rc && !rep.done) {
        rc = m->step(tr, &rep, &err);
        steps++;
    }
    double train_s = (pg_bench_now_ms() - t2) / 1000, train_cpu = cpu_s() - c2;
    pg_snapshot *snap = NULL;
    size_t ns = 100000;
    float *syn = pg_alloc_f32(ns * w);
    double t3 = pg_bench_now_ms(), c3 = cpu_s();
    if (!rc) rc = m->snapshot(tr, &snap, &err);
    if (!rc) rc = pg_snapshot_sample(snap, ns, 7, -1, syn, &err);
    double sample_s = (pg_bench_now_ms() - t3) / 1000, sample_cpu = cpu_s() - c3;
    if (rc) {
        fprintf(stderr, "marginal-speed: %s %s %s\n", e.count ? e.items[0].field : "",
                e.count ? e.items[0].message : "", err.msg);
        return 1;
    }
    double load[3] = {0};
    if (getloadavg(load, 3) < 0) load[0] = -1;
    printf("{\"bench\": \"marginal-speed\", \"method\": \"%s\", \"rows\": %zu, \"columns\": 15, "
           "\"width\": %zu, \"epsilon\": %g, \"steps\": %ld, \"threads\": %d, "
           "\"generate_seconds\": %.2f, \"create_seconds\": %.2f, \"create_cpu_seconds\": %.2f, "
           "\"train_seconds\": %.2f, \"train_cpu_seconds\": %.2f, \"sample_100k_seconds\": %.2f, "
           "\"sample_cpu_seconds\": %.2f, \"total_job_seconds\": %.2f, \"total_job_cpu_seconds\": "
           "%.2f, \"rows_mb\": %.0f, \"peak_rss_mb\": %ld, \"load1\": %.2f}\n",
           method, n, w, eps, steps, threads, gen_s, create_s, create_cpu, train_s, train_cpu,
           sample_s, sample_cpu, create_s + train_s, create_cpu + train_cpu,
           (double)n * (double)w * 4 / 1048576.0, peak_rss_mb(), load[0]);
    (void)c0;
    pg_free(syn);
    pg_snapshot_release(snap);
    m->destroy(tr);
    json_decref(r);
    json_decref(spec);
    pg_dataset_free(&ds);
    pg_table_free(t);
    return 0;
}

PG_BENCH_REGISTER("marginal-speed", "mst/aim on a large synthetic typed table: time and memory",
                  bench_marginal_speed)
