/* api/internal.h - shared by the api/ sources only: the per-request context,
 * the route table entry and the response helpers.
 *
 * Lifecycle of a request (see server.c): routed and authenticated on the
 * first callback; the body is either buffered (up to --max-body) or fed to a
 * route's streaming consumer; the handler runs once the body is complete and
 * fills the response; the completion callback logs, counts and frees.
 */
#ifndef PG_API_INTERNAL_H
#define PG_API_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>

#include "service/config.h"
#include "service/metrics.h"
#include "service/sha256.h"
#include "service/store/db.h"

struct pg_jobs;

typedef struct pg_api_app {
    const pg_svc_config *cfg;
    pg_db *db;
    pg_metrics *metrics;
    struct pg_jobs *jobs; /* NULL: the job routes answer 503 */
    /* Optional caches (NULL: none), owned by the server: token checks
     * (service/auth.h) and seeded samples bodies (api/body_cache.h). */
    struct pg_auth_cache *auth_cache;
    struct pg_body_cache *body_cache;
    struct pg_reports *reports;     /* NULL: the report routes answer 503 */
    struct pg_upload_gate *uploads; /* row uploads in flight (api/upload_gate.h); NULL: no bound */
    struct pg_header_guard
        *headers;              /* the header phase's bounds (api/header_guard.h); NULL: none */
    struct pg_cpu_budget *cpu; /* the jobs' CPU budget, sampling shares it; NULL: none */
} pg_api_app;

typedef struct pg_req pg_req;

/* PG_AUTH_READ and PG_AUTH_ADMIN check the token in the database on every
 * request, so a revocation committed through any replica is seen at once.
 * PG_AUTH_READ_CACHED (read scope) may answer from this process's token
 * cache (service/auth.h, up to its TTL behind a revocation made elsewhere):
 * only for routes that write nothing and return no private data, only
 * post-processed DP output (samples of a job). */
enum pg_auth_need { PG_AUTH_NONE = 0, PG_AUTH_READ, PG_AUTH_ADMIN, PG_AUTH_READ_CACHED };

typedef struct pg_route {
    const char *method, *pattern;
    int auth; /* enum pg_auth_need */
    /* 1: never store this route's response for Idempotency-Key replay
     * (POST /v1/tokens: its body holds a plaintext token). */
    int no_replay;
    /* Optional: runs after auth on the first callback; may install a
     * streaming consumer (req->feed) or answer at once (set req->status). */
    void (*begin)(pg_req *req);
    void (*handle)(pg_req *req); /* runs with the whole body */
} pg_route;

#define PG_MAX_PARAMS 3

struct pg_req {
    pg_api_app *app;
    struct MHD_Connection *conn;
    const char *method; /* static label: GET, POST, ... or OTHER */
    char path[512];
    const pg_route *route;
    const char *route_label; /* pattern or "unmatched" */
    char params[PG_MAX_PARAMS][PG_ID_MAX];
    pg_token tok;
    int authed;
    double t0;

    /* body */
    uint64_t received;
    char *body;
    size_t body_len, body_cap;
    int too_large;
    int (*feed)(pg_req *req, const char *data, size_t len); /* streaming consumer */
    void (*stream_free)(pg_req *req);
    void *stream;
    int failed;      /* a consumer already set the error response; discard the rest */
    int upload_slot; /* holds a slot of app->uploads until the request ends */
    int cut;         /* the body came too slowly: the connection was closed */

    /* idempotency */
    char idem_key[129];
    pg_sha256 fp;

    /* response */
    int status; /* 0 until set */
    char *resp;
    size_t resp_len;
    const char *resp_type;
    char location[256];
    char allow[64]; /* Allow header of a 405 */
    int queued;
    char retry_after[16];        /* Retry-After header when set */
    struct MHD_Response *custom; /* a handler-built response (SSE), used as is */
    /* HTTP caching of a 200 or 304 (other statuses always get no-store):
     * Cache-Control (a static string; NULL: no-store) and a strong ETag
     * (quoted; empty: none). */
    const char *cache_control;
    char etag[80];
};

/* Responses. Each replaces any earlier response. */
void pg_api_send_json(pg_req *r, int status, json_t *body); /* steals body */
void pg_api_send_text(pg_req *r, int status, const char *type, char *text, size_t len); /* steals */

/* Streamed bodies whose rows take long to draw (a swd_flow replaying its
 * flow for more samples than particles): MHD would count the drawing time as
 * the connection's idleness and cut the body after --http-timeout-seconds.
 * A stream calls pg_api_busy_begin before it draws and pg_api_busy_end after,
 * which grants the connection that drawing time on top of its idle timeout
 * (the client's own idleness stays bounded by the timeout). */
typedef struct pg_api_busy {
    struct MHD_Connection *conn;
    int idle_s;   /* --http-timeout-seconds */
    unsigned set; /* the timeout last given to the connection, 0: the daemon's */
    double t0;
} pg_api_busy;
void pg_api_busy_init(pg_api_busy *b, pg_req *r);
void pg_api_busy_begin(pg_api_busy *b);
void pg_api_busy_end(pg_api_busy *b);
/* problem+json; field/message optional (one validation error entry). A
 * 500's detail is never sent: the client gets PG_API_INTERNAL_DETAIL and
 * the log the text (pg_api_log_detail). */
void pg_api_problem(pg_req *r, int status, const char *detail, const char *field,
                    const char *message);
#define PG_API_INTERNAL_DETAIL                                                                     \
    "the server failed to handle this request; its log has the details (retry, or report the "     \
    "time and route to the operator)"
#define PG_API_UNAVAIL_DETAIL                                                                      \
    "the database is unavailable; retry after the number of seconds in Retry-After"
/* Logs a server-side failure's text (never sent to the client). */
void pg_api_log_detail(pg_req *r, int status, const char *detail);
/* problem+json for a status code from pg_error (EIO -> 500, ...). */
void pg_api_problem_err(pg_req *r, int status, const char *field, const char *detail);

/* problem+json for a failed storage or service call, by err->code:
 * PG_EUNAVAIL -> 503 with Retry-After (the database is unreachable; the
 * detail says only that, err->msg goes to the log), PG_ENOMEM -> 503 with
 * err->msg (a limit the client can act on), anything else -> 500. */
void pg_api_fail(pg_req *r, const pg_error *err);

/* The shared ending of a service call on one resource named in the path:
 * after a failed call (rc != 0) queues pg_api_fail(err), after a call that
 * found nothing (*found == 0) a 404 whose detail is `missing` ("no such
 * job"). Returns 1 when it queued an answer (the handler stops; the call's
 * outputs are unset then), 0 when the handler goes on. *found is read only
 * after a successful call, so it may be left unset by a failed one. */
int pg_api_answer_lookup(pg_req *r, int rc, const pg_error *err, const int *found,
                         const char *missing);

/* Job routes on a server without job workers: 0 after queuing a 503, else 1
 * (api/h_jobs.c). */
int pg_api_jobs_ready(pg_req *r);
/* The view of the job named in the path into *view (the caller owns it):
 * 0, or 1 after queuing the answer instead (503 without job workers, the
 * service's error, 404) (api/h_jobs.c). */
int pg_api_job_view(pg_req *r, json_t **view);

const char *pg_api_header(pg_req *r, const char *name);
const char *pg_api_query(pg_req *r, const char *name);

/* Pagination parameters of a list route: ?limit= (1..500, default 50) and
 * ?cursor= (an opaque non-negative integer this server issued, default 0).
 * Returns 0 with both filled, or -1 after queuing a 400 problem. */
int pg_api_page_params(pg_req *r, long *limit, long long *after);
/* 200 with {"items": items (stolen), "next_cursor": the cursor of the next
 * page as a string, or null when next <= 0 (no more pages)}. */
void pg_api_send_page(pg_req *r, json_t *items, long long next);

/* Strict JSON objects: fails (422 queued) when obj has a key not in the
 * NULL-terminated list; returns 0 when ok. prefix names the object path. */
int pg_api_only_fields(pg_req *r, json_t *obj, const char *prefix, const char *const *allowed);

/* Parses the buffered body as a JSON object (400 on syntax error). */
json_t *pg_api_body_json(pg_req *r);

/* Body parsers (exposed for the fuzz targets). Each returns 0, or -1 with
 * the error response already set on r. */
struct pg_datasets_spec;
/* POST /v1/datasets body -> spec (syntax and types; semantic rules are
 * pg_datasets_spec_check's). */
int pg_api_parse_dataset(pg_req *r, json_t *body, struct pg_datasets_spec *s);
/* {"rows":[[..]],"labels":[..]} -> validated floats (pg_alloc'ed, n*d) and
 * labels (pg_alloc'ed or NULL); every value and label checked against spec. */
int pg_api_parse_rows(pg_req *r, json_t *body, const struct pg_datasets_spec *spec, float **x,
                      int64_t **labels, size_t *n);

/* Route handlers (one file each). */
void pg_h_healthz(pg_req *r);
void pg_h_readyz(pg_req *r);
void pg_h_metrics(pg_req *r);
void pg_h_openapi(pg_req *r);
void pg_h_web_index(pg_req *r);
void pg_h_web_script(pg_req *r);
void pg_h_web_style(pg_req *r);
/* The dashboard's scripts, embedded from web/js/ (the table is generated by
 * api/CMakeLists.txt; the last row's name is NULL). */
typedef struct pg_web_file {
    const char *name;
    const unsigned char *data;
    const size_t *len;
} pg_web_file;
extern const pg_web_file pg_web_scripts[];
void pg_h_tokens_create(pg_req *r);
void pg_h_tokens_list(pg_req *r);
void pg_h_tokens_revoke(pg_req *r);
void pg_h_datasets_create(pg_req *r);
void pg_h_datasets_list(pg_req *r);
void pg_h_datasets_get(pg_req *r);
void pg_h_datasets_delete(pg_req *r);
void pg_h_rows_begin(pg_req *r);
void pg_h_rows_append(pg_req *r);

void pg_h_algorithms(pg_req *r);
void pg_h_jobs_create(pg_req *r);
void pg_h_jobs_list(pg_req *r);
void pg_h_jobs_get(pg_req *r);
void pg_h_jobs_cancel(pg_req *r);
void pg_h_jobs_delete(pg_req *r);
void pg_h_jobs_events(pg_req *r);
void pg_h_jobs_samples(pg_req *r);
void pg_h_jobs_checkpoints(pg_req *r);
void pg_h_jobs_checkpoint_get(pg_req *r);
void pg_h_datasets_budget(pg_req *r);
void pg_h_reports_create(pg_req *r);
void pg_h_reports_list(pg_req *r);
void pg_h_reports_get(pg_req *r);
void pg_h_reports_figure(pg_req *r);
void pg_h_reports_cancel(pg_req *r);
void pg_h_reports_delete(pg_req *r);

/* service/jobs/jobs.h's /metrics text (malloc'ed, may be NULL); declared here
 * too because jobs.h cannot meet service/datasets/spec.h in one file (see
 * service/jobs/jobdesc.h). */
char *pg_jobs_metrics(struct pg_jobs *m);

/* The embedded openapi.yaml (generated at build time). */
extern const unsigned char pg_openapi_yaml[];
extern const size_t pg_openapi_yaml_len;

#endif
