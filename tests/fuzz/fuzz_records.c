/* Typed records (CSV, JSON, NDJSON through a mixed schema, or a one-column
 * nullable one whose categories look like missing values): never
 * crashes; the result does not depend on where the input is split into
 * chunks; accepted rows written back in the same format read back as the
 * very same encoded rows and labels. The first byte picks the format, the
 * schema and the split point; the rest is the input. */
#include <stdlib.h>

#include "engine/data/records.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char SCHEMA1[] =
    "{\"columns\": [{\"name\": \"v\", \"type\": \"categorical\", \"categories\": [\"\", \"NA\","
    " \"x\"], \"nullable\": true}]}";

static const char SCHEMA[] =
    "{\"columns\": ["
    " {\"name\": \"age\", \"type\": \"integer\", \"min\": -5, \"max\": 120, \"nullable\": true},"
    " {\"name\": \"x\", \"type\": \"continuous\", \"min\": -1e3, \"max\": 1e3},"
    " {\"name\": \"job\", \"type\": \"categorical\", \"categories\": [\"a\", \"b,c\", \"NA\","
    "  \"\", \"q\\\"\"], \"nullable\": true},"
    " {\"name\": \"ok\", \"type\": \"boolean\", \"nullable\": true},"
    " {\"name\": \"y\", \"type\": \"categorical\", \"categories\": [\"n\", \"p\"]}"
    "], \"label\": \"y\"}";

typedef struct buf {
    char *s;
    size_t n;
} buf;

static int to_buf(void *ctx, const void *p, size_t n)
{
    buf *b = ctx;
    char *s = realloc(b->s, b->n + n + 1);
    if (!s) return 1;
    memcpy(s + b->n, p, n);
    b->s = s;
    b->n += n;
    return 0;
}

typedef struct got {
    size_t width;
    buf rows;
} got;

static int sink(void *ctx, const float *row, int64_t label, uint64_t rowno, pg_error *err)
{
    (void)rowno, (void)err;
    got *g = ctx;
    FUZZ_CHECK(to_buf(&g->rows, row, g->width * sizeof *row) == 0);
    FUZZ_CHECK(to_buf(&g->rows, &label, sizeof label) == 0);
    return 0;
}

static int parse(const pg_table *t, int format, const uint8_t *s, size_t n, size_t cut, got *g,
                 pg_error *err)
{
    pg_records_opts o = {.format = format, .bounds = PG_TABLE_BOUNDS_REFUSE, .max_field = 4096};
    pg_records_parser *p;
    memset(g, 0, sizeof *g);
    g->width = t->width;
    FUZZ_CHECK(pg_records_new(t, &o, sink, g, &p, err) == PG_OK);
    int rc = pg_records_feed(p, s, cut, err);
    if (!rc) rc = pg_records_feed(p, s + cut, n - cut, err);
    if (!rc) rc = pg_records_finish(p, err);
    if (rc) FUZZ_CHECK(err->msg[0] != '\0');
    pg_records_free(p);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static pg_table *tables[2];
    if (!tables[0]) {
        const char *txt[2] = {SCHEMA, SCHEMA1};
        for (int i = 0; i < 2; i++) {
            json_t *j = json_loads(txt[i], 0, NULL);
            FUZZ_CHECK(j && pg_table_from_json(j, &tables[i], NULL) == PG_OK);
            json_decref(j);
        }
    }
    if (size == 0) return 0;
    /* First byte: format (mod 3), schema (the one-column one for 1 in 8),
     * split point. */
    int format = PG_RECORDS_CSV + data[0] % 3;
    const pg_table *t = tables[(data[0] / 3) % 8 == 7];
    const uint8_t *s = data + 1;
    size_t n = size - 1, cut = n ? (size_t)(data[0] / 24) % (n + 1) : 0;
    got whole, split;
    pg_error e1 = {0}, e2 = {0};
    int rc = parse(t, format, s, n, 0, &whole, &e1);
    int rc2 = parse(t, format, s, n, cut, &split, &e2);
    FUZZ_CHECK(rc == rc2 && strcmp(e1.msg, e2.msg) == 0);
    FUZZ_CHECK(whole.rows.n == split.rows.n &&
               (whole.rows.n == 0 || memcmp(whole.rows.s, split.rows.s, whole.rows.n) == 0));
    if (rc == PG_OK) {
        size_t stride = t->width * sizeof(float) + sizeof(int64_t), rows = whole.rows.n / stride;
        float *x = malloc(rows * t->width * sizeof *x + 1);
        int64_t *l = malloc(rows * sizeof *l + 1);
        FUZZ_CHECK(x && l);
        for (size_t i = 0; i < rows; i++) {
            memcpy(x + i * t->width, whole.rows.s + i * stride, t->width * sizeof *x);
            memcpy(l + i, whole.rows.s + i * stride + t->width * sizeof *x, sizeof *l);
        }
        buf out = {0};
        FUZZ_CHECK(pg_records_write(t, format, x, l, rows, 1, to_buf, &out, &e1) == PG_OK);
        got back;
        rc = parse(t, format, (const uint8_t *)(out.s ? out.s : ""), out.n, out.n / 2, &back, &e1);
        if (rc) fprintf(stderr, "re-read failed: %s\n", e1.msg);
        FUZZ_CHECK(rc == PG_OK);
        FUZZ_CHECK(back.rows.n == whole.rows.n &&
                   (back.rows.n == 0 || memcmp(back.rows.s, whole.rows.s, back.rows.n) == 0));
        free(back.rows.s);
        free(out.s);
        free(x);
        free(l);
    }
    free(whole.rows.s);
    free(split.rows.s);
    return 0;
}
