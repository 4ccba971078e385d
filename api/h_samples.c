/* GET /v1/jobs/{id}/samples: draws from the latest published snapshot (or a
 * named checkpoint). Sampling is post-processing of the model: no budget.
 *
 * Hot path (see docs/benchmarks.md "Serving speed"): the token check and the
 * job's snapshot come from memory (service/auth.h cache, service/jobs/jobs.h: the
 * model a worker here published, or one rebuilt from the latest checkpoint
 * and kept in the snapshot cache for a job trained on another replica), the
 * forward pass is one GEMM per layer per block of rows, floats are printed by
 * engine/core/fmt.h into one buffer. (The generator runs small calls on the
 * calling thread and keeps the OpenMP team for large blocks;
 * docs/benchmarks.md.) Bodies
 * of more than STREAM_VALUES values are streamed block by block
 * (render/samples_stream.h) so memory stays flat whatever n is. Requests with
 * an explicit seed are cacheable (api/samples_cache.h: ETag, 304, bodies
 * kept in api/body_cache.h), decided after the job lookup and before any
 * forward pass. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "api/internal.h"
#include "api/plot_request.h"
#include "render/render.h"
#include "api/samples_cache.h"
#include "render/samples_stream.h"
#include "engine/core/alloc.h"
#include "engine/methods/snapshot.h"
#include "service/jobs/jobs.h"

/* Typed jobs (api/h_samples_typed.c). */
const char *pg_h_samples_label_name(pg_req *r);
int pg_h_samples_typed(pg_req *r, pg_snapshot *snap, const pg_job_geometry *geo,
                       const pg_samples_cache *kc, int format, uint64_t n, uint64_t seed,
                       const char *label_name, int *has_label, uint64_t *label);

/* Above this many values a body is streamed (about 256 KiB of floats). */
#define STREAM_VALUES ((size_t)1 << 16)
/* Bytes MHD asks the stream for at a time. */
#define STREAM_BLOCK ((size_t)64 << 10)

/* Per-thread sample buffer for unstreamed bodies: HTTP threads live as long
 * as the daemon, so each keeps one buffer of up to STREAM_VALUES floats
 * instead of an allocation per request; freed when the thread exits. */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p)
{
    pg_free(p);
}

static void scratch_init(void)
{
    if (pthread_key_create(&scratch_key, scratch_free)) scratch_key = (pthread_key_t)-1;
}

static float *scratch(void)
{
    pthread_once(&scratch_once, scratch_init);
    if (scratch_key == (pthread_key_t)-1) return NULL;
    float *x = pthread_getspecific(scratch_key);
    if (!x) {
        x = pg_alloc_f32(STREAM_VALUES);
        if (x && pthread_setspecific(scratch_key, x)) {
            pg_free(x);
            x = NULL;
        }
    }
    return x;
}

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

/* n, whose refusal names the limit that applies and its flag. */
static int query_n(pg_req *r, uint64_t max, int buffered, int *present, uint64_t *out)
{
    const char *s = pg_api_query(r, "n");
    *present = s != NULL;
    if (!s) return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || errno || s[0] == '-' || v > max) {
        char msg[200];
        snprintf(msg, sizeof msg, "n must be an integer in [1, %llu] (%s)", (unsigned long long)max,
                 buffered ? "--max-samples: format=png is drawn whole in memory"
                          : "--max-stream-samples: streamed formats json, csv, ndjson, npy");
        pg_api_problem(r, 400, msg, "n", msg);
        return -1;
    }
    *out = v;
    return 0;
}

/* ---- streamed bodies -------------------------------------------------- */

/* A stream, and the copy kept for the body cache (NULL: none). */
typedef struct streamed {
    pg_samples_stream *st;
    pg_samples_keep *keep;
    pg_api_busy busy;
} streamed;

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    streamed *s = cls;
    (void)pos;
    pg_error err = {0};
    pg_api_busy_begin(&s->busy);
    ssize_t k = pg_samples_stream_read(s->st, buf, max, &err);
    pg_api_busy_end(&s->busy);
    if (k < 0) return MHD_CONTENT_READER_END_WITH_ERROR; /* the client sees a cut body */
    if (k == 0) {
        pg_samples_keep_end(s->keep);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    pg_samples_keep_add(s->keep, buf, (size_t)k);
    return k;
}

static void stream_free(void *cls)
{
    streamed *s = cls;
    pg_samples_stream_free(s->st);
    pg_samples_keep_free(s->keep);
    free(s);
}

static void send_stream(pg_req *r, const pg_samples_spec *sp, pg_snapshot *snap,
                        const pg_samples_cache *kc, const char *type)
{
    streamed *s = calloc(1, sizeof *s);
    pg_error err = {0};
    if (!s) {
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    pg_api_busy_init(&s->busy, r);
    if (pg_samples_stream_open(sp, snap, &s->st, &err)) {
        free(s);
        pg_api_problem(r, err.code == PG_ENOMEM ? 503 : 500, err.msg, NULL, NULL);
        return;
    }
    size_t size = pg_samples_body_size(sp);
    s->keep = pg_samples_keep_open(r, kc, size, sp->n * sp->d);
    struct MHD_Response *resp = MHD_create_response_from_callback(
        size ? size : MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_reader, s, stream_free);
    if (!resp) {
        stream_free(s);
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    pg_api_send_text(r, 200, type, NULL, 0);
    r->custom = resp;
}

void pg_h_jobs_samples(pg_req *r)
{
    if (!pg_api_jobs_ready(r)) return;
    const char *fmt = pg_api_query(r, "format");
    if (!fmt) fmt = "json";
    int format = !strcmp(fmt, "json")     ? PG_SAMPLES_JSON
                 : !strcmp(fmt, "csv")    ? PG_SAMPLES_CSV
                 : !strcmp(fmt, "npy")    ? PG_SAMPLES_NPY
                 : !strcmp(fmt, "png")    ? 3
                 : !strcmp(fmt, "ndjson") ? 4
                                          : -1;
    if (format < 0) {
        pg_api_problem(r, 400, "format must be json, csv, npy, png or ndjson (typed jobs)",
                       "format", "must be json, csv, npy, png or ndjson");
        return;
    }
    int has_n, has_seed, has_label, has_ck;
    uint64_t n = 64, seed = 0, label = 0, ck = 0;
    const char *label_name = pg_h_samples_label_name(r);
    has_label = 0;
    /* PNG is drawn and rendered whole in memory; the other formats stream
     * in constant memory, so their limit can be much larger. */
    size_t max_n = format == 3 ? r->app->cfg->max_samples : r->app->cfg->max_stream_samples;
    if (query_n(r, max_n, format == 3, &has_n, &n) ||
        query_u64(r, "seed", UINT64_MAX, &has_seed, &seed) ||
        (!label_name && query_u64(r, "label", 1000000, &has_label, &label)) ||
        query_u64(r, "checkpoint", INT32_MAX, &has_ck, &ck))
        return;
    if (n == 0) {
        pg_api_problem(r, 400, "n must be at least 1", "n", "must be at least 1");
        return;
    }
    pg_api_plot plot; /* PNG only: ?frame= and the title */
    if (format == 3 && pg_api_plot_request(r, r->params[0], &plot)) return;
    /* (typed jobs ignore plot's frame: their PNG is a histogram page) */
    if (!has_seed && getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) {
        pg_api_problem(r, 503, "cannot draw a sampling seed", NULL, NULL);
        return;
    }
    pg_snapshot *snap;
    pg_job_geometry geo = {0};
    int found;
    pg_error err = {0};
    int rc = pg_jobs_snapshot(r->app->jobs, r->tok.tenant, r->params[0], has_ck ? (long)ck : -1,
                              &snap, &geo, &found, &err);
    if (rc == PG_ESTATE) {
        pg_api_problem(r, 409, err.msg, NULL, NULL);
        return;
    }
    /* the model may come from storage: 503 + Retry-After while it is away */
    if (pg_api_answer_lookup(r, rc, &err, &found,
                             has_ck ? "no such job or checkpoint" : "no such job"))
        return;
    /* A PNG's title comes from the job's view: when it could not be read
     * the bytes differ, so such a plot is not cacheable. */
    pg_samples_cache kc;
    pg_samples_cache_init(r, has_seed && (format != 3 || plot.opt.method), has_ck,
                          pg_snapshot_step(snap), geo.ended, &kc);
    if ((geo.table || label_name || format == 4) &&
        pg_h_samples_typed(r, snap, &geo, &kc, format, n, seed, label_name, &has_label, &label))
        return;
    if (has_label && geo.num_classes > 0 && pg_snapshot_num_classes(snap) == 0) {
        pg_snapshot_release(snap);
        pg_api_problem(r, 400, "this job's model does not condition on the label", "label",
                       "the model is unconditional");
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
    size_t d = pg_snapshot_dim(snap);
    long step = pg_snapshot_step(snap);
    int same = geo.d == d && geo.ndim >= 1 && geo.ndim <= 3;
    pg_samples_spec sp = {
        .format = format == 3 ? PG_SAMPLES_NPY : format,
        .n = (size_t)n,
        .d = d,
        .ndim = same ? geo.ndim : 1,
        .shape = {same ? geo.shape[0] : d, same ? geo.shape[1] : 0, same ? geo.shape[2] : 0},
        .step = step,
        .seed = seed,
        .label = has_label ? (int)label : -1,
        .cpu = r->app->cpu,
        .cpu_cap = r->app->cfg->threads_per_job};
    if (format == 3) {
        if (!same || !(d == 2 || (geo.ndim == 3 && (geo.shape[0] == 1 || geo.shape[0] == 3)))) {
            pg_snapshot_release(snap);
            pg_api_problem(r, 400,
                           same ? "PNG needs image-shaped rows ([1,h,w] or [3,h,w]) or 2-D points"
                                : "PNG needs the job's data shape, which this job does not record "
                                  "(its dataset was deleted before the job stored it)",
                           "format", "png is not available for this job");
            return;
        }
        if (pg_samples_cache_answer(r, &kc, "image/png")) {
            pg_snapshot_release(snap);
            if (r->status == 200) pg_jobs_count_samples(r->app->jobs, (size_t)n);
            return;
        }
        char *body = NULL;
        size_t len = 0;
        float *x = pg_alloc_f32((size_t)n * d);
        rc = x ? pg_samples_draw(snap, &sp, x, &err)
               : pg_error_set(&err, PG_ENOMEM, "out of memory drawing samples");
        pg_snapshot_release(snap);
        if (!rc) {
            plot.opt.step = step;
            rc = pg_render_png_plot(x, (size_t)n, d, geo.ndim, geo.shape, geo.lo, geo.hi, &plot.opt,
                                    &body, &len, &err);
        }
        pg_free(x);
        if (rc) {
            pg_api_problem(r,
                           rc == PG_EINVAL || rc == PG_ENOTSUP ? 400
                           : rc == PG_ENOMEM                   ? 503
                                                               : 500,
                           err.msg, NULL, NULL);
            return;
        }
        pg_jobs_count_samples(r->app->jobs, (size_t)n);
        pg_samples_cache_send(r, &kc, "image/png", body, len);
        return;
    }
    static const char *const TYPES[] = {"application/json", "text/csv", "application/x-npy"};
    if (pg_samples_cache_answer(r, &kc, TYPES[format])) {
        pg_snapshot_release(snap);
        if (r->status == 200) pg_jobs_count_samples(r->app->jobs, (size_t)n);
        return;
    }
    pg_jobs_count_samples(r->app->jobs, (size_t)n);
    if ((size_t)n * d > STREAM_VALUES) {
        send_stream(r, &sp, snap, &kc, TYPES[format]);
        pg_snapshot_release(snap);
        return;
    }
    float *x = scratch();
    char *body = NULL;
    size_t len = 0;
    rc = x ? pg_samples_draw(snap, &sp, x, &err)
           : pg_error_set(&err, PG_ENOMEM, "out of memory drawing samples");
    pg_snapshot_release(snap);
    if (!rc) rc = pg_samples_encode(&sp, x, &body, &len, &err);
    if (rc) {
        pg_api_problem(r, rc == PG_ENOMEM ? 503 : 500, err.msg, NULL, NULL);
        return;
    }
    pg_samples_cache_send(r, &kc, TYPES[format], body, len);
}
