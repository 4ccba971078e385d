/* Jobs end to end against a live privgend: an entropic_gan job on a local
 * 2-D toy dataset from submission to samples (every format parsed back:
 * CSV, NPY through engine/data/npy, PNG through libpng), validation errors,
 * dry runs, the memory limit, SSE progress and completion, queue limits,
 * cancellation of queued and running jobs, and kill -9 + restart resuming a
 * job from its checkpoint. Bodies are checked against openapi.yaml.
 *
 * Central data through the dp_sinkhorn trainer: ledger entries equal the
 * accountant for their (q, sigma, steps), dry runs charge nothing, 409 with
 * the numbers, eight concurrent submissions admitted only up to the cap,
 * queued cancel refunded and running cancel not, and kill -9 mid-job
 * resuming without a second charge and without exceeding the planned steps.
 * (The trainer set comes from the registry: these tests name dp_sinkhorn,
 * the job code never does.)
 *
 * Public data: a job's public_dataset_id must name a public dataset of the
 * same tenant and row shape (422 on the field otherwise), methods without a
 * latent mode refuse it, a latent swd_flow_r job runs with it and shows it,
 * deleting it is refused while the job is queued or running (409), and the
 * ledger has no entry for it. */
#include <math.h>
#include <png.h>
#include <pthread.h>

#include "engine/core/alloc.h"
#include "engine/data/npy.h"
#include "engine/privacy/privacy.h"
#include "integration/isuite.h"
#include "render/render.h"
#include "support/pg_http_test.h"
#include "support/pg_test.h"

static pg_srv srv;
static pg_oa oa;

static void start_shared(void)
{
    static const char *const extra[] = {"--workers",
                                        "1",
                                        "--max-queued",
                                        "3",
                                        "--max-samples",
                                        "5000",
                                        "--max-stream-samples",
                                        "8000",
                                        "--max-job-memory",
                                        "64M",
                                        NULL};
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

static void expect_problem(pg_resp *r, long status, const char *field)
{
    pg_isuite_problem(&oa, r, status, field, NULL, 0);
}

static void req(const pg_srv *s, const char *method, const char *path, const char *body, pg_resp *r)
{
    pg_http(s, method, path, s->admin, body ? "application/json" : NULL, body,
            body ? strlen(body) : 0, NULL, r);
}

/* Row i of the local toy set: two draws of an LCG, u in [-1, 1), v in
 * [-0.5, 0.5). */
static double lcg_cell(int i, int j, void *ctx)
{
    unsigned *x = ctx;
    *x = *x * 1103515245u + 12345u;
    double u = (double)(*x >> 8) / 16777216.0;
    return j ? u - 0.5 : 2.0 * u - 1.0;
}

/* POSTs body to path and checks the problem that answers: status, and the
 * field its first error names (NULL: not checked). */
static void refused(const pg_srv *s, const char *path, const char *body, long status,
                    const char *field)
{
    pg_resp r;
    req(s, "POST", path, body, &r);
    expect_problem(&r, status, field);
}

/* A local Gaussian-LDP 2-D dataset of n noisy points; returns its id. */
static void make_local(const pg_srv *s, int n, char id[64])
{
    unsigned x = 12345;
    pg_test_dataset_rows(s, s->admin,
                         "{\"name\":\"toy\",\"shape\":[2],\"range\":[-4,4],\"privacy\":{\"model\":"
                         "\"local\",\"mechanism\":\"gaussian\",\"epsilon\":1,\"delta\":1e-5,"
                         "\"sensitivity\":0.5,\"noise_scale\":2.5}}",
                         n, 2, "%.5f", lcg_cell, &x, id);
}

static void job_body(char *buf, size_t cap, const char *ds, long steps, long every)
{
    snprintf(buf, cap,
             "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\",\"model\":{\"hidden\":[16]},"
             "\"train\":{\"steps\":%ld,\"batch_size\":32},\"ot\":{\"max_iter\":30},"
             "\"checkpoint_every\":%ld,\"seed\":7}",
             ds, steps, every);
}

static void submit(const pg_srv *s, const char *body, char id[64])
{
    pg_resp r;
    pg_test_post_id(s, s->admin, "/v1/jobs", body, 202, id, &r);
    conform(&r, "Job");
    char want[128];
    snprintf(want, sizeof want, "/v1/jobs/%s", id);
    ck_assert_str_eq(r.location, want);
    pg_resp_free(&r);
}

/* Polls GET /v1/jobs/{id} until pred holds (or 90 s); returns the last body. */
static json_t *poll_job(const pg_srv *s, const char *id, const char *status, long min_step)
{
    return pg_test_job_wait(s, id, status, min_step, 50, 1800);
}

/* ---- lifecycle ---------------------------------------------------------- */

static int decode_png(const char *buf, size_t len, unsigned *w, unsigned *h)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, buf, len)) return -1;
    img.format = PNG_FORMAT_RGB;
    unsigned char *px = malloc(PNG_IMAGE_SIZE(img));
    int ok = px && png_image_finish_read(&img, NULL, px, 0, NULL);
    /* the scatter has drawn points: some pixel is neither white nor gray */
    int colored = 0;
    for (size_t i = 0; ok && i + 2 < PNG_IMAGE_SIZE(img); i += 3)
        colored |= px[i] != px[i + 1] || px[i + 1] != px[i + 2];
    free(px);
    *w = img.width;
    *h = img.height;
    return ok && colored ? 0 : -1;
}

/* A served 2-D PNG is byte for byte render/'s plot of the same rows (NPY,
 * same n and seed) titled as the job's view reads: its method, "central"
 * when the plan charges, "local" for a local mechanism, else "public", and
 * epsilon when > 0 (the title once came from that view, rebuilt per request;
 * api/plot_request.c now reads the job in place). */
static void png_is_the_views_plot(const pg_srv *s, const char *job, float lo, float hi,
                                  const char *model)
{
    char path[256];
    pg_resp v, x, p;
    snprintf(path, sizeof path, "/v1/jobs/%s", job);
    req(s, "GET", path, NULL, &v);
    ck_assert_int_eq(v.status, 200);
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=300&seed=11&format=npy", job);
    req(s, "GET", path, NULL, &x);
    ck_assert_int_eq(x.status, 200);
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=300&seed=11&format=png", job);
    req(s, "GET", path, NULL, &p);
    ck_assert_int_eq(p.status, 200);
    pg_npy_header h;
    float *rows;
    ck_assert_int_eq(pg_npy_read(x.body, x.len, &h, &rows, NULL), PG_OK);
    json_t *pr = json_object_get(v.json, "privacy"), *eps = json_object_get(pr, "epsilon");
    const char *mech = json_string_value(json_object_get(pr, "mechanism"));
    json_t *cks = json_object_get(v.json, "checkpoints");
    pg_render_plot opt;
    pg_render_plot_defaults(&opt);
    opt.method = json_string_value(json_object_get(v.json, "method"));
    opt.privacy = json_is_true(json_object_get(pr, "charges")) ? "central"
                  : mech && !strncmp(mech, "local", 5)         ? "local"
                                                               : "public";
    ck_assert_str_eq(opt.privacy, model);
    if (json_is_number(eps) && json_number_value(eps) > 0) opt.epsilon = json_number_value(eps);
    opt.step = (long)json_integer_value(
        json_object_get(json_array_get(cks, json_array_size(cks) - 1), "step"));
    char *png;
    size_t len;
    ck_assert_int_eq(pg_render_png_plot(rows, 300, 2, 1, (const size_t[3]){2, 0, 0}, lo, hi, &opt,
                                        &png, &len, NULL),
                     PG_OK);
    ck_assert_uint_eq(len, p.len);
    ck_assert(!memcmp(png, p.body, len));
    free(png);
    pg_free(rows);
    pg_resp_free(&p);
    pg_resp_free(&x);
    pg_resp_free(&v);
}

START_TEST(entropic_gan_lifecycle)
{
    char ds[64], job[64], body[512], path[256];
    make_local(&srv, 400, ds);
    pg_resp r;
    req(&srv, "GET", "/v1/algorithms", NULL, &r);
    ck_assert_int_eq(r.status, 200);
    conform(&r, "AlgorithmList");
    json_t *it;
    size_t i;
    int seen = 0;
    json_array_foreach(json_object_get(r.json, "items"), i, it)
    {
        if (strcmp(json_string_value(json_object_get(it, "name")), "entropic_gan")) continue;
        seen = 1;
        ck_assert_str_eq(json_string_value(json_array_get(json_object_get(it, "accepts"), 0)),
                         "local");
        ck_assert(json_array_size(json_object_get(it, "parameters")) > 5);
    }
    ck_assert(seen);
    pg_resp_free(&r);

    /* dry run: resolved spec with a drawn seed, plan charging nothing */
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\",\"model\":{\"hidden\":[16]},"
             "\"train\":{\"steps\":60,\"batch_size\":32}}",
             ds);
    req(&srv, "POST", "/v1/jobs?dry_run=true", body, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    conform(&r, "DryRun");
    ck_assert(json_is_integer(json_object_get(json_object_get(r.json, "spec"), "seed")));
    ck_assert(json_is_false(json_object_get(json_object_get(r.json, "plan"), "charges")));
    ck_assert(json_integer_value(json_object_get(r.json, "memory_bytes")) > 0);
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs?dataset_id=%s", ds);
    req(&srv, "GET", path, NULL, &r);
    ck_assert_int_eq((int)json_array_size(json_object_get(r.json, "items")), 0);
    pg_resp_free(&r);

    job_body(body, sizeof body, ds, 60, 25);
    submit(&srv, body, job);
    json_t *j = poll_job(&srv, job, "succeeded", 0);
    /* the replica that ran it: the default node id, HOSTNAME:0-XXXXXXXX (a
     * hash of the data dir) for a server listening on port 0 */
    const char *node = json_string_value(json_object_get(j, "node"));
    ck_assert_ptr_nonnull(node);
    const char *tail = strstr(node, ":0-");
    ck_assert_msg(tail && tail > node && strlen(tail) == 11 &&
                      strspn(tail + 3, "0123456789abcdef") == 8,
                  "node %s", node);
    json_t *prog = json_object_get(j, "progress");
    ck_assert_int_eq((int)json_integer_value(json_object_get(prog, "step")), 60);
    ck_assert_int_eq((int)json_integer_value(json_object_get(prog, "total_steps")), 60);
    ck_assert(json_is_number(json_object_get(prog, "loss")));
    json_t *cks = json_object_get(j, "checkpoints");
    ck_assert_int_eq((int)json_array_size(cks), 3); /* 25, 50 and the end */
    ck_assert_int_eq((int)json_integer_value(json_object_get(json_array_get(cks, 2), "step")), 60);
    ck_assert_int_eq((int)json_array_size(json_object_get(j, "history")), 60);
    ck_assert_int_eq((int)json_integer_value(json_object_get(json_object_get(j, "spec"), "seed")),
                     7);
    json_int_t ck_bytes = json_integer_value(json_object_get(json_array_get(cks, 0), "bytes"));
    json_decref(j);
    snprintf(path, sizeof path, "/v1/jobs/%s", job);
    req(&srv, "GET", path, NULL, &r);
    conform(&r, "Job");
    pg_resp_free(&r);

    /* samples: reproducible with a seed, every format parses */
    char p1[256];
    snprintf(p1, sizeof p1, "/v1/jobs/%s/samples?n=16&seed=3", job);
    pg_resp a, b;
    req(&srv, "GET", p1, NULL, &a);
    req(&srv, "GET", p1, NULL, &b);
    ck_assert_int_eq(a.status, 200);
    conform(&a, "Samples");
    ck_assert_str_eq(a.body, b.body);
    pg_resp_free(&b);
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=16&seed=4", job);
    req(&srv, "GET", path, NULL, &b);
    ck_assert_str_ne(a.body, b.body);
    pg_resp_free(&b);
    json_t *rows = json_object_get(a.json, "samples");
    ck_assert_int_eq((int)json_array_size(rows), 16);

    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=16&seed=3&format=csv", job);
    req(&srv, "GET", path, NULL, &b);
    ck_assert_int_eq(b.status, 200);
    ck_assert_str_eq(b.ctype, "text/csv");
    char *line = strtok(b.body, "\n");
    ck_assert_str_eq(line, "x0,x1");
    for (int k = 0; k < 16; k++) {
        line = strtok(NULL, "\n");
        ck_assert_ptr_nonnull(line);
        double x0, x1;
        ck_assert_int_eq(sscanf(line, "%lf,%lf", &x0, &x1), 2);
        json_t *row = json_array_get(rows, (size_t)k);
        ck_assert_double_eq_tol(x0, json_number_value(json_array_get(row, 0)), 1e-6);
        ck_assert_double_eq_tol(x1, json_number_value(json_array_get(row, 1)), 1e-6);
    }
    pg_resp_free(&b);

    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=16&seed=3&format=npy", job);
    req(&srv, "GET", path, NULL, &b);
    ck_assert_int_eq(b.status, 200);
    pg_npy_header h;
    float *x;
    ck_assert_int_eq(pg_npy_read(b.body, b.len, &h, &x, NULL), PG_OK);
    ck_assert_int_eq((int)h.ndim, 2);
    ck_assert_int_eq((int)h.shape[0], 16);
    ck_assert_int_eq((int)h.shape[1], 2);
    for (int k = 0; k < 16; k++)
        ck_assert_float_eq((float)json_number_value(json_array_get(json_array_get(rows, k), 1)),
                           x[2 * k + 1]);
    pg_free(x);
    pg_resp_free(&b);

    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=500&seed=3&format=png", job);
    req(&srv, "GET", path, NULL, &b);
    ck_assert_int_eq(b.status, 200);
    ck_assert_str_eq(b.ctype, "image/png");
    unsigned w, hh;
    ck_assert_int_eq(decode_png(b.body, b.len, &w, &hh), 0);
    ck_assert_uint_eq(w, 540); /* PG_PLOT_W x PG_PLOT_H (render/plot.h) */
    ck_assert_uint_eq(hh, 540);
    pg_resp_free(&b);
    png_is_the_views_plot(&srv, job, -4.0f, 4.0f, "local");

    /* an earlier checkpoint is a different model */
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=16&seed=3&checkpoint=25", job);
    req(&srv, "GET", path, NULL, &b);
    ck_assert_int_eq(b.status, 200);
    ck_assert_int_eq((int)json_integer_value(json_object_get(b.json, "step")), 25);
    ck_assert_str_ne(a.body, b.body);
    pg_resp_free(&b);
    pg_resp_free(&a);

    /* bounds: streamed formats --max-stream-samples, png --max-samples
     * (both used to be --max-samples) */
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=8001", job);
    req(&srv, "GET", path, NULL, &r);
    ck_assert_ptr_nonnull(strstr(r.body, "--max-stream-samples"));
    expect_problem(&r, 400, "n");
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=5001&format=png", job);
    req(&srv, "GET", path, NULL, &r);
    ck_assert_ptr_nonnull(strstr(r.body, "--max-samples"));
    expect_problem(&r, 400, "n");
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=8000&format=csv&seed=2", job);
    req(&srv, "GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    size_t lines = 0;
    for (size_t c = 0; c < r.len; c++) lines += r.body[c] == '\n';
    ck_assert_uint_eq(lines, 8001); /* header + rows */
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?label=0", job);
    req(&srv, "GET", path, NULL, &r);
    expect_problem(&r, 400, "label");
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=gif", job);
    req(&srv, "GET", path, NULL, &r);
    expect_problem(&r, 400, "format");
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?checkpoint=24", job);
    req(&srv, "GET", path, NULL, &r);
    expect_problem(&r, 404, NULL);

    /* checkpoints: list and download */
    snprintf(path, sizeof path, "/v1/jobs/%s/checkpoints", job);
    req(&srv, "GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    conform(&r, "CheckpointList");
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/checkpoints/25", job);
    req(&srv, "GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.ctype, "application/octet-stream");
    ck_assert_uint_eq(r.len, (size_t)ck_bytes);
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/checkpoints/26", job);
    req(&srv, "GET", path, NULL, &r);
    expect_problem(&r, 404, NULL);

    /* list filters */
    snprintf(path, sizeof path, "/v1/jobs?status=succeeded&dataset_id=%s", ds);
    req(&srv, "GET", path, NULL, &r);
    conform(&r, "JobList");
    ck_assert_int_eq((int)json_array_size(json_object_get(r.json, "items")), 1);
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs?status=queued&dataset_id=%s", ds);
    req(&srv, "GET", path, NULL, &r);
    ck_assert_int_eq((int)json_array_size(json_object_get(r.json, "items")), 0);
    pg_resp_free(&r);
    req(&srv, "GET", "/v1/jobs?status=bogus", NULL, &r);
    expect_problem(&r, 400, "status");
    /* the light list: same job and progress, no history */
    snprintf(path, sizeof path, "/v1/jobs?dataset_id=%s&history=false", ds);
    req(&srv, "GET", path, NULL, &r);
    conform(&r, "JobList");
    json_t *light = json_array_get(json_object_get(r.json, "items"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(light, "id")), job);
    ck_assert_ptr_null(json_object_get(light, "history"));
    ck_assert_int_eq(
        (int)json_integer_value(json_object_get(json_object_get(light, "progress"), "step")), 60);
    pg_resp_free(&r);
    req(&srv, "GET", "/v1/jobs?history=maybe", NULL, &r);
    expect_problem(&r, 400, "history");

    /* metrics */
    pg_http(&srv, "GET", "/metrics", NULL, NULL, NULL, 0, NULL, &r);
    ck_assert_ptr_nonnull(strstr(r.body, "privgen_jobs{state=\"succeeded\"}"));
    ck_assert_ptr_nonnull(strstr(r.body, "privgen_samples_served_total"));
    pg_resp_free(&r);

    /* another tenant sees none of it */
    req(&srv, "POST", "/v1/tokens", "{\"scope\":\"admin\",\"new_tenant\":true}", &r);
    ck_assert_msg(r.status == 201, "%s", r.body);
    char other[128];
    snprintf(other, sizeof other, "%s", json_string_value(json_object_get(r.json, "token")));
    pg_resp_free(&r);
    const char *const foreign[] = {"/v1/jobs/%s", "/v1/jobs/%s/samples", "/v1/jobs/%s/checkpoints",
                                   "/v1/jobs/%s/checkpoints/25", "/v1/jobs/%s/events"};
    for (size_t f = 0; f < sizeof foreign / sizeof foreign[0]; f++) {
        snprintf(path, sizeof path, foreign[f], job);
        pg_http(&srv, "GET", path, other, NULL, NULL, 0, NULL, &r);
        expect_problem(&r, 404, NULL);
    }
    pg_http(&srv, "GET", "/v1/jobs", other, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq((int)json_array_size(json_object_get(r.json, "items")), 0);
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/cancel", job);
    pg_http(&srv, "POST", path, other, NULL, NULL, 0, NULL, &r);
    expect_problem(&r, 404, NULL);
    snprintf(body, sizeof body, "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\"}", ds);
    pg_http(&srv, "POST", "/v1/jobs", other, "application/json", body, strlen(body), NULL, &r);
    expect_problem(&r, 422, "dataset_id");

    /* a finished job cannot be cancelled */
    snprintf(path, sizeof path, "/v1/jobs/%s/cancel", job);
    req(&srv, "POST", path, NULL, &r);
    expect_problem(&r, 409, NULL);
}
END_TEST

START_TEST(invalid_specs)
{
    char ds[64], body[768];
    make_local(&srv, 100, ds);
    pg_resp r;
    snprintf(body, sizeof body, "{\"dataset_id\":\"%s\",\"method\":\"nope\"}", ds);
    refused(&srv, "/v1/jobs", body, 422, "method");
    refused(&srv, "/v1/jobs", "{\"dataset_id\":\"ds_0000000000000000\",\"method\":\"x\"}", 422,
            "dataset_id");
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\",\"privacy\":{\"epsilon\":1}}", ds);
    refused(&srv, "/v1/jobs", body, 422, "privacy");
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\",\"train\":{\"steps\":0}}", ds);
    refused(&srv, "/v1/jobs", body, 422, "train.steps");
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\",\"train\":{\"batch_size\":32},"
             "\"model\":{\"hidden\":[2048,2048]}}",
             ds);
    refused(&srv, "/v1/jobs", body, 422, "model"); /* above --max-job-memory 64M */
    /* central data: no trainer without DP may run; the budget stays untouched */
    req(&srv, "POST", "/v1/datasets",
        "{\"name\":\"c\",\"shape\":[2],\"range\":[-1,1],\"privacy\":{\"model\":\"central\","
        "\"budget\":{\"epsilon\":1,\"delta\":1e-5}}}",
        &r);
    ck_assert_int_eq(r.status, 201);
    char cds[64], path[128];
    snprintf(cds, sizeof cds, "%s", json_string_value(json_object_get(r.json, "id")));
    pg_resp_free(&r);
    snprintf(body, sizeof body, "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\"}", cds);
    refused(&srv, "/v1/jobs", body, 422, "method");
    snprintf(path, sizeof path, "/v1/datasets/%s/budget", cds);
    req(&srv, "GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    conform(&r, "Budget");
    ck_assert(json_number_value(json_object_get(r.json, "spent_epsilon")) == 0.0);
    ck_assert(json_number_value(json_object_get(r.json, "remaining_epsilon")) == 1.0);
    ck_assert_int_eq((int)json_array_size(json_object_get(r.json, "entries")), 0);
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/datasets/%s/budget", ds); /* local: no budget */
    req(&srv, "GET", path, NULL, &r);
    expect_problem(&r, 409, NULL);
    /* Gaussian local data: the dataset's O(1) closed-form shuffle report does
     * not apply (null); a job's privacy report carries the numerical bound
     * with n * delta_ldp added to delta. */
    snprintf(path, sizeof path, "/v1/datasets/%s", ds);
    req(&srv, "GET", path, NULL, &r);
    json_t *rep = json_object_get(r.json, "privacy_report");
    ck_assert(json_is_null(json_object_get(rep, "shuffle")));
    pg_resp_free(&r);
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"entropic_gan\",\"train\":{\"batch_size\":32}}",
             ds);
    req(&srv, "POST", "/v1/jobs?dry_run=true", body, &r);
    ck_assert_int_eq(r.status, 200);
    json_t *plan = json_object_get(r.json, "plan");
    ck_assert_str_eq(json_string_value(json_object_get(plan, "shuffle_bound")),
                     "numerical (Feldman-McMillan-Talwar)");
    double se = json_number_value(json_object_get(plan, "shuffle_epsilon"));
    double sd = json_number_value(json_object_get(plan, "shuffle_delta"));
    ck_assert(se > 0.0 && se < 1.0);
    ck_assert_double_eq_tol(sd, 1e-6 + 100 * 1e-5, 1e-12);
    double want;
    ck_assert_int_eq(pg_shuffle_numerical(1.0, 100, 1e-6, &want, NULL), PG_OK);
    ck_assert(pg_test_reldiff(se, want) < 1e-12);
    pg_resp_free(&r);
    req(&srv, "GET", "/v1/jobs/job_0000000000000000", NULL, &r);
    expect_problem(&r, 404, NULL);
    /* a dataset without rows cannot be planned */
    req(&srv, "POST", "/v1/datasets",
        "{\"name\":\"empty\",\"shape\":[2],\"range\":[-1,1],\"privacy\":{\"model\":"
        "\"central\",\"budget\":{\"epsilon\":1,\"delta\":1e-5}}}",
        &r);
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"dp_sinkhorn\",\"privacy\":{\"epsilon\":1}}",
             json_string_value(json_object_get(r.json, "id")));
    pg_resp_free(&r);
    refused(&srv, "/v1/jobs", body, 422, "dataset_id");
}
END_TEST

/* ---- SSE -------------------------------------------------------------- */

/* Collects the stream (into a pg_resp's body, as pg_http does), and ends
 * the transfer once the done event is complete. */
static size_t sse_write(char *p, size_t sz, size_t n, void *ctx)
{
    pg_resp *b = ctx;
    size_t k = pg_itest_body(p, sz, n, ctx);
    if (!k) return 0;
    return strstr(b->body, "event: done\n") && strstr(strstr(b->body, "event: done\n"), "\n\n") ? 0
                                                                                                : k;
}

static int count(const char *s, const char *what)
{
    int c = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what)) c++;
    return c;
}

START_TEST(sse_delivers_progress_and_completion)
{
    char ds[64], job[64], body[512], url[256], auth[160];
    make_local(&srv, 200, ds);
    job_body(body, sizeof body, ds, 400, 100);
    submit(&srv, body, job);
    snprintf(url, sizeof url, "http://127.0.0.1:%u/v1/jobs/%s/events", srv.port, job);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", srv.admin);
    pg_resp b = {0};
    CURL *c = curl_easy_init();
    struct curl_slist *hl = curl_slist_append(NULL, auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sse_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 90L);
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    char *ct = NULL;
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
    ck_assert_str_eq(ct, "text/event-stream");
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    ck_assert_int_eq(code, 200);
    ck_assert_msg(rc == CURLE_WRITE_ERROR, "stream ended without done: %d", rc);
    ck_assert_int_eq(count(b.body, "event: done\n"), 1);
    ck_assert_int_ge(count(b.body, "event: progress\n"), 2);
    /* the done event carries the finished job */
    const char *d = strstr(strstr(b.body, "event: done\n"), "data: ") + 6;
    json_t *o = json_loadb(d, strcspn(d, "\n"), 0, NULL);
    ck_assert_ptr_nonnull(o);
    ck_assert_str_eq(json_string_value(json_object_get(o, "status")), "succeeded");
    char why[256];
    ck_assert_msg(pg_oa_validate(&oa, "Job", o, why, sizeof why) == 0, "%s", why);
    json_decref(o);
    free(b.body);
}
END_TEST

/* A stream read by another thread: the body so far under a lock. */
typedef struct sse_watch {
    pthread_mutex_t mu;
    pg_resp buf;
} sse_watch;

static size_t sse_watch_write(char *p, size_t sz, size_t n, void *ctx)
{
    sse_watch *w = ctx;
    pthread_mutex_lock(&w->mu);
    size_t k = pg_itest_body(p, sz, n, &w->buf);
    pthread_mutex_unlock(&w->mu);
    return k;
}

static double mono_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* An event stream read by its own thread (curl gives up after 90 s). */
typedef struct sse_run {
    char url[256], auth[160];
    sse_watch w;
    CURLcode rc;
    long code;
} sse_run;

static void *sse_run_thread(void *arg)
{
    sse_run *c = arg;
    CURL *h = curl_easy_init();
    struct curl_slist *hl = curl_slist_append(NULL, c->auth);
    curl_easy_setopt(h, CURLOPT_URL, c->url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sse_watch_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &c->w);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 90L);
    c->rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &c->code);
    curl_slist_free_all(hl);
    curl_easy_cleanup(h);
    return NULL;
}

START_TEST(shutdown_ends_event_streams)
{
    /* SIGTERM with a stream open on a running job: the stream ends cleanly
     * without a `done` event and the server exits 0 (the job stays running
     * and resumes on the next start). */
    pg_srv s;
    pg_test_srv_start(&s, NULL);
    char ds[64], job[64], body[512];
    make_local(&s, 200, ds);
    job_body(body, sizeof body, ds, 10000000, 1000000);
    submit(&s, body, job);
    json_decref(poll_job(&s, job, NULL, 2));
    sse_run c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.w.mu, NULL);
    snprintf(c.url, sizeof c.url, "http://127.0.0.1:%u/v1/jobs/%s/events", s.port, job);
    snprintf(c.auth, sizeof c.auth, "Authorization: Bearer %s", s.admin);
    pthread_t th;
    pthread_create(&th, NULL, sse_run_thread, &c);
    pg_sleep_ms(500);
    ck_assert_int_eq(pg_srv_stop(&s), 0);
    pthread_join(th, NULL);
    pthread_mutex_destroy(&c.w.mu);
    ck_assert_int_eq(c.rc, CURLE_OK);
    ck_assert_ptr_nonnull(c.w.buf.body);
    ck_assert_int_ge(count(c.w.buf.body, "event: progress\n"), 1);
    ck_assert_int_eq(count(c.w.buf.body, "event: done\n"), 0);
    free(c.w.buf.body);
    ck_assert_int_eq(pg_srv_start(&s, NULL), 0);
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s", job);
    pg_resp r;
    req(&s, "GET", path, NULL, &r);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "running");
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/cancel", job);
    req(&s, "POST", path, NULL, &r);
    ck_assert_int_eq(r.status, 202);
    pg_resp_free(&r);
    json_decref(poll_job(&s, job, "cancelled", 0));
    pg_test_srv_end(&s);
}
END_TEST

/* A stream is authorized for as long as it lasts: revoking its token (here
 * through the API, by the token itself) ends it within a few seconds with a
 * final `closed` event carrying the 401 problem, and nothing after it. The
 * old stream went on sending the job's progress to the revoked token until
 * the client gave up (here curl's 90 s). The 30 s bound is slack for a
 * loaded machine; the server's own bound is about 2 s. */
START_TEST(sse_ends_when_its_token_is_revoked)
{
    char ds[64], job[64], body[512], path[128], tok[128], tid[64];
    make_local(&srv, 200, ds);
    job_body(body, sizeof body, ds, 10000000, 1000000);
    submit(&srv, body, job);
    json_decref(poll_job(&srv, job, "running", 0));
    pg_resp r;
    req(&srv, "POST", "/v1/tokens", "{\"scope\":\"read\"}", &r);
    ck_assert_msg(r.status == 201, "mint: %ld %s", r.status, r.body);
    snprintf(tok, sizeof tok, "%s", json_string_value(json_object_get(r.json, "token")));
    snprintf(tid, sizeof tid, "%s", json_string_value(json_object_get(r.json, "id")));
    pg_resp_free(&r);

    sse_run c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.w.mu, NULL);
    snprintf(c.url, sizeof c.url, "http://127.0.0.1:%u/v1/jobs/%s/events", srv.port, job);
    snprintf(c.auth, sizeof c.auth, "Authorization: Bearer %s", tok);
    pthread_t th;
    pthread_create(&th, NULL, sse_run_thread, &c);
    int open = 0;
    for (int i = 0; i < 3000 && !open; i++) { /* the stream is open: a progress event came */
        pthread_mutex_lock(&c.w.mu);
        open = c.w.buf.body && strstr(c.w.buf.body, "event: progress\n");
        pthread_mutex_unlock(&c.w.mu);
        if (!open) pg_sleep_ms(10);
    }
    ck_assert_msg(open, "no progress event in 30 s");

    snprintf(path, sizeof path, "/v1/tokens/%s", tid);
    pg_http(&srv, "DELETE", path, tok, NULL, NULL, 0, NULL, &r);
    ck_assert_int_eq(r.status, 204);
    pg_resp_free(&r);
    double t0 = mono_now();
    pthread_join(th, NULL);
    double waited = mono_now() - t0;
    pthread_mutex_destroy(&c.w.mu);
    ck_assert_int_eq(c.code, 200);
    ck_assert_msg(c.rc == CURLE_OK, "the stream did not end (curl %d after %.1f s)", c.rc, waited);
    ck_assert_msg(waited < 30, "the stream ended %.1f s after the revocation", waited);
    const char *b = c.w.buf.body;
    ck_assert_int_eq(count(b, "event: closed\n"), 1);
    const char *e = strstr(b, "event: closed\n");
    ck_assert_int_eq(count(e, "event: progress\n"), 0);
    ck_assert_ptr_nonnull(strstr(e, "data: "));
    const char *d = strstr(e, "data: ") + 6;
    ck_assert_str_eq(d + strcspn(d, "\n"), "\n\n"); /* the last event of the stream */
    json_t *o = json_loadb(d, strcspn(d, "\n"), 0, NULL);
    ck_assert_ptr_nonnull(o);
    char why[256];
    ck_assert_msg(pg_oa_validate(&oa, "Problem", o, why, sizeof why) == 0, "%s", why);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "status")), 401);
    ck_assert_str_eq(json_string_value(json_object_get(o, "detail")),
                     "this token has been revoked");
    json_decref(o);
    free(c.w.buf.body);

    snprintf(path, sizeof path, "/v1/jobs/%s/cancel", job);
    req(&srv, "POST", path, NULL, &r);
    ck_assert_int_eq(r.status, 202);
    pg_resp_free(&r);
    json_decref(poll_job(&srv, job, "cancelled", 0));
}
END_TEST

/* ---- queue and cancel ----------------------------------------------------- */

static size_t grab_retry(char *p, size_t sz, size_t n, void *ctx)
{
    if (!strncasecmp(p, "Retry-After:", 12)) *(long *)ctx = strtol(p + 12, NULL, 10);
    return sz * n;
}

static size_t discard(char *p, size_t sz, size_t n, void *ctx)
{
    (void)p;
    (void)ctx;
    return sz * n;
}

/* POSTs a job and returns its Retry-After header (0 when absent). */
static long retry_after(const pg_srv *s, const char *body)
{
    char url[128], auth[160];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/v1/jobs", s->port);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", s->admin);
    struct curl_slist *hl = curl_slist_append(NULL, auth);
    long v = 0;
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, grab_retry);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &v);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
    curl_easy_cleanup(c);
    curl_slist_free_all(hl);
    return v;
}

START_TEST(cancel_queued_and_running_and_queue_limit)
{
    char ds[64], a[64], b[64], c[64], d[64], body[512], path[128];
    make_local(&srv, 200, ds);
    job_body(body, sizeof body, ds, 10000000, 1000000);
    submit(&srv, body, a); /* runs (one worker) */
    json_decref(poll_job(&srv, a, "running", 0));
    job_body(body, sizeof body, ds, 50, 25);
    submit(&srv, body, b);
    submit(&srv, body, c);
    submit(&srv, body, d);
    pg_resp r;
    refused(&srv, "/v1/jobs", body, 503, NULL); /* --max-queued 3 */
    ck_assert_int_ge(retry_after(&srv, body), 1);
    snprintf(path, sizeof path, "/v1/jobs/%s/cancel", b);
    req(&srv, "POST", path, NULL, &r);
    ck_assert_int_eq(r.status, 202);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "cancelled");
    pg_resp_free(&r);
    for (const char *id = c; id; id = id == c ? d : NULL) {
        snprintf(path, sizeof path, "/v1/jobs/%s/cancel", id);
        req(&srv, "POST", path, NULL, &r);
        ck_assert_int_eq(r.status, 202);
        pg_resp_free(&r);
    }
    json_decref(poll_job(&srv, a, NULL, 3));
    snprintf(path, sizeof path, "/v1/jobs/%s/cancel", a);
    req(&srv, "POST", path, NULL, &r);
    ck_assert_int_eq(r.status, 202);
    pg_resp_free(&r);
    json_t *j = poll_job(&srv, a, "cancelled", 0);
    long step = (long)json_integer_value(json_object_get(json_object_get(j, "progress"), "step"));
    ck_assert(step >= 3 && step < 10000000);
    /* the stopped model was checkpointed and still serves samples */
    json_t *cks = json_object_get(j, "checkpoints");
    ck_assert_int_eq((int)json_integer_value(
                         json_object_get(json_array_get(cks, json_array_size(cks) - 1), "step")),
                     (int)step);
    json_decref(j);
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=4", a);
    req(&srv, "GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=4", b); /* never ran */
    req(&srv, "GET", path, NULL, &r);
    expect_problem(&r, 409, NULL);
    /* pagination over the four jobs of this dataset, oldest first */
    snprintf(path, sizeof path, "/v1/jobs?dataset_id=%s&limit=3", ds);
    req(&srv, "GET", path, NULL, &r);
    conform(&r, "JobList");
    json_t *items = json_object_get(r.json, "items");
    ck_assert_int_eq((int)json_array_size(items), 3);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 0), "id")), a);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 2), "id")), c);
    const char *cur = json_string_value(json_object_get(r.json, "next_cursor"));
    ck_assert_ptr_nonnull(cur);
    snprintf(path, sizeof path, "/v1/jobs?dataset_id=%s&limit=3&cursor=%s", ds, cur);
    pg_resp_free(&r);
    req(&srv, "GET", path, NULL, &r);
    items = json_object_get(r.json, "items");
    ck_assert_int_eq((int)json_array_size(items), 1);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(items, 0), "id")), d);
    ck_assert(json_is_null(json_object_get(r.json, "next_cursor")));
    pg_resp_free(&r);
}
END_TEST

/* ---- crash recovery ------------------------------------------------------ */

START_TEST(kill9_resumes_from_the_checkpoint)
{
    pg_srv s;
    pg_test_srv_start(&s, NULL);
    char ds[64], job[64], body[512], path[128];
    make_local(&s, 200, ds);
    job_body(body, sizeof body, ds, 6000, 500);
    submit(&s, body, job);
    json_decref(poll_job(&s, job, NULL, 1100)); /* two checkpoints written */
    pg_srv_kill9(&s);
    ck_assert_int_eq(pg_srv_start(&s, NULL), 0);
    snprintf(path, sizeof path, "/v1/jobs/%s", job);
    pg_resp r;
    req(&s, "GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(json_string_value(json_object_get(r.json, "status")), "running");
    pg_resp_free(&r);
    json_t *j = poll_job(&s, job, "succeeded", 0);
    ck_assert_int_eq(
        (int)json_integer_value(json_object_get(json_object_get(j, "progress"), "step")), 6000);
    json_t *cks = json_object_get(j, "checkpoints");
    /* 500..6000 written, none lost or doubled; keep_checkpoints 3 leaves the
     * newest and the 3 before it */
    ck_assert_int_eq((int)json_array_size(cks), 4);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(
            (int)json_integer_value(json_object_get(json_array_get(cks, (size_t)i), "step")),
            4500 + 500 * i);
    /* resumed, not restarted: the stored history goes on without repeating
     * a step, and what was recorded before the crash is still there */
    json_t *h = json_object_get(j, "history");
    for (size_t i = 1; i < json_array_size(h); i++)
        ck_assert_int_lt(json_integer_value(json_object_get(json_array_get(h, i - 1), "step")),
                         json_integer_value(json_object_get(json_array_get(h, i), "step")));
    long first = (long)json_integer_value(json_object_get(json_array_get(h, 0), "step"));
    ck_assert_msg(first < 1000, "history starts at step %ld", first);
    size_t nh = json_array_size(json_object_get(j, "history")); /* downsampled */
    ck_assert_msg(nh <= 500 && nh >= 250, "%zu history points", nh);
    json_decref(j);
    /* the resumed run ends exactly where an uninterrupted one does */
    char other[64], p2[128];
    submit(&s, body, other);
    json_decref(poll_job(&s, other, "succeeded", 0));
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=8&seed=1", job);
    snprintf(p2, sizeof p2, "/v1/jobs/%s/samples?n=8&seed=1", other);
    pg_resp a, b;
    req(&s, "GET", path, NULL, &a);
    req(&s, "GET", p2, NULL, &b);
    ck_assert_int_eq(a.status, 200);
    ck_assert_str_eq(a.body, b.body);
    pg_resp_free(&a);
    pg_resp_free(&b);
    /* finished jobs keep serving after a restart (model loaded from disk) */
    req(&s, "GET", path, NULL, &a);
    ck_assert_int_eq(a.status, 200);
    ck_assert_int_eq(pg_srv_stop(&s), 0);
    ck_assert_int_eq(pg_srv_start(&s, NULL), 0);
    req(&s, "GET", path, NULL, &b);
    ck_assert_int_eq(b.status, 200);
    ck_assert_str_eq(a.body, b.body);
    pg_resp_free(&a);
    pg_resp_free(&b);
    pg_test_srv_end(&s);
}
END_TEST

/* ---- central data: the ledger through a real DP trainer -------------------- */

#define CDELTA 1e-5

static void make_central(const pg_srv *s, double cap, int n, char id[64])
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"name\":\"c\",\"shape\":[2],\"range\":[-1,1],\"privacy\":{\"model\":"
             "\"central\",\"budget\":{\"epsilon\":%.17g,\"delta\":%g}}}",
             cap, CDELTA);
    pg_test_dataset_rows(s, s->admin, body, n, 2, "%.4f", pg_test_circle_cell, NULL, id);
}

static void dps_body(char *buf, size_t cap, const char *ds, long steps, double sigma, long every)
{
    snprintf(buf, cap,
             "{\"dataset_id\":\"%s\",\"method\":\"dp_sinkhorn\",\"model\":{\"hidden\":[16]},"
             "\"train\":{\"steps\":%ld,\"batch_size\":20},\"ot\":{\"max_iter\":20},"
             "\"privacy\":{\"noise_multiplier\":%.17g},\"checkpoint_every\":%ld,\"seed\":3}",
             ds, steps, sigma, every);
}

static json_t *budget(const pg_srv *s, const char *ds)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%s/budget", ds);
    pg_resp r;
    req(s, "GET", path, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    conform(&r, "Budget");
    json_t *o = json_incref(r.json);
    pg_resp_free(&r);
    return o;
}

static json_t *entry_of(json_t *b, const char *job)
{
    size_t i;
    json_t *e;
    json_array_foreach(
        json_object_get(b, "entries"), i,
        e) if (!strcmp(json_string_value(json_object_get(e, "job_id")), job)) return e;
    ck_abort_msg("no ledger entry for %s", job);
    return NULL;
}

static double num_of(json_t *o, const char *k)
{
    return json_number_value(json_object_get(o, k));
}

typedef struct racer {
    const pg_srv *s;
    const char *body;
    long status;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    pg_resp resp;
    req(r->s, "POST", "/v1/jobs", r->body, &resp);
    r->status = resp.status;
    pg_resp_free(&resp);
    return NULL;
}

START_TEST(central_ledger_through_dp_sinkhorn)
{
    static const char *const extra[] = {"--workers", "1", NULL};
    pg_srv s;
    pg_test_srv_start(&s, extra);
    char ds[64], a[64], b[64], body[768], path[128];
    make_central(&s, 3.0, 400, ds);

    /* a non-rigorous bound (swd's CLT sensitivity) is never charged to a cap */
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"swd_flow\",\"privacy\":{\"epsilon\":1,"
             "\"delta\":1e-5,\"bound\":\"clt\"},\"projections\":{\"kind\":\"random\"}}",
             ds);
    pg_resp r;
    refused(&s, "/v1/jobs?dry_run=true", body, 422, "privacy");

    /* dry run: a charging plan and a quote, nothing reserved */
    dps_body(body, sizeof body, ds, 100000, 100.0, 100000);
    req(&s, "POST", "/v1/jobs?dry_run=true", body, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    conform(&r, "DryRun");
    ck_assert(json_is_true(json_object_get(json_object_get(r.json, "plan"), "charges")));
    ck_assert(json_is_true(json_object_get(json_object_get(r.json, "budget"), "admissible")));
    pg_resp_free(&r);
    json_t *bj = budget(&s, ds);
    ck_assert_int_eq((int)json_array_size(json_object_get(bj, "entries")), 0);
    ck_assert(num_of(bj, "spent_epsilon") == 0.0);
    json_decref(bj);

    /* A runs, B waits (one worker) */
    submit(&s, body, a);
    json_decref(poll_job(&s, a, "running", 0));
    submit(&s, body, b);
    bj = budget(&s, ds);
    json_t *ea = entry_of(bj, a);
    double want;
    ck_assert_int_eq(pg_rdp_epsilon(num_of(ea, "sampling_rate"), num_of(ea, "noise_multiplier"),
                                    (uint64_t)json_integer_value(json_object_get(ea, "steps")),
                                    CDELTA, PG_RDP_CONV_IMPROVED, &want, NULL, NULL),
                     PG_OK);
    ck_assert_double_eq_tol(num_of(ea, "sampling_rate"), 20.0 / 400.0, 1e-15);
    ck_assert_double_eq_tol(num_of(ea, "noise_multiplier"), 100.0, 1e-15);
    ck_assert(pg_test_reldiff(num_of(ea, "epsilon"), want) < 1e-9);
    double one = num_of(ea, "epsilon");
    json_decref(bj);

    /* cancel queued B: refunded; cancel running A: kept */
    snprintf(path, sizeof path, "/v1/jobs/%s/cancel", b);
    req(&s, "POST", path, NULL, &r);
    ck_assert_int_eq(r.status, 202);
    pg_resp_free(&r);
    snprintf(path, sizeof path, "/v1/jobs/%s/cancel", a);
    req(&s, "POST", path, NULL, &r);
    ck_assert_int_eq(r.status, 202);
    pg_resp_free(&r);
    json_decref(poll_job(&s, a, "cancelled", 0));
    bj = budget(&s, ds);
    ck_assert(json_is_true(json_object_get(entry_of(bj, b), "refunded")));
    ck_assert(json_is_false(json_object_get(entry_of(bj, a), "refunded")));
    ck_assert(pg_test_reldiff(num_of(bj, "spent_epsilon"), one) < 1e-9);
    ck_assert(pg_test_reldiff(num_of(bj, "remaining_epsilon"), 3.0 - one) < 1e-9);
    json_decref(bj);

    /* 409: fits alone, not next to A (composed exactly like the ledger) */
    double orders[PG_RDP_DEFAULT_ORDERS], ra[PG_RDP_DEFAULT_ORDERS], rx[PG_RDP_DEFAULT_ORDERS];
    size_t no = pg_rdp_default_orders(orders, PG_RDP_DEFAULT_ORDERS);
    ck_assert_int_eq(pg_rdp_compute(0.05, 100.0, 100000, orders, no, ra, NULL), PG_OK);
    double sig = 2.0, alone = 0.0, with = 0.0;
    for (;; sig *= 0.98) {
        ck_assert(sig > 0.3);
        ck_assert_int_eq(pg_rdp_compute(0.05, sig, 200, orders, no, rx, NULL), PG_OK);
        ck_assert_int_eq(
            pg_rdp_to_dp(orders, rx, no, CDELTA, PG_RDP_CONV_IMPROVED, &alone, NULL, NULL), PG_OK);
        ck_assert_int_eq(pg_rdp_compose(rx, ra, no, NULL), PG_OK);
        ck_assert_int_eq(
            pg_rdp_to_dp(orders, rx, no, CDELTA, PG_RDP_CONV_IMPROVED, &with, NULL, NULL), PG_OK);
        if (with > 3.0) break;
    }
    ck_assert(alone < 3.0);
    dps_body(body, sizeof body, ds, 200, sig, 100);
    req(&s, "POST", "/v1/jobs", body, &r);
    ck_assert_msg(r.status == 409, "%ld %s", r.status, r.body);
    conform(&r, "OverBudget");
    ck_assert(pg_test_reldiff(num_of(r.json, "requested_epsilon"), alone) < 1e-9);
    ck_assert(pg_test_reldiff(num_of(r.json, "spent_epsilon"), one) < 1e-9);
    ck_assert(num_of(r.json, "cap_epsilon") == 3.0);
    ck_assert(pg_test_reldiff(num_of(r.json, "remaining_epsilon"), 3.0 - one) < 1e-9);
    pg_resp_free(&r);

    /* a retried submission (same Idempotency-Key) is one job and one charge */
    dps_body(body, sizeof body, ds, 20, 50.0, 10);
    const char *const key[] = {"Idempotency-Key: retry-1", NULL};
    pg_resp r1, r2;
    pg_http(&s, "POST", "/v1/jobs", s.admin, "application/json", body, strlen(body), key, &r1);
    pg_http(&s, "POST", "/v1/jobs", s.admin, "application/json", body, strlen(body), key, &r2);
    ck_assert_int_eq(r1.status, 202);
    ck_assert_int_eq(r2.status, 202);
    ck_assert_str_eq(json_string_value(json_object_get(r1.json, "id")),
                     json_string_value(json_object_get(r2.json, "id")));
    ck_assert_str_eq(r1.location, r2.location);
    pg_resp_free(&r1);
    pg_resp_free(&r2);
    /* the query is part of the request: a dry run under that key is not a
     * replay of the real submission (nor a second charge) */
    pg_http(&s, "POST", "/v1/jobs?dry_run=true", s.admin, "application/json", body, strlen(body),
            key, &r2);
    ck_assert_msg(r2.status == 422, "%ld %s", r2.status, r2.body);
    ck_assert_ptr_nonnull(strstr(r2.body, "Idempotency-Key"));
    pg_resp_free(&r2);
    bj = budget(&s, ds);
    ck_assert_int_eq((int)json_array_size(json_object_get(bj, "entries")), 3); /* A, B, this */
    json_decref(bj);

    /* eight concurrent submissions, a cap that fits three */
    double e3, e4;
    ck_assert_int_eq(pg_rdp_epsilon(0.05, 1.0, 150, CDELTA, PG_RDP_CONV_IMPROVED, &e3, NULL, NULL),
                     PG_OK);
    ck_assert_int_eq(pg_rdp_epsilon(0.05, 1.0, 200, CDELTA, PG_RDP_CONV_IMPROVED, &e4, NULL, NULL),
                     PG_OK);
    char ds2[64];
    make_central(&s, 0.5 * (e3 + e4), 400, ds2);
    dps_body(body, sizeof body, ds2, 50, 1.0, 25);
    racer rs[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        rs[i] = (racer){&s, body, 0};
        pthread_create(&th[i], NULL, race, &rs[i]);
    }
    int ok = 0, refused = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        ok += rs[i].status == 202;
        refused += rs[i].status == 409;
    }
    ck_assert_int_eq(ok, 3);
    ck_assert_int_eq(refused, 5);
    bj = budget(&s, ds2);
    ck_assert_int_eq((int)json_array_size(json_object_get(bj, "entries")), 3);
    ck_assert(num_of(bj, "spent_epsilon") <= 0.5 * (e3 + e4));
    ck_assert(pg_test_reldiff(num_of(bj, "spent_epsilon"), e3) < 1e-9);
    json_decref(bj);
    pg_http(&s, "GET", "/metrics", NULL, NULL, NULL, 0, NULL, &r);
    ck_assert_ptr_nonnull(strstr(r.body, "privgen_dataset_epsilon_spent{dataset=\""));
    pg_resp_free(&r);
    pg_test_srv_end(&s);
}
END_TEST

/* Row i of a public set: column j on the circle of radius 0.7, 0.1 rad
 * apart (cos in even columns, sin in odd ones). */
static double public_cell(int i, int j, void *ctx)
{
    (void)ctx;
    return 0.7 * (j % 2 ? sin(0.1 * i) : cos(0.1 * i));
}

/* A public 2-D dataset (or `shape` wide) with n rows on a circle. */
static void make_public(const pg_srv *s, const char *tok, int width, int n, char id[64])
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"name\":\"pub\",\"shape\":[%d],\"range\":[-1,1],\"privacy\":{\"model\":"
             "\"public\"}}",
             width);
    pg_test_dataset_rows(s, tok, body, n, width, "%.4f", public_cell, NULL, id);
}

static void latent_body(char *buf, size_t cap, const char *ds, const char *pub, const char *method,
                        long steps)
{
    snprintf(buf, cap,
             "{\"dataset_id\":\"%s\",\"public_dataset_id\":\"%s\",\"method\":\"%s\","
             "\"privacy\":{\"noise_multiplier\":5},\"projections\":{\"per_step\":2},"
             "\"flow\":{\"steps\":%ld,\"particles\":100,\"quantile_levels\":32},"
             "\"latent\":{\"dim\":2,\"hidden\":[8],\"steps\":50,\"batch\":32},"
             "\"checkpoint_every\":100000,\"seed\":5}",
             ds, pub, method, steps);
}

START_TEST(public_dataset_for_latent_flows)
{
    static const char *const extra[] = {"--workers", "1", NULL};
    pg_srv s;
    pg_test_srv_start(&s, extra);
    char ds[64], pub[64], wide[64], loc[64], foreign[64], job[64], body[1024], path[128];
    make_central(&s, 100.0, 400, ds);
    make_public(&s, s.admin, 2, 300, pub);
    make_public(&s, s.admin, 3, 10, wide);
    make_local(&s, 50, loc);
    pg_resp r;
    req(&s, "POST", "/v1/tokens", "{\"scope\":\"admin\",\"new_tenant\":true}", &r);
    ck_assert_msg(r.status == 201, "%s", r.body);
    char *other = strdup(json_string_value(json_object_get(r.json, "token")));
    pg_resp_free(&r);
    make_public(&s, other, 2, 10, foreign);
    free(other);

    /* refused: wrong shape, not public, another tenant's, itself, not a
     * string, and a method without a latent mode */
    const char *bad[] = {wide, loc, foreign, ds};
    for (int i = 0; i < 4; i++) {
        latent_body(body, sizeof body, ds, bad[i], "swd_flow_r", 10);
        refused(&s, "/v1/jobs?dry_run=true", body, 422, "public_dataset_id");
    }
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"public_dataset_id\":7,\"method\":\"swd_flow_r\"}", ds);
    refused(&s, "/v1/jobs", body, 422, "public_dataset_id");
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"public_dataset_id\":\"%s\",\"method\":\"dp_sinkhorn\","
             "\"privacy\":{\"noise_multiplier\":5}}",
             ds, pub);
    refused(&s, "/v1/jobs", body, 422, "public_dataset_id");
    /* latent fields without public data */
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"swd_flow_r\",\"privacy\":{\"noise_multiplier\":"
             "5},\"latent\":{\"dim\":2}}",
             ds);
    refused(&s, "/v1/jobs", body, 422, "latent");

    /* accepted: a long job (one release: swd_flow), still running below */
    latent_body(body, sizeof body, ds, pub, "swd_flow", 1000000);
    submit(&s, body, job);
    json_t *jv = poll_job(&s, job, "running", 0);
    ck_assert_str_eq(json_string_value(json_object_get(jv, "public_dataset_id")), pub);
    json_t *spec = json_object_get(jv, "spec");
    ck_assert_str_eq(json_string_value(json_object_get(spec, "public_dataset_id")), pub);
    ck_assert(json_number_value(json_object_get(json_object_get(spec, "privacy"), "clip_norm")) ==
              1.0);
    ck_assert_int_eq(
        (int)json_integer_value(json_object_get(json_object_get(spec, "latent"), "dim")), 2);
    double planned = json_number_value(json_object_get(json_object_get(jv, "privacy"), "epsilon"));
    json_decref(jv);
    snprintf(path, sizeof path, "/v1/datasets/%s", pub);
    req(&s, "DELETE", path, NULL, &r);
    expect_problem(&r, 409, NULL);
    /* the ledger charges the private dataset only, with the job's plan */
    json_t *bj = budget(&s, ds);
    ck_assert_int_eq((int)json_array_size(json_object_get(bj, "entries")), 1);
    ck_assert(pg_test_reldiff(num_of(entry_of(bj, job), "epsilon"), planned) < 1e-9);
    json_decref(bj);
    /* a restart rebuilds the job with its public dataset and resumes it */
    ck_assert_int_eq(pg_srv_stop(&s), 0);
    ck_assert_int_eq(pg_srv_start(&s, extra), 0);
    jv = poll_job(&s, job, NULL, 5); /* stepping again (re-created: no checkpoint yet) */
    ck_assert_str_eq(json_string_value(json_object_get(jv, "public_dataset_id")), pub);
    json_decref(jv);
    req(&s, "DELETE", path, NULL, &r);
    expect_problem(&r, 409, NULL);
    snprintf(path, sizeof path, "/v1/jobs/%s/cancel", job);
    req(&s, "POST", path, NULL, &r);
    ck_assert_int_eq(r.status, 202);
    pg_resp_free(&r);
    json_decref(poll_job(&s, job, "cancelled", 0));

    /* a short one runs to the end and serves decoded 2-D samples */
    latent_body(body, sizeof body, ds, pub, "swd_flow_r", 20);
    char done[64];
    submit(&s, body, done);
    json_decref(poll_job(&s, done, "succeeded", 0));
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=50&seed=3", done);
    req(&s, "GET", path, NULL, &r);
    ck_assert_msg(r.status == 200, "%s", r.body);
    pg_resp_free(&r);
    /* once no job is queued or running, the public dataset can go */
    snprintf(path, sizeof path, "/v1/datasets/%s", pub);
    req(&s, "DELETE", path, NULL, &r);
    ck_assert_msg(r.status == 204, "%ld %s", r.status, r.body);
    pg_resp_free(&r);
    ck_assert_int_eq(pg_srv_stop(&s), 0);

    /* nothing in the ledger ever named the public dataset */
    pg_db *db = pg_srv_db(&s);
    ck_assert_ptr_nonnull(db);
    pg_ledger_entry *e;
    size_t ne;
    ck_assert_int_eq(pg_db_ledger_entries(db, pub, &e, &ne, NULL), PG_OK);
    ck_assert_uint_eq(ne, 0);
    pg_ledger_entries_free(e, ne);
    ck_assert_int_eq(pg_db_ledger_entries(db, ds, &e, &ne, NULL), PG_OK);
    ck_assert_uint_ge(ne, 2);
    pg_ledger_entries_free(e, ne);
    pg_db_close(db);
    pg_srv_cleanup(&s);
}
END_TEST

static long first_hist(json_t *job)
{
    return (long)json_integer_value(
        json_object_get(json_array_get(json_object_get(job, "history"), 0), "step"));
}

/* Class-mean calibration through the service: the ledger entry is the steps'
 * curve plus the release's alpha / (2 s^2) (composed here by hand), and the
 * served samples have the data's mean (release noise ~0.01 per value). */
START_TEST(calibrated_dp_sinkhorn_charges_its_release)
{
    pg_srv s;
    pg_test_srv_start(&s, NULL);
    char ds[64], job[64], body[768];
    make_central(&s, 50.0, 400, ds);
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"dp_sinkhorn\",\"model\":{\"hidden\":[16]},"
             "\"train\":{\"steps\":200,\"batch_size\":20},\"ot\":{\"max_iter\":20},"
             "\"privacy\":{\"noise_multiplier\":1.0},\"calibration\":{\"class_means\":true,"
             "\"noise_multiplier\":2},\"checkpoint_every\":100,\"seed\":3}",
             ds);
    submit(&s, body, job);
    json_decref(poll_job(&s, job, "succeeded", 0));
    double orders[PG_RDP_DEFAULT_ORDERS], rdp[PG_RDP_DEFAULT_ORDERS], want, plain;
    size_t no = pg_rdp_default_orders(orders, PG_RDP_DEFAULT_ORDERS);
    ck_assert_int_eq(pg_rdp_compute(0.05, 1.0, 200, orders, no, rdp, NULL), PG_OK);
    ck_assert_int_eq(
        pg_rdp_to_dp(orders, rdp, no, CDELTA, PG_RDP_CONV_IMPROVED, &plain, NULL, NULL), PG_OK);
    for (size_t i = 0; i < no; i++) rdp[i] += orders[i] / 8.0;
    ck_assert_int_eq(pg_rdp_to_dp(orders, rdp, no, CDELTA, PG_RDP_CONV_IMPROVED, &want, NULL, NULL),
                     PG_OK);
    json_t *bj = budget(&s, ds);
    double got = num_of(entry_of(bj, job), "epsilon");
    ck_assert_msg(pg_test_reldiff(got, want) < 1e-9, "ledger %g, composed by hand %g", got, want);
    ck_assert_double_gt(got, plain * 1.01);
    json_decref(bj);
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%s/samples?n=4000&seed=5", job);
    pg_resp r;
    req(&s, "GET", path, NULL, &r);
    ck_assert_int_eq(r.status, 200);
    json_t *rows = json_object_get(r.json, "samples");
    ck_assert_int_eq((int)json_array_size(rows), 4000);
    double m[2] = {0, 0}, d[2] = {0, 0};
    for (size_t i = 0; i < 4000; i++)
        for (int k = 0; k < 2; k++)
            m[k] += json_number_value(json_array_get(json_array_get(rows, i), (size_t)k)) / 4000.0;
    for (int i = 0; i < 400; i++)
        d[0] += 0.8 * cos(0.05 * i) / 400.0, d[1] += 0.8 * sin(0.05 * i) / 400.0;
    ck_assert_msg(hypot(m[0] - d[0], m[1] - d[1]) < 0.06,
                  "sample mean (%.3f, %.3f), data (%.3f, %.3f)", m[0], m[1], d[0], d[1]);
    pg_resp_free(&r);
    png_is_the_views_plot(&s, job, -1.0f, 1.0f, "central");
    ck_assert_int_eq(pg_srv_stop(&s), 0);
}
END_TEST

START_TEST(central_kill9_resumes_with_one_charge)
{
    pg_srv s;
    pg_test_srv_start(&s, NULL);
    char ds[64], job[64], body[768];
    make_central(&s, 5.0, 400, ds);
    dps_body(body, sizeof body, ds, 3000, 8.0, 500);
    submit(&s, body, job);
    json_decref(poll_job(&s, job, NULL, 1100));
    pg_srv_kill9(&s);
    ck_assert_int_eq(pg_srv_start(&s, NULL), 0);
    json_t *j = poll_job(&s, job, "succeeded", 0);
    long step = (long)json_integer_value(json_object_get(json_object_get(j, "progress"), "step"));
    /* Steps between the last checkpoint and the crash were reserved (and may
     * have been released through progress): the resumed run only takes what
     * is left of the plan, so it ends one checkpoint interval short unless
     * the crash fell exactly on a checkpoint. */
    ck_assert_msg(step == 2500 || step == 3000, "final step %ld", step);
    /* Regression: a short end is said, in the view and its warnings, and
     * the spent figure is what the ledger charged (the plan's epsilon). */
    json_t *prog = json_object_get(j, "progress");
    ck_assert_int_eq((int)json_integer_value(json_object_get(prog, "steps_short")),
                     (int)(3000 - step));
    double plan_eps = json_number_value(json_object_get(json_object_get(j, "privacy"), "epsilon"));
    ck_assert_double_eq(json_number_value(json_object_get(prog, "epsilon_spent")), plan_eps);
    int said = 0;
    for (size_t i = 0; i < json_array_size(json_object_get(j, "warnings")); i++)
        said |= strstr(json_string_value(json_array_get(json_object_get(j, "warnings"), i)),
                       "ended at step 2500 of 3000 planned") != NULL;
    ck_assert_msg(said == (step == 2500), "shortfall warning %d at step %ld", said, step);
    ck_assert_msg(pg_test_hist_break(j) < 0, "not resumed mid-run: history steps repeat at %ld",
                  pg_test_hist_break(j));
    ck_assert_msg(first_hist(j) < 1000, "the history before the restart is lost: starts at %ld",
                  first_hist(j));
    json_decref(j);
    json_t *bj = budget(&s, ds);
    ck_assert_int_eq((int)json_array_size(json_object_get(bj, "entries")), 1);
    json_decref(bj);
    /* A clean shutdown checkpoints at the exact step and hands back the
     * unused reservation: the resumed job runs its whole plan. */
    char second[64];
    submit(&s, body, second);
    json_decref(poll_job(&s, second, NULL, 1100));
    ck_assert_int_eq(pg_srv_stop(&s), 0);
    ck_assert_int_eq(pg_srv_start(&s, NULL), 0);
    j = poll_job(&s, second, "succeeded", 0);
    ck_assert_int_eq(
        (int)json_integer_value(json_object_get(json_object_get(j, "progress"), "step")), 3000);
    ck_assert_int_eq(
        (int)json_integer_value(json_object_get(json_object_get(j, "progress"), "steps_short")), 0);
    ck_assert_msg(pg_test_hist_break(j) < 0, "not resumed mid-run: history steps repeat at %ld",
                  pg_test_hist_break(j));
    ck_assert_msg(first_hist(j) < 1000, "the history before the restart is lost: starts at %ld",
                  first_hist(j));
    json_decref(j);
    bj = budget(&s, ds);
    ck_assert_int_eq((int)json_array_size(json_object_get(bj, "entries")), 2);
    json_decref(bj);
    pg_test_srv_end(&s);
}
END_TEST

/* Regression: a noise multiplier of 1e-300 made the accountant overflow
 * ("RDP evaluated to NaN", a 500). Every method that takes one refuses it
 * at validation with a 422 naming the field; nothing is charged. */
START_TEST(tiny_noise_multipliers_are_422_for_every_method)
{
    char ds[64], body[768];
    make_central(&srv, 100.0, 200, ds);
    static const char *const specs[][2] = {
        {"dp_sinkhorn", "\"privacy\":{\"noise_multiplier\":1e-300}"},
        {"dp_sinkhorn", "\"privacy\":{\"noise_multiplier\":1e-30}"},
        {"swd_flow", "\"privacy\":{\"noise_multiplier\":1e-300}"},
        {"swd_flow_r", "\"privacy\":{\"noise_multiplier\":1e-300}"},
        {"swd_gen", "\"privacy\":{\"noise_multiplier\":1e-300}"},
    };
    pg_resp r;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        snprintf(body, sizeof body, "{\"dataset_id\":\"%s\",\"method\":\"%s\",%s}", ds, specs[i][0],
                 specs[i][1]);
        req(&srv, "POST", "/v1/jobs", body, &r);
        ck_assert_msg(r.status == 422, "%s: %ld %s", specs[i][0], (long)r.status, r.body);
        expect_problem(&r, 422, "privacy.noise_multiplier");
    }
    snprintf(body, sizeof body,
             "{\"dataset_id\":\"%s\",\"method\":\"dp_sinkhorn\",\"privacy\":{\"noise_"
             "multiplier\":2},\"calibration\":{\"class_means\":true,\"noise_multiplier\":1e-300}}",
             ds);
    refused(&srv, "/v1/jobs", body, 422, "calibration.noise_multiplier");
    json_t *bj = budget(&srv, ds);
    ck_assert_int_eq((int)json_array_size(json_object_get(bj, "entries")), 0);
    json_decref(bj);
}
END_TEST

/* Regression: a range of [-1e308, 1e308] was accepted, then every job on it
 * failed with 503 "out of memory". Refused at create, naming the field. */
START_TEST(ranges_beyond_float32_are_refused_at_create)
{
    static const char *const bad[] = {"[-1e308,1e308]", "[-1e300,1e300]", "[0,1e16]", "[-1e16,0]"};
    char body[256];
    pg_resp r;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(body, sizeof body,
                 "{\"name\":\"r\",\"shape\":[2],\"range\":%s,\"privacy\":{\"model\":"
                 "\"public\"}}",
                 bad[i]);
        req(&srv, "POST", "/v1/datasets", body, &r);
        ck_assert_msg(r.status == 422, "%s: %ld", bad[i], (long)r.status);
        expect_problem(&r, 422, "range");
    }
    req(&srv, "POST", "/v1/datasets",
        "{\"name\":\"r\",\"shape\":[2],\"range\":[-1e15,1e15],\"privacy\":{\"model\":"
        "\"public\"}}",
        &r);
    ck_assert_int_eq(r.status, 201);
    pg_resp_free(&r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("jobs");
    TCase *tc = tcase_create("live");
    tcase_add_unchecked_fixture(tc, start_shared, stop_shared);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, entropic_gan_lifecycle);
    tcase_add_test(tc, invalid_specs);
    tcase_add_test(tc, sse_delivers_progress_and_completion);
    tcase_add_test(tc, shutdown_ends_event_streams);
    tcase_add_test(tc, sse_ends_when_its_token_is_revoked);
    tcase_add_test(tc, cancel_queued_and_running_and_queue_limit);
    tcase_add_test(tc, kill9_resumes_from_the_checkpoint);
    tcase_add_test(tc, central_ledger_through_dp_sinkhorn);
    tcase_add_test(tc, calibrated_dp_sinkhorn_charges_its_release);
    tcase_add_test(tc, central_kill9_resumes_with_one_charge);
    tcase_add_test(tc, tiny_noise_multipliers_are_422_for_every_method);
    tcase_add_test(tc, ranges_beyond_float32_are_refused_at_create);
    tcase_add_test(tc, public_dataset_for_latent_flows);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
