#include "engine/eval/marginal.h"

#include <math.h>
#include <string.h>

#include "engine/core/sort.h"

/* Both statistics walk the merged order one distinct value at a time: after
 * value v, i and j count the elements <= v on each side, so ties across the
 * two samples move both CDFs before they are compared. */
double pg_eval_ks_sorted(const float *a, size_t n, const float *b, size_t m)
{
    size_t i = 0, j = 0;
    double best = 0.0;
    while (i < n || j < m) {
        float v = (j >= m || (i < n && a[i] <= b[j])) ? a[i] : b[j];
        while (i < n && a[i] <= v) i++;
        while (j < m && b[j] <= v) j++;
        /* The same float64 expression scipy evaluates, so ties give the same bits. */
        double diff = fabs((double)i / (double)n - (double)j / (double)m);
        if (diff > best) best = diff;
    }
    return best;
}

double pg_eval_w1_sorted(const float *a, size_t n, const float *b, size_t m)
{
    size_t i = 0, j = 0;
    double sum = 0.0;
    while (i < n || j < m) {
        float v = (j >= m || (i < n && a[i] <= b[j])) ? a[i] : b[j];
        while (i < n && a[i] <= v) i++;
        while (j < m && b[j] <= v) j++;
        if (i == n && j == m) break;
        float next = (j >= m || (i < n && a[i] <= b[j])) ? a[i] : b[j];
        sum += fabs((double)i / (double)n - (double)j / (double)m) * ((double)next - (double)v);
    }
    return sum;
}

static int gather(const float *x, size_t n, size_t sx, float *out, const char *what, pg_error *err)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i * sx];
        if (!isfinite(v))
            return pg_error_set(err, PG_EINVAL, "%s value %zu is not finite", what, i);
        out[i] = v;
    }
    return PG_OK;
}

int pg_eval_ks_w1(const float *x, size_t n, size_t sx, const float *y, size_t m, size_t sy,
                  float *scratch, double *ks, double *w1, pg_error *err)
{
    if (!x || !y || !scratch || n == 0 || m == 0)
        return pg_error_set(err, PG_EINVAL, "KS and W1 need two non-empty columns");
    float *a = scratch, *b = scratch + n, *tmp = scratch + n + m;
    int rc = gather(x, n, sx, a, "synthetic", err);
    if (rc == PG_OK) rc = gather(y, m, sy, b, "reference", err);
    if (rc) return rc;
    pg_sort_f32(a, n, tmp);
    pg_sort_f32(b, m, tmp);
    if (ks) *ks = pg_eval_ks_sorted(a, n, b, m);
    if (w1) *w1 = pg_eval_w1_sorted(a, n, b, m);
    return PG_OK;
}

int pg_eval_moments(const float *x, size_t n, size_t sx, double *mean, double *std, pg_error *err)
{
    if (!x || n == 0) return pg_error_set(err, PG_EINVAL, "moments need a non-empty column");
    double s = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i * sx])) return pg_error_set(err, PG_EINVAL, "value %zu is not finite", i);
        s += x[i * sx];
    }
    double mu = s / (double)n, ss = 0.0;
    /* Two passes: the shifted sum of squares does not cancel catastrophically. */
    for (size_t i = 0; i < n; i++) {
        double dv = (double)x[i * sx] - mu;
        ss += dv * dv;
    }
    if (mean) *mean = mu;
    if (std) *std = sqrt(ss / (double)n);
    return PG_OK;
}

int pg_eval_frequencies(const float *x, size_t n, size_t sx, int32_t k, double *freq, pg_error *err)
{
    if (!x || !freq || n == 0) return pg_error_set(err, PG_EINVAL, "frequencies need a column");
    if (k < 1 || k > PG_EVAL_MAX_CATEGORIES)
        return pg_error_set(err, PG_EINVAL, "a categorical column needs 1..%d categories",
                            PG_EVAL_MAX_CATEGORIES);
    for (size_t i = 0; i < n; i++) {
        float v = x[i * sx];
        if (!(v >= 0.0f && v < (float)k) || v != floorf(v))
            return pg_error_set(err, PG_EINVAL, "value %zu (%g) is not a category code in 0..%d", i,
                                (double)v, (int)k - 1);
    }
    memset(freq, 0, (size_t)k * sizeof *freq);
    for (size_t i = 0; i < n; i++) freq[(size_t)x[i * sx]] += 1.0;
    for (int32_t c = 0; c < k; c++) freq[c] /= (double)n;
    return PG_OK;
}

double pg_eval_tv(const double *p, const double *q, int32_t k)
{
    double s = 0.0;
    for (int32_t c = 0; c < k; c++) s += fabs(p[c] - q[c]);
    return 0.5 * s;
}
