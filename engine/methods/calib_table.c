/* engine/methods/calib_table.c - per-class calibration on typed tables
 * (calib_table.h). */
#include "engine/methods/calib_table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/methods/calib_copula.h"
#include "engine/privacy/privacy.h"

enum { KNOTS = 65 };

struct pg_calib_table {
    pg_heads *h;
    size_t K, d, T; /* classes, units, states over all softmax heads */
    size_t *state0; /* per head: index of its first state in [0, T) */
    float *offset;  /* K x d: numeric shifts b (0 on softmax units) */
    float *gain;    /* K x d: numeric gains of the rank map (1 for a shift) */
    /* K x d x KNOTS: where a target spread is known, the class's measured
     * quantiles of the unit (knot i at level i / (KNOTS - 1)); the unit is
     * then mapped by its rank instead of shifted. NaN at knot 0: a shift. */
    float *knots;
    double *move; /* K x T: probability that a sample in the state moves */
    double *cdf;  /* K x T: per head, cumulative destination probabilities */
    /* Quantile rule (pg_calib_table_set_quantiles): the pooled map, the
     * classes' released CDFs (K x Q, Q = bins + ncols) and, per class and map
     * column, the sorted fixed-seed draw of the unit (its measured CDF G). */
    pg_qmap *pooled;
    size_t Q;
    double *ccdf;
    size_t *qcol;    /* d: map column of a numeric unit, (size_t)-1 when none */
    float **sorted;  /* K x ncols arrays (NULL: no present value drawn) */
    size_t *nsorted; /* K x ncols */
    /* K x ncols arrays of bins + 1: per bin of the map, the first index of
     * the sorted draw at or above the bin's mapped interval (the last entry
     * one past it), and whether the draw inside the bin is used (enough
     * values, no dominant tie) */
    size_t **first;
    unsigned char **inside;
    /* Sub-bins (pooled->sub > 0, qmap.h): per bin over all map columns
     * (pg_qmap_total_bins), the index of its within-bin CDF in a class's
     * ccdf vector, (size_t)-1 for a bin without sub-bins. */
    size_t *subat;
    /* Independence (pg_calib_table_set_independence): the probability that a
     * unit's value is redrawn from its class's target marginal alone, and
     * the target frequencies (K x T) the categorical redraws come from. */
    double indep;
    double *target;
    /* Copula (pg_calib_table_set_copula, calib_copula.h): cm coordinates,
     * per head its coordinate ((size_t)-1: none), each class's Cholesky
     * factor (K x cm x cm) and per softmax head the states in the copula's
     * order with their cumulative masses (K x T each). */
    size_t cm;
    size_t *hcoord;
    double *chol;
    size_t *corder;
    double *ccum;
};

static size_t states(const pg_head *hd)
{
    return hd->kind == PG_HEAD_SOFTMAX_REF ? hd->width + 1 : hd->width;
}

static int check_heads(const pg_heads *h, pg_error *err)
{
    if (!h || h->n == 0 || h->d == 0 || !(h->lo < h->hi))
        return pg_error_set(err, PG_EINVAL, "table calibration needs the table's output heads");
    size_t w = 0;
    for (size_t j = 0; j < h->n; j++) {
        const pg_head *hd = &h->h[j];
        if (hd->offset != w || hd->width == 0 || (hd->kind == PG_HEAD_NUMERIC && hd->width != 1))
            return pg_error_set(err, PG_EINVAL, "the heads do not tile the encoded row");
        w += hd->width;
    }
    return w == h->d ? PG_OK : pg_error_set(err, PG_EINVAL, "the heads do not cover the row");
}

double pg_calib_table_bound2(const pg_heads *h)
{
    return (double)h->n; /* one block of norm <= 1 per head */
}

/* The state a sample's block decodes to (table.h's decoder): a plain
 * softmax by its largest unit (first on ties); with a reference state, the
 * largest unit when it is above 0.5, else state 0. */
static size_t block_state(const pg_head *hd, const float *u)
{
    size_t best = 0;
    for (size_t i = 1; i < hd->width; i++)
        if (u[i] > u[best]) best = i;
    if (hd->kind == PG_HEAD_SOFTMAX) return best;
    return u[best] > 0.5f ? best + 1 : 0;
}

static void set_state(const pg_head *hd, float *u, size_t st)
{
    memset(u, 0, hd->width * sizeof *u);
    if (hd->kind == PG_HEAD_SOFTMAX)
        u[st] = 1.0f;
    else if (st > 0)
        u[st - 1] = 1.0f;
}

static double unit01(float u)
{
    return u > 0.0f ? (u < 1.0f ? (double)u : 1.0) : 0.0; /* NaN fails u > 0 */
}

int pg_calib_table_stats(const pg_heads *h, const pg_qmap *qmap, const float *x,
                         const int32_t *labels, size_t n, int classes, double *out, pg_error *err)
{
    int rc = check_heads(h, err);
    if (rc) return rc;
    if (classes < 0 || (classes > 0 && n > 0 && !labels) || (n > 0 && !x))
        return pg_error_set(err, PG_EINVAL, "table calibration needs labelled rows");
    size_t K = classes > 0 ? (size_t)classes : 1, d = h->d;
    double c = 0.5 * ((double)h->lo + h->hi), half = 0.5 * ((double)h->hi - h->lo);
    double scale = 1.0 / sqrt(pg_calib_table_bound2(h));
    float *row = malloc(d * sizeof *row);
    double *acc = calloc(K * d + K, sizeof *acc);
    if (!row || !acc) {
        free(row);
        free(acc);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate calibration buffers");
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        if (classes > 0) {
            if (labels[i] < 0 || labels[i] >= classes) {
                free(row);
                free(acc);
                return pg_error_set(err, PG_EINVAL, "row %zu has label %d outside [0, %d)", i + 1,
                                    (int)labels[i], classes);
            }
            k = (size_t)labels[i];
        }
        memcpy(row, x + i * d, d * sizeof *row);
        pg_qmap_encode(qmap, row, d, 1);
        double *s = acc + k * d;
        for (size_t j = 0; j < h->n; j++) {
            const pg_head *hd = &h->h[j];
            const float *u = row + hd->offset;
            if (hd->kind == PG_HEAD_NUMERIC) {
                /* Clamped so that a row outside the range cannot exceed the
                 * block's bound of 1 (NaN counts as the centre). */
                double t = ((double)u[0] - c) / half;
                t = t > 1.0 ? 1.0 : t < -1.0 ? -1.0 : t == t ? t : 0.0;
                s[hd->offset] += scale * t;
                continue;
            }
            /* Units clamped to [0, 1] (NaN to 0), as a one-hot's are, then
             * the block scaled to l2 norm <= 1. */
            double nrm = 0.0;
            for (size_t m = 0; m < hd->width; m++) {
                double v = unit01(u[m]);
                nrm += v * v;
            }
            double f = nrm > 1.0 ? 1.0 / sqrt(nrm) : 1.0;
            for (size_t m = 0; m < hd->width; m++) s[hd->offset + m] += scale * f * unit01(u[m]);
        }
        acc[K * d + k] += 1.0;
    }
    memcpy(out, acc, (K * d + K) * sizeof *out);
    free(row);
    free(acc);
    return PG_OK;
}

/* Clip at 0 and normalize p[0..m) in place; uniform when nothing is left. */
static void normalize(double *p, size_t m)
{
    double t = 0.0;
    for (size_t i = 0; i < m; i++) t += p[i] = p[i] > 0.0 ? p[i] : 0.0;
    for (size_t i = 0; i < m; i++) p[i] = t > 0.0 ? p[i] / t : 1.0 / (double)m;
}

/* Target within-class sds of the mapped numeric units, by post-processing
 * alone: a quantile-mapped column is about uniform on [c - k h, c + k h]
 * (qmap.h), variance (k h)^2 / 3 over all rows, of which the released class
 * means explain sum_k pi_k (m_k - m)^2 (pi from the released counts); the
 * rest is shared by the classes (floored at a tenth of the total sd). */
static void within_sd(const pg_heads *h, const pg_qmap *qmap, size_t K, const double *counts,
                      float *targets)
{
    if (!qmap) return;
    size_t d = h->d;
    double tot = 0.0, kh = 0.5 * ((double)qmap->hi - qmap->lo) * qmap->spread;
    for (size_t k = 0; k < K; k++) tot += counts[k] > 1.0 ? counts[k] : 1.0;
    for (size_t j = 0; j < qmap->ncols; j++) {
        size_t u = qmap->cols[j].unit;
        if (u >= d) continue;
        double mean = 0.0, between = 0.0, var = kh * kh / 3.0;
        for (size_t k = 0; k < K; k++)
            mean += (counts[k] > 1.0 ? counts[k] : 1.0) / tot * targets[k * 2 * d + u];
        for (size_t k = 0; k < K; k++) {
            double g = targets[k * 2 * d + u] - mean;
            between += (counts[k] > 1.0 ? counts[k] : 1.0) / tot * g * g;
        }
        double w = var - between < 0.01 * var ? 0.01 * var : var - between;
        for (size_t k = 0; k < K; k++) targets[k * 2 * d + d + u] = (float)sqrt(w);
    }
}

int pg_calib_table_release(pg_rng *secure, const pg_heads *h, const pg_qmap *qmap, const float *x,
                           const int32_t *labels, size_t n, int classes, double s, bool spread,
                           float *targets, double *raw, pg_error *err)
{
    if (!secure || !pg_rng_is_secure(secure))
        return pg_error_set(err, PG_EPRIVACY, "DP noise needs the secure generator");
    if (!(s > 0.0) || !isfinite(s))
        return pg_error_set(err, PG_EINVAL, "calibration noise multiplier must be finite and > 0");
    int rc = check_heads(h, err);
    if (rc) return rc;
    size_t K = classes > 0 ? (size_t)classes : 1, d = h->d, m = K * d + K;
    double *v = malloc(m * sizeof *v), *p = NULL;
    float *noise = pg_alloc_f32(m);
    size_t wmax = 0;
    for (size_t j = 0; j < h->n; j++) wmax = h->h[j].width + 1 > wmax ? h->h[j].width + 1 : wmax;
    p = malloc(wmax * sizeof *p);
    if (!v || !noise || !p) {
        rc = pg_error_set(err, PG_ENOMEM, "cannot allocate calibration buffers");
        goto out;
    }
    if ((rc = pg_calib_table_stats(h, qmap, x, labels, n, classes, v, err))) goto out;
    memset(noise, 0, m * sizeof *noise);
    if ((rc = pg_privacy_gaussian_noise(secure, noise, m, M_SQRT2 * s, err))) goto out;
    for (size_t i = 0; i < m; i++) v[i] += (double)noise[i];
    if (raw) memcpy(raw, v, m * sizeof *raw);
    double c = 0.5 * ((double)h->lo + h->hi), half = 0.5 * ((double)h->hi - h->lo);
    double root = sqrt(pg_calib_table_bound2(h));
    for (size_t k = 0; k < K; k++) {
        double nk = v[K * d + k] < 1.0 ? 1.0 : v[K * d + k];
        const double *sk = v + k * d;
        float *t = targets + k * 2 * d;
        for (size_t j = 0; j < h->n; j++) {
            const pg_head *hd = &h->h[j];
            size_t o = hd->offset, w = hd->width;
            if (hd->kind == PG_HEAD_NUMERIC) {
                double mu = root * sk[o] / nk;
                mu = mu > 1.0 ? 1.0 : mu < -1.0 ? -1.0 : mu;
                double val = c + half * mu;
                t[o] = (float)(val < h->lo ? h->lo : val > h->hi ? h->hi : val);
                t[d + o] = -1.0f; /* set below when the map gives a spread */
                continue;
            }
            bool ref = hd->kind == PG_HEAD_SOFTMAX_REF;
            double used = 0.0;
            for (size_t q = 0; q < w; q++) used += p[q + ref] = root * sk[o + q] / nk;
            if (ref) p[0] = 1.0 - used;
            normalize(p, w + ref);
            for (size_t q = 0; q < w; q++) t[o + q] = (float)p[q + ref], t[d + o + q] = 0.0f;
        }
    }
    if (spread) within_sd(h, qmap, K, v + K * d, targets);
out:
    free(v);
    free(p);
    pg_free(noise);
    return rc;
}

int pg_calib_table_check_targets(const pg_heads *h, int classes, const float *targets,
                                 pg_error *err)
{
    int rc = check_heads(h, err);
    if (rc) return rc;
    size_t K = classes > 0 ? (size_t)classes : 1;
    for (size_t k = 0; k < K; k++)
        for (size_t j = 0; j < h->n; j++) {
            const pg_head *hd = &h->h[j];
            const float *t = targets + k * 2 * h->d + hd->offset;
            if (hd->kind == PG_HEAD_NUMERIC) {
                if (!(t[0] >= h->lo && t[0] <= h->hi) ||
                    !(t[h->d] == -1.0f || (t[h->d] >= 0.0f && t[h->d] <= 0.5f * (h->hi - h->lo))))
                    return pg_error_set(err, PG_EFORMAT,
                                        "a calibration mean or sd is out of range");
                continue;
            }
            double sum = 0.0;
            for (size_t q = 0; q < hd->width; q++) {
                if (!(t[q] >= 0.0f && t[q] <= 1.0f))
                    return pg_error_set(err, PG_EFORMAT, "a calibration frequency is malformed");
                sum += t[q];
            }
            if (sum > 1.0 + 1e-3 || (hd->kind == PG_HEAD_SOFTMAX && sum < 1.0 - 1e-3))
                return pg_error_set(err, PG_EFORMAT, "calibration frequencies do not sum to 1");
        }
    return PG_OK;
}

void pg_calib_table_free(pg_calib_table *c)
{
    if (!c) return;
    pg_heads_free(c->h);
    free(c->state0);
    free(c->offset);
    free(c->gain);
    free(c->knots);
    free(c->move);
    free(c->cdf);
    free(c->target);
    free(c->hcoord);
    free(c->chol);
    free(c->corder);
    free(c->ccum);
    for (size_t i = 0; c->sorted && i < c->K * c->pooled->ncols; i++) free(c->sorted[i]);
    for (size_t i = 0; c->first && i < c->K * c->pooled->ncols; i++) free(c->first[i]);
    for (size_t i = 0; c->inside && i < c->K * c->pooled->ncols; i++) free(c->inside[i]);
    free(c->first);
    free(c->inside);
    free(c->sorted);
    free(c->nsorted);
    free(c->qcol);
    free(c->subat);
    free(c->ccdf);
    pg_qmap_free(c->pooled);
    free(c);
}

size_t pg_calib_table_cdf_len(const pg_qmap *pooled)
{
    return pooled
               ? pg_qmap_total_bins(pooled) + pooled->ncols + pg_qmap_sub_len(pooled, pooled->sub)
               : 0;
}

int pg_calib_table_check_cdf(const pg_qmap *pooled, int classes, const float *class_cdf,
                             pg_error *err)
{
    size_t K = classes > 0 ? (size_t)classes : 1;
    if (!pooled || !class_cdf)
        return pg_error_set(err, PG_EINVAL, "the quantile rule needs a map and class CDFs");
    const float *f = class_cdf;
    for (size_t k = 0; k < K; k++) {
        for (size_t j = 0; j < pooled->ncols; j++) {
            size_t nb = pooled->cols[j].bins;
            bool ok = f[0] == 0.0f && f[nb] == 1.0f;
            for (size_t b = 1; ok && b <= nb; b++) ok = f[b] >= f[b - 1] && isfinite(f[b]);
            if (!ok) return pg_error_set(err, PG_EFORMAT, "a class CDF is malformed");
            f += nb + 1;
        }
        /* the within-bin CDFs of the sub-bins (qmap.h): 0 .. 1
         * nondecreasing, or -1 throughout (nothing released survived) */
        for (size_t j = 0; pooled->sub && j < pooled->ncols; j++)
            for (size_t b = 0; b < pooled->cols[j].bins; b++) {
                size_t nb = pg_qmap_sub_bins(pooled, j, b, pooled->sub);
                if (nb < 2) continue;
                bool none = f[0] == -1.0f, ok = none || (f[0] == 0.0f && f[nb] == 1.0f);
                for (size_t q = 1; ok && q <= nb; q++)
                    ok = none ? f[q] == -1.0f : f[q] >= f[q - 1] && isfinite(f[q]);
                if (!ok) return pg_error_set(err, PG_EFORMAT, "a within-bin CDF is malformed");
                f += nb + 1;
            }
    }
    return PG_OK;
}

int pg_calib_table_class_cdf(const pg_qmap *const *per_class, int classes, float *out)
{
    size_t K = classes > 0 ? (size_t)classes : 1;
    for (size_t k = 0; k < K; k++)
        for (size_t j = 0; j < per_class[k]->ncols; j++) {
            const pg_qmap_col *c = &per_class[k]->cols[j];
            for (size_t b = 0; b <= c->bins; b++) *out++ = (float)c->cdf[b];
        }
    return PG_OK;
}

int pg_calib_table_set_quantiles(pg_calib_table *c, const pg_qmap *pooled, const float *class_cdf,
                                 pg_error *err)
{
    int rc = pg_calib_table_check_cdf(pooled, (int)c->K, class_cdf, err);
    if (rc) return rc;
    if (c->pooled) return pg_error_set(err, PG_EINVAL, "the quantile rule is already set");
    if ((rc = pg_qmap_copy(pooled, &c->pooled, err))) return rc;
    size_t nc = pooled->ncols;
    c->Q = pg_calib_table_cdf_len(pooled);
    c->ccdf = malloc(c->K * c->Q * sizeof *c->ccdf);
    c->qcol = malloc(c->d * sizeof *c->qcol);
    c->sorted = calloc(c->K * nc + 1, sizeof *c->sorted);
    c->nsorted = calloc(c->K * nc + 1, sizeof *c->nsorted);
    c->first = calloc(c->K * nc + 1, sizeof *c->first);
    c->inside = calloc(c->K * nc + 1, sizeof *c->inside);
    if (!c->ccdf || !c->qcol || !c->sorted || !c->nsorted || !c->first || !c->inside)
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the quantile rule");
    for (size_t i = 0; i < c->K * c->Q; i++) c->ccdf[i] = (double)class_cdf[i];
    for (size_t u = 0; u < c->d; u++) c->qcol[u] = (size_t)-1;
    for (size_t j = 0; j < nc; j++)
        if (pooled->cols[j].unit < c->d) c->qcol[pooled->cols[j].unit] = j;
    /* where each bin's within-bin CDF starts in a class's vector */
    size_t tb = pg_qmap_total_bins(pooled);
    if (!(c->subat = malloc((tb ? tb : 1) * sizeof *c->subat)))
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the quantile rule");
    for (size_t j = 0, o = 0, at = tb + nc; j < nc; j++)
        for (size_t b = 0; b < pooled->cols[j].bins; b++, o++) {
            size_t nb = pooled->sub ? pg_qmap_sub_bins(pooled, j, b, pooled->sub) : 1;
            c->subat[o] = nb > 1 ? at : (size_t)-1;
            at += nb > 1 ? nb + 1 : 0;
        }
    return PG_OK;
}

int pg_calib_table_new(const pg_heads *h, int classes, pg_calib_table **out, pg_error *err)
{
    *out = NULL;
    int rc = check_heads(h, err);
    if (rc) return rc;
    pg_calib_table *c = calloc(1, sizeof *c);
    if (!c) return pg_error_set(err, PG_ENOMEM, "cannot allocate a calibration rule");
    c->K = classes > 0 ? (size_t)classes : 1;
    c->d = h->d;
    c->state0 = calloc(h->n, sizeof *c->state0);
    for (size_t j = 0; c->state0 && j < h->n; j++) {
        c->state0[j] = c->T;
        if (h->h[j].kind != PG_HEAD_NUMERIC) c->T += states(&h->h[j]);
    }
    size_t T = c->T ? c->T : 1;
    c->offset = calloc(c->K * c->d, sizeof *c->offset);
    c->gain = malloc(c->K * c->d * sizeof *c->gain);
    c->knots = malloc(c->K * c->d * KNOTS * sizeof *c->knots);
    for (size_t i = 0; c->knots && i < c->K * c->d; i++) c->knots[i * KNOTS] = NAN;
    for (size_t i = 0; c->gain && i < c->K * c->d; i++) c->gain[i] = 1.0f;
    c->move = calloc(c->K * T, sizeof *c->move);
    c->cdf = calloc(c->K * T, sizeof *c->cdf);
    c->target = calloc(c->K * T, sizeof *c->target);
    if (!c->state0 || !c->offset || !c->gain || !c->knots || !c->move || !c->cdf || !c->target) {
        pg_calib_table_free(c);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate a calibration rule");
    }
    if ((rc = pg_heads_copy(h, &c->h, err))) {
        pg_calib_table_free(c);
        return rc;
    }
    *out = c;
    return PG_OK;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The measured CDF at x from KNOTS quantiles, linear between knots, 0 and 1
 * outside; a run of equal knots (an atom) takes its middle level. */
static double rank_of(const float *kn, float x)
{
    if (x < kn[0]) return 0.0;
    if (x > kn[KNOTS - 1]) return 1.0;
    size_t lo = 0, hi = KNOTS - 1; /* first knot >= x */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (kn[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (kn[lo] == x) {
        size_t last = lo;
        while (last + 1 < KNOTS && kn[last + 1] == x) last++;
        return 0.5 * (double)(lo + last) / (KNOTS - 1);
    }
    double f = ((double)x - kn[lo - 1]) / ((double)kn[lo] - kn[lo - 1]);
    return ((double)(lo - 1) + f) / (KNOTS - 1);
}

/* Where the draw of a bin's mapped interval is used as the within-bin
 * shape: at least this many values, no run of equal values above a tenth. */
#define INSIDE_MIN 20

static float mapped(const pg_qmap *m, double p)
{
    double mid = 0.5 * (m->lo + m->hi), kh = 0.5 * (m->hi - m->lo) * m->spread;
    return (float)(mid + kh * (2.0 * p - 1.0));
}

static size_t lower_bound(const float *s, size_t m, float x)
{
    size_t lo = 0, hi = m;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Per bin of map column j, the slice of class slot's sorted draw inside the
 * bin's mapped interval and whether it can give the within-bin shape. */
static bool bins_of_draw(pg_calib_table *c, size_t j, size_t slot)
{
    const pg_qmap_col *pc = &c->pooled->cols[j];
    const float *s = c->sorted[slot];
    size_t m = c->nsorted[slot], nb = pc->bins;
    free(c->first[slot]);
    free(c->inside[slot]);
    c->first[slot] = malloc((nb + 1) * sizeof **c->first);
    c->inside[slot] = calloc(nb, 1);
    if (!c->first[slot] || !c->inside[slot]) return false;
    size_t *fi = c->first[slot];
    for (size_t b = 0; b <= nb; b++)
        fi[b] = b == 0 ? 0 : b == nb ? m : lower_bound(s, m, mapped(c->pooled, pc->cdf[b]));
    for (size_t b = 0; b < nb; b++) {
        size_t cnt = fi[b + 1] - fi[b], run = 0, best = 0;
        for (size_t i = fi[b]; cnt >= INSIDE_MIN && i < fi[b + 1]; i++) {
            run = i > fi[b] && s[i] == s[i - 1] ? run + 1 : 1;
            best = run > best ? run : best;
        }
        c->inside[slot][b] = cnt >= INSIDE_MIN && best * 10 <= cnt;
    }
    return true;
}

/* Passes of the numeric fit: each moves the clamped mean toward the target;
 * 8 leave it within float rounding on every table tried. */
#define FIT_PASSES 8

int pg_calib_table_fit(pg_calib_table *c, int k, const float *targets_k, const float *rows,
                       size_t n, pg_error *err)
{
    if (!c || k < 0 || (size_t)k >= c->K || !targets_k || !rows || n == 0)
        return pg_error_set(err, PG_EINVAL, "calibration fit needs a class and rows");
    const pg_heads *h = c->h;
    size_t d = c->d;
    double *q = calloc(c->T + 1, sizeof *q), *acc = calloc(d, sizeof *acc);
    double *p = malloc((c->T + 1) * sizeof *p);
    float *buf = malloc(n * d * sizeof *buf);
    if (!q || !acc || !buf || !p) {
        free(p);
        free(q);
        free(acc);
        free(buf);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate calibration buffers");
    }
    memcpy(buf, rows, n * d * sizeof *buf);
    double *move = c->move + (size_t)k * (c->T ? c->T : 1);
    double *cdf = c->cdf + (size_t)k * (c->T ? c->T : 1);
    float *off = c->offset + (size_t)k * d;
    for (size_t j = 0; j < h->n; j++) {
        const pg_head *hd = &h->h[j];
        if (hd->kind == PG_HEAD_NUMERIC) continue;
        size_t S = states(hd), s0 = c->state0[j];
        bool ref = hd->kind == PG_HEAD_SOFTMAX_REF;
        double *qq = q + s0;
        for (size_t i = 0; i < n; i++) qq[block_state(hd, rows + i * d + hd->offset)] += 1.0;
        double used = 0.0;
        for (size_t st = 0; st < S; st++) qq[st] /= (double)n;
        for (size_t u = 0; u < hd->width; u++) used += p[u + ref] = targets_k[hd->offset + u];
        if (ref) p[0] = 1.0 - used;
        normalize(p, S);
        memcpy(c->target + (size_t)k * (c->T ? c->T : 1) + s0, p, S * sizeof *p);
        double deficit = 0.0;
        for (size_t st = 0; st < S; st++) {
            double gap = qq[st] - p[st];
            move[s0 + st] = gap > 0.0 && qq[st] > 0.0 ? gap / qq[st] : 0.0;
            deficit += gap < 0.0 ? -gap : 0.0;
        }
        double run = 0.0;
        for (size_t st = 0; st < S; st++) {
            double gap = p[st] - qq[st];
            run += deficit > 0.0 && gap > 0.0 ? gap / deficit : 0.0;
            cdf[s0 + st] = run;
        }
        if (deficit > 0.0) cdf[s0 + S - 1] = 1.0; /* rounding: the last state closes */
    }
    /* Numeric: a shift x -> clamp(x + b) per unit, fitted on the draw with
     * the clamp applied (each pass moves b by the remaining mean gap). */
    float *gain = c->gain + (size_t)k * d;
    for (size_t j = 0; j < h->n; j++) {
        const pg_head *hd = &h->h[j];
        if (hd->kind != PG_HEAD_NUMERIC) continue;
        off[hd->offset] = 0.0f;
        gain[hd->offset] = 1.0f;
    }
    for (int pass = 0; pass < FIT_PASSES; pass++) {
        memset(acc, 0, d * sizeof *acc);
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < h->n; j++) {
                const pg_head *hd = &h->h[j];
                if (hd->kind != PG_HEAD_NUMERIC) continue;
                size_t o = hd->offset;
                double v = (double)off[o] + buf[i * d + o];
                acc[o] += v < h->lo ? h->lo : v > h->hi ? h->hi : v;
            }
        for (size_t j = 0; j < h->n; j++) {
            const pg_head *hd = &h->h[j];
            if (hd->kind != PG_HEAD_NUMERIC) continue;
            size_t o = hd->offset;
            off[o] = (float)((double)off[o] + (double)targets_k[o] - acc[o] / (double)n);
        }
    }
    /* Where a target spread is known (quantile-mapped units), the rank map
     * replaces the affine one: x -> m + sqrt(3) s (2 G(x) - 1), G the
     * class's measured CDF, so each class comes out uniform on an interval
     * with the target mean m and sd s, as a mapped column is over all rows.
     * An affine map keeps the generator's tails, which the map's clamp sends
     * to the column's min and max. */
    float *col = malloc(n * sizeof *col);
    for (size_t j = 0; col && j < h->n; j++) {
        const pg_head *hd = &h->h[j];
        size_t o = hd->offset;
        float *kn = c->knots + ((size_t)k * d + o) * KNOTS;
        kn[0] = NAN;
        if (hd->kind != PG_HEAD_NUMERIC || !(targets_k[d + o] >= 0.0f)) continue;
        for (size_t i = 0; i < n; i++) col[i] = rows[i * d + o];
        qsort(col, n, sizeof *col, cmp_float);
        for (size_t i = 0; i < KNOTS; i++)
            kn[i] = col[(size_t)((double)i / (KNOTS - 1) * (double)(n - 1) + 0.5)];
        off[o] = targets_k[o];
        gain[o] = (float)(sqrt(3.0) * targets_k[d + o]);
    }
    /* Quantile rule: keep the class's sorted draw of each mapped unit (the
     * rows whose value is present), its measured CDF G. */
    for (size_t j = 0; col && c->pooled && j < c->pooled->ncols; j++) {
        const pg_qmap_col *qc = &c->pooled->cols[j];
        size_t slot = (size_t)k * c->pooled->ncols + j, m = 0;
        free(c->sorted[slot]);
        c->sorted[slot] = NULL;
        c->nsorted[slot] = 0;
        for (size_t i = 0; i < n; i++)
            if (qc->missing == PG_TABLE_NONE || !(rows[i * d + qc->missing] > 0.5f))
                col[m++] = rows[i * d + qc->unit];
        if (m == 0) continue; /* nothing drawn present: the shift stays */
        qsort(col, m, sizeof *col, cmp_float);
        if (!(c->sorted[slot] = malloc(m * sizeof *col))) {
            free(col);
            col = NULL;
            break;
        }
        memcpy(c->sorted[slot], col, m * sizeof *col);
        c->nsorted[slot] = m;
        if (!bins_of_draw(c, j, slot)) {
            free(col);
            col = NULL;
            break;
        }
    }
    bool ok = col != NULL;
    free(col);
    free(p);
    free(q);
    free(acc);
    free(buf);
    return ok ? PG_OK : pg_error_set(err, PG_ENOMEM, "cannot allocate calibration buffers");
}

/* G(x) from a sorted draw s[0 .. m): level (i + 1/2) / m at s[i], linear
 * between, so a draw's own law comes out uniform; a run of equal values (a
 * collapsed generator) spreads over its whole share of levels by u, the
 * sample's own uniform; beyond the ends, within the outer half-steps. */
static double measured_cdf(const float *s, size_t m, float x, double u)
{
    size_t lo = lower_bound(s, m, x); /* first index with s[i] >= x */
    if (lo < m && s[lo] == x) {
        size_t end = lo; /* one past the run of x */
        while (end < m && s[end] == x) end++;
        return ((double)lo + u * (double)(end - lo)) / (double)m;
    }
    if (lo == 0) return 0.5 * u / (double)m;
    if (lo == m) return 1.0 - 0.5 * u / (double)m;
    double f = ((double)x - s[lo - 1]) / ((double)s[lo] - s[lo - 1]);
    return ((double)lo - 0.5 + f) / (double)m;
}

/* x -> encode(F_k^-1(G_k(x))) on a mapped unit: class k's released CDF
 * (its histogram over the pooled map's bins, post-processed as qmap.h does)
 * inverted, then sent through the pooled map the decoder inverts. */
static float quantile_move(const pg_calib_table *c, size_t k, size_t j, double p)
{
    const pg_qmap *m = c->pooled;
    size_t slot = k * m->ncols + j;
    const pg_qmap_col *pc = &m->cols[j];
    pg_qmap_col kc = *pc; /* same bins, class k's CDF */
    const double *fk = c->ccdf + k * c->Q;
    for (size_t i = 0; i < j; i++) fk += m->cols[i].bins + 1;
    kc.cdf = (double *)fk;
    /* The bin F_k puts level p in, and p's place f inside that bin's mass. */
    size_t lo = 0, hi = kc.bins;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (kc.cdf[mid] <= p)
            lo = mid;
        else
            hi = mid;
    }
    double w = kc.cdf[lo + 1] - kc.cdf[lo];
    double f = w > 0.0 ? (p - kc.cdf[lo]) / w : 0.5;
    f = f < 0.0 ? 0.0 : f > 1.0 ? 1.0 : f;
    double v;
    size_t o = lo; /* the bin over all columns */
    for (size_t i = 0; i < j; i++) o += m->cols[i].bins;
    const double *sw =
        c->subat && c->subat[o] != (size_t)-1 ? c->ccdf + k * c->Q + c->subat[o] : NULL;
    if (sw && sw[0] >= 0.0) {
        /* The class's released sub-bins: the sub-bin W puts f in, and f's
         * place g inside its mass; a point sub-bin (one integer value, the
         * column's minimum) gives its value. */
        size_t nb = pg_qmap_sub_bins(m, j, lo, m->sub), a = 0, z = nb;
        while (z - a > 1) {
            size_t mid = a + (z - a) / 2;
            if (sw[mid] <= f)
                a = mid;
            else
                z = mid;
        }
        double ww = sw[a + 1] - sw[a], g = ww > 0.0 ? (f - sw[a]) / ww : 0.5, y0, y1;
        g = g < 0.0 ? 0.0 : g > 1.0 ? 1.0 : g;
        pg_qmap_sub_range(m, j, lo, m->sub, a, &y0, &y1);
        v = mapped(m, pg_qmap_cdf(pc, y0 + g * (y1 - y0)));
    } else if (c->inside[slot][lo]) {
        /* Inside the bin the release says nothing: the generator's own
         * shape there (its draw's quantile f within the bin's interval),
         * which it learned from the rows (a skewed column's mass piled at
         * one end of a bin), instead of a uniform spread. */
        const float *s = c->sorted[slot] + c->first[slot][lo];
        size_t cnt = c->first[slot][lo + 1] - c->first[slot][lo];
        double at = f * (double)cnt - 0.5;
        at = at < 0.0 ? 0.0 : at > (double)(cnt - 1) ? (double)(cnt - 1) : at;
        size_t i = (size_t)at;
        double r = at - (double)i;
        v = i + 1 < cnt ? (1.0 - r) * s[i] + r * s[i + 1] : s[i];
    } else {
        /* F_k^-1(p), linear in the bin, through the pooled map */
        double y = pc->edge[lo] + f * (pc->edge[lo + 1] - pc->edge[lo]);
        v = mapped(m, pg_qmap_cdf(pc, y));
    }
    return (float)(v < m->lo ? m->lo : v > m->hi ? m->hi : v);
}

/* Levels u = Phi(L_k g) of one row's copula, g standard normals from rng. */
static void copula_draw(const pg_calib_table *c, size_t k, pg_rng *rng, double *u)
{
    double g[PG_CALIB_COPULA_MAX];
    size_t m = c->cm;
    const double *L = c->chol + k * m * m;
    for (size_t i = 0; i < m; i++) g[i] = pg_rng_normal(rng);
    for (size_t i = 0; i < m; i++) {
        double z = 0.0;
        for (size_t q = 0; q <= i; q++) z += L[i * m + q] * g[q];
        u[i] = pg_privacy_ndtr(z);
    }
}

void pg_calib_table_apply(const pg_calib_table *c, pg_rng *rng, float *rows, const int32_t *labels,
                          size_t n)
{
    const pg_heads *h = c->h;
    size_t T = c->T ? c->T : 1;
    for (size_t i = 0; i < n; i++) {
        size_t k = labels && labels[i] >= 0 && (size_t)labels[i] < c->K ? (size_t)labels[i] : 0;
        float *row = rows + i * c->d;
        const double *move = c->move + k * T, *cdf = c->cdf + k * T;
        const float *off = c->offset + k * c->d, *gain = c->gain + k * c->d;
        /* Copula: its m normals for every row, used or not. */
        double cu[PG_CALIB_COPULA_MAX];
        if (c->cm) copula_draw(c, k, rng, cu);
        for (size_t j = 0; j < h->n; j++) {
            const pg_head *hd = &h->h[j];
            float *u = row + hd->offset;
            if (hd->kind == PG_HEAD_NUMERIC) {
                size_t qj = c->pooled ? c->qcol[hd->offset] : (size_t)-1;
                if (qj != (size_t)-1) {
                    /* One draw per mapped unit per row, used or not. */
                    double t = pg_rng_uniform(rng);
                    size_t slot = k * c->pooled->ncols + qj;
                    /* Independence: two more draws, used or not. */
                    bool fresh = false;
                    if (c->indep > 0.0) {
                        fresh = pg_rng_uniform(rng) < c->indep;
                        double f = pg_rng_uniform(rng);
                        if (fresh) t = c->cm ? cu[c->hcoord[j]] : f;
                    }
                    if (c->nsorted[slot] > 0) {
                        double p =
                            fresh ? t : measured_cdf(c->sorted[slot], c->nsorted[slot], u[0], t);
                        u[0] = quantile_move(c, k, qj, p);
                        continue;
                    }
                }
                const float *kn = c->knots + (k * c->d + hd->offset) * KNOTS;
                float v = isnan(kn[0])
                              ? off[hd->offset] + gain[hd->offset] * u[0]
                              : (float)((double)off[hd->offset] +
                                        gain[hd->offset] * (2.0 * rank_of(kn, u[0]) - 1.0));
                u[0] = v < h->lo ? h->lo : v > h->hi ? h->hi : v;
                continue;
            }
            /* Two draws per head per row, used or not. */
            double a = pg_rng_uniform(rng), b = pg_rng_uniform(rng);
            size_t S = states(hd), s0 = c->state0[j], st = block_state(hd, u);
            if (c->indep > 0.0) {
                /* Independence: two more draws, used or not; a redrawn
                 * state follows the class's target frequencies alone. */
                bool fresh = pg_rng_uniform(rng) < c->indep;
                double f = pg_rng_uniform(rng);
                if (fresh && c->cm) {
                    /* The state whose copula interval holds the level. */
                    const size_t *ord = c->corder + k * T + s0;
                    const double *cum = c->ccum + k * T + s0;
                    double lv = cu[c->hcoord[j]];
                    size_t at = 0;
                    while (at + 1 < S && !(lv < cum[at])) at++;
                    set_state(hd, u, ord[at]);
                    continue;
                }
                if (fresh) {
                    const double *tg = c->target + k * T + s0;
                    size_t to = 0;
                    double run = tg[0];
                    while (to + 1 < S && !(f < run)) run += tg[++to];
                    set_state(hd, u, to);
                    continue;
                }
            }
            if (!(a < move[s0 + st])) continue;
            size_t to = 0;
            while (to + 1 < S && !(b < cdf[s0 + to])) to++;
            set_state(hd, u, to);
        }
    }
}

int pg_calib_table_set_independence(pg_calib_table *c, double lambda, pg_error *err)
{
    if (!c || !(lambda >= 0.0 && lambda <= 1.0))
        return pg_error_set(err, PG_EINVAL, "independence must lie in [0, 1]");
    c->indep = lambda;
    return PG_OK;
}

double pg_calib_table_independence(const pg_calib_table *c)
{
    return c ? c->indep : 0.0;
}

int pg_calib_table_fit_all(pg_calib_table *c, const float *targets, const float *rows, size_t n,
                           pg_error *err)
{
    if (!c || !targets || !rows || n == 0)
        return pg_error_set(err, PG_EINVAL, "calibration fit needs targets and rows");
    int rc = PG_OK;
    for (size_t k = 0; k < c->K && rc == PG_OK; k++)
        rc = pg_calib_table_fit(c, (int)k, targets + k * 2 * c->d, rows + k * n * c->d, n, err);
    return rc;
}

size_t pg_calib_table_copula_dim(const pg_calib_table *c)
{
    return c ? pg_copula_dim(c->h, c->pooled, NULL) : 0;
}

int pg_calib_table_set_copula(pg_calib_table *c, const float *targets, const float *R,
                              pg_error *err)
{
    if (!c || !targets || !R || !c->pooled)
        return pg_error_set(err, PG_EINVAL, "the copula needs the quantile rule and its matrices");
    if (c->cm) return pg_error_set(err, PG_EINVAL, "the copula is already set");
    size_t m = pg_copula_dim(c->h, c->pooled, NULL), T = c->T ? c->T : 1;
    if (m == 0 || m > PG_CALIB_COPULA_MAX)
        return pg_error_set(err, PG_EINVAL, "the copula needs 1 to %d coordinates, not %zu",
                            PG_CALIB_COPULA_MAX, m);
    int rc = pg_copula_check(R, c->K, m, err);
    if (rc) return rc;
    size_t *coord = malloc(m * sizeof *coord);
    c->hcoord = malloc(c->h->n * sizeof *c->hcoord);
    c->chol = malloc(c->K * m * m * sizeof *c->chol);
    c->corder = calloc(c->K * T, sizeof *c->corder);
    c->ccum = calloc(c->K * T, sizeof *c->ccum);
    if (!coord || !c->hcoord || !c->chol || !c->corder || !c->ccum) {
        free(coord);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the copula");
    }
    pg_copula_dim(c->h, c->pooled, coord);
    for (size_t j = 0; j < c->h->n; j++) c->hcoord[j] = (size_t)-1;
    for (size_t i = 0; i < m; i++) c->hcoord[coord[i]] = i;
    free(coord);
    if ((rc = pg_copula_cholesky(R, c->K, m, c->chol, err))) return rc;
    for (size_t k = 0; k < c->K; k++)
        for (size_t j = 0; j < c->h->n; j++) {
            const pg_head *hd = &c->h->h[j];
            if (hd->kind == PG_HEAD_NUMERIC) continue;
            pg_copula_head_order(hd, targets + k * 2 * c->d, c->corder + k * T + c->state0[j],
                                 c->ccum + k * T + c->state0[j]);
        }
    c->cm = m; /* last: apply reads the copula only once it is whole */
    return PG_OK;
}
