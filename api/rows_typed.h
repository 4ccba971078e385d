/* api/rows_typed.h - POST /v1/datasets/{id}/rows for typed datasets.
 *
 * CSV with a header row (text/csv), JSON records (application/json: an array
 * of objects) and NDJSON (application/x-ndjson) are streamed through the
 * records parser (engine/data/records.h) into the storage appender as they
 * arrive: memory holds one block of encoded rows and the labels (4 bytes a
 * row), whatever the body size; --max-rows bounds it, not --max-body. Values
 * out of the schema's bounds are refused on central and public data, and
 * kept on local (privatized, noisy) data. Any error is a 422 naming the row
 * (1-based, as in the message) and the column, and nothing is stored.
 * Encoded float uploads (NPY, raw, IDX, JSON {"rows": ...}) are refused
 * with 415: rows go in by column name, so the server checks every value.
 * A Privgen-Declaration header ties a local typed dataset's rows to its
 * per-column declaration (service/typed.h), as for untyped local data.
 */
#ifndef PG_API_ROWS_TYPED_H
#define PG_API_ROWS_TYPED_H

#include <stdint.h>

#include "api/internal.h"
#include "service/datasets/spec.h"

/* Takes over r->stream for a typed dataset (meta: its stored JSON). */
void pg_rows_typed_begin(pg_req *r, const char *meta, const pg_datasets_spec *spec,
                         int64_t n_before);
/* 1 when r's upload is a typed one (begun above). */
int pg_rows_typed_active(const pg_req *r);
/* The end of the body: completes the parse and commits, or refuses. */
void pg_rows_typed_append(pg_req *r);

/* Commits an open appender (*app, always ended: set to NULL) and answers:
 * 200 {dataset_id, rows_added, n, declaration: "matched" | "not checked"
 * (local rows sent without a declaration) | "not applicable"}, 413 past
 * --max-rows, 404 for a dataset deleted meanwhile, or the storage error.
 * Shared by the untyped (h_rows.c) and typed uploads. */
void pg_rows_commit(pg_req *r, pg_db_append **app, const int32_t *labels, int declared, int local);

/* problem+json 422 with one errors[] entry per declaration difference
 * (shared with the untyped path in h_rows.c). */
void pg_rows_decl_mismatch(pg_req *r, const pg_datasets_diff *d, int n);

#endif
