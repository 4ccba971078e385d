/* engine/eval/progress.h - the progress and cancellation hook of the eval
 * module's long computations (report builder, nearest neighbours, logistic
 * regression).
 *
 * The callee calls fn(ctx, stage, fraction) now and then with the name of the
 * stage running and the fraction done in [0, 1], non-decreasing within one
 * call of the callee. A nonzero return asks it to stop: it releases what it
 * allocated and returns PG_ECANCELLED. The hook runs on the caller's thread
 * (never inside an OpenMP region) and must not call back into the callee.
 */
#ifndef PG_EVAL_PROGRESS_H
#define PG_EVAL_PROGRESS_H

typedef int (*pg_eval_progress_fn)(void *ctx, const char *stage, double fraction);

#endif
