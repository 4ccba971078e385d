/* cli/numfmt.c - numbers for people: shortest round trip, rounding, and
 * cleaning long numbers out of server messages. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/human.h"

void pg_num_short(double v, char *buf, size_t cap)
{
    if (isfinite(v) && v == floor(v) && fabs(v) < 9007199254740992.0) { /* 50, not 5e+01 */
        snprintf(buf, cap, "%.0f", v == 0.0 ? 0.0 : v);
        return;
    }
    int p = 1;
    for (; p < 17; p++) {
        snprintf(buf, cap, "%.*g", p, v);
        if (strtod(buf, NULL) == v) break;
    }
    double a = fabs(v);
    if (isfinite(v) && a >= 1e-4 && a < 1e15) /* positional, with just the digits needed */
        snprintf(buf, cap, "%.*f", (int)fmax(0.0, p - 1 - floor(log10(a))), v);
    else
        snprintf(buf, cap, "%.*g", p, v);
}

void pg_num_round(double v, int sig, char *buf, size_t cap)
{
    if (!isfinite(v)) {
        snprintf(buf, cap, "%s", isnan(v) ? "?" : v > 0 ? "inf" : "-inf");
        return;
    }
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.*g", sig, v);
    /* the rounded value, printed without %g's leftover zeros or noise */
    pg_num_short(strtod(tmp, NULL), buf, cap);
}

/* Length of a decimal number starting at s (sign, digits, point, exponent),
 * and how many significant digits its mantissa has; 0 if none. */
static size_t number_at(const char *s, int *digits)
{
    size_t i = 0;
    int d = 0, lead = 1, any = 0;
    if (s[i] == '-' || s[i] == '+') i++;
    for (; isdigit((unsigned char)s[i]) || s[i] == '.'; i++) {
        if (s[i] == '.') continue;
        any = 1;
        if (lead && s[i] == '0') continue;
        lead = 0;
        d++;
    }
    if (!any) return 0;
    if ((s[i] == 'e' || s[i] == 'E') &&
        (isdigit((unsigned char)s[i + 1]) ||
         ((s[i + 1] == '-' || s[i + 1] == '+') && isdigit((unsigned char)s[i + 2])))) {
        i += 2;
        while (isdigit((unsigned char)s[i])) i++;
    }
    *digits = d;
    return i;
}

void pg_num_denoise(const char *in, char *out, size_t cap)
{
    size_t k = 0;
    if (!cap) return;
    for (size_t i = 0; in[i] && k + 1 < cap;) {
        int digits = 0;
        /* a number starts at a digit (or sign before one) not inside a word */
        int start = (isdigit((unsigned char)in[i]) ||
                     ((in[i] == '-' || in[i] == '+') && isdigit((unsigned char)in[i + 1]))) &&
                    (i == 0 ||
                     !(isalnum((unsigned char)in[i - 1]) || in[i - 1] == '_' || in[i - 1] == '.'));
        size_t n = start ? number_at(in + i, &digits) : 0;
        /* integers (ids, seeds) are kept verbatim: they may exceed a double */
        int real = n && strcspn(in + i, ".eE") < n;
        if (real && digits > 15 && !isalpha((unsigned char)in[i + n])) {
            char num[64], sh[64];
            snprintf(num, sizeof num, "%.*s", (int)(n < 63 ? n : 63), in + i);
            pg_num_short(strtod(num, NULL), sh, sizeof sh);
            for (const char *p = sh; *p && k + 1 < cap; p++) out[k++] = *p;
            i += n;
        } else if (n) {
            for (size_t j = 0; j < n && k + 1 < cap; j++) out[k++] = in[i + j];
            i += n;
        } else {
            out[k++] = in[i++];
        }
    }
    out[k] = '\0';
}
