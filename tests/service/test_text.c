/* service/text: the growable string keeps every byte across reallocations
 * (pieces straddling the first 1024-byte block, and one piece far larger
 * than the buffer), and timestamps are RFC 3339 UTC or null. */
#include "service/text.h"

#include <stdlib.h>
#include <string.h>

#include "support/pg_test.h"

START_TEST(appends_survive_growth)
{
    pg_text t = {0};
    char want[8192];
    size_t at = 0;
    for (int i = 0; i < 500; i++) {
        pg_text_printf(&t, "%d,", i);
        at += (size_t)snprintf(want + at, sizeof want - at, "%d,", i);
    }
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    pg_text_printf(&t, "%s", big);
    at += (size_t)snprintf(want + at, sizeof want - at, "%s", big);
    ck_assert(!t.failed);
    ck_assert_uint_eq(t.len, at);
    ck_assert_uint_eq(strlen(t.p), at);
    ck_assert(!memcmp(t.p, want, at));
    ck_assert_uint_gt(t.cap, t.len);
    free(t.p);
}
END_TEST

START_TEST(nothing_appended_is_null)
{
    pg_text t = {0};
    ck_assert_ptr_null(t.p);
    pg_text_printf(&t, "%s", "");
    ck_assert(!t.failed);
    ck_assert_uint_eq(t.len, 0);
    ck_assert_str_eq(t.p, "");
    free(t.p);
}
END_TEST

START_TEST(times_are_rfc3339_utc_or_null)
{
    json_t *v = pg_text_time(1795592400); /* 2026-11-25T07:40:00Z */
    ck_assert_str_eq(json_string_value(v), "2026-11-25T07:40:00Z");
    json_decref(v);
    v = pg_text_time(1);
    ck_assert_str_eq(json_string_value(v), "1970-01-01T00:00:01Z");
    json_decref(v);
    ck_assert(json_is_null(pg_text_time(0)));
    ck_assert(json_is_null(pg_text_time(-5)));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("service/text");
    TCase *t = tcase_create("text");
    tcase_add_test(t, appends_survive_growth);
    tcase_add_test(t, nothing_appended_is_null);
    tcase_add_test(t, times_are_rfc3339_utc_or_null);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
