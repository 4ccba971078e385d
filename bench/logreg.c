/* privgen-bench logreg --train real: the downstream-utility reference of the
 * DP image-generation literature. Multinomial logistic regression trained on
 * the 60k real Fashion-MNIST training images, scored on the 10k test images
 * (paper 001, Table 1: 84.5 % with scikit-learn). */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "bench/repro.h"
#include "engine/core/mat.h"
#include "engine/core/alloc.h"
#include "engine/data/fmnist.h"
#include "engine/data/npy.h"
#include "engine/eval/logreg.h"

int pg_bench_logreg_score(const float *x, const int32_t *labels, size_t n, const pg_dataset *test,
                          double l2, int max_iter, double *accuracy, pg_error *err)
{
    pg_logreg_opts opts;
    pg_logreg_defaults(&opts);
    if (l2 > 0) opts.l2 = l2;
    if (max_iter > 0) opts.max_iter = max_iter;
    pg_logreg model = {0};
    pg_logreg_report rep;
    int rc = pg_logreg_fit(&model, x, labels, n, test->d, PG_FMNIST_CLASSES, &opts, &rep, err);
    if (rc == PG_OK) rc = pg_logreg_accuracy(&model, test->x, test->labels, test->n, accuracy, err);
    pg_logreg_free(&model);
    return rc;
}

static int usage(void)
{
    fprintf(stderr, "usage: privgen-bench logreg --train real|PREFIX [--dir DIR] [--l2 L] "
                    "[--max-iter I] [--threads T]\n"
                    "  --train PREFIX trains on PREFIX.x.npy (n x 784) and PREFIX.y.npy (n "
                    "labels), e.g. a set written by repro fmnist --save-synthetic\n");
    return 2;
}

static int read_npy(const char *path, pg_npy_header *h, float **data, pg_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) return pg_error_set(err, PG_EIO, "cannot open %s", path);
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = PG_OK;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? 2 * cap : (size_t)1 << 20;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                rc = pg_error_set(err, PG_ENOMEM, "cannot read %s", path);
                break;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    if (rc == PG_OK && ferror(f)) rc = pg_error_set(err, PG_EIO, "cannot read %s", path);
    fclose(f);
    if (rc == PG_OK) rc = pg_npy_read(buf, len, h, data, err);
    free(buf);
    return rc;
}

/* A labelled set saved as two .npy files: features n x d (d must match the
 * test images) and n integer-valued labels in [0, 10). */
static int load_saved(const char *prefix, size_t d, pg_dataset *out, pg_error *err)
{
    char path[4096];
    pg_npy_header hx, hy;
    float *x = NULL, *y = NULL;
    snprintf(path, sizeof path, "%s.x.npy", prefix);
    int rc = read_npy(path, &hx, &x, err);
    snprintf(path, sizeof path, "%s.y.npy", prefix);
    if (rc == PG_OK) rc = read_npy(path, &hy, &y, err);
    if (rc == PG_OK && (hx.ndim != 2 || hx.shape[1] != d || hy.ndim != 1 ||
                        hy.shape[0] != hx.shape[0] || hx.shape[0] == 0))
        rc =
            pg_error_set(err, PG_EINVAL,
                         "%s: want x of shape (n, %zu) and y of shape (n,) with n >= 1", prefix, d);
    size_t shape[3] = {1, 28, 28};
    if (rc == PG_OK)
        rc = pg_dataset_alloc(out, hx.shape[0], shape, 3, PG_FMNIST_CLASSES, -1.0f, 1.0f, err);
    for (size_t i = 0; rc == PG_OK && i < hx.shape[0]; i++) {
        float v = y[i];
        if (!(v >= 0 && v < PG_FMNIST_CLASSES) || v != (float)(int)v)
            rc = pg_error_set(err, PG_EINVAL, "%s: label %zu is not a class in 0..9", prefix, i);
        else
            out->labels[i] = (int32_t)v;
    }
    if (rc == PG_OK) memcpy(out->x, x, hx.shape[0] * d * sizeof(float));
    pg_free(x);
    pg_free(y);
    return rc;
}

static int logreg_bench(int argc, char **argv)
{
    const char *train = pg_bench_opt(argc, argv, "--train", "real");
    const char *dir = pg_bench_opt(argc, argv, "--dir", NULL);
    double l2 = atof(pg_bench_opt(argc, argv, "--l2", "0"));
    int max_iter = atoi(pg_bench_opt(argc, argv, "--max-iter", "0"));
    int threads = atoi(pg_bench_opt(argc, argv, "--threads", "2"));
    bool real = strcmp(train, "real") == 0;
    if (threads < 1) return usage();
    pg_threads_set(threads);
    pg_error err = {0};
    pg_dataset tr = {0}, te = {0};
    double t0 = pg_bench_now_ms();
    clock_t c0 = clock();
    double acc = 0;
    int rc = pg_fmnist_load(dir, PG_FMNIST_TEST, 0, &te, &err);
    if (rc == PG_OK)
        rc = real ? pg_fmnist_load(dir, PG_FMNIST_TRAIN, 0, &tr, &err)
                  : load_saved(train, te.d, &tr, &err);
    if (rc == PG_OK)
        rc = pg_bench_logreg_score(tr.x, tr.labels, tr.n, &te, l2, max_iter, &acc, &err);
    double secs = (pg_bench_now_ms() - t0) / 1e3;
    double cpu = (double)(clock() - c0) / CLOCKS_PER_SEC;
    pg_dataset_free(&tr);
    pg_dataset_free(&te);
    if (rc) {
        fprintf(stderr, "logreg: %s\n", err.msg);
        return 1;
    }
    json_t *line = json_pack("{s:s,s:s,s:f,s:f,s:f}", "bench", "logreg", "train", train, "accuracy",
                             acc, "seconds", secs, "cpu_seconds", cpu);
    char *text = line ? json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
    printf("%s\n", text ? text : "{}");
    free(text);
    json_decref(line);
    return 0;
}

PG_BENCH_REGISTER("logreg", "Fashion-MNIST logistic regression on real training data", logreg_bench)
