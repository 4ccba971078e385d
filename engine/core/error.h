/* engine/core/error.h - status codes and error messages shared by every module.
 *
 * Contract: a fallible function returns an int status (PG_OK == 0 on success)
 * and, when it fails and `err` is not NULL, fills err->msg with one sentence a
 * user can act on. Outputs are left untouched or freed on failure: a caller
 * never has to clean up after a failed call. Nothing here is global.
 */
#ifndef PG_CORE_ERROR_H
#define PG_CORE_ERROR_H

#include <stddef.h>

enum pg_status {
    PG_OK = 0,
    PG_EINVAL,     /* invalid argument or spec (user error) */
    PG_ENOMEM,     /* allocation failed or a size limit would be exceeded */
    PG_EIO,        /* operating-system I/O error */
    PG_EFORMAT,    /* malformed, truncated or corrupt input bytes */
    PG_ERANGE,     /* value outside its allowed range, or arithmetic overflow */
    PG_ENUMERIC,   /* numerical failure: NaN/Inf produced, no convergence */
    PG_ENOTSUP,    /* valid but unsupported request */
    PG_ESTATE,     /* operation not allowed in the current state */
    PG_EPRIVACY,   /* would exceed a privacy budget or violate a DP requirement */
    PG_ECANCELLED, /* stopped on request */
    PG_EUNAVAIL,   /* a backend (database server) is unreachable: retry later */
};

#define PG_ERROR_MSG_MAX 256

typedef struct pg_error {
    int code;
    char msg[PG_ERROR_MSG_MAX];
} pg_error;

/* Records `code` and a printf-style message in err (if not NULL); returns code
 * so a failing path can be written `return pg_error_set(err, PG_EINVAL, ...)`. */
int pg_error_set(pg_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes the existing message with context ("reading X.npy: ..."). Returns
 * nothing on purpose: `return pg_error_wrap(...)` once returned PG_OK when err
 * was NULL and swallowed the failure (found by fuzz_idx); keep the code in a
 * variable and return that. */
void pg_error_wrap(pg_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Stable lower-case name of a status ("invalid argument", ...). */
const char *pg_status_str(int code);

/* Overflow-checked size arithmetic: return 0 on success, nonzero on overflow. */
static inline int pg_size_mul(size_t a, size_t b, size_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}
static inline int pg_size_add(size_t a, size_t b, size_t *out)
{
    return __builtin_add_overflow(a, b, out);
}

#endif
