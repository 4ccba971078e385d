/* api/body_cache.h - encoded samples bodies kept for repeated requests.
 *
 * A samples body drawn with an explicit seed (any format: JSON, CSV, NPY,
 * NDJSON, PNG) is a pure function of the job's snapshot and the query, and
 * costs a forward pass plus encoding. Entries are keyed by (job id, snapshot
 * step, variant), where the variant string holds everything else that shapes
 * the bytes (the handler uses the sorted query). Bounded by total bytes, by
 * entry count and by the size of one body; the least recently used entry
 * goes first. Storing a body of a job's newest snapshot drops that job's
 * bodies of older newest-snapshots (a new snapshot invalidates them);
 * pg_body_cache_forget_job drops all of a job's bodies (job deletion).
 *
 * Bodies are immutable, reference-counted pg_body values: a hit hands out a
 * reference (no copy), which the caller releases (e.g. from the HTTP
 * library's free callback once the bytes are sent), so an entry evicted
 * while it is being sent stays alive until then. Thread-safe (one mutex).
 */
#ifndef PG_API_BODY_CACHE_H
#define PG_API_BODY_CACHE_H

#include <stddef.h>

typedef struct pg_body pg_body;

/* Takes ownership of data (malloc'ed; freed with the last reference, or
 * at once when this fails): a body with one reference, NULL on ENOMEM. */
pg_body *pg_body_wrap(char *data, size_t len);
const char *pg_body_data(const pg_body *b);
size_t pg_body_len(const pg_body *b);
void pg_body_retain(pg_body *b);
void pg_body_release(pg_body *b); /* NULL: no-op */

typedef struct pg_body_cache pg_body_cache;

typedef struct pg_body_cache_stats {
    unsigned long long hits, misses, evictions;
    size_t entries, bytes;
    size_t max_bytes, max_entries, max_body;
} pg_body_cache_stats;

/* NULL when out of memory (callers then run without a cache). Bodies longer
 * than max_body are never stored. */
pg_body_cache *pg_body_cache_create(size_t max_bytes, size_t max_entries, size_t max_body);
void pg_body_cache_free(pg_body_cache *c);

/* A new reference on a hit, NULL on a miss (or c == NULL). Counts both. */
pg_body *pg_body_cache_get(pg_body_cache *c, const char *job, long step, const char *variant);
/* latest: the body is of the job's newest snapshot (not a named checkpoint).
 * The cache takes its own reference when it keeps b. */
void pg_body_cache_put(pg_body_cache *c, const char *job, long step, int latest,
                       const char *variant, pg_body *b);
void pg_body_cache_forget_job(pg_body_cache *c, const char *job);

/* Counters and occupancy (zeros for c == NULL). */
void pg_body_cache_stats_get(pg_body_cache *c, pg_body_cache_stats *s);

#endif
