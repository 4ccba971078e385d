/* service/store/pg/db_pg_tokens.c - the PostgreSQL backend's tokens: count, insert,
 * get, list, revoke, touch. A revoke locks the tenant's row first, so revokes in
 * one tenant queue and the last-admin check sees every earlier revoke. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/store/pg/db_pg.h"

/* Row i of a PG_DB_TOKEN_COLS result; 0 when the stored hash is malformed. */
static int token_from(const PGresult *r, int i, pg_token *out)
{
    if (PQgetlength(r, i, 4) != 32) return 0;
    memset(out, 0, sizeof *out);
    out->seq = pgb_i64_at(r, i, 0);
    pgb_str_at(r, i, 1, out->id, sizeof out->id);
    pgb_str_at(r, i, 2, out->tenant, sizeof out->tenant);
    out->scope = !strcmp(PQgetvalue(r, i, 3), "admin") ? PG_SCOPE_ADMIN : PG_SCOPE_READ;
    memcpy(out->hash, PQgetvalue(r, i, 4), 32);
    out->created_at = pgb_i64_at(r, i, 5);
    out->expires_at = pgb_i64_at(r, i, 6);
    out->revoked_at = pgb_i64_at(r, i, 7);
    out->last_used_at = pgb_i64_at(r, i, 8);
    pgb_str_at(r, i, 9, out->minted_by, sizeof out->minted_by);
    return 1;
}

static int count_fn(PGconn *c, void *ctx, pg_error *err)
{
    PGresult *r;
    int rc = pgb_q(c, "SELECT count(*) FROM tokens", NULL, "counting tokens", &r, err);
    if (rc) return rc;
    *(int64_t *)ctx = pgb_i64_at(r, 0, 0);
    PQclear(r);
    return PG_OK;
}

int pgb_token_count(pg_db *db, int64_t *n, pg_error *err)
{
    return pgb_with_conn(PGB(db), count_fn, n, err);
}

typedef struct token_ctx {
    const pg_token *t;
    int new_tenant;
    const char *tenant, *id;
    int64_t after, now;
    size_t limit;
    pg_token *out, *list;
    size_t count;
    int found, last_admin;
    int created, has_first; /* bootstrap */
} token_ctx;

static int insert_fn(PGconn *c, void *ctx, pg_error *err)
{
    token_ctx *x = ctx;
    pgb_args a = {0};
    int rc;
    int64_t created = x->t->created_at ? x->t->created_at : pgb_now();
    if (x->new_tenant) {
        pgb_text(&a, x->t->tenant);
        pgb_i64(&a, created);
        if ((rc = pgb_q(c, "INSERT INTO tenants(id, created_at) VALUES ($1, $2)", &a,
                        "creating a tenant", NULL, err)))
            return rc;
    }
    if (x->t->minted_by[0]) {
        /* FOR SHARE: a revoke's UPDATE of the minting token waits for this
         * transaction, and this read waits for a revoke in flight and then
         * sees its result, so a mint never commits after its minter's
         * revocation (db.h). */
        a = (pgb_args){0};
        pgb_text(&a, x->t->minted_by);
        pgb_i64(&a, created);
        PGresult *r;
        if ((rc = pgb_q(c,
                        "SELECT 1 FROM tokens WHERE id = $1 AND NOT revoked AND "
                        "(expires_at IS NULL OR expires_at > $2) FOR SHARE",
                        &a, "reading the minting token", &r, err)))
            return rc;
        int usable = PQntuples(r) == 1;
        PQclear(r);
        if (!usable)
            return pg_error_set(err, PG_ESTATE,
                                "the token minting this one has been revoked or has expired");
    }
    a = (pgb_args){0};
    pgb_text(&a, x->t->id);
    pgb_text(&a, x->t->tenant);
    pgb_text(&a, x->t->scope == PG_SCOPE_ADMIN ? "admin" : "read");
    pgb_bin(&a, x->t->hash, 32);
    pgb_i64(&a, created);
    pgb_i64(&a, x->t->expires_at > 0 ? x->t->expires_at : 0);
    /* A token starting a new tenant records no minter: that tenant sees
     * nothing of the minter's (the check above still ran). */
    pgb_text(&a, x->new_tenant ? "" : x->t->minted_by);
    return pgb_q(c,
                 "INSERT INTO tokens(id, tenant_id, scope, hash, created_at, expires_at, "
                 "minted_by) VALUES ($1, $2, $3, $4, $5, nullif($6::bigint, 0), nullif($7, ''))",
                 &a, "inserting a token", NULL, err);
}

int pgb_token_insert(pg_db *db, const pg_token *t, int new_tenant, pg_error *err)
{
    token_ctx x = {.t = t, .new_tenant = new_tenant};
    return pgb_tx(PGB(db), insert_fn, &x, err);
}

/* Bootstraps on one database queue on this lock (an arbitrary constant of
 * privgen's own, next to the schema lock's), so the count and the insert
 * below are one step for every replica: exactly one of them sees no token
 * and inserts. Without it two READ COMMITTED transactions could both count
 * zero. */
#define BOOTSTRAP_LOCK "8245935278387130114"

static int bootstrap_fn(PGconn *c, void *ctx, pg_error *err)
{
    token_ctx *x = ctx;
    x->created = x->has_first = 0; /* a rerun (pgb_tx retry) starts over */
    memset(x->out, 0, sizeof *x->out);
    PGresult *r;
    int rc = pgb_q(c, "SELECT pg_advisory_xact_lock(" BOOTSTRAP_LOCK ")", NULL,
                   "taking the bootstrap lock", NULL, err);
    if (rc) return rc;
    if ((rc = pgb_q(c, "SELECT 1 FROM tokens LIMIT 1", NULL, "looking for tokens", &r, err)))
        return rc;
    int any = PQntuples(r) > 0;
    PQclear(r);
    if (any || !x->t) {
        if ((rc = pgb_q(c,
                        "SELECT " PG_DB_TOKEN_COLS " FROM tokens WHERE scope = 'admin' "
                        "ORDER BY seq LIMIT 1",
                        NULL, "reading the first admin token", &r, err)))
            return rc;
        x->has_first = PQntuples(r) == 1 && token_from(r, 0, x->out);
        PQclear(r);
        return PGB_ROLLBACK;
    }
    if ((rc = insert_fn(c, x, err))) return rc;
    x->created = 1;
    return PG_OK;
}

int pgb_token_bootstrap(pg_db *db, const pg_token *t, int *created, pg_token *first, int *has_first,
                        pg_error *err)
{
    token_ctx x = {.t = t, .new_tenant = 1, .out = first};
    int rc = pgb_tx(PGB(db), bootstrap_fn, &x, err);
    if (rc) return rc;
    *created = x.created;
    *has_first = x.created || x.has_first;
    if (x.created) *first = *t;
    return PG_OK;
}

static int get_fn(PGconn *c, void *ctx, pg_error *err)
{
    token_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->id);
    PGresult *r;
    int rc = pgb_q(c, "SELECT " PG_DB_TOKEN_COLS " FROM tokens WHERE id = $1", &a,
                   "reading a token", &r, err);
    if (rc) return rc;
    if (PQntuples(r) == 1 && token_from(r, 0, x->out)) x->found = 1;
    PQclear(r);
    return PG_OK;
}

int pgb_token_get(pg_db *db, const char *id, pg_token *out, int *found, pg_error *err)
{
    pg_token t;
    token_ctx x = {.id = id, .out = &t};
    int rc = pgb_with_conn(PGB(db), get_fn, &x, err);
    if (rc) return rc;
    *found = x.found;
    if (x.found) *out = t;
    return PG_OK;
}

static int list_fn(PGconn *c, void *ctx, pg_error *err)
{
    token_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->tenant);
    pgb_i64(&a, x->after);
    pgb_limit(&a, x->limit);
    PGresult *r;
    int rc = pgb_q(c,
                   "SELECT " PG_DB_TOKEN_COLS " FROM tokens WHERE tenant_id = $1 AND seq > $2 "
                   "ORDER BY seq LIMIT $3",
                   &a, "listing tokens", &r, err);
    if (rc) return rc;
    int n = PQntuples(r);
    free(x->list); /* a rerun (pgb_tx retry) starts over */
    x->list = NULL;
    x->count = 0;
    if (n > 0 && !(x->list = calloc((size_t)n, sizeof *x->list)))
        rc = pg_error_set(err, PG_ENOMEM, "out of memory listing tokens");
    for (int i = 0; !rc && i < n; i++)
        if (token_from(r, i, &x->list[x->count])) x->count++;
    PQclear(r);
    return rc;
}

int pgb_token_list(pg_db *db, const char *tenant, int64_t after, size_t limit, pg_token **out,
                   size_t *count, pg_error *err)
{
    token_ctx x = {.tenant = tenant, .after = after, .limit = limit};
    int rc = pgb_tx(PGB(db), list_fn, &x, err);
    if (rc || !x.count) {
        free(x.list);
        return rc;
    }
    *out = x.list;
    *count = x.count;
    return PG_OK;
}

static int revoke_fn(PGconn *c, void *ctx, pg_error *err)
{
    token_ctx *x = ctx;
    x->found = x->last_admin = 0;
    pgb_args a = {0};
    pgb_text(&a, x->tenant);
    PGresult *r;
    /* The tenant's row is the lock that orders revokes within a tenant. */
    int rc = pgb_q(c, "SELECT 1 FROM tenants WHERE id = $1 FOR UPDATE", &a, "locking a tenant",
                   NULL, err);
    if (rc) return rc;
    pgb_text(&a, x->id);
    if ((rc = pgb_q(c, "SELECT scope, revoked FROM tokens WHERE tenant_id = $1 AND id = $2", &a,
                    "reading a token", &r, err)))
        return rc;
    int exists = PQntuples(r) == 1;
    int admin = exists && !strcmp(PQgetvalue(r, 0, 0), "admin");
    int revoked = exists && pgb_i64_at(r, 0, 1) != 0;
    PQclear(r);
    if (!exists) return PGB_ROLLBACK;
    x->found = 1;
    if (revoked) return PGB_ROLLBACK;
    if (admin) {
        pgb_i64(&a, x->now);
        if ((rc = pgb_q(c,
                        "SELECT count(*) FROM tokens WHERE tenant_id = $1 AND id <> $2 AND "
                        "scope = 'admin' AND NOT revoked AND "
                        "(expires_at IS NULL OR expires_at > $3)",
                        &a, "counting admin tokens", &r, err)))
            return rc;
        x->last_admin = pgb_i64_at(r, 0, 0) == 0;
        PQclear(r);
        if (x->last_admin) return PGB_ROLLBACK;
    }
    a = (pgb_args){0};
    pgb_text(&a, x->id);
    pgb_i64(&a, x->now);
    return pgb_q(c, "UPDATE tokens SET revoked = true, revoked_at = $2 WHERE id = $1", &a,
                 "revoking a token", NULL, err);
}

int pgb_token_revoke(pg_db *db, const char *tenant, const char *id, int64_t now, int *found,
                     int *last_admin, pg_error *err)
{
    token_ctx x = {.tenant = tenant, .id = id, .now = now};
    int rc = pgb_tx(PGB(db), revoke_fn, &x, err);
    if (rc) return rc;
    *found = x.found;
    *last_admin = x.last_admin;
    return PG_OK;
}

static int touch_fn(PGconn *c, void *ctx, pg_error *err)
{
    token_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->id);
    pgb_i64(&a, x->now);
    pgb_i64(&a, PG_TOKEN_TOUCH_S);
    return pgb_q(c,
                 "UPDATE tokens SET last_used_at = $2 WHERE id = $1 AND "
                 "(last_used_at IS NULL OR last_used_at <= $2::bigint - $3::bigint)",
                 &a, "recording a token's use", NULL, err);
}

int pgb_token_touch(pg_db *db, const char *id, int64_t now, pg_error *err)
{
    token_ctx x = {.id = id, .now = now};
    return pgb_with_conn(PGB(db), touch_fn, &x, err);
}
