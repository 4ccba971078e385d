/* The shared job queue of service/store/db.h (claims, leases, heartbeats, fenced
 * writes) against whichever backend PRIVGEN_TEST_DB names. Every time is a
 * chosen number (the contract reads no clock for leases), so lease expiry
 * is tested without sleeping. Suites share a server database, so each test
 * first drains whatever earlier tests left runnable. */
#include <pthread.h>
#include <zlib.h>

#include "db_support.h"

static void setup(void)
{
    pg_test_db_setup();
}

static void teardown(void)
{
    pg_test_db_teardown();
}

/* Far beyond any lease a test takes (support/pg_jobs_test.h). */
#define LATE PG_TEST_LATE

/* Admits a queued job on a fresh dataset (no ledger charge); id written. */
static void admit(pg_db *db, char *id, size_t cap)
{
    char t[PG_ID_MAX], ds[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    pg_test_uid(ds, sizeof ds, "ds_");
    pg_test_dataset(db, t, ds, 2);
    pg_test_uid(id, cap, "job_");
    pg_test_job_admit(db, t, ds, id, "{}");
}

/* The job's row as load_all sees it (caller frees with pg_job_rows_free(.., 1)). */
static pg_job_row *load(pg_db *db, const char *id)
{
    return pg_test_job_row_of(db, id);
}

/* pg_db_job_watch by node succeeds with held as want_held and, unless
 * want_cancel is -1, the cancel flag as want_cancel. */
static void watch_expect(pg_db *db, const char *id, const char *node, int want_held,
                         int want_cancel)
{
    int held = 7, cancel = 7;
    ck_assert_int_eq(pg_db_job_watch(db, id, node, &held, &cancel, NULL), PG_OK);
    ck_assert_int_eq(held, want_held);
    if (want_cancel >= 0) ck_assert_int_eq(cancel, want_cancel);
}

/* pg_db_job_release by node at now succeeds with held as want_held. */
static void release_expect(pg_db *db, const char *id, const char *node, int64_t now, int want_held)
{
    int held = 7;
    ck_assert_int_eq(pg_db_job_release(db, id, node, now, &held, NULL), PG_OK);
    ck_assert_int_eq(held, want_held);
}

/* pg_db_job_heartbeat by node at now (lease 30 s) succeeds with held as
 * want_held. */
static void heartbeat_expect(pg_db *db, const char *id, const char *node, int64_t now,
                             int want_held)
{
    int held = 7;
    ck_assert_int_eq(pg_db_job_heartbeat(db, id, node, now, 30, &held, NULL), PG_OK);
    ck_assert_int_eq(held, want_held);
}

static void claim_expect(pg_db *db, const char *node, int64_t now, const char *want)
{
    pg_job_row *r;
    int found;
    pg_error err = {0};
    ck_assert_msg(pg_db_job_claim(db, node, now, 30, &r, &found, &err) == PG_OK, "%s", err.msg);
    if (!want) {
        ck_assert_msg(!found, "%s claimed %s at %lld", node, found ? r->id : "", (long long)now);
        ck_assert_ptr_null(r);
        return;
    }
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(r->id, want);
    ck_assert_str_eq(r->status, "running");
    pg_job_rows_free(r, 1);
}

START_TEST(claims_take_oldest_and_expired_leases_move)
{
    pg_db *db = pg_test_db_open();
    pg_test_jobs_drain(db);
    char j1[PG_ID_MAX], j2[PG_ID_MAX], j3[PG_ID_MAX];
    admit(db, j1, sizeof j1);
    admit(db, j2, sizeof j2);
    admit(db, j3, sizeof j3);
    /* oldest first; a claim starts the job */
    claim_expect(db, "a:1", 1000, j1);
    pg_job_row *r = load(db, j1);
    ck_assert_str_eq(r->status, "running");
    ck_assert_int_eq(r->started_at, 1000);
    pg_job_rows_free(r, 1);
    claim_expect(db, "b:1", 1000, j2);
    claim_expect(db, "c:1", 1001, j3);
    claim_expect(db, "d:1", 1029, NULL); /* every lease still held */
    int held;
    heartbeat_expect(db, j1, "a:1", 1020, 1); /* j1 now held until 1050 */
    /* b records progress, then goes silent */
    pg_job_patch p = {.now = 1010, .step = 5, .steps_reserved = 12};
    ck_assert_int_eq(pg_db_job_patch_owned(db, j2, "b:1", &p, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    /* at 1030 b's lease (until 1030) is over, c's (1031) is not: d resumes
     * j2 where b left it, started_at untouched */
    pg_job_row *c;
    int found;
    ck_assert_int_eq(pg_db_job_claim(db, "d:1", 1030, 30, &c, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(c->id, j2);
    ck_assert_int_eq(c->step, 5);
    ck_assert_int_eq(c->steps_reserved, 12);
    ck_assert_int_eq(c->started_at, 1000);
    ck_assert_str_eq(c->owner, "d:1");
    pg_job_rows_free(c, 1);
    claim_expect(db, "e:1", 1030, NULL);
    claim_expect(db, "e:1", 1031, j3);
    claim_expect(db, "e:1", 1049, NULL); /* a renewed j1 */
    /* b lost its lease: heartbeat and every fenced write are refused */
    heartbeat_expect(db, j2, "b:1", 1031, 0);
    pg_job_patch stale = {.now = 1032,
                          .status = "failed",
                          .error = "stale",
                          .finished = 1,
                          .step = 99,
                          .steps_reserved = 999};
    ck_assert_int_eq(pg_db_job_patch_owned(db, j2, "b:1", &stale, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 0);
    r = load(db, j2);
    ck_assert_str_eq(r->status, "running");
    ck_assert_ptr_null(r->error);
    ck_assert_int_eq(r->step, 5);
    ck_assert_int_eq(r->steps_reserved, 12);
    ck_assert_int_eq(r->finished_at, 0);
    ck_assert_str_eq(r->owner, "d:1");
    pg_job_rows_free(r, 1);
    /* the new owner's renewal works; a finished job is never claimed again
     * and its owner cannot renew it */
    heartbeat_expect(db, j2, "d:1", 1040, 1);
    pg_job_patch done = {
        .now = 1041, .status = "succeeded", .finished = 1, .step = 20, .steps_reserved = -1};
    ck_assert_int_eq(pg_db_job_patch_owned(db, j2, "d:1", &done, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    r = load(db, j2);
    ck_assert_str_eq(r->status, "succeeded");
    ck_assert_int_eq(r->finished_at, 1041);
    ck_assert_int_eq(r->step, 20);
    ck_assert_int_eq(r->steps_reserved, 12);
    pg_job_rows_free(r, 1);
    heartbeat_expect(db, j2, "d:1", 1042, 0);
    /* j1 expires at 1050 and j3 at 1061: j1 moves first */
    claim_expect(db, "f:1", LATE, j1);
    claim_expect(db, "f:1", LATE, j3);
    claim_expect(db, "f:1", LATE, NULL);
    pg_db_close(db);
}
END_TEST

START_TEST(release_hands_over_at_once)
{
    pg_db *db = pg_test_db_open();
    pg_test_jobs_drain(db);
    char j[PG_ID_MAX], q[PG_ID_MAX];
    admit(db, j, sizeof j);
    claim_expect(db, "a:1", 2000, j);
    /* only the owner releases */
    release_expect(db, j, "b:1", 2001, 0);
    claim_expect(db, "b:1", 2001, NULL);
    release_expect(db, j, "a:1", 2001, 1);
    /* a heartbeat sent before the release but arriving after it does not
     * take the lease back */
    heartbeat_expect(db, j, "a:1", 2001, 0);
    pg_job_row *r = load(db, j);
    ck_assert_str_eq(r->owner, "a:1"); /* the node that last ran it */
    ck_assert_str_eq(r->status, "running");
    pg_job_rows_free(r, 1);
    /* long before the lease would have run out */
    claim_expect(db, "b:1", 2002, j);
    release_expect(db, j, "a:1", 2003, 0);
    /* a queued job cancelled before any claim is never claimed */
    admit(db, q, sizeof q);
    int done;
    ck_assert_int_eq(pg_db_job_cancel_queued(db, q, &done, NULL), PG_OK);
    ck_assert_int_eq(done, 1);
    claim_expect(db, "c:1", LATE / 2, j); /* b's lease expired; q is not runnable */
    claim_expect(db, "c:1", LATE / 2, NULL);
    pg_db_close(db);
}
END_TEST

START_TEST(fenced_checkpoint_of_a_stale_owner_changes_nothing)
{
    pg_db *db = pg_test_db_open();
    pg_test_jobs_drain(db);
    char j[PG_ID_MAX];
    admit(db, j, sizeof j);
    const unsigned char mine[6] = {1, 2, 3, 4, 5, 6}, theirs[4] = {9, 9, 9, 9};
    uint32_t crc_mine = (uint32_t)crc32(0L, mine, 6), crc_theirs = (uint32_t)crc32(0L, theirs, 4);
    int held;
    /* not claimed by anyone yet: refused */
    ck_assert_int_eq(pg_db_ckpt_put_owned(db, j, "a:1", 10, mine, 6, crc_mine, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 0);
    claim_expect(db, "a:1", 3000, j);
    ck_assert_int_eq(pg_db_ckpt_put_owned(db, j, "a:1", 10, theirs, 4, crc_theirs, &held, NULL),
                     PG_OK);
    ck_assert_int_eq(held, 1);
    /* a's lease runs out, b takes over and writes step 10 again */
    claim_expect(db, "b:1", 3030, j);
    ck_assert_int_eq(pg_db_ckpt_put_owned(db, j, "b:1", 10, mine, 6, crc_mine, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    /* a, partitioned, tries to write steps 10 and 20: both refused */
    ck_assert_int_eq(pg_db_ckpt_put_owned(db, j, "a:1", 10, theirs, 4, crc_theirs, &held, NULL),
                     PG_OK);
    ck_assert_int_eq(held, 0);
    ck_assert_int_eq(pg_db_ckpt_put_owned(db, j, "a:1", 20, theirs, 4, crc_theirs, &held, NULL),
                     PG_OK);
    ck_assert_int_eq(held, 0);
    pg_ckpt_row *rows;
    size_t n;
    ck_assert_int_eq(pg_db_ckpt_list(db, j, &rows, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(rows[0].step, 10);
    ck_assert_int_eq(rows[0].bytes, 6);
    free(rows);
    unsigned char *got;
    size_t len;
    int found;
    ck_assert_int_eq(pg_db_ckpt_get(db, j, 10, 1 << 20, &got, &len, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_uint_eq(len, 6);
    ck_assert_mem_eq(got, mine, 6);
    free(got);
    ck_assert_int_eq(pg_db_ckpt_get(db, j, 20, 1 << 20, &got, &len, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    /* nor may a delete it (retention); the owner may */
    ck_assert_int_eq(pg_db_ckpt_delete_owned(db, j, "a:1", 10, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 0);
    ck_assert_int_eq(pg_db_ckpt_get(db, j, 10, 1 << 20, &got, &len, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    free(got);
    ck_assert_int_eq(pg_db_ckpt_delete_owned(db, j, "b:1", 10, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    ck_assert_int_eq(pg_db_ckpt_get(db, j, 10, 1 << 20, &got, &len, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_ckpt_list(db, j, &rows, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 0);
    free(rows);
    ck_assert_int_eq(pg_db_ckpt_delete_owned(db, j, "b:1", 10, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1); /* none there: nothing to do, still the owner */
    pg_db_close(db);
}
END_TEST

START_TEST(arguments_are_checked)
{
    pg_db *db = pg_test_db_open();
    pg_job_row *r = (pg_job_row *)1;
    int found = 7, held = 7;
    pg_error err = {0};
    ck_assert_int_eq(pg_db_job_claim(db, "", 1, 30, &r, &found, &err), PG_EINVAL);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_job_claim(db, "has space", 1, 30, &r, &found, &err), PG_EINVAL);
    ck_assert_int_eq(pg_db_job_claim(db, "a:1", 1, 0, &r, &found, &err), PG_EINVAL);
    char longnode[PG_NODE_MAX + 1];
    memset(longnode, 'n', sizeof longnode - 1);
    longnode[PG_NODE_MAX] = '\0';
    ck_assert_int_eq(pg_db_job_heartbeat(db, "job_x", longnode, 1, 30, &held, &err), PG_EINVAL);
    longnode[PG_NODE_MAX - 1] = '\0'; /* the longest valid id */
    ck_assert_int_eq(pg_db_job_heartbeat(db, "job_x", longnode, 1, 30, &held, &err), PG_OK);
    ck_assert_int_eq(held, 0);
    /* malformed and unknown job ids are simply not held */
    ck_assert_int_eq(pg_db_job_heartbeat(db, "../x", "a:1", 1, 30, &held, &err), PG_OK);
    ck_assert_int_eq(held, 0);
    pg_job_patch p = {.now = 1, .step = -1, .steps_reserved = -1};
    ck_assert_int_eq(pg_db_job_patch_owned(db, "job_none", "a:1", &p, &held, &err), PG_OK);
    ck_assert_int_eq(held, 0);
    ck_assert_int_eq(
        pg_db_ckpt_put_owned(db, "../x", "a:1", 1, (const unsigned char *)"x", 1, 0, &held, &err),
        PG_EINVAL);
    pg_db_close(db);
}
END_TEST

START_TEST(history_of_a_stale_owner_changes_nothing)
{
    pg_db *db = pg_test_db_open();
    pg_test_jobs_drain(db);
    char j[PG_ID_MAX];
    admit(db, j, sizeof j);
    int held, found;
    char *doc;
    /* not claimed yet: refused, nothing stored */
    ck_assert_int_eq(pg_db_job_history_put_owned(db, j, "a:1", "{\"v\":0}", &held, NULL), PG_OK);
    ck_assert_int_eq(held, 0);
    ck_assert_int_eq(pg_db_job_history_get(db, j, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    claim_expect(db, "a:1", 4000, j);
    ck_assert_int_eq(pg_db_job_history_put_owned(db, j, "a:1", "{\"by\":\"a\"}", &held, NULL),
                     PG_OK);
    ck_assert_int_eq(held, 1);
    claim_expect(db, "b:1", 4030, j); /* a's lease ran out */
    ck_assert_int_eq(pg_db_job_history_put_owned(db, j, "b:1", "{\"by\":\"b\"}", &held, NULL),
                     PG_OK);
    ck_assert_int_eq(held, 1);
    ck_assert_int_eq(pg_db_job_history_put_owned(db, j, "a:1", "{\"by\":\"a2\"}", &held, NULL),
                     PG_OK);
    ck_assert_int_eq(held, 0);
    ck_assert_int_eq(pg_db_job_history_get(db, j, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(doc, "{\"by\":\"b\"}");
    free(doc);
    /* once finished, not even its last owner writes it */
    pg_job_patch done = {
        .now = 4031, .status = "succeeded", .finished = 1, .step = -1, .steps_reserved = -1};
    ck_assert_int_eq(pg_db_job_patch_owned(db, j, "b:1", &done, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    ck_assert_int_eq(pg_db_job_history_put_owned(db, j, "b:1", "{\"by\":\"b2\"}", &held, NULL),
                     PG_OK);
    ck_assert_int_eq(held, 0);
    ck_assert_int_eq(pg_db_job_history_get(db, j, &doc, &found, NULL), PG_OK);
    ck_assert_str_eq(doc, "{\"by\":\"b\"}");
    free(doc);
    pg_db_close(db);
}
END_TEST

START_TEST(a_restarted_node_releases_only_its_own_leases)
{
    pg_db *db = pg_test_db_open();
    pg_test_jobs_drain(db);
    char j1[PG_ID_MAX], j2[PG_ID_MAX], j3[PG_ID_MAX], j4[PG_ID_MAX];
    admit(db, j1, sizeof j1);
    admit(db, j2, sizeof j2);
    admit(db, j3, sizeof j3);
    admit(db, j4, sizeof j4);
    claim_expect(db, "a:1", 5000, j1);
    claim_expect(db, "b:1", 5000, j2);
    claim_expect(db, "a:1", 5000, j3);
    claim_expect(db, "a:1", 5000, j4);
    int held;
    pg_job_patch done = {
        .now = 5001, .status = "failed", .finished = 1, .step = -1, .steps_reserved = -1};
    ck_assert_int_eq(pg_db_job_patch_owned(db, j4, "a:1", &done, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    claim_expect(db, "c:1", 5002, NULL);
    int64_t n = -1;
    ck_assert_int_eq(pg_db_job_release_node(db, "a:1", 5002, &n, NULL), PG_OK);
    ck_assert_int_eq(n, 2); /* j1 and j3: not b's j2, not the finished j4 */
    ck_assert_int_eq(pg_db_job_release_node(db, "a:1", 5002, &n, NULL), PG_OK);
    ck_assert_int_eq(n, 0);
    /* claimable at once, long before the leases (5030) would end */
    claim_expect(db, "c:1", 5003, j1);
    claim_expect(db, "a:1", 5003, j3);
    claim_expect(db, "c:1", 5003, NULL);
    pg_job_row *r = load(db, j4);
    ck_assert_str_eq(r->status, "failed");
    pg_job_rows_free(r, 1);
    heartbeat_expect(db, j2, "b:1", 5004, 1);
    pg_error err = {0};
    ck_assert_int_eq(pg_db_job_release_node(db, "bad node", 1, &n, &err), PG_EINVAL);
    pg_db_close(db);
}
END_TEST

START_TEST(cancel_of_a_running_job_reaches_its_owner)
{
    pg_db *db = pg_test_db_open();
    pg_test_jobs_drain(db);
    char q[PG_ID_MAX], j[PG_ID_MAX];
    admit(db, j, sizeof j);
    admit(db, q, sizeof q);
    int done = 7, held = 7;
    /* a queued job is not "running": nothing marked (it is cancelled with
     * pg_db_job_cancel_queued, and refunded) */
    ck_assert_int_eq(pg_db_job_cancel_running(db, j, 6000, &done, NULL), PG_OK);
    ck_assert_int_eq(done, 0);
    claim_expect(db, "a:1", 6000, j);
    watch_expect(db, j, "a:1", 1, 0);
    watch_expect(db, j, "b:1", 0, -1);
    ck_assert_int_eq(pg_db_job_cancel_running(db, j, 6001, &done, NULL), PG_OK);
    ck_assert_int_eq(done, 1);
    watch_expect(db, j, "a:1", 1, 1);
    /* a takeover keeps the request: the new owner stops it too */
    claim_expect(db, "b:1", 6030, j);
    watch_expect(db, j, "a:1", 0, -1);
    watch_expect(db, j, "b:1", 1, 1);
    pg_job_patch p = {
        .now = 6031, .status = "cancelled", .finished = 1, .step = -1, .steps_reserved = -1};
    ck_assert_int_eq(pg_db_job_patch_owned(db, j, "b:1", &p, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    /* finished: nothing to ask, nothing held; its ledger row is untouched */
    ck_assert_int_eq(pg_db_job_cancel_running(db, j, 6032, &done, NULL), PG_OK);
    ck_assert_int_eq(done, 0);
    watch_expect(db, j, "b:1", 0, 0);
    watch_expect(db, "../x", "b:1", 0, -1);
    pg_job_row *r = load(db, q);
    ck_assert_str_eq(r->status, "queued");
    pg_job_rows_free(r, 1);
    pg_db_close(db);
}
END_TEST

START_TEST(queue_depth_counts_queued_rows)
{
    pg_db *db = pg_test_db_open();
    pg_test_jobs_drain(db);
    int64_t d0, d;
    ck_assert_int_eq(pg_db_job_queue_depth(db, &d0, NULL), PG_OK);
    ck_assert_int_eq(d0, 0); /* drained */
    char a[PG_ID_MAX], b[PG_ID_MAX], c[PG_ID_MAX];
    admit(db, a, sizeof a);
    admit(db, b, sizeof b);
    admit(db, c, sizeof c);
    ck_assert_int_eq(pg_db_job_queue_depth(db, &d, NULL), PG_OK);
    ck_assert_int_eq(d, 3);
    claim_expect(db, "a:1", 7000, a);
    int done;
    ck_assert_int_eq(pg_db_job_cancel_queued(db, c, &done, NULL), PG_OK);
    ck_assert_int_eq(pg_db_job_queue_depth(db, &d, NULL), PG_OK);
    ck_assert_int_eq(d, 1);
    pg_db_close(db);
}
END_TEST

enum { NCLAIMERS = 6, NJOBS = 30 };

typedef struct claimer {
    pg_db *db;
    char node[16];
    pthread_barrier_t *bar;
    char got[NJOBS][PG_ID_MAX];
    int n, rc;
} claimer;

static void *claim_loop(void *arg)
{
    claimer *c = arg;
    pthread_barrier_wait(c->bar);
    for (;;) {
        pg_job_row *r;
        int found;
        pg_error err = {0};
        if ((c->rc = pg_db_job_claim(c->db, c->node, 5000, 3600, &r, &found, &err))) {
            fprintf(stderr, "%s: %s\n", c->node, err.msg);
            return NULL;
        }
        if (!found) return NULL;
        if (c->n < NJOBS) snprintf(c->got[c->n], PG_ID_MAX, "%s", r->id);
        c->n++;
        pg_job_rows_free(r, 1);
    }
}

/* Separate handles (PostgreSQL: separate pools and connections; SQLite:
 * separate connections to one file) racing on one queue. */
START_TEST(concurrent_claims_never_share_a_job)
{
    pg_db *db = pg_test_db_open();
    pg_test_jobs_drain(db);
    char ids[NJOBS][PG_ID_MAX];
    for (int i = 0; i < NJOBS; i++) admit(db, ids[i], sizeof ids[i]);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, NCLAIMERS);
    static claimer cs[NCLAIMERS];
    pthread_t th[NCLAIMERS];
    for (int i = 0; i < NCLAIMERS; i++) {
        memset(&cs[i], 0, sizeof cs[i]);
        cs[i].db = pg_test_db_open();
        snprintf(cs[i].node, sizeof cs[i].node, "n%d:80", i);
        cs[i].bar = &bar;
        pthread_create(&th[i], NULL, claim_loop, &cs[i]);
    }
    int total = 0;
    for (int i = 0; i < NCLAIMERS; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(cs[i].rc, PG_OK);
        total += cs[i].n;
    }
    pthread_barrier_destroy(&bar);
    ck_assert_int_eq(total, NJOBS);
    /* every job exactly once, and its row names the claimer that got it */
    for (int k = 0; k < NJOBS; k++) {
        int seen = 0;
        const char *owner = NULL;
        for (int i = 0; i < NCLAIMERS; i++)
            for (int m = 0; m < cs[i].n; m++)
                if (!strcmp(cs[i].got[m], ids[k])) {
                    seen++;
                    owner = cs[i].node;
                }
        ck_assert_int_eq(seen, 1);
        int held;
        ck_assert_int_eq(pg_db_job_heartbeat(db, ids[k], owner, 5001, 3600, &held, NULL), PG_OK);
        ck_assert_int_eq(held, 1);
    }
    for (int i = 0; i < NCLAIMERS; i++) pg_db_close(cs[i].db);
    pg_db_close(db);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("db_queue");
    TCase *t = tcase_create("queue");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, claims_take_oldest_and_expired_leases_move);
    tcase_add_test(t, release_hands_over_at_once);
    tcase_add_test(t, fenced_checkpoint_of_a_stale_owner_changes_nothing);
    tcase_add_test(t, arguments_are_checked);
    tcase_add_test(t, concurrent_claims_never_share_a_job);
    tcase_add_test(t, history_of_a_stale_owner_changes_nothing);
    tcase_add_test(t, a_restarted_node_releases_only_its_own_leases);
    tcase_add_test(t, cancel_of_a_running_job_reaches_its_owner);
    tcase_add_test(t, queue_depth_counts_queued_rows);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
