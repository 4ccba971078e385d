/* qmap_spec - the quantile map as a generator option (qmap_spec.h). */
#include "engine/methods/qmap_spec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/methods/calib_table.h"

#include "engine/data/table.h"

static bool applies(const pg_data_desc *desc)
{
    return desc->table && desc->table->width == desc->d && desc->model == PG_PRIVACY_CENTRAL &&
           pg_qmap_columns(desc->table) > 0;
}

/* encoding.quantile_sub (0 when absent) and its noise (twice the map's). */
static size_t sub_of_spec(const json_t *r)
{
    return (size_t)pg_spec_int(r, "encoding.quantile_sub", 0);
}

static double sub_noise_of_spec(const json_t *r)
{
    return pg_spec_num(r, "encoding.quantile_sub_noise",
                       2.0 * pg_spec_num(r, "encoding.quantile_noise", PG_QMAP_DEFAULT_NOISE));
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
    if (sub_of_spec(r) == 1)
        pg_spec_error_add(errors, "encoding.quantile_sub", "0 (none) or 2 .. 256 sub-bins");
    else if (sub_of_spec(r) >= 2 && !pg_qmap_spec_on(r, desc))
        pg_spec_error_add(errors, "encoding.quantile_sub", "needs encoding.quantile_map");
}

bool pg_qmap_spec_add_rdp(const json_t *r, const pg_data_desc *desc, const double *orders, size_t n,
                          double *rdp)
{
    if (!pg_qmap_spec_on(r, desc)) return false;
    double s = pg_spec_num(r, "encoding.quantile_noise", PG_QMAP_DEFAULT_NOISE), one;
    /* The spec table keeps s > 0, so the library cannot refuse it. */
    for (size_t i = 0; i < n; i++)
        if (pg_qmap_rdp(s, &orders[i], 1, &one, NULL) == PG_OK) rdp[i] += one;
    /* The sub-bins' release: its own Gaussian, composed (charged whenever
     * asked for, even where the quantile rule would not release it). */
    if (sub_of_spec(r) >= 2) {
        double s2 = sub_noise_of_spec(r);
        for (size_t i = 0; i < n; i++)
            if (pg_qmap_rdp(s2, &orders[i], 1, &one, NULL) == PG_OK) rdp[i] += one;
    }
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
    /* Sub-bins asked for without the per-class rule: charged, never
     * released; the map records them so that restores compare alike. */
    if (rc == PG_OK && sub_of_spec(r) >= 2) {
        gen->qmap->sub = sub_of_spec(r);
        gen->qmap->sub_noise = sub_noise_of_spec(r);
    }
    return rc;
}

int pg_qmap_spec_release_classes(const json_t *r, const pg_data_desc *desc, pg_rng *secure,
                                 const float *x, const int32_t *labels, size_t n, int classes,
                                 int replace_one, pg_generator *gen, float *class_cdf,
                                 pg_error *err)
{
    if (!pg_qmap_spec_on(r, desc))
        return pg_error_set(err, PG_EINVAL, "the per-class quantile map needs the quantile map");
    size_t K = classes > 0 ? (size_t)classes : 1;
    pg_qmap **per = calloc(K, sizeof *per), *pooled = NULL;
    if (!per) return pg_error_set(err, PG_ENOMEM, "cannot allocate the per-class maps");
    int rc = pg_qmap_release_classes(
        secure, desc->table, x, labels, n, desc->d, classes,
        (size_t)pg_spec_int(r, "encoding.quantile_bins", PG_QMAP_DEFAULT_BINS),
        pg_spec_num(r, "encoding.quantile_noise", PG_QMAP_DEFAULT_NOISE), replace_one, &pooled, per,
        NULL, err);
    if (rc == PG_OK)
        rc = pg_qmap_set_spread(
            pooled, pg_spec_num(r, "encoding.quantile_spread", PG_QMAP_DEFAULT_SPREAD), err);
    size_t sub = sub_of_spec(r), tb = pooled ? pg_qmap_total_bins(pooled) : 0;
    size_t coarse = tb + (pooled ? pooled->ncols : 0), len = 0;
    float *fine = NULL;
    if (rc == PG_OK && sub >= 2) {
        pooled->sub = sub;
        pooled->sub_noise = sub_noise_of_spec(r);
        len = pg_qmap_sub_len(pooled, sub);
        if (!(fine = malloc((K * len > 0 ? K * len : 1) * sizeof *fine)))
            rc = pg_error_set(err, PG_ENOMEM, "cannot allocate the sub-bins");
        if (rc == PG_OK)
            rc = pg_qmap_release_sub(secure, pooled, x, labels, n, desc->d, classes, sub,
                                     pooled->sub_noise, replace_one, fine, NULL, err);
    }
    if (rc == PG_OK) {
        pg_calib_table_class_cdf((const pg_qmap *const *)per, classes, class_cdf);
        if (len) {
            /* each class's bin CDFs, then its within-bin CDFs (calib_table.h) */
            for (size_t k = K; k-- > 0;) {
                memmove(class_cdf + k * (coarse + len), class_cdf + k * coarse,
                        coarse * sizeof *class_cdf);
                memcpy(class_cdf + k * (coarse + len) + coarse, fine + k * len,
                       len * sizeof *class_cdf);
            }
        }
        pg_qmap_free(gen->qmap);
        gen->qmap = pooled;
        pooled = NULL;
    }
    free(fine);
    pg_qmap_free(pooled);
    for (size_t k = 0; k < K; k++) pg_qmap_free(per[k]);
    free(per);
    return rc;
}

size_t pg_qmap_spec_cdf_len(const json_t *r, const pg_data_desc *desc)
{
    pg_qmap *m = NULL;
    if (!desc->table ||
        pg_qmap_layout(desc->table,
                       (size_t)pg_spec_int(r, "encoding.quantile_bins", PG_QMAP_DEFAULT_BINS), &m,
                       NULL) != PG_OK)
        return 0;
    m->sub = sub_of_spec(r) >= 2 ? sub_of_spec(r) : 0;
    size_t len = pg_calib_table_cdf_len(m);
    pg_qmap_free(m);
    return len;
}

int pg_qmap_spec_save_sub(json_t *privacy, const pg_generator *gen)
{
    if (!gen->qmap || !gen->qmap->sub) return 0;
    if (!json_is_object(privacy) ||
        json_object_set_new(privacy, "quantile_sub", json_integer((json_int_t)gen->qmap->sub)) ||
        json_object_set_new(privacy, "quantile_sub_noise", json_real(gen->qmap->sub_noise)))
        return -1;
    return 0;
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
    int rc = pg_qmap_from_json(m, desc->d, &gen->qmap, err);
    /* The sub-bins were released and charged under the map's S and s2
     * (qmap.h): only the same spec restores them. */
    size_t sub = sub_of_spec(r) >= 2 ? sub_of_spec(r) : 0;
    if (rc == PG_OK &&
        (gen->qmap->sub != sub || (sub && fabs(gen->qmap->sub_noise - sub_noise_of_spec(r)) >
                                              1e-12 * sub_noise_of_spec(r)))) {
        pg_qmap_free(gen->qmap);
        gen->qmap = NULL;
        return pg_error_set(err, PG_EPRIVACY,
                            "the checkpoint was accounted with different quantile sub-bins "
                            "(encoding.quantile_sub, encoding.quantile_sub_noise) than this spec");
    }
    return rc;
}
