/* A throwaway PostgreSQL cluster for benchmarks (see pgcluster.h). */
#include "bench/pgcluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sh(const char *script, const char *action, const char *dir)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s '%s' >&2", script, action, dir);
    return system(cmd);
}

int pg_bench_pg_start(pg_bench_pg *c, const char *src, const char *dir, const char *who, char *uri,
                      size_t cap)
{
    char cluster[sizeof c->cluster];
    snprintf(c->script, sizeof c->script, "%s/scripts/pgtest.sh", src ? src : PRIVGEN_SOURCE_DIR);
    snprintf(cluster, sizeof cluster, "%s/pg", dir);
    c->cluster[0] = '\0';
    uri[0] = '\0';
    if (sh(c->script, "start", cluster)) {
        fprintf(stderr, "privgen-bench %s: could not start a PostgreSQL cluster\n", who);
        return 1;
    }
    memcpy(c->cluster, cluster, sizeof cluster); /* started: stop removes it */
    char path[sizeof cluster + 8];
    snprintf(path, sizeof path, "%s/uri", cluster);
    FILE *f = fopen(path, "r");
    if (f && fgets(uri, (int)cap, f)) uri[strcspn(uri, "\n")] = '\0';
    if (f) fclose(f);
    if (!uri[0]) {
        fprintf(stderr, "privgen-bench %s: the cluster wrote no URI\n", who);
        return 1;
    }
    return 0;
}

void pg_bench_pg_stop(pg_bench_pg *c)
{
    if (c->cluster[0]) sh(c->script, "stop", c->cluster);
    c->cluster[0] = '\0';
}
