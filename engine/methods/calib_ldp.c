#include "engine/methods/calib_ldp.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/core/rng.h"
#include "engine/methods/ldp_cost.h"

enum { BLK_NUM = 1, BLK_SOFT = 2, BLK_REF = 3 };

typedef struct blk {
    int kind;
    size_t col, offset, width, states, stat; /* stat: index of its first statistic */
    long ind;                                /* numeric nullable: its indicator block, else -1 */
} blk;

struct pg_calib_ldp {
    size_t nb, S, d;
    blk *b;
    int K;        /* classes as given (0: none) */
    size_t label; /* the table's label column (PG_TABLE_NONE) */
    size_t KK;    /* max(K, 1) */
    float lo, hi; /* model range of numeric units */
    double *tgt;  /* KK x S */
    double *se;   /* KK x S */
    pg_calib_ldp_signal sig;
    /* Deconvolved quantile maps (see calib_ldp.h): per numeric block whether
     * it has one (qok), and QMAP_KNOTS target quantiles of its present
     * values per slot: classes 0 .. KK - 1, then the pooled law (slot KK);
     * (KK + 1) x nb x QMAP_KNOTS. */
    unsigned char *qok;
    double *qt;
};

/* Fixed seeds of the measuring draws and stream of the moves: the same
 * network always gets the same calibration. */
#define CALIB_LDP_SEED   UINT64_C(0x43414c4c4450)
#define CALIB_LDP_STREAM UINT64_C(0x434c4450)
#define PRESENT_FLOOR    0.05

/* Quantile maps: knots at probabilities QMAP_PLO .. 1 - QMAP_PLO; a block
 * gets one when its noise's standard deviation is at most 1 / QMAP_SNR times
 * every class's spread (calib_ldp.h); the grid of the deconvolution. */
#define QMAP_KNOTS   101
#define QMAP_PLO     0.001
#define QMAP_SNR     0.5
#define QMAP_UNIFORM 64
#define QMAP_DATA    128
#define QMAP_CELLS   4096
#define QMAP_ITERS   300
#define QMAP_TOL     1e-7

static double knot_p(size_t j)
{
    return QMAP_PLO + (1.0 - 2.0 * QMAP_PLO) * (double)j / (double)(QMAP_KNOTS - 1);
}

int pg_calib_ldp_make(const pg_table *t, int classes, pg_calib_ldp **out, pg_error *err)
{
    *out = NULL;
    if (!t || classes < 0) return pg_error_set(err, PG_EINVAL, "calibration needs a table");
    pg_calib_ldp *c = calloc(1, sizeof *c);
    if (!c || !(c->b = calloc(2 * t->ncols + 1, sizeof *c->b))) {
        free(c);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the calibration");
    }
    c->K = classes;
    c->label = t->label;
    c->KK = classes > 0 ? (size_t)classes : 1;
    c->d = t->width;
    c->lo = (float)t->lo;
    c->hi = (float)t->hi;
    for (size_t j = 0; j < t->ncols; j++) {
        const pg_table_col *col = &t->cols[j];
        if (j == t->label || col->width == 0) continue;
        blk *x = &c->b[c->nb++];
        x->col = j;
        x->offset = col->offset;
        x->ind = -1;
        switch (col->type) {
        case PG_COL_CONTINUOUS:
        case PG_COL_INTEGER:
            x->kind = BLK_NUM;
            x->width = 1;
            x->states = 0;
            if (col->nullable) {
                x->ind = (long)c->nb;
                blk *m = &c->b[c->nb++];
                *m = (blk){BLK_REF, j, col->offset + 1, 1, 2, 0, -1};
            }
            break;
        case PG_COL_CATEGORICAL:
            x->kind = BLK_SOFT;
            x->width = col->width;
            x->states = col->width;
            break;
        default: /* boolean: (false,) true (, missing) */
            x->kind = BLK_REF;
            x->width = col->width;
            x->states = col->width + 1;
            break;
        }
    }
    for (size_t i = 0; i < c->nb; i++) {
        c->b[i].stat = c->S;
        c->S += c->b[i].kind == BLK_NUM ? 2 : c->b[i].states;
    }
    c->tgt = calloc(c->KK * c->S + 1, sizeof *c->tgt);
    c->se = calloc(c->KK * c->S + 1, sizeof *c->se);
    c->qok = calloc(c->nb + 1, 1);
    c->qt = calloc((c->KK + 1) * c->nb * QMAP_KNOTS + 1, sizeof *c->qt);
    if (!c->tgt || !c->se || !c->qok || !c->qt) {
        pg_calib_ldp_free(c);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the calibration");
    }
    *out = c;
    return PG_OK;
}

void pg_calib_ldp_free(pg_calib_ldp *c)
{
    if (!c) return;
    free(c->b);
    free(c->tgt);
    free(c->se);
    free(c->qok);
    free(c->qt);
    free(c);
}

size_t pg_calib_ldp_stats(const pg_calib_ldp *c)
{
    return c->S;
}

const double *pg_calib_ldp_targets(const pg_calib_ldp *c, int k)
{
    return c->tgt + (size_t)k * c->S;
}

const double *pg_calib_ldp_stderr(const pg_calib_ldp *c, int k)
{
    return c->se + (size_t)k * c->S;
}

void pg_calib_ldp_signal_get(const pg_calib_ldp *c, pg_calib_ldp_signal *s)
{
    *s = c->sig;
}

bool pg_calib_ldp_pooled(const pg_calib_ldp *c)
{
    return c->K > 0 && c->sig.threshold > 0 && c->sig.max_z < c->sig.threshold;
}

/* The state of a randomized-response block of a row: its largest unit, the
 * reference state (1 - sum of the units) first where the block has one, the
 * first on ties; exact on clean encodings. */
static size_t state_of(const blk *x, const float *row)
{
    const float *u = row + x->offset;
    size_t best = 0;
    float bv;
    if (x->kind == BLK_REF) {
        float s = 0;
        for (size_t j = 0; j < x->width; j++) s += u[j];
        bv = 1.0f - s;
        for (size_t j = 0; j < x->width; j++)
            if (u[j] > bv) bv = u[j], best = j + 1;
    } else {
        bv = u[0];
        for (size_t j = 1; j < x->width; j++)
            if (u[j] > bv) bv = u[j], best = j;
    }
    return best;
}

static void write_state(const blk *x, float *row, size_t s)
{
    float *u = row + x->offset;
    size_t base = x->kind == BLK_REF ? 1 : 0;
    for (size_t j = 0; j < x->width; j++) u[j] = j + base == s ? 1.0f : 0.0f;
}

/* g(row): numeric units and their squares, states as indicators. */
static void coords(const pg_calib_ldp *c, const float *row, double *g)
{
    memset(g, 0, c->S * sizeof *g);
    for (size_t i = 0; i < c->nb; i++) {
        const blk *x = &c->b[i];
        if (x->kind == BLK_NUM) {
            g[x->stat] = row[x->offset];
            g[x->stat + 1] = (double)row[x->offset] * row[x->offset];
        } else
            g[x->stat + state_of(x, row)] = 1.0;
    }
}

/* Inverse of the standard normal's upper tail: z with P(Z > z) = p. */
static double upper_quantile(double p)
{
    double a = 0, b = 40;
    for (int i = 0; i < 200; i++) {
        double m = 0.5 * (a + b);
        if (0.5 * erfc(m / sqrt(2.0)) > p)
            a = m;
        else
            b = m;
    }
    return 0.5 * (a + b);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Quantile maps of numeric block bi (calib_ldp.h): the maximum-likelihood
 * law of (class, present value or missing) on a grid under every channel
 * the row went through (the label's randomized response: keep P, other Q;
 * the missing indicator's: keep ik, other io; the value's Laplace or
 * Gaussian noise of the given scale), by EM, then QMAP_KNOTS quantiles of
 * each class's present values and of their mixture. The rows are first
 * grouped into cells (reported class, reported indicator, value bin of
 * width range / QMAP_CELLS at their mean), which bounds the work whatever
 * n. The grid: QMAP_UNIFORM points over the model range and the clamped
 * QMAP_DATA-quantiles of the reported present values (resolution where
 * the rows are; a point mass at a bound stays on it). */
static int deconvolve(pg_calib_ldp *c, size_t bi, const float *x, const int32_t *labels, size_t n,
                      double P, double Q, double ik, double io, int mech, double scale)
{
    const blk *b = &c->b[bi];
    bool nullable = b->ind >= 0;
    size_t KK = c->KK, nc = KK * 2 * QMAP_CELLS;
    double lo = c->lo, hi = c->hi;
    double *pres = malloc((n + 1) * sizeof *pres);
    double *grid = malloc((QMAP_UNIFORM + QMAP_DATA) * sizeof *grid);
    double *ccnt = calloc(nc, sizeof *ccnt), *csum = calloc(nc, sizeof *csum);
    int rc = PG_OK;
    float *ker = NULL;
    double *cv = NULL, *cw = NULL, *th = NULL, *acc = NULL, *cl = NULL;
    size_t *cidx = NULL;
    if (!pres || !grid || !ccnt || !csum) goto nomem;
    double omin = INFINITY, omax = -INFINITY;
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
        const float *row = x + i * c->d;
        double v = row[b->offset];
        omin = fmin(omin, v), omax = fmax(omax, v);
        if (!nullable || state_of(&c->b[b->ind], row) == 0) pres[np++] = v;
    }
    size_t G = 0;
    for (size_t j = 0; j < QMAP_UNIFORM; j++)
        grid[G++] = lo + (hi - lo) * (double)j / (double)(QMAP_UNIFORM - 1);
    if (np > 0) {
        qsort(pres, np, sizeof *pres, cmp_dbl);
        for (size_t j = 0; j < QMAP_DATA; j++) {
            double v = pres[(size_t)(((double)j + 0.5) / QMAP_DATA * (double)np)];
            grid[G++] = v < lo ? lo : v > hi ? hi : v;
        }
    }
    /* points closer than a quarter of the noise's scale are one: the
     * reports cannot tell them apart, and a mass the law has on a bound
     * (a column's many zeros) would otherwise spread over its neighbours */
    qsort(grid, G, sizeof *grid, cmp_dbl);
    double minsp = fmax(0.25 * scale, 1e-6 * (hi - lo));
    size_t g2 = 1;
    for (size_t j = 1; j < G; j++)
        if (grid[j] - grid[g2 - 1] >= minsp) grid[g2++] = grid[j];
    if (grid[g2 - 1] < hi) { /* hi stays a point */
        if (g2 > 1 && hi - grid[g2 - 1] < minsp) g2--;
        grid[g2++] = hi;
    }
    G = g2;
    size_t SS = G + (nullable ? 1 : 0); /* states: grid points, then missing (value 0) */
    double wid = omax > omin ? (omax - omin) / QMAP_CELLS : 1.0;
    for (size_t i = 0; i < n; i++) {
        const float *row = x + i * c->d;
        double v = row[b->offset];
        size_t bin = (size_t)((v - omin) / wid);
        if (bin >= QMAP_CELLS) bin = QMAP_CELLS - 1;
        size_t yk = c->K > 0 ? (size_t)labels[i] : 0;
        size_t im = nullable && state_of(&c->b[b->ind], row) != 0;
        size_t u = (yk * 2 + im) * QMAP_CELLS + bin;
        ccnt[u] += 1.0, csum[u] += v;
    }
    size_t m = 0;
    for (size_t u = 0; u < nc; u++) m += ccnt[u] > 0;
    ker = malloc((m * SS + 1) * sizeof *ker);
    cv = malloc((m + 1) * sizeof *cv), cw = malloc((m + 1) * sizeof *cw);
    cl = malloc((m * KK + 1) * sizeof *cl);
    cidx = malloc((m + 1) * sizeof *cidx);
    th = malloc((KK * SS + 1) * sizeof *th), acc = malloc((KK * SS + 1) * sizeof *acc);
    if (!ker || !cv || !cw || !cl || !cidx || !th || !acc) goto nomem;
    m = 0;
    for (size_t u = 0; u < nc; u++)
        if (ccnt[u] > 0) cidx[m++] = u;
    for (size_t r = 0; r < m; r++) {
        size_t u = cidx[r], yk = u / (2 * QMAP_CELLS), im = (u / QMAP_CELLS) % 2;
        double v = csum[u] / ccnt[u];
        cv[r] = v, cw[r] = ccnt[u];
        for (size_t k = 0; k < KK; k++) cl[r * KK + k] = KK == 1 ? 1.0 : k == yk ? P : Q;
        /* the kernel relative to its largest value (a common factor of the
         * cell cancels in the responsibilities) */
        double dmin = INFINITY;
        for (size_t s = 0; s < SS; s++) dmin = fmin(dmin, fabs(v - (s < G ? grid[s] : 0.0)));
        for (size_t s = 0; s < SS; s++) {
            double d = fabs(v - (s < G ? grid[s] : 0.0));
            double e = mech == PG_LDP_LAPLACE ? (d - dmin) / scale
                                              : (d * d - dmin * dmin) / (2.0 * scale * scale);
            double ind = !nullable ? 1.0 : (s < G) == (im == 0) ? ik : io;
            ker[r * SS + s] = (float)(exp(-e) * ind);
        }
    }
    for (size_t u = 0; u < KK * SS; u++) th[u] = 1.0 / (double)(KK * SS);
    for (int it = 0; it < QMAP_ITERS; it++) {
        memset(acc, 0, KK * SS * sizeof *acc);
        for (size_t r = 0; r < m; r++) {
            const float *kr = ker + r * SS;
            double D = 0;
            for (size_t k = 0; k < KK; k++) {
                double a = 0;
                for (size_t s = 0; s < SS; s++) a += th[k * SS + s] * kr[s];
                D += cl[r * KK + k] * a;
            }
            if (!(D > 0)) continue;
            for (size_t k = 0; k < KK; k++) {
                double wgt = cw[r] * cl[r * KK + k] / D;
                for (size_t s = 0; s < SS; s++) acc[k * SS + s] += wgt * kr[s];
            }
        }
        double ch = 0;
        for (size_t u = 0; u < KK * SS; u++) {
            double t = th[u] * acc[u] / (double)n;
            ch = fmax(ch, fabs(t - th[u]));
            th[u] = t;
        }
        if (ch < QMAP_TOL) break;
    }
    /* quantiles of the present values: each class, then the mixture */
    for (size_t slot = 0; slot <= KK; slot++) {
        double tot = 0;
        for (size_t s = 0; s < G; s++)
            for (size_t k = 0; k < KK; k++)
                if (slot == KK || slot == k) tot += th[k * SS + s];
        double *q = c->qt + (slot * c->nb + bi) * QMAP_KNOTS, cum = 0;
        size_t s = 0;
        for (size_t j = 0; j < QMAP_KNOTS; j++) {
            double want = knot_p(j) * tot;
            while (s < G) {
                double mass = 0;
                for (size_t k = 0; k < KK; k++)
                    if (slot == KK || slot == k) mass += th[k * SS + s];
                if (cum + mass >= want && mass > 0) break;
                cum += mass;
                s++;
            }
            q[j] = s < G ? grid[s] : grid[G - 1];
        }
    }
    goto done;
nomem:
    rc = PG_ENOMEM;
done:
    free(pres);
    free(grid);
    free(ccnt);
    free(csum);
    free(ker);
    free(cv);
    free(cw);
    free(cl);
    free(cidx);
    free(th);
    free(acc);
    return rc;
}

int pg_calib_ldp_estimate(pg_calib_ldp *c, const pg_ldp_plan *plan, const float *x,
                          const int32_t *labels, size_t n, pg_error *err)
{
    if (!plan || n == 0 || (c->K > 0 && !labels))
        return pg_error_set(err, PG_EINVAL, "calibration needs privatized rows and their labels");
    size_t S = c->S, KK = c->KK;
    /* Per block: the randomized response's keep and other probabilities. */
    double *pq = calloc(2 * c->nb + 1, sizeof *pq);
    double P = 1.0, Q = 0.0;
    if (!pq) return pg_error_set(err, PG_ENOMEM, "cannot allocate the calibration");
    int rc = PG_OK;
    for (size_t i = 0; i < c->nb && rc == PG_OK; i++) {
        const blk *b = &c->b[i];
        if (b->col >= plan->ncols) {
            rc = pg_error_set(err, PG_EINVAL, "the local plan does not fit the table");
            break;
        }
        const pg_ldp_column *pc = &plan->cols[b->col];
        if (b->kind == BLK_NUM) {
            /* the noise's variance: Laplace 2 b^2, Gaussian sigma^2 */
            if (pc->mechanism != PG_LDP_LAPLACE && pc->mechanism != PG_LDP_GAUSSIAN) {
                rc = pg_error_set(err, PG_EINVAL, "the local plan does not fit the table");
                break;
            }
            pq[2 * i] = pc->mechanism == PG_LDP_LAPLACE ? 2.0 * pc->noise_scale * pc->noise_scale
                                                        : pc->noise_scale * pc->noise_scale;
            continue;
        }
        bool ind = i > 0 && c->b[i - 1].ind == (long)i;
        double keep = ind ? pc->missing_keep : pc->keep;
        double eps = ind ? pc->missing_epsilon : pc->epsilon;
        size_t k = ind ? 2 : pc->k;
        if ((!ind && pc->mechanism != PG_LDP_RR) || k != b->states || !(keep > 0 && keep <= 1)) {
            rc = pg_error_set(err, PG_EINVAL, "the local plan does not fit the table");
            break;
        }
        pq[2 * i] = keep;
        pq[2 * i + 1] = pg_ldp_rr_other(k, keep, eps);
    }
    if (rc == PG_OK && c->K > 0) {
        const pg_ldp_column *lc = c->label < plan->ncols ? &plan->cols[c->label] : NULL;
        if (!lc || lc->mechanism != PG_LDP_RR || lc->k != (size_t)c->K)
            rc = pg_error_set(err, PG_EINVAL,
                              "the label was not privatized by randomized response over its "
                              "%d classes",
                              c->K);
        else {
            P = lc->keep;
            Q = pg_ldp_rr_other((size_t)c->K, lc->keep, lc->epsilon);
        }
    }
    double *sumA = calloc(KK * S, sizeof *sumA), *sumB = calloc(KK, sizeof *sumB);
    double *g = calloc(S + 1, sizeof *g), *var = calloc(KK * S, sizeof *var);
    double *mu = calloc(KK * S, sizeof *mu), *w = calloc(KK, sizeof *w);
    double *psi = calloc(S + 1, sizeof *psi);
    size_t pairs = KK * (KK - 1) / 2;
    double *pv = calloc(pairs * S + 1, sizeof *pv);
    if (rc == PG_OK && (!sumA || !sumB || !g || !var || !mu || !w || !pv || !psi))
        rc = pg_error_set(err, PG_ENOMEM, "cannot allocate the calibration");
    for (size_t i = 0; i < n && rc == PG_OK && labels; i++)
        if (labels[i] < 0 || (c->K > 0 && labels[i] >= c->K))
            rc = pg_error_set(err, PG_EINVAL, "label %d out of range", labels[i]);
    if (rc) goto done;
    /* A_c and pi_c (times n): sums of per-row terms w_c g, w_c. */
    double dpq = P - Q;
    for (size_t i = 0; i < n; i++) {
        coords(c, x + i * c->d, g);
        for (size_t k = 0; k < KK; k++) {
            w[k] = c->K > 0 ? (((int32_t)k == labels[i] ? 1.0 : 0.0) - Q) / dpq : 1.0;
            sumB[k] += w[k];
            for (size_t u = 0; u < S; u++) sumA[k * S + u] += w[k] * g[u];
        }
    }
    for (size_t k = 0; k < KK; k++) {
        double pi = fmax(sumB[k], 1.0); /* at least one row (label_count.h's clip) */
        for (size_t u = 0; u < S; u++) mu[k * S + u] = sumA[k * S + u] / pi;
    }
    /* Influence of each row on each class mean: (w_c g - mu_c w_c) / pi_c;
     * the variance of their mean is the squared standard error. */
    for (size_t i = 0; i < n; i++) {
        coords(c, x + i * c->d, g);
        for (size_t k = 0; k < KK; k++)
            w[k] = c->K > 0 ? (((int32_t)k == labels[i] ? 1.0 : 0.0) - Q) / dpq : 1.0;
        size_t pr = 0;
        for (size_t k = 0; k < KK; k++) {
            double pik = fmax(sumB[k], 1.0) / (double)n;
            for (size_t u = 0; u < S; u++) psi[u] = w[k] * (g[u] - mu[k * S + u]) / pik;
            /* a numeric unit's second statistic is its variance: influence
             * of m2 - m1^2 */
            for (size_t j = 0; j < c->nb; j++)
                if (c->b[j].kind == BLK_NUM)
                    psi[c->b[j].stat + 1] -= 2.0 * mu[k * S + c->b[j].stat] * psi[c->b[j].stat];
            for (size_t u = 0; u < S; u++) var[k * S + u] += psi[u] * psi[u];
            for (size_t l = k + 1; l < KK; l++, pr++) {
                double pil = fmax(sumB[l], 1.0) / (double)n;
                for (size_t u = 0; u < S; u++) {
                    double dpsi =
                        w[k] * (g[u] - mu[k * S + u]) / pik - w[l] * (g[u] - mu[l * S + u]) / pil;
                    pv[pr * S + u] += dpsi * dpsi;
                }
            }
        }
    }
    double nn = (double)n;
    c->sig.max_z = 0;
    c->sig.tests = pairs * S;
    c->sig.threshold = pairs ? upper_quantile(0.025 / (double)(pairs * S)) : 0;
    for (size_t k = 0, pr = 0; k < KK; k++)
        for (size_t l = k + 1; l < KK; l++, pr++)
            for (size_t u = 0; u < S; u++) {
                double se = sqrt(pv[pr * S + u]) / nn;
                double diff = fabs(mu[k * S + u] - mu[l * S + u]);
                if (se > 0 && diff / se > c->sig.max_z) c->sig.max_z = diff / se;
            }
    /* Targets: invert each block's channel, then the numeric present means. */
    for (size_t k = 0; k < KK; k++) {
        double *t = c->tgt + k * S, *se = c->se + k * S;
        const double *m = mu + k * S;
        for (size_t i = 0; i < c->nb; i++) {
            const blk *b = &c->b[i];
            if (b->kind == BLK_NUM) {
                se[b->stat] = sqrt(var[k * S + b->stat]) / nn;
                se[b->stat + 1] = 0; /* set below */
                continue;
            }
            double p = pq[2 * i], q = pq[2 * i + 1], tot = 0;
            for (size_t s = 0; s < b->states; s++) {
                double v = (m[b->stat + s] - q) / (p - q);
                t[b->stat + s] = v > 0 ? v : 0;
                tot += t[b->stat + s];
                se[b->stat + s] = sqrt(var[k * S + b->stat + s]) / nn / (p - q);
            }
            for (size_t s = 0; s < b->states; s++)
                t[b->stat + s] = tot > 0 ? t[b->stat + s] / tot : 1.0 / (double)b->states;
        }
        for (size_t i = 0; i < c->nb; i++) {
            const blk *b = &c->b[i];
            if (b->kind != BLK_NUM) continue;
            double pres = b->ind >= 0 ? fmax(t[c->b[b->ind].stat], PRESENT_FLOOR) : 1.0;
            double v = m[b->stat] / pres;
            double m2 = (m[b->stat + 1] - pq[2 * i]) / pres, sd = sqrt(fmax(m2 - v * v, 0.0));
            t[b->stat] = v < c->lo ? c->lo : v > c->hi ? c->hi : v;
            se[b->stat] /= pres;
            /* the standard deviation of present values; its error from the
             * variance's by the delta method (sd floored at 1 % of the
             * range there) */
            /* no law on [lo, hi] with mean t has a larger spread than
             * sqrt((hi - t) (t - lo)) (Bhatia-Davis) */
            double tm = t[b->stat];
            t[b->stat + 1] = fmin(sd, sqrt(fmax((c->hi - tm) * (tm - c->lo), 0.0)));
            se[b->stat + 1] = sqrt(var[k * S + b->stat + 1]) / nn / pres /
                              (2.0 * fmax(sd, 0.01 * (c->hi - c->lo)));
        }
    }
    /* Quantile maps where the noise leaves the shape recoverable: its
     * standard deviation at most 1 / QMAP_SNR times every class's spread
     * (calib_ldp.h). */
    for (size_t i = 0; i < c->nb && rc == PG_OK; i++) {
        const blk *b = &c->b[i];
        c->qok[i] = 0;
        if (b->kind != BLK_NUM) continue;
        const pg_ldp_column *pc = &plan->cols[b->col];
        double noise = sqrt(pq[2 * i]), spread = INFINITY;
        for (size_t k = 0; k < KK; k++) spread = fmin(spread, c->tgt[k * S + b->stat + 1]);
        if (!(spread > 0 && spread >= QMAP_SNR * noise && pc->noise_scale > 0)) continue;
        double ik = 1.0, io = 0.0;
        if (b->ind >= 0) ik = pq[2 * (size_t)b->ind], io = pq[2 * (size_t)b->ind + 1];
        rc = deconvolve(c, i, x, labels, n, P, Q, ik, io, pc->mechanism, pc->noise_scale);
        if (rc)
            rc = pg_error_set(err, rc, "cannot allocate the calibration's quantile maps");
        else
            c->qok[i] = 1;
    }
done:
    free(pq);
    free(sumA);
    free(sumB);
    free(g);
    free(var);
    free(mu);
    free(w);
    free(pv);
    free(psi);
    return rc;
}

void pg_calib_ldp_measure(const pg_calib_ldp *c, const float *x, size_t n, double *out)
{
    memset(out, 0, c->S * sizeof *out);
    double *cnt = calloc(c->nb + 1, sizeof *cnt);
    for (size_t r = 0; r < n; r++) {
        const float *row = x + r * c->d;
        for (size_t i = 0; i < c->nb; i++) {
            const blk *b = &c->b[i];
            if (b->kind != BLK_NUM) {
                out[b->stat + state_of(b, row)] += 1.0 / (double)n;
            } else if (b->ind < 0 || state_of(&c->b[b->ind], row) == 0) {
                out[b->stat] += row[b->offset];
                out[b->stat + 1] += (double)row[b->offset] * row[b->offset];
                if (cnt) cnt[i] += 1;
            }
        }
    }
    for (size_t i = 0; i < c->nb; i++)
        if (c->b[i].kind == BLK_NUM) {
            size_t u = c->b[i].stat;
            double m = cnt && cnt[i] > 0 ? cnt[i] : 1.0;
            out[u] /= m;
            out[u + 1] = sqrt(fmax(out[u + 1] / m - out[u] * out[u], 0.0));
        }
    free(cnt);
}

/* ---- storage -------------------------------------------------------------- */

json_t *pg_calib_ldp_to_json(const pg_calib_ldp *c, size_t per_class)
{
    json_t *t = json_array(), *e = json_array();
    for (size_t k = 0; t && e && k < c->KK; k++) {
        json_t *row = json_array(), *re = json_array();
        for (size_t u = 0; row && re && u < c->S; u++) {
            json_array_append_new(row, json_real(c->tgt[k * c->S + u]));
            json_array_append_new(re, json_real(c->se[k * c->S + u]));
        }
        if (!row || !re || json_array_append_new(t, row) || json_array_append_new(e, re)) {
            json_decref(re);
            json_decref(t);
            json_decref(e);
            return NULL;
        }
    }
    if (!t || !e) {
        json_decref(t);
        json_decref(e);
        return NULL;
    }
    /* quantile maps: per slot (classes, then pooled), per block, null or
     * the knots */
    json_t *q = json_array();
    for (size_t k = 0; q && k <= c->KK; k++) {
        json_t *row = json_array();
        for (size_t i = 0; row && i < c->nb; i++) {
            json_t *a = c->qok[i] ? json_array() : json_null();
            for (size_t j = 0; a && c->qok[i] && j < QMAP_KNOTS; j++)
                if (json_array_append_new(a, json_real(c->qt[(k * c->nb + i) * QMAP_KNOTS + j])))
                    json_decref(a), a = NULL;
            if (!a || json_array_append_new(row, a)) json_decref(row), row = NULL;
        }
        if (!row || json_array_append_new(q, row)) json_decref(q), q = NULL;
    }
    if (!q) {
        json_decref(t);
        json_decref(e);
        return NULL;
    }
    return json_pack("{s:i,s:i,s:I,s:o,s:o,s:{s:f,s:f,s:I},s:o}", "version", PG_CALIB_LDP_VERSION,
                     "classes", c->K, "per_class", (json_int_t)per_class, "targets", t, "stderr", e,
                     "signal", "max_z", c->sig.max_z, "threshold", c->sig.threshold, "tests",
                     (json_int_t)c->sig.tests, "quantiles", q);
}

/* Version 2's quantile maps into c (version 1 has none): a numeric block's
 * knots in every slot or none, finite, nondecreasing, inside the range. */
static bool quantiles_from_json(const json_t *q, pg_calib_ldp *c)
{
    if (!json_is_array(q) || json_array_size(q) != c->KK + 1) return false;
    for (size_t k = 0; k <= c->KK; k++) {
        const json_t *row = json_array_get(q, k);
        if (!json_is_array(row) || json_array_size(row) != c->nb) return false;
        for (size_t i = 0; i < c->nb; i++) {
            const json_t *a = json_array_get(row, i);
            bool has = !json_is_null(a);
            if (k == 0) c->qok[i] = has;
            if (has != (bool)c->qok[i] || (has && c->b[i].kind != BLK_NUM)) return false;
            if (!has) continue;
            if (!json_is_array(a) || json_array_size(a) != QMAP_KNOTS) return false;
            double *d = c->qt + (k * c->nb + i) * QMAP_KNOTS;
            for (size_t j = 0; j < QMAP_KNOTS; j++) {
                const json_t *v = json_array_get(a, j);
                d[j] = json_number_value(v);
                if (!json_is_number(v) || !isfinite(d[j]) || d[j] < c->lo || d[j] > c->hi ||
                    (j > 0 && d[j] < d[j - 1]))
                    return false;
            }
        }
    }
    return true;
}

int pg_calib_ldp_from_json(const json_t *j, const pg_table *t, int classes, pg_calib_ldp **out,
                           size_t *per_class, pg_error *err)
{
    *out = NULL;
    json_int_t ver = json_integer_value(json_object_get(j, "version"));
    json_int_t per = json_integer_value(json_object_get(j, "per_class"));
    const json_t *tg = json_object_get(j, "targets"), *te = json_object_get(j, "stderr");
    if (!json_is_object(j) || ver < 1 || ver > PG_CALIB_LDP_VERSION || !json_is_array(te) ||
        json_integer_value(json_object_get(j, "classes")) != classes || per < 10 || per > 1000000 ||
        !json_is_array(tg))
        return pg_error_set(err, PG_EFORMAT, "the checkpoint's calibration is malformed");
    pg_calib_ldp *c;
    int rc = pg_calib_ldp_make(t, classes, &c, err);
    if (rc) return rc;
    bool ok = json_array_size(tg) == c->KK && json_array_size(te) == c->KK;
    for (size_t k = 0; ok && k < c->KK; k++) {
        const json_t *row = json_array_get(tg, k), *re = json_array_get(te, k);
        ok = json_is_array(row) && json_array_size(row) == c->S && json_is_array(re) &&
             json_array_size(re) == c->S;
        for (size_t u = 0; ok && u < c->S; u++) {
            const json_t *v = json_array_get(row, u), *ve = json_array_get(re, u);
            double x = json_number_value(v), xe = json_number_value(ve);
            ok = json_is_number(v) && isfinite(x) && x >= -1e6 && x <= 1e6 && json_is_number(ve) &&
                 isfinite(xe) && xe >= 0 && xe <= 1e6;
            c->tgt[k * c->S + u] = x;
            c->se[k * c->S + u] = xe;
        }
    }
    if (ok && ver >= 2) ok = quantiles_from_json(json_object_get(j, "quantiles"), c);
    if (!ok) {
        pg_calib_ldp_free(c);
        return pg_error_set(err, PG_EFORMAT, "the checkpoint's calibration does not fit its table");
    }
    const json_t *sg = json_object_get(j, "signal");
    double mz = json_number_value(json_object_get(sg, "max_z"));
    double th = json_number_value(json_object_get(sg, "threshold"));
    json_int_t nt = json_integer_value(json_object_get(sg, "tests"));
    if (!json_is_number(json_object_get(sg, "max_z")) || !isfinite(mz) || mz < 0 ||
        !json_is_number(json_object_get(sg, "threshold")) || !isfinite(th) || th < 0 || nt < 0) {
        pg_calib_ldp_free(c);
        return pg_error_set(err, PG_EFORMAT, "the checkpoint's calibration is malformed");
    }
    c->sig.max_z = mz;
    c->sig.threshold = th;
    c->sig.tests = (size_t)nt;
    *out = c;
    *per_class = (size_t)per;
    return PG_OK;
}

/* ---- the calibrated snapshot ------------------------------------------ */

typedef struct cal_snap {
    pg_snapshot *inner;
    pg_calib_ldp *c; /* layout (targets unused) */
    double *leave;   /* KK x S: probability a row leaves its state */
    double *cdf;     /* KK x S: cumulative destination distribution per block */
    /* KK x S, numeric units at their first statistic: v -> clamp(center +
     * scale (v - center) + shift) */
    double *shift, *scale, *center;
    /* KK x nb x QMAP_KNOTS: the generator's quantiles of each class's
     * present values (quantile-mapped blocks, c->qok), measured after the
     * state moves; the targets are c->qt (slot KK when pooled) */
    double *gq;
    /* no detectable class difference (the signal check): every row's
     * features come from the generator's mixture over classes, whatever its
     * label, through class 0's maps (the pooled ones) */
    bool pooled;
} cal_snap;

static void cal_destroy(void *impl)
{
    cal_snap *s = impl;
    if (!s) return;
    pg_snapshot_release(s->inner);
    pg_calib_ldp_free(s->c);
    free(s->leave);
    free(s->cdf);
    free(s->shift);
    free(s->scale);
    free(s->center);
    free(s->gq);
    free(s);
}

/* v through the map that takes quantiles g onto quantiles t (knot_p): its
 * position among g (the middle of a run of equal knots), then t there,
 * linear between knots; outside g the end knots' targets. */
static double qmap_apply(const double *g, const double *t, double v)
{
    if (v <= g[0]) return t[0];
    if (v >= g[QMAP_KNOTS - 1]) return t[QMAP_KNOTS - 1];
    size_t a = 0, z = QMAP_KNOTS - 1; /* first knot >= v */
    while (a < z) {
        size_t mid = (a + z) / 2;
        if (g[mid] >= v)
            z = mid;
        else
            a = mid + 1;
    }
    size_t jf = a, jl = jf;
    while (jl + 1 < QMAP_KNOTS && g[jl + 1] <= v) jl++;
    double r;
    if (g[jf] <= v) /* v equals knots jf .. jl */
        r = 0.5 * (double)(jf + jl);
    else
        r = (double)(jf - 1) + (v - g[jf - 1]) / (g[jf] - g[jf - 1]);
    size_t i0 = (size_t)r;
    double fr = r - (double)i0;
    return i0 + 1 < QMAP_KNOTS ? t[i0] + fr * (t[i0 + 1] - t[i0]) : t[QMAP_KNOTS - 1];
}

/* One row of class k: states move (one uniform per block, always drawn),
 * then numeric units shift and clamp; a missing value holds 0. */
static void apply_row(const cal_snap *s, size_t k, float *row, pg_rng *rng, bool qmaps)
{
    const pg_calib_ldp *c = s->c;
    const double *leave = s->leave + k * c->S, *cdf = s->cdf + k * c->S;
    for (size_t i = 0; i < c->nb; i++) {
        const blk *b = &c->b[i];
        if (b->kind == BLK_NUM) continue;
        size_t st = state_of(b, row);
        double u = pg_rng_uniform(rng), l = leave[b->stat + st];
        if (u < l) {
            double v = u / l;
            size_t to = b->states - 1;
            for (size_t j = 0; j < b->states; j++)
                if (v < cdf[b->stat + j]) {
                    to = j;
                    break;
                }
            st = to;
        }
        write_state(b, row, st);
    }
    for (size_t i = 0; i < c->nb; i++) {
        const blk *b = &c->b[i];
        if (b->kind != BLK_NUM) continue;
        if (b->ind >= 0 && state_of(&c->b[b->ind], row) != 0) {
            row[b->offset] = 0.0f;
            continue;
        }
        size_t u = k * c->S + b->stat;
        double v0 = row[b->offset];
        if (qmaps && c->qok[i])
            v0 = qmap_apply(s->gq + (k * c->nb + i) * QMAP_KNOTS,
                            c->qt + ((s->pooled ? c->KK : k) * c->nb + i) * QMAP_KNOTS, v0);
        double v = s->center[u] + s->scale[u] * (v0 - s->center[u]) + s->shift[u];
        row[b->offset] = (float)(v < c->lo ? c->lo : v > c->hi ? c->hi : v);
    }
}

static int cal_sample(const void *impl, size_t n, uint64_t seed, int label, float *out,
                      pg_error *err)
{
    const cal_snap *s = impl;
    const pg_calib_ldp *c = s->c;
    int32_t *lab = NULL;
    int rc;
    if (c->K > 0 && (label < 0 || s->pooled)) {
        lab = malloc((n ? n : 1) * sizeof *lab);
        if (!lab) return pg_error_set(err, PG_ENOMEM, "out of memory drawing classes");
        rc = pg_snapshot_sample_labelled(s->inner, n, seed, out, lab, err);
    } else {
        rc = pg_snapshot_sample(s->inner, n, seed, label, out, err);
    }
    pg_rng rng;
    pg_rng_seeded(&rng, seed, CALIB_LDP_STREAM);
    for (size_t i = 0; rc == PG_OK && i < n; i++)
        apply_row(s, c->K > 0 && !s->pooled ? (size_t)(lab ? lab[i] : label) : 0, out + i * c->d,
                  &rng, true);
    free(lab);
    return rc;
}

static const pg_snapshot_ops CAL_OPS = {cal_sample, cal_destroy, NULL};

/* f moved toward the debiased target t0 by max(0, 1 - se^2 / (t0 - f)^2). */
static double shrink(double f, double t0, double se)
{
    double d = t0 - f;
    if (!(d * d > se * se)) return f;
    return f + (1.0 - se * se / (d * d)) * d;
}

static double clampd(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* The shift s with mean(clamp(c0 + a (v - c0) + s)) = target over the n
 * values v (bisection: the mean is monotone in s). */
static double solve_shift(const float *v, size_t n, double c0, double a, double target, float lo,
                          float hi)
{
    if (n == 0) return 0.0;
    double l = lo - hi - a * (hi - lo), r = -l;
    for (int it = 0; it < 60; it++) {
        double m = 0.5 * (l + r), acc = 0;
        for (size_t i = 0; i < n; i++) acc += clampd(c0 + a * (v[i] - c0) + m, lo, hi);
        if (acc / (double)n < target)
            l = m;
        else
            r = m;
    }
    return 0.5 * (l + r);
}

/* Scale and shift of n values v (mean c0, sd sd0) so that the clamped values
 * have mean t1 and standard deviation t2: the scale starts at t2 / sd0 and
 * is corrected for what the clamp removes (a few rounds; capped at 20). */
static void solve_affine(const float *v, size_t n, double c0, double sd0, double t1, double t2,
                         float lo, float hi, double *a, double *sh)
{
    *a = sd0 > 1e-6 ? fmin(t2 / sd0, 20.0) : 1.0;
    for (int round = 0; round < 4 && n > 1 && sd0 > 1e-6; round++) {
        *sh = solve_shift(v, n, c0, *a, t1, lo, hi);
        double m1 = 0, m2 = 0;
        for (size_t i = 0; i < n; i++) {
            double x = clampd(c0 + *a * (v[i] - c0) + *sh, lo, hi);
            m1 += x, m2 += x * x;
        }
        m1 /= (double)n;
        double sd = sqrt(fmax(m2 / (double)n - m1 * m1, 0.0));
        if (sd > 1e-9) *a = fmin(*a * t2 / sd, 20.0);
    }
    *sh = solve_shift(v, n, c0, *a, t1, lo, hi);
}

int pg_calib_ldp_wrap(const pg_calib_ldp *c, pg_snapshot *inner, size_t per_class,
                      pg_snapshot **out, pg_error *err)
{
    *out = NULL;
    if (pg_snapshot_dim(inner) != c->d || per_class == 0 ||
        pg_snapshot_num_classes(inner) != c->K) {
        pg_snapshot_release(inner);
        return pg_error_set(err, PG_EINVAL, "the calibration does not fit the model");
    }
    cal_snap *s = calloc(1, sizeof *s);
    size_t S = c->S, KK = c->KK;
    float *buf = pg_alloc_f32(per_class * c->d);
    float *vals = pg_alloc_f32(per_class);
    double *f = calloc(S + 1, sizeof *f), *t = calloc(S + 1, sizeof *t);
    int rc = PG_OK;
    if (s) s->inner = inner;
    if (!s || !buf || !vals || !f || !t) rc = PG_ENOMEM;
    if (rc == PG_OK) {
        /* a private copy of the layout */
        s->c = calloc(1, sizeof *s->c);
        if (s->c) {
            *s->c = *c;
            s->c->b = malloc(c->nb * sizeof *c->b + 1);
            s->c->tgt = NULL;
            s->c->se = NULL;
            s->c->qok = malloc(c->nb + 1);
            s->c->qt = malloc(((KK + 1) * c->nb * QMAP_KNOTS + 1) * sizeof *c->qt);
            if (s->c->b) memcpy(s->c->b, c->b, c->nb * sizeof *c->b);
            if (s->c->qok) memcpy(s->c->qok, c->qok, c->nb);
            if (s->c->qt) memcpy(s->c->qt, c->qt, (KK + 1) * c->nb * QMAP_KNOTS * sizeof *c->qt);
        }
        s->gq = calloc(KK * c->nb * QMAP_KNOTS + 1, sizeof *s->gq);
        s->leave = calloc(KK * S + 1, sizeof *s->leave);
        s->cdf = calloc(KK * S + 1, sizeof *s->cdf);
        s->shift = calloc(KK * S + 1, sizeof *s->shift);
        s->scale = calloc(KK * S + 1, sizeof *s->scale);
        s->center = calloc(KK * S + 1, sizeof *s->center);
        if (!s->c || !s->c->b || !s->c->qok || !s->c->qt || !s->gq || !s->leave || !s->cdf ||
            !s->shift || !s->scale || !s->center)
            rc = PG_ENOMEM;
        for (size_t u = 0; rc == PG_OK && u < KK * S; u++) s->scale[u] = 1.0;
    }
    if (rc) {
        rc = pg_error_set(err, PG_ENOMEM, "cannot allocate a calibrated snapshot");
        if (s)
            cal_destroy(s);
        else
            pg_snapshot_release(inner);
        goto done;
    }
    /* Pass 1: the generator's statistics per class (F), then the
     * effective targets (E, see the top). */
    double *F = calloc(KK * S + 1, sizeof *F), *E = calloc(KK * S + 1, sizeof *E);
    const double *wts = pg_snapshot_class_weights(inner);
    s->pooled = pg_calib_ldp_pooled(c);
    /* classes with maps of their own: one when pooled */
    size_t KM = s->pooled ? 1 : KK;
    int32_t *labs = pg_calloc(per_class, sizeof *labs);
    if (!F || !E || !labs)
        rc = pg_error_set(err, PG_ENOMEM, "cannot allocate a calibrated snapshot");
    for (size_t k = 0; k < KM && rc == PG_OK; k++) {
        rc = s->pooled
                 ? pg_snapshot_sample_labelled(inner, per_class, CALIB_LDP_SEED, buf, labs, err)
                 : pg_snapshot_sample(inner, per_class, CALIB_LDP_SEED + k, c->K > 0 ? (int)k : -1,
                                      buf, err);
        if (rc == PG_OK) pg_calib_ldp_measure(c, buf, per_class, F + k * S);
    }
    for (size_t u = 0; rc == PG_OK && u < S; u++) {
        double G = 0, P = 0, v = 0;
        for (size_t k = 0; k < KK; k++) {
            double pk = KK == 1 ? 1.0 : wts ? wts[k] : 1.0 / (double)KK;
            G += s->pooled ? 0.0 : pk * F[k * S + u];
            P += pk * c->tgt[k * S + u];
            v += pk * pk * c->se[k * S + u] * c->se[k * S + u];
        }
        if (s->pooled) G = F[u];
        /* pooled: one target, the generator's mixture moved toward the
         * debiased pooled value; else each class's own statistic moved
         * toward its debiased one (a threshold of cz standard errors on
         * the class differences here zeroed the spreads' differences, whose
         * errors are large, and cost the classifier: docs/benchmarks.md) */
        for (size_t k = 0; k < KM; k++)
            E[k * S + u] = s->pooled ? shrink(G, P, sqrt(v))
                                     : shrink(F[k * S + u], c->tgt[k * S + u], c->se[k * S + u]);
    }
    for (size_t k = 0; k < KM && rc == PG_OK; k++) {
        rc = s->pooled
                 ? pg_snapshot_sample_labelled(inner, per_class, CALIB_LDP_SEED, buf, labs, err)
                 : pg_snapshot_sample(inner, per_class, CALIB_LDP_SEED + k, c->K > 0 ? (int)k : -1,
                                      buf, err);
        if (rc) break;
        const double *tk = E + k * S;
        memset(f, 0, S * sizeof *f);
        for (size_t r = 0; r < per_class; r++)
            for (size_t i = 0; i < c->nb; i++)
                if (c->b[i].kind != BLK_NUM)
                    f[c->b[i].stat + state_of(&c->b[i], buf + r * c->d)] += 1.0 / (double)per_class;
        for (size_t i = 0; i < c->nb; i++) {
            const blk *b = &c->b[i];
            if (b->kind == BLK_NUM) continue;
            double tot = 0;
            for (size_t j = 0; j < b->states; j++) {
                size_t u = b->stat + j;
                t[u] = tk[u] > 0 ? tk[u] : 0.0;
                tot += t[u];
            }
            for (size_t j = 0; j < b->states; j++)
                t[b->stat + j] = tot > 0 ? t[b->stat + j] / tot : f[b->stat + j];
        }
        for (size_t i = 0; i < c->nb; i++) {
            const blk *b = &c->b[i];
            if (b->kind == BLK_NUM) continue;
            double D = 0;
            for (size_t j = 0; j < b->states; j++) {
                size_t u = b->stat + j;
                s->leave[k * S + u] = f[u] > t[u] ? (f[u] - t[u]) / f[u] : 0.0;
                D += t[u] > f[u] ? t[u] - f[u] : 0.0;
            }
            double acc = 0;
            for (size_t j = 0; j < b->states; j++) {
                size_t u = b->stat + j;
                acc += t[u] > f[u] ? t[u] - f[u] : 0.0;
                s->cdf[k * S + u] = D > 0 ? acc / D : 1.0;
            }
            if (!(D > 0))
                for (size_t j = 0; j < b->states; j++) s->leave[k * S + b->stat + j] = 0.0;
        }
        /* Move the measured draw's states (numeric maps still the identity),
         * then solve each numeric unit's scale and shift over its present
         * rows. */
        pg_rng rng;
        pg_rng_seeded(&rng, CALIB_LDP_SEED + k, CALIB_LDP_STREAM);
        for (size_t r = 0; r < per_class; r++) apply_row(s, k, buf + r * c->d, &rng, false);
        for (size_t i = 0; i < c->nb; i++) {
            const blk *b = &c->b[i];
            if (b->kind != BLK_NUM) continue;
            size_t m = 0;
            for (size_t r = 0; r < per_class; r++) {
                const float *row = buf + r * c->d;
                if (b->ind < 0 || state_of(&c->b[b->ind], row) == 0) vals[m++] = row[b->offset];
            }
            if (s->c->qok[i]) {
                /* the generator's quantiles of these values, then the
                 * values through the map (the affine below then only
                 * corrects the moments) */
                double *g = s->gq + (k * c->nb + i) * QMAP_KNOTS;
                double *srt = m ? malloc(m * sizeof *srt) : NULL;
                if (m && !srt) {
                    rc = pg_error_set(err, PG_ENOMEM, "cannot allocate a calibrated snapshot");
                    break;
                }
                for (size_t r = 0; r < m; r++) srt[r] = vals[r];
                if (m) qsort(srt, m, sizeof *srt, cmp_dbl);
                for (size_t j = 0; j < QMAP_KNOTS; j++) {
                    double pos = knot_p(j) * (double)(m ? m - 1 : 0);
                    size_t i0 = (size_t)pos;
                    g[j] = !m           ? 0.0
                           : i0 + 1 < m ? srt[i0] + (pos - (double)i0) * (srt[i0 + 1] - srt[i0])
                                        : srt[m - 1];
                }
                free(srt);
                const double *tq = s->c->qt + ((s->pooled ? KK : k) * c->nb + i) * QMAP_KNOTS;
                for (size_t r = 0; r < m; r++) vals[r] = (float)qmap_apply(g, tq, vals[r]);
            }
            double gm = 0, g2 = 0;
            for (size_t r = 0; r < m; r++) gm += vals[r], g2 += (double)vals[r] * vals[r];
            gm = m ? gm / (double)m : tk[b->stat];
            double gsd = m ? sqrt(fmax(g2 / (double)m - gm * gm, 0.0)) : 0.0;
            size_t u = k * S + b->stat;
            s->center[u] = gm;
            double e1 = tk[b->stat], e2 = tk[b->stat + 1];
            if (s->c->qok[i]) {
                /* the mapped values are now the generator's: its moments
                 * move toward the debiased ones as in pass 1 */
                double tm[2] = {0, 0}, tv[2] = {0, 0};
                for (size_t h = 0; h < 2; h++)
                    for (size_t kk = 0; kk < KK; kk++) {
                        if (!s->pooled && kk != k) continue;
                        double pk = !s->pooled ? 1.0 : wts ? wts[kk] : 1.0 / (double)KK;
                        double sek = c->se[kk * S + b->stat + h];
                        tm[h] += pk * c->tgt[kk * S + b->stat + h];
                        tv[h] += pk * pk * sek * sek;
                    }
                e1 = shrink(gm, tm[0], sqrt(tv[0]));
                /* pooled: the mixture's spread is not the classes' mean
                 * spread; the map's stays */
                e2 = s->pooled ? gsd : shrink(gsd, tm[1], sqrt(tv[1]));
            }
            double t1 = clampd(e1, c->lo, c->hi);
            double t2 = fmin(fmax(e2, 0.0), sqrt((c->hi - t1) * (t1 - c->lo)));
            solve_affine(vals, m, gm, gsd, t1, t2, c->lo, c->hi, &s->scale[u], &s->shift[u]);
        }
    }
    free(F);
    free(E);
    pg_free(labs);
    if (rc) {
        cal_destroy(s);
        goto done;
    }
    /* The wrapper's unlabelled draws follow the inner proportions. */
    const double *w = pg_snapshot_class_weights(inner);
    rc = pg_snapshot_new(&CAL_OPS, s, pg_snapshot_step(inner), c->d, c->K, out, err);
    if (rc == PG_OK && w && (rc = pg_snapshot_set_class_weights(*out, w, err))) {
        pg_snapshot_release(*out);
        *out = NULL;
    }
done:
    pg_free(buf);
    pg_free(vals);
    free(f);
    free(t);
    return rc;
}
