/* service/reports/reports.h - quality reports of a job's synthetic rows against a
 * dataset (docs/reports.md): creation, the worker that computes
 * them, list, get, figures, cancel.
 *
 * Privacy: every decision is service/reports/report_rules.h's, by the `against`
 * dataset's privacy model stored with the report at creation. A read-scope
 * token may create reports against public datasets only (403 otherwise), and
 * every read of a report against private data answers exactly like a missing
 * report (*found = 0), lists leaving it out. Nothing is charged: a report
 * against public rows is post-processing of the job's model, one against
 * private rows is for the data owner and says it is not DP.
 *
 * Worker: --report-workers threads (0: this replica computes none; another
 * replica sharing the database does) claim queued reports from the store
 * (pg_db_report_claim: oldest first, across replicas), sample the job's
 * snapshot at the step stored at creation with the stored seed, read the
 * first against_n rows of `against`, run engine/eval/report.h with a progress
 * hook that stores stage and progress at most once a second and stops when
 * the report was cancelled or deleted (any replica: the write is refused), then store
 * the JSON with its marks and the figures in one transaction. Figures are
 * drawn with render/report_png.h (pg_reports_draw_figures). At shutdown a
 * running report is given back (queued again); one whose worker died is
 * claimed again once it has not been updated for PG_REPORTS_STALE_S.
 *
 * Threads: every function is thread-safe. JSON results are new references.
 */
#ifndef PG_SVC_REPORTS_H
#define PG_SVC_REPORTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/eval/report.h"
#include "service/config.h"
#include "service/store/db.h"
#include "service/reports/report_rules.h"

#define PG_REPORTS_STALE_S 600
/* Cap of one stored figure read back (the figures are 20-300 kB). */
#define PG_REPORTS_FIGURE_MAX ((size_t)16 << 20)

/* What a report's figures are drawn from. Pointers are valid during the call. */
typedef struct pg_reports_fig_in {
    const float *real, *syn; /* n_real x d, n_syn x d */
    size_t n_real, n_syn, d;
    int ndim;        /* 1, or 3 for [c, h, w] rows */
    size_t shape[3]; /* ndim 3: c, h, w */
    /* d entries (typed jobs: the schema's columns, category names), or
     * NULL: numeric columns x0, x1, ... */
    const pg_eval_column *columns;
    const pg_eval_report *report;
    double lo, hi;      /* the job dataset's declared range */
    int mark_private;   /* reference rows are private data: mark every figure */
    int show_real_rows; /* reference rows may appear in a figure (public against) */
    const char *title;
} pg_reports_fig_in;

/* The figures a report stores (service/reports/report_figures.c): ndim 3 rows get
 * samples.png (the grid; reference rows only when in->show_real_rows);
 * others get histograms-K.png, pages of PG_REPORT_PAGE_MAX columns (every
 * column of a typed table, the first 4 pages otherwise), correlation.png when
 * the report has pairwise figures and 2 <= d <= PG_REPORT_HEATMAP_MAX_D, and
 * scatter.png when d == 2. *out: malloc'ed array of *count figures, each png
 * malloc'ed (pg_reports_figures_free frees both); on error nothing is left. */
int pg_reports_draw_figures(const pg_reports_fig_in *in, pg_report_figure **out, size_t *count,
                            pg_error *err);
void pg_reports_figures_free(pg_report_figure *f, size_t count);

struct pg_jobs;
typedef struct pg_reports pg_reports;

/* jobs and db must outlive it. */
int pg_reports_create(const pg_svc_config *cfg, pg_db *db, struct pg_jobs *jobs, pg_reports **out,
                      pg_error *err);
int pg_reports_start(pg_reports *m, pg_error *err);
/* Stops the workers: a running report is given back (queued). */
void pg_reports_destroy(pg_reports *m);

enum pg_reports_outcome {
    PG_REPORTS_ACCEPTED = 1, /* 202; id and body set */
    PG_REPORTS_INVALID,      /* 422; errors set */
    PG_REPORTS_FORBIDDEN,    /* 403; detail set */
    PG_REPORTS_NO_JOB,       /* 404 */
    PG_REPORTS_NO_MODEL,     /* 409; detail set */
    PG_REPORTS_QUEUE_FULL,   /* 503 + Retry-After */
};

typedef struct pg_reports_submit_result {
    int outcome;
    char id[PG_ID_MAX];
    pg_report_errors errors;
    char detail[256];
    json_t *body; /* the report view; caller decrefs */
} pg_reports_submit_result;

/* scope: enum pg_scope of the caller's token. */
int pg_reports_submit(pg_reports *m, const char *tenant, int scope, const char *job_id,
                      const json_t *body, pg_reports_submit_result *res, pg_error *err);
/* The view: request, status, stage, progress, times, error, marks, figure
 * names and, once succeeded, "result". */
int pg_reports_get(pg_reports *m, const char *tenant, int scope, const char *job_id, const char *id,
                   json_t **out, int *found, pg_error *err);
/* Views without "result", oldest first, seq > after; *next the cursor of a
 * further page or 0. *found = 0 for a missing job. */
int pg_reports_list(pg_reports *m, const char *tenant, int scope, const char *job_id, int64_t after,
                    size_t limit, json_t **items, int64_t *next, int *found, pg_error *err);
/* A figure's PNG (malloc'ed). *found = 0 for a missing or hidden report or
 * an unknown name; *not_ready = 1 while the report has not succeeded. */
int pg_reports_figure(pg_reports *m, const char *tenant, int scope, const char *job_id,
                      const char *id, const char *name, unsigned char **png, size_t *len,
                      int *found, int *not_ready, pg_error *err);
/* Cancels a queued or running report; *conflict = 1 when it had ended. */
int pg_reports_cancel(pg_reports *m, const char *tenant, int scope, const char *job_id,
                      const char *id, json_t **out, int *found, int *conflict, pg_error *err);
/* Deletes a report with its figures (pg_db_report_delete). *found = 0 for a
 * missing or hidden one (then nothing else is said); *forbidden = 1 when the
 * caller may see it but not delete it; *conflict = 1 while it is running
 * (cancel it first). Nothing is deleted unless all three are clear. */
int pg_reports_delete(pg_reports *m, const char *tenant, int scope, const char *job_id,
                      const char *id, int *found, int *forbidden, int *conflict, pg_error *err);

#endif
