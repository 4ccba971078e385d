/* service/jobs/jobs.c - the job table, recovery at start, and the queries. */
#include "service/jobs/jobdesc.h"
#include "service/jobs/jobs.h"
#include "service/jobs/jobs_internal.h"
#include "service/log.h"
#include "service/snapcache.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t pg_jobs_now(void)
{
    return (int64_t)time(NULL);
}

static int status_of(const char *s)
{
    for (int i = 0; i < ST_COUNT; i++)
        if (!strcmp(s, pg_jobs_status[i])) return i;
    return ST_FAILED;
}

int pg_jobs_status_of(const char *s)
{
    return status_of(s);
}

int pg_jobs_finished(int st)
{
    return st == ST_SUCCEEDED || st == ST_FAILED || st == ST_CANCELLED;
}

void pg_jobs_job_free(job *j)
{
    if (!j) return;
    json_decref(j->spec);
    json_decref(j->privacy);
    json_decref(j->warnings);
    json_decref(j->twarn);
    free(j->error);
    free(j->ckpts);
    if (j->snap) pg_snapshot_release(j->snap);
    pg_jobdesc_release(&j->desc);
    pg_jobdesc_release(&j->public_desc);
    free(j);
}

int pg_jobs_table_add(pg_jobs *m, job *j)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 32;
        job **a = realloc(m->all, cap * sizeof *a);
        if (!a) return -1;
        m->all = a;
        m->cap = cap;
    }
    m->all[m->n++] = j;
    return 0;
}

static job *find(pg_jobs *m, const char *tenant, const char *id)
{
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->all[i]->id, id) && (!tenant || !strcmp(m->all[i]->tenant, tenant)))
            return m->all[i];
    return NULL;
}

job *pg_jobs_find(pg_jobs *m, const char *tenant, const char *id)
{
    return find(m, tenant, id);
}

job *pg_jobs_by_id(pg_jobs *m, const char *id)
{
    return find(m, NULL, id);
}

void pg_jobs_wake_worker(pg_jobs *m)
{
    m->kicks++;
    pthread_cond_signal(&m->work);
}

void pg_jobs_publish_change(pg_jobs *m, job *j)
{
    j->version++;
    pthread_cond_broadcast(&m->update);
}

pg_job_data pg_jobs_data(const job *j, const struct pg_dataset *rows,
                         const struct pg_dataset *public_rows)
{
    pg_job_data in = {.desc = &j->desc, .rows = rows};
    if (j->public_dataset_id[0] && j->public_desc.d) {
        in.public_desc = &j->public_desc;
        in.public_rows = public_rows;
    }
    return in;
}

/* Reads and removes the sample geometry stored with the spec at submission
 * (jobs_submit.c); 0 when absent or malformed (jobs stored before it). */
static int geometry_from_spec(json_t *spec, pg_data_desc *out)
{
    json_t *g = json_object_get(spec, PG_JOBS_GEOMETRY_KEY);
    memset(out, 0, sizeof *out);
    json_t *shape = json_object_get(g, "shape"), *range = json_object_get(g, "range");
    size_t ndim = json_array_size(shape), d = 1;
    int ok = g && ndim >= 1 && ndim <= 3 && json_array_size(range) == 2 &&
             json_is_number(json_array_get(range, 0)) && json_is_number(json_array_get(range, 1)) &&
             json_is_integer(json_object_get(g, "num_classes"));
    for (size_t i = 0; ok && i < ndim; i++) {
        json_int_t v = json_integer_value(json_array_get(shape, i));
        ok = v >= 1 && v <= (1 << 24);
        out->shape[i] = (size_t)v;
        d *= (size_t)v;
    }
    if (ok) {
        out->ndim = (int)ndim;
        out->d = d;
        out->lo = (float)json_number_value(json_array_get(range, 0));
        out->hi = (float)json_number_value(json_array_get(range, 1));
        out->num_classes = (int)json_integer_value(json_object_get(g, "num_classes"));
        out->model = (int)json_integer_value(json_object_get(g, "model")); /* 0 if absent */
    }
    json_object_del(spec, PG_JOBS_GEOMETRY_KEY);
    return ok;
}

/* Rebuilds a stored job: desc from the dataset as it was (data_n rows) and
 * the plan (plan() is pure, so it is the one charged at submission). */
job *pg_jobs_job_from_row(pg_jobs *m, const pg_job_row *r)
{
    job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->seq = r->seq;
    snprintf(j->id, sizeof j->id, "%s", r->id);
    snprintf(j->tenant, sizeof j->tenant, "%s", r->tenant);
    snprintf(j->dataset_id, sizeof j->dataset_id, "%s", r->dataset_id);
    snprintf(j->method_name, sizeof j->method_name, "%s", r->method);
    j->status = status_of(r->status);
    j->created_at = r->created_at;
    j->started_at = r->started_at;
    j->finished_at = r->finished_at;
    j->steps_reserved = r->steps_reserved;
    snprintf(j->node, sizeof j->node, "%s", r->owner);
    j->step = (long)r->step;
    j->loss = j->sps = j->eta = NAN;
    j->error = r->error ? strdup(r->error) : NULL;
    j->spec = r->spec ? json_loads(r->spec, 0, NULL) : NULL;
    if (!j->spec) j->spec = json_object();
    pg_data_desc stored;
    int has_geometry = geometry_from_spec(j->spec, &stored);
    j->method = pg_method_find(r->method);
    pg_db_dataset ds;
    int found = 0;
    pg_error err = {0};
    const char *why = NULL;
    if (!j->method)
        why = "the job's method is not part of this build";
    else if (pg_db_dataset_get(m->db, r->tenant, r->dataset_id, &ds, &found, &err) || !found) {
        why = "the job's dataset is gone";
        if (has_geometry) j->desc = stored; /* what sampling needs: shape, range, classes */
    } else {
        if (pg_jobdesc_from_meta(ds.meta, r->data_n, &j->desc, &err))
            why = "the job's dataset metadata cannot be rebuilt";
        pg_db_dataset_free(&ds);
    }
    if (pg_jobdesc_table_from_spec(j->spec, &j->desc, &err) && !why)
        why = "the job's table map cannot be rebuilt";
    if (!why && r->public_dataset_id[0]) {
        /* A finished job may outlive its public dataset (deletion is refused
         * only while a job is queued or running); plan() does not need it. */
        snprintf(j->public_dataset_id, sizeof j->public_dataset_id, "%s", r->public_dataset_id);
        if (pg_db_dataset_get(m->db, r->tenant, r->public_dataset_id, &ds, &found, &err) ||
            !found) {
            if (!pg_jobs_finished(j->status)) why = "the job's public dataset is gone";
        } else {
            if (pg_jobdesc_from_meta(ds.meta, r->public_n, &j->public_desc, &err))
                why = "the job's public dataset metadata cannot be rebuilt";
            pg_db_dataset_free(&ds);
        }
    }
    if (!why) {
        pg_job_data in = pg_jobs_data(j, NULL, NULL);
        if (j->method->plan(j->spec, &in, &j->plan, &err)) why = "the job's plan cannot be rebuilt";
    }
    j->total = j->plan.steps;
    j->privacy = pg_jobs_plan_json(&j->plan, &j->desc); /* NULL: pg_jobs_privacy_json */
    char *doc;
    if (!pg_db_job_history_get(m->db, j->id, &doc, &found, &err) && found) {
        if (pg_jobs_hist_apply(j, doc))
            pg_log_job("warn", m->node, j->id, "the job's stored history is unreadable");
        free(doc);
    }
    if (pg_jobs_finished(j->status) && !j->warnings) /* stored before history was */
        j->warnings = pg_jobs_warnings_json(j, 0);
    pg_ckpt_row *ck;
    size_t nck;
    if (!pg_db_ckpt_list(m->db, j->id, &ck, &nck, &err)) {
        j->ckpts = ck;
        j->nckpts = j->ckcap = nck;
    }
    /* Nothing is written here (the job may run on another replica): the
     * replica that claims it fails it with a fenced write (jobs_run.c). */
    if (why && !pg_jobs_finished(j->status)) j->unrunnable = why;
    return j;
}

int pg_jobs_create(const pg_svc_config *cfg, pg_db *db, pg_jobs **out, pg_error *err)
{
    pg_jobs *m = calloc(1, sizeof *m);
    if (!m) return pg_error_set(err, PG_ENOMEM, "out of memory");
    m->cfg = cfg;
    m->db = db;
    m->joined = 1; /* no threads yet */
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->work, NULL);
    pthread_cond_init(&m->update, NULL);
    pthread_cond_init(&m->hb_wake, NULL);
    pg_job_row *rows;
    size_t n;
    int64_t released = 0;
    int rc = pg_svc_config_node_id(cfg, m->node, sizeof m->node, err);
    /* Leases still held under this node id belong to a process of ours that
     * died: its jobs are claimable at once instead of when they run out. */
    if (!rc) rc = pg_db_job_release_node(db, m->node, pg_jobs_now(), &released, err);
    if (!rc) rc = pg_db_job_load_all(db, &rows, &n, err);
    if (rc) {
        pg_jobs_destroy(m);
        return rc;
    }
    m->released_at_start = (uint64_t)released;
    if (released)
        pg_log_job("info", m->node, NULL,
                   "released %lld lease(s) this node held before it restarted: their jobs "
                   "resume from their checkpoints",
                   (long long)released);
    for (size_t i = 0; i < n && !rc; i++) {
        job *j = pg_jobs_job_from_row(m, &rows[i]);
        if (!j || pg_jobs_table_add(m, j)) {
            pg_jobs_job_free(j);
            rc = pg_error_set(err, PG_ENOMEM, "out of memory loading jobs");
        }
    }
    pg_job_rows_free(rows, n);
    /* Queued and interrupted jobs are not queued here: the workers claim
     * them from the database, oldest first (jobs_run.c). */
    if (rc) {
        pg_jobs_destroy(m);
        return rc;
    }
    *out = m;
    return PG_OK;
}

void pg_jobs_quiesce(pg_jobs *m)
{
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    m->closing = 1;
    pthread_cond_broadcast(&m->update);
    pthread_mutex_unlock(&m->mu);
}

void pg_jobs_destroy(pg_jobs *m)
{
    if (!m) return;
    pg_jobs_drain(m); /* no-op after a drain or an abandon */
    pthread_mutex_lock(&m->mu);
    m->stopping = 1;
    pthread_cond_broadcast(&m->work);
    pthread_cond_broadcast(&m->update);
    pthread_mutex_unlock(&m->mu);
    free(m->threads);
    for (size_t i = 0; i < m->n; i++) pg_jobs_job_free(m->all[i]);
    free(m->all);
    for (size_t i = 0; i < m->ngone; i++) pg_jobs_job_free(m->gone[i]);
    free(m->gone);
    pg_snapcache_destroy(m->snaps);
    pthread_cond_destroy(&m->work);
    pthread_cond_destroy(&m->update);
    pthread_cond_destroy(&m->hb_wake);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

int pg_jobs_get(pg_jobs *m, const char *tenant, const char *id, json_t **out, uint64_t *version,
                int *found, pg_error *err)
{
    *out = NULL;
    job *j;
    int rc = pg_jobs_sync_lookup(m, tenant, id, &j, err);
    *found = j != NULL;
    if (rc || !j) return rc;
    pthread_mutex_lock(&m->mu);
    *out = pg_jobs_job_json(j);
    if (version) *version = j->version;
    pthread_mutex_unlock(&m->mu);
    if (!*out) return pg_error_set(err, PG_ENOMEM, "out of memory");
    return PG_OK;
}

static struct timespec ms_from_now(int64_t ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += (time_t)(ms / 1000);
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static int before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* A job driven here wakes its waiters itself (pg_jobs_publish_change); a followed one
 * is re-read from storage about every PG_JOBS_SYNC_MS while someone waits
 * (one read per job, however many streams follow it). */
int pg_jobs_wait(pg_jobs *m, const char *tenant, const char *id, uint64_t *version, int timeout_ms,
                 json_t **out, int *final, int *found, pg_error *err)
{
    struct timespec dl = ms_from_now(timeout_ms > 0 ? timeout_ms : 0);
    *out = NULL;
    *final = 0;
    job *j;
    int rc = pg_jobs_sync_lookup(m, tenant, id, &j, err);
    *found = j != NULL;
    if (rc || !j) return rc;
    pthread_mutex_lock(&m->mu);
    while (j->version == *version && !j->deleted && !m->stopping && !m->closing) {
        if (pg_jobs_driven_here(j) || pg_jobs_finished(j->status)) {
            /* finished: it changes only by deletion, seen by the next lookup */
            if (pthread_cond_timedwait(&m->update, &m->mu, &dl)) break;
            continue;
        }
        int64_t due = j->synced_ms + PG_JOBS_SYNC_MS - pg_jobs_mono_ms();
        if (due <= 0 && !j->syncing) {
            pthread_mutex_unlock(&m->mu);
            pg_error e = {0};
            (void)pg_jobs_sync_refresh(m, j, 0, &e); /* a failed read is retried next time */
            pthread_mutex_lock(&m->mu);
            continue;
        }
        struct timespec at = ms_from_now(due > 0 ? due : 50);
        if (before(&dl, &at)) at = dl;
        int w = pthread_cond_timedwait(&m->update, &m->mu, &at);
        struct timespec now = ms_from_now(0);
        if (w && !before(&now, &dl)) break;
    }
    *final = pg_jobs_finished(j->status) || j->deleted || m->stopping || m->closing;
    if (j->version != *version) {
        *version = j->version;
        *out = pg_jobs_job_json(j);
    }
    pthread_mutex_unlock(&m->mu);
    return PG_OK;
}

/* Pages come from storage, so jobs submitted on other replicas are listed;
 * each listed job is shown from the table (loaded or brought up to date
 * first). A job whose copy no longer matches the status filter when it is
 * shown (it moved on meanwhile) is left out of the page. */
int pg_jobs_list(pg_jobs *m, const char *tenant, const char *status, const char *dataset_id,
                 int64_t after, size_t limit, json_t **items, int64_t *next, pg_error *err)
{
    *items = NULL;
    *next = 0;
    if (!limit) {
        *items = json_array();
        return *items ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    pg_job_row *rows;
    size_t n;
    int rc = pg_db_job_list(m->db, tenant, status, dataset_id, after,
                            limit < SIZE_MAX ? limit + 1 : limit, &rows, &n, err);
    if (rc) return rc;
    size_t shown = n > limit ? limit : n;
    job **js = shown ? calloc(shown, sizeof *js) : NULL;
    if (shown && !js) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < shown; i++) rc = pg_jobs_sync_listed(m, &rows[i], &js[i], err);
    json_t *a = rc ? NULL : json_array();
    if (!rc && !a) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    if (!rc) {
        pthread_mutex_lock(&m->mu);
        for (size_t i = 0; i < shown; i++) {
            job *j = js[i];
            if (!j || j->deleted || (status && strcmp(pg_jobs_status[j->status], status))) continue;
            /* a page missing a job is no answer: out of memory (503) */
            if (json_array_append_new(a, pg_jobs_job_json(j))) {
                rc = pg_error_set(err, PG_ENOMEM, "out of memory listing jobs");
                break;
            }
        }
        pthread_mutex_unlock(&m->mu);
    }
    if (!rc) {
        if (n > limit) *next = rows[limit - 1].seq;
        *items = a;
    } else {
        json_decref(a);
    }
    free(js);
    pg_job_rows_free(rows, n);
    return rc;
}

int pg_jobs_cancel(pg_jobs *m, const char *tenant, const char *id, json_t **out, int *found,
                   int *conflict, pg_error *err)
{
    *out = NULL;
    *conflict = 0;
    int rc = PG_OK, done = 0;
    job *j;
    /* The job may have been submitted through, or changed on, another
     * replica: bring this replica's copy up to date first (jobs_sync.c). */
    rc = pg_jobs_sync_lookup(m, tenant, id, &j, err);
    *found = j != NULL;
    if (rc || !j) return rc;
    pthread_mutex_lock(&m->mu);
    j = find(m, tenant, id);
    *found = j != NULL;
    if (j && pg_jobs_finished(j->status)) {
        *conflict = 1;
    } else if (j && j->status == ST_QUEUED) {
        rc = pg_db_job_cancel_queued(m->db, j->id, &done, err);
        if (!rc && done) {
            j->status = ST_CANCELLED;
            j->finished_at = pg_jobs_now();
            pg_jobs_publish_change(m, j);
        }
    }
    /* Running, here or on any replica (this view may still say queued: a
     * replica claimed it since): the row asks its owner to stop, which it
     * does within about a second (jobs_run.c). Never refunded. */
    if (j && !rc && !*conflict && !done) {
        rc = pg_db_job_cancel_running(m->db, j->id, pg_jobs_now(), &done, err);
        if (!rc && done) {
            j->cancel = 1; /* the worker stops at the next step boundary */
            if (j->status == ST_QUEUED) j->status = ST_RUNNING;
            pg_jobs_publish_change(m, j);
        } else if (!rc) {
            *conflict = 1; /* it ended meanwhile (this view may not show it yet) */
        }
    }
    if (j && !rc) *out = pg_jobs_job_json(j);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* Moves j from the table to the list of deleted jobs (mu held); -1 when out of memory
 * (j stays listed). Its snapshot is released now (readers hold their own
 * reference); the struct lives on until destroy for threads holding it. */
static int unlist_deleted(pg_jobs *m, job *j)
{
    if (m->ngone == m->gonecap) {
        size_t cap = m->gonecap ? 2 * m->gonecap : 16;
        job **a = realloc(m->gone, cap * sizeof *a);
        if (!a) return -1;
        m->gone = a;
        m->gonecap = cap;
    }
    size_t i = 0;
    while (i < m->n && m->all[i] != j) i++;
    if (i == m->n) return 0;
    memmove(m->all + i, m->all + i + 1, (m->n - i - 1) * sizeof *m->all);
    m->n--;
    m->gone[m->ngone++] = j;
    j->deleted = 1;
    if (m->snaps) pg_snapcache_evict(m->snaps, j->id);
    if (j->snap) pg_snapshot_release(j->snap);
    j->snap = NULL;
    free(j->ckpts);
    j->ckpts = NULL;
    j->nckpts = j->ckcap = 0;
    pg_jobs_publish_change(m, j);
    return 0;
}

int pg_jobs_unlist_deleted(pg_jobs *m, job *j)
{
    return unlist_deleted(m, j);
}

int pg_jobs_delete(pg_jobs *m, const char *tenant, const char *id, int *found, int *conflict,
                   pg_error *err)
{
    *conflict = 0;
    job *j;
    int rc = pg_jobs_sync_lookup(m, tenant, id, &j, err); /* as in cancel */
    *found = j != NULL;
    if (rc || !j) return rc;
    pthread_mutex_lock(&m->mu);
    j = find(m, tenant, id);
    *found = j != NULL;
    if (j && j->status == ST_QUEUED) { /* never read the data: refunded, as by cancel */
        int done;
        rc = pg_db_job_cancel_queued(m->db, j->id, &done, err);
        if (!rc && done) {
            j->status = ST_CANCELLED;
            j->finished_at = pg_jobs_now();
            pg_jobs_publish_change(m, j);
        }
    }
    if (j && !rc && !pg_jobs_finished(j->status)) *conflict = 1;
    if (j && !rc && !*conflict) {
        int there, busy;
        rc = pg_db_job_delete(m->db, j->id, &there, &busy, err);
        if (!rc && busy) *conflict = 1;
        if (!rc && !busy && unlist_deleted(m, j))
            rc = pg_error_set(err, PG_ENOMEM, "out of memory deleting a job");
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}

typedef struct ckload {
    pg_jobs *m;
    const char *id;
    long step;
    const pg_method *mt;
    int missing; /* storage no longer has the checkpoint */
} ckload;

/* Rebuilds a model from one stored checkpoint (the snapshot cache's
 * loader; also used uncached for a named checkpoint). */
static int load_ckpt(void *ctx, pg_snapshot **snap, size_t *bytes, pg_error *err)
{
    ckload *c = ctx;
    unsigned char *b;
    size_t len;
    int there = 0;
    int rc = pg_db_ckpt_get(c->m->db, c->id, c->step, CKPT_MAX_BYTES, &b, &len, &there, err);
    if (rc) return rc;
    if (!there) {
        c->missing = 1;
        return pg_error_set(err, PG_EIO, "checkpoint %ld of %s is missing from storage", c->step,
                            c->id);
    }
    rc = c->mt->load_snapshot(b, len, snap, err);
    free(b);
    *bytes = len;
    return rc;
}

/* Snapshots: the one a worker here published while it is current (it is
 * the latest checkpoint's model), else the latest checkpoint's, rebuilt
 * through the snapshot cache (a job trained elsewhere, or before this
 * process started). Both come from the same stored checkpoint bytes, so a
 * seed draws the same samples on every replica. */
int pg_jobs_snapshot(pg_jobs *m, const char *tenant, const char *id, long checkpoint,
                     pg_snapshot **snap, pg_job_geometry *geo, int *found, pg_error *err)
{
    *snap = NULL;
    for (int attempt = 0;; attempt++) {
        job *j;
        int rc = pg_jobs_sync_lookup(m, tenant, id, &j, err);
        *found = j != NULL;
        if (rc || !j) return rc;
        pthread_mutex_lock(&m->mu);
        geo->d = j->desc.d;
        geo->ndim = j->desc.ndim;
        memcpy(geo->shape, j->desc.shape, sizeof geo->shape);
        geo->lo = j->desc.lo;
        geo->hi = j->desc.hi;
        geo->num_classes = j->desc.num_classes;
        geo->table = j->desc.table;
        geo->ended = j->status >= ST_SUCCEEDED;
        const pg_method *mt = j->method;
        long latest = j->nckpts ? (long)j->ckpts[j->nckpts - 1].step : -1, want = checkpoint;
        if (!geo->d) { /* finished before history kept its geometry, and its dataset is gone */
            pthread_mutex_unlock(&m->mu);
            return pg_error_set(err, PG_ESTATE,
                                "the job's dataset was deleted and this job finished before "
                                "privgend stored job geometry: its samples cannot be shaped any "
                                "more");
        }
        if (checkpoint >= 0) {
            int have = 0;
            for (size_t i = 0; i < j->nckpts; i++) have |= j->ckpts[i].step == checkpoint;
            if (!have) *found = 0;
        } else if (j->snap &&
                   (pg_jobs_driven_here(j) || pg_snapshot_step(j->snap) == latest || latest < 0)) {
            pg_snapshot_retain(j->snap);
            *snap = j->snap;
        } else {
            want = latest;
        }
        pthread_mutex_unlock(&m->mu);
        if (!*found || *snap) return PG_OK;
        if (want < 0 || !mt)
            return pg_error_set(err, PG_ESTATE, "the job has no model to sample yet");
        ckload c = {.m = m, .id = j->id, .step = want, .mt = mt};
        size_t bytes;
        if (checkpoint >= 0) {
            rc = load_ckpt(&c, snap, &bytes, err);
            if (c.missing) { /* retention deleted it since it was listed */
                *found = 0;
                return PG_OK;
            }
            return rc;
        }
        struct pg_snapcache *cache = pg_jobs_snapcache(m);
        rc = cache ? pg_snapcache_get(cache, j->id, want, load_ckpt, &c, snap, err)
                   : load_ckpt(&c, snap, &bytes, err);
        /* The owner moved on and retention removed the checkpoint this copy
         * listed: read the job again and take its new latest. */
        if (rc && c.missing && attempt == 0) {
            pg_error e = {0};
            if (pg_jobs_sync_refresh(m, j, 1, &e)) return rc;
            continue;
        }
        return rc;
    }
}

void pg_jobs_count_samples(pg_jobs *m, size_t n)
{
    pthread_mutex_lock(&m->mu);
    m->samples_served += n;
    pthread_mutex_unlock(&m->mu);
}

int pg_jobs_checkpoints(pg_jobs *m, const char *tenant, const char *id, json_t **out, int *found,
                        pg_error *err)
{
    *out = NULL;
    job *j;
    int rc = pg_jobs_sync_lookup(m, tenant, id, &j, err);
    *found = j != NULL;
    if (rc || !j) return rc;
    pthread_mutex_lock(&m->mu);
    *out = json_pack("{s:o}", "items", pg_jobs_ckpts_json(j));
    pthread_mutex_unlock(&m->mu);
    if (!*out) return pg_error_set(err, PG_ENOMEM, "out of memory");
    return PG_OK;
}

int pg_jobs_checkpoint_read(pg_jobs *m, const char *tenant, const char *id, long step,
                            unsigned char **bytes, size_t *len, int *found, pg_error *err)
{
    *bytes = NULL;
    *len = 0;
    *found = 0;
    job *j;
    int rc = pg_jobs_sync_lookup(m, tenant, id, &j, err);
    if (rc || !j) return rc;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < j->nckpts; i++) *found |= j->ckpts[i].step == step;
    pthread_mutex_unlock(&m->mu);
    if (!*found) return PG_OK;
    return pg_db_ckpt_get(m->db, id, step, CKPT_MAX_BYTES, bytes, len, found, err);
}

int pg_jobs_budget(pg_jobs *m, const char *tenant, const char *dataset_id, json_t **out, int *found,
                   pg_error *err)
{
    pg_db_dataset ds;
    *out = NULL;
    int rc = pg_db_dataset_get(m->db, tenant, dataset_id, &ds, found, err);
    if (rc || !*found) return rc;
    PG_JOBDESC_SCOPED pg_data_desc desc = {0};
    rc = pg_jobdesc_from_meta(ds.meta, ds.n, &desc, err);
    pg_db_dataset_free(&ds);
    if (rc) return rc;
    if (desc.model != PG_PRIVACY_CENTRAL)
        return pg_error_set(err, PG_ESTATE,
                            "only central datasets have a budget; training on %s data spends "
                            "nothing",
                            pg_jobs_model_name(desc.model));
    return pg_ledger_budget_json(m->db, dataset_id, desc.cap_epsilon, desc.cap_delta, out, err);
}

json_t *pg_jobs_algorithms(void)
{
    json_t *items = json_array();
    for (const pg_method *const *p = pg_methods_all(); *p; p++) {
        const pg_method *mt = *p;
        json_t *acc = json_array();
        if (mt->accepts & PG_PRIVACY_LOCAL) json_array_append_new(acc, json_string("local"));
        if (mt->accepts & PG_PRIVACY_CENTRAL) json_array_append_new(acc, json_string("central"));
        if (mt->accepts & PG_PRIVACY_PUBLIC) json_array_append_new(acc, json_string("public"));
        json_t *cat = mt->catalogue ? mt->catalogue() : NULL;
        json_array_append_new(items, json_pack("{s:s,s:s,s:o,s:o}", "name", mt->name, "summary",
                                               mt->summary ? mt->summary : "", "accepts", acc,
                                               "parameters", cat ? cat : json_array()));
    }
    return json_pack("{s:o}", "items", items);
}
