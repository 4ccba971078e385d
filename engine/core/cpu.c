#include "engine/core/cpu.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct pg_cpu_budget {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int cores, in_use, users, waiting;
    int online;   /* the machine's cores (>= cores) */
    int lendable; /* min(cores, online less the foreign load), >= 1 */
    long grants, waits;
    bool follow;     /* re-estimate the foreign load from /proc/stat */
    bool fixed;      /* external set by the caller */
    double external; /* cores kept busy by other processes */
    /* the last probe: monotonic, machine busy and process CPU seconds */
    double probe_t, probe_busy, probe_self;
    bool probed;
};

enum { PROBE_EVERY_MS = 200 };

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Busy seconds of the whole machine since boot (all CPUs): the first line
 * of /proc/stat less idle and iowait. */
static int machine_busy_s(double *out)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    unsigned long long v[8] = {0};
    int k = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (k < 4) return -1;
    long hz = sysconf(_SC_CLK_TCK);
    unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    *out = (double)busy / (double)(hz > 0 ? hz : 100);
    return 0;
}

static double self_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Caller holds the lock. What other processes leave of the machine, at
 * most the budget. */
static void set_lendable(pg_cpu_budget *b)
{
    int keep = (int)(b->external + 0.5);
    int left = b->online - keep;
    b->lendable = left < 1 ? 1 : left > b->cores ? b->cores : left;
}

/* Caller holds the lock. Foreign load = (machine busy - own CPU) / wall
 * over the last interval; the lendable cores follow it, rounded so that a
 * process using half a core or more counts as holding one. */
static void refresh(pg_cpu_budget *b)
{
    if (b->fixed || !b->follow) return;
    double t = mono_s();
    if (b->probed && t - b->probe_t < PROBE_EVERY_MS * 1e-3) return;
    double busy, self = self_cpu_s();
    if (machine_busy_s(&busy)) return;
    if (b->probed) {
        double ext = (busy - b->probe_busy - (self - b->probe_self)) / (t - b->probe_t);
        b->external = ext > 0 ? ext : 0;
        set_lendable(b);
        pthread_cond_broadcast(&b->cv);
    }
    b->probe_t = t, b->probe_busy = busy, b->probe_self = self;
    b->probed = true;
}

void pg_cpu_budget_follow_load(pg_cpu_budget *b, bool on)
{
    pthread_mutex_lock(&b->mu);
    b->follow = on;
    b->probed = false;
    if (!on && !b->fixed) {
        b->external = 0;
        b->lendable = b->cores;
    }
    pthread_mutex_unlock(&b->mu);
}

void pg_cpu_budget_set_external(pg_cpu_budget *b, double busy_cores)
{
    pthread_mutex_lock(&b->mu);
    b->fixed = busy_cores >= 0;
    b->probed = false;
    b->external = b->fixed ? busy_cores : 0;
    set_lendable(b);
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

int pg_cpu_budget_create(int cores, pg_cpu_budget **out, pg_error *err)
{
    *out = NULL;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    int online = n > 0 ? (int)n : 1;
    if (cores <= 0) cores = online;
    pg_cpu_budget *b = calloc(1, sizeof *b);
    if (!b) return pg_error_set(err, PG_ENOMEM, "out of memory creating the CPU budget");
    if (pthread_mutex_init(&b->mu, NULL)) {
        free(b);
        return pg_error_set(err, PG_ENOMEM, "cannot create the CPU budget's lock");
    }
    if (pthread_cond_init(&b->cv, NULL)) {
        pthread_mutex_destroy(&b->mu);
        free(b);
        return pg_error_set(err, PG_ENOMEM, "cannot create the CPU budget's condition");
    }
    b->cores = cores;
    b->online = online > cores ? online : cores;
    b->lendable = cores;
    *out = b;
    return PG_OK;
}

void pg_cpu_budget_destroy(pg_cpu_budget *b)
{
    if (!b) return;
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

int pg_cpu_budget_cores(const pg_cpu_budget *b)
{
    return b ? b->cores : 1;
}

void pg_cpu_budget_stats(const pg_cpu_budget *b, pg_cpu_stats *out)
{
    pg_cpu_budget *m = (pg_cpu_budget *)b; /* the lock and the probe are not its value */
    pthread_mutex_lock(&m->mu);
    refresh(m);
    *out = (pg_cpu_stats){.cores = m->cores,
                          .lendable = m->lendable,
                          .external = m->external,
                          .in_use = m->in_use,
                          .users = m->users,
                          .waiting = m->waiting,
                          .grants = m->grants,
                          .waits = m->waits};
    pthread_mutex_unlock(&m->mu);
}

void pg_cpu_join(pg_cpu_budget *b, bool urgent, pg_cpu_share *s)
{
    *s = (pg_cpu_share){.b = b, .urgent = urgent, .joined = true};
    if (!b || urgent) return; /* urgent calls are too short to count in the split */
    pthread_mutex_lock(&b->mu);
    b->users++;
    pthread_mutex_unlock(&b->mu);
}

/* Caller holds the lock. */
static void give_back(pg_cpu_budget *b, pg_cpu_share *s)
{
    if (s->held <= 0) return;
    b->in_use -= s->held;
    s->held = 0;
    pthread_cond_broadcast(&b->cv);
}

int pg_cpu_acquire(pg_cpu_share *s, int want)
{
    pg_cpu_budget *b = s->b;
    if (!b) {
        s->held = want > 0 ? want : 1;
        return s->held;
    }
    pthread_mutex_lock(&b->mu);
    give_back(b, s);
    if (!s->joined) { /* an acquisition always counts as a user */
        s->joined = true;
        if (!s->urgent) b->users++;
    }
    if (want <= 0 || want > b->cores) want = b->cores;
    refresh(b);
    /* Urgent calls (sampling) never wait on training: they run on a request
     * thread that exists anyway, with one thread when no core is free. */
    if (!s->urgent && b->in_use >= b->lendable) {
        b->waits++;
        b->waiting++;
        while (b->in_use >= b->lendable) {
            /* a wait bounded so a stale foreign-load estimate is revisited */
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_nsec += PROBE_EVERY_MS * 1000000L;
            if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&b->cv, &b->mu, &dl);
            refresh(b);
        }
        b->waiting--;
    }
    int fair = b->lendable / (b->users > 0 ? b->users : 1);
    if (fair < 1) fair = 1;
    int grant = want < fair ? want : fair;
    int free_cores = b->lendable - b->in_use;
    if (grant > free_cores) grant = free_cores;
    if (grant < 1) grant = 1; /* an urgent call on no free core: its own thread */
    b->in_use += grant;
    b->grants++;
    s->held = grant;
    pthread_mutex_unlock(&b->mu);
    return grant;
}

void pg_cpu_release(pg_cpu_share *s)
{
    pg_cpu_budget *b = s->b;
    if (!b) {
        s->held = 0;
        return;
    }
    pthread_mutex_lock(&b->mu);
    give_back(b, s);
    pthread_mutex_unlock(&b->mu);
}

void pg_cpu_leave(pg_cpu_share *s)
{
    pg_cpu_budget *b = s->b;
    if (!s->joined) {
        s->held = 0;
        return;
    }
    if (b) {
        pthread_mutex_lock(&b->mu);
        give_back(b, s);
        if (!s->urgent) b->users--;
        /* One user less raises the others' fair share. */
        pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->mu);
    }
    s->held = 0;
    s->joined = false;
}

int pg_cpu_use(int n)
{
    if (n < 1) n = 1;
    omp_set_num_threads(n);
    return n;
}

void pg_cpu_scope_begin(pg_cpu_budget *b, int cap, pg_cpu_scope *sc)
{
    *sc = (pg_cpu_scope){0};
    if (!b) return;
    sc->before = omp_get_max_threads();
    pg_cpu_join(b, true, &sc->share);
    pg_cpu_use(pg_cpu_acquire(&sc->share, cap));
}

void pg_cpu_scope_end(pg_cpu_scope *sc)
{
    if (!sc->share.joined) return;
    pg_cpu_leave(&sc->share);
    pg_cpu_use(sc->before);
}
