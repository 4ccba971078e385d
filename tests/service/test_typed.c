/* service/typed.h: a typed dataset's meta round trip (schema, label, geometry,
 * the per-column declaration), the plan rebuilt from the stored declaration
 * against the one that made it, declaration matching on uploads (equal, each
 * perturbed key named, a declaration that fails the check), the label index
 * of a request value, and the job desc jobdesc.h builds (table, ldp, totals)
 * with its release. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/datasets/spec.h"
#include "service/jobs/jobdesc.h"
#include "service/typed.h"
#include "support/pg_test.h"

static const char *BODY =
    "{\"name\":\"t\",\"columns\":["
    "{\"name\":\"age\",\"type\":\"integer\",\"min\":18,\"max\":99,\"nullable\":true},"
    "{\"name\":\"job\",\"type\":\"categorical\",\"categories\":[\"a\",\"b\",\"c\"]},"
    "{\"name\":\"ok\",\"type\":\"boolean\"},"
    "{\"name\":\"y\",\"type\":\"categorical\",\"categories\":[\"good\",\"bad\"]}],"
    "\"label\":\"y\",\"range\":[-2,2]}";

static pg_table *table_of(pg_datasets_spec *s)
{
    json_t *b = json_loads(BODY, 0, NULL);
    pg_table *t = NULL;
    char field[PG_FIELD_MAX];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "t");
    ck_assert_int_eq(pg_typed_schema(b, s, &t, field, NULL), PG_OK);
    json_decref(b);
    return t;
}

START_TEST(schema_geometry_and_errors)
{
    pg_datasets_spec s;
    pg_table *t = table_of(&s);
    /* age 1 + missing 1, job 3, ok 1; the label has no units */
    ck_assert_uint_eq(s.d, 6);
    ck_assert_int_eq(s.shape[0], 6);
    ck_assert_int_eq(s.num_classes, 2);
    ck_assert(s.typed && s.lo == -2.0 && s.hi == 2.0);
    pg_table_free(t);
    static const char *const bad[][2] = {
        {"{\"columns\":[{\"name\":\"a\",\"type\":\"integer\",\"min\":3,\"max\":1}]}", "columns"},
        {"{\"columns\":[{\"name\":\"a\",\"type\":\"boolean\"}],\"label\":\"b\"}", "label"},
        {"{\"columns\":[{\"name\":\"a\",\"type\":\"boolean\"}],\"range\":[0.5,1]}", "range"},
    };
    for (size_t i = 0; i < 3; i++) {
        json_t *b = json_loads(bad[i][0], 0, NULL);
        char field[PG_FIELD_MAX];
        pg_error err = {0};
        ck_assert_int_eq(pg_typed_schema(b, &s, &t, field, &err), PG_EINVAL);
        ck_assert_msg(!strcmp(field, bad[i][1]), "%zu: field %s (%s)", i, field, err.msg);
        ck_assert_ptr_null(t);
        json_decref(b);
    }
}
END_TEST

/* A declaration made by the engine for the table at total epsilon eps. */
static json_t *declaration(const pg_table *t, double eps, pg_ldp_plan *plan)
{
    ck_assert_int_eq(pg_ldp_plan_make(t, PG_LDP_LAPLACE, eps, 0.0, plan, NULL), PG_OK);
    return pg_ldp_declaration(t, plan, 100);
}

START_TEST(local_meta_round_trip_and_plan)
{
    pg_datasets_spec s;
    pg_table *t = table_of(&s);
    pg_ldp_plan made;
    json_t *decl = declaration(t, 4.0, &made);
    char field[PG_FIELD_MAX];
    ck_assert_int_eq(pg_typed_declaration(t, decl, &s, field, NULL), PG_OK);
    ck_assert(s.per_column && s.model == PG_PRIV_LOCAL && s.epsilon == 4.0 && s.delta == 0.0);
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1 << 20, field, NULL), PG_OK);
    char *meta;
    ck_assert_int_eq(pg_typed_meta(&s, t, decl, &meta, NULL), PG_OK);
    /* the stored declaration drops "rows"; the spec reads back */
    json_t *m = json_loads(meta, 0, NULL);
    ck_assert_ptr_null(json_object_get(json_object_get(m, "privacy"), "rows"));
    ck_assert_str_eq(json_string_value(json_object_get(m, "label")), "y");
    json_decref(m);
    pg_datasets_spec back;
    ck_assert_int_eq(pg_datasets_spec_from_json(meta, &back, NULL), PG_OK);
    ck_assert(back.typed && back.per_column && back.epsilon == 4.0 && back.d == 6 &&
              back.num_classes == 2);
    /* the table reads back to the same map */
    pg_table *t2;
    ck_assert_int_eq(pg_typed_table_from_meta(meta, &t2, NULL), PG_OK);
    json_t *a = pg_table_to_json(t), *b = pg_table_to_json(t2);
    ck_assert(json_equal(a, b));
    json_decref(a);
    json_decref(b);
    /* the plan rebuilt from the stored declaration is the one that made it */
    pg_ldp_plan *p;
    ck_assert_int_eq(pg_typed_ldp_from_meta(meta, t2, &p, NULL), PG_OK);
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq(p->ncols, made.ncols);
    ck_assert_double_eq(p->epsilon, made.epsilon);
    for (size_t c = 0; c < made.ncols; c++) {
        ck_assert_int_eq(p->cols[c].mechanism, made.cols[c].mechanism);
        ck_assert_double_eq_tol(p->cols[c].epsilon, made.cols[c].epsilon, 1e-15);
        ck_assert_uint_eq(p->cols[c].k, made.cols[c].k);
        ck_assert_double_eq_tol(p->cols[c].keep, made.cols[c].keep, 1e-15);
        ck_assert_double_eq_tol(p->cols[c].noise_scale, made.cols[c].noise_scale, 1e-15);
        ck_assert_double_eq_tol(p->cols[c].missing_keep, made.cols[c].missing_keep, 1e-15);
    }
    /* the job desc: table, ldp and the declared totals; released */
    pg_data_desc d;
    ck_assert_int_eq(pg_jobdesc_from_meta(meta, 100, &d, NULL), PG_OK);
    ck_assert_ptr_nonnull(d.table);
    ck_assert_ptr_nonnull(d.ldp);
    ck_assert(d.model == PG_PRIVACY_LOCAL && d.epsilon == 4.0 && d.d == 6 && d.num_classes == 2);
    ck_assert_double_eq(d.sensitivity, 4.0); /* hi - lo of the range [-2, 2] */
    ck_assert_double_eq_tol(d.noise_scale, made.cols[0].noise_scale, 1e-15); /* the one number */
    /* the shuffle report starts from the row's declared total: the summary
     * noise scale (sensitivity 4 / b) would claim a smaller eps0 */
    json_t *sh = pg_jobdesc_shuffle_json(&d);
    ck_assert_double_eq(json_number_value(json_object_get(sh, "shuffle_epsilon_ldp")), 4.0);
    ck_assert(d.sensitivity / d.noise_scale < 4.0);
    json_decref(sh);
    pg_jobdesc_release(&d);
    ck_assert_ptr_null(d.table);
    pg_jobdesc_release(&d); /* idempotent */
    pg_typed_ldp_free(p);
    pg_table_free(t2);
    free(meta);
    pg_ldp_plan_free(&made);
    json_decref(decl);
    pg_table_free(t);
}
END_TEST

START_TEST(upload_declaration_matching)
{
    pg_datasets_spec s;
    pg_table *t = table_of(&s);
    pg_ldp_plan made;
    json_t *decl = declaration(t, 4.0, &made);
    char field[PG_FIELD_MAX], *meta;
    ck_assert_int_eq(pg_typed_declaration(t, decl, &s, field, NULL), PG_OK);
    ck_assert_int_eq(pg_typed_meta(&s, t, decl, &meta, NULL), PG_OK);
    pg_datasets_diff diffs[PG_DATASETS_DIFF_MAX];
    int n;
    uint64_t rows;
    char *txt = json_dumps(decl, JSON_COMPACT | JSON_REAL_PRECISION(17));
    ck_assert_int_eq(pg_typed_decl_match(meta, t, txt, diffs, &n, &rows, field, NULL), PG_OK);
    ck_assert_int_eq(n, 0);
    ck_assert_uint_eq(rows, 100);
    free(txt);
    /* a larger (still valid) noise scale on the age column: one difference */
    json_t *c0 = json_array_get(json_object_get(decl, "columns"), 0);
    double b = json_number_value(json_object_get(c0, "noise_scale"));
    json_object_set_new(c0, "noise_scale", json_real(2 * b));
    txt = json_dumps(decl, JSON_COMPACT | JSON_REAL_PRECISION(17));
    ck_assert_int_eq(pg_typed_decl_match(meta, t, txt, diffs, &n, &rows, field, NULL), PG_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(diffs[0].field, "declaration.columns[0].noise_scale");
    free(txt);
    /* a smaller one fails the check itself, naming it */
    json_object_set_new(c0, "noise_scale", json_real(b / 2));
    txt = json_dumps(decl, JSON_COMPACT | JSON_REAL_PRECISION(17));
    ck_assert_int_eq(pg_typed_decl_match(meta, t, txt, diffs, &n, &rows, field, NULL), PG_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(diffs[0].field, "declaration.columns[0].noise_scale");
    free(txt);
    json_object_set_new(c0, "noise_scale", json_real(b));
    /* an extra key and malformed input */
    json_object_set_new(decl, "comment", json_string("x"));
    txt = json_dumps(decl, JSON_COMPACT | JSON_REAL_PRECISION(17));
    ck_assert_int_eq(pg_typed_decl_match(meta, t, txt, diffs, &n, &rows, field, NULL), PG_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(diffs[0].field, "declaration.comment");
    free(txt);
    ck_assert_int_eq(pg_typed_decl_match(meta, t, "[1]", diffs, &n, &rows, field, NULL), PG_EINVAL);
    ck_assert_str_eq(field, "declaration");
    free(meta);
    pg_ldp_plan_free(&made);
    json_decref(decl);
    pg_table_free(t);
}
END_TEST

START_TEST(label_index)
{
    pg_datasets_spec s;
    pg_table *t = table_of(&s);
    ck_assert_int_eq(pg_typed_label_index(t, "good"), 0);
    ck_assert_int_eq(pg_typed_label_index(t, "bad"), 1);
    ck_assert_int_eq(pg_typed_label_index(t, "1"), 1);
    ck_assert_int_eq(pg_typed_label_index(t, "2"), -1);
    ck_assert_int_eq(pg_typed_label_index(t, "Good"), -1);
    ck_assert_int_eq(pg_typed_label_index(t, ""), -1);
    ck_assert_int_eq(pg_typed_label_index(t, "-1"), -1);
    ck_assert_int_eq(pg_typed_label_index(NULL, "0"), -1);
    pg_table_free(t);
    json_t *b = json_loads("{\"columns\":[{\"name\":\"a\",\"type\":\"integer\",\"min\":0,\"max\":"
                           "3},{\"name\":\"f\",\"type\":\"boolean\"}],\"label\":\"f\"}",
                           0, NULL);
    char field[PG_FIELD_MAX];
    ck_assert_int_eq(pg_typed_schema(b, &s, &t, field, NULL), PG_OK);
    ck_assert_int_eq(pg_typed_label_index(t, "true"), 1);
    ck_assert_int_eq(pg_typed_label_index(t, "false"), 0);
    ck_assert_int_eq(pg_typed_label_index(t, "yes"), -1);
    pg_table_free(t);
    json_decref(b);
}
END_TEST

/* The one conversion of privacy models: the stored numbers (reports keep
 * them) stay 1, 2, 3 and map onto the engine's bit flags 1, 2, 4; an
 * unknown stored number reads as public, as it always did. */
START_TEST(privacy_model_conversion)
{
    ck_assert_int_eq(PG_PRIV_LOCAL, 1);
    ck_assert_int_eq(PG_PRIV_CENTRAL, 2);
    ck_assert_int_eq(PG_PRIV_PUBLIC, 3);
    ck_assert_int_eq(pg_jobdesc_model(PG_PRIV_LOCAL), PG_PRIVACY_LOCAL);
    ck_assert_int_eq(pg_jobdesc_model(PG_PRIV_CENTRAL), PG_PRIVACY_CENTRAL);
    ck_assert_int_eq(pg_jobdesc_model(PG_PRIV_PUBLIC), PG_PRIVACY_PUBLIC);
    ck_assert_int_eq(pg_jobdesc_model(0), PG_PRIVACY_PUBLIC);
    ck_assert_int_eq(PG_PRIVACY_PUBLIC & (PG_PRIVACY_LOCAL | PG_PRIVACY_CENTRAL), 0);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("service_typed");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, schema_geometry_and_errors);
    tcase_add_test(tc, local_meta_round_trip_and_plan);
    tcase_add_test(tc, upload_declaration_matching);
    tcase_add_test(tc, label_index);
    tcase_add_test(tc, privacy_model_conversion);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(make_suite)
