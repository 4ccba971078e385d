/* Two privgend processes on one database (the read side): A runs
 * the job, B (started before the job existed) serves every read of it over
 * HTTP (or the other way round when B's worker claims it first). The
 * event stream on the reader follows the job to its `done`; its event ids
 * resume the stream on either replica (Last-Event-ID); samples for a seed
 * are byte-identical from A and B; a job deleted through A is a 404 on B.
 * Storage: SQLite in A's data dir by default (B opens the same file), the
 * PostgreSQL database of PRIVGEN_TEST_DB_URL in the _pg variant. */
#include <check.h>
#include <sys/stat.h>

#include "integration/itest.h"
#include "support/pg_http_test.h"
#include "support/pg_test.h"

static pg_srv a, b;

static void req(const pg_srv *s, const char *method, const char *path, const char *body,
                const char *const *headers, pg_resp *r)
{
    pg_http(s, method, path, a.admin, body ? "application/json" : NULL, body,
            body ? strlen(body) : 0, headers, r);
}

static int count(const char *s, const char *what)
{
    int c = 0;
    for (const char *p = s; p && (p = strstr(p, what)); p += strlen(what)) c++;
    return c;
}

/* B shares A's database and admin token (tokens live in the database; the
 * token file is only where the first replica wrote it). */
static void start_pair(void)
{
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    const char *ea[] = {"--node-id", "replica-a", NULL};
    ck_assert_int_eq(pg_srv_start(&a, ea), 0);
    snprintf(b.dir, sizeof b.dir, "/tmp/pgitest-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(b.dir));
    snprintf(b.data, sizeof b.data, "%s/data", b.dir);
    ck_assert_int_eq(mkdir(b.data, 0700), 0);
    char path[160];
    snprintf(path, sizeof path, "%s/admin.token", b.data);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n", a.admin);
    fclose(f);
    char url[512];
    pg_srv_db_url(&a, url, sizeof url);
    /* B's idle worker would otherwise poll the queue every 500 ms and could
     * claim the job before A's worker (woken by the submission) does; a
     * minute between polls leaves the job to A, which this test is about. */
    const char *eb[] = {"--node-id", "replica-b", "--db", url, "--claim-poll-ms", "60000", NULL};
    ck_assert_int_eq(pg_srv_start(&b, eb), 0);
}

/* Row i: a point of a 17 x 5 grid in [-1, 1) x [-0.5, 0.5). */
static double grid_cell(int i, int j, void *ctx)
{
    (void)ctx;
    return j ? (i % 5) / 5.0 - 0.5 : (i % 17) / 8.5 - 1.0;
}

static void make_dataset(char id[64])
{
    pg_test_dataset_rows(&a, a.admin,
                         "{\"name\":\"toy\",\"shape\":[2],\"range\":[-4,4],\"privacy\":{\"model\":"
                         "\"local\",\"mechanism\":\"gaussian\",\"epsilon\":1,\"delta\":1e-5,"
                         "\"sensitivity\":0.5,\"noise_scale\":2.5}}",
                         200, 2, "%.4f", grid_cell, NULL, id);
}

/* The id of the last event of type `event` in an SSE body ("" if none):
 * events are "id: X\nevent: E\ndata: ...\n\n" blocks. */
static void last_id(const char *body, const char *event, char *out, size_t cap)
{
    out[0] = '\0';
    for (const char *p = body; p && *p;) {
        const char *end = strstr(p, "\n\n");
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char blk[256];
        snprintf(blk, sizeof blk, "%.*s", (int)(len < 255 ? len : 255), p);
        char *ev = strstr(blk, "event: ");
        if (!strncmp(blk, "id: ", 4) && ev && !strncmp(ev + 7, event, strlen(event)) &&
            ev[7 + strlen(event)] == '\n')
            snprintf(out, cap, "%.*s", (int)strcspn(blk + 4, "\n"), blk + 4);
        p = end ? end + 2 : NULL;
    }
}

/* The replica whose worker claimed `job` (polled on A until the view names
 * it): normally A, since B polls the queue only once a minute, but B's first
 * claim at start-up can still race A's; the roles then swap, so the reads
 * below always come from the replica that does not run the job. */
static const pg_srv *runner(const char *job)
{
    char path[160];
    snprintf(path, sizeof path, "/v1/jobs/%s", job);
    for (int i = 0; i < 600; i++) {
        pg_resp r;
        req(&a, "GET", path, NULL, NULL, &r);
        ck_assert_int_eq(r.status, 200);
        json_t *o = json_loadb(r.body, r.len, 0, NULL);
        const char *node = json_string_value(json_object_get(o, "node"));
        const pg_srv *s = node && !strcmp(node, "replica-a")   ? &a
                          : node && !strcmp(node, "replica-b") ? &b
                                                               : NULL;
        ck_assert_msg(!node || s, "unexpected node %s", node);
        json_decref(o);
        pg_resp_free(&r);
        if (s) return s;
        pg_sleep_ms(50);
    }
    ck_abort_msg("no replica claimed the job in 30 s");
    return NULL;
}

START_TEST(reads_of_a_job_from_the_replica_that_does_not_run_it)
{
    start_pair();
    char ds[64], job[64], path[160], body[512];
    make_dataset(ds);
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\",\"model\":{\"hidden\":[16]},"
             "\"train\":{\"steps\":300,\"batch_size\":32},\"ot\":{\"max_iter\":20},"
             "\"checkpoint_every\":100,\"seed\":7}",
             ds);
    pg_test_post_id(&a, a.admin, "/v1/jobs", body, 202, job, NULL);
    pg_resp r;
    snprintf(path, sizeof path, "/v1/jobs/%s", job);
    req(&b, "GET", path, NULL, NULL, &r); /* B finds it at once, claimed or not */
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    pg_resp_free(&r);

    /* the other replica finds and lists it */
    const pg_srv *run = runner(job), *rd = run == &a ? &b : &a;
    const char *run_name = run == &a ? "replica-a" : "replica-b";
    req(rd, "GET", path, NULL, NULL, &r);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    pg_resp_free(&r);
    req(rd, "GET", "/v1/jobs", NULL, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, job));
    pg_resp_free(&r);

    /* the stream on the reader follows the job to its end */
    snprintf(path, sizeof path, "/v1/jobs/%s/events", job);
    req(rd, "GET", path, NULL, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.ctype, "text/event-stream");
    ck_assert_int_eq(count(r.body, "event: done\n"), 1);
    ck_assert_int_ge(count(r.body, "event: progress\n"), 1);
    ck_assert_int_eq(count(r.body, "id: "), count(r.body, "event: "));
    char fin[96];
    last_id(r.body, "done", fin, sizeof fin);
    ck_assert_str_eq(fin, "succeeded:300:300");
    const char *d = strstr(strstr(r.body, "event: done\n"), "data: ") + 6;
    json_t *o = json_loadb(d, strcspn(d, "\n"), 0, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(o, "status")), "succeeded");
    ck_assert_str_eq(json_string_value(json_object_get(o, "node")), run_name);
    json_decref(o);
    pg_resp_free(&r);

    /* Last-Event-ID: the final id on either replica sends only `done`; an
     * earlier one sends what came after it */
    char h[128];
    snprintf(h, sizeof h, "Last-Event-ID: %s", fin);
    const char *hdr[] = {h, NULL};
    for (int i = 0; i < 2; i++) {
        req(i ? run : rd, "GET", path, NULL, hdr, &r);
        ck_assert_int_eq(r.status, 200);
        ck_assert_int_eq(count(r.body, "event: progress\n"), 0);
        ck_assert_int_eq(count(r.body, "event: done\n"), 1);
        pg_resp_free(&r);
    }
    snprintf(h, sizeof h, "Last-Event-ID: queued:0:-1");
    req(&a, "GET", path, NULL, hdr, &r);
    ck_assert_int_eq(count(r.body, "event: progress\n"), 1); /* the final state, once */
    ck_assert_int_eq(count(r.body, "event: done\n"), 1);
    pg_resp_free(&r);

    /* samples: the same bytes from both for a seed */
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=64&seed=99&format=npy", job);
    pg_resp sa, sb;
    req(&a, "GET", path, NULL, NULL, &sa);
    req(&b, "GET", path, NULL, NULL, &sb);
    ck_assert_int_eq(sa.status, 200);
    ck_assert_int_eq(sb.status, 200);
    ck_assert_uint_eq(sa.len, sb.len);
    ck_assert_int_eq(memcmp(sa.body, sb.body, sa.len), 0);
    pg_resp_free(&sa);
    pg_resp_free(&sb);
    req(rd, "GET", "/metrics", NULL, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "\nprivgen_snapshot_cache_misses_total 1\n"));
    pg_resp_free(&r);

    /* deleted through the runner: 404 through the reader (within about a second) */
    snprintf(path, sizeof path, "/v1/jobs/%s", job);
    req(run, "DELETE", path, NULL, NULL, &r);
    ck_assert_int_eq(r.status, 204);
    pg_resp_free(&r);
    long st = 0;
    for (int i = 0; i < 50 && st != 404; i++) {
        req(rd, "GET", path, NULL, NULL, &r);
        st = r.status;
        pg_resp_free(&r);
        if (st != 404) pg_sleep_ms(100);
    }
    ck_assert_int_eq(st, 404);
    pg_srv_cleanup(&b);
    pg_srv_cleanup(&a);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("integration_replicas_read");
    TCase *t = tcase_create("two");
    tcase_set_timeout(t, 180);
    tcase_add_test(t, reads_of_a_job_from_the_replica_that_does_not_run_it);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
