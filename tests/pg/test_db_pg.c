/* The PostgreSQL backend through the public contract (service/store/db.h):
 * migrations under concurrency and a refused newer schema, chunked appends
 * and reads, all-or-nothing appends when aborted or when the connection is
 * killed, corruption caught by the checksums, checkpoints, idempotency under
 * concurrency, and 16 threads racing admissions on one budget. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "engine/core/alloc.h"
#include "engine/privacy/privacy.h"
#include "pg/pgtest_conn.h"
#include "pg/pgtest_env.h"
#include "service/store/db.h"
#include "service/ledger.h"
#include "service/store/pg/pgpool.h"
#include "support/pg_jobs_test.h"

static pg_db *open_db(const char *uri)
{
    pg_db *db = NULL;
    pg_error e = {0};
    pg_db_options o = {.pool_size = 20, .statement_timeout_ms = 20000, .connect_timeout_s = 5};
    int rc = pg_db_open(uri, &o, &db, &e);
    ck_assert_msg(rc == PG_OK, "open: %s", e.msg);
    ck_assert_str_eq(pg_db_backend(db), "postgres");
    return db;
}

/* The one value of a query on a side connection (pgtest_conn.h: the test's
 * own, not the pool's, for inspection and sabotage). */
static long long scalar(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", sql, PQresultErrorMessage(r));
    long long v = PQgetisnull(r, 0, 0) ? -1 : atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

/* A fresh database of the cluster, for tests of the schema itself. */
static void fresh_db(const char *name, char *uri, size_t cap)
{
    PGconn *c = pgt_side();
    char sql[160];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", name);
    pgt_exec_ok(c, sql);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    pgt_exec_ok(c, sql);
    PQfinish(c);
    const char *base = pgt_uri();
    const char *slash = strrchr(base, '/');
    snprintf(uri, cap, "%.*s/%s", (int)(slash - base), base, name);
}

static void make_dataset(pg_db *db, const char *id, int64_t d)
{
    pg_db_dataset ds = {0};
    snprintf(ds.id, sizeof ds.id, "%s", id);
    snprintf(ds.tenant, sizeof ds.tenant, "t1");
    ds.name = (char *)"test";
    ds.meta = (char *)"{}";
    ds.d = d;
    pg_error e = {0};
    ck_assert_msg(pg_db_dataset_insert(db, &ds, &e) == PG_OK, "%s", e.msg);
    ck_assert_int_gt(ds.seq, 0);
}

static int64_t dataset_n(pg_db *db, const char *id)
{
    pg_db_dataset ds;
    int found = 0;
    pg_error e = {0};
    ck_assert_int_eq(pg_db_dataset_get(db, "t1", id, &ds, &found, &e), PG_OK);
    ck_assert(found);
    int64_t n = ds.n;
    pg_db_dataset_free(&ds);
    return n;
}

/* ---- schema ----------------------------------------------------------- */

enum { OPENERS = 6 };

static void *opener(void *uri)
{
    pg_db *db = NULL;
    pg_error e = {0};
    long rc = pg_db_open(uri, NULL, &db, &e);
    if (!rc) {
        int v = 0;
        rc = pg_db_schema_version(db, &v, &e) ? -1 : v;
        pg_db_close(db);
    } else {
        rc = -1000 - rc;
    }
    return (void *)rc;
}

START_TEST(concurrent_opens_migrate_once)
{
    char uri[512];
    fresh_db("pgt_migrate", uri, sizeof uri);
    pthread_t t[OPENERS];
    for (int i = 0; i < OPENERS; i++) pthread_create(&t[i], NULL, opener, uri);
    long v0 = -1;
    for (int i = 0; i < OPENERS; i++) {
        void *res;
        pthread_join(t[i], &res);
        ck_assert_int_ge((long)res, 1);
        if (v0 < 0) v0 = (long)res;
        ck_assert_int_eq((long)res, v0);
    }
    PGconn *c = PQconnectdb(uri);
    ck_assert_int_eq(scalar(c, "SELECT count(*) FROM schema_version"), 1);
    ck_assert_int_eq(scalar(c, "SELECT version FROM schema_version"), v0);
    /* A newer schema is refused, untouched. */
    char sql[96];
    snprintf(sql, sizeof sql, "UPDATE schema_version SET version = %ld", v0 + 1);
    pgt_exec_ok(c, sql);
    pg_db *db = NULL;
    pg_error e = {0};
    ck_assert_int_eq(pg_db_open(uri, NULL, &db, &e), PG_ENOTSUP);
    ck_assert_ptr_nonnull(strstr(e.msg, "newer"));
    ck_assert_ptr_null(db);
    ck_assert_int_eq(scalar(c, "SELECT version FROM schema_version"), v0 + 1);
    PQfinish(c);
}
END_TEST

/* A database left at version 1 (before job histories) by an older privgend
 * migrates forward at open, keeping its jobs, and gains the history table. */
START_TEST(version_1_database_migrates_forward)
{
    char uri[512];
    fresh_db("pgt_v1", uri, sizeof uri);
    pg_db *db = open_db(uri);
    int latest = 0;
    ck_assert_int_eq(pg_db_schema_version(db, &latest, NULL), PG_OK);
    ck_assert_int_ge(latest, 2);
    pg_db_close(db);
    PGconn *c = PQconnectdb(uri);
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "%s", PQerrorMessage(c));
    pgt_exec_ok(c, "DROP TABLE job_history; UPDATE schema_version SET version = 1");
    /* running and leased by nobody, as after a crash: claimable */
    pgt_exec_ok(c,
                "INSERT INTO jobs(id, tenant_id, dataset_id, status, spec, created_at, updated_at)"
                " VALUES ('job_v1', 't1', 'ds_v1', 'running', '{}', 1, 2)");
    db = open_db(uri);
    int v = 0;
    ck_assert_int_eq(pg_db_schema_version(db, &v, NULL), PG_OK);
    ck_assert_int_eq(v, latest);
    ck_assert_int_eq(scalar(c, "SELECT count(*) FROM jobs WHERE id = 'job_v1'"), 1);
    char *doc;
    int found, conflict;
    ck_assert_int_eq(pg_db_job_history_get(db, "job_v1", &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    pg_test_job_claim(db, "w:1", "job_v1");
    int held;
    ck_assert_int_eq(pg_db_job_history_put_owned(db, "job_v1", "w:1", "{\"v\":1}", &held, NULL),
                     PG_OK);
    ck_assert_int_eq(held, 1);
    ck_assert_int_eq(pg_db_job_history_get(db, "job_v1", &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(doc, "{\"v\":1}");
    free(doc);
    pg_test_job_end(db, "job_v1", "w:1", "succeeded", NULL);
    ck_assert_int_eq(pg_db_job_delete(db, "job_v1", &found, &conflict, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(scalar(c, "SELECT count(*) FROM job_history"), 0);
    pg_db_close(db);
    PQfinish(c);
}
END_TEST

/* A database left at schema version 1 (tokens without seq, expiry or
 * revocation time) migrates forward keeping its tokens: an old revoked
 * token stays revoked (revoked_at from its creation), others are listed in
 * a stable order and never expire. */
START_TEST(version_1_tokens_migrate_forward)
{
    char uri[512];
    fresh_db("pgt_tokens_v1", uri, sizeof uri);
    pg_db *db = open_db(uri);
    pg_db_close(db);
    PGconn *c = PQconnectdb(uri);
    pgt_exec_ok(c, "DROP INDEX tokens_tenant");
    pgt_exec_ok(
        c, "ALTER TABLE tokens DROP COLUMN seq, DROP COLUMN expires_at, DROP COLUMN revoked_at,"
           " DROP COLUMN last_used_at");
    pgt_exec_ok(c, "DROP TABLE job_history"); /* version 2 (job histories) */
    pgt_exec_ok(c, "UPDATE schema_version SET version = 1");
    pgt_exec_ok(c, "INSERT INTO tenants VALUES ('ten_old', 1700000000)");
    pgt_exec_ok(
        c, "INSERT INTO tokens(id, tenant_id, scope, hash, created_at, revoked) VALUES"
           " ('tok_a', 'ten_old', 'admin', decode(repeat('ab', 32), 'hex'), 1700000001, false),"
           " ('tok_b', 'ten_old', 'read', decode(repeat('cd', 32), 'hex'), 1700000002, true)");
    db = open_db(uri);
    int v = 0;
    ck_assert_int_eq(pg_db_schema_version(db, &v, NULL), PG_OK);
    ck_assert_int_ge(v, 2);
    pg_token *list;
    size_t n;
    ck_assert_int_eq(pg_db_token_list(db, "ten_old", 0, 10, &list, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert(list[0].seq > 0 && list[1].seq > list[0].seq);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(list[i].expires_at, 0);
        ck_assert_int_eq(list[i].last_used_at, 0);
        if (!strcmp(list[i].id, "tok_b"))
            ck_assert_int_eq(list[i].revoked_at, 1700000002);
        else
            ck_assert_int_eq(list[i].revoked_at, 0);
    }
    free(list);
    /* New tokens come after the migrated ones. */
    pg_token t = {.scope = PG_SCOPE_READ, .created_at = 5};
    snprintf(t.id, sizeof t.id, "tok_new");
    snprintf(t.tenant, sizeof t.tenant, "ten_old");
    ck_assert_int_eq(pg_db_token_insert(db, &t, 0, NULL), PG_OK);
    ck_assert_int_eq(pg_db_token_list(db, "ten_old", 0, 10, &list, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_str_eq(list[2].id, "tok_new");
    free(list);
    pg_db_close(db);
    PQfinish(c);
}
END_TEST

START_TEST(open_errors_hide_the_password)
{
    const char *good = pgt_uri();
    const char *colon = strchr(good + strlen("postgresql://"), ':');
    const char *at = strchr(good, '@');
    char uri[512];
    snprintf(uri, sizeof uri, "%.*sNotThePassword%s", (int)(colon + 1 - good), good, at);
    pg_db *db = NULL;
    pg_error e = {0};
    ck_assert_int_ne(pg_db_open(uri, NULL, &db, &e), PG_OK);
    ck_assert_ptr_null(strstr(e.msg, "NotThePassword"));
    ck_assert_ptr_nonnull(strstr(e.msg, "***"));
}
END_TEST

/* ---- appends and reads ------------------------------------------------ */

static float value(size_t row, size_t col)
{
    return (float)((row * 31 + col * 7) % 1000) / 999.0f - 0.5f;
}

/* Appends rows [first, first+n) of width d, sent in uneven pieces. */
static int append_rows(pg_db *db, const char *id, size_t d, size_t first, size_t n, int labeled,
                       int64_t max_rows, int64_t *new_n, pg_error *e)
{
    pg_db_append *a;
    int rc = pg_db_append_begin(db, "t1", id, d, &a, e);
    if (rc) return rc;
    size_t total = n * d, piece = 12345, sent = 0;
    float *buf = malloc(piece * sizeof *buf);
    while (sent < total) {
        size_t k = total - sent < piece ? total - sent : piece;
        for (size_t i = 0; i < k; i++) buf[i] = value(first + (sent + i) / d, (sent + i) % d);
        if ((rc = pg_db_append_write(a, buf, k, e))) {
            free(buf);
            pg_db_append_abort(a);
            return rc;
        }
        sent += k;
        piece = piece * 3 / 2 + 1;
        buf = realloc(buf, piece * sizeof *buf);
    }
    free(buf);
    int32_t *labels = labeled ? malloc(n * sizeof *labels) : NULL;
    for (size_t i = 0; labels && i < n; i++) labels[i] = (int32_t)((first + i) % 10);
    int found = 0;
    int64_t rows = 0;
    rc = pg_db_append_commit(a, labels, max_rows, &found, &rows, new_n, e);
    free(labels);
    if (!rc) {
        ck_assert(found);
        ck_assert_int_eq(rows, (int64_t)n);
    }
    return rc;
}

START_TEST(append_and_read_back_chunked_blocks)
{
    pg_db *db = open_db(pgt_uri());
    make_dataset(db, "ds_rw", 784);
    pg_error e = {0};
    int64_t n = 0;
    /* 1000 x 784 floats = 3.1 MB: four chunks of 1 MiB. */
    ck_assert_int_eq(append_rows(db, "ds_rw", 784, 0, 1000, 1, 100000, &n, &e), PG_OK);
    ck_assert_int_eq(n, 1000);
    ck_assert_int_eq(append_rows(db, "ds_rw", 784, 1000, 7, 1, 100000, &n, &e), PG_OK);
    ck_assert_int_eq(n, 1007);
    pg_db_dataset ds;
    int found;
    ck_assert_int_eq(pg_db_dataset_get(db, "t1", "ds_rw", &ds, &found, &e), PG_OK);
    ck_assert_int_eq(ds.blocks, 2);
    ck_assert_int_eq(ds.bytes, 2 * 32 + 1007 * (784 * 4 + 4));
    pg_db_dataset_free(&ds);

    pg_block all;
    int labeled = 0;
    ck_assert_msg(pg_db_rows_load(db, "ds_rw", 784, 1u << 30, &all, &labeled, &e) == PG_OK, "%s",
                  e.msg);
    ck_assert_int_eq(all.n, 1007);
    ck_assert(labeled);
    for (size_t r = 0; r < all.n; r++) {
        ck_assert_int_eq(all.labels[r], (int32_t)(r % 10));
        for (size_t c = 0; c < 784; c += 97) ck_assert(all.x[r * 784 + c] == value(r, c));
    }
    pg_block_free(&all);

    /* The block cap is enforced before reading. */
    pg_db_blocks *it;
    size_t count;
    ck_assert_int_eq(pg_db_blocks_open(db, "ds_rw", &it, &count, &e), PG_OK);
    ck_assert_uint_eq(count, 2);
    pg_block b;
    int end = 0;
    ck_assert_int_eq(pg_db_blocks_next(it, 1000, &b, &end, &e), PG_ENOMEM);
    pg_db_blocks_close(it);
    pg_db_close(db);
}
END_TEST

START_TEST(failed_appends_leave_nothing)
{
    pg_db *db = open_db(pgt_uri());
    make_dataset(db, "ds_fail", 10);
    pg_error e = {0};
    int64_t n = 0;
    ck_assert_int_eq(append_rows(db, "ds_fail", 10, 0, 50, 0, 100, &n, &e), PG_OK);
    PGconn *c = pgt_side();
    long long chunks0 = scalar(c, "SELECT count(*) FROM row_chunks");
    /* Over max_rows: refused, nothing stored. */
    ck_assert_int_eq(append_rows(db, "ds_fail", 10, 50, 51, 0, 100, &n, &e), PG_ERANGE);
    /* Not a whole number of rows. */
    pg_db_append *a;
    ck_assert_int_eq(pg_db_append_begin(db, "t1", "ds_fail", 10, &a, &e), PG_OK);
    float x[15] = {0};
    ck_assert_int_eq(pg_db_append_write(a, x, 15, &e), PG_OK);
    int found;
    int64_t rows;
    ck_assert_int_eq(pg_db_append_commit(a, NULL, 100, &found, &rows, &n, &e), PG_EINVAL);
    /* Aborted. */
    ck_assert_int_eq(pg_db_append_begin(db, "t1", "ds_fail", 10, &a, &e), PG_OK);
    ck_assert_int_eq(pg_db_append_write(a, x, 10, &e), PG_OK);
    pg_db_append_abort(a);
    /* A dataset that does not exist: found = 0, nothing stored. */
    ck_assert_int_eq(pg_db_append_begin(db, "t1", "ds_none", 10, &a, &e), PG_OK);
    ck_assert_int_eq(pg_db_append_write(a, x, 10, &e), PG_OK);
    found = 1;
    ck_assert_int_eq(pg_db_append_commit(a, NULL, 100, &found, &rows, &n, &e), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(dataset_n(db, "ds_fail"), 50);
    ck_assert_int_eq(scalar(c, "SELECT count(*) FROM row_chunks"), chunks0);
    ck_assert_int_eq(scalar(c, "SELECT count(*) FROM row_blocks WHERE dataset_id = 'ds_fail'"), 1);
    PQfinish(c);
    pg_db_close(db);
}
END_TEST

/* A serialization failure at an append's COMMIT (injected by a deferred
 * constraint trigger on the dataset's block row, counting its calls in a
 * sequence, which a rollback does not undo) is rerun from the spool: the
 * rows land once. One that never stops gives PG_EUNAVAIL after the bounded
 * attempts, nothing stored. The old commit handed PG_PGPOOL_RETRY (1000),
 * a code that must never leave the backend, to its caller. */
START_TEST(append_commit_conflicts_are_rerun)
{
    pg_db *db = open_db(pgt_uri());
    make_dataset(db, "ds_ser", 3);
    PGconn *c = pgt_side();
    pgt_exec_ok(c, "CREATE SEQUENCE ser_calls");
    pgt_exec_ok(c, "CREATE TABLE ser_budget(n int NOT NULL)");
    pgt_exec_ok(c, "INSERT INTO ser_budget VALUES (2)");
    pgt_exec_ok(c, "CREATE FUNCTION ser_fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                   "IF nextval('ser_calls') <= (SELECT n FROM ser_budget) THEN "
                   "RAISE EXCEPTION 'injected' USING ERRCODE = 'serialization_failure'; END IF; "
                   "RETURN NULL; END $$");
    pgt_exec_ok(c, "CREATE CONSTRAINT TRIGGER ser_fault AFTER INSERT ON row_blocks DEFERRABLE "
                   "INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.dataset_id = 'ds_ser') "
                   "EXECUTE FUNCTION ser_fault()");
    long long chunks0 = scalar(c, "SELECT count(*) FROM row_chunks");
    pg_error e = {0};
    int64_t n = 0;
    int rc = append_rows(db, "ds_ser", 3, 0, 20, 1, 1000, &n, &e);
    ck_assert_msg(rc == PG_OK, "rc %d: %s", rc, e.msg);
    ck_assert_int_eq(n, 20);
    ck_assert_int_eq(scalar(c, "SELECT last_value FROM ser_calls"), 3); /* failed twice */
    ck_assert_int_eq(scalar(c, "SELECT count(*) FROM row_blocks WHERE dataset_id = 'ds_ser'"), 1);
    ck_assert_int_eq(scalar(c, "SELECT count(*) FROM row_chunks"), chunks0 + 1);
    pg_block all;
    int labeled = 0;
    ck_assert_msg(pg_db_rows_load(db, "ds_ser", 3, 1u << 20, &all, &labeled, &e) == PG_OK, "%s",
                  e.msg);
    ck_assert_int_eq(all.n, 20);
    ck_assert(labeled);
    for (size_t r = 0; r < all.n; r++) {
        ck_assert_int_eq(all.labels[r], (int32_t)(r % 10));
        for (size_t k = 0; k < 3; k++) ck_assert(all.x[r * 3 + k] == value(r, k));
    }
    pg_block_free(&all);

    /* It never stops failing: a bounded number of attempts, then busy. */
    pgt_exec_ok(c, "UPDATE ser_budget SET n = 1000000");
    pgt_exec_ok(c, "ALTER SEQUENCE ser_calls RESTART WITH 1");
    rc = append_rows(db, "ds_ser", 3, 20, 5, 0, 1000, &n, &e);
    ck_assert_msg(rc == PG_EUNAVAIL, "rc %d: %s", rc, e.msg);
    long long calls = scalar(c, "SELECT last_value FROM ser_calls");
    ck_assert_msg(calls >= 2 && calls <= 16, "%lld attempts", calls);
    ck_assert_int_eq(dataset_n(db, "ds_ser"), 20);
    ck_assert_int_eq(scalar(c, "SELECT count(*) FROM row_blocks WHERE dataset_id = 'ds_ser'"), 1);
    ck_assert_int_eq(scalar(c, "SELECT count(*) FROM row_chunks"), chunks0 + 1);
    pgt_exec_ok(c, "DROP TRIGGER ser_fault ON row_blocks");
    pgt_exec_ok(c, "DROP FUNCTION ser_fault()");
    pgt_exec_ok(c, "DROP TABLE ser_budget");
    pgt_exec_ok(c, "DROP SEQUENCE ser_calls");
    PQfinish(c);
    pg_db_close(db);
}
END_TEST

/* Backends of ours idle inside a transaction: an open appender must have
 * none (it spools locally and takes a connection only at commit). */
static long long idle_in_tx(PGconn *c)
{
    return scalar(c, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                     " AND application_name = 'privgend'"
                     " AND state LIKE 'idle in transaction%'");
}

/* Many open appenders (more than the pool) hold no connection: other calls
 * go on while they are open; the pool's connections killed meanwhile are
 * replaced at commit; aborts leave no chunk behind. */
START_TEST(open_appenders_hold_no_connection)
{
    pg_db *db = open_db(pgt_uri());
    make_dataset(db, "ds_kill", 784);
    pg_error e = {0};
    int64_t n = 0;
    ck_assert_int_eq(append_rows(db, "ds_kill", 784, 0, 100, 0, 1000000, &n, &e), PG_OK);
    PGconn *c = pgt_side();
    long long chunks0 = scalar(c, "SELECT count(*) FROM row_chunks");
    enum { K = 24 }; /* above the pool's 20 */
    pg_db_append *a[K];
    size_t count = 784 * 700; /* 2.2 MB: more than two chunks each */
    float *x = calloc(count, sizeof *x);
    for (int i = 0; i < K; i++) {
        ck_assert_int_eq(pg_db_append_begin(db, "t1", "ds_kill", 784, &a[i], &e), PG_OK);
        ck_assert_int_eq(pg_db_append_write(a[i], x, count, &e), PG_OK);
    }
    ck_assert_int_eq(idle_in_tx(c), 0);
    ck_assert_int_eq(scalar(c, "SELECT count(*) FROM row_chunks"), chunks0);
    /* Other calls are served while all K are open. */
    ck_assert_int_eq(dataset_n(db, "ds_kill"), 100);
    pgt_exec_ok(c, "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = "
                   "current_database() AND application_name = 'privgend'");
    for (int i = 1; i < K; i++) pg_db_append_abort(a[i]);
    int found;
    int64_t rows, nn;
    ck_assert_int_eq(pg_db_append_commit(a[0], NULL, 1000000, &found, &rows, &nn, &e), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(rows, 700);
    ck_assert_int_eq(nn, 800);
    free(x);
    ck_assert_int_eq(dataset_n(db, "ds_kill"), 800);
    ck_assert_int_eq(scalar(c, "SELECT count(*) FROM row_chunks") - chunks0, 3);
    ck_assert_int_eq(append_rows(db, "ds_kill", 784, 800, 10, 0, 1000000, &n, &e), PG_OK);
    ck_assert_int_eq(n, 810);
    PQfinish(c);
    pg_db_close(db);
}
END_TEST

START_TEST(corruption_is_detected)
{
    pg_db *db = open_db(pgt_uri());
    make_dataset(db, "ds_bad", 4);
    pg_error e = {0};
    int64_t n;
    ck_assert_int_eq(append_rows(db, "ds_bad", 4, 0, 20, 1, 1000, &n, &e), PG_OK);
    PGconn *c = pgt_side();
    /* Flip one byte of the payload: same length, other content. */
    pgt_exec_ok(c, "UPDATE row_chunks SET data = set_byte(data, 5, get_byte(data, 5) # 1) "
                   "WHERE block_id = (SELECT id FROM row_blocks WHERE dataset_id = 'ds_bad')");
    pg_block b;
    int labeled;
    ck_assert_int_eq(pg_db_rows_load(db, "ds_bad", 4, 1 << 20, &b, &labeled, &e), PG_EFORMAT);
    /* Truncated. */
    pgt_exec_ok(c, "UPDATE row_chunks SET data = substring(data from 1 for 10) "
                   "WHERE block_id = (SELECT id FROM row_blocks WHERE dataset_id = 'ds_bad')");
    ck_assert_int_eq(pg_db_rows_load(db, "ds_bad", 4, 1 << 20, &b, &labeled, &e), PG_EFORMAT);

    unsigned char ck[100];
    for (int i = 0; i < 100; i++) ck[i] = (unsigned char)i;
    uint32_t crc = (uint32_t)crc32(0L, ck, 100);
    pg_test_job_run(db, "t1", "ds_bad", "job_bad", "w:1");
    ck_assert_int_eq(pg_test_ckpt_put(db, "job_bad", "w:1", 3, ck, 100, crc), PG_OK);
    pgt_exec_ok(
        c, "UPDATE checkpoint_chunks SET data = set_byte(data, 50, 0) WHERE job_id = 'job_bad'");
    unsigned char *out = NULL;
    size_t len;
    int found;
    ck_assert_int_eq(pg_db_ckpt_get(db, "job_bad", 3, 1000, &out, &len, &found, &e), PG_EFORMAT);
    ck_assert_ptr_null(out);
    PQfinish(c);
    pg_db_close(db);
}
END_TEST

START_TEST(checkpoints_round_trip)
{
    pg_db *db = open_db(pgt_uri());
    pg_error e = {0};
    size_t len = (5u << 19) + 17; /* 2.5 MiB + 17: three chunks */
    unsigned char *b = malloc(len);
    for (size_t i = 0; i < len; i++) b[i] = (unsigned char)(i * 2654435761u >> 13);
    uint32_t crc = (uint32_t)crc32(0L, b, (uInt)len);
    make_dataset(db, "ds_ck", 2);
    pg_test_job_run(db, "t1", "ds_ck", "job_ck", "w:1");
    ck_assert_int_eq(pg_test_ckpt_put(db, "job_ck", "w:1", 10, b, len, crc), PG_OK);
    ck_assert_int_eq(
        pg_test_ckpt_put(db, "job_ck", "w:1", 5, b, 1000, (uint32_t)crc32(0L, b, 1000)), PG_OK);
    pg_ckpt_row *rows;
    size_t count;
    ck_assert_int_eq(pg_db_ckpt_list(db, "job_ck", &rows, &count, &e), PG_OK);
    ck_assert_uint_eq(count, 2);
    ck_assert_int_eq(rows[0].step, 5);
    ck_assert_int_eq(rows[0].bytes, 1000);
    ck_assert_int_eq(rows[1].step, 10);
    ck_assert_int_eq(rows[1].bytes, (int64_t)len);
    free(rows);
    unsigned char *out;
    size_t olen;
    int found;
    ck_assert_int_eq(pg_db_ckpt_get(db, "job_ck", 10, len, &out, &olen, &found, &e), PG_OK);
    ck_assert(found);
    ck_assert_uint_eq(olen, len);
    ck_assert(!memcmp(out, b, len));
    free(out);
    ck_assert_int_eq(pg_db_ckpt_get(db, "job_ck", 10, len - 1, &out, &olen, &found, &e), PG_ENOMEM);
    ck_assert_int_eq(pg_db_ckpt_get(db, "job_ck", 11, len, &out, &olen, &found, &e), PG_OK);
    ck_assert(!found);
    /* Replacing a step keeps one checkpoint there, the new one. */
    ck_assert_int_eq(
        pg_test_ckpt_put(db, "job_ck", "w:1", 10, b + 1, 64, (uint32_t)crc32(0L, b + 1, 64)),
        PG_OK);
    ck_assert_int_eq(pg_db_ckpt_get(db, "job_ck", 10, len, &out, &olen, &found, &e), PG_OK);
    ck_assert_uint_eq(olen, 64);
    ck_assert(!memcmp(out, b + 1, 64));
    free(out);
    PGconn *c = pgt_side();
    ck_assert_int_eq(scalar(c, "SELECT count(*) FROM checkpoint_chunks WHERE job_id = 'job_ck' "
                               "AND step = 10"),
                     1);
    PQfinish(c);
    free(b);
    pg_db_close(db);
}
END_TEST

/* ---- idempotency ------------------------------------------------------ */

enum { IDEM_THREADS = 8 };
typedef struct idem_arg {
    pg_db *db;
    int state;
    int rc;
} idem_arg;

static void *idem_racer(void *p)
{
    idem_arg *a = p;
    unsigned char fp[32] = {1, 2, 3};
    pg_idem_response prev = {0};
    a->rc = pg_db_idem_begin(a->db, "t1", "tok_a", "key-race", fp, &a->state, &prev, NULL);
    pg_idem_free(&prev);
    return NULL;
}

START_TEST(idempotency_one_winner)
{
    pg_db *db = open_db(pgt_uri());
    pthread_t t[IDEM_THREADS];
    idem_arg a[IDEM_THREADS];
    for (int i = 0; i < IDEM_THREADS; i++) {
        a[i] = (idem_arg){.db = db};
        pthread_create(&t[i], NULL, idem_racer, &a[i]);
    }
    int news = 0, busy = 0;
    for (int i = 0; i < IDEM_THREADS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(a[i].rc, PG_OK);
        news += a[i].state == PG_IDEM_NEW;
        busy += a[i].state == PG_IDEM_BUSY;
    }
    ck_assert_int_eq(news, 1);
    ck_assert_int_eq(busy, IDEM_THREADS - 1);
    pg_error e = {0};
    pg_idem_response r = {
        .status = 201, .location = (char *)"/v1/x", .body = (char *)"{\"a\":1}", .body_len = 7};
    ck_assert_int_eq(pg_db_idem_finish(db, "t1", "tok_a", "key-race", &r, &e), PG_OK);
    unsigned char fp[32] = {1, 2, 3}, other[32] = {9};
    int state;
    pg_idem_response prev = {0};
    ck_assert_int_eq(pg_db_idem_begin(db, "t1", "tok_a", "key-race", fp, &state, &prev, &e), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_REPLAY);
    ck_assert_int_eq(prev.status, 201);
    ck_assert_str_eq(prev.location, "/v1/x");
    ck_assert_uint_eq(prev.body_len, 7);
    ck_assert_str_eq(prev.body, "{\"a\":1}");
    pg_idem_free(&prev);
    ck_assert_int_eq(pg_db_idem_begin(db, "t1", "tok_a", "key-race", other, &state, &prev, &e),
                     PG_OK);
    ck_assert_int_eq(state, PG_IDEM_MISMATCH);
    /* Another tenant's key of the same name is its own. */
    ck_assert_int_eq(pg_db_idem_begin(db, "t2", "tok_a", "key-race", other, &state, &prev, &e),
                     PG_OK);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    ck_assert_int_eq(pg_db_idem_finish(db, "t2", "tok_a", "key-race", NULL, &e), PG_OK);
    ck_assert_int_eq(pg_db_idem_begin(db, "t2", "tok_a", "key-race", fp, &state, &prev, &e), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    /* A reservation abandoned long ago (its replica died) is taken over. */
    PGconn *c = pgt_side();
    pgt_exec_ok(c,
                "UPDATE idempotency SET created_at = created_at - 100000 WHERE tenant_id = 't2'");
    ck_assert_int_eq(pg_db_idem_begin(db, "t2", "tok_a", "key-race", other, &state, &prev, &e),
                     PG_OK);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    PQfinish(c);
    pg_db_close(db);
}
END_TEST

/* ---- admission under concurrency -------------------------------------- */

enum { ADMITTERS = 16, PER_THREAD = 3 };
#define SIGMA     3.0
#define CAP_EPS   4.0
#define CAP_DELTA 1e-5

static pg_privacy_plan gaussian_plan(void)
{
    pg_privacy_plan p = {0};
    p.charges = true;
    p.norders = (int)pg_rdp_default_orders(p.orders, PG_PLAN_MAX_ORDERS);
    for (int i = 0; i < p.norders; i++) p.rdp[i] = p.orders[i] / (2 * SIGMA * SIGMA);
    p.delta = CAP_DELTA;
    ck_assert_int_eq(pg_rdp_to_dp(p.orders, p.rdp, (size_t)p.norders, CAP_DELTA,
                                  PG_RDP_CONV_IMPROVED, &p.epsilon, NULL, NULL),
                     PG_OK);
    snprintf(p.mechanism, sizeof p.mechanism, "gaussian");
    return p;
}

/* epsilon of k identical plans composed, straight from the accountant. */
static double eps_of(const pg_privacy_plan *p, int k)
{
    double rdp[PG_PLAN_MAX_ORDERS], eps;
    for (int i = 0; i < p->norders; i++) rdp[i] = k * p->rdp[i];
    ck_assert_int_eq(pg_rdp_to_dp(p->orders, rdp, (size_t)p->norders, CAP_DELTA,
                                  PG_RDP_CONV_IMPROVED, &eps, NULL, NULL),
                     PG_OK);
    return eps;
}

typedef struct admit_arg {
    pg_db *db;
    int t;
    int admitted[PER_THREAD];
    int rc;
} admit_arg;

static void *admitter(void *p)
{
    admit_arg *a = p;
    pg_privacy_plan plan = gaussian_plan();
    for (int i = 0; i < PER_THREAD; i++) {
        pg_job_row job = {0};
        snprintf(job.id, sizeof job.id, "job_%d_%d", a->t, i);
        snprintf(job.tenant, sizeof job.tenant, "t1");
        snprintf(job.dataset_id, sizeof job.dataset_id, "ds_budget");
        snprintf(job.method, sizeof job.method, "test");
        job.spec = (char *)"{}";
        pg_ledger_quote q = {0};
        pg_error e = {0};
        int rc = pg_db_job_admit(a->db, &job, &plan, CAP_EPS, CAP_DELTA, &q, &e);
        if (rc) a->rc = rc;
        a->admitted[i] = !rc && q.admit;
        if (!rc && q.admit && strcmp(job.status, "queued")) a->rc = -1;
    }
    return NULL;
}

START_TEST(concurrent_admissions_never_overspend)
{
    pg_db *db = open_db(pgt_uri());
    make_dataset(db, "ds_budget", 2);
    pg_privacy_plan plan = gaussian_plan();
    int K = 0;
    while (eps_of(&plan, K + 1) <= CAP_EPS) K++;
    ck_assert_int_ge(K, 2);
    ck_assert_int_lt(K, ADMITTERS * PER_THREAD);
    /* The cap is not on a knife's edge for the composed values. */
    ck_assert(CAP_EPS - eps_of(&plan, K) > 1e-6 && eps_of(&plan, K + 1) - CAP_EPS > 1e-6);

    pthread_t t[ADMITTERS];
    admit_arg a[ADMITTERS];
    for (int i = 0; i < ADMITTERS; i++) {
        a[i] = (admit_arg){.db = db, .t = i};
        pthread_create(&t[i], NULL, admitter, &a[i]);
    }
    int admitted = 0;
    PGconn *c = pgt_side();
    for (int i = 0; i < ADMITTERS; i++) {
        pthread_join(t[i], NULL);
        ck_assert_int_eq(a[i].rc, PG_OK);
        for (int j = 0; j < PER_THREAD; j++) {
            admitted += a[i].admitted[j];
            /* Admitted <=> it has a job row and a reserved ledger row. */
            char sql[200];
            snprintf(sql, sizeof sql,
                     "SELECT (SELECT count(*) FROM jobs WHERE id = 'job_%d_%d') * 10 + "
                     "(SELECT count(*) FROM ledger WHERE job_id = 'job_%d_%d' AND "
                     "state = 'reserved')",
                     i, j, i, j);
            ck_assert_int_eq(scalar(c, sql), a[i].admitted[j] ? 11 : 0);
        }
    }
    ck_assert_int_eq(admitted, K);
    ck_assert_int_eq(scalar(c, "SELECT count(*) FROM ledger WHERE dataset_id = 'ds_budget'"), K);

    /* The stored ledger, composed by the ledger code, is within the cap. */
    pg_ledger_entry *ent;
    size_t ne;
    pg_error e = {0};
    ck_assert_int_eq(pg_db_ledger_entries(db, "ds_budget", &ent, &ne, &e), PG_OK);
    ck_assert_uint_eq(ne, (size_t)K);
    pg_ledger_curve spent;
    pg_ledger_curve_init(&spent);
    for (size_t i = 0; i < ne; i++) {
        ck_assert(!ent[i].refunded);
        ck_assert_double_eq_tol(ent[i].epsilon, plan.epsilon, 1e-12);
        pg_ledger_curve_add_encoded(&spent, ent[i].plan);
    }
    pg_ledger_entries_free(ent, ne);
    double total;
    ck_assert_int_eq(pg_ledger_curve_epsilon(&spent, CAP_DELTA, &total, &e), PG_OK);
    ck_assert_double_le(total, CAP_EPS);
    ck_assert_double_eq_tol(total, eps_of(&plan, K), 1e-9);

    /* Cancel one queued job: refunded, and exactly one more fits. */
    int done = 0;
    char victim[PG_ID_MAX] = "";
    for (int i = 0; i < ADMITTERS && !victim[0]; i++)
        for (int j = 0; j < PER_THREAD && !victim[0]; j++)
            if (a[i].admitted[j]) snprintf(victim, sizeof victim, "job_%d_%d", i, j);
    ck_assert_int_eq(pg_db_job_cancel_queued(db, victim, &done, &e), PG_OK);
    ck_assert(done);
    ck_assert_int_eq(pg_db_job_cancel_queued(db, victim, &done, &e), PG_OK);
    ck_assert(!done);
    admit_arg more = {.db = db, .t = 99};
    admitter(&more);
    ck_assert_int_eq(more.rc, PG_OK);
    ck_assert_int_eq(more.admitted[0] + more.admitted[1] + more.admitted[2], 1);
    PQfinish(c);
    pg_db_close(db);
}
END_TEST

/* ---- a frozen owner inside a statement ----------------------------------- */

/* The owner of a job freezes (SIGSTOP, a hung VM, a cut network) in the
 * middle of sending one statement of its fenced checkpoint write, after the
 * write locked the job row: here a connection of the test's own takes the
 * row as pg_db_ckpt_put_owned does, then sends a 16 MiB chunk INSERT
 * without blocking and never flushes the rest. Its backend reads the rest of
 * the message for as long as the client lives: neither the 1 s
 * idle-in-transaction bound nor statement_timeout interrupts that (both
 * tried: the row stayed locked past 45 s with a 30 s statement_timeout), so
 * the claim's SKIP LOCKED passed the job over forever. Now a claimer that
 * finds nothing ends a session holding an expired job's row for more than
 * 2 s (db_pg_queue.c): the job is taken over about a lease after the
 * freeze, nothing the frozen owner sent lands, and its later writes are
 * refused by the fence. The waits are bounds, not timings: 60 s for a 2 s
 * lease. */
static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts)) {
    }
}

static long long frozen_state(PGconn *mon, int pid, const char *state, const char *wait_event)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM pg_stat_activity WHERE pid = %d AND state = '%s' AND "
             "wait_event IS NOT DISTINCT FROM '%s'",
             pid, state, wait_event);
    return scalar(mon, sql);
}

START_TEST(an_owner_frozen_inside_a_statement_is_taken_over)
{
    pg_db *db = open_db(pgt_uri());
    pg_error e = {0};
    make_dataset(db, "ds_fz", 2);
    pg_test_jobs_drain(db);
    pg_test_job_admit(db, "t1", "ds_fz", "job_fz", "{}");
    pg_job_row *r;
    int found = 0, held = 1;
    int64_t t0 = (int64_t)time(NULL);
    ck_assert_int_eq(pg_db_job_claim(db, "w:old", t0, 2, &r, &found, &e), PG_OK);
    ck_assert(found);
    ck_assert_str_eq(r->id, "job_fz");
    pg_job_rows_free(r, 1);

    PGconn *own = pgt_side(), *mon = pgt_side();
    int pid = PQbackendPID(own);
    pgt_exec_ok(own, "BEGIN");
    pgt_exec_ok(own, "SET LOCAL idle_in_transaction_session_timeout = 1000");
    ck_assert_int_eq(scalar(own, "SELECT count(*) FROM (SELECT 1 FROM jobs WHERE id = 'job_fz' "
                                 "AND owner = 'w:old' AND status = 'running' FOR UPDATE) l"),
                     1);
    size_t n = (size_t)16 << 20;
    char *blob = calloc(1, n);
    ck_assert_ptr_nonnull(blob);
    const char *v[4] = {"job_fz", "400", "0", blob};
    int len[4] = {0, 0, 0, (int)n}, fmt[4] = {0, 0, 0, 1};
    ck_assert_int_eq(PQsetnonblocking(own, 1), 0);
    ck_assert_int_eq(PQsendQueryParams(own,
                                       "INSERT INTO checkpoint_chunks(job_id, step, i, data) "
                                       "VALUES ($1, $2, $3, $4)",
                                       4, NULL, v, len, fmt, 0),
                     1);
    /* part of the message is out, the rest stays in libpq's buffer: the
     * frozen client */
    ck_assert_int_eq(PQflush(own), 1);
    int reading = 0;
    for (int i = 0; i < 500 && !reading; i++) {
        reading = frozen_state(mon, pid, "active", "ClientRead") == 1;
        if (!reading) nap_ms(10);
    }
    ck_assert_msg(reading, "the frozen owner's backend is not reading a statement");

    /* Its lease runs out; the first claim after that finds nothing (the row
     * is locked) and ends the holder once it has held the row 2 s; a later
     * claim takes the job. */
    double start = mono_s();
    found = 0;
    while (!found && mono_s() - start < 60) {
        ck_assert_msg(pg_db_job_claim(db, "w:new", (int64_t)time(NULL), 3600, &r, &found, &e) ==
                          PG_OK,
                      "%s", e.msg);
        if (found) {
            ck_assert_str_eq(r->id, "job_fz");
            pg_job_rows_free(r, 1);
        } else {
            /* before the lease ran out the holder is left alone */
            if ((int64_t)time(NULL) < t0 + 2)
                ck_assert_int_eq(scalar(mon, "SELECT count(*) FROM pg_stat_activity WHERE "
                                             "state = 'active' AND wait_event = 'ClientRead' AND "
                                             "query LIKE 'INSERT INTO checkpoint_chunks%'"),
                                 1);
            nap_ms(200);
        }
    }
    ck_assert_msg(found, "no claim took the job over from its frozen owner in 60 s");
    char q[128];
    snprintf(q, sizeof q, "SELECT count(*) FROM pg_stat_activity WHERE pid = %d", pid);
    ck_assert_int_eq(scalar(mon, q), 0); /* its session is gone */
    fprintf(stderr, "frozen owner (lease 2 s) taken over after %.1f s\n", mono_s() - start);

    /* The owner wakes: what it had sent was rolled back, its connection is
     * gone, and its writes through a new one are refused by the fence. */
    int flushed = 0;
    for (int i = 0; i < 100 && !flushed; i++) flushed = PQflush(own) != 1;
    PGresult *res;
    while ((res = PQgetResult(own)) != NULL) {
        ck_assert_int_ne(PQresultStatus(res), PGRES_COMMAND_OK);
        PQclear(res);
    }
    PQfinish(own);
    free(blob);
    ck_assert_int_eq(scalar(mon, "SELECT count(*) FROM checkpoint_chunks WHERE job_id = 'job_fz'"),
                     0);
    unsigned char b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ck_assert_int_eq(pg_db_ckpt_put_owned(db, "job_fz", "w:old", 400, b, sizeof b,
                                          (uint32_t)crc32(0L, b, sizeof b), &held, &e),
                     PG_OK);
    ck_assert(!held);
    pg_job_patch pt = {.now = (int64_t)time(NULL), .step = 400, .steps_reserved = 800};
    ck_assert_int_eq(pg_db_job_patch_owned(db, "job_fz", "w:old", &pt, &held, &e), PG_OK);
    ck_assert(!held);
    ck_assert_int_eq(pg_db_job_heartbeat(db, "job_fz", "w:old", (int64_t)time(NULL), 2, &held, &e),
                     PG_OK);
    ck_assert(!held);
    pg_ckpt_row *rows;
    size_t count;
    ck_assert_int_eq(pg_db_ckpt_list(db, "job_fz", &rows, &count, &e), PG_OK);
    ck_assert_uint_eq(count, 0);
    free(rows);
    ck_assert_int_eq(scalar(mon, "SELECT count(*) FROM jobs WHERE id = 'job_fz' AND owner = "
                                 "'w:new' AND status = 'running' AND step = 0 AND "
                                 "steps_reserved = 0"),
                     1);
    PQfinish(mon);
    pg_db_close(db);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("db_pg");
    TCase *tc = tcase_create("postgres");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, concurrent_opens_migrate_once);
    tcase_add_test(tc, version_1_database_migrates_forward);
    tcase_add_test(tc, version_1_tokens_migrate_forward);
    tcase_add_test(tc, open_errors_hide_the_password);
    tcase_add_test(tc, append_and_read_back_chunked_blocks);
    tcase_add_test(tc, failed_appends_leave_nothing);
    tcase_add_test(tc, append_commit_conflicts_are_rerun);
    tcase_add_test(tc, open_appenders_hold_no_connection);
    tcase_add_test(tc, corruption_is_detected);
    tcase_add_test(tc, checkpoints_round_trip);
    tcase_add_test(tc, idempotency_one_winner);
    tcase_add_test(tc, concurrent_admissions_never_overspend);
    suite_add_tcase(s, tc);
    TCase *tf = tcase_create("frozen");
    tcase_set_timeout(tf, 120);
    tcase_add_test(tf, an_owner_frozen_inside_a_statement_is_taken_over);
    suite_add_tcase(s, tf);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
