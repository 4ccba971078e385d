/* Token lifetime through the storage contract and service/auth.h, on the
 * backend PRIVGEN_TEST_DB names: list order and pagination, tenancy,
 * revocation (idempotent, the last admin refused, two admins racing),
 * expiry and last use judged by a clock the test passes in. */
#include <pthread.h>

#include "db_support.h"
#include "service/auth.h"

static void setup(void)
{
    pg_test_db_setup();
}

static void teardown(void)
{
    pg_test_db_teardown();
}

/* A token of tenant (created when fresh) with a recognisable hash. */
static void put_token(pg_db *db, const char *tenant, int fresh, int scope, int64_t created,
                      int64_t expires, pg_token *out)
{
    pg_token t = {0};
    pg_test_uid(t.id, sizeof t.id, "tok_");
    snprintf(t.tenant, sizeof t.tenant, "%s", tenant);
    t.scope = scope;
    for (int i = 0; i < 32; i++) t.hash[i] = (unsigned char)(created + i);
    t.created_at = created;
    t.expires_at = expires;
    pg_error err = {0};
    ck_assert_msg(pg_db_token_insert(db, &t, fresh, &err) == PG_OK, "%s", err.msg);
    *out = t;
}

START_TEST(list_is_ordered_paginated_and_per_tenant)
{
    pg_db *db = pg_test_db_open();
    char ta[PG_ID_MAX], tb[PG_ID_MAX];
    pg_test_uid(ta, sizeof ta, "ten_");
    pg_test_uid(tb, sizeof tb, "ten_");
    enum { N = 7 };
    pg_token mine[N], other;
    /* created_at deliberately not increasing: order is insertion order. */
    for (int i = 0; i < N; i++) {
        put_token(db, ta, i == 0, i % 3 ? PG_SCOPE_READ : PG_SCOPE_ADMIN, 2000 - i,
                  i == 2 ? 5000 : 0, &mine[i]);
        if (i == 3) put_token(db, tb, 1, PG_SCOPE_ADMIN, 3000, 0, &other);
    }
    /* Pages of 3 walk all seven exactly once, in insertion order. */
    int64_t after = 0;
    size_t seen = 0;
    for (int page = 0; page < 4; page++) {
        pg_token *list;
        size_t n;
        ck_assert_int_eq(pg_db_token_list(db, ta, after, 3, &list, &n, NULL), PG_OK);
        ck_assert_uint_eq(n, seen + 3 <= N ? 3 : N - seen);
        for (size_t i = 0; i < n; i++) {
            const pg_token *t = &list[i];
            const pg_token *want = &mine[seen + i];
            ck_assert_str_eq(t->id, want->id);
            ck_assert_str_eq(t->tenant, ta);
            ck_assert_int_eq(t->scope, want->scope);
            ck_assert_int_eq(t->created_at, want->created_at);
            ck_assert_int_eq(t->expires_at, want->expires_at);
            ck_assert_int_eq(t->revoked_at, 0);
            ck_assert(t->seq > after);
            after = t->seq;
        }
        seen += n;
        free(list);
        if (!n) break;
    }
    ck_assert_uint_eq(seen, N);
    /* The other tenant sees only its own token. */
    pg_token *list;
    size_t n;
    ck_assert_int_eq(pg_db_token_list(db, tb, 0, 100, &list, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(list[0].id, other.id);
    free(list);
    ck_assert_int_eq(pg_db_token_list(db, "ten_nobody", 0, 100, &list, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(list);
    ck_assert_int_eq(pg_db_token_list(db, ta, 0, 0, &list, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 0);
    pg_db_close(db);
}
END_TEST

START_TEST(revoke_tenancy_idempotence_and_last_admin)
{
    pg_db *db = pg_test_db_open();
    char ta[PG_ID_MAX], tb[PG_ID_MAX];
    pg_test_uid(ta, sizeof ta, "ten_");
    pg_test_uid(tb, sizeof tb, "ten_");
    pg_token a1, a2, r1, b1, aexp;
    put_token(db, ta, 1, PG_SCOPE_ADMIN, 100, 0, &a1);
    put_token(db, ta, 0, PG_SCOPE_ADMIN, 101, 0, &a2);
    put_token(db, ta, 0, PG_SCOPE_READ, 102, 0, &r1);
    put_token(db, ta, 0, PG_SCOPE_ADMIN, 103, 1000, &aexp); /* expires at 1000 */
    put_token(db, tb, 1, PG_SCOPE_ADMIN, 104, 0, &b1);
    int found, last;
    pg_token got;
    /* Another tenant's token and an unknown id are "not found", unchanged. */
    ck_assert_int_eq(pg_db_token_revoke(db, ta, b1.id, 500, &found, &last, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_token_revoke(db, ta, "tok_none", 500, &found, &last, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_token_get(db, b1.id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(got.revoked_at, 0);
    /* A read token goes; revoking it again is a no-op keeping the time. */
    ck_assert_int_eq(pg_db_token_revoke(db, ta, r1.id, 500, &found, &last, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(last, 0);
    ck_assert_int_eq(pg_db_token_revoke(db, ta, r1.id, 600, &found, &last, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(pg_db_token_get(db, r1.id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(got.revoked_at, 500);
    /* Three admins (one expiring at 1000): at time 500, a1 may go. */
    ck_assert_int_eq(pg_db_token_revoke(db, ta, a1.id, 500, &found, &last, NULL), PG_OK);
    ck_assert_int_eq(last, 0);
    /* At 2000 aexp has expired: a2 is the last usable admin, refused. */
    ck_assert_int_eq(pg_db_token_revoke(db, ta, a2.id, 2000, &found, &last, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(last, 1);
    ck_assert_int_eq(pg_db_token_get(db, a2.id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(got.revoked_at, 0);
    /* At 900 aexp still counts, so a2 may go, and then aexp is the last. */
    ck_assert_int_eq(pg_db_token_revoke(db, ta, a2.id, 900, &found, &last, NULL), PG_OK);
    ck_assert_int_eq(last, 0);
    ck_assert_int_eq(pg_db_token_revoke(db, ta, aexp.id, 950, &found, &last, NULL), PG_OK);
    ck_assert_int_eq(last, 1);
    /* The list shows revoked tokens with their time. */
    pg_token *list;
    size_t n;
    ck_assert_int_eq(pg_db_token_list(db, ta, 0, 100, &list, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 4);
    ck_assert_int_eq(list[0].revoked_at, 500); /* a1 */
    ck_assert_int_eq(list[1].revoked_at, 900); /* a2 */
    ck_assert_int_eq(list[2].revoked_at, 500); /* r1 */
    ck_assert_int_eq(list[3].revoked_at, 0);   /* aexp */
    free(list);
    /* Tenant b's only admin is refused too. */
    ck_assert_int_eq(pg_db_token_revoke(db, tb, b1.id, 500, &found, &last, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(last, 1);
    pg_db_close(db);
}
END_TEST

typedef struct racer {
    pg_db *db;
    const char *tenant, *id;
    int rc, found, last;
} racer;

static void *race(void *p)
{
    racer *r = p;
    r->rc = pg_db_token_revoke(r->db, r->tenant, r->id, 100, &r->found, &r->last, NULL);
    return NULL;
}

START_TEST(two_admins_revoking_each_other_leave_one)
{
    pg_db *db = pg_test_db_open();
    for (int round = 0; round < 8; round++) {
        char ten[PG_ID_MAX];
        pg_test_uid(ten, sizeof ten, "ten_");
        pg_token a, b;
        put_token(db, ten, 1, PG_SCOPE_ADMIN, 10, 0, &a);
        put_token(db, ten, 0, PG_SCOPE_ADMIN, 11, 0, &b);
        racer x = {.db = db, .tenant = ten, .id = a.id}, y = {.db = db, .tenant = ten, .id = b.id};
        pthread_t tx, ty;
        pthread_create(&tx, NULL, race, &x);
        pthread_create(&ty, NULL, race, &y);
        pthread_join(tx, NULL);
        pthread_join(ty, NULL);
        ck_assert_int_eq(x.rc, PG_OK);
        ck_assert_int_eq(y.rc, PG_OK);
        ck_assert_int_eq(x.found + y.found, 2);
        ck_assert_int_eq(x.last + y.last, 1); /* exactly one refused */
        pg_token *list;
        size_t n;
        ck_assert_int_eq(pg_db_token_list(db, ten, 0, 10, &list, &n, NULL), PG_OK);
        ck_assert_uint_eq(n, 2);
        ck_assert_int_eq((list[0].revoked_at == 0) + (list[1].revoked_at == 0), 1);
        free(list);
    }
    pg_db_close(db);
}
END_TEST

static int check(pg_db *db, const char *tok, int64_t now, pg_token *seen)
{
    char hdr[96];
    snprintf(hdr, sizeof hdr, "Bearer %s", tok);
    int state = 0;
    ck_assert_int_eq(pg_auth_check(db, hdr, now, seen, &state, NULL), PG_OK);
    return state;
}

START_TEST(auth_reports_expiry_and_revocation_only_with_the_secret)
{
    pg_db *db = pg_test_db_open();
    char ten[PG_ID_MAX];
    pg_test_uid(ten, sizeof ten, "ten_");
    pg_token admin;
    put_token(db, ten, 1, PG_SCOPE_ADMIN, 1, 0, &admin);
    char tok[PG_TOKEN_MAX], tok2[PG_TOKEN_MAX];
    pg_token rec, rec2, seen;
    ck_assert_int_eq(pg_auth_mint_until(db, PG_SCOPE_READ, ten, 5000, tok, &rec, NULL), PG_OK);
    ck_assert_int_eq(rec.expires_at, 5000);
    ck_assert_int_eq(pg_auth_mint(db, PG_SCOPE_READ, ten, tok2, &rec2, NULL), PG_OK);
    ck_assert_int_eq(rec2.expires_at, 0);
    /* Valid up to the second before expires_at, expired from it on. */
    ck_assert_int_eq(check(db, tok, 4999, &seen), PG_TOKEN_OK);
    ck_assert_str_eq(seen.id, rec.id);
    ck_assert_int_eq(check(db, tok, 5000, &seen), PG_TOKEN_EXPIRED);
    ck_assert_int_eq(check(db, tok2, INT64_MAX, &seen), PG_TOKEN_OK);
    /* The wrong secret for an expired id says nothing more than invalid. */
    char wrong[PG_TOKEN_MAX];
    snprintf(wrong, sizeof wrong, "%s", tok);
    wrong[strlen(wrong) - 1] = wrong[strlen(wrong) - 1] == '0' ? '1' : '0';
    ck_assert_int_eq(check(db, wrong, 5000, &seen), PG_TOKEN_INVALID);
    /* Revoked: at once, and with the wrong secret still just invalid. */
    int found, last;
    ck_assert_int_eq(pg_auth_revoke(NULL, db, ten, rec2.id, 100, &found, &last, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(check(db, tok2, 101, &seen), PG_TOKEN_REVOKED);
    snprintf(wrong, sizeof wrong, "%s", tok2);
    wrong[strlen(wrong) - 1] = wrong[strlen(wrong) - 1] == '0' ? '1' : '0';
    ck_assert_int_eq(check(db, wrong, 101, &seen), PG_TOKEN_INVALID);
    /* Revoked wins over expired (both final; revocation was explicit). */
    ck_assert_int_eq(pg_auth_revoke(NULL, db, ten, rec.id, 100, &found, &last, NULL), PG_OK);
    ck_assert_int_eq(check(db, tok, 9000, &seen), PG_TOKEN_REVOKED);
    /* verify (now) agrees. */
    char hdr[96];
    int ok = 1;
    snprintf(hdr, sizeof hdr, "Bearer %s", tok2);
    ck_assert_int_eq(pg_auth_verify(db, hdr, &seen, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 0);
    ck_assert_int_eq(check(db, "garbage", 1, &seen), PG_TOKEN_INVALID);
    pg_db_close(db);
}
END_TEST

START_TEST(last_use_is_recorded_once_a_minute)
{
    pg_db *db = pg_test_db_open();
    char ten[PG_ID_MAX];
    pg_test_uid(ten, sizeof ten, "ten_");
    pg_token admin, seen, got;
    put_token(db, ten, 1, PG_SCOPE_ADMIN, 1, 0, &admin);
    char tok[PG_TOKEN_MAX];
    pg_token rec;
    int found;
    ck_assert_int_eq(pg_auth_mint(db, PG_SCOPE_READ, ten, tok, &rec, NULL), PG_OK);
    ck_assert_int_eq(pg_db_token_get(db, rec.id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(got.last_used_at, 0);
    static const int64_t uses[][2] = {
        /* time of use, last_used_at afterwards */
        {1000, 1000}, {1030, 1000}, {1059, 1000}, {1060, 1060}, {5000, 5000},
    };
    for (size_t i = 0; i < sizeof uses / sizeof uses[0]; i++) {
        ck_assert_int_eq(check(db, tok, uses[i][0], &seen), PG_TOKEN_OK);
        ck_assert_int_eq(pg_db_token_get(db, rec.id, &got, &found, NULL), PG_OK);
        ck_assert_int_eq(got.last_used_at, uses[i][1]);
    }
    /* a wrong secret is no use of the token */
    char wrong[PG_TOKEN_MAX];
    snprintf(wrong, sizeof wrong, "%s", tok);
    wrong[strlen(wrong) - 1] = wrong[strlen(wrong) - 1] == '0' ? '1' : '0';
    ck_assert_int_eq(check(db, wrong, 9000, &seen), PG_TOKEN_INVALID);
    ck_assert_int_eq(pg_db_token_get(db, rec.id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(got.last_used_at, 5000);
    /* the other token of the tenant was never used */
    pg_token *list;
    size_t n;
    ck_assert_int_eq(pg_db_token_list(db, ten, 0, 10, &list, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(list[0].last_used_at, 0);
    ck_assert_int_eq(list[1].last_used_at, 5000);
    free(list);
    pg_db_close(db);
}
END_TEST

/* pg_auth_list: pages of the api's size, each cursor the last shown row's,
 * 0 exactly on the last page (also when it is full). */
START_TEST(auth_list_pages_end_with_a_zero_cursor)
{
    pg_db *db = pg_test_db_open();
    char ta[PG_ID_MAX];
    pg_test_uid(ta, sizeof ta, "ten_");
    pg_token mine[4];
    for (int i = 0; i < 4; i++) put_token(db, ta, i == 0, PG_SCOPE_ADMIN, 1000 + i, 0, &mine[i]);
    for (size_t limit = 1; limit <= 5; limit++) {
        int64_t after = 0;
        size_t seen = 0;
        for (int page = 0; page < 5; page++) {
            pg_token *list;
            size_t n;
            int64_t next = -1;
            ck_assert_int_eq(pg_auth_list(db, ta, after, limit, &list, &n, &next, NULL), PG_OK);
            ck_assert_uint_eq(n, seen + limit <= 4 ? limit : 4 - seen);
            for (size_t i = 0; i < n; i++) ck_assert_str_eq(list[i].id, mine[seen + i].id);
            int64_t last = list[n - 1].seq;
            seen += n;
            free(list);
            if (seen == 4) {
                ck_assert_int_eq(next, 0);
                break;
            }
            ck_assert_int_eq(next, last);
            after = next;
        }
        ck_assert_uint_eq(seen, 4);
    }
    pg_db_close(db);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("db_tokens");
    TCase *t = tcase_create("tokens");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, list_is_ordered_paginated_and_per_tenant);
    tcase_add_test(t, revoke_tenancy_idempotence_and_last_admin);
    tcase_add_test(t, two_admins_revoking_each_other_leave_one);
    tcase_add_test(t, auth_reports_expiry_and_revocation_only_with_the_secret);
    tcase_add_test(t, last_use_is_recorded_once_a_minute);
    tcase_add_test(t, auth_list_pages_end_with_a_zero_cursor);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
