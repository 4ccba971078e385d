/* The generator configuration's low-resolution mlp output (model.upsample),
 * the trainer scaffolding the generator methods share (build, checkpoint),
 * and dp_sinkhorn's learning-rate schedules and generated-label draws. */
#include <jansson.h>
#include <math.h>

#include "engine/core/alloc.h"
#include "engine/data/dataset.h"
#include "engine/methods/dp_sinkhorn.h"
#include "engine/methods/generator.h"
#include "engine/methods/trainer.h"
#include "support/pg_method_test.h"
#include "support/pg_test.h"

#define SIDE 8
#define D    (SIDE * SIDE)

/* n labelled 1 x 8 x 8 images in [-1, 1]: class 0 bright on the left half,
 * class 1 on the right, plus noise. */
static void make_images(size_t n, pg_dataset *ds, pg_data_desc *desc)
{
    pg_rng r;
    pg_rng_seeded(&r, 5, 0);
    float *x = pg_alloc_f32(n * D);
    int32_t *lab = pg_calloc(n, sizeof(int32_t));
    for (size_t i = 0; i < n; i++) {
        lab[i] = (int32_t)(i % 2);
        for (size_t p = 0; p < D; p++) {
            bool left = p % SIDE < SIDE / 2;
            float v = (left == (lab[i] == 0) ? 0.6f : -0.6f) + 0.2f * (float)pg_rng_normal(&r);
            x[i * D + p] = v < -1 ? -1 : v > 1 ? 1 : v;
        }
    }
    size_t shape[3] = {1, SIDE, SIDE};
    ck_assert_int_eq(pg_dataset_adopt(ds, x, lab, n, shape, 3, 2, -1.0f, 1.0f, NULL), PG_OK);
    pg_data_desc d = {.n = n,
                      .d = D,
                      .ndim = 3,
                      .shape = {1, SIDE, SIDE},
                      .lo = -1.0f,
                      .hi = 1.0f,
                      .num_classes = 2,
                      .model = PG_PRIVACY_CENTRAL,
                      .cap_epsilon = 1e6,
                      .cap_delta = 1e-5};
    *desc = d;
}

/* PyTorch's bilinear source coordinate for align_corners = false. */
static void src_of(size_t o, size_t in, size_t f, size_t *i0, size_t *i1, double *l)
{
    double s = ((double)o + 0.5) / (double)f - 0.5;
    if (s < 0) s = 0;
    *i0 = (size_t)floor(s);
    if (*i0 > in - 1) *i0 = in - 1;
    *i1 = *i0 + 1 < in ? *i0 + 1 : in - 1;
    *l = s - (double)*i0;
}

/* With upsample f the generator is exactly a plain mlp emitting the
 * (h/f) x (w/f) image, followed by bilinear upsampling: same parameter
 * count, same initial parameters (the upsampling has none), and every
 * output pixel is the brute-force bilinear mix of the plain net's output. */
START_TEST(upsampled_mlp_is_a_plain_mlp_then_bilinear)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_images(4, &ds, &desc);
    json_t *spec = json_loads("{\"model\": {\"arch\": \"mlp\", \"hidden\": [16], \"latent_dim\": 3,"
                              " \"upsample\": 2}}",
                              0, NULL);
    pg_generator g;
    pg_spec_errors e = {0};
    ck_assert_int_eq(pg_generator_config(spec, &desc, &g, &e, NULL), PG_OK);
    pg_nn *up = NULL, *plain = NULL;
    ck_assert_int_eq(pg_generator_build(&g, 5, 77, &up, NULL), PG_OK);
    const char *opts = "{\"latent\": 3, \"hidden\": [16], \"out\": 16, \"classes\": 0}";
    ck_assert_int_eq(pg_nn_create_preset("mlp", opts, 5, 77, &plain, NULL), PG_OK);
    ck_assert_uint_eq(pg_nn_out_size(up), D);
    ck_assert_uint_eq(pg_nn_param_count(up), pg_nn_param_count(plain));
    ck_assert(
        memcmp(pg_nn_params(up), pg_nn_params(plain), pg_nn_param_count(up) * sizeof(float)) == 0);
    float z[5 * 3];
    pg_rng r;
    pg_rng_seeded(&r, 3, 0);
    for (size_t i = 0; i < 15; i++) z[i] = (float)pg_rng_normal(&r);
    const float *yu, *yp;
    ck_assert_int_eq(pg_nn_forward(up, z, NULL, 5, &yu, NULL), PG_OK);
    ck_assert_int_eq(pg_nn_forward(plain, z, NULL, 5, &yp, NULL), PG_OK);
    for (size_t b = 0; b < 5; b++)
        for (size_t oy = 0; oy < SIDE; oy++)
            for (size_t ox = 0; ox < SIDE; ox++) {
                size_t y0, y1, x0, x1;
                double ly, lx;
                src_of(oy, SIDE / 2, 2, &y0, &y1, &ly);
                src_of(ox, SIDE / 2, 2, &x0, &x1, &lx);
                const float *p = yp + b * 16;
                double want = (1 - ly) * ((1 - lx) * p[y0 * 4 + x0] + lx * p[y0 * 4 + x1]) +
                              ly * ((1 - lx) * p[y1 * 4 + x0] + lx * p[y1 * 4 + x1]);
                ck_assert_double_eq_tol(yu[b * D + oy * SIDE + ox], want, 1e-5);
            }
    pg_nn_free(up);
    pg_nn_free(plain);
    pg_generator_free(&g);
    json_decref(spec);
    pg_dataset_free(&ds);
}
END_TEST

/* The shared scaffolding: train_init builds the same network as
 * pg_generator_build under the initialization stream and an optimizer with
 * the spec's learning rate; a checkpoint written by ckpt_save reopens with
 * the same parameters, step, average and extra tensor; and ckpt_open refuses
 * another method's checkpoint, leaving every output empty. */
START_TEST(scaffolding_builds_saves_and_reopens)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_images(4, &ds, &desc);
    json_t *spec = json_loads("{\"model\": {\"arch\": \"mlp\", \"hidden\": [8], \"latent_dim\": 3},"
                              " \"train\": {\"lr\": 0.25, \"ema\": 0.5}}",
                              0, NULL);
    pg_generator g;
    pg_spec_errors e = {0};
    ck_assert_int_eq(pg_generator_config(spec, &desc, &g, &e, NULL), PG_OK);
    pg_nn *net = NULL, *ref = NULL;
    pg_nn_opt *opt = NULL;
    pg_generator_ema ema = {0};
    ck_assert_int_eq(pg_generator_train_init(&g, spec, 6, 42, 1e-3, &net, &opt, &ema, NULL), PG_OK);
    ck_assert_int_eq(pg_generator_build(&g, 6, 42 ^ ((uint64_t)PG_STREAM_INIT << 56), &ref, NULL),
                     PG_OK);
    size_t np = pg_nn_param_count(net);
    ck_assert(memcmp(pg_nn_params(net), pg_nn_params(ref), np * sizeof(float)) == 0);
    ck_assert_double_eq(ema.decay, 0.5);
    /* Move the parameters and the average apart so the round trip shows. */
    for (size_t i = 0; i < np; i++) pg_nn_params(net)[i] += 0.5f;
    pg_generator_ema_update(&ema, net);
    float more_data[3] = {1.5f, -2.0f, 3.25f};
    pg_ckpt_tensor more = {.name = "test.extra", .ndim = 1, .dims = {3}, .data = more_data};
    json_t *h =
        json_pack("{s:s,s:I,s:I,s:o}", "method", "toy", "step", (json_int_t)7, "ema_updates",
                  (json_int_t)ema.updates, "generator", pg_generator_to_json(&g));
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(pg_generator_ckpt_save(h, net, opt, &ema, &more, 1, &bytes, &len, NULL),
                     PG_OK);

    pg_nn *net2 = NULL;
    pg_nn_opt *opt2 = NULL;
    pg_generator_ema ema2 = {0};
    json_t *h2 = NULL;
    long step = -1;
    pg_ckpt rest;
    pg_error err = {0};
    ck_assert_msg(pg_generator_ckpt_open(&g, "toy", spec, bytes, len, 6, &net2, &opt2, &ema2, &h2,
                                         &step, &rest, &err) == PG_OK,
                  "%s", err.msg);
    ck_assert_int_eq(step, 7);
    ck_assert_ptr_nonnull(opt2);
    ck_assert(memcmp(pg_nn_params(net2), pg_nn_params(net), np * sizeof(float)) == 0);
    ck_assert_uint_eq(ema2.updates, ema.updates);
    ck_assert(memcmp(ema2.avg, ema.avg, np * sizeof(float)) == 0);
    ck_assert(memcmp(ema.avg, pg_nn_params(net), np * sizeof(float)) != 0);
    const pg_ckpt_tensor *t = pg_ckpt_find(&rest, "test.extra");
    ck_assert_ptr_nonnull(t);
    ck_assert(t->dims[0] == 3 && memcmp(t->data, more_data, sizeof more_data) == 0);
    json_decref(h2);
    pg_ckpt_free(&rest);
    pg_generator_train_free(&g, net2, opt2, &ema2);

    /* Another method's checkpoint: refused, nothing left to release. */
    ck_assert_int_eq(pg_generator_config(spec, &desc, &g, &e, NULL), PG_OK);
    ck_assert_int_eq(pg_generator_ckpt_open(&g, "swd_gen", spec, bytes, len, 6, &net2, &opt2, &ema2,
                                            &h2, &step, &rest, &err),
                     PG_EFORMAT);
    ck_assert_str_eq(err.msg, "not a swd_gen checkpoint");
    ck_assert(!net2 && !opt2 && !h2 && !ema2.avg && rest.n == 0);
    ck_assert_int_eq(pg_generator_ckpt_open(&g, "entropic_gan", spec, bytes, len, 6, &net2, &opt2,
                                            NULL, &h2, &step, NULL, &err),
                     PG_EFORMAT);
    ck_assert_str_eq(err.msg, "not an entropic_gan checkpoint");
    free(bytes);
    pg_nn_free(ref);
    pg_generator_train_free(&g, net, opt, &ema);
    json_decref(spec);
    pg_dataset_free(&ds);
}
END_TEST

static json_t *resolve(const char *text, const pg_data_desc *desc, pg_spec_errors *e)
{
    return pg_test_resolve(pg_method_find("dp_sinkhorn"), text, &(pg_job_data){.desc = desc}, e);
}

START_TEST(upsample_validation_names_the_field)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_images(4, &ds, &desc);
    pg_spec_errors e;
    static const char *const bad[] = {
        "{\"privacy\": {\"noise_multiplier\": 1}, \"model\": {\"upsample\": 3}}",
        "{\"privacy\": {\"noise_multiplier\": 1}, \"model\": {\"upsample\": 0}}",
        "{\"privacy\": {\"noise_multiplier\": 1}, \"model\": {\"upsample\": 17}}",
        "{\"privacy\": {\"noise_multiplier\": 1}, \"model\": {\"upsample\": 2.5}}",
        "{\"privacy\": {\"noise_multiplier\": 1},"
        " \"model\": {\"arch\": \"conv_small\", \"upsample\": 2}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_ptr_null(resolve(bad[i], &desc, &e));
        ck_assert_msg(pg_test_has_error(&e, "model.upsample"), "case %zu", i);
    }
    /* Vector rows have no image to upsample. */
    pg_data_desc flat = desc;
    flat.ndim = 1;
    flat.shape[0] = D, flat.shape[1] = flat.shape[2] = 0;
    ck_assert_ptr_null(resolve(
        "{\"privacy\": {\"noise_multiplier\": 1}, \"model\": {\"upsample\": 2}}", &flat, &e));
    ck_assert(pg_test_has_error(&e, "model.upsample"));
    json_t *r = resolve("{\"privacy\": {\"noise_multiplier\": 1}, \"model\": {\"upsample\": 4},"
                        " \"train\": {\"batch_size\": 2}}",
                        &desc, &e);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "model"), "upsample")),
                     4);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

/* A job with the low-resolution generator trains, and its checkpoint
 * restores and serves exactly (the architecture lives in the bytes). */
START_TEST(upsampled_job_trains_and_round_trips)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_images(60, &ds, &desc);
    pg_spec_errors e;
    json_t *r = resolve("{\"seed\": 4, \"privacy\": {\"noise_multiplier\": 1},"
                        " \"train\": {\"steps\": 5, \"batch_size\": 10},"
                        " \"model\": {\"upsample\": 2, \"hidden\": [16], \"conditional\": true}}",
                        &desc, &e);
    ck_assert_ptr_nonnull(r);
    const pg_method *m = pg_method_find("dp_sinkhorn");
    pg_trainer *t = NULL;
    pg_error err = {0};
    ck_assert_msg(m->create(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, &t, &err) == PG_OK,
                  "%s", err.msg);
    pg_step_report rep;
    for (int i = 0; i < 5; i++) ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(m->save(t, &bytes, &len, NULL), PG_OK);
    pg_test_checkpoint_round_trip(m, r, &(pg_job_data){.desc = &desc, .rows = &ds}, bytes, len, 7,
                                  D, 1);
    free(bytes);
    m->destroy(t);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

START_TEST(lr_schedules_closed_forms)
{
    ck_assert_double_eq(pg_dp_sinkhorn_lr(0.1, 0, 7, 10), 0.1);
    ck_assert_double_eq(pg_dp_sinkhorn_lr(0.1, 0, 12, 10), 0.1);
    ck_assert_double_eq(pg_dp_sinkhorn_lr(0.1, 1, 0, 10), 0.1);
    ck_assert_double_eq_tol(pg_dp_sinkhorn_lr(0.1, 1, 5, 10), 0.05, 1e-15);
    ck_assert_double_eq_tol(pg_dp_sinkhorn_lr(0.1, 1, 9, 10), 0.05 * (1 + cos(0.9 * M_PI)), 1e-15);
    ck_assert(pg_dp_sinkhorn_lr(0.1, 1, 9, 10) > 0);
    ck_assert_double_eq(pg_dp_sinkhorn_lr(0.1, 1, 10, 10), 0);
    ck_assert_double_eq(pg_dp_sinkhorn_lr(0.1, 2, 0, 8), 0.1);
    ck_assert_double_eq_tol(pg_dp_sinkhorn_lr(0.1, 2, 6, 8), 0.025, 1e-15);
    ck_assert_double_eq(pg_dp_sinkhorn_lr(0.1, 2, 9, 8), 0);
}
END_TEST

/* The trainer steps with the schedule's rate: after k steps its last rate
 * is the closed form at step k - 1, for each schedule. */
START_TEST(trainer_uses_the_schedule)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_images(60, &ds, &desc);
    static const char *const decay[] = {"none", "cosine", "linear"};
    for (int s = 0; s < 3; s++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"privacy\": {\"noise_multiplier\": 1}, \"model\": {\"hidden\": [8]},"
                 " \"train\": {\"steps\": 6, \"batch_size\": 10, \"lr\": 0.01,"
                 " \"lr_decay\": \"%s\"}}",
                 decay[s]);
        pg_spec_errors e;
        json_t *r = resolve(text, &desc, &e);
        ck_assert_ptr_nonnull(r);
        const pg_method *m = pg_method_find("dp_sinkhorn");
        pg_trainer *t = NULL;
        ck_assert_int_eq(m->create(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, &t, NULL),
                         PG_OK);
        pg_step_report rep;
        pg_dp_sinkhorn_info info;
        for (long k = 1; k <= 6; k++) {
            ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
            ck_assert_int_eq(pg_dp_sinkhorn_info_get(t, &info, NULL), PG_OK);
            ck_assert_double_eq(info.lr, pg_dp_sinkhorn_lr(0.01, s, k - 1, 6));
        }
        if (s == 2) ck_assert_double_eq_tol(info.lr, 0.01 / 6, 1e-12);
        m->destroy(t);
        json_decref(r);
    }
    pg_spec_errors e;
    ck_assert_ptr_null(resolve("{\"privacy\": {\"noise_multiplier\": 1},"
                               " \"train\": {\"lr_decay\": \"exponential\"}}",
                               &desc, &e));
    ck_assert(pg_test_has_error(&e, "train.lr_decay"));
    ck_assert_ptr_null(resolve("{\"privacy\": {\"noise_multiplier\": 1},"
                               " \"train\": {\"generated_labels\": \"stratified\"}}",
                               &desc, &e));
    ck_assert(pg_test_has_error(&e, "train.generated_labels"));
    pg_dataset_free(&ds);
}
END_TEST

/* Balanced labels: in each block every class count is floor or ceil of
 * block / C, the starting class varies over draws (all C seen), and the
 * result is a function of the stream alone. Uniform labels: frequencies
 * match 1/C (chi-square over 20000 labels, 9 df, 99.9 % bound 27.9). */
START_TEST(generated_labels_balanced_and_uniform)
{
    enum { C = 10, N = 25, NP = 10 };
    int32_t lab[N + NP], again[N + NP];
    pg_rng r, r2;
    pg_rng_seeded(&r, 11, 0);
    pg_rng_seeded(&r2, 11, 0);
    bool first_seen[C] = {false};
    for (int it = 0; it < 200; it++) {
        pg_dp_sinkhorn_draw_labels(&r, true, N, NP, C, lab);
        pg_dp_sinkhorn_draw_labels(&r2, true, N, NP, C, again);
        ck_assert(memcmp(lab, again, sizeof lab) == 0);
        int cnt[C] = {0}, cnt2[C] = {0};
        for (int i = 0; i < N; i++) cnt[lab[i]]++;
        for (int i = N; i < N + NP; i++) cnt2[lab[i]]++;
        for (int c = 0; c < C; c++) {
            ck_assert(cnt[c] == N / C || cnt[c] == N / C + 1);
            ck_assert_int_eq(cnt2[c], NP / C);
        }
        first_seen[lab[0]] = true;
    }
    for (int c = 0; c < C; c++) ck_assert(first_seen[c]);
    int freq[C] = {0};
    for (int it = 0; it < 20000 / (N + NP) + 1; it++) {
        pg_dp_sinkhorn_draw_labels(&r, false, N, NP, C, lab);
        for (int i = 0; i < N + NP; i++) freq[lab[i]]++;
    }
    double total = 0, chi = 0;
    for (int c = 0; c < C; c++) total += freq[c];
    for (int c = 0; c < C; c++) chi += pow(freq[c] - total / C, 2) / (total / C);
    ck_assert_msg(chi < 27.9, "chi-square %g", chi);
    pg_dp_sinkhorn_draw_labels(&r, true, 3, 2, 0, lab);
    for (int i = 0; i < 5; i++) ck_assert_int_eq(lab[i], 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("generator");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, upsampled_mlp_is_a_plain_mlp_then_bilinear);
    tcase_add_test(tc, scaffolding_builds_saves_and_reopens);
    tcase_add_test(tc, upsample_validation_names_the_field);
    tcase_add_test(tc, upsampled_job_trains_and_round_trips);
    tcase_add_test(tc, lr_schedules_closed_forms);
    tcase_add_test(tc, trainer_uses_the_schedule);
    tcase_add_test(tc, generated_labels_balanced_and_uniform);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
