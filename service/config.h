/* service/config.h - privgend settings from flags and environment.
 *
 * Precedence: command-line flag > environment variable (PRIVGEN_<NAME>) >
 * default. Parsing fills a caller-owned struct; strings point into argv/env or
 * to static defaults and are never freed. Errors name the offending option.
 */
#ifndef PG_SVC_CONFIG_H
#define PG_SVC_CONFIG_H

#include <stddef.h>

#include "engine/core/error.h"

typedef struct pg_svc_config {
    const char *listen;        /* "host:port"; port 0 picks a free port */
    const char *data_dir;      /* created if missing; holds admin.token (and, by
                                * default, the SQLite database) */
    const char *db_url;        /* storage URL (service/store/db.h); NULL: the default,
                                * sqlite:DATA_DIR/privgen.db */
    int db_pool;               /* database connections; 0: HTTP + job + report threads + 2 */
    int db_timeout_ms;         /* per-statement timeout (PostgreSQL) */
    int ledger_cache_rows;     /* ledger parse cache slots (service/ledger.h); 0: off */
    const char *port_file;     /* when set, the bound port is written here (tests) */
    int workers;               /* job worker threads */
    int cpus;                  /* CPU budget of the process; 0: online cores */
    int cpu_follow_load;       /* the budget leaves out other processes' load */
    int threads_per_job;       /* most cores a job/report/sampling call takes; 0: no cap */
    int http_threads;          /* libmicrohttpd thread pool size */
    size_t max_body;           /* largest accepted request body, bytes */
    size_t max_rows;           /* most rows a dataset may hold */
    size_t max_dim;            /* largest row width (product of the shape) */
    size_t max_queued;         /* jobs waiting for a worker (503 beyond) */
    size_t max_samples;        /* largest n of a samples request built whole (png) */
    size_t max_stream_samples; /* largest n of a streamed one (json, csv, ndjson, npy) */
    size_t max_job_memory;     /* largest memory estimate of an admitted job, bytes */
    /* Many replicas on one database (service/store/db.h, "the shared job queue"). */
    const char *node_id; /* this replica's name; NULL: hostname:port (pg_svc_config_node_id) */
    int lease_s;         /* a claimed job's lease, seconds */
    int heartbeat_s;     /* lease renewal period, seconds (< lease_s) */
    /* Reads on any replica: snapshots of jobs trained elsewhere (service/snapcache.h). */
    int snapshot_cache_mb; /* memory cap of the cache, MiB (0: keep none) */
    int claim_poll_ms;     /* idle workers look for claimable jobs this often */
    int progress_s;        /* a running job's view is stored this often (0: at checkpoints only) */
    /* Quality reports (service/reports/reports.h). */
    int report_workers;        /* report worker threads; 0: this replica computes none */
    size_t max_queued_reports; /* reports waiting for a worker, all tenants (503 beyond) */
    /* Slow and hostile clients (api/server.c, api/upload_gate.h). */
    int http_timeout_s;        /* an idle connection (no byte either way) is closed after this */
    int max_connections;       /* open HTTP connections, all clients */
    int max_conns_per_ip;      /* open HTTP connections of one address; 0: no limit */
    int max_uploads;           /* row uploads in flight, all tokens (503 beyond) */
    int max_uploads_per_token; /* row uploads in flight of one token (429 beyond) */
    int min_body_rate;         /* bytes/s a request body must average after the grace; 0: off */
    int body_grace_s;          /* seconds a body may take before its rate is checked */
    int header_timeout_s;      /* a connection's wait for a request's complete headers (from its
                                * start, or the end of its previous response), however the bytes
                                * trickle: cut beyond it (api/header_guard.h) */
    int reuse_port;            /* 1: share the port with other listeners (SO_REUSEPORT); 0: a port
                                * in use is an error at start */
} pg_svc_config;

void pg_svc_config_defaults(pg_svc_config *c);

/* Applies PRIVGEN_* environment variables, then argv flags. Returns PG_EINVAL
 * with a message on an unknown flag or bad value; sets *help when --help. */
int pg_svc_config_parse(pg_svc_config *c, int argc, char **argv, int *help, pg_error *err);

/* The storage URL in effect (cfg->db_url or the SQLite default) into buf;
 * PG_EINVAL when it does not fit. */
int pg_svc_config_db_url(const pg_svc_config *c, char *buf, size_t cap, pg_error *err);
/* Database pool size in effect (cfg->db_pool or the default above). */
int pg_svc_config_db_pool(const pg_svc_config *c);

/* The node id in effect into buf: cfg->node_id, else "HOST:PORT" with this
 * machine's hostname and the port of --listen. Port 0 (picked at bind time)
 * gives "HOST:0-XXXXXXXX", a hash of the data dir's absolute path: replicas
 * of one host with their own data dirs stay distinct, and a restart on the
 * same data dir is the same node, so it gets its jobs back at once (a
 * replica releases its own leases at start, service/jobs/jobs.h). PG_EINVAL when
 * it does not fit or is not a valid node id. */
int pg_svc_config_node_id(const pg_svc_config *c, char *buf, size_t cap, pg_error *err);

/* Usage text for --help. */
const char *pg_svc_config_usage(void);

#endif
