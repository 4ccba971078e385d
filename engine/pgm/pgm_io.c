/* engine/pgm/pgm_io.c - the model blob.
 *
 * Layout (integers little-endian, doubles IEEE binary64 little-endian):
 *   magic     8 bytes "PGPGM\r\n\0"
 *   version   u32     PG_PGM_BLOB_VERSION
 *   nattr     u32     1..PG_PGM_MAX_ATTRS; then sizes u32[nattr], 1..PG_PGM_MAX_LEVELS
 *   total     f64     > 0, a normal double (no subnormal: marginals divide by it)
 *   max_cells f64     finite, >= 1
 *   ncliques  u32     1..nattr; then per clique: k u8 (<= PG_PGM_MAX_CLIQUE),
 *                     attrs u32[k] strictly increasing, parent u32 (0xffffffff
 *                     for clique 0, else < its own index)
 *   theta     f64[sum of clique cells], finite
 *   crc32     u32     zlib crc32 of every preceding byte
 * Nothing follows. The loader checks the length and checksum first, then
 * every count against the bytes left before allocating, then the tree
 * (running intersection), so memory is bounded by the blob's own size.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "engine/pgm/pgm_internal.h"

static const unsigned char MAGIC[8] = {'P', 'G', 'P', 'G', 'M', '\r', '\n', 0};

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void put_f64(unsigned char *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static double get_f64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

static uint32_t crc(const unsigned char *p, size_t n)
{
    uLong c = crc32(0L, Z_NULL, 0);
    while (n) {
        uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return (uint32_t)c;
}

int pg_pgm_save(const pg_pgm_model *m, unsigned char **bytes, size_t *len, pg_error *err)
{
    if (!m || !bytes || !len) return pg_error_set(err, PG_EINVAL, "pgm: save needs a model");
    size_t n = 8 + 4 + 4 + 4 * m->nattr + 8 + 8 + 4;
    for (size_t j = 0; j < m->nc; j++) n += 1 + 4 * m->c[j].k + 4;
    n += 8 * m->cells + 4;
    unsigned char *b = malloc(n), *p = b;
    if (!b) return pg_error_set(err, PG_ENOMEM, "pgm: out of memory saving a model");
    memcpy(p, MAGIC, 8), p += 8;
    put_u32(p, PG_PGM_BLOB_VERSION), p += 4;
    put_u32(p, (uint32_t)m->nattr), p += 4;
    for (size_t i = 0; i < m->nattr; i++) put_u32(p, (uint32_t)m->sizes[i]), p += 4;
    put_f64(p, m->total), p += 8;
    put_f64(p, m->max_cells), p += 8;
    put_u32(p, (uint32_t)m->nc), p += 4;
    for (size_t j = 0; j < m->nc; j++) {
        const pgm_clique *c = &m->c[j];
        *p++ = (unsigned char)c->k;
        for (size_t a = 0; a < c->k; a++) put_u32(p, (uint32_t)c->attrs[a]), p += 4;
        put_u32(p, c->parent == SIZE_MAX ? 0xffffffffu : (uint32_t)c->parent), p += 4;
    }
    for (size_t i = 0; i < m->cells; i++) put_f64(p, m->theta[i]), p += 8;
    put_u32(p, crc(b, (size_t)(p - b))), p += 4;
    *bytes = b;
    *len = n;
    return PG_OK;
}

#define NEED(nb)                                                                                   \
    do {                                                                                           \
        if ((size_t)(end - p) < (size_t)(nb)) {                                                    \
            rc = pg_error_set(err, PG_EFORMAT, "pgm: model blob truncated");                       \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

int pg_pgm_load(const unsigned char *bytes, size_t len, pg_pgm_model **out, pg_error *err)
{
    if (!out) return pg_error_set(err, PG_EINVAL, "pgm: load needs an output");
    if (!bytes || len < 8 + 4 + 4 + 4 + 16 + 4 + 4 + 4)
        return pg_error_set(err, PG_EFORMAT, "pgm: model blob too short (%zu bytes)", len);
    if (memcmp(bytes, MAGIC, 8)) return pg_error_set(err, PG_EFORMAT, "pgm: not a model blob");
    if (get_u32(bytes + len - 4) != crc(bytes, len - 4))
        return pg_error_set(err, PG_EFORMAT, "pgm: model blob checksum mismatch");
    uint32_t ver = get_u32(bytes + 8);
    if (ver != PG_PGM_BLOB_VERSION)
        return pg_error_set(err, PG_ENOTSUP, "pgm: model blob version %u (this build reads %d)",
                            ver, PG_PGM_BLOB_VERSION);
    const unsigned char *p = bytes + 12, *end = bytes + len - 4;
    int rc = PG_OK;
    pg_pgm_model *m = calloc(1, sizeof *m);
    if (!m) return pg_error_set(err, PG_ENOMEM, "pgm: out of memory");
    NEED(4);
    m->nattr = get_u32(p), p += 4;
    if (m->nattr == 0 || m->nattr > PG_PGM_MAX_ATTRS) {
        rc = pg_error_set(err, PG_EFORMAT, "pgm: model blob has %zu attributes", m->nattr);
        goto fail;
    }
    NEED(4 * m->nattr);
    m->sizes = malloc(m->nattr * sizeof *m->sizes);
    if (!m->sizes) goto nomem;
    for (size_t i = 0; i < m->nattr; i++, p += 4) {
        m->sizes[i] = get_u32(p);
        if (m->sizes[i] < 1 || m->sizes[i] > PG_PGM_MAX_LEVELS) {
            rc = pg_error_set(err, PG_EFORMAT, "pgm: model blob: attribute %zu has %zu levels", i,
                              m->sizes[i]);
            goto fail;
        }
    }
    NEED(20);
    m->total = get_f64(p), p += 8;
    m->max_cells = get_f64(p), p += 8;
    if (!isnormal(m->total) || !(m->total > 0) || !isfinite(m->max_cells) || !(m->max_cells >= 1)) {
        rc = pg_error_set(err, PG_EFORMAT, "pgm: model blob has an invalid total or bound");
        goto fail;
    }
    m->nc = get_u32(p), p += 4;
    if (m->nc == 0 || m->nc > m->nattr) {
        rc = pg_error_set(err, PG_EFORMAT, "pgm: model blob has %zu cliques", m->nc);
        goto fail;
    }
    NEED(5 * m->nc);
    m->c = calloc(m->nc, sizeof *m->c);
    if (!m->c) goto nomem;
    for (size_t j = 0; j < m->nc; j++) {
        pgm_clique *c = &m->c[j];
        NEED(1);
        c->k = *p++;
        if (c->k > PG_PGM_MAX_CLIQUE) {
            rc = pg_error_set(err, PG_EFORMAT, "pgm: model blob: clique %zu has %zu attributes", j,
                              c->k);
            goto fail;
        }
        NEED(4 * c->k + 4);
        for (size_t a = 0; a < c->k; a++, p += 4) c->attrs[a] = get_u32(p);
        uint32_t par = get_u32(p);
        p += 4;
        c->parent = par == 0xffffffffu ? SIZE_MAX : par;
    }
    if ((rc = pgm_structure_explicit(m, err))) {
        if (rc != PG_ENOMEM) rc = PG_EFORMAT;
        if (err) err->code = rc;
        goto fail;
    }
    if ((size_t)(end - p) / 8 != m->cells || (size_t)(end - p) % 8) {
        rc = pg_error_set(err, PG_EFORMAT,
                          "pgm: model blob has %zu bytes of potentials for %zu cells",
                          (size_t)(end - p), m->cells);
        goto fail;
    }
    m->theta = malloc((m->cells ? m->cells : 1) * sizeof *m->theta);
    if (!m->theta) goto nomem;
    for (size_t i = 0; i < m->cells; i++, p += 8) {
        m->theta[i] = get_f64(p);
        if (!isfinite(m->theta[i])) {
            rc = pg_error_set(err, PG_EFORMAT, "pgm: model blob has a non-finite potential");
            goto fail;
        }
    }
    if ((rc = pgm_finalize(m, err))) goto fail;
    *out = m;
    return PG_OK;
nomem:
    rc = pg_error_set(err, PG_ENOMEM, "pgm: out of memory loading a model");
fail:
    pg_pgm_model_free(m);
    return rc;
}
