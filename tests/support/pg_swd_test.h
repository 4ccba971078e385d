/* tests/support/pg_swd_test.h - the target the sliced-Wasserstein method
 * tests (test_swd_flow.c, test_swd_gen.c) learn: a mixture of 5 Gaussians
 * (std 0.25) on the circle of radius 2, as central 2-D rows, and the SW2
 * distance the tests measure to it.
 *
 * Check assertions fail the calling test on an engine error. Rows are
 * seeded: the same seed gives the same rows. Arrays written into are the
 * caller's.
 */
#ifndef PG_SWD_TEST_H
#define PG_SWD_TEST_H

#include <check.h>
#include <math.h>

#include "engine/core/alloc.h"
#include "engine/core/rng.h"
#include "engine/data/synth.h"
#include "engine/ot/sliced.h"
#include "support/pg_method_test.h"

/* n mixture rows (n x 2) of seed into out. */
static inline void pg_test_mixture(size_t n, uint64_t seed, float *out)
{
    pg_synth_params sp;
    pg_synth_defaults(PG_SYNTH_GMM_CIRCLE, &sp, NULL);
    sp.radius = 2.0;
    sp.k = 5;
    sp.std = 0.25;
    pg_rng r;
    pg_rng_seeded(&r, seed, 0);
    ck_assert_int_eq(pg_synth_sample(&sp, &r, n, out, NULL, NULL), PG_OK);
}

/* n mixture rows (seed 77) as an unlabelled central dataset on [-10, 10]
 * under a cap of (10, 1e-5); ds owns them. */
static inline void pg_test_mixture_central(size_t n, pg_dataset *ds, pg_data_desc *desc)
{
    float *x = pg_alloc_f32(n * 2);
    pg_test_mixture(n, 77, x);
    pg_test_central_2d(x, NULL, n, 0, 10, ds, desc);
}

/* SW2 of x (n x 2) to y (m x 2) along 500 random directions (seeded). */
static inline double pg_test_sw2_between(const float *x, size_t n, const float *y, size_t m)
{
    size_t k = 500;
    float *th = pg_alloc_f32(2 * k);
    pg_rng r;
    pg_rng_seeded(&r, 5, 5);
    pg_mat tm = pg_mat_view(th, 2, k), xm = pg_mat_view((float *)x, n, 2);
    pg_mat ym = pg_mat_view((float *)y, m, 2);
    ck_assert_int_eq(pg_sw_directions(&r, false, &tm, NULL), PG_OK);
    pg_sw_ws ws;
    ck_assert_int_eq(pg_sw_ws_init(&ws, n, m, k, 2, NULL), PG_OK);
    double s2;
    ck_assert_int_eq(pg_sw2(&ws, &xm, &ym, &tm, &s2, NULL, NULL), PG_OK);
    pg_sw_ws_free(&ws);
    pg_free(th);
    return sqrt(s2);
}

/* SW2 of x (n x 2) to 4000 fresh mixture rows (seed 991; the finite target
 * sample adds its own error of about 0.1 at these sizes). */
static inline double pg_test_sw2_to_mixture(const float *x, size_t n)
{
    size_t m = 4000;
    float *y = pg_alloc_f32(m * 2);
    pg_test_mixture(m, 991, y);
    double v = pg_test_sw2_between(x, n, y, m);
    pg_free(y);
    return v;
}

#endif
