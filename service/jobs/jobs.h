/* service/jobs/jobs.h - training jobs: submission, worker pool, progress, serving.
 *
 * A pg_jobs owns the in-memory job table (mirroring the jobs table of the
 * store), --workers threads and a heartbeat thread. It drives trainers only
 * through engine/methods/method.h: no method name appears here. All functions are thread-safe; JSON
 * results are new objects the caller releases. Tenancy: every lookup takes the caller's tenant and
 * a foreign job behaves exactly like a missing one (*found = 0).
 *
 * Privacy (docs/jobs.md, "The ledger" and "Crash recovery"; README.md, "The
 * privacy model, plainly"):
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
 *
 * The shared queue (many replicas on one database; service/db.h, "the
 * shared job queue"). The queue is the jobs table itself: a submission
 * commits a queued row (through any replica) and wakes a local worker;
 * idle workers of every replica claim the oldest runnable row, every
 * --claim-poll-ms or at once on a local submission. A claim holds the job
 * under a lease (--lease-seconds) that one heartbeat thread per replica
 * renews every --heartbeat-seconds (all its leases in one transaction that
 * waits on no job row: pg_db_job_renew; a row held right then, e.g. by the
 * job's own checkpoint write, is retried every 100 ms until it is free, so
 * one slow write delays no other job's renewal); the claimed job enters (or refreshes)
 * this replica's table. With SQLite (one process) this is the same FIFO a
 * user saw before: oldest first, started at once.
 *  - Takeover = resume: a replica that dies, hangs or is cut off stops
 *    renewing; once the lease ran out another replica claims the job and
 *    runs it exactly as a restart would: from its newest checkpoint, with
 *    the row's steps_reserved as the base of the reservation rule above.
 *    A replica starting again under its node id releases the leases it
 *    still held, so its jobs resume at once.
 *  - The fence: every write a worker makes about its job (steps_reserved,
 *    step, checkpoint, history document, final status) is fenced on the
 *    lease (owner) in the write's own transaction. A refused write, a
 *    heartbeat refused, or a row naming another owner (read at most once a
 *    second between steps) marks the lease lost: the worker stops at its
 *    next step boundary and writes nothing more; the loss is counted and
 *    logged with the replica and the job.
 *  - Why a takeover is never charged again and never releases more than
 *    the plan: the ledger row is written once, at admission; a claim never
 *    touches it. Invocations of the mechanism by all owners together stay
 *    within steps_reserved (each reserves before it runs, fenced), and a new
 *    owner runs at most plan.steps - steps_reserved more. What leaves the
 *    service (snapshots, samples) only comes from stored checkpoints, and
 *    those are fenced: what a stale owner computed after its last accepted
 *    write is never released, while its invocations were already counted.
 *    A job may thus end a few steps short of its plan after a crash (the
 *    reserved chunk it lost), never beyond it.
 *  - Cancel from any replica: a queued job is cancelled and refunded in one
 *    transaction; a running one (here or elsewhere) is marked in its row and
 *    its owner ends it as cancelled within about a second plus one step.
 *  - Progress for other replicas: the owner stores the job's history
 *    document at each checkpoint, at most every --progress-seconds between
 *    them, and at the end.
 *  - --max-queued bounds the shared queue: the queued rows of every replica
 *    (503 + Retry-After beyond). Concurrent submissions on several replicas
 *    may overshoot it by their number (the count and the insert are not one
 *    transaction): it is a load limit, not a privacy one.
 */
#ifndef PG_SVC_JOBS_H
#define PG_SVC_JOBS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/cpu.h"
#include "engine/core/error.h"
#include "engine/methods/method.h"
#include "service/config.h"
#include "service/ledger.h"
#include "service/store/db.h"

typedef struct pg_jobs pg_jobs;

/* Releases the leases this node (--node-id) still holds from a previous
 * life and loads every job from the store into the table. Workers and the
 * heartbeat start with pg_jobs_start. */
int pg_jobs_create(const pg_svc_config *cfg, pg_db *db, pg_jobs **out, pg_error *err);
int pg_jobs_start(pg_jobs *m, pg_error *err);
/* The process's CPU budget (engine/core/cpu.h), set before pg_jobs_start
 * and outliving the jobs; NULL (the default): every job runs with
 * --threads-per-job threads (0: one) whatever else runs. With a budget
 * a job joins it while it runs and acquires its cores step by step (at most
 * --threads-per-job, 0: no cap). */
void pg_jobs_set_cpu(pg_jobs *m, pg_cpu_budget *cpu);
pg_cpu_budget *pg_jobs_cpu(const pg_jobs *m);
/* Ends every event stream (pg_jobs_wait returns final) so the HTTP server
 * can drain before shutdown; workers keep running. */
void pg_jobs_quiesce(pg_jobs *m);
/* Graceful drain (SIGTERM): no more claims; every running job writes a
 * checkpoint at its next step boundary (fenced), gives back the unused part
 * of its step reservation and releases its lease, so another replica (or
 * the next start) claims it at once with no step lost. Returns when the
 * workers and the heartbeat thread have exited. Submissions are still
 * accepted (the rows wait in the shared queue). Idempotent. */
void pg_jobs_drain(pg_jobs *m);
/* For tests: as if the process died at this instant. Workers stop at their
 * next step boundary writing nothing, heartbeats stop, no lease is
 * released (other replicas take the jobs over once the leases run out).
 * Returns when the threads have exited; destroy afterwards only frees. */
void pg_jobs_abandon(pg_jobs *m);
/* Drains (unless drained or abandoned) and frees. */
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
 * jobs_internal.h, "any replica answers any read"): a job this process does not drive is loaded
 * from storage on first lookup and re-read when its copy is older than a
 * second, so a job deleted elsewhere is unknown here within about a second.
 * Storage errors (PG_EUNAVAIL: 503) are returned only when a job is not in
 * memory yet; a known job whose re-read fails is shown as last read. */

/* GET /v1/jobs/{id}. *version is the job's update counter in this process
 * (for SSE; event ids across replicas come from pg_jobs_event_id). */
int pg_jobs_get(pg_jobs *m, const char *tenant, const char *id, json_t **out, uint64_t *version,
                int *found, pg_error *err);
/* What a job's plots say of it, read in place (no view is built): its
 * method, its privacy model as its view's "privacy" shows it ("central" when
 * the plan charges a budget, "local" for a local mechanism, else "public";
 * static storage) and the plan's epsilon when finite and > 0 (else NaN). */
typedef struct pg_job_summary {
    char method[64];
    const char *privacy;
    double epsilon;
} pg_job_summary;
int pg_jobs_summary(pg_jobs *m, const char *tenant, const char *id, pg_job_summary *out, int *found,
                    pg_error *err);

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
    /* 1 when the job had ended (succeeded, failed, cancelled) at the lookup:
     * its latest snapshot can no longer change (HTTP caching). */
    int ended;
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
