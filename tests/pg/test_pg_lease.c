/* Lease renewal on PostgreSQL while another transaction holds a job's row
 * (service/store/db.h pg_db_job_renew, service/jobs/jobs_lease.c).
 *
 * A replica's own checkpoint write holds its job's row from the fence to the
 * commit. The heartbeat used to renew one job after another with a plain
 * UPDATE, which waited on that row, so every lease behind it went unrenewed
 * for as long as the write took (or up to the statement timeout): a healthy
 * replica could lose its other jobs. Here a side session holds one job's row
 * the way such a write does, and the other job's lease must keep being
 * renewed; the held one is renewed once its row is free, and no lease is
 * lost. The waits are bounds with seconds of slack, not timings. */
#include <check.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/privacy/privacy.h"
#include "pg/pgtest_conn.h"
#include "pg/pgtest_env.h"
#include "service/store/db.h"
#include "support/pg_jobs_test.h"
/* after pg_jobs_test.h, whose parameters are named like the table's type */
#include "service/config.h"
#include "service/jobs/jobs.h"
#include "service/jobs/jobs_internal.h"

static pg_db *open_db(void)
{
    pg_db *db = NULL;
    pg_error e = {0};
    pg_db_options o = {.pool_size = 8, .statement_timeout_ms = 30000, .connect_timeout_s = 5};
    ck_assert_msg(pg_db_open(pgt_uri(), &o, &db, &e) == PG_OK, "open: %s", e.msg);
    return db;
}

/* jobs.lease_until of id, read without locking (-1: NULL or no row). */
static long long lease_of(PGconn *c, const char *id)
{
    const char *v[1] = {id};
    PGresult *r =
        PQexecParams(c, "SELECT lease_until FROM jobs WHERE id = $1", 1, NULL, v, NULL, NULL, 0);
    ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
    long long x = PQntuples(r) == 1 && !PQgetisnull(r, 0, 0) ? atoll(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    return x;
}

/* The side session takes id's row as a fenced writer does (FOR UPDATE in an
 * open transaction) and keeps it until rollback. */
static void hold_row(PGconn *c, const char *id)
{
    char sql[160];
    pgt_exec_ok(c, "BEGIN");
    snprintf(sql, sizeof sql, "SELECT 1 FROM jobs WHERE id = '%s' FOR UPDATE", id);
    pgt_exec_ok(c, sql);
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts)) {
    }
}

/* Creates dataset ds (tenant t1, 2 columns), then drains the queue. */
static void dataset_drained(pg_db *db, const char *ds)
{
    pg_db_dataset d = {0};
    snprintf(d.id, sizeof d.id, "%s", ds);
    snprintf(d.tenant, sizeof d.tenant, "t1");
    d.name = "n";
    d.meta = "{}";
    d.d = 2;
    pg_error e = {0};
    ck_assert_msg(pg_db_dataset_insert(db, &d, &e) == PG_OK, "%s", e.msg);
    pg_test_jobs_drain(db);
}

/* A replica's job manager as node: one worker, lease lease_s, heartbeat
 * every second, configured in *cfg (the manager keeps a pointer to it: the
 * caller's, alive until pg_jobs_destroy). Made before the test claims its
 * jobs (its start releases the node's leases). */
static pg_jobs *replica(pg_db *db, const char *node, int64_t lease_s, pg_svc_config *cfg)
{
    pg_svc_config_defaults(cfg);
    cfg->node_id = node;
    cfg->workers = 1;
    cfg->lease_s = lease_s;
    cfg->heartbeat_s = 1;
    pg_jobs *m = NULL;
    pg_error e = {0};
    ck_assert_msg(pg_jobs_create(cfg, db, &m, &e) == PG_OK, "%s", e.msg);
    return m;
}

/* m holds the n jobs rows[] it claimed (freed here) as its workers would
 * after their claims (the workers themselves would train; only the
 * heartbeat runs here), each leased lease_s from now; its heartbeat is
 * started. The jobs into held[] (m owns them) when held is not NULL. */
static void hold_and_beat(pg_jobs *m, pg_job_row **rows, int n, int64_t lease_s, job **held)
{
    pg_error e = {0};
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < n; i++) {
        job *j = pg_jobs_job_from_row(m, rows[i]);
        ck_assert_ptr_nonnull(j);
        ck_assert_int_eq(pg_jobs_table_add(m, j), 0);
        j->owned = 1;
        j->lease_until = (int64_t)time(NULL) + lease_s;
        if (held) held[i] = j;
        pg_job_rows_free(rows[i], 1);
    }
    pthread_mutex_unlock(&m->mu);
    ck_assert_msg(pg_jobs_lease_start(m, &e) == PG_OK, "%s", e.msg);
}

/* Admits ds's jobs ids (after a drain) and claims them for node, lease
 * lease_s from now; rows (pg_job_rows_free each) when asked. */
static void run_jobs(pg_db *db, const char *ds, const char *const *ids, int n, const char *node,
                     int64_t lease_s, pg_job_row **rows)
{
    pg_error e = {0};
    dataset_drained(db, ds);
    for (int i = 0; i < n; i++) pg_test_job_admit(db, "t1", ds, ids[i], "{}");
    for (int i = 0; i < n; i++) {
        pg_job_row *r;
        int found = 0;
        ck_assert_msg(pg_db_job_claim(db, node, (int64_t)time(NULL), lease_s, &r, &found, &e) ==
                          PG_OK,
                      "%s", e.msg);
        ck_assert(found);
        ck_assert_str_eq(r->id, ids[i]);
        if (rows)
            rows[i] = r;
        else
            pg_job_rows_free(r, 1);
    }
}

/* The storage op: a held row is BUSY (untouched), a free one RENEWED, a
 * job of another node or an invalid id LOST; a takeover in flight stays
 * BUSY until it commits, then LOST. */
START_TEST(renew_skips_a_row_held_elsewhere)
{
    pg_db *db = open_db();
    static const char *const mine[2] = {"job_rn_a", "job_rn_b"};
    static const char *const theirs[1] = {"job_rn_c"};
    run_jobs(db, "ds_rn", mine, 2, "w:a", 3600, NULL);
    pg_test_job_admit(db, "t1", "ds_rn", theirs[0], "{}");
    pg_test_job_claim(db, "w:c", theirs[0]);
    PGconn *hold = pgt_side(), *mon = pgt_side();
    long long a0 = lease_of(mon, "job_rn_a");

    hold_row(hold, "job_rn_a");
    char ids[4][PG_ID_MAX] = {"job_rn_a", "job_rn_b", "job_rn_c", "Bad-Id"};
    int st[4] = {-1, -1, -1, -1};
    int64_t now = (int64_t)time(NULL) + 7200; /* a renewal moves every lease it renews */
    pg_error e = {0};
    ck_assert_msg(pg_db_job_renew(db, "w:a", (const char(*)[PG_ID_MAX])ids, 4, now, 60, st, &e) ==
                      PG_OK,
                  "%s", e.msg);
    ck_assert_int_eq(st[0], PG_LEASE_BUSY);
    ck_assert_int_eq(st[1], PG_LEASE_RENEWED);
    ck_assert_int_eq(st[2], PG_LEASE_LOST);
    ck_assert_int_eq(st[3], PG_LEASE_LOST);
    ck_assert_int_eq(lease_of(mon, "job_rn_a"), a0);
    ck_assert_int_eq(lease_of(mon, "job_rn_b"), now + 60);
    pgt_exec_ok(hold, "ROLLBACK");

    ck_assert_int_eq(
        pg_db_job_renew(db, "w:a", (const char(*)[PG_ID_MAX])ids, 2, now + 1, 60, st, &e), PG_OK);
    ck_assert_int_eq(st[0], PG_LEASE_RENEWED);
    ck_assert_int_eq(st[1], PG_LEASE_RENEWED);
    ck_assert_int_eq(lease_of(mon, "job_rn_a"), now + 61);

    /* Another replica's takeover holds the row: undecided until it commits. */
    pgt_exec_ok(hold, "BEGIN");
    pgt_exec_ok(hold, "UPDATE jobs SET owner = 'w:x' WHERE id = 'job_rn_a'");
    ck_assert_int_eq(
        pg_db_job_renew(db, "w:a", (const char(*)[PG_ID_MAX])ids, 2, now + 2, 60, st, &e), PG_OK);
    ck_assert_int_eq(st[0], PG_LEASE_BUSY);
    ck_assert_int_eq(st[1], PG_LEASE_RENEWED);
    pgt_exec_ok(hold, "COMMIT");
    ck_assert_int_eq(
        pg_db_job_renew(db, "w:a", (const char(*)[PG_ID_MAX])ids, 2, now + 3, 60, st, &e), PG_OK);
    ck_assert_int_eq(st[0], PG_LEASE_LOST);
    ck_assert_int_eq(st[1], PG_LEASE_RENEWED);
    ck_assert_int_eq(lease_of(mon, "job_rn_a"), now + 61); /* the lost one untouched */
    PQfinish(hold);
    PQfinish(mon);
    pg_db_close(db);
}
END_TEST

#define LEASE_S 6
#define HOLD_S  14

/* A replica's heartbeat thread renews two jobs it runs (lease 6 s, every
 * 1 s) while a side session holds one of them and then the other, 14 s
 * each (over two leases; under the 30 s statement timeout, so the old
 * heartbeat stayed blocked through the whole hold). The free job's lease
 * must never be seen run out and must end past hold start + lease (so it
 * was renewed during the hold); the held one is renewed once freed; no
 * lease is lost. Both orders are tried, so the held job is the first the
 * heartbeat renews in one of them, whatever the table's order. */
START_TEST(heartbeat_renews_around_a_held_row)
{
    pg_db *db = open_db();
    pg_svc_config cfg;
    pg_jobs *m = replica(db, "w:hb", LEASE_S, &cfg);
    static const char *const ids[2] = {"job_hb_a", "job_hb_b"};
    pg_job_row *rows[2];
    run_jobs(db, "ds_hb", ids, 2, "w:hb", LEASE_S, rows);
    hold_and_beat(m, rows, 2, LEASE_S, NULL);

    PGconn *hold = pgt_side(), *mon = pgt_side();
    for (int k = 0; k < 2; k++) {
        const char *held = ids[k], *other = ids[1 - k];
        hold_row(hold, held);
        long long held0 = lease_of(mon, held); /* committed before the hold began */
        long long start = (long long)time(NULL);
        while ((long long)time(NULL) < start + HOLD_S) {
            long long l = lease_of(mon, other), now = (long long)time(NULL);
            ck_assert_msg(l > now, "%s's lease ran out (%lld <= %lld) while %s's row was held",
                          other, l, now, held);
            nap_ms(100);
        }
        ck_assert_msg(lease_of(mon, other) > start + LEASE_S,
                      "%s's lease was not renewed while %s's row was held", other, held);
        ck_assert_int_eq(lease_of(mon, held), held0); /* nothing waited on the row */
        pgt_exec_ok(hold, "ROLLBACK");
        long long freed = (long long)time(NULL);
        while (lease_of(mon, held) <= freed + 1) {
            ck_assert_msg((long long)time(NULL) < freed + 3 * LEASE_S,
                          "%s's lease was not renewed after its row was freed", held);
            nap_ms(100);
        }
    }
    pthread_mutex_lock(&m->mu);
    ck_assert_uint_eq(m->lease_losses, 0);
    for (size_t i = 0; i < m->n; i++)
        if (m->all[i]->owned) ck_assert_int_eq(m->all[i]->lost, 0);
    pthread_mutex_unlock(&m->mu);
    pg_jobs_lease_stop(m);
    PQfinish(hold);
    PQfinish(mon);
    pg_jobs_destroy(m);
    pg_db_close(db);
}
END_TEST

/* ---- a checkpoint write slower than the lease ---------------------------
 *
 * A checkpoint write used to take its job's row (the fence, FOR UPDATE) and
 * keep it while every chunk went in. The heartbeat skips a held row, so a
 * write longer than the lease let the lease run out under it; another
 * replica's claim then found the job expired, ended the writer's session as
 * a stalled holder (the claim's reaper) and took the job over: the write was
 * lost, and a job whose every checkpoint takes longer than a lease never got
 * past one. Here the write is made slow the way a slow disk or network makes
 * it: a side session's uncommitted chunk of the same key stalls the write's
 * first chunk for CK_STALL_S (over three leases). Meanwhile another node
 * tries to claim every 250 ms and must never get the job, the lease must
 * stay in the future, and the write must then land, held, with the ledger
 * holding the job's one charge. */
#define CK_LEASE_S 3
#define CK_STALL_S 10

/* One checkpoint write (step 5) of job by w:ck, on its own thread. */
typedef struct ck_write {
    pg_db *db;
    const char *id;
    int rc, held;
    pg_error e;
    PGconn *stall, *mon; /* the stalling side session; a monitor */
    long long charges;   /* the job's ledger rows before the write */
    pthread_t th;
} ck_write;

static void *ck_write_fn(void *arg)
{
    ck_write *w = arg;
    static const unsigned char bytes[] = "a checkpoint written slowly";
    w->rc = pg_db_ckpt_put_owned(w->db, w->id, "w:ck", 5, bytes, sizeof bytes, 7u, &w->held, &w->e);
    return NULL;
}

static long long ledger_rows(PGconn *c, const char *id)
{
    const char *v[1] = {id};
    PGresult *r =
        PQexecParams(c, "SELECT count(*) FROM ledger WHERE job_id = $1", 1, NULL, v, NULL, NULL, 0);
    ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
    long long n = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

/* Starts w's write (w->db, w->id set) behind a side session's uncommitted
 * chunk of the same key, so that it waits until w->stall rolls back; the
 * job has its one ledger charge. The chunks' foreign key is deferred: the
 * side session's chunk needs no checkpoint row, and never commits. */
static void ck_write_stalled(ck_write *w)
{
    w->stall = pgt_side();
    w->mon = pgt_side();
    w->charges = ledger_rows(w->mon, w->id);
    ck_assert_int_eq(w->charges, 1);
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO checkpoint_chunks(job_id, step, i, data) VALUES ('%s', 5, 0, '\\x00')",
             w->id);
    pgt_exec_ok(w->stall, "BEGIN");
    pgt_exec_ok(w->stall, sql);
    ck_assert_int_eq(pthread_create(&w->th, NULL, ck_write_fn, w), 0);
}

/* Lets w's write go on (the side session rolls back and closes) and waits
 * for it; w->mon stays open for the caller's checks. */
static void ck_write_finish(ck_write *w)
{
    pgt_exec_ok(w->stall, "ROLLBACK");
    pthread_join(w->th, NULL);
    PQfinish(w->stall);
}

/* Like run_jobs for one job, admitted with a plan that charges the ledger
 * (a Gaussian of sigma 3, about epsilon 1.3), so a test can count its charges. */
static void run_charged(pg_db *db, const char *ds, const char *id, const char *node,
                        int64_t lease_s, pg_job_row **row)
{
    pg_error e = {0};
    dataset_drained(db, ds);
    pg_job_row r = {0};
    snprintf(r.id, sizeof r.id, "%s", id);
    snprintf(r.tenant, sizeof r.tenant, "t1");
    snprintf(r.dataset_id, sizeof r.dataset_id, "%s", ds);
    snprintf(r.method, sizeof r.method, "m");
    r.spec = "{}";
    pg_privacy_plan plan = {0};
    plan.charges = true;
    plan.norders = (int)pg_rdp_default_orders(plan.orders, PG_PLAN_MAX_ORDERS);
    for (int i = 0; i < plan.norders; i++) plan.rdp[i] = plan.orders[i] / (2 * 3.0 * 3.0);
    plan.delta = 1e-5;
    ck_assert_int_eq(pg_rdp_to_dp(plan.orders, plan.rdp, (size_t)plan.norders, 1e-5,
                                  PG_RDP_CONV_IMPROVED, &plan.epsilon, NULL, NULL),
                     PG_OK);
    snprintf(plan.mechanism, sizeof plan.mechanism, "gaussian");
    pg_ledger_quote q;
    ck_assert_msg(pg_db_job_admit(db, &r, &plan, 10.0, 1e-5, &q, &e) == PG_OK, "%s", e.msg);
    ck_assert_int_eq(q.admit, 1);
    int found = 0;
    ck_assert_msg(pg_db_job_claim(db, node, (int64_t)time(NULL), lease_s, row, &found, &e) == PG_OK,
                  "%s", e.msg);
    ck_assert(found);
    ck_assert_str_eq((*row)->id, id);
}

START_TEST(slow_checkpoint_write_keeps_its_lease)
{
    pg_db *db = open_db();
    pg_svc_config cfg;
    pg_jobs *m = replica(db, "w:ck", CK_LEASE_S, &cfg);
    pg_job_row *rows[1];
    run_charged(db, "ds_ck", "job_ck_slow", "w:ck", CK_LEASE_S, rows);
    job *j;
    hold_and_beat(m, rows, 1, CK_LEASE_S, &j);
    pg_error e = {0};

    ck_write w = {.db = db, .id = "job_ck_slow"};
    ck_write_stalled(&w);
    PGconn *mon = w.mon;
    long long start = (long long)time(NULL);
    while ((long long)time(NULL) < start + CK_STALL_S) {
        pg_job_row *r = NULL;
        int found = 0;
        pg_error ce = {0};
        ck_assert_msg(pg_db_job_claim(db, "w:other", (int64_t)time(NULL), CK_LEASE_S, &r, &found,
                                      &ce) == PG_OK,
                      "claim: %s", ce.msg);
        if (found) {
            char id[PG_ID_MAX];
            snprintf(id, sizeof id, "%s", r->id);
            pg_job_rows_free(r, 1);
            ck_abort_msg("another node claimed %s %llds into a checkpoint write (lease %d s)", id,
                         (long long)time(NULL) - start, CK_LEASE_S);
        }
        long long l = lease_of(mon, "job_ck_slow"), now = (long long)time(NULL);
        ck_assert_msg(l > now, "the lease ran out (%lld <= %lld) during the checkpoint write", l,
                      now);
        nap_ms(250);
    }
    ck_write_finish(&w);
    ck_assert_msg(w.rc == PG_OK, "the slow write failed: %s", w.e.msg);
    ck_assert_msg(w.held, "the slow write was refused");
    pg_ckpt_row *ck = NULL;
    size_t n = 0;
    ck_assert_msg(pg_db_ckpt_list(db, "job_ck_slow", &ck, &n, &e) == PG_OK, "%s", e.msg);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(ck[0].step, 5);
    free(ck);
    pthread_mutex_lock(&m->mu);
    ck_assert_uint_eq(m->lease_losses, 0);
    ck_assert_int_eq(j->lost, 0);
    pthread_mutex_unlock(&m->mu);
    ck_assert_int_eq(ledger_rows(mon, "job_ck_slow"), w.charges);
    pg_jobs_lease_stop(m);
    PQfinish(mon);
    pg_jobs_destroy(m);
    pg_db_close(db);
}
END_TEST

/* A write whose job was taken over while it ran lands nothing and says so
 * (held = 0), and the takeover charged nothing more. */
START_TEST(checkpoint_write_after_a_takeover_is_refused)
{
    pg_db *db = open_db();
    pg_job_row *row;
    run_charged(db, "ds_ckl", "job_ck_lost", "w:ck", 1, &row);
    pg_job_rows_free(row, 1);
    ck_write x = {.db = db, .id = "job_ck_lost"};
    ck_write_stalled(&x);
    /* The lease (1 s) runs out; another node takes the job over. */
    nap_ms(2500);
    pg_test_job_claim(db, "w:new", "job_ck_lost");
    ck_write_finish(&x);
    ck_assert_msg(x.rc == PG_OK, "%s", x.e.msg);
    ck_assert_int_eq(x.held, 0);
    pg_ckpt_row *ck = NULL;
    size_t n = 0;
    pg_error e = {0};
    ck_assert_msg(pg_db_ckpt_list(db, "job_ck_lost", &ck, &n, &e) == PG_OK, "%s", e.msg);
    ck_assert_uint_eq(n, 0);
    free(ck);
    ck_assert_int_eq(ledger_rows(x.mon, "job_ck_lost"), x.charges);
    PQfinish(x.mon);
    pg_db_close(db);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pg_lease");
    TCase *tc = tcase_create("renew");
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, renew_skips_a_row_held_elsewhere);
    tcase_add_test(tc, heartbeat_renews_around_a_held_row);
    tcase_add_test(tc, slow_checkpoint_write_keeps_its_lease);
    tcase_add_test(tc, checkpoint_write_after_a_takeover_is_refused);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
