/* engine/pgm/pgm_query.c - marginals on any set, and forward sampling.
 *
 * A set inside one clique is a projection of that clique's calibrated
 * marginal. Otherwise the joint of a connected part T of a calibrated
 * junction tree is p_top * prod_{C in T, C != top} p_C / p_sep(C), so the
 * marginal on the set is variable elimination over those factors, on the
 * smallest subtree whose cliques cover the set (greedy choice of covering
 * cliques, then pruned paths to the root). Elimination order: greedy by the
 * size of the table each step creates, every table checked against the bound.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pgm/pgm_internal.h"

typedef struct factor {
    size_t k;
    size_t attrs[PGM_VE_MAX];
    size_t cells;
    double *v;
} factor;

static size_t set_union(const size_t *a, size_t ka, const size_t *b, size_t kb, size_t *out)
{
    size_t i = 0, j = 0, n = 0;
    while (i < ka || j < kb) {
        if (j == kb || (i < ka && a[i] < b[j]))
            out[n++] = a[i++];
        else if (i == ka || b[j] < a[i])
            out[n++] = b[j++];
        else
            out[n++] = a[i++], j++;
    }
    return n;
}

static int has(const size_t *a, size_t k, size_t v)
{
    for (size_t i = 0; i < k; i++)
        if (a[i] == v) return 1;
    return 0;
}

/* Product of fs[0..nf-1] over u (ku attrs), summed over `drop` (SIZE_MAX:
 * none), into r. */
static int product_sumout(const pg_pgm_model *m, factor *const *fs, size_t nf, const size_t *u,
                          size_t ku, size_t drop, factor *r)
{
    size_t cells = 1;
    for (size_t a = 0; a < ku; a++) cells *= m->sizes[u[a]];
    r->k = 0;
    for (size_t a = 0; a < ku; a++)
        if (u[a] != drop) r->attrs[r->k++] = u[a];
    r->cells = 1;
    for (size_t a = 0; a < r->k; a++) r->cells *= m->sizes[r->attrs[a]];
    r->v = calloc(r->cells, sizeof *r->v);
    pgm_proj *pf = malloc((nf + 1) * sizeof *pf);
    pgm_odo *of = malloc((nf + 1) * sizeof *of);
    size_t(*idx)[PGM_CHUNK] = malloc((nf + 1) * sizeof *idx);
    double *acc = malloc(PGM_CHUNK * sizeof *acc);
    if (!r->v || !pf || !of || !idx || !acc) {
        free(r->v);
        r->v = NULL;
        free(pf);
        free(of);
        free(idx);
        free(acc);
        return PG_ENOMEM;
    }
    for (size_t f = 0; f < nf; f++) {
        pgm_proj_make(m->sizes, u, ku, fs[f]->attrs, fs[f]->k, &pf[f]);
        pgm_odo_start(&of[f], &pf[f]);
    }
    pgm_proj_make(m->sizes, u, ku, r->attrs, r->k, &pf[nf]);
    pgm_odo_start(&of[nf], &pf[nf]);
    for (size_t b = 0; b < cells; b += PGM_CHUNK) {
        size_t len = cells - b < PGM_CHUNK ? cells - b : PGM_CHUNK;
        for (size_t t = 0; t < len; t++) acc[t] = 1;
        for (size_t f = 0; f < nf; f++) {
            pgm_odo_fill(&of[f], &pf[f], idx[f], len);
            for (size_t t = 0; t < len; t++) acc[t] *= fs[f]->v[idx[f][t]];
        }
        pgm_odo_fill(&of[nf], &pf[nf], idx[nf], len);
        for (size_t t = 0; t < len; t++) r->v[idx[nf][t]] += acc[t];
    }
    free(pf);
    free(of);
    free(idx);
    free(acc);
    return PG_OK;
}

static void sum_to(const pg_pgm_model *m, const pgm_clique *c, const size_t *attrs, size_t k,
                   const double *src, double *out, size_t outn)
{
    pgm_proj p;
    pgm_proj_make(m->sizes, c->attrs, c->k, attrs, k, &p);
    size_t idx[PGM_CHUNK];
    pgm_odo o;
    pgm_odo_start(&o, &p);
    memset(out, 0, outn * sizeof *out);
    for (size_t b = 0; b < c->cells; b += PGM_CHUNK) {
        size_t len = c->cells - b < PGM_CHUNK ? c->cells - b : PGM_CHUNK;
        pgm_odo_fill(&o, &p, idx, len);
        for (size_t t = 0; t < len; t++) out[idx[t]] += src[b + t];
    }
}

int pg_pgm_marginal(const pg_pgm_model *m, const size_t *attrs, size_t k, double *out,
                    pg_error *err)
{
    if (!m || !out) return pg_error_set(err, PG_EINVAL, "pgm: marginal needs a model and output");
    int rc = pgm_check_set(m->sizes, m->nattr, attrs, k, "query", err);
    if (rc) return rc;
    size_t qcells = 1;
    for (size_t a = 0; a < k; a++) qcells *= m->sizes[attrs[a]];
    const double lim = fmax(m->max_cells, (double)qcells);

    /* Inside one clique? */
    size_t best = SIZE_MAX;
    for (size_t j = 0; j < m->nc; j++) {
        const pgm_clique *c = &m->c[j];
        int all = 1;
        for (size_t a = 0; a < k && all; a++) all = has(c->attrs, c->k, attrs[a]);
        if (all && (best == SIZE_MAX || c->cells < m->c[best].cells)) best = j;
    }
    if (best != SIZE_MAX) {
        const pgm_clique *c = &m->c[best];
        sum_to(m, c, attrs, k, m->prob + c->off, out, qcells);
        double s = 0;
        for (size_t i = 0; i < qcells; i++) s += out[i];
        for (size_t i = 0; i < qcells; i++) out[i] = s > 0 ? out[i] * m->total / s : 0;
        return PG_OK;
    }

    /* Cover the set greedily, mark the paths to the root, prune the top. */
    char *mark = calloc(m->nc, 1), *chosen = calloc(m->nc, 1);
    size_t *nchild = calloc(m->nc, sizeof *nchild);
    factor *fs = calloc(m->nc, sizeof *fs);
    factor **pick = calloc(m->nc + 1, sizeof *pick);
    size_t *vars = NULL;
    if (!mark || !chosen || !nchild || !fs || !pick) {
        rc = pg_error_set(err, PG_ENOMEM, "pgm: out of memory");
        goto done;
    }
    {
        int covered[PG_PGM_MAX_CLIQUE] = {0};
        size_t left = k;
        while (left) {
            size_t bj = SIZE_MAX, bn = 0;
            for (size_t j = 0; j < m->nc; j++) {
                size_t n = 0;
                for (size_t a = 0; a < k; a++)
                    n += !covered[a] && has(m->c[j].attrs, m->c[j].k, attrs[a]);
                if (n > bn || (n == bn && n && m->c[j].cells < m->c[bj].cells)) bj = j, bn = n;
            }
            chosen[bj] = 1;
            for (size_t a = 0; a < k; a++)
                if (!covered[a] && has(m->c[bj].attrs, m->c[bj].k, attrs[a]))
                    covered[a] = 1, left--;
        }
    }
    for (size_t j = 0; j < m->nc; j++)
        if (chosen[j])
            for (size_t x = j; x != SIZE_MAX && !mark[x]; x = m->c[x].parent) mark[x] = 1;
    for (size_t j = 1; j < m->nc; j++)
        if (mark[j]) nchild[m->c[j].parent]++;
    size_t top = 0;
    while (!chosen[top] && nchild[top] == 1) {
        mark[top] = 0;
        size_t next = SIZE_MAX;
        for (size_t j = top + 1; j < m->nc && next == SIZE_MAX; j++)
            if (mark[j] && m->c[j].parent == top) next = j;
        top = next;
    }
    /* Factors: p_top, and p_C / p_sep(C) below it. */
    size_t nf = 0, nv = 0;
    vars = malloc(m->nattr * sizeof *vars);
    if (!vars) {
        rc = pg_error_set(err, PG_ENOMEM, "pgm: out of memory");
        goto done;
    }
    for (size_t j = 0; j < m->nc; j++) {
        if (!mark[j]) continue;
        const pgm_clique *c = &m->c[j];
        factor *f = &fs[nf++];
        f->k = c->k;
        memcpy(f->attrs, c->attrs, c->k * sizeof *c->attrs);
        f->cells = c->cells;
        f->v = malloc(c->cells * sizeof *f->v);
        if (!f->v) {
            rc = pg_error_set(err, PG_ENOMEM, "pgm: out of memory");
            goto done;
        }
        memcpy(f->v, m->prob + c->off, c->cells * sizeof *f->v);
        if (j != top) {
            double *s = malloc(c->sep_cells * sizeof *s);
            if (!s) {
                rc = pg_error_set(err, PG_ENOMEM, "pgm: out of memory");
                goto done;
            }
            sum_to(m, c, c->sep, c->sk, f->v, s, c->sep_cells);
            size_t idx[PGM_CHUNK];
            pgm_odo o;
            pgm_odo_start(&o, &c->down);
            for (size_t b = 0; b < c->cells; b += PGM_CHUNK) {
                size_t len = c->cells - b < PGM_CHUNK ? c->cells - b : PGM_CHUNK;
                pgm_odo_fill(&o, &c->down, idx, len);
                for (size_t t = 0; t < len; t++) {
                    double d = s[idx[t]];
                    f->v[b + t] = d > 0 ? f->v[b + t] / d : 0;
                }
            }
            free(s);
        }
        for (size_t a = 0; a < c->k; a++)
            if (!has(attrs, k, c->attrs[a]) && !has(vars, nv, c->attrs[a])) {
                vars[nv++] = c->attrs[a];
            }
    }
    /* Eliminate the other variables. */
    size_t live = nf;
    while (nv) {
        size_t bv = 0, bku = 0, bu[PGM_VE_MAX];
        double bcells = INFINITY;
        for (size_t x = 0; x < nv; x++) {
            size_t u[PGM_VE_MAX * 2], ku = 0;
            int ok = 1;
            for (size_t f = 0; f < live && ok; f++) {
                if (!has(fs[f].attrs, fs[f].k, vars[x])) continue;
                size_t t[PGM_VE_MAX * 2];
                size_t kt = set_union(u, ku, fs[f].attrs, fs[f].k, t);
                if (kt > PGM_VE_MAX) ok = 0;
                memcpy(u, t, kt * sizeof *t);
                ku = kt;
            }
            if (!ok) continue;
            double cells = 1;
            for (size_t a = 0; a < ku; a++) cells *= (double)m->sizes[u[a]];
            if (cells < bcells) {
                bcells = cells, bv = x, bku = ku;
                memcpy(bu, u, ku * sizeof *u);
            }
        }
        if (bcells > lim) {
            rc = pg_error_set(err, PG_ERANGE,
                              "pgm: this marginal needs an intermediate table of %.0f cells "
                              "(bound %.0f)",
                              bcells, lim);
            goto done;
        }
        size_t np = 0;
        for (size_t f = 0; f < live; f++)
            if (has(fs[f].attrs, fs[f].k, vars[bv])) pick[np++] = &fs[f];
        factor r = {0};
        if (product_sumout(m, pick, np, bu, bku, vars[bv], &r)) {
            rc = pg_error_set(err, PG_ENOMEM, "pgm: out of memory");
            goto done;
        }
        /* Replace the used factors by r. */
        size_t w = 0;
        for (size_t f = 0; f < live; f++) {
            if (has(fs[f].attrs, fs[f].k, vars[bv]))
                free(fs[f].v);
            else
                fs[w++] = fs[f];
        }
        fs[w++] = r;
        for (size_t f = w; f < live; f++) fs[f].v = NULL;
        live = w;
        vars[bv] = vars[--nv];
    }
    {
        for (size_t f = 0; f < live; f++) pick[f] = &fs[f];
        factor r = {0};
        if (product_sumout(m, pick, live, attrs, k, SIZE_MAX, &r)) {
            rc = pg_error_set(err, PG_ENOMEM, "pgm: out of memory");
            goto done;
        }
        double s = 0;
        for (size_t i = 0; i < qcells; i++) s += r.v[i];
        for (size_t i = 0; i < qcells; i++) out[i] = s > 0 ? r.v[i] * m->total / s : 0;
        free(r.v);
    }
done:
    if (fs)
        for (size_t f = 0; f < m->nc; f++) free(fs[f].v);
    free(fs);
    free(vars);
    free(pick);
    free(mark);
    free(chosen);
    free(nchild);
    return rc;
}

int pg_pgm_sample(const pg_pgm_model *m, pg_rng *rng, size_t n, uint32_t *codes, pg_error *err)
{
    if (!m || !rng || (n && !codes))
        return pg_error_set(err, PG_EINVAL, "pgm: sample needs a model, an rng and output");
    for (size_t r = 0; r < n; r++) {
        uint32_t *row = codes + r * m->nattr;
        for (size_t j = 0; j < m->nc; j++) {
            const pgm_clique *c = &m->c[j];
            size_t s = 0;
            for (size_t a = 0; a < c->sk; a++) s = s * m->sizes[c->sep[a]] + row[c->sep[a]];
            const double *cdf = m->cdf + c->cdf_off + s * c->new_cells;
            const size_t R = c->new_cells;
            size_t pick;
            double tot = cdf[R - 1];
            if (tot > 0) {
                double u = pg_rng_uniform(rng) * tot;
                size_t lo = 0, hi = R - 1; /* smallest i with cdf[i] > u */
                while (lo < hi) {
                    size_t mid = lo + (hi - lo) / 2;
                    if (cdf[mid] > u)
                        hi = mid;
                    else
                        lo = mid + 1;
                }
                pick = lo;
            } else {
                pick = (size_t)pg_rng_below(rng, R);
            }
            for (size_t a = c->nk; a-- > 0;) {
                size_t sz = m->sizes[c->newa[a]];
                row[c->newa[a]] = (uint32_t)(pick % sz);
                pick /= sz;
            }
        }
    }
    return PG_OK;
}
