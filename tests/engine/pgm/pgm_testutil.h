/* tests/engine/pgm/pgm_testutil.h - brute-force references for the pgm
 * suites: models with random potentials on a chosen structure, and the full
 * joint enumerated cell by cell (small domains only). */
#ifndef PG_PGM_TESTUTIL_H
#define PG_PGM_TESTUTIL_H

#include "engine/core/rng.h"
#include "engine/pgm/pgm.h"
#include "engine/pgm/pgm_internal.h"
#include "support/pg_test.h"

/* A structure: sets given as lists terminated by SIZE_MAX. */
typedef struct tu_struct {
    const char *name;
    size_t nattr;
    size_t sizes[10];
    size_t nsets;
    size_t k[12];
    size_t sets[12][4];
} tu_struct;

static const tu_struct TU_STRUCTS[] = {
    {"chain", 4, {2, 3, 4, 2}, 3, {2, 2, 2}, {{0, 1}, {1, 2}, {2, 3}}},
    {"star", 5, {3, 2, 2, 3, 2}, 4, {2, 2, 2, 2}, {{0, 1}, {0, 2}, {0, 3}, {0, 4}}},
    {"cycle4", 4, {2, 3, 2, 3}, 4, {2, 2, 2, 2}, {{0, 1}, {1, 2}, {2, 3}, {0, 3}}},
    {"triples", 5, {2, 3, 2, 2, 3}, 2, {3, 3}, {{0, 1, 2}, {2, 3, 4}}},
    {"cycle5+lonely",
     6,
     {2, 2, 3, 2, 2, 3},
     5,
     {2, 2, 2, 2, 2},
     {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {0, 4}}},
    {"two_parts", 5, {3, 2, 2, 2, 3}, 2, {2, 3}, {{0, 1}, {2, 3, 4}}},
    {"tree7",
     7,
     {2, 3, 2, 2, 3, 2, 2},
     6,
     {2, 2, 2, 2, 2, 2},
     {{0, 1}, {1, 2}, {1, 3}, {3, 4}, {4, 5}, {4, 6}}},
};
#define TU_NSTRUCTS (sizeof TU_STRUCTS / sizeof *TU_STRUCTS)

/* A model on the structure with potentials N(0, scale^2), or NULL. */
static inline pg_pgm_model *tu_random_model(const tu_struct *s, uint64_t seed, double scale,
                                            double max_cells, double total)
{
    const size_t *sets[12] = {0};
    for (size_t i = 0; i < s->nsets; i++) sets[i] = s->sets[i];
    pg_pgm_model *m = NULL;
    pg_error err = {0};
    if (pgm_structure(s->sizes, s->nattr, sets, s->k, s->nsets, max_cells, &m, &err)) return NULL;
    m->theta = calloc(m->cells, sizeof *m->theta);
    pg_rng r;
    pg_rng_seeded(&r, seed, 7);
    for (size_t i = 0; i < m->cells; i++) m->theta[i] = scale * pg_rng_normal(&r);
    m->total = total;
    if (pgm_finalize(m, &err)) {
        pg_pgm_model_free(m);
        return NULL;
    }
    return m;
}

static inline size_t tu_cells(const size_t *sizes, const size_t *a, size_t k)
{
    size_t c = 1;
    for (size_t j = 0; j < k; j++) c *= sizes[a[j]];
    return c;
}

/* Joint probabilities of m (row-major over all attributes). */
static inline double *tu_joint(const pg_pgm_model *m, size_t *ncells)
{
    size_t n = 1;
    for (size_t i = 0; i < m->nattr; i++) n *= m->sizes[i];
    double *p = malloc(n * sizeof *p);
    size_t x[16];
    double mx = -INFINITY;
    for (size_t cell = 0; cell < n; cell++) {
        size_t r = cell;
        for (size_t i = m->nattr; i-- > 0;) x[i] = r % m->sizes[i], r /= m->sizes[i];
        double s = 0;
        for (size_t j = 0; j < m->nc; j++) {
            const pgm_clique *c = &m->c[j];
            size_t idx = 0;
            for (size_t a = 0; a < c->k; a++) idx = idx * m->sizes[c->attrs[a]] + x[c->attrs[a]];
            s += m->theta[c->off + idx];
        }
        p[cell] = s;
        if (s > mx) mx = s;
    }
    double z = 0;
    for (size_t cell = 0; cell < n; cell++) z += (p[cell] = exp(p[cell] - mx));
    for (size_t cell = 0; cell < n; cell++) p[cell] /= z;
    *ncells = n;
    return p;
}

/* Marginal of a joint over `sizes` onto attrs, scaled by `scale`. */
static inline void tu_marg(const size_t *sizes, size_t nattr, const double *joint,
                           const size_t *attrs, size_t k, double scale, double *out)
{
    size_t n = 1;
    for (size_t i = 0; i < nattr; i++) n *= sizes[i];
    memset(out, 0, tu_cells(sizes, attrs, k) * sizeof *out);
    size_t x[16];
    for (size_t cell = 0; cell < n; cell++) {
        size_t r = cell;
        for (size_t i = nattr; i-- > 0;) x[i] = r % sizes[i], r /= sizes[i];
        size_t idx = 0;
        for (size_t a = 0; a < k; a++) idx = idx * sizes[attrs[a]] + x[attrs[a]];
        out[idx] += scale * joint[cell];
    }
}

#endif
