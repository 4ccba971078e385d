/* service/datasets/datasets.h - datasets: declare, view, list, delete, and
 * append rows (all or nothing). The contract of service/datasets/.
 *
 * The api's only way to a dataset's storage: a handler parses the request
 * into the types below, calls one function here and answers from what it
 * returns; the storage calls (pg_db_dataset_*, pg_db_append_*), the stored
 * metadata and the order of the checks live here. The declaration itself
 * (pg_datasets_spec, its checks and JSON form) is spec.h, which jobs and
 * reports read without the rest.
 *
 * Names: pg_datasets_* is the service's dataset (this folder); the
 * engine's in-memory rows are pg_dataset (engine/data/dataset.h); storage
 * keeps pg_db_dataset_* (service/store/db.h).
 *
 * Ownership: views (json_t) are the caller's (json_decref). An upload is
 * the caller's until pg_datasets_upload_free, which aborts whatever it has
 * not committed; commit ends its appender whatever the outcome.
 *
 * Errors: PG_OK, or a code with err filled (outputs untouched):
 *   PG_EINVAL, PG_EPRIVACY  the client's declaration or rows are refused:
 *                           `field` or *bad_row (where a function takes
 *                           one) names what; "" or UINT64_MAX: not the
 *                           client's fault.
 *   PG_ERANGE               the rows would exceed max_rows (nothing stored).
 *   PG_ESTATE               an upload's steps out of order (a caller's bug).
 *   PG_EUNAVAIL             the database is unreachable: retry later.
 *   PG_ENOMEM               a memory or size limit the client can act on.
 *   anything else           the server's own failure (a stored dataset
 *                           that cannot be read back is one).
 * A missing dataset is not an error: *found = 0.
 */
#ifndef PG_SVC_DATASETS_H
#define PG_SVC_DATASETS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/data/table.h"
#include "service/datasets/spec.h"
#include "service/store/db.h"

/* ---- declare, view, list, delete -------------------------------------- */

/* Checks s (pg_datasets_spec_check with max_dim), encodes its metadata
 * (typed datasets: with table t and, for local data, the per-column
 * declaration decl; both NULL for an untyped dataset), stores it under a
 * fresh id in tenant and returns its view (*view; "id" names it). */
int pg_datasets_create(pg_db *db, const char *tenant, pg_datasets_spec *s, size_t max_dim,
                       const pg_table *t, const json_t *decl, json_t **view,
                       char field[PG_FIELD_MAX], pg_error *err);

/* The public view of a dataset: its declaration, counts and privacy
 * report, never rows. */
int pg_datasets_get(pg_db *db, const char *tenant, const char *id, json_t **view, int *found,
                    pg_error *err);

/* Up to `limit` views of tenant's datasets created after cursor `after`,
 * oldest first (*items: an array); *next is the cursor of the next page,
 * 0 when this one is the last. */
int pg_datasets_list(pg_db *db, const char *tenant, int64_t after, size_t limit, json_t **items,
                     int64_t *next, pg_error *err);

/* Deletes the dataset and its rows (its ledger and jobs stay); *conflict
 * = 1 (nothing deleted) while a queued or running job reads it. */
int pg_datasets_delete(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                       pg_error *err);

/* ---- appending rows ---------------------------------------------------- */

/* open -> [declare] -> [count] -> begin -> write ... -> commit, and free.
 * Nothing is visible to readers before commit returns PG_OK; a failed
 * step, or free before commit, leaves the dataset as it was. */
typedef struct pg_datasets_upload pg_datasets_upload;

/* Reads dataset id of tenant for an upload bounded by max_rows (the
 * dataset's total). *found = 0 (*out NULL): no such dataset. Holds no
 * connection and no appender. */
int pg_datasets_upload_open(pg_db *db, const char *tenant, const char *id, size_t max_rows,
                            pg_datasets_upload **out, int *found, pg_error *err);
const pg_datasets_spec *pg_datasets_upload_spec(const pg_datasets_upload *u);
/* A typed dataset's table (rows go in by column name), NULL otherwise. */
const pg_table *pg_datasets_upload_table(const pg_datasets_upload *u);
/* The dataset's row count when it was opened. */
int64_t pg_datasets_upload_rows_before(const pg_datasets_upload *u);

/* Compares the declaration sent with the rows (Privgen-Declaration: the
 * JSON `privgen privatize` writes) with the dataset's. PG_EINVAL with
 * field: malformed. Else *ndiff differences in diffs; none: the rows count
 * as declared and their count is held to the one it states. */
int pg_datasets_upload_declare(pg_datasets_upload *u, const char *decl,
                               pg_datasets_diff diffs[PG_DATASETS_DIFF_MAX], int *ndiff,
                               char field[PG_FIELD_MAX], pg_error *err);

/* An upload of `rows` rows, known before they are stored: PG_EINVAL (field
 * "declaration.rows") when it differs from the declared count, PG_ERANGE
 * when the dataset would exceed max_rows. */
int pg_datasets_upload_count(const pg_datasets_upload *u, uint64_t rows, char field[PG_FIELD_MAX],
                             pg_error *err);

/* Opens the storage appender for rows of the dataset's width. */
int pg_datasets_upload_begin(pg_datasets_upload *u, pg_error *err);

/* Appends values, split across calls in any way. Untyped datasets check
 * them first (pg_datasets_check_values): a refused value is PG_EINVAL with
 * *bad_row its 0-based row (otherwise UINT64_MAX) and nothing written. A
 * typed dataset's encoded rows were checked by the records parser. */
int pg_datasets_upload_write(pg_datasets_upload *u, const float *x, size_t count, uint64_t *bad_row,
                             pg_error *err);

/* What a commit stored. `declaration` is "matched" (a matching declaration
 * came with the rows), "not checked" (local rows sent without one) or
 * "not applicable" (central or public data). */
typedef struct pg_datasets_appended {
    int64_t rows, n; /* rows added, the dataset's count after them */
    const char *declaration;
} pg_datasets_appended;

/* Stores labels (one per row, or NULL) with the written rows and makes
 * them visible, durably, in one transaction: PG_ERANGE past max_rows,
 * *found = 0 when the dataset was deleted meanwhile (nothing stored). */
int pg_datasets_upload_commit(pg_datasets_upload *u, const int32_t *labels, int *found,
                              pg_datasets_appended *out, pg_error *err);

/* Ends the appender now, storing nothing: a refused upload gives back its
 * spooled values before the rest of its body arrives. u stays to free. */
void pg_datasets_upload_abort(pg_datasets_upload *u);

/* Aborts what was not committed and frees u (NULL: nothing). */
void pg_datasets_upload_free(pg_datasets_upload *u);

#endif
