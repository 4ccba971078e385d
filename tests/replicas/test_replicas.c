/* Three real privgend replicas on one PostgreSQL database, talked
 * to directly on their loopback ports (no balancer: scripts/replicas.sh
 * covers that). Leases are 4 s (heartbeat 1 s) where a test waits for one
 * to expire, 30 s elsewhere (rpl_up says why).
 *
 *  - round robin: jobs submitted through r1, r2, r3 in turn all finish, each
 *    exactly once (one job row, one ledger row each), every replica ran at
 *    least one, and all of them trained on rows appended through r1 only;
 *  - budget: 24 concurrent over-cap submissions spread over the replicas
 *    admit exactly K jobs, K computed from the accountant (composition of
 *    K identical subsampled Gaussian runs = one run of K times the steps);
 *  - idempotency: one Idempotency-Key POSTed through all three replicas is
 *    one job, one charge, and the same response everywhere;
 *  - failover: kill -9 the replica running a job mid-training; another one
 *    claims it after the lease, resumes from the last checkpoint and runs
 *    the plan's remaining steps (final step = that checkpoint + plan - the
 *    dead one's reservation: reserved steps may have run, so they are never
 *    run again); one ledger row; the stored spec and the charge equal a
 *    single-box (SQLite) run of the same request;
 *  - drain: SIGTERM to the running replica exits 0 having checkpointed at
 *    least the step it reported before the signal and given back its unused
 *    reservation; another replica finishes every planned step.
 *
 * The durable truth (job rows, ledger, checkpoints) is read through
 * service/store/db.h on the same database; tests/replicas/test_replicas_cross.c
 * holds the partition tests and those of cross-replica reads (views, SSE,
 * samples, cancel). */
#include <math.h>
#include <pthread.h>

#include "engine/privacy/privacy.h"
#include "replicas/rpl.h"
#include "support/pg_test.h"

static rpl C;      /* static: the atexit cleanup may run after a test's frame */
static pg_srv REF; /* a single box, the reference of the failover test */

#define ROWS 400

START_TEST(round_robin_jobs_run_once_on_every_replica)
{
    rpl_up(&C, "round_robin", 30, 5);
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
    rpl_up(&C, "budget", 30, 5);
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
    rpl_up(&C, "idem", 30, 5);
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

/* ---- failover, drain ------------------------------------------------- */

START_TEST(kill9_mid_training_fails_over_and_matches_a_single_box)
{
    enum { S = 6000, EVERY = 500 };
    char body[512], ds[64], rds[64], id[64], rid[64];

    /* the single box: same data, same request, no interruption */
    rpl_spawn(&REF, NULL, "ref", (const char *const[]){"--workers", "1", NULL});
    rpl_read_token(&REF);
    rpl_dataset(&REF, 100.0, ROWS, rds);
    rpl_job_body(body, sizeof body, rds, S, 5.0, EVERY);
    rpl_submit(&REF, body, rid);

    pg_job_row row;
    int x = rpl_start_job(&C, &(rpl_job_case){"failover", 4, 1, 0, S, EVERY, EVERY, false}, ROWS,
                          ds, id, &row);
    ck_assert_int_ge(x, 0);
    kill(C.r[x].pid, SIGKILL);
    waitpid(C.r[x].pid, NULL, 0);
    C.r[x].pid = 0;
    /* What the dead replica left: its newest checkpoint and its reservation
     * (the lease, renewed every second, still has seconds to run). Dead is
     * not done: a COMMIT it sent just before may still be in its session's
     * socket, so the sessions go first (rpl_settle); and a worker stores a
     * checkpoint before the step in the row, so the checkpoint list, not
     * the row, says where a resume starts. */
    rpl_settle(&C, x, 1, 10);
    pg_job_row left;
    ck_assert(rpl_row(&C, id, &left));
    ck_assert_str_eq(left.owner, C.node[x]);
    int64_t last = rpl_last_ckpt(&C, id);
    ck_assert_int_ge(last, left.step);
    ck_assert_int_le(last, left.step + EVERY);
    int y = rpl_wait_new_owner(&C, id, C.node[x], 30, &row);
    ck_assert_int_ne(y, x);
    rpl_wait_status(&C, id, "succeeded", 120);

    /* The new owner resumed from the last checkpoint and ran what the plan
     * had left: steps the dead replica reserved but never checkpointed may
     * have run (their noise was drawn), so they count against the plan and
     * are not run again. Restarting from 0, or running past the plan,
     * would end elsewhere. Counted too: the live replicas ran exactly the
     * steps the plan had left, so with the dead one's (at most its
     * reservation) no more than the charge. */
    ck_assert(rpl_row(&C, id, &row));
    ck_assert_int_eq(row.steps_reserved, S);
    ck_assert_msg(row.step == last + (S - left.steps_reserved),
                  "final step %lld: resumed from checkpoint %lld with %lld of %d steps reserved "
                  "(row step %lld)",
                  (long long)row.step, (long long)last, (long long)left.steps_reserved, (int)S,
                  (long long)left.step);
    long ran = 0;
    for (int k = 0; k < RPL_N; k++)
        if (k != x) ran += rpl_steps_run(&C.r[k]);
    ck_assert_int_eq(ran, S - left.steps_reserved);
    ck_assert_int_eq(rpl_ledger_rows_of(&C, ds, id), 1);
    int total, reserved;
    rpl_ledger(&C, ds, &total, &reserved);
    ck_assert_int_eq(reserved, 1);
    rpl_check_ckpts(&C, id, row.step);

    /* the resolved spec and the privacy figures of the single box */
    pg_resp r;
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s", rid);
    for (int i = 0; i < 6000; i++) {
        rpl_req(&REF, "GET", path, NULL, NULL, &r);
        const char *st = json_string_value(json_object_get(r.json, "status"));
        int done = st && rpl_terminal(st);
        if (done) ck_assert_str_eq(st, "succeeded");
        if (done) break;
        pg_resp_free(&r);
        pg_sleep_ms(20);
    }
    json_t *ref = json_incref(r.json);
    pg_resp_free(&r);
    /* the resolved spec as stored (the job row; any replica serves it),
     * less the dataset it names (the reference's is another one) and the
     * service's own "_" keys, which the view leaves out */
    json_t *gs = rpl_spec_of(&C, id), *rs = json_deep_copy(json_object_get(ref, "spec"));
    ck_assert_ptr_nonnull(gs);
    ck_assert_str_eq(json_string_value(json_object_get(gs, "dataset_id")), ds);
    json_object_del(gs, "dataset_id");
    json_object_del(rs, "dataset_id");
    rpl_public_keys(gs);
    rpl_same_json(gs, rs);
    json_decref(gs);
    json_decref(rs);
    /* the charge: the ledger row's epsilon is the single box's plan */
    double charged = rpl_ledger_epsilon_of(&C, ds, id);
    ck_assert_msg(pg_test_reldiff(charged, rpl_num(ref, "privacy", "epsilon")) < 1e-12,
                  "charged %.17g, single box %.17g", charged, rpl_num(ref, "privacy", "epsilon"));
    json_decref(ref);
    double spent[2];
    const pg_srv *who[2] = {&REF, &C.r[rpl_other_than(&C, x)]};
    const char *dss[2] = {rds, ds};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "/v1/datasets/%.64s/budget", dss[i]);
        rpl_req(who[i], "GET", path, NULL, NULL, &r);
        ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
        spent[i] = rpl_num(r.json, "spent_epsilon", NULL);
        pg_resp_free(&r);
    }
    ck_assert(pg_test_reldiff(spent[0], spent[1]) < 1e-12);

    /* the killed replica comes back under its name and finds nothing to do */
    rpl_start_one(&C, x);
    ck_assert(rpl_row(&C, id, &row));
    ck_assert_str_eq(row.status, "succeeded");
    rpl_down(&C);
}
END_TEST

START_TEST(sigterm_hands_the_job_over_without_losing_steps)
{
    enum { S = 12000, EVERY = 4000 };
    char ds[64], id[64];
    pg_job_row row;
    int x = rpl_start_job(&C, &(rpl_job_case){"drain", 30, 5, 0, S, EVERY, 0, false}, ROWS, ds, id,
                          &row);
    /* the step the running replica reports just before SIGTERM */
    long seen = -1;
    for (int i = 0; i < 3000 && seen < 100; i++) {
        json_t *v = rpl_view(&C.r[x], id);
        if (v) seen = (long)rpl_num(v, "progress", "step");
        json_decref(v);
        if (seen < 100) pg_sleep_ms(10);
    }
    ck_assert_int_ge(seen, 100);
    ck_assert_int_eq(pg_srv_stop(&C.r[x]), 0); /* SIGTERM, clean exit */
    /* the drain checkpointed where it stopped: nothing before SIGTERM lost */
    ck_assert(rpl_row(&C, id, &row));
    ck_assert_msg(row.step >= seen, "checkpoint at %lld after SIGTERM at step %ld",
                  (long long)row.step, seen);
    /* ... and gave back the part of its reservation it did not run, so the
     * next owner can run every planned step (unless it already claimed) */
    if (!strcmp(row.owner, C.node[x])) ck_assert_int_eq(row.steps_reserved, row.step);
    int y = rpl_wait_new_owner(&C, id, C.node[x], 30, &row);
    ck_assert_int_ne(y, x);
    rpl_wait_status(&C, id, "succeeded", 120);
    ck_assert(rpl_row(&C, id, &row));
    ck_assert_int_eq(row.step, S);
    ck_assert_int_eq(row.steps_reserved, S);
    ck_assert_int_eq(rpl_ledger_rows_of(&C, ds, id), 1);
    rpl_check_ckpts(&C, id, S);
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
    tcase_add_test(tc, kill9_mid_training_fails_over_and_matches_a_single_box);
    tcase_add_test(tc, sigterm_hands_the_job_over_without_losing_steps);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return rpl_run_suite(suite());
}
