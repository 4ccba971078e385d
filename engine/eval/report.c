#include "engine/eval/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/core/rng.h"
#include "engine/eval/assoc.h"
#include "engine/eval/marginal.h"
#include "engine/eval/nearest.h"
#include "engine/ot/divergence.h"
#include "engine/ot/sliced.h"

const double pg_eval_quantile_levels[PG_EVAL_NQ] = {0.05, 0.25, 0.5, 0.75, 0.95};

/* Seeded streams: one per use, so adding a figure never shifts another's draw. */
#define STREAM_SPLIT     0x5e1fu
#define STREAM_SLICED    0x5110u
#define PG_EVAL_MAX_ROWS ((size_t)1 << 31)

void pg_eval_defaults(pg_eval_opts *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->marginals = opts->pairwise = opts->distribution = true;
    opts->utility = opts->memorisation = true;
    opts->sw_directions = 500;
    opts->sinkhorn_rows = 2000;
    opts->sinkhorn_reg_rel = 0.05;
    opts->sinkhorn_max_iter = 1000;
    pg_logreg_defaults(&opts->logreg);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Overall progress: each stage owns a slice [base, base + span) of [0, 1]. */
typedef struct progress {
    pg_eval_progress_fn fn;
    void *ctx;
    const char *stage;
    double base, span;
} progress;

static int tick(progress *p, double frac)
{
    return p->fn && p->fn(p->ctx, p->stage, p->base + p->span * frac);
}

static int kernel_tick(void *ctx, const char *stage, double frac)
{
    (void)stage;
    return tick(ctx, frac);
}

static int cancelled(pg_error *err, const char *stage)
{
    return pg_error_set(err, PG_ECANCELLED, "report cancelled during %s", stage);
}

/* The rows each figure uses (see the header): B, A and S as contiguous copies. */
typedef struct split {
    float *b, *a, *s;
    int32_t *lb, *la, *ls;
} split;

static void split_free(split *s)
{
    pg_free(s->b);
    pg_free(s->a);
    pg_free(s->s);
    pg_free(s->lb);
    pg_free(s->la);
    pg_free(s->ls);
    memset(s, 0, sizeof *s);
}

static void shuffle_prefix(pg_rng *rng, uint32_t *perm, size_t n, size_t k)
{
    for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
    for (size_t i = 0; i < k && i + 1 < n; i++) {
        size_t j = i + (size_t)pg_rng_below(rng, (uint64_t)(n - i));
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

static int make_split(const pg_eval_input *in, uint64_t seed, size_t h, size_t m, split *sp,
                      pg_error *err)
{
    size_t d = in->d;
    bool lab = in->syn_labels != NULL;
    uint32_t *pr = pg_calloc(in->n_ref, sizeof(uint32_t)),
             *ps = pg_calloc(in->n_syn, sizeof(uint32_t));
    sp->b = pg_alloc_f32(h * d);
    sp->a = pg_alloc_f32(m * d);
    sp->s = pg_alloc_f32(m * d);
    if (lab) {
        sp->lb = pg_calloc(h, sizeof(int32_t));
        sp->la = pg_calloc(m, sizeof(int32_t));
        sp->ls = pg_calloc(m, sizeof(int32_t));
    }
    if (!pr || !ps || !sp->b || !sp->a || !sp->s || (lab && (!sp->lb || !sp->la || !sp->ls))) {
        pg_free(pr);
        pg_free(ps);
        split_free(sp);
        return pg_error_set(err, PG_ENOMEM, "no memory for the report's row split");
    }
    pg_rng rng;
    pg_rng_seeded(&rng, seed, STREAM_SPLIT);
    shuffle_prefix(&rng, pr, in->n_ref, h + m);
    shuffle_prefix(&rng, ps, in->n_syn, m);
    for (size_t i = 0; i < h; i++) {
        memcpy(sp->b + i * d, in->ref + (size_t)pr[i] * d, d * sizeof(float));
        if (lab) sp->lb[i] = in->ref_labels[pr[i]];
    }
    for (size_t i = 0; i < m; i++) {
        memcpy(sp->a + i * d, in->ref + (size_t)pr[h + i] * d, d * sizeof(float));
        memcpy(sp->s + i * d, in->syn + (size_t)ps[i] * d, d * sizeof(float));
        if (lab) {
            sp->la[i] = in->ref_labels[pr[h + i]];
            sp->ls[i] = in->syn_labels[ps[i]];
        }
    }
    pg_free(pr);
    pg_free(ps);
    return PG_OK;
}

static bool is_cat(const pg_eval_input *in, size_t j)
{
    return in->columns && in->columns[j].kind == PG_EVAL_CATEGORICAL;
}

static int check_input(const pg_eval_input *in, pg_error *err)
{
    if (!in || !in->syn || !in->ref || in->d == 0)
        return pg_error_set(err, PG_EINVAL, "a report needs synthetic and reference rows");
    if (in->n_syn == 0) return pg_error_set(err, PG_EINVAL, "no synthetic rows");
    if (in->n_ref < 2)
        return pg_error_set(err, PG_EINVAL, "the reference set needs at least 2 rows to split");
    if (in->n_syn > PG_EVAL_MAX_ROWS || in->n_ref > PG_EVAL_MAX_ROWS)
        return pg_error_set(err, PG_EINVAL, "at most 2^31 rows per set");
    size_t cells;
    if (pg_size_mul(in->n_syn > in->n_ref ? in->n_syn : in->n_ref, in->d, &cells))
        return pg_error_set(err, PG_EINVAL, "rows x columns overflows");
    for (size_t j = 0; in->columns && j < in->d; j++) {
        const pg_eval_column *c = &in->columns[j];
        if (c->kind != PG_EVAL_NUMERIC && c->kind != PG_EVAL_CATEGORICAL)
            return pg_error_set(err, PG_EINVAL, "column %zu has an unknown kind", j);
        if (c->kind == PG_EVAL_CATEGORICAL &&
            (c->categories < 1 || c->categories > PG_EVAL_MAX_CATEGORIES))
            return pg_error_set(err, PG_EINVAL, "categorical column %zu needs 1..%d categories", j,
                                PG_EVAL_MAX_CATEGORIES);
    }
    if ((in->syn_units == NULL) != (in->ref_units == NULL) || (in->syn_units && in->units == 0))
        return pg_error_set(err, PG_EINVAL, "encoded units must be given for both sets or neither");
    if (in->syn_units &&
        pg_size_mul(in->n_syn > in->n_ref ? in->n_syn : in->n_ref, in->units, &cells))
        return pg_error_set(err, PG_EINVAL, "rows x units overflows");
    const float *sets[2] = {in->syn, in->ref};
    size_t ns[2] = {in->n_syn, in->n_ref};
    /* With units given the columns are decoded: NaN is a missing number. */
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < ns[s] * in->d; i++)
            if (!isfinite(sets[s][i]) &&
                !(in->syn_units && isnan(sets[s][i]) && !is_cat(in, i % in->d)))
                return pg_error_set(err, PG_EINVAL, "%s row %zu column %zu is not finite",
                                    s ? "reference" : "synthetic", i / in->d + 1, i % in->d + 1);
    const float *usets[2] = {in->syn_units, in->ref_units};
    for (int s = 0; in->syn_units && s < 2; s++)
        for (size_t i = 0; i < ns[s] * in->units; i++)
            if (!isfinite(usets[s][i]))
                return pg_error_set(err, PG_EINVAL, "%s row %zu unit %zu is not finite",
                                    s ? "reference" : "synthetic", i / in->units + 1,
                                    i % in->units + 1);
    if ((in->syn_labels == NULL) != (in->ref_labels == NULL))
        return pg_error_set(err, PG_EINVAL, "labels must be given for both sets or neither");
    if (in->syn_labels) {
        if (in->num_classes < 2)
            return pg_error_set(err, PG_EINVAL, "labels need num_classes >= 2");
        const int32_t *ls[2] = {in->syn_labels, in->ref_labels};
        for (int s = 0; s < 2; s++)
            for (size_t i = 0; i < ns[s]; i++)
                if (ls[s][i] < 0 || ls[s][i] >= in->num_classes)
                    return pg_error_set(err, PG_EINVAL, "%s label %zu is not a class in 0..%d",
                                        s ? "reference" : "synthetic", i, in->num_classes - 1);
    }
    return PG_OK;
}

static int check_opts(const pg_eval_opts *o, pg_error *err)
{
    if (o->distribution && (o->sw_directions < 1 || o->sw_directions > PG_EVAL_MAX_DIRECTIONS))
        return pg_error_set(err, PG_EINVAL, "sliced W2 needs 1..%d directions",
                            PG_EVAL_MAX_DIRECTIONS);
    if (o->distribution && o->sinkhorn_rows > 0 &&
        (o->sinkhorn_rows > PG_EVAL_MAX_SINKHORN_ROWS || !(o->sinkhorn_reg_rel > 0) ||
         !isfinite(o->sinkhorn_reg_rel) || o->sinkhorn_max_iter < 1))
        return pg_error_set(err, PG_EINVAL,
                            "Sinkhorn needs at most %d rows, reg_rel > 0 and max_iter >= 1",
                            PG_EVAL_MAX_SINKHORN_ROWS);
    return PG_OK;
}

static int run_marginals(const pg_eval_input *in, pg_eval_report *r, progress *pr, pg_error *err)
{
    size_t d = in->d, ns = in->n_syn, nr = in->n_ref;
    r->columns = pg_calloc(d, sizeof *r->columns);
    float *scratch = pg_alloc_f32(ns + nr + (ns > nr ? ns : nr));
    float *present = pg_alloc_f32(ns + nr);
    if (!r->columns || !scratch || !present) {
        pg_free(scratch);
        pg_free(present);
        return pg_error_set(err, PG_ENOMEM, "no memory for per-column statistics");
    }
    int rc = PG_OK;
    for (size_t j = 0; j < d && rc == PG_OK; j++) {
        pg_eval_column_stats *c = &r->columns[j];
        c->mean_real = c->mean_syn = c->std_real = c->std_syn = NAN;
        c->ks = c->w1 = c->tv = NAN;
        c->missing_real = c->missing_syn = NAN;
        if (is_cat(in, j)) {
            int32_t k = in->columns[j].categories;
            c->kind = PG_EVAL_CATEGORICAL;
            c->categories = k;
            c->freq_real = pg_calloc((size_t)k, sizeof(double));
            c->freq_syn = pg_calloc((size_t)k, sizeof(double));
            if (!c->freq_real || !c->freq_syn)
                rc = pg_error_set(err, PG_ENOMEM, "no memory for category frequencies");
            if (rc == PG_OK) rc = pg_eval_frequencies(in->ref + j, nr, d, k, c->freq_real, err);
            if (rc == PG_OK) rc = pg_eval_frequencies(in->syn + j, ns, d, k, c->freq_syn, err);
            if (rc == PG_OK) c->tv = pg_eval_tv(c->freq_real, c->freq_syn, k);
        } else {
            c->kind = PG_EVAL_NUMERIC;
            /* Present values only (NaN is missing, see the header). */
            float *ps = present, *prf = present + ns;
            size_t ks_ = 0, kr = 0;
            for (size_t i = 0; i < ns; i++)
                if (!isnan(in->syn[i * d + j])) ps[ks_++] = in->syn[i * d + j];
            for (size_t i = 0; i < nr; i++)
                if (!isnan(in->ref[i * d + j])) prf[kr++] = in->ref[i * d + j];
            c->missing_syn = (double)(ns - ks_) / (double)ns;
            c->missing_real = (double)(nr - kr) / (double)nr;
            if (kr > 0) rc = pg_eval_moments(prf, kr, 1, &c->mean_real, &c->std_real, err);
            if (rc == PG_OK && ks_ > 0)
                rc = pg_eval_moments(ps, ks_, 1, &c->mean_syn, &c->std_syn, err);
            if (rc == PG_OK && ks_ > 0 && kr > 0)
                rc = pg_eval_ks_w1(ps, ks_, 1, prf, kr, 1, scratch, &c->ks, &c->w1, err);
        }
        if (rc) pg_error_wrap(err, "column %zu", j);
        if (rc == PG_OK && tick(pr, (double)(j + 1) / (double)d)) rc = cancelled(err, pr->stage);
    }
    pg_free(scratch);
    pg_free(present);
    return rc;
}

/* Pearson r of columns a and b over the rows where both are present (not
 * NaN), two-pass in double; NaN when fewer than 2 such rows or either is
 * constant on them. */
static double pearson_complete(const float *x, size_t n, size_t d, size_t a, size_t b)
{
    double ma = 0, mb = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        float u = x[i * d + a], v = x[i * d + b];
        if (isnan(u) || isnan(v)) continue;
        ma += u;
        mb += v;
        k++;
    }
    if (k < 2) return NAN;
    ma /= (double)k;
    mb /= (double)k;
    double saa = 0, sbb = 0, sab = 0;
    for (size_t i = 0; i < n; i++) {
        float u = x[i * d + a], v = x[i * d + b];
        if (isnan(u) || isnan(v)) continue;
        saa += (u - ma) * (u - ma);
        sbb += (v - mb) * (v - mb);
        sab += (u - ma) * (v - mb);
    }
    if (!(saa > 0) || !(sbb > 0)) return NAN;
    double r = sab / sqrt(saa * sbb);
    return r > 1 ? 1 : r < -1 ? -1 : r;
}

/* Pearson over the numeric columns of one set, scattered into assoc (d x d). */
static int pearson_set(const pg_eval_input *in, const float *x, size_t n, const size_t *num,
                       size_t dn, double *assoc, pg_error *err)
{
    size_t d = in->d;
    bool missing = false;
    for (size_t i = 0; i < n && !missing; i++)
        for (size_t u = 0; u < dn && !missing; u++) missing = isnan(x[i * d + num[u]]);
    if (missing) { /* the BLAS path needs complete rows */
        for (size_t u = 0; u < dn; u++)
            for (size_t v = u; v < dn; v++)
                assoc[num[u] * d + num[v]] = assoc[num[v] * d + num[u]] =
                    pearson_complete(x, n, d, num[u], num[v]);
        return PG_OK;
    }
    double *c = pg_calloc(dn * dn, sizeof(double));
    float *compact = NULL;
    const float *src = x;
    size_t ld = d;
    if (dn < d) {
        compact = pg_alloc_f32(n * dn);
        src = compact;
        ld = dn;
    }
    if (!c || (dn < d && !compact)) {
        pg_free(c);
        pg_free(compact);
        return pg_error_set(err, PG_ENOMEM, "no memory for correlations");
    }
    if (compact)
        for (size_t i = 0; i < n; i++)
            for (size_t u = 0; u < dn; u++) compact[i * dn + u] = x[i * d + num[u]];
    int rc = pg_eval_pearson(src, n, dn, ld, c, err);
    if (rc == PG_OK)
        for (size_t u = 0; u < dn; u++)
            for (size_t v = 0; v < dn; v++) assoc[num[u] * d + num[v]] = c[u * dn + v];
    pg_free(c);
    pg_free(compact);
    return rc;
}

static int run_pairwise(const pg_eval_input *in, pg_eval_report *r, progress *pr, pg_error *err)
{
    size_t d = in->d, dd = d * d;
    r->assoc_real = pg_alloc(dd * sizeof(double));
    r->assoc_syn = pg_alloc(dd * sizeof(double));
    size_t *num = pg_calloc(d, sizeof(size_t));
    if (!r->assoc_real || !r->assoc_syn || !num) {
        pg_free(num);
        return pg_error_set(err, PG_ENOMEM, "no memory for %zu x %zu association matrices", d, d);
    }
    for (size_t i = 0; i < dd; i++) r->assoc_real[i] = r->assoc_syn[i] = NAN;
    size_t dn = 0, ncat = 0;
    for (size_t j = 0; j < d; j++) {
        if (!is_cat(in, j))
            num[dn++] = j;
        else
            ncat++;
    }
    int rc = PG_OK;
    if (dn > 0) {
        rc = pearson_set(in, in->ref, in->n_ref, num, dn, r->assoc_real, err);
        if (rc == PG_OK && tick(pr, 0.25)) rc = cancelled(err, pr->stage);
        if (rc == PG_OK) rc = pearson_set(in, in->syn, in->n_syn, num, dn, r->assoc_syn, err);
        if (rc == PG_OK && tick(pr, 0.5)) rc = cancelled(err, pr->stage);
    }
    size_t done = 0, total = ncat * (ncat + 1) / 2;
    for (size_t i = 0; i < d && rc == PG_OK; i++) {
        if (!is_cat(in, i)) continue;
        for (size_t j = i; j < d && rc == PG_OK; j++) {
            if (!is_cat(in, j)) continue;
            int32_t ki = in->columns[i].categories, kj = in->columns[j].categories;
            double vr, vs;
            rc = pg_eval_cramer_v(in->ref + i, d, ki, in->ref + j, d, kj, in->n_ref, &vr, err);
            if (rc == PG_OK)
                rc = pg_eval_cramer_v(in->syn + i, d, ki, in->syn + j, d, kj, in->n_syn, &vs, err);
            if (rc) {
                pg_error_wrap(err, "columns %zu and %zu", i, j);
                break;
            }
            r->assoc_real[i * d + j] = r->assoc_real[j * d + i] = vr;
            r->assoc_syn[i * d + j] = r->assoc_syn[j * d + i] = vs;
            if (tick(pr, 0.5 + 0.5 * (double)++done / (double)total))
                rc = cancelled(err, pr->stage);
        }
    }
    pg_free(num);
    if (rc) return rc;
    double sp = 0, sc = 0;
    size_t np = 0, nc = 0;
    for (size_t i = 0; i < d; i++)
        for (size_t j = i + 1; j < d; j++) {
            double a = r->assoc_real[i * d + j], b = r->assoc_syn[i * d + j];
            if (isnan(a) || isnan(b)) continue;
            if (is_cat(in, i)) {
                sc += fabs(a - b);
                nc++;
            } else {
                sp += fabs(a - b);
                np++;
            }
        }
    r->pearson_pairs = np;
    r->cramer_pairs = nc;
    r->pearson_mad = np ? sp / (double)np : NAN;
    r->cramer_mad = nc ? sc / (double)nc : NAN;
    return PG_OK;
}

static int run_distribution(const pg_eval_input *in, const pg_eval_opts *o, const split *sp,
                            pg_eval_report *r, progress *pr, pg_error *err)
{
    size_t d = in->d, h = r->h, m = r->m, k = o->sw_directions;
    float *theta = pg_alloc_f32(d * k);
    pg_sw_ws sw;
    int rc = theta ? pg_sw_ws_init(&sw, m, h, k, d, err)
                   : pg_error_set(err, PG_ENOMEM, "no memory for slicing directions");
    if (rc) {
        pg_free(theta);
        return rc;
    }
    pg_rng rng;
    pg_rng_seeded(&rng, o->seed, STREAM_SLICED);
    pg_mat th = pg_mat_view(theta, d, k), mb = pg_mat_view(sp->b, h, d),
           ma = pg_mat_view(sp->a, m, d), ms = pg_mat_view(sp->s, m, d);
    double v_syn = 0, v_floor = 0;
    rc = pg_sw_directions(&rng, false, &th, err);
    if (rc == PG_OK) rc = pg_sw2(&sw, &ms, &mb, &th, &v_syn, NULL, err);
    if (rc == PG_OK) rc = pg_sw2(&sw, &ma, &mb, &th, &v_floor, NULL, err);
    pg_sw_ws_free(&sw);
    pg_free(theta);
    if (rc) return rc;
    r->sw_directions = k;
    r->sw2_syn = sqrt(fmax(v_syn, 0.0));
    r->sw2_floor = sqrt(fmax(v_floor, 0.0));
    if (tick(pr, 0.2)) return cancelled(err, pr->stage);
    r->has_sinkhorn = false;
    r->sinkhorn_syn = r->sinkhorn_floor = r->sinkhorn_reg = NAN;
    if (o->sinkhorn_rows == 0) return PG_OK;
    double tv = 0;
    for (size_t j = 0; j < d; j++) {
        double sd;
        if ((rc = pg_eval_moments(in->ref + j, in->n_ref, d, NULL, &sd, err))) return rc;
        tv += sd * sd;
    }
    double reg = o->sinkhorn_reg_rel * 2.0 * tv;
    /* A constant reference has no scale to set reg from: no Sinkhorn figure. */
    if (!(reg > 0) || !(reg < 3e38)) return PG_OK;
    size_t rx = m < o->sinkhorn_rows ? m : o->sinkhorn_rows;
    size_t rb = h < o->sinkhorn_rows ? h : o->sinkhorn_rows;
    size_t mx = rx > rb ? rx : rb;
    pg_ot_ws ws;
    if ((rc = pg_ot_ws_init(&ws, mx, mx, d, err))) return rc;
    pg_ot_cost cost = {PG_OT_SQEUCLIDEAN, 0.0f, 0.0f};
    pg_sinkhorn_opts so = pg_sinkhorn_defaults((float)reg);
    so.scaling = 0.8f;
    so.tol = 1e-4f;
    so.max_iter = o->sinkhorn_max_iter;
    pg_ot_cloud cb = {pg_mat_view(sp->b, rb, d), NULL, NULL},
                cs = {pg_mat_view(sp->s, rx, d), NULL, NULL},
                ca = {pg_mat_view(sp->a, rx, d), NULL, NULL};
    double s_syn = NAN, s_floor = NAN;
    rc = pg_ot_divergence(&ws, &cost, &cs, &cb, &so, &s_syn, NULL, NULL, err);
    if (rc == PG_OK && tick(pr, 0.6)) rc = cancelled(err, pr->stage);
    if (rc == PG_OK) rc = pg_ot_divergence(&ws, &cost, &ca, &cb, &so, &s_floor, NULL, NULL, err);
    pg_ot_ws_free(&ws);
    if (rc) return rc;
    r->has_sinkhorn = true;
    r->sinkhorn_rows_x = rx;
    r->sinkhorn_rows_b = rb;
    r->sinkhorn_reg = (double)(float)reg;
    r->sinkhorn_syn = s_syn;
    r->sinkhorn_floor = s_floor;
    return PG_OK;
}

static int fit_score(const pg_eval_input *in, const pg_eval_opts *o, const float *x,
                     const int32_t *y, size_t n, const split *sp, size_t h, progress *pr,
                     double *acc, pg_logreg_report *rep, pg_error *err)
{
    pg_logreg model = {0};
    pg_logreg_opts lo = o->logreg;
    lo.progress = kernel_tick;
    lo.progress_ctx = pr;
    int rc = pg_logreg_fit(&model, x, y, n, in->d, in->num_classes, &lo, rep, err);
    if (rc == PG_OK) rc = pg_logreg_accuracy(&model, sp->b, sp->lb, h, acc, err);
    pg_logreg_free(&model);
    return rc;
}

static int run_utility(const pg_eval_input *in, const pg_eval_opts *o, const split *sp,
                       pg_eval_report *r, progress *pr, pg_error *err)
{
    double base = pr->base, span = pr->span;
    pr->span = span / 2;
    r->num_classes = in->num_classes;
    size_t *count = pg_calloc((size_t)in->num_classes, sizeof(size_t));
    if (!count) return pg_error_set(err, PG_ENOMEM, "no memory for class counts");
    for (size_t i = 0; i < r->h; i++) count[sp->lb[i]]++;
    r->majority_class = 0;
    for (int c = 1; c < in->num_classes; c++)
        if (count[c] > count[r->majority_class]) r->majority_class = c;
    r->majority = (double)count[r->majority_class] / (double)r->h;
    pg_free(count);
    int rc = fit_score(in, o, sp->s, sp->ls, r->m, sp, r->h, pr, &r->acc_syn, &r->fit_syn, err);
    pr->base = base + span / 2;
    if (rc == PG_OK)
        rc = fit_score(in, o, sp->a, sp->la, r->m, sp, r->h, pr, &r->acc_real, &r->fit_real, err);
    pr->base = base;
    pr->span = span;
    if (rc == PG_ECANCELLED) rc = cancelled(err, pr->stage);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int run_memorisation(const split *sp, size_t d, pg_eval_report *r, progress *pr,
                            pg_error *err)
{
    size_t m = r->m, h = r->h;
    double *ds = pg_calloc(m, sizeof(double)), *da = pg_calloc(m, sizeof(double));
    if (!ds || !da) {
        pg_free(ds);
        pg_free(da);
        return pg_error_set(err, PG_ENOMEM, "no memory for closest-record distances");
    }
    pg_mat ms = pg_mat_view(sp->s, m, d), ma = pg_mat_view(sp->a, m, d),
           mb = pg_mat_view(sp->b, h, d);
    double base = pr->base, span = pr->span;
    pr->span = span / 2;
    int rc = pg_eval_nearest(&ms, &mb, ds, NULL, kernel_tick, pr, err);
    pr->base = base + span / 2;
    if (rc == PG_OK) rc = pg_eval_nearest(&ma, &mb, da, NULL, kernel_tick, pr, err);
    pr->base = base;
    pr->span = span;
    if (rc == PG_OK) {
        qsort(ds, m, sizeof(double), cmp_double);
        qsort(da, m, sizeof(double), cmp_double);
        for (int q = 0; q < PG_EVAL_NQ; q++) {
            r->dcr_syn_q[q] = pg_eval_quantile(ds, m, pg_eval_quantile_levels[q]);
            r->dcr_real_q[q] = pg_eval_quantile(da, m, pg_eval_quantile_levels[q]);
        }
        r->dcr_threshold = r->dcr_real_q[0];
        size_t below = 0;
        while (below < m && ds[below] < r->dcr_threshold) below++;
        r->dcr_share_below = (double)below / (double)m;
    } else if (rc == PG_ECANCELLED) {
        rc = cancelled(err, pr->stage);
    }
    pg_free(ds);
    pg_free(da);
    return rc;
}

int pg_eval_report_run(const pg_eval_input *in, const pg_eval_opts *opts, pg_eval_report *out,
                       pg_error *err)
{
    if (!out || !opts) return pg_error_set(err, PG_EINVAL, "report output or options missing");
    memset(out, 0, sizeof *out);
    int rc = check_input(in, err);
    if (rc == PG_OK) rc = check_opts(opts, err);
    if (rc) return rc;
    pg_eval_report *r = out;
    r->n_syn = in->n_syn;
    r->n_ref = in->n_ref;
    r->d = in->d;
    r->seed = opts->seed;
    r->h = in->n_ref / 2;
    r->m = in->n_syn < in->n_ref - r->h ? in->n_syn : in->n_ref - r->h;
    r->pearson_mad = r->cramer_mad = NAN;
    r->sw2_syn = r->sw2_floor = r->sinkhorn_syn = r->sinkhorn_floor = r->sinkhorn_reg = NAN;
    r->acc_syn = r->acc_real = r->majority = r->dcr_threshold = r->dcr_share_below = NAN;

    /* The figures that read the model's encoding see the units as their
     * columns (the header). */
    pg_eval_input uin = *in;
    if (in->syn_units) {
        uin.syn = in->syn_units;
        uin.ref = in->ref_units;
        uin.d = in->units;
        uin.columns = NULL;
    }
    bool util = opts->utility && in->syn_labels;
    /* Progress weights: rough shares of the run time at image sizes. */
    const char *names[5] = {"marginals", "pairwise", "distribution", "utility", "memorisation"};
    bool on[5] = {opts->marginals, opts->pairwise, opts->distribution, util, opts->memorisation};
    double weight[5] = {0.1, 0.15, 0.3, 0.15, 0.3}, total = 0;
    for (int s = 0; s < 5; s++) total += on[s] ? weight[s] : 0;
    progress pr = {opts->progress, opts->progress_ctx, "split", 0.0, 0.0};

    double t = now_s();
    split sp = {0};
    rc = make_split(&uin, opts->seed, r->h, r->m, &sp, err);
    r->seconds[0] = now_s() - t;
    for (int s = 0; s < 5 && rc == PG_OK; s++) {
        if (!on[s]) continue;
        pr.stage = names[s];
        pr.span = total > 0 ? weight[s] / total : 0;
        if (tick(&pr, 0.0)) {
            rc = cancelled(err, names[s]);
            break;
        }
        t = now_s();
        switch (s) {
        case 0:
            rc = run_marginals(in, r, &pr, err);
            r->has_marginals = rc == PG_OK;
            break;
        case 1:
            rc = run_pairwise(in, r, &pr, err);
            r->has_pairwise = rc == PG_OK;
            break;
        case 2:
            rc = run_distribution(&uin, opts, &sp, r, &pr, err);
            r->has_distribution = rc == PG_OK;
            break;
        case 3:
            rc = run_utility(&uin, opts, &sp, r, &pr, err);
            r->has_utility = rc == PG_OK;
            break;
        case 4:
            rc = run_memorisation(&sp, uin.d, r, &pr, err);
            r->has_memorisation = rc == PG_OK;
            break;
        }
        r->seconds[s + 1] = now_s() - t;
        if (rc && rc != PG_ECANCELLED) pg_error_wrap(err, "%s", names[s]);
        pr.base += pr.span;
    }
    pr.stage = "done";
    if (rc == PG_OK && tick(&pr, 0.0)) rc = cancelled(err, "the end");
    split_free(&sp);
    if (rc) pg_eval_report_free(r);
    return rc;
}

void pg_eval_report_free(pg_eval_report *r)
{
    if (!r) return;
    for (size_t j = 0; r->columns && j < r->d; j++) {
        pg_free(r->columns[j].freq_real);
        pg_free(r->columns[j].freq_syn);
    }
    pg_free(r->columns);
    pg_free(r->assoc_real);
    pg_free(r->assoc_syn);
    memset(r, 0, sizeof *r);
}
