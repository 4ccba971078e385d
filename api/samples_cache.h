/* api/samples_cache.h - HTTP caching of GET /v1/jobs/{id}/samples.
 *
 * A request with an explicit seed names immutable bytes: the same snapshot
 * (job, step: a published snapshot is always a stored checkpoint, the same
 * on every replica) and the same query give the same body in every format.
 * Such a response gets a strong ETag, a hash of (job id, snapshot step, the
 * sorted query), and Cache-Control
 *   - "private, max-age=300" when the snapshot cannot change under the URL
 *     (an explicit ?checkpoint=, or the latest of a job that has ended);
 *   - "private, no-cache" for the latest snapshot of a job still running
 *     (a new checkpoint changes the bytes, so clients revalidate each time).
 * max-age stays short because a client-side cache answers without asking
 * the server: a token revoked or a job deleted should stop being served
 * from client caches within minutes (revalidation costs a token check and
 * a lookup, no forward pass). A request without a seed draws fresh rows: no
 * ETag and "no-store".
 *
 * If-None-Match (RFC 9110 13.1.2: a list of entity tags, weak comparison,
 * or "*") is answered 304 with no body before any sampling. Seeded bodies
 * of up to the cache's max_body bytes are kept in app->body_cache
 * (api/body_cache.h) and served from it. The handler calls this only after
 * authentication and the job lookup (which enforces visibility), so neither
 * is ever skipped.
 */
#ifndef PG_API_SAMPLES_CACHE_H
#define PG_API_SAMPLES_CACHE_H

#include <stddef.h>

#include "api/internal.h"

typedef struct pg_samples_cache {
    int seeded; /* an explicit seed and a query that makes a key */
    int latest; /* the job's newest snapshot (no ?checkpoint=) */
    long step;
    char variant[1024]; /* the sorted query */
} pg_samples_cache;

/* Fills k and r's ETag and Cache-Control (sent with a 200 or 304 only).
 * has_seed: the body is determined by the query (an explicit seed). */
void pg_samples_cache_init(pg_req *r, int has_seed, int has_checkpoint, long step, int ended,
                           pg_samples_cache *k);

/* Sets the caching headers, then answers If-None-Match with 304 or a
 * cached body with 200 (type: its Content-Type). 1 when it answered. */
int pg_samples_cache_answer(pg_req *r, const pg_samples_cache *k, const char *type);

/* Sends the 200 body (malloc'ed, stolen), keeping it for later requests
 * when k is seeded and the body fits the cache. */
void pg_samples_cache_send(pg_req *r, const pg_samples_cache *k, const char *type, char *body,
                           size_t len);

/* Streamed bodies: a copy taken as the bytes go out, kept in the cache
 * once the body is complete (a cut body is never kept). NULL when k is not
 * seeded or the body cannot fit the cache's max_body: size is the exact
 * length when known (NPY), else 0 and values the count of printed values
 * (text: copied only when about 8 bytes a value would fit, dropped as soon
 * as it outgrows max_body). Used from libmicrohttpd's threads; the cache
 * outlives every response (the server stops the daemon first). */
typedef struct pg_samples_keep pg_samples_keep;
pg_samples_keep *pg_samples_keep_open(pg_req *r, const pg_samples_cache *k, size_t size,
                                      size_t values);
void pg_samples_keep_add(pg_samples_keep *t, const char *p, size_t n);
/* The body is complete: keep it. */
void pg_samples_keep_end(pg_samples_keep *t);
void pg_samples_keep_free(pg_samples_keep *t); /* NULL: no-op */

/* RFC 9110 If-None-Match against one strong ETag (quoted; NULL or "": no
 * validator, only "*" matches). 1 when the condition is false (send 304).
 * Exposed for tests. */
int pg_samples_inm_matches(const char *header, const char *etag);

#endif
