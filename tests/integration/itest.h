/* tests/integration/itest.h - start/stop a privgend and talk HTTP to it.
 *
 * pg_srv_start launches the binary with --listen 127.0.0.1:0 and a port file
 * in its data dir, and waits for the port; stderr goes to <dir>/privgend.log.
 * pg_http sends one request on a fresh connection and returns status, body
 * (parsed as JSON when it is JSON), Location, Content-Type, ETag,
 * Cache-Control and Vary.
 *
 * Storage backend: by default privgend keeps its SQLite database in the data
 * dir. When PRIVGEN_TEST_DB_URL is set, every server gets `--db URL` with
 * each "%s" in it replaced by a database name unique to the server's scratch
 * dir (the same across restarts of that server), and, when
 * PRIVGEN_TEST_DB_CREATE is set, the command `$PRIVGEN_TEST_DB_CREATE <name>`
 * runs once before the first start (e.g. createdb on a throwaway cluster).
 * Tests reach the same storage through pg_srv_db (service/store/db.h), never
 * through files, except where pg_itest_sqlite() says the files exist.
 */
#ifndef PG_ITEST_H
#define PG_ITEST_H

#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "service/store/db.h"

typedef struct pg_srv {
    pid_t pid;
    char dir[64];  /* scratch dir: data/ and the log live here */
    char data[96]; /* --data-dir */
    unsigned port;
    char admin[96]; /* the admin token */
} pg_srv;

/* 1 when the servers use the default SQLite storage in their data dir. */
static inline int pg_itest_sqlite(void)
{
    const char *u = getenv("PRIVGEN_TEST_DB_URL");
    return !u || !*u;
}

/* The name "%s" stands for in PRIVGEN_TEST_DB_URL: pgitest-XXXXXX becomes
 * privgen_pgitest_xxxxxx (a valid lower-case database name). */
static inline void pg_srv_db_name(const pg_srv *s, char *buf, size_t cap)
{
    const char *base = strrchr(s->dir, '/');
    size_t k = (size_t)snprintf(buf, cap, "privgen_");
    for (const char *p = base ? base + 1 : s->dir; *p && k + 1 < cap; p++)
        buf[k++] = (*p >= 'A' && *p <= 'Z') ? (char)(*p + 32) : (*p == '-' ? '_' : *p);
    buf[k < cap ? k : cap - 1] = '\0';
}

/* The storage URL of s (after its scratch dir exists). */
static inline void pg_srv_db_url(const pg_srv *s, char *buf, size_t cap)
{
    const char *u = getenv("PRIVGEN_TEST_DB_URL");
    if (!u || !*u) {
        snprintf(buf, cap, "sqlite:%s/privgen.db", s->data);
        return;
    }
    char name[64];
    pg_srv_db_name(s, name, sizeof name);
    size_t at = 0;
    for (const char *p = u; *p && at + 1 < cap; p++) {
        if (p[0] == '%' && p[1] == 's') {
            int w = snprintf(buf + at, cap - at, "%s", name);
            at = at + (size_t)w < cap ? at + (size_t)w : cap - 1;
            p++;
        } else {
            buf[at++] = *p;
        }
    }
    buf[at] = '\0';
}

/* Opens s's storage from the test process (close with pg_db_close). */
static inline pg_db *pg_srv_db(const pg_srv *s)
{
    char url[512];
    pg_srv_db_url(s, url, sizeof url);
    pg_db *db = NULL;
    pg_error err = {0};
    if (pg_db_open(url, NULL, &db, &err)) {
        fprintf(stderr, "cannot open %s: %s\n", url, err.msg);
        return NULL;
    }
    return db;
}

static inline void pg_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Scratch dirs of this process's servers, so that a test which ends with
 * pg_srv_stop (a restart test, say) leaves nothing in /tmp: at exit the dir
 * of every server that was stopped is removed. A server still running at
 * exit means the test failed part-way: it is killed and its dir (with the
 * log) is kept and named on stderr. Check runs each test in a forked child,
 * so this happens at the end of every test, and for servers a suite
 * fixture started, at the end of the suite. */
typedef struct pg_itest_dir {
    char dir[64];
    pid_t pid;
    pid_t owner; /* the process that made the dir: a forked test inherits
                    its suite's entries and must leave them alone */
} pg_itest_dir;
static pg_itest_dir pg_itest_dirs[64];
static int pg_itest_ndirs;

static void pg_itest_atexit(void)
{
    for (int i = 0; i < pg_itest_ndirs; i++) {
        pg_itest_dir *e = &pg_itest_dirs[i];
        if (!e->dir[0] || e->owner != getpid()) continue;
        /* waitpid, not kill, decides: it only answers for our own children,
         * so a test that reaped its server itself (kill -9) and a pid reused
         * since are both "stopped". */
        if (e->pid > 0 && waitpid(e->pid, NULL, WNOHANG) == 0) {
            kill(e->pid, SIGKILL);
            waitpid(e->pid, NULL, 0);
            fprintf(stderr, "itest: kept %s (its server was still running)\n", e->dir);
            continue;
        }
        char cmd[96];
        snprintf(cmd, sizeof cmd, "rm -rf '%.63s'", e->dir);
        if (system(cmd) != 0) fprintf(stderr, "itest: cannot remove %s\n", e->dir);
    }
}

static inline pg_itest_dir *pg_itest_dir_of(const char *dir)
{
    for (int i = 0; i < pg_itest_ndirs; i++)
        if (!strcmp(pg_itest_dirs[i].dir, dir)) return &pg_itest_dirs[i];
    return NULL;
}

static inline void pg_itest_dir_add(const char *dir)
{
    if (pg_itest_ndirs == 0) atexit(pg_itest_atexit);
    if (pg_itest_ndirs < (int)(sizeof pg_itest_dirs / sizeof pg_itest_dirs[0])) {
        pg_itest_dir *e = &pg_itest_dirs[pg_itest_ndirs++];
        snprintf(e->dir, sizeof e->dir, "%s", dir);
        e->owner = getpid();
    }
}

/* Creates s->dir (and, on a server backend, s's database) unless s->dir is
 * set already. */
static inline int pg_srv_prepare(pg_srv *s)
{
    if (s->dir[0]) return 0;
    snprintf(s->dir, sizeof s->dir, "/tmp/pgitest-XXXXXX");
    if (!mkdtemp(s->dir)) return -1;
    pg_itest_dir_add(s->dir);
    snprintf(s->data, sizeof s->data, "%s/data", s->dir);
    const char *create = getenv("PRIVGEN_TEST_DB_CREATE");
    if (!pg_itest_sqlite() && create && *create) {
        char name[64], cmd[512];
        pg_srv_db_name(s, name, sizeof name);
        snprintf(cmd, sizeof cmd, "%s %s", create, name);
        if (system(cmd) != 0) return -1;
    }
    return 0;
}

/* Launches privgend for s (prepared) without waiting: storage db_url (NULL:
 * s's own, as pg_srv_db_url says), extra args NULL-terminated. */
static inline int pg_srv_spawn(pg_srv *s, const char *db_url, const char *const *extra)
{
    char own[512];
    pg_srv_db_url(s, own, sizeof own);
    char port_file[128], log[128];
    snprintf(port_file, sizeof port_file, "%s/port", s->dir);
    snprintf(log, sizeof log, "%s/privgend.log", s->dir);
    unlink(port_file);
    const char *argv[32] = {PRIVGEND_PATH, "--listen",    "127.0.0.1:0", "--data-dir",
                            s->data,       "--port-file", port_file};
    int argc = 7;
    if (db_url || !pg_itest_sqlite()) {
        argv[argc++] = "--db";
        argv[argc++] = db_url ? db_url : own;
    }
    for (int i = 0; extra && extra[i] && argc < 31; i++) argv[argc++] = extra[i];
    argv[argc] = NULL;
    s->port = 0;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) dup2(fd, 2);
        execv(PRIVGEND_PATH, (char *const *)argv);
        _exit(127);
    }
    s->pid = pid;
    pg_itest_dir *reg = pg_itest_dir_of(s->dir);
    if (reg) reg->pid = pid;
    return 0;
}

/* Waits for the port file of s's spawned server: 0 and s->port, or -1 when
 * the server exited or wrote none within 60 s. A deadline, not a count of
 * sleeps: on a loaded machine a start (exec, migrations, workers) takes
 * seconds, not milliseconds. */
static inline int pg_srv_wait_port(pg_srv *s)
{
    char port_file[128];
    snprintf(port_file, sizeof port_file, "%s/port", s->dir);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (t = t0; t.tv_sec - t0.tv_sec < 60; clock_gettime(CLOCK_MONOTONIC, &t)) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            int ok = fscanf(f, "%u", &s->port) == 1;
            fclose(f);
            if (ok) break;
        }
        int st;
        if (waitpid(s->pid, &st, WNOHANG) == s->pid) return -1;
        pg_sleep_ms(10);
    }
    return s->port ? 0 : -1;
}

/* s->admin from DATA_DIR/admin.token; -1 when there is none. */
static inline int pg_srv_read_admin(pg_srv *s)
{
    char tp[128];
    snprintf(tp, sizeof tp, "%s/admin.token", s->data);
    FILE *f = fopen(tp, "r");
    if (!f || !fgets(s->admin, sizeof s->admin, f)) {
        if (f) fclose(f);
        return -1;
    }
    fclose(f);
    s->admin[strcspn(s->admin, "\n")] = '\0';
    return 0;
}

/* Creates s->dir on first use (s->dir[0] == 0); extra args NULL-terminated. */
static inline int pg_srv_start(pg_srv *s, const char *const *extra)
{
    if (pg_srv_prepare(s) || pg_srv_spawn(s, NULL, extra) || pg_srv_wait_port(s)) return -1;
    return pg_srv_read_admin(s);
}

/* SIGTERM and wait; returns the exit status (0 for a clean shutdown). */
static inline int pg_srv_stop(pg_srv *s)
{
    if (s->pid <= 0) return -1;
    kill(s->pid, SIGTERM);
    int st = 0;
    waitpid(s->pid, &st, 0);
    pg_itest_dir *reg = pg_itest_dir_of(s->dir);
    if (reg) reg->pid = 0;
    s->pid = 0;
    s->port = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* kill -9 and reap: a crash, nothing shut down cleanly; s is stopped
 * afterwards (pg_srv_start brings it back on the same data and storage). */
static inline void pg_srv_kill9(pg_srv *s)
{
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    pg_itest_dir *reg = pg_itest_dir_of(s->dir);
    if (reg) reg->pid = 0;
    s->pid = 0;
    s->port = 0;
}

static inline void pg_srv_cleanup(pg_srv *s)
{
    if (s->pid > 0) pg_srv_stop(s);
    if (s->dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
        if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", s->dir);
        pg_itest_dir *reg = pg_itest_dir_of(s->dir);
        if (reg) reg->dir[0] = '\0';
    }
}

typedef struct pg_resp {
    long status;
    char *body;
    size_t len;
    char location[256];
    char ctype[128];
    char etag[128]; /* ETag, empty when none */
    char cc[128];   /* Cache-Control, empty when none */
    char vary[64];  /* Vary, empty when none */
    json_t *json;   /* parsed body when it is JSON (incl. problem+json) */
} pg_resp;

static size_t pg_itest_body(char *p, size_t sz, size_t n, void *ctx)
{
    pg_resp *r = ctx;
    size_t k = sz * n;
    char *b = realloc(r->body, r->len + k + 1);
    if (!b) return 0;
    memcpy(b + r->len, p, k);
    r->body = b;
    r->len += k;
    r->body[r->len] = '\0';
    return k;
}

static size_t pg_itest_header(char *p, size_t sz, size_t n, void *ctx)
{
    pg_resp *r = ctx;
    size_t k = sz * n;
    char line[512];
    size_t m = k < sizeof line - 1 ? k : sizeof line - 1;
    memcpy(line, p, m);
    line[m] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    if (!strncasecmp(line, "Location: ", 10))
        snprintf(r->location, sizeof r->location, "%.250s", line + 10);
    if (!strncasecmp(line, "Content-Type: ", 14))
        snprintf(r->ctype, sizeof r->ctype, "%.120s", line + 14);
    if (!strncasecmp(line, "ETag: ", 6)) snprintf(r->etag, sizeof r->etag, "%.120s", line + 6);
    if (!strncasecmp(line, "Cache-Control: ", 15))
        snprintf(r->cc, sizeof r->cc, "%.120s", line + 15);
    if (!strncasecmp(line, "Vary: ", 6)) snprintf(r->vary, sizeof r->vary, "%.60s", line + 6);
    return k;
}

/* pg_http with a client limit of timeout_s seconds for the whole exchange. */
static inline void pg_http_within(const pg_srv *s, const char *method, const char *path,
                                  const char *token, const char *ctype, const void *body,
                                  size_t len, const char *const *headers, long timeout_s,
                                  pg_resp *out)
{
    memset(out, 0, sizeof *out);
    CURL *c = curl_easy_init();
    char url[512], h[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", s->port, path);
    struct curl_slist *hl = NULL;
    if (token) {
        snprintf(h, sizeof h, "Authorization: Bearer %s", token);
        hl = curl_slist_append(hl, h);
    }
    if (ctype) {
        snprintf(h, sizeof h, "Content-Type: %s", ctype);
        hl = curl_slist_append(hl, h);
    }
    hl = curl_slist_append(hl, "Expect:");
    for (int i = 0; headers && headers[i]; i++) hl = curl_slist_append(hl, headers[i]);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, pg_itest_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, pg_itest_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    else
        out->status = -(long)rc;
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    if (out->body && strstr(out->ctype, "json"))
        out->json = json_loadb(out->body, out->len, 0, NULL);
}

/* headers: NULL-terminated "Name: value" strings, may be NULL. The client
 * gives up after 60 s. */
static inline void pg_http(const pg_srv *s, const char *method, const char *path, const char *token,
                           const char *ctype, const void *body, size_t len,
                           const char *const *headers, pg_resp *out)
{
    pg_http_within(s, method, path, token, ctype, body, len, headers, 60, out);
}

static inline void pg_resp_free(pg_resp *r)
{
    free(r->body);
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}

/* PG_ITEST_MAIN(make_suite) defines main() for a suite that starts its own
 * servers: it runs the Check suite built by make_suite() between libcurl's
 * global set-up and clean-up, and exits nonzero on any failure. */
#define PG_ITEST_MAIN(make_suite)                                                                  \
    int main(void)                                                                                 \
    {                                                                                              \
        curl_global_init(CURL_GLOBAL_DEFAULT);                                                     \
        SRunner *sr = srunner_create(make_suite());                                                \
        srunner_run_all(sr, CK_NORMAL);                                                            \
        int failed = srunner_ntests_failed(sr);                                                    \
        srunner_free(sr);                                                                          \
        curl_global_cleanup();                                                                     \
        return failed ? 1 : 0;                                                                     \
    }

#endif
