/* The storage contract (service/store/db.h) against whichever backend
 * PRIVGEN_TEST_DB names (default: a fresh SQLite file): tokens, tenancy,
 * pagination, appends (all or nothing), reading rows, idempotency keys,
 * jobs, checkpoints, job history documents, job and checkpoint deletion,
 * and gauges. Backend-specific behaviour (files, schema
 * migrations of old data dirs) is in test_db_sqlite.c. */
#include <pthread.h>
#include <zlib.h>

#include "db_support.h"
#include "service/auth.h"

static void setup(void)
{
    pg_test_db_setup();
}

static void teardown(void)
{
    pg_test_db_teardown();
}

START_TEST(open_probe_version_and_bad_urls)
{
    pg_db *db = pg_test_db_open();
    int v = 0;
    ck_assert_int_eq(pg_db_schema_version(db, &v, NULL), PG_OK);
    ck_assert_int_ge(v, 1);
    ck_assert_int_eq(pg_db_probe(db, NULL), PG_OK);
    const char *name = pg_db_backend(db);
    ck_assert(!strcmp(name, "sqlite") || !strcmp(name, "postgres"));
    pg_db_close(db);
    /* Opening twice migrates nothing more. */
    db = pg_test_db_open();
    int v2 = 0;
    ck_assert_int_eq(pg_db_schema_version(db, &v2, NULL), PG_OK);
    ck_assert_int_eq(v2, v);
    pg_db_close(db);
    pg_error err = {0};
    ck_assert_int_eq(pg_db_open("mysql://x", NULL, &db, &err), PG_EINVAL);
    ck_assert_ptr_null(db);
    ck_assert_int_eq(pg_db_open("", NULL, &db, &err), PG_EINVAL);
    ck_assert_int_eq(pg_db_open("sqlite:", NULL, &db, &err), PG_EINVAL);
    /* The message of a refused URL never shows its password. */
    ck_assert_int_eq(pg_db_open("bogus://u:hunter2@h/db", NULL, &db, &err), PG_EINVAL);
    ck_assert_ptr_null(strstr(err.msg, "hunter2"));
}
END_TEST

START_TEST(url_redaction)
{
    static const char *const cases[][2] = {
        {"sqlite:/var/privgen.db", "sqlite:/var/privgen.db"},
        {"postgresql://u:secret@db.example:5432/privgen",
         "postgresql://u:***@db.example:5432/privgen"},
        {"postgres://u@host/db", "postgres://u@host/db"},
        {"postgresql://host/db?user=u&password=secret&sslmode=require",
         "postgresql://host/db?user=u&password=***&sslmode=require"},
        {"postgresql://u:p@ss@host/db?password=x", "postgresql://u:***@host/db?password=***"},
        {"postgresql:///db?host=/tmp/sock", "postgresql:///db?host=/tmp/sock"},
        {"postgresql://u:pw@/db?host=/run/pg", "postgresql://u:***@/db?host=/run/pg"},
        {"postgresql://h/db?xpassword=keep", "postgresql://h/db?xpassword=keep"},
        {"postgres://u:s3cret@%2Ftmp%2Fx/db?sslmode=disable",
         "postgres://u:***@%2Ftmp%2Fx/db?sslmode=disable"},
        {"postgresql://u@h/db?password=s3cret&application_name=a",
         "postgresql://u@h/db?password=***&application_name=a"},
        {"host=h password=s3cret dbname=d", "host=h password=*** dbname=d"},
        {"host=h password = 's3 \\'cret' dbname=d", "host=h password = *** dbname=d"},
        {"host=h passwordless=1", "host=h passwordless=1"},
        {"password=s3cret", "password=***"},
    };
    char out[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(pg_db_url_redact(cases[i][0], out, sizeof out), 0);
        ck_assert_str_eq(out, cases[i][1]);
    }
    /* Truncation still terminates and is reported; a tiny buffer never
     * leaks the start of a password. */
    char small[24];
    ck_assert_int_eq(pg_db_url_redact("postgresql://user:secretsecret@h/db", small, sizeof small),
                     -1);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
    ck_assert_ptr_null(strstr(small, "sec"));
    ck_assert_int_eq(pg_db_url_redact(NULL, out, sizeof out), 0);
    ck_assert_str_eq(out, "");
}
END_TEST

/* A token mints only while it is usable, as read inside the
 * insert's transaction; a mint by a revoked, expired or unknown token stores
 * nothing, and minted_by reads back. */
START_TEST(mint_by_a_revoked_token_stores_nothing)
{
    pg_db *db = pg_test_db_open();
    char tenant[PG_ID_MAX];
    pg_test_uid(tenant, sizeof tenant, "ten_");
    char tok[PG_TOKEN_MAX];
    pg_token a, b, c, got;
    ck_assert_int_eq(pg_auth_mint(db, PG_SCOPE_ADMIN, NULL, tok, &a, NULL), PG_OK);
    ck_assert_int_eq(pg_auth_mint(db, PG_SCOPE_ADMIN, a.tenant, tok, &b, NULL), PG_OK);
    /* b mints c: recorded */
    ck_assert_int_eq(pg_auth_mint_by(db, b.id, PG_SCOPE_READ, a.tenant, 0, tok, &c, NULL), PG_OK);
    int found;
    ck_assert_int_eq(pg_db_token_get(db, c.id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(got.minted_by, b.id);
    ck_assert_int_eq(pg_db_token_get(db, a.id, &got, &found, NULL), PG_OK);
    ck_assert_str_eq(got.minted_by, "");
    /* a token starting a new tenant: checked, not recorded */
    pg_token fresh;
    ck_assert_int_eq(pg_auth_mint_by(db, b.id, PG_SCOPE_ADMIN, NULL, 0, tok, &fresh, NULL), PG_OK);
    ck_assert_int_eq(pg_db_token_get(db, fresh.id, &got, &found, NULL), PG_OK);
    ck_assert_str_eq(got.minted_by, "");
    int last;
    ck_assert_int_eq(
        pg_db_token_revoke(db, a.tenant, b.id, (int64_t)time(NULL), &found, &last, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(last, 0);
    int64_t n0, n1;
    ck_assert_int_eq(pg_db_token_count(db, &n0, NULL), PG_OK);
    pg_error err = {0};
    /* in its tenant or a new one, revoked b mints nothing */
    ck_assert_int_eq(pg_auth_mint_by(db, b.id, PG_SCOPE_ADMIN, a.tenant, 0, tok, &got, &err),
                     PG_ESTATE);
    ck_assert_str_eq(tok, "");
    ck_assert_int_eq(pg_auth_mint_by(db, b.id, PG_SCOPE_ADMIN, NULL, 0, tok, &got, &err),
                     PG_ESTATE);
    ck_assert_int_eq(
        pg_auth_mint_by(db, "tok_0000000000000000", PG_SCOPE_ADMIN, a.tenant, 0, tok, &got, &err),
        PG_ESTATE);
    /* an expired minter neither (expired at the insert's created_at) */
    pg_token e = a;
    pg_test_uid(e.id, sizeof e.id, "tok_");
    e.created_at = (int64_t)time(NULL) - 100;
    e.expires_at = (int64_t)time(NULL) - 10;
    ck_assert_int_eq(pg_db_token_insert(db, &e, 0, NULL), PG_OK);
    ck_assert_int_eq(pg_auth_mint_by(db, e.id, PG_SCOPE_READ, a.tenant, 0, tok, &got, &err),
                     PG_ESTATE);
    ck_assert_int_eq(pg_db_token_count(db, &n1, NULL), PG_OK);
    ck_assert_int_eq(n1, n0 + 1); /* e only */
    (void)fresh;
    pg_db_close(db);
}
END_TEST

START_TEST(tokens_round_trip_and_tenant_atomicity)
{
    pg_db *db = pg_test_db_open();
    int64_t before, after;
    ck_assert_int_eq(pg_db_token_count(db, &before, NULL), PG_OK);
    char tenant[PG_ID_MAX];
    pg_test_uid(tenant, sizeof tenant, "ten_");
    pg_token t = {0}, got;
    pg_test_uid(t.id, sizeof t.id, "tok_");
    snprintf(t.tenant, sizeof t.tenant, "%s", tenant);
    t.scope = PG_SCOPE_ADMIN;
    for (int i = 0; i < 32; i++) t.hash[i] = (unsigned char)(i * 7 + 1);
    t.created_at = 1234567;
    ck_assert_int_eq(pg_db_token_insert(db, &t, 1, NULL), PG_OK);
    int found;
    ck_assert_int_eq(pg_db_token_get(db, t.id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(got.tenant, tenant);
    ck_assert_int_eq(got.scope, PG_SCOPE_ADMIN);
    ck_assert_mem_eq(got.hash, t.hash, 32);
    ck_assert_int_eq(got.created_at, 1234567);
    /* A second token of the same tenant (read scope). */
    pg_token r = t;
    pg_test_uid(r.id, sizeof r.id, "tok_");
    r.scope = PG_SCOPE_READ;
    ck_assert_int_eq(pg_db_token_insert(db, &r, 0, NULL), PG_OK);
    ck_assert_int_eq(pg_db_token_get(db, r.id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(got.scope, PG_SCOPE_READ);
    /* Creating an existing tenant fails and stores no token either. */
    pg_token dup = t;
    pg_test_uid(dup.id, sizeof dup.id, "tok_");
    pg_error err = {0};
    ck_assert_int_ne(pg_db_token_insert(db, &dup, 1, &err), PG_OK);
    ck_assert_int_eq(pg_db_token_get(db, dup.id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    /* The same id twice is refused. */
    ck_assert_int_ne(pg_db_token_insert(db, &r, 0, &err), PG_OK);
    ck_assert_int_eq(pg_db_token_get(db, "tok_nope", &got, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_token_count(db, &after, NULL), PG_OK);
    ck_assert_int_eq(after - before, 2);
    /* Minting through auth verifies against the stored hash only. */
    char tok[PG_TOKEN_MAX], hdr[96];
    pg_token rec, seen;
    int ok;
    ck_assert_int_eq(pg_auth_mint(db, PG_SCOPE_READ, tenant, tok, &rec, NULL), PG_OK);
    snprintf(hdr, sizeof hdr, "Bearer %s", tok);
    ck_assert_int_eq(pg_auth_verify(db, hdr, &seen, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 1);
    ck_assert_str_eq(seen.tenant, tenant);
    hdr[strlen(hdr) - 1] = hdr[strlen(hdr) - 1] == 'a' ? 'b' : 'a';
    ck_assert_int_eq(pg_auth_verify(db, hdr, &seen, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 0);
    pg_db_close(db);
}
END_TEST

/* Appends rows (values v0, v0+1, ...) of width 2, committing. */
static int64_t append_rows(pg_db *db, const char *tenant, const char *id, size_t rows, float v0,
                           int labeled, int64_t max_rows, int *rc_out)
{
    pg_db_append *a;
    ck_assert_int_eq(pg_db_append_begin(db, tenant, id, 2, &a, NULL), PG_OK);
    float x[400];
    int32_t lab[200];
    ck_assert_uint_le(rows, 200);
    for (size_t i = 0; i < rows * 2; i++) x[i] = v0 + (float)i;
    for (size_t i = 0; i < rows; i++) lab[i] = (int32_t)i;
    /* Split across calls at odd places: the appender takes any split. */
    size_t cut = rows * 2 > 3 ? 3 : rows * 2;
    ck_assert_int_eq(pg_db_append_write(a, x, cut, NULL), PG_OK);
    ck_assert_int_eq(pg_db_append_write(a, x + cut, rows * 2 - cut, NULL), PG_OK);
    int found;
    int64_t added = -1, n = -1;
    pg_error err = {0};
    int rc = pg_db_append_commit(a, labeled ? lab : NULL, max_rows, &found, &added, &n, &err);
    if (rc_out)
        *rc_out = rc ? rc : found ? PG_OK : -1;
    else
        ck_assert_msg(rc == PG_OK && found, "append: %d %s", rc, err.msg);
    if (!rc && found) ck_assert_int_eq(added, (int64_t)rows);
    return n;
}

static int64_t rows_of(pg_db *db, const char *tenant, const char *id)
{
    pg_db_dataset d;
    int found;
    ck_assert_int_eq(pg_db_dataset_get(db, tenant, id, &d, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    int64_t n = d.n;
    pg_db_dataset_free(&d);
    return n;
}

static void admit_free_job(pg_db *db, const char *tenant, const char *ds, char *job_id)
{
    pg_test_uid(job_id, PG_ID_MAX, "job_");
    pg_test_job_admit(db, tenant, ds, job_id, "{\"k\":1}");
}

START_TEST(datasets_tenancy_pagination_append_delete)
{
    pg_db *db = pg_test_db_open();
    char ta[PG_ID_MAX], tb[PG_ID_MAX], ids[5][PG_ID_MAX], idb[PG_ID_MAX];
    pg_test_uid(ta, sizeof ta, "ten_");
    pg_test_uid(tb, sizeof tb, "ten_");
    pg_db_gauges g0, g1;
    ck_assert_int_eq(pg_db_gauges_get(db, &g0, NULL), PG_OK);
    for (int i = 0; i < 5; i++) {
        pg_test_uid(ids[i], sizeof ids[i], "ds_");
        pg_test_dataset(db, ta, ids[i], 2);
    }
    pg_test_uid(idb, sizeof idb, "ds_");
    pg_test_dataset(db, tb, idb, 2);
    pg_db_dataset d, *list;
    size_t n;
    int found, conflict;
    ck_assert_int_eq(pg_db_dataset_get(db, tb, ids[0], &d, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_dataset_get(db, ta, ids[0], &d, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(d.name, "n");
    ck_assert_str_eq(d.meta, "{}");
    ck_assert_int_eq(d.d, 2);
    ck_assert_int_eq(d.n, 0);
    pg_db_dataset_free(&d);
    /* Hostile ids are simply not found. */
    ck_assert_int_eq(pg_db_dataset_get(db, ta, "../etc", &d, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    /* pages of 2 over tenant a: 2 + 2 + 1, in creation order */
    int64_t after = 0;
    int seen = 0;
    for (int page = 0; page < 3; page++) {
        ck_assert_int_eq(pg_db_dataset_list(db, ta, after, 2, &list, &n, NULL), PG_OK);
        ck_assert_uint_eq(n, page < 2 ? 2 : 1);
        for (size_t i = 0; i < n; i++) ck_assert_str_eq(list[i].id, ids[seen++]);
        after = list[n - 1].seq;
        pg_db_dataset_list_free(list, n);
    }
    ck_assert_int_eq(pg_db_dataset_list(db, ta, after, 2, &list, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 0);
    /* append: two blocks, then one that would exceed max_rows */
    ck_assert_int_eq(append_rows(db, ta, ids[1], 10, 0.0f, 0, 25, NULL), 10);
    ck_assert_int_eq(append_rows(db, ta, ids[1], 10, 0.0f, 0, 25, NULL), 20);
    int rc;
    append_rows(db, ta, ids[1], 10, 0.0f, 0, 25, &rc);
    ck_assert_int_eq(rc, PG_ERANGE);
    ck_assert_int_eq(rows_of(db, ta, ids[1]), 20);
    /* another tenant cannot append */
    append_rows(db, tb, ids[1], 1, 0.0f, 0, 25, &rc);
    ck_assert_int_eq(rc, -1);
    ck_assert_int_eq(rows_of(db, ta, ids[1]), 20);
    ck_assert_int_eq(pg_db_dataset_get(db, ta, ids[1], &d, &found, NULL), PG_OK);
    ck_assert_int_eq(d.blocks, 2);
    ck_assert_int_eq(d.bytes, 2 * (32 + 10 * 2 * 4));
    pg_db_dataset_free(&d);
    ck_assert_int_eq(pg_db_gauges_get(db, &g1, NULL), PG_OK);
    ck_assert_int_eq(g1.datasets - g0.datasets, 6);
    ck_assert_int_eq(g1.rows - g0.rows, 20);
    ck_assert_int_eq(g1.bytes - g0.bytes, 2 * (32 + 80));
    /* delete: blocked by a running job, allowed once it is done */
    char job[PG_ID_MAX];
    pg_test_jobs_drain(db);
    admit_free_job(db, ta, ids[1], job);
    pg_test_job_claim(db, "w:1", job);
    ck_assert_int_eq(pg_db_dataset_delete(db, tb, ids[1], &found, &conflict, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_dataset_delete(db, ta, ids[1], &found, &conflict, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(conflict, 1);
    ck_assert_int_eq(rows_of(db, ta, ids[1]), 20);
    pg_test_job_end(db, job, "w:1", "succeeded", NULL);
    ck_assert_int_eq(pg_db_dataset_delete(db, ta, ids[1], &found, &conflict, NULL), PG_OK);
    ck_assert_int_eq(found && !conflict, 1);
    ck_assert_int_eq(pg_db_dataset_get(db, ta, ids[1], &d, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    /* its rows are gone with it */
    pg_block all;
    int labeled;
    ck_assert_int_eq(pg_db_rows_load(db, ids[1], 2, 1 << 20, &all, &labeled, NULL), PG_OK);
    ck_assert_uint_eq(all.n, 0);
    pg_block_free(&all);
    ck_assert_int_eq(pg_db_gauges_get(db, &g1, NULL), PG_OK);
    ck_assert_int_eq(g1.rows - g0.rows, 0);
    pg_db_close(db);
}
END_TEST

START_TEST(append_is_all_or_nothing)
{
    pg_db *db = pg_test_db_open();
    char t[PG_ID_MAX], id[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    pg_test_uid(id, sizeof id, "ds_");
    pg_test_dataset(db, t, id, 2);
    ck_assert_int_eq(append_rows(db, t, id, 3, 0.0f, 1, 100, NULL), 3);
    /* abort after writing: nothing visible, n unchanged */
    pg_db_append *a;
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ck_assert_int_eq(pg_db_append_begin(db, t, id, 2, &a, NULL), PG_OK);
    ck_assert_int_eq(pg_db_append_write(a, x, 8, NULL), PG_OK);
    pg_db_append_abort(a);
    ck_assert_int_eq(rows_of(db, t, id), 3);
    /* values that are not whole rows fail the commit and change nothing */
    ck_assert_int_eq(pg_db_append_begin(db, t, id, 2, &a, NULL), PG_OK);
    ck_assert_int_eq(pg_db_append_write(a, x, 3, NULL), PG_OK);
    int found;
    int64_t added, n;
    ck_assert_int_eq(pg_db_append_commit(a, NULL, 100, &found, &added, &n, NULL), PG_EINVAL);
    ck_assert_int_eq(rows_of(db, t, id), 3);
    /* a dataset deleted while the upload streamed: not found, nothing kept */
    char gone[PG_ID_MAX];
    pg_test_uid(gone, sizeof gone, "ds_");
    pg_test_dataset(db, t, gone, 2);
    ck_assert_int_eq(pg_db_append_begin(db, t, gone, 2, &a, NULL), PG_OK);
    ck_assert_int_eq(pg_db_append_write(a, x, 4, NULL), PG_OK);
    int conflict;
    ck_assert_int_eq(pg_db_dataset_delete(db, t, gone, &found, &conflict, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    int rc = pg_db_append_commit(a, NULL, 100, &found, &added, &n, NULL);
    ck_assert(rc != PG_OK || found == 0);
    ck_assert_int_eq(pg_db_dataset_get(db, t, gone, &(pg_db_dataset){0}, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    /* an empty append commits zero rows */
    ck_assert_int_eq(pg_db_append_begin(db, t, id, 2, &a, NULL), PG_OK);
    ck_assert_int_eq(pg_db_append_commit(a, NULL, 100, &found, &added, &n, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(added, 0);
    ck_assert_int_eq(n, 3);
    /* the committed rows read back exactly, labels included */
    pg_block all;
    int labeled;
    ck_assert_int_eq(pg_db_rows_load(db, id, 2, 1 << 20, &all, &labeled, NULL), PG_OK);
    ck_assert_uint_eq(all.n, 3);
    ck_assert_int_eq(labeled, 1);
    const float want[6] = {0, 1, 2, 3, 4, 5};
    ck_assert_mem_eq(all.x, want, sizeof want);
    ck_assert(all.labels[0] == 0 && all.labels[1] == 1 && all.labels[2] == 2);
    pg_block_free(&all);
    /* invalid arguments are refused before anything starts */
    ck_assert_int_eq(pg_db_append_begin(db, t, id, 0, &a, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_db_append_begin(db, t, "../x", 2, &a, NULL), PG_EINVAL);
    pg_db_close(db);
}
END_TEST

START_TEST(rows_snapshot_concatenates_blocks)
{
    pg_db *db = pg_test_db_open();
    char t[PG_ID_MAX], id[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    pg_test_uid(id, sizeof id, "ds_");
    pg_test_dataset(db, t, id, 2);
    int labeled;
    pg_block all;
    ck_assert_int_eq(pg_db_rows_load(db, id, 2, 1 << 20, &all, &labeled, NULL), PG_OK);
    ck_assert_uint_eq(all.n, 0);
    pg_block_free(&all);
    append_rows(db, t, id, 3, 0.0f, 1, 100, NULL);
    append_rows(db, t, id, 2, 100.0f, 1, 100, NULL);
    ck_assert_int_eq(pg_db_rows_load(db, id, 2, 1 << 20, &all, &labeled, NULL), PG_OK);
    ck_assert_uint_eq(all.n, 5);
    ck_assert_int_eq(labeled, 1);
    const float want[10] = {0, 1, 2, 3, 4, 5, 100, 101, 102, 103};
    ck_assert_mem_eq(all.x, want, sizeof want);
    ck_assert(all.labels[0] == 0 && all.labels[2] == 2 && all.labels[3] == 0 && all.labels[4] == 1);
    pg_block_free(&all);
    /* the block iterator is a snapshot: a block appended meanwhile is unseen */
    pg_db_blocks *it;
    size_t nb;
    ck_assert_int_eq(pg_db_blocks_open(db, id, &it, &nb, NULL), PG_OK);
    ck_assert_uint_eq(nb, 2);
    append_rows(db, t, id, 1, 7.0f, 0, 100, NULL);
    pg_block b;
    int end;
    size_t got = 0;
    for (;;) {
        ck_assert_int_eq(pg_db_blocks_next(it, 1 << 20, &b, &end, NULL), PG_OK);
        if (end) break;
        ck_assert_uint_eq(b.d, 2);
        ck_assert_uint_eq(b.n, got == 0 ? 3 : 2);
        ck_assert(b.labels != NULL);
        got++;
        pg_block_free(&b);
    }
    ck_assert_uint_eq(got, 2);
    pg_db_blocks_close(it);
    /* an unlabeled block drops labels from the snapshot */
    ck_assert_int_eq(pg_db_rows_load(db, id, 2, 1 << 20, &all, &labeled, NULL), PG_OK);
    ck_assert_uint_eq(all.n, 6);
    ck_assert_int_eq(labeled, 0);
    ck_assert_ptr_null(all.labels);
    ck_assert(all.x[10] == 7.0f && all.x[11] == 8.0f);
    pg_block_free(&all);
    /* byte budget and a wrong width are errors, leaving no output */
    ck_assert_int_eq(pg_db_rows_load(db, id, 2, 40, &all, &labeled, NULL), PG_ENOMEM);
    ck_assert_ptr_null(all.x);
    ck_assert_int_eq(pg_db_rows_load(db, id, 3, 1 << 20, &all, &labeled, NULL), PG_EFORMAT);
    ck_assert_ptr_null(all.x);
    pg_db_close(db);
}
END_TEST

/* pg_db_rows_pass: the rows pg_db_rows_load gives, cut into chunks, for
 * every chunk size, the first n only, with or without labels. */
typedef struct passed {
    float x[64];
    int32_t lab[32];
    size_t rows, max_rows;
    int null_labels;
} passed;

static int passed_fn(void *ctx, const float *x, const int32_t *labels, size_t rows, pg_error *err)
{
    (void)err;
    passed *p = ctx;
    ck_assert_uint_le(p->rows + rows, 32);
    memcpy(p->x + 2 * p->rows, x, 2 * rows * sizeof *x);
    if (labels)
        memcpy(p->lab + p->rows, labels, rows * sizeof *labels);
    else
        p->null_labels = 1;
    p->rows += rows;
    if (rows > p->max_rows) p->max_rows = rows;
    return PG_OK;
}

START_TEST(rows_pass_streams_the_planned_rows)
{
    pg_db *db = pg_test_db_open();
    char t[PG_ID_MAX], id[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    pg_test_uid(id, sizeof id, "ds_");
    pg_test_dataset(db, t, id, 2);
    append_rows(db, t, id, 3, 0.0f, 1, 100, NULL);
    append_rows(db, t, id, 5, 100.0f, 1, 100, NULL);
    append_rows(db, t, id, 2, 200.0f, 1, 100, NULL);
    int labeled;
    pg_block all;
    ck_assert_int_eq(pg_db_rows_load(db, id, 2, 1 << 20, &all, &labeled, NULL), PG_OK);
    ck_assert_uint_eq(all.n, 10);
    size_t chunks[] = {1, 2, 3, 4, 9, 10, 64};
    uint64_t ns[] = {10, 9, 4, 3, 1};
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++)
        for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
            passed p = {0};
            pg_error err = {0};
            ck_assert_msg(pg_db_rows_pass(db, id, 2, ns[k], 1, chunks[c], 1 << 20, passed_fn, &p,
                                          &err) == PG_OK,
                          "%s", err.msg);
            ck_assert_uint_eq(p.rows, ns[k]);
            ck_assert_uint_le(p.max_rows, chunks[c]);
            ck_assert(!p.null_labels);
            ck_assert_mem_eq(p.x, all.x, 2 * ns[k] * sizeof *all.x);
            ck_assert_mem_eq(p.lab, all.labels, ns[k] * sizeof *all.labels);
        }
    passed p = {0};
    ck_assert_int_eq(pg_db_rows_pass(db, id, 2, 10, 0, 4, 1 << 20, passed_fn, &p, NULL), PG_OK);
    ck_assert(p.null_labels);
    /* more rows than stored, another width, a bad id */
    pg_error err = {0};
    memset(&p, 0, sizeof p);
    ck_assert_int_eq(pg_db_rows_pass(db, id, 2, 11, 1, 4, 1 << 20, passed_fn, &p, &err), PG_ESTATE);
    ck_assert_int_eq(pg_db_rows_pass(db, id, 3, 10, 1, 4, 1 << 20, passed_fn, &p, NULL),
                     PG_EFORMAT);
    ck_assert_int_eq(pg_db_rows_pass(db, "../x", 2, 10, 1, 4, 1 << 20, passed_fn, &p, NULL),
                     PG_EINVAL);
    /* an unlabelled block where labels are needed */
    append_rows(db, t, id, 1, 7.0f, 0, 100, NULL);
    memset(&p, 0, sizeof p);
    ck_assert_int_eq(pg_db_rows_pass(db, id, 2, 10, 1, 4, 1 << 20, passed_fn, &p, NULL), PG_OK);
    memset(&p, 0, sizeof p);
    ck_assert_int_eq(pg_db_rows_pass(db, id, 2, 11, 1, 4, 1 << 20, passed_fn, &p, NULL), PG_EINVAL);
    memset(&p, 0, sizeof p);
    ck_assert_int_eq(pg_db_rows_pass(db, id, 2, 11, 0, 4, 1 << 20, passed_fn, &p, NULL), PG_OK);
    ck_assert(p.x[20] == 7.0f && p.x[21] == 8.0f);
    pg_block_free(&all);
    pg_db_close(db);
}
END_TEST

/* Blocks of several megabytes (PostgreSQL cuts them into 1 MiB chunks: the
 * labels start inside a chunk of values and span chunks), passed in windows
 * that straddle chunks: the same rows and labels as pg_db_rows_load. */
typedef struct big_pass {
    const pg_block *all;
    size_t rows, d;
} big_pass;

static int big_fn(void *ctx, const float *x, const int32_t *labels, size_t rows, pg_error *err)
{
    (void)err;
    big_pass *p = ctx;
    ck_assert_ptr_nonnull(labels);
    ck_assert(!memcmp(x, p->all->x + p->rows * p->d, rows * p->d * sizeof *x));
    ck_assert(!memcmp(labels, p->all->labels + p->rows, rows * sizeof *labels));
    p->rows += rows;
    return PG_OK;
}

START_TEST(rows_pass_of_large_blocks)
{
    pg_db *db = pg_test_db_open();
    char t[PG_ID_MAX], id[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    pg_test_uid(id, sizeof id, "ds_");
    const size_t d = 3;
    pg_test_dataset(db, t, id, d);
    size_t sizes[] = {300007, 70001};
    size_t total = 0;
    for (int k = 0; k < 2; k++) {
        size_t n = sizes[k];
        float *x = malloc(n * d * sizeof *x);
        int32_t *lab = malloc(n * sizeof *lab);
        for (size_t i = 0; i < n * d; i++) x[i] = (float)(i % 100003) + 0.25f * (float)k;
        for (size_t i = 0; i < n; i++) lab[i] = (int32_t)((i * 7 + (size_t)k) % 5);
        pg_db_append *a;
        ck_assert_int_eq(pg_db_append_begin(db, t, id, d, &a, NULL), PG_OK);
        for (size_t at = 0; at < n * d; at += 65536)
            ck_assert_int_eq(
                pg_db_append_write(a, x + at, n * d - at < 65536 ? n * d - at : 65536, NULL),
                PG_OK);
        int found;
        int64_t added, nn;
        ck_assert_int_eq(pg_db_append_commit(a, lab, 10000000, &found, &added, &nn, NULL), PG_OK);
        ck_assert_int_eq(found, 1);
        total += n;
        free(x);
        free(lab);
    }
    int labeled;
    pg_block all;
    ck_assert_int_eq(pg_db_rows_load(db, id, d, 1 << 26, &all, &labeled, NULL), PG_OK);
    ck_assert_uint_eq(all.n, total);
    size_t chunks[] = {4096, 1000, 7};
    size_t ns[] = {total, 300007 + 5, 123456};
    for (size_t c = 0; c < 3; c++) {
        big_pass p = {.all = &all, .d = d};
        pg_error err = {0};
        ck_assert_msg(pg_db_rows_pass(db, id, d, ns[c], 1, chunks[c], 1 << 26, big_fn, &p, &err) ==
                          PG_OK,
                      "%s", err.msg);
        ck_assert_uint_eq(p.rows, ns[c]);
    }
    pg_block_free(&all);
    pg_db_close(db);
}
END_TEST

START_TEST(idempotency_records)
{
    pg_db *db = pg_test_db_open();
    char t[PG_ID_MAX], other[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    pg_test_uid(other, sizeof other, "ten_");
    unsigned char fp1[32] = {1}, fp2[32] = {2};
    pg_idem_response r = {201, "/v1/datasets/x", "{\"a\":1}", 7}, got;
    int state;
    ck_assert_int_eq(pg_db_idem_begin(db, t, "tok_a", "k", fp1, &state, &got, NULL), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    /* while the first runs, a retry is told so; a different body is refused */
    pg_db_idem_begin(db, t, "tok_a", "k", fp1, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_BUSY);
    pg_db_idem_begin(db, t, "tok_a", "k", fp2, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_MISMATCH);
    ck_assert_int_eq(pg_db_idem_finish(db, t, "tok_a", "k", &r, NULL), PG_OK);
    /* the replay returns the first response, byte for byte */
    ck_assert_int_eq(pg_db_idem_begin(db, t, "tok_a", "k", fp1, &state, &got, NULL), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_REPLAY);
    ck_assert_int_eq(got.status, 201);
    ck_assert_str_eq(got.location, "/v1/datasets/x");
    ck_assert_uint_eq(got.body_len, 7);
    ck_assert_str_eq(got.body, "{\"a\":1}");
    pg_idem_free(&got);
    /* a stored response is never overwritten */
    pg_idem_response r2 = {200, NULL, "{}", 2};
    ck_assert_int_eq(pg_db_idem_finish(db, t, "tok_a", "k", &r2, NULL), PG_OK);
    pg_db_idem_begin(db, t, "tok_a", "k", fp1, &state, &got, NULL);
    ck_assert_int_eq(got.status, 201);
    pg_idem_free(&got);
    pg_db_idem_begin(db, t, "tok_a", "k", fp2, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_MISMATCH);
    /* keys belong to a token: another token of the same tenant using the
     * key, with the same request or another, neither replays the first
     * response nor learns the key was used */
    pg_db_idem_begin(db, t, "tok_b", "k", fp1, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    ck_assert_int_eq(pg_db_idem_finish(db, t, "tok_b", "k", NULL, NULL), PG_OK);
    pg_db_idem_begin(db, t, "tok_b", "k", fp2, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    ck_assert_int_eq(pg_db_idem_finish(db, t, "tok_b", "k", NULL, NULL), PG_OK);
    /* ... and the first token still replays its own */
    ck_assert_int_eq(pg_db_idem_begin(db, t, "tok_a", "k", fp1, &state, &got, NULL), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_REPLAY);
    pg_idem_free(&got);
    /* keys are per tenant; a released reservation is free again */
    pg_db_idem_begin(db, other, "tok_a", "k", fp2, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    ck_assert_int_eq(pg_db_idem_finish(db, other, "tok_a", "k", NULL, NULL), PG_OK);
    pg_db_idem_begin(db, other, "tok_a", "k", fp1, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    /* binary bodies with NUL bytes and no location survive */
    pg_idem_response bin = {202, NULL, "a\0b", 3};
    ck_assert_int_eq(pg_db_idem_finish(db, other, "tok_a", "k", &bin, NULL), PG_OK);
    pg_db_idem_begin(db, other, "tok_a", "k", fp1, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_REPLAY);
    ck_assert_ptr_null(got.location);
    ck_assert_uint_eq(got.body_len, 3);
    ck_assert_mem_eq(got.body, "a\0b", 3);
    pg_idem_free(&got);
    pg_db_close(db);
}
END_TEST

typedef struct idem_racer {
    pg_db *db;
    const char *tenant;
    int state, rc;
    pthread_barrier_t *bar;
} idem_racer;

static void *idem_race(void *arg)
{
    idem_racer *r = arg;
    unsigned char fp[32] = {9};
    pg_idem_response prev;
    pthread_barrier_wait(r->bar);
    r->rc = pg_db_idem_begin(r->db, r->tenant, "tok_a", "race", fp, &r->state, &prev, NULL);
    if (!r->rc) pg_idem_free(&prev);
    return NULL;
}

START_TEST(concurrent_idempotency_begins_reserve_once)
{
    enum { N = 8 };
    pg_db *dbs[N];
    char t[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    for (int i = 0; i < N; i++) dbs[i] = pg_test_db_open();
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, N);
    idem_racer rs[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        rs[i] = (idem_racer){dbs[i], t, 0, 0, &bar};
        pthread_create(&th[i], NULL, idem_race, &rs[i]);
    }
    int fresh = 0, busy = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(rs[i].rc, PG_OK);
        fresh += rs[i].state == PG_IDEM_NEW;
        busy += rs[i].state == PG_IDEM_BUSY;
    }
    pthread_barrier_destroy(&bar);
    ck_assert_int_eq(fresh, 1);
    ck_assert_int_eq(busy, N - 1);
    for (int i = 0; i < N; i++) pg_db_close(dbs[i]);
}
END_TEST

START_TEST(jobs_round_trip)
{
    pg_db *db = pg_test_db_open();
    char t[PG_ID_MAX], ds[PG_ID_MAX], pub[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    pg_test_uid(ds, sizeof ds, "ds_");
    pg_test_uid(pub, sizeof pub, "ds_");
    pg_test_dataset(db, t, ds, 2);
    pg_test_dataset(db, t, pub, 2);
    pg_test_jobs_drain(db);
    pg_job_row row;
    pg_test_job_row(&row, t, ds, "job_");
    snprintf(row.method, sizeof row.method, "swd_flow");
    snprintf(row.public_dataset_id, sizeof row.public_dataset_id, "%s", pub);
    row.public_n = 17;
    row.data_n = 42;
    row.spec = "{\"method\":\"swd_flow\"}";
    pg_privacy_plan none;
    memset(&none, 0, sizeof none);
    pg_ledger_quote q;
    ck_assert_int_eq(pg_db_job_admit(db, &row, &none, 1.0, 1e-5, &q, NULL), PG_OK);
    ck_assert_int_eq(q.admit, 1);
    ck_assert(row.seq > 0);
    ck_assert(row.created_at > 0);
    ck_assert_str_eq(row.status, "queued");
    /* a second job without public data */
    pg_job_row row2 = row;
    pg_test_uid(row2.id, sizeof row2.id, "job_");
    row2.public_dataset_id[0] = '\0';
    row2.public_n = 0;
    ck_assert_int_eq(pg_db_job_admit(db, &row2, &none, 1.0, 1e-5, &q, NULL), PG_OK);
    ck_assert(row2.seq > row.seq);
    pg_test_job_claim(db, "w:1", row.id);
    pg_test_job_patch(db, row.id, "w:1", (pg_job_patch){.step = -1, .steps_reserved = 50});
    pg_test_job_patch(db, row.id, "w:1", (pg_job_patch){.step = 40, .steps_reserved = -1});
    pg_test_job_claim(db, "w:2", row2.id);
    pg_test_job_end(db, row2.id, "w:2", "failed", "boom \"quoted\"");
    pg_job_row *rows;
    size_t n;
    ck_assert_int_eq(pg_db_job_load_all(db, &rows, &n, NULL), PG_OK);
    const pg_job_row *a = NULL, *b = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(rows[i].id, row.id)) a = &rows[i];
        if (!strcmp(rows[i].id, row2.id)) b = &rows[i];
        if (i) ck_assert(rows[i].seq > rows[i - 1].seq); /* oldest first */
    }
    ck_assert(a && b);
    ck_assert_str_eq(a->tenant, t);
    ck_assert_str_eq(a->dataset_id, ds);
    ck_assert_str_eq(a->method, "swd_flow");
    ck_assert_str_eq(a->status, "running");
    ck_assert_str_eq(a->spec, "{\"method\":\"swd_flow\"}");
    ck_assert_ptr_null(a->error);
    ck_assert(a->started_at > 0 && a->finished_at == 0);
    ck_assert_int_eq(a->step, 40);
    ck_assert_int_eq(a->steps_reserved, 50);
    ck_assert_int_eq(a->data_n, 42);
    ck_assert_str_eq(a->public_dataset_id, pub);
    ck_assert_int_eq(a->public_n, 17);
    ck_assert_str_eq(a->owner, "w:1");
    ck_assert_str_eq(b->status, "failed");
    ck_assert_str_eq(b->error, "boom \"quoted\"");
    ck_assert(b->finished_at > 0);
    ck_assert_str_eq(b->public_dataset_id, "");
    pg_job_rows_free(rows, n);
    /* the public dataset is in use while the job runs */
    int found, conflict;
    ck_assert_int_eq(pg_db_dataset_delete(db, t, pub, &found, &conflict, NULL), PG_OK);
    ck_assert_int_eq(conflict, 1);
    /* admission against a missing dataset writes nothing */
    pg_job_row orphan = row2;
    pg_test_uid(orphan.id, sizeof orphan.id, "job_");
    pg_test_uid(orphan.dataset_id, sizeof orphan.dataset_id, "ds_");
    pg_error err = {0};
    ck_assert_int_eq(pg_db_job_admit(db, &orphan, &none, 1.0, 1e-5, &q, &err), PG_ESTATE);
    ck_assert_int_eq(pg_db_job_load_all(db, &rows, &n, NULL), PG_OK);
    for (size_t i = 0; i < n; i++) ck_assert_str_ne(rows[i].id, orphan.id);
    pg_job_rows_free(rows, n);
    pg_db_close(db);
}
END_TEST

START_TEST(checkpoints_round_trip)
{
    pg_db *db = pg_test_db_open();
    char t[PG_ID_MAX], ds[PG_ID_MAX], job[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    pg_test_uid(ds, sizeof ds, "ds_");
    pg_test_dataset(db, t, ds, 2);
    pg_test_jobs_drain(db);
    admit_free_job(db, t, ds, job);
    pg_test_job_claim(db, "w:1", job);
    pg_ckpt_row *rows;
    size_t n;
    ck_assert_int_eq(pg_db_ckpt_list(db, job, &rows, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 0);
    free(rows);
    /* a checkpoint larger than one storage chunk, and a small one */
    size_t big = (3u << 20) + 12345;
    unsigned char *blob = malloc(big);
    for (size_t i = 0; i < big; i++) blob[i] = (unsigned char)(i * 2654435761u >> 13);
    uint32_t crc = (uint32_t)crc32(0L, blob, (uInt)big);
    ck_assert_int_eq(pg_test_ckpt_put(db, job, "w:1", 20, blob, big, crc), PG_OK);
    const unsigned char small[5] = {1, 2, 3, 0, 5};
    ck_assert_int_eq(pg_test_ckpt_put(db, job, "w:1", 10, small, 5, (uint32_t)crc32(0L, small, 5)),
                     PG_OK);
    ck_assert_int_eq(pg_db_ckpt_list(db, job, &rows, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(rows[0].step, 10);
    ck_assert_int_eq(rows[0].bytes, 5);
    ck_assert_int_eq(rows[1].step, 20);
    ck_assert_int_eq(rows[1].bytes, (int64_t)big);
    ck_assert(rows[1].created_at > 0);
    free(rows);
    unsigned char *got;
    size_t len;
    int found;
    ck_assert_int_eq(pg_db_ckpt_get(db, job, 20, (size_t)1 << 30, &got, &len, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_uint_eq(len, big);
    ck_assert(memcmp(got, blob, big) == 0);
    free(got);
    /* rewriting a step replaces it */
    ck_assert_int_eq(pg_test_ckpt_put(db, job, "w:1", 20, small, 5, (uint32_t)crc32(0L, small, 5)),
                     PG_OK);
    ck_assert_int_eq(pg_db_ckpt_get(db, job, 20, 1 << 20, &got, &len, &found, NULL), PG_OK);
    ck_assert_uint_eq(len, 5);
    ck_assert_mem_eq(got, small, 5);
    free(got);
    ck_assert_int_eq(pg_db_ckpt_list(db, job, &rows, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 2);
    free(rows);
    /* missing step, unknown job, over the byte cap */
    ck_assert_int_eq(pg_db_ckpt_get(db, job, 30, 1 << 20, &got, &len, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_ckpt_get(db, "job_none", 10, 1 << 20, &got, &len, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_ckpt_get(db, job, 10, 4, &got, &len, &found, NULL), PG_ENOMEM);
    ck_assert_ptr_null(got);
    /* a wrong CRC at put time is caught at get time */
    ck_assert_int_eq(pg_test_ckpt_put(db, job, "w:1", 40, small, 5, 12345u), PG_OK);
    ck_assert_int_eq(pg_db_ckpt_get(db, job, 40, 1 << 20, &got, &len, &found, NULL), PG_EFORMAT);
    ck_assert_ptr_null(got);
    free(blob);
    pg_db_close(db);
}
END_TEST

START_TEST(job_history_and_deletion)
{
    pg_db *db = pg_test_db_open();
    char t[PG_ID_MAX], ds[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    pg_test_uid(ds, sizeof ds, "ds_");
    pg_test_dataset(db, t, ds, 2);
    pg_job_row row;
    pg_test_job_row(&row, t, ds, "job_");
    snprintf(row.method, sizeof row.method, "dp_sinkhorn");
    row.data_n = 10;
    /* a charging plan, so the job has a ledger row that must outlive it */
    pg_privacy_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.charges = 1;
    plan.noise_multiplier = 2;
    plan.sampling_rate = 0.1;
    plan.steps = 10;
    plan.epsilon = 0.5;
    plan.delta = 1e-6;
    plan.norders = 2;
    plan.orders[0] = 2;
    plan.orders[1] = 8;
    plan.rdp[0] = 0.05;
    plan.rdp[1] = 0.2;
    snprintf(plan.mechanism, sizeof plan.mechanism, "poisson_subsampled_gaussian");
    pg_ledger_quote q;
    pg_test_jobs_drain(db);
    ck_assert_int_eq(pg_db_job_admit(db, &row, &plan, 100.0, 1e-5, &q, NULL), PG_OK);
    ck_assert_int_eq(q.admit, 1);

    /* a queued job is not deleted */
    char *doc;
    int found, conflict, held;
    ck_assert_int_eq(pg_db_job_delete(db, row.id, &found, &conflict, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(conflict, 1);

    /* history: none, then written by the job's owner, then replaced (text
     * kept byte for byte) */
    pg_test_job_claim(db, "w:1", row.id);
    ck_assert_int_eq(pg_db_job_history_get(db, row.id, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_ptr_null(doc);
    const char *d1 = "{\"v\":1,\"loss\":0.10000000000000001,\"s\":\"\\u00e9 '\\\"\"}";
    ck_assert_int_eq(pg_db_job_history_put_owned(db, row.id, "w:1", d1, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    ck_assert_int_eq(pg_db_job_history_get(db, row.id, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(doc, d1);
    free(doc);
    ck_assert_int_eq(pg_db_job_history_put_owned(db, row.id, "w:1", "{\"v\":2}", &held, NULL),
                     PG_OK);
    ck_assert_int_eq(held, 1);
    ck_assert_int_eq(pg_db_job_history_get(db, row.id, &doc, &found, NULL), PG_OK);
    ck_assert_str_eq(doc, "{\"v\":2}");
    free(doc);
    /* a malformed id names no job: nothing is stored */
    ck_assert_int_eq(pg_db_job_history_put_owned(db, "bad id!", "w:1", "{}", &held, NULL), PG_OK);
    ck_assert_int_eq(held, 0);

    /* checkpoints: one deleted, the others kept; deleting a missing one is fine */
    const unsigned char b[3] = {1, 2, 3};
    uint32_t crc = (uint32_t)crc32(0L, b, 3);
    for (int64_t s = 10; s <= 30; s += 10)
        ck_assert_int_eq(pg_test_ckpt_put(db, row.id, "w:1", s, b, 3, crc), PG_OK);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(pg_db_ckpt_delete_owned(db, row.id, "w:1", i < 2 ? 20 : 99, &held, NULL),
                         PG_OK);
        ck_assert_int_eq(held, 1);
    }
    pg_ckpt_row *ck;
    size_t n;
    ck_assert_int_eq(pg_db_ckpt_list(db, row.id, &ck, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(ck[0].step, 10);
    ck_assert_int_eq(ck[1].step, 30);
    free(ck);
    unsigned char *got;
    size_t len;
    ck_assert_int_eq(pg_db_ckpt_get(db, row.id, 20, 1 << 20, &got, &len, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_ckpt_get(db, row.id, 30, 1 << 20, &got, &len, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    free(got);

    /* a running job is not deleted either */
    ck_assert_int_eq(pg_db_job_delete(db, row.id, &found, &conflict, NULL), PG_OK);
    ck_assert_int_eq(conflict, 1);
    ck_assert_int_eq(pg_db_job_history_get(db, row.id, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    free(doc);
    pg_ledger_entry *le;
    size_t nle;
    ck_assert_int_eq(pg_db_ledger_entries(db, ds, &le, &nle, NULL), PG_OK);
    ck_assert_uint_eq(nle, 1);
    pg_ledger_entries_free(le, nle);

    /* a finished one goes with its checkpoints, history and quality reports
     * (another job's report stays); its ledger row stays */
    pg_test_job_end(db, row.id, "w:1", "succeeded", NULL);
    pg_report_row rep[2];
    for (int i = 0; i < 2; i++) {
        rep[i] = (pg_report_row){.against_model = 1, .against_n = 10, .n = 10, .seed = 1};
        pg_test_uid(rep[i].id, sizeof rep[i].id, "rep_");
        snprintf(rep[i].tenant, sizeof rep[i].tenant, "%s", row.tenant);
        snprintf(rep[i].job_id, sizeof rep[i].job_id, "%s", i ? "job_other" : row.id);
        snprintf(rep[i].against_id, sizeof rep[i].against_id, "%s", ds);
        int full;
        ck_assert_int_eq(pg_db_report_insert(db, &rep[i], 100, &full, NULL), PG_OK);
    }
    ck_assert_int_eq(pg_db_job_delete(db, row.id, &found, &conflict, NULL), PG_OK);
    for (int i = 0; i < 2; i++) {
        pg_report_row back;
        ck_assert_int_eq(pg_db_report_get(db, row.tenant, rep[i].id, &back, &found, NULL), PG_OK);
        ck_assert_int_eq(found, i); /* the deleted job's report is gone, the other stays */
        if (found) pg_report_rows_free(&back, 1);
    }
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(conflict, 0);
    pg_job_row *rows;
    ck_assert_int_eq(pg_db_job_load_all(db, &rows, &n, NULL), PG_OK);
    for (size_t i = 0; i < n; i++) ck_assert_str_ne(rows[i].id, row.id);
    pg_job_rows_free(rows, n);
    ck_assert_int_eq(pg_db_ckpt_list(db, row.id, &ck, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 0);
    free(ck);
    ck_assert_int_eq(pg_db_job_history_get(db, row.id, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_ledger_entries(db, ds, &le, &nle, NULL), PG_OK);
    ck_assert_uint_eq(nle, 1);
    ck_assert_str_eq(le[0].job_id, row.id);
    ck_assert_int_eq(le[0].refunded, 0);
    ck_assert_double_eq(le[0].epsilon, 0.5);
    pg_ledger_entries_free(le, nle);
    pg_ledger_curve c;
    ck_assert_int_eq(pg_ledger_spent(db, ds, &c, NULL), PG_OK);
    ck_assert_int_eq(c.entries, 1);
    /* gone: a second delete finds nothing; malformed ids are not found */
    ck_assert_int_eq(pg_db_job_delete(db, row.id, &found, &conflict, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_job_delete(db, "../etc", &found, &conflict, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    pg_db_close(db);
}
END_TEST

/* The reads a replica makes of jobs it does not run: one job with its
 * history document in one read, and a filtered, paginated list. */
static void expect_list(pg_db *db, const char *tenant, const char *status, const char *ds,
                        int64_t after, size_t limit, const char *const *want, size_t nwant)
{
    pg_job_row *rows;
    size_t n;
    pg_error err = {0};
    ck_assert_msg(pg_db_job_list(db, tenant, status, ds, after, limit, &rows, &n, &err) == PG_OK,
                  "%s", err.msg);
    ck_assert_uint_eq(n, nwant);
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_eq(rows[i].id, want[i]);
        ck_assert_str_eq(rows[i].tenant, tenant);
        if (status) ck_assert_str_eq(rows[i].status, status);
        if (ds) ck_assert_str_eq(rows[i].dataset_id, ds);
        if (i) ck_assert_int_gt(rows[i].seq, rows[i - 1].seq);
        ck_assert_int_gt(rows[i].seq, after);
    }
    pg_job_rows_free(rows, n);
}

static int64_t seq_of(pg_db *db, const char *id)
{
    pg_job_row *r;
    char *doc;
    int found;
    ck_assert_int_eq(pg_db_job_get(db, NULL, id, &r, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    int64_t s = r->seq;
    pg_job_rows_free(r, 1);
    free(doc);
    return s;
}

START_TEST(job_get_and_list_for_other_replicas)
{
    pg_db *db = pg_test_db_open();
    char t[PG_ID_MAX], other[PG_ID_MAX], ds1[PG_ID_MAX], ds2[PG_ID_MAX], dso[PG_ID_MAX];
    char ids[5][PG_ID_MAX], fid[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    pg_test_uid(other, sizeof other, "ten_");
    pg_test_uid(ds1, sizeof ds1, "ds_");
    pg_test_uid(ds2, sizeof ds2, "ds_");
    pg_test_uid(dso, sizeof dso, "ds_");
    pg_test_dataset(db, t, ds1, 2);
    pg_test_dataset(db, t, ds2, 2);
    pg_test_dataset(db, other, dso, 2);
    pg_test_jobs_drain(db);
    for (int i = 0; i < 5; i++) {
        admit_free_job(db, t, i < 3 ? ds1 : ds2, ids[i]);
        if (i == 1) admit_free_job(db, other, dso, fid); /* interleaved seq */
    }
    /* ids[0] runs, ids[1] ran and failed; the others stay queued */
    pg_test_job_claim(db, "w:1", ids[0]);
    pg_test_job_claim(db, "w:1", ids[1]);
    pg_test_job_end(db, ids[1], "w:1", "failed", "boom");

    /* one job: the row, and the document once one is written */
    pg_job_row *r;
    char *doc;
    int found, held;
    ck_assert_int_eq(pg_db_job_get(db, NULL, ids[1], &r, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_ptr_null(doc);
    ck_assert_str_eq(r->id, ids[1]);
    ck_assert_str_eq(r->tenant, t);
    ck_assert_str_eq(r->dataset_id, ds1);
    ck_assert_str_eq(r->status, "failed");
    ck_assert_str_eq(r->error, "boom");
    ck_assert_str_eq(r->spec, "{\"k\":1}");
    ck_assert_int_gt(r->finished_at, 0);
    pg_job_rows_free(r, 1);
    ck_assert_int_eq(pg_db_job_get(db, NULL, ids[0], &r, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_ptr_null(doc);
    pg_job_rows_free(r, 1);
    const char *d = "{\"v\":1,\"step\":7,\"s\":\"\\u00e9\"}";
    ck_assert_int_eq(pg_db_job_history_put_owned(db, ids[0], "w:1", d, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    ck_assert_int_eq(pg_db_job_get(db, NULL, ids[0], &r, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(r->status, "running");
    ck_assert_str_eq(doc, d);
    free(doc);
    pg_job_rows_free(r, 1);
    ck_assert_int_eq(pg_db_job_get(db, NULL, "job_nope_nope", &r, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_job_get(db, NULL, "bad id!", &r, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    /* filtered by tenant: the owner finds it, another tenant reads nothing,
     * exactly as for an unknown id */
    ck_assert_int_eq(pg_db_job_get(db, t, ids[0], &r, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    free(doc);
    pg_job_rows_free(r, 1);
    r = (pg_job_row *)&found; /* outputs must come back NULL, not untouched garbage */
    ck_assert_int_eq(pg_db_job_get(db, other, ids[0], &r, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_ptr_null(r);
    ck_assert_ptr_null(doc);

    /* lists: the tenant's jobs only, oldest first, pages, filters */
    const char *all[5] = {ids[0], ids[1], ids[2], ids[3], ids[4]};
    expect_list(db, t, NULL, NULL, 0, 100, all, 5);
    expect_list(db, t, NULL, NULL, 0, 2, all, 2);
    expect_list(db, t, NULL, NULL, seq_of(db, ids[1]), 2, all + 2, 2);
    expect_list(db, t, NULL, NULL, seq_of(db, ids[3]), 2, all + 4, 1);
    expect_list(db, t, NULL, NULL, seq_of(db, ids[4]), 2, NULL, 0);
    expect_list(db, t, NULL, NULL, 0, 0, NULL, 0);
    const char *run[1] = {ids[0]}, *two[2] = {ids[3], ids[4]}, *q1[1] = {ids[2]};
    expect_list(db, t, "running", NULL, 0, 100, run, 1);
    expect_list(db, t, NULL, ds2, 0, 100, two, 2);
    expect_list(db, t, "queued", ds1, 0, 100, q1, 1);
    expect_list(db, t, "queued", dso, 0, 100, NULL, 0);
    const char *f[1] = {fid};
    expect_list(db, other, NULL, NULL, 0, 100, f, 1);

    /* a deleted job is gone from both */
    int conflict;
    ck_assert_int_eq(pg_db_job_delete(db, ids[1], &found, &conflict, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(pg_db_job_get(db, NULL, ids[1], &r, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    const char *left[4] = {ids[0], ids[2], ids[3], ids[4]};
    expect_list(db, t, NULL, NULL, 0, 100, left, 4);
    pg_db_close(db);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("db");
    TCase *t = tcase_create("contract");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, open_probe_version_and_bad_urls);
    tcase_add_test(t, url_redaction);
    tcase_add_test(t, tokens_round_trip_and_tenant_atomicity);
    tcase_add_test(t, mint_by_a_revoked_token_stores_nothing);
    tcase_add_test(t, datasets_tenancy_pagination_append_delete);
    tcase_add_test(t, append_is_all_or_nothing);
    tcase_add_test(t, rows_snapshot_concatenates_blocks);
    tcase_add_test(t, rows_pass_streams_the_planned_rows);
    tcase_add_test(t, rows_pass_of_large_blocks);
    tcase_add_test(t, idempotency_records);
    tcase_add_test(t, concurrent_idempotency_begins_reserve_once);
    tcase_add_test(t, jobs_round_trip);
    tcase_add_test(t, checkpoints_round_trip);
    tcase_add_test(t, job_history_and_deletion);
    tcase_add_test(t, job_get_and_list_for_other_replicas);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
