/* engine/pgm/pgm.c - belief propagation and the fit (see pgm.h).
 *
 * Fit: accelerated entropic mirror descent. With mu = N p and the mirror map
 * h(mu) = sum_x mu(x) log mu(x) over the joint, a step
 * theta' = theta - s * G (G_C the measurement gradients broadcast onto their
 * cliques) is exactly the mirror step in mu, and its Bregman term
 * D_h(mu', mu) = N KL(p' || p) has a closed form from what BP gives anyway:
 * N KL = -s <g, mu'> - N (logZ' - logZ). Tseng's accelerated scheme keeps a
 * mirror sequence z (a tree model), iterates x that are convex combinations
 * of z's clique marginals (still consistent, so x is a tree model too:
 * theta_C = log x_C - log x_sep), and gradient points y between them; its
 * constant l is backtracked on the inequality
 *     L(x') <= L(y) + <g, x' - y> + th^2 l D_h(z', z),
 * starting low and capped at l = N sum_i 1/sigma_i^2, where it always holds
 * (Pinsker: D_h >= ||.||_1^2 / (2N); the quadratic's l1 curvature is at most
 * sum_i 1/sigma_i^2). The momentum restarts whenever L(x) rises (O'Donoghue
 * and Candes 2015). Private-PGM's plain mirror descent with line search
 * reaches on a credit_data-sized tree after 8000 iterations the loss this
 * reaches after about 400 (bench/pgm.c).
 *
 * Stopping: every 8 iterations, the Frank-Wolfe gap <g, x> - min over the
 * polytope <g, s> (a certified bound on L(x) - min L; the minimum over the
 * marginal polytope of a junction tree is N times a min-sum over joint
 * configurations, one pass up the tree), or a stall (less than tol (1 + L)
 * gained per iteration over the last 8). The gap is loose near boundary
 * optima (it scales with N), so the stall is what usually stops a noisy fit.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pgm/pgm_internal.h"

/* ---- table kernels along a projection ---------------------------------- */

/* The kernels walk the source in blocks (see pgm_proj): per block one
 * target base index j, then a contiguous inner loop. */
#define PGM_BLOCKS(p, n, BODY)                                                                     \
    do {                                                                                           \
        size_t idx_[PGM_CHUNK];                                                                    \
        pgm_odo o_;                                                                                \
        pgm_odo_start(&o_, (p));                                                                   \
        const size_t L_ = (p)->inner, nb_ = (n) / L_;                                              \
        for (size_t b_ = 0; b_ < nb_; b_ += PGM_CHUNK) {                                           \
            size_t len_ = nb_ - b_ < PGM_CHUNK ? nb_ - b_ : PGM_CHUNK;                             \
            pgm_odo_fill_k(&o_, (p), (p)->ko, idx_, len_);                                         \
            for (size_t u_ = 0; u_ < len_; u_++) {                                                 \
                const size_t j = idx_[u_], base = (b_ + u_) * L_;                                  \
                BODY                                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static void sum_project(const double *src, const pgm_proj *p, size_t n, double *out, size_t outn)
{
    memset(out, 0, outn * sizeof *out);
    const size_t L = p->inner;
    if (p->inner_kept)
        PGM_BLOCKS(p, n, {
            for (size_t t = 0; t < L; t++) out[j + t] += src[base + t];
        });
    else
        PGM_BLOCKS(p, n, {
            double s = 0;
            for (size_t t = 0; t < L; t++) s += src[base + t];
            out[j] += s;
        });
}

static void bcast_add(double *dst, const pgm_proj *p, size_t n, const double *v, double scale)
{
    const size_t L = p->inner;
    if (p->inner_kept)
        PGM_BLOCKS(p, n, {
            for (size_t t = 0; t < L; t++) dst[base + t] += scale * v[j + t];
        });
    else
        PGM_BLOCKS(p, n, {
            const double x = scale * v[j];
            for (size_t t = 0; t < L; t++) dst[base + t] += x;
        });
}

/* out = log sum_{cells mapping to j} exp(src). Two passes: the largest
 * value per target cell (so no exp overflows or loses everything to
 * underflow), then the shifted exps. */
static void lse_project(const double *src, const pgm_proj *p, size_t n, double *out, size_t outn,
                        double *acc)
{
    const size_t L = p->inner;
    for (size_t j = 0; j < outn; j++) out[j] = -INFINITY, acc[j] = 0;
    if (p->inner_kept) {
        PGM_BLOCKS(p, n, {
            for (size_t t = 0; t < L; t++) out[j + t] = fmax(out[j + t], src[base + t]);
        });
        PGM_BLOCKS(p, n, {
            for (size_t t = 0; t < L; t++) acc[j + t] += exp(src[base + t] - out[j + t]);
        });
    } else {
        PGM_BLOCKS(p, n, {
            double mx = out[j];
            for (size_t t = 0; t < L; t++) mx = fmax(mx, src[base + t]);
            out[j] = mx;
        });
        PGM_BLOCKS(p, n, {
            double s = 0;
            const double mx = out[j];
            for (size_t t = 0; t < L; t++) s += exp(src[base + t] - mx);
            acc[j] += s;
        });
    }
    for (size_t j = 0; j < outn; j++)
        if (out[j] > -INFINITY) out[j] += log(acc[j]);
}

static void min_project(const double *src, const pgm_proj *p, size_t n, double *out, size_t outn)
{
    const size_t L = p->inner;
    for (size_t j = 0; j < outn; j++) out[j] = INFINITY;
    if (p->inner_kept)
        PGM_BLOCKS(p, n, {
            for (size_t t = 0; t < L; t++) out[j + t] = fmin(out[j + t], src[base + t]);
        });
    else
        PGM_BLOCKS(p, n, {
            double mn = out[j];
            for (size_t t = 0; t < L; t++) mn = fmin(mn, src[base + t]);
            out[j] = mn;
        });
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
        lse_project(prob + c->off, &c->down, c->cells, up, c->sep_cells, w->scratch);
        bcast_add(prob + p->off, &c->up, p->cells, up, 1.0);
    }
    const pgm_clique *r = &m->c[0];
    pgm_proj all;
    pgm_proj_make(m->sizes, r->attrs, r->k, NULL, 0, &all);
    double lz;
    lse_project(prob + r->off, &all, r->cells, &lz, 1, w->scratch);
    /* Distribute, root first. The message to a child is
     *   log sum_{parent \ sep} exp(b_parent - up_child) = lse(b_parent) - up_child
     * (the child's own message depends on the separator only), and lse of
     * the parent's final belief is log(N_sep) + logZ where N_sep is the sum
     * of its probabilities: so each clique needs one exp per cell, taken
     * when its belief is final. */
    for (size_t j = 0; j < m->nc; j++) {
        const pgm_clique *c = &m->c[j];
        double *b = prob + c->off;
        if (j) {
            const pgm_clique *p = &m->c[c->parent];
            double *down = w->down + c->sep_off;
            sum_project(prob + p->off, &c->up, p->cells, down, c->sep_cells);
            const double *up = w->up + c->sep_off;
            for (size_t i = 0; i < c->sep_cells; i++) down[i] = log(down[i]) + lz - up[i];
            bcast_add(b, &c->down, c->cells, down, 1.0);
        }
        for (size_t i = 0; i < c->cells; i++) b[i] = exp(b[i] - lz);
    }
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
    const double *cw; /* per-cell precision factors (NULL: all 1) */
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
        const double *cw = fm[i].cw;
        for (size_t j = 0; j < fm[i].cells; j++) {
            o[j] *= N;
            double d = o[j] - fm[i].y[j];
            s += cw ? cw[j] * d * d : d * d;
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

static double loss_of(const fit_meas *fm, size_t nm, const double *mu)
{
    double L = 0;
    for (size_t i = 0; i < nm; i++) {
        const double *o = mu + fm[i].off, *cw = fm[i].cw;
        double s = 0;
        for (size_t j = 0; j < fm[i].cells; j++) {
            double d = o[j] - fm[i].y[j];
            s += cw ? cw[j] * d * d : d * d;
        }
        L += 0.5 * fm[i].w * s;
    }
    return L;
}

/* g = dL/dmu at mu (measurement cells), G = g broadcast onto the cliques;
 * returns <g, mu>. */
static double grad(const pg_pgm_model *m, const fit_meas *fm, size_t nm, const double *mu,
                   double *g, double *G)
{
    double gm = 0;
    memset(G, 0, m->cells * sizeof *G);
    for (size_t i = 0; i < nm; i++) {
        const pgm_clique *c = &m->c[fm[i].clique];
        double *gi = g + fm[i].off;
        const double *mi = mu + fm[i].off;
        const double *cw = fm[i].cw;
        for (size_t j = 0; j < fm[i].cells; j++) {
            gi[j] = fm[i].w * (cw ? cw[j] : 1.0) * (mi[j] - fm[i].y[j]);
            gm += gi[j] * mi[j];
        }
        bcast_add(G + c->off, &fm[i].proj, c->cells, gi, 1.0);
    }
    return gm;
}

/* Log-potentials whose model has the consistent clique marginals X:
 * theta_C = log X_C - log X_sep(C) (the junction-tree factorization). */
static void x_to_theta(const pg_pgm_model *m, const double *X, double *theta, double *sep)
{
    for (size_t j = 0; j < m->nc; j++) {
        const pgm_clique *c = &m->c[j];
        double *t = theta + c->off;
        const double *x = X + c->off;
        for (size_t i = 0; i < c->cells; i++) t[i] = log(fmax(x[i], 1e-300));
        if (j) {
            double *s = sep + c->sep_off;
            sum_project(x, &c->down, c->cells, s, c->sep_cells);
            for (size_t i = 0; i < c->sep_cells; i++) s[i] = log(fmax(s[i], 1e-300));
            bcast_add(t, &c->down, c->cells, s, -1.0);
        }
    }
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
    if (!(o.tol > 0) || !isfinite(o.tol) || !(o.max_cells >= 1) || isnan(o.total) ||
        isinf(o.total) || (o.total > 0 && !isnormal(o.total)))
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
    double *theta = NULL, *theta0 = NULL, *G = NULL, *X = NULL, *mbuf = NULL;
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
        fm[i].cw = ms[i].w;
        pgm_proj_make(sizes, m->c[best].attrs, m->c[best].k, ms[i].attrs, ms[i].k, &fm[i].proj);
        moff += cells;
        double s = 0, inv = 0, wmax = 0;
        for (size_t j = 0; j < cells; j++) {
            const double cw = ms[i].w ? ms[i].w[j] : 1.0;
            if (!isfinite(ms[i].y[j]) || !(cw > 0) || !isfinite(cw)) {
                rc = pg_error_set(err, PG_EINVAL,
                                  "pgm: measurement %zu has a non-finite cell or a cell weight "
                                  "that is not finite and > 0",
                                  i);
                goto fail;
            }
            s += ms[i].y[j];
            inv += 1.0 / cw;
            wmax = fmax(wmax, cw);
        }
        /* The sum's variance: sigma^2 / w_j per cell. */
        double var = ms[i].sigma * ms[i].sigma * inv;
        num += s / var;
        den += 1.0 / var;
        wsum += fm[i].w * wmax; /* the l1 curvature bound takes the largest weight */
    }
    if (!(N > 0)) N = nm ? fmax(1.0, num / den) : 1.0;
    m->total = N;

    theta = calloc(m->cells, sizeof *theta);
    theta0 = malloc(m->cells * sizeof *theta0);
    G = malloc(m->cells * sizeof *G);
    X = malloc(m->cells * sizeof *X);
    m->prob = malloc(m->cells * sizeof *m->prob);
    mbuf = malloc((6 * moff + 6) * sizeof *mbuf);
    if (!theta || !theta0 || !G || !X || !m->prob || !mbuf || pgm_bp_work_alloc(m, &w)) goto nomem;
    double *muX = mbuf, *muXn = mbuf + moff + 1, *muY = muXn + moff + 1, *muZ = muY + moff + 1,
           *muZn = muZ + moff + 1, *g = muZn + moff + 1;
    if (warm && warm_init(m, warm, theta)) memset(theta, 0, m->cells * sizeof *theta);

    /* z: the mirror sequence (a tree model, theta); x: the iterate (clique
     * marginals X, a convex combination of z's); y: where gradients are
     * taken. Accelerated Bregman gradient (Tseng 2008, "On accelerated
     * proximal gradient methods", Algorithm 1 with the entropy), with a
     * backtracked constant l and a restart whenever L(x) rises (O'Donoghue
     * and Candes 2015). */
    double lz, Lx;
    pgm_bp(m, theta, m->prob, &lz, &w);
    eval_meas(m, m->prob, fm, nm, N, muZ);
    memcpy(X, m->prob, m->cells * sizeof *X);
    memcpy(muX, muZ, moff * sizeof *muX);
    Lx = loss_of(fm, nm, muX);
    const double lsafe = N * wsum; /* Pinsker bound: always accepted */
    double ell = lsafe / 64, th = 1, gap = nm ? INFINITY : 0, Lwin = Lx;
    size_t it = 0, restarts = 0;
    int converged = nm == 0;
    for (; !converged && it < o.max_iters; it++) {
        if (!isfinite(Lx) || !isfinite(lz)) {
            rc = pg_error_set(err, PG_ENUMERIC, "pgm: the fit diverged at iteration %zu", it);
            goto fail;
        }
        if (it % 8 == 0) {
            /* Duality gap at x; or a stall: less than tol * (1 + L) gained
             * per iteration over the last 8. */
            double gm = grad(m, fm, nm, muX, g, G);
            gap = gm - N * tree_min(m, G, theta0, w.up);
            if (gap <= o.tol * (1 + Lx) ||
                (it && Lx <= Lwin && Lwin - Lx <= 8 * o.tol * (1 + Lx))) {
                converged = 1;
                break;
            }
            Lwin = Lx;
        }
        for (size_t i = 0; i < moff; i++) muY[i] = (1 - th) * muX[i] + th * muZ[i];
        const double Ly = loss_of(fm, nm, muY);
        const double gy = grad(m, fm, nm, muY, g, G);
        memcpy(theta0, theta, m->cells * sizeof *theta);
        const double lz0 = lz;
        double Lxn, lzn;
        for (;;) {
            const double step = 1.0 / (th * ell);
            for (size_t i = 0; i < m->cells; i++) theta[i] = theta0[i] - step * G[i];
            pgm_bp(m, theta, m->prob, &lzn, &w);
            eval_meas(m, m->prob, fm, nm, N, muZn);
            double gz = 0, gx = 0;
            for (size_t i = 0; i < moff; i++) {
                muXn[i] = (1 - th) * muX[i] + th * muZn[i];
                gz += g[i] * muZn[i];
                gx += g[i] * muXn[i];
            }
            Lxn = loss_of(fm, nm, muXn);
            /* N KL(z' || z), from the closed form in the file comment. */
            double D = -step * gz - N * (lzn - lz0);
            double rhs = Ly + (gx - gy) + th * th * ell * D;
            double slack = 1e-12 * (1 + fabs(Ly) + fabs(gy)) +
                           64 * DBL_EPSILON * N * (fabs(lzn) + fabs(lz0)) * th * th * ell * step;
            if (Lxn <= rhs + slack || ell >= lsafe) break;
            ell = fmin(2 * ell, lsafe);
        }
        lz = lzn;
        for (size_t i = 0; i < m->cells; i++) X[i] = (1 - th) * X[i] + th * m->prob[i];
        double *t = muX;
        muX = muXn, muXn = t;
        t = muZ, muZ = muZn, muZn = t;
        if (Lxn > Lx) {
            /* Restart: z from x, momentum reset. */
            x_to_theta(m, X, theta, w.up);
            pgm_bp(m, theta, m->prob, &lz, &w);
            eval_meas(m, m->prob, fm, nm, N, muZ);
            th = 1;
            ell = fmax(ell / 4, lsafe * 1e-9);
            restarts++;
        } else {
            th = 0.5 * (sqrt(th * th * th * th + 4 * th * th) - th * th);
        }
        Lx = Lxn;
    }
    if (!isfinite(Lx) || !isfinite(lz)) {
        rc = pg_error_set(err, PG_ENUMERIC, "pgm: the fit diverged");
        goto fail;
    }
    (void)restarts;
    /* The model of x: its clique marginals factor over the tree. */
    x_to_theta(m, X, theta, w.up);
    m->theta = theta;
    theta = NULL;
    m->stats = (pg_pgm_fit_stats){.iters = it, .loss = Lx, .gap = gap, .converged = converged};
    if ((rc = pgm_finalize(m, err))) goto fail;
    free(fm);
    free(theta0);
    free(G);
    free(X);
    free(mbuf);
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
    free(X);
    free(mbuf);
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
