/* Token verification cache (service/auth.h): the second check of a token is
 * a hit with the same record; a wrong secret for a cached id never is; a
 * revocation made behind the cache's back stays unseen until
 * pg_auth_cache_invalidate (the contract revocation code must follow), then
 * the token fails; a zero TTL caches nothing. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#include "service/auth.h"
#include "support/pg_test.h"

static void header(char *out, size_t cap, const char *token)
{
    snprintf(out, cap, "Bearer %s", token);
}

START_TEST(cache_hits_invalidation_and_ttl)
{
    char dir[] = "/tmp/pgauthcache-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char url[96];
    snprintf(url, sizeof url, "sqlite:%s/privgen.db", dir);
    pg_db *s;
    ck_assert_int_eq(pg_db_open(url, NULL, &s, NULL), PG_OK);
    char tok[PG_TOKEN_MAX], h[128];
    pg_token rec, got;
    ck_assert_int_eq(pg_auth_mint(s, PG_SCOPE_ADMIN, NULL, tok, &rec, NULL), PG_OK);
    header(h, sizeof h, tok);
    pg_auth_cache *c = pg_auth_cache_create(64, 3600);
    ck_assert_ptr_nonnull(c);
    int ok;
    unsigned long long hits, misses;
    ck_assert_int_eq(pg_auth_verify_cached(c, s, h, &got, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 1);
    ck_assert_str_eq(got.id, rec.id);
    memset(&got, 0, sizeof got);
    ck_assert_int_eq(pg_auth_verify_cached(c, s, h, &got, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 1);
    ck_assert_str_eq(got.id, rec.id);
    ck_assert_str_eq(got.tenant, rec.tenant);
    ck_assert_int_eq(got.scope, PG_SCOPE_ADMIN);
    pg_auth_cache_stats(c, &hits, &misses);
    ck_assert_uint_eq(hits, 1);
    ck_assert_uint_eq(misses, 1);

    /* same id, another secret: not the cached token */
    char bad[PG_TOKEN_MAX], hb[128];
    snprintf(bad, sizeof bad, "%s", tok);
    bad[30] = bad[30] == 'a' ? 'b' : 'a';
    header(hb, sizeof hb, bad);
    ck_assert_int_eq(pg_auth_verify_cached(c, s, hb, &got, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 0);
    ck_assert_int_eq(pg_auth_verify_cached(c, s, "Bearer nonsense", &got, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 0);
    ck_assert_int_eq(pg_auth_verify_cached(c, s, NULL, &got, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 0);

    /* revoke behind the cache's back (another replica, or a revocation
     * path that forgot the invalidation call) */
    char db[128];
    snprintf(db, sizeof db, "%s/privgen.db", dir);
    sqlite3 *q;
    ck_assert_int_eq(sqlite3_open(db, &q), SQLITE_OK);
    char sql[160];
    snprintf(sql, sizeof sql, "UPDATE tokens SET revoked = 1, revoked_at = 1 WHERE id = '%s'", rec.id);
    ck_assert_int_eq(sqlite3_exec(q, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(q);
    ck_assert_int_eq(pg_auth_verify(s, h, &got, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 0); /* the store says no */
    ck_assert_int_eq(pg_auth_verify_cached(c, s, h, &got, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 1); /* the cache still says yes: hence the contract */
    pg_auth_cache_invalidate(c, rec.id);
    ck_assert_int_eq(pg_auth_verify_cached(c, s, h, &got, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 0);
    ck_assert_int_eq(pg_auth_verify_cached(c, s, h, &got, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 0); /* failures are not cached either */
    pg_auth_cache_free(c);

    /* TTL 0: every check reads the store; clear() empties */
    char tok2[PG_TOKEN_MAX];
    ck_assert_int_eq(pg_auth_mint(s, PG_SCOPE_READ, NULL, tok2, &rec, NULL), PG_OK);
    header(h, sizeof h, tok2);
    c = pg_auth_cache_create(8, 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(pg_auth_verify_cached(c, s, h, &got, &ok, NULL), PG_OK);
        ck_assert_int_eq(ok, 1);
    }
    pg_auth_cache_stats(c, &hits, &misses);
    ck_assert_uint_eq(hits, 0);
    ck_assert_uint_eq(misses, 3);
    pg_auth_cache_free(c);
    c = pg_auth_cache_create(8, 3600);
    ck_assert_int_eq(pg_auth_verify_cached(c, s, h, &got, &ok, NULL), PG_OK);
    pg_auth_cache_clear(c);
    ck_assert_int_eq(pg_auth_verify_cached(c, s, h, &got, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 1);
    pg_auth_cache_stats(c, &hits, &misses);
    ck_assert_uint_eq(hits, 0);
    ck_assert_uint_eq(misses, 2);
    pg_auth_cache_free(c);
    ck_assert_int_eq(pg_auth_verify_cached(NULL, s, h, &got, &ok, NULL), PG_OK); /* no cache */
    ck_assert_int_eq(ok, 1);
    pg_db_close(s);
    snprintf(sql, sizeof sql, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(sql), 0);
}
END_TEST

static Suite *auth_cache_suite(void)
{
    Suite *s = suite_create("api/auth_cache");
    TCase *tc = tcase_create("cache");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, cache_hits_invalidation_and_ttl);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(auth_cache_suite)
