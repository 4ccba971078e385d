/* PNG cache: hits return the stored bytes; keys separate jobs, steps and
 * variants; a newer newest-snapshot drops the job's older plots but not
 * checkpoint plots; the byte and entry bounds evict least recently used
 * first; forget_job drops a job's plots only. */
#include "api/png_cache.h"
#include "support/pg_test.h"

static int has(pg_png_cache *c, const char *job, long step, const char *v, const char *want)
{
    char *b;
    size_t len;
    if (!pg_png_cache_get(c, job, step, v, &b, &len)) return 0;
    int same = len == strlen(want) && !memcmp(b, want, len);
    free(b);
    ck_assert_msg(same, "cached bytes differ");
    return 1;
}

START_TEST(keys_and_invalidation)
{
    pg_png_cache *c = pg_png_cache_create(1 << 20, 100);
    pg_png_cache_put(c, "job_a", 10, 1, "n=64&seed=1", "A10", 3);
    pg_png_cache_put(c, "job_a", 10, 1, "n=64&seed=2", "A10s2", 5);
    pg_png_cache_put(c, "job_b", 10, 1, "n=64&seed=1", "B10", 3);
    pg_png_cache_put(c, "job_a", 5, 0, "checkpoint=5&n=64&seed=1", "A5", 2);
    ck_assert(has(c, "job_a", 10, "n=64&seed=1", "A10"));
    ck_assert(has(c, "job_a", 10, "n=64&seed=2", "A10s2"));
    ck_assert(has(c, "job_b", 10, "n=64&seed=1", "B10"));
    ck_assert(!has(c, "job_a", 11, "n=64&seed=1", ""));
    ck_assert(!has(c, "job_c", 10, "n=64&seed=1", ""));
    /* job_a publishes step 20: its step-10 newest plots go, the checkpoint stays */
    pg_png_cache_put(c, "job_a", 20, 1, "n=64&seed=1", "A20", 3);
    ck_assert(!has(c, "job_a", 10, "n=64&seed=1", ""));
    ck_assert(!has(c, "job_a", 10, "n=64&seed=2", ""));
    ck_assert(has(c, "job_a", 20, "n=64&seed=1", "A20"));
    ck_assert(has(c, "job_a", 5, "checkpoint=5&n=64&seed=1", "A5"));
    ck_assert(has(c, "job_b", 10, "n=64&seed=1", "B10"));
    /* the same key again replaces, not duplicates */
    pg_png_cache_put(c, "job_b", 10, 1, "n=64&seed=1", "B10v2", 5);
    size_t entries, bytes;
    pg_png_cache_stats(c, &entries, &bytes);
    ck_assert_uint_eq(entries, 3);
    ck_assert_uint_eq(bytes, 3 + 2 + 5);
    ck_assert(has(c, "job_b", 10, "n=64&seed=1", "B10v2"));
    pg_png_cache_forget_job(c, "job_a");
    pg_png_cache_stats(c, &entries, &bytes);
    ck_assert_uint_eq(entries, 1);
    ck_assert(has(c, "job_b", 10, "n=64&seed=1", "B10v2"));
    pg_png_cache_free(c);
    ck_assert(!has(NULL, "job_b", 10, "n=64&seed=1", ""));
    pg_png_cache_put(NULL, "x", 1, 1, "v", "b", 1); /* no cache: a no-op */
}
END_TEST

START_TEST(bounds_evict_lru)
{
    pg_png_cache *c = pg_png_cache_create(10, 3);
    pg_png_cache_put(c, "j1", 1, 0, "v", "aaaa", 4);
    pg_png_cache_put(c, "j2", 1, 0, "v", "bbbb", 4);
    ck_assert(has(c, "j1", 1, "v", "aaaa"));         /* j1 is now the most recent */
    pg_png_cache_put(c, "j3", 1, 0, "v", "cccc", 4); /* 12 bytes > 10: j2 goes */
    ck_assert(!has(c, "j2", 1, "v", ""));
    ck_assert(has(c, "j1", 1, "v", "aaaa"));
    ck_assert(has(c, "j3", 1, "v", "cccc"));
    pg_png_cache_put(c, "j4", 1, 0, "v", "0123456789ab", 12); /* larger than the cache */
    ck_assert(!has(c, "j4", 1, "v", ""));
    pg_png_cache_put(c, "j5", 1, 0, "v", "e", 1);
    pg_png_cache_put(c, "j6", 1, 0, "v", "f", 1); /* 4 entries > 3: j1 (oldest use) goes */
    ck_assert(!has(c, "j1", 1, "v", ""));
    size_t entries, bytes;
    pg_png_cache_stats(c, &entries, &bytes);
    ck_assert_uint_eq(entries, 3);
    ck_assert_uint_le(bytes, 10);
    pg_png_cache_free(c);
}
END_TEST

static Suite *png_cache_suite(void)
{
    Suite *s = suite_create("api/png_cache");
    TCase *tc = tcase_create("cache");
    tcase_add_test(tc, keys_and_invalidation);
    tcase_add_test(tc, bounds_evict_lru);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(png_cache_suite)
