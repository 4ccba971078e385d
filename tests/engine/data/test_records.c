#include <stdio.h>

#include "engine/core/rng.h"
#include "engine/data/records.h"
#include "support/pg_test.h"

/* Category names that need quoting, a missing-token lookalike, UTF-8. */
static const char *SCHEMA =
    "{\"columns\": ["
    " {\"name\": \"age\", \"type\": \"integer\", \"min\": -20, \"max\": 99, \"nullable\": true},"
    " {\"name\": \"income\", \"type\": \"continuous\", \"min\": 0, \"max\": 1000},"
    " {\"name\": \"job\", \"type\": \"categorical\", \"categories\": [\"a,b\", \"say \\\"hi\\\"\","
    "  \"NA\", \" pad\", \"\", \"caf\\u00e9\", \"two\\nlines\"], \"nullable\": true},"
    " {\"name\": \"status\", \"type\": \"categorical\", \"categories\": [\"good\", \"bad\"]},"
    " {\"name\": \"owner\", \"type\": \"boolean\", \"nullable\": true},"
    " {\"name\": \"vip\", \"type\": \"boolean\"}"
    "], \"label\": \"status\"}";

static pg_table *load(const char *txt)
{
    json_error_t je;
    json_t *j = json_loads(txt, 0, &je);
    ck_assert_msg(j != NULL, "bad test JSON: %s", je.text);
    pg_table *t = NULL;
    pg_error err = {0};
    ck_assert_msg(pg_table_from_json(j, &t, &err) == PG_OK, "%s", err.msg);
    json_decref(j);
    return t;
}

typedef struct buf {
    char *s;
    size_t n, cap;
} buf;

static int to_buf(void *ctx, const void *p, size_t n)
{
    buf *b = ctx;
    if (b->n + n + 1 > b->cap) {
        b->cap = 2 * (b->n + n + 1);
        b->s = realloc(b->s, b->cap);
    }
    memcpy(b->s + b->n, p, n);
    b->n += n;
    b->s[b->n] = '\0';
    return 0;
}

static void to_str(buf *b, const char *s)
{
    to_buf(b, s, strlen(s));
}

static int parse(const pg_table *t, int format, int bounds, const char *s, size_t len, float **x,
                 int64_t **labels, size_t *n, pg_error *err)
{
    pg_records_opts o = {.format = format, .bounds = bounds};
    return pg_records_parse(t, &o, s, len, x, labels, n, err);
}

/* Random decoded rows, encoded. */
static void random_rows(const pg_table *t, pg_rng *rng, size_t n, float *x, int64_t *labels)
{
    pg_error err = {0};
    for (size_t i = 0; i < n; i++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const pg_table_col *col = &t->cols[c];
            pg_table_value v = {0};
            v.missing = col->nullable && pg_rng_below(rng, 4) == 0;
            if (col->type == PG_COL_INTEGER)
                v.num = col->min + (double)pg_rng_below(rng, (uint64_t)(col->max - col->min) + 1);
            else if (col->type == PG_COL_CONTINUOUS)
                v.num = col->min + pg_rng_uniform(rng) * (col->max - col->min);
            else
                v.cat = pg_rng_below(rng, col->type == PG_COL_BOOLEAN ? 2 : col->ncat);
            if (c == t->label)
                labels[i] = (int64_t)v.cat;
            else
                ck_assert_int_eq(
                    pg_table_encode_value(t, c, &v, PG_TABLE_BOUNDS_REFUSE, x + i * t->width, &err),
                    PG_OK);
        }
    }
}

START_TEST(round_trip_every_format)
{
    pg_table *t = load(SCHEMA);
    pg_rng rng;
    pg_rng_seeded(&rng, 11, 0);
    const size_t n = 500;
    float *x = calloc(n * t->width, sizeof *x);
    int64_t *labels = calloc(n, sizeof *labels);
    random_rows(t, &rng, n, x, labels);
    for (int f = PG_RECORDS_CSV; f <= PG_RECORDS_NDJSON; f++) {
        buf b = {0};
        pg_error err = {0};
        ck_assert_int_eq(pg_records_write(t, f, x, labels, n, 1, to_buf, &b, &err), PG_OK);
        float *y;
        int64_t *l;
        size_t m;
        int rc = parse(t, f, PG_TABLE_BOUNDS_REFUSE, b.s, b.n, &y, &l, &m, &err);
        ck_assert_msg(rc == PG_OK, "format %d: %s", f, err.msg);
        ck_assert_uint_eq(m, n);
        /* Integers, categories, booleans and nulls come back exactly, and
         * continuous values as the same float32 units (shortest decimals). */
        ck_assert_int_eq(memcmp(x, y, n * t->width * sizeof *x), 0);
        ck_assert_int_eq(memcmp(labels, l, n * sizeof *l), 0);
        free(y);
        free(l);
        free(b.s);
    }
    free(x);
    free(labels);
    pg_table_free(t);
}
END_TEST

START_TEST(csv_any_column_order_and_syntax)
{
    pg_table *t = load(SCHEMA);
    const char *s = "\xEF\xBB\xBF"
                    "vip , \"status\",job,owner,income,age\r\n"
                    "TRUE,good,\"a,b\",, 12.5 ,41\r\n"
                    "no,bad,\"two\n"
                    "lines\",yes,1e3,NA\r\n"
                    "0,good,\"NA\",null,0,\"-20\"\n"
                    "1,bad,NA,False,7,99\n"
                    "1,bad,\"\",1,7,99\n"
                    "\n\r\n";
    float *x;
    int64_t *l;
    size_t n;
    pg_error err = {0};
    ck_assert_msg(parse(t, PG_RECORDS_CSV, 1, s, strlen(s), &x, &l, &n, &err) == PG_OK, "%s",
                  err.msg);
    ck_assert_uint_eq(n, 5);
    pg_table_value v;
    const size_t W = t->width;
    pg_table_decode_value(t, 0, x, 1, &v);
    ck_assert(!v.missing && v.num == 41);
    pg_table_decode_value(t, 1, x, 1, &v);
    ck_assert_double_eq_tol(v.num, 12.5, 1e-4);
    pg_table_decode_value(t, 2, x, 1, &v);
    ck_assert(!v.missing && v.cat == 0);
    pg_table_decode_value(t, 4, x, 1, &v);
    ck_assert(v.missing);
    pg_table_decode_value(t, 5, x, 1, &v);
    ck_assert_uint_eq(v.cat, 1);
    ck_assert_int_eq(l[0], 0);
    pg_table_decode_value(t, 0, x + W, 1, &v);
    ck_assert(v.missing);
    pg_table_decode_value(t, 2, x + W, 1, &v);
    ck_assert_uint_eq(v.cat, 6);
    pg_table_decode_value(t, 4, x + W, 1, &v);
    ck_assert(!v.missing && v.cat == 1);
    ck_assert_int_eq(l[1], 1);
    pg_table_decode_value(t, 2, x + 2 * W, 1, &v);
    ck_assert(!v.missing && v.cat == 2); /* quoted "NA" is the category */
    pg_table_decode_value(t, 0, x + 2 * W, 1, &v);
    ck_assert_double_eq(v.num, -20);
    pg_table_decode_value(t, 4, x + 2 * W, 1, &v);
    ck_assert(v.missing);
    pg_table_decode_value(t, 2, x + 3 * W, 1, &v);
    ck_assert(v.missing); /* unquoted NA is missing */
    pg_table_decode_value(t, 2, x + 4 * W, 1, &v);
    ck_assert(!v.missing && v.cat == 4); /* quoted empty is the empty category */
    free(x);
    free(l);
    pg_table_free(t);
}
END_TEST

START_TEST(writer_output)
{
    pg_table *t = load(SCHEMA);
    float x[2 * 16] = {0};
    int64_t labels[2] = {1, 0};
    pg_error err = {0};
    pg_table_value vals[2][6] = {
        {{.num = 41}, {.num = 2.5}, {.cat = 1}, {0}, {.missing = 1}, {.cat = 1}},
        {{.missing = 1}, {.num = 1000}, {.cat = 2}, {0}, {.cat = 0}, {.cat = 0}},
    };
    for (int i = 0; i < 2; i++)
        for (size_t c = 0; c < 6; c++)
            if (c != t->label) pg_table_encode_value(t, c, &vals[i][c], 1, x + i * t->width, &err);
    buf b = {0};
    ck_assert_int_eq(pg_records_write(t, PG_RECORDS_CSV, x, labels, 2, 1, to_buf, &b, &err), 0);
    ck_assert_str_eq(b.s, "age,income,job,status,owner,vip\n"
                          "41,2.5,\"say \"\"hi\"\"\",bad,,true\n"
                          ",1000,\"NA\",good,false,false\n");
    free(b.s);
    b = (buf){0};
    ck_assert_int_eq(pg_records_write(t, PG_RECORDS_JSON, x, labels, 2, 1, to_buf, &b, &err), 0);
    ck_assert_str_eq(b.s,
                     "[{\"age\":41,\"income\":2.5,\"job\":\"say \\\"hi\\\"\",\"status\":\"bad\","
                     "\"owner\":null,\"vip\":true},\n"
                     "{\"age\":null,\"income\":1000,\"job\":\"NA\",\"status\":\"good\","
                     "\"owner\":false,\"vip\":false}]\n");
    /* The JSON written is JSON (jansson agrees). */
    json_error_t je;
    json_t *j = json_loads(b.s, 0, &je);
    ck_assert_ptr_nonnull(j);
    ck_assert_uint_eq(json_array_size(j), 2);
    json_decref(j);
    free(b.s);
    labels[0] = 2;
    ck_assert_int_eq(pg_records_write(t, PG_RECORDS_CSV, x, labels, 2, 1, to_buf, &b, &err),
                     PG_EINVAL);
    pg_table_free(t);
}
END_TEST

typedef struct hostile {
    int format, code;
    const char *in, *needle;
    uint64_t row;
    const char *col; /* NULL: no column */
} hostile;

#define HDR "age,income,job,status,owner,vip\n"
static const hostile HOSTILE[] = {
    {PG_RECORDS_CSV, PG_EFORMAT, "age,income,job,status,owner\n1,2,a\n", "column 'vip' is missing",
     0, "vip"},
    {PG_RECORDS_CSV, PG_EFORMAT, "age,,income\n", "unknown column ''", 0, NULL},
    {PG_RECORDS_CSV, PG_EFORMAT, "age,income,job,status,owner,vip,zip\n", "unknown column 'zip'", 0,
     NULL},
    {PG_RECORDS_CSV, PG_EFORMAT, "age,income,job,status,owner,age,vip\n",
     "column 'age' appears twice", 0, "age"},
    {PG_RECORDS_CSV, PG_EINVAL, HDR "1,2,NA,good,,true\n1,2,plumber,good,,true\n",
     "row 2 (line 3), column 'job': unknown category 'plumber'", 2, "job"},
    {PG_RECORDS_CSV, PG_ERANGE, HDR "1,2,NA,good,,true\n100,2,NA,good,,true\n",
     "row 2 (line 3), column 'age': 100 is outside [-20, 99]", 2, "age"},
    {PG_RECORDS_CSV, PG_EINVAL, HDR "41.5,2,NA,good,,true\n",
     "row 1 (line 2), column 'age': 41.5 is not an integer", 1, "age"},
    {PG_RECORDS_CSV, PG_EINVAL, HDR "41,,NA,good,,true\n",
     "row 1 (line 2), column 'income': missing value", 1, "income"},
    {PG_RECORDS_CSV, PG_EINVAL, HDR "41,2,NA,,,true\n", "column 'status': the label is missing", 1,
     "status"},
    {PG_RECORDS_CSV, PG_EINVAL, HDR "41,0x10,NA,good,,true\n",
     "column 'income': '0x10' is not a number", 1, "income"},
    {PG_RECORDS_CSV, PG_EINVAL, HDR "41,inf,NA,good,,true\n", "'inf' is not a number", 1, "income"},
    {PG_RECORDS_CSV, PG_EINVAL, HDR "41,1e999,NA,good,,true\n", "overflows", 1, "income"},
    {PG_RECORDS_CSV, PG_EINVAL, HDR "41,2,NA,good,maybe,true\n",
     "column 'owner': 'maybe' is not a boolean", 1, "owner"},
    {PG_RECORDS_CSV, PG_EFORMAT, HDR "41,2,NA,good,,true,7\n", "row 1 (line 2) has more than 6", 1,
     NULL},
    {PG_RECORDS_CSV, PG_EFORMAT, HDR "41,2,NA,good,\n", "row 1 (line 2) has 5 fields", 1, NULL},
    {PG_RECORDS_CSV, PG_EFORMAT, HDR "41,2,\"NA,good,,true\n", "ends inside a quoted field", 0,
     NULL},
    {PG_RECORDS_CSV, PG_EFORMAT, HDR "41,2,\"NA\"x,good,,true\n", "text after a closing quote", 0,
     NULL},
    {PG_RECORDS_CSV, PG_EFORMAT, HDR "41,2,N\"A,good,,true\n", "quote inside an unquoted", 0, NULL},
    {PG_RECORDS_CSV, PG_EFORMAT, HDR "\n41,2,NA,good,,true\n", "line 2 is empty", 0, NULL},
    {PG_RECORDS_CSV, PG_EFORMAT, HDR "41,2,NA,good,,true\r41", "carriage return", 0, NULL},
    {PG_RECORDS_CSV, PG_EFORMAT, HDR "41,2,N\0A", "NUL byte", 0, NULL},
    {PG_RECORDS_CSV, PG_EFORMAT, "", "no header row", 0, NULL},
    {PG_RECORDS_JSON, PG_EINVAL,
     "[{\"age\": \"41\", \"income\": 2, \"job\": null, \"status\": \"good\", \"owner\": null, "
     "\"vip\": true}]",
     "row 1, column 'age': expected a number, got a string", 1, "age"},
    {PG_RECORDS_JSON, PG_EINVAL,
     "[{\"age\": 41, \"income\": 2, \"job\": 3, \"status\": \"good\", \"owner\": null, "
     "\"vip\": true}]",
     "column 'job': expected a category name", 1, "job"},
    {PG_RECORDS_JSON, PG_EINVAL,
     "[{\"age\": 41, \"income\": 2, \"job\": null, \"status\": \"good\", \"owner\": null, "
     "\"vip\": 1}]",
     "column 'vip': expected true or false, got a number", 1, "vip"},
    {PG_RECORDS_JSON, PG_EINVAL,
     "[{\"age\": 41, \"income\": null, \"job\": null, \"status\": \"good\", \"owner\": null, "
     "\"vip\": true}]",
     "column 'income': missing value", 1, "income"},
    {PG_RECORDS_JSON, PG_EFORMAT,
     "[{\"age\": 41, \"income\": 2, \"job\": null, \"status\": \"good\", \"owner\": null}]",
     "row 1, column 'vip': is missing from the record", 1, "vip"},
    {PG_RECORDS_JSON, PG_EFORMAT, "[{\"age\": 41, \"age\": 41}]",
     "row 1, column 'age': appears twice", 1, "age"},
    {PG_RECORDS_JSON, PG_EFORMAT, "[{\"agee\": 41}]", "row 1, unknown column 'agee'", 1, NULL},
    {PG_RECORDS_JSON, PG_EINVAL, "[{\"age\": [41]}]", "column 'age': nested", 1, "age"},
    {PG_RECORDS_JSON, PG_EFORMAT, "[{\"age\": 41", "ends before the JSON array is closed", 1, NULL},
    {PG_RECORDS_JSON, PG_EFORMAT, "[{\"age\": 0041}]", "'0041' is not a JSON number", 1, NULL},
    {PG_RECORDS_JSON, PG_EFORMAT, "[{\"job\": \"\\x\"}]", "invalid escape", 1, NULL},
    {PG_RECORDS_JSON, PG_EFORMAT, "[{\"job\": \"\xC3\"}]", "not valid UTF-8", 1, NULL},
    {PG_RECORDS_JSON, PG_EFORMAT, "[{\"job\": \"\\ud800x\"}]", "unpaired UTF-16 surrogate", 1,
     NULL},
    {PG_RECORDS_JSON, PG_EFORMAT, "[{\"age\": tru}]", "invalid literal", 1, NULL},
    {PG_RECORDS_JSON, PG_EFORMAT, "[] x", "text after the end", 0, NULL},
    {PG_RECORDS_JSON, PG_EFORMAT, "{\"age\": 1}", "must be an array of objects", 0, NULL},
    {PG_RECORDS_JSON, PG_EFORMAT, "", "no JSON array", 0, NULL},
    {PG_RECORDS_NDJSON, PG_EFORMAT,
     "{\"age\": 41, \"income\": 2, \"job\": null, \"status\": \"good\", \"owner\": null, "
     "\"vip\": true} {\"age\": 1}",
     "separate lines", 0, NULL},
    {PG_RECORDS_NDJSON, PG_EFORMAT, "{\"age\": 41, ", "ends inside a record", 1, NULL},
};

START_TEST(hostile_inputs_name_row_and_column)
{
    pg_table *t = load(SCHEMA);
    for (size_t i = 0; i < sizeof HOSTILE / sizeof HOSTILE[0]; i++) {
        const hostile *h = &HOSTILE[i];
        /* The NUL case has an embedded NUL: its length runs to the end of the
         * literal. */
        size_t len = strlen(h->in);
        if (strstr(h->needle, "NUL")) len = strlen(HDR) + 8;
        pg_records_opts o = {.format = h->format, .bounds = PG_TABLE_BOUNDS_REFUSE};
        pg_records_parser *p;
        pg_error err = {0};
        ck_assert_int_eq(pg_records_new(t, &o, NULL, NULL, &p, &err), PG_OK);
        int rc = pg_records_feed(p, h->in, len, &err);
        if (!rc) rc = pg_records_finish(p, &err);
        ck_assert_msg(rc == h->code, "case %zu: code %d, want %d (%s)", i, rc, h->code, err.msg);
        ck_assert_msg(strstr(err.msg, h->needle) != NULL, "case %zu: '%s' lacks '%s'", i, err.msg,
                      h->needle);
        uint64_t row;
        size_t col;
        pg_records_error_at(p, &row, &col);
        if (h->row) ck_assert_msg(row == h->row, "case %zu: row %llu", i, (unsigned long long)row);
        if (h->col)
            ck_assert_msg(col != PG_TABLE_NONE && !strcmp(t->cols[col].name, h->col),
                          "case %zu: wrong column", i);
        /* A failed parser stays failed. */
        ck_assert_int_eq(pg_records_feed(p, "1", 1, &err), h->code);
        pg_records_free(p);
    }
    /* Out-of-bounds values pass (unclamped) on local data. */
    const char *s = HDR "100,-5,NA,good,,true\n";
    float *x;
    int64_t *l;
    size_t n;
    pg_error err = {0};
    ck_assert_int_eq(
        parse(t, PG_RECORDS_CSV, PG_TABLE_BOUNDS_ALLOW, s, strlen(s), &x, &l, &n, &err), PG_OK);
    ck_assert(x[0] > 1.0f && x[2] < -1.0f);
    free(x);
    free(l);
    pg_table_free(t);
}
END_TEST

START_TEST(limits)
{
    pg_table *t = load(SCHEMA);
    /* A huge field: refused at the limit without buffering it. */
    size_t big = 1 << 20;
    char *s = malloc(strlen(HDR) + big + 64);
    strcpy(s, HDR "41,2,\"");
    size_t pos = strlen(s);
    memset(s + pos, 'x', big);
    pos += big;
    memcpy(s + pos, "\",good,,true\n", 13);
    pos += 13;
    pg_records_opts o = {.format = PG_RECORDS_CSV, .max_field = 4096};
    float *x;
    int64_t *l;
    size_t n;
    pg_error err = {0};
    ck_assert_int_eq(pg_records_parse(t, &o, s, pos, &x, &l, &n, &err), PG_ENOMEM);
    ck_assert_ptr_nonnull(strstr(err.msg, "longer than 4096 bytes"));
    ck_assert_ptr_null(x);
    free(s);
    /* Row limit: exact. */
    const char *r3 = HDR "1,2,NA,good,,true\n1,2,NA,good,,true\n1,2,NA,good,,true\n";
    o = (pg_records_opts){.format = PG_RECORDS_CSV, .max_rows = 3};
    ck_assert_int_eq(pg_records_parse(t, &o, r3, strlen(r3), &x, &l, &n, &err), PG_OK);
    ck_assert_uint_eq(n, 3);
    free(x);
    free(l);
    o.max_rows = 2;
    ck_assert_int_eq(pg_records_parse(t, &o, r3, strlen(r3), &x, &l, &n, &err), PG_ENOMEM);
    /* A JSON token over the limit. */
    o = (pg_records_opts){.format = PG_RECORDS_JSON, .max_field = 8};
    const char *j = "[{\"age\": 123456789}]";
    ck_assert_int_eq(pg_records_parse(t, &o, j, strlen(j), &x, &l, &n, &err), PG_ENOMEM);
    pg_table_free(t);
}
END_TEST

/* The outcome of one parse, fed in the given pieces. */
typedef struct outcome {
    int rc;
    char msg[PG_ERROR_MSG_MAX];
    buf rows;
    size_t width;
} outcome;

static int sink(void *ctx, const float *row, int64_t label, uint64_t rowno, pg_error *err)
{
    (void)err;
    outcome *o = ctx;
    (void)rowno;
    to_buf(&o->rows, row, o->width * sizeof *row);
    to_buf(&o->rows, &label, sizeof label);
    return 0;
}

static void run_split(const pg_table *t, int format, const char *s, size_t len, const size_t *cuts,
                      size_t ncuts, outcome *out)
{
    memset(out, 0, sizeof *out);
    out->width = t->width;
    pg_records_opts o = {.format = format, .bounds = PG_TABLE_BOUNDS_REFUSE};
    pg_records_parser *p;
    pg_error err = {0};
    ck_assert_int_eq(pg_records_new(t, &o, sink, out, &p, &err), PG_OK);
    size_t at = 0;
    int rc = 0;
    for (size_t i = 0; i <= ncuts && !rc; i++) {
        size_t end = i < ncuts ? cuts[i] : len;
        rc = pg_records_feed(p, s + at, end - at, &err);
        at = end;
    }
    if (!rc) rc = pg_records_finish(p, &err);
    out->rc = rc;
    if (rc) strcpy(out->msg, err.msg);
    pg_records_free(p);
}

static void same(const outcome *a, const outcome *b, size_t cut)
{
    ck_assert_msg(a->rc == b->rc, "cut %zu: rc %d vs %d (%s / %s)", cut, a->rc, b->rc, a->msg,
                  b->msg);
    ck_assert_msg(!strcmp(a->msg, b->msg), "cut %zu: '%s' vs '%s'", cut, a->msg, b->msg);
    ck_assert_uint_eq(a->rows.n, b->rows.n);
    ck_assert(a->rows.n == 0 || !memcmp(a->rows.s, b->rows.s, a->rows.n));
}

START_TEST(every_chunk_boundary_same_result)
{
    pg_table *t = load(SCHEMA);
    static const struct {
        int format;
        const char *in;
    } inputs[] = {
        {PG_RECORDS_CSV, "\xEF\xBB\xBFvip,status,job,owner,income,age\r\n"
                         "TRUE,good,\"a,b\",, 12.5 ,41\r\n"
                         "no,bad,\"two\nlines\",yes,1e3,NA\r\n"
                         "0 , good ,\"say \"\"hi\"\"\" ,null,0,-20\n1,bad,caf\xC3\xA9,0,7,99"},
        {PG_RECORDS_CSV, HDR "1,2,NA,good,,true\r\n1,2,\"a,b,good,,true\n"},
        {PG_RECORDS_CSV, HDR "1,2,NA,good,,true\n101,2,NA,good,,true\n"},
        {PG_RECORDS_CSV, "\xEF\xBBvip\n"},
        {PG_RECORDS_JSON, "\xEF\xBB\xBF [ {\"age\": -2e1, \"income\": 1000.0, \"job\": "
                          "\"caf\\u00e9\", \"status\": \"bad\", \"owner\": false, \"vip\": true},"
                          "{\"vip\":false,\"owner\":null,\"status\":\"good\",\"job\":\"two\\nlines"
                          "\",\"income\":0.125,\"age\":null} ]\n"},
        {PG_RECORDS_JSON, "[{\"age\": 41, \"income\": 2, \"job\": \"\\ud83d\\ude00\", "
                          "\"status\": \"good\", \"owner\": null, \"vip\": true}]"},
        {PG_RECORDS_NDJSON, "{\"age\": 41, \"income\": 2, \"job\": null, \"status\": \"good\", "
                            "\"owner\": null, \"vip\": true}\r\n"
                            "{\"age\": 42, \"income\": 3, \"job\": \"NA\", \"status\": \"bad\", "
                            "\"owner\": true, \"vip\": false}"},
    };
    for (size_t k = 0; k < sizeof inputs / sizeof inputs[0]; k++) {
        const char *s = inputs[k].in;
        size_t len = strlen(s);
        outcome whole, part;
        run_split(t, inputs[k].format, s, len, NULL, 0, &whole);
        if (k == 0 || k == 4 || k == 6)
            ck_assert_msg(whole.rc == PG_OK, "input %zu: %s", k, whole.msg);
        else
            ck_assert_int_ne(whole.rc, PG_OK);
        for (size_t cut = 0; cut <= len; cut++) {
            run_split(t, inputs[k].format, s, len, &cut, 1, &part);
            same(&whole, &part, cut);
            free(part.rows.s);
        }
        /* One byte at a time. */
        size_t *cuts = malloc(len * sizeof *cuts);
        for (size_t i = 0; i < len; i++) cuts[i] = i;
        run_split(t, inputs[k].format, s, len, cuts, len, &part);
        same(&whole, &part, 0);
        free(cuts);
        free(part.rows.s);
        free(whole.rows.s);
    }
    pg_table_free(t);
}
END_TEST

/* Wide tables and long category lists (looked up through sorted indices):
 * 300 columns whose names sort differently from their order, one with 1200
 * categories. */
START_TEST(wide_table_and_many_categories)
{
    buf sch = {0}, csv = {0};
    to_str(&sch, "{\"columns\": [");
    char tmp[64];
    for (int c = 0; c < 300; c++) {
        int len = snprintf(tmp, sizeof tmp, "%s{\"name\": \"c%d\", \"type\": \"boolean\"}",
                           c ? "," : "", 299 - c);
        to_buf(&sch, tmp, (size_t)len);
    }
    to_str(&sch, ", {\"name\": \"zip\", \"type\": \"categorical\", \"categories\": [");
    for (int k = 0; k < 1200; k++) {
        int len = snprintf(tmp, sizeof tmp, "%s\"z%d\"", k ? "," : "", (k * 7919) % 1200);
        to_buf(&sch, tmp, (size_t)len);
    }
    to_str(&sch, "]}]}");
    pg_table *t = load(sch.s);
    /* Header in reverse column order; 1200 rows, one per category. */
    to_buf(&csv, "zip", 3);
    for (int c = 299; c >= 0; c--) {
        int len = snprintf(tmp, sizeof tmp, ",c%d", 299 - c);
        to_buf(&csv, tmp, (size_t)len);
    }
    to_buf(&csv, "\n", 1);
    for (int i = 0; i < 1200; i++) {
        int len = snprintf(tmp, sizeof tmp, "z%d", (i * 7919) % 1200);
        to_buf(&csv, tmp, (size_t)len);
        for (int c = 299; c >= 0; c--) to_buf(&csv, (c + i) % 3 ? ",1" : ",0", 2);
        to_buf(&csv, "\n", 1);
    }
    float *x;
    int64_t *l;
    size_t n;
    pg_error err = {0};
    ck_assert_msg(parse(t, PG_RECORDS_CSV, 1, csv.s, csv.n, &x, &l, &n, &err) == PG_OK, "%s",
                  err.msg);
    ck_assert_uint_eq(n, 1200);
    for (size_t i = 0; i < n; i++) {
        pg_table_value v;
        pg_table_decode_value(t, 300, x + i * t->width, 1, &v);
        ck_assert_uint_eq(v.cat, i); /* row i holds category index i */
        for (size_t c = 0; c < 300; c++) {
            pg_table_decode_value(t, c, x + i * t->width, 1, &v);
            ck_assert_uint_eq(v.cat, (c + i) % 3 ? 1 : 0);
        }
    }
    free(x);
    free(l);
    free(sch.s);
    free(csv.s);
    pg_table_free(t);
}
END_TEST

/* The category lookup on a long, nullable list keeps the exact semantics
 * of a comparison of bytes: 1000 names where case, prefixes and a trailing
 * space make different categories ("zip_7", "Zip_7", "zip_70", "zip_7 "),
 * every one found at its own index through CSV (a padded name quoted: CSV
 * trims unquoted fields, records.h), JSON and NDJSON, NA / null missing;
 * near misses (other case, a prefix, an extension, a number where
 * no name is spelt like it) refused naming the row, the column and the
 * value; a name listed twice refused by the schema itself. */
enum { MANY = 1000 };

static void many_name(size_t k, char *out, size_t cap)
{
    /* 0..499: zip_<k>; 500..899: Zip_<k-500>; 900..999: zip_<k-900> + ' ' */
    if (k < 500)
        snprintf(out, cap, "zip_%zu", k);
    else if (k < 900)
        snprintf(out, cap, "Zip_%zu", k - 500);
    else
        snprintf(out, cap, "zip_%zu ", k - 900);
}

static pg_table *many_table(buf *sch)
{
    char tmp[64];
    to_str(sch, "{\"columns\": [{\"name\": \"n\", \"type\": \"integer\", \"min\": 0, \"max\": 9},"
                " {\"name\": \"zip\", \"type\": \"categorical\", \"nullable\": true, "
                "\"categories\": [");
    for (size_t i = 0; i < MANY; i++) {
        char name[32];
        many_name((i * 7919) % MANY, name, sizeof name); /* listed scrambled */
        snprintf(tmp, sizeof tmp, "%s\"%s\"", i ? "," : "", name);
        to_str(sch, tmp);
    }
    to_str(sch, "]}]}");
    return load(sch->s);
}

START_TEST(many_categories_are_looked_up_exactly)
{
    buf sch = {0};
    pg_table *t = many_table(&sch);
    const pg_table_col *zc = &t->cols[1];
    ck_assert_uint_eq(zc->ncat, MANY);
    pg_error err = {0};
    for (int format = PG_RECORDS_CSV; format <= PG_RECORDS_NDJSON; format++) {
        /* every category once (in its schema order reversed), then a missing one */
        buf in = {0};
        char tmp[96];
        if (format == PG_RECORDS_CSV) to_str(&in, "n,zip\n");
        if (format == PG_RECORDS_JSON) to_str(&in, "[");
        for (size_t i = 0; i <= MANY; i++) {
            const char *name = i < MANY ? zc->cats[MANY - 1 - i] : NULL;
            int padded = name && name[strlen(name) - 1] == ' ';
            if (format == PG_RECORDS_CSV)
                snprintf(tmp, sizeof tmp, "%zu,%s%s%s\n", i % 10, padded ? "\"" : "",
                         name ? name : "NA", padded ? "\"" : "");
            else
                snprintf(tmp, sizeof tmp, "%s{\"n\": %zu, \"zip\": %s%s%s}%s",
                         format == PG_RECORDS_JSON && i ? ", " : "", i % 10, name ? "\"" : "",
                         name ? name : "null", name ? "\"" : "",
                         format == PG_RECORDS_NDJSON ? "\n" : "");
            to_str(&in, tmp);
        }
        if (format == PG_RECORDS_JSON) to_str(&in, "]");
        float *x;
        int64_t *l;
        size_t n;
        ck_assert_msg(parse(t, format, 1, in.s, in.n, &x, &l, &n, &err) == PG_OK, "%s", err.msg);
        ck_assert_uint_eq(n, MANY + 1);
        for (size_t i = 0; i <= MANY; i++) {
            pg_table_value v;
            pg_table_decode_value(t, 1, x + i * t->width, 1, &v);
            if (i < MANY) {
                ck_assert_msg(!v.missing && v.cat == MANY - 1 - i, "format %d row %zu: %zu", format,
                              i + 1, v.cat);
            } else {
                ck_assert(v.missing);
            }
        }
        free(x);
        free(l);
        free(in.s);
    }
    /* unquoted, the padding is trimmed: "zip_7 " reads as zip_7 */
    size_t k7 = 0;
    while (k7 < MANY && strcmp(zc->cats[k7], "zip_7")) k7++;
    ck_assert_uint_lt(k7, MANY);
    static const char TRIMMED[] = "n,zip\n1,zip_7 \n";
    float *x;
    int64_t *l;
    size_t n;
    ck_assert_int_eq(parse(t, PG_RECORDS_CSV, 1, TRIMMED, sizeof TRIMMED - 1, &x, &l, &n, &err),
                     PG_OK);
    pg_table_value v7;
    pg_table_decode_value(t, 1, x, 1, &v7);
    ck_assert_uint_eq(v7.cat, k7);
    free(x);
    free(l);
    /* near misses: one row each, refused with the value named */
    static const struct {
        int format;
        const char *row, *needle;
    } MISS[] = {
        {PG_RECORDS_CSV, "1,ZIP_7", "row 1 (line 2), column 'zip': unknown category 'ZIP_7'"},
        {PG_RECORDS_CSV, "1,zip_", "column 'zip': unknown category 'zip_'"},
        {PG_RECORDS_CSV, "1,zip_5000", "column 'zip': unknown category 'zip_5000'"},
        {PG_RECORDS_CSV, "1,Zip_400", "column 'zip': unknown category 'Zip_400'"},
        {PG_RECORDS_CSV, "1,\"zip_100 \"", "column 'zip': unknown category 'zip_100 '"},
        {PG_RECORDS_CSV, "1,\" zip_7\"", "column 'zip': unknown category ' zip_7'"},
        {PG_RECORDS_JSON, "[{\"n\": 1, \"zip\": \"zIp_7\"}]",
         "row 1, column 'zip': unknown category 'zIp_7'"},
        {PG_RECORDS_JSON, "[{\"n\": 1, \"zip\": 7}]",
         "row 1, column 'zip': expected a category name (a string), got a number"},
        {PG_RECORDS_NDJSON, "{\"n\": 1, \"zip\": \"zip_07\"}\n",
         "row 1, column 'zip': unknown category 'zip_07'"},
    };
    for (size_t m = 0; m < sizeof MISS / sizeof *MISS; m++) {
        buf in = {0};
        if (MISS[m].format == PG_RECORDS_CSV) to_str(&in, "n,zip\n");
        to_str(&in, MISS[m].row);
        if (MISS[m].format == PG_RECORDS_CSV) to_str(&in, "\n");
        x = NULL;
        l = NULL;
        err = (pg_error){0};
        ck_assert_int_eq(parse(t, MISS[m].format, 1, in.s, in.n, &x, &l, &n, &err), PG_EINVAL);
        ck_assert_msg(strstr(err.msg, MISS[m].needle) != NULL, "%s: got '%s'", MISS[m].row,
                      err.msg);
        ck_assert_ptr_null(x);
        free(in.s);
    }
    pg_table_free(t);
    /* a name listed twice among the many: the schema is refused */
    char *twice = strstr(sch.s, "\"Zip_123\"");
    ck_assert_ptr_nonnull(twice);
    memcpy(twice, "\"Zip_124\"", 9);
    json_t *j = json_loads(sch.s, 0, NULL);
    ck_assert_ptr_nonnull(j);
    pg_table *bad = NULL;
    err = (pg_error){0};
    ck_assert_int_eq(pg_table_from_json(j, &bad, &err), PG_EINVAL);
    ck_assert_ptr_null(bad);
    ck_assert_msg(strstr(err.msg, "column 'zip': category 'Zip_124' appears twice") != NULL, "%s",
                  err.msg);
    json_decref(j);
    free(sch.s);
}
END_TEST

/* A one-column nullable table: a missing value must not become a blank line. */
START_TEST(one_column_missing_round_trip)
{
    pg_table *t = load("{\"columns\": [{\"name\": \"n\", \"type\": \"integer\", \"min\": 0, "
                       "\"max\": 9, \"nullable\": true}]}");
    float x[3 * 2];
    pg_table_value v[3] = {{.num = 4}, {.missing = 1}, {.num = 0}};
    for (int i = 0; i < 3; i++) pg_table_encode_value(t, 0, &v[i], 1, x + 2 * i, NULL);
    buf b = {0};
    pg_error err = {0};
    ck_assert_int_eq(pg_records_write(t, PG_RECORDS_CSV, x, NULL, 3, 1, to_buf, &b, &err), 0);
    ck_assert_str_eq(b.s, "n\n4\nNA\n0\n");
    float *y;
    int64_t *l;
    size_t n;
    ck_assert_int_eq(parse(t, PG_RECORDS_CSV, 1, b.s, b.n, &y, &l, &n, &err), PG_OK);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(memcmp(x, y, sizeof x), 0);
    free(y);
    free(b.s);
    pg_table_free(t);
}
END_TEST

static Suite *records_suite(void)
{
    Suite *s = suite_create("data/records");
    TCase *tc = tcase_create("records");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, round_trip_every_format);
    tcase_add_test(tc, csv_any_column_order_and_syntax);
    tcase_add_test(tc, writer_output);
    tcase_add_test(tc, hostile_inputs_name_row_and_column);
    tcase_add_test(tc, limits);
    tcase_add_test(tc, every_chunk_boundary_same_result);
    tcase_add_test(tc, wide_table_and_many_categories);
    tcase_add_test(tc, many_categories_are_looked_up_exactly);
    tcase_add_test(tc, one_column_missing_round_trip);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(records_suite)
