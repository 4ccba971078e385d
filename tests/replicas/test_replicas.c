/* Three real privgend replicas on one PostgreSQL database (issue 18), talked
 * to directly on their loopback ports (no balancer: scripts/replicas.sh
 * covers that).
 *
 *  - round robin: jobs submitted through r1, r2, r3 in turn all finish, each
 *    exactly once (one job row, one ledger row each), every replica ran at
 *    least one, and all of them trained on rows appended through r1 only;
 *  - budget: 24 concurrent over-cap submissions spread over the replicas
 *    admit exactly K jobs, K computed from the accountant (composition of
 *    K identical subsampled Gaussian runs = one run of K times the steps);
 *  - idempotency: one Idempotency-Key POSTed through all three replicas is
 *    one job, one charge, and the same response everywhere.
 *
 * The durable truth (job rows, ledger) is read through service/db.h on the
 * same database; tests/replicas/test_replicas_pending.c holds the tests
 * that need the shared-queue workers and cross-replica reads. */
#include <math.h>
#include <pthread.h>

#include "engine/privacy/privacy.h"
#include "replicas/rpl.h"
#include "support/pg_test.h"

static rpl C; /* static: the atexit cleanup may run after a test's frame */

#define ROWS 400

START_TEST(round_robin_jobs_run_once_on_every_replica)
{
    rpl_up(&C, "round_robin");
    char ds[64];
    rpl_dataset(&C.r[0], 100.0, ROWS, ds);
    /* long enough that a replica is still busy when the next job arrives,
     * so the work spreads whichever way the replicas pick jobs */
    enum { JOBS = 9 };
    char body[512], ids[JOBS][64];
    rpl_job_body(body, sizeof body, ds, 1500, 20.0, 500);
    for (int i = 0; i < JOBS; i++) rpl_submit(&C.r[i % RPL_N], body, ids[i]);
    for (int i = 0; i < JOBS; i++) rpl_wait_status(&C, ids[i], "succeeded", 120);

    /* each job once: one row, one reserved ledger row, all steps run */
    pg_job_row *rows;
    size_t n;
    ck_assert_int_eq(pg_db_job_load_all(C.db, &rows, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, JOBS);
    for (int i = 0; i < JOBS; i++) {
        int seen = 0;
        for (size_t k = 0; k < n; k++)
            if (!strcmp(rows[k].id, ids[i])) {
                seen++;
                ck_assert_int_eq(rows[k].step, 1500);
                ck_assert_int_le(rows[k].steps_reserved, 1500);
                ck_assert_int_eq(rows[k].data_n, ROWS); /* r1's append, seen by all */
            }
        ck_assert_int_eq(seen, 1);
        ck_assert_int_eq(rpl_ledger_rows_of(&C, ds, ids[i]), 1);
    }
    pg_job_rows_free(rows, n);
    int total, reserved;
    rpl_ledger(&C, ds, &total, &reserved);
    ck_assert_int_eq(total, JOBS);
    ck_assert_int_eq(reserved, JOBS);

    /* every replica ran at least one: rows appended through r1 were
     * trained on by jobs running on r2 and r3 */
    int ran[RPL_N] = {0};
    for (int i = 0; i < JOBS; i++) {
        char node[PG_NODE_MAX];
        rpl_node_of(&C, ids[i], node);
        int k = rpl_index(&C, node);
        ck_assert_msg(k >= 0, "job %s ran on unknown node '%s'", ids[i], node);
        ran[k]++;
    }
    for (int k = 0; k < RPL_N; k++)
        ck_assert_msg(ran[k] >= 1, "replica %s ran no job (%d %d %d)", C.node[k], ran[0], ran[1],
                      ran[2]);
    rpl_down(&C);
}
END_TEST

typedef struct racer {
    const pg_srv *s;
    const char *body;
    pthread_barrier_t *bar;
    long status;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    pg_resp resp;
    pthread_barrier_wait(r->bar);
    rpl_req(r->s, "POST", "/v1/jobs", r->body, NULL, &resp);
    r->status = resp.status;
    pg_resp_free(&resp);
    return NULL;
}

START_TEST(concurrent_submissions_on_three_replicas_never_overspend)
{
    rpl_up(&C, "budget");
    /* identical jobs of T steps at rate q: K of them compose (RDP adds up)
     * to one run of K*T steps; the cap lies between K and K+1 jobs */
    enum { K = 5, RACERS = 24, T = 40 };
    const double q = 20.0 / ROWS, sigma = 1.0;
    double ek, ek1;
    ck_assert_int_eq(
        pg_rdp_epsilon(q, sigma, (uint64_t)K * T, 1e-5, PG_RDP_CONV_IMPROVED, &ek, NULL, NULL),
        PG_OK);
    ck_assert_int_eq(pg_rdp_epsilon(q, sigma, (uint64_t)(K + 1) * T, 1e-5, PG_RDP_CONV_IMPROVED,
                                    &ek1, NULL, NULL),
                     PG_OK);
    ck_assert(ek < ek1);
    double cap = 0.5 * (ek + ek1);
    char ds[64], body[512];
    rpl_dataset(&C.r[0], cap, ROWS, ds);
    rpl_job_body(body, sizeof body, ds, T, sigma, T);

    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, RACERS);
    racer rs[RACERS];
    pthread_t th[RACERS];
    for (int i = 0; i < RACERS; i++) {
        rs[i] = (racer){&C.r[i % RPL_N], body, &bar, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, race, &rs[i]), 0);
    }
    int ok = 0, refused = 0;
    for (int i = 0; i < RACERS; i++) {
        pthread_join(th[i], NULL);
        ok += rs[i].status == 202;
        refused += rs[i].status == 409;
    }
    pthread_barrier_destroy(&bar);
    ck_assert_int_eq(ok, K);
    ck_assert_int_eq(refused, RACERS - K);

    int total, reserved;
    rpl_ledger(&C, ds, &total, &reserved);
    ck_assert_int_eq(total, K);
    ck_assert_int_eq(reserved, K);
    /* the spend every replica reports is the accountant's K-job figure */
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%s/budget", ds);
    for (int k = 0; k < RPL_N; k++) {
        pg_resp r;
        rpl_req(&C.r[k], "GET", path, NULL, NULL, &r);
        ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
        double spent = json_number_value(json_object_get(r.json, "spent_epsilon"));
        ck_assert(spent <= cap);
        ck_assert_msg(pg_test_reldiff(spent, ek) < 1e-9, "spent %.17g, K jobs %.17g", spent, ek);
        pg_resp_free(&r);
    }
    rpl_down(&C);
}
END_TEST

START_TEST(idempotency_key_retried_on_another_replica_replays)
{
    rpl_up(&C, "idem");
    char ds[64], body[512];
    rpl_dataset(&C.r[0], 100.0, ROWS, ds);
    rpl_job_body(body, sizeof body, ds, 30, 20.0, 30);
    const char *const key[] = {"Idempotency-Key: rpl-retry-1", NULL};
    pg_resp first;
    rpl_req(&C.r[0], "POST", "/v1/jobs", body, key, &first);
    ck_assert_msg(first.status == 202, "%ld %s", first.status, first.body);
    const char *id = json_string_value(json_object_get(first.json, "id"));
    ck_assert_ptr_nonnull(id);
    for (int k = 1; k < RPL_N; k++) {
        pg_resp again;
        rpl_req(&C.r[k], "POST", "/v1/jobs", body, key, &again);
        ck_assert_msg(again.status == first.status, "%ld %s", again.status, again.body);
        ck_assert_str_eq(again.location, first.location);
        ck_assert_str_eq(json_string_value(json_object_get(again.json, "id")), id);
        /* the first response itself, replayed byte for byte */
        ck_assert_uint_eq(again.len, first.len);
        ck_assert(memcmp(again.body, first.body, first.len) == 0);
        pg_resp_free(&again);
    }
    /* the same key with another body is refused, not run */
    char other[512];
    rpl_job_body(other, sizeof other, ds, 31, 20.0, 31);
    pg_resp bad;
    rpl_req(&C.r[2], "POST", "/v1/jobs", other, key, &bad);
    ck_assert_msg(bad.status >= 400 && bad.status < 500, "%ld %s", bad.status, bad.body);
    pg_resp_free(&bad);

    char jid[64];
    snprintf(jid, sizeof jid, "%s", id);
    pg_resp_free(&first);
    rpl_wait_status(&C, jid, "succeeded", 60);
    pg_job_row *rows;
    size_t n;
    ck_assert_int_eq(pg_db_job_load_all(C.db, &rows, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 1);
    pg_job_rows_free(rows, n);
    int total, reserved;
    rpl_ledger(&C, ds, &total, &reserved);
    ck_assert_int_eq(total, 1);
    ck_assert_int_eq(reserved, 1);
    rpl_down(&C);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("replicas");
    TCase *tc = tcase_create("replicas");
    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, round_robin_jobs_run_once_on_every_replica);
    tcase_add_test(tc, concurrent_submissions_on_three_replicas_never_overspend);
    tcase_add_test(tc, idempotency_key_retried_on_another_replica_replays);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return rpl_run_suite(suite());
}
