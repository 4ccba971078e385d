/* engine/eval/logreg.h - multinomial logistic regression, the downstream-utility
 * metric of the DP image-generation literature (train on synthetic, score on real).
 *
 * Objective: mean cross-entropy over the n training rows + (l2 / 2)·‖W‖² (the
 * bias is not penalized). Minimized by L-BFGS (two-loop recursion, `memory`
 * pairs) with a backtracking Armijo line search. Stopping rule, stated once:
 * stop when ‖∇‖_∞ ≤ tol, or when the objective improves by less than
 * 1e-10·max(1, |f|) over one iteration, or after max_iter iterations; the
 * report says which. The model is (d + 1) x k floats: rows 0..d-1 are W, row d
 * the bias. Owned by the caller: pg_logreg_free releases it.
 */
#ifndef PG_EVAL_LOGREG_H
#define PG_EVAL_LOGREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/eval/progress.h"

typedef struct pg_logreg {
    size_t d;
    int k;
    float *w; /* (d + 1) * k, pg_alloc'ed */
} pg_logreg;

typedef struct pg_logreg_opts {
    double l2;    /* >= 0; default 1e-4 */
    int max_iter; /* default 300 */
    double tol;   /* gradient sup-norm; default 1e-4 (float32 logits limit it) */
    int memory;   /* L-BFGS pairs; default 10 */
    /* Optional (progress.h): called after every iteration with stage "logreg"
     * and iterations / max_iter; nonzero stops the fit with PG_ECANCELLED.
     * Default NULL. */
    pg_eval_progress_fn progress;
    void *progress_ctx;
} pg_logreg_opts;

typedef struct pg_logreg_report {
    int iters;
    double loss;      /* final objective */
    double grad_norm; /* final ‖∇‖_∞ */
    const char *stop; /* "gradient", "stalled" or "max_iter" */
} pg_logreg_report;

/* Fills opts with the defaults above. */
void pg_logreg_defaults(pg_logreg_opts *opts);

/* Fits on n rows of x (n x d, row-major) with labels y in [0, k). Needs n >= 1,
 * k >= 2; labels outside [0, k) or non-finite features are PG_EINVAL. */
int pg_logreg_fit(pg_logreg *m, const float *x, const int32_t *y, size_t n, size_t d, int k,
                  const pg_logreg_opts *opts, pg_logreg_report *report, pg_error *err);

/* Predicted class of each row. */
int pg_logreg_predict(const pg_logreg *m, const float *x, size_t n, int32_t *out, pg_error *err);

/* Fraction of rows whose predicted class equals y. */
int pg_logreg_accuracy(const pg_logreg *m, const float *x, const int32_t *y, size_t n,
                       double *accuracy, pg_error *err);

/* Objective and gradient at the flat parameter vector theta ((d + 1) * k,
 * layout as pg_logreg.w); exposed for the finite-difference test. */
int pg_logreg_objective(const float *x, const int32_t *y, size_t n, size_t d, int k, double l2,
                        const double *theta, double *f, double *grad, pg_error *err);

void pg_logreg_free(pg_logreg *m);

#endif
