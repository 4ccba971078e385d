/* engine/data/records.c - typed records in: cells, the CSV layer and a
 * streaming JSON / NDJSON lexer (contract in records.h). */
#include "engine/data/records.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUMBER_MAX 256

enum cell_kind { K_TEXT, K_QTEXT, K_STRING, K_NUMBER, K_TRUE, K_FALSE, K_NULL };

typedef struct name_ref {
    const char *s;
    size_t n, idx;
} name_ref;

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

static int cmp_ref(const void *a, const void *b)
{
    const name_ref *x = a, *y = b;
    return cmp_bytes(x->s, x->n, y->s, y->n);
}

static name_ref *make_index(char *const *names, size_t n)
{
    name_ref *r = malloc((n ? n : 1) * sizeof *r);
    if (!r) return NULL;
    for (size_t i = 0; i < n; i++) r[i] = (name_ref){names[i], strlen(names[i]), i};
    qsort(r, n, sizeof *r, cmp_ref);
    return r;
}

/* Index of the name, or PG_TABLE_NONE. */
static size_t lookup(const name_ref *r, size_t n, const char *s, size_t len)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_bytes(r[mid].s, r[mid].n, s, len);
        if (c == 0) return r[mid].idx;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return PG_TABLE_NONE;
}

/* JSON states. */
enum {
    J_TOP,       /* before '[' (JSON) or between objects (NDJSON) */
    J_ARR_FIRST, /* after '[' */
    J_ARR_NEXT,  /* after an object inside the array */
    J_ARR_ELEM,  /* after ',' inside the array */
    J_DONE,      /* after ']' */
    J_OBJ_FIRST, /* after '{' */
    J_OBJ_KEY,   /* after ',' inside an object */
    J_COLON,     /* after a key */
    J_VALUE,     /* after ':' */
    J_OBJ_NEXT,  /* after a value */
};
/* JSON token lexers. */
enum { T_NONE, T_STRING, T_ESCAPE, T_UNICODE, T_NUMBER, T_LITERAL };

struct pg_records_parser {
    const pg_table *t;
    pg_records_opts o;
    pg_records_sink sink;
    void *ctx;
    int failed;
    uint64_t rows, err_row;
    size_t err_col;
    float *row;
    int64_t label;
    unsigned char *seen; /* per column, in the current record */
    /* CSV */
    pg_csv_tok *tok;
    size_t *hdr; /* header position -> column */
    size_t nhdr, field;
    int header_done;
    uint64_t line;
    /* JSON */
    int js, tk, bom, in_string_key, nl_seen;
    char *buf;
    size_t len, cap;
    unsigned hex, hexn, high;
    size_t key_col;
    /* Sorted lookups: column names, and the categories of every column
     * (wide tables and long category lists stay O(log n) per cell). */
    name_ref *col_index;
    name_ref **cat_index;
};

int pg_records_format_from_name(const char *name, int *format, pg_error *err)
{
    if (!strcmp(name, "csv"))
        *format = PG_RECORDS_CSV;
    else if (!strcmp(name, "json"))
        *format = PG_RECORDS_JSON;
    else if (!strcmp(name, "ndjson") || !strcmp(name, "jsonl"))
        *format = PG_RECORDS_NDJSON;
    else
        return pg_error_set(err, PG_EINVAL, "unknown records format '%.32s' (csv, json, ndjson)",
                            name);
    return PG_OK;
}

/* ---- errors ------------------------------------------------------------ */

static void describe(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0, m = n < 32 ? n : 32;
    for (size_t i = 0; i < m && o + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        out[o++] = (c >= 0x20 && c < 0x7f && c != '\'') ? (char)c : '?';
    }
    out[o] = '\0';
    if (n > m && o + 4 < cap) strcat(out, "...");
}

/* "row R[ (line L)], column 'c': <msg>" from a column-level message. */
static int fail_cell(pg_records_parser *p, size_t col, int code, const char *msg, pg_error *err)
{
    char where[64];
    if (p->o.format == PG_RECORDS_CSV)
        snprintf(where, sizeof where, "row %llu (line %llu)", (unsigned long long)(p->rows + 1),
                 (unsigned long long)p->line);
    else
        snprintf(where, sizeof where, "row %llu", (unsigned long long)(p->rows + 1));
    p->err_row = p->rows + 1, p->err_col = col;
    return pg_error_set(err, code, "%s, %s", where, msg);
}

static int fail_value(pg_records_parser *p, size_t col, int code, const char *what, pg_error *err)
{
    char msg[256]; /* 8 + 64 + 3 + 180 + NUL: never truncated */
    snprintf(msg, sizeof msg, "column '%.64s': %.180s", p->t->cols[col].name, what);
    return fail_cell(p, col, code, msg, err);
}

/* ---- cells ------------------------------------------------------------- */

static int ci_eq(const char *s, size_t n, const char *lower)
{
    if (strlen(lower) != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != lower[i]) return 0;
    }
    return 1;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The decimal grammar of engine/data/csv.c (sign, digits, point, exponent),
 * without nan/inf. */
static int csv_number(const char *s, size_t n)
{
    size_t i = 0, digits = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    while (i < n && is_digit(s[i])) i++, digits++;
    if (i < n && s[i] == '.')
        for (i++; i < n && is_digit(s[i]); i++) digits++;
    if (!digits) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t e = 0;
        while (i < n && is_digit(s[i])) i++, e++;
        if (!e) return 0;
    }
    return i == n;
}

/* RFC 8259 number grammar. */
static int json_number(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-') i++;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && s[i] >= '1' && s[i] <= '9')
        while (i < n && is_digit(s[i])) i++;
    else
        return 0;
    if (i < n && s[i] == '.') {
        size_t d = ++i;
        while (i < n && is_digit(s[i])) i++;
        if (i == d) return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t d = i;
        while (i < n && is_digit(s[i])) i++;
        if (i == d) return 0;
    }
    return i == n;
}

static const char *kind_name(int kind)
{
    static const char *const names[] = {"text", "text",  "a string", "a number",
                                        "true", "false", "null"};
    return names[kind];
}

/* One cell into the row (or the label). */
static int cell(pg_records_parser *p, size_t col, int kind, const char *s, size_t n, pg_error *err)
{
    const pg_table *t = p->t;
    const pg_table_col *c = &t->cols[col];
    pg_table_value v = {0};
    char d[48], msg[160];
    int csv = kind == K_TEXT || kind == K_QTEXT;
    if (kind == K_NULL ||
        (kind == K_TEXT && (n == 0 || (n == 2 && !memcmp(s, "NA", 2)) ||
                            (n == 4 && (!memcmp(s, "null", 4) || !memcmp(s, "NULL", 4)))))) {
        v.missing = 1;
    } else if (c->type == PG_COL_CONTINUOUS || c->type == PG_COL_INTEGER) {
        if (!(csv ? csv_number(s, n) : kind == K_NUMBER) || n > NUMBER_MAX) {
            describe(s, n, d, sizeof d);
            if (csv)
                snprintf(msg, sizeof msg, "'%s' is not a number", d);
            else
                snprintf(msg, sizeof msg, "expected a number, got %s", kind_name(kind));
            return fail_value(p, col, PG_EINVAL, msg, err);
        }
        char txt[NUMBER_MAX + 1];
        memcpy(txt, s, n);
        txt[n] = '\0';
        v.num = strtod(txt, NULL);
        if (!isfinite(v.num)) {
            describe(s, n, d, sizeof d);
            snprintf(msg, sizeof msg, "'%s' overflows a double", d);
            return fail_value(p, col, PG_EINVAL, msg, err);
        }
    } else if (c->type == PG_COL_BOOLEAN) {
        if (csv && (ci_eq(s, n, "true") || ci_eq(s, n, "yes") || (n == 1 && s[0] == '1')))
            v.cat = 1;
        else if (csv && (ci_eq(s, n, "false") || ci_eq(s, n, "no") || (n == 1 && s[0] == '0')))
            v.cat = 0;
        else if (kind == K_TRUE || kind == K_FALSE)
            v.cat = kind == K_TRUE;
        else {
            describe(s, n, d, sizeof d);
            if (csv)
                snprintf(msg, sizeof msg, "'%s' is not a boolean (true/false)", d);
            else
                snprintf(msg, sizeof msg, "expected true or false, got %s", kind_name(kind));
            return fail_value(p, col, PG_EINVAL, msg, err);
        }
    } else {
        /* A JSON number names the category spelled like it (integer codes,
         * "1".."5", which CSV carries as text). */
        size_t k = csv || kind == K_STRING || kind == K_NUMBER
                       ? lookup(p->cat_index[col], c->ncat, s, n)
                       : PG_TABLE_NONE;
        if (!csv && kind != K_STRING && k == PG_TABLE_NONE) {
            snprintf(msg, sizeof msg, "expected a category name (a string), got %s",
                     kind_name(kind));
            return fail_value(p, col, PG_EINVAL, msg, err);
        }
        if (k == PG_TABLE_NONE) {
            describe(s, n, d, sizeof d);
            snprintf(msg, sizeof msg, "unknown category '%s'", d);
            return fail_value(p, col, PG_EINVAL, msg, err);
        }
        v.cat = k;
    }
    if (col == t->label) {
        if (v.missing) return fail_value(p, col, PG_EINVAL, "the label is missing", err);
        p->label = (int64_t)v.cat;
        return PG_OK;
    }
    pg_error e = {0};
    int rc = pg_table_encode_value(t, col, &v, p->o.bounds, p->row, &e);
    if (rc) return fail_cell(p, col, rc, e.msg, err);
    return PG_OK;
}

static int end_row(pg_records_parser *p, pg_error *err)
{
    if (p->o.max_rows && p->rows >= p->o.max_rows) {
        p->err_row = p->rows + 1, p->err_col = PG_TABLE_NONE;
        return pg_error_set(err, PG_ENOMEM, "more than the %llu-row limit",
                            (unsigned long long)p->o.max_rows);
    }
    int rc = p->sink ? p->sink(p->ctx, p->row, p->label, p->rows + 1, err) : PG_OK;
    if (rc) {
        p->err_row = p->rows + 1, p->err_col = PG_TABLE_NONE;
        return rc;
    }
    p->rows++;
    p->label = -1;
    memset(p->seen, 0, p->t->ncols);
    return PG_OK;
}

/* ---- CSV layer ---------------------------------------------------------- */

static int csv_header_field(pg_records_parser *p, const char *s, size_t n, int eor, pg_error *err)
{
    char d[48];
    size_t col = lookup(p->col_index, p->t->ncols, s, n);
    if (col == PG_TABLE_NONE) {
        describe(s, n, d, sizeof d);
        return pg_error_set(err, PG_EFORMAT, "CSV header: unknown column '%s' (not in the schema)",
                            d);
    }
    if (p->seen[col]) {
        p->err_col = col;
        return pg_error_set(err, PG_EFORMAT, "CSV header: column '%.64s' appears twice",
                            p->t->cols[col].name);
    }
    p->seen[col] = 1;
    p->hdr[p->nhdr++] = col;
    if (!eor) return PG_OK;
    for (size_t c = 0; c < p->t->ncols; c++)
        if (!p->seen[c]) {
            p->err_col = c;
            return pg_error_set(err, PG_EFORMAT, "CSV header: column '%.64s' is missing",
                                p->t->cols[c].name);
        }
    memset(p->seen, 0, p->t->ncols);
    p->header_done = 1;
    return PG_OK;
}

static int csv_field(void *ctx, const char *s, size_t n, int quoted, int eor, uint64_t line,
                     pg_error *err)
{
    pg_records_parser *p = ctx;
    p->line = line;
    if (!p->header_done) return csv_header_field(p, s, n, eor, err);
    if (p->field >= p->nhdr) {
        p->err_row = p->rows + 1, p->err_col = PG_TABLE_NONE;
        return pg_error_set(err, PG_EFORMAT, "row %llu (line %llu) has more than %zu fields",
                            (unsigned long long)(p->rows + 1), (unsigned long long)line, p->nhdr);
    }
    int rc = cell(p, p->hdr[p->field], quoted ? K_QTEXT : K_TEXT, s, n, err);
    if (rc) return rc;
    p->field++;
    if (!eor) return PG_OK;
    if (p->field != p->nhdr) {
        p->err_row = p->rows + 1, p->err_col = PG_TABLE_NONE;
        return pg_error_set(err, PG_EFORMAT, "row %llu (line %llu) has %zu fields, expected %zu",
                            (unsigned long long)(p->rows + 1), (unsigned long long)line, p->field,
                            p->nhdr);
    }
    p->field = 0;
    return end_row(p, err);
}

/* ---- JSON layer --------------------------------------------------------- */

static int jfail(pg_records_parser *p, const char *what, pg_error *err)
{
    p->err_row = p->js >= J_OBJ_FIRST ? p->rows + 1 : 0;
    p->err_col = PG_TABLE_NONE;
    if (p->err_row)
        return pg_error_set(err, PG_EFORMAT, "row %llu: %s", (unsigned long long)p->err_row, what);
    return pg_error_set(err, PG_EFORMAT, "%s", what);
}

static int jpush(pg_records_parser *p, char c, pg_error *err)
{
    size_t max = p->o.max_field ? p->o.max_field : PG_RECORDS_FIELD_MAX;
    if (p->len >= max) {
        p->err_row = p->rows + 1, p->err_col = PG_TABLE_NONE;
        return pg_error_set(err, PG_ENOMEM, "row %llu: a JSON token is longer than %zu bytes",
                            (unsigned long long)(p->rows + 1), max);
    }
    if (p->len == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        if (cap > max) cap = max;
        char *b = realloc(p->buf, cap);
        if (!b) return pg_error_set(err, PG_ENOMEM, "out of memory");
        p->buf = b, p->cap = cap;
    }
    p->buf[p->len++] = c;
    return PG_OK;
}

static int utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t k;
        unsigned min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0)
            k = 1, min = 0x80, c &= 0x1F;
        else if ((c & 0xF0) == 0xE0)
            k = 2, min = 0x800, c &= 0x0F;
        else if ((c & 0xF8) == 0xF0)
            k = 3, min = 0x10000, c &= 0x07;
        else
            return 0;
        if (n - i <= k) return 0;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return 0;
            c = (c << 6) | (s[i + j] & 0x3F);
        }
        if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
        i += k + 1;
    }
    return 1;
}

static int put_utf8(pg_records_parser *p, unsigned cp, pg_error *err)
{
    char b[4];
    size_t n;
    if (cp < 0x80)
        b[0] = (char)cp, n = 1;
    else if (cp < 0x800)
        b[0] = (char)(0xC0 | (cp >> 6)), b[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
    else if (cp < 0x10000)
        b[0] = (char)(0xE0 | (cp >> 12)), b[1] = (char)(0x80 | ((cp >> 6) & 0x3F)),
        b[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
    else
        b[0] = (char)(0xF0 | (cp >> 18)), b[1] = (char)(0x80 | ((cp >> 12) & 0x3F)),
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), b[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
    for (size_t i = 0; i < n; i++) {
        int rc = jpush(p, b[i], err);
        if (rc) return rc;
    }
    return PG_OK;
}

/* A complete key or value token in p->buf. */
static int jtoken(pg_records_parser *p, int kind, pg_error *err)
{
    if (p->js == J_COLON) { /* a key just ended */
        size_t col = lookup(p->col_index, p->t->ncols, p->buf ? p->buf : "", p->len);
        if (col == PG_TABLE_NONE) {
            char d[48], msg[96];
            describe(p->buf ? p->buf : "", p->len, d, sizeof d);
            snprintf(msg, sizeof msg, "unknown column '%s' (not in the schema)", d);
            return fail_cell(p, PG_TABLE_NONE, PG_EFORMAT, msg, err);
        }
        if (p->seen[col]) return fail_value(p, col, PG_EFORMAT, "appears twice in the record", err);
        p->seen[col] = 1;
        p->key_col = col;
        return PG_OK;
    }
    p->js = J_OBJ_NEXT;
    return cell(p, p->key_col, kind, p->buf ? p->buf : "", p->len, err);
}

static int jend_object(pg_records_parser *p, pg_error *err)
{
    for (size_t c = 0; c < p->t->ncols; c++)
        if (!p->seen[c]) return fail_value(p, c, PG_EFORMAT, "is missing from the record", err);
    p->js = p->o.format == PG_RECORDS_JSON ? J_ARR_NEXT : J_TOP;
    p->nl_seen = 0;
    return end_row(p, err);
}

static int is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int jstep(pg_records_parser *p, unsigned char c, pg_error *err);

/* Inside a token; returns 1 in *again when c must be re-read as structure. */
static int jlex(pg_records_parser *p, unsigned char c, int *again, pg_error *err)
{
    *again = 0;
    switch (p->tk) {
    case T_STRING:
        if (c == '"') {
            p->tk = T_NONE;
            if (p->high) return jfail(p, "unpaired UTF-16 surrogate in a string", err);
            if (!utf8_valid((const unsigned char *)p->buf, p->len))
                return jfail(p, "a string is not valid UTF-8", err);
            if (p->js == J_OBJ_FIRST || p->js == J_OBJ_KEY) {
                p->js = J_COLON;
                return jtoken(p, K_STRING, err);
            }
            return jtoken(p, K_STRING, err);
        }
        if (c == '\\') {
            p->tk = T_ESCAPE;
            return PG_OK;
        }
        if (c < 0x20) return jfail(p, "control character inside a string", err);
        if (p->high) return jfail(p, "unpaired UTF-16 surrogate in a string", err);
        return jpush(p, (char)c, err);
    case T_ESCAPE: {
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *f = c ? strchr(from, c) : NULL;
        if (c == 'u') {
            p->tk = T_UNICODE, p->hex = 0, p->hexn = 0;
            return PG_OK;
        }
        if (!f) return jfail(p, "invalid escape in a string", err);
        if (p->high) return jfail(p, "unpaired UTF-16 surrogate in a string", err);
        p->tk = T_STRING;
        return jpush(p, to[f - from], err);
    }
    case T_UNICODE: {
        int h = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (h < 0) return jfail(p, "invalid \\u escape in a string", err);
        p->hex = p->hex * 16 + (unsigned)h;
        if (++p->hexn < 4) return PG_OK;
        p->tk = T_STRING;
        unsigned cp = p->hex;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (p->high) return jfail(p, "unpaired UTF-16 surrogate in a string", err);
            p->high = cp;
            return PG_OK;
        }
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            if (!p->high) return jfail(p, "unpaired UTF-16 surrogate in a string", err);
            cp = 0x10000 + ((p->high - 0xD800) << 10) + (cp - 0xDC00);
            p->high = 0;
        } else if (p->high) {
            return jfail(p, "unpaired UTF-16 surrogate in a string", err);
        }
        if (cp == 0) return jfail(p, "a string contains \\u0000", err);
        return put_utf8(p, cp, err);
    }
    case T_NUMBER:
        if (is_digit((char)c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')
            return jpush(p, (char)c, err);
        p->tk = T_NONE;
        *again = 1;
        if (!json_number(p->buf, p->len)) {
            char d[48], msg[96];
            describe(p->buf, p->len, d, sizeof d);
            snprintf(msg, sizeof msg, "'%s' is not a JSON number", d);
            return jfail(p, msg, err);
        }
        return jtoken(p, K_NUMBER, err);
    default: /* T_LITERAL */
        if (c >= 'a' && c <= 'z') return jpush(p, (char)c, err);
        p->tk = T_NONE;
        *again = 1;
        if (p->len == 4 && !memcmp(p->buf, "true", 4)) return jtoken(p, K_TRUE, err);
        if (p->len == 5 && !memcmp(p->buf, "false", 5)) return jtoken(p, K_FALSE, err);
        if (p->len == 4 && !memcmp(p->buf, "null", 4)) return jtoken(p, K_NULL, err);
        return jfail(p, "invalid literal (expected true, false or null)", err);
    }
}

static int jstep(pg_records_parser *p, unsigned char c, pg_error *err)
{
    if (p->tk != T_NONE) {
        int again, rc = jlex(p, c, &again, err);
        if (rc || !again) return rc;
    }
    if (is_ws(c)) {
        if (c == '\n') p->nl_seen = 1;
        return PG_OK;
    }
    switch (p->js) {
    case J_TOP:
        if (p->o.format == PG_RECORDS_JSON) {
            if (c != '[') return jfail(p, "JSON records must be an array of objects", err);
            p->js = J_ARR_FIRST;
            return PG_OK;
        }
        if (c != '{') return jfail(p, "NDJSON: expected an object", err);
        if (p->rows > 0 && !p->nl_seen)
            return jfail(p, "NDJSON: objects must be on separate lines", err);
        p->js = J_OBJ_FIRST;
        return PG_OK;
    case J_ARR_FIRST:
        if (c == ']') {
            p->js = J_DONE;
            return PG_OK;
        }
        __attribute__((fallthrough));
    case J_ARR_ELEM:
        if (c != '{') return jfail(p, "JSON records: expected an object", err);
        p->js = J_OBJ_FIRST;
        return PG_OK;
    case J_ARR_NEXT:
        if (c == ',')
            p->js = J_ARR_ELEM;
        else if (c == ']')
            p->js = J_DONE;
        else
            return jfail(p, "JSON records: expected ',' or ']' after an object", err);
        return PG_OK;
    case J_DONE:
        return jfail(p, "text after the end of the JSON array", err);
    case J_OBJ_FIRST:
        if (c == '}') return jend_object(p, err);
        __attribute__((fallthrough));
    case J_OBJ_KEY:
        if (c != '"') return jfail(p, "expected a column name (a string)", err);
        p->tk = T_STRING, p->len = 0;
        return PG_OK;
    case J_COLON:
        if (c != ':') return jfail(p, "expected ':' after a column name", err);
        p->js = J_VALUE;
        return PG_OK;
    case J_VALUE:
        p->len = 0;
        if (c == '"')
            p->tk = T_STRING;
        else if (c == '-' || is_digit((char)c))
            p->tk = T_NUMBER;
        else if (c >= 'a' && c <= 'z')
            p->tk = T_LITERAL;
        else if (c == '{' || c == '[')
            return fail_value(p, p->key_col, PG_EINVAL,
                              "nested objects and arrays are not cell values", err);
        else
            return jfail(p, "expected a value", err);
        return p->tk == T_STRING ? PG_OK : jpush(p, (char)c, err);
    default: /* J_OBJ_NEXT */
        if (c == ',')
            p->js = J_OBJ_KEY;
        else if (c == '}')
            return jend_object(p, err);
        else
            return jfail(p, "expected ',' or '}' in a record", err);
        return PG_OK;
    }
}

/* ---- parser ------------------------------------------------------------- */

int pg_records_new(const pg_table *t, const pg_records_opts *o, pg_records_sink sink, void *ctx,
                   pg_records_parser **out, pg_error *err)
{
    *out = NULL;
    if (!t || !o) return pg_error_set(err, PG_EINVAL, "records parser needs a table and options");
    if (o->format < PG_RECORDS_CSV || o->format > PG_RECORDS_NDJSON)
        return pg_error_set(err, PG_EINVAL, "unknown records format %d", o->format);
    pg_records_parser *p = calloc(1, sizeof *p);
    if (!p) return pg_error_set(err, PG_ENOMEM, "out of memory");
    p->t = t, p->o = *o, p->sink = sink, p->ctx = ctx;
    p->label = -1, p->err_col = PG_TABLE_NONE;
    p->row = calloc(t->width, sizeof *p->row);
    p->seen = calloc(t->ncols, 1);
    p->hdr = calloc(t->ncols, sizeof *p->hdr);
    p->cat_index = calloc(t->ncols, sizeof *p->cat_index);
    char **names = malloc(t->ncols * sizeof *names);
    int bad = !p->row || !p->seen || !p->hdr || !p->cat_index || !names;
    if (!bad) {
        for (size_t c = 0; c < t->ncols; c++) names[c] = t->cols[c].name;
        bad = !(p->col_index = make_index(names, t->ncols));
        for (size_t c = 0; c < t->ncols && !bad; c++)
            if (t->cols[c].type == PG_COL_CATEGORICAL)
                bad = !(p->cat_index[c] = make_index(t->cols[c].cats, t->cols[c].ncat));
    }
    free(names);
    int rc = bad ? pg_error_set(err, PG_ENOMEM, "out of memory") : 0;
    if (!rc && o->format == PG_RECORDS_CSV)
        rc = pg_csv_tok_new(o->max_field, csv_field, p, &p->tok, err);
    if (rc) {
        pg_records_free(p);
        return rc;
    }
    *out = p;
    return PG_OK;
}

void pg_records_free(pg_records_parser *p)
{
    if (!p) return;
    pg_csv_tok_free(p->tok);
    free(p->row);
    free(p->seen);
    free(p->hdr);
    free(p->buf);
    for (size_t c = 0; p->cat_index && c < p->t->ncols; c++) free(p->cat_index[c]);
    free(p->cat_index);
    free(p->col_index);
    free(p);
}

static const unsigned char BOM[3] = {0xEF, 0xBB, 0xBF};

static int jfeed_byte(pg_records_parser *p, unsigned char c, pg_error *err)
{
    if (p->bom < 3) {
        if (c == BOM[p->bom]) {
            p->bom++;
            return PG_OK;
        }
        int n = p->bom;
        p->bom = 3;
        for (int i = 0; i < n; i++) {
            int rc = jstep(p, BOM[i], err);
            if (rc) return rc;
        }
    }
    if (c == 0) return jfail(p, "the input contains a NUL byte", err);
    return jstep(p, c, err);
}

/* A CSV syntax error (a stray or unclosed quote) after the header is in
 * the record being read: the row after the complete ones. */
static void csv_syntax_row(pg_records_parser *p)
{
    if (p->tok && p->header_done && !p->err_row) p->err_row = p->rows + 1;
}

int pg_records_feed(pg_records_parser *p, const void *buf, size_t len, pg_error *err)
{
    if (p->failed) return pg_error_set(err, p->failed, "the records parse already failed");
    int rc = PG_OK;
    if (p->tok) {
        rc = pg_csv_tok_feed(p->tok, buf, len, err);
    } else {
        const unsigned char *s = buf;
        for (size_t i = 0; i < len && !rc; i++) rc = jfeed_byte(p, s[i], err);
    }
    if (rc) csv_syntax_row(p);
    if (rc) p->failed = rc;
    return rc;
}

int pg_records_finish(pg_records_parser *p, pg_error *err)
{
    if (p->failed) return pg_error_set(err, p->failed, "the records parse already failed");
    int rc = PG_OK;
    if (p->tok) {
        rc = pg_csv_tok_finish(p->tok, err);
        if (!rc && !p->header_done) rc = pg_error_set(err, PG_EFORMAT, "CSV has no header row");
    } else {
        if (p->bom > 0 && p->bom < 3) {
            int n = p->bom;
            p->bom = 3;
            for (int i = 0; i < n && !rc; i++) rc = jstep(p, BOM[i], err);
        }
        /* A number or literal at the very end is completed by a space. */
        if (!rc && (p->tk == T_NUMBER || p->tk == T_LITERAL)) rc = jstep(p, ' ', err);
        if (!rc && p->tk != T_NONE) rc = jfail(p, "the input ends inside a string", err);
        if (!rc && p->o.format == PG_RECORDS_JSON && p->js != J_DONE)
            rc = jfail(p,
                       p->js == J_TOP ? "no JSON array in the input"
                                      : "the input ends before the JSON array is closed",
                       err);
        if (!rc && p->o.format == PG_RECORDS_NDJSON && p->js != J_TOP)
            rc = jfail(p, "the input ends inside a record", err);
    }
    if (rc) csv_syntax_row(p);
    if (rc) p->failed = rc;
    return rc;
}

uint64_t pg_records_count(const pg_records_parser *p)
{
    return p->rows;
}

void pg_records_error_at(const pg_records_parser *p, uint64_t *row, size_t *col)
{
    if (row) *row = p->err_row;
    if (col) *col = p->err_col;
}

/* ---- whole-buffer convenience ------------------------------------------- */

typedef struct collect {
    const pg_table *t;
    float *x;
    int64_t *labels;
    size_t n, cap;
} collect;

static int collect_row(void *ctx, const float *row, int64_t label, uint64_t rowno, pg_error *err)
{
    collect *c = ctx;
    (void)rowno;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64, bytes;
        if (pg_size_mul(cap, c->t->width * sizeof(float), &bytes))
            return pg_error_set(err, PG_ENOMEM, "too many rows");
        float *x = realloc(c->x, bytes);
        if (x) c->x = x;
        int64_t *l = c->t->label != PG_TABLE_NONE ? realloc(c->labels, cap * sizeof *l) : NULL;
        if (l) c->labels = l;
        if (!x || (c->t->label != PG_TABLE_NONE && !l))
            return pg_error_set(err, PG_ENOMEM, "out of memory");
        c->cap = cap;
    }
    memcpy(c->x + c->n * c->t->width, row, c->t->width * sizeof *row);
    if (c->labels) c->labels[c->n] = label;
    c->n++;
    return PG_OK;
}

int pg_records_parse(const pg_table *t, const pg_records_opts *o, const void *buf, size_t len,
                     float **x, int64_t **labels, size_t *n, pg_error *err)
{
    *x = NULL, *labels = NULL, *n = 0;
    collect c = {.t = t};
    pg_records_parser *p;
    int rc = pg_records_new(t, o, collect_row, &c, &p, err);
    if (rc) return rc;
    rc = pg_records_feed(p, buf, len, err);
    if (!rc) rc = pg_records_finish(p, err);
    pg_records_free(p);
    if (rc) {
        free(c.x);
        free(c.labels);
        return rc;
    }
    if (!c.x) c.x = malloc(sizeof(float));
    if (!c.labels && t->label != PG_TABLE_NONE) c.labels = malloc(sizeof(int64_t));
    if (!c.x || (t->label != PG_TABLE_NONE && !c.labels)) {
        free(c.x);
        free(c.labels);
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    *x = c.x, *labels = c.labels, *n = c.n;
    return PG_OK;
}
