/* Quality reports end to end: a report against a public holdout
 * works for a read token and is reproducible from its seed; one against
 * private data is admin-only (403 on create for a read token, then 404 on
 * every read, exactly like a missing report) and carries the marks; cancel
 * of a queued and a running report; delete (admin only, never a running
 * report, 204 then 404); hostile requests are 4xx with field errors and
 * store nothing. Bodies are checked against openapi.yaml. */
#include <math.h>
#include <png.h>
#include <time.h>

#include "integration/isuite.h"
#include "support/pg_http_test.h"
#include "support/pg_test.h"

static pg_srv srv;
static pg_oa oa;
static char reader[96];     /* a read token of the admin's tenant */
static char job[64];        /* a finished 2-D job on local data */
static char pub[64];        /* a public 2-D holdout */
static char priv[64];       /* a central 2-D dataset of the same tenant */
static char wide[64];       /* a public dataset of another shape */
static char foreign_ds[64]; /* another tenant's public 2-D dataset */
static char tiny[64];       /* a public 2-D dataset of one row */

static void conform(const pg_resp *r, const char *schema)
{
    pg_isuite_conform(&oa, r, schema);
}

static void req(const char *method, const char *path, const char *tok, const char *body, pg_resp *r)
{
    pg_http(&srv, method, path, tok, body ? "application/json" : NULL, body,
            body ? strlen(body) : 0, NULL, r);
}

/* Row i of a dataset: column j on the circle of radius 0.8, 0.37 rad apart
 * from the phase in ctx (cos in even columns, sin in odd ones). */
static double phase_cell(int i, int j, void *ctx)
{
    double phase = *(const double *)ctx;
    return 0.8 * (j % 2 ? sin(phase + 0.37 * i) : cos(phase + 0.37 * i));
}

static void dataset(const char *tok, const char *privacy, int width, int n, double phase,
                    char id[64])
{
    char body[512];
    snprintf(body, sizeof body, "{\"name\":\"d\",\"shape\":[%d],\"range\":[-1,1],\"privacy\":%s}",
             width, privacy);
    pg_test_dataset_rows(&srv, tok, body, n, width, "%.4f", phase_cell, &phase, id);
}

static void make_job(const char *ds, char id[64])
{
    char body[512];
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\",\"model\":{\"hidden\":[16]},"
             "\"train\":{\"steps\":40,\"batch_size\":32},\"ot\":{\"max_iter\":30},\"seed\":7}",
             ds);
    pg_test_post_id(&srv, srv.admin, "/v1/jobs", body, 202, id, NULL);
    json_decref(pg_test_job_wait(&srv, id, "succeeded", 0, 100, 1200));
}

/* The privacy of the local 2-D datasets the jobs here train on. */
static const char LOCAL[] = "{\"model\":\"local\",\"mechanism\":\"gaussian\",\"epsilon\":1,"
                            "\"delta\":1e-5,\"sensitivity\":0.5,\"noise_scale\":2.5}";

/* A finished job (into job) on a new local 2-D dataset of 300 rows. */
static void local_job(void)
{
    char lds[64];
    dataset(srv.admin, LOCAL, 2, 300, 0.0, lds);
    make_job(lds, job);
}

/* Swaps the shared server for one of the test's own, started with extra
 * (the shared one waits in *keep for own_server_end): a public 2-D
 * holdout of n rows (phase) in ds, and a finished job on local data in
 * job. */
static void own_server(pg_srv *keep, const char *const *extra, int n, double phase, char ds[64])
{
    *keep = srv;
    pg_test_srv_start(&srv, extra);
    dataset(srv.admin, "{\"model\":\"public\"}", 2, n, phase, ds);
    local_job();
}

/* Stops the test's own server (a clean exit) and puts the shared one back. */
static void own_server_end(const pg_srv *keep)
{
    pg_test_srv_end(&srv);
    srv = *keep;
}

static void start_shared(void)
{
    pg_isuite_start(&srv, &oa, NULL);
}

static void stop_shared(void)
{
    pg_isuite_stop(&srv, &oa);
}

/* Datasets, tokens and the job, once per test process (Check forks per
 * test, so each test makes its own: ids stay unique). */
static void setup(void)
{
    pg_resp r;
    req("POST", "/v1/tokens", srv.admin, "{\"scope\":\"read\"}", &r);
    ck_assert_msg(r.status == 201, "%s", r.body);
    snprintf(reader, sizeof reader, "%s", json_string_value(json_object_get(r.json, "token")));
    pg_resp_free(&r);
    char local_ds[64];
    dataset(srv.admin, LOCAL, 2, 300, 0.0, local_ds);
    dataset(srv.admin, "{\"model\":\"public\"}", 2, 240, 0.1, pub);
    dataset(srv.admin, "{\"model\":\"central\",\"budget\":{\"epsilon\":5,\"delta\":1e-5}}", 2, 200,
            0.2, priv);
    dataset(srv.admin, "{\"model\":\"public\"}", 3, 50, 0.0, wide);
    dataset(srv.admin, "{\"model\":\"public\"}", 2, 1, 0.0, tiny);
    req("POST", "/v1/tokens", srv.admin, "{\"scope\":\"admin\",\"new_tenant\":true}", &r);
    ck_assert_msg(r.status == 201, "%s", r.body);
    char other[96];
    snprintf(other, sizeof other, "%s", json_string_value(json_object_get(r.json, "token")));
    pg_resp_free(&r);
    dataset(other, "{\"model\":\"public\"}", 2, 100, 0.0, foreign_ds);
    make_job(local_ds, job);
}

/* POST a report; returns the status, the id in rid when 202. */
static long create(const char *tok, const char *body, char rid[64], pg_resp *keep)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s/reports", job);
    pg_resp r;
    req("POST", path, tok, body, &r);
    long st = r.status;
    if (st == 202) {
        conform(&r, "Report");
        snprintf(rid, 64, "%s", json_string_value(json_object_get(r.json, "id")));
        char want[192];
        snprintf(want, sizeof want, "/v1/jobs/%s/reports/%s", job, rid);
        ck_assert_str_eq(r.location, want);
    }
    if (keep)
        *keep = r;
    else
        pg_resp_free(&r);
    return st;
}

/* Polls the report until it ends; returns the final view. */
static json_t *wait_report(const char *tok, const char *rid)
{
    char path[192];
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s", job, rid);
    double last = -1;
    for (int i = 0; i < 1200; i++) {
        pg_resp r;
        req("GET", path, tok, NULL, &r);
        ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
        conform(&r, "Report");
        const char *st = json_string_value(json_object_get(r.json, "status"));
        double p = json_number_value(json_object_get(r.json, "progress"));
        ck_assert(p >= 0 && p <= 1);
        if (!strcmp(st, "running") || !strcmp(st, "succeeded")) ck_assert(p >= last);
        last = p;
        if (strcmp(st, "queued") && strcmp(st, "running")) {
            json_t *o = json_incref(r.json);
            pg_resp_free(&r);
            return o;
        }
        pg_resp_free(&r);
        pg_sleep_ms(100);
    }
    ck_abort_msg("report %s did not end", rid);
    return NULL;
}

static int png_size(const char *buf, size_t len, unsigned *w, unsigned *h)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, buf, len)) return -1;
    *w = img.width;
    *h = img.height;
    png_image_free(&img);
    return 0;
}

static long figure(const char *tok, const char *rid, const char *name, unsigned *w, unsigned *h)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s/figures/%s", job, rid, name);
    pg_resp r;
    req("GET", path, tok, NULL, &r);
    long st = r.status;
    if (st == 200) {
        ck_assert_str_eq(r.ctype, "image/png");
        ck_assert_int_eq(png_size(r.body, r.len, w, h), 0);
    }
    pg_resp_free(&r);
    return st;
}

static size_t list_count(const char *tok, const char *rid, int *has)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s/reports?limit=500", job);
    pg_resp r;
    req("GET", path, tok, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    conform(&r, "ReportList");
    json_t *items = json_object_get(r.json, "items");
    size_t n = json_array_size(items), i;
    json_t *it;
    *has = 0;
    json_array_foreach(items, i, it)
    {
        ck_assert(json_object_get(it, "result") == NULL);
        if (rid && !strcmp(json_string_value(json_object_get(it, "id")), rid)) *has = 1;
    }
    pg_resp_free(&r);
    return n;
}

START_TEST(public_holdout_works_for_a_read_token_and_is_reproducible)
{
    char rid[64], rid2[64];
    char body[128];
    snprintf(body, sizeof body, "{\"against\":\"%s\",\"n\":300,\"seed\":5}", pub);
    pg_resp r;
    ck_assert_int_eq(create(reader, body, rid, &r), 202);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "queued");
    ck_assert(json_is_true(json_object_get(r.json, "private")));
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "against_n")), 240);
    ck_assert(json_is_true(json_object_get(r.json, "utility")));
    pg_resp_free(&r);
    json_t *v = wait_report(reader, rid);
    ck_assert_msg(!strcmp(json_string_value(json_object_get(v, "status")), "succeeded"), "%s",
                  json_dumps(v, 0));
    ck_assert_str_eq(json_string_value(json_object_get(v, "audience")), "tenant");
    /* a report against public rows is post-processing of the job's model:
     * the job's epsilon (its local data's) may be quoted */
    ck_assert(json_is_number(json_object_get(v, "epsilon")));
    json_t *res = json_object_get(v, "result");
    ck_assert(json_is_object(res));
    ck_assert(json_is_true(json_object_get(res, "private")));
    ck_assert_str_eq(json_string_value(json_object_get(res, "audience")), "tenant");
    ck_assert_double_eq(json_number_value(json_object_get(v, "progress")), 1.0);
    /* every figure named in the view is a decodable PNG for the read token */
    json_t *figs = json_object_get(v, "figures");
    const char *want[] = {"histograms-1.png", "correlation.png", "scatter.png"};
    ck_assert_uint_eq(json_array_size(figs), 3);
    for (size_t i = 0; i < 3; i++) {
        ck_assert_str_eq(json_string_value(json_array_get(figs, i)), want[i]);
        unsigned w = 0, h = 0;
        ck_assert_int_eq(figure(reader, rid, want[i], &w, &h), 200);
        ck_assert(w > 100 && h > 100);
    }
    unsigned w, h;
    ck_assert_int_eq(figure(reader, rid, "nope.png", &w, &h), 404);
    int has;
    list_count(reader, rid, &has);
    ck_assert(has);
    /* the same request reproduces every figure (the seed fixes sampling and
     * the split); "seconds" is the only wall-clock member */
    ck_assert_int_eq(create(reader, body, rid2, NULL), 202);
    json_t *v2 = wait_report(reader, rid2);
    json_t *res2 = json_object_get(v2, "result");
    json_object_del(res, "seconds");
    json_object_del(res2, "seconds");
    char *a = json_dumps(res, JSON_SORT_KEYS), *b = json_dumps(res2, JSON_SORT_KEYS);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    json_decref(v);
    json_decref(v2);
}
END_TEST

START_TEST(private_data_is_admin_only_and_hidden_from_read_tokens)
{
    char rid[64];
    char body[128];
    snprintf(body, sizeof body, "{\"against\":\"%s\",\"n\":200}", priv);
    int has;
    size_t before = list_count(srv.admin, NULL, &has);
    pg_resp r;
    ck_assert_int_eq(create(reader, body, rid, &r), 403);
    conform(&r, "Problem");
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(r.json, "errors"), 0), "field")),
                     "against");
    pg_resp_free(&r);
    ck_assert_uint_eq(list_count(srv.admin, NULL, &has), before);

    ck_assert_int_eq(create(srv.admin, body, rid, &r), 202);
    ck_assert(json_is_false(json_object_get(r.json, "private")));
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "audience")), "data owner");
    ck_assert_ptr_null(json_object_get(r.json, "epsilon"));
    pg_resp_free(&r);
    json_t *v = wait_report(srv.admin, rid);
    ck_assert_str_eq(json_string_value(json_object_get(v, "status")), "succeeded");
    json_t *res = json_object_get(v, "result");
    ck_assert(json_is_false(json_object_get(res, "private")));
    ck_assert_str_eq(json_string_value(json_object_get(res, "audience")), "data owner");
    ck_assert_ptr_null(json_object_get(res, "epsilon"));
    ck_assert_ptr_null(json_object_get(v, "epsilon"));
    ck_assert_ptr_nonnull(
        strstr(json_string_value(json_object_get(res, "privacy_note")), "not differentially"));
    unsigned w, h;
    ck_assert_int_eq(figure(srv.admin, rid, "histograms-1.png", &w, &h), 200);

    /* the read token: every read answers like a missing report */
    char path[256], missing[256];
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s", job, rid);
    snprintf(missing, sizeof missing, "/v1/jobs/%s/reports/rep_00000000deadbeef", job);
    pg_resp a, b;
    req("GET", path, reader, NULL, &a);
    req("GET", missing, reader, NULL, &b);
    ck_assert_int_eq(a.status, 404);
    ck_assert_int_eq(b.status, 404);
    ck_assert_str_eq(a.body, b.body);
    pg_resp_free(&a);
    pg_resp_free(&b);
    ck_assert_int_eq(figure(reader, rid, "histograms-1.png", &w, &h), 404);
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s/cancel", job, rid);
    req("POST", path, reader, NULL, &a);
    ck_assert_int_eq(a.status, 404);
    pg_resp_free(&a);
    list_count(reader, rid, &has);
    ck_assert(!has);
    list_count(srv.admin, rid, &has);
    ck_assert(has);
    json_decref(v);
}
END_TEST

/* Regression: an Idempotency-Key belongs to the token that used it. A read
 * token replaying an admin's key and body for a private-data report gets
 * the 403 it gets without the key (not the admin's 202), and with another
 * body no 422 that would tell it the key was used. */
static long create_keyed(const char *tok, const char *body, const char *key, pg_resp *r)
{
    char path[128], h[160];
    snprintf(path, sizeof path, "/v1/jobs/%s/reports", job);
    snprintf(h, sizeof h, "Idempotency-Key: %s", key);
    const char *const hs[] = {h, NULL};
    pg_http(&srv, "POST", path, tok, "application/json", body, strlen(body), hs, r);
    return r->status;
}

START_TEST(idempotency_keys_do_not_cross_tokens)
{
    char body[128], other[128], key[80];
    snprintf(body, sizeof body, "{\"against\":\"%s\",\"n\":200}", priv);
    snprintf(other, sizeof other, "{\"against\":\"%s\",\"n\":201}", priv);
    snprintf(key, sizeof key, "k-%s", job);
    pg_resp a, r;
    ck_assert_int_eq(create_keyed(srv.admin, body, key, &a), 202);
    const char *rid = json_string_value(json_object_get(a.json, "id"));
    ck_assert_ptr_nonnull(rid);
    /* the read token: what it gets without a key, whatever key it sends */
    pg_resp plain;
    char none[64];
    ck_assert_int_eq(create(reader, body, none, &plain), 403);
    ck_assert_int_eq(create_keyed(reader, body, key, &r), 403);
    ck_assert_str_eq(r.body, plain.body);
    pg_resp_free(&r);
    ck_assert_int_eq(create_keyed(reader, other, key, &r), 403);
    ck_assert_str_eq(r.body, plain.body);
    pg_resp_free(&r);
    pg_resp_free(&plain);
    /* the key is the reader's own too: a report it may make is made afresh */
    char pubbody[128];
    snprintf(pubbody, sizeof pubbody, "{\"against\":\"%s\",\"n\":50}", pub);
    ck_assert_int_eq(create_keyed(reader, pubbody, key, &r), 202);
    ck_assert_str_ne(json_string_value(json_object_get(r.json, "id")), rid);
    pg_resp_free(&r);
    /* the admin's retry still replays its own response, byte for byte */
    ck_assert_int_eq(create_keyed(srv.admin, body, key, &r), 202);
    ck_assert_uint_eq(r.len, a.len);
    ck_assert(memcmp(r.body, a.body, a.len) == 0);
    pg_resp_free(&r);
    pg_resp_free(&a);
}
END_TEST

START_TEST(hostile_requests_are_refused_and_store_nothing)
{
    int has;
    size_t before = list_count(srv.admin, NULL, &has);
    static const struct {
        const char *fmt; /* %s: a dataset id */
        int which;       /* 0 pub, 1 wide, 2 foreign, 3 tiny, 4 none */
        const char *field;
    } cases[] = {
        {"{\"against\":\"%s\",\"n\":0}", 0, "n"},
        {"{\"against\":\"%s\",\"n\":-3}", 0, "n"},
        {"{\"against\":\"%s\",\"n\":1.5}", 0, "n"},
        {"{\"against\":\"%s\",\"n\":\"10\"}", 0, "n"},
        {"{\"against\":\"%s\",\"n\":100001}", 0, "n"},
        {"{\"against\":\"%s\",\"seed\":-1}", 0, "seed"},
        {"{\"against\":\"%s\",\"seed\":9007199254740992}", 0, "seed"},
        {"{\"against\":\"%s\",\"nn\":5}", 0, "nn"},
        {"{\"against\":\"%s\",\"utility\":\"no\"}", 0, "utility"},
        {"{\"n\":5}", 4, "against"},
        {"{\"against\":\"ds_0000000000000000\"}", 4, "against"},
        {"{\"against\":\"%s\"}", 1, "against"},
        {"{\"against\":\"%s\"}", 2, "against"},
        {"{\"against\":\"%s\"}", 3, "against"},
    };
    const char *ids[] = {pub, wide, foreign_ds, tiny, ""};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[256], rid[64];
        snprintf(body, sizeof body, cases[i].fmt, ids[cases[i].which]);
        pg_resp r;
        long st = create(reader, body, rid, &r);
        ck_assert_msg(st == 422, "%s: %ld %s", body, st, r.body);
        conform(&r, "Problem");
        json_t *errs = json_object_get(r.json, "errors");
        int named = 0;
        for (size_t k = 0; k < json_array_size(errs); k++)
            named |= !strcmp(json_string_value(json_object_get(json_array_get(errs, k), "field")),
                             cases[i].field);
        ck_assert_msg(named, "%s: no error on %s in %s", body, cases[i].field, r.body);
        pg_resp_free(&r);
    }
    /* several bad fields are all listed */
    char body[128], rid[64];
    pg_resp r;
    snprintf(body, sizeof body, "{\"against\":\"%s\",\"n\":0,\"seed\":-1}", pub);
    ck_assert_int_eq(create(reader, body, rid, &r), 422);
    ck_assert_uint_ge(json_array_size(json_object_get(r.json, "errors")), 2);
    pg_resp_free(&r);
    /* not JSON, not an object */
    ck_assert_int_eq(create(reader, "{", rid, NULL), 400);
    ck_assert_int_eq(create(reader, "[1]", rid, NULL), 400);
    /* an unknown or foreign job */
    req("POST", "/v1/jobs/job_0000000000000000/reports", reader, body, &r);
    ck_assert_int_eq(r.status, 404);
    pg_resp_free(&r);
    ck_assert_uint_eq(list_count(srv.admin, NULL, &has), before);
    /* the other tenant cannot see this job's reports at all */
}
END_TEST

START_TEST(cancel_a_running_report)
{
    /* A reference set large enough that the report runs for a while (its
     * Sinkhorn and neighbour stages grow with it). */
    char big[64], body[128], rid[64];
    dataset(srv.admin, "{\"model\":\"public\"}", 2, 20000, 0.3, big);
    snprintf(body, sizeof body, "{\"against\":\"%s\",\"n\":100000,\"seed\":1}", big);
    ck_assert_int_eq(create(reader, body, rid, NULL), 202);
    char view_path[256], path[256];
    snprintf(view_path, sizeof view_path, "/v1/jobs/%s/reports/%s", job, rid);
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s/cancel", job, rid);
    pg_resp r;
    int running = 0;
    for (int i = 0; i < 2000 && !running; i++) {
        req("GET", view_path, reader, NULL, &r);
        const char *st = json_string_value(json_object_get(r.json, "status"));
        running = st && !strcmp(st, "running");
        int ended = st && strcmp(st, "queued") && !running;
        pg_resp_free(&r);
        if (ended) break;
        if (!running) pg_sleep_ms(5);
    }
    req("POST", path, reader, NULL, &r);
    ck_assert_msg(r.status == 202 || r.status == 409, "%ld %s", r.status, r.body);
    int cancelled = r.status == 202;
    /* seen running, the report cannot have ended before the cancel unless it
     * finished in between: then the answer is 409 and it succeeded */
    if (cancelled) {
        conform(&r, "Report");
        ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "cancelled");
    }
    pg_resp_free(&r);
    if (!running || !cancelled)
        fprintf(stderr, "note: the cancel %s a %s report\n", cancelled ? "reached" : "missed",
                running ? "running" : "queued or finished");
    json_t *v = wait_report(reader, rid);
    /* whatever the race, the stored state is what the cancel answered */
    ck_assert_str_eq(json_string_value(json_object_get(v, "status")),
                     cancelled ? "cancelled" : "succeeded");
    if (cancelled) {
        pg_sleep_ms(2500); /* the worker notices at its next progress point and stores nothing */
        json_decref(v);
        v = wait_report(reader, rid);
        ck_assert_str_eq(json_string_value(json_object_get(v, "status")), "cancelled");
        ck_assert(json_is_null(json_object_get(v, "result")));
        unsigned w, h;
        ck_assert_int_eq(figure(reader, rid, "histograms-1.png", &w, &h), 409);
        req("POST", path, reader, NULL, &r);
        ck_assert_int_eq(r.status, 409);
        pg_resp_free(&r);
        /* the worker is free again: a small report still runs */
        snprintf(body, sizeof body, "{\"against\":\"%s\",\"n\":50}", pub);
        ck_assert_int_eq(create(reader, body, rid, NULL), 202);
        json_decref(v);
        v = wait_report(reader, rid);
        ck_assert_str_eq(json_string_value(json_object_get(v, "status")), "succeeded");
    }
    json_decref(v);
}
END_TEST

START_TEST(queued_reports_cancel_at_once_without_workers)
{
    /* A second server that computes no reports (another replica would):
     * they stay queued, and cancel ends them at once. */
    pg_srv keep;
    static const char *const extra[] = {"--report-workers", "0", NULL};
    char ds[64], rid[64], body[128];
    own_server(&keep, extra, 300, 0.0, ds);
    snprintf(body, sizeof body, "{\"against\":\"%s\",\"n\":100}", ds);
    ck_assert_int_eq(create(srv.admin, body, rid, NULL), 202);
    pg_sleep_ms(2500);
    char path[256];
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s", job, rid);
    pg_resp r;
    req("GET", path, srv.admin, NULL, &r);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "queued");
    pg_resp_free(&r);
    unsigned w, h;
    ck_assert_int_eq(figure(srv.admin, rid, "histograms-1.png", &w, &h), 409);
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s/cancel", job, rid);
    req("POST", path, srv.admin, NULL, &r);
    ck_assert_int_eq(r.status, 202);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "cancelled");
    pg_resp_free(&r);
    req("POST", path, srv.admin, NULL, &r);
    ck_assert_int_eq(r.status, 409);
    pg_resp_free(&r);
    /* the queue bound: --max-queued-reports 16 by default */
    int full = 0;
    for (int i = 0; i < 20 && !full; i++) {
        long st = create(srv.admin, body, rid, &r);
        if (st == 503) {
            full = 1;
            ck_assert_int_eq(i, 16);
        } else {
            ck_assert_int_eq(st, 202);
        }
        pg_resp_free(&r);
    }
    ck_assert(full);
    own_server_end(&keep);
}
END_TEST

START_TEST(a_report_running_at_shutdown_resumes_after_restart)
{
    pg_srv keep;
    char big[64], rid[64], body[128];
    own_server(&keep, NULL, 20000, 0.3, big);
    snprintf(body, sizeof body, "{\"against\":\"%s\",\"n\":100000,\"seed\":3}", big);
    ck_assert_int_eq(create(srv.admin, body, rid, NULL), 202);
    char path[256];
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s", job, rid);
    const char *st = NULL;
    pg_resp r;
    for (int i = 0; i < 2000; i++) {
        req("GET", path, srv.admin, NULL, &r);
        st = json_string_value(json_object_get(r.json, "status"));
        int running = st && !strcmp(st, "running");
        pg_resp_free(&r);
        if (running) break;
        pg_sleep_ms(5);
    }
    /* a clean shutdown gives the running report back (queued) ... */
    ck_assert_int_eq(pg_srv_stop(&srv), 0);
    ck_assert_int_eq(pg_srv_start(&srv, NULL), 0);
    req("GET", path, srv.admin, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    st = json_string_value(json_object_get(r.json, "status"));
    ck_assert_msg(!strcmp(st, "queued") || !strcmp(st, "running") || !strcmp(st, "succeeded"), "%s",
                  r.body);
    pg_resp_free(&r);
    /* ... which the restarted server computes to the end, once */
    json_t *v = wait_report(srv.admin, rid);
    ck_assert_str_eq(json_string_value(json_object_get(v, "status")), "succeeded");
    ck_assert(json_is_object(json_object_get(v, "result")));
    ck_assert_uint_eq(json_array_size(json_object_get(v, "figures")), 3);
    json_decref(v);
    own_server_end(&keep);
}
END_TEST

/* DELETE of one report: the rule of report_rules.h (admin only; a read
 * token gets 403 for a report it can read and 404, like a missing one, for
 * one it cannot), 204 then 404 everywhere, other reports untouched. */
START_TEST(delete_a_report)
{
    char keep_rid[64], rid[64], prid[64], body[128];
    snprintf(body, sizeof body, "{\"against\":\"%s\",\"n\":200,\"seed\":3}", pub);
    ck_assert_int_eq(create(reader, body, keep_rid, NULL), 202);
    ck_assert_int_eq(create(reader, body, rid, NULL), 202);
    json_decref(wait_report(reader, keep_rid));
    json_t *v = wait_report(reader, rid);
    ck_assert_str_eq(json_string_value(json_object_get(v, "status")), "succeeded");
    json_decref(v);
    char path[256], missing[256];
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s", job, rid);
    snprintf(missing, sizeof missing, "/v1/jobs/%s/reports/rep_00000000deadbeef", job);
    pg_resp r, m;
    req("DELETE", path, reader, NULL, &r);
    ck_assert_int_eq(r.status, 403);
    conform(&r, "Problem");
    pg_resp_free(&r);
    unsigned w, h;
    ck_assert_int_eq(figure(reader, rid, "scatter.png", &w, &h), 200); /* still there */
    req("DELETE", path, srv.admin, NULL, &r);
    ck_assert_msg(r.status == 204, "%ld %s", r.status, r.body);
    ck_assert_uint_eq(r.len, 0);
    pg_resp_free(&r);
    /* gone for every read, and a second DELETE is a 404 like a missing id */
    req("GET", path, srv.admin, NULL, &r);
    ck_assert_int_eq(r.status, 404);
    pg_resp_free(&r);
    ck_assert_int_eq(figure(srv.admin, rid, "scatter.png", &w, &h), 404);
    int has;
    list_count(srv.admin, rid, &has);
    ck_assert(!has);
    req("DELETE", path, srv.admin, NULL, &r);
    req("DELETE", missing, srv.admin, NULL, &m);
    ck_assert_int_eq(r.status, 404);
    ck_assert_int_eq(m.status, 404);
    conform(&r, "Problem");
    ck_assert_str_eq(r.body, m.body);
    pg_resp_free(&r);
    pg_resp_free(&m);
    /* the other report of the job is untouched */
    list_count(reader, keep_rid, &has);
    ck_assert(has);
    ck_assert_int_eq(figure(reader, keep_rid, "scatter.png", &w, &h), 200);
    /* against private data: a read token cannot tell it from a missing one */
    snprintf(body, sizeof body, "{\"against\":\"%s\",\"n\":200}", priv);
    ck_assert_int_eq(create(srv.admin, body, prid, NULL), 202);
    json_decref(wait_report(srv.admin, prid));
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s", job, prid);
    req("DELETE", path, reader, NULL, &r);
    req("DELETE", missing, reader, NULL, &m);
    ck_assert_int_eq(r.status, 404);
    ck_assert_str_eq(r.body, m.body);
    pg_resp_free(&r);
    pg_resp_free(&m);
    req("GET", path, srv.admin, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    pg_resp_free(&r);
    req("DELETE", path, srv.admin, NULL, &r);
    ck_assert_int_eq(r.status, 204);
    pg_resp_free(&r);
    /* another job's path does not reach the report */
    snprintf(path, sizeof path, "/v1/jobs/job_00000000deadbeef/reports/%s", keep_rid);
    req("DELETE", path, srv.admin, NULL, &r);
    ck_assert_int_eq(r.status, 404);
    pg_resp_free(&r);
    list_count(reader, keep_rid, &has);
    ck_assert(has);
}
END_TEST

/* With no report worker on the server, the test plays the worker through
 * the store: a queued report is deleted at once; a running one is refused
 * (409) until it is cancelled, and then deleted. */
START_TEST(delete_a_queued_or_running_report)
{
    pg_srv keep;
    static const char *const extra[] = {"--report-workers", "0", NULL};
    char ds[64], rq[64], rr[64], body[128], path[256];
    own_server(&keep, extra, 300, 0.0, ds);
    snprintf(body, sizeof body, "{\"against\":\"%s\",\"n\":100}", ds);
    ck_assert_int_eq(create(srv.admin, body, rr, NULL), 202);
    ck_assert_int_eq(create(srv.admin, body, rq, NULL), 202);
    pg_db *db = pg_srv_db(&srv);
    ck_assert_ptr_nonnull(db);
    pg_report_row *row = NULL;
    int found = 0;
    ck_assert_int_eq(pg_db_report_claim(db, (int64_t)time(NULL), 600, &row, &found, NULL), PG_OK);
    ck_assert(found);
    ck_assert_str_eq(row->id, rr); /* oldest first */
    pg_report_rows_free(row, 1);
    free(row);
    pg_resp r;
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s", job, rq);
    req("DELETE", path, srv.admin, NULL, &r);
    ck_assert_int_eq(r.status, 204);
    pg_resp_free(&r);
    req("GET", path, srv.admin, NULL, &r);
    ck_assert_int_eq(r.status, 404);
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s", job, rr);
    req("DELETE", path, srv.admin, NULL, &r);
    ck_assert_int_eq(r.status, 409);
    conform(&r, "Problem");
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(r.json, "detail")), "cancel"));
    pg_resp_free(&r);
    req("GET", path, srv.admin, NULL, &r);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "running");
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s/cancel", job, rr);
    req("POST", path, srv.admin, NULL, &r);
    ck_assert_int_eq(r.status, 202);
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s", job, rr);
    req("DELETE", path, srv.admin, NULL, &r);
    ck_assert_int_eq(r.status, 204);
    pg_resp_free(&r);
    /* nothing is left to claim: the deleted queued report never runs */
    ck_assert_int_eq(pg_db_report_claim(db, (int64_t)time(NULL), 600, &row, &found, NULL), PG_OK);
    ck_assert(!found);
    pg_db_close(db);
    own_server_end(&keep);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("integration_reports");
    TCase *t = tcase_create("reports");
    tcase_add_unchecked_fixture(t, start_shared, stop_shared);
    tcase_add_checked_fixture(t, setup, NULL);
    tcase_set_timeout(t, 240);
    tcase_add_test(t, public_holdout_works_for_a_read_token_and_is_reproducible);
    tcase_add_test(t, private_data_is_admin_only_and_hidden_from_read_tokens);
    tcase_add_test(t, hostile_requests_are_refused_and_store_nothing);
    tcase_add_test(t, idempotency_keys_do_not_cross_tokens);
    tcase_add_test(t, cancel_a_running_report);
    tcase_add_test(t, queued_reports_cancel_at_once_without_workers);
    tcase_add_test(t, a_report_running_at_shutdown_resumes_after_restart);
    tcase_add_test(t, delete_a_report);
    tcase_add_test(t, delete_a_queued_or_running_report);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
