/* privgen-bench repro halfcircle: paper 000 section IV-A, Fig. 1. Clean points
 * on the upper half circle are privatized (Laplace with l1 sensitivity 2, or
 * Gaussian with l2 sensitivity sqrt 2 calibrated by the paper's eq. (5)), the
 * entropic GAN is trained on the privatized rows, and its samples are scored
 * against the arc and against fresh clean samples. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/repro.h"
#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/data/dataset.h"
#include "engine/data/synth.h"
#include "engine/eval/arc.h"
#include "engine/methods/spec.h"
#include "engine/ot/divergence.h"
#include "engine/privacy/privacy.h"

static int usage(void)
{
    fprintf(stderr, "usage: privgen-bench repro halfcircle --mechanism laplace|gaussian "
                    "--epsilon E [--delta D] --n N --batch B --steps S [--reg auto|tiny|R] "
                    "[--variant entropic|noisy_w1] [--seed K] [--threads T] [--hidden 256,256] "
                    "[--lr LR] [--sinkhorn-iters I]\n");
    return 2;
}

static int halfcircle(int argc, char **argv)
{
    const char *mech = pg_bench_opt(argc, argv, "--mechanism", "laplace");
    double eps = atof(pg_bench_opt(argc, argv, "--epsilon", "5"));
    double delta = atof(pg_bench_opt(argc, argv, "--delta", "1e-4"));
    size_t n = (size_t)atol(pg_bench_opt(argc, argv, "--n", "20000"));
    long batch = atol(pg_bench_opt(argc, argv, "--batch", "500"));
    long steps = atol(pg_bench_opt(argc, argv, "--steps", "2000"));
    const char *reg = pg_bench_opt(argc, argv, "--reg", "auto");
    const char *variant = pg_bench_opt(argc, argv, "--variant", "entropic");
    long seed = atol(pg_bench_opt(argc, argv, "--seed", "1"));
    int threads = atoi(pg_bench_opt(argc, argv, "--threads", "2"));
    const char *hidden = pg_bench_opt(argc, argv, "--hidden", "256,256");
    double lr = atof(pg_bench_opt(argc, argv, "--lr", "0.001"));
    long iters = atol(pg_bench_opt(argc, argv, "--sinkhorn-iters", "100"));
    bool gaussian = strcmp(mech, "gaussian") == 0;
    if ((!gaussian && strcmp(mech, "laplace") != 0) || !(eps > 0) || n < 2 || batch < 2 ||
        steps < 1)
        return usage();
    pg_threads_set(threads);
    pg_error err = {0};

    /* Clean arc and its privatized copy. */
    pg_synth_params sp;
    pg_synth_defaults(PG_SYNTH_HALFCIRCLE, &sp, NULL);
    pg_rng data_rng, noise;
    pg_rng_seeded(&data_rng, (uint64_t)seed, 1000);
    if (pg_rng_secure(&noise, &err)) goto fail;
    float *clean = pg_alloc_f32(n * 2), *priv = pg_alloc_f32(n * 2);
    pg_synth_sample(&sp, &data_rng, n, clean, NULL, NULL);
    memcpy(priv, clean, n * 2 * sizeof(float));
    double s;
    if (gaussian) {
        if (pg_privacy_gaussian_paper(eps, delta, sqrt(2.0), &s, &err)) goto fail;
        if (pg_privacy_gaussian_noise(&noise, priv, n * 2, s, &err)) goto fail;
    } else {
        if (pg_privacy_laplace_b(eps, 2.0, &s, &err)) goto fail;
        for (size_t i = 0; i < n * 2; i++) priv[i] += (float)pg_rng_laplace(&noise, s);
    }
    pg_arc_stats priv_stats;
    pg_arc_stats_compute(priv, n, 0.1, &priv_stats, NULL);

    pg_dataset ds;
    size_t shape[1] = {2};
    if (pg_dataset_adopt(&ds, priv, NULL, n, shape, 1, 0, -1e30f, 1e30f, &err)) goto fail;
    pg_data_desc desc = {.n = n,
                         .d = 2,
                         .ndim = 1,
                         .shape = {2},
                         .lo = -1e30f,
                         .hi = 1e30f,
                         .model = PG_PRIVACY_LOCAL,
                         .mechanism = gaussian ? PG_LOCAL_GAUSSIAN : PG_LOCAL_LAPLACE,
                         .epsilon = eps,
                         .delta = gaussian ? delta : 0,
                         .sensitivity = gaussian ? sqrt(2.0) : 2.0,
                         .noise_scale = s};
    char spec_text[1024];
    char regtxt[64];
    if (strcmp(reg, "auto") == 0 || strcmp(reg, "tiny") == 0)
        snprintf(regtxt, sizeof regtxt, "\"%s\"", reg);
    else
        snprintf(regtxt, sizeof regtxt, "%s", reg);
    snprintf(
        spec_text, sizeof spec_text,
        "{\"model\": {\"arch\": \"mlp\", \"latent_dim\": 2, \"hidden\": [%s]},"
        " \"train\": {\"steps\": %ld, \"batch_size\": %ld, \"optimizer\": \"adam\", \"lr\": %g},"
        " \"ot\": {\"reg\": %s, \"max_iter\": %ld, \"tol\": 0.001}, \"variant\": \"%s\","
        " \"seed\": %ld}",
        hidden, steps, batch, lr, regtxt, iters, variant, seed);
    json_t *spec = json_loads(spec_text, 0, NULL);
    const pg_method *m = pg_method_find("entropic_gan");
    json_t *resolved = NULL;
    pg_spec_errors errors = {0};
    if (!spec || m->validate(spec, &(pg_job_data){.desc = &desc}, &resolved, &errors, &err)) {
        for (int i = 0; i < errors.count; i++)
            fprintf(stderr, "%s: %s\n", errors.items[i].field, errors.items[i].message);
        goto fail;
    }
    pg_trainer *t;
    double t0 = pg_bench_now_ms();
    if (m->create(resolved, &(pg_job_data){.desc = &desc, .rows = &ds}, threads, &t, &err))
        goto fail;
    pg_step_report rep = {0};
    long total_iters = 0;
    while (!rep.done) {
        if (m->step(t, &rep, &err)) goto fail;
        total_iters += rep.ot_iters;
    }
    double seconds = (pg_bench_now_ms() - t0) / 1000.0;
    pg_snapshot *snap;
    if (m->snapshot(t, &snap, &err)) goto fail;
    size_t ne = 2000;
    float *gen = pg_alloc_f32(ne * 2), *ref = pg_alloc_f32(ne * 2);
    if (pg_snapshot_sample(snap, ne, 12345, -1, gen, &err)) goto fail;
    pg_synth_sample(&sp, &data_rng, ne, ref, NULL, NULL);
    pg_arc_stats gs;
    pg_arc_stats_compute(gen, ne, 0.1, &gs, NULL);
    pg_ot_ws ws;
    pg_ot_ws_init(&ws, ne, ne, 2, NULL);
    pg_ot_cost cost = {PG_OT_SQEUCLIDEAN, 0, 0};
    pg_sinkhorn_opts so = pg_sinkhorn_defaults(0.05f);
    so.scaling = 0.8f;
    so.tol = 1e-4f;
    pg_ot_cloud cg = {pg_mat_view(gen, ne, 2), NULL, NULL},
                cr = {pg_mat_view(ref, ne, 2), NULL, NULL};
    double sdiv = NAN;
    pg_ot_divergence(&ws, &cost, &cg, &cr, &so, &sdiv, NULL, NULL, NULL);
    printf("{\"bench\":\"repro_halfcircle\",\"mechanism\":\"%s\",\"epsilon\":%g,\"delta\":%g,"
           "\"noise_scale\":%.6g,\"reg\":%.6g,\"variant\":\"%s\",\"n\":%zu,\"batch\":%ld,"
           "\"steps\":%ld,\"mean_arc_distance\":%.5f,\"frac_within_0.1\":%.4f,"
           "\"data_mean_arc_distance\":%.5f,\"data_frac_within_0.1\":%.4f,"
           "\"sinkhorn_divergence_to_clean\":%.6f,\"final_loss\":%.6f,\"mean_sinkhorn_iters\":%.1f,"
           "\"seconds\":%.2f}\n",
           mech, eps, gaussian ? delta : 0.0, s, pg_spec_num(resolved, "ot.reg", 0), variant, n,
           batch, steps, gs.mean_distance, gs.frac_within, priv_stats.mean_distance,
           priv_stats.frac_within, sdiv, rep.loss, (double)total_iters / (double)steps, seconds);
    pg_ot_ws_free(&ws);
    pg_snapshot_release(snap);
    m->destroy(t);
    json_decref(resolved);
    json_decref(spec);
    pg_dataset_free(&ds);
    pg_free(clean), pg_free(gen), pg_free(ref);
    return 0;
fail:
    fprintf(stderr, "repro halfcircle: %s\n", err.msg);
    return 1;
}

static int repro(int argc, char **argv)
{
    if (argc < 2) return usage();
    if (strcmp(argv[1], "halfcircle") == 0) return halfcircle(argc - 1, argv + 1);
    if (strcmp(argv[1], "gaussians5") == 0) return pg_bench_repro_gaussians5(argc - 1, argv + 1);
    if (strcmp(argv[1], "fmnist") == 0) return pg_bench_repro_fmnist(argc - 1, argv + 1);
    fprintf(stderr, "privgen-bench repro: unknown experiment '%s'\n", argv[1]);
    return 2;
}

PG_BENCH_REGISTER("repro", "paper reproductions: halfcircle, gaussians5, fmnist", repro)
