/* engine/eval/table_cols.h: a typed table's encoded rows as the report's
 * columns, by round trip through pg_table_encode_value. */
#include <jansson.h>

#include "engine/data/table.h"
#include "engine/eval/table_cols.h"
#include "support/pg_test.h"

static pg_table *schema(void)
{
    json_t *j = json_loads(
        "{\"columns\": ["
        "{\"name\": \"age\", \"type\": \"integer\", \"min\": 18, \"max\": 90},"
        "{\"name\": \"income\", \"type\": \"continuous\", \"min\": 0, \"max\": 1000, "
        "\"nullable\": true},"
        "{\"name\": \"grade\", \"type\": \"categorical\", \"categories\": [\"A\", \"B\"]},"
        "{\"name\": \"color\", \"type\": \"categorical\", \"categories\": [\"r\", \"g\", \"b\"], "
        "\"nullable\": true},"
        "{\"name\": \"member\", \"type\": \"boolean\", \"nullable\": true}],"
        "\"label\": \"grade\"}",
        0, NULL);
    pg_table *t = NULL;
    ck_assert_int_eq(pg_table_from_json(j, &t, NULL), PG_OK);
    json_decref(j);
    return t;
}

START_TEST(columns_follow_the_schema)
{
    pg_table *t = schema();
    pg_eval_column *c;
    size_t d;
    ck_assert_int_eq(pg_eval_table_columns(t, 1, &c, &d, NULL), PG_OK);
    ck_assert_uint_eq(d, 5);
    ck_assert_str_eq(c[0].name, "age");
    ck_assert_int_eq(c[0].kind, PG_EVAL_NUMERIC);
    ck_assert_int_eq(c[1].kind, PG_EVAL_NUMERIC);
    ck_assert_int_eq(c[2].kind, PG_EVAL_CATEGORICAL); /* the label: no missing level */
    ck_assert_int_eq(c[2].categories, 2);
    ck_assert_str_eq(c[2].category_names[1], "B");
    ck_assert_int_eq(c[3].categories, 4); /* r, g, b, (missing) */
    ck_assert_str_eq(c[3].category_names[3], PG_EVAL_MISSING_NAME);
    ck_assert_int_eq(c[4].categories, 3);
    ck_assert_str_eq(c[4].category_names[1], "true");
    ck_assert_str_eq(c[4].category_names[2], PG_EVAL_MISSING_NAME);
    pg_eval_table_columns_free(c, d);
    ck_assert_int_eq(pg_eval_table_columns(t, 0, &c, &d, NULL), PG_OK);
    ck_assert_uint_eq(d, 4);
    ck_assert_str_eq(c[2].name, "color");
    pg_eval_table_columns_free(c, d);
    pg_table_free(t);
}
END_TEST

START_TEST(decode_round_trips_with_missing_levels)
{
    pg_table *t = schema();
    float x[2 * 16] = {0};
    ck_assert_uint_le(t->width, 16);
    /* row 0: 37, 412.5, color g, member true; row 1: 90, missing, missing, missing */
    pg_table_value v0[5] = {{0, 37, 0}, {0, 412.5, 0}, {0}, {0, 0, 1}, {0, 0, 1}};
    pg_table_value v1[5] = {{0, 90, 0}, {1, 0, 0}, {0}, {1, 0, 0}, {1, 0, 0}};
    for (size_t j = 0; j < 5; j++) {
        if (j == t->label) continue;
        ck_assert_int_eq(pg_table_encode_value(t, j, &v0[j], PG_TABLE_BOUNDS_REFUSE, x, NULL),
                         PG_OK);
        ck_assert_int_eq(
            pg_table_encode_value(t, j, &v1[j], PG_TABLE_BOUNDS_REFUSE, x + t->width, NULL), PG_OK);
    }
    int32_t labels[2] = {1, 0};
    float out[2 * 5];
    pg_eval_table_decode(t, 1, x, labels, 2, 1, out);
    ck_assert_float_eq(out[0], 37.0f);
    ck_assert_float_eq_tol(out[1], 412.5f, 1e-3f);
    ck_assert_float_eq(out[2], 1.0f); /* label B */
    ck_assert_float_eq(out[3], 1.0f); /* g */
    ck_assert_float_eq(out[4], 1.0f); /* true */
    ck_assert_float_eq(out[5], 90.0f);
    ck_assert(isnan(out[6]));         /* a missing number */
    ck_assert_float_eq(out[7], 0.0f); /* label A */
    ck_assert_float_eq(out[8], 3.0f); /* (missing) level of color */
    ck_assert_float_eq(out[9], 2.0f); /* (missing) level of member */
    float out4[2 * 4];
    pg_eval_table_decode(t, 0, x, NULL, 2, 1, out4);
    ck_assert_float_eq(out4[2], 1.0f);
    ck_assert_float_eq(out4[6], 3.0f);
    pg_table_free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("eval_table_cols");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, columns_follow_the_schema);
    tcase_add_test(tc, decode_round_trips_with_missing_levels);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
