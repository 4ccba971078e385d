/* service/text.h - small text helpers the service's renderers share.
 *
 * pg_text is a growable string for building response bodies (Prometheus
 * text, mostly). pg_text_printf appends; the first allocation failure (or a
 * formatting error) is sticky: later appends do nothing and `failed` stays
 * set, so a renderer checks once at the end. The buffer is malloc'ed and
 * always NUL-terminated once anything was appended; the caller owns `p`
 * (free()), which is NULL when nothing was ever appended.
 *
 * pg_text_time is the one spelling of a timestamp in the API: seconds since
 * the epoch as an RFC 3339 UTC string ("2026-11-25T07:30:00Z"), or JSON null
 * for t <= 0 (never set). NULL only when out of memory.
 */
#ifndef PG_SVC_TEXT_H
#define PG_SVC_TEXT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pg_text {
    char *p;
    size_t len, cap;
    int failed;
} pg_text;

__attribute__((format(printf, 2, 3))) void pg_text_printf(pg_text *t, const char *fmt, ...);

json_t *pg_text_time(int64_t t);

#endif
