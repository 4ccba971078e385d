/* Token revocation across replicas: three real privgend
 * replicas on one PostgreSQL database.
 *
 *  - an admin token T, used on r2 and r3 (so a token cache there holds it),
 *    is revoked through r1; the moment the DELETE has returned, T gets 401
 *    on r2 and r3 for everything that writes, mints or reads a tenant's
 *    data (list and read datasets, create a dataset, mint a token, list
 *    tokens), and none of those stored anything;
 *  - a read token revoked through r1 can no longer read on r3 either;
 *  - the revoked admin token cannot mint, so no token minted by it after
 *    the revocation exists (the tenant's token list through r1 is the same
 *    before and after the attempts);
 *  - what stays cached is only the samples route (docs/replicas.md): the
 *    test does not rely on it either way.
 *
 * Before the fix, T kept working on r2/r3 for up to the cache's 10 s and
 * minted a new admin token (201) that kept working after T's entry expired. */
#include "replicas/rpl.h"
#include "support/pg_test.h"

static rpl C; /* static: the atexit cleanup may run after a test's frame */

/* POST /v1/tokens through s with token `as`; the new token into tok and its
 * id into id; returns the status. */
static long mint(const pg_srv *s, const char *as, const char *scope, char tok[96], char id[64])
{
    char body[64];
    snprintf(body, sizeof body, "{\"scope\":\"%s\"}", scope);
    pg_resp r;
    pg_http(s, "POST", "/v1/tokens", as, "application/json", body, strlen(body), NULL, &r);
    long st = r.status;
    if (st == 201) {
        snprintf(tok, 96, "%s", json_string_value(json_object_get(r.json, "token")));
        snprintf(id, 64, "%s", json_string_value(json_object_get(r.json, "id")));
    }
    pg_resp_free(&r);
    return st;
}

static long call(const pg_srv *s, const char *as, const char *method, const char *path,
                 const char *body)
{
    pg_resp r;
    pg_http(s, method, path, as, body ? "application/json" : NULL, body, body ? strlen(body) : 0,
            NULL, &r);
    long st = r.status;
    pg_resp_free(&r);
    return st;
}

/* Number of tokens of the admin's tenant, through s. */
static int tenant_tokens(const pg_srv *s, const char *admin)
{
    pg_resp r;
    pg_http(s, "GET", "/v1/tokens?limit=500", admin, NULL, NULL, 0, NULL, &r);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    int n = (int)json_array_size(json_object_get(r.json, "items"));
    pg_resp_free(&r);
    return n;
}

START_TEST(revocation_through_one_replica_holds_on_all_before_it_returns)
{
    rpl_up(&C, "revoke", 30, 5);
    char ds[64];
    rpl_dataset(&C.r[0], 10.0, 50, ds);
    char t[96], tid[64], rd[96], rid[64];
    ck_assert_int_eq(mint(&C.r[0], C.admin, "admin", t, tid), 201);
    ck_assert_int_eq(mint(&C.r[0], C.admin, "read", rd, rid), 201);
    char dpath[128];
    snprintf(dpath, sizeof dpath, "/v1/datasets/%.64s", ds);
    /* both work everywhere, and r2, r3 have seen them (a cache would now
     * hold them) */
    for (int k = 1; k < RPL_N; k++) {
        ck_assert_int_eq(call(&C.r[k], t, "GET", "/v1/datasets", NULL), 200);
        ck_assert_int_eq(call(&C.r[k], t, "GET", dpath, NULL), 200);
        ck_assert_int_eq(call(&C.r[k], rd, "GET", dpath, NULL), 200);
    }
    int before = tenant_tokens(&C.r[0], C.admin);
    /* the list names T's minter: the admin token (the caller's, "current") */
    pg_resp l;
    pg_http(&C.r[1], "GET", "/v1/tokens?limit=500", C.admin, NULL, NULL, 0, NULL, &l);
    ck_assert_int_eq(l.status, 200);
    const char *me = NULL, *tby = NULL;
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(l.json, "items"), i, it)
    {
        if (json_is_true(json_object_get(it, "current")))
            me = json_string_value(json_object_get(it, "id"));
        if (!strcmp(json_string_value(json_object_get(it, "id")), tid))
            tby = json_string_value(json_object_get(it, "minted_by"));
    }
    ck_assert_ptr_nonnull(me);
    ck_assert_ptr_nonnull(tby);
    ck_assert_str_eq(tby, me);
    pg_resp_free(&l);

    char path[96];
    snprintf(path, sizeof path, "/v1/tokens/%.64s", tid);
    ck_assert_int_eq(call(&C.r[0], C.admin, "DELETE", path, NULL), 204);
    snprintf(path, sizeof path, "/v1/tokens/%.64s", rid);
    ck_assert_int_eq(call(&C.r[0], C.admin, "DELETE", path, NULL), 204);

    /* At once (well inside any cache TTL): refused on every other replica. */
    const char *create = "{\"name\":\"x\",\"shape\":[2],\"range\":[0,1],\"privacy\":{\"model\":"
                         "\"local\",\"mechanism\":\"laplace\",\"epsilon\":1,\"sensitivity\":2,"
                         "\"noise_scale\":2}}";
    for (int k = 1; k < RPL_N; k++) {
        char t2[96], id2[64];
        ck_assert_int_eq(mint(&C.r[k], t, "admin", t2, id2), 401);
        ck_assert_int_eq(call(&C.r[k], t, "GET", "/v1/datasets", NULL), 401);
        ck_assert_int_eq(call(&C.r[k], t, "GET", dpath, NULL), 401);
        ck_assert_int_eq(call(&C.r[k], t, "GET", "/v1/tokens", NULL), 401);
        ck_assert_int_eq(call(&C.r[k], t, "POST", "/v1/datasets", create), 401);
        ck_assert_int_eq(call(&C.r[k], rd, "GET", dpath, NULL), 401);
        ck_assert_int_eq(call(&C.r[k], rd, "GET", "/v1/jobs", NULL), 401);
    }
    /* nothing was minted or created by the revoked tokens */
    ck_assert_int_eq(tenant_tokens(&C.r[0], C.admin), before);
    pg_resp r;
    pg_http(&C.r[0], "GET", "/v1/datasets", C.admin, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(r.json, "items")), 1);
    pg_resp_free(&r);
    rpl_down(&C);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("replicas_tokens");
    TCase *tc = tcase_create("revoke");
    tcase_set_timeout(tc, 150);
    tcase_add_test(tc, revocation_through_one_replica_holds_on_all_before_it_returns);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return rpl_run_suite(suite());
}
