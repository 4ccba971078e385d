/* privgen-bench defaults: every method with its DEFAULT spec (only the privacy
 * target and a seed given) on two small 2-D datasets, the way a first-time user
 * would run it, scored on a fixed-seed draw of 2000 samples.
 *
 *   privgen-bench defaults [--method M] [--data halfcircle|gaussians5]
 *       [--epsilon E] [--n N] [--seed K] [--threads T] [--spec JSON]
 *
 * Without --method/--data/--epsilon it runs the whole table: entropic_gan,
 * dp_sinkhorn, swd_flow, swd_flow_r, swd_gen x {halfcircle, gaussians5} x
 * epsilon {1, 3, 10}. Data: n clean rows (5000 by default); the half circle
 * is declared on [-1.5, 1.5], the five Gaussians (centres at radius 2, std
 * 0.25) on [-3.5, 3.5]. Central methods get {epsilon, delta 1e-5}. The local
 * method gets rows privatized as `privgen privatize --mechanism laplace
 * --clip l1:R` would: clipped to the smallest round l1 radius that changes no
 * row of the distribution (1.42 for the arc, whose largest l1 norm is sqrt 2;
 * 4 for the Gaussians), then Laplace noise 2R / epsilon. --spec merges extra
 * fields into the job spec (to try a setting against the defaults).
 *
 * One JSON line per run: the resolved steps, batch and lr, seconds, the share
 * of samples inside the declared range, and the quality figures: for the half
 * circle the share within 0.1 of the arc and the mean radius (target 1); for
 * the Gaussians the share within 0.5 (2 std) of a centre (0.865 for the true
 * law), the number of centres that receive at least 10 % of the samples
 * (5 of 5 when all modes are covered), and SW2 to fresh data. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/data/dataset.h"
#include "engine/data/synth.h"
#include "engine/eval/arc.h"
#include "engine/methods/method.h"
#include "engine/methods/spec.h"
#include "engine/ot/sliced.h"
#include "engine/privacy/privacy.h"

#define EVAL_N 2000

typedef struct run_cfg {
    const char *method, *data;
    double eps;
    size_t n;
    long seed;
    int threads;
    const char *extra;
} run_cfg;

static void merge(json_t *dst, const json_t *src)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)src, k, v)
    {
        json_t *cur = json_object_get(dst, k);
        if (json_is_object(cur) && json_is_object(v))
            merge(cur, v);
        else
            json_object_set(dst, k, v);
    }
}

static void gmm_params(pg_synth_params *sp)
{
    pg_synth_defaults(PG_SYNTH_GMM_CIRCLE, sp, NULL);
    sp->radius = 2.0;
    sp->k = 5;
    sp->std = 0.25;
}

static int one(const run_cfg *c)
{
    pg_error err = {0};
    bool arc = strcmp(c->data, "halfcircle") == 0;
    bool local = strcmp(c->method, "entropic_gan") == 0;
    const pg_method *m = pg_method_find(c->method);
    if (!m || (!arc && strcmp(c->data, "gaussians5") != 0)) {
        fprintf(stderr, "defaults: unknown method or data\n");
        return 2;
    }
    pg_synth_params sp;
    if (arc)
        pg_synth_defaults(PG_SYNTH_HALFCIRCLE, &sp, NULL);
    else
        gmm_params(&sp);
    float lim = arc ? 1.5f : 3.5f;
    size_t n = c->n, d = 2;
    pg_rng drng;
    pg_rng_seeded(&drng, (uint64_t)c->seed, 2000);
    float *rows = pg_alloc_f32(n * d);
    pg_synth_sample(&sp, &drng, n, rows, NULL, NULL);
    pg_data_desc desc = {.n = n, .d = d, .ndim = 1, .shape = {d}, .lo = -lim, .hi = lim};
    if (local) {
        double R = arc ? 1.42 : 4.0, s, scratch[2];
        pg_rng noise;
        if (pg_rng_secure(&noise, &err) || pg_privacy_clip_l1(rows, n, d, R, scratch, &err) ||
            pg_privacy_laplace_b(c->eps, 2 * R, &s, &err))
            goto fail;
        for (size_t i = 0; i < n * d; i++) rows[i] += (float)pg_rng_laplace(&noise, s);
        desc.model = PG_PRIVACY_LOCAL;
        desc.mechanism = PG_LOCAL_LAPLACE;
        desc.epsilon = c->eps;
        desc.sensitivity = 2 * R;
        desc.noise_scale = s;
        desc.lo = -4, desc.hi = 4; /* what tutorial 1 declares for noisy rows */
    } else {
        desc.model = PG_PRIVACY_CENTRAL;
        desc.cap_epsilon = 0;
        desc.cap_delta = 1e-5;
    }
    pg_dataset ds;
    if (pg_dataset_adopt(&ds, rows, NULL, n, desc.shape, 1, 0, desc.lo, desc.hi, &err)) goto fail;

    json_t *spec = json_pack("{s:I}", "seed", (json_int_t)c->seed);
    if (!local)
        json_object_set_new(spec, "privacy",
                            json_pack("{s:f,s:f}", "epsilon", c->eps, "delta", 1e-5));
    if (c->extra) {
        json_t *x = json_loads(c->extra, 0, NULL);
        if (!json_is_object(x)) {
            fprintf(stderr, "defaults: --spec is not a JSON object\n");
            return 2;
        }
        merge(spec, x);
        json_decref(x);
    }
    json_t *r = NULL;
    pg_spec_errors errors = {0};
    pg_job_data in = {.desc = &desc};
    if (m->validate(spec, &in, &r, &errors, &err)) {
        for (int i = 0; i < errors.count; i++)
            fprintf(stderr, "%s: %s\n", errors.items[i].field, errors.items[i].message);
        goto fail;
    }
    pg_privacy_plan plan;
    if (m->plan(r, &in, &plan, &err)) goto fail;
    in.rows = &ds;
    pg_trainer *t;
    double t0 = pg_bench_now_ms();
    if (m->create(r, &in, c->threads, &t, &err)) goto fail;
    pg_step_report rep = {0};
    while (!rep.done)
        if (m->step(t, &rep, &err)) goto fail;
    double secs = (pg_bench_now_ms() - t0) / 1000.0;
    pg_snapshot *snap;
    if (m->snapshot(t, &snap, &err)) goto fail;
    float *gen = pg_alloc_f32(EVAL_N * d), *ref = pg_alloc_f32(EVAL_N * d);
    if (pg_snapshot_sample(snap, EVAL_N, 12345, -1, gen, &err)) goto fail;
    pg_synth_sample(&sp, &drng, EVAL_N, ref, NULL, NULL);
    size_t inside = 0;
    double rsum = 0;
    for (size_t i = 0; i < EVAL_N; i++) {
        double x = gen[2 * i], y = gen[2 * i + 1];
        inside += fabs(x) <= lim && fabs(y) <= lim;
        rsum += sqrt(x * x + y * y);
    }
    char quality[256];
    if (arc) {
        pg_arc_stats st;
        if (pg_arc_stats_compute(gen, EVAL_N, 0.1, &st, &err)) goto fail;
        snprintf(quality, sizeof quality, "\"arc_within_0.1\":%.3f,\"mean_radius\":%.3f",
                 st.frac_within, rsum / EVAL_N);
    } else {
        size_t near = 0, count[5] = {0};
        for (size_t i = 0; i < EVAL_N; i++) {
            int best = 0;
            double bd = INFINITY;
            for (int j = 0; j < 5; j++) {
                double cx, cy;
                pg_synth_gmm_center(&sp, j, &cx, &cy);
                double dd = hypot(gen[2 * i] - cx, gen[2 * i + 1] - cy);
                if (dd < bd) bd = dd, best = j;
            }
            if (bd <= 0.5) near++, count[best]++;
        }
        int modes = 0;
        for (int j = 0; j < 5; j++) modes += count[j] >= EVAL_N / 10;
        size_t ke = 500;
        float *th = pg_alloc_f32(d * ke);
        pg_mat tm = pg_mat_view(th, d, ke), xm = pg_mat_view(gen, EVAL_N, d),
               ym = pg_mat_view(ref, EVAL_N, d);
        pg_rng er;
        pg_rng_seeded(&er, 7, 13);
        pg_sw_ws ew;
        double sw2sq = NAN;
        if (pg_sw_directions(&er, false, &tm, &err) ||
            pg_sw_ws_init(&ew, EVAL_N, EVAL_N, ke, d, &err) ||
            pg_sw2(&ew, &xm, &ym, &tm, &sw2sq, NULL, &err))
            goto fail;
        pg_sw_ws_free(&ew);
        pg_free(th);
        snprintf(quality, sizeof quality,
                 "\"near_mode_0.5\":%.3f,\"modes_covered\":%d,\"sw2\":%.3f", (double)near / EVAL_N,
                 modes, sqrt(sw2sq));
    }
    const char *steps_key = pg_spec_get(r, "flow.steps") ? "flow.steps" : "train.steps";
    printf("{\"bench\":\"defaults\",\"method\":\"%s\",\"data\":\"%s\",\"epsilon\":%g,\"n\":%zu,"
           "\"plan_epsilon\":%.4g,\"steps\":%ld,\"batch\":%ld,\"lr\":%g,\"seconds\":%.1f,"
           "\"inside_range\":%.3f,%s}\n",
           c->method, c->data, c->eps, n, plan.epsilon, pg_spec_int(r, steps_key, 0),
           pg_spec_int(r, "train.batch_size", -1), pg_spec_num(r, "train.lr", 0), secs,
           (double)inside / EVAL_N, quality);
    fflush(stdout);
    pg_snapshot_release(snap);
    m->destroy(t);
    json_decref(r);
    json_decref(spec);
    pg_dataset_free(&ds);
    pg_free(gen);
    pg_free(ref);
    return 0;
fail:
    fprintf(stderr, "defaults %s %s eps %g: %s\n", c->method, c->data, c->eps, err.msg);
    return 1;
}

static int defaults(int argc, char **argv)
{
    static const char *const methods[] = {"entropic_gan", "dp_sinkhorn", "swd_flow",
                                          "swd_flow_r",   "swd_gen",     NULL};
    static const char *const datas[] = {"halfcircle", "gaussians5", NULL};
    static const double epss[] = {1, 3, 10};
    const char *om = pg_bench_opt(argc, argv, "--method", NULL);
    const char *od = pg_bench_opt(argc, argv, "--data", NULL);
    const char *oe = pg_bench_opt(argc, argv, "--epsilon", NULL);
    run_cfg c = {.n = (size_t)atol(pg_bench_opt(argc, argv, "--n", "5000")),
                 .seed = atol(pg_bench_opt(argc, argv, "--seed", "1")),
                 .threads = atoi(pg_bench_opt(argc, argv, "--threads", "2")),
                 .extra = pg_bench_opt(argc, argv, "--spec", NULL)};
    if (c.n < 100 || c.threads < 1) {
        fprintf(stderr, "usage: privgen-bench defaults [--method M] [--data halfcircle|gaussians5] "
                        "[--epsilon E] [--n N] [--seed K] [--threads T] [--spec JSON]\n");
        return 2;
    }
    pg_threads_set(c.threads);
    int rc = 0;
    for (int i = 0; methods[i]; i++) {
        if (om && strcmp(om, methods[i]) != 0) continue;
        for (int j = 0; datas[j]; j++) {
            if (od && strcmp(od, datas[j]) != 0) continue;
            for (int k = 0; k < 3; k++) {
                if (oe && k > 0) break;
                c.method = methods[i];
                c.data = datas[j];
                c.eps = oe ? atof(oe) : epss[k];
                int r1 = one(&c);
                if (r1) rc = r1;
            }
        }
    }
    return rc;
}

PG_BENCH_REGISTER("defaults", "each method's default spec on 2-D toys at eps 1, 3, 10", defaults)
