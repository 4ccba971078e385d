/* calib_wire - per-class table calibration as a job option (calib_wire.h). */
#include "engine/methods/calib_wire.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/data/table.h"
#include "engine/methods/calib_copula.h"
#include "engine/methods/calib_table.h"
#include "engine/methods/qmap_spec.h"

const char *const pg_calib_wire_rules[] = {"shift", "rank", "quantile", NULL};

bool pg_calib_wire_on(const json_t *r, const pg_data_desc *desc)
{
    return desc->table && desc->table->width == desc->d &&
           pg_spec_bool(r, "calibration.class_means", false);
}

static const char *rule_of(const json_t *r)
{
    return pg_spec_str(r, "calibration.numeric", "shift");
}

double pg_calib_wire_copula(const json_t *r, const pg_data_desc *desc)
{
    return pg_calib_wire_on(r, desc) && strcmp(rule_of(r), "quantile") == 0 &&
                   pg_spec_num(r, "calibration.independence", 0.0) > 0.0
               ? pg_spec_num(r, "calibration.copula_noise", 0.0)
               : 0.0;
}

double pg_calib_wire_sigma(const json_t *r, const pg_data_desc *desc)
{
    if (!pg_calib_wire_on(r, desc)) return 0.0;
    double s = pg_spec_num(r, "calibration.noise_multiplier", 5), c = pg_calib_wire_copula(r, desc);
    /* Replace-one: the class statistics cost alpha / s^2, the copula
     * 2 alpha / c^2 (calib_copula.h); Gaussian curves add exactly, so one
     * multiplier stands for both. */
    return c > 0.0 ? 1.0 / sqrt(1.0 / (s * s) + 2.0 / (c * c)) : s;
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
    if (pg_spec_num(r, "calibration.copula_noise", 0.0) > 0.0 &&
        !(pg_calib_wire_copula(r, desc) > 0.0))
        pg_spec_error_add(errors, "calibration.copula_noise",
                          "needs calibration.independence > 0 and calibration.numeric "
                          "\"quantile\" on a typed table");
}

void pg_calib_wire_free(pg_calib_wire *w)
{
    free(w->targets);
    free(w->class_cdf);
    free(w->copula);
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
    w->copula_sigma = pg_calib_wire_copula(r, desc);
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

/* The copula's matrices, sized once the quantile map is known. */
static int alloc_copula(pg_calib_wire *w, const pg_generator *gen, pg_error *err)
{
    w->copula_m = pg_copula_dim(gen->heads, gen->qmap, NULL);
    if (w->copula_m == 0 || w->copula_m > PG_CALIB_COPULA_MAX)
        return pg_error_set(err, PG_EINVAL, "the copula needs 1 to %d columns, not %zu",
                            PG_CALIB_COPULA_MAX, w->copula_m);
    free(w->copula);
    w->copula = malloc(w->K * w->copula_m * w->copula_m * sizeof *w->copula);
    return w->copula ? PG_OK : pg_error_set(err, PG_ENOMEM, "cannot allocate the copula");
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
    double *raw = NULL; /* the released counts, which the copula divides by */
    if (rc == PG_OK && w->copula_sigma > 0.0 &&
        !(raw = malloc((w->K * gen->d + w->K) * sizeof *raw)))
        rc = pg_error_set(err, PG_ENOMEM, "cannot allocate the class statistics");
    if (rc == PG_OK && w->sigma > 0.0)
        rc = pg_calib_table_release(secure, gen->heads, gen->qmap, data->x, labels, data->n,
                                    classes, w->sigma, w->rank, w->targets, raw, err);
    /* The copula last: its scores read the released marginals only. */
    if (rc == PG_OK && raw && (rc = alloc_copula(w, gen, err)) == PG_OK)
        rc = pg_copula_release(secure, gen->heads, gen->qmap, w->class_cdf, w->targets,
                               raw + w->K * gen->d, data->x, labels, data->n, classes,
                               w->copula_sigma, w->copula, NULL, err);
    free(raw);
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
    if (w->copula_sigma > 0.0) {
        if (json_object_set_new(priv, "copula_noise", json_real(w->copula_sigma)) ||
            json_object_set_new(json_object_get(extra, "calibration"), "copula",
                                json_integer((json_int_t)w->copula_m)))
            return pg_error_set(err, PG_ENOMEM, "cannot write the checkpoint header");
        t[(*n)++] = (pg_ckpt_tensor){.name = PG_GENERATOR_COPULA_TENSOR,
                                     .ndim = 2,
                                     .dims = {w->K, w->copula_m * w->copula_m},
                                     .data = w->copula};
    }
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
    const json_t *cs = json_object_get(json_object_get(extra, "privacy"), "copula_noise");
    if ((w->copula_sigma > 0.0) != (cs != NULL) ||
        (cs && !(fabs(json_number_value(cs) - w->copula_sigma) <= 1e-12 * w->copula_sigma)))
        return pg_error_set(err, PG_EPRIVACY,
                            "the checkpoint's copula was released under another "
                            "calibration.copula_noise than this spec");
    const float *cop = NULL;
    if (cs) {
        int rc = alloc_copula(w, gen, err);
        if (rc) return rc;
        cop = tensor_of(rest, PG_GENERATOR_COPULA_TENSOR, w->K, w->copula_m * w->copula_m);
        if (!cop || pg_copula_check(cop, w->K, w->copula_m, NULL) != PG_OK)
            return pg_error_set(err, PG_EFORMAT,
                                "the checkpoint's copula matrices are missing or malformed");
    }
    memcpy(w->targets, tg, w->K * w->width * sizeof *tg);
    if (w->quantile) memcpy(w->class_cdf, cdf, w->K * w->cdf_len * sizeof *cdf);
    if (cop) memcpy(w->copula, cop, w->K * w->copula_m * w->copula_m * sizeof *cop);
    return PG_OK;
}

int pg_calib_wire_snapshot(const pg_calib_wire *w, const pg_generator *gen, const pg_nn *net,
                           long step, pg_snapshot **out, pg_error *err)
{
    if (!(w->sigma > 0.0)) return pg_generator_snapshot(gen, net, step, out, err);
    pg_nn_snapshot *nn = NULL;
    int rc = pg_nn_snapshot_take(net, &nn, err);
    if (rc) return rc;
    return pg_generator_snapshot_calibrated_table_copula(
        gen, nn, step, w->targets, w->class_cdf, w->per_class, w->indep,
        w->copula_sigma > 0.0 ? w->copula : NULL, out, err);
}
