/* Report figures (render/report_png.h), decoded back with libpng: histogram
 * bars against shares counted here from the rows, heatmap cells against the
 * documented colour scale recomputed here, scatter points at the axis
 * transform, the sample grid, the "not DP" mark present exactly on figures
 * of private reference data, and hostile inputs.
 *
 * With PG_REPORT_PNG_DIR set, the realistic figures are also written there
 * so that a person can look at them. */
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>

#include "render/font.h"
#include "render/plot.h"
#include "render/report_png.h"
#include "engine/eval/report.h"
#include "support/pg_test.h"

typedef struct img {
    unsigned char *px;
    unsigned w, h;
} img;

static img decode(char *buf, size_t len)
{
    png_image im;
    memset(&im, 0, sizeof im);
    im.version = PNG_IMAGE_VERSION;
    ck_assert(png_image_begin_read_from_memory(&im, buf, len));
    im.format = PNG_FORMAT_RGB;
    img r = {malloc(PNG_IMAGE_SIZE(im)), 0, 0};
    ck_assert(png_image_finish_read(&im, NULL, r.px, 0, NULL));
    r.w = im.width, r.h = im.height;
    free(buf);
    return r;
}

static const unsigned char *at(const img *m, unsigned x, unsigned y)
{
    ck_assert(x < m->w && y < m->h);
    return m->px + ((size_t)y * m->w + x) * 3;
}

static int same(const unsigned char *p, const uint8_t c[3])
{
    return p[0] == c[0] && p[1] == c[1] && p[2] == c[2];
}

/* Is `str` drawn at `scale` somewhere, ink exactly `col` and everything else
 * in its box another colour? Ink pixels are tried first: most positions fail
 * on the first one. */
static int has_text(const img *m, const char *str, int scale, const uint8_t col[3])
{
    int tw = pg_font_width(str, scale), th = PG_FONT_H * scale, ni = 0;
    unsigned char *pat = calloc((size_t)tw * th * 3, 1);
    pg_font_draw(pat, tw, th, 0, 0, str, scale, (const uint8_t[3]){255, 255, 255}, 0);
    int *ink = malloc((size_t)tw * th * sizeof *ink);
    for (int i = 0; i < tw * th; i++)
        if (pat[i * 3]) ink[ni++] = i;
    int found = 0;
    for (int oy = 0; !found && oy + th <= (int)m->h; oy++)
        for (int ox = 0; !found && ox + tw <= (int)m->w; ox++) {
            int ok = 1;
            for (int k = 0; ok && k < ni; k++) {
                int x = ox + ink[k] % tw, y = oy + ink[k] / tw;
                ok = same(m->px + ((size_t)y * m->w + (size_t)x) * 3, col);
            }
            for (int i = 0; ok && i < tw * th; i++) {
                int x = ox + i % tw, y = oy + i / tw;
                if (!pat[i * 3]) ok = !same(m->px + ((size_t)y * m->w + (size_t)x) * 3, col);
            }
            found = ok;
        }
    free(ink);
    free(pat);
    return found;
}

static void save(const char *name, const char *buf, size_t len)
{
    const char *dir = getenv("PG_REPORT_PNG_DIR");
    if (!dir) return;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(buf, 1, len, f);
    fclose(f);
}

/* ---- bars --------------------------------------------------------------- */

typedef struct bar {
    int x0, x1, height;
} bar;

/* Bars of colour col standing on the common baseline: per pixel column, the
 * run of col ending at its lowest col pixel; runs whose bottom is the lowest
 * of all (the baseline) and neighbouring columns of equal height form a bar.
 * Legend swatches end higher up and are ignored. */
static int bars(const img *m, const uint8_t col[3], bar *out, int cap)
{
    int *bottom = malloc(m->w * sizeof *bottom), *run = calloc(m->w, sizeof *run), base = -1;
    for (unsigned x = 0; x < m->w; x++) {
        bottom[x] = -1;
        for (int y = (int)m->h - 1; y >= 0; y--)
            if (same(at(m, x, (unsigned)y), col)) {
                bottom[x] = y;
                break;
            }
        if (bottom[x] >= 0)
            for (int y = bottom[x]; y >= 0 && same(at(m, x, (unsigned)y), col); y--) run[x]++;
        if (bottom[x] > base) base = bottom[x];
    }
    int nb = 0;
    for (unsigned x = 0; x < m->w; x++) {
        if (bottom[x] != base || base < 0) continue;
        if (nb && out[nb - 1].x1 == (int)x && out[nb - 1].height == run[x]) {
            out[nb - 1].x1++;
            continue;
        }
        ck_assert_int_lt(nb, cap);
        out[nb++] = (bar){(int)x, (int)x + 1, run[x]};
    }
    free(bottom);
    free(run);
    return nb;
}

/* The heights are proportional to the shares (the axis top and the plot
 * height being unknown here): within one pixel of share * (tallest bar /
 * largest share). */
static void check_heights(const bar *b, const double *share, int n, double smax, int hmax)
{
    for (int i = 0; i < n; i++)
        ck_assert_msg(fabs(b[i].height - share[i] * hmax / smax) <= 1.0,
                      "bar %d: %d px for share %g (tallest %d px for %g)", i, b[i].height, share[i],
                      hmax, smax);
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 11;
}

static double unif(uint64_t *s)
{
    return (double)lcg(s) / 9007199254740992.0;
}

START_TEST(numeric_bars_match_counted_shares)
{
    /* column 1 of 3; real ~ U(0, 1)^2, synthetic ~ U(0, 1), declared range
     * [0, 1]; 8 bins counted here by the documented rule */
    enum { NR = 700, NS = 500, D = 3, B = 8 };
    float *real = malloc(NR * D * sizeof *real), *syn = malloc(NS * D * sizeof *syn);
    uint64_t s = 7;
    for (int i = 0; i < NR * D; i++) real[i] = (float)pow(unif(&s), 2.0);
    for (int i = 0; i < NS * D; i++) syn[i] = (float)unif(&s);
    real[1] = 1.0f; /* the closed last bin */
    double sr[B] = {0}, ss[B] = {0};
    for (int i = 0; i < NR; i++) {
        int k = (int)(real[i * D + 1] * B);
        sr[k == B ? B - 1 : k] += 1.0 / NR;
    }
    for (int i = 0; i < NS; i++) {
        int k = (int)(syn[i * D + 1] * B);
        ss[k == B ? B - 1 : k] += 1.0 / NS;
    }
    double smax = 0;
    for (int k = 0; k < B; k++) smax = fmax(smax, fmax(sr[k], ss[k]));
    pg_report_png_in in;
    pg_report_png_defaults(&in);
    in.real = real, in.syn = syn, in.n_real = NR, in.n_syn = NS, in.d = D;
    in.lo = 0.0, in.hi = 1.0, in.bins = B;
    char *png;
    size_t len;
    ck_assert_int_eq(pg_report_png_hist(&in, 1, &png, &len, NULL), PG_OK);
    img m = decode(png, len);
    ck_assert_uint_eq(m.w, 640);
    bar br[64], bs[64];
    ck_assert_int_eq(bars(&m, PG_REPORT_REAL_RGB, br, 64), B);
    ck_assert_int_eq(bars(&m, PG_REPORT_SYN_RGB, bs, 64), B);
    int hmax = 0;
    for (int k = 0; k < B; k++) {
        hmax = br[k].height > hmax ? br[k].height : hmax;
        hmax = bs[k].height > hmax ? bs[k].height : hmax;
        ck_assert_int_eq(br[k].x1, bs[k].x0); /* side by side, real on the left */
        if (k < B - 1) ck_assert_int_lt(bs[k].x1, br[k + 1].x0);
    }
    check_heights(br, sr, B, smax, hmax);
    check_heights(bs, ss, B, smax, hmax);
    /* the bins split the plot width evenly: bar starts step by W / B */
    int step = br[1].x0 - br[0].x0;
    for (int k = 1; k < B; k++) ck_assert_int_le(abs(br[k].x0 - br[k - 1].x0 - step), 1);
    ck_assert(has_text(&m, "real n=700", 1, (const uint8_t[3]){20, 20, 20}));
    ck_assert(has_text(&m, "synthetic n=500", 1, (const uint8_t[3]){20, 20, 20}));
    ck_assert(!has_text(&m, PG_REPORT_MARK, 2, PG_REPORT_MARK_RGB));
    free(m.px);
    free(real);
    free(syn);
}
END_TEST

START_TEST(data_range_and_auto_bins)
{
    /* no declared range: bins over [min, max] of both sets; B = round(sqrt(
     * 400)) = 20 bins */
    enum { N = 400 };
    float real[N], syn[N];
    for (int i = 0; i < N; i++)
        real[i] = -3.0f + 0.01f * (float)(i % 300), syn[i] = 2.5f * (float)i / (N - 1);
    double lo = -3.0, hi = 2.5, sr[20] = {0}, ss[20] = {0};
    for (int i = 0; i < N; i++) {
        for (int s = 0; s < 2; s++) {
            double v = s ? syn[i] : real[i];
            int k = (int)((v - lo) / (hi - lo) * 20);
            (s ? ss : sr)[k >= 20 ? 19 : k] += 1.0 / N;
        }
    }
    double smax = 0;
    for (int k = 0; k < 20; k++) smax = fmax(smax, fmax(sr[k], ss[k]));
    pg_report_png_in in;
    pg_report_png_defaults(&in);
    in.real = real, in.syn = syn, in.n_real = N, in.n_syn = N, in.d = 1;
    char *png;
    size_t len;
    ck_assert_int_eq(pg_report_png_hist(&in, 0, &png, &len, NULL), PG_OK);
    img m = decode(png, len);
    bar br[64], bs[64];
    int nr = bars(&m, PG_REPORT_REAL_RGB, br, 64), ns = bars(&m, PG_REPORT_SYN_RGB, bs, 64);
    /* real is empty above 0, synthetic below 0: only nonzero bins show */
    int er = 0, es = 0;
    for (int k = 0; k < 20; k++) er += sr[k] > 0, es += ss[k] > 0;
    ck_assert_int_eq(nr, er);
    ck_assert_int_eq(ns, es);
    int hmax = 0;
    for (int k = 0; k < nr; k++) hmax = br[k].height > hmax ? br[k].height : hmax;
    for (int k = 0; k < ns; k++) hmax = bs[k].height > hmax ? bs[k].height : hmax;
    double nzr[20], nzs[20];
    int a = 0, b = 0;
    for (int k = 0; k < 20; k++) {
        if (sr[k] > 0) nzr[a++] = sr[k];
        if (ss[k] > 0) nzs[b++] = ss[k];
    }
    check_heights(br, nzr, nr, smax, hmax);
    check_heights(bs, nzs, ns, smax, hmax);
    free(m.px);
}
END_TEST

START_TEST(categorical_bars_and_code_cap)
{
    /* codes 0..3 with frequencies counted here, plus a bad code and a NaN,
     * which are noted, not binned */
    enum { N = 200 };
    float real[N * 2], syn[N * 2];
    uint64_t s = 3;
    for (int i = 0; i < N; i++) {
        real[2 * i] = syn[2 * i] = 0.5f;
        real[2 * i + 1] = (float)(lcg(&s) % 4 == 0 ? 0 : 1 + lcg(&s) % 3);
        syn[2 * i + 1] = (float)(lcg(&s) % 4);
    }
    syn[1] = 7.0f;
    syn[3] = NAN;
    double sr[4] = {0}, ss[4] = {0};
    for (int i = 0; i < N; i++) {
        sr[(int)real[2 * i + 1]] += 1.0 / N;
        if (i > 1) ss[(int)syn[2 * i + 1]] += 1.0 / N;
    }
    pg_eval_column cols[2] = {{PG_EVAL_NUMERIC, 0, "x", NULL},
                              {PG_EVAL_CATEGORICAL, 4, "colour", NULL}};
    pg_report_png_in in;
    pg_report_png_defaults(&in);
    in.real = real, in.syn = syn, in.n_real = N, in.n_syn = N, in.d = 2, in.columns = cols;
    char *png;
    size_t len;
    ck_assert_int_eq(pg_report_png_hist(&in, 1, &png, &len, NULL), PG_OK);
    img m = decode(png, len);
    bar br[16], bs[16];
    ck_assert_int_eq(bars(&m, PG_REPORT_REAL_RGB, br, 16), 4);
    ck_assert_int_eq(bars(&m, PG_REPORT_SYN_RGB, bs, 16), 4);
    double smax = 0;
    int hmax = 0;
    for (int k = 0; k < 4; k++) {
        smax = fmax(smax, fmax(sr[k], ss[k]));
        hmax = br[k].height > hmax ? br[k].height : hmax;
        hmax = bs[k].height > hmax ? bs[k].height : hmax;
    }
    check_heights(br, sr, 4, smax, hmax);
    check_heights(bs, ss, 4, smax, hmax);
    ck_assert(has_text(&m, "0/1 bad codes, 0/1 not finite", 1, PG_REPORT_MARK_RGB));
    free(m.px);

    /* 500 declared codes: the page panel shows the most frequent ones */
    cols[1].categories = 500;
    for (int i = 0; i < N; i++) real[2 * i + 1] = syn[2 * i + 1] = (float)(i % 250);
    ck_assert_int_eq(pg_report_png_hist_page(&in, 0, 2, &png, &len, NULL), PG_OK);
    m = decode(png, len);
    int cap = (300 - 56) / 8;
    char note[64];
    snprintf(note, sizeof note, "%d of 500 codes shown", cap);
    ck_assert(has_text(&m, note, 1, (const uint8_t[3]){90, 90, 90}));
    free(m.px);
}
END_TEST

/* ---- heatmap ------------------------------------------------------------ */

static void expect_rgb(double v, double lim, unsigned char out[3])
{
    static const double mid[3] = {247, 247, 247}, neg[3] = {33, 102, 172}, pos[3] = {178, 24, 43};
    if (isnan(v)) {
        out[0] = out[1] = out[2] = 170;
        return;
    }
    double t = fmax(-1.0, fmin(1.0, v / lim));
    for (int k = 0; k < 3; k++)
        out[k] = (unsigned char)lround(mid[k] + fabs(t) * ((t < 0 ? neg : pos)[k] - mid[k]));
}

static double expect_limit(double m)
{
    return m <= 0.1 ? 0.1 : m <= 0.2 ? 0.2 : m <= 0.5 ? 0.5 : m <= 1.0 ? 1.0 : 2.0;
}

/* Finds the frame: the first row holding a run of exactly box + 2 pixels of
 * the axis colour. */
static void find_frame(const img *m, int box, int *L, int *T)
{
    const uint8_t ax[3] = {80, 80, 80};
    for (unsigned y = 0; y < m->h; y++)
        for (unsigned x = 0; x + (unsigned)box + 2 <= m->w; x++) {
            int run = 0;
            while (x + run < m->w && same(at(m, x + (unsigned)run, y), ax)) run++;
            if (run == box + 2) {
                *L = (int)x + 1, *T = (int)y + 1;
                return;
            }
            x += (unsigned)run;
        }
    ck_abort_msg("no frame of %d px", box);
}

static void heat_case(size_t d, int priv, uint64_t seed, double scale)
{
    double *ar = malloc(d * d * sizeof *ar), *as = malloc(d * d * sizeof *as);
    uint64_t s = seed;
    double mx = 0;
    for (size_t i = 0; i < d * d; i++) {
        ar[i] = 2 * unif(&s) - 1;
        as[i] = fmax(-1, fmin(1, ar[i] + scale * (2 * unif(&s) - 1)));
    }
    if (d > 2) ar[1] = NAN; /* an undefined pair */
    for (size_t i = 0; i < d * d; i++)
        if (isfinite(as[i] - ar[i])) mx = fmax(mx, fabs(as[i] - ar[i]));
    pg_eval_report r;
    memset(&r, 0, sizeof r);
    r.d = d, r.has_pairwise = true, r.assoc_real = ar, r.assoc_syn = as;
    r.pearson_mad = 0.05, r.pearson_pairs = d * (d - 1) / 2, r.cramer_mad = NAN;
    float row[1] = {0};
    pg_report_png_in in;
    pg_report_png_defaults(&in);
    in.d = d, in.report = &r, in.private_ref = priv, in.real = row, in.n_real = 1;
    char *png;
    size_t len;
    ck_assert_int_eq(pg_report_png_heatmap(&in, &png, &len, NULL), PG_OK);
    img m = decode(png, len);
    int cell = PG_REPORT_HEATMAP_BOX / (int)d, L, T;
    find_frame(&m, cell * (int)d, &L, &T);
    double lim = expect_limit(mx);
    for (size_t i = 0; i < d; i++)
        for (size_t j = 0; j < d; j++) {
            unsigned char want[3];
            expect_rgb(as[i * d + j] - ar[i * d + j], lim, want);
            const unsigned char *p = at(&m, (unsigned)(L + (int)j * cell + cell / 2),
                                        (unsigned)(T + (int)i * cell + cell / 2));
            ck_assert_msg(p[0] == want[0] && p[1] == want[1] && p[2] == want[2],
                          "cell (%zu,%zu) of %zu: %d,%d,%d not %d,%d,%d", i, j, d, p[0], p[1], p[2],
                          want[0], want[1], want[2]);
            /* the cell is uniform up to its edges */
            const unsigned char *q =
                at(&m, (unsigned)(L + (int)j * cell), (unsigned)(T + (int)i * cell));
            ck_assert(q[0] == want[0] && q[1] == want[1] && q[2] == want[2]);
        }
    ck_assert_int_eq(has_text(&m, PG_REPORT_MARK, 2, PG_REPORT_MARK_RGB), priv);
    char lab[16];
    snprintf(lab, sizeof lab, "%+g", lim);
    ck_assert(has_text(&m, lab, 1, (const uint8_t[3]){20, 20, 20}));
    ck_assert(has_text(&m, "real n=1", 1, (const uint8_t[3]){20, 20, 20}));
    free(m.px);
    free(ar);
    free(as);
}

START_TEST(heatmap_cells_follow_the_colour_scale)
{
    heat_case(4, 0, 11, 0.15);
    heat_case(4, 1, 12, 0.04);
    heat_case(13, 0, 13, 0.9);
    heat_case(60, 1, 14, 0.3);
    heat_case(PG_REPORT_HEATMAP_MAX_D, 0, 15, 2.0);
    ck_assert_double_eq(pg_report_heat_limit(0.1), 0.1);
    ck_assert_double_eq(pg_report_heat_limit(0.1000001), 0.2);
    ck_assert_double_eq(pg_report_heat_limit(1.7), 2.0);
}
END_TEST

START_TEST(heatmap_refuses_what_it_cannot_show)
{
    pg_report_png_in in;
    pg_report_png_defaults(&in);
    in.d = 3;
    char *png = NULL;
    size_t len;
    pg_error err = {0};
    ck_assert_int_eq(pg_report_png_heatmap(&in, &png, &len, &err), PG_EINVAL); /* no report */
    double m[PG_REPORT_HEATMAP_MAX_D + 1] = {0};
    pg_eval_report r;
    memset(&r, 0, sizeof r);
    r.has_pairwise = true, r.assoc_real = r.assoc_syn = m;
    r.d = in.d = PG_REPORT_HEATMAP_MAX_D + 1;
    in.report = &r;
    ck_assert_int_eq(pg_report_png_heatmap(&in, &png, &len, &err), PG_ENOTSUP);
    r.d = 5; /* a report of another width */
    ck_assert_int_eq(pg_report_png_heatmap(&in, &png, &len, &err), PG_EINVAL);
    ck_assert_ptr_null(png);
}
END_TEST

/* ---- scatter and grid --------------------------------------------------- */

START_TEST(scatter_points_in_two_colours)
{
    float real[] = {0.1f, 0.1f, 0.9f, 0.3f, NAN, 0.5f},
          syn[] = {0.5f, 0.7f, 0.3f, 0.9f}; /* off the gridlines */
    for (int priv = 0; priv <= 1; priv++) {
        pg_report_png_in in;
        pg_report_png_defaults(&in);
        in.real = real, in.syn = syn, in.n_real = 3, in.n_syn = 2, in.d = 2, in.lo = 0, in.hi = 1;
        in.private_ref = priv;
        char *png;
        size_t len;
        ck_assert_int_eq(pg_report_png_scatter(&in, &png, &len, NULL), PG_OK);
        img m = decode(png, len);
        ck_assert_uint_eq(m.w, PG_PLOT_W);
        int oy = (int)m.h - PG_PLOT_H;
        ck_assert_int_ge(oy, 0);
        float corners[4] = {0.1f, 0.1f, 0.9f, 0.9f}; /* the finite points' bounding box */
        pg_plot_layout l;
        pg_plot_frame(corners, 2, 0, 1, PG_PLOT_FRAME_DATA, &l);
        const float *pts[4] = {real, real + 2, syn, syn + 2};
        for (int i = 0; i < 4; i++) {
            const uint8_t *c = i < 2 ? PG_REPORT_REAL_RGB : PG_REPORT_SYN_RGB;
            int px, py;
            ck_assert(pg_plot_px(&l, pts[i][0], pts[i][1], &px, &py));
            const unsigned char *p = at(&m, (unsigned)px, (unsigned)(py + oy));
            for (int k = 0; k < 3; k++) ck_assert_int_eq(p[k], (255 * 2 + c[k] * 3 + 2) / 5);
        }
        ck_assert(
            has_text(&m, "not finite (not drawn): 1 real, 0 synthetic", 1, PG_REPORT_MARK_RGB));
        ck_assert(has_text(&m, "real n=3", 1, (const uint8_t[3]){20, 20, 20}));
        ck_assert_int_eq(has_text(&m, PG_REPORT_MARK, 2, PG_REPORT_MARK_RGB), priv);
        free(m.px);
    }
}
END_TEST

START_TEST(grid_shows_rows_under_the_header)
{
    /* five 1x4x4 images, pixel p = p / 15 of [0, 1]; no real rows */
    float x[5 * 16];
    for (int i = 0; i < 5; i++)
        for (int p = 0; p < 16; p++) x[i * 16 + p] = (float)p / 15.0f;
    for (int priv = 0; priv <= 1; priv++) {
        pg_report_png_in in;
        pg_report_png_defaults(&in);
        in.syn = x, in.n_syn = 5, in.d = 16, in.ndim = 3;
        in.shape[0] = 1, in.shape[1] = 4, in.shape[2] = 4;
        in.lo = 0, in.hi = 1, in.private_ref = priv, in.title = "job_1";
        char *png;
        size_t len;
        ck_assert_int_eq(pg_report_png_grid(&in, &png, &len, NULL), PG_OK);
        img m = decode(png, len);
        ck_assert_int_eq(has_text(&m, PG_REPORT_MARK, 2, PG_REPORT_MARK_RGB), priv);
        ck_assert(has_text(&m, "synthetic n=5", 1, (const uint8_t[3]){20, 20, 20}));
        /* the first image: a 4x4 gradient of gray levels round(255 p / 15) */
        int found = 0;
        for (unsigned y = 0; !found && y + 4 <= m.h; y++)
            for (unsigned xx = 0; !found && xx + 4 <= m.w; xx++) {
                int ok = 1;
                for (int p = 0; ok && p < 16; p++) {
                    const unsigned char *q = at(&m, xx + (unsigned)(p % 4), y + (unsigned)(p / 4));
                    int v = (int)lround(255.0 * p / 15.0);
                    ok = q[0] == v && q[1] == v && q[2] == v;
                }
                found = ok;
            }
        ck_assert(found);
        free(m.px);
    }
    pg_report_png_in in;
    pg_report_png_defaults(&in);
    in.syn = x, in.n_syn = 5, in.d = 16, in.ndim = 1;
    char *png;
    size_t len;
    ck_assert_int_eq(pg_report_png_grid(&in, &png, &len, NULL), PG_ENOTSUP);
    in.ndim = 3, in.shape[0] = 2, in.shape[1] = 2, in.shape[2] = 4;
    ck_assert_int_eq(pg_report_png_grid(&in, &png, &len, NULL), PG_ENOTSUP);
}
END_TEST

/* ---- marks and hostile inputs ------------------------------------------- */

START_TEST(mark_on_every_private_figure)
{
    float real[40], syn[40];
    for (int i = 0; i < 40; i++) real[i] = (float)(i % 7), syn[i] = (float)(i % 5);
    for (int priv = 0; priv <= 1; priv++) {
        pg_report_png_in in;
        pg_report_png_defaults(&in);
        in.real = real, in.syn = syn, in.n_real = 20, in.n_syn = 20, in.d = 2;
        in.private_ref = priv;
        char *png;
        size_t len;
        ck_assert_int_eq(pg_report_png_hist(&in, 0, &png, &len, NULL), PG_OK);
        img m = decode(png, len);
        ck_assert_int_eq(has_text(&m, PG_REPORT_MARK, 2, PG_REPORT_MARK_RGB), priv);
        free(m.px);
        ck_assert_int_eq(pg_report_png_hist_page(&in, 0, 12, &png, &len, NULL), PG_OK);
        m = decode(png, len);
        ck_assert_int_eq(has_text(&m, PG_REPORT_MARK, 2, PG_REPORT_MARK_RGB), priv);
        ck_assert(has_text(&m, "synthetic n=20", 1, (const uint8_t[3]){20, 20, 20}));
        free(m.px);
    }
}
END_TEST

START_TEST(hostile_inputs)
{
    pg_report_png_in in;
    pg_report_png_defaults(&in);
    char *png = NULL;
    size_t len;
    pg_error err = {0};
    /* d = 0, column out of range, empty page, rows missing, bad level */
    ck_assert_int_eq(pg_report_png_hist(&in, 0, &png, &len, &err), PG_EINVAL);
    in.d = 3;
    ck_assert_int_eq(pg_report_png_hist(&in, 3, &png, &len, &err), PG_EINVAL);
    ck_assert_int_eq(pg_report_png_hist_page(&in, 3, 1, &png, &len, &err), PG_EINVAL);
    ck_assert_int_eq(pg_report_png_hist_page(&in, 0, 0, &png, &len, &err), PG_EINVAL);
    ck_assert_int_eq(pg_report_png_hist_page(&in, 0, PG_REPORT_PAGE_MAX + 1, &png, &len, &err),
                     PG_EINVAL);
    in.n_real = 5;
    ck_assert_int_eq(pg_report_png_hist(&in, 0, &png, &len, &err), PG_EINVAL);
    in.n_real = 0, in.level = 10;
    ck_assert_int_eq(pg_report_png_hist(&in, 0, &png, &len, &err), PG_EINVAL);
    in.level = 0;
    ck_assert_int_eq(pg_report_png_scatter(&in, &png, &len, &err), PG_ENOTSUP); /* d = 3 */
    ck_assert_ptr_null(png);
    pg_eval_column bad[3] = {{PG_EVAL_CATEGORICAL, 0, "c", NULL}};
    in.columns = bad;
    ck_assert_int_eq(pg_report_png_hist(&in, 0, &png, &len, &err), PG_EINVAL);
    in.columns = NULL;

    /* 0 rows: an empty but labelled figure */
    ck_assert_int_eq(pg_report_png_hist(&in, 0, &png, &len, &err), PG_OK);
    img m = decode(png, len);
    ck_assert(has_text(&m, "real n=0", 1, (const uint8_t[3]){20, 20, 20}));
    bar b[4];
    ck_assert_int_eq(bars(&m, PG_REPORT_REAL_RGB, b, 4), 1); /* only the legend swatch */
    free(m.px);
    in.d = 2;
    ck_assert_int_eq(pg_report_png_scatter(&in, &png, &len, &err), PG_OK);
    free(png);

    /* NaN, infinities, a constant column, a huge value, all-NaN column */
    float x[6 * 3] = {NAN, 5, INFINITY, NAN, 5, -INFINITY, NAN, 5, 1e30f,
                      NAN, 5, 0,        NAN, 5, 1,         NAN, 5, -1e30f};
    in.d = 3, in.real = x, in.syn = x, in.n_real = in.n_syn = 6;
    for (size_t j = 0; j < 3; j++) {
        ck_assert_int_eq(pg_report_png_hist(&in, j, &png, &len, &err), PG_OK);
        m = decode(png, len);
        ck_assert_uint_eq(m.w, 640);
        free(m.px);
    }
    /* the constant column 5 gets [4.5, 5.5]: all rows in one bin */
    ck_assert_int_eq(pg_report_png_hist(&in, 1, &png, &len, &err), PG_OK);
    m = decode(png, len);
    ck_assert_int_eq(bars(&m, PG_REPORT_REAL_RGB, b, 4), 1);
    ck_assert_int_eq(bars(&m, PG_REPORT_SYN_RGB, b, 4), 1);
    free(m.px);
    in.d = 2, in.n_real = in.n_syn = 9; /* 2-D view of the same 18 floats */
    ck_assert_int_eq(pg_report_png_scatter(&in, &png, &len, &err), PG_OK);
    free(png);
    in.lo = 1e300, in.hi = -1e300; /* a nonsense range is ignored */
    ck_assert_int_eq(pg_report_png_hist(&in, 0, &png, &len, &err), PG_OK);
    free(png);

    /* a grid without a declared range: constant images, and NaN pixels */
    float flat[3 * 4];
    for (int i = 0; i < 12; i++) flat[i] = i == 5 ? NAN : 0.25f;
    pg_report_png_defaults(&in);
    in.syn = flat, in.n_syn = 3, in.d = 4, in.ndim = 3;
    in.shape[0] = 1, in.shape[1] = 2, in.shape[2] = 2;
    ck_assert_int_eq(pg_report_png_grid(&in, &png, &len, &err), PG_OK);
    free(png);
    in.n_syn = 0; /* nothing to show: a header saying so */
    ck_assert_int_eq(pg_report_png_grid(&in, &png, &len, &err), PG_OK);
    m = decode(png, len);
    ck_assert(has_text(&m, "no rows", 1, (const uint8_t[3]){90, 90, 90}));
    free(m.px);

    /* a huge column count: a page of 12 of 100000 columns, long names */
    size_t d = 100000;
    float *wide = calloc(2 * d, sizeof *wide);
    pg_eval_column *cols = calloc(d, sizeof *cols);
    for (size_t j = 0; j < d; j++)
        cols[j].name = "a_column_name_far_too_long_to_fit_in_a_panel_of_three_hundred_px";
    pg_report_png_defaults(&in);
    in.d = d, in.real = wide, in.syn = wide + d, in.n_real = in.n_syn = 1, in.columns = cols;
    ck_assert_int_eq(pg_report_png_hist_page(&in, d - 5, 12, &png, &len, &err), PG_OK);
    m = decode(png, len);
    ck_assert(has_text(&m, "real vs synthetic, columns 99996-100000 of 100000", 2,
                       (const uint8_t[3]){20, 20, 20}));
    free(m.px);
    free(wide);
    free(cols);
}
END_TEST

/* ---- a realistic report ------------------------------------------------- */

START_TEST(figures_of_a_real_report)
{
    enum { NR = 2000, NS = 1500, D = 5 };
    float *real = malloc(NR * D * sizeof *real), *syn = malloc(NS * D * sizeof *syn);
    uint64_t s = 99;
    for (int set = 0; set < 2; set++) {
        float *x = set ? syn : real;
        int n = set ? NS : NR;
        for (int i = 0; i < n; i++) {
            double u1 = unif(&s) + 1e-12, u2 = unif(&s),
                   z = sqrt(-2 * log(u1)) * cos(6.2831853 * u2);
            double z2 = sqrt(-2 * log(u1)) * sin(6.2831853 * u2);
            x[i * D + 0] = (float)(40 + 12 * z + (set ? 3 : 0));
            x[i * D + 1] = (float)(x[i * D + 0] * 0.8 + 6 * z2 * (set ? 1.6 : 1.0));
            x[i * D + 2] = (float)(set ? unif(&s) * 100 : pow(unif(&s), 2) * 100);
            x[i * D + 3] = (float)(lcg(&s) % (set ? 4 : 3));
            x[i * D + 4] = (float)((x[i * D + 0] > 40) ^ (set && unif(&s) < 0.3));
        }
    }
    pg_eval_column cols[D] = {{PG_EVAL_NUMERIC, 0, "age", NULL},
                              {PG_EVAL_NUMERIC, 0, "income_k", NULL},
                              {PG_EVAL_NUMERIC, 0, "score", NULL},
                              {PG_EVAL_CATEGORICAL, 4, "region", NULL},
                              {PG_EVAL_CATEGORICAL, 2, "smoker", NULL}};
    pg_eval_input ein = {
        .syn = syn, .ref = real, .n_syn = NS, .n_ref = NR, .d = D, .columns = cols};
    pg_eval_opts opts;
    pg_eval_defaults(&opts);
    opts.distribution = opts.utility = opts.memorisation = false;
    pg_eval_report r;
    ck_assert_int_eq(pg_eval_report_run(&ein, &opts, &r, NULL), PG_OK);
    pg_report_png_in in;
    pg_report_png_defaults(&in);
    in.real = real, in.syn = syn, in.n_real = NR, in.n_syn = NS, in.d = D, in.columns = cols;
    in.report = &r, in.title = "job_3f2a vs ds_holdout";
    char *png;
    size_t len;
    for (int priv = 0; priv <= 1; priv++) {
        in.private_ref = priv;
        ck_assert_int_eq(pg_report_png_hist_page(&in, 0, D, &png, &len, NULL), PG_OK);
        save(priv ? "page_private.png" : "page.png", png, len);
        img m = decode(png, len);
        char ks[32];
        snprintf(ks, sizeof ks, "KS %.3g", r.columns[0].ks);
        ck_assert(has_text(&m, ks, 1, (const uint8_t[3]){90, 90, 90}));
        free(m.px);
        ck_assert_int_eq(pg_report_png_hist(&in, 2, &png, &len, NULL), PG_OK);
        save(priv ? "hist_private.png" : "hist.png", png, len);
        free(png);
        ck_assert_int_eq(pg_report_png_heatmap(&in, &png, &len, NULL), PG_OK);
        save(priv ? "heatmap_private.png" : "heatmap.png", png, len);
        free(png);
    }
    pg_eval_report_free(&r);
    /* a 2-D scatter: a half circle against a noisier copy */
    float *a = malloc(2 * NR * sizeof *a), *b = malloc(2 * NS * sizeof *b);
    for (int i = 0; i < NR; i++) {
        double t = 3.14159 * unif(&s);
        a[2 * i] = (float)cos(t), a[2 * i + 1] = (float)sin(t);
    }
    for (int i = 0; i < NS; i++) {
        double t = 3.14159 * unif(&s);
        b[2 * i] = (float)(cos(t) + 0.08 * (unif(&s) - 0.5)),
              b[2 * i + 1] = (float)(sin(t) + 0.1 * (unif(&s) - 0.5));
    }
    pg_report_png_defaults(&in);
    in.real = a, in.syn = b, in.n_real = NR, in.n_syn = NS, in.d = 2, in.lo = -1.2, in.hi = 1.2;
    in.private_ref = 1, in.title = "job_9c1e vs ds_train";
    ck_assert_int_eq(pg_report_png_scatter(&in, &png, &len, NULL), PG_OK);
    save("scatter_private.png", png, len);
    free(png);
    /* 28x28 gray images: blobs */
    enum { NI = 40, P = 28 * 28 };
    float *im = malloc(NI * P * sizeof *im);
    for (int i = 0; i < NI; i++)
        for (int p = 0; p < P; p++) {
            double dx = p % 28 - 14 - (i % 5), dy = p / 28 - 14 + (i % 3);
            im[i * P + p] = (float)exp(-(dx * dx + dy * dy) / (20.0 + i));
        }
    pg_report_png_defaults(&in);
    in.real = im, in.syn = im + 20 * P, in.n_real = 20, in.n_syn = 20, in.d = P, in.ndim = 3;
    in.shape[0] = 1, in.shape[1] = 28, in.shape[2] = 28, in.lo = 0, in.hi = 1;
    in.title = "job_77aa vs ds_fashion_test";
    ck_assert_int_eq(pg_report_png_grid(&in, &png, &len, NULL), PG_OK);
    save("grid.png", png, len);
    free(png);
    free(im);
    free(a);
    free(b);
    free(real);
    free(syn);
}
END_TEST

/* Categorical bars carry their category names (when the column has them):
 * every name is drawn under its bar in a large figure; a name too long for
 * its room is cut at a character boundary, as long as fits, ending in "..";
 * without names, or for a code outside them, the code is the label. */
START_TEST(categorical_bars_are_labelled_by_name)
{
    enum { N = 120 };
    float real[N], syn[N];
    for (int i = 0; i < N; i++) real[i] = syn[i] = (float)(i % 4);
    static const char *const names[4] = {"red", "green", "blue", "cyan"};
    pg_eval_column col = {PG_EVAL_CATEGORICAL, 4, "colour", names};
    pg_report_png_in in;
    pg_report_png_defaults(&in);
    in.real = real, in.syn = syn, in.n_real = N, in.n_syn = N, in.d = 1, in.columns = &col;
    char *png;
    size_t len;
    ck_assert_int_eq(pg_report_png_hist(&in, 0, &png, &len, NULL), PG_OK);
    img m = decode(png, len);
    for (int k = 0; k < 4; k++)
        ck_assert_msg(has_text(&m, names[k], 1, (const uint8_t[3]){20, 20, 20}), "no label %s",
                      names[k]);
    free(m.px);
    /* the same column without names: codes */
    col.category_names = NULL;
    ck_assert_int_eq(pg_report_png_hist(&in, 0, &png, &len, NULL), PG_OK);
    m = decode(png, len);
    ck_assert(!has_text(&m, "green", 1, (const uint8_t[3]){20, 20, 20}));
    free(m.px);

    /* a small-multiples page of long names and many codes draws (saved for
     * a look with PG_REPORT_PNG_DIR) */
    static const char *const many[12] = {
        "agriculture",   "construction", "education",     "finance", "health",     "hospitality",
        "manufacturing", "mining",       "public-sector", "retail",  "technology", "transport"};
    float rows[N * 2];
    for (int i = 0; i < N; i++) rows[2 * i] = (float)(i % 12), rows[2 * i + 1] = (float)(i % 2);
    static const char *const yn[2] = {"false", "true"};
    pg_eval_column two[2] = {{PG_EVAL_CATEGORICAL, 12, "sector", many},
                             {PG_EVAL_CATEGORICAL, 2, "owner", yn}};
    in.real = rows, in.syn = rows, in.d = 2, in.columns = two;
    ck_assert_int_eq(pg_report_png_hist_page(&in, 0, 2, &png, &len, NULL), PG_OK);
    save("categorical_names.png", png, len);
    m = decode(png, len);
    ck_assert(has_text(&m, "false", 1, (const uint8_t[3]){20, 20, 20}));
    ck_assert(has_text(&m, "true", 1, (const uint8_t[3]){20, 20, 20}));
    free(m.px);
    in.real = real, in.syn = syn, in.d = 1, in.columns = &col;

    char buf[64];
    col.category_names = names;
    pg_report_png_bar_label(&col, 1, 200, buf, sizeof buf);
    ck_assert_str_eq(buf, "green");
    pg_report_png_bar_label(&col, 7, 200, buf, sizeof buf); /* not a declared code */
    ck_assert_str_eq(buf, "7");
    pg_report_png_bar_label(NULL, 3, 200, buf, sizeof buf);
    ck_assert_str_eq(buf, "3");
    /* cut: the longest prefix of whole characters that fits with ".." */
    static const char *const longn[2] = {"freelance-contractor",
                                         "\xce\xb5\xce\xb5\xce\xb5\xce\xb5"};
    pg_eval_column lc = {PG_EVAL_CATEGORICAL, 2, "job", longn};
    for (int px = 11; px <= 130; px++) {
        for (int32_t code = 0; code < 2; code++) {
            pg_report_png_bar_label(&lc, code, px, buf, sizeof buf);
            const char *name = longn[code];
            if (pg_font_width(name, 1) <= px) {
                ck_assert_str_eq(buf, name);
                continue;
            }
            size_t n = strlen(buf);
            ck_assert(n >= 2 && !strcmp(buf + n - 2, ".."));
            ck_assert_int_eq(strncmp(buf, name, n - 2), 0);
            ck_assert((buf[n - 3 < n ? n - 3 : 0] & 0xC0) != 0xC0 || n == 2); /* whole chars */
            ck_assert_int_le(pg_font_width(buf, 1), px);
            /* one more character would not fit */
            const char *q = name + (n - 2);
            pg_font_next(&q);
            char more[64];
            snprintf(more, sizeof more, "%.*s..", (int)(q - name), name);
            ck_assert_int_gt(pg_font_width(more, 1), px);
        }
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("report_png");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, numeric_bars_match_counted_shares);
    tcase_add_test(tc, data_range_and_auto_bins);
    tcase_add_test(tc, categorical_bars_and_code_cap);
    tcase_add_test(tc, categorical_bars_are_labelled_by_name);
    tcase_add_test(tc, heatmap_cells_follow_the_colour_scale);
    tcase_add_test(tc, heatmap_refuses_what_it_cannot_show);
    tcase_add_test(tc, scatter_points_in_two_colours);
    tcase_add_test(tc, grid_shows_rows_under_the_header);
    tcase_add_test(tc, mark_on_every_private_figure);
    tcase_add_test(tc, hostile_inputs);
    tcase_add_test(tc, figures_of_a_real_report);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
