/* mst and aim end to end against a live privgend: a typed table
 * with a label uploaded as CSV; a dry run shows the accounting (rho, noise
 * scales, rounds) and charges nothing; each job's ledger entry is its plan
 * (the RDP curve alpha rho converted by the ledger at the cap's delta, never
 * above the requested epsilon); samples in CSV, JSON, NDJSON are read back
 * with the strict record parser (every row valid for the schema), with the
 * label column drawn by the model (its class balance, not a balanced one),
 * label=bad gives only bad rows, NPY and PNG answer, the same seed gives the
 * same bytes; a quality report against a public holdout succeeds; kill -9
 * during an aim run resumes from the last round with one charge and no
 * repeated history; and the 422s: a wide untyped dataset, a local one, a
 * model over its size bound, bad options. */
#include <math.h>
#include <signal.h>
#include <sys/wait.h>

#include "engine/data/records.h"
#include "engine/data/table.h"
#include "engine/privacy/privacy.h"
#include "integration/isuite.h"
#include "support/pg_http_test.h"
#include "support/pg_table_test.h"
#include "support/pg_test.h"

static pg_srv srv;
static pg_oa oa;

static void start_shared(void)
{
    static const char *const extra[] = {"--workers", "2", "--max-samples", "20000", NULL};
    pg_isuite_start(&srv, &oa, extra);
}

static void stop_shared(void)
{
    pg_isuite_stop(&srv, &oa);
}

static void req(const pg_srv *s, const char *method, const char *path, const char *body, pg_resp *r)
{
    pg_http(s, method, path, s->admin, body ? "application/json" : NULL, body,
            body ? strlen(body) : 0, NULL, r);
}

static const char *SCHEMA =
    "\"columns\":["
    "{\"name\":\"age\",\"type\":\"integer\",\"min\":18,\"max\":99,\"nullable\":true},"
    "{\"name\":\"income\",\"type\":\"continuous\",\"min\":0,\"max\":1500,\"scale\":\"log\"},"
    "{\"name\":\"job\",\"type\":\"categorical\",\"categories\":[\"fixed\",\"free, lance\","
    "\"others\"]},"
    "{\"name\":\"owner\",\"type\":\"boolean\"},"
    "{\"name\":\"status\",\"type\":\"categorical\",\"categories\":[\"good\",\"bad\"]}],"
    "\"label\":\"status\"";

static pg_table *schema_table(void)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "{%s}", SCHEMA);
    return pg_test_table(buf);
}

/* Row i: status bad for 30 % of rows, and owner follows status (90 %). */
static char *csv_rows(unsigned n, size_t *len)
{
    static const char *const jobs[] = {"fixed", "\"free, lance\"", "others"};
    size_t cap = 64 + (size_t)n * 64, k = 0;
    char *b = malloc(cap);
    k += (size_t)snprintf(b, cap, "status,owner,job,income,age\n");
    for (unsigned i = 0; i < n; i++) {
        unsigned h = i * 2654435761u;
        int bad = (h >> 4) % 10 < 3, owner = ((h >> 12) % 10 < 9) ? !bad : bad;
        char age[16] = "";
        if (h % 10) snprintf(age, sizeof age, "%u", 18 + (h >> 8) % 82);
        k += (size_t)snprintf(b + k, cap - k, "%s,%s,%s,%.2f,%s\n", bad ? "bad" : "good",
                              owner ? "true" : "false", jobs[(h >> 16) % 3],
                              (double)((h >> 3) % 150000) / 100.0, age);
    }
    *len = k;
    return b;
}

static void make_table(const pg_srv *s, const char *privacy, unsigned n, char ds[64])
{
    char body[2048];
    snprintf(body, sizeof body, "{\"name\":\"t\",%s,\"privacy\":%s}", SCHEMA, privacy);
    pg_test_post_id(s, s->admin, "/v1/datasets", body, 201, ds, NULL);
    size_t len;
    char *csv = csv_rows(n, &len);
    pg_test_rows_post(s, s->admin, ds, "text/csv", csv, len);
    free(csv);
}

static void submit(const pg_srv *s, const char *body, char id[64])
{
    pg_resp r;
    pg_test_post_id(s, s->admin, "/v1/jobs", body, 202, id, &r);
    pg_isuite_conform(&oa, &r, "Job");
    pg_resp_free(&r);
}

static json_t *poll_job(const pg_srv *s, const char *id, const char *status, long min_step,
                        int sleep_ms)
{
    return pg_test_job_wait(s, id, status, min_step, sleep_ms, 6000);
}

static json_t *entry(const pg_srv *s, const char *ds, const char *job, size_t *count)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%s/budget", ds);
    pg_resp r;
    req(s, "GET", path, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    pg_isuite_conform(&oa, &r, "Budget");
    size_t i;
    json_t *e, *found = NULL;
    json_t *entries = json_object_get(r.json, "entries");
    *count = json_array_size(entries);
    json_array_foreach(entries, i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "job_id")), job)) found = json_incref(e);
    }
    pg_resp_free(&r);
    ck_assert_msg(found, "no ledger entry for %s", job);
    return found;
}

/* The ledger's epsilon of rho-zCDP at delta, computed here on the grid. */
static double eps_of_rho(double rho, double delta)
{
    double orders[PG_RDP_DEFAULT_ORDERS], rdp[PG_RDP_DEFAULT_ORDERS], e;
    size_t n = pg_rdp_default_orders(orders, PG_RDP_DEFAULT_ORDERS);
    for (size_t i = 0; i < n; i++) rdp[i] = orders[i] * rho;
    ck_assert_int_eq(pg_rdp_to_dp(orders, rdp, n, delta, PG_RDP_CONV_IMPROVED, &e, NULL, NULL), 0);
    return e;
}

static size_t read_back(const pg_table *t, int format, const pg_resp *r, int64_t **labels)
{
    return pg_test_records_read(t, format, r->body, r->len, labels);
}

static void check_samples(const char *job, const pg_table *t)
{
    char path[192];
    pg_resp r, r2;
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=csv&n=2000&seed=4", job);
    req(&srv, "GET", path, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    const char *head = "age,income,job,owner,status\n";
    ck_assert_msg(!strncmp(r.body, head, strlen(head)), "%.200s", r.body);
    int64_t *labels = NULL;
    ck_assert_uint_eq(read_back(t, PG_RECORDS_CSV, &r, &labels), 2000);
    /* the model's class balance (30 % bad in the data), not alternating */
    double bad = 0;
    int alternating = 1;
    for (size_t i = 0; i < 2000; i++) {
        bad += labels[i] == 1;
        alternating &= labels[i] == (int64_t)(i % 2);
    }
    ck_assert(!alternating);
    ck_assert_msg(fabs(bad / 2000 - 0.3) < 0.08, "bad fraction %.3f", bad / 2000);
    free(labels);
    labels = NULL;
    req(&srv, "GET", path, NULL, &r2); /* same seed, same bytes */
    ck_assert_uint_eq(r.len, r2.len);
    ck_assert(!memcmp(r.body, r2.body, r.len));
    pg_resp_free(&r2);
    pg_resp_free(&r);
    static const struct {
        const char *f;
        int fmt;
    } fm[] = {{"json", PG_RECORDS_JSON}, {"ndjson", PG_RECORDS_NDJSON}};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=%s&n=300&seed=4", job, fm[i].f);
        req(&srv, "GET", path, NULL, &r);
        ck_assert_msg(r.status == 200, "%s", r.body);
        ck_assert_uint_eq(read_back(t, fm[i].fmt, &r, &labels), 300);
        free(labels);
        labels = NULL;
        pg_resp_free(&r);
    }
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=csv&n=300&label=bad", job);
    req(&srv, "GET", path, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_uint_eq(read_back(t, PG_RECORDS_CSV, &r, &labels), 300);
    double owner = 0;
    for (size_t i = 0; i < 300; i++) ck_assert_int_eq(labels[i], 1);
    /* owner follows status: bad rows are mostly not owners */
    for (const char *p = strchr(r.body, '\n'); p && p[1]; p = strchr(p + 1, '\n'))
        owner += !strncmp(strchr(p + 1, ',') + 1, "true", 4);
    ck_assert_msg(owner / 300 < 0.4, "P(owner | bad) = %.2f", owner / 300);
    free(labels);
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=npy&n=10&seed=1", job);
    req(&srv, "GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=png&n=300&seed=2", job);
    req(&srv, "GET", path, NULL, &r);
    ck_assert_msg(r.status == 200 && !strcmp(r.ctype, "image/png"), "%s", r.body);
    pg_resp_free(&r);
}

START_TEST(mst_and_aim_through_http)
{
    char ds[64], pub[64];
    make_table(&srv, "{\"model\":\"central\",\"budget\":{\"epsilon\":20,\"delta\":1e-5}}", 2000,
               ds);
    make_table(&srv, "{\"model\":\"public\"}", 400, pub);
    pg_table *t = schema_table();
    const char *methods[] = {"mst", "aim"};
    for (int m = 0; m < 2; m++) {
        char body[512], path[192], job[64];
        snprintf(body, sizeof body,
                 "{\"dataset_id\":\"%s\",\"method\":\"%s\",\"privacy\":{\"epsilon\":4},"
                 "\"seed\":3}",
                 ds, methods[m]);
        /* the dry run: the accounting, nothing charged */
        pg_resp r;
        req(&srv, "POST", "/v1/jobs?dry_run=true", body, &r);
        ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
        const json_t *acc = json_object_get(json_object_get(r.json, "spec"), "accounting");
        double rho = json_number_value(json_object_get(acc, "rho"));
        ck_assert_double_gt(rho, 0);
        ck_assert(json_is_number(json_object_get(acc, m ? "sigma_initial" : "sigma_pairs")));
        ck_assert(json_is_integer(json_object_get(acc, m ? "rounds_max" : "rounds")));
        double plan_eps =
            json_number_value(json_object_get(json_object_get(r.json, "plan"), "epsilon"));
        ck_assert_msg(pg_test_reldiff(plan_eps, eps_of_rho(rho, 1e-5)) < 1e-9, "%s", r.body);
        ck_assert_double_le(plan_eps, 4.0);
        pg_resp_free(&r);
        submit(&srv, body, job);
        json_decref(poll_job(&srv, job, "succeeded", 0, 100));
        size_t count;
        json_t *e = entry(&srv, ds, job, &count);
        ck_assert_uint_eq(count, (size_t)m + 1); /* the dry run charged nothing */
        double got = json_number_value(json_object_get(e, "epsilon"));
        ck_assert_msg(pg_test_reldiff(got, eps_of_rho(rho, 1e-5)) < 1e-9, "ledger %g", got);
        ck_assert_double_le(got, 4.0);
        json_decref(e);
        check_samples(job, t);
        /* a quality report against the public holdout */
        snprintf(path, sizeof path, "/v1/jobs/%s/reports", job);
        char rb[128];
        snprintf(rb, sizeof rb, "{\"against\":\"%s\",\"n\":300,\"seed\":5}", pub);
        char rid[64];
        pg_test_post_id(&srv, srv.admin, path, rb, 202, rid, NULL);
        snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s", job, rid);
        const char *st = "queued";
        for (int i = 0; i < 600 && (!strcmp(st, "queued") || !strcmp(st, "running")); i++) {
            pg_sleep_ms(100);
            req(&srv, "GET", path, NULL, &r);
            static char buf[32];
            snprintf(buf, sizeof buf, "%s", json_string_value(json_object_get(r.json, "status")));
            st = buf;
            if (strcmp(st, "queued") && strcmp(st, "running"))
                ck_assert_msg(!strcmp(st, "succeeded"), "%s", r.body);
            pg_resp_free(&r);
        }
        ck_assert_str_eq(st, "succeeded");
    }
    /* the catalogue documents both */
    pg_resp r;
    req(&srv, "GET", "/v1/algorithms", NULL, &r);
    ck_assert_msg(strstr(r.body, "\"mst\"") && strstr(r.body, "aim.label_weight") &&
                      strstr(r.body, "model.max_cells"),
                  "%.300s", r.body);
    pg_resp_free(&r);
    pg_table_free(t);
}
END_TEST

static double zero_cell(int i, int j, void *ctx)
{
    (void)i, (void)j, (void)ctx;
    return 0;
}

/* Uploads n rows of d zeros (JSON rows). */
static void zero_rows(const char *ds, int n, int d)
{
    char *b = pg_test_rows_json(n, d, "%.0f", zero_cell, NULL);
    pg_test_rows_post(&srv, srv.admin, ds, "application/json", b, strlen(b));
    free(b);
}

static void expect_422(const char *body, const char *field, const char *words)
{
    pg_resp r;
    req(&srv, "POST", "/v1/jobs", body, &r);
    char detail[512];
    pg_isuite_problem(&oa, &r, 422, field, detail, sizeof detail);
    if (words) ck_assert_msg(strstr(detail, words) != NULL, "%s", detail);
}

START_TEST(bad_jobs_are_422)
{
    char ds[64], loc[64], wide[64], body[1024];
    make_table(&srv, "{\"model\":\"central\",\"budget\":{\"epsilon\":20,\"delta\":1e-5}}", 300, ds);
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"mst\",\"privacy\":{\"epsilon\":1},"
             "\"discretize\":{\"bins\":1024},\"model\":{\"max_cells\":2000}}",
             ds);
    expect_422(body, "model.max_cells", "cells");
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"aim\",\"privacy\":{\"epsilon\":1},"
             "\"aim\":{\"rounds\":-3}}",
             ds);
    expect_422(body, "aim.rounds", NULL);
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"aim\",\"privacy\":{\"epsilon\":1},"
             "\"aim\":{\"target\":\"nope\"}}",
             ds);
    expect_422(body, "aim.target", NULL);
    snprintf(body, sizeof body, "{\"dataset_id\":\"%s\",\"method\":\"mst\"}", ds);
    expect_422(body, "privacy.epsilon", NULL);
    /* an untyped dataset of 65 columns */
    pg_test_post_id(
        &srv, srv.admin, "/v1/datasets",
        "{\"name\":\"w\",\"shape\":[65],\"range\":[-1,1],\"privacy\":{\"model\":\"central\","
        "\"budget\":{\"epsilon\":5,\"delta\":1e-5}}}",
        201, wide, NULL);
    zero_rows(wide, 20, 65);
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"mst\",\"privacy\":{\"epsilon\":1}}", wide);
    expect_422(body, "dataset_id", "64");
    /* a local dataset */
    pg_test_post_id(
        &srv, srv.admin, "/v1/datasets",
        "{\"name\":\"l\",\"shape\":[2],\"range\":[-1,1],\"privacy\":{\"model\":\"local\","
        "\"mechanism\":\"gaussian\",\"epsilon\":1,\"delta\":1e-5,\"sensitivity\":0.5,"
        "\"noise_scale\":2.5}}",
        201, loc, NULL);
    zero_rows(loc, 20, 2);
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"aim\",\"privacy\":{\"epsilon\":1}}", loc);
    expect_422(body, "method", NULL); /* the service checks pg_method.accepts first */
}
END_TEST

/* kill -9 while aim runs its rounds: the restart resumes from the last
 * checkpointed round (history not repeated), the job succeeds, and the
 * ledger holds one entry, the plan's. */
START_TEST(aim_resumes_after_kill9_with_one_charge)
{
    pg_srv s;
    pg_test_srv_start(&s, NULL);
    char ds[64], job[64], body[512];
    make_table(&s, "{\"model\":\"central\",\"budget\":{\"epsilon\":60,\"delta\":1e-5}}", 3000, ds);
    /* many small rounds: a large budget over T = 400 rounds, full refits */
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"aim\",\"privacy\":{\"epsilon\":50},"
             "\"aim\":{\"rounds\":400,\"round_iters\":3000},\"seed\":3}",
             ds);
    submit(&s, body, job);
    json_t *j = poll_job(&s, job, NULL, 3, 5);
    const char *st = json_string_value(json_object_get(j, "status"));
    long at = (long)json_integer_value(json_object_get(json_object_get(j, "progress"), "step"));
    ck_assert_msg(!strcmp(st, "running"), "the job ended before the kill (step %ld)", at);
    json_decref(j);
    pg_srv_kill9(&s);
    ck_assert_int_eq(pg_srv_start(&s, NULL), 0);
    j = poll_job(&s, job, "succeeded", 0, 100);
    long fin = (long)json_integer_value(json_object_get(json_object_get(j, "progress"), "step"));
    ck_assert_msg(fin > at, "final step %ld, killed at %ld", fin, at);
    ck_assert_msg(pg_test_hist_break(j) < 0, "history repeats at %ld", pg_test_hist_break(j));
    json_decref(j);
    size_t count;
    json_t *e = entry(&s, ds, job, &count);
    ck_assert_uint_eq(count, 1);
    ck_assert_double_le(json_number_value(json_object_get(e, "epsilon")), 50.0);
    json_decref(e);
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=csv&n=100&seed=1", job);
    pg_resp r;
    req(&s, "GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    pg_resp_free(&r);
    pg_test_srv_end(&s);
}
END_TEST

/* Rows are streamed to mst from storage (pg_db_rows_pass) in chunks of at
 * most 4096 rows: 15 000 rows in three uploads (blocks of 6000 A, 5000 B,
 * 4000 C rows, so chunks straddle blocks), x = 3 blk + {0, 1, 2}. At
 * epsilon 50 the fitted model is the data's table up to sampling error:
 * block shares 0.40 / 0.33 / 0.27 and x inside its block's range show that
 * every planned row was counted once, across chunk and block boundaries. A
 * fourth upload after submission (20 000 more C rows) is not read: the job
 * sees exactly the rows it was planned for. */
static void upload_blk(const char *ds, char blk, unsigned n)
{
    size_t cap = 16 + (size_t)n * 8, k = 0;
    char *b = malloc(cap);
    k += (size_t)snprintf(b, cap, "blk,x\n");
    for (unsigned i = 0; i < n; i++)
        k += (size_t)snprintf(b + k, cap - k, "%c,%u\n", blk,
                              3u * (unsigned)(blk - 'A') + (i * 2654435761u >> 7) % 3);
    pg_test_rows_post(&srv, srv.admin, ds, "text/csv", b, k);
    free(b);
}

START_TEST(mst_streams_rows_across_chunks_and_blocks)
{
    pg_resp r;
    char ds[64], body[256], job[64], path[192];
    pg_test_post_id(
        &srv, srv.admin, "/v1/datasets",
        "{\"name\":\"s\",\"columns\":["
        "{\"name\":\"blk\",\"type\":\"categorical\",\"categories\":[\"A\",\"B\",\"C\"]},"
        "{\"name\":\"x\",\"type\":\"integer\",\"min\":0,\"max\":8}],"
        "\"privacy\":{\"model\":\"central\",\"budget\":{\"epsilon\":100,\"delta\":1e-5}}}",
        201, ds, NULL);
    upload_blk(ds, 'A', 6000);
    upload_blk(ds, 'B', 5000);
    upload_blk(ds, 'C', 4000);
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"mst\",\"privacy\":{\"epsilon\":50},"
             "\"seed\":5}",
             ds);
    submit(&srv, body, job);
    upload_blk(ds, 'C', 20000);
    json_decref(poll_job(&srv, job, "succeeded", 0, 100));
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=csv&n=20000&seed=9", job);
    req(&srv, "GET", path, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert(!strncmp(r.body, "blk,x\n", 6));
    double cnt[3] = {0}, inside = 0, n = 0;
    for (const char *p = r.body + 6; p < r.body + r.len && *p; p = strchr(p, '\n') + 1) {
        int b = p[0] - 'A';
        ck_assert(b >= 0 && b < 3 && p[1] == ',');
        long x = strtol(p + 2, NULL, 10);
        cnt[b]++;
        inside += x >= 3 * b && x < 3 * b + 3;
        n++;
    }
    ck_assert_double_eq(n, 20000);
    /* 5 standard errors of a share at n = 20000 is about 0.018 */
    ck_assert_msg(fabs(cnt[0] / n - 0.4) < 0.02 && fabs(cnt[1] / n - 1.0 / 3) < 0.02 &&
                      fabs(cnt[2] / n - 4.0 / 15) < 0.02,
                  "block shares %.3f %.3f %.3f", cnt[0] / n, cnt[1] / n, cnt[2] / n);
    ck_assert_msg(inside / n > 0.97, "x inside its block's range for %.3f", inside / n);
    pg_resp_free(&r);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("integration_marginal");
    TCase *tc = tcase_create("marginal");
    tcase_set_timeout(tc, 300);
    tcase_add_unchecked_fixture(tc, start_shared, stop_shared);
    tcase_add_test(tc, mst_and_aim_through_http);
    tcase_add_test(tc, bad_jobs_are_422);
    tcase_add_test(tc, aim_resumes_after_kill9_with_one_charge);
    tcase_add_test(tc, mst_streams_rows_across_chunks_and_blocks);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(make_suite)
