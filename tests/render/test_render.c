/* Sample renderers: CSV and NPY round trips, the PNG image grid (geometry,
 * the [lo, hi] -> 0..255 mapping and its caption, decoded back with libpng),
 * the scatter plot (frame, round ticks covering the data, points at the pixel
 * of the axis transform, the declared-range rectangle, the count of points
 * outside the range found as glyphs in the picture), the font, and shapes PNG
 * cannot show. */
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>

#include "render/font.h"
#include "render/plot.h"
#include "render/render.h"
#include "engine/core/alloc.h"
#include "engine/data/npy.h"
#include "support/pg_test.h"

static unsigned char *decode(const char *buf, size_t len, unsigned *w, unsigned *h)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    ck_assert(png_image_begin_read_from_memory(&img, buf, len));
    img.format = PNG_FORMAT_RGB;
    unsigned char *px = malloc(PNG_IMAGE_SIZE(img));
    ck_assert(png_image_finish_read(&img, NULL, px, 0, NULL));
    *w = img.width;
    *h = img.height;
    return px;
}

/* Is `str` (drawn at `scale`) somewhere in the image, ink exactly `col` and
 * everything else in its box some other colour? */
static int has_text(const unsigned char *px, unsigned w, unsigned h, const char *str, int scale,
                    const unsigned char col[3])
{
    int tw = pg_font_width(str, scale), th = PG_FONT_H * scale;
    unsigned char *pat = calloc((size_t)tw * th * 3, 1);
    pg_font_draw(pat, tw, th, 0, 0, str, scale, (const uint8_t[3]){255, 255, 255}, 0);
    int found = 0;
    for (int oy = 0; !found && oy + th <= (int)h; oy++)
        for (int ox = 0; !found && ox + tw <= (int)w; ox++) {
            int ok = 1;
            for (int y = 0; ok && y < th; y++)
                for (int x = 0; ok && x < tw; x++) {
                    const unsigned char *q = px + ((size_t)(oy + y) * w + (size_t)(ox + x)) * 3;
                    int ink = pat[((size_t)y * tw + x) * 3] != 0;
                    int same = q[0] == col[0] && q[1] == col[1] && q[2] == col[2];
                    ok = ink == same;
                }
            found = ok;
        }
    free(pat);
    return found;
}

static const unsigned char INK[3] = {20, 20, 20}, RED[3] = {214, 39, 40}, GRAY[3] = {90, 90, 90};

START_TEST(grid_geometry_and_value_mapping)
{
    /* five 1x4x4 images with values lo..hi: a 3x2 grid with 1-px borders,
     * centred above a caption strip that is wider than the grid */
    float x[5 * 16];
    for (int i = 0; i < 5; i++)
        for (int p = 0; p < 16; p++) x[i * 16 + p] = -1.0f + 2.0f * (float)p / 15.0f;
    x[16 + 0] = -7.0f; /* clamped below */
    x[16 + 1] = 9.0f;  /* clamped above */
    size_t shape[3] = {1, 4, 4};
    char *png;
    size_t len;
    ck_assert_int_eq(pg_render_png(x, 5, 16, 3, shape, -1.0f, 1.0f, &png, &len, NULL), PG_OK);
    unsigned w, h;
    unsigned char *px = decode(png, len, &w, &h);
    unsigned gw = 3 * 5 + 1, gh = 2 * 5 + 1;
    ck_assert_uint_eq(w, (unsigned)pg_font_width("n=5", 1) + 8); /* the caption is wider */
    ck_assert_uint_eq(h, gh + 16);
    unsigned ox = (w - gw) / 2;
    /* image 0 starts at (ox+1,1): pixel p = y*4+x has value p/15 of the range */
    for (int p = 0; p < 16; p++) {
        const unsigned char *q = px + ((size_t)(1 + p / 4) * w + ox + 1 + p % 4) * 3;
        ck_assert_int_eq(q[0], (int)lround(255.0 * p / 15.0));
        ck_assert_int_eq(q[0], q[2]); /* gray */
    }
    const unsigned char *q1 = px + ((size_t)1 * w + ox + 6) * 3; /* image 1, pixel 0 */
    ck_assert_int_eq(q1[0], 0);
    ck_assert_int_eq(q1[3], 255);
    ck_assert_int_eq(px[ox * 3], 0);         /* border */
    ck_assert_int_eq(px[(ox - 1) * 3], 255); /* white beside the grid */
    ck_assert(has_text(px, w, h, "n=5", 1, INK));
    free(px);
    free(png);
}
END_TEST

START_TEST(grid_caption_names_the_job)
{
    float x[64 * 4] = {0};
    size_t shape[3] = {1, 2, 2};
    pg_render_plot opt;
    pg_render_plot_defaults(&opt);
    opt.method = "dp_sinkhorn";
    opt.epsilon = 3.0;
    opt.privacy = "central";
    opt.step = 400;
    char *png;
    size_t len;
    ck_assert_int_eq(pg_render_png_plot(x, 64, 4, 3, shape, 0.0f, 1.0f, &opt, &png, &len, NULL),
                     PG_OK);
    unsigned w, h;
    unsigned char *px = decode(png, len, &w, &h);
    ck_assert_uint_eq(h, 8 * 3 + 1 + 16);
    ck_assert(has_text(px, w, h, "dp_sinkhorn  \u03b5=3  n=64  step 400", 1, INK));
    ck_assert(!has_text(px, w, h, "dp_sinkhorn  \u03b5=3  n=65  step 400", 1, INK));
    free(px);
    free(png);
}
END_TEST

START_TEST(rgb_grid_uses_channels)
{
    float x[3 * 2 * 2];
    for (int c = 0; c < 3; c++)
        for (int p = 0; p < 4; p++) x[c * 4 + p] = c == 1 ? 1.0f : 0.0f;
    size_t shape[3] = {3, 2, 2};
    char *png;
    size_t len;
    ck_assert_int_eq(pg_render_png(x, 1, 12, 3, shape, 0.0f, 1.0f, &png, &len, NULL), PG_OK);
    unsigned w, h;
    unsigned char *px = decode(png, len, &w, &h);
    unsigned ox = (w - 4) / 2; /* a 2x2 image under a wider caption */
    const unsigned char *q = px + ((size_t)1 * w + ox + 1) * 3;
    ck_assert_int_eq(q[0], 0);
    ck_assert_int_eq(q[1], 255);
    ck_assert_int_eq(q[2], 0);
    free(px);
    free(png);
}
END_TEST

/* The axis transform, written out independently of render/plot.c. */
static void expect_px(const pg_plot_layout *l, double x, double y, int *px, int *py)
{
    *px = PG_PLOT_LEFT + (int)lround((x - l->x.lo) / (l->x.hi - l->x.lo) * PG_PLOT_SIZE);
    *py = PG_PLOT_TOP + PG_PLOT_SIZE -
          (int)lround((y - l->y.lo) / (l->y.hi - l->y.lo) * PG_PLOT_SIZE);
}

static const unsigned char *at(const unsigned char *px, unsigned w, int x, int y)
{
    return px + ((size_t)y * w + (size_t)x) * 3;
}

static int bluish(const unsigned char *q)
{
    return q[2] > q[0] + 60;
}

static int reddish(const unsigned char *q)
{
    return q[0] > q[2] + 60 && q[0] > q[1] + 60;
}

static int green(const unsigned char *q)
{
    return q[0] == 0 && q[1] == 150 && q[2] == 60;
}

static int round_number(double step)
{
    double p = pow(10.0, floor(log10(step) + 1e-9)), m = step / p;
    return fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9;
}

static void check_axis(const pg_plot_axis *a, double dmin, double dmax)
{
    ck_assert(round_number(a->step));
    ck_assert_int_ge(a->nticks, 3);
    ck_assert_int_le(a->nticks, 12);
    for (int i = 0; i < a->nticks; i++) {
        double m = a->tick[i] / a->step;
        ck_assert(fabs(m - round(m)) < 1e-6); /* a multiple of the step */
        ck_assert(a->tick[i] >= a->lo - 1e-9 && a->tick[i] <= a->hi + 1e-9);
        if (i) ck_assert(fabs(a->tick[i] - a->tick[i - 1] - a->step) < 1e-9 * a->step);
    }
    ck_assert(a->tick[0] <= dmin && a->tick[a->nticks - 1] >= dmax); /* ticks cover the data */
    ck_assert(a->lo < dmin && a->hi > dmax);                         /* with a margin */
}

START_TEST(scatter_frames_the_data)
{
    /* 200 points in [0.3, 1.7] x [-0.2, 0.45], declared range [-4, 4]: the frame
     * is the data's, not the range's, with one scale for both axes */
    enum { N = 200 };
    float x[2 * N];
    for (int i = 0; i < N; i++) {
        x[2 * i] = 0.3f + 1.4f * (float)i / (N - 1);
        x[2 * i + 1] = -0.2f + 0.65f * (float)((i * 37) % N) / (N - 1);
    }
    pg_plot_layout l;
    pg_plot_frame(x, N, -4.0f, 4.0f, PG_PLOT_FRAME_DATA, &l);
    ck_assert_uint_eq(l.finite, N);
    check_axis(&l.x, 0.3, 1.7);
    check_axis(&l.y, -0.2, 0.45);
    ck_assert(fabs((l.x.hi - l.x.lo) - (l.y.hi - l.y.lo)) < 1e-9); /* equal aspect */
    ck_assert(l.x.hi - l.x.lo < 2.5); /* framed on the data, not on [-4, 4] */
    char *png;
    size_t len;
    size_t shape[1] = {2};
    ck_assert_int_eq(pg_render_png(x, N, 2, 1, shape, -4.0f, 4.0f, &png, &len, NULL), PG_OK);
    unsigned w, h;
    unsigned char *px = decode(png, len, &w, &h);
    ck_assert_uint_eq(w, PG_PLOT_W);
    ck_assert_uint_eq(h, PG_PLOT_H);
    for (int i = 0; i < N; i++) { /* every point at its pixel */
        int cx, cy;
        expect_px(&l, x[2 * i], x[2 * i + 1], &cx, &cy);
        ck_assert_msg(bluish(at(px, w, cx, cy)), "point %d not at (%d,%d)", i, cx, cy);
    }
    /* nothing blue far from every point */
    int stray = 0;
    for (int y = PG_PLOT_TOP; y <= PG_PLOT_TOP + PG_PLOT_SIZE; y++)
        for (int xx = PG_PLOT_LEFT; xx <= PG_PLOT_LEFT + PG_PLOT_SIZE; xx++) {
            if (!bluish(at(px, w, xx, y))) continue;
            int near = 0;
            for (int i = 0; i < N && !near; i++) {
                int cx, cy;
                expect_px(&l, x[2 * i], x[2 * i + 1], &cx, &cy);
                near = abs(cx - xx) <= 1 && abs(cy - y) <= 1;
            }
            stray += !near;
        }
    ck_assert_int_eq(stray, 0);
    /* a tick mark under the box at every x tick, and its label below it */
    for (int i = 0; i < l.x.nticks; i++) {
        int tx, ty;
        expect_px(&l, l.x.tick[i], l.y.lo, &tx, &ty);
        ck_assert_int_eq(ty, PG_PLOT_TOP + PG_PLOT_SIZE);
        ck_assert_int_eq(at(px, w, tx, ty + 3)[0], 80);
        char lab[32];
        pg_plot_tick_label(&l.x, l.x.tick[i], lab, sizeof lab);
        ck_assert(has_text(px, w, h, lab, 1, INK));
    }
    ck_assert(has_text(px, w, h, "all 200 finite points inside", 1, GRAY));
    ck_assert(has_text(px, w, h, "n=200", 2, INK)); /* the title */
    free(px);
    free(png);
}
END_TEST

START_TEST(scatter_draws_the_range_and_counts_outside)
{
    /* 1000 points: 963 in [-1, 1]^2, 37 outside the declared [-2, 2] (up to
     * +-5), 2 of them not finite */
    enum { N = 1000 };
    float x[2 * N];
    for (int i = 0; i < N; i++) {
        x[2 * i] = -1.0f + 2.0f * (float)((i * 7) % 101) / 100.0f;
        x[2 * i + 1] = -1.0f + 2.0f * (float)((i * 13) % 97) / 96.0f;
    }
    for (int i = 0; i < 37; i++) {
        x[2 * i] = i % 2 ? 5.0f - 0.05f * i : -5.0f + 0.05f * i;
        x[2 * i + 1] = i % 3 ? 2.5f : -3.0f;
    }
    x[2 * 40] = NAN;
    x[2 * 41 + 1] = INFINITY;
    pg_render_plot opt;
    pg_render_plot_defaults(&opt);
    opt.method = "swd_flow";
    opt.epsilon = 0.5;
    opt.privacy = "central";
    char *png;
    size_t len;
    size_t shape[1] = {2};
    ck_assert_int_eq(pg_render_png_plot(x, N, 2, 1, shape, -2.0f, 2.0f, &opt, &png, &len, NULL),
                     PG_OK);
    unsigned w, h;
    unsigned char *px = decode(png, len, &w, &h);
    ck_assert(has_text(px, w, h, "37 of 1000 points outside", 1, RED));
    ck_assert(!has_text(px, w, h, "36 of 1000 points outside", 1, RED));
    ck_assert(has_text(px, w, h, "2 not finite (not drawn)", 1, RED));
    ck_assert(has_text(px, w, h, "swd_flow  \u03b5=0.5  n=1000", 2, INK));
    pg_plot_layout l;
    pg_plot_frame(x, N, -2.0f, 2.0f, PG_PLOT_FRAME_DATA, &l);
    ck_assert_uint_eq(l.finite, N - 2);
    /* the outside points are drawn, in red, where they are */
    for (int i = 0; i < 37; i++) {
        int cx, cy;
        expect_px(&l, x[2 * i], x[2 * i + 1], &cx, &cy);
        ck_assert(reddish(at(px, w, cx, cy)));
    }
    /* the dashed rectangle of [-2, 2]^2: most pixels of each edge green, the
     * lines 3 px beside it not */
    int x0, y0, x1, y1;
    expect_px(&l, -2.0, -2.0, &x0, &y0);
    expect_px(&l, 2.0, 2.0, &x1, &y1);
    int on = 0, off = 0, total = 0;
    for (int t = x0 + 2; t < x1 - 2; t++) {
        on += green(at(px, w, t, y0)) + green(at(px, w, t, y1));
        off += green(at(px, w, t, y0 + 3)) + green(at(px, w, t, y1 - 3));
        total += 2;
    }
    for (int t = y1 + 2; t < y0 - 2; t++) {
        on += green(at(px, w, x0, t)) + green(at(px, w, x1, t));
        off += green(at(px, w, x0 - 3, t)) + green(at(px, w, x1 + 3, t));
        total += 2;
    }
    ck_assert_int_gt(on, total / 3);
    ck_assert_int_eq(off, 0);
    free(px);
    free(png);

    /* frame=range: the box is the range plus 3 %; far points are counted as
     * beyond the frame, not silently dropped */
    opt.frame = PG_PLOT_FRAME_RANGE;
    ck_assert_int_eq(pg_render_png_plot(x, N, 2, 1, shape, -2.0f, 2.0f, &opt, &png, &len, NULL),
                     PG_OK);
    px = decode(png, len, &w, &h);
    pg_plot_frame(x, N, -2.0f, 2.0f, PG_PLOT_FRAME_RANGE, &l);
    ck_assert(fabs(l.x.lo - (-2.12)) < 1e-9 && fabs(l.y.hi - 2.12) < 1e-9);
    check_axis(&l.x, -2.0, 2.0);
    ck_assert(has_text(px, w, h, "37 of 1000 points outside,", 1, RED));
    ck_assert(
        has_text(px, w, h, "37 beyond the frame (not drawn), 2 not finite (not drawn)", 1, RED));
    expect_px(&l, -2.0, -2.0, &x0, &y0);
    ck_assert(green(at(px, w, x0, y0 - 1)) || green(at(px, w, x0, y0 - 2)));
    for (int i = 100; i < N; i += 97) { /* inside points at their pixel */
        int cx, cy;
        expect_px(&l, x[2 * i], x[2 * i + 1], &cx, &cy);
        ck_assert(bluish(at(px, w, cx, cy)));
    }
    free(px);
    free(png);
}
END_TEST

START_TEST(scatter_degenerate_inputs)
{
    /* one repeated point, all points non-finite, and n = 1: still a framed plot */
    float same[6] = {3.0f, 3.0f, 3.0f, 3.0f, 3.0f, 3.0f};
    pg_plot_layout l;
    pg_plot_frame(same, 3, 0.0f, 1.0f, PG_PLOT_FRAME_DATA, &l);
    ck_assert(l.x.lo < 3.0 && l.x.hi > 3.0 && l.y.lo < 3.0 && l.y.hi > 3.0);
    check_axis(&l.x, 3.0, 3.0);
    float bad[4] = {NAN, 1.0f, INFINITY, -INFINITY};
    pg_plot_frame(bad, 2, -1.0f, 1.0f, PG_PLOT_FRAME_DATA, &l);
    ck_assert_uint_eq(l.finite, 0);
    check_axis(&l.x, -1.0, 1.0); /* falls back to the range */
    size_t shape[1] = {2};
    char *png;
    size_t len;
    ck_assert_int_eq(pg_render_png(bad, 2, 2, 1, shape, -1.0f, 1.0f, &png, &len, NULL), PG_OK);
    unsigned w, h;
    unsigned char *px = decode(png, len, &w, &h);
    ck_assert(has_text(px, w, h, "2 not finite (not drawn)", 1, RED));
    free(px);
    free(png);
    pg_render_plot opt;
    pg_render_plot_defaults(&opt);
    opt.level = 10;
    pg_error err = {0};
    ck_assert_int_eq(pg_render_png_plot(same, 3, 2, 1, shape, 0.0f, 1.0f, &opt, &png, &len, &err),
                     PG_EINVAL);
}
END_TEST

START_TEST(tick_labels_and_steps)
{
    pg_plot_layout l;
    float big[4] = {-1234.0f, 0.0f, 8000.0f, 10.0f};
    pg_plot_frame(big, 2, 0.0f, 1.0f, PG_PLOT_FRAME_DATA, &l);
    check_axis(&l.x, -1234.0, 8000.0);
    ck_assert(l.x.step == 2000.0);
    char b[32];
    pg_plot_tick_label(&l.x, -2000.0, b, sizeof b);
    ck_assert_str_eq(b, "-2000");
    float small[4] = {0.011f, 0.012f, 0.0135f, 0.0121f};
    pg_plot_frame(small, 2, 0.0f, 1.0f, PG_PLOT_FRAME_DATA, &l);
    check_axis(&l.x, 0.011, 0.0135);
    ck_assert(round_number(l.x.step) && l.x.step <= 0.001);
    pg_plot_tick_label(&l.x, l.x.tick[0], b, sizeof b);
    double back = strtod(b, NULL);
    ck_assert(fabs(back - l.x.tick[0]) < 1e-12); /* the label is the tick exactly */
    pg_plot_axis a = {.decimals = 1};
    pg_plot_tick_label(&a, -0.0, b, sizeof b);
    ck_assert_str_eq(b, "0.0");
}
END_TEST

START_TEST(font_glyphs_are_distinct)
{
    /* every printable character but space has ink; no two share a bitmap
     * (except where a glyph is deliberately the fallback '?') */
    unsigned cps[97];
    int n = 0;
    for (unsigned c = 33; c < 127; c++) cps[n++] = c;
    cps[n++] = 0x3b5;
    cps[n++] = 0x3b4;
    for (int i = 0; i < n; i++) {
        int ink = 0;
        for (int y = 0; y < PG_FONT_H; y++)
            for (int x = 0; x < PG_FONT_W; x++) ink += pg_font_ink(cps[i], x, y);
        ck_assert_msg(ink > 0, "glyph %u is empty", cps[i]);
        for (int j = 0; j < i; j++) {
            int same = 1;
            for (int y = 0; same && y < PG_FONT_H; y++)
                for (int x = 0; same && x < PG_FONT_W; x++)
                    same = pg_font_ink(cps[i], x, y) == pg_font_ink(cps[j], x, y);
            ck_assert_msg(!same, "glyphs %u and %u are identical", cps[i], cps[j]);
        }
    }
    for (int x = 0; x < PG_FONT_W; x++) ck_assert(!pg_font_ink(' ', x, 3));
    /* unknown code points fall back to '?' and UTF-8 decodes */
    const char *s = "\u03b5\u2603a";
    ck_assert_uint_eq(pg_font_next(&s), 0x3b5);
    ck_assert_uint_eq(pg_font_next(&s), '?');
    ck_assert_uint_eq(pg_font_next(&s), 'a');
    ck_assert_uint_eq(pg_font_next(&s), 0);
    ck_assert_int_eq(pg_font_width("ab", 2), 2 * (2 * PG_FONT_ADV - 1));
}
END_TEST

START_TEST(png_refuses_other_shapes)
{
    float x[3] = {0};
    size_t shape[1] = {3};
    char *png = NULL;
    size_t len;
    pg_error err = {0};
    ck_assert_int_eq(pg_render_png(x, 1, 3, 1, shape, 0.0f, 1.0f, &png, &len, &err), PG_ENOTSUP);
    ck_assert_ptr_null(png);
    size_t s2[3] = {2, 2, 2}; /* two channels: neither gray nor RGB */
    float y[8] = {0};
    ck_assert_int_eq(pg_render_png(y, 1, 8, 3, s2, 0.0f, 1.0f, &png, &len, &err), PG_ENOTSUP);
}
END_TEST

START_TEST(csv_and_npy_round_trip)
{
    float x[6] = {0.1f, -2.5e-8f, 3.0f, 1e30f, -0.0f, 7.25f};
    char *csv;
    size_t len;
    ck_assert_int_eq(pg_render_csv(x, 2, 3, &csv, &len, NULL), PG_OK);
    ck_assert_uint_eq(strlen(csv), len);
    char *line = strtok(csv, "\n");
    ck_assert_str_eq(line, "x0,x1,x2");
    for (int i = 0; i < 2; i++) {
        float a, b, c;
        line = strtok(NULL, "\n");
        ck_assert_int_eq(sscanf(line, "%f,%f,%f", &a, &b, &c), 3);
        ck_assert(a == x[3 * i] && b == x[3 * i + 1] && c == x[3 * i + 2]); /* exact */
    }
    free(csv);
    size_t shape[3] = {1, 1, 3};
    char *npy;
    ck_assert_int_eq(pg_render_npy(x, 2, shape, 3, &npy, &len, NULL), PG_OK);
    pg_npy_header h;
    float *back;
    ck_assert_int_eq(pg_npy_read(npy, len, &h, &back, NULL), PG_OK);
    ck_assert_int_eq((int)h.ndim, 4);
    ck_assert_int_eq((int)h.shape[0], 2);
    ck_assert_int_eq((int)h.shape[3], 3);
    ck_assert(memcmp(back, x, sizeof x) == 0);
    pg_free(back);
    free(npy);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("render");
    TCase *tc = tcase_create("render");
    tcase_add_test(tc, grid_geometry_and_value_mapping);
    tcase_add_test(tc, rgb_grid_uses_channels);
    tcase_add_test(tc, grid_caption_names_the_job);
    tcase_add_test(tc, scatter_frames_the_data);
    tcase_add_test(tc, scatter_draws_the_range_and_counts_outside);
    tcase_add_test(tc, scatter_degenerate_inputs);
    tcase_add_test(tc, tick_labels_and_steps);
    tcase_add_test(tc, font_glyphs_are_distinct);
    tcase_add_test(tc, png_refuses_other_shapes);
    tcase_add_test(tc, csv_and_npy_round_trip);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
