/* heads - per-block generator output heads (contract in heads.h). */
#include "engine/methods/heads.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int pg_heads_from_table(const pg_table *t, float tau, pg_heads **out, pg_error *err)
{
    *out = NULL;
    if (!t || !(tau > 0.0f) || !isfinite(tau))
        return pg_error_set(err, PG_EINVAL, "output heads need a table and a temperature > 0");
    pg_heads *h = calloc(1, sizeof *h);
    /* At most two heads per column (value and missing indicator). */
    pg_head *arr = calloc(2 * t->ncols + 1, sizeof *arr);
    if (!h || !arr) {
        free(h);
        free(arr);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate output heads");
    }
    size_t n = 0;
    for (size_t c = 0; c < t->ncols; c++) {
        const pg_table_col *col = &t->cols[c];
        if (col->width == 0) continue; /* the label column */
        switch (col->type) {
        case PG_COL_CONTINUOUS:
        case PG_COL_INTEGER:
            arr[n++] = (pg_head){PG_HEAD_NUMERIC, col->offset, 1};
            if (col->nullable) arr[n++] = (pg_head){PG_HEAD_SOFTMAX_REF, col->offset + 1, 1};
            break;
        case PG_COL_CATEGORICAL:
            /* values and indicator: one (k + 1)-state one-hot when nullable */
            arr[n++] = (pg_head){PG_HEAD_SOFTMAX, col->offset, col->width};
            break;
        default: /* boolean: (true) or (true, missing) against "false" */
            arr[n++] = (pg_head){PG_HEAD_SOFTMAX_REF, col->offset, col->width};
            break;
        }
    }
    h->d = t->width;
    h->n = n;
    h->h = arr;
    h->lo = (float)t->lo;
    h->hi = (float)t->hi;
    h->tau = tau;
    h->gain = 1.0f;
    *out = h;
    return PG_OK;
}

int pg_heads_copy(const pg_heads *src, pg_heads **out, pg_error *err)
{
    *out = NULL;
    if (!src) return PG_OK;
    pg_heads *h = malloc(sizeof *h);
    pg_head *arr = malloc((src->n + 1) * sizeof *arr);
    if (!h || !arr) {
        free(h);
        free(arr);
        return pg_error_set(err, PG_ENOMEM, "cannot copy output heads");
    }
    *h = *src;
    memcpy(arr, src->h, src->n * sizeof *arr);
    h->h = arr;
    *out = h;
    return PG_OK;
}

void pg_heads_free(pg_heads *h)
{
    if (!h) return;
    free(h->h);
    free(h);
}

static double gumbel(pg_rng *rng)
{
    return rng ? -log(-log(pg_rng_uniform(rng))) : 0.0;
}

/* Tempered (Gumbel-)softmax over the units x[0..w), with an extra state of
 * logit 0 and no unit when ref. */
static void softmax(float *x, size_t w, int ref, float gain, float tau, pg_rng *rng)
{
    double v[64], *buf = w + 1 <= 64 ? v : malloc((w + 1) * sizeof *buf);
    if (!buf) { /* cannot happen in practice; degrade to a uniform output */
        for (size_t k = 0; k < w; k++) x[k] = 1.0f / (float)(w + (size_t)ref);
        return;
    }
    double mx = -INFINITY, r0 = 0.0;
    if (ref) {
        r0 = gumbel(rng) / tau;
        mx = r0;
    }
    for (size_t k = 0; k < w; k++) {
        buf[k] = ((double)gain * x[k] + gumbel(rng)) / tau;
        if (buf[k] > mx) mx = buf[k];
    }
    double s = ref ? exp(r0 - mx) : 0.0;
    for (size_t k = 0; k < w; k++) s += (buf[k] = exp(buf[k] - mx));
    for (size_t k = 0; k < w; k++) x[k] = (float)(buf[k] / s);
    if (buf != v) free(buf);
}

void pg_heads_forward(const pg_heads *h, pg_rng *rng, float *x, size_t stride, size_t rows)
{
    double c = 0.5 * ((double)h->lo + h->hi), half = 0.5 * ((double)h->hi - h->lo);
    for (size_t i = 0; i < rows; i++) {
        float *row = x + i * stride;
        for (size_t j = 0; j < h->n; j++) {
            const pg_head *hd = &h->h[j];
            float *u = row + hd->offset;
            if (hd->kind == PG_HEAD_NUMERIC && h->numeric == PG_HEADS_NUMERIC_CLIP)
                u[0] = (float)fmin(fmax(c + half * (double)u[0], (double)h->lo), (double)h->hi);
            else if (hd->kind == PG_HEAD_NUMERIC)
                u[0] = (float)(c + half * tanh((double)u[0]));
            else
                softmax(u, hd->width, hd->kind == PG_HEAD_SOFTMAX_REF, h->gain, h->tau, rng);
        }
    }
}

void pg_heads_backward(const pg_heads *h, const float *y, size_t ystride, float *grad, size_t rows)
{
    double c = 0.5 * ((double)h->lo + h->hi), half = 0.5 * ((double)h->hi - h->lo);
    size_t d = h->d;
    for (size_t i = 0; i < rows; i++) {
        const float *yr = y + i * ystride;
        float *g = grad + i * d;
        for (size_t j = 0; j < h->n; j++) {
            const pg_head *hd = &h->h[j];
            const float *u = yr + hd->offset;
            float *gu = g + hd->offset;
            if (hd->kind == PG_HEAD_NUMERIC && h->numeric == PG_HEADS_NUMERIC_CLIP) {
                /* Straight through, except where the value sits on a bound
                 * and descent (-grad) would push it further out: there the
                 * clamp holds and the gradient is 0. */
                if ((u[0] <= h->lo && gu[0] > 0.0f) || (u[0] >= h->hi && gu[0] < 0.0f))
                    gu[0] = 0.0f;
                gu[0] = (float)((double)gu[0] * half);
                continue;
            }
            if (hd->kind == PG_HEAD_NUMERIC) {
                double t = ((double)u[0] - c) / half;
                gu[0] = (float)((double)gu[0] * half * (1.0 - t * t));
                continue;
            }
            /* The reference state has gradient 0 and so adds nothing to
             * the inner product. */
            double dot = 0.0;
            for (size_t k = 0; k < hd->width; k++) dot += (double)u[k] * gu[k];
            for (size_t k = 0; k < hd->width; k++)
                gu[k] = (float)((double)u[k] * ((double)gu[k] - dot) * h->gain / h->tau);
        }
    }
}
