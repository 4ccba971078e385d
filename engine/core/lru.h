/* engine/core/lru.h - an intrusive least-recently-used list with a cost
 * total: the recency order and the bounds check that every bounded cache in
 * privgen shares (api/body_cache.c: encoded samples bodies, service/
 * snapcache.c: snapshots rebuilt from checkpoints). It sits in engine/core,
 * the one layer both the api and the service include, and knows nothing of
 * what it orders.
 *
 * A cache embeds a pg_lru_node in its entry and keeps its own key lookup,
 * lock and release of entries: the list never allocates, never frees and
 * never locks (the caller's lock covers it). Each node carries the cost it
 * was pushed with (bytes, say); the list keeps the count and the cost total
 * of the nodes on it. A node is on at most one list at a time.
 */
#ifndef PG_CORE_LRU_H
#define PG_CORE_LRU_H

#include <stddef.h>

typedef struct pg_lru_node {
    struct pg_lru_node *newer, *older; /* NULL at the ends */
    size_t cost;
} pg_lru_node;

typedef struct pg_lru {
    pg_lru_node *newest, *oldest;
    size_t count, cost; /* nodes on the list, sum of their costs */
} pg_lru;

/* The entry of type `type` whose member `member` is the node n. */
#define PG_LRU_ENTRY(n, type, member) ((type *)(void *)((char *)(n)-offsetof(type, member)))

/* An empty list (a zeroed pg_lru is one too). */
void pg_lru_init(pg_lru *l);
/* Puts n (not on any list) first, as the most recently used, at `cost`. */
void pg_lru_push(pg_lru *l, pg_lru_node *n, size_t cost);
/* Moves n (on l) to the front: it was just used. */
void pg_lru_touch(pg_lru *l, pg_lru_node *n);
/* Takes n (on l) off the list, with its cost. */
void pg_lru_remove(pg_lru *l, pg_lru_node *n);
/* The least recently used node when the list holds more than max_count
 * nodes or costs more than max_cost in total, else NULL: what a cache
 * evicts next (remove it, release the entry, ask again). */
pg_lru_node *pg_lru_victim(const pg_lru *l, size_t max_count, size_t max_cost);

#endif
