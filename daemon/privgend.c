/* privgend: the service process. main() is the composition root: it wires
 * config, storage (service/db.h), auth bootstrap, metrics, the job workers
 * and the HTTP server, then waits for SIGINT/SIGTERM and shuts down cleanly
 * (in-flight requests finish, the database is closed last). It sits above
 * both api/ and service/, which is why it lives in daemon/ and not in
 * either layer. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/server.h"
#include "engine/core/cpu.h"
#include "service/auth.h"
#include "service/config.h"
#include "service/jobs/jobs.h"
#include "service/log.h"
#include "service/metrics.h"
#include "service/reports/reports.h"
#include "service/store/db.h"

#define SHUTDOWN_GRACE_MS 5000

static int fail(const char *what, const pg_error *err)
{
    char extra[400];
    snprintf(extra, sizeof extra, "\"error\":\"%s\"", err->msg);
    for (char *p = extra + 9; *p && p[1]; p++)
        if (*p == '"' || *p == '\\') *p = '\'';
    pg_log_event("error", what, extra);
    return EXIT_FAILURE;
}

static int mkdir_p(const char *path, pg_error *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return pg_error_set(err, PG_EINVAL, "path too long: %s", path);
    for (char *p = tmp + 1;; p++) {
        if (*p && *p != '/') continue;
        char c = *p;
        *p = '\0';
        if (mkdir(tmp, 0700) && errno != EEXIST)
            return pg_error_set(err, PG_EIO, "cannot create %s: %s", tmp, strerror(errno));
        if (!c) break;
        *p = c;
    }
    return PG_OK;
}

/* JSON-safe copy for log fields (quotes and backslashes become '). */
static void log_safe(char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20) *s = '\'';
}

static int write_port_file(const char *path, unsigned port, pg_error *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return pg_error_set(err, PG_EINVAL, "port file path too long");
    FILE *f = fopen(tmp, "w");
    if (!f) return pg_error_set(err, PG_EIO, "cannot write %s: %s", tmp, strerror(errno));
    int bad = fprintf(f, "%u\n", port) < 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path))
        return pg_error_set(err, PG_EIO, "cannot write %s: %s", path, strerror(errno));
    return PG_OK;
}

/* Where the admin token is. Only the replica that created it has its
 * plaintext (DATA_DIR/admin.token); one that finds the tokens already there
 * and no such file here (a replica started after the first, or one that lost
 * the race of a simultaneous first start) says which token that is and
 * where to look, since it cannot know the token itself. */
static void log_bootstrap(const char *data_dir, int created, const pg_token *first, char *extra,
                          size_t cap)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/admin.token", data_dir);
    log_safe(path);
    if (created) {
        snprintf(extra, cap, "\"path\":\"%s\",\"token_id\":\"%s\"", path, first->id);
        pg_log_event("info", "created the admin token", extra);
        return;
    }
    struct stat st;
    if (!first || stat(path, &st) == 0) return;
    snprintf(extra, cap,
             "\"token_id\":\"%s\",\"created_at\":%lld,\"hint\":\"the token is in admin.token "
             "in the data dir of the replica that created it (or mint one with another admin "
             "token)\"",
             first->id, (long long)first->created_at);
    pg_log_event("info", "an admin token already exists", extra);
}

/* OpenMP's default wait spins 300 000 times at every barrier; a worker
 * whose core runs someone else then holds the team for its whole time slice.
 * The policy is read once when libgomp initializes (before main), so when the
 * user set neither variable privgend sets a passive policy with a short
 * bounded spin (GOMP_SPINCOUNT 20 000, tens of microseconds) and re-executes
 * itself once. Measured on 2 cores (docs/benchmarks.md): a pure
 * passive wait made quiet Sinkhorn 1000x784 1.5-1.8x slower (0.72-0.99
 * against 0.42-0.53 ms/iter); the short spin keeps quiet speed (0.49-0.63),
 * and the CPU budget, which follows the machine's load, grants one thread
 * when another process holds a core, so no team waits on a descheduled
 * worker for long. */
static void ensure_bounded_omp_waits(char **argv)
{
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) || setenv("GOMP_SPINCOUNT", "20000", 1)) return;
    execv("/proc/self/exe", argv);
    /* exec failed (no /proc): keep going with the default policy. */
}

int main(int argc, char **argv)
{
    ensure_bounded_omp_waits(argv);
    pg_svc_config cfg;
    pg_svc_config_defaults(&cfg);
    pg_error err = {0};
    int help;
    if (pg_svc_config_parse(&cfg, argc, argv, &help, &err)) {
        fprintf(stderr, "privgend: %s\n%s", err.msg, pg_svc_config_usage());
        return 2;
    }
    if (help) {
        fputs(pg_svc_config_usage(), stdout);
        return 0;
    }
    /* Block the signals before any thread starts so every thread inherits
     * the mask and only sigwait below receives them. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    pg_db *db = NULL;
    pg_metrics *metrics = NULL;
    pg_api_server *server = NULL;
    pg_jobs *jobs = NULL;
    pg_cpu_budget *cpu = NULL; /* one budget for everything that computes */
    char url[PATH_MAX + 64], shown[256];
    if (mkdir_p(cfg.data_dir, &err) || pg_svc_config_db_url(&cfg, url, sizeof url, &err))
        return fail("cannot prepare the data dir", &err);
    char node[PG_NODE_MAX];
    if (pg_svc_config_node_id(&cfg, node, sizeof node, &err)) return fail("invalid node id", &err);
    pg_log_set_node(node); /* every line names the replica, from here on */
    pg_db_url_redact(url, shown, sizeof shown);
    log_safe(shown);
    pg_db_options dbo = {.pool_size = pg_svc_config_db_pool(&cfg),
                         .statement_timeout_ms = cfg.db_timeout_ms,
                         .ledger_cache_slots = cfg.ledger_cache_rows ? cfg.ledger_cache_rows : -1};
    if (pg_db_open(url, &dbo, &db, &err)) {
        pg_error_wrap(&err, "%s", shown);
        return fail("cannot open the database", &err);
    }
    int created, has_first;
    pg_token first;
    if (pg_auth_bootstrap(db, cfg.data_dir, &created, &first, &has_first, &err)) {
        pg_db_close(db);
        pg_cpu_budget_destroy(cpu);
        return fail("cannot create the admin token", &err);
    }
    char extra[PATH_MAX + 256];
    log_bootstrap(cfg.data_dir, created, has_first ? &first : NULL, extra, sizeof extra);
    if (pg_metrics_create(&metrics, &err)) {
        pg_db_close(db);
        pg_cpu_budget_destroy(cpu);
        return fail("cannot start", &err);
    }
    if (pg_cpu_budget_create(cfg.cpus, &cpu, &err)) {
        pg_metrics_destroy(metrics);
        pg_db_close(db);
        return fail("cannot start", &err);
    }
    /* Cores other processes keep busy are not lent out (engine/core/cpu.h). */
    pg_cpu_budget_follow_load(cpu, cfg.cpu_follow_load != 0);
    if (pg_jobs_create(&cfg, db, &jobs, &err) ||
        (pg_jobs_set_cpu(jobs, cpu), pg_jobs_start(jobs, &err))) {
        pg_jobs_destroy(jobs);
        pg_metrics_destroy(metrics);
        pg_db_close(db);
        pg_cpu_budget_destroy(cpu);
        return fail("cannot start the job workers", &err);
    }
    pg_reports *reports = NULL;
    if (pg_reports_create(&cfg, db, jobs, &reports, &err) || pg_reports_start(reports, &err)) {
        pg_reports_destroy(reports);
        pg_jobs_destroy(jobs);
        pg_metrics_destroy(metrics);
        pg_db_close(db);
        pg_cpu_budget_destroy(cpu);
        return fail("cannot start the report workers", &err);
    }
    unsigned port;
    if (pg_api_server_start_all(&cfg, db, metrics, jobs, reports, &server, &port, &err)) {
        pg_reports_destroy(reports);
        pg_jobs_destroy(jobs);
        pg_metrics_destroy(metrics);
        pg_db_close(db);
        pg_cpu_budget_destroy(cpu);
        return fail("cannot start the HTTP server", &err);
    }
    snprintf(extra, sizeof extra,
             "\"listen\":\"%s\",\"port\":%u,\"data_dir\":\"%s\",\"db\":\"%s\",\"backend\":\"%s\","
             "\"lease_seconds\":%d,\"heartbeat_seconds\":%d",
             cfg.listen, port, cfg.data_dir, shown, pg_db_backend(db), cfg.lease_s,
             cfg.heartbeat_s);
    pg_log_event("info", "privgend ready", extra);
    if (cfg.port_file && write_port_file(cfg.port_file, port, &err)) {
        pg_api_server_stop(server, 0);
        pg_reports_destroy(reports);
        pg_jobs_destroy(jobs);
        pg_metrics_destroy(metrics);
        pg_db_close(db);
        pg_cpu_budget_destroy(cpu);
        return fail("cannot write the port file", &err);
    }
    int sig = 0;
    while (sigwait(&sigs, &sig) != 0) {
    }
    /* Shutdown is bounded by SHUTDOWN_GRACE_MS; further signals during it are
     * discarded rather than left pending for some late-created thread. */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    snprintf(extra, sizeof extra, "\"signal\":%d", sig);
    pg_log_event("info", "shutting down", extra);
    /* Event streams end (a balancer moves their clients to another
     * replica); the server keeps answering while running jobs checkpoint
     * and release their leases, which other replicas claim at once (or
     * this node at its next start). Then in-flight requests finish. */
    pg_jobs_quiesce(jobs);
    pg_jobs_drain(jobs);
    pg_log_event("info", "drained: running jobs checkpointed and released", NULL);
    pg_api_server_stop(server, SHUTDOWN_GRACE_MS);
    pg_reports_destroy(reports); /* a running report is queued again */
    pg_jobs_destroy(jobs);       /* running jobs checkpoint and resume next start */
    pg_metrics_destroy(metrics);
    pg_db_close(db);
    pg_cpu_budget_destroy(cpu);
    pg_log_event("info", "stopped", NULL);
    return 0;
}
