/* privgen-bench fmt: the shortest round-trip float32 printer (engine/core/fmt.h).
 *
 * Default: thread CPU nanoseconds per value for pg_fmt_f32 and for
 * snprintf("%.9g") on the values a model serves (uniform in [-4, 4]) and on
 * random bit patterns, and for pg_fmt_f32_join on rows of 784 values: those
 * two, uniform in [-0.2, 0.2] (what the 784-D image models serve: 8-10
 * significant digits below one) and uniform in [0, 1].
 *
 * --exhaustive [--threads T] [--short-every K]: every one of the 2^32 bit
 * patterns. Each finite value must read back bit for bit with strtof; every
 * K-th (default 64; 1 checks all, about five times slower) is also checked to be shortest by brute
 * force (no decimal with one digit fewer reads back to it; see tests/engine/core/ test_fmt.c for
 * why two candidates suffice). NaN/Inf must print as NaN/Infinity/-Infinity. Prints counts,
 * failures (the first few bit patterns) and wall seconds.
 *
 * --exhaustive --join: every bit pattern through pg_fmt_f32_join (runs of
 * consecutive patterns), each value's text compared with pg_fmt_f32's: the
 * batch printer is then exactly as correct as the one checked above. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "engine/core/fmt.h"

static double thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int sig_digits(const char *s)
{
    char d[64];
    int n = 0;
    for (const char *p = s; *p && *p != 'e' && n < 63; p++)
        if (*p >= '0' && *p <= '9') d[n++] = *p;
    int a = 0, b = n;
    while (a < b && d[a] == '0') a++;
    while (b > a && d[b - 1] == '0') b--;
    return b - a;
}

static int shorter_exists(float f, int n)
{
    if (n < 2) return 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%.60e", fabs((double)f));
    int ex = atoi(strchr(buf, 'e') + 1);
    unsigned long long t = (unsigned long long)(buf[0] - '0');
    for (int i = 0; i < n - 2; i++) t = t * 10 + (unsigned long long)(buf[2 + i] - '0');
    for (unsigned long long c = t; c <= t + 1; c++) {
        char s[64];
        snprintf(s, sizeof s, "%llue%d", c, ex - (n - 2));
        float g = strtof(s, NULL), a = fabsf(f);
        if (!memcmp(&g, &a, sizeof g)) return 1;
    }
    return 0;
}

typedef struct part {
    uint64_t lo, hi, every;
    int join_only;
    uint64_t checked, short_checked, bad;
    uint32_t first_bad[4];
} part;

/* pg_fmt_f32_join against pg_fmt_f32, value by value, on [lo, hi) in runs
 * of consecutive patterns. */
static void join_part(part *p)
{
    enum { RUN = 250 };
    static _Thread_local float x[RUN];
    static _Thread_local char text[RUN * 17 + PG_FMT_F32_MAX];
    char s[PG_FMT_F32_MAX];
    for (uint64_t b = p->lo; b < p->hi; b += RUN) {
        size_t n = p->hi - b < RUN ? (size_t)(p->hi - b) : RUN;
        for (size_t i = 0; i < n; i++) x[i] = from_bits((uint32_t)(b + i));
        pg_fmt_f32_join(x, n, '\n', 0, text);
        const char *t = text;
        for (size_t i = 0; i < n; i++) {
            size_t len = pg_fmt_f32(x[i], s);
            int ok = !strncmp(t, s, len) && (t[len] == '\n' || (i + 1 == n && t[len] == '\0'));
            t += len + 1;
            p->checked++;
            if (!ok && p->bad++ < 4) p->first_bad[p->bad - 1] = (uint32_t)(b + i);
            if (!ok) break; /* the rest of the run is misaligned */
        }
    }
}

static void *run_part(void *arg)
{
    part *p = arg;
    char s[PG_FMT_F32_MAX];
    if (p->join_only) {
        join_part(p);
        return NULL;
    }
    for (uint64_t b = p->lo; b < p->hi; b++) {
        uint32_t u = (uint32_t)b;
        float f = from_bits(u);
        pg_fmt_f32(f, s);
        int ok;
        if ((u >> 23 & 0xff) == 0xff) {
            ok = !strcmp(s, (u & 0x7fffff) ? "NaN" : (u >> 31) ? "-Infinity" : "Infinity");
        } else {
            float g = strtof(s, NULL);
            ok = !memcmp(&g, &f, sizeof f);
            if (ok && f != 0 && b % p->every == 0) {
                ok = !shorter_exists(f, sig_digits(s));
                p->short_checked++;
            }
        }
        p->checked++;
        if (!ok && p->bad++ < 4) p->first_bad[p->bad - 1] = u;
    }
    return NULL;
}

static int exhaustive(int argc, char **argv)
{
    long nt = strtol(pg_bench_opt(argc, argv, "--threads", "0"), NULL, 10);
    if (nt <= 0) nt = sysconf(_SC_NPROCESSORS_ONLN);
    if (nt <= 0 || nt > 256) nt = 1;
    uint64_t every = strtoull(pg_bench_opt(argc, argv, "--short-every", "64"), NULL, 10);
    if (!every) every = 1;
    int join_only = pg_bench_has(argc, argv, "--join");
    /* Interleaved slices keep the threads' loads similar (cost varies with
     * the exponent). */
    enum { SLICES = 4096 };
    part *parts = calloc(SLICES, sizeof *parts);
    pthread_t *th = calloc((size_t)nt, sizeof *th);
    if (!parts || !th) return 1;
    uint64_t step = (UINT64_C(1) << 32) / SLICES;
    for (int i = 0; i < SLICES; i++)
        parts[i] = (part){.lo = (uint64_t)i * step,
                          .hi = (uint64_t)(i + 1) * step,
                          .every = every,
                          .join_only = join_only};
    double t0 = pg_bench_now_ms();
    for (int round = 0; round < SLICES; round += (int)nt) {
        long k = 0;
        for (; k < nt && round + k < SLICES; k++)
            pthread_create(&th[k], NULL, run_part, &parts[round + k]);
        for (long j = 0; j < k; j++) pthread_join(th[j], NULL);
    }
    double secs = (pg_bench_now_ms() - t0) / 1e3;
    uint64_t checked = 0, shorts = 0, bad = 0;
    char firsts[128] = "";
    size_t fl = 0;
    for (int i = 0; i < SLICES; i++) {
        checked += parts[i].checked;
        shorts += parts[i].short_checked;
        for (uint64_t j = 0; j < parts[i].bad && j < 4 && bad + j < 4; j++)
            fl += (size_t)snprintf(firsts + fl, sizeof firsts - fl, "%s\"0x%08x\"", fl ? "," : "",
                                   parts[i].first_bad[j]);
        bad += parts[i].bad;
    }
    printf("{\"bench\":\"fmt-exhaustive\",\"check\":\"%s\",\"patterns\":%llu,\"shortness_checked\":"
           "%llu,"
           "\"failures\":%llu,\"first_failures\":[%s],\"threads\":%ld,\"seconds\":%.1f}\n",
           join_only ? "join equals pg_fmt_f32" : "round trip and shortness",
           (unsigned long long)checked, (unsigned long long)shorts, (unsigned long long)bad, firsts,
           nt, secs);
    free(parts);
    free(th);
    return bad ? 1 : 0;
}

static int bench_fmt(int argc, char **argv)
{
    if (pg_bench_has(argc, argv, "--exhaustive")) return exhaustive(argc, argv);
    enum { N = 1 << 20 };
    float *u = malloc(N * sizeof *u), *r = malloc(N * sizeof *r), *sm = malloc(N * sizeof *sm),
          *un = malloc(N * sizeof *un);
    if (!u || !r || !sm || !un) return 1;
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double f = (double)(x >> 11) / 9007199254740992.0;
        u[i] = (float)(f * 8 - 4);
        sm[i] = (float)(f * 0.4 - 0.2);
        un[i] = (float)f;
        uint32_t b = (uint32_t)(x >> 7);
        if ((b >> 23 & 0xff) == 0xff) b = 0;
        r[i] = from_bits(b);
    }
    char s[64];
    size_t sink = 0;
    enum { CASES = 7 };
    double best[CASES];
    for (int k = 0; k < CASES; k++) best[k] = 1e300;
    enum { ROW = 784 };
    char *text = malloc(ROW * 17 + PG_FMT_F32_MAX);
    if (!text) return 1;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = thread_ns();
        for (int i = 0; i < N; i++) sink += pg_fmt_f32(u[i], s);
        double t1 = thread_ns();
        for (int i = 0; i < N; i++) sink += pg_fmt_f32(r[i], s);
        double t2 = thread_ns();
        for (int i = 0; i < N / 8; i++) sink += (size_t)snprintf(s, sizeof s, "%.9g", (double)u[i]);
        double t3 = thread_ns();
        /* the serving path: rows of 784 values joined with commas */
        for (int i = 0; i + ROW <= N; i += ROW) sink += pg_fmt_f32_join(u + i, ROW, ',', 1, text);
        double t4 = thread_ns();
        for (int i = 0; i + ROW <= N; i += ROW) sink += pg_fmt_f32_join(r + i, ROW, ',', 1, text);
        double t5 = thread_ns();
        for (int i = 0; i + ROW <= N; i += ROW) sink += pg_fmt_f32_join(sm + i, ROW, ',', 1, text);
        double t6 = thread_ns();
        for (int i = 0; i + ROW <= N; i += ROW) sink += pg_fmt_f32_join(un + i, ROW, ',', 1, text);
        double t7 = thread_ns();
        double rows = (double)(N / ROW * ROW);
        double v[CASES] = {(t1 - t0) / N,    (t2 - t1) / N,    (t3 - t2) / (N / 8),
                           (t4 - t3) / rows, (t5 - t4) / rows, (t6 - t5) / rows,
                           (t7 - t6) / rows};
        for (int k = 0; k < CASES; k++)
            if (v[k] < best[k]) best[k] = v[k];
    }
    printf("{\"bench\":\"fmt\",\"ns_per_value_uniform\":%.1f,\"ns_per_value_random_bits\":%.1f,"
           "\"join_ns_per_value_uniform\":%.1f,\"join_ns_per_value_random_bits\":%.1f,"
           "\"join_ns_per_value_small\":%.1f,\"join_ns_per_value_unit\":%.1f,"
           "\"snprintf_9g_ns_per_value\":%.1f,\"chars\":%zu}\n",
           best[0], best[1], best[3], best[4], best[5], best[6], best[2], sink);
    free(text);
    free(u);
    free(r);
    free(sm);
    free(un);
    return 0;
}

PG_BENCH_REGISTER("fmt", "shortest float32 printing: speed, or --exhaustive over 2^32 inputs",
                  bench_fmt)
