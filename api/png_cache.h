/* api/png_cache.h - encoded sample plots kept for repeated requests.
 *
 * A PNG of a job's samples is a pure function of the snapshot, n, seed,
 * label and the plot options, and costs a forward pass plus deflate. Entries
 * are keyed by (job id, snapshot step, variant), where the variant string
 * holds everything else that shapes the picture (the handler builds it from
 * the request's query). Bounded by total bytes and entry count; the least
 * recently used entry goes first. Storing a plot of a job's newest snapshot
 * drops that job's plots of older newest-snapshots (a new snapshot
 * invalidates them); pg_png_cache_forget_job drops all of a job's plots (for
 * job deletion). Thread-safe (one mutex; entries are copied in and out).
 */
#ifndef PG_API_PNG_CACHE_H
#define PG_API_PNG_CACHE_H

#include <stddef.h>

typedef struct pg_png_cache pg_png_cache;

/* NULL when out of memory (callers then run without a cache). */
pg_png_cache *pg_png_cache_create(size_t max_bytes, size_t max_entries);
void pg_png_cache_free(pg_png_cache *c);

/* 1 and a malloc'ed copy on a hit, 0 on a miss (or c == NULL). */
int pg_png_cache_get(pg_png_cache *c, const char *job, long step, const char *variant, char **body,
                     size_t *len);
/* latest: the plot is of the job's newest snapshot (not a named checkpoint). */
void pg_png_cache_put(pg_png_cache *c, const char *job, long step, int latest, const char *variant,
                      const char *body, size_t len);
void pg_png_cache_forget_job(pg_png_cache *c, const char *job);

/* Entries and bytes held (for tests and /metrics). */
void pg_png_cache_stats(pg_png_cache *c, size_t *entries, size_t *bytes);

#endif
