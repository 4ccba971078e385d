/* POST /v1/datasets/{id}/rows: append rows, all or nothing.
 *
 * The upload itself (the dataset, its declaration, the appender) is the
 * service's (service/datasets/datasets.h); this file reads the body. Typed
 * datasets take records (api/rows_typed.h); the others take numbers:
 * NPY and raw float32 bodies are streamed: values are converted, validated
 * and written to the upload as they arrive, so memory
 * stays constant whatever the upload size (bounded by --max-rows, not
 * --max-body). JSON (and CSV/IDX) bodies are buffered up to --max-body and
 * parsed whole. Either way nothing becomes visible until the upload
 * commits; any error aborts it and leaves the dataset unchanged.
 *
 * A `Privgen-Declaration` request header (the compact JSON declaration of
 * the `privgen privatize` run that produced the rows) ties the rows to the
 * dataset's declaration: any difference is a 422 naming each field, checked
 * before the body is read. Without the header the rows are accepted and the
 * response says "declaration": "not checked".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "render/npy_stream.h"
#include "api/rows_typed.h"
#include "api/upload_gate.h"
#include "engine/core/alloc.h"
#include "engine/data/npy.h"
#include "service/datasets/datasets.h"

#include "engine/data/rows.h"

enum rows_format { FMT_JSON = 1, FMT_NPY, FMT_RAW, FMT_CSV, FMT_IDX };

typedef struct rows_state {
    int format;
    pg_datasets_upload *u;
    const pg_datasets_spec *spec; /* u's */
    pg_rows_typed *typed;         /* a typed dataset's body, NULL otherwise */
    pg_req *req;
    pg_npy_stream ns; /* streamed formats */
} rows_state;

static void rows_free(pg_req *r)
{
    rows_state *st = r->stream;
    if (!st) return;
    pg_rows_typed_free(st->typed);
    pg_datasets_upload_free(st->u);
    free(st);
    r->stream = NULL;
}

/* The first bad row, `row` counted from 0; the problem counts from 1, as
 * typed uploads (h_rows_typed.c) and every message do: field rows[k] and
 * member "row" k name the k-th row. */
static void fail_row(pg_req *r, uint64_t row, const char *msg)
{
    char field[48];
    snprintf(field, sizeof field, "rows[%llu]", (unsigned long long)row + 1);
    pg_api_problem(r, 422, msg, field, msg);
    json_t *o = r->resp ? json_loadb(r->resp, r->resp_len, 0, NULL) : NULL;
    if (!o) return;
    json_object_set_new(o, "row", json_integer((json_int_t)row + 1));
    pg_api_send_json(r, 422, o);
    if (r->status == 422) r->resp_type = "application/problem+json";
}

/* The upload's row count against its declaration's (422) and --max-rows
 * (413): 0, or the code after queuing the refusal. */
static int refuse_count(pg_req *r, rows_state *st, uint64_t rows)
{
    char field[PG_FIELD_MAX];
    pg_error err = {0};
    int rc = pg_datasets_upload_count(st->u, rows, field, &err);
    if (rc == PG_ERANGE)
        pg_api_problem(r, 413, err.msg, NULL, NULL);
    else if (rc)
        pg_api_problem(r, 422, err.msg, field, err.msg);
    return rc;
}

static void decl_mismatch(pg_req *r, const pg_datasets_diff *d, int n)
{
    char detail[400];
    snprintf(detail, sizeof detail, "the rows' declaration differs from the dataset's: %s: %s%s",
             d[0].field, d[0].message, n > 1 ? " (and more, see errors)" : "");
    pg_api_problem(r, 422, detail, NULL, NULL);
    json_t *o = r->resp ? json_loadb(r->resp, r->resp_len, 0, NULL) : NULL;
    json_t *errs = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(errs,
                              json_pack("{s:s,s:s}", "field", d[i].field, "message", d[i].message));
    if (!o) {
        json_decref(errs);
        return;
    }
    json_object_set_new(o, "errors", errs);
    pg_api_send_json(r, 422, o);
    if (r->status == 422) r->resp_type = "application/problem+json";
}

/* Checks the Privgen-Declaration header, if any; -1 after queuing an error. */
static int check_declaration(pg_req *r, rows_state *st)
{
    const char *h = pg_api_header(r, "Privgen-Declaration");
    if (!h) return 0;
    pg_datasets_diff diffs[PG_DATASETS_DIFF_MAX];
    int n;
    char field[PG_FIELD_MAX];
    pg_error err = {0};
    if (pg_datasets_upload_declare(st->u, h, diffs, &n, field, &err)) {
        pg_api_problem(r, 400, err.msg, field, err.msg);
        return -1;
    }
    if (n) {
        decl_mismatch(r, diffs, n);
        return -1;
    }
    return 0;
}

/* Checks an NPY shape against the dataset: [n, d], [n, <dataset shape>], or
 * [n, h, w] for single-channel image datasets; 1-D when d == 1. */
static int npy_shape_ok(const pg_datasets_spec *s, const pg_npy_header *h)
{
    if (h->ndim == 1) return s->d == 1;
    if (h->ndim == 2 && h->shape[1] == s->d) return 1;
    if (h->ndim - 1 == s->ndim) {
        for (int i = 0; i < s->ndim; i++)
            if (h->shape[i + 1] != (size_t)s->shape[i]) return 0;
        return 1;
    }
    return s->ndim == 3 && s->shape[0] == 1 && h->ndim == 3 && h->shape[1] == (size_t)s->shape[1] &&
           h->shape[2] == (size_t)s->shape[2];
}

static int on_header(void *ctx, const pg_npy_header *h, pg_error *err)
{
    rows_state *st = ctx;
    (void)err;
    if (!npy_shape_ok(st->spec, h)) {
        char msg[160];
        snprintf(msg, sizeof msg, "NPY shape does not match the dataset (rows of %zu values)",
                 st->spec->d);
        pg_api_problem(st->req, 422, msg, "body", msg);
        return PG_EINVAL;
    }
    return refuse_count(st->req, st, h->count / st->spec->d);
}

/* Converted values as they stream in (the upload checks and writes them,
 * in order: `first` is its count of values so far). */
static int on_values(void *ctx, const float *x, size_t count, uint64_t first, pg_error *err)
{
    rows_state *st = ctx;
    uint64_t bad;
    (void)first;
    int rc = pg_datasets_upload_write(st->u, x, count, &bad, err);
    if (rc == PG_EINVAL && bad != UINT64_MAX)
        fail_row(st->req, bad, err->msg);
    else if (rc)
        pg_api_fail(st->req, err);
    return rc;
}

static int feed_stream(pg_req *r, const char *data, size_t len)
{
    rows_state *st = r->stream;
    static const pg_npy_stream_cb cb = {on_header, on_values};
    pg_error err = {0};
    if (!pg_npy_stream_feed(&st->ns, data, len, &cb, st, &err)) return 0;
    /* Callbacks set their own response; decoder errors are malformed bodies. */
    if (!r->status) pg_api_problem(r, 400, err.msg, NULL, NULL);
    /* Free the storage now rather than after the rest of the body. */
    pg_datasets_upload_abort(st->u);
    return -1;
}

static int feed_typed(pg_req *r, const char *data, size_t len)
{
    rows_state *st = r->stream;
    return pg_rows_typed_feed(r, st->typed, data, len);
}

static const char *media_type(pg_req *r, char *buf, size_t cap)
{
    const char *ct = pg_api_header(r, "Content-Type");
    if (!ct) return "";
    size_t n = strcspn(ct, "; ");
    if (n >= cap) n = cap - 1;
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)(ct[i] >= 'A' && ct[i] <= 'Z' ? ct[i] + 32 : ct[i]);
    buf[n] = '\0';
    return buf;
}

/* Takes an upload slot (api/upload_gate.h); 0, or -1 after queuing the
 * refusal. Checked before anything else so a refused client costs nothing. */
static int take_slot(pg_req *r)
{
    if (!r->app->uploads) return 0;
    int why = pg_upload_gate_enter(r->app->uploads, r->tok.id);
    if (why == PG_UPLOAD_OK) {
        r->upload_slot = 1;
        return 0;
    }
    char msg[200];
    if (why == PG_UPLOAD_TOKEN_FULL) {
        snprintf(msg, sizeof msg,
                 "this token already has %d uploads in flight (--max-uploads-per-token); retry "
                 "when one ends",
                 r->app->cfg->max_uploads_per_token);
        pg_api_problem(r, 429, msg, NULL, NULL);
    } else {
        snprintf(msg, sizeof msg,
                 "the server has %d uploads in flight (--max-uploads); retry shortly",
                 r->app->cfg->max_uploads);
        pg_api_problem(r, 503, msg, NULL, NULL);
    }
    snprintf(r->retry_after, sizeof r->retry_after, "5");
    return -1;
}

void pg_h_rows_begin(pg_req *r)
{
    if (take_slot(r)) return;
    rows_state *st = calloc(1, sizeof *st);
    if (!st) {
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    r->stream = st;
    r->stream_free = rows_free;
    st->req = r;
    pg_npy_stream_init(&st->ns);
    int found;
    pg_error err = {0};
    int rc = pg_datasets_upload_open(r->app->db, r->tok.tenant, r->params[0], r->app->cfg->max_rows,
                                     &st->u, &found, &err);
    if (pg_api_answer_lookup(r, rc, &err, &found, "no such dataset")) return;
    st->spec = pg_datasets_upload_spec(st->u);
    if (check_declaration(r, st)) return;
    char mt[64];
    const char *type = media_type(r, mt, sizeof mt);
    if (pg_datasets_upload_table(st->u)) {
        st->typed = pg_rows_typed_begin(r, st->u, type);
        if (st->typed) r->feed = feed_typed;
        return;
    }
    if (!strcmp(type, "application/json"))
        st->format = FMT_JSON;
    else if (!strcmp(type, "application/x-npy"))
        st->format = FMT_NPY;
    else if (!strcmp(type, "application/octet-stream"))
        st->format = FMT_RAW;
    else if (!strcmp(type, "text/csv"))
        st->format = FMT_CSV;
    else if (!strcmp(type, "application/x-idx"))
        st->format = FMT_IDX;
    else {
        pg_api_problem(r, 415,
                       "Content-Type must be application/json, text/csv, application/x-npy, "
                       "application/x-idx or application/octet-stream",
                       NULL, NULL);
        return;
    }
    /* Buffered formats: refuse early what could never fit. */
    if (st->format == FMT_JSON || st->format == FMT_CSV || st->format == FMT_IDX) {
        const char *cl = pg_api_header(r, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > r->app->cfg->max_body)
            pg_api_problem(r, 413, "the request body exceeds --max-body", NULL, NULL);
        return;
    }
    if (st->format == FMT_RAW) {
        const char *xr = pg_api_header(r, "X-Rows");
        char *end;
        unsigned long long n = xr ? strtoull(xr, &end, 10) : 0;
        if (!xr || !*xr || *end || n == 0 || xr[0] == '-') {
            pg_api_problem(r, 400, "raw float32 uploads need an X-Rows header (row count >= 1)",
                           "X-Rows", "required positive integer");
            return;
        }
        if (refuse_count(r, st, n)) return;
        pg_npy_stream_init_raw(&st->ns, (size_t)n * st->spec->d);
    }
    if (pg_datasets_upload_begin(st->u, &err)) {
        pg_api_fail(r, &err);
        return;
    }
    r->feed = feed_stream;
}

/* Makes the written rows visible (durably) and answers 200 {dataset_id,
 * rows_added, n, declaration}, or stores nothing: 413 past --max-rows, 404
 * for a dataset deleted meanwhile, or the storage error. */
static void commit(pg_req *r, rows_state *st, const int32_t *labels)
{
    pg_datasets_appended a;
    int found;
    pg_error err = {0};
    int rc = pg_datasets_upload_commit(st->u, labels, &found, &a, &err);
    if (rc == PG_ERANGE)
        pg_api_problem(r, 413, err.msg, NULL, NULL);
    else if (rc)
        pg_api_fail(r, &err);
    else if (!found)
        pg_api_problem(r, 404, "no such dataset", NULL, NULL);
    else
        pg_api_send_json(r, 200,
                         json_pack("{s:s,s:I,s:I,s:s}", "dataset_id", r->params[0], "rows_added",
                                   (json_int_t)a.rows, "n", (json_int_t)a.n, "declaration",
                                   a.declaration));
}

int pg_api_parse_rows(pg_req *r, json_t *b, const pg_datasets_spec *spec, float **xo, int64_t **lo,
                      size_t *no)
{
    static const char *const ok[] = {"rows", "labels", NULL};
    float *x = NULL;
    int64_t *lab = NULL;
    if (pg_api_only_fields(r, b, NULL, ok)) return -1;
    json_t *rows = json_object_get(b, "rows"), *labels = json_object_get(b, "labels");
    size_t n = json_array_size(rows), d = spec->d, nd;
    if (!json_is_array(rows) || n == 0) {
        pg_api_problem(r, 422, "rows must be a non-empty array of arrays", "rows",
                       "must be a non-empty array of arrays");
        return -1;
    }
    if (labels && (!json_is_array(labels) || json_array_size(labels) != n)) {
        pg_api_problem(r, 422, "labels must be an array with one integer per row", "labels",
                       "must have one integer per row");
        return -1;
    }
    if (pg_size_mul(n, d, &nd)) {
        pg_api_problem(r, 413, "too many values", NULL, NULL);
        return -1;
    }
    x = pg_alloc_f32(nd);
    lab = labels ? pg_alloc(n * sizeof *lab) : NULL;
    if (!x || (labels && !lab)) {
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *row = json_array_get(rows, i);
        char msg[128];
        if (!json_is_array(row) || json_array_size(row) != d) {
            snprintf(msg, sizeof msg, "row %zu: expected an array of %zu numbers", i + 1, d);
            fail_row(r, i, msg);
            goto fail;
        }
        for (size_t j = 0; j < d; j++) {
            json_t *v = json_array_get(row, j);
            if (!json_is_number(v)) {
                snprintf(msg, sizeof msg, "row %zu, column %zu: not a number", i + 1, j + 1);
                fail_row(r, i, msg);
                goto fail;
            }
            x[i * d + j] = (float)json_number_value(v);
        }
        if (labels) {
            json_t *l = json_array_get(labels, i);
            if (!json_is_integer(l)) {
                snprintf(msg, sizeof msg, "row %zu: label is not an integer", i + 1);
                fail_row(r, i, msg);
                goto fail;
            }
            lab[i] = json_integer_value(l);
        }
    }
    uint64_t bad;
    pg_error err = {0};
    if (pg_datasets_check_values(spec, x, nd, 0, &bad, &err) ||
        (lab && pg_datasets_check_labels(spec, lab, n, &bad, &err))) {
        fail_row(r, bad, err.msg);
        goto fail;
    }
    *xo = x;
    *lo = lab;
    *no = n;
    return 0;
fail:
    pg_free(x);
    pg_free(lab);
    return -1;
}

/* Validates and stores n parsed rows (x: n*d, labels: n or NULL). */
static void store_rows(pg_req *r, rows_state *st, const float *x, const int64_t *lab, size_t n)
{
    uint64_t bad;
    pg_error err = {0};
    if (n == 0) {
        pg_api_problem(r, 422, "the upload holds no rows", "body", "holds no rows");
        return;
    }
    if (refuse_count(r, st, n)) return;
    /* Values before labels, all before storage: the first refusal is the
     * same whatever the storage does. */
    if (pg_datasets_check_values(st->spec, x, n * st->spec->d, 0, &bad, &err) ||
        (lab && pg_datasets_check_labels(st->spec, lab, n, &bad, &err))) {
        fail_row(r, bad, err.msg);
        return;
    }
    int32_t *lab32 = lab ? pg_alloc(n * sizeof *lab32) : NULL;
    if (lab && !lab32) {
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    for (size_t i = 0; lab && i < n; i++) lab32[i] = (int32_t)lab[i];
    if (pg_datasets_upload_begin(st->u, &err) ||
        pg_datasets_upload_write(st->u, x, n * st->spec->d, &bad, &err))
        pg_api_fail(r, &err); /* rows_free aborts the upload */
    else
        commit(r, st, lab32);
    pg_free(lab32);
}

/* --max-rows alone, before the rows are parsed (the declared count is held
 * to the parsed ones, after any error in them): 0, or 1 after a 413. */
static int too_many(pg_req *r, rows_state *st, uint64_t rows)
{
    size_t max = r->app->cfg->max_rows;
    if (rows <= max && (uint64_t)pg_datasets_upload_rows_before(st->u) + rows <= max) return 0;
    char msg[160];
    snprintf(msg, sizeof msg, "the dataset would exceed --max-rows (%zu rows)", max);
    pg_api_problem(r, 413, msg, NULL, NULL);
    return 1;
}

/* {"rows": [[...], ...], "labels": [...]} */
static void append_json(pg_req *r, rows_state *st)
{
    json_t *b = pg_api_body_json(r);
    if (!b) return;
    float *x = NULL;
    int64_t *lab = NULL;
    size_t n;
    /* Rows are counted before parsing values so an oversized request fails
     * without converting anything. */
    json_t *rows = json_object_get(b, "rows");
    if (!(json_is_array(rows) && too_many(r, st, json_array_size(rows))) &&
        !pg_api_parse_rows(r, b, st->spec, &x, &lab, &n)) {
        json_decref(b);
        b = NULL;
        store_rows(r, st, x, lab, n);
    }
    json_decref(b);
    pg_free(x);
    pg_free(lab);
}

/* Per-row shape of a decoded upload against the dataset: flat [d], the
 * dataset's shape, or [h, w] for a single-channel image dataset. */
static int row_shape_ok(const pg_datasets_spec *s, const pg_rows *rows)
{
    if (rows->d != s->d) return 0;
    if (rows->ndim == 1) return 1;
    if (rows->ndim == s->ndim) {
        for (int i = 0; i < s->ndim; i++)
            if (rows->shape[i] != (size_t)s->shape[i]) return 0;
        return 1;
    }
    return s->ndim == 3 && s->shape[0] == 1 && rows->ndim == 2 &&
           rows->shape[0] == (size_t)s->shape[1] && rows->shape[1] == (size_t)s->shape[2];
}

/* text/csv (optional header, `label` column) and application/x-idx (plain
 * or gzip, any IDX type; unlabeled), decoded by engine/data/rows. For IDX an
 * optional ?scale=s divides every value (255 maps uint8 pixels to [0, 1]). */
static void append_buffered(pg_req *r, rows_state *st)
{
    double scale = 1.0;
    const char *qs = st->format == FMT_IDX ? pg_api_query(r, "scale") : NULL;
    if (qs) {
        char *end;
        scale = strtod(qs, &end);
        if (!*qs || *end || !(scale > 0.0) || !(scale < 1e30)) {
            pg_api_problem(r, 400, "scale must be a positive number", "scale",
                           "must be a positive number");
            return;
        }
    }
    size_t room = r->app->cfg->max_rows - (size_t)pg_datasets_upload_rows_before(st->u);
    pg_rows_limits lim = {.max_rows = room ? room : 1,
                          .max_cols = r->app->cfg->max_dim,
                          .max_inflated = r->app->cfg->max_body};
    pg_rows rows;
    pg_error err = {0};
    int rc = pg_rows_decode(r->body ? r->body : "", r->body_len,
                            st->format == FMT_CSV ? PG_ROWS_CSV : PG_ROWS_IDX, &lim, &rows, &err);
    if (rc == PG_ENOMEM) {
        pg_api_problem(r, 413, err.msg, NULL, NULL);
        return;
    }
    if (rc) {
        pg_api_problem(r, 400, err.msg, NULL, NULL);
        return;
    }
    if (!row_shape_ok(st->spec, &rows)) {
        char msg[160];
        snprintf(msg, sizeof msg, "rows of %zu values do not match the dataset (%zu values)",
                 rows.d, st->spec->d);
        if (st->format == FMT_CSV)
            fail_row(r, 0, msg);
        else
            pg_api_problem(r, 422, msg, "body", msg);
    } else {
        if (scale != 1.0)
            for (size_t i = 0; i < rows.n * rows.d; i++)
                rows.x[i] = (float)((double)rows.x[i] / scale);
        store_rows(r, st, rows.x, rows.labels, rows.n);
    }
    pg_rows_free(&rows);
}

void pg_h_rows_append(pg_req *r)
{
    rows_state *st = r->stream;
    if (st->typed) {
        const int32_t *labels;
        if (!pg_rows_typed_finish(r, st->typed, &labels)) commit(r, st, labels);
        return;
    }
    if (st->format == FMT_JSON) {
        append_json(r, st);
        return;
    }
    if (st->format == FMT_CSV || st->format == FMT_IDX) {
        append_buffered(r, st);
        return;
    }
    if (!pg_npy_stream_complete(&st->ns)) {
        pg_api_problem(r, 400,
                       st->format == FMT_RAW
                           ? "the body length does not match X-Rows times the row width"
                           : "the NPY body is truncated",
                       NULL, NULL);
        return;
    }
    if (st->ns.h.count == 0) {
        pg_api_problem(r, 422, "the upload holds no rows", "body", "holds no rows");
        return;
    }
    commit(r, st, NULL);
}
