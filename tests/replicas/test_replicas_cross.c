/* Multi-replica tests across replicas and across a takeover
 * (test_replicas.c holds the queue, failover, budget and drain tests):
 *
 *  - samples of a finished job byte-identical from r1, r2, r3 for the same
 *    seed (JSON and NPY), and different for another seed;
 *  - cancel through one replica stops the job running on another; its
 *    charge stays (it ran) and the replica that ran it takes the next job;
 *  - SSE on a replica that does not run the job follows it to its end:
 *    non-decreasing steps, then `done` with the final status and step;
 *  - a replica stopped past its lease and woken shows the new owner's
 *    result, not its own stale memory of the job;
 *  - partition: SIGSTOP the running replica past its lease, let another take
 *    over, SIGCONT it: the final state and checkpoints are the new owner's
 *    (final step = its last checkpoint + plan - its reservation, as after a
 *    kill), every stored checkpoint verifies, one ledger row;
 *  - the same with the owner stopped inside its fenced checkpoint write,
 *    holding the job row's lock (idle in transaction): the claim's
 *    `FOR UPDATE SKIP LOCKED` used to pass that row over until the server
 *    dropped the session (TCP keepalive, hours); the fenced transactions
 *    now bound their idle time (service/store/pg/db_pg_queue.c). The random-point
 *    partition test above hit that window in some runs; this one always
 *    does;
 *  - the owner stopped inside a statement of that write that cannot end
 *    while it is stopped (it waits on a lock the test holds): taken over
 *    about a lease after the stop, not at the 30 s statement_timeout (the
 *    write now takes the job row only right before its commit; a write
 *    stopped while it holds the row is ended by a claimer, which ends the
 *    session holding an expired job's row), and the stopped write never
 *    lands;
 *  - an owner killed between storing a checkpoint and writing its step to
 *    the job row: the new owner resumes from that checkpoint with the
 *    owner's reservation and loses no step (the kill9 test of
 *    test_replicas.c hit that window in some runs).
 * The takeover tests stop a replica with rpl_stop (kill() alone returns
 * before a multithreaded process stops) and read what it left only once
 * its sessions settled (rpl_settle); they count the steps every replica
 * ran against the charged plan. */
#include <libpq-fe.h>
#include <math.h>
#include <time.h>

#include "replicas/rpl.h"
#include "support/pg_test.h"

static rpl C;

#define ROWS 400

/* The takeover tests' job (rpl_start_job): replicas with a 4 s lease, a
 * job of TK_S steps checkpointed every TK_EVERY through r[via] (every
 * checkpoint kept when keep_all); returns its owner once it runs with a
 * checkpoint stored. */
enum { TK_S = 8000, TK_EVERY = 400 };
static int takeover_job(const char *name, int via, bool keep_all, char ds[64], char id[64],
                        pg_job_row *row)
{
    return rpl_start_job(&C, &(rpl_job_case){name, 4, 1, via, TK_S, TK_EVERY, TK_EVERY, keep_all},
                         ROWS, ds, id, row);
}

/* What the stopped (or killed) owner x left: the job's row, still x's, into
 * *left; returns the newest stored checkpoint's step. */
static int64_t left_by(const char *id, int x, pg_job_row *left)
{
    ck_assert(rpl_row(&C, id, left));
    ck_assert_str_eq(left->owner, C.node[x]);
    return rpl_last_ckpt(&C, id);
}

/* ---- cross-replica ------------------------------------------------------ */

START_TEST(samples_of_a_finished_job_are_identical_from_every_replica)
{
    rpl_up(&C, "samples", 30, 5);
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
    char ds[64], body[512], id[64];
    pg_job_row row;
    int x = rpl_start_job(&C, &(rpl_job_case){"cancel", 30, 5, 0, 1000000, 100000, 0, false}, ROWS,
                          ds, id, &row);
    int c = rpl_other_than(&C, x);
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
    char ds[64], id[64];
    pg_job_row row;
    int x = rpl_start_job(&C, &(rpl_job_case){"events", 30, 5, 0, S, 500, 0, false}, ROWS, ds, id,
                          &row);
    int b = rpl_other_than(&C, x);
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
        long step = (long)rpl_num(o, "progress", "step");
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
    ck_assert_int_eq((long)rpl_num(fin, "progress", "step"), S);
    json_decref(fin);
    pg_resp_free(&r);
    rpl_down(&C);
}
END_TEST

/* ---- drain -------------------------------------------------------------- */

START_TEST(a_woken_replica_shows_the_result_of_the_new_owner)
{
    char ds[64], id[64];
    pg_job_row row;
    int x = takeover_job("woken", 0, false, ds, id, &row);
    rpl_stop(&C, x);
    /* x is stopped wherever it is, not settled (the view is what this test
     * is about), so it may be stopped inside a statement of a transaction
     * that holds the job row. A claimer ends that session once the lease
     * ran out (service/store/pg/db_pg_queue.c; before, only the pool's 30 s
     * statement_timeout did, or nothing when x was stopped while sending a
     * statement), so the takeover comes about a lease (4 s) after the stop;
     * 30 s is a margin for ASan on two loaded cores, not a timing. */
    int y = rpl_wait_new_owner(&C, id, C.node[x], 30, &row);
    ck_assert_int_ne(y, x);
    rpl_wait_status(&C, id, "succeeded", 120);
    rpl_cont(&C, x);
    ck_assert_int_eq(rpl_wait_ready(&C.r[x], 20), 0);
    /* within a few seconds its view is the database's, not its memory's */
    const char *st = NULL;
    for (int i = 0; i < 250; i++) {
        json_t *v = rpl_view(&C.r[x], id);
        ck_assert_ptr_nonnull(v);
        int done = !strcmp(json_string_value(json_object_get(v, "status")), "succeeded") &&
                   !strcmp(json_string_value(json_object_get(v, "node")), C.node[y]);
        json_decref(v);
        if (done) st = "succeeded";
        if (done) break;
        pg_sleep_ms(20);
    }
    ck_assert_ptr_nonnull(st);
    rpl_down(&C);
}
END_TEST

/* After replica x (the owner) was stopped and what it had sent the database
 * landed or was rolled back (rpl_stop, rpl_settle), its row `left` and its
 * newest checkpoint `last` are all it left: another replica takes the job
 * over within wait_s and writes past `last`, then x wakes. The final state
 * is the new owner's: it resumed from `last` (a stopped write, rolled back,
 * left nothing) with left's reservation as its base and ran what the plan
 * of S steps had left, as after a kill: final step = last + S -
 * left.steps_reserved. One ledger row, every stored checkpoint verifies,
 * and the woken replica is healthy (that it shows the new owner's result is
 * a_woken_replica_shows_the_result_of_the_new_owner).
 *
 * The privacy invariant itself, counted rather than inferred from rows: the
 * training steps all replicas ran together (x's void ones included: their
 * noise was drawn on the data) are at most the S the ledger charged, and at
 * least S - every (a takeover loses at most the chunk x had reserved). x's
 * count is final once its worker let the job go, which its view shows by
 * following the row (the new owner's node). */
static void after_takeover(const char *job, const char *dataset, int x, const pg_job_row *left,
                           int64_t last, int64_t steps, int64_t every, int wait_s)
{
    pg_job_row r;
    int y = rpl_wait_new_owner(&C, job, C.node[x], wait_s, &r);
    ck_assert_int_ne(y, x);
    for (int i = 0; i < 3000; i++) {
        ck_assert(rpl_row(&C, job, &r));
        if (r.step > last || rpl_terminal(r.status)) break;
        pg_sleep_ms(20);
    }
    ck_assert_int_gt(r.step, last);
    rpl_cont(&C, x);
    rpl_wait_status(&C, job, "succeeded", 120);
    ck_assert(rpl_row(&C, job, &r));
    ck_assert_str_eq(r.owner, C.node[y]);
    ck_assert_int_eq(r.steps_reserved, steps);
    ck_assert_msg(r.step == last + (steps - left->steps_reserved),
                  "final step %lld: resumed from checkpoint %lld with %lld of %lld steps reserved "
                  "(row step %lld)",
                  (long long)r.step, (long long)last, (long long)left->steps_reserved,
                  (long long)steps, (long long)left->step);
    ck_assert_int_eq(rpl_ledger_rows_of(&C, dataset, job), 1);
    rpl_check_ckpts(&C, job, r.step);
    ck_assert_int_eq(rpl_wait_ready(&C.r[x], 20), 0);
    int let_go = 0;
    for (int i = 0; i < 1500 && !let_go; i++) {
        json_t *v = rpl_view(&C.r[x], job);
        ck_assert_ptr_nonnull(v);
        let_go = !strcmp(json_string_value(json_object_get(v, "node")), C.node[y]);
        json_decref(v);
        if (!let_go) pg_sleep_ms(20);
    }
    ck_assert_msg(let_go, "%s still drives job %s", C.node[x], job);
    long ran = 0, of[RPL_N];
    for (int k = 0; k < RPL_N; k++) ran += of[k] = rpl_steps_run(&C.r[k]);
    ck_assert_msg(ran <= steps && ran >= steps - every,
                  "steps run %ld (%s %ld, %s %ld, %s %ld) for %lld charged", ran, C.node[0], of[0],
                  C.node[1], of[1], C.node[2], of[2], (long long)steps);
    rpl_down(&C);
}

START_TEST(a_stopped_replica_past_its_lease_cannot_overwrite_the_new_owner)
{
    char ds[64], id[64];
    pg_job_row row;
    int x = takeover_job("partition", 1, false, ds, id, &row);
    rpl_stop(&C, x);          /* cut off: no heartbeat, no step */
    rpl_settle(&C, x, 0, 10); /* a write in flight lands or is rolled back */
    pg_job_row left;
    int64_t last = left_by(id, x, &left);
    ck_assert_int_ge(last, left.step);
    ck_assert_int_le(last, left.step + TK_EVERY);
    after_takeover(id, ds, x, &left, last, TK_S, TK_EVERY, 30);
}
END_TEST

/* The stall the partition test found by chance, made certain: the owner is
 * stopped inside its fenced checkpoint write, after the write took the job
 * row's lock (`FOR UPDATE`) and before its COMMIT, so its session sits idle
 * in transaction holding the row. The test holds an EXCLUSIVE lock on the
 * checkpoints table (readers pass) so the owner's write blocks right after
 * taking the row lock, stops the owner there (every thread of it: rpl_stop),
 * then lets the statement finish. Another replica must still take the job
 * over after the lease (the fenced transactions bound their idle time,
 * service/store/pg/db_pg_queue.c; without that the claim's SKIP LOCKED passes the
 * row over for as long as the stopped session lives), and the stopped write
 * must not land. */
static PGconn *pq_open(const char *url)
{
    PGconn *c = PQconnectdb(url);
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "%s", PQerrorMessage(c));
    return c;
}

static void pq_ok(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    ck_assert_msg(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK, "%s: %s", sql,
                  PQerrorMessage(c));
    PQclear(r);
}

/* Sessions of replica k waiting for a lock in a statement that mentions
 * `word` (ILIKE: "checkpoints", the table; "steps_reserved", the step
 * write of the job row). */
static int pq_blocked(PGconn *c, int k, const char *word)
{
    char app[32], like[64];
    rpl_app(&C, k, app);
    snprintf(like, sizeof like, "%%%s%%", word);
    const char *v[2] = {app, like};
    PGresult *r = PQexecParams(c,
                               "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                               "current_database() AND application_name = $1 AND "
                               "wait_event_type = 'Lock' AND query ILIKE $2",
                               2, NULL, v, NULL, NULL, 0);
    ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    int n = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

/* Polls (every 20 ms, up to secs) until replica k has a session blocked as
 * pq_blocked says (want 1) or none (want 0); whether it came. */
static int pq_wait_blocked(PGconn *c, int k, const char *word, int want, int secs)
{
    for (int i = 0; i < secs * 50; i++) {
        if ((pq_blocked(c, k, word) > 0) == want) return 1;
        pg_sleep_ms(20);
    }
    return 0;
}

/* Opens *lk and *mon on the replicas' database, takes the checkpoints table
 * in *lk's open transaction (EXCLUSIVE: readers pass) and waits until the
 * owner x of job id blocks on it in its fenced checkpoint write. */
static void hold_checkpoints(const char *id, int x, PGconn **lk, PGconn **mon)
{
    *lk = pq_open(C.db_url);
    *mon = pq_open(C.db_url);
    pq_ok(*lk, "BEGIN");
    pq_ok(*lk, "LOCK TABLE checkpoints IN EXCLUSIVE MODE");
    ck_assert_msg(pq_wait_blocked(*mon, x, "checkpoints", 1, 60),
                  "the owner of %s wrote no checkpoint in 60 s", id);
}

START_TEST(an_owner_stopped_inside_its_checkpoint_write_is_still_taken_over)
{
    char ds[64], id[64];
    pg_job_row row;
    int x = takeover_job("stall", 2, false, ds, id, &row);
    PGconn *lk, *mon;
    hold_checkpoints(id, x, &lk, &mon);
    rpl_stop(&C, x); /* inside the write (its fence takes the job row at the end) */
    ck_assert_int_gt(pq_blocked(mon, x, "checkpoints"), 0);
    /* What x leaves: its write waits on the lock and x is stopped, so none
     * of it can land any more (its fence would be refused after the
     * takeover); the row is at its newest checkpoint. */
    pg_job_row left;
    int64_t last = left_by(id, x, &left);
    ck_assert_int_eq(last, left.step);
    pq_ok(lk, "COMMIT"); /* its statement ends; its COMMIT never comes */
    PQfinish(lk);
    PQfinish(mon);
    rpl_settle(&C, x, 0, 10);
    ck_assert_int_eq(rpl_last_ckpt(&C, id), last); /* the stopped write did not land */
    after_takeover(id, ds, x, &left, last, TK_S, TK_EVERY, 30);
}
END_TEST

/* The owner stopped *inside* a statement of its fenced checkpoint write
 * (written when the write held the job row throughout): as above, but the
 * test keeps the checkpoints table locked, so the stopped owner's statement
 * never ends on its own. Its backend waits on the lock, neither idle (the
 * 1 s bound does not apply) nor finished; only the pool's 30 s
 * statement_timeout would end it, and until then the claim's SKIP LOCKED
 * passed the job over (a client frozen while sending a message holds it
 * even longer: tests/pg/test_db_pg.c,
 * an_owner_frozen_inside_a_statement_is_taken_over). Another replica must
 * take the job over about a lease (4 s) after the stop, well before that
 * 30 s: the write no longer holds the job row while its bytes go in (it
 * takes the row right before its commit), and a session that does hold an
 * expired job's row is ended by a claimer (service/store/pg/db_pg_queue.c;
 * the frozen-client test covers that). Only then does the test let the table
 * go (the new owner writes checkpoints too). The stopped write never lands
 * and the woken owner writes nothing (after_takeover). */
START_TEST(an_owner_stopped_inside_a_statement_is_taken_over_within_its_lease)
{
    char ds[64], id[64];
    pg_job_row row;
    int x = takeover_job("instmt", 1, false, ds, id, &row);
    PGconn *lk, *mon;
    hold_checkpoints(id, x, &lk, &mon);
    rpl_stop(&C, x); /* inside the write's statement */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pg_job_row left;
    int64_t last = left_by(id, x, &left);
    ck_assert_int_eq(last, left.step);
    /* 20 s: five leases, and 10 s before the statement_timeout would have
     * freed the row (the old code's takeover came at about 31 s) */
    int y = rpl_wait_new_owner(&C, id, C.node[x], 20, &row);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ck_assert_int_ne(y, x);
    fprintf(stderr, "instmt: %s took %s over %.1f s after %s stopped (lease 4 s)\n", C.node[y], id,
            (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), C.node[x]);
    /* its write did not land (read while the table is still the test's:
     * nobody can have written since). A checkpoint write takes the job
     * row only right before its commit (db_pg_queue.c, put_owned_fn), so
     * the stopped session holds no job row and the claim needed no reaping:
     * it may still wait on the table, and once the table is free its
     * transaction is ended by the 1 s idle bound, or refused at its fence
     * if x wakes first. */
    ck_assert_int_eq(rpl_last_ckpt(&C, id), last);
    pq_ok(lk, "COMMIT");
    PQfinish(lk);
    PQfinish(mon);
    after_takeover(id, ds, x, &left, last, TK_S, TK_EVERY, 30);
}
END_TEST

/* The interleaving behind the kill9 test's rare miss, made certain: a
 * worker stores a checkpoint, then the step in the job row, in two
 * transactions, and the owner dies between them. The test holds the
 * checkpoints table so the owner's write of step s blocks holding the job
 * row, takes the jobs table in SHARE mode (the owner's row lock passes, its
 * UPDATEs do not), lets the checkpoint commit and kills the owner while its
 * step write waits. It left checkpoint s, a row
 * still at s - every and a reservation of s: the new owner resumes from
 * checkpoint s with s reserved, so it loses nothing and the job ends at S.
 * The row's step (S - every here) would be the wrong resume point. */
/* 1 when session pid waits for a lock. */
static int pq_waiting(PGconn *c, int pid)
{
    char sql[160];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM pg_stat_activity WHERE pid = %d AND wait_event_type = 'Lock'",
             pid);
    PGresult *r = PQexec(c, sql);
    ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
    int n = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n > 0;
}

START_TEST(an_owner_killed_between_its_checkpoint_and_its_step_write_loses_no_step)
{
    enum { S = TK_S, EVERY = TK_EVERY };
    char ds[64], id[64];
    pg_job_row row;
    int x = takeover_job("gap", 1, true, ds, id, &row);
    PGconn *lk, *mon, *rl = pq_open(C.db_url);
    hold_checkpoints(id, x, &lk, &mon);
    pg_job_row before;
    ck_assert(rpl_row(&C, id, &before));
    int64_t s = before.steps_reserved; /* the step of the blocked write */
    ck_assert_int_eq(s, before.step + EVERY);
    ck_assert_int_eq(rpl_last_ckpt(&C, id), before.step);
    /* SHARE on the jobs table: the owner's write holds the row with
     * FOR UPDATE (ROW SHARE, compatible), its step write is an UPDATE (ROW
     * EXCLUSIVE, not). A row lock of the test's would not do: once the
     * checkpoint commits, the owner's next UPDATE may take the free row
     * before the test's waiting locker gets to it. */
    pq_ok(rl, "BEGIN");
    ck_assert_int_eq(PQsendQuery(rl, "LOCK TABLE jobs IN SHARE MODE"), 1);
    /* granted, or queued (then the owner's UPDATE queues behind it): not
     * merely sent, or the step write could still pass before it */
    int queued = 0;
    for (int i = 0; i < 30 * 50 && !queued; i++) {
        ck_assert_int_eq(PQconsumeInput(rl), 1);
        queued = !PQisBusy(rl) || pq_waiting(mon, PQbackendPID(rl));
        if (!queued) pg_sleep_ms(20);
    }
    ck_assert(queued);
    pq_ok(lk, "COMMIT"); /* the owner's checkpoint commits */
    PGresult *r;
    while ((r = PQgetResult(rl)) != NULL) { /* once the heartbeat it waited for ends */
        ck_assert_int_eq(PQresultStatus(r), PGRES_COMMAND_OK);
        PQclear(r);
    }
    /* the owner's step write now waits on the table: kill it there */
    ck_assert_msg(pq_wait_blocked(mon, x, "steps_reserved", 1, 30),
                  "the owner of %s did not write its step", id);
    ck_assert_int_eq(rpl_last_ckpt(&C, id), s);
    kill(C.r[x].pid, SIGKILL);
    waitpid(C.r[x].pid, NULL, 0);
    C.r[x].pid = 0;
    pq_ok(rl, "ROLLBACK");
    PQfinish(rl);
    PQfinish(lk);
    PQfinish(mon);
    rpl_settle(&C, x, 1, 10);
    pg_job_row left;
    ck_assert_int_eq(left_by(id, x, &left), s);
    ck_assert_int_eq(left.step, s - EVERY); /* the row is a checkpoint behind */
    ck_assert_int_eq(left.steps_reserved, s);

    int y = rpl_wait_new_owner(&C, id, C.node[x], 30, &row);
    ck_assert_int_ne(y, x);
    rpl_wait_status(&C, id, "succeeded", 120);
    ck_assert(rpl_row(&C, id, &row));
    ck_assert_str_eq(row.owner, C.node[y]);
    ck_assert_int_eq(row.steps_reserved, S);
    ck_assert_int_eq(row.step, S); /* resumed at s with s reserved: no step lost */
    ck_assert_int_eq(rpl_ledger_rows_of(&C, ds, id), 1);
    rpl_check_ckpts(&C, id, S);
    long ran = 0;
    for (int k = 0; k < RPL_N; k++)
        if (k != x) ran += rpl_steps_run(&C.r[k]);
    ck_assert_int_eq(ran, S - s); /* x ran s, the charge covers S */
    rpl_down(&C);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("replicas_cross");
    TCase *tc = tcase_create("cross");
    tcase_set_timeout(tc, 200);
    tcase_add_test(tc, samples_of_a_finished_job_are_identical_from_every_replica);
    tcase_add_test(tc, cancel_through_one_replica_stops_the_job_on_another);
    tcase_add_test(tc, events_on_another_replica_follow_the_job_to_its_end);
    tcase_add_test(tc, a_woken_replica_shows_the_result_of_the_new_owner);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("takeover");
    tcase_set_timeout(tt, 200);
    tcase_add_test(tt, a_stopped_replica_past_its_lease_cannot_overwrite_the_new_owner);
    tcase_add_test(tt, an_owner_stopped_inside_its_checkpoint_write_is_still_taken_over);
    tcase_add_test(tt, an_owner_killed_between_its_checkpoint_and_its_step_write_loses_no_step);
    suite_add_tcase(s, tt);
    TCase *tf = tcase_create("frozen");
    tcase_set_timeout(tf, 200);
    tcase_add_test(tf, an_owner_stopped_inside_a_statement_is_taken_over_within_its_lease);
    suite_add_tcase(s, tf);
    return s;
}

int main(void)
{
    return rpl_run_suite(suite());
}
