/* engine/data/table.h - typed table schemas and their row encoding.
 *
 * A schema is public metadata declared by the data owner: named columns of
 * type continuous {min, max}, integer {min, max}, categorical {categories},
 * boolean, each optionally nullable, and at most one label column. Nothing
 * here ever derives bounds or categories from rows.
 *
 * Schema JSON (pg_table_from_json):
 *   {"columns": [{"name": "age", "type": "integer", "min": 18, "max": 99,
 *                 "nullable": true, "epsilon": 0.5}, ...],
 *    "label": "status",             optional: a categorical or boolean column
 *    "range": [-1, 1]}              optional: the model's value range
 * "epsilon" (> 0, optional) is a per-column local-DP budget used only by
 * table_ldp.h. "scale" (numeric columns, optional): "linear" (default) or
 * "log", a hint for heavy-tailed columns that only binning uses
 * (engine/data/discretize.h); it never changes the encoding. pg_table_to_json adds "version",
 * "width" and "blocks"; the parser accepts that form too and refuses it when width or blocks
 * disagree with the layout the columns imply (a corrupt or foreign map). Unknown keys are refused.
 * Limits: PG_TABLE_MAX_COLS columns, names of 1 .. PG_TABLE_NAME_MAX bytes without control
 * characters, unique per schema; 2 .. PG_TABLE_MAX_CATS categories per column, unique, of 0 ..
 * PG_TABLE_NAME_MAX bytes (any text but NUL),
 * finite min < max with a finite span, integer bounds integral with max - min <= 2^22 (so every
 * integer survives float32 encoding exactly), range lo <= 0 and hi >= 1.
 * Every error names the column ("column 'age': ...").
 *
 * Encoding of one row (units in column order, label column excluded):
 *   continuous, integer   1 unit, affine [min, max] -> [lo, hi]
 *   categorical (k)       k units, one-hot: 1 for the category, 0 elsewhere
 *   boolean               1 unit: 0 false, 1 true
 *   nullable              + 1 indicator unit after the value units: 0 present,
 *                         1 missing; when missing every value unit holds 0.
 * The label column has no units: rows carry its class (category index, or
 * 0/1 for a boolean) next to the encoded row.
 * Decoding: numeric units are inverse-mapped (clamped to [min, max] when asked),
 * integers rounded to nearest; a categorical block by its largest unit (first
 * on ties); a boolean by unit > 0.5; missing when the indicator is > 0.5.
 * Round trips are exact for integers, categories, booleans and nulls.
 *
 * Bounds used for clipping and sensitivity (M = max(-lo, hi) >= 1; all of
 * them follow from the schema alone and are attained by some pair of rows):
 *   per column           max |u|_1  max |u|_2^2   max |u-u'|_1   max |u-u'|_2^2
 *   numeric              M          M^2           hi-lo          (hi-lo)^2
 *   numeric nullable     M          M^2           max(hi-lo,M+1) max((hi-lo)^2,M^2+1)
 *   boolean              1          1             1              1
 *   boolean nullable     1          1             2              2
 *   categorical (any)    1          1             2              2
 * The row bounds are the sums over columns (l1) or the square roots of the
 * sums of squares (l2): pg_table_norm_bound (the norm of one row: the
 * add/remove-one sensitivity of a sum of rows, so clipping at this radius
 * never changes a valid row) and pg_table_diameter (the distance between two
 * rows: replace-one adjacency and local DP). For the default range [-1, 1]
 * the l2 norm bound is sqrt(number of encoded columns). They hold for rows
 * encoded under PG_TABLE_BOUNDS_REFUSE or _CLAMP; _ALLOW (noisy local data)
 * can exceed them, which is why central data must be encoded with REFUSE.
 *
 * Ownership: pg_table_from_json allocates the table; pg_table_free releases it
 * (NULL is fine). Functions never keep pointers to their arguments.
 */
#ifndef PG_DATA_TABLE_H
#define PG_DATA_TABLE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"

#define PG_TABLE_MAX_COLS    1024
#define PG_TABLE_MAX_CATS    4096
#define PG_TABLE_NAME_MAX    128
#define PG_TABLE_MAX_WIDTH   ((size_t)1 << 20)
#define PG_TABLE_INT_SPAN    4194304.0 /* 2^22 */
#define PG_TABLE_NONE        ((size_t)-1)
#define PG_TABLE_MAP_VERSION 1

enum pg_table_type {
    PG_COL_CONTINUOUS = 1,
    PG_COL_INTEGER = 2,
    PG_COL_CATEGORICAL = 3,
    PG_COL_BOOLEAN = 4,
};

typedef struct pg_table_col {
    char *name;
    int type; /* enum pg_table_type */
    int nullable;
    double min, max; /* continuous, integer */
    size_t ncat;     /* categorical */
    char **cats;
    double epsilon;       /* optional local budget, 0 when not given */
    int log_scale;        /* "scale": "log" (numeric): a hint that the column is
                             heavy-tailed; discretize.h bins it in log(1 + x - min) */
    size_t offset, width; /* encoded block; width 0 for the label column */
} pg_table_col;

typedef struct pg_table {
    size_t ncols;
    pg_table_col *cols;
    size_t label;  /* column index, or PG_TABLE_NONE */
    size_t width;  /* encoded row width (>= 1) */
    double lo, hi; /* model range */
} pg_table;

/* One decoded cell. `num` for continuous/integer, `cat` for categorical
 * (index) and boolean (0/1). */
typedef struct pg_table_value {
    int missing;
    double num;
    size_t cat;
} pg_table_value;

int pg_table_from_json(const json_t *schema, pg_table **out, pg_error *err);
/* The map: schema plus version, width and blocks [{column, offset, width,
 * kind: "numeric" | "one_hot" | "binary", missing_unit: index or null}].
 * New object owned by the caller; NULL on allocation failure. */
json_t *pg_table_to_json(const pg_table *t);
void pg_table_free(pg_table *t);

/* Column index by name (exact bytes), PG_TABLE_NONE when absent. */
size_t pg_table_find(const pg_table *t, const char *name, size_t len);
/* "continuous", "integer", "categorical", "boolean". */
const char *pg_table_type_name(int type);
/* Number of classes of the label column (0 without one). */
size_t pg_table_num_classes(const pg_table *t);

enum pg_table_bounds {
    PG_TABLE_BOUNDS_ALLOW = 0, /* encode out-of-bounds numbers affinely (local data) */
    PG_TABLE_BOUNDS_REFUSE,    /* PG_ERANGE (central data, data about to be privatized) */
    PG_TABLE_BOUNDS_CLAMP,     /* clamp into [min, max] */
};

/* Writes the block of column `col` into row + offset (not the label column).
 * Checks the value against the column: PG_EINVAL for a missing value in a
 * non-nullable column, a non-finite or non-integral number, a category index
 * out of range; PG_ERANGE for a number out of [min, max] under REFUSE. The
 * message names the column but not the row (callers add it). */
int pg_table_encode_value(const pg_table *t, size_t col, const pg_table_value *v, int bounds,
                          float *row, pg_error *err);
/* Reads the block of column `col` from row (not the label column). clamp = 0
 * leaves numbers outside [min, max] as they are (integers are still rounded):
 * noisy local data stays unbiased. */
void pg_table_decode_value(const pg_table *t, size_t col, const float *row, int clamp,
                           pg_table_value *v);

/* Bounds of the table above; PG_TABLE_NONE-free: always finite. */
void pg_table_norm_bound(const pg_table *t, double *l1, double *l2);
void pg_table_diameter(const pg_table *t, double *l1, double *l2);
/* The same for one column's block (0 for the label column). */
void pg_table_col_norm_bound(const pg_table *t, size_t col, double *l1, double *l2);
void pg_table_col_diameter(const pg_table *t, size_t col, double *l1, double *l2);

#endif
