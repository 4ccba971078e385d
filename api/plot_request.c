#include "api/plot_request.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "service/jobs.h"

int pg_api_plot_request(pg_req *r, const char *job_id, pg_api_plot *out)
{
    memset(out, 0, sizeof *out);
    pg_render_plot_defaults(&out->opt);
    const char *frame = pg_api_query(r, "frame");
    if (frame && strcmp(frame, "data") && strcmp(frame, "range")) {
        pg_api_problem(r, 400, "frame must be data or range", "frame", "must be data or range");
        return -1;
    }
    out->opt.frame = frame && !strcmp(frame, "range") ? PG_PLOT_FRAME_RANGE : PG_PLOT_FRAME_DATA;
    /* The title is a courtesy: a job that cannot be read here (it is read
     * again, authoritatively, for the samples) just gets a shorter title. */
    json_t *view = NULL;
    uint64_t version = 0;
    int found = 0;
    pg_error err = {0};
    if (pg_jobs_get(r->app->jobs, r->tok.tenant, job_id, &view, &version, &found, &err) || !found ||
        !view) {
        json_decref(view);
        return 0;
    }
    const char *m = json_string_value(json_object_get(view, "method"));
    if (m) {
        snprintf(out->method, sizeof out->method, "%s", m);
        out->opt.method = out->method;
    }
    json_t *p = json_object_get(view, "privacy");
    const char *mech = json_string_value(json_object_get(p, "mechanism"));
    double eps = json_number_value(json_object_get(p, "epsilon"));
    const char *model = json_is_true(json_object_get(p, "charges")) ? "central"
                        : mech && !strncmp(mech, "local", 5)        ? "local"
                                                                    : "public";
    snprintf(out->privacy, sizeof out->privacy, "%s", model);
    out->opt.privacy = out->privacy;
    if (json_is_number(json_object_get(p, "epsilon")) && eps > 0.0 && isfinite(eps))
        out->opt.epsilon = eps;
    json_decref(view);
    return 0;
}
