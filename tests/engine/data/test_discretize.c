/* engine/data/discretize.h: levels and edges from the schema alone (closed
 * forms), the "scale" hint, and decode/encode round trips whose rows are
 * valid for the schema. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "engine/data/discretize.h"
#include "engine/data/table.h"
#include "support/pg_test.h"

static pg_table *schema(const char *text)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    ck_assert_ptr_nonnull(j);
    pg_table *t = NULL;
    pg_error err = {0};
    int rc = pg_table_from_json(j, &t, &err);
    json_decref(j);
    ck_assert_msg(rc == PG_OK, "%s", err.msg);
    return t;
}

static const char *CREDIT_LIKE =
    "{\"columns\":["
    "{\"name\":\"status\",\"type\":\"categorical\",\"categories\":[\"bad\",\"good\"]},"
    "{\"name\":\"kids\",\"type\":\"integer\",\"min\":0,\"max\":5},"
    "{\"name\":\"age\",\"type\":\"integer\",\"min\":18,\"max\":99,\"nullable\":true},"
    "{\"name\":\"home\",\"type\":\"categorical\",\"categories\":[\"a\",\"b\",\"c\"],"
    "\"nullable\":true},"
    "{\"name\":\"rec\",\"type\":\"boolean\"},"
    "{\"name\":\"x\",\"type\":\"continuous\",\"min\":0,\"max\":10},"
    "{\"name\":\"assets\",\"type\":\"integer\",\"min\":0,\"max\":500000,\"scale\":\"log\"},"
    "{\"name\":\"debt\",\"type\":\"continuous\",\"min\":-5,\"max\":1000,\"scale\":\"log\","
    "\"nullable\":true}],"
    "\"label\":\"status\"}";

START_TEST(levels_and_edges_follow_the_schema)
{
    pg_table *t = schema(CREDIT_LIKE);
    pg_disc D;
    ck_assert_int_eq(pg_disc_build(t, t->width, -1, 1, 0, 5, &D, NULL), PG_OK);
    ck_assert_uint_eq(D.nattr, 8);
    ck_assert_uint_eq(D.label, 0);
    ck_assert_int_eq(D.a[0].kind, PG_DISC_LABEL);
    ck_assert_uint_eq(D.a[0].levels, 2);
    /* kids: span 6 > 5 bins: integer bins of the grid floor(k * 6 / 5) */
    ck_assert_uint_eq(D.a[1].levels, 5);
    double want_kids[] = {0, 1, 2, 3, 4, 6};
    for (int k = 0; k <= 5; k++) ck_assert_double_eq(D.a[1].edges[k], want_kids[k]);
    /* age: 5 bins + missing */
    ck_assert_uint_eq(D.a[2].levels, 6);
    ck_assert_int_eq(D.a[2].nullable, 1);
    ck_assert_uint_eq(D.a[3].levels, 4); /* 3 categories + missing */
    ck_assert_uint_eq(D.a[4].levels, 2);
    /* continuous [0, 10], 5 bins: 0, 2, 4, 6, 8, 10 */
    for (int k = 0; k <= 5; k++) ck_assert_double_eq_tol(D.a[5].edges[k], 2.0 * k, 1e-12);
    /* log bins: equal in log(1 + x - min); widths grow */
    double U = log1p(1005.0);
    for (int k = 0; k <= 5; k++)
        ck_assert_double_eq_tol(D.a[7].edges[k], k == 5 ? 1000.0 : -5 + expm1(k * U / 5), 1e-9);
    for (size_t k = 1; k + 1 < D.a[6].nvalue; k++)
        ck_assert_double_gt(D.a[6].edges[k + 1] - D.a[6].edges[k],
                            D.a[6].edges[k] - D.a[6].edges[k - 1]);
    size_t set[2] = {2, 3};
    ck_assert_uint_eq(pg_disc_cells(&D, set, 2), 24);
    pg_disc_free(&D);
    /* A small integer span gets one code per value. */
    ck_assert_int_eq(pg_disc_build(t, t->width, -1, 1, 0, 16, &D, NULL), PG_OK);
    ck_assert_uint_eq(D.a[1].levels, 6);
    for (int k = 0; k <= 6; k++) ck_assert_double_eq(D.a[1].edges[k], k);
    pg_disc_free(&D);
    ck_assert_int_eq(pg_disc_build(t, t->width, -1, 1, 0, 1, &D, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_disc_build(t, t->width + 1, -1, 1, 0, 8, &D, NULL), PG_EINVAL);
    pg_table_free(t);
}
END_TEST

START_TEST(scale_hint_parses_and_round_trips)
{
    pg_table *t = schema(CREDIT_LIKE);
    ck_assert_int_eq(t->cols[6].log_scale, 1);
    ck_assert_int_eq(t->cols[5].log_scale, 0);
    json_t *j = pg_table_to_json(t);
    pg_table *t2 = NULL;
    ck_assert_int_eq(pg_table_from_json(j, &t2, NULL), PG_OK);
    ck_assert_int_eq(t2->cols[6].log_scale, 1);
    ck_assert_int_eq(t2->cols[7].log_scale, 1);
    json_decref(j);
    pg_table_free(t2);
    pg_table_free(t);
    const char *bad[] = {
        "{\"columns\":[{\"name\":\"a\",\"type\":\"integer\",\"min\":0,\"max\":9,\"scale\":"
        "\"cubic\"}]}",
        "{\"columns\":[{\"name\":\"a\",\"type\":\"boolean\",\"scale\":\"log\"}]}",
        "{\"columns\":[{\"name\":\"a\",\"type\":\"integer\",\"min\":0,\"max\":9,\"scale\":1}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *b = json_loads(bad[i], 0, NULL);
        pg_table *x = NULL;
        pg_error err = {0};
        ck_assert_int_eq(pg_table_from_json(b, &x, &err), PG_EINVAL);
        ck_assert_ptr_nonnull(strstr(err.msg, "'a'"));
        json_decref(b);
    }
}
END_TEST

/* Every code vector decodes to a row that the schema accepts (REFUSE
 * bounds) and encodes back to the same codes; integers stay integral; every
 * value of a small integer bin is drawn. */
START_TEST(decode_encode_round_trips_to_valid_rows)
{
    pg_table *t = schema(CREDIT_LIKE);
    pg_disc D;
    ck_assert_int_eq(pg_disc_build(t, t->width, -1, 1, 0, 8, &D, NULL), PG_OK);
    pg_rng rng;
    pg_rng_seeded(&rng, 7, 1);
    uint32_t codes[8], back[8];
    float *row = malloc(t->width * sizeof *row);
    int seen_age[200] = {0};
    for (int it = 0; it < 20000; it++) {
        for (size_t a = 0; a < D.nattr; a++) codes[a] = (uint32_t)pg_rng_below(&rng, D.a[a].levels);
        int32_t cls = -1;
        pg_disc_decode(&D, t, codes, &rng, row, &cls);
        ck_assert_int_eq(cls, (int)codes[0]);
        for (size_t c = 0; c < t->ncols; c++) {
            if (c == t->label) continue;
            pg_table_value v;
            pg_table_decode_value(t, c, row, 0, &v);
            float tmp[16] = {0};
            pg_error err = {0};
            ck_assert_msg(pg_table_encode_value(t, c, &v, PG_TABLE_BOUNDS_REFUSE, tmp, &err) ==
                              PG_OK,
                          "column %zu: %s", c, err.msg);
            if (!v.missing && t->cols[c].type == PG_COL_INTEGER)
                ck_assert_double_eq(v.num, floor(v.num));
            if (c == 2 && !v.missing) seen_age[(int)v.num]++;
        }
        pg_disc_encode(&D, t, row, cls, back);
        for (size_t a = 0; a < D.nattr; a++)
            ck_assert_msg(back[a] == codes[a], "attr %zu: %u -> %u", a, codes[a], back[a]);
    }
    for (int v = 18; v <= 99; v++) ck_assert_msg(seen_age[v] > 0, "age %d never drawn", v);
    free(row);
    pg_disc_free(&D);
    pg_table_free(t);
}
END_TEST

START_TEST(untyped_rows_with_classes)
{
    pg_disc D;
    ck_assert_int_eq(pg_disc_build(NULL, 3, -1, 1, 4, 10, &D, NULL), PG_OK);
    ck_assert_uint_eq(D.nattr, 4);
    ck_assert_uint_eq(D.label, 3);
    ck_assert_uint_eq(D.a[3].levels, 4);
    for (int k = 0; k <= 10; k++) ck_assert_double_eq_tol(D.a[0].edges[k], -1 + 0.2 * k, 1e-12);
    pg_rng rng;
    pg_rng_seeded(&rng, 3, 1);
    uint32_t c[4] = {0, 9, 5, 2}, b[4];
    float row[3];
    int32_t cls;
    pg_disc_decode(&D, NULL, c, &rng, row, &cls);
    ck_assert_int_eq(cls, 2);
    ck_assert(row[0] >= -1 && row[0] <= -0.8f && row[1] >= 0.8f && row[1] <= 1);
    pg_disc_encode(&D, NULL, row, cls, b);
    for (int a = 0; a < 4; a++) ck_assert_uint_eq(b[a], c[a]);
    /* out-of-range values go to the end bins */
    float out[3] = {-5, 7, NAN};
    pg_disc_encode(&D, NULL, out, 1, b);
    ck_assert_uint_eq(b[0], 0);
    ck_assert_uint_eq(b[1], 9);
    ck_assert_uint_eq(b[2], 0);
    pg_disc_free(&D);
    ck_assert_int_eq(pg_disc_build(NULL, 3, 1, 1, 0, 10, &D, NULL), PG_EINVAL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("discretize");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, levels_and_edges_follow_the_schema);
    tcase_add_test(tc, scale_hint_parses_and_round_trips);
    tcase_add_test(tc, decode_encode_round_trips_to_valid_rows);
    tcase_add_test(tc, untyped_rows_with_classes);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
