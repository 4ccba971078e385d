#include "api/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api/internal.h"
#include "api/body_cache.h"
#include "api/header_guard.h"
#include "api/router.h"
#include "api/upload_gate.h"
#include "service/auth.h"
#include "service/jobs/jobs.h"
#include "service/log.h"

struct pg_api_server {
    struct MHD_Daemon *daemon;
    pg_api_app app;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static enum MHD_Result queue(pg_req *r)
{
    if (!r->status) pg_api_problem(r, 500, "the handler produced no response", NULL, NULL);
    struct MHD_Response *resp = r->custom;
    r->custom = NULL;
    if (resp) {
        free(r->resp);
    } else if (r->status == 304) {
        /* No body. libmicrohttpd 0.9.75 still writes "Content-Length: 0"
         * (RFC 9110 8.6 wants none, or the 200's length, and the library
         * offers no way to drop it: a manual header is sent twice, a
         * callback response is chunked and writes a terminator after the
         * 304). Harmless: no client reads a 304 body, and caches do not
         * take Content-Length from a 304 (RFC 9111 3.2). */
        free(r->resp);
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    } else {
        resp = MHD_create_response_from_buffer(r->resp_len, r->resp ? r->resp : (void *)"",
                                               r->resp ? MHD_RESPMEM_MUST_FREE
                                                       : MHD_RESPMEM_PERSISTENT);
    }
    if (!resp) return MHD_NO;
    r->resp = NULL; /* owned by MHD now */
    if (r->retry_after[0]) MHD_add_response_header(resp, "Retry-After", r->retry_after);
    if (r->resp_type) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->resp_type);
    if (r->location[0]) MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, r->location);
    if (r->status == 401) MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (r->status == 405 && r->allow[0])
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
    /* Only a success may be cached (api/h_samples.c decides how long); a
     * cacheable body depends on who asks only through authorization, so
     * private caches key it by the Authorization header too. */
    int cacheable = r->cache_control && (r->status == 200 || r->status == 304);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
                            cacheable ? r->cache_control : "no-store");
    if (cacheable) MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Authorization");
    if (cacheable && r->etag[0]) MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, r->etag);
    enum MHD_Result ok = MHD_queue_response(r->conn, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    r->queued = 1;
    return ok;
}

/* Metrics and logs outlive the request: label with static strings only. */
static const char *method_label(const char *m)
{
    static const char *const known[] = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(m, known[i])) return known[i];
    return "OTHER";
}

static int valid_idem_key(const char *k)
{
    size_t n = strlen(k);
    if (n == 0 || n > 128) return 0;
    for (size_t i = 0; i < n; i++)
        if (k[i] < 0x21 || k[i] > 0x7e) return 0;
    return 1;
}

/* Routing, authentication, authorization and early limits: everything that
 * can be decided from the request line and headers. */
static enum MHD_Result fp_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    pg_req *r = cls;
    /* Each argument as '?' key NUL, then 'N' (no value: "?k") or '=' value
     * NUL: keys and values hold no NUL, so the encoding is unambiguous. */
    pg_sha256_update(&r->fp, "?", 1);
    pg_sha256_update(&r->fp, key, strlen(key) + 1);
    if (value) {
        pg_sha256_update(&r->fp, "=", 1);
        pg_sha256_update(&r->fp, value, strlen(value) + 1);
    } else {
        pg_sha256_update(&r->fp, "N", 1);
    }
    return MHD_YES;
}

static void begin(pg_req *r, const char *url)
{
    if (snprintf(r->path, sizeof r->path, "%s", url) >= (int)sizeof r->path) {
        pg_api_problem(r, 404, "no such route", NULL, NULL);
        return;
    }
    int known;
    r->route = pg_api_route_find(r->method, r->path, r->params, &known);
    if (!r->route) {
        if (known) pg_api_route_allow(r->path, r->allow, sizeof r->allow);
        pg_api_problem(r, known ? 405 : 404,
                       known ? "this route does not support the method" : "no such route", NULL,
                       NULL);
        return;
    }
    r->route_label = r->route->pattern;
    if (r->route->auth != PG_AUTH_NONE) {
        int state;
        pg_error err = {0};
        /* Only a route that may tolerate a revocation seen late reads the
         * cache (api/internal.h): everything that writes, mints or reads a
         * tenant's data asks the database, which a revoke on any replica
         * has already changed when it returns. */
        pg_auth_cache *cache = r->route->auth == PG_AUTH_READ_CACHED ? r->app->auth_cache : NULL;
        if (pg_auth_check_cached(cache, r->app->db, pg_api_header(r, MHD_HTTP_HEADER_AUTHORIZATION),
                                 (int64_t)time(NULL), &r->tok, &state, &err)) {
            err.code = PG_EUNAVAIL; /* 503 whatever failed: a retry may succeed */
            pg_api_fail(r, &err);
            return;
        }
        if (state != PG_TOKEN_OK) {
            pg_api_problem(r, 401,
                           state == PG_TOKEN_REVOKED   ? "this token has been revoked"
                           : state == PG_TOKEN_EXPIRED ? "this token has expired"
                                                       : "a valid 'Authorization: Bearer "
                                                         "<token>' header is required",
                           NULL, NULL);
            return;
        }
        r->authed = 1;
        if (r->route->auth == PG_AUTH_ADMIN && r->tok.scope != PG_SCOPE_ADMIN) {
            pg_api_problem(r, 403, "this route needs a token with the admin scope", NULL, NULL);
            return;
        }
    }
    const char *key = pg_api_header(r, "Idempotency-Key");
    if (key && !strcmp(r->method, "POST") && !r->route->no_replay) {
        if (!valid_idem_key(key)) {
            pg_api_problem(r, 400, "Idempotency-Key must be 1 to 128 visible ASCII characters",
                           "Idempotency-Key", NULL);
            return;
        }
        snprintf(r->idem_key, sizeof r->idem_key, "%s", key);
        /* The fingerprint covers what makes two requests "the same": route,
         * content type, the X-Rows header, the rows' declaration (hashed only
         * when sent, so fingerprints of requests without one are unchanged)
         * and the body bytes. */
        const char *ct = pg_api_header(r, MHD_HTTP_HEADER_CONTENT_TYPE);
        const char *xr = pg_api_header(r, "X-Rows");
        pg_sha256_init(&r->fp);
        pg_sha256_update(&r->fp, r->method, strlen(r->method) + 1);
        pg_sha256_update(&r->fp, r->path, strlen(r->path) + 1);
        pg_sha256_update(&r->fp, ct ? ct : "", ct ? strlen(ct) + 1 : 1);
        pg_sha256_update(&r->fp, xr ? xr : "", xr ? strlen(xr) + 1 : 1);
        const char *decl = pg_api_header(r, "Privgen-Declaration");
        if (decl) {
            pg_sha256_update(&r->fp, "Privgen-Declaration", sizeof "Privgen-Declaration");
            pg_sha256_update(&r->fp, decl, strlen(decl) + 1);
        }
        /* Query arguments change what a POST does (?dry_run=true, ?scale=):
         * a dry run retried under the key of a real submission must not
         * replay the submission. Hashed in the order sent, and only when
         * present, so fingerprints of requests without any stay as they
         * were; the same arguments in another order count as different
         * (refused with 422, never wrongly replayed). */
        MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, fp_query_arg, r);
    }
    if (r->route->begin) {
        r->route->begin(r);
        return;
    }
    const char *cl = pg_api_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && strtoull(cl, NULL, 10) > r->app->cfg->max_body)
        pg_api_problem(r, 413, "the request body exceeds --max-body", NULL, NULL);
}

static void consume(pg_req *r, const char *data, size_t len)
{
    r->received += len;
    if (r->idem_key[0]) pg_sha256_update(&r->fp, data, len);
    if (r->failed) return;
    if (r->feed) {
        if (r->feed(r, data, len)) r->failed = 1;
        return;
    }
    if (len > r->app->cfg->max_body - r->body_len) {
        free(r->body);
        r->body = NULL;
        r->body_len = r->body_cap = 0;
        r->too_large = r->failed = 1;
        pg_api_problem(r, 413, "the request body exceeds --max-body", NULL, NULL);
        return;
    }
    if (r->body_len + len + 1 > r->body_cap) {
        size_t cap = r->body_cap ? r->body_cap : 4096;
        while (cap < r->body_len + len + 1) cap *= 2;
        if (cap > r->app->cfg->max_body + 1) cap = r->app->cfg->max_body + 1;
        char *b = realloc(r->body, cap);
        if (!b) {
            r->failed = 1;
            pg_api_problem(r, 503, "out of memory buffering the request body", NULL, NULL);
            return;
        }
        r->body = b;
        r->body_cap = cap;
    }
    memcpy(r->body + r->body_len, data, len);
    r->body_len += len;
    r->body[r->body_len] = '\0';
}

static void replay_or_handle(pg_req *r)
{
    if (!r->idem_key[0]) {
        r->route->handle(r);
        return;
    }
    unsigned char fp[32];
    pg_sha256_final(&r->fp, fp);
    int state;
    pg_idem_response prev;
    pg_error err = {0};
    if (pg_db_idem_begin(r->app->db, r->tok.tenant, r->tok.id, r->idem_key, fp, &state, &prev,
                         &err)) {
        pg_api_fail(r, &err);
        return;
    }
    switch (state) {
    case PG_IDEM_MISMATCH:
        pg_api_problem(r, 422, "this Idempotency-Key was used with a different request",
                       "Idempotency-Key", "reused with a different request");
        return;
    case PG_IDEM_BUSY:
        pg_api_problem(r, 409, "a request with this Idempotency-Key is still in progress",
                       "Idempotency-Key", "in progress");
        return;
    case PG_IDEM_REPLAY:
        if (prev.location) snprintf(r->location, sizeof r->location, "%s", prev.location);
        pg_api_send_text(r, prev.status, "application/json", prev.body, prev.body_len);
        free(prev.location);
        return;
    default:
        break;
    }
    r->route->handle(r);
    /* Only successes are remembered: a failed attempt changed nothing, so
     * its retry must be evaluated afresh. */
    pg_idem_response save = {r->status, r->location[0] ? r->location : NULL, r->resp, r->resp_len};
    int ok = r->status >= 200 && r->status < 300;
    if (pg_db_idem_finish(r->app->db, r->tok.tenant, r->tok.id, r->idem_key, ok ? &save : NULL,
                          &err))
        pg_log_event("error", "cannot record an idempotent response", NULL);
}

static void release_slot(pg_req *r)
{
    if (!r->upload_slot) return;
    pg_upload_gate_leave(r->app->uploads, r->tok.id);
    r->upload_slot = 0;
}

/* A body must average --min-body-rate bytes a second once its first
 * --body-grace-seconds are over: a client trickling bytes (each byte resets
 * the idle timeout) would otherwise keep its connection and everything its
 * request holds for as long as it likes. */
static int body_too_slow(const pg_req *r, size_t len)
{
    const pg_svc_config *cfg = r->app->cfg;
    if (cfg->min_body_rate <= 0) return 0;
    double late = (now_ms() - r->t0) / 1e3 - cfg->body_grace_s;
    return late > 0 && (double)(r->received + len) < late * cfg->min_body_rate;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    pg_req *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r) return MHD_NO;
        r->app = cls;
        r->conn = c;
        r->method = method_label(method);
        r->route_label = "unmatched";
        r->t0 = now_ms();
        *con_cls = r;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        pg_header_guard_request(r->app->headers, ci ? ci->socket_context : NULL);
        begin(r, url);
        /* Answer early (auth failure, 413 by Content-Length): MHD then skips
         * the body and closes the connection after the response. */
        if (!r->status) return MHD_YES;
        release_slot(r);
        return queue(r);
    }
    if (*upload_data_size) {
        size_t len = *upload_data_size;
        *upload_data_size = 0;
        if (body_too_slow(r, len)) {
            /* No response can be queued mid-body (libmicrohttpd 0.9.75):
             * closing the connection is the answer, as nginx does. */
            r->cut = 1;
            if (r->app->uploads) pg_upload_gate_count_cut(r->app->uploads);
            pg_log_event("warn", "request body arrived too slowly; connection closed",
                         "\"reason\":\"min_body_rate\"");
            return MHD_NO;
        }
        if (!r->queued) consume(r, upload_data, len);
        return MHD_YES;
    }
    if (r->queued) return MHD_YES;
    if (!r->status) replay_or_handle(r);
    /* The body is in and handled: the slot is free before the client can
     * see the answer (and send its next upload). */
    release_slot(r);
    if (r->stream_free) {
        r->stream_free(r);
        r->stream_free = NULL;
    }
    return queue(r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    pg_api_app *app = cls;
    pg_req *r = *con_cls;
    if (!r) return;
    *con_cls = NULL;
    /* The connection now waits for its next request's headers. */
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    pg_header_guard_finished(app->headers, ci ? ci->socket_context : NULL);
    if (r->stream_free) r->stream_free(r);
    double ms = now_ms() - r->t0;
    /* 499: the client went away before an answer was sent (nginx's code);
     * 408: we closed a connection whose body came too slowly. */
    int status = r->cut ? 408 : r->queued ? r->status : 499;
    release_slot(r);
    (void)toe;
    pg_log_request(r->method, r->route_label, status, ms, r->authed ? r->tok.id : NULL);
    pg_metrics_observe(app->metrics, r->method, r->route_label, status, ms / 1e3);
    if (r->custom) MHD_destroy_response(r->custom);
    free(r->body);
    free(r->resp);
    free(r);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    pg_api_app *app = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci) pg_header_guard_started(app->headers, ci->connect_fd, socket_context);
    } else {
        pg_header_guard_closed(app->headers, socket_context);
    }
}

/* The listening socket, bound here rather than by libmicrohttpd so that a
 * port another process listens on is refused with a clear reason: only
 * SO_REUSEADDR (restart over TIME_WAIT) unless --reuse-port asks to share
 * the port with other listeners (SO_REUSEPORT: the kernel then splits the
 * connections between them). */
static int open_listen(const struct sockaddr_in *sa, int reuse_port, const char *listen_at,
                       int *out, pg_error *err)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return pg_error_set(err, PG_EIO, "cannot create a socket: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one)) {
        int e = errno;
        close(fd);
        return pg_error_set(err, PG_EIO, "cannot set SO_REUSEPORT for --reuse-port: %s",
                            strerror(e));
    }
    if (bind(fd, (const struct sockaddr *)sa, sizeof *sa) || listen(fd, 128)) {
        int e = errno;
        close(fd);
        if (e == EADDRINUSE)
            return pg_error_set(err, PG_EIO,
                                "cannot listen on %s: address in use (another server listens "
                                "there; stop it, pick another --listen port, or give every "
                                "server on the port --reuse-port to share it)",
                                listen_at);
        return pg_error_set(err, PG_EIO, "cannot listen on %s: %s", listen_at, strerror(e));
    }
    *out = fd;
    return PG_OK;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = '\0';
    pg_log_event("warn", msg, "\"source\":\"microhttpd\"");
}

static int parse_listen(const char *s, struct sockaddr_in *sa, pg_error *err)
{
    const char *colon = strrchr(s, ':');
    char host[256];
    if (!colon || (size_t)(colon - s) >= sizeof host)
        return pg_error_set(err, PG_EINVAL, "--listen must be HOST:PORT, got '%s'", s);
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    char *end;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (!colon[1] || *end || port > 65535)
        return pg_error_set(err, PG_EINVAL, "--listen port must be 0..65535, got '%s'", colon + 1);
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (!strcmp(host, "localhost")) strcpy(host, "127.0.0.1");
    if (!*host) strcpy(host, "0.0.0.0");
    if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
        return pg_error_set(err, PG_EINVAL, "--listen host must be an IPv4 address, got '%s'",
                            host);
    return PG_OK;
}

int pg_api_server_start(const pg_svc_config *cfg, pg_db *db, pg_metrics *metrics,
                        pg_api_server **out, unsigned *port, pg_error *err)
{
    return pg_api_server_start_jobs(cfg, db, metrics, NULL, out, port, err);
}

int pg_api_server_start_jobs(const pg_svc_config *cfg, pg_db *db, pg_metrics *metrics,
                             struct pg_jobs *jobs, pg_api_server **out, unsigned *port,
                             pg_error *err)
{
    return pg_api_server_start_all(cfg, db, metrics, jobs, NULL, out, port, err);
}

int pg_api_server_start_all(const pg_svc_config *cfg, pg_db *db, pg_metrics *metrics,
                            struct pg_jobs *jobs, struct pg_reports *reports, pg_api_server **out,
                            unsigned *port, pg_error *err)
{
    struct sockaddr_in sa;
    if (parse_listen(cfg->listen, &sa, err)) return PG_EINVAL;
    int lfd = -1;
    if (open_listen(&sa, cfg->reuse_port, cfg->listen, &lfd, err)) return PG_EIO;
    pg_api_server *s = calloc(1, sizeof *s);
    if (!s) {
        close(lfd);
        return pg_error_set(err, PG_ENOMEM, "out of memory starting the server");
    }
    unsigned max_conns = cfg->max_connections > 0 ? (unsigned)cfg->max_connections : 1000u;
    /* Caches: 1024 token slots kept 10 s at most (see service/auth.h for the
     * invalidation contract); seeded samples bodies of up to 1 MiB each,
     * 64 MiB and 1024 bodies in all (api/body_cache.h). */
    s->app = (pg_api_app){
        cfg, db, metrics, jobs, pg_auth_cache_create(1024, 10.0),
        pg_body_cache_create((size_t)64 << 20, 1024, (size_t)1 << 20), reports,
        /* NULL (no bound) when a caller's config leaves them 0. */
        cfg->max_uploads > 0 && cfg->max_uploads_per_token > 0
            ? pg_upload_gate_create((size_t)cfg->max_uploads, (size_t)cfg->max_uploads_per_token)
            : NULL,
        /* Connections waiting for request headers may hold all but a tenth
         * of the slots (at least 2 kept free): a health check still gets in
         * while slow clients fill the rest (api/header_guard.h). NULL (no
         * bound) when a caller's config leaves the timeout 0. */
        cfg->header_timeout_s > 0
            ? pg_header_guard_create(max_conns - (max_conns / 10 > 2 ? max_conns / 10
                                                  : max_conns > 2    ? 2
                                                                     : 0),
                                     (double)cfg->header_timeout_s)
            : NULL,
        pg_jobs_cpu(jobs)};
    s->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ITC | MHD_USE_ERROR_LOG, 0, NULL,
        NULL, on_request, &s->app, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)lfd, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)cfg->http_threads, MHD_OPTION_NOTIFY_COMPLETED, on_completed, &s->app,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, &s->app, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)cfg->http_timeout_s, MHD_OPTION_CONNECTION_LIMIT, max_conns,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg->max_conns_per_ip, MHD_OPTION_END);
    if (!s->daemon) {
        /* libmicrohttpd closed lfd on its failure paths. */
        pg_header_guard_free(s->app.headers);
        pg_upload_gate_free(s->app.uploads);
        pg_auth_cache_free(s->app.auth_cache);
        pg_body_cache_free(s->app.body_cache);
        free(s);
        return pg_error_set(err, PG_EIO, "cannot start the HTTP server on %s", cfg->listen);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    *port = info ? info->port : ntohs(sa.sin_port);
    *out = s;
    return PG_OK;
}

void pg_api_server_stop(pg_api_server *s, int grace_ms)
{
    if (!s) return;
    /* The listen socket is closed only after MHD_stop_daemon: quiescing is
     * asynchronous in thread-pool mode (each worker drops the socket from its
     * epoll set when it next wakes), and a socket closed before that makes
     * the worker's epoll_ctl fail, which libmicrohttpd treats as fatal
     * ("Failed to remove listen FD from epoll set", abort at shutdown). */
    MHD_socket fd = MHD_quiesce_daemon(s->daemon);
    for (int waited = 0; waited < grace_ms; waited += 20) {
        const union MHD_DaemonInfo *info =
            MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        if (!info || info->num_connections == 0) break;
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    MHD_stop_daemon(s->daemon);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    pg_header_guard_free(s->app.headers);
    pg_auth_cache_free(s->app.auth_cache);
    pg_body_cache_free(s->app.body_cache);
    pg_upload_gate_free(s->app.uploads);
    free(s);
}
