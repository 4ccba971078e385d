/* Declarations tied to datasets: the width and clip checks at creation, their
 * JSON round trip, and pg_datasets_decl_match reporting exactly the fields that
 * differ (each perturbed alone, then all at once) with both values. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/calib.h"
#include "service/datasets/spec.h"
#include "support/pg_test.h"

/* A Laplace dataset of width 3 with the minimal scale for ε = 2, Δ = 2. */
static pg_datasets_spec laplace3(void)
{
    pg_datasets_spec s = {.name = "x",
                          .ndim = 1,
                          .shape = {3},
                          .lo = -5,
                          .hi = 5,
                          .model = PG_PRIV_LOCAL,
                          .mechanism = PG_MECH_LAPLACE,
                          .epsilon = 2.0,
                          .sensitivity = 2.0,
                          .noise_scale = 1.0,
                          .cols = 3,
                          .clip_norm = 1,
                          .clip_radius = 1.0};
    char field[PG_FIELD_MAX];
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1024, field, NULL), PG_OK);
    return s;
}

static const char DECL[] =
    "{\"mechanism\":\"laplace\",\"epsilon\":2,\"delta\":null,\"sensitivity\":2,"
    "\"noise_scale\":1,\"rows\":10,\"cols\":3,\"clip\":{\"norm\":\"l1\",\"radius\":1},"
    "\"calibration\":\"discrete_laplace_grid\",\"neighbouring\":\"any_two_rows\"}";

/* DECL with key set to the JSON value v (NULL: deleted). */
static char *with(const char *key, const char *v)
{
    json_t *o = json_loads(DECL, 0, NULL);
    if (v)
        json_object_set_new(o, key, json_loads(v, JSON_DECODE_ANY, NULL));
    else
        json_object_del(o, key);
    char *txt = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return txt;
}

START_TEST(width_and_clip_checked_at_creation)
{
    char field[PG_FIELD_MAX];
    pg_error err = {0};
    pg_datasets_spec s = laplace3();
    s.cols = 2;
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1024, field, &err), PG_EINVAL);
    ck_assert_str_eq(field, "privacy.cols");
    ck_assert_ptr_nonnull(strstr(err.msg, "rows of 2 values but shape holds 3"));
    /* [c,h,w] = [1,1,3] has width 3 too */
    s = laplace3();
    s.ndim = 3, s.shape[0] = 1, s.shape[1] = 1, s.shape[2] = 3;
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1024, field, NULL), PG_OK);
    s = laplace3();
    s.clip_norm = 2;
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1024, field, NULL), PG_EINVAL);
    ck_assert_str_eq(field, "privacy.clip.norm");
    /* 2R may not exceed the sensitivity: R = 1 is the edge, just above fails */
    s = laplace3();
    s.clip_radius = 1.0 + 1e-6;
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1024, field, NULL), PG_EINVAL);
    ck_assert_str_eq(field, "privacy.clip.radius");
    s.clip_radius = 0.0;
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1024, field, NULL), PG_EINVAL);
    s.clip_radius = 0.25;
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1024, field, NULL), PG_OK);
}
END_TEST

START_TEST(json_round_trip_keeps_width_and_clip)
{
    pg_datasets_spec s = laplace3(), t;
    s.clip_radius = 0.75;
    char *js;
    ck_assert_int_eq(pg_datasets_spec_to_json(&s, &js, NULL), PG_OK);
    ck_assert_int_eq(pg_datasets_spec_from_json(js, &t, NULL), PG_OK);
    free(js);
    ck_assert(t.cols == 3 && t.clip_norm == 1 && t.clip_radius == 0.75);
    /* a dataset stored before declarations had them reads back without */
    ck_assert_int_eq(pg_datasets_spec_from_json("{\"name\":\"o\",\"shape\":[2],\"range\":[-1,1],"
                                                "\"privacy\":{\"model\":\"local\",\"mechanism\":"
                                                "\"gaussian\",\"epsilon\":1,\"delta\":1e-5,"
                                                "\"sensitivity\":2,\"noise_scale\":9,"
                                                "\"min_noise_scale\":8}}",
                                                &t, NULL),
                     PG_OK);
    ck_assert(t.cols == 0 && t.clip_norm == 0);
}
END_TEST

static int match(const pg_datasets_spec *s, const char *decl, pg_datasets_diff *d, int *n,
                 uint64_t *rows, char *field)
{
    return pg_datasets_decl_match(s, decl, d, n, rows, field, NULL);
}

START_TEST(each_field_reported_alone)
{
    pg_datasets_spec s = laplace3();
    pg_datasets_diff d[PG_DATASETS_DIFF_MAX];
    int n;
    uint64_t rows;
    char field[PG_FIELD_MAX];
    ck_assert_int_eq(match(&s, DECL, d, &n, &rows, field), PG_OK);
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq((int)rows, 10);
    static const struct {
        const char *key, *value, *field, *message;
    } cases[] = {
        {"epsilon", "0.1", "declaration.epsilon", "declared 0.1, the dataset's is 2"},
        {"sensitivity", "4", "declaration.sensitivity", "declared 4, the dataset's is 2"},
        {"noise_scale", "1.5", "declaration.noise_scale", "declared 1.5, the dataset's is 1"},
        {"cols", "2", "declaration.cols", "declared rows of 2 values, the dataset's rows hold 3"},
        {"clip", "{\"norm\":\"l1\",\"radius\":0.5}", "declaration.clip",
         "declared l1:0.5, the dataset's is l1:1"},
        {"clip", "{\"norm\":\"l2\",\"radius\":1}", "declaration.clip",
         "declared l2:1, the dataset's is l1:1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *decl = with(cases[i].key, cases[i].value);
        ck_assert_int_eq(match(&s, decl, d, &n, &rows, field), PG_OK);
        free(decl);
        ck_assert_int_eq(n, 1);
        ck_assert_str_eq(d[0].field, cases[i].field);
        ck_assert_str_eq(d[0].message, cases[i].message);
    }
    /* absent optional parts are not compared; the last bit of a float is */
    static const char *const optional[] = {"cols", "clip", "rows", "calibration", NULL};
    for (size_t i = 0; optional[i]; i++) {
        char *decl = with(optional[i], NULL);
        ck_assert_int_eq(match(&s, decl, d, &n, &rows, field), PG_OK);
        free(decl);
        ck_assert_int_eq(n, 0);
    }
    char *decl = with("epsilon", "2.0000000000000004");
    ck_assert_int_eq(match(&s, decl, d, &n, &rows, field), PG_OK);
    free(decl);
    ck_assert_int_eq(n, 0);
    decl = with("epsilon", "2.00001");
    ck_assert_int_eq(match(&s, decl, d, &n, &rows, field), PG_OK);
    free(decl);
    ck_assert_int_eq(n, 1);
}
END_TEST

START_TEST(gaussian_declaration_against_laplace_dataset)
{
    pg_datasets_spec s = laplace3();
    pg_datasets_diff d[PG_DATASETS_DIFF_MAX];
    int n;
    uint64_t rows;
    char field[PG_FIELD_MAX];
    const char *g = "{\"mechanism\":\"gaussian\",\"epsilon\":2,\"delta\":1e-5,\"sensitivity\":2,"
                    "\"noise_scale\":1,\"cols\":3,\"clip\":{\"norm\":\"l2\",\"radius\":1}}";
    ck_assert_int_eq(match(&s, g, d, &n, &rows, field), PG_OK);
    ck_assert_int_eq(n, 3);
    ck_assert_str_eq(d[0].field, "declaration.mechanism");
    ck_assert_str_eq(d[0].message, "declared gaussian, the dataset's is laplace");
    ck_assert_str_eq(d[1].field, "declaration.delta");
    ck_assert_str_eq(d[1].message, "declared 1e-05, the dataset's is 0");
    ck_assert_str_eq(d[2].field, "declaration.clip");
    ck_assert_int_eq((int)rows, 0);
    /* any privatized rows are foreign to a central dataset */
    s.model = PG_PRIV_CENTRAL;
    ck_assert_int_eq(match(&s, DECL, d, &n, &rows, field), PG_OK);
    ck_assert_int_eq(n, 1);
    ck_assert_str_eq(d[0].field, "declaration.model");
}
END_TEST

START_TEST(malformed_declarations_name_the_field)
{
    pg_datasets_spec s = laplace3();
    pg_datasets_diff d[PG_DATASETS_DIFF_MAX];
    int n;
    uint64_t rows;
    char field[PG_FIELD_MAX];
    static const struct {
        const char *key, *value, *field;
    } cases[] = {
        {"mechanism", "\"rr\"", "declaration.mechanism"},
        {"mechanism", NULL, "declaration.mechanism"},
        {"epsilon", "\"2\"", "declaration.epsilon"},
        {"epsilon", NULL, "declaration.epsilon"},
        {"noise_scale", "null", "declaration.noise_scale"},
        {"cols", "0", "declaration.cols"},
        {"cols", "2.5", "declaration.cols"},
        {"rows", "-1", "declaration.rows"},
        {"clip", "{\"norm\":\"linf\",\"radius\":1}", "declaration.clip.norm"},
        {"clip", "{\"norm\":\"l1\"}", "declaration.clip.radius"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *decl = with(cases[i].key, cases[i].value);
        ck_assert_int_eq(match(&s, decl, d, &n, &rows, field), PG_EINVAL);
        free(decl);
        ck_assert_str_eq(field, cases[i].field);
    }
    static const char *const junk[] = {"", "{", "[1]", "2", "{\"a\":1,\"a\":2}", NULL};
    for (size_t i = 0; junk[i]; i++) {
        ck_assert_int_eq(match(&s, junk[i], d, &n, &rows, field), PG_EINVAL);
        ck_assert_str_eq(field, "declaration");
    }
    /* a Gaussian declaration needs its delta */
    ck_assert_int_eq(match(&s,
                           "{\"mechanism\":\"gaussian\",\"epsilon\":2,\"sensitivity\":2,"
                           "\"noise_scale\":1}",
                           d, &n, &rows, field),
                     PG_EINVAL);
    ck_assert_str_eq(field, "declaration.delta");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("dataset_decl");
    TCase *t = tcase_create("core");
    tcase_add_test(t, width_and_clip_checked_at_creation);
    tcase_add_test(t, json_round_trip_keeps_width_and_clip);
    tcase_add_test(t, each_field_reported_alone);
    tcase_add_test(t, gaussian_declaration_against_laplace_dataset);
    tcase_add_test(t, malformed_declarations_name_the_field);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
