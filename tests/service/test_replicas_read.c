/* Any replica answers any read (the read side): two job managers
 * on ONE database in one process. Replica A runs jobs; replica B has no
 * workers and only reads, through its own database handle, so everything
 * it shows comes from storage. Runs against whichever backend
 * PRIVGEN_TEST_DB names (db_support.h): SQLite by default, PostgreSQL in
 * the _pg variant.
 *
 *  - a job submitted through A after B started is visible and listed
 *    through B and followed to its end through B's pg_jobs_wait, whose
 *    final view (and event id) equals A's;
 *  - samples through A (the model its worker published) and B (rebuilt
 *    from the checkpoint by the cache) are bit-identical for a seed;
 *  - under a cap smaller than two models the cache evicts and reloads to
 *    the same samples;
 *  - a job deleted through A is not found through B;
 *  - a checkpoint newer than the one B cached is served once it appears.
 * Waits are generous deadlines, never timing assertions. */
#include <jansson.h>
#include <pthread.h>
#include <time.h>

#include "db_support.h"
#include "service/calib.h"
#include "service/config.h"
#include "service/datasets/spec.h"
#include "service/jobs/jobs.h"

static void setup(void)
{
    pg_test_db_setup();
}

static void teardown(void)
{
    pg_test_db_teardown();
}

typedef struct replica {
    pg_svc_config cfg;
    pg_db *db;
    pg_jobs *jobs;
} replica;

/* workers 0: created, never started (reads only). */
static void replica_open(replica *r, const char *node, int workers, int cache_mb)
{
    memset(r, 0, sizeof *r);
    pg_svc_config_defaults(&r->cfg);
    r->cfg.node_id = node;
    r->cfg.workers = workers ? workers : 1;
    r->cfg.snapshot_cache_mb = cache_mb;
    r->db = pg_test_db_open();
    pg_error err = {0};
    ck_assert_msg(pg_jobs_create(&r->cfg, r->db, &r->jobs, &err) == PG_OK, "%s", err.msg);
    if (workers) ck_assert_msg(pg_jobs_start(r->jobs, &err) == PG_OK, "%s", err.msg);
}

static void replica_close(replica *r)
{
    pg_jobs_destroy(r->jobs);
    pg_db_close(r->db);
}

/* A local-DP 2-D dataset of n rows of tenant t (as POST /v1/datasets and
 * its rows would store it). */
static void make_dataset(pg_db *db, const char *t, char *id, size_t cap, int n)
{
    pg_datasets_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "toy");
    s.ndim = 1;
    s.shape[0] = 2;
    s.d = 2;
    s.lo = -4;
    s.hi = 4;
    s.model = PG_PRIV_LOCAL;
    s.mechanism = PG_MECH_GAUSSIAN;
    s.epsilon = 1;
    s.delta = 1e-5;
    s.sensitivity = 0.5;
    s.noise_scale = 2.5;
    char field[PG_FIELD_MAX];
    pg_error err = {0};
    ck_assert_msg(pg_datasets_spec_check(&s, 65536, field, &err) == PG_OK, "%s", err.msg);
    pg_db_dataset d = {0};
    pg_test_uid(d.id, sizeof d.id, "ds_");
    snprintf(d.tenant, sizeof d.tenant, "%s", t);
    d.name = "toy";
    ck_assert_int_eq(pg_datasets_spec_to_json(&s, &d.meta, &err), PG_OK);
    d.d = 2;
    ck_assert_msg(pg_db_dataset_insert(db, &d, &err) == PG_OK, "%s", err.msg);
    free(d.meta);
    float *x = malloc((size_t)n * 2 * sizeof *x);
    unsigned v = 12345;
    for (int i = 0; i < 2 * n; i++) {
        v = v * 1103515245u + 12345u;
        x[i] = (float)((double)(v >> 8) / 16777216.0 * 2.0 - 1.0);
    }
    pg_test_rows_append(db, t, d.id, 2, x, n);
    free(x);
    snprintf(id, cap, "%s", d.id);
}

static void submit(replica *r, const char *t, const char *ds, const char *hidden, long steps,
                   long every, char *id)
{
    char body[512];
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\",\"model\":{\"hidden\":[%s]},"
             "\"train\":{\"steps\":%ld,\"batch_size\":32},\"ot\":{\"max_iter\":20},"
             "\"checkpoint_every\":%ld,\"keep_checkpoints\":1000,\"seed\":7}",
             ds, hidden, steps, every);
    json_t *spec = json_loads(body, 0, NULL);
    pg_submit_result res;
    memset(&res, 0, sizeof res);
    pg_error err = {0};
    ck_assert_msg(pg_jobs_submit(r->jobs, t, spec, 0, &res, &err) == PG_OK, "%s", err.msg);
    ck_assert_msg(res.outcome == PG_SUBMIT_ACCEPTED, "outcome %d: %s", res.outcome,
                  res.errors.count ? res.errors.items[0].message : "");
    json_decref(res.body);
    json_decref(spec);
    snprintf(id, PG_ID_MAX, "%s", res.job_id);
}

static json_t *get(replica *r, const char *t, const char *id, int *found)
{
    json_t *o = NULL;
    pg_error err = {0};
    ck_assert_msg(pg_jobs_get(r->jobs, t, id, &o, NULL, found, &err) == PG_OK, "%s", err.msg);
    return o;
}

static const char *status_of(json_t *view)
{
    return json_string_value(json_object_get(view, "status"));
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits (generously) for the job to finish as r sees it; its final view. */
static json_t *await_end(replica *r, const char *t, const char *id)
{
    for (int i = 0; i < 1200; i++) {
        int found;
        json_t *o = get(r, t, id, &found);
        ck_assert_int_eq(found, 1);
        const char *st = status_of(o);
        if (strcmp(st, "queued") && strcmp(st, "running")) return o;
        json_decref(o);
        sleep_ms(100);
    }
    ck_abort_msg("job %s did not finish", id);
    return NULL;
}

/* n samples of seed from the job's latest model as r serves it. */
static float *samples(replica *r, const char *t, const char *id, long ck, uint64_t seed, long *step)
{
    pg_snapshot *snap;
    pg_job_geometry geo;
    int found;
    pg_error err = {0};
    ck_assert_msg(pg_jobs_snapshot(r->jobs, t, id, ck, &snap, &geo, &found, &err) == PG_OK, "%s",
                  err.msg);
    ck_assert_int_eq(found, 1);
    ck_assert_uint_eq(geo.d, 2);
    ck_assert_uint_eq(pg_snapshot_dim(snap), 2);
    float *x = malloc(64 * 2 * sizeof *x);
    ck_assert_int_eq(pg_snapshot_sample(snap, 64, seed, -1, x, &err), PG_OK);
    if (step) *step = pg_snapshot_step(snap);
    pg_snapshot_release(snap);
    return x;
}

static int64_t metric(replica *r, const char *name)
{
    char *txt = pg_jobs_metrics(r->jobs);
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(txt, key);
    ck_assert_msg(p != NULL, "no %s in /metrics", name);
    int64_t v = strtoll(p + strlen(key), NULL, 10);
    free(txt);
    return v;
}

static int listed(replica *r, const char *t, const char *status, const char *id)
{
    json_t *items;
    int64_t next;
    pg_error err = {0};
    ck_assert_msg(pg_jobs_list(r->jobs, t, status, NULL, 0, 500, &items, &next, &err) == PG_OK,
                  "%s", err.msg);
    int hit = 0;
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) hit |=
        !strcmp(json_string_value(json_object_get(it, "id")), id);
    json_decref(items);
    return hit;
}

/* Another tenant's existing job and an unknown id take the same
 * path and the same work: neither is answered from memory (the table is
 * keyed by tenant first), both make one storage read that finds nothing.
 * Before, the other tenant's job was found in memory and refused after, a
 * path 90-115 us faster than the storage read of an unknown id. Counters,
 * not clocks. */
START_TEST(foreign_and_unknown_job_ids_take_the_same_path)
{
    replica a;
    replica_open(&a, "ra", 1, 64);
    char t[PG_ID_MAX], other[PG_ID_MAX], ds[PG_ID_MAX], id[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    pg_test_uid(other, sizeof other, "ten_");
    make_dataset(a.db, t, ds, sizeof ds, 200);
    submit(&a, t, ds, "8", 20, 10, id);
    const char *mem = "privgen_job_lookups_total{source=\"memory\"}",
               *sto = "privgen_job_lookups_total{source=\"storage\"}";
    int found;
    json_t *o = get(&a, t, id, &found); /* the owner: from memory */
    ck_assert_int_eq(found, 1);
    json_decref(o);
    int64_t m0 = metric(&a, mem), s0 = metric(&a, sto);
    ck_assert_int_ge(m0, 1);
    ck_assert_ptr_null(get(&a, other, id, &found)); /* not yours */
    ck_assert_int_eq(found, 0);
    int64_t m1 = metric(&a, mem), s1 = metric(&a, sto);
    ck_assert_ptr_null(get(&a, other, "job_00000000deadbeef", &found)); /* does not exist */
    ck_assert_int_eq(found, 0);
    int64_t m2 = metric(&a, mem), s2 = metric(&a, sto);
    ck_assert_int_eq(m1 - m0, 0);
    ck_assert_int_eq(s1 - s0, 1);
    ck_assert_int_eq(m2 - m1, m1 - m0);
    ck_assert_int_eq(s2 - s1, s1 - s0);
    replica_close(&a);
}
END_TEST

START_TEST(followed_listed_and_sampled_from_the_other_replica)
{
    char t[PG_ID_MAX], ds[PG_ID_MAX], job[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    replica a, b;
    replica_open(&b, "replica-b", 0, 64); /* started before the job exists */
    replica_open(&a, "replica-a", 1, 64);
    make_dataset(a.db, t, ds, sizeof ds, 300);
    submit(&a, t, ds, "16", 120, 40, job);

    /* B never saw the submission: it finds, lists and follows the job */
    int found;
    json_t *o = get(&b, t, job, &found);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(json_string_value(json_object_get(o, "id")), job);
    json_decref(o);
    ck_assert(listed(&b, t, NULL, job));
    ck_assert_ptr_null(get(&b, "ten_someone_else", job, &found)); /* tenancy holds */
    ck_assert_int_eq(found, 0);

    uint64_t ver = UINT64_MAX;
    json_t *last = NULL;
    long prev_step = -1;
    int updates = 0, final = 0;
    for (int i = 0; i < 240 && !final; i++) {
        json_t *v = NULL;
        pg_error err = {0};
        ck_assert_int_eq(pg_jobs_wait(b.jobs, t, job, &ver, 2000, &v, &final, &found, &err), PG_OK);
        ck_assert_int_eq(found, 1);
        if (!v) continue;
        updates++;
        long step =
            (long)json_integer_value(json_object_get(json_object_get(v, "progress"), "step"));
        ck_assert_int_ge(step, prev_step); /* progress never goes back */
        prev_step = step;
        json_decref(last);
        last = v;
    }
    ck_assert_msg(final, "B's wait never saw the end");
    ck_assert_int_ge(updates, 2);
    ck_assert_str_eq(status_of(last), "succeeded");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(last, "progress"), "step")),
                     120);
    ck_assert_str_eq(json_string_value(json_object_get(last, "node")), "replica-a");
    ck_assert_int_eq(json_array_size(json_object_get(last, "checkpoints")), 3);
    ck_assert_int_eq(json_array_size(json_object_get(last, "history")) > 0, 1);

    /* A's final view is B's, to the byte of every field, and so the event id */
    json_t *va = await_end(&a, t, job);
    for (int i = 0; i < 50 && !json_equal(va, last); i++) { /* A re-reads within a second */
        sleep_ms(100);
        json_decref(va);
        va = get(&a, t, job, &found);
    }
    char *sa = json_dumps(va, JSON_SORT_KEYS), *sb = json_dumps(last, JSON_SORT_KEYS);
    ck_assert_str_eq(sa, sb);
    free(sa);
    free(sb);
    char ida[96], idb[96];
    ck_assert_int_eq(pg_jobs_event_id(va, ida, sizeof ida), 0);
    ck_assert_int_eq(pg_jobs_event_id(last, idb, sizeof idb), 0);
    ck_assert_str_eq(ida, "succeeded:120:120");
    ck_assert_str_eq(ida, idb);
    json_decref(va);
    json_decref(last);
    ck_assert(listed(&b, t, "succeeded", job));
    ck_assert(!listed(&b, t, "running", job));

    /* samples: A's published model and B's rebuilt one agree bit for bit */
    long sta, stb;
    float *xa = samples(&a, t, job, -1, 424242, &sta);
    int64_t misses = metric(&b, "privgen_snapshot_cache_misses_total");
    float *xb = samples(&b, t, job, -1, 424242, &stb);
    ck_assert_int_eq(sta, 120);
    ck_assert_int_eq(stb, 120);
    ck_assert_int_eq(memcmp(xa, xb, 64 * 2 * sizeof *xa), 0);
    ck_assert_int_eq(metric(&b, "privgen_snapshot_cache_misses_total"), misses + 1);
    float *xb2 = samples(&b, t, job, -1, 424242, NULL); /* from the cache now */
    ck_assert_int_eq(memcmp(xa, xb2, 64 * 2 * sizeof *xa), 0);
    ck_assert_int_ge(metric(&b, "privgen_snapshot_cache_hits_total"), 1);
    ck_assert_int_gt(metric(&b, "privgen_snapshot_cache_bytes"), 0);
    float *xc = samples(&b, t, job, -1, 424243, NULL);
    ck_assert_int_ne(memcmp(xa, xc, 64 * 2 * sizeof *xa), 0); /* the seed matters */
    /* a named checkpoint, too */
    free(xa);
    free(xb);
    xa = samples(&a, t, job, 40, 9, &sta);
    xb = samples(&b, t, job, 40, 9, &stb);
    ck_assert_int_eq(sta, 40);
    ck_assert_int_eq(memcmp(xa, xb, 64 * 2 * sizeof *xa), 0);
    free(xa);
    free(xb);
    free(xb2);
    free(xc);

    /* checkpoints read through B */
    json_t *cks;
    pg_error err = {0};
    ck_assert_int_eq(pg_jobs_checkpoints(b.jobs, t, job, &cks, &found, &err), PG_OK);
    ck_assert_int_eq(json_array_size(json_object_get(cks, "items")), 3);
    json_decref(cks);
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(pg_jobs_checkpoint_read(b.jobs, t, job, 80, &bytes, &len, &found, &err),
                     PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_uint_gt(len, 0);
    free(bytes);

    /* deleted through A: gone through B (within about a second) */
    int conflict;
    ck_assert_int_eq(pg_jobs_delete(a.jobs, t, job, &found, &conflict, &err), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(conflict, 0);
    int gone = 0;
    for (int i = 0; i < 100 && !gone; i++) {
        o = get(&b, t, job, &found);
        json_decref(o);
        gone = !found;
        if (!gone) sleep_ms(100);
    }
    ck_assert_msg(gone, "B still shows the deleted job");
    ck_assert(!listed(&b, t, NULL, job));
    pg_snapshot *snap;
    pg_job_geometry geo;
    ck_assert_int_eq(pg_jobs_snapshot(b.jobs, t, job, -1, &snap, &geo, &found, &err), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(metric(&b, "privgen_snapshot_cache_entries"), 0); /* evicted */
    replica_close(&a);
    replica_close(&b);
}
END_TEST

/* A generator whose checkpoint takes between 0.5 and 1 MiB (checked). */
#define HIDDEN "240,240"

START_TEST(cache_evicts_under_its_cap_and_reloads_the_same)
{
    char t[PG_ID_MAX], ds[PG_ID_MAX], j1[PG_ID_MAX], j2[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    replica a, b;
    replica_open(&a, "replica-a", 1, 64);
    replica_open(&b, "replica-b", 0, 1); /* 1 MiB: room for one of the models below */
    make_dataset(a.db, t, ds, sizeof ds, 200);
    submit(&a, t, ds, HIDDEN, 6, 6, j1);
    submit(&a, t, ds, HIDDEN, 8, 8, j2); /* trained further: another model */
    json_decref(await_end(&b, t, j1));
    json_t *v = await_end(&b, t, j2);
    ck_assert_str_eq(status_of(v), "succeeded");
    json_int_t bytes = json_integer_value(
        json_object_get(json_array_get(json_object_get(v, "checkpoints"), 0), "bytes"));
    json_decref(v);
    ck_assert_msg(bytes > (1 << 19) && bytes <= (1 << 20),
                  "the test needs a checkpoint in (0.5, 1] MiB, got %lld", (long long)bytes);

    float *first = samples(&b, t, j1, -1, 77, NULL);
    float *other = samples(&b, t, j2, -1, 77, NULL); /* does not fit beside j1: evicts it */
    ck_assert_int_eq(metric(&b, "privgen_snapshot_cache_evictions_total"), 1);
    ck_assert_int_eq(metric(&b, "privgen_snapshot_cache_entries"), 1);
    ck_assert_int_le(metric(&b, "privgen_snapshot_cache_bytes"), 1 << 20);
    int64_t misses = metric(&b, "privgen_snapshot_cache_misses_total");
    float *again = samples(&b, t, j1, -1, 77, NULL); /* reloaded, same draws */
    ck_assert_int_eq(metric(&b, "privgen_snapshot_cache_misses_total"), misses + 1);
    ck_assert_int_eq(memcmp(first, again, 64 * 2 * sizeof *first), 0);
    ck_assert_int_ne(memcmp(first, other, 64 * 2 * sizeof *first), 0);
    float *mine = samples(&a, t, j1, -1, 77, NULL); /* and the trainer's own */
    ck_assert_int_eq(memcmp(first, mine, 64 * 2 * sizeof *first), 0);
    free(first);
    free(other);
    free(again);
    free(mine);
    replica_close(&a);
    replica_close(&b);
}
END_TEST

START_TEST(a_newer_checkpoint_is_served_once_it_appears)
{
    char t[PG_ID_MAX], ds[PG_ID_MAX], job[PG_ID_MAX];
    pg_test_uid(t, sizeof t, "ten_");
    replica a, b;
    replica_open(&a, "replica-a", 1, 64);
    replica_open(&b, "replica-b", 0, 64);
    make_dataset(a.db, t, ds, sizeof ds, 300);
    submit(&a, t, ds, "16", 5000000, 100, job); /* runs until cancelled */
    long first = -1, later = -1;
    for (int i = 0; i < 1200 && later < 0; i++) {
        int found;
        json_t *v = get(&b, t, job, &found);
        json_t *ck = json_object_get(v, "checkpoints");
        long latest = ck && json_array_size(ck)
                          ? (long)json_integer_value(json_object_get(
                                json_array_get(ck, json_array_size(ck) - 1), "step"))
                          : -1;
        json_decref(v);
        if (latest >= 0) {
            long served;
            free(samples(&b, t, job, -1, 5, &served));
            ck_assert_int_ge(served, latest); /* never older than what B showed */
            if (first < 0)
                first = served;
            else if (served > first)
                later = served;
        }
        sleep_ms(100);
    }
    ck_assert_msg(later > first && first >= 100, "no newer checkpoint appeared (%ld, %ld)", first,
                  later);
    ck_assert_int_ge(metric(&b, "privgen_snapshot_cache_entries"), 1);
    /* what B serves for the newer step is that checkpoint's model */
    long s1, s2;
    float *xb = samples(&b, t, job, later, 11, &s1);
    float *xa = samples(&a, t, job, later, 11, &s2);
    ck_assert_int_eq(s1, later);
    ck_assert_int_eq(memcmp(xa, xb, 64 * 2 * sizeof *xa), 0);
    free(xa);
    free(xb);
    json_t *o;
    int found, conflict;
    pg_error err = {0};
    ck_assert_int_eq(pg_jobs_cancel(a.jobs, t, job, &o, &found, &conflict, &err), PG_OK);
    json_decref(o);
    json_t *v = await_end(&b, t, job);
    ck_assert_str_eq(status_of(v), "cancelled");
    json_decref(v);
    replica_close(&a);
    replica_close(&b);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("replicas_read");
    TCase *t = tcase_create("read");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 240);
    tcase_add_test(t, followed_listed_and_sampled_from_the_other_replica);
    tcase_add_test(t, foreign_and_unknown_job_ids_take_the_same_path);
    tcase_add_test(t, cache_evicts_under_its_cap_and_reloads_the_same);
    tcase_add_test(t, a_newer_checkpoint_is_served_once_it_appears);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
