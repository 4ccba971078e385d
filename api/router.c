#include <string.h>

#include "api/internal.h"
#include "api/router.h"
#include "api/server.h"

/* The whole HTTP surface. openapi.yaml must list exactly these routes
 * (tests/api/test_openapi.c checks both directions). */
static const pg_route ROUTES[] = {
    {"GET", "/healthz", PG_AUTH_NONE, 0, NULL, pg_h_healthz},
    {"GET", "/readyz", PG_AUTH_NONE, 0, NULL, pg_h_readyz},
    {"GET", "/metrics", PG_AUTH_NONE, 0, NULL, pg_h_metrics},
    {"GET", "/openapi.yaml", PG_AUTH_NONE, 0, NULL, pg_h_openapi},
    {"GET", "/", PG_AUTH_NONE, 0, NULL, pg_h_web_index},
    {"GET", "/js/{name}", PG_AUTH_NONE, 0, NULL, pg_h_web_script},
    {"GET", "/style.css", PG_AUTH_NONE, 0, NULL, pg_h_web_style},
    {"POST", "/v1/tokens", PG_AUTH_ADMIN, 1, NULL, pg_h_tokens_create},
    {"GET", "/v1/tokens", PG_AUTH_ADMIN, 0, NULL, pg_h_tokens_list},
    {"DELETE", "/v1/tokens/{id}", PG_AUTH_READ, 0, NULL, pg_h_tokens_revoke},
    {"POST", "/v1/datasets", PG_AUTH_ADMIN, 0, NULL, pg_h_datasets_create},
    {"GET", "/v1/datasets", PG_AUTH_READ, 0, NULL, pg_h_datasets_list},
    {"GET", "/v1/datasets/{id}", PG_AUTH_READ, 0, NULL, pg_h_datasets_get},
    {"DELETE", "/v1/datasets/{id}", PG_AUTH_ADMIN, 0, NULL, pg_h_datasets_delete},
    {"POST", "/v1/datasets/{id}/rows", PG_AUTH_ADMIN, 0, pg_h_rows_begin, pg_h_rows_append},
    {"GET", "/v1/datasets/{id}/budget", PG_AUTH_READ, 0, NULL, pg_h_datasets_budget},
    {"GET", "/v1/algorithms", PG_AUTH_READ, 0, NULL, pg_h_algorithms},
    {"POST", "/v1/jobs", PG_AUTH_ADMIN, 0, NULL, pg_h_jobs_create},
    {"GET", "/v1/jobs", PG_AUTH_READ, 0, NULL, pg_h_jobs_list},
    {"GET", "/v1/jobs/{id}", PG_AUTH_READ, 0, NULL, pg_h_jobs_get},
    {"DELETE", "/v1/jobs/{id}", PG_AUTH_ADMIN, 0, NULL, pg_h_jobs_delete},
    {"POST", "/v1/jobs/{id}/cancel", PG_AUTH_ADMIN, 0, NULL, pg_h_jobs_cancel},
    {"GET", "/v1/jobs/{id}/events", PG_AUTH_READ, 0, NULL, pg_h_jobs_events},
    {"GET", "/v1/jobs/{id}/samples", PG_AUTH_READ_CACHED, 0, NULL, pg_h_jobs_samples},
    {"GET", "/v1/jobs/{id}/checkpoints", PG_AUTH_READ, 0, NULL, pg_h_jobs_checkpoints},
    {"GET", "/v1/jobs/{id}/checkpoints/{step}", PG_AUTH_READ, 0, NULL, pg_h_jobs_checkpoint_get},
    /* Quality reports: the rule of service/reports/report_rules.h decides per report. */
    {"POST", "/v1/jobs/{id}/reports", PG_AUTH_READ, 0, NULL, pg_h_reports_create},
    {"GET", "/v1/jobs/{id}/reports", PG_AUTH_READ, 0, NULL, pg_h_reports_list},
    {"GET", "/v1/jobs/{id}/reports/{rid}", PG_AUTH_READ, 0, NULL, pg_h_reports_get},
    {"GET", "/v1/jobs/{id}/reports/{rid}/figures/{name}", PG_AUTH_READ, 0, NULL,
     pg_h_reports_figure},
    {"POST", "/v1/jobs/{id}/reports/{rid}/cancel", PG_AUTH_READ, 0, NULL, pg_h_reports_cancel},
    {"DELETE", "/v1/jobs/{id}/reports/{rid}", PG_AUTH_READ, 0, NULL, pg_h_reports_delete},
};
#define NROUTES (sizeof ROUTES / sizeof ROUTES[0])

size_t pg_api_route_count(void)
{
    return NROUTES;
}

void pg_api_route_at(size_t i, const char **method, const char **pattern)
{
    *method = ROUTES[i].method;
    *pattern = ROUTES[i].pattern;
}

/* Matches one pattern against path, capturing {params}. Parameters are
 * non-empty, at most PG_ID_MAX-1 characters and contain no '/'. */
static int match(const char *pat, const char *path, char params[PG_MAX_PARAMS][PG_ID_MAX])
{
    int np = 0;
    while (*pat && *path) {
        if (*pat == '{') {
            const char *close = strchr(pat, '}');
            size_t len = strcspn(path, "/");
            if (!close || len == 0 || len >= PG_ID_MAX || np >= PG_MAX_PARAMS) return 0;
            memcpy(params[np], path, len);
            params[np++][len] = '\0';
            pat = close + 1;
            path += len;
        } else if (*pat++ != *path++) {
            return 0;
        }
    }
    return *pat == '\0' && *path == '\0';
}

const pg_route *pg_api_route_find(const char *method, const char *path,
                                  char params[PG_MAX_PARAMS][PG_ID_MAX], int *path_known)
{
    *path_known = 0;
    for (size_t i = 0; i < NROUTES; i++) {
        char tmp[PG_MAX_PARAMS][PG_ID_MAX];
        if (!match(ROUTES[i].pattern, path, tmp)) continue;
        *path_known = 1;
        if (strcmp(ROUTES[i].method, method)) continue;
        memcpy(params, tmp, sizeof tmp);
        return &ROUTES[i];
    }
    return NULL;
}

void pg_api_route_allow(const char *path, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NROUTES; i++) {
        char tmp[PG_MAX_PARAMS][PG_ID_MAX];
        if (!match(ROUTES[i].pattern, path, tmp)) continue;
        int n = snprintf(buf + at, cap - at, "%s%s", at ? ", " : "", ROUTES[i].method);
        if (n < 0 || (size_t)n >= cap - at) break;
        at += (size_t)n;
    }
}
