/* service/reports/report_figures.c - which figures a report stores, and under
 * which names (service/reports/reports.h), drawn with render/report_png.h. */
#include "service/reports/reports.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/report_png.h"

/* Histogram pages of PG_REPORT_PAGE_MAX columns: every column of a table
 * (PG_TABLE_MAX_COLS at most, 86 pages), at most this many pages of units
 * for untyped rows (the view's figures list says which were drawn). */
#define MAX_PAGES       4
#define MAX_TABLE_PAGES ((1024 + PG_REPORT_PAGE_MAX - 1) / PG_REPORT_PAGE_MAX)

static int add(pg_report_figure *v, size_t *n, const char *name, char *png, size_t len)
{
    snprintf(v[*n].name, sizeof v[*n].name, "%s", name);
    v[*n].png = (unsigned char *)png;
    v[*n].len = len;
    (*n)++;
    return PG_OK;
}

int pg_reports_draw_figures(const pg_reports_fig_in *fi, pg_report_figure **out, size_t *count,
                            pg_error *err)
{
    *out = NULL;
    *count = 0;
    pg_report_png_in in;
    pg_report_png_defaults(&in);
    in.real = fi->real;
    in.syn = fi->syn;
    in.n_real = fi->n_real;
    in.n_syn = fi->n_syn;
    in.d = fi->d;
    in.ndim = fi->ndim;
    memcpy(in.shape, fi->shape, sizeof in.shape);
    in.columns = fi->columns;
    in.report = fi->report;
    in.lo = fi->lo;
    in.hi = fi->hi;
    in.private_ref = fi->mark_private;
    in.title = fi->title;
    size_t pages = fi->columns ? MAX_TABLE_PAGES : MAX_PAGES;
    pg_report_figure *v = calloc(pages + 3, sizeof *v);
    if (!v) return pg_error_set(err, PG_ENOMEM, "out of memory drawing figures");
    size_t n = 0;
    char *png = NULL, name[64];
    size_t len = 0;
    int rc = PG_OK;
    if (fi->ndim == 3) {
        /* A private dataset's rows are never copied into a stored figure,
         * even for its owner: the grid then shows synthetic rows only. */
        if (!fi->show_real_rows) {
            in.real = NULL;
            in.n_real = 0;
        }
        if (!(rc = pg_report_png_grid(&in, &png, &len, err))) add(v, &n, "samples.png", png, len);
    } else {
        /* Histograms bin the data's own range: a declared range wide
         * enough for local noise would crowd the rows into a few bins.
         * The scatter keeps it (drawn dashed). */
        in.lo = in.hi = NAN;
        for (size_t p = 0; !rc && p < pages && p * PG_REPORT_PAGE_MAX < fi->d; p++) {
            snprintf(name, sizeof name, "histograms-%zu.png", p + 1);
            if (!(rc = pg_report_png_hist_page(&in, p * PG_REPORT_PAGE_MAX, PG_REPORT_PAGE_MAX,
                                               &png, &len, err)))
                add(v, &n, name, png, len);
        }
        if (!rc && fi->report && fi->report->has_pairwise && fi->d >= 2 &&
            fi->d <= PG_REPORT_HEATMAP_MAX_D && !(rc = pg_report_png_heatmap(&in, &png, &len, err)))
            add(v, &n, "correlation.png", png, len);
        in.lo = fi->lo;
        in.hi = fi->hi;
        if (!rc && fi->d == 2 && !(rc = pg_report_png_scatter(&in, &png, &len, err)))
            add(v, &n, "scatter.png", png, len);
    }
    if (rc) {
        pg_reports_figures_free(v, n);
        return rc;
    }
    *out = v;
    *count = n;
    return PG_OK;
}
