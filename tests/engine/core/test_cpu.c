#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "engine/core/cpu.h"
#include "support/pg_test.h"

static pg_cpu_stats stats(pg_cpu_budget *b)
{
    pg_cpu_stats s;
    pg_cpu_budget_stats(b, &s);
    return s;
}

/* Yields until the budget shows `waiting` blocked acquisitions: a wait on a
 * state, not on a duration, so the outcome cannot depend on the load. */
static void until_waiting(pg_cpu_budget *b, int waiting)
{
    while (stats(b).waiting != waiting) sched_yield();
}

START_TEST(alone_gets_every_core)
{
    pg_cpu_budget *b;
    ck_assert_int_eq(pg_cpu_budget_create(4, &b, NULL), PG_OK);
    ck_assert_int_eq(pg_cpu_budget_cores(b), 4);
    pg_cpu_share s;
    pg_cpu_join(b, false, &s);
    ck_assert_int_eq(pg_cpu_acquire(&s, 0), 4);
    ck_assert_int_eq(stats(b).in_use, 4);
    /* re-acquiring first gives back what is held: nothing leaks */
    ck_assert_int_eq(pg_cpu_acquire(&s, 3), 3);
    ck_assert_int_eq(stats(b).in_use, 3);
    ck_assert_int_eq(pg_cpu_acquire(&s, 99), 4);
    pg_cpu_release(&s);
    ck_assert_int_eq(stats(b).in_use, 0);
    pg_cpu_release(&s); /* releasing nothing is a no-op */
    ck_assert_int_eq(stats(b).in_use, 0);
    pg_cpu_leave(&s);
    ck_assert_int_eq(stats(b).users, 0);
    pg_cpu_budget_destroy(b);

    /* the machine's cores by default */
    ck_assert_int_eq(pg_cpu_budget_create(0, &b, NULL), PG_OK);
    ck_assert_int_ge(pg_cpu_budget_cores(b), 1);
    pg_cpu_budget_destroy(b);
}
END_TEST

START_TEST(null_budget_grants_what_is_asked)
{
    pg_cpu_share s;
    pg_cpu_join(NULL, false, &s);
    ck_assert_int_eq(pg_cpu_acquire(&s, 3), 3);
    ck_assert_int_eq(pg_cpu_acquire(&s, 0), 1);
    pg_cpu_leave(&s);
    ck_assert_int_eq(pg_cpu_budget_cores(NULL), 1);
    pg_cpu_share never = {0};
    pg_cpu_leave(&never); /* a share that never joined: no-op */
}
END_TEST

/* Joined users split the cores evenly, and the split follows who is joined
 * at each acquisition. */
START_TEST(grants_follow_the_users)
{
    pg_cpu_budget *b;
    ck_assert_int_eq(pg_cpu_budget_create(4, &b, NULL), PG_OK);
    pg_cpu_share a, c, d;
    pg_cpu_join(b, false, &a);
    ck_assert_int_eq(pg_cpu_acquire(&a, 0), 4);
    pg_cpu_release(&a);
    pg_cpu_join(b, false, &c);
    ck_assert_int_eq(pg_cpu_acquire(&a, 0), 2);
    ck_assert_int_eq(pg_cpu_acquire(&c, 0), 2);
    ck_assert_int_eq(stats(b).in_use, 4);
    pg_cpu_release(&a);
    pg_cpu_release(&c);
    pg_cpu_join(b, false, &d);
    ck_assert_int_eq(pg_cpu_acquire(&a, 0), 1); /* 4 / 3 */
    ck_assert_int_eq(pg_cpu_acquire(&c, 0), 1);
    ck_assert_int_eq(pg_cpu_acquire(&d, 0), 1);
    pg_cpu_release(&a);
    pg_cpu_release(&c);
    pg_cpu_release(&d);
    pg_cpu_leave(&c);
    pg_cpu_leave(&d);
    ck_assert_int_eq(pg_cpu_acquire(&a, 0), 4); /* alone again */
    /* a grant never exceeds the free cores, even under the fair share */
    pg_cpu_join(b, false, &c);
    ck_assert_int_eq(pg_cpu_acquire(&a, 0), 2);
    ck_assert_int_eq(pg_cpu_acquire(&a, 1), 1);
    ck_assert_int_eq(pg_cpu_acquire(&c, 0), 2);
    pg_cpu_leave(&a);
    pg_cpu_leave(&c);
    ck_assert_int_eq(stats(b).in_use, 0);
    ck_assert_int_eq(stats(b).users, 0);
    pg_cpu_budget_destroy(b);
}
END_TEST

/* Leaving releases what is held: an error path that only leaves loses no
 * core, and an acquisition by a share that never joined still counts. */
START_TEST(leave_releases)
{
    pg_cpu_budget *b;
    ck_assert_int_eq(pg_cpu_budget_create(2, &b, NULL), PG_OK);
    pg_cpu_share s;
    pg_cpu_join(b, false, &s);
    ck_assert_int_eq(pg_cpu_acquire(&s, 0), 2);
    pg_cpu_leave(&s);
    ck_assert_int_eq(stats(b).in_use, 0);
    ck_assert_int_eq(stats(b).users, 0);
    pg_cpu_share bare = {.b = b};
    ck_assert_int_eq(pg_cpu_acquire(&bare, 1), 1);
    ck_assert_int_eq(stats(b).users, 1);
    pg_cpu_leave(&bare);
    ck_assert_int_eq(stats(b).users, 0);
    ck_assert_int_eq(stats(b).in_use, 0);
    pg_cpu_budget_destroy(b);
}
END_TEST

typedef struct {
    pg_cpu_budget *b;
    int got;
    atomic_int *done;
} waiter;

static void *wait_one(void *arg)
{
    waiter *w = arg;
    pg_cpu_share s;
    pg_cpu_join(w->b, false, &s);
    w->got = pg_cpu_acquire(&s, 0);
    atomic_store(w->done, 1);
    pg_cpu_leave(&s);
    return NULL;
}

/* With every core taken a job's acquisition blocks until a core is free;
 * an urgent (sampling) call never waits: it gets its own thread at once,
 * its core counts as used, and the job waits for it too. */
START_TEST(jobs_block_when_full_and_urgent_never_waits)
{
    pg_cpu_budget *b;
    ck_assert_int_eq(pg_cpu_budget_create(1, &b, NULL), PG_OK);
    pg_cpu_share holder, req;
    pg_cpu_join(b, false, &holder);
    ck_assert_int_eq(pg_cpu_acquire(&holder, 0), 1);
    pg_cpu_join(b, true, &req);
    ck_assert_int_eq(stats(b).users, 1); /* urgent calls do not split the cores */
    ck_assert_int_eq(pg_cpu_acquire(&req, 0), 1);
    ck_assert_int_eq(stats(b).in_use, 2);
    ck_assert_int_eq(stats(b).waiting, 0);
    atomic_int done = 0;
    waiter job = {.b = b, .done = &done};
    pthread_t tj;
    ck_assert_int_eq(pthread_create(&tj, NULL, wait_one, &job), 0);
    until_waiting(b, 1);
    pg_cpu_release(&holder); /* the request still holds the only core */
    ck_assert_int_eq(stats(b).in_use, 1);
    ck_assert_int_eq(stats(b).waiting, 1);
    ck_assert_int_eq(atomic_load(&done), 0);
    pg_cpu_leave(&req);
    pthread_join(tj, NULL);
    ck_assert_int_eq(job.got, 1);
    /* with a free core an urgent call takes it, and no more than is free
     * (shares leave before their budget is destroyed: a share must not
     * outlive it) */
    pg_cpu_leave(&holder);
    pg_cpu_budget_destroy(b);
    ck_assert_int_eq(pg_cpu_budget_create(4, &b, NULL), PG_OK);
    pg_cpu_join(b, false, &holder);
    ck_assert_int_eq(pg_cpu_acquire(&holder, 3), 3);
    pg_cpu_join(b, true, &req);
    ck_assert_int_eq(pg_cpu_acquire(&req, 0), 1);
    pg_cpu_release(&holder);
    ck_assert_int_eq(pg_cpu_acquire(&holder, 0), 3); /* alone: all but the request's */
    pg_cpu_leave(&req);
    pg_cpu_leave(&holder);
    pg_cpu_stats st = stats(b);
    ck_assert_int_eq(st.in_use, 0);
    ck_assert_int_eq(st.users, 0);
    pg_cpu_budget_destroy(b);
}
END_TEST

enum { HAMMER_THREADS = 8, HAMMER_ROUNDS = 3000, HAMMER_CORES = 3 };

typedef struct {
    pg_cpu_budget *b;
    atomic_int *teams, *all, *urgent, *peak, *bad;
    int id;
} hammer_arg;

/* Many users acquire and release at random sizes, a quarter of them
 * urgent; every grant is added to shared in-flight counts while held. The
 * jobs' grants must never pass the cores, and everything in flight never
 * more than the cores plus one thread per urgent call. */
static void *hammer(void *arg)
{
    hammer_arg *h = arg;
    uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(h->id + 1);
    for (int r = 0; r < HAMMER_ROUNDS; r++) {
        pg_cpu_share s;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        bool urgent = (x & 3) == 0;
        pg_cpu_join(h->b, urgent, &s);
        int want = (int)((x >> 32) % (HAMMER_CORES + 2)); /* 0 (= all) .. cores+1 */
        int got = pg_cpu_acquire(&s, want);
        int lim = want <= 0 || want > HAMMER_CORES ? HAMMER_CORES : want;
        if (got < 1 || got > lim) atomic_fetch_add(h->bad, 1);
        int u = urgent ? atomic_fetch_add(h->urgent, 1) + 1 : atomic_load(h->urgent);
        int t = urgent ? atomic_load(h->teams) : atomic_fetch_add(h->teams, got) + got;
        int all = atomic_fetch_add(h->all, got) + got;
        int p = atomic_load(h->peak);
        while (t > p && !atomic_compare_exchange_weak(h->peak, &p, t)) {
        }
        if (t > HAMMER_CORES) atomic_fetch_add(h->bad, 1);
        if (all > HAMMER_CORES + u + (urgent ? 0 : atomic_load(h->urgent)))
            atomic_fetch_add(h->bad, 1);
        if (r % 7 == 0) sched_yield(); /* let others queue up */
        atomic_fetch_sub(h->all, got);
        if (urgent)
            atomic_fetch_sub(h->urgent, 1);
        else
            atomic_fetch_sub(h->teams, got);
        if (r & 1) pg_cpu_release(&s);
        /* else: leave releases (the error-path shape) */
        pg_cpu_leave(&s);
    }
    return NULL;
}

START_TEST(never_more_in_flight_than_cores)
{
    pg_cpu_budget *b;
    ck_assert_int_eq(pg_cpu_budget_create(HAMMER_CORES, &b, NULL), PG_OK);
    atomic_int teams = 0, all = 0, urgent = 0, peak = 0, bad = 0;
    pthread_t th[HAMMER_THREADS];
    hammer_arg args[HAMMER_THREADS];
    for (int i = 0; i < HAMMER_THREADS; i++) {
        args[i] = (hammer_arg){b, &teams, &all, &urgent, &peak, &bad, i};
        ck_assert_int_eq(pthread_create(&th[i], NULL, hammer, &args[i]), 0);
    }
    for (int i = 0; i < HAMMER_THREADS; i++) pthread_join(th[i], NULL);
    ck_assert_int_eq(atomic_load(&bad), 0);
    ck_assert_int_le(atomic_load(&peak), HAMMER_CORES);
    ck_assert_int_ge(atomic_load(&peak), 1);
    pg_cpu_stats st = stats(b);
    ck_assert_int_eq(st.in_use, 0);
    ck_assert_int_eq(st.users, 0);
    ck_assert_int_eq(st.waiting, 0);
    ck_assert_int_eq(st.grants, (long)HAMMER_THREADS * HAMMER_ROUNDS);
    pg_cpu_budget_destroy(b);
}
END_TEST

/* Cores other processes keep busy are not lent: on a 2-core box next to
 * one busy process a job alone runs one thread; never below one core, and
 * the full budget comes back when the load goes. The budget spans the
 * machine here (cores 0), so the expectations hold on any core count. */
START_TEST(foreign_load_shrinks_the_grants)
{
    pg_cpu_budget *b;
    ck_assert_int_eq(pg_cpu_budget_create(0, &b, NULL), PG_OK);
    int n = pg_cpu_budget_cores(b);
    pg_cpu_share s;
    pg_cpu_join(b, false, &s);
    pg_cpu_budget_set_external(b, 1.0);
    ck_assert_int_eq(stats(b).lendable, n > 1 ? n - 1 : 1);
    ck_assert_int_eq(pg_cpu_acquire(&s, 0), n > 1 ? n - 1 : 1);
    pg_cpu_budget_set_external(b, 0.4); /* under half a core: not a core */
    ck_assert_int_eq(pg_cpu_acquire(&s, 0), n);
    pg_cpu_budget_set_external(b, (double)n + 3);
    ck_assert_int_eq(stats(b).lendable, 1);
    ck_assert_int_eq(pg_cpu_acquire(&s, 0), 1);
    pg_cpu_budget_set_external(b, 0.0);
    ck_assert_int_eq(pg_cpu_acquire(&s, 0), n);
    /* following the real load: whatever it is, the grant stays in 1..n */
    pg_cpu_budget_set_external(b, -1);
    pg_cpu_budget_follow_load(b, true);
    for (int i = 0; i < 3; i++) {
        int g = pg_cpu_acquire(&s, 0);
        ck_assert_int_ge(g, 1);
        ck_assert_int_le(g, n);
        ck_assert_int_ge(stats(b).lendable, 1);
    }
    pg_cpu_leave(&s);
    pg_cpu_budget_destroy(b);

    /* a budget smaller than the machine loses cores only to the load the
     * rest of the machine cannot absorb: 2 cores of n */
    if (n >= 2) {
        ck_assert_int_eq(pg_cpu_budget_create(2, &b, NULL), PG_OK);
        pg_cpu_budget_set_external(b, (double)n - 2);
        ck_assert_int_eq(stats(b).lendable, 2);
        pg_cpu_budget_set_external(b, (double)n - 1);
        ck_assert_int_eq(stats(b).lendable, 1);
        pg_cpu_budget_destroy(b);
    }
}
END_TEST

START_TEST(use_sets_the_team_size)
{
    ck_assert_int_eq(pg_cpu_use(1), 1);
    ck_assert_int_eq(omp_get_max_threads(), 1);
    ck_assert_int_eq(pg_cpu_use(3), 3);
    ck_assert_int_eq(omp_get_max_threads(), 3);
    ck_assert_int_eq(pg_cpu_use(0), 1);
}
END_TEST

static Suite *cpu_suite(void)
{
    Suite *s = suite_create("core/cpu");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, alone_gets_every_core);
    tcase_add_test(tc, null_budget_grants_what_is_asked);
    tcase_add_test(tc, grants_follow_the_users);
    tcase_add_test(tc, leave_releases);
    tcase_add_test(tc, jobs_block_when_full_and_urgent_never_waits);
    tcase_add_test(tc, never_more_in_flight_than_cores);
    tcase_add_test(tc, foreign_load_shrinks_the_grants);
    tcase_add_test(tc, use_sets_the_team_size);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(cpu_suite)
