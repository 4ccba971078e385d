#include "api/body_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/lru.h"

struct pg_body {
    atomic_size_t refs;
    size_t len;
    char *data;
};

pg_body *pg_body_wrap(char *data, size_t len)
{
    pg_body *b = malloc(sizeof *b);
    if (!b) {
        free(data);
        return NULL;
    }
    atomic_init(&b->refs, 1);
    b->len = len;
    b->data = data;
    return b;
}

const char *pg_body_data(const pg_body *b)
{
    return b->data;
}

size_t pg_body_len(const pg_body *b)
{
    return b->len;
}

void pg_body_retain(pg_body *b)
{
    atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
}

void pg_body_release(pg_body *b)
{
    if (!b || atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1) return;
    free(b->data);
    free(b);
}

typedef struct entry {
    pg_lru_node lru; /* cost: the body's length */
    uint64_t hash;   /* of (job, step, variant): compared first */
    char *job, *variant;
    long step;
    int latest;
    pg_body *body;
} entry;

struct pg_body_cache {
    pthread_mutex_t mu;
    pg_lru lru; /* every entry; count and cost: entries and bytes */
    size_t max_bytes, max_entries, max_body;
    unsigned long long hits, misses, evictions;
};

pg_body_cache *pg_body_cache_create(size_t max_bytes, size_t max_entries, size_t max_body)
{
    pg_body_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    pthread_mutex_init(&c->mu, NULL);
    c->max_bytes = max_bytes;
    c->max_entries = max_entries;
    c->max_body = max_body;
    return c;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * UINT64_C(0x100000001b3);
    return h;
}

static uint64_t key_hash(const char *job, long step, const char *variant)
{
    uint64_t h = fnv(UINT64_C(0xcbf29ce484222325), job, strlen(job) + 1);
    h = fnv(h, &step, sizeof step);
    return fnv(h, variant, strlen(variant));
}

static entry *entry_of(pg_lru_node *n)
{
    return n ? PG_LRU_ENTRY(n, entry, lru) : NULL;
}

static void drop(pg_body_cache *c, entry *e)
{
    pg_lru_remove(&c->lru, &e->lru);
    pg_body_release(e->body);
    free(e->job);
    free(e->variant);
    free(e);
}

void pg_body_cache_free(pg_body_cache *c)
{
    if (!c) return;
    while (c->lru.newest) drop(c, entry_of(c->lru.newest));
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* A few hundred entries at most, hash compared first: a list walk costs
 * far less than one forward pass. */
static entry *find(pg_body_cache *c, uint64_t h, const char *job, long step, const char *variant)
{
    for (entry *e = entry_of(c->lru.newest); e; e = entry_of(e->lru.older))
        if (e->hash == h && e->step == step && !strcmp(e->job, job) && !strcmp(e->variant, variant))
            return e;
    return NULL;
}

pg_body *pg_body_cache_get(pg_body_cache *c, const char *job, long step, const char *variant)
{
    if (!c) return NULL;
    uint64_t h = key_hash(job, step, variant);
    pthread_mutex_lock(&c->mu);
    entry *e = find(c, h, job, step, variant);
    pg_body *b = NULL;
    if (e) {
        b = e->body;
        pg_body_retain(b);
        pg_lru_touch(&c->lru, &e->lru);
        c->hits++;
    } else {
        c->misses++;
    }
    pthread_mutex_unlock(&c->mu);
    return b;
}

void pg_body_cache_put(pg_body_cache *c, const char *job, long step, int latest,
                       const char *variant, pg_body *b)
{
    if (!c || !b || b->len > c->max_body || b->len > c->max_bytes || c->max_entries == 0) return;
    entry *e = calloc(1, sizeof *e);
    if (!e) return;
    e->job = strdup(job);
    e->variant = strdup(variant);
    if (!e->job || !e->variant) {
        free(e->job);
        free(e->variant);
        free(e);
        return;
    }
    pg_body_retain(b);
    e->body = b;
    e->hash = key_hash(job, step, variant);
    e->step = step;
    e->latest = latest;
    pthread_mutex_lock(&c->mu);
    for (entry *o = entry_of(c->lru.newest), *next; o; o = next) {
        next = entry_of(o->lru.older);
        int same = !strcmp(o->job, job);
        /* A body of a newer newest-snapshot makes the older ones dead. */
        if (same && ((latest && o->latest && o->step != step) ||
                     (o->step == step && !strcmp(o->variant, variant))))
            drop(c, o);
    }
    pg_lru_push(&c->lru, &e->lru, b->len);
    for (pg_lru_node *v; (v = pg_lru_victim(&c->lru, c->max_entries, c->max_bytes));) {
        drop(c, entry_of(v));
        c->evictions++;
    }
    pthread_mutex_unlock(&c->mu);
}

void pg_body_cache_forget_job(pg_body_cache *c, const char *job)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    for (entry *o = entry_of(c->lru.newest), *next; o; o = next) {
        next = entry_of(o->lru.older);
        if (!strcmp(o->job, job)) drop(c, o);
    }
    pthread_mutex_unlock(&c->mu);
}

void pg_body_cache_stats_get(pg_body_cache *c, pg_body_cache_stats *s)
{
    memset(s, 0, sizeof *s);
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    s->hits = c->hits;
    s->misses = c->misses;
    s->evictions = c->evictions;
    s->entries = c->lru.count;
    s->bytes = c->lru.cost;
    s->max_bytes = c->max_bytes;
    s->max_entries = c->max_entries;
    s->max_body = c->max_body;
    pthread_mutex_unlock(&c->mu);
}
