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

/* Integer columns: index of the first value at or above encoded u (values
 * at lo + k step, k = 0 .. last). */
static double first_value(const pg_qmap *m, const pg_qmap_col *c, double u)
{
    double k = ceil((u - m->lo) / c->step - 1e-9);
    return k < 0 ? 0 : k;
}

static double last_value(const pg_qmap *m, const pg_qmap_col *c)
{
    return round((m->hi - m->lo) / c->step);
}

/* Values of an integer column in bin b: [*k0, *k0 + count). */
static double bin_values(const pg_qmap *m, const pg_qmap_col *c, size_t b, double *k0)
{
    double last = last_value(m, c);
    double a = b == 0 ? 0 : first_value(m, c, c->edge[b]);
    double z = b + 1 == c->bins ? last + 1 : first_value(m, c, c->edge[b + 1]);
    z = z > last + 1 ? last + 1 : z;
    *k0 = a;
    return z > a ? z - a : 0;
}

size_t pg_qmap_sub_bins(const pg_qmap *m, size_t j, size_t b, size_t sub)
{
    const pg_qmap_col *c = &m->cols[j];
    if (sub < 2 || b >= c->bins) return 1;
    if (!c->integer) return sub;
    double k0, v = bin_values(m, c, b, &k0);
    if (v <= 1) return 1;
    return v <= (double)sub ? (size_t)v : sub;
}

/* An integer bin cut into equal parts after the point {min} (first bin) or
 * from its lower edge: the start and width of the cuts. */
static void cuts(const pg_qmap *m, const pg_qmap_col *c, size_t b, size_t sub, double *start,
                 double *width, size_t *points)
{
    *points = c->integer && b == 0 ? 1 : 0;
    *start = *points ? m->lo + 0.5 * c->step : c->edge[b];
    *width = (c->edge[b + 1] - *start) / (double)(sub - *points);
}

void pg_qmap_sub_range(const pg_qmap *m, size_t j, size_t b, size_t sub, size_t i, double *a,
                       double *z)
{
    const pg_qmap_col *c = &m->cols[j];
    size_t nb = pg_qmap_sub_bins(m, j, b, sub);
    double k0;
    if (c->integer && bin_values(m, c, b, &k0) <= (double)sub) {
        if (nb == 1) { /* the whole bin */
            *a = c->edge[b];
            *z = c->edge[b + 1];
            return;
        }
        *a = *z = m->lo + (k0 + (double)i) * c->step;
        return;
    }
    double start, width;
    size_t points;
    cuts(m, c, b, nb, &start, &width, &points);
    if (i < points) {
        *a = *z = m->lo;
        return;
    }
    *a = start + width * (double)(i - points);
    *z = i + 1 == nb ? c->edge[b + 1] : start + width * (double)(i + 1 - points);
}

size_t pg_qmap_sub_of(const pg_qmap *m, size_t j, size_t b, size_t sub, double u)
{
    const pg_qmap_col *c = &m->cols[j];
    size_t nb = pg_qmap_sub_bins(m, j, b, sub);
    if (nb == 1) return 0;
    double k0, f;
    if (c->integer && bin_values(m, c, b, &k0) <= (double)sub) {
        f = round((u - m->lo) / c->step) - k0; /* the nearest value */
    } else {
        double start, width;
        size_t points;
        cuts(m, c, b, nb, &start, &width, &points);
        if (points && u < start) return 0;
        f = (double)points + floor((u - start) / width);
    }
    return !(f > 0) ? 0 : f >= (double)nb ? nb - 1 : (size_t)f; /* NaN to 0 */
}

/* The bin of encoded u for the sub-bins: an integer column's by the nearest
 * value's index (a value on a bin's edge belongs to the bin whose values
 * start at it, whatever the float rounding of u), else bin_of. */
static size_t sub_bin_of(const pg_qmap *m, const pg_qmap_col *c, double u)
{
    size_t b = bin_of(c, u);
    if (!c->integer) return b;
    double k = round((u - m->lo) / c->step), last = last_value(m, c);
    k = k < 0 ? 0 : k > last ? last : k;
    if (b + 1 < c->bins && k >= first_value(m, c, c->edge[b + 1])) return b + 1;
    if (b > 0 && k < first_value(m, c, c->edge[b])) return b - 1;
    return b;
}

size_t pg_qmap_sub_len(const pg_qmap *m, size_t sub)
{
    size_t len = 0;
    for (size_t j = 0; m && sub >= 2 && j < m->ncols; j++)
        for (size_t b = 0; b < m->cols[j].bins; b++) {
            size_t nb = pg_qmap_sub_bins(m, j, b, sub);
            len += nb > 1 ? nb + 1 : 0;
        }
    return len;
}

size_t pg_qmap_sub_columns(const pg_qmap *m, size_t sub)
{
    size_t c = 0;
    for (size_t j = 0; m && sub >= 2 && j < m->ncols; j++)
        for (size_t b = 0; b < m->cols[j].bins; b++)
            if (pg_qmap_sub_bins(m, j, b, sub) > 1) {
                c++;
                break;
            }
    return c;
}

int pg_qmap_release_sub(pg_rng *secure, const pg_qmap *m, const float *x, const int32_t *labels,
                        size_t n, size_t stride, int classes, size_t sub, double s2,
                        int replace_one, float *out, double *raw, pg_error *err)
{
    if (!secure || !pg_rng_is_secure(secure))
        return pg_error_set(err, PG_EPRIVACY, "DP noise needs the secure generator");
    if (!m || !out || !(s2 > 0) || !isfinite(s2) || sub < 2 || sub > PG_QMAP_MAX_SUB || (n && !x) ||
        classes < 0 || (classes > 0 && n && !labels))
        return pg_error_set(err, PG_EINVAL,
                            "sub-bins need a map, labelled rows, 2 .. %d sub-bins and noise > 0",
                            PG_QMAP_MAX_SUB);
    for (size_t i = 0; classes > 0 && i < n; i++)
        if (labels[i] < 0 || labels[i] >= classes)
            return pg_error_set(err, PG_EINVAL, "row %zu has label %d outside [0, %d)", i + 1,
                                (int)labels[i], classes);
    size_t K = classes > 0 ? (size_t)classes : 1, len = pg_qmap_sub_len(m, sub);
    /* cells of a class: per released bin its sub-bins; base[j][b] the first */
    size_t cells = 0, tb = pg_qmap_total_bins(m);
    size_t *base = malloc((tb ? tb : 1) * sizeof *base);
    if (!base) return pg_error_set(err, PG_ENOMEM, "cannot allocate the sub-bins");
    for (size_t j = 0, o = 0; j < m->ncols; j++)
        for (size_t b = 0; b < m->cols[j].bins; b++, o++) {
            size_t nb = pg_qmap_sub_bins(m, j, b, sub);
            base[o] = nb > 1 ? cells : (size_t)-1;
            cells += nb > 1 ? nb : 0;
        }
    double *cnt = malloc((cells ? cells : 1) * sizeof *cnt);
    if (!cnt) {
        free(base);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the sub-bins");
    }
    double sigma = pg_qmap_count_sigma(s2, pg_qmap_sub_columns(m, sub), replace_one);
    for (size_t k = 0; k < K; k++) {
        memset(cnt, 0, (cells ? cells : 1) * sizeof *cnt);
        for (size_t i = 0; i < n; i++) {
            if (classes > 0 && (size_t)labels[i] != k) continue;
            const float *row = x + i * stride;
            for (size_t j = 0, o = 0; j < m->ncols; o += m->cols[j].bins, j++) {
                const pg_qmap_col *c = &m->cols[j];
                if (missing(c, row)) continue;
                size_t b = sub_bin_of(m, c, row[c->unit]);
                if (base[o + b] == (size_t)-1) continue;
                cnt[base[o + b] + pg_qmap_sub_of(m, j, b, sub, row[c->unit])] += 1.0;
            }
        }
        for (size_t q = 0; q < cells; q++) cnt[q] += sigma * pg_rng_normal(secure);
        if (raw) memcpy(raw + k * cells, cnt, cells * sizeof *raw);
        /* post-processing: threshold sigma, then each bin's CDF */
        float *w = out + k * len;
        for (size_t j = 0, o = 0; j < m->ncols; j++)
            for (size_t b = 0; b < m->cols[j].bins; b++, o++) {
                if (base[o] == (size_t)-1) continue;
                size_t nb = pg_qmap_sub_bins(m, j, b, sub);
                const double *v = cnt + base[o];
                double tot = 0;
                for (size_t q = 0; q < nb; q++) tot += v[q] - sigma > 0 ? v[q] - sigma : 0;
                double run = 0;
                w[0] = tot > 0 ? 0.0f : -1.0f;
                for (size_t q = 0; q < nb; q++) {
                    run += v[q] - sigma > 0 ? v[q] - sigma : 0;
                    w[q + 1] = tot > 0 ? (float)(q + 1 == nb ? 1.0 : run / tot) : -1.0f;
                }
                w += nb + 1;
            }
    }
    free(cnt);
    free(base);
    return PG_OK;
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
    if (m->sub > 0 && (json_object_set_new(j, "sub", json_integer((json_int_t)m->sub)) ||
                       json_object_set_new(j, "sub_noise", json_real(m->sub_noise)))) {
        json_decref(j);
        return NULL;
    }
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
    const json_t *sub = json_object_get(j, "sub"), *sub_noise = json_object_get(j, "sub_noise");
    if ((sub || sub_noise) &&
        !(json_is_integer(sub) && json_integer_value(sub) >= 2 &&
          json_integer_value(sub) <= PG_QMAP_MAX_SUB && json_is_number(sub_noise) &&
          json_number_value(sub_noise) > 0 && isfinite(json_number_value(sub_noise))))
        return bad(err);
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
    m->sub = sub ? (size_t)json_integer_value(sub) : 0;
    m->sub_noise = sub ? json_number_value(sub_noise) : 0.0;
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
    c->sub = m->sub;
    c->sub_noise = m->sub_noise;
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
