/* service/typed.h - typed-table datasets (docs/tables.md) in the service.
 *
 * A typed dataset's meta JSON (service/datasets/spec.h) is the usual one with
 * shape [encoded width], range and num_classes taken from the schema, plus
 * the schema's "columns" (the normalized column list of pg_table_to_json)
 * and "label" (a column name, absent without one), and its "encoding"
 * ({width, range, blocks} of the map, what the dataset view shows: stored
 * so a read never parses the schema; older metas lack it). No new storage: the
 * schema lives in the meta. A local typed dataset's "privacy" object is the
 * per-column declaration `privgen privatize --schema` prints, without its
 * "rows" (table_ldp.h), so pg_ldp_check_declaration reads it as it is.
 *
 * Ownership: functions returning a pg_table or pg_ldp_plan allocate it (free
 * with pg_table_free / pg_typed_ldp_free); nothing keeps its arguments.
 * Errors name a JSON path in `field` (PG_FIELD_MAX bytes) where one applies.
 */
#ifndef PG_SVC_TYPED_H
#define PG_SVC_TYPED_H

#include <jansson.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/data/table.h"
#include "engine/data/table_ldp.h"
#include "service/datasets/spec.h"

/* The schema part of a POST /v1/datasets body ({columns, label, range}) as a
 * table; fills s's typed geometry (typed, ndim, shape, d, lo, hi,
 * num_classes). PG_EINVAL with field "columns", "label" or "range";
 * PG_ERANGE (field "columns") when names and categories exceed
 * PG_TABLE_MAX_TEXT. */
int pg_typed_schema(const json_t *body, pg_datasets_spec *s, pg_table **t, char field[PG_FIELD_MAX],
                    pg_error *err);

/* Checks a local typed dataset's per-column declaration against the table
 * (pg_ldp_check_declaration) and fills s (model local, per_column, epsilon,
 * delta). PG_EINVAL or PG_EPRIVACY with its field ("privacy.columns[2].k"). */
int pg_typed_declaration(const pg_table *t, const json_t *decl, pg_datasets_spec *s,
                         char field[PG_FIELD_MAX], pg_error *err);

/* The meta JSON of a typed dataset (malloc'ed text): s's normalized JSON with
 * the columns, the label and, for local data, the declaration (decl). */
int pg_typed_meta(const pg_datasets_spec *s, const pg_table *t, const json_t *decl, char **out,
                  pg_error *err);

/* The table of a stored dataset; *t = NULL for an untyped one. */
int pg_typed_table_from_meta(const char *meta, pg_table **t, pg_error *err);

/* The per-column plan of a local typed dataset, rebuilt from its stored
 * (checked) declaration with the declared keep probabilities and noise
 * scales, i.e. the channel the rows really went through; *plan = NULL when
 * the dataset is not local typed. */
int pg_typed_ldp_from_meta(const char *meta, const pg_table *t, pg_ldp_plan **plan, pg_error *err);
void pg_typed_ldp_free(pg_ldp_plan *plan);

/* An upload's declaration (the Privgen-Declaration header) against a local
 * typed dataset's: it must pass pg_ldp_check_declaration and state the same
 * columns (mechanism, epsilon, delta, k, keep probability, sensitivity,
 * noise scale, missing; numbers equal up to 1e-12 relative). Returns
 * PG_EINVAL with field for a malformed one, else PG_OK with the differences
 * in diffs (*ndiff = 0: it matches) and the declared row count in *rows
 * (0: none stated). */
int pg_typed_decl_match(const char *meta, const pg_table *t, const char *decl,
                        pg_datasets_diff diffs[PG_DATASETS_DIFF_MAX], int *ndiff, uint64_t *rows,
                        char field[PG_FIELD_MAX], pg_error *err);

/* A class index from a label value as a request gives it: a category name
 * of the label column (or true/false for a boolean label), or a decimal
 * index. -1 when it names no class. */
int64_t pg_typed_label_index(const pg_table *t, const char *value);

#endif
