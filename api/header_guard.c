#include "api/header_guard.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

enum { WAITING = 1, BUSY, CUT };

typedef struct entry {
    int fd, state;
    double since; /* monotonic seconds the wait began */
    struct entry *prev, *next;
} entry;

struct pg_header_guard {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int stop;
    size_t max_waiting, waiting;
    double timeout_s;
    entry *head, *tail; /* waiting connections, oldest first */
    unsigned long long timed_out, evicted;
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void unlink_entry(pg_header_guard *g, entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        g->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        g->tail = e->prev;
    e->prev = e->next = NULL;
    g->waiting--;
}

/* Appends e as the newest waiter (since = now keeps the list in order). */
static void push(pg_header_guard *g, entry *e, double now)
{
    e->state = WAITING;
    e->since = now;
    e->prev = g->tail;
    e->next = NULL;
    if (g->tail)
        g->tail->next = e;
    else
        g->head = e;
    g->tail = e;
    g->waiting++;
}

/* Under g->mu, so the connection cannot have been reported closed (and its
 * descriptor reused): libmicrohttpd reports the close before closing. */
static void cut(pg_header_guard *g, entry *e)
{
    unlink_entry(g, e);
    e->state = CUT;
    shutdown(e->fd, SHUT_RDWR);
}

static void keep_reserve(pg_header_guard *g)
{
    while (g->waiting > g->max_waiting && g->head) {
        cut(g, g->head);
        g->evicted++;
    }
}

static void *watchdog(void *arg)
{
    pg_header_guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        double now = mono();
        while (g->head && now - g->head->since >= g->timeout_s) {
            cut(g, g->head);
            g->timed_out++;
        }
        /* Sleep until the oldest waiter's deadline (at most a second, so a
         * clock step or a missed signal costs little). */
        double wait = g->head ? g->head->since + g->timeout_s - now : 1.0;
        if (wait > 1.0) wait = 1.0;
        if (wait < 0.01) wait = 0.01;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        long ns = ts.tv_nsec + (long)(wait * 1e9);
        ts.tv_sec += ns / 1000000000L;
        ts.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

pg_header_guard *pg_header_guard_create(size_t max_waiting, double timeout_s)
{
    pg_header_guard *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->max_waiting = max_waiting ? max_waiting : 1;
    g->timeout_s = timeout_s;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&g->mu, NULL);
    if (pthread_create(&g->thread, NULL, watchdog, g)) {
        pthread_cond_destroy(&g->cv);
        pthread_mutex_destroy(&g->mu);
        free(g);
        return NULL;
    }
    return g;
}

void pg_header_guard_free(pg_header_guard *g)
{
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    /* Entries left belong to connections the stopped daemon closed
     * without reporting (none in practice); free what is still listed. */
    for (entry *e = g->head, *n; e; e = n) {
        n = e->next;
        free(e);
    }
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

void pg_header_guard_started(pg_header_guard *g, int fd, void **ctx)
{
    *ctx = NULL;
    if (!g) return;
    entry *e = calloc(1, sizeof *e);
    if (!e) return; /* untracked: bounded by the idle timeout only */
    e->fd = fd;
    pthread_mutex_lock(&g->mu);
    push(g, e, mono());
    keep_reserve(g);
    pthread_mutex_unlock(&g->mu);
    *ctx = e;
}

void pg_header_guard_request(pg_header_guard *g, void *ctx)
{
    entry *e = ctx;
    if (!g || !e) return;
    pthread_mutex_lock(&g->mu);
    if (e->state == WAITING) {
        unlink_entry(g, e);
        e->state = BUSY;
    }
    pthread_mutex_unlock(&g->mu);
}

void pg_header_guard_finished(pg_header_guard *g, void *ctx)
{
    entry *e = ctx;
    if (!g || !e) return;
    pthread_mutex_lock(&g->mu);
    if (e->state == BUSY) {
        push(g, e, mono());
        keep_reserve(g);
        pthread_cond_signal(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
}

void pg_header_guard_closed(pg_header_guard *g, void **ctx)
{
    entry *e = *ctx;
    *ctx = NULL;
    if (!g || !e) return;
    pthread_mutex_lock(&g->mu);
    if (e->state == WAITING) unlink_entry(g, e);
    pthread_mutex_unlock(&g->mu);
    free(e);
}

void pg_header_guard_stats(pg_header_guard *g, unsigned long long *timed_out,
                           unsigned long long *evicted)
{
    *timed_out = *evicted = 0;
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    *timed_out = g->timed_out;
    *evicted = g->evicted;
    pthread_mutex_unlock(&g->mu);
}
