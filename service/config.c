#include "service/config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service/store/db.h"

void pg_svc_config_defaults(pg_svc_config *c)
{
    c->listen = "127.0.0.1:8080";
    c->data_dir = "./var";
    c->port_file = NULL;
    c->db_url = NULL;
    c->db_pool = 0;
    c->db_timeout_ms = 30000;
    c->ledger_cache_rows = 8192;
    c->workers = 1;
    c->threads_per_job = 0;
    c->cpus = 0;
    c->cpu_follow_load = 1;
    c->http_threads = 4;
    /* Bounds buffered bodies (JSON, CSV, IDX and every non-row route), which
     * are held in memory whole. NPY and raw float32 rows are streamed to disk
     * and bounded by max_rows instead, so large uploads use those formats. */
    c->max_body = (size_t)32 << 20;
    c->max_rows = 10000000;
    c->max_dim = 65536;
    c->max_queued = 64;
    c->max_samples = 10000;
    c->max_stream_samples = 1000000;
    c->max_job_memory = (size_t)4 << 30;
    c->node_id = NULL;
    c->lease_s = 30;
    c->heartbeat_s = 10;
    c->snapshot_cache_mb = 512;
    c->claim_poll_ms = 500;
    c->progress_s = 2;
    c->report_workers = 1;
    c->max_queued_reports = 16;
    c->http_timeout_s = 30;
    c->max_connections = 1000;
    c->max_conns_per_ip = 0;
    c->max_uploads = 16;
    c->max_uploads_per_token = 4;
    c->min_body_rate = 1024;
    c->body_grace_s = 10;
    c->header_timeout_s = 20;
    c->reuse_port = 0;
}

const char *pg_svc_config_usage(void)
{
    return "usage: privgend [options]\n"
           "  --listen HOST:PORT      address to serve on (PRIVGEN_LISTEN, default "
           "127.0.0.1:8080; port 0 = any free port)\n"
           "  --data-dir DIR          admin token and, by default, the database (PRIVGEN_DATA_DIR, "
           "default ./var)\n"
           "  --db URL                storage: sqlite:PATH or postgresql://... (PRIVGEN_DB, "
           "default sqlite:DATA_DIR/privgen.db)\n"
           "  --db-pool N             database connections (PRIVGEN_DB_POOL, default HTTP + "
           "job and report worker threads + 2)\n"
           "  --db-timeout-ms N       statement timeout, PostgreSQL (PRIVGEN_DB_TIMEOUT_MS, "
           "default 30000)\n"
           "  --ledger-cache-rows N   decoded ledger rows kept in memory, about 6 KiB each "
           "(PRIVGEN_LEDGER_CACHE_ROWS, default 8192; 0 = off)\n"
           "  --workers N             job worker threads (PRIVGEN_WORKERS, default 1)\n"
           "  --cpus N                cores of the process's CPU budget (PRIVGEN_CPUS; 0: the\n"
           "                          machine's online cores, default)\n"
           "  --cpu-follow-load 0|1   lend only the cores other processes leave free, read\n"
           "                          from /proc/stat (PRIVGEN_CPU_FOLLOW_LOAD, default 1)\n"
           "  --threads-per-job N     most cores one job step or sampling call takes from\n"
           "                          the process's CPU budget (PRIVGEN_THREADS_PER_JOB; 0: no\n"
           "                          cap, default); reports run one thread\n"
           "  --http-threads N        HTTP thread pool size (PRIVGEN_HTTP_THREADS, default 4)\n"
           "  --max-body BYTES        largest buffered body (PRIVGEN_MAX_BODY, default 32M; "
           "K/M/G suffixes)\n"
           "  --max-rows N            most rows per dataset (PRIVGEN_MAX_ROWS, default 10000000)\n"
           "  --max-dim N             widest row (PRIVGEN_MAX_DIM, default 65536)\n"
           "  --max-queued N          jobs waiting for a worker (PRIVGEN_MAX_QUEUED, default 64)\n"
           "  --max-samples N         largest samples request built whole in memory: format=png "
           "(PRIVGEN_MAX_SAMPLES, default 10000)\n"
           "  --max-stream-samples N  largest samples request of a streamed format: json, csv, "
           "ndjson, npy (PRIVGEN_MAX_STREAM_SAMPLES, default 1000000)\n"
           "  --max-job-memory BYTES  largest job memory estimate (PRIVGEN_MAX_JOB_MEMORY, "
           "default 4G)\n"
           "  --port-file PATH        write the bound port to PATH (PRIVGEN_PORT_FILE)\n"
           "  --node-id NAME          this replica's name in the shared job queue "
           "(PRIVGEN_NODE_ID, "
           "default HOSTNAME:PORT)\n"
           "  --lease-seconds N       lease of a claimed job; another replica takes the job over "
           "once it expires (PRIVGEN_LEASE_SECONDS, default 30)\n"
           "  --heartbeat-seconds N   lease renewal period, below the lease "
           "(PRIVGEN_HEARTBEAT_SECONDS, default 10)\n"
           "  --snapshot-cache-mb N   memory for models of jobs trained on other replicas, "
           "rebuilt from their checkpoints to serve samples (PRIVGEN_SNAPSHOT_CACHE_MB, default "
           "512; 0 keeps none)\n"
           "  --claim-poll-ms N       how often idle workers look for jobs submitted through "
           "other replicas (PRIVGEN_CLAIM_POLL_MS, default 500)\n"
           "  --progress-seconds N    how often a running job's progress is stored for the other "
           "replicas, 0: at checkpoints only (PRIVGEN_PROGRESS_SECONDS, default 2)\n"
           "  --report-workers N      quality-report worker threads, 0..16; 0: another replica "
           "computes them (PRIVGEN_REPORT_WORKERS, default 1)\n"
           "  --max-queued-reports N  reports waiting for a worker (PRIVGEN_MAX_QUEUED_REPORTS, "
           "default 16)\n"
           "  --http-timeout-seconds N  close a connection idle this long: no request, or no "
           "byte of its headers or body (PRIVGEN_HTTP_TIMEOUT_SECONDS, default 30)\n"
           "  --max-connections N     open HTTP connections in all (PRIVGEN_MAX_CONNECTIONS, "
           "default 1000)\n"
           "  --max-connections-per-ip N  open HTTP connections of one client address, 0: no "
           "limit (PRIVGEN_MAX_CONNECTIONS_PER_IP, default 0; behind a proxy every client has "
           "its address)\n"
           "  --max-uploads N         row uploads in flight in all, 503 beyond "
           "(PRIVGEN_MAX_UPLOADS, default 16)\n"
           "  --max-uploads-per-token N  row uploads in flight of one token, 429 beyond "
           "(PRIVGEN_MAX_UPLOADS_PER_TOKEN, default 4)\n"
           "  --min-body-rate BYTES   a request body slower than this on average (bytes/s, "
           "after the grace) is cut and its connection closed; 0: off (PRIVGEN_MIN_BODY_RATE, "
           "default 1K)\n"
           "  --body-grace-seconds N  time a body may take before its rate is checked "
           "(PRIVGEN_BODY_GRACE_SECONDS, default 10)\n"
           "  --header-timeout-seconds N  time a connection may take to send a request's "
           "headers (from its start or its previous response), however the bytes trickle; "
           "cut beyond (PRIVGEN_HEADER_TIMEOUT_SECONDS, default 20)\n"
           "  --reuse-port            share the port with other servers listening on it "
           "(SO_REUSEPORT; PRIVGEN_REUSE_PORT=1); without it a port in use is an error at "
           "start\n";
}

/* Parses a positive integer with an optional K/M/G (binary) suffix. */
static int parse_size(const char *s, size_t lo, size_t *out)
{
    if (!s || !*s) return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || s[0] == '-') return -1;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10, end++;
    else if (*end == 'M' || *end == 'm')
        shift = 20, end++;
    else if (*end == 'G' || *end == 'g')
        shift = 30, end++;
    if (*end) return -1;
    if (shift && v > (UINT64_MAX >> shift)) return -1;
    v <<= shift;
    if (v < lo || v > SIZE_MAX) return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    size_t v;
    if (parse_size(s, (size_t)lo, &v) || v > (size_t)hi) return -1;
    *out = (int)v;
    return 0;
}

/* ZINT: may be 0; BOOL: a flag alone means 1, or =1/=0, true/false, yes/no */
enum opt_kind { OPT_STR, OPT_INT, OPT_ZINT, OPT_SIZE, OPT_BOOL };

typedef struct opt {
    const char *flag, *env;
    enum opt_kind kind;
    size_t offset;
    long lo, hi;
} opt;

#define OFF(f) offsetof(pg_svc_config, f)
static const opt OPTS[] = {
    {"--listen", "PRIVGEN_LISTEN", OPT_STR, OFF(listen), 0, 0},
    {"--data-dir", "PRIVGEN_DATA_DIR", OPT_STR, OFF(data_dir), 0, 0},
    {"--port-file", "PRIVGEN_PORT_FILE", OPT_STR, OFF(port_file), 0, 0},
    {"--db", "PRIVGEN_DB", OPT_STR, OFF(db_url), 0, 0},
    {"--db-pool", "PRIVGEN_DB_POOL", OPT_INT, OFF(db_pool), 1, 1024},
    {"--db-timeout-ms", "PRIVGEN_DB_TIMEOUT_MS", OPT_INT, OFF(db_timeout_ms), 1, 3600000},
    {"--ledger-cache-rows", "PRIVGEN_LEDGER_CACHE_ROWS", OPT_INT, OFF(ledger_cache_rows), 0,
     1048576},
    {"--workers", "PRIVGEN_WORKERS", OPT_INT, OFF(workers), 1, 256},
    {"--cpus", "PRIVGEN_CPUS", OPT_INT, OFF(cpus), 0, 4096},
    {"--cpu-follow-load", "PRIVGEN_CPU_FOLLOW_LOAD", OPT_INT, OFF(cpu_follow_load), 0, 1},
    {"--threads-per-job", "PRIVGEN_THREADS_PER_JOB", OPT_INT, OFF(threads_per_job), 0, 1024},
    {"--http-threads", "PRIVGEN_HTTP_THREADS", OPT_INT, OFF(http_threads), 1, 256},
    {"--max-body", "PRIVGEN_MAX_BODY", OPT_SIZE, OFF(max_body), 1024, 0},
    {"--max-rows", "PRIVGEN_MAX_ROWS", OPT_SIZE, OFF(max_rows), 1, 0},
    {"--max-dim", "PRIVGEN_MAX_DIM", OPT_SIZE, OFF(max_dim), 1, 0},
    {"--max-queued", "PRIVGEN_MAX_QUEUED", OPT_SIZE, OFF(max_queued), 1, 0},
    {"--max-samples", "PRIVGEN_MAX_SAMPLES", OPT_SIZE, OFF(max_samples), 1, 0},
    {"--max-stream-samples", "PRIVGEN_MAX_STREAM_SAMPLES", OPT_SIZE, OFF(max_stream_samples), 1, 0},
    {"--max-job-memory", "PRIVGEN_MAX_JOB_MEMORY", OPT_SIZE, OFF(max_job_memory), 1 << 20, 0},
    {"--node-id", "PRIVGEN_NODE_ID", OPT_STR, OFF(node_id), 0, 0},
    {"--lease-seconds", "PRIVGEN_LEASE_SECONDS", OPT_INT, OFF(lease_s), 2, 86400},
    {"--heartbeat-seconds", "PRIVGEN_HEARTBEAT_SECONDS", OPT_INT, OFF(heartbeat_s), 1, 86400},
    {"--snapshot-cache-mb", "PRIVGEN_SNAPSHOT_CACHE_MB", OPT_INT, OFF(snapshot_cache_mb), 0,
     1048576},
    {"--claim-poll-ms", "PRIVGEN_CLAIM_POLL_MS", OPT_INT, OFF(claim_poll_ms), 10, 60000},
    {"--progress-seconds", "PRIVGEN_PROGRESS_SECONDS", OPT_ZINT, OFF(progress_s), 0, 3600},
    {"--report-workers", "PRIVGEN_REPORT_WORKERS", OPT_INT, OFF(report_workers), 0, 16},
    {"--max-queued-reports", "PRIVGEN_MAX_QUEUED_REPORTS", OPT_SIZE, OFF(max_queued_reports), 1, 0},
    {"--http-timeout-seconds", "PRIVGEN_HTTP_TIMEOUT_SECONDS", OPT_INT, OFF(http_timeout_s), 1,
     86400},
    {"--max-connections", "PRIVGEN_MAX_CONNECTIONS", OPT_INT, OFF(max_connections), 1, 1000000},
    {"--max-connections-per-ip", "PRIVGEN_MAX_CONNECTIONS_PER_IP", OPT_ZINT, OFF(max_conns_per_ip),
     0, 1000000},
    {"--max-uploads", "PRIVGEN_MAX_UPLOADS", OPT_INT, OFF(max_uploads), 1, 100000},
    {"--max-uploads-per-token", "PRIVGEN_MAX_UPLOADS_PER_TOKEN", OPT_INT,
     OFF(max_uploads_per_token), 1, 100000},
    {"--min-body-rate", "PRIVGEN_MIN_BODY_RATE", OPT_ZINT, OFF(min_body_rate), 0, 1 << 30},
    {"--body-grace-seconds", "PRIVGEN_BODY_GRACE_SECONDS", OPT_INT, OFF(body_grace_s), 1, 86400},
    {"--header-timeout-seconds", "PRIVGEN_HEADER_TIMEOUT_SECONDS", OPT_INT, OFF(header_timeout_s),
     1, 86400},
    {"--reuse-port", "PRIVGEN_REUSE_PORT", OPT_BOOL, OFF(reuse_port), 0, 1},
};
#define NOPTS (sizeof OPTS / sizeof OPTS[0])

static int apply(pg_svc_config *c, const opt *o, const char *val, const char *from, pg_error *err)
{
    char *base = (char *)c + o->offset;
    if (!val) return pg_error_set(err, PG_EINVAL, "%s needs a value", from);
    switch (o->kind) {
    case OPT_STR:
        if (!*val) return pg_error_set(err, PG_EINVAL, "%s must not be empty", from);
        *(const char **)(void *)base = val;
        return PG_OK;
    case OPT_ZINT:
        /* 0 spelled exactly "0" (an off switch); anything else as OPT_INT
         * from 1, so "0K" or "00" are refused as before */
        if (!strcmp(val, "0")) {
            *(int *)(void *)base = 0;
            return PG_OK;
        }
        /* fall through */
    case OPT_INT:
        if (parse_int(val, o->kind == OPT_ZINT ? 1 : (int)o->lo, (int)o->hi, (int *)(void *)base))
            return pg_error_set(err, PG_EINVAL, "%s must be an integer in [%ld, %ld], got '%s'",
                                from, o->lo, o->hi, val);
        return PG_OK;
    case OPT_BOOL:
        if (!strcmp(val, "1") || !strcmp(val, "true") || !strcmp(val, "yes"))
            *(int *)(void *)base = 1;
        else if (!strcmp(val, "0") || !strcmp(val, "false") || !strcmp(val, "no"))
            *(int *)(void *)base = 0;
        else
            return pg_error_set(err, PG_EINVAL, "%s must be 1 or 0 (true/false), got '%s'", from,
                                val);
        return PG_OK;
    case OPT_SIZE:
        if (parse_size(val, (size_t)o->lo, (size_t *)(void *)base))
            return pg_error_set(err, PG_EINVAL,
                                "%s must be an integer >= %ld (K/M/G allowed), got '%s'", from,
                                o->lo, val);
        return PG_OK;
    }
    return PG_OK;
}

int pg_svc_config_parse(pg_svc_config *c, int argc, char **argv, int *help, pg_error *err)
{
    *help = 0;
    for (size_t i = 0; i < NOPTS; i++) {
        const char *v = getenv(OPTS[i].env);
        if (v && apply(c, &OPTS[i], v, OPTS[i].env, err)) return PG_EINVAL;
    }
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            *help = 1;
            return PG_OK;
        }
        const opt *o = NULL;
        const char *val = NULL;
        for (size_t i = 0; i < NOPTS && !o; i++) {
            size_t fl = strlen(OPTS[i].flag);
            if (!strncmp(arg, OPTS[i].flag, fl) && (arg[fl] == '\0' || arg[fl] == '=')) {
                o = &OPTS[i];
                if (arg[fl] == '=')
                    val = arg + fl + 1;
                else if (o->kind == OPT_BOOL)
                    val = "1"; /* a flag alone: it takes no value */
                else
                    val = a + 1 < argc ? argv[++a] : NULL;
            }
        }
        if (!o) return pg_error_set(err, PG_EINVAL, "unknown option '%s' (see --help)", arg);
        if (apply(c, o, val, o->flag, err)) return PG_EINVAL;
    }
    /* A lease renewed no faster than it runs out is lost to any delay. */
    if (c->heartbeat_s >= c->lease_s)
        return pg_error_set(err, PG_EINVAL,
                            "--heartbeat-seconds (%d) must be below --lease-seconds (%d)",
                            c->heartbeat_s, c->lease_s);
    if (c->node_id) {
        char buf[PG_NODE_MAX];
        if (pg_svc_config_node_id(c, buf, sizeof buf, err)) return PG_EINVAL;
    }
    return PG_OK;
}

static int node_ok(const char *s)
{
    if (!*s || strlen(s) >= PG_NODE_MAX) return 0;
    for (; *s; s++)
        if (*s < 0x21 || *s > 0x7e) return 0;
    return 1;
}

/* FNV-1a of the data dir's absolute path (as given when it does not exist). */
static uint32_t dir_hash(const char *dir)
{
    char abs[PATH_MAX];
    const char *p = realpath(dir, abs) ? abs : dir;
    uint32_t h = 2166136261u;
    for (; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
    return h;
}

int pg_svc_config_node_id(const pg_svc_config *c, char *buf, size_t cap, pg_error *err)
{
    int n;
    if (c->node_id) {
        n = snprintf(buf, cap, "%s", c->node_id);
    } else {
        char host[256] = "localhost";
        if (gethostname(host, sizeof host - 1)) snprintf(host, sizeof host, "localhost");
        host[sizeof host - 1] = '\0';
        const char *colon = strrchr(c->listen, ':');
        const char *port = colon ? colon + 1 : "8080";
        if (!strcmp(port, "0"))
            n = snprintf(buf, cap, "%s:0-%08x", host, dir_hash(c->data_dir));
        else
            n = snprintf(buf, cap, "%s:%s", host, port);
    }
    if (n < 0 || (size_t)n >= cap || !node_ok(buf))
        return pg_error_set(err, PG_EINVAL,
                            "--node-id must be 1 to %d printable characters without spaces",
                            PG_NODE_MAX - 1);
    return PG_OK;
}

int pg_svc_config_db_url(const pg_svc_config *c, char *buf, size_t cap, pg_error *err)
{
    int n = c->db_url ? snprintf(buf, cap, "%s", c->db_url)
                      : snprintf(buf, cap, "sqlite:%s/privgen.db", c->data_dir);
    if (n < 0 || (size_t)n >= cap) return pg_error_set(err, PG_EINVAL, "database URL too long");
    return PG_OK;
}

int pg_svc_config_db_pool(const pg_svc_config *c)
{
    return c->db_pool > 0 ? c->db_pool : c->http_threads + c->workers + c->report_workers + 2;
}
