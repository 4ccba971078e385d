/* render/samples_typed.h - decoded samples of a typed job (docs/tables.md).
 *
 * Rows follow engine/methods/draw.h (pg_draw_table_rows), the rule quality
 * reports share, so the same (snapshot, seed, label, n) gives the same
 * records whether the body is built whole or streamed, and a report's rows
 * are /samples?seed=S's. The label column: with label >= 0 every row has
 * that class; a model that draws classes with its rows (mst, aim) gives
 * them; otherwise, when the model is conditional, row i of a block has
 * class i mod C (balanced, as the models' own "uniform over classes" draw
 * is); an unconditional model of a labelled table produces no label column
 * (pg_typed_samples_table).
 *
 * Formats: CSV with a header (category names, integers, true/false, empty
 * for missing), JSON (one array of records) and NDJSON, through
 * pg_records_write (numbers: the shortest text that reads back as the same
 * float32 unit, engine/core/fmt.h), decoded with clamping to the schema's
 * bounds. A stream's memory is one block of rows and its text, whatever n.
 *
 * Ownership: a stream retains its snapshot and keeps its own table copy.
 */
#ifndef PG_RENDER_SAMPLES_TYPED_H
#define PG_RENDER_SAMPLES_TYPED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/core/error.h"
#include "engine/data/table.h"
#include "engine/methods/method.h"

/* The table a snapshot's rows decode with: t itself (a new copy), or t
 * without its label column when the snapshot is unconditional. */
int pg_typed_samples_table(const pg_table *t, const pg_snapshot *snap, pg_table **out,
                           pg_error *err);

/* Draws n rows (x: n * width) and, when out_t has a label column, their
 * classes (labels: n) by the rule above; each block under the CPU budget
 * cpu with at most cap cores (NULL: none; see pg_cpu_scope_begin). */
int pg_typed_samples_draw(const pg_table *out_t, const pg_snapshot *snap, size_t n, uint64_t seed,
                          int label, float *x, int64_t *labels, pg_cpu_budget *cpu, int cap,
                          pg_error *err);

typedef struct pg_typed_samples pg_typed_samples;

/* format: PG_RECORDS_CSV, _JSON or _NDJSON (engine/data/records.h). */
int pg_typed_samples_open(const pg_table *t, pg_snapshot *snap, int format, size_t n, uint64_t seed,
                          int label, pg_cpu_budget *cpu, int cap, pg_typed_samples **out,
                          pg_error *err);
/* Next body bytes (at most cap >= 1): the count, 0 at the end, -1 on error. */
ssize_t pg_typed_samples_read(pg_typed_samples *st, char *buf, size_t cap, pg_error *err);
/* The whole body (malloc'ed into *out): for small n. */
int pg_typed_samples_body(pg_typed_samples *st, char **out, size_t *len, pg_error *err);
void pg_typed_samples_free(pg_typed_samples *st);

#endif
