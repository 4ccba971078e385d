/* service/jobs/jobs_view.c - JSON views of jobs and plans, and /metrics text. */
#include "service/jobs/jobdesc.h"
#include "service/jobs/jobs.h"
#include "service/jobs/jobs_internal.h"
#include "service/text.h"
#include "service/snapcache.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const pg_jobs_status[ST_COUNT] = {"queued", "running", "succeeded", "failed",
                                              "cancelled"};

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

const char *pg_jobs_model_name(int model)
{
    return model == PG_PRIVACY_LOCAL ? "local" : model == PG_PRIVACY_CENTRAL ? "central" : "public";
}

json_t *pg_jobs_plan_json(const pg_privacy_plan *p, const pg_data_desc *d)
{
    json_t *o = json_pack("{s:b,s:o,s:o,s:o,s:o,s:I,s:b,s:s,s:s,s:s}", "charges", p->charges,
                          "epsilon", num(p->epsilon), "delta", num(p->delta), "noise_multiplier",
                          num(p->noise_multiplier), "sampling_rate", num(p->sampling_rate), "steps",
                          (json_int_t)p->steps, "approximate", p->approximate, "mechanism",
                          p->mechanism, "neighbouring", p->neighbouring, "accountant",
                          p->charges ? "rdp_improved" : "none (post-processing)");
    /* Every field or none: a report with one missing (an allocation that
     * failed) would be shown, and stored with the job's view, as complete. */
    int bad = !o;
    if (!bad && p->charges) bad = json_object_set_new(o, "delta_extra", json_real(p->delta_extra));
    if (!bad && d->model == PG_PRIVACY_LOCAL) {
        json_t *sh = pg_jobdesc_shuffle_json(d);
        bad = !sh || json_object_update(o, sh);
        json_decref(sh);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *pg_jobs_privacy_json(const job *j)
{
    return j->privacy ? json_incref(j->privacy) : pg_jobs_plan_json(&j->plan, &j->desc);
}

json_t *pg_jobs_ckpts_json(const job *j)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < j->nckpts; i++)
        if (json_array_append_new(a,
                                  json_pack("{s:I,s:I,s:o}", "step", (json_int_t)j->ckpts[i].step,
                                            "bytes", (json_int_t)j->ckpts[i].bytes, "created_at",
                                            pg_text_time(j->ckpts[i].created_at)))) {
            json_decref(a); /* a list short of one is no answer */
            a = NULL;
        }
    return a;
}

json_t *pg_jobs_job_json(const job *j)
{
    /* Every part or none (NULL: out of memory, the API's 503): json_pack
     * fails on a NULL part, and the lists are checked as they grow. */
    json_t *hist = json_array();
    for (size_t i = 0; hist && i < j->nhist; i++)
        if (json_array_append_new(
                hist, json_pack("{s:I,s:o,s:o}", "step", (json_int_t)j->hist[i].step, "loss",
                                num(j->hist[i].loss), "epsilon_spent", num(j->hist[i].eps)))) {
            json_decref(hist);
            hist = NULL;
        }
    long short_by = j->status == ST_SUCCEEDED && j->step < j->total ? j->total - j->step : 0;
    json_t *prog =
        json_pack("{s:I,s:I,s:I,s:o,s:o,s:o,s:o}", "step", (json_int_t)j->step, "total_steps",
                  (json_int_t)j->total, "steps_short", (json_int_t)short_by, "loss", num(j->loss),
                  "epsilon_spent", num(j->eps_spent), "steps_per_second", num(j->sps),
                  "eta_seconds", j->status == ST_RUNNING ? num(j->eta) : json_null());
    return json_pack("{s:s,s:s,s:s,s:s,s:o,s:O,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "id",
                     j->id, "status", pg_jobs_status[j->status], "method", j->method_name,
                     "dataset_id", j->dataset_id, "public_dataset_id",
                     j->public_dataset_id[0] ? json_string(j->public_dataset_id) : json_null(),
                     "spec", j->spec, "progress", prog, "privacy", pg_jobs_privacy_json(j),
                     "checkpoints", pg_jobs_ckpts_json(j), "history", hist, "created_at",
                     pg_text_time(j->created_at), "started_at", pg_text_time(j->started_at),
                     "finished_at", pg_text_time(j->finished_at), "error",
                     j->error ? json_string(j->error) : json_null(), "warnings",
                     j->warnings ? json_incref(j->warnings) : pg_jobs_warnings_json(j, 0), "node",
                     j->node[0] ? json_string(j->node) : json_null());
}

int pg_jobs_summary(pg_jobs *m, const char *tenant, const char *id, pg_job_summary *out, int *found,
                    pg_error *err)
{
    memset(out, 0, sizeof *out);
    out->privacy = "public";
    out->epsilon = NAN;
    job *j;
    int rc = pg_jobs_sync_lookup(m, tenant, id, &j, err);
    *found = j != NULL;
    if (rc || !j) return rc;
    pthread_mutex_lock(&m->mu);
    snprintf(out->method, sizeof out->method, "%s", j->method_name);
    /* j->privacy, not j->plan: a job followed from storage shows the
     * document's privacy report, and the plot must say what the view says. */
    json_t *p = pg_jobs_privacy_json(j);
    if (!p) {
        pthread_mutex_unlock(&m->mu);
        return pg_error_set(err, PG_ENOMEM, "out of memory reading a job's privacy report");
    }
    const char *mech = json_string_value(json_object_get(p, "mechanism"));
    if (json_is_true(json_object_get(p, "charges")))
        out->privacy = "central";
    else if (mech && !strncmp(mech, "local", 5))
        out->privacy = "local";
    json_t *eps = json_object_get(p, "epsilon");
    if (json_is_number(eps) && json_number_value(eps) > 0.0 && isfinite(json_number_value(eps)))
        out->epsilon = json_number_value(eps);
    json_decref(p);
    pthread_mutex_unlock(&m->mu);
    return PG_OK;
}

int pg_jobs_event_id(const json_t *view, char *buf, size_t cap)
{
    const char *st = json_string_value(json_object_get(view, "status"));
    json_t *step = json_object_get(json_object_get(view, "progress"), "step");
    json_t *ck = json_object_get(view, "checkpoints");
    json_t *last = json_array_get(ck, json_array_size(ck) - 1);
    if (!st || !json_is_integer(step) || !json_is_array(ck)) return -1;
    long long c = last ? (long long)json_integer_value(json_object_get(last, "step")) : -1;
    int n = snprintf(buf, cap, "%s:%lld:%lld", st, (long long)json_integer_value(step), c);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

json_t *pg_jobs_quote_json(const pg_ledger_quote *q)
{
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:b}", "requested_epsilon", num(q->requested_epsilon),
                     "spent_epsilon", num(q->spent_epsilon), "total_epsilon", num(q->total_epsilon),
                     "cap_epsilon", num(q->cap_epsilon), "remaining_epsilon",
                     num(q->remaining_epsilon), "admissible", q->admit);
}

static void pg_jobs_snapcache_metrics(pg_jobs *m, pg_text *b);

char *pg_jobs_metrics(pg_jobs *m)
{
    pg_text b = {0};
    size_t by[ST_COUNT] = {0};
    typedef struct dsk {
        char id[PG_ID_MAX];
        double cap_delta;
    } dsk;
    dsk *ds = NULL;
    size_t nds = 0;
    pthread_mutex_lock(&m->mu);
    pg_text_printf(&b, "# HELP privgen_jobs Jobs by state.\n# TYPE privgen_jobs gauge\n");
    for (size_t i = 0; i < m->n; i++) by[m->all[i]->status]++;
    for (int s = 0; s < ST_COUNT; s++)
        pg_text_printf(&b, "privgen_jobs{state=\"%s\"} %zu\n", pg_jobs_status[s], by[s]);
    pg_text_printf(&b, "# HELP privgen_job_steps_per_second Training speed of running jobs.\n"
                       "# TYPE privgen_job_steps_per_second gauge\n");
    for (size_t i = 0; i < m->n; i++) {
        job *j = m->all[i];
        if (j->status == ST_RUNNING && isfinite(j->sps))
            pg_text_printf(&b, "privgen_job_steps_per_second{job=\"%s\"} %.6g\n", j->id, j->sps);
        if (j->desc.model == PG_PRIVACY_CENTRAL) {
            int seen = 0;
            for (size_t k = 0; k < nds && !seen; k++) seen = !strcmp(ds[k].id, j->dataset_id);
            dsk *nd = seen ? NULL : realloc(ds, (nds + 1) * sizeof *ds);
            if (nd) {
                ds = nd;
                snprintf(ds[nds].id, sizeof ds[nds].id, "%s", j->dataset_id);
                ds[nds++].cap_delta = j->desc.cap_delta;
            }
        }
    }
    pg_text_printf(
        &b,
        "# HELP privgen_job_steps_total Training steps run.\n# TYPE privgen_job_steps_total "
        "counter\nprivgen_job_steps_total %llu\n",
        (unsigned long long)m->steps_done);
    pg_text_printf(&b,
                   "# HELP privgen_samples_served_total Synthetic samples served.\n# TYPE "
                   "privgen_samples_served_total counter\nprivgen_samples_served_total %llu\n",
                   (unsigned long long)m->samples_served);
    pg_text_printf(&b,
                   "# HELP privgen_job_lookups_total Job lookups of requests, by where they were "
                   "answered (memory: the tenant's own job in this replica's table).\n"
                   "# TYPE privgen_job_lookups_total counter\n"
                   "privgen_job_lookups_total{source=\"memory\"} %llu\n"
                   "privgen_job_lookups_total{source=\"storage\"} %llu\n",
                   (unsigned long long)m->lookups_memory, (unsigned long long)m->lookups_storage);
    pthread_mutex_unlock(&m->mu);
    pg_text_printf(&b, "# HELP privgen_dataset_epsilon_spent Composed epsilon reserved per central "
                       "dataset (at its cap delta).\n# TYPE privgen_dataset_epsilon_spent gauge\n");
    for (size_t k = 0; k < nds; k++) {
        pg_ledger_curve c;
        double eps;
        if (!pg_ledger_spent(m->db, ds[k].id, &c, NULL) &&
            !pg_ledger_curve_epsilon(&c, ds[k].cap_delta, &eps, NULL))
            pg_text_printf(&b, "privgen_dataset_epsilon_spent{dataset=\"%s\"} %.9g\n", ds[k].id,
                           eps);
    }
    free(ds);
    pg_ledger_cache_stats lc;
    pg_ledger_cache_get_stats(pg_db_ledger_cache(m->db), &lc);
    pg_text_printf(&b,
                   "# HELP privgen_ledger_cache_hits_total Ledger rows composed from their cached "
                   "decode (same row, same text).\n# TYPE privgen_ledger_cache_hits_total counter\n"
                   "privgen_ledger_cache_hits_total %llu\n"
                   "# HELP privgen_ledger_cache_misses_total Ledger rows decoded from their JSON.\n"
                   "# TYPE privgen_ledger_cache_misses_total counter\n"
                   "privgen_ledger_cache_misses_total %llu\n"
                   "# HELP privgen_ledger_cache_rows Decoded ledger rows held "
                   "(--ledger-cache-rows).\n# TYPE privgen_ledger_cache_rows gauge\n"
                   "privgen_ledger_cache_rows %zu\n"
                   "# HELP privgen_ledger_cache_bytes Memory they hold.\n"
                   "# TYPE privgen_ledger_cache_bytes gauge\nprivgen_ledger_cache_bytes %zu\n",
                   lc.hits, lc.misses, lc.entries, lc.bytes);
    if (m->cpu) {
        pg_cpu_stats cs;
        pg_cpu_budget_stats(m->cpu, &cs);
        pg_text_printf(
            &b,
            "# HELP privgen_cpu_cores Cores of the process's CPU budget (--cpus).\n"
            "# TYPE privgen_cpu_cores gauge\nprivgen_cpu_cores %d\n"
            "# HELP privgen_cpu_lendable Cores it lends now (less other processes' load).\n"
            "# TYPE privgen_cpu_lendable gauge\nprivgen_cpu_lendable %d\n"
            "# HELP privgen_cpu_external_load Cores other processes kept busy (last estimate).\n"
            "# TYPE privgen_cpu_external_load gauge\nprivgen_cpu_external_load %.3f\n"
            "# HELP privgen_cpu_in_use Cores granted to steps, reports and samples now.\n"
            "# TYPE privgen_cpu_in_use gauge\nprivgen_cpu_in_use %d\n"
            "# HELP privgen_cpu_grants_total Grants made.\n"
            "# TYPE privgen_cpu_grants_total counter\nprivgen_cpu_grants_total %ld\n"
            "# HELP privgen_cpu_waits_total Grants that waited for a free core.\n"
            "# TYPE privgen_cpu_waits_total counter\nprivgen_cpu_waits_total %ld\n",
            cs.cores, cs.lendable, cs.external, cs.in_use, cs.grants, cs.waits);
    }
    pg_jobs_snapcache_metrics(m, &b);
    char *q = pg_jobs_queue_metrics(m); /* the shared queue, per replica (jobs_lease.c) */
    if (q) pg_text_printf(&b, "%s", q);
    free(q);
    if (b.failed) { /* out of memory: no half-rendered text */
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* The snapshot cache's counters (reads on any replica): hits and misses of samples
 * requests served from models rebuilt from checkpoints, evictions under
 * --snapshot-cache-mb, and what it holds. */
static void pg_jobs_snapcache_metrics(pg_jobs *m, pg_text *b)
{
    pthread_mutex_lock(&m->mu);
    struct pg_snapcache *c = m->snaps;
    pthread_mutex_unlock(&m->mu);
    pg_snapcache_stats s;
    pg_snapcache_stats_get(c, &s);
    if (!c) s.cap = m->cfg->snapshot_cache_mb > 0 ? (size_t)m->cfg->snapshot_cache_mb << 20 : 0;
    pg_text_printf(
        b,
        "# HELP privgen_snapshot_cache_hits_total Samples requests served by a cached model "
        "of a job trained elsewhere.\n# TYPE privgen_snapshot_cache_hits_total counter\n"
        "privgen_snapshot_cache_hits_total %llu\n"
        "# HELP privgen_snapshot_cache_misses_total Requests that rebuilt a model from its "
        "checkpoint.\n# TYPE privgen_snapshot_cache_misses_total counter\n"
        "privgen_snapshot_cache_misses_total %llu\n"
        "# HELP privgen_snapshot_cache_evictions_total Models dropped to stay within "
        "--snapshot-cache-mb.\n# TYPE privgen_snapshot_cache_evictions_total counter\n"
        "privgen_snapshot_cache_evictions_total %llu\n"
        "# HELP privgen_snapshot_cache_bytes Checkpoint bytes of the cached models.\n"
        "# TYPE privgen_snapshot_cache_bytes gauge\nprivgen_snapshot_cache_bytes %zu\n"
        "# HELP privgen_snapshot_cache_entries Cached models.\n"
        "# TYPE privgen_snapshot_cache_entries gauge\nprivgen_snapshot_cache_entries %zu\n"
        "# HELP privgen_snapshot_cache_capacity_bytes The cap (--snapshot-cache-mb).\n"
        "# TYPE privgen_snapshot_cache_capacity_bytes gauge\n"
        "privgen_snapshot_cache_capacity_bytes %zu\n",
        (unsigned long long)s.hits, (unsigned long long)s.misses, (unsigned long long)s.evictions,
        s.bytes, s.entries, s.cap);
}
