/* render/plot.h - the scatter plot's geometry: frame, round ticks, axis transform.
 *
 * Both axes share one scale (privgen's 2-D datasets declare one range for
 * both coordinates, so a circle stays round). The frame is the data's
 * bounding box plus a small margin (PG_PLOT_FRAME_DATA) or the declared range
 * plus a small margin (PG_PLOT_FRAME_RANGE). Ticks are multiples of 1, 2 or 5
 * times a power of ten. Pure functions: no allocation, no I/O.
 */
#ifndef PG_RENDER_PLOT_H
#define PG_RENDER_PLOT_H

#include <stddef.h>

enum { PG_PLOT_FRAME_DATA = 0, PG_PLOT_FRAME_RANGE = 1 };

#define PG_PLOT_MAX_TICKS 16

/* The canvas and the square plot box inside it, in pixels. */
#define PG_PLOT_W    540
#define PG_PLOT_H    540
#define PG_PLOT_LEFT 72
#define PG_PLOT_TOP  60
#define PG_PLOT_SIZE 440

typedef struct pg_plot_axis {
    double lo, hi; /* the values at the box's edges */
    double step;   /* tick spacing */
    double tick[PG_PLOT_MAX_TICKS];
    int nticks;
    int decimals; /* digits after the point that label every tick exactly */
} pg_plot_axis;

typedef struct pg_plot_layout {
    pg_plot_axis x, y;
    size_t finite; /* points with both coordinates finite */
} pg_plot_layout;

/* Frames n points (x0, x1 interleaved) with declared range [lo, hi]. */
void pg_plot_frame(const float *xy, size_t n, float lo, float hi, int frame, pg_plot_layout *out);
/* Pixel of (x, y): box left + (x - x.lo) / (x.hi - x.lo) * SIZE, rounded;
 * y grows upwards. Returns 0 when the pixel lies outside the box. */
int pg_plot_px(const pg_plot_layout *l, double x, double y, int *px, int *py);
/* One axis over [lo, hi] (lo < hi, finite) with about `target` round
 * intervals; with `extend`, lo and hi move out to the nearest ticks (a
 * histogram's count axis), else they stay and the ticks fall inside. */
void pg_plot_axis_fit(double lo, double hi, int target, int extend, pg_plot_axis *a);
/* Writes the label of tick value v with the axis's decimals ("-0" is "0"). */
void pg_plot_tick_label(const pg_plot_axis *a, double v, char *buf, size_t cap);

#endif
