#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/rng.h"
#include "engine/data/table.h"
#include "support/pg_test.h"

static const char *MIXED =
    "{\"columns\": ["
    " {\"name\": \"age\", \"type\": \"integer\", \"min\": 18, \"max\": 99, \"nullable\": true},"
    " {\"name\": \"income\", \"type\": \"continuous\", \"min\": -50.5, \"max\": 1000},"
    " {\"name\": \"job\", \"type\": \"categorical\", \"categories\": [\"fixed\", \"free lance\","
    "  \"others\"], \"nullable\": true},"
    " {\"name\": \"status\", \"type\": \"categorical\", \"categories\": [\"good\", \"bad\"]},"
    " {\"name\": \"owner\", \"type\": \"boolean\", \"nullable\": true},"
    " {\"name\": \"vip\", \"type\": \"boolean\", \"epsilon\": 0.25}"
    "], \"label\": \"status\"}";

static pg_table *load(const char *txt, pg_error *err)
{
    json_error_t je;
    json_t *j = json_loads(txt, 0, &je);
    ck_assert_msg(j != NULL, "bad test JSON: %s", je.text);
    pg_table *t = NULL;
    int rc = pg_table_from_json(j, &t, err);
    json_decref(j);
    ck_assert_int_eq(rc == PG_OK, t != NULL);
    return t;
}

START_TEST(layout_and_map_round_trip)
{
    pg_error err = {0};
    pg_table *t = load(MIXED, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    /* age: value + indicator (0,1); income (2); job 3 + indicator (3..6);
     * status: label, no units; owner: value + indicator (7,8); vip (9). */
    ck_assert_uint_eq(t->width, 10);
    const size_t off[] = {0, 2, 3, 7, 7, 9}, wid[] = {2, 1, 4, 0, 2, 1};
    for (size_t i = 0; i < 6; i++) {
        ck_assert_uint_eq(t->cols[i].offset, off[i]);
        ck_assert_uint_eq(t->cols[i].width, wid[i]);
    }
    ck_assert_uint_eq(t->label, 3);
    ck_assert_uint_eq(pg_table_num_classes(t), 2);
    ck_assert_double_eq(t->cols[5].epsilon, 0.25);
    ck_assert_uint_eq(pg_table_find(t, "job", 3), 2);
    ck_assert_uint_eq(pg_table_find(t, "jo", 2), PG_TABLE_NONE);

    /* The map decodes without the dataset: parse it back, same layout, same
     * serialization, and a row encoded by one decodes identically by the other. */
    json_t *map = pg_table_to_json(t);
    ck_assert_ptr_nonnull(map);
    char *txt = json_dumps(map, JSON_COMPACT);
    pg_table *u = load(txt, &err);
    ck_assert_msg(u != NULL, "%s", err.msg);
    json_t *map2 = pg_table_to_json(u);
    ck_assert(json_equal(map, map2));
    ck_assert_uint_eq(u->width, t->width);
    ck_assert_uint_eq(u->label, t->label);
    for (size_t i = 0; i < t->ncols; i++) {
        ck_assert_str_eq(u->cols[i].name, t->cols[i].name);
        ck_assert_int_eq(u->cols[i].type, t->cols[i].type);
        ck_assert_double_eq(u->cols[i].min, t->cols[i].min);
        ck_assert_double_eq(u->cols[i].max, t->cols[i].max);
        ck_assert_uint_eq(u->cols[i].ncat, t->cols[i].ncat);
        for (size_t k = 0; k < t->cols[i].ncat; k++)
            ck_assert_str_eq(u->cols[i].cats[k], t->cols[i].cats[k]);
    }
    ck_assert_ptr_nonnull(strstr(txt, "\"missing_unit\":6"));

    /* A map whose blocks disagree with its columns is refused. */
    json_t *blocks = json_object_get(map, "blocks");
    json_object_set_new(json_array_get(blocks, 1), "offset", json_integer(3));
    pg_table *bad = NULL;
    ck_assert_int_eq(pg_table_from_json(map, &bad, &err), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "'income'"));
    json_object_set_new(map, "width", json_integer(11));
    ck_assert_int_eq(pg_table_from_json(map, &bad, &err), PG_EINVAL);
    ck_assert_ptr_null(bad);
    free(txt);
    json_decref(map);
    json_decref(map2);
    pg_table_free(u);
    pg_table_free(t);
}
END_TEST

START_TEST(bad_schemas_name_the_column)
{
    static const struct {
        const char *json, *needle;
    } cases[] = {
        {"[]", "must be an object"},
        {"{\"columns\": []}", "non-empty"},
        {"{\"columns\": [{\"name\": \"a\", \"type\": \"continuous\", \"min\": 1}]}",
         "column 'a': 'max' is required"},
        {"{\"columns\": [{\"name\": \"a\", \"type\": \"continuous\", \"min\": 1, \"max\": 1}]}",
         "column 'a': 'min' must be below"},
        {"{\"columns\": [{\"name\": \"a\", \"type\": \"continuous\", \"min\": -1e308, \"max\": "
         "1e308}]}",
         "column 'a': 'max' - 'min' overflows"},
        {"{\"columns\": [{\"name\": \"a\", \"type\": \"integer\", \"min\": 0.5, \"max\": 3}]}",
         "column 'a': integer bounds"},
        {"{\"columns\": [{\"name\": \"a\", \"type\": \"integer\", \"min\": 0, \"max\": 5e6}]}",
         "column 'a': an integer column spans"},
        {"{\"columns\": [{\"name\": \"a\", \"type\": \"continuous\", \"min\": \"0\", \"max\": 3}]}",
         "column 'a': 'min' must be a number"},
        {"{\"columns\": [{\"name\": \"b\", \"type\": \"categorical\", \"categories\": [\"x\"]}]}",
         "column 'b': needs 2"},
        {"{\"columns\": [{\"name\": \"b\", \"type\": \"categorical\", \"categories\": [\"x\", "
         "\"x\"]}]}",
         "column 'b': category 'x' appears twice"},
        {"{\"columns\": [{\"name\": \"b\", \"type\": \"categorical\", \"categories\": [\"x\", "
         "3]}]}",
         "column 'b': category 2 is not a string"},
        {"{\"columns\": [{\"name\": \"b\", \"type\": \"categorical\"}]}",
         "column 'b': 'categories' must be"},
        {"{\"columns\": [{\"name\": \"c\", \"type\": \"boolean\", \"min\": 0}]}",
         "column 'c': unknown field 'min'"},
        {"{\"columns\": [{\"name\": \"c\", \"type\": \"bool\"}]}", "column 'c': 'type' must be"},
        {"{\"columns\": [{\"name\": \"c\", \"type\": \"boolean\", \"nullable\": 1}]}",
         "column 'c': 'nullable'"},
        {"{\"columns\": [{\"name\": \"c\", \"type\": \"boolean\", \"epsilon\": 0}]}",
         "column 'c': 'epsilon'"},
        {"{\"columns\": [{\"name\": \"c\", \"type\": \"boolean\"}, {\"name\": \"c\", \"type\": "
         "\"boolean\"}]}",
         "column 'c' is declared twice"},
        {"{\"columns\": [{\"name\": \"\", \"type\": \"boolean\"}]}", "column 1: name is empty"},
        {"{\"columns\": [{\"name\": \"a\\nb\", \"type\": \"boolean\"}]}", "control character"},
        {"{\"columns\": [{\"name\": \"c\", \"type\": \"boolean\"}], \"label\": \"d\"}",
         "label column 'd' is not declared"},
        {"{\"columns\": [{\"name\": \"c\", \"type\": \"boolean\", \"nullable\": true}, {\"name\": "
         "\"d\", \"type\": \"boolean\"}], \"label\": \"c\"}",
         "column 'c': a label must be"},
        {"{\"columns\": [{\"name\": \"c\", \"type\": \"boolean\"}], \"label\": \"c\"}",
         "needs a column besides the label"},
        {"{\"columns\": [{\"name\": \"c\", \"type\": \"boolean\"}], \"range\": [0.5, 1]}",
         "'range' must satisfy"},
        {"{\"columns\": [{\"name\": \"c\", \"type\": \"boolean\"}], \"extra\": 1}",
         "unknown field 'extra'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pg_error err = {0};
        pg_table *t = load(cases[i].json, &err);
        ck_assert_msg(t == NULL, "case %zu accepted", i);
        ck_assert_msg(strstr(err.msg, cases[i].needle) != NULL, "case %zu: '%s' lacks '%s'", i,
                      err.msg, cases[i].needle);
    }
}
END_TEST

static void enc(const pg_table *t, size_t col, pg_table_value v, float *row)
{
    pg_error err = {0};
    int rc = pg_table_encode_value(t, col, &v, PG_TABLE_BOUNDS_REFUSE, row, &err);
    ck_assert_msg(rc == PG_OK, "%s", err.msg);
}

START_TEST(round_trips_exact)
{
    pg_error err = {0};
    pg_table *t = load(MIXED, &err);
    float row[10];
    pg_table_value v, w;
    for (double a = 18; a <= 99; a++) {
        enc(t, 0, (pg_table_value){.num = a}, row);
        ck_assert(row[0] >= -1.0f && row[0] <= 1.0f && row[1] == 0.0f);
        pg_table_decode_value(t, 0, row, 1, &v);
        ck_assert(!v.missing && v.num == a);
    }
    enc(t, 0, (pg_table_value){.num = 18}, row);
    ck_assert_float_eq(row[0], -1.0f);
    enc(t, 0, (pg_table_value){.num = 99}, row);
    ck_assert_float_eq(row[0], 1.0f);
    enc(t, 0, (pg_table_value){.missing = 1}, row);
    ck_assert(row[0] == 0.0f && row[1] == 1.0f);
    pg_table_decode_value(t, 0, row, 1, &v);
    ck_assert(v.missing);
    for (size_t k = 0; k < 3; k++) {
        enc(t, 2, (pg_table_value){.cat = k}, row);
        for (size_t j = 0; j < 4; j++) ck_assert_float_eq(row[3 + j], j == k ? 1.0f : 0.0f);
        pg_table_decode_value(t, 2, row, 1, &v);
        ck_assert(!v.missing && v.cat == k);
    }
    enc(t, 2, (pg_table_value){.missing = 1}, row);
    pg_table_decode_value(t, 2, row, 1, &v);
    ck_assert(v.missing);
    for (size_t b = 0; b < 2; b++) {
        enc(t, 4, (pg_table_value){.cat = b}, row);
        pg_table_decode_value(t, 4, row, 1, &v);
        ck_assert(!v.missing && v.cat == b);
        enc(t, 5, (pg_table_value){.cat = b}, row);
        pg_table_decode_value(t, 5, row, 1, &v);
        ck_assert(v.cat == b);
    }
    enc(t, 4, (pg_table_value){.missing = 1}, row);
    pg_table_decode_value(t, 4, row, 1, &w);
    ck_assert(w.missing);
    /* Continuous: float32 precision, inside the bounds. */
    for (double x = -50.5; x <= 1000; x += 7.25) {
        enc(t, 1, (pg_table_value){.num = x}, row);
        pg_table_decode_value(t, 1, row, 1, &v);
        ck_assert_double_le(fabs(v.num - x), 1050.5 * 0x1p-23);
    }

    /* Value errors name the column. */
    pg_table_value bad[] = {{.num = 17}, {.num = 40.5}, {.num = NAN}};
    const char *needle[] = {"outside", "not an integer", "not a finite"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_ne(pg_table_encode_value(t, 0, &bad[i], PG_TABLE_BOUNDS_REFUSE, row, &err),
                         PG_OK);
        ck_assert_ptr_nonnull(strstr(err.msg, "column 'age'"));
        ck_assert_ptr_nonnull(strstr(err.msg, needle[i]));
    }
    ck_assert_int_eq(pg_table_encode_value(t, 1, &(pg_table_value){.missing = 1}, 0, row, &err),
                     PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "column 'income': missing value"));
    ck_assert_int_eq(pg_table_encode_value(t, 2, &(pg_table_value){.cat = 3}, 0, row, &err),
                     PG_EINVAL);
    /* Local data passes out-of-bounds numbers through unclamped (and decodes
     * them unclamped when asked); clamping is an option. */
    ck_assert_int_eq(pg_table_encode_value(t, 0, &bad[0], PG_TABLE_BOUNDS_ALLOW, row, &err), PG_OK);
    ck_assert_float_lt(row[0], -1.0f);
    pg_table_decode_value(t, 0, row, 0, &v);
    ck_assert_double_eq(v.num, 17);
    pg_table_decode_value(t, 0, row, 1, &v);
    ck_assert_double_eq(v.num, 18);
    ck_assert_int_eq(pg_table_encode_value(t, 0, &bad[0], PG_TABLE_BOUNDS_CLAMP, row, &err), PG_OK);
    ck_assert_float_eq(row[0], -1.0f);
    pg_table_free(t);
}
END_TEST

/* The widest integer column the schema allows still round-trips exactly,
 * with a range other than [-1, 1]. */
START_TEST(integer_span_limit_exact)
{
    pg_error err = {0};
    pg_table *t = load("{\"columns\": [{\"name\": \"n\", \"type\": \"integer\", \"min\": "
                       "-1000000, \"max\": 3194304}], \"range\": [-0.3, 7]}",
                       &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    pg_rng rng;
    pg_rng_seeded(&rng, 7, 0);
    float row[1];
    pg_table_value v;
    for (int i = 0; i < 200000; i++) {
        double a = i < 2000   ? -1000000.0 + i
                   : i < 4000 ? 3194304.0 - (i - 2000)
                              : -1000000.0 + (double)pg_rng_below(&rng, 4194305);
        enc(t, 0, (pg_table_value){.num = a}, row);
        ck_assert(row[0] >= -0.3f && (double)row[0] <= 7.0);
        pg_table_decode_value(t, 0, row, 1, &v);
        ck_assert_msg(v.num == a, "%.0f decoded as %.0f", a, v.num);
    }
    pg_table_free(t);
}
END_TEST

START_TEST(decode_rules)
{
    pg_error err = {0};
    pg_table *t = load(MIXED, &err);
    float row[10] = {0};
    pg_table_value v;
    /* Largest unit wins (first on ties); a boolean by threshold; clamping. */
    float job[4] = {0.2f, 0.7f, 0.7f, 0.4f};
    memcpy(row + 3, job, sizeof job);
    pg_table_decode_value(t, 2, row, 1, &v);
    ck_assert(!v.missing && v.cat == 1);
    row[6] = 0.51f;
    pg_table_decode_value(t, 2, row, 1, &v);
    ck_assert(v.missing);
    row[9] = 0.49f;
    pg_table_decode_value(t, 5, row, 1, &v);
    ck_assert_uint_eq(v.cat, 0);
    row[9] = 0.51f;
    pg_table_decode_value(t, 5, row, 1, &v);
    ck_assert_uint_eq(v.cat, 1);
    row[0] = 3.0f, row[1] = 0.2f;
    pg_table_decode_value(t, 0, row, 1, &v);
    ck_assert_double_eq(v.num, 99);
    pg_table_decode_value(t, 0, row, 0, &v);
    ck_assert_double_eq(v.num, 18 + 2 * 81); /* unclamped: (3 + 1) / 2 * 81 above 18 */
    /* Noise just below the lower end of an integer column decodes to 18, and
     * a value at 0 never to -0. */
    row[0] = -1.0f - 1e-6f, row[1] = 0.0f;
    pg_table_decode_value(t, 0, row, 0, &v);
    ck_assert_double_eq(v.num, 18);
    pg_table *z = load("{\"columns\": [{\"name\": \"z\", \"type\": \"integer\", \"min\": 0, "
                       "\"max\": 9}]}",
                       &err);
    float zr[1] = {-1.0f - 1e-6f};
    pg_table_decode_value(z, 0, zr, 0, &v);
    ck_assert(v.num == 0 && !signbit(v.num));
    pg_table_free(z);
    row[2] = -7.0f;
    pg_table_decode_value(t, 1, row, 1, &v);
    ck_assert_double_eq(v.num, -50.5);
    pg_table_free(t);
}
END_TEST

/* Extreme rows: each column at every extreme state (numeric min/max, each
 * category, each boolean, missing); the bound must equal the brute-force
 * maximum over all such rows and pairs. */
static size_t col_states(const pg_table *t, size_t c, pg_table_value *out)
{
    const pg_table_col *col = &t->cols[c];
    size_t n = 0;
    if (col->type == PG_COL_CONTINUOUS || col->type == PG_COL_INTEGER) {
        out[n++] = (pg_table_value){.num = col->min};
        out[n++] = (pg_table_value){.num = col->max};
    } else {
        size_t k = col->type == PG_COL_BOOLEAN ? 2 : col->ncat;
        for (size_t i = 0; i < k; i++) out[n++] = (pg_table_value){.cat = i};
    }
    if (col->nullable) out[n++] = (pg_table_value){.missing = 1};
    return n;
}

static void brute_force(const char *schema)
{
    pg_error err = {0};
    pg_table *t = load(schema, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    pg_table_value st[8][8];
    size_t ns[8], total = 1, enc_cols[8], ne = 0;
    for (size_t c = 0; c < t->ncols; c++) {
        if (c == t->label) continue;
        ns[ne] = col_states(t, c, st[ne]);
        enc_cols[ne++] = c;
        total *= ns[ne - 1];
    }
    float *rows = calloc(total * t->width, sizeof *rows);
    for (size_t r = 0; r < total; r++) {
        size_t q = r;
        for (size_t e = 0; e < ne; e++) {
            enc(t, enc_cols[e], st[e][q % ns[e]], rows + r * t->width);
            q /= ns[e];
        }
    }
    double n1 = 0, n2 = 0, d1 = 0, d2 = 0;
    for (size_t r = 0; r < total; r++) {
        const float *a = rows + r * t->width;
        double s1 = 0, s2 = 0;
        for (size_t j = 0; j < t->width; j++) s1 += fabs(a[j]), s2 += (double)a[j] * a[j];
        n1 = fmax(n1, s1), n2 = fmax(n2, s2);
        for (size_t p = 0; p < r; p++) {
            const float *b = rows + p * t->width;
            double e1 = 0, e2 = 0;
            for (size_t j = 0; j < t->width; j++) {
                double d = (double)a[j] - (double)b[j];
                e1 += fabs(d), e2 += d * d;
            }
            d1 = fmax(d1, e1), d2 = fmax(d2, e2);
        }
    }
    double b1, b2, c1, c2;
    pg_table_norm_bound(t, &b1, &b2);
    pg_table_diameter(t, &c1, &c2);
    /* Equal (the bound is attained), up to float32 rounding of range ends. */
    ck_assert_msg(pg_test_reldiff(n1, b1) < 1e-7, "l1 norm %g vs bound %g", n1, b1);
    ck_assert_msg(pg_test_reldiff(sqrt(n2), b2) < 1e-7, "l2 norm %g vs bound %g", sqrt(n2), b2);
    ck_assert_msg(pg_test_reldiff(d1, c1) < 1e-7, "l1 diameter %g vs bound %g", d1, c1);
    ck_assert_msg(pg_test_reldiff(sqrt(d2), c2) < 1e-7, "l2 diameter %g vs %g", sqrt(d2), c2);
    /* Per-column diameters are what local privatization calibrates on. */
    for (size_t e = 0; e < ne; e++) {
        double x1, x2, m = 0, m2 = 0;
        pg_table_col_diameter(t, enc_cols[e], &x1, &x2);
        const pg_table_col *c = &t->cols[enc_cols[e]];
        for (size_t r = 0; r < total; r++)
            for (size_t p = 0; p < total; p++) {
                double s1 = 0, s2 = 0;
                for (size_t j = c->offset; j < c->offset + c->width; j++) {
                    double d = (double)rows[r * t->width + j] - (double)rows[p * t->width + j];
                    s1 += fabs(d), s2 += d * d;
                }
                m = fmax(m, s1), m2 = fmax(m2, s2);
            }
        ck_assert(pg_test_reldiff(m, x1) < 1e-7 && pg_test_reldiff(sqrt(m2), x2) < 1e-7);
    }
    free(rows);
    pg_table_free(t);
}

START_TEST(bounds_match_brute_force)
{
    brute_force(MIXED);
    /* Asymmetric range: M = 2 and hi - lo = 2.5 (nullable numeric: M + 1 > span). */
    brute_force("{\"columns\": ["
                " {\"name\": \"a\", \"type\": \"continuous\", \"min\": 0, \"max\": 1, \"nullable\":"
                "  true},"
                " {\"name\": \"b\", \"type\": \"integer\", \"min\": -5, \"max\": 5},"
                " {\"name\": \"c\", \"type\": \"categorical\", \"categories\": [\"x\", \"y\"]},"
                " {\"name\": \"d\", \"type\": \"boolean\"},"
                " {\"name\": \"e\", \"type\": \"boolean\", \"nullable\": true}"
                "], \"range\": [-0.5, 2]}");
    /* Symmetric [-1, 1]: the documented sqrt(columns) norm bound. */
    pg_error err = {0};
    pg_table *t = load(MIXED, &err);
    double l1, l2;
    pg_table_norm_bound(t, &l1, &l2);
    ck_assert_double_eq_tol(l2, sqrt(5.0), 1e-15);
    pg_table_free(t);
}
END_TEST

/* A schema of ncols categorical columns of k categories, each category
 * `len` bytes (a shared prefix, so comparisons run long). */
static char *wide_schema(size_t ncols, size_t k, size_t len, int dup_at_end)
{
    size_t cap = 64 + ncols * (64 + k * (len + 4));
    char *b = malloc(cap), *p = b;
    p += sprintf(p, "{\"columns\":[");
    for (size_t c = 0; c < ncols; c++) {
        p += sprintf(p, "%s{\"name\":\"c%zu\",\"type\":\"categorical\",\"categories\":[",
                     c ? "," : "", c);
        for (size_t i = 0; i < k; i++) {
            size_t v = dup_at_end && c == ncols - 1 && i == k - 1 ? 0 : i;
            p += sprintf(p, "%s\"", i ? "," : "");
            for (size_t j = 0; j + 8 < len; j++) *p++ = 'x';
            p += sprintf(p, "%08zx\"", v);
        }
        p += sprintf(p, "]}");
    }
    p += sprintf(p, "]}");
    ck_assert_uint_lt((size_t)(p - b), cap);
    return b;
}

/* Regression: repeats were found by comparing every pair (16 x 4096
 * categories: 134 M strcmp, 12.9 s of CPU); the sort finds them in at most
 * n ceil(log2 n) + n comparisons, whatever the strings. */
START_TEST(repeat_check_is_n_log_n)
{
    enum { N = 4096 };
    static char buf[N][24];
    const char *s[N];
    for (int round = 0; round < 3; round++) {
        for (size_t i = 0; i < N; i++) {
            /* ascending, descending, and a shuffled order */
            size_t v = round == 0 ? i : round == 1 ? N - i : (i * 2654435761u) % N;
            snprintf(buf[i], sizeof buf[i], "cat-%016zx", v);
            s[i] = buf[i];
        }
        size_t dup;
        uint64_t cmp = 0;
        ck_assert_int_eq(pg_table_first_duplicate(s, N, &dup, &cmp, NULL), PG_OK);
        ck_assert_uint_eq(dup, PG_TABLE_NONE);
        ck_assert_msg(cmp <= (uint64_t)N * 12 + N, "%llu comparisons for %d strings",
                      (unsigned long long)cmp, N);
    }
    /* repeats: the first repeat in input order is named */
    const char *r[] = {"b", "a", "c", "a", "b", "a"};
    size_t dup;
    ck_assert_int_eq(pg_table_first_duplicate(r, 6, &dup, NULL, NULL), PG_OK);
    ck_assert_uint_eq(dup, 3);
    const char *one[] = {"x"};
    ck_assert_int_eq(pg_table_first_duplicate(one, 1, &dup, NULL, NULL), PG_OK);
    ck_assert_uint_eq(dup, PG_TABLE_NONE);
    const char *empty_twice[] = {"", "z", ""};
    ck_assert_int_eq(pg_table_first_duplicate(empty_twice, 3, &dup, NULL, NULL), PG_OK);
    ck_assert_uint_eq(dup, 2);
}
END_TEST

/* 16 x 4096 categories parse (short names), a repeat in the very last
 * category is still found, and 16 x 4096 categories of 128 bytes (8.6 MB,
 * the probe) are over the size limit: PG_ERANGE naming it. */
START_TEST(wide_schemas_and_the_size_limit)
{
    pg_error err = {0};
    char *txt = wide_schema(16, 4096, 12, 0);
    pg_table *t = load(txt, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    ck_assert_uint_eq(t->width, 16 * 4096);
    pg_table_free(t);
    free(txt);
    txt = wide_schema(16, 4096, 12, 1);
    ck_assert_ptr_null(load(txt, &err));
    ck_assert_int_eq(err.code, PG_EINVAL);
    ck_assert_msg(strstr(err.msg, "column 'c15': category") && strstr(err.msg, "appears twice"),
                  "%s", err.msg);
    free(txt);
    txt = wide_schema(16, 4096, 128, 0);
    ck_assert_ptr_null(load(txt, &err));
    ck_assert_int_eq(err.code, PG_ERANGE);
    ck_assert_msg(strstr(err.msg, "1048576 bytes"), "%s", err.msg);
    free(txt);
    /* repeated column names among many */
    char *big = malloc(100000), *p = big;
    p += sprintf(p, "{\"columns\":[");
    for (int i = 0; i < 1000; i++)
        p += sprintf(p, "%s{\"name\":\"n%d\",\"type\":\"boolean\"}", i ? "," : "",
                     i == 999 ? 500 : i);
    sprintf(p, "]}");
    ck_assert_ptr_null(load(big, &err));
    ck_assert_msg(strstr(err.msg, "column 'n500' is declared twice"), "%s", err.msg);
    free(big);
}
END_TEST

static Suite *table_suite(void)
{
    Suite *s = suite_create("data/table");
    TCase *tc = tcase_create("table");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, layout_and_map_round_trip);
    tcase_add_test(tc, bad_schemas_name_the_column);
    tcase_add_test(tc, round_trips_exact);
    tcase_add_test(tc, integer_span_limit_exact);
    tcase_add_test(tc, decode_rules);
    tcase_add_test(tc, bounds_match_brute_force);
    tcase_add_test(tc, repeat_check_is_n_log_n);
    tcase_add_test(tc, wide_schemas_and_the_size_limit);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(table_suite)
