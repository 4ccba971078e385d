/* qmap_spec - the quantile map as a generator option (qmap_spec.h). */
#include "engine/methods/qmap_spec.h"

#include <math.h>

#include "engine/data/table.h"

static bool applies(const pg_data_desc *desc)
{
    return desc->table && desc->table->width == desc->d && desc->model == PG_PRIVACY_CENTRAL &&
           pg_qmap_columns(desc->table) > 0;
}

bool pg_qmap_spec_on(const json_t *r, const pg_data_desc *desc)
{
    return applies(desc) && pg_spec_bool(r, "encoding.quantile_map", false);
}

void pg_qmap_spec_check(const json_t *r, const pg_data_desc *desc, pg_spec_errors *errors)
{
    if (pg_spec_bool(r, "encoding.quantile_map", false) && !applies(desc))
        pg_spec_error_add(errors, "encoding.quantile_map",
                          "needs a central typed table with a continuous or integer column");
}

bool pg_qmap_spec_add_rdp(const json_t *r, const pg_data_desc *desc, const double *orders, size_t n,
                          double *rdp)
{
    if (!pg_qmap_spec_on(r, desc)) return false;
    double s = pg_spec_num(r, "encoding.quantile_noise", PG_QMAP_DEFAULT_NOISE), one;
    /* The spec table keeps s > 0, so the library cannot refuse it. */
    for (size_t i = 0; i < n; i++)
        if (pg_qmap_rdp(s, &orders[i], 1, &one, NULL) == PG_OK) rdp[i] += one;
    return true;
}

int pg_qmap_spec_release(const json_t *r, const pg_data_desc *desc, pg_rng *secure, const float *x,
                         size_t n, int replace_one, pg_generator *gen, pg_error *err)
{
    if (!pg_qmap_spec_on(r, desc)) return PG_OK;
    pg_qmap_free(gen->qmap);
    gen->qmap = NULL;
    int rc = pg_qmap_release(secure, desc->table, x, n, desc->d,
                             (size_t)pg_spec_int(r, "encoding.quantile_bins", PG_QMAP_DEFAULT_BINS),
                             pg_spec_num(r, "encoding.quantile_noise", PG_QMAP_DEFAULT_NOISE),
                             replace_one, &gen->qmap, err);
    if (rc == PG_OK)
        rc = pg_qmap_set_spread(
            gen->qmap, pg_spec_num(r, "encoding.quantile_spread", PG_QMAP_DEFAULT_SPREAD), err);
    return rc;
}

int pg_qmap_spec_restore(const json_t *r, const pg_data_desc *desc, const json_t *extra,
                         pg_generator *gen, pg_error *err)
{
    bool on = pg_qmap_spec_on(r, desc);
    const json_t *saved = json_object_get(json_object_get(extra, "privacy"), "quantile_noise");
    double s = pg_spec_num(r, "encoding.quantile_noise", PG_QMAP_DEFAULT_NOISE);
    if (on ? !json_is_number(saved) || fabs(json_number_value(saved) - s) > 1e-12 * s
           : saved != NULL)
        return pg_error_set(err, PG_EPRIVACY,
                            "the checkpoint was accounted with a different quantile map "
                            "(encoding.quantile_map, encoding.quantile_noise) than this spec");
    pg_qmap_free(gen->qmap);
    gen->qmap = NULL;
    if (!on) return PG_OK;
    const json_t *m = json_object_get(json_object_get(extra, "generator"), "qmap");
    if (!m) return pg_error_set(err, PG_EFORMAT, "the checkpoint has no quantile map");
    return pg_qmap_from_json(m, desc->d, &gen->qmap, err);
}
