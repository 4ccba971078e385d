#include <stdio.h>

#include "engine/data/table_ldp.h"
#include "engine/privacy/privacy.h"
#include "support/pg_table_test.h"
#include "support/pg_test.h"

static const char *SCHEMA =
    "{\"columns\": ["
    " {\"name\": \"age\", \"type\": \"integer\", \"min\": 0, \"max\": 100, \"nullable\": true},"
    " {\"name\": \"job\", \"type\": \"categorical\", \"categories\": [\"a\", \"b\", \"c\"],"
    "  \"nullable\": true},"
    " {\"name\": \"vip\", \"type\": \"boolean\"},"
    " {\"name\": \"x\", \"type\": \"continuous\", \"min\": -1, \"max\": 1},"
    " {\"name\": \"status\", \"type\": \"categorical\", \"categories\": [\"good\", \"bad\"]}"
    "], \"label\": \"status\"}";

static pg_table *load(const char *txt)
{
    return pg_test_table(txt);
}

START_TEST(plan_split_and_errors)
{
    pg_table *t = load(SCHEMA);
    pg_ldp_plan plan;
    pg_error err = {0};
    ck_assert_int_eq(
        pg_ldp_plan_make_split(t, PG_LDP_LAPLACE, 5.0, 0, PG_LDP_SPLIT_EVEN, &plan, &err), PG_OK);
    ck_assert_double_le(fabs(plan.epsilon - 5.0), 1e-12);
    ck_assert(plan.delta == 0.0);
    for (size_t c = 0; c < 5; c++) ck_assert_double_eq(plan.cols[c].epsilon, 1.0);
    /* age (nullable): half its epsilon to RR on the indicator, half to
     * Laplace on the value unit, sensitivity hi - lo = 2: b = 2 / 0.5. */
    ck_assert_int_eq(plan.cols[0].mechanism, PG_LDP_LAPLACE);
    ck_assert_uint_eq(plan.cols[0].units, 1);
    ck_assert_double_eq(plan.cols[0].sensitivity, 2.0);
    ck_assert_double_eq(plan.cols[0].missing_epsilon, 0.5);
    ck_assert_double_le(fabs(plan.cols[0].missing_keep - exp(0.5) / (exp(0.5) + 1)), 1e-15);
    ck_assert_double_ge(plan.cols[0].noise_scale, 4.0);
    ck_assert_double_le(plan.cols[0].noise_scale, 4.0 * (1 + 1e-6));
    /* x (not nullable): all of its epsilon on the value. */
    ck_assert_double_eq(plan.cols[3].missing_epsilon, 0.0);
    ck_assert_double_ge(plan.cols[3].noise_scale, 2.0);
    ck_assert_double_le(plan.cols[3].noise_scale, 2.0 * (1 + 1e-6));
    ck_assert_int_eq(plan.cols[1].mechanism, PG_LDP_RR);
    ck_assert_uint_eq(plan.cols[1].k, 4); /* 3 categories + missing */
    ck_assert_uint_eq(plan.cols[2].k, 2);
    ck_assert_uint_eq(plan.cols[4].k, 2); /* the label */
    ck_assert_double_le(fabs(plan.cols[1].keep - exp(1.0) / (exp(1.0) + 3)), 1e-15);
    pg_ldp_plan_free(&plan);

    ck_assert_int_eq(pg_ldp_plan_make(t, PG_LDP_GAUSSIAN, 5.0, 1e-5, &plan, &err), PG_OK);
    ck_assert_double_eq(plan.cols[0].delta, 5e-6);
    ck_assert_double_eq(plan.cols[0].sensitivity, 2.0);
    ck_assert_double_eq(plan.cols[3].sensitivity, 2.0);
    ck_assert_double_le(fabs(plan.delta - 1e-5), 1e-18);
    pg_ldp_plan_free(&plan);

    ck_assert_int_eq(pg_ldp_plan_make(t, PG_LDP_GAUSSIAN, 5.0, 0, &plan, &err), PG_EINVAL);
    ck_assert_int_eq(pg_ldp_plan_make(t, PG_LDP_LAPLACE, 5.0, 1e-5, &plan, &err), PG_EINVAL);
    ck_assert_int_eq(pg_ldp_plan_make(t, PG_LDP_LAPLACE, 0.0, 0, &plan, &err), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "column 'age' has no epsilon"));
    pg_table_free(t);

    /* Per-column epsilons from the schema; mixing with a total is refused. */
    t = load("{\"columns\": [{\"name\": \"a\", \"type\": \"boolean\", \"epsilon\": 0.5},"
             " {\"name\": \"b\", \"type\": \"integer\", \"min\": 1, \"max\": 3, \"epsilon\": 2}]}");
    ck_assert_int_eq(pg_ldp_plan_make(t, PG_LDP_LAPLACE, 0.0, 0, &plan, &err), PG_OK);
    ck_assert_double_eq(plan.epsilon, 2.5);
    ck_assert_double_eq(plan.cols[0].epsilon, 0.5);
    pg_ldp_plan_free(&plan);
    ck_assert_int_eq(pg_ldp_plan_make(t, PG_LDP_LAPLACE, 1.0, 0, &plan, &err), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "not both"));
    pg_table_free(t);
}
END_TEST

/* n rows with known value frequencies. */
static void fill(const pg_table *t, float *x, int64_t *labels, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float *row = x + i * t->width;
        pg_table_value age = {.missing = i % 10 == 0, .num = (double)(i % 101)};
        pg_table_value job = {.missing = i % 5 == 4, .cat = i % 5 < 3 ? i % 5 : 0};
        pg_table_value vip = {.cat = i % 4 == 0}, x0 = {.num = 0.5};
        pg_table_encode_value(t, 0, &age, PG_TABLE_BOUNDS_REFUSE, row, NULL);
        pg_table_encode_value(t, 1, &job, PG_TABLE_BOUNDS_REFUSE, row, NULL);
        pg_table_encode_value(t, 2, &vip, PG_TABLE_BOUNDS_REFUSE, row, NULL);
        pg_table_encode_value(t, 3, &x0, PG_TABLE_BOUNDS_REFUSE, row, NULL);
        labels[i] = i % 3 == 0;
    }
}

START_TEST(apply_refuses_what_breaks_the_sensitivity)
{
    pg_table *t = load(SCHEMA);
    pg_ldp_plan plan;
    pg_error err = {0};
    ck_assert_int_eq(pg_ldp_plan_make(t, PG_LDP_LAPLACE, 5.0, 0, &plan, &err), PG_OK);
    float x[4 * 16];
    int64_t labels[4];
    fill(t, x, labels, 4);
    float keep[4 * 16];
    memcpy(keep, x, sizeof x);
    pg_rng seeded, rng;
    pg_rng_seeded(&seeded, 3, 0);
    ck_assert_int_eq(pg_ldp_apply(&seeded, t, &plan, x, labels, 4, &err), PG_EPRIVACY);
    ck_assert_int_eq(pg_rng_secure(&rng, NULL), PG_OK);
    x[t->width + 7] = 1.5f; /* row 2, x out of [-1, 1] */
    ck_assert_int_eq(pg_ldp_apply(&rng, t, &plan, x, labels, 4, &err), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "row 2, column 'x'"));
    x[t->width + 7] = keep[t->width + 7];
    x[2 * t->width + 2] = 0.5f; /* row 3, job: not one-hot */
    ck_assert_int_eq(pg_ldp_apply(&rng, t, &plan, x, labels, 4, &err), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "row 3, column 'job'"));
    x[2 * t->width + 2] = keep[2 * t->width + 2];
    labels[3] = 2;
    ck_assert_int_eq(pg_ldp_apply(&rng, t, &plan, x, labels, 4, &err), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "row 4, column 'status'"));
    ck_assert_int_eq(memcmp(x, keep, sizeof x), 0); /* nothing changed */
    pg_ldp_plan_free(&plan);
    pg_table_free(t);
}
END_TEST

/* On a large sample: the randomized columns are valid encodings whose
 * frequencies the inverse channel brings back (6 standard deviations), and
 * the numeric noise has the stated Laplace variance 2 b^2. The noise is
 * secure (new every run): 9 checks at 6 sd are 2e-8 per run together (at
 * 5 sd they were 5e-6, more with the Laplace variance's heavier tail); a
 * wrong keep probability or noise scale still misses by tens of sd. */
START_TEST(apply_statistics)
{
    pg_table *t = load(SCHEMA);
    const size_t n = 60000;
    pg_ldp_plan plan;
    pg_error err = {0};
    ck_assert_int_eq(pg_ldp_plan_make(t, PG_LDP_LAPLACE, 5.0, 0, &plan, &err), PG_OK);
    float *x = malloc(n * t->width * sizeof *x), *clean = malloc(n * t->width * sizeof *x);
    int64_t *labels = malloc(n * sizeof *labels);
    fill(t, x, labels, n);
    memcpy(clean, x, n * t->width * sizeof *x);
    pg_rng rng;
    ck_assert_int_eq(pg_rng_secure(&rng, NULL), PG_OK);
    ck_assert_int_eq(pg_ldp_apply(&rng, t, &plan, x, labels, n, &err), PG_OK);
    /* job: values a, b, c, missing with true frequencies .2 .2 .2 ... */
    double f[4] = {0}, est[4];
    const double truth[4] = {0.4, 0.2, 0.2, 0.2};
    for (size_t i = 0; i < n; i++) {
        pg_table_value v;
        const float *u = x + i * t->width + 2;
        int ones = 0;
        for (int j = 0; j < 4; j++) ones += u[j] == 1.0f, ck_assert(u[j] == 0.0f || u[j] == 1.0f);
        ck_assert_int_eq(ones, 1);
        pg_table_decode_value(t, 1, x + i * t->width, 1, &v);
        f[v.missing ? 3 : v.cat] += 1.0 / (double)n;
    }
    ck_assert_int_eq(pg_rr_estimate(4, 1.0, f, est, NULL), PG_OK);
    double p = plan.cols[1].keep, q = (1 - p) / 3;
    for (int j = 0; j < 4; j++) {
        double fj = q + (p - q) * truth[j];
        double sd = sqrt(fj * (1 - fj) / (double)n) / (p - q);
        ck_assert_msg(fabs(est[j] - truth[j]) < 6 * sd, "job %d: %g vs %g", j, est[j], truth[j]);
    }
    /* age's missing indicator: binary RR, true missing rate 0.1 (i % 10 == 0). */
    double fm[2] = {0}, em[2];
    for (size_t i = 0; i < n; i++) {
        float ind = x[i * t->width + 1];
        ck_assert(ind == 0.0f || ind == 1.0f);
        fm[ind == 1.0f] += 1.0 / (double)n;
    }
    ck_assert_int_eq(pg_rr_estimate(2, plan.cols[0].missing_epsilon, fm, em, NULL), PG_OK);
    double pm = plan.cols[0].missing_keep, qm = 1 - pm, fm1 = qm + (pm - qm) * 0.1;
    ck_assert_msg(fabs(em[1] - 0.1) < 6 * sqrt(fm1 * (1 - fm1) / (double)n) / (pm - qm),
                  "missing rate %g", em[1]);
    /* Numeric: noise = output - input on age's value unit and on x. */
    const size_t units[2] = {0, 7};
    const double b[2] = {plan.cols[0].noise_scale, plan.cols[3].noise_scale};
    for (int u = 0; u < 2; u++) {
        double s = 0, s2 = 0;
        for (size_t i = 0; i < n; i++) {
            double d = (double)x[i * t->width + units[u]] - (double)clean[i * t->width + units[u]];
            s += d, s2 += d * d;
        }
        double var = s2 / (double)n, want = 2 * b[u] * b[u];
        ck_assert_msg(fabs(s / (double)n) < 6 * sqrt(want / (double)n), "unit %zu mean %g",
                      units[u], s / (double)n);
        ck_assert_msg(fabs(var / want - 1) < 6 * sqrt(5.0 / (double)n), "unit %zu var %g vs %g",
                      units[u], var, want);
    }
    /* Labels stay classes. */
    for (size_t i = 0; i < n; i++) ck_assert(labels[i] == 0 || labels[i] == 1);
    free(x);
    free(clean);
    free(labels);
    pg_ldp_plan_free(&plan);
    pg_table_free(t);
}
END_TEST

START_TEST(declaration_checked_per_column)
{
    pg_table *t = load(SCHEMA);
    for (int mech = PG_LDP_LAPLACE; mech <= PG_LDP_GAUSSIAN; mech++) {
        pg_ldp_plan plan;
        pg_error err = {0};
        ck_assert_int_eq(
            pg_ldp_plan_make(t, mech, 3.0, mech == PG_LDP_GAUSSIAN ? 1e-6 : 0, &plan, &err), PG_OK);
        json_t *d = pg_ldp_declaration(t, &plan, 1234);
        ck_assert_ptr_nonnull(d);
        double e, dl;
        char field[PG_LDP_FIELD_MAX];
        ck_assert_msg(pg_ldp_check_declaration(t, d, &e, &dl, field, &err) == PG_OK, "%s", err.msg);
        ck_assert_double_eq(e, plan.epsilon);
        ck_assert_double_eq(dl, plan.delta);
        /* Tampering: less noise, more keep, wrong k, low totals, a column gone. */
        struct {
            size_t col;
            const char *key;
            double factor;
            int code;
            const char *field;
        } cases[] = {
            {0, "noise_scale", 0.999, PG_EPRIVACY, "privacy.columns[0].noise_scale"},
            {3, "sensitivity", 0.5, PG_EPRIVACY, "privacy.columns[3].sensitivity"},
            {1, "keep_probability", 1.001, PG_EPRIVACY, "privacy.columns[1].keep_probability"},
            {1, "k", 0, PG_EINVAL, "privacy.columns[1].k"},
            {0, "missing", 1.01, PG_EPRIVACY, "privacy.columns[0].missing"},
            {4, "epsilon", 0.5, PG_OK, NULL}, /* a smaller claim is refused below */
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            json_t *c = json_deep_copy(d);
            json_t *col = json_array_get(json_object_get(c, "columns"), cases[i].col);
            if (!strcmp(cases[i].key, "k"))
                json_object_set_new(col, "k", json_integer(3));
            else if (!strcmp(cases[i].key, "missing")) {
                json_t *m = json_object_get(col, "missing");
                json_object_set_new(
                    m, "keep_probability",
                    json_real(json_number_value(json_object_get(m, "keep_probability")) *
                              cases[i].factor));
            } else
                json_object_set_new(
                    col, cases[i].key,
                    json_real(json_number_value(json_object_get(col, cases[i].key)) *
                              cases[i].factor));
            int rc = pg_ldp_check_declaration(t, c, NULL, NULL, field, &err);
            if (cases[i].code == PG_OK) {
                /* Label epsilon halved: that column's keep probability is now
                 * too high for its claimed epsilon. */
                ck_assert_int_eq(rc, PG_EPRIVACY);
                ck_assert_str_eq(field, "privacy.columns[4].keep_probability");
            } else {
                ck_assert_msg(rc == cases[i].code, "case %zu: %d (%s)", i, rc, err.msg);
                ck_assert_str_eq(field, cases[i].field);
            }
            json_decref(c);
        }
        json_t *c = json_deep_copy(d);
        json_object_set_new(c, "epsilon", json_real(plan.epsilon * 0.9));
        ck_assert_int_eq(pg_ldp_check_declaration(t, c, NULL, NULL, field, &err), PG_EPRIVACY);
        json_array_remove(json_object_get(c, "columns"), 2);
        ck_assert_int_eq(pg_ldp_check_declaration(t, c, NULL, NULL, field, &err), PG_EINVAL);
        json_decref(c);
        json_decref(d);
        pg_ldp_plan_free(&plan);
    }
    pg_table_free(t);
}
END_TEST

static Suite *ldp_suite(void)
{
    Suite *s = suite_create("data/table_ldp");
    TCase *tc = tcase_create("table_ldp");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, plan_split_and_errors);
    tcase_add_test(tc, apply_refuses_what_breaks_the_sensitivity);
    tcase_add_test(tc, apply_statistics);
    tcase_add_test(tc, declaration_checked_per_column);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(ldp_suite)
