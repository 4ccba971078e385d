/* privgen-bench report: the wall time of a full quality report (engine/eval/
 * report.h) at Fashion-MNIST size. Reference: the n test images (10 000 x 784
 * by default) with their labels. Synthetic: a noisy copy of them (pixels +
 * N(0, noise^2), clipped to [-1, 1], same labels; --synthetic copy), or the
 * first n training images (--synthetic train: an ideal generator, whose
 * figures should sit at the noise floors). Prints one JSON line: the report's
 * figures without the per-column list and matrices, and the seconds. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/core/rng.h"
#include "engine/data/fmnist.h"
#include "engine/eval/report.h"

static int usage(void)
{
    fprintf(stderr, "usage: privgen-bench report [--n N] [--synthetic copy|train] [--noise S] "
                    "[--threads T] [--seed S] [--sw K] [--sinkhorn-rows R] [--dir DIR]\n");
    return 2;
}

static int count_progress(void *ctx, const char *stage, double frac)
{
    (void)stage;
    (void)frac;
    ++*(long *)ctx;
    return 0;
}

static int report_bench(int argc, char **argv)
{
    size_t n = (size_t)atol(pg_bench_opt(argc, argv, "--n", "10000"));
    const char *source = pg_bench_opt(argc, argv, "--synthetic", "copy");
    double noise = atof(pg_bench_opt(argc, argv, "--noise", "0.3"));
    int threads = atoi(pg_bench_opt(argc, argv, "--threads", "2"));
    const char *dir = pg_bench_opt(argc, argv, "--dir", NULL);
    pg_eval_opts o;
    pg_eval_defaults(&o);
    o.seed = strtoull(pg_bench_opt(argc, argv, "--seed", "1"), NULL, 10);
    o.sw_directions = (size_t)atol(pg_bench_opt(argc, argv, "--sw", "500"));
    o.sinkhorn_rows = (size_t)atol(pg_bench_opt(argc, argv, "--sinkhorn-rows", "2000"));
    bool copy = strcmp(source, "copy") == 0;
    if (n < 2 || threads < 1 || noise < 0 || (!copy && strcmp(source, "train") != 0))
        return usage();
    pg_threads_set(threads);
    pg_error err = {0};
    pg_dataset ref = {0}, syn = {0};
    int rc = pg_fmnist_load(dir, PG_FMNIST_TEST, n, &ref, &err);
    if (rc == PG_OK && !copy) rc = pg_fmnist_load(dir, PG_FMNIST_TRAIN, n, &syn, &err);
    float *sx = NULL;
    if (rc == PG_OK && copy) {
        sx = pg_alloc_f32(ref.n * ref.d);
        if (!sx) rc = pg_error_set(&err, PG_ENOMEM, "no memory for the synthetic copy");
        pg_rng r;
        pg_rng_seeded(&r, o.seed, 77);
        for (size_t i = 0; sx && i < ref.n * ref.d; i++) {
            float v = ref.x[i] + (float)(noise * pg_rng_normal(&r));
            sx[i] = v < -1.0f ? -1.0f : v > 1.0f ? 1.0f : v;
        }
    }
    pg_eval_report rep = {0};
    long calls = 0;
    double secs = 0, cpu = 0;
    if (rc == PG_OK) {
        pg_eval_input in = {copy ? sx : syn.x,
                            ref.x,
                            copy ? ref.n : syn.n,
                            ref.n,
                            ref.d,
                            NULL,
                            copy ? ref.labels : syn.labels,
                            ref.labels,
                            PG_FMNIST_CLASSES,
                            NULL,
                            NULL,
                            0};
        o.progress = count_progress;
        o.progress_ctx = &calls;
        double t0 = pg_bench_now_ms();
        clock_t c0 = clock();
        rc = pg_eval_report_run(&in, &o, &rep, &err);
        secs = (pg_bench_now_ms() - t0) / 1e3;
        cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    }
    json_t *j = NULL;
    if (rc == PG_OK) rc = pg_eval_report_json(&rep, NULL, 0, &j, &err);
    if (rc == PG_OK) {
        json_object_del(json_object_get(j, "marginals"), "columns");
        json_object_del(json_object_get(j, "pairwise"), "matrices");
        json_t *line =
            json_pack("{s:s,s:s,s:f,s:I,s:I,s:i,s:f,s:f,s:I,s:o}", "bench", "report", "synthetic",
                      source, "noise", copy ? noise : 0.0, "n", (json_int_t)ref.n, "d",
                      (json_int_t)ref.d, "threads", threads, "seconds", secs, "cpu_seconds", cpu,
                      "progress_calls", (json_int_t)calls, "report", j);
        char *text = line ? json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
        printf("%s\n", text ? text : "{}");
        free(text);
        json_decref(line);
    }
    pg_eval_report_free(&rep);
    pg_free(sx);
    pg_dataset_free(&ref);
    pg_dataset_free(&syn);
    if (rc) {
        fprintf(stderr, "report: %s\n", err.msg);
        return 1;
    }
    return 0;
}

PG_BENCH_REGISTER("report", "quality report of 10 000 x 784 synthetic vs reference rows",
                  report_bench)
