#include "render/npy_stream.h"

#include <string.h>

void pg_npy_stream_init(pg_npy_stream *s)
{
    s->hdr_done = 0;
    s->hdr_len = s->hdr_need = 0;
    s->carry_len = 0;
    s->done = 0;
    memset(&s->h, 0, sizeof s->h);
}

void pg_npy_stream_init_raw(pg_npy_stream *s, size_t count)
{
    pg_npy_stream_init(s);
    s->h.elem_size = 4;
    s->h.big_endian = 0;
    s->h.ndim = 1;
    s->h.shape[0] = count;
    s->h.count = count;
    s->hdr_done = 1;
}

/* Converts and delivers `count` whole elements in bounded batches. */
static int deliver(pg_npy_stream *s, const unsigned char *src, size_t count,
                   const pg_npy_stream_cb *cb, void *ctx, pg_error *err)
{
    while (count) {
        size_t k = count < PG_NPY_STREAM_BATCH ? count : PG_NPY_STREAM_BATCH;
        pg_npy_convert(&s->h, src, k, s->conv);
        int rc = cb->on_values(ctx, s->conv, k, s->done, err);
        if (rc) return rc;
        s->done += k;
        src += k * (size_t)s->h.elem_size;
        count -= k;
    }
    return PG_OK;
}

/* Header bytes: magic (6) + version (2) + length (2 in v1, 4 in v2/v3),
 * then the dict. Errors are raised as soon as the offending byte is in, so
 * the outcome never depends on how the body was split. Returns the bytes
 * consumed; *rc is set on error. */
static size_t take_header(pg_npy_stream *s, const unsigned char *p, size_t len,
                          const pg_npy_stream_cb *cb, void *ctx, pg_error *err, int *rc)
{
    size_t used = 0;
    while (used < len && !s->hdr_done) {
        size_t want = s->hdr_need ? s->hdr_need : s->hdr_len < 7 ? 7 : s->hdr[6] == 1 ? 10 : 12;
        size_t take = want - s->hdr_len < len - used ? want - s->hdr_len : len - used;
        memcpy(s->hdr + s->hdr_len, p + used, take);
        s->hdr_len += take;
        used += take;
        if (s->hdr_len < want) break;
        if (s->hdr_len == 7) {
            if (memcmp(s->hdr, "\x93NUMPY", 6)) {
                *rc = pg_error_set(err, PG_EFORMAT, "not an NPY file (bad magic)");
                break;
            }
            if (s->hdr[6] < 1 || s->hdr[6] > 3) {
                *rc = pg_error_set(err, PG_EFORMAT, "NPY version %d is not supported", s->hdr[6]);
                break;
            }
            continue;
        }
        if (!s->hdr_need) {
            const unsigned char *b = s->hdr;
            size_t need = b[6] == 1 ? 10 + ((size_t)b[8] | (size_t)b[9] << 8)
                                    : 12 + ((size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 |
                                            (size_t)b[11] << 24);
            if (need > PG_NPY_STREAM_HDR) {
                *rc = pg_error_set(err, PG_EFORMAT, "NPY header too long");
                break;
            }
            s->hdr_need = need;
            if (s->hdr_len < need) continue;
        }
        *rc = pg_npy_parse_header(s->hdr, s->hdr_len, &s->h, err);
        if (*rc) break;
        s->hdr_done = 1;
        if (cb->on_header) *rc = cb->on_header(ctx, &s->h, err);
    }
    return used;
}

int pg_npy_stream_feed(pg_npy_stream *s, const void *data, size_t len, const pg_npy_stream_cb *cb,
                       void *ctx, pg_error *err)
{
    const unsigned char *p = data;
    while (len) {
        if (!s->hdr_done) {
            int rc = PG_OK;
            size_t used = take_header(s, p, len, cb, ctx, err, &rc);
            if (rc) return rc;
            p += used, len -= used;
            continue;
        }
        size_t es = (size_t)s->h.elem_size;
        uint64_t left = s->h.count - s->done;
        if (s->carry_len) {
            size_t take = es - s->carry_len < len ? es - s->carry_len : len;
            memcpy(s->carry + s->carry_len, p, take);
            s->carry_len += take, p += take, len -= take;
            if (s->carry_len < es) continue;
            if (left == 0) break;
            int rc = deliver(s, s->carry, 1, cb, ctx, err);
            if (rc) return rc;
            s->carry_len = 0;
            continue;
        }
        size_t whole = len / es;
        if (whole > left) break;
        int rc = whole ? deliver(s, p, whole, cb, ctx, err) : PG_OK;
        if (rc) return rc;
        p += whole * es, len -= whole * es;
        if (len) {
            if (left - whole == 0) break;
            memcpy(s->carry, p, len);
            s->carry_len = len;
            len = 0;
        }
    }
    if (len) return pg_error_set(err, PG_EFORMAT, "the body is longer than its declared shape");
    return PG_OK;
}

int pg_npy_stream_complete(const pg_npy_stream *s)
{
    return s->hdr_done && s->done == s->h.count && s->carry_len == 0;
}
