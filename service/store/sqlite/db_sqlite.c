/* service/store/sqlite/db_sqlite.c - the SQLite backend: open, schema, probe and
 * idempotency keys; tokens are in db_sqlite_tokens.c (see db_sqlite.h for
 * the locking and file rules). */
#include "service/store/sqlite/db_sqlite.h"
#include "service/block.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Migration k brings the schema from version k to k+1. Append only: never
 * edit a shipped migration, add the next one (data dirs written by any
 * earlier privgend must keep opening). */
static const char *const MIGRATIONS[] = {
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
    " PRIMARY KEY(dataset_id, k));"
    "CREATE TABLE jobs(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
    " tenant_id TEXT NOT NULL, dataset_id TEXT NOT NULL, status TEXT NOT NULL,"
    " spec TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);"
    "CREATE INDEX jobs_dataset ON jobs(dataset_id, status);"
    "CREATE TABLE ledger(seq INTEGER PRIMARY KEY AUTOINCREMENT, dataset_id TEXT NOT NULL,"
    " job_id TEXT, state TEXT NOT NULL, rdp TEXT, epsilon REAL, delta REAL,"
    " created_at INTEGER NOT NULL);"
    "CREATE TABLE checkpoints(job_id TEXT NOT NULL, step INTEGER NOT NULL, path TEXT NOT NULL,"
    " bytes INTEGER NOT NULL, crc32 INTEGER NOT NULL, created_at INTEGER NOT NULL,"
    " PRIMARY KEY(job_id, step));"
    "CREATE TABLE idempotency(tenant_id TEXT NOT NULL, key TEXT NOT NULL, fp BLOB NOT NULL,"
    " status INTEGER NOT NULL, location TEXT, body BLOB NOT NULL, created_at INTEGER NOT NULL,"
    " PRIMARY KEY(tenant_id, key));",
    /* 2: the job layer's columns. steps_reserved is the write-ahead count of
     * mechanism invocations a job may have run. */
    "ALTER TABLE jobs ADD COLUMN method TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE jobs ADD COLUMN started_at INTEGER;"
    "ALTER TABLE jobs ADD COLUMN finished_at INTEGER;"
    "ALTER TABLE jobs ADD COLUMN error TEXT;"
    "ALTER TABLE jobs ADD COLUMN step INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN steps_reserved INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN data_n INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX jobs_tenant ON jobs(tenant_id, seq);"
    "CREATE INDEX ledger_dataset ON ledger(dataset_id, state);",
    /* 3: the public dataset a job may read (no ledger entry: it is public)
     * and its row count at submission. */
    "ALTER TABLE jobs ADD COLUMN public_dataset_id TEXT;"
    "ALTER TABLE jobs ADD COLUMN public_n INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX jobs_public ON jobs(public_dataset_id, status);",
    /* 4: a job's durable view (service/jobs/jobs_hist.c), one JSON document. */
    "CREATE TABLE job_history(job_id TEXT PRIMARY KEY, doc TEXT NOT NULL,"
    " updated_at INTEGER NOT NULL);",
    /* 5: token list order, expiry, revocation and last use (db_sqlite.h). */
    SQ_MIGRATION_TOKENS,
    /* 6: the shared job queue's lease (service/store/db.h): the replica holding a
     * job and until when (NULL: nobody). */
    "ALTER TABLE jobs ADD COLUMN owner TEXT;"
    "ALTER TABLE jobs ADD COLUMN lease_until INTEGER;"
    "CREATE INDEX jobs_active ON jobs(seq) WHERE status IN ('queued','running');",
    /* 7: a cancel of a running job asked through any replica (service/store/db.h,
     * pg_db_job_cancel_running); its owner acts on it. */
    "ALTER TABLE jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;",
    /* 8: quality reports and their figures (db_sqlite.h). */
    SQ_MIGRATION_REPORTS,
    /* 9: who minted a token (db.h, pg_token.minted_by), and
     * idempotency keys owned by a token: a key's response replays only to
     * the token that made it. SQLite cannot change a primary key in place,
     * so the table is rebuilt; keys stored before (token '') never match
     * again, so a retry across this upgrade runs afresh. */
    "ALTER TABLE tokens ADD COLUMN minted_by TEXT;"
    "CREATE TABLE idempotency_v9(tenant_id TEXT NOT NULL, token_id TEXT NOT NULL,"
    " key TEXT NOT NULL, fp BLOB NOT NULL, status INTEGER NOT NULL, location TEXT,"
    " body BLOB NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY(tenant_id, token_id, key));"
    "INSERT INTO idempotency_v9 SELECT tenant_id, '', key, fp, status, location, body,"
    " created_at FROM idempotency;"
    "DROP TABLE idempotency;"
    "ALTER TABLE idempotency_v9 RENAME TO idempotency;",
};
#define NMIGRATIONS ((int)(sizeof MIGRATIONS / sizeof MIGRATIONS[0]))

int64_t sq_now(void)
{
    return (int64_t)time(NULL);
}

int sq_fail(sq_db *s, pg_error *err, const char *what)
{
    return pg_error_set(err, PG_EIO, "database error %s: %s", what, sqlite3_errmsg(s->db));
}

int sq_exec(sq_db *s, const char *sql, pg_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        pg_error_set(err, PG_EIO, "database error: %s", msg ? msg : "unknown");
        sqlite3_free(msg);
        return PG_EIO;
    }
    return PG_OK;
}

int sq_prep(sq_db *s, const char *sql, sqlite3_stmt **st, pg_error *err)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
        return sq_fail(s, err, "preparing a statement");
    return PG_OK;
}

int sq_int(sq_db *s, const char *sql, int64_t n1, int64_t n2, const char *what, int64_t *v,
           int *found, pg_error *err)
{
    sqlite3_stmt *st;
    int rc = sq_prep(s, sql, &st, err);
    if (rc) return rc;
    int np = sqlite3_bind_parameter_count(st);
    if (np >= 1) sqlite3_bind_int64(st, 1, n1);
    if (np >= 2) sqlite3_bind_int64(st, 2, n2);
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW)
        *v = sqlite3_column_int64(st, 0);
    else if (r != SQLITE_DONE || !found)
        rc = sq_fail(s, err, what);
    if (found) *found = r == SQLITE_ROW;
    sqlite3_finalize(st);
    return rc;
}

int sq_grow(void *pv, size_t *cap, size_t size, const char *what, pg_error *err)
{
    /* the caller's pointer through memcpy: any object pointer type */
    void *v;
    memcpy(&v, pv, sizeof v);
    size_t c = *cap ? 2 * *cap : 16;
    void *g = c <= SIZE_MAX / size ? realloc(v, c * size) : NULL;
    if (!g) return pg_error_set(err, PG_ENOMEM, "out of memory %s", what);
    memcpy(pv, &g, sizeof g);
    *cap = c;
    return PG_OK;
}

int sq_run(sq_db *s, const char *sql, const char *a, const char *b, int64_t n, const char *what,
           int64_t *changed, pg_error *err)
{
    if (changed) *changed = 0;
    sqlite3_stmt *st;
    int rc = sq_prep(s, sql, &st, err);
    if (rc) return rc;
    sqlite3_bind_text(st, 1, a, -1, SQLITE_STATIC);
    if (b) sqlite3_bind_text(st, 2, b, -1, SQLITE_STATIC);
    if (sqlite3_bind_parameter_count(st) >= 3) sqlite3_bind_int64(st, 3, n);
    if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, what);
    sqlite3_finalize(st);
    if (!rc && changed) *changed = sqlite3_changes(s->db);
    return rc;
}

int sq_get_by_id(sq_db *s, const char *sql, const char *id, const char *tenant, sq_row_fn read,
                 void *out, int *found, const char *what, pg_error *err)
{
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s, sql, &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            if (!(rc = read(st, out, err))) *found = 1;
        } else if (r != SQLITE_DONE) {
            rc = sq_fail(s, err, what);
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sq_tx_begin(sq_db *s, pg_error *err)
{
    return sq_exec(s, "BEGIN IMMEDIATE;", err);
}

int sq_tx_end(sq_db *s, int rc, pg_error *err)
{
    if (rc == PG_OK && (rc = sq_exec(s, "COMMIT;", err)) == PG_OK) return PG_OK;
    /* After a failed step (error already reported), a decision that writes
     * nothing, or a failed COMMIT (which leaves the transaction open). */
    sqlite3_exec(s->db, "ROLLBACK;", NULL, NULL, NULL);
    return rc == SQ_ROLLBACK ? PG_OK : rc;
}

int sq_dataset_dir(const sq_db *s, const char *id, char *buf, size_t cap, pg_error *err)
{
    if (!pg_db_id_ok(id)) return pg_error_set(err, PG_EINVAL, "invalid dataset id");
    if (snprintf(buf, cap, "%s/datasets/%s", s->dir, id) >= (int)cap)
        return pg_error_set(err, PG_EINVAL, "dataset path too long");
    return PG_OK;
}

int sq_ckpt_path(const sq_db *s, const char *job, int64_t step, char *buf, size_t cap,
                 pg_error *err)
{
    if (!pg_db_id_ok(job)) return pg_error_set(err, PG_EINVAL, "invalid job id");
    if (snprintf(buf, cap, "%s/checkpoints/%s/%lld.pgc", s->dir, job, (long long)step) >= (int)cap)
        return pg_error_set(err, PG_EINVAL, "checkpoint path too long");
    return PG_OK;
}

int sq_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int r = fsync(fd);
    close(fd);
    return r;
}

static int mkdir_p(const char *path, pg_error *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return pg_error_set(err, PG_EINVAL, "path too long: %s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0700) && errno != EEXIST)
            return pg_error_set(err, PG_EIO, "cannot create %s: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0700) && errno != EEXIST)
        return pg_error_set(err, PG_EIO, "cannot create %s: %s", tmp, strerror(errno));
    return PG_OK;
}

static int version_of(sq_db *s)
{
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_prepare_v2(s->db, "SELECT version FROM schema_version", -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Every step reads the version inside its own BEGIN IMMEDIATE, i.e. under
 * the database's write lock: processes opening one new file at once (two
 * privgend on one data dir, or sharing a --db file) then run each migration
 * once, in turn, instead of both running migration 1 from a version read
 * before either took the lock ("table already exists"). */
static int migrate(sq_db *s, pg_error *err)
{
    if (sq_tx_begin(s, err)) return PG_EIO;
    int rc =
        sq_exec(s, "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);", err);
    if (!rc && version_of(s) < 0)
        rc = sq_exec(s, "INSERT INTO schema_version(version) VALUES(0);", err);
    if (sq_tx_end(s, rc, err)) return PG_EIO;
    for (;;) {
        if (sq_tx_begin(s, err)) return PG_EIO;
        int v = version_of(s);
        if (v < 0 || v >= NMIGRATIONS) {
            sq_tx_end(s, SQ_ROLLBACK, err);
            if (v < 0) return pg_error_set(err, PG_EIO, "cannot read the schema version");
            if (v > NMIGRATIONS)
                return pg_error_set(err, PG_ENOTSUP,
                                    "database schema version %d is newer than this privgend (%d)",
                                    v, NMIGRATIONS);
            return PG_OK;
        }
        char bump[96];
        snprintf(bump, sizeof bump, "UPDATE schema_version SET version=%d;", v + 1);
        rc = sq_exec(s, MIGRATIONS[v], err);
        if (!rc) rc = sq_exec(s, bump, err);
        if (rc) {
            sq_tx_end(s, rc, err);
            pg_error_wrap(err, "migration %d", v + 1);
            return rc;
        }
        if (sq_tx_end(s, PG_OK, err)) return PG_EIO;
    }
}

static void sq_close(pg_db *db)
{
    sq_db *s = SQ(db);
    sqlite3_close(s->db);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static int sq_schema_version(pg_db *db, int *version, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    *version = version_of(s);
    pthread_mutex_unlock(&s->mu);
    return *version < 0 ? pg_error_set(err, PG_EIO, "cannot read the schema version") : PG_OK;
}

static int sq_probe(pg_db *db, pg_error *err)
{
    sq_db *s = SQ(db);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/datasets/.probe-%ld", s->dir, (long)pthread_self() % 100000);
    /* Creating and fsyncing a file is the test that works for root too, for
     * whom permission bits never block a write. */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return pg_error_set(err, PG_EIO, "data dir is not writable: %s: %s", path, strerror(errno));
    int bad = write(fd, "ok", 2) != 2 || fsync(fd) != 0;
    close(fd);
    unlink(path);
    if (bad) return pg_error_set(err, PG_EIO, "data dir is not writable: %s", strerror(errno));
    pthread_mutex_lock(&s->mu);
    int rc = sq_exec(s, "BEGIN IMMEDIATE; ROLLBACK;", err);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ---- idempotency keys ------------------------------------------------- */

/* A reservation (status 0) lives as long as its request runs. Several
 * processes may share the file (privgend and a CLI, two privgends on one
 * data dir), so a reservation cannot be told dead from its row alone: one
 * older than this belongs to a request that died (with its process), and
 * is swept at open or taken over by the next begin on its key; a younger
 * one is a request still running, maybe in another process (the
 * PostgreSQL backend's rule and bound, PGB_IDEM_STALE_S). */
#define SQ_IDEM_STALE_S 900

static int sq_idem_begin(pg_db *db, const char *tenant, const char *token, const char *key,
                         const unsigned char fp[32], int *state, pg_idem_response *prev,
                         pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int stale = 0;
    int rc = sq_tx_begin(s, err);
    if (!rc && !(rc = sq_prep(s,
                              "SELECT fp, status, location, body, created_at FROM idempotency "
                              "WHERE tenant_id=? AND token_id=? AND key=?",
                              &st, err))) {
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, token, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, key, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW && sqlite3_column_int(st, 1) == 0 &&
            sqlite3_column_int64(st, 4) < sq_now() - SQ_IDEM_STALE_S) {
            *state = PG_IDEM_NEW; /* a dead request's: taken over below */
            stale = 1;
        } else if (r == SQLITE_ROW) {
            int same = sqlite3_column_bytes(st, 0) == 32 &&
                       memcmp(sqlite3_column_blob(st, 0), fp, 32) == 0;
            int status = sqlite3_column_int(st, 1);
            *state = !same ? PG_IDEM_MISMATCH : status == 0 ? PG_IDEM_BUSY : PG_IDEM_REPLAY;
            if (*state == PG_IDEM_REPLAY) {
                prev->status = status;
                const char *loc = (const char *)sqlite3_column_text(st, 2);
                prev->location = loc ? strdup(loc) : NULL;
                size_t bl = (size_t)sqlite3_column_bytes(st, 3);
                prev->body = malloc(bl + 1);
                if (prev->body) {
                    if (bl) memcpy(prev->body, sqlite3_column_blob(st, 3), bl);
                    prev->body[bl] = '\0';
                    prev->body_len = bl;
                }
                if (!prev->body || (loc && !prev->location))
                    rc = pg_error_set(err, PG_ENOMEM, "out of memory");
            }
        } else if (r == SQLITE_DONE) {
            *state = PG_IDEM_NEW;
        } else {
            rc = sq_fail(s, err, "reading an idempotency key");
        }
        sqlite3_finalize(st);
    }
    if (!rc && *state == PG_IDEM_NEW &&
        !(rc = sq_prep(s,
                       stale ? "UPDATE idempotency SET fp=?4, created_at=?5 "
                               "WHERE tenant_id=?1 AND token_id=?2 AND key=?3 AND status=0"
                             : "INSERT INTO idempotency(tenant_id, token_id, key, fp, status, "
                               "body, created_at) VALUES(?1,?2,?3,?4,0,x'',?5)",
                       &st, err))) {
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, token, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, key, -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 4, fp, 32, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, sq_now());
        if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, "reserving an idempotency key");
        sqlite3_finalize(st);
    }
    rc = sq_tx_end(s, rc, err);
    if (rc) {
        pg_idem_free(prev);
        *state = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static int sq_idem_finish(pg_db *db, const char *tenant, const char *token, const char *key,
                          const pg_idem_response *r, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s,
                     r ? "UPDATE idempotency SET status=?3, location=?4, body=?5 "
                         "WHERE tenant_id=?1 AND token_id=?6 AND key=?2 AND status=0"
                       : "DELETE FROM idempotency WHERE tenant_id=?1 AND token_id=?6 AND key=?2 "
                         "AND status=0",
                     &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, token, -1, SQLITE_STATIC);
        if (r) {
            sqlite3_bind_int(st, 3, r->status);
            if (r->location)
                sqlite3_bind_text(st, 4, r->location, -1, SQLITE_STATIC);
            else
                sqlite3_bind_null(st, 4);
            sqlite3_bind_blob(st, 5, r->body ? r->body : "", (int)r->body_len, SQLITE_STATIC);
        }
        if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, "storing an idempotent reply");
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static const pg_db_ops SQ_OPS = {
    .name = "sqlite",
    .close = sq_close,
    .schema_version = sq_schema_version,
    .probe = sq_probe,
    .gauges = sq_gauges,
    .token_count = sq_token_count,
    .token_insert = sq_token_insert,
    .token_bootstrap = sq_token_bootstrap,
    .token_get = sq_token_get,
    .token_list = sq_token_list,
    .token_revoke = sq_token_revoke,
    .token_touch = sq_token_touch,
    .dataset_insert = sq_dataset_insert,
    .dataset_get = sq_dataset_get,
    .dataset_list = sq_dataset_list,
    .dataset_delete = sq_dataset_delete,
    .append_begin = sq_append_begin,
    .append_write = sq_append_write,
    .append_commit = sq_append_commit,
    .append_abort = sq_append_abort,
    .blocks_open = sq_blocks_open,
    .blocks_next = sq_blocks_next,
    .rows_pass = sq_rows_pass,
    .blocks_close = sq_blocks_close,
    .idem_begin = sq_idem_begin,
    .idem_finish = sq_idem_finish,
    .job_admit = sq_job_admit,
    .job_cancel_queued = sq_job_cancel_queued,
    .job_load_all = sq_job_load_all,
    .ledger_entries = sq_ledger_entries,
    .ckpt_list = sq_ckpt_list,
    .ckpt_get = sq_ckpt_get,
    .job_history_get = sq_job_history_get,
    .job_delete = sq_job_delete,
    .job_claim = sq_job_claim,
    .job_heartbeat = sq_job_heartbeat,
    .job_patch_owned = sq_job_patch_owned,
    .ckpt_put_owned = sq_ckpt_put_owned,
    .job_get = sq_job_get,
    .job_list = sq_job_list,
    .job_history_put_owned = sq_job_history_put_owned,
    .job_release_node = sq_job_release_node,
    .job_cancel_running = sq_job_cancel_running,
    .job_watch = sq_job_watch,
    .job_queue_depth = sq_job_queue_depth,
    .ckpt_delete_owned = sq_ckpt_delete_owned,
    .report_insert = sq_report_insert,
    .report_get = sq_report_get,
    .report_list = sq_report_list,
    .report_claim = sq_report_claim,
    .report_progress = sq_report_progress,
    .report_finish = sq_report_finish,
    .report_cancel = sq_report_cancel,
    .report_delete = sq_report_delete,
    .report_figure_get = sq_report_figure_get,
};

/* An unlocked empty spool file younger than this may be a writer's between
 * its open and its lock (microseconds in practice). */
#define SPOOL_MIN_AGE_S 60

/* Temporary row-block files left by a process that died mid-upload (kill -9,
 * power loss) are never renamed nor recorded: nothing refers to them. Files
 * another live process sharing this data dir is writing are locked and kept
 * (pg_block_sweep). A failure here only leaves files behind. */
static void sweep_spools(const sq_db *s)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/datasets", s->dir);
    DIR *dh = opendir(dir);
    if (!dh) return;
    struct dirent *e;
    while ((e = readdir(dh))) {
        if (e->d_name[0] == '.') continue;
        char sub[PATH_MAX + 256];
        size_t removed;
        if (snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) < (int)sizeof sub)
            pg_block_sweep(sub, SPOOL_MIN_AGE_S, &removed, NULL);
    }
    closedir(dh);
}

int pg_db_sqlite_open(const char *url, const pg_db_options *opt, pg_db **out, pg_error *err)
{
    (void)opt;
    const char *path = url + strlen("sqlite:");
    if (!strncmp(path, "//", 2)) path += 2; /* sqlite:///abs/path */
    if (!*path) return pg_error_set(err, PG_EINVAL, "sqlite: URL without a path");
    sq_db *s = calloc(1, sizeof *s);
    if (!s) return pg_error_set(err, PG_ENOMEM, "out of memory opening the database");
    s->base.ops = &SQ_OPS;
    const char *slash = strrchr(path, '/');
    int dl = !slash ? 1 : slash == path ? 1 : (int)(slash - path);
    if (snprintf(s->dir, sizeof s->dir, "%.*s", dl, !slash ? "." : path) >= (int)sizeof s->dir) {
        free(s);
        return pg_error_set(err, PG_EINVAL, "database path too long");
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/datasets", s->dir);
    if (mkdir_p(dir, err)) {
        free(s);
        return PG_EIO;
    }
    if (sqlite3_open_v2(path, &s->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                        NULL) != SQLITE_OK) {
        pg_error_set(err, PG_EIO, "cannot open %s: %s", path,
                     s->db ? sqlite3_errmsg(s->db) : "out of memory");
        sqlite3_close(s->db);
        free(s);
        return PG_EIO;
    }
    sqlite3_busy_timeout(s->db, 5000);
    pthread_mutex_init(&s->mu, NULL);
    int rc = sq_exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;",
                     err);
    if (!rc) rc = migrate(s, err);
    /* Only stale reservations: a younger one may be a request another
     * process sharing the file is running right now (SQ_IDEM_STALE_S). */
    if (!rc) {
        char sql[128];
        snprintf(sql, sizeof sql, "DELETE FROM idempotency WHERE status=0 AND created_at<%lld;",
                 (long long)(sq_now() - SQ_IDEM_STALE_S));
        rc = sq_exec(s, sql, err);
    }
    if (!rc) sweep_spools(s);
    if (rc) {
        pg_error_wrap(err, "opening %s", path);
        sq_close(&s->base);
        return rc;
    }
    *out = &s->base;
    return PG_OK;
}
