/* rdp_floor - is dp_sinkhorn's noise multiplier at epsilon 1000 a default or
 * a necessity? (issue 28). For credit_data's dp_sinkhorn plan (rate 64/3563,
 * 1500 steps, delta 1e-5) prints epsilon at several noise multipliers on the
 * default RDP order grid (1.1 .. 1024) and on a grid with 99 more orders in
 * (1, 1.1), next to T q / (2 sigma^2), the orders-near-1 limit of the
 * subsampled Gaussian's RDP (q KL(N(1, s^2) || N(0, s^2)) per step); then the
 * calibrated multiplier for fewer steps.
 *
 *   gcc -O2 -I. bench/probes/rdp_floor.c build/engine/libprivgen_engine.a \
 *       -lm -lgomp -lopenblas -ljansson -lz -lpthread -o /tmp/rdp_floor && /tmp/rdp_floor
 */
#include <stdio.h>

#include "engine/privacy/privacy.h"

static double eps_at(double q, double s, long T, const double *o, size_t n, double delta)
{
    double rdp[400], e = 0;
    pg_rdp_compute(q, s, (uint64_t)T, o, n, rdp, NULL);
    pg_rdp_to_dp(o, rdp, n, delta, PG_RDP_CONV_IMPROVED, &e, NULL, NULL);
    return e;
}

int main(void)
{
    double o[400], o2[400];
    size_t n = pg_rdp_default_orders(o, 400), n2 = 0;
    for (int i = 1; i <= 99; i++) o2[n2++] = 1 + i / 1000.0;
    for (size_t i = 0; i < n; i++) o2[n2++] = o[i];
    double q = 64.0 / 3563, sg;
    long T = 1500;
    for (double s = 0.08; s < 0.29; s += 0.02)
        printf("sigma %.2f: epsilon %.1f (default grid), %.1f (orders down to 1.001); T q / (2 "
               "sigma^2) = %.1f\n",
               s, eps_at(q, s, T, o, n, 1e-5), eps_at(q, s, T, o2, n2, 1e-5),
               (double)T * q / (2 * s * s));
    for (long t = 100; t <= 1600; t *= 2) {
        pg_rdp_calibrate_sigma(1000, 1e-5, q, (uint64_t)t, PG_RDP_CONV_IMPROVED, &sg, NULL);
        printf("steps %ld: sigma %.4f at epsilon 1000\n", t, sg);
    }
    return 0;
}
