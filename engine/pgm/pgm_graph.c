/* engine/pgm/pgm_graph.c - from measured sets to a junction tree.
 *
 * The measured sets make a graph over the attributes; greedy elimination
 * triangulates it (the vertex whose elimination clique has the fewest cells,
 * which is what bounds memory; ties by fewest fill edges, then lowest index,
 * so the result never depends on anything but the input). The elimination
 * cliques that are not inside another are the maximal cliques of the chordal
 * graph; a maximum spanning tree on separator sizes (Prim) joins them into a
 * junction tree, which has the running-intersection property because the
 * graph is chordal (Jensen and Jensen 1994). Cliques are renumbered in Prim's
 * insertion order so a parent precedes its children.
 */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pgm/pgm_internal.h"

int pgm_check_set(const size_t *sizes, size_t nattr, const size_t *a, size_t k, const char *what,
                  pg_error *err)
{
    if (k > PG_PGM_MAX_CLIQUE)
        return pg_error_set(err, PG_EINVAL, "pgm: %s has %zu attributes, at most %d allowed", what,
                            k, PG_PGM_MAX_CLIQUE);
    if (k && !a) return pg_error_set(err, PG_EINVAL, "pgm: %s has no attribute list", what);
    for (size_t j = 0; j < k; j++) {
        if (a[j] >= nattr)
            return pg_error_set(err, PG_EINVAL, "pgm: %s names attribute %zu of %zu", what, a[j],
                                nattr);
        if (j && a[j] <= a[j - 1])
            return pg_error_set(err, PG_EINVAL, "pgm: %s attributes must be strictly increasing",
                                what);
    }
    (void)sizes;
    return PG_OK;
}

static int check_domain(const size_t *sizes, size_t nattr, pg_error *err)
{
    if (nattr == 0 || !sizes) return pg_error_set(err, PG_EINVAL, "pgm: empty domain");
    if (nattr > PG_PGM_MAX_ATTRS)
        return pg_error_set(err, PG_EINVAL, "pgm: %zu attributes, at most %d allowed", nattr,
                            PG_PGM_MAX_ATTRS);
    for (size_t i = 0; i < nattr; i++)
        if (sizes[i] < 1 || sizes[i] > PG_PGM_MAX_LEVELS)
            return pg_error_set(err, PG_EINVAL, "pgm: attribute %zu has %zu levels (1..%zu)", i,
                                sizes[i], PG_PGM_MAX_LEVELS);
    return PG_OK;
}

void pgm_proj_make(const size_t *sizes, const size_t *a, size_t ka, const size_t *b, size_t kb,
                   pgm_proj *p)
{
    p->k = ka;
    /* Strides of b's own row-major layout, then matched into a's order. */
    size_t sb[PGM_VE_MAX], s = 1;
    for (size_t j = kb; j-- > 0;) {
        sb[j] = s;
        s *= sizes[b[j]];
    }
    size_t jb = 0;
    for (size_t i = 0; i < ka; i++) {
        p->dim[i] = sizes[a[i]];
        while (jb < kb && b[jb] < a[i]) jb++;
        p->stride[i] = (jb < kb && b[jb] == a[i]) ? sb[jb] : 0;
    }
    p->inner = 1;
    p->ko = ka;
    p->inner_kept = ka == 0 || p->stride[ka - 1] != 0;
    while (p->ko > 0 && (p->stride[p->ko - 1] != 0) == p->inner_kept) {
        p->ko--;
        p->inner *= p->dim[p->ko];
    }
}

/* The triangulation's maximal cliques: sets in a pool, ncl of them. */
typedef struct tri {
    size_t *pool, *start, *k;
    size_t ncl;
    double *cells;
} tri;

static void tri_free(tri *t)
{
    free(t->pool);
    free(t->start);
    free(t->k);
    free(t->cells);
    memset(t, 0, sizeof *t);
}

static int subset(const size_t *a, size_t ka, const size_t *b, size_t kb)
{
    size_t j = 0;
    for (size_t i = 0; i < ka; i++) {
        while (j < kb && b[j] < a[i]) j++;
        if (j == kb || b[j] != a[i]) return 0;
    }
    return 1;
}

static int triangulate(const size_t *sizes, size_t nattr, const size_t *const *sets,
                       const size_t *set_k, size_t nsets, tri *out, pg_error *err)
{
    const size_t W = (nattr + 63) / 64;
    uint64_t *adj = calloc(nattr * W, sizeof *adj);
    uint64_t *rem = calloc(W, sizeof *rem);
    size_t *nb = malloc(nattr * sizeof *nb);
    size_t *start = malloc(nattr * sizeof *start), *kk = malloc(nattr * sizeof *kk);
    double *cells = malloc(nattr * sizeof *cells);
    size_t cap = 4 * nattr + 16, used = 0;
    size_t *pool = malloc(cap * sizeof *pool);
    int rc = PG_OK;
    if (!adj || !rem || !nb || !start || !kk || !cells || !pool) {
        rc = pg_error_set(err, PG_ENOMEM, "pgm: out of memory triangulating %zu attributes", nattr);
        goto done;
    }
#define ADJ(u, v) ((adj[(u)*W + (v) / 64] >> ((v) % 64)) & 1u)
#define SET(u, v) (adj[(u)*W + (v) / 64] |= (uint64_t)1 << ((v) % 64))
    for (size_t s = 0; s < nsets; s++)
        for (size_t i = 0; i < set_k[s]; i++)
            for (size_t j = 0; j < set_k[s]; j++)
                if (i != j) SET(sets[s][i], sets[s][j]);
    for (size_t v = 0; v < nattr; v++) rem[v / 64] |= (uint64_t)1 << (v % 64);

    for (size_t step = 0; step < nattr; step++) {
        size_t best = SIZE_MAX, best_fill = 0;
        double best_cells = 0;
        for (size_t v = 0; v < nattr; v++) {
            if (!((rem[v / 64] >> (v % 64)) & 1u)) continue;
            size_t d = 0;
            double c = (double)sizes[v];
            for (size_t w = 0; w < W; w++) {
                uint64_t bits = adj[v * W + w] & rem[w];
                while (bits) {
                    size_t u = w * 64 + (size_t)__builtin_ctzll(bits);
                    bits &= bits - 1;
                    nb[d++] = u;
                    c *= (double)sizes[u];
                }
            }
            if (best != SIZE_MAX && c > best_cells) continue;
            size_t fill = 0;
            for (size_t i = 0; i < d; i++)
                for (size_t j = i + 1; j < d; j++) fill += !ADJ(nb[i], nb[j]);
            if (best == SIZE_MAX || c < best_cells || fill < best_fill) {
                best = v;
                best_cells = c;
                best_fill = fill;
            }
        }
        /* Record {best} + remaining neighbours (sorted), add fill, remove. */
        size_t d = 0;
        for (size_t w = 0; w < W; w++) {
            uint64_t bits = adj[best * W + w] & rem[w];
            while (bits) {
                nb[d++] = w * 64 + (size_t)__builtin_ctzll(bits);
                bits &= bits - 1;
            }
        }
        if (used + d + 1 > cap) {
            size_t ncap = 2 * cap + d + 1;
            size_t *np = realloc(pool, ncap * sizeof *pool);
            if (!np) {
                rc = pg_error_set(err, PG_ENOMEM, "pgm: out of memory triangulating");
                goto done;
            }
            pool = np;
            cap = ncap;
        }
        size_t *cl = pool + used, n = 0;
        int placed = 0;
        for (size_t i = 0; i < d; i++) {
            if (!placed && best < nb[i]) cl[n++] = best, placed = 1;
            cl[n++] = nb[i];
        }
        if (!placed) cl[n++] = best;
        start[step] = used;
        kk[step] = n;
        cells[step] = best_cells;
        used += n;
        for (size_t i = 0; i < d; i++)
            for (size_t j = 0; j < d; j++)
                if (i != j) SET(nb[i], nb[j]);
        rem[best / 64] &= ~((uint64_t)1 << (best % 64));
    }
#undef ADJ
#undef SET
    /* Keep the maximal ones (an equal pair keeps the first). */
    size_t ncl = 0;
    for (size_t i = 0; i < nattr; i++) {
        int inside = 0;
        for (size_t j = 0; j < nattr && !inside; j++) {
            if (j == i || kk[j] < kk[i]) continue;
            if (kk[j] == kk[i] && j > i) continue;
            inside = subset(pool + start[i], kk[i], pool + start[j], kk[j]);
        }
        if (!inside) {
            start[ncl] = start[i];
            kk[ncl] = kk[i];
            cells[ncl] = cells[i];
            ncl++;
        }
    }
    out->pool = pool;
    out->start = start;
    out->k = kk;
    out->cells = cells;
    out->ncl = ncl;
    pool = NULL;
    start = kk = NULL;
    cells = NULL;
done:
    free(adj);
    free(rem);
    free(nb);
    free(start);
    free(kk);
    free(cells);
    free(pool);
    return rc;
}

static int check_sets(const size_t *sizes, size_t nattr, const size_t *const *sets,
                      const size_t *set_k, size_t nsets, pg_error *err)
{
    int rc = check_domain(sizes, nattr, err);
    if (rc) return rc;
    if (nsets && (!sets || !set_k)) return pg_error_set(err, PG_EINVAL, "pgm: no sets given");
    for (size_t s = 0; s < nsets; s++) {
        char what[48];
        snprintf(what, sizeof what, "set %zu", s);
        if ((rc = pgm_check_set(sizes, nattr, sets[s], set_k[s], what, err))) return rc;
    }
    return PG_OK;
}

int pg_pgm_plan_cells(const size_t *sizes, size_t nattr, const size_t *const *cliques,
                      const size_t *clique_k, size_t ncliques, double *cells, pg_error *err)
{
    int rc = check_sets(sizes, nattr, cliques, clique_k, ncliques, err);
    if (rc) return rc;
    tri t = {0};
    if ((rc = triangulate(sizes, nattr, cliques, clique_k, ncliques, &t, err))) return rc;
    double sum = 0;
    for (size_t i = 0; i < t.ncl; i++) sum += t.k[i] > PG_PGM_MAX_CLIQUE ? INFINITY : t.cells[i];
    tri_free(&t);
    *cells = sum;
    return PG_OK;
}

/* Separators, offsets and projections of a model whose cliques and parents
 * are set. */
static int fill_layout(pg_pgm_model *m, pg_error *err)
{
    size_t off = 0, soff = 0;
    for (size_t j = 0; j < m->nc; j++) {
        pgm_clique *c = &m->c[j];
        size_t cells = 1;
        for (size_t a = 0; a < c->k; a++)
            if (pg_size_mul(cells, m->sizes[c->attrs[a]], &cells))
                return pg_error_set(err, PG_ERANGE, "pgm: clique %zu overflows", j);
        c->cells = cells;
        c->off = off;
        c->cdf_off = off;
        if (pg_size_add(off, cells, &off) || (double)off > m->max_cells)
            return pg_error_set(err, PG_ERANGE,
                                "pgm: the model needs more than %.0f cells (bound %.0f)",
                                (double)off, m->max_cells);
        c->sk = 0;
        c->nk = 0;
        if (c->parent != SIZE_MAX) {
            const pgm_clique *p = &m->c[c->parent];
            for (size_t a = 0; a < c->k; a++) {
                int in = 0;
                for (size_t b = 0; b < p->k; b++) in |= p->attrs[b] == c->attrs[a];
                if (in)
                    c->sep[c->sk++] = c->attrs[a];
                else
                    c->newa[c->nk++] = c->attrs[a];
            }
        } else {
            for (size_t a = 0; a < c->k; a++) c->newa[c->nk++] = c->attrs[a];
        }
        c->sep_cells = 1;
        for (size_t a = 0; a < c->sk; a++) c->sep_cells *= m->sizes[c->sep[a]];
        c->new_cells = cells / c->sep_cells;
        c->sep_off = soff;
        soff += c->sep_cells;
        pgm_proj_make(m->sizes, c->attrs, c->k, c->sep, c->sk, &c->down);
        if (c->parent != SIZE_MAX) {
            const pgm_clique *p = &m->c[c->parent];
            pgm_proj_make(m->sizes, p->attrs, p->k, c->sep, c->sk, &c->up);
        }
    }
    m->cells = off;
    m->sepcells = soff;
    return PG_OK;
}

int pgm_structure_explicit(pg_pgm_model *m, pg_error *err)
{
    if (m->nc == 0) return pg_error_set(err, PG_EFORMAT, "pgm: a model needs a clique");
    /* Tree: the root is clique 0, every other parent precedes its child. */
    for (size_t j = 0; j < m->nc; j++) {
        const pgm_clique *c = &m->c[j];
        int rc = pgm_check_set(m->sizes, m->nattr, c->attrs, c->k, "clique", err);
        if (rc) {
            if (err) err->code = PG_EFORMAT; /* keep the message, the blob is at fault */
            return PG_EFORMAT;
        }
        if (j == 0 ? c->parent != SIZE_MAX : c->parent >= j)
            return pg_error_set(err, PG_EFORMAT, "pgm: clique %zu has an invalid parent", j);
    }
    /* Running intersection: for every attribute, the cliques holding it are
     * connected, i.e. exactly one of them has a parent without it. */
    size_t *tops = calloc(m->nattr, sizeof *tops);
    if (!tops) return pg_error_set(err, PG_ENOMEM, "pgm: out of memory");
    for (size_t j = 0; j < m->nc; j++) {
        const pgm_clique *c = &m->c[j];
        for (size_t a = 0; a < c->k; a++) {
            int in_parent = 0;
            if (c->parent != SIZE_MAX) {
                const pgm_clique *p = &m->c[c->parent];
                for (size_t b = 0; b < p->k; b++) in_parent |= p->attrs[b] == c->attrs[a];
            }
            if (!in_parent) tops[c->attrs[a]]++;
        }
    }
    for (size_t i = 0; i < m->nattr; i++)
        if (tops[i] != 1) {
            size_t parts = tops[i];
            free(tops);
            return pg_error_set(err, PG_EFORMAT,
                                "pgm: attribute %zu is in %zu disconnected parts of the tree", i,
                                parts);
        }
    free(tops);
    return fill_layout(m, err);
}

int pgm_structure(const size_t *sizes, size_t nattr, const size_t *const *sets, const size_t *set_k,
                  size_t nsets, double max_cells, pg_pgm_model **out, pg_error *err)
{
    int rc = check_sets(sizes, nattr, sets, set_k, nsets, err);
    if (rc) return rc;
    tri t = {0};
    if ((rc = triangulate(sizes, nattr, sets, set_k, nsets, &t, err))) return rc;
    double sum = 0;
    size_t kmax = 0;
    for (size_t i = 0; i < t.ncl; i++) {
        sum += t.cells[i];
        if (t.k[i] > kmax) kmax = t.k[i];
    }
    if (kmax > PG_PGM_MAX_CLIQUE) {
        tri_free(&t);
        return pg_error_set(err, PG_ERANGE,
                            "pgm: the junction tree needs a clique of %zu attributes (at most %d)",
                            kmax, PG_PGM_MAX_CLIQUE);
    }
    if (sum > max_cells) {
        tri_free(&t);
        return pg_error_set(err, PG_ERANGE,
                            "pgm: the model needs %.0f cells, above the bound of %.0f", sum,
                            max_cells);
    }
    pg_pgm_model *m = calloc(1, sizeof *m);
    size_t *order = malloc(t.ncl * sizeof *order), *par = malloc(t.ncl * sizeof *par);
    size_t *bestw = malloc(t.ncl * sizeof *bestw);
    char *in = calloc(t.ncl, 1);
    if (m) {
        m->sizes = malloc(nattr * sizeof *m->sizes);
        m->c = calloc(t.ncl, sizeof *m->c);
    }
    if (!m || !order || !par || !bestw || !in || !m->sizes || !m->c) {
        rc = pg_error_set(err, PG_ENOMEM, "pgm: out of memory building the junction tree");
        goto fail;
    }
    m->nattr = nattr;
    memcpy(m->sizes, sizes, nattr * sizeof *sizes);
    m->max_cells = max_cells;
    m->nc = t.ncl;
    /* Prim from the largest clique (ties: first), maximizing |separator|. */
    size_t root = 0;
    for (size_t i = 1; i < t.ncl; i++)
        if (t.cells[i] > t.cells[root]) root = i;
    for (size_t i = 0; i < t.ncl; i++) par[i] = SIZE_MAX, bestw[i] = 0;
    size_t cur = root;
    for (size_t n = 0; n < t.ncl; n++) {
        in[cur] = 1;
        order[n] = cur;
        const size_t *a = t.pool + t.start[cur];
        size_t next = SIZE_MAX;
        for (size_t i = 0; i < t.ncl; i++) {
            if (in[i]) continue;
            const size_t *b = t.pool + t.start[i];
            size_t w = 0, x = 0;
            for (size_t y = 0; y < t.k[i]; y++) {
                while (x < t.k[cur] && a[x] < b[y]) x++;
                w += x < t.k[cur] && a[x] == b[y];
            }
            if (par[i] == SIZE_MAX || w > bestw[i]) par[i] = cur, bestw[i] = w;
            if (next == SIZE_MAX || bestw[i] > bestw[next]) next = i;
        }
        cur = next;
    }
    /* Renumber in insertion order. */
    size_t *pos = bestw; /* reuse */
    for (size_t n = 0; n < t.ncl; n++) pos[order[n]] = n;
    for (size_t n = 0; n < t.ncl; n++) {
        size_t i = order[n];
        pgm_clique *c = &m->c[n];
        c->k = t.k[i];
        memcpy(c->attrs, t.pool + t.start[i], c->k * sizeof *c->attrs);
        c->parent = n == 0 ? SIZE_MAX : pos[par[i]];
    }
    if ((rc = fill_layout(m, err))) goto fail;
    free(order);
    free(par);
    free(bestw);
    free(in);
    tri_free(&t);
    *out = m;
    return PG_OK;
fail:
    free(order);
    free(par);
    free(bestw);
    free(in);
    tri_free(&t);
    pg_pgm_model_free(m);
    return rc;
}
