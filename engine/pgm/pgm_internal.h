/* engine/pgm/pgm_internal.h - shared internals of the pgm module (not a
 * contract: only the files of engine/pgm include it).
 *
 * A model is a junction tree whose cliques are numbered so that a parent
 * always precedes its children (clique 0 is the root); the separator of
 * clique j > 0 is its intersection with its parent. Tables are flat doubles
 * at per-clique offsets. Projections between a table over a set A and a table
 * over a subset B are walked with an odometer that yields, cell by cell of A,
 * the index of the matching cell of B: no index map is stored, so memory
 * stays at the tables themselves.
 */
#ifndef PG_PGM_INTERNAL_H
#define PG_PGM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/pgm/pgm.h"

/* Variable-elimination factors (marginal queries) may span more attributes
 * than a clique; their cells are bounded separately. */
#define PGM_VE_MAX 48

/* Walk of a table over dims[0..k-1] (row-major) yielding the index of the
 * corresponding cell of a target table: j = sum x[a] * stride[a]. */
typedef struct pgm_proj {
    size_t k;
    size_t dim[PGM_VE_MAX];
    size_t stride[PGM_VE_MAX];
    /* Block form: the trailing dims that are all kept (then contiguous in
     * the target too) or all dropped make one inner block of `inner` cells;
     * the first `ko` dims are walked by the odometer, one target base index
     * per block. */
    size_t inner, ko;
    int inner_kept;
} pgm_proj;

typedef struct pgm_odo {
    size_t x[PGM_VE_MAX];
    size_t j;
} pgm_odo;

/* Projection from set a (ka attrs) onto its subset b (kb attrs). */
void pgm_proj_make(const size_t *sizes, const size_t *a, size_t ka, const size_t *b, size_t kb,
                   pgm_proj *p);
static inline void pgm_odo_start(pgm_odo *o, const pgm_proj *p)
{
    for (size_t a = 0; a < p->k; a++) o->x[a] = 0;
    o->j = 0;
}
/* Next n target indices into idx, advancing an odometer over the first k
 * dims of p. */
static inline void pgm_odo_fill_k(pgm_odo *o, const pgm_proj *p, size_t k, size_t *idx, size_t n)
{
    if (k == 0) {
        for (size_t t = 0; t < n; t++) idx[t] = 0;
        return;
    }
    const size_t last = k - 1, dl = p->dim[last], sl = p->stride[last];
    for (size_t t = 0; t < n; t++) {
        idx[t] = o->j;
        if (++o->x[last] < dl) {
            o->j += sl;
            continue;
        }
        o->x[last] = 0;
        o->j -= sl * (dl - 1);
        for (size_t a = last; a-- > 0;) {
            if (++o->x[a] < p->dim[a]) {
                o->j += p->stride[a];
                break;
            }
            o->x[a] = 0;
            o->j -= p->stride[a] * (p->dim[a] - 1);
        }
    }
}
static inline void pgm_odo_fill(pgm_odo *o, const pgm_proj *p, size_t *idx, size_t n)
{
    pgm_odo_fill_k(o, p, p->k, idx, n);
}
#define PGM_CHUNK 512

typedef struct pgm_clique {
    size_t k;
    size_t attrs[PG_PGM_MAX_CLIQUE];
    size_t cells;
    size_t off;    /* offset of the clique's table in the flat arrays */
    size_t parent; /* SIZE_MAX for the root (clique 0) */
    size_t sk;     /* separator with the parent */
    size_t sep[PG_PGM_MAX_CLIQUE];
    size_t sep_cells;
    size_t sep_off; /* offset of its separator table in the message arrays */
    pgm_proj down;  /* this clique's cells -> separator */
    pgm_proj up;    /* parent's cells -> separator */
    /* Sampling: attributes not in the separator and the conditional CDF table
     * [sep_cells][new_cells] (unnormalized running sums, row by row). */
    size_t nk;
    size_t newa[PG_PGM_MAX_CLIQUE];
    size_t new_cells;
    size_t cdf_off;
} pgm_clique;

struct pg_pgm_model {
    size_t nattr;
    size_t *sizes;
    size_t nc;
    pgm_clique *c;
    size_t cells;    /* sum of clique cells */
    size_t sepcells; /* sum of separator cells */
    double total;
    double max_cells;
    double *theta; /* log-potentials, `cells` */
    double *prob;  /* calibrated clique marginals as probabilities, `cells` */
    double *cdf;   /* sampling tables, `cells` */
    pg_pgm_fit_stats stats;
};

/* Structure from the sets (triangulation + junction tree); fills m->nattr,
 * sizes, nc, c (attrs, cells, offsets, parents, separators, projections).
 * extra_k/extra: optional further sets to cover. Refuses above max_cells. */
int pgm_structure(const size_t *sizes, size_t nattr, const size_t *const *sets, const size_t *set_k,
                  size_t nsets, double max_cells, pg_pgm_model **out, pg_error *err);
/* Structure from explicit cliques and parents (a loaded blob): validates the
 * running-intersection property and fills offsets, separators, projections. */
int pgm_structure_explicit(pg_pgm_model *m, pg_error *err);

/* Sum-product belief propagation in log space: prob = calibrated clique
 * marginals (probabilities) of theta; *logz = log partition function.
 * msg_up/msg_down/scratch have m->sepcells cells (scratch: max sep cells). */
typedef struct pgm_bp_work {
    double *up, *down, *scratch;
} pgm_bp_work;
int pgm_bp_work_alloc(const pg_pgm_model *m, pgm_bp_work *w);
void pgm_bp_work_free(pgm_bp_work *w);
void pgm_bp(const pg_pgm_model *m, const double *theta, double *prob, double *logz, pgm_bp_work *w);

/* Builds the sampling tables from m->prob (allocates m->cdf). */
int pgm_build_cdf(pg_pgm_model *m, pg_error *err);
/* Runs BP on m->theta into m->prob and builds the sampling tables. */
int pgm_finalize(pg_pgm_model *m, pg_error *err);

int pgm_check_set(const size_t *sizes, size_t nattr, const size_t *a, size_t k, const char *what,
                  pg_error *err);

#endif
