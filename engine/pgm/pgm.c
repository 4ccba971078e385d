/* engine/pgm/pgm.c - belief propagation and the fit (see pgm.h).
 *
 * Fit: entropic mirror descent on the log-potentials. With mu = N p and the
 * mirror map h(mu) = sum_x mu(x) log mu(x) over the joint, the step
 * theta' = theta - a * G (G_C the measurement gradients broadcast onto their
 * cliques) is exactly the mirror step in mu, and its Bregman term
 * D_h(mu', mu) = N KL(p' || p) has a closed form from quantities BP already
 * gives: N KL = -a <g, mu'> - N (logZ' - logZ). The step is accepted when the
 * relative-smoothness inequality
 *     L(mu') <= L(mu) + <g, mu' - mu> + D_h(mu', mu) / a
 *            =  L(mu) - <g, mu> - N (logZ' - logZ) / a
 * holds (then L decreases and the O(1/t) rate of mirror descent holds; Lu,
 * Freund, Nesterov 2018), else a is halved. a0 = 1 / (N sum_i 1/sigma_i^2)
 * always satisfies it (Pinsker: D_h >= ||mu' - mu||_1^2 / (2N), and the
 * quadratic's curvature in l1 is at most sum_i 1/sigma_i^2), so the search
 * never goes below a0. Each iteration first tries twice the last step.
 *
 * Stopping: the Frank-Wolfe gap <g, mu> - min over the polytope <g, s>
 * bounds L(mu) - min L; the minimum over the marginal polytope of a junction
 * tree is N times a min-sum over joint configurations, one pass up the tree.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pgm/pgm_internal.h"

/* ---- table kernels along a projection ---------------------------------- */

static void sum_project(const double *src, const pgm_proj *p, size_t n, double *out, size_t outn)
{
    size_t idx[PGM_CHUNK];
    pgm_odo o;
    pgm_odo_start(&o, p);
    memset(out, 0, outn * sizeof *out);
    for (size_t b = 0; b < n; b += PGM_CHUNK) {
        size_t len = n - b < PGM_CHUNK ? n - b : PGM_CHUNK;
        pgm_odo_fill(&o, p, idx, len);
        for (size_t t = 0; t < len; t++) out[idx[t]] += src[b + t];
    }
}

static void bcast_add(double *dst, const pgm_proj *p, size_t n, const double *v, double scale)
{
    size_t idx[PGM_CHUNK];
    pgm_odo o;
    pgm_odo_start(&o, p);
    for (size_t b = 0; b < n; b += PGM_CHUNK) {
        size_t len = n - b < PGM_CHUNK ? n - b : PGM_CHUNK;
        pgm_odo_fill(&o, p, idx, len);
        for (size_t t = 0; t < len; t++) dst[b + t] += scale * v[idx[t]];
    }
}

/* out = log sum_{cells mapping to j} exp(src - sub[j]) (sub may be NULL). */
static void lse_project(const double *src, const double *sub, const pgm_proj *p, size_t n,
                        double *out, size_t outn, double *acc)
{
    size_t idx[PGM_CHUNK];
    pgm_odo o;
    for (size_t j = 0; j < outn; j++) out[j] = -INFINITY, acc[j] = 0;
    pgm_odo_start(&o, p);
    for (size_t b = 0; b < n; b += PGM_CHUNK) {
        size_t len = n - b < PGM_CHUNK ? n - b : PGM_CHUNK;
        pgm_odo_fill(&o, p, idx, len);
        for (size_t t = 0; t < len; t++) {
            double v = src[b + t] - (sub ? sub[idx[t]] : 0);
            if (v > out[idx[t]]) out[idx[t]] = v;
        }
    }
    pgm_odo_start(&o, p);
    for (size_t b = 0; b < n; b += PGM_CHUNK) {
        size_t len = n - b < PGM_CHUNK ? n - b : PGM_CHUNK;
        pgm_odo_fill(&o, p, idx, len);
        for (size_t t = 0; t < len; t++) {
            size_t j = idx[t];
            acc[j] += exp(src[b + t] - (sub ? sub[j] : 0) - out[j]);
        }
    }
    for (size_t j = 0; j < outn; j++)
        if (out[j] > -INFINITY) out[j] += log(acc[j]);
}

static void min_project(const double *src, const pgm_proj *p, size_t n, double *out, size_t outn)
{
    size_t idx[PGM_CHUNK];
    pgm_odo o;
    for (size_t j = 0; j < outn; j++) out[j] = INFINITY;
    pgm_odo_start(&o, p);
    for (size_t b = 0; b < n; b += PGM_CHUNK) {
        size_t len = n - b < PGM_CHUNK ? n - b : PGM_CHUNK;
        pgm_odo_fill(&o, p, idx, len);
        for (size_t t = 0; t < len; t++)
            if (src[b + t] < out[idx[t]]) out[idx[t]] = src[b + t];
    }
}

/* ---- belief propagation -------------------------------------------------- */

int pgm_bp_work_alloc(const pg_pgm_model *m, pgm_bp_work *w)
{
    size_t smax = 1;
    for (size_t j = 0; j < m->nc; j++)
        if (m->c[j].sep_cells > smax) smax = m->c[j].sep_cells;
    w->up = malloc((m->sepcells + 1) * sizeof *w->up);
    w->down = malloc((m->sepcells + 1) * sizeof *w->down);
    w->scratch = malloc(smax * sizeof *w->scratch);
    if (!w->up || !w->down || !w->scratch) {
        pgm_bp_work_free(w);
        return PG_ENOMEM;
    }
    return PG_OK;
}

void pgm_bp_work_free(pgm_bp_work *w)
{
    free(w->up);
    free(w->down);
    free(w->scratch);
    w->up = w->down = w->scratch = NULL;
}

void pgm_bp(const pg_pgm_model *m, const double *theta, double *prob, double *logz, pgm_bp_work *w)
{
    memcpy(prob, theta, m->cells * sizeof *prob);
    /* Collect: children (higher indices) send to parents. */
    for (size_t j = m->nc; j-- > 1;) {
        const pgm_clique *c = &m->c[j], *p = &m->c[c->parent];
        double *up = w->up + c->sep_off;
        lse_project(prob + c->off, NULL, &c->down, c->cells, up, c->sep_cells, w->scratch);
        bcast_add(prob + p->off, &c->up, p->cells, up, 1.0);
    }
    const pgm_clique *r = &m->c[0];
    pgm_proj all;
    pgm_proj_make(m->sizes, r->attrs, r->k, NULL, 0, &all);
    double lz;
    lse_project(prob + r->off, NULL, &all, r->cells, &lz, 1, w->scratch);
    /* Distribute: the parent's full belief minus what the child sent. */
    for (size_t j = 1; j < m->nc; j++) {
        const pgm_clique *c = &m->c[j], *p = &m->c[c->parent];
        double *down = w->down + c->sep_off;
        lse_project(prob + p->off, w->up + c->sep_off, &c->up, p->cells, down, c->sep_cells,
                    w->scratch);
        bcast_add(prob + c->off, &c->down, c->cells, down, 1.0);
    }
    for (size_t i = 0; i < m->cells; i++) prob[i] = exp(prob[i] - lz);
    *logz = lz;
}

/* min over joint configurations of sum_C G_C(x_C), using work (cells) and
 * sep (sepcells) as scratch. */
static double tree_min(const pg_pgm_model *m, const double *G, double *work, double *sep)
{
    memcpy(work, G, m->cells * sizeof *work);
    for (size_t j = m->nc; j-- > 1;) {
        const pgm_clique *c = &m->c[j], *p = &m->c[c->parent];
        double *s = sep + c->sep_off;
        min_project(work + c->off, &c->down, c->cells, s, c->sep_cells);
        bcast_add(work + p->off, &c->up, p->cells, s, 1.0);
    }
    double mn = INFINITY;
    for (size_t i = 0; i < m->c[0].cells; i++)
        if (work[i] < mn) mn = work[i];
    return mn;
}

/* ---- model finishing ------------------------------------------------------ */

int pgm_build_cdf(pg_pgm_model *m, pg_error *err)
{
    free(m->cdf);
    m->cdf = malloc((m->cells ? m->cells : 1) * sizeof *m->cdf);
    if (!m->cdf) return pg_error_set(err, PG_ENOMEM, "pgm: out of memory for sampling tables");
    for (size_t j = 0; j < m->nc; j++) {
        const pgm_clique *c = &m->c[j];
        pgm_proj ps, pn;
        pgm_proj_make(m->sizes, c->attrs, c->k, c->sep, c->sk, &ps);
        pgm_proj_make(m->sizes, c->attrs, c->k, c->newa, c->nk, &pn);
        size_t is[PGM_CHUNK], in[PGM_CHUNK];
        pgm_odo os, on;
        pgm_odo_start(&os, &ps);
        pgm_odo_start(&on, &pn);
        double *t = m->cdf + c->cdf_off;
        const double *pr = m->prob + c->off;
        for (size_t b = 0; b < c->cells; b += PGM_CHUNK) {
            size_t len = c->cells - b < PGM_CHUNK ? c->cells - b : PGM_CHUNK;
            pgm_odo_fill(&os, &ps, is, len);
            pgm_odo_fill(&on, &pn, in, len);
            for (size_t u = 0; u < len; u++) t[is[u] * c->new_cells + in[u]] = pr[b + u];
        }
        for (size_t s = 0; s < c->sep_cells; s++) {
            double run = 0, *row = t + s * c->new_cells;
            for (size_t r = 0; r < c->new_cells; r++) run += row[r], row[r] = run;
        }
    }
    return PG_OK;
}

int pgm_finalize(pg_pgm_model *m, pg_error *err)
{
    pgm_bp_work w = {0};
    free(m->prob);
    m->prob = malloc((m->cells ? m->cells : 1) * sizeof *m->prob);
    if (!m->prob || pgm_bp_work_alloc(m, &w))
        return pg_error_set(err, PG_ENOMEM, "pgm: out of memory for %zu cells", m->cells);
    double lz;
    pgm_bp(m, m->theta, m->prob, &lz, &w);
    pgm_bp_work_free(&w);
    int ok = isfinite(lz);
    for (size_t i = 0; i < m->cells && ok; i++) ok = isfinite(m->prob[i]);
    if (!ok) return pg_error_set(err, PG_ENUMERIC, "pgm: the model does not normalize");
    return pgm_build_cdf(m, err);
}

/* ---- fit ------------------------------------------------------------------ */

typedef struct fit_meas {
    size_t clique, off, cells;
    pgm_proj proj; /* clique cells -> measurement cells */
    double w;      /* 1 / sigma^2 */
    const double *y;
} fit_meas;

/* mu_i = N * marginal of prob; returns L. */
static double eval_meas(const pg_pgm_model *m, const double *prob, const fit_meas *fm, size_t nm,
                        double N, double *mu)
{
    double L = 0;
    for (size_t i = 0; i < nm; i++) {
        const pgm_clique *c = &m->c[fm[i].clique];
        double *o = mu + fm[i].off;
        sum_project(prob + c->off, &fm[i].proj, c->cells, o, fm[i].cells);
        double s = 0;
        for (size_t j = 0; j < fm[i].cells; j++) {
            o[j] *= N;
            double d = o[j] - fm[i].y[j];
            s += d * d;
        }
        L += 0.5 * fm[i].w * s;
    }
    return L;
}

static int warm_init(const pg_pgm_model *m, const pg_pgm_model *warm, double *theta)
{
    if (warm->nattr != m->nattr || memcmp(warm->sizes, m->sizes, m->nattr * sizeof *m->sizes))
        return PG_EINVAL;
    double *sep = malloc((m->sepcells + 1) * sizeof *sep);
    if (!sep) return PG_ENOMEM;
    int rc = PG_OK;
    for (size_t j = 0; j < m->nc && !rc; j++) {
        const pgm_clique *c = &m->c[j];
        double *t = theta + c->off;
        if ((rc = pg_pgm_marginal(warm, c->attrs, c->k, t, NULL))) break;
        double *s = sep + c->sep_off;
        if (j) sum_project(t, &c->down, c->cells, s, c->sep_cells);
        for (size_t i = 0; i < c->cells; i++) t[i] = log(fmax(t[i], 1e-300));
        if (j) {
            for (size_t i = 0; i < c->sep_cells; i++) s[i] = log(fmax(s[i], 1e-300));
            bcast_add(t, &c->down, c->cells, s, -1.0);
        }
    }
    free(sep);
    return rc;
}

int pg_pgm_fit(const size_t *sizes, size_t nattr, const pg_pgm_measure *ms, size_t nm,
               const pg_pgm_fit_opts *opts, const pg_pgm_model *warm, pg_pgm_model **out,
               pg_error *err)
{
    pg_pgm_fit_opts o = opts ? *opts : (pg_pgm_fit_opts){0};
    if (!out) return pg_error_set(err, PG_EINVAL, "pgm: no output model");
    if (o.max_iters == 0) o.max_iters = 2000;
    if (o.tol == 0) o.tol = 1e-6;
    if (o.max_cells == 0) o.max_cells = PG_PGM_DEFAULT_MAX_CELLS;
    if (!(o.tol > 0) || !isfinite(o.tol) || !(o.max_cells >= 1) || isnan(o.total) || isinf(o.total))
        return pg_error_set(err, PG_EINVAL, "pgm: invalid fit options");
    if (nm && !ms) return pg_error_set(err, PG_EINVAL, "pgm: no measurements");
    for (size_t i = 0; i < nm; i++) {
        char what[48];
        snprintf(what, sizeof what, "measurement %zu", i);
        if (nattr && sizes) {
            int rc = pgm_check_set(sizes, nattr, ms[i].attrs, ms[i].k, what, err);
            if (rc) return rc;
        }
        if (!(ms[i].sigma > 0) || !isfinite(ms[i].sigma) || !ms[i].y)
            return pg_error_set(err, PG_EINVAL, "pgm: measurement %zu needs y and sigma > 0", i);
    }
    const size_t **sets = malloc((nm + 1) * sizeof *sets);
    size_t *setk = malloc((nm + 1) * sizeof *setk);
    if (!sets || !setk) {
        free(sets);
        free(setk);
        return pg_error_set(err, PG_ENOMEM, "pgm: out of memory");
    }
    for (size_t i = 0; i < nm; i++) sets[i] = ms[i].attrs, setk[i] = ms[i].k;
    pg_pgm_model *m = NULL;
    int rc =
        pgm_structure(sizes, nattr, (const size_t *const *)sets, setk, nm, o.max_cells, &m, err);
    free(sets);
    free(setk);
    if (rc) return rc;

    fit_meas *fm = calloc(nm + 1, sizeof *fm);
    double *theta = NULL, *theta0 = NULL, *G = NULL, *mu = NULL, *mu0 = NULL, *g = NULL;
    pgm_bp_work w = {0};
    if (!fm) goto nomem;
    size_t moff = 0;
    double N = o.total, num = 0, den = 0, wsum = 0;
    for (size_t i = 0; i < nm; i++) {
        size_t cells = 1;
        for (size_t a = 0; a < ms[i].k; a++) cells *= sizes[ms[i].attrs[a]];
        /* Smallest clique holding the set (one exists: the set is complete
         * in the triangulated graph). */
        size_t best = SIZE_MAX;
        for (size_t j = 0; j < m->nc; j++) {
            const pgm_clique *c = &m->c[j];
            size_t x = 0, hit = 0;
            for (size_t a = 0; a < ms[i].k; a++) {
                while (x < c->k && c->attrs[x] < ms[i].attrs[a]) x++;
                hit += x < c->k && c->attrs[x] == ms[i].attrs[a];
            }
            if (hit == ms[i].k && (best == SIZE_MAX || c->cells < m->c[best].cells)) best = j;
        }
        fm[i].clique = best;
        fm[i].off = moff;
        fm[i].cells = cells;
        fm[i].y = ms[i].y;
        fm[i].w = 1.0 / (ms[i].sigma * ms[i].sigma);
        pgm_proj_make(sizes, m->c[best].attrs, m->c[best].k, ms[i].attrs, ms[i].k, &fm[i].proj);
        moff += cells;
        double s = 0;
        for (size_t j = 0; j < cells; j++) {
            if (!isfinite(ms[i].y[j])) {
                rc = pg_error_set(err, PG_EINVAL, "pgm: measurement %zu has a non-finite cell", i);
                goto fail;
            }
            s += ms[i].y[j];
        }
        double var = ms[i].sigma * ms[i].sigma * (double)cells;
        num += s / var;
        den += 1.0 / var;
        wsum += fm[i].w;
    }
    if (!(N > 0)) N = nm ? fmax(1.0, num / den) : 1.0;
    m->total = N;

    theta = calloc(m->cells, sizeof *theta);
    theta0 = malloc(m->cells * sizeof *theta0);
    G = malloc(m->cells * sizeof *G);
    m->prob = malloc(m->cells * sizeof *m->prob);
    mu = malloc((moff + 1) * sizeof *mu);
    mu0 = malloc((moff + 1) * sizeof *mu0);
    g = malloc((moff + 1) * sizeof *g);
    if (!theta || !theta0 || !G || !m->prob || !mu || !mu0 || !g || pgm_bp_work_alloc(m, &w))
        goto nomem;
    if (warm && warm_init(m, warm, theta)) memset(theta, 0, m->cells * sizeof *theta);

    double lz, L;
    pgm_bp(m, theta, m->prob, &lz, &w);
    L = eval_meas(m, m->prob, fm, nm, N, mu);
    const double a0 = nm ? 1.0 / (N * wsum) : 0;
    double a = a0, gap = 0;
    size_t it = 0;
    int converged = nm == 0;
    for (; !converged && it < o.max_iters; it++) {
        if (!isfinite(L) || !isfinite(lz)) {
            rc = pg_error_set(err, PG_ENUMERIC, "pgm: the fit diverged at iteration %zu", it);
            goto fail;
        }
        double gm = 0;
        memset(G, 0, m->cells * sizeof *G);
        for (size_t i = 0; i < nm; i++) {
            const pgm_clique *c = &m->c[fm[i].clique];
            double *gi = g + fm[i].off;
            const double *mi = mu + fm[i].off;
            for (size_t j = 0; j < fm[i].cells; j++) {
                gi[j] = fm[i].w * (mi[j] - fm[i].y[j]);
                gm += gi[j] * mi[j];
            }
            bcast_add(G + c->off, &fm[i].proj, c->cells, gi, 1.0);
        }
        gap = gm - N * tree_min(m, G, theta0, w.up);
        if (gap <= o.tol * (1 + L)) {
            converged = 1;
            break;
        }
        memcpy(theta0, theta, m->cells * sizeof *theta);
        memcpy(mu0, mu, moff * sizeof *mu);
        const double L0 = L, lz0 = lz;
        a *= 2;
        for (;;) {
            for (size_t i = 0; i < m->cells; i++) theta[i] = theta0[i] - a * G[i];
            pgm_bp(m, theta, m->prob, &lz, &w);
            L = eval_meas(m, m->prob, fm, nm, N, mu);
            double rhs = L0 - gm - N * (lz - lz0) / a;
            double slack = 1e-12 * (1 + fabs(L0) + fabs(gm)) +
                           64 * DBL_EPSILON * N * (fabs(lz) + fabs(lz0)) / a;
            if (L <= rhs + slack || a <= a0) break;
            a = fmax(0.5 * a, a0);
        }
    }
    if (!isfinite(L) || !isfinite(lz)) {
        rc = pg_error_set(err, PG_ENUMERIC, "pgm: the fit diverged");
        goto fail;
    }
    m->theta = theta;
    theta = NULL;
    m->stats = (pg_pgm_fit_stats){.iters = it, .loss = L, .gap = gap, .converged = converged};
    if ((rc = pgm_build_cdf(m, err))) goto fail;
    free(fm);
    free(theta0);
    free(G);
    free(mu);
    free(mu0);
    free(g);
    pgm_bp_work_free(&w);
    *out = m;
    return PG_OK;
nomem:
    rc = pg_error_set(err, PG_ENOMEM, "pgm: out of memory for a model of %zu cells",
                      m ? m->cells : 0);
fail:
    free(fm);
    free(theta);
    free(theta0);
    free(G);
    free(mu);
    free(mu0);
    free(g);
    pgm_bp_work_free(&w);
    pg_pgm_model_free(m);
    return rc;
}

/* ---- accessors ------------------------------------------------------------ */

double pg_pgm_model_total(const pg_pgm_model *m)
{
    return m ? m->total : 0;
}
double pg_pgm_model_cells(const pg_pgm_model *m)
{
    return m ? (double)m->cells : 0;
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
    return m ? m->nc : 0;
}
const size_t *pg_pgm_model_clique(const pg_pgm_model *m, size_t j, size_t *k)
{
    if (!m || j >= m->nc) {
        if (k) *k = 0;
        return NULL;
    }
    if (k) *k = m->c[j].k;
    return m->c[j].attrs;
}
void pg_pgm_model_stats(const pg_pgm_model *m, pg_pgm_fit_stats *stats)
{
    *stats = m ? m->stats : (pg_pgm_fit_stats){0};
}
void pg_pgm_model_free(pg_pgm_model *m)
{
    if (!m) return;
    free(m->sizes);
    free(m->c);
    free(m->theta);
    free(m->prob);
    free(m->cdf);
    free(m);
}
