/* engine/eval/table_cols.h - a typed table's rows as the report's columns
 * (report.h): one column per schema column, in schema order, instead of one
 * per encoded unit.
 *
 *   continuous, integer  numeric, the decoded value in the column's units
 *                        (NaN when missing)
 *   categorical (k)      categorical, codes 0..k-1 named by the schema;
 *                        a nullable column gets code k "(missing)"
 *   boolean              categorical, 0 "false", 1 "true" (+ 2 "(missing)")
 *   the label column     categorical, the rows' class (only with_label)
 *
 * Decoding follows table.h (pg_table_decode_value; clamp as asked).
 * Ownership: pg_eval_table_columns allocates *cols (and the name arrays it
 * points to; the names themselves are the table's, so t must outlive them);
 * release with pg_eval_table_columns_free. Errors: PG_ENOMEM.
 */
#ifndef PG_EVAL_TABLE_COLS_H
#define PG_EVAL_TABLE_COLS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/data/table.h"
#include "engine/eval/report.h"

#define PG_EVAL_MISSING_NAME "(missing)"

/* with_label: include t's label column (when it has one). */
int pg_eval_table_columns(const pg_table *t, int with_label, pg_eval_column **cols, size_t *d,
                          pg_error *err);
void pg_eval_table_columns_free(pg_eval_column *cols, size_t d);

/* n encoded rows x (n * t->width) and their classes (labels, needed when
 * with_label and t has a label column) as n x d decoded columns into out. */
void pg_eval_table_decode(const pg_table *t, int with_label, const float *x, const int32_t *labels,
                          size_t n, int clamp, float *out);

#endif
