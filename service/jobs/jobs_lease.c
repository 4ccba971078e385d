/* service/jobs/jobs_lease.c - the lease side of the shared job queue: the
 * heartbeat thread that renews the leases of the jobs this replica runs,
 * what happens when one is lost, and the per-replica queue metrics. */
#include "service/jobs/jobs.h"
#include "service/jobs/jobs_internal.h"
#include "service/text.h"
#include "service/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double pg_jobs_wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void pg_jobs_mark_lease_lost(pg_jobs *m, job *j, const char *why)
{
    if (j->lost) return;
    j->lost = 1;
    m->lease_losses++;
    pg_log_job("warn", m->node, j->id,
               "lease lost (%s): the job stops at its next step without writing; "
               "another replica resumes it from its last checkpoint",
               why);
}

/* Upper bounds (seconds) of the claim latency buckets. */
static const double LAT_LE[PG_JOBS_LAT_BUCKETS] = {0.05, 0.1, 0.25, 0.5, 1, 2, 5, 30, 300};

void pg_jobs_count_claim(pg_jobs *m, job *j, const pg_job_row *r, int64_t now, const char *prev)
{
    m->claims++;
    /* A claim that starts the job (the claim stamps started_at = now, and
     * nothing ran yet) has a latency since submission; a claim of a job
     * that ran before (taken over, drained, released at a restart) is a
     * resume. */
    if (r->started_at != now || r->step > 0 || r->steps_reserved > 0) {
        m->resumes++;
        pg_log_job("info", m->node, j->id,
                   "resumed the job at step %lld, %lld steps reserved (last run by %s)",
                   (long long)r->step, (long long)r->steps_reserved,
                   prev[0] ? prev : "another replica");
        return;
    }
    /* Exact for a submission through this replica; else from the row's
     * created_at, which has whole seconds (up to 1 s more). */
    double lat = pg_jobs_wall() - (j->submitted_at > 0 ? j->submitted_at : (double)r->created_at);
    if (lat < 0) lat = 0;
    m->claim_lat_sum += lat;
    m->claim_lat_n++;
    for (int b = 0; b < PG_JOBS_LAT_BUCKETS; b++)
        if (lat <= LAT_LE[b]) {
            m->claim_lat_bucket[b]++;
            break;
        }
}

/* A job row held by another transaction (PG_LEASE_BUSY: usually this
 * replica's own checkpoint write of that job, held until it commits) is
 * retried this often, alone, until it is renewed or refused: healthy
 * holders commit within milliseconds, so a busy lease is renewed about as
 * soon as its row is free, never a whole heartbeat later. */
#define HB_BUSY_RETRY_MS 100

static void deadline_in(struct timespec *dl, long ms)
{
    clock_gettime(CLOCK_REALTIME, dl);
    dl->tv_sec += ms / 1000;
    dl->tv_nsec += (ms % 1000) * 1000000L;
    if (dl->tv_nsec >= 1000000000L) {
        dl->tv_sec++;
        dl->tv_nsec -= 1000000000L;
    }
}

/* Every --heartbeat-seconds one pass renews the leases of all the jobs this
 * replica runs (pg_db_job_renew: one transaction that waits on no row);
 * between passes, the ones it found busy are retried every
 * HB_BUSY_RETRY_MS. A busy job whose lease runs out before its row comes
 * free is logged: another replica may take it over (the claim ends a
 * holder stuck that long), and the fence then refuses this replica's next
 * write of it, which stops its worker. (mu held between passes.) */
static void *heartbeat(void *arg)
{
    pg_jobs *m = arg;
    char(*ids)[PG_ID_MAX] = NULL;
    int *state = NULL;
    size_t cap = 0, n = 0;
    int busy = 0; /* ids[0..n) are the jobs the last attempt found busy */
    struct timespec next_full;
    deadline_in(&next_full, 1000L * m->cfg->heartbeat_s);
    pthread_mutex_lock(&m->mu);
    while (!m->hb_stop && !m->dead) {
        struct timespec dl = next_full, soon;
        if (busy) {
            deadline_in(&soon, HB_BUSY_RETRY_MS);
            if (soon.tv_sec < dl.tv_sec || (soon.tv_sec == dl.tv_sec && soon.tv_nsec < dl.tv_nsec))
                dl = soon;
        }
        pthread_cond_timedwait(&m->hb_wake, &m->mu, &dl);
        if (m->hb_stop || m->dead) break;
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        int full = !busy || t.tv_sec > next_full.tv_sec ||
                   (t.tv_sec == next_full.tv_sec && t.tv_nsec >= next_full.tv_nsec);
        if (full) deadline_in(&next_full, 1000L * m->cfg->heartbeat_s);
        /* The jobs to renew now: all of them on a full pass, else the busy
         * ones still running here. */
        size_t k = 0;
        for (size_t i = 0; i < (full ? m->n : n); i++) {
            job *j = full ? m->all[i] : pg_jobs_by_id(m, ids[i]);
            if (!j || !j->owned || j->lost || j->ending) continue;
            if (k == cap) {
                size_t nc = cap ? 2 * cap : 16;
                void *p = realloc(ids, nc * sizeof *ids),
                     *q = p ? realloc(state, nc * sizeof *state) : NULL;
                if (p) ids = p;
                if (!q) break; /* the rest is renewed next round */
                state = q;
                cap = nc;
            }
            if (full)
                memcpy(ids[k], j->id, PG_ID_MAX);
            else if (k != i)
                memcpy(ids[k], ids[i], PG_ID_MAX);
            k++;
        }
        n = k;
        busy = 0;
        if (!n) continue;
        pthread_mutex_unlock(&m->mu);
        int64_t now = pg_jobs_now();
        pg_error e = {0};
        int rc = pg_db_job_renew(m->db, m->node, (const char(*)[PG_ID_MAX])ids, n, now,
                                 m->cfg->lease_s, state, &e);
        pthread_mutex_lock(&m->mu);
        /* An unreachable database is no verdict: the leases may still be
         * ours when it comes back, and the fence decides then. */
        if (rc) {
            for (size_t i = 0; i < n; i++)
                pg_log_job("warn", m->node, ids[i], "cannot renew the lease: %s", e.msg);
            continue; /* all of them again at the next pass */
        }
        size_t b = 0;
        for (size_t i = 0; i < n; i++) {
            job *j = pg_jobs_by_id(m, ids[i]);
            if (!j || !j->owned) continue;
            if (state[i] == PG_LEASE_RENEWED) {
                j->lease_until = now + m->cfg->lease_s;
                j->lease_ran_out = 0;
            } else if (state[i] == PG_LEASE_LOST) {
                /* A job its worker is ending or releasing refuses renewals
                 * legitimately; that worker's own fenced write decides. */
                if (!j->ending) pg_jobs_mark_lease_lost(m, j, "the heartbeat was refused");
            } else {
                if (!j->lease_ran_out && j->lease_until && now >= j->lease_until) {
                    j->lease_ran_out = 1;
                    pg_log_job("warn", m->node, j->id,
                               "the lease ran out while another transaction held the job's row "
                               "(a slow checkpoint write?): another replica may take the job "
                               "over, and then this one's next write is refused");
                }
                if (b != i) memcpy(ids[b], ids[i], PG_ID_MAX);
                b++;
            }
        }
        n = b;
        busy = b > 0;
    }
    pthread_mutex_unlock(&m->mu);
    free(ids);
    free(state);
    return NULL;
}

int pg_jobs_lease_start(pg_jobs *m, pg_error *err)
{
    m->hb_stop = 0;
    if (pthread_create(&m->hb, NULL, heartbeat, m))
        return pg_error_set(err, PG_EIO, "cannot start the heartbeat thread");
    m->hb_running = 1;
    return PG_OK;
}

void pg_jobs_lease_stop(pg_jobs *m)
{
    pthread_mutex_lock(&m->mu);
    int running = m->hb_running;
    m->hb_stop = 1;
    m->hb_running = 0;
    pthread_cond_broadcast(&m->hb_wake);
    pthread_mutex_unlock(&m->mu);
    if (running) pthread_join(m->hb, NULL);
}

char *pg_jobs_queue_metrics(pg_jobs *m)
{
    int64_t depth = -1;
    pg_db_job_queue_depth(m->db, &depth, NULL); /* -1: the database did not answer */
    pg_text b = {0};
    pthread_mutex_lock(&m->mu);
    const char *n = m->node;
    size_t held = 0;
    for (size_t i = 0; i < m->n; i++) held += m->all[i]->owned && !m->all[i]->lost;
    pg_text_printf(
        &b,
        "# HELP privgen_queue_depth Queued jobs in the shared queue (rows of every replica), "
        "as seen by this replica; -1 when the database did not answer.\n"
        "# TYPE privgen_queue_depth gauge\nprivgen_queue_depth{node=\"%s\"} %lld\n",
        n, (long long)depth);
    pg_text_printf(&b,
                   "# HELP privgen_leases_held Jobs this replica runs under a lease.\n"
                   "# TYPE privgen_leases_held gauge\nprivgen_leases_held{node=\"%s\"} %zu\n",
                   n, held);
    pg_text_printf(
        &b,
        "# HELP privgen_lease_losses_total Leases this replica lost (another replica took the "
        "job over; its worker stopped without writing).\n"
        "# TYPE privgen_lease_losses_total counter\nprivgen_lease_losses_total{node=\"%s\"} "
        "%llu\n",
        n, (unsigned long long)m->lease_losses);
    pg_text_printf(
        &b,
        "# HELP privgen_claims_total Jobs this replica claimed: start (queued) or resume "
        "(taken over, or released by a drain or a restart).\n"
        "# TYPE privgen_claims_total counter\n"
        "privgen_claims_total{node=\"%s\",kind=\"start\"} %llu\n"
        "privgen_claims_total{node=\"%s\",kind=\"resume\"} %llu\n",
        n, (unsigned long long)(m->claims - m->resumes), n, (unsigned long long)m->resumes);
    pg_text_printf(
        &b,
        "# HELP privgen_claim_latency_seconds From submission to the claim that starts the job.\n"
        "# TYPE privgen_claim_latency_seconds histogram\n");
    uint64_t cum = 0;
    for (int k = 0; k < PG_JOBS_LAT_BUCKETS; k++) {
        cum += m->claim_lat_bucket[k];
        pg_text_printf(&b, "privgen_claim_latency_seconds_bucket{node=\"%s\",le=\"%g\"} %llu\n", n,
                       LAT_LE[k], (unsigned long long)cum);
    }
    pg_text_printf(&b,
                   "privgen_claim_latency_seconds_bucket{node=\"%s\",le=\"+Inf\"} %llu\n"
                   "privgen_claim_latency_seconds_sum{node=\"%s\"} %.6f\n"
                   "privgen_claim_latency_seconds_count{node=\"%s\"} %llu\n",
                   n, (unsigned long long)m->claim_lat_n, n, m->claim_lat_sum, n,
                   (unsigned long long)m->claim_lat_n);
    pg_text_printf(
        &b,
        "# HELP privgen_leases_released_at_start_total Leases this node held when it started "
        "again (a crash), released so their jobs resume at once.\n"
        "# TYPE privgen_leases_released_at_start_total counter\n"
        "privgen_leases_released_at_start_total{node=\"%s\"} %llu\n",
        n, (unsigned long long)m->released_at_start);
    pthread_mutex_unlock(&m->mu);
    if (b.failed) { /* out of memory: no half-rendered text */
        free(b.p);
        return NULL;
    }
    return b.p;
}
