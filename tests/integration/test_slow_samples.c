/* Samples that take long to draw over real HTTP. A swd_flow
 * asked for more rows than it has particles replays its flow from fresh
 * particles; one streamed block can then take longer than
 * --http-timeout-seconds, which MHD counted as the connection's idleness and
 * cut the body (the CLI then blamed the connection). Here the timeout is 1 s
 * and a block takes seconds: the whole body must arrive. No timing
 * assertion: only "the body is complete". Runs on SQLite and, as
 * test_integration_slow_samples_pg, on PostgreSQL. */
#include <check.h>

#include "itest.h"
#include "support/pg_http_test.h"

enum { D = 16, ROWS = 300, N = 4097 /* 4097 x 16 values: streamed */ };

/* Row i, column j: a value on a grid of 17 steps in [-0.4, 0.4). */
static double grid_cell(int i, int j, void *ctx)
{
    (void)ctx;
    return 0.8 * ((i * 7 + j * 13) % 17) / 17.0 - 0.4;
}

START_TEST(long_draws_stream_to_the_end)
{
    const char *extra[] = {"--http-timeout-seconds", "1", NULL};
    pg_srv s;
    pg_test_srv_start(&s, extra);
    char ds[64], job[64], path[256];
    pg_test_dataset_rows(&s, s.admin,
                         "{\"name\":\"c\",\"shape\":[16],\"range\":[-1,1],\"privacy\":{"
                         "\"model\":\"central\",\"budget\":{\"epsilon\":50,\"delta\":1e-5}}}",
                         ROWS, D, "%.3f", grid_cell, NULL, ds);
    char spec[512];
    snprintf(spec, sizeof spec,
             "{\"dataset_id\":\"%s\",\"method\":\"swd_flow\",\"privacy\":{\"noise_multiplier\":5},"
             "\"flow\":{\"steps\":1500,\"particles\":1000},\"seed\":3}",
             ds);
    pg_test_post_id(&s, s.admin, "/v1/jobs", spec, 202, job, NULL);
    json_decref(pg_test_job_wait(&s, job, "succeeded", 0, 100, 1200));
    pg_resp r;
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=%d&format=csv&seed=1", job, N);
    /* no 60 s client limit: a loaded machine may draw for longer */
    pg_http_within(&s, "GET", path, s.admin, NULL, NULL, 0, NULL, 200, &r);
    ck_assert_msg(r.status == 200,
                  "status %ld (negative: a curl error, the body was cut) after %zu "
                  "bytes",
                  r.status, r.len);
    size_t lines = 0;
    for (size_t i = 0; i < r.len; i++) lines += r.body[i] == '\n';
    ck_assert_uint_eq(lines, N + 1); /* header + rows */
    pg_resp_free(&r);
    pg_test_srv_end(&s);
}
END_TEST

static Suite *suite(void)
{
    Suite *su = suite_create("integration_slow_samples");
    TCase *tc = tcase_create("slow_samples");
    tcase_set_timeout(tc, 280);
    tcase_add_test(tc, long_draws_stream_to_the_end);
    suite_add_tcase(su, tc);
    return su;
}

PG_ITEST_MAIN(suite)
