/* service/auth.h - bearer tokens.
 *
 * A token reads "pgt_<16 hex id>_<32 hex secret>" (128 random bits from
 * getrandom). The database keeps the id, tenant, scope and the SHA-256 of the
 * whole token, never the token; verification looks the id up and compares
 * hashes in constant time. The id ("tok_<16 hex>") is what logs show.
 *
 * Tenancy: POST /v1/tokens mints a token in the caller's tenant unless the
 * caller asks for a new tenant; resources are visible only within a tenant.
 *
 * Lifetime: a token may carry an expiry (unix seconds; expired when now >=
 * expires_at) and may be revoked (pg_auth_revoke). Both are final. A
 * tenant's last usable admin token cannot be revoked (it would lock the
 * tenant out); let it expire or mint another admin token first.
 *
 * Revocation and caches: pg_auth_revoke drops the token from this process's
 * cache after the revocation commits, so the next request with it gets 401
 * here. A cache in another privgend replica sharing the database is not
 * told: there a cached revoked token keeps passing pg_auth_check_cached
 * until its entry expires (the TTL). The API therefore consults the cache
 * only on routes that write nothing and return no private data
 * (api/internal.h, PG_AUTH_READ_CACHED); every other check reads the
 * database (c = NULL), and minting (pg_auth_mint_by) re-reads the minting
 * token inside the insert's transaction, so a token revoked through any
 * replica can neither act nor mint once its revoke has returned.
 */
#ifndef PG_SVC_AUTH_H
#define PG_SVC_AUTH_H

#include "service/store/db.h"

#define PG_TOKEN_MAX 64

/* Mints a token of `scope` in `tenant` (NULL: a fresh tenant) and stores its
 * hash. The plaintext goes to token_out (PG_TOKEN_MAX bytes), the record to
 * rec. pg_auth_mint_until: expiring at expires_at (unix seconds; 0: never). */
int pg_auth_mint(pg_db *db, int scope, const char *tenant, char token_out[PG_TOKEN_MAX],
                 pg_token *rec, pg_error *err);
int pg_auth_mint_until(pg_db *db, int scope, const char *tenant, int64_t expires_at,
                       char token_out[PG_TOKEN_MAX], pg_token *rec, pg_error *err);
/* pg_auth_mint_until on behalf of token minter_id (recorded as the new
 * token's minted_by): refused with PG_ESTATE, nothing stored, when the
 * minter is revoked or expired at the moment of the insert, as read inside
 * its transaction (pg_db_token_insert), whatever any cache says. */
int pg_auth_mint_by(pg_db *db, const char *minter_id, int scope, const char *tenant,
                    int64_t expires_at, char token_out[PG_TOKEN_MAX], pg_token *rec, pg_error *err);

/* On the first start (no tokens at all) mints an admin token in a new tenant
 * and writes it to DATA_DIR/admin.token with mode 0600; *created says so.
 * Replicas starting at once on one empty database race safely: exactly one
 * creates the token (pg_db_token_bootstrap), the others store and write
 * nothing. *first is then the oldest admin token (*has_first = 0: none),
 * whose plaintext only the data dir of the replica that created it has. */
int pg_auth_bootstrap(pg_db *db, const char *data_dir, int *created, pg_token *first,
                      int *has_first, pg_error *err);

/* What pg_auth_check found. REVOKED and EXPIRED are reported only for a
 * token whose secret matched: whoever learns them already holds the token,
 * so an unauthenticated caller learns nothing about which ids exist. */
enum pg_token_state {
    PG_TOKEN_OK = 1,
    PG_TOKEN_INVALID, /* missing, malformed, unknown, or the wrong secret */
    PG_TOKEN_REVOKED,
    PG_TOKEN_EXPIRED,
};

/* Checks an Authorization header value at time `now` (unix seconds);
 * *state is a pg_token_state, *out the record when PG_TOKEN_OK (as read,
 * before this use). A valid token's last use is recorded at most once a
 * minute (pg_db_token_touch, best effort). Errors are storage failures
 * only. */
int pg_auth_check(pg_db *db, const char *authorization, int64_t now, pg_token *out, int *state,
                  pg_error *err);

/* pg_auth_check at the current time; *ok = 1 only for PG_TOKEN_OK. */
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

/* pg_auth_check through the cache (c may be NULL: the database every time).
 * A hit skips the database and the last-use bookkeeping; its expiry is
 * still checked against `now`. */
int pg_auth_check_cached(pg_auth_cache *c, pg_db *db, const char *authorization, int64_t now,
                         pg_token *out, int *state, pg_error *err);
/* pg_auth_check_cached at the current time; *ok = 1 only for PG_TOKEN_OK. */
int pg_auth_verify_cached(pg_auth_cache *c, pg_db *db, const char *authorization, pg_token *out,
                          int *ok, pg_error *err);

/* Re-checks, at `now`, token id of tenant that passed a check earlier, for
 * a response that lasts (an event stream): *state PG_TOKEN_OK while it is
 * unrevoked and unexpired, PG_TOKEN_REVOKED / PG_TOKEN_EXPIRED once not,
 * PG_TOKEN_INVALID when it is gone or names another tenant. Reads the
 * database, never a cache (one read by primary key): a revoke committed
 * through any replica is seen by the next re-check. Errors are storage
 * failures only. */
int pg_auth_recheck(pg_db *db, const char *tenant, const char *id, int64_t now, int *state,
                    pg_error *err);

/* Revokes token id of tenant at `now` (pg_db_token_revoke: *found = 0 for a
 * foreign or unknown id, *last_admin = 1 when refused as the tenant's last
 * usable admin token), then drops it from this process's cache c (may be
 * NULL). Other replicas' caches see the revocation within their TTL; their
 * database checks (and every mint by the token) see it at once. */
int pg_auth_revoke(pg_auth_cache *c, pg_db *db, const char *tenant, const char *id, int64_t now,
                   int *found, int *last_admin, pg_error *err);

/* One page of tenant's tokens, revoked ones included: up to `limit` with
 * a cursor past `after`, oldest first, in *out (malloc'ed, free(); NULL
 * when *count is 0). *next is the cursor of the next page, 0 when this one
 * is the last. Records carry the tokens' hashes: never show them. */
int pg_auth_list(pg_db *db, const char *tenant, int64_t after, size_t limit, pg_token **out,
                 size_t *count, int64_t *next, pg_error *err);

/* Random id "<prefix><16 hex>" into out (PG_ID_MAX). */
int pg_auth_random_id(const char *prefix, char out[PG_ID_MAX], pg_error *err);

#endif
