/* engine/core/lru.h against a brute-force model: random pushes, touches and
 * removals on a few dozen entries keep the same recency order (walked both
 * ways), count and cost total as an array kept in use order, and the victim
 * is the least recently used entry exactly when a bound is exceeded. */
#include <stdbool.h>
#include <string.h>

#include "engine/core/lru.h"
#include "engine/core/rng.h"
#include "support/pg_test.h"

#define N 40

typedef struct item {
    int id;
    int on; /* on the list */
    pg_lru_node node;
} item;

/* The model: ids on the list, most recent first, and their costs. */
typedef struct model {
    int order[N];
    size_t n, cost;
    size_t costs[N];
} model;

static void model_remove(model *m, int id)
{
    size_t i = 0;
    while (m->order[i] != id) i++;
    memmove(m->order + i, m->order + i + 1, (m->n - i - 1) * sizeof *m->order);
    m->n--;
    m->cost -= m->costs[id];
}

static void model_push(model *m, int id, size_t cost)
{
    memmove(m->order + 1, m->order, m->n * sizeof *m->order);
    m->order[0] = id;
    m->n++;
    m->costs[id] = cost;
    m->cost += cost;
}

/* Whether the list walks (newest to oldest, links both ways) as the model
 * says. One assertion per call: Check reports every assertion to its parent
 * process, which would dominate a loop of thousands of steps. */
static bool same_as(const pg_lru *l, const model *m)
{
    if (l->count != m->n || l->cost != m->cost) return false;
    size_t i = 0;
    const pg_lru_node *prev = NULL;
    for (const pg_lru_node *n = l->newest; n; prev = n, n = n->older, i++)
        if (i >= m->n || PG_LRU_ENTRY(n, item, node)->id != m->order[i] || n->newer != prev ||
            n->cost != m->costs[m->order[i]])
            return false;
    return i == m->n && l->oldest == prev;
}

START_TEST(matches_a_brute_force_model)
{
    pg_rng r;
    pg_rng_seeded(&r, 17, (uint64_t)_i);
    item items[N];
    pg_lru l;
    pg_lru_init(&l);
    model m = {0};
    for (int i = 0; i < N; i++) items[i] = (item){.id = i};
    for (int step = 0; step < 5000; step++) {
        int id = (int)pg_rng_below(&r, N);
        item *it = &items[id];
        int op = (int)pg_rng_below(&r, 3);
        if (!it->on) {
            size_t cost = (size_t)pg_rng_below(&r, 1000);
            pg_lru_push(&l, &it->node, cost);
            model_push(&m, id, cost);
            it->on = 1;
        } else if (op == 0) {
            pg_lru_remove(&l, &it->node);
            if (it->node.newer || it->node.older) ck_abort_msg("a removed node keeps links");
            model_remove(&m, id);
            it->on = 0;
        } else {
            pg_lru_touch(&l, &it->node);
            size_t cost = m.costs[id];
            model_remove(&m, id);
            model_push(&m, id, cost);
        }
        if (!same_as(&l, &m)) ck_abort_msg("list and model differ after step %d", step);
        /* The victim: the oldest exactly when a bound is exceeded. */
        size_t max_count = (size_t)pg_rng_below(&r, N + 1);
        size_t max_cost = (size_t)pg_rng_below(&r, 20000);
        const pg_lru_node *v = pg_lru_victim(&l, max_count, max_cost);
        bool over = m.n > max_count || m.cost > max_cost;
        if (over ? !v || PG_LRU_ENTRY(v, item, node)->id != m.order[m.n - 1] : v != NULL)
            ck_abort_msg("wrong victim after step %d", step);
    }
}
END_TEST

/* Evicting until within bounds leaves the newest entries that fit, bounds
 * are inclusive, and an empty list has no victim even at zero bounds. */
START_TEST(evicting_keeps_the_newest)
{
    item items[5];
    pg_lru l = {0};
    ck_assert_ptr_null(pg_lru_victim(&l, 0, 0));
    for (int i = 0; i < 5; i++) {
        items[i] = (item){.id = i};
        pg_lru_push(&l, &items[i].node, 10);
    }
    pg_lru_touch(&l, &items[0].node); /* order now 0 4 3 2 1 */
    pg_lru_touch(&l, &items[0].node); /* touching the newest changes nothing */
    int evicted[5], ne = 0;
    for (pg_lru_node *v; (v = pg_lru_victim(&l, 4, 25));) {
        evicted[ne++] = PG_LRU_ENTRY(v, item, node)->id;
        pg_lru_remove(&l, v);
    }
    ck_assert_int_eq(ne, 3);
    ck_assert(evicted[0] == 1 && evicted[1] == 2 && evicted[2] == 3);
    ck_assert_uint_eq(l.count, 2);
    ck_assert_uint_eq(l.cost, 20);
    ck_assert_int_eq(PG_LRU_ENTRY(l.newest, item, node)->id, 0);
    ck_assert_int_eq(PG_LRU_ENTRY(l.oldest, item, node)->id, 4);
    /* The bounds are inclusive: exactly at both, nothing to evict. */
    ck_assert_ptr_null(pg_lru_victim(&l, 2, 20));
    ck_assert_ptr_eq(pg_lru_victim(&l, 1, 20), &items[4].node);
    ck_assert_ptr_eq(pg_lru_victim(&l, 2, 19), &items[4].node);
}
END_TEST

static Suite *lru_suite(void)
{
    Suite *s = suite_create("core/lru");
    TCase *tc = tcase_create("lru");
    tcase_add_loop_test(tc, matches_a_brute_force_model, 0, 4);
    tcase_add_test(tc, evicting_keeps_the_newest);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(lru_suite)
