#include "render/report_png.h"

#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/font.h"
#include "render/plot.h"
#include "render/render.h"
#include "engine/eval/marginal.h"

const uint8_t PG_REPORT_MARK_RGB[3] = {200, 0, 0}, PG_REPORT_REAL_RGB[3] = {31, 119, 180},
              PG_REPORT_SYN_RGB[3] = {255, 127, 14}, PG_REPORT_NEG_RGB[3] = {33, 102, 172},
              PG_REPORT_MID_RGB[3] = {247, 247, 247}, PG_REPORT_POS_RGB[3] = {178, 24, 43},
              PG_REPORT_NAN_RGB[3] = {170, 170, 170};

static const uint8_t INK[3] = {20, 20, 20}, AXIS[3] = {80, 80, 80}, GRIDLINE[3] = {228, 228, 228},
                     NOTE[3] = {90, 90, 90}, RANGE[3] = {0, 150, 60};

void pg_report_png_defaults(pg_report_png_in *in)
{
    memset(in, 0, sizeof *in);
    in->lo = in->hi = NAN;
}

/* ---- canvas ------------------------------------------------------------ */

typedef struct canvas {
    uint8_t *p;
    int w, h;
} canvas;

static int canvas_new(canvas *c, int w, int h, pg_error *err)
{
    c->w = w, c->h = h;
    c->p = malloc((size_t)w * (size_t)h * 3);
    if (!c->p) return pg_error_set(err, PG_ENOMEM, "out of memory drawing a report figure");
    memset(c->p, 255, (size_t)w * (size_t)h * 3);
    return PG_OK;
}

static void put(canvas *c, int x, int y, const uint8_t col[3])
{
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
    memcpy(c->p + ((size_t)y * (size_t)c->w + (size_t)x) * 3, col, 3);
}

/* The half-open rectangle [x0, x1) x [y0, y1). */
static void fill(canvas *c, int x0, int y0, int x1, int y1, const uint8_t col[3])
{
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) put(c, x, y, col);
}

static void text(canvas *c, int x, int y, const char *s, int scale, const uint8_t col[3])
{
    pg_font_draw(c->p, c->w, c->h, x, y, s, scale, col, 0);
}

static void vtext(canvas *c, int x, int y, const char *s, const uint8_t col[3])
{
    pg_font_draw(c->p, c->w, c->h, x, y, s, 1, col, 1);
}

static int encode(const canvas *c, int level, char **out, size_t *len, pg_error *err);

/* ---- header: title, mark, counts ---------------------------------------- */

#define HDR_X 12

static int header_height(const pg_report_png_in *in)
{
    return 30 + (in->private_ref ? 22 : 0) + 16;
}

static void swatch(canvas *c, int x, int y, const uint8_t col[3])
{
    fill(c, x, y, x + 9, y + 8, col);
}

/* Draws the header and returns the first free row under it: `what` (scale
 * 2 when it fits), the mark, then in->title and the counts, with the two
 * colours when `legend`. */
static int header_x(canvas *c, const pg_report_png_in *in, const char *what, int legend, int *xend)
{
    char line[320];
    int scale = pg_font_width(what, 2) <= c->w - 2 * HDR_X ? 2 : 1;
    text(c, HDR_X, 8, what, scale, INK);
    int y = 30;
    if (in->private_ref) {
        text(c, HDR_X, y, PG_REPORT_MARK, 2, PG_REPORT_MARK_RGB);
        y += 22;
    }
    int x = HDR_X;
    if (in->title) {
        snprintf(line, sizeof line, "%.120s", in->title);
        text(c, x, y, line, 1, INK);
        x += pg_font_width(line, 1) + 18;
    }
    snprintf(line, sizeof line, "real n=%zu", in->n_real);
    if (legend) swatch(c, x, y, PG_REPORT_REAL_RGB), x += 13;
    text(c, x, y, line, 1, INK);
    x += pg_font_width(line, 1) + 16;
    snprintf(line, sizeof line, "synthetic n=%zu", in->n_syn);
    if (legend) swatch(c, x, y, PG_REPORT_SYN_RGB), x += 13;
    text(c, x, y, line, 1, INK);
    if (xend) *xend = x + pg_font_width(line, 1);
    return y + 16;
}

static int header(canvas *c, const pg_report_png_in *in, const char *what, int legend)
{
    return header_x(c, in, what, legend, NULL);
}

/* ---- histograms --------------------------------------------------------- */

typedef struct hist {
    int B;
    int categorical;
    double lo, hi;   /* numeric */
    int32_t *code;   /* categorical: the code of each drawn bin */
    int32_t k;       /* categorical: declared codes */
    double *fr, *fs; /* shares per bin */
    size_t out_r, out_s, nf_r, nf_s;
} hist;

static void hist_free(hist *h)
{
    free(h->code);
    free(h->fr);
    free(h->fs);
}

static const char *col_name(const pg_report_png_in *in, size_t j, char *buf, size_t cap)
{
    if (in->columns && in->columns[j].name && in->columns[j].name[0]) return in->columns[j].name;
    snprintf(buf, cap, "x%zu", j);
    return buf;
}

static int is_cat(const pg_report_png_in *in, size_t j)
{
    return in->columns && in->columns[j].kind == PG_EVAL_CATEGORICAL;
}

static void numeric_range(const pg_report_png_in *in, size_t j, double *lo, double *hi)
{
    if (isfinite(in->lo) && isfinite(in->hi) && in->lo < in->hi) {
        *lo = in->lo, *hi = in->hi;
        return;
    }
    double a = INFINITY, b = -INFINITY;
    for (int s = 0; s < 2; s++) {
        const float *x = s ? in->syn : in->real;
        size_t n = s ? in->n_syn : in->n_real;
        for (size_t i = 0; x && i < n; i++) {
            double v = x[i * in->d + j];
            if (isfinite(v)) a = fmin(a, v), b = fmax(b, v);
        }
    }
    if (!(a <= b)) a = 0.0, b = 1.0; /* no finite value */
    if (a == b) {
        double s = a != 0.0 ? 0.1 * fabs(a) : 0.5;
        a -= s, b += s;
    }
    *lo = a, *hi = b;
}

typedef struct weighted {
    int32_t code;
    double w;
} weighted;

/* Descending weight, ties by ascending code. */
static int by_weight(const void *pa, const void *pb)
{
    const weighted *a = pa, *b = pb;
    if (a->w != b->w) return a->w < b->w ? 1 : -1;
    return (a->code > b->code) - (a->code < b->code);
}

/* Bins column j. max_bins bounds B (from the panel's width). */
static int hist_build(const pg_report_png_in *in, size_t j, int max_bins, hist *h, pg_error *err)
{
    memset(h, 0, sizeof *h);
    if (max_bins < 1) max_bins = 1;
    size_t nmax = in->n_real > in->n_syn ? in->n_real : in->n_syn;
    if (is_cat(in, j)) {
        h->categorical = 1;
        h->k = in->columns[j].categories;
        if (h->k < 1 || h->k > PG_EVAL_MAX_CATEGORIES)
            return pg_error_set(err, PG_EINVAL, "column %zu declares %d categories", j, (int)h->k);
        double *cr = calloc((size_t)h->k, sizeof *cr), *cs = calloc((size_t)h->k, sizeof *cs);
        if (!cr || !cs) {
            free(cr), free(cs);
            return pg_error_set(err, PG_ENOMEM, "out of memory drawing a histogram");
        }
        for (int s = 0; s < 2; s++) {
            const float *x = s ? in->syn : in->real;
            size_t n = s ? in->n_syn : in->n_real;
            double *cnt = s ? cs : cr;
            size_t *out = s ? &h->out_s : &h->out_r, *nf = s ? &h->nf_s : &h->nf_r;
            for (size_t i = 0; x && i < n; i++) {
                double v = x[i * in->d + j];
                if (!isfinite(v))
                    (*nf)++;
                else if (v < 0 || v >= h->k || v != floor(v))
                    (*out)++;
                else
                    cnt[(int32_t)v] += 1.0;
            }
            for (int32_t c = 0; c < h->k; c++) cnt[c] = n ? cnt[c] / (double)n : 0.0;
        }
        h->B = h->k < max_bins ? (int)h->k : max_bins;
        h->code = malloc((size_t)h->k * sizeof *h->code);
        h->fr = calloc((size_t)h->B, sizeof *h->fr);
        h->fs = calloc((size_t)h->B, sizeof *h->fs);
        if (!h->code || !h->fr || !h->fs) {
            free(cr), free(cs), hist_free(h);
            return pg_error_set(err, PG_ENOMEM, "out of memory drawing a histogram");
        }
        for (int32_t c = 0; c < h->k; c++) h->code[c] = c;
        if (h->B < h->k) { /* keep the most frequent codes, then restore code order */
            weighted *wc = malloc((size_t)h->k * sizeof *wc);
            if (!wc) {
                free(cr), free(cs), hist_free(h);
                return pg_error_set(err, PG_ENOMEM, "out of memory drawing a histogram");
            }
            for (int32_t c = 0; c < h->k; c++) wc[c].code = c, wc[c].w = cr[c] + cs[c];
            qsort(wc, (size_t)h->k, sizeof *wc, by_weight);
            for (int b = 0; b < h->B; b++) wc[b].w = 0.0;
            qsort(wc, (size_t)h->B, sizeof *wc, by_weight); /* equal weights: code order */
            for (int b = 0; b < h->B; b++) h->code[b] = wc[b].code;
            free(wc);
        }
        for (int b = 0; b < h->B; b++) h->fr[b] = cr[h->code[b]], h->fs[b] = cs[h->code[b]];
        free(cr), free(cs);
        return PG_OK;
    }
    numeric_range(in, j, &h->lo, &h->hi);
    int B = in->bins;
    if (B <= 0) {
        B = (int)lround(sqrt((double)nmax));
        if (B < 5) B = 5;
    }
    if (B > max_bins) B = max_bins;
    h->B = B;
    h->fr = calloc((size_t)B, sizeof *h->fr);
    h->fs = calloc((size_t)B, sizeof *h->fs);
    if (!h->fr || !h->fs) {
        hist_free(h);
        return pg_error_set(err, PG_ENOMEM, "out of memory drawing a histogram");
    }
    for (int s = 0; s < 2; s++) {
        const float *x = s ? in->syn : in->real;
        size_t n = s ? in->n_syn : in->n_real;
        double *f = s ? h->fs : h->fr;
        size_t *out = s ? &h->out_s : &h->out_r, *nf = s ? &h->nf_s : &h->nf_r;
        for (size_t i = 0; x && i < n; i++) {
            double v = x[i * in->d + j];
            if (!isfinite(v)) {
                (*nf)++;
                continue;
            }
            if (v < h->lo || v > h->hi) {
                (*out)++;
                continue;
            }
            int k = (int)((v - h->lo) / (h->hi - h->lo) * B);
            f[k >= B ? B - 1 : k] += 1.0;
        }
        for (int b = 0; b < B; b++) f[b] = n ? f[b] / (double)n : 0.0;
    }
    return PG_OK;
}

static void fmt_stat(char *buf, size_t cap, const char *name, double v)
{
    if (isfinite(v))
        snprintf(buf, cap, "%s %.3g", name, v);
    else
        snprintf(buf, cap, "%s -", name);
}

/* One histogram in the rectangle (x, y, w, h); `big` uses larger text. */
static int hist_panel(canvas *c, const pg_report_png_in *in, size_t j, int x, int y, int w, int h,
                      int big, pg_error *err)
{
    const int L = x + 46, T = y + (big ? 24 : 28), W = w - 46 - 10, H = h - (T - y) - 30;
    hist hs;
    int rc = hist_build(in, j, W / 8, &hs, err);
    if (rc) return rc;
    char nbuf[32], line[200], s1[64], s2[64];
    const char *name = col_name(in, j, nbuf, sizeof nbuf);
    /* a long name is cut to the panel's width */
    int nscale = big ? 2 : 1;
    snprintf(line, sizeof line, "%s", name);
    if (pg_font_width(line, nscale) > w - 50) { /* cut, ending in ".." */
        size_t n = strlen(line);
        while (n > 1 && (pg_font_width(line, nscale) > w - 50 - 2 * PG_FONT_ADV * nscale))
            line[--n] = '\0';
        snprintf(line + n, sizeof line - n, "..");
    }
    if (!big) text(c, x + 4, y + 2, line, nscale, INK); /* a single figure's title names it */
    line[0] = '\0';
    const pg_eval_report *r = in->report;
    if (r && r->has_marginals && r->columns && j < r->d) {
        if (hs.categorical) {
            fmt_stat(line, sizeof line, "TV", r->columns[j].tv);
        } else {
            fmt_stat(s1, sizeof s1, "KS", r->columns[j].ks);
            fmt_stat(s2, sizeof s2, "W1", r->columns[j].w1);
            snprintf(line, sizeof line, "%s  %s", s1, s2);
        }
    }
    if (hs.categorical && hs.B < hs.k)
        snprintf(line + strlen(line), sizeof line - strlen(line), "%s%d of %d codes shown",
                 line[0] ? "  " : "", hs.B, (int)hs.k);
    int sy = y + (big ? 4 : 13), sx = x + 4;
    text(c, sx, sy, line, 1, NOTE);
    sx += pg_font_width(line, 1) + (line[0] ? 12 : 0);
    size_t out = hs.out_r + hs.out_s, nf = hs.nf_r + hs.nf_s;
    if (out || nf) {
        line[0] = '\0';
        if (out)
            snprintf(line, sizeof line, "%zu/%zu %s", hs.out_r, hs.out_s,
                     hs.categorical ? "bad codes" : "outside");
        if (nf)
            snprintf(line + strlen(line), sizeof line - strlen(line), "%s%zu/%zu not finite",
                     out ? ", " : "", hs.nf_r, hs.nf_s);
        text(c, sx, sy, line, 1, PG_REPORT_MARK_RGB);
    }
    double top = 0.0;
    for (int b = 0; b < hs.B; b++) top = fmax(top, fmax(hs.fr[b], hs.fs[b]));
    pg_plot_axis ya;
    pg_plot_axis_fit(0.0, top > 0.0 ? top : 1.0, big ? 5 : 4, 1, &ya);
    top = ya.hi;
    char lab[32];
    for (int i = 0; i < ya.nticks; i++) {
        int py = T + H - (int)lround(ya.tick[i] / top * H);
        if (ya.tick[i] > 0.0)
            for (int px = L; px < L + W; px++) put(c, px, py, GRIDLINE);
        for (int k = 1; k <= 4; k++) put(c, L - 1 - k, py, AXIS);
        pg_plot_tick_label(&ya, ya.tick[i], lab, sizeof lab);
        text(c, L - 8 - pg_font_width(lab, 1), py - PG_FONT_H / 2, lab, 1, INK);
    }
    for (int b = 0; b < hs.B; b++) {
        int xa = L + (int)((long)b * W / hs.B), xb = L + (int)((long)(b + 1) * W / hs.B);
        int m = (xa + xb) / 2;
        int hr = (int)lround(hs.fr[b] / top * H), hsyn = (int)lround(hs.fs[b] / top * H);
        fill(c, xa + 1, T + H - hr, m, T + H, PG_REPORT_REAL_RGB);
        fill(c, m, T + H - hsyn, xb - 1, T + H, PG_REPORT_SYN_RGB);
    }
    for (int px = L - 1; px < L + W; px++) put(c, px, T + H, AXIS);
    for (int py = T; py <= T + H; py++) put(c, L - 1, py, AXIS);
    if (hs.categorical) { /* names (or codes) where they fit, else every k-th */
        const pg_eval_column *col = &in->columns[j];
        int widest = pg_font_width("0000", 1);
        if (col->category_names) { /* what the drawn bars' names need, up to 3 chars + ".." */
            widest = 0;
            for (int b = 0; b < hs.B; b++) {
                pg_report_png_bar_label(col, hs.code[b], 1 << 20, lab, sizeof lab);
                int wl = pg_font_width(lab, 1), cut = pg_font_width("abc..", 1);
                widest = wl > widest ? (wl < cut ? wl : cut > widest ? cut : widest) : widest;
            }
        }
        int bw = W / hs.B, every = 1;
        while (every < hs.B && every * bw < widest + 4) every++;
        for (int b = 0; b < hs.B; b += every) {
            int xa = L + (int)((long)b * W / hs.B), xb = L + (int)((long)(b + 1) * W / hs.B);
            pg_report_png_bar_label(col, hs.code[b], every * bw - 4, lab, sizeof lab);
            text(c, (xa + xb) / 2 - pg_font_width(lab, 1) / 2, T + H + 6, lab, 1, INK);
        }
    } else {
        pg_plot_axis xa;
        pg_plot_axis_fit(hs.lo, hs.hi, big ? 10 : 6, 0, &xa);
        for (int i = 0; i < xa.nticks; i++) {
            int px = L + (int)lround((xa.tick[i] - hs.lo) / (hs.hi - hs.lo) * (W - 1));
            for (int k = 1; k <= 4; k++) put(c, px, T + H + k, AXIS);
            pg_plot_tick_label(&xa, xa.tick[i], lab, sizeof lab);
            text(c, px - pg_font_width(lab, 1) / 2, T + H + 7, lab, 1, INK);
        }
    }
    hist_free(&hs);
    return PG_OK;
}

/* The label of categorical bar `code` in at most max_px pixels: its
 * category name when the column has names, else the code; a name too long
 * is cut at a character boundary and ends in "..". */
void pg_report_png_bar_label(const pg_eval_column *col, int32_t code, int max_px, char *buf,
                             size_t cap)
{
    const char *name = col && col->category_names && code >= 0 && code < col->categories
                           ? col->category_names[code]
                           : NULL;
    if (!name) {
        snprintf(buf, cap, "%d", (int)code);
        return;
    }
    snprintf(buf, cap, "%s", name);
    if (pg_font_width(buf, 1) <= max_px) return;
    /* the longest run of whole characters that fits with ".." after it */
    size_t keep = 0;
    for (const char *q = name; pg_font_next(&q);) {
        size_t k = (size_t)(q - name);
        if (k + 3 > cap) break;
        memcpy(buf, name, k);
        memcpy(buf + k, "..", 3);
        if (pg_font_width(buf, 1) > max_px) break;
        keep = k;
    }
    memcpy(buf, name, keep);
    memcpy(buf + keep, "..", 3);
}

/* What the bars mean, right-aligned on the counts line (y: under it; xend:
 * where that line's text ends), or on the title line when a long title
 * leaves no room there, or left out when neither has room. */
static void share_note(canvas *c, int y, int xend, const char *what)
{
    const char *s = "bar height: share of each set's rows";
    int x = c->w - HDR_X - pg_font_width(s, 1);
    int scale = pg_font_width(what, 2) <= c->w - 2 * HDR_X ? 2 : 1;
    if (x >= xend + 16)
        text(c, x, y - 16, s, 1, NOTE);
    else if (x >= HDR_X + pg_font_width(what, scale) + 16)
        text(c, x, 12, s, 1, NOTE);
}

static int check_rows(const pg_report_png_in *in, pg_error *err)
{
    if (!in || in->d == 0) return pg_error_set(err, PG_EINVAL, "a report figure needs d >= 1");
    if ((in->n_real && !in->real) || (in->n_syn && !in->syn))
        return pg_error_set(err, PG_EINVAL, "rows are missing");
    if (in->level < 0 || in->level > 9)
        return pg_error_set(err, PG_EINVAL, "the PNG compression level must be 1..9");
    return PG_OK;
}

int pg_report_png_hist(const pg_report_png_in *in, size_t j, char **out, size_t *len, pg_error *err)
{
    int rc = check_rows(in, err);
    if (rc) return rc;
    if (j >= in->d)
        return pg_error_set(err, PG_EINVAL, "column %zu is not below d = %zu", j, in->d);
    canvas c;
    int hh = header_height(in);
    if ((rc = canvas_new(&c, 640, hh + 400, err))) return rc;
    char what[96], nbuf[32];
    snprintf(what, sizeof what, "%.60s: real vs synthetic", col_name(in, j, nbuf, sizeof nbuf));
    int xend;
    int y = header_x(&c, in, what, 1, &xend);
    share_note(&c, y, xend, what);
    rc = hist_panel(&c, in, j, 0, y + 4, c.w, c.h - y - 4, 1, err);
    if (!rc) rc = encode(&c, in->level, out, len, err);
    free(c.p);
    return rc;
}

#define PANEL_W 300
#define PANEL_H 220

int pg_report_png_hist_page(const pg_report_png_in *in, size_t first, size_t count, char **out,
                            size_t *len, pg_error *err)
{
    int rc = check_rows(in, err);
    if (rc) return rc;
    if (first >= in->d)
        return pg_error_set(err, PG_EINVAL, "column %zu is not below d = %zu", first, in->d);
    if (count < 1 || count > PG_REPORT_PAGE_MAX)
        return pg_error_set(err, PG_EINVAL, "a page holds 1 to %d columns", PG_REPORT_PAGE_MAX);
    if (count > in->d - first) count = in->d - first;
    int cols = count < 3 ? (int)count : 3, rows = (int)((count + 2) / 3);
    int hh = header_height(in);
    canvas c;
    int W = cols * PANEL_W + 16;
    if (W < 560) W = 560;
    if ((rc = canvas_new(&c, W, hh + 8 + rows * PANEL_H, err))) return rc;
    char what[96];
    if (count == in->d)
        snprintf(what, sizeof what, "real vs synthetic, %zu column%s", count, count > 1 ? "s" : "");
    else
        snprintf(what, sizeof what, "real vs synthetic, columns %zu-%zu of %zu", first + 1,
                 first + count, in->d); /* counted from 1, as people count */
    int xend;
    int y = header_x(&c, in, what, 1, &xend) + 8;
    share_note(&c, y - 8, xend, what);
    for (size_t i = 0; !rc && i < count; i++)
        rc = hist_panel(&c, in, first + i, 8 + (int)(i % 3) * PANEL_W, y + (int)(i / 3) * PANEL_H,
                        PANEL_W, PANEL_H, 0, err);
    if (!rc) rc = encode(&c, in->level, out, len, err);
    free(c.p);
    return rc;
}

/* ---- heatmap ------------------------------------------------------------ */

double pg_report_heat_limit(double max_abs)
{
    static const double lim[] = {0.1, 0.2, 0.5, 1.0, 2.0};
    for (int i = 0; i < 5; i++)
        if (max_abs <= lim[i]) return lim[i];
    return 2.0; /* also NaN; differences of correlations lie in [-2, 2] */
}

static void heat_rgb(double v, double lim, uint8_t rgb[3])
{
    if (!isfinite(v)) {
        memcpy(rgb, PG_REPORT_NAN_RGB, 3);
        return;
    }
    double t = v / lim;
    t = t < -1.0 ? -1.0 : t > 1.0 ? 1.0 : t;
    const uint8_t *end = t < 0.0 ? PG_REPORT_NEG_RGB : PG_REPORT_POS_RGB;
    for (int k = 0; k < 3; k++)
        rgb[k] = (uint8_t)lround(PG_REPORT_MID_RGB[k] + fabs(t) * (end[k] - PG_REPORT_MID_RGB[k]));
}

int pg_report_png_heatmap(const pg_report_png_in *in, char **out, size_t *len, pg_error *err)
{
    int rc = check_rows(in, err);
    if (rc) return rc;
    const pg_eval_report *r = in->report;
    if (!r || !r->has_pairwise || !r->assoc_real || !r->assoc_syn || r->d != in->d)
        return pg_error_set(err, PG_EINVAL, "the heatmap needs the report's pairwise matrices");
    size_t d = in->d;
    if (d > PG_REPORT_HEATMAP_MAX_D)
        return pg_error_set(err, PG_ENOTSUP, "a heatmap shows at most %d columns, not %zu",
                            PG_REPORT_HEATMAP_MAX_D, d);
    double mx = 0.0;
    int any_nan = 0;
    for (size_t i = 0; i < d * d; i++) {
        double v = r->assoc_syn[i] - r->assoc_real[i];
        if (isfinite(v))
            mx = fmax(mx, fabs(v));
        else
            any_nan = 1;
    }
    double lim = pg_report_heat_limit(mx);
    int cell = PG_REPORT_HEATMAP_BOX / (int)d, box = cell * (int)d;
    int names = cell >= PG_FONT_H + 2;
    char nb[32], lab[40];
    int lab_w = 0;
    if (names)
        for (size_t j = 0; j < d; j++) {
            snprintf(lab, sizeof lab, "%.16s", col_name(in, j, nb, sizeof nb));
            int wj = pg_font_width(lab, 1);
            lab_w = wj > lab_w ? wj : lab_w;
        }
    else
        lab_w = pg_font_width("000", 1);
    int hh = header_height(in) + 14; /* one more line: the mean differences */
    int L = HDR_X + lab_w + 8, T = hh + 8 + lab_w + 8;
    int W = L + box + 110, Hh = T + box + 20;
    if (W < 600) W = 600;
    canvas c;
    if ((rc = canvas_new(&c, W, Hh, err))) return rc;
    int y = header(&c, in, "correlation difference (synthetic - real)", 0);
    char s1[64], s2[64], line[200];
    fmt_stat(s1, sizeof s1, "mean |diff| Pearson", r->pearson_mad);
    fmt_stat(s2, sizeof s2, "Cramer's V", r->cramer_mad);
    snprintf(line, sizeof line, "%s (%zu pairs)  %s (%zu pairs)", s1, r->pearson_pairs, s2,
             r->cramer_pairs);
    text(&c, HDR_X, y - 2, line, 1, NOTE);
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            uint8_t rgb[3];
            heat_rgb(r->assoc_syn[i * d + j] - r->assoc_real[i * d + j], lim, rgb);
            fill(&c, L + (int)j * cell, T + (int)i * cell, L + (int)(j + 1) * cell,
                 T + (int)(i + 1) * cell, rgb);
        }
    for (int t = -1; t <= box; t++) { /* frame */
        put(&c, L + t, T - 1, AXIS), put(&c, L + t, T + box, AXIS);
        put(&c, L - 1, T + t, AXIS), put(&c, L + box, T + t, AXIS);
    }
    int every = 1;
    if (!names)
        while (every * cell < pg_font_width("000", 1) + 6) every++;
    for (size_t j = 0; j < d; j += (size_t)every) {
        if (names)
            snprintf(lab, sizeof lab, "%.16s", col_name(in, j, nb, sizeof nb));
        else
            snprintf(lab, sizeof lab, "%zu", j);
        int wl = pg_font_width(lab, 1), mid = (int)j * cell + cell / 2;
        text(&c, L - 6 - wl, T + mid - PG_FONT_H / 2, lab, 1, INK); /* rows */
        if (names)
            vtext(&c, L + mid - PG_FONT_H / 2, T - 6, lab, INK); /* columns, upwards */
        else
            text(&c, L + mid - wl / 2, T - 6 - PG_FONT_H, lab, 1, INK);
    }
    /* the colour bar: +L at the top, -L at the bottom */
    int bx = L + box + 24, bh = box < 240 ? box : 240;
    if (bh < 60) bh = 60;
    for (int py = 0; py < bh; py++) {
        uint8_t rgb[3];
        heat_rgb(lim * (1.0 - 2.0 * py / (bh - 1)), lim, rgb);
        fill(&c, bx, T + py, bx + 16, T + py + 1, rgb);
    }
    const double tv[3] = {lim, 0.0, -lim};
    for (int i = 0; i < 3; i++) {
        int py = T + (int)lround((1.0 - tv[i] / lim) / 2.0 * (bh - 1));
        snprintf(lab, sizeof lab, "%+g", tv[i]);
        if (tv[i] == 0.0) snprintf(lab, sizeof lab, "0");
        put(&c, bx + 16, py, AXIS), put(&c, bx + 17, py, AXIS);
        text(&c, bx + 24, py - PG_FONT_H / 2, lab, 1, INK);
    }
    if (any_nan) {
        fill(&c, bx, T + bh + 10, bx + 16, T + bh + 20, PG_REPORT_NAN_RGB);
        text(&c, bx + 24, T + bh + 11, "n/a", 1, INK);
    }
    rc = encode(&c, in->level, out, len, err);
    free(c.p);
    return rc;
}

/* ---- scatter ------------------------------------------------------------ */

static void blend(canvas *c, int oy, int x, int y, const uint8_t col[3])
{
    if (x < PG_PLOT_LEFT || y < PG_PLOT_TOP || x > PG_PLOT_LEFT + PG_PLOT_SIZE ||
        y > PG_PLOT_TOP + PG_PLOT_SIZE)
        return;
    uint8_t *q = c->p + ((size_t)(y + oy) * (size_t)c->w + (size_t)x) * 3;
    for (int k = 0; k < 3; k++) q[k] = (uint8_t)((q[k] * 2 + col[k] * 3 + 2) / 5);
}

static void dot(canvas *c, int oy, const pg_plot_layout *l, const float *p, size_t *nf,
                const uint8_t col[3])
{
    int px, py;
    if (!isfinite(p[0]) || !isfinite(p[1])) {
        (*nf)++;
        return;
    }
    if (!pg_plot_px(l, p[0], p[1], &px, &py)) return;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) blend(c, oy, px + dx, py + dy, col);
}

int pg_report_png_scatter(const pg_report_png_in *in, char **out, size_t *len, pg_error *err)
{
    int rc = check_rows(in, err);
    if (rc) return rc;
    if (in->d != 2) return pg_error_set(err, PG_ENOTSUP, "a scatter plot needs 2-D rows");
    float box[4] = {INFINITY, INFINITY, -INFINITY, -INFINITY};
    size_t finite = 0;
    for (int s = 0; s < 2; s++) {
        const float *x = s ? in->syn : in->real;
        size_t n = s ? in->n_syn : in->n_real;
        for (size_t i = 0; x && i < n; i++) {
            if (!isfinite(x[2 * i]) || !isfinite(x[2 * i + 1])) continue;
            finite++;
            box[0] = fminf(box[0], x[2 * i]), box[1] = fminf(box[1], x[2 * i + 1]);
            box[2] = fmaxf(box[2], x[2 * i]), box[3] = fmaxf(box[3], x[2 * i + 1]);
        }
    }
    int declared = isfinite(in->lo) && isfinite(in->hi) && in->lo < in->hi;
    float lo = declared ? (float)in->lo : 0.0f, hi = declared ? (float)in->hi : 1.0f;
    pg_plot_layout l; /* framing the two corners frames every finite point */
    pg_plot_frame(box, finite ? 2 : 0, lo, hi, PG_PLOT_FRAME_DATA, &l);
    int oy = header_height(in) + 8 - PG_PLOT_TOP;
    if (oy < 0) oy = 0;
    canvas c;
    if ((rc = canvas_new(&c, PG_PLOT_W, PG_PLOT_H + oy, err))) return rc;
    const int Lx = PG_PLOT_LEFT, T = PG_PLOT_TOP + oy, S = PG_PLOT_SIZE;
    char lab[40], nb[32];
    for (int i = 0; i < l.x.nticks; i++) {
        int px, py;
        pg_plot_px(&l, l.x.tick[i], l.y.lo, &px, &py);
        for (int t = 0; t <= S; t++) put(&c, px, T + t, GRIDLINE);
        for (int k = 1; k <= 5; k++) put(&c, px, T + S + k, AXIS);
        pg_plot_tick_label(&l.x, l.x.tick[i], lab, sizeof lab);
        text(&c, px - pg_font_width(lab, 1) / 2, T + S + 9, lab, 1, INK);
    }
    for (int i = 0; i < l.y.nticks; i++) {
        int px, py;
        pg_plot_px(&l, l.x.lo, l.y.tick[i], &px, &py);
        py += oy;
        for (int t = 0; t <= S; t++) put(&c, Lx + t, py, GRIDLINE);
        for (int k = 1; k <= 5; k++) put(&c, Lx - k, py, AXIS);
        pg_plot_tick_label(&l.y, l.y.tick[i], lab, sizeof lab);
        text(&c, Lx - 9 - pg_font_width(lab, 1), py - PG_FONT_H / 2, lab, 1, INK);
    }
    const char *nx = col_name(in, 0, nb, sizeof nb);
    text(&c, Lx + S / 2 - pg_font_width(nx, 1) / 2, T + S + 24, nx, 1, INK);
    char nyb[32];
    snprintf(nyb, sizeof nyb, "%.30s", col_name(in, 1, nb, sizeof nb));
    vtext(&c, 10, T + S / 2 + pg_font_width(nyb, 1) / 2, nyb, INK);
    size_t nf_r = 0, nf_s = 0, most = in->n_real > in->n_syn ? in->n_real : in->n_syn;
    for (size_t i = 0; i < most; i++) {
        if (i < in->n_real) dot(&c, oy, &l, in->real + 2 * i, &nf_r, PG_REPORT_REAL_RGB);
        if (i < in->n_syn) dot(&c, oy, &l, in->syn + 2 * i, &nf_s, PG_REPORT_SYN_RGB);
    }
    if (declared) { /* the declared range, dashed */
        int x0, y0, x1, y1;
        double u0 = (in->lo - l.x.lo) / (l.x.hi - l.x.lo),
               u1 = (in->hi - l.x.lo) / (l.x.hi - l.x.lo);
        double v0 = (in->lo - l.y.lo) / (l.y.hi - l.y.lo),
               v1 = (in->hi - l.y.lo) / (l.y.hi - l.y.lo);
        x0 = Lx + (int)lround(fmax(-0.01, fmin(1.01, u0)) * S);
        x1 = Lx + (int)lround(fmax(-0.01, fmin(1.01, u1)) * S);
        y0 = T + S - (int)lround(fmax(-0.01, fmin(1.01, v0)) * S);
        y1 = T + S - (int)lround(fmax(-0.01, fmin(1.01, v1)) * S);
        for (int t = 0; t <= x1 - x0; t++)
            if (t % 10 < 6) put(&c, x0 + t, y0, RANGE), put(&c, x0 + t, y1, RANGE);
        for (int t = 0; t <= y0 - y1; t++)
            if (t % 10 < 6) put(&c, x0, y1 + t, RANGE), put(&c, x1, y1 + t, RANGE);
    }
    for (int t = 0; t <= S; t++) {
        put(&c, Lx + t, T, AXIS), put(&c, Lx + t, T + S, AXIS);
        put(&c, Lx, T + t, AXIS), put(&c, Lx + S, T + t, AXIS);
    }
    int y = header(&c, in, "real vs synthetic", 1);
    if (nf_r || nf_s) {
        char line[96];
        snprintf(line, sizeof line, "not finite (not drawn): %zu real, %zu synthetic", nf_r, nf_s);
        text(&c, PG_PLOT_W - HDR_X - pg_font_width(line, 1), y - 16, line, 1, PG_REPORT_MARK_RGB);
    }
    rc = encode(&c, in->level, out, len, err);
    free(c.p);
    return rc;
}

/* ---- image grid --------------------------------------------------------- */

/* render.h's grid of up to PG_REPORT_GRID_MAX rows, decoded to RGB. */
static int grid_rgb(const pg_report_png_in *in, const float *x, size_t n, float lo, float hi,
                    uint8_t **rgb, int *w, int *h, pg_error *err)
{
    char *png = NULL;
    size_t len = 0;
    if (n > PG_REPORT_GRID_MAX) n = PG_REPORT_GRID_MAX;
    int rc = pg_render_png(x, n, in->d, 3, in->shape, lo, hi, &png, &len, err);
    if (rc) return rc;
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, png, len)) {
        free(png);
        return pg_error_set(err, PG_ENOMEM, "cannot decode the sample grid");
    }
    img.format = PNG_FORMAT_RGB;
    *rgb = malloc(PNG_IMAGE_SIZE(img));
    if (!*rgb || !png_image_finish_read(&img, NULL, *rgb, 0, NULL)) {
        png_image_free(&img);
        free(*rgb);
        free(png);
        return pg_error_set(err, PG_ENOMEM, "cannot decode the sample grid");
    }
    *w = (int)img.width, *h = (int)img.height;
    free(png);
    return PG_OK;
}

int pg_report_png_grid(const pg_report_png_in *in, char **out, size_t *len, pg_error *err)
{
    int rc = check_rows(in, err);
    if (rc) return rc;
    if (in->ndim != 3 || (in->shape[0] != 1 && in->shape[0] != 3) || !in->shape[1] ||
        !in->shape[2] || in->shape[0] * in->shape[1] * in->shape[2] != in->d)
        return pg_error_set(err, PG_ENOTSUP, "a sample grid needs [1|3, h, w] rows");
    float lo = (float)in->lo, hi = (float)in->hi;
    if (!(isfinite(in->lo) && isfinite(in->hi) && in->lo < in->hi)) {
        double a = INFINITY, b = -INFINITY;
        size_t n = in->n_syn < PG_REPORT_GRID_MAX ? in->n_syn : PG_REPORT_GRID_MAX;
        for (size_t i = 0; i < n * in->d; i++)
            if (isfinite(in->syn[i])) a = fmin(a, in->syn[i]), b = fmax(b, in->syn[i]);
        if (!(a <= b)) /* no finite value */
            a = 0.0, b = 1.0;
        else if (a == b)
            b = a + 1.0;
        lo = (float)a, hi = (float)b;
    }
    uint8_t *g[2] = {NULL, NULL};
    int gw[2] = {0, 0}, gh[2] = {0, 0};
    const float *src[2] = {in->real, in->syn};
    size_t n[2] = {in->n_real, in->n_syn};
    for (int s = 0; s < 2 && !rc; s++)
        if (n[s]) rc = grid_rgb(in, src[s], n[s], lo, hi, &g[s], &gw[s], &gh[s], err);
    if (rc) {
        free(g[0]), free(g[1]);
        return rc;
    }
    int hh = header_height(in), gap = 24, top = hh + 8 + 14;
    int W = HDR_X + gw[0] + (gw[0] ? gap : 0) + gw[1] + HDR_X;
    if (W < 420) W = 420;
    int H = top + (gh[0] > gh[1] ? gh[0] : gh[1]) + 8;
    canvas c;
    if ((rc = canvas_new(&c, W, H, err))) {
        free(g[0]), free(g[1]);
        return rc;
    }
    header(&c, in, g[0] ? "samples: real vs synthetic" : "synthetic samples", 0);
    int x = HDR_X;
    for (int s = 0; s < 2; s++) {
        if (!g[s]) continue;
        char line[64];
        snprintf(line, sizeof line, "%s, first %zu", s ? "synthetic" : "real",
                 n[s] < PG_REPORT_GRID_MAX ? n[s] : (size_t)PG_REPORT_GRID_MAX);
        text(&c, x, top - 14, line, 1, s ? PG_REPORT_SYN_RGB : PG_REPORT_REAL_RGB);
        for (int yy = 0; yy < gh[s]; yy++)
            memcpy(c.p + ((size_t)(top + yy) * (size_t)W + (size_t)x) * 3,
                   g[s] + (size_t)yy * (size_t)gw[s] * 3, (size_t)gw[s] * 3);
        x += gw[s] + gap;
    }
    if (!g[0] && !g[1]) text(&c, HDR_X, top, "no rows", 1, NOTE);
    free(g[0]), free(g[1]);
    rc = encode(&c, in->level, out, len, err);
    free(c.p);
    return rc;
}

/* ---- PNG encoding ------------------------------------------------------- */

static int encode(const canvas *c, int level, char **out, size_t *len, pg_error *err)
{
    return pg_render_encode_rgb(c->p, (size_t)c->w, (size_t)c->h,
                                level ? level : PG_RENDER_PNG_LEVEL, out, len, err);
}
