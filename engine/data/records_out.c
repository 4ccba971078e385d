/* engine/data/records_out.c - decoded records out (contract in records.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/data/records.h"

typedef struct out {
    pg_records_write_fn w;
    void *ctx;
    char buf[8192];
    size_t len;
    int failed;
    float *scratch; /* one encoded row */
} out;

static void flush(out *o)
{
    if (!o->failed && o->len && o->w(o->ctx, o->buf, o->len)) o->failed = 1;
    o->len = 0;
}

static void put(out *o, const char *s, size_t n)
{
    while (n > 0 && !o->failed) {
        size_t room = sizeof o->buf - o->len, k = n < room ? n : room;
        memcpy(o->buf + o->len, s, k);
        o->len += k, s += k, n -= k;
        if (o->len == sizeof o->buf) flush(o);
    }
}

static void puts_(out *o, const char *s)
{
    put(o, s, strlen(s));
}

/* Unquoted CSV text that must be quoted to read back as the same string:
 * separators, quotes, line breaks, edge blanks, and the missing tokens. */
static int csv_needs_quotes(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || !strcmp(s, "NA") || !strcmp(s, "null") || !strcmp(s, "NULL")) return 1;
    if (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t') return 1;
    return strpbrk(s, ",\"\r\n") != NULL;
}

static void csv_text(out *o, const char *s)
{
    if (!csv_needs_quotes(s)) {
        puts_(o, s);
        return;
    }
    put(o, "\"", 1);
    for (const char *q = s; *q; q++) {
        if (*q == '"') put(o, "\"", 1);
        put(o, q, 1);
    }
    put(o, "\"", 1);
}

static void json_text(out *o, const char *s)
{
    put(o, "\"", 1);
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        char esc[8];
        if (*q == '"' || *q == '\\') {
            esc[0] = '\\', esc[1] = (char)*q;
            put(o, esc, 2);
        } else if (*q < 0x20 || *q == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", *q);
            put(o, esc, 6);
        } else {
            put(o, (const char *)q, 1);
        }
    }
    put(o, "\"", 1);
}

/* The shortest decimal (up to 17 digits) that encodes to the same float32
 * unit as x: clean text, and reading it back restores the unit exactly. */
static void shortest(const pg_table *t, size_t col, double x, float *scratch, char *num, size_t cap)
{
    pg_table_value v = {.num = x};
    if (pg_table_encode_value(t, col, &v, PG_TABLE_BOUNDS_ALLOW, scratch, NULL)) {
        snprintf(num, cap, "%.17g", x);
        return;
    }
    float want = scratch[t->cols[col].offset];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(num, cap, "%.*g", prec, x);
        v.num = strtod(num, NULL);
        if (!pg_table_encode_value(t, col, &v, PG_TABLE_BOUNDS_ALLOW, scratch, NULL) &&
            scratch[t->cols[col].offset] == want) {
            /* 1000, not 1e+03, for everyday magnitudes (same value). */
            double a = fabs(v.num);
            if (strchr(num, 'e') && a >= 1.0 && a < 1e15) {
                int dec = prec - 1 - (int)floor(log10(a));
                snprintf(num, cap, "%.*f", dec > 0 ? dec : 0, v.num);
            }
            return;
        }
    }
    snprintf(num, cap, "%.17g", x);
}

static void value(out *o, const pg_table *t, size_t col, const pg_table_value *v, int json)
{
    const pg_table_col *c = &t->cols[col];
    char num[40];
    if (v->missing) {
        /* Empty in CSV, except in a one-column table, where an empty line
         * would read as a blank line: NA (unquoted, so missing) there. */
        if (json)
            puts_(o, "null");
        else if (t->ncols == 1)
            puts_(o, "NA");
        return;
    }
    switch (c->type) {
    case PG_COL_CONTINUOUS:
        shortest(t, col, v->num, o->scratch, num, sizeof num);
        puts_(o, num);
        break;
    case PG_COL_INTEGER:
        snprintf(num, sizeof num, "%.0f", v->num);
        puts_(o, num);
        break;
    case PG_COL_BOOLEAN:
        puts_(o, v->cat ? "true" : "false");
        break;
    default:
        if (json)
            json_text(o, c->cats[v->cat]);
        else
            csv_text(o, c->cats[v->cat]);
    }
}

int pg_records_write(const pg_table *t, int format, const float *x, const int64_t *labels, size_t n,
                     int clamp, pg_records_write_fn w, void *ctx, pg_error *err)
{
    if (format < PG_RECORDS_CSV || format > PG_RECORDS_NDJSON)
        return pg_error_set(err, PG_EINVAL, "unknown records format %d", format);
    if (n > 0 && !x) return pg_error_set(err, PG_EINVAL, "rows are NULL");
    size_t classes = pg_table_num_classes(t);
    if (classes) {
        if (n > 0 && !labels)
            return pg_error_set(err, PG_EINVAL, "the table has a label column: labels are needed");
        for (size_t i = 0; i < n; i++)
            if (labels[i] < 0 || (uint64_t)labels[i] >= classes)
                return pg_error_set(err, PG_EINVAL, "row %zu: label %lld is not a class of '%s'",
                                    i + 1, (long long)labels[i], t->cols[t->label].name);
    }
    out *o = malloc(sizeof *o);
    if (!o) return pg_error_set(err, PG_ENOMEM, "out of memory");
    o->w = w, o->ctx = ctx, o->len = 0, o->failed = 0;
    o->scratch = calloc(t->width, sizeof *o->scratch);
    if (!o->scratch) {
        free(o);
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    int csv = format == PG_RECORDS_CSV;
    if (csv) {
        for (size_t c = 0; c < t->ncols; c++) {
            if (c) put(o, ",", 1);
            csv_text(o, t->cols[c].name);
        }
        put(o, "\n", 1);
    } else if (format == PG_RECORDS_JSON) {
        put(o, "[", 1);
    }
    for (size_t i = 0; i < n && !o->failed; i++) {
        const float *row = x + i * t->width;
        if (!csv && i && format == PG_RECORDS_JSON) put(o, ",\n", 2);
        if (!csv) put(o, "{", 1);
        for (size_t c = 0; c < t->ncols; c++) {
            const pg_table_col *col = &t->cols[c];
            pg_table_value v = {0};
            if (c == t->label)
                v.cat = (size_t)labels[i];
            else
                pg_table_decode_value(t, c, row, clamp, &v);
            if (csv) {
                if (c) put(o, ",", 1);
            } else {
                if (c) put(o, ",", 1);
                json_text(o, col->name);
                put(o, ":", 1);
            }
            value(o, t, c, &v, !csv);
        }
        put(o, csv ? "\n" : "}", 1);
        if (format == PG_RECORDS_NDJSON) put(o, "\n", 1);
    }
    if (format == PG_RECORDS_JSON) put(o, "]\n", 2);
    flush(o);
    int failed = o->failed;
    free(o->scratch);
    free(o);
    return failed ? pg_error_set(err, PG_EIO, "cannot write the records") : PG_OK;
}
