/* Unauthenticated operational routes: liveness, readiness, metrics, spec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/body_cache.h"
#include "api/internal.h"
#include "api/upload_gate.h"

void pg_h_healthz(pg_req *r)
{
    pg_api_send_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

void pg_h_readyz(pg_req *r)
{
    pg_error err = {0};
    /* Names the backend, never its URL (which may carry a password). */
    const char *backend = pg_db_backend(r->app->db);
    if (pg_db_probe(r->app->db, &err)) {
        /* Unauthenticated: the reason (a socket path, a host, a data dir)
         * goes to the log, the caller learns only which backend is not. */
        pg_api_log_detail(r, 503, err.msg);
        char detail[96];
        snprintf(detail, sizeof detail, "%s backend not ready%s", backend,
                 err.code == PG_EUNAVAIL ? ": the database is unreachable" : "");
        if (err.code == PG_EUNAVAIL) snprintf(r->retry_after, sizeof r->retry_after, "2");
        pg_api_problem(r, 503, detail, NULL, NULL);
        return;
    }
    pg_api_send_json(r, 200, json_pack("{s:s,s:s}", "status", "ready", "backend", backend));
}

/* The seeded samples body cache (api/body_cache.h), malloc'ed. */
static char *body_cache_metrics(struct pg_body_cache *c)
{
    pg_body_cache_stats s;
    pg_body_cache_stats_get(c, &s);
    char *out = NULL;
    if (asprintf(&out,
                 "# HELP privgen_body_cache_hits_total Seeded samples requests answered with a "
                 "kept body.\n# TYPE privgen_body_cache_hits_total counter\n"
                 "privgen_body_cache_hits_total %llu\n"
                 "# HELP privgen_body_cache_misses_total Seeded samples requests that drew and "
                 "encoded their body.\n# TYPE privgen_body_cache_misses_total counter\n"
                 "privgen_body_cache_misses_total %llu\n"
                 "# HELP privgen_body_cache_evictions_total Bodies dropped to stay within the "
                 "bounds.\n# TYPE privgen_body_cache_evictions_total counter\n"
                 "privgen_body_cache_evictions_total %llu\n"
                 "# HELP privgen_body_cache_bytes Bytes of the kept bodies.\n"
                 "# TYPE privgen_body_cache_bytes gauge\nprivgen_body_cache_bytes %zu\n"
                 "# HELP privgen_body_cache_entries Kept bodies.\n"
                 "# TYPE privgen_body_cache_entries gauge\nprivgen_body_cache_entries %zu\n"
                 "# HELP privgen_body_cache_capacity_bytes The byte bound.\n"
                 "# TYPE privgen_body_cache_capacity_bytes gauge\n"
                 "privgen_body_cache_capacity_bytes %zu\n",
                 s.hits, s.misses, s.evictions, s.bytes, s.entries, s.max_bytes) < 0)
        return NULL;
    return out;
}

/* The upload gate (api/upload_gate.h), malloc'ed; NULL when there is none. */
static char *upload_metrics(struct pg_upload_gate *g)
{
    if (!g) return NULL;
    pg_upload_gate_stats s;
    pg_upload_gate_stats_get(g, &s);
    char *out = NULL;
    if (asprintf(&out,
                 "# HELP privgen_uploads_in_flight Row uploads whose body is being received.\n"
                 "# TYPE privgen_uploads_in_flight gauge\nprivgen_uploads_in_flight %zu\n"
                 "# HELP privgen_uploads_max The bound on uploads in flight (--max-uploads).\n"
                 "# TYPE privgen_uploads_max gauge\nprivgen_uploads_max %zu\n"
                 "# HELP privgen_uploads_refused_total Uploads refused at a bound: 503 for "
                 "--max-uploads, 429 for --max-uploads-per-token.\n"
                 "# TYPE privgen_uploads_refused_total counter\n"
                 "privgen_uploads_refused_total{limit=\"total\"} %llu\n"
                 "privgen_uploads_refused_total{limit=\"token\"} %llu\n"
                 "# HELP privgen_bodies_cut_total Requests whose body came slower than "
                 "--min-body-rate; their connection was closed.\n"
                 "# TYPE privgen_bodies_cut_total counter\nprivgen_bodies_cut_total %llu\n",
                 s.in_flight, s.max_total, (unsigned long long)s.refused_full,
                 (unsigned long long)s.refused_token, (unsigned long long)s.cut_slow) < 0)
        return NULL;
    return out;
}

void pg_h_metrics(pg_req *r)
{
    pg_metrics_gauges g = {0};
    pg_error err = {0};
    pg_db_gauges dg;
    if (pg_db_gauges_get(r->app->db, &dg, &err)) {
        pg_api_problem(r, 503, err.msg, NULL, NULL);
        return;
    }
    g.datasets = dg.datasets;
    g.rows = dg.rows;
    g.bytes = dg.bytes;
    char *txt;
    size_t len;
    if (pg_metrics_render(r->app->metrics, &g, &txt, &len, &err)) {
        pg_api_problem(r, 500, err.msg, NULL, NULL);
        return;
    }
    char *jobs = r->app->jobs ? pg_jobs_metrics(r->app->jobs) : NULL;
    if (jobs) {
        size_t jl = strlen(jobs);
        char *both = realloc(txt, len + jl + 1);
        if (both) {
            memcpy(both + len, jobs, jl + 1);
            txt = both;
            len += jl;
        }
        free(jobs);
    }
    char *extra[2] = {body_cache_metrics(r->app->body_cache), upload_metrics(r->app->uploads)};
    for (int i = 0; i < 2; i++) {
        if (!extra[i]) continue;
        size_t bl = strlen(extra[i]);
        char *both = realloc(txt, len + bl + 1);
        if (both) {
            memcpy(both + len, extra[i], bl + 1);
            txt = both;
            len += bl;
        }
        free(extra[i]);
    }
    pg_api_send_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", txt, len);
}

void pg_h_openapi(pg_req *r)
{
    char *copy = malloc(pg_openapi_yaml_len + 1);
    if (!copy) {
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    memcpy(copy, pg_openapi_yaml, pg_openapi_yaml_len);
    copy[pg_openapi_yaml_len] = '\0';
    pg_api_send_text(r, 200, "application/yaml", copy, pg_openapi_yaml_len);
}
