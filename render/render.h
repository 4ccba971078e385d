/* render/render.h - synthetic samples as response bodies (JSON, CSV, NPY, PNG).
 *
 * Every function takes n rows of d floats (row-major) and returns a malloc'ed
 * body in *out / *len (caller frees), or PG_ENOMEM / PG_EINVAL with err set.
 * PNG: an image grid when the rows are [c,h,w] images with c = 1 or 3 (pixel
 * values map [lo, hi] linearly to 0..255, clamped), with a caption strip
 * below; a scatter plot when d = 2 (render/plot.h: axes, round ticks, title, the
 * declared range [lo, hi] as a dashed rectangle, and the number of points
 * outside it written on the plot); PG_ENOTSUP for any other shape.
 */
#ifndef PG_RENDER_RENDER_H
#define PG_RENDER_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "render/plot.h"
#include "engine/core/error.h"

int pg_render_csv(const float *x, size_t n, size_t d, char **out, size_t *len, pg_error *err);
int pg_render_npy(const float *x, size_t n, const size_t *shape, int ndim, char **out, size_t *len,
                  pg_error *err);
/* zlib level for served PNGs: see docs/benchmarks.md "PNG compression". */
#define PG_RENDER_PNG_LEVEL 4

/* What a plot says about itself. Fields left at their defaults
 * (pg_render_plot_defaults) are omitted from the title. */
typedef struct pg_render_plot {
    int frame;           /* PG_PLOT_FRAME_DATA (default) or PG_PLOT_FRAME_RANGE */
    const char *method;  /* NULL: omitted */
    double epsilon;      /* NaN: omitted */
    const char *privacy; /* "local" | "central" | "public" | NULL */
    long step;           /* < 0: omitted */
    int level;           /* zlib level 1..9; 0: PG_RENDER_PNG_LEVEL */
} pg_render_plot;

void pg_render_plot_defaults(pg_render_plot *p);
/* opt NULL = defaults. */
int pg_render_png_plot(const float *x, size_t n, size_t d, int ndim, const size_t *shape, float lo,
                       float hi, const pg_render_plot *opt, char **out, size_t *len, pg_error *err);
int pg_render_png(const float *x, size_t n, size_t d, int ndim, const size_t *shape, float lo,
                  float hi, char **out, size_t *len, pg_error *err);

/* Encodes a w x h RGB8 image (rows packed, 3 bytes a pixel) as PNG at zlib
 * `level`, as 8-bit gray when every pixel is gray. *out is malloc'ed. Every
 * PNG the api layer serves goes through here, so the level is chosen once. */
int pg_render_encode_rgb(const uint8_t *rgb, size_t w, size_t h, int level, char **out, size_t *len,
                         pg_error *err);

#endif
