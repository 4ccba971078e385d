#include "engine/core/lru.h"

void pg_lru_init(pg_lru *l)
{
    l->newest = l->oldest = NULL;
    l->count = l->cost = 0;
}

void pg_lru_push(pg_lru *l, pg_lru_node *n, size_t cost)
{
    n->cost = cost;
    n->newer = NULL;
    n->older = l->newest;
    if (l->newest) l->newest->newer = n;
    l->newest = n;
    if (!l->oldest) l->oldest = n;
    l->count++;
    l->cost += cost;
}

void pg_lru_remove(pg_lru *l, pg_lru_node *n)
{
    if (n->newer)
        n->newer->older = n->older;
    else
        l->newest = n->older;
    if (n->older)
        n->older->newer = n->newer;
    else
        l->oldest = n->newer;
    n->newer = n->older = NULL;
    l->count--;
    l->cost -= n->cost;
}

void pg_lru_touch(pg_lru *l, pg_lru_node *n)
{
    if (l->newest == n) return;
    size_t cost = n->cost;
    pg_lru_remove(l, n);
    pg_lru_push(l, n, cost);
}

pg_lru_node *pg_lru_victim(const pg_lru *l, size_t max_count, size_t max_cost)
{
    return l->count > max_count || l->cost > max_cost ? l->oldest : NULL;
}
