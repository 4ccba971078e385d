/* Response builders and small request accessors shared by the handlers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/internal.h"
#include "service/log.h"

static void set_body(pg_req *r, int status, const char *type, char *text, size_t len)
{
    free(r->resp);
    r->status = status;
    r->resp_type = type;
    r->resp = text;
    r->resp_len = len;
}

void pg_api_send_text(pg_req *r, int status, const char *type, char *text, size_t len)
{
    set_body(r, status, type, text, len);
}

void pg_api_send_json(pg_req *r, int status, json_t *body)
{
    char *txt = body ? json_dumps(body, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(body);
    if (!txt) {
        /* No body: out of memory (a handler's body, or its text). Last
         * resort without allocation-heavy paths, answered as every other
         * out of memory (pg_api_fail, the handlers): 503, worth a retry. */
        static const char oom[] = "{\"type\":\"/problems/unavailable\",\"title\":\"Service "
                                  "Unavailable\",\"status\":503,\"detail\":\"out of memory\"}";
        char *c = malloc(sizeof oom);
        if (c) memcpy(c, oom, sizeof oom);
        set_body(r, 503, "application/problem+json", c, c ? sizeof oom - 1 : 0);
        return;
    }
    set_body(r, status, "application/json", txt, strlen(txt));
}

static const char *title_of(int status, const char **slug)
{
    switch (status) {
    case 400:
        *slug = "bad-request";
        return "Bad Request";
    case 401:
        *slug = "unauthorized";
        return "Unauthorized";
    case 403:
        *slug = "forbidden";
        return "Forbidden";
    case 404:
        *slug = "not-found";
        return "Not Found";
    case 405:
        *slug = "method-not-allowed";
        return "Method Not Allowed";
    case 409:
        *slug = "conflict";
        return "Conflict";
    case 413:
        *slug = "too-large";
        return "Content Too Large";
    case 415:
        *slug = "unsupported-media-type";
        return "Unsupported Media Type";
    case 422:
        *slug = "invalid";
        return "Unprocessable Content";
    case 429:
        *slug = "too-many-requests";
        return "Too Many Requests";
    case 503:
        *slug = "unavailable";
        return "Service Unavailable";
    default:
        *slug = "internal";
        return "Internal Server Error";
    }
}

void pg_api_log_detail(pg_req *r, int status, const char *detail)
{
    json_t *d = json_string(detail ? detail : "");
    json_t *route = json_string(r->route_label ? r->route_label : "");
    char *ds = d ? json_dumps(d, JSON_ENCODE_ANY) : NULL;
    char *rs = route ? json_dumps(route, JSON_ENCODE_ANY) : NULL;
    json_decref(d);
    json_decref(route);
    char *extra = NULL;
    if (asprintf(&extra, "\"status\":%d,\"route\":%s,\"error\":%s", status, rs ? rs : "\"\"",
                 ds ? ds : "\"\"") < 0)
        extra = NULL;
    free(ds);
    free(rs);
    pg_log_event("error", "request failed on the server's side", extra);
    free(extra);
}

void pg_api_problem(pg_req *r, int status, const char *detail, const char *field,
                    const char *message)
{
    /* A 500 is the server's own failure: its text (SQL errors, file paths,
     * database hosts and sockets) helps no client and tells an attacker
     * about the deployment. The client learns that it failed; the log gets
     * the text. */
    if (status == 500) {
        pg_api_log_detail(r, status, detail);
        detail = PG_API_INTERNAL_DETAIL;
        field = message = NULL;
    }
    const char *slug;
    const char *title = title_of(status, &slug);
    char type[64];
    snprintf(type, sizeof type, "/problems/%s", slug);
    json_t *o = json_pack("{s:s,s:s,s:i,s:s}", "type", type, "title", title, "status", status,
                          "detail", detail ? detail : title);
    if (o && field)
        json_object_set_new(o, "errors",
                            json_pack("[{s:s,s:s}]", "field", field, "message",
                                      message ? message : (detail ? detail : title)));
    char *txt = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!txt) {
        pg_api_send_json(r, 500, NULL);
        return;
    }
    set_body(r, status, "application/problem+json", txt, strlen(txt));
}

void pg_api_fail(pg_req *r, const pg_error *err)
{
    /* A lost database is transient: tell clients when to come back, and
     * nothing of where the database lives (its host, port or socket path
     * are in err->msg: the log keeps them). */
    if (err->code == PG_EUNAVAIL) {
        snprintf(r->retry_after, sizeof r->retry_after, "2");
        pg_api_log_detail(r, 503, err->msg);
        pg_api_problem(r, 503, PG_API_UNAVAIL_DETAIL, NULL, NULL);
        return;
    }
    int status = err->code == PG_ENOMEM ? 503 : 500;
    pg_api_problem(r, status, err->msg[0] ? err->msg : pg_status_str(err->code), NULL, NULL);
}

int pg_api_answer_lookup(pg_req *r, int rc, const pg_error *err, const int *found,
                         const char *missing)
{
    if (rc)
        pg_api_fail(r, err);
    else if (!*found)
        pg_api_problem(r, 404, missing, NULL, NULL);
    else
        return 0;
    return 1;
}

void pg_api_problem_err(pg_req *r, int status, const char *field, const char *detail)
{
    pg_api_problem(r, status, detail, field, field ? detail : NULL);
}

const char *pg_api_header(pg_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *pg_api_query(pg_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

int pg_api_page_params(pg_req *r, long *limit, long long *after)
{
    const char *ls = pg_api_query(r, "limit"), *cs = pg_api_query(r, "cursor");
    char *end;
    *limit = 50;
    *after = 0;
    if (ls) {
        *limit = strtol(ls, &end, 10);
        if (!*ls || *end || *limit < 1 || *limit > 500) {
            pg_api_problem(r, 400, "limit must be an integer in [1, 500]", "limit",
                           "must be an integer in [1, 500]");
            return -1;
        }
    }
    if (cs && *cs) {
        *after = strtoll(cs, &end, 10);
        if (*end || *after < 0) {
            pg_api_problem(r, 400, "cursor is not one this server issued", "cursor",
                           "invalid cursor");
            return -1;
        }
    }
    return 0;
}

void pg_api_send_page(pg_req *r, json_t *items, long long next)
{
    json_t *nc = json_null();
    if (next > 0) {
        char c[32];
        snprintf(c, sizeof c, "%lld", next);
        nc = json_string(c);
    }
    pg_api_send_json(r, 200, json_pack("{s:o,s:o}", "items", items, "next_cursor", nc));
}

int pg_api_only_fields(pg_req *r, json_t *obj, const char *prefix, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++) ok = !strcmp(*a, key);
        if (!ok) {
            char field[160], msg[200];
            snprintf(field, sizeof field, "%s%s%.100s", prefix ? prefix : "", prefix ? "." : "",
                     key);
            snprintf(msg, sizeof msg, "unknown field '%.100s'", key);
            pg_api_problem(r, 422, msg, field, msg);
            return -1;
        }
    }
    return 0;
}

json_t *pg_api_body_json(pg_req *r)
{
    json_error_t je;
    json_t *o = r->body_len ? json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &je) : NULL;
    if (!o) {
        char msg[256];
        if (r->body_len)
            snprintf(msg, sizeof msg, "malformed JSON at line %d, column %d: %s", je.line,
                     je.column, je.text);
        else
            snprintf(msg, sizeof msg, "the request needs a JSON body");
        pg_api_problem(r, 400, msg, NULL, NULL);
        return NULL;
    }
    if (!json_is_object(o)) {
        json_decref(o);
        pg_api_problem(r, 400, "the JSON body must be an object", NULL, NULL);
        return NULL;
    }
    return o;
}

static double busy_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void pg_api_busy_init(pg_api_busy *b, pg_req *r)
{
    memset(b, 0, sizeof *b);
    b->conn = r->conn;
    b->idle_s = r->app->cfg->http_timeout_s;
}

void pg_api_busy_begin(pg_api_busy *b)
{
    b->t0 = busy_now();
}

void pg_api_busy_end(pg_api_busy *b)
{
    if (!b->conn || b->idle_s <= 0) return;
    double busy = busy_now() - b->t0;
    /* Drawing under a second changes nothing worth a call; after a long
     * draw the connection may wait idle_s more for the client, counted from
     * the end of the draw (MHD counts from the last byte it moved). */
    unsigned want = busy < 1.0 ? 0u : (unsigned)b->idle_s + (unsigned)ceil(busy);
    if (want == b->set || (want == 0 && b->set == 0)) return;
    MHD_set_connection_option(b->conn, MHD_CONNECTION_OPTION_TIMEOUT,
                              want ? want : (unsigned)b->idle_s);
    b->set = want;
}
