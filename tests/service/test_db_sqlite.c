/* The SQLite backend's own promises: its files (row blocks, checkpoints,
 * admin token next to the database), schema versions (a data dir written by
 * an older privgend opens and works; a newer one is refused), crash-orphaned
 * idempotency reservations, and corrupt files detected on read. */
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "service/auth.h"
#include "service/block.h"
#include "service/store/db.h"
#include "service/ledger.h"
#include "support/pg_jobs_test.h"
#include "support/pg_test.h"
#include "test_support.h"

static char dir[64], url[128];

static void setup(void)
{
    pg_test_tmpdir(dir, sizeof dir);
    snprintf(url, sizeof url, "sqlite:%s/privgen.db", dir);
}

static void teardown(void)
{
    pg_test_rmrf(dir);
}

static pg_db *open_db(void)
{
    pg_db *db = NULL;
    pg_error err = {0};
    ck_assert_msg(pg_db_open(url, NULL, &db, &err) == PG_OK, "%s", err.msg);
    ck_assert_str_eq(pg_db_backend(db), "sqlite");
    return db;
}

static void sql(const char *q)
{
    char path[128];
    snprintf(path, sizeof path, "%s/privgen.db", dir);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(h, q, 0, 0, &msg);
    ck_assert_msg(rc == SQLITE_OK, "%s", msg ? msg : "?");
    sqlite3_close(h);
}

/* The schema version this binary writes (7: cancel_requested, 8: quality
 * reports, 9: owners), and that of db. */
enum { SCHEMA_NOW = 9 };

static int schema_version(pg_db *db)
{
    int v;
    ck_assert_int_eq(pg_db_schema_version(db, &v, NULL), PG_OK);
    return v;
}

/* Appends the nx values x (rows of width d) to dataset id of tenant, at
 * most max_rows rows in all: the commit's status, and the dataset's row
 * count after it into *n. */
static int append(pg_db *db, const char *tenant, const char *id, size_t d, const float *x,
                  size_t nx, int64_t max_rows, int64_t *n)
{
    pg_db_append *a;
    ck_assert_int_eq(pg_db_append_begin(db, tenant, id, d, &a, NULL), PG_OK);
    ck_assert_int_eq(pg_db_append_write(a, x, nx, NULL), PG_OK);
    int found;
    int64_t added;
    return pg_db_append_commit(a, NULL, max_rows, &found, &added, n, NULL);
}

/* The one job db holds (pg_job_rows_free(jr, 1)). */
static pg_job_row *only_job(pg_db *db)
{
    pg_job_row *jr;
    size_t n;
    ck_assert_int_eq(pg_db_job_load_all(db, &jr, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 1);
    return jr;
}

static int file_exists(const char *fmt, const char *a, const char *b)
{
    char p[512];
    snprintf(p, sizeof p, fmt, dir, a, b);
    return access(p, F_OK) == 0;
}

START_TEST(schema_version_and_newer_refused)
{
    pg_db *db = open_db();
    ck_assert_int_eq(schema_version(db), SCHEMA_NOW);
    pg_db_close(db);
    /* a database from a future binary is refused, not silently used */
    sql("UPDATE schema_version SET version=99");
    pg_error err = {0};
    ck_assert_int_eq(pg_db_open(url, NULL, &db, &err), PG_ENOTSUP);
    ck_assert_ptr_nonnull(strstr(err.msg, "newer"));
    /* the sqlite:// spelling names the same file */
    char u2[160];
    snprintf(u2, sizeof u2, "sqlite://%s/privgen.db", dir);
    ck_assert_int_eq(pg_db_open(u2, NULL, &db, &err), PG_ENOTSUP);
}
END_TEST

/* Writes, in one go, what a binary of schema version 1 to 3 wrote (its
 * text, frozen here on purpose, not the current migration text): version
 * v, the tables those binaries all wrote alike, jobs (with its indexes) as
 * jobs says, then the rows. */
static void old_data(int v, const char *jobs, const char *rows)
{
    static const char before_jobs[] =
        "CREATE TABLE tenants(id TEXT PRIMARY KEY, created_at INTEGER NOT NULL);"
        "CREATE TABLE tokens(id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL REFERENCES tenants(id),"
        " scope TEXT NOT NULL CHECK(scope IN ('admin','read')), hash BLOB NOT NULL,"
        " created_at INTEGER NOT NULL, revoked INTEGER NOT NULL DEFAULT 0);"
        "CREATE TABLE datasets(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
        " tenant_id TEXT NOT NULL, name TEXT NOT NULL, meta TEXT NOT NULL, d INTEGER NOT NULL,"
        " n INTEGER NOT NULL DEFAULT 0, blocks INTEGER NOT NULL DEFAULT 0,"
        " bytes INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL);"
        "CREATE INDEX datasets_tenant ON datasets(tenant_id, seq);"
        "CREATE TABLE row_blocks(dataset_id TEXT NOT NULL, k INTEGER NOT NULL, n INTEGER NOT NULL,"
        " bytes INTEGER NOT NULL, has_labels INTEGER NOT NULL, created_at INTEGER NOT NULL,"
        " PRIMARY KEY(dataset_id, k));";
    static const char after_jobs[] =
        "CREATE TABLE ledger(seq INTEGER PRIMARY KEY AUTOINCREMENT, dataset_id TEXT NOT NULL,"
        " job_id TEXT, state TEXT NOT NULL, rdp TEXT, epsilon REAL, delta REAL,"
        " created_at INTEGER NOT NULL);"
        "CREATE TABLE checkpoints(job_id TEXT NOT NULL, step INTEGER NOT NULL, path TEXT NOT NULL,"
        " bytes INTEGER NOT NULL, crc32 INTEGER NOT NULL, created_at INTEGER NOT NULL,"
        " PRIMARY KEY(job_id, step));"
        "CREATE TABLE idempotency(tenant_id TEXT NOT NULL, key TEXT NOT NULL, fp BLOB NOT NULL,"
        " status INTEGER NOT NULL, location TEXT, body BLOB NOT NULL, created_at INTEGER NOT NULL,"
        " PRIMARY KEY(tenant_id, key));";
    size_t cap = sizeof before_jobs + sizeof after_jobs + strlen(jobs) + strlen(rows) + 128;
    char *q = malloc(cap);
    if (!q) ck_abort_msg("out of memory");
    snprintf(q, cap,
             "CREATE TABLE schema_version(version INTEGER NOT NULL);"
             "INSERT INTO schema_version VALUES(%d);%s%s%s%s",
             v, before_jobs, jobs, after_jobs, rows);
    sql(q);
    free(q);
}

/* The jobs table and the rows exactly as privgend wrote them before the
 * storage contract (schema version 3, frozen here on purpose: this is the
 * old binary's data, not the current migration text). */
static const char OLD_V3_JOBS[] =
    "CREATE TABLE jobs(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
    " tenant_id TEXT NOT NULL, dataset_id TEXT NOT NULL, status TEXT NOT NULL,"
    " spec TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,"
    " method TEXT NOT NULL DEFAULT '', started_at INTEGER, finished_at INTEGER, error TEXT,"
    " step INTEGER NOT NULL DEFAULT 0, steps_reserved INTEGER NOT NULL DEFAULT 0,"
    " data_n INTEGER NOT NULL DEFAULT 0, public_dataset_id TEXT,"
    " public_n INTEGER NOT NULL DEFAULT 0);";
static const char OLD_V3_ROWS[] =
    "INSERT INTO tenants VALUES('ten_old', 1700000000);"
    "INSERT INTO tokens(id, tenant_id, scope, hash, created_at) VALUES('tok_0123456789abcdef',"
    " 'ten_old', 'admin', zeroblob(32), 1700000000);"
    "INSERT INTO datasets(id, tenant_id, name, meta, d, n, blocks, bytes, created_at) VALUES("
    " 'ds_old', 'ten_old', 'legacy', '{\"shape\":[2]}', 2, 3, 1, 68, 1700000001);"
    "INSERT INTO row_blocks VALUES('ds_old', 0, 3, 68, 1, 1700000002);"
    "INSERT INTO jobs(id, tenant_id, dataset_id, status, spec, created_at, updated_at, method,"
    " started_at, finished_at, step, steps_reserved, data_n) VALUES('job_old', 'ten_old',"
    " 'ds_old', 'succeeded', '{}', 1700000003, 1700000009, 'swd_flow', 1700000004, 1700000009,"
    " 7, 7, 3);"
    "INSERT INTO ledger(dataset_id, job_id, state, rdp, epsilon, delta, created_at) VALUES("
    " 'ds_old', 'job_old', 'reserved', '{\"orders\":[2,4],\"rdp\":[0.5,1.0],"
    "\"delta_extra\":0,\"noise_multiplier\":1.5,\"sampling_rate\":0.1,\"steps\":7,"
    "\"mechanism\":\"poisson_subsampled_gaussian\",\"approximate\":false}', 2.5, 1e-5,"
    " 1700000003);"
    "INSERT INTO idempotency VALUES('ten_old', 'key1', zeroblob(32), 201, '/v1/datasets/ds_old',"
    " '{\"id\":\"ds_old\"}', 1700000001);"
    "INSERT INTO idempotency VALUES('ten_old', 'dead', zeroblob(32), 0, NULL, x'', 1700000001);";

START_TEST(old_data_dir_opens_and_works)
{
    old_data(3, OLD_V3_JOBS, OLD_V3_ROWS);
    /* the old binary's files: one labeled block and one checkpoint */
    char p[512];
    snprintf(p, sizeof p, "%s/datasets", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/datasets/ds_old", dir);
    mkdir(p, 0700);
    pg_block_writer w;
    ck_assert_int_eq(pg_block_open(&w, p, 2, NULL), PG_OK);
    const float x[6] = {0.5f, -1, 2, 3, 4, 5};
    const int32_t lab[3] = {1, 0, 1};
    ck_assert_int_eq(pg_block_write(&w, x, 6, NULL), PG_OK);
    uint64_t rows, bytes;
    ck_assert_int_eq(pg_block_finish(&w, lab, &rows, &bytes, NULL), PG_OK);
    ck_assert_int_eq((int)bytes, 68);
    char final[600];
    snprintf(final, sizeof final, "%s/rows-0.f32", p);
    ck_assert_int_eq(rename(w.path, final), 0);
    pg_block_close(&w);
    const unsigned char ck[4] = {9, 8, 7, 6};
    snprintf(p, sizeof p, "%s/checkpoints/job_old", dir);
    char c1[128];
    snprintf(c1, sizeof c1, "%s/checkpoints", dir);
    mkdir(c1, 0700);
    mkdir(p, 0700);
    snprintf(final, sizeof final, "%s/7.pgc", p);
    FILE *f = fopen(final, "wb");
    fwrite(ck, 1, 4, f);
    fclose(f);
    char q[1024];
    snprintf(q, sizeof q, "INSERT INTO checkpoints VALUES('job_old', 7, '%s', 4, %lu, 1700000009);",
             final, (unsigned long)crc32(0L, ck, 4));
    sql(q);

    pg_db *db = open_db();
    ck_assert_int_eq(schema_version(db), SCHEMA_NOW);
    pg_token t;
    int found;
    ck_assert_int_eq(pg_db_token_get(db, "tok_0123456789abcdef", &t, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(t.scope, PG_SCOPE_ADMIN);
    /* migration 4: the old token is listed, unrevoked and never expires */
    ck_assert_int_gt(t.seq, 0);
    ck_assert_int_eq(t.expires_at, 0);
    ck_assert_int_eq(t.revoked_at, 0);
    ck_assert_int_eq(t.last_used_at, 0);
    pg_token *toks;
    size_t ntok;
    ck_assert_int_eq(pg_db_token_list(db, "ten_old", 0, 10, &toks, &ntok, NULL), PG_OK);
    ck_assert_uint_eq(ntok, 1);
    ck_assert_str_eq(toks[0].id, "tok_0123456789abcdef");
    free(toks);
    pg_db_dataset d;
    ck_assert_int_eq(pg_db_dataset_get(db, "ten_old", "ds_old", &d, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(d.n, 3);
    pg_db_dataset_free(&d);
    pg_block all;
    int labeled;
    ck_assert_int_eq(pg_db_rows_load(db, "ds_old", 2, 1 << 20, &all, &labeled, NULL), PG_OK);
    ck_assert_uint_eq(all.n, 3);
    ck_assert_int_eq(labeled, 1);
    ck_assert_mem_eq(all.x, x, sizeof x);
    ck_assert_mem_eq(all.labels, lab, sizeof lab);
    pg_block_free(&all);
    pg_job_row *jr = only_job(db);
    ck_assert_str_eq(jr[0].status, "succeeded");
    ck_assert_str_eq(jr[0].public_dataset_id, "");
    ck_assert_int_eq(jr[0].step, 7);
    pg_job_rows_free(jr, 1);
    size_t n;
    pg_ckpt_row *cr;
    ck_assert_int_eq(pg_db_ckpt_list(db, "job_old", &cr, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 1);
    free(cr);
    unsigned char *got;
    size_t len;
    ck_assert_int_eq(pg_db_ckpt_get(db, "job_old", 7, 1 << 20, &got, &len, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_uint_eq(len, 4);
    ck_assert_mem_eq(got, ck, 4);
    free(got);
    /* the old ledger row still counts; old idempotent replies had no owning
     * token (migration 9), so they replay to nobody: a retry across the
     * upgrade runs afresh rather than replay to a token that never made it */
    pg_ledger_curve c;
    ck_assert_int_eq(pg_ledger_spent(db, "ds_old", &c, NULL), PG_OK);
    ck_assert_int_eq(c.entries, 1);
    unsigned char fp[32] = {0};
    int state;
    pg_idem_response prev;
    ck_assert_int_eq(pg_db_idem_begin(db, "ten_old", "tok_a", "key1", fp, &state, &prev, NULL),
                     PG_OK);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    /* the crash-orphaned reservation was dropped at open */
    ck_assert_int_eq(pg_db_idem_begin(db, "ten_old", "tok_a", "dead", fp, &state, &prev, NULL),
                     PG_OK);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    /* and the old dataset takes new rows next to its old block */
    int64_t nn;
    ck_assert_int_eq(append(db, "ten_old", "ds_old", 2, x, 2, 100, &nn), PG_OK);
    ck_assert_int_eq(nn, 4);
    ck_assert(file_exists("%s/datasets/%s/%s", "ds_old", "rows-1.f32"));
    /* migration 4: the old job has no stored history until it is written */
    char *doc;
    ck_assert_int_eq(pg_db_job_history_get(db, "job_old", &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    /* and the table migration 4 made takes a new job's history */
    const char *job = "job_new";
    pg_test_job_run(db, "ten_old", "ds_old", job, "w:1");
    int held;
    ck_assert_int_eq(pg_db_job_history_put_owned(db, job, "w:1", "{\"v\":1}", &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    ck_assert_int_eq(pg_db_job_history_get(db, job, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(doc, "{\"v\":1}");
    free(doc);
    /* deleting the old job removes its checkpoint file; its ledger row stays */
    int conflict;
    ck_assert(file_exists("%s/checkpoints/%s/%s", "job_old", "7.pgc"));
    ck_assert_int_eq(pg_db_job_delete(db, "job_old", &found, &conflict, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(conflict, 0);
    ck_assert(!file_exists("%s/checkpoints/%s/%s", "job_old", "7.pgc"));
    ck_assert_int_eq(pg_ledger_spent(db, "ds_old", &c, NULL), PG_OK);
    ck_assert_int_eq(c.entries, 1);
    pg_db_close(db);
}
END_TEST

START_TEST(version_1_data_dir_is_migrated)
{
    /* Only the first migration applied: jobs lack the later columns. */
    old_data(1,
             "CREATE TABLE jobs(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
             " tenant_id TEXT NOT NULL, dataset_id TEXT NOT NULL, status TEXT NOT NULL,"
             " spec TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);"
             "CREATE INDEX jobs_dataset ON jobs(dataset_id, status);",
             "INSERT INTO datasets(id, tenant_id, name, meta, d, created_at) VALUES('ds_v1', 't1',"
             " 'n', '{}', 2, 1);"
             "INSERT INTO jobs VALUES(1, 'job_v1', 't1', 'ds_v1', 'queued', '{}', 1, 1);");
    pg_db *db = open_db();
    ck_assert_int_eq(schema_version(db), SCHEMA_NOW);
    pg_job_row *jr = only_job(db);
    ck_assert_str_eq(jr[0].id, "job_v1");
    ck_assert_str_eq(jr[0].method, "");
    ck_assert_int_eq(jr[0].steps_reserved, 0);
    pg_job_rows_free(jr, 1);
    int done;
    ck_assert_int_eq(pg_db_job_cancel_queued(db, "job_v1", &done, NULL), PG_OK);
    ck_assert_int_eq(done, 1);
    pg_db_close(db);
}
END_TEST

/* Dataset id of tenant "t" with rows of width d. */
static void insert_dataset(pg_db *db, const char *id, int64_t d)
{
    pg_db_dataset ds = {0};
    snprintf(ds.id, sizeof ds.id, "%s", id);
    snprintf(ds.tenant, sizeof ds.tenant, "t");
    ds.name = "n";
    ds.meta = "{}";
    ds.d = d;
    pg_error err = {0};
    ck_assert_msg(pg_db_dataset_insert(db, &ds, &err) == PG_OK, "%s", err.msg);
}

START_TEST(files_live_next_to_the_database)
{
    pg_db *db = open_db();
    insert_dataset(db, "ds_f", 1);
    ck_assert(file_exists("%s/datasets/%s%s", "ds_f", ""));
    pg_db_append *a;
    float x[3] = {1, 2, 3};
    int found;
    int64_t n;
    /* an aborted or refused append leaves no file behind */
    ck_assert_int_eq(pg_db_append_begin(db, "t", "ds_f", 1, &a, NULL), PG_OK);
    ck_assert_int_eq(pg_db_append_write(a, x, 3, NULL), PG_OK);
    pg_db_append_abort(a);
    ck_assert_int_eq(append(db, "t", "ds_f", 1, x, 3, 2, &n), PG_ERANGE);
    char p[256];
    snprintf(p, sizeof p, "%s/datasets/ds_f", dir);
    int entries = 0;
    char cmd[320];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", p);
    FILE *ls = popen(cmd, "r");
    ck_assert(fscanf(ls, "%d", &entries) == 1);
    pclose(ls);
    ck_assert_int_eq(entries, 0);
    ck_assert_int_eq(append(db, "t", "ds_f", 1, x, 3, 10, &n), PG_OK);
    ck_assert(file_exists("%s/datasets/%s/%s", "ds_f", "rows-0.f32"));
    const unsigned char ck[3] = {1, 2, 3};
    const char *job = "job_f";
    pg_test_job_run(db, "t", "ds_f", job, "w:1");
    ck_assert_int_eq(pg_test_ckpt_put(db, job, "w:1", 5, ck, 3, (uint32_t)crc32(0L, ck, 3)), PG_OK);
    ck_assert(file_exists("%s/checkpoints/%s/%s", job, "5.pgc"));
    pg_test_job_end(db, job, "w:1", "succeeded", NULL);
    /* deleting the dataset removes its directory */
    int conflict;
    ck_assert_int_eq(pg_db_dataset_delete(db, "t", "ds_f", &found, &conflict, NULL), PG_OK);
    ck_assert(!file_exists("%s/datasets/%s%s", "ds_f", ""));
    pg_db_close(db);
}
END_TEST

START_TEST(corrupt_files_are_detected)
{
    pg_db *db = open_db();
    insert_dataset(db, "ds_c", 2);
    float x[20] = {0};
    int found;
    int64_t n;
    ck_assert_int_eq(append(db, "t", "ds_c", 2, x, 20, 100, &n), PG_OK);
    char blk[256];
    snprintf(blk, sizeof blk, "%s/datasets/ds_c/rows-0.f32", dir);
    FILE *f = fopen(blk, "r+b");
    fseek(f, 40, SEEK_SET);
    fputc(0x55, f);
    fclose(f);
    pg_block all;
    int labeled;
    pg_error err = {0};
    ck_assert_int_eq(pg_db_rows_load(db, "ds_c", 2, 1 << 20, &all, &labeled, &err), PG_EFORMAT);
    ck_assert_ptr_null(all.x);
    /* a checkpoint file changed or lost behind the database's back */
    const unsigned char ck[4] = {1, 2, 3, 4};
    const char *job = "job_c";
    pg_test_job_run(db, "t", "ds_c", job, "w:1");
    ck_assert_int_eq(pg_test_ckpt_put(db, job, "w:1", 1, ck, 4, (uint32_t)crc32(0L, ck, 4)), PG_OK);
    char cp[256];
    snprintf(cp, sizeof cp, "%s/checkpoints/%s/1.pgc", dir, job);
    f = fopen(cp, "r+b");
    fputc(0x42, f);
    fclose(f);
    unsigned char *got;
    size_t len;
    ck_assert_int_eq(pg_db_ckpt_get(db, job, 1, 1 << 20, &got, &len, &found, NULL), PG_EFORMAT);
    unlink(cp);
    ck_assert_int_eq(pg_db_ckpt_get(db, job, 1, 1 << 20, &got, &len, &found, NULL), PG_EIO);
    pg_db_close(db);
}
END_TEST

START_TEST(bootstrap_token_and_no_plaintext)
{
    pg_db *db = open_db();
    int created, has_first;
    pg_token first, again;
    ck_assert_int_eq(pg_auth_bootstrap(db, dir, &created, &first, &has_first, NULL), PG_OK);
    ck_assert_int_eq(created, 1);
    ck_assert_int_eq(has_first, 1);
    ck_assert_int_eq(pg_auth_bootstrap(db, dir, &created, &again, &has_first, NULL), PG_OK);
    ck_assert_int_eq(created, 0);
    ck_assert_int_eq(has_first, 1); /* the second start names the first's token */
    ck_assert_str_eq(again.id, first.id);
    ck_assert_int_eq(again.created_at, first.created_at);
    char path[128], token[128] = {0}, hdr[160];
    snprintf(path, sizeof path, "%s/admin.token", dir);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    FILE *f = fopen(path, "r");
    ck_assert(fgets(token, sizeof token, f) != NULL);
    fclose(f);
    token[strcspn(token, "\n")] = '\0';
    snprintf(hdr, sizeof hdr, "Bearer %s", token);
    pg_token t;
    int ok;
    ck_assert_int_eq(pg_auth_verify(db, hdr, &t, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 1);
    ck_assert_int_eq(t.scope, PG_SCOPE_ADMIN);
    pg_db_close(db);
    /* the database holds no plaintext */
    sqlite3 *h;
    snprintf(path, sizeof path, "%s/privgen.db", dir);
    sqlite3_open(path, &h);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(h, "SELECT count(*) FROM tokens WHERE instr(hash, ?) > 0 OR id = ?", -1, &q,
                       NULL);
    sqlite3_bind_text(q, 1, token + 21, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, token, -1, SQLITE_STATIC);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(q, 0), 0);
    sqlite3_finalize(q);
    sqlite3_close(h);
}
END_TEST

/* Two handles on one file (two processes sharing a data dir): opening the
 * second must not drop the first's reservation of a request it is still
 * running (the old open deleted every reservation: the same key then ran
 * twice, and the first's response could not be stored). A reservation
 * older than the stale bound (15 min) is a dead request's: swept at open,
 * or taken over by the next begin. */
START_TEST(idempotency_reservations_survive_a_second_open)
{
    pg_db *a = open_db();
    unsigned char fp[32] = {3};
    int state;
    pg_idem_response prev = {0};
    ck_assert_int_eq(pg_db_idem_begin(a, "t", "tok_a", "k", fp, &state, &prev, NULL), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    pg_db *b = open_db(); /* a's request is still running */
    ck_assert_int_eq(pg_db_idem_begin(b, "t", "tok_a", "k", fp, &state, &prev, NULL), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_BUSY);
    pg_idem_response r = {.status = 201, .location = "/v1/x", .body = "{}", .body_len = 2};
    ck_assert_int_eq(pg_db_idem_finish(a, "t", "tok_a", "k", &r, NULL), PG_OK);
    ck_assert_int_eq(pg_db_idem_begin(b, "t", "tok_a", "k", fp, &state, &prev, NULL), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_REPLAY);
    ck_assert_int_eq(prev.status, 201);
    pg_idem_free(&prev);

    /* Dead requests: their reservations made an hour ago. */
    ck_assert_int_eq(pg_db_idem_begin(a, "t", "tok_a", "k1", fp, &state, &prev, NULL), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    ck_assert_int_eq(pg_db_idem_begin(a, "t", "tok_a", "k2", fp, &state, &prev, NULL), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    sql("UPDATE idempotency SET created_at = strftime('%s','now') - 3600 WHERE key IN "
        "('k1','k2')");
    /* taken over by a begin, with any fingerprint (the old request is gone) */
    unsigned char fp2[32] = {4};
    ck_assert_int_eq(pg_db_idem_begin(b, "t", "tok_a", "k1", fp2, &state, &prev, NULL), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    ck_assert_int_eq(pg_db_idem_begin(a, "t", "tok_a", "k1", fp2, &state, &prev, NULL), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_BUSY); /* now b's, fresh */
    /* swept by an open */
    pg_db *c = open_db();
    ck_assert_int_eq(pg_db_idem_begin(c, "t", "tok_a", "k2", fp2, &state, &prev, NULL), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    /* and the stored response survives every open */
    ck_assert_int_eq(pg_db_idem_begin(c, "t", "tok_a", "k", fp, &state, &prev, NULL), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_REPLAY);
    pg_idem_free(&prev);
    pg_db_close(c);
    pg_db_close(b);
    pg_db_close(a);
}
END_TEST

START_TEST(probe_fails_when_blocks_dir_is_not_a_dir)
{
    pg_db *db = open_db();
    ck_assert_int_eq(pg_db_probe(db, NULL), PG_OK);
    char p[128], q[128];
    snprintf(p, sizeof p, "%s/datasets", dir);
    snprintf(q, sizeof q, "%s/datasets.away", dir);
    ck_assert_int_eq(rename(p, q), 0);
    int fd = open(p, O_WRONLY | O_CREAT, 0600);
    close(fd);
    pg_error err;
    ck_assert_int_eq(pg_db_probe(db, &err), PG_EIO);
    unlink(p);
    rename(q, p);
    ck_assert_int_eq(pg_db_probe(db, NULL), PG_OK);
    pg_db_close(db);
}
END_TEST

/* Kill -9 during an upload left datasets/<id>/.tmp-* for ever.
 * Opening the data dir removes such a spool file, and keeps the one a live
 * writer (here: a writer sharing the data dir) holds. */
START_TEST(open_sweeps_dead_upload_spools)
{
    pg_db *db = open_db();
    pg_db_close(db);
    char d[256], stale[512];
    snprintf(d, sizeof d, "%s/datasets/ds_spool", dir);
    ck_assert_int_eq(mkdir(d, 0700), 0);
    snprintf(stale, sizeof stale, "%s/.tmp-0123456789abcdef", d);
    FILE *f = fopen(stale, "wb");
    char junk[4096] = {1};
    ck_assert_uint_eq(fwrite(junk, 1, sizeof junk, f), sizeof junk);
    fclose(f);
    pg_block_writer w;
    ck_assert_int_eq(pg_block_open(&w, d, 2, NULL), PG_OK);
    db = open_db();
    ck_assert_int_eq(access(stale, F_OK), -1);
    ck_assert_int_eq(access(w.path, F_OK), 0);
    pg_db_close(db);
    pg_block_abort(&w);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("db_sqlite");
    TCase *t = tcase_create("sqlite");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, schema_version_and_newer_refused);
    tcase_add_test(t, old_data_dir_opens_and_works);
    tcase_add_test(t, version_1_data_dir_is_migrated);
    tcase_add_test(t, files_live_next_to_the_database);
    tcase_add_test(t, corrupt_files_are_detected);
    tcase_add_test(t, bootstrap_token_and_no_plaintext);
    tcase_add_test(t, idempotency_reservations_survive_a_second_open);
    tcase_add_test(t, probe_fails_when_blocks_dir_is_not_a_dir);
    tcase_add_test(t, open_sweeps_dead_upload_spools);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
