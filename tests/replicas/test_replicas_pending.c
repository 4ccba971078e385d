/* Multi-replica tests of issue 18 that need the shared queue's workers
 * (claim from the database, leases, takeover, cancel and drain through the
 * job row) and cross-replica reads (views, SSE and samples of a job another
 * replica runs). Built always, registered only with
 * -DPRIVGEN_REPLICAS_PENDING=ON (tests/replicas/CMakeLists.txt) until those
 * features are merged; then they move into test_replicas.c.
 *
 *  - failover: kill -9 the replica running a job mid-training; another one
 *    claims it once the lease (2 s) expired, resumes from the last
 *    checkpoint and finishes; one ledger row; resolved spec and epsilon equal
 *    a single-box (SQLite) run of the same request;
 *  - partition: SIGSTOP the running replica past its lease, let another take
 *    over, SIGCONT it: the stale owner's writes are refused, every stored
 *    checkpoint verifies and the final state is the new owner's;
 *  - cross-replica: samples of a finished job byte-identical from r1, r2,
 *    r3 for the same seed; cancel through one replica stops the job running
 *    on another; SSE on a replica that does not run the job follows it to
 *    its end;
 *  - drain: SIGTERM to the running replica checkpoints and hands the job
 *    over; no step before SIGTERM is lost beyond the last checkpoint. */
#include <math.h>

#include "replicas/rpl.h"
#include "support/pg_test.h"

static rpl C;
static pg_srv REF; /* the single-box reference */

#define ROWS 400

/* GET /v1/jobs/{id} through replica s; NULL unless 200 (json_decref). */
static json_t *view(const pg_srv *s, const char *id)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%.64s", id);
    pg_resp r;
    rpl_req(s, "GET", path, NULL, NULL, &r);
    json_t *o = r.status == 200 ? json_incref(r.json) : NULL;
    pg_resp_free(&r);
    return o;
}

static double num_at(json_t *o, const char *a, const char *b)
{
    json_t *x = json_object_get(o, a);
    return json_number_value(b ? json_object_get(x, b) : x);
}

/* A live replica other than k (the first one). */
static int other_than(const rpl *c, int k)
{
    for (int i = 0; i < RPL_N; i++)
        if (i != k && c->r[i].pid > 0) return i;
    return -1;
}

/* Waits until the job runs under some owner with a checkpoint at step
 * >= at_least stored; returns the owner's index. */
static int wait_running_at(rpl *c, const char *id, int64_t at_least, int secs, pg_job_row *row)
{
    for (int i = 0; i < secs * 50; i++) {
        if (rpl_row(c, id, row)) {
            ck_assert_msg(!rpl_terminal(row->status), "job %s ended %s too early", id, row->status);
            if (!strcmp(row->status, "running") && row->owner[0] && row->step >= at_least)
                return rpl_index(c, row->owner);
        }
        pg_sleep_ms(20);
    }
    ck_abort_msg("job %s never ran past step %lld", id, (long long)at_least);
    return -1;
}

/* Waits until a node other than gone owns the running (or finished) job. */
static int wait_new_owner(rpl *c, const char *id, const char *gone, int secs, pg_job_row *row)
{
    for (int i = 0; i < secs * 50; i++) {
        if (rpl_row(c, id, row) && row->owner[0] && strcmp(row->owner, gone)) {
            ck_assert_msg(strcmp(row->status, "failed") && strcmp(row->status, "cancelled"),
                          "job %s ended %s", id, row->status);
            return rpl_index(c, row->owner);
        }
        pg_sleep_ms(20);
    }
    ck_abort_msg("no replica took job %s over from %s in %d s", id, gone, secs);
    return -1;
}

/* The job's checkpoints: strictly increasing steps, each one readable and
 * verified (length and digests) from the database; returns the count. */
static size_t check_ckpts(rpl *c, const char *id, int64_t last_step)
{
    pg_ckpt_row *rows;
    size_t n;
    ck_assert_int_eq(pg_db_ckpt_list(c->db, id, &rows, &n, NULL), PG_OK);
    ck_assert_uint_ge(n, 1);
    for (size_t i = 0; i < n; i++) {
        if (i) ck_assert_int_gt(rows[i].step, rows[i - 1].step);
        unsigned char *bytes = NULL;
        size_t len = 0;
        int found = 0;
        pg_error err = {0};
        ck_assert_msg(pg_db_ckpt_get(c->db, id, rows[i].step, (size_t)1 << 30, &bytes, &len, &found,
                                     &err) == PG_OK,
                      "checkpoint %lld: %s", (long long)rows[i].step, err.msg);
        ck_assert(found);
        ck_assert_uint_eq(len, (size_t)rows[i].bytes);
        free(bytes);
    }
    ck_assert_int_eq(rows[n - 1].step, last_step);
    free(rows);
    return n;
}

/* ---- failover ----------------------------------------------------------- */

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

    rpl_up(&C, "failover");
    rpl_dataset(&C.r[0], 100.0, ROWS, ds);
    rpl_job_body(body, sizeof body, ds, S, 5.0, EVERY);
    rpl_submit(&C.r[0], body, id);
    pg_job_row row;
    int x = wait_running_at(&C, id, EVERY, 60, &row);
    ck_assert_int_ge(x, 0);
    int64_t ckpt_at_kill = row.step;
    kill(C.r[x].pid, SIGKILL);
    waitpid(C.r[x].pid, NULL, 0);
    C.r[x].pid = 0;
    int y = wait_new_owner(&C, id, C.node[x], 30, &row);
    ck_assert_int_ne(y, x);
    rpl_wait_status(&C, id, "succeeded", 120);

    ck_assert(rpl_row(&C, id, &row));
    ck_assert_int_eq(row.step, S);
    ck_assert_int_le(row.steps_reserved, S);
    ck_assert_int_eq(rpl_ledger_rows_of(&C, ds, id), 1);
    int total, reserved;
    rpl_ledger(&C, ds, &total, &reserved);
    ck_assert_int_eq(reserved, 1);
    check_ckpts(&C, id, S);
    /* the checkpoint the dead replica left is still there: the new owner
     * resumed from it rather than starting again */
    pg_ckpt_row *ck;
    size_t nck;
    ck_assert_int_eq(pg_db_ckpt_list(C.db, id, &ck, &nck, NULL), PG_OK);
    int kept = 0;
    for (size_t i = 0; i < nck; i++) kept |= ck[i].step == ckpt_at_kill;
    free(ck);
    ck_assert(kept);

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
    json_t *got = view(&C.r[other_than(&C, x)], id);
    ck_assert_ptr_nonnull(got);
    ck_assert(json_equal(json_object_get(got, "spec"), json_object_get(ref, "spec")));
    ck_assert(json_equal(json_object_get(got, "privacy"), json_object_get(ref, "privacy")));
    ck_assert(pg_test_reldiff(num_at(got, "privacy", "epsilon"),
                              num_at(ref, "privacy", "epsilon")) < 1e-12);
    ck_assert(pg_test_reldiff(num_at(got, "progress", "epsilon_spent"),
                              num_at(ref, "progress", "epsilon_spent")) < 1e-12);
    ck_assert_int_eq((int64_t)num_at(got, "progress", "step"), S);
    json_decref(got);
    json_decref(ref);

    /* the killed replica comes back under its name and finds nothing to do */
    rpl_start_one(&C, x);
    ck_assert(rpl_row(&C, id, &row));
    ck_assert_str_eq(row.status, "succeeded");
    rpl_down(&C);
}
END_TEST

/* ---- partition ---------------------------------------------------------- */

START_TEST(a_stopped_replica_past_its_lease_cannot_overwrite_the_new_owner)
{
    enum { S = 8000, EVERY = 400 };
    rpl_up(&C, "partition");
    char ds[64], body[512], id[64];
    rpl_dataset(&C.r[0], 100.0, ROWS, ds);
    rpl_job_body(body, sizeof body, ds, S, 5.0, EVERY);
    rpl_submit(&C.r[1], body, id);
    pg_job_row row;
    int x = wait_running_at(&C, id, EVERY, 60, &row);
    int64_t before = row.step;
    kill(C.r[x].pid, SIGSTOP); /* cut off: no heartbeat, no step */
    int y = wait_new_owner(&C, id, C.node[x], 30, &row);
    ck_assert_int_ne(y, x);
    /* the new owner writes a checkpoint of its own before the old one wakes */
    for (int i = 0; i < 3000; i++) {
        ck_assert(rpl_row(&C, id, &row));
        if (row.step > before || rpl_terminal(row.status)) break;
        pg_sleep_ms(20);
    }
    ck_assert_int_gt(row.step, before);
    kill(C.r[x].pid, SIGCONT);
    rpl_wait_status(&C, id, "succeeded", 120);

    ck_assert(rpl_row(&C, id, &row));
    ck_assert_str_eq(row.owner, C.node[y]); /* the final state is the new owner's */
    ck_assert_int_eq(row.step, S);
    ck_assert_int_le(row.steps_reserved, S);
    ck_assert_int_eq(rpl_ledger_rows_of(&C, ds, id), 1);
    check_ckpts(&C, id, S);
    /* the woken replica is healthy and serves the job the other one ran */
    ck_assert_int_eq(rpl_wait_ready(&C.r[x], 20), 0);
    json_t *v = view(&C.r[x], id);
    ck_assert_ptr_nonnull(v);
    ck_assert_str_eq(json_string_value(json_object_get(v, "status")), "succeeded");
    json_decref(v);
    rpl_down(&C);
}
END_TEST

/* ---- cross-replica ------------------------------------------------------ */

START_TEST(samples_of_a_finished_job_are_identical_from_every_replica)
{
    rpl_up(&C, "samples");
    char ds[64], body[512], id[64];
    rpl_dataset(&C.r[0], 100.0, ROWS, ds);
    rpl_job_body(body, sizeof body, ds, 300, 5.0, 100);
    rpl_submit(&C.r[2], body, id);
    rpl_wait_status(&C, id, "succeeded", 60);
    char path[160];
    const char *fmt[] = {"", "&format=npy"};
    for (int f = 0; f < 2; f++) {
        snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=64&seed=11%s", id, fmt[f]);
        pg_resp r[RPL_N];
        for (int k = 0; k < RPL_N; k++) {
            rpl_req(&C.r[k], "GET", path, NULL, NULL, &r[k]);
            ck_assert_msg(r[k].status == 200, "%s: %ld %s", C.node[k], r[k].status, r[k].body);
            ck_assert_uint_gt(r[k].len, 0);
        }
        for (int k = 1; k < RPL_N; k++) {
            ck_assert_uint_eq(r[k].len, r[0].len);
            ck_assert(memcmp(r[k].body, r[0].body, r[0].len) == 0);
        }
        /* and a second seed differs, so the equality above is not vacuous */
        char p2[160];
        snprintf(p2, sizeof p2, "/v1/jobs/%s/samples?n=64&seed=12%s", id, fmt[f]);
        pg_resp o;
        rpl_req(&C.r[1], "GET", p2, NULL, NULL, &o);
        ck_assert_int_eq(o.status, 200);
        ck_assert(o.len != r[0].len || memcmp(o.body, r[0].body, o.len) != 0);
        pg_resp_free(&o);
        for (int k = 0; k < RPL_N; k++) pg_resp_free(&r[k]);
    }
    rpl_down(&C);
}
END_TEST

START_TEST(cancel_through_one_replica_stops_the_job_on_another)
{
    rpl_up(&C, "cancel");
    char ds[64], body[512], id[64];
    rpl_dataset(&C.r[0], 100.0, ROWS, ds);
    rpl_job_body(body, sizeof body, ds, 1000000, 5.0, 100000);
    rpl_submit(&C.r[0], body, id);
    pg_job_row row;
    int x = wait_running_at(&C, id, 0, 60, &row);
    int c = other_than(&C, x);
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%.64s/cancel", id);
    pg_resp r;
    rpl_req(&C.r[c], "POST", path, "{}", NULL, &r);
    ck_assert_msg(r.status >= 200 && r.status < 300, "%ld %s", r.status, r.body);
    pg_resp_free(&r);
    rpl_wait_status(&C, id, "cancelled", 15);
    /* stopped, not finished: it ran, so its charge stays */
    ck_assert(rpl_row(&C, id, &row));
    ck_assert_int_lt(row.step, 1000000);
    ck_assert_int_eq(rpl_ledger_rows_of(&C, ds, id), 1);
    int total, reserved;
    rpl_ledger(&C, ds, &total, &reserved);
    ck_assert_int_eq(reserved, 1);
    /* the replica that ran it is free again: its next job runs */
    char id2[64];
    rpl_job_body(body, sizeof body, ds, 50, 20.0, 50);
    rpl_submit(&C.r[x], body, id2);
    rpl_wait_status(&C, id2, "succeeded", 60);
    rpl_down(&C);
}
END_TEST

START_TEST(events_on_another_replica_follow_the_job_to_its_end)
{
    enum { S = 6000 };
    rpl_up(&C, "events");
    char ds[64], body[512], id[64];
    rpl_dataset(&C.r[0], 100.0, ROWS, ds);
    rpl_job_body(body, sizeof body, ds, S, 5.0, 500);
    rpl_submit(&C.r[0], body, id);
    pg_job_row row;
    int x = wait_running_at(&C, id, 0, 60, &row);
    int b = other_than(&C, x);
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%.64s/events", id);
    pg_resp r;
    rpl_req(&C.r[b], "GET", path, NULL, (const char *const[]){"Accept: text/event-stream", NULL},
            &r);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    ck_assert_ptr_nonnull(r.body);
    /* progress events with non-decreasing steps, then one done event */
    long last = -1;
    int progress = 0;
    const char *p = r.body, *done = strstr(r.body, "event: done\n");
    ck_assert_msg(done != NULL, "no done event in %s", r.body);
    while ((p = strstr(p, "event: progress\ndata: ")) != NULL && p < done) {
        p += strlen("event: progress\ndata: ");
        json_t *o = json_loadb(p, strcspn(p, "\n"), 0, NULL);
        ck_assert_ptr_nonnull(o);
        long step = (long)num_at(o, "progress", "step");
        ck_assert_int_ge(step, last);
        last = step;
        progress++;
        json_decref(o);
    }
    ck_assert_int_ge(progress, 1);
    json_t *fin = json_loadb(done + strlen("event: done\ndata: "),
                             strcspn(done + strlen("event: done\ndata: "), "\n"), 0, NULL);
    ck_assert_ptr_nonnull(fin);
    ck_assert_str_eq(json_string_value(json_object_get(fin, "status")), "succeeded");
    ck_assert_int_eq((long)num_at(fin, "progress", "step"), S);
    json_decref(fin);
    pg_resp_free(&r);
    rpl_down(&C);
}
END_TEST

/* ---- drain -------------------------------------------------------------- */

START_TEST(sigterm_hands_the_job_over_without_losing_steps)
{
    enum { S = 30000, EVERY = 10000 };
    rpl_up(&C, "drain");
    char ds[64], body[512], id[64];
    rpl_dataset(&C.r[0], 100.0, ROWS, ds);
    rpl_job_body(body, sizeof body, ds, S, 5.0, EVERY);
    rpl_submit(&C.r[0], body, id);
    pg_job_row row;
    int x = wait_running_at(&C, id, 0, 60, &row);
    /* the step the running replica reports just before SIGTERM */
    long seen = -1;
    for (int i = 0; i < 3000 && seen < 100; i++) {
        json_t *v = view(&C.r[x], id);
        if (v) seen = (long)num_at(v, "progress", "step");
        json_decref(v);
        if (seen < 100) pg_sleep_ms(10);
    }
    ck_assert_int_ge(seen, 100);
    ck_assert_int_eq(pg_srv_stop(&C.r[x]), 0); /* SIGTERM, clean exit */
    /* the drain checkpointed where it stopped: nothing before SIGTERM lost */
    ck_assert(rpl_row(&C, id, &row));
    ck_assert_msg(row.step >= seen || !strcmp(row.status, "succeeded"),
                  "checkpoint at %lld after SIGTERM at step %ld", (long long)row.step, seen);
    int y = wait_new_owner(&C, id, C.node[x], 30, &row);
    ck_assert_int_ne(y, x);
    rpl_wait_status(&C, id, "succeeded", 120);
    ck_assert(rpl_row(&C, id, &row));
    ck_assert_int_eq(row.step, S);
    ck_assert_int_le(row.steps_reserved, S);
    ck_assert_int_eq(rpl_ledger_rows_of(&C, ds, id), 1);
    check_ckpts(&C, id, S);
    rpl_down(&C);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("replicas_pending");
    TCase *tc = tcase_create("replicas_pending");
    tcase_set_timeout(tc, 200);
    tcase_add_test(tc, kill9_mid_training_fails_over_and_matches_a_single_box);
    tcase_add_test(tc, a_stopped_replica_past_its_lease_cannot_overwrite_the_new_owner);
    tcase_add_test(tc, samples_of_a_finished_job_are_identical_from_every_replica);
    tcase_add_test(tc, cancel_through_one_replica_stops_the_job_on_another);
    tcase_add_test(tc, events_on_another_replica_follow_the_job_to_its_end);
    tcase_add_test(tc, sigterm_hands_the_job_over_without_losing_steps);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return rpl_run_suite(suite());
}
