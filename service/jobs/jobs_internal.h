/* service/jobs/jobs_internal.h - shared by service/jobs*.c only: the job table,
 * the manager and helpers. Locking: every field of a job and of pg_jobs is
 * guarded by pg_jobs.mu except the immutable ones set at creation (id,
 * tenant, dataset_id, method, spec, desc, plan, privacy); helpers marked
 * "mu held" below expect it. Lock order: mu before the store's mutex;
 * never the reverse. Jobs are never freed before pg_jobs_destroy, so a job
 * pointer stays valid after mu is released.
 */
#ifndef PG_SVC_JOBS_INTERNAL_H
#define PG_SVC_JOBS_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "engine/methods/method.h"
#include "service/config.h"
#include "service/store/db.h"
#include "service/ledger.h"

enum { ST_QUEUED = 0, ST_RUNNING, ST_SUCCEEDED, ST_FAILED, ST_CANCELLED, ST_COUNT };
extern const char *const pg_jobs_status[ST_COUNT];

struct job;
/* What the job's method reads (public part only when the job names one). */
pg_job_data pg_jobs_data(const struct job *j, const struct pg_dataset *rows,
                         const struct pg_dataset *public_rows);

/* Method-agnostic fallback when a method gives no memory estimate: generous
 * enough for the small MLP generators, small enough to keep a 4 GiB default
 * limit meaningful. */
#define GENERIC_MEMORY    ((size_t)256 << 20)
#define HIST_CAP          500
#define DEFAULT_CKPT      100
#define DEFAULT_KEEP_CKPT 3 /* keep_checkpoints: older ones kept besides the newest */
#define MAX_KEEP_CKPT     100000

/* Key of the sample geometry in a stored spec (see jobs_submit.c). */
#define PG_JOBS_GEOMETRY_KEY "_serving_geometry"

/* Claim latency histogram (seconds, jobs_lease.c). */
#define PG_JOBS_LAT_BUCKETS 9

typedef struct hist_pt {
    long step;
    double loss, eps;
} hist_pt;

typedef struct job {
    int64_t seq;
    char id[PG_ID_MAX], tenant[PG_ID_MAX], dataset_id[PG_ID_MAX];
    char method_name[64];
    const pg_method *method; /* NULL: the method left this build */
    json_t *spec;            /* resolved, plus dataset_id and method */
    pg_data_desc desc;
    char public_dataset_id[PG_ID_MAX]; /* "" when the job reads no public data */
    pg_data_desc public_desc;          /* d == 0: unknown (deleted after the job ended) */
    pg_privacy_plan plan;
    json_t *privacy; /* the plan's report, rendered once (the shuffle bound is costly) */
    int status;
    int cancel;  /* stop at the next step boundary */
    int deleted; /* DELETE /v1/jobs/{id}: out of the table, in pg_jobs.gone */
    int64_t created_at, started_at, finished_at, steps_reserved;
    char node[PG_NODE_MAX]; /* replica that runs or last ran it; "" unknown */
    char *error;
    long step, total;
    double loss, eps_spent, sps, eta;
    hist_pt hist[HIST_CAP];
    size_t nhist;
    long hist_stride;
    pg_ckpt_row *ckpts;
    size_t nckpts, ckcap;
    pg_snapshot *snap;
    json_t *warnings; /* set once the job finished (stored); NULL: computed per view */
    /* What its trainer warned of (method.h, trainer warnings): objects
     * {source "trainer", code, message, step}, at most PG_JOBS_TWARN_MAX,
     * kept across resumes (stored in the history document); NULL: none. */
    json_t *twarn;
    uint64_t version;
    /* Any replica answers any read: a copy followed from the database (jobs_sync.c). */
    int followed;          /* the state below came from the database, not a worker here */
    int syncing;           /* a thread is reading its row now */
    int64_t synced_ms;     /* monotonic ms of the last read of its row; 0: never */
    unsigned char sig[32]; /* SHA-256 of the row fields and document applied */
    /* The shared queue (jobs_run.c, jobs_lease.c) */
    int owned;              /* this replica holds its lease: one of its workers runs it */
    int lost;               /* the lease was lost: its worker stops without writing */
    double submitted_at;    /* wall clock of a submission through this replica; 0: elsewhere */
    const char *unrunnable; /* why this replica cannot run it (static text); NULL: it can */
    int ending;             /* its worker ends or releases it: no more heartbeats */
    int64_t lease_until;    /* the lease's end as last claimed or renewed here (heartbeat) */
    int lease_ran_out;      /* the heartbeat logged that it ran out while the row was busy */
} job;

struct pg_jobs {
    const pg_svc_config *cfg;
    pg_db *db;
    pg_cpu_budget *cpu; /* NULL: unbudgeted (pg_jobs_set_cpu) */
    pthread_mutex_t mu;
    pthread_cond_t work, update;
    job **all;
    size_t n, cap;
    job **gone; /* deleted jobs: pointers held elsewhere stay valid until destroy */
    size_t ngone, gonecap;
    size_t pending;
    pthread_t *threads;
    int nthreads, stopping;
    int closing; /* waits return at once (event streams end); workers go on */
    uint64_t samples_served, steps_done;
    /* Job lookups of requests (pg_jobs_sync_lookup): answered from the table
     * (the tenant's own job, in memory) or from a storage read. */
    uint64_t lookups_memory, lookups_storage;
    char node[PG_NODE_MAX]; /* this replica (--node-id) */
    /* Any replica answers any read (jobs_sync.c). */
    struct pg_snapcache *snaps; /* models of jobs not trained here; created on first use */
    /* The shared queue. Workers claim from the database (waking on
     * `work` at a local submission or every --claim-poll-ms); one thread
     * renews the leases of the jobs they run (jobs_lease.c). */
    pthread_t hb;
    int hb_running, hb_stop;
    pthread_cond_t hb_wake;
    int draining;   /* no more claims; running jobs checkpoint and release their lease */
    int dead;       /* pg_jobs_abandon: workers and heartbeats stop, writing nothing */
    int joined;     /* workers and heartbeat thread have exited */
    uint64_t kicks; /* local submissions, so an idle worker never sleeps through one */
    uint64_t claims, resumes, lease_losses, released_at_start;
    double claim_lat_sum;
    uint64_t claim_lat_n, claim_lat_bucket[PG_JOBS_LAT_BUCKETS];
};

int64_t pg_jobs_now(void);
int pg_jobs_finished(int status);
void pg_jobs_job_free(job *j);

/* Table (mu held). */
int pg_jobs_table_add(pg_jobs *m, job *j);
/* A job of any tenant by id (mu held); NULL when this replica has none. */
job *pg_jobs_by_id(pg_jobs *m, const char *id);
/* Builds a job from its stored row (and history document, checkpoints)
 * without writing anything; NULL when out of memory. A job this replica
 * cannot run (method not built, dataset gone) gets j->unrunnable: the
 * replica that claims it fails it, fenced. */
job *pg_jobs_job_from_row(pg_jobs *m, const pg_job_row *r);
/* A local submission: wake an idle worker (mu held). */
void pg_jobs_wake_worker(pg_jobs *m);
/* A job changed: raise its version and wake its event streams (mu held). */
void pg_jobs_publish_change(pg_jobs *m, job *j);

/* JSON views (mu held for the job ones). */
json_t *pg_jobs_plan_json(const pg_privacy_plan *p, const pg_data_desc *d);
/* The job's privacy report, a new reference: j->privacy, or, when that
 * could not be rendered (out of memory at submission or adoption; it stays
 * NULL rather than an empty object that would read as "charges nothing"),
 * rendered from j->plan now. NULL when out of memory. (mu held) */
json_t *pg_jobs_privacy_json(const job *j);
json_t *pg_jobs_ckpts_json(const job *j);
json_t *pg_jobs_job_json(const job *j);
json_t *pg_jobs_quote_json(const pg_ledger_quote *q);
const char *pg_jobs_model_name(int model);

/* The largest checkpoint read back (a trainer's state). */
#define CKPT_MAX_BYTES ((size_t)1 << 34)
/* A stored checkpoint's bytes (malloc'ed); a listed step that storage no
 * longer has is an error. */
int pg_jobs_read_ckpt(pg_jobs *m, const char *id, long step, unsigned char **bytes, size_t *len,
                      pg_error *err);

/* The durable view (jobs_hist.c). save encodes under mu (not held by the
 * caller) and stores, fenced on this replica's lease (*held = 0: refused,
 * the lease is lost); apply fills a job being rebuilt from its stored
 * document (-1: unreadable, nothing applied). warnings_json: the warnings
 * of the history so far, plus the range draw of the latest snapshot when
 * succeeded (the job ended well: its final model is judged; mu held). */
int pg_jobs_hist_save(pg_jobs *m, job *j, int *held, pg_error *err);
/* Trainer warnings (mu held): merges the trainer's list into j->twarn by
 * code (a new code is appended with the job's current step, a known code
 * gets the new sentence); returns 1 when j->twarn changed. The list is
 * bounded by PG_JOBS_TWARN_MAX (a resumed job's stored warnings plus a
 * trainer's new ones; more are dropped). */
#define PG_JOBS_TWARN_MAX (2 * PG_TRAINER_WARN_MAX)
int pg_jobs_twarn_merge(job *j, const pg_trainer_warnings *w);
int pg_jobs_hist_apply(job *j, const char *doc);
json_t *pg_jobs_warnings_json(const job *j, int succeeded);

/* ---- any replica answers any read (jobs_sync.c) -------------------------
 *
 * The table holds the jobs this process drives (claimed by its workers
 * under a lease) and copies of every other job it was asked about. A copy is loaded on first lookup
 * from the job's row and history document, and re-read when older than PG_JOBS_SYNC_MS: one
 * statement (pg_db_job_get), applied only when the row's fields or the document changed (then the
 * checkpoint list is read too). A job whose row is gone is unlisted (pg_jobs_unlist_deleted): 404
 * from then on. A job this process drives is never overwritten (its memory is ahead of its row);
 * once it finished it is followed like any other, so every replica shows the stored truth.
 *
 * Rule for the workers: a job is driven here while this replica holds its
 * lease (`owned`, set with `followed` cleared under mu when a worker adopts
 * a claimed job, jobs_run.c); every other job, queued ones included (any
 * replica may claim them), follows its row.
 *
 * Lookups below take mu themselves (it must NOT be held) and do storage
 * reads without it. A refresh that fails keeps the copy (served stale);
 * a job not in the table yet reports the storage error. */
#define PG_JOBS_SYNC_MS 1000
int pg_jobs_status_of(const char *s);
/* In-memory lookup (mu held); tenant NULL: any. */
job *pg_jobs_find(pg_jobs *m, const char *tenant, const char *id);
/* A job whose row is gone: out of the table into the list of deleted jobs
 * (404 from then on; the struct lives until destroy), mu held; -1 when out
 * of memory. */
int pg_jobs_unlist_deleted(pg_jobs *m, job *j);
/* 1 while this process drives j (mu held). */
int pg_jobs_driven_here(const job *j);
/* The tenant's job id brought up to date (NULL: unknown or deleted). */
int pg_jobs_sync_lookup(pg_jobs *m, const char *tenant, const char *id, job **out, pg_error *err);
/* As lookup, for a row just listed from storage: a finished job whose
 * listed status matches its copy needs no further read. */
int pg_jobs_sync_listed(pg_jobs *m, const pg_job_row *row, job **out, pg_error *err);
/* Re-reads j when stale (or always with force); never blocks on another
 * thread's read of it. */
int pg_jobs_sync_refresh(pg_jobs *m, job *j, int force, pg_error *err);
/* Monotonic milliseconds (the clock of synced_ms). */
int64_t pg_jobs_mono_ms(void);
/* The snapshot cache, created on first use (NULL when out of memory). */
struct pg_snapcache *pg_jobs_snapcache(pg_jobs *m);
/* The lease side of the shared queue (jobs_lease.c). start/stop run the
 * heartbeat thread; mark_lease_lost marks j's lease lost, counts and logs it (mu
 * held); queue_metrics renders the per-replica queue series (malloc'ed). */
int pg_jobs_lease_start(pg_jobs *m, pg_error *err);
void pg_jobs_lease_stop(pg_jobs *m);
void pg_jobs_mark_lease_lost(pg_jobs *m, job *j, const char *why);
void pg_jobs_count_claim(pg_jobs *m, job *j, const pg_job_row *r, int64_t now, const char *prev);
char *pg_jobs_queue_metrics(pg_jobs *m);
double pg_jobs_wall(void);

#endif
