/* service/store/pg/db_pg_hist.c - the PostgreSQL backend's job history documents,
 * job deletion and checkpoint deletion (chunks go by ON DELETE CASCADE). */
#include <stdlib.h>
#include <string.h>

#include "service/store/pg/db_pg.h"

typedef struct hist_ctx {
    const char *id, *doc;
    int64_t step;
    char *out;
    int found, conflict;
} hist_ctx;

static int get_fn(PGconn *c, void *ctx, pg_error *err)
{
    hist_ctx *x = ctx;
    free(x->out);
    x->out = NULL;
    pgb_args a = {0};
    pgb_text(&a, x->id);
    PGresult *r;
    int rc = pgb_q(c, "SELECT doc FROM job_history WHERE job_id = $1", &a,
                   "reading a job's history", &r, err);
    if (rc) return rc;
    if (PQntuples(r) == 1 && !(x->out = pgb_dup_at(r, 0, 0)))
        rc = pg_error_set(err, PG_ENOMEM, "out of memory reading a job's history");
    PQclear(r);
    return rc;
}

int pgb_job_history_get(pg_db *db, const char *id, char **doc, int *found, pg_error *err)
{
    hist_ctx x = {.id = id};
    int rc = pgb_tx(PGB(db), get_fn, &x, err);
    if (rc) {
        free(x.out);
        return rc;
    }
    *doc = x.out;
    *found = x.out != NULL;
    return PG_OK;
}

static int delete_fn(PGconn *c, void *ctx, pg_error *err)
{
    hist_ctx *x = ctx;
    x->found = x->conflict = 0;
    pgb_args a = {0};
    pgb_text(&a, x->id);
    PGresult *r;
    /* The row lock keeps a concurrent status change (a replica starting
     * the job) from interleaving with the check. */
    int rc =
        pgb_q(c, "SELECT status FROM jobs WHERE id = $1 FOR UPDATE", &a, "reading a job", &r, err);
    if (rc) return rc;
    if (PQntuples(r) == 1) {
        char st[16];
        pgb_str_at(r, 0, 0, st, sizeof st);
        x->found = 1;
        x->conflict = !strcmp(st, "queued") || !strcmp(st, "running");
    }
    PQclear(r);
    if (!x->found || x->conflict) return PG_OK;
    if ((rc = pgb_q(c, "DELETE FROM checkpoints WHERE job_id = $1", &a, "deleting checkpoints",
                    NULL, err)))
        return rc;
    if ((rc = pgb_q(c, "DELETE FROM job_history WHERE job_id = $1", &a, "deleting a job's history",
                    NULL, err)))
        return rc;
    /* Its quality reports go with it (see the SQLite backend). */
    if ((rc = pgb_q(c,
                    "DELETE FROM report_figures WHERE report_id IN "
                    "(SELECT id FROM reports WHERE job_id = $1)",
                    &a, "deleting a job's report figures", NULL, err)))
        return rc;
    if ((rc = pgb_q(c, "DELETE FROM reports WHERE job_id = $1", &a, "deleting a job's reports",
                    NULL, err)))
        return rc;
    return pgb_q(c, "DELETE FROM jobs WHERE id = $1", &a, "deleting a job", NULL, err);
}

int pgb_job_delete(pg_db *db, const char *id, int *found, int *conflict, pg_error *err)
{
    hist_ctx x = {.id = id};
    int rc = pgb_tx(PGB(db), delete_fn, &x, err);
    if (!rc) {
        *found = x.found;
        *conflict = x.conflict;
    }
    return rc;
}
