#include "service/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct pg_store {
    pthread_mutex_t mu;
    sqlite3 *db;
    char dir[PATH_MAX / 2];
};

/* Migration k brings the schema from version k to k+1. Append only: never
 * edit a shipped migration, add the next one. jobs/ledger/checkpoints are
 * created now so the job layer starts from a stable schema. */
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
    /* 2: the job layer's columns (service/jobstore.c). steps_reserved is the
     * write-ahead count of mechanism invocations a job may have run. */
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
};
#define NMIGRATIONS ((int)(sizeof MIGRATIONS / sizeof MIGRATIONS[0]))

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

static int db_fail(pg_store *s, pg_error *err, const char *what)
{
    return pg_error_set(err, PG_EIO, "database error %s: %s", what, sqlite3_errmsg(s->db));
}

static int exec(pg_store *s, const char *sql, pg_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        pg_error_set(err, PG_EIO, "database error: %s", msg ? msg : "unknown");
        sqlite3_free(msg);
        return PG_EIO;
    }
    return PG_OK;
}

static int prep(pg_store *s, const char *sql, sqlite3_stmt **st, pg_error *err)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
        return db_fail(s, err, "preparing a statement");
    return PG_OK;
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

static int migrate(pg_store *s, pg_error *err)
{
    if (exec(s, "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);", err))
        return PG_EIO;
    int v = pg_store_schema_version(s);
    if (v < 0) {
        if (exec(s, "INSERT INTO schema_version(version) VALUES(0);", err)) return PG_EIO;
        v = 0;
    }
    if (v > NMIGRATIONS)
        return pg_error_set(err, PG_ENOTSUP,
                            "database schema version %d is newer than this privgend (%d)", v,
                            NMIGRATIONS);
    for (; v < NMIGRATIONS; v++) {
        char bump[96];
        snprintf(bump, sizeof bump, "UPDATE schema_version SET version=%d;", v + 1);
        if (exec(s, "BEGIN IMMEDIATE;", err)) return PG_EIO;
        int rc = exec(s, MIGRATIONS[v], err);
        if (!rc) rc = exec(s, bump, err);
        if (rc) {
            exec(s, "ROLLBACK;", NULL);
            pg_error_wrap(err, "migration %d", v + 1);
            return rc;
        }
        if (exec(s, "COMMIT;", err)) return PG_EIO;
    }
    return PG_OK;
}

int pg_store_open(const char *data_dir, pg_store **out, pg_error *err)
{
    pg_store *s = calloc(1, sizeof *s);
    if (!s) return pg_error_set(err, PG_ENOMEM, "out of memory opening the store");
    if (snprintf(s->dir, sizeof s->dir, "%s", data_dir) >= (int)sizeof s->dir) {
        free(s);
        return pg_error_set(err, PG_EINVAL, "data dir path too long");
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/datasets", s->dir);
    if (mkdir_p(path, err)) {
        free(s);
        return PG_EIO;
    }
    snprintf(path, sizeof path, "%s/privgen.db", s->dir);
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
    /* Idempotency reservations (status 0) belong to requests that died with
     * the previous process; dropping them lets their retries run. */
    int rc =
        exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;", err);
    if (!rc) rc = migrate(s, err);
    if (!rc) rc = exec(s, "DELETE FROM idempotency WHERE status=0;", err);
    if (rc) {
        pg_error_wrap(err, "opening %s", path);
        pg_store_close(s);
        return rc;
    }
    *out = s;
    return PG_OK;
}

void pg_store_close(pg_store *s)
{
    if (!s) return;
    sqlite3_close(s->db);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

const char *pg_store_data_dir(const pg_store *s)
{
    return s->dir;
}

int pg_store_schema_version(pg_store *s)
{
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_prepare_v2(s->db, "SELECT version FROM schema_version", -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

int pg_store_probe(pg_store *s, pg_error *err)
{
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
    int rc = exec(s, "BEGIN IMMEDIATE; ROLLBACK;", err);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static const char *scope_name(int scope)
{
    return scope == PG_SCOPE_ADMIN ? "admin" : "read";
}

int pg_store_token_count(pg_store *s, int64_t *n, pg_error *err)
{
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = prep(s, "SELECT count(*) FROM tokens", &st, err);
    if (!rc) {
        if (sqlite3_step(st) == SQLITE_ROW)
            *n = sqlite3_column_int64(st, 0);
        else
            rc = db_fail(s, err, "counting tokens");
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int pg_store_token_insert(pg_store *s, const pg_token *t, int new_tenant, pg_error *err)
{
    pthread_mutex_lock(&s->mu);
    int rc = exec(s, "BEGIN IMMEDIATE;", err);
    sqlite3_stmt *st = NULL;
    if (!rc && new_tenant) {
        rc = prep(s, "INSERT INTO tenants(id, created_at) VALUES(?,?)", &st, err);
        if (!rc) {
            sqlite3_bind_text(st, 1, t->tenant, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, now_s());
            if (sqlite3_step(st) != SQLITE_DONE) rc = db_fail(s, err, "creating a tenant");
            sqlite3_finalize(st);
        }
    }
    if (!rc)
        rc = prep(s,
                  "INSERT INTO tokens(id, tenant_id, scope, hash, created_at) "
                  "VALUES(?,?,?,?,?)",
                  &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, t->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, t->tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, scope_name(t->scope), -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 4, t->hash, 32, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, t->created_at);
        if (sqlite3_step(st) != SQLITE_DONE) rc = db_fail(s, err, "storing a token");
        sqlite3_finalize(st);
    }
    if (!rc) rc = exec(s, "COMMIT;", err);
    if (rc) exec(s, "ROLLBACK;", NULL);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int pg_store_token_get(pg_store *s, const char *id, pg_token *out, int *found, pg_error *err)
{
    *found = 0;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = prep(s,
                  "SELECT tenant_id, scope, hash, created_at FROM tokens "
                  "WHERE id=? AND revoked=0",
                  &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW && sqlite3_column_bytes(st, 2) == 32) {
            memset(out, 0, sizeof *out);
            snprintf(out->id, sizeof out->id, "%s", id);
            snprintf(out->tenant, sizeof out->tenant, "%s",
                     (const char *)sqlite3_column_text(st, 0));
            out->scope = strcmp((const char *)sqlite3_column_text(st, 1), "admin") == 0
                             ? PG_SCOPE_ADMIN
                             : PG_SCOPE_READ;
            memcpy(out->hash, sqlite3_column_blob(st, 2), 32);
            out->created_at = sqlite3_column_int64(st, 3);
            *found = 1;
        } else if (r != SQLITE_ROW && r != SQLITE_DONE) {
            rc = db_fail(s, err, "reading a token");
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int pg_store_dataset_insert(pg_store *s, pg_store_dataset *d, pg_error *err)
{
    /* Directory first: a dataset row never exists without its directory. */
    char dir[PATH_MAX];
    if (pg_store_dataset_dir(s, d->id, dir, sizeof dir, err)) return PG_EINVAL;
    if (mkdir(dir, 0700) && errno != EEXIST)
        return pg_error_set(err, PG_EIO, "cannot create %s: %s", dir, strerror(errno));
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    d->created_at = now_s();
    int rc = prep(s,
                  "INSERT INTO datasets(id, tenant_id, name, meta, d, created_at) "
                  "VALUES(?,?,?,?,?,?)",
                  &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, d->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, d->tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, d->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, d->meta, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, d->d);
        sqlite3_bind_int64(st, 6, d->created_at);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = db_fail(s, err, "creating a dataset");
        else
            d->seq = sqlite3_last_insert_rowid(s->db);
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc) rmdir(dir);
    return rc;
}

#define DS_COLS "seq, id, tenant_id, name, meta, d, n, blocks, bytes, created_at"

static int read_dataset(sqlite3_stmt *st, pg_store_dataset *d)
{
    memset(d, 0, sizeof *d);
    d->seq = sqlite3_column_int64(st, 0);
    snprintf(d->id, sizeof d->id, "%s", (const char *)sqlite3_column_text(st, 1));
    snprintf(d->tenant, sizeof d->tenant, "%s", (const char *)sqlite3_column_text(st, 2));
    d->name = strdup((const char *)sqlite3_column_text(st, 3));
    d->meta = strdup((const char *)sqlite3_column_text(st, 4));
    d->d = sqlite3_column_int64(st, 5);
    d->n = sqlite3_column_int64(st, 6);
    d->blocks = sqlite3_column_int64(st, 7);
    d->bytes = sqlite3_column_int64(st, 8);
    d->created_at = sqlite3_column_int64(st, 9);
    if (!d->name || !d->meta) {
        pg_store_dataset_free(d);
        return -1;
    }
    return 0;
}

void pg_store_dataset_free(pg_store_dataset *d)
{
    if (!d) return;
    free(d->name);
    free(d->meta);
    d->name = d->meta = NULL;
}

void pg_store_dataset_list_free(pg_store_dataset *list, size_t count)
{
    for (size_t i = 0; i < count; i++) pg_store_dataset_free(&list[i]);
    free(list);
}

int pg_store_dataset_get(pg_store *s, const char *tenant, const char *id, pg_store_dataset *out,
                         int *found, pg_error *err)
{
    *found = 0;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = prep(s, "SELECT " DS_COLS " FROM datasets WHERE id=? AND tenant_id=?", &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            if (read_dataset(st, out))
                rc = pg_error_set(err, PG_ENOMEM, "out of memory");
            else
                *found = 1;
        } else if (r != SQLITE_DONE) {
            rc = db_fail(s, err, "reading a dataset");
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int pg_store_dataset_list(pg_store *s, const char *tenant, int64_t after, size_t limit,
                          pg_store_dataset **out, size_t *count, pg_error *err)
{
    *out = NULL;
    *count = 0;
    pg_store_dataset *list = calloc(limit ? limit : 1, sizeof *list);
    if (!list) return pg_error_set(err, PG_ENOMEM, "out of memory listing datasets");
    size_t n = 0;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = prep(s,
                  "SELECT " DS_COLS " FROM datasets WHERE tenant_id=? AND seq>? "
                  "ORDER BY seq LIMIT ?",
                  &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, after);
        sqlite3_bind_int64(st, 3, (int64_t)limit);
        int r;
        while (!rc && n < limit && (r = sqlite3_step(st)) == SQLITE_ROW) {
            if (read_dataset(st, &list[n]))
                rc = pg_error_set(err, PG_ENOMEM, "out of memory");
            else
                n++;
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc) {
        pg_store_dataset_list_free(list, n);
        return rc;
    }
    *out = list;
    *count = n;
    return PG_OK;
}

int pg_store_dataset_dir(const pg_store *s, const char *id, char *buf, size_t cap, pg_error *err)
{
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return pg_error_set(err, PG_EINVAL, "invalid dataset id");
    if (snprintf(buf, cap, "%s/datasets/%s", s->dir, id) >= (int)cap)
        return pg_error_set(err, PG_EINVAL, "dataset path too long");
    return PG_OK;
}

static void remove_dir(const char *dir)
{
    DIR *dh = opendir(dir);
    if (!dh) return;
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(dh)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
            unlink(path);
    closedir(dh);
    rmdir(dir);
}

int pg_store_dataset_delete(pg_store *s, const char *tenant, const char *id, int *found,
                            int *conflict, pg_error *err)
{
    *found = 0;
    *conflict = 0;
    char dir[PATH_MAX];
    if (pg_store_dataset_dir(s, id, dir, sizeof dir, NULL)) return PG_OK; /* cannot exist */
    pthread_mutex_lock(&s->mu);
    int rc = exec(s, "BEGIN IMMEDIATE;", err);
    sqlite3_stmt *st;
    if (!rc && !(rc = prep(s,
                           "SELECT (SELECT count(*) FROM datasets WHERE id=?1 AND "
                           "tenant_id=?2), (SELECT count(*) FROM jobs WHERE (dataset_id=?1 OR "
                           "public_dataset_id=?1) AND status IN ('queued','running'))",
                           &st, err))) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) {
            *found = sqlite3_column_int(st, 0) > 0;
            *conflict = *found && sqlite3_column_int(st, 1) > 0;
        } else {
            rc = db_fail(s, err, "checking a dataset");
        }
        sqlite3_finalize(st);
    }
    if (!rc && *found && !*conflict &&
        !(rc = prep(s, "DELETE FROM datasets WHERE id=?1; ", &st, err))) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) rc = db_fail(s, err, "deleting a dataset");
        sqlite3_finalize(st);
        if (!rc && !(rc = prep(s, "DELETE FROM row_blocks WHERE dataset_id=?1", &st, err))) {
            sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
            if (sqlite3_step(st) != SQLITE_DONE) rc = db_fail(s, err, "deleting row blocks");
            sqlite3_finalize(st);
        }
    }
    if (rc)
        exec(s, "ROLLBACK;", NULL);
    else
        rc = exec(s, "COMMIT;", err);
    /* Files go after the commit: a crash in between leaves only orphan files,
     * never a dataset row pointing at missing blocks. */
    if (!rc && *found && !*conflict) remove_dir(dir);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int r = fsync(fd);
    close(fd);
    return r;
}

int pg_store_dataset_append(pg_store *s, const char *tenant, const char *id, const char *tmp_path,
                            int64_t rows, int64_t bytes, int has_labels, int64_t max_rows,
                            int *found, int64_t *new_n, pg_error *err)
{
    *found = 0;
    char dir[PATH_MAX], final[PATH_MAX + 32];
    if (pg_store_dataset_dir(s, id, dir, sizeof dir, err)) {
        unlink(tmp_path);
        return PG_EINVAL;
    }
    pthread_mutex_lock(&s->mu);
    int renamed = 0;
    int rc = exec(s, "BEGIN IMMEDIATE;", err);
    sqlite3_stmt *st;
    int64_t n = 0, k = 0;
    if (!rc &&
        !(rc = prep(s, "SELECT n, blocks FROM datasets WHERE id=? AND tenant_id=?", &st, err))) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) {
            *found = 1;
            n = sqlite3_column_int64(st, 0);
            k = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
    }
    if (!rc && *found && n + rows > max_rows)
        rc = pg_error_set(err, PG_ERANGE,
                          "the dataset would hold %lld rows, more than the limit of %lld",
                          (long long)(n + rows), (long long)max_rows);
    if (!rc && *found) {
        snprintf(final, sizeof final, "%s/rows-%lld.f32", dir, (long long)k);
        if (rename(tmp_path, final) || fsync_dir(dir))
            rc = pg_error_set(err, PG_EIO, "cannot store row block %s: %s", final, strerror(errno));
        else
            renamed = 1;
    }
    if (!rc && *found &&
        !(rc = prep(s, "UPDATE datasets SET n=n+?1, blocks=blocks+1, bytes=bytes+?2 WHERE id=?3",
                    &st, err))) {
        sqlite3_bind_int64(st, 1, rows);
        sqlite3_bind_int64(st, 2, bytes);
        sqlite3_bind_text(st, 3, id, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) rc = db_fail(s, err, "appending rows");
        sqlite3_finalize(st);
    }
    if (!rc && *found &&
        !(rc = prep(s,
                    "INSERT INTO row_blocks(dataset_id, k, n, bytes, has_labels, created_at) "
                    "VALUES(?,?,?,?,?,?)",
                    &st, err))) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, k);
        sqlite3_bind_int64(st, 3, rows);
        sqlite3_bind_int64(st, 4, bytes);
        sqlite3_bind_int(st, 5, has_labels);
        sqlite3_bind_int64(st, 6, now_s());
        if (sqlite3_step(st) != SQLITE_DONE) rc = db_fail(s, err, "recording a row block");
        sqlite3_finalize(st);
    }
    if (!rc) rc = exec(s, "COMMIT;", err);
    if (rc) {
        exec(s, "ROLLBACK;", NULL);
        /* The block is only visible through the database, so removing the file
         * after a failed commit restores the previous state exactly. */
        unlink(renamed ? final : tmp_path);
    } else if (!*found) {
        unlink(tmp_path);
    } else {
        *new_n = n + rows;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int pg_store_dataset_blocks(pg_store *s, const char *id, char ***paths, size_t *count,
                            pg_error *err)
{
    *paths = NULL;
    *count = 0;
    char dir[PATH_MAX];
    if (pg_store_dataset_dir(s, id, dir, sizeof dir, err)) return PG_EINVAL;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = prep(s, "SELECT k FROM row_blocks WHERE dataset_id=? ORDER BY k", &st, err);
    char **list = NULL;
    size_t n = 0, cap = 0;
    if (!rc) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        while (!rc && sqlite3_step(st) == SQLITE_ROW) {
            if (n == cap) {
                cap = cap ? 2 * cap : 8;
                char **g = realloc(list, cap * sizeof *g);
                if (!g) {
                    rc = pg_error_set(err, PG_ENOMEM, "out of memory");
                    break;
                }
                list = g;
            }
            char p[PATH_MAX + 32];
            snprintf(p, sizeof p, "%s/rows-%lld.f32", dir, (long long)sqlite3_column_int64(st, 0));
            if (!(list[n] = strdup(p)))
                rc = pg_error_set(err, PG_ENOMEM, "out of memory");
            else
                n++;
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc) {
        for (size_t i = 0; i < n; i++) free(list[i]);
        free(list);
        return rc;
    }
    *paths = list;
    *count = n;
    return PG_OK;
}

int pg_store_gauges(pg_store *s, int64_t *datasets, int64_t *rows, int64_t *bytes, pg_error *err)
{
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = prep(s, "SELECT count(*), coalesce(sum(n),0), coalesce(sum(bytes),0) FROM datasets",
                  &st, err);
    if (!rc) {
        if (sqlite3_step(st) == SQLITE_ROW) {
            *datasets = sqlite3_column_int64(st, 0);
            *rows = sqlite3_column_int64(st, 1);
            *bytes = sqlite3_column_int64(st, 2);
        } else {
            rc = db_fail(s, err, "reading gauges");
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int pg_store_idem_begin(pg_store *s, const char *tenant, const char *key,
                        const unsigned char fp[32], int *state, pg_idem_response *prev,
                        pg_error *err)
{
    memset(prev, 0, sizeof *prev);
    *state = 0;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = exec(s, "BEGIN IMMEDIATE;", err);
    if (!rc && !(rc = prep(s,
                           "SELECT fp, status, location, body FROM idempotency "
                           "WHERE tenant_id=? AND key=?",
                           &st, err))) {
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
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
                if (!prev->body || (loc && !prev->location)) {
                    pg_store_idem_free(prev);
                    rc = pg_error_set(err, PG_ENOMEM, "out of memory");
                }
            }
        } else if (r == SQLITE_DONE) {
            *state = PG_IDEM_NEW;
        } else {
            rc = db_fail(s, err, "reading an idempotency key");
        }
        sqlite3_finalize(st);
    }
    if (!rc && *state == PG_IDEM_NEW &&
        !(rc = prep(s,
                    "INSERT INTO idempotency(tenant_id, key, fp, status, body, created_at) "
                    "VALUES(?,?,?,0,x'',?)",
                    &st, err))) {
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 3, fp, 32, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, now_s());
        if (sqlite3_step(st) != SQLITE_DONE) rc = db_fail(s, err, "reserving an idempotency key");
        sqlite3_finalize(st);
    }
    if (rc)
        exec(s, "ROLLBACK;", NULL);
    else
        rc = exec(s, "COMMIT;", err);
    if (rc) pg_store_idem_free(prev);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int pg_store_idem_finish(pg_store *s, const char *tenant, const char *key,
                         const pg_idem_response *r, pg_error *err)
{
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = prep(s,
                  r ? "UPDATE idempotency SET status=?3, location=?4, body=?5 "
                      "WHERE tenant_id=?1 AND key=?2 AND status=0"
                    : "DELETE FROM idempotency WHERE tenant_id=?1 AND key=?2 AND status=0",
                  &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
        if (r) {
            sqlite3_bind_int(st, 3, r->status);
            if (r->location)
                sqlite3_bind_text(st, 4, r->location, -1, SQLITE_STATIC);
            else
                sqlite3_bind_null(st, 4);
            sqlite3_bind_blob(st, 5, r->body ? r->body : "", (int)r->body_len, SQLITE_STATIC);
        }
        if (sqlite3_step(st) != SQLITE_DONE) rc = db_fail(s, err, "storing an idempotent reply");
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void pg_store_idem_free(pg_idem_response *r)
{
    free(r->location);
    free(r->body);
    r->location = r->body = NULL;
}

int pg_store_job_insert(pg_store *s, const char *id, const char *tenant, const char *dataset_id,
                        const char *status, const char *spec, pg_error *err)
{
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = prep(s,
                  "INSERT INTO jobs(id, tenant_id, dataset_id, status, spec, created_at, "
                  "updated_at) VALUES(?,?,?,?,?,?,?)",
                  &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, dataset_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, status, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, spec, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 6, now_s());
        sqlite3_bind_int64(st, 7, now_s());
        if (sqlite3_step(st) != SQLITE_DONE) rc = db_fail(s, err, "inserting a job");
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int pg_store_with_db(pg_store *s, int (*fn)(struct sqlite3 *db, void *ctx, pg_error *err),
                     void *ctx, pg_error *err)
{
    pthread_mutex_lock(&s->mu);
    int rc = fn(s->db, ctx, err);
    pthread_mutex_unlock(&s->mu);
    return rc;
}
