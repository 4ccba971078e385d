/* /v1/tokens: an admin mints (optionally expiring) tokens in its tenant or a
 * new one, lists its tenant's tokens (never a secret or a hash) and revokes
 * them; any token may revoke itself. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/internal.h"
#include "service/auth.h"

/* Bounds of a token's lifetime: long enough to use, short enough that a
 * forgotten token does not outlive its purpose by decades. */
#define TOKEN_TTL_MIN 60
#define TOKEN_TTL_MAX (10LL * 365 * 86400)

static json_t *opt_time(int64_t t)
{
    return t ? json_integer((json_int_t)t) : json_null();
}

/* The public view of a token: what it is and whether it still works. */
static json_t *token_json(const pg_token *t, int64_t now, const char *caller)
{
    const char *status = t->revoked_at                           ? "revoked"
                         : t->expires_at && now >= t->expires_at ? "expired"
                                                                 : "active";
    return json_pack("{s:s,s:s,s:s,s:I,s:o,s:b,s:o,s:o,s:b,s:o}", "id", t->id, "scope",
                     t->scope == PG_SCOPE_ADMIN ? "admin" : "read", "status", status, "created_at",
                     (json_int_t)t->created_at, "expires_at", opt_time(t->expires_at), "revoked",
                     t->revoked_at != 0, "revoked_at", opt_time(t->revoked_at), "last_used_at",
                     opt_time(t->last_used_at), "current", !strcmp(t->id, caller), "minted_by",
                     t->minted_by[0] ? json_string(t->minted_by) : json_null());
}

/* expires_in / expires_at of a create body into *expires_at (0: never).
 * Returns 0, or -1 with a 422 queued. */
static int parse_expiry(pg_req *r, json_t *body, int64_t now, int64_t *expires_at)
{
    json_t *ji = json_object_get(body, "expires_in"), *ja = json_object_get(body, "expires_at");
    *expires_at = 0;
    if (ji && ja && !json_is_null(ji) && !json_is_null(ja)) {
        pg_api_problem(r, 422, "give expires_in or expires_at, not both", "expires_at",
                       "not together with expires_in");
        return -1;
    }
    char msg[128];
    if (ji && !json_is_null(ji)) {
        json_int_t v = json_is_integer(ji) ? json_integer_value(ji) : -1;
        if (v < TOKEN_TTL_MIN || v > TOKEN_TTL_MAX) {
            snprintf(msg, sizeof msg, "must be an integer number of seconds from %d to %lld",
                     TOKEN_TTL_MIN, (long long)TOKEN_TTL_MAX);
            pg_api_problem(r, 422, "expires_in is out of range", "expires_in", msg);
            return -1;
        }
        *expires_at = now + (int64_t)v;
    } else if (ja && !json_is_null(ja)) {
        json_int_t v = json_is_integer(ja) ? json_integer_value(ja) : -1;
        if (v < now + TOKEN_TTL_MIN || v > now + TOKEN_TTL_MAX) {
            snprintf(msg, sizeof msg,
                     "must be a unix time (integer seconds) from %d s to 10 years ahead of the "
                     "server's clock (now %lld)",
                     TOKEN_TTL_MIN, (long long)now);
            pg_api_problem(r, 422, "expires_at is out of range", "expires_at", msg);
            return -1;
        }
        *expires_at = (int64_t)v;
    }
    return 0;
}

void pg_h_tokens_create(pg_req *r)
{
    json_t *body = pg_api_body_json(r);
    if (!body) return;
    static const char *const allowed[] = {"scope", "new_tenant", "expires_in", "expires_at", NULL};
    if (pg_api_only_fields(r, body, NULL, allowed)) goto out;
    json_t *js = json_object_get(body, "scope"), *jn = json_object_get(body, "new_tenant");
    const char *scope = json_string_value(js);
    if (!scope || (strcmp(scope, "admin") && strcmp(scope, "read"))) {
        pg_api_problem(r, 422, "scope must be \"admin\" or \"read\"", "scope",
                       "must be \"admin\" or \"read\"");
        goto out;
    }
    if (jn && !json_is_boolean(jn)) {
        pg_api_problem(r, 422, "new_tenant must be a boolean", "new_tenant", "must be a boolean");
        goto out;
    }
    int64_t now = (int64_t)time(NULL), expires_at;
    if (parse_expiry(r, body, now, &expires_at)) goto out;
    int fresh = jn && json_is_true(jn);
    char token[PG_TOKEN_MAX];
    pg_token rec;
    pg_error err = {0};
    /* The caller's own revocation or expiry is re-read inside the insert's
     * transaction: one committed on another replica after this request's
     * token check still stops the mint. */
    if (pg_auth_mint_by(r->app->db, r->tok.id,
                        !strcmp(scope, "admin") ? PG_SCOPE_ADMIN : PG_SCOPE_READ,
                        fresh ? NULL : r->tok.tenant, expires_at, token, &rec, &err)) {
        if (err.code == PG_ESTATE)
            pg_api_problem(r, 401, "this token has been revoked or has expired", NULL, NULL);
        else
            pg_api_fail(r, &err);
        goto out;
    }
    pg_api_send_json(r, 201,
                     json_pack("{s:s,s:s,s:s,s:s,s:I,s:o}", "id", rec.id, "token", token, "scope",
                               scope, "tenant", rec.tenant, "created_at",
                               (json_int_t)rec.created_at, "expires_at", opt_time(expires_at)));
    memset(token, 0, sizeof token);
out:
    json_decref(body);
}

void pg_h_tokens_list(pg_req *r)
{
    long limit;
    long long after;
    if (pg_api_page_params(r, &limit, &after)) return;
    pg_token *list;
    size_t n;
    int64_t next;
    pg_error err = {0};
    if (pg_auth_list(r->app->db, r->tok.tenant, after, (size_t)limit, &list, &n, &next, &err)) {
        pg_api_fail(r, &err);
        return;
    }
    int64_t now = (int64_t)time(NULL);
    json_t *items = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(items, token_json(&list[i], now, r->tok.id));
    free(list);
    pg_api_send_page(r, items, next);
}

void pg_h_tokens_revoke(pg_req *r)
{
    const char *id = r->params[0];
    if (r->tok.scope != PG_SCOPE_ADMIN && strcmp(id, r->tok.id)) {
        pg_api_problem(r, 403, "a read token may revoke only itself", NULL, NULL);
        return;
    }
    int found, last_admin;
    pg_error err = {0};
    int rc = pg_auth_revoke(r->app->auth_cache, r->app->db, r->tok.tenant, id, (int64_t)time(NULL),
                            &found, &last_admin, &err);
    if (pg_api_answer_lookup(r, rc, &err, &found, "no such token")) return;
    if (last_admin) {
        pg_api_problem(r, 409,
                       "this is the tenant's last usable admin token: revoking it would lock the "
                       "tenant out; mint another admin token (POST /v1/tokens) first",
                       NULL, NULL);
        return;
    }
    pg_api_send_text(r, 204, NULL, NULL, 0);
}
