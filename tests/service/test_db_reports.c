/* Quality-report storage through service/store/db.h, on the backend
 * PRIVGEN_TEST_DB names: tenancy and the public-only list filter, the queue
 * bound, claims (oldest first, never twice, stale ones taken over), the
 * running-only fence of progress and finish that a cancel trips, figure
 * bytes round trips, delete (never a running report, atomic against a
 * claim). Every test ends all of its reports, because a server
 * database is shared by the run and claims are global. */
#include <math.h>
#include <pthread.h>

#include "db_support.h"
#include "service/datasets/spec.h"

static void setup(void)
{
    pg_test_db_setup();
}

static void teardown(void)
{
    pg_test_db_teardown();
}

static void put_report(pg_db *db, const char *tenant, const char *job, int model, int64_t created,
                       pg_report_row *out)
{
    pg_report_row r = {0};
    pg_test_uid(r.id, sizeof r.id, "rep_");
    snprintf(r.tenant, sizeof r.tenant, "%s", tenant);
    snprintf(r.job_id, sizeof r.job_id, "%s", job);
    snprintf(r.against_id, sizeof r.against_id, "ds_x");
    r.against_model = model;
    r.against_n = 500 + created;
    r.job_step = 40;
    r.n = 1000;
    r.seed = (INT64_C(1) << 53) - 1;
    r.created_at = created;
    r.job_model = model == PG_PRIV_LOCAL ? PG_PRIV_CENTRAL : PG_PRIV_LOCAL;
    r.job_epsilon = model == PG_PRIV_CENTRAL ? NAN : 0.5 + (double)created;
    r.utility = (int)(created % 2);
    int full = -1;
    pg_error err = {0};
    ck_assert_msg(pg_db_report_insert(db, &r, 1000000, &full, &err) == PG_OK, "%s", err.msg);
    ck_assert_int_eq(full, 0);
    ck_assert(r.seq > 0);
    *out = r;
}

static void cancel(pg_db *db, const pg_report_row *r)
{
    int found, done;
    ck_assert_int_eq(pg_db_report_cancel(db, r->tenant, r->id, 1, &found, &done, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
}

START_TEST(insert_get_list_tenancy_and_filter)
{
    pg_db *db = pg_test_db_open();
    char ta[PG_ID_MAX], tb[PG_ID_MAX], job[PG_ID_MAX], job2[PG_ID_MAX];
    pg_test_uid(ta, sizeof ta, "ten_");
    pg_test_uid(tb, sizeof tb, "ten_");
    pg_test_uid(job, sizeof job, "job_");
    pg_test_uid(job2, sizeof job2, "job_");
    enum { N = 7 };
    pg_report_row mine[N], other, elsewhere;
    for (int i = 0; i < N; i++)
        put_report(db, ta, job, i % 3 == 1 ? PG_PRIV_CENTRAL : PG_PRIV_PUBLIC, 100 + i, &mine[i]);
    put_report(db, tb, job, PG_PRIV_PUBLIC, 5, &other);
    put_report(db, ta, job2, PG_PRIV_PUBLIC, 5, &elsewhere);

    pg_report_row got;
    int found;
    ck_assert_int_eq(pg_db_report_get(db, ta, mine[3].id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(got.id, mine[3].id);
    ck_assert_str_eq(got.job_id, job);
    ck_assert_str_eq(got.status, "queued");
    ck_assert_int_eq(got.against_model, PG_PRIV_PUBLIC);
    ck_assert_int_eq(got.against_n, 603);
    ck_assert_int_eq(got.job_step, 40);
    ck_assert_int_eq(got.seed, (INT64_C(1) << 53) - 1);
    ck_assert_int_eq(got.created_at, 103);
    ck_assert_int_eq(got.job_model, PG_PRIV_LOCAL);
    ck_assert_double_eq(got.job_epsilon, 103.5);
    ck_assert_int_eq(got.utility, 1);
    pg_report_rows_free(&got, 1);
    ck_assert_int_eq(pg_db_report_get(db, ta, mine[4].id, &got, &found, NULL), PG_OK);
    ck_assert(isnan(got.job_epsilon)); /* NaN is stored as none */
    ck_assert_int_eq(got.utility, 0);
    ck_assert_ptr_null(got.result);
    ck_assert_ptr_null(got.figures);
    ck_assert_ptr_null(got.error);
    pg_report_rows_free(&got, 1);
    /* foreign and unknown ids, malformed ids */
    ck_assert_int_eq(pg_db_report_get(db, tb, mine[3].id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_report_get(db, ta, "rep_nope", &got, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_report_get(db, ta, "x'; --", &got, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);

    /* all of them, pages of 3, oldest first, only this tenant's job */
    for (int pub = 0; pub <= 1; pub++) {
        int want[N], nw = 0;
        for (int i = 0; i < N; i++)
            if (!pub || i % 3 != 1) want[nw++] = i;
        int64_t after = 0;
        int seen = 0;
        for (;;) {
            pg_report_row *list;
            size_t n;
            ck_assert_int_eq(pg_db_report_list(db, ta, job, pub, after, 3, &list, &n, NULL), PG_OK);
            if (!n) break;
            ck_assert_uint_le(n, 3);
            for (size_t i = 0; i < n; i++) {
                ck_assert_int_lt(seen, nw);
                ck_assert_str_eq(list[i].id, mine[want[seen]].id);
                ck_assert_ptr_null(list[i].result);
                seen++;
            }
            after = list[n - 1].seq;
            pg_report_rows_free(list, n);
            free(list);
        }
        ck_assert_int_eq(seen, nw);
    }
    for (int i = 0; i < N; i++) cancel(db, &mine[i]);
    cancel(db, &other);
    cancel(db, &elsewhere);
    pg_db_close(db);
}
END_TEST

START_TEST(queue_bound_refuses_and_writes_nothing)
{
    pg_db *db = pg_test_db_open();
    char ten[PG_ID_MAX], job[PG_ID_MAX];
    pg_test_uid(ten, sizeof ten, "ten_");
    pg_test_uid(job, sizeof job, "job_");
    pg_report_row a, b;
    put_report(db, ten, job, PG_PRIV_PUBLIC, 1, &a);
    put_report(db, ten, job, PG_PRIV_PUBLIC, 2, &b);
    /* Count what is queued now (a shared database may hold other tests'). */
    pg_report_row r = a;
    pg_test_uid(r.id, sizeof r.id, "rep_");
    int full = -1;
    /* a bound of 2 is full with a and b queued */
    ck_assert_int_eq(pg_db_report_insert(db, &r, 2, &full, NULL), PG_OK);
    ck_assert_int_eq(full, 1);
    pg_report_row got;
    int found;
    ck_assert_int_eq(pg_db_report_get(db, ten, r.id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    /* cancelled reports do not count */
    cancel(db, &a);
    cancel(db, &b);
    ck_assert_int_eq(pg_db_report_insert(db, &r, 1, &full, NULL), PG_OK);
    ck_assert_int_eq(full, 0);
    cancel(db, &r);
    /* malformed rows are refused */
    pg_report_row bad = r;
    snprintf(bad.against_id, sizeof bad.against_id, "../x");
    ck_assert_int_eq(pg_db_report_insert(db, &bad, 10, &full, NULL), PG_EINVAL);
    bad = r;
    bad.n = 0;
    ck_assert_int_eq(pg_db_report_insert(db, &bad, 10, &full, NULL), PG_EINVAL);
    pg_db_close(db);
}
END_TEST

static int claim_one(pg_db *db, int64_t now, int64_t stale, pg_report_row *out)
{
    pg_report_row *r = NULL;
    int found = -1;
    pg_error err = {0};
    ck_assert_msg(pg_db_report_claim(db, now, stale, &r, &found, &err) == PG_OK, "%s", err.msg);
    if (!found) {
        ck_assert_ptr_null(r);
        return 0;
    }
    *out = *r;
    free(r);
    return 1;
}

/* Claims at now (stale after 600 s) and checks it got the report want. */
static void claims(pg_db *db, int64_t now, const pg_report_row *want)
{
    pg_report_row got;
    ck_assert(claim_one(db, now, 600, &got));
    ck_assert_str_eq(got.id, want->id);
    pg_report_rows_free(&got, 1);
}

START_TEST(claim_progress_finish_and_figures)
{
    pg_db *db = pg_test_db_open();
    char ten[PG_ID_MAX], job[PG_ID_MAX];
    pg_test_uid(ten, sizeof ten, "ten_");
    pg_test_uid(job, sizeof job, "job_");
    pg_report_row a, b, c;
    put_report(db, ten, job, PG_PRIV_PUBLIC, 1, &a);
    put_report(db, ten, job, PG_PRIV_LOCAL, 2, &b);
    put_report(db, ten, job, PG_PRIV_PUBLIC, 3, &c);
    cancel(db, &b);
    pg_report_row got;
    /* oldest first, cancelled skipped */
    ck_assert(claim_one(db, 1000, 600, &got));
    ck_assert_str_eq(got.id, a.id);
    ck_assert_str_eq(got.status, "running");
    ck_assert_int_eq(got.started_at, 1000);
    pg_report_rows_free(&got, 1);
    claims(db, 1001, &c);
    /* both running and fresh: nothing to claim */
    ck_assert(!claim_one(db, 1002, 600, &got));

    int held = -1, found;
    ck_assert_int_eq(pg_db_report_progress(db, a.id, "pairwise", 0.25, 1010, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    ck_assert_int_eq(pg_db_report_get(db, ten, a.id, &got, &found, NULL), PG_OK);
    ck_assert_str_eq(got.stage, "pairwise");
    ck_assert_double_eq_tol(got.progress, 0.25, 1e-12);
    ck_assert_int_eq(got.updated_at, 1010);
    pg_report_rows_free(&got, 1);

    /* figures: arbitrary bytes (NULs included) come back exactly */
    enum { L1 = 70001, L2 = 3 };
    unsigned char *p1 = malloc(L1), p2[L2] = {0, 0x89, 0};
    for (int i = 0; i < L1; i++) p1[i] = (unsigned char)(i * 131 + (i >> 8));
    pg_report_figure figs[2] = {{"histograms-1.png", p1, L1}, {"scatter.png", p2, L2}};
    pg_error err = {0};
    ck_assert_msg(pg_db_report_finish(db, a.id, "succeeded", NULL, "{\"k\":1}", figs, 2, 1020,
                                      &held, &err) == PG_OK,
                  "%s", err.msg);
    ck_assert_int_eq(held, 1);
    ck_assert_int_eq(pg_db_report_get(db, ten, a.id, &got, &found, NULL), PG_OK);
    ck_assert_str_eq(got.status, "succeeded");
    ck_assert_str_eq(got.result, "{\"k\":1}");
    ck_assert_str_eq(got.figures, "[\"histograms-1.png\",\"scatter.png\"]");
    ck_assert_double_eq_tol(got.progress, 1, 1e-12);
    ck_assert_int_eq(got.finished_at, 1020);
    pg_report_rows_free(&got, 1);
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(
        pg_db_report_figure_get(db, a.id, "histograms-1.png", 1 << 20, &bytes, &len, &found, NULL),
        PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_uint_eq(len, L1);
    ck_assert(!memcmp(bytes, p1, L1));
    free(bytes);
    ck_assert_int_eq(
        pg_db_report_figure_get(db, a.id, "scatter.png", 1 << 20, &bytes, &len, &found, NULL),
        PG_OK);
    ck_assert_uint_eq(len, L2);
    ck_assert(!memcmp(bytes, p2, L2));
    free(bytes);
    ck_assert_int_eq(
        pg_db_report_figure_get(db, a.id, "histograms-1.png", 1000, &bytes, &len, &found, NULL),
        PG_ENOMEM);
    ck_assert_int_eq(
        pg_db_report_figure_get(db, a.id, "nope.png", 1 << 20, &bytes, &len, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(
        pg_db_report_figure_get(db, a.id, "../x.png", 1 << 20, &bytes, &len, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    /* an ended report takes no more writes and cannot be cancelled */
    ck_assert_int_eq(pg_db_report_progress(db, a.id, "x", 0.5, 1030, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 0);
    ck_assert_int_eq(
        pg_db_report_finish(db, a.id, "failed", "no", NULL, NULL, 0, 1030, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 0);
    int done;
    ck_assert_int_eq(pg_db_report_cancel(db, ten, a.id, 1040, &found, &done, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(done, 0);
    ck_assert_int_eq(pg_db_report_get(db, ten, a.id, &got, &found, NULL), PG_OK);
    ck_assert_str_eq(got.status, "succeeded");
    pg_report_rows_free(&got, 1);

    /* failed keeps its error and stores no figures; bad statuses refused */
    ck_assert_int_eq(pg_db_report_finish(db, c.id, "running", NULL, NULL, NULL, 0, 1, &held, NULL),
                     PG_EINVAL);
    pg_report_figure badname = {"a/b.png", p2, L2};
    ck_assert_int_eq(
        pg_db_report_finish(db, c.id, "succeeded", NULL, "{}", &badname, 1, 1, &held, NULL),
        PG_EINVAL);
    ck_assert_int_eq(pg_db_report_finish(db, c.id, "failed", "rows are not finite", NULL, figs, 1,
                                         1050, &held, NULL),
                     PG_OK);
    ck_assert_int_eq(held, 1);
    ck_assert_int_eq(pg_db_report_get(db, ten, c.id, &got, &found, NULL), PG_OK);
    ck_assert_str_eq(got.status, "failed");
    ck_assert_str_eq(got.error, "rows are not finite");
    ck_assert_ptr_null(got.figures);
    pg_report_rows_free(&got, 1);
    ck_assert_int_eq(
        pg_db_report_figure_get(db, c.id, "histograms-1.png", 1 << 20, &bytes, &len, &found, NULL),
        PG_OK);
    ck_assert_int_eq(found, 0);
    free(p1);
    pg_db_close(db);
}
END_TEST

START_TEST(cancel_reaches_a_running_report_and_stale_ones_are_taken_over)
{
    pg_db *db = pg_test_db_open();
    char ten[PG_ID_MAX], job[PG_ID_MAX];
    pg_test_uid(ten, sizeof ten, "ten_");
    pg_test_uid(job, sizeof job, "job_");
    pg_report_row a, b, got;
    put_report(db, ten, job, PG_PRIV_PUBLIC, 1, &a);
    put_report(db, ten, job, PG_PRIV_PUBLIC, 2, &b);
    claims(db, 2000, &a);
    claims(db, 2000, &b);
    int found, done, held;
    /* a foreign tenant cannot cancel it */
    ck_assert_int_eq(pg_db_report_cancel(db, "ten_other", a.id, 2001, &found, &done, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_report_cancel(db, ten, a.id, 2001, &found, &done, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(done, 1);
    /* the worker's next write sees it and nothing it finishes is kept */
    ck_assert_int_eq(pg_db_report_progress(db, a.id, "utility", 0.7, 2002, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 0);
    unsigned char png[4] = {1, 2, 3, 4};
    pg_report_figure f = {"x.png", png, 4};
    ck_assert_int_eq(
        pg_db_report_finish(db, a.id, "succeeded", NULL, "{}", &f, 1, 2003, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 0);
    ck_assert_int_eq(pg_db_report_get(db, ten, a.id, &got, &found, NULL), PG_OK);
    ck_assert_str_eq(got.status, "cancelled");
    ck_assert_int_eq(got.finished_at, 2001);
    ck_assert_ptr_null(got.result);
    pg_report_rows_free(&got, 1);
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(pg_db_report_figure_get(db, a.id, "x.png", 100, &bytes, &len, &found, NULL),
                     PG_OK);
    ck_assert_int_eq(found, 0);

    /* b's worker went silent at 2000: claimable from 2600 on, not before */
    ck_assert(!claim_one(db, 2599, 600, &got));
    ck_assert(claim_one(db, 2600, 600, &got));
    ck_assert_str_eq(got.id, b.id);
    ck_assert_int_eq(got.started_at, 2600);
    pg_report_rows_free(&got, 1);
    /* giving it back (shutdown) queues it again, progress reset */
    ck_assert_int_eq(pg_db_report_progress(db, b.id, "marginals", 0.1, 2601, &held, NULL), PG_OK);
    ck_assert_int_eq(
        pg_db_report_finish(db, b.id, "queued", NULL, NULL, NULL, 0, 2602, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    ck_assert_int_eq(pg_db_report_get(db, ten, b.id, &got, &found, NULL), PG_OK);
    ck_assert_str_eq(got.status, "queued");
    ck_assert_double_eq(got.progress, 0);
    ck_assert_int_eq(got.started_at, 0);
    ck_assert_int_eq(got.finished_at, 0);
    pg_report_rows_free(&got, 1);
    claims(db, 2603, &b);
    cancel(db, &b);
    ck_assert(!claim_one(db, 1000000, 600, &got));
    pg_db_close(db);
}
END_TEST

/* Concurrent claimers on separate handles: each report exactly once. */
enum { NCLAIM = 24, NTHR = 4 };
typedef struct claimer {
    char ids[NCLAIM][PG_ID_MAX];
    int n;
} claimer;

static void *claim_thread(void *arg)
{
    claimer *c = arg;
    pg_db *db = NULL;
    if (pg_db_open(pg_test_db_url, NULL, &db, NULL)) return NULL;
    for (;;) {
        pg_report_row *r;
        int found;
        if (pg_db_report_claim(db, 5000, 600, &r, &found, NULL) || !found) break;
        snprintf(c->ids[c->n++], PG_ID_MAX, "%s", r->id);
        pg_report_rows_free(r, 1);
        free(r);
        if (c->n == NCLAIM) break;
    }
    pg_db_close(db);
    return NULL;
}

START_TEST(concurrent_claims_take_each_report_once)
{
    pg_db *db = pg_test_db_open();
    char ten[PG_ID_MAX], job[PG_ID_MAX];
    pg_test_uid(ten, sizeof ten, "ten_");
    pg_test_uid(job, sizeof job, "job_");
    pg_report_row r[NCLAIM];
    for (int i = 0; i < NCLAIM; i++) put_report(db, ten, job, PG_PRIV_PUBLIC, i, &r[i]);
    static claimer cl[NTHR];
    memset(cl, 0, sizeof cl);
    pthread_t th[NTHR];
    for (int t = 0; t < NTHR; t++) pthread_create(&th[t], NULL, claim_thread, &cl[t]);
    for (int t = 0; t < NTHR; t++) pthread_join(th[t], NULL);
    int count[NCLAIM] = {0}, total = 0;
    for (int t = 0; t < NTHR; t++)
        for (int k = 0; k < cl[t].n; k++)
            for (int i = 0; i < NCLAIM; i++)
                if (!strcmp(cl[t].ids[k], r[i].id)) {
                    count[i]++;
                    total++;
                }
    ck_assert_int_eq(total, NCLAIM);
    for (int i = 0; i < NCLAIM; i++) ck_assert_int_eq(count[i], 1);
    for (int i = 0; i < NCLAIM; i++) cancel(db, &r[i]);
    pg_db_close(db);
}
END_TEST

/* Delete: a report and its figures go in one step; a running one is
 * refused; a foreign tenant's or an unknown id is "not found"; deleting
 * again is "not found"; a deleted queued report is never claimed. */
START_TEST(delete_removes_report_and_figures_never_a_running_one)
{
    pg_db *db = pg_test_db_open();
    char ten[PG_ID_MAX], job[PG_ID_MAX];
    pg_test_uid(ten, sizeof ten, "ten_");
    pg_test_uid(job, sizeof job, "job_");
    pg_report_row a, b, got;
    put_report(db, ten, job, PG_PRIV_PUBLIC, 1, &a);
    put_report(db, ten, job, PG_PRIV_LOCAL, 2, &b);
    claims(db, 3000, &a);
    int found = -1, conflict = -1, held;
    ck_assert_int_eq(pg_db_report_delete(db, ten, a.id, &found, &conflict, NULL), PG_OK);
    ck_assert(found && conflict); /* running: refused, nothing deleted */
    ck_assert_int_eq(pg_db_report_get(db, ten, a.id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq(got.status, "running");
    pg_report_rows_free(&got, 1);
    unsigned char png[5] = {1, 2, 0, 4, 5};
    pg_report_figure fig = {"scatter.png", png, sizeof png};
    ck_assert_int_eq(
        pg_db_report_finish(db, a.id, "succeeded", NULL, "{}", &fig, 1, 3010, &held, NULL), PG_OK);
    ck_assert_int_eq(held, 1);
    /* another tenant's id, a malformed id: not found, nothing deleted */
    ck_assert_int_eq(pg_db_report_delete(db, "ten_other", a.id, &found, &conflict, NULL), PG_OK);
    ck_assert(!found && !conflict);
    ck_assert_int_eq(pg_db_report_delete(db, ten, "../rep", &found, &conflict, NULL), PG_OK);
    ck_assert(!found && !conflict);
    ck_assert_int_eq(pg_db_report_get(db, ten, a.id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    pg_report_rows_free(&got, 1);
    /* the owner deletes it: row and figure bytes are gone */
    ck_assert_int_eq(pg_db_report_delete(db, ten, a.id, &found, &conflict, NULL), PG_OK);
    ck_assert(found && !conflict);
    ck_assert_int_eq(pg_db_report_get(db, ten, a.id, &got, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    unsigned char *bytes = NULL;
    size_t len;
    ck_assert_int_eq(
        pg_db_report_figure_get(db, a.id, "scatter.png", 1 << 20, &bytes, &len, &found, NULL),
        PG_OK);
    ck_assert_int_eq(found, 0);
    ck_assert_int_eq(pg_db_report_delete(db, ten, a.id, &found, &conflict, NULL), PG_OK);
    ck_assert(!found && !conflict);
    /* a queued report goes before any worker takes it */
    ck_assert_int_eq(pg_db_report_delete(db, ten, b.id, &found, &conflict, NULL), PG_OK);
    ck_assert(found && !conflict);
    ck_assert(!claim_one(db, 3020, 600, &got));
    pg_report_row *list = NULL;
    size_t n = 9;
    ck_assert_int_eq(pg_db_report_list(db, ten, job, 0, 0, 100, &list, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 0);
    free(list);
    pg_db_close(db);
}
END_TEST

typedef struct del_race {
    pthread_barrier_t *go;
    const char *tenant, *id;
    int claimed, found, conflict;
    char claimed_id[PG_ID_MAX];
} del_race;

static void *race_claim(void *p)
{
    del_race *x = p;
    pg_db *db = pg_test_db_open();
    pg_report_row *r = NULL;
    int found = 0;
    pthread_barrier_wait(x->go);
    ck_assert_int_eq(pg_db_report_claim(db, 4000, 600, &r, &found, NULL), PG_OK);
    x->claimed = found;
    if (found) {
        snprintf(x->claimed_id, sizeof x->claimed_id, "%s", r->id);
        pg_report_rows_free(r, 1);
        free(r);
    }
    pg_db_close(db);
    return NULL;
}

static void *race_delete(void *p)
{
    del_race *x = p;
    pg_db *db = pg_test_db_open();
    pthread_barrier_wait(x->go);
    ck_assert_int_eq(pg_db_report_delete(db, x->tenant, x->id, &x->found, &x->conflict, NULL),
                     PG_OK);
    pg_db_close(db);
    return NULL;
}

/* A delete and a claim of one queued report at once, on two connections:
 * either the claim wins (the delete is refused, the report runs) or the
 * delete does (the claim finds nothing); never both, never neither. */
START_TEST(delete_and_claim_race_one_winner)
{
    pg_db *db = pg_test_db_open();
    char ten[PG_ID_MAX], job[PG_ID_MAX];
    pg_test_uid(ten, sizeof ten, "ten_");
    pg_test_uid(job, sizeof job, "job_");
    int claims = 0, deletes = 0;
    for (int round = 0; round < 20; round++) {
        pg_report_row r;
        put_report(db, ten, job, PG_PRIV_PUBLIC, round, &r);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        del_race x = {.go = &go, .tenant = ten, .id = r.id};
        pthread_t tc, td;
        pthread_create(&tc, NULL, race_claim, &x);
        pthread_create(&td, NULL, race_delete, &x);
        pthread_join(tc, NULL);
        pthread_join(td, NULL);
        pthread_barrier_destroy(&go);
        ck_assert_int_eq(x.found, 1);
        ck_assert_int_eq(x.claimed, x.conflict); /* claimed iff the delete was refused */
        pg_report_row got;
        int found;
        ck_assert_int_eq(pg_db_report_get(db, ten, r.id, &got, &found, NULL), PG_OK);
        ck_assert_int_eq(found, x.claimed);
        if (x.claimed) {
            ck_assert_str_eq(x.claimed_id, r.id);
            ck_assert_str_eq(got.status, "running");
            pg_report_rows_free(&got, 1);
            cancel(db, &r);
            claims++;
        } else {
            deletes++;
        }
    }
    fprintf(stderr, "delete vs claim: %d claims won, %d deletes won\n", claims, deletes);
    pg_db_close(db);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("db_reports");
    TCase *t = tcase_create("reports");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, insert_get_list_tenancy_and_filter);
    tcase_add_test(t, queue_bound_refuses_and_writes_nothing);
    tcase_add_test(t, claim_progress_finish_and_figures);
    tcase_add_test(t, cancel_reaches_a_running_report_and_stale_ones_are_taken_over);
    tcase_add_test(t, concurrent_claims_take_each_report_once);
    tcase_add_test(t, delete_removes_report_and_figures_never_a_running_one);
    tcase_add_test(t, delete_and_claim_race_one_winner);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
