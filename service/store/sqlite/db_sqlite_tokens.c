/* service/store/sqlite/db_sqlite_tokens.c - the SQLite backend's tokens: insert, get,
 * list, revoke, touch (see db_sqlite.h for the locking rules). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/store/sqlite/db_sqlite.h"

/* One row of PG_DB_TOKEN_COLS into out; 0 when the stored hash is malformed. */
static int token_row(sqlite3_stmt *st, pg_token *out)
{
    if (sqlite3_column_bytes(st, 4) != 32) return 0;
    memset(out, 0, sizeof *out);
    out->seq = sqlite3_column_int64(st, 0);
    snprintf(out->id, sizeof out->id, "%s", (const char *)sqlite3_column_text(st, 1));
    snprintf(out->tenant, sizeof out->tenant, "%s", (const char *)sqlite3_column_text(st, 2));
    out->scope = strcmp((const char *)sqlite3_column_text(st, 3), "admin") == 0 ? PG_SCOPE_ADMIN
                                                                                : PG_SCOPE_READ;
    memcpy(out->hash, sqlite3_column_blob(st, 4), 32);
    out->created_at = sqlite3_column_int64(st, 5);
    out->expires_at = sqlite3_column_int64(st, 6);
    out->revoked_at = sqlite3_column_int64(st, 7);
    out->last_used_at = sqlite3_column_int64(st, 8);
    snprintf(out->minted_by, sizeof out->minted_by, "%s", (const char *)sqlite3_column_text(st, 9));
    return 1;
}

int sq_token_count(pg_db *db, int64_t *n, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    int rc = sq_int(s, "SELECT count(*) FROM tokens", 0, 0, "counting tokens", n, NULL, err);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* The statements of sq_token_insert, inside the caller's BEGIN IMMEDIATE. */
static int insert_in_tx(sq_db *s, const pg_token *t, int new_tenant, pg_error *err)
{
    int rc = PG_OK;
    sqlite3_stmt *st = NULL;
    if (t->minted_by[0]) {
        /* Under BEGIN IMMEDIATE: no revoke can commit between this read
         * and the insert (db.h). */
        rc = sq_prep(s,
                     "SELECT 1 FROM tokens WHERE id=? AND revoked_at IS NULL AND revoked=0 AND "
                     "(expires_at IS NULL OR expires_at > ?)",
                     &st, err);
        if (!rc) {
            sqlite3_bind_text(st, 1, t->minted_by, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, t->created_at);
            int r = sqlite3_step(st);
            if (r == SQLITE_DONE)
                rc = pg_error_set(err, PG_ESTATE,
                                  "the token minting this one has been revoked or has expired");
            else if (r != SQLITE_ROW)
                rc = sq_fail(s, err, "reading the minting token");
            sqlite3_finalize(st);
        }
    }
    if (!rc && new_tenant) {
        rc = sq_prep(s, "INSERT INTO tenants(id, created_at) VALUES(?,?)", &st, err);
        if (!rc) {
            sqlite3_bind_text(st, 1, t->tenant, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 2, sq_now());
            if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, "creating a tenant");
            sqlite3_finalize(st);
        }
    }
    /* seq: writers are serialized (BEGIN IMMEDIATE), so max + 1 is unique
     * and increasing; a unique index guards it anyway. */
    if (!rc)
        rc = sq_prep(s,
                     "INSERT INTO tokens(seq, id, tenant_id, scope, hash, created_at, expires_at, "
                     "minted_by) VALUES((SELECT coalesce(max(seq), 0) + 1 FROM tokens),?,?,?,?,?,?,"
                     "nullif(?, ''))",
                     &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, t->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, t->tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, t->scope == PG_SCOPE_ADMIN ? "admin" : "read", -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 4, t->hash, 32, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, t->created_at);
        if (t->expires_at > 0)
            sqlite3_bind_int64(st, 6, t->expires_at);
        else
            sqlite3_bind_null(st, 6);
        /* a token starting a new tenant records no minter (db.h) */
        sqlite3_bind_text(st, 7, new_tenant ? "" : t->minted_by, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, "storing a token");
        sqlite3_finalize(st);
    }
    return rc;
}

int sq_token_insert(pg_db *db, const pg_token *t, int new_tenant, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    int rc = sq_tx_begin(s, err);
    if (!rc) rc = insert_in_tx(s, t, new_tenant, err);
    rc = sq_tx_end(s, rc, err);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* BEGIN IMMEDIATE takes the database's write lock before the count, so of
 * two processes bootstrapping on one file (two privgend on one data dir, or
 * sharing a --db file) exactly one sees no token and inserts; the other
 * waits for the lock (busy timeout) and then sees that token. */
int sq_token_bootstrap(pg_db *db, const pg_token *t, int *created, pg_token *first, int *has_first,
                       pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    int rc = sq_tx_begin(s, err);
    sqlite3_stmt *st = NULL;
    int any = 0, inserted = 0;
    if (!rc && !(rc = sq_prep(s, "SELECT 1 FROM tokens LIMIT 1", &st, err))) {
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW)
            any = 1;
        else if (r != SQLITE_DONE)
            rc = sq_fail(s, err, "looking for tokens");
        sqlite3_finalize(st);
    }
    if (!rc && !any && t) {
        rc = insert_in_tx(s, t, 1, err);
        inserted = !rc;
    } else if (!rc) {
        rc = sq_prep(
            s, "SELECT " PG_DB_TOKEN_COLS " FROM tokens WHERE scope = 'admin' ORDER BY seq LIMIT 1",
            &st, err);
        if (!rc) {
            int r = sqlite3_step(st);
            if (r == SQLITE_ROW)
                *has_first = token_row(st, first);
            else if (r != SQLITE_DONE)
                rc = sq_fail(s, err, "reading the first admin token");
            sqlite3_finalize(st);
        }
    }
    rc = sq_tx_end(s, rc, err);
    if (!rc && inserted) {
        *created = *has_first = 1;
        *first = *t;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sq_token_get(pg_db *db, const char *id, pg_token *out, int *found, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s, "SELECT " PG_DB_TOKEN_COLS " FROM tokens WHERE id=?", &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            pg_token t;
            if (token_row(st, &t)) {
                *out = t;
                *found = 1;
            }
        } else if (r != SQLITE_DONE) {
            rc = sq_fail(s, err, "reading a token");
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sq_token_list(pg_db *db, const char *tenant, int64_t after, size_t limit, pg_token **out,
                  size_t *count, pg_error *err)
{
    sq_db *s = SQ(db);
    pg_token *v = calloc(limit < 1024 ? limit : 1024, sizeof *v);
    size_t cap = limit < 1024 ? limit : 1024, n = 0;
    if (!v) return pg_error_set(err, PG_ENOMEM, "out of memory listing tokens");
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s,
                     "SELECT " PG_DB_TOKEN_COLS " FROM tokens WHERE tenant_id=? AND seq>? "
                     "ORDER BY seq LIMIT ?",
                     &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, after);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)(limit > INT64_MAX ? INT64_MAX : limit));
        int r;
        while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
            if (n == cap && (rc = sq_grow(&v, &cap, sizeof *v, "listing tokens", err))) break;
            if (token_row(st, &v[n])) n++;
        }
        if (!rc && r != SQLITE_DONE) rc = sq_fail(s, err, "listing tokens");
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc || !n) {
        free(v);
        return rc;
    }
    *out = v;
    *count = n;
    return PG_OK;
}

/* Inside the write transaction: the token's scope and revocation, or
 * *found = 0 for a foreign or unknown id. */
static int revoke_locked(sq_db *s, const char *tenant, const char *id, int64_t now, int *found,
                         int *last_admin, pg_error *err)
{
    sqlite3_stmt *st;
    int rc = sq_prep(s, "SELECT scope, revoked FROM tokens WHERE id=? AND tenant_id=?", &st, err);
    if (rc) return rc;
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
    int r = sqlite3_step(st), admin = 0, revoked = 0;
    if (r == SQLITE_ROW) {
        *found = 1;
        admin = strcmp((const char *)sqlite3_column_text(st, 0), "admin") == 0;
        revoked = sqlite3_column_int(st, 1) != 0;
    } else if (r != SQLITE_DONE) {
        rc = sq_fail(s, err, "reading a token");
    }
    sqlite3_finalize(st);
    if (rc || !*found || revoked) return rc;
    if (admin) {
        if ((rc = sq_prep(s,
                          "SELECT count(*) FROM tokens WHERE tenant_id=? AND id<>? AND "
                          "scope='admin' AND revoked=0 AND (expires_at IS NULL OR expires_at>?)",
                          &st, err)))
            return rc;
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, now);
        if (sqlite3_step(st) == SQLITE_ROW)
            *last_admin = sqlite3_column_int64(st, 0) == 0;
        else
            rc = sq_fail(s, err, "counting admin tokens");
        sqlite3_finalize(st);
        if (rc || *last_admin) return rc;
    }
    return sq_run(s, "UPDATE tokens SET revoked=1, revoked_at=?3 WHERE id=?1", id, NULL, now,
                  "revoking a token", NULL, err);
}

int sq_token_revoke(pg_db *db, const char *tenant, const char *id, int64_t now, int *found,
                    int *last_admin, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    int f = 0, last = 0;
    int rc = sq_tx_begin(s, err);
    if (!rc) rc = revoke_locked(s, tenant, id, now, &f, &last, err);
    rc = sq_tx_end(s, rc, err);
    pthread_mutex_unlock(&s->mu);
    if (!rc) {
        *found = f;
        *last_admin = last;
    }
    return rc;
}

int sq_token_touch(pg_db *db, const char *id, int64_t now, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s,
                     "UPDATE tokens SET last_used_at=?2 WHERE id=?1 AND "
                     "(last_used_at IS NULL OR last_used_at<=?2-?3)",
                     &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, now);
        sqlite3_bind_int64(st, 3, PG_TOKEN_TOUCH_S);
        if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, "recording a token's use");
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}
