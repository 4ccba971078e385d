/* Two job managers (replicas "A" and "B", each with its own storage handle)
 * on ONE database in one process, with short leases: the write side of the
 * shared job queue (service/jobs/jobs.h). Runs against whichever backend
 * PRIVGEN_TEST_DB names (a fresh SQLite file by default; PostgreSQL through
 * its _pg copy). Outcomes are read from storage (rows, checkpoints, ledger,
 * history documents), never from timing; waits are generous. */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <zlib.h>

#include "db_support.h"
#include "service/datasets/spec.h"
#include "service/jobs/jobs.h"
#include "service/jobs/jobs_internal.h"

static void setup(void)
{
    pg_test_db_setup();
}

static void teardown(void)
{
    pg_test_db_teardown();
}

#define DELTA 1e-5

typedef struct replica {
    pg_svc_config cfg;
    pg_db *db;
    pg_jobs *m;
    int started;
} replica;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A replica named node; lease 4 s, poll 50 ms, progress 1 s. Leases are
 * whole seconds (a lease may end up to 1 s early): a 1 s heartbeat keeps
 * 2 s of slack for a loaded machine. */
static replica *replica_new(const char *node, int heartbeat_s)
{
    replica *r = calloc(1, sizeof *r);
    ck_assert_ptr_nonnull(r);
    pg_svc_config_defaults(&r->cfg);
    r->cfg.node_id = node;
    r->cfg.workers = 1;
    r->cfg.lease_s = 4;
    r->cfg.heartbeat_s = heartbeat_s;
    r->cfg.claim_poll_ms = 50;
    r->cfg.progress_s = 1;
    r->db = pg_test_db_open();
    pg_error err = {0};
    ck_assert_msg(pg_jobs_create(&r->cfg, r->db, &r->m, &err) == PG_OK, "%s", err.msg);
    return r;
}

static void replica_start(replica *r)
{
    pg_error err = {0};
    ck_assert_msg(pg_jobs_start(r->m, &err) == PG_OK, "%s", err.msg);
    r->started = 1;
}

static void replica_free(replica *r)
{
    pg_jobs_destroy(r->m);
    pg_db_close(r->db);
    free(r);
}

/* A central dataset of tenant with n rows on an arc, budget cap 50. */
static void central_dataset(pg_db *db, const char *tenant, char *id, size_t cap, int n)
{
    pg_datasets_spec s;
    pg_error err = {0};
    char decl[256];
    snprintf(decl, sizeof decl,
             "{\"name\":\"c\",\"shape\":[2],\"range\":[-1,1],\"privacy\":{\"model\":\"central\","
             "\"budget\":{\"epsilon\":50,\"delta\":%g}}}",
             DELTA);
    ck_assert_msg(pg_datasets_spec_from_json(decl, &s, &err) == PG_OK, "%s", err.msg);
    pg_db_dataset d = {0};
    pg_test_uid(d.id, sizeof d.id, "ds_");
    snprintf(d.tenant, sizeof d.tenant, "%s", tenant);
    d.name = "c";
    ck_assert_int_eq(pg_datasets_spec_to_json(&s, &d.meta, &err), PG_OK);
    d.d = 2;
    ck_assert_msg(pg_db_dataset_insert(db, &d, &err) == PG_OK, "%s", err.msg);
    free(d.meta);
    float *x = malloc((size_t)n * 2 * sizeof *x);
    for (int i = 0; i < n; i++) {
        x[2 * i] = (float)(0.8 * cos(0.05 * i));
        x[2 * i + 1] = (float)(0.8 * sin(0.05 * i));
    }
    pg_test_rows_append(db, tenant, d.id, 2, x, n);
    free(x);
    snprintf(id, cap, "%s", d.id);
}

/* dp_sinkhorn on a tiny generator: cheap, charging, deterministic plan
 * (long jobs, stopped by the tests, with more noise to fit the cap). */
static json_t *spec(const char *ds, long steps, long every)
{
    char buf[512];
    snprintf(buf, sizeof buf,
             "{\"dataset_id\":\"%s\",\"method\":\"dp_sinkhorn\",\"model\":{\"hidden\":[16]},"
             "\"train\":{\"steps\":%ld,\"batch_size\":20},\"ot\":{\"max_iter\":20},"
             "\"privacy\":{\"noise_multiplier\":%d},\"checkpoint_every\":%ld,\"seed\":3}",
             ds, steps, steps > 100000 ? 50 : 4, every);
    json_t *o = json_loads(buf, 0, NULL);
    ck_assert_ptr_nonnull(o);
    return o;
}

static void submit(replica *r, const char *tenant, const char *ds, long steps, long every, char *id)
{
    json_t *s = spec(ds, steps, every);
    pg_submit_result res;
    pg_error err = {0};
    ck_assert_msg(pg_jobs_submit(r->m, tenant, s, 0, &res, &err) == PG_OK, "%s", err.msg);
    ck_assert_msg(res.outcome == PG_SUBMIT_ACCEPTED, "outcome %d: %s %s", res.outcome,
                  res.errors.count ? res.errors.items[0].field : "",
                  res.errors.count ? res.errors.items[0].message : "");
    snprintf(id, PG_ID_MAX, "%s", res.job_id);
    json_decref(res.body);
    json_decref(s);
}

/* The job's row (pg_job_rows_free(.., 1)). */
static pg_job_row *row_of(pg_db *db, const char *id)
{
    return pg_test_job_row_of(db, id);
}

/* Waits (up to `secs`) until the row has status st (and, when owner is not
 * NULL, that owner); returns the row. */
static pg_job_row *wait_row(pg_db *db, const char *id, const char *st, const char *owner,
                            int64_t min_step, double secs)
{
    double end = wall() + secs;
    for (;;) {
        pg_job_row *r = row_of(db, id);
        int ok =
            !strcmp(r->status, st) && (!owner || !strcmp(r->owner, owner)) && r->step >= min_step;
        if (ok) return r;
        ck_assert_msg(wall() < end, "job %s: status %s owner %s step %lld, waited for %s %s %lld",
                      id, r->status, r->owner, (long long)r->step, st, owner ? owner : "",
                      (long long)min_step);
        ck_assert_msg(strcmp(r->status, "failed"), "job %s failed: %s", id,
                      r->error ? r->error : "");
        pg_job_rows_free(r, 1);
        sleep_ms(20);
    }
}

/* Starts a, then a central dataset of 400 rows for a new tenant (into
 * tenant, ds) and a job of `steps` steps checkpointed every `every`
 * submitted through a (into id); returns once a runs it past min_step
 * (waiting up to secs). */
static void run_on(replica *a, long steps, long every, int64_t min_step, double secs,
                   char tenant[PG_ID_MAX], char ds[PG_ID_MAX], char id[PG_ID_MAX])
{
    replica_start(a);
    pg_test_uid(tenant, PG_ID_MAX, "ten_");
    central_dataset(a->db, tenant, ds, PG_ID_MAX, 400);
    submit(a, tenant, ds, steps, every, id);
    pg_job_row *r = wait_row(a->db, id, "running", a->cfg.node_id, min_step, secs);
    pg_job_rows_free(r, 1);
}

static int64_t newest_ckpt(pg_db *db, const char *id)
{
    pg_ckpt_row *rows;
    size_t n;
    ck_assert_int_eq(pg_db_ckpt_list(db, id, &rows, &n, NULL), PG_OK);
    int64_t s = n ? rows[n - 1].step : -1;
    free(rows);
    return s;
}

/* The ledger rows of ds naming job (count), and the first one's epsilon. */
static int ledger_of(pg_db *db, const char *ds, const char *jid, double *eps, int *refunded)
{
    pg_ledger_entry *e;
    size_t n;
    ck_assert_int_eq(pg_db_ledger_entries(db, ds, &e, &n, NULL), PG_OK);
    int k = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(e[i].job_id, jid)) {
            if (!k) {
                if (eps) *eps = e[i].epsilon;
                if (refunded) *refunded = e[i].refunded;
            }
            k++;
        }
    pg_ledger_entries_free(e, n);
    return k;
}

typedef struct counters {
    uint64_t claims, resumes, losses;
    size_t owned;
} counters;

static counters counts(replica *r)
{
    counters c = {0};
    pthread_mutex_lock(&r->m->mu);
    c.claims = r->m->claims;
    c.resumes = r->m->resumes;
    c.losses = r->m->lease_losses;
    for (size_t i = 0; i < r->m->n; i++) c.owned += r->m->all[i]->owned;
    pthread_mutex_unlock(&r->m->mu);
    return c;
}

/* Waits until r holds no lease in its own view (which follows its row). */
static void wait_unowned(replica *r)
{
    double end = wall() + 30;
    while (counts(r).owned) {
        ck_assert_msg(wall() < end, "%s still holds a job", r->cfg.node_id);
        sleep_ms(20);
    }
}

/* The stored history document's steps are strictly increasing (a resumed
 * run continues it; a restarted one would repeat steps); returns the
 * first point's step and, through node, the document's node. */
static long history_check(pg_db *db, const char *id, char *node, size_t cap)
{
    char *doc;
    int found;
    ck_assert_int_eq(pg_db_job_history_get(db, id, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    json_t *o = json_loads(doc, 0, NULL);
    free(doc);
    ck_assert_ptr_nonnull(o);
    json_t *h = json_object_get(o, "history");
    ck_assert_int_gt((int)json_array_size(h), 1);
    for (size_t i = 1; i < json_array_size(h); i++)
        ck_assert_int_lt(json_integer_value(json_array_get(json_array_get(h, i - 1), 0)),
                         json_integer_value(json_array_get(json_array_get(h, i), 0)));
    long first = (long)json_integer_value(json_array_get(json_array_get(h, 0), 0));
    snprintf(node, cap, "%s", json_string_value(json_object_get(o, "node")));
    json_decref(o);
    return first;
}

/* The value of a metrics series line starting with `name` ("" when absent). */
static double metric(pg_jobs *m, const char *name)
{
    char *t = pg_jobs_metrics(m);
    ck_assert_ptr_nonnull(t);
    char *p = strstr(t, name);
    double v = p ? strtod(p + strlen(name), NULL) : NAN;
    free(t);
    return v;
}

/* (a) jobs submitted through both replicas all finish, each exactly once,
 * and both replicas ran some. */
START_TEST(jobs_through_both_replicas_finish_exactly_once)
{
    replica *a = replica_new("A", 1), *b = replica_new("B", 1);
    replica_start(a);
    replica_start(b);
    char tenant[PG_ID_MAX], ds[PG_ID_MAX];
    pg_test_uid(tenant, sizeof tenant, "ten_");
    central_dataset(a->db, tenant, ds, sizeof ds, 400);
    enum { NJ = 6 };
    char ids[NJ][PG_ID_MAX];
    for (int i = 0; i < NJ; i++) submit(i % 2 ? b : a, tenant, ds, 150, 50, ids[i]);
    int by_a = 0, by_b = 0;
    for (int i = 0; i < NJ; i++) {
        pg_job_row *r = wait_row(a->db, ids[i], "succeeded", NULL, 150, 120);
        ck_assert_int_eq(r->step, 150);
        ck_assert_int_eq(r->steps_reserved, 150); /* every invocation reserved, none twice */
        by_a += !strcmp(r->owner, "A");
        by_b += !strcmp(r->owner, "B");
        ck_assert_int_eq(ledger_of(a->db, ds, ids[i], NULL, NULL), 1);
        ck_assert_int_eq(newest_ckpt(a->db, ids[i]), 150);
        char node[PG_NODE_MAX];
        ck_assert_int_le(history_check(a->db, ids[i], node, sizeof node), 50);
        ck_assert_str_eq(node, r->owner);
        pg_job_rows_free(r, 1);
    }
    ck_assert_int_eq(by_a + by_b, NJ);
    ck_assert_msg(by_a >= 1 && by_b >= 1, "A ran %d, B ran %d", by_a, by_b);
    wait_unowned(a);
    wait_unowned(b);
    counters ca = counts(a), cb = counts(b);
    /* one claim per job, no takeover, no loss, nothing held any more */
    ck_assert_int_eq((int)(ca.claims + cb.claims), NJ);
    ck_assert_int_eq((int)(ca.resumes + cb.resumes), 0);
    ck_assert_int_eq((int)(ca.losses + cb.losses), 0);
    ck_assert_int_eq((int)(ca.owned + cb.owned), 0);
    double n_a = metric(a->m, "privgen_claim_latency_seconds_count{node=\"A\"} ");
    double s_a = metric(a->m, "privgen_claim_latency_seconds_sum{node=\"A\"} ");
    double n_b = metric(b->m, "privgen_claim_latency_seconds_count{node=\"B\"} ");
    double s_b = metric(b->m, "privgen_claim_latency_seconds_sum{node=\"B\"} ");
    ck_assert_double_eq(n_a + n_b, NJ);
    ck_assert_double_eq(metric(a->m, "privgen_leases_held{node=\"A\"} "), 0);
    fprintf(stderr, "claim latency: A %g claims, mean %.3f s; B %g claims, mean %.3f s\n", n_a,
            n_a ? s_a / n_a : 0, n_b, n_b ? s_b / n_b : 0);
    replica_free(a);
    replica_free(b);
}
END_TEST

/* (b) a replica that dies (no heartbeat, no release) has its job taken over
 * once the lease runs out: resumed from the newest checkpoint, one ledger
 * row, the reservation rule exact, the charge of a single-box run. */
START_TEST(dead_replica_is_taken_over_from_its_checkpoint)
{
    char tenant[PG_ID_MAX], ds[PG_ID_MAX], ref[PG_ID_MAX], id[PG_ID_MAX];
    pg_test_uid(tenant, sizeof tenant, "ten_");
    enum { STEPS = 3000, EVERY = 100 };
    /* the single-box run */
    replica *solo = replica_new("solo", 1);
    central_dataset(solo->db, tenant, ds, sizeof ds, 400);
    replica_start(solo);
    submit(solo, tenant, ds, STEPS, EVERY, ref);
    pg_job_row *r = wait_row(solo->db, ref, "succeeded", "solo", STEPS, 180);
    pg_job_rows_free(r, 1);
    double eps_ref;
    ck_assert_int_eq(ledger_of(solo->db, ds, ref, &eps_ref, NULL), 1);
    replica_free(solo);

    replica *a = replica_new("A", 1), *b = replica_new("B", 1);
    replica_start(a);
    submit(a, tenant, ds, STEPS, EVERY, id);
    r = wait_row(a->db, id, "running", "A", 3 * EVERY, 120);
    pg_job_rows_free(r, 1);
    pg_jobs_abandon(a->m); /* dies: nothing more written, no lease released */
    pg_job_row *dead = row_of(b->db, id);
    int64_t ck = newest_ckpt(b->db, id);
    ck_assert_str_eq(dead->owner, "A");
    ck_assert_str_eq(dead->status, "running");
    ck_assert_int_ge(ck, 3 * EVERY);
    ck_assert_int_ge(dead->steps_reserved, ck);
    double t0 = wall();
    replica_start(b);
    r = wait_row(b->db, id, "running", "B", 0, 60);
    fprintf(stderr, "takeover: B claimed %.2f s after A died (lease 4 s)\n", wall() - t0);
    pg_job_rows_free(r, 1);
    r = wait_row(b->db, id, "succeeded", "B", 0, 180);
    /* resumed at ck and ran exactly what the reservation left: the steps A
     * reserved past its checkpoint are spent, never run twice */
    ck_assert_int_eq(r->step, ck + (STEPS - dead->steps_reserved));
    ck_assert_int_le(r->step, STEPS);
    ck_assert_int_ge(r->step, STEPS - EVERY);
    ck_assert_int_eq(r->steps_reserved, STEPS);
    ck_assert_int_eq(newest_ckpt(b->db, id), r->step);
    double eps;
    int refunded;
    ck_assert_int_eq(ledger_of(b->db, ds, id, &eps, &refunded), 1);
    ck_assert_int_eq(refunded, 0);
    ck_assert_double_eq(eps, eps_ref); /* same spec, same plan, one charge */
    char node[PG_NODE_MAX];
    long first = history_check(b->db, id, node, sizeof node);
    ck_assert_msg(first < ck, "the history before the takeover is lost (starts at %ld)", first);
    ck_assert_str_eq(node, "B");
    counters cb = counts(b);
    ck_assert_int_eq((int)cb.resumes, 1);
    ck_assert_int_eq((int)cb.losses, 0);
    pg_job_rows_free(r, 1);
    pg_job_rows_free(dead, 1);
    replica_free(a);
    replica_free(b);
}
END_TEST

/* (c) a replica whose lease ran out while it kept training (a partition:
 * here its heartbeat is slower than the lease) is refused every write once
 * another replica claimed the job: the new owner's checkpoints, history and
 * row stay exactly as it wrote them, and the old one stops. */
START_TEST(stale_owner_stops_without_writing)
{
    replica *a = replica_new("A", 1000); /* never renews within the 4 s lease */
    char tenant[PG_ID_MAX], ds[PG_ID_MAX], id[PG_ID_MAX];
    run_on(a, 2000000, 20, 40, 60, tenant, ds, id);
    /* the test is replica B: it claims once A's lease ran out */
    pg_db *db = pg_test_db_open();
    pg_job_row *c = NULL;
    int found = 0;
    double end = wall() + 30;
    while (!found) {
        ck_assert_msg(wall() < end, "A's lease never ran out");
        sleep_ms(100);
        ck_assert_int_eq(pg_db_job_claim(db, "B", pg_jobs_now(), 3600, &c, &found, NULL), PG_OK);
        if (found && strcmp(c->id, id)) { /* another test's leftover: finish it */
            int held;
            pg_job_patch p = {.now = pg_jobs_now(),
                              .status = "cancelled",
                              .finished = 1,
                              .step = -1,
                              .steps_reserved = -1};
            pg_db_job_patch_owned(db, c->id, "B", &p, &held, NULL);
            pg_job_rows_free(c, 1);
            found = 0;
        }
    }
    pg_job_rows_free(c, 1);
    /* B writes far ahead of anything A can reach within this test */
    const unsigned char mine[5] = {7, 7, 7, 7, 7};
    uint32_t crc = (uint32_t)crc32(0L, mine, 5);
    int held;
    int64_t ahead[3];
    ahead[0] = 1000000;
    ahead[1] = 1000020;
    ahead[2] = 1000040;
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(pg_db_ckpt_put_owned(db, id, "B", ahead[i], mine, 5, crc, &held, NULL),
                         PG_OK);
        ck_assert_int_eq(held, 1);
    }
    const char *doc = "{\"v\":1,\"by\":\"B\"}";
    ck_assert_int_eq(pg_db_job_history_put_owned(db, id, "B", doc, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    pg_job_patch p = {.now = pg_jobs_now(), .step = 1000040, .steps_reserved = 1000050};
    ck_assert_int_eq(pg_db_job_patch_owned(db, id, "B", &p, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    pg_ckpt_row *before;
    size_t nbefore;
    ck_assert_int_eq(pg_db_ckpt_list(db, id, &before, &nbefore, NULL), PG_OK);
    /* A notices (a refused write or its row) and stops */
    end = wall() + 30;
    while (counts(a).losses < 1 || counts(a).owned) {
        ck_assert_msg(wall() < end, "A never noticed it lost the lease");
        sleep_ms(50);
    }
    sleep_ms(1500); /* anything A still had in flight would have landed by now */
    ck_assert_int_eq((int)counts(a).losses, 1);
    pg_job_row *r = row_of(db, id);
    ck_assert_str_eq(r->status, "running");
    ck_assert_str_eq(r->owner, "B");
    ck_assert_int_eq(r->step, 1000040);
    ck_assert_int_eq(r->steps_reserved, 1000050);
    pg_job_rows_free(r, 1);
    for (int i = 0; i < 3; i++) {
        unsigned char *got;
        size_t len;
        ck_assert_int_eq(pg_db_ckpt_get(db, id, ahead[i], 1 << 20, &got, &len, &found, NULL),
                         PG_OK);
        ck_assert_int_eq(found, 1);
        ck_assert_uint_eq(len, 5);
        ck_assert_mem_eq(got, mine, 5);
        free(got);
    }
    /* A wrote no checkpoint after the claim: the list is the one B left */
    pg_ckpt_row *after;
    size_t nafter;
    ck_assert_int_eq(pg_db_ckpt_list(db, id, &after, &nafter, NULL), PG_OK);
    ck_assert_uint_eq(nafter, nbefore);
    for (size_t i = 0; i < nafter; i++) {
        ck_assert_int_eq(after[i].step, before[i].step);
        ck_assert_int_eq(after[i].bytes, before[i].bytes);
    }
    free(before);
    free(after);
    char *got;
    ck_assert_int_eq(pg_db_job_history_get(db, id, &got, &found, NULL), PG_OK);
    ck_assert_str_eq(got, doc);
    free(got);
    /* B ends it; A's table still shows it (stale view), but A holds nothing */
    pg_job_patch e = {.now = pg_jobs_now(),
                      .status = "cancelled",
                      .finished = 1,
                      .step = -1,
                      .steps_reserved = -1};
    ck_assert_int_eq(pg_db_job_patch_owned(db, id, "B", &e, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    ck_assert_double_eq(metric(a->m, "privgen_lease_losses_total{node=\"A\"} "), 1);
    pg_db_close(db);
    replica_free(a);
}
END_TEST

/* (d) cancel through B stops the job A runs, within a few seconds; a
 * running job is never refunded. */
START_TEST(cancel_through_another_replica)
{
    replica *a = replica_new("A", 1), *b = replica_new("B", 1);
    replica_start(a); /* B serves requests only: it runs no worker */
    char tenant[PG_ID_MAX], ds[PG_ID_MAX], id[PG_ID_MAX];
    pg_test_uid(tenant, sizeof tenant, "ten_");
    central_dataset(a->db, tenant, ds, sizeof ds, 400);
    double ts = wall();
    submit(b, tenant, ds, 2000000, 50, id);
    pg_job_row *r = wait_row(a->db, id, "running", "A", 0, 60);
    fprintf(stderr, "submitted through B, claimed by A (idle, polling every 50 ms) %.3f s later\n",
            wall() - ts);
    pg_job_rows_free(r, 1);
    r = wait_row(a->db, id, "running", "A", 100, 60);
    pg_job_rows_free(r, 1);
    json_t *view;
    int found, conflict;
    pg_error err = {0};
    double t0 = wall();
    ck_assert_msg(pg_jobs_cancel(b->m, tenant, id, &view, &found, &conflict, &err) == PG_OK, "%s",
                  err.msg);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(conflict, 0);
    json_decref(view);
    r = wait_row(a->db, id, "cancelled", "A", 0, 30);
    fprintf(stderr, "cancel through B: A stopped the job %.2f s later\n", wall() - t0);
    ck_assert_int_gt(r->finished_at, 0);
    /* the stopped model was checkpointed at its last step */
    ck_assert_int_eq(newest_ckpt(a->db, id), r->step);
    int refunded = -1;
    ck_assert_int_eq(ledger_of(a->db, ds, id, NULL, &refunded), 1);
    ck_assert_int_eq(refunded, 0);
    pg_job_rows_free(r, 1);
    /* once ended, a second cancel is a conflict, whichever replica */
    double end = wall() + 10;
    for (;;) {
        ck_assert_int_eq(pg_jobs_cancel(a->m, tenant, id, &view, &found, &conflict, &err), PG_OK);
        json_decref(view);
        if (conflict) break;
        ck_assert(wall() < end);
        sleep_ms(50);
    }
    ck_assert_int_eq(pg_jobs_cancel(b->m, tenant, id, &view, &found, &conflict, &err), PG_OK);
    json_decref(view);
    ck_assert_int_eq(conflict, 1);
    wait_unowned(a); /* A's own view catches up with its row */
    replica_free(a);
    replica_free(b);
}
END_TEST

/* (e) a drain on A checkpoints at the exact step, gives back the unused
 * reservation and releases the lease: B claims at once and finishes the
 * whole plan (no step lost). */
START_TEST(drain_hands_the_job_over)
{
    enum { STEPS = 3000, EVERY = 500 };
    replica *a = replica_new("A", 1), *b = replica_new("B", 1);
    char tenant[PG_ID_MAX], ds[PG_ID_MAX], id[PG_ID_MAX];
    run_on(a, STEPS, EVERY, EVERY, 120, tenant, ds, id);
    pg_jobs_drain(a->m);
    pg_job_row *r = row_of(b->db, id);
    ck_assert_str_eq(r->status, "running");
    ck_assert_str_eq(r->owner, "A");
    int64_t at = r->step;
    ck_assert_int_ge(at, EVERY);
    ck_assert_int_lt(at, STEPS);
    ck_assert_int_eq(newest_ckpt(b->db, id), at); /* checkpointed where it stopped */
    ck_assert_int_eq(r->steps_reserved, at);      /* nothing reserved it did not run */
    pg_job_rows_free(r, 1);
    ck_assert_int_eq((int)counts(a).owned, 0);
    double t0 = wall();
    replica_start(b);
    r = wait_row(b->db, id, "running", "B", 0, 30);
    double took = wall() - t0;
    fprintf(stderr, "drain: B claimed the released job %.3f s after it started\n", took);
    pg_job_rows_free(r, 1);
    r = wait_row(b->db, id, "succeeded", "B", STEPS, 180);
    ck_assert_int_eq(r->step, STEPS);
    ck_assert_int_eq(r->steps_reserved, STEPS);
    pg_job_rows_free(r, 1);
    ck_assert_int_eq(ledger_of(b->db, ds, id, NULL, NULL), 1);
    char node[PG_NODE_MAX];
    ck_assert_int_lt(history_check(b->db, id, node, sizeof node), at);
    ck_assert_int_eq((int)counts(b).resumes, 1);
    ck_assert_int_eq((int)counts(a).losses, 0);
    replica_free(a);
    replica_free(b);
}
END_TEST

/* A restart under the same node id gets its job back at once, long before
 * the lease would run out (here 1 h). */
START_TEST(restart_releases_own_leases)
{
    replica *a = replica_new("A", 1);
    a->cfg.lease_s = 3600;
    char tenant[PG_ID_MAX], ds[PG_ID_MAX], id[PG_ID_MAX];
    run_on(a, 2000000, 50, 100, 60, tenant, ds, id);
    pg_jobs_abandon(a->m);
    replica_free(a);
    replica *b = replica_new("B", 1);
    replica_start(b);
    sleep_ms(500);
    pg_job_row *r = row_of(b->db, id);
    ck_assert_str_eq(r->owner, "A"); /* B cannot take it: A's lease runs for an hour */
    pg_job_rows_free(r, 1);
    replica *a2 = replica_new("A", 1);
    a2->cfg.lease_s = 3600;
    replica_start(a2);
    double end = wall() + 30;
    while (counts(a2).resumes + counts(b).resumes < 1) {
        if (wall() >= end) {
            r = row_of(b->db, id);
            ck_abort_msg("nobody resumed the job: released %d, row %s owner %s, claims %d %d",
                         (int)a2->m->released_at_start, r->status, r->owner, (int)counts(a2).claims,
                         (int)counts(b).claims);
        }
        sleep_ms(20);
    }
    ck_assert_int_eq((int)a2->m->released_at_start, 1);
    /* stop it through the row; whoever claimed it ends it */
    json_t *view;
    int found, conflict;
    ck_assert_int_eq(pg_jobs_cancel(b->m, tenant, id, &view, &found, &conflict, NULL), PG_OK);
    json_decref(view);
    ck_assert_int_eq(found, 1);
    r = wait_row(b->db, id, "cancelled", NULL, 0, 30);
    pg_job_rows_free(r, 1);
    replica_free(a2);
    replica_free(b);
}
END_TEST

/* (g) jobs share the process's CPU budget: with 3 workers on a 2-core
 * budget the cores granted never exceed 2 at any instant (a watcher reads
 * the budget all along), every step and trainer build took a grant, and
 * the finished and the cancelled jobs left nothing held and no user
 * joined. */
typedef struct watch {
    pg_cpu_budget *b;
    atomic_int stop, peak, over;
} watch;

static void *watcher(void *arg)
{
    watch *w = arg;
    while (!atomic_load(&w->stop)) {
        pg_cpu_stats st;
        pg_cpu_budget_stats(w->b, &st);
        if (st.in_use > st.cores) atomic_store(&w->over, st.in_use);
        if (st.in_use > atomic_load(&w->peak)) atomic_store(&w->peak, st.in_use);
        sched_yield();
    }
    return NULL;
}

START_TEST(jobs_share_the_cpu_budget)
{
    pg_cpu_budget *cpu;
    ck_assert_int_eq(pg_cpu_budget_create(2, &cpu, NULL), PG_OK);
    replica *a = replica_new("A", 1);
    a->cfg.workers = 3;
    pg_jobs_set_cpu(a->m, cpu);
    ck_assert_ptr_eq(pg_jobs_cpu(a->m), cpu);
    watch w = {.b = cpu};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, watcher, &w), 0);
    replica_start(a);
    char tenant[PG_ID_MAX], ds[PG_ID_MAX], ids[3][PG_ID_MAX];
    pg_test_uid(tenant, sizeof tenant, "ten_");
    central_dataset(a->db, tenant, ds, sizeof ds, 400);
    submit(a, tenant, ds, 2000000, 50, ids[0]); /* cancelled while it runs */
    submit(a, tenant, ds, 120, 60, ids[1]);
    submit(a, tenant, ds, 120, 60, ids[2]);
    pg_error err = {0};
    for (int i = 1; i < 3; i++)
        pg_job_rows_free(wait_row(a->db, ids[i], "succeeded", NULL, 120, 120), 1);
    pg_job_rows_free(wait_row(a->db, ids[0], "running", "A", 20, 60), 1);
    json_t *view;
    int found, conflict;
    ck_assert_msg(pg_jobs_cancel(a->m, tenant, ids[0], &view, &found, &conflict, &err) == PG_OK,
                  "%s", err.msg);
    json_decref(view);
    pg_job_rows_free(wait_row(a->db, ids[0], "cancelled", NULL, 0, 60), 1);
    wait_unowned(a);
    atomic_store(&w.stop, 1);
    pthread_join(th, NULL);
    ck_assert_int_eq(atomic_load(&w.over), 0);
    ck_assert_int_ge(atomic_load(&w.peak), 1);
    ck_assert_int_le(atomic_load(&w.peak), 2);
    pg_cpu_stats st;
    pg_cpu_budget_stats(cpu, &st);
    ck_assert_int_eq(st.in_use, 0);
    ck_assert_int_eq(st.users, 0);
    ck_assert_int_ge(st.grants, 2 * 120 + 20);
    ck_assert_double_eq(metric(a->m, "\nprivgen_cpu_in_use "), 0);
    ck_assert_double_eq(metric(a->m, "\nprivgen_cpu_cores "), 2);
    replica_free(a);
    pg_cpu_budget_destroy(cpu);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("replicas_work");
    TCase *t = tcase_create("two managers");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 600);
    tcase_add_test(t, jobs_through_both_replicas_finish_exactly_once);
    tcase_add_test(t, dead_replica_is_taken_over_from_its_checkpoint);
    tcase_add_test(t, stale_owner_stops_without_writing);
    tcase_add_test(t, cancel_through_another_replica);
    tcase_add_test(t, drain_hands_the_job_over);
    tcase_add_test(t, restart_releases_own_leases);
    tcase_add_test(t, jobs_share_the_cpu_budget);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
