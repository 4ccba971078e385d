/* privgen-bench repro-fmnist (wired as `privgen-bench repro fmnist`): the
 * downstream-utility benchmark of the DP image-generation literature (paper
 * 001, Table 1). A central-DP method trains a class-conditional generator on
 * the 60k Fashion-MNIST training images; 60k labelled synthetic images train
 * the logistic regression, which is scored on the real 10k test images.
 *
 * Generic over --method: common flags become the common spec paths (model.*,
 * train.*, privacy, seed) and method-specific ones arrive as --spec JSON
 * (deep-merged) or repeated --set path=JSON. The shorthands below apply only
 * to methods whose catalogue has those paths.
 *
 * --time-budget / --cpu-budget stop training early; the reported epsilon is
 * the accountant's for the steps actually taken (sigma stays calibrated for
 * the planned steps, so stopping early spends less than the target). CPU time
 * is the budget to use on a shared machine: wall time there measures the
 * neighbours.
 *
 * --public-split N: the first N training images become a public dataset
 * (unlabelled) and the remaining 60000 - N the private one; the JSON reports
 * "public_rows" and "private_rows". Only methods with a latent mode use it
 * (swd_flow, swd_flow_r: an autoencoder trained on the public rows, the flow
 * on normalized codes [z ; alpha onehot(y)], samples decoded). A public split
 * of the same distribution is what the literature uses for such baselines.
 *
 * Measured figures, the commands that produced them and what they mean:
 * docs/benchmarks.md. */
#include <jansson.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "bench/repro.h"
#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/data/fmnist.h"
#include "engine/data/npy.h"
#include "engine/methods/method.h"
#include "engine/methods/spec.h"

static int usage(void)
{
    fprintf(
        stderr,
        "usage: privgen-bench repro-fmnist --method M --epsilon E --delta D --steps T "
        "--batch B [--arch dcgan28|mlp|conv_small] [--threads 2] [--time-budget SEC] "
        "[--cpu-budget SEC] [--lr LR] [--seed K] [--png PATH] [--synthetic N] [--train-limit N] "
        "[--skip-real] [--eval-every STEPS] [--public-split N] [--spec JSON] [--set path=JSON "
        "...] [--save-synthetic PREFIX] [--logreg-l2 L] [--logreg-max-iter I]\n"
        "  --save-synthetic writes PREFIX.x.npy and PREFIX.y.npy (the scored synthetic set)\n"
        "  dp_sinkhorn shorthands: --reg L --m M --clip C --clip-mode matrix|row --p P "
        "--cost mixed|sqeuclidean --alpha A --sinkhorn-iters I --ema DECAY "
        "--lr-decay none|cosine|linear --upsample F --gen-labels uniform|balanced "
        "--calibrate true|false --calib-noise S (class-mean calibration, its noise multiplier)\n"
        "  --eval-every S prints an interim {\"step\",\"logreg_accuracy\",...} line every S "
        "steps (evaluation time is not counted in seconds or the time budget)\n"
        "  swd_gen / swd_flow_r shorthands: --projections K --clip-norm R "
        "--class-alpha A --gen-batch B --particles N --levels L\n");
    return 2;
}

/* Deep merge of src into dst (objects recursively, everything else replaced). */
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

/* Does the method's catalogue list this parameter path? */
static int has_param(const pg_method *m, const char *path)
{
    json_t *cat = m->catalogue();
    size_t i;
    json_t *p;
    int found = 0;
    json_array_foreach(cat, i, p)
    {
        const char *name = json_string_value(json_object_get(p, "name"));
        if (name && strcmp(name, path) == 0) found = 1;
    }
    json_decref(cat);
    return found;
}

static int set_num(json_t *spec, const pg_method *m, int argc, char **argv, const char *flag,
                   const char *path)
{
    const char *v = pg_bench_opt(argc, argv, flag, NULL);
    if (!v) return 0;
    if (!has_param(m, path)) {
        fprintf(stderr, "repro-fmnist: %s does not apply to %s\n", flag, m->name);
        return -1;
    }
    json_t *j = json_loads(v, JSON_DECODE_ANY, NULL);
    if (!j) j = json_string(v);
    pg_spec_set(spec, path, j);
    return 0;
}

static json_t *build_spec(const pg_method *m, int argc, char **argv)
{
    double eps = atof(pg_bench_opt(argc, argv, "--epsilon", "10"));
    double delta = atof(pg_bench_opt(argc, argv, "--delta", "1e-5"));
    const char *sigma = pg_bench_opt(argc, argv, "--noise-multiplier", NULL);
    json_t *spec =
        json_pack("{s:I}", "seed", (json_int_t)atol(pg_bench_opt(argc, argv, "--seed", "1")));
    /* Generator methods get a conditional generator; particle flows have
     * no model (their labels come from labels.class_alpha). */
    if (has_param(m, "model.arch")) {
        pg_spec_set(spec, "model.arch", json_string(pg_bench_opt(argc, argv, "--arch", "dcgan28")));
        pg_spec_set(spec, "model.conditional", json_true());
    }
    const char *steps_path = has_param(m, "train.steps") ? "train.steps" : "flow.steps";
    pg_spec_set(spec, steps_path,
                json_integer((json_int_t)atol(pg_bench_opt(argc, argv, "--steps", "2000"))));
    /* The SWD methods read train.batch_size as the rows of each release
     * (all rows when absent): only set when asked, or for dp_sinkhorn. */
    const char *batch = pg_bench_opt(argc, argv, "--batch", NULL);
    if (has_param(m, "train.batch_size") && (batch || strcmp(m->name, "dp_sinkhorn") == 0))
        pg_spec_set(spec, "train.batch_size", json_integer((json_int_t)atol(batch ? batch : "50")));
    if (sigma)
        pg_spec_set(spec, "privacy.noise_multiplier", json_real(atof(sigma)));
    else
        pg_spec_set(spec, "privacy", json_pack("{s:f,s:f}", "epsilon", eps, "delta", delta));
    const char *lr = pg_bench_opt(argc, argv, "--lr", NULL);
    if (lr) pg_spec_set(spec, "train.lr", json_real(atof(lr)));
    static const char *const SHORT[][2] = {
        {"--reg", "ot.reg"},
        {"--m", "ot.l1_weight"},
        {"--clip", "dp.clip_norm"},
        {"--clip-mode", "dp.clip"},
        {"--p", "ot.debias_fraction"},
        {"--cost", "ot.cost"},
        {"--alpha", "ot.class_alpha"},
        {"--sinkhorn-iters", "ot.max_iter"},
        {"--optimizer", "train.optimizer"},
        {"--weight-decay", "train.weight_decay"},
        {"--latent-dim", "model.latent_dim"},
        {"--ema", "train.ema"},
        {"--lr-decay", "train.lr_decay"},
        {"--upsample", "model.upsample"},
        {"--gen-labels", "train.generated_labels"},
        {"--projections", "projections.per_step"},
        {"--clip-norm", "privacy.clip_norm"},
        {"--class-alpha", "labels.class_alpha"},
        {"--gen-batch", "train.gen_batch"},
        {"--particles", "flow.particles"},
        {"--levels", "flow.quantile_levels"},
        {"--calibrate", "calibration.class_means"},
        {"--calib-noise", "calibration.noise_multiplier"},
    };
    for (size_t i = 0; i < sizeof SHORT / sizeof SHORT[0]; i++)
        if (set_num(spec, m, argc, argv, SHORT[i][0], SHORT[i][1])) goto bad;
    const char *extra = pg_bench_opt(argc, argv, "--spec", NULL);
    if (extra) {
        json_t *j = json_loads(extra, 0, NULL);
        if (!json_is_object(j)) {
            fprintf(stderr, "repro-fmnist: --spec is not a JSON object\n");
            json_decref(j);
            goto bad;
        }
        merge(spec, j);
        json_decref(j);
    }
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--set") != 0) continue;
        char path[128];
        const char *eq = strchr(argv[i + 1], '=');
        if (!eq || (size_t)(eq - argv[i + 1]) >= sizeof path) {
            fprintf(stderr, "repro-fmnist: --set wants path=JSON\n");
            goto bad;
        }
        memcpy(path, argv[i + 1], (size_t)(eq - argv[i + 1]));
        path[eq - argv[i + 1]] = 0;
        json_t *j = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
        if (!j) j = json_string(eq + 1);
        pg_spec_set(spec, path, j);
    }
    return spec;
bad:
    json_decref(spec);
    return NULL;
}

/* 10 x 10 grid, one row per class, [-1, 1] -> 0..255 grey, 1 px gaps. */
static int write_grid(const char *path, const float *img, pg_error *err)
{
    enum { S = 28, G = 10, W = G * (S + 1) + 1 };
    unsigned char *pix = calloc((size_t)W * W, 1);
    png_bytep *rows = calloc(W, sizeof *rows);
    FILE *f = fopen(path, "wb");
    png_structp png = f ? png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL) : NULL;
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int rc = PG_OK;
    if (!pix || !rows || !info) {
        rc = pg_error_set(err, PG_EIO, "cannot write the sample grid to %s", path);
        goto out;
    }
    if (setjmp(png_jmpbuf(png))) {
        rc = pg_error_set(err, PG_EIO, "libpng failed writing %s", path);
        goto out;
    }
    for (int c = 0; c < G; c++)
        for (int k = 0; k < G; k++)
            for (int i = 0; i < S; i++)
                for (int j = 0; j < S; j++) {
                    float v = img[((size_t)(c * G + k) * S + (size_t)i) * S + (size_t)j];
                    float u = (v + 1.0f) * 127.5f;
                    u = u < 0 ? 0 : u > 255 ? 255 : u;
                    pix[(size_t)(1 + c * (S + 1) + i) * W + (size_t)(1 + k * (S + 1) + j)] =
                        (unsigned char)(u + 0.5f);
                }
    for (int i = 0; i < W; i++) rows[i] = pix + (size_t)i * W;
    png_init_io(png, f);
    png_set_IHDR(png, info, W, W, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    png_write_image(png, rows);
    png_write_end(png, NULL);
out:
    if (png) png_destroy_write_struct(&png, info ? &info : NULL);
    if (f) fclose(f);
    free(rows);
    free(pix);
    return rc;
}

/* The first n training images become the public set (unlabelled, as public
 * data would be); tr keeps the rest as the private data. */
static int split_public(pg_dataset *tr, size_t n, pg_dataset *pub, pg_error *err)
{
    if (n >= tr->n)
        return pg_error_set(err, PG_EINVAL, "--public-split %zu leaves no private rows", n);
    size_t d = tr->d, rest = tr->n - n;
    int rc = pg_dataset_alloc(pub, n, tr->shape, tr->ndim, 0, tr->lo, tr->hi, err);
    if (rc) return rc;
    memcpy(pub->x, tr->x, n * d * sizeof(float));
    pg_dataset priv = {0};
    if ((rc = pg_dataset_alloc(&priv, rest, tr->shape, tr->ndim, tr->num_classes, tr->lo, tr->hi,
                               err))) {
        pg_dataset_free(pub);
        return rc;
    }
    memcpy(priv.x, tr->x + n * d, rest * d * sizeof(float));
    memcpy(priv.labels, tr->labels + n, rest * sizeof(int32_t));
    pg_dataset_free(tr);
    *tr = priv;
    return PG_OK;
}

/* The downstream classifier's settings (0 = the library default). */
typedef struct logreg_cfg {
    double l2;
    int max_iter;
} logreg_cfg;

/* Writes one float32 .npy file (what np.load reads). */
static int save_npy(const char *path, const float *data, const size_t *shape, int ndim,
                    pg_error *err)
{
    size_t len = pg_npy_size(shape, ndim);
    void *buf = len ? malloc(len) : NULL;
    if (!buf) return pg_error_set(err, PG_ENOMEM, "cannot serialize %s", path);
    int rc = pg_npy_write(data, shape, ndim, buf, len, err);
    FILE *f = rc == PG_OK ? fopen(path, "wb") : NULL;
    if (rc == PG_OK && (!f || fwrite(buf, 1, len, f) != len))
        rc = pg_error_set(err, PG_EIO, "cannot write %s", path);
    if (f && fclose(f) != 0 && rc == PG_OK) rc = pg_error_set(err, PG_EIO, "cannot write %s", path);
    free(buf);
    return rc;
}

/* PREFIX.x.npy (n x 784 in [-1, 1]) and PREFIX.y.npy (n labels, as float32):
 * the exact synthetic set the logistic regression saw, so an outside
 * classifier (scikit-learn in bench/peers) can score the same images. */
static int save_synthetic(const char *prefix, const float *x, const int32_t *y, size_t n, size_t d,
                          pg_error *err)
{
    char path[4096];
    size_t shape[2] = {n, d};
    snprintf(path, sizeof path, "%s.x.npy", prefix);
    int rc = save_npy(path, x, shape, 2, err);
    float *yf = rc == PG_OK ? malloc(n * sizeof *yf) : NULL;
    if (rc == PG_OK && !yf) rc = pg_error_set(err, PG_ENOMEM, "cannot allocate labels");
    if (rc == PG_OK) {
        for (size_t i = 0; i < n; i++) yf[i] = (float)y[i];
        snprintf(path, sizeof path, "%s.y.npy", prefix);
        rc = save_npy(path, yf, shape, 1, err);
    }
    free(yf);
    return rc;
}

/* Samples nsyn labelled images (classes balanced) from the trainer's current
 * snapshot and scores the logistic regression trained on them. */
static int score_snapshot(const pg_method *m, pg_trainer *t, size_t nsyn, size_t d,
                          const pg_dataset *te, const logreg_cfg *lr, float *syn, int32_t *syn_lab,
                          pg_snapshot **keep, double *acc, pg_error *err)
{
    pg_snapshot *snap = NULL;
    int rc = m->snapshot(t, &snap, err);
    for (int c = 0; rc == PG_OK && c < PG_FMNIST_CLASSES; c++) {
        size_t a = nsyn * (size_t)c / PG_FMNIST_CLASSES,
               b = nsyn * (size_t)(c + 1) / PG_FMNIST_CLASSES;
        rc = pg_snapshot_sample(snap, b - a, 1000 + (uint64_t)c, c, syn + a * d, err);
        for (size_t i = a; i < b; i++) syn_lab[i] = c;
    }
    if (rc == PG_OK)
        rc = pg_bench_logreg_score(syn, syn_lab, nsyn, te, lr->l2, lr->max_iter, acc, err);
    if (rc == PG_OK && keep)
        *keep = snap;
    else if (snap)
        pg_snapshot_release(snap);
    return rc;
}

int pg_bench_repro_fmnist(int argc, char **argv)
{
    const char *mname = pg_bench_opt(argc, argv, "--method", "dp_sinkhorn");
    const pg_method *m = pg_method_find(mname);
    int threads = atoi(pg_bench_opt(argc, argv, "--threads", "2"));
    double budget = atof(pg_bench_opt(argc, argv, "--time-budget", "0"));
    double cpu_budget = atof(pg_bench_opt(argc, argv, "--cpu-budget", "0"));
    const char *png_path = pg_bench_opt(argc, argv, "--png", "fmnist_samples.png");
    size_t nsyn = (size_t)atol(pg_bench_opt(argc, argv, "--synthetic", "60000"));
    size_t limit = (size_t)atol(pg_bench_opt(argc, argv, "--train-limit", "0"));
    const char *dir = pg_bench_opt(argc, argv, "--dir", NULL);
    long npub = atol(pg_bench_opt(argc, argv, "--public-split", "0"));
    long eval_every = atol(pg_bench_opt(argc, argv, "--eval-every", "0"));
    const char *save = pg_bench_opt(argc, argv, "--save-synthetic", NULL);
    logreg_cfg lrc = {.l2 = atof(pg_bench_opt(argc, argv, "--logreg-l2", "0")),
                      .max_iter = atoi(pg_bench_opt(argc, argv, "--logreg-max-iter", "0"))};
    if (pg_bench_has(argc, argv, "--help") || pg_bench_has(argc, argv, "-h")) return usage();
    if (lrc.l2 < 0 || lrc.max_iter < 0) return usage();
    if (!m || threads < 1 || nsyn < 10 || eval_every < 0 || npub < 0) return usage();
    json_t *spec = build_spec(m, argc, argv);
    if (!spec) return usage();
    pg_threads_set(threads);
    pg_error err = {0};
    pg_dataset tr = {0}, te = {0}, pub = {0};
    json_t *r = NULL;
    pg_trainer *t = NULL;
    pg_snapshot *snap = NULL;
    float *syn = NULL;
    int32_t *syn_lab = NULL;
    int rc = pg_fmnist_load(dir, PG_FMNIST_TRAIN, limit, &tr, &err);
    if (rc == PG_OK) rc = pg_fmnist_load(dir, PG_FMNIST_TEST, 0, &te, &err);
    if (rc) goto fail;
    double real_acc = -1;
    if (!pg_bench_has(argc, argv, "--skip-real")) {
        rc = pg_bench_logreg_score(tr.x, tr.labels, tr.n, &te, lrc.l2, lrc.max_iter, &real_acc,
                                   &err);
        if (rc) goto fail;
    }
    if (npub > 0 && (rc = split_public(&tr, (size_t)npub, &pub, &err))) goto fail;
    pg_data_desc desc = {.n = tr.n,
                         .d = tr.d,
                         .ndim = 3,
                         .shape = {1, 28, 28},
                         .lo = -1.0f,
                         .hi = 1.0f,
                         .num_classes = PG_FMNIST_CLASSES,
                         .model = PG_PRIVACY_CENTRAL,
                         .cap_delta = atof(pg_bench_opt(argc, argv, "--delta", "1e-5"))};
    pg_data_desc pdesc = desc;
    pdesc.n = pub.n;
    pdesc.num_classes = 0;
    pdesc.model = PG_PRIVACY_PUBLIC;
    pg_job_data in = {.desc = &desc, .rows = &tr};
    if (npub > 0) {
        in.public_desc = &pdesc;
        in.public_rows = &pub;
    }
    pg_spec_errors errors = {0};
    if (m->validate(spec, &in, &r, &errors, &err) != PG_OK) {
        for (int i = 0; i < errors.count; i++)
            fprintf(stderr, "repro-fmnist: %s: %s\n", errors.items[i].field,
                    errors.items[i].message);
        rc = PG_EINVAL;
        if (!errors.count) goto fail;
        goto done;
    }
    pg_privacy_plan plan;
    if ((rc = m->plan(r, &in, &plan, &err))) goto fail;
    char *rtext = json_dumps(r, JSON_COMPACT);
    fprintf(stderr,
            "repro-fmnist: spec %s\nrepro-fmnist: plan epsilon %.4f at delta %g, sigma %.4f, q "
            "%.3g, %ld steps\n",
            rtext, plan.epsilon, plan.delta, plan.noise_multiplier, plan.sampling_rate, plan.steps);
    free(rtext);

    syn = pg_alloc_f32(nsyn * tr.d);
    syn_lab = pg_calloc(nsyn, sizeof(int32_t));
    if (!syn || !syn_lab) {
        rc = pg_error_set(&err, PG_ENOMEM, "cannot allocate %zu synthetic images", nsyn);
        goto fail;
    }
    double t0 = pg_bench_now_ms(), eval_ms = 0;
    clock_t c0 = clock(), eval_clock = 0;
    if ((rc = m->create(r, &in, threads, &t, &err))) goto fail;
    double setup = (pg_bench_now_ms() - t0) / 1e3;
    if (npub > 0)
        fprintf(stderr, "repro-fmnist: setup (autoencoder on %zu public rows) %.1f s\n", pub.n,
                setup);
    pg_step_report rep = {0};
    double eps = 0;
    long steps = 0;
    for (;;) {
        double el = (pg_bench_now_ms() - t0 - eval_ms) / 1e3;
        double cpu_el = (double)(clock() - c0 - eval_clock) / CLOCKS_PER_SEC;
        /* Stop before a step that would overrun either budget (the CPU one
         * makes runs on a shared machine comparable with a quiet one). */
        if (budget > 0 && steps > 0 && el + el / (double)steps > budget) break;
        if (cpu_budget > 0 && steps > 0 && cpu_el + cpu_el / (double)steps > cpu_budget) break;
        if ((rc = m->step(t, &rep, &err))) goto fail;
        if (rep.step > steps) {
            steps = rep.step;
            eps = rep.epsilon_spent;
        }
        if (steps % 200 == 0 && rep.step == steps)
            fprintf(stderr, "repro-fmnist: step %ld eps %.3f loss %.3f %.0f s\n", steps, eps,
                    rep.loss, el);
        if (rep.done) break;
        if (eval_every > 0 && rep.step == steps && steps % eval_every == 0) {
            double e0 = pg_bench_now_ms();
            clock_t ec = clock();
            double acc;
            if ((rc = score_snapshot(m, t, nsyn, tr.d, &te, &lrc, syn, syn_lab, NULL, &acc, &err)))
                goto fail;
            eval_ms += pg_bench_now_ms() - e0;
            eval_clock += clock() - ec;
            printf("{\"bench\":\"repro\",\"experiment\":\"fmnist\",\"interim\":true,"
                   "\"step\":%ld,\"epsilon\":%.4f,\"logreg_accuracy\":%.4f,\"seconds\":%.1f,"
                   "\"cpu_seconds\":%.1f}\n",
                   steps, eps, acc, (pg_bench_now_ms() - t0 - eval_ms) / 1e3,
                   (double)(clock() - c0 - eval_clock) / CLOCKS_PER_SEC);
            fflush(stdout);
        }
    }
    double secs = (pg_bench_now_ms() - t0 - eval_ms) / 1e3;
    double cpu = (double)(clock() - c0 - eval_clock) / CLOCKS_PER_SEC;

    /* 60k labelled synthetic images, classes balanced. */
    double syn_acc;
    if ((rc = score_snapshot(m, t, nsyn, tr.d, &te, &lrc, syn, syn_lab, &snap, &syn_acc, &err)))
        goto fail;
    if (save && (rc = save_synthetic(save, syn, syn_lab, nsyn, tr.d, &err))) goto fail;
    float grid[100 * 784];
    for (int c = 0; c < PG_FMNIST_CLASSES; c++)
        if ((rc = pg_snapshot_sample(snap, 10, 77 + (uint64_t)c, c, grid + (size_t)c * 10 * 784,
                                     &err)))
            goto fail;
    if ((rc = write_grid(png_path, grid, &err))) goto fail;
    char real_txt[32], calib_txt[32] = "null";
    if (pg_spec_bool(r, "calibration.class_means", false))
        snprintf(calib_txt, sizeof calib_txt, "%.6g",
                 pg_spec_num(r, "calibration.noise_multiplier", 0));
    if (real_acc >= 0)
        snprintf(real_txt, sizeof real_txt, "%.4f", real_acc);
    else
        snprintf(real_txt, sizeof real_txt, "null");
    printf("{\"bench\":\"repro\",\"experiment\":\"fmnist\",\"method\":\"%s\",\"arch\":\"%s\","
           "\"logreg_accuracy\":%.4f,\"real_logreg_accuracy\":%s,\"epsilon\":%.4f,"
           "\"delta\":%g,\"noise_multiplier\":%.6g,\"sampling_rate\":%.6g,\"steps\":%ld,"
           "\"planned_steps\":%ld,\"batch\":%ld,\"seconds\":%.1f,\"cpu_seconds\":%.1f,"
           "\"public_rows\":%zu,\"private_rows\":%zu,\"setup_seconds\":%.1f,\"png\":\"%s\","
           "\"calibration_noise_multiplier\":%s}\n",
           m->name, pg_spec_str(r, "model.arch", pg_spec_get(r, "latent") ? "latent_mlp" : "none"),
           syn_acc, real_txt, eps, plan.delta, plan.noise_multiplier, plan.sampling_rate, steps,
           plan.steps, pg_spec_int(r, "train.batch_size", 0), secs, cpu, pub.n, tr.n, setup,
           png_path, calib_txt);
    rc = PG_OK;
    goto done;
fail:
    fprintf(stderr, "repro-fmnist: %s\n", err.msg);
done:
    if (snap) pg_snapshot_release(snap);
    if (t) m->destroy(t);
    pg_free(syn);
    pg_free(syn_lab);
    json_decref(r);
    json_decref(spec);
    pg_dataset_free(&tr);
    pg_dataset_free(&te);
    pg_dataset_free(&pub);
    return rc == PG_OK ? 0 : 1;
}

PG_BENCH_REGISTER("repro-fmnist",
                  "Fashion-MNIST: DP generator -> 60k synthetic -> logreg on real test",
                  pg_bench_repro_fmnist)
