/* privgen-bench train-direct: a trainer driven directly through method.h on
 * the toy 2-D local dataset that bench/peers/service.py uploads to privgend,
 * so the peer can report the service's overhead (queueing, progress,
 * checkpoints, snapshots) as a ratio measured in the same run.
 *
 *   privgen-bench train-direct --spec '{"model":...,"train":...}' [--n 400]
 *
 * The rows: n points from the 32-bit LCG x <- 1103515245 x + 12345 (seed
 * 12345), row i = (2u - 1, v - 0.5) with u, v = (x >> 8) / 2^24 of two draws,
 * declared as Gaussian LDP (epsilon 1, delta 1e-5, sensitivity 0.5, sigma 2.5)
 * on the range [-4, 4]. The job is entropic_gan (the one local-data method);
 * checkpoints are not written here.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench.h"
#include "engine/core/mat.h"
#include "engine/data/dataset.h"
#include "engine/methods/method.h"

static int train_direct(int argc, char **argv)
{
    const char *spec_text = pg_bench_opt(argc, argv, "--spec", NULL);
    long n = atol(pg_bench_opt(argc, argv, "--n", "400"));
    if (!spec_text || n < 2) {
        fprintf(stderr, "usage: privgen-bench train-direct --spec JSON [--n ROWS]\n");
        return 2;
    }
    pg_threads_set(atoi(pg_bench_opt(argc, argv, "--threads", "1")));
    const pg_method *m = pg_method_find("entropic_gan");
    pg_data_desc d = {0};
    d.n = (size_t)n;
    d.d = 2;
    d.ndim = 1;
    d.shape[0] = 2;
    d.lo = -4.0f;
    d.hi = 4.0f;
    d.model = PG_PRIVACY_LOCAL;
    d.mechanism = PG_LOCAL_GAUSSIAN;
    d.epsilon = 1.0;
    d.delta = 1e-5;
    d.sensitivity = 0.5;
    d.noise_scale = 2.5;
    pg_dataset ds;
    size_t shape[1] = {2};
    pg_error err = {0};
    if (!m || pg_dataset_alloc(&ds, (size_t)n, shape, 1, 0, -4.0f, 4.0f, &err)) {
        fprintf(stderr, "train-direct: %s\n", m ? err.msg : "entropic_gan is not built in");
        return 1;
    }
    unsigned x = 12345u;
    for (long i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        double u = (double)(x >> 8) / 16777216.0;
        x = x * 1103515245u + 12345u;
        double v = (double)(x >> 8) / 16777216.0;
        ds.x[2 * i] = (float)(2.0 * u - 1.0);
        ds.x[2 * i + 1] = (float)(v - 0.5);
    }
    json_t *spec = json_loads(spec_text, 0, NULL), *resolved = NULL;
    pg_spec_errors errors = {0};
    pg_trainer *t = NULL;
    int rc = !spec ? 1 : m->validate(spec, &(pg_job_data){.desc = &d}, &resolved, &errors, &err);
    if (!rc) rc = m->create(resolved, &(pg_job_data){.desc = &d, .rows = &ds}, 1, &t, &err);
    if (rc) {
        fprintf(stderr, "train-direct: %s\n",
                errors.count ? errors.items[0].message
                : spec       ? err.msg
                             : "bad --spec JSON");
        json_decref(spec);
        json_decref(resolved);
        pg_dataset_free(&ds);
        return 1;
    }
    double t0 = pg_bench_now_ms();
    pg_step_report rep;
    long steps = 0;
    do {
        rc = m->step(t, &rep, &err);
        steps++;
    } while (!rc && !rep.done);
    double ms = pg_bench_now_ms() - t0;
    m->destroy(t);
    json_decref(spec);
    json_decref(resolved);
    pg_dataset_free(&ds);
    if (rc) {
        fprintf(stderr, "train-direct: %s\n", err.msg);
        return 1;
    }
    printf("{\"bench\":\"train-direct\",\"method\":\"entropic_gan\",\"steps\":%ld,"
           "\"steps_per_second\":%.2f}\n",
           steps, 1e3 * (double)steps / ms);
    return 0;
}

PG_BENCH_REGISTER("train-direct", "a trainer's steps/s without the service (see peers/service.py)",
                  train_direct)
