#include <math.h>

#include "engine/eval/report.h"

/* JSON has no NaN: an undefined figure is null. */
static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static json_t *vec(const double *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) json_array_append_new(a, num(v[i]));
    return a;
}

static json_t *matrix(const double *v, size_t d)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < d; i++) json_array_append_new(a, vec(v + i * d, d));
    return a;
}

/* synthetic - real, null where either is undefined (NaN propagates). */
static json_t *difference(const double *s, const double *r, size_t d)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < d; i++) {
        json_t *row = json_array();
        for (size_t j = 0; row && j < d; j++)
            json_array_append_new(row, num(s[i * d + j] - r[i * d + j]));
        json_array_append_new(a, row);
    }
    return a;
}

static json_t *quantiles(const double *q)
{
    json_t *o = json_object();
    static const char *keys[PG_EVAL_NQ] = {"q05", "q25", "median", "q75", "q95"};
    for (int i = 0; i < PG_EVAL_NQ; i++) json_object_set_new(o, keys[i], num(q[i]));
    return o;
}

static json_t *columns_json(const pg_eval_report *r, const pg_eval_column *cols)
{
    json_t *a = json_array();
    for (size_t j = 0; j < r->d; j++) {
        const pg_eval_column_stats *c = &r->columns[j];
        json_t *o = json_object();
        json_object_set_new(o, "index", json_integer((json_int_t)j));
        if (cols && cols[j].name) json_object_set_new(o, "name", json_string(cols[j].name));
        if (c->kind == PG_EVAL_CATEGORICAL) {
            json_object_set_new(o, "kind", json_string("categorical"));
            json_object_set_new(o, "tv", num(c->tv));
            json_object_set_new(o, "freq_real", vec(c->freq_real, (size_t)c->categories));
            json_object_set_new(o, "freq_synthetic", vec(c->freq_syn, (size_t)c->categories));
            if (cols && cols[j].category_names) {
                json_t *names = json_array();
                for (int32_t k = 0; names && k < c->categories; k++)
                    json_array_append_new(
                        names,
                        json_string(cols[j].category_names[k] ? cols[j].category_names[k] : ""));
                json_object_set_new(o, "categories", names);
            }
        } else {
            json_object_set_new(o, "kind", json_string("numeric"));
            json_object_set_new(o, "ks", num(c->ks));
            json_object_set_new(o, "w1", num(c->w1));
            json_object_set_new(o, "mean_real", num(c->mean_real));
            json_object_set_new(o, "mean_synthetic", num(c->mean_syn));
            json_object_set_new(o, "std_real", num(c->std_real));
            json_object_set_new(o, "std_synthetic", num(c->std_syn));
            json_object_set_new(o, "missing_real", num(c->missing_real));
            json_object_set_new(o, "missing_synthetic", num(c->missing_syn));
        }
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *summary_of_columns(const pg_eval_report *r)
{
    double ks = 0, w1 = 0, tv = 0, ksmax = 0;
    size_t nn = 0, nc = 0;
    for (size_t j = 0; j < r->d; j++) {
        const pg_eval_column_stats *c = &r->columns[j];
        if (c->kind == PG_EVAL_CATEGORICAL) {
            tv += c->tv;
            nc++;
        } else {
            ks += c->ks;
            w1 += c->w1;
            ksmax = fmax(ksmax, c->ks);
            nn++;
        }
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "mean_ks", nn ? json_real(ks / (double)nn) : json_null(),
                     "max_ks", nn ? json_real(ksmax) : json_null(), "mean_w1",
                     nn ? json_real(w1 / (double)nn) : json_null(), "mean_tv",
                     nc ? json_real(tv / (double)nc) : json_null());
}

int pg_eval_report_json(const pg_eval_report *r, const pg_eval_column *cols, size_t matrix_max_d,
                        json_t **out, pg_error *err)
{
    if (!r || !out) return pg_error_set(err, PG_EINVAL, "no report to serialize");
    json_t *o = json_object();
    if (!o) return pg_error_set(err, PG_ENOMEM, "no memory for the report JSON");
    json_object_set_new(o, "split",
                        json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "n_synthetic", (json_int_t)r->n_syn,
                                  "n_reference", (json_int_t)r->n_ref, "d", (json_int_t)r->d,
                                  "reference_half", (json_int_t)r->h, "matched", (json_int_t)r->m,
                                  "seed", (json_int_t)r->seed));
    if (r->has_marginals) {
        json_t *m = summary_of_columns(r);
        json_object_set_new(m, "columns", columns_json(r, cols));
        json_object_set_new(o, "marginals", m);
    }
    if (r->has_pairwise) {
        json_t *p = json_object();
        json_object_set_new(p, "pearson_mean_abs_diff", num(r->pearson_mad));
        json_object_set_new(p, "pearson_pairs", json_integer((json_int_t)r->pearson_pairs));
        json_object_set_new(p, "cramer_mean_abs_diff", num(r->cramer_mad));
        json_object_set_new(p, "cramer_pairs", json_integer((json_int_t)r->cramer_pairs));
        if (r->d <= matrix_max_d) {
            json_object_set_new(p, "real", matrix(r->assoc_real, r->d));
            json_object_set_new(p, "synthetic", matrix(r->assoc_syn, r->d));
            json_object_set_new(p, "difference", difference(r->assoc_syn, r->assoc_real, r->d));
        } else {
            json_object_set_new(p, "matrices", json_string("omitted"));
        }
        json_object_set_new(o, "pairwise", p);
    }
    if (r->has_distribution) {
        json_t *p = json_pack("{s:I,s:o,s:o}", "directions", (json_int_t)r->sw_directions,
                              "synthetic", num(r->sw2_syn), "noise_floor", num(r->sw2_floor));
        json_t *dist = json_pack("{s:o}", "sliced_w2", p);
        if (!r->has_sinkhorn)
            json_object_set_new(dist, "sinkhorn_divergence", json_null());
        else
            json_object_set_new(dist, "sinkhorn_divergence",
                                json_pack("{s:o,s:I,s:I,s:o,s:o}", "reg", num(r->sinkhorn_reg),
                                          "rows", (json_int_t)r->sinkhorn_rows_x, "reference_rows",
                                          (json_int_t)r->sinkhorn_rows_b, "synthetic",
                                          num(r->sinkhorn_syn), "noise_floor",
                                          num(r->sinkhorn_floor)));
        json_object_set_new(o, "distribution", dist);
    }
    if (r->has_utility)
        json_object_set_new(
            o, "utility",
            json_pack("{s:i,s:o,s:o,s:o,s:i,s:{s:i,s:s},s:{s:i,s:s}}", "classes", r->num_classes,
                      "train_synthetic_accuracy", num(r->acc_syn), "train_real_accuracy",
                      num(r->acc_real), "majority_rate", num(r->majority), "majority_class",
                      r->majority_class, "fit_synthetic", "iters", r->fit_syn.iters, "stop",
                      r->fit_syn.stop ? r->fit_syn.stop : "", "fit_real", "iters",
                      r->fit_real.iters, "stop", r->fit_real.stop ? r->fit_real.stop : ""));
    if (r->has_memorisation)
        json_object_set_new(o, "memorisation",
                            json_pack("{s:o,s:o,s:o,s:o}", "dcr_synthetic", quantiles(r->dcr_syn_q),
                                      "dcr_real", quantiles(r->dcr_real_q), "threshold",
                                      num(r->dcr_threshold), "share_below",
                                      num(r->dcr_share_below)));
    static const char *stages[6] = {"split",        "marginals", "pairwise",
                                    "distribution", "utility",   "memorisation"};
    json_t *secs = json_object();
    for (int s = 0; s < 6; s++) json_object_set_new(secs, stages[s], json_real(r->seconds[s]));
    json_object_set_new(o, "seconds", secs);
    *out = o;
    return PG_OK;
}
