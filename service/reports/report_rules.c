#include "service/reports/report_rules.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int is_public(int model)
{
    return model == PG_PRIV_PUBLIC; /* anything else, known or not, is private */
}

int pg_report_decide(int scope, int action, int against_model)
{
    int admin = scope == PG_SCOPE_ADMIN, reader = admin || scope == PG_SCOPE_READ;
    int known = action >= PG_REPORT_CREATE && action <= PG_REPORT_DELETE;
    if (!is_public(against_model)) {
        /* Creating names a dataset whose model the caller can already read,
         * so a refusal is plain; past that, the report's existence is itself
         * what a non-admin must not learn. */
        if (admin && known) return PG_REPORT_ALLOW;
        return action == PG_REPORT_CREATE && reader ? PG_REPORT_FORBIDDEN : PG_REPORT_HIDDEN;
    }
    if (!reader || !known) return PG_REPORT_FORBIDDEN;
    if (action == PG_REPORT_DELETE && !admin) return PG_REPORT_FORBIDDEN;
    return PG_REPORT_ALLOW;
}

void pg_report_marks_for(int job_model, int against_model, pg_report_marks *out)
{
    memset(out, 0, sizeof *out);
    if (!is_public(against_model)) {
        out->is_private = 0;
        out->audience = "data owner";
        out->figure_mark = 1;
        out->quote_epsilon = 0;
        out->note = "not differentially private: a function of the rows of a private dataset, "
                    "for the data owner only; no epsilon applies to it";
        return;
    }
    out->is_private = 1;
    out->audience = "tenant";
    out->figure_mark = 0;
    if (job_model == PG_PRIV_LOCAL || job_model == PG_PRIV_CENTRAL) {
        out->quote_epsilon = 1;
        out->note = "post-processing of the job's model and of public rows: the job's guarantee "
                    "covers it";
    } else {
        out->quote_epsilon = 0;
        out->note = "computed from public data only";
    }
}

int pg_report_marks_json(const pg_report_marks *m, double job_epsilon, json_t *report,
                         pg_error *err)
{
    if (!json_is_object(report))
        return pg_error_set(err, PG_EINVAL, "a report's marks go into a JSON object");
    json_object_del(report, "epsilon");
    int bad = json_object_set_new(report, "private", json_boolean(m->is_private)) ||
              json_object_set_new(report, "audience", json_string(m->audience)) ||
              json_object_set_new(report, "privacy_note", json_string(m->note));
    if (!bad && m->quote_epsilon && isfinite(job_epsilon) && job_epsilon > 0.0)
        bad = json_object_set_new(report, "epsilon", json_real(job_epsilon));
    return bad ? pg_error_set(err, PG_ENOMEM, "out of memory marking a report") : PG_OK;
}

static void add(pg_report_errors *errs, const char *field, const char *fmt, ...)
{
    if (errs->n >= PG_REPORT_MAX_ERRORS) return;
    pg_report_field_error *e = &errs->e[errs->n++];
    snprintf(e->field, sizeof e->field, "%s", field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
}

int pg_report_request_parse(const json_t *body, pg_report_request *out, pg_report_errors *errs)
{
    memset(out, 0, sizeof *out);
    memset(errs, 0, sizeof *errs);
    out->utility = 1;
    if (!json_is_object(body)) {
        add(errs, "", "the body must be a JSON object {against, n, seed}");
        return PG_EINVAL;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v)
    {
        if (strcmp(key, "against") && strcmp(key, "n") && strcmp(key, "seed") &&
            strcmp(key, "utility"))
            add(errs, key, "unknown field; a report request has against, n, seed and utility");
    }
    v = json_object_get(body, "against");
    const char *id = json_string_value(v);
    if (!v)
        add(errs, "against", "required: the id of the dataset to compare with");
    else if (!id || !id[0] || strlen(id) >= PG_ID_MAX || strchr(id, '/'))
        add(errs, "against", "must be a dataset id (a non-empty string of at most %d characters)",
            PG_ID_MAX - 1);
    else
        snprintf(out->against, sizeof out->against, "%s", id);
    v = json_object_get(body, "n");
    if (v) {
        json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1;
        if (n < 1 || n > PG_REPORT_MAX_N)
            add(errs, "n", "must be an integer in [1, %d]", PG_REPORT_MAX_N);
        else
            out->n = (size_t)n, out->has_n = 1;
    }
    v = json_object_get(body, "seed");
    if (v) {
        json_int_t s = json_is_integer(v) ? json_integer_value(v) : -1;
        if (s < 0 || (uint64_t)s > PG_REPORT_MAX_SEED)
            add(errs, "seed", "must be an integer in [0, 2^53 - 1]");
        else
            out->seed = (uint64_t)s, out->has_seed = 1;
    }
    v = json_object_get(body, "utility");
    if (v && !json_is_boolean(v))
        add(errs, "utility", "must be true or false");
    else if (v)
        out->utility = json_is_true(v);
    return errs->n ? PG_EINVAL : PG_OK;
}

static void shape_str(const pg_datasets_spec *s, char *buf, size_t cap)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < s->ndim && i < 3 && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? "," : "", (long long)s->shape[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

int pg_report_request_check(pg_report_request *req, const pg_datasets_spec *job_ds,
                            const pg_datasets_spec *against, int64_t against_rows,
                            pg_report_errors *errs)
{
    memset(errs, 0, sizeof *errs);
    size_t d = job_ds->d ? job_ds->d : 1;
    size_t n_cap = PG_REPORT_MAX_CELLS / d;
    if (n_cap > PG_REPORT_MAX_N) n_cap = PG_REPORT_MAX_N;
    if (!against) {
        add(errs, "against", "no such dataset");
    } else {
        int same = against->ndim == job_ds->ndim;
        for (int i = 0; same && i < job_ds->ndim && i < 3; i++)
            same = against->shape[i] == job_ds->shape[i];
        if (!same) {
            char a[64], b[64];
            shape_str(against, a, sizeof a);
            shape_str(job_ds, b, sizeof b);
            add(errs, "against", "dataset has shape %s but the job's dataset has shape %s", a, b);
        } else if (against->num_classes && job_ds->num_classes &&
                   against->num_classes != job_ds->num_classes) {
            add(errs, "against", "dataset declares %lld classes but the job's dataset %lld",
                (long long)against->num_classes, (long long)job_ds->num_classes);
        }
        if (against_rows < 2)
            add(errs, "against", "dataset has %lld rows; a report needs at least 2",
                (long long)against_rows);
        else if ((uint64_t)against_rows > PG_REPORT_MAX_CELLS / d)
            add(errs, "against",
                "dataset has %lld rows of %zu values, more than the %zu values a report reads",
                (long long)against_rows, d, (size_t)PG_REPORT_MAX_CELLS);
    }
    if (!n_cap)
        add(errs, "n", "rows of %zu values are too wide for a report (at most %zu values)", d,
            (size_t)PG_REPORT_MAX_CELLS);
    else if (req->has_n && req->n > n_cap)
        add(errs, "n", "at most %zu rows of %zu values fit the report's limit of %zu values", n_cap,
            d, (size_t)PG_REPORT_MAX_CELLS);
    if (!req->has_n) req->n = n_cap < PG_REPORT_DEFAULT_N ? n_cap : PG_REPORT_DEFAULT_N;
    return errs->n ? PG_EINVAL : PG_OK;
}
