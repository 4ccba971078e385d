/* service/datasets/spec.h - dataset declarations and row validation rules.
 *
 * A pg_datasets_spec is the validated form of a POST /v1/datasets body. The api
 * layer fills it from JSON (rejecting unknown fields); pg_datasets_spec_check
 * applies the semantic rules, including the privacy rule that a local-DP
 * declaration's noise is at least the minimum for its ε, δ and sensitivity.
 * The spec is stored as normalized JSON (pg_datasets_spec_to_json) and read back
 * with pg_datasets_spec_from_json. Field errors name a JSON path in `field`.
 */
#ifndef PG_SVC_DATASETS_SPEC_H
#define PG_SVC_DATASETS_SPEC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"

/* A declaration's privacy model. These numbers are stored (reports keep
 * against_model and job_model; the store filters public reports on 3): never
 * renumber them. The engine's enum pg_privacy_model (method.h) is a bit set
 * for pg_method.accepts (public = 4); pg_jobdesc_model (jobdesc.h) is the one
 * conversion. */
enum pg_svc_privacy_model { PG_PRIV_LOCAL = 1, PG_PRIV_CENTRAL = 2, PG_PRIV_PUBLIC = 3 };

#define PG_DATASETS_NAME_MAX  200
#define PG_DATASETS_RANGE_MAX 1e15 /* |lo|, |hi| of a declared range (float32 rows) */
#define PG_FIELD_MAX          64

typedef struct pg_datasets_spec {
    char name[PG_DATASETS_NAME_MAX + 1];
    int ndim; /* 1 ([d]) or 3 ([c,h,w]) */
    int64_t shape[3];
    size_t d;            /* product of shape */
    double lo, hi;       /* declared value range */
    int64_t num_classes; /* 0: unlabeled */
    int model;           /* enum pg_svc_privacy_model */
    /* local */
    int mechanism; /* enum pg_mechanism */
    double epsilon, delta, sensitivity, noise_scale;
    double min_noise_scale; /* computed by pg_datasets_spec_check */
    /* Optional parts of a `privgen privatize` declaration: the row width it
     * was produced for (0: not declared) and its clip ball (norm 0: none;
     * 1: l1, 2: l2). Stored so every append can be held to them. */
    int64_t cols;
    int clip_norm;
    double clip_radius;
    /* central */
    double budget_epsilon, budget_delta;
    /* Typed tables (service/typed.h): the dataset has named columns; shape is
     * [encoded width], num_classes the label column's. A local typed dataset
     * declares its privacy per column (per_column = 1): epsilon and delta are
     * the declaration's totals, the other local fields unused. */
    int typed, per_column;
} pg_datasets_spec;

/* Semantic checks; computes min_noise_scale for local data. PG_EINVAL with
 * `field` set for a bad declaration, PG_EPRIVACY when the declared noise is
 * smaller than the minimum. */
int pg_datasets_spec_check(pg_datasets_spec *s, size_t max_dim, char field[PG_FIELD_MAX],
                           pg_error *err);

/* Normalized JSON of the spec (malloc'ed text) and its inverse. */
int pg_datasets_spec_to_json(const pg_datasets_spec *s, char **out, pg_error *err);
int pg_datasets_spec_from_json(const char *json, pg_datasets_spec *s, pg_error *err);
/* Stored metadata parsed (*out the caller's): PG_EFORMAT when it is not JSON
 * (a corrupt row), PG_ENOMEM when parsing ran out of memory (not the row's
 * fault: the api answers it as every other out-of-memory, 503). */
int pg_datasets_meta_load(const char *meta, json_t **out, pg_error *err);
/* Metadata to store: the text of o (*out malloc'ed), checked to read back
 * as o; PG_ENOMEM when it could not be made whole. */
int pg_datasets_meta_dump(const json_t *o, char **out, pg_error *err);

/* One difference between an upload's declaration and its dataset's. */
typedef struct pg_datasets_diff {
    char field[PG_FIELD_MAX]; /* "declaration.epsilon", ... */
    char message[200];        /* both values, e.g. "declared 2, dataset 1" */
} pg_datasets_diff;

#define PG_DATASETS_DIFF_MAX 10

/* Compares the declaration sent with an upload (the JSON object `privgen
 * privatize` writes; unknown keys ignored) with the dataset's: privacy
 * model, mechanism, epsilon, delta, sensitivity, noise_scale, clip (when
 * both state one) and width (`cols` against the dataset's d). Returns
 * PG_EINVAL with `field` set when the declaration is malformed; otherwise
 * PG_OK with *ndiff differences in diffs (0: it matches). *rows is the
 * declared row count, 0 when the declaration states none. */
int pg_datasets_decl_match(const pg_datasets_spec *s, const char *decl,
                           pg_datasets_diff diffs[PG_DATASETS_DIFF_MAX], int *ndiff, uint64_t *rows,
                           char field[PG_FIELD_MAX], pg_error *err);

/* Validates `count` consecutive values starting at flat index `first`
 * (row = index / d). Rejects NaN/Inf always and, for central data, values
 * outside [lo, hi]. On failure *bad_row is the 0-based row and err says why. */
int pg_datasets_check_values(const pg_datasets_spec *s, const float *x, size_t count,
                             uint64_t first, uint64_t *bad_row, pg_error *err);

/* Labels must be in [0, num_classes); a labeled upload needs num_classes. */
int pg_datasets_check_labels(const pg_datasets_spec *s, const int64_t *labels, size_t n,
                             uint64_t *bad_row, pg_error *err);

#endif
