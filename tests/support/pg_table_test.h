/* tests/support/pg_table_test.h - typed tables in tests: a schema written as
 * JSON text, the description of central rows of a table, a fixture's rows
 * adopted with their description (central or locally privatized), and
 * records read back with the engine's own strict parser.
 *
 * Check assertions: a schema the engine refuses, or records that are not
 * valid under the schema, fail the calling test with the engine's message.
 * The table returned is the caller's (pg_table_free); a description made
 * from it points to it.
 */
#ifndef PG_TABLE_TEST_H
#define PG_TABLE_TEST_H

#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/core/alloc.h"
#include "engine/data/dataset.h"
#include "engine/data/records.h"
#include "engine/data/table.h"
#include "engine/data/table_ldp.h"
#include "engine/methods/method.h"

/* The table of the schema `json` (a JSON object's text). */
static inline pg_table *pg_test_table(const char *json)
{
    json_error_t jerr;
    json_t *j = json_loads(json, 0, &jerr);
    ck_assert_msg(j != NULL, "bad JSON in test: %s", jerr.text);
    pg_table *t = NULL;
    pg_error err = {0};
    ck_assert_msg(pg_table_from_json(j, &t, &err) == PG_OK, "%s", err.msg);
    json_decref(j);
    return t;
}

/* The description of n central rows of t (one row of t->width values in
 * t's range), num_classes classes (0: unlabelled), under the budget cap
 * (cap_epsilon, cap_delta). The description points to t. */
static inline pg_data_desc pg_test_table_desc(const pg_table *t, size_t n, int num_classes,
                                              double cap_epsilon, double cap_delta)
{
    return (pg_data_desc){.n = n,
                          .d = t->width,
                          .ndim = 1,
                          .shape = {t->width},
                          .lo = (float)t->lo,
                          .hi = (float)t->hi,
                          .num_classes = num_classes,
                          .model = PG_PRIVACY_CENTRAL,
                          .cap_epsilon = cap_epsilon,
                          .cap_delta = cap_delta,
                          .table = t};
}

/* A fixture's rows of t as a job sees them: x (n rows of t->width values,
 * pg_alloc'ed; ds takes it) and lab (n class indices of num_classes
 * classes, pg_calloc'ed; freed here) adopted into ds with value bounds
 * [lo, hi]; *desc is pg_test_table_desc(t, n, num_classes, 1e4, 1e-5) and,
 * when plan is not NULL, describes rows locally privatized under plan (the
 * model, its epsilon; desc points to plan, which must outlive it). */
static inline void pg_test_table_rows(const pg_table *t, const pg_ldp_plan *plan, float *x,
                                      int64_t *lab, size_t n, int num_classes, float lo, float hi,
                                      pg_dataset *ds, pg_data_desc *desc)
{
    int32_t *l32 = pg_calloc(n, sizeof *l32);
    ck_assert_ptr_nonnull(l32);
    for (size_t i = 0; i < n; i++) l32[i] = (int32_t)lab[i];
    pg_free(lab);
    size_t shape[1] = {t->width};
    ck_assert_int_eq(pg_dataset_adopt(ds, x, l32, n, shape, 1, num_classes, lo, hi, NULL), PG_OK);
    *desc = pg_test_table_desc(t, n, num_classes, 1e4, 1e-5);
    if (plan) {
        desc->model = PG_PRIVACY_LOCAL;
        desc->epsilon = plan->epsilon;
        desc->ldp = plan;
    }
}

/* Parses len bytes of body as records of t in format (enum
 * pg_records_format), every value checked (PG_TABLE_BOUNDS_REFUSE): the
 * number of rows; their labels into *labels when t has a label (caller
 * frees). Fails on anything the parser refuses. */
static inline size_t pg_test_records_read(const pg_table *t, int format, const char *body,
                                          size_t len, int64_t **labels)
{
    pg_records_opts o = {.format = format, .bounds = PG_TABLE_BOUNDS_REFUSE};
    float *x = NULL;
    size_t n = 0;
    pg_error err = {0};
    int rc = pg_records_parse(t, &o, body, len, &x, labels, &n, &err);
    ck_assert_msg(rc == PG_OK, "%s: %.400s", err.msg, body);
    free(x);
    return n;
}

#endif
