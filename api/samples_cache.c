#include "api/samples_cache.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/body_cache.h"
#include "service/sha256.h"

/* Bumped whenever the bytes a query names change (an encoder's output):
 * ETags of the old encoding then never match the new. */
#define ETAG_VERSION "privgen-samples/1"
/* Seconds a client may reuse a body that can no longer change. */
#define IMMUTABLE_CC "private, max-age=300"
#define RUNNING_CC   "private, no-cache"

/* ---- the key: every query argument, sorted --------------------------- */

typedef struct args {
    const char *k[32], *v[32];
    size_t n;
    int overflow;
} args;

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    args *a = cls;
    (void)kind;
    if (a->n == sizeof a->k / sizeof a->k[0]) {
        a->overflow = 1;
        return MHD_NO;
    }
    a->k[a->n] = key;
    a->v[a->n] = value ? value : "";
    a->n++;
    return MHD_YES;
}

/* Escapes the separators so that distinct queries never print alike. */
static size_t put_escaped(char *o, size_t cap, const char *s, int *ok)
{
    size_t k = 0;
    for (; *s; s++) {
        int esc = *s == '&' || *s == '=' || *s == '%';
        if (k + (esc ? 3 : 1) >= cap) {
            *ok = 0;
            return k;
        }
        if (esc) {
            snprintf(o + k, 4, "%%%02X", (unsigned char)*s);
            k += 3;
        } else {
            o[k++] = *s;
        }
    }
    return k;
}

/* "k=v&k=v" of the query sorted by key, then value; 0 when it cannot serve
 * as a key (too many or too long arguments). */
static int variant_of(pg_req *r, char *out, size_t cap)
{
    args a = {.n = 0};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_arg, &a);
    if (a.overflow) return 0;
    for (size_t i = 1; i < a.n; i++) /* insertion sort: a handful of arguments */
        for (size_t j = i; j > 0; j--) {
            int c = strcmp(a.k[j - 1], a.k[j]);
            if (c < 0 || (c == 0 && strcmp(a.v[j - 1], a.v[j]) <= 0)) break;
            const char *t = a.k[j];
            a.k[j] = a.k[j - 1];
            a.k[j - 1] = t;
            t = a.v[j];
            a.v[j] = a.v[j - 1];
            a.v[j - 1] = t;
        }
    size_t k = 0;
    int ok = 1;
    for (size_t i = 0; i < a.n && ok; i++) {
        if (i) {
            if (k + 1 >= cap) return 0;
            out[k++] = '&';
        }
        k += put_escaped(out + k, cap - k, a.k[i], &ok);
        if (k + 1 >= cap) return 0;
        out[k++] = '=';
        k += put_escaped(out + k, cap - k, a.v[i], &ok);
    }
    out[k < cap ? k : cap - 1] = '\0';
    return ok;
}

void pg_samples_cache_init(pg_req *r, int has_seed, int has_checkpoint, long step, int ended,
                           pg_samples_cache *k)
{
    k->step = step;
    k->latest = !has_checkpoint;
    k->seeded = has_seed && variant_of(r, k->variant, sizeof k->variant);
    r->cache_control = NULL;
    r->etag[0] = '\0';
    if (!k->seeded) return;
    pg_sha256 h;
    pg_sha256_init(&h);
    pg_sha256_update(&h, ETAG_VERSION, sizeof ETAG_VERSION);
    pg_sha256_update(&h, r->params[0], strlen(r->params[0]) + 1);
    char st[32];
    int sl = snprintf(st, sizeof st, "%ld", step);
    pg_sha256_update(&h, st, (size_t)sl + 1);
    pg_sha256_update(&h, k->variant, strlen(k->variant));
    unsigned char d[32];
    pg_sha256_final(&h, d);
    char hex[65];
    pg_sha256_hex(d, hex);
    snprintf(r->etag, sizeof r->etag, "\"%ld-%.32s\"", step, hex);
    r->cache_control = has_checkpoint || ended ? IMMUTABLE_CC : RUNNING_CC;
}

/* ---- If-None-Match ------------------------------------------------------ */

int pg_samples_inm_matches(const char *h, const char *etag)
{
    if (!h) return 0;
    /* the opaque part of our tag, without its quotes */
    const char *tag = etag && etag[0] == '"' ? etag + 1 : NULL;
    size_t tl = tag ? strlen(tag) - 1 : 0;
    const char *p = h;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        if (!*p) return 0;
        if (*p == '*') return 1;                /* any current representation: we have one */
        if (p[0] == 'W' && p[1] == '/') p += 2; /* weak comparison ignores W/ */
        if (*p == '"') {
            const char *end = strchr(p + 1, '"');
            if (!end) return 0;
            if (tag && (size_t)(end - p - 1) == tl && !memcmp(p + 1, tag, tl)) return 1;
            p = end + 1;
        }
        /* skip to the next member (also past anything malformed) */
        while (*p && *p != ',') p++;
    }
}

/* ---- answers -------------------------------------------------------------- */

static void release_body(void *cls)
{
    pg_body_release(cls);
}

/* 200 with a body reference (released by MHD once sent). */
static void send_ref(pg_req *r, pg_body *b, const char *type)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer_with_free_callback_cls(
        pg_body_len(b), (void *)pg_body_data(b), release_body, b);
    if (!resp) {
        pg_body_release(b);
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    pg_api_send_text(r, 200, type, NULL, 0);
    r->custom = resp;
}

int pg_samples_cache_answer(pg_req *r, const pg_samples_cache *k, const char *type)
{
    if (pg_samples_inm_matches(pg_api_header(r, MHD_HTTP_HEADER_IF_NONE_MATCH),
                               k->seeded ? r->etag : NULL)) {
        pg_api_send_text(r, 304, NULL, NULL, 0);
        return 1;
    }
    if (!k->seeded) return 0;
    pg_body *b = pg_body_cache_get(r->app->body_cache, r->params[0], k->step, k->variant);
    if (!b) return 0;
    send_ref(r, b, type);
    return 1;
}

void pg_samples_cache_send(pg_req *r, const pg_samples_cache *k, const char *type, char *body,
                           size_t len)
{
    if (!k->seeded || !r->app->body_cache) {
        pg_api_send_text(r, 200, type, body, len);
        return;
    }
    pg_body *b = pg_body_wrap(body, len);
    if (!b) {
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    pg_body_cache_put(r->app->body_cache, r->params[0], k->step, k->latest, k->variant, b);
    send_ref(r, b, type);
}

/* ---- streamed bodies ------------------------------------------------------ */

struct pg_samples_keep {
    struct pg_body_cache *cache;
    char job[PG_ID_MAX];
    pg_samples_cache k;
    char *buf;
    size_t len, cap, max;
    size_t expect; /* the exact length when known, else 0 */
};

pg_samples_keep *pg_samples_keep_open(pg_req *r, const pg_samples_cache *k, size_t size,
                                      size_t values)
{
    if (!k->seeded || !r->app->body_cache) return NULL;
    pg_body_cache_stats s;
    pg_body_cache_stats_get(r->app->body_cache, &s);
    size_t guess = size ? size : values > s.max_body / 8 ? SIZE_MAX : values * 8;
    if (guess > s.max_body || guess > s.max_bytes) return NULL;
    pg_samples_keep *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->cap = size ? size : guess;
    t->buf = malloc(t->cap ? t->cap : 1);
    if (!t->buf) {
        free(t);
        return NULL;
    }
    t->cache = r->app->body_cache;
    snprintf(t->job, sizeof t->job, "%s", r->params[0]);
    t->k = *k;
    t->max = s.max_body;
    t->expect = size;
    return t;
}

void pg_samples_keep_add(pg_samples_keep *t, const char *p, size_t n)
{
    if (!t || !t->buf) return;
    if (n > t->max - t->len) { /* outgrew the cache: give up the copy */
        free(t->buf);
        t->buf = NULL;
        return;
    }
    if (t->len + n > t->cap) {
        size_t cap = t->cap * 2 > t->len + n ? t->cap * 2 : t->len + n;
        if (cap > t->max) cap = t->max;
        char *b = realloc(t->buf, cap);
        if (!b) {
            free(t->buf);
            t->buf = NULL;
            return;
        }
        t->buf = b;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, p, n);
    t->len += n;
    /* A body of known length ends without a last empty read (the HTTP
     * library stops asking once it has Content-Length bytes). */
    if (t->expect && t->len == t->expect) pg_samples_keep_end(t);
}

void pg_samples_keep_end(pg_samples_keep *t)
{
    if (!t || !t->buf) return;
    pg_body *b = pg_body_wrap(t->buf, t->len);
    t->buf = NULL;
    if (!b) return;
    pg_body_cache_put(t->cache, t->job, t->k.step, t->k.latest, t->k.variant, b);
    pg_body_release(b);
}

void pg_samples_keep_free(pg_samples_keep *t)
{
    if (!t) return;
    free(t->buf);
    free(t);
}
