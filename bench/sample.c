/* privgen-bench sample: the serving forward pass alone.
 *
 * Loads a snapshot from a checkpoint file (--checkpoint PATH --method NAME)
 * and times pg_snapshot_sample for --n rows (--reps times, best of three
 * rounds), with --threads OpenBLAS threads (default 1: privgend's setting
 * with one thread per job) and --omp-threads OpenMP threads for the layers'
 * element-wise work (default: as many as cores, what an HTTP thread gets).
 * Prints microseconds per call and rows per second: the ceiling a samples
 * request of that size can reach. */
#include <stdio.h>
#include <omp.h>
#include <stdlib.h>
#include <time.h>

#include "bench/bench.h"
#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/methods/method.h"

static int bench_sample(int argc, char **argv)
{
    const char *path = pg_bench_opt(argc, argv, "--checkpoint", NULL);
    const char *name = pg_bench_opt(argc, argv, "--method", "dp_sinkhorn");
    size_t n = strtoull(pg_bench_opt(argc, argv, "--n", "64"), NULL, 10);
    long reps = strtol(pg_bench_opt(argc, argv, "--reps", "200"), NULL, 10);
    int threads = atoi(pg_bench_opt(argc, argv, "--threads", "1"));
    int omp = atoi(pg_bench_opt(argc, argv, "--omp-threads", "0"));
    const pg_method *m = pg_method_find(name);
    if (!path || !m || n == 0 || reps <= 0) {
        fprintf(stderr, "usage: privgen-bench sample --checkpoint PATH [--method NAME] [--n N] "
                        "[--reps R] [--threads T] [--omp-threads T]\n");
        return 2;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *bytes = malloc((size_t)len);
    if (!bytes || fread(bytes, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        return 1;
    }
    fclose(f);
    pg_error err = {0};
    pg_snapshot *s;
    if (m->load_snapshot(bytes, (size_t)len, &s, &err)) {
        fprintf(stderr, "privgen-bench: %s\n", err.msg);
        return 1;
    }
    free(bytes);
    pg_threads_set(threads);
    if (omp <= 0) omp = omp_get_num_procs();
    omp_set_num_threads(omp);
    size_t d = pg_snapshot_dim(s);
    float *x = pg_alloc_f32(n * d);
    double best = 1e300;
    /* Process CPU time over all calls: comparable with a server's CPU per
     * request (the OpenMP team included), without the start and load. */
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    for (int round = 0; round < 3; round++) {
        double t0 = pg_bench_now_ms();
        for (long r = 0; r < reps; r++)
            if (pg_snapshot_sample(s, n, (uint64_t)r, -1, x, &err)) {
                fprintf(stderr, "privgen-bench: %s\n", err.msg);
                return 1;
            }
        double us = (pg_bench_now_ms() - t0) * 1e3 / (double)reps;
        if (us < best) best = us;
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    double cpu_us =
        ((double)(c1.tv_sec - c0.tv_sec) * 1e6 + (double)(c1.tv_nsec - c0.tv_nsec) / 1e3) /
        (3.0 * (double)reps);
    printf("{\"bench\":\"sample\",\"method\":\"%s\",\"n\":%zu,\"d\":%zu,\"threads\":%d,"
           "\"omp_threads\":%d,"
           "\"us_per_call\":%.1f,\"cpu_us_per_call\":%.1f,\"rows_per_second\":%.0f,\"output_gb_per_"
           "second\":%.3f}\n",
           name, n, d, threads, omp, best, cpu_us, (double)n / best * 1e6,
           (double)(n * d * 4) / best / 1e3);
    pg_free(x);
    pg_snapshot_release(s);
    return 0;
}

PG_BENCH_REGISTER("sample", "serving forward pass of a checkpoint's snapshot", bench_sample)
