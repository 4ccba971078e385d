/* engine/methods/calib.c - the DP release of per-class means (calib.h). */
#include "engine/methods/calib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/privacy/privacy.h"

int pg_calib_release_means(pg_rng *secure, const pg_dataset *data, int classes, float lo, float hi,
                           double noise_multiplier, float *means, pg_error *err)
{
    if (!secure || !pg_rng_is_secure(secure))
        return pg_error_set(err, PG_EPRIVACY, "DP noise needs the secure generator");
    if (!data || data->d == 0 || classes < 0)
        return pg_error_set(err, PG_EINVAL, "calibration needs a dataset with columns");
    if (!(lo < hi) || !isfinite(lo) || !isfinite(hi))
        return pg_error_set(err, PG_EINVAL, "calibration needs a finite value range lo < hi");
    if (!(noise_multiplier > 0.0) || !isfinite(noise_multiplier))
        return pg_error_set(err, PG_EINVAL, "calibration noise multiplier must be finite and > 0");
    if (classes > 0 && data->n > 0 && !data->labels)
        return pg_error_set(err, PG_EINVAL, "class calibration needs labelled rows");
    size_t K = classes > 0 ? (size_t)classes : 1, d = data->d;
    double mid = 0.5 * ((double)lo + (double)hi), R = sqrt((double)d) * 0.5 * ((double)hi - lo);
    double *sum = calloc(K * d, sizeof *sum), *row = malloc(d * sizeof *row);
    double *count = calloc(K, sizeof *count);
    float *noise = pg_alloc_f32(K * d + K);
    int rc = PG_OK;
    if (!sum || !row || !count || !noise) {
        rc = pg_error_set(err, PG_ENOMEM, "cannot allocate calibration buffers");
        goto out;
    }
    for (size_t i = 0; i < data->n; i++) {
        size_t k = 0;
        if (classes > 0) {
            int32_t l = data->labels[i];
            if (l < 0 || (size_t)l >= K) {
                rc = pg_error_set(err, PG_EINVAL, "row %zu has label %d outside [0, %d)", i + 1,
                                  (int)l, classes);
                goto out;
            }
            k = (size_t)l;
        }
        const float *x = pg_dataset_row(data, i);
        double norm2 = 0.0;
        for (size_t j = 0; j < d; j++) {
            row[j] = (double)x[j] - mid;
            norm2 += row[j] * row[j];
        }
        /* A row outside the declared range would break the sensitivity:
         * scale it back into the ball rather than trust the upload. */
        double scale = norm2 > R * R ? R / sqrt(norm2) : 1.0;
        for (size_t j = 0; j < d; j++) sum[k * d + j] += scale * row[j] / R;
        count[k] += 1.0;
    }
    memset(noise, 0, (K * d + K) * sizeof *noise);
    rc = pg_privacy_gaussian_noise(secure, noise, K * d + K, M_SQRT2 * noise_multiplier, err);
    if (rc) goto out;
    for (size_t k = 0; k < K; k++) {
        double n_k = count[k] + (double)noise[K * d + k];
        if (n_k < 1.0) n_k = 1.0;
        for (size_t j = 0; j < d; j++) {
            double m = mid + R * (sum[k * d + j] + (double)noise[k * d + j]) / n_k;
            means[k * d + j] = (float)(m < lo ? lo : m > hi ? hi : m);
        }
    }
out:
    free(sum);
    free(row);
    free(count);
    pg_free(noise);
    return rc;
}
