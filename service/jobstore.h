/* service/jobstore.h - job and checkpoint rows in the SQLite store.
 *
 * The jobs table is the durable truth of a job's state; the in-memory job
 * table (service/jobs.c) mirrors it. Every state change that matters for
 * privacy (queued -> running: the data is about to be read; steps_reserved:
 * the mechanism is about to be invoked that many times) is committed before
 * the action it guards. Strings in pg_job_row are malloc'ed (spec, error) and
 * released by pg_jobstore_rows_free. Errors are I/O or corruption only.
 */
#ifndef PG_SVC_JOBSTORE_H
#define PG_SVC_JOBSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "service/store.h"

struct sqlite3;

typedef struct pg_job_row {
    int64_t seq;
    char id[PG_ID_MAX], tenant[PG_ID_MAX], dataset_id[PG_ID_MAX];
    char method[64];
    char status[16];
    char *spec;                                  /* resolved spec JSON */
    char *error;                                 /* NULL when none */
    int64_t created_at, started_at, finished_at; /* 0 when unset */
    int64_t step, steps_reserved, data_n;
    char public_dataset_id[PG_ID_MAX]; /* "" when the job reads no public data */
    int64_t public_n;                  /* its rows at submission */
} pg_job_row;

/* Inside a caller's transaction (the ledger admission): inserts r (status
 * "queued"); r->seq and r->created_at are written back. */
int pg_jobstore_insert_db(struct sqlite3 *db, pg_job_row *r, pg_error *err);

/* Every job, oldest first. */
int pg_jobstore_load_all(pg_store *s, pg_job_row **rows, size_t *count, pg_error *err);
void pg_jobstore_rows_free(pg_job_row *rows, size_t count);

/* Status transition; started/finished 1 stamps now; error may be NULL. */
int pg_jobstore_set_status(pg_store *s, const char *id, const char *status, int started,
                           int finished, const char *error, pg_error *err);
/* queued -> cancelled and the ledger refund, one transaction. *done = 0 when
 * the row was not queued any more (nothing changed). */
int pg_jobstore_cancel_queued(pg_store *s, const char *id, int *done, pg_error *err);
int pg_jobstore_set_step(pg_store *s, const char *id, int64_t step, pg_error *err);
int pg_jobstore_reserve_steps(pg_store *s, const char *id, int64_t steps, pg_error *err);

typedef struct pg_ckpt_row {
    int64_t step, bytes, created_at;
} pg_ckpt_row;

int pg_jobstore_checkpoint_add(pg_store *s, const char *job, int64_t step, const char *path,
                               int64_t bytes, uint32_t crc, pg_error *err);
/* Checkpoints of a job in step order; *rows malloc'ed (free()). */
int pg_jobstore_checkpoints(pg_store *s, const char *job, pg_ckpt_row **rows, size_t *count,
                            pg_error *err);

#endif
