#include "render/render.h"

#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/font.h"
#include "render/plot.h"
#include "engine/data/npy.h"

int pg_render_csv(const float *x, size_t n, size_t d, char **out, size_t *len, pg_error *err)
{
    /* %.9g round-trips a float32; 16 bytes bound one value plus separator. */
    size_t cap = 16 * d + 16 + n * d * 18 + 1;
    char *b = malloc(cap);
    if (!b) return pg_error_set(err, PG_ENOMEM, "out of memory rendering CSV");
    size_t k = 0;
    for (size_t j = 0; j < d; j++) k += (size_t)snprintf(b + k, cap - k, "%sx%zu", j ? "," : "", j);
    b[k++] = '\n';
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < d; j++)
            k += (size_t)snprintf(b + k, cap - k, "%s%.9g", j ? "," : "", (double)x[i * d + j]);
        b[k++] = '\n';
    }
    b[k] = '\0';
    *out = b;
    *len = k;
    return PG_OK;
}

int pg_render_npy(const float *x, size_t n, const size_t *shape, int ndim, char **out, size_t *len,
                  pg_error *err)
{
    size_t full[4] = {n, 0, 0, 0};
    for (int i = 0; i < ndim && i < 3; i++) full[i + 1] = shape[i];
    size_t sz = pg_npy_size(full, ndim + 1);
    if (!sz) return pg_error_set(err, PG_EINVAL, "the sample shape cannot be written as NPY");
    char *b = malloc(sz);
    if (!b) return pg_error_set(err, PG_ENOMEM, "out of memory rendering NPY");
    int rc = pg_npy_write(x, full, ndim + 1, b, sz, err);
    if (rc) {
        free(b);
        return rc;
    }
    *out = b;
    *len = sz;
    return PG_OK;
}

typedef struct membuf {
    char *p;
    size_t len, cap;
    int oom;
} membuf;

static void png_put(png_structp png, png_bytep data, png_size_t n)
{
    membuf *m = png_get_io_ptr(png);
    if (m->oom) return;
    if (m->len + n > m->cap) {
        size_t cap = m->cap ? m->cap : 4096;
        while (cap < m->len + n) cap *= 2;
        char *np = realloc(m->p, cap);
        if (!np) {
            m->oom = 1;
            return;
        }
        m->p = np;
        m->cap = cap;
    }
    memcpy(m->p + m->len, data, n);
    m->len += n;
}

static void png_flush_noop(png_structp png)
{
    (void)png;
}

/* Encodes a w x h RGB8 image at zlib level `level`; as 8-bit gray when every
 * pixel is gray (grids of 1-channel images), a third of the data to deflate. */
int pg_render_encode_rgb(const uint8_t *rgb, size_t w, size_t h, int level, char **out, size_t *len,
                         pg_error *err)
{
    membuf m = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    png_bytep *rows = malloc(h * sizeof *rows);
    int gray = 1;
    for (size_t i = 0; gray && i < w * h; i++)
        gray = rgb[3 * i] == rgb[3 * i + 1] && rgb[3 * i] == rgb[3 * i + 2];
    uint8_t *g = gray ? malloc(w * h) : NULL;
    if (!png || !info || !rows || (gray && !g)) {
        png_destroy_write_struct(&png, &info);
        free(rows);
        free(g);
        return pg_error_set(err, PG_ENOMEM, "out of memory rendering PNG");
    }
    for (size_t i = 0; g && i < w * h; i++) g[i] = rgb[3 * i];
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(rows);
        free(g);
        free(m.p);
        return pg_error_set(err, PG_ENOMEM, "PNG encoding failed");
    }
    png_set_write_fn(png, &m, png_put, png_flush_noop);
    png_set_compression_level(png, level);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8,
                 gray ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    for (size_t y = 0; y < h; y++) rows[y] = gray ? g + y * w : (png_bytep)(rgb + y * w * 3);
    png_set_rows(png, info, rows);
    png_write_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
    png_destroy_write_struct(&png, &info);
    free(rows);
    free(g);
    if (m.oom) {
        free(m.p);
        return pg_error_set(err, PG_ENOMEM, "out of memory rendering PNG");
    }
    *out = m.p;
    *len = m.len;
    return PG_OK;
}

static uint8_t to_byte(float v, float lo, float hi)
{
    double t = ((double)v - lo) / ((double)hi - lo);
    if (!(t > 0.0)) return 0; /* also NaN */
    if (t >= 1.0) return 255;
    return (uint8_t)lround(t * 255.0);
}

void pg_render_plot_defaults(pg_render_plot *p)
{
    memset(p, 0, sizeof *p);
    p->frame = PG_PLOT_FRAME_DATA;
    p->epsilon = NAN;
    p->step = -1;
}

/* "dp_sinkhorn  ε=1  n=1000  step 300": what the picture shows. */
static void title(const pg_render_plot *p, size_t n, char *buf, size_t cap)
{
    size_t k = 0;
#define ADD(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(buf + k, cap - k, __VA_ARGS__);                                          \
        if (w_ > 0) k += (size_t)w_ < cap - k ? (size_t)w_ : cap - k - 1;                          \
    } while (0)
    buf[0] = '\0';
    if (p->method) ADD("%s  ", p->method);
    if (p->privacy && !strcmp(p->privacy, "public"))
        ADD("public data  ");
    else if (isfinite(p->epsilon))
        ADD("\u03b5=%.3g%s  ", p->epsilon,
            p->privacy && !strcmp(p->privacy, "local") ? " (local)" : "");
    ADD("n=%zu", n);
    if (p->step >= 0) ADD("  step %ld", p->step);
#undef ADD
}

static const uint8_t INK[3] = {20, 20, 20}, AXIS[3] = {80, 80, 80}, GRIDLINE[3] = {232, 232, 232},
                     RANGE[3] = {0, 150, 60}, POINT[3] = {31, 119, 180}, OUTSIDE[3] = {214, 39, 40},
                     NOTE[3] = {90, 90, 90};

typedef struct canvas {
    uint8_t *p;
    int w, h;
} canvas;

static void put(canvas *c, int x, int y, const uint8_t col[3])
{
    if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
    memcpy(c->p + ((size_t)y * (size_t)c->w + (size_t)x) * 3, col, 3);
}

/* Alpha-blends, so dense regions read darker than sparse ones. */
static void blend(canvas *c, int x, int y, const uint8_t col[3])
{
    if (x < PG_PLOT_LEFT || y < PG_PLOT_TOP || x > PG_PLOT_LEFT + PG_PLOT_SIZE ||
        y > PG_PLOT_TOP + PG_PLOT_SIZE)
        return;
    uint8_t *q = c->p + ((size_t)y * (size_t)c->w + (size_t)x) * 3;
    for (int k = 0; k < 3; k++) q[k] = (uint8_t)((q[k] * 2 + col[k] * 3 + 2) / 5);
}

static void text(canvas *c, int x, int y, const char *s, int scale, const uint8_t col[3])
{
    pg_font_draw(c->p, c->w, c->h, x, y, s, scale, col, 0);
}

/* Axis-aligned segment from (x0, y0) to (x1, y1), dashed when `dash`,
 * clipped to the plot box. */
static void segment(canvas *c, int x0, int y0, int x1, int y1, const uint8_t col[3], int dash)
{
    int len = abs(x1 - x0) + abs(y1 - y0);
    for (int t = 0; t <= len; t++) {
        if (dash && t % 10 >= 6) continue;
        int x = x0 + (x1 > x0 ? t : x1 < x0 ? -t : 0), y = y0 + (y1 > y0 ? t : y1 < y0 ? -t : 0);
        if (x < PG_PLOT_LEFT || y < PG_PLOT_TOP || x > PG_PLOT_LEFT + PG_PLOT_SIZE ||
            y > PG_PLOT_TOP + PG_PLOT_SIZE)
            continue;
        put(c, x, y, col);
    }
}

static int clampi(double v)
{
    return v < -1e6 ? -1000000 : v > 1e6 ? 1000000 : (int)lround(v);
}

static void axes(canvas *c, const pg_plot_layout *l)
{
    const int L = PG_PLOT_LEFT, T = PG_PLOT_TOP, S = PG_PLOT_SIZE;
    char lab[32];
    for (int i = 0; i < l->x.nticks; i++) {
        int px, py;
        pg_plot_px(l, l->x.tick[i], l->y.lo, &px, &py);
        segment(c, px, T, px, T + S, GRIDLINE, 0);
        for (int k = 1; k <= 5; k++) put(c, px, T + S + k, AXIS);
        pg_plot_tick_label(&l->x, l->x.tick[i], lab, sizeof lab);
        text(c, px - pg_font_width(lab, 1) / 2, T + S + 9, lab, 1, INK);
    }
    for (int i = 0; i < l->y.nticks; i++) {
        int px, py;
        pg_plot_px(l, l->x.lo, l->y.tick[i], &px, &py);
        segment(c, L, py, L + S, py, GRIDLINE, 0);
        for (int k = 1; k <= 5; k++) put(c, L - k, py, AXIS);
        pg_plot_tick_label(&l->y, l->y.tick[i], lab, sizeof lab);
        text(c, L - 9 - pg_font_width(lab, 1), py - PG_FONT_H / 2, lab, 1, INK);
    }
    text(c, L + S / 2 - pg_font_width("x0", 1) / 2, T + S + 24, "x0", 1, INK);
    pg_font_draw(c->p, c->w, c->h, 10, T + S / 2 + pg_font_width("x1", 1) / 2, "x1", 1, INK, 1);
}

static void frame_box(canvas *c)
{
    const int L = PG_PLOT_LEFT, T = PG_PLOT_TOP, S = PG_PLOT_SIZE;
    for (int t = 0; t <= S; t++) {
        put(c, L + t, T, AXIS), put(c, L + t, T + S, AXIS);
        put(c, L, T + t, AXIS), put(c, L + S, T + t, AXIS);
    }
}

static int scatter(const float *x, size_t n, float lo, float hi, const pg_render_plot *opt,
                   char **out, size_t *len, pg_error *err)
{
    canvas c = {malloc((size_t)PG_PLOT_W * PG_PLOT_H * 3), PG_PLOT_W, PG_PLOT_H};
    if (!c.p) return pg_error_set(err, PG_ENOMEM, "out of memory rendering PNG");
    memset(c.p, 255, (size_t)PG_PLOT_W * PG_PLOT_H * 3);
    pg_plot_layout l;
    pg_plot_frame(x, n, lo, hi, opt->frame, &l);
    axes(&c, &l);
    int rx0, ry0, rx1, ry1; /* the declared range, drawn even when partly off the box */
    rx0 = clampi(PG_PLOT_LEFT + ((double)lo - l.x.lo) / (l.x.hi - l.x.lo) * PG_PLOT_SIZE);
    rx1 = clampi(PG_PLOT_LEFT + ((double)hi - l.x.lo) / (l.x.hi - l.x.lo) * PG_PLOT_SIZE);
    ry0 = clampi(PG_PLOT_TOP + PG_PLOT_SIZE -
                 ((double)lo - l.y.lo) / (l.y.hi - l.y.lo) * PG_PLOT_SIZE);
    ry1 = clampi(PG_PLOT_TOP + PG_PLOT_SIZE -
                 ((double)hi - l.y.lo) / (l.y.hi - l.y.lo) * PG_PLOT_SIZE);
    size_t outside = 0, beyond = 0;
    for (size_t i = 0; i < n; i++) {
        double u = x[2 * i], v = x[2 * i + 1];
        if (!isfinite(u) || !isfinite(v)) continue;
        int off = u < lo || u > hi || v < lo || v > hi, px, py;
        outside += (size_t)off;
        if (!pg_plot_px(&l, u, v, &px, &py)) {
            beyond++;
            continue;
        }
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) blend(&c, px + dx, py + dy, off ? OUTSIDE : POINT);
    }
    segment(&c, rx0, ry0, rx1, ry0, RANGE, 1);
    segment(&c, rx0, ry1, rx1, ry1, RANGE, 1);
    segment(&c, rx0, ry0, rx0, ry1, RANGE, 1);
    segment(&c, rx1, ry0, rx1, ry1, RANGE, 1);
    frame_box(&c);
    char line[256];
    title(opt, n, line, sizeof line);
    int scale = pg_font_width(line, 2) <= PG_PLOT_W - 20 ? 2 : 1, tw = pg_font_width(line, scale);
    /* left-aligned with the box when it fits there, else centred on the image */
    text(&c, tw <= PG_PLOT_W - PG_PLOT_LEFT - 10 ? PG_PLOT_LEFT : (PG_PLOT_W - tw) / 2, 10, line,
         scale, INK);
    snprintf(line, sizeof line, "declared range [%g, %g] (dashed)", (double)lo, (double)hi);
    text(&c, PG_PLOT_LEFT, 34, line, 1, RANGE);
    int nx = PG_PLOT_LEFT + pg_font_width(line, 1) + 12;
    size_t nonfinite = n - l.finite;
    if (outside)
        snprintf(line, sizeof line, "%zu of %zu points outside%s", outside, n, beyond ? "," : "");
    else
        snprintf(line, sizeof line, "all %zu finite points inside", l.finite);
    text(&c, nx, 34, line, 1, outside ? OUTSIDE : NOTE);
    line[0] = '\0';
    if (beyond) snprintf(line, sizeof line, "%zu beyond the frame (not drawn)", beyond);
    if (nonfinite)
        snprintf(line + strlen(line), sizeof line - strlen(line), "%s%zu not finite (not drawn)",
                 beyond ? ", " : "", nonfinite);
    if (line[0]) text(&c, PG_PLOT_LEFT, 46, line, 1, OUTSIDE);
    int rc = pg_render_encode_rgb(c.p, (size_t)c.w, (size_t)c.h,
                                  opt->level ? opt->level : PG_RENDER_PNG_LEVEL, out, len, err);
    free(c.p);
    return rc;
}

#define CAPTION_H 16

static int grid(const float *x, size_t n, size_t c, size_t h, size_t w, float lo, float hi,
                const pg_render_plot *opt, char **out, size_t *len, pg_error *err)
{
    size_t cols = 1;
    while (cols * cols < n) cols++;
    size_t rows = (n + cols - 1) / cols;
    size_t gw = cols * (w + 1) + 1, gh = rows * (h + 1) + 1;
    char cap[256];
    title(opt, n, cap, sizeof cap);
    size_t tw = (size_t)pg_font_width(cap, 1) + 8;
    size_t W = gw > tw ? gw : tw, H = gh + CAPTION_H, ox0 = (W - gw) / 2;
    if (W > 8192 || H > 8192) return pg_error_set(err, PG_EINVAL, "the image grid is too large");
    uint8_t *img = malloc(W * H * 3);
    if (!img) return pg_error_set(err, PG_ENOMEM, "out of memory rendering PNG");
    memset(img, 255, W * H * 3);
    for (size_t y = 0; y < gh; y++) memset(img + (y * W + ox0) * 3, 0, gw * 3); /* borders */
    size_t d = c * h * w;
    for (size_t i = 0; i < n; i++) {
        size_t ox = ox0 + (i % cols) * (w + 1) + 1, oy = (i / cols) * (h + 1) + 1;
        for (size_t y = 0; y < h; y++)
            for (size_t xx = 0; xx < w; xx++) {
                uint8_t *p = img + ((oy + y) * W + ox + xx) * 3;
                for (size_t k = 0; k < 3; k++) {
                    size_t ch = c == 3 ? k : 0;
                    p[k] = to_byte(x[i * d + ch * h * w + y * w + xx], lo, hi);
                }
            }
    }
    pg_font_draw(img, (int)W, (int)H, 4, (int)gh + (CAPTION_H - PG_FONT_H) / 2, cap, 1, INK, 0);
    int rc = pg_render_encode_rgb(img, W, H, opt->level ? opt->level : PG_RENDER_PNG_LEVEL, out,
                                  len, err);
    free(img);
    return rc;
}

int pg_render_png_plot(const float *x, size_t n, size_t d, int ndim, const size_t *shape, float lo,
                       float hi, const pg_render_plot *opt, char **out, size_t *len, pg_error *err)
{
    pg_render_plot dflt;
    if (!opt) {
        pg_render_plot_defaults(&dflt);
        opt = &dflt;
    }
    if (opt->level < 0 || opt->level > 9)
        return pg_error_set(err, PG_EINVAL, "the PNG compression level must be 1..9");
    if (ndim == 3 && (shape[0] == 1 || shape[0] == 3))
        return grid(x, n, shape[0], shape[1], shape[2], lo, hi, opt, out, len, err);
    if (d == 2) return scatter(x, n, lo, hi, opt, out, len, err);
    return pg_error_set(err, PG_ENOTSUP,
                        "PNG needs image-shaped rows ([1,h,w] or [3,h,w]) or 2-D points");
}

int pg_render_png(const float *x, size_t n, size_t d, int ndim, const size_t *shape, float lo,
                  float hi, char **out, size_t *len, pg_error *err)
{
    return pg_render_png_plot(x, n, d, ndim, shape, lo, hi, NULL, out, len, err);
}
