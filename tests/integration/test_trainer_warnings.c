/* Trainer warnings end to end against a live privgend (engine/methods/method.h,
 * service/jobs): an entropic_gan job on a local typed table whose label is
 * independent of the features, privatized at a small epsilon, ends
 * succeeded WITH the no_class_signal warning (an object with source
 * "trainer" and its code in the job's `warnings`, conforming to openapi.yaml)
 * in GET /v1/jobs/{id}, in the job list, as a `warning` event on the SSE
 * stream, in `privgen jobs show` (plain and --json) and in `privgen jobs
 * watch`; it is still there after a restart, and a job killed mid-run and
 * resumed from its checkpoint keeps it (once), also when another replica on
 * the same database takes it over and resumes it. A job whose label is a
 * function of a feature, privatized at a large epsilon, ends without it.
 *
 * The rows are privatized here with the engine's per-column LDP (secure
 * noise, as `privgen privatize` does). The no-signal table is "paired": each
 * privatized feature row is uploaded twice, reported once as "no" and once
 * as "yes", so the class differences the server's check sees are exactly 0
 * whatever the noise drew, and the check's own 5 % false-alarm rate cannot
 * make this suite flaky. The signal table (label = x > 5, epsilon 30 over 3
 * columns, 1500 rows) gives |z| far above the threshold except with a
 * probability far below 1e-12 (tests/engine/methods/test_trainer_warn.c
 * asserts z > 2 thresholds on the same construction). */
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "engine/core/rng.h"
#include "engine/data/records.h"
#include "engine/data/table.h"
#include "engine/data/table_ldp.h"
#include "integration/isuite.h"
#include "support/pg_http_test.h"
#include "support/pg_table_test.h"
#include "support/pg_test.h"

static pg_srv srv;
static pg_oa oa;
static const char *const EXTRA[] = {"--workers", "1", NULL};

static void start_shared(void)
{
    pg_isuite_start(&srv, &oa, EXTRA);
}

static void stop_shared(void)
{
    pg_isuite_stop(&srv, &oa);
}

static const char *SCHEMA = "\"columns\":["
                            "{\"name\":\"x\",\"type\":\"continuous\",\"min\":0,\"max\":10},"
                            "{\"name\":\"c\",\"type\":\"categorical\",\"categories\":[\"a\",\"b\","
                            "\"c\"]},"
                            "{\"name\":\"y\",\"type\":\"categorical\",\"categories\":[\"no\","
                            "\"yes\"]}],"
                            "\"label\":\"y\"";
enum { N = 1500 };

typedef struct text_sink {
    char *b;
    size_t k, cap;
} text_sink;

static int sink_write(void *ctx, const void *buf, size_t l)
{
    text_sink *s = ctx;
    while (s->k + l + 1 > s->cap) {
        s->cap *= 2;
        s->b = realloc(s->b, s->cap);
    }
    memcpy(s->b + s->k, buf, l);
    s->k += l;
    return 0;
}

/* A local typed dataset of N seeded clean rows privatized at total epsilon
 * eps: paired (N / 2 rows privatized, each uploaded with label no and with
 * label yes), or (signal) yes exactly when x > 5 with c following the
 * label. Its id into ds. */
static void make_local(pg_srv *s, double eps, int signal, uint64_t seed, char ds[64])
{
    char buf[1024];
    snprintf(buf, sizeof buf, "{%s}", SCHEMA);
    pg_table *t = pg_test_table(buf);
    size_t d = t->width;
    pg_rng r, noise;
    pg_rng_seeded(&r, seed, 0);
    ck_assert_int_eq(pg_rng_secure(&noise, NULL), PG_OK);
    size_t priv = signal ? N : N / 2;
    float *x = calloc((size_t)N * d, sizeof *x);
    int64_t *lab = calloc(N, sizeof *lab);
    for (size_t i = 0; i < N; i++) {
        double xv = 10.0 * pg_rng_uniform(&r);
        int yes = signal ? xv > 5.0 : pg_rng_uniform(&r) < 0.5;
        lab[i] = yes;
        pg_table_value v = {.num = xv};
        ck_assert_int_eq(pg_table_encode_value(t, 0, &v, PG_TABLE_BOUNDS_REFUSE, x + i * d, NULL),
                         PG_OK);
        v = (pg_table_value){.cat = signal ? (size_t)(yes ? 2 : 0) : pg_rng_below(&r, 3)};
        ck_assert_int_eq(pg_table_encode_value(t, 1, &v, PG_TABLE_BOUNDS_REFUSE, x + i * d, NULL),
                         PG_OK);
    }
    pg_ldp_plan plan;
    ck_assert_int_eq(pg_ldp_plan_make(t, PG_LDP_LAPLACE, eps, 0.0, &plan, NULL), PG_OK);
    ck_assert_int_eq(pg_ldp_apply(&noise, t, &plan, x, lab, priv, NULL), PG_OK);
    for (size_t i = 0; i < N - priv; i++) { /* paired */
        memcpy(x + (priv + i) * d, x + i * d, d * sizeof *x);
        lab[i] = 0;
        lab[priv + i] = 1;
    }
    json_t *dj = pg_ldp_declaration(t, &plan, N);
    char *decl = json_dumps(dj, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(dj);
    pg_ldp_plan_free(&plan);
    text_sink csv = {malloc(1 << 16), 0, 1 << 16};
    ck_assert_int_eq(pg_records_write(t, PG_RECORDS_CSV, x, lab, N, 0, sink_write, &csv, NULL),
                     PG_OK);
    free(x);
    free(lab);
    pg_table_free(t);
    size_t cap = strlen(decl) + 2048;
    char *body = malloc(cap);
    snprintf(body, cap, "{\"name\":\"twarn\",%s,\"privacy\":%s}", SCHEMA, decl);
    pg_test_post_id(s, s->admin, "/v1/datasets", body, 201, ds, NULL);
    free(body);
    char path[128], *h = malloc(strlen(decl) + 64);
    sprintf(h, "Privgen-Declaration: %s", decl);
    const char *headers[] = {h, NULL};
    snprintf(path, sizeof path, "/v1/datasets/%s/rows", ds);
    pg_resp rr;
    pg_http(s, "POST", path, s->admin, "text/csv", csv.b, csv.k, headers, &rr);
    ck_assert_msg(rr.status == 200, "%ld %s", rr.status, rr.body);
    pg_resp_free(&rr);
    free(h);
    free(decl);
    free(csv.b);
}

static void submit(pg_srv *s, const char *ds, int steps, int every, char job[64])
{
    char body[512];
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\",\"model\":{\"hidden\":[16]},"
             "\"train\":{\"steps\":%d,\"batch_size\":32},\"checkpoint_every\":%d,"
             "\"ot\":{\"max_iter\":30},\"seed\":7}",
             ds, steps, every);
    pg_test_post_id(s, s->admin, "/v1/jobs", body, 202, job, NULL);
}

/* The job's warnings with code `code` (counted), the last one into *out
 * (borrowed from view). */
static int count_code(json_t *view, const char *code, json_t **out)
{
    int n = 0;
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(view, "warnings"), i, w)
    {
        const char *c = json_string_value(json_object_get(w, "code"));
        if (c && !strcmp(c, code)) {
            n++;
            if (out) *out = w;
        }
    }
    return n;
}

/* The job view (conforming to the Job schema), checked for exactly `want`
 * no_class_signal warnings; returned (caller decrefs). */
static json_t *view_with(pg_srv *s, const char *job, int want)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s", job);
    pg_resp r;
    pg_test_req(s, s->admin, "GET", path, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    pg_isuite_conform(&oa, &r, "Job");
    json_t *w = NULL;
    ck_assert_msg(count_code(r.json, "no_class_signal", &w) == want, "want %d: %s", want, r.body);
    if (w) {
        char why[256];
        ck_assert_msg(pg_oa_validate(&oa, "TrainerWarning", w, why, sizeof why) == 0, "%s", why);
        ck_assert_str_eq(json_string_value(json_object_get(w, "source")), "trainer");
        const char *m = json_string_value(json_object_get(w, "message"));
        ck_assert_ptr_nonnull(strstr(m, "no class difference"));
        ck_assert_ptr_nonnull(strstr(m, "majority rate"));
    }
    json_t *o = json_incref(r.json);
    pg_resp_free(&r);
    return o;
}

/* Runs the privgen client against s: its stdout (and stderr when both) as a
 * malloc'ed string; *status its exit status. */
static char *cli(pg_srv *s, const char *args, int both, int *status)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "env -u PRIVGEN_URL -u PRIVGEN_TOKEN XDG_CONFIG_HOME='%s/cfg' "
             "PRIVGEN_URL=http://127.0.0.1:%u PRIVGEN_TOKEN='%s' '%s' %s %s",
             s->dir, s->port, s->admin, PRIVGEN_CLI_PATH, args, both ? "2>&1" : "2>/dev/null");
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    text_sink out = {malloc(4096), 0, 4096};
    char buf[4096];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, p)) > 0) sink_write(&out, buf, k);
    out.b[out.k] = '\0';
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out.b;
}

START_TEST(no_class_signal_reaches_every_view)
{
    char ds[64], job[64], path[160];
    make_local(&srv, 1.0, 0, 41, ds);
    submit(&srv, ds, 30, 100, job);
    json_decref(pg_test_job_wait(&srv, job, "succeeded", 0, 100, 1200));
    json_t *v = view_with(&srv, job, 1);
    json_decref(v);
    /* the list carries the same warnings */
    pg_resp r;
    snprintf(path, sizeof path, "/v1/jobs?dataset_id=%s", ds);
    pg_test_req(&srv, srv.admin, "GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    json_t *first = json_array_get(json_object_get(r.json, "items"), 0);
    ck_assert_int_eq(count_code(first, "no_class_signal", NULL), 1);
    pg_resp_free(&r);
    /* the event stream of the finished job: its state, one `warning` event
     * with the object, then `done` */
    snprintf(path, sizeof path, "/v1/jobs/%s/events", job);
    pg_test_req(&srv, srv.admin, "GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    const char *ev = strstr(r.body, "event: warning\ndata: ");
    ck_assert_msg(ev != NULL, "%s", r.body);
    ck_assert_ptr_null(strstr(ev + 1, "event: warning")); /* once per code */
    const char *done = strstr(ev, "event: done\ndata: ");
    ck_assert_ptr_nonnull(done);
    json_t *fin = json_loads(done + strlen("event: done\ndata: "), JSON_DISABLE_EOF_CHECK, NULL);
    ck_assert_int_eq(count_code(fin, "no_class_signal", NULL), 1); /* the final state lists it */
    json_decref(fin);
    ck_assert_ptr_nonnull(strstr(r.body, "event: progress"));
    ck_assert(strstr(r.body, "event: progress") < ev);
    json_t *w = json_loads(ev + strlen("event: warning\ndata: "), JSON_DISABLE_EOF_CHECK, NULL);
    ck_assert_ptr_nonnull(w);
    char why[256];
    ck_assert_msg(pg_oa_validate(&oa, "TrainerWarning", w, why, sizeof why) == 0, "%s", why);
    ck_assert_str_eq(json_string_value(json_object_get(w, "code")), "no_class_signal");
    json_decref(w);
    pg_resp_free(&r);
    /* privgen jobs show: plain text names the code; --json is the view */
    int st;
    char args[160];
    snprintf(args, sizeof args, "jobs show %s", job);
    char *out = cli(&srv, args, 0, &st);
    ck_assert_int_eq(st, 0);
    ck_assert_msg(strstr(out, "warning (no_class_signal): The privatized rows show no class "
                              "difference above their noise") != NULL,
                  "%s", out);
    fprintf(stderr, "--- privgen jobs show ---\n%s", out);
    free(out);
    snprintf(args, sizeof args, "jobs show %s --json", job);
    out = cli(&srv, args, 0, &st);
    ck_assert_int_eq(st, 0);
    json_t *j = json_loads(out, 0, NULL);
    ck_assert_msg(j != NULL, "%s", out);
    ck_assert_int_eq(count_code(j, "no_class_signal", NULL), 1);
    json_decref(j);
    free(out);
    /* privgen jobs watch: the warning on stderr, the view on stdout (--json) */
    snprintf(args, sizeof args, "jobs watch %s", job);
    out = cli(&srv, args, 1, &st);
    ck_assert_int_eq(st, 0);
    ck_assert_msg(strstr(out, "privgen: warning (no_class_signal): The privatized rows") != NULL,
                  "%s", out);
    free(out);
    snprintf(args, sizeof args, "jobs watch %s --json", job);
    out = cli(&srv, args, 0, &st);
    ck_assert_int_eq(st, 0);
    j = json_loads(out, 0, NULL);
    ck_assert_msg(j != NULL, "%s", out);
    ck_assert_int_eq(count_code(j, "no_class_signal", NULL), 1);
    json_decref(j);
    free(out);
}
END_TEST

START_TEST(a_class_signal_gives_no_warning)
{
    char ds[64], job[64];
    make_local(&srv, 30.0, 1, 42, ds);
    submit(&srv, ds, 30, 100, job);
    json_decref(pg_test_job_wait(&srv, job, "succeeded", 0, 100, 1200));
    json_decref(view_with(&srv, job, 0));
    int st;
    char args[160];
    snprintf(args, sizeof args, "jobs show %s", job);
    char *out = cli(&srv, args, 0, &st);
    ck_assert_int_eq(st, 0);
    ck_assert_msg(strstr(out, "no_class_signal") == NULL, "%s", out);
    free(out);
}
END_TEST

/* The warning is stored with the job: a clean restart shows it on the
 * finished job; a job killed mid-run shows it while it waits to resume and
 * after it resumed from its checkpoint and succeeded, once. */
START_TEST(warnings_survive_restart_and_resume)
{
    pg_srv own;
    pg_test_srv_start(&own, EXTRA);
    char ds[64], done_job[64], job[64];
    make_local(&own, 1.0, 0, 41, ds);
    submit(&own, ds, 20, 100, done_job);
    json_decref(pg_test_job_wait(&own, done_job, "succeeded", 0, 100, 1200));
    json_decref(view_with(&own, done_job, 1));
    ck_assert_int_eq(pg_srv_stop(&own), 0);
    ck_assert_int_eq(pg_srv_start(&own, EXTRA), 0);
    json_decref(view_with(&own, done_job, 1));
    /* a long job, killed after its second checkpoint */
    submit(&own, ds, 4000, 10, job);
    json_decref(pg_test_job_wait(&own, job, NULL, 25, 50, 2400));
    json_t *v = view_with(&own, job, 1); /* a running job shows it already */
    json_decref(v);
    pg_srv_kill9(&own);
    ck_assert_int_eq(pg_srv_start(&own, EXTRA), 0);
    json_decref(view_with(&own, job, 1));
    /* cut short so the test does not wait for 4000 steps: cancel once it
     * resumed (past its checkpoint), which keeps the view */
    json_decref(pg_test_job_wait(&own, job, NULL, 45, 50, 2400));
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s/cancel", job);
    pg_resp r;
    pg_test_req(&own, own.admin, "POST", path, NULL, &r);
    ck_assert_msg(r.status == 200 || r.status == 202, "%ld %s", r.status, r.body);
    pg_resp_free(&r);
    json_decref(pg_test_job_wait(&own, job, "cancelled", 0, 100, 1200));
    v = view_with(&own, job, 1);
    ck_assert_int_eq(pg_test_hist_break(v), -1); /* it resumed, not restarted */
    json_decref(v);
    pg_test_srv_end(&own);
}
END_TEST

/* Two replicas on one database: A runs the job and dies (kill -9) after its
 * checkpoints; B takes it over once A's lease ran out, resumes it from the
 * checkpoint and shows the warning (once), as A did. */
START_TEST(warnings_survive_a_takeover_by_another_replica)
{
    pg_srv a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    const char *ea[] = {"--node-id", "replica-a",           "--workers", "1", "--lease-seconds",
                        "2",         "--heartbeat-seconds", "1",         NULL};
    ck_assert_int_eq(pg_srv_start(&a, ea), 0);
    char ds[64], job[64], path[160];
    make_local(&a, 1.0, 0, 41, ds);
    submit(&a, ds, 4000, 10, job);
    json_decref(pg_test_job_wait(&a, job, NULL, 25, 50, 2400));
    json_decref(view_with(&a, job, 1));
    /* B shares A's database and admin token (test_replicas_read.c) */
    snprintf(b.dir, sizeof b.dir, "/tmp/pgitest-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(b.dir));
    snprintf(b.data, sizeof b.data, "%s/data", b.dir);
    ck_assert_int_eq(mkdir(b.data, 0700), 0);
    snprintf(path, sizeof path, "%s/admin.token", b.data);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n", a.admin);
    fclose(f);
    char url[512];
    pg_srv_db_url(&a, url, sizeof url);
    pg_srv_kill9(&a);
    const char *eb[] = {"--node-id", "replica-b",           "--workers", "1",    "--lease-seconds",
                        "2",         "--heartbeat-seconds", "1",         "--db", url,
                        NULL};
    ck_assert_int_eq(pg_srv_start(&b, eb), 0);
    json_decref(view_with(&b, job, 1)); /* from the stored view, before B runs it */
    /* B runs it: wait until it moved past where A was, then cancel */
    json_t *v = pg_test_job_wait(&b, job, NULL, 60, 50, 2400);
    json_decref(v);
    snprintf(path, sizeof path, "/v1/jobs/%s/cancel", job);
    pg_resp r;
    pg_test_req(&b, b.admin, "POST", path, NULL, &r);
    ck_assert_msg(r.status == 200 || r.status == 202, "%ld %s", r.status, r.body);
    pg_resp_free(&r);
    json_decref(pg_test_job_wait(&b, job, "cancelled", 0, 100, 1200));
    v = view_with(&b, job, 1);
    ck_assert_str_eq(json_string_value(json_object_get(v, "node")), "replica-b");
    ck_assert_int_eq(pg_test_hist_break(v), -1); /* resumed from A's checkpoint */
    json_decref(v);
    ck_assert_int_eq(pg_srv_stop(&b), 0);
    pg_srv_cleanup(&b);
    pg_srv_cleanup(&a);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("integration_trainer_warnings");
    TCase *tc = tcase_create("trainer_warnings");
    tcase_add_unchecked_fixture(tc, start_shared, stop_shared);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, no_class_signal_reaches_every_view);
    tcase_add_test(tc, a_class_signal_gives_no_warning);
    tcase_add_test(tc, warnings_survive_restart_and_resume);
    tcase_add_test(tc, warnings_survive_a_takeover_by_another_replica);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(make_suite)
