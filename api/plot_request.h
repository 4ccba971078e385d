/* api/plot_request.h - what a PNG samples request asks of the plot.
 *
 * Reads ?frame=data|range (default data) and the job's method, privacy model
 * and epsilon (pg_jobs_summary, for the title) into a pg_render_plot whose
 * strings live in the struct or in static storage.
 * Returns 0, or -1 after sending the problem response (400 for a bad frame).
 */
#ifndef PG_API_PLOT_REQUEST_H
#define PG_API_PLOT_REQUEST_H

#include "api/internal.h"
#include "render/render.h"

typedef struct pg_api_plot {
    pg_render_plot opt;
    char method[64];
} pg_api_plot;

int pg_api_plot_request(pg_req *r, const char *job_id, pg_api_plot *out);

#endif
