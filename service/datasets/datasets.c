/* Datasets: declare, view, list, delete (service/datasets/datasets.h). */
#include "service/datasets/datasets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/privacy/privacy.h"
#include "service/auth.h"
#include "service/calib.h"
#include "service/text.h"
#include "service/typed.h"

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
static int typed_encoding(json_t *o, const char *meta, pg_error *err)
{
    pg_table *t;
    int rc = pg_typed_table_from_meta(meta, &t, err);
    if (rc) return rc;
    if (!t) return pg_error_set(err, PG_EFORMAT, "stored dataset schema is missing");
    json_t *map = pg_table_to_json(t);
    pg_table_free(t);
    /* A view without its encoding would be a wrong answer, not a smaller one. */
    if (!map ||
        json_object_set_new(o, "encoding",
                            json_pack("{s:O,s:O,s:O}", "width", json_object_get(map, "width"),
                                      "range", json_object_get(map, "range"), "blocks",
                                      json_object_get(map, "blocks"))))
        rc = pg_error_set(err, PG_ENOMEM, "out of memory rebuilding a dataset's encoding");
    json_decref(map);
    return rc;
}

/* The public view of a stored dataset: metadata and counts, never rows. */
static int view_of(const pg_db_dataset *d, json_t **out, pg_error *err)
{
    pg_datasets_spec s;
    int rc = pg_datasets_spec_from_json(d->meta, &s, err);
    if (rc) return rc;
    json_t *o;
    if ((rc = pg_datasets_meta_load(d->meta, &o, err))) return rc;
    json_t *priv = json_object_get(o, "privacy");
    json_object_del(priv, "min_noise_scale"); /* reported in privacy_report */
    /* Every field or none: a view missing one (an allocation that failed)
     * is out of memory, not a smaller answer. */
    int bad = json_object_set_new(o, "id", json_string(d->id));
    bad |= json_object_set_new(o, "d", json_integer(d->d));
    bad |= json_object_set_new(o, "n", json_integer(d->n));
    bad |= json_object_set_new(o, "bytes", json_integer(d->bytes));
    bad |= json_object_set_new(o, "created_at", pg_text_time(d->created_at));
    bad |= json_object_set_new(o, "privacy_report", privacy_report(&s, d->n));
    if (bad) {
        json_decref(o);
        return pg_error_set(err, PG_ENOMEM, "out of memory viewing a dataset");
    }
    /* pg_typed_meta stores it with the meta; typed datasets stored before
     * it did rebuild it from their schema. */
    if (s.typed && !json_object_get(o, "encoding") && (rc = typed_encoding(o, d->meta, err))) {
        json_decref(o);
        return rc;
    }
    /* Flat copies for clients (the dashboard) that read shuffle_epsilon. The
     * numerical FMT bound is tighter but costs up to ~0.3 s at n = 1e6, too
     * much per GET; each job's privacy report carries it (computed once). */
    json_t *rep = json_object_get(o, "privacy_report");
    json_t *sh = json_object_get(rep, "shuffle");
    if (json_is_object(sh)) {
        static const char *const K[3][2] = {
            {"shuffle_epsilon", "epsilon"}, {"shuffle_delta", "delta"}, {"shuffle_bound", "bound"}};
        for (int k = 0; k < 3; k++) {
            json_t *v = json_object_get(sh, K[k][1]);
            if (v) bad |= json_object_set(rep, K[k][0], v);
        }
    }
    if (bad) {
        json_decref(o);
        return pg_error_set(err, PG_ENOMEM, "out of memory viewing a dataset");
    }
    *out = o;
    return PG_OK;
}

int pg_datasets_create(pg_db *db, const char *tenant, pg_datasets_spec *s, size_t max_dim,
                       const pg_table *t, const json_t *decl, json_t **view,
                       char field[PG_FIELD_MAX], pg_error *err)
{
    int rc = pg_datasets_spec_check(s, max_dim, field, err);
    if (rc) return rc;
    field[0] = '\0'; /* from here on nothing is the declaration's fault */
    pg_db_dataset d = {0};
    rc = t ? pg_typed_meta(s, t, decl, &d.meta, err) : pg_datasets_spec_to_json(s, &d.meta, err);
    if (!rc) rc = pg_auth_random_id("ds_", d.id, err);
    if (!rc) {
        snprintf(d.tenant, sizeof d.tenant, "%s", tenant);
        d.name = s->name;
        d.d = (int64_t)s->d;
        rc = pg_db_dataset_insert(db, &d, err);
    }
    if (!rc) rc = view_of(&d, view, err);
    free(d.meta);
    return rc;
}

int pg_datasets_get(pg_db *db, const char *tenant, const char *id, json_t **view, int *found,
                    pg_error *err)
{
    pg_db_dataset d;
    int rc = pg_db_dataset_get(db, tenant, id, &d, found, err);
    if (rc || !*found) return rc;
    rc = view_of(&d, view, err);
    pg_db_dataset_free(&d);
    return rc;
}

int pg_datasets_list(pg_db *db, const char *tenant, int64_t after, size_t limit, json_t **items,
                     int64_t *next, pg_error *err)
{
    pg_db_dataset *list;
    size_t n;
    /* One extra row tells whether another page exists. */
    int rc = pg_db_dataset_list(db, tenant, after, limit + 1, &list, &n, err);
    if (rc) return rc;
    json_t *a = json_array();
    if (!a) rc = pg_error_set(err, PG_ENOMEM, "out of memory listing datasets");
    size_t shown = n > limit ? limit : n;
    for (size_t i = 0; !rc && i < shown; i++) {
        json_t *o;
        rc = view_of(&list[i], &o, err);
        /* a page missing a dataset is no answer: out of memory (503) */
        if (!rc && json_array_append_new(a, o))
            rc = pg_error_set(err, PG_ENOMEM, "out of memory listing datasets");
    }
    if (!rc) {
        *items = a;
        *next = n > limit ? list[shown - 1].seq : 0;
    } else {
        json_decref(a);
    }
    pg_db_dataset_list_free(list, n);
    return rc;
}

int pg_datasets_delete(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                       pg_error *err)
{
    return pg_db_dataset_delete(db, tenant, id, found, conflict, err);
}
