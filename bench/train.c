/* privgen-bench train: milliseconds per full training step of a method
 * (generator forward, cost matrix, Sinkhorn, envelope gradient, backward,
 * optimizer), on real data, with a fixed number of Sinkhorn iterations so the
 * work matches bench/peers/train.py exactly. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "engine/core/mat.h"
#include "engine/data/fmnist.h"
#include "engine/methods/spec.h"

static int usage(void)
{
    fprintf(stderr, "usage: privgen-bench train --method entropic_gan --arch mlp [--latent 32] "
                    "[--hidden 256,256] [--out 784] --batch B --sinkhorn-iters N --data fmnist "
                    "[--steps S] [--warmup W] [--threads T]\n");
    return 2;
}

/* lambda = 0.05 x mean squared distance between the first two data batches:
 * a data-only rule that bench/peers/train.py computes identically. */
static double data_reg(const pg_dataset *ds, size_t b)
{
    double sum = 0;
    for (size_t i = 0; i < b; i++)
        for (size_t j = 0; j < b; j++) {
            const float *x = pg_dataset_row(ds, i), *y = pg_dataset_row(ds, b + j);
            double c = 0;
            for (size_t k = 0; k < ds->d; k++) c += (double)(x[k] - y[k]) * (x[k] - y[k]);
            sum += c;
        }
    return 0.05 * sum / (double)(b * b);
}

static int train(int argc, char **argv)
{
    const char *method = pg_bench_opt(argc, argv, "--method", "entropic_gan");
    const char *arch = pg_bench_opt(argc, argv, "--arch", "mlp");
    long latent = atol(pg_bench_opt(argc, argv, "--latent", "32"));
    const char *hidden = pg_bench_opt(argc, argv, "--hidden", "256,256");
    long out = atol(pg_bench_opt(argc, argv, "--out", "784"));
    long batch = atol(pg_bench_opt(argc, argv, "--batch", "400"));
    long iters = atol(pg_bench_opt(argc, argv, "--sinkhorn-iters", "100"));
    const char *data = pg_bench_opt(argc, argv, "--data", "fmnist");
    long steps = atol(pg_bench_opt(argc, argv, "--steps", "20"));
    long warmup = atol(pg_bench_opt(argc, argv, "--warmup", "3"));
    int threads = atoi(pg_bench_opt(argc, argv, "--threads", "2"));
    if (strcmp(method, "entropic_gan") != 0 || strcmp(arch, "mlp") != 0 || out != 784 ||
        strcmp(data, "fmnist") != 0 || batch < 2 || iters < 1 || steps < 1)
        return usage();
    pg_threads_set(threads);
    pg_error err = {0};
    pg_dataset ds;
    if (pg_fmnist_load(NULL, PG_FMNIST_TRAIN, 10000, &ds, &err)) goto fail;
    double reg = data_reg(&ds, (size_t)batch);
    /* The rows stand in for Gaussian-privatized data (p = 2, sqeuclidean):
     * the speed of a step does not depend on where the rows came from. */
    pg_data_desc desc = {.n = ds.n,
                         .d = 784,
                         .ndim = 3,
                         .shape = {1, 28, 28},
                         .lo = -1e30f,
                         .hi = 1e30f,
                         .model = PG_PRIVACY_LOCAL,
                         .mechanism = PG_LOCAL_GAUSSIAN,
                         .epsilon = 1,
                         .delta = 1e-5,
                         .sensitivity = 1,
                         .noise_scale = 1};
    char spec_text[768];
    snprintf(spec_text, sizeof spec_text,
             "{\"model\": {\"arch\": \"mlp\", \"latent_dim\": %ld, \"hidden\": [%s]},"
             " \"train\": {\"steps\": %ld, \"batch_size\": %ld, \"optimizer\": \"adam\","
             " \"lr\": 0.0001}, \"ot\": {\"reg\": %.9g, \"max_iter\": %ld, \"tol\": 0,"
             " \"scaling\": 0}, \"seed\": 1}",
             latent, hidden, steps + warmup, batch, reg, iters);
    json_t *spec = json_loads(spec_text, 0, NULL);
    const pg_method *m = pg_method_find(method);
    json_t *resolved = NULL;
    pg_spec_errors errors = {0};
    if (!spec || m->validate(spec, &(pg_job_data){.desc = &desc}, &resolved, &errors, &err)) {
        for (int i = 0; i < errors.count; i++)
            fprintf(stderr, "%s: %s\n", errors.items[i].field, errors.items[i].message);
        goto fail;
    }
    pg_trainer *t;
    if (m->create(resolved, &(pg_job_data){.desc = &desc, .rows = &ds}, threads, &t, &err))
        goto fail;
    pg_step_report rep;
    for (long i = 0; i < warmup; i++)
        if (m->step(t, &rep, &err)) goto fail;
    double t0 = pg_bench_now_ms();
    for (long i = 0; i < steps; i++)
        if (m->step(t, &rep, &err)) goto fail;
    double ms = (pg_bench_now_ms() - t0) / (double)steps;
    printf(
        "{\"bench\":\"train\",\"method\":\"%s\",\"arch\":\"mlp\",\"latent\":%ld,\"hidden\":\"%s\","
        "\"out\":784,\"batch\":%ld,\"sinkhorn_iters\":%ld,\"threads\":%d,\"steps\":%ld,"
        "\"reg\":%.6g,\"loss\":%.6g,\"ms_step\":%.3f}\n",
        method, latent, hidden, batch, iters, threads, steps, reg, rep.loss, ms);
    m->destroy(t);
    json_decref(resolved);
    json_decref(spec);
    pg_dataset_free(&ds);
    return 0;
fail:
    fprintf(stderr, "train bench: %s\n", err.msg);
    return 1;
}

PG_BENCH_REGISTER("train", "ms per full training step of a method (vs bench/peers/train.py)", train)
