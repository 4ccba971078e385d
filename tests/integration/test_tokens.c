/* Token lifetime end to end: listing (paginated, no secrets), revocation
 * (at once, by an admin or by the token itself, never across tenants, never
 * the tenant's last admin), expiry (expires_in / expires_at on create; an
 * expired token is refused), and 401 details that name revoked or expired
 * only to a caller holding the whole token, and the first start's admin
 * token created exactly once however many replicas start at once on one
 * empty storage. Bodies checked against openapi.yaml's schemas. */
#include <dirent.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

#include "integration/isuite.h"
#include "service/auth.h"
#include "service/sha256.h"
#include "support/pg_test.h"

static pg_srv srv;
static pg_oa oa;

static void start_shared(void)
{
    pg_isuite_start(&srv, &oa, NULL);
}

static void stop_shared(void)
{
    pg_isuite_stop(&srv, &oa);
}

static void conform(const pg_resp *r, const char *schema)
{
    pg_isuite_conform(&oa, r, schema);
}

/* Checks a problem response; returns its detail (static copy). */
static const char *expect_problem(pg_resp *r, long status, const char *field)
{
    static char detail[256];
    return pg_isuite_problem(&oa, r, status, field, detail, sizeof detail);
}

static void req(const char *method, const char *path, const char *tok, const char *body, pg_resp *r)
{
    pg_http(&srv, method, path, tok, body ? "application/json" : NULL, body,
            body ? strlen(body) : 0, NULL, r);
}

typedef struct minted {
    char token[96], id[64], tenant[64];
    long long expires_at; /* -1: null */
} minted;

static void mint(const char *tok, const char *body, minted *m)
{
    pg_resp r;
    req("POST", "/v1/tokens", tok, body, &r);
    ck_assert_msg(r.status == 201, "mint: %ld %s", r.status, r.body);
    conform(&r, "Token");
    snprintf(m->token, sizeof m->token, "%s", json_string_value(json_object_get(r.json, "token")));
    snprintf(m->id, sizeof m->id, "%s", json_string_value(json_object_get(r.json, "id")));
    snprintf(m->tenant, sizeof m->tenant, "%s",
             json_string_value(json_object_get(r.json, "tenant")));
    json_t *e = json_object_get(r.json, "expires_at");
    m->expires_at = json_is_integer(e) ? (long long)json_integer_value(e) : -1;
    pg_resp_free(&r);
}

/* Status of a GET /v1/datasets with tok (the detail of a 401 into detail). */
static long use(const char *tok, char *detail, size_t cap)
{
    pg_resp r;
    req("GET", "/v1/datasets", tok, NULL, &r);
    long st = r.status;
    if (st == 401)
        snprintf(detail, cap, "%s", expect_problem(&r, 401, NULL));
    else
        pg_resp_free(&r);
    return st;
}

/* The item with id in a TokenList page, or NULL. */
static json_t *item(json_t *list, const char *id)
{
    json_t *items = json_object_get(list, "items"), *it;
    size_t i;
    json_array_foreach(items, i,
                       it) if (!strcmp(json_string_value(json_object_get(it, "id")), id)) return it;
    return NULL;
}

START_TEST(list_paginates_without_secrets)
{
    minted a, r1, a2;
    mint(srv.admin, "{\"scope\":\"admin\",\"new_tenant\":true}", &a);
    mint(a.token, "{\"scope\":\"read\"}", &r1);
    mint(a.token, "{\"scope\":\"admin\",\"expires_in\":3600}", &a2);
    long long now = (long long)time(NULL);
    ck_assert(a2.expires_at >= now + 3590 && a2.expires_at <= now + 3600);
    ck_assert_int_eq(a.expires_at, -1);
    pg_resp r;
    req("GET", "/v1/tokens", a.token, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    conform(&r, "TokenList");
    ck_assert_uint_eq(json_array_size(json_object_get(r.json, "items")), 3);
    /* oldest first; no secret, no hash; the caller marked */
    const char *order[] = {a.id, r1.id, a2.id};
    for (size_t i = 0; i < 3; i++) {
        json_t *it = json_array_get(json_object_get(r.json, "items"), i);
        ck_assert_str_eq(json_string_value(json_object_get(it, "id")), order[i]);
        ck_assert_ptr_null(json_object_get(it, "token"));
        ck_assert_ptr_null(json_object_get(it, "hash"));
        ck_assert_str_eq(json_string_value(json_object_get(it, "status")), "active");
        ck_assert_int_eq(json_is_true(json_object_get(it, "current")), i == 0);
    }
    const minted *all[] = {&a, &r1, &a2};
    for (size_t i = 0; i < 3; i++) ck_assert_ptr_null(strstr(r.body, all[i]->token + 21));
    ck_assert_int_eq(
        (long long)json_integer_value(json_object_get(item(r.json, a2.id), "expires_at")),
        a2.expires_at);
    ck_assert_str_eq(json_string_value(json_object_get(item(r.json, r1.id), "scope")), "read");
    /* a was used (minting, listing), r1 never */
    long long used =
        (long long)json_integer_value(json_object_get(item(r.json, a.id), "last_used_at"));
    ck_assert(used >= now - 5 && used <= now + 5);
    ck_assert(json_is_null(json_object_get(item(r.json, r1.id), "last_used_at")));
    pg_resp_free(&r);
    /* pages of two */
    req("GET", "/v1/tokens?limit=2", a.token, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(r.json, "items")), 2);
    char path[128];
    snprintf(path, sizeof path, "/v1/tokens?limit=2&cursor=%s",
             json_string_value(json_object_get(r.json, "next_cursor")));
    pg_resp_free(&r);
    req("GET", path, a.token, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    conform(&r, "TokenList");
    ck_assert_uint_eq(json_array_size(json_object_get(r.json, "items")), 1);
    ck_assert_ptr_nonnull(item(r.json, a2.id));
    ck_assert(json_is_null(json_object_get(r.json, "next_cursor")));
    pg_resp_free(&r);
    req("GET", "/v1/tokens?limit=0", a.token, NULL, &r);
    expect_problem(&r, 400, NULL);
    /* a read token may not list; another tenant sees none of these */
    req("GET", "/v1/tokens", r1.token, NULL, &r);
    expect_problem(&r, 403, NULL);
    req("GET", "/v1/tokens?limit=500", srv.admin, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_null(item(r.json, a.id));
    ck_assert_ptr_null(item(r.json, r1.id));
    pg_resp_free(&r);
}
END_TEST

START_TEST(create_validates_expiry)
{
    pg_resp r;
    static const char *const bad[][2] = {
        {"{\"scope\":\"read\",\"expires_in\":59}", "expires_in"},
        {"{\"scope\":\"read\",\"expires_in\":3600.5}", "expires_in"},
        {"{\"scope\":\"read\",\"expires_in\":\"1h\"}", "expires_in"},
        {"{\"scope\":\"read\",\"expires_in\":400000000}", "expires_in"},
        {"{\"scope\":\"read\",\"expires_at\":1000}", "expires_at"},
        {"{\"scope\":\"read\",\"expires_in\":3600,\"expires_at\":99999999999}", "expires_at"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        req("POST", "/v1/tokens", srv.admin, bad[i][0], &r);
        expect_problem(&r, 422, bad[i][1]);
    }
    minted m;
    char body[96];
    long long at = (long long)time(NULL) + 7200;
    snprintf(body, sizeof body, "{\"scope\":\"read\",\"expires_at\":%lld}", at);
    mint(srv.admin, body, &m);
    ck_assert_int_eq(m.expires_at, at);
    char detail[256];
    ck_assert_int_eq(use(m.token, detail, sizeof detail), 200);
}
END_TEST

START_TEST(revocation_is_immediate_and_tenant_bound)
{
    minted a, r1, a2, other;
    mint(srv.admin, "{\"scope\":\"admin\",\"new_tenant\":true}", &a);
    mint(a.token, "{\"scope\":\"read\"}", &r1);
    mint(a.token, "{\"scope\":\"admin\"}", &a2);
    mint(srv.admin, "{\"scope\":\"admin\",\"new_tenant\":true}", &other);
    char path[128], detail[256];
    pg_resp r;
    /* another tenant: 404, and the token still works */
    snprintf(path, sizeof path, "/v1/tokens/%s", r1.id);
    req("DELETE", path, other.token, NULL, &r);
    expect_problem(&r, 404, NULL);
    req("DELETE", "/v1/tokens/tok_0000000000000000", a.token, NULL, &r);
    expect_problem(&r, 404, NULL);
    ck_assert_int_eq(use(r1.token, detail, sizeof detail), 200);
    /* a read token may revoke only itself */
    snprintf(path, sizeof path, "/v1/tokens/%s", a2.id);
    req("DELETE", path, r1.token, NULL, &r);
    expect_problem(&r, 403, NULL);
    snprintf(path, sizeof path, "/v1/tokens/%s", r1.id);
    req("DELETE", path, r1.token, NULL, &r);
    ck_assert_int_eq(r.status, 204);
    pg_resp_free(&r);
    /* the very next request is refused, saying why */
    ck_assert_int_eq(use(r1.token, detail, sizeof detail), 401);
    ck_assert_ptr_nonnull(strstr(detail, "revoked"));
    /* a wrong secret for that id says nothing about it */
    char wrong[96];
    snprintf(wrong, sizeof wrong, "%s", r1.token);
    wrong[strlen(wrong) - 1] = wrong[strlen(wrong) - 1] == '0' ? '1' : '0';
    ck_assert_int_eq(use(wrong, detail, sizeof detail), 401);
    ck_assert_ptr_null(strstr(detail, "revoked"));
    /* again: no-op */
    req("DELETE", path, a.token, NULL, &r);
    ck_assert_int_eq(r.status, 204);
    pg_resp_free(&r);
    /* an admin revokes another admin; then the last admin is kept */
    snprintf(path, sizeof path, "/v1/tokens/%s", a2.id);
    req("DELETE", path, a.token, NULL, &r);
    ck_assert_int_eq(r.status, 204);
    pg_resp_free(&r);
    ck_assert_int_eq(use(a2.token, detail, sizeof detail), 401);
    snprintf(path, sizeof path, "/v1/tokens/%s", a.id);
    req("DELETE", path, a.token, NULL, &r);
    ck_assert_ptr_nonnull(strstr(expect_problem(&r, 409, NULL), "last"));
    ck_assert_int_eq(use(a.token, detail, sizeof detail), 200);
    req("GET", "/v1/tokens", a.token, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    conform(&r, "TokenList");
    json_t *it = item(r.json, r1.id);
    ck_assert_str_eq(json_string_value(json_object_get(it, "status")), "revoked");
    ck_assert(json_is_true(json_object_get(it, "revoked")));
    ck_assert(json_is_integer(json_object_get(it, "revoked_at")));
    ck_assert_str_eq(json_string_value(json_object_get(item(r.json, a.id), "status")), "active");
    pg_resp_free(&r);
}
END_TEST

START_TEST(expired_token_is_refused)
{
    minted a;
    mint(srv.admin, "{\"scope\":\"admin\",\"new_tenant\":true}", &a);
    /* A token that expired ten seconds ago, stored as privgend would (the
     * API refuses to mint one in the past). */
    pg_db *db = pg_srv_db(&srv);
    ck_assert_ptr_nonnull(db);
    const char *hexid = "00c0ffee00c0ffee";
    char tok[96];
    snprintf(tok, sizeof tok, "pgt_%s_%s", hexid, "0123456789abcdef0123456789abcdef");
    pg_token t = {0};
    snprintf(t.id, sizeof t.id, "tok_%s", hexid);
    snprintf(t.tenant, sizeof t.tenant, "%.39s", a.tenant);
    t.scope = PG_SCOPE_ADMIN;
    pg_sha256_digest(tok, strlen(tok), t.hash);
    t.created_at = (int64_t)time(NULL) - 100;
    t.expires_at = (int64_t)time(NULL) - 10;
    ck_assert_int_eq(pg_db_token_insert(db, &t, 0, NULL), PG_OK);
    pg_db_close(db);
    char detail[256];
    ck_assert_int_eq(use(tok, detail, sizeof detail), 401);
    ck_assert_ptr_nonnull(strstr(detail, "expired"));
    char wrong[96];
    snprintf(wrong, sizeof wrong, "%s", tok);
    wrong[strlen(wrong) - 1] = 'e';
    ck_assert_int_eq(use(wrong, detail, sizeof detail), 401);
    ck_assert_ptr_null(strstr(detail, "expired"));
    /* listed as expired; it does not count as an admin, so `a` is the last */
    pg_resp r;
    req("GET", "/v1/tokens", a.token, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(item(r.json, t.id), "status")), "expired");
    pg_resp_free(&r);
    char path[128];
    snprintf(path, sizeof path, "/v1/tokens/%s", a.id);
    req("DELETE", path, a.token, NULL, &r);
    expect_problem(&r, 409, NULL);
}
END_TEST

/* ---- bootstrap: many first starts at once on one empty storage --------- */

#define BOOT_N 4

/* Data dirs of a race: 0 and 1 share one (replicas on one data dir), 2 and
 * 3 have their own, and all use the storage of `home` (SQLite: the file in
 * the shared dir; PostgreSQL: home's fresh database). */
static void boot_dirs(pg_srv *home, char dirs[BOOT_N][128])
{
    ck_assert_int_eq(pg_srv_prepare(home), 0);
    ck_assert_int_eq(mkdir(home->data, 0700), 0);
    for (int k = 0; k < BOOT_N; k++) {
        if (k < 2)
            snprintf(dirs[k], sizeof dirs[k], "%s", home->data);
        else
            snprintf(dirs[k], sizeof dirs[k], "%s/data%d", home->dir, k);
        if (k >= 2) ck_assert_int_eq(mkdir(dirs[k], 0700), 0);
    }
}

/* Files of dir whose name starts with prefix. */
static int files_named(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, prefix, strlen(prefix))) n++;
    closedir(d);
    return n;
}

/* After a race: the storage holds exactly one token, an admin token whose
 * id is `id`; exactly one of the data dirs (the winner's, `winner`) has an
 * admin.token and its text is that token; no temporary file is left. */
static void boot_check(pg_srv *home, char dirs[BOOT_N][128], int winner, const char *id)
{
    pg_db *db = pg_srv_db(home);
    ck_assert_ptr_nonnull(db);
    int64_t n = -1;
    ck_assert_int_eq(pg_db_token_count(db, &n, NULL), PG_OK);
    ck_assert_int_eq(n, 1);
    for (int k = 0; k < BOOT_N; k++) {
        if (k == 1) continue; /* dir 1 is dir 0 */
        ck_assert_int_eq(files_named(dirs[k], "admin.token.tmp"), 0);
        int shares = k == winner || (k == 0 && winner == 1);
        ck_assert_int_eq(files_named(dirs[k], "admin.token"), shares);
    }
    char path[160], text[96], auth[128];
    snprintf(path, sizeof path, "%s/admin.token", dirs[winner]);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(text, sizeof text, f));
    fclose(f);
    text[strcspn(text, "\n")] = '\0';
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    snprintf(auth, sizeof auth, "Bearer %s", text);
    pg_token rec;
    int ok = 0;
    ck_assert_int_eq(pg_auth_verify(db, auth, &rec, &ok, NULL), PG_OK);
    ck_assert(ok);
    ck_assert_str_eq(rec.id, id);
    ck_assert_int_eq(rec.scope, PG_SCOPE_ADMIN);
    pg_db_close(db);
}

typedef struct boot_arg {
    pg_db *db;
    const char *data;
    pthread_barrier_t *go;
    int rc, created, has_first;
    pg_token first;
} boot_arg;

static void *boot_run(void *p)
{
    boot_arg *a = p;
    pg_error err = {0};
    pthread_barrier_wait(a->go);
    a->rc = pg_auth_bootstrap(a->db, a->data, &a->created, &a->first, &a->has_first, &err);
    if (a->rc) fprintf(stderr, "bootstrap: %s\n", err.msg);
    return NULL;
}

/* BOOT_N bootstraps released together, each on a connection of its own,
 * several rounds on fresh storage: one creates, every other one stores and
 * writes nothing and names the winner's token. */
START_TEST(bootstrap_races_create_one_admin_token)
{
    for (int round = 0; round < 8; round++) {
        pg_srv home = {0};
        char dirs[BOOT_N][128];
        boot_dirs(&home, dirs);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, BOOT_N);
        boot_arg a[BOOT_N];
        pthread_t th[BOOT_N];
        for (int k = 0; k < BOOT_N; k++) {
            a[k] = (boot_arg){.db = pg_srv_db(&home), .data = dirs[k], .go = &go};
            ck_assert_ptr_nonnull(a[k].db);
        }
        for (int k = 0; k < BOOT_N; k++) pthread_create(&th[k], NULL, boot_run, &a[k]);
        int winner = -1, created = 0;
        for (int k = 0; k < BOOT_N; k++) {
            pthread_join(th[k], NULL);
            ck_assert_int_eq(a[k].rc, PG_OK);
            created += a[k].created;
            if (a[k].created) winner = k;
        }
        pthread_barrier_destroy(&go);
        ck_assert_int_eq(created, 1);
        for (int k = 0; k < BOOT_N; k++) {
            ck_assert(a[k].has_first);
            ck_assert_str_eq(a[k].first.id, a[winner].first.id);
            pg_db_close(a[k].db);
        }
        boot_check(&home, dirs, winner, a[winner].first.id);
        pg_srv_cleanup(&home);
    }
}
END_TEST

/* The log line privgend writes for msg, or "" (first match). */
static void log_line(const pg_srv *s, const char *msg, char *out, size_t cap)
{
    char path[128], line[2048], want[160];
    snprintf(path, sizeof path, "%s/privgend.log", s->dir);
    snprintf(want, sizeof want, "\"msg\":\"%s\"", msg);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, want)) {
            snprintf(out, cap, "%s", line);
            break;
        }
    if (f) fclose(f);
}

/* The same race with real processes: BOOT_N privgend started at once on one
 * empty storage (two of them on one data dir). One token exists afterwards;
 * its file is where its creator said; it works on every replica; a replica
 * without the file in its data dir logs that the token exists, and which. */
START_TEST(simultaneous_first_starts_create_one_admin_token)
{
    pg_srv s[BOOT_N];
    memset(s, 0, sizeof s);
    char dirs[BOOT_N][128], url[512];
    boot_dirs(&s[0], dirs);
    pg_srv_db_url(&s[0], url, sizeof url);
    for (int k = 1; k < BOOT_N; k++) {
        snprintf(s[k].dir, sizeof s[k].dir, "/tmp/pgitest-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(s[k].dir));
        pg_itest_dir_add(s[k].dir);
        snprintf(s[k].data, sizeof s[k].data, "%s", dirs[k]);
    }
    for (int k = 0; k < BOOT_N; k++) {
        char node[16];
        snprintf(node, sizeof node, "boot%d", k);
        const char *extra[] = {"--node-id", node, NULL};
        ck_assert_int_eq(pg_srv_spawn(&s[k], url, extra), 0);
    }
    for (int k = 0; k < BOOT_N; k++) ck_assert_int_eq(pg_srv_wait_port(&s[k]), 0);
    int winner = -1, created = 0;
    char line[2048];
    for (int k = 0; k < BOOT_N; k++) {
        log_line(&s[k], "created the admin token", line, sizeof line);
        if (line[0]) created++, winner = k;
    }
    ck_assert_int_eq(created, 1);
    log_line(&s[winner], "created the admin token", line, sizeof line);
    json_t *o = json_loads(line, 0, NULL);
    ck_assert_ptr_nonnull(o);
    char want_path[160], id[64];
    snprintf(want_path, sizeof want_path, "%s/admin.token", dirs[winner]);
    ck_assert_str_eq(json_string_value(json_object_get(o, "path")), want_path);
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(o, "token_id")));
    json_decref(o);
    boot_check(&s[0], dirs, winner, id);
    ck_assert_int_eq(pg_srv_read_admin(&s[winner]), 0);
    char admin[96];
    snprintf(admin, sizeof admin, "%s", s[winner].admin);
    for (int k = 0; k < BOOT_N; k++) {
        snprintf(s[k].admin, sizeof s[k].admin, "%s", admin);
        pg_resp r;
        pg_http(&s[k], "GET", "/v1/tokens", s[k].admin, NULL, NULL, 0, NULL, &r);
        ck_assert_msg(r.status == 200, "replica %d (winner %d): %ld %s", k, winner, r.status,
                      r.body);
        pg_resp_free(&r);
        int has_file = k == winner || (k < 2 && winner < 2);
        log_line(&s[k], "an admin token already exists", line, sizeof line);
        if (has_file) {
            /* A replica sharing the winner's data dir may look for the file
             * between the winner's commit and its rename (pg_auth_bootstrap
             * stores the hash first, then renames): it then says where the
             * token is, which is harmless. The file must be there now. */
            char tok_path[600];
            struct stat st;
            snprintf(tok_path, sizeof tok_path, "%s/admin.token", dirs[k]);
            ck_assert_int_eq(stat(tok_path, &st), 0);
            continue;
        }
        o = json_loads(line, 0, NULL);
        ck_assert_msg(o != NULL, "replica %d did not say where the token is", k);
        ck_assert_str_eq(json_string_value(json_object_get(o, "token_id")), id);
        ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(o, "hint")), "admin.token"));
        json_decref(o);
    }
    for (int k = 0; k < BOOT_N; k++) ck_assert_int_eq(pg_srv_stop(&s[k]), 0);
    for (int k = BOOT_N - 1; k >= 0; k--) pg_srv_cleanup(&s[k]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("integration_tokens");
    TCase *t = tcase_create("tokens");
    tcase_add_unchecked_fixture(t, start_shared, stop_shared);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, list_paginates_without_secrets);
    tcase_add_test(t, create_validates_expiry);
    tcase_add_test(t, revocation_is_immediate_and_tenant_bound);
    tcase_add_test(t, expired_token_is_refused);
    suite_add_tcase(s, t);
    TCase *boot = tcase_create("bootstrap");
    tcase_set_timeout(boot, 120);
    tcase_add_test(boot, bootstrap_races_create_one_admin_token);
    tcase_add_test(boot, simultaneous_first_starts_create_one_admin_token);
    suite_add_tcase(s, boot);
    return s;
}

PG_TEST_MAIN(suite)
