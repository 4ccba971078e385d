/* engine/data/records.h - typed records in and out (CSV, JSON, NDJSON).
 *
 * Rows in: a push parser fed with byte chunks of any size (the input never
 * has to sit in memory whole; the parser holds one field and one encoded row)
 * turns records into rows encoded by a pg_table (table.h) and hands each to
 * a sink together with its label class (-1 without a label column). Feeding
 * the same bytes split at any positions gives the same rows and errors.
 *   CSV     RFC 4180 with a header row naming the columns (any order; every
 *           schema column exactly once, no other column). Fields may be
 *           double-quoted ("" escapes a quote; quoted fields may span lines);
 *           lines end in \n or \r\n; spaces around fields are trimmed; an
 *           optional UTF-8 BOM; empty lines only at the end. Missing value:
 *           an unquoted field that is empty, NA, null or NULL (quoted text is
 *           never missing, so a category named "NA" is written quoted).
 *           Booleans: true/false/yes/no/1/0 in any case. Numbers: decimal
 *           (no hex, nan or inf).
 *   JSON    one array of flat objects: [{"age": 41, "job": "fixed"}, ...].
 *   NDJSON  one such object per line.
 *           JSON values must have the column's type: numbers for numeric
 *           columns, strings for categories, true/false for booleans, null
 *           for missing; every column present exactly once, no other key.
 * Errors stop the parse for good (later calls return the same code) and name
 * the 1-based data row and the column: "row 3, column 'age': 17 is outside
 * [18, 99]" (CSV adds the line). Codes: PG_EFORMAT for broken syntax or
 * structure (unclosed quote, wrong field count, bad header, truncated JSON),
 * PG_EINVAL for a value the schema refuses (unknown category, non-integer in
 * an integer column, null in a non-nullable column, wrong JSON type),
 * PG_ERANGE for a number out of bounds (only under PG_TABLE_BOUNDS_REFUSE),
 * PG_ENOMEM for a limit (max_rows, max_field). pg_records_error_at gives
 * the row and column for structured error reports.
 *
 * Rows out: decoded records (table.h decoding) as CSV with a header and
 * category names, JSON records or NDJSON, written through a callback.
 *
 * Ownership: the parser copies what it needs from the table pointer it was
 * given, except the table itself, which must outlive the parser.
 */
#ifndef PG_DATA_RECORDS_H
#define PG_DATA_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/data/table.h"

#define PG_RECORDS_FIELD_MAX 65536 /* default limit of one field or JSON token, bytes */

enum pg_records_format { PG_RECORDS_CSV = 1, PG_RECORDS_JSON = 2, PG_RECORDS_NDJSON = 3 };

/* "csv", "json", "ndjson" (also "jsonl"); PG_EINVAL otherwise. */
int pg_records_format_from_name(const char *name, int *format, pg_error *err);

typedef struct pg_records_opts {
    int format;        /* enum pg_records_format */
    int bounds;        /* enum pg_table_bounds */
    uint64_t max_rows; /* 0 = unlimited; one more row is PG_ENOMEM */
    size_t max_field;  /* 0 = PG_RECORDS_FIELD_MAX */
} pg_records_opts;

/* One complete row: `row` holds t->width units (valid during the call only),
 * `label` the class or -1, `rowno` is 1-based. A nonzero return stops the
 * parse with that code (the sink fills err). */
typedef int (*pg_records_sink)(void *ctx, const float *row, int64_t label, uint64_t rowno,
                               pg_error *err);

typedef struct pg_records_parser pg_records_parser;

int pg_records_new(const pg_table *t, const pg_records_opts *o, pg_records_sink sink, void *ctx,
                   pg_records_parser **out, pg_error *err);
int pg_records_feed(pg_records_parser *p, const void *buf, size_t len, pg_error *err);
/* End of input: completes the last record, checks that nothing is cut off. */
int pg_records_finish(pg_records_parser *p, pg_error *err);
uint64_t pg_records_count(const pg_records_parser *p);
/* Row (1-based, 0 when the error is not in a data row, e.g. the header) and
 * column (PG_TABLE_NONE when not about one column) of the error. */
void pg_records_error_at(const pg_records_parser *p, uint64_t *row, size_t *col);
void pg_records_free(pg_records_parser *p);

/* Whole buffer at once: *x (n * width floats) and *labels (n entries, NULL
 * without a label column) are malloc'ed (free()); zeroed on failure. */
int pg_records_parse(const pg_table *t, const pg_records_opts *o, const void *buf, size_t len,
                     float **x, int64_t **labels, size_t *n, pg_error *err);

/* Output sink: returns 0 on success. */
typedef int (*pg_records_write_fn)(void *ctx, const void *buf, size_t len);

/* Decodes n encoded rows (clamp as in pg_table_decode_value) and writes them
 * in `format`. labels: n classes, required when the table has a label column
 * (ignored otherwise). Numbers: integers exactly; continuous as the shortest
 * decimal that encodes back to the same float32 unit (so written records
 * read back to identical rows); missing is an empty CSV field (NA in a
 * one-column table, where an empty line would be blank) or JSON null. A class
 * outside the label's range is PG_EINVAL; a failing write is PG_EIO. */
int pg_records_write(const pg_table *t, int format, const float *x, const int64_t *labels, size_t n,
                     int clamp, pg_records_write_fn w, void *ctx, pg_error *err);

/* ---- the CSV tokenizer underneath (also for schema inference) ----------
 * Calls fn for every field with its unquoted text (not NUL-terminated,
 * valid during the call), whether it was quoted, and whether it ends its
 * record; `line` is the line the record started on. Same syntax rules as
 * above; blank lines at the end are ignored. */
typedef int (*pg_csv_tok_fn)(void *ctx, const char *s, size_t len, int quoted, int end_of_record,
                             uint64_t line, pg_error *err);
typedef struct pg_csv_tok pg_csv_tok;
int pg_csv_tok_new(size_t max_field, pg_csv_tok_fn fn, void *ctx, pg_csv_tok **out, pg_error *err);
int pg_csv_tok_feed(pg_csv_tok *k, const void *buf, size_t len, pg_error *err);
int pg_csv_tok_finish(pg_csv_tok *k, pg_error *err);
void pg_csv_tok_free(pg_csv_tok *k);

#endif
