#include "engine/data/discretize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Edges of a numeric attribute: nvalue + 1 increasing values. Integer bins
 * are half-open on the integers, [e_k, e_{k+1}), with e_0 = min and
 * e_nvalue = max + 1; real bins are [e_k, e_{k+1}) with the last closed. */
static int numeric_edges(pg_disc_attr *a, double lo, double hi, int integer, int logs, int bins,
                         pg_error *err)
{
    size_t nb = (size_t)bins;
    if (integer && hi - lo + 1.0 <= (double)bins) nb = (size_t)(hi - lo + 1.0);
    double *e = malloc((nb + 1) * sizeof *e);
    if (!e) return pg_error_set(err, PG_ENOMEM, "out of memory building bins");
    size_t m = 0;
    double span = integer ? hi + 1.0 - lo : hi - lo;
    double U = log1p(span);
    for (size_t k = 0; k <= nb; k++) {
        double f = (double)k / (double)nb;
        double x = logs ? lo + expm1(f * U) : lo + f * span;
        if (k == nb) x = integer ? hi + 1.0 : hi;
        if (integer) x = floor(x);
        if (k == 0) x = lo;
        /* Integer (and degenerate log) edges that coincide would make an
         * empty bin: keep only strictly increasing edges. */
        if (m > 0 && !(x > e[m - 1])) continue;
        e[m++] = x;
    }
    if (m < 2) { /* cannot happen for min < max; keep one bin regardless */
        e[0] = lo;
        e[1] = integer ? hi + 1.0 : hi;
        m = 2;
    }
    a->edges = e;
    a->nvalue = m - 1;
    return PG_OK;
}

uint32_t pg_disc_bin(const pg_disc_attr *a, double x)
{
    const double *e = a->edges;
    size_t n = a->nvalue;
    if (!(x >= e[0])) return 0; /* NaN and below: the first bin */
    if (a->kind == PG_DISC_INT) x = floor(x + 0.5);
    size_t lo = 0, hi = n; /* invariant: e[lo] <= x, answer in [lo, hi) */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (e[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return (uint32_t)lo;
}

void pg_disc_free(pg_disc *D)
{
    if (!D) return;
    for (size_t i = 0; D->a && i < D->nattr; i++) free(D->a[i].edges);
    free(D->a);
    memset(D, 0, sizeof *D);
}

int pg_disc_build(const pg_table *t, size_t d, float lo, float hi, int classes, int bins,
                  pg_disc *out, pg_error *err)
{
    memset(out, 0, sizeof *out);
    if (bins < 2 || bins > PG_DISC_MAX_BINS)
        return pg_error_set(err, PG_EINVAL, "bins must be in [2, %d]", PG_DISC_MAX_BINS);
    if (t && t->width != d)
        return pg_error_set(err, PG_EINVAL, "the table's width %zu is not the rows' %zu", t->width,
                            d);
    if (!t && !(lo < hi && isfinite(lo) && isfinite(hi)))
        return pg_error_set(err, PG_EINVAL, "untyped rows need a finite declared range");
    if (!t && classes < 0) return pg_error_set(err, PG_EINVAL, "classes must be >= 0");
    size_t n = t ? t->ncols : d + (classes > 0);
    out->a = calloc(n ? n : 1, sizeof *out->a);
    if (!out->a) return pg_error_set(err, PG_ENOMEM, "out of memory building bins");
    out->nattr = n;
    out->d = d;
    out->lo = lo;
    out->hi = hi;
    out->typed = t != NULL;
    out->label = PG_TABLE_NONE;
    for (size_t i = 0; i < n; i++) {
        pg_disc_attr *a = &out->a[i];
        a->col = i;
        int rc = PG_OK;
        if (!t && i == d) {
            a->kind = PG_DISC_LABEL;
            a->nvalue = (size_t)classes;
            out->label = i;
        } else if (!t) {
            a->kind = PG_DISC_REAL;
            rc = numeric_edges(a, lo, hi, 0, 0, bins, err);
        } else {
            const pg_table_col *c = &t->cols[i];
            a->nullable = c->nullable;
            if (i == t->label) {
                a->kind = PG_DISC_LABEL;
                a->nullable = 0;
                a->nvalue = pg_table_num_classes(t);
                out->label = i;
            } else if (c->type == PG_COL_CATEGORICAL) {
                a->kind = PG_DISC_CAT;
                a->nvalue = c->ncat;
            } else if (c->type == PG_COL_BOOLEAN) {
                a->kind = PG_DISC_BOOL;
                a->nvalue = 2;
            } else {
                a->kind = c->type == PG_COL_INTEGER ? PG_DISC_INT : PG_DISC_REAL;
                rc = numeric_edges(a, c->min, c->max, a->kind == PG_DISC_INT, c->log_scale, bins,
                                   err);
            }
        }
        if (rc) {
            pg_disc_free(out);
            return rc;
        }
        a->levels = a->nvalue + (size_t)a->nullable;
    }
    return PG_OK;
}

size_t pg_disc_cells(const pg_disc *D, const size_t *attrs, size_t k)
{
    size_t c = 1;
    for (size_t i = 0; i < k; i++) {
        size_t l = D->a[attrs[i]].levels;
        if (l && c > SIZE_MAX / l) return SIZE_MAX;
        c *= l;
    }
    return c;
}

void pg_disc_encode(const pg_disc *D, const pg_table *t, const float *row, int class_,
                    uint32_t *codes)
{
    for (size_t i = 0; i < D->nattr; i++) {
        const pg_disc_attr *a = &D->a[i];
        if (a->kind == PG_DISC_LABEL) {
            codes[i] = class_ >= 0 && (size_t)class_ < a->nvalue ? (uint32_t)class_ : 0;
            continue;
        }
        if (!D->typed) {
            codes[i] = pg_disc_bin(a, row[i]);
            continue;
        }
        pg_table_value v;
        pg_table_decode_value(t, a->col, row, 1, &v);
        if (v.missing && a->nullable)
            codes[i] = (uint32_t)a->nvalue;
        else if (a->kind == PG_DISC_CAT || a->kind == PG_DISC_BOOL)
            codes[i] = v.cat < a->nvalue ? (uint32_t)v.cat : 0;
        else
            codes[i] = pg_disc_bin(a, v.num);
    }
}

/* A number inside bin k of a numeric attribute. */
static double draw_in_bin(const pg_disc_attr *a, uint32_t k, pg_rng *rng)
{
    double l = a->edges[k], h = a->edges[k + 1];
    if (a->kind == PG_DISC_INT) {
        uint64_t cnt = (uint64_t)(h - l); /* >= 1 by construction */
        return l + (double)pg_rng_below(rng, cnt);
    }
    /* A margin of 1e-4 of the bin keeps the float32 row encoding from moving
     * a value across an edge (so encode(decode(c)) == c); the distortion is
     * far below the bin's own resolution. */
    double m = 1e-4 * (h - l);
    return l + m + (h - l - 2.0 * m) * pg_rng_uniform(rng);
}

void pg_disc_decode(const pg_disc *D, const pg_table *t, const uint32_t *codes, pg_rng *rng,
                    float *row, int32_t *class_)
{
    if (!D->typed) {
        for (size_t i = 0; i < D->nattr; i++) {
            const pg_disc_attr *a = &D->a[i];
            if (a->kind == PG_DISC_LABEL) {
                if (class_) *class_ = (int32_t)(codes[i] < a->nvalue ? codes[i] : 0);
                continue;
            }
            uint32_t k = codes[i] < a->nvalue ? codes[i] : (uint32_t)a->nvalue - 1;
            float x = (float)draw_in_bin(a, k, rng);
            row[i] = x < D->lo ? D->lo : x > D->hi ? D->hi : x;
        }
        return;
    }
    memset(row, 0, D->d * sizeof *row);
    for (size_t i = 0; i < D->nattr; i++) {
        const pg_disc_attr *a = &D->a[i];
        uint32_t k = codes[i] < a->levels ? codes[i] : 0;
        if (a->kind == PG_DISC_LABEL) {
            if (class_) *class_ = (int32_t)k;
            continue;
        }
        pg_table_value v = {0};
        if (a->nullable && k == a->nvalue)
            v.missing = 1;
        else if (a->kind == PG_DISC_CAT || a->kind == PG_DISC_BOOL)
            v.cat = k;
        else
            v.num = draw_in_bin(a, k, rng);
        /* Clamped: a float32 real drawn at an edge may round past a bound. */
        pg_table_encode_value(t, a->col, &v, PG_TABLE_BOUNDS_CLAMP, row, NULL);
    }
}
