/* tests/support/pg_http_test.h - what the HTTP suites do to a live privgend
 * (integration/itest.h) again and again: a JSON request, a resource made by
 * a POST whose answer names its id, rows appended to a dataset, a job
 * polled until it reaches a state.
 *
 * Every function here is a Check assertion: an unexpected status, a job
 * that fails or ends elsewhere, a poll that runs out fail the calling test
 * with the request and the body that answered it. Responses are freed here
 * unless the caller asks to keep one; returned JSON is the caller's
 * (json_decref) and returned text too (free).
 */
#ifndef PG_HTTP_TEST_H
#define PG_HTTP_TEST_H

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "integration/itest.h"

/* Starts a server of the test's own (s zeroed first) with the extra args
 * (NULL-terminated, may be NULL); fails the test when it does not come up. */
static inline void pg_test_srv_start(pg_srv *s, const char *const *extra)
{
    memset(s, 0, sizeof *s);
    ck_assert_msg(pg_srv_start(s, extra) == 0, "privgend did not start (log in %s)", s->dir);
}

/* Stops a test's own server, which must exit cleanly (status 0), and
 * removes its scratch dir. */
static inline void pg_test_srv_end(pg_srv *s)
{
    ck_assert_int_eq(pg_srv_stop(s), 0);
    pg_srv_cleanup(s);
}

/* One request with token tok (NULL: none); body, when not NULL, is JSON. */
static inline void pg_test_req(const pg_srv *s, const char *tok, const char *method,
                               const char *path, const char *body, pg_resp *r)
{
    pg_http(s, method, path, tok, body ? "application/json" : NULL, body, body ? strlen(body) : 0,
            NULL, r);
}

/* POSTs the JSON body to path with tok and checks the answer is `want`
 * (201 for a dataset or token, 202 for a job or report); copies its "id"
 * into id. keep (may be NULL) receives the response, for checks of its own;
 * otherwise it is freed. */
static inline void pg_test_post_id(const pg_srv *s, const char *tok, const char *path,
                                   const char *body, long want, char id[64], pg_resp *keep)
{
    pg_resp r;
    pg_test_req(s, tok, "POST", path, body, &r);
    ck_assert_msg(r.status == want, "POST %s: %ld %s", path, r.status, r.body ? r.body : "");
    snprintf(id, 64, "%s", json_string_value(json_object_get(r.json, "id")));
    if (keep)
        *keep = r;
    else
        pg_resp_free(&r);
}

/* Appends rows to dataset ds: len bytes of body in content type ctype, as
 * tok; checks the answer is 200. */
static inline void pg_test_rows_post(const pg_srv *s, const char *tok, const char *ds,
                                     const char *ctype, const char *body, size_t len)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%s/rows", ds);
    pg_resp r;
    pg_http(s, "POST", path, tok, ctype, body, len, NULL, &r);
    ck_assert_msg(r.status == 200, "POST %s: %ld %s", path, r.status, r.body ? r.body : "");
    pg_resp_free(&r);
}

/* The value of row i, column j of a generated dataset. */
typedef double (*pg_test_cell_fn)(int i, int j, void *ctx);

/* The JSON upload {"rows":[[v(0,0),...,v(0,d-1)],...]} of n rows of d values,
 * each printed with the printf format fmt (e.g. "%.4f"); cells are asked in
 * row order, so v may keep a running state in ctx. Caller frees. */
static inline char *pg_test_rows_json(int n, int d, const char *fmt, pg_test_cell_fn v, void *ctx)
{
    size_t cap = 64 + (size_t)n * (2 + (size_t)d * 32), k = 0;
    char *b = malloc(cap);
    ck_assert_ptr_nonnull(b);
    k += (size_t)snprintf(b + k, cap - k, "{\"rows\":[");
    for (int i = 0; i < n; i++) {
        k += (size_t)snprintf(b + k, cap - k, "%s[", i ? "," : "");
        for (int j = 0; j < d; j++) {
            if (j) b[k++] = ',';
            k += (size_t)snprintf(b + k, cap - k, fmt, v(i, j, ctx));
        }
        k += (size_t)snprintf(b + k, cap - k, "]");
    }
    snprintf(b + k, cap - k, "]}");
    return b;
}

/* The 2-D rows on the circle of radius 0.8, 0.05 rad apart: (0.8 cos 0.05i,
 * 0.8 sin 0.05i). */
static inline double pg_test_circle_cell(int i, int j, void *ctx)
{
    (void)ctx;
    return 0.8 * (j ? sin(0.05 * i) : cos(0.05 * i));
}

/* Creates a dataset from the JSON declaration decl (checks 201) and appends
 * the n x d rows of v as by pg_test_rows_json; its id into id. */
static inline void pg_test_dataset_rows(const pg_srv *s, const char *tok, const char *decl, int n,
                                        int d, const char *fmt, pg_test_cell_fn v, void *ctx,
                                        char id[64])
{
    pg_test_post_id(s, tok, "/v1/datasets", decl, 201, id, NULL);
    char *rows = pg_test_rows_json(n, d, fmt, v, ctx);
    pg_test_rows_post(s, tok, id, "application/json", rows, strlen(rows));
    free(rows);
}

/* GETs path with tok, checks 200; returns the JSON body. */
static inline json_t *pg_test_get_json(const pg_srv *s, const char *tok, const char *path)
{
    pg_resp r;
    pg_test_req(s, tok, "GET", path, NULL, &r);
    ck_assert_msg(r.status == 200, "GET %s: %ld %s", path, r.status, r.body ? r.body : "");
    json_t *o = json_incref(r.json);
    pg_resp_free(&r);
    return o;
}

/* Polls GET /v1/jobs/{id} as s's admin, sleeping sleep_ms between at most
 * `polls` polls, until the job's status is want or, when want is NULL, its
 * progress.step is at least min_step. Returns that view. Fails when a poll
 * is not 200, when the job fails ("job failed: <view>") or ends in another
 * state than want (or, want NULL, ends before min_step), and when the polls
 * run out. */
static inline json_t *pg_test_job_wait(const pg_srv *s, const char *id, const char *want,
                                       long min_step, int sleep_ms, int polls)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s", id);
    for (int i = 0; i < polls; i++) {
        pg_resp r;
        pg_test_req(s, s->admin, "GET", path, NULL, &r);
        ck_assert_msg(r.status == 200, "GET %s: %ld %s", path, r.status, r.body ? r.body : "");
        const char *st = json_string_value(json_object_get(r.json, "status"));
        ck_assert_msg(st != NULL, "no status: %s", r.body);
        long step =
            (long)json_integer_value(json_object_get(json_object_get(r.json, "progress"), "step"));
        if (want ? !strcmp(st, want) : step >= min_step) {
            json_t *o = json_incref(r.json);
            pg_resp_free(&r);
            return o;
        }
        ck_assert_msg(strcmp(st, "failed"), "job failed: %s", r.body);
        ck_assert_msg(!strcmp(st, "queued") || !strcmp(st, "running"),
                      "job %s ended %s, not %s: %s", id, st, want ? want : "at the step", r.body);
        pg_resp_free(&r);
        pg_sleep_ms(sleep_ms);
    }
    if (want) ck_abort_msg("job %s did not reach %s", id, want);
    ck_abort_msg("job %s did not reach step %ld", id, min_step);
    return NULL;
}

/* The first index at which a job view's history does not strictly increase
 * in step, or -1. The history survives restarts (it is stored at each
 * checkpoint), so a run resumed from its checkpoint continues it; a run
 * restarted from its initialization would repeat steps. */
static inline long pg_test_hist_break(const json_t *job)
{
    const json_t *h = json_object_get(job, "history");
    for (size_t i = 1; i < json_array_size(h); i++)
        if (json_integer_value(json_object_get(json_array_get(h, i), "step")) <=
            json_integer_value(json_object_get(json_array_get(h, i - 1), "step")))
            return (long)i;
    return -1;
}

#endif
