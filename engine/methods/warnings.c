/* warnings - the loss-trend and range rules of warnings.h. */
#include "engine/methods/warnings.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine/core/alloc.h"
#include "engine/data/qmap.h"
#include "engine/methods/calib_table.h"
#include "engine/data/table.h"
#include "engine/methods/calib_ldp.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/trainer.h"

/* Successive recorded losses are not independent (a DP loss wanders for tens
 * of steps: lag-1 autocorrelation 0.9 is common), so an ordinary regression
 * t over the points claims far more certainty than it has: on a stationary
 * AR(1) series (phi 0.9) it passed t > 3 with a 5 % rise in 13-26 % of
 * histories. Batch means fold each run of neighbouring points into one
 * mean; runs much longer than the correlation are nearly independent, and
 * the residual spread of the batch means measures the long-run variance
 * (wandering and white DP noise alike) without modelling either. */
int pg_trend_last_quarter(const long *steps, const double *loss, size_t n, pg_trend *out,
                          pg_error *err)
{
    *out = (pg_trend){0};
    if (n < PG_TREND_MIN_POINTS || steps[n - 1] <= steps[0])
        return pg_error_set(err, PG_EINVAL, "too short a history for a trend");
    double from = (double)steps[0] + 0.75 * (double)(steps[n - 1] - steps[0]);
    double sa = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if ((double)steps[i] >= from && isfinite(loss[i])) sa += fabs(loss[i]), m++;
    if (m < PG_TREND_MIN_POINTS)
        return pg_error_set(err, PG_EINVAL, "too few points in the last quarter for a trend");
    /* Batch k holds the points j (in order, 0-based among the m kept) with
     * k m / B <= j < (k + 1) m / B: near-equal runs, none empty as m >= B. */
    double bx[PG_TREND_BATCHES] = {0}, by[PG_TREND_BATCHES] = {0};
    size_t bn[PG_TREND_BATCHES] = {0}, j = 0;
    long lo = -1, hi = -1;
    for (size_t i = 0; i < n; i++)
        if ((double)steps[i] >= from && isfinite(loss[i])) {
            size_t k = j * PG_TREND_BATCHES / m;
            bx[k] += (double)steps[i], by[k] += loss[i], bn[k]++, j++;
            if (lo < 0) lo = steps[i];
            hi = steps[i];
        }
    double mx = 0, my = 0;
    for (size_t k = 0; k < PG_TREND_BATCHES; k++) {
        bx[k] /= (double)bn[k], by[k] /= (double)bn[k];
        mx += bx[k] / PG_TREND_BATCHES, my += by[k] / PG_TREND_BATCHES;
    }
    double sxx = 0, sxy = 0;
    for (size_t k = 0; k < PG_TREND_BATCHES; k++)
        sxx += (bx[k] - mx) * (bx[k] - mx), sxy += (bx[k] - mx) * (by[k] - my);
    if (!(sxx > 0)) return pg_error_set(err, PG_EINVAL, "the last quarter spans a single step");
    double b = sxy / sxx, a = my - b * mx, rss = 0;
    for (size_t k = 0; k < PG_TREND_BATCHES; k++) {
        double r = by[k] - (a + b * bx[k]);
        rss += r * r;
    }
    double se = sqrt(rss / (double)(PG_TREND_BATCHES - 2) / sxx);
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

static void add(json_t *out, int *added, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add(json_t *out, int *added, const char *fmt, ...)
{
    char buf[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(out, json_string(buf));
    (*added)++;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One categorical or boolean column: most frequent state, TV to uniform. */
static void categorical_rule(const pg_table *t, size_t c, const float *x, size_t n, json_t *out,
                             int *added)
{
    const pg_table_col *col = &t->cols[c];
    size_t k = (col->type == PG_COL_CATEGORICAL ? col->ncat : 2) + (col->nullable ? 1 : 0);
    double *f = calloc(k, sizeof *f);
    if (!f) return;
    for (size_t i = 0; i < n; i++) {
        pg_table_value v;
        pg_table_decode_value(t, c, x + i * t->width, 1, &v);
        f[v.missing ? k - 1 : v.cat] += 1.0 / (double)n;
    }
    double top = 0, tv = 0;
    for (size_t j = 0; j < k; j++) {
        top = fmax(top, f[j]);
        tv += 0.5 * fabs(f[j] - 1.0 / (double)k);
    }
    free(f);
    if (top >= PG_COLLAPSE_CONST)
        add(out, added,
            "Column '%s' looks collapsed: %.1f%% of a test draw of %d rows take one value; the "
            "model may have stopped learning it (check it against what you expect).",
            col->name, 100.0 * top, (int)n);
    else if (k >= 3 && tv <= PG_COLLAPSE_UNIFORM)
        add(out, added,
            "Column '%s' looks almost uniform over its %zu values in a test draw of %d rows "
            "(total variation %.3f from uniform): the model may not have learned it.",
            col->name, k, (int)n, tv);
}

/* One numeric column: the largest pile on one value, and at the midpoint. */
static void numeric_rule(const pg_table *t, size_t c, const float *x, size_t n, json_t *out,
                         int *added)
{
    const pg_table_col *col = &t->cols[c];
    double *v = malloc(n * sizeof *v), span = col->max - col->min, mid = col->min + span / 2;
    if (!v) return;
    size_t m = 0, atmid = 0;
    for (size_t i = 0; i < n; i++) {
        pg_table_value val;
        pg_table_decode_value(t, c, x + i * t->width, 1, &val);
        if (val.missing) continue;
        v[m++] = val.num;
        atmid += fabs(val.num - mid) <= 0.01 * span;
    }
    if (m >= 20) {
        qsort(v, m, sizeof *v, cmp_double);
        /* The most values inside one window of width 1e-3 of the span. A
         * window, not a chain of small gaps: 1000 draws spread uniformly over
         * one wide bin are 2.5 apart on a 20000 span, so a chain swallowed the
         * whole bin and a model that matched the data (attrition's
         * MonthlyIncome, half its rows in one of 8 bins) was called collapsed. */
        size_t best = 1;
        double at = v[0];
        for (size_t i = 0, j = 0; i < m; i++) {
            while (j < m && v[j] - v[i] <= 1e-3 * span) j++;
            if (j - i > best) best = j - i, at = v[i];
        }
        /* An integer column with few values holds real atoms: half of
         * attrition's YearsSinceLastPromotion (21 values) is one value in the
         * data itself. Such a column is judged as a categorical one is. */
        double pile = col->type == PG_COL_INTEGER && span + 1 < PG_COLLAPSE_FEW_INTS
                          ? PG_COLLAPSE_CONST
                          : PG_COLLAPSE_PILE;
        if ((double)atmid >= pile * (double)m)
            add(out, added,
                "Column '%s' looks collapsed: %.0f%% of its values in a test draw of %d rows sit "
                "at the midpoint of its range (%g); the model may not have learned it.",
                col->name, 100.0 * (double)atmid / (double)m, (int)n, mid);
        else if ((double)best >= pile * (double)m)
            add(out, added,
                "Column '%s' looks collapsed: %.0f%% of its values in a test draw of %d rows pile "
                "on one value (%g); the model may not have learned it.",
                col->name, 100.0 * (double)best / (double)m, (int)n, at);
    }
    free(v);
}

int pg_collapse_warnings(const pg_snapshot *snap, const pg_table *t, json_t *out, pg_error *err)
{
    size_t w = t->width;
    /* Wide tables draw fewer rows: at most PG_COLLAPSE_MAX_UNITS floats. */
    size_t n = w * PG_COLLAPSE_DRAW <= PG_COLLAPSE_MAX_UNITS ? PG_COLLAPSE_DRAW
                                                             : PG_COLLAPSE_MAX_UNITS / w;
    if (n < 100) return 0; /* too wide for a meaningful draw */
    if (pg_snapshot_dim(snap) != w)
        return -pg_error_set(err, PG_EINVAL, "the model's rows are not the table's width");
    float *x = pg_alloc_f32(n * w);
    int32_t *lab = pg_calloc(n, sizeof *lab);
    if (!x || !lab) {
        pg_free(x), pg_free(lab);
        return -pg_error_set(err, PG_ENOMEM, "cannot allocate the collapse draw");
    }
    const double *cw = pg_snapshot_class_weights(snap);
    int K = pg_snapshot_num_classes(snap);
    int rc = K > 0 ? pg_snapshot_sample_labelled(snap, n, PG_COLLAPSE_SEED, x, lab, err)
                   : pg_snapshot_sample(snap, n, PG_COLLAPSE_SEED, -1, x, err);
    int added = 0;
    for (size_t c = 0; rc == PG_OK && c < t->ncols; c++) {
        if (c == t->label) continue;
        int ty = t->cols[c].type;
        if (ty == PG_COL_CATEGORICAL || ty == PG_COL_BOOLEAN)
            categorical_rule(t, c, x, n, out, &added);
        else
            numeric_rule(t, c, x, n, out, &added);
    }
    for (int k = 0; rc == PG_OK && cw && k < K; k++) {
        size_t cnt = 0;
        for (size_t i = 0; i < n; i++) cnt += lab[i] == k;
        double p = cw[k], se = sqrt((double)n * p * (1 - p));
        if (se > 0 && fabs((double)cnt - (double)n * p) > 6 * se) {
            const char *name = t->label != PG_TABLE_NONE ? t->cols[t->label].name : "label";
            add(out, &added,
                "The sampled rate of class %d of '%s' is %.3f, against %.3f in the DP count the "
                "model released: its samples do not follow the count.",
                k, name, (double)cnt / (double)n, p);
        }
    }
    pg_free(x), pg_free(lab);
    return rc ? -rc : added;
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
        if (desc->table && pg_snapshot_dim(snap) == desc->table->width) {
            int c = pg_collapse_warnings(snap, desc->table, out, err);
            if (c < 0) return c;
            added += c;
        }
    }
    return added;
}

void pg_warn_ldp_signal(struct pg_trainer *t, const struct pg_calib_ldp *c)
{
    if (!t || !c) return;
    if (!pg_calib_ldp_pooled(c)) return;
    pg_calib_ldp_signal sg;
    pg_calib_ldp_signal_get(c, &sg);
    pg_trainer_warn(t, PG_WARN_NO_CLASS_SIGNAL,
                    "The privatized rows show no class difference above their noise (largest "
                    "|z| %.3g against a Bonferroni threshold %.3g over %zu tests): every class "
                    "is sampled from the same distribution, so a classifier trained on these "
                    "samples cannot beat the majority rate. A larger epsilon per row or more "
                    "rows would help.",
                    sg.max_z, sg.threshold, sg.tests);
}

void pg_warn_class_counts(struct pg_trainer *t, const struct pg_table *table, const double *noisy,
                          int classes, double sd)
{
    if (!t || !noisy || classes < 2 || !(sd > 0)) return;
    const pg_table_col *lab =
        table && table->label < table->ncols ? &table->cols[table->label] : NULL;
    char names[400] = "";
    size_t k = 0;
    int n = 0;
    for (int c = 0; c < classes; c++) {
        if (!(noisy[c] < PG_WARN_NOISE_SDS * sd)) continue;
        char one[96];
        if (lab && lab->type == PG_COL_CATEGORICAL && (size_t)c < lab->ncat)
            snprintf(one, sizeof one, "\"%.40s\" (%.3g)", lab->cats[c], noisy[c]);
        else
            snprintf(one, sizeof one, "%d (%.3g)", c, noisy[c]);
        int w = snprintf(names + k, sizeof names - k, "%s%s", n ? ", " : "", one);
        if (w < 0 || (size_t)w >= sizeof names - k) break; /* the sentence stays bounded */
        k += (size_t)w;
        n++;
    }
    if (!n) return;
    pg_trainer_warn(t, PG_WARN_CLASS_IN_NOISE,
                    "The DP count of the label puts %s %s below %g times its noise (standard "
                    "deviation %.3g rows): %s share of the samples is set mostly by the noise, "
                    "and %s too few rows for the generator to learn %s. More rows of %s or "
                    "less noise on the count (labels.count_noise, at more epsilon) would help.",
                    n > 1 ? "classes" : "class", names, PG_WARN_NOISE_SDS, sd,
                    n > 1 ? "their" : "its", n > 1 ? "they have" : "it has", n > 1 ? "them" : "it",
                    n > 1 ? "those classes" : "that class");
}

void pg_warn_qmap_empty(struct pg_trainer *t, const struct pg_qmap *m, const struct pg_table *table)
{
    if (!t || !m) return;
    char names[400] = "";
    size_t k = 0;
    int n = 0;
    for (size_t j = 0; j < m->ncols; j++) {
        const pg_qmap_col *c = &m->cols[j];
        if (c->bins < 2 || !c->cdf) continue;
        bool flat = true;
        for (size_t b = 0; b < c->bins && flat; b++)
            flat = fabs(c->cdf[b + 1] - c->cdf[b] - 1.0 / (double)c->bins) < 1e-12;
        if (!flat) continue;
        const char *name = NULL;
        for (size_t i = 0; table && i < table->ncols && !name; i++)
            if (table->cols[i].width && c->unit >= table->cols[i].offset &&
                c->unit < table->cols[i].offset + table->cols[i].width)
                name = table->cols[i].name;
        char one[64];
        if (name)
            snprintf(one, sizeof one, "\"%.40s\"", name);
        else
            snprintf(one, sizeof one, "at unit %zu", c->unit);
        int w = snprintf(names + k, sizeof names - k, "%s%s", n ? ", " : "", one);
        if (w < 0 || (size_t)w >= sizeof names - k) break; /* the sentence stays bounded */
        k += (size_t)w;
        n++;
    }
    if (!n) return;
    pg_trainer_warn(t, PG_WARN_QMAP_EMPTY,
                    "The DP histogram of the quantile map kept nothing above its noise for %s %s, "
                    "so %s map is uniform over the range: %s samples spread evenly between the "
                    "declared min and max instead of following the data. More rows, fewer "
                    "encoding.quantile_bins or a smaller encoding.quantile_noise (at more "
                    "epsilon) would help.",
                    n > 1 ? "columns" : "column", names, n > 1 ? "their" : "its",
                    n > 1 ? "their" : "its");
}

/* The name of the column holding encoded unit u (NULL when none). */
static const char *unit_column(const struct pg_table *table, size_t u)
{
    for (size_t i = 0; table && i < table->ncols; i++)
        if (table->cols[i].width && u >= table->cols[i].offset &&
            u < table->cols[i].offset + table->cols[i].width)
            return table->cols[i].name;
    return NULL;
}

void pg_warn_class_qmap_empty(struct pg_trainer *t, const struct pg_qmap *pooled, int classes,
                              const float *class_cdf, const struct pg_table *table)
{
    if (!t || !pooled || !class_cdf || classes < 2) return;
    size_t K = classes > 0 ? (size_t)classes : 1, Q = pg_calib_table_cdf_len(pooled);
    const pg_table_col *lab =
        table && table->label < table->ncols ? &table->cols[table->label] : NULL;
    char names[400] = "";
    size_t at = 0;
    int n = 0;
    for (size_t k = 0; k < K; k++) {
        const float *f = class_cdf + k * Q;
        for (size_t j = 0; j < pooled->ncols; j++) {
            size_t nb = pooled->cols[j].bins;
            bool flat = nb >= 2;
            for (size_t b = 0; b < nb && flat; b++)
                flat = fabs((double)f[b + 1] - f[b] - 1.0 / (double)nb) < 1e-6;
            f += nb + 1;
            if (!flat) continue;
            const char *name = unit_column(table, pooled->cols[j].unit);
            char cls[56], col[56], one[128];
            if (lab && lab->type == PG_COL_CATEGORICAL && k < lab->ncat)
                snprintf(cls, sizeof cls, "\"%.40s\"", lab->cats[k]);
            else
                snprintf(cls, sizeof cls, "%zu", k);
            if (name)
                snprintf(col, sizeof col, "\"%.40s\"", name);
            else
                snprintf(col, sizeof col, "at unit %zu", pooled->cols[j].unit);
            snprintf(one, sizeof one, "%s in class %s", col, cls);
            int w = snprintf(names + at, sizeof names - at, "%s%s", n ? ", " : "", one);
            if (w < 0 || (size_t)w >= sizeof names - at) break; /* the sentence stays bounded */
            at += (size_t)w;
            n++;
        }
    }
    if (!n) return;
    pg_trainer_warn(t, PG_WARN_CLASS_QMAP_EMPTY,
                    "The per-class DP histogram of the numbers kept nothing above its noise for "
                    "%s, so %s served values spread evenly between the declared min and max "
                    "instead of following the data. More rows of the class, fewer "
                    "encoding.quantile_bins or a smaller encoding.quantile_noise (at more "
                    "epsilon) would help.",
                    names, n > 1 ? "their" : "its");
}
