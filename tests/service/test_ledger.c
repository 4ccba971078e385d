/* The privacy ledger against the accountant: per-order RDP composition,
 * admission with the 409 numbers, delta0 handling, refunds, and concurrent
 * admissions through separate connections never overspending. Runs against
 * the backend PRIVGEN_TEST_DB names (db_support.h; default SQLite).
 *
 * No central-DP trainer exists in this build yet, so the plans here are the
 * ones such a trainer would produce: the Poisson-subsampled Gaussian curve
 * from engine/privacy for (q, sigma, steps). */
#include <math.h>
#include <pthread.h>

#include "engine/privacy/privacy.h"
#include "db_support.h"
#include "service/ledger.h"

#define CAP_DELTA 1e-5

static char tenant[PG_ID_MAX], ds_a[PG_ID_MAX], ds_b[PG_ID_MAX];

static void setup(void)
{
    pg_test_db_setup();
    pg_test_uid(tenant, sizeof tenant, "ten_");
    pg_test_uid(ds_a, sizeof ds_a, "ds_");
    pg_test_uid(ds_b, sizeof ds_b, "ds_");
}

static void teardown(void)
{
    pg_test_db_teardown();
}

static pg_db *open_with_datasets(void)
{
    pg_db *db = pg_test_db_open();
    pg_test_dataset(db, tenant, ds_a, 2);
    pg_test_dataset(db, tenant, ds_b, 2);
    return db;
}

/* Admits a job `job` (suffix made unique) on dataset ds; returns the quote. */
static int admit(pg_db *db, const char *ds, double cap, const pg_privacy_plan *p, const char *job,
                 char *id_out, pg_ledger_quote *q)
{
    pg_job_row row;
    pg_test_job_row(&row, tenant, ds, job);
    int rc = pg_db_job_admit(db, &row, p, cap, CAP_DELTA, q, NULL);
    if (id_out) strcpy(id_out, row.id);
    return rc;
}

static pg_privacy_plan sgm_plan(double q, double sigma, long steps)
{
    pg_privacy_plan p;
    memset(&p, 0, sizeof p);
    p.charges = true;
    p.norders = (int)pg_rdp_default_orders(p.orders, PG_PLAN_MAX_ORDERS);
    ck_assert_int_eq(
        pg_rdp_compute(q, sigma, (uint64_t)steps, p.orders, (size_t)p.norders, p.rdp, NULL), PG_OK);
    ck_assert_int_eq(pg_rdp_epsilon(q, sigma, (uint64_t)steps, CAP_DELTA, PG_RDP_CONV_IMPROVED,
                                    &p.epsilon, NULL, NULL),
                     PG_OK);
    p.delta = CAP_DELTA;
    p.noise_multiplier = sigma;
    p.sampling_rate = q;
    p.steps = steps;
    snprintf(p.mechanism, sizeof p.mechanism, "poisson_subsampled_gaussian");
    return p;
}

static double eps_of(double q, double sigma, long steps, double delta)
{
    double e;
    ck_assert_int_eq(
        pg_rdp_epsilon(q, sigma, (uint64_t)steps, delta, PG_RDP_CONV_IMPROVED, &e, NULL, NULL),
        PG_OK);
    return e;
}

START_TEST(composition_matches_the_accountant)
{
    pg_db *s = open_with_datasets();
    pg_privacy_plan p = sgm_plan(0.01, 1.1, 500);
    char id1[PG_ID_MAX];
    pg_ledger_quote q;
    ck_assert_int_eq(admit(s, ds_a, 100.0, &p, "job_1_", id1, &q), PG_OK);
    ck_assert(q.admit);
    ck_assert(q.spent_epsilon == 0.0);
    ck_assert(pg_test_reldiff(q.requested_epsilon, p.epsilon) < 1e-12);
    ck_assert_int_eq(admit(s, ds_a, 100.0, &p, "job_2_", NULL, &q), PG_OK);
    /* Two jobs of 500 steps compose exactly like one job of 1000 steps. */
    double want = eps_of(0.01, 1.1, 1000, CAP_DELTA);
    ck_assert_msg(pg_test_reldiff(q.total_epsilon, want) < 1e-9, "%.17g vs %.17g", q.total_epsilon,
                  want);
    ck_assert(pg_test_reldiff(q.spent_epsilon, p.epsilon) < 1e-9);
    /* Another dataset's ledger is separate. */
    pg_ledger_curve c;
    ck_assert_int_eq(pg_ledger_spent(s, ds_b, &c, NULL), PG_OK);
    ck_assert_int_eq(c.entries, 0);
    json_t *b;
    ck_assert_int_eq(pg_ledger_budget_json(s, ds_a, 100.0, CAP_DELTA, &b, NULL), PG_OK);
    ck_assert_int_eq((int)json_array_size(json_object_get(b, "entries")), 2);
    ck_assert(pg_test_reldiff(json_number_value(json_object_get(b, "spent_epsilon")), want) < 1e-9);
    json_t *e0 = json_array_get(json_object_get(b, "entries"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(e0, "job_id")), id1);
    ck_assert_double_eq_tol(json_number_value(json_object_get(e0, "noise_multiplier")), 1.1, 1e-15);
    ck_assert_int_eq((int)json_integer_value(json_object_get(e0, "steps")), 500);
    ck_assert(json_is_false(json_object_get(e0, "refunded")));
    json_decref(b);
    pg_db_close(s);
}
END_TEST

START_TEST(over_budget_is_refused_with_the_numbers)
{
    pg_db *s = open_with_datasets();
    pg_privacy_plan p = sgm_plan(0.02, 1.0, 300);
    double cap = 1.2 * p.epsilon; /* two jobs compose to about sqrt(2) times one */
    pg_ledger_quote q;
    ck_assert_int_eq(admit(s, ds_a, cap, &p, "job_1_", NULL, &q), PG_OK);
    ck_assert(q.admit);
    ck_assert_int_eq(admit(s, ds_a, cap, &p, "job_2_", NULL, &q), PG_OK);
    ck_assert(!q.admit);
    ck_assert(pg_test_reldiff(q.requested_epsilon, p.epsilon) < 1e-12);
    ck_assert(pg_test_reldiff(q.spent_epsilon, p.epsilon) < 1e-12);
    ck_assert(pg_test_reldiff(q.remaining_epsilon, cap - p.epsilon) < 1e-12);
    ck_assert(q.total_epsilon > cap);
    pg_ledger_curve c;
    ck_assert_int_eq(pg_ledger_spent(s, ds_a, &c, NULL), PG_OK);
    ck_assert_int_eq(c.entries, 1); /* the refused job reserved nothing */
    pg_db_close(s);
}
END_TEST

START_TEST(delta0_is_taken_from_the_cap_delta)
{
    pg_db *s = open_with_datasets();
    pg_privacy_plan p = sgm_plan(0.05, 2.0, 100);
    p.delta_extra = 0.6 * CAP_DELTA;
    pg_ledger_quote q;
    ck_assert_int_eq(admit(s, ds_a, 100.0, &p, "job_1_", NULL, &q), PG_OK);
    ck_assert(q.admit);
    /* delta_rdp = cap delta - delta0 */
    double want = eps_of(0.05, 2.0, 100, 0.4 * CAP_DELTA);
    ck_assert(pg_test_reldiff(q.requested_epsilon, want) < 1e-9);
    ck_assert(q.requested_epsilon > eps_of(0.05, 2.0, 100, CAP_DELTA));
    /* A second such job makes sum delta0 exceed the cap delta: never admitted. */
    ck_assert_int_eq(admit(s, ds_a, 100.0, &p, "job_2_", NULL, &q), PG_OK);
    ck_assert(!q.admit);
    ck_assert(isinf(q.total_epsilon));
    pg_db_close(s);
}
END_TEST

START_TEST(missing_orders_count_as_infinite)
{
    pg_ledger_curve c;
    pg_ledger_curve_init(&c);
    double o[2] = {2.0, 32.0}, r[2] = {0.1, 1.6};
    pg_ledger_curve_add(&c, o, r, 2, 0.0);
    double e;
    ck_assert_int_eq(pg_ledger_curve_epsilon(&c, CAP_DELTA, &e, NULL), PG_OK);
    /* Only orders 2 and 32 are finite: the result is their best conversion. */
    double want;
    ck_assert_int_eq(pg_rdp_to_dp(o, r, 2, CAP_DELTA, PG_RDP_CONV_IMPROVED, &want, NULL, NULL),
                     PG_OK);
    ck_assert(pg_test_reldiff(e, want) < 1e-12);
}
END_TEST

START_TEST(queued_cancel_refunds_once)
{
    pg_db *s = open_with_datasets();
    pg_privacy_plan p = sgm_plan(0.01, 1.0, 200);
    pg_ledger_quote q;
    char x[PG_ID_MAX], y[PG_ID_MAX];
    ck_assert_int_eq(admit(s, ds_a, 100.0, &p, "job_x", x, &q), PG_OK);
    ck_assert(q.admit);
    int done;
    ck_assert_int_eq(pg_db_job_cancel_queued(s, x, &done, NULL), PG_OK);
    ck_assert_int_eq(done, 1);
    pg_ledger_curve c;
    ck_assert_int_eq(pg_ledger_spent(s, ds_a, &c, NULL), PG_OK);
    ck_assert_int_eq(c.entries, 0);
    ck_assert_int_eq(pg_db_job_cancel_queued(s, x, &done, NULL), PG_OK);
    ck_assert_int_eq(done, 0);
    /* A running job is never refunded by cancel_queued. */
    pg_test_jobs_drain(s);
    ck_assert_int_eq(admit(s, ds_a, 100.0, &p, "job_y", y, &q), PG_OK);
    pg_test_job_claim(s, "w:1", y);
    ck_assert_int_eq(pg_db_job_cancel_queued(s, y, &done, NULL), PG_OK);
    ck_assert_int_eq(done, 0);
    ck_assert_int_eq(pg_ledger_spent(s, ds_a, &c, NULL), PG_OK);
    ck_assert_int_eq(c.entries, 1);
    json_t *b;
    ck_assert_int_eq(pg_ledger_budget_json(s, ds_a, 100.0, CAP_DELTA, &b, NULL), PG_OK);
    json_t *e0 = json_array_get(json_object_get(b, "entries"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(e0, "job_id")), x);
    ck_assert(json_is_true(json_object_get(e0, "refunded")));
    ck_assert(json_is_false(
        json_object_get(json_array_get(json_object_get(b, "entries"), 1), "refunded")));
    json_decref(b);
    /* The cancelled job's row says so. */
    pg_job_row *rows;
    size_t n;
    int seen = 0;
    ck_assert_int_eq(pg_db_job_load_all(s, &rows, &n, NULL), PG_OK);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].id, x)) {
            ck_assert_str_eq(rows[i].status, "cancelled");
            ck_assert(rows[i].finished_at > 0);
            seen = 1;
        }
    pg_job_rows_free(rows, n);
    ck_assert_int_eq(seen, 1);
    pg_db_close(s);
}
END_TEST

START_TEST(refused_admission_leaves_no_job_row)
{
    pg_db *s = open_with_datasets();
    pg_privacy_plan p = sgm_plan(0.02, 1.0, 300);
    pg_ledger_quote q;
    char id[PG_ID_MAX];
    ck_assert_int_eq(admit(s, ds_a, 0.5 * p.epsilon, &p, "job_r", id, &q), PG_OK);
    ck_assert(!q.admit);
    pg_job_row *rows;
    size_t n;
    ck_assert_int_eq(pg_db_job_load_all(s, &rows, &n, NULL), PG_OK);
    for (size_t i = 0; i < n; i++) ck_assert_str_ne(rows[i].id, id);
    pg_job_rows_free(rows, n);
    pg_ledger_entry *e;
    ck_assert_int_eq(pg_db_ledger_entries(s, ds_a, &e, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 0);
    pg_ledger_entries_free(e, n);
    pg_db_close(s);
}
END_TEST

typedef struct racer {
    pg_db *s;
    pg_privacy_plan *p;
    double cap;
    int idx, admitted, rc;
    pthread_barrier_t *bar;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    pg_ledger_quote q;
    pthread_barrier_wait(r->bar);
    r->rc = admit(r->s, ds_a, r->cap, r->p, "job_", NULL, &q);
    r->admitted = q.admit;
    return NULL;
}

START_TEST(concurrent_admissions_never_overspend)
{
    /* Eight separate handles (as eight processes would hold) race for a cap
     * that fits three jobs: the backend serializes admissions per dataset. */
    pg_privacy_plan p = sgm_plan(0.02, 1.2, 400);
    double three = eps_of(0.02, 1.2, 1200, CAP_DELTA), four = eps_of(0.02, 1.2, 1600, CAP_DELTA);
    double cap = 0.5 * (three + four);
    pg_db *stores[8];
    stores[0] = open_with_datasets();
    for (int i = 1; i < 8; i++) stores[i] = pg_test_db_open();
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 8);
    racer rs[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        rs[i] = (racer){stores[i], &p, cap, i, 0, 0, &bar};
        pthread_create(&th[i], NULL, race, &rs[i]);
    }
    int admitted = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(rs[i].rc, PG_OK);
        admitted += rs[i].admitted;
    }
    pthread_barrier_destroy(&bar);
    ck_assert_int_eq(admitted, 3);
    pg_ledger_curve c;
    double spent;
    ck_assert_int_eq(pg_ledger_spent(stores[0], ds_a, &c, NULL), PG_OK);
    ck_assert_int_eq(pg_ledger_curve_epsilon(&c, CAP_DELTA, &spent, NULL), PG_OK);
    ck_assert(spent <= cap);
    ck_assert(pg_test_reldiff(spent, three) < 1e-9);
    for (int i = 0; i < 8; i++) pg_db_close(stores[i]);
}
END_TEST

/* The plan's mechanism names the base mechanism and each one-off release
 * it makes (method.h: up to PG_PLAN_MECHANISM_MAX - 1 = 255 bytes); the
 * ledger row stores it whole, and the curve beside it still counts. Old
 * code: a 64-byte field cut such a name at 63 characters. */
START_TEST(a_long_mechanism_round_trips_through_the_ledger)
{
    pg_db *s = open_with_datasets();
    pg_privacy_plan p = sgm_plan(0.02, 1.0, 300);
    enum { LONG = 255 }; /* openapi.yaml: at most 255 characters */
    char want[LONG + 1];
    /* the longest name a method spells today, then releases up to 255 */
    size_t k = (size_t)snprintf(want, sizeof want, "%s",
                                "gaussian_projection_per_step_subsampled_wor+label_counts+"
                                "class_stats+qmap");
    for (int r = 0; k < sizeof want - 1; r++)
        k += (size_t)snprintf(want + k, sizeof want - k, "+release_%d", r);
    ck_assert_uint_eq(strlen(want), LONG);
    snprintf(p.mechanism, sizeof p.mechanism, "%s", want);
    char id[PG_ID_MAX];
    pg_ledger_quote q;
    ck_assert_int_eq(admit(s, ds_a, 100.0, &p, "job_m", id, &q), PG_OK);
    ck_assert(q.admit);
    pg_ledger_entry *e;
    size_t n;
    ck_assert_int_eq(pg_db_ledger_entries(s, ds_a, &e, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(e[0].job_id, id);
    json_t *o = json_loads(e[0].plan, 0, NULL);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(json_string_value(json_object_get(o, "mechanism")), want);
    json_decref(o);
    pg_ledger_entries_free(e, n);
    pg_ledger_curve c;
    ck_assert_int_eq(pg_ledger_spent(s, ds_a, &c, NULL), PG_OK);
    ck_assert_int_eq(c.entries, 1);
    double spent;
    ck_assert_int_eq(pg_ledger_curve_epsilon(&c, CAP_DELTA, &spent, NULL), PG_OK);
    ck_assert(pg_test_reldiff(spent, p.epsilon) < 1e-9);
    pg_db_close(s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ledger");
    TCase *tc = tcase_create("ledger");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, composition_matches_the_accountant);
    tcase_add_test(tc, over_budget_is_refused_with_the_numbers);
    tcase_add_test(tc, delta0_is_taken_from_the_cap_delta);
    tcase_add_test(tc, missing_orders_count_as_infinite);
    tcase_add_test(tc, queued_cancel_refunds_once);
    tcase_add_test(tc, refused_admission_leaves_no_job_row);
    tcase_add_test(tc, concurrent_admissions_never_overspend);
    tcase_add_test(tc, a_long_mechanism_round_trips_through_the_ledger);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
