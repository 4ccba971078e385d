/* ldp_cost - channel negative log-likelihood cost (contract in ldp_cost.h). */
#include "engine/methods/ldp_cost.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { BLK_RR_CAT = 1, BLK_RR_REF = 2, BLK_LAPLACE = 3, BLK_GAUSS = 4 };

/* Floor of a reported state's probability. The identity channel
 * (channel = false) reaches 0, so the baseline floors at 1e-6 as before.
 * Through the channel q >= a > 0, and the floor only keeps the gradient
 * b / q finite in float: 1e-30 leaves the cost exact up to a column
 * epsilon of about 69 (the old common floor 1e-6 capped a mismatch at
 * 13.8, the cost of a column epsilon of 13.8 however large the real one:
 * at a local epsilon of 1000 over 14 columns, 71 each, a category or label
 * mismatch cost a fifth of what the privatizer's channel says). */
#define Q_FLOOR_IDENTITY 1e-6
#define Q_FLOOR_CHANNEL  1e-30

typedef struct blk {
    int kind;
    size_t offset, width; /* units */
    size_t k;             /* RR states */
    double a, b;          /* RR: q = a + b p */
    double floor;         /* RR: least q (Q_FLOOR_*) */
    double scale;         /* numeric: Laplace b or Gaussian sigma */
    double weight;        /* numeric: factor on the block's cost (1: the likelihood) */
    size_t state0;        /* first slot of this block's states in a row's table */
} blk;

struct pg_ldp_cost {
    size_t d, n, states;
    blk *b;
};

double pg_ldp_rr_other(size_t k, double keep, double epsilon)
{
    /* (1 - keep) / (k - 1) loses every digit once keep rounds to 1 (a
     * column epsilon above about 37); the declaration guarantees keep <=
     * e^eps / (e^eps + k - 1), so the other state's probability is at least
     * e^-eps / (1 + (k - 1) e^-eps), which is exact when keep is at that
     * maximum: the larger of the two is right to double precision. */
    double a = (1.0 - keep) / (double)(k - 1);
    if (epsilon > 0.0 && isfinite(epsilon)) {
        double r = exp(-epsilon);
        a = fmax(a, r / (1.0 + (double)(k - 1) * r));
    }
    return a;
}

static void rr_ab(size_t k, double keep, double epsilon, bool channel, blk *x)
{
    if (!channel) {
        x->a = 0.0;
        x->b = 1.0;
        x->floor = Q_FLOOR_IDENTITY;
        return;
    }
    x->a = pg_ldp_rr_other(k, keep, epsilon);
    x->b = keep - x->a;
    x->floor = Q_FLOOR_CHANNEL;
}

int pg_ldp_cost_make(const pg_table *t, const pg_ldp_plan *plan, bool channel, pg_ldp_cost **out,
                     pg_error *err)
{
    *out = NULL;
    if (!t || !plan || plan->ncols != t->ncols)
        return pg_error_set(err, PG_EINVAL, "the local plan does not belong to the table");
    pg_ldp_cost *c = calloc(1, sizeof *c);
    blk *b = calloc(2 * t->ncols + 1, sizeof *b);
    if (!c || !b) {
        free(c);
        free(b);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the channel cost");
    }
    size_t n = 0, states = 0;
    for (size_t i = 0; i < t->ncols; i++) {
        const pg_table_col *col = &t->cols[i];
        const pg_ldp_column *pc = &plan->cols[i];
        if (col->width == 0) continue; /* label */
        if (col->type == PG_COL_CATEGORICAL || col->type == PG_COL_BOOLEAN) {
            size_t k = col->type == PG_COL_CATEGORICAL ? col->width : col->width + 1;
            if (pc->mechanism != PG_LDP_RR || pc->k != k || !(pc->keep >= 1.0 / (double)k) ||
                !(pc->keep <= 1.0)) {
                free(c);
                free(b);
                return pg_error_set(err, PG_EINVAL,
                                    "column '%s': the plan's randomized response does not "
                                    "match the column",
                                    col->name);
            }
            blk *x = &b[n++];
            x->kind = col->type == PG_COL_CATEGORICAL ? BLK_RR_CAT : BLK_RR_REF;
            x->offset = col->offset;
            x->width = col->width;
            x->k = k;
            rr_ab(k, pc->keep, pc->epsilon, channel, x);
            x->state0 = states;
            states += k;
            continue;
        }
        if ((pc->mechanism != PG_LDP_LAPLACE && pc->mechanism != PG_LDP_GAUSSIAN) ||
            !(pc->noise_scale > 0.0) || !isfinite(pc->noise_scale) ||
            (col->nullable && !(pc->missing_keep >= 0.5 && pc->missing_keep <= 1.0))) {
            free(c);
            free(b);
            return pg_error_set(err, PG_EINVAL,
                                "column '%s': the plan's noise does not match the column",
                                col->name);
        }
        blk *x = &b[n++];
        x->kind = pc->mechanism == PG_LDP_LAPLACE ? BLK_LAPLACE : BLK_GAUSS;
        x->offset = col->offset;
        x->width = 1;
        x->scale = pc->noise_scale;
        x->weight = 1.0;
        if (col->nullable) {
            blk *m = &b[n++];
            m->kind = BLK_RR_REF;
            m->offset = col->offset + 1;
            m->width = 1;
            m->k = 2;
            rr_ab(2, pc->missing_keep, pc->missing_epsilon, channel, m);
            m->state0 = states;
            states += 2;
        }
    }
    c->d = t->width;
    c->n = n;
    c->states = states;
    c->b = b;
    *out = c;
    return PG_OK;
}

void pg_ldp_cost_set_numeric_weight(pg_ldp_cost *c, double w)
{
    for (size_t k = 0; k < c->n; k++)
        if (c->b[k].kind == BLK_LAPLACE || c->b[k].kind == BLK_GAUSS) c->b[k].weight = w;
}

void pg_ldp_cost_free(pg_ldp_cost *c)
{
    if (!c) return;
    free(c->b);
    free(c);
}

/* Probability of state s under the generated units u of block x. */
static double state_prob(const blk *x, const float *u, size_t s)
{
    if (x->kind == BLK_RR_CAT) return u[s];
    if (s > 0) return u[s - 1];
    double p0 = 1.0;
    for (size_t k = 0; k < x->width; k++) p0 -= u[k];
    return p0;
}

/* The reported state of a privatized row (a clean encoding). */
static size_t reported_state(const blk *x, const float *u)
{
    if (x->kind == BLK_RR_CAT) {
        size_t best = 0;
        for (size_t k = 1; k < x->width; k++)
            if (u[k] > u[best]) best = k;
        return best;
    }
    for (size_t k = x->width; k-- > 0;)
        if (u[k] > 0.5f) return k + 1;
    return 0;
}

static double q_of(const blk *x, double p)
{
    double q = x->a + x->b * p;
    return q < x->floor ? x->floor : q;
}

/* Per-row tables: nll[i * states + slot] for the generated rows, the
 * reported slot of every block for the data rows. */
static int tables(const pg_ldp_cost *c, const float *x, size_t n, const float *y, size_t m,
                  double **nll, size_t **rep, pg_error *err)
{
    *nll = malloc((n * c->states + 1) * sizeof **nll);
    *rep = malloc((m * c->n + 1) * sizeof **rep);
    if (!*nll || !*rep) {
        free(*nll);
        free(*rep);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the channel cost tables");
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < c->n; j++) {
            const blk *b = &c->b[j];
            if (b->kind == BLK_LAPLACE || b->kind == BLK_GAUSS) continue;
            for (size_t s = 0; s < b->k; s++)
                (*nll)[i * c->states + b->state0 + s] =
                    -log(q_of(b, state_prob(b, x + i * c->d + b->offset, s)));
        }
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < c->n; j++) {
            const blk *b = &c->b[j];
            (*rep)[i * c->n + j] = b->kind == BLK_LAPLACE || b->kind == BLK_GAUSS
                                       ? 0
                                       : b->state0 + reported_state(b, y + i * c->d + b->offset);
        }
    return PG_OK;
}

int pg_ldp_cost_matrix(const pg_ldp_cost *c, const float *x, size_t n, const float *y, size_t m,
                       float *C, size_t ld, pg_error *err)
{
    double *nll;
    size_t *rep;
    int rc = tables(c, x, n, y, m, &nll, &rep, err);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++) {
        const float *xi = x + i * c->d;
        for (size_t j = 0; j < m; j++) {
            const float *yj = y + j * c->d;
            double v = 0.0;
            for (size_t k = 0; k < c->n; k++) {
                const blk *b = &c->b[k];
                double t = (double)xi[b->offset] - yj[b->offset];
                if (b->kind == BLK_LAPLACE)
                    v += b->weight * fabs(t) / b->scale;
                else if (b->kind == BLK_GAUSS)
                    v += b->weight * t * t / (2.0 * b->scale * b->scale);
                else
                    v += nll[i * c->states + rep[j * c->n + k]];
            }
            C[i * ld + j] = (float)v;
        }
    }
    free(nll);
    free(rep);
    return PG_OK;
}

int pg_ldp_cost_grad(const pg_ldp_cost *c, const float *x, size_t n, const float *y, size_t m,
                     const float *P, size_t ld, float *grad, pg_error *err)
{
    double *w;
    size_t *rep;
    /* The nll table is not needed here: reuse its allocation for the plan
     * mass per (row, state). */
    int rc = tables(c, x, n, y, m, &w, &rep, err);
    if (rc) return rc;
    memset(grad, 0, n * c->d * sizeof *grad);
    for (size_t i = 0; i < n; i++) {
        const float *xi = x + i * c->d;
        double *wi = w + i * c->states;
        for (size_t s = 0; s < c->states; s++) wi[s] = 0.0;
        float *gi = grad + i * c->d;
        for (size_t j = 0; j < m; j++) {
            double p = P[i * ld + j];
            const float *yj = y + j * c->d;
            for (size_t k = 0; k < c->n; k++) {
                const blk *b = &c->b[k];
                double t = (double)xi[b->offset] - yj[b->offset];
                if (b->kind == BLK_LAPLACE)
                    gi[b->offset] += (float)(p * b->weight *
                                             (t > 0   ? 1.0
                                              : t < 0 ? -1.0
                                                      : 0.0) /
                                             b->scale);
                else if (b->kind == BLK_GAUSS)
                    gi[b->offset] += (float)(p * b->weight * t / (b->scale * b->scale));
                else
                    wi[rep[j * c->n + k]] += p;
            }
        }
        for (size_t k = 0; k < c->n; k++) {
            const blk *b = &c->b[k];
            if (b->kind == BLK_LAPLACE || b->kind == BLK_GAUSS) continue;
            const float *u = xi + b->offset;
            double gs[64], *g = b->k <= 64 ? gs : malloc(b->k * sizeof *g);
            if (!g) {
                free(w);
                free(rep);
                return pg_error_set(err, PG_ENOMEM, "out of memory");
            }
            /* d(-log q_s)/dp_s = -b / q_s (0 where the floor holds) */
            for (size_t s = 0; s < b->k; s++) {
                double q = b->a + b->b * state_prob(b, u, s);
                g[s] = q > b->floor ? -wi[b->state0 + s] * b->b / q : 0.0;
            }
            float *gu = gi + b->offset;
            if (b->kind == BLK_RR_CAT)
                for (size_t s = 0; s < b->k; s++) gu[s] += (float)g[s];
            else /* p_0 = 1 - sum of the units */
                for (size_t s = 1; s < b->k; s++) gu[s - 1] += (float)(g[s] - g[0]);
            if (g != gs) free(g);
        }
    }
    free(w);
    free(rep);
    return PG_OK;
}
