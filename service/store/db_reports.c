/* service/store/db_reports.c - dispatch of the report operations of service/store/db.h
 * (the shared checks, then the backend's op with the arguments unchanged). */
#include <stdlib.h>
#include <string.h>

#include "service/store/db.h"
#include "service/store/db_backend.h"

static int name_ok(const char *s)
{
    if (!s || !*s || strlen(s) >= 64) return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' ||
              *p == '.'))
            return 0;
    return 1;
}

static int status_ok(const char *s)
{
    static const char *const ok[] = {"queued", "running", "succeeded", "failed", "cancelled"};
    for (size_t i = 0; s && i < sizeof ok / sizeof ok[0]; i++)
        if (!strcmp(s, ok[i])) return 1;
    return 0;
}

int pg_db_report_insert(pg_db *db, pg_report_row *r, int64_t max_queued, int *full, pg_error *err)
{
    *full = 0;
    if (!pg_db_id_ok(r->id) || !pg_db_id_ok(r->job_id) || !pg_db_id_ok(r->against_id) ||
        !*r->tenant || r->n < 1 || r->seed < 0 || r->against_n < 0)
        return pg_error_set(err, PG_EINVAL, "invalid report row");
    return db->ops->report_insert(db, r, max_queued, full, err);
}

int pg_db_report_get(pg_db *db, const char *tenant, const char *id, pg_report_row *out, int *found,
                     pg_error *err)
{
    *found = 0;
    if (!pg_db_id_ok(id)) return PG_OK;
    return db->ops->report_get(db, tenant, id, out, found, err);
}

int pg_db_report_list(pg_db *db, const char *tenant, const char *job_id, int public_only,
                      int64_t after, size_t limit, pg_report_row **out, size_t *count,
                      pg_error *err)
{
    *out = NULL;
    *count = 0;
    if (!pg_db_id_ok(job_id) || limit == 0) return PG_OK;
    return db->ops->report_list(db, tenant, job_id, public_only, after, limit, out, count, err);
}

int pg_db_report_claim(pg_db *db, int64_t now, int64_t stale_s, pg_report_row **out, int *found,
                       pg_error *err)
{
    *out = NULL;
    *found = 0;
    if (stale_s < 1) return pg_error_set(err, PG_EINVAL, "stale_s must be positive");
    return db->ops->report_claim(db, now, stale_s, out, found, err);
}

int pg_db_report_progress(pg_db *db, const char *id, const char *stage, double progress,
                          int64_t now, int *held, pg_error *err)
{
    *held = 0;
    if (!pg_db_id_ok(id)) return pg_error_set(err, PG_EINVAL, "invalid report id");
    if (!(progress >= 0)) progress = 0;
    if (progress > 1) progress = 1;
    return db->ops->report_progress(db, id, stage ? stage : "", progress, now, held, err);
}

int pg_db_report_finish(pg_db *db, const char *id, const char *status, const char *error,
                        const char *result, const pg_report_figure *figs, size_t nfig, int64_t now,
                        int *held, pg_error *err)
{
    *held = 0;
    if (!pg_db_id_ok(id)) return pg_error_set(err, PG_EINVAL, "invalid report id");
    if (!status_ok(status) || !strcmp(status, "running") || !strcmp(status, "cancelled"))
        return pg_error_set(err, PG_EINVAL, "a report cannot finish as '%s'",
                            status ? status : "(null)");
    for (size_t i = 0; i < nfig; i++)
        if (!name_ok(figs[i].name) || (!figs[i].png && figs[i].len))
            return pg_error_set(err, PG_EINVAL, "invalid figure '%s'", figs[i].name);
    return db->ops->report_finish(db, id, status, error, result, figs, nfig, now, held, err);
}

int pg_db_report_cancel(pg_db *db, const char *tenant, const char *id, int64_t now, int *found,
                        int *done, pg_error *err)
{
    *found = 0;
    *done = 0;
    if (!pg_db_id_ok(id)) return PG_OK;
    return db->ops->report_cancel(db, tenant, id, now, found, done, err);
}

int pg_db_report_delete(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                        pg_error *err)
{
    *found = 0;
    *conflict = 0;
    if (!pg_db_id_ok(id)) return PG_OK;
    return db->ops->report_delete(db, tenant, id, found, conflict, err);
}

int pg_db_report_figure_get(pg_db *db, const char *id, const char *name, size_t max_bytes,
                            unsigned char **bytes, size_t *len, int *found, pg_error *err)
{
    *found = 0;
    if (!pg_db_id_ok(id) || !name_ok(name)) return PG_OK;
    return db->ops->report_figure_get(db, id, name, max_bytes, bytes, len, found, err);
}

void pg_report_rows_free(pg_report_row *rows, size_t count)
{
    for (size_t i = 0; rows && i < count; i++) {
        free(rows[i].error);
        free(rows[i].result);
        free(rows[i].figures);
        rows[i].error = rows[i].result = rows[i].figures = NULL;
    }
}
