/* engine/core/fmt.h - shortest round-trip decimal text of float32 values.
 *
 * pg_fmt_f32 writes the decimal with the fewest significant digits that reads
 * back (strtof, round-half-even) to exactly the same float; among candidates
 * of that length it picks the one nearest the float's exact value (ties to
 * an even last digit). Plain notation for decimal exponents -5..8
 * ("0.00012", "123456.8", "100000000"), otherwise scientific ("1e-7",
 * "3.4028235e38"). Zero prints "0" or "-0"; non-finite values print "NaN",
 * "Infinity" or "-Infinity" (JSON writers map them to null themselves).
 *
 * Pure: no I/O, no locale, no allocation, no global state. Integer-exact
 * (see fmt.c): correct for every one of the 2^32 bit patterns, which
 * `privgen-bench fmt --exhaustive` checks.
 */
#ifndef PG_CORE_FMT_H
#define PG_CORE_FMT_H

#include <stddef.h>

/* The longest output is 16 chars ("-0.000012345678"); pg_fmt_f32 may use
 * bytes past the NUL as scratch, up to PG_FMT_F32_MAX from out. */
#define PG_FMT_F32_MAX 32

/* Writes the text and a NUL into out, which must have PG_FMT_F32_MAX bytes
 * (a writer appending values to a buffer needs that much room at the
 * position of each value); returns the length without the NUL. */
size_t pg_fmt_f32(float v, char *out);

/* n values separated by sep (none before the first or after the last), each
 * exactly as pg_fmt_f32 prints it, except that non-finite values print
 * "null" when json_null is nonzero; then a NUL. Faster than a loop over
 * pg_fmt_f32 (see fmt.c). out needs n * 17 + PG_FMT_F32_MAX bytes. Returns
 * the length without the NUL. */
size_t pg_fmt_f32_join(const float *x, size_t n, char sep, int json_null, char *out);

/* The shortest digits alone: *digits (no trailing zeros, 0 for a zero) and
 * the decimal exponent so that |v| reads back from digits * 10^exp10.
 * Returns 0, or -1 for a non-finite v. */
int pg_fmt_f32_decimal(float v, unsigned *digits, int *exp10);

/* A double for people (error messages, declarations): the shortest "%.Ng"
 * (N = 1..17) that strtod reads back to exactly v, so 0.1 prints "0.1" and
 * not "0.10000000000000001", while two different values never print alike;
 * numbers of magnitude 1 to 10^17 print without an exponent ("100", not
 * "1e+02").
 * Not for hot paths (it may call snprintf and strtod 17 times). Writes at
 * most PG_FMT_F64_MAX bytes with the NUL and returns out. */
#define PG_FMT_F64_MAX 32
const char *pg_fmt_f64(double v, char out[PG_FMT_F64_MAX]);

#endif
