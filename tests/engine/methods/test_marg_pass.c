/* Marginal counts over row passes (engine/methods/marg_pass.h,
 * engine/data/rowsrc.h): for every chunk size (1, a few, n - 1, n, more
 * than n) and for an irregular source that cuts its chunks at random, the
 * streamed tables equal the in-memory counts (every row encoded, then
 * pg_marg_count) exactly, with and without a compressed domain; a source
 * that gives too few or too many rows, or fails part-way, is an error; mst
 * and aim run whole jobs from a source alone (no rows in memory). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "engine/core/alloc.h"
#include "engine/data/dataset.h"
#include "engine/data/discretize.h"
#include "engine/data/rowsrc.h"
#include "engine/data/table.h"
#include "engine/methods/marg.h"
#include "engine/methods/marg_pass.h"
#include "engine/methods/method.h"
#include "engine/methods/spec.h"
#include "support/pg_method_test.h"
#include "support/pg_table_test.h"
#include "support/pg_test.h"

static const char *SCHEMA =
    "{\"columns\":["
    "{\"name\":\"y\",\"type\":\"categorical\",\"categories\":[\"no\",\"yes\",\"maybe\"]},"
    "{\"name\":\"a\",\"type\":\"categorical\",\"categories\":[\"p\",\"q\",\"r\",\"s\"],"
    "\"nullable\":true},"
    "{\"name\":\"b\",\"type\":\"integer\",\"min\":0,\"max\":40},"
    "{\"name\":\"c\",\"type\":\"continuous\",\"min\":-1,\"max\":5,\"nullable\":true},"
    "{\"name\":\"e\",\"type\":\"boolean\"}],"
    "\"label\":\"y\"}";
#define N    1000
#define BINS 8

static pg_table *table(void)
{
    return pg_test_table(SCHEMA);
}

/* Dependent columns so that pair tables are far from products. */
static void make_rows(const pg_table *t, size_t n, uint64_t seed, pg_dataset *ds)
{
    float *x = pg_alloc_f32(n * t->width);
    int32_t *lab = pg_alloc(n * sizeof *lab);
    pg_rng rng;
    pg_rng_seeded(&rng, seed, 1);
    for (size_t i = 0; i < n; i++) {
        float *r = x + i * t->width;
        memset(r, 0, t->width * sizeof *r);
        size_t a = pg_rng_below(&rng, 4);
        pg_table_value v = {.cat = a, .missing = pg_rng_uniform(&rng) < 0.1};
        ck_assert_int_eq(pg_table_encode_value(t, 1, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        v = (pg_table_value){.num = (double)(10 * a + pg_rng_below(&rng, 11))};
        ck_assert_int_eq(pg_table_encode_value(t, 2, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        v = (pg_table_value){.missing = pg_rng_uniform(&rng) < 0.2,
                             .num = -1 + 6 * pg_rng_uniform(&rng) * pg_rng_uniform(&rng)};
        ck_assert_int_eq(pg_table_encode_value(t, 3, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        v = (pg_table_value){.cat = a >= 2};
        ck_assert_int_eq(pg_table_encode_value(t, 4, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        lab[i] = (int32_t)(pg_rng_uniform(&rng) < 0.8 ? a % 3 : pg_rng_below(&rng, 3));
    }
    size_t shape[1] = {t->width};
    ck_assert_int_eq(pg_dataset_adopt(ds, x, lab, n, shape, 1, 3, (float)t->lo, (float)t->hi, NULL),
                     0);
}

/* Every one-way, every pair, every triple (the domain has 5 attributes). */
static size_t all_sets(const size_t *sizes, size_t A, pg_marg_set *sets, size_t *len)
{
    size_t ns = 0, off = 0;
    for (size_t m = 1; m < (1u << A); m++) {
        if (__builtin_popcount((unsigned)m) > 3) continue;
        pg_marg_set *s = &sets[ns++];
        s->k = 0;
        s->cells = 1;
        for (size_t a = 0; a < A; a++)
            if (m & (1u << a)) s->attrs[s->k++] = a, s->cells *= sizes[a];
        s->off = off;
        off += s->cells;
    }
    *len = off;
    return ns;
}

/* The in-memory reference: every row encoded, mapped, stored as uint16 codes,
 * then pg_marg_count per set. */
static double *reference(const pg_dataset *ds, const pg_disc *D, const pg_table *t,
                         const uint32_t *const *fwd, const size_t *sizes, const pg_marg_set *sets,
                         size_t ns, size_t len)
{
    size_t A = D->nattr;
    uint16_t *codes = malloc(ds->n * A * sizeof *codes);
    uint32_t c[16];
    for (size_t i = 0; i < ds->n; i++) {
        pg_disc_encode(D, t, pg_dataset_row(ds, i), ds->labels[i], c);
        for (size_t a = 0; a < A; a++) codes[i * A + a] = (uint16_t)(fwd[a] ? fwd[a][c[a]] : c[a]);
    }
    double *out = malloc(len * sizeof *out);
    for (size_t q = 0; q < ns; q++)
        pg_marg_count(codes, ds->n, A, sizes, sets[q].attrs, sets[q].k, out + sets[q].off,
                      sets[q].cells);
    free(codes);
    return out;
}

/* A source over a dataset that cuts its chunks at random sizes in
 * [1, chunk], and can be told to misbehave. */
typedef struct fake {
    const pg_dataset *ds;
    uint64_t seed;
    long give;       /* rows to deliver in total (-1: all) */
    int fail_after;  /* fail with PG_EFORMAT after this many chunks (-1: never) */
    size_t oversize; /* deliver one chunk this much larger than allowed */
    int passes;
} fake;

static int fake_pass(void *impl, const pg_rowsrc *src, pg_rowsrc_fn fn, void *ctx, pg_error *err)
{
    fake *f = impl;
    f->passes++;
    pg_rng rng;
    pg_rng_seeded(&rng, f->seed, 2);
    size_t total = f->give < 0 ? f->ds->n : (size_t)f->give;
    int chunks = 0;
    for (size_t i = 0; i < total;) {
        if (f->fail_after >= 0 && chunks == f->fail_after)
            return pg_error_set(err, PG_EFORMAT, "block fails its checksum");
        size_t m = 1 + (size_t)pg_rng_below(&rng, src->chunk);
        if (f->oversize) m = src->chunk + f->oversize;
        if (m > total - i) m = total - i;
        /* past the dataset's rows (too many rows): repeat the first rows */
        size_t at = i < f->ds->n ? i : 0;
        if (at + m > f->ds->n) m = f->ds->n - at;
        int rc = fn(ctx, pg_dataset_row(f->ds, at), f->ds->labels + at, m, err);
        if (rc) return rc;
        i += m;
        chunks++;
    }
    return PG_OK;
}

static pg_rowsrc fake_src(fake *f, size_t n, size_t chunk)
{
    return (pg_rowsrc){
        .n = n, .d = f->ds->d, .labelled = 1, .chunk = chunk, .pass = fake_pass, .impl = f};
}

static void assert_same(const double *a, const double *b, size_t len, const char *what)
{
    for (size_t i = 0; i < len; i++)
        ck_assert_msg(a[i] == b[i], "%s: cell %zu is %.17g, in memory %.17g", what, i, a[i], b[i]);
}

START_TEST(streamed_counts_equal_in_memory_counts)
{
    pg_table *t = table();
    pg_dataset ds;
    make_rows(t, N, 3, &ds);
    pg_disc D;
    ck_assert_int_eq(pg_disc_build(t, t->width, (float)t->lo, (float)t->hi, 0, BINS, &D, NULL),
                     PG_OK);
    size_t A = D.nattr, sizes[8];
    ck_assert_uint_eq(A, 5);
    for (size_t a = 0; a < A; a++) sizes[a] = D.a[a].levels;
    /* A compressed domain on b (levels 0..2 kept, the rest merged into 3)
     * and on a (missing merged with s), as mst's domain compression makes. */
    uint32_t fb[64], fa[8];
    for (size_t l = 0; l < D.a[2].levels; l++) fb[l] = l < 3 ? (uint32_t)l : 3;
    for (size_t l = 0; l < D.a[1].levels; l++) fa[l] = l < 3 ? (uint32_t)l : 3;
    const uint32_t *none[8] = {0}, *some[8] = {0};
    some[1] = fa;
    some[2] = fb;
    size_t csizes[8];
    memcpy(csizes, sizes, sizeof csizes);
    csizes[1] = 4;
    csizes[2] = 4;
    pg_marg_set sets[32];
    for (int comp = 0; comp < 2; comp++) {
        const uint32_t *const *fwd = comp ? some : none;
        const size_t *sz = comp ? csizes : sizes;
        size_t len, ns = all_sets(sz, A, sets, &len);
        ck_assert_uint_eq(ns, 25);
        double *want = reference(&ds, &D, t, fwd, sz, sets, ns, len);
        /* the reference itself sees every row in every one-way */
        for (size_t q = 0; q < A; q++) {
            double tot = 0;
            for (size_t i = 0; i < sets[q].cells; i++) tot += want[sets[q].off + i];
            ck_assert_double_eq(tot, N);
        }
        double *got = malloc(len * sizeof *got);
        size_t chunks[] = {1, 2, 7, 1023, N - 1, N, N + 1, 4 * N};
        for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
            pg_rowsrc src;
            pg_rowsrc_dataset(&src, &ds, chunks[c]);
            for (size_t i = 0; i < len; i++) got[i] = -1; /* zeroed by the pass */
            pg_error err = {0};
            ck_assert_msg(pg_marg_pass_count(&src, &D, t, fwd, sz, sets, ns, got, len, &err) ==
                              PG_OK,
                          "%s", err.msg);
            char what[64];
            snprintf(what, sizeof what, "chunk %zu, compressed %d", chunks[c], comp);
            assert_same(got, want, len, what);
        }
        for (uint64_t seed = 1; seed <= 3; seed++) {
            fake f = {.ds = &ds, .seed = seed, .give = -1, .fail_after = -1};
            pg_rowsrc src = fake_src(&f, N, 1 + 97 * seed);
            ck_assert_int_eq(pg_marg_pass_count(&src, &D, t, fwd, sz, sets, ns, got, len, NULL),
                             PG_OK);
            ck_assert_int_eq(f.passes, 1);
            assert_same(got, want, len, "irregular chunks");
        }
        /* fwd NULL altogether means no compression */
        if (!comp) {
            pg_rowsrc src;
            pg_rowsrc_dataset(&src, &ds, 5);
            ck_assert_int_eq(pg_marg_pass_count(&src, &D, t, NULL, sz, sets, ns, got, len, NULL),
                             PG_OK);
            assert_same(got, want, len, "fwd NULL");
        }
        free(got);
        free(want);
    }
    pg_disc_free(&D);
    pg_dataset_free(&ds);
    pg_table_free(t);
}
END_TEST

START_TEST(faulty_sources_are_errors)
{
    pg_table *t = table();
    pg_dataset ds;
    make_rows(t, N, 4, &ds);
    pg_disc D;
    ck_assert_int_eq(pg_disc_build(t, t->width, (float)t->lo, (float)t->hi, 0, BINS, &D, NULL),
                     PG_OK);
    size_t sizes[8];
    for (size_t a = 0; a < D.nattr; a++) sizes[a] = D.a[a].levels;
    pg_marg_set sets[32];
    size_t len, ns = all_sets(sizes, D.nattr, sets, &len);
    double *got = malloc(len * sizeof *got);
    pg_error err = {0};
    /* too few rows, too many rows, a chunk over the bound, a failure half-way */
    fake few = {.ds = &ds, .seed = 1, .give = N - 1, .fail_after = -1};
    pg_rowsrc s1 = fake_src(&few, N, 50);
    ck_assert_int_eq(pg_marg_pass_count(&s1, &D, t, NULL, sizes, sets, ns, got, len, &err), PG_EIO);
    ck_assert_ptr_nonnull(strstr(err.msg, "999"));
    fake many = {.ds = &ds, .seed = 1, .give = N + 10, .fail_after = -1};
    pg_rowsrc s2 = fake_src(&many, N, 50);
    ck_assert_int_eq(pg_marg_pass_count(&s2, &D, t, NULL, sizes, sets, ns, got, len, &err), PG_EIO);
    fake big = {.ds = &ds, .seed = 1, .give = -1, .fail_after = -1, .oversize = 1};
    pg_rowsrc s3 = fake_src(&big, N, 50);
    ck_assert_int_eq(pg_marg_pass_count(&s3, &D, t, NULL, sizes, sets, ns, got, len, &err), PG_EIO);
    fake bad = {.ds = &ds, .seed = 1, .give = -1, .fail_after = 5};
    pg_rowsrc s4 = fake_src(&bad, N, 50);
    ck_assert_int_eq(pg_marg_pass_count(&s4, &D, t, NULL, sizes, sets, ns, got, len, &err),
                     PG_EFORMAT);
    ck_assert_str_eq(err.msg, "block fails its checksum");
    /* a set that does not match its domain is refused before any row is read */
    fake ok = {.ds = &ds, .seed = 1, .give = -1, .fail_after = -1};
    pg_rowsrc s5 = fake_src(&ok, N, 50);
    pg_marg_set wrong = sets[ns - 1];
    wrong.cells++;
    ck_assert_int_eq(pg_marg_pass_count(&s5, &D, t, NULL, sizes, &wrong, 1, got, len, &err),
                     PG_EINVAL);
    wrong = sets[ns - 1];
    wrong.off = len - 1;
    ck_assert_int_eq(pg_marg_pass_count(&s5, &D, t, NULL, sizes, &wrong, 1, got, len, &err),
                     PG_EINVAL);
    ck_assert_int_eq(ok.passes, 0);
    /* a source of another width */
    s5.d++;
    ck_assert_int_eq(pg_marg_pass_count(&s5, &D, t, NULL, sizes, sets, ns, got, len, &err),
                     PG_EINVAL);
    free(got);
    pg_disc_free(&D);
    pg_dataset_free(&ds);
    pg_table_free(t);
}
END_TEST

/* Whole jobs read through a source only: create and step without rows, the
 * pass count is what the schedule needs (mst: one-ways, then every pair,
 * whose chosen ones step 3 measures without a pass; aim: candidates at
 * create, one-ways at step 1, never again), a restore reads what it must,
 * and a source that fails makes the step fail cleanly. */
static void job_from_source(const char *name, int want_passes)
{
    pg_table *t = table();
    pg_dataset ds;
    make_rows(t, 3000, 5, &ds);
    pg_data_desc desc = pg_test_table_desc(t, ds.n, 3, 100, 1e-5);
    const pg_method *M = pg_method_find(name);
    ck_assert(M->streams);
    pg_job_data in = {.desc = &desc};
    pg_spec_errors e;
    json_t *r = pg_test_resolve(
        M, "{\"privacy\":{\"epsilon\":3},\"seed\":1,\"aim\":{\"rounds\":6}}", &in, &e);
    if (!r && !strcmp(name, "mst"))
        r = pg_test_resolve(M, "{\"privacy\":{\"epsilon\":3},\"seed\":1}", &in, &e);
    ck_assert_msg(r, "%s: %s", e.items[0].field, e.items[0].message);
    pg_privacy_plan p;
    ck_assert_int_eq(M->plan(r, &in, &p, NULL), PG_OK);
    fake f = {.ds = &ds, .seed = 9, .give = -1, .fail_after = -1};
    pg_rowsrc src = fake_src(&f, ds.n, 7);
    in.source = &src;
    unsigned char *mid = NULL;
    size_t midlen = 0;
    pg_step_report rep;
    pg_trainer *tr = pg_test_run_plan(M, r, &in, &p, 2, &mid, &midlen, &rep);
    pg_error err = {0};
    ck_assert_msg(f.passes == want_passes, "%s: %d passes", name, f.passes);
    /* resumed after step 2: one pass (mst counts its tree again, aim its
     * candidates at restore), and the run ends as planned */
    fake f2 = {.ds = &ds, .seed = 10, .give = -1, .fail_after = -1};
    pg_rowsrc src2 = fake_src(&f2, ds.n, 1000);
    in.source = &src2;
    pg_trainer *tr2;
    ck_assert_msg(M->restore(r, &in, 1, mid, midlen, &tr2, &err) == PG_OK, "%s", err.msg);
    free(mid);
    pg_step_report rep2 = {0};
    while (!rep2.done) ck_assert_msg(M->step(tr2, &rep2, &err) == PG_OK, "%s", err.msg);
    ck_assert_int_eq(f2.passes, 1);
    ck_assert_msg(pg_test_reldiff(rep2.epsilon_spent, p.epsilon) < 1e-9, "spent %g of %g",
                  rep2.epsilon_spent, p.epsilon);
    M->destroy(tr2);
    ck_assert_msg(pg_test_reldiff(rep.epsilon_spent, p.epsilon) < 1e-9, "spent %g of %g",
                  rep.epsilon_spent, p.epsilon);
    pg_snapshot *s;
    ck_assert_int_eq(M->snapshot(tr, &s, NULL), PG_OK);
    float *y = pg_alloc_f32(100 * t->width);
    ck_assert_int_eq(pg_snapshot_sample(s, 100, 1, -1, y, NULL), PG_OK);
    pg_free(y);
    pg_snapshot_release(s);
    M->destroy(tr);
    /* the same job over a source that breaks on its first pass */
    fake bad = {.ds = &ds, .seed = 9, .give = -1, .fail_after = 3};
    pg_rowsrc bsrc = fake_src(&bad, ds.n, 7);
    in.source = &bsrc;
    int rc = M->create(r, &in, 1, &tr, &err);
    if (rc == PG_OK) {
        rc = M->step(tr, &rep, &err);
        M->destroy(tr);
    }
    ck_assert_int_eq(rc, PG_EFORMAT);
    /* neither rows nor a source: refused */
    in.source = NULL;
    ck_assert_int_eq(M->create(r, &in, 1, &tr, NULL), PG_EINVAL);
    json_decref(r);
    pg_dataset_free(&ds);
    pg_table_free(t);
}

START_TEST(mst_runs_from_a_source)
{
    job_from_source("mst", 2);
}
END_TEST

START_TEST(aim_runs_from_a_source)
{
    job_from_source("aim", 2);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("marg_pass");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, streamed_counts_equal_in_memory_counts);
    tcase_add_test(tc, faulty_sources_are_errors);
    tcase_add_test(tc, mst_runs_from_a_source);
    tcase_add_test(tc, aim_runs_from_a_source);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
