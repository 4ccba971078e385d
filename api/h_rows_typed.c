/* Typed uploads (api/rows_typed.h): records -> encoded rows -> upload. */
#include "api/rows_typed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/data/records.h"

/* Encoded values buffered before each appender write. */
#define BLOCK_VALUES ((size_t)1 << 16)

struct pg_rows_typed {
    const pg_table *t; /* the upload's */
    pg_records_parser *p;
    pg_datasets_upload *u; /* h_rows.c's */
    float *buf;            /* block of encoded rows */
    size_t nbuf, block_rows;
    int32_t *labels; /* one per row when the table has a label column */
    size_t nlab, labcap;
    int store_failed; /* the upload failed: a 5xx, not the client's fault */
    pg_error store_err;
};

void pg_rows_typed_free(pg_rows_typed *s)
{
    if (!s) return;
    pg_records_free(s->p);
    pg_free(s->buf);
    free(s->labels);
    free(s);
}

static int flush_rows(pg_rows_typed *s, pg_error *err)
{
    if (!s->nbuf) return PG_OK;
    uint64_t bad; /* encoded rows are not checked again: the parser did */
    int rc = pg_datasets_upload_write(s->u, s->buf, s->nbuf * s->t->width, &bad, err);
    s->nbuf = 0;
    if (rc) {
        s->store_failed = 1;
        s->store_err = *err;
    }
    return rc;
}

static int sink(void *ctx, const float *row, int64_t label, uint64_t rowno, pg_error *err)
{
    pg_rows_typed *s = ctx;
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
 * limit, 5xx when storage failed). Aborts the upload: nothing is stored. */
static void refuse(pg_req *r, pg_rows_typed *s, int rc, const pg_error *err)
{
    pg_datasets_upload_abort(s->u);
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

int pg_rows_typed_feed(pg_req *r, pg_rows_typed *s, const char *data, size_t len)
{
    pg_error err = {0};
    int rc = pg_records_feed(s->p, data, len, &err);
    if (!rc) return 0;
    refuse(r, s, rc, &err);
    return -1;
}

static int format_of(const char *mt)
{
    if (!strcmp(mt, "text/csv")) return PG_RECORDS_CSV;
    if (!strcmp(mt, "application/json")) return PG_RECORDS_JSON;
    if (!strcmp(mt, "application/x-ndjson") || !strcmp(mt, "application/jsonl") ||
        !strcmp(mt, "application/x-jsonlines"))
        return PG_RECORDS_NDJSON;
    return 0;
}

/* Frees s and returns NULL: the refusal is queued. */
static pg_rows_typed *fail(pg_rows_typed *s)
{
    pg_rows_typed_free(s);
    return NULL;
}

pg_rows_typed *pg_rows_typed_begin(pg_req *r, pg_datasets_upload *u, const char *type)
{
    pg_rows_typed *s = calloc(1, sizeof *s);
    if (!s) {
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return NULL;
    }
    s->u = u;
    s->t = pg_datasets_upload_table(u);
    int local = pg_datasets_upload_spec(u)->model == PG_PRIV_LOCAL;
    int format = format_of(type);
    if (!format) {
        pg_api_problem(r, 415,
                       "a typed dataset takes its rows by column name: Content-Type must be "
                       "text/csv (with a header row), application/json (an array of records) or "
                       "application/x-ndjson",
                       NULL, NULL);
        return fail(s);
    }
    size_t max_rows = r->app->cfg->max_rows;
    int64_t n_before = pg_datasets_upload_rows_before(u);
    if ((uint64_t)n_before >= max_rows) {
        char msg[160];
        snprintf(msg, sizeof msg, "the dataset already holds --max-rows (%zu rows)", max_rows);
        pg_api_problem(r, 413, msg, NULL, NULL);
        return fail(s);
    }
    pg_records_opts o = {.format = format,
                         .bounds = local ? PG_TABLE_BOUNDS_ALLOW : PG_TABLE_BOUNDS_REFUSE,
                         .max_rows = max_rows - (size_t)n_before};
    size_t w = s->t->width;
    s->block_rows = BLOCK_VALUES / w ? BLOCK_VALUES / w : 1;
    s->buf = pg_alloc_f32(s->block_rows * w);
    if (!s->buf) {
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return fail(s);
    }
    pg_error err = {0};
    if (pg_records_new(s->t, &o, sink, s, &s->p, &err)) {
        pg_api_problem(r, 500, err.msg, NULL, NULL);
        return fail(s);
    }
    if (pg_datasets_upload_begin(u, &err)) {
        pg_api_fail(r, &err);
        return fail(s);
    }
    return s;
}

int pg_rows_typed_finish(pg_req *r, pg_rows_typed *s, const int32_t **labels)
{
    pg_error err = {0};
    int rc = pg_records_finish(s->p, &err);
    if (!rc) rc = flush_rows(s, &err);
    if (rc) {
        refuse(r, s, rc, &err);
        return -1;
    }
    uint64_t rows = pg_records_count(s->p);
    char field[PG_FIELD_MAX];
    if (rows == 0) {
        pg_datasets_upload_abort(s->u);
        pg_api_problem(r, 422, "the upload holds no rows", "body", "holds no rows");
        return -1;
    }
    /* Within --max-rows already (the parser's bound): only the declared
     * count can differ. */
    if (pg_datasets_upload_count(s->u, rows, field, &err)) {
        pg_datasets_upload_abort(s->u);
        pg_api_problem(r, err.code == PG_ERANGE ? 413 : 422, err.msg, field[0] ? field : NULL,
                       field[0] ? err.msg : NULL);
        return -1;
    }
    *labels = s->nlab ? s->labels : NULL;
    return 0;
}
