/* service/log.h - structured JSON logs on stderr, one object per line.
 *
 * Lines are written with a single fwrite under the stdio lock so concurrent
 * threads never interleave. Strings are JSON-escaped here; callers pass raw
 * text. Logging never fails the caller.
 */
#ifndef PG_SVC_LOG_H
#define PG_SVC_LOG_H

/* Names the replica in every later line ("node":..., privgend's --node-id).
 * Called once by main before any thread logs; NULL or "" leaves it out. */
void pg_log_set_node(const char *node);

/* {"ts":..,"node":..,"level":..,"msg":..} plus an optional pre-rendered
 * JSON fragment `extra` (e.g. "\"port\":8080") appended inside the object. */
void pg_log_event(const char *level, const char *msg, const char *extra);

/* A job's line, naming the replica explicitly (node overrides the one set
 * above: one process may host several job managers in tests) and the job;
 * msg may be a printf format. */
void pg_log_job(const char *level, const char *node, const char *job, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* One line per finished HTTP request. token_id may be NULL. */
void pg_log_request(const char *method, const char *route, int status, double ms,
                    const char *token_id);

#endif
