/* swd_spec - privacy resolution of the sliced-Wasserstein trainers (see
 * swd_spec.h; the derivation of the sensitivity is in swd_flow.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/data/table.h"
#include "engine/methods/calib_wire.h"
#include "engine/methods/label_count.h"
#include "engine/methods/latent.h"
#include "engine/methods/qmap_spec.h"
#include "engine/methods/swd_spec.h"
#include "engine/privacy/privacy.h"

const char *const pg_swd_bounds[] = {"auto", "orthogonal", "chernoff", "bernstein", "clt", NULL};
const char *const pg_swd_kinds[] = {"orthonormal", "random", NULL};

void pg_swd_spec_data_checks(const pg_data_desc *desc, pg_spec_errors *errors)
{
    if (desc->model != PG_PRIVACY_CENTRAL)
        pg_spec_error_add(errors, "dataset_id",
                          "sliced-Wasserstein trainers need a central dataset (they privatize "
                          "its projections themselves)");
    else if (desc->n == 0)
        pg_spec_error_add(errors, "dataset_id", "the dataset has no rows");
}

void pg_swd_spec_labels(json_t *r, const pg_data_desc *desc, pg_spec_errors *errors)
{
    const json_t *a = pg_spec_get(r, "labels.class_alpha");
    if (desc->num_classes <= 0) {
        if (a && json_number_value(a) > 0.0)
            pg_spec_error_add(errors, "labels.class_alpha",
                              "the dataset has no labels: leave it out or set it to 0");
        return;
    }
    double R = pg_spec_num(r, "privacy.clip_norm", 1.0);
    double alpha = a ? json_number_value(a) : 0.5 * R;
    if (alpha > R)
        pg_spec_error_add(errors, "labels.class_alpha",
                          "%.6g exceeds privacy.clip_norm %.6g: rows [x; alpha onehot(y)] are "
                          "clipped to R, so R must be at least alpha",
                          alpha, R);
    else if (!a)
        pg_spec_set(r, "labels.class_alpha", json_real(alpha));
}

size_t pg_swd_spec_classes(const json_t *r, const pg_data_desc *desc, double *alpha)
{
    double a = pg_spec_num(r, "labels.class_alpha", 0.0);
    if (desc->num_classes <= 0 || !(a > 0.0)) {
        *alpha = 0.0;
        return 0;
    }
    *alpha = a;
    return (size_t)desc->num_classes;
}

typedef struct resolved_priv {
    int bound;
    double delta, delta0, S;
} resolved_priv;

/* Shared logic; `field` and `msg` receive the first problem. */
static int resolve(const json_t *r, const pg_data_desc *desc, size_t k, long releases, double gamma,
                   pg_swd_privacy *p, resolved_priv *out, const char **field, char *msg,
                   size_t msglen)
{
    memset(p, 0, sizeof *p);
    double alpha;
    size_t dim = desc->d + pg_swd_spec_classes(r, desc, &alpha);
    bool ortho = strcmp(pg_spec_str(r, "projections.kind", "orthonormal"), "orthonormal") == 0;
    const char *b = pg_spec_str(r, "privacy.bound", "auto");
    int bound = strcmp(b, "auto") == 0         ? (ortho ? PG_SWD_ORTHOGONAL : PG_SWD_CHERNOFF)
                : strcmp(b, "orthogonal") == 0 ? PG_SWD_ORTHOGONAL
                : strcmp(b, "chernoff") == 0   ? PG_SWD_CHERNOFF
                : strcmp(b, "bernstein") == 0  ? PG_SWD_BERNSTEIN
                                               : PG_SWD_CLT;
    *field = "privacy.bound";
    if (ortho && bound != PG_SWD_ORTHOGONAL) {
        /* The probabilistic bounds assume independent directions; within an
         * orthonormal block they are not, and the exact bound is tighter. */
        snprintf(msg, msglen, "orthonormal directions use the exact orthogonal bound");
        return PG_EINVAL;
    }
    if (!ortho && bound == PG_SWD_ORTHOGONAL) {
        snprintf(msg, msglen, "the orthogonal bound holds only for orthonormal directions");
        return PG_EINVAL;
    }
    if (bound != PG_SWD_ORTHOGONAL && dim < 2) {
        *field = "projections.kind";
        snprintf(msg, msglen, "random directions need at least 2 features");
        return PG_EINVAL;
    }
    *field = "privacy.delta";
    double delta = pg_spec_num(r, "privacy.delta", desc->cap_delta);
    if (!(delta > 0.0 && delta < 1.0)) {
        snprintf(msg, msglen, "give a delta in (0, 1): the dataset declares no cap delta");
        return PG_EINVAL;
    }
    double delta0 = 0.0;
    if (bound != PG_SWD_ORTHOGONAL) {
        *field = "privacy.delta0";
        delta0 = pg_spec_num(r, "privacy.delta0", delta / (10.0 * (double)releases));
        if (!((double)releases * delta0 < delta)) {
            snprintf(msg, msglen, "%ld releases of delta0 = %.3g exceed delta = %.3g", releases,
                     delta0, delta);
            return PG_EINVAL;
        }
    }
    p->bound = bound;
    p->d = dim; /* the released rows' dimension, label part included */
    p->k = k;
    p->clip = pg_spec_num(r, "privacy.clip_norm", 1.0);
    if (desc->table && desc->table->width == desc->d && !pg_latent_spec_on(r)) {
        /* Rows are valid encodings (checked when the trainer reads them);
         * the label part [alpha onehot(y)] adds at most 2 alpha^2. */
        double l1, l2;
        pg_table_diameter(desc->table, &l1, &l2);
        p->diameter = sqrt(l2 * l2 + (dim > desc->d ? 2.0 * alpha * alpha : 0.0));
    }
    p->delta = delta;
    p->delta0 = delta0;
    p->gamma = gamma;
    /* A conditional model on a labelled typed table releases a DP count of
     * the label (methods whose spec has labels.count_noise: swd_gen). */
    if (dim > desc->d && desc->table && desc->table->label != PG_TABLE_NONE &&
        !pg_latent_spec_on(r) && pg_spec_get(r, "labels.count_noise"))
        p->count_noise = pg_spec_num(r, "labels.count_noise", PG_LABEL_COUNT_NOISE);
    /* The quantile map (methods whose spec has encoding.quantile_map). */
    if (!pg_latent_spec_on(r) && pg_qmap_spec_on(r, desc))
        p->qmap_noise = pg_spec_num(r, "encoding.quantile_noise", PG_QMAP_DEFAULT_NOISE);
    /* The per-class table statistics (methods whose spec has calibration.*:
     * swd_gen), released once before training. */
    if (!pg_latent_spec_on(r)) p->calib_noise = pg_calib_wire_sigma(r, desc);
    pg_error e = {0};
    *field = "privacy";
    if (pg_swd_privacy_init(p, &e)) {
        snprintf(msg, msglen, "%.180s", e.msg);
        return PG_EINVAL;
    }
    double S = 0.0;
    if (pg_spec_get(r, "privacy.epsilon")) {
        *field = "privacy.epsilon";
        if (pg_swd_privacy_calibrate(p, releases, pg_spec_num(r, "privacy.epsilon", 1.0), &S, &e)) {
            snprintf(msg, msglen, "%.180s", e.msg);
            return PG_EINVAL;
        }
    } else if (pg_spec_get(r, "privacy.noise_multiplier")) {
        S = pg_spec_num(r, "privacy.noise_multiplier", 1.0);
    } else {
        *field = "privacy.epsilon";
        snprintf(msg, msglen,
                 "is required on central data: give the job's target epsilon, e.g. "
                 "privacy.epsilon = 1 (privacy.delta defaults to the dataset's cap delta), or "
                 "privacy.noise_multiplier");
        return PG_EINVAL;
    }
    out->bound = bound;
    out->delta = delta;
    out->delta0 = delta0;
    out->S = S;
    return PG_OK;
}

static const char *bound_name(int b)
{
    return b == PG_SWD_ORTHOGONAL  ? "orthogonal"
           : b == PG_SWD_CHERNOFF  ? "chernoff"
           : b == PG_SWD_BERNSTEIN ? "bernstein"
                                   : "clt";
}

void pg_swd_spec_privacy(json_t *r, const pg_data_desc *desc, size_t k, long releases, double gamma,
                         pg_swd_privacy *p, double *S, pg_spec_errors *errors)
{
    resolved_priv rp;
    const char *field;
    char msg[192];
    if (resolve(r, desc, k, releases, gamma, p, &rp, &field, msg, sizeof msg)) {
        pg_spec_error_add(errors, field, "%s", msg);
        return;
    }
    pg_spec_set(r, "privacy.bound", json_string(bound_name(rp.bound)));
    pg_spec_set(r, "privacy.delta", json_real(rp.delta));
    if (rp.bound != PG_SWD_ORTHOGONAL) pg_spec_set(r, "privacy.delta0", json_real(rp.delta0));
    pg_spec_set(r, "privacy.noise_multiplier", json_real(rp.S));
    *S = rp.S;
}

int pg_swd_spec_privacy_get(const json_t *r, const pg_data_desc *desc, size_t k, long releases,
                            double gamma, pg_swd_privacy *p, double *S, pg_error *err)
{
    resolved_priv rp;
    const char *field;
    char msg[192];
    if (resolve(r, desc, k, releases, gamma, p, &rp, &field, msg, sizeof msg))
        return pg_error_set(err, PG_EINVAL, "%s: %s", field, msg);
    *S = rp.S;
    return PG_OK;
}

int pg_swd_spec_plan(const json_t *r, const pg_data_desc *desc, size_t k, long releases, long steps,
                     double gamma, const char *mechanism, pg_privacy_plan *plan, pg_error *err)
{
    memset(plan, 0, sizeof *plan);
    pg_swd_privacy p;
    double S = 0.0;
    int rc = pg_swd_spec_privacy_get(r, desc, k, releases, gamma, &p, &S, err);
    if (rc) return rc;
    rc = pg_swd_privacy_curve(&p, S, releases, plan->orders, plan->rdp, &plan->norders, err);
    if (rc == PG_OK) rc = pg_swd_privacy_epsilon(&p, S, releases, &plan->epsilon, err);
    if (rc) return rc;
    plan->charges = true;
    plan->delta_extra = (double)releases * p.delta0;
    plan->delta = p.delta;
    plan->noise_multiplier = S;
    plan->sampling_rate = gamma;
    /* Training steps; the curve above already composes the releases (the
     * mechanism name says whether that is one or one per step). */
    plan->steps = steps;
    plan->approximate = p.approximate != 0;
    /* The one-off releases after the projections' mechanism (the field
     * holds 255 characters, so every name stays whole; the class statistics
     * and the copula share one multiplier, pg_calib_wire_sigma). */
    bool lc = p.count_noise > 0.0, cs = p.calib_noise > 0.0, qm = p.qmap_noise > 0.0;
    bool cp = cs && pg_calib_wire_copula(r, desc) > 0.0;
    snprintf(plan->mechanism, sizeof plan->mechanism, "%s%s%s%s%s", mechanism,
             lc ? "+label_counts" : "", cs ? "+class_stats" : "", cp ? "+copula" : "",
             qm ? "+qmap" : "");
    snprintf(plan->neighbouring, sizeof plan->neighbouring, "replace_one");
    return PG_OK;
}
