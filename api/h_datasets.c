/* /v1/datasets: create, list, get, delete. Bodies are parsed strictly:
 * unknown fields and wrong types are 422 naming the field. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/internal.h"
#include "engine/privacy/privacy.h"
#include "service/auth.h"
#include "service/calib.h"
#include "service/datasets/spec.h"
#include "service/text.h"
#include "service/typed.h"

static int get_num(pg_req *r, json_t *o, const char *key, const char *field, int required,
                   double *out)
{
    json_t *v = json_object_get(o, key);
    if (!v && !required) return 0;
    if (!json_is_number(v) || !isfinite(json_number_value(v))) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s must be a finite number%s", field, v ? "" : " (missing)");
        pg_api_problem(r, 422, msg, field, v ? "must be a finite number" : "is required");
        return -1;
    }
    *out = json_number_value(v);
    return 0;
}

static int parse_privacy(pg_req *r, json_t *p, pg_datasets_spec *s)
{
    if (!json_is_object(p)) {
        pg_api_problem(r, 422, "privacy must be an object", "privacy", "must be an object");
        return -1;
    }
    const char *model = json_string_value(json_object_get(p, "model"));
    if (!model || (strcmp(model, "local") && strcmp(model, "central") && strcmp(model, "public"))) {
        pg_api_problem(r, 422, "privacy.model must be local, central or public", "privacy.model",
                       "must be local, central or public");
        return -1;
    }
    if (!strcmp(model, "public")) {
        static const char *const ok[] = {"model", NULL};
        s->model = PG_PRIV_PUBLIC;
        return pg_api_only_fields(r, p, "privacy", ok);
    }
    if (!strcmp(model, "central")) {
        static const char *const ok[] = {"model", "budget", NULL};
        static const char *const okb[] = {"epsilon", "delta", NULL};
        s->model = PG_PRIV_CENTRAL;
        if (pg_api_only_fields(r, p, "privacy", ok)) return -1;
        json_t *b = json_object_get(p, "budget");
        if (!json_is_object(b)) {
            pg_api_problem(r, 422, "privacy.budget must be an object with epsilon and delta",
                           "privacy.budget", "must be an object");
            return -1;
        }
        if (pg_api_only_fields(r, b, "privacy.budget", okb) ||
            get_num(r, b, "epsilon", "privacy.budget.epsilon", 1, &s->budget_epsilon) ||
            get_num(r, b, "delta", "privacy.budget.delta", 1, &s->budget_delta))
            return -1;
        return 0;
    }
    static const char *const ok[] = {"model",       "mechanism", "epsilon", "delta", "sensitivity",
                                     "noise_scale", "cols",      "clip",    NULL};
    s->model = PG_PRIV_LOCAL;
    if (pg_api_only_fields(r, p, "privacy", ok)) return -1;
    const char *mech = json_string_value(json_object_get(p, "mechanism"));
    if (!mech || (strcmp(mech, "laplace") && strcmp(mech, "gaussian"))) {
        pg_api_problem(r, 422, "privacy.mechanism must be laplace or gaussian", "privacy.mechanism",
                       "must be laplace or gaussian");
        return -1;
    }
    s->mechanism = !strcmp(mech, "laplace") ? PG_MECH_LAPLACE : PG_MECH_GAUSSIAN;
    s->delta = 0.0;
    if (get_num(r, p, "epsilon", "privacy.epsilon", 1, &s->epsilon) ||
        get_num(r, p, "delta", "privacy.delta", s->mechanism == PG_MECH_GAUSSIAN, &s->delta) ||
        get_num(r, p, "sensitivity", "privacy.sensitivity", 1, &s->sensitivity) ||
        get_num(r, p, "noise_scale", "privacy.noise_scale", 1, &s->noise_scale))
        return -1;
    /* Optional: the width and clip ball of the `privgen privatize` run the
     * rows come from; every append is then held to them. */
    json_t *cols = json_object_get(p, "cols"), *clip = json_object_get(p, "clip");
    if (cols) {
        if (!json_is_integer(cols) || json_integer_value(cols) < 1) {
            pg_api_problem(r, 422, "privacy.cols must be a positive integer", "privacy.cols",
                           "must be a positive integer");
            return -1;
        }
        s->cols = json_integer_value(cols);
    }
    if (clip) {
        static const char *const okc[] = {"norm", "radius", NULL};
        const char *norm = json_string_value(json_object_get(clip, "norm"));
        if (!json_is_object(clip) || pg_api_only_fields(r, clip, "privacy.clip", okc)) {
            if (!json_is_object(clip))
                pg_api_problem(r, 422, "privacy.clip must be an object with norm and radius",
                               "privacy.clip", "must be an object with norm and radius");
            return -1;
        }
        if (!norm || (strcmp(norm, "l1") && strcmp(norm, "l2"))) {
            pg_api_problem(r, 422, "privacy.clip.norm must be l1 or l2", "privacy.clip.norm",
                           "must be l1 or l2");
            return -1;
        }
        s->clip_norm = norm[1] == '1' ? 1 : 2;
        if (get_num(r, clip, "radius", "privacy.clip.radius", 1, &s->clip_radius)) return -1;
    }
    return 0;
}

int pg_api_parse_dataset(pg_req *r, json_t *b, pg_datasets_spec *s)
{
    static const char *const ok[] = {"name", "shape", "range", "num_classes", "privacy", NULL};
    memset(s, 0, sizeof *s);
    if (pg_api_only_fields(r, b, NULL, ok)) return -1;
    const char *name = json_string_value(json_object_get(b, "name"));
    if (!name || !*name || strlen(name) > PG_DATASETS_NAME_MAX) {
        pg_api_problem(r, 422, "name must be a string of 1 to 200 characters", "name",
                       "must be a string of 1 to 200 characters");
        return -1;
    }
    snprintf(s->name, sizeof s->name, "%s", name);
    json_t *shape = json_object_get(b, "shape");
    size_t ns = json_array_size(shape);
    if (!json_is_array(shape) || (ns != 1 && ns != 3)) {
        pg_api_problem(r, 422, "shape must be [d] or [c,h,w]", "shape", "must be [d] or [c,h,w]");
        return -1;
    }
    s->ndim = (int)ns;
    for (size_t i = 0; i < ns; i++) {
        json_t *v = json_array_get(shape, i);
        if (!json_is_integer(v) || json_integer_value(v) < 1) {
            pg_api_problem(r, 422, "shape entries must be positive integers", "shape",
                           "entries must be positive integers");
            return -1;
        }
        s->shape[i] = json_integer_value(v);
    }
    json_t *range = json_object_get(b, "range");
    if (!json_is_array(range) || json_array_size(range) != 2 ||
        !json_is_number(json_array_get(range, 0)) || !json_is_number(json_array_get(range, 1))) {
        pg_api_problem(r, 422, "range must be [lo, hi]", "range", "must be [lo, hi]");
        return -1;
    }
    s->lo = json_number_value(json_array_get(range, 0));
    s->hi = json_number_value(json_array_get(range, 1));
    json_t *nc = json_object_get(b, "num_classes");
    if (nc) {
        if (!json_is_integer(nc) || json_integer_value(nc) < 2) {
            pg_api_problem(r, 422, "num_classes must be an integer >= 2", "num_classes",
                           "must be an integer >= 2");
            return -1;
        }
        s->num_classes = json_integer_value(nc);
    }
    json_t *p = json_object_get(b, "privacy");
    if (!p) {
        pg_api_problem(r, 422, "privacy is required", "privacy", "is required");
        return -1;
    }
    return parse_privacy(r, p, s);
}

/* Central (epsilon, delta) that shuffling the n locally private rows would
 * give (Feldman, McMillan, Talwar 2021, closed form; O(1) per request). Only
 * for pure eps0-LDP (Laplace): the Gaussian mechanism is (eps0, delta0)-LDP,
 * whose amplification needs an extra n*delta0 term this report does not
 * claim. null when the bound does not apply (n too small for eps0). The
 * target delta is min(1e-6, 1/n^2), well below 1/n. */
static json_t *shuffle_report(const pg_datasets_spec *s, int64_t n)
{
    if (s->mechanism != PG_MECH_LAPLACE || n < 2) return json_null();
    double delta = 1.0 / ((double)n * (double)n);
    if (delta > 1e-6) delta = 1e-6;
    double eps;
    if (pg_shuffle_closed_form(s->epsilon, (uint64_t)n, delta, &eps, NULL)) return json_null();
    return json_pack("{s:f,s:f,s:I,s:s}", "epsilon", eps, "delta", delta, "n", (json_int_t)n,
                     "bound", "fmt21_closed_form");
}

static json_t *privacy_report(const pg_datasets_spec *s, int64_t n)
{
    if (s->model == PG_PRIV_LOCAL && s->per_column)
        /* Columns compose by basic composition: the row is (epsilon, delta)-
         * LDP. No shuffle figure: its bound is for one pure randomizer. */
        return json_pack("{s:s,s:s,s:f,s:f,s:b,s:n}", "model", "local", "mechanism", "per_column",
                         "epsilon_ldp", s->epsilon, "delta", s->delta, "spends_budget", 0,
                         "shuffle");
    if (s->model == PG_PRIV_LOCAL)
        /* Training on locally privatized rows is post-processing: nothing is
         * spent, and every row carries the declared ε_LDP guarantee. */
        return json_pack("{s:s,s:s,s:f,s:f,s:f,s:f,s:b,s:o}", "model", "local", "mechanism",
                         s->mechanism == PG_MECH_LAPLACE ? "laplace" : "gaussian", "epsilon_ldp",
                         s->epsilon, "delta", s->delta, "noise_scale", s->noise_scale,
                         "min_noise_scale", s->min_noise_scale, "spends_budget", 0, "shuffle",
                         shuffle_report(s, n));
    if (s->model == PG_PRIV_CENTRAL)
        return json_pack("{s:s,s:{s:f,s:f},s:b}", "model", "central", "budget", "epsilon",
                         s->budget_epsilon, "delta", s->budget_delta, "spends_budget", 1);
    return json_pack("{s:s,s:b}", "model", "public", "spends_budget", 0);
}

/* A typed dataset's view also shows how a row is encoded (the width and
 * blocks of the map, what format=npy samples and raw training rows hold). */
static int typed_encoding(json_t *o, const char *meta, pg_req *r)
{
    pg_table *t;
    pg_error err = {0};
    if (pg_typed_table_from_meta(meta, &t, &err)) {
        pg_api_problem(r, 500, err.msg, NULL, NULL);
        return -1;
    }
    json_t *map = t ? pg_table_to_json(t) : NULL;
    pg_table_free(t);
    if (map)
        json_object_set_new(o, "encoding",
                            json_pack("{s:O,s:O,s:O}", "width", json_object_get(map, "width"),
                                      "range", json_object_get(map, "range"), "blocks",
                                      json_object_get(map, "blocks")));
    json_decref(map);
    return 0;
}

/* The public view of a dataset: metadata and counts, never rows. */
static json_t *dataset_json(const pg_db_dataset *d, pg_req *r)
{
    pg_datasets_spec s;
    pg_error err = {0};
    if (pg_datasets_spec_from_json(d->meta, &s, &err)) {
        pg_api_problem(r, 500, err.msg, NULL, NULL);
        return NULL;
    }
    json_error_t je;
    json_t *o = json_loads(d->meta, 0, &je);
    if (!o) {
        pg_api_problem(r, 500, "stored dataset metadata is corrupt", NULL, NULL);
        return NULL;
    }
    json_t *priv = json_object_get(o, "privacy");
    json_object_del(priv, "min_noise_scale"); /* reported in privacy_report */
    json_object_set_new(o, "id", json_string(d->id));
    json_object_set_new(o, "d", json_integer(d->d));
    json_object_set_new(o, "n", json_integer(d->n));
    json_object_set_new(o, "bytes", json_integer(d->bytes));
    json_object_set_new(o, "created_at", pg_text_time(d->created_at));
    json_object_set_new(o, "privacy_report", privacy_report(&s, d->n));
    /* Stored with the meta since issue 30.5; older typed datasets rebuild
     * it from their schema. */
    if (s.typed && !json_object_get(o, "encoding") && typed_encoding(o, d->meta, r)) {
        json_decref(o);
        return NULL;
    }
    /* Flat copies for clients (the dashboard) that read shuffle_epsilon. The
     * numerical FMT bound is tighter but costs up to ~0.3 s at n = 1e6, too
     * much per GET; each job's privacy report carries it (computed once). */
    json_t *rep = json_object_get(o, "privacy_report");
    json_t *sh = json_object_get(rep, "shuffle");
    if (json_is_object(sh)) {
        json_object_set(rep, "shuffle_epsilon", json_object_get(sh, "epsilon"));
        json_object_set(rep, "shuffle_delta", json_object_get(sh, "delta"));
        json_object_set(rep, "shuffle_bound", json_object_get(sh, "bound"));
    }
    return o;
}

/* Stores a checked dataset (meta: its JSON, taken) and answers 201. */
static void insert_dataset(pg_req *r, const pg_datasets_spec *s, char *meta)
{
    pg_error err = {0};
    pg_db_dataset d = {.meta = meta};
    if (pg_auth_random_id("ds_", d.id, &err)) {
        free(meta);
        pg_api_problem(r, 500, err.msg, NULL, NULL);
        return;
    }
    snprintf(d.tenant, sizeof d.tenant, "%s", r->tok.tenant);
    d.name = (char *)s->name;
    d.d = (int64_t)s->d;
    if (pg_db_dataset_insert(r->app->db, &d, &err)) {
        free(d.meta);
        pg_api_fail(r, &err);
        return;
    }
    json_t *o = dataset_json(&d, r);
    free(d.meta);
    if (!o) return;
    snprintf(r->location, sizeof r->location, "/v1/datasets/%s", d.id);
    pg_api_send_json(r, 201, o);
}

/* A typed table (service/typed.h): {name, columns, label, range, privacy};
 * shape and num_classes follow from the columns. Local data declares its
 * privacy per column: the declaration `privgen privatize --schema` prints. */
static void create_typed(pg_req *r, json_t *b)
{
    static const char *const ok[] = {"name", "columns", "label", "range", "privacy", NULL};
    pg_datasets_spec s;
    memset(&s, 0, sizeof s);
    static const char *const derived[] = {"shape", "num_classes"};
    for (size_t i = 0; i < 2; i++)
        if (json_object_get(b, derived[i])) {
            char msg[160];
            snprintf(msg, sizeof msg,
                     "%s is derived from columns (the encoded width, the label's classes): leave "
                     "it out",
                     derived[i]);
            pg_api_problem(r, 422, msg, derived[i], msg);
            return;
        }
    if (pg_api_only_fields(r, b, NULL, ok)) return;
    const char *name = json_string_value(json_object_get(b, "name"));
    if (!name || !*name || strlen(name) > PG_DATASETS_NAME_MAX) {
        pg_api_problem(r, 422, "name must be a string of 1 to 200 characters", "name",
                       "must be a string of 1 to 200 characters");
        return;
    }
    snprintf(s.name, sizeof s.name, "%s", name);
    pg_table *t = NULL;
    char field[PG_FIELD_MAX];
    pg_error err = {0};
    if (pg_typed_schema(b, &s, &t, field, &err)) {
        pg_api_problem(r,
                       err.code == PG_ENOMEM   ? 503
                       : err.code == PG_ERANGE ? 413
                                               : 422,
                       err.msg, field, err.msg);
        return;
    }
    json_t *p = json_object_get(b, "privacy");
    const char *model = json_string_value(json_object_get(p, "model"));
    json_t *decl = NULL;
    char *meta = NULL;
    if (!p) {
        pg_api_problem(r, 422, "privacy is required", "privacy", "is required");
    } else if (model && !strcmp(model, "local")) {
        decl = p;
        if (pg_typed_declaration(t, p, &s, field, &err))
            pg_api_problem(r, 422, err.msg, field, err.msg);
        else
            p = NULL;
    } else if (!parse_privacy(r, p, &s)) {
        p = NULL;
    }
    if (!p) {
        if (pg_datasets_spec_check(&s, r->app->cfg->max_dim, field, &err))
            pg_api_problem(r, 422, err.msg, field, err.msg);
        else if (pg_typed_meta(&s, t, decl, &meta, &err))
            pg_api_problem(r, 503, err.msg, NULL, NULL);
        else
            insert_dataset(r, &s, meta);
    }
    pg_table_free(t);
}

void pg_h_datasets_create(pg_req *r)
{
    json_t *b = pg_api_body_json(r);
    if (!b) return;
    if (json_object_get(b, "columns")) {
        create_typed(r, b);
        json_decref(b);
        return;
    }
    pg_datasets_spec s;
    int bad = pg_api_parse_dataset(r, b, &s);
    json_decref(b);
    if (bad) return;
    char field[PG_FIELD_MAX];
    pg_error err = {0};
    if (pg_datasets_spec_check(&s, r->app->cfg->max_dim, field, &err)) {
        pg_api_problem(r, 422, err.msg, field, err.msg);
        return;
    }
    char *meta = NULL;
    if (pg_datasets_spec_to_json(&s, &meta, &err)) {
        pg_api_problem(r, 500, err.msg, NULL, NULL);
        return;
    }
    insert_dataset(r, &s, meta);
}

void pg_h_datasets_get(pg_req *r)
{
    pg_db_dataset d;
    int found;
    pg_error err = {0};
    if (pg_db_dataset_get(r->app->db, r->tok.tenant, r->params[0], &d, &found, &err)) {
        pg_api_fail(r, &err);
        return;
    }
    if (!found) {
        pg_api_problem(r, 404, "no such dataset", NULL, NULL);
        return;
    }
    json_t *o = dataset_json(&d, r);
    pg_db_dataset_free(&d);
    if (o) pg_api_send_json(r, 200, o);
}

void pg_h_datasets_list(pg_req *r)
{
    long limit;
    long long after;
    if (pg_api_page_params(r, &limit, &after)) return;
    pg_db_dataset *list;
    size_t n;
    pg_error err = {0};
    /* One extra row tells whether another page exists. */
    if (pg_db_dataset_list(r->app->db, r->tok.tenant, after, (size_t)limit + 1, &list, &n, &err)) {
        pg_api_fail(r, &err);
        return;
    }
    json_t *items = json_array();
    size_t shown = n > (size_t)limit ? (size_t)limit : n;
    for (size_t i = 0; i < shown; i++) {
        json_t *o = dataset_json(&list[i], r);
        if (!o) {
            json_decref(items);
            pg_db_dataset_list_free(list, n);
            return;
        }
        json_array_append_new(items, o);
    }
    long long next = n > (size_t)limit ? (long long)list[shown - 1].seq : 0;
    pg_db_dataset_list_free(list, n);
    pg_api_send_page(r, items, next);
}

void pg_h_datasets_delete(pg_req *r)
{
    int found, conflict;
    pg_error err = {0};
    if (pg_db_dataset_delete(r->app->db, r->tok.tenant, r->params[0], &found, &conflict, &err)) {
        pg_api_fail(r, &err);
        return;
    }
    if (!found) {
        pg_api_problem(r, 404, "no such dataset", NULL, NULL);
        return;
    }
    if (conflict) {
        pg_api_problem(r, 409, "a queued or running job uses this dataset", NULL, NULL);
        return;
    }
    pg_api_send_text(r, 204, NULL, NULL, 0);
}
