/* service/jobs_run.c - the worker threads: one job from data load to its
 * final checkpoint, under the write-ahead step reservation (jobs.h). */
#include "engine/data/dataset.h"
#include "engine/methods/method.h"
#include "service/jobs.h"
#include "service/jobs_internal.h"

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

/* 1 when `rc` says the database is unreachable and the worker should try
 * again (after a second); 0 to go on with rc. */
static int db_retry(pg_jobs *m, int rc, int *tries)
{
    if (rc != PG_EUNAVAIL || *tries >= DB_RETRY_S) return 0;
    (*tries)++;
    struct timespec ts = {1, 0};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&m->mu);
    int stop = m->stopping;
    pthread_mutex_unlock(&m->mu);
    return !stop;
}

static void finish(pg_jobs *m, job *j, int st, const char *error)
{
    pg_error e = {0};
    int rc, tries = 0;
    /* The warnings are judged once, on the final model, and stored with
     * the view before the status says the job ended. */
    pthread_mutex_lock(&m->mu);
    json_t *w = pg_jobs_warnings_json(j, st == ST_SUCCEEDED);
    json_decref(j->warnings);
    j->warnings = w;
    pthread_mutex_unlock(&m->mu);
    do rc = pg_jobs_hist_save(m, j, &e);
    while (db_retry(m, rc, &tries));
    if (rc) fprintf(stderr, "privgend: cannot store the history of %s: %s\n", j->id, e.msg);
    tries = 0;
    do rc = pg_db_job_set_status(m->db, j->id, pg_jobs_status[st], 0, 1, error, &e);
    while (db_retry(m, rc, &tries));
    if (rc) fprintf(stderr, "privgend: cannot record the end of %s: %s\n", j->id, e.msg);
    pthread_mutex_lock(&m->mu);
    j->status = st;
    j->finished_at = pg_jobs_now();
    j->eta = NAN;
    free(j->error);
    j->error = error ? strdup(error) : NULL;
    pg_jobs_bump(m, j);
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
    pg_jobs_bump(m, j);
    pthread_mutex_unlock(&m->mu);
    if (old) pg_snapshot_release(old);
    return PG_OK;
}

static long keep_ckpts(const json_t *spec)
{
    json_t *v = json_object_get(spec, "keep_checkpoints");
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (long)json_integer_value(v)
                                                            : DEFAULT_KEEP_CKPT;
}

/* Stores a checkpoint, then applies the retention rule (keep_checkpoints K:
 * the newest checkpoint, which a resume and the serving snapshot read, plus
 * the K before it; older ones are unlisted first, then deleted) and saves
 * the job's durable view. The list is re-read from storage so the view
 * shows the stored created_at, exactly what a restart will show. */
static int checkpoint(pg_jobs *m, job *j, pg_trainer *t, long step, pg_error *err)
{
    unsigned char *bytes;
    size_t len;
    int rc = j->method->save(t, &bytes, &len, err);
    if (rc) return rc;
    uint32_t crc = (uint32_t)crc32(0L, bytes, (uInt)len);
    int tries = 0;
    do rc = pg_db_ckpt_put(m->db, j->id, step, bytes, len, crc, err);
    while (db_retry(m, rc, &tries));
    free(bytes);
    if (!rc) do
            rc = pg_db_job_set_step(m->db, j->id, step, err);
        while (db_retry(m, rc, &tries));
    pg_ckpt_row *rows = NULL;
    size_t n = 0;
    if (!rc) do
            rc = pg_db_ckpt_list(m->db, j->id, &rows, &n, err);
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
    pg_jobs_bump(m, j);
    pthread_mutex_unlock(&m->mu);
    /* A failed deletion does not fail the job: the checkpoint stays stored
     * (listed again after a restart) and the next write retries the rule. */
    for (size_t i = 0; i < drop; i++) {
        pg_error e = {0};
        int drc;
        tries = 0;
        do drc = pg_db_ckpt_delete(m->db, j->id, rows[i].step, &e);
        while (db_retry(m, drc, &tries));
        if (drc)
            fprintf(stderr, "privgend: cannot delete checkpoint %lld of %s: %s\n",
                    (long long)rows[i].step, j->id, e.msg);
    }
    free(rows);
    tries = 0;
    do rc = pg_jobs_hist_save(m, j, err);
    while (db_retry(m, rc, &tries));
    return rc;
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

int pg_jobs_read_ckpt(pg_jobs *m, const char *id, long step, unsigned char **bytes, size_t *len,
                      pg_error *err)
{
    int found;
    int rc = pg_db_ckpt_get(m->db, id, step, CKPT_MAX_BYTES, bytes, len, &found, err);
    if (!rc && !found)
        rc = pg_error_set(err, PG_EIO, "checkpoint %ld of %s is missing from storage", step, id);
    return rc;
}

static int should_stop(pg_jobs *m, job *j, int *cancel)
{
    pthread_mutex_lock(&m->mu);
    int stop = m->stopping;
    *cancel = j->cancel;
    pthread_mutex_unlock(&m->mu);
    return stop;
}

static void run(pg_jobs *m, job *j)
{
    pg_error err = {0};
    const pg_method *mt = j->method;
    int charges = j->plan.charges;
    int cancel;
    if (should_stop(m, j, &cancel)) return;
    if (cancel) {
        finish(m, j, ST_CANCELLED, NULL);
        return;
    }
    int tries = 0, src = PG_OK;
    if (!j->resume) do
            src = pg_db_job_set_status(m->db, j->id, "running", 1, 0, NULL, &err);
        while (db_retry(m, src, &tries));
    if (src) {
        finish(m, j, ST_FAILED, err.msg);
        return;
    }
    pg_dataset ds = {0}, pub = {0};
    if (load_data(m, j->dataset_id, &j->desc, &ds, &err)) {
        finish(m, j, ST_FAILED, err.msg);
        return;
    }
    pg_trainer *t = NULL;
    long k = 0;
    int rc = PG_OK;
    pthread_mutex_lock(&m->mu);
    long last_ck = j->nckpts ? (long)j->ckpts[j->nckpts - 1].step : -1;
    pthread_mutex_unlock(&m->mu);
    int threads = m->cfg->threads_per_job;
    if (j->resume && last_ck >= 0) {
        unsigned char *bytes;
        size_t len;
        tries = 0;
        do rc = pg_jobs_read_ckpt(m, j->id, last_ck, &bytes, &len, &err);
        while (db_retry(m, rc, &tries));
        if (!rc) {
            /* The checkpoint carries what was learned from public rows. */
            pg_job_data in = pg_jobs_data(j, &ds, NULL);
            rc = mt->restore(j->spec, &in, threads, bytes, len, &t, &err);
            free(bytes);
        }
        k = last_ck;
    } else {
        if (j->public_dataset_id[0])
            rc = load_data(m, j->public_dataset_id, &j->public_desc, &pub, &err);
        pg_job_data in = pg_jobs_data(j, &ds, &pub);
        if (!rc) rc = mt->create(j->spec, &in, threads, &t, &err);
        pg_dataset_free(&pub); /* the trainer copies what it keeps */
    }
    if (rc) {
        pg_dataset_free(&ds);
        finish(m, j, ST_FAILED, err.msg);
        return;
    }
    /* Steps this run may take (see the header: write-ahead reservation). */
    int64_t base = charges ? j->steps_reserved : 0;
    int64_t left = charges ? (int64_t)j->plan.steps - base : INT64_MAX;
    long every = ckpt_every(j->spec);
    pthread_mutex_lock(&m->mu);
    j->step = k;
    j->resume = 0;
    pg_jobs_bump(m, j);
    pthread_mutex_unlock(&m->mu);
    if (k > 0 && publish(m, j, t, &err)) rc = PG_EIO;
    int64_t ran = 0, reserved = base;
    long step = k, last_saved = last_ck;
    int outcome = ST_SUCCEEDED;
    double t0 = mono();
    const char *why = NULL;
    while (!rc) {
        if (should_stop(m, j, &cancel)) {
            outcome = -1;
            break;
        }
        if (cancel) {
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
            tries = 0;
            do rc = pg_db_job_reserve_steps(m->db, j->id, base + ran + chunk, &err);
            while (db_retry(m, rc, &tries));
            if (rc) break;
            reserved = base + ran + chunk;
        }
        pg_step_report rep;
        rc = mt->step(t, &rep, &err);
        if (rc) break;
        ran++;
        step = rep.step;
        double el = mono() - t0;
        pthread_mutex_lock(&m->mu);
        j->step = step;
        j->loss = rep.loss;
        j->eps_spent = rep.epsilon_spent;
        j->sps = el > 0 ? (double)ran / el : NAN;
        j->eta = j->sps > 0 ? (double)(j->total - step) / j->sps : NAN;
        hist_add(j, step, rep.loss, rep.epsilon_spent);
        m->steps_done++;
        pg_jobs_bump(m, j);
        pthread_mutex_unlock(&m->mu);
        if (step % every == 0 || rep.done) {
            rc = checkpoint(m, j, t, step, &err);
            if (!rc) rc = publish(m, j, t, &err);
            if (rc) break;
            last_saved = step;
        }
        if (rep.done) break;
    }
    if (!rc && step > 0 && step != last_saved) { /* cancelled, stopped or budget-capped */
        rc = checkpoint(m, j, t, step, &err);
        if (!rc) rc = publish(m, j, t, &err);
    }
    /* A clean shutdown knows exactly how many steps ran: give back the
     * unused part of the reserved chunk so the resumed run loses nothing. */
    if (!rc && outcome < 0 && charges && base + ran < reserved &&
        pg_db_job_reserve_steps(m->db, j->id, base + ran, &err) == PG_OK) {
        pthread_mutex_lock(&m->mu);
        j->steps_reserved = base + ran;
        pthread_mutex_unlock(&m->mu);
    }
    mt->destroy(t);
    pg_dataset_free(&ds);
    if (rc)
        finish(m, j, ST_FAILED, err.msg);
    else if (outcome >= 0)
        finish(m, j, outcome, why);
    /* outcome -1: shutdown; the job stays running and resumes next start. */
}

static void *worker(void *arg)
{
    pg_jobs *m = arg;
    pg_threads_set(m->cfg->threads_per_job);
    pthread_mutex_lock(&m->mu);
    for (;;) {
        while (!m->stopping && !m->qhead) pthread_cond_wait(&m->work, &m->mu);
        if (m->stopping) break;
        job *j = m->qhead;
        pg_jobs_unqueue(m, j);
        if (j->status == ST_QUEUED) j->started_at = pg_jobs_now();
        j->status = ST_RUNNING;
        snprintf(j->node, sizeof j->node, "%s", m->node);
        pg_jobs_bump(m, j);
        pthread_mutex_unlock(&m->mu);
        run(m, j);
        pthread_mutex_lock(&m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

int pg_jobs_start(pg_jobs *m, pg_error *err)
{
    m->threads = calloc((size_t)m->cfg->workers, sizeof *m->threads);
    if (!m->threads) return pg_error_set(err, PG_ENOMEM, "out of memory starting workers");
    for (int i = 0; i < m->cfg->workers; i++) {
        if (pthread_create(&m->threads[i], NULL, worker, m))
            return pg_error_set(err, PG_EIO, "cannot start a worker thread");
        m->nthreads++;
    }
    return PG_OK;
}
