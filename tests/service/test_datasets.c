/* The datasets module (service/datasets/datasets.h) on the backend
 * PRIVGEN_TEST_DB names: a refused declaration stores nothing; views,
 * pages and tenancy; an upload stores exactly the rows it committed (a
 * refused chunk, an uncommitted upload and a count past max_rows store
 * none); a declared upload is held to its row count and reported matched. */
#include <math.h>

#include "db_support.h"
#include "service/calib.h"
#include "service/datasets/datasets.h"
#include "service/typed.h"
#include "service/ledger.h"
#include "engine/privacy/privacy.h"
/* after db_support.h (pg_jobs_test.h names parameters like the job type) */
#include "service/jobs/jobs.h"
#include "service/jobs/jobs_internal.h"

static void setup(void)
{
    pg_test_db_setup();
}

static void teardown(void)
{
    pg_test_db_teardown();
}

/* Central data: rows of 2 values in [0, 1], labels in {0, 1}. */
static pg_datasets_spec central2(const char *name)
{
    pg_datasets_spec s = {.ndim = 1,
                          .shape = {2},
                          .lo = 0,
                          .hi = 1,
                          .num_classes = 2,
                          .model = PG_PRIV_CENTRAL,
                          .budget_epsilon = 1,
                          .budget_delta = 1e-6};
    snprintf(s.name, sizeof s.name, "%s", name);
    return s;
}

/* Creates s in tenant; returns its id in id. */
static void create(pg_db *db, const char *tenant, pg_datasets_spec s, char id[PG_ID_MAX])
{
    json_t *v;
    char field[PG_FIELD_MAX];
    pg_error err = {0};
    ck_assert_msg(pg_datasets_create(db, tenant, &s, 1024, NULL, NULL, &v, field, &err) == PG_OK,
                  "%s", err.msg);
    snprintf(id, PG_ID_MAX, "%s", json_string_value(json_object_get(v, "id")));
    json_decref(v);
}

static int64_t rows_of(pg_db *db, const char *tenant, const char *id)
{
    json_t *v;
    int found;
    ck_assert_int_eq(pg_datasets_get(db, tenant, id, &v, &found, NULL), PG_OK);
    ck_assert(found);
    int64_t n = json_integer_value(json_object_get(v, "n"));
    json_decref(v);
    return n;
}

START_TEST(create_refuses_or_stores_and_views_per_tenant)
{
    pg_db *db = pg_test_db_open();
    char ta[PG_ID_MAX], tb[PG_ID_MAX];
    pg_test_uid(ta, sizeof ta, "ten_");
    pg_test_uid(tb, sizeof tb, "ten_");
    /* Laplace, Δ = 2, ε = 1: the minimal scale is 2; 1.5 is refused. */
    pg_datasets_spec bad = {.name = "ldp",
                            .ndim = 1,
                            .shape = {3},
                            .lo = -1,
                            .hi = 1,
                            .model = PG_PRIV_LOCAL,
                            .mechanism = PG_MECH_LAPLACE,
                            .epsilon = 1,
                            .sensitivity = 2,
                            .noise_scale = 1.5};
    json_t *v = NULL, *items;
    char field[PG_FIELD_MAX];
    int64_t next;
    pg_error err = {0};
    ck_assert_int_eq(pg_datasets_create(db, ta, &bad, 1024, NULL, NULL, &v, field, &err),
                     PG_EPRIVACY);
    ck_assert_str_eq(field, "privacy.noise_scale");
    ck_assert_ptr_null(v);
    ck_assert_int_eq(pg_datasets_list(db, ta, 0, 10, &items, &next, NULL), PG_OK);
    ck_assert_uint_eq(json_array_size(items), 0);
    json_decref(items);

    pg_datasets_spec s = central2("c");
    ck_assert_int_eq(pg_datasets_create(db, ta, &s, 1024, NULL, NULL, &v, field, &err), PG_OK);
    ck_assert_str_eq(field, "");
    const char *id = json_string_value(json_object_get(v, "id"));
    ck_assert_ptr_nonnull(id);
    ck_assert_int_eq(strncmp(id, "ds_", 3), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(v, "d")), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(v, "n")), 0);
    json_t *rep = json_object_get(v, "privacy_report");
    ck_assert_str_eq(json_string_value(json_object_get(rep, "model")), "central");
    ck_assert(json_is_true(json_object_get(rep, "spends_budget")));
    /* get returns the view create did */
    json_t *g;
    int found;
    ck_assert_int_eq(pg_datasets_get(db, ta, id, &g, &found, NULL), PG_OK);
    ck_assert(found);
    ck_assert(json_equal(g, v));
    json_decref(g);
    /* another tenant sees nothing, and cannot delete it */
    g = NULL;
    ck_assert_int_eq(pg_datasets_get(db, tb, id, &g, &found, NULL), PG_OK);
    ck_assert(!found);
    ck_assert_ptr_null(g);
    int conflict;
    ck_assert_int_eq(pg_datasets_delete(db, tb, id, &found, &conflict, NULL), PG_OK);
    ck_assert(!found);
    ck_assert_int_eq(pg_datasets_delete(db, ta, id, &found, &conflict, NULL), PG_OK);
    ck_assert(found && !conflict);
    ck_assert_int_eq(pg_datasets_get(db, ta, id, &g, &found, NULL), PG_OK);
    ck_assert(!found);
    json_decref(v);
    pg_db_close(db);
}
END_TEST

START_TEST(list_pages_walk_every_dataset_once_in_creation_order)
{
    pg_db *db = pg_test_db_open();
    char ta[PG_ID_MAX], tb[PG_ID_MAX], ids[5][PG_ID_MAX], other[PG_ID_MAX];
    pg_test_uid(ta, sizeof ta, "ten_");
    pg_test_uid(tb, sizeof tb, "ten_");
    for (int i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof name, "d%d", i);
        create(db, ta, central2(name), ids[i]);
        if (i == 2) create(db, tb, central2("x"), other);
    }
    int64_t after = 0;
    size_t seen = 0;
    const size_t want[] = {2, 2, 1};
    for (int page = 0; page < 3; page++) {
        json_t *items;
        int64_t next;
        ck_assert_int_eq(pg_datasets_list(db, ta, after, 2, &items, &next, NULL), PG_OK);
        ck_assert_uint_eq(json_array_size(items), want[page]);
        for (size_t i = 0; i < json_array_size(items); i++)
            ck_assert_str_eq(json_string_value(json_object_get(json_array_get(items, i), "id")),
                             ids[seen + i]);
        seen += json_array_size(items);
        json_decref(items);
        if (page < 2)
            ck_assert_int_gt(next, after);
        else
            ck_assert_int_eq(next, 0); /* the last page says so */
        after = next;
    }
    ck_assert_uint_eq(seen, 5);
    pg_db_close(db);
}
END_TEST

/* Every committed value of dataset id, in order (n*2 floats), and labels. */
static size_t read_rows(pg_db *db, const char *id, float *x, int32_t *lab, size_t cap)
{
    pg_block b;
    int all;
    pg_error err = {0};
    ck_assert_msg(pg_db_rows_load(db, id, 2, 1 << 20, &b, &all, &err) == PG_OK, "%s", err.msg);
    ck_assert_uint_le(b.n, cap);
    memcpy(x, b.x, b.n * 2 * sizeof *x);
    if (all && b.labels) memcpy(lab, b.labels, b.n * sizeof *lab);
    size_t n = b.n;
    pg_block_free(&b);
    return n;
}

START_TEST(upload_stores_exactly_what_it_committed)
{
    pg_db *db = pg_test_db_open();
    char ta[PG_ID_MAX], id[PG_ID_MAX];
    pg_test_uid(ta, sizeof ta, "ten_");
    create(db, ta, central2("u"), id);
    pg_datasets_upload *u = NULL;
    int found;
    char field[PG_FIELD_MAX];
    pg_error err = {0};

    /* unknown dataset, and another tenant's: not found, no upload */
    ck_assert_int_eq(pg_datasets_upload_open(db, ta, "ds_none", 10, &u, &found, NULL), PG_OK);
    ck_assert(!found);
    ck_assert_ptr_null(u);
    ck_assert_int_eq(pg_datasets_upload_open(db, "ten_other", id, 10, &u, &found, NULL), PG_OK);
    ck_assert(!found);

    /* An upload freed before commit stores nothing. */
    ck_assert_int_eq(pg_datasets_upload_open(db, ta, id, 10, &u, &found, &err), PG_OK);
    ck_assert(found);
    ck_assert_uint_eq(pg_datasets_upload_spec(u)->d, 2);
    ck_assert_ptr_null(pg_datasets_upload_table(u));
    const float a[] = {0.1f, 0.2f, 0.3f, 0.4f};
    uint64_t bad;
    ck_assert_int_eq(pg_datasets_upload_begin(u, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_write(u, a, 4, &bad, &err), PG_OK);
    ck_assert_uint_eq(bad, UINT64_MAX);
    pg_datasets_upload_free(u);
    ck_assert_int_eq(rows_of(db, ta, id), 0);

    /* A refused chunk is not written; the rows around it are. Values are
     * counted across writes: the bad value is the 4th row's. */
    ck_assert_int_eq(pg_datasets_upload_open(db, ta, id, 10, &u, &found, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_count(u, 3, field, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_write(u, a, 4, &bad, &err), PG_ESTATE); /* not begun */
    ck_assert_int_eq(pg_datasets_upload_begin(u, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_write(u, a, 4, &bad, &err), PG_OK);
    const float out_of_range[] = {0.5f, 1.5f};
    ck_assert_int_eq(pg_datasets_upload_write(u, out_of_range, 2, &bad, &err), PG_EINVAL);
    ck_assert_uint_eq(bad, 2);
    const float nan_row[] = {NAN, 0.5f};
    ck_assert_int_eq(pg_datasets_upload_write(u, nan_row, 2, &bad, &err), PG_EINVAL);
    ck_assert_uint_eq(bad, 2);
    const float last[] = {0.9f, 1.0f};
    ck_assert_int_eq(pg_datasets_upload_write(u, last, 2, &bad, &err), PG_OK);
    const int32_t labels[] = {1, 0, 1};
    pg_datasets_appended got;
    ck_assert_msg(pg_datasets_upload_commit(u, labels, &found, &got, &err) == PG_OK, "%s", err.msg);
    ck_assert(found);
    ck_assert_int_eq(got.rows, 3);
    ck_assert_int_eq(got.n, 3);
    ck_assert_str_eq(got.declaration, "not applicable");
    /* commit ended it: a second commit is refused, free still frees */
    ck_assert_int_eq(pg_datasets_upload_commit(u, NULL, &found, &got, &err), PG_ESTATE);
    pg_datasets_upload_free(u);
    float x[16];
    int32_t lab[8] = {0};
    ck_assert_uint_eq(read_rows(db, id, x, lab, 8), 3);
    const float want[] = {0.1f, 0.2f, 0.3f, 0.4f, 0.9f, 1.0f};
    for (int i = 0; i < 6; i++) ck_assert_float_eq(x[i], want[i]);
    for (int i = 0; i < 3; i++) ck_assert_int_eq(lab[i], labels[i]);

    /* max_rows 4 counts the dataset's 3 rows: one more fits, two do not. */
    ck_assert_int_eq(pg_datasets_upload_open(db, ta, id, 4, &u, &found, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_rows_before(u), 3);
    ck_assert_int_eq(pg_datasets_upload_count(u, 1, field, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_count(u, 2, field, &err), PG_ERANGE);
    ck_assert_ptr_nonnull(strstr(err.msg, "--max-rows (4 rows)"));
    /* the commit holds the bound too (rows written past a skipped count) */
    ck_assert_int_eq(pg_datasets_upload_begin(u, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_write(u, a, 4, &bad, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_commit(u, NULL, &found, &got, &err), PG_ERANGE);
    pg_datasets_upload_free(u);
    ck_assert_int_eq(rows_of(db, ta, id), 3);
    pg_db_close(db);
}
END_TEST

START_TEST(declared_upload_is_held_to_its_count_and_matched)
{
    pg_db *db = pg_test_db_open();
    char ta[PG_ID_MAX], id[PG_ID_MAX];
    pg_test_uid(ta, sizeof ta, "ten_");
    /* Laplace, Δ = 2, ε = 2: scale 1 is the minimum. */
    pg_datasets_spec s = {.name = "l",
                          .ndim = 1,
                          .shape = {2},
                          .lo = -5,
                          .hi = 5,
                          .model = PG_PRIV_LOCAL,
                          .mechanism = PG_MECH_LAPLACE,
                          .epsilon = 2,
                          .sensitivity = 2,
                          .noise_scale = 1};
    create(db, ta, s, id);
    pg_datasets_upload *u;
    int found, ndiff;
    char field[PG_FIELD_MAX];
    pg_datasets_diff diffs[PG_DATASETS_DIFF_MAX];
    pg_error err = {0};
    pg_datasets_appended got;
    uint64_t bad;
    const float x[] = {7.5f, -9.0f, 0.0f, 1.0f}; /* local: noisy values outside the range stay */

    /* Without a declaration local rows are accepted, "not checked". */
    ck_assert_int_eq(pg_datasets_upload_open(db, ta, id, 100, &u, &found, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_begin(u, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_write(u, x, 4, &bad, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_commit(u, NULL, &found, &got, &err), PG_OK);
    ck_assert_str_eq(got.declaration, "not checked");
    pg_datasets_upload_free(u);

    /* Another epsilon: one difference, nothing declared. */
    ck_assert_int_eq(pg_datasets_upload_open(db, ta, id, 100, &u, &found, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_declare(u,
                                                "{\"mechanism\":\"laplace\",\"epsilon\":3,"
                                                "\"sensitivity\":2,\"noise_scale\":1}",
                                                diffs, &ndiff, field, &err),
                     PG_OK);
    ck_assert_int_eq(ndiff, 1);
    ck_assert_str_eq(diffs[0].field, "declaration.epsilon");
    pg_datasets_upload_free(u);

    ck_assert_int_eq(pg_datasets_upload_open(db, ta, id, 100, &u, &found, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_declare(u, "{\"mechanism\":", diffs, &ndiff, field, &err),
                     PG_EINVAL);
    ck_assert_int_eq(pg_datasets_upload_declare(u,
                                                "{\"mechanism\":\"laplace\",\"epsilon\":2,"
                                                "\"sensitivity\":2,\"noise_scale\":1,\"rows\":2}",
                                                diffs, &ndiff, field, &err),
                     PG_OK);
    ck_assert_int_eq(ndiff, 0);
    ck_assert_int_eq(pg_datasets_upload_count(u, 3, field, &err), PG_EINVAL);
    ck_assert_str_eq(field, "declaration.rows");
    ck_assert_str_eq(err.msg, "declared 2 rows, the upload holds 3");
    ck_assert_int_eq(pg_datasets_upload_count(u, 2, field, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_begin(u, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_write(u, x, 4, &bad, &err), PG_OK);
    ck_assert_int_eq(pg_datasets_upload_commit(u, NULL, &found, &got, &err), PG_OK);
    ck_assert_str_eq(got.declaration, "matched");
    ck_assert_int_eq(got.n, 4);
    pg_datasets_upload_free(u);
    pg_db_close(db);
}
END_TEST

/* ---- out of memory ---------------------------------------------------

 * jansson's allocations fail on demand (json_set_alloc_funcs): the k-th
 * one after oom_arm(k) returns NULL. Whatever allocation fails, a dataset
 * operation answers PG_ENOMEM (the api's 503, like every other out of
 * memory: api/respond.c) or succeeds with a complete answer; never "stored
 * metadata is corrupt" (PG_EFORMAT, a 500 that blames the row) and never a
 * view with a field missing. */
static long oom_at, oom_count;
static int oom_hit;

static void *oom_malloc(size_t n)
{
    if (oom_at && ++oom_count == oom_at) {
        oom_hit = 1;
        return NULL;
    }
    return malloc(n);
}

static void oom_arm(long k)
{
    oom_at = k;
    oom_count = 0;
    oom_hit = 0;
    json_set_alloc_funcs(oom_malloc, free);
}

static void oom_disarm(void)
{
    oom_at = 0;
}

static const char TYPED_SCHEMA[] =
    "{\"columns\":[{\"name\":\"age\",\"type\":\"integer\",\"min\":18,\"max\":99},"
    "{\"name\":\"job\",\"type\":\"categorical\",\"categories\":[\"a\",\"b\",\"c\"]},"
    "{\"name\":\"y\",\"type\":\"categorical\",\"categories\":[\"good\",\"bad\"]}],"
    "\"label\":\"y\",\"range\":[-1,1]}";

/* A central typed dataset's declaration and table (pg_table_free). */
static pg_table *typed_central(pg_datasets_spec *s)
{
    json_t *b = json_loads(TYPED_SCHEMA, 0, NULL);
    pg_table *t = NULL;
    char field[PG_FIELD_MAX];
    pg_error err = {0};
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "typed");
    ck_assert_msg(pg_typed_schema(b, s, &t, field, &err) == PG_OK, "%s", err.msg);
    json_decref(b);
    s->model = PG_PRIV_CENTRAL;
    s->budget_epsilon = 1;
    s->budget_delta = 1e-6;
    return t;
}

/* A complete view: the fields every dataset view has, and a typed one's
 * encoding. */
static void view_complete(json_t *v, long k)
{
    static const char *const K[] = {"id",    "name",       "shape",          "d",       "n",
                                    "bytes", "created_at", "privacy_report", "encoding"};
    for (size_t i = 0; i < sizeof K / sizeof *K; i++)
        ck_assert_msg(json_object_get(v, K[i]) != NULL, "allocation %ld failed: a view without %s",
                      k, K[i]);
}

/* The outcome of one run with allocation k failing: PG_ENOMEM, or success. */
static void oom_outcome(int rc, const pg_error *err, long k, const char *what)
{
    ck_assert_msg(rc == PG_OK || rc == PG_ENOMEM,
                  "%s with jansson allocation %ld failing: code %d (%s), not out of memory", what,
                  k, rc, err->msg);
}

START_TEST(out_of_memory_is_enomem_never_corrupt_or_partial)
{
    pg_db *db = pg_test_db_open();
    pg_datasets_spec s;
    pg_table *t = typed_central(&s);
    char tenant[PG_ID_MAX];
    pg_test_uid(tenant, sizeof tenant, "tn_");
    long fired[3] = {0, 0, 0};

    /* 1. create: the metadata's encoding, the insert, the view. */
    for (long k = 1;; k++) {
        ck_assert_int_lt(k, 5000);
        json_t *v = NULL;
        char field[PG_FIELD_MAX];
        pg_error err = {0};
        pg_datasets_spec sk = s;
        oom_arm(k);
        int rc = pg_datasets_create(db, tenant, &sk, 1024, t, NULL, &v, field, &err);
        oom_disarm();
        oom_outcome(rc, &err, k, "create");
        if (!rc) {
            view_complete(v, k);
            /* what it stored reads back whole */
            pg_datasets_upload *u = NULL;
            int found = 0;
            const char *id = json_string_value(json_object_get(v, "id"));
            ck_assert_msg(pg_datasets_upload_open(db, tenant, id, 1000, &u, &found, &err) == PG_OK,
                          "allocation %ld failed at create: %s", k, err.msg);
            ck_assert(found);
            const pg_table *back = pg_datasets_upload_table(u);
            ck_assert_ptr_nonnull(back);
            ck_assert_uint_eq(back->ncols, t->ncols);
            ck_assert_uint_eq(back->width, t->width);
            pg_datasets_upload_free(u);
        }
        json_decref(v);
        if (!oom_hit) break;
        fired[0] += rc == PG_ENOMEM;
    }

    /* 2. a typed dataset stored before the encoding was stored with it: its
     * view rebuilds the encoding from the schema. */
    char *meta = NULL;
    ck_assert_int_eq(pg_typed_meta(&s, t, NULL, &meta, NULL), PG_OK);
    json_t *m = json_loads(meta, 0, NULL);
    free(meta);
    ck_assert_int_eq(json_object_del(m, "encoding"), 0);
    pg_db_dataset d = {0};
    pg_test_uid(d.id, sizeof d.id, "ds_");
    snprintf(d.tenant, sizeof d.tenant, "%s", tenant);
    d.name = "old";
    d.meta = json_dumps(m, JSON_COMPACT);
    json_decref(m);
    d.d = (int64_t)s.d;
    pg_error err = {0};
    ck_assert_msg(pg_db_dataset_insert(db, &d, &err) == PG_OK, "%s", err.msg);
    free(d.meta);
    for (long k = 1;; k++) {
        ck_assert_int_lt(k, 5000);
        json_t *v = NULL;
        int found = 0;
        err = (pg_error){0};
        oom_arm(k);
        int rc = pg_datasets_get(db, tenant, d.id, &v, &found, &err);
        oom_disarm();
        oom_outcome(rc, &err, k, "view rebuild");
        if (!rc) {
            ck_assert(found);
            view_complete(v, k);
        }
        json_decref(v);
        if (!oom_hit) break;
        fired[1] += rc == PG_ENOMEM;
    }

    /* 3. an upload's opening reads the stored schema. */
    for (long k = 1;; k++) {
        ck_assert_int_lt(k, 5000);
        pg_datasets_upload *u = NULL;
        int found = 0;
        err = (pg_error){0};
        oom_arm(k);
        int rc = pg_datasets_upload_open(db, tenant, d.id, 1000, &u, &found, &err);
        oom_disarm();
        oom_outcome(rc, &err, k, "upload open");
        if (!rc) {
            ck_assert(found);
            ck_assert_ptr_nonnull(pg_datasets_upload_table(u));
            pg_datasets_upload_free(u);
        }
        if (!oom_hit) break;
        fired[2] += rc == PG_ENOMEM;
    }
    /* each path met its allocation failures (the sweeps are not empty) */
    for (int i = 0; i < 3; i++) ck_assert_int_gt(fired[i], 0);

    /* Corruption is still told apart: not JSON at all is PG_EFORMAT. */
    pg_db_dataset bad = {0};
    pg_test_uid(bad.id, sizeof bad.id, "ds_");
    snprintf(bad.tenant, sizeof bad.tenant, "%s", tenant);
    bad.name = "bad";
    bad.meta = "{\"name\":";
    bad.d = 2;
    ck_assert_int_eq(pg_db_dataset_insert(db, &bad, NULL), PG_OK);
    json_t *v = NULL;
    int found = 0;
    ck_assert_int_eq(pg_datasets_get(db, tenant, bad.id, &v, &found, NULL), PG_EFORMAT);
    pg_table_free(t);
    pg_db_close(db);
}
END_TEST

/* ---- out of memory in the list, ledger and job views -----------------
 *
 * The same failing allocator over the other answers a user reads: a page
 * of datasets (10, past the 8 slots a jansson array starts with, so
 * growing it allocates), a dataset's ledger view and the charge text it is
 * stored as, a job's privacy report and its view (20 history points, 10
 * checkpoints). Each either fails (NULL / PG_ENOMEM: the API's 503) or is
 * complete: before, a failed append or member was skipped and the answer
 * came out one entry, one ledger charge or one field short. */
static pg_privacy_plan oom_plan(void)
{
    pg_privacy_plan p = {0};
    p.charges = true;
    p.norders = (int)pg_rdp_default_orders(p.orders, PG_PLAN_MAX_ORDERS);
    for (int i = 0; i < p.norders; i++) p.rdp[i] = p.orders[i] / (2 * 30.0 * 30.0);
    p.delta = 1e-6;
    p.delta_extra = 1e-9;
    p.noise_multiplier = 30;
    p.sampling_rate = 0.01;
    p.steps = 10;
    ck_assert_int_eq(pg_rdp_to_dp(p.orders, p.rdp, (size_t)p.norders, 1e-6, PG_RDP_CONV_IMPROVED,
                                  &p.epsilon, NULL, NULL),
                     PG_OK);
    snprintf(p.mechanism, sizeof p.mechanism, "gaussian");
    snprintf(p.neighbouring, sizeof p.neighbouring, "add_remove");
    return p;
}

START_TEST(out_of_memory_lists_and_ledger_views_are_enomem_never_short)
{
    pg_db *db = pg_test_db_open();
    pg_datasets_spec s;
    pg_table *t = typed_central(&s);
    char tenant[PG_ID_MAX], first[PG_ID_MAX] = "";
    pg_test_uid(tenant, sizeof tenant, "tn_");
    enum { NDS = 10, NJOBS = 3 };
    for (int i = 0; i < NDS; i++) {
        json_t *v = NULL;
        char field[PG_FIELD_MAX];
        pg_error err = {0};
        pg_datasets_spec sk = s;
        ck_assert_msg(pg_datasets_create(db, tenant, &sk, 1024, t, NULL, &v, field, &err) == PG_OK,
                      "%s", err.msg);
        if (!i) snprintf(first, sizeof first, "%s", json_string_value(json_object_get(v, "id")));
        json_decref(v);
    }
    pg_privacy_plan plan = oom_plan();
    for (int i = 0; i < NJOBS; i++) {
        char id[PG_ID_MAX];
        pg_test_uid(id, sizeof id, "job_");
        pg_job_row row = {0};
        snprintf(row.id, sizeof row.id, "%s", id);
        snprintf(row.tenant, sizeof row.tenant, "%s", tenant);
        snprintf(row.dataset_id, sizeof row.dataset_id, "%s", first);
        snprintf(row.method, sizeof row.method, "m");
        row.spec = "{}";
        pg_ledger_quote q;
        pg_error err = {0};
        ck_assert_msg(pg_db_job_admit(db, &row, &plan, 1.0, 1e-6, &q, &err) == PG_OK, "%s",
                      err.msg);
        ck_assert_int_eq(q.admit, 1);
    }
    long fired[3] = {0, 0, 0};

    /* 1. a page of datasets */
    for (long k = 1;; k++) {
        ck_assert_int_lt(k, 20000);
        json_t *items = NULL;
        int64_t next = 0;
        pg_error err = {0};
        oom_arm(k);
        int rc = pg_datasets_list(db, tenant, 0, 100, &items, &next, &err);
        oom_disarm();
        oom_outcome(rc, &err, k, "list");
        if (!rc) {
            ck_assert_msg(json_array_size(items) == NDS,
                          "allocation %ld failed: a page of %zu datasets, not %d", k,
                          json_array_size(items), NDS);
            for (size_t i = 0; i < NDS; i++) view_complete(json_array_get(items, i), k);
        }
        json_decref(items);
        if (!oom_hit) break;
        fired[0] += rc == PG_ENOMEM;
    }

    /* 2. the dataset's ledger view: every charge, each with its parameters */
    for (long k = 1;; k++) {
        ck_assert_int_lt(k, 20000);
        json_t *o = NULL;
        pg_error err = {0};
        oom_arm(k);
        int rc = pg_ledger_budget_json(db, first, 1.0, 1e-6, &o, &err);
        oom_disarm();
        oom_outcome(rc, &err, k, "ledger view");
        if (!rc) {
            json_t *e = json_object_get(o, "entries");
            ck_assert_msg(json_array_size(e) == NJOBS,
                          "allocation %ld failed: a ledger view of %zu charges, not %d", k,
                          json_array_size(e), NJOBS);
            for (size_t i = 0; i < NJOBS; i++) {
                json_t *x = json_array_get(e, i);
                static const char *const K[] = {"job_id",  "noise_multiplier", "sampling_rate",
                                                "steps",   "epsilon",          "delta",
                                                "refunded"};
                for (size_t f = 0; f < sizeof K / sizeof *K; f++)
                    ck_assert_msg(json_object_get(x, K[f]) != NULL,
                                  "allocation %ld failed: a ledger entry without %s", k, K[f]);
            }
            ck_assert_ptr_nonnull(json_object_get(o, "spent_epsilon"));
        }
        json_decref(o);
        if (!oom_hit) break;
        fired[1] += rc == PG_ENOMEM;
    }

    /* 3. the charge's stored text: every order or nothing */
    for (long k = 1;; k++) {
        ck_assert_int_lt(k, 20000);
        oom_arm(k);
        char *txt = pg_ledger_plan_encode(&plan);
        oom_disarm();
        if (txt) {
            json_t *o = json_loads(txt, 0, NULL);
            ck_assert_ptr_nonnull(o);
            ck_assert_msg(json_array_size(json_object_get(o, "orders")) == (size_t)plan.norders &&
                              json_array_size(json_object_get(o, "rdp")) == (size_t)plan.norders,
                          "allocation %ld failed: a charge stored with %zu of %d orders", k,
                          json_array_size(json_object_get(o, "orders")), plan.norders);
            ck_assert_ptr_nonnull(json_object_get(o, "delta_extra"));
            json_decref(o);
            free(txt);
        }
        if (!oom_hit) break;
        fired[2] += txt == NULL;
    }
    for (int i = 0; i < 3; i++) ck_assert_int_gt(fired[i], 0);
    pg_table_free(t);
    pg_db_close(db);
}
END_TEST

START_TEST(out_of_memory_job_views_are_null_never_partial)
{
    pg_privacy_plan plan = oom_plan();
    pg_data_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.model = PG_PRIVACY_CENTRAL;
    static const char *const PK[] = {"charges", "epsilon",    "delta",      "noise_multiplier",
                                     "steps",   "accountant", "delta_extra"};
    long fired[2] = {0, 0};

    /* 1. the privacy report, rendered once and stored with the job's view */
    for (long k = 1;; k++) {
        ck_assert_int_lt(k, 20000);
        oom_arm(k);
        json_t *o = pg_jobs_plan_json(&plan, &desc);
        oom_disarm();
        for (size_t f = 0; o && f < sizeof PK / sizeof *PK; f++)
            ck_assert_msg(json_object_get(o, PK[f]) != NULL,
                          "allocation %ld failed: a privacy report without %s", k, PK[f]);
        json_decref(o);
        if (!oom_hit) break;
        fired[0] += o == NULL;
    }

    /* 2. the job's view */
    job *j = calloc(1, sizeof *j);
    ck_assert_ptr_nonnull(j);
    snprintf(j->id, sizeof j->id, "job_oom");
    snprintf(j->dataset_id, sizeof j->dataset_id, "ds_oom");
    snprintf(j->method_name, sizeof j->method_name, "dp_sinkhorn");
    j->status = ST_SUCCEEDED;
    j->spec = json_object();
    j->plan = plan;
    j->desc = desc;
    j->privacy = pg_jobs_plan_json(&plan, &desc);
    ck_assert_ptr_nonnull(j->privacy);
    j->warnings = json_array();
    j->step = j->total = 20;
    j->hist_stride = 1;
    for (long i = 1; i <= 20; i++) j->hist[j->nhist++] = (hist_pt){i, 1.0 / (double)i, 0.1};
    j->ckpts = calloc(10, sizeof *j->ckpts);
    ck_assert_ptr_nonnull(j->ckpts);
    for (size_t i = 0; i < 10; i++)
        j->ckpts[i] =
            (pg_ckpt_row){.step = 2 * (int64_t)i + 2, .bytes = 100, .created_at = 1700000000};
    j->nckpts = j->ckcap = 10;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 1: a job whose report could not be rendered at submission
         * (j->privacy NULL) renders it from its plan, never shows {} */
        if (pass) {
            json_decref(j->privacy);
            j->privacy = NULL;
        }
        for (long k = 1;; k++) {
            ck_assert_int_lt(k, 20000);
            oom_arm(k);
            json_t *v = pg_jobs_job_json(j);
            oom_disarm();
            if (v) {
                ck_assert_msg(json_array_size(json_object_get(v, "history")) == 20,
                              "allocation %ld failed: a view with %zu of 20 history points", k,
                              json_array_size(json_object_get(v, "history")));
                ck_assert_msg(json_array_size(json_object_get(v, "checkpoints")) == 10,
                              "allocation %ld failed: a view with %zu of 10 checkpoints", k,
                              json_array_size(json_object_get(v, "checkpoints")));
                json_t *p = json_object_get(v, "privacy");
                for (size_t f = 0; f < sizeof PK / sizeof *PK; f++)
                    ck_assert_msg(json_object_get(p, PK[f]) != NULL,
                                  "allocation %ld failed: a view's privacy without %s", k, PK[f]);
            }
            json_decref(v);
            if (!oom_hit) break;
            fired[1] += v == NULL;
        }
    }
    for (int i = 0; i < 2; i++) ck_assert_int_gt(fired[i], 0);
    json_decref(j->spec);
    json_decref(j->privacy);
    json_decref(j->warnings);
    free(j->ckpts);
    free(j);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("datasets");
    TCase *t = tcase_create("datasets");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, create_refuses_or_stores_and_views_per_tenant);
    tcase_add_test(t, list_pages_walk_every_dataset_once_in_creation_order);
    tcase_add_test(t, upload_stores_exactly_what_it_committed);
    tcase_add_test(t, declared_upload_is_held_to_its_count_and_matched);
    tcase_add_test(t, out_of_memory_is_enomem_never_corrupt_or_partial);
    tcase_add_test(t, out_of_memory_lists_and_ledger_views_are_enomem_never_short);
    tcase_add_test(t, out_of_memory_job_views_are_null_never_partial);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
