/* service/jobs/jobs_sync.c - any replica answers any read: jobs this process does
 * not drive are loaded from, and kept in step with, their row and history
 * document (contract in jobs_internal.h, "any replica answers any read"). */
#include "service/jobs/jobs.h"
#include "service/jobs/jobs_internal.h"
#include "service/sha256.h"
#include "service/snapcache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t pg_jobs_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int pg_jobs_driven_here(const job *j)
{
    /* Its lease is held here and one of our workers runs it (jobs_run.c):
     * memory is ahead of the row. A queued job is anyone's to claim, so its
     * copy follows the row like any other. */
    return !j->deleted && j->owned;
}

struct pg_snapcache *pg_jobs_snapcache(pg_jobs *m)
{
    pthread_mutex_lock(&m->mu);
    if (!m->snaps) {
        size_t mb = m->cfg->snapshot_cache_mb > 0 ? (size_t)m->cfg->snapshot_cache_mb : 0;
        if (pg_snapcache_create(mb << 20, &m->snaps, NULL)) m->snaps = NULL;
    }
    struct pg_snapcache *c = m->snaps;
    pthread_mutex_unlock(&m->mu);
    return c;
}

/* What a copy is compared by: every row field a view shows, and the
 * document. Strings are length-prefixed so no two states hash alike by
 * concatenation. */
static void put_str(pg_sha256 *h, const char *s)
{
    uint64_t n = s ? strlen(s) : UINT64_MAX;
    pg_sha256_update(h, &n, sizeof n);
    if (s) pg_sha256_update(h, s, strlen(s));
}

static void signature(const pg_job_row *r, const char *doc, unsigned char out[32])
{
    pg_sha256 h;
    pg_sha256_init(&h);
    put_str(&h, r->status);
    put_str(&h, r->error);
    put_str(&h, r->owner);
    int64_t v[4] = {r->step, r->steps_reserved, r->started_at, r->finished_at};
    pg_sha256_update(&h, v, sizeof v);
    put_str(&h, doc);
    pg_sha256_final(&h, out);
}

/* The copy becomes the stored state (mu held). ck: the checkpoint list read
 * with it (moved in), or NULL to keep the one held. */
static void apply(pg_jobs *m, job *j, const pg_job_row *r, const char *doc, pg_ckpt_row *ck,
                  size_t nck, const unsigned char sig[32])
{
    j->status = pg_jobs_status_of(r->status);
    j->started_at = r->started_at;
    j->finished_at = r->finished_at;
    j->steps_reserved = r->steps_reserved;
    free(j->error);
    j->error = r->error ? strdup(r->error) : NULL;
    snprintf(j->node, sizeof j->node, "%s", r->owner);
    json_decref(j->warnings);
    j->warnings = NULL;
    json_decref(j->twarn); /* the stored document says which, if any */
    j->twarn = NULL;
    j->step = (long)r->step;
    j->loss = j->eps_spent = j->sps = NAN;
    j->nhist = 0;
    if (doc && pg_jobs_hist_apply(j, doc))
        fprintf(stderr, "privgend: the stored history of %s is unreadable\n", j->id);
    if (pg_jobs_finished(j->status) && !j->warnings) j->warnings = pg_jobs_warnings_json(j, 0);
    /* The owner's own estimate is not stored; this one reads the same. */
    j->eta = j->status == ST_RUNNING && j->sps > 0 ? (double)(j->total - j->step) / j->sps : NAN;
    if (ck) {
        free(j->ckpts);
        j->ckpts = ck;
        j->nckpts = j->ckcap = nck;
    }
    j->followed = 1;
    memcpy(j->sig, sig, sizeof j->sig);
    pg_jobs_publish_change(m, j);
}

int pg_jobs_sync_refresh(pg_jobs *m, job *j, int force, pg_error *err)
{
    pthread_mutex_lock(&m->mu);
    int64_t now = pg_jobs_mono_ms();
    if (j->deleted || pg_jobs_driven_here(j) || j->syncing ||
        (!force && j->synced_ms && now - j->synced_ms < PG_JOBS_SYNC_MS)) {
        pthread_mutex_unlock(&m->mu);
        return PG_OK;
    }
    j->syncing = 1;
    int had = j->followed;
    unsigned char old[32];
    memcpy(old, j->sig, sizeof old);
    pthread_mutex_unlock(&m->mu);

    pg_job_row *row = NULL;
    char *doc = NULL;
    int found = 0, changed = 0;
    pg_ckpt_row *ck = NULL;
    size_t nck = 0;
    unsigned char sig[32];
    int rc = pg_db_job_get(m->db, NULL, j->id, &row, &doc, &found, err);
    if (!rc && found) {
        signature(row, doc, sig);
        changed = !had || memcmp(sig, old, sizeof sig);
        if (changed) rc = pg_db_ckpt_list(m->db, j->id, &ck, &nck, err);
    }

    pthread_mutex_lock(&m->mu);
    j->syncing = 0;
    j->synced_ms = pg_jobs_mono_ms();
    if (!rc && !pg_jobs_driven_here(j) && !j->deleted) {
        if (!found) {
            if (pg_jobs_unlist_deleted(m, j)) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        } else if (changed) {
            apply(m, j, row, doc, ck, nck, sig);
            ck = NULL;
        }
    }
    pthread_mutex_unlock(&m->mu);
    free(ck);
    free(doc);
    pg_job_rows_free(row, row ? 1 : 0);
    return rc;
}

/* Loads a job that is not in the table (tenant NULL: any). */
static int load(pg_jobs *m, const char *tenant, const char *id, job **out, pg_error *err)
{
    *out = NULL;
    pg_job_row *row;
    char *doc;
    int found;
    int rc = pg_db_job_get(m->db, tenant, id, &row, &doc, &found, err);
    if (rc || !found) return rc;
    if (tenant && strcmp(row->tenant, tenant)) { /* the read filtered already: defence only */
        pg_job_rows_free(row, 1);
        free(doc);
        return PG_OK;
    }
    job *nj = pg_jobs_job_from_row(m, row); /* also reads the checkpoint list */
    unsigned char sig[32];
    signature(row, doc, sig);
    pthread_mutex_lock(&m->mu);
    job *j = pg_jobs_find(m, NULL, id); /* another thread may have loaded it meanwhile */
    if (!j && nj) {
        if (pg_jobs_table_add(m, nj)) {
            rc = pg_error_set(err, PG_ENOMEM, "out of memory loading a job");
        } else {
            j = nj;
            nj = NULL;
            apply(m, j, row, doc, NULL, 0, sig);
            j->synced_ms = pg_jobs_mono_ms();
        }
    } else if (!j) {
        rc = pg_error_set(err, PG_ENOMEM, "out of memory loading a job");
    }
    pthread_mutex_unlock(&m->mu);
    pg_jobs_job_free(nj);
    pg_job_rows_free(row, 1);
    free(doc);
    *out = rc ? NULL : j;
    return rc;
}

int pg_jobs_sync_lookup(pg_jobs *m, const char *tenant, const char *id, job **out, pg_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&m->mu);
    /* The tenant is part of the key before anything else: another tenant's
     * job misses here exactly like an unknown id, and both then make the
     * same storage read (filtered by tenant, no row either way), so neither
     * the time nor the work of the answer tells "not yours" from "does not
     * exist". */
    job *j = pg_jobs_find(m, tenant, id);
    if (j)
        m->lookups_memory++;
    else
        m->lookups_storage++;
    pthread_mutex_unlock(&m->mu);
    if (!j) {
        int rc = load(m, tenant, id, &j, err);
        if (rc || !j) return rc;
    } else {
        pg_error e = {0};
        (void)pg_jobs_sync_refresh(m, j, 0, &e); /* on failure the copy is served as it is */
    }
    pthread_mutex_lock(&m->mu);
    if (j->deleted || (tenant && strcmp(j->tenant, tenant))) j = NULL;
    pthread_mutex_unlock(&m->mu);
    *out = j;
    return PG_OK;
}

int pg_jobs_sync_listed(pg_jobs *m, const pg_job_row *row, job **out, pg_error *err)
{
    pthread_mutex_lock(&m->mu);
    job *j = pg_jobs_find(m, NULL, row->id);
    /* A finished job's row and document never change again: its listed
     * row proves the copy is current (and the job not deleted). */
    if (j && j->followed && !j->syncing && pg_jobs_finished(j->status) &&
        j->status == pg_jobs_status_of(row->status)) {
        j->synced_ms = pg_jobs_mono_ms();
        *out = j->deleted ? NULL : j;
        pthread_mutex_unlock(&m->mu);
        return PG_OK;
    }
    pthread_mutex_unlock(&m->mu);
    return pg_jobs_sync_lookup(m, row->tenant, row->id, out, err);
}
