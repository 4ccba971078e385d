/* /v1/jobs/{id}/reports...: thin HTTP glue over service/reports/reports.h, which
 * owns validation, the privacy rule (service/reports/report_rules.h) and the
 * worker. Every route is PG_AUTH_READ; the rule decides per report. A hidden
 * report answers exactly like a missing one (same status and body). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "service/reports/reports.h"

static int ready(pg_req *r)
{
    if (r->app->reports && r->app->jobs) return 1;
    pg_api_problem(r, 503, "this server runs no report service", NULL, NULL);
    return 0;
}

static void no_job(pg_req *r)
{
    pg_api_problem(r, 404, "no such job", NULL, NULL);
}

static void no_report(pg_req *r)
{
    pg_api_problem(r, 404, "no such report", NULL, NULL);
}

void pg_h_reports_create(pg_req *r)
{
    if (!ready(r)) return;
    json_t *b = pg_api_body_json(r);
    if (!b) return;
    pg_reports_submit_result res;
    pg_error err = {0};
    int rc = pg_reports_submit(r->app->reports, r->tok.tenant, r->tok.scope, r->params[0], b, &res,
                               &err);
    json_decref(b);
    if (rc) {
        pg_api_fail(r, &err);
        return;
    }
    switch (res.outcome) {
    case PG_REPORTS_ACCEPTED:
        snprintf(r->location, sizeof r->location, "/v1/jobs/%s/reports/%s", r->params[0], res.id);
        pg_api_send_json(r, 202, res.body);
        return;
    case PG_REPORTS_NO_JOB:
        no_job(r);
        return;
    case PG_REPORTS_FORBIDDEN:
        pg_api_problem(r, 403, res.detail, "against", "a private dataset needs an admin token");
        return;
    case PG_REPORTS_NO_MODEL:
        pg_api_problem(r, 409, res.detail, NULL, NULL);
        return;
    case PG_REPORTS_QUEUE_FULL:
        snprintf(r->retry_after, sizeof r->retry_after, "10");
        pg_api_problem(r, 503, "the report queue is full (--max-queued-reports); retry later", NULL,
                       NULL);
        return;
    default: {
        char detail[300];
        snprintf(detail, sizeof detail, "invalid report request: %s: %s",
                 res.errors.n ? res.errors.e[0].field : "body",
                 res.errors.n ? res.errors.e[0].message : "invalid");
        pg_api_problem(r, 422, detail, NULL, NULL);
        json_t *o = r->resp ? json_loadb(r->resp, r->resp_len, 0, NULL) : NULL;
        if (!o) return;
        json_t *errs = json_array();
        for (int i = 0; i < res.errors.n; i++)
            json_array_append_new(errs, json_pack("{s:s,s:s}", "field", res.errors.e[i].field,
                                                  "message", res.errors.e[i].message));
        json_object_set_new(o, "errors", errs);
        pg_api_send_json(r, 422, o);
        r->resp_type = "application/problem+json";
        return;
    }
    }
}

void pg_h_reports_list(pg_req *r)
{
    if (!ready(r)) return;
    long limit;
    long long after;
    if (pg_api_page_params(r, &limit, &after)) return;
    json_t *items;
    int64_t next;
    int found;
    pg_error err = {0};
    if (pg_reports_list(r->app->reports, r->tok.tenant, r->tok.scope, r->params[0], after,
                        (size_t)limit, &items, &next, &found, &err)) {
        pg_api_fail(r, &err);
        return;
    }
    if (!found) {
        no_job(r);
        return;
    }
    pg_api_send_page(r, items, (long long)next);
}

void pg_h_reports_get(pg_req *r)
{
    if (!ready(r)) return;
    json_t *o;
    int found;
    pg_error err = {0};
    if (pg_reports_get(r->app->reports, r->tok.tenant, r->tok.scope, r->params[0], r->params[1], &o,
                       &found, &err)) {
        pg_api_fail(r, &err);
        return;
    }
    if (!found) {
        no_report(r);
        return;
    }
    pg_api_send_json(r, 200, o);
}

void pg_h_reports_figure(pg_req *r)
{
    if (!ready(r)) return;
    unsigned char *png;
    size_t len;
    int found, not_ready;
    pg_error err = {0};
    if (pg_reports_figure(r->app->reports, r->tok.tenant, r->tok.scope, r->params[0], r->params[1],
                          r->params[2], &png, &len, &found, &not_ready, &err)) {
        pg_api_fail(r, &err);
        return;
    }
    if (not_ready) {
        pg_api_problem(r, 409, "the report has no figures: it has not succeeded", NULL, NULL);
        return;
    }
    if (!found) {
        no_report(r);
        return;
    }
    pg_api_send_text(r, 200, "image/png", (char *)png, len);
}

void pg_h_reports_delete(pg_req *r)
{
    if (!ready(r)) return;
    int found, forbidden, conflict;
    pg_error err = {0};
    if (pg_reports_delete(r->app->reports, r->tok.tenant, r->tok.scope, r->params[0], r->params[1],
                          &found, &forbidden, &conflict, &err)) {
        pg_api_fail(r, &err);
        return;
    }
    if (!found) {
        no_report(r);
        return;
    }
    if (forbidden) {
        pg_api_problem(r, 403, "deleting a report needs an admin token", NULL, NULL);
        return;
    }
    if (conflict) {
        pg_api_problem(r, 409,
                       "the report is running: cancel it (POST /v1/jobs/{id}/reports/{rid}/cancel) "
                       "and delete it once it has stopped",
                       NULL, NULL);
        return;
    }
    pg_api_send_text(r, 204, NULL, NULL, 0);
}

void pg_h_reports_cancel(pg_req *r)
{
    if (!ready(r)) return;
    json_t *o;
    int found, conflict;
    pg_error err = {0};
    if (pg_reports_cancel(r->app->reports, r->tok.tenant, r->tok.scope, r->params[0], r->params[1],
                          &o, &found, &conflict, &err)) {
        pg_api_fail(r, &err);
        return;
    }
    if (!found) {
        no_report(r);
        return;
    }
    if (conflict) {
        json_decref(o);
        pg_api_problem(r, 409, "the report has already ended", NULL, NULL);
        return;
    }
    pg_api_send_json(r, 202, o);
}
