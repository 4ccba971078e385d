/* service/jobs/jobs_run.c - the worker threads: they claim jobs from the shared
 * queue in the database and run each from data load to its final
 * checkpoint, under the write-ahead step reservation and the lease's fence
 * (jobs.h). Every write a worker makes about its job is fenced on this
 * replica's lease: once refused (or once the heartbeat reports the lease
 * lost) the worker stops at its next step boundary and writes nothing more. */
#include "engine/data/dataset.h"
#include "engine/data/rowsrc.h"
#include "engine/methods/method.h"
#include "service/jobs/jobs.h"
#include "service/jobs/jobs_internal.h"
#include "service/log.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <zlib.h>

#include "engine/core/alloc.h"
#include "engine/core/cpu.h"
#include "engine/core/mat.h"

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The loss history keeps the steps that are multiples of hist_stride; when
 * HIST_CAP points are held the stride doubles and the points off it go, so
 * the history covers the whole run at an even resolution, halved each time
 * it fills (at most HIST_CAP points, at least HIST_CAP / 2 once it filled). */
static void hist_add(job *j, long step, double loss, double eps)
{
    if (j->hist_stride < 1) j->hist_stride = 1;
    if (step % j->hist_stride) return;
    while (j->nhist == HIST_CAP) {
        j->hist_stride *= 2;
        size_t k = 0;
        for (size_t i = 0; i < j->nhist; i++)
            if (j->hist[i].step % j->hist_stride == 0) j->hist[k++] = j->hist[i];
        j->nhist = k;
        if (step % j->hist_stride) return;
    }
    j->hist[j->nhist++] = (hist_pt){step, loss, eps};
}

static long ckpt_every(const json_t *spec)
{
    json_t *v = json_object_get(spec, "checkpoint_every");
    long c = json_is_integer(v) ? (long)json_integer_value(v) : DEFAULT_CKPT;
    return c > 0 ? c : DEFAULT_CKPT;
}

/* Seconds a worker waits out a lost database (PG_EUNAVAIL) before it fails
 * the job. Every storage call retried this way is idempotent (absolute
 * values, replace-by-key writes, reads), so a retry after an outage whose
 * first attempt did commit changes nothing. */
#define DB_RETRY_S 60
/* Between steps a worker reads its job's row at most this often (seconds):
 * a cancel asked through another replica, or a lost lease, is seen within
 * about this long plus one step. */
#define WATCH_S 1.0

/* 1 when `rc` says the database is unreachable and the worker should try
 * again (after a second); 0 to go on with rc. */
static int db_retry(pg_jobs *m, int rc, int *tries)
{
    if (rc != PG_EUNAVAIL || *tries >= DB_RETRY_S) return 0;
    (*tries)++;
    struct timespec ts = {1, 0};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&m->mu);
    int stop = m->stopping || m->dead;
    pthread_mutex_unlock(&m->mu);
    return !stop;
}

static int is_lost(pg_jobs *m, job *j)
{
    pthread_mutex_lock(&m->mu);
    int l = j->lost || m->dead;
    pthread_mutex_unlock(&m->mu);
    return l;
}

/* A fenced write was refused: the lease is gone (rc stays PG_OK). */
static void refused(pg_jobs *m, job *j, const char *what)
{
    pthread_mutex_lock(&m->mu);
    pg_jobs_mark_lease_lost(m, j, what);
    pthread_mutex_unlock(&m->mu);
}

/* The job leaves this replica's hands (ended, released or lost). */
static void disown(pg_jobs *m, job *j)
{
    pthread_mutex_lock(&m->mu);
    j->owned = 0;
    j->ending = 0;
    pg_jobs_publish_change(m, j);
    pthread_mutex_unlock(&m->mu);
}

/* The worker is about to end or release j: heartbeats stop for it. */
static void set_ending(pg_jobs *m, job *j)
{
    pthread_mutex_lock(&m->mu);
    j->ending = 1;
    pthread_mutex_unlock(&m->mu);
}

static int patch(pg_jobs *m, job *j, const pg_job_patch *p, const char *what, pg_error *err)
{
    int rc, held = 0, tries = 0;
    do rc = pg_db_job_patch_owned(m->db, j->id, m->node, p, &held, err);
    while (db_retry(m, rc, &tries));
    if (!rc && !held) refused(m, j, what);
    return rc;
}

static int hist_save(pg_jobs *m, job *j, pg_error *err)
{
    int rc, held = 0, tries = 0;
    do rc = pg_jobs_hist_save(m, j, &held, err);
    while (db_retry(m, rc, &tries));
    if (!rc && !held) refused(m, j, "its progress write was refused");
    return rc;
}

static void finish(pg_jobs *m, job *j, int st, const char *error)
{
    pg_error e = {0};
    /* The warnings are judged once, on the final model, and stored with
     * the view before the status says the job ended. */
    pthread_mutex_lock(&m->mu);
    j->ending = 1;
    json_t *w = pg_jobs_warnings_json(j, st == ST_SUCCEEDED);
    if (w && st == ST_SUCCEEDED && j->step < j->total) {
        /* Only a crash or a lost lease does this (jobs.h, write-ahead
         * reservation): say so instead of a silent "succeeded". */
        char msg[512];
        snprintf(msg, sizeof msg,
                 "ended at step %ld of %ld planned: a crash or takeover re-ran the steps since "
                 "the last checkpoint, and the plan's charge already counted them, so the run "
                 "stopped where the charged steps ran out",
                 j->step, j->total);
        json_array_append_new(w, json_string(msg));
    }
    json_decref(j->warnings);
    j->warnings = w;
    /* Charged in full when the job started and never refunded: what the
     * ledger holds for it is the plan's epsilon, whatever step it ended at
     * (after a crash the trainer's own count misses the lost steps). */
    if (j->plan.charges && isfinite(j->plan.epsilon)) j->eps_spent = j->plan.epsilon;
    pthread_mutex_unlock(&m->mu);
    int rc = hist_save(m, j, &e);
    if (rc) pg_log_job("error", m->node, j->id, "cannot store the job's history: %s", e.msg);
    if (is_lost(m, j)) {
        disown(m, j);
        return;
    }
    pg_job_patch p = {.now = pg_jobs_now(),
                      .status = pg_jobs_status[st],
                      .finished = 1,
                      .error = error,
                      .step = -1,
                      .steps_reserved = -1};
    rc = patch(m, j, &p, "the write of its end was refused", &e);
    if (rc || is_lost(m, j)) {
        /* Not recorded: the row still says running under this lease, which
         * runs out; the job is then claimed again and resumes. */
        if (rc) pg_log_job("error", m->node, j->id, "cannot record the end of the job: %s", e.msg);
        disown(m, j);
        return;
    }
    pthread_mutex_lock(&m->mu);
    j->status = st;
    j->finished_at = p.now;
    j->eta = NAN;
    j->owned = 0;
    j->ending = 0;
    free(j->error);
    j->error = error ? strdup(error) : NULL;
    pg_jobs_publish_change(m, j);
    pthread_mutex_unlock(&m->mu);
}

static int publish(pg_jobs *m, job *j, pg_trainer *t, pg_error *err)
{
    pg_snapshot *s;
    int rc = j->method->snapshot(t, &s, err);
    if (rc) return rc;
    pthread_mutex_lock(&m->mu);
    pg_snapshot *old = j->snap;
    j->snap = s;
    pg_jobs_publish_change(m, j);
    pthread_mutex_unlock(&m->mu);
    if (old) pg_snapshot_release(old);
    return PG_OK;
}

/* The trainer's warnings into the job: a new or changed one is published
 * (views and event streams) and stored at once with the durable view, so a
 * restart or another replica shows it even before the next checkpoint.
 * *seen: the version of the trainer's list taken last. */
static int take_warnings(pg_jobs *m, job *j, const pg_trainer *t, unsigned *seen, pg_error *err)
{
    const pg_trainer_warnings *w = pg_trainer_warnings_of(t);
    if (!w || w->version == *seen) return PG_OK;
    *seen = w->version;
    pthread_mutex_lock(&m->mu);
    int changed = pg_jobs_twarn_merge(j, w);
    if (changed) pg_jobs_publish_change(m, j);
    pthread_mutex_unlock(&m->mu);
    return changed ? hist_save(m, j, err) : PG_OK;
}

static long keep_ckpts(const json_t *spec)
{
    json_t *v = json_object_get(spec, "keep_checkpoints");
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (long)json_integer_value(v)
                                                            : DEFAULT_KEEP_CKPT;
}

/* The job's stored checkpoints, into j->ckpts (the list may have grown on
 * another replica). */
static int reload_ckpts(pg_jobs *m, job *j, pg_error *err)
{
    pg_ckpt_row *rows = NULL;
    size_t n = 0;
    int rc, tries = 0;
    do rc = pg_db_ckpt_list(m->db, j->id, &rows, &n, err);
    while (db_retry(m, rc, &tries));
    if (rc) return rc;
    pthread_mutex_lock(&m->mu);
    free(j->ckpts);
    j->ckpts = rows;
    j->nckpts = j->ckcap = n;
    pg_jobs_publish_change(m, j);
    pthread_mutex_unlock(&m->mu);
    return PG_OK;
}

/* Stores a checkpoint (fenced), then applies the retention rule
 * (keep_checkpoints K: the newest checkpoint, which a resume and the
 * serving snapshot read, plus the K before it; older ones are unlisted
 * first, then deleted) and saves the job's durable view. The list is
 * re-read from storage so the view shows the stored created_at, exactly
 * what a restart will show. A refused write leaves j lost and rc PG_OK. */
static int checkpoint(pg_jobs *m, job *j, pg_trainer *t, long step, pg_error *err)
{
    unsigned char *bytes;
    size_t len;
    int rc = j->method->save(t, &bytes, &len, err);
    if (rc) return rc;
    uint32_t crc = (uint32_t)crc32(0L, bytes, (uInt)len);
    int tries = 0, held = 0;
    do rc = pg_db_ckpt_put_owned(m->db, j->id, m->node, step, bytes, len, crc, &held, err);
    while (db_retry(m, rc, &tries));
    free(bytes);
    if (!rc && !held) refused(m, j, "its checkpoint write was refused");
    if (rc || is_lost(m, j)) return rc;
    pg_job_patch p = {.now = pg_jobs_now(), .step = step, .steps_reserved = -1};
    rc = patch(m, j, &p, "its step write was refused", err);
    if (rc || is_lost(m, j)) return rc;
    pg_ckpt_row *rows = NULL;
    size_t n = 0;
    tries = 0;
    do rc = pg_db_ckpt_list(m->db, j->id, &rows, &n, err);
    while (db_retry(m, rc, &tries));
    if (rc) return rc;
    long keep = keep_ckpts(j->spec) + 1;
    size_t drop = n > (size_t)keep ? n - (size_t)keep : 0;
    pg_ckpt_row *kept = malloc((n - drop ? n - drop : 1) * sizeof *kept);
    if (!kept) {
        free(rows);
        return pg_error_set(err, PG_ENOMEM, "out of memory listing checkpoints");
    }
    memcpy(kept, rows + drop, (n - drop) * sizeof *rows);
    pthread_mutex_lock(&m->mu);
    free(j->ckpts);
    j->ckpts = kept;
    j->nckpts = j->ckcap = n - drop;
    pg_jobs_publish_change(m, j);
    pthread_mutex_unlock(&m->mu);
    /* A failed deletion does not fail the job: the checkpoint stays stored
     * (listed again after a restart) and the next write retries the rule. */
    for (size_t i = 0; i < drop && !is_lost(m, j); i++) {
        pg_error e = {0};
        int drc;
        tries = 0;
        do drc = pg_db_ckpt_delete_owned(m->db, j->id, m->node, rows[i].step, &held, &e);
        while (db_retry(m, drc, &tries));
        if (drc)
            pg_log_job("warn", m->node, j->id, "cannot delete checkpoint %lld: %s",
                       (long long)rows[i].step, e.msg);
        else if (!held)
            refused(m, j, "its checkpoint deletion was refused");
    }
    if (is_lost(m, j)) {
        free(rows);
        return PG_OK;
    }
    free(rows);
    return hist_save(m, j, err);
}

/* Loads exactly the rows the plan was made for (of the job's dataset, or of
 * its public dataset: d->n is the count at submission). */
static int load_data(pg_jobs *m, const char *dataset_id, const pg_data_desc *d, pg_dataset *ds,
                     pg_error *err)
{
    pg_block b;
    int labeled;
    int rc, tries = 0;
    do rc = pg_db_rows_load(m->db, dataset_id, d->d, m->cfg->max_job_memory, &b, &labeled, err);
    while (db_retry(m, rc, &tries));
    if (rc) return rc;
    if (b.n < d->n) {
        pg_block_free(&b);
        return pg_error_set(err, PG_ESTATE,
                            "the dataset has %llu rows, fewer than the %zu the job "
                            "was planned for",
                            (unsigned long long)b.n, d->n);
    }
    if (d->num_classes > 0 && !b.labels) {
        pg_block_free(&b);
        return pg_error_set(err, PG_EINVAL,
                            "the dataset declares classes but some rows carry no labels");
    }
    int32_t *labels = d->num_classes > 0 ? b.labels : NULL;
    if (!labels && b.labels) {
        pg_free(b.labels);
        b.labels = NULL;
    }
    rc = pg_dataset_adopt(ds, b.x, labels, d->n, d->shape, d->ndim, d->num_classes, d->lo, d->hi,
                          err);
    if (rc) pg_block_free(&b);
    return rc;
}

/* The rows of a method that streams them (pg_method.streams): every pass
 * reads exactly the planned rows from storage (pg_db_rows_pass), one window
 * of STREAM_BYTES at most in memory, never the whole dataset. */
#define STREAM_ROWS  4096
#define STREAM_BYTES ((size_t)4 << 20)

typedef struct stream {
    pg_jobs *m;
    const char *dataset_id;
    size_t delivered; /* rows given to the trainer in this pass */
    pg_rowsrc_fn fn;
    void *ctx;
} stream;

static int stream_fn(void *ctx, const float *x, const int32_t *labels, size_t rows, pg_error *err)
{
    stream *s = ctx;
    s->delivered += rows;
    return s->fn(s->ctx, x, labels, rows, err);
}

static int stream_pass(void *impl, const pg_rowsrc *src, pg_rowsrc_fn fn, void *ctx, pg_error *err)
{
    stream *s = impl;
    int rc, tries = 0;
    /* A lost database is waited out only while nothing of this pass was
     * delivered: a retry after rows went out would count them twice. */
    do {
        s->delivered = 0;
        s->fn = fn;
        s->ctx = ctx;
        rc = pg_db_rows_pass(s->m->db, s->dataset_id, src->d, src->n, src->labelled, src->chunk,
                             s->m->cfg->max_job_memory, stream_fn, s, err);
    } while (s->delivered == 0 && db_retry(s->m, rc, &tries));
    return rc;
}

static void stream_source(pg_jobs *m, const char *dataset_id, const pg_data_desc *d, stream *s,
                          pg_rowsrc *src)
{
    *s = (stream){.m = m, .dataset_id = dataset_id};
    size_t per = STREAM_BYTES / (d->d * sizeof(float) + sizeof(int32_t));
    *src = (pg_rowsrc){.n = d->n,
                       .d = d->d,
                       .labelled = d->num_classes > 0,
                       .chunk = per < 1             ? 1
                                : per > STREAM_ROWS ? STREAM_ROWS
                                                    : per,
                       .pass = stream_pass,
                       .impl = s};
}

int pg_jobs_read_ckpt(pg_jobs *m, const char *id, long step, unsigned char **bytes, size_t *len,
                      pg_error *err)
{
    int found;
    int rc = pg_db_ckpt_get(m->db, id, step, CKPT_MAX_BYTES, bytes, len, &found, err);
    if (!rc && !found)
        rc = pg_error_set(err, PG_EIO, "checkpoint %ld of %s is missing from storage", step, id);
    return rc;
}

/* What a worker does at a step boundary. */
enum { GO = 0, STOP_LOST, STOP_CANCEL, STOP_DRAIN };

/* The lease first (a lost job writes nothing, not even its cancel), then a
 * cancel, then a drain. The job's row is read at most every WATCH_S: a
 * cancel asked through another replica and a takeover both show there. */
static int boundary(pg_jobs *m, job *j, double *last_watch)
{
    pthread_mutex_lock(&m->mu);
    int st = j->lost || m->dead ? STOP_LOST
             : j->cancel        ? STOP_CANCEL
             : m->draining      ? STOP_DRAIN
                                : GO;
    pthread_mutex_unlock(&m->mu);
    if (st != GO || mono() - *last_watch < WATCH_S) return st;
    *last_watch = mono();
    int held, cancel;
    pg_error e = {0};
    /* Unreachable database: go on; the fenced writes and the heartbeat decide. */
    if (pg_db_job_watch(m->db, j->id, m->node, &held, &cancel, &e)) return GO;
    pthread_mutex_lock(&m->mu);
    if (!held) {
        pg_jobs_mark_lease_lost(m, j, "its row names another owner");
        st = STOP_LOST;
    } else if (cancel) {
        j->cancel = 1;
        st = STOP_CANCEL;
    }
    pthread_mutex_unlock(&m->mu);
    return st;
}

/* Drops the history points after step k: a resumed run re-does those steps
 * (they were computed by a run whose work after its checkpoint is void). */
static void hist_truncate(job *j, long k)
{
    size_t n = 0;
    while (n < j->nhist && j->hist[n].step <= k) n++;
    j->nhist = n;
}

/* The largest team a job of this replica runs: --threads-per-job capped by
 * the budget (0: the budget's cores; without a budget, one thread as before
 * the budget existed). */
static int team_cap(const pg_jobs *m)
{
    int cap = m->cfg->threads_per_job;
    if (!m->cpu) return cap > 0 ? cap : 1;
    int cores = pg_cpu_budget_cores(m->cpu);
    return cap > 0 && cap < cores ? cap : cores;
}

void pg_jobs_set_cpu(pg_jobs *m, pg_cpu_budget *cpu)
{
    m->cpu = cpu;
}

pg_cpu_budget *pg_jobs_cpu(const pg_jobs *m)
{
    return m ? m->cpu : NULL;
}

static void run_joined(pg_jobs *m, job *j, pg_cpu_share *cpu);

/* A running job is a user of the CPU budget from claim to end, whatever
 * path it ends by (the share's leave releases what a failed step held). */
static void run(pg_jobs *m, job *j)
{
    pg_cpu_share cpu;
    pg_cpu_join(m->cpu, false, &cpu);
    run_joined(m, j, &cpu);
    pg_cpu_leave(&cpu);
}

static void run_joined(pg_jobs *m, job *j, pg_cpu_share *cpu)
{
    pg_error err = {0};
    if (j->unrunnable) {
        finish(m, j, ST_FAILED, j->unrunnable);
        return;
    }
    const pg_method *mt = j->method;
    int charges = j->plan.charges;
    double last_watch = -WATCH_S; /* look at the row at once: a cancel may be waiting */
    int st = boundary(m, j, &last_watch);
    if (st == STOP_CANCEL) finish(m, j, ST_CANCELLED, NULL);
    if (st == STOP_DRAIN) {
        set_ending(m, j);
        pg_job_patch p = {.now = pg_jobs_now(), .step = -1, .steps_reserved = -1, .release = 1};
        patch(m, j, &p, "its release was refused", &err);
    }
    if (st != GO) {
        disown(m, j);
        return;
    }
    pg_dataset ds = {0}, pub = {0};
    /* A method that streams reads its rows in passes from storage for as
     * long as the trainer lives; the others get them loaded, as ever. */
    stream sm;
    pg_rowsrc src;
    int streams = mt->streams;
    if (streams) stream_source(m, j->dataset_id, &j->desc, &sm, &src);
    int rc = reload_ckpts(m, j, &err);
    if (!rc && !streams) rc = load_data(m, j->dataset_id, &j->desc, &ds, &err);
    if (rc) {
        finish(m, j, ST_FAILED, err.msg);
        return;
    }
    pg_trainer *t = NULL;
    long k = 0;
    pthread_mutex_lock(&m->mu);
    long last_ck = j->nckpts ? (long)j->ckpts[j->nckpts - 1].step : -1;
    pthread_mutex_unlock(&m->mu);
    /* Each step runs with its grant (<= threads); the kernels' workspaces
     * are sized for every core whatever the grant at creation. Building the
     * trainer computes too (costs, calibration), under a grant of its own. */
    int threads = team_cap(m);
    pg_cpu_use(pg_cpu_acquire(cpu, threads));
    /* A job with a checkpoint ran before (here or on another replica, which
     * died, hung, was cut off or drained): it resumes from the newest one,
     * the path a restart takes. */
    if (last_ck >= 0) {
        unsigned char *bytes;
        size_t len;
        int tries = 0;
        do rc = pg_jobs_read_ckpt(m, j->id, last_ck, &bytes, &len, &err);
        while (db_retry(m, rc, &tries));
        if (!rc) {
            /* The checkpoint carries what was learned from public rows. */
            pg_job_data in = pg_jobs_data(j, streams ? NULL : &ds, NULL);
            if (streams) in.source = &src;
            rc = mt->restore(j->spec, &in, threads, bytes, len, &t, &err);
            free(bytes);
        }
        k = last_ck;
    } else {
        if (j->public_dataset_id[0])
            rc = load_data(m, j->public_dataset_id, &j->public_desc, &pub, &err);
        pg_job_data in = pg_jobs_data(j, streams ? NULL : &ds, &pub);
        if (streams) in.source = &src;
        if (!rc) rc = mt->create(j->spec, &in, threads, &t, &err);
        pg_dataset_free(&pub); /* the trainer copies what it keeps */
    }
    pg_cpu_release(cpu);
    if (rc) {
        pg_dataset_free(&ds);
        finish(m, j, ST_FAILED, err.msg);
        return;
    }
    /* Steps this run may take (see the header: write-ahead reservation;
     * steps_reserved is the claimed row's, whoever reserved it). */
    int64_t base = charges ? j->steps_reserved : 0;
    int64_t left = charges ? (int64_t)j->plan.steps - base : INT64_MAX;
    long every = ckpt_every(j->spec);
    pthread_mutex_lock(&m->mu);
    j->step = k;
    hist_truncate(j, k);
    pg_jobs_publish_change(m, j);
    pthread_mutex_unlock(&m->mu);
    if (k > 0 && publish(m, j, t, &err)) rc = PG_EIO;
    unsigned seen = 0;
    if (!rc) rc = take_warnings(m, j, t, &seen, &err);
    int64_t ran = 0, reserved = base;
    long step = k, last_saved = last_ck;
    int outcome = ST_SUCCEEDED;
    double t0 = mono(), last_progress = t0;
    int progress_s = m->cfg->progress_s;
    const char *why = NULL;
    while (!rc) {
        st = boundary(m, j, &last_watch);
        if (st == STOP_LOST || st == STOP_DRAIN) {
            outcome = -st;
            break;
        }
        if (st == STOP_CANCEL) {
            outcome = ST_CANCELLED;
            break;
        }
        if (ran >= left) {
            if (step == 0) {
                outcome = ST_FAILED;
                why = "the interrupted run used every planned step and left no checkpoint";
            }
            break;
        }
        if (charges && base + ran >= reserved) {
            int64_t chunk = every < left - ran ? every : left - ran;
            pg_job_patch p = {
                .now = pg_jobs_now(), .step = -1, .steps_reserved = base + ran + chunk};
            rc = patch(m, j, &p, "its step reservation was refused", &err);
            if (rc) break;
            if (is_lost(m, j)) {
                outcome = -STOP_LOST;
                break;
            }
            reserved = base + ran + chunk;
            pthread_mutex_lock(&m->mu);
            j->steps_reserved = reserved;
            pthread_mutex_unlock(&m->mu);
        }
        pg_step_report rep;
        pg_cpu_use(pg_cpu_acquire(cpu, threads));
        rc = mt->step(t, &rep, &err);
        pg_cpu_release(cpu);
        if (rc) break;
        ran++;
        step = rep.step;
        double el = mono() - t0;
        pthread_mutex_lock(&m->mu);
        j->step = step;
        /* A trainer that reaches its end before the plan's step bound (aim
         * stops when its budget is spent, the bound being its most rounds)
         * ended as planned: its total is where it ended, not a shortfall. */
        if (rep.done && step < j->total) j->total = step;
        j->loss = rep.loss;
        j->eps_spent = rep.epsilon_spent;
        j->sps = el > 0 ? (double)ran / el : NAN;
        j->eta = j->sps > 0 ? (double)(j->total - step) / j->sps : NAN;
        hist_add(j, step, rep.loss, rep.epsilon_spent);
        m->steps_done++;
        pg_jobs_publish_change(m, j);
        pthread_mutex_unlock(&m->mu);
        if (step % every == 0 || rep.done) {
            rc = checkpoint(m, j, t, step, &err);
            if (!rc && is_lost(m, j)) {
                outcome = -STOP_LOST;
                break;
            }
            if (!rc) rc = publish(m, j, t, &err);
            if (rc) break;
            last_saved = step;
            last_progress = mono();
        } else if (progress_s > 0 && mono() - last_progress >= progress_s) {
            /* Progress for the other replicas' views (the samples they serve
             * still come only from checkpoints). */
            rc = hist_save(m, j, &err);
            if (rc) break;
            if (is_lost(m, j)) {
                outcome = -STOP_LOST;
                break;
            }
            last_progress = mono();
        }
        if ((rc = take_warnings(m, j, t, &seen, &err))) break;
        if (rep.done) break;
    }
    if (outcome == -STOP_LOST) {
        /* Another replica owns the job (or this one is "dead"): whatever ran
         * since the last accepted write is void, and nothing more is written. */
        if (!m->dead)
            pg_log_job("warn", m->node, j->id,
                       "stopped at step %ld without writing: the lease is lost", step);
        mt->destroy(t);
        pg_dataset_free(&ds);
        disown(m, j);
        return;
    }
    if (!rc && step > 0 && step != last_saved) /* cancelled, drained or budget-capped */
        rc = checkpoint(m, j, t, step, &err);
    if (!rc && is_lost(m, j)) {
        mt->destroy(t);
        pg_dataset_free(&ds);
        disown(m, j);
        return;
    }
    if (!rc && step > 0 && step != last_saved) rc = publish(m, j, t, &err);
    if (!rc) rc = take_warnings(m, j, t, &seen, &err);
    mt->destroy(t);
    pg_dataset_free(&ds);
    if (!rc && outcome == -STOP_DRAIN) {
        /* A drain knows exactly how many steps ran: it gives back the unused
         * part of the reserved chunk (so the next owner loses nothing) and
         * the lease, so another replica claims the job at once. */
        set_ending(m, j);
        pg_job_patch p = {.now = pg_jobs_now(), .step = -1, .steps_reserved = -1, .release = 1};
        if (charges && base + ran < reserved) p.steps_reserved = base + ran;
        rc = patch(m, j, &p, "its release was refused", &err);
        if (!rc && !is_lost(m, j)) {
            pthread_mutex_lock(&m->mu);
            if (p.steps_reserved >= 0) j->steps_reserved = p.steps_reserved;
            pthread_mutex_unlock(&m->mu);
            pg_log_job("info", m->node, j->id,
                       "drained at step %ld: checkpointed and released for another replica", step);
        }
        if (rc)
            pg_log_job("warn", m->node, j->id,
                       "cannot release the job (its lease runs out instead): %s", err.msg);
        disown(m, j);
        return;
    }
    if (rc)
        finish(m, j, ST_FAILED, err.msg);
    else
        finish(m, j, outcome, why);
}

/* Takes a claimed row into the table: a job this replica never saw is
 * built from storage; a known one is refreshed from its row and stored
 * view (it may have run elsewhere since). NULL when this replica's own
 * worker already runs it (its claim only renewed the lease) or when out
 * of memory (the lease is then released for another replica). */
static job *adopt(pg_jobs *m, const pg_job_row *r, int64_t now)
{
    pthread_mutex_lock(&m->mu);
    job *j = pg_jobs_by_id(m, r->id);
    int busy = j && j->owned;
    pthread_mutex_unlock(&m->mu);
    if (busy) return NULL;
    char *doc = NULL;
    int found = 0;
    int fresh = !j; /* built from the claimed row, which already names this node */
    if (!j) {
        job *nj = pg_jobs_job_from_row(m, r);
        pthread_mutex_lock(&m->mu);
        j = pg_jobs_by_id(m, r->id);
        if (!j && nj && !pg_jobs_table_add(m, nj)) {
            j = nj;
            nj = NULL;
        }
        pthread_mutex_unlock(&m->mu);
        pg_jobs_job_free(nj);
    } else if (pg_db_job_history_get(m->db, r->id, &doc, &found, NULL) || !found) {
        doc = NULL;
    }
    if (!j) {
        int held;
        pg_db_job_release(m->db, r->id, m->node, now, &held, NULL);
        pg_log_job("error", m->node, r->id, "out of memory taking a claimed job: released");
        return NULL;
    }
    pthread_mutex_lock(&m->mu);
    if (j->owned) { /* another worker of ours adopted it meanwhile */
        pthread_mutex_unlock(&m->mu);
        free(doc);
        return NULL;
    }
    if (doc) pg_jobs_hist_apply(j, doc);
    char prev[PG_NODE_MAX];
    snprintf(prev, sizeof prev, "%s", fresh ? "" : j->node); /* who ran it last, if known */
    j->status = ST_RUNNING;
    j->started_at = r->started_at;
    j->steps_reserved = r->steps_reserved;
    snprintf(j->node, sizeof j->node, "%s", m->node);
    j->owned = 1;
    j->lease_until = now + m->cfg->lease_s;
    j->lease_ran_out = 0;
    j->followed = 0; /* driven here now: jobs_sync.c leaves it alone */
    j->lost = 0;
    j->ending = 0;
    pg_jobs_count_claim(m, j, r, now, prev);
    pg_jobs_publish_change(m, j);
    pthread_mutex_unlock(&m->mu);
    free(doc);
    return j;
}

/* One claim: *out is the job to run (NULL: nothing claimable). */
static int claim(pg_jobs *m, job **out, pg_error *err)
{
    *out = NULL;
    pg_job_row *r;
    int found;
    int64_t now = pg_jobs_now();
    int rc = pg_db_job_claim(m->db, m->node, now, m->cfg->lease_s, &r, &found, err);
    if (rc || !found) return rc;
    *out = adopt(m, r, now);
    pg_job_rows_free(r, 1);
    return PG_OK;
}

static int idle(pg_jobs *m)
{
    return !m->stopping && !m->draining && !m->dead;
}

static void *worker(void *arg)
{
    pg_jobs *m = arg;
    pg_threads_set(team_cap(m)); /* also keeps OpenBLAS to one thread */
    int failing = 0;
    pthread_mutex_lock(&m->mu);
    while (idle(m)) {
        uint64_t seen = m->kicks;
        pthread_mutex_unlock(&m->mu);
        job *j = NULL;
        pg_error err = {0};
        int rc = claim(m, &j, &err);
        if (rc && !failing) pg_log_job("warn", m->node, NULL, "cannot claim jobs: %s", err.msg);
        failing = rc != PG_OK;
        if (j) run(m, j);
        pthread_mutex_lock(&m->mu);
        /* Claim again at once after a job, or when a submission arrived
         * while this claim ran; else sleep until one or the poll period. */
        if (j || (!rc && m->kicks != seen)) continue;
        if (!idle(m)) break;
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        long ns = dl.tv_nsec + (long)(m->cfg->claim_poll_ms % 1000) * 1000000L;
        dl.tv_sec += m->cfg->claim_poll_ms / 1000 + ns / 1000000000L;
        dl.tv_nsec = ns % 1000000000L;
        if (m->kicks == seen) pthread_cond_timedwait(&m->work, &m->mu, &dl);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

int pg_jobs_start(pg_jobs *m, pg_error *err)
{
    m->threads = calloc((size_t)m->cfg->workers, sizeof *m->threads);
    if (!m->threads) return pg_error_set(err, PG_ENOMEM, "out of memory starting workers");
    m->joined = 0;
    int rc = pg_jobs_lease_start(m, err);
    for (int i = 0; !rc && i < m->cfg->workers; i++) {
        if (pthread_create(&m->threads[i], NULL, worker, m))
            rc = pg_error_set(err, PG_EIO, "cannot start a worker thread");
        else
            m->nthreads++;
    }
    return rc;
}

/* Ends the workers (each at its next step boundary, per the flags set by
 * the caller), then the heartbeats, which run until the last worker wrote
 * its checkpoint and released its lease. */
static void join_all(pg_jobs *m)
{
    pthread_mutex_lock(&m->mu);
    int joined = m->joined;
    m->joined = 1;
    pthread_cond_broadcast(&m->work);
    pthread_mutex_unlock(&m->mu);
    if (joined) return;
    for (int i = 0; i < m->nthreads; i++) pthread_join(m->threads[i], NULL);
    m->nthreads = 0;
    pg_jobs_lease_stop(m);
}

void pg_jobs_drain(pg_jobs *m)
{
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    m->draining = 1;
    pthread_mutex_unlock(&m->mu);
    join_all(m);
}

void pg_jobs_abandon(pg_jobs *m)
{
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    m->dead = 1;
    pthread_mutex_unlock(&m->mu);
    join_all(m);
}
