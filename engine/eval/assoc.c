#include "engine/eval/assoc.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/eval/marginal.h"

/* Rows per centred block: bounds the double copy at 256 d values. */
#define PEARSON_BLOCK 256

int pg_eval_pearson(const float *x, size_t n, size_t d, size_t ld, double *corr, pg_error *err)
{
    if (!x || !corr || n == 0 || d == 0 || ld < d)
        return pg_error_set(err, PG_EINVAL, "correlations need n >= 1 rows of d >= 1 columns");
    size_t dd;
    if (pg_size_mul(d, d, &dd)) return pg_error_set(err, PG_ENOMEM, "d x d overflows");
    double *mean = pg_calloc(d, sizeof(double)), *cov = pg_calloc(dd, sizeof(double)),
           *blk = pg_calloc(PEARSON_BLOCK * d, sizeof(double));
    int rc = PG_OK;
    if (!mean || !cov || !blk) {
        rc = pg_error_set(err, PG_ENOMEM, "no memory for a %zu x %zu correlation matrix", d, d);
        goto out;
    }
    for (size_t i = 0; i < n && rc == PG_OK; i++)
        for (size_t j = 0; j < d; j++) {
            float v = x[i * ld + j];
            if (!isfinite(v)) {
                rc = pg_error_set(err, PG_EINVAL, "row %zu column %zu is not finite", i + 1, j + 1);
                break;
            }
            mean[j] += v;
        }
    if (rc) goto out;
    for (size_t j = 0; j < d; j++) mean[j] /= (double)n;
    for (size_t r0 = 0; r0 < n; r0 += PEARSON_BLOCK) {
        size_t nb = n - r0 < PEARSON_BLOCK ? n - r0 : PEARSON_BLOCK;
        for (size_t i = 0; i < nb; i++)
            for (size_t j = 0; j < d; j++) blk[i * d + j] = (double)x[(r0 + i) * ld + j] - mean[j];
        /* Upper triangle of cov += blk^T blk. */
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, (int)d, (int)nb, 1.0, blk, (int)d, 1.0,
                    cov, (int)d);
    }
    for (size_t i = 0; i < d; i++)
        for (size_t j = i; j < d; j++) {
            double den = sqrt(cov[i * d + i]) * sqrt(cov[j * d + j]);
            double r = den > 0.0 ? cov[i * d + j] / den : NAN;
            if (r > 1.0) r = 1.0;
            if (r < -1.0) r = -1.0;
            if (i == j && den > 0.0) r = 1.0;
            corr[i * d + j] = corr[j * d + i] = r;
        }
out:
    pg_free(mean);
    pg_free(cov);
    pg_free(blk);
    return rc;
}

int pg_eval_cramer_v(const float *a, size_t sa, int32_t ka, const float *b, size_t sb, int32_t kb,
                     size_t n, double *v, pg_error *err)
{
    if (!a || !b || !v || n == 0) return pg_error_set(err, PG_EINVAL, "Cramér's V needs n >= 1");
    if (ka < 1 || kb < 1 || ka > PG_EVAL_MAX_CATEGORIES || kb > PG_EVAL_MAX_CATEGORIES ||
        (size_t)ka * (size_t)kb > PG_EVAL_MAX_TABLE)
        return pg_error_set(err, PG_EINVAL,
                            "a %d x %d contingency table is outside the supported size", (int)ka,
                            (int)kb);
    for (size_t i = 0; i < n; i++) {
        float x = a[i * sa], y = b[i * sb];
        if (!(x >= 0.0f && x < (float)ka) || x != floorf(x) || !(y >= 0.0f && y < (float)kb) ||
            y != floorf(y))
            return pg_error_set(err, PG_EINVAL, "row %zu holds a value that is not a category code",
                                i + 1);
    }
    size_t cells = (size_t)ka * (size_t)kb;
    double *tab = pg_calloc(cells + (size_t)ka + (size_t)kb, sizeof(double));
    if (!tab) return pg_error_set(err, PG_ENOMEM, "no memory for a contingency table");
    double *row = tab + cells, *col = row + ka;
    for (size_t i = 0; i < n; i++) {
        size_t u = (size_t)a[i * sa], w = (size_t)b[i * sb];
        tab[u * (size_t)kb + w] += 1.0;
        row[u] += 1.0;
        col[w] += 1.0;
    }
    int r = 0, c = 0;
    for (int32_t u = 0; u < ka; u++) r += row[u] > 0;
    for (int32_t w = 0; w < kb; w++) c += col[w] > 0;
    double chi2 = 0.0, nn = (double)n;
    for (int32_t u = 0; u < ka; u++) {
        if (row[u] == 0) continue;
        for (int32_t w = 0; w < kb; w++) {
            if (col[w] == 0) continue;
            double e = row[u] * col[w] / nn, o = tab[(size_t)u * (size_t)kb + (size_t)w];
            chi2 += (o - e) * (o - e) / e;
        }
    }
    int q = (r < c ? r : c) - 1;
    *v = q >= 1 ? sqrt(chi2 / (nn * q)) : NAN;
    pg_free(tab);
    return PG_OK;
}
