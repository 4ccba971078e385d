/* GET /v1/jobs/{id}/samples: draws from the latest published snapshot (or a
 * named checkpoint). Sampling is post-processing of the model: no budget. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "api/internal.h"
#include "api/plot_request.h"
#include "api/render.h"
#include "engine/core/alloc.h"
#include "service/jobs.h"

int pg_api_jobs_ready(pg_req *r);

/* Parses an optional unsigned integer query parameter; -1 on a bad value
 * (400 already set). */
static int query_u64(pg_req *r, const char *name, uint64_t max, int *present, uint64_t *out)
{
    const char *s = pg_api_query(r, name);
    *present = s != NULL;
    if (!s) return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || errno || s[0] == '-' || v > max) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s must be an integer in [0, %llu]", name,
                 (unsigned long long)max);
        pg_api_problem(r, 400, msg, name, msg);
        return -1;
    }
    *out = v;
    return 0;
}

static json_t *rows_json(const float *x, size_t n, size_t d)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) {
        json_t *row = json_array();
        for (size_t j = 0; j < d; j++) json_array_append_new(row, json_real((double)x[i * d + j]));
        json_array_append_new(a, row);
    }
    return a;
}

void pg_h_jobs_samples(pg_req *r)
{
    if (!pg_api_jobs_ready(r)) return;
    const char *fmt = pg_api_query(r, "format");
    if (!fmt) fmt = "json";
    if (strcmp(fmt, "json") && strcmp(fmt, "csv") && strcmp(fmt, "npy") && strcmp(fmt, "png")) {
        pg_api_problem(r, 400, "format must be json, csv, npy or png", "format",
                       "must be json, csv, npy or png");
        return;
    }
    int has_n, has_seed, has_label, has_ck;
    uint64_t n = 64, seed = 0, label = 0, ck = 0;
    if (query_u64(r, "n", r->app->cfg->max_samples, &has_n, &n) ||
        query_u64(r, "seed", UINT64_MAX, &has_seed, &seed) ||
        query_u64(r, "label", 1000000, &has_label, &label) ||
        query_u64(r, "checkpoint", INT32_MAX, &has_ck, &ck))
        return;
    if (n == 0) {
        pg_api_problem(r, 400, "n must be at least 1", "n", "must be at least 1");
        return;
    }
    pg_api_plot plot; /* PNG only: ?frame= and the title */
    if (!strcmp(fmt, "png") && pg_api_plot_request(r, r->params[0], &plot)) return;
    if (!has_seed && getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) {
        pg_api_problem(r, 503, "cannot draw a sampling seed", NULL, NULL);
        return;
    }
    pg_snapshot *snap;
    pg_job_geometry geo;
    int found;
    pg_error err = {0};
    int rc = pg_jobs_snapshot(r->app->jobs, r->tok.tenant, r->params[0], has_ck ? (long)ck : -1,
                              &snap, &geo, &found, &err);
    if (rc == PG_ESTATE) {
        pg_api_problem(r, 409, err.msg, NULL, NULL);
        return;
    }
    if (rc) {
        pg_api_problem(r, 500, err.msg, NULL, NULL);
        return;
    }
    if (!found) {
        pg_api_problem(r, 404, has_ck ? "no such job or checkpoint" : "no such job", NULL, NULL);
        return;
    }
    if (has_label && (geo.num_classes == 0 || label >= (uint64_t)geo.num_classes)) {
        pg_snapshot_release(snap);
        char msg[128];
        snprintf(msg, sizeof msg, "label must be in [0, %d)%s", geo.num_classes,
                 geo.num_classes ? "" : ": the dataset has no classes");
        pg_api_problem(r, 400, msg, "label", msg);
        return;
    }
    if (!strcmp(fmt, "png") &&
        !(geo.d == 2 || (geo.ndim == 3 && (geo.shape[0] == 1 || geo.shape[0] == 3)))) {
        pg_snapshot_release(snap);
        pg_api_problem(r, 400, "PNG needs image-shaped rows ([1,h,w] or [3,h,w]) or 2-D points",
                       "format", "png is not available for this shape");
        return;
    }
    size_t d = pg_snapshot_dim(snap);
    float *x = pg_alloc_f32((size_t)n * d);
    if (!x) {
        pg_snapshot_release(snap);
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    rc = pg_snapshot_sample(snap, (size_t)n, seed, has_label ? (int)label : -1, x, &err);
    long step = pg_snapshot_step(snap);
    pg_snapshot_release(snap);
    char *body = NULL;
    size_t len = 0;
    const char *type = NULL;
    if (!rc && !strcmp(fmt, "json")) {
        json_t *o = json_pack("{s:I,s:I,s:I,s:o}", "n", (json_int_t)n, "d", (json_int_t)d, "step",
                              (json_int_t)step, "samples", rows_json(x, (size_t)n, d));
        /* The seed is echoed only when it fits a JSON number exactly. */
        if (o)
            json_object_set_new(o, "seed",
                                seed < (UINT64_C(1) << 53) ? json_integer((json_int_t)seed)
                                                           : json_null());
        pg_free(x);
        if (!o) {
            pg_api_problem(r, 503, "out of memory", NULL, NULL);
            return;
        }
        pg_jobs_count_samples(r->app->jobs, (size_t)n);
        pg_api_send_json(r, 200, o);
        return;
    }
    if (!rc && !strcmp(fmt, "csv")) {
        rc = pg_render_csv(x, (size_t)n, d, &body, &len, &err);
        type = "text/csv";
    } else if (!rc && !strcmp(fmt, "npy")) {
        size_t flat[1] = {d};
        int same = geo.d == d;
        rc = pg_render_npy(x, (size_t)n, same ? geo.shape : flat, same ? geo.ndim : 1, &body, &len,
                           &err);
        type = "application/x-npy";
    } else if (!rc) {
        plot.opt.step = step;
        rc = pg_render_png_plot(x, (size_t)n, d, geo.ndim, geo.shape, geo.lo, geo.hi, &plot.opt,
                                &body, &len, &err);
        type = "image/png";
    }
    pg_free(x);
    if (rc) {
        pg_api_problem(r, rc == PG_EINVAL || rc == PG_ENOTSUP ? 400 : 500, err.msg, NULL, NULL);
        return;
    }
    pg_jobs_count_samples(r->app->jobs, (size_t)n);
    pg_api_send_text(r, 200, type, body, len);
}
