/* HTTP caching of GET /v1/jobs/{id}/samples end to end (api/samples_cache.h):
 * a seeded request has a strong ETag, the same bytes and tag when repeated
 * (the second from the body cache, counted in /metrics), and a tag that
 * changes with anything that changes the bytes (format, n, seed, label, the
 * snapshot) but not with the order of the query; If-None-Match follows
 * RFC 9110 (list, "*", weak comparison) with a 304 and no body; an unseeded
 * request has no tag and is no-store; Cache-Control tells a running job's
 * latest snapshot (revalidate) from a checkpoint or an ended job's
 * (max-age); a revoked or invalid token and a deleted job are refused
 * whatever the cache holds. */
#include "integration/isuite.h"
#include "support/pg_http_test.h"
#include "support/pg_test.h"

static pg_srv srv;
static pg_oa oa;
static char job[64]; /* finished, conditional on 2 classes */

/* A response: status, body and len, etag, cc (Cache-Control), vary. */
typedef pg_resp got;

/* GET path with tok and an optional If-None-Match value. */
static void get(const char *path, const char *tok, const char *inm, got *g)
{
    char h[512];
    snprintf(h, sizeof h, "If-None-Match: %s", inm ? inm : "");
    const char *const headers[] = {h, NULL};
    pg_http(&srv, "GET", path, tok, NULL, NULL, 0, inm ? headers : NULL, g);
    ck_assert_msg(g->status > 0, "curl error %ld on %s", -g->status, path);
}

static void got_free(got *g)
{
    pg_resp_free(g);
}

static void req(const char *method, const char *path, const char *body, pg_resp *r)
{
    pg_http(&srv, method, path, srv.admin, body ? "application/json" : NULL, body,
            body ? strlen(body) : 0, NULL, r);
}

/* A job on a 2-class dataset; returns its id in out. steps/every: its
 * length and checkpoint interval. */
static void submit(const char *ds, int steps, int every, char *out, size_t cap)
{
    char body[512];
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\",\"model\":{\"hidden\":[16],"
             "\"conditional\":true},"
             "\"train\":{\"steps\":%d,\"batch_size\":16},\"ot\":{\"max_iter\":3},"
             "\"checkpoint_every\":%d,\"seed\":4}",
             ds, steps, every);
    char id[64];
    pg_test_post_id(&srv, srv.admin, "/v1/jobs", body, 202, id, NULL);
    snprintf(out, cap, "%s", id);
}

static const char *status_of(const char *id, long *step)
{
    static char st[32];
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s", id);
    pg_resp r;
    req("GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    snprintf(st, sizeof st, "%s", json_string_value(json_object_get(r.json, "status")));
    if (step) *step = (long)json_integer_value(json_object_get(r.json, "step"));
    pg_resp_free(&r);
    return st;
}

static char dataset[64];

static void start_shared(void)
{
    static const char *const extra[] = {"--workers", "1", "--max-samples", "200000", NULL};
    pg_isuite_start(&srv, &oa, extra);
    pg_resp r;
    req("POST", "/v1/datasets",
        "{\"name\":\"pts\",\"shape\":[2],\"range\":[-4,4],\"num_classes\":2,"
        "\"privacy\":{\"model\":\"local\",\"mechanism\":\"gaussian\",\"epsilon\":1,"
        "\"delta\":1e-5,\"sensitivity\":0.5,\"noise_scale\":2.5}}",
        &r);
    if (r.status != 201) abort();
    snprintf(dataset, sizeof dataset, "%s", json_string_value(json_object_get(r.json, "id")));
    pg_resp_free(&r);
    char body[8192], path[128];
    size_t k = (size_t)snprintf(body, sizeof body, "{\"rows\":[");
    for (int i = 0; i < 120; i++)
        k += (size_t)snprintf(body + k, sizeof body - k, "%s[%.3f,%.3f]", i ? "," : "",
                              (i % 2 ? 1.0 : -1.0) + 0.01 * i, 0.5 - 0.005 * i);
    k += (size_t)snprintf(body + k, sizeof body - k, "],\"labels\":[");
    for (int i = 0; i < 120; i++)
        k += (size_t)snprintf(body + k, sizeof body - k, "%s%d", i ? "," : "", i % 2);
    snprintf(body + k, sizeof body - k, "]}");
    snprintf(path, sizeof path, "/v1/datasets/%s/rows", dataset);
    req("POST", path, body, &r);
    if (r.status != 200 && r.status != 201) abort();
    pg_resp_free(&r);
    submit(dataset, 4, 2, job, sizeof job);
    for (int i = 0;; i++) {
        if (i > 6000) abort();
        const char *st = status_of(job, NULL);
        if (!strcmp(st, "succeeded")) break;
        if (strcmp(st, "queued") && strcmp(st, "running")) abort();
        pg_sleep_ms(20);
    }
}

static void stop_shared(void)
{
    pg_isuite_stop(&srv, &oa);
}

/* A /metrics sample's value. */
static double metric(const char *name)
{
    pg_resp r;
    pg_http(&srv, "GET", "/metrics", NULL, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(r.body, key);
    ck_assert_msg(p != NULL, "no %s in /metrics", name);
    double v = strtod(p + strlen(key), NULL);
    pg_resp_free(&r);
    return v;
}

static void samples_path(char *out, size_t cap, const char *id, const char *query)
{
    snprintf(out, cap, "/v1/jobs/%s/samples?%s", id, query);
}

START_TEST(seeded_bodies_repeat_with_one_etag)
{
    static const char *const queries[] = {"n=20&seed=3&format=json", "n=20&seed=3&format=csv",
                                          "n=20&seed=3&format=npy", "n=200&seed=3&format=png"};
    double hits0 = metric("privgen_body_cache_hits_total");
    for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++) {
        char path[256];
        samples_path(path, sizeof path, job, queries[i]);
        got a, b;
        get(path, srv.admin, NULL, &a);
        get(path, srv.admin, NULL, &b);
        ck_assert_msg(a.status == 200, "%s: %ld %s", queries[i], a.status, a.body);
        ck_assert_int_eq(b.status, 200);
        ck_assert_uint_gt(a.len, 0);
        ck_assert_uint_eq(a.len, b.len);
        ck_assert(memcmp(a.body, b.body, a.len) == 0);
        /* a strong tag: quoted, no W/ */
        ck_assert_msg(a.etag[0] == '"' && a.etag[strlen(a.etag) - 1] == '"', "%s", a.etag);
        ck_assert_str_eq(a.etag, b.etag);
        /* the job has ended: its latest snapshot is fixed */
        ck_assert_str_eq(a.cc, "private, max-age=300");
        ck_assert_str_eq(a.vary, "Authorization");
        got_free(&a);
        got_free(&b);
    }
    /* each repeat was served from the body cache */
    ck_assert_double_ge(metric("privgen_body_cache_hits_total") - hits0, 4);
}
END_TEST

START_TEST(etag_follows_the_bytes)
{
    static const char *const queries[] = {
        "n=10&seed=1&format=json",         "n=10&seed=1&format=csv",
        "n=11&seed=1&format=json",         "n=10&seed=2&format=json",
        "n=10&seed=1&format=json&label=1", "n=10&seed=1&format=npy",
        "n=10&seed=1&format=json&label=0"};
    enum { Q = sizeof queries / sizeof queries[0] };
    char tags[Q][128];
    for (size_t i = 0; i < Q; i++) {
        char path[256];
        samples_path(path, sizeof path, job, queries[i]);
        got g;
        get(path, srv.admin, NULL, &g);
        ck_assert_msg(g.status == 200, "%s: %ld %s", queries[i], g.status, g.body);
        snprintf(tags[i], sizeof tags[i], "%s", g.etag);
        got_free(&g);
        for (size_t j = 0; j < i; j++)
            ck_assert_msg(strcmp(tags[i], tags[j]), "%s and %s share %s", queries[i], queries[j],
                          tags[i]);
    }
    /* the same arguments in another order name the same bytes */
    char path[256];
    samples_path(path, sizeof path, job, "format=json&seed=1&n=10");
    got g;
    get(path, srv.admin, NULL, &g);
    ck_assert_str_eq(g.etag, tags[0]);
    got_free(&g);
    /* an explicit checkpoint is fixed too (max-age), under its own tag */
    samples_path(path, sizeof path, job, "n=10&seed=1&format=json&checkpoint=2");
    get(path, srv.admin, NULL, &g);
    ck_assert_int_eq(g.status, 200);
    ck_assert_str_eq(g.cc, "private, max-age=300");
    for (size_t i = 0; i < Q; i++) ck_assert_str_ne(g.etag, tags[i]);
    got_free(&g);
}
END_TEST

START_TEST(if_none_match_per_rfc9110)
{
    char path[256];
    samples_path(path, sizeof path, job, "n=16&seed=9&format=npy");
    got full;
    get(path, srv.admin, NULL, &full);
    ck_assert_int_eq(full.status, 200);
    const char *tag = full.etag;
    char weak[160], list[300], junk[300];
    snprintf(weak, sizeof weak, "W/%s", tag);
    snprintf(list, sizeof list, "\"other\", W/\"x,y\" ,%s", tag);
    snprintf(junk, sizeof junk, "garbage, %s", tag);
    const char *const match[] = {tag, weak, list, "*", junk};
    for (size_t i = 0; i < sizeof match / sizeof match[0]; i++) {
        got g;
        get(path, srv.admin, match[i], &g);
        ck_assert_msg(g.status == 304, "If-None-Match: %s -> %ld", match[i], g.status);
        ck_assert_uint_eq(g.len, 0);
        ck_assert_str_eq(g.etag, tag); /* a 304 names what it validated */
        ck_assert_str_eq(g.cc, "private, max-age=300");
        got_free(&g);
    }
    char unquoted[160], prefix[160];
    snprintf(unquoted, sizeof unquoted, "%.*s", (int)strlen(tag) - 2, tag + 1);
    snprintf(prefix, sizeof prefix, "%.*s\"", (int)strlen(tag) - 2, tag);
    const char *const miss[] = {"\"nope\"", unquoted, prefix, "W/", "\"", ""};
    for (size_t i = 0; i < sizeof miss / sizeof miss[0]; i++) {
        got g;
        get(path, srv.admin, miss[i], &g);
        ck_assert_msg(g.status == 200, "If-None-Match: %s -> %ld", miss[i], g.status);
        ck_assert_uint_eq(g.len, full.len);
        ck_assert(memcmp(g.body, full.body, full.len) == 0);
        got_free(&g);
    }
    /* a tag of this URL does not validate another query */
    samples_path(path, sizeof path, job, "n=17&seed=9&format=npy");
    got g;
    get(path, srv.admin, tag, &g);
    ck_assert_int_eq(g.status, 200);
    got_free(&g);
    got_free(&full);
}
END_TEST

START_TEST(unseeded_is_no_store)
{
    char path[256];
    samples_path(path, sizeof path, job, "n=8&format=json");
    got a, b;
    get(path, srv.admin, NULL, &a);
    get(path, srv.admin, "\"anything\"", &b);
    ck_assert_int_eq(a.status, 200);
    ck_assert_int_eq(b.status, 200);
    ck_assert_str_eq(a.etag, "");
    ck_assert_str_eq(a.cc, "no-store");
    ck_assert_str_eq(b.cc, "no-store");
    ck_assert(a.len != b.len || memcmp(a.body, b.body, a.len)); /* fresh rows each time */
    got_free(&a);
    got_free(&b);
    /* and errors are never cacheable */
    samples_path(path, sizeof path, job, "n=0&seed=1");
    get(path, srv.admin, NULL, &a);
    ck_assert_int_eq(a.status, 400);
    ck_assert_str_eq(a.etag, "");
    ck_assert_str_eq(a.cc, "no-store");
    got_free(&a);
}
END_TEST

START_TEST(auth_runs_on_cached_urls)
{
    pg_resp r;
    req("POST", "/v1/tokens", "{\"scope\":\"read\"}", &r);
    ck_assert_msg(r.status == 201, "%s", r.body);
    char tok[128], id[64], path[256];
    snprintf(tok, sizeof tok, "%s", json_string_value(json_object_get(r.json, "token")));
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(r.json, "id")));
    pg_resp_free(&r);
    samples_path(path, sizeof path, job, "n=12&seed=5&format=csv");
    got g;
    get(path, tok, NULL, &g);
    ck_assert_int_eq(g.status, 200);
    char tag[128];
    snprintf(tag, sizeof tag, "%s", g.etag);
    got_free(&g);
    get(path, tok, NULL, &g); /* now in the body cache */
    ck_assert_int_eq(g.status, 200);
    got_free(&g);
    get(path, "pgt_0000000000000000_00000000000000000000000000000000", tag, &g);
    ck_assert_int_eq(g.status, 401);
    got_free(&g);
    get(path, NULL, tag, &g);
    ck_assert_int_eq(g.status, 401);
    got_free(&g);
    char del[128];
    snprintf(del, sizeof del, "/v1/tokens/%s", id);
    req("DELETE", del, NULL, &r);
    ck_assert_msg(r.status == 204, "%ld %s", r.status, r.body);
    pg_resp_free(&r);
    /* refused at once: neither the body cache nor a 304 skips the check */
    get(path, tok, NULL, &g);
    ck_assert_int_eq(g.status, 401);
    ck_assert_str_eq(g.etag, "");
    got_free(&g);
    get(path, tok, tag, &g);
    ck_assert_int_eq(g.status, 401);
    got_free(&g);
    /* another tenant does not see the job, cached or not */
    req("POST", "/v1/tokens", "{\"scope\":\"admin\",\"new_tenant\":true}", &r);
    ck_assert_msg(r.status == 201, "%s", r.body);
    snprintf(tok, sizeof tok, "%s", json_string_value(json_object_get(r.json, "token")));
    pg_resp_free(&r);
    get(path, tok, NULL, &g);
    ck_assert_int_eq(g.status, 404);
    got_free(&g);
    get(path, tok, tag, &g);
    ck_assert_int_eq(g.status, 404);
    got_free(&g);
}
END_TEST

START_TEST(new_checkpoint_new_etag_and_deletion)
{
    char run[64], path[256];
    submit(dataset, 100000, 20, run, sizeof run);
    samples_path(path, sizeof path, run, "n=10&seed=1&format=json");
    got a;
    for (int i = 0;; i++) { /* 409 until its first checkpoint */
        ck_assert_int_lt(i, 6000);
        get(path, srv.admin, NULL, &a);
        if (a.status == 200) break;
        ck_assert_msg(a.status == 409, "%ld %s", a.status, a.body);
        got_free(&a);
        pg_sleep_ms(20);
    }
    ck_assert_str_eq(status_of(run, NULL), "running");
    ck_assert_str_eq(a.cc, "private, no-cache"); /* running: revalidate each time */
    json_t *o = json_loadb(a.body, a.len, 0, NULL);
    long s0 = (long)json_integer_value(json_object_get(o, "step"));
    json_decref(o);
    got b = {0};
    for (int i = 0;; i++) { /* a later checkpoint changes bytes and tag */
        ck_assert_int_lt(i, 6000);
        get(path, srv.admin, a.etag, &b);
        if (b.status == 200) break;
        ck_assert_int_eq(b.status, 304);
        got_free(&b);
        pg_sleep_ms(20);
    }
    ck_assert_str_ne(b.etag, a.etag);
    ck_assert(a.len != b.len || memcmp(a.body, b.body, a.len));
    o = json_loadb(b.body, b.len, 0, NULL);
    ck_assert_int_gt(json_integer_value(json_object_get(o, "step")), s0);
    json_decref(o);
    got_free(&a);
    got_free(&b);
    /* cancel, wait for the end, delete: 404, never the cached body */
    char p2[128];
    snprintf(p2, sizeof p2, "/v1/jobs/%s/cancel", run);
    pg_resp r;
    req("POST", p2, NULL, &r);
    ck_assert_msg(r.status == 200 || r.status == 202, "%ld %s", r.status, r.body);
    pg_resp_free(&r);
    for (int i = 0; !strcmp(status_of(run, NULL), "running"); i++) {
        ck_assert_int_lt(i, 6000);
        pg_sleep_ms(20);
    }
    get(path, srv.admin, NULL, &a);
    ck_assert_int_eq(a.status, 200);
    ck_assert_str_eq(a.cc, "private, max-age=300"); /* ended: fixed now */
    get(path, srv.admin, NULL, &b);                 /* cached */
    ck_assert_int_eq(b.status, 200);
    got_free(&b);
    snprintf(p2, sizeof p2, "/v1/jobs/%s", run);
    req("DELETE", p2, NULL, &r);
    ck_assert_msg(r.status == 204, "%ld %s", r.status, r.body);
    pg_resp_free(&r);
    get(path, srv.admin, NULL, &b);
    ck_assert_int_eq(b.status, 404);
    got_free(&b);
    get(path, srv.admin, a.etag, &b);
    ck_assert_int_eq(b.status, 404);
    got_free(&b);
    got_free(&a);
}
END_TEST

/* Bytes and entries of the body cache, and its hit count. */
static void cache_state(double *bytes, double *entries, double *hits)
{
    *bytes = metric("privgen_body_cache_bytes");
    *entries = metric("privgen_body_cache_entries");
    *hits = metric("privgen_body_cache_hits_total");
}

/* GET a seeded path twice: the second answer is the same bytes; returns the
 * first's length and leaves its ETag in etag. */
static size_t twice(const char *query, char *etag, size_t cap)
{
    char path[256];
    samples_path(path, sizeof path, job, query);
    got a, b;
    get(path, srv.admin, NULL, &a);
    get(path, srv.admin, NULL, &b);
    ck_assert_msg(a.status == 200 && b.status == 200, "%s: %ld %ld", query, a.status, b.status);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert(!memcmp(a.body, b.body, a.len));
    snprintf(etag, cap, "%s", a.etag);
    size_t len = a.len;
    got_free(&a);
    got_free(&b);
    return len;
}

START_TEST(body_cache_bytes_are_the_bodies)
{
    /* distinct seeded bodies add exactly their lengths, and each repeat is
     * a hit */
    double b0, e0, h0, b1, e1, h1;
    cache_state(&b0, &e0, &h0);
    size_t sum = 0;
    char tag[128];
    for (int i = 0; i < 5; i++) {
        char q[64];
        snprintf(q, sizeof q, "n=%d&seed=77&format=%s", 30 + i, i % 2 ? "csv" : "json");
        sum += twice(q, tag, sizeof tag);
    }
    cache_state(&b1, &e1, &h1);
    ck_assert_double_eq(b1 - b0, (double)sum);
    ck_assert_double_eq(e1 - e0, 5);
    ck_assert_double_eq(h1 - h0, 5);
    /* a streamed body (more than 2^16 values) of up to 1 MiB is kept once
     * it has gone out whole: 40 000 x 2 NPY is 320 128 bytes */
    size_t len = twice("n=40000&seed=77&format=npy", tag, sizeof tag);
    ck_assert_uint_eq(len, 128 + 40000 * 2 * 4);
    cache_state(&b0, &e0, &h0);
    ck_assert_double_eq(b0 - b1, (double)len);
    ck_assert_double_eq(h0 - h1, 1);
    /* a streamed text body is kept when it ends up within 1 MiB */
    len = twice("n=40000&seed=77&format=json", tag, sizeof tag);
    cache_state(&b1, &e1, &h1);
    ck_assert_double_eq(b1 - b0, len <= ((size_t)1 << 20) ? (double)len : 0);
    ck_assert_double_eq(h1 - h0, len <= ((size_t)1 << 20) ? 1 : 0);
    /* above 1 MiB: never kept, but revalidated by its ETag */
    len = twice("n=140000&seed=77&format=npy", tag, sizeof tag);
    ck_assert_uint_eq(len, 128 + 140000 * 2 * 4);
    cache_state(&b0, &e0, &h0);
    ck_assert_double_eq(b0, b1);
    ck_assert_double_eq(h0, h1);
    char path[256];
    samples_path(path, sizeof path, job, "n=140000&seed=77&format=npy");
    got g;
    get(path, srv.admin, tag, &g);
    ck_assert_int_eq(g.status, 304);
    ck_assert_uint_eq(g.len, 0);
    got_free(&g);
    ck_assert_double_le(b0, metric("privgen_body_cache_capacity_bytes"));
}
END_TEST

static Suite *samples_cache_suite(void)
{
    Suite *s = suite_create("integration/samples_cache");
    TCase *tc = tcase_create("http");
    tcase_add_unchecked_fixture(tc, start_shared, stop_shared);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, seeded_bodies_repeat_with_one_etag);
    tcase_add_test(tc, etag_follows_the_bytes);
    tcase_add_test(tc, if_none_match_per_rfc9110);
    tcase_add_test(tc, unseeded_is_no_store);
    tcase_add_test(tc, auth_runs_on_cached_urls);
    tcase_add_test(tc, new_checkpoint_new_etag_and_deletion);
    tcase_add_test(tc, body_cache_bytes_are_the_bodies);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(samples_cache_suite)
