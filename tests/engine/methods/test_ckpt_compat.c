/* Checkpoints written by an earlier privgen still restore: tests/engine/
 * methods/ckpt/ holds checkpoints of dp_sinkhorn (with class-mean
 * calibration, a conditional generator and the parameter average, and
 * without), entropic_gan and swd_gen (with class labels and without), each
 * written after 3 steps by the code of commit 2943f25 on the datasets below,
 * next to the resolved spec it ran under (a job keeps its resolved spec, so
 * later changes of defaults do not reach a stored job). Each must restore
 * under that spec, save again to the same bytes, and serve from a snapshot
 * built from the bytes alone the same samples as the restored trainer
 * (pg_test_checkpoint_round_trip). A change of the checkpoint format fails
 * here; a deliberate one comes with a way to read the old format. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine/core/alloc.h"
#include "engine/core/rng.h"
#include "engine/data/dataset.h"
#include "engine/methods/method.h"
#include "support/pg_dps_test.h"
#include "support/pg_method_test.h"
#include "support/pg_test.h"

/* Laplace-privatized local rows (epsilon 5, l1 sensitivity 2). */
static void make_local(pg_dataset *ds, pg_data_desc *desc)
{
    size_t n = 400;
    pg_rng r;
    pg_rng_seeded(&r, 77, 0);
    float *x = pg_alloc_f32(n * 2);
    for (size_t i = 0; i < n * 2; i++)
        x[i] = (float)pg_rng_normal(&r) + (float)pg_rng_laplace(&r, 0.4);
    pg_test_local_laplace_2d(x, n, -1e30f, 1e30f, ds, desc);
}

static const struct {
    const char *file, *method;
    int local, label; /* label: the class the sample comparison draws, -1: none */
} CASES[] = {
    {"dp_sinkhorn_calib", "dp_sinkhorn", 0, 1},
    {"dp_sinkhorn", "dp_sinkhorn", 0, -1},
    {"entropic_gan", "entropic_gan", 1, -1},
    {"swd_gen_labels", "swd_gen", 0, 1},
    {"swd_gen", "swd_gen", 0, -1},
};

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert(n > 0);
    rewind(f);
    unsigned char *b = malloc((size_t)n);
    ck_assert(b && fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

START_TEST(old_checkpoints_restore_and_save_the_same_bytes)
{
    /* The fixtures live in the source tree: ctest names it in the
     * environment, and the build compiles it in for runs by hand. */
    const char *src = pg_test_source_dir();
    pg_dataset ds;
    pg_data_desc desc;
    if (CASES[_i].local)
        make_local(&ds, &desc);
    else
        make_central(400, 0.0f, &ds, &desc); /* the fixtures were trained on these rows */
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/engine/methods/ckpt/%s.spec.json", src, CASES[_i].file);
    json_t *r = json_load_file(path, 0, NULL);
    ck_assert_msg(r != NULL, "cannot read %s", path);
    snprintf(path, sizeof path, "%s/tests/engine/methods/ckpt/%s.ckpt", src, CASES[_i].file);
    size_t len;
    unsigned char *bytes = slurp(path, &len);
    const pg_method *m = pg_method_find(CASES[_i].method);
    ck_assert_ptr_nonnull(m);
    pg_test_checkpoint_round_trip(m, r, &(pg_job_data){.desc = &desc, .rows = &ds}, bytes, len, 64,
                                  2, CASES[_i].label);
    free(bytes);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("methods/ckpt_compat");
    TCase *tc = tcase_create("compat");
    tcase_add_loop_test(tc, old_checkpoints_restore_and_save_the_same_bytes, 0,
                        (int)(sizeof CASES / sizeof CASES[0]));
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
