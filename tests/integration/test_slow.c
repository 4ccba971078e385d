/* Slow and hostile clients over real HTTP: uploads that trickle must not
 * stall other requests (on PostgreSQL they used to hold a pool connection
 * each), the bounds on uploads in flight answer 429/503, bodies slower than
 * --min-body-rate are cut with nothing stored, and a connection that sends
 * its headers and then nothing is closed after --http-timeout-seconds.
 * Runs on SQLite and, as test_integration_slow_pg, on PostgreSQL. No
 * timing assertions: only "completes while the slow uploads are open" and
 * "is closed before a generous deadline". */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "itest.h"
#include "support/pg_http_test.h"

enum { D = 2, SLOW_ROWS = 300 };

static void req(const pg_srv *s, const char *tok, const char *method, const char *path,
                const char *body, pg_resp *r)
{
    pg_http(s, method, path, tok, body ? "application/json" : NULL, body, body ? strlen(body) : 0,
            NULL, r);
}

static void make_central(const pg_srv *s, char id[64])
{
    pg_resp r;
    req(s, s->admin, "POST", "/v1/datasets",
        "{\"name\":\"c\",\"shape\":[2],\"range\":[-1,1],\"privacy\":{\"model\":\"central\","
        "\"budget\":{\"epsilon\":50,\"delta\":1e-5}}}",
        &r);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    snprintf(id, 64, "%s", json_string_value(json_object_get(r.json, "id")));
    pg_resp_free(&r);
}

static long long rows_of(const pg_srv *s, const char *ds)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%s", ds);
    pg_resp r;
    req(s, s->admin, "GET", path, NULL, &r);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    long long n = (long long)json_integer_value(json_object_get(r.json, "n"));
    pg_resp_free(&r);
    return n;
}

/* A JSON upload of n rows; returns the status. */
static long upload_json(const pg_srv *s, const char *tok, const char *ds, int n)
{
    char path[128], body[4096];
    size_t k = (size_t)snprintf(body, sizeof body, "{\"rows\":[");
    for (int i = 0; i < n && k + 32 < sizeof body; i++)
        k += (size_t)snprintf(body + k, sizeof body - k, "%s[0.25,%.3f]", i ? "," : "",
                              (double)i / (n + 1));
    snprintf(body + k, sizeof body - k, "]}");
    snprintf(path, sizeof path, "/v1/datasets/%s/rows", ds);
    pg_resp r;
    req(s, tok, "POST", path, body, &r);
    long st = r.status;
    pg_resp_free(&r);
    return st;
}

/* A metric's value from /metrics (-1 when absent). */
static double metric(const pg_srv *s, const char *name)
{
    pg_resp r;
    req(s, NULL, "GET", "/metrics", NULL, &r);
    ck_assert_msg(r.status == 200, "%ld", r.status);
    double v = -1;
    size_t n = strlen(name);
    for (const char *p = r.body; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, name, n) && p[n] == ' ') {
            v = strtod(p + n + 1, NULL);
            break;
        }
    pg_resp_free(&r);
    return v;
}

/* Polls until metric == want or the deadline passes; returns the last value. */
static double wait_metric(const pg_srv *s, const char *name, double want)
{
    double v = -1;
    for (int i = 0; i < 600 && (v = metric(s, name)) != want; i++) pg_sleep_ms(50);
    return v;
}

/* ---- a raw client that controls every byte ---------------------------- */

typedef struct slow {
    int fd;
    unsigned char *body;
    size_t len, sent;
} slow;

static int send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w <= 0) return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int dial(const pg_srv *s)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

/* An NPY body of `rows` rows of D float32 values in [-1, 1]. */
static unsigned char *npy_body(int rows, size_t *len)
{
    char hdr[128];
    int h = snprintf(hdr, sizeof hdr,
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, D);
    int total = 10 + h + 1, pad = (64 - total % 64) % 64;
    size_t hl = (size_t)(h + pad + 1), n = 10 + hl + (size_t)rows * D * 4;
    unsigned char *b = malloc(n);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)(hl & 0xff);
    b[9] = (unsigned char)(hl >> 8);
    memcpy(b + 10, hdr, (size_t)h);
    memset(b + 10 + h, ' ', (size_t)pad);
    b[10 + hl - 1] = '\n';
    float *x = (float *)(void *)(b + 10 + hl);
    for (int i = 0; i < rows * D; i++) x[i] = (float)(i % 7) / 8.0f;
    *len = n;
    return b;
}

/* Sends the request line, headers and the first `first` body bytes. */
static void slow_open(slow *u, const pg_srv *s, const char *tok, const char *ds, const char *ctype,
                      unsigned char *body, size_t len, size_t first)
{
    u->fd = dial(s);
    u->body = body;
    u->len = len;
    char head[512];
    int n = snprintf(head, sizeof head,
                     "POST /v1/datasets/%s/rows HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: "
                     "Bearer %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: "
                     "close\r\n\r\n",
                     ds, tok, ctype, len);
    ck_assert_int_eq(send_all(u->fd, head, (size_t)n), 0);
    ck_assert_int_eq(send_all(u->fd, body, first), 0);
    u->sent = first;
}

/* 1 once the server has closed the connection (EOF or reset), else 0;
 * waits up to ms. Any response bytes are discarded. */
static int closed_by_server(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return 0;
    char buf[4096];
    for (;;) {
        ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0) return 1;
        if (r < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
    }
}

/* Sends the rest of the body and returns the response's status. */
static int slow_finish(slow *u)
{
    ck_assert_int_eq(send_all(u->fd, u->body + u->sent, u->len - u->sent), 0);
    char buf[8192];
    size_t k = 0;
    for (;;) {
        ssize_t r = recv(u->fd, buf + k, sizeof buf - 1 - k, 0);
        if (r <= 0) break;
        k += (size_t)r;
        if (k == sizeof buf - 1) break;
    }
    buf[k] = '\0';
    close(u->fd);
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1) status = -1;
    return status;
}

/* ---- K slow uploads: everything else goes on, the bounds answer -------- */

START_TEST(slow_uploads_do_not_stall_others)
{
    /* A pool of 2 on PostgreSQL: before appends spooled, 2 slow uploads
     * held both connections and every other request waited for the pool's
     * acquire timeout, then failed with 503. */
    const char *extra[] = {"--db-pool",
                           "2",
                           "--http-threads",
                           "2",
                           "--max-uploads",
                           "4",
                           "--max-uploads-per-token",
                           "3",
                           "--min-body-rate",
                           "0",
                           "--http-timeout-seconds",
                           "120",
                           NULL};
    pg_srv s;
    pg_test_srv_start(&s, extra);
    char ds[64], other[64];
    make_central(&s, ds);
    make_central(&s, other);
    ck_assert_int_eq(upload_json(&s, s.admin, other, 40), 200);

    size_t len;
    unsigned char *npy = npy_body(SLOW_ROWS, &len);
    slow u[4];
    for (int i = 0; i < 2; i++)
        slow_open(&u[i], &s, s.admin, ds, "application/x-npy", npy, len, 200);
    ck_assert_int_eq(wait_metric(&s, "privgen_uploads_in_flight", 2), 2);

    /* While both are open: reads, a job submission, another upload. */
    pg_resp r;
    req(&s, NULL, "GET", "/healthz", NULL, &r);
    ck_assert_int_eq(r.status, 200);
    pg_resp_free(&r);
    req(&s, s.admin, "GET", "/v1/datasets", NULL, &r);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    ck_assert_int_eq((int)json_array_size(json_object_get(r.json, "items")), 2);
    pg_resp_free(&r);
    ck_assert_int_eq(rows_of(&s, ds), 0);
    char job[512];
    snprintf(job, sizeof job,
             "{\"dataset_id\":\"%s\",\"method\":\"dp_sinkhorn\",\"model\":{\"hidden\":[8]},"
             "\"train\":{\"steps\":5,\"batch_size\":20},\"ot\":{\"max_iter\":10},"
             "\"privacy\":{\"noise_multiplier\":40},\"seed\":3}",
             other);
    req(&s, s.admin, "POST", "/v1/jobs?dry_run=true", job, &r);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    pg_resp_free(&r);
    req(&s, s.admin, "POST", "/v1/jobs", job, &r);
    ck_assert_msg(r.status == 202, "%ld %s", r.status, r.body);
    pg_resp_free(&r);
    ck_assert_int_eq(upload_json(&s, s.admin, other, 10), 200);
    ck_assert_int_eq(rows_of(&s, other), 50);

    /* A third slow upload fills the token's bound: the next gets 429. */
    slow_open(&u[2], &s, s.admin, ds, "application/x-npy", npy, len, 200);
    ck_assert_int_eq(wait_metric(&s, "privgen_uploads_in_flight", 3), 3);
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%s/rows", other);
    req(&s, s.admin, "POST", path, "{\"rows\":[[0,0]]}", &r);
    ck_assert_msg(r.status == 429, "%ld %s", r.status, r.body);
    ck_assert_str_eq(r.ctype, "application/problem+json");
    ck_assert_ptr_nonnull(strstr(r.body, "--max-uploads-per-token"));
    pg_resp_free(&r);

    /* Another token of the tenant takes the last slot; then all are taken. */
    req(&s, s.admin, "POST", "/v1/tokens", "{\"scope\":\"admin\"}", &r);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    char tok2[128];
    snprintf(tok2, sizeof tok2, "%s", json_string_value(json_object_get(r.json, "token")));
    pg_resp_free(&r);
    slow_open(&u[3], &s, tok2, ds, "application/x-npy", npy, len, 200);
    ck_assert_int_eq(wait_metric(&s, "privgen_uploads_in_flight", 4), 4);
    req(&s, tok2, "POST", path, "{\"rows\":[[0,0]]}", &r);
    ck_assert_msg(r.status == 503, "%ld %s", r.status, r.body);
    ck_assert_ptr_nonnull(strstr(r.body, "--max-uploads"));
    pg_resp_free(&r);
    ck_assert_int_eq(metric(&s, "privgen_uploads_refused_total{limit=\"token\"}"), 1);
    ck_assert_int_eq(metric(&s, "privgen_uploads_refused_total{limit=\"total\"}"), 1);
    ck_assert_int_eq(rows_of(&s, other), 50);
    ck_assert_int_eq(rows_of(&s, ds), 0);

    /* The slow uploads end normally, all four stored; slots come back. */
    for (int i = 0; i < 4; i++) ck_assert_int_eq(slow_finish(&u[i]), 200);
    ck_assert_int_eq(rows_of(&s, ds), 4 * SLOW_ROWS);
    ck_assert_int_eq(wait_metric(&s, "privgen_uploads_in_flight", 0), 0);
    ck_assert_int_eq(upload_json(&s, tok2, other, 5), 200);
    free(npy);
    pg_test_srv_end(&s);
}
END_TEST

/* ---- trickling bodies are cut; nothing of them is stored -------------- */

START_TEST(trickling_upload_is_cut_and_stores_nothing)
{
    const char *extra[] = {"--min-body-rate", "2000", "--body-grace-seconds", "1", NULL};
    pg_srv s;
    pg_test_srv_start(&s, extra);
    char ds[64];
    make_central(&s, ds);
    ck_assert_int_eq(upload_json(&s, s.admin, ds, 5), 200);

    size_t len;
    unsigned char *npy = npy_body(SLOW_ROWS, &len);
    const char *csv_rows = "0.5,0.5\n";
    size_t clen = 2000 * strlen(csv_rows);
    unsigned char *csv = malloc(clen);
    for (size_t i = 0; i < 2000; i++) memcpy(csv + i * 8, csv_rows, 8);
    slow u[2];
    /* Streamed (NPY: past its header, rows already written to the spool)
     * and buffered (CSV) formats. */
    slow_open(&u[0], &s, s.admin, ds, "application/x-npy", npy, len, 400);
    slow_open(&u[1], &s, s.admin, ds, "text/csv", csv, clen, 16);
    int cut[2] = {0, 0};
    for (int t = 0; t < 600 && !(cut[0] && cut[1]); t++) {
        for (int i = 0; i < 2; i++) {
            if (cut[i]) continue;
            /* 10 bytes a second, far below the 2000 asked for. */
            if (u[i].sent < u[i].len - 1 && send_all(u[i].fd, u[i].body + u[i].sent, 1) == 0)
                u[i].sent++;
            cut[i] = closed_by_server(u[i].fd, 50);
        }
        pg_sleep_ms(50);
    }
    ck_assert_msg(cut[0] && cut[1], "trickling uploads still open: npy %d csv %d", cut[0], cut[1]);
    for (int i = 0; i < 2; i++) close(u[i].fd);
    ck_assert_int_eq(wait_metric(&s, "privgen_bodies_cut_total", 2), 2);
    ck_assert_int_eq(wait_metric(&s, "privgen_uploads_in_flight", 0), 0);
    ck_assert_int_eq(rows_of(&s, ds), 5);

    /* A body sent at full speed is unaffected. */
    slow f;
    slow_open(&f, &s, s.admin, ds, "application/x-npy", npy, len, 0);
    ck_assert_int_eq(slow_finish(&f), 200);
    ck_assert_int_eq(rows_of(&s, ds), 5 + SLOW_ROWS);
    free(npy);
    free(csv);
    pg_test_srv_end(&s);
}
END_TEST

/* ---- headers, then silence: closed after the idle timeout -------------- */

START_TEST(silent_connection_is_closed)
{
    const char *extra[] = {"--http-timeout-seconds", "1", "--http-threads", "1", NULL};
    pg_srv s;
    pg_test_srv_start(&s, extra);
    char ds[64];
    make_central(&s, ds);
    size_t len;
    unsigned char *npy = npy_body(10, &len);
    slow u, h;
    slow_open(&u, &s, s.admin, ds, "application/x-npy", npy, len, 0);
    /* Half a request line and nothing more. */
    h.fd = dial(&s);
    ck_assert_int_eq(send_all(h.fd, "GET /v1/data", 12), 0);
    /* One HTTP thread serves them all: it is not held by either. */
    pg_resp r;
    req(&s, s.admin, "GET", "/v1/datasets", NULL, &r);
    ck_assert_int_eq(r.status, 200);
    pg_resp_free(&r);
    int closed = 0, hclosed = 0;
    for (int t = 0; t < 600 && !(closed && hclosed); t++) {
        if (!closed) closed = closed_by_server(u.fd, 50);
        if (!hclosed) hclosed = closed_by_server(h.fd, 50);
    }
    ck_assert(closed && hclosed);
    close(u.fd);
    close(h.fd);
    ck_assert_int_eq(rows_of(&s, ds), 0);
    ck_assert_int_eq(wait_metric(&s, "privgen_uploads_in_flight", 0), 0);
    free(npy);
    pg_test_srv_end(&s);
}
END_TEST

/* ---- headers that trickle ---------------------------------------------- */

/* A request whose headers come one byte every 300 ms: each byte restarts
 * the idle timer (30 s here), so before the fix nothing ever cut it. The
 * whole header phase is bounded by --header-timeout-seconds (2 here): the
 * server closes it while the bytes still come, well before a deadline of
 * 25 s, with no response. */
/* GET path on a fresh connection: the status, or 0 when no response came
 * within ms. */
static int quick_status(const pg_srv *s, const char *path, int ms)
{
    int fd = dial(s);
    char head[256];
    int n = snprintf(head, sizeof head,
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
    int status = 0;
    if (send_all(fd, head, (size_t)n) == 0) {
        struct pollfd p = {fd, POLLIN, 0};
        char buf[512];
        if (poll(&p, 1, ms) > 0) {
            ssize_t r = recv(fd, buf, sizeof buf - 1, 0);
            if (r > 0) {
                buf[r] = '\0';
                if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1) status = 0;
            }
        }
    }
    close(fd);
    return status;
}

START_TEST(trickling_headers_are_cut)
{
    /* Through the environment (PRIVGEN_HEADER_TIMEOUT_SECONDS): a privgend
     * without the setting ignores it, so this test runs against it too. */
    const char *extra[] = {"--http-timeout-seconds", "30", NULL};
    setenv("PRIVGEN_HEADER_TIMEOUT_SECONDS", "2", 1);
    pg_srv s;
    pg_test_srv_start(&s, extra);
    unsetenv("PRIVGEN_HEADER_TIMEOUT_SECONDS");
    int fd = dial(&s);
    ck_assert_int_eq(send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n", 32), 0);
    const char *more =
        "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    int closed = 0;
    for (int i = 0; i < 83 && !closed; i++) { /* about 25 s */
        if (send(fd, more + (i % 80), 1, MSG_NOSIGNAL) != 1) {
            closed = 1;
            break;
        }
        closed = closed_by_server(fd, 300);
    }
    close(fd);
    ck_assert_msg(closed, "a connection trickling its headers was never cut");
    /* a normal request still works */
    pg_resp r;
    req(&s, NULL, "GET", "/healthz", NULL, &r);
    ck_assert_int_eq(r.status, 200);
    pg_resp_free(&r);
    pg_test_srv_end(&s);
}
END_TEST

/* --max-connections 10 and 10 clients stuck in their headers (long idle
 * and header timeouts, so neither frees them): before the fix they held
 * every slot and /healthz was refused. Now connections waiting for headers
 * may hold at most 8 (the oldest is cut beyond), so /healthz answers. */
START_TEST(health_check_gets_in_past_stuck_headers)
{
    const char *extra[] = {"--http-timeout-seconds", "120", "--max-connections", "10", NULL};
    setenv("PRIVGEN_HEADER_TIMEOUT_SECONDS", "120", 1);
    pg_srv s;
    pg_test_srv_start(&s, extra);
    unsetenv("PRIVGEN_HEADER_TIMEOUT_SECONDS");
    enum { K = 10 };
    int fd[K];
    for (int i = 0; i < K; i++) {
        fd[i] = dial(&s);
        ck_assert_int_eq(send_all(fd[i], "GET /healthz HTTP/1.1\r\nHo", 25), 0);
        pg_sleep_ms(20); /* in order: the oldest are the first */
    }
    /* Each try waits 2 s for an answer (a connection the server does not
     * accept sits in the kernel's backlog: connect succeeds, no answer
     * comes); 15 tries, far below the idle and header timeouts. */
    int st = 0;
    for (int t = 0; t < 15 && st != 200; t++) st = quick_status(&s, "/healthz", 2000);
    ck_assert_msg(st == 200, "/healthz refused while %d clients hold their headers (%d)", K, st);
    /* the ones cut were the oldest waiters; the newest are still open */
    int cut = 0;
    for (int i = 0; i < K; i++) cut += closed_by_server(fd[i], 10);
    ck_assert_int_ge(cut, 2);
    ck_assert_int_eq(closed_by_server(fd[K - 1], 10), 0);
    for (int i = 0; i < K; i++) close(fd[i]);
    pg_test_srv_end(&s);
}
END_TEST

/* ---- a second server on a port in use ---------------------------------- */

/* Before, SO_REUSEPORT let it start, report ready and take half the
 * connections. Now it exits non-zero saying "address in use", unless every
 * server on the port asked to share it with --reuse-port. */
START_TEST(second_server_on_a_used_port_refuses_to_start)
{
    pg_srv a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    ck_assert_int_eq(pg_srv_start(&a, NULL), 0);
    char listen_at[32];
    snprintf(listen_at, sizeof listen_at, "127.0.0.1:%u", a.port);
    const char *extra[] = {"--listen", listen_at, NULL};
    ck_assert_int_eq(pg_srv_prepare(&b), 0);
    ck_assert_int_eq(pg_srv_spawn(&b, NULL, extra), 0);
    int st = 0;
    pid_t got = 0;
    for (int i = 0; i < 600 && got != b.pid; i++) { /* 60 s at most */
        got = waitpid(b.pid, &st, WNOHANG);
        if (got != b.pid) pg_sleep_ms(100);
    }
    if (got != b.pid) {
        kill(b.pid, SIGKILL);
        waitpid(b.pid, NULL, 0);
    }
    ck_assert_msg(got == b.pid, "a second privgend on port %u kept running", a.port);
    b.pid = 0;
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    char log[160], text[8192] = "";
    snprintf(log, sizeof log, "%s/privgend.log", b.dir);
    FILE *f = fopen(log, "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    ck_assert_msg(strstr(text, "address in use") != NULL, "log: %s", text);
    /* the first one is untouched */
    pg_resp r;
    req(&a, a.admin, "GET", "/v1/datasets", NULL, &r);
    ck_assert_int_eq(r.status, 200);
    pg_resp_free(&r);
    pg_test_srv_end(&a);
    pg_srv_cleanup(&b);
}
END_TEST

static Suite *suite(void)
{
    Suite *su = suite_create("integration_slow");
    TCase *tc = tcase_create("slow");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, slow_uploads_do_not_stall_others);
    tcase_add_test(tc, trickling_upload_is_cut_and_stores_nothing);
    tcase_add_test(tc, silent_connection_is_closed);
    tcase_add_test(tc, trickling_headers_are_cut);
    tcase_add_test(tc, health_check_gets_in_past_stuck_headers);
    tcase_add_test(tc, second_server_on_a_used_port_refuses_to_start);
    suite_add_tcase(su, tc);
    return su;
}

PG_ITEST_MAIN(suite)
