/* engine/methods/calib_copula.c - per-class Gaussian copula release
 * (calib_copula.h). */
#include "engine/methods/calib_copula.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/privacy/privacy.h"

static size_t states(const pg_head *hd)
{
    return hd->kind == PG_HEAD_SOFTMAX_REF ? hd->width + 1 : hd->width;
}

/* The map column whose value unit is u, or (size_t)-1. */
static size_t map_col(const pg_qmap *m, size_t u)
{
    for (size_t j = 0; m && j < m->ncols; j++)
        if (m->cols[j].unit == u) return j;
    return (size_t)-1;
}

size_t pg_copula_dim(const pg_heads *h, const pg_qmap *pooled, size_t *coord)
{
    size_t m = 0;
    for (size_t j = 0; h && j < h->n; j++) {
        const pg_head *hd = &h->h[j];
        if (hd->kind == PG_HEAD_NUMERIC && map_col(pooled, hd->offset) == (size_t)-1) continue;
        if (coord) coord[m] = j;
        m++;
    }
    return m;
}

double pg_copula_clip2(size_t m)
{
    return (double)m + 2.0 * sqrt(2.0 * (double)m);
}

double pg_copula_sensitivity(size_t m, int replace_one)
{
    double d = pg_copula_clip2(m);
    return replace_one ? 2.0 * d : d;
}

int pg_copula_rdp(double s, int replace_one, const double *orders, size_t n, double *rdp,
                  pg_error *err)
{
    if (!(s > 0.0) || !isfinite(s))
        return pg_error_set(err, PG_EINVAL, "copula noise multiplier must be finite and > 0");
    /* Noise s D against a sensitivity of D (add/remove) or 2 D
     * (replace-one): the Gaussian mechanism at multiplier s or s / 2. */
    double eff = replace_one ? 0.5 * s : s;
    for (size_t i = 0; i < n; i++) {
        int rc = pg_rdp_gaussian(eff, orders[i], &rdp[i], err);
        if (rc) return rc;
    }
    return PG_OK;
}

/* The class's state probabilities of a softmax head from its targets, as
 * calib_table's fit normalizes them (a reference state takes 1 - sum). */
static void head_probs(const pg_head *hd, const float *targets_k, double *p)
{
    size_t S = states(hd);
    int ref = hd->kind == PG_HEAD_SOFTMAX_REF;
    double used = 0.0, t = 0.0;
    for (size_t u = 0; u < hd->width; u++) used += p[u + ref] = targets_k[hd->offset + u];
    if (ref) p[0] = 1.0 - used;
    for (size_t i = 0; i < S; i++) t += p[i] = p[i] > 0.0 ? p[i] : 0.0;
    for (size_t i = 0; i < S; i++) p[i] = t > 0.0 ? p[i] / t : 1.0 / (double)S;
}

void pg_copula_head_order(const pg_head *hd, const float *targets_k, size_t *order, double *cum)
{
    size_t S = states(hd);
    double *p = cum; /* probabilities first, by state */
    head_probs(hd, targets_k, p);
    for (size_t i = 0; i < S; i++) order[i] = i;
    /* Insertion sort, descending, stable on ties (S is small). */
    for (size_t i = 1; i < S; i++) {
        size_t v = order[i], j = i;
        while (j > 0 && p[order[j - 1]] < p[v]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = v;
    }
    double *q = malloc(S * sizeof *q);
    if (!q) { /* order by index then; cum stays the probabilities' sums */
        for (size_t i = 0; i < S; i++) order[i] = i;
        for (size_t i = 1; i < S; i++) cum[i] += cum[i - 1];
        cum[S - 1] = 1.0;
        return;
    }
    for (size_t i = 0; i < S; i++) q[i] = p[order[i]];
    double run = 0.0;
    for (size_t i = 0; i < S; i++) cum[i] = run += q[i];
    cum[S - 1] = 1.0;
    free(q);
}

static double probit(double u)
{
    return u < 0.5 ? -pg_privacy_ndtri_upper(u) : pg_privacy_ndtri_upper(1.0 - u);
}

/* The level of value x (y: x with its integer jitter) under the class's
 * released sub-bins, the inverse of calib_table's draw, so that the scores
 * place a row where the served rows will (a point sub-bin, e.g. zero debts,
 * spreads its rows over its mass by v); p_bin when x's bin has none. The
 * class's block holds the bins' CDFs, then each bin's within-bin CDF
 * (pg_calib_table_cdf_len's layout). */
static double sub_level(const pg_qmap *m, size_t qj, const float *class_cdf_k, const double *cdf,
                        double x, double y, double v, double p_bin)
{
    const pg_qmap_col *pc = &m->cols[qj];
    size_t lo = 0, hi = pc->bins;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (pc->edge[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    size_t nb = pg_qmap_sub_bins(m, qj, lo, m->sub);
    if (nb < 2) return p_bin;
    size_t at = pg_qmap_total_bins(m) + m->ncols;
    for (size_t j = 0; j <= qj; j++)
        for (size_t b = 0; b < (j < qj ? m->cols[j].bins : lo); b++) {
            size_t n2 = pg_qmap_sub_bins(m, j, b, m->sub);
            at += n2 > 1 ? n2 + 1 : 0;
        }
    const float *sw = class_cdf_k + at;
    if (!(sw[0] >= 0.0f)) return p_bin; /* nothing released survived */
    size_t a = pg_qmap_sub_of(m, qj, lo, m->sub, x);
    double y0, y1;
    pg_qmap_sub_range(m, qj, lo, m->sub, a, &y0, &y1);
    double g = y1 > y0 ? (y - y0) / (y1 - y0) : v;
    g = g < 0.0 ? 0.0 : g > 1.0 ? 1.0 : g;
    double f = (double)sw[a] + g * ((double)sw[a + 1] - (double)sw[a]);
    return cdf[lo] + f * (cdf[lo + 1] - cdf[lo]);
}

int pg_copula_scores(const pg_heads *h, const pg_qmap *pooled, const float *class_cdf_k,
                     const float *targets_k, const float *row, pg_rng *rng, double *z,
                     pg_error *err)
{
    size_t wmax = 1;
    for (size_t j = 0; j < h->n; j++) wmax = states(&h->h[j]) > wmax ? states(&h->h[j]) : wmax;
    size_t *order = malloc(wmax * sizeof *order);
    double *cum = malloc(wmax * sizeof *cum);
    size_t maxbins = 1;
    for (size_t j = 0; pooled && j < pooled->ncols; j++)
        maxbins = pooled->cols[j].bins + 1 > maxbins ? pooled->cols[j].bins + 1 : maxbins;
    double *cdf = malloc(maxbins * sizeof *cdf);
    if (!order || !cum || !cdf) {
        free(order);
        free(cum);
        free(cdf);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate copula buffers");
    }
    size_t m = 0;
    double norm2 = 0.0;
    for (size_t j = 0; j < h->n; j++) {
        const pg_head *hd = &h->h[j];
        const float *u = row + hd->offset;
        double v = pg_rng_uniform(rng), p;
        if (hd->kind == PG_HEAD_NUMERIC) {
            size_t qj = map_col(pooled, hd->offset);
            if (qj == (size_t)-1) continue;
            const pg_qmap_col *pc = &pooled->cols[qj];
            bool missing = pc->missing < h->d && row[pc->missing] > 0.5f;
            const float *f = class_cdf_k;
            for (size_t i = 0; i < qj; i++) f += pooled->cols[i].bins + 1;
            for (size_t b = 0; b <= pc->bins; b++) cdf[b] = (double)f[b];
            pg_qmap_col kc = *pc;
            kc.cdf = cdf;
            double y = (double)u[0];
            if (pc->integer) y += (v - 0.5) * pc->step;
            /* NaN or missing: no place in F_k, an independent level. */
            p = missing || !(y == y) ? v : pg_qmap_cdf(&kc, y);
            if (!missing && y == y && pooled->sub)
                p = sub_level(pooled, qj, class_cdf_k, cdf, (double)u[0], y, v, p);
        } else {
            size_t S = states(hd), st = 0;
            /* The state this row's block is in (a valid one-hot: its unit
             * above one half; a reference state when none is). */
            int ref = hd->kind == PG_HEAD_SOFTMAX_REF;
            size_t best = 0;
            for (size_t i = 1; i < hd->width; i++)
                if (u[i] > u[best]) best = i;
            st = ref ? (u[best] > 0.5f ? best + 1 : 0) : best;
            pg_copula_head_order(hd, targets_k, order, cum);
            size_t at = 0;
            while (at + 1 < S && order[at] != st) at++;
            double lo = at ? cum[at - 1] : 0.0;
            p = lo + v * (cum[at] - lo);
        }
        p = p < 1e-9 ? 1e-9 : p > 1.0 - 1e-9 ? 1.0 - 1e-9 : p;
        z[m] = probit(p);
        norm2 += z[m] * z[m];
        m++;
    }
    /* The clip the sensitivity rests on: |z|^2 <= B^2. */
    double b2 = pg_copula_clip2(m);
    if (norm2 > b2) {
        double f = sqrt(b2 / norm2);
        for (size_t i = 0; i < m; i++) z[i] *= f;
    }
    free(order);
    free(cum);
    free(cdf);
    return PG_OK;
}

int pg_copula_stats(const pg_heads *h, const pg_qmap *pooled, const float *class_cdf,
                    const float *targets, const float *x, const int32_t *labels, size_t n,
                    int classes, pg_rng *rng, double *out, pg_error *err)
{
    if (!h || !targets || (pooled && !class_cdf) || (n > 0 && !x) ||
        (classes > 0 && n > 0 && !labels) || classes < 0)
        return pg_error_set(err, PG_EINVAL, "the copula needs heads, targets and rows");
    size_t K = classes > 0 ? (size_t)classes : 1, d = h->d, m = pg_copula_dim(h, pooled, NULL);
    /* A class's CDF block: the bins' CDFs, then the sub-bins' within-bin
     * CDFs when the map has them (pg_calib_table_cdf_len's layout); the
     * scores read only the first part, but class k's block starts at k Q. */
    size_t P = m * (m + 1) / 2, Q = pooled ? pg_qmap_total_bins(pooled) + pooled->ncols +
                                                 pg_qmap_sub_len(pooled, pooled->sub)
                                           : 0;
    double *acc = calloc(K * P + 1, sizeof *acc), *z = malloc((m + 1) * sizeof *z);
    if (!acc || !z) {
        free(acc);
        free(z);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate copula buffers");
    }
    int rc = PG_OK;
    for (size_t i = 0; i < n && rc == PG_OK; i++) {
        size_t k = 0;
        if (classes > 0) {
            if (labels[i] < 0 || labels[i] >= classes) {
                rc = pg_error_set(err, PG_EINVAL, "row %zu has label %d outside [0, %d)", i + 1,
                                  (int)labels[i], classes);
                break;
            }
            k = (size_t)labels[i];
        }
        rc = pg_copula_scores(h, pooled, class_cdf ? class_cdf + k * Q : NULL, targets + k * 2 * d,
                              x + i * d, rng, z, err);
        double *s = acc + k * P;
        for (size_t a = 0, t = 0; rc == PG_OK && a < m; a++)
            for (size_t b = a; b < m; b++) s[t++] += z[a] * z[b];
    }
    if (rc == PG_OK) memcpy(out, acc, K * P * sizeof *out);
    free(acc);
    free(z);
    return rc;
}

/* Cyclic Jacobi on a symmetric m x m A (destroyed): eigenvalues into w,
 * eigenvectors into the columns of V. */
static void jacobi(double *A, size_t m, double *w, double *V)
{
    for (size_t i = 0; i < m * m; i++) V[i] = 0.0;
    for (size_t i = 0; i < m; i++) V[i * m + i] = 1.0;
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0.0, diag = 0.0;
        for (size_t p = 0; p < m; p++) {
            diag += A[p * m + p] * A[p * m + p];
            for (size_t q = p + 1; q < m; q++) off += A[p * m + q] * A[p * m + q];
        }
        if (off <= 1e-30 * (diag > 1.0 ? diag : 1.0)) break;
        for (size_t p = 0; p < m; p++)
            for (size_t q = p + 1; q < m; q++) {
                double apq = A[p * m + q];
                if (fabs(apq) < 1e-300) continue;
                double th = (A[q * m + q] - A[p * m + p]) / (2.0 * apq);
                double t = (th >= 0 ? 1.0 : -1.0) / (fabs(th) + sqrt(th * th + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (size_t k = 0; k < m; k++) { /* columns p, q */
                    double akp = A[k * m + p], akq = A[k * m + q];
                    A[k * m + p] = c * akp - s * akq;
                    A[k * m + q] = s * akp + c * akq;
                }
                for (size_t k = 0; k < m; k++) { /* rows p, q */
                    double apk = A[p * m + k], aqk = A[q * m + k];
                    A[p * m + k] = c * apk - s * aqk;
                    A[q * m + k] = s * apk + c * aqk;
                }
                for (size_t k = 0; k < m; k++) {
                    double vkp = V[k * m + p], vkq = V[k * m + q];
                    V[k * m + p] = c * vkp - s * vkq;
                    V[k * m + q] = s * vkp + c * vkq;
                }
            }
    }
    for (size_t i = 0; i < m; i++) w[i] = A[i * m + i];
}

void pg_copula_project(const double *sums, double count, size_t m, float *R)
{
    double nk = count > 1.0 ? count : 1.0;
    double *A = malloc(3 * m * m * sizeof *A + m * sizeof *A);
    if (!A) { /* identity: the independent marginals */
        for (size_t i = 0; i < m * m; i++) R[i] = i % (m + 1) == 0 ? 1.0f : 0.0f;
        return;
    }
    double *V = A + m * m, *B = V + m * m, *w = B + m * m;
    /* The diagonal sums, floored at half the count: a class's scores have
     * variance about 1, and the floor keeps a noisy one from blowing its
     * correlations up. */
    for (size_t a = 0, t = 0; a < m; a++)
        for (size_t b = a; b < m; b++, t++)
            if (a == b) w[a] = sums[t] > 0.5 * nk ? sums[t] : 0.5 * nk;
    for (size_t a = 0, t = 0; a < m; a++) {
        A[a * m + a] = 1.0;
        t++;
        for (size_t b = a + 1; b < m; b++, t++) {
            double r = sums[t] / sqrt(w[a] * w[b]);
            r = r > 1.0 ? 1.0 : r < -1.0 ? -1.0 : r == r ? r : 0.0;
            A[a * m + b] = A[b * m + a] = r;
        }
    }
    jacobi(A, m, w, V);
    for (size_t i = 0; i < m; i++) w[i] = w[i] < PG_COPULA_EIG_FLOOR ? PG_COPULA_EIG_FLOOR : w[i];
    for (size_t a = 0; a < m; a++)
        for (size_t b = 0; b < m; b++) {
            double s = 0.0;
            for (size_t k = 0; k < m; k++) s += V[a * m + k] * w[k] * V[b * m + k];
            B[a * m + b] = s;
        }
    for (size_t a = 0; a < m; a++)
        for (size_t b = 0; b < m; b++)
            R[a * m + b] =
                a == b ? 1.0f : (float)(B[a * m + b] / sqrt(B[a * m + a] * B[b * m + b]));
    free(A);
}

int pg_copula_release(pg_rng *secure, const pg_heads *h, const pg_qmap *pooled,
                      const float *class_cdf, const float *targets, const double *counts,
                      const float *x, const int32_t *labels, size_t n, int classes, double s,
                      float *R, double *raw, pg_error *err)
{
    if (!secure || !pg_rng_is_secure(secure))
        return pg_error_set(err, PG_EPRIVACY, "DP noise needs the secure generator");
    if (!(s > 0.0) || !isfinite(s))
        return pg_error_set(err, PG_EINVAL, "copula noise multiplier must be finite and > 0");
    if (!counts) return pg_error_set(err, PG_EINVAL, "the copula needs the released counts");
    size_t K = classes > 0 ? (size_t)classes : 1, m = pg_copula_dim(h, pooled, NULL);
    size_t P = m * (m + 1) / 2;
    double *v = malloc((K * P + 1) * sizeof *v);
    float *noise = pg_alloc_f32(K * P + 1);
    float *out = malloc((K * m * m + 1) * sizeof *out);
    int rc = !v || !noise || !out ? pg_error_set(err, PG_ENOMEM, "cannot allocate copula buffers")
                                  : PG_OK;
    if (rc == PG_OK)
        rc = pg_copula_stats(h, pooled, class_cdf, targets, x, labels, n, classes, secure, v, err);
    if (rc == PG_OK && P > 0) {
        memset(noise, 0, K * P * sizeof *noise);
        rc = pg_privacy_gaussian_noise(secure, noise, K * P, s * pg_copula_sensitivity(m, 0), err);
    }
    if (rc == PG_OK) {
        for (size_t i = 0; i < K * P; i++) v[i] += (double)noise[i];
        if (raw) memcpy(raw, v, K * P * sizeof *raw);
        for (size_t k = 0; k < K; k++) pg_copula_project(v + k * P, counts[k], m, out + k * m * m);
        memcpy(R, out, K * m * m * sizeof *R);
    }
    free(v);
    free(out);
    pg_free(noise);
    return rc;
}

int pg_copula_cholesky(const float *R, size_t K, size_t m, double *L, pg_error *err)
{
    for (size_t k = 0; k < K; k++) {
        const float *r = R + k * m * m;
        double *l = L + k * m * m;
        for (size_t i = 0; i < m * m; i++) l[i] = 0.0;
        for (size_t j = 0; j < m; j++) {
            double s = r[j * m + j];
            for (size_t q = 0; q < j; q++) s -= l[j * m + q] * l[j * m + q];
            if (!(s >= 1e-6))
                return pg_error_set(err, PG_EFORMAT, "a copula matrix is not positive definite");
            l[j * m + j] = sqrt(s);
            for (size_t i = j + 1; i < m; i++) {
                double t = r[i * m + j];
                for (size_t q = 0; q < j; q++) t -= l[i * m + q] * l[j * m + q];
                l[i * m + j] = t / l[j * m + j];
            }
        }
    }
    return PG_OK;
}

int pg_copula_check(const float *R, size_t K, size_t m, pg_error *err)
{
    if (!R && K * m > 0) return pg_error_set(err, PG_EFORMAT, "the copula matrices are missing");
    for (size_t k = 0; k < K; k++)
        for (size_t a = 0; a < m; a++)
            for (size_t b = 0; b < m; b++) {
                float v = R[k * m * m + a * m + b], t = R[k * m * m + b * m + a];
                if (!isfinite(v) || fabsf(v - t) > 1e-4f || fabsf(v) > 1.0f + 1e-4f ||
                    (a == b && fabsf(v - 1.0f) > 1e-4f))
                    return pg_error_set(err, PG_EFORMAT, "a copula matrix is malformed");
            }
    double *L = malloc((K * m * m + 1) * sizeof *L);
    if (!L) return pg_error_set(err, PG_ENOMEM, "cannot check the copula matrices");
    int rc = pg_copula_cholesky(R, K, m, L, err);
    free(L);
    return rc;
}
