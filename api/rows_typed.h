/* api/rows_typed.h - a typed dataset's rows for POST /v1/datasets/{id}/rows.
 *
 * h_rows.c owns the route and the upload (service/datasets/datasets.h): it
 * opens it, checks the Privgen-Declaration header and commits; this part
 * parses the body. CSV with a header row (text/csv), JSON records
 * (application/json: an array of objects) and NDJSON (application/x-ndjson)
 * are streamed through the records parser (engine/data/records.h) into the
 * upload as they arrive: memory holds one block of encoded rows and the
 * labels (4 bytes a row), whatever the body size; --max-rows bounds it, not
 * --max-body. Values out of the schema's bounds are refused on central and
 * public data, and kept on local (privatized, noisy) data. Any error is a
 * 422 naming the row (1-based, as in the message) and the column, and
 * nothing is stored. Encoded float uploads (NPY, raw, IDX, JSON {"rows":
 * ...}) are refused with 415: rows go in by column name, so the server
 * checks every value.
 *
 * Each function that fails has queued the response on r.
 */
#ifndef PG_API_ROWS_TYPED_H
#define PG_API_ROWS_TYPED_H

#include <stdint.h>

#include "api/internal.h"
#include "service/datasets/datasets.h"

typedef struct pg_rows_typed pg_rows_typed;

/* Starts the parse of a body of media type `type` (lower case, without
 * parameters) into u, a typed dataset's upload, and begins u. NULL after
 * queuing the refusal (415 for a media type, 413 when the dataset is full). */
pg_rows_typed *pg_rows_typed_begin(pg_req *r, pg_datasets_upload *u, const char *type);
/* Body bytes as they arrive: 0, or -1 after queuing the refusal. */
int pg_rows_typed_feed(pg_req *r, pg_rows_typed *t, const char *data, size_t len);
/* The end of the body: 0 with every row written to u and *labels (one per
 * row, NULL: none; t owns them) ready for the commit, or -1. */
int pg_rows_typed_finish(pg_req *r, pg_rows_typed *t, const int32_t **labels);
void pg_rows_typed_free(pg_rows_typed *t);

#endif
