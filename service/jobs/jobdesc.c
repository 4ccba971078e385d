#include "service/datasets/spec.h"

#include "service/jobs/jobdesc.h"

#include <math.h>
#include <string.h>

#include "engine/privacy/privacy.h"
#include "service/calib.h"
#include "service/typed.h"

int pg_jobdesc_model(int svc_model)
{
    return svc_model == PG_PRIV_LOCAL     ? PG_PRIVACY_LOCAL
           : svc_model == PG_PRIV_CENTRAL ? PG_PRIVACY_CENTRAL
                                          : PG_PRIVACY_PUBLIC;
}

int pg_jobdesc_from_meta(const char *meta, int64_t n, pg_data_desc *desc, pg_error *err)
{
    pg_datasets_spec s;
    int rc = pg_datasets_spec_from_json(meta, &s, err);
    if (rc) return rc;
    memset(desc, 0, sizeof *desc);
    desc->n = n > 0 ? (size_t)n : 0;
    desc->d = s.d;
    desc->ndim = s.ndim;
    for (int i = 0; i < s.ndim && i < 3; i++) desc->shape[i] = (size_t)s.shape[i];
    desc->lo = (float)s.lo;
    desc->hi = (float)s.hi;
    desc->num_classes = (int)s.num_classes;
    desc->model = pg_jobdesc_model(s.model);
    switch (desc->model) {
    case PG_PRIVACY_LOCAL:
        desc->mechanism = s.mechanism == PG_MECH_LAPLACE ? PG_LOCAL_LAPLACE : PG_LOCAL_GAUSSIAN;
        desc->epsilon = s.epsilon;
        desc->delta = s.delta;
        desc->sensitivity = s.sensitivity;
        desc->noise_scale = s.noise_scale;
        break;
    case PG_PRIVACY_CENTRAL:
        desc->cap_epsilon = s.budget_epsilon;
        desc->cap_delta = s.budget_delta;
        break;
    default:
        break;
    }
    if (!s.typed) return PG_OK;
    pg_table *t = NULL;
    pg_ldp_plan *p = NULL;
    if ((rc = pg_typed_table_from_meta(meta, &t, err)) ||
        (rc = pg_typed_ldp_from_meta(meta, t, &p, err))) {
        pg_table_free(t);
        return rc;
    }
    desc->table = t;
    desc->ldp = p;
    if (p) {
        double scale = 0.0;
        for (size_t c = 0; c < p->ncols; c++)
            if (p->cols[c].mechanism != PG_LDP_RR) scale = fmax(scale, p->cols[c].noise_scale);
        desc->mechanism = p->numeric == PG_LDP_GAUSSIAN ? PG_LOCAL_GAUSSIAN : PG_LOCAL_LAPLACE;
        desc->sensitivity = (double)desc->hi - (double)desc->lo;
        desc->noise_scale = scale;
    }
    return PG_OK;
}

void pg_jobdesc_release(pg_data_desc *desc)
{
    pg_table_free((pg_table *)desc->table);
    pg_typed_ldp_free((pg_ldp_plan *)desc->ldp);
    pg_jobdesc_disown(desc);
}

void pg_jobdesc_disown(pg_data_desc *desc)
{
    desc->table = NULL;
    desc->ldp = NULL;
}

int pg_jobdesc_table_from_spec(const json_t *spec, pg_data_desc *desc, pg_error *err)
{
    const json_t *map = json_object_get(spec, PG_JOBDESC_TABLE_KEY);
    if (desc->table || !map) return PG_OK;
    pg_table *t = NULL;
    int rc = pg_table_from_json(map, &t, err);
    if (!rc) desc->table = t;
    return rc;
}

/* Feldman-McMillan-Talwar's numerical analysis holds for any eps0-LDP
 * (pure) randomizer. A Laplace report is eps0-LDP with eps0 = sensitivity /
 * noise_scale (the declared noise may exceed the minimum, so this can be
 * smaller than the declared epsilon). A Gaussian report is only (eps, delta)-LDP;
 * the clone argument extends to approximate LDP with an extra n*delta_0 term
 * (their Thm 3.8), so we report eps at delta_target with delta_total =
 * delta_target + n * delta_ldp when that stays below 1, and say "not
 * applicable" otherwise. delta_target = 1/n^2 capped at 1e-6 (a common
 * choice; the caller sees it). */
json_t *pg_jobdesc_shuffle_json(const pg_data_desc *desc)
{
    if (desc->model != PG_PRIVACY_LOCAL) return NULL;
    uint64_t n = desc->n;
    double target = n > 1000 ? 1.0 / ((double)n * (double)n) : 1e-6;
    if (target > 1e-6) target = 1e-6;
    double eps0 = desc->epsilon;
    double extra = 0.0;
    if (desc->ldp) {
        /* A typed row is eps0-LDP for the declared total (basic composition
         * over its columns): the summary noise_scale and sensitivity of a
         * per-column desc describe no single mechanism and must not lower
         * eps0. */
        if (desc->mechanism == PG_LOCAL_GAUSSIAN) extra = (double)n * desc->delta;
    } else if (desc->mechanism == PG_LOCAL_LAPLACE) {
        if (desc->noise_scale > 0.0 && desc->sensitivity > 0.0)
            eps0 = fmin(eps0, desc->sensitivity / desc->noise_scale);
    } else {
        extra = (double)n * desc->delta;
    }
    json_t *o = json_pack("{s:s,s:f,s:I}", "shuffle_bound", "numerical (Feldman-McMillan-Talwar)",
                          "shuffle_epsilon_ldp", eps0, "shuffle_n", (json_int_t)n);
    if (!o) return NULL;
    double eps;
    int bad;
    /* Every field or none (NULL: out of memory): a job's report is rendered
     * once and stored with its view. */
    if (n < 2 || !(target + extra < 1.0) ||
        pg_shuffle_numerical(eps0, n, target, &eps, NULL) != PG_OK) {
        bad = json_object_set_new(o, "shuffle_epsilon", json_null());
        bad |= json_object_set_new(o, "shuffle_delta", json_null());
        bad |= json_object_set_new(
            o, "shuffle_note",
            json_string(n < 2 ? "needs at least 2 rows"
                              : "not applicable: n * delta_ldp is not below 1"));
    } else {
        bad = json_object_set_new(o, "shuffle_epsilon", json_real(eps));
        bad |= json_object_set_new(o, "shuffle_delta", json_real(target + extra));
        if (extra > 0.0)
            bad |= json_object_set_new(o, "shuffle_note",
                                       json_string("Gaussian LDP: delta includes n * delta_ldp "
                                                   "(approximate LDP clones)"));
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int pg_jobdesc_spec_add_table(json_t *resolved, const pg_data_desc *desc, pg_error *err)
{
    if (!desc->table) return PG_OK;
    json_t *map = pg_table_to_json(desc->table);
    if (!map || json_object_set_new(resolved, PG_JOBDESC_TABLE_KEY, map))
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    return PG_OK;
}
