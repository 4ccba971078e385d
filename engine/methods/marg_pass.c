#include "engine/methods/marg_pass.h"

#include <stdlib.h>
#include <string.h>

typedef struct tally {
    const pg_disc *D;
    const pg_table *t;
    const uint32_t *const *fwd;
    const pg_marg_set *sets;
    size_t ns;
    size_t (*stride)[PG_MARG_PASS_MAX_SET];
    double *out;
    uint32_t *codes; /* PG_MARG_PASS_ROWS x nattr */
} tally;

static int tally_fn(void *ctx, const float *x, const int32_t *labels, size_t rows, pg_error *err)
{
    (void)err;
    tally *t = ctx;
    size_t A = t->D->nattr, d = t->D->d;
    for (size_t i0 = 0; i0 < rows; i0 += PG_MARG_PASS_ROWS) {
        size_t m = rows - i0 < PG_MARG_PASS_ROWS ? rows - i0 : PG_MARG_PASS_ROWS;
        for (size_t i = 0; i < m; i++) {
            uint32_t *c = t->codes + i * A;
            pg_disc_encode(t->D, t->t, x + (i0 + i) * d, labels ? labels[i0 + i] : 0, c);
            for (size_t a = 0; t->fwd && a < A; a++)
                if (t->fwd[a]) c[a] = t->fwd[a][c[a]];
        }
        /* Set by set over the buffered rows: one table hot at a time. */
        for (size_t q = 0; q < t->ns; q++) {
            const pg_marg_set *s = &t->sets[q];
            const size_t *st = t->stride[q];
            double *o = t->out + s->off;
            for (size_t i = 0; i < m; i++) {
                const uint32_t *c = t->codes + i * A;
                size_t cell = 0;
                for (size_t j = 0; j < s->k; j++) cell += c[s->attrs[j]] * st[j];
                o[cell] += 1.0;
            }
        }
    }
    return PG_OK;
}

int pg_marg_pass_count(const pg_rowsrc *src, const pg_disc *D, const pg_table *t,
                       const uint32_t *const *fwd, const size_t *sizes, const pg_marg_set *sets,
                       size_t ns, double *out, size_t len, pg_error *err)
{
    if (!src || src->d != D->d)
        return pg_error_set(err, PG_EINVAL, "the row source's width is not the domain's");
    tally tl = {.D = D, .t = t, .fwd = fwd, .sets = sets, .ns = ns, .out = out};
    tl.stride = malloc((ns ? ns : 1) * sizeof *tl.stride);
    tl.codes = malloc(PG_MARG_PASS_ROWS * (D->nattr ? D->nattr : 1) * sizeof *tl.codes);
    int rc = tl.stride && tl.codes ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
    for (size_t q = 0; !rc && q < ns; q++) {
        const pg_marg_set *s = &sets[q];
        size_t c = 1;
        int bad = s->k == 0 || s->k > PG_MARG_PASS_MAX_SET;
        for (size_t j = s->k; !bad && j-- > 0;) {
            bad = s->attrs[j] >= D->nattr;
            if (bad) break;
            tl.stride[q][j] = c;
            c *= sizes[s->attrs[j]];
        }
        if (bad || c != s->cells || s->off > len || s->cells > len - s->off)
            rc = pg_error_set(err, PG_EINVAL, "marginal %zu does not match its domain or table", q);
    }
    if (!rc) {
        memset(out, 0, len * sizeof *out);
        rc = pg_rowsrc_pass(src, tally_fn, &tl, err);
    }
    free(tl.stride);
    free(tl.codes);
    return rc;
}
