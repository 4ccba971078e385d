/* engine/data/csvtok.c - streaming RFC 4180 tokenizer (contract in records.h).
 *
 * A byte-at-a-time state machine, so a chunk may end anywhere: inside a
 * quoted field, between "\r" and "\n", inside the BOM. engine/data/csv.c
 * parses whole buffers in two passes (it counts rows before allocating), so
 * it cannot serve a stream; the number grammar in records.c follows it. */
#include <stdlib.h>
#include <string.h>

#include "engine/data/records.h"

enum { S_START, S_UNQUOTED, S_QUOTED, S_QUOTE, S_AFTER_QUOTE, S_CR };

struct pg_csv_tok {
    pg_csv_tok_fn fn;
    void *ctx;
    char *buf;
    size_t len, cap, max;
    int state, quoted, bom, failed;
    uint64_t line, rec_line, blank_line;
    size_t fields; /* fields emitted in the current record */
};

int pg_csv_tok_new(size_t max_field, pg_csv_tok_fn fn, void *ctx, pg_csv_tok **out, pg_error *err)
{
    *out = NULL;
    pg_csv_tok *k = calloc(1, sizeof *k);
    if (!k) return pg_error_set(err, PG_ENOMEM, "out of memory");
    k->fn = fn, k->ctx = ctx;
    k->max = max_field ? max_field : PG_RECORDS_FIELD_MAX;
    k->line = 1;
    *out = k;
    return PG_OK;
}

void pg_csv_tok_free(pg_csv_tok *k)
{
    if (!k) return;
    free(k->buf);
    free(k);
}

static int push(pg_csv_tok *k, char c, pg_error *err)
{
    if (k->len >= k->max)
        return pg_error_set(err, PG_ENOMEM, "CSV line %llu: a field is longer than %zu bytes",
                            (unsigned long long)k->rec_line, k->max);
    if (k->len == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 64;
        if (cap > k->max) cap = k->max;
        char *b = realloc(k->buf, cap);
        if (!b) return pg_error_set(err, PG_ENOMEM, "out of memory");
        k->buf = b, k->cap = cap;
    }
    k->buf[k->len++] = c;
    return PG_OK;
}

static int emit(pg_csv_tok *k, int eor, pg_error *err)
{
    size_t n = k->len;
    if (!k->quoted)
        while (n > 0 && (k->buf[n - 1] == ' ' || k->buf[n - 1] == '\t')) n--;
    int rc = k->fn(k->ctx, k->buf ? k->buf : "", n, k->quoted, eor, k->rec_line, err);
    k->len = 0, k->quoted = 0;
    k->fields = eor ? 0 : k->fields + 1;
    k->state = S_START;
    return rc;
}

/* First byte of a record: an empty line before it is an error. */
static int begin_record(pg_csv_tok *k, pg_error *err)
{
    if (k->fields) return PG_OK;
    if (k->blank_line)
        return pg_error_set(err, PG_EFORMAT,
                            "CSV line %llu is empty (only trailing empty lines are allowed)",
                            (unsigned long long)k->blank_line);
    k->rec_line = k->line;
    return PG_OK;
}

static int step(pg_csv_tok *k, unsigned char c, pg_error *err)
{
    int rc;
    if (c == 0)
        return pg_error_set(err, PG_EFORMAT, "CSV line %llu contains a NUL byte",
                            (unsigned long long)k->line);
    switch (k->state) {
    case S_START:
        if (c == ' ' || c == '\t') return PG_OK;
        if (c == '\n' || c == '\r') {
            int blank = k->fields == 0;
            if (blank && !k->blank_line) k->blank_line = k->line;
            if (c == '\n') k->line++;
            if (blank) {
                k->state = c == '\r' ? S_CR : S_START;
                return PG_OK;
            }
            rc = emit(k, 1, err);
            if (c == '\r') k->state = S_CR;
            return rc;
        }
        if ((rc = begin_record(k, err))) return rc;
        if (c == ',') return emit(k, 0, err);
        if (c == '"') {
            k->quoted = 1;
            k->state = S_QUOTED;
            return PG_OK;
        }
        k->state = S_UNQUOTED;
        return push(k, (char)c, err);
    case S_UNQUOTED:
        if (c == ',') return emit(k, 0, err);
        if (c == '\n' || c == '\r') {
            rc = emit(k, 1, err);
            if (c == '\n') k->line++;
            if (c == '\r') k->state = S_CR;
            return rc;
        }
        if (c == '"')
            return pg_error_set(err, PG_EFORMAT,
                                "CSV line %llu: a quote inside an unquoted field (quote the "
                                "whole field and double the quote)",
                                (unsigned long long)k->line);
        return push(k, (char)c, err);
    case S_QUOTED:
        if (c == '"') {
            k->state = S_QUOTE;
            return PG_OK;
        }
        if (c == '\n') k->line++;
        return push(k, (char)c, err);
    case S_QUOTE:
        if (c == '"') {
            k->state = S_QUOTED;
            return push(k, '"', err);
        }
        __attribute__((fallthrough)); /* the field is closed */
    case S_AFTER_QUOTE:
        if (c == ' ' || c == '\t') {
            k->state = S_AFTER_QUOTE;
            return PG_OK;
        }
        if (c == ',') return emit(k, 0, err);
        if (c == '\n' || c == '\r') {
            rc = emit(k, 1, err);
            if (c == '\n') k->line++;
            if (c == '\r') k->state = S_CR;
            return rc;
        }
        return pg_error_set(err, PG_EFORMAT, "CSV line %llu: text after a closing quote",
                            (unsigned long long)k->line);
    default: /* S_CR */
        if (c != '\n')
            return pg_error_set(err, PG_EFORMAT,
                                "CSV line %llu: carriage return not followed by a line feed",
                                (unsigned long long)k->line);
        k->line++;
        k->state = S_START;
        return PG_OK;
    }
}

static const unsigned char BOM[3] = {0xEF, 0xBB, 0xBF};

static int step_bom(pg_csv_tok *k, unsigned char c, pg_error *err)
{
    if (k->bom < 3) {
        if (c == BOM[k->bom]) {
            k->bom++;
            return PG_OK;
        }
        int n = k->bom;
        k->bom = 3;
        for (int i = 0; i < n; i++) {
            int rc = step(k, BOM[i], err);
            if (rc) return rc;
        }
    }
    return step(k, c, err);
}

int pg_csv_tok_feed(pg_csv_tok *k, const void *buf, size_t len, pg_error *err)
{
    if (k->failed) return pg_error_set(err, k->failed, "CSV parse already failed");
    const unsigned char *p = buf;
    for (size_t i = 0; i < len; i++) {
        int rc = step_bom(k, p[i], err);
        if (rc) return k->failed = rc;
    }
    return PG_OK;
}

int pg_csv_tok_finish(pg_csv_tok *k, pg_error *err)
{
    if (k->failed) return pg_error_set(err, k->failed, "CSV parse already failed");
    int rc = PG_OK;
    if (k->bom > 0 && k->bom < 3) {
        int n = k->bom;
        k->bom = 3;
        for (int i = 0; i < n && !rc; i++) rc = step(k, BOM[i], err);
    }
    if (!rc) {
        if (k->state == S_QUOTED)
            rc = pg_error_set(err, PG_EFORMAT,
                              "CSV ends inside a quoted field (the record starting on line %llu)",
                              (unsigned long long)k->rec_line);
        else if (k->state == S_UNQUOTED || k->state == S_QUOTE || k->state == S_AFTER_QUOTE ||
                 (k->state == S_START && k->fields > 0))
            rc = emit(k, 1, err);
    }
    if (rc) k->failed = rc;
    return rc;
}
