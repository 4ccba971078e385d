/* warnings - the loss-trend and range rules of warnings.h. */
#include "engine/methods/warnings.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine/core/alloc.h"

int pg_trend_last_quarter(const long *steps, const double *loss, size_t n, pg_trend *out,
                          pg_error *err)
{
    *out = (pg_trend){0};
    if (n < PG_TREND_MIN_POINTS || steps[n - 1] <= steps[0])
        return pg_error_set(err, PG_EINVAL, "too short a history for a trend");
    double from = (double)steps[0] + 0.75 * (double)(steps[n - 1] - steps[0]);
    double sx = 0, sy = 0, sa = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if ((double)steps[i] >= from && isfinite(loss[i])) {
            sx += (double)steps[i], sy += loss[i], sa += fabs(loss[i]);
            m++;
        }
    if (m < PG_TREND_MIN_POINTS)
        return pg_error_set(err, PG_EINVAL, "too few points in the last quarter for a trend");
    double mx = sx / (double)m, my = sy / (double)m, sxx = 0, sxy = 0;
    long lo = -1, hi = -1;
    for (size_t i = 0; i < n; i++)
        if ((double)steps[i] >= from && isfinite(loss[i])) {
            double dx = (double)steps[i] - mx;
            sxx += dx * dx, sxy += dx * (loss[i] - my);
            if (lo < 0) lo = steps[i];
            hi = steps[i];
        }
    if (!(sxx > 0)) return pg_error_set(err, PG_EINVAL, "the last quarter spans a single step");
    double b = sxy / sxx, a = my - b * mx, rss = 0;
    for (size_t i = 0; i < n; i++)
        if ((double)steps[i] >= from && isfinite(loss[i])) {
            double r = loss[i] - (a + b * (double)steps[i]);
            rss += r * r;
        }
    double se = sqrt(rss / (double)(m - 2) / sxx);
    out->n = m;
    out->slope = b;
    out->t = se > 0 ? b / se : (b > 0 ? INFINITY : b < 0 ? -INFINITY : 0);
    out->rise = b * (double)(hi - lo);
    out->mean_abs = sa / (double)m;
    return PG_OK;
}

bool pg_trend_rising(const pg_trend *t)
{
    return t->n >= PG_TREND_MIN_POINTS && t->t > PG_TREND_T && t->rise > PG_TREND_REL * t->mean_abs;
}

int pg_range_outside(const pg_snapshot *snap, const pg_data_desc *desc, double *frac, bool *skipped,
                     pg_error *err)
{
    *frac = 0;
    size_t d = pg_snapshot_dim(snap);
    *skipped = d == 0 || d > PG_RANGE_MAX_D || !isfinite(desc->lo) || !isfinite(desc->hi) ||
               !(desc->lo < desc->hi) || fabs(desc->lo) > 1e29f || fabs(desc->hi) > 1e29f;
    if (*skipped) return PG_OK;
    float *x = pg_alloc_f32(PG_RANGE_DRAW * d);
    if (!x) return pg_error_set(err, PG_ENOMEM, "cannot allocate the range draw");
    int rc = pg_snapshot_sample(snap, PG_RANGE_DRAW, PG_RANGE_SEED, -1, x, err);
    if (rc == PG_OK) {
        size_t out = 0;
        for (size_t i = 0; i < PG_RANGE_DRAW; i++) {
            bool o = false;
            for (size_t k = 0; k < d && !o; k++) {
                float v = x[i * d + k];
                o = !(v >= desc->lo && v <= desc->hi); /* NaN counts as outside */
            }
            out += o;
        }
        *frac = (double)out / PG_RANGE_DRAW;
    }
    pg_free(x);
    return rc;
}

int pg_warnings_append(const long *steps, const double *loss, size_t n, const pg_snapshot *snap,
                       const pg_data_desc *desc, json_t *out, pg_error *err)
{
    int added = 0;
    char buf[256];
    pg_trend t;
    if (n >= PG_TREND_MIN_POINTS && pg_trend_last_quarter(steps, loss, n, &t, NULL) == PG_OK &&
        pg_trend_rising(&t)) {
        snprintf(buf, sizeof buf,
                 "The training loss rose over the last quarter of the steps (by %.3g, from a "
                 "mean of %.3g): the model may be diverging; try a smaller learning rate.",
                 t.rise, t.mean_abs);
        json_array_append_new(out, json_string(buf));
        added++;
    }
    if (snap) {
        double frac;
        bool skipped;
        int rc = pg_range_outside(snap, desc, &frac, &skipped, err);
        if (rc) return -rc;
        if (!skipped && frac > 0.5) {
            snprintf(buf, sizeof buf,
                     "%.0f%% of a test draw of %d samples lie outside the dataset's declared "
                     "range [%g, %g]: the model has not learned the data's scale.",
                     100.0 * frac, PG_RANGE_DRAW, (double)desc->lo, (double)desc->hi);
            json_array_append_new(out, json_string(buf));
            added++;
        }
    }
    return added;
}
