/* service/reports/reports.c - quality reports: requests, views and the worker
 * (service/reports/reports.h). */
#include "service/reports/reports.h"
#include "service/text.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "engine/core/alloc.h"
#include "engine/core/cpu.h"
#include "engine/core/mat.h"
#include "engine/eval/table_cols.h"
#include "engine/methods/draw.h"
#include "service/datasets/spec.h"
#include "service/jobs/jobs.h"
#include "service/log.h"

struct pg_reports {
    pg_db *db;
    struct pg_jobs *jobs;
    int nworkers, threads;
    int64_t max_queued;
    pthread_t *th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, kick;
};

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void pg_reports_figures_free(pg_report_figure *f, size_t count)
{
    for (size_t i = 0; f && i < count; i++) free(f[i].png);
    free(f);
}

/* ---- views ---------------------------------------------------------------- */

static const char *model_name(int m)
{
    return m == PG_PRIV_PUBLIC ? "public" : m == PG_PRIV_CENTRAL ? "central" : "local";
}

static json_t *view(const pg_report_row *r, int with_result)
{
    pg_report_marks mk;
    pg_report_marks_for(r->job_model, r->against_model, &mk);
    json_t *figs = r->figures ? json_loads(r->figures, 0, NULL) : NULL;
    if (!json_is_array(figs)) {
        json_decref(figs);
        figs = json_array();
    }
    int running = !strcmp(r->status, "running");
    json_t *o = json_pack(
        "{s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:b,s:s,s:o,s:f,s:o,s:o,s:o,s:o,s:b,s:s,s:s,s:o}", "id",
        r->id, "job_id", r->job_id, "against", r->against_id, "against_privacy",
        model_name(r->against_model), "against_n", (json_int_t)r->against_n, "job_step",
        (json_int_t)r->job_step, "n", (json_int_t)r->n, "seed", (json_int_t)r->seed, "utility",
        r->utility, "status", r->status, "stage",
        running && r->stage[0] ? json_string(r->stage) : json_null(), "progress", r->progress,
        "created_at", pg_text_time(r->created_at), "started_at", pg_text_time(r->started_at),
        "finished_at", pg_text_time(r->finished_at), "error",
        r->error ? json_string(r->error) : json_null(), "private", mk.is_private, "audience",
        mk.audience, "privacy_note", mk.note, "figures", figs);
    if (!o) return NULL;
    if (mk.quote_epsilon && isfinite(r->job_epsilon) && r->job_epsilon > 0)
        json_object_set_new(o, "epsilon", json_real(r->job_epsilon));
    if (with_result) {
        json_t *res = r->result ? json_loads(r->result, 0, NULL) : NULL;
        json_object_set_new(o, "result", res ? res : json_null());
    }
    return o;
}

/* The job of tenant exists (its view, when wanted). */
static int job_lookup(pg_reports *m, const char *tenant, const char *job_id, json_t **jv,
                      int *found, pg_error *err)
{
    json_t *v = NULL;
    uint64_t ver;
    int rc = pg_jobs_get(m->jobs, tenant, job_id, &v, &ver, found, err);
    if (rc || !*found) {
        json_decref(v);
        return rc;
    }
    if (jv)
        *jv = v;
    else
        json_decref(v);
    return PG_OK;
}

/* Loads the report for an action: *found = 0 for a missing, foreign,
 * other-job or hidden one; *forbidden for an allowed-to-see but not-to-do. */
static int load_for(pg_reports *m, const char *tenant, int scope, const char *job_id,
                    const char *id, int action, pg_report_row *row, int *found, int *forbidden,
                    pg_error *err)
{
    *found = 0;
    *forbidden = 0;
    int jf;
    int rc = job_lookup(m, tenant, job_id, NULL, &jf, err);
    if (rc || !jf) return rc;
    int rf;
    if ((rc = pg_db_report_get(m->db, tenant, id, row, &rf, err)) || !rf) return rc;
    int d = strcmp(row->job_id, job_id) ? PG_REPORT_HIDDEN
                                        : pg_report_decide(scope, action, row->against_model);
    if (d == PG_REPORT_HIDDEN) {
        pg_report_rows_free(row, 1);
        return PG_OK;
    }
    *found = 1;
    *forbidden = d == PG_REPORT_FORBIDDEN;
    return PG_OK;
}

int pg_reports_get(pg_reports *m, const char *tenant, int scope, const char *job_id, const char *id,
                   json_t **out, int *found, pg_error *err)
{
    *out = NULL;
    pg_report_row row;
    int forbidden;
    int rc = load_for(m, tenant, scope, job_id, id, PG_REPORT_READ, &row, found, &forbidden, err);
    if (rc || !*found) return rc;
    if (forbidden) { /* read never is forbidden, only hidden: fail closed */
        *found = 0;
        pg_report_rows_free(&row, 1);
        return PG_OK;
    }
    *out = view(&row, 1);
    pg_report_rows_free(&row, 1);
    return *out ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
}

int pg_reports_list(pg_reports *m, const char *tenant, int scope, const char *job_id, int64_t after,
                    size_t limit, json_t **items, int64_t *next, int *found, pg_error *err)
{
    *items = NULL;
    *next = 0;
    int rc = job_lookup(m, tenant, job_id, NULL, found, err);
    if (rc || !*found) return rc;
    /* Hidden reports are filtered in the query (pages stay full); the rule
     * is checked again per row so a new model could never slip through. */
    int public_only = pg_report_decide(scope, PG_REPORT_READ, PG_PRIV_LOCAL) != PG_REPORT_ALLOW ||
                      pg_report_decide(scope, PG_REPORT_READ, PG_PRIV_CENTRAL) != PG_REPORT_ALLOW;
    pg_report_row *rows;
    size_t n;
    if ((rc = pg_db_report_list(m->db, tenant, job_id, public_only, after, limit + 1, &rows, &n,
                                err)))
        return rc;
    json_t *a = json_array();
    for (size_t i = 0; a && i < n && i < limit; i++)
        if (pg_report_decide(scope, PG_REPORT_READ, rows[i].against_model) == PG_REPORT_ALLOW)
            json_array_append_new(a, view(&rows[i], 0));
    if (n > limit) *next = rows[limit - 1].seq;
    pg_report_rows_free(rows, n);
    free(rows);
    if (!a) return pg_error_set(err, PG_ENOMEM, "out of memory");
    *items = a;
    return PG_OK;
}

int pg_reports_figure(pg_reports *m, const char *tenant, int scope, const char *job_id,
                      const char *id, const char *name, unsigned char **png, size_t *len,
                      int *found, int *not_ready, pg_error *err)
{
    *not_ready = 0;
    pg_report_row row;
    int forbidden;
    int rc = load_for(m, tenant, scope, job_id, id, PG_REPORT_READ, &row, found, &forbidden, err);
    if (rc || !*found) return rc;
    int ok = !forbidden && !strcmp(row.status, "succeeded");
    if (forbidden) *found = 0;
    if (!forbidden && !ok) *not_ready = 1;
    pg_report_rows_free(&row, 1);
    if (!ok) return PG_OK;
    return pg_db_report_figure_get(m->db, id, name, PG_REPORTS_FIGURE_MAX, png, len, found, err);
}

int pg_reports_cancel(pg_reports *m, const char *tenant, int scope, const char *job_id,
                      const char *id, json_t **out, int *found, int *conflict, pg_error *err)
{
    *out = NULL;
    *conflict = 0;
    pg_report_row row;
    int forbidden;
    int rc = load_for(m, tenant, scope, job_id, id, PG_REPORT_CANCEL, &row, found, &forbidden, err);
    if (rc || !*found) return rc;
    pg_report_rows_free(&row, 1);
    if (forbidden) { /* never for cancel; fail closed */
        *found = 0;
        return PG_OK;
    }
    int f, done;
    if ((rc = pg_db_report_cancel(m->db, tenant, id, now_s(), &f, &done, err))) return rc;
    *conflict = f && !done;
    if ((rc = pg_db_report_get(m->db, tenant, id, &row, &f, err))) return rc;
    if (!f) {
        *found = 0;
        return PG_OK;
    }
    *out = view(&row, 0);
    pg_report_rows_free(&row, 1);
    return *out ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
}

int pg_reports_delete(pg_reports *m, const char *tenant, int scope, const char *job_id,
                      const char *id, int *found, int *forbidden, int *conflict, pg_error *err)
{
    *conflict = 0;
    pg_report_row row;
    int rc = load_for(m, tenant, scope, job_id, id, PG_REPORT_DELETE, &row, found, forbidden, err);
    if (rc || !*found) return rc;
    pg_report_rows_free(&row, 1);
    if (*forbidden) return PG_OK;
    /* Gone since the lookup (deleted through another request or replica,
     * or with its job): a 404 like any missing report. */
    return pg_db_report_delete(m->db, tenant, id, found, conflict, err);
}

/* ---- creation --------------------------------------------------------------- */

static void job_ds_from_geometry(const pg_job_geometry *g, pg_datasets_spec *s)
{
    memset(s, 0, sizeof *s);
    s->ndim = g->ndim == 3 ? 3 : 1;
    if (s->ndim == 3)
        for (int i = 0; i < 3; i++) s->shape[i] = (int64_t)g->shape[i];
    else
        s->shape[0] = (int64_t)g->d;
    s->d = g->d;
    s->lo = g->lo;
    s->hi = g->hi;
    s->num_classes = g->num_classes;
}

static void report_id(char *out, size_t cap)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) v = (uint64_t)mono() * 2654435761u;
    snprintf(out, cap, "rep_%016llx", (unsigned long long)v);
}

/* The job dataset's privacy model (0 when it is gone) and the job's
 * planned epsilon (NaN when none). */
static void job_privacy(pg_reports *m, const char *tenant, json_t *jv, int *model, double *eps)
{
    *model = 0;
    *eps = NAN;
    json_t *pe = json_object_get(json_object_get(jv, "privacy"), "epsilon");
    if (json_is_number(pe)) *eps = json_number_value(pe);
    const char *dsid = json_string_value(json_object_get(jv, "dataset_id"));
    pg_db_dataset ds;
    int f = 0;
    if (!dsid || pg_db_dataset_get(m->db, tenant, dsid, &ds, &f, NULL) || !f) return;
    pg_datasets_spec s;
    if (!pg_datasets_spec_from_json(ds.meta, &s, NULL)) *model = s.model;
    pg_db_dataset_free(&ds);
}

int pg_reports_submit(pg_reports *m, const char *tenant, int scope, const char *job_id,
                      const json_t *body, pg_reports_submit_result *res, pg_error *err)
{
    memset(res, 0, sizeof *res);
    json_t *jv = NULL;
    int jf;
    int rc = job_lookup(m, tenant, job_id, &jv, &jf, err);
    if (rc) return rc;
    if (!jf) {
        res->outcome = PG_REPORTS_NO_JOB;
        return PG_OK;
    }
    pg_report_request req;
    if (pg_report_request_parse(body, &req, &res->errors)) {
        json_decref(jv);
        res->outcome = PG_REPORTS_INVALID;
        return PG_OK;
    }
    pg_db_dataset ds = {0};
    int df = 0;
    pg_datasets_spec aspec;
    if ((rc = pg_db_dataset_get(m->db, tenant, req.against, &ds, &df, err))) {
        json_decref(jv);
        return rc;
    }
    if (df && pg_datasets_spec_from_json(ds.meta, &aspec, err)) {
        pg_db_dataset_free(&ds);
        json_decref(jv);
        return PG_EIO;
    }
    if (df && pg_report_decide(scope, PG_REPORT_CREATE, aspec.model) != PG_REPORT_ALLOW) {
        snprintf(res->detail, sizeof res->detail,
                 "dataset %s holds %s data: a report against it is not differentially private "
                 "and only an admin token may ask for it",
                 req.against, model_name(aspec.model));
        res->outcome = PG_REPORTS_FORBIDDEN;
        pg_db_dataset_free(&ds);
        json_decref(jv);
        return PG_OK;
    }
    pg_snapshot *snap = NULL;
    pg_job_geometry geo;
    int sf = 0;
    pg_error serr = {0};
    rc = pg_jobs_snapshot(m->jobs, tenant, job_id, -1, &snap, &geo, &sf, &serr);
    if (rc == PG_ESTATE || (!rc && !sf)) {
        snprintf(res->detail, sizeof res->detail, "%s",
                 rc ? serr.msg : "the job has no model to sample yet");
        res->outcome = PG_REPORTS_NO_MODEL;
        pg_db_dataset_free(&ds);
        json_decref(jv);
        return PG_OK;
    }
    if (rc) {
        if (err) *err = serr;
        pg_db_dataset_free(&ds);
        json_decref(jv);
        return rc;
    }
    int64_t step = pg_snapshot_step(snap);
    pg_snapshot_release(snap);
    pg_datasets_spec job_ds;
    job_ds_from_geometry(&geo, &job_ds);
    if (pg_report_request_check(&req, &job_ds, df ? &aspec : NULL, df ? ds.n : 0, &res->errors)) {
        res->outcome = PG_REPORTS_INVALID;
        pg_db_dataset_free(&ds);
        json_decref(jv);
        return PG_OK;
    }
    pg_report_row row = {0};
    report_id(row.id, sizeof row.id);
    snprintf(row.tenant, sizeof row.tenant, "%s", tenant);
    snprintf(row.job_id, sizeof row.job_id, "%s", job_id);
    snprintf(row.against_id, sizeof row.against_id, "%s", req.against);
    row.against_model = aspec.model;
    row.against_n = ds.n;
    row.job_step = step;
    row.n = (int64_t)req.n;
    if (req.has_seed) {
        row.seed = (int64_t)req.seed;
    } else {
        uint64_t s = 0;
        if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s) s = (uint64_t)(mono() * 1e9);
        row.seed = (int64_t)(s & PG_REPORT_MAX_SEED);
    }
    row.created_at = now_s();
    row.utility = req.utility;
    job_privacy(m, tenant, jv, &row.job_model, &row.job_epsilon);
    pg_db_dataset_free(&ds);
    json_decref(jv);
    int full = 0;
    if ((rc = pg_db_report_insert(m->db, &row, m->max_queued, &full, err))) return rc;
    if (full) {
        res->outcome = PG_REPORTS_QUEUE_FULL;
        return PG_OK;
    }
    pthread_mutex_lock(&m->mu);
    m->kick = 1;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    res->outcome = PG_REPORTS_ACCEPTED;
    snprintf(res->id, sizeof res->id, "%s", row.id);
    res->body = view(&row, 0);
    return res->body ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
}

/* ---- the worker ------------------------------------------------------------- */

typedef struct run_ctx {
    pg_reports *m;
    const char *id;
    double lo, span; /* the engine's fraction maps to lo + span * f */
    double last;     /* monotonic time of the last stored progress */
    char stage[24];
    int cancelled, stopping;
    pg_cpu_share cpu; /* the report's share of the CPU budget */
    int cap;          /* most cores it asks for */
} run_ctx;

static int stopping(pg_reports *m)
{
    pthread_mutex_lock(&m->mu);
    int s = m->stop;
    pthread_mutex_unlock(&m->mu);
    return s;
}

/* Stores stage and progress at most once a second (and at every new
 * stage); nonzero stops the run: cancelled (the store refused the write) or
 * shutting down. */
static int on_progress(void *arg, const char *stage, double f)
{
    run_ctx *c = arg;
    /* The hook runs between pieces of work, outside any parallel region: a
     * report gives its cores back here and takes its current share, so it
     * never holds them for a whole report while jobs and samples wait. */
    pg_cpu_use(pg_cpu_acquire(&c->cpu, c->cap));
    if (stopping(c->m)) return c->stopping = 1;
    double t = mono();
    int new_stage = strncmp(stage, c->stage, sizeof c->stage - 1) != 0;
    if (!new_stage && t - c->last < 1.0) return 0;
    snprintf(c->stage, sizeof c->stage, "%s", stage);
    c->last = t;
    int held = 1;
    pg_error err = {0};
    if (pg_db_report_progress(c->m->db, c->id, stage, c->lo + c->span * f, now_s(), &held, &err))
        return 0; /* a lost write is not a cancel: keep going */
    if (!held) c->cancelled = 1;
    return !held;
}

/* The first want rows of dataset id (width d) and, when every block read
 * carries them, their labels. */
static int read_rows(pg_db *db, const char *id, size_t d, size_t want, float **x, int32_t **lab,
                     size_t *got, pg_error *err)
{
    *x = NULL;
    *lab = NULL;
    *got = 0;
    float *xv = pg_alloc(want * d * sizeof *xv);
    int32_t *lv = pg_alloc(want * sizeof *lv);
    if (!xv || !lv) {
        pg_free(xv);
        pg_free(lv);
        return pg_error_set(err, PG_ENOMEM, "out of memory reading %zu reference rows", want);
    }
    pg_db_blocks *it = NULL;
    size_t nb, n = 0;
    int labeled = 1;
    int rc = pg_db_blocks_open(db, id, &it, &nb, err);
    while (!rc && n < want) {
        pg_block b = {0};
        int end = 0;
        if ((rc = pg_db_blocks_next(it, (size_t)1 << 31, &b, &end, err)) || end) break;
        if (b.d != d) {
            rc = pg_error_set(err, PG_EFORMAT, "a block of %s has width %zu, not %zu", id, b.d, d);
        } else {
            size_t k = (size_t)b.n < want - n ? (size_t)b.n : want - n;
            memcpy(xv + n * d, b.x, k * d * sizeof *xv);
            if (b.labels)
                memcpy(lv + n, b.labels, k * sizeof *lv);
            else
                labeled = 0;
            n += k;
        }
        pg_block_free(&b);
    }
    if (it) pg_db_blocks_close(it);
    if (!rc && n < want)
        rc = pg_error_set(err, PG_EFORMAT,
                          "dataset %s holds %zu rows, fewer than the %zu read at "
                          "creation",
                          id, n, want);
    if (rc) {
        pg_free(xv);
        pg_free(lv);
        return rc;
    }
    *x = xv;
    *got = n;
    if (labeled)
        *lab = lv;
    else
        pg_free(lv);
    return PG_OK;
}

/* n samples by the rule GET /samples follows (engine/methods/draw.h), so a
 * report's rows are the rows /samples serves for the job, step and seed:
 * unlabelled, /samples?seed=S&n=N; class-conditional (labels != NULL),
 * class c's n_c rows (n / k, the first n % k classes one more) are
 * /samples?seed=S&label=c&n=n_c, one class after the other. */
static int draw(const pg_snapshot *snap, size_t n, size_t d, uint64_t seed, int classes, float *x,
                int32_t *labels, run_ctx *rc_ctx, pg_error *err)
{
    size_t at = 0;
    int k = labels ? classes : 1;
    for (int c = 0; c < k; c++) {
        size_t nc = labels ? n / (size_t)k + ((size_t)c < n % (size_t)k) : n;
        int rc = pg_draw_rows(snap, nc, d, seed, labels ? c : -1, x + at * d, err);
        if (rc) return rc;
        for (size_t j = 0; labels && j < nc; j++) labels[at + j] = c;
        at += nc;
        if (on_progress(rc_ctx, "sampling", (double)at / (double)n))
            return pg_error_set(err, PG_ECANCELLED, "cancelled");
    }
    return PG_OK;
}

/* Typed jobs: the rows /samples?seed=S&n=N serves (decoded as its CSV is,
 * with the label column's classes), drawn by pg_draw_table_rows with the
 * table the snapshot decodes with (*ot: its label column only when the
 * model is conditional, then labels are filled). */
static int draw_typed(const pg_table *t, const pg_snapshot *snap, size_t n, uint64_t seed,
                      pg_table **ot, float *x, int32_t *labels, run_ctx *rc_ctx, pg_error *err)
{
    int rc = pg_draw_table_for(t, snap, ot, err);
    if (rc) return rc;
    int64_t *l64 = (*ot)->label != PG_TABLE_NONE ? pg_alloc(n * sizeof *l64) : NULL;
    if ((*ot)->label != PG_TABLE_NONE && !l64)
        return pg_error_set(err, PG_ENOMEM, "out of memory drawing %zu samples", n);
    rc = pg_draw_table_rows(*ot, snap, n, seed, -1, x, l64, err);
    for (size_t i = 0; !rc && l64 && labels && i < n; i++) labels[i] = (int32_t)l64[i];
    pg_free(l64);
    if (!rc && on_progress(rc_ctx, "sampling", 1.0))
        rc = pg_error_set(err, PG_ECANCELLED, "cancelled");
    return rc;
}

/* Whether the model samples each of k classes (the service sees snapshots
 * through method.h only, which has no class count: one row of the last
 * class is drawn, and an unconditional model refuses it). */
static int conditional(const pg_snapshot *snap, size_t d, int k)
{
    float *x = pg_alloc(d * sizeof *x);
    if (!x) return 0;
    pg_error e = {0};
    int ok = pg_snapshot_sample(snap, 1, 1, k - 1, x, &e) == PG_OK;
    pg_free(x);
    return ok;
}

static void run_one(pg_reports *m, pg_report_row *row)
{
    run_ctx rc_ctx = {.m = m, .id = row->id, .lo = 0, .span = 0.05, .cap = m->threads};
    pg_cpu_join(pg_jobs_cpu(m->jobs), false, &rc_ctx.cpu);
    pg_cpu_use(pg_cpu_acquire(&rc_ctx.cpu, rc_ctx.cap));
    pg_error err = {0};
    pg_snapshot *snap = NULL;
    pg_job_geometry geo;
    float *syn = NULL, *ref = NULL;
    int32_t *syn_lab = NULL, *ref_lab = NULL;
    json_t *j = NULL;
    char *text = NULL;
    pg_report_figure *figs = NULL;
    size_t nfig = 0, nref = 0, dc = 0;
    pg_table *ot = NULL;
    pg_eval_column *cols = NULL;
    float *syn_c = NULL, *ref_c = NULL;
    pg_eval_report rep;
    memset(&rep, 0, sizeof rep);
    int have_rep = 0, found = 0;
    double t0 = mono();
    int rc = pg_jobs_snapshot(m->jobs, row->tenant, row->job_id, -1, &snap, &geo, &found, &err);
    if (!rc && !found) rc = pg_error_set(&err, PG_ESTATE, "the job no longer exists");
    if (!rc && pg_snapshot_step(snap) != row->job_step) {
        pg_snapshot_release(snap);
        snap = NULL;
        rc = pg_jobs_snapshot(m->jobs, row->tenant, row->job_id, (long)row->job_step, &snap, &geo,
                              &found, &err);
        if (!rc && !found)
            rc = pg_error_set(&err, PG_ESTATE,
                              "the job's checkpoint at step %lld, which this report samples, is "
                              "no longer kept",
                              (long long)row->job_step);
    }
    size_t n = (size_t)row->n, d = geo.d;
    const pg_table *tt = rc ? NULL : geo.table;
    if (!rc)
        rc = read_rows(m->db, row->against_id, d, (size_t)row->against_n, &ref, &ref_lab, &nref,
                       &err);
    /* Utility needs labels on both sides: the reference rows carry them and
     * the model samples class-conditionally (an unconditional model of a
     * labelled dataset gets no utility figure). */
    int labeled = !rc && ref_lab && geo.num_classes >= 2 &&
                  (tt ? tt->label != PG_TABLE_NONE : conditional(snap, d, geo.num_classes));
    if (!rc) {
        syn = pg_alloc(n * d * sizeof *syn);
        syn_lab = labeled ? pg_alloc(n * sizeof *syn_lab) : NULL;
        if (!syn || (labeled && !syn_lab))
            rc = pg_error_set(&err, PG_ENOMEM, "out of memory drawing %zu samples", n);
    }
    if (!rc && tt) {
        rc = draw_typed(tt, snap, n, (uint64_t)row->seed, &ot, syn, syn_lab, &rc_ctx, &err);
        if (!rc && ot->label == PG_TABLE_NONE) labeled = 0; /* unconditional model */
    } else if (!rc) {
        rc = draw(snap, n, d, (uint64_t)row->seed, geo.num_classes, syn, labeled ? syn_lab : NULL,
                  &rc_ctx, &err);
    }
    for (size_t i = 0; !rc && labeled && i < nref; i++)
        if (ref_lab[i] < 0 || ref_lab[i] >= geo.num_classes) labeled = 0;
    /* A typed job's figures speak the schema: one report column per table
     * column (decoded, the label column included when both sides carry
     * it), the encoded units kept for the figures that need the model's
     * geometry (engine/eval/table_cols.h, report.h). */
    if (!rc && tt) rc = pg_eval_table_columns(ot, labeled, &cols, &dc, &err);
    if (!rc && tt) {
        syn_c = pg_alloc_f32(n * dc);
        ref_c = pg_alloc_f32(nref * dc);
        if (!syn_c || !ref_c)
            rc = pg_error_set(&err, PG_ENOMEM, "out of memory decoding %zu columns", dc);
    }
    if (!rc && tt) {
        /* Synthetic rows clamped as /samples decodes them; reference rows
         * as stored (local noisy numbers stay unbiased). */
        pg_eval_table_decode(ot, labeled, syn, syn_lab, n, 1, syn_c);
        pg_eval_table_decode(ot, labeled, ref, ref_lab, nref, 0, ref_c);
    }
    if (!rc) {
        pg_eval_opts o;
        pg_eval_defaults(&o);
        o.seed = (uint64_t)row->seed;
        o.pairwise = geo.ndim != 3; /* d^2 pixel pairs say little */
        o.utility = labeled && row->utility;
        o.progress = on_progress;
        o.progress_ctx = &rc_ctx;
        rc_ctx.lo = 0.05;
        rc_ctx.span = 0.85;
        pg_eval_input in = {.syn = tt ? syn_c : syn,
                            .ref = tt ? ref_c : ref,
                            .n_syn = n,
                            .n_ref = nref,
                            .d = tt ? dc : d,
                            .columns = cols,
                            .syn_units = tt ? syn : NULL,
                            .ref_units = tt ? ref : NULL,
                            .units = tt ? d : 0,
                            .syn_labels = labeled ? syn_lab : NULL,
                            .ref_labels = labeled ? ref_lab : NULL,
                            .num_classes = labeled ? geo.num_classes : 0};
        rc = pg_eval_report_run(&in, &o, &rep, &err);
        have_rep = !rc;
    }
    if (!rc) rc = pg_eval_report_json(&rep, cols, 64, &j, &err);
    if (!rc && tt) {
        json_t *split = json_object_get(j, "split");
        if (split) json_object_set_new(split, "units", json_integer((json_int_t)d));
        json_t *u = json_object_get(j, "utility");
        if (u && ot->label != PG_TABLE_NONE) {
            const pg_table_col *lc = &ot->cols[ot->label];
            json_object_set_new(u, "label", json_string(lc->name));
            int mc = rep.majority_class;
            json_object_set_new(u, "majority_class",
                                json_string(lc->type == PG_COL_CATEGORICAL && (size_t)mc < lc->ncat
                                                ? lc->cats[mc]
                                            : mc ? "true"
                                                 : "false"));
        }
    }
    pg_report_marks mk;
    pg_report_marks_for(row->job_model, row->against_model, &mk);
    if (!rc) rc = pg_report_marks_json(&mk, row->job_epsilon, j, &err);
    if (!rc && !on_progress(&rc_ctx, "figures", 1.0)) {
        rc_ctx.lo = 0.9;
        rc_ctx.span = 0.1;
        char title[2 * PG_ID_MAX + 8];
        snprintf(title, sizeof title, "%s vs %s", row->job_id, row->against_id);
        pg_reports_fig_in fi = {.real = tt ? ref_c : ref,
                                .syn = tt ? syn_c : syn,
                                .n_real = nref,
                                .n_syn = n,
                                .d = tt ? dc : d,
                                .ndim = geo.ndim == 3 ? 3 : 1,
                                .columns = cols,
                                .report = &rep,
                                .lo = tt ? NAN : geo.lo,
                                .hi = tt ? NAN : geo.hi,
                                .mark_private = mk.figure_mark,
                                .show_real_rows = row->against_model == PG_PRIV_PUBLIC,
                                .title = title};
        memcpy(fi.shape, geo.shape, sizeof fi.shape);
        rc = pg_reports_draw_figures(&fi, &figs, &nfig, &err);
    }
    if (rc_ctx.cancelled || rc_ctx.stopping) rc = PG_ECANCELLED;
    if (!rc) {
        json_t *secs = json_object_get(j, "seconds");
        if (json_is_object(secs)) json_object_set_new(secs, "total", json_real(mono() - t0));
        if (!(text = json_dumps(j, JSON_COMPACT)))
            rc = pg_error_set(&err, PG_ENOMEM, "out of memory");
    }
    int held = 0;
    pg_error ferr = {0};
    const char *status = !rc ? "succeeded" : rc_ctx.stopping ? "queued" : "failed";
    if (!rc_ctx.cancelled)
        pg_db_report_finish(m->db, row->id, status, rc ? err.msg : NULL, text, figs, nfig, now_s(),
                            &held, &ferr);
    char extra[256];
    snprintf(extra, sizeof extra,
             "\"report\":\"%s\",\"job\":\"%s\",\"status\":\"%s\",\"seconds\":%.3f", row->id,
             row->job_id, rc_ctx.cancelled ? "cancelled" : status, mono() - t0);
    pg_log_event(rc && !rc_ctx.cancelled && !rc_ctx.stopping ? "warn" : "info", "report ended",
                 extra);
    free(text);
    json_decref(j);
    pg_reports_figures_free(figs, nfig);
    if (have_rep) pg_eval_report_free(&rep);
    pg_free(syn);
    pg_free(syn_lab);
    pg_free(ref);
    pg_free(ref_lab);
    pg_free(syn_c);
    pg_free(ref_c);
    pg_eval_table_columns_free(cols, dc);
    pg_table_free(ot);
    if (snap) pg_snapshot_release(snap);
    pg_cpu_leave(&rc_ctx.cpu);
}

static void *worker(void *arg)
{
    pg_reports *m = arg;
    pg_threads_set(m->threads);
    for (;;) {
        if (stopping(m)) break;
        pg_report_row *row = NULL;
        int found = 0;
        pg_error err = {0};
        if (!pg_db_report_claim(m->db, now_s(), PG_REPORTS_STALE_S, &row, &found, &err) && found) {
            run_one(m, row);
            pg_report_rows_free(row, 1);
            free(row);
            continue;
        }
        /* Nothing to do: wait for a local submission, or poll the store
         * every 2 s for other replicas' reports. */
        pthread_mutex_lock(&m->mu);
        if (!m->stop && !m->kick) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 2;
            pthread_cond_timedwait(&m->cv, &m->mu, &ts);
        }
        m->kick = 0;
        pthread_mutex_unlock(&m->mu);
    }
    return NULL;
}

int pg_reports_create(const pg_svc_config *cfg, pg_db *db, struct pg_jobs *jobs, pg_reports **out,
                      pg_error *err)
{
    *out = NULL;
    pg_reports *m = calloc(1, sizeof *m);
    if (!m) return pg_error_set(err, PG_ENOMEM, "out of memory");
    m->db = db;
    m->jobs = jobs;
    m->nworkers = cfg->report_workers;
    /* One thread, whatever the budget could lend: the metrics' sums are
     * split by thread (logistic regression's loss, for one), and a report
     * must reproduce from its seed. It still takes its core from the budget
     * (and waits for one) like any computation of the process. */
    m->threads = 1;
    m->max_queued = (int64_t)cfg->max_queued_reports;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    *out = m;
    return PG_OK;
}

int pg_reports_start(pg_reports *m, pg_error *err)
{
    if (m->nworkers <= 0) return PG_OK;
    m->th = calloc((size_t)m->nworkers, sizeof *m->th);
    if (!m->th) return pg_error_set(err, PG_ENOMEM, "out of memory");
    for (int i = 0; i < m->nworkers; i++) {
        if (pthread_create(&m->th[i], NULL, worker, m))
            return pg_error_set(err, PG_EIO, "cannot start a report worker");
        m->started++;
    }
    return PG_OK;
}

void pg_reports_destroy(pg_reports *m)
{
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    for (int i = 0; i < m->started; i++) pthread_join(m->th[i], NULL);
    m->started = 0;
    free(m->th);
    m->th = NULL;
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    free(m);
}
