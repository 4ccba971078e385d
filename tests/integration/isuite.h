/* tests/integration/isuite.h - what every HTTP integration suite shares: one
 * privgend for the whole suite (started and stopped by an unchecked fixture),
 * the OpenAPI document its responses are checked against, and the checks.
 *
 * pg_isuite_start aborts when the server or the document cannot be had (the
 * suite cannot run at all). pg_isuite_stop makes an unclean shutdown of the
 * shared server (a sanitizer report, a crash at SIGTERM) fail the suite: it
 * prints the server's log and aborts. The checks are Check assertions.
 */
#ifndef PG_ISUITE_H
#define PG_ISUITE_H

#include <check.h>

#include "api/openapi_lite.h"
#include "integration/itest.h"
#include "support/pg_test.h"

static inline void pg_isuite_start(pg_srv *s, pg_oa *oa, const char *const *extra)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char path[1024];
    snprintf(path, sizeof path, "%s/openapi.yaml", pg_test_source_dir());
    if (pg_oa_load(oa, path)) abort();
    memset(s, 0, sizeof *s);
    if (pg_srv_start(s, extra)) abort();
}

static inline void pg_isuite_stop(pg_srv *s, pg_oa *oa)
{
    int rc = pg_srv_stop(s);
    if (rc != 0) {
        char cmd[160];
        snprintf(cmd, sizeof cmd, "cat '%s/privgend.log' >&2", s->dir);
        if (system(cmd)) fprintf(stderr, "cannot show the log\n");
        fprintf(stderr, "privgend exited with status %d\n", rc);
        abort();
    }
    pg_srv_cleanup(s);
    pg_oa_free(oa);
}

/* r has a JSON body that the OpenAPI schema `schema` accepts. */
static inline void pg_isuite_conform(const pg_oa *oa, const pg_resp *r, const char *schema)
{
    char why[256];
    ck_assert_msg(r->json != NULL, "no JSON body (status %ld): %s", r->status,
                  r->body ? r->body : "");
    ck_assert_msg(pg_oa_validate(oa, schema, r->json, why, sizeof why) == 0, "%s: %s", why,
                  r->body);
}

/* r is an application/problem+json of this status (also in its body) whose
 * first errors[] entry names `field` (when not NULL). Frees r; returns its
 * detail, copied into detail[cap] (may be NULL). */
static inline const char *pg_isuite_problem(const pg_oa *oa, pg_resp *r, long status,
                                            const char *field, char *detail, size_t cap)
{
    ck_assert_msg(r->status == status, "expected %ld, got %ld: %s", status, r->status,
                  r->body ? r->body : "");
    ck_assert_str_eq(r->ctype, "application/problem+json");
    pg_isuite_conform(oa, r, "Problem");
    ck_assert_int_eq((int)json_integer_value(json_object_get(r->json, "status")), (int)status);
    if (field) {
        json_t *e = json_array_get(json_object_get(r->json, "errors"), 0);
        ck_assert_msg(e, "no errors[] in %s", r->body);
        ck_assert_str_eq(json_string_value(json_object_get(e, "field")), field);
    }
    if (detail && cap)
        snprintf(detail, cap, "%s", json_string_value(json_object_get(r->json, "detail")));
    pg_resp_free(r);
    return detail;
}

#endif
