/* service/jobs.h - training jobs: submission, worker pool, progress, serving.
 *
 * A pg_jobs owns the in-memory job table (mirroring the jobs table of the
 * store), a FIFO queue bounded by --max-queued and --workers threads. It
 * drives trainers only through engine/methods/method.h: no method name
 * appears here. All functions are thread-safe; JSON results are new objects
 * the caller releases. Tenancy: every lookup takes the caller's tenant and a
 * foreign job behaves exactly like a missing one (*found = 0).
 *
 * Privacy (see DESIGN.md "Privacy semantics"):
 *  - Submission resolves the spec (the service draws a seed when absent, so
 *    the resolved spec is reproducible), plans, and for central data admits
 *    the plan through the ledger in the same transaction that inserts the job
 *    row; the 202 is sent after that COMMIT (synchronous=FULL).
 *  - queued -> running is committed before the worker reads the rows; a job
 *    cancelled while queued is refunded, a running one never is.
 *  - The trainer sees exactly the first data_n rows (the n its plan was
 *    computed for); rows are append-only, so those rows are well defined.
 *  - Write-ahead step reservation: before running a chunk of steps of a
 *    charging job the worker commits steps_reserved (an upper bound on the
 *    mechanism invocations so far). After a crash the job resumes from its
 *    last checkpoint but runs only plan.steps - steps_reserved more steps, so
 *    the invocations of every run together never exceed the planned (and
 *    charged) count, even though the steps between the checkpoint and the
 *    crash are re-done. Without a checkpoint it restarts from its
 *    initialization under the same rule; with nothing left it fails (no
 *    checkpoint) or finishes at its checkpoint. No second ledger charge.
 *    Non-charging jobs (local/public data) resume with all remaining steps.
 */
#ifndef PG_SVC_JOBS_H
#define PG_SVC_JOBS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/methods/method.h"
#include "service/config.h"
#include "service/ledger.h"
#include "service/db.h"

typedef struct pg_jobs pg_jobs;

/* Loads every job from the store: queued ones are queued again (in order),
 * running ones are queued first for resumption. Workers start with
 * pg_jobs_start. */
int pg_jobs_create(const pg_svc_config *cfg, pg_db *db, pg_jobs **out, pg_error *err);
int pg_jobs_start(pg_jobs *m, pg_error *err);
/* Ends every event stream (pg_jobs_wait returns final) so the HTTP server
 * can drain before shutdown; workers keep running until destroy. */
void pg_jobs_quiesce(pg_jobs *m);
/* Stops the workers at their next step boundary: running jobs write a
 * checkpoint and stay `running` (resumed by the next start). */
void pg_jobs_destroy(pg_jobs *m);

enum pg_submit_outcome {
    PG_SUBMIT_ACCEPTED = 1, /* 202; job_id set */
    PG_SUBMIT_DRY_RUN,      /* 200; body set */
    PG_SUBMIT_INVALID,      /* 422; errors set */
    PG_SUBMIT_OVER_BUDGET,  /* 409; quote set */
    PG_SUBMIT_QUEUE_FULL,   /* 503 + Retry-After */
};

typedef struct pg_submit_result {
    int outcome;
    char job_id[PG_ID_MAX];
    pg_spec_errors errors;
    pg_ledger_quote quote;
    json_t *body; /* the job (accepted) or the dry-run report; caller decrefs */
} pg_submit_result;

int pg_jobs_submit(pg_jobs *m, const char *tenant, const json_t *spec, int dry_run,
                   pg_submit_result *res, pg_error *err);

/* Reads answer for any job in the store, whichever replica runs it (see
 * jobs_internal.h, "r18read"): a job this process does not drive is loaded
 * from storage on first lookup and re-read when its copy is older than a
 * second, so a job deleted elsewhere is unknown here within about a second.
 * Storage errors (PG_EUNAVAIL: 503) are returned only when a job is not in
 * memory yet; a known job whose re-read fails is shown as last read. */

/* GET /v1/jobs/{id}. *version is the job's update counter in this process
 * (for SSE; event ids across replicas come from pg_jobs_event_id). */
int pg_jobs_get(pg_jobs *m, const char *tenant, const char *id, json_t **out, uint64_t *version,
                int *found, pg_error *err);
/* Waits up to timeout_ms for the job's version to pass *version; returns the
 * new view (or NULL on timeout) and *final = 1 once the job is finished. A
 * job run elsewhere is re-read from storage about once a second meanwhile. */
int pg_jobs_wait(pg_jobs *m, const char *tenant, const char *id, uint64_t *version, int timeout_ms,
                 json_t **out, int *final, int *found, pg_error *err);

/* The id of the server-sent event showing `view` (a job view of get or
 * wait): "<status>:<step>:<latest checkpoint step, -1 if none>", built only
 * from what every replica reads the same way (the job's row and history
 * document), so Last-Event-ID resumes on any replica. Returns 0, or -1
 * when view is not a job view. */
int pg_jobs_event_id(const json_t *view, char *buf, size_t cap);

/* Newest first is not needed: oldest first by seq, like datasets. status and
 * dataset_id filter when non-NULL. Pages come from storage (every replica
 * lists every job); *next is the cursor of the next page, 0 when none. */
int pg_jobs_list(pg_jobs *m, const char *tenant, const char *status, const char *dataset_id,
                 int64_t after, size_t limit, json_t **items, int64_t *next, pg_error *err);

/* *state receives the status after the call; *conflict = 1 when the job had
 * already finished. */
int pg_jobs_cancel(pg_jobs *m, const char *tenant, const char *id, json_t **out, int *found,
                   int *conflict, pg_error *err);

/* DELETE /v1/jobs/{id}: the job, its checkpoints and history go; its ledger
 * row stays (what was spent stays spent). A queued job is first cancelled
 * and refunded exactly as by pg_jobs_cancel; a running one is refused
 * (*conflict = 1, nothing changed: cancel it and delete it once it ended). */
int pg_jobs_delete(pg_jobs *m, const char *tenant, const char *id, int *found, int *conflict,
                   pg_error *err);

typedef struct pg_job_geometry {
    size_t d;
    int ndim;
    size_t shape[3];
    float lo, hi;
    int num_classes;
    /* Typed jobs: the schema samples decode with (engine/data/table.h),
     * owned by the job and valid until pg_jobs_destroy; NULL otherwise. */
    const struct pg_table *table;
} pg_job_geometry;

/* A retained snapshot: the latest (checkpoint < 0) or the one stored in
 * checkpoint `checkpoint`. The latest is the model a worker here published,
 * or, for a job trained elsewhere or before this start, the latest stored
 * checkpoint's, rebuilt through the snapshot cache (--snapshot-cache-mb);
 * both are the same bytes, so samples for a seed match on every replica.
 * *found = 0 for an unknown job or checkpoint; PG_ESTATE when the job has
 * no checkpoint yet. */
int pg_jobs_snapshot(pg_jobs *m, const char *tenant, const char *id, long checkpoint,
                     pg_snapshot **snap, pg_job_geometry *geo, int *found, pg_error *err);
void pg_jobs_count_samples(pg_jobs *m, size_t n);

/* Checkpoint list, and one checkpoint's bytes (malloc'ed; *found = 0 for
 * an unknown job or step). */
int pg_jobs_checkpoints(pg_jobs *m, const char *tenant, const char *id, json_t **out, int *found,
                        pg_error *err);
int pg_jobs_checkpoint_read(pg_jobs *m, const char *tenant, const char *id, long step,
                            unsigned char **bytes, size_t *len, int *found, pg_error *err);

/* GET /v1/datasets/{id}/budget (central datasets; PG_ESTATE otherwise). */
int pg_jobs_budget(pg_jobs *m, const char *tenant, const char *dataset_id, json_t **out, int *found,
                   pg_error *err);

/* GET /v1/algorithms. */
json_t *pg_jobs_algorithms(void);

/* Prometheus text for /metrics (appended by the caller); malloc'ed. */
char *pg_jobs_metrics(pg_jobs *m);

#endif
