/* If-None-Match per RFC 9110 13.1.2 against one strong ETag: a list of
 * entity tags (commas and whitespace around members, a comma inside a
 * quoted tag), weak comparison (W/ ignored on either side), "*", and
 * malformed members skipped rather than matched; without an ETag only "*"
 * matches. */
#include "api/samples_cache.h"
#include "support/pg_test.h"

START_TEST(if_none_match)
{
    const char *tag = "\"40-abc\"";
    static const char *const yes[] = {"\"40-abc\"",
                                      "W/\"40-abc\"",
                                      "*",
                                      "\"x\", \"40-abc\"",
                                      "\"x\",\"40-abc\"",
                                      " \t\"x\" ,\t W/\"40-abc\" ",
                                      "W/\"a,b\", \"40-abc\"",
                                      "garbage, \"40-abc\"",
                                      "\"x\", *",
                                      ",,\"40-abc\",,"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        ck_assert_msg(pg_samples_inm_matches(yes[i], tag), "should match: %s", yes[i]);
    static const char *const no[] = {
        "",         "\"40-ab\"",    "\"40-abcd\"",  "40-abc",           "\"40-abc",
        "W/40-abc", "w/\"40-abc\"", "\"x\", \"y\"", "\"a,\"40-abc\"\"", "\"40-ABC\"",
        ", ,"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        ck_assert_msg(!pg_samples_inm_matches(no[i], tag), "should not match: %s", no[i]);
    ck_assert(!pg_samples_inm_matches(NULL, tag));
    /* no validator (an unseeded request): only "*" */
    ck_assert(pg_samples_inm_matches("*", NULL));
    ck_assert(pg_samples_inm_matches("\"x\", *", ""));
    ck_assert(!pg_samples_inm_matches("\"40-abc\"", NULL));
    ck_assert(!pg_samples_inm_matches("\"\"", ""));
}
END_TEST

static Suite *samples_cache_suite(void)
{
    Suite *s = suite_create("api/samples_cache");
    TCase *tc = tcase_create("conditional");
    tcase_add_test(tc, if_none_match);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(samples_cache_suite)
