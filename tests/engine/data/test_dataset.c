#include <stdio.h>

#include "engine/core/alloc.h"
#include "engine/data/dataset.h"
#include "support/pg_test.h"

START_TEST(alloc_shapes_and_free)
{
    pg_dataset ds;
    size_t img[3] = {1, 28, 28};
    ck_assert_int_eq(pg_dataset_alloc(&ds, 5, img, 3, 10, -1, 1, NULL), PG_OK);
    ck_assert_uint_eq(ds.d, 784);
    ck_assert_uint_eq(ds.n, 5);
    ck_assert_ptr_nonnull(ds.labels);
    ck_assert_ptr_eq(pg_dataset_row(&ds, 2), ds.x + 2 * 784);
    ck_assert_float_eq(ds.x[5 * 784 - 1], 0.0f);
    ck_assert_int_eq(pg_dataset_validate(&ds, PG_DATASET_CHECK_RANGE, NULL, NULL), PG_OK);
    pg_dataset_free(&ds);
    ck_assert_ptr_null(ds.x);
    pg_dataset_free(&ds);

    size_t vec[1] = {2};
    ck_assert_int_eq(pg_dataset_alloc(&ds, 0, vec, 1, 0, 0, 1, NULL), PG_OK);
    ck_assert_ptr_nonnull(ds.x);
    ck_assert_ptr_null(ds.labels);
    pg_dataset_free(&ds);

    pg_error err = {0};
    size_t two[2] = {3, 4}, zero[3] = {1, 0, 3}, huge[3] = {SIZE_MAX / 2, 2, 2};
    ck_assert_int_eq(pg_dataset_alloc(&ds, 1, two, 2, 0, 0, 1, &err), PG_EINVAL);
    ck_assert_int_eq(pg_dataset_alloc(&ds, 1, zero, 3, 0, 0, 1, &err), PG_EINVAL);
    ck_assert_int_eq(pg_dataset_alloc(&ds, 1, huge, 3, 0, 0, 1, &err), PG_ERANGE);
    ck_assert_int_eq(pg_dataset_alloc(&ds, SIZE_MAX / 2, vec, 1, 0, 0, 1, &err), PG_ERANGE);
    ck_assert_int_eq(pg_dataset_alloc(&ds, 1, vec, 1, 0, 1, 1, &err), PG_EINVAL);
    ck_assert_int_eq(pg_dataset_alloc(&ds, 1, vec, 1, 0, 0, INFINITY, &err), PG_EINVAL);
    ck_assert_int_eq(pg_dataset_alloc(&ds, 1, vec, 1, -1, 0, 1, &err), PG_EINVAL);
    ck_assert_ptr_null(ds.x);
}
END_TEST

START_TEST(put_rows_all_or_nothing_names_first_bad_row)
{
    pg_dataset ds;
    size_t vec[1] = {3};
    ck_assert_int_eq(pg_dataset_alloc(&ds, 4, vec, 1, 3, -1, 1, NULL), PG_OK);
    float good[6] = {0.5f, -1, 1, 0, 0, 0.25f};
    int64_t lab[2] = {2, 0};
    ck_assert_int_eq(
        pg_dataset_put_rows(&ds, 1, good, 2, 3, lab, PG_DATASET_CHECK_RANGE, NULL, NULL), PG_OK);
    ck_assert_float_eq(ds.x[3], 0.5f);
    ck_assert_float_eq(ds.x[8], 0.25f);
    ck_assert_int_eq(ds.labels[1], 2);
    ck_assert_int_eq(ds.labels[2], 0);

    float before[12];
    memcpy(before, ds.x, sizeof before);
    float rows[9] = {0, 0, 0, 0.1f, 0.2f, 0.3f, 0, NAN, 0};
    int64_t labs[3] = {0, 1, 2};
    size_t bad = 99;
    pg_error err = {0};
    ck_assert_int_eq(pg_dataset_put_rows(&ds, 0, rows, 3, 3, labs, 0, &bad, &err), PG_EINVAL);
    ck_assert_uint_eq(bad, 2);
    ck_assert_str_eq(err.msg, "row 3, column 2: value is NaN");
    rows[7] = 0;
    rows[4] = 1.5f;
    ck_assert_int_eq(
        pg_dataset_put_rows(&ds, 0, rows, 3, 3, labs, PG_DATASET_CHECK_RANGE, &bad, &err),
        PG_ERANGE);
    ck_assert_uint_eq(bad, 1);
    ck_assert(strstr(err.msg, "row 2, column 2: value 1.5 is outside the range [-1, 1]") != NULL);
    /* Without the range flag (locally privatized data), out-of-range is fine
     * but a label out of [0, 3) is not. */
    labs[2] = 3;
    ck_assert_int_eq(pg_dataset_put_rows(&ds, 0, rows, 3, 3, labs, 0, &bad, &err), PG_ERANGE);
    ck_assert_uint_eq(bad, 2);
    ck_assert(strstr(err.msg, "row 3: label 3 is outside [0, 3)") != NULL);
    labs[2] = -1;
    ck_assert_int_eq(pg_dataset_put_rows(&ds, 0, rows, 3, 3, labs, 0, &bad, &err), PG_ERANGE);
    ck_assert_int_eq(pg_dataset_put_rows(&ds, 0, rows, 3, 2, labs, 0, &bad, &err), PG_EINVAL);
    ck_assert(strstr(err.msg, "2 values") != NULL);
    ck_assert_int_eq(pg_dataset_put_rows(&ds, 0, rows, 3, 3, NULL, 0, &bad, &err), PG_EINVAL);
    ck_assert_int_eq(pg_dataset_put_rows(&ds, 2, rows, 3, 3, labs, 0, &bad, &err), PG_ERANGE);
    ck_assert_int_eq(pg_dataset_put_rows(&ds, SIZE_MAX, rows, 3, 3, labs, 0, &bad, &err),
                     PG_ERANGE);
    /* Nothing was written by any failed call. */
    ck_assert_int_eq(memcmp(before, ds.x, sizeof before), 0);
    ck_assert_int_eq(ds.labels[0], 0);
    ck_assert_int_eq(ds.labels[1], 2);
    labs[2] = 1;
    ck_assert_int_eq(pg_dataset_put_rows(&ds, 1, rows, 3, 3, labs, 0, &bad, &err), PG_OK);
    ck_assert_float_eq(ds.x[3 + 4], 1.5f);
    ck_assert_int_eq(ds.labels[3], 1);
    pg_dataset_free(&ds);
}
END_TEST

START_TEST(validate_and_adopt)
{
    size_t vec[1] = {2};
    float *x = pg_alloc_f32(6);
    int32_t *lab = pg_calloc(3, sizeof *lab);
    x[5] = INFINITY;
    pg_dataset ds;
    pg_error err = {0};
    ck_assert_int_eq(pg_dataset_adopt(&ds, x, NULL, 3, vec, 1, 2, -1, 1, &err), PG_EINVAL);
    ck_assert_int_eq(pg_dataset_adopt(&ds, x, lab, 3, vec, 1, 2, -1, 1, &err), PG_OK);
    size_t bad = 0;
    ck_assert_int_eq(pg_dataset_validate(&ds, 0, &bad, &err), PG_EINVAL);
    ck_assert_uint_eq(bad, 2);
    ck_assert_str_eq(err.msg, "row 3, column 2: value is infinite");
    x[5] = 0;
    lab[1] = 7;
    ck_assert_int_eq(pg_dataset_validate(&ds, 0, &bad, &err), PG_ERANGE);
    ck_assert_uint_eq(bad, 1);
    lab[1] = 1;
    x[0] = -1.0001f;
    ck_assert_int_eq(pg_dataset_validate(&ds, 0, &bad, &err), PG_OK);
    ck_assert_int_eq(pg_dataset_validate(&ds, PG_DATASET_CHECK_RANGE, &bad, &err), PG_ERANGE);
    ck_assert_uint_eq(bad, 0);
    pg_dataset_free(&ds); /* frees the adopted buffers (ASan checks) */

    /* The finite check must find a NaN in any column of a long row. */
    float *wide = pg_alloc_f32(10 * 1000);
    for (size_t j = 0; j < 1000; j += 37) {
        wide[7 * 1000 + j] = NAN;
        ck_assert_int_eq(pg_dataset_check_finite(wide, 10, 1000, &bad, &err), PG_EINVAL);
        ck_assert_uint_eq(bad, 7);
        char want[64];
        snprintf(want, sizeof want, "row 8, column %zu: value is NaN", j + 1); /* from 1 */
        ck_assert_str_eq(err.msg, want);
        wide[7 * 1000 + j] = 0;
    }
    ck_assert_int_eq(pg_dataset_check_finite(wide, 10, 1000, &bad, &err), PG_OK);
    pg_free(wide);
}
END_TEST

static Suite *dataset_suite(void)
{
    Suite *s = suite_create("data/dataset");
    TCase *tc = tcase_create("dataset");
    tcase_add_test(tc, alloc_shapes_and_free);
    tcase_add_test(tc, put_rows_all_or_nothing_names_first_bad_row);
    tcase_add_test(tc, validate_and_adopt);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(dataset_suite)
