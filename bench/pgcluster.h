/* bench/pgcluster.h - a throwaway PostgreSQL cluster for benchmarks.
 *
 * Started and removed by the project's scripts/pgtest.sh (the script the
 * postgres test fixtures use), under <dir>/pg. pg_bench_pg_start fills uri
 * (cap bytes) and returns 0, or says why on stderr and returns 1;
 * pg_bench_pg_stop removes a started cluster and is a no-op otherwise. The
 * caller owns dir and removes it after the stop.
 */
#ifndef PG_BENCH_PGCLUSTER_H
#define PG_BENCH_PGCLUSTER_H

#include <stddef.h>

typedef struct pg_bench_pg {
    char script[1024];
    char cluster[160]; /* empty until started */
} pg_bench_pg;

/* src: the source tree holding scripts/ (NULL: the build's own); who names
 * the benchmark in messages. */
int pg_bench_pg_start(pg_bench_pg *c, const char *src, const char *dir, const char *who, char *uri,
                      size_t cap);
void pg_bench_pg_stop(pg_bench_pg *c);

#endif
