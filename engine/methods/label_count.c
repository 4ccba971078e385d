/* label_count - the DP class count of label_count.h. */
#include "engine/methods/label_count.h"

#include <math.h>

#include "engine/privacy/privacy.h"

int pg_label_count_rdp(double s, const double *orders, size_t n, double *rdp, pg_error *err)
{
    for (size_t i = 0; i < n; i++) {
        int rc = pg_rdp_gaussian(s, orders[i], &rdp[i], err);
        if (rc) return rc;
    }
    return PG_OK;
}

int pg_label_count_release(pg_rng *secure, const int32_t *labels, size_t n, int classes, double s,
                           double *noisy, pg_error *err)
{
    if (!secure || !pg_rng_is_secure(secure))
        return pg_error_set(err, PG_EPRIVACY, "DP noise needs the secure generator");
    if (classes <= 0 || !labels || !(s > 0) || !isfinite(s))
        return pg_error_set(err, PG_EINVAL, "a label count needs labels, classes and noise > 0");
    for (int k = 0; k < classes; k++) noisy[k] = 0;
    for (size_t i = 0; i < n; i++) {
        if (labels[i] < 0 || labels[i] >= classes)
            return pg_error_set(err, PG_EINVAL, "label %d is outside %d classes", (int)labels[i],
                                classes);
        noisy[labels[i]] += 1;
    }
    for (int k = 0; k < classes; k++) noisy[k] += s * pg_rng_normal(secure);
    return PG_OK;
}

void pg_label_count_weights(const double *noisy, int classes, double *w)
{
    double sum = 0;
    for (int k = 0; k < classes; k++) sum += (w[k] = fmax(isfinite(noisy[k]) ? noisy[k] : 1, 1));
    for (int k = 0; k < classes; k++) w[k] /= sum;
}
