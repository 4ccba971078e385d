/* service/snapcache.h: hits and misses, LRU eviction under the cap, newer
 * steps replacing older ones, eviction by key (also during a load), failed
 * loads, and one load per key under a burst of concurrent misses. The
 * snapshots are counting fakes: every destroy is observed. */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "engine/methods/snapshot.h"
#include "service/snapcache.h"
#include "support/pg_test.h"

static atomic_int alive, loads;

static int fake_sample(const void *impl, size_t n, uint64_t seed, int label, float *out,
                       pg_error *err)
{
    (void)seed, (void)label, (void)err;
    for (size_t i = 0; i < n; i++) out[i] = (float)*(const int64_t *)impl;
    return PG_OK;
}

static void fake_destroy(void *impl)
{
    free(impl);
    atomic_fetch_sub(&alive, 1);
}

static const pg_snapshot_ops FAKE = {fake_sample, fake_destroy, NULL};

/* gate (optional): the loader sets gate[0] once it runs and returns only
 * after gate[1] is set, so a test can act while a load is in progress
 * without guessing how long the thread takes to get there. */
typedef struct ld {
    int64_t step;
    size_t bytes;
    int fail, sleep_ms;
    atomic_int *gate;
} ld;

static void nap_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static int load(void *ctx, pg_snapshot **snap, size_t *bytes, pg_error *err)
{
    ld *l = ctx;
    atomic_fetch_add(&loads, 1);
    if (l->gate) {
        atomic_store(&l->gate[0], 1);
        while (!atomic_load(&l->gate[1])) nap_ms(1);
    }
    if (l->sleep_ms) nap_ms(l->sleep_ms);
    if (l->fail) return pg_error_set(err, PG_EIO, "checkpoint unreadable");
    int64_t *impl = malloc(sizeof *impl);
    *impl = l->step;
    atomic_fetch_add(&alive, 1);
    *bytes = l->bytes;
    return pg_snapshot_new(&FAKE, impl, (long)l->step, 1, 0, snap, err);
}

/* get(key, step) with a loader of `bytes`; returns the snapshot's step. */
static long get(pg_snapcache *c, const char *key, int64_t step, size_t bytes)
{
    ld l = {.step = step, .bytes = bytes};
    pg_snapshot *s;
    pg_error err = {0};
    ck_assert_msg(pg_snapcache_get(c, key, step, load, &l, &s, &err) == PG_OK, "%s", err.msg);
    long got = pg_snapshot_step(s);
    pg_snapshot_release(s);
    return got;
}

static pg_snapcache_stats stats(pg_snapcache *c)
{
    pg_snapcache_stats s;
    pg_snapcache_stats_get(c, &s);
    return s;
}

START_TEST(hits_misses_and_lru_eviction)
{
    atomic_store(&alive, 0);
    atomic_store(&loads, 0);
    pg_snapcache *c;
    ck_assert_int_eq(pg_snapcache_create(100, &c, NULL), PG_OK);
    ck_assert_int_eq(get(c, "job_a", 10, 40), 10);
    ck_assert_int_eq(get(c, "job_b", 20, 40), 20);
    ck_assert_int_eq(get(c, "job_a", 10, 40), 10); /* a is now the most recent */
    pg_snapcache_stats s = stats(c);
    ck_assert_uint_eq(s.hits, 1);
    ck_assert_uint_eq(s.misses, 2);
    ck_assert_uint_eq(s.bytes, 80);
    ck_assert_uint_eq(s.entries, 2);
    ck_assert_int_eq(atomic_load(&loads), 2);
    /* c pushes the total to 120 > 100: b, the least recent, goes */
    ck_assert_int_eq(get(c, "job_c", 30, 40), 30);
    s = stats(c);
    ck_assert_uint_eq(s.evictions, 1);
    ck_assert_uint_eq(s.bytes, 80);
    ck_assert_int_eq(atomic_load(&alive), 2); /* b's snapshot was destroyed */
    ck_assert_int_eq(get(c, "job_a", 10, 40), 10);
    ck_assert_int_eq(atomic_load(&loads), 3); /* a was kept */
    ck_assert_int_eq(get(c, "job_b", 20, 40), 20);
    ck_assert_int_eq(atomic_load(&loads), 4); /* b was reloaded, evicting c */
    ck_assert_uint_eq(stats(c).evictions, 2);
    /* larger than the cap: served, never kept, nothing else evicted */
    ck_assert_int_eq(get(c, "job_big", 1, 101), 1);
    s = stats(c);
    ck_assert_uint_eq(s.entries, 2);
    ck_assert_uint_eq(s.evictions, 2);
    ck_assert_int_eq(atomic_load(&alive), 2);
    pg_snapcache_destroy(c);
    ck_assert_int_eq(atomic_load(&alive), 0);
}
END_TEST

START_TEST(newer_steps_replace_and_keys_evict)
{
    atomic_store(&alive, 0);
    atomic_store(&loads, 0);
    pg_snapcache *c;
    ck_assert_int_eq(pg_snapcache_create(1000, &c, NULL), PG_OK);
    ck_assert_int_eq(get(c, "job_a", 100, 10), 100);
    ck_assert_int_eq(get(c, "job_a", 200, 10), 200); /* newer: replaces */
    pg_snapcache_stats s = stats(c);
    ck_assert_uint_eq(s.entries, 1);
    ck_assert_uint_eq(s.dropped, 1);
    ck_assert_int_eq(atomic_load(&alive), 1);
    ck_assert_int_eq(get(c, "job_a", 100, 10), 100); /* older: served, not kept */
    ck_assert_int_eq(get(c, "job_a", 200, 10), 200);
    ck_assert_uint_eq(stats(c).hits, 1);
    ck_assert_int_eq(atomic_load(&loads), 3);
    pg_snapcache_evict(c, "job_a");
    pg_snapcache_evict(c, "job_unknown");
    s = stats(c);
    ck_assert_uint_eq(s.entries, 0);
    ck_assert_uint_eq(s.bytes, 0);
    ck_assert_int_eq(atomic_load(&alive), 0);
    /* a failed load reports its error and keeps nothing */
    ld bad = {.step = 1, .bytes = 1, .fail = 1};
    pg_snapshot *snap;
    pg_error err = {0};
    ck_assert_int_eq(pg_snapcache_get(c, "job_a", 1, load, &bad, &snap, &err), PG_EIO);
    ck_assert_ptr_null(snap);
    ck_assert_str_eq(err.msg, "checkpoint unreadable");
    ck_assert_uint_eq(stats(c).entries, 0);
    ck_assert_int_eq(pg_snapcache_get(c, "", 1, load, &bad, &snap, &err), PG_EINVAL);
    /* a zero cap keeps nothing */
    pg_snapcache *z;
    ck_assert_int_eq(pg_snapcache_create(0, &z, NULL), PG_OK);
    ck_assert_int_eq(get(z, "job_a", 5, 1), 5);
    ck_assert_int_eq(get(z, "job_a", 5, 1), 5);
    ck_assert_uint_eq(stats(z).misses, 2);
    ck_assert_uint_eq(stats(z).entries, 0);
    pg_snapcache_destroy(z);
    pg_snapcache_destroy(c);
    ck_assert_int_eq(atomic_load(&alive), 0);
}
END_TEST

typedef struct burst {
    pg_snapcache *c;
    ld l;
    pg_snapshot *got;
    int rc;
} burst;

static void *burst_get(void *arg)
{
    burst *b = arg;
    b->rc = pg_snapcache_get(b->c, "job_hot", b->l.step, load, &b->l, &b->got, NULL);
    return NULL;
}

START_TEST(a_burst_of_misses_loads_once)
{
    atomic_store(&alive, 0);
    atomic_store(&loads, 0);
    pg_snapcache *c;
    ck_assert_int_eq(pg_snapcache_create(1 << 20, &c, NULL), PG_OK);
    enum { N = 8 };
    burst b[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        b[i] = (burst){.c = c, .l = {.step = 7, .bytes = 100, .sleep_ms = 200}};
        pthread_create(&th[i], NULL, burst_get, &b[i]);
    }
    for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
    ck_assert_int_eq(atomic_load(&loads), 1);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(b[i].rc, PG_OK);
        ck_assert_ptr_eq(b[i].got, b[0].got);
        pg_snapshot_release(b[i].got);
    }
    pg_snapcache_stats s = stats(c);
    ck_assert_uint_eq(s.misses + s.hits, N);
    ck_assert_uint_eq(s.entries, 1);
    /* evicted while loading: the load is served but not kept. The eviction
     * waits for the loader to be running (a fixed 100 ms sleep against a
     * 300 ms load lost the race when the thread started late under load,
     * and the entry was then evicted before the load and kept). */
    atomic_int gate[2] = {0, 0};
    burst one = {.c = c, .l = {.step = 8, .bytes = 100, .gate = gate}};
    pthread_t t1;
    pthread_create(&t1, NULL, burst_get, &one);
    while (!atomic_load(&gate[0])) nap_ms(1);
    pg_snapcache_evict(c, "job_hot");
    atomic_store(&gate[1], 1);
    pthread_join(t1, NULL);
    ck_assert_int_eq(one.rc, PG_OK);
    ck_assert_int_eq(pg_snapshot_step(one.got), 8);
    pg_snapshot_release(one.got);
    ck_assert_uint_eq(stats(c).entries, 0);
    ck_assert_int_eq(atomic_load(&alive), 0);
    pg_snapcache_destroy(c);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("snapcache");
    TCase *t = tcase_create("cache");
    tcase_set_timeout(t, 30);
    tcase_add_test(t, hits_misses_and_lru_eviction);
    tcase_add_test(t, newer_steps_replace_and_keys_evict);
    tcase_add_test(t, a_burst_of_misses_loads_once);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
