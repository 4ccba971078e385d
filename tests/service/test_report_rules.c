/* The privacy rule of quality reports for every scope x action x model
 * (the expected table is written out here, not derived from the code), the
 * marks a report carries, and the validation of {against, n, seed}. */
#include <jansson.h>
#include <math.h>

#include "service/reports/report_rules.h"
#include "support/pg_test.h"

enum { R = PG_SCOPE_READ, A = PG_SCOPE_ADMIN };
enum { C = PG_REPORT_CREATE, G = PG_REPORT_READ, X = PG_REPORT_CANCEL, D = PG_REPORT_DELETE };
enum { LOC = PG_PRIV_LOCAL, CEN = PG_PRIV_CENTRAL, PUB = PG_PRIV_PUBLIC };

static const struct {
    int scope, action, model, want;
} TABLE[] = {
    /* public reference: anyone who reads the job; deleting is a write */
    {R, C, PUB, 0},
    {R, G, PUB, 0},
    {R, X, PUB, 0},
    {R, D, PUB, 403},
    {A, C, PUB, 0},
    {A, G, PUB, 0},
    {A, X, PUB, 0},
    {A, D, PUB, 0},
    /* private reference: admin only; a reader is refused plainly when it
     * names the dataset, and otherwise sees no such report */
    {R, C, LOC, 403},
    {R, G, LOC, 404},
    {R, X, LOC, 404},
    {R, D, LOC, 404},
    {R, C, CEN, 403},
    {R, G, CEN, 404},
    {R, X, CEN, 404},
    {R, D, CEN, 404},
    {A, C, LOC, 0},
    {A, G, LOC, 0},
    {A, X, LOC, 0},
    {A, D, LOC, 0},
    {A, C, CEN, 0},
    {A, G, CEN, 0},
    {A, X, CEN, 0},
    {A, D, CEN, 0},
};

START_TEST(every_known_combination)
{
    ck_assert_int_eq(sizeof TABLE / sizeof TABLE[0], 2 * 4 * 3);
    for (size_t i = 0; i < sizeof TABLE / sizeof TABLE[0]; i++)
        ck_assert_msg(pg_report_decide(TABLE[i].scope, TABLE[i].action, TABLE[i].model) ==
                          TABLE[i].want,
                      "scope %d action %d model %d: want %d", TABLE[i].scope, TABLE[i].action,
                      TABLE[i].model, TABLE[i].want);
}
END_TEST

START_TEST(unknown_values_never_widen_access)
{
    const int scopes[] = {0, R, A, 3, -1}, actions[] = {0, C, G, X, D, 5, -7},
              models[] = {0, LOC, CEN, PUB, 4, -2};
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 7; b++)
            for (int c = 0; c < 6; c++) {
                int s = scopes[a], act = actions[b], m = models[c];
                int v = pg_report_decide(s, act, m);
                int known = (s == R || s == A) && act >= C && act <= D;
                ck_assert(v == 0 || v == 403 || v == 404);
                if (!known) ck_assert_int_ne(v, 0);
                /* an unknown model is treated as private */
                if (m != PUB && m != LOC && m != CEN)
                    ck_assert_int_eq(v, pg_report_decide(s, act, CEN));
                /* a private-data report is invisible to any non-admin past
                 * creation: the same answer as a missing report */
                if (m != PUB && s != A && act != C) ck_assert_int_eq(v, 404);
            }
}
END_TEST

START_TEST(marks_follow_the_reference)
{
    const int models[] = {LOC, CEN, PUB, 9};
    for (int j = 0; j < 4; j++)
        for (int a = 0; a < 4; a++) {
            pg_report_marks m;
            pg_report_marks_for(models[j], models[a], &m);
            if (models[a] == PUB) {
                ck_assert_int_eq(m.is_private, 1);
                ck_assert_str_eq(m.audience, "tenant");
                ck_assert_int_eq(m.figure_mark, 0);
                /* the job's ε covers a report on public data only when the
                 * job itself had one */
                ck_assert_int_eq(m.quote_epsilon, models[j] == LOC || models[j] == CEN);
            } else {
                ck_assert_int_eq(m.is_private, 0);
                ck_assert_str_eq(m.audience, "data owner");
                ck_assert_int_eq(m.figure_mark, 1);
                ck_assert_int_eq(m.quote_epsilon, 0);
                ck_assert_ptr_nonnull(strstr(m.note, "not differentially private"));
            }
        }
}
END_TEST

START_TEST(marks_in_json)
{
    pg_report_marks m;
    json_t *o = json_pack("{s:f,s:i}", "epsilon", 3.0, "n", 10);
    pg_report_marks_for(CEN, CEN, &m);
    ck_assert_int_eq(pg_report_marks_json(&m, 3.0, o, NULL), PG_OK);
    ck_assert(json_is_false(json_object_get(o, "private")));
    ck_assert_str_eq(json_string_value(json_object_get(o, "audience")), "data owner");
    ck_assert_ptr_null(json_object_get(o, "epsilon")); /* removed, never printed as if DP */
    ck_assert_int_eq(json_integer_value(json_object_get(o, "n")), 10);
    pg_report_marks_for(LOC, PUB, &m);
    ck_assert_int_eq(pg_report_marks_json(&m, 1.5, o, NULL), PG_OK);
    ck_assert(json_is_true(json_object_get(o, "private")));
    ck_assert_double_eq(json_real_value(json_object_get(o, "epsilon")), 1.5);
    const double bad[] = {NAN, INFINITY, 0.0, -1.0};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(pg_report_marks_json(&m, bad[i], o, NULL), PG_OK);
        ck_assert_ptr_null(json_object_get(o, "epsilon"));
    }
    pg_report_marks_for(PUB, PUB, &m);
    ck_assert_int_eq(pg_report_marks_json(&m, 2.0, o, NULL), PG_OK);
    ck_assert_ptr_null(json_object_get(o, "epsilon"));
    json_decref(o);
    json_t *arr = json_array();
    pg_error err = {0};
    ck_assert_int_eq(pg_report_marks_json(&m, 2.0, arr, &err), PG_EINVAL);
    json_decref(arr);
}
END_TEST

/* Parses `text`; returns the rc and leaves the errors in *e. */
static int parse(const char *text, pg_report_request *q, pg_report_errors *e)
{
    json_t *b = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(b);
    int rc = pg_report_request_parse(b, q, e);
    json_decref(b);
    return rc;
}

static int has_error(const pg_report_errors *e, const char *field)
{
    for (int i = 0; i < e->n; i++)
        if (!strcmp(e->e[i].field, field)) return 1;
    return 0;
}

START_TEST(request_form)
{
    pg_report_request q;
    pg_report_errors e;
    ck_assert_int_eq(parse("{\"against\":\"ds_0123456789abcdef\",\"n\":500,\"seed\":7}", &q, &e),
                     PG_OK);
    ck_assert_str_eq(q.against, "ds_0123456789abcdef");
    ck_assert_uint_eq(q.n, 500);
    ck_assert(q.has_n && q.has_seed);
    ck_assert_uint_eq(q.seed, 7);
    ck_assert_int_eq(parse("{\"against\":\"ds_1\"}", &q, &e), PG_OK);
    ck_assert(!q.has_n && !q.has_seed);
    ck_assert_int_eq(q.utility, 1);
    ck_assert_int_eq(parse("{\"against\":\"ds_1\",\"utility\":false}", &q, &e), PG_OK);
    ck_assert_int_eq(q.utility, 0);
    ck_assert_int_eq(parse("{\"against\":\"ds_1\",\"utility\":true}", &q, &e), PG_OK);
    ck_assert_int_eq(q.utility, 1);
    ck_assert_int_eq(parse("{\"against\":\"ds_1\",\"n\":100000,\"seed\":9007199254740991}", &q, &e),
                     PG_OK);
    ck_assert_uint_eq(q.seed, 9007199254740991ULL);
    ck_assert_int_eq(parse("{\"against\":\"ds_1\",\"n\":1,\"seed\":0}", &q, &e), PG_OK);

    static const struct {
        const char *body, *field;
    } BAD[] = {
        {"{}", "against"},
        {"{\"against\":7}", "against"},
        {"{\"against\":\"\"}", "against"},
        {"{\"against\":\"a/b\"}", "against"},
        {"{\"against\":\"ds_0123456789012345678901234567890123456789\"}", "against"},
        {"{\"against\":null}", "against"},
        {"{\"against\":\"ds\",\"n\":0}", "n"},
        {"{\"against\":\"ds\",\"n\":-3}", "n"},
        {"{\"against\":\"ds\",\"n\":100001}", "n"},
        {"{\"against\":\"ds\",\"n\":10.0}", "n"},
        {"{\"against\":\"ds\",\"n\":\"10\"}", "n"},
        {"{\"against\":\"ds\",\"n\":true}", "n"},
        {"{\"against\":\"ds\",\"seed\":-1}", "seed"},
        {"{\"against\":\"ds\",\"seed\":9007199254740992}", "seed"},
        {"{\"against\":\"ds\",\"seed\":9223372036854775807}", "seed"},
        {"{\"against\":\"ds\",\"seed\":1.5}", "seed"},
        {"{\"against\":\"ds\",\"seed\":\"1\"}", "seed"},
        {"{\"against\":\"ds\",\"label\":1}", "label"},
        {"{\"against\":\"ds\",\"utility\":1}", "utility"},
        {"{\"against\":\"ds\",\"utility\":\"no\"}", "utility"},
        {"{\"against\":\"ds\",\"utility\":null}", "utility"},
    };
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        ck_assert_msg(parse(BAD[i].body, &q, &e) == PG_EINVAL, "%s accepted", BAD[i].body);
        ck_assert_msg(e.n == 1 && has_error(&e, BAD[i].field), "%s: %d errors, first %s",
                      BAD[i].body, e.n, e.n ? e.e[0].field : "-");
        ck_assert(e.e[0].message[0]);
    }
    /* every bad field at once */
    ck_assert_int_eq(parse("{\"n\":0,\"seed\":-1,\"x\":1,\"y\":2}", &q, &e), PG_EINVAL);
    ck_assert_int_eq(e.n, 5);
    ck_assert(has_error(&e, "against") && has_error(&e, "n") && has_error(&e, "seed") &&
              has_error(&e, "x") && has_error(&e, "y"));
    /* many unknown fields: the list is bounded */
    char big[4096] = "{";
    for (int i = 0; i < 40; i++) snprintf(big + strlen(big), 64, "\"f%d\":1,", i);
    strcat(big, "\"against\":\"ds\"}");
    ck_assert_int_eq(parse(big, &q, &e), PG_EINVAL);
    ck_assert_int_eq(e.n, PG_REPORT_MAX_ERRORS);
    json_t *arr = json_array();
    ck_assert_int_eq(pg_report_request_parse(arr, &q, &e), PG_EINVAL);
    ck_assert_int_eq(e.n, 1);
    json_decref(arr);
    ck_assert_int_eq(pg_report_request_parse(NULL, &q, &e), PG_EINVAL);
}
END_TEST

static pg_datasets_spec spec(int ndim, int64_t a, int64_t b, int64_t c, int64_t classes)
{
    pg_datasets_spec s;
    memset(&s, 0, sizeof s);
    s.ndim = ndim;
    s.shape[0] = a, s.shape[1] = b, s.shape[2] = c;
    s.d = (size_t)a * (size_t)(ndim == 3 ? b * c : 1);
    s.num_classes = classes;
    s.lo = -1, s.hi = 1, s.model = PUB;
    return s;
}

static int check(pg_report_request *q, const pg_datasets_spec *job, const pg_datasets_spec *ag,
                 int64_t rows, pg_report_errors *e)
{
    return pg_report_request_check(q, job, ag, rows, e);
}

START_TEST(request_against_the_datasets)
{
    pg_report_request q;
    pg_report_errors e;
    memset(&q, 0, sizeof q);
    pg_datasets_spec two = spec(1, 2, 0, 0, 0), three = spec(1, 3, 0, 0, 0);
    pg_datasets_spec img = spec(3, 1, 28, 28, 10), flat = spec(1, 784, 0, 0, 10),
                     rgb = spec(3, 3, 28, 28, 10), img5 = spec(3, 1, 28, 28, 5),
                     img0 = spec(3, 1, 28, 28, 0);
    /* defaults: n = 10000, or what the cell limit allows */
    ck_assert_int_eq(check(&q, &two, &two, 500, &e), PG_OK);
    ck_assert_uint_eq(q.n, PG_REPORT_DEFAULT_N);
    pg_datasets_spec wide = spec(1, 20000, 0, 0, 0);
    q.has_n = 0;
    ck_assert_int_eq(check(&q, &wide, &wide, 100, &e), PG_OK);
    ck_assert_uint_eq(q.n, PG_REPORT_MAX_CELLS / 20000);
    /* shapes must match exactly, not just in size */
    ck_assert_int_eq(check(&q, &two, &three, 500, &e), PG_EINVAL);
    ck_assert(has_error(&e, "against"));
    ck_assert_ptr_nonnull(strstr(e.e[0].message, "[3]"));
    ck_assert_ptr_nonnull(strstr(e.e[0].message, "[2]"));
    ck_assert_int_eq(check(&q, &img, &flat, 500, &e), PG_EINVAL);
    ck_assert_int_eq(check(&q, &img, &rgb, 500, &e), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.e[0].message, "[3,28,28]"));
    /* classes: equal when both declare them */
    ck_assert_int_eq(check(&q, &img, &img5, 500, &e), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.e[0].message, "classes"));
    ck_assert_int_eq(check(&q, &img, &img0, 500, &e), PG_OK);
    ck_assert_int_eq(check(&q, &img0, &img, 500, &e), PG_OK);
    /* rows: at least 2, at most the cell limit */
    ck_assert_int_eq(check(&q, &two, &two, 1, &e), PG_EINVAL);
    ck_assert_int_eq(check(&q, &two, &two, 0, &e), PG_EINVAL);
    ck_assert_int_eq(check(&q, &two, &two, 2, &e), PG_OK);
    int64_t most = (int64_t)(PG_REPORT_MAX_CELLS / 784);
    ck_assert_int_eq(check(&q, &img, &img, most, &e), PG_OK);
    ck_assert_int_eq(check(&q, &img, &img, most + 1, &e), PG_EINVAL);
    /* n within the cell limit for this d */
    q.has_n = 1, q.n = (size_t)most;
    ck_assert_int_eq(check(&q, &img, &img, 1000, &e), PG_OK);
    q.n = (size_t)most + 1;
    ck_assert_int_eq(check(&q, &img, &img, 1000, &e), PG_EINVAL);
    ck_assert(has_error(&e, "n"));
    q.n = 50;
    /* a missing dataset, and several errors at once */
    ck_assert_int_eq(check(&q, &two, NULL, 0, &e), PG_EINVAL);
    ck_assert_int_eq(e.n, 1);
    ck_assert_str_eq(e.e[0].message, "no such dataset");
    q.n = PG_REPORT_MAX_N;
    ck_assert_int_eq(check(&q, &img, &rgb, 1, &e), PG_EINVAL);
    ck_assert_int_eq(e.n, 3); /* shape, rows, n */
    /* rows too wide for any report */
    pg_datasets_spec huge = spec(1, (int64_t)PG_REPORT_MAX_CELLS + 1, 0, 0, 0);
    q.has_n = 0;
    ck_assert_int_eq(check(&q, &huge, &huge, 2, &e), PG_EINVAL);
    ck_assert(has_error(&e, "n"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("report_rules");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, every_known_combination);
    tcase_add_test(tc, unknown_values_never_widen_access);
    tcase_add_test(tc, marks_follow_the_reference);
    tcase_add_test(tc, marks_in_json);
    tcase_add_test(tc, request_form);
    tcase_add_test(tc, request_against_the_datasets);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
