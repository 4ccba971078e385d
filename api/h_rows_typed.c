/* Typed uploads (api/rows_typed.h): records -> encoded rows -> appender. */
#include "api/rows_typed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/data/records.h"
#include "service/typed.h"

/* Encoded values buffered before each appender write. */
#define BLOCK_VALUES ((size_t)1 << 16)

typedef struct typed_rows {
    pg_req *req;
    pg_table *t;
    pg_records_parser *p;
    pg_db_append *app;
    int local;
    float *buf; /* block of encoded rows */
    size_t nbuf, block_rows;
    int32_t *labels; /* one per row when the table has a label column */
    size_t nlab, labcap;
    int declared;       /* a matching declaration came with the rows */
    uint64_t decl_rows; /* the row count it states, 0: none */
    int store_failed;   /* the appender failed: a 5xx, not the client's fault */
    pg_error store_err;
} typed_rows;

static void typed_free(pg_req *r)
{
    typed_rows *s = r->stream;
    if (!s) return;
    pg_db_append_abort(s->app);
    pg_records_free(s->p);
    pg_table_free(s->t);
    pg_free(s->buf);
    free(s->labels);
    free(s);
    r->stream = NULL;
}

int pg_rows_typed_active(const pg_req *r)
{
    return r->stream && r->stream_free == typed_free;
}

static int flush_rows(typed_rows *s, pg_error *err)
{
    if (!s->nbuf) return PG_OK;
    int rc = pg_db_append_write(s->app, s->buf, s->nbuf * s->t->width, err);
    s->nbuf = 0;
    if (rc) {
        s->store_failed = 1;
        s->store_err = *err;
    }
    return rc;
}

static int sink(void *ctx, const float *row, int64_t label, uint64_t rowno, pg_error *err)
{
    typed_rows *s = ctx;
    (void)rowno;
    if (label >= 0) {
        if (s->nlab == s->labcap) {
            size_t cap = s->labcap ? 2 * s->labcap : 4096;
            int32_t *l = realloc(s->labels, cap * sizeof *l);
            if (!l) return pg_error_set(err, PG_ENOMEM, "out of memory holding labels");
            s->labels = l;
            s->labcap = cap;
        }
        s->labels[s->nlab++] = (int32_t)label;
    }
    memcpy(s->buf + s->nbuf * s->t->width, row, s->t->width * sizeof *row);
    if (++s->nbuf == s->block_rows) return flush_rows(s, err);
    return PG_OK;
}

/* The refusal of a failed parse: 422 naming row and column (413 for a
 * limit, 5xx when storage failed). Ends the appender: nothing is stored. */
static void refuse(pg_req *r, typed_rows *s, int rc, const pg_error *err)
{
    pg_db_append_abort(s->app);
    s->app = NULL;
    if (s->store_failed) {
        pg_api_fail(r, &s->store_err);
        return;
    }
    if (rc == PG_ENOMEM && strstr(err->msg, "-row limit")) {
        char msg[200];
        snprintf(msg, sizeof msg, "the dataset would exceed --max-rows (%zu rows)",
                 r->app->cfg->max_rows);
        pg_api_problem(r, 413, msg, NULL, NULL);
        return;
    }
    if (rc == PG_ENOMEM) {
        pg_api_problem(r, 413, err->msg, "body", err->msg);
        return;
    }
    uint64_t row = 0;
    size_t col = PG_TABLE_NONE;
    pg_records_error_at(s->p, &row, &col);
    const char *cname = col != PG_TABLE_NONE && col < s->t->ncols ? s->t->cols[col].name : NULL;
    char field[PG_TABLE_NAME_MAX + 48];
    if (row && cname)
        snprintf(field, sizeof field, "rows[%llu].%s", (unsigned long long)row, cname);
    else if (row)
        snprintf(field, sizeof field, "rows[%llu]", (unsigned long long)row);
    else if (cname)
        snprintf(field, sizeof field, "header.%s", cname);
    else
        snprintf(field, sizeof field, "body");
    pg_api_problem(r, 422, err->msg, field, err->msg);
    json_t *o = r->resp ? json_loadb(r->resp, r->resp_len, 0, NULL) : NULL;
    if (!o) return;
    json_object_set_new(o, "row", row ? json_integer((json_int_t)row) : json_null());
    json_object_set_new(o, "column", cname ? json_string(cname) : json_null());
    pg_api_send_json(r, 422, o);
    if (r->status == 422) r->resp_type = "application/problem+json";
}

static int feed(pg_req *r, const char *data, size_t len)
{
    typed_rows *s = r->stream;
    pg_error err = {0};
    int rc = pg_records_feed(s->p, data, len, &err);
    if (!rc) return 0;
    refuse(r, s, rc, &err);
    return -1;
}

static int declaration(pg_req *r, typed_rows *s, const char *meta)
{
    const char *h = pg_api_header(r, "Privgen-Declaration");
    if (!h) return 0;
    pg_datasets_diff diffs[PG_DATASETS_DIFF_MAX];
    int n;
    char field[PG_FIELD_MAX];
    pg_error err = {0};
    if (pg_typed_decl_match(meta, s->t, h, diffs, &n, &s->decl_rows, field, &err)) {
        pg_api_problem(r, 400, err.msg, field, err.msg);
        return -1;
    }
    if (n) {
        pg_rows_decl_mismatch(r, diffs, n);
        return -1;
    }
    s->declared = 1;
    return 0;
}

static int format_of(pg_req *r)
{
    const char *ct = pg_api_header(r, "Content-Type");
    char mt[64] = "";
    size_t n = ct ? strcspn(ct, "; ") : 0;
    if (n >= sizeof mt) n = sizeof mt - 1;
    for (size_t i = 0; i < n; i++)
        mt[i] = (char)(ct[i] >= 'A' && ct[i] <= 'Z' ? ct[i] + 32 : ct[i]);
    mt[n] = '\0';
    if (!strcmp(mt, "text/csv")) return PG_RECORDS_CSV;
    if (!strcmp(mt, "application/json")) return PG_RECORDS_JSON;
    if (!strcmp(mt, "application/x-ndjson") || !strcmp(mt, "application/jsonl") ||
        !strcmp(mt, "application/x-jsonlines"))
        return PG_RECORDS_NDJSON;
    return 0;
}

void pg_rows_typed_begin(pg_req *r, const char *meta, const pg_datasets_spec *spec,
                         int64_t n_before)
{
    typed_rows *s = calloc(1, sizeof *s);
    if (!s) {
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    r->stream = s;
    r->stream_free = typed_free;
    s->req = r;
    s->local = spec->model == PG_PRIV_LOCAL;
    pg_error err = {0};
    if (pg_typed_table_from_meta(meta, &s->t, &err) || !s->t) {
        pg_api_problem(r, 500, s->t ? err.msg : "stored dataset schema is missing", NULL, NULL);
        return;
    }
    if (declaration(r, s, meta)) return;
    int format = format_of(r);
    if (!format) {
        pg_api_problem(r, 415,
                       "a typed dataset takes its rows by column name: Content-Type must be "
                       "text/csv (with a header row), application/json (an array of records) or "
                       "application/x-ndjson",
                       NULL, NULL);
        return;
    }
    size_t max_rows = r->app->cfg->max_rows;
    if ((uint64_t)n_before >= max_rows) {
        char msg[160];
        snprintf(msg, sizeof msg, "the dataset already holds --max-rows (%zu rows)", max_rows);
        pg_api_problem(r, 413, msg, NULL, NULL);
        return;
    }
    pg_records_opts o = {.format = format,
                         .bounds = s->local ? PG_TABLE_BOUNDS_ALLOW : PG_TABLE_BOUNDS_REFUSE,
                         .max_rows = max_rows - (size_t)n_before};
    size_t w = s->t->width;
    s->block_rows = BLOCK_VALUES / w ? BLOCK_VALUES / w : 1;
    s->buf = pg_alloc_f32(s->block_rows * w);
    if (!s->buf) {
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    if (pg_records_new(s->t, &o, sink, s, &s->p, &err)) {
        pg_api_problem(r, 500, err.msg, NULL, NULL);
        return;
    }
    if (pg_db_append_begin(r->app->db, r->tok.tenant, r->params[0], w, &s->app, &err)) {
        pg_api_fail(r, &err);
        return;
    }
    r->feed = feed;
}

void pg_rows_typed_append(pg_req *r)
{
    typed_rows *s = r->stream;
    pg_error err = {0};
    int rc = pg_records_finish(s->p, &err);
    if (!rc) rc = flush_rows(s, &err);
    if (rc) {
        refuse(r, s, rc, &err);
        return;
    }
    uint64_t rows = pg_records_count(s->p);
    if (rows == 0) {
        pg_db_append_abort(s->app);
        s->app = NULL;
        pg_api_problem(r, 422, "the upload holds no rows", "body", "holds no rows");
        return;
    }
    if (s->decl_rows && s->decl_rows != rows) {
        pg_db_append_abort(s->app);
        s->app = NULL;
        char msg[160];
        snprintf(msg, sizeof msg, "declared %llu rows, the upload holds %llu",
                 (unsigned long long)s->decl_rows, (unsigned long long)rows);
        pg_api_problem(r, 422, msg, "declaration.rows", msg);
        return;
    }
    pg_rows_commit(r, &s->app, s->nlab ? s->labels : NULL, s->declared, s->local);
}
