/* service/auth.h - bearer tokens.
 *
 * A token reads "pgt_<16 hex id>_<32 hex secret>" (128 random bits from
 * getrandom). The database keeps the id, tenant, scope and the SHA-256 of the
 * whole token, never the token; verification looks the id up and compares
 * hashes in constant time. The id ("tok_<16 hex>") is what logs show.
 *
 * Tenancy: POST /v1/tokens mints a token in the caller's tenant unless the
 * caller asks for a new tenant; resources are visible only within a tenant.
 */
#ifndef PG_SVC_AUTH_H
#define PG_SVC_AUTH_H

#include "service/db.h"

#define PG_TOKEN_MAX 64

/* Mints a token of `scope` in `tenant` (NULL: a fresh tenant) and stores its
 * hash. The plaintext goes to token_out (PG_TOKEN_MAX bytes), the record to rec. */
int pg_auth_mint(pg_db *db, int scope, const char *tenant, char token_out[PG_TOKEN_MAX],
                 pg_token *rec, pg_error *err);

/* On the first start (no tokens at all) mints an admin token in a new tenant
 * and writes it to DATA_DIR/admin.token with mode 0600. *created says so. */
int pg_auth_bootstrap(pg_db *db, const char *data_dir, int *created, pg_error *err);

/* Verifies an Authorization header value. *ok = 0 for a missing, malformed,
 * unknown or wrong token; errors are storage failures only. */
int pg_auth_verify(pg_db *db, const char *authorization, pg_token *out, int *ok, pg_error *err);

/* Verification cache: the hot path of every authenticated request skips the
 * database. Entries map the SHA-256 of a whole token (never the token) to
 * its record and live at most `ttl_seconds` (a bound on how long a change
 * made without an invalidation call goes unseen). Misses and failures are
 * not cached, so unknown tokens always reach the database.
 *
 * Invalidation contract: whatever revokes, deletes, re-scopes or expires a
 * token must call pg_auth_cache_invalidate(cache, token_id) (or
 * pg_auth_cache_clear) after its change commits; the next request with that
 * token then reads the database again. A change made by another replica (a
 * shared PostgreSQL database) reaches this one's cache only through the TTL.
 * Thread-safe. */
typedef struct pg_auth_cache pg_auth_cache;

/* NULL when out of memory (pg_auth_verify_cached then always reads the database). */
pg_auth_cache *pg_auth_cache_create(int slots, double ttl_seconds);
void pg_auth_cache_free(pg_auth_cache *c);
void pg_auth_cache_invalidate(pg_auth_cache *c, const char *token_id);
void pg_auth_cache_clear(pg_auth_cache *c);
/* Hits and misses so far (for tests and metrics). */
void pg_auth_cache_stats(pg_auth_cache *c, unsigned long long *hits, unsigned long long *misses);

/* pg_auth_verify through the cache (c may be NULL). */
int pg_auth_verify_cached(pg_auth_cache *c, pg_db *db, const char *authorization, pg_token *out,
                          int *ok, pg_error *err);

/* Random id "<prefix><16 hex>" into out (PG_ID_MAX). */
int pg_auth_random_id(const char *prefix, char out[PG_ID_MAX], pg_error *err);

#endif
