#include "api/upload_gate.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "service/store/db.h"

/* One entry per token with uploads in flight: at most max_total of them, so
 * a linear scan of a small array beats a hash table here. */
typedef struct slot {
    char token[PG_ID_MAX];
    size_t n; /* 0: free entry */
} slot;

struct pg_upload_gate {
    pthread_mutex_t mu;
    size_t max_total, max_per_token, in_flight;
    uint64_t refused_full, refused_token, cut_slow;
    slot *slots; /* max_total entries */
};

pg_upload_gate *pg_upload_gate_create(size_t max_total, size_t max_per_token)
{
    if (!max_total || !max_per_token) return NULL;
    pg_upload_gate *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->slots = calloc(max_total, sizeof *g->slots);
    if (!g->slots) {
        free(g);
        return NULL;
    }
    pthread_mutex_init(&g->mu, NULL);
    g->max_total = max_total;
    g->max_per_token = max_per_token;
    return g;
}

void pg_upload_gate_free(pg_upload_gate *g)
{
    if (!g) return;
    pthread_mutex_destroy(&g->mu);
    free(g->slots);
    free(g);
}

static slot *find(pg_upload_gate *g, const char *token)
{
    for (size_t i = 0; i < g->max_total; i++)
        if (g->slots[i].n && !strcmp(g->slots[i].token, token)) return &g->slots[i];
    return NULL;
}

int pg_upload_gate_enter(pg_upload_gate *g, const char *token)
{
    int rc = PG_UPLOAD_OK;
    pthread_mutex_lock(&g->mu);
    slot *s = find(g, token);
    if (g->in_flight >= g->max_total) {
        rc = PG_UPLOAD_FULL;
        g->refused_full++;
    } else if (s && s->n >= g->max_per_token) {
        rc = PG_UPLOAD_TOKEN_FULL;
        g->refused_token++;
    } else {
        /* in_flight < max_total, so a free entry exists when s is NULL. */
        for (size_t i = 0; !s && i < g->max_total; i++)
            if (!g->slots[i].n) {
                s = &g->slots[i];
                strncpy(s->token, token, sizeof s->token - 1);
                s->token[sizeof s->token - 1] = '\0';
            }
        s->n++;
        g->in_flight++;
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

void pg_upload_gate_leave(pg_upload_gate *g, const char *token)
{
    pthread_mutex_lock(&g->mu);
    slot *s = find(g, token);
    if (s) {
        s->n--;
        g->in_flight--;
    }
    pthread_mutex_unlock(&g->mu);
}

void pg_upload_gate_count_cut(pg_upload_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->cut_slow++;
    pthread_mutex_unlock(&g->mu);
}

void pg_upload_gate_stats_get(pg_upload_gate *g, pg_upload_gate_stats *out)
{
    pthread_mutex_lock(&g->mu);
    *out = (pg_upload_gate_stats){g->in_flight,    g->max_total,     g->max_per_token,
                                  g->refused_full, g->refused_token, g->cut_slow};
    pthread_mutex_unlock(&g->mu);
}
