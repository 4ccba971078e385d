#include "render/plot.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The smallest step of the form {1, 2, 5} * 10^k giving at most `target`
 * intervals over span; *k receives the power. */
static double nice_step(double span, int target, int *k)
{
    double raw = span / target, p = floor(log10(raw)), base = pow(10.0, p);
    static const double mult[] = {1.0, 2.0, 5.0, 10.0};
    double step = 10.0 * base;
    for (int i = 0; i < 4; i++)
        if (mult[i] * base >= raw * (1.0 - 1e-9)) {
            step = mult[i] * base;
            break;
        }
    *k = (int)floor(log10(step) + 1e-9);
    return step;
}

static void ticks(pg_plot_axis *a, double step, int k)
{
    a->step = step;
    a->decimals = k < 0 ? -k : 0;
    a->nticks = 0;
    double first = ceil(a->lo / step - 1e-9);
    for (double m = first; a->nticks < PG_PLOT_MAX_TICKS; m += 1.0) {
        double v = m * step;
        if (v > a->hi + step * 1e-9) break;
        a->tick[a->nticks++] = fabs(v) < step * 1e-9 ? 0.0 : v;
    }
}

void pg_plot_frame(const float *xy, size_t n, float lo, float hi, int frame, pg_plot_layout *out)
{
    memset(out, 0, sizeof *out);
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double u = xy[2 * i], v = xy[2 * i + 1];
        if (!isfinite(u) || !isfinite(v)) continue;
        out->finite++;
        x0 = fmin(x0, u), x1 = fmax(x1, u), y0 = fmin(y0, v), y1 = fmax(y1, v);
    }
    if (frame == PG_PLOT_FRAME_RANGE || !out->finite) {
        x0 = y0 = lo;
        x1 = y1 = hi;
    }
    double span = fmax(x1 - x0, y1 - y0);
    if (!(span > 0.0)) { /* one distinct point: a unit-sized window around it */
        double c = fmax(fabs(x0), fabs(y0));
        span = c > 0.0 ? c * 0.2 : 1.0;
    }
    /* A margin so that points on the edge and the range rectangle stay
     * visible inside the box. */
    double margin = (frame == PG_PLOT_FRAME_RANGE ? 0.03 : 0.05) * span;
    x0 -= margin, x1 += margin, y0 -= margin, y1 += margin;
    int k;
    double step = nice_step(fmax(x1 - x0, y1 - y0), 6, &k);
    if (frame == PG_PLOT_FRAME_DATA) { /* extend to ticks, so ticks cover the data */
        x0 = floor(x0 / step) * step, x1 = ceil(x1 / step) * step;
        y0 = floor(y0 / step) * step, y1 = ceil(y1 / step) * step;
    }
    /* One scale for both axes: widen the narrower one about its centre. */
    double w = fmax(x1 - x0, y1 - y0);
    double cx = 0.5 * (x0 + x1), cy = 0.5 * (y0 + y1);
    if (x1 - x0 < w) x0 = cx - 0.5 * w, x1 = cx + 0.5 * w;
    if (y1 - y0 < w) y0 = cy - 0.5 * w, y1 = cy + 0.5 * w;
    out->x.lo = x0, out->x.hi = x1, out->y.lo = y0, out->y.hi = y1;
    ticks(&out->x, step, k);
    ticks(&out->y, step, k);
}

void pg_plot_axis_fit(double lo, double hi, int target, int extend, pg_plot_axis *a)
{
    memset(a, 0, sizeof *a);
    int k;
    double step = nice_step(hi - lo, target > 0 ? target : 1, &k);
    if (extend) {
        lo = floor(lo / step + 1e-9) * step;
        hi = ceil(hi / step - 1e-9) * step;
    }
    a->lo = lo, a->hi = hi;
    ticks(a, step, k);
}

int pg_plot_px(const pg_plot_layout *l, double x, double y, int *px, int *py)
{
    double u = (x - l->x.lo) / (l->x.hi - l->x.lo), v = (y - l->y.lo) / (l->y.hi - l->y.lo);
    if (!(u >= -1.0 && u <= 2.0 && v >= -1.0 && v <= 2.0)) return 0; /* also NaN */
    *px = PG_PLOT_LEFT + (int)lround(u * PG_PLOT_SIZE);
    *py = PG_PLOT_TOP + PG_PLOT_SIZE - (int)lround(v * PG_PLOT_SIZE);
    return u >= 0.0 && u <= 1.0 && v >= 0.0 && v <= 1.0;
}

void pg_plot_tick_label(const pg_plot_axis *a, double v, char *buf, size_t cap)
{
    if (fabs(v) >= 1e7 || (v != 0.0 && a->decimals > 6)) {
        snprintf(buf, cap, "%.3g", v);
        return;
    }
    snprintf(buf, cap, "%.*f", a->decimals, v);
    if (buf[0] == '-' && strspn(buf + 1, "0.") == strlen(buf + 1))
        memmove(buf, buf + 1, strlen(buf));
}
