/* engine/methods/trainer.h - helpers for method implementers (not used by the
 * service). Every trainer struct starts with a pg_trainer so the generic
 * functions can find its method; RNG states travel in checkpoint JSON.
 */
#ifndef PG_METHODS_TRAINER_H
#define PG_METHODS_TRAINER_H

#include <jansson.h>

#include "engine/core/rng.h"
#include "engine/methods/method.h"

struct pg_trainer {
    const pg_method *method;
    /* Warnings for the job view (method.h, "trainer warnings"); zeroed with
     * the trainer (every trainer struct is calloc'ed). */
    pg_trainer_warnings warnings;
};

/* Shorthand for pg_trainer_warnings_add(&t->warnings, ...). Only from
 * already-private quantities (method.h). */
#define pg_trainer_warn(t, ...) pg_trainer_warnings_add(&(t)->warnings, __VA_ARGS__)

/* Seeded-generator state <-> JSON (64-bit values as hex strings, since JSON
 * numbers cannot carry them exactly). from_json returns PG_EFORMAT on any
 * malformed field. */
json_t *pg_rng_state_to_json(const pg_rng *r);
int pg_rng_state_from_json(const json_t *j, pg_rng *r, pg_error *err);

/* Stream ids that split one job seed into independent generators. */
enum {
    PG_STREAM_INIT = 1,   /* parameter initialization */
    PG_STREAM_LATENT = 2, /* training latents and generated labels */
    PG_STREAM_BATCH = 3,  /* batch selection on already-private data only */
    PG_STREAM_NOISE = 4,  /* baseline noise that is not a DP mechanism */
};

#endif
