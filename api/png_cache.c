#include "api/png_cache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    struct entry *prev, *next; /* LRU list, most recent first */
    char *job, *variant;
    long step;
    int latest;
    char *body;
    size_t len;
} entry;

struct pg_png_cache {
    pthread_mutex_t mu;
    entry *head, *tail;
    size_t entries, bytes, max_bytes, max_entries;
};

pg_png_cache *pg_png_cache_create(size_t max_bytes, size_t max_entries)
{
    pg_png_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    pthread_mutex_init(&c->mu, NULL);
    c->max_bytes = max_bytes;
    c->max_entries = max_entries;
    return c;
}

static void unlink_entry(pg_png_cache *c, entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(pg_png_cache *c, entry *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head) c->head->prev = e;
    c->head = e;
    if (!c->tail) c->tail = e;
}

static void drop(pg_png_cache *c, entry *e)
{
    unlink_entry(c, e);
    c->entries--;
    c->bytes -= e->len;
    free(e->job);
    free(e->variant);
    free(e->body);
    free(e);
}

void pg_png_cache_free(pg_png_cache *c)
{
    if (!c) return;
    while (c->head) drop(c, c->head);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* The cache holds tens of entries: a list walk costs less than the PNG. */
static entry *find(pg_png_cache *c, const char *job, long step, const char *variant)
{
    for (entry *e = c->head; e; e = e->next)
        if (e->step == step && !strcmp(e->job, job) && !strcmp(e->variant, variant)) return e;
    return NULL;
}

int pg_png_cache_get(pg_png_cache *c, const char *job, long step, const char *variant, char **body,
                     size_t *len)
{
    *body = NULL;
    *len = 0;
    if (!c) return 0;
    pthread_mutex_lock(&c->mu);
    entry *e = find(c, job, step, variant);
    char *copy = e ? malloc(e->len ? e->len : 1) : NULL;
    if (copy) {
        memcpy(copy, e->body, e->len);
        *len = e->len;
        unlink_entry(c, e);
        push_front(c, e);
    }
    pthread_mutex_unlock(&c->mu);
    *body = copy;
    return copy != NULL;
}

void pg_png_cache_put(pg_png_cache *c, const char *job, long step, int latest, const char *variant,
                      const char *body, size_t len)
{
    if (!c || len > c->max_bytes || c->max_entries == 0) return;
    entry *e = calloc(1, sizeof *e);
    if (!e) return;
    e->job = strdup(job);
    e->variant = strdup(variant);
    e->body = malloc(len ? len : 1);
    if (!e->job || !e->variant || !e->body) {
        free(e->job);
        free(e->variant);
        free(e->body);
        free(e);
        return;
    }
    memcpy(e->body, body, len);
    e->len = len;
    e->step = step;
    e->latest = latest;
    pthread_mutex_lock(&c->mu);
    for (entry *o = c->head, *next; o; o = next) {
        next = o->next;
        int same = !strcmp(o->job, job);
        /* A plot of a newer newest-snapshot makes the older ones dead. */
        if (same && ((latest && o->latest && o->step != step) ||
                     (o->step == step && !strcmp(o->variant, variant))))
            drop(c, o);
    }
    push_front(c, e);
    c->entries++;
    c->bytes += len;
    while (c->tail && (c->bytes > c->max_bytes || c->entries > c->max_entries)) drop(c, c->tail);
    pthread_mutex_unlock(&c->mu);
}

void pg_png_cache_forget_job(pg_png_cache *c, const char *job)
{
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    for (entry *o = c->head, *next; o; o = next) {
        next = o->next;
        if (!strcmp(o->job, job)) drop(c, o);
    }
    pthread_mutex_unlock(&c->mu);
}

void pg_png_cache_stats(pg_png_cache *c, size_t *entries, size_t *bytes)
{
    *entries = *bytes = 0;
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    *entries = c->entries;
    *bytes = c->bytes;
    pthread_mutex_unlock(&c->mu);
}
