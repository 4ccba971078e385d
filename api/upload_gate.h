/* api/upload_gate.h - bounds the uploads in flight, in all and per token.
 *
 * An upload occupies server resources for as long as its client takes to
 * send it (a spool file, up to --max-body of buffered body): a few slow or
 * hostile clients must not be able to take all of them. Each upload takes a
 * slot before its body is read and gives it back when the request ends.
 * The gate also counts what the server refused or cut, for /metrics.
 *
 * Thread-safe (one mutex; every call is a few instructions under it). The
 * gate copies token ids; it keeps no pointer into a request.
 */
#ifndef PG_API_UPLOAD_GATE_H
#define PG_API_UPLOAD_GATE_H

#include <stddef.h>
#include <stdint.h>

typedef struct pg_upload_gate pg_upload_gate;

enum pg_upload_admit { PG_UPLOAD_OK = 0, PG_UPLOAD_FULL, PG_UPLOAD_TOKEN_FULL };

typedef struct pg_upload_gate_stats {
    size_t in_flight, max_total, max_per_token;
    uint64_t refused_full, refused_token, cut_slow;
} pg_upload_gate_stats;

/* NULL when out of memory. max_total, max_per_token >= 1. */
pg_upload_gate *pg_upload_gate_create(size_t max_total, size_t max_per_token);
void pg_upload_gate_free(pg_upload_gate *g);

/* Takes a slot for token (an id, copied): PG_UPLOAD_OK, or which bound is
 * reached (counted as refused; nothing taken). */
int pg_upload_gate_enter(pg_upload_gate *g, const char *token);
/* Gives back a slot that enter granted to token. */
void pg_upload_gate_leave(pg_upload_gate *g, const char *token);
/* Counts a request body cut for arriving too slowly. */
void pg_upload_gate_count_cut(pg_upload_gate *g);
void pg_upload_gate_stats_get(pg_upload_gate *g, pg_upload_gate_stats *out);

#endif
