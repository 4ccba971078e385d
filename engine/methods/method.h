/* engine/methods/method.h - the one interface every training method implements.
 *
 * The service drives trainers only through this header: it never knows which
 * method it runs. A method is a static, immutable descriptor (pg_method) with
 * function pointers; a trainer is one running instance, owned by exactly one
 * worker thread; a snapshot is an immutable, reference-counted model that any
 * number of request threads may sample from while training goes on.
 *
 * Life of a job (`in` is a pg_job_data: what the job may read):
 *   validate(spec, in: descriptions)  -> field errors, or a resolved spec
 *   plan(resolved, in: descriptions)  -> what the privacy ledger will charge
 *   create(resolved, in: + rows, ...) -> trainer (reads rows; DP from here on)
 *   step() ... step()                 -> progress reports
 *   snapshot()                        -> pg_snapshot for serving; sample() on it
 *   save()/restore()                  -> checkpoint bytes; resumes exactly
 *
 * Public data: a job may name a second, `public` dataset of the same row
 * shape (pg_job_data.public_*). It costs nothing: a method may use it only for
 * work that precedes and is independent of the private rows (e.g. fitting an
 * encoder), so the privacy analysis of the private release is unchanged; plan()
 * never charges for it. Methods that cannot use it reject a job naming it with
 * a field error on "public_dataset_id" (pg_job_data_no_public).
 *
 * Ownership: the caller owns specs and datasets and keeps them alive for the
 * trainer's lifetime; the trainer copies what it keeps. Snapshots are retained
 * and released; the last release frees. Errors: functions return a pg_status
 * and fill pg_error; validation returns field-level errors instead.
 *
 * Privacy: plan() must be exact and conservative: the service charges it before
 * create() ever sees the data, and step() must never spend more than planned.
 * DP noise and batch membership inside step() come from a secure pg_rng that
 * the trainer creates itself; the job seed only drives initialization, latents
 * and sampling.
 */
#ifndef PG_METHODS_METHOD_H
#define PG_METHODS_METHOD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/cpu.h"
#include "engine/core/error.h"

struct pg_table;    /* engine/data/table.h */
struct pg_ldp_plan; /* engine/data/table_ldp.h */
struct pg_dataset;  /* engine/data/dataset.h */
struct pg_rowsrc;   /* engine/data/rowsrc.h */

/* ---- what a trainer may know about its data before reading it ----------- */

enum pg_privacy_model { PG_PRIVACY_LOCAL = 1, PG_PRIVACY_CENTRAL = 2, PG_PRIVACY_PUBLIC = 4 };
enum pg_local_mechanism { PG_LOCAL_LAPLACE = 1, PG_LOCAL_GAUSSIAN = 2 };

typedef struct pg_data_desc {
    size_t n; /* rows available now */
    size_t d; /* features per row */
    int ndim; /* 1 for [d], 3 for [c,h,w] */
    size_t shape[3];
    float lo, hi;    /* declared value range */
    int num_classes; /* 0 when unlabelled */
    int model;       /* enum pg_privacy_model */
    /* local: the client-side mechanism that produced the rows */
    int mechanism; /* enum pg_local_mechanism */
    double epsilon, delta, sensitivity, noise_scale;
    /* central: the dataset's cap (the ledger reports ε at cap_delta) */
    double cap_epsilon, cap_delta;
    /* Typed tables (engine/data/table.h): the dataset's schema, whose encoded
     * width is d, or NULL for untyped vectors and images. Borrowed: the
     * caller keeps it alive for the duration of each call and passes the
     * same layout again to restore(), so a method that needs the layout
     * after create() (output heads, decoding) copies what it uses into its
     * own state and checkpoint. */
    const struct pg_table *table;
    /* Local typed tables (engine/data/table_ldp.h): the per-column plan the
     * rows were privatized with (rebuilt from the checked declaration), so a
     * method can model each column's channel (randomized response on
     * categories, noise on numbers). NULL otherwise. Borrowed like table. */
    const struct pg_ldp_plan *ldp;
} pg_data_desc;

/* Everything a job may read, passed as one argument. desc is required. rows
 * is given to create() and restore() only (NULL in validate/plan). The public
 * pair is NULL when the job names no public dataset; when it does, public_desc
 * is given to validate/create/restore and public_rows to create() only, alive
 * only during that call (restore() receives NULL: a checkpoint must carry
 * whatever the method learned from public rows). plan() may receive a NULL
 * public_desc (a finished job whose public dataset was deleted): the plan
 * must follow from the resolved spec and desc alone. */
typedef struct pg_job_data {
    const pg_data_desc *desc;
    const struct pg_dataset *rows;
    /* Instead of rows, for a method that sets `streams`: passes over the
     * same rows in chunks (engine/data/rowsrc.h), alive for the trainer's
     * lifetime, so the rows need not be in memory. create() and restore()
     * of such a method get either rows or source (the other NULL). */
    const struct pg_rowsrc *source;
    const pg_data_desc *public_desc;
    const struct pg_dataset *public_rows;
} pg_job_data;

/* ---- validation ---------------------------------------------------------- */

#define PG_SPEC_MAX_ERRORS 32

typedef struct pg_field_error {
    char field[64]; /* JSON path, e.g. "train.batch_size" */
    char message[192];
} pg_field_error;

typedef struct pg_spec_errors {
    int count;
    pg_field_error items[PG_SPEC_MAX_ERRORS];
} pg_spec_errors;

/* Adds one field error (silently drops beyond PG_SPEC_MAX_ERRORS). */
void pg_spec_error_add(pg_spec_errors *e, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* For methods that cannot use public data: adds a "public_dataset_id" field
 * error when the job names one. */
void pg_job_data_no_public(const pg_job_data *in, const char *method, pg_spec_errors *e);

/* ---- privacy plan --------------------------------------------------------- */

/* What the ledger charges for a job: an RDP curve on the privacy library's
 * default order grid (composable by per-order addition across jobs), plus any
 * additive δ₀ from probabilistic sensitivity bounds. `charges` is false for
 * post-processing (local or public data): nothing is reserved. */
#define PG_PLAN_MAX_ORDERS 160
/* Bytes of the mechanism's name with its NUL. The name is stored only as
 * text (the ledger row's JSON, the job view), so its width is free to grow;
 * 256 holds every base mechanism with all of its one-off releases spelt out
 * (64 once made swd_spec.c abbreviate the longest ones). */
#define PG_PLAN_MECHANISM_MAX 256
typedef struct pg_privacy_plan {
    bool charges;
    int norders;
    double orders[PG_PLAN_MAX_ORDERS];
    double rdp[PG_PLAN_MAX_ORDERS];
    double delta_extra; /* summed δ₀ of probabilistic bounds */
    double epsilon;     /* ε of this job alone at `delta` */
    double delta;
    double noise_multiplier; /* effective, as the accountant uses it */
    double sampling_rate;    /* 1 when every step sees all rows */
    long steps;
    bool approximate;                      /* some bound used is not rigorous */
    char mechanism[PG_PLAN_MECHANISM_MAX]; /* e.g. "poisson_subsampled_gaussian" */
    char neighbouring[32];                 /* "add_remove" or "replace_one" */
} pg_privacy_plan;

/* ---- progress and snapshots --------------------------------------------- */

typedef struct pg_step_report {
    long step; /* steps completed, including this one */
    double loss;
    int ot_iters; /* Sinkhorn iterations in this step (0 if none) */
    double marginal_error;
    double epsilon_spent; /* ε so far at the plan's δ (0 for post-processing) */
    bool done;            /* the trainer has reached its planned steps */
} pg_step_report;

typedef struct pg_snapshot pg_snapshot;

void pg_snapshot_retain(pg_snapshot *s);
void pg_snapshot_release(pg_snapshot *s);
long pg_snapshot_step(const pg_snapshot *s);

/* ---- trainer warnings ----------------------------------------------------
 *
 * What a trainer decided that the user must know because it degrades the
 * output without failing the job (e.g. entropic_gan pooling every class
 * because the privatized rows show no class difference: its samples cannot
 * predict the label). Each is a stable code (lower-case letters, digits and
 * '_', at most PG_TRAINER_WARN_CODE - 1 bytes; clients key on it) and one
 * plain sentence saying what happened, why, and what would help.
 *
 * Privacy: a trainer warning may depend only on quantities that are already
 * private (released DP statistics, noisy counts, locally privatized rows) or
 * on the spec: never on raw private rows. The service shows it to anyone
 * who may read the job, so a warning computed from raw data would be a leak
 * outside the ledger.
 *
 * Bounds: at most PG_TRAINER_WARN_MAX warnings per trainer, each sentence at
 * most PG_TRAINER_WARN_TEXT - 1 bytes (longer ones are cut at a UTF-8
 * boundary and end in "..."). Recording a code again replaces its sentence
 * (a decision re-made at each snapshot does not fill the list); a new code
 * on a full list is dropped and counted. The list lives inside the trainer
 * (engine/methods/trainer.h): no global state; like the trainer it is used
 * by the one thread that owns the trainer, which reads it between calls.
 * Warnings are not part of checkpoints: a trainer whose restore() re-makes
 * the decision records it again, and the service keeps every warning it saw
 * with the job (service/jobs), so a resumed job keeps them either way. */
#define PG_TRAINER_WARN_MAX  8
#define PG_TRAINER_WARN_CODE 32
#define PG_TRAINER_WARN_TEXT 640

typedef struct pg_trainer_warning {
    char code[PG_TRAINER_WARN_CODE];
    char message[PG_TRAINER_WARN_TEXT];
} pg_trainer_warning;

typedef struct pg_trainer_warnings {
    int count;
    unsigned version; /* raised by every change: a reader compares it to skip work */
    unsigned dropped; /* new codes refused on a full list */
    pg_trainer_warning items[PG_TRAINER_WARN_MAX];
} pg_trainer_warnings;

/* Records (or replaces) warning `code` with a printf-style sentence. PG_OK
 * when recorded or replaced; PG_ERANGE when the list is full (dropped, and
 * counted); PG_EINVAL for a NULL list, a code that is empty, too long or not
 * [a-z0-9_], or an empty sentence (nothing recorded). A warning never fails
 * a job: trainers may ignore the status. */
int pg_trainer_warnings_add(pg_trainer_warnings *w, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

typedef struct pg_trainer pg_trainer;

/* The trainer's warnings so far (owned by the trainer: valid until its next
 * call or destroy; read on the trainer's own thread). */
const pg_trainer_warnings *pg_trainer_warnings_of(const pg_trainer *t);

/* ---- the method descriptor ---------------------------------------------- */

typedef struct pg_method {
    const char *name; /* "entropic_gan", "dp_sinkhorn", ... */
    const char *summary;
    unsigned accepts; /* bitmask of enum pg_privacy_model */
    /* The method reads its private rows only through pg_job_data.source
     * passes (it accepts rows too); the service then streams them from
     * storage instead of loading them. Public rows are loaded as ever. */
    bool streams;

    /* Parameter catalogue for GET /v1/algorithms: a new JSON array of
     * {name, type, default, min, max, enum, description}. */
    json_t *(*catalogue)(void);

    /* Checks `spec` against the data description. On success *resolved is a
     * new JSON object with every default filled in (what the job really runs).
     * On invalid input returns PG_EINVAL with `errors` filled. */
    int (*validate)(const json_t *spec, const pg_job_data *in, json_t **resolved,
                    pg_spec_errors *errors, pg_error *err);

    /* The privacy spend of a resolved spec. Pure: touches no data. */
    int (*plan)(const json_t *resolved, const pg_job_data *in, pg_privacy_plan *plan,
                pg_error *err);

    /* Builds a trainer; reads the dataset's rows. `threads` cores may be used. */
    int (*create)(const json_t *resolved, const pg_job_data *in, int threads, pg_trainer **out,
                  pg_error *err);

    int (*step)(pg_trainer *t, pg_step_report *report, pg_error *err);

    /* A new immutable snapshot of the current model (refcount 1). */
    int (*snapshot)(pg_trainer *t, pg_snapshot **out, pg_error *err);

    /* Writes the full state (parameters, optimizer, RNG counters, step,
     * privacy state) as checkpoint bytes: malloc'ed, caller frees. */
    int (*save)(pg_trainer *t, unsigned char **bytes, size_t *len, pg_error *err);

    /* Rebuilds a trainer from checkpoint bytes; continues exactly. */
    int (*restore)(const json_t *resolved, const pg_job_data *in, int threads,
                   const unsigned char *bytes, size_t len, pg_trainer **out, pg_error *err);

    /* Loads a snapshot from checkpoint bytes without the dataset (serving a
     * finished job after a restart). */
    int (*load_snapshot)(const unsigned char *bytes, size_t len, pg_snapshot **out, pg_error *err);

    void (*destroy)(pg_trainer *t);

    /* Optional (may be NULL): bytes the trainer will allocate for a resolved
     * spec, excluding the dataset rows themselves, so the service can refuse
     * a job that would not fit instead of running out of memory. */
    size_t (*memory_estimate)(const json_t *resolved, const pg_job_data *in);
} pg_method;

/* Draws n outputs (n x d floats into `out`) from a snapshot with `seed`; label
 * is -1 for "uniform over classes" or unconditional models. Thread-safe: many
 * request threads may sample one snapshot at once. */
int pg_snapshot_sample(const pg_snapshot *s, size_t n, uint64_t seed, int label, float *out,
                       pg_error *err);
/* Whether the snapshot draws classes jointly with rows (its classes follow
 * the model's class distribution), and such a draw: n rows into out and
 * their classes into labels (PG_ENOTSUP when it does not). Serving uses it
 * for unconditional requests on labelled data. */
int pg_snapshot_has_joint_labels(const pg_snapshot *s);
int pg_snapshot_sample_labeled(const pg_snapshot *s, size_t n, uint64_t seed, float *out,
                               int32_t *labels, pg_error *err);

/* Output geometry of a snapshot (d, shape, num_classes). */
size_t pg_snapshot_dim(const pg_snapshot *s);

/* ---- registry ----------------------------------------------------------- */

/* Every built-in method, NULL-terminated. Adding a method means adding its
 * descriptor here and nowhere else. */
const pg_method *const *pg_methods_all(void);
const pg_method *pg_method_find(const char *name);

#endif
