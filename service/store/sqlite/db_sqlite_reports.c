/* service/store/sqlite/db_sqlite_reports.c - the SQLite backend's quality reports
 * (service/store/db.h). Figures are BLOBs in report_figures: a few PNGs of
 * 20-300 kB per report, written in the transaction that ends the report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/store/sqlite/db_sqlite.h"

static char *dup_col(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? strdup((const char *)t) : NULL;
}

static void str_col(sqlite3_stmt *st, int col, char *dst, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(dst, cap, "%s", t ? (const char *)t : "");
}

/* One row of PG_DB_REPORT_COLS (and result, figures when full); PG_ENOMEM frees. */
static int row_read(sqlite3_stmt *st, int full, pg_report_row *r, pg_error *err)
{
    memset(r, 0, sizeof *r);
    r->seq = sqlite3_column_int64(st, 0);
    str_col(st, 1, r->id, sizeof r->id);
    str_col(st, 2, r->tenant, sizeof r->tenant);
    str_col(st, 3, r->job_id, sizeof r->job_id);
    str_col(st, 4, r->against_id, sizeof r->against_id);
    r->against_model = sqlite3_column_int(st, 5);
    r->against_n = sqlite3_column_int64(st, 6);
    r->job_step = sqlite3_column_int64(st, 7);
    r->n = sqlite3_column_int64(st, 8);
    r->seed = sqlite3_column_int64(st, 9);
    str_col(st, 10, r->status, sizeof r->status);
    str_col(st, 11, r->stage, sizeof r->stage);
    r->progress = sqlite3_column_double(st, 12);
    r->created_at = sqlite3_column_int64(st, 14);
    r->started_at = sqlite3_column_int64(st, 15);
    r->finished_at = sqlite3_column_int64(st, 16);
    r->updated_at = sqlite3_column_int64(st, 17);
    r->job_model = sqlite3_column_int(st, 18);
    r->job_epsilon =
        sqlite3_column_type(st, 19) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 19);
    r->utility = sqlite3_column_int(st, 20);
    int oom = 0;
    if (sqlite3_column_type(st, 13) != SQLITE_NULL) oom |= !(r->error = dup_col(st, 13));
    if (full && sqlite3_column_type(st, 21) != SQLITE_NULL) oom |= !(r->result = dup_col(st, 21));
    if (full && sqlite3_column_type(st, 22) != SQLITE_NULL) oom |= !(r->figures = dup_col(st, 22));
    if (oom) {
        pg_report_rows_free(r, 1);
        return pg_error_set(err, PG_ENOMEM, "out of memory reading a report");
    }
    return PG_OK;
}

int sq_report_insert(pg_db *db, pg_report_row *r, int64_t max_queued, int *full, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int64_t queued = 0;
    int rc = sq_tx_begin(s, err);
    if (!rc)
        rc = sq_int(s, "SELECT count(*) FROM reports WHERE status='queued'", 0, 0,
                    "counting queued reports", &queued, NULL, err);
    if (!rc && queued >= max_queued) *full = 1;
    if (!rc && !*full &&
        !(rc = sq_prep(
              s,
              "INSERT INTO reports(id, tenant_id, job_id, against_id, against_model, "
              "against_n, job_step, n, seed, status, progress, created_at, updated_at, "
              "job_model, job_epsilon, utility) VALUES(?,?,?,?,?,?,?,?,?,'queued',0,?,?,?,?,?)",
              &st, err))) {
        sqlite3_bind_text(st, 1, r->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, r->tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, r->job_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, r->against_id, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 5, r->against_model);
        sqlite3_bind_int64(st, 6, r->against_n);
        sqlite3_bind_int64(st, 7, r->job_step);
        sqlite3_bind_int64(st, 8, r->n);
        sqlite3_bind_int64(st, 9, r->seed);
        sqlite3_bind_int64(st, 10, r->created_at);
        sqlite3_bind_int64(st, 11, r->created_at);
        sqlite3_bind_int(st, 12, r->job_model);
        if (isfinite(r->job_epsilon))
            sqlite3_bind_double(st, 13, r->job_epsilon);
        else
            sqlite3_bind_null(st, 13);
        sqlite3_bind_int(st, 14, r->utility ? 1 : 0);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sq_fail(s, err, "storing a report");
        else
            r->seq = sqlite3_last_insert_rowid(s->db);
        sqlite3_finalize(st);
    }
    rc = sq_tx_end(s, rc, err);
    if (!rc && !*full) {
        snprintf(r->status, sizeof r->status, "queued");
        r->updated_at = r->created_at;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static int full_row_read(sqlite3_stmt *st, void *out, pg_error *err)
{
    return row_read(st, 1, out, err);
}

int sq_report_get(pg_db *db, const char *tenant, const char *id, pg_report_row *out, int *found,
                  pg_error *err)
{
    return sq_get_by_id(SQ(db),
                        "SELECT " PG_DB_REPORT_COLS_FULL " FROM reports WHERE id=? AND tenant_id=?",
                        id, tenant, full_row_read, out, found, "reading a report", err);
}

int sq_report_list(pg_db *db, const char *tenant, const char *job_id, int public_only,
                   int64_t after, size_t limit, pg_report_row **out, size_t *count, pg_error *err)
{
    sq_db *s = SQ(db);
    size_t cap = limit < 64 ? limit : 64, n = 0;
    pg_report_row *v = calloc(cap, sizeof *v);
    if (!v) return pg_error_set(err, PG_ENOMEM, "out of memory listing reports");
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s,
                     "SELECT " PG_DB_REPORT_COLS " FROM reports WHERE tenant_id=? AND job_id=? AND "
                     "seq>? AND (?=0 OR against_model=3) ORDER BY seq LIMIT ?",
                     &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, job_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, after);
        sqlite3_bind_int(st, 4, public_only ? 1 : 0);
        sqlite3_bind_int64(st, 5, (sqlite3_int64)(limit > INT64_MAX ? INT64_MAX : limit));
        int r = SQLITE_DONE;
        while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
            if (n == cap && (rc = sq_grow(&v, &cap, sizeof *v, "listing reports", err))) break;
            if (!(rc = row_read(st, 0, &v[n], err))) n++;
        }
        if (!rc && r != SQLITE_DONE) rc = sq_fail(s, err, "listing reports");
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc || !n) {
        pg_report_rows_free(v, n);
        free(v);
        return rc;
    }
    *out = v;
    *count = n;
    return PG_OK;
}

int sq_report_claim(pg_db *db, int64_t now, int64_t stale_s, pg_report_row **out, int *found,
                    pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int64_t seq = -1;
    int any = 0;
    int rc = sq_tx_begin(s, err);
    if (!rc)
        rc = sq_int(s,
                    "SELECT seq FROM reports WHERE status='queued' OR "
                    "(status='running' AND updated_at<=?1-?2) ORDER BY seq LIMIT 1",
                    now, stale_s, "finding a queued report", &seq, &any, err);
    if (!rc && seq >= 0 &&
        !(rc = sq_prep(s,
                       "UPDATE reports SET status='running', stage='', progress=0, error=NULL, "
                       "started_at=?1, updated_at=?1 WHERE seq=?2",
                       &st, err))) {
        sqlite3_bind_int64(st, 1, now);
        sqlite3_bind_int64(st, 2, seq);
        if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, "claiming a report");
        sqlite3_finalize(st);
    }
    pg_report_row *row = NULL;
    if (!rc && seq >= 0 &&
        !(rc = sq_prep(s, "SELECT " PG_DB_REPORT_COLS " FROM reports WHERE seq=?", &st, err))) {
        sqlite3_bind_int64(st, 1, seq);
        if (sqlite3_step(st) != SQLITE_ROW)
            rc = sq_fail(s, err, "reading a claimed report");
        else if (!(row = calloc(1, sizeof *row)))
            rc = pg_error_set(err, PG_ENOMEM, "out of memory claiming a report");
        else if ((rc = row_read(st, 0, row, err))) {
            free(row);
            row = NULL;
        }
        sqlite3_finalize(st);
    }
    rc = sq_tx_end(s, rc, err);
    if (rc) {
        if (row) pg_report_rows_free(row, 1);
        free(row);
        row = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    if (row) {
        *out = row;
        *found = 1;
    }
    return rc;
}

int sq_report_progress(pg_db *db, const char *id, const char *stage, double progress, int64_t now,
                       int *held, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s,
                     "UPDATE reports SET stage=?, progress=?, updated_at=? WHERE id=? AND "
                     "status='running'",
                     &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, stage, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 2, progress);
        sqlite3_bind_int64(st, 3, now);
        sqlite3_bind_text(st, 4, id, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sq_fail(s, err, "storing a report's progress");
        else
            *held = sqlite3_changes(s->db) > 0;
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sq_report_finish(pg_db *db, const char *id, const char *status, const char *error,
                     const char *result, const pg_report_figure *figs, size_t nfig, int64_t now,
                     int *held, pg_error *err)
{
    sq_db *s = SQ(db);
    int requeue = !strcmp(status, "queued");
    /* The names as a JSON array: names are [a-z0-9_.-], nothing to escape. */
    size_t cap = 3 + nfig * 67;
    char *names = malloc(cap);
    if (!names) return pg_error_set(err, PG_ENOMEM, "out of memory ending a report");
    size_t at = (size_t)snprintf(names, cap, "[");
    for (size_t i = 0; i < nfig; i++)
        at += (size_t)snprintf(names + at, cap - at, "%s\"%s\"", i ? "," : "", figs[i].name);
    snprintf(names + at, cap - at, "]");
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_tx_begin(s, err);
    if (!rc && !(rc = sq_prep(s,
                              "UPDATE reports SET status=?1, error=?2, result=?3, "
                              "figures=CASE WHEN ?1='succeeded' THEN ?4 ELSE NULL END, "
                              "stage=CASE WHEN ?1='queued' THEN '' ELSE stage END, "
                              "progress=CASE WHEN ?1='succeeded' THEN 1 WHEN ?1='queued' THEN 0 "
                              "ELSE progress END, "
                              "started_at=CASE WHEN ?1='queued' THEN NULL ELSE started_at END, "
                              "finished_at=CASE WHEN ?1='queued' THEN NULL ELSE ?5 END, "
                              "updated_at=?5 WHERE id=?6 AND status='running'",
                              &st, err))) {
        sqlite3_bind_text(st, 1, status, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, error, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, requeue ? NULL : result, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, names, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, now);
        sqlite3_bind_text(st, 6, id, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sq_fail(s, err, "ending a report");
        else
            *held = sqlite3_changes(s->db) > 0;
        sqlite3_finalize(st);
    }
    int store = !strcmp(status, "succeeded");
    for (size_t i = 0; !rc && *held && store && i < nfig; i++) {
        if ((rc = sq_prep(s,
                          "INSERT OR REPLACE INTO report_figures(report_id, name, png) "
                          "VALUES(?,?,?)",
                          &st, err)))
            break;
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, figs[i].name, -1, SQLITE_STATIC);
        sqlite3_bind_blob64(st, 3, figs[i].png ? (const void *)figs[i].png : "", figs[i].len,
                            SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, "storing a report figure");
        sqlite3_finalize(st);
    }
    rc = sq_tx_end(s, rc, err);
    if (rc) {
        *held = 0;
    }
    pthread_mutex_unlock(&s->mu);
    free(names);
    return rc;
}

/* Begins a write transaction and reads the report's status into stt (cap
 * bytes; "" when absent): cancel and delete decide under the same lock. */
static int begin_status(sq_db *s, const char *tenant, const char *id, char *stt, size_t cap,
                        int *found, pg_error *err)
{
    sqlite3_stmt *st;
    stt[0] = '\0';
    int rc = sq_tx_begin(s, err);
    if (!rc &&
        !(rc = sq_prep(s, "SELECT status FROM reports WHERE id=? AND tenant_id=?", &st, err))) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            *found = 1;
            const char *t = (const char *)sqlite3_column_text(st, 0);
            snprintf(stt, cap, "%s", t ? t : "");
        } else if (r != SQLITE_DONE) {
            rc = sq_fail(s, err, "reading a report");
        }
        sqlite3_finalize(st);
    }
    return rc;
}

int sq_report_cancel(pg_db *db, const char *tenant, const char *id, int64_t now, int *found,
                     int *done, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    char stt[16];
    int rc = begin_status(s, tenant, id, stt, sizeof stt, found, err);
    *done = !rc && (!strcmp(stt, "queued") || !strcmp(stt, "running"));
    if (!rc && *done)
        rc = sq_run(s,
                    "UPDATE reports SET status='cancelled', finished_at=?3, updated_at=?3 "
                    "WHERE id=?1",
                    id, NULL, now, "cancelling a report", NULL, err);
    rc = sq_tx_end(s, rc, err);
    if (rc) {
        *found = *done = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sq_report_delete(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                     pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    char stt[16];
    int rc = begin_status(s, tenant, id, stt, sizeof stt, found, err);
    *conflict = !rc && !strcmp(stt, "running");
    static const char *const del[] = {"DELETE FROM report_figures WHERE report_id=?",
                                      "DELETE FROM reports WHERE id=?"};
    for (int i = 0; !rc && *found && !*conflict && i < 2; i++)
        rc = sq_run(s, del[i], id, NULL, 0, "deleting a report", NULL, err);
    rc = sq_tx_end(s, rc, err);
    if (rc) {
        *found = *conflict = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sq_report_figure_get(pg_db *db, const char *id, const char *name, size_t max_bytes,
                         unsigned char **bytes, size_t *len, int *found, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s, "SELECT png FROM report_figures WHERE report_id=? AND name=?", &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            size_t n = (size_t)sqlite3_column_bytes(st, 0);
            const void *p = sqlite3_column_blob(st, 0);
            unsigned char *b = NULL;
            if (n > max_bytes)
                rc = pg_error_set(err, PG_ENOMEM, "figure of %zu bytes exceeds the cap", n);
            else if (!(b = malloc(n ? n : 1)))
                rc = pg_error_set(err, PG_ENOMEM, "out of memory reading a figure");
            else {
                if (n) memcpy(b, p, n);
                *bytes = b;
                *len = n;
                *found = 1;
            }
        } else if (r != SQLITE_DONE) {
            rc = sq_fail(s, err, "reading a report figure");
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}
