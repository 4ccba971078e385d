#include "service/metrics.h"
#include "service/text.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS   11
#define MAX_SERIES 512

static const double BUCKETS[NBUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                         0.1,   0.25,   0.5,   1.0,  5.0};

typedef struct series {
    const char *method, *route;
    int code;
    uint64_t count;
    uint64_t bucket[NBUCKETS]; /* non-cumulative; summed when rendered */
    double sum;
} series;

struct pg_metrics {
    pthread_mutex_t mu;
    size_t n;
    uint64_t overflow; /* observations dropped because the table is full */
    series s[MAX_SERIES];
};

int pg_metrics_create(pg_metrics **out, pg_error *err)
{
    pg_metrics *m = calloc(1, sizeof *m);
    if (!m) return pg_error_set(err, PG_ENOMEM, "out of memory creating metrics");
    pthread_mutex_init(&m->mu, NULL);
    *out = m;
    return PG_OK;
}

void pg_metrics_destroy(pg_metrics *m)
{
    if (!m) return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void pg_metrics_observe(pg_metrics *m, const char *method, const char *route, int code,
                        double seconds)
{
    pthread_mutex_lock(&m->mu);
    series *s = NULL;
    for (size_t i = 0; i < m->n && !s; i++)
        if (m->s[i].code == code && m->s[i].route == route && !strcmp(m->s[i].method, method))
            s = &m->s[i];
    if (!s && m->n < MAX_SERIES) {
        s = &m->s[m->n++];
        s->method = method;
        s->route = route;
        s->code = code;
    }
    if (s) {
        s->count++;
        s->sum += seconds;
        for (int b = 0; b < NBUCKETS; b++)
            if (seconds <= BUCKETS[b]) {
                s->bucket[b]++;
                break;
            }
    } else {
        m->overflow++;
    }
    pthread_mutex_unlock(&m->mu);
}

int pg_metrics_render(pg_metrics *m, const pg_metrics_gauges *g, char **out, size_t *len,
                      pg_error *err)
{
    pg_text b = {0};
    pthread_mutex_lock(&m->mu);
    pg_text_printf(&b,
                   "# HELP privgen_http_requests_total HTTP requests by method, route and status.\n"
                   "# TYPE privgen_http_requests_total counter\n");
    for (size_t i = 0; i < m->n; i++)
        pg_text_printf(
            &b, "privgen_http_requests_total{method=\"%s\",route=\"%s\",code=\"%d\"} %llu\n",
            m->s[i].method, m->s[i].route, m->s[i].code, (unsigned long long)m->s[i].count);
    pg_text_printf(&b, "# HELP privgen_http_request_duration_seconds Request latency.\n"
                       "# TYPE privgen_http_request_duration_seconds histogram\n");
    for (size_t i = 0; i < m->n; i++) {
        const series *s = &m->s[i];
        uint64_t cum = 0;
        for (int k = 0; k < NBUCKETS; k++) {
            cum += s->bucket[k];
            pg_text_printf(
                &b,
                "privgen_http_request_duration_seconds_bucket{method=\"%s\",route=\"%s\","
                "code=\"%d\",le=\"%g\"} %llu\n",
                s->method, s->route, s->code, BUCKETS[k], (unsigned long long)cum);
        }
        pg_text_printf(
            &b,
            "privgen_http_request_duration_seconds_bucket{method=\"%s\",route=\"%s\",code=\"%d\","
            "le=\"+Inf\"} %llu\n",
            s->method, s->route, s->code, (unsigned long long)s->count);
        pg_text_printf(
            &b,
            "privgen_http_request_duration_seconds_sum{method=\"%s\",route=\"%s\",code=\"%d\"} "
            "%.6f\n",
            s->method, s->route, s->code, s->sum);
        pg_text_printf(
            &b,
            "privgen_http_request_duration_seconds_count{method=\"%s\",route=\"%s\",code=\"%d\"} "
            "%llu\n",
            s->method, s->route, s->code, (unsigned long long)s->count);
    }
    pg_text_printf(
        &b,
        "# HELP privgen_metrics_dropped_total Observations dropped (series table full).\n"
        "# TYPE privgen_metrics_dropped_total counter\nprivgen_metrics_dropped_total %llu\n",
        (unsigned long long)m->overflow);
    pthread_mutex_unlock(&m->mu);
    pg_text_printf(
        &b,
        "# HELP privgen_datasets Datasets stored.\n# TYPE privgen_datasets gauge\n"
        "privgen_datasets %lld\n"
        "# HELP privgen_rows Rows stored across all datasets.\n# TYPE privgen_rows gauge\n"
        "privgen_rows %lld\n"
        "# HELP privgen_bytes_stored Bytes of row blocks on disk.\n"
        "# TYPE privgen_bytes_stored gauge\nprivgen_bytes_stored %lld\n",
        (long long)g->datasets, (long long)g->rows, (long long)g->bytes);
    if (b.failed) {
        free(b.p);
        return pg_error_set(err, PG_ENOMEM, "out of memory rendering metrics");
    }
    *out = b.p;
    *len = b.len;
    return PG_OK;
}
