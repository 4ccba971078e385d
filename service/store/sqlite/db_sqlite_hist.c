/* service/store/sqlite/db_sqlite_hist.c - the SQLite backend's job history documents,
 * job deletion and checkpoint deletion (files removed after the commit). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service/store/sqlite/db_sqlite.h"

int sq_job_history_get(pg_db *db, const char *id, char **doc, int *found, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s, "SELECT doc FROM job_history WHERE job_id=?", &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            const char *v = (const char *)sqlite3_column_text(st, 0);
            *doc = strdup(v ? v : "");
            if (!*doc)
                rc = pg_error_set(err, PG_ENOMEM, "out of memory reading a job's history");
            else
                *found = 1;
        } else if (r != SQLITE_DONE) {
            rc = sq_fail(s, err, "reading a job's history");
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* DIR/checkpoints/<job>: every file, then the directory (best effort: the
 * rows are gone, so leftovers are unreferenced and harmless). */
static void remove_ckpt_dir(sq_db *s, const char *job)
{
    char dir[PATH_MAX], path[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s/checkpoints/%s", s->dir, job) >= (int)sizeof dir) return;
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' &&
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
            unlink(path);
    closedir(d);
    rmdir(dir);
}

int sq_job_delete(pg_db *db, const char *id, int *found, int *conflict, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    int rc = sq_tx_begin(s, err);
    if (rc) {
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    sqlite3_stmt *st;
    rc = sq_prep(s, "SELECT status FROM jobs WHERE id=?", &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            const char *v = (const char *)sqlite3_column_text(st, 0);
            *found = 1;
            *conflict = v && (!strcmp(v, "queued") || !strcmp(v, "running"));
        } else if (r != SQLITE_DONE) {
            rc = sq_fail(s, err, "reading a job");
        }
        sqlite3_finalize(st);
    }
    if (!rc && *found && !*conflict) {
        rc = sq_run(s, "DELETE FROM checkpoints WHERE job_id=?", id, NULL, 0,
                    "deleting checkpoints", NULL, err);
        if (!rc)
            rc = sq_run(s, "DELETE FROM job_history WHERE job_id=?", id, NULL, 0,
                        "deleting a job's history", NULL, err);
        /* Its quality reports go with it: every report route looks the job
         * up first, so they could never be read again. A report being
         * computed finds its row gone and its fenced finish refused. */
        if (!rc)
            rc = sq_run(s,
                        "DELETE FROM report_figures WHERE report_id IN "
                        "(SELECT id FROM reports WHERE job_id=?)",
                        id, NULL, 0, "deleting a job's report figures", NULL, err);
        if (!rc)
            rc = sq_run(s, "DELETE FROM reports WHERE job_id=?", id, NULL, 0,
                        "deleting a job's reports", NULL, err);
        if (!rc)
            rc = sq_run(s, "DELETE FROM jobs WHERE id=?", id, NULL, 0, "deleting a job", NULL, err);
    }
    rc = sq_tx_end(s, rc, err);
    pthread_mutex_unlock(&s->mu);
    if (!rc && *found && !*conflict) remove_ckpt_dir(s, id);
    return rc;
}
