/* service/store/sqlite/db_sqlite_queue.c - the SQLite backend's shared job queue: claims,
 * heartbeats and fenced writes (service/store/db.h). Each op runs inside BEGIN
 * IMMEDIATE, which holds the database write lock from the first read to the
 * commit: that lock is the "job row's lock" of the fence, for every process
 * sharing the file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/data/file.h"
#include "service/store/sqlite/db_sqlite.h"

#define RUNNABLE                                                                                   \
    "(status='queued' OR (status='running' AND (lease_until IS NULL OR lease_until<=?1)))"

/* The row of job seq into a fresh *out (inside the caller's transaction). */
static int read_row(sq_db *s, int64_t seq, pg_job_row **out, pg_error *err)
{
    sqlite3_stmt *st;
    if (sq_prep(s, "SELECT " PG_DB_JOB_COLS " FROM jobs WHERE seq=?", &st, err)) return PG_EIO;
    sqlite3_bind_int64(st, 1, seq);
    int rc = PG_OK;
    if (sqlite3_step(st) != SQLITE_ROW) {
        rc = sq_fail(s, err, "reading a claimed job");
    } else if (!(*out = calloc(1, sizeof **out))) {
        rc = pg_error_set(err, PG_ENOMEM, "out of memory claiming a job");
    } else {
        if ((rc = sq_job_row_read(st, *out, err))) {
            free(*out);
            *out = NULL;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

int sq_job_claim(pg_db *db, const char *node, int64_t now, int64_t lease_s, pg_job_row **out,
                 int *found, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int64_t seq = -1;
    int any = 0;
    int rc = sq_tx_begin(s, err);
    if (!rc)
        rc = sq_int(s, "SELECT seq FROM jobs WHERE " RUNNABLE " ORDER BY seq LIMIT 1", now, 0,
                    "finding a runnable job", &seq, &any, err);
    if (!rc && seq >= 0 &&
        !(rc = sq_prep(s,
                       "UPDATE jobs SET owner=?2, lease_until=?1+?3, updated_at=?1, "
                       "started_at=CASE WHEN status='queued' THEN ?1 ELSE started_at END, "
                       "status='running' WHERE seq=?4",
                       &st, err))) {
        sqlite3_bind_int64(st, 1, now);
        sqlite3_bind_text(st, 2, node, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, lease_s);
        sqlite3_bind_int64(st, 4, seq);
        if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, "claiming a job");
        sqlite3_finalize(st);
    }
    pg_job_row *row = NULL;
    if (!rc && seq >= 0) rc = read_row(s, seq, &row, err);
    rc = sq_tx_end(s, rc, err);
    pthread_mutex_unlock(&s->mu);
    if (rc) {
        pg_job_rows_free(row, row ? 1 : 0);
        return rc;
    }
    *out = row;
    *found = row != NULL;
    return PG_OK;
}

int sq_job_heartbeat(pg_db *db, const char *id, const char *node, int64_t now, int64_t lease_s,
                     int *held, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    int64_t n;
    int rc = sq_run(s,
                    "UPDATE jobs SET lease_until=?3 WHERE id=?1 AND owner=?2 "
                    "AND status='running' AND lease_until IS NOT NULL",
                    id, node, now + lease_s, "renewing a lease", &n, err);
    pthread_mutex_unlock(&s->mu);
    *held = !rc && n == 1;
    return rc;
}

static int terminal(const char *status)
{
    return status && (!strcmp(status, "succeeded") || !strcmp(status, "failed") ||
                      !strcmp(status, "cancelled"));
}

int sq_job_patch_owned(pg_db *db, const char *id, const char *node, const pg_job_patch *p,
                       int *held, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    /* One UPDATE: its WHERE is the fence, evaluated under the write lock. */
    int rc = sq_prep(s,
                     "UPDATE jobs SET updated_at=?3, "
                     "status=CASE WHEN ?4 IS NULL THEN status ELSE ?4 END, "
                     "error=CASE WHEN ?4 IS NULL THEN error ELSE ?5 END, "
                     "started_at=CASE WHEN ?4 IS NOT NULL AND ?6 THEN ?3 ELSE started_at END, "
                     "finished_at=CASE WHEN ?4 IS NOT NULL AND ?7 THEN ?3 ELSE finished_at END, "
                     "step=CASE WHEN ?8>=0 THEN ?8 ELSE step END, "
                     "steps_reserved=CASE WHEN ?9>=0 THEN ?9 ELSE steps_reserved END, "
                     "lease_until=CASE WHEN ?10 THEN NULL ELSE lease_until END "
                     "WHERE id=?1 AND owner=?2 AND status='running'",
                     &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, node, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, p->now);
        if (p->status) sqlite3_bind_text(st, 4, p->status, -1, SQLITE_STATIC);
        if (p->error) sqlite3_bind_text(st, 5, p->error, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 6, p->started != 0);
        sqlite3_bind_int(st, 7, p->finished != 0);
        sqlite3_bind_int64(st, 8, p->step);
        sqlite3_bind_int64(st, 9, p->steps_reserved);
        sqlite3_bind_int(st, 10, p->release || terminal(p->status));
        if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, "updating an owned job");
        sqlite3_finalize(st);
    }
    int changed = !rc && sqlite3_changes(s->db) == 1;
    pthread_mutex_unlock(&s->mu);
    *held = changed;
    return rc;
}

static int mkdir_one(const char *p, pg_error *err)
{
    if (mkdir(p, 0700) && errno != EEXIST)
        return pg_error_set(err, PG_EIO, "cannot create %s: %s", p, strerror(errno));
    return PG_OK;
}

/* The fence inside an open BEGIN IMMEDIATE: *owned = node runs job. */
static int owns(sq_db *s, const char *job, const char *node, int *owned, pg_error *err)
{
    sqlite3_stmt *st;
    int rc = sq_prep(s, "SELECT 1 FROM jobs WHERE id=? AND owner=? AND status='running'", &st, err);
    if (rc) return rc;
    sqlite3_bind_text(st, 1, job, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, node, -1, SQLITE_STATIC);
    int r = sqlite3_step(st);
    *owned = r == SQLITE_ROW;
    if (r != SQLITE_ROW && r != SQLITE_DONE) rc = sq_fail(s, err, "checking a job's owner");
    sqlite3_finalize(st);
    return rc;
}

int sq_ckpt_put_owned(pg_db *db, const char *job, const char *node, int64_t step,
                      const unsigned char *bytes, size_t len, uint32_t crc, int *held,
                      pg_error *err)
{
    sq_db *s = SQ(db);
    char dir[PATH_MAX], path[PATH_MAX];
    if (sq_ckpt_path(s, job, step, path, sizeof path, err)) return PG_EINVAL;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int owned = 0;
    /* The file is written under the write lock, after the fence: a stale
     * owner never replaces the new owner's file of the same step. */
    int rc = sq_tx_begin(s, err);
    if (!rc) rc = owns(s, job, node, &owned, err);
    if (!rc && owned) {
        snprintf(dir, sizeof dir, "%s/checkpoints", s->dir);
        rc = mkdir_one(dir, err);
        snprintf(dir, sizeof dir, "%s/checkpoints/%s", s->dir, job);
        if (!rc) rc = mkdir_one(dir, err);
        if (!rc) rc = pg_file_write_atomic(path, bytes, len, err);
    }
    if (!rc && owned &&
        !(rc = sq_prep(s,
                       "INSERT OR REPLACE INTO checkpoints(job_id, step, path, bytes, crc32, "
                       "created_at) VALUES(?,?,?,?,?,?)",
                       &st, err))) {
        sqlite3_bind_text(st, 1, job, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, step);
        sqlite3_bind_text(st, 3, path, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (int64_t)len);
        sqlite3_bind_int64(st, 5, crc);
        sqlite3_bind_int64(st, 6, sq_now());
        if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, "recording a checkpoint");
        sqlite3_finalize(st);
    }
    rc = sq_tx_end(s, !rc && !owned ? SQ_ROLLBACK : rc, err);
    pthread_mutex_unlock(&s->mu);
    *held = !rc && owned;
    return rc;
}

int sq_job_history_put_owned(pg_db *db, const char *id, const char *node, const char *doc,
                             int *held, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    /* One statement: the fence (EXISTS) and the write under the write lock. */
    int rc = sq_prep(s,
                     "INSERT INTO job_history(job_id, doc, updated_at) SELECT ?1, ?3, ?4 "
                     "WHERE EXISTS(SELECT 1 FROM jobs WHERE id=?1 AND owner=?2 AND "
                     "status='running') ON CONFLICT(job_id) DO UPDATE SET doc=excluded.doc, "
                     "updated_at=excluded.updated_at",
                     &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, node, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, doc, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, sq_now());
        if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, "storing an owned job's history");
        sqlite3_finalize(st);
    }
    int changed = !rc && sqlite3_changes(s->db) == 1;
    pthread_mutex_unlock(&s->mu);
    *held = changed;
    return rc;
}

int sq_job_release_node(pg_db *db, const char *node, int64_t now, int64_t *released, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    int rc = sq_run(s,
                    "UPDATE jobs SET lease_until=NULL, updated_at=?3 WHERE owner=?1 AND "
                    "status='running' AND lease_until IS NOT NULL",
                    node, NULL, now, "releasing a node's leases", released, err);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sq_job_cancel_running(pg_db *db, const char *id, int64_t now, int *done, pg_error *err)
{
    sq_db *s = SQ(db);
    int64_t n = 0;
    pthread_mutex_lock(&s->mu);
    int rc = sq_run(s,
                    "UPDATE jobs SET cancel_requested=1, updated_at=?3 WHERE id=?1 AND "
                    "status='running'",
                    id, NULL, now, "asking a running job to stop", &n, err);
    pthread_mutex_unlock(&s->mu);
    *done = n == 1;
    return rc;
}

int sq_job_watch(pg_db *db, const char *id, const char *node, int *held, int *cancel, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s,
                     "SELECT owner IS ?2, cancel_requested FROM jobs WHERE id=?1 AND "
                     "status='running'",
                     &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, node, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            *held = sqlite3_column_int(st, 0) != 0;
            *cancel = sqlite3_column_int(st, 1) != 0;
        } else if (r != SQLITE_DONE) {
            rc = sq_fail(s, err, "reading a job's lease");
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sq_job_queue_depth(pg_db *db, int64_t *queued, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    int rc = sq_int(s, "SELECT count(*) FROM jobs WHERE status='queued'", 0, 0,
                    "counting queued jobs", queued, NULL, err);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sq_ckpt_delete_owned(pg_db *db, const char *job, const char *node, int64_t step, int *held,
                         pg_error *err)
{
    sq_db *s = SQ(db);
    char path[PATH_MAX];
    if (sq_ckpt_path(s, job, step, path, sizeof path, err)) return PG_EINVAL;
    pthread_mutex_lock(&s->mu);
    int owned = 0;
    int64_t gone = 0;
    int rc = sq_tx_begin(s, err);
    if (!rc) rc = owns(s, job, node, &owned, err);
    if (!rc && owned)
        rc = sq_run(s, "DELETE FROM checkpoints WHERE job_id=?1 AND step=?3", job, NULL, step,
                    "deleting a checkpoint", &gone, err);
    rc = sq_tx_end(s, !rc && !owned ? SQ_ROLLBACK : rc, err);
    pthread_mutex_unlock(&s->mu);
    if (!rc && gone) unlink(path); /* the row is gone: the file is unreferenced */
    *held = !rc && owned;
    return rc;
}
