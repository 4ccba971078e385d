/* The DP quantile map (engine/data/qmap.h): its layout from the schema,
 * monotone and invertible CDFs whatever the noisy counts, round trips that
 * stay in bounds and keep integers integral, missing values left alone, the
 * released map's accuracy on a known distribution (a bound that holds on an
 * event of probability > 1 - 1e-7), its RDP, and its JSON form (hostile
 * inputs refused). */
#include <jansson.h>
#include <math.h>

#include "engine/core/alloc.h"
#include "engine/data/qmap.h"
#include "engine/data/table.h"
#include "engine/privacy/privacy.h"
#include "support/pg_test.h"
#include "support/pg_table_test.h"

/* x continuous [0, 100]; k integer [0, 5] (6 values: one bin each); big
 * integer [0, 1000] (equal bins); z continuous nullable [-1, 1]; a category;
 * y the label (no units). Encoded: x 0, k 1, big 2, z 3 + indicator 4,
 * c 5..6. */
static const char *SCHEMA =
    "{\"columns\":["
    "{\"name\":\"x\",\"type\":\"continuous\",\"min\":0,\"max\":100},"
    "{\"name\":\"k\",\"type\":\"integer\",\"min\":0,\"max\":5},"
    "{\"name\":\"big\",\"type\":\"integer\",\"min\":0,\"max\":1000},"
    "{\"name\":\"z\",\"type\":\"continuous\",\"min\":-1,\"max\":1,"
    "\"nullable\":true},"
    "{\"name\":\"c\",\"type\":\"categorical\",\"categories\":[\"a\",\"b\"]},"
    "{\"name\":\"y\",\"type\":\"boolean\"}],"
    "\"label\":\"y\"}";

static pg_table *table(void)
{
    json_t *j = json_loads(SCHEMA, 0, NULL);
    pg_table *t = NULL;
    pg_error err = {0};
    ck_assert_msg(pg_table_from_json(j, &t, &err) == PG_OK, "%s", err.msg);
    json_decref(j);
    ck_assert_int_eq(t->width, 7);
    return t;
}

/* Float rounding of a mapped value (relative 2^-24 of the range 2), blown up
 * by the inverse's slope inside u's bin (edge width over CDF mass), plus
 * the float rounding of u itself. */
static double round_trip_tol(const pg_qmap_col *c, double u, double spread)
{
    size_t b = 0;
    while (b + 1 < c->bins && c->edge[b + 1] <= u) b++;
    /* u on or near an edge may come back through the neighbouring bin */
    double slope = 0;
    for (size_t k = b > 0 ? b - 1 : 0; k <= b + 1 && k < c->bins; k++)
        slope = fmax(slope, (c->edge[k + 1] - c->edge[k]) / (2.0 * (c->cdf[k + 1] - c->cdf[k])));
    return 4.0 * 1.2e-7 * slope / spread + 1e-6;
}

static void set_noisy_counts(pg_qmap *m, pg_rng *r, double scale)
{
    double *c[8];
    for (size_t j = 0; j < m->ncols; j++) {
        c[j] = malloc(m->cols[j].bins * sizeof *c[j]);
        for (size_t b = 0; b < m->cols[j].bins; b++)
            /* some empty bins, some negative noise, some large counts */
            c[j][b] = (b % 3 == 0 ? 0.0 : 100.0 * pg_rng_uniform(r)) + scale * pg_rng_normal(r);
    }
    pg_qmap_set_counts(m, c, scale);
    for (size_t j = 0; j < m->ncols; j++) free(c[j]);
}

START_TEST(layout_follows_the_schema)
{
    pg_table *t = table();
    ck_assert_uint_eq(pg_qmap_columns(t), 4);
    pg_qmap *m;
    ck_assert_int_eq(pg_qmap_layout(t, 32, &m, NULL), PG_OK);
    ck_assert_uint_eq(m->ncols, 4);
    ck_assert_uint_eq(m->cols[0].unit, 0);
    ck_assert_uint_eq(m->cols[0].bins, 32);
    ck_assert(!m->cols[0].integer);
    ck_assert_uint_eq(m->cols[1].bins, 6); /* one bin per value */
    ck_assert(m->cols[1].integer);
    /* edges halfway between the encoded values: step 2/5 on [-1, 1] */
    ck_assert(fabs(m->cols[1].edge[0] - (-1.2)) < 1e-12);
    ck_assert(fabs(m->cols[1].edge[6] - 1.2) < 1e-12);
    ck_assert_uint_eq(m->cols[2].bins, 32);
    ck_assert_uint_eq(m->cols[3].unit, 3);
    ck_assert_uint_eq(m->cols[3].missing, 4);
    ck_assert_uint_eq(m->cols[0].missing, PG_TABLE_NONE);
    /* bad bins */
    pg_qmap *bad;
    ck_assert_int_eq(pg_qmap_layout(t, 1, &bad, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_qmap_layout(t, PG_QMAP_MAX_BINS + 1, &bad, NULL), PG_EINVAL);
    pg_qmap_free(m);
    pg_table_free(t);
}
END_TEST

START_TEST(maps_are_monotone_invertible_and_in_bounds)
{
    pg_table *t = table();
    pg_rng r;
    pg_rng_seeded(&r, 35, 0);
    for (int trial = 0; trial < 20; trial++) {
        pg_qmap *m;
        ck_assert_int_eq(pg_qmap_layout(t, 2 + (size_t)trial * 3, &m, NULL), PG_OK);
        set_noisy_counts(m, &r, trial % 2 ? 30.0 : 1e4); /* 1e4: all mass thresholded away */
        double spread = trial % 3 == 0 ? 0.4 : 1.0;
        ck_assert_int_eq(pg_qmap_set_spread(m, spread, NULL), PG_OK);
        for (size_t j = 0; j < m->ncols; j++) {
            const pg_qmap_col *c = &m->cols[j];
            ck_assert(c->cdf[0] == 0.0 && c->cdf[c->bins] == 1.0);
            for (size_t b = 1; b <= c->bins; b++) ck_assert(c->cdf[b] > c->cdf[b - 1]);
        }
        for (int k = 0; k < 2000; k++) {
            float row[7] = {0}, orig[7];
            row[0] = (float)(-1.0 + 2.0 * pg_rng_uniform(&r));
            row[1] = (float)(-1.0 + 0.4 * (double)pg_rng_below(&r, 6));
            row[2] = (float)(-1.0 + 0.002 * (double)pg_rng_below(&r, 1001));
            bool miss = pg_rng_below(&r, 4) == 0;
            row[3] = miss ? 0.0f : (float)(-1.0 + 2.0 * pg_rng_uniform(&r));
            row[4] = miss ? 1.0f : 0.0f;
            row[5] = 1.0f;
            memcpy(orig, row, sizeof row);
            pg_qmap_encode(m, row, 7, 1);
            for (int u = 0; u < 4; u++)
                ck_assert(row[u] >= (float)-spread - 1e-6f && row[u] <= (float)spread + 1e-6f);
            if (miss) ck_assert(row[3] == 0.0f); /* missing values stay 0 */
            ck_assert(row[4] == orig[4] && row[5] == orig[5] && row[6] == orig[6]);
            pg_qmap_decode(m, row, 7, 1);
            ck_assert_msg(fabs(row[0] - orig[0]) <= round_trip_tol(&m->cols[0], orig[0], m->spread),
                          "x %g -> %g", orig[0], row[0]);
            ck_assert(row[1] == orig[1]); /* integers come back exactly */
            ck_assert(row[2] == orig[2]);
            if (!miss)
                ck_assert_msg(fabs(row[3] - orig[3]) <=
                                  round_trip_tol(&m->cols[3], orig[3], m->spread),
                              "z %g -> %g", orig[3], row[3]);
            /* any generator output decodes inside bounds, integers integral */
            float v[7] = {0};
            for (int u = 0; u < 4; u++) v[u] = (float)(-1.3 + 2.6 * pg_rng_uniform(&r));
            pg_qmap_decode(m, v, 7, 1);
            for (int u = 0; u < 4; u++) ck_assert(v[u] >= -1.0f && v[u] <= 1.0f);
            pg_table_value tv;
            pg_table_decode_value(t, 1, v, 1, &tv);
            ck_assert(tv.num == floor(tv.num) && tv.num >= 0 && tv.num <= 5);
            ck_assert(fabs((v[1] + 1.0) / 0.4 - tv.num) < 1e-5); /* on the grid */
            pg_table_decode_value(t, 2, v, 1, &tv);
            ck_assert(fabs((v[2] + 1.0) / 0.002 - tv.num) < 1e-3);
            /* encode is increasing */
            float a[7] = {0}, b[7] = {0};
            a[0] = (float)(-1.0 + 2.0 * pg_rng_uniform(&r));
            b[0] = (float)fmin(1.0, a[0] + 0.01);
            pg_qmap_encode(m, a, 7, 1);
            pg_qmap_encode(m, b, 7, 1);
            ck_assert(b[0] >= a[0]);
        }
        pg_qmap_free(m);
    }
    pg_table_free(t);
}
END_TEST

/* Rows x_i = 100 ((i + 0.5) / N)^2 (most mass at the bottom of [0, 100]):
 * the released CDF at every bin edge against the rows' own CDF there.
 * On the event that every one of the B noise draws has |N_b| <= 6 sigma
 * (probability >= 1 - B 2 Phi(-6) = 1 - 6.3e-8 for B = 32), each clipped
 * count max(c + N - sigma, 0) is within 7 sigma of c, so every partial sum
 * is within E = B (7 sigma + phi) of the true one (phi the floor, at most
 * 1e-4 (N + 7 B sigma) / B) and |F^(e) - F(e)| <= 2 E / (N - E). */
START_TEST(released_cdf_is_close_on_a_known_distribution)
{
    json_t *j = json_loads("{\"columns\":[{\"name\":\"x\",\"type\":\"continuous\",\"min\":0,"
                           "\"max\":100}]}",
                           0, NULL);
    pg_table *t;
    ck_assert_int_eq(pg_table_from_json(j, &t, NULL), PG_OK);
    json_decref(j);
    enum { N = 50000, B = 32 };
    float *x = pg_alloc_f32(N);
    for (size_t i = 0; i < N; i++) {
        double p = ((double)i + 0.5) / N;
        pg_table_value v = {.num = 100.0 * p * p};
        ck_assert_int_eq(pg_table_encode_value(t, 0, &v, PG_TABLE_BOUNDS_REFUSE, x + i, NULL),
                         PG_OK);
    }
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
    double s = 2.0, sigma = pg_qmap_count_sigma(s, 1, 0);
    ck_assert(fabs(sigma - 2.0) < 1e-15);
    ck_assert(fabs(pg_qmap_count_sigma(s, 9, 1) - 2.0 * sqrt(18.0)) < 1e-12);
    pg_qmap *m;
    pg_error err = {0};
    ck_assert_msg(pg_qmap_release(&sec, t, x, N, 1, B, s, 0, &m, &err) == PG_OK, "%s", err.msg);
    double phi = 1e-4 * (N + 7.0 * B * sigma) / B;
    double E = B * (7.0 * sigma + phi), bound = 2.0 * E / (N - E);
    double worst = 0;
    for (size_t b = 0; b <= B; b++) {
        double e = m->cols[0].edge[b];
        size_t below = 0;
        for (size_t i = 0; i < N; i++) below += x[i] < e || (b == B && x[i] <= e);
        double err_b = fabs(m->cols[0].cdf[b] - (double)below / N);
        worst = fmax(worst, err_b);
    }
    ck_assert_msg(worst <= bound, "CDF error %g > bound %g", worst, bound);
    /* the map's medians: the data's median 25 comes back within a bin */
    float med = 0.0f;
    pg_qmap_decode(m, &med, 1, 1);
    pg_table_value v;
    pg_table_decode_value(t, 0, &med, 1, &v);
    ck_assert_msg(fabs(v.num - 25.0) < 100.0 / B, "median %g", v.num);
    pg_qmap_free(m);
    /* the insecure generator is refused */
    pg_rng weak;
    pg_rng_seeded(&weak, 1, 0);
    ck_assert_int_eq(pg_qmap_release(&weak, t, x, N, 1, B, s, 0, &m, NULL), PG_EPRIVACY);
    pg_free(x);
    pg_table_free(t);
}
END_TEST

START_TEST(rdp_is_the_gaussian_curve_at_s)
{
    double orders[] = {1.5, 2, 8, 64}, rdp[4];
    ck_assert_int_eq(pg_qmap_rdp(10.0, orders, 4, rdp, NULL), PG_OK);
    for (int i = 0; i < 4; i++) ck_assert(fabs(rdp[i] - orders[i] / 200.0) < 1e-15);
}
END_TEST

START_TEST(json_round_trip_and_hostile_maps)
{
    pg_table *t = table();
    pg_rng r;
    pg_rng_seeded(&r, 7, 0);
    pg_qmap *m, *back, *cp;
    ck_assert_int_eq(pg_qmap_layout(t, 16, &m, NULL), PG_OK);
    set_noisy_counts(m, &r, 5.0);
    ck_assert_int_eq(pg_qmap_set_spread(m, 0.0, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_qmap_set_spread(m, 1.5, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_qmap_set_spread(m, 0.625, NULL), PG_OK);
    json_t *j = pg_qmap_to_json(m);
    ck_assert_ptr_nonnull(j);
    char *text = json_dumps(j, JSON_COMPACT);
    json_t *j2 = json_loads(text, 0, NULL);
    free(text);
    pg_error err = {0};
    ck_assert_msg(pg_qmap_from_json(j2, 7, &back, &err) == PG_OK, "%s", err.msg);
    ck_assert_int_eq(pg_qmap_copy(back, &cp, NULL), PG_OK);
    ck_assert_uint_eq(back->ncols, m->ncols);
    ck_assert(back->spread == 0.625 && cp->spread == 0.625);
    for (size_t k = 0; k < m->ncols; k++) {
        ck_assert_uint_eq(back->cols[k].bins, m->cols[k].bins);
        ck_assert_uint_eq(back->cols[k].missing, m->cols[k].missing);
        for (size_t b = 0; b <= m->cols[k].bins; b++) {
            ck_assert(back->cols[k].edge[b] == m->cols[k].edge[b]);
            ck_assert(back->cols[k].cdf[b] == m->cols[k].cdf[b]);
            ck_assert(cp->cols[k].cdf[b] == m->cols[k].cdf[b]);
        }
    }
    pg_qmap_free(back);
    /* width too small for the units */
    ck_assert_int_eq(pg_qmap_from_json(j2, 3, &back, NULL), PG_EFORMAT);
    /* a non-monotone CDF */
    json_t *cdf = json_object_get(json_array_get(json_object_get(j2, "columns"), 0), "cdf");
    json_array_set_new(cdf, 2, json_real(json_number_value(json_array_get(cdf, 1)) - 1e-3));
    ck_assert_int_eq(pg_qmap_from_json(j2, 7, &back, NULL), PG_EFORMAT);
    json_decref(j2);
    /* another version, a NaN-free garbage object */
    json_object_set_new(j, "version", json_integer(99));
    ck_assert_int_eq(pg_qmap_from_json(j, 7, &back, NULL), PG_EFORMAT);
    json_t *g = json_pack("{s:i,s:f,s:f,s:[{s:i}]}", "version", 1, "lo", -1.0, "hi", 1.0, "columns",
                          "unit", 0);
    ck_assert_int_eq(pg_qmap_from_json(g, 7, &back, NULL), PG_EFORMAT);
    json_decref(g);
    json_decref(j);
    pg_qmap_free(m);
    pg_qmap_free(cp);
    pg_table_free(t);
}
END_TEST

/* Sub-bins (qmap.h): a wide integer column ([0, 500000], 32 bins of 15625
 * values) gets 32 sub-bins per bin, the first bin's first one the point
 * {0}; a narrow one ([0, 120], bins of 3 or 4 values) one point per value,
 * each value's encoding found in its own point; a continuous one 32 equal
 * cuts. The layout's length and the c2 of the sensitivity are counted here
 * by hand; the noise of the release on no rows is N(0, (s2 sqrt(c2))^2)
 * per cell (sqrt(2 c2) replace-one; a variance ratio within 6 of its
 * sd sqrt(2 / M) over M cells: false alarm below 1e-8); the JSON keeps
 * "sub" and "sub_noise", reads a map without them as 0 and refuses
 * hostile ones. Fails on the old code (no sub-bins). */
START_TEST(sub_bins_follow_the_schema)
{
    pg_table *t = pg_test_table("{\"columns\":["
                                "{\"name\":\"a\",\"type\":\"integer\",\"min\":0,\"max\":500000},"
                                "{\"name\":\"t\",\"type\":\"integer\",\"min\":0,\"max\":120},"
                                "{\"name\":\"x\",\"type\":\"continuous\",\"min\":0,\"max\":100},"
                                "{\"name\":\"y\",\"type\":\"boolean\"}],\"label\":\"y\"}");
    pg_qmap *m = NULL;
    ck_assert_int_eq(pg_qmap_layout(t, 32, &m, NULL), PG_OK);
    ck_assert_uint_eq(m->ncols, 3);
    const size_t S = 32;
    double a, z;
    /* a: 32 sub-bins in every bin; the point {0} first */
    for (size_t b = 0; b < 32; b++) ck_assert_uint_eq(pg_qmap_sub_bins(m, 0, b, S), S);
    pg_qmap_sub_range(m, 0, 0, S, 0, &a, &z);
    ck_assert(a == m->lo && z == m->lo);
    ck_assert_uint_eq(pg_qmap_sub_of(m, 0, 0, S, m->lo), 0);
    double step = m->cols[0].step;
    ck_assert_uint_eq(pg_qmap_sub_of(m, 0, 0, S, m->lo + step), 1);
    pg_qmap_sub_range(m, 0, 0, S, S - 1, &a, &z);
    ck_assert_double_eq_tol(z, m->cols[0].edge[1], 1e-15);
    /* t: one point per value, each value in its own */
    size_t len = 0;
    for (size_t b = 0; b < 32; b++) {
        size_t nb = pg_qmap_sub_bins(m, 1, b, S);
        ck_assert(nb == 3 || nb == 4 || nb == 5);
        len += nb + 1;
    }
    for (int v = 0; v <= 120; v++) {
        pg_table_value tv = {.num = v};
        float row[3] = {0};
        ck_assert_int_eq(pg_table_encode_value(t, 1, &tv, PG_TABLE_BOUNDS_REFUSE, row, NULL),
                         PG_OK);
        double u = row[m->cols[1].unit];
        size_t b = 0;
        while (b + 1 < 32 && m->cols[1].edge[b + 1] <= u) b++;
        size_t i = pg_qmap_sub_of(m, 1, b, S, u);
        pg_qmap_sub_range(m, 1, b, S, i, &a, &z);
        ck_assert_msg(a == z && fabs(a - u) < 1e-6, "value %d: [%g, %g] against %g", v, a, z, u);
    }
    for (size_t b = 0; b < 32; b++) ck_assert_uint_eq(pg_qmap_sub_bins(m, 2, b, S), S);
    pg_qmap_sub_range(m, 2, 5, S, 3, &a, &z);
    double w = (m->cols[2].edge[6] - m->cols[2].edge[5]) / (double)S;
    ck_assert_double_eq_tol(a, m->cols[2].edge[5] + 3 * w, 1e-12);
    ck_assert_double_eq_tol(z, m->cols[2].edge[5] + 4 * w, 1e-12);
    ck_assert_uint_eq(pg_qmap_sub_len(m, S), 2 * 32 * (S + 1) + len);
    ck_assert_uint_eq(pg_qmap_sub_columns(m, S), 3);
    ck_assert_uint_eq(pg_qmap_sub_len(m, 0), 0);
    /* per-value bins release nothing */
    pg_qmap *pv = NULL;
    ck_assert_int_eq(pg_qmap_layout(t, 128, &pv, NULL), PG_OK);
    ck_assert_uint_eq(pg_qmap_sub_bins(pv, 1, 7, S), 1);
    ck_assert_uint_eq(pg_qmap_sub_columns(pv, S), 2);
    pg_qmap_free(pv);
    /* the noise on no rows: every cell N(0, sigma2^2) */
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
    const int K = 20;
    size_t cells = 2 * 32 * S + (len - 32);
    float *out = malloc((size_t)K * pg_qmap_sub_len(m, S) * sizeof *out);
    double *raw = malloc((size_t)K * cells * sizeof *raw);
    int32_t lab = 0;
    for (int ro = 0; ro < 2; ro++) {
        ck_assert_int_eq(
            pg_qmap_release_sub(&sec, m, NULL, &lab, 0, 4, K, S, 1.5, ro, out, raw, NULL), PG_OK);
        double sig = 1.5 * sqrt(3.0 * (ro ? 2.0 : 1.0)), ss = 0;
        size_t M = (size_t)K * cells;
        for (size_t q = 0; q < M; q++) ss += raw[q] * raw[q];
        double ratio = ss / (double)M / (sig * sig);
        ck_assert_msg(fabs(ratio - 1.0) < 6.0 * sqrt(2.0 / (double)M), "variance ratio %g", ratio);
    }
    /* refused: the insecure generator, sub out of range, no noise */
    pg_rng ins;
    pg_rng_seeded(&ins, 1, 0);
    ck_assert_int_eq(pg_qmap_release_sub(&ins, m, NULL, &lab, 0, 4, 1, S, 1, 0, out, NULL, NULL),
                     PG_EPRIVACY);
    ck_assert_int_eq(pg_qmap_release_sub(&sec, m, NULL, &lab, 0, 4, 1, 1, 1, 0, out, NULL, NULL),
                     PG_EINVAL);
    ck_assert_int_eq(pg_qmap_release_sub(&sec, m, NULL, &lab, 0, 4, 1, S, 0, 0, out, NULL, NULL),
                     PG_EINVAL);
    free(out);
    free(raw);
    /* JSON: sub and sub_noise kept; absent reads 0; hostile refused */
    pg_qmap *back = NULL;
    json_t *j = pg_qmap_to_json(m);
    ck_assert_ptr_null(json_object_get(j, "sub"));
    ck_assert_int_eq(pg_qmap_from_json(j, 4, &back, NULL), PG_OK);
    ck_assert(back->sub == 0 && back->sub_noise == 0);
    pg_qmap_free(back);
    json_decref(j);
    m->sub = S;
    m->sub_noise = 2.5;
    j = pg_qmap_to_json(m);
    ck_assert_int_eq(pg_qmap_from_json(j, 4, &back, NULL), PG_OK);
    ck_assert(back->sub == S && back->sub_noise == 2.5);
    pg_qmap *cp = NULL;
    ck_assert_int_eq(pg_qmap_copy(back, &cp, NULL), PG_OK);
    ck_assert(cp->sub == S && cp->sub_noise == 2.5);
    pg_qmap_free(cp);
    pg_qmap_free(back);
    json_object_set_new(j, "sub", json_integer(1));
    ck_assert_int_eq(pg_qmap_from_json(j, 4, &back, NULL), PG_EFORMAT);
    json_object_set_new(j, "sub", json_integer(PG_QMAP_MAX_SUB + 1));
    ck_assert_int_eq(pg_qmap_from_json(j, 4, &back, NULL), PG_EFORMAT);
    json_object_set_new(j, "sub", json_integer(32));
    json_object_set_new(j, "sub_noise", json_real(-1));
    ck_assert_int_eq(pg_qmap_from_json(j, 4, &back, NULL), PG_EFORMAT);
    json_object_del(j, "sub_noise");
    ck_assert_int_eq(pg_qmap_from_json(j, 4, &back, NULL), PG_EFORMAT);
    json_decref(j);
    pg_qmap_free(m);
    pg_table_free(t);
}
END_TEST

static Suite *qmap_suite(void)
{
    Suite *s = suite_create("qmap");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, layout_follows_the_schema);
    tcase_add_test(tc, maps_are_monotone_invertible_and_in_bounds);
    tcase_add_test(tc, released_cdf_is_close_on_a_known_distribution);
    tcase_add_test(tc, rdp_is_the_gaussian_curve_at_s);
    tcase_add_test(tc, json_round_trip_and_hostile_maps);
    tcase_add_test(tc, sub_bins_follow_the_schema);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(qmap_suite)
