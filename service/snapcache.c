/* service/snapcache.c - bounded LRU of snapshots (see snapcache.h). A hash
 * of keys to entries, a recency list of the loaded ones (engine/core/lru.h),
 * one mutex and one condition variable that wakes the waiters of any load. */
#include "service/snapcache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/lru.h"

#define KEY_MAX  64
#define NBUCKETS 256

typedef struct entry {
    char key[KEY_MAX];
    int64_t step;
    pg_snapshot *snap;   /* NULL while loading */
    int loading, dead;   /* dead: evicted while loading, not kept */
    struct entry *hnext; /* bucket chain */
    pg_lru_node lru;     /* loaded entries only; cost: their bytes */
} entry;

struct pg_snapcache {
    pthread_mutex_t mu;
    pthread_cond_t loaded;
    size_t cap, entries; /* entries: loading ones too */
    entry *buckets[NBUCKETS];
    pg_lru lru; /* the loaded entries; cost: the bytes charged */
    uint64_t hits, misses, evictions, dropped;
};

static unsigned bucket(const char *key)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) h = (h ^ *p) * 16777619u;
    return h % NBUCKETS;
}

static entry *lookup(pg_snapcache *c, const char *key)
{
    for (entry *e = c->buckets[bucket(key)]; e; e = e->hnext)
        if (!strcmp(e->key, key)) return e;
    return NULL;
}

/* Unhooks e from the hash (and the list when loaded) and frees it. */
static void drop(pg_snapcache *c, entry *e)
{
    entry **pp = &c->buckets[bucket(e->key)];
    while (*pp && *pp != e) pp = &(*pp)->hnext;
    if (*pp) *pp = e->hnext;
    if (!e->loading) pg_lru_remove(&c->lru, &e->lru);
    c->entries--;
    if (e->snap) pg_snapshot_release(e->snap);
    free(e);
}

int pg_snapcache_create(size_t cap_bytes, pg_snapcache **out, pg_error *err)
{
    pg_snapcache *c = calloc(1, sizeof *c);
    if (!c) return pg_error_set(err, PG_ENOMEM, "out of memory creating the snapshot cache");
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->loaded, NULL);
    c->cap = cap_bytes;
    *out = c;
    return PG_OK;
}

void pg_snapcache_destroy(pg_snapcache *c)
{
    if (!c) return;
    for (int b = 0; b < NBUCKETS; b++)
        while (c->buckets[b]) drop(c, c->buckets[b]);
    pthread_cond_destroy(&c->loaded);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int pg_snapcache_get(pg_snapcache *c, const char *key, int64_t step, pg_snapcache_load_fn load,
                     void *ctx, pg_snapshot **out, pg_error *err)
{
    *out = NULL;
    if (!key || !*key || strlen(key) >= KEY_MAX)
        return pg_error_set(err, PG_EINVAL, "invalid snapshot cache key");
    pthread_mutex_lock(&c->mu);
    entry *e;
    while ((e = lookup(c, key)) && e->loading) pthread_cond_wait(&c->loaded, &c->mu);
    if (e && e->step == step) {
        c->hits++;
        pg_lru_touch(&c->lru, &e->lru);
        pg_snapshot_retain(e->snap);
        *out = e->snap;
        pthread_mutex_unlock(&c->mu);
        return PG_OK;
    }
    c->misses++;
    /* An older step than the entry's is served but not kept. */
    int keep = !e || e->step < step;
    entry *ph = NULL;
    if (keep) {
        ph = calloc(1, sizeof *ph);
        if (!ph) {
            pthread_mutex_unlock(&c->mu);
            return pg_error_set(err, PG_ENOMEM, "out of memory in the snapshot cache");
        }
        snprintf(ph->key, sizeof ph->key, "%s", key);
        ph->step = step;
        ph->loading = 1;
        if (e) {
            c->dropped++;
            drop(c, e);
        }
        unsigned b = bucket(key);
        ph->hnext = c->buckets[b];
        c->buckets[b] = ph;
        c->entries++;
    }
    pthread_mutex_unlock(&c->mu);

    pg_snapshot *snap = NULL;
    size_t bytes = 0;
    int rc = load(ctx, &snap, &bytes, err);

    pthread_mutex_lock(&c->mu);
    if (ph) {
        if (rc || ph->dead || bytes > c->cap) {
            drop(c, ph); /* loading: not on the list, no bytes counted */
        } else {
            ph->loading = 0;
            ph->snap = snap;
            pg_snapshot_retain(snap);
            pg_lru_push(&c->lru, &ph->lru, bytes);
            /* ph alone fits (bytes <= cap): it is never the victim. */
            for (pg_lru_node *v; (v = pg_lru_victim(&c->lru, SIZE_MAX, c->cap));) {
                c->evictions++;
                drop(c, PG_LRU_ENTRY(v, entry, lru));
            }
        }
        pthread_cond_broadcast(&c->loaded);
    }
    pthread_mutex_unlock(&c->mu);
    if (rc) return rc;
    *out = snap;
    return PG_OK;
}

void pg_snapcache_evict(pg_snapcache *c, const char *key)
{
    if (!c || !key) return;
    pthread_mutex_lock(&c->mu);
    entry *e = lookup(c, key);
    if (e && e->loading) {
        e->dead = 1;
    } else if (e) {
        c->dropped++;
        drop(c, e);
    }
    pthread_mutex_unlock(&c->mu);
}

void pg_snapcache_stats_get(pg_snapcache *c, pg_snapcache_stats *s)
{
    memset(s, 0, sizeof *s);
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    s->hits = c->hits;
    s->misses = c->misses;
    s->evictions = c->evictions;
    s->dropped = c->dropped;
    s->bytes = c->lru.cost;
    s->entries = c->entries;
    s->cap = c->cap;
    pthread_mutex_unlock(&c->mu);
}
