/* A live privgend on PostgreSQL while the server goes away: requests made
 * while it is down get 503 with Retry-After (never a crash or a hang), and
 * once it is back everything works again with every charge counted exactly
 * once (none lost, none doubled, retried keys replayed). And a streamed
 * upload whose database connection is killed half-way answers 503 and
 * leaves the dataset's row count unchanged. */
#include <check.h>
#include <libpq-fe.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <strings.h>

#include "integration/itest.h"
#include "support/pg_http_test.h"
#include "pg/pgtest_env.h"

#define CAP    3.0
#define CDELTA 1e-5

static void req(const pg_srv *s, const char *method, const char *path, const char *body,
                const char *const *headers, pg_resp *r)
{
    pg_http(s, method, path, s->admin, body ? "application/json" : NULL, body,
            body ? strlen(body) : 0, headers, r);
}

static void make_central(const pg_srv *s, int n, char id[64])
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"name\":\"c\",\"shape\":[2],\"range\":[-1,1],\"privacy\":{\"model\":"
             "\"central\",\"budget\":{\"epsilon\":%.17g,\"delta\":%g}}}",
             CAP, CDELTA);
    pg_resp r;
    req(s, "POST", "/v1/datasets", body, NULL, &r);
    ck_assert_msg(r.status == 201, "%s", r.body);
    snprintf(id, 64, "%s", json_string_value(json_object_get(r.json, "id")));
    pg_resp_free(&r);
    size_t bc = (size_t)n * 40 + 64, k = 0;
    char *b = malloc(bc);
    k += (size_t)snprintf(b + k, bc - k, "{\"rows\":[");
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(b + k, bc - k, "%s[%.4f,%.4f]", i ? "," : "", 0.8 * cos(0.05 * i),
                              0.8 * sin(0.05 * i));
    snprintf(b + k, bc - k, "]}");
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%s/rows", id);
    req(s, "POST", path, b, NULL, &r);
    free(b);
    ck_assert_msg(r.status == 200, "%s", r.body);
    pg_resp_free(&r);
}

static void job_body(char *buf, size_t cap, const char *ds, double sigma)
{
    snprintf(buf, cap,
             "{\"dataset_id\":\"%s\",\"method\":\"dp_sinkhorn\",\"model\":{\"hidden\":[8]},"
             "\"train\":{\"steps\":10,\"batch_size\":20},\"ot\":{\"max_iter\":10},"
             "\"privacy\":{\"noise_multiplier\":%.17g},\"checkpoint_every\":5,\"seed\":3}",
             ds, sigma);
}

static void wait_status(const pg_srv *s, const char *id, const char *status)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s", id);
    for (int i = 0; i < 3000; i++) {
        pg_resp r;
        req(s, "GET", path, NULL, NULL, &r);
        const char *st =
            r.status == 200 ? json_string_value(json_object_get(r.json, "status")) : "";
        int hit = st && !strcmp(st, status);
        int bad = st && (!strcmp(st, "failed") || !strcmp(st, "cancelled"));
        pg_resp_free(&r);
        if (hit) return;
        ck_assert_msg(!bad, "job %s ended %s, waiting for %s", id, st, status);
        pg_sleep_ms(20);
    }
    ck_abort_msg("job %s never reached %s", id, status);
}

/* Spent epsilon and entry count of the dataset's budget. */
static void budget(const pg_srv *s, const char *ds, double *spent, int *entries)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%s/budget", ds);
    pg_resp r;
    req(s, "GET", path, NULL, NULL, &r);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    *spent = json_number_value(json_object_get(r.json, "spent_epsilon"));
    *entries = (int)json_array_size(json_object_get(r.json, "entries"));
    pg_resp_free(&r);
}

/* Status and Retry-After of one request (curl by hand: pg_http drops
 * response headers other than Location and Content-Type). */
static size_t grab_retry(char *p, size_t sz, size_t n, void *ctx)
{
    if (n * sz > 12 && !strncasecmp(p, "Retry-After:", 12)) *(long *)ctx = strtol(p + 12, NULL, 10);
    return sz * n;
}

static size_t discard(char *p, size_t sz, size_t n, void *ctx)
{
    (void)p;
    (void)ctx;
    return sz * n;
}

static long status_retry(const pg_srv *s, const char *method, const char *path, const char *body,
                         long *retry)
{
    char url[256], auth[160];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", s->port, path);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", s->admin);
    struct curl_slist *hl = curl_slist_append(NULL, auth);
    hl = curl_slist_append(hl, "Content-Type: application/json");
    *retry = 0;
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, grab_retry);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, retry);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    long status = 0;
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    return status;
}

/* The database password (in the URI privgend was given) appears nowhere in
 * its log, outage messages included. */
static void no_password_in_log(const pg_srv *s)
{
    const char *uri = pgt_uri();
    const char *colon = strchr(uri + strlen("postgresql://"), ':'), *at = strchr(uri, '@');
    ck_assert(colon && at && at > colon + 4);
    char pw[128];
    snprintf(pw, sizeof pw, "%.*s", (int)(at - colon - 1), colon + 1);
    char path[128];
    snprintf(path, sizeof path, "%s/privgend.log", s->dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char *log = calloc(1, 1 << 22);
    size_t n = fread(log, 1, (1 << 22) - 1, f);
    fclose(f);
    ck_assert_uint_gt(n, 0);
    ck_assert_msg(!strstr(log, pw), "the database password is in privgend.log");
    free(log);
}

/* A 503 body of the outage says what a client can act on (retry later)
 * and nothing of where the database lives: no socket path, host or port
 * (regression: the detail used to carry libpq's "connection to server on
 * socket /.../.s.PGSQL.NNNN failed"). */
static void no_location_in(const pg_resp *r)
{
    ck_assert_int_eq(r->status, 503);
    const char *dir = getenv("PRIVGEN_TEST_PG_DIR");
    static const char *const bad[] = {"PGSQL",     "socket", "/tmp", "127.0.0.1",
                                      "localhost", "host",   "port", "5432"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!strcasestr(r->body, bad[i]), "'%s' in the 503 body: %s", bad[i], r->body);
    if (dir && *dir) ck_assert_msg(!strstr(r->body, dir), "the cluster dir in: %s", r->body);
    const char *uri = pgt_uri(), *at = strchr(uri, '@');
    if (at) {
        char host[128];
        snprintf(host, sizeof host, "%.*s", (int)strcspn(at + 1, ":/?"), at + 1);
        if (strlen(host) > 2) ck_assert_msg(!strstr(r->body, host), "the host in: %s", r->body);
    }
}

START_TEST(server_down_then_back)
{
    pg_srv s;
    memset(&s, 0, sizeof s);
    static const char *const extra[] = {"--workers", "1", NULL};
    ck_assert_int_eq(pg_srv_start(&s, extra), 0);
    char ds[64], a[64], body[768], path[128];
    make_central(&s, 200, ds);

    pg_resp r;
    job_body(body, sizeof body, ds, 40.0);
    req(&s, "POST", "/v1/jobs", body, NULL, &r);
    ck_assert_msg(r.status == 202, "%ld %s", r.status, r.body);
    snprintf(a, sizeof a, "%s", json_string_value(json_object_get(r.json, "id")));
    pg_resp_free(&r);
    wait_status(&s, a, "succeeded");
    double one;
    int n;
    budget(&s, ds, &one, &n);
    ck_assert_int_eq(n, 1);
    ck_assert(one > 0 && one < CAP / 4);

    ck_assert_int_eq(pgt_cluster("halt"), 0);
    long retry;
    snprintf(path, sizeof path, "/v1/datasets/%s/budget", ds);
    ck_assert_int_eq(status_retry(&s, "GET", path, NULL, &retry), 503);
    ck_assert_int_gt(retry, 0);
    ck_assert_int_eq(status_retry(&s, "POST", "/v1/jobs", body, &retry), 503);
    ck_assert_int_gt(retry, 0);
    ck_assert_int_eq(status_retry(&s, "GET", "/readyz", NULL, &retry), 503);
    req(&s, "GET", path, NULL, NULL, &r);
    no_location_in(&r);
    pg_resp_free(&r);
    req(&s, "GET", "/readyz", NULL, NULL, &r);
    no_location_in(&r);
    pg_resp_free(&r);
    req(&s, "GET", "/v1/datasets", NULL, NULL, &r);
    no_location_in(&r);
    pg_resp_free(&r);
    const char *const key2[] = {"Idempotency-Key: during-outage", NULL};
    pg_http(&s, "POST", "/v1/jobs", s.admin, "application/json", body, strlen(body), key2, &r);
    ck_assert_int_eq(r.status, 503);
    pg_resp_free(&r);
    ck_assert_int_eq(kill(s.pid, 0), 0); /* still serving */

    ck_assert_int_eq(pgt_cluster("resume"), 0);
    ck_assert_int_eq(status_retry(&s, "GET", "/readyz", NULL, &retry), 200);
    double spent;
    budget(&s, ds, &spent, &n);
    ck_assert_int_eq(n, 1);
    ck_assert_double_eq(spent, one);

    /* The key tried during the outage reserved nothing: it runs now, once. */
    pg_resp r1, r2;
    pg_http(&s, "POST", "/v1/jobs", s.admin, "application/json", body, strlen(body), key2, &r1);
    ck_assert_msg(r1.status == 202, "%ld %s", r1.status, r1.body);
    pg_http(&s, "POST", "/v1/jobs", s.admin, "application/json", body, strlen(body), key2, &r2);
    ck_assert_int_eq(r2.status, 202);
    const char *b = json_string_value(json_object_get(r1.json, "id"));
    ck_assert_str_eq(b, json_string_value(json_object_get(r2.json, "id")));
    wait_status(&s, b, "succeeded");
    pg_resp_free(&r1);
    pg_resp_free(&r2);
    budget(&s, ds, &spent, &n);
    ck_assert_int_eq(n, 2);
    ck_assert(spent > one);

    /* A restart of the server under a live privgend: the same. */
    ck_assert_int_eq(pgt_cluster("restart"), 0);
    double again;
    budget(&s, ds, &again, &n);
    ck_assert_int_eq(n, 2);
    ck_assert_double_eq(again, spent);
    ck_assert_int_eq(pg_srv_stop(&s), 0);
    no_password_in_log(&s);
    pg_srv_cleanup(&s);
}
END_TEST

/* ---- connections killed while a streamed upload is open -------------- */

enum { UP_ROWS = 200000, UP_D = 2 };
#define UP_BYTES ((size_t)UP_ROWS * UP_D * 4)
#define UP_PAUSE ((size_t)1300000) /* past the first 1 MiB chunk */

typedef struct upload {
    const pg_srv *s;
    const char *ds;
    const float *x;
    size_t sent;
    atomic_int paused, go_on;
    long status;
} upload;

static size_t up_read(char *buf, size_t sz, size_t nitems, void *ctx)
{
    upload *u = ctx;
    if (u->sent >= UP_PAUSE && !atomic_load(&u->go_on)) {
        atomic_store(&u->paused, 1);
        while (!atomic_load(&u->go_on)) pg_sleep_ms(5);
    }
    size_t left = UP_BYTES - u->sent, k = sz * nitems;
    if (u->sent < UP_PAUSE && k > UP_PAUSE - u->sent) k = UP_PAUSE - u->sent;
    if (k > left) k = left;
    memcpy(buf, (const char *)u->x + u->sent, k);
    u->sent += k;
    return k;
}

static void *up_thread(void *arg)
{
    upload *u = arg;
    char url[256], auth[160], rows[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/v1/datasets/%s/rows", u->s->port, u->ds);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", u->s->admin);
    snprintf(rows, sizeof rows, "X-Rows: %d", UP_ROWS);
    struct curl_slist *hl = curl_slist_append(NULL, auth);
    hl = curl_slist_append(hl, "Content-Type: application/octet-stream");
    hl = curl_slist_append(hl, rows);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "POST");
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)UP_BYTES);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, up_read);
    curl_easy_setopt(c, CURLOPT_READDATA, u);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    if (curl_easy_perform(c) == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &u->status);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    return NULL;
}

static long long rows_of(const pg_srv *s, const char *ds)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%s", ds);
    pg_resp r;
    req(s, "GET", path, NULL, NULL, &r);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    long long n = (long long)json_integer_value(json_object_get(r.json, "n"));
    pg_resp_free(&r);
    return n;
}

/* A privgend backend of database `db` that has sat inside one transaction
 * for over a second (0: none). An open upload must not leave one: its
 * appender spools. Shorter ones are not the upload's: an idle worker's
 * claim poll (every 500 ms) is a transaction of a few statements, seen idle
 * in transaction between them in about 1% of samples on a loaded machine,
 * which failed the check with no upload at fault. */
static int appender_pid(PGconn *c, const char *db)
{
    const char *v[1] = {db};
    PGresult *r = PQexecParams(c,
                               "SELECT coalesce(max(pid), 0) FROM pg_stat_activity WHERE "
                               "datname = $1 AND application_name = 'privgend' AND "
                               "state LIKE 'idle in transaction%' AND "
                               "xact_start < now() - interval '1 second'",
                               1, NULL, v, NULL, NULL, 0);
    int pid = PQresultStatus(r) == PGRES_TUPLES_OK ? atoi(PQgetvalue(r, 0, 0)) : 0;
    PQclear(r);
    return pid;
}

START_TEST(killed_connection_mid_upload)
{
    pg_srv s;
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(pg_srv_start(&s, NULL), 0);
    char ds[64], db[64];
    make_central(&s, 10, ds);
    pg_srv_db_name(&s, db, sizeof db);
    float *x = malloc(UP_BYTES);
    for (size_t i = 0; i < (size_t)UP_ROWS * UP_D; i++) x[i] = (float)(i % 1000) / 1000.0f - 0.5f;
    PGconn *c = PQconnectdb(pgt_uri());
    ck_assert_int_eq(PQstatus(c), CONNECTION_OK);

    upload u = {.s = &s, .ds = ds, .x = x};
    pthread_t t;
    pthread_create(&t, NULL, up_thread, &u);
    for (int i = 0; i < 2000 && !atomic_load(&u.paused); i++) pg_sleep_ms(10);
    ck_assert(atomic_load(&u.paused));
    /* Past the first MiB the server has read some of the body: it holds no
     * transaction for the open upload (the appender spools locally), so
     * killing every connection of the pool now costs the upload nothing.
     * One that the upload opened would be older than this wait. */
    pg_sleep_ms(1300);
    ck_assert_int_eq(appender_pid(c, db), 0);
    const char *v1[1] = {db};
    PGresult *r = PQexecParams(c,
                               "SELECT count(pg_terminate_backend(pid, 5000)) FROM "
                               "pg_stat_activity WHERE datname = $1 AND application_name = "
                               "'privgend'",
                               1, NULL, v1, NULL, NULL, 0);
    ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    ck_assert_int_gt(atoi(PQgetvalue(r, 0, 0)), 0);
    PQclear(r);
    atomic_store(&u.go_on, 1);
    pthread_join(t, NULL);
    ck_assert_int_eq(u.status, 200);
    ck_assert_int_eq(rows_of(&s, ds), 10 + UP_ROWS);

    /* The same upload again goes through on a fresh connection. */
    upload v = {.s = &s, .ds = ds, .x = x};
    atomic_store(&v.go_on, 1);
    up_thread(&v);
    ck_assert_int_eq(v.status, 200);
    ck_assert_int_eq(rows_of(&s, ds), 10 + 2 * UP_ROWS);
    PQfinish(c);
    free(x);
    pg_test_srv_end(&s);
}
END_TEST

static Suite *suite(void)
{
    Suite *su = suite_create("pg_faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, server_down_then_back);
    tcase_add_test(tc, killed_connection_mid_upload);
    suite_add_tcase(su, tc);
    return su;
}

PG_ITEST_MAIN(suite)
