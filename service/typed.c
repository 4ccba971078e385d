#include "service/typed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/fmt.h"

static int fail(char field[PG_FIELD_MAX], const char *f, pg_error *err, int code, const char *msg)
{
    snprintf(field, PG_FIELD_MAX, "%s", f);
    return pg_error_set(err, code, "%s", msg);
}

/* {columns, label, range} of an object (a body or a stored meta). */
static json_t *schema_of(const json_t *o)
{
    json_t *s = json_object();
    static const char *const keys[] = {"columns", "label", "range"};
    for (size_t i = 0; s && i < 3; i++) {
        json_t *v = json_object_get(o, keys[i]);
        if (v && json_object_set(s, keys[i], v)) {
            json_decref(s);
            return NULL;
        }
    }
    return s;
}

int pg_typed_schema(const json_t *body, pg_datasets_spec *s, pg_table **t, char field[PG_FIELD_MAX],
                    pg_error *err)
{
    *t = NULL;
    field[0] = '\0';
    json_t *schema = schema_of(body);
    if (!schema) return pg_error_set(err, PG_ENOMEM, "out of memory");
    pg_error e = {0};
    int rc = pg_table_from_json(schema, t, &e);
    json_decref(schema);
    if (rc) {
        /* The engine's messages start with the part they are about. */
        const char *f =
            !strncmp(e.msg, "schema: label", 13) || !strncmp(e.msg, "schema: 'label'", 15) ? "label"
            : !strncmp(e.msg, "schema: 'range'", 15)                                       ? "range"
                                                     : "columns";
        /* PG_ERANGE: over the schema size limit (the API's 413). */
        return fail(field, f, err, rc == PG_ENOMEM || rc == PG_ERANGE ? rc : PG_EINVAL, e.msg);
    }
    s->typed = 1;
    s->ndim = 1;
    s->shape[0] = (int64_t)(*t)->width;
    s->shape[1] = s->shape[2] = 0;
    s->d = (*t)->width;
    s->lo = (*t)->lo;
    s->hi = (*t)->hi;
    s->num_classes = (int64_t)pg_table_num_classes(*t);
    return PG_OK;
}

int pg_typed_declaration(const pg_table *t, const json_t *decl, pg_datasets_spec *s,
                         char field[PG_FIELD_MAX], pg_error *err)
{
    char f[PG_LDP_FIELD_MAX] = "";
    double eps = 0, delta = 0;
    int rc = pg_ldp_check_declaration(t, decl, &eps, &delta, f, err);
    if (rc) {
        snprintf(field, PG_FIELD_MAX, "%s", f[0] ? f : "privacy");
        return rc;
    }
    s->model = PG_PRIV_LOCAL;
    s->per_column = 1;
    s->epsilon = eps;
    s->delta = delta;
    return PG_OK;
}

int pg_typed_meta(const pg_datasets_spec *s, const pg_table *t, const json_t *decl, char **out,
                  pg_error *err)
{
    char *base = NULL;
    int rc = pg_datasets_spec_to_json(s, &base, err);
    if (rc) return rc;
    json_t *o = json_loads(base, 0, NULL), *map = pg_table_to_json(t);
    free(base);
    int bad = !o || !map || json_object_set(o, "columns", json_object_get(map, "columns"));
    json_t *label = json_object_get(map, "label");
    if (!bad && label) bad = json_object_set(o, "label", label);
    /* The encoding (width, range, blocks) the dataset view shows, stored
     * once here so that no read parses the schema again. */
    json_t *enc =
        bad ? NULL
            : json_pack("{s:O,s:O,s:O}", "width", json_object_get(map, "width"), "range",
                        json_object_get(map, "range"), "blocks", json_object_get(map, "blocks"));
    if (!bad) bad = !enc || json_object_set_new(o, "encoding", enc);
    if (!bad && s->model == PG_PRIV_LOCAL) {
        json_t *priv = json_deep_copy(decl);
        bad = !priv;
        if (priv) {
            json_object_del(priv, "rows"); /* a property of one upload, not the dataset */
            bad = json_object_set_new(o, "privacy", priv);
        }
    }
    rc = bad ? pg_error_set(err, PG_ENOMEM, "out of memory encoding a dataset")
             : pg_datasets_meta_dump(o, out, err);
    json_decref(o);
    json_decref(map);
    return rc;
}

int pg_typed_table_from_meta(const char *meta, pg_table **t, pg_error *err)
{
    *t = NULL;
    json_t *o;
    int rc = pg_datasets_meta_load(meta, &o, err);
    if (rc) return rc;
    if (json_object_get(o, "columns")) {
        json_t *schema = schema_of(o);
        rc = schema ? pg_table_from_json(schema, t, err)
                    : pg_error_set(err, PG_ENOMEM, "out of memory");
        json_decref(schema);
        if (rc && rc != PG_ENOMEM)
            rc = pg_error_set(err, PG_EFORMAT, "stored dataset schema is corrupt: %s", err->msg);
    }
    json_decref(o);
    return rc;
}

void pg_typed_ldp_free(pg_ldp_plan *plan)
{
    if (!plan) return;
    pg_ldp_plan_free(plan);
    free(plan);
}

static double num_or(const json_t *o, const char *k, double dflt)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

int pg_typed_ldp_from_meta(const char *meta, const pg_table *t, pg_ldp_plan **out, pg_error *err)
{
    *out = NULL;
    json_t *o;
    int rc = pg_datasets_meta_load(meta, &o, err);
    if (rc) return rc;
    json_t *priv = json_object_get(o, "privacy");
    const char *mech = json_string_value(json_object_get(priv, "mechanism"));
    if (!t || !mech || strcmp(mech, "per_column")) {
        json_decref(o);
        return PG_OK;
    }
    /* Stored only after pg_ldp_check_declaration accepted it; checked again
     * so a corrupt row cannot describe a channel the rows did not go through. */
    rc = pg_ldp_check_declaration(t, priv, NULL, NULL, NULL, err);
    pg_ldp_plan *p = rc ? NULL : calloc(1, sizeof *p);
    if (!rc && p) p->cols = calloc(t->ncols, sizeof *p->cols);
    if (!rc && (!p || !p->cols)) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    if (rc) {
        pg_typed_ldp_free(p);
        json_decref(o);
        return rc == PG_ENOMEM
                   ? rc
                   : pg_error_set(err, PG_EFORMAT, "stored dataset declaration is corrupt: %s",
                                  err->msg);
    }
    json_t *cols = json_object_get(priv, "columns");
    p->ncols = t->ncols;
    p->epsilon = num_or(priv, "epsilon", 0.0);
    p->delta = num_or(priv, "delta", 0.0);
    p->numeric = PG_LDP_LAPLACE;
    for (size_t c = 0; c < t->ncols; c++) {
        const json_t *j = json_array_get(cols, c);
        pg_ldp_column *pc = &p->cols[c];
        const char *m = json_string_value(json_object_get(j, "mechanism"));
        pc->mechanism = !strcmp(m, "randomized_response") ? PG_LDP_RR
                        : !strcmp(m, "gaussian")          ? PG_LDP_GAUSSIAN
                                                          : PG_LDP_LAPLACE;
        pc->epsilon = num_or(j, "epsilon", 0.0);
        if (pc->mechanism == PG_LDP_RR) {
            pc->k = (size_t)json_integer_value(json_object_get(j, "k"));
            pc->keep = num_or(j, "keep_probability", 0.0);
            continue;
        }
        if (pc->mechanism == PG_LDP_GAUSSIAN) p->numeric = PG_LDP_GAUSSIAN;
        pc->delta = num_or(j, "delta", 0.0);
        pc->units = (size_t)json_integer_value(json_object_get(j, "units"));
        pc->sensitivity = num_or(j, "sensitivity", 0.0);
        pc->noise_scale = num_or(j, "noise_scale", 0.0);
        const json_t *mj = json_object_get(j, "missing");
        if (mj) {
            pc->missing_epsilon = num_or(mj, "epsilon", 0.0);
            pc->missing_keep = num_or(mj, "keep_probability", 0.0);
        }
    }
    json_decref(o);
    *out = p;
    return PG_OK;
}

/* Equal up to a relative 1e-12 (both went through JSON with 17 digits). */
static int same(double a, double b)
{
    return a == b || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

/* Copies src into dst (cap bytes), cut at the end when too long. */
static void copy_cut(char *dst, size_t cap, const char *src)
{
    size_t k = strlen(src);
    if (k >= cap) k = cap - 1;
    memcpy(dst, src, k);
    dst[k] = '\0';
}

static void add_diff(pg_datasets_diff *d, int *n, const char *field, const char *msg)
{
    if (*n >= PG_DATASETS_DIFF_MAX) return;
    copy_cut(d[*n].field, sizeof d[*n].field, field);
    copy_cut(d[*n].message, sizeof d[*n].message, msg);
    (*n)++;
}

/* Compares two declaration objects key by key (numbers with `same`, strings
 * and the rest exactly); keys of either side count. */
static void cmp_obj(const json_t *got, const json_t *want, const char *path, pg_datasets_diff *d,
                    int *n)
{
    const char *k;
    json_t *v;
    char f[PG_FIELD_MAX * 2], msg[400];
    json_object_foreach((json_t *)want, k, v)
    {
        json_t *g = json_object_get(got, k);
        snprintf(f, sizeof f, "%s.%s", path, k);
        if (json_is_object(v) && json_is_object(g)) {
            cmp_obj(g, v, f, d, n);
            continue;
        }
        if (json_is_array(v) && json_is_array(g) && json_array_size(v) == json_array_size(g)) {
            for (size_t i = 0; i < json_array_size(v); i++) {
                char fi[PG_FIELD_MAX * 3];
                snprintf(fi, sizeof fi, "%s[%zu]", f, i);
                json_t *gi = json_array_get(g, i), *vi = json_array_get(v, i);
                if (json_is_object(gi) && json_is_object(vi))
                    cmp_obj(gi, vi, fi, d, n);
                else if (!json_equal(gi, vi))
                    add_diff(d, n, fi, "differs from the dataset's declaration");
            }
            continue;
        }
        if (json_is_number(v) && json_is_number(g)) {
            if (same(json_number_value(g), json_number_value(v))) continue;
            char a[PG_FMT_F64_MAX], b[PG_FMT_F64_MAX];
            snprintf(msg, sizeof msg, "declared %s, the dataset's is %s",
                     pg_fmt_f64(json_number_value(g), a), pg_fmt_f64(json_number_value(v), b));
            add_diff(d, n, f, msg);
            continue;
        }
        if ((!g && json_is_null(v)) || (g && json_equal(g, v))) continue;
        char *gs = g ? json_dumps(g, JSON_ENCODE_ANY) : NULL, *ws = json_dumps(v, JSON_ENCODE_ANY);
        snprintf(msg, sizeof msg, "declared %.80s, the dataset's is %.80s", gs ? gs : "nothing",
                 ws ? ws : "?");
        free(gs);
        free(ws);
        add_diff(d, n, f, msg);
    }
    json_object_foreach((json_t *)got, k, v)
    {
        if (json_object_get(want, k) || json_is_null(v)) continue;
        snprintf(f, sizeof f, "%s.%s", path, k);
        add_diff(d, n, f, "declared, but the dataset's declaration has no such entry");
    }
}

int pg_typed_decl_match(const char *meta, const pg_table *t, const char *decl,
                        pg_datasets_diff diffs[PG_DATASETS_DIFF_MAX], int *ndiff, uint64_t *rows,
                        char field[PG_FIELD_MAX], pg_error *err)
{
    *ndiff = 0;
    *rows = 0;
    field[0] = '\0';
    json_t *got = json_loads(decl, JSON_REJECT_DUPLICATES, NULL);
    json_t *o = json_loads(meta, 0, NULL);
    json_t *want = json_object_get(o, "privacy");
    int rc = PG_OK;
    if (!json_is_object(got)) {
        rc = fail(field, "declaration", err, PG_EINVAL, "the declaration must be a JSON object");
        goto out;
    }
    json_t *nrows = json_object_get(got, "rows");
    if (nrows && (!json_is_integer(nrows) || json_integer_value(nrows) < 1)) {
        rc = fail(field, "declaration.rows", err, PG_EINVAL,
                  "declaration.rows must be a positive integer");
        goto out;
    }
    *rows = nrows ? (uint64_t)json_integer_value(nrows) : 0;
    const char *model = json_string_value(json_object_get(want, "model"));
    const char *mech = json_string_value(json_object_get(want, "mechanism"));
    if (!model || strcmp(model, "local") || !mech || strcmp(mech, "per_column")) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "declared local (privatized rows), the dataset's privacy model is %.20s",
                 model ? model : "unknown");
        add_diff(diffs, ndiff, "declaration.model", msg);
        goto out;
    }
    char f[PG_LDP_FIELD_MAX] = "";
    pg_error e = {0};
    if (pg_ldp_check_declaration(t, got, NULL, NULL, f, &e)) {
        char fld[PG_FIELD_MAX * 2];
        snprintf(fld, sizeof fld, "declaration%s%s", f[0] ? "." : "",
                 strncmp(f, "privacy.", 8) ? f : f + 8);
        add_diff(diffs, ndiff, fld, e.msg);
        goto out;
    }
    json_object_del(got, "rows");
    cmp_obj(got, want, "declaration", diffs, ndiff);
out:
    json_decref(got);
    json_decref(o);
    return rc;
}

int64_t pg_typed_label_index(const pg_table *t, const char *value)
{
    if (!t || t->label == PG_TABLE_NONE || !value) return -1;
    const pg_table_col *c = &t->cols[t->label];
    if (c->type == PG_COL_CATEGORICAL) {
        for (size_t k = 0; k < c->ncat; k++)
            if (!strcmp(c->cats[k], value)) return (int64_t)k;
    } else if (!strcmp(value, "true") || !strcmp(value, "false")) {
        return value[0] == 't';
    }
    char *end;
    unsigned long long v = strtoull(value, &end, 10);
    size_t k = pg_table_num_classes(t);
    if (*value >= '0' && *value <= '9' && !*end && v < k) return (int64_t)v;
    return -1;
}
