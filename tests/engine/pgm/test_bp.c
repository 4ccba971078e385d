/* Belief propagation, marginal queries and model sizes against brute force
 * and hand counts. */
#include <stdio.h>

#include "pgm_testutil.h"

/* Every clique marginal from BP equals the enumerated joint's (random
 * potentials, large enough that the model is far from uniform), on chains,
 * a star, cycles that need fill edges, triples, a forest and an unmeasured
 * attribute. */
START_TEST(bp_matches_bruteforce)
{
    const tu_struct *s = &TU_STRUCTS[_i];
    pg_pgm_model *m = tu_random_model(s, 100 + (uint64_t)_i, 1.5, 1e6, 1000.0);
    ck_assert_msg(m != NULL, "%s", s->name);
    size_t n;
    double *joint = tu_joint(m, &n);
    /* Every attribute is in exactly one clique's new attributes and in some clique. */
    for (size_t j = 0; j < m->nc; j++) {
        const pgm_clique *c = &m->c[j];
        double ref[4096];
        tu_marg(m->sizes, m->nattr, joint, c->attrs, c->k, 1.0, ref);
        for (size_t i = 0; i < c->cells; i++)
            ck_assert_msg(fabs(m->prob[c->off + i] - ref[i]) < 1e-12, "%s clique %zu cell %zu",
                          s->name, j, i);
    }
    free(joint);
    pg_pgm_model_free(m);
}
END_TEST

/* pg_pgm_marginal on every pair and triple (most span several cliques)
 * equals brute force, as counts summing to the total. */
START_TEST(marginal_any_set)
{
    const tu_struct *s = &TU_STRUCTS[_i];
    pg_pgm_model *m = tu_random_model(s, 200 + (uint64_t)_i, 1.0, 1e6, 1234.5);
    ck_assert_ptr_nonnull(m);
    size_t n;
    double *joint = tu_joint(m, &n);
    pg_error err = {0};
    size_t d = s->nattr, q[3];
    double out[64], ref[64];
    size_t checked = 0;
    for (unsigned mask = 1; mask < (1u << d); mask++) {
        if (__builtin_popcount(mask) > 3) continue;
        size_t k = 0;
        for (size_t a = 0; a < d; a++)
            if (mask >> a & 1u) q[k++] = a;
        ck_assert_int_eq(pg_pgm_marginal(m, q, k, out, &err), PG_OK);
        tu_marg(m->sizes, m->nattr, joint, q, k, 1234.5, ref);
        double sum = 0;
        for (size_t i = 0; i < tu_cells(m->sizes, q, k); i++) {
            ck_assert_msg(fabs(out[i] - ref[i]) < 1e-9, "%s mask %u cell %zu: %g vs %g", s->name,
                          mask, i, out[i], ref[i]);
            sum += out[i];
        }
        ck_assert(fabs(sum - 1234.5) < 1e-9);
        checked++;
    }
    ck_assert(checked > d);
    /* The empty set is the total. */
    ck_assert_int_eq(pg_pgm_marginal(m, NULL, 0, out, &err), PG_OK);
    ck_assert(fabs(out[0] - 1234.5) < 1e-9);
    free(joint);
    pg_pgm_model_free(m);
}
END_TEST

/* A cross-clique query whose elimination needs a bigger table than the
 * model's bound is refused with the size; a model with room answers it. */
START_TEST(marginal_bound)
{
    tu_struct s = {
        "chain10", 5, {10, 10, 10, 10, 10}, 4, {2, 2, 2, 2}, {{0, 1}, {1, 2}, {2, 3}, {3, 4}}};
    pg_pgm_model *m = tu_random_model(&s, 5, 1.0, 400, 10);
    ck_assert_ptr_nonnull(m);
    ck_assert(pg_pgm_model_cells(m) == 400);
    size_t q[2] = {0, 4};
    double out[100];
    pg_error err = {0};
    ck_assert_int_eq(pg_pgm_marginal(m, q, 2, out, &err), PG_ERANGE);
    ck_assert_msg(strstr(err.msg, "1000 cells") != NULL, "%s", err.msg);
    pg_pgm_model *big = tu_random_model(&s, 5, 1.0, 1e6, 10);
    ck_assert_int_eq(pg_pgm_marginal(big, q, 2, out, &err), PG_OK);
    size_t n;
    double *joint = tu_joint(big, &n), ref[100];
    tu_marg(big->sizes, big->nattr, joint, q, 2, 10, ref);
    for (size_t i = 0; i < 100; i++) ck_assert(fabs(out[i] - ref[i]) < 1e-10);
    free(joint);
    pg_pgm_model_free(m);
    pg_pgm_model_free(big);
}
END_TEST

static double plan(const size_t *sizes, size_t nattr, const size_t sets[][4], const size_t *k,
                   size_t n)
{
    const size_t *p[12];
    for (size_t i = 0; i < n; i++) p[i] = sets[i];
    double cells = -1;
    pg_error err = {0};
    ck_assert_int_eq(pg_pgm_plan_cells(sizes, nattr, p, k, n, &cells, &err), PG_OK);
    return cells;
}

/* Sizes counted by hand. */
START_TEST(plan_cells_by_hand)
{
    /* Chain 2-3-4: cliques {0,1} (6) and {1,2} (12). */
    size_t s1[] = {2, 3, 4};
    size_t e1[][4] = {{0, 1}, {1, 2}};
    size_t k2[] = {2, 2, 2, 2, 2, 2};
    ck_assert(plan(s1, 3, e1, k2, 2) == 18);
    /* Same with attribute 3 (5 levels) unmeasured: + 5. */
    size_t s2[] = {2, 3, 4, 5};
    ck_assert(plan(s2, 4, e1, k2, 2) == 23);
    /* A 4-cycle of binary attributes: one chord, two triangles of 8. */
    size_t s3[] = {2, 2, 2, 2};
    size_t e3[][4] = {{0, 1}, {1, 2}, {2, 3}, {0, 3}};
    ck_assert(plan(s3, 4, e3, k2, 4) == 16);
    /* The three pairs of a triangle: one clique of 3 (2*3*4 = 24). */
    size_t e4[][4] = {{0, 1}, {1, 2}, {0, 2}};
    ck_assert(plan(s1, 3, e4, k2, 3) == 24);
    /* A 4-cycle with levels 10,2,10,2: the chord joins the small ones
     * (1,3), cliques {0,1,3} and {1,2,3} = 40 + 40 (the chord 0-2 would give
     * 200 + 200). */
    size_t s5[] = {10, 2, 10, 2};
    ck_assert(plan(s5, 4, e3, k2, 4) == 80);
    /* A subset measured besides its superset adds nothing. */
    size_t e6[][4] = {{0, 1, 2}, {1, 2}, {0}};
    size_t k6[] = {3, 2, 1};
    ck_assert(plan(s1, 3, e6, k6, 3) == 24);
    /* No sets: one clique per attribute. */
    ck_assert(plan(s2, 4, e1, k2, 0) == 14);
    /* All pairs of 9 binary attributes need a clique of 9 > PG_PGM_MAX_CLIQUE. */
    size_t s9[9] = {2, 2, 2, 2, 2, 2, 2, 2, 2}, e9[36][4], k9[36], n9 = 0;
    for (size_t a = 0; a < 9; a++)
        for (size_t b = a + 1; b < 9; b++) e9[n9][0] = a, e9[n9][1] = b, k9[n9++] = 2;
    const size_t *p9[36];
    for (size_t i = 0; i < n9; i++) p9[i] = e9[i];
    double cells = 0;
    pg_error err = {0};
    ck_assert_int_eq(pg_pgm_plan_cells(s9, 9, p9, k9, n9, &cells, &err), PG_OK);
    ck_assert(isinf(cells));
}
END_TEST

/* The fit refuses a model above max_cells and says what it would need. */
START_TEST(fit_refuses_above_bound)
{
    size_t sizes[] = {10, 10, 10};
    double y[100];
    for (size_t i = 0; i < 100; i++) y[i] = 1;
    pg_pgm_measure ms[2] = {{2, {0, 1}, y, 1.0, NULL}, {2, {1, 2}, y, 1.0, NULL}};
    pg_pgm_fit_opts o = {.max_cells = 199};
    pg_pgm_model *m = NULL;
    pg_error err = {0};
    ck_assert_int_eq(pg_pgm_fit(sizes, 3, ms, 2, &o, NULL, &m, &err), PG_ERANGE);
    ck_assert_ptr_null(m);
    ck_assert_msg(strstr(err.msg, "200 cells") != NULL, "%s", err.msg);
    o.max_cells = 200;
    ck_assert_int_eq(pg_pgm_fit(sizes, 3, ms, 2, &o, NULL, &m, &err), PG_OK);
    ck_assert(pg_pgm_model_cells(m) == 200);
    pg_pgm_model_free(m);
}
END_TEST

START_TEST(fit_rejects_bad_input)
{
    size_t sizes[] = {3, 3, 3}, zero[] = {3, 0, 3};
    double y[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, bad[9] = {1, NAN};
    pg_pgm_model *m = NULL;
    pg_error err = {0};
    pg_pgm_measure ok = {2, {0, 1}, y, 1.0, NULL};
    pg_pgm_measure cases[] = {
        {2, {1, 0}, y, 1.0, NULL}, {2, {0, 3}, y, 1.0, NULL},      {2, {0, 1}, y, 0.0, NULL},
        {2, {0, 1}, y, -1, NULL},  {2, {0, 1}, NULL, 1, NULL},     {2, {0, 1}, bad, 1.0, NULL},
        {9, {0, 1}, y, 1.0, NULL}, {2, {0, 1}, y, INFINITY, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ck_assert_int_eq(pg_pgm_fit(sizes, 3, &cases[i], 1, NULL, NULL, &m, &err), PG_EINVAL);
        ck_assert_ptr_null(m);
    }
    ck_assert_int_eq(pg_pgm_fit(zero, 3, &ok, 1, NULL, NULL, &m, &err), PG_EINVAL);
    ck_assert_int_eq(pg_pgm_fit(sizes, 0, &ok, 1, NULL, NULL, &m, &err), PG_EINVAL);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(pg_pgm_fit(sizes, 3, &ok, 1, NULL, NULL, &m, &err), PG_OK);
    size_t q[] = {2, 1};
    double out[9];
    ck_assert_int_eq(pg_pgm_marginal(m, q, 2, out, &err), PG_EINVAL);
    q[0] = 7;
    ck_assert_int_eq(pg_pgm_marginal(m, q, 1, out, &err), PG_EINVAL);
    pg_pgm_model_free(m);
}
END_TEST

/* Random graphs (pairs and triples over 6 attributes, so cycles, chords and
 * several components all occur): the planned size equals the fitted model's,
 * every clique is within the bound, BP equals brute force on every clique,
 * and random cross-clique queries equal brute force. */
START_TEST(random_structures)
{
    pg_rng r;
    pg_rng_seeded(&r, 4242, (uint64_t)_i);
    tu_struct s = {"random", 6, {0}, 0, {0}, {{0}}};
    for (size_t a = 0; a < 6; a++) s.sizes[a] = 1 + (size_t)pg_rng_below(&r, 4);
    s.nsets = 1 + (size_t)pg_rng_below(&r, 7);
    for (size_t i = 0; i < s.nsets; i++) {
        size_t k = 1 + (size_t)pg_rng_below(&r, 3), n = 0;
        while (n < k) {
            size_t a = (size_t)pg_rng_below(&r, 6), dup = 0;
            for (size_t j = 0; j < n; j++) dup |= s.sets[i][j] == a;
            if (!dup) s.sets[i][n++] = a;
        }
        for (size_t x = 1; x < k; x++) /* sort */
            for (size_t y = x; y > 0 && s.sets[i][y - 1] > s.sets[i][y]; y--) {
                size_t t = s.sets[i][y];
                s.sets[i][y] = s.sets[i][y - 1];
                s.sets[i][y - 1] = t;
            }
        s.k[i] = k;
    }
    const size_t *sets[12];
    for (size_t i = 0; i < s.nsets; i++) sets[i] = s.sets[i];
    double planned = 0;
    pg_error err = {0};
    ck_assert_int_eq(pg_pgm_plan_cells(s.sizes, 6, sets, s.k, s.nsets, &planned, &err), PG_OK);
    pg_pgm_model *m = tu_random_model(&s, 10 + (uint64_t)_i, 1.0, 1e6, 50);
    ck_assert_ptr_nonnull(m);
    ck_assert_msg(pg_pgm_model_cells(m) == planned, "planned %g built %g", planned,
                  pg_pgm_model_cells(m));
    /* Every set inside some clique; the model refuses a bound one below. */
    for (size_t i = 0; i < s.nsets; i++) {
        int inside = 0;
        for (size_t j = 0; j < m->nc && !inside; j++) {
            size_t hit = 0;
            for (size_t a = 0; a < s.k[i]; a++)
                for (size_t b = 0; b < m->c[j].k; b++) hit += m->c[j].attrs[b] == s.sets[i][a];
            inside = hit == s.k[i];
        }
        ck_assert(inside);
    }
    pg_pgm_model *none = NULL;
    if (planned > 1) {
        ck_assert_int_eq(pgm_structure(s.sizes, 6, sets, s.k, s.nsets, planned - 1, &none, &err),
                         PG_ERANGE);
        char need[32];
        snprintf(need, sizeof need, "%.0f cells", planned);
        ck_assert_msg(strstr(err.msg, need) != NULL, "%s", err.msg);
    }
    size_t n;
    double *joint = tu_joint(m, &n), ref[4096], out[4096];
    for (size_t j = 0; j < m->nc; j++) {
        const pgm_clique *c = &m->c[j];
        tu_marg(m->sizes, 6, joint, c->attrs, c->k, 1.0, ref);
        for (size_t i = 0; i < c->cells; i++) ck_assert(fabs(m->prob[c->off + i] - ref[i]) < 1e-12);
    }
    for (int t = 0; t < 10; t++) {
        unsigned mask = 1 + (unsigned)pg_rng_below(&r, 63);
        size_t q[6], k = 0;
        for (size_t a = 0; a < 6; a++)
            if (mask >> a & 1u) q[k++] = a;
        ck_assert_int_eq(pg_pgm_marginal(m, q, k, out, &err), PG_OK);
        tu_marg(m->sizes, 6, joint, q, k, 50, ref);
        for (size_t c = 0; c < tu_cells(m->sizes, q, k); c++)
            ck_assert_msg(fabs(out[c] - ref[c]) < 1e-9, "mask %u cell %zu", mask, c);
    }
    free(joint);
    pg_pgm_model_free(m);
}
END_TEST

static Suite *bp_suite(void)
{
    Suite *s = suite_create("pgm/bp");
    TCase *tc = tcase_create("bp");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, bp_matches_bruteforce, 0, (int)TU_NSTRUCTS);
    tcase_add_loop_test(tc, marginal_any_set, 0, (int)TU_NSTRUCTS);
    tcase_add_loop_test(tc, random_structures, 0, 40);
    tcase_add_test(tc, marginal_bound);
    tcase_add_test(tc, plan_cells_by_hand);
    tcase_add_test(tc, fit_refuses_above_bound);
    tcase_add_test(tc, fit_rejects_bad_input);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(bp_suite)
