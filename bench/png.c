/* privgen-bench png: PNG size against encode time for zlib levels 1..9.
 *
 * Three served pictures: a scatter plot of 1000 points (a noisy half circle),
 * a 10x10 grid of Fashion-MNIST test images (28x28) and the same grid with
 * +-0.1 of pixel noise, which is closer to what a generator returns. Each
 * level renders every picture --reps times; the line reports the median
 * CPU time of one render (drawing + encoding) and the bytes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "render/render.h"
#include "bench/bench.h"
#include "engine/data/fmnist.h"

/* Process CPU time: the machine is shared, and wall time would charge the
 * encoder for other processes. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A fixed LCG: the pictures are inputs, not privacy noise. */
static double unif(unsigned long long *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static int one(const char *name, const float *x, size_t n, size_t d, int ndim, const size_t *shape,
               float lo, float hi, int reps)
{
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t) return 1;
    for (int level = 1; level <= 9; level++) {
        pg_render_plot opt;
        pg_render_plot_defaults(&opt);
        opt.level = level;
        opt.method = "dp_sinkhorn";
        opt.epsilon = 1.0;
        size_t bytes = 0;
        for (int r = 0; r < reps; r++) {
            char *png;
            size_t len;
            pg_error err = {0};
            double t0 = cpu_ms();
            if (pg_render_png_plot(x, n, d, ndim, shape, lo, hi, &opt, &png, &len, &err)) {
                fprintf(stderr, "privgen-bench png: %s\n", err.msg);
                free(t);
                return 1;
            }
            t[r] = cpu_ms() - t0;
            bytes = len;
            free(png);
        }
        qsort(t, (size_t)reps, sizeof *t, cmp);
        printf(
            "{\"bench\":\"png\",\"picture\":\"%s\",\"level\":%d,\"bytes\":%zu,\"cpu_ms\":%.3f}\n",
            name, level, bytes, t[reps / 2]);
        fflush(stdout);
    }
    free(t);
    return 0;
}

static int bench_png(int argc, char **argv)
{
    int reps = atoi(pg_bench_opt(argc, argv, "--reps", "21"));
    if (reps < 1) reps = 1;
    unsigned long long s = 7;
    float xy[2000];
    for (int i = 0; i < 1000; i++) {
        double a = M_PI * unif(&s), r = 1.0 + 0.1 * (unif(&s) - 0.5);
        xy[2 * i] = (float)(r * cos(a)), xy[2 * i + 1] = (float)(r * sin(a));
    }
    size_t s2[1] = {2};
    if (one("scatter_1000", xy, 1000, 2, 1, s2, -1.5f, 1.5f, reps)) return 1;
    pg_dataset ds;
    pg_error err = {0};
    if (pg_fmnist_load(NULL, PG_FMNIST_TEST, 100, &ds, &err)) {
        fprintf(stderr, "privgen-bench png: %s (grid skipped)\n", err.msg);
        return 0;
    }
    int rc = one("fmnist_grid_10x10", ds.x, 100, 784, 3, ds.shape, -1.0f, 1.0f, reps);
    for (size_t i = 0; i < 100 * 784; i++) ds.x[i] += (float)(0.2 * (unif(&s) - 0.5));
    if (!rc) rc = one("fmnist_grid_10x10_noisy", ds.x, 100, 784, 3, ds.shape, -1.0f, 1.0f, reps);
    pg_dataset_free(&ds);
    return rc;
}

PG_BENCH_REGISTER("png", "PNG bytes and render time for zlib levels 1..9", bench_png)
