/* engine/methods/calib_wire.h - a generator method's wiring of the per-class
 * table calibration (calib_table.h): the spec fields, the releases before
 * training, the checkpoint header and tensors, the restore checks and the
 * calibrated snapshot. swd_gen uses it; the accounting stays with the method
 * (its neighbouring relation decides the RDP of the release: add/remove
 * alpha / (2 s^2), replace-one alpha / s^2, calib_table.h's vector moving by
 * sqrt(2) and 2 in l2).
 *
 * Spec (PG_CALIB_WIRE_PARAM_ROWS): calibration.class_means (bool, off unless
 * given or filled by the table defaults), calibration.noise_multiplier s,
 * calibration.numeric (shift | rank | quantile), calibration.samples_per_class,
 * calibration.independence lambda (calib_table.h; post-processing, no cost).
 * It applies to a typed table whose encoded rows are the data's
 * (pg_calib_wire_on); "quantile" needs the quantile map (qmap_spec.h);
 * independence > 0 needs class_means and the "quantile" rule.
 *
 * Checkpoint: header "calibration": {"version": 1, "kind": "table",
 * "numeric": rule, "per_class": n, and "independence": lambda only when > 0,
 * absent meaning 0} (what pg_generator_load_snapshot reads to serve the same
 * rows from the bytes alone), "privacy" gets
 * "calibration_noise_multiplier"; tensors PG_GENERATOR_CALIB_TENSOR (K x 2d
 * targets) and, for "quantile", PG_GENERATOR_CLASS_CDF_TENSOR. A checkpoint
 * without them (written before calibration, or with it off) restores only
 * under a spec with it off; a different noise multiplier is PG_EPRIVACY, a
 * different numeric rule or malformed tensors PG_EFORMAT. The saved
 * independence is only checked to be in [0, 1]: post-processing, the resumed
 * job serves its own spec's value.
 * With calibration.copula_noise c > 0 (calib_copula.h; needs independence
 * > 0 and "quantile"): the class statistics' release also gives the counts
 * the copula release reads, the header's "calibration" gets "copula": m and
 * "privacy" gets "copula_noise": c (both only then), and the tensor
 * PG_GENERATOR_COPULA_TENSOR (K x m^2) follows; a restore under another c
 * (or none) is PG_EPRIVACY, a matrix that is not a correlation matrix
 * PG_EFORMAT.
 *
 * Ownership: a pg_calib_wire owns its two arrays (pg_calib_wire_free; a
 * zeroed struct is an empty, off wiring). Errors: PG_ENOMEM, PG_EPRIVACY,
 * PG_EFORMAT as above, PG_EINVAL for a spec that validation should have
 * refused.
 */
#ifndef PG_METHODS_CALIB_WIRE_H
#define PG_METHODS_CALIB_WIRE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "engine/checkpoint/checkpoint.h"
#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/data/dataset.h"
#include "engine/methods/generator.h"
#include "engine/methods/method.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/spec.h"

#define PG_CALIB_WIRE_VERSION 1

extern const char *const pg_calib_wire_rules[];

/* clang-format off */
#define PG_CALIB_WIRE_PARAM_ROWS                                                                   \
    {"calibration.class_means", PG_PARAM_BOOL, "false", 0, 0, NULL, 0, 0,                          \
     "Typed tables: one Gaussian release of per-class sums and counts of the encoded rows "        \
     "before training (charged in the plan), onto which each class's samples are moved: "          \
     "category frequencies exactly, numbers by calibration.numeric. On by default on a "           \
     "labelled central table."},                                                                   \
    {"calibration.noise_multiplier", PG_PARAM_NUM, "5", 0, 1e4, NULL, 0, PG_PARAM_EXCLUSIVE_MIN,   \
     "Noise multiplier s of that release (calib_table.h; RDP alpha / s^2 under the replace-one "   \
     "relation of the sliced-Wasserstein trainers). Labelled tables: max(1, 20 / "                 \
     "sqrt(privacy.epsilon)) when a target is given."},                                            \
    {"calibration.numeric", PG_PARAM_STR, "\"shift\"", 0, 0, pg_calib_wire_rules, 0, 0,            \
     "How a class's numbers meet the release: shift (one offset per class and column), rank (a "   \
     "uniform law with the released mean and a pooled spread) or quantile (the quantile map "      \
     "released per class at no extra cost, each class's numbers sent onto its CDF by rank; needs " \
     "encoding.quantile_map, the default with it)."},                                              \
    {"calibration.samples_per_class", PG_PARAM_INT, "1000", 10, 100000, NULL, 0, 0,                \
     "Rows per class drawn with a fixed seed to measure the generator's class statistics when a "  \
     "snapshot is published (labelled tables: 4000)."},                                           \
    {"calibration.independence", PG_PARAM_NUM, "0", 0, 1, NULL, 0, 0,                              \
     "Typed tables with calibration.class_means and calibration.numeric quantile: the "            \
     "probability that each categorical column and each quantile-mapped number of a sample is "    \
     "redrawn from its class's released marginal alone instead of moved from the generator's "     \
     "value (calib_table.h); 1 serves each class's released marginals sampled independently, 0 "   \
     "the generator's within-class dependence. Post-processing: no privacy cost. Labelled "        \
     "central tables: 1 by dp_sinkhorn's rule (at any epsilon where sd sqrt(2 H) s / (n / K) "     \
     "<= 0.03; the generator's samples then only shape numbers in bins without released "          \
     "sub-bins), with calibration.noise_multiplier max(1, 9 / sqrt(epsilon)) and "                \
     "encoding.quantile_noise max(2, 6.7 / sqrt(epsilon))."},                                      \
    {"calibration.copula_noise", PG_PARAM_NUM, "0", 0, 1e4, NULL, 0, 0,                           \
     "Typed tables with calibration.independence > 0 and calibration.numeric quantile: noise "    \
     "multiplier s of one more release, each class's Gaussian copula (the correlations of the "   \
     "rows' normal scores under the classes' released marginals, calib_copula.h; RDP "            \
     "2 alpha / s^2 under the replace-one relation, charged with the class statistics); the "     \
     "redrawn columns of a sample take their levels from their class's copula instead of "        \
     "independently, so each class keeps the dependence between its columns. 0: off. "           \
     "Labelled central tables: 2 max(1, 15 / epsilon) where calibration.independence's rule "     \
     "sets it (the curve dp_sinkhorn's max(1, 15 / epsilon) has under add/remove), else 0."}
/* clang-format on */

typedef struct pg_calib_wire {
    double sigma;        /* calibration.noise_multiplier; 0: off */
    bool quantile;       /* numeric rule "quantile" (per-class quantile maps) */
    bool rank;           /* numeric rule "rank" */
    size_t per_class;    /* calibration.samples_per_class */
    size_t K, width;     /* max(classes, 1); 2 d */
    size_t cdf_len;      /* values per class of class_cdf (quantile) */
    double indep;        /* calibration.independence (0 when off) */
    float *targets;      /* K x width, calib_table.h */
    float *class_cdf;    /* K x cdf_len, or NULL */
    double copula_sigma; /* calibration.copula_noise (0: off, calib_copula.h) */
    size_t copula_m;     /* its coordinates */
    float *copula;       /* K x m x m released correlation matrices, or NULL */
} pg_calib_wire;

/* calibration.class_means is true and the data is a typed table in its own
 * encoding. */
bool pg_calib_wire_on(const json_t *r, const pg_data_desc *desc);

/* Validation: calibration asked where it cannot apply, or "quantile"
 * without the quantile map, adds field errors. */
void pg_calib_wire_check(const json_t *r, const pg_data_desc *desc, pg_spec_errors *errors);

/* The copula's noise multiplier when the copula is released
 * (calibration.copula_noise under the quantile rule with independence > 0,
 * calib_copula.h), else 0. */
double pg_calib_wire_copula(const json_t *r, const pg_data_desc *desc);

/* The release's noise multiplier when on, else 0 (for the method's plan).
 * With the copula (calibration.copula_noise c > 0) the multiplier whose
 * replace-one curve alpha / s'^2 is both releases' sum: s' = (1 / s^2 +
 * 2 / c^2)^(-1/2), exact since Gaussian RDP curves add (the plan's
 * "+class_stats+copula" names both). */
double pg_calib_wire_sigma(const json_t *r, const pg_data_desc *desc);

/* Reads the spec; allocates the arrays when on (gen configured, its heads
 * and classes set). */
int pg_calib_wire_init(pg_calib_wire *w, const json_t *r, const pg_data_desc *desc,
                       const pg_generator *gen, pg_error *err);
void pg_calib_wire_free(pg_calib_wire *w);

/* Before the first step, with the secure generator: the quantile map (when
 * the spec has it on; per class under "quantile", else pooled) into
 * gen->qmap, then the class statistics in the mapped space. Labels are the
 * data's when gen is conditional, else every row is class 0. replace_one:
 * the method's relation (the map's noise follows it, qmap.h). */
int pg_calib_wire_release(pg_calib_wire *w, const json_t *r, const pg_data_desc *desc,
                          pg_rng *secure, const pg_dataset *data, int replace_one,
                          pg_generator *gen, pg_error *err);

/* Adds the header fields to extra (its "privacy" object created when
 * absent) and fills up to 3 tensors (views of w's arrays); *n gets their
 * count, 0 when off. PG_ENOMEM when the header cannot grow. */
int pg_calib_wire_save(const pg_calib_wire *w, json_t *extra, pg_ckpt_tensor *t, size_t *n,
                       pg_error *err);

/* Reads them back (gen->qmap already restored). */
int pg_calib_wire_restore(pg_calib_wire *w, const json_t *extra, const pg_ckpt *rest,
                          const pg_generator *gen, pg_error *err);

/* Snapshot of net: calibrated (with w's independence) when on, else the
 * plain one. */
int pg_calib_wire_snapshot(const pg_calib_wire *w, const pg_generator *gen, const pg_nn *net,
                           long step, pg_snapshot **out, pg_error *err);

#endif
