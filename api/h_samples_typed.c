/* GET /v1/jobs/{id}/samples of a typed job (render/samples_typed.h): label by
 * category name, decoded records (csv, json, ndjson) and a PNG histogram
 * per column. format=npy stays on the untyped path (the encoded units,
 * whose layout is the job's spec.table.blocks). Kept apart from
 * h_samples.c, which calls it through two hooks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "render/report_png.h"
#include "api/samples_cache.h"
#include "render/samples_typed.h"
#include "engine/core/alloc.h"
#include "engine/data/records.h"
#include "engine/methods/snapshot.h"
#include "service/jobs/jobs.h"
#include "service/typed.h"

/* Above this many encoded values a body is streamed. */
#define TYPED_STREAM_VALUES ((size_t)1 << 16)
#define TYPED_STREAM_BLOCK  ((size_t)64 << 10)

/* label= when it is not a decimal index (a category name), else NULL. */
const char *pg_h_samples_label_name(pg_req *r)
{
    const char *s = pg_api_query(r, "label");
    if (!s || !*s) return NULL;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9') return s;
    return NULL;
}

typedef struct typed_stream {
    pg_typed_samples *st;
    pg_api_busy busy;
} typed_stream;

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    typed_stream *s = cls;
    pg_error err = {0};
    pg_api_busy_begin(&s->busy);
    ssize_t k = pg_typed_samples_read(s->st, buf, max, &err);
    pg_api_busy_end(&s->busy);
    if (k < 0) return MHD_CONTENT_READER_END_WITH_ERROR; /* the client sees a cut body */
    return k ? k : MHD_CONTENT_READER_END_OF_STREAM;
}

static void reader_free(void *cls)
{
    typed_stream *s = cls;
    pg_typed_samples_free(s->st);
    free(s);
}

static void records(pg_req *r, pg_snapshot *snap, const pg_table *t, const pg_samples_cache *kc,
                    int format, size_t n, uint64_t seed, int label)
{
    static const char *const TYPES[] = {NULL, "text/csv", "application/json",
                                        "application/x-ndjson"};
    if (pg_samples_cache_answer(r, kc, TYPES[format])) {
        if (r->status == 200) pg_jobs_count_samples(r->app->jobs, n);
        return;
    }
    pg_typed_samples *st;
    pg_error err = {0};
    if (pg_typed_samples_open(t, snap, format, n, seed, label, r->app->cpu,
                              r->app->cfg->threads_per_job, &st, &err)) {
        pg_api_problem(r, err.code == PG_ENOMEM ? 503 : 500, err.msg, NULL, NULL);
        return;
    }
    pg_jobs_count_samples(r->app->jobs, n);
    if (n * t->width <= TYPED_STREAM_VALUES) {
        char *body;
        size_t len;
        int rc = pg_typed_samples_body(st, &body, &len, &err);
        pg_typed_samples_free(st);
        if (rc)
            pg_api_problem(r, rc == PG_ENOMEM ? 503 : 500, err.msg, NULL, NULL);
        else
            pg_samples_cache_send(r, kc, TYPES[format], body, len);
        return;
    }
    typed_stream *ts = calloc(1, sizeof *ts);
    struct MHD_Response *resp =
        ts ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, TYPED_STREAM_BLOCK, reader, ts,
                                               reader_free)
           : NULL;
    if (!resp) {
        free(ts);
        pg_typed_samples_free(st);
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    ts->st = st;
    pg_api_busy_init(&ts->busy, r);
    pg_api_send_text(r, 200, TYPES[format], NULL, 0);
    r->custom = resp;
}

/* Histograms of the decoded columns (the first PG_REPORT_PAGE_MAX), from n
 * drawn rows: numbers as values, categories and booleans as bars labelled
 * by name (the schema's categories; false/true), missing values counted in
 * the caption (NaN or code k). Model output only: no
 * private rows, so no data-owner mark. */
static const char *const BOOL_NAMES[2] = {"false", "true"};

static void histograms(pg_req *r, pg_snapshot *snap, const pg_table *t, const pg_samples_cache *kc,
                       const char *job_id, size_t n, uint64_t seed, int label)
{
    if (pg_samples_cache_answer(r, kc, "image/png")) {
        if (r->status == 200) pg_jobs_count_samples(r->app->jobs, n);
        return;
    }
    pg_table *ot = NULL;
    pg_error err = {0};
    int rc = pg_typed_samples_table(t, snap, &ot, &err);
    size_t c = ot ? ot->ncols : 0;
    float *x = rc ? NULL : pg_alloc_f32(n * ot->width);
    float *cols = rc ? NULL : pg_alloc_f32(n * c);
    int64_t *labels = rc ? NULL : malloc(n * sizeof *labels);
    pg_eval_column *ec = rc ? NULL : calloc(c, sizeof *ec);
    if (!rc && (!x || !cols || !labels || !ec))
        rc = pg_error_set(&err, PG_ENOMEM, "out of memory drawing samples");
    if (!rc)
        rc = pg_typed_samples_draw(ot, snap, n, seed, label, x, labels, r->app->cpu,
                                   r->app->cfg->threads_per_job, &err);
    char *png = NULL;
    size_t len = 0;
    if (!rc) {
        for (size_t j = 0; j < c; j++) {
            const pg_table_col *col = &ot->cols[j];
            int cat = col->type == PG_COL_CATEGORICAL || col->type == PG_COL_BOOLEAN;
            ec[j].kind = cat ? PG_EVAL_CATEGORICAL : PG_EVAL_NUMERIC;
            ec[j].categories = (int32_t)(col->type == PG_COL_CATEGORICAL ? col->ncat : 2);
            ec[j].name = col->name;
            ec[j].category_names = col->type == PG_COL_CATEGORICAL ? (const char *const *)col->cats
                                   : col->type == PG_COL_BOOLEAN   ? BOOL_NAMES
                                                                   : NULL;
            for (size_t i = 0; i < n; i++) {
                pg_table_value v = {0};
                if (j == ot->label)
                    v.cat = (size_t)labels[i];
                else
                    pg_table_decode_value(ot, j, x + i * ot->width, 1, &v);
                cols[i * c + j] = v.missing ? (cat ? (float)ec[j].categories : NAN)
                                  : cat     ? (float)v.cat
                                            : (float)v.num;
            }
        }
        pg_report_png_in in;
        pg_report_png_defaults(&in);
        in.syn = cols;
        in.n_syn = n;
        in.d = c;
        in.ndim = 1;
        in.columns = ec;
        in.title = job_id;
        rc = pg_report_png_hist_page(&in, 0, c < PG_REPORT_PAGE_MAX ? c : PG_REPORT_PAGE_MAX, &png,
                                     &len, &err);
    }
    pg_free(x);
    pg_free(cols);
    free(labels);
    free(ec);
    pg_table_free(ot);
    if (rc) {
        pg_api_problem(r, rc == PG_ENOMEM ? 503 : rc == PG_EINVAL ? 400 : 500, err.msg, NULL, NULL);
        return;
    }
    pg_jobs_count_samples(r->app->jobs, n);
    pg_samples_cache_send(r, kc, "image/png", png, len);
}

/* format: 0 json, 1 csv, 2 npy, 3 png, 4 ndjson (h_samples.c's codes).
 * Returns 1 when it answered (snap released), 0 for the untyped path with
 * *has_label / *label resolved from a name. */
int pg_h_samples_typed(pg_req *r, pg_snapshot *snap, const pg_job_geometry *geo,
                       const pg_samples_cache *kc, int format, uint64_t n, uint64_t seed,
                       const char *label_name, int *has_label, uint64_t *label)
{
    const pg_table *t = geo->table;
    if (!t && (label_name || format == 4)) {
        pg_snapshot_release(snap);
        const char *msg = label_name ? "label must be a class index: label names are for jobs on "
                                       "typed datasets"
                                     : "format ndjson is for jobs on typed datasets";
        pg_api_problem(r, 400, msg, label_name ? "label" : "format", msg);
        return 1;
    }
    if (!t) return 0;
    if (label_name) {
        int64_t k = pg_typed_label_index(t, label_name);
        if (k < 0) {
            pg_snapshot_release(snap);
            char msg[300];
            snprintf(msg, sizeof msg, "label '%.100s' is not a class of column '%.100s'%s",
                     label_name, t->label != PG_TABLE_NONE ? t->cols[t->label].name : "",
                     t->label != PG_TABLE_NONE ? "" : ": the table has no label column");
            pg_api_problem(r, 400, msg, "label", msg);
            return 1;
        }
        *has_label = 1;
        *label = (uint64_t)k;
    }
    if (*has_label && pg_snapshot_num_classes(snap) == 0) {
        pg_snapshot_release(snap);
        pg_api_problem(r, 400, "this job's model does not condition on the label", "label",
                       "the model is unconditional");
        return 1;
    }
    if (format == 2) return 0;
    int lab = *has_label ? (int)*label : -1;
    size_t classes = pg_table_num_classes(t);
    if (*has_label && (uint64_t)lab >= classes) {
        pg_snapshot_release(snap);
        char msg[128];
        snprintf(msg, sizeof msg, "label must be in [0, %zu)%s", classes,
                 classes ? "" : ": the table has no label column");
        pg_api_problem(r, 400, msg, "label", msg);
        return 1;
    }
    if (format == 3)
        histograms(r, snap, t, kc, r->params[0], (size_t)n, seed, lab);
    else
        records(r, snap, t, kc,
                format == 1   ? PG_RECORDS_CSV
                : format == 0 ? PG_RECORDS_JSON
                              : PG_RECORDS_NDJSON,
                (size_t)n, seed, lab);
    pg_snapshot_release(snap);
    return 1;
}
