/* text - a growable string and the API's timestamp spelling (text.h). */
#include "service/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void pg_text_printf(pg_text *t, const char *fmt, ...)
{
    if (t->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            t->failed = 1;
            return;
        }
        if (t->p && t->len + (size_t)k < t->cap) {
            t->len += (size_t)k;
            return;
        }
        /* Grow to fit this piece and double, so n appends cost O(total). */
        size_t cap = t->cap ? t->cap : 1024;
        while (cap <= t->len + (size_t)k) cap *= 2;
        char *np = realloc(t->p, cap);
        if (!np) {
            t->failed = 1;
            return;
        }
        t->p = np;
        t->cap = cap;
    }
}

json_t *pg_text_time(int64_t t)
{
    if (t <= 0) return json_null();
    char buf[32];
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm)) return json_null();
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_string(buf);
}
