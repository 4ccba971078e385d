/* privgen-bench cats: typed uploads with long category lists.
 *
 * A table of one continuous column and one categorical column of K
 * categories (names "zip_<k>" listed in a scrambled order, so sorting them
 * is real work), --rows rows (default 200000) of seeded uniform categories as
 * CSV, parsed by the upload parser (engine/data/records.h) through a sink
 * that keeps nothing. For each K in --cats (default 2,1000) and each place
 * of the categorical column: "feature" (one-hot encoded, K units a row) and
 * "label" (the class index only: the name lookup without the encoding).
 *
 * Reported per case: this thread's CPU time of the parse
 * (CLOCK_THREAD_CPUTIME_ID; median of --runs, default 3) and per row; and,
 * as the reference a per-value linear scan would cost, the CPU time of
 * looking up the same value texts by comparing them with each category in
 * schema order (what records.c did before its sorted lookups; the parse
 * itself looks them up by binary search in an index built once per upload
 * and column). The parse with a linear scan would cost about parse +
 * linear lookup (less the binary search's share of the parse, which the
 * label rows at K = 2 against K = 1000 bound). The load average before and after is printed with
 * each line: rerun on a quiet machine for clean figures. One JSON line per case.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "engine/core/rng.h"
#include "engine/data/records.h"
#include "engine/data/table.h"

static double thread_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static double load1(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

typedef struct text {
    char *s;
    size_t n, cap;
} text;

static int put(text *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 1 << 16;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) return -1;
        b->s = p, b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
    return 0;
}

static int count_row(void *ctx, const float *row, int64_t label, uint64_t rowno, pg_error *err)
{
    (void)row, (void)label, (void)rowno, (void)err;
    ++*(uint64_t *)ctx;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One case: K categories, the categorical column as the label or not. */
static int run_case(size_t K, size_t rows, int as_label, int runs)
{
    int rc = 1;
    text sch = {0}, csv = {0};
    char tmp[96];
    pg_table *t = NULL;
    size_t *val = malloc(rows * sizeof *val);
    char *names = malloc(rows * 16); /* each value's text, "zip_<k>" */
    double *ms = malloc((size_t)runs * sizeof *ms);
    if (!val || !names || !ms) goto out;
    put(&sch,
        "{\"columns\": [{\"name\": \"x\", \"type\": \"continuous\", \"min\": 0, \"max\": 1},"
        " {\"name\": \"zip\", \"type\": \"categorical\", \"categories\": [",
        strlen("{\"columns\": [{\"name\": \"x\", \"type\": \"continuous\", \"min\": 0, \"max\": 1},"
               " {\"name\": \"zip\", \"type\": \"categorical\", \"categories\": ["));
    for (size_t k = 0; k < K; k++) {
        int len = snprintf(tmp, sizeof tmp, "%s\"zip_%zu\"", k ? ", " : "", (k * 7919) % K);
        put(&sch, tmp, (size_t)len);
    }
    const char *tail = as_label ? "]}], \"label\": \"zip\"}" : "]}]}";
    put(&sch, tail, strlen(tail));
    json_error_t je;
    json_t *j = json_loads(sch.s, 0, &je);
    pg_error err = {0};
    if (!j || pg_table_from_json(j, &t, &err)) {
        fprintf(stderr, "cats: schema refused: %s\n", j ? err.msg : je.text);
        json_decref(j);
        goto out;
    }
    json_decref(j);
    pg_rng r;
    pg_rng_seeded(&r, 2024, 0);
    put(&csv, "x,zip\n", 6);
    for (size_t i = 0; i < rows; i++) {
        val[i] = (size_t)pg_rng_below(&r, K);
        snprintf(names + 16 * i, 16, "zip_%zu", val[i]);
        int len = snprintf(tmp, sizeof tmp, "%.6f,zip_%zu\n", pg_rng_uniform(&r), val[i]);
        if (put(&csv, tmp, (size_t)len)) goto out;
    }
    double l0 = load1();
    for (int k = 0; k < runs; k++) {
        pg_records_opts o = {.format = PG_RECORDS_CSV, .bounds = PG_TABLE_BOUNDS_REFUSE};
        pg_records_parser *p = NULL;
        uint64_t n = 0;
        double t0 = thread_ms();
        int prc = pg_records_new(t, &o, count_row, &n, &p, &err);
        if (!prc) prc = pg_records_feed(p, csv.s, csv.n, &err);
        if (!prc) prc = pg_records_finish(p, &err);
        ms[k] = thread_ms() - t0;
        pg_records_free(p);
        if (prc || n != rows) {
            fprintf(stderr, "cats: parse failed (%llu rows): %s\n", (unsigned long long)n, err.msg);
            goto out;
        }
    }
    qsort(ms, (size_t)runs, sizeof *ms, cmp_double);
    /* The linear reference: each value compared with the categories in
     * schema order until it matches (names as the parser sees them). */
    const pg_table_col *c = &t->cols[1];
    size_t *lens = malloc(K * sizeof *lens);
    if (!lens) goto out;
    for (size_t k = 0; k < K; k++) lens[k] = strlen(c->cats[k]);
    uint64_t found = 0;
    double t0 = thread_ms();
    for (size_t i = 0; i < rows; i++) {
        const char *s = names + 16 * i;
        size_t len = strlen(s);
        for (size_t k = 0; k < K; k++)
            if (lens[k] == len && !memcmp(c->cats[k], s, len)) {
                found += k;
                break;
            }
    }
    double lin = thread_ms() - t0;
    free(lens);
    double parse = ms[runs / 2];
    printf("{\"bench\":\"cats\",\"rows\":%zu,\"categories\":%zu,\"column\":\"%s\",\"width\":%zu,"
           "\"runs\":%d,\"parse_cpu_ms\":%.1f,\"parse_ns_per_row\":%.0f,"
           "\"linear_lookup_cpu_ms\":%.1f,\"linear_lookup_ns_per_row\":%.0f,\"checksum\":%llu,"
           "\"load1_before\":%.2f,\"load1_after\":%.2f}\n",
           rows, K, as_label ? "label" : "feature", t->width, runs, parse, parse * 1e6 / rows, lin,
           lin * 1e6 / rows, (unsigned long long)found, l0, load1());
    fflush(stdout);
    rc = 0;
out:
    pg_table_free(t);
    free(sch.s);
    free(csv.s);
    free(val);
    free(names);
    free(ms);
    return rc;
}

static int cats(int argc, char **argv)
{
    size_t rows = strtoull(pg_bench_opt(argc, argv, "--rows", "200000"), NULL, 10);
    int runs = atoi(pg_bench_opt(argc, argv, "--runs", "3"));
    const char *list = pg_bench_opt(argc, argv, "--cats", "2,1000");
    if (rows == 0 || runs < 1) {
        fprintf(stderr, "usage: privgen-bench cats [--rows N] [--cats K1,K2,..] [--runs R]\n");
        return 2;
    }
    for (const char *s = list; *s;) {
        char *end;
        size_t K = strtoull(s, &end, 10);
        if (end == s || K < 1) {
            fprintf(stderr, "cats: bad --cats %s\n", list);
            return 2;
        }
        for (int as_label = 1; as_label >= 0; as_label--)
            if (run_case(K, rows, as_label, runs)) return 1;
        s = *end == ',' ? end + 1 : end;
    }
    return 0;
}

PG_BENCH_REGISTER("cats", "typed CSV uploads with K categories: parse CPU against a linear lookup",
                  cats)
