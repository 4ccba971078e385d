/* /v1/datasets: create, list, get, delete. Bodies are parsed strictly:
 * unknown fields and wrong types are 422 naming the field. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "service/calib.h"
#include "service/datasets/datasets.h"
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

/* Declares the parsed dataset (the service checks it) and answers 201 with
 * its view, or 422 naming the refused field of its declaration. */
static void create(pg_req *r, pg_datasets_spec *s, const pg_table *t, const json_t *decl)
{
    char field[PG_FIELD_MAX];
    json_t *view;
    pg_error err = {0};
    if (pg_datasets_create(r->app->db, r->tok.tenant, s, r->app->cfg->max_dim, t, decl, &view,
                           field, &err)) {
        if (field[0])
            pg_api_problem(r, 422, err.msg, field, err.msg);
        else
            pg_api_fail(r, &err);
        return;
    }
    snprintf(r->location, sizeof r->location, "/v1/datasets/%s",
             json_string_value(json_object_get(view, "id")));
    pg_api_send_json(r, 201, view);
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
    if (!p) create(r, &s, t, decl);
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
    if (!bad) create(r, &s, NULL, NULL);
}

void pg_h_datasets_get(pg_req *r)
{
    json_t *view;
    int found;
    pg_error err = {0};
    int rc = pg_datasets_get(r->app->db, r->tok.tenant, r->params[0], &view, &found, &err);
    if (!pg_api_answer_lookup(r, rc, &err, &found, "no such dataset"))
        pg_api_send_json(r, 200, view);
}

void pg_h_datasets_list(pg_req *r)
{
    long limit;
    long long after;
    if (pg_api_page_params(r, &limit, &after)) return;
    json_t *items;
    int64_t next;
    pg_error err = {0};
    if (pg_datasets_list(r->app->db, r->tok.tenant, after, (size_t)limit, &items, &next, &err))
        pg_api_fail(r, &err);
    else
        pg_api_send_page(r, items, next);
}

void pg_h_datasets_delete(pg_req *r)
{
    int found, conflict;
    pg_error err = {0};
    int rc = pg_datasets_delete(r->app->db, r->tok.tenant, r->params[0], &found, &conflict, &err);
    if (pg_api_answer_lookup(r, rc, &err, &found, "no such dataset")) return;
    if (conflict) {
        pg_api_problem(r, 409, "a queued or running job uses this dataset", NULL, NULL);
        return;
    }
    pg_api_send_text(r, 204, NULL, NULL, 0);
}
