/* privgen-bench store: the storage contract on both backends, one run.
 *
 * For SQLite (a fresh file under /tmp) and PostgreSQL (--pg URI, or a
 * throwaway cluster started with scripts/pgtest.sh and removed at the end):
 *   append   one streamed append of --rows x --d float32 rows, written in
 *            pieces of 1000 rows as the HTTP layer does, begin to commit;
 *   read     the same rows loaded back (checksums verified);
 *   admit    --admissions sequential ledger admissions of a Gaussian plan
 *            on one dataset (each reads every reserved row, so the cost
 *            grows with the ledger: the figure is for that many rows), then
 *            the same count spread over --threads threads on one dataset.
 * --pg must name an empty database. One JSON line per backend. Wall-clock times: the database
 * server works in other processes, so CPU time of this one would not measure it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/pgcluster.h"
#include "engine/core/alloc.h"
#include "engine/privacy/privacy.h"
#include "service/store/db.h"
#include "service/ledger.h"

typedef struct res {
    double append_s, read_s, admit_s, admit_par_s;
    long admitted, admitted_par;
} res;

static pg_privacy_plan plan_of(void)
{
    pg_privacy_plan p = {0};
    p.charges = true;
    p.norders = (int)pg_rdp_default_orders(p.orders, PG_PLAN_MAX_ORDERS);
    /* sigma = 200: a tiny charge, so the cap never refuses and every
     * admission does the full read-quote-insert. */
    for (int i = 0; i < p.norders; i++) p.rdp[i] = p.orders[i] / (2.0 * 200.0 * 200.0);
    p.delta = 1e-5;
    pg_rdp_to_dp(p.orders, p.rdp, (size_t)p.norders, p.delta, PG_RDP_CONV_IMPROVED, &p.epsilon,
                 NULL, NULL);
    snprintf(p.mechanism, sizeof p.mechanism, "gaussian");
    return p;
}

static int dataset(pg_db *db, const char *id, int64_t d, pg_error *e)
{
    pg_db_dataset ds = {0};
    snprintf(ds.id, sizeof ds.id, "%s", id);
    snprintf(ds.tenant, sizeof ds.tenant, "bench");
    ds.name = (char *)"bench";
    ds.meta = (char *)"{}";
    ds.d = d;
    return pg_db_dataset_insert(db, &ds, e);
}

static int admit_one(pg_db *db, const char *ds, const char *job_id, const pg_privacy_plan *p,
                     long *admitted, pg_error *e)
{
    pg_job_row j = {0};
    snprintf(j.id, sizeof j.id, "%s", job_id);
    snprintf(j.tenant, sizeof j.tenant, "bench");
    snprintf(j.dataset_id, sizeof j.dataset_id, "%s", ds);
    snprintf(j.method, sizeof j.method, "bench");
    j.spec = (char *)"{}";
    pg_ledger_quote q;
    int rc = pg_db_job_admit(db, &j, p, 1e9, 1e-5, &q, e);
    if (!rc && q.admit) (*admitted)++;
    return rc;
}

typedef struct par_arg {
    pg_db *db;
    int t, n;
    long admitted;
    int rc;
    pg_error e;
} par_arg;

static void *par_admit(void *p)
{
    par_arg *a = p;
    pg_privacy_plan plan = plan_of();
    for (int i = 0; i < a->n && !a->rc; i++) {
        char id[PG_ID_MAX];
        snprintf(id, sizeof id, "par_%d_%d", a->t, i);
        a->rc = admit_one(a->db, "ds_admit_par", id, &plan, &a->admitted, &a->e);
    }
    return NULL;
}

static int run(const char *url, size_t rows, size_t d, int nadmit, int threads, res *r, pg_error *e)
{
    pg_db *db;
    pg_db_options o = {.pool_size = threads + 4};
    int rc = pg_db_open(url, &o, &db, e);
    if (rc) return rc;
    if ((rc = dataset(db, "ds_append", (int64_t)d, e))) goto out;

    enum { PIECE = 1000 };
    float *x = pg_alloc_f32(PIECE * d);
    int32_t *labels = malloc(rows * sizeof *labels);
    if (!x || !labels) {
        pg_free(x);
        free(labels);
        rc = pg_error_set(e, PG_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < PIECE * d; i++) x[i] = (float)(i % 977) / 977.0f;
    for (size_t i = 0; i < rows; i++) labels[i] = (int32_t)(i % 10);
    double t0 = pg_bench_now_ms();
    pg_db_append *a;
    if (!(rc = pg_db_append_begin(db, "bench", "ds_append", d, &a, e))) {
        for (size_t at = 0; !rc && at < rows; at += PIECE) {
            size_t k = rows - at < PIECE ? rows - at : PIECE;
            rc = pg_db_append_write(a, x, k * d, e);
        }
        int found;
        int64_t got, n;
        if (rc)
            pg_db_append_abort(a);
        else
            rc = pg_db_append_commit(a, labels, (int64_t)rows, &found, &got, &n, e);
    }
    r->append_s = (pg_bench_now_ms() - t0) / 1e3;
    pg_free(x);
    free(labels);
    if (rc) goto out;

    t0 = pg_bench_now_ms();
    pg_block all;
    int labeled;
    if ((rc = pg_db_rows_load(db, "ds_append", d, (size_t)-1, &all, &labeled, e))) goto out;
    r->read_s = (pg_bench_now_ms() - t0) / 1e3;
    if (all.n != rows || !labeled) rc = pg_error_set(e, PG_EFORMAT, "read back the wrong rows");
    pg_block_free(&all);
    if (rc) goto out;

    pg_privacy_plan plan = plan_of();
    if ((rc = dataset(db, "ds_admit", 2, e)) || (rc = dataset(db, "ds_admit_par", 2, e))) goto out;
    t0 = pg_bench_now_ms();
    for (int i = 0; !rc && i < nadmit; i++) {
        char id[PG_ID_MAX];
        snprintf(id, sizeof id, "seq_%d", i);
        rc = admit_one(db, "ds_admit", id, &plan, &r->admitted, e);
    }
    r->admit_s = (pg_bench_now_ms() - t0) / 1e3;
    if (rc) goto out;

    pthread_t t[64];
    par_arg pa[64];
    if (threads > 64) threads = 64;
    t0 = pg_bench_now_ms();
    for (int i = 0; i < threads; i++) {
        pa[i] = (par_arg){.db = db, .t = i, .n = nadmit / threads};
        pthread_create(&t[i], NULL, par_admit, &pa[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        r->admitted_par += pa[i].admitted;
        if (pa[i].rc && !rc) {
            rc = pa[i].rc;
            if (e) *e = pa[i].e;
        }
    }
    r->admit_par_s = (pg_bench_now_ms() - t0) / 1e3;
out:
    pg_db_close(db);
    return rc;
}

static void report(const char *backend, size_t rows, size_t d, int nadmit, int threads,
                   const res *r)
{
    double mb = (double)rows * (double)d * 4.0 / 1e6;
    printf("{\"bench\":\"store\",\"backend\":\"%s\",\"rows\":%zu,\"d\":%zu,"
           "\"append_s\":%.3f,\"append_rows_per_s\":%.0f,\"append_mb_per_s\":%.1f,"
           "\"read_s\":%.3f,\"read_mb_per_s\":%.1f,"
           "\"admissions\":%d,\"admitted\":%ld,\"admit_s\":%.3f,\"admissions_per_s\":%.1f,"
           "\"threads\":%d,\"admitted_parallel\":%ld,\"admit_parallel_s\":%.3f,"
           "\"admissions_per_s_parallel\":%.1f}\n",
           backend, rows, d, r->append_s, (double)rows / r->append_s, mb / r->append_s, r->read_s,
           mb / r->read_s, nadmit, r->admitted, r->admit_s, (double)r->admitted / r->admit_s,
           threads, r->admitted_par, r->admit_par_s, (double)r->admitted_par / r->admit_par_s);
    fflush(stdout);
}

static int bench_store(int argc, char **argv)
{
    size_t rows = strtoull(pg_bench_opt(argc, argv, "--rows", "60000"), NULL, 10);
    size_t d = strtoull(pg_bench_opt(argc, argv, "--d", "784"), NULL, 10);
    int nadmit = atoi(pg_bench_opt(argc, argv, "--admissions", "200"));
    int threads = atoi(pg_bench_opt(argc, argv, "--threads", "4"));
    const char *pg = pg_bench_opt(argc, argv, "--pg", getenv("PRIVGEN_TEST_DB"));
    const char *src = pg_bench_opt(argc, argv, "--source", getenv("PRIVGEN_SOURCE_DIR"));
    if (!rows || !d || nadmit < 1 || threads < 1) {
        fprintf(stderr, "usage: privgen-bench store [--rows N] [--d D] [--admissions N] "
                        "[--threads T] [--pg URI] [--source DIR] [--skip-sqlite]\n");
        return 2;
    }
    char tmp[] = "/tmp/pgbench-store-XXXXXX";
    if (!mkdtemp(tmp)) return 1;
    chmod(tmp, 0711); /* the cluster's owner (postgres, when we are root) must reach its dir */
    int status = 0;
    pg_error e = {0};
    res r;
    if (!pg_bench_has(argc, argv, "--skip-sqlite")) {
        char url[128];
        snprintf(url, sizeof url, "sqlite:%s/privgen.db", tmp);
        r = (res){0};
        if (run(url, rows, d, nadmit, threads, &r, &e)) {
            fprintf(stderr, "privgen-bench store (sqlite): %s\n", e.msg);
            status = 1;
        } else {
            report("sqlite", rows, d, nadmit, threads, &r);
        }
    }
    char uri[1024] = "";
    pg_bench_pg cl = {.script = "", .cluster = ""};
    if (!pg) {
        if (pg_bench_pg_start(&cl, src, tmp, "store", uri, sizeof uri))
            status = 1;
        else
            pg = uri;
    }
    if (pg && pg[0]) {
        r = (res){0};
        e = (pg_error){0};
        if (run(pg, rows, d, nadmit, threads, &r, &e)) {
            fprintf(stderr, "privgen-bench store (postgres): %s\n", e.msg);
            status = 1;
        } else {
            report("postgres", rows, d, nadmit, threads, &r);
        }
    }
    pg_bench_pg_stop(&cl);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) status = 1;
    return status;
}

PG_BENCH_REGISTER("store", "storage backends: append MB/s, read MB/s, ledger admissions/s",
                  bench_store)
