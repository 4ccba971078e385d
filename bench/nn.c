/* privgen-bench nn: forward + backward + Adam step of a generator.
 *
 *   privgen-bench nn --arch mlp|dcgan28|conv_small|dcgan32 [--latent 32
 *       --hidden 256,256 --out 784] --batch B --steps S --threads T [--warmup W]
 *
 * Prints one JSON line with the median per-step milliseconds of each phase
 * and the share of the step spent inside SGEMM (timed around each call, in a
 * separate profiled pass so the timers do not perturb the main figures).
 *
 * The products are pg_sgemm (engine/core/mat_gemm.c): the engine's own
 * fixed-order kernel, so "blas_fraction" is the share of the step inside it,
 * not inside OpenBLAS (which is linked but no longer called for products).
 * Figures, the commands that produced them and how to read them under load
 * live in docs/benchmarks.md (NN engine); bench/peers/nn.py runs this next to
 * PyTorch in the same run.
 *
 * --contend runs it next to a child process that keeps one core busy;
 * --budget takes each step's thread count from a CPU budget of --threads
 * cores following the machine's load (engine/core/cpu.h, as privgend's jobs
 * do); "granted" is the mean thread count of the timed steps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "engine/core/alloc.h"
#include "engine/core/cpu.h"
#include "engine/core/mat.h"
#include "engine/nn/nn.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int bench_nn(int argc, char **argv)
{
    const char *arch = pg_bench_opt(argc, argv, "--arch", "mlp");
    int batch = atoi(pg_bench_opt(argc, argv, "--batch", "400"));
    int steps = atoi(pg_bench_opt(argc, argv, "--steps", "20"));
    int warmup = atoi(pg_bench_opt(argc, argv, "--warmup", "3"));
    int threads = pg_threads_set(atoi(pg_bench_opt(argc, argv, "--threads", "2")));
    if (batch < 1 || steps < 1 || warmup < 0) {
        fprintf(stderr, "nn: --batch and --steps must be positive\n");
        return 2;
    }
    char opts[512];
    if (!strcmp(arch, "mlp")) {
        char hidden[256];
        snprintf(hidden, sizeof hidden, "%s", pg_bench_opt(argc, argv, "--hidden", "256,256"));
        snprintf(opts, sizeof opts, "{\"latent\":%s,\"hidden\":[%s],\"out\":%s}",
                 pg_bench_opt(argc, argv, "--latent", "32"), hidden,
                 pg_bench_opt(argc, argv, "--out", "784"));
    } else {
        snprintf(opts, sizeof opts, "{}");
    }
    pg_error err = {0};
    pg_nn *net;
    if (pg_nn_create_preset(arch, opts, (size_t)batch, 1, &net, &err)) {
        fprintf(stderr, "nn: %s\n", err.msg);
        return 2;
    }
    pg_nn_opt *opt;
    pg_nn_opt_config cfg = pg_nn_opt_defaults(PG_NN_ADAM);
    if (pg_nn_opt_create(&cfg, pg_nn_param_count(net), &opt, &err)) {
        fprintf(stderr, "nn: %s\n", err.msg);
        pg_nn_free(net);
        return 1;
    }
    int contender = pg_bench_contend_start(argc, argv);
    pg_cpu_budget *budget = pg_bench_budget(argc, argv, threads);
    pg_cpu_share share;
    pg_cpu_join(budget, false, &share);
    double granted = 0;
    size_t in = pg_nn_in_size(net), out = pg_nn_out_size(net), b = (size_t)batch;
    float *z = pg_alloc_f32(b * in), *g = pg_alloc_f32(b * out);
    int32_t *lab = calloc(b, sizeof *lab);
    pg_rng rng;
    pg_rng_seeded(&rng, 7, 0);
    pg_rng_fill_normal(&rng, z, b * in, 0, 1);
    for (size_t i = 0; i < b; i++) lab[i] = (int32_t)(i % 10);
    double *tf = calloc((size_t)steps, sizeof *tf), *tb = calloc((size_t)steps, sizeof *tb),
           *to = calloc((size_t)steps, sizeof *to), *tt = calloc((size_t)steps, sizeof *tt);
    double blas = 0, prof_total = 0;
    int rc = 0;
    /* pass 0: warmup; pass 1: timed; pass 2: profiled (SGEMM share). */
    for (int pass = 0; pass < 3 && !rc; pass++) {
        int n = pass == 0 ? warmup : steps;
        pg_nn_profile(net, pass == 2);
        pg_nn_blas_ms_reset(net);
        for (int s = 0; s < n && !rc; s++) {
            const float *y;
            int gr = budget ? pg_cpu_use(pg_cpu_acquire(&share, threads)) : threads;
            if (pass == 1) granted += gr;
            double t0 = pg_bench_now_ms();
            rc |= pg_nn_forward(net, z, lab, b, &y, &err);
            double t1 = pg_bench_now_ms();
            /* dLoss/dy of a squared error to 0, outside the timed phases. */
            for (size_t i = 0; i < b * out; i++) g[i] = y[i] / (float)(b * out);
            double t2 = pg_bench_now_ms();
            pg_nn_zero_grad(net);
            rc |= pg_nn_backward(net, g, NULL, &err);
            double t3 = pg_bench_now_ms();
            rc |= pg_nn_opt_step_net(opt, net, &err);
            double t4 = pg_bench_now_ms();
            pg_cpu_release(&share);
            if (pass == 2) prof_total += (t1 - t0) + (t4 - t2);
            if (pass == 1) {
                tf[s] = t1 - t0, tb[s] = t3 - t2, to[s] = t4 - t3;
                tt[s] = (t1 - t0) + (t4 - t2);
            }
        }
        if (pass == 2) blas = pg_nn_blas_ms(net);
    }
    pg_bench_contend_stop(contender);
    pg_cpu_leave(&share);
    pg_cpu_budget_destroy(budget);
    if (rc) {
        fprintf(stderr, "nn: %s\n", err.msg);
    } else {
        double mf = median(tf, steps), mb = median(tb, steps), mo = median(to, steps),
               mt = median(tt, steps);
        printf("{\"bench\":\"nn\",\"impl\":\"privgen\",\"arch\":\"%s\",\"batch\":%d,\"threads\":%d,"
               "\"params\":%zu,\"steps\":%d,\"ms_forward\":%.4f,\"ms_backward\":%.4f,"
               "\"ms_opt\":%.4f,\"ms_step\":%.4f,\"blas_fraction\":%.3f,\"contend\":%s,"
               "\"budget\":%s,\"granted\":%.2f}\n",
               arch, batch, threads, pg_nn_param_count(net), steps, mf, mb, mo, mt,
               prof_total > 0 ? blas / prof_total : 0.0, contender > 0 ? "true" : "false",
               budget ? "true" : "false", granted / steps);
    }
    free(tf);
    free(tb);
    free(to);
    free(tt);
    free(lab);
    pg_free(z);
    pg_free(g);
    pg_nn_opt_free(opt);
    pg_nn_free(net);
    return rc ? 1 : 0;
}

PG_BENCH_REGISTER("nn", "generator forward + backward + Adam step (--arch, --batch, --threads)",
                  bench_nn)
