/* qmap - the DP quantile map of qmap.h. */
#include "engine/data/qmap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/privacy/privacy.h"

/* Share of a column's mass every bin gets at least (qmap.h). */
#define FLOOR_SHARE 1e-4

static int numeric(const pg_table *t, size_t j)
{
    return j != t->label &&
           (t->cols[j].type == PG_COL_CONTINUOUS || t->cols[j].type == PG_COL_INTEGER);
}

size_t pg_qmap_columns(const pg_table *t)
{
    size_t c = 0;
    for (size_t j = 0; t && j < t->ncols; j++) c += (size_t)numeric(t, j);
    return c;
}

double pg_qmap_count_sigma(double s, size_t c, int replace_one)
{
    return s * sqrt((double)c * (replace_one ? 2.0 : 1.0));
}

int pg_qmap_rdp(double s, const double *orders, size_t n, double *rdp, pg_error *err)
{
    /* Gaussian with std s * Delta on a release of l2 sensitivity Delta. */
    for (size_t i = 0; i < n; i++) {
        int rc = pg_rdp_gaussian(s, orders[i], &rdp[i], err);
        if (rc) return rc;
    }
    return PG_OK;
}

void pg_qmap_free(pg_qmap *m)
{
    if (!m) return;
    for (size_t j = 0; j < m->ncols; j++) {
        free(m->cols[j].edge);
        free(m->cols[j].cdf);
    }
    free(m->cols);
    free(m);
}

static int alloc_map(size_t ncols, pg_qmap **out, pg_error *err)
{
    pg_qmap *m = calloc(1, sizeof *m);
    if (m && ncols && !(m->cols = calloc(ncols, sizeof *m->cols))) {
        free(m);
        m = NULL;
    }
    if (!m) return pg_error_set(err, PG_ENOMEM, "cannot allocate a quantile map");
    m->ncols = ncols;
    *out = m;
    return PG_OK;
}

static int alloc_col(pg_qmap_col *c, size_t bins, pg_error *err)
{
    c->bins = bins;
    c->edge = malloc((bins + 1) * sizeof *c->edge);
    c->cdf = malloc((bins + 1) * sizeof *c->cdf);
    if (!c->edge || !c->cdf) return pg_error_set(err, PG_ENOMEM, "cannot allocate a quantile map");
    return PG_OK;
}

int pg_qmap_layout(const pg_table *t, size_t bins, pg_qmap **out, pg_error *err)
{
    *out = NULL;
    if (!t || bins < 2 || bins > PG_QMAP_MAX_BINS)
        return pg_error_set(err, PG_EINVAL, "a quantile map needs a table and 2 .. %d bins",
                            PG_QMAP_MAX_BINS);
    pg_qmap *m = NULL;
    int rc = alloc_map(pg_qmap_columns(t), &m, err);
    if (rc) return rc;
    m->lo = t->lo;
    m->hi = t->hi;
    m->spread = 1.0;
    double span = t->hi - t->lo;
    size_t k = 0;
    for (size_t j = 0; j < t->ncols && rc == PG_OK; j++) {
        if (!numeric(t, j)) continue;
        const pg_table_col *tc = &t->cols[j];
        pg_qmap_col *c = &m->cols[k++];
        c->unit = tc->offset;
        c->missing = tc->nullable ? tc->offset + 1 : PG_TABLE_NONE;
        c->integer = tc->type == PG_COL_INTEGER;
        double values = tc->max - tc->min; /* integer: values - 1 */
        c->step = c->integer ? span / values : 0.0;
        if (c->integer && values + 1 <= (double)bins) {
            /* One bin per value, edges halfway between encoded values. */
            size_t nb = (size_t)values + 1;
            if ((rc = alloc_col(c, nb, err))) break;
            for (size_t b = 0; b <= nb; b++) c->edge[b] = t->lo + ((double)b - 0.5) * c->step;
        } else {
            if ((rc = alloc_col(c, bins, err))) break;
            for (size_t b = 0; b <= bins; b++) c->edge[b] = t->lo + span * (double)b / (double)bins;
            c->edge[bins] = t->hi;
        }
        for (size_t b = 0; b <= c->bins; b++) c->cdf[b] = (double)b / (double)c->bins;
    }
    if (rc) {
        pg_qmap_free(m);
        return rc;
    }
    *out = m;
    return PG_OK;
}

/* Bin of encoded u: the last b with edge[b] <= u, within [0, bins). */
static size_t bin_of(const pg_qmap_col *c, double u)
{
    size_t lo = 0, hi = c->bins; /* edge[lo] <= u < edge[hi] unless clamped */
    if (u <= c->edge[0]) return 0;
    if (u >= c->edge[c->bins]) return c->bins - 1;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->edge[mid] <= u)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int missing(const pg_qmap_col *c, const float *row)
{
    return c->missing != PG_TABLE_NONE && row[c->missing] > 0.5f;
}

void pg_qmap_histogram(const pg_qmap *m, const float *x, size_t n, size_t stride, double **counts)
{
    for (size_t j = 0; j < m->ncols; j++) {
        const pg_qmap_col *c = &m->cols[j];
        memset(counts[j], 0, c->bins * sizeof **counts);
        for (size_t i = 0; i < n; i++) {
            const float *row = x + i * stride;
            if (!missing(c, row)) counts[j][bin_of(c, row[c->unit])] += 1.0;
        }
    }
}

void pg_qmap_set_counts(pg_qmap *m, double *const *counts, double threshold)
{
    for (size_t j = 0; j < m->ncols; j++) {
        pg_qmap_col *c = &m->cols[j];
        double total = 0;
        for (size_t b = 0; b < c->bins; b++) {
            double v = counts[j][b] - threshold;
            total += isfinite(v) && v > 0 ? v : 0;
        }
        double floor = total > 0 ? FLOOR_SHARE * total / (double)c->bins : 1.0;
        double sum = 0;
        c->cdf[0] = 0;
        for (size_t b = 0; b < c->bins; b++) {
            double v = counts[j][b] - threshold;
            sum += (isfinite(v) && v > 0 ? v : 0) + floor;
            c->cdf[b + 1] = sum;
        }
        for (size_t b = 1; b <= c->bins; b++) c->cdf[b] /= sum;
        c->cdf[c->bins] = 1.0;
    }
}

int pg_qmap_release(pg_rng *secure, const pg_table *t, const float *x, size_t n, size_t stride,
                    size_t bins, double s, int replace_one, pg_qmap **out, pg_error *err)
{
    *out = NULL;
    if (!secure || !pg_rng_is_secure(secure))
        return pg_error_set(err, PG_EPRIVACY, "DP noise needs the secure generator");
    if (!(s > 0) || !isfinite(s) || (n && !x) || stride < (t ? t->width : 0))
        return pg_error_set(err, PG_EINVAL, "a quantile map needs rows and noise > 0");
    pg_qmap *m = NULL;
    int rc = pg_qmap_layout(t, bins, &m, err);
    if (rc) return rc;
    double sigma = pg_qmap_count_sigma(s, m->ncols, replace_one);
    double **counts = calloc(m->ncols ? m->ncols : 1, sizeof *counts);
    for (size_t j = 0; counts && j < m->ncols; j++)
        if (!(counts[j] = malloc(m->cols[j].bins * sizeof **counts))) {
            for (size_t k = 0; k < j; k++) free(counts[k]);
            free(counts);
            counts = NULL;
        }
    if (!counts) {
        pg_qmap_free(m);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the histograms");
    }
    pg_qmap_histogram(m, x, n, stride, counts);
    for (size_t j = 0; j < m->ncols; j++)
        for (size_t b = 0; b < m->cols[j].bins; b++) counts[j][b] += sigma * pg_rng_normal(secure);
    pg_qmap_set_counts(m, counts, sigma);
    for (size_t j = 0; j < m->ncols; j++) free(counts[j]);
    free(counts);
    *out = m;
    return PG_OK;
}

size_t pg_qmap_total_bins(const pg_qmap *m)
{
    size_t b = 0;
    for (size_t j = 0; m && j < m->ncols; j++) b += m->cols[j].bins;
    return b;
}

/* Histograms of rows x[i] with labels[i] == k (labels NULL: all rows). */
static void class_histogram(const pg_qmap *m, const float *x, const int32_t *labels, int32_t k,
                            size_t n, size_t stride, double **counts)
{
    for (size_t j = 0; j < m->ncols; j++) {
        const pg_qmap_col *c = &m->cols[j];
        memset(counts[j], 0, c->bins * sizeof **counts);
        for (size_t i = 0; i < n; i++) {
            const float *row = x + i * stride;
            if ((!labels || labels[i] == k) && !missing(c, row))
                counts[j][bin_of(c, row[c->unit])] += 1.0;
        }
    }
}

int pg_qmap_release_classes(pg_rng *secure, const pg_table *t, const float *x,
                            const int32_t *labels, size_t n, size_t stride, int classes,
                            size_t bins, double s, int replace_one, pg_qmap **pooled,
                            pg_qmap **per_class, double *raw, pg_error *err)
{
    size_t K = classes > 0 ? (size_t)classes : 1;
    *pooled = NULL;
    for (size_t k = 0; k < K; k++) per_class[k] = NULL;
    if (!secure || !pg_rng_is_secure(secure))
        return pg_error_set(err, PG_EPRIVACY, "DP noise needs the secure generator");
    if (!(s > 0) || !isfinite(s) || (n && !x) || stride < (t ? t->width : 0) || classes < 0 ||
        (classes > 0 && n && !labels))
        return pg_error_set(err, PG_EINVAL, "a per-class quantile map needs labelled rows, s > 0");
    for (size_t i = 0; classes > 0 && i < n; i++)
        if (labels[i] < 0 || labels[i] >= classes)
            return pg_error_set(err, PG_EINVAL, "row %zu has label %d outside [0, %d)", i + 1,
                                (int)labels[i], classes);
    int rc = pg_qmap_layout(t, bins, pooled, err);
    for (size_t k = 0; k < K && rc == PG_OK; k++) rc = pg_qmap_layout(t, bins, &per_class[k], err);
    pg_qmap *m = *pooled;
    size_t nc = m ? m->ncols : 0, tb = pg_qmap_total_bins(m);
    double *sum = rc ? NULL : calloc(tb ? tb : 1, sizeof *sum);
    double *cnt = rc ? NULL : malloc((tb ? tb : 1) * sizeof *cnt);
    double **cs = rc ? NULL : calloc(nc ? nc : 1, sizeof *cs);
    double **ps = rc ? NULL : calloc(nc ? nc : 1, sizeof *ps);
    if (rc == PG_OK && (!sum || !cnt || !cs || !ps))
        rc = pg_error_set(err, PG_ENOMEM, "cannot allocate the histograms");
    if (rc == PG_OK) {
        for (size_t j = 0, o = 0; j < nc; o += m->cols[j].bins, j++) {
            cs[j] = cnt + o;
            ps[j] = sum + o;
        }
        /* One class at a time: its histograms plus the same per-count noise
         * as the pooled release (sigma = s Delta, Delta the sensitivity of the
         * concatenation, qmap.h), post-processed with threshold sigma. */
        double sigma = pg_qmap_count_sigma(s, nc, replace_one);
        for (size_t k = 0; k < K; k++) {
            class_histogram(m, x, classes > 0 ? labels : NULL, (int32_t)k, n, stride, cs);
            for (size_t b = 0; b < tb; b++) {
                cnt[b] += sigma * pg_rng_normal(secure);
                sum[b] += cnt[b];
            }
            if (raw) memcpy(raw + k * tb, cnt, tb * sizeof *raw);
            pg_qmap_set_counts(per_class[k], cs, sigma);
        }
        /* The pooled map: the sum of the K noisy histograms (noise variance
         * K sigma^2), thresholded at its own noise std. */
        pg_qmap_set_counts(m, ps, sqrt((double)K) * sigma);
    }
    free(sum);
    free(cnt);
    free(cs);
    free(ps);
    if (rc) {
        pg_qmap_free(*pooled);
        *pooled = NULL;
        for (size_t k = 0; k < K; k++) {
            pg_qmap_free(per_class[k]);
            per_class[k] = NULL;
        }
    }
    return rc;
}

double pg_qmap_cdf(const pg_qmap_col *c, double u)
{
    if (u <= c->edge[0]) return 0.0;
    if (u >= c->edge[c->bins]) return 1.0;
    size_t b = bin_of(c, u);
    double w = c->edge[b + 1] - c->edge[b];
    double f = (u - c->edge[b]) / w;
    return c->cdf[b] + f * (c->cdf[b + 1] - c->cdf[b]);
}

double pg_qmap_inverse(const pg_qmap_col *c, double p)
{
    if (!(p > 0.0)) return c->edge[0]; /* NaN too */
    if (p >= 1.0) return c->edge[c->bins];
    size_t lo = 0, hi = c->bins; /* cdf[lo] <= p < cdf[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->cdf[mid] <= p)
            lo = mid;
        else
            hi = mid;
    }
    double f = (p - c->cdf[lo]) / (c->cdf[lo + 1] - c->cdf[lo]);
    return c->edge[lo] + f * (c->edge[lo + 1] - c->edge[lo]);
}

int pg_qmap_set_spread(pg_qmap *m, double spread, pg_error *err)
{
    if (!(spread > 0.0 && spread <= 1.0))
        return pg_error_set(err, PG_EINVAL, "the quantile map's spread must lie in (0, 1]");
    m->spread = spread;
    return PG_OK;
}

void pg_qmap_encode(const pg_qmap *m, float *x, size_t stride, size_t rows)
{
    if (!m) return;
    double mid = 0.5 * (m->lo + m->hi), kh = 0.5 * (m->hi - m->lo) * m->spread;
    for (size_t i = 0; i < rows; i++) {
        float *row = x + i * stride;
        for (size_t j = 0; j < m->ncols; j++) {
            const pg_qmap_col *c = &m->cols[j];
            if (missing(c, row)) continue;
            double v = mid + kh * (2.0 * pg_qmap_cdf(c, row[c->unit]) - 1.0);
            row[c->unit] = (float)(v < m->lo ? m->lo : v > m->hi ? m->hi : v);
        }
    }
}

void pg_qmap_decode(const pg_qmap *m, float *x, size_t stride, size_t rows)
{
    if (!m) return;
    double span = m->hi - m->lo, mid = 0.5 * (m->lo + m->hi), kh = 0.5 * span * m->spread;
    for (size_t i = 0; i < rows; i++) {
        float *row = x + i * stride;
        for (size_t j = 0; j < m->ncols; j++) {
            const pg_qmap_col *c = &m->cols[j];
            double u = pg_qmap_inverse(c, 0.5 * (1.0 + ((double)row[c->unit] - mid) / kh));
            if (c->integer) {
                double k = round((u - m->lo) / c->step), last = round(span / c->step);
                u = m->lo + (k < 0 ? 0 : k > last ? last : k) * c->step;
            }
            row[c->unit] = (float)(u < m->lo ? m->lo : u > m->hi ? m->hi : u);
        }
    }
}

json_t *pg_qmap_to_json(const pg_qmap *m)
{
    json_t *cols = json_array();
    json_t *j = json_pack("{s:i,s:f,s:f,s:f,s:o}", "version", PG_QMAP_VERSION, "lo", m->lo, "hi",
                          m->hi, "spread", m->spread, "columns", cols);
    if (!j) return NULL;
    for (size_t k = 0; k < m->ncols; k++) {
        const pg_qmap_col *c = &m->cols[k];
        json_t *e = json_array(), *f = json_array();
        for (size_t b = 0; e && f && b <= c->bins; b++)
            if (json_array_append_new(e, json_real(c->edge[b])) ||
                json_array_append_new(f, json_real(c->cdf[b])))
                break;
        json_t *o = json_pack("{s:I,s:o,s:b,s:f,s:o,s:o}", "unit", (json_int_t)c->unit, "missing",
                              c->missing == PG_TABLE_NONE ? json_null()
                                                          : json_integer((json_int_t)c->missing),
                              "integer", c->integer, "step", c->step, "edges", e, "cdf", f);
        if (!o || json_array_append_new(cols, o)) {
            json_decref(j);
            return NULL;
        }
    }
    return j;
}

static int bad(pg_error *err)
{
    return pg_error_set(err, PG_EFORMAT, "the quantile map is malformed");
}

int pg_qmap_from_json(const json_t *j, size_t width, pg_qmap **out, pg_error *err)
{
    *out = NULL;
    const json_t *cols = json_object_get(j, "columns");
    double lo = json_number_value(json_object_get(j, "lo"));
    double hi = json_number_value(json_object_get(j, "hi"));
    double spread = json_number_value(json_object_get(j, "spread"));
    if (json_integer_value(json_object_get(j, "version")) != PG_QMAP_VERSION ||
        !json_is_array(cols) || json_array_size(cols) > width || !isfinite(lo) || !isfinite(hi) ||
        !(lo < hi) || !(spread > 0.0 && spread <= 1.0))
        return bad(err);
    pg_qmap *m = NULL;
    int rc = alloc_map(json_array_size(cols), &m, err);
    if (rc) return rc;
    m->lo = lo;
    m->hi = hi;
    m->spread = spread;
    for (size_t k = 0; k < m->ncols && rc == PG_OK; k++) {
        const json_t *o = json_array_get(cols, k);
        const json_t *e = json_object_get(o, "edges"), *f = json_object_get(o, "cdf");
        const json_t *mi = json_object_get(o, "missing"), *un = json_object_get(o, "unit");
        pg_qmap_col *c = &m->cols[k];
        size_t nb = json_array_size(e);
        if (!json_is_integer(un) || json_integer_value(un) < 0 ||
            (size_t)json_integer_value(un) >= width || !(json_is_null(mi) || json_is_integer(mi)) ||
            (json_is_integer(mi) &&
             (json_integer_value(mi) < 0 || (size_t)json_integer_value(mi) >= width)) ||
            !json_is_boolean(json_object_get(o, "integer")) || nb < 3 ||
            nb > PG_QMAP_MAX_BINS + 1 || json_array_size(f) != nb) {
            rc = bad(err);
            break;
        }
        if ((rc = alloc_col(c, nb - 1, err))) break;
        c->unit = (size_t)json_integer_value(un);
        c->missing = json_is_null(mi) ? PG_TABLE_NONE : (size_t)json_integer_value(mi);
        c->integer = json_is_true(json_object_get(o, "integer"));
        c->step = json_number_value(json_object_get(o, "step"));
        bool ok = !c->integer || (isfinite(c->step) && c->step > 0);
        for (size_t b = 0; ok && b < nb; b++) {
            c->edge[b] = json_number_value(json_array_get(e, b));
            c->cdf[b] = json_number_value(json_array_get(f, b));
            ok = json_is_number(json_array_get(e, b)) && json_is_number(json_array_get(f, b)) &&
                 isfinite(c->edge[b]) && isfinite(c->cdf[b]) &&
                 (b == 0 || (c->edge[b] > c->edge[b - 1] && c->cdf[b] > c->cdf[b - 1]));
        }
        if (!ok || c->cdf[0] != 0.0 || c->cdf[nb - 1] != 1.0) rc = bad(err);
    }
    if (rc) {
        pg_qmap_free(m);
        return rc;
    }
    *out = m;
    return PG_OK;
}

int pg_qmap_copy(const pg_qmap *m, pg_qmap **out, pg_error *err)
{
    *out = NULL;
    if (!m) return PG_OK;
    pg_qmap *c = NULL;
    int rc = alloc_map(m->ncols, &c, err);
    if (rc) return rc;
    c->lo = m->lo;
    c->hi = m->hi;
    c->spread = m->spread;
    for (size_t k = 0; k < m->ncols && rc == PG_OK; k++) {
        const pg_qmap_col *a = &m->cols[k];
        pg_qmap_col *b = &c->cols[k];
        *b = *a;
        b->edge = b->cdf = NULL;
        if ((rc = alloc_col(b, a->bins, err)) == PG_OK) {
            memcpy(b->edge, a->edge, (a->bins + 1) * sizeof *a->edge);
            memcpy(b->cdf, a->cdf, (a->bins + 1) * sizeof *a->cdf);
        }
    }
    if (rc) {
        pg_qmap_free(c);
        return rc;
    }
    *out = c;
    return PG_OK;
}
