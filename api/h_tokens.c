/* POST /v1/tokens: an admin mints a token in its tenant or a new one. */
#include <string.h>

#include "api/internal.h"
#include "service/auth.h"

void pg_h_tokens_create(pg_req *r)
{
    json_t *body = pg_api_body_json(r);
    if (!body) return;
    static const char *const allowed[] = {"scope", "new_tenant", NULL};
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
    int fresh = jn && json_is_true(jn);
    char token[PG_TOKEN_MAX];
    pg_token rec;
    pg_error err = {0};
    if (pg_auth_mint(r->app->db, !strcmp(scope, "admin") ? PG_SCOPE_ADMIN : PG_SCOPE_READ,
                     fresh ? NULL : r->tok.tenant, token, &rec, &err)) {
        pg_api_fail(r, &err);
        goto out;
    }
    pg_api_send_json(r, 201,
                     json_pack("{s:s,s:s,s:s,s:s,s:I}", "id", rec.id, "token", token, "scope",
                               scope, "tenant", rec.tenant, "created_at",
                               (json_int_t)rec.created_at));
    memset(token, 0, sizeof token);
out:
    json_decref(body);
}
