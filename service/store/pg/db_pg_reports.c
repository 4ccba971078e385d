/* service/store/pg/db_pg_reports.c - the PostgreSQL backend's quality reports
 * (service/store/db.h). Figures are bytea rows of report_figures, written in the
 * transaction that ends the report. A claim is one UPDATE over SELECT ...
 * FOR UPDATE SKIP LOCKED, like the job queue's; every later write of the
 * worker is an UPDATE ... WHERE status = 'running', so a cancel committed
 * first makes it a no-op (*held = 0). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/store/pg/db_pg.h"

/* 'rep' 'qcap' as one bigint: serializes the queue-bound check of inserts. */
#define INSERT_LOCK "8245935278387130113"

static int row_from(const PGresult *r, int i, int full, pg_report_row *o, pg_error *err)
{
    memset(o, 0, sizeof *o);
    o->seq = pgb_i64_at(r, i, 0);
    pgb_str_at(r, i, 1, o->id, sizeof o->id);
    pgb_str_at(r, i, 2, o->tenant, sizeof o->tenant);
    pgb_str_at(r, i, 3, o->job_id, sizeof o->job_id);
    pgb_str_at(r, i, 4, o->against_id, sizeof o->against_id);
    o->against_model = (int)pgb_i64_at(r, i, 5);
    o->against_n = pgb_i64_at(r, i, 6);
    o->job_step = pgb_i64_at(r, i, 7);
    o->n = pgb_i64_at(r, i, 8);
    o->seed = pgb_i64_at(r, i, 9);
    pgb_str_at(r, i, 10, o->status, sizeof o->status);
    pgb_str_at(r, i, 11, o->stage, sizeof o->stage);
    o->progress = pgb_f64_at(r, i, 12);
    o->error = pgb_dup_at(r, i, 13);
    o->created_at = pgb_i64_at(r, i, 14);
    o->started_at = pgb_i64_at(r, i, 15);
    o->finished_at = pgb_i64_at(r, i, 16);
    o->updated_at = pgb_i64_at(r, i, 17);
    o->job_model = (int)pgb_i64_at(r, i, 18);
    o->job_epsilon = PQgetisnull(r, i, 19) ? NAN : pgb_f64_at(r, i, 19);
    o->utility = (int)pgb_i64_at(r, i, 20);
    int oom = !PQgetisnull(r, i, 13) && !o->error;
    if (full) {
        o->result = pgb_dup_at(r, i, 21);
        o->figures = pgb_dup_at(r, i, 22);
        oom |= (!PQgetisnull(r, i, 21) && !o->result) || (!PQgetisnull(r, i, 22) && !o->figures);
    }
    if (oom) {
        pg_report_rows_free(o, 1);
        return pg_error_set(err, PG_ENOMEM, "out of memory reading a report");
    }
    return PG_OK;
}

typedef struct rep_ctx {
    pg_report_row *row;
    int64_t max_queued, now, stale_s, after;
    int full, found, held, done, public_only;
    const char *tenant, *id, *job_id, *stage, *status, *error, *result, *name;
    double progress;
    const pg_report_figure *figs;
    size_t nfig, limit, count, max_bytes, len;
    pg_report_row *list;
    unsigned char *bytes;
} rep_ctx;

static int insert_fn(PGconn *c, void *ctx, pg_error *err)
{
    rep_ctx *x = ctx;
    x->full = 0;
    PGresult *r;
    int rc = pgb_q(c, "SELECT pg_advisory_xact_lock(" INSERT_LOCK ")", NULL,
                   "locking the report queue", NULL, err);
    if (rc) return rc;
    if ((rc = pgb_q(c, "SELECT count(*) FROM reports WHERE status = 'queued'", NULL,
                    "counting queued reports", &r, err)))
        return rc;
    x->full = pgb_i64_at(r, 0, 0) >= x->max_queued;
    PQclear(r);
    if (x->full) return PGB_ROLLBACK;
    pg_report_row *w = x->row;
    pgb_args a = {0};
    pgb_text(&a, w->id);
    pgb_text(&a, w->tenant);
    pgb_text(&a, w->job_id);
    pgb_text(&a, w->against_id);
    pgb_i64(&a, w->against_model);
    pgb_i64(&a, w->against_n);
    pgb_i64(&a, w->job_step);
    pgb_i64(&a, w->n);
    pgb_i64(&a, w->seed);
    pgb_i64(&a, w->created_at);
    pgb_i64(&a, w->job_model);
    pgb_f64(&a, w->job_epsilon);
    pgb_i64(&a, w->utility ? 1 : 0);
    if ((rc = pgb_q(c,
                    "INSERT INTO reports(id, tenant_id, job_id, against_id, against_model, "
                    "against_n, job_step, n, seed, status, progress, created_at, updated_at, "
                    "job_model, job_epsilon, utility) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, "
                    "'queued', 0, $10, $10, $11, CASE WHEN $12::float8 IN ('NaN', 'Infinity', "
                    "'-Infinity') THEN NULL ELSE $12::float8 END, $13::integer) "
                    "RETURNING seq",
                    &a, "storing a report", &r, err)))
        return rc;
    w->seq = pgb_i64_at(r, 0, 0);
    PQclear(r);
    return PG_OK;
}

int pgb_report_insert(pg_db *db, pg_report_row *r, int64_t max_queued, int *full, pg_error *err)
{
    rep_ctx x = {.row = r, .max_queued = max_queued};
    int rc = pgb_tx(PGB(db), insert_fn, &x, err);
    if (rc) return rc;
    *full = x.full;
    if (!x.full) {
        snprintf(r->status, sizeof r->status, "queued");
        r->updated_at = r->created_at;
    }
    return PG_OK;
}

static int get_fn(PGconn *c, void *ctx, pg_error *err)
{
    rep_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->id);
    pgb_text(&a, x->tenant);
    PGresult *r;
    int rc =
        pgb_q(c, "SELECT " PG_DB_REPORT_COLS_FULL " FROM reports WHERE id = $1 AND tenant_id = $2",
              &a, "reading a report", &r, err);
    if (rc) return rc;
    pg_report_rows_free(x->row, x->found);
    x->found = 0;
    if (PQntuples(r) == 1 && !(rc = row_from(r, 0, 1, x->row, err))) x->found = 1;
    PQclear(r);
    return rc;
}

int pgb_report_get(pg_db *db, const char *tenant, const char *id, pg_report_row *out, int *found,
                   pg_error *err)
{
    pg_report_row row = {0};
    rep_ctx x = {.tenant = tenant, .id = id, .row = &row};
    int rc = pgb_tx(PGB(db), get_fn, &x, err);
    if (rc) return rc;
    if (x.found) *out = row;
    *found = x.found;
    return PG_OK;
}

static int list_fn(PGconn *c, void *ctx, pg_error *err)
{
    rep_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->tenant);
    pgb_text(&a, x->job_id);
    pgb_i64(&a, x->after);
    pgb_i64(&a, x->public_only);
    pgb_limit(&a, x->limit);
    PGresult *r;
    int rc =
        pgb_q(c,
              "SELECT " PG_DB_REPORT_COLS " FROM reports WHERE tenant_id = $1 AND job_id = $2 AND "
              "seq > $3 AND ($4::bigint = 0 OR against_model = 3) ORDER BY seq LIMIT $5",
              &a, "listing reports", &r, err);
    if (rc) return rc;
    pg_report_rows_free(x->list, x->count);
    free(x->list);
    x->list = NULL;
    x->count = 0;
    int n = PQntuples(r);
    if (n > 0 && !(x->list = calloc((size_t)n, sizeof *x->list))) {
        PQclear(r);
        return pg_error_set(err, PG_ENOMEM, "out of memory listing reports");
    }
    for (int i = 0; i < n && !rc; i++)
        if (!(rc = row_from(r, i, 0, &x->list[i], err))) x->count++;
    PQclear(r);
    return rc;
}

int pgb_report_list(pg_db *db, const char *tenant, const char *job_id, int public_only,
                    int64_t after, size_t limit, pg_report_row **out, size_t *count, pg_error *err)
{
    rep_ctx x = {.tenant = tenant,
                 .job_id = job_id,
                 .public_only = public_only != 0,
                 .after = after,
                 .limit = limit};
    int rc = pgb_tx(PGB(db), list_fn, &x, err);
    if (rc || !x.count) {
        pg_report_rows_free(x.list, x.count);
        free(x.list);
        return rc;
    }
    *out = x.list;
    *count = x.count;
    return PG_OK;
}

static int claim_fn(PGconn *c, void *ctx, pg_error *err)
{
    rep_ctx *x = ctx;
    pgb_args a = {0};
    pgb_i64(&a, x->now);
    pgb_i64(&a, x->stale_s);
    PGresult *r;
    int rc = pgb_q(c,
                   "UPDATE reports SET status = 'running', stage = '', progress = 0, error = NULL, "
                   "started_at = $1::bigint, updated_at = $1::bigint WHERE seq = (SELECT seq FROM "
                   "reports WHERE status = 'queued' OR (status = 'running' AND updated_at <= "
                   "$1::bigint - $2::bigint) ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) "
                   "RETURNING " PG_DB_REPORT_COLS,
                   &a, "claiming a report", &r, err);
    if (rc) return rc;
    if (x->found) pg_report_rows_free(x->row, 1);
    x->found = 0;
    if (PQntuples(r) == 1 && !(rc = row_from(r, 0, 0, x->row, err))) x->found = 1;
    PQclear(r);
    return rc;
}

int pgb_report_claim(pg_db *db, int64_t now, int64_t stale_s, pg_report_row **out, int *found,
                     pg_error *err)
{
    pg_report_row *row = calloc(1, sizeof *row);
    if (!row) return pg_error_set(err, PG_ENOMEM, "out of memory claiming a report");
    rep_ctx x = {.row = row, .now = now, .stale_s = stale_s};
    int rc = pgb_tx(PGB(db), claim_fn, &x, err);
    if (rc || !x.found) {
        if (x.found) pg_report_rows_free(row, 1);
        free(row);
        return rc;
    }
    *out = row;
    *found = 1;
    return PG_OK;
}

static int progress_fn(PGconn *c, void *ctx, pg_error *err)
{
    rep_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->stage);
    pgb_f64(&a, x->progress);
    pgb_i64(&a, x->now);
    pgb_text(&a, x->id);
    PGresult *r;
    int rc = pgb_q(c,
                   "UPDATE reports SET stage = $1, progress = $2, updated_at = $3 "
                   "WHERE id = $4 AND status = 'running' RETURNING seq",
                   &a, "storing a report's progress", &r, err);
    if (rc) return rc;
    x->held = PQntuples(r) == 1;
    PQclear(r);
    return PG_OK;
}

int pgb_report_progress(pg_db *db, const char *id, const char *stage, double progress, int64_t now,
                        int *held, pg_error *err)
{
    rep_ctx x = {.id = id, .stage = stage, .progress = progress, .now = now};
    int rc = pgb_tx(PGB(db), progress_fn, &x, err);
    if (!rc) *held = x.held;
    return rc;
}

static int finish_fn(PGconn *c, void *ctx, pg_error *err)
{
    rep_ctx *x = ctx;
    x->held = 0;
    int ok = !strcmp(x->status, "succeeded");
    /* Names are [a-z0-9_.-] (checked in db_reports.c): nothing to escape. */
    char *names = NULL;
    if (ok) {
        size_t cap = 3 + x->nfig * 67, at = 1;
        if (!(names = malloc(cap))) return pg_error_set(err, PG_ENOMEM, "out of memory");
        names[0] = '[';
        for (size_t i = 0; i < x->nfig; i++)
            at += (size_t)snprintf(names + at, cap - at, "%s\"%s\"", i ? "," : "", x->figs[i].name);
        snprintf(names + at, cap - at, "]");
    }
    pgb_args a = {0};
    pgb_text(&a, x->status);
    pgb_text(&a, x->error);
    pgb_text(&a, strcmp(x->status, "queued") ? x->result : NULL);
    pgb_text(&a, names);
    pgb_i64(&a, x->now);
    pgb_text(&a, x->id);
    PGresult *r;
    int rc = pgb_q(c,
                   "UPDATE reports SET status = $1, error = $2, result = $3, figures = $4, "
                   "stage = CASE WHEN $1 = 'queued' THEN '' ELSE stage END, "
                   "progress = CASE WHEN $1 = 'succeeded' THEN 1 WHEN $1 = 'queued' THEN 0 "
                   "ELSE progress END, "
                   "started_at = CASE WHEN $1 = 'queued' THEN NULL ELSE started_at END, "
                   "finished_at = CASE WHEN $1 = 'queued' THEN NULL ELSE $5::bigint END, "
                   "updated_at = $5::bigint WHERE id = $6 AND status = 'running' RETURNING seq",
                   &a, "ending a report", &r, err);
    free(names);
    if (rc) return rc;
    x->held = PQntuples(r) == 1;
    PQclear(r);
    for (size_t i = 0; ok && x->held && i < x->nfig; i++) {
        pgb_args b = {0};
        pgb_text(&b, x->id);
        pgb_text(&b, x->figs[i].name);
        pgb_bin(&b, x->figs[i].png ? (const void *)x->figs[i].png : "", x->figs[i].len);
        if ((rc = pgb_q(c,
                        "INSERT INTO report_figures(report_id, name, png) VALUES ($1, $2, $3) "
                        "ON CONFLICT (report_id, name) DO UPDATE SET png = EXCLUDED.png",
                        &b, "storing a report figure", NULL, err)))
            return rc;
    }
    return PG_OK;
}

int pgb_report_finish(pg_db *db, const char *id, const char *status, const char *error,
                      const char *result, const pg_report_figure *figs, size_t nfig, int64_t now,
                      int *held, pg_error *err)
{
    rep_ctx x = {.id = id,
                 .status = status,
                 .error = error,
                 .result = result,
                 .figs = figs,
                 .nfig = nfig,
                 .now = now};
    int rc = pgb_tx(PGB(db), finish_fn, &x, err);
    if (!rc) *held = x.held;
    return rc;
}

static int cancel_fn(PGconn *c, void *ctx, pg_error *err)
{
    rep_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->id);
    pgb_text(&a, x->tenant);
    pgb_i64(&a, x->now);
    PGresult *r;
    int rc = pgb_q(c,
                   "WITH old AS (SELECT seq, status FROM reports WHERE id = $1 AND tenant_id = $2 "
                   "FOR UPDATE), upd AS (UPDATE reports SET status = 'cancelled', "
                   "finished_at = $3::bigint, updated_at = $3::bigint WHERE seq IN (SELECT seq "
                   "FROM old WHERE status IN ('queued', 'running')) RETURNING seq) "
                   "SELECT (SELECT count(*) FROM old), (SELECT count(*) FROM upd)",
                   &a, "cancelling a report", &r, err);
    if (rc) return rc;
    x->found = pgb_i64_at(r, 0, 0) > 0;
    x->done = pgb_i64_at(r, 0, 1) > 0;
    PQclear(r);
    return PG_OK;
}

int pgb_report_cancel(pg_db *db, const char *tenant, const char *id, int64_t now, int *found,
                      int *done, pg_error *err)
{
    rep_ctx x = {.tenant = tenant, .id = id, .now = now};
    int rc = pgb_tx(PGB(db), cancel_fn, &x, err);
    if (!rc) {
        *found = x.found;
        *done = x.done;
    }
    return rc;
}

/* The row lock (FOR UPDATE) orders the delete against a claim of the same
 * report: the claim either took it first (running: refused here) or finds
 * it gone. */
static int delete_fn(PGconn *c, void *ctx, pg_error *err)
{
    rep_ctx *x = ctx;
    x->found = x->done = 0; /* done: it is running (a conflict) */
    pgb_args a = {0};
    pgb_text(&a, x->id);
    pgb_text(&a, x->tenant);
    PGresult *r;
    int rc = pgb_q(c, "SELECT status FROM reports WHERE id = $1 AND tenant_id = $2 FOR UPDATE", &a,
                   "reading a report", &r, err);
    if (rc) return rc;
    x->found = PQntuples(r) == 1;
    x->done = x->found && !strcmp(PQgetvalue(r, 0, 0), "running");
    PQclear(r);
    if (!x->found || x->done) return PGB_ROLLBACK;
    a = (pgb_args){0};
    pgb_text(&a, x->id);
    if ((rc = pgb_q(c, "DELETE FROM report_figures WHERE report_id = $1", &a,
                    "deleting a report's figures", NULL, err)))
        return rc;
    return pgb_q(c, "DELETE FROM reports WHERE id = $1", &a, "deleting a report", NULL, err);
}

int pgb_report_delete(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                      pg_error *err)
{
    rep_ctx x = {.tenant = tenant, .id = id};
    int rc = pgb_tx(PGB(db), delete_fn, &x, err);
    if (!rc) {
        *found = x.found;
        *conflict = x.done;
    }
    return rc;
}

static int figure_fn(PGconn *c, void *ctx, pg_error *err)
{
    rep_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->id);
    pgb_text(&a, x->name);
    PGresult *r;
    int rc = pgb_q(c, "SELECT png FROM report_figures WHERE report_id = $1 AND name = $2", &a,
                   "reading a report figure", &r, err);
    if (rc) return rc;
    free(x->bytes);
    x->bytes = NULL;
    x->found = 0;
    if (PQntuples(r) == 1) {
        size_t n = (size_t)PQgetlength(r, 0, 0);
        if (n > x->max_bytes)
            rc = pg_error_set(err, PG_ENOMEM, "figure of %zu bytes exceeds the cap", n);
        else if (!(x->bytes = malloc(n ? n : 1)))
            rc = pg_error_set(err, PG_ENOMEM, "out of memory reading a figure");
        else {
            if (n) memcpy(x->bytes, PQgetvalue(r, 0, 0), n);
            x->len = n;
            x->found = 1;
        }
    }
    PQclear(r);
    return rc;
}

int pgb_report_figure_get(pg_db *db, const char *id, const char *name, size_t max_bytes,
                          unsigned char **bytes, size_t *len, int *found, pg_error *err)
{
    rep_ctx x = {.id = id, .name = name, .max_bytes = max_bytes};
    int rc = pgb_tx(PGB(db), figure_fn, &x, err);
    if (rc || !x.found) {
        free(x.bytes);
        return rc;
    }
    *bytes = x.bytes;
    *len = x.len;
    *found = 1;
    return PG_OK;
}
