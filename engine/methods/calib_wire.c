/* calib_wire - per-class table calibration as a job option (calib_wire.h). */
#include "engine/methods/calib_wire.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/data/table.h"
#include "engine/methods/calib_table.h"
#include "engine/methods/qmap_spec.h"

const char *const pg_calib_wire_rules[] = {"shift", "rank", "quantile", NULL};

bool pg_calib_wire_on(const json_t *r, const pg_data_desc *desc)
{
    return desc->table && desc->table->width == desc->d &&
           pg_spec_bool(r, "calibration.class_means", false);
}

double pg_calib_wire_sigma(const json_t *r, const pg_data_desc *desc)
{
    return pg_calib_wire_on(r, desc) ? pg_spec_num(r, "calibration.noise_multiplier", 5) : 0.0;
}

static const char *rule_of(const json_t *r)
{
    return pg_spec_str(r, "calibration.numeric", "shift");
}

void pg_calib_wire_check(const json_t *r, const pg_data_desc *desc, pg_spec_errors *errors)
{
    bool asked = pg_spec_bool(r, "calibration.class_means", false);
    /* The rule works per output head: one-hot blocks move between states,
     * which untyped rows (or a table under another encoding) do not have. */
    if (asked && !pg_calib_wire_on(r, desc))
        pg_spec_error_add(errors, "calibration.class_means",
                          "needs a typed table in its own encoding");
    if (strcmp(rule_of(r), "quantile") == 0 && !(asked && pg_qmap_spec_on(r, desc)))
        pg_spec_error_add(errors, "calibration.numeric",
                          "\"quantile\" needs calibration.class_means and the quantile map "
                          "(encoding.quantile_map) on a typed table");
    /* Redrawing a number from its class's marginal needs that class's
     * released CDF, which only the quantile rule has. */
    if (pg_spec_num(r, "calibration.independence", 0.0) > 0.0 &&
        !(pg_calib_wire_on(r, desc) && strcmp(rule_of(r), "quantile") == 0))
        pg_spec_error_add(errors, "calibration.independence",
                          "needs calibration.class_means on a typed table with "
                          "calibration.numeric \"quantile\"");
}

void pg_calib_wire_free(pg_calib_wire *w)
{
    free(w->targets);
    free(w->class_cdf);
    memset(w, 0, sizeof *w);
}

int pg_calib_wire_init(pg_calib_wire *w, const json_t *r, const pg_data_desc *desc,
                       const pg_generator *gen, pg_error *err)
{
    memset(w, 0, sizeof *w);
    if (!pg_calib_wire_on(r, desc)) return PG_OK;
    if (!gen->heads || gen->d != desc->d)
        return pg_error_set(err, PG_EINVAL, "table calibration needs the table's output heads");
    const char *rule = rule_of(r);
    w->sigma = pg_spec_num(r, "calibration.noise_multiplier", 5);
    w->quantile = strcmp(rule, "quantile") == 0;
    w->rank = strcmp(rule, "rank") == 0;
    w->indep = pg_spec_num(r, "calibration.independence", 0.0);
    if (!(w->indep >= 0.0 && w->indep <= 1.0) || (w->indep > 0.0 && !w->quantile))
        return pg_error_set(err, PG_EINVAL, "calibration.independence needs the quantile rule");
    if (w->quantile && !pg_qmap_spec_on(r, desc))
        return pg_error_set(err, PG_EINVAL, "calibration.numeric quantile needs the quantile map");
    w->per_class = (size_t)pg_spec_int(r, "calibration.samples_per_class", 1000);
    w->K = gen->num_classes > 0 ? (size_t)gen->num_classes : 1;
    w->width = 2 * desc->d;
    w->cdf_len = w->quantile ? pg_qmap_spec_cdf_len(r, desc) : 0;
    w->targets = malloc(w->K * w->width * sizeof *w->targets);
    if (w->quantile) w->class_cdf = malloc(w->K * w->cdf_len * sizeof *w->class_cdf);
    if (!w->targets || (w->quantile && !w->class_cdf)) {
        pg_calib_wire_free(w);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the calibration targets");
    }
    return PG_OK;
}

int pg_calib_wire_release(pg_calib_wire *w, const json_t *r, const pg_data_desc *desc,
                          pg_rng *secure, const pg_dataset *data, int replace_one,
                          pg_generator *gen, pg_error *err)
{
    int classes = gen->num_classes;
    const int32_t *labels = classes > 0 ? data->labels : NULL;
    int rc = PG_OK;
    /* The map first: the statistics are read where the generator trains. */
    if (w->quantile)
        rc = pg_qmap_spec_release_classes(r, desc, secure, data->x, labels, data->n, classes,
                                          replace_one, gen, w->class_cdf, err);
    else if (pg_qmap_spec_on(r, desc))
        rc = pg_qmap_spec_release(r, desc, secure, data->x, data->n, replace_one, gen, err);
    if (rc == PG_OK && w->sigma > 0.0)
        rc = pg_calib_table_release(secure, gen->heads, gen->qmap, data->x, labels, data->n,
                                    classes, w->sigma, w->rank, w->targets, NULL, err);
    return rc;
}

static const char *rule_name(const pg_calib_wire *w)
{
    return w->quantile ? "quantile" : w->rank ? "rank" : "shift";
}

int pg_calib_wire_save(const pg_calib_wire *w, json_t *extra, pg_ckpt_tensor *t, size_t *n,
                       pg_error *err)
{
    *n = 0;
    if (!(w->sigma > 0.0)) return PG_OK;
    json_t *priv = json_object_get(extra, "privacy");
    if (!priv && json_object_set_new(extra, "privacy", priv = json_object()))
        return pg_error_set(err, PG_ENOMEM, "cannot write the checkpoint header");
    if (json_object_set_new(priv, "calibration_noise_multiplier", json_real(w->sigma)) ||
        json_object_set_new(extra, "calibration",
                            json_pack("{s:i,s:s,s:s,s:I}", "version", PG_CALIB_WIRE_VERSION, "kind",
                                      "table", "numeric", rule_name(w), "per_class",
                                      (json_int_t)w->per_class)))
        return pg_error_set(err, PG_ENOMEM, "cannot write the checkpoint header");
    /* Only when on, so that checkpoints without it keep their bytes. */
    if (w->indep > 0.0 && json_object_set_new(json_object_get(extra, "calibration"), "independence",
                                              json_real(w->indep)))
        return pg_error_set(err, PG_ENOMEM, "cannot write the checkpoint header");
    t[0] = (pg_ckpt_tensor){
        .name = PG_GENERATOR_CALIB_TENSOR, .ndim = 2, .dims = {w->K, w->width}, .data = w->targets};
    *n = 1;
    if (w->quantile)
        t[(*n)++] = (pg_ckpt_tensor){.name = PG_GENERATOR_CLASS_CDF_TENSOR,
                                     .ndim = 2,
                                     .dims = {w->K, w->cdf_len},
                                     .data = w->class_cdf};
    return PG_OK;
}

/* A tensor of rows x cols finite values, or NULL. */
static const float *tensor_of(const pg_ckpt *rest, const char *name, size_t rows, size_t cols)
{
    const pg_ckpt_tensor *m = pg_ckpt_find(rest, name);
    if (!m || m->ndim != 2 || m->dims[0] != rows || m->dims[1] != cols) return NULL;
    for (size_t i = 0; i < rows * cols; i++)
        if (!isfinite(m->data[i])) return NULL;
    return m->data;
}

int pg_calib_wire_restore(pg_calib_wire *w, const json_t *extra, const pg_ckpt *rest,
                          const pg_generator *gen, pg_error *err)
{
    const json_t *saved =
        json_object_get(json_object_get(extra, "privacy"), "calibration_noise_multiplier");
    const json_t *cal = json_object_get(extra, "calibration");
    bool on = w->sigma > 0.0;
    /* Another noise is another mechanism than the plan charged. */
    if (on != (saved != NULL) ||
        (on && !(fabs(json_number_value(saved) - w->sigma) <= 1e-12 * w->sigma)))
        return pg_error_set(err, PG_EPRIVACY,
                            "the checkpoint's class calibration was released under another "
                            "noise multiplier (calibration.*) than this spec");
    if (!on) return cal ? pg_error_set(err, PG_EFORMAT, "the checkpoint is calibrated") : PG_OK;
    const char *rule = json_string_value(json_object_get(cal, "numeric"));
    const json_t *ij = json_object_get(cal, "independence");
    double indep = ij ? json_number_value(ij) : 0.0;
    if ((ij && !(json_is_number(ij) && indep >= 0.0 && indep <= 1.0)) ||
        json_integer_value(json_object_get(cal, "version")) != PG_CALIB_WIRE_VERSION || !rule ||
        strcmp(rule, rule_name(w)) != 0 ||
        json_integer_value(json_object_get(cal, "per_class")) != (json_int_t)w->per_class)
        return pg_error_set(err, PG_EFORMAT,
                            "the checkpoint's samples were calibrated otherwise "
                            "(calibration.numeric, calibration.samples_per_class)");
    const float *tg = tensor_of(rest, PG_GENERATOR_CALIB_TENSOR, w->K, w->width);
    const float *cdf =
        w->quantile ? tensor_of(rest, PG_GENERATOR_CLASS_CDF_TENSOR, w->K, w->cdf_len) : NULL;
    if (!tg || pg_calib_table_check_targets(gen->heads, gen->num_classes, tg, NULL) != PG_OK ||
        (w->quantile &&
         (!cdf || !gen->qmap || w->cdf_len != pg_calib_table_cdf_len(gen->qmap) ||
          pg_calib_table_check_cdf(gen->qmap, gen->num_classes, cdf, NULL) != PG_OK)))
        return pg_error_set(err, PG_EFORMAT,
                            "the checkpoint's calibration targets are missing or malformed");
    memcpy(w->targets, tg, w->K * w->width * sizeof *tg);
    if (w->quantile) memcpy(w->class_cdf, cdf, w->K * w->cdf_len * sizeof *cdf);
    return PG_OK;
}

int pg_calib_wire_snapshot(const pg_calib_wire *w, const pg_generator *gen, const pg_nn *net,
                           long step, pg_snapshot **out, pg_error *err)
{
    if (!(w->sigma > 0.0)) return pg_generator_snapshot(gen, net, step, out, err);
    pg_nn_snapshot *nn = NULL;
    int rc = pg_nn_snapshot_take(net, &nn, err);
    if (rc) return rc;
    return pg_generator_snapshot_calibrated_table_indep(gen, nn, step, w->targets, w->class_cdf,
                                                        w->per_class, w->indep, out, err);
}
