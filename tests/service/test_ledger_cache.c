/* The ledger parse cache (service/ledger.h) never changes a charge.
 *
 * Unit part: pg_ledger_curve_add_row through a cache adds bit for bit what
 * pg_ledger_curve_add_encoded adds, on hits, misses, collisions, rewritten
 * texts and malformed texts, and keeps its bound. Storage part (the backend
 * PRIVGEN_TEST_DB names; default SQLite): three handles on one database
 * (cache off, a 3-slot cache that collides all the time, the default
 * cache) quote and admit a random sequence of plans with refunds and job
 * deletions in between; every quote, spent curve and admission decision
 * agrees to the bit across the handles and with a brute-force sum of the
 * non-refunded rows; a row rewritten in the database behind the cache's
 * back (plain SQL) is decoded again. */
#include <libpq-fe.h>
#include <math.h>
#include <sqlite3.h>

#include "db_support.h"
#include "engine/privacy/privacy.h"
#include "service/ledger.h"

#define CAP_DELTA 1e-5

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static double unif(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}

static pg_privacy_plan sgm_plan(double q, double sigma, long steps)
{
    pg_privacy_plan p;
    memset(&p, 0, sizeof p);
    p.charges = true;
    p.norders = (int)pg_rdp_default_orders(p.orders, PG_PLAN_MAX_ORDERS);
    ck_assert_int_eq(
        pg_rdp_compute(q, sigma, (uint64_t)steps, p.orders, (size_t)p.norders, p.rdp, NULL), PG_OK);
    p.noise_multiplier = sigma;
    p.sampling_rate = q;
    p.steps = steps;
    p.delta = CAP_DELTA;
    ck_assert_int_eq(pg_rdp_to_dp(p.orders, p.rdp, (size_t)p.norders, CAP_DELTA,
                                  PG_RDP_CONV_IMPROVED, &p.epsilon, NULL, NULL),
                     PG_OK);
    snprintf(p.mechanism, sizeof p.mechanism, "gaussian");
    return p;
}

/* A random plan: Gaussian curves of random scale, sometimes a δ₀, sometimes
 * a partial grid (orders missing: +∞ there). */
static pg_privacy_plan random_plan(void)
{
    pg_privacy_plan p =
        sgm_plan(0.001 + 0.05 * unif(), 0.8 + 4.0 * unif(), 1 + (long)(rnd() % 400));
    if (rnd() % 4 == 0) p.delta_extra = 1e-8 * unif();
    if (rnd() % 8 == 0) p.norders -= 1 + (int)(rnd() % 20);
    return p;
}

static void assert_same_curve(const pg_ledger_curve *a, const pg_ledger_curve *b)
{
    ck_assert_uint_eq(a->norders, b->norders);
    ck_assert_int_eq(a->entries, b->entries);
    ck_assert_msg(!memcmp(a->orders, b->orders, a->norders * sizeof(double)), "grids differ");
    ck_assert_msg(!memcmp(a->rdp, b->rdp, a->norders * sizeof(double)), "rdp sums differ");
    ck_assert_msg(!memcmp(&a->delta_extra, &b->delta_extra, sizeof(double)), "delta0 differs");
}

static void assert_same_quote(const pg_ledger_quote *a, const pg_ledger_quote *b)
{
    ck_assert_msg(!memcmp(&a->requested_epsilon, &b->requested_epsilon, sizeof(double)) &&
                      !memcmp(&a->spent_epsilon, &b->spent_epsilon, sizeof(double)) &&
                      !memcmp(&a->total_epsilon, &b->total_epsilon, sizeof(double)) &&
                      !memcmp(&a->remaining_epsilon, &b->remaining_epsilon, sizeof(double)),
                  "quotes differ: spent %.17g vs %.17g, total %.17g vs %.17g", a->spent_epsilon,
                  b->spent_epsilon, a->total_epsilon, b->total_epsilon);
    ck_assert_int_eq(a->admit, b->admit);
}

static const char *hostile_texts[] = {
    "",
    "not json",
    "{}",
    "{\"orders\":[],\"rdp\":[]}",
    "{\"orders\":[2,3],\"rdp\":[0.1]}",
    "{\"orders\":[2,3],\"rdp\":[0.1,null]}",
    "{\"orders\":[2,2,3],\"rdp\":[0.5,0.1,0.2],\"delta_extra\":1e-9}",
    "{\"orders\":[2,3],\"rdp\":[0.1,\"x\"],\"delta_extra\":\"y\"}",
    "{\"orders\":[1.5,2,32],\"rdp\":[0.01,0.02,0.5],\"delta_extra\":-1}",
    "[1,2,3]",
};

/* ---- unit ---------------------------------------------------------------- */

START_TEST(cached_rows_add_exactly_what_decoding_adds)
{
    pg_ledger_cache *lc;
    ck_assert_int_eq(pg_ledger_cache_new(5, &lc, NULL), PG_OK);
    enum { ROWS = 40 };
    char *text[ROWS];
    for (int i = 0; i < ROWS; i++) {
        if (i % 4 == 3) {
            text[i] = strdup(
                hostile_texts[(size_t)i / 4 % (sizeof hostile_texts / sizeof hostile_texts[0])]);
        } else {
            pg_privacy_plan p = random_plan();
            text[i] = pg_ledger_plan_encode(&p);
        }
        ck_assert_ptr_nonnull(text[i]);
    }
    /* Several passes over the rows (in seq order, 5 slots: hits, misses and
     * collisions all happen), each compared with the plain decode. */
    for (int pass = 0; pass < 4; pass++) {
        pg_ledger_curve with, without;
        pg_ledger_curve_init(&with);
        pg_ledger_curve_init(&without);
        for (int i = 0; i < ROWS; i++) {
            int64_t seq = 1 + (i * 7) % 11 + 11 * (i / 11); /* distinct, some share a slot */
            pg_ledger_curve_add_row(&with, lc, seq, text[i], strlen(text[i]));
            pg_ledger_curve_add_encoded(&without, text[i]);
            assert_same_curve(&with, &without);
        }
        pg_ledger_curve_add_row(&with, lc, 999, NULL, 0);
        pg_ledger_curve_add_encoded(&without, NULL);
        assert_same_curve(&with, &without);
        ck_assert(isinf(with.rdp[0]));
    }
    pg_ledger_cache_stats st;
    pg_ledger_cache_get_stats(lc, &st);
    ck_assert_uint_le(st.entries, 5);
    ck_assert_uint_eq(st.hits + st.misses, 4 * ROWS);
    for (int i = 0; i < ROWS; i++) free(text[i]);
    pg_ledger_cache_free(lc);
}
END_TEST

START_TEST(a_rewritten_text_is_decoded_again)
{
    pg_ledger_cache *lc;
    ck_assert_int_eq(pg_ledger_cache_new(0, &lc, NULL), PG_OK);
    pg_privacy_plan a = sgm_plan(0.01, 1.0, 100), b = sgm_plan(0.01, 1.0, 50);
    char *ta = pg_ledger_plan_encode(&a), *tb = pg_ledger_plan_encode(&b);
    /* Same length, one digit changed: a tampered row of the same size. */
    char *tc = strdup(ta);
    char *digit = strstr(tc, "\"rdp\":[") + 7;
    *digit = *digit == '9' ? '8' : (char)(*digit + 1);
    const char *texts[] = {ta, tb, tc, ta};
    pg_ledger_cache_stats st0, st1;
    for (size_t k = 0; k < 4; k++) {
        pg_ledger_curve with, without;
        pg_ledger_curve_init(&with);
        pg_ledger_curve_init(&without);
        pg_ledger_cache_get_stats(lc, &st0);
        /* The row's identity stays 42; its stored text changes under it. */
        pg_ledger_curve_add_row(&with, lc, 42, texts[k], strlen(texts[k]));
        pg_ledger_curve_add_encoded(&without, texts[k]);
        assert_same_curve(&with, &without);
        pg_ledger_cache_get_stats(lc, &st1);
        ck_assert_uint_eq(st1.misses, st0.misses + 1); /* never served the old decode */
        /* The same text again is a hit with the same result. */
        pg_ledger_curve_add_row(&with, lc, 42, texts[k], strlen(texts[k]));
        pg_ledger_curve_add_encoded(&without, texts[k]);
        assert_same_curve(&with, &without);
        pg_ledger_cache_get_stats(lc, &st0);
        ck_assert_uint_eq(st0.hits, st1.hits + 1);
    }
    ck_assert_uint_eq(st0.entries, 1);
    free(ta);
    free(tb);
    free(tc);
    pg_ledger_cache_free(lc);
}
END_TEST

START_TEST(a_malformed_row_still_refuses)
{
    pg_ledger_cache *lc;
    ck_assert_int_eq(pg_ledger_cache_new(0, &lc, NULL), PG_OK);
    pg_privacy_plan small = sgm_plan(0.001, 5.0, 10);
    char *good = pg_ledger_plan_encode(&small);
    for (int pass = 0; pass < 3; pass++) { /* miss, then hits */
        pg_ledger_curve c;
        pg_ledger_curve_init(&c);
        pg_ledger_curve_add_row(&c, lc, 1, good, strlen(good));
        pg_ledger_curve_add_row(&c, lc, 2, "{\"orders\":[2", 12);
        pg_ledger_quote q;
        ck_assert_int_eq(pg_ledger_quote_plan(&c, &small, 1e6, CAP_DELTA, &q, NULL), PG_OK);
        ck_assert(isinf(q.spent_epsilon) && isinf(q.total_epsilon));
        ck_assert_int_eq(q.admit, 0);
        ck_assert_int_eq(c.entries, 2);
    }
    free(good);
    pg_ledger_cache_free(lc);
}
END_TEST

START_TEST(the_bound_is_kept)
{
    pg_ledger_cache *lc, *off;
    ck_assert_int_eq(pg_ledger_cache_new(4, &lc, NULL), PG_OK);
    ck_assert_int_eq(pg_ledger_cache_new(-1, &off, NULL), PG_OK);
    ck_assert_ptr_null(off);
    pg_privacy_plan p = sgm_plan(0.01, 1.0, 100);
    char *t = pg_ledger_plan_encode(&p);
    size_t len = strlen(t), max_bytes = 0;
    for (int64_t seq = 1; seq <= 200; seq++) {
        pg_ledger_curve c;
        pg_ledger_curve_init(&c);
        pg_ledger_curve_add_row(&c, lc, seq, t, len);
        pg_ledger_cache_stats st;
        pg_ledger_cache_get_stats(lc, &st);
        ck_assert_uint_le(st.entries, 4);
        if (st.bytes > max_bytes) max_bytes = st.bytes;
    }
    pg_ledger_cache_stats st;
    pg_ledger_cache_get_stats(lc, &st);
    ck_assert_uint_eq(st.entries, 4);
    ck_assert_uint_eq(st.evictions, 196);
    ck_assert_uint_eq(st.misses, 200);
    /* Four entries of this text: each its text plus one aligned curve. */
    ck_assert_uint_ge(max_bytes, 4 * (len + 156 * sizeof(double)));
    ck_assert_uint_le(max_bytes, 4 * (len + 1 + 160 * sizeof(double) + 64));
    /* A text over the per-entry limit is decoded but never kept. */
    size_t big = 70 * 1024;
    char *huge = malloc(big + 1);
    memset(huge, ' ', big);
    memcpy(huge, t, len);
    huge[big] = '\0';
    pg_ledger_curve a, b;
    pg_ledger_curve_init(&a);
    pg_ledger_curve_init(&b);
    pg_ledger_curve_add_row(&a, lc, 1000, huge, big);
    pg_ledger_curve_add_encoded(&b, huge);
    assert_same_curve(&a, &b);
    pg_ledger_cache_stats st2;
    pg_ledger_cache_get_stats(lc, &st2);
    ck_assert_uint_eq(st2.bytes, st.bytes);
    free(huge);
    free(t);
    pg_ledger_cache_free(lc);
}
END_TEST

/* ---- storage ------------------------------------------------------------- */

static char tenant[PG_ID_MAX], ds[PG_ID_MAX];

static void setup(void)
{
    pg_test_db_setup();
    pg_test_uid(tenant, sizeof tenant, "ten_");
    pg_test_uid(ds, sizeof ds, "ds_");
}

static void teardown(void)
{
    pg_test_db_teardown();
}

static pg_db *open_slots(int slots)
{
    pg_db *db = NULL;
    pg_error err = {0};
    pg_db_options o = {.ledger_cache_slots = slots};
    ck_assert_msg(pg_db_open(pg_test_db_url, &o, &db, &err) == PG_OK, "%s", err.msg);
    ck_assert(slots < 0 ? pg_db_ledger_cache(db) == NULL : pg_db_ledger_cache(db) != NULL);
    return db;
}

/* The spent curve recomputed from scratch: every non-refunded row of the
 * dataset, decoded without any cache, oldest first. */
static void brute_spent(pg_db *db, pg_ledger_curve *c)
{
    pg_ledger_entry *e;
    size_t n;
    ck_assert_int_eq(pg_db_ledger_entries(db, ds, &e, &n, NULL), PG_OK);
    pg_ledger_curve_init(c);
    for (size_t i = 0; i < n; i++) {
        ck_assert(i == 0 || e[i].seq > e[i - 1].seq);
        if (!e[i].refunded) pg_ledger_curve_add_encoded(c, e[i].plan);
    }
    pg_ledger_entries_free(e, n);
}

START_TEST(admissions_agree_with_and_without_the_cache)
{
    rng_state ^= (uint64_t)_i * 0x2545f4914f6cdd1dull + 1;
    enum { H = 3, OPS = 90 };
    pg_db *h[H] = {open_slots(-1), open_slots(3), open_slots(0)};
    pg_test_dataset(h[0], tenant, ds, 2);
    pg_test_jobs_drain(h[0]);
    char ids[OPS][PG_ID_MAX];
    int nids = 0, admitted = 0, refused = 0, refunds = 0, deletions = 0;
    double cap = 4.0;
    for (int op = 0; op < OPS; op++) {
        /* Every handle's view of the spend: bit-identical, and equal to the
         * brute-force sum. */
        pg_ledger_curve brute, view[H];
        brute_spent(h[0], &brute);
        for (int k = 0; k < H; k++) {
            ck_assert_int_eq(pg_ledger_spent(h[k], ds, &view[k], NULL), PG_OK);
            assert_same_curve(&view[k], &brute);
        }
        unsigned what = (unsigned)(rnd() % 10);
        if (what < 7 || nids == 0) { /* quote everywhere, then admit through one */
            pg_privacy_plan p = random_plan();
            pg_ledger_quote dry[H], q;
            for (int k = 0; k < H; k++) {
                ck_assert_int_eq(pg_ledger_quote_plan(&view[k], &p, cap, CAP_DELTA, &dry[k], NULL),
                                 PG_OK);
                if (k) assert_same_quote(&dry[k], &dry[0]);
            }
            pg_job_row row;
            pg_test_job_row(&row, tenant, ds, "job_");
            pg_error err = {0};
            ck_assert_msg(pg_db_job_admit(h[rnd() % H], &row, &p, cap, CAP_DELTA, &q, &err) ==
                              PG_OK,
                          "%s", err.msg);
            /* The admission's own read (same rows, same order) decides
             * exactly as the quote did. */
            assert_same_quote(&q, &dry[0]);
            if (q.admit) {
                snprintf(ids[nids++], PG_ID_MAX, "%s", row.id);
                admitted++;
            } else {
                refused++;
            }
        } else if (what < 9) { /* a queued job cancelled: its row is refunded */
            int done;
            ck_assert_int_eq(pg_db_job_cancel_queued(h[rnd() % H], ids[rnd() % nids], &done, NULL),
                             PG_OK);
            refunds += done;
        } else { /* the oldest queued job runs, succeeds and is deleted: its row stays */
            pg_job_row *r;
            int found, conflict;
            ck_assert_int_eq(
                pg_db_job_claim(h[0], "w:1", (int64_t)time(NULL), 3600, &r, &found, NULL), PG_OK);
            if (found) {
                pg_test_job_end(h[0], r->id, "w:1", "succeeded", NULL);
                ck_assert_int_eq(pg_db_job_delete(h[rnd() % H], r->id, &found, &conflict, NULL),
                                 PG_OK);
                deletions += found && !conflict;
                pg_job_rows_free(r, 1);
            }
        }
    }
    /* The random walk really went through every branch. */
    ck_assert_int_gt(admitted, 5);
    ck_assert_int_gt(refused, 0);
    ck_assert_int_gt(refunds, 0);
    ck_assert_int_gt(deletions, 0);
    pg_ledger_cache_stats st;
    pg_ledger_cache_get_stats(pg_db_ledger_cache(h[1]), &st);
    ck_assert_uint_le(st.entries, 3);
    ck_assert_uint_gt(st.evictions, 0);
    pg_ledger_cache_get_stats(pg_db_ledger_cache(h[2]), &st);
    ck_assert_uint_gt(st.hits, 0);
    for (int k = 0; k < H; k++) pg_db_close(h[k]);
}
END_TEST

START_TEST(refunded_rows_are_excluded_through_the_cache)
{
    pg_db *db = open_slots(0);
    pg_test_dataset(db, tenant, ds, 2);
    pg_privacy_plan p[3] = {sgm_plan(0.01, 1.0, 100), sgm_plan(0.02, 1.5, 80),
                            sgm_plan(0.005, 0.9, 300)};
    char id[3][PG_ID_MAX];
    for (int i = 0; i < 3; i++) {
        pg_job_row row;
        pg_test_job_row(&row, tenant, ds, "job_");
        pg_ledger_quote q;
        ck_assert_int_eq(pg_db_job_admit(db, &row, &p[i], 100.0, CAP_DELTA, &q, NULL), PG_OK);
        ck_assert(q.admit);
        strcpy(id[i], row.id);
    }
    pg_ledger_curve c, want;
    ck_assert_int_eq(pg_ledger_spent(db, ds, &c, NULL), PG_OK); /* every row cached now */
    ck_assert_int_eq(c.entries, 3);
    int done;
    ck_assert_int_eq(pg_db_job_cancel_queued(db, id[1], &done, NULL), PG_OK);
    ck_assert(done);
    ck_assert_int_eq(pg_ledger_spent(db, ds, &c, NULL), PG_OK);
    /* Independently: rows 0 and 2 alone, from the plans themselves. */
    pg_ledger_curve_init(&want);
    pg_ledger_curve_add(&want, p[0].orders, p[0].rdp, (size_t)p[0].norders, p[0].delta_extra);
    pg_ledger_curve_add(&want, p[2].orders, p[2].rdp, (size_t)p[2].norders, p[2].delta_extra);
    assert_same_curve(&c, &want);
    /* The next admission's quote sees the refund too. */
    pg_ledger_quote dry, q;
    ck_assert_int_eq(pg_ledger_quote_plan(&want, &p[1], 100.0, CAP_DELTA, &dry, NULL), PG_OK);
    pg_job_row row;
    pg_test_job_row(&row, tenant, ds, "job_");
    ck_assert_int_eq(pg_db_job_admit(db, &row, &p[1], 100.0, CAP_DELTA, &q, NULL), PG_OK);
    assert_same_quote(&q, &dry);
    pg_db_close(db);
}
END_TEST

/* Rewrites a ledger row's stored text with plain SQL, outside privgen's
 * handles (as an operator or an attacker with database access could). */
static void tamper(const char *job_id, const char *text)
{
    if (!strncmp(pg_test_db_url, "sqlite:", 7)) {
        sqlite3 *h;
        ck_assert_int_eq(sqlite3_open(pg_test_db_url + 7, &h), SQLITE_OK);
        sqlite3_busy_timeout(h, 5000);
        sqlite3_stmt *st;
        ck_assert_int_eq(
            sqlite3_prepare_v2(h, "UPDATE ledger SET rdp=? WHERE job_id=?", -1, &st, NULL),
            SQLITE_OK);
        sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, job_id, -1, SQLITE_STATIC);
        ck_assert_int_eq(sqlite3_step(st), SQLITE_DONE);
        ck_assert_int_eq(sqlite3_changes(h), 1);
        sqlite3_finalize(st);
        sqlite3_close(h);
        return;
    }
    PGconn *c = PQconnectdb(pg_test_db_url);
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "%s", PQerrorMessage(c));
    const char *v[2] = {text, job_id};
    PGresult *r =
        PQexecParams(c, "UPDATE ledger SET rdp = $1 WHERE job_id = $2", 2, NULL, v, NULL, NULL, 0);
    ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK, "%s", PQerrorMessage(c));
    ck_assert_str_eq(PQcmdTuples(r), "1");
    PQclear(r);
    PQfinish(c);
}

static int admit_on(pg_db *db, const pg_privacy_plan *p, double cap, char *id, pg_ledger_quote *q)
{
    pg_job_row row;
    pg_test_job_row(&row, tenant, ds, "job_");
    if (id) strcpy(id, row.id);
    return pg_db_job_admit(db, &row, p, cap, CAP_DELTA, q, NULL);
}

START_TEST(a_row_rewritten_in_the_database_is_decoded_again)
{
    pg_db *db = open_slots(0), *plain = open_slots(-1);
    pg_test_dataset(db, tenant, ds, 2);
    pg_privacy_plan small = sgm_plan(0.01, 2.0, 50), big = sgm_plan(0.05, 1.0, 400);
    char id[2][PG_ID_MAX];
    pg_ledger_quote q;
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(admit_on(db, &small, 1000.0, id[i], &q), PG_OK);
        ck_assert(q.admit);
    }
    pg_ledger_curve before, after, brute;
    ck_assert_int_eq(pg_ledger_spent(db, ds, &before, NULL), PG_OK); /* both rows cached */
    pg_ledger_cache_stats st0, st1;
    pg_ledger_cache_get_stats(pg_db_ledger_cache(db), &st0);
    /* A larger charge written over row 0: the cache must not keep the old
     * decode (which would under-count). */
    char *tb = pg_ledger_plan_encode(&big);
    tamper(id[0], tb);
    ck_assert_int_eq(pg_ledger_spent(db, ds, &after, NULL), PG_OK);
    ck_assert_int_eq(pg_ledger_spent(plain, ds, &brute, NULL), PG_OK);
    assert_same_curve(&after, &brute);
    ck_assert(after.rdp[10] > before.rdp[10]);
    pg_ledger_cache_get_stats(pg_db_ledger_cache(db), &st1);
    ck_assert_uint_eq(st1.misses, st0.misses + 1); /* row 0 decoded again, row 1 a hit */
    ck_assert_uint_eq(st1.hits, st0.hits + 1);
    /* The admission through the cached handle quotes the rewritten spend. */
    pg_ledger_quote dry, q2;
    ck_assert_int_eq(pg_ledger_quote_plan(&brute, &small, 1000.0, CAP_DELTA, &dry, NULL), PG_OK);
    ck_assert_int_eq(admit_on(db, &small, 1000.0, NULL, &q2), PG_OK);
    assert_same_quote(&q2, &dry);
    /* Rewritten to garbage: an infinite spend, refused, through the cache
     * as without it. */
    tamper(id[1], "{\"orders\":[2,3],\"rdp\":[0.1]}");
    ck_assert_int_eq(admit_on(db, &small, 1000.0, NULL, &q2), PG_OK);
    ck_assert_int_eq(q2.admit, 0);
    ck_assert(isinf(q2.spent_epsilon));
    ck_assert_int_eq(admit_on(plain, &small, 1000.0, NULL, &q), PG_OK);
    assert_same_quote(&q2, &q);
    free(tb);
    pg_db_close(plain);
    pg_db_close(db);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ledger_cache");
    TCase *unit = tcase_create("unit");
    tcase_add_test(unit, cached_rows_add_exactly_what_decoding_adds);
    tcase_add_test(unit, a_rewritten_text_is_decoded_again);
    tcase_add_test(unit, a_malformed_row_still_refuses);
    tcase_add_test(unit, the_bound_is_kept);
    suite_add_tcase(s, unit);
    TCase *db = tcase_create("storage");
    tcase_add_checked_fixture(db, setup, teardown);
    tcase_set_timeout(db, 120);
    tcase_add_loop_test(db, admissions_agree_with_and_without_the_cache, 0, 3);
    tcase_add_test(db, refunded_rows_are_excluded_through_the_cache);
    tcase_add_test(db, a_row_rewritten_in_the_database_is_decoded_again);
    suite_add_tcase(s, db);
    return s;
}

PG_TEST_MAIN(suite)
