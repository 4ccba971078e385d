/* privgen-bench credit: the typed-table figures of issue 19 on credit_data
 * (bench/credit_data.sh writes the CSV; bench/credit_data.schema.json is its
 * schema with public bounds).
 *
 *   privgen-bench credit [--csv build/credit_data.csv] [--schema FILE]
 *                        [--methods a,b,...] [--eps 1,5] [--seed S] [--diag]
 *                        [--set "path=json;..."] [--target Status]
 *                        [--ldp-split even|label]
 *
 * --target names the categorical column the classifier predicts (another
 * table: --csv build/attrition.csv --schema bench/attrition.schema.json
 * --target Attrition, bench/attrition.sh).
 *
 * --methods real: the real 80 % through the decode / re-encode path (must
 * give acc_real); --methods marginals (with --label): each class's exact
 * empirical marginals of the real 80 % sampled independently, not private,
 * the reference of calibration.independence 1. --diag: per method, the real-trained classifier
 * scored on the synthetic rows, P(bad | Records, Job, Home) synthetic / real, and the accuracy
 * without each numeric column (stderr). --set: spec overrides for experiments only. Rows are read
 * with the schema under PG_TABLE_BOUNDS_REFUSE, shuffled with a fixed seed and split 80/20. The
 * schema's "label" key is dropped, so Status is an ordinary categorical column that every
 * (unconditional) method models jointly with the others; the classifier's target is Status, its
 * features every other encoded unit. Each central method trains on the 80 % at
 * central (epsilon, delta = 1e-5) and draws as many rows as the 80 % has;
 * the synthetic rows are decoded and re-encoded (what a user downloads as
 * CSV). Printed per method and epsilon, one JSON line each (real and
 * marginals, which have no epsilon: one line, whatever --eps):
 *   acc_synth   engine logistic regression (engine/eval/logreg) trained on
 *               the synthetic rows, scored on the real 20 %
 *   acc_real    the same classifier trained on the real 80 %
 *   tv_mean     mean total variation between the categorical marginals
 *               (categorical and boolean columns, missing as one more value)
 *               of the synthetic rows and of the real 20 %; tv_floor is the
 *               real 80 % against the real 20 %
 *   ks_mean     mean two-sample KS of the number columns (present values),
 *               synthetic against the real 20 %; ks_floor the real 80 %
 *               against the real 20 % (--diag: per column and per class)
 * Peer runs (issue 27; the reference Private-PGM outside the tree):
 * --dump-codes PREFIX writes the 80 % as codes of the marginal methods'
 * discretization (PREFIX.train.csv, header = column names; PREFIX.domain.json,
 * the level counts; --bins B, default the methods' auto bins) and stops;
 * --codes-csv FILE [--codes-name NAME] decodes a peer's synthetic codes
 * with the same pg_disc_decode as mst/aim (seed 99) and scores them like
 * every method (acc_synth, tv_mean). Feeding PREFIX.train.csv back gives the
 * discretization's own ceiling.
 * entropic_gan is a local method: its rows are privatized column by column
 * (Laplace on numbers, randomized response on categories, the label split of
 * table_ldp.h, or the even one with --ldp-split even, as privgen privatize
 * --schema [--split even]) at a LOCAL epsilon per row equal to the
 * cell's epsilon, and it trains through the channel (ot.channel true).
 * privgen runs no shuffler: the printed hypothetical_shuffled_central_eps
 * (Feldman, McMillan, Talwar numerical bound) is what a trusted shuffler
 * would give, nothing more. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/core/rng.h"
#include "engine/data/dataset.h"
#include "engine/data/discretize.h"
#include "engine/data/records.h"
#include "engine/data/table.h"
#include "engine/data/table_ldp.h"
#include "engine/eval/logreg.h"
#include "engine/eval/marginal.h"
#include "engine/methods/calib_ldp.h"
#include "engine/methods/method.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/spec.h"
#include "engine/privacy/privacy.h"

#define DELTA 1e-5

static int read_file(const char *path, char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc((size_t)n + 1);
    if (!*buf || fread(*buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(*buf);
        return -1;
    }
    (*buf)[n] = 0;
    *len = (size_t)n;
    fclose(f);
    return 0;
}

typedef struct split {
    size_t n, w;
    float *x;   /* n x w */
    int32_t *y; /* --label: the label (Status) of each row; NULL otherwise */
} split;

/* --label: the schema keeps Status as its label (issue 28): rows have no
 * Status units, every conditional method models it as the class, and the
 * classifier reads it from split.y. */
static bool opt_label;

/* Classifier data: features = every unit but the status block; target =
 * its category. */
static void features(const pg_table *t, size_t status, const split *s, float **fx, int32_t **fy,
                     size_t *fd)
{
    const pg_table_col *sc = &t->cols[status];
    if (s->y) { /* the label: every unit is a feature */
        *fd = s->w;
        *fx = pg_alloc_f32(s->n * s->w);
        *fy = pg_calloc(s->n, sizeof(int32_t));
        memcpy(*fx, s->x, s->n * s->w * sizeof(float));
        memcpy(*fy, s->y, s->n * sizeof(int32_t));
        return;
    }
    size_t d = s->w - sc->width;
    *fd = d;
    *fx = pg_alloc_f32(s->n * d);
    *fy = pg_calloc(s->n, sizeof(int32_t));
    for (size_t i = 0; i < s->n; i++) {
        const float *row = s->x + i * s->w;
        size_t k = 0;
        for (size_t u = 0; u < s->w; u++)
            if (u < sc->offset || u >= sc->offset + sc->width) (*fx)[i * d + k++] = row[u];
        pg_table_value v;
        pg_table_decode_value(t, status, row, 1, &v);
        (*fy)[i] = (int32_t)v.cat;
    }
}

static int accuracy(const pg_table *t, size_t status, const split *train, const split *test,
                    double *acc)
{
    float *xa, *xb;
    int32_t *ya, *yb;
    size_t d;
    features(t, status, train, &xa, &ya, &d);
    features(t, status, test, &xb, &yb, &d);
    pg_logreg_opts o;
    pg_logreg_defaults(&o);
    pg_logreg m = {0};
    pg_logreg_report rep;
    pg_error err = {0};
    int classes = train->y ? (int)pg_table_num_classes(t) : (int)t->cols[status].ncat;
    int rc = pg_logreg_fit(&m, xa, ya, train->n, d, classes, &o, &rep, &err);
    if (rc == PG_OK) rc = pg_logreg_accuracy(&m, xb, yb, test->n, acc, &err);
    if (rc) fprintf(stderr, "credit: logreg: %s\n", err.msg);
    pg_logreg_free(&m);
    pg_free(xa), pg_free(xb), pg_free(ya), pg_free(yb);
    return rc;
}

/* Mean TV of the categorical and boolean marginals (missing counted). */
static double tv_mean(const pg_table *t, const split *a, const split *b)
{
    double sum = 0;
    int cols = 0;
    for (size_t c = 0; c < t->ncols; c++) {
        const pg_table_col *col = &t->cols[c];
        if (col->type != PG_COL_CATEGORICAL && col->type != PG_COL_BOOLEAN) continue;
        size_t k = (col->type == PG_COL_CATEGORICAL ? col->ncat : 2) + 1;
        double fa[PG_TABLE_MAX_CATS + 1] = {0}, fb[PG_TABLE_MAX_CATS + 1] = {0};
        for (int side = 0; side < 2; side++) {
            const split *s = side ? b : a;
            double *f = side ? fb : fa;
            for (size_t i = 0; i < s->n; i++) {
                pg_table_value v = {0};
                if (c == t->label)
                    v.cat = s->y ? (size_t)s->y[i] : 0;
                else
                    pg_table_decode_value(t, c, s->x + i * s->w, 1, &v);
                f[v.missing ? k - 1 : v.cat] += 1.0 / (double)s->n;
            }
        }
        sum += pg_eval_tv(fa, fb, (int32_t)k);
        cols++;
    }
    return cols ? sum / cols : 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Two-sample Kolmogorov-Smirnov distance of number column c (present values
 * only) between a and b; cls >= 0 keeps the rows of that class on both
 * sides. -1 when a side has no present value. */
static double ks_col(const pg_table *t, size_t c, const split *a, const split *b, int cls)
{
    double *va = malloc((a->n ? a->n : 1) * sizeof *va),
           *vb = malloc((b->n ? b->n : 1) * sizeof *vb);
    size_t na = 0, nb = 0;
    for (int side = 0; va && vb && side < 2; side++) {
        const split *s = side ? b : a;
        for (size_t i = 0; i < s->n; i++) {
            if (cls >= 0 && (!s->y || s->y[i] != cls)) continue;
            pg_table_value v = {0};
            pg_table_decode_value(t, c, s->x + i * s->w, 1, &v);
            if (v.missing) continue;
            if (side)
                vb[nb++] = v.num;
            else
                va[na++] = v.num;
        }
    }
    double d = -1;
    if (na && nb) {
        qsort(va, na, sizeof *va, cmp_double);
        qsort(vb, nb, sizeof *vb, cmp_double);
        d = 0;
        for (size_t i = 0, j = 0; i < na || j < nb;) {
            double x = i < na && (j >= nb || va[i] <= vb[j]) ? va[i] : vb[j];
            while (i < na && va[i] <= x) i++;
            while (j < nb && vb[j] <= x) j++;
            d = fmax(d, fabs((double)i / (double)na - (double)j / (double)nb));
        }
    }
    free(va);
    free(vb);
    return d;
}

static bool is_number(const pg_table_col *col)
{
    return col->type == PG_COL_INTEGER || col->type == PG_COL_CONTINUOUS;
}

/* Mean two-sample Kolmogorov-Smirnov distance of the number columns
 * (present values only): how well the numbers' shapes are kept. */
static double ks_mean(const pg_table *t, const split *a, const split *b)
{
    double sum = 0;
    int cols = 0;
    for (size_t c = 0; c < t->ncols; c++) {
        if (!is_number(&t->cols[c])) continue;
        double d = ks_col(t, c, a, b, -1);
        if (d < 0) continue;
        sum += d;
        cols++;
    }
    return cols ? sum / cols : 0;
}

/* --diag: per number column, KS of the synthetic rows against the real 20 %
 * and, per class, against the real 80 % (what the model was fitted to),
 * next to the real 80 % against the real 20 % (the floor). */
static void ks_report(const pg_table *t, const split *syn, const split *train, const split *test,
                      int K)
{
    fprintf(stderr, "  KS per column: syn/test (floor train/test)%s\n",
            K ? ", per class syn/train" : "");
    for (size_t c = 0; c < t->ncols; c++) {
        if (!is_number(&t->cols[c])) continue;
        fprintf(stderr, "  %-16s %.3f (%.3f)", t->cols[c].name, ks_col(t, c, syn, test, -1),
                ks_col(t, c, train, test, -1));
        for (int k = 0; k < K; k++) fprintf(stderr, " c%d %.3f", k, ks_col(t, c, syn, train, k));
        fprintf(stderr, "\n");
    }
}

/* Decode and re-encode (clamped): the rows a user downloads. */
static void reencode(const pg_table *t, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < t->ncols; c++) {
            if (c == t->label) continue;
            pg_table_value v;
            pg_table_decode_value(t, c, x + i * t->width, 1, &v);
            pg_table_encode_value(t, c, &v, PG_TABLE_BOUNDS_CLAMP, x + i * t->width, NULL);
        }
}

static const char *opt_target = "Status";
static const char *opt_split; /* --ldp-split even|label (local rows) */
static bool opt_defaults;

static const char *spec_for(const char *method, double eps, char *buf, size_t len, size_t d)
{
    /* --defaults: only the privacy target, the way a user's first job on a
     * table looks; the method's table defaults do the rest (issue 28) */
    if (opt_defaults && strcmp(method, "entropic_gan") != 0)
        snprintf(buf, len, "{\"seed\": 1, \"privacy\": {\"epsilon\": %g, \"delta\": %g}}", eps,
                 DELTA);
    else if (opt_defaults)
        snprintf(buf, len, "{\"seed\": 1}");
    else if (strcmp(method, "dp_sinkhorn") == 0)
        snprintf(buf, len,
                 "{\"seed\": 1, \"privacy\": {\"epsilon\": %g, \"delta\": %g}, \"train\": "
                 "{\"steps\": 1500, \"batch_size\": 64, \"lr\": 0.001}, \"model\": {\"hidden\": "
                 "[128, 128], \"latent_dim\": 16}}",
                 eps, DELTA);
    /* swd_gen: the table defaults a user gets (defaults_table.c); until
     * issue 28 this pinned 200 steps of 500 rows, which its table defaults
     * replaced (docs/benchmarks.md, swd_gen on tables). */
    else if (strcmp(method, "swd_gen") == 0)
        snprintf(buf, len, "{\"seed\": 1, \"privacy\": {\"epsilon\": %g, \"delta\": %g}}", eps,
                 DELTA);
    else if (strcmp(method, "swd_flow") == 0)
        snprintf(buf, len,
                 "{\"seed\": 1, \"privacy\": {\"epsilon\": %g, \"delta\": %g}, \"flow\": "
                 "{\"steps\": 100, \"particles\": 2000}, \"projections\": {\"per_step\": %zu, "
                 "\"pool\": %zu}}",
                 eps, DELTA, d, 2 * d);
    else if (strcmp(method, "swd_flow_r") == 0)
        snprintf(buf, len,
                 "{\"seed\": 1, \"privacy\": {\"epsilon\": %g, \"delta\": %g}, \"flow\": "
                 "{\"steps\": 100, \"particles\": 2000}, \"projections\": {\"per_step\": %zu}}",
                 eps, DELTA, d);
    else if (strcmp(method, "aim") == 0) /* the classifier's target: its triples */
        snprintf(buf, len,
                 "{\"seed\": 1, \"privacy\": {\"epsilon\": %g, \"delta\": %g}, \"aim\": "
                 "{\"target\": \"%s\"}}",
                 eps, DELTA, opt_target);
    else if (strcmp(method, "mst") == 0)
        snprintf(buf, len, "{\"seed\": 1, \"privacy\": {\"epsilon\": %g, \"delta\": %g}}", eps,
                 DELTA);
    else /* entropic_gan */
        snprintf(buf, len,
                 "{\"seed\": 1, \"train\": {\"steps\": 1500, \"batch_size\": 256, \"lr\": "
                 "0.001}, \"model\": {\"hidden\": [128, 128], \"latent_dim\": 16, "
                 "\"logit_gain\": 10}}");
    return buf;
}

/* Experiment (PG_BENCH_QMAP=1, not private): numeric units through the
 * empirical quantile map of the training rows before training, and back
 * after sampling. */
static int cmpf(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}
static float *qmap_q[64];
static size_t qmap_m[64];
static void qmap_fit(const pg_table *t, float *x, size_t n)
{
    for (size_t c = 0; c < t->ncols; c++) {
        const pg_table_col *col = &t->cols[c];
        if (col->type != PG_COL_INTEGER && col->type != PG_COL_CONTINUOUS) continue;
        float *q = malloc(n * sizeof *q);
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            const float *row = x + i * t->width + col->offset;
            if (col->nullable && row[1] > 0.5f) continue;
            q[m++] = row[0];
        }
        qsort(q, m, sizeof *q, cmpf);
        qmap_q[c] = q, qmap_m[c] = m;
        for (size_t i = 0; i < n; i++) {
            float *row = x + i * t->width + col->offset;
            if (col->nullable && row[1] > 0.5f) continue;
            size_t lo = 0, hi = m;
            while (lo < hi) {
                size_t md = (lo + hi) / 2;
                if (q[md] < row[0])
                    lo = md + 1;
                else
                    hi = md;
            }
            size_t l2 = lo, h2 = m;
            while (l2 < h2) {
                size_t md = (l2 + h2) / 2;
                if (q[md] <= row[0])
                    l2 = md + 1;
                else
                    h2 = md;
            }
            row[0] = (float)(-1.0 + 2.0 * (0.5 * (double)(lo + l2)) / (double)m);
        }
    }
}
static void qmap_back(const pg_table *t, float *x, size_t n)
{
    for (size_t c = 0; c < t->ncols; c++) {
        if (!qmap_q[c]) continue;
        const pg_table_col *col = &t->cols[c];
        for (size_t i = 0; i < n; i++) {
            float *row = x + i * t->width + col->offset;
            double p = (row[0] + 1.0) / 2.0 * (double)(qmap_m[c] - 1);
            if (p < 0) p = 0;
            if (p > (double)(qmap_m[c] - 1)) p = (double)(qmap_m[c] - 1);
            size_t k = (size_t)p;
            double f = p - (double)k;
            row[0] = (float)(qmap_q[c][k] +
                             (k + 1 < qmap_m[c] ? f * (qmap_q[c][k + 1] - qmap_q[c][k]) : 0));
        }
    }
}

static double acc_majority;
static double ks_floor; /* ks_mean of the real 80 % against the real 20 % */
static const char *opt_set;
static bool opt_diag;

/* The marginal methods' auto bins (engine/methods/mst.c auto_bins). */
static int marg_auto_bins(size_t n)
{
    return n < 5000 ? 8 : n < 50000 ? 16 : n <= 500000 ? 32 : 64;
}

static int build_disc(const pg_table *t, size_t n, int bins, pg_disc *D, pg_error *err)
{
    return pg_disc_build(t, t->width, (float)t->lo, (float)t->hi,
                         opt_label ? (int)pg_table_num_classes(t) : 0,
                         bins > 0 ? bins : marg_auto_bins(n), D, err);
}

static const char *attr_name(const pg_table *t, const pg_disc *D, size_t a)
{
    return D->a[a].kind == PG_DISC_LABEL && D->a[a].col >= t->ncols ? "label"
                                                                    : t->cols[D->a[a].col].name;
}

/* --dump-codes: the training rows as codes, and the domain. */
static int dump_codes(const pg_table *t, const split *train, int bins, const char *prefix)
{
    pg_disc D;
    pg_error err = {0};
    if (build_disc(t, train->n, bins, &D, &err)) {
        fprintf(stderr, "credit: %s\n", err.msg);
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s.train.csv", prefix);
    FILE *f = fopen(path, "w");
    snprintf(path, sizeof path, "%s.domain.json", prefix);
    FILE *g = fopen(path, "w");
    if (!f || !g) {
        fprintf(stderr, "credit: cannot write %s\n", path);
        return 1;
    }
    uint32_t *c = malloc(D.nattr * sizeof *c);
    fprintf(g, "{\"names\": [");
    for (size_t a = 0; a < D.nattr; a++) {
        fprintf(f, "%s%s", a ? "," : "", attr_name(t, &D, a));
        fprintf(g, "%s\"%s\"", a ? ", " : "", attr_name(t, &D, a));
    }
    fprintf(g, "], \"sizes\": [");
    for (size_t a = 0; a < D.nattr; a++) fprintf(g, "%s%zu", a ? ", " : "", D.a[a].levels);
    fprintf(g, "]}\n");
    fprintf(f, "\n");
    for (size_t i = 0; i < train->n; i++) {
        pg_disc_encode(&D, t, train->x + i * train->w, train->y ? train->y[i] : 0, c);
        for (size_t a = 0; a < D.nattr; a++) fprintf(f, "%s%u", a ? "," : "", c[a]);
        fprintf(f, "\n");
    }
    free(c);
    fclose(f);
    fclose(g);
    fprintf(stderr, "credit: wrote %s.train.csv (%zu rows, %zu attributes)\n", prefix, train->n,
            D.nattr);
    pg_disc_free(&D);
    return 0;
}

/* --codes-csv: a peer's synthetic codes, decoded as mst/aim decode them, scored. */
static int eval_codes(const pg_table *t, size_t status, const split *train, const split *test,
                      int bins, const char *path, const char *name, double acc_real,
                      double tv_floor)
{
    pg_disc D;
    pg_error err = {0};
    if (build_disc(t, train->n, bins, &D, &err)) {
        fprintf(stderr, "credit: %s\n", err.msg);
        return 1;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "credit: cannot read %s\n", path);
        return 1;
    }
    int ch;
    while ((ch = fgetc(f)) != EOF && ch != '\n') {
    } /* header: same order as --dump-codes */
    size_t cap = 4096, n = 0, w = t->width;
    uint32_t *codes = malloc(cap * D.nattr * sizeof *codes);
    for (;;) {
        if (n == cap) codes = realloc(codes, (cap *= 2) * D.nattr * sizeof *codes);
        size_t a = 0;
        for (; a < D.nattr; a++) {
            unsigned v;
            if (fscanf(f, a ? ",%u" : "%u", &v) != 1) break;
            if (v >= D.a[a].levels) {
                fprintf(stderr, "credit: %s: code %u out of range for %s\n", path, v,
                        attr_name(t, &D, a));
                return 1;
            }
            codes[n * D.nattr + a] = v;
        }
        if (a < D.nattr) break;
        n++;
    }
    fclose(f);
    split syn = {n, w, pg_alloc_f32(n * w), opt_label ? pg_calloc(n, sizeof(int32_t)) : NULL};
    pg_rng rng;
    pg_rng_seeded(&rng, 99, 0);
    for (size_t i = 0; i < n; i++) {
        int32_t cls = 0;
        pg_disc_decode(&D, t, codes + i * D.nattr, &rng, syn.x + i * w, &cls);
        if (syn.y) syn.y[i] = cls;
    }
    free(codes);
    reencode(t, syn.x, n);
    double acc = 0;
    int rc = accuracy(t, status, &syn, test, &acc);
    if (!rc)
        printf("{\"bench\": \"credit\", \"method\": \"%s\", \"rows\": %zu, \"acc_synth\": %.4f, "
               "\"acc_real\": %.4f, \"acc_majority\": %.4f, \"tv_mean\": %.4f, \"tv_floor\": "
               "%.4f}\n",
               name, n, acc, acc_real, acc_majority, tv_mean(t, &syn, test), tv_floor);
    pg_free(syn.x);
    pg_free(syn.y);
    pg_disc_free(&D);
    return rc ? 1 : 0;
}

/* Experiment (PG_BENCH_DUMP=PREFIX, --label only): writes PREFIX.NAME.csv,
 * one row per line, the class then the w encoded units, for offline
 * analysis (bench/ldp_oracle.py --dump); never part of the figures. */
static void dump_rows(const char *name, const float *x, const int32_t *y, size_t n, size_t w)
{
    const char *pre = getenv("PG_BENCH_DUMP");
    if (!pre || !y) return;
    char path[512];
    snprintf(path, sizeof path, "%s.%s.csv", pre, name);
    FILE *f = fopen(path, "w");
    if (!f) return;
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%d", (int)y[i]);
        for (size_t u = 0; u < w; u++) fprintf(f, ",%.7g", x[i * w + u]);
        fputc('\n', f);
    }
    fclose(f);
}

static int run_one(const char *method, double eps, const pg_table *t, size_t status,
                   const split *train, const split *test, double acc_real, double tv_floor)
{
    bool local = strcmp(method, "entropic_gan") == 0;
    size_t n = train->n, w = train->w;
    if (strcmp(method, "real") == 0) {
        /* Sanity check of the bench: the real 80 % through the same
         * decode / re-encode path must give acc_real. */
        split cp = {n, w, pg_alloc_f32(n * w), train->y};
        memcpy(cp.x, train->x, n * w * sizeof(float));
        reencode(t, cp.x, n);
        double acc = 0;
        int rc0 = accuracy(t, status, &cp, test, &acc);
        printf("{\"bench\": \"credit\", \"method\": \"real\", \"acc_synth\": %.4f, "
               "\"acc_real\": %.4f, \"tv_mean\": %.4f}\n",
               acc, acc_real, tv_mean(t, &cp, test));
        /* where the signal lives: numerics zeroed, or jittered */
        for (int mode = 0; opt_diag && mode < 3; mode++) {
            memcpy(cp.x, train->x, n * w * sizeof(float));
            pg_rng jr;
            pg_rng_seeded(&jr, 5, 0);
            double sd = mode == 1 ? 0.01 : 0.05;
            for (size_t c = 0; c < t->ncols; c++) {
                const pg_table_col *col = &t->cols[c];
                if (col->type != PG_COL_INTEGER && col->type != PG_COL_CONTINUOUS) continue;
                for (size_t i = 0; i < n; i++) {
                    float *u = cp.x + i * w + col->offset;
                    if (mode == 0)
                        u[0] = 0;
                    else
                        u[0] += (float)(sd * pg_rng_normal(&jr));
                }
            }
            int rc1 = accuracy(t, status, &cp, test, &acc);
            fprintf(stderr, "credit: real, numerics %s: acc %.4f (rc %d)\n",
                    mode == 0   ? "zeroed"
                    : mode == 1 ? "+N(0,0.01)"
                                : "+N(0,0.05)",
                    acc, rc1);
        }
        pg_free(cp.x);
        return rc0 ? 1 : 0;
    }
    if (strcmp(method, "marginals") == 0) {
        /* Reference, not private: each class's exact empirical marginals of
         * the real 80 % sampled independently (every column's units copied
         * from a row of the class drawn at random, column by column; the
         * classes in their real proportions). What calibration.independence
         * 1 serves when its releases are exact. */
        if (!train->y) {
            fprintf(stderr, "credit: marginals needs --label\n");
            return 1;
        }
        int K = (int)pg_table_num_classes(t);
        split syn = {n, w, pg_alloc_f32(n * w), pg_calloc(n, sizeof(int32_t))};
        size_t *idx = pg_calloc(n, sizeof *idx), *start = pg_calloc((size_t)K + 1, sizeof *start);
        for (size_t i = 0; i < n; i++) start[train->y[i] + 1]++;
        for (int k = 0; k < K; k++) start[k + 1] += start[k];
        size_t *fill = pg_calloc((size_t)K, sizeof *fill);
        for (size_t i = 0; i < n; i++) {
            int k = train->y[i];
            idx[start[k] + fill[k]++] = i;
        }
        /* PG_BENCH_MARGINALS_SEED: another draw (default 99) */
        const char *ms = getenv("PG_BENCH_MARGINALS_SEED");
        pg_rng mr;
        pg_rng_seeded(&mr, ms ? strtoull(ms, NULL, 10) : 99, 0);
        for (size_t i = 0; i < n; i++) {
            int k = train->y[i];
            size_t cnt = start[k + 1] - start[k];
            syn.y[i] = k;
            for (size_t c = 0; c < t->ncols; c++) {
                const pg_table_col *col = &t->cols[c];
                if (c == t->label) continue;
                size_t from = idx[start[k] + (size_t)pg_rng_below(&mr, cnt)];
                memcpy(syn.x + i * w + col->offset, train->x + from * w + col->offset,
                       col->width * sizeof(float));
            }
        }
        reencode(t, syn.x, n);
        double acc = 0;
        int rc0 = accuracy(t, status, &syn, test, &acc);
        printf("{\"bench\": \"credit\", \"method\": \"marginals\", \"acc_synth\": %.4f, "
               "\"acc_real\": %.4f, \"acc_majority\": %.4f, \"tv_mean\": %.4f, \"tv_floor\": "
               "%.4f, \"ks_mean\": %.4f, \"ks_floor\": %.4f}\n",
               acc, acc_real, acc_majority, tv_mean(t, &syn, test), tv_floor,
               ks_mean(t, &syn, test), ks_floor);
        if (opt_diag) ks_report(t, &syn, train, test, K);
        pg_free(idx), pg_free(start), pg_free(fill), pg_free(syn.x), pg_free(syn.y);
        return rc0 ? 1 : 0;
    }
    const pg_method *m = pg_method_find(method);
    if (!m) {
        fprintf(stderr, "credit: unknown method %s\n", method);
        return 1;
    }
    float *x = pg_alloc_f32(n * w);
    memcpy(x, train->x, n * w * sizeof(float));
    pg_ldp_plan plan = {0};
    double eps0 = 0, shuffled = 0;
    pg_error err = {0};
    int rc = PG_OK;
    /* --label: the training rows' classes; on local data the owner
     * privatizes them with the rest of the row (randomized response) */
    int64_t *lab64 = NULL;
    if (opt_label) {
        lab64 = pg_calloc(n, sizeof *lab64);
        for (size_t i = 0; i < n; i++) lab64[i] = train->y[i];
    }
    if (local) {
        /* Local epsilon per row = the cell's epsilon: privgen runs no
         * shuffler, so no amplification is claimed. */
        eps0 = eps;
        if (pg_shuffle_numerical(eps0, n, DELTA, &shuffled, NULL) != PG_OK) shuffled = -1;
        pg_rng sec;
        rc = pg_rng_secure(&sec, &err);
        /* --ldp-split even|label: how the owner splits her per-row epsilon
         * (table_ldp.h; default: label for a labelled table) */
        int ldp_split = !opt_split                   ? PG_LDP_SPLIT_DEFAULT
                        : !strcmp(opt_split, "even") ? PG_LDP_SPLIT_EVEN
                                                     : PG_LDP_SPLIT_LABEL;
        if (!rc) rc = pg_ldp_plan_make_split(t, PG_LDP_LAPLACE, eps0, 0, ldp_split, &plan, &err);
        if (!rc && t->label != PG_TABLE_NONE)
            fprintf(stderr, "credit: local eps %g: label epsilon %.4f, feature epsilon %.4f\n", eps,
                    plan.cols[t->label].epsilon, plan.cols[t->label == 0 ? 1 : 0].epsilon);
        if (!rc) rc = pg_ldp_apply(&sec, t, &plan, x, lab64, n, &err);
        if (rc) {
            fprintf(stderr, "credit: privatize: %s\n", err.msg);
            pg_free(x);
            pg_free(lab64);
            return 1;
        }
    }
    if (getenv("PG_BENCH_QMAP")) qmap_fit(t, x, n);
    pg_dataset ds;
    size_t shape[1] = {w};
    int K = opt_label ? (int)pg_table_num_classes(t) : 0;
    int32_t *dl = NULL;
    if (K) {
        dl = pg_calloc(n, sizeof *dl);
        for (size_t i = 0; i < n; i++) dl[i] = (int32_t)lab64[i];
    }
    pg_free(lab64);
    if (local && K) {
        dump_rows("priv", x, dl, n, w);
        dump_rows("train", train->x, train->y, n, w);
        dump_rows("test", test->x, test->y, test->n, w);
    }
    if (local && K) {
        /* Does the privatized table carry a class difference at all?
         * (calib_ldp.h: the largest debiased |z| against its Bonferroni
         * threshold; from the reports only) */
        pg_calib_ldp *cal = NULL;
        pg_calib_ldp_signal sig = {0};
        if (pg_calib_ldp_make(t, K, &cal, NULL) == PG_OK &&
            pg_calib_ldp_estimate(cal, &plan, x, dl, n, NULL) == PG_OK) {
            pg_calib_ldp_signal_get(cal, &sig);
            fprintf(stderr,
                    "credit: local eps %g: class signal max |z| %.2f, threshold %.2f (%zu tests)\n",
                    eps, sig.max_z, sig.threshold, sig.tests);
        }
        pg_calib_ldp_free(cal);
    }
    if (pg_dataset_adopt(&ds, x, dl, n, shape, 1, K, local ? -1e30f : (float)t->lo,
                         local ? 1e30f : (float)t->hi, &err)) {
        fprintf(stderr, "credit: %s\n", err.msg);
        return 1;
    }
    pg_data_desc desc = {.n = n,
                         .d = w,
                         .ndim = 1,
                         .shape = {w},
                         .lo = (float)t->lo,
                         .hi = (float)t->hi,
                         .model = local ? PG_PRIVACY_LOCAL : PG_PRIVACY_CENTRAL,
                         .epsilon = local ? plan.epsilon : 0,
                         .cap_epsilon = 1e3,
                         .cap_delta = DELTA,
                         .num_classes = K,
                         .table = t,
                         .ldp = local ? &plan : NULL};
    pg_job_data in = {.desc = &desc, .rows = &ds};
    char sbuf[1024];
    json_t *spec = json_loads(spec_for(method, eps, sbuf, sizeof sbuf, w), 0, NULL);
    /* --set "path=json;path=json": spec overrides for experiments (not for
     * the published figures, which use the specs above) */
    const char *sets = opt_set;
    if (sets) {
        char *cp = strdup(sets), *save = NULL;
        for (char *kv = strtok_r(cp, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
            char *eq = strchr(kv, '=');
            if (!eq) continue;
            *eq = 0;
            json_t *v = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
            if (v) pg_spec_set(spec, kv, v);
        }
        free(cp);
    }
    json_t *r = NULL;
    pg_spec_errors e = {0};
    double t0 = pg_bench_now_ms();
    rc = m->validate(spec, &in, &r, &e, &err);
    json_decref(spec);
    if (rc) {
        fprintf(stderr, "credit: %s: %s: %s %s\n", method, e.count ? e.items[0].field : "",
                e.count ? e.items[0].message : "", err.msg);
        pg_dataset_free(&ds);
        pg_ldp_plan_free(&plan);
        return 1;
    }
    pg_privacy_plan pp;
    rc = m->plan(r, &in, &pp, &err);
    pg_trainer *tr = NULL;
    if (!rc && opt_diag)
        fprintf(stderr, "credit: %s plan: noise multiplier %.4g, rate %.4g, steps %ld, %s\n",
                method, pp.noise_multiplier, pp.sampling_rate, pp.steps, pp.mechanism);
    if (!rc) rc = m->create(r, &in, 1, &tr, &err);
    pg_step_report rep = {0};
    long steps = 0;
    while (!rc && !rep.done) {
        rc = m->step(tr, &rep, &err);
        steps++;
    }
    pg_snapshot *snap = NULL;
    if (!rc) rc = m->snapshot(tr, &snap, &err);
    split syn = {n, w, pg_alloc_f32(n * w), K ? pg_calloc(n, sizeof(int32_t)) : NULL};
    if (!rc && K && pg_snapshot_num_classes(snap) == 0)
        rc = pg_error_set(&err, PG_EINVAL, "--label needs a conditional model");
    if (!rc && K) rc = pg_snapshot_sample_labelled(snap, n, 99, syn.x, syn.y, &err);
    if (!rc && !K) rc = pg_snapshot_sample(snap, n, 99, -1, syn.x, &err);
    double secs = (pg_bench_now_ms() - t0) / 1000.0;
    double acc = 0, tv = 0, ks = 0;
    if (!rc && getenv("PG_BENCH_QMAP")) qmap_back(t, syn.x, n);
    if (!rc) {
        reencode(t, syn.x, n);
        if (local && K) dump_rows("syn", syn.x, syn.y, n, w);
        rc = accuracy(t, status, &syn, test, &acc);
        tv = tv_mean(t, &syn, test);
        ks = ks_mean(t, &syn, test);
        if (opt_diag) ks_report(t, &syn, train, test, K);
        if (!rc && opt_diag && K) {
            /* where the synthetic signal lives: numerics zeroed on both sides,
             * and the synthetic class balance */
            split a = {n, w, pg_alloc_f32(n * w), syn.y},
                  b = {test->n, w, pg_alloc_f32(test->n * w), test->y};
            memcpy(a.x, syn.x, n * w * sizeof(float));
            memcpy(b.x, test->x, test->n * w * sizeof(float));
            for (size_t c = 0; c < t->ncols; c++) {
                const pg_table_col *col = &t->cols[c];
                if (col->type != PG_COL_INTEGER && col->type != PG_COL_CONTINUOUS) continue;
                for (size_t i = 0; i < a.n; i++) a.x[i * w + col->offset] = 0;
                for (size_t i = 0; i < b.n; i++) b.x[i * w + col->offset] = 0;
            }
            double ac = 0, rev = 0, good = 0;
            accuracy(t, status, &a, &b, &ac);
            accuracy(t, status, train, &syn, &rev);
            for (size_t i = 0; i < n; i++) good += syn.y[i] == 1;
            fprintf(stderr,
                    "credit: diag %s eps %g: categorical only %.4f, real->syn %.4f, good %.3f\n",
                    method, eps, ac, rev, good / (double)n);
            pg_free(a.x), pg_free(b.x);
            /* per class, each numeric unit's mean and sd: synthetic / real */
            for (size_t c = 0; c < t->ncols; c++) {
                const pg_table_col *col = &t->cols[c];
                if (col->type != PG_COL_INTEGER && col->type != PG_COL_CONTINUOUS) continue;
                fprintf(stderr, "  %-10s", col->name);
                for (int cls = 0; cls < K; cls++)
                    for (int side = 0; side < 2; side++) {
                        const split *sp = side ? train : &syn;
                        double s1 = 0, s2 = 0, cn = 0;
                        for (size_t i = 0; i < sp->n; i++) {
                            if (sp->y[i] != cls) continue;
                            double v = sp->x[i * w + col->offset];
                            s1 += v, s2 += v * v, cn++;
                        }
                        double mu = cn ? s1 / cn : 0;
                        fprintf(stderr, " %s%d %.3f(%.3f)", side ? "real" : "syn", cls, mu,
                                cn ? sqrt(fmax(s2 / cn - mu * mu, 0)) : 0);
                    }
                fprintf(stderr, "\n");
            }
        }
        if (!rc && opt_diag && !K) {
            /* the real-trained classifier scored on the synthetic rows: high
             * when the synthetic rows carry the real dependence */
            double rev = 0, good = 0;
            accuracy(t, status, train, &syn, &rev);
            for (size_t i = 0; i < n; i++) {
                pg_table_value v;
                pg_table_decode_value(t, status, syn.x + i * w, 1, &v);
                good += v.cat == 1;
            }
            fprintf(stderr, "credit: diag %s eps %g: real->syn acc %.4f, syn good %.3f\n", method,
                    eps, rev, good / (double)n);
            {
                split a = {n, w, pg_alloc_f32(n * w), NULL},
                      b = {test->n, w, pg_alloc_f32(test->n * w), NULL};
                memcpy(a.x, syn.x, n * w * sizeof(float));
                memcpy(b.x, test->x, test->n * w * sizeof(float));
                for (size_t c = 0; c < t->ncols; c++) {
                    const pg_table_col *col = &t->cols[c];
                    if (col->type != PG_COL_INTEGER && col->type != PG_COL_CONTINUOUS) continue;
                    for (size_t i = 0; i < a.n; i++) a.x[i * w + col->offset] = 0;
                    for (size_t i = 0; i < b.n; i++) b.x[i * w + col->offset] = 0;
                }
                double ac = 0;
                accuracy(t, status, &a, &b, &ac);
                fprintf(stderr, "  syn->real categorical only: %.4f\n", ac);
                pg_free(a.x), pg_free(b.x);
            }
            for (size_t c0 = 0; c0 < t->ncols; c0++) {
                const pg_table_col *col = &t->cols[c0];
                if (col->type != PG_COL_INTEGER && col->type != PG_COL_CONTINUOUS) continue;
                split a = {n, w, pg_alloc_f32(n * w), NULL},
                      b = {test->n, w, pg_alloc_f32(test->n * w), NULL};
                memcpy(a.x, syn.x, n * w * sizeof(float));
                memcpy(b.x, test->x, test->n * w * sizeof(float));
                for (size_t i = 0; i < a.n; i++) a.x[i * w + col->offset] = 0;
                for (size_t i = 0; i < b.n; i++) b.x[i * w + col->offset] = 0;
                double ac = 0;
                accuracy(t, status, &a, &b, &ac);
                fprintf(stderr, "  without %s: %.4f\n", col->name, ac);
                pg_free(a.x), pg_free(b.x);
            }
            const char *names[] = {"Records", "Job", "Home"};
            for (int q = 0; q < 3; q++) {
                size_t c = pg_table_find(t, names[q], strlen(names[q]));
                double cnt[2][8] = {{0}}, bad[2][8] = {{0}};
                for (int side = 0; side < 2; side++) {
                    const split *sp = side ? train : &syn;
                    for (size_t i = 0; i < sp->n; i++) {
                        pg_table_value v, st;
                        pg_table_decode_value(t, c, sp->x + i * w, 1, &v);
                        pg_table_decode_value(t, status, sp->x + i * w, 1, &st);
                        int k = v.missing ? 7 : (int)v.cat;
                        cnt[side][k]++;
                        bad[side][k] += st.cat == 0;
                    }
                }
                fprintf(stderr, "  P(bad|%s) syn/real:", names[q]);
                for (int k = 0; k < 7; k++)
                    if (cnt[1][k] > 0)
                        fprintf(stderr, " %d:%.2f/%.2f(n%.0f)", k,
                                cnt[0][k] ? bad[0][k] / cnt[0][k] : -1, bad[1][k] / cnt[1][k],
                                cnt[0][k]);
                fprintf(stderr, "\n");
            }
        }
    }
    /* What the local rows would give if a trusted shuffler existed (Feldman,
     * McMillan, Talwar numerical bound); privgen runs none: a hypothetical. */
    char shuf[32] = "null";
    if (local && shuffled > 0) snprintf(shuf, sizeof shuf, "%.4f", shuffled);
    if (rc)
        fprintf(stderr, "credit: %s at %g: %s\n", method, eps, err.msg);
    else
        printf("{\"bench\": \"credit\", \"method\": \"%s\", \"epsilon\": %g, \"delta\": %g, "
               "\"privacy\": \"%s\", \"epsilon_plan\": %.4f, "
               "\"hypothetical_shuffled_central_eps\": %s, \"steps\": %ld, \"acc_synth\": "
               "%.4f, \"acc_real\": %.4f, \"acc_majority\": %.4f, \"tv_mean\": %.4f, \"tv_floor\": "
               "%.4f, \"ks_mean\": %.4f, \"ks_floor\": %.4f, \"seconds\": "
               "%.1f}\n",
               method, eps, local ? 0.0 : DELTA, local ? "local" : "central",
               local ? plan.epsilon : pp.epsilon, shuf, steps, acc, acc_real, acc_majority, tv,
               tv_floor, ks, ks_floor, secs);
    fflush(stdout);
    pg_free(syn.x);
    pg_free(syn.y);
    pg_snapshot_release(snap);
    if (tr) m->destroy(tr);
    json_decref(r);
    pg_dataset_free(&ds);
    pg_ldp_plan_free(&plan);
    return rc ? 1 : 0;
}

static int bench_credit(int argc, char **argv)
{
    const char *csv = pg_bench_opt(argc, argv, "--csv", "build/credit_data.csv");
    const char *schema_path =
        pg_bench_opt(argc, argv, "--schema", PRIVGEN_SOURCE_DIR "/bench/credit_data.schema.json");
    const char *methods = pg_bench_opt(argc, argv, "--methods",
                                       "entropic_gan,dp_sinkhorn,swd_flow,swd_flow_r,swd_gen");
    const char *eps_list = pg_bench_opt(argc, argv, "--eps", "1,5");
    uint64_t seed = strtoull(pg_bench_opt(argc, argv, "--seed", "19"), NULL, 10);
    opt_set = pg_bench_opt(argc, argv, "--set", NULL);
    opt_split = pg_bench_opt(argc, argv, "--ldp-split", NULL);
    opt_diag = pg_bench_has(argc, argv, "--diag");
    opt_label = pg_bench_has(argc, argv, "--label");
    opt_defaults = pg_bench_has(argc, argv, "--defaults");
    pg_threads_set(1);
    json_t *sj = json_load_file(schema_path, 0, NULL);
    if (!sj) {
        fprintf(stderr, "credit: cannot read %s\n", schema_path);
        return 2;
    }
    const char *target = opt_target = pg_bench_opt(argc, argv, "--target", "Status");
    if (!opt_label) json_object_del(sj, "label"); /* the target is modelled like any column */
    pg_table *t = NULL;
    pg_error err = {0};
    if (pg_table_from_json(sj, &t, &err)) {
        fprintf(stderr, "credit: schema: %s\n", err.msg);
        return 2;
    }
    json_decref(sj);
    /* --label: the schema's label is the target (any labelled table, e.g.
     * bench/attrition.schema.json); otherwise --target (Status) */
    size_t status = opt_label ? t->label : pg_table_find(t, target, strlen(target));
    if (opt_label && status == PG_TABLE_NONE) {
        fprintf(stderr, "credit: --label needs a schema with a label\n");
        return 2;
    }
    if (!opt_label && (status == PG_TABLE_NONE || t->cols[status].type != PG_COL_CATEGORICAL)) {
        fprintf(stderr, "credit: the schema needs a categorical %s column\n", target);
        return 2;
    }
    char *buf;
    size_t len;
    if (read_file(csv, &buf, &len)) {
        fprintf(stderr, "credit: cannot read %s (run bench/credit_data.sh)\n", csv);
        return 2;
    }
    pg_records_opts ro = {.format = PG_RECORDS_CSV, .bounds = PG_TABLE_BOUNDS_REFUSE};
    float *x = NULL;
    int64_t *labels = NULL;
    size_t n = 0;
    if (pg_records_parse(t, &ro, buf, len, &x, &labels, &n, &err)) {
        fprintf(stderr, "credit: %s\n", err.msg);
        return 1;
    }
    free(buf);
    size_t w = t->width;
    /* Fixed-seed shuffle, then 80/20. */
    pg_rng r;
    pg_rng_seeded(&r, seed, 0);
    float *tmp = malloc(w * sizeof *tmp);
    int32_t *y = NULL;
    if (opt_label) {
        y = pg_calloc(n, sizeof *y);
        for (size_t i = 0; i < n; i++) y[i] = (int32_t)labels[i];
    }
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)pg_rng_below(&r, i);
        if (y) {
            int32_t ty = y[i - 1];
            y[i - 1] = y[j];
            y[j] = ty;
        }
        memcpy(tmp, x + (i - 1) * w, w * sizeof *tmp);
        memcpy(x + (i - 1) * w, x + j * w, w * sizeof *tmp);
        memcpy(x + j * w, tmp, w * sizeof *tmp);
    }
    free(tmp);
    size_t ntr = (n * 8) / 10;
    split train = {ntr, w, x, y}, test = {n - ntr, w, x + ntr * w, y ? y + ntr : NULL};
    double acc_real;
    if (accuracy(t, status, &train, &test, &acc_real)) return 1;
    double floor_tv = tv_mean(t, &train, &test);
    ks_floor = ks_mean(t, &train, &test);
    /* The classifier that always says the test set's most frequent class. */
    {
        double cnt[PG_TABLE_MAX_CATS] = {0}, best = 0;
        for (size_t i = 0; i < test.n; i++) {
            pg_table_value v = {0};
            if (y)
                v.cat = (size_t)test.y[i];
            else
                pg_table_decode_value(t, status, test.x + i * w, 1, &v);
            cnt[v.cat]++;
        }
        for (size_t k = 0; k < pg_table_num_classes(t) || k < t->cols[status].ncat; k++)
            best = fmax(best, cnt[k]);
        acc_majority = best / (double)test.n;
    }
    fprintf(stderr, "credit: %zu rows, width %zu, train %zu, test %zu, real accuracy %.4f\n", n, w,
            ntr, n - ntr, acc_real);
    int bins = atoi(pg_bench_opt(argc, argv, "--bins", "0"));
    const char *dump = pg_bench_opt(argc, argv, "--dump-codes", NULL);
    const char *codes_csv = pg_bench_opt(argc, argv, "--codes-csv", NULL);
    if (dump || codes_csv) {
        int rc = dump ? dump_codes(t, &train, bins, dump)
                      : eval_codes(t, status, &train, &test, bins, codes_csv,
                                   pg_bench_opt(argc, argv, "--codes-name", "codes"), acc_real,
                                   floor_tv);
        free(x);
        free(labels);
        pg_free(y);
        pg_table_free(t);
        return rc;
    }
    int fails = 0;
    char *ml = strdup(methods);
    for (char *mname = strtok(ml, ","); mname; mname = strtok(NULL, ",")) {
        /* real and marginals are references without epsilon: one line each,
         * not one per --eps value (the same line printed again looked like a
         * duplicated output) */
        bool once = strcmp(mname, "real") == 0 || strcmp(mname, "marginals") == 0;
        char *el = strdup(eps_list), *save = NULL;
        for (char *es = strtok_r(el, ",", &save); es; es = strtok_r(NULL, ",", &save)) {
            fails += run_one(mname, atof(es), t, status, &train, &test, acc_real, floor_tv);
            if (once) break;
        }
        free(el);
    }
    free(ml);
    free(x);
    free(labels);
    pg_free(y);
    pg_table_free(t);
    return fails ? 1 : 0;
}

PG_BENCH_REGISTER("credit", "credit_data: each method at central epsilon 1 and 5, utility and TV",
                  bench_credit)
