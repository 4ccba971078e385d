/* engine/methods/heads.h - per-block output heads of a generator on a typed
 * table (engine/data/table.h): the layer between the network's raw outputs
 * (logits) and the encoded row the losses and the decoder see.
 *
 * One head per block of the table's encoding (label column excluded):
 *   continuous, integer    numeric: lo + (hi - lo) (tanh(z) + 1) / 2, inside
 *                          the model range [lo, hi], never outside it
 *                          (numeric = PG_HEADS_NUMERIC_TANH); or, with
 *                          PG_HEADS_NUMERIC_CLIP, lo + (hi - lo) (z + 1) / 2
 *                          clamped to [lo, hi]: its slope does not fade
 *                          toward the bounds and it reaches them, so a
 *                          column piled at a bound (a debt of 0) or skewed
 *                          toward one keeps its spread (tanh served such
 *                          columns of credit_data with a tenth of their
 *                          standard deviation, docs/benchmarks.md)
 *   categorical (k)        softmax over the k value units
 *   categorical nullable   softmax over k + 1 units: the k values and the
 *                          missing indicator are one k + 1-state one-hot in
 *                          the encoding (missing = all values 0, indicator 1)
 *   boolean                sigmoid: a 2-way softmax whose "false" state has a
 *                          fixed logit 0 and no unit
 *   boolean nullable       3-way softmax over (false, true, missing) with
 *                          false at logit 0: units (true, missing), so a
 *                          missing boolean is never also "true"
 *   numeric nullable       the numeric head, plus a sigmoid on the indicator
 *                          (the value unit then carries no meaning; the
 *                          decoder ignores it, the losses see it as is)
 * Softmax heads are Gumbel-softmax relaxations at temperature tau: with a
 * random generator, y = softmax((g z + G) / tau), G i.i.d. Gumbel(0, 1) and
 * g the logit gain, so the largest unit (what table.h's decoder takes) is an
 * exact draw from softmax(g z) while y stays close to one-hot and
 * differentiable. The Gumbel noise of each block is independent of every
 * other block's: a generator whose logits barely move with the latent
 * matches each categorical marginal and leaves the blocks independent of
 * each other. A gain g > 1 (model.logit_gain, generator.h) lets the network
 * reach logits that decide the category from the latent (where the
 * dependence between columns lives) with the same weights; the law of a
 * draw stays exactly softmax(g z). The losses
 * see E[y], which differs from softmax(z) by O(tau): at tau 0.3 the entropic
 * GAN's RR test (test_table_ldp_gan) missed the clean frequencies by 0.013,
 * at 0.1 by 0.001, hence PG_HEADS_TAU 0.1. Without a
 * generator (NULL) the plain tempered softmax is used (finite-difference
 * tests, deterministic evaluation).
 *
 * Gradients: pg_heads_backward maps dL/dy to dL/dz using only the outputs y
 * (the noise need not be kept): numeric h (1 - t^2) with t = (y - c) / h
 * (tanh), or h with the clamp's gradient 0 where y sits on a bound and
 * descent would push it out (clip: straight through inside and inward);
 * softmax (g/tau) y_k (d_k - sum_j y_j d_j), d = dL/dy, the fixed reference
 * state contributing no gradient term.
 *
 * The layout is a function of the table: it is never stored apart from the
 * table map (pg_table_to_json) that checkpoints carry; equal maps give equal
 * heads. Ownership: pg_heads_from_table allocates; pg_heads_free releases
 * (NULL is fine). A pg_heads is immutable after creation, so snapshots may
 * share a copy across threads.
 */
#ifndef PG_METHODS_HEADS_H
#define PG_METHODS_HEADS_H

#include <stddef.h>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/data/table.h"

enum pg_head_kind {
    PG_HEAD_NUMERIC = 1,     /* one unit */
    PG_HEAD_SOFTMAX = 2,     /* softmax over `width` units */
    PG_HEAD_SOFTMAX_REF = 3, /* softmax over width + 1 states, state 0 (no unit) at logit 0 */
};

typedef struct pg_head {
    int kind;
    size_t offset, width;
} pg_head;

#define PG_HEADS_TAU 0.1f

enum { PG_HEADS_NUMERIC_TANH = 0, PG_HEADS_NUMERIC_CLIP = 1 };

typedef struct pg_heads {
    size_t d; /* encoded width */
    size_t n;
    pg_head *h;
    float lo, hi, tau;
    float gain;  /* logit gain g > 0; pg_heads_from_table sets 1 */
    int numeric; /* PG_HEADS_NUMERIC_*; pg_heads_from_table sets tanh */
} pg_heads;

/* Layout for table t with temperature tau > 0, gain 1 and tanh numeric
 * heads (the creator may set h->gain and h->numeric before the heads are
 * used or shared). */
int pg_heads_from_table(const pg_table *t, float tau, pg_heads **out, pg_error *err);
int pg_heads_copy(const pg_heads *src, pg_heads **out, pg_error *err);
void pg_heads_free(pg_heads *h);

/* In place, rows of d values at row stride `stride` (>= d): logits -> outputs.
 * rng NULL: no Gumbel noise. */
void pg_heads_forward(const pg_heads *h, pg_rng *rng, float *x, size_t stride, size_t rows);
/* In place: grad (rows x d, contiguous) dL/dy -> dL/dz, given the outputs y
 * (rows of d at stride ystride) that forward produced. */
void pg_heads_backward(const pg_heads *h, const float *y, size_t ystride, float *grad, size_t rows);

#endif
