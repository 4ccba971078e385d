/* privgen-bench ledger: admission cost as one dataset's ledger grows.
 *
 * For SQLite (a fresh file under /tmp) and PostgreSQL (--pg URI, or a
 * throwaway cluster from scripts/pgtest.sh, removed at the end), for each
 * ledger size N in --sizes (default 0,100,1000,5000): a dataset whose
 * ledger holds N reserved rows (one admitted normally, copied N-1 times by
 * SQL through the sqlite3 / psql clients: admitting 5000 rows one by one
 * would itself be the quadratic cost we measure), then --admissions
 * sequential admissions of a tiny Gaussian plan on it. Each admission reads
 * and composes every reserved row. Reported per size: admissions/s (wall)
 * and this process's CPU per admission (getrusage; PostgreSQL's own work is
 * in the wall time only). --no-cache runs with the ledger parse cache off
 * (pg_db_options.ledger_cache_slots < 0): the figures before the cache.
 * One JSON line per backend and size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/pgcluster.h"
#include "engine/privacy/privacy.h"
#include "service/store/db.h"
#include "service/ledger.h"

static double cpu_ms(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
           (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

static pg_privacy_plan plan_of(void)
{
    pg_privacy_plan p = {0};
    p.charges = true;
    p.norders = (int)pg_rdp_default_orders(p.orders, PG_PLAN_MAX_ORDERS);
    /* sigma = 2000: a tiny charge, so 5000 rows stay under the cap and every
     * admission does the full read-quote-insert. */
    for (int i = 0; i < p.norders; i++) p.rdp[i] = p.orders[i] / (2.0 * 2000.0 * 2000.0);
    p.delta = 1e-5;
    pg_rdp_to_dp(p.orders, p.rdp, (size_t)p.norders, p.delta, PG_RDP_CONV_IMPROVED, &p.epsilon,
                 NULL, NULL);
    p.noise_multiplier = 2000.0;
    p.sampling_rate = 0.01;
    p.steps = 1000;
    snprintf(p.mechanism, sizeof p.mechanism, "gaussian");
    return p;
}

static int admit(pg_db *db, const char *ds, const char *job_id, const pg_privacy_plan *p,
                 int *admitted, pg_error *e)
{
    pg_job_row j = {0};
    snprintf(j.id, sizeof j.id, "%s", job_id);
    snprintf(j.tenant, sizeof j.tenant, "bench");
    snprintf(j.dataset_id, sizeof j.dataset_id, "%s", ds);
    snprintf(j.method, sizeof j.method, "bench");
    j.spec = (char *)"{}";
    pg_ledger_quote q;
    int rc = pg_db_job_admit(db, &j, p, 1e9, 1e-5, &q, e);
    *admitted = !rc && q.admit;
    return rc;
}

/* Copies the seed row n times (job ids seed_k) by SQL, outside privgend's
 * connections (committed before the admissions start). */
static int fill(const char *url, int is_pg, const char *ds, int n)
{
    if (n <= 0) return 0;
    char sql[1024], cmd[2048];
    if (is_pg)
        snprintf(sql, sizeof sql,
                 "INSERT INTO ledger(dataset_id, job_id, state, rdp, epsilon, delta, created_at) "
                 "SELECT dataset_id, job_id || '_' || g, state, rdp, epsilon, delta, created_at "
                 "FROM ledger, generate_series(1, %d) g WHERE job_id = 'seed_%s'",
                 n, ds);
    else
        snprintf(sql, sizeof sql,
                 "WITH RECURSIVE g(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM g WHERE k < %d) "
                 "INSERT INTO ledger(dataset_id, job_id, state, rdp, epsilon, delta, created_at) "
                 "SELECT dataset_id, job_id || '_' || k, state, rdp, epsilon, delta, created_at "
                 "FROM ledger, g WHERE job_id = 'seed_%s'",
                 n, ds);
    if (is_pg)
        snprintf(cmd, sizeof cmd, "psql -q -X '%s' -c \"%s\" >&2", url, sql);
    else
        snprintf(cmd, sizeof cmd, "sqlite3 '%s' \"%s\" >&2", url + strlen("sqlite:"), sql);
    return system(cmd);
}

static int run(const char *url, int is_pg, const char *sizes, int nadmit, int slots,
               const char *backend)
{
    pg_db *db;
    pg_error e = {0};
    pg_db_options o = {.ledger_cache_slots = slots};
    if (pg_db_open(url, &o, &db, &e)) {
        fprintf(stderr, "privgen-bench ledger (%s): %s\n", backend, e.msg);
        return 1;
    }
    pg_privacy_plan plan = plan_of();
    int rc = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", sizes);
    for (char *tok = strtok(list, ","); tok && !rc; tok = strtok(NULL, ",")) {
        int n = atoi(tok);
        char ds[24], id[PG_ID_MAX];
        snprintf(ds, sizeof ds, "ds_%d", n);
        pg_db_dataset d = {0};
        snprintf(d.id, sizeof d.id, "%s", ds);
        snprintf(d.tenant, sizeof d.tenant, "bench");
        d.name = (char *)"bench";
        d.meta = (char *)"{}";
        d.d = 2;
        int ok = 0;
        snprintf(id, sizeof id, "seed_%s", ds);
        if ((rc = pg_db_dataset_insert(db, &d, &e))) break;
        if (n > 0 &&
            ((rc = admit(db, ds, id, &plan, &ok, &e)) || !ok || fill(url, is_pg, ds, n - 1))) {
            fprintf(stderr, "privgen-bench ledger: could not fill %d rows\n", n);
            rc = 1;
            break;
        }
        /* One warm-up admission (statement preparation, the cache's first
         * parse of the filled rows), then the timed ones. */
        snprintf(id, sizeof id, "warm_%s", ds);
        if ((rc = admit(db, ds, id, &plan, &ok, &e))) break;
        int admitted = 0;
        double t0 = pg_bench_now_ms(), c0 = cpu_ms();
        for (int i = 0; i < nadmit && !rc; i++) {
            snprintf(id, sizeof id, "a_%s_%d", ds, i);
            rc = admit(db, ds, id, &plan, &ok, &e);
            admitted += ok;
        }
        double wall = pg_bench_now_ms() - t0, cpu = cpu_ms() - c0;
        if (rc) break;
        printf("{\"bench\":\"ledger\",\"backend\":\"%s\",\"cache\":%s,\"ledger_rows\":%d,"
               "\"admissions\":%d,\"admitted\":%d,\"admissions_per_s\":%.1f,"
               "\"wall_ms_per_admission\":%.3f,\"cpu_ms_per_admission\":%.3f}\n",
               backend, slots < 0 ? "false" : "true", n, nadmit, admitted, admitted / (wall / 1e3),
               wall / nadmit, cpu / nadmit);
        fflush(stdout);
    }
    if (rc) fprintf(stderr, "privgen-bench ledger (%s): %s\n", backend, e.msg);
    pg_db_close(db);
    return rc ? 1 : 0;
}

static int bench_ledger(int argc, char **argv)
{
    const char *sizes = pg_bench_opt(argc, argv, "--sizes", "0,100,1000,5000");
    int nadmit = atoi(pg_bench_opt(argc, argv, "--admissions", "20"));
    int slots = pg_bench_has(argc, argv, "--no-cache") ? -1 : 0;
    const char *pg = pg_bench_opt(argc, argv, "--pg", getenv("PRIVGEN_TEST_DB"));
    const char *src = pg_bench_opt(argc, argv, "--source", getenv("PRIVGEN_SOURCE_DIR"));
    if (nadmit < 1) {
        fprintf(stderr, "usage: privgen-bench ledger [--sizes N,N,...] [--admissions N] "
                        "[--no-cache] [--pg URI] [--source DIR] [--skip-sqlite] [--skip-pg]\n");
        return 2;
    }
    char tmp[] = "/tmp/pgbench-ledger-XXXXXX";
    if (!mkdtemp(tmp)) return 1;
    chmod(tmp, 0711); /* the cluster's owner (postgres, when we are root) must reach its dir */
    int status = 0;
    if (!pg_bench_has(argc, argv, "--skip-sqlite")) {
        char url[128];
        snprintf(url, sizeof url, "sqlite:%s/privgen.db", tmp);
        status |= run(url, 0, sizes, nadmit, slots, "sqlite");
    }
    char uri[1024] = "";
    pg_bench_pg cl = {.script = "", .cluster = ""};
    if (!pg && !pg_bench_has(argc, argv, "--skip-pg")) {
        if (pg_bench_pg_start(&cl, src, tmp, "ledger", uri, sizeof uri))
            status = 1;
        else
            pg = uri;
    }
    if (pg && pg[0]) status |= run(pg, 1, sizes, nadmit, slots, "postgres");
    pg_bench_pg_stop(&cl);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) status = 1;
    return status;
}

PG_BENCH_REGISTER("ledger", "ledger admission: admissions/s and CPU per admission vs ledger size",
                  bench_ledger)
