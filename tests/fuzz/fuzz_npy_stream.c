/* libFuzzer target: the server's streaming NPY decoder. Input byte 0 seeds
 * how the rest is split into feeds. Properties: the result does not depend
 * on the split (one feed vs many), values arrive in order, and a complete
 * stream decodes to exactly what pg_npy_read gives for the whole buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "render/npy_stream.h"
#include "tests/fuzz/fuzz_check.h"
#include "engine/core/alloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct digest {
    uint64_t n, h;
} digest;

static uint64_t mix(uint64_t h, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &x[i], 4);
        h = (h ^ b) * 0x100000001b3ull;
    }
    return h;
}

static int on_values(void *ctx, const float *x, size_t count, uint64_t first, pg_error *err)
{
    digest *d = ctx;
    FUZZ_CHECK(first == d->n); /* values must arrive in order, without gaps */
    d->h = mix(d->h, x, count);
    d->n += count;
    (void)err;
    return PG_OK;
}

static const pg_npy_stream_cb CB = {NULL, on_values};

static int run(const uint8_t *p, size_t len, unsigned seed, digest *d, int *complete)
{
    pg_npy_stream *s = malloc(sizeof *s);
    FUZZ_CHECK(s != NULL);
    pg_npy_stream_init(s);
    d->n = 0;
    d->h = 0xcbf29ce484222325ull;
    int rc = PG_OK;
    size_t at = 0;
    while (at < len && !rc) {
        seed = seed * 1103515245u + 12345u;
        size_t k = seed == 0 ? len : 1 + (seed >> 16) % 97;
        if (k > len - at) k = len - at;
        rc = pg_npy_stream_feed(s, p + at, k, &CB, d, NULL);
        at += k;
    }
    *complete = !rc && pg_npy_stream_complete(s);
    free(s);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const uint8_t *body = data + 1;
    size_t len = size - 1;
    digest a, b;
    int ca, cb;
    int ra = run(body, len, data[0] + 1u, &a, &ca);
    pg_npy_stream *s = malloc(sizeof *s);
    FUZZ_CHECK(s != NULL);
    pg_npy_stream_init(s);
    b.n = 0;
    b.h = 0xcbf29ce484222325ull;
    int rb = pg_npy_stream_feed(s, body, len, &CB, &b, NULL);
    cb = !rb && pg_npy_stream_complete(s);
    free(s);
    FUZZ_CHECK((ra != 0) == (rb != 0) && ca == cb);
    FUZZ_CHECK(!ca || (a.n == b.n && a.h == b.h));
    if (ca) {
        pg_npy_header h;
        float *ref;
        FUZZ_CHECK(pg_npy_read(body, len, &h, &ref, NULL) == PG_OK);
        FUZZ_CHECK(h.count == a.n && mix(0xcbf29ce484222325ull, ref, h.count) == a.h);
        pg_free(ref);
    }
    return 0;
}
