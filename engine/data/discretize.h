/* engine/data/discretize.h - a finite domain for every column, from the
 * schema alone (the marginal methods mst and aim work on codes).
 *
 * Attributes, in order: every table column (the label column included, at
 * its own position), or, for untyped vectors, every coordinate as a
 * continuous column over the dataset's declared range [lo, hi] and then the
 * class when the rows are labelled.
 *   categorical (k)     codes 0 .. k-1, the category index
 *   boolean             codes 0 (false), 1 (true)
 *   integer             one code per value when max - min + 1 <= bins; else
 *                       bins of consecutive integers (edges on the integer grid)
 *   continuous          `bins` intervals between min and max
 *   nullable            one more code, the last, for "missing"
 * Numeric bins are equal in x, or equal in log(1 + x - min) when the column
 * declares "scale": "log" (heavy tails; the shift makes any range valid).
 * Integer log bins that would hold no integer are merged, so a column may get
 * fewer than `bins` codes. Nothing here reads a row: edges come from the
 * declared bounds only.
 *
 * Encoding reads a table-layout row (pg_table_decode_value, clamped) plus its
 * class, and writes one code per attribute. Decoding writes a row that is
 * valid for the schema: a category or boolean as coded, a number drawn
 * uniformly inside its bin (integers uniformly among the bin's integers)
 * with the caller's (seeded) generator, inside [min, max]; the label's code
 * becomes the class. Encode(decode(c)) == c for every code vector.
 *
 * Ownership: pg_disc_build allocates; pg_disc_free releases (zeroed or
 * freed is fine). Errors: PG_EINVAL for bins outside [2, PG_DISC_MAX_BINS]
 * or a mismatch between the table and d.
 */
#ifndef PG_DATA_DISCRETIZE_H
#define PG_DATA_DISCRETIZE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/data/table.h"

#define PG_DISC_MAX_BINS 1024

enum pg_disc_kind { PG_DISC_CAT = 1, PG_DISC_BOOL, PG_DISC_INT, PG_DISC_REAL, PG_DISC_LABEL };

typedef struct pg_disc_attr {
    int kind;      /* enum pg_disc_kind */
    size_t col;    /* table column, or coordinate of an untyped row */
    size_t levels; /* number of codes, missing included */
    size_t nvalue; /* codes that are values (levels - nullable) */
    int nullable;  /* last code is "missing" */
    double *edges; /* PG_DISC_INT / _REAL: nvalue + 1 edges; integer bins are
                      [edges[k], edges[k+1]) on the integers */
} pg_disc_attr;

typedef struct pg_disc {
    size_t nattr;
    pg_disc_attr *a;
    size_t label; /* attribute of the label column, or PG_TABLE_NONE */
    size_t d;     /* width of an encoded row */
    float lo, hi; /* untyped: the declared range */
    int typed;
} pg_disc;

/* t may be NULL (untyped rows of width d over [lo, hi], plus a label
 * attribute last when classes > 0; ignored for typed tables). bins >= 2. */
int pg_disc_build(const pg_table *t, size_t d, float lo, float hi, int classes, int bins,
                  pg_disc *out, pg_error *err);
void pg_disc_free(pg_disc *D);

/* Product of the level counts of the attributes in `attrs` (saturates at
 * SIZE_MAX). */
size_t pg_disc_cells(const pg_disc *D, const size_t *attrs, size_t k);

/* One row -> nattr codes. class_ is the row's class (ignored without a label). */
void pg_disc_encode(const pg_disc *D, const pg_table *t, const float *row, int class_,
                    uint32_t *codes);
/* nattr codes -> one row of width d (and the class when there is a label; class_
 * may be NULL). */
void pg_disc_decode(const pg_disc *D, const pg_table *t, const uint32_t *codes, pg_rng *rng,
                    float *row, int32_t *class_);

/* The code of a number in attribute a (a value code, never missing). */
uint32_t pg_disc_bin(const pg_disc_attr *a, double x);

#endif
