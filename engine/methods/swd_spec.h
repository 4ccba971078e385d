/* engine/methods/swd_spec.h - spec rows and privacy resolution shared by the
 * sliced-Wasserstein trainers (swd_flow, swd_flow_r, swd_gen).
 *
 * A spec's privacy is {"epsilon": E[, "delta": D]} (the noise multiplier is
 * calibrated for the planned releases, and recorded in the resolved spec) or
 * {"noise_multiplier": S} (epsilon reported at the dataset's cap delta). With
 * epsilon present the recorded multiplier is recomputed, so a resolved spec
 * re-validates to itself. Central data only; a spec without DP is refused.
 * Errors: validation adds field errors; the *_get/plan functions read a
 * resolved spec and return PG_EINVAL with a sentence when it is inconsistent.
 */
#ifndef PG_METHODS_SWD_SPEC_H
#define PG_METHODS_SWD_SPEC_H

#include "engine/methods/spec.h"
#include "engine/methods/swd.h"

extern const char *const pg_swd_bounds[];
extern const char *const pg_swd_kinds[];

#define PG_SWD_PRIVACY_ROWS                                                                        \
    {"privacy.epsilon",                                                                            \
     PG_PARAM_NUM,                                                                                 \
     NULL,                                                                                         \
     0,                                                                                            \
     1e4,                                                                                          \
     NULL,                                                                                         \
     0,                                                                                            \
     PG_PARAM_OPTIONAL | PG_PARAM_EXCLUSIVE_MIN,                                                   \
     "Target epsilon of this job (required unless privacy.noise_multiplier is given): the "        \
     "noise multiplier is calibrated for the planned releases."},                                  \
        {"privacy.delta",                                                                          \
         PG_PARAM_NUM,                                                                             \
         NULL,                                                                                     \
         0,                                                                                        \
         0.5,                                                                                      \
         NULL,                                                                                     \
         0,                                                                                        \
         PG_PARAM_OPTIONAL | PG_PARAM_EXCLUSIVE_MIN,                                               \
         "Total delta (default: the dataset's cap delta); includes every release's delta0."},      \
        {"privacy.noise_multiplier",                                                               \
         PG_PARAM_NUM,                                                                             \
         NULL,                                                                                     \
         0,                                                                                        \
         1e4,                                                                                      \
         NULL,                                                                                     \
         0,                                                                                        \
         PG_PARAM_OPTIONAL | PG_PARAM_EXCLUSIVE_MIN,                                               \
         "Noise std / sensitivity of each release (used when epsilon is absent)."},                \
        {"privacy.clip_norm",                                                                      \
         PG_PARAM_NUM,                                                                             \
         "1",                                                                                      \
         0,                                                                                        \
         1e9,                                                                                      \
         NULL,                                                                                     \
         0,                                                                                        \
         PG_PARAM_EXCLUSIVE_MIN,                                                                   \
         "Rows are clipped to this l2 norm R before projection (small unlabelled central "         \
         "data: max(|lo|, |hi|) of the declared range)."},                                         \
        {"privacy.bound",                                                                          \
         PG_PARAM_STR,                                                                             \
         "\"auto\"",                                                                               \
         0,                                                                                        \
         0,                                                                                        \
         pg_swd_bounds,                                                                            \
         0,                                                                                        \
         0,                                                                                        \
         "Sensitivity bound: orthogonal (exact, orthonormal directions), chernoff, bernstein, "    \
         "clt (approximate); auto picks orthogonal or chernoff."},                                 \
    {                                                                                              \
        "privacy.delta0", PG_PARAM_NUM, NULL, 0, 0.5, NULL, 0,                                     \
            PG_PARAM_OPTIONAL | PG_PARAM_EXCLUSIVE_MIN,                                            \
            "Failure probability of a probabilistic bound per release (default delta / (10 "       \
            "releases))."                                                                          \
    }

#define PG_SWD_PROJECTION_ROWS                                                                     \
    {"projections.kind",                                                                           \
     PG_PARAM_STR,                                                                                 \
     "\"orthonormal\"",                                                                            \
     0,                                                                                            \
     0,                                                                                            \
     pg_swd_kinds,                                                                                 \
     0,                                                                                            \
     0,                                                                                            \
     "Directions: orthonormal blocks (exact sensitivity) or i.i.d. random unit vectors."},         \
    {                                                                                              \
        "projections.per_step", PG_PARAM_INT, "200", 1, 100000, NULL, 0, 0,                        \
            "Directions used per step (M_theta; small vector data: d, one orthonormal block)."     \
    }

/* Class conditioning (labelled datasets): each private row becomes
 * [x ; alpha onehot(y)] BEFORE clipping to privacy.clip_norm R, so R bounds
 * the label part too and the privacy bounds use the augmented dimension
 * d + C. Validation fills the default alpha = R / 2 on labelled data and
 * refuses alpha > R (the label part alone would be clipped). A resolved spec
 * without the field (written before labels existed) reads as alpha = 0:
 * unconditional, exactly as before. */
#define PG_SWD_LABEL_ROWS                                                                          \
    {                                                                                              \
        "labels.class_alpha", PG_PARAM_NUM, NULL, 0, 1e9, NULL, 0, PG_PARAM_OPTIONAL,              \
            "Class augmentation weight alpha on labelled data: rows become [x; alpha onehot(y)] "  \
            "before clipping to privacy.clip_norm R, so R must cover the label part (alpha <= R; " \
            "default R/2). Flow particles get fixed classes, balanced (the data's proportions "    \
            "are private), with label coordinates held at alpha onehot(class); a larger alpha "    \
            "ties features to classes more strongly. 0 ignores the labels."                        \
    }

/* Validation of labels.class_alpha: fills the default on labelled data and
 * adds field errors. Call before pg_swd_spec_privacy. */
void pg_swd_spec_labels(json_t *r, const pg_data_desc *desc, pg_spec_errors *errors);

/* Classes appended to each row by a resolved spec (0: unconditional) and
 * their weight alpha. */
size_t pg_swd_spec_classes(const json_t *r, const pg_data_desc *desc, double *alpha);

/* Central data, at least one row. */
void pg_swd_spec_data_checks(const pg_data_desc *desc, pg_spec_errors *errors);

/* Validation: resolves the privacy of `releases` releases on k directions at
 * sampling fraction gamma, adds field errors, and writes the concrete bound,
 * delta, delta0 and noise multiplier into r. The released rows have
 * desc->d + pg_swd_spec_classes(r, desc) features: p->d is that dimension. */
void pg_swd_spec_privacy(json_t *r, const pg_data_desc *desc, size_t k, long releases, double gamma,
                         pg_swd_privacy *p, double *S, pg_spec_errors *errors);

/* Same on a resolved spec, without writing. */
int pg_swd_spec_privacy_get(const json_t *r, const pg_data_desc *desc, size_t k, long releases,
                            double gamma, pg_swd_privacy *p, double *S, pg_error *err);

/* The ledger's plan for those releases over `steps` training steps (the
 * RDP curve is the composed total; plan->steps is informational). */
int pg_swd_spec_plan(const json_t *r, const pg_data_desc *desc, size_t k, long releases, long steps,
                     double gamma, const char *mechanism, pg_privacy_plan *plan, pg_error *err);

#endif
