#include "service/auth.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/core/rng.h"
#include "service/sha256.h"

static void hex(const unsigned char *b, size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[b[i] >> 4];
        out[2 * i + 1] = hx[b[i] & 15];
    }
    out[2 * n] = '\0';
}

int pg_auth_random_id(const char *prefix, char out[PG_ID_MAX], pg_error *err)
{
    unsigned char r[8];
    char h[17];
    if (pg_os_random(r, sizeof r, err)) return PG_EIO;
    hex(r, sizeof r, h);
    snprintf(out, PG_ID_MAX, "%s%s", prefix, h);
    return PG_OK;
}

/* Fills a fresh token and its record without storing anything. */
static int make_token(int scope, const char *tenant, int64_t expires_at,
                      char token_out[PG_TOKEN_MAX], pg_token *rec, pg_error *err)
{
    unsigned char r[24];
    if (pg_os_random(r, sizeof r, err)) return PG_EIO;
    char idh[17], secret[33];
    hex(r, 8, idh);
    hex(r + 8, 16, secret);
    memset(rec, 0, sizeof *rec);
    snprintf(rec->id, sizeof rec->id, "tok_%s", idh);
    if (tenant)
        snprintf(rec->tenant, sizeof rec->tenant, "%s", tenant);
    else if (pg_auth_random_id("ten_", rec->tenant, err))
        return PG_EIO;
    rec->scope = scope;
    rec->created_at = (int64_t)time(NULL);
    rec->expires_at = expires_at > 0 ? expires_at : 0;
    snprintf(token_out, PG_TOKEN_MAX, "pgt_%s_%s", idh, secret);
    pg_sha256_digest(token_out, strlen(token_out), rec->hash);
    return PG_OK;
}

int pg_auth_mint(pg_db *db, int scope, const char *tenant, char token_out[PG_TOKEN_MAX],
                 pg_token *rec, pg_error *err)
{
    return pg_auth_mint_until(db, scope, tenant, 0, token_out, rec, err);
}

int pg_auth_mint_until(pg_db *db, int scope, const char *tenant, int64_t expires_at,
                       char token_out[PG_TOKEN_MAX], pg_token *rec, pg_error *err)
{
    return pg_auth_mint_by(db, NULL, scope, tenant, expires_at, token_out, rec, err);
}

int pg_auth_mint_by(pg_db *db, const char *minter_id, int scope, const char *tenant,
                    int64_t expires_at, char token_out[PG_TOKEN_MAX], pg_token *rec, pg_error *err)
{
    if (make_token(scope, tenant, expires_at, token_out, rec, err)) return PG_EIO;
    if (minter_id) snprintf(rec->minted_by, sizeof rec->minted_by, "%s", minter_id);
    int rc = pg_db_token_insert(db, rec, tenant == NULL, err);
    if (rc) memset(token_out, 0, PG_TOKEN_MAX);
    return rc;
}

int pg_auth_bootstrap(pg_db *db, const char *data_dir, int *created, pg_token *first,
                      int *has_first, pg_error *err)
{
    *created = *has_first = 0;
    memset(first, 0, sizeof *first);
    int64_t n;
    int rc = pg_db_token_count(db, &n, err);
    if (rc) return rc;
    if (n > 0) return pg_db_token_bootstrap(db, NULL, created, first, has_first, err);
    char path[PATH_MAX], tmp[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/admin.token", data_dir);
    /* A name of this process's own: replicas sharing a data dir may all get
     * here at once, and one fixed name would let one rename another's file
     * (with a token that never got stored) over admin.token. */
    snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
    char token[PG_TOKEN_MAX + 1];
    pg_token rec;
    if (make_token(PG_SCOPE_ADMIN, NULL, 0, token, &rec, err)) return PG_EIO;
    /* Order: durable file first, then the hash, then the rename. A crash
     * never leaves a stored admin token whose plaintext exists nowhere. */
    size_t len = strlen(token);
    token[len] = '\n';
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        memset(token, 0, sizeof token);
        return pg_error_set(err, PG_EIO, "cannot create %s: %s", tmp, strerror(errno));
    }
    int bad = write(fd, token, len + 1) != (ssize_t)(len + 1) || fchmod(fd, 0600) || fsync(fd);
    bad |= close(fd) != 0;
    memset(token, 0, sizeof token);
    if (bad) {
        unlink(tmp);
        return pg_error_set(err, PG_EIO, "cannot write %s: %s", tmp, strerror(errno));
    }
    /* Another replica may have stored the first token since the count: the
     * bootstrap transaction decides, and the loser's file goes. */
    rc = pg_db_token_bootstrap(db, &rec, created, first, has_first, err);
    if (rc || !*created) {
        unlink(tmp);
        return rc;
    }
    if (rename(tmp, path))
        return pg_error_set(err, PG_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    return PG_OK;
}

static int is_hex(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'))) return 0;
    return 1;
}

/* The token text of an Authorization value: NULL unless it is well formed
 * (pgt_ + 16 hex + _ + 32 hex). */
static const char *bearer_token(const char *authorization, size_t *len)
{
    if (!authorization || strncmp(authorization, "Bearer ", 7) != 0) return NULL;
    const char *t = authorization + 7;
    while (*t == ' ') t++;
    size_t n = strlen(t);
    while (n && (t[n - 1] == ' ' || t[n - 1] == '\t')) n--;
    if (n != 53 || strncmp(t, "pgt_", 4) || t[20] != '_' || !is_hex(t + 4, 16) ||
        !is_hex(t + 21, 32))
        return NULL;
    *len = n;
    return t;
}

/* The database path of a check: h is the SHA-256 of the token text t. */
static int check_store(pg_db *db, const char *t, const unsigned char h[32], int64_t now,
                       pg_token *out, int *state, pg_error *err)
{
    char id[PG_ID_MAX];
    snprintf(id, sizeof id, "tok_%.16s", t + 4);
    pg_token rec;
    int found;
    int rc = pg_db_token_get(db, id, &rec, &found, err);
    if (rc) return rc;
    if (!found || !pg_ct_equal(h, rec.hash, 32)) return PG_OK;
    /* Only now, with the secret proven, may the answer say more. */
    if (rec.revoked_at)
        *state = PG_TOKEN_REVOKED;
    else if (rec.expires_at && now >= rec.expires_at)
        *state = PG_TOKEN_EXPIRED;
    else {
        /* Bookkeeping, not a gate: a failed write must not refuse a valid
         * token (the database answered the read a moment ago). */
        if (!rec.last_used_at || now - rec.last_used_at >= PG_TOKEN_TOUCH_S)
            pg_db_token_touch(db, id, now, NULL);
        *out = rec;
        *state = PG_TOKEN_OK;
    }
    return PG_OK;
}

int pg_auth_check(pg_db *db, const char *authorization, int64_t now, pg_token *out, int *state,
                  pg_error *err)
{
    return pg_auth_check_cached(NULL, db, authorization, now, out, state, err);
}

int pg_auth_verify(pg_db *db, const char *authorization, pg_token *out, int *ok, pg_error *err)
{
    int state;
    int rc = pg_auth_check(db, authorization, (int64_t)time(NULL), out, &state, err);
    *ok = !rc && state == PG_TOKEN_OK;
    return rc;
}

int pg_auth_recheck(pg_db *db, const char *tenant, const char *id, int64_t now, int *state,
                    pg_error *err)
{
    pg_token t;
    int found = 0;
    *state = PG_TOKEN_INVALID;
    int rc = pg_db_token_get(db, id, &t, &found, err);
    if (rc || !found || strcmp(t.tenant, tenant)) return rc;
    *state = t.revoked_at                          ? PG_TOKEN_REVOKED
             : t.expires_at && now >= t.expires_at ? PG_TOKEN_EXPIRED
                                                   : PG_TOKEN_OK;
    return PG_OK;
}

int pg_auth_revoke(pg_auth_cache *c, pg_db *db, const char *tenant, const char *id, int64_t now,
                   int *found, int *last_admin, pg_error *err)
{
    int rc = pg_db_token_revoke(db, tenant, id, now, found, last_admin, err);
    if (!rc && *found && !*last_admin) pg_auth_cache_invalidate(c, id);
    return rc;
}

int pg_auth_list(pg_db *db, const char *tenant, int64_t after, size_t limit, pg_token **out,
                 size_t *count, int64_t *next, pg_error *err)
{
    pg_token *list;
    size_t n;
    /* One extra row tells whether another page exists. */
    int rc = pg_db_token_list(db, tenant, after, limit + 1, &list, &n, err);
    if (rc) return rc;
    *next = n > limit ? list[limit - 1].seq : 0;
    *count = n > limit ? limit : n;
    *out = list;
    return PG_OK;
}

/* ---- verification cache ---------------------------------------------------- */

typedef struct slot {
    int used;
    unsigned char hash[32];
    pg_token rec;
    double at; /* monotonic seconds when stored */
} slot;

struct pg_auth_cache {
    pthread_mutex_t mu;
    slot *slots;
    size_t n;
    double ttl;
    unsigned long long hits, misses;
};

static double mono_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

pg_auth_cache *pg_auth_cache_create(int slots, double ttl_seconds)
{
    if (slots < 1) slots = 1;
    pg_auth_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->slots = calloc((size_t)slots, sizeof *c->slots);
    if (!c->slots) {
        free(c);
        return NULL;
    }
    c->n = (size_t)slots;
    c->ttl = ttl_seconds;
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void pg_auth_cache_free(pg_auth_cache *c)
{
    if (!c) return;
    pthread_mutex_destroy(&c->mu);
    free(c->slots);
    free(c);
}

void pg_auth_cache_invalidate(pg_auth_cache *c, const char *token_id)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n; i++)
        if (c->slots[i].used && !strcmp(c->slots[i].rec.id, token_id)) c->slots[i].used = 0;
    pthread_mutex_unlock(&c->mu);
}

void pg_auth_cache_clear(pg_auth_cache *c)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->n; i++) c->slots[i].used = 0;
    pthread_mutex_unlock(&c->mu);
}

void pg_auth_cache_stats(pg_auth_cache *c, unsigned long long *hits, unsigned long long *misses)
{
    *hits = *misses = 0;
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    *hits = c->hits;
    *misses = c->misses;
    pthread_mutex_unlock(&c->mu);
}

int pg_auth_check_cached(pg_auth_cache *c, pg_db *db, const char *authorization, int64_t now,
                         pg_token *out, int *state, pg_error *err)
{
    *state = PG_TOKEN_INVALID;
    size_t len;
    const char *t = bearer_token(authorization, &len);
    if (!t) return PG_OK;
    unsigned char h[32];
    pg_sha256_digest(t, len, h);
    /* SHA-256 output is uniform: its first bytes index the table. */
    size_t i = c ? ((size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16) % c->n : 0;
    if (c) {
        double mono = mono_seconds();
        pthread_mutex_lock(&c->mu);
        slot *sl = &c->slots[i];
        int hit = sl->used && mono - sl->at < c->ttl && pg_ct_equal(h, sl->hash, 32);
        if (hit) *out = sl->rec;
        c->hits += (unsigned long long)hit;
        c->misses += (unsigned long long)!hit;
        pthread_mutex_unlock(&c->mu);
        /* Only valid tokens are cached; expiry is checked on every hit, so a
         * cached token stops working the second it expires. */
        if (hit && !(out->expires_at && now >= out->expires_at)) {
            *state = PG_TOKEN_OK;
            return PG_OK;
        }
    }
    int rc = check_store(db, t, h, now, out, state, err);
    if (rc || *state != PG_TOKEN_OK || !c) return rc;
    pthread_mutex_lock(&c->mu);
    c->slots[i] = (slot){1, {0}, *out, mono_seconds()};
    memcpy(c->slots[i].hash, h, 32);
    pthread_mutex_unlock(&c->mu);
    return PG_OK;
}

int pg_auth_verify_cached(pg_auth_cache *c, pg_db *db, const char *authorization, pg_token *out,
                          int *ok, pg_error *err)
{
    int state;
    int rc = pg_auth_check_cached(c, db, authorization, (int64_t)time(NULL), out, &state, err);
    *ok = !rc && state == PG_TOKEN_OK;
    return rc;
}
