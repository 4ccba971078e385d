/* GET /v1/jobs/{id}/events: Server-Sent Events. One `progress` event per job
 * update (the same JSON as GET /v1/jobs/{id}), a `warning` event after the
 * first update that shows a trainer warning (an object of the view's
 * `warnings` with source "trainer"; once per code and stream, without an id,
 * so Last-Event-ID is unaffected), a final `done` event, and a keep-alive
 * comment after 15 s of silence. At shutdown the stream ends without
 * `done`.
 *
 * Authorization lasts as long as the stream: the token is checked again
 * (pg_auth_recheck, one read of its row in the database) before what the
 * stream sends next, at most once per AUTH_RECHECK_MS, and a stream idle
 * between events re-checks as often while it waits. Once the token is
 * revoked or expired, or the job is gone (deleted, or no longer visible to
 * the token), the stream sends a final `closed` event, whose data is a
 * problem object (401 or 404, as a new request would get; 503 when the
 * token cannot be checked), and ends: nothing more of the job is sent to a
 * token that could not open the stream any more. A revocation is thus seen
 * within about AUTH_RECHECK_MS + WAIT_MS, through whatever replica it was
 * made.
 *
 * Any replica serves any job's stream: one that does not run the job polls
 * its stored state about once a second (service/jobs/jobs.h, pg_jobs_wait), so
 * its events are coarser than the running replica's but show the same
 * states. Every event carries an id (pg_jobs_event_id: status, step and
 * latest checkpoint, read alike everywhere); a client reconnecting with
 * Last-Event-ID, to this replica or another, is sent only states after
 * that one (a finished job still gets its `done`).
 *
 * The body comes from libmicrohttpd's content-reader callback, which waits
 * for the next update for at most WAIT_MS per call. While it waits it holds
 * one of the --http-threads poll threads, so other connections served by
 * that thread see up to WAIT_MS extra latency: size --http-threads above the
 * number of concurrent event streams. (Suspend/resume would avoid that at the
 * cost of a wake-up path from the workers into the HTTP layer.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/internal.h"
#include "engine/methods/method.h" /* PG_TRAINER_WARN_CODE */
#include "service/auth.h"
#include "service/jobs/jobs.h"

#define WAIT_MS      1000
#define KEEPALIVE_MS 15000
#define MIN_GAP_MS   100 /* a fast job updates every step; coalesce to 10 events/s */
/* A database read per stream per second bounds how late a revocation ends
 * a stream without costing the fast path (10 events/s) a read each. */
#define AUTH_RECHECK_MS 1000

typedef struct sse {
    struct pg_jobs *jobs;
    pg_db *db;
    char tenant[PG_ID_MAX], id[PG_ID_MAX];
    char token[PG_ID_MAX];   /* the token's id (never the token) */
    struct timespec checked; /* the last authorization check */
    uint64_t version;
    int done;   /* the done event is queued */
    int resume; /* skip states not after `after` (Last-Event-ID) */
    long long after[3];
    char *buf;
    size_t len, off;
    int quiet_ms;
    struct timespec last; /* when the last progress event was queued */
    /* trainer warning codes sent as `warning` events (the service keeps at
     * most 2 x PG_TRAINER_WARN_MAX per job) */
    char sent[32][PG_TRAINER_WARN_CODE];
    int nsent;
} sse;

static long ms_since(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)(now.tv_sec - t->tv_sec) * 1000 + (now.tv_nsec - t->tv_nsec) / 1000000;
}

static int append_event(sse *s, const char *event, json_t *o)
{
    char id[96];
    if (pg_jobs_event_id(o, id, sizeof id)) id[0] = '\0';
    char *txt = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!txt) return -1;
    size_t need = strlen(id) + strlen(event) + strlen(txt) + 48;
    char *nb = realloc(s->buf, s->len + need);
    if (!nb) {
        free(txt);
        return -1;
    }
    s->buf = nb;
    s->len += (size_t)snprintf(s->buf + s->len, need, "%s%s%sevent: %s\ndata: %s\n\n",
                               id[0] ? "id: " : "", id, id[0] ? "\n" : "", event, txt);
    free(txt);
    return 0;
}

/* A `warning` event for each trainer warning of view not sent yet. */
static int warning_events(sse *s, json_t *view)
{
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(view, "warnings"), i, w)
    {
        const char *src = json_string_value(json_object_get(w, "source"));
        const char *code = json_string_value(json_object_get(w, "code"));
        if (!src || strcmp(src, "trainer") || !code) continue;
        int known = 0;
        for (int k = 0; k < s->nsent && !known; k++) known = !strcmp(s->sent[k], code);
        if (known || s->nsent == (int)(sizeof s->sent / sizeof s->sent[0])) continue;
        snprintf(s->sent[s->nsent++], sizeof s->sent[0], "%s", code);
        if (append_event(s, "warning", w)) return -1;
    }
    return 0;
}

/* An event id as (status rank, step, checkpoint): queued < running <
 * finished, then by step and checkpoint. -1 when it is not one of ours. */
static int parse_id(const char *id, long long out[3])
{
    static const char *const RANK[] = {"queued", "running", "succeeded", "failed", "cancelled"};
    const char *c = id ? strchr(id, ':') : NULL;
    if (!c) return -1;
    out[0] = -1;
    for (int i = 0; i < 5; i++)
        if ((size_t)(c - id) == strlen(RANK[i]) && !strncmp(id, RANK[i], (size_t)(c - id)))
            out[0] = i < 2 ? i : 2;
    char tail;
    if (out[0] < 0 || sscanf(c + 1, "%lld:%lld%c", &out[1], &out[2], &tail) != 2) return -1;
    return 0;
}

/* 1 when view shows a state after the client's Last-Event-ID. */
static int after_resume(const sse *s, json_t *view)
{
    char id[96];
    long long v[3];
    if (pg_jobs_event_id(view, id, sizeof id) || parse_id(id, v)) return 1;
    for (int i = 0; i < 3; i++)
        if (v[i] != s->after[i]) return v[i] > s->after[i];
    return 0;
}

/* The final `closed` event: a problem object (as the api answers one), then
 * the end of the stream. */
static int error_event(sse *s, int status, const char *title, const char *detail)
{
    /* the type and title api/respond.c gives these statuses */
    const char *type = status == 401   ? "/problems/unauthorized"
                       : status == 404 ? "/problems/not-found"
                                       : "/problems/unavailable";
    json_t *o = json_pack("{s:s,s:s,s:i,s:s}", "type", type, "title", title, "status", status,
                          "detail", detail);
    if (!o) return -1;
    char *txt = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!txt) return -1;
    size_t need = strlen(txt) + 32;
    char *nb = realloc(s->buf, s->len + need);
    if (!nb) {
        free(txt);
        return -1;
    }
    s->buf = nb;
    s->len += (size_t)snprintf(s->buf + s->len, need, "event: closed\ndata: %s\n\n", txt);
    free(txt);
    s->done = 1;
    return 0;
}

/* Is the stream's token still good? 0: go on (checked now, or recently
 * enough); 1: the error event is queued and the stream ends; -1: out of
 * memory. */
static int reauthorize(sse *s)
{
    long since = ms_since(&s->checked);
    if (since >= 0 && since < AUTH_RECHECK_MS) return 0;
    int state;
    pg_error err = {0};
    int rc = pg_auth_recheck(s->db, s->tenant, s->token, (int64_t)time(NULL), &state, &err);
    if (rc)
        /* Fail closed: a stream that cannot be authorized ends; the client
         * reconnects (SSE clients do) and its new request is checked. */
        return error_event(s, 503, "Service Unavailable",
                           "the token could not be checked again: reconnect")
                   ? -1
                   : 1;
    if (state != PG_TOKEN_OK)
        return error_event(s, 401, "Unauthorized",
                           state == PG_TOKEN_REVOKED   ? "this token has been revoked"
                           : state == PG_TOKEN_EXPIRED ? "this token has expired"
                                                       : "this token is no longer valid")
                   ? -1
                   : 1;
    clock_gettime(CLOCK_MONOTONIC, &s->checked);
    return 0;
}

static ssize_t reader(void *cls, uint64_t pos, char *out, size_t max)
{
    sse *s = cls;
    (void)pos;
    while (s->off == s->len) {
        s->off = s->len = 0;
        if (s->done) return MHD_CONTENT_READER_END_OF_STREAM;
        long gap = ms_since(&s->last);
        if (gap >= 0 && gap < MIN_GAP_MS) {
            struct timespec ts = {0, (MIN_GAP_MS - gap) * 1000000L};
            nanosleep(&ts, NULL);
        }
        json_t *o = NULL;
        int final = 0, found = 0;
        if (pg_jobs_wait(s->jobs, s->tenant, s->id, &s->version, WAIT_MS, &o, &final, &found, NULL))
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (!found) {
            if (error_event(s, 404, "Not Found", "the job was deleted"))
                return MHD_CONTENT_READER_END_WITH_ERROR;
            continue; /* sends it, then ends */
        }
        /* Before anything more leaves, and on every wait of an idle stream. */
        int auth = reauthorize(s);
        if (auth) {
            json_decref(o);
            if (auth < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
            continue;
        }
        if (o && s->resume && !after_resume(s, o) && !final) {
            json_decref(o); /* the client has seen this state */
            o = NULL;
            continue;
        }
        if (o) {
            int bad = s->resume && !after_resume(s, o) ? 0 : append_event(s, "progress", o);
            if (!bad) bad = warning_events(s, o);
            s->resume = 0;
            if (!bad && final) {
                /* final without a finished job: the server is shutting down;
                 * the stream just ends (clients reconnect or poll). */
                const char *st = json_string_value(json_object_get(o, "status"));
                if (st && strcmp(st, "queued") && strcmp(st, "running"))
                    bad = append_event(s, "done", o);
                s->done = 1;
            }
            json_decref(o);
            if (bad) return MHD_CONTENT_READER_END_WITH_ERROR;
            s->quiet_ms = 0;
            clock_gettime(CLOCK_MONOTONIC, &s->last);
        } else if (final) {
            s->done = 1;
            return MHD_CONTENT_READER_END_OF_STREAM;
        } else if ((s->quiet_ms += WAIT_MS) >= KEEPALIVE_MS) {
            static const char ka[] = ": keep-alive\n\n";
            char *nb = realloc(s->buf, sizeof ka);
            if (!nb) return MHD_CONTENT_READER_END_WITH_ERROR;
            s->buf = nb;
            memcpy(s->buf, ka, sizeof ka - 1);
            s->len = sizeof ka - 1;
            s->quiet_ms = 0;
        }
    }
    size_t k = s->len - s->off < max ? s->len - s->off : max;
    memcpy(out, s->buf + s->off, k);
    s->off += k;
    return (ssize_t)k;
}

static void sse_free(void *cls)
{
    sse *s = cls;
    free(s->buf);
    free(s);
}

void pg_h_jobs_events(pg_req *r)
{
    json_t *o;
    if (pg_api_job_view(r, &o)) return;
    json_decref(o);
    sse *s = calloc(1, sizeof *s);
    if (!s) {
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    s->jobs = r->app->jobs;
    s->db = r->app->db;
    snprintf(s->tenant, sizeof s->tenant, "%s", r->tok.tenant);
    snprintf(s->token, sizeof s->token, "%s", r->tok.id);
    clock_gettime(CLOCK_MONOTONIC, &s->checked); /* the request's own check */
    snprintf(s->id, sizeof s->id, "%s", r->params[0]);
    s->version = UINT64_MAX; /* the first wait returns the current state at once */
    s->resume = !parse_id(pg_api_header(r, "Last-Event-ID"), s->after);
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, reader, s, sse_free);
    if (!resp) {
        free(s);
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    r->custom = resp;
    r->status = 200;
    r->resp_type = NULL;
}
