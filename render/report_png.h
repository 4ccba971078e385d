/* render/report_png.h - the figures of a quality report (engine/eval/report.h)
 * as PNG bodies: real-vs-synthetic histograms, the correlation-difference
 * heatmap, a 2-D scatter and an image sample grid.
 *
 * Every figure has a title line, a caption that states both row counts
 * ("real n=... synthetic n=...") and, when the reference rows are private
 * data (in->private_ref), the mark PG_REPORT_MARK in PG_REPORT_MARK_RGB at
 * scale 2 below the title: such a figure is a non-private function of the
 * data owner's rows (docs/reports.md).
 *
 * Histograms (one column, or a page of up to PG_REPORT_PAGE_MAX panels):
 *   numeric columns share B bins over [lo, hi], the declared range when
 *   in->lo < in->hi are finite, else the finite values' range of both sets
 *   (a constant column gets [c - s, c + s], s = 0.1 |c| or 0.5 when c = 0).
 *   Bin k is [lo + k w, lo + (k + 1) w), w = (hi - lo) / B, the last bin
 *   closed; values outside [lo, hi] and non-finite values are counted in a
 *   note, not binned. B = in->bins, or when 0 the rounded square root of the
 *   larger row count but at least 5; either way at most the panel's plot
 *   width / 8 (73 for pg_report_png_hist, 30 on a page). Categorical
 *   columns get one bin per code (codes that are not integers in [0, k) are
 *   counted as outside); when k exceeds that width cap only the codes with
 *   the largest real+synthetic frequency are drawn, in code order, and the
 *   caption says how many. Each bin holds two bars side by side, real
 *   (PG_REPORT_REAL_RGB, left half) and synthetic (PG_REPORT_SYN_RGB, right
 *   half), whose height is the share of that set's rows (all rows, so bars
 *   sum below 1 when values fall outside): with [xa, xb) the bin's pixel
 *   columns, xa = left + floor(k W / B), the real bar fills [xa + 1, m) and
 *   the synthetic bar [m, xb - 1), m = (xa + xb) / 2, from the baseline up
 *   round(share / top * H) pixels, top being the share axis's upper end
 *   (pg_plot_axis_fit(0, max share, 4, extend)). The caption carries KS and
 *   W1 (numeric) or TV (categorical) from in->report when it has marginals.
 * Heatmap: cell (i, j) of the d x d matrix assoc_syn - assoc_real of
 *   in->report (needs has_pairwise, d <= PG_REPORT_HEATMAP_MAX_D), cells of
 *   floor(PG_REPORT_HEATMAP_BOX / d) pixels, row i top to bottom, column j
 *   left to right. Colour of value v: t = clamp(v / L, -1, 1), L the
 *   smallest of 0.1, 0.2, 0.5, 1, 2 that is >= the largest finite |v|
 *   (pg_report_heat_limit), and each channel MID + |t| (END - MID) rounded,
 *   END = PG_REPORT_NEG_RGB for t < 0 else PG_REPORT_POS_RGB; NaN (pair not
 *   defined) is PG_REPORT_NAN_RGB. A colour bar with ticks -L, 0, L is the
 *   legend; column names label rows and columns when cells are at least
 *   PG_FONT_H + 2 pixels, else every k-th index does.
 * Scatter (d = 2): the frame of render/plot.h around the finite points of both
 *   sets, the declared range dashed when finite, real and synthetic points as
 *   3x3 blends (2 parts background, 3 parts colour) drawn interleaved so that
 *   neither set hides the other.
 * Grid ([1|3, h, w] rows): render/render.h's grid of the first
 *   PG_REPORT_GRID_MAX synthetic rows under this module's header; with real
 *   rows given, their grid stands on the left ("real") and the synthetic one
 *   on the right.
 *
 * Hostile inputs: non-finite values are counted, never drawn; 0 rows draw an
 * empty figure that says n=0; d = 0, a column index >= d, missing
 * pair matrices, shapes a figure cannot show give PG_EINVAL / PG_ENOTSUP.
 * Output: *out (malloc'ed PNG, caller frees) and *len; on error *out is
 * untouched and err says why (PG_EINVAL, PG_ENOTSUP, PG_ENOMEM). No state.
 */
#ifndef PG_RENDER_REPORT_PNG_H
#define PG_RENDER_REPORT_PNG_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/eval/report.h"

#define PG_REPORT_MARK          "not DP - for the data owner"
#define PG_REPORT_PAGE_MAX      12
#define PG_REPORT_HEATMAP_MAX_D 240
#define PG_REPORT_HEATMAP_BOX   480
#define PG_REPORT_GRID_MAX      64

extern const uint8_t PG_REPORT_MARK_RGB[3], PG_REPORT_REAL_RGB[3], PG_REPORT_SYN_RGB[3],
    PG_REPORT_NEG_RGB[3], PG_REPORT_MID_RGB[3], PG_REPORT_POS_RGB[3], PG_REPORT_NAN_RGB[3];

typedef struct pg_report_png_in {
    const float *real, *syn; /* n_real x d and n_syn x d, row-major; NULL when 0 rows */
    size_t n_real, n_syn, d;
    int ndim;                      /* 1, or 3 for [c, h, w] rows */
    size_t shape[3];               /* ndim == 3: c, h, w */
    const pg_eval_column *columns; /* d entries, or NULL: numeric, named x0, x1, ... */
    const pg_eval_report *report;  /* optional for histograms; the heatmap needs it */
    double lo, hi;                 /* declared value range; NaN: the data's range */
    int private_ref;               /* the reference rows are private: mark every figure */
    const char *title;             /* e.g. "job_x vs ds_y"; NULL: none */
    int bins;                      /* numeric histograms: 0 = the rule above */
    int level;                     /* zlib level 1..9; 0: PG_RENDER_PNG_LEVEL */
} pg_report_png_in;

/* Zeroes *in and sets lo = hi = NaN. */
void pg_report_png_defaults(pg_report_png_in *in);

/* One column j, large. */
int pg_report_png_hist(const pg_report_png_in *in, size_t j, char **out, size_t *len,
                       pg_error *err);
/* Columns first .. first + count - 1 (count 1..PG_REPORT_PAGE_MAX, clipped
 * to d) as small multiples, three panels a row. */
int pg_report_png_hist_page(const pg_report_png_in *in, size_t first, size_t count, char **out,
                            size_t *len, pg_error *err);
int pg_report_png_heatmap(const pg_report_png_in *in, char **out, size_t *len, pg_error *err);
int pg_report_png_scatter(const pg_report_png_in *in, char **out, size_t *len, pg_error *err);
int pg_report_png_grid(const pg_report_png_in *in, char **out, size_t *len, pg_error *err);

/* The label of categorical bar `code` of column col in at most max_px
 * pixels (font scale 1): the category's name when col->category_names is
 * set, else the code; a longer name is cut at a character boundary and ends
 * in "..". Bars too narrow for their labels are labelled every k-th. */
void pg_report_png_bar_label(const pg_eval_column *col, int32_t code, int max_px, char *buf,
                             size_t cap);

/* The heatmap's colour-scale limit L for the largest finite |v| (NaN: 0.1). */
double pg_report_heat_limit(double max_abs);

#endif
