#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/core/alloc.h"
#include "engine/data/file.h"
#include "engine/data/fmnist.h"
#include "engine/data/idx.h"
#include "support/pg_test.h"

START_TEST(real_test_split)
{
    if (access(PG_FMNIST_DIR "/t10k-images-idx3-ubyte.gz", R_OK) != 0) {
        fprintf(stderr, "SKIP real_test_split: %s absent (Debian package dataset-fashion-mnist)\n",
                PG_FMNIST_DIR);
        return;
    }
    pg_dataset ds;
    pg_error err = {0};
    ck_assert_msg(pg_fmnist_load(NULL, PG_FMNIST_TEST, 0, &ds, &err) == PG_OK, "%s", err.msg);
    ck_assert_uint_eq(ds.n, 10000);
    ck_assert_uint_eq(ds.d, 784);
    ck_assert_int_eq(ds.ndim, 3);
    ck_assert(ds.shape[0] == 1 && ds.shape[1] == 28 && ds.shape[2] == 28);
    ck_assert_int_eq(ds.num_classes, 10);
    ck_assert(ds.lo == -1.0f && ds.hi == 1.0f);
    ck_assert_int_eq(pg_dataset_validate(&ds, PG_DATASET_CHECK_RANGE, NULL, NULL), PG_OK);
    /* Balanced classes: 1000 test images each. */
    size_t counts[10] = {0};
    for (size_t i = 0; i < ds.n; i++) counts[ds.labels[i]]++;
    for (int k = 0; k < 10; k++) ck_assert_uint_eq(counts[k], 1000);
    /* Known answers computed independently with numpy from the same files:
     * the first labels and the sum of all raw pixel values. */
    const int first[10] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
    for (int i = 0; i < 10; i++) ck_assert_int_eq(ds.labels[i], first[i]);
    double sum = 0, lo = 1, hi = -1;
    size_t off_level = 0; /* values that are not an exact pixel level */
    for (size_t i = 0; i < ds.n * ds.d; i++) {
        double p = (double)ds.x[i] * 127.5 + 127.5;
        off_level += fabs(p - nearbyint(p)) > 1e-4;
        sum += nearbyint(p);
        lo = fmin(lo, ds.x[i]);
        hi = fmax(hi, ds.x[i]);
    }
    ck_assert_uint_eq(off_level, 0);
    ck_assert(sum == 573469082.0);
    ck_assert(lo == -1.0 && hi == 1.0);
    pg_dataset_free(&ds);

    ck_assert_int_eq(pg_fmnist_load(NULL, PG_FMNIST_TEST, 25, &ds, NULL), PG_OK);
    ck_assert_uint_eq(ds.n, 25);
    ck_assert_int_eq(ds.labels[0], 9);
    pg_dataset_free(&ds);
    ck_assert_str_eq(pg_fmnist_class_name(9), "Ankle boot");
    ck_assert_str_eq(pg_fmnist_class_name(10), "?");
}
END_TEST

static void write_idx(const char *dir, const char *name, int type, const void *data,
                      const size_t *dims, int ndim)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t n = pg_idx_size(type, dims, ndim);
    unsigned char *b = malloc(n);
    ck_assert_int_eq(pg_idx_write(type, data, dims, ndim, b, n, NULL), PG_OK);
    ck_assert_int_eq(pg_file_write_atomic(path, b, n, NULL), PG_OK);
    free(b);
}

START_TEST(fake_directory_and_bad_files)
{
    char dir[] = "/tmp/pg_fmnist_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    pg_dataset ds;
    pg_error err = {0};
    ck_assert_int_eq(pg_fmnist_load(dir, PG_FMNIST_TRAIN, 0, &ds, &err), PG_EIO);
    ck_assert(strstr(err.msg, "dataset-fashion-mnist") != NULL);
    ck_assert_int_eq(pg_fmnist_load(dir, 7, 0, &ds, &err), PG_EINVAL);

    static unsigned char px[3 * 784];
    for (size_t i = 0; i < sizeof px; i++) px[i] = (unsigned char)(i * 7);
    unsigned char lab[3] = {0, 9, 4};
    size_t idims[3] = {3, 28, 28}, ldims[1] = {3};
    write_idx(dir, "train-images-idx3-ubyte", PG_IDX_U8, px, idims, 3);
    write_idx(dir, "train-labels-idx1-ubyte", PG_IDX_U8, lab, ldims, 1);
    ck_assert_msg(pg_fmnist_load(dir, PG_FMNIST_TRAIN, 0, &ds, &err) == PG_OK, "%s", err.msg);
    ck_assert_uint_eq(ds.n, 3);
    ck_assert_int_eq(ds.labels[1], 9);
    for (size_t i = 0; i < sizeof px; i++) ck_assert_float_eq(ds.x[i], (px[i] - 127.5f) / 127.5f);
    pg_dataset_free(&ds);

    lab[2] = 10;
    write_idx(dir, "train-labels-idx1-ubyte", PG_IDX_U8, lab, ldims, 1);
    ck_assert_int_eq(pg_fmnist_load(dir, PG_FMNIST_TRAIN, 0, &ds, &err), PG_ERANGE);
    ck_assert(strstr(err.msg, "row 3: label 10") != NULL);
    ck_assert_ptr_null(ds.x);
    lab[2] = 1;
    ldims[0] = 2;
    write_idx(dir, "train-labels-idx1-ubyte", PG_IDX_U8, lab, ldims, 1);
    ck_assert_int_eq(pg_fmnist_load(dir, PG_FMNIST_TRAIN, 0, &ds, &err), PG_EFORMAT);
    ldims[0] = 3;
    write_idx(dir, "train-labels-idx1-ubyte", PG_IDX_U8, lab, ldims, 1);
    size_t wrong[3] = {3, 784, 1};
    write_idx(dir, "train-images-idx3-ubyte", PG_IDX_U8, px, wrong, 3);
    ck_assert_int_eq(pg_fmnist_load(dir, PG_FMNIST_TRAIN, 0, &ds, &err), PG_EFORMAT);
    ck_assert(strstr(err.msg, "28 x 28") != NULL);

    char path[512];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte", dir);
    unlink(path);
    rmdir(dir);
}
END_TEST

static Suite *fmnist_suite(void)
{
    Suite *s = suite_create("data/fmnist");
    TCase *tc = tcase_create("fmnist");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, real_test_split);
    tcase_add_test(tc, fake_directory_and_bad_files);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(fmnist_suite)
