#include "api/plot_request.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "service/jobs/jobs.h"

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
    pg_job_summary s;
    int found = 0;
    pg_error err = {0};
    if (pg_jobs_summary(r->app->jobs, r->tok.tenant, job_id, &s, &found, &err) || !found) return 0;
    snprintf(out->method, sizeof out->method, "%s", s.method);
    out->opt.method = out->method;
    out->opt.privacy = s.privacy;
    if (!isnan(s.epsilon)) out->opt.epsilon = s.epsilon;
    return 0;
}
