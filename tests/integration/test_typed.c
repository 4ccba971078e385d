/* Typed tables end to end against a live privgend: a mixed schema
 * (continuous, integer, categorical, boolean, nullable, label) on POST
 * /v1/datasets and in the views (checked against openapi.yaml); CSV (columns
 * in another order, quoted fields), JSON records and NDJSON uploads; hostile
 * uploads answered 422 naming row and column with nothing stored (the row
 * count is read back); a job of every method trained through HTTP on the
 * table, whose CSV, JSON and NDJSON samples are read back with the engine's
 * own strict record parser under PG_TABLE_BOUNDS_REFUSE (every category from
 * the list, every integer whole and in range, booleans, missing values only
 * in nullable columns) plus a hand check of the header; label by category
 * name; the encoder map in the job's spec and decoding after the dataset is
 * deleted and the server restarted; a local typed dataset privatized here
 * with the engine's per-column LDP, whose declaration is checked at creation
 * (a too-high keep probability is refused) and on upload (a different one is
 * refused, nothing stored), trained on by entropic_gan. */
#include <math.h>
#include <png.h>

#include "engine/core/rng.h"
#include "engine/data/records.h"
#include "engine/data/table.h"
#include "engine/data/table_ldp.h"
#include "integration/isuite.h"
#include "support/pg_http_test.h"
#include "support/pg_table_test.h"
#include "support/pg_test.h"

static pg_srv srv;
static pg_srv *cur = &srv; /* the server requests go to */
static pg_oa oa;

static void start_shared(void)
{
    static const char *const extra[] = {"--workers", "2", "--max-samples", "20000", NULL};
    pg_isuite_start(&srv, &oa, extra);
}

static void stop_shared(void)
{
    pg_isuite_stop(&srv, &oa);
}

static void conform(const pg_resp *r, const char *schema)
{
    pg_isuite_conform(&oa, r, schema);
}

static void req(const char *method, const char *path, const char *body, pg_resp *r)
{
    pg_http(cur, method, path, cur->admin, body ? "application/json" : NULL, body,
            body ? strlen(body) : 0, NULL, r);
}

static const char *SCHEMA =
    "\"columns\":["
    "{\"name\":\"age\",\"type\":\"integer\",\"min\":18,\"max\":99,\"nullable\":true},"
    "{\"name\":\"income\",\"type\":\"continuous\",\"min\":0,\"max\":1500},"
    "{\"name\":\"job\",\"type\":\"categorical\",\"categories\":[\"fixed\",\"free, lance\","
    "\"others\"]},"
    "{\"name\":\"owner\",\"type\":\"boolean\"},"
    "{\"name\":\"status\",\"type\":\"categorical\",\"categories\":[\"good\",\"bad\"]}],"
    "\"label\":\"status\"";
#define WIDTH 7 /* age 1+1, income 1, job 3, owner 1; the label has no units */

static pg_table *schema_table(void)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "{%s}", SCHEMA);
    return pg_test_table(buf);
}

static long long rows_of(const char *ds)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%s", ds);
    pg_resp r;
    req("GET", path, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    long long n = json_integer_value(json_object_get(r.json, "n"));
    pg_resp_free(&r);
    return n;
}

/* A deterministic row i of the clean table, as CSV in the order
 * status,owner,job,income,age (not the schema's). */
static int csv_row(char *b, size_t cap, unsigned i)
{
    static const char *const jobs[] = {"fixed", "\"free, lance\"", "others"};
    unsigned h = i * 2654435761u;
    char age[16] = "";
    if (h % 10) snprintf(age, sizeof age, "%u", 18 + (h >> 8) % 82);
    return snprintf(b, cap, "%s,%s,%s,%.2f,%s\n", (h >> 4) % 10 < 7 ? "good" : "bad",
                    (h >> 12) & 1 ? "true" : "false", jobs[(h >> 16) % 3],
                    (double)((h >> 3) % 150000) / 100.0, age);
}

static char *clean_csv(unsigned first, unsigned n, size_t *len)
{
    size_t cap = 64 + (size_t)n * 64, k = 0;
    char *b = malloc(cap);
    k += (size_t)snprintf(b, cap, "status,owner,job,income,age\n");
    for (unsigned i = first; i < first + n; i++) k += (size_t)csv_row(b + k, cap - k, i);
    *len = k;
    return b;
}

static void make_central(char ds[64])
{
    char body[2048];
    snprintf(body, sizeof body,
             "{\"name\":\"mixed\",%s,\"privacy\":{\"model\":\"central\",\"budget\":"
             "{\"epsilon\":50,\"delta\":1e-5}}}",
             SCHEMA);
    pg_resp r;
    req("POST", "/v1/datasets", body, &r);
    ck_assert_msg(r.status == 201, "%s", r.body);
    conform(&r, "Dataset");
    snprintf(ds, 64, "%s", json_string_value(json_object_get(r.json, "id")));
    pg_resp_free(&r);
}

static void upload(const char *ds, const char *ctype, const char *body, size_t len,
                   const char *decl, pg_resp *r)
{
    char path[128], h[4096];
    snprintf(path, sizeof path, "/v1/datasets/%s/rows", ds);
    const char *headers[] = {h, NULL};
    if (decl) snprintf(h, sizeof h, "Privgen-Declaration: %s", decl);
    pg_http(cur, "POST", path, cur->admin, ctype, body, len, decl ? headers : NULL, r);
}

/* A central dataset of the schema holding clean rows 0 .. n - 1. */
static void make_loaded(unsigned n, char ds[64])
{
    make_central(ds);
    size_t len;
    char *csv = clean_csv(0, n, &len);
    pg_test_rows_post(cur, cur->admin, ds, "text/csv", csv, len);
    free(csv);
}

START_TEST(schema_in_the_views)
{
    char ds[64], path[128];
    make_central(ds);
    snprintf(path, sizeof path, "/v1/datasets/%s", ds);
    pg_resp r;
    req("GET", path, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    conform(&r, "Dataset");
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "d")), WIDTH);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "num_classes")), 2);
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(r.json, "shape"), 0)),
                     WIDTH);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "label")), "status");
    json_t *cols = json_object_get(r.json, "columns");
    ck_assert_int_eq(json_array_size(cols), 5);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(cols, 2), "type")),
                     "categorical");
    json_t *enc = json_object_get(r.json, "encoding");
    ck_assert_int_eq(json_integer_value(json_object_get(enc, "width")), WIDTH);
    ck_assert_int_eq(json_array_size(json_object_get(enc, "blocks")), 4);
    pg_resp_free(&r);
    req("GET", "/v1/datasets?limit=500", NULL, &r);
    conform(&r, "DatasetList");
    int seen = 0;
    json_t *items = json_object_get(r.json, "items");
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *it = json_array_get(items, i);
        if (strcmp(json_string_value(json_object_get(it, "id")), ds)) continue;
        seen = json_array_size(json_object_get(it, "columns")) == 5;
    }
    ck_assert(seen);
    pg_resp_free(&r);

    /* hostile schemas: the column is named; shape is derived */
    static const char *const bad[][2] = {
        {"{\"name\":\"x\",\"columns\":[{\"name\":\"a\",\"type\":\"integer\",\"min\":5,\"max\":1}],"
         "\"privacy\":{\"model\":\"public\"}}",
         "columns"},
        {"{\"name\":\"x\",\"columns\":[{\"name\":\"a\",\"type\":\"boolean\"}],\"label\":\"b\","
         "\"privacy\":{\"model\":\"public\"}}",
         NULL},
        {"{\"name\":\"x\",\"shape\":[3],\"columns\":[{\"name\":\"a\",\"type\":\"boolean\"}],"
         "\"privacy\":{\"model\":\"public\"}}",
         "shape"},
        {"{\"name\":\"x\",\"columns\":[{\"name\":\"a\",\"type\":\"boolean\"}],"
         "\"privacy\":{\"model\":\"local\",\"mechanism\":\"laplace\",\"epsilon\":1,"
         "\"sensitivity\":2,\"noise_scale\":2}}",
         "privacy"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        req("POST", "/v1/datasets", bad[i][0], &r);
        ck_assert_msg(r.status == 422, "%zu: %s", i, r.body);
        conform(&r, "Problem");
        if (bad[i][1])
            ck_assert_str_eq(json_string_value(json_object_get(
                                 json_array_get(json_object_get(r.json, "errors"), 0), "field")),
                             bad[i][1]);
        if (i == 0) ck_assert_ptr_nonnull(strstr(r.body, "column 'a'"));
        pg_resp_free(&r);
    }
}
END_TEST

START_TEST(uploads_and_hostile_uploads)
{
    char ds[64];
    make_central(ds);
    size_t len;
    char *csv = clean_csv(0, 300, &len);
    pg_resp r;
    upload(ds, "text/csv", csv, len, NULL, &r);
    free(csv);
    ck_assert_msg(r.status == 200, "%s", r.body);
    conform(&r, "RowsAppended");
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "rows_added")), 300);
    pg_resp_free(&r);
    static const char *json_rows =
        "[{\"age\":41,\"income\":1500,\"job\":\"others\",\"owner\":false,\"status\":\"bad\"},"
        "{\"age\":null,\"income\":0,\"job\":\"free, lance\",\"owner\":true,\"status\":\"good\"}]";
    upload(ds, "application/json", json_rows, strlen(json_rows), NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    pg_resp_free(&r);
    static const char *nd =
        "{\"status\":\"good\",\"age\":18,\"income\":12.5,\"job\":\"fixed\",\"owner\":true}\n"
        "{\"status\":\"bad\",\"age\":99,\"income\":1499.5,\"job\":\"others\",\"owner\":false}\n";
    upload(ds, "application/x-ndjson", nd, strlen(nd), NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "n")), 304);
    pg_resp_free(&r);

    /* Hostile uploads: {content type, body, row, column}. Each is refused
     * whole: the good rows before the bad one are not stored either. */
    static const struct {
        const char *ctype, *body;
        long row;
        const char *col;
    } bad[] = {
        {"text/csv", "status,owner,job,income\ngood,true,fixed,1\n", 0, "age"}, /* missing */
        {"text/csv", "status,owner,job,income,age\ngood,true,fixed,1,20\nbad,true,pilot,1,20\n", 2,
         "job"},
        {"text/csv", "status,owner,job,income,age\ngood,true,fixed,1,20\ngood,true,fixed,1501,20\n",
         2, "income"},
        {"text/csv", "status,owner,job,income,age\ngood,true,fixed,1,20.5\n", 1, "age"},
        {"text/csv", "status,owner,job,income,age\ngood,true,fixed,,20\n", 1, "income"},
        {"text/csv", "status,owner,job,income,age\ngood,maybe,fixed,1,20\n", 1, "owner"},
        {"text/csv", "status,owner,job,income,age\ngood,true,fixed,1,20\ngood,true,\"fixed,1,20\n",
         2, NULL},
        {"text/csv", "status,owner,job,income,age\ngood,true,fixed,1\n", 1, NULL},
        {"text/csv", "status,owner,job,income,age\nugly,true,fixed,1,20\n", 1, "status"},
        {"application/json",
         "[{\"age\":20,\"income\":1,\"job\":\"fixed\",\"owner\":true,\"status\":\"good\"},"
         "{\"age\":20,\"income\":1,\"job\":\"fixed\",\"owner\":null,\"status\":\"good\"}]",
         2, "owner"},
        {"application/json",
         "[{\"age\":20,\"income\":1,\"job\":\"fixed\",\"owner\":true,\"status\":\"good\"},"
         "{\"age\":17,\"income\":1,\"job\":\"fixed\",\"owner\":true,\"status\":\"good\"}]",
         2, "age"},
        {"application/x-ndjson",
         "{\"age\":20,\"income\":1,\"job\":\"fixed\",\"owner\":true,\"status\":\"good\"}\n"
         "{\"age\":20,\"income\":\"1\",\"job\":\"fixed\",\"owner\":true,\"status\":\"good\"}\n",
         2, "income"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        upload(ds, bad[i].ctype, bad[i].body, strlen(bad[i].body), NULL, &r);
        ck_assert_msg(r.status == 422, "%zu: %ld %s", i, r.status, r.body);
        ck_assert_str_eq(r.ctype, "application/problem+json");
        conform(&r, "Problem");
        json_t *row = json_object_get(r.json, "row"), *col = json_object_get(r.json, "column");
        if (bad[i].row)
            ck_assert_msg(json_integer_value(row) == bad[i].row, "%zu: %s", i, r.body);
        else
            ck_assert_msg(json_is_null(row), "%zu: %s", i, r.body);
        if (bad[i].col) {
            ck_assert_msg(json_is_string(col) && !strcmp(json_string_value(col), bad[i].col),
                          "%zu: %s", i, r.body);
            ck_assert_msg(
                strstr(json_string_value(json_object_get(r.json, "detail")), bad[i].col) != NULL,
                "%zu: %s", i, r.body);
        }
        pg_resp_free(&r);
        ck_assert_int_eq(rows_of(ds), 304);
    }
    /* a bad value in the last row of a large CSV: nothing of it stays */
    csv = clean_csv(1000, 20000, &len);
    char *big = malloc(len + 64);
    memcpy(big, csv, len);
    len += (size_t)snprintf(big + len, 64, "good,true,fixed,7,100\n");
    upload(ds, "text/csv", big, len, NULL, &r);
    ck_assert_msg(r.status == 422, "%s", r.body);
    ck_assert_int_eq(json_integer_value(json_object_get(r.json, "row")), 20001);
    pg_resp_free(&r);
    free(csv);
    free(big);
    ck_assert_int_eq(rows_of(ds), 304);
    /* encoded floats are refused: rows go in by column name */
    upload(ds, "application/x-npy", "\x93NUMPY", 6, NULL, &r);
    ck_assert_int_eq(r.status, 415);
    pg_resp_free(&r);
    upload(ds, "application/json", "{\"rows\":[[0,0,0,0,0,0,0]]}", 26, NULL, &r);
    ck_assert_int_eq(r.status, 422);
    pg_resp_free(&r);
    /* a declaration is for local data */
    upload(ds, "text/csv", "status,owner,job,income,age\ngood,true,fixed,1,20\n", 49,
           "{\"model\":\"local\",\"mechanism\":\"per_column\",\"epsilon\":1,\"columns\":[]}", &r);
    ck_assert_int_eq(r.status, 422);
    pg_resp_free(&r);
    ck_assert_int_eq(rows_of(ds), 304);
}
END_TEST

static void wait_done(const char *job)
{
    json_decref(pg_test_job_wait(cur, job, "succeeded", 0, 100, 1200));
}

static void submit(const char *body, char job[64])
{
    pg_test_post_id(cur, cur->admin, "/v1/jobs", body, 202, job, NULL);
}

/* Reads samples back with the strict parser (bounds refused): every value is
 * valid under the schema. Returns n; labels (n) when the table has one. */
static size_t read_back(const pg_table *t, int format, const pg_resp *r, int64_t **labels)
{
    return pg_test_records_read(t, format, r->body, r->len, labels);
}

/* A seeded typed body is cacheable: the same bytes and ETag again (from
 * the body cache), and 304 without a body for If-None-Match. */
static void check_cacheable(const char *path)
{
    pg_resp a, b, c;
    req("GET", path, NULL, &a);
    req("GET", path, NULL, &b);
    ck_assert_msg(a.status == 200 && b.status == 200, "%s", a.body);
    ck_assert_msg(a.etag[0] == '"', "%s: no ETag", path);
    ck_assert_str_eq(a.etag, b.etag);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert(!memcmp(a.body, b.body, a.len));
    char inm[160];
    snprintf(inm, sizeof inm, "If-None-Match: %s", a.etag);
    const char *const h[] = {inm, NULL};
    pg_http(cur, "GET", path, cur->admin, NULL, NULL, 0, h, &c);
    ck_assert_int_eq(c.status, 304);
    ck_assert_uint_eq(c.len, 0);
    pg_resp_free(&a);
    pg_resp_free(&b);
    pg_resp_free(&c);
}

static void check_samples(const char *job, const pg_table *t, int conditional, int stream)
{
    char path[192];
    pg_resp r;
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=csv&n=500&seed=4", job);
    req("GET", path, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(r.ctype, "text/csv");
    const char *head = conditional ? "age,income,job,owner,status\n" : "age,income,job,owner\n";
    ck_assert_msg(!strncmp(r.body, head, strlen(head)), "%.200s", r.body);
    /* unconditional models give no label column: read with that table */
    pg_table *u = NULL;
    if (!conditional) {
        json_t *m = pg_table_to_json(t);
        json_array_remove(json_object_get(m, "columns"), t->label);
        json_object_del(m, "label");
        json_object_del(m, "width");
        json_object_del(m, "blocks");
        ck_assert_int_eq(pg_table_from_json(m, &u, NULL), PG_OK);
        json_decref(m);
    }
    const pg_table *rt = conditional ? t : u;
    int64_t *labels = NULL;
    ck_assert_uint_eq(read_back(rt, PG_RECORDS_CSV, &r, &labels), 500);
    if (conditional) {
        /* Generators draw classes from a DP count of the label,
         * the particle flows balance them: every class is valid and shows. */
        size_t cnt[2] = {0, 0};
        for (size_t i = 0; i < 500; i++) {
            ck_assert(labels[i] == 0 || labels[i] == 1);
            cnt[labels[i]]++;
        }
        ck_assert(cnt[0] > 0 && cnt[1] > 0);
    }
    free(labels);
    labels = NULL;
    /* the same rows as JSON records and NDJSON (same seed) */
    char *csv = r.body;
    r.body = NULL;
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=json&n=500&seed=4", job);
    req("GET", path, NULL, &r);
    ck_assert_msg(r.status == 200 && json_is_array(r.json), "%.300s", r.body);
    ck_assert_uint_eq(json_array_size(r.json), 500);
    ck_assert_uint_eq(read_back(rt, PG_RECORDS_JSON, &r, &labels), 500);
    free(labels);
    labels = NULL;
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=ndjson&n=500&seed=4", job);
    req("GET", path, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_uint_eq(read_back(rt, PG_RECORDS_NDJSON, &r, &labels), 500);
    free(labels);
    labels = NULL;
    pg_resp_free(&r);
    /* a streamed body (n * width above 64 Ki values) gives the same first
     * rows (generators only: flows replay per class and are slow to draw) */
    if (stream) {
        snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=csv&n=9400&seed=4", job);
        req("GET", path, NULL, &r);
        ck_assert_msg(r.status == 200, "%ld %.300s", r.status, r.body);
        ck_assert_uint_eq(read_back(rt, PG_RECORDS_CSV, &r, &labels), 9400);
        free(labels);
        labels = NULL;
        ck_assert(!strncmp(r.body, csv, strlen(csv))); /* same block rule, same seed */
        pg_resp_free(&r);
    }
    free(csv);
    if (conditional) { /* label by name: every row has it */
        snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=csv&n=200&label=bad", job);
        req("GET", path, NULL, &r);
        ck_assert_msg(r.status == 200, "%s", r.body);
        ck_assert_uint_eq(read_back(t, PG_RECORDS_CSV, &r, &labels), 200);
        for (size_t i = 0; i < 200; i++) ck_assert_int_eq(labels[i], 1);
        free(labels);
        labels = NULL;
        pg_resp_free(&r);
        snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=npy&n=3&label=good", job);
        req("GET", path, NULL, &r);
        ck_assert_int_eq(r.status, 200);
        pg_resp_free(&r);
    }
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=csv&n=2&label=ugly", job);
    req("GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 400);
    pg_resp_free(&r);
    /* a histogram per column */
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=png&n=300&seed=2", job);
    req("GET", path, NULL, &r);
    ck_assert_msg(r.status == 200 && !strcmp(r.ctype, "image/png"), "%s", r.body);
    ck_assert(r.len > 8 && !memcmp(r.body, "\x89PNG", 4));
    pg_resp_free(&r);
    check_cacheable(path);
    static const char *const fmts[] = {"csv", "json", "ndjson"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=%s&n=50&seed=8", job, fmts[i]);
        check_cacheable(path);
    }
    pg_table_free(u);
}

START_TEST(every_central_method_serves_valid_records)
{
    char ds[64];
    make_loaded(1500, ds);
    pg_resp r;
    pg_table *t = schema_table();
    static const struct {
        const char *fmt;
        int conditional;
    } jobs[] = {
        {"{\"dataset_id\":\"%s\",\"method\":\"dp_sinkhorn\",\"model\":{\"hidden\":[16],"
         "\"conditional\":true},\"train\":{\"steps\":40,\"batch_size\":20},\"ot\":{\"max_iter\":"
         "20},\"privacy\":{\"noise_multiplier\":2},\"seed\":3}",
         1},
        /* conditional left out: the default on a labelled table */
        {"{\"dataset_id\":\"%s\",\"method\":\"dp_sinkhorn\",\"model\":{\"hidden\":[16]},"
         "\"train\":{\"steps\":20,\"batch_size\":20},\"ot\":{"
         "\"max_iter\":20},\"privacy\":{\"noise_multiplier\":2},\"seed\":3}",
         1},
        {"{\"dataset_id\":\"%s\",\"method\":\"swd_flow\",\"privacy\":{\"noise_multiplier\":5},"
         "\"flow\":{\"steps\":20,\"particles\":100},\"seed\":3}",
         1},
        {"{\"dataset_id\":\"%s\",\"method\":\"swd_flow_r\",\"privacy\":{\"noise_multiplier\":5},"
         "\"flow\":{\"steps\":20,\"particles\":100},\"seed\":3}",
         1},
        {"{\"dataset_id\":\"%s\",\"method\":\"swd_gen\",\"privacy\":{\"noise_multiplier\":5},"
         "\"train\":{\"steps\":20},\"seed\":3}",
         1},
    };
    /* An unconditional generator would serve rows without the label: refused. */
    {
        char body[1024];
        snprintf(body, sizeof body,
                 "{\"dataset_id\":\"%s\",\"method\":\"dp_sinkhorn\",\"model\":{\"hidden\":[16],"
                 "\"conditional\":false},\"train\":{\"steps\":20,\"batch_size\":20},"
                 "\"privacy\":{\"noise_multiplier\":2},\"seed\":3}",
                 ds);
        req("POST", "/v1/jobs", body, &r);
        ck_assert_msg(r.status == 422, "%s", r.body);
        ck_assert_ptr_nonnull(strstr(r.body, "model.conditional"));
        pg_resp_free(&r);
    }
    char ids[5][64];
    for (size_t i = 0; i < 5; i++) {
        char body[1024];
        snprintf(body, sizeof body, jobs[i].fmt, ds);
        submit(body, ids[i]);
    }
    for (size_t i = 0; i < 5; i++) {
        wait_done(ids[i]);
        check_samples(ids[i], t, jobs[i].conditional, i == 0 || i == 4);
    }
    /* the job carries its encoder map */
    char path[160];
    snprintf(path, sizeof path, "/v1/jobs/%s", ids[0]);
    req("GET", path, NULL, &r);
    conform(&r, "Job");
    json_t *map = json_object_get(json_object_get(r.json, "spec"), "table");
    ck_assert_int_eq(json_integer_value(json_object_get(map, "width")), WIDTH);
    ck_assert_str_eq(json_string_value(json_object_get(map, "label")), "status");
    pg_resp_free(&r);
    /* decoding outlives the dataset */
    snprintf(path, sizeof path, "/v1/datasets/%s", ds);
    req("DELETE", path, NULL, &r);
    ck_assert_msg(r.status == 204, "%s", r.body);
    pg_resp_free(&r);
    check_samples(ids[0], t, 1, 0);
    pg_table_free(t);
}
END_TEST

typedef struct text_sink {
    char *b;
    size_t k, cap;
} text_sink;

static int sink_write(void *ctx, const void *buf, size_t l)
{
    text_sink *s = ctx;
    while (s->k + l > s->cap) {
        s->cap *= 2;
        s->b = realloc(s->b, s->cap);
    }
    memcpy(s->b + s->k, buf, l);
    s->k += l;
    return 0;
}

/* The clean rows, encoded, privatized here with the engine's per-column LDP
 * at a total epsilon, and written back as CSV (what `privgen privatize
 * --schema` does on the owner's machine). */
static char *privatized(const pg_table *t, double eps, unsigned n, char **decl, size_t *len)
{
    size_t clen;
    char *csv = clean_csv(0, n, &clen);
    pg_records_opts o = {.format = PG_RECORDS_CSV, .bounds = PG_TABLE_BOUNDS_REFUSE};
    float *x;
    int64_t *labels;
    size_t rows;
    ck_assert_int_eq(pg_records_parse(t, &o, csv, clen, &x, &labels, &rows, NULL), PG_OK);
    free(csv);
    pg_ldp_plan plan;
    ck_assert_int_eq(pg_ldp_plan_make(t, PG_LDP_LAPLACE, eps, 0.0, &plan, NULL), PG_OK);
    pg_rng rng;
    ck_assert_int_eq(pg_rng_secure(&rng, NULL), PG_OK);
    ck_assert_int_eq(pg_ldp_apply(&rng, t, &plan, x, labels, rows, NULL), PG_OK);
    json_t *d = pg_ldp_declaration(t, &plan, rows);
    *decl = json_dumps(d, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(d);
    pg_ldp_plan_free(&plan);
    text_sink s = {malloc(1 << 16), 0, 1 << 16};
    ck_assert_int_eq(pg_records_write(t, PG_RECORDS_CSV, x, labels, rows, 0, sink_write, &s, NULL),
                     PG_OK);
    free(x);
    free(labels);
    *len = s.k;
    return s.b;
}

START_TEST(local_typed_dataset_with_declaration)
{
    pg_table *t = schema_table();
    char *decl;
    size_t len;
    char *csv = privatized(t, 10.0, 1200, &decl, &len);
    json_t *d = json_loads(decl, 0, NULL);
    json_t *good = json_deep_copy(d);
    /* a keep probability above the one epsilon allows is refused, naming it */
    json_object_set_new(json_array_get(json_object_get(d, "columns"), 2), "keep_probability",
                        json_real(0.99));
    char *bad_txt = json_dumps(d, JSON_COMPACT);
    char body[8192];
    snprintf(body, sizeof body, "{\"name\":\"ldp\",%s,\"privacy\":%s}", SCHEMA, bad_txt);
    pg_resp r;
    req("POST", "/v1/datasets", body, &r);
    ck_assert_msg(r.status == 422, "%ld %zu %s", r.status, strlen(body), r.body);
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(r.json, "errors"), 0), "field")),
                     "privacy.columns[2].keep_probability");
    pg_resp_free(&r);
    free(bad_txt);
    snprintf(body, sizeof body, "{\"name\":\"ldp\",%s,\"privacy\":%s}", SCHEMA, decl);
    req("POST", "/v1/datasets", body, &r);
    ck_assert_msg(r.status == 201, "%s", r.body);
    conform(&r, "Dataset");
    json_t *rep = json_object_get(r.json, "privacy_report");
    ck_assert_str_eq(json_string_value(json_object_get(rep, "mechanism")), "per_column");
    ck_assert_double_eq_tol(json_number_value(json_object_get(rep, "epsilon_ldp")), 10.0, 1e-12);
    char ds[64];
    snprintf(ds, sizeof ds, "%s", json_string_value(json_object_get(r.json, "id")));
    pg_resp_free(&r);
    /* another declaration on upload: refused, nothing stored */
    json_t *other = json_deep_copy(good);
    json_t *inc = json_array_get(json_object_get(other, "columns"), 1);
    json_object_set_new(inc, "noise_scale",
                        json_real(2.0 * json_number_value(json_object_get(inc, "noise_scale"))));
    char *other_txt = json_dumps(other, JSON_COMPACT | JSON_REAL_PRECISION(17));
    upload(ds, "text/csv", csv, len, other_txt, &r);
    ck_assert_msg(r.status == 422, "%s", r.body);
    ck_assert_ptr_nonnull(strstr(r.body, "declaration.columns[1].noise_scale"));
    pg_resp_free(&r);
    ck_assert_int_eq(rows_of(ds), 0);
    /* the right one: stored, noisy values out of bounds kept */
    upload(ds, "text/csv", csv, len, decl, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "declaration")), "matched");
    pg_resp_free(&r);
    ck_assert_int_eq(rows_of(ds), 1200);
    char job[64];
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\",\"model\":{\"hidden\":[16]},"
             "\"train\":{\"steps\":30,\"batch_size\":32},"
             "\"ot\":{\"max_iter\":30},\"seed\":7}",
             ds);
    submit(body, job);
    wait_done(job);
    /* the job's privacy: the declared total, also as the shuffle report's eps0 */
    char jpath[128];
    snprintf(jpath, sizeof jpath, "/v1/jobs/%s", job);
    req("GET", jpath, NULL, &r);
    json_t *pr = json_object_get(r.json, "privacy");
    ck_assert_double_eq_tol(json_number_value(json_object_get(pr, "epsilon")), 10.0, 1e-9);
    ck_assert_double_eq_tol(json_number_value(json_object_get(pr, "shuffle_epsilon_ldp")), 10.0,
                            1e-9);
    ck_assert(!json_is_true(json_object_get(pr, "charges")));
    pg_resp_free(&r);
    /* conditional by default: the privatized labels are read through their
     * randomized-response channel (entropic_gan.c) */
    check_samples(job, t, 1, 1);
    free(other_txt);
    json_decref(other);
    json_decref(good);
    json_decref(d);
    free(decl);
    free(csv);
    pg_table_free(t);
}
END_TEST

/* A restart rebuilds the job's table: from the dataset while it exists,
 * from the map in the job's spec after it is deleted (own server: the
 * shared one must not restart under the other tests). */
START_TEST(decoding_survives_restart)
{
    static const char *const extra[] = {"--workers", "1", "--max-samples", "20000", NULL};
    pg_srv own;
    pg_test_srv_start(&own, extra);
    cur = &own;
    char ds[64], job[64], body[1024], path[128];
    make_loaded(600, ds);
    pg_resp r;
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"swd_flow\",\"privacy\":"
             "{\"noise_multiplier\":5},\"flow\":{\"steps\":10,\"particles\":100},\"seed\":3}",
             ds);
    submit(body, job);
    wait_done(job);
    pg_table *t = schema_table();
    ck_assert_int_eq(pg_srv_stop(&own), 0);
    ck_assert_int_eq(pg_srv_start(&own, extra), 0);
    check_samples(job, t, 1, 0);
    snprintf(path, sizeof path, "/v1/datasets/%s", ds);
    req("DELETE", path, NULL, &r);
    ck_assert_msg(r.status == 204, "%s", r.body);
    pg_resp_free(&r);
    ck_assert_int_eq(pg_srv_stop(&own), 0);
    ck_assert_int_eq(pg_srv_start(&own, extra), 0);
    check_samples(job, t, 1, 0);
    pg_table_free(t);
    pg_srv_cleanup(&own);
    cur = &srv;
}
END_TEST

/* The body of a public typed dataset of 16 categorical columns x 4096
 * categories of `len` bytes each. */
static char *wide_body(size_t len)
{
    size_t cap = 256 + 16 * (64 + 4096 * (len + 4));
    char *b = malloc(cap), *p = b;
    p += sprintf(p, "{\"name\":\"wide\",\"privacy\":{\"model\":\"public\"},\"columns\":[");
    for (int c = 0; c < 16; c++) {
        p += sprintf(p, "%s{\"name\":\"c%d\",\"type\":\"categorical\",\"categories\":[",
                     c ? "," : "", c);
        for (int i = 0; i < 4096; i++) {
            p += sprintf(p, "%s\"", i ? "," : "");
            for (size_t j = 0; j + 8 < len; j++) *p++ = 'k';
            p += sprintf(p, "%08x\"", i);
        }
        p += sprintf(p, "]}");
    }
    sprintf(p, "]}");
    return b;
}

/* The 16 x 4096 x 128-byte schema (8.6 MB) took 12.9 s
 * of CPU to create; it is now refused at once by the documented size limit
 * (413 naming it), while 16 x 4096 short categories are created, and the
 * views serve the stored encoding. */
START_TEST(schema_size_limit_and_wide_schemas)
{
    char *big = wide_body(128);
    pg_resp r;
    req("POST", "/v1/datasets", big, &r);
    ck_assert_msg(r.status == 413, "%ld: %.300s", (long)r.status, r.body);
    conform(&r, "Problem");
    ck_assert_ptr_nonnull(strstr(r.body, "1048576 bytes"));
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(r.json, "errors"), 0), "field")),
                     "columns");
    pg_resp_free(&r);
    free(big);
    char *wide = wide_body(10);
    req("POST", "/v1/datasets", wide, &r);
    free(wide);
    ck_assert_msg(r.status == 201, "%ld: %.300s", (long)r.status, r.body);
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%s",
             json_string_value(json_object_get(r.json, "id")));
    json_t *enc = json_incref(json_object_get(r.json, "encoding"));
    pg_resp_free(&r);
    ck_assert_int_eq(json_integer_value(json_object_get(enc, "width")), 16 * 4096);
    req("GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert(json_equal(enc, json_object_get(r.json, "encoding")));
    ck_assert_int_eq(json_array_size(json_object_get(r.json, "columns")), 16);
    pg_resp_free(&r);
    json_decref(enc);
    req("DELETE", path, NULL, &r);
    ck_assert_int_eq(r.status, 204);
    pg_resp_free(&r);
}
END_TEST

/* A whole synthetic table in one download. The suite's server
 * runs with --max-samples 20000: streamed formats are no longer held to it
 * (--max-stream-samples, default 1000000), png still is, and each 400 names
 * its limit. */
START_TEST(streamed_samples_follow_their_own_limit)
{
    char ds[64], job[64], path[160], body[512];
    make_loaded(300, ds);
    pg_resp r;
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"dp_sinkhorn\",\"model\":{\"hidden\":[16]},"
             "\"train\":{\"steps\":20,\"batch_size\":20},\"ot\":{\"max_iter\":20},"
             "\"privacy\":{\"noise_multiplier\":2},\"seed\":3}",
             ds);
    submit(body, job);
    wait_done(job);
    static const char *const fmts[] = {"csv", "npy"};
    for (int f = 0; f < 2; f++) {
        snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=25000&seed=2&format=%s", job, fmts[f]);
        req("GET", path, NULL, &r);
        ck_assert_msg(r.status == 200, "%s: %ld %.200s", fmts[f], r.status, r.body);
        if (f == 0) {
            size_t lines = 0;
            for (size_t i = 0; i < r.len; i++) lines += r.body[i] == '\n';
            ck_assert_uint_eq(lines, 25001);
        } else {
            ck_assert_uint_ge(r.len, (size_t)25000 * WIDTH * 4);
        }
        pg_resp_free(&r);
    }
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=25000&format=png", job);
    req("GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 400);
    ck_assert_ptr_nonnull(strstr(r.body, "--max-samples"));
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=1000001&format=csv", job);
    req("GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 400);
    ck_assert_ptr_nonnull(strstr(r.body, "--max-stream-samples"));
    pg_resp_free(&r);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("integration_typed");
    TCase *tc = tcase_create("typed");
    tcase_add_unchecked_fixture(tc, start_shared, stop_shared);
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, schema_in_the_views);
    tcase_add_test(tc, schema_size_limit_and_wide_schemas);
    tcase_add_test(tc, streamed_samples_follow_their_own_limit);
    tcase_add_test(tc, uploads_and_hostile_uploads);
    tcase_add_test(tc, every_central_method_serves_valid_records);
    tcase_add_test(tc, local_typed_dataset_with_declaration);
    tcase_add_test(tc, decoding_survives_restart);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(make_suite)
