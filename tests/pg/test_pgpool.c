/* The libpq pool against a real throwaway server: concurrency bounds,
 * acquire timeout, statement timeout, a terminated backend, and a server
 * stopped and started again under it. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "pg/pgtest_env.h"
#include "service/store/pg/pgpool.h"
#include "support/pg_test.h"

static pg_pgpool *open_pool(int size, int stmt_ms, int acq_ms)
{
    pg_pgpool_opts o = {
        .size = size, .statement_timeout_ms = stmt_ms, .acquire_timeout_ms = acq_ms};
    pg_pgpool *p = NULL;
    pg_error e = {0};
    int rc = pg_pgpool_open(pgt_uri(), &o, &p, &e);
    ck_assert_msg(rc == PG_OK, "open: %s", e.msg);
    return p;
}

static int backend_pid(PGconn *c)
{
    PGresult *r = PQexec(c, "SELECT pg_backend_pid()");
    ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    int pid = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return pid;
}

START_TEST(classify_sqlstates)
{
    ck_assert_int_eq(pg_pgpool_classify("08006"), PG_EUNAVAIL);
    ck_assert_int_eq(pg_pgpool_classify("08001"), PG_EUNAVAIL);
    ck_assert_int_eq(pg_pgpool_classify("57P01"), PG_EUNAVAIL);
    ck_assert_int_eq(pg_pgpool_classify("57P02"), PG_EUNAVAIL);
    ck_assert_int_eq(pg_pgpool_classify("57P03"), PG_EUNAVAIL);
    ck_assert_int_eq(pg_pgpool_classify("40001"), PG_PGPOOL_RETRY);
    ck_assert_int_eq(pg_pgpool_classify("40P01"), PG_PGPOOL_RETRY);
    ck_assert_int_eq(pg_pgpool_classify("23505"), PG_EIO);
    ck_assert_int_eq(pg_pgpool_classify("42P01"), PG_EIO);
    ck_assert_int_eq(pg_pgpool_classify(NULL), PG_EIO);
    ck_assert_ptr_nonnull(strstr(pg_status_str(PG_EUNAVAIL), "unavailable"));
}
END_TEST

START_TEST(open_refuses_bad_input)
{
    pg_pgpool_opts o = {.size = 2, .statement_timeout_ms = 1000, .acquire_timeout_ms = 500};
    pg_pgpool *p = NULL;
    pg_error e = {0};
    ck_assert_int_eq(pg_pgpool_open("postgresql://u:s3cret@h/db?bogus_key=1", &o, &p, &e),
                     PG_EINVAL);
    ck_assert_ptr_null(strstr(e.msg, "s3cret"));
    /* No server behind this socket directory. */
    ck_assert_int_eq(pg_pgpool_open("postgresql://u:s3cret@%2Fnonexistent%2Fdir/db", &o, &p, &e),
                     PG_EUNAVAIL);
    ck_assert_ptr_null(strstr(e.msg, "s3cret"));
    ck_assert_ptr_null(p);
    /* The right server, a wrong password: refused, and not echoed. */
    char uri[512];
    const char *good = pgt_uri();
    const char *colon = strchr(good + strlen("postgresql://"), ':');
    const char *at = strchr(good, '@');
    ck_assert(colon && at && colon < at);
    snprintf(uri, sizeof uri, "%.*sWRONGpw%s", (int)(colon + 1 - good), good, at);
    ck_assert_int_ne(pg_pgpool_open(uri, &o, &p, &e), PG_OK);
    ck_assert_ptr_null(strstr(e.msg, "WRONGpw"));
    o.size = 0;
    ck_assert_int_eq(pg_pgpool_open(good, &o, &p, &e), PG_EINVAL);
}
END_TEST

enum { NTHREADS = 8, ROUNDS = 40, POOL = 3 };
static atomic_int holders, max_holders, failures;

static void *worker(void *arg)
{
    pg_pgpool *p = arg;
    for (int i = 0; i < ROUNDS; i++) {
        PGconn *c;
        pg_error e = {0};
        if (pg_pgpool_acquire(p, &c, &e)) {
            atomic_fetch_add(&failures, 1);
            continue;
        }
        int h = atomic_fetch_add(&holders, 1) + 1;
        int m = atomic_load(&max_holders);
        while (h > m && !atomic_compare_exchange_weak(&max_holders, &m, h)) {
        }
        /* A transaction left open on purpose every third round: release
         * must roll it back before anyone else sees the connection. */
        PGresult *r = PQexec(c, i % 3 ? "SELECT 1" : "BEGIN");
        if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
            atomic_fetch_add(&failures, 1);
        PQclear(r);
        if (PQtransactionStatus(c) != PQTRANS_IDLE && i % 3) atomic_fetch_add(&failures, 1);
        atomic_fetch_sub(&holders, 1);
        pg_pgpool_release(p, c);
    }
    return NULL;
}

START_TEST(threads_share_a_bounded_pool)
{
    pg_pgpool *p = open_pool(POOL, 5000, 30000);
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) pthread_create(&t[i], NULL, worker, p);
    for (int i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
    ck_assert_int_eq(atomic_load(&failures), 0);
    ck_assert_int_le(atomic_load(&max_holders), POOL);
    ck_assert_int_ge(atomic_load(&max_holders), 1);
    long connects;
    int busy;
    pg_pgpool_stats(p, &connects, &busy);
    ck_assert_int_eq(busy, 0);
    ck_assert_int_le(connects, POOL); /* nobody reconnected a healthy connection */
    pg_pgpool_close(p);
}
END_TEST

START_TEST(acquire_times_out_when_all_busy)
{
    pg_pgpool *p = open_pool(1, 5000, 200);
    PGconn *a, *b;
    pg_error e = {0};
    ck_assert_int_eq(pg_pgpool_acquire(p, &a, &e), PG_OK);
    ck_assert_int_eq(pg_pgpool_acquire(p, &b, &e), PG_EUNAVAIL);
    ck_assert_ptr_nonnull(strstr(e.msg, "busy"));
    pg_pgpool_release(p, a);
    ck_assert_int_eq(pg_pgpool_acquire(p, &b, &e), PG_OK);
    ck_assert_ptr_eq(a, b);
    pg_pgpool_release(p, b);
    pg_pgpool_close(p);
}
END_TEST

START_TEST(statement_timeout_fires)
{
    pg_pgpool *p = open_pool(1, 300, 5000);
    PGconn *c;
    pg_error e = {0};
    ck_assert_int_eq(pg_pgpool_acquire(p, &c, &e), PG_OK);
    PGresult *r = PQexec(c, "SHOW statement_timeout");
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "300ms");
    PQclear(r);
    ck_assert_int_eq(pg_pgpool_exec(c, "SELECT pg_sleep(30)", "sleeping", &e), PG_EUNAVAIL);
    ck_assert_ptr_nonnull(strstr(e.msg, "57014"));
    ck_assert_ptr_nonnull(strstr(e.msg, "sleeping"));
    /* The connection survives a cancelled statement. */
    ck_assert_int_eq(pg_pgpool_exec(c, "SELECT 1", "after", &e), PG_OK);
    pg_pgpool_release(p, c);
    pg_pgpool_close(p);
}
END_TEST

/* A pooled session left idle inside a transaction (its client frozen
 * between two statements) is ended by the server after the statement
 * timeout, and the row it locked is free again; the pool replaces the
 * connection. Bounds, not timings: a 1 s timeout, 20 s to see it. */
START_TEST(idle_in_transaction_is_bounded)
{
    pg_pgpool *p = open_pool(1, 1000, 5000);
    PGconn *c, *side = PQconnectdb(pgt_uri());
    ck_assert_int_eq(PQstatus(side), CONNECTION_OK);
    pg_error e = {0};
    ck_assert_int_eq(pg_pgpool_acquire(p, &c, &e), PG_OK);
    ck_assert_int_eq(pg_pgpool_exec(c,
                                    "DROP TABLE IF EXISTS idle_t; "
                                    "CREATE TABLE idle_t(x int primary key); "
                                    "INSERT INTO idle_t VALUES (1)",
                                    "t", &e),
                     PG_OK);
    int pid = backend_pid(c);
    ck_assert_int_eq(pg_pgpool_exec(c, "BEGIN", "begin", &e), PG_OK);
    ck_assert_int_eq(pg_pgpool_exec(c, "SELECT x FROM idle_t WHERE x = 1 FOR UPDATE", "lock", &e),
                     PG_OK);
    /* the client stops here: its row comes free without it */
    int free_again = 0;
    for (int i = 0; i < 200 && !free_again; i++) {
        PGresult *r = PQexec(side, "SELECT x FROM idle_t WHERE x = 1 FOR UPDATE NOWAIT");
        free_again = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
        PQclear(r);
        if (!free_again) usleep(100000);
    }
    ck_assert_msg(free_again, "the idle transaction still holds its row after 20 s");
    char q[96];
    snprintf(q, sizeof q, "SELECT count(*) FROM pg_stat_activity WHERE pid = %d", pid);
    int gone = 0; /* its entry goes a moment after its locks */
    for (int i = 0; i < 100 && !gone; i++) {
        PGresult *r = PQexec(side, q);
        gone = PQresultStatus(r) == PGRES_TUPLES_OK && !strcmp(PQgetvalue(r, 0, 0), "0");
        PQclear(r);
        if (!gone) usleep(50000);
    }
    ck_assert_msg(gone, "the idle session %d is still there", pid);
    pg_pgpool_release(p, c);
    ck_assert_int_eq(pg_pgpool_acquire(p, &c, &e), PG_OK);
    ck_assert_int_ne(backend_pid(c), pid); /* replaced, and usable */
    pg_pgpool_release(p, c);
    PQfinish(side);
    pg_pgpool_close(p);
}
END_TEST

START_TEST(sql_errors_are_eio_and_roll_back)
{
    pg_pgpool *p = open_pool(1, 5000, 5000);
    PGconn *c;
    pg_error e = {0};
    ck_assert_int_eq(pg_pgpool_acquire(p, &c, &e), PG_OK);
    ck_assert_int_eq(pg_pgpool_exec(c, "CREATE TEMP TABLE t(x int primary key)", "t", &e), PG_OK);
    ck_assert_int_eq(pg_pgpool_exec(c, "BEGIN", "begin", &e), PG_OK);
    ck_assert_int_eq(pg_pgpool_exec(c, "SELECT * FROM no_such_table", "reading", &e), PG_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "42P01"));
    ck_assert_int_eq(PQtransactionStatus(c), PQTRANS_INERROR);
    pg_pgpool_release(p, c);
    PGconn *d;
    ck_assert_int_eq(pg_pgpool_acquire(p, &d, &e), PG_OK);
    ck_assert_ptr_eq(c, d); /* rolled back, kept, not reconnected */
    ck_assert_int_eq(PQtransactionStatus(d), PQTRANS_IDLE);
    ck_assert_int_eq(pg_pgpool_exec(d, "INSERT INTO t VALUES (1)", "insert", &e), PG_OK);
    pg_pgpool_release(p, d);
    pg_pgpool_close(p);
}
END_TEST

START_TEST(terminated_backend_is_replaced)
{
    pg_pgpool *p = open_pool(2, 5000, 5000);
    PGconn *c, *killer;
    pg_error e = {0};
    ck_assert_int_eq(pg_pgpool_acquire(p, &c, &e), PG_OK);
    int victim = backend_pid(c);
    pg_pgpool_release(p, c);
    killer = PQconnectdb(pgt_uri());
    ck_assert_int_eq(PQstatus(killer), CONNECTION_OK);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%d, 5000)", victim);
    PGresult *r = PQexec(killer, sql);
    ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    ck_assert_str_eq(PQgetvalue(r, 0, 0), "t");
    PQclear(r);
    long before;
    pg_pgpool_stats(p, &before, NULL);
    ck_assert_int_eq(pg_pgpool_acquire(p, &c, &e), PG_OK);
    int pid = backend_pid(c); /* would fail on the dead connection */
    ck_assert_int_ne(pid, victim);
    long after;
    pg_pgpool_stats(p, &after, NULL);
    ck_assert_int_eq(after, before + 1);
    pg_pgpool_release(p, c);

    /* Killed while held: the statement fails as unavailable, release drops
     * the connection, the next acquire reconnects. */
    ck_assert_int_eq(pg_pgpool_acquire(p, &c, &e), PG_OK);
    victim = backend_pid(c);
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%d, 5000)", victim);
    r = PQexec(killer, sql);
    PQclear(r);
    ck_assert_int_eq(pg_pgpool_exec(c, "SELECT 1", "after kill", &e), PG_EUNAVAIL);
    pg_pgpool_release(p, c);
    ck_assert_int_eq(pg_pgpool_acquire(p, &c, &e), PG_OK);
    ck_assert_int_ne(backend_pid(c), victim);
    pg_pgpool_release(p, c);
    PQfinish(killer);
    pg_pgpool_close(p);
}
END_TEST

START_TEST(server_restart_recovers)
{
    pg_pgpool *p = open_pool(2, 5000, 300);
    PGconn *c;
    pg_error e = {0};
    ck_assert_int_eq(pg_pgpool_acquire(p, &c, &e), PG_OK);
    ck_assert_int_eq(pg_pgpool_exec(c, "SELECT 1", "warm", &e), PG_OK);
    pg_pgpool_release(p, c);
    ck_assert_int_eq(pgt_cluster("halt"), 0);
    /* Down: acquire gives up at its timeout with a retryable status. */
    ck_assert_int_eq(pg_pgpool_acquire(p, &c, &e), PG_EUNAVAIL);
    ck_assert_ptr_nonnull(strstr(e.msg, "unavailable"));
    ck_assert_int_eq(pgt_cluster("resume"), 0);
    ck_assert_int_eq(pg_pgpool_acquire(p, &c, &e), PG_OK);
    ck_assert_int_eq(pg_pgpool_exec(c, "SELECT 1", "after restart", &e), PG_OK);
    /* Restarted while a connection is held: that statement fails
     * unavailable, the pool heals on the next acquire. */
    ck_assert_int_eq(pgt_cluster("restart"), 0);
    int held = pg_pgpool_exec(c, "SELECT 1", "held", &e);
    ck_assert_msg(held == PG_EUNAVAIL, "%d %s", held, e.msg);
    pg_pgpool_release(p, c);
    for (int i = 0; i < 2; i++) {
        PGconn *x, *y;
        ck_assert_int_eq(pg_pgpool_acquire(p, &x, &e), PG_OK);
        ck_assert_int_eq(pg_pgpool_acquire(p, &y, &e), PG_OK);
        ck_assert_int_eq(pg_pgpool_exec(x, "SELECT 1", "x", &e), PG_OK);
        ck_assert_int_eq(pg_pgpool_exec(y, "SELECT 1", "y", &e), PG_OK);
        pg_pgpool_release(p, x);
        pg_pgpool_release(p, y);
    }
    pg_pgpool_close(p);
}
END_TEST

static Suite *pgpool_suite(void)
{
    Suite *s = suite_create("pgpool");
    TCase *tc = tcase_create("pool");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, classify_sqlstates);
    tcase_add_test(tc, open_refuses_bad_input);
    tcase_add_test(tc, threads_share_a_bounded_pool);
    tcase_add_test(tc, acquire_times_out_when_all_busy);
    tcase_add_test(tc, statement_timeout_fires);
    tcase_add_test(tc, idle_in_transaction_is_bounded);
    tcase_add_test(tc, sql_errors_are_eio_and_roll_back);
    tcase_add_test(tc, terminated_backend_is_replaced);
    tcase_add_test(tc, server_restart_recovers);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(pgpool_suite)
