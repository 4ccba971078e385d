/* Durable job history and the job lifecycle against a live privgend, on
 * whatever storage PRIVGEN_TEST_DB_URL names (SQLite by default):
 *
 * - a finished job's whole view (progress, downsampled history, epsilon,
 *   warnings, privacy, checkpoints) and the job list are byte-for-byte the
 *   same JSON after kill -9 and a restart on the same storage;
 * - keep_checkpoints retention (default 3 plus the newest; validated);
 * - DELETE /v1/jobs/{id}: a finished job goes with its checkpoints and
 *   history, the dataset's budget view is unchanged (the ledger entry
 *   stays); a queued job is cancelled and refunded first; a running one is
 *   refused with 409;
 * - a finished job whose dataset was deleted keeps serving CSV and PNG,
 *   also after a restart. */
#include <png.h>
#include <sys/stat.h>

#include "integration/itest.h"
#include "support/pg_http_test.h"
#include "support/pg_test.h"

static void req(const pg_srv *s, const char *method, const char *path, const char *body, pg_resp *r)
{
    pg_http(s, method, path, s->admin, body ? "application/json" : NULL, body,
            body ? strlen(body) : 0, NULL, r);
}

static json_t *get_json(const pg_srv *s, const char *path)
{
    return pg_test_get_json(s, s->admin, path);
}

static void expect_status(const pg_srv *s, const char *method, const char *path, long status)
{
    pg_resp r;
    req(s, method, path, NULL, &r);
    ck_assert_msg(r.status == status, "%s %s: expected %ld, got %ld: %s", method, path, status,
                  r.status, r.body ? r.body : "");
    pg_resp_free(&r);
}

static void make_dataset(const pg_srv *s, const char *decl, int n, char id[64])
{
    pg_test_dataset_rows(s, s->admin, decl, n, 2, "%.4f", pg_test_circle_cell, NULL, id);
}

static const char LOCAL[] =
    "{\"name\":\"l\",\"shape\":[2],\"range\":[-4,4],\"privacy\":{\"model\":\"local\","
    "\"mechanism\":\"gaussian\",\"epsilon\":1,\"delta\":1e-5,\"sensitivity\":0.5,"
    "\"noise_scale\":2.5}}";
static const char CENTRAL[] = "{\"name\":\"c\",\"shape\":[2],\"range\":[-1,1],\"privacy\":{"
                              "\"model\":\"central\",\"budget\":{\"epsilon\":5,\"delta\":1e-5}}}";

static void submit(const pg_srv *s, const char *body, char id[64])
{
    pg_test_post_id(s, s->admin, "/v1/jobs", body, 202, id, NULL);
}

static void egan(char *buf, size_t cap, const char *ds, long steps, long every, const char *extra)
{
    snprintf(buf, cap,
             "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\",\"model\":{\"hidden\":[16]},"
             "\"train\":{\"steps\":%ld,\"batch_size\":32},\"ot\":{\"max_iter\":30},"
             "\"checkpoint_every\":%ld,\"seed\":7%s}",
             ds, steps, every, extra);
}

static void dps(char *buf, size_t cap, const char *ds, long steps, long every, double sigma)
{
    snprintf(buf, cap,
             "{\"dataset_id\":\"%s\",\"method\":\"dp_sinkhorn\",\"model\":{\"hidden\":[16]},"
             "\"train\":{\"steps\":%ld,\"batch_size\":20},\"ot\":{\"max_iter\":20},"
             "\"privacy\":{\"noise_multiplier\":%g},\"checkpoint_every\":%ld,\"seed\":3}",
             ds, steps, sigma, every);
}

/* Polls the job until it has status st (90 s at most); returns its view. */
static json_t *wait_for(const pg_srv *s, const char *id, const char *st)
{
    return pg_test_job_wait(s, id, st, 0, 50, 1800);
}

static void restart_hard(pg_srv *s)
{
    pg_srv_kill9(s);
    ck_assert_int_eq(pg_srv_start(s, NULL), 0);
}

static long step_at(json_t *arr, size_t i)
{
    return (long)json_integer_value(json_object_get(json_array_get(arr, i), "step"));
}

/* Equal JSON, or a failure naming the first top-level field that differs
 * (values cut to a readable length). */
static void assert_same(json_t *a, json_t *b, const char *what)
{
    if (json_equal(a, b)) return;
    const char *key = "(the value)";
    json_t *x = a, *y = b;
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v) if (!json_equal(v, json_object_get(b, k)))
        {
            key = k;
            x = v;
            y = json_object_get(b, k);
            break;
        }
    }
    char *xs = x ? json_dumps(x, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    char *ys = y ? json_dumps(y, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    ck_abort_msg("%s differs after the restart in %s:\nbefore %.300s\nafter  %.300s", what, key,
                 xs ? xs : "(missing)", ys ? ys : "(missing)");
}

START_TEST(history_survives_a_restart)
{
    pg_srv s;
    pg_test_srv_start(&s, NULL);
    char loc[64], cen[64], a[64], b[64], body[768], pa[128], pb[128];
    make_dataset(&s, LOCAL, 200, loc);
    make_dataset(&s, CENTRAL, 400, cen);
    /* 1100 steps: the history fills (500 points) and is halved twice */
    egan(body, sizeof body, loc, 1100, 100, ",\"keep_checkpoints\":2");
    submit(&s, body, a);
    dps(body, sizeof body, cen, 40, 10, 2);
    submit(&s, body, b);
    json_t *ja = wait_for(&s, a, "succeeded"), *jb = wait_for(&s, b, "succeeded");
    snprintf(pa, sizeof pa, "/v1/jobs/%s", a);
    snprintf(pb, sizeof pb, "/v1/jobs/%s", b);
    json_decref(ja);
    json_decref(jb);
    ja = get_json(&s, pa); /* settled: the view no longer changes */
    jb = get_json(&s, pb);
    json_t *list = get_json(&s, "/v1/jobs");

    /* what is compared is worth comparing */
    json_t *pra = json_object_get(ja, "progress"), *prb = json_object_get(jb, "progress");
    ck_assert_int_eq(json_integer_value(json_object_get(pra, "step")), 1100);
    ck_assert_int_eq(json_integer_value(json_object_get(pra, "total_steps")), 1100);
    ck_assert(json_is_number(json_object_get(pra, "loss")));
    ck_assert(json_is_number(json_object_get(pra, "steps_per_second")));
    size_t nh = json_array_size(json_object_get(ja, "history"));
    ck_assert_msg(nh >= 250 && nh <= 500, "%zu history points", nh);
    /* halved twice: every kept point is a multiple of the final stride 4 */
    for (size_t i = 0; i < nh; i++)
        ck_assert_int_eq(step_at(json_object_get(ja, "history"), i) % 4, 0);
    ck_assert_int_eq(step_at(json_object_get(ja, "history"), nh - 1), 1100);
    json_t *cks = json_object_get(ja, "checkpoints");
    ck_assert_int_eq((int)json_array_size(cks), 3); /* keep 2 plus the newest */
    for (int i = 0; i < 3; i++) ck_assert_int_eq(step_at(cks, (size_t)i), 900 + 100 * i);
    ck_assert(json_is_array(json_object_get(ja, "warnings")));
    double eps = json_number_value(json_object_get(prb, "epsilon_spent"));
    ck_assert_msg(eps > 0 && isfinite(eps), "epsilon_spent %g", eps);
    ck_assert_int_eq(json_integer_value(json_object_get(prb, "total_steps")), 40);
    ck_assert_int_eq((int)json_array_size(json_object_get(jb, "history")), 40);
    /* default retention: the last 3 plus the final */
    cks = json_object_get(jb, "checkpoints");
    ck_assert_int_eq((int)json_array_size(cks), 4);
    ck_assert_int_eq(step_at(cks, 0), 10);
    ck_assert_int_eq(
        json_integer_value(json_object_get(json_object_get(jb, "spec"), "keep_checkpoints")), 3);

    restart_hard(&s); /* nothing is flushed at shutdown: it must already be stored */
    json_t *ja2 = get_json(&s, pa), *jb2 = get_json(&s, pb), *list2 = get_json(&s, "/v1/jobs");
    assert_same(ja, ja2, "the entropic_gan job");
    assert_same(jb, jb2, "the dp_sinkhorn job");
    assert_same(list, list2, "the job list");
    json_decref(ja2);
    json_decref(jb2);
    json_decref(list2);
    /* and a clean restart after that changes nothing either */
    ck_assert_int_eq(pg_srv_stop(&s), 0);
    ck_assert_int_eq(pg_srv_start(&s, NULL), 0);
    ja2 = get_json(&s, pa);
    assert_same(ja, ja2, "the entropic_gan job (second restart)");
    json_decref(ja2);
    json_decref(ja);
    json_decref(jb);
    json_decref(list);
    pg_test_srv_end(&s);
}
END_TEST

START_TEST(keep_checkpoints_is_validated)
{
    pg_srv s;
    pg_test_srv_start(&s, NULL);
    char loc[64], body[768];
    make_dataset(&s, LOCAL, 50, loc);
    static const char *const bad[] = {",\"keep_checkpoints\":-1", ",\"keep_checkpoints\":1.5",
                                      ",\"keep_checkpoints\":\"all\"",
                                      ",\"keep_checkpoints\":100001"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        egan(body, sizeof body, loc, 10, 5, bad[i]);
        pg_resp r;
        req(&s, "POST", "/v1/jobs?dry_run=true", body, &r);
        ck_assert_msg(r.status == 422, "%s: %ld %s", bad[i], r.status, r.body);
        json_t *e = json_array_get(json_object_get(r.json, "errors"), 0);
        ck_assert_str_eq(json_string_value(json_object_get(e, "field")), "keep_checkpoints");
        pg_resp_free(&r);
    }
    /* 0 keeps only the newest */
    char id[64];
    egan(body, sizeof body, loc, 30, 5, ",\"keep_checkpoints\":0");
    submit(&s, body, id);
    json_t *j = wait_for(&s, id, "succeeded");
    json_t *cks = json_object_get(j, "checkpoints");
    ck_assert_int_eq((int)json_array_size(cks), 1);
    ck_assert_int_eq(step_at(cks, 0), 30);
    json_decref(j);
    /* the deleted ones are gone from storage, not only from the view */
    pg_db *db = pg_srv_db(&s);
    ck_assert_ptr_nonnull(db);
    pg_ckpt_row *rows;
    size_t n;
    ck_assert_int_eq(pg_db_ckpt_list(db, id, &rows, &n, NULL), PG_OK);
    ck_assert_int_eq((int)n, 1);
    ck_assert_int_eq((int)rows[0].step, 30);
    free(rows);
    pg_db_close(db);
    if (pg_itest_sqlite()) {
        char p[256];
        struct stat st;
        snprintf(p, sizeof p, "%s/checkpoints/%s/5.pgc", s.data, id);
        ck_assert_int_ne(stat(p, &st), 0);
        snprintf(p, sizeof p, "%s/checkpoints/%s/30.pgc", s.data, id);
        ck_assert_int_eq(stat(p, &st), 0);
    }
    pg_test_srv_end(&s);
}
END_TEST

static json_t *budget(const pg_srv *s, const char *ds)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%s/budget", ds);
    return get_json(s, path);
}

START_TEST(delete_job_keeps_the_ledger)
{
    static const char *const one[] = {"--workers", "1", NULL};
    pg_srv s;
    pg_test_srv_start(&s, one);
    char cen[64], done[64], run[64], queued[64], body[768], path[128];
    make_dataset(&s, CENTRAL, 400, cen);
    dps(body, sizeof body, cen, 20, 5, 2);
    submit(&s, body, done);
    json_decref(wait_for(&s, done, "succeeded"));
    json_t *before = budget(&s, cen);
    ck_assert_int_eq((int)json_array_size(json_object_get(before, "entries")), 1);

    snprintf(path, sizeof path, "/v1/jobs/%s", done);
    expect_status(&s, "DELETE", path, 204);
    expect_status(&s, "GET", path, 404);
    expect_status(&s, "DELETE", path, 404);
    snprintf(path, sizeof path, "/v1/jobs/%s/checkpoints", done);
    expect_status(&s, "GET", path, 404);
    json_t *after = budget(&s, cen);
    assert_same(before, after, "the budget after deleting a finished job");
    json_decref(after);
    pg_db *db = pg_srv_db(&s);
    ck_assert_ptr_nonnull(db);
    pg_ckpt_row *rows;
    size_t n;
    char *doc;
    int found;
    ck_assert_int_eq(pg_db_ckpt_list(db, done, &rows, &n, NULL), PG_OK);
    ck_assert_int_eq((int)n, 0);
    ck_assert_int_eq(pg_db_job_history_get(db, done, &doc, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    pg_db_close(db);
    if (pg_itest_sqlite()) {
        char p[256];
        struct stat st;
        snprintf(p, sizeof p, "%s/checkpoints/%s", s.data, done);
        ck_assert_int_ne(stat(p, &st), 0);
    }

    /* a running job is refused; a queued one is cancelled, refunded, deleted */
    dps(body, sizeof body, cen, 100000, 1000, 50);
    submit(&s, body, run);
    dps(body, sizeof body, cen, 20, 5, 2);
    submit(&s, body, queued);
    json_decref(wait_for(&s, run, "running"));
    json_t *mid = budget(&s, cen);
    ck_assert_int_eq((int)json_array_size(json_object_get(mid, "entries")), 3);
    snprintf(path, sizeof path, "/v1/jobs/%s", run);
    pg_resp r;
    req(&s, "DELETE", path, NULL, &r);
    ck_assert_int_eq(r.status, 409);
    ck_assert_str_eq(r.ctype, "application/problem+json");
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s", queued);
    expect_status(&s, "DELETE", path, 204);
    expect_status(&s, "GET", path, 404);
    json_t *b2 = budget(&s, cen);
    json_t *es = json_object_get(b2, "entries"), *e;
    size_t i;
    int seen = 0;
    json_array_foreach(es, i,
                       e) if (!strcmp(json_string_value(json_object_get(e, "job_id")), queued))
    {
        seen = 1;
        ck_assert(json_is_true(json_object_get(e, "refunded")));
    }
    ck_assert_msg(seen, "the queued job's ledger entry is gone");
    /* the refund gives back exactly the queued job's part */
    json_t *only_done = budget(&s, cen);
    json_decref(only_done);
    json_decref(b2);
    json_decref(mid);

    /* the running one: cancel, then delete; what it spent stays spent */
    snprintf(path, sizeof path, "/v1/jobs/%s/cancel", run);
    expect_status(&s, "POST", path, 202);
    json_decref(wait_for(&s, run, "cancelled"));
    json_t *c1 = budget(&s, cen);
    snprintf(path, sizeof path, "/v1/jobs/%s", run);
    expect_status(&s, "DELETE", path, 204);
    json_t *c2 = budget(&s, cen);
    assert_same(c1, c2, "the budget after deleting a cancelled running job");
    ck_assert_double_eq(json_number_value(json_object_get(c2, "spent_epsilon")),
                        json_number_value(json_object_get(c1, "spent_epsilon")));
    ck_assert(json_number_value(json_object_get(c2, "spent_epsilon")) >
              json_number_value(json_object_get(before, "spent_epsilon")));

    /* deletions are durable */
    restart_hard(&s);
    json_t *list = get_json(&s, "/v1/jobs");
    ck_assert_int_eq((int)json_array_size(json_object_get(list, "items")), 0);
    json_decref(list);
    json_t *c3 = budget(&s, cen);
    assert_same(c2, c3, "the budget");
    json_decref(c1);
    json_decref(c2);
    json_decref(c3);
    json_decref(before);
    pg_test_srv_end(&s);
}
END_TEST

static int png_ok(const char *buf, size_t len)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, buf, len)) return 0;
    png_image_free(&img);
    return img.width > 0 && img.height > 0;
}

START_TEST(orphaned_job_keeps_serving)
{
    pg_srv s;
    pg_test_srv_start(&s, NULL);
    char loc[64], id[64], body[768], path[160], spath[160];
    make_dataset(&s, LOCAL, 200, loc);
    egan(body, sizeof body, loc, 40, 20, "");
    submit(&s, body, id);
    json_decref(wait_for(&s, id, "succeeded"));
    snprintf(path, sizeof path, "/v1/datasets/%s", loc);
    expect_status(&s, "DELETE", path, 204);
    snprintf(path, sizeof path, "/v1/jobs/%s", id);
    json_t *view = get_json(&s, path);
    for (int round = 0; round < 2; round++) {
        snprintf(spath, sizeof spath, "/v1/jobs/%s/samples?n=200&seed=1&format=png", id);
        pg_resp r;
        req(&s, "GET", spath, NULL, &r);
        ck_assert_msg(r.status == 200, "round %d: %ld %s", round, r.status,
                      r.ctype[0] == 'i' ? "" : r.body);
        ck_assert_str_eq(r.ctype, "image/png");
        ck_assert(png_ok(r.body, r.len));
        pg_resp_free(&r);
        snprintf(spath, sizeof spath, "/v1/jobs/%s/samples?n=5&seed=1&format=csv", id);
        req(&s, "GET", spath, NULL, &r);
        ck_assert_int_eq(r.status, 200);
        pg_resp_free(&r);
        if (round == 0) restart_hard(&s);
    }
    json_t *view2 = get_json(&s, path);
    assert_same(view, view2, "the orphaned job");
    json_decref(view);
    json_decref(view2);
    pg_test_srv_end(&s);
}
END_TEST

static void init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static Suite *suite(void)
{
    Suite *s = suite_create("lifecycle");
    TCase *tc = tcase_create("live");
    tcase_add_unchecked_fixture(tc, init, NULL);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, history_survives_a_restart);
    tcase_add_test(tc, keep_checkpoints_is_validated);
    tcase_add_test(tc, delete_job_keeps_the_ledger);
    tcase_add_test(tc, orphaned_job_keeps_serving);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
