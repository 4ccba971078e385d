/* /v1/jobs, /v1/algorithms, /v1/datasets/{id}/budget: thin HTTP glue over
 * service/jobs/jobs.h (which owns validation, the ledger and the workers). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "api/body_cache.h"
#include "service/jobs/jobs.h"

int pg_api_jobs_ready(pg_req *r)
{
    if (r->app->jobs) return 1;
    pg_api_problem(r, 503, "this server runs no job workers", NULL, NULL);
    return 0;
}

/* problem+json with extra members merged in (steals extra; NULL: out of
 * memory building it). A problem without its members (the budget figures
 * of a 409, the field errors of a 422) would be an incomplete answer: out
 * of memory anywhere here is the 503 of pg_api_send_json instead. */
static void problem_with(pg_req *r, int status, const char *detail, json_t *extra)
{
    pg_api_problem(r, status, detail, NULL, NULL);
    json_t *o = r->resp && extra ? json_loadb(r->resp, r->resp_len, 0, NULL) : NULL;
    if (!o || json_object_update(o, extra)) {
        json_decref(o);
        json_decref(extra);
        pg_api_send_json(r, status, NULL);
        return;
    }
    json_decref(extra);
    pg_api_send_json(r, status, o);
    if (r->status == status) r->resp_type = "application/problem+json";
}

void pg_h_algorithms(pg_req *r)
{
    json_t *o = pg_jobs_algorithms();
    if (!o) {
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    pg_api_send_json(r, 200, o);
}

void pg_h_jobs_create(pg_req *r)
{
    if (!pg_api_jobs_ready(r)) return;
    const char *dry = pg_api_query(r, "dry_run");
    int dry_run = dry && (!strcmp(dry, "true") || !strcmp(dry, "1"));
    if (dry && !dry_run && strcmp(dry, "false") && strcmp(dry, "0")) {
        pg_api_problem(r, 400, "dry_run must be true or false", "dry_run", "must be true or false");
        return;
    }
    json_t *b = pg_api_body_json(r);
    if (!b) return;
    pg_submit_result res;
    pg_error err = {0};
    int rc = pg_jobs_submit(r->app->jobs, r->tok.tenant, b, dry_run, &res, &err);
    json_decref(b);
    if (rc) {
        pg_api_fail(r, &err);
        return;
    }
    switch (res.outcome) {
    case PG_SUBMIT_ACCEPTED:
        snprintf(r->location, sizeof r->location, "/v1/jobs/%s", res.job_id);
        pg_api_send_json(r, 202, res.body);
        return;
    case PG_SUBMIT_DRY_RUN:
        pg_api_send_json(r, 200, res.body);
        return;
    case PG_SUBMIT_OVER_BUDGET: {
        const pg_ledger_quote *q = &res.quote;
        char detail[256];
        snprintf(detail, sizeof detail,
                 "the job needs epsilon %.4g but only %.4g of the dataset's cap %.4g remains",
                 q->requested_epsilon, q->remaining_epsilon, q->cap_epsilon);
        json_t *x = json_pack("{s:f,s:f,s:f,s:f}", "requested_epsilon", q->requested_epsilon,
                              "spent_epsilon", q->spent_epsilon, "cap_epsilon", q->cap_epsilon,
                              "remaining_epsilon", q->remaining_epsilon);
        /* +inf (delta0 exhausts the cap's delta) has no JSON number: omitted */
        if (x && isfinite(q->total_epsilon) &&
            json_object_set_new(x, "total_epsilon", json_real(q->total_epsilon))) {
            json_decref(x);
            x = NULL;
        }
        problem_with(r, 409, detail, x);
        return;
    }
    case PG_SUBMIT_QUEUE_FULL:
        snprintf(r->retry_after, sizeof r->retry_after, "5");
        pg_api_problem(r, 503, "the job queue is full (--max-queued); retry later", NULL, NULL);
        return;
    default: {
        json_t *errs = json_array();
        for (int i = 0; errs && i < res.errors.count; i++)
            if (json_array_append_new(errs,
                                      json_pack("{s:s,s:s}", "field", res.errors.items[i].field,
                                                "message", res.errors.items[i].message))) {
                json_decref(errs);
                errs = NULL;
            }
        char detail[300];
        snprintf(detail, sizeof detail, "invalid job spec: %s: %s",
                 res.errors.count ? res.errors.items[0].field : "spec",
                 res.errors.count ? res.errors.items[0].message : "invalid");
        problem_with(r, 422, detail, json_pack("{s:o}", "errors", errs));
        return;
    }
    }
}

void pg_h_jobs_list(pg_req *r)
{
    if (!pg_api_jobs_ready(r)) return;
    const char *st = pg_api_query(r, "status"), *ds = pg_api_query(r, "dataset_id");
    static const char *const states[] = {"queued", "running", "succeeded", "failed", "cancelled"};
    if (st) {
        int ok = 0;
        for (size_t i = 0; i < 5; i++) ok |= !strcmp(st, states[i]);
        if (!ok) {
            pg_api_problem(r, 400, "status must be queued, running, succeeded, failed or cancelled",
                           "status", "unknown status");
            return;
        }
    }
    /* history=false drops each job's loss history (up to 500 points) so a
     * client that polls the list stays light; GET /v1/jobs/{id} has it. */
    const char *hs = pg_api_query(r, "history");
    int with_history = !hs || !strcmp(hs, "true") || !strcmp(hs, "1");
    if (hs && with_history == 0 && strcmp(hs, "false") && strcmp(hs, "0")) {
        pg_api_problem(r, 400, "history must be true or false", "history", "must be true or false");
        return;
    }
    long limit;
    long long after;
    if (pg_api_page_params(r, &limit, &after)) return;
    json_t *items;
    int64_t next;
    pg_error err = {0};
    if (pg_jobs_list(r->app->jobs, r->tok.tenant, st, ds, after, (size_t)limit, &items, &next,
                     &err)) {
        pg_api_fail(r, &err);
        return;
    }
    if (!with_history) {
        size_t i;
        json_t *it;
        json_array_foreach(items, i, it) json_object_del(it, "history");
    }
    pg_api_send_page(r, items, (long long)next);
}

int pg_api_job_view(pg_req *r, json_t **view)
{
    if (!pg_api_jobs_ready(r)) return 1;
    int found;
    pg_error err = {0};
    int rc = pg_jobs_get(r->app->jobs, r->tok.tenant, r->params[0], view, NULL, &found, &err);
    return pg_api_answer_lookup(r, rc, &err, &found, "no such job");
}

void pg_h_jobs_get(pg_req *r)
{
    json_t *o;
    if (!pg_api_job_view(r, &o)) pg_api_send_json(r, 200, o);
}

void pg_h_jobs_cancel(pg_req *r)
{
    if (!pg_api_jobs_ready(r)) return;
    json_t *o;
    int found, conflict;
    pg_error err = {0};
    int rc = pg_jobs_cancel(r->app->jobs, r->tok.tenant, r->params[0], &o, &found, &conflict, &err);
    if (pg_api_answer_lookup(r, rc, &err, &found, "no such job")) return;
    if (conflict) {
        json_decref(o);
        pg_api_problem(r, 409, "the job has already finished", NULL, NULL);
        return;
    }
    pg_api_send_json(r, 202, o);
}

void pg_h_jobs_delete(pg_req *r)
{
    if (!pg_api_jobs_ready(r)) return;
    int found, conflict;
    pg_error err = {0};
    int rc = pg_jobs_delete(r->app->jobs, r->tok.tenant, r->params[0], &found, &conflict, &err);
    if (pg_api_answer_lookup(r, rc, &err, &found, "no such job")) return;
    if (conflict) {
        pg_api_problem(r, 409,
                       "the job is running: cancel it (POST /v1/jobs/{id}/cancel) and delete it "
                       "once it has stopped",
                       NULL, NULL);
        return;
    }
    /* Its plots could not be served any more (the job lookup comes first);
     * dropping them returns their memory now rather than at eviction. */
    if (r->app->body_cache) pg_body_cache_forget_job(r->app->body_cache, r->params[0]);
    pg_api_send_text(r, 204, NULL, NULL, 0);
}

void pg_h_jobs_checkpoints(pg_req *r)
{
    if (!pg_api_jobs_ready(r)) return;
    json_t *o;
    int found;
    pg_error err = {0};
    int rc = pg_jobs_checkpoints(r->app->jobs, r->tok.tenant, r->params[0], &o, &found, &err);
    if (pg_api_answer_lookup(r, rc, &err, &found, "no such job")) return;
    pg_api_send_json(r, 200, o);
}

void pg_h_jobs_checkpoint_get(pg_req *r)
{
    if (!pg_api_jobs_ready(r)) return;
    char *end;
    long step = strtol(r->params[1], &end, 10);
    int found = 0;
    pg_error err = {0};
    if (*end || step < 0) {
        pg_api_problem(r, 404, "no such checkpoint", NULL, NULL);
        return;
    }
    unsigned char *buf;
    size_t len;
    int rc = pg_jobs_checkpoint_read(r->app->jobs, r->tok.tenant, r->params[0], step, &buf, &len,
                                     &found, &err);
    if (pg_api_answer_lookup(r, rc, &err, &found, "no such job or checkpoint")) return;
    pg_api_send_text(r, 200, "application/octet-stream", (char *)buf, len);
}

void pg_h_datasets_budget(pg_req *r)
{
    if (!pg_api_jobs_ready(r)) return;
    json_t *o;
    int found;
    pg_error err = {0};
    int rc = pg_jobs_budget(r->app->jobs, r->tok.tenant, r->params[0], &o, &found, &err);
    if (rc == PG_ESTATE) {
        pg_api_problem(r, 409, err.msg, NULL, NULL);
        return;
    }
    if (pg_api_answer_lookup(r, rc, &err, &found, "no such dataset")) return;
    pg_api_send_json(r, 200, o);
}
