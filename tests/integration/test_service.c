/* privgend end to end: auth and tenancy, dataset declarations, every upload
 * format, every rejection (nothing stored afterwards), limits, idempotency,
 * pagination, delete vs jobs, restart persistence, readiness, and response
 * bodies checked against openapi.yaml's schemas. */
#include <dirent.h>
#include <pthread.h>
#include <math.h>
#include <sys/stat.h>

#include "engine/data/npy.h"
#include "engine/privacy/privacy.h"
#include "engine/data/idx.h"
#include "integration/isuite.h"
#include "service/block.h"
#include "support/pg_http_test.h"
#include "support/pg_test.h"

static pg_srv srv;
static pg_oa oa;

static void start_shared(void)
{
    pg_isuite_start(&srv, &oa, NULL);
}

static void stop_shared(void)
{
    pg_isuite_stop(&srv, &oa);
}

/* ---- helpers ---------------------------------------------------------- */

static void conform(const pg_resp *r, const char *schema)
{
    pg_isuite_conform(&oa, r, schema);
}

static void expect_problem(pg_resp *r, long status, const char *field)
{
    pg_isuite_problem(&oa, r, status, field, NULL, 0);
}

static void post_json(const pg_srv *s, const char *path, const char *tok, const char *body,
                      pg_resp *r)
{
    pg_http(s, "POST", path, tok, "application/json", body, strlen(body), NULL, r);
}

static void create_ds(const pg_srv *s, const char *tok, const char *body, char id[64])
{
    pg_resp r;
    pg_test_post_id(s, tok, "/v1/datasets", body, 201, id, &r);
    conform(&r, "Dataset");
    char loc[128];
    snprintf(loc, sizeof loc, "/v1/datasets/%s", id);
    ck_assert_str_eq(r.location, loc);
    pg_resp_free(&r);
}

static long ds_n(const pg_srv *s, const char *tok, const char *id)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%s", id);
    pg_resp r;
    pg_http(s, "GET", path, tok, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    conform(&r, "Dataset");
    long n = (long)json_integer_value(json_object_get(r.json, "n"));
    pg_resp_free(&r);
    return n;
}

static void rows_path(const char *id, char *out, size_t cap)
{
    snprintf(out, cap, "/v1/datasets/%s/rows", id);
}

/* No temporary block files may survive a rejected upload (SQLite storage
 * keeps them in the data dir; other backends have no files to leak). */
static int tmp_files(const pg_srv *s, const char *id)
{
    if (!pg_itest_sqlite()) return 0;
    char dir[256];
    snprintf(dir, sizeof dir, "%s/datasets/%s", s->data, id);
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, ".tmp-", 5)) n++;
    closedir(d);
    return n;
}

static char *mint(const pg_srv *s, const char *tok, const char *body)
{
    pg_resp r;
    post_json(s, "/v1/tokens", tok, body, &r);
    ck_assert_msg(r.status == 201, "mint: %ld %s", r.status, r.body);
    conform(&r, "Token");
    char *t = strdup(json_string_value(json_object_get(r.json, "token")));
    pg_resp_free(&r);
    return t;
}

static const char *DS_PUBLIC2 =
    "{\"name\":\"p\",\"shape\":[2],\"range\":[-1,1],\"privacy\":{\"model\":\"public\"}}";

/* ---- tests ------------------------------------------------------------ */

START_TEST(operational_routes)
{
    pg_resp r;
    pg_http(&srv, "GET", "/healthz", NULL, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    conform(&r, "Status");
    pg_resp_free(&r);
    pg_http(&srv, "GET", "/readyz", NULL, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    conform(&r, "Status");
    pg_resp_free(&r);
    pg_http(&srv, "GET", "/openapi.yaml", NULL, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq(strncmp(r.body, "openapi: 3.1", 12), 0);
    ck_assert_ptr_nonnull(strstr(r.body, "/v1/datasets/{id}/rows:"));
    pg_resp_free(&r);
    pg_http(&srv, "GET", "/nope", NULL, NULL, NULL, 0, NULL, &r);
    expect_problem(&r, 404, NULL);
    pg_http(&srv, "PUT", "/v1/datasets", srv.admin, NULL, NULL, 0, NULL, &r);
    expect_problem(&r, 405, NULL);
    pg_http(&srv, "GET", "/metrics", NULL, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(
        r.body, "privgen_http_requests_total{method=\"GET\",route=\"/healthz\",code=\"200\"}"));
    ck_assert_ptr_nonnull(strstr(r.body, "privgen_http_request_duration_seconds_bucket{"));
    ck_assert_ptr_nonnull(strstr(r.body, "\nprivgen_datasets "));
    ck_assert_ptr_nonnull(strstr(r.body, "\nprivgen_rows "));
    ck_assert_ptr_nonnull(strstr(r.body, "\nprivgen_bytes_stored "));
    pg_resp_free(&r);
}
END_TEST

START_TEST(auth_scopes_and_tenants)
{
    pg_resp r;
    pg_http(&srv, "GET", "/v1/datasets", NULL, NULL, NULL, 0, NULL, &r);
    expect_problem(&r, 401, NULL);
    char wrong[96];
    snprintf(wrong, sizeof wrong, "%s", srv.admin);
    wrong[strlen(wrong) - 1] = wrong[strlen(wrong) - 1] == '0' ? '1' : '0';
    pg_http(&srv, "GET", "/v1/datasets", wrong, NULL, NULL, 0, NULL, &r);
    expect_problem(&r, 401, NULL);
    pg_http(&srv, "GET", "/v1/datasets", "pgt_garbage", NULL, NULL, 0, NULL, &r);
    expect_problem(&r, 401, NULL);

    char *reader = mint(&srv, srv.admin, "{\"scope\":\"read\"}");
    pg_http(&srv, "GET", "/v1/datasets", reader, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    conform(&r, "DatasetList");
    pg_resp_free(&r);
    post_json(&srv, "/v1/datasets", reader, DS_PUBLIC2, &r);
    expect_problem(&r, 403, NULL);
    post_json(&srv, "/v1/tokens", reader, "{\"scope\":\"read\"}", &r);
    expect_problem(&r, 403, NULL);
    post_json(&srv, "/v1/tokens", srv.admin, "{\"scope\":\"root\"}", &r);
    expect_problem(&r, 422, "scope");
    post_json(&srv, "/v1/tokens", srv.admin, "{\"scope\":\"read\",\"tenant\":\"x\"}", &r);
    expect_problem(&r, 422, "tenant");

    char id[64], path[128];
    create_ds(&srv, srv.admin, DS_PUBLIC2, id);
    ck_assert_int_eq(ds_n(&srv, reader, id), 0); /* same tenant reads it */
    char *other = mint(&srv, srv.admin, "{\"scope\":\"admin\",\"new_tenant\":true}");
    snprintf(path, sizeof path, "/v1/datasets/%s", id);
    pg_http(&srv, "GET", path, other, NULL, NULL, 0, NULL, &r);
    expect_problem(&r, 404, NULL);
    pg_http(&srv, "DELETE", path, other, NULL, NULL, 0, NULL, &r);
    expect_problem(&r, 404, NULL);
    rows_path(id, path, sizeof path);
    post_json(&srv, path, other, "{\"rows\":[[0,0]]}", &r);
    expect_problem(&r, 404, NULL);
    pg_http(&srv, "GET", "/v1/datasets?limit=500", other, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(r.json, "items")), 0);
    pg_resp_free(&r);
    ck_assert_int_eq(ds_n(&srv, srv.admin, id), 0); /* untouched */
    free(reader);
    free(other);
}
END_TEST

START_TEST(dataset_declarations)
{
    /* {declaration, status, field named first}: each refused */
    static const struct {
        const char *body;
        long status;
        const char *field;
    } bad[] = {
        {"{\"name\":", 400, NULL},
        {"{\"name\":\"p\",\"shape\":[2],\"range\":[0,1],\"privacy\":{\"model\":\"public\"},"
         "\"colour\":1}",
         422, "colour"},
        {"{\"name\":\"p\",\"shape\":[2],\"range\":[0,1],\"privacy\":{\"model\":\"public\","
         "\"epsilon\":1}}",
         422, "privacy.epsilon"},
        {"{\"name\":\"p\",\"shape\":[0],\"range\":[0,1],\"privacy\":{\"model\":\"public\"}}", 422,
         "shape"},
        {"{\"name\":\"p\",\"shape\":[2],\"range\":[1,0],\"privacy\":{\"model\":\"public\"}}", 422,
         "range"},
        {"{\"name\":\"p\",\"shape\":[2],\"range\":[0,1],\"num_classes\":0,"
         "\"privacy\":{\"model\":\"public\"}}",
         422, "num_classes"},
        {"{\"name\":\"p\",\"shape\":[2],\"range\":[0,1],\"privacy\":{\"model\":\"central\"}}", 422,
         "privacy.budget"},
        /* Laplace: b must be >= sensitivity / epsilon = 2 / 0.5 = 4 */
        {"{\"name\":\"l\",\"shape\":[2],\"range\":[0,1],\"privacy\":{\"model\":\"local\","
         "\"mechanism\":\"laplace\",\"epsilon\":0.5,\"sensitivity\":2,\"noise_scale\":3.9}}",
         422, "privacy.noise_scale"},
        {"{\"name\":\"l\",\"shape\":[2],\"range\":[0,1],\"privacy\":{\"model\":\"local\","
         "\"mechanism\":\"laplace\",\"epsilon\":0.5,\"delta\":1e-5,\"sensitivity\":2,"
         "\"noise_scale\":4}}",
         422, "privacy.delta"},
        /* Gaussian: analytic sigma for eps 1, delta 1e-5, sensitivity 1 is ~3.7306 */
        {"{\"name\":\"g\",\"shape\":[2],\"range\":[0,1],\"privacy\":{\"model\":\"local\","
         "\"mechanism\":\"gaussian\",\"epsilon\":1,\"delta\":1e-5,\"sensitivity\":1,"
         "\"noise_scale\":3.73}}",
         422, "privacy.noise_scale"},
    };
    pg_resp r;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        post_json(&srv, "/v1/datasets", srv.admin, bad[i].body, &r);
        expect_problem(&r, bad[i].status, bad[i].field);
    }
    char id[64];
    create_ds(&srv, srv.admin,
              "{\"name\":\"g\",\"shape\":[2],\"range\":[0,1],\"privacy\":{\"model\":\"local\","
              "\"mechanism\":\"gaussian\",\"epsilon\":1,\"delta\":1e-5,\"sensitivity\":1,"
              "\"noise_scale\":3.731}}",
              id);
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%s", id);
    pg_http(&srv, "GET", path, srv.admin, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    conform(&r, "Dataset");
    json_t *rep = json_object_get(r.json, "privacy_report");
    ck_assert_str_eq(json_string_value(json_object_get(rep, "model")), "local");
    ck_assert(json_real_value(json_object_get(rep, "epsilon_ldp")) == 1.0);
    double m = json_real_value(json_object_get(rep, "min_noise_scale"));
    ck_assert_msg(m > 3.7300 && m < 3.7310, "min noise %g", m);
    ck_assert(json_is_false(json_object_get(rep, "spends_budget")));
    ck_assert_ptr_null(json_object_get(r.json, "rows"));
    pg_resp_free(&r);
    create_ds(&srv, srv.admin,
              "{\"name\":\"c\",\"shape\":[1,2,2],\"range\":[0,1],\"num_classes\":10,"
              "\"privacy\":{\"model\":\"central\",\"budget\":{\"epsilon\":3,\"delta\":1e-5}}}",
              id);
    snprintf(path, sizeof path, "/v1/datasets/%s", id);
    pg_http(&srv, "GET", path, srv.admin, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq((int)json_integer_value(json_object_get(r.json, "d")), 4);
    ck_assert_int_eq((int)json_integer_value(json_object_get(r.json, "num_classes")), 10);
    pg_resp_free(&r);
}
END_TEST

/* Reads back every stored block of a dataset through the storage contract
 * (the API never returns rows). */
static size_t stored_values(const char *id, float *out, size_t cap, int32_t *labels)
{
    size_t n = 0;
    pg_db *db = pg_srv_db(&srv);
    ck_assert_ptr_nonnull(db);
    pg_db_blocks *it;
    size_t nb;
    ck_assert_int_eq(pg_db_blocks_open(db, id, &it, &nb, NULL), PG_OK);
    for (;;) {
        pg_block b;
        int end;
        ck_assert_int_eq(pg_db_blocks_next(it, 1 << 26, &b, &end, NULL), PG_OK);
        if (end) break;
        for (size_t i = 0; i < b.n * b.d && n < cap; i++) {
            if (labels) labels[n / b.d] = b.labels ? b.labels[i / b.d] : -1;
            out[n++] = b.x[i];
        }
        pg_block_free(&b);
    }
    pg_db_blocks_close(it);
    pg_db_close(db);
    return n;
}

/* A float64 big-endian NPY written by hand: conversion and byte order. */
static size_t npy_f8_be(unsigned char *buf, const double *v, size_t rows, size_t cols)
{
    char hdr[128];
    int hl =
        snprintf(hdr, sizeof hdr, "{'descr': '>f8', 'fortran_order': False, 'shape': (%zu, %zu), }",
                 rows, cols);
    size_t total = 10 + (size_t)hl + 1;
    size_t pad = (64 - total % 64) % 64;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    size_t len = (size_t)hl + pad + 1;
    buf[8] = (unsigned char)(len & 255);
    buf[9] = (unsigned char)(len >> 8);
    memcpy(buf + 10, hdr, (size_t)hl);
    memset(buf + 10 + hl, ' ', pad);
    buf[10 + hl + pad] = '\n';
    size_t at = 10 + len;
    for (size_t i = 0; i < rows * cols; i++) {
        unsigned char b[8];
        memcpy(b, &v[i], 8);
        for (int k = 0; k < 8; k++) buf[at + i * 8 + (size_t)k] = b[7 - k];
    }
    return at + rows * cols * 8;
}

START_TEST(every_upload_format)
{
    char id[64], path[128];
    create_ds(&srv, srv.admin,
              "{\"name\":\"u\",\"shape\":[3],\"range\":[-5,5],\"num_classes\":3,"
              "\"privacy\":{\"model\":\"public\"}}",
              id);
    rows_path(id, path, sizeof path);
    pg_resp r;
    post_json(&srv, path, srv.admin, "{\"rows\":[[1,2,3],[4,5,6.5]],\"labels\":[0,2]}", &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    conform(&r, "RowsAppended");
    ck_assert_int_eq((int)json_integer_value(json_object_get(r.json, "n")), 2);
    pg_resp_free(&r);

    float f[15];
    for (int i = 0; i < 15; i++) f[i] = (float)i * 0.25f - 1.0f;
    size_t shape[2] = {5, 3};
    static unsigned char npy[4096];
    size_t nl = pg_npy_size(shape, 2);
    ck_assert_int_eq(pg_npy_write(f, shape, 2, npy, sizeof npy, NULL), PG_OK);
    pg_http(&srv, "POST", path, srv.admin, "application/x-npy", npy, nl, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    conform(&r, "RowsAppended");
    pg_resp_free(&r);

    double dv[6] = {0.1, -0.2, 0.3, 1e-3, 2.5, -4.75};
    nl = npy_f8_be(npy, dv, 2, 3);
    pg_http(&srv, "POST", path, srv.admin, "application/x-npy", npy, nl, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    pg_resp_free(&r);

    float raw[12] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, -1, -2};
    for (int i = 0; i < 12; i++) raw[i] *= 0.5f;
    const char *xr[] = {"X-Rows: 4", NULL};
    pg_http(&srv, "POST", path, srv.admin, "application/octet-stream", raw, sizeof raw, xr, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    ck_assert_int_eq((int)json_integer_value(json_object_get(r.json, "n")), 13);
    pg_resp_free(&r);
    ck_assert_int_eq(ds_n(&srv, srv.admin, id), 13);

    float got[64];
    int32_t lab[32];
    ck_assert_uint_eq(stored_values(id, got, 64, lab), 39);
    ck_assert(got[0] == 1.0f && got[5] == 6.5f);
    ck_assert(lab[0] == 0 && lab[1] == 2 && lab[2] == -1);
    for (int i = 0; i < 15; i++) ck_assert(got[6 + i] == f[i]);
    for (int i = 0; i < 6; i++) ck_assert(got[21 + i] == (float)dv[i]);
    for (int i = 0; i < 12; i++) ck_assert(got[27 + i] == raw[i]);

    /* image-shaped NPY for a [1,2,2] dataset: [n,1,2,2] and [n,2,2] */
    create_ds(
        &srv, srv.admin,
        "{\"name\":\"img\",\"shape\":[1,2,2],\"range\":[0,1],\"privacy\":{\"model\":\"public\"}}",
        id);
    rows_path(id, path, sizeof path);
    size_t s4[4] = {2, 1, 2, 2}, s3[3] = {2, 2, 2};
    float z[8] = {0};
    pg_npy_write(z, s4, 4, npy, sizeof npy, NULL);
    pg_http(&srv, "POST", path, srv.admin, "application/x-npy", npy, pg_npy_size(s4, 4), NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    pg_resp_free(&r);
    pg_npy_write(z, s3, 3, npy, sizeof npy, NULL);
    pg_http(&srv, "POST", path, srv.admin, "application/x-npy", npy, pg_npy_size(s3, 3), NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    pg_resp_free(&r);
    ck_assert_int_eq(ds_n(&srv, srv.admin, id), 4);
}
END_TEST

static void reject(const char *id, const char *ctype, const void *body, size_t len,
                   const char *const *hdrs, long status, const char *field)
{
    char path[128];
    rows_path(id, path, sizeof path);
    long before = ds_n(&srv, srv.admin, id);
    pg_resp r;
    pg_http(&srv, "POST", path, srv.admin, ctype, body, len, hdrs, &r);
    expect_problem(&r, status, field);
    ck_assert_int_eq(ds_n(&srv, srv.admin, id), before);
    ck_assert_int_eq(tmp_files(&srv, id), 0);
}

#define JREJ(id, body, status, field)                                                              \
    reject(id, "application/json", body, strlen(body), NULL, status, field)

START_TEST(every_rejection_stores_nothing)
{
    char id[64], cid[64], path[128];
    create_ds(&srv, srv.admin,
              "{\"name\":\"r\",\"shape\":[2],\"range\":[0,1],\"num_classes\":2,"
              "\"privacy\":{\"model\":\"public\"}}",
              id);
    create_ds(&srv, srv.admin,
              "{\"name\":\"c\",\"shape\":[2],\"range\":[0,1],"
              "\"privacy\":{\"model\":\"central\",\"budget\":{\"epsilon\":1,\"delta\":1e-6}}}",
              cid);
    /* one good block first, so "unchanged" means something */
    rows_path(id, path, sizeof path);
    pg_resp r;
    post_json(&srv, path, srv.admin, "{\"rows\":[[0.5,0.5],[9,9]],\"labels\":[1,0]}", &r);
    ck_assert_int_eq(r.status, 200);
    pg_resp_free(&r);

    JREJ(id, "{\"rows\":[[0,0],[1]]}", 422, "rows[2]");             /* width (rows count from 1) */
    JREJ(id, "{\"rows\":[[0,0],[1,1],[1,\"x\"]]}", 422, "rows[3]"); /* type */
    JREJ(id, "{\"rows\":[[0,0],[1,1]],\"labels\":[0,2]}", 422, "rows[2]"); /* label range */
    JREJ(id, "{\"rows\":[[0,0]],\"labels\":[-1]}", 422, "rows[1]");
    JREJ(id, "{\"rows\":[[0,0]],\"labels\":[0,1]}", 422, "labels"); /* count */
    JREJ(id, "{\"rows\":[[0,0]],\"weights\":[1]}", 422, "weights"); /* unknown field */
    JREJ(id, "{\"rows\":[]}", 422, "rows");
    JREJ(id, "{\"rows\":[[NaN,0]]}", 400, NULL);                    /* not JSON at all */
    JREJ(id, "{\"rows\":[[1e999,0]]}", 400, NULL);                  /* overflows a double */
    JREJ(id, "{\"rows\":[[3e38,0],[1e39,0]]}", 422, "rows[2]");     /* overflows a float: Inf */
    JREJ(cid, "{\"rows\":[[0,0],[0.5,1.01]]}", 422, "rows[2]");     /* central range */
    JREJ(cid, "{\"rows\":[[0,0]],\"labels\":[0]}", 422, "rows[1]"); /* no num_classes */

    float raw[8] = {0, 0, 0.5f, 0.5f, NAN, 0, 1, 1};
    const char *x4[] = {"X-Rows: 4", NULL}, *x3[] = {"X-Rows: 3", NULL},
               *x0[] = {"X-Rows: 0", NULL};
    reject(id, "application/octet-stream", raw, sizeof raw, x4, 422, "rows[3]");
    raw[4] = INFINITY;
    reject(id, "application/octet-stream", raw, sizeof raw, x4, 422, "rows[3]");
    raw[4] = 0;
    reject(id, "application/octet-stream", raw, sizeof raw, x3, 400, NULL);     /* too long */
    reject(id, "application/octet-stream", raw, sizeof raw - 2, x4, 400, NULL); /* short */
    reject(id, "application/octet-stream", raw, sizeof raw, NULL, 400, "X-Rows");
    reject(id, "application/octet-stream", raw, sizeof raw, x0, 400, "X-Rows");
    raw[7] = 1.5f;
    reject(cid, "application/octet-stream", raw, sizeof raw, x4, 422, "rows[4]");
    reject(id, "text/plain", "1,2\n", 4, NULL, 415, NULL);
    reject(id, "application/xml", "<a/>", 4, NULL, 415, NULL);

    static unsigned char npy[4096];
    float v[9] = {0};
    size_t s3[2] = {3, 3}, s2[2] = {3, 2};
    pg_npy_write(v, s3, 2, npy, sizeof npy, NULL);
    reject(id, "application/x-npy", npy, pg_npy_size(s3, 2), NULL, 422, "body"); /* width */
    pg_npy_write(v, s2, 2, npy, sizeof npy, NULL);
    reject(id, "application/x-npy", npy, pg_npy_size(s2, 2) - 1, NULL, 400, NULL); /* truncated */
    reject(id, "application/x-npy", npy, 40, NULL, 400, NULL);                     /* header cut */
    reject(id, "application/x-npy", "not an npy file at all", 22, NULL, 400, NULL);
    v[5] = NAN;
    pg_npy_write(v, s2, 2, npy, sizeof npy, NULL);
    reject(id, "application/x-npy", npy, pg_npy_size(s2, 2), NULL, 422, "rows[3]");
    ck_assert_int_eq(ds_n(&srv, srv.admin, id), 2);
}
END_TEST

START_TEST(idempotent_retries)
{
    const char *k1[] = {"Idempotency-Key: create-1", NULL};
    pg_resp a, b;
    pg_http(&srv, "POST", "/v1/datasets", srv.admin, "application/json", DS_PUBLIC2,
            strlen(DS_PUBLIC2), k1, &a);
    ck_assert_int_eq(a.status, 201);
    pg_http(&srv, "POST", "/v1/datasets", srv.admin, "application/json", DS_PUBLIC2,
            strlen(DS_PUBLIC2), k1, &b);
    ck_assert_int_eq(b.status, 201);
    conform(&b, "Dataset");
    ck_assert_str_eq(a.body, b.body);
    ck_assert_str_eq(a.location, b.location);
    const char *id = json_string_value(json_object_get(a.json, "id"));
    pg_resp_free(&b);
    const char *other =
        "{\"name\":\"q\",\"shape\":[2],\"range\":[-1,1],\"privacy\":{\"model\":\"public\"}}";
    pg_http(&srv, "POST", "/v1/datasets", srv.admin, "application/json", other, strlen(other), k1,
            &b);
    expect_problem(&b, 422, "Idempotency-Key");

    char path[128];
    rows_path(id, path, sizeof path);
    const char *k2[] = {"Idempotency-Key: rows-1", NULL};
    const char *rows = "{\"rows\":[[0,0],[1,1],[2,2]]}";
    for (int i = 0; i < 3; i++) {
        pg_http(&srv, "POST", path, srv.admin, "application/json", rows, strlen(rows), k2, &b);
        ck_assert_int_eq(b.status, 200);
        ck_assert_int_eq((int)json_integer_value(json_object_get(b.json, "n")), 3);
        pg_resp_free(&b);
    }
    ck_assert_int_eq(ds_n(&srv, srv.admin, id), 3);
    /* a failed attempt is not remembered: fixing the body under the same key works */
    const char *k3[] = {"Idempotency-Key: rows-2", NULL};
    pg_http(&srv, "POST", path, srv.admin, "application/json", "{\"rows\":[[0]]}", 14, k3, &b);
    expect_problem(&b, 422, "rows[1]");
    pg_http(&srv, "POST", path, srv.admin, "application/json", "{\"rows\":[[0,1]]}", 16, k3, &b);
    ck_assert_int_eq(b.status, 200);
    pg_resp_free(&b);
    ck_assert_int_eq(ds_n(&srv, srv.admin, id), 4);
    pg_resp_free(&a);
}
END_TEST

START_TEST(pagination)
{
    char *tok = mint(&srv, srv.admin, "{\"scope\":\"admin\",\"new_tenant\":true}");
    char ids[5][64];
    for (int i = 0; i < 5; i++) create_ds(&srv, tok, DS_PUBLIC2, ids[i]);
    char path[160], cursor[64] = "";
    int seen = 0;
    for (int page = 0; page < 3; page++) {
        snprintf(path, sizeof path, "/v1/datasets?limit=2%s%s", cursor[0] ? "&cursor=" : "",
                 cursor);
        pg_resp r;
        pg_http(&srv, "GET", path, tok, NULL, NULL, 0, NULL, &r);
        ck_assert_int_eq(r.status, 200);
        conform(&r, "DatasetList");
        json_t *items = json_object_get(r.json, "items");
        ck_assert_uint_eq(json_array_size(items), page < 2 ? 2 : 1);
        for (size_t i = 0; i < json_array_size(items); i++)
            ck_assert_str_eq(json_string_value(json_object_get(json_array_get(items, i), "id")),
                             ids[seen++]);
        json_t *nc = json_object_get(r.json, "next_cursor");
        if (page < 2)
            snprintf(cursor, sizeof cursor, "%s", json_string_value(nc));
        else
            ck_assert(json_is_null(nc));
        pg_resp_free(&r);
    }
    ck_assert_int_eq(seen, 5);
    pg_resp r;
    pg_http(&srv, "GET", "/v1/datasets?limit=0", tok, NULL, NULL, 0, NULL, &r);
    expect_problem(&r, 400, "limit");
    pg_http(&srv, "GET", "/v1/datasets?cursor=abc", tok, NULL, NULL, 0, NULL, &r);
    expect_problem(&r, 400, "cursor");
    free(tok);
}
END_TEST

/* A running job blocks the deletion of its dataset. The job is admitted and
 * claimed under a lease of a node that is not the server's, with the server
 * stopped: a job the server can claim (queued, or running without a lease)
 * would be run and failed by its worker (the spec is empty) at its next
 * poll, and the DELETE would then rightly succeed. */
START_TEST(delete_and_job_conflict)
{
    pg_srv s;
    pg_test_srv_start(&s, NULL);
    char id[64], path[128];
    create_ds(&s, s.admin, DS_PUBLIC2, id);
    snprintf(path, sizeof path, "/v1/datasets/%s", id);
    char *reader = mint(&s, s.admin, "{\"scope\":\"read\"}");
    ck_assert_int_eq(pg_srv_stop(&s), 0);
    pg_db *db = pg_srv_db(&s);
    ck_assert_ptr_nonnull(db);
    pg_job_row job;
    memset(&job, 0, sizeof job);
    snprintf(job.id, sizeof job.id, "job_x%.20s", id + 3);
    snprintf(job.tenant, sizeof job.tenant, "tenant_x");
    snprintf(job.dataset_id, sizeof job.dataset_id, "%.39s", id);
    job.spec = "{}";
    pg_privacy_plan none;
    memset(&none, 0, sizeof none);
    pg_ledger_quote q;
    ck_assert_int_eq(pg_db_job_admit(db, &job, &none, 1.0, 1e-5, &q, NULL), PG_OK);
    const char *holder = "itest-holder";
    int64_t now = (int64_t)time(NULL);
    pg_job_row *claimed = NULL;
    int found = 0;
    ck_assert_int_eq(pg_db_job_claim(db, holder, now, 86400, &claimed, &found, NULL), PG_OK);
    ck_assert(found);
    ck_assert_str_eq(claimed->id, job.id);
    ck_assert_str_eq(claimed->status, "running");
    pg_job_rows_free(claimed, 1);
    ck_assert_int_eq(pg_srv_start(&s, NULL), 0);
    pg_resp r;
    pg_http(&s, "DELETE", path, s.admin, NULL, NULL, 0, NULL, &r);
    expect_problem(&r, 409, NULL);
    ck_assert_int_eq(ds_n(&s, s.admin, id), 0);
    pg_job_patch done = {
        .now = now, .status = "succeeded", .finished = 1, .step = -1, .steps_reserved = -1};
    int held = 0;
    ck_assert_int_eq(pg_db_job_patch_owned(db, job.id, holder, &done, &held, NULL), PG_OK);
    ck_assert(held);
    pg_db_close(db);
    pg_http(&s, "DELETE", path, reader, NULL, NULL, 0, NULL, &r);
    expect_problem(&r, 403, NULL);
    free(reader);
    pg_http(&s, "DELETE", path, s.admin, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 204);
    pg_resp_free(&r);
    pg_http(&s, "GET", path, s.admin, NULL, NULL, 0, NULL, &r);
    expect_problem(&r, 404, NULL);
    if (pg_itest_sqlite()) { /* its files went with it */
        char dir[200];
        snprintf(dir, sizeof dir, "%s/datasets/%s", s.data, id);
        struct stat st;
        ck_assert_int_eq(stat(dir, &st), -1);
    }
    pg_test_srv_end(&s);
}
END_TEST

typedef struct uploader {
    const char *path;
    int ok;
} uploader;

static void *upload_many(void *arg)
{
    uploader *u = arg;
    const char *body = "{\"rows\":[[0.5,0.5],[0.25,0.75],[1,0]]}";
    for (int i = 0; i < 10; i++) {
        pg_resp r;
        post_json(&srv, u->path, srv.admin, body, &r);
        u->ok += r.status == 200;
        pg_resp_free(&r);
    }
    return NULL;
}

/* Concurrent appends to one dataset: every block lands once, n adds up. */
START_TEST(concurrent_appends)
{
    char id[64], path[128];
    create_ds(&srv, srv.admin, DS_PUBLIC2, id);
    rows_path(id, path, sizeof path);
    pthread_t th[4];
    uploader u[4];
    for (int i = 0; i < 4; i++) {
        u[i] = (uploader){path, 0};
        pthread_create(&th[i], NULL, upload_many, &u[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(u[i].ok, 10);
    }
    ck_assert_int_eq(ds_n(&srv, srv.admin, id), 120);
    float got[256];
    ck_assert_uint_eq(stored_values(id, got, 256, NULL), 240);
    ck_assert_int_eq(tmp_files(&srv, id), 0);
}
END_TEST

/* Local Laplace data: the report carries the shuffling bound for the
 * current n (the library's closed form), null while it does not apply. */
START_TEST(shuffle_report_follows_n)
{
    char id[64], path[128];
    create_ds(&srv, srv.admin,
              "{\"name\":\"ldp\",\"shape\":[1],\"range\":[0,1],\"privacy\":{\"model\":"
              "\"local\",\"mechanism\":\"laplace\",\"epsilon\":1,\"sensitivity\":1,"
              "\"noise_scale\":1}}",
              id);
    snprintf(path, sizeof path, "/v1/datasets/%s", id);
    pg_resp r;
    pg_http(&srv, "GET", path, srv.admin, NULL, NULL, 0, NULL, &r);
    ck_assert(json_is_null(json_object_get(json_object_get(r.json, "privacy_report"), "shuffle")));
    pg_resp_free(&r);
    static float x[20000];
    for (int i = 0; i < 20000; i++) x[i] = (float)(i % 7) - 3.0f;
    char rp[128];
    rows_path(id, rp, sizeof rp);
    const char *xr[] = {"X-Rows: 20000", NULL};
    pg_http(&srv, "POST", rp, srv.admin, "application/octet-stream", x, sizeof x, xr, &r);
    ck_assert_int_eq(r.status, 200);
    pg_resp_free(&r);
    pg_http(&srv, "GET", path, srv.admin, NULL, NULL, 0, NULL, &r);
    conform(&r, "Dataset");
    json_t *sh = json_object_get(json_object_get(r.json, "privacy_report"), "shuffle");
    ck_assert_msg(json_is_object(sh), "%s", r.body);
    double eps = json_real_value(json_object_get(sh, "epsilon"));
    double delta = json_real_value(json_object_get(sh, "delta"));
    ck_assert(delta == 1.0 / (20000.0 * 20000.0));
    double want;
    ck_assert_int_eq(pg_shuffle_closed_form(1.0, 20000, delta, &want, NULL), PG_OK);
    ck_assert(eps == want && eps > 0 && eps < 1.0);
    pg_resp_free(&r);
}
END_TEST

/* ---- tests with a server of their own --------------------------------- */

START_TEST(limits_413)
{
    const char *args[] = {"--max-body", "4K", "--max-rows", "10", NULL};
    pg_srv s;
    pg_test_srv_start(&s, args);
    char id[64], path[128];
    create_ds(&s, s.admin, DS_PUBLIC2, id);
    rows_path(id, path, sizeof path);
    /* a JSON body over --max-body: 413, and a buffered format never grows past it */
    static char big[16384];
    size_t at = (size_t)snprintf(big, sizeof big, "{\"rows\":[");
    while (at < 12000) at += (size_t)snprintf(big + at, sizeof big - at, "[0.125,0.125],");
    snprintf(big + at, sizeof big - at, "[0,0]]}");
    pg_resp r;
    post_json(&s, path, s.admin, big, &r);
    expect_problem(&r, 413, NULL);
    post_json(&s, "/v1/datasets", s.admin, big, &r);
    expect_problem(&r, 413, NULL);
    /* the row cap binds streamed formats */
    float raw[22] = {0};
    const char *x11[] = {"X-Rows: 11", NULL}, *x6[] = {"X-Rows: 6", NULL};
    pg_http(&s, "POST", path, s.admin, "application/octet-stream", raw, sizeof raw, x11, &r);
    expect_problem(&r, 413, NULL);
    pg_http(&s, "POST", path, s.admin, "application/octet-stream", raw, 48, x6, &r);
    ck_assert_int_eq(r.status, 200);
    pg_resp_free(&r);
    pg_http(&s, "POST", path, s.admin, "application/octet-stream", raw, 48, x6, &r);
    expect_problem(&r, 413, NULL); /* 6 + 6 > 10 */
    static unsigned char npy[4096];
    size_t sh[2] = {20, 2};
    float zeros[40] = {0};
    pg_npy_write(zeros, sh, 2, npy, sizeof npy, NULL);
    pg_http(&s, "POST", path, s.admin, "application/x-npy", npy, pg_npy_size(sh, 2), NULL, &r);
    expect_problem(&r, 413, NULL);
    ck_assert_int_eq(ds_n(&s, s.admin, id), 6);
    pg_test_srv_end(&s);
}
END_TEST

START_TEST(restart_keeps_everything)
{
    pg_srv s;
    pg_test_srv_start(&s, NULL);
    char admin[96], id[64], path[128];
    snprintf(admin, sizeof admin, "%s", s.admin);
    char *reader = mint(&s, s.admin, "{\"scope\":\"read\"}");
    create_ds(&s, s.admin, DS_PUBLIC2, id);
    rows_path(id, path, sizeof path);
    pg_resp r;
    post_json(&s, path, s.admin, "{\"rows\":[[0.25,0.5],[0.75,1]]}", &r);
    ck_assert_int_eq(r.status, 200);
    pg_resp_free(&r);
    ck_assert_int_eq(pg_srv_stop(&s), 0); /* clean SIGTERM shutdown exits 0 */
    ck_assert_int_eq(pg_srv_start(&s, NULL), 0);
    ck_assert_str_eq(s.admin, admin); /* no second bootstrap */
    ck_assert_int_eq(ds_n(&s, reader, id), 2);
    post_json(&s, path, s.admin, "{\"rows\":[[1,1]]}", &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_int_eq((int)json_integer_value(json_object_get(r.json, "n")), 3);
    pg_resp_free(&r);
    /* the block appended after the restart is the second one */
    pg_db *db = pg_srv_db(&s);
    ck_assert_ptr_nonnull(db);
    pg_db_blocks *it;
    size_t nb;
    ck_assert_int_eq(pg_db_blocks_open(db, id, &it, &nb, NULL), PG_OK);
    ck_assert_uint_eq(nb, 2);
    pg_block b;
    int end;
    ck_assert_int_eq(pg_db_blocks_next(it, 1 << 20, &b, &end, NULL), PG_OK);
    pg_block_free(&b);
    ck_assert_int_eq(pg_db_blocks_next(it, 1 << 20, &b, &end, NULL), PG_OK);
    ck_assert(!end && b.n == 1 && b.x[0] == 1.0f);
    pg_block_free(&b);
    pg_db_blocks_close(it);
    pg_db_close(db);
    free(reader);
    ck_assert_int_eq(pg_srv_stop(&s), 0);
    /* stderr is JSON lines; each request line names method, route pattern,
     * status, latency and the token id (never the token) */
    char logp[128], line[2048];
    snprintf(logp, sizeof logp, "%s/privgend.log", s.dir);
    FILE *f = fopen(logp, "r");
    ck_assert_ptr_nonnull(f);
    int requests = 0, stops = 0;
    char admin_id[32];
    snprintf(admin_id, sizeof admin_id, "tok_%.16s", admin + 4);
    while (fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        ck_assert_msg(o != NULL, "not a JSON line: %s", line);
        ck_assert_ptr_nonnull(json_object_get(o, "ts"));
        const char *msg = json_string_value(json_object_get(o, "msg"));
        ck_assert_ptr_nonnull(msg);
        if (!strcmp(msg, "stopped")) stops++;
        if (!strcmp(msg, "privgend ready")) /* names the storage, never its password */
            ck_assert_str_eq(json_string_value(json_object_get(o, "backend")),
                             pg_itest_sqlite() ? "sqlite" : "postgres");
        if (!strcmp(msg, "request")) {
            requests++;
            ck_assert(json_is_string(json_object_get(o, "method")));
            ck_assert(json_is_string(json_object_get(o, "route")));
            ck_assert(json_is_integer(json_object_get(o, "status")));
            ck_assert(json_is_number(json_object_get(o, "ms")));
            json_t *tok = json_object_get(o, "token");
            ck_assert(json_is_null(tok) || !strncmp(json_string_value(tok), "tok_", 4));
            if (!strcmp(json_string_value(json_object_get(o, "route")), "/v1/datasets/{id}/rows"))
                ck_assert_str_eq(json_string_value(tok), admin_id);
        }
        ck_assert_ptr_null(strstr(line, "pgt_")); /* no plaintext token in logs */
        json_decref(o);
    }
    fclose(f);
    ck_assert_int_ge(requests, 5);
    ck_assert_int_eq(stops, 2); /* both runs shut down cleanly */
    pg_srv_cleanup(&s);
}
END_TEST

/* Tests run as root, for whom permission bits never block a write, so the
 * data dir is made unwritable by replacing its row-block directory with a
 * regular file: readyz's probe (create + fsync a file there) then fails for
 * every user. */
START_TEST(readyz_turns_503)
{
    pg_srv s;
    pg_test_srv_start(&s, NULL);
    pg_resp r;
    pg_http(&s, "GET", "/readyz", NULL, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "backend")),
                     pg_itest_sqlite() ? "sqlite" : "postgres");
    pg_resp_free(&r);
    if (!pg_itest_sqlite()) { /* no data-dir files to break on a server backend */
        pg_srv_cleanup(&s);
        return;
    }
    char d[160], away[170];
    snprintf(d, sizeof d, "%s/datasets", s.data);
    snprintf(away, sizeof away, "%s.away", d);
    ck_assert_int_eq(rename(d, away), 0);
    FILE *f = fopen(d, "w");
    fclose(f);
    pg_http(&s, "GET", "/readyz", NULL, NULL, NULL, 0, NULL, &r);
    expect_problem(&r, 503, NULL);
    pg_http(&s, "GET", "/healthz", NULL, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 200); /* alive, just not ready */
    pg_resp_free(&r);
    unlink(d);
    ck_assert_int_eq(rename(away, d), 0);
    pg_http(&s, "GET", "/readyz", NULL, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    pg_resp_free(&r);
    pg_test_srv_end(&s);
}
END_TEST

static long vm_kb(pid_t pid, const char *key)
{
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    FILE *f = fopen(p, "r");
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, strlen(key))) v = atol(line + strlen(key) + 1);
    if (f) fclose(f);
    return v;
}

/* The done-when of the service issue: a 100 MB NPY upload streams with the
 * server's peak resident memory growing by less than 64 MB over idle. This
 * is a resource bound, not a timing assertion. */
START_TEST(npy_100mb_streams_in_bounded_memory)
{
    pg_srv s;
    pg_test_srv_start(&s, NULL);
    char id[64], path[128];
    create_ds(
        &s, s.admin,
        "{\"name\":\"big\",\"shape\":[100],\"range\":[-1,1],\"privacy\":{\"model\":\"public\"}}",
        id);
    rows_path(id, path, sizeof path);
    size_t shape[2] = {262144, 100}; /* 100 MiB of float32 */
    size_t len = pg_npy_size(shape, 2);
    float *x = malloc(shape[0] * shape[1] * sizeof *x);
    unsigned char *npy = malloc(len);
    ck_assert(x && npy);
    uint32_t st = 12345;
    for (size_t i = 0; i < shape[0] * shape[1]; i++) {
        st = st * 1664525u + 1013904223u;
        x[i] = (float)(st >> 8) / 8388608.0f - 1.0f;
    }
    ck_assert_int_eq(pg_npy_write(x, shape, 2, npy, len, NULL), PG_OK);
    free(x);
    pg_resp r;
    pg_http(&s, "GET", "/readyz", NULL, NULL, NULL, 0, NULL, &r);
    pg_resp_free(&r);
    long idle = vm_kb(s.pid, "VmHWM:");
    pg_http(&s, "POST", path, s.admin, "application/x-npy", npy, len, NULL, &r);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    pg_resp_free(&r);
    long peak = vm_kb(s.pid, "VmHWM:");
    free(npy);
    fprintf(stderr,
            "npy upload of %zu bytes: server peak RSS %ld kB idle, %ld kB after (+%ld kB)\n", len,
            idle, peak, peak - idle);
    ck_assert_msg(idle > 0 && peak - idle < 64 * 1024, "peak RSS grew by %ld kB", peak - idle);
    ck_assert_int_eq(ds_n(&s, s.admin, id), 262144);
    pg_test_srv_end(&s);
}
END_TEST

typedef struct slow_body {
    const unsigned char *p;
    size_t len, at;
    pid_t server;
    unsigned port; /* the server's */
    CURL *curl;
    int accepted, signalled;
} slow_body;

/* 1 once process pid holds the server end of the TCP connection from client
 * port `client` to port `server` on 127.0.0.1, i.e. it has accepted it. A
 * connection still in the listen backlog is listed in /proc/net/tcp with
 * inode 0 (no socket file yet); the accepted one has the inode of a socket
 * among pid's descriptors. */
static int server_accepted(pid_t pid, unsigned server, unsigned client)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    if (!f) return 0;
    char line[512];
    unsigned long inode = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned lport, rport;
        unsigned long ino;
        if (sscanf(line, " %*d: %*x:%x %*x:%x %*x %*x:%*x %*x:%*x %*x %*u %*d %lu", &lport, &rport,
                   &ino) == 3 &&
            lport == server && rport == client)
            inode = ino;
    }
    fclose(f);
    if (!inode) return 0;
    char dir[64], want[64], link[64], p[320];
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    DIR *d = opendir(dir);
    int found = 0;
    struct dirent *e;
    while (d && !found && (e = readdir(d))) {
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(p, link, sizeof link - 1);
        if (n > 0) {
            link[n] = '\0';
            found = !strcmp(link, want);
        }
    }
    if (d) closedir(d);
    return found;
}

/* Sends the body in small pieces and SIGTERMs the server once it has
 * accepted the connection. curl may hand the first piece to the kernel
 * together with the headers before the server has accepted the connection;
 * a SIGTERM then would close the listen socket on a connection still in the
 * backlog (a reset, not the case under test), and how long accepting takes
 * depends on the load. So the signal goes out on the second piece, once
 * /proc shows the connection accepted (a deadline of 30 s, not a sleep). */
static size_t slow_read(char *buf, size_t sz, size_t n, void *ctx)
{
    slow_body *b = ctx;
    if (!b->signalled && b->at > 0) {
        long client = 0;
        curl_easy_getinfo(b->curl, CURLINFO_LOCAL_PORT, &client);
        for (int i = 0; i < 3000 && !b->accepted; i++) {
            b->accepted = server_accepted(b->server, b->port, (unsigned)client);
            if (!b->accepted) pg_sleep_ms(10);
        }
        kill(b->server, SIGTERM);
        b->signalled = 1;
        pg_sleep_ms(200); /* the server is now shutting down mid-request */
    }
    size_t k = sz * n < 256 ? sz * n : 256;
    if (k > b->len - b->at) k = b->len - b->at;
    memcpy(buf, b->p + b->at, k);
    b->at += k;
    return k;
}

/* SIGTERM during an upload: the request in flight still completes and is
 * stored, then the process exits 0. */
START_TEST(shutdown_finishes_inflight_request)
{
    pg_srv s;
    pg_test_srv_start(&s, NULL);
    char id[64], path[128], url[256];
    create_ds(&s, s.admin, DS_PUBLIC2, id);
    rows_path(id, path, sizeof path);
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", s.port, path);
    static float raw[512];
    for (int i = 0; i < 512; i++) raw[i] = (float)i;
    CURL *c = curl_easy_init();
    slow_body b = {(const unsigned char *)raw, sizeof raw, 0, s.pid, s.port, c, 0, 0};
    char auth[160];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", s.admin);
    struct curl_slist *h = curl_slist_append(NULL, auth);
    h = curl_slist_append(h, "Content-Type: application/octet-stream");
    h = curl_slist_append(h, "X-Rows: 256");
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, slow_read);
    curl_easy_setopt(c, CURLOPT_READDATA, &b);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)sizeof raw);
    curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    FILE *devnull = fopen("/dev/null", "w");
    curl_easy_setopt(c, CURLOPT_WRITEDATA, devnull);
    ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
    long status;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    fclose(devnull);
    ck_assert(b.accepted && b.signalled);
    ck_assert_int_eq(status, 200);
    ck_assert_int_eq(pg_srv_stop(&s), 0);
    ck_assert_int_eq(pg_srv_start(&s, NULL), 0);
    ck_assert_int_eq(ds_n(&s, s.admin, id), 256);
    pg_test_srv_end(&s);
}
END_TEST

START_TEST(csv_and_idx_uploads)
{
    char id[64], path[160];
    create_ds(&srv, srv.admin,
              "{\"name\":\"t\",\"shape\":[2],\"range\":[0,1],\"num_classes\":3,"
              "\"privacy\":{\"model\":\"central\",\"budget\":{\"epsilon\":1,\"delta\":1e-6}}}",
              id);
    rows_path(id, path, sizeof path);
    const char *csv = "x,y,label\r\n0.25,0.5,2\r\n1,0,0\r\n";
    pg_resp r;
    pg_http(&srv, "POST", path, srv.admin, "text/csv", csv, strlen(csv), NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    conform(&r, "RowsAppended");
    pg_resp_free(&r);
    const char *plain = "0.125,0.75\n0,1\n0.5,0.5\n";
    pg_http(&srv, "POST", path, srv.admin, "text/csv; charset=utf-8", plain, strlen(plain), NULL,
            &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    pg_resp_free(&r);
    ck_assert_int_eq(ds_n(&srv, srv.admin, id), 5);
    float got[16];
    int32_t lab[8];
    ck_assert_uint_eq(stored_values(id, got, 16, lab), 10);
    ck_assert(got[0] == 0.25f && got[1] == 0.5f && got[4] == 0.125f && got[5] == 0.75f);
    ck_assert(lab[0] == 2 && lab[1] == 0 && lab[2] == -1);

    const char *bad_nan = "0.1,0.1\n0.2,nan\n", *bad_w = "0.1,0.1\n0.2\n",
               *bad_lab = "x,y,label\n0,0,1\n0,0,3\n", *bad_rng = "0,0\n0,0\n0,2\n",
               *bad_txt = "0,0\n\"unterminated\n";
    reject(id, "text/csv", bad_nan, strlen(bad_nan), NULL, 422, "rows[2]");
    reject(id, "text/csv", bad_w, strlen(bad_w), NULL, 400, NULL);
    reject(id, "text/csv", bad_lab, strlen(bad_lab), NULL, 422, "rows[2]");
    reject(id, "text/csv", bad_rng, strlen(bad_rng), NULL, 422, "rows[3]");
    reject(id, "text/csv", bad_txt, strlen(bad_txt), NULL, 400, NULL);
    const char *three = "0,0,0\n";
    reject(id, "text/csv", three, strlen(three), NULL, 422, "rows[1]");

    /* uint8 images [n, 2, 2] into a central [1,2,2] dataset in [0, 1] */
    char img[64];
    create_ds(&srv, srv.admin,
              "{\"name\":\"i\",\"shape\":[1,2,2],\"range\":[0,1],"
              "\"privacy\":{\"model\":\"central\",\"budget\":{\"epsilon\":1,\"delta\":1e-6}}}",
              img);
    char ipath[128];
    rows_path(img, ipath, sizeof ipath);
    unsigned char px[12] = {0, 255, 51, 102, 7, 8, 9, 10, 255, 255, 0, 0};
    size_t dims[3] = {3, 2, 2};
    static unsigned char idx[256];
    size_t il = pg_idx_size(PG_IDX_U8, dims, 3);
    ck_assert_int_eq(pg_idx_write(PG_IDX_U8, px, dims, 3, idx, sizeof idx, NULL), PG_OK);
    reject(img, "application/x-idx", idx, il, NULL, 422, "rows[1]"); /* 255 > 1 unscaled */
    snprintf(path, sizeof path, "%s?scale=255", ipath);
    pg_http(&srv, "POST", path, srv.admin, "application/x-idx", idx, il, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    pg_resp_free(&r);
    ck_assert_uint_eq(stored_values(img, got, 16, NULL), 12);
    for (int i = 0; i < 12; i++) ck_assert(got[i] == (float)((double)px[i] / 255.0));
    size_t wrong[2] = {2, 6};
    il = pg_idx_size(PG_IDX_U8, wrong, 2);
    pg_idx_write(PG_IDX_U8, px, wrong, 2, idx, sizeof idx, NULL);
    reject(img, "application/x-idx", idx, il, NULL, 422, "body");
    reject(img, "application/x-idx", idx, 5, NULL, 400, NULL);
    snprintf(path, sizeof path, "%s?scale=-1", ipath);
    pg_http(&srv, "POST", path, srv.admin, "application/x-idx", idx, il, NULL, &r);
    expect_problem(&r, 400, "scale");
    ck_assert_int_eq(ds_n(&srv, srv.admin, img), 3);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("integration");
    TCase *t = tcase_create("shared");
    tcase_add_unchecked_fixture(t, start_shared, stop_shared);
    tcase_set_timeout(t, 60);
    tcase_add_test(t, operational_routes);
    tcase_add_test(t, auth_scopes_and_tenants);
    tcase_add_test(t, dataset_declarations);
    tcase_add_test(t, every_upload_format);
    tcase_add_test(t, every_rejection_stores_nothing);
    tcase_add_test(t, idempotent_retries);
    tcase_add_test(t, pagination);
    tcase_add_test(t, concurrent_appends);
    tcase_add_test(t, shuffle_report_follows_n);
    tcase_add_test(t, csv_and_idx_uploads);
    suite_add_tcase(s, t);
    TCase *own = tcase_create("own_server");
    tcase_add_unchecked_fixture(own, start_shared, stop_shared);
    tcase_set_timeout(own, 60);
    tcase_add_test(own, limits_413);
    tcase_add_test(own, delete_and_job_conflict);
    tcase_add_test(own, restart_keeps_everything);
    tcase_add_test(own, readyz_turns_503);
    tcase_add_test(own, npy_100mb_streams_in_bounded_memory);
    tcase_add_test(own, shutdown_finishes_inflight_request);
    suite_add_tcase(s, own);
    return s;
}

PG_TEST_MAIN(suite)
