/* service/snapcache.h - a bounded LRU cache of sampling snapshots rebuilt
 * from stored checkpoints, for jobs this replica did not train (so that
 * any replica serves samples of any job).
 *
 * An entry is keyed by a job id and holds the snapshot of one checkpoint
 * step: the job's latest as the caller last saw it. A request for another
 * step of the same key loads that step and, when it is newer, replaces the
 * entry (an older step is served but not kept). Entries are charged at the
 * length of the checkpoint they were rebuilt from (a snapshot keeps a part
 * of what its checkpoint stores); when the total exceeds the cap the least
 * recently used entries go. A checkpoint larger than the cap is served
 * without being kept. Snapshots are reference counted: an entry evicted
 * while a request samples from it stays alive until that request releases
 * it.
 *
 * Threads: every function may be called from any thread. Loads run outside
 * the cache's lock, one at a time per key: concurrent misses on one key wait
 * for the first load and share its result, so a burst of requests reads the
 * checkpoint once. The loader is called with no lock held.
 *
 * Errors: a failed load is returned to the caller that ran it; the waiters
 * then retry their own load (nothing is cached). PG_ENOMEM when an entry
 * cannot be allocated.
 */
#ifndef PG_SVC_SNAPCACHE_H
#define PG_SVC_SNAPCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/methods/method.h"

typedef struct pg_snapcache pg_snapcache;

/* Builds the snapshot of (key, step): *snap (one reference, moved to the
 * cache) and *bytes, what it is charged. */
typedef int (*pg_snapcache_load_fn)(void *ctx, pg_snapshot **snap, size_t *bytes, pg_error *err);

/* cap_bytes 0 keeps nothing (every miss loads; concurrent ones still share). */
int pg_snapcache_create(size_t cap_bytes, pg_snapcache **out, pg_error *err);
/* No get may be running. Releases every entry's snapshot. */
void pg_snapcache_destroy(pg_snapcache *c);

/* The snapshot of (key, step), retained for the caller (pg_snapshot_release):
 * from the cache, or built by load(ctx) on a miss. key: 1..63 characters. */
int pg_snapcache_get(pg_snapcache *c, const char *key, int64_t step, pg_snapcache_load_fn load,
                     void *ctx, pg_snapshot **out, pg_error *err);

/* Drops key's entry (the job was deleted); a load running for it is not
 * kept when it ends. */
void pg_snapcache_evict(pg_snapcache *c, const char *key);

typedef struct pg_snapcache_stats {
    uint64_t hits, misses; /* gets served from an entry / that had to load */
    uint64_t evictions;    /* entries dropped to stay within the cap */
    uint64_t dropped;      /* entries replaced by a newer step or evicted by key */
    size_t bytes, entries, cap;
} pg_snapcache_stats;
void pg_snapcache_stats_get(pg_snapcache *c, pg_snapcache_stats *s);

#endif
