/* engine/pgm/pgm.c - skeleton; the implementation lands in following commits. */
#include "engine/pgm/pgm.h"

#include <stdlib.h>

struct pg_pgm_model {
    size_t nattr;
    size_t *sizes;
};

int pg_pgm_plan_cells(const size_t *sizes, size_t nattr, const size_t *const *cliques,
                      const size_t *clique_k, size_t ncliques, double *cells, pg_error *err)
{
    (void)sizes, (void)nattr, (void)cliques, (void)clique_k, (void)ncliques, (void)cells;
    return pg_error_set(err, PG_ENOTSUP, "pgm: not implemented yet");
}

int pg_pgm_fit(const size_t *sizes, size_t nattr, const pg_pgm_measure *m, size_t nm,
               const pg_pgm_fit_opts *opts, const pg_pgm_model *warm, pg_pgm_model **out,
               pg_error *err)
{
    (void)sizes, (void)nattr, (void)m, (void)nm, (void)opts, (void)warm, (void)out;
    return pg_error_set(err, PG_ENOTSUP, "pgm: not implemented yet");
}

int pg_pgm_marginal(const pg_pgm_model *m, const size_t *attrs, size_t k, double *out,
                    pg_error *err)
{
    (void)m, (void)attrs, (void)k, (void)out;
    return pg_error_set(err, PG_ENOTSUP, "pgm: not implemented yet");
}

int pg_pgm_sample(const pg_pgm_model *m, pg_rng *rng, size_t n, uint32_t *codes, pg_error *err)
{
    (void)m, (void)rng, (void)n, (void)codes;
    return pg_error_set(err, PG_ENOTSUP, "pgm: not implemented yet");
}

double pg_pgm_model_total(const pg_pgm_model *m)
{
    (void)m;
    return 0;
}
double pg_pgm_model_cells(const pg_pgm_model *m)
{
    (void)m;
    return 0;
}
size_t pg_pgm_model_nattr(const pg_pgm_model *m)
{
    return m ? m->nattr : 0;
}
const size_t *pg_pgm_model_sizes(const pg_pgm_model *m)
{
    return m ? m->sizes : NULL;
}
size_t pg_pgm_model_ncliques(const pg_pgm_model *m)
{
    (void)m;
    return 0;
}
const size_t *pg_pgm_model_clique(const pg_pgm_model *m, size_t j, size_t *k)
{
    (void)m, (void)j;
    *k = 0;
    return NULL;
}
void pg_pgm_model_stats(const pg_pgm_model *m, pg_pgm_fit_stats *stats)
{
    (void)m;
    *stats = (pg_pgm_fit_stats){0};
}
void pg_pgm_model_free(pg_pgm_model *m)
{
    if (m) {
        free(m->sizes);
        free(m);
    }
}

int pg_pgm_save(const pg_pgm_model *m, unsigned char **bytes, size_t *len, pg_error *err)
{
    (void)m, (void)bytes, (void)len;
    return pg_error_set(err, PG_ENOTSUP, "pgm: not implemented yet");
}

int pg_pgm_load(const unsigned char *bytes, size_t len, pg_pgm_model **out, pg_error *err)
{
    (void)bytes, (void)len, (void)out;
    return pg_error_set(err, PG_ENOTSUP, "pgm: not implemented yet");
}
