/* Body cache: hits return the stored bytes (a reference to them, which
 * outlives eviction); keys separate jobs, steps and variants; a newer
 * newest-snapshot drops the job's older bodies but not checkpoint bodies;
 * the byte, entry and body-size bounds evict least recently used first;
 * forget_job drops a job's bodies only; hits and misses are counted. */
#include "api/body_cache.h"
#include "support/pg_test.h"

static pg_body *mk(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(d);
    memcpy(d, s, n);
    pg_body *b = pg_body_wrap(d, n);
    ck_assert_ptr_nonnull(b);
    return b;
}

/* put a fresh body and drop the caller's reference */
static void put(pg_body_cache *c, const char *job, long step, int latest, const char *v,
                const char *bytes)
{
    pg_body *b = mk(bytes);
    pg_body_cache_put(c, job, step, latest, v, b);
    pg_body_release(b);
}

static int has(pg_body_cache *c, const char *job, long step, const char *v, const char *want)
{
    pg_body *b = pg_body_cache_get(c, job, step, v);
    if (!b) return 0;
    int same = pg_body_len(b) == strlen(want) && !memcmp(pg_body_data(b), want, strlen(want));
    pg_body_release(b);
    ck_assert_msg(same, "cached bytes differ");
    return 1;
}

START_TEST(keys_and_invalidation)
{
    pg_body_cache *c = pg_body_cache_create(1 << 20, 100, 1 << 20);
    put(c, "job_a", 10, 1, "n=64&seed=1", "A10");
    put(c, "job_a", 10, 1, "n=64&seed=2", "A10s2");
    put(c, "job_b", 10, 1, "n=64&seed=1", "B10");
    put(c, "job_a", 5, 0, "checkpoint=5&n=64&seed=1", "A5");
    ck_assert(has(c, "job_a", 10, "n=64&seed=1", "A10"));
    ck_assert(has(c, "job_a", 10, "n=64&seed=2", "A10s2"));
    ck_assert(has(c, "job_b", 10, "n=64&seed=1", "B10"));
    ck_assert(!has(c, "job_a", 11, "n=64&seed=1", ""));
    ck_assert(!has(c, "job_c", 10, "n=64&seed=1", ""));
    pg_body_cache_stats s;
    pg_body_cache_stats_get(c, &s);
    ck_assert_uint_eq(s.hits, 3);
    ck_assert_uint_eq(s.misses, 2);
    /* job_a publishes step 20: its step-10 newest bodies go, the checkpoint stays */
    put(c, "job_a", 20, 1, "n=64&seed=1", "A20");
    ck_assert(!has(c, "job_a", 10, "n=64&seed=1", ""));
    ck_assert(!has(c, "job_a", 10, "n=64&seed=2", ""));
    ck_assert(has(c, "job_a", 20, "n=64&seed=1", "A20"));
    ck_assert(has(c, "job_a", 5, "checkpoint=5&n=64&seed=1", "A5"));
    ck_assert(has(c, "job_b", 10, "n=64&seed=1", "B10"));
    /* the same key again replaces, not duplicates */
    put(c, "job_b", 10, 1, "n=64&seed=1", "B10v2");
    pg_body_cache_stats_get(c, &s);
    ck_assert_uint_eq(s.entries, 3);
    ck_assert_uint_eq(s.bytes, 3 + 2 + 5);
    ck_assert(has(c, "job_b", 10, "n=64&seed=1", "B10v2"));
    pg_body_cache_forget_job(c, "job_a");
    pg_body_cache_stats_get(c, &s);
    ck_assert_uint_eq(s.entries, 1);
    ck_assert_uint_eq(s.bytes, 5);
    ck_assert(has(c, "job_b", 10, "n=64&seed=1", "B10v2"));
    pg_body_cache_free(c);
    ck_assert(!has(NULL, "job_b", 10, "n=64&seed=1", ""));
    put(NULL, "x", 1, 1, "v", "b"); /* no cache: a no-op */
    pg_body_cache_stats_get(NULL, &s);
    ck_assert_uint_eq(s.entries + s.hits + s.misses, 0);
}
END_TEST

START_TEST(bounds_evict_lru)
{
    pg_body_cache *c = pg_body_cache_create(10, 3, 8);
    put(c, "j1", 1, 0, "v", "aaaa");
    put(c, "j2", 1, 0, "v", "bbbb");
    ck_assert(has(c, "j1", 1, "v", "aaaa")); /* j1 is now the most recent */
    put(c, "j3", 1, 0, "v", "cccc");         /* 12 bytes > 10: j2 goes */
    ck_assert(!has(c, "j2", 1, "v", ""));
    ck_assert(has(c, "j1", 1, "v", "aaaa"));
    ck_assert(has(c, "j3", 1, "v", "cccc"));
    put(c, "j4", 1, 0, "v", "0123456789ab"); /* larger than the cache */
    ck_assert(!has(c, "j4", 1, "v", ""));
    put(c, "j4", 1, 0, "v", "012345678"); /* 9 > max_body 8, though it would fit */
    ck_assert(!has(c, "j4", 1, "v", ""));
    put(c, "j5", 1, 0, "v", "e");
    put(c, "j6", 1, 0, "v", "f"); /* 4 entries > 3: j1 (oldest use) goes */
    ck_assert(!has(c, "j1", 1, "v", ""));
    pg_body_cache_stats s;
    pg_body_cache_stats_get(c, &s);
    ck_assert_uint_eq(s.entries, 3);
    ck_assert_uint_le(s.bytes, 10);
    ck_assert_uint_eq(s.evictions, 2);
    ck_assert_uint_eq(s.max_body, 8);
    pg_body_cache_free(c);
}
END_TEST

START_TEST(reference_outlives_eviction)
{
    pg_body_cache *c = pg_body_cache_create(8, 10, 8);
    put(c, "j1", 1, 0, "v", "abcdefgh");
    pg_body *held = pg_body_cache_get(c, "j1", 1, "v");
    ck_assert_ptr_nonnull(held);
    put(c, "j2", 1, 0, "v", "zz"); /* 10 > 8: j1 is evicted while held */
    ck_assert(!has(c, "j1", 1, "v", ""));
    ck_assert_uint_eq(pg_body_len(held), 8);
    ck_assert(!memcmp(pg_body_data(held), "abcdefgh", 8)); /* still readable */
    pg_body_release(held);
    pg_body_cache_forget_job(c, "j2");
    pg_body_cache_free(c);
    pg_body_release(NULL);
}
END_TEST

static Suite *body_cache_suite(void)
{
    Suite *s = suite_create("api/body_cache");
    TCase *tc = tcase_create("cache");
    tcase_add_test(tc, keys_and_invalidation);
    tcase_add_test(tc, bounds_evict_lru);
    tcase_add_test(tc, reference_outlives_eviction);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(body_cache_suite)
