#include "engine/core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int pg_error_set(pg_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

void pg_error_wrap(pg_error *err, const char *fmt, ...)
{
    if (!err) return;
    char prefix[PG_ERROR_MSG_MAX], old[PG_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* Truncation is acceptable: the message is for humans and stays bounded. */
    size_t n = strnlen(prefix, sizeof prefix - 1);
    memcpy(err->msg, prefix, n);
    size_t pos = n;
    if (pos + 2 < sizeof err->msg) err->msg[pos++] = ':', err->msg[pos++] = ' ';
    size_t rest = sizeof err->msg - 1 - pos;
    size_t m = strnlen(old, rest);
    memcpy(err->msg + pos, old, m);
    err->msg[pos + m] = '\0';
}

const char *pg_status_str(int code)
{
    switch (code) {
    case PG_OK:
        return "ok";
    case PG_EINVAL:
        return "invalid argument";
    case PG_ENOMEM:
        return "out of memory";
    case PG_EIO:
        return "i/o error";
    case PG_EFORMAT:
        return "malformed input";
    case PG_ERANGE:
        return "out of range";
    case PG_ENUMERIC:
        return "numerical failure";
    case PG_ENOTSUP:
        return "not supported";
    case PG_ESTATE:
        return "invalid state";
    case PG_EPRIVACY:
        return "privacy budget";
    case PG_ECANCELLED:
        return "cancelled";
    case PG_EUNAVAIL:
        return "backend unavailable, retry";
    default:
        return "unknown error";
    }
}
