/* api/header_guard.h - bounds the time connections spend before a request.
 *
 * libmicrohttpd's idle timeout restarts at every byte, so a client sending
 * its request headers one byte every few seconds (slowloris) keeps its
 * connection for ever, and enough of them fill --max-connections. The guard
 * tracks every connection that is "waiting": from its start, or from the
 * end of its previous response, until the headers of its next request are
 * complete (the first access-handler call). A waiting connection is cut
 * (shutdown(2) of its socket; libmicrohttpd then closes it) when
 *  - it has waited `timeout_s` (the whole header phase is bounded, however
 *    the bytes trickle: at most the header memory limit in that time), or
 *  - more than `max_waiting` connections wait at once: the one waiting
 *    longest goes, so slow clients can never hold the slots kept beyond
 *    max_waiting, and a quick request (a health check) still gets in.
 *
 * Safety of the shutdown: libmicrohttpd reports a connection closed
 * (pg_header_guard_closed, from MHD_OPTION_NOTIFY_CONNECTION) before it
 * closes the socket, and the guard forgets the connection under the same
 * lock it cuts under, so it never touches a descriptor reused by another
 * connection.
 *
 * Thread-safe; one watchdog thread per guard. The per-connection state lives
 * in the connection's socket context (void **ctx), owned by the guard from
 * _started to _closed. */
#ifndef PG_API_HEADER_GUARD_H
#define PG_API_HEADER_GUARD_H

#include <stddef.h>

typedef struct pg_header_guard pg_header_guard;

/* NULL when out of memory or the thread cannot start (no guard then). */
pg_header_guard *pg_header_guard_create(size_t max_waiting, double timeout_s);
/* Stops the watchdog; call after the HTTP daemon has stopped. */
void pg_header_guard_free(pg_header_guard *g);

/* Connection events (g may be NULL: nothing happens). */
void pg_header_guard_started(pg_header_guard *g, int fd, void **ctx);
void pg_header_guard_request(pg_header_guard *g, void *ctx);  /* headers complete */
void pg_header_guard_finished(pg_header_guard *g, void *ctx); /* response done: waiting again */
void pg_header_guard_closed(pg_header_guard *g, void **ctx);

/* Connections cut so far: for waiting too long, and to keep the reserve. */
void pg_header_guard_stats(pg_header_guard *g, unsigned long long *timed_out,
                           unsigned long long *evicted);

#endif
