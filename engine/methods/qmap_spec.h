/* engine/methods/qmap_spec.h - the DP quantile map (engine/data/qmap.h) as a
 * job option of the central generators (dp_sinkhorn, swd_gen).
 *
 * Spec: encoding.quantile_map (bool; typed tables with numeric columns: on by
 * default, engine/methods/defaults_table.c; absent in a resolved spec means
 * off, so jobs resolved before it existed restore unchanged),
 * encoding.quantile_bins, encoding.quantile_noise (s). The release is one
 * Gaussian histogram per numeric column, RDP alpha / (2 s^2) under the
 * method's own neighbouring relation (derivation in qmap.h), composed into
 * the plan with the training curve before a row is read. The released map
 * lives in the generator (pg_generator.qmap), hence in checkpoints; the
 * checkpoint's "privacy" object records "quantile_noise" so a restore under
 * another spec is refused.
 *
 * Sub-bins (encoding.quantile_sub S > 0, encoding.quantile_sub_noise s2):
 * with the per-class release only, a second release of each class's counts
 * inside the bins (qmap.h, pg_qmap_release_sub), RDP alpha / (2 s2^2) added
 * to the plan whenever S > 0 and the map is on. The within-bin CDFs follow
 * each class's bin CDFs in the class_cdf layout (pg_qmap_spec_cdf_len); the
 * pooled map carries S and s2 (its JSON's "sub", "sub_noise"), so a
 * checkpoint restores only under the same S and s2 (PG_EPRIVACY) and one
 * saved before them (no "sub") restores under a spec without them.
 */
#ifndef PG_METHODS_QMAP_SPEC_H
#define PG_METHODS_QMAP_SPEC_H

#include <stdbool.h>

#include "engine/data/qmap.h"
#include "engine/methods/generator.h"
#include "engine/methods/method.h"
#include "engine/methods/spec.h"

#define PG_QMAP_DEFAULT_SPREAD 0.3
#define PG_QMAP_SPREAD_TEXT    "0.3"

#define PG_QMAP_PARAM_ROWS                                                                         \
    {"encoding.quantile_map",                                                                      \
     PG_PARAM_BOOL,                                                                                \
     NULL,                                                                                         \
     0,                                                                                            \
     0,                                                                                            \
     NULL,                                                                                         \
     0,                                                                                            \
     PG_PARAM_OPTIONAL,                                                                            \
     "Typed tables: train on numeric columns mapped through a DP estimate of their CDF (one "      \
     "noisy histogram per column over bins fixed by the schema, engine/data/qmap.h; samples go "   \
     "back through the inverse), so skewed columns are not squeezed at the edge of the output "    \
     "head. On by default on tables with continuous or integer columns; false turns it off."},     \
        {"encoding.quantile_bins",                                                                 \
         PG_PARAM_INT,                                                                             \
         "32",                                                                                     \
         2,                                                                                        \
         4096,                                                                                     \
         NULL,                                                                                     \
         0,                                                                                        \
         0,                                                                                        \
         "Bins per numeric column of the quantile map (integer columns with at most this many "    \
         "values get one bin per value)."},                                                        \
        {"encoding.quantile_noise",                                                                \
         PG_PARAM_NUM,                                                                             \
         "10",                                                                                     \
         0,                                                                                        \
         1e6,                                                                                      \
         NULL,                                                                                     \
         0,                                                                                        \
         PG_PARAM_EXCLUSIVE_MIN,                                                                   \
         "Noise multiplier s of the quantile map's histograms: per-count std s sqrt(c) (c "        \
         "numeric "                                                                                \
         "columns; sqrt(2c) under replace-one), RDP alpha / (2 s^2) composed into the plan. "      \
         "Left out: max(2, 10 / sqrt(privacy.epsilon)), or 10 without an epsilon target."},        \
        {"encoding.quantile_sub",                                                                  \
         PG_PARAM_INT,                                                                             \
         NULL,                                                                                     \
         0,                                                                                        \
         PG_QMAP_MAX_SUB,                                                                          \
         NULL,                                                                                     \
         0,                                                                                        \
         PG_PARAM_OPTIONAL,                                                                        \
         "Per-class quantile rule (calibration.numeric \"quantile\"): sub-bins per bin of a "      \
         "second DP release of each class's numbers (one per integer value where a bin holds "     \
         "at most this many, a point at an integer column's minimum, engine/data/qmap.h), so the " \
         "served values inside a bin follow the data (a mass at zero, round values) instead of "   \
         "the generator. Left out or 0: none; labelled central tables get 32 with the quantile "   \
         "rule."},                                                                                 \
        {"encoding.quantile_sub_noise",                                                            \
         PG_PARAM_NUM,                                                                             \
         NULL,                                                                                     \
         0,                                                                                        \
         1e6,                                                                                      \
         NULL,                                                                                     \
         0,                                                                                        \
         PG_PARAM_EXCLUSIVE_MIN | PG_PARAM_OPTIONAL,                                               \
         "Noise multiplier s2 of the sub-bins' release: per-count std s2 sqrt(c2) (c2 numeric "    \
         "columns with sub-bins; sqrt(2 c2) under replace-one), RDP alpha / (2 s2^2) composed "    \
         "into the plan. Left out: twice encoding.quantile_noise."},                               \
    {                                                                                              \
        "encoding.quantile_spread", PG_PARAM_NUM, PG_QMAP_SPREAD_TEXT, 0, 1, NULL, 0,              \
            PG_PARAM_EXCLUSIVE_MIN,                                                                \
            "Mapped numbers fill this fraction k of the model range around its centre (1: the "    \
            "whole range; smaller keeps the numbers' share of the loss nearer the categories')."   \
    }

/* The option is on for this spec and data (a typed table whose encoded rows
 * are the data's, with at least one numeric column). */
bool pg_qmap_spec_on(const json_t *r, const pg_data_desc *desc);
/* Validation: explicit true where it cannot apply is a field error. */
void pg_qmap_spec_check(const json_t *r, const pg_data_desc *desc, pg_spec_errors *errors);
/* rdp[i] += the release's RDP at orders[i] when on; returns whether on. */
bool pg_qmap_spec_add_rdp(const json_t *r, const pg_data_desc *desc, const double *orders, size_t n,
                          double *rdp);
/* Releases the map into gen->qmap from the rows (when on). */
int pg_qmap_spec_release(const json_t *r, const pg_data_desc *desc, pg_rng *secure, const float *x,
                         size_t n, int replace_one, pg_generator *gen, pg_error *err);
/* The same release per class (qmap.h, pg_qmap_release_classes: the same
 * RDP, so the plan is pg_qmap_spec_add_rdp's): the pooled map into gen->qmap,
 * the classes' CDFs into class_cdf (max(classes, 1) x pg_qmap_spec_cdf_len,
 * calib_table.h's layout). PG_EINVAL when the map is off. */
int pg_qmap_spec_release_classes(const json_t *r, const pg_data_desc *desc, pg_rng *secure,
                                 const float *x, const int32_t *labels, size_t n, int classes,
                                 int replace_one, pg_generator *gen, float *class_cdf,
                                 pg_error *err);
/* Values per class of that layout (0 without a typed table). */
size_t pg_qmap_spec_cdf_len(const json_t *r, const pg_data_desc *desc);
/* Save: lists the map's sub-bins release (quantile_sub, quantile_sub_noise)
 * in a checkpoint's privacy object when gen's map has sub-bins (nothing
 * otherwise, so checkpoints without them keep their bytes). 0 on success,
 * -1 when privacy is not an object or jansson runs out of memory (the
 * caller drops the whole checkpoint description). */
int pg_qmap_spec_save_sub(json_t *privacy, const pg_generator *gen);
/* Restore: the checkpoint's privacy.quantile_noise (which the method's save
 * writes when on) must match the spec (PG_EPRIVACY); the map is read back
 * from the saved generator description (PG_EFORMAT when missing or
 * malformed). */
int pg_qmap_spec_restore(const json_t *r, const pg_data_desc *desc, const json_t *extra,
                         pg_generator *gen, pg_error *err);

#endif
