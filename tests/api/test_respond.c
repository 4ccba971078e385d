/* Problem responses for failed storage calls: a lost database is a 503 with
 * Retry-After (retry later), other failures keep their status; neither a
 * 503 for a lost database nor a 500 shows the failure's text (socket paths,
 * hosts, SQL errors), which goes to the log instead. */
#include <jansson.h>

#include "api/internal.h"
#include "support/pg_test.h"

static json_t *body_of(const pg_req *r)
{
    json_t *o = json_loadb(r->resp, r->resp_len, 0, NULL);
    ck_assert_ptr_nonnull(o);
    return o;
}

START_TEST(unavailable_backend_is_503_with_retry_after)
{
    pg_req r;
    memset(&r, 0, sizeof r);
    pg_error err = {0};
    pg_error_set(&err, PG_EUNAVAIL,
                 "connection to server on socket \"/tmp/pg/.s.PGSQL.5432\" failed: No such file");
    pg_api_fail(&r, &err);
    ck_assert_int_eq(r.status, 503);
    ck_assert_str_eq(r.resp_type, "application/problem+json");
    ck_assert_int_gt(atoi(r.retry_after), 0);
    json_t *o = body_of(&r);
    ck_assert_str_eq(json_string_value(json_object_get(o, "type")), "/problems/unavailable");
    const char *d = json_string_value(json_object_get(o, "detail"));
    ck_assert_str_eq(d, PG_API_UNAVAIL_DETAIL);
    ck_assert_ptr_null(strstr(r.resp, "/tmp"));
    ck_assert_ptr_null(strstr(r.resp, "PGSQL"));
    ck_assert_ptr_null(strstr(r.resp, "5432"));
    json_decref(o);
    free(r.resp);
}
END_TEST

START_TEST(other_failures_keep_their_status)
{
    static const struct {
        int code, status;
    } cases[] = {{PG_EIO, 500}, {PG_EFORMAT, 500}, {PG_ENOMEM, 503}, {PG_EINVAL, 500}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pg_req r;
        memset(&r, 0, sizeof r);
        pg_error err = {0};
        pg_error_set(&err, cases[i].code, "x at /var/lib/privgen/privgen.db");
        pg_api_fail(&r, &err);
        ck_assert_int_eq(r.status, cases[i].status);
        /* a 500 says only that it failed; a 503 for memory keeps its limit */
        json_t *o = body_of(&r);
        const char *d = json_string_value(json_object_get(o, "detail"));
        if (cases[i].status == 500)
            ck_assert_str_eq(d, PG_API_INTERNAL_DETAIL);
        else
            ck_assert_str_eq(d, "x at /var/lib/privgen/privgen.db");
        json_decref(o);
        ck_assert_str_eq(r.retry_after, ""); /* only a lost backend asks for a retry */
        free(r.resp);
    }
    /* an empty message falls back to the status name */
    pg_req r;
    memset(&r, 0, sizeof r);
    pg_error err = {.code = PG_ENOMEM};
    pg_api_fail(&r, &err);
    json_t *o = body_of(&r);
    ck_assert_str_eq(json_string_value(json_object_get(o, "detail")), pg_status_str(PG_ENOMEM));
    json_decref(o);
    free(r.resp);
}
END_TEST

/* A handler whose body could not be built (out of memory) answers like
 * every other out of memory: 503 (it used to be the one 500 for memory). */
START_TEST(a_missing_body_is_503_out_of_memory)
{
    pg_req r;
    memset(&r, 0, sizeof r);
    pg_api_send_json(&r, 200, NULL);
    ck_assert_int_eq(r.status, 503);
    ck_assert_str_eq(r.resp_type, "application/problem+json");
    json_t *o = body_of(&r);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "status")), 503);
    ck_assert_str_eq(json_string_value(json_object_get(o, "type")), "/problems/unavailable");
    ck_assert_str_eq(json_string_value(json_object_get(o, "detail")), "out of memory");
    json_decref(o);
    free(r.resp);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("respond");
    TCase *t = tcase_create("fail");
    tcase_add_test(t, unavailable_backend_is_503_with_retry_after);
    tcase_add_test(t, other_failures_keep_their_status);
    tcase_add_test(t, a_missing_body_is_503_out_of_memory);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
