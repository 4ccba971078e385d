/* service/store/pg/pgpool.h - a small pool of libpq connections to one PostgreSQL.
 *
 * Ownership: a connection handed out by pg_pgpool_acquire belongs to the
 * calling thread alone until pg_pgpool_release; libpq connections are never
 * shared between threads. Release returns it in a clean state: an open or
 * failed transaction is rolled back, and a connection that is broken (or
 * left mid-COPY) is closed, so the next acquire opens a fresh one. The pool
 * itself is safe to use from any number of threads.
 *
 * Recovery: acquire checks the connection it hands out (a server restart or
 * pg_terminate_backend leaves a socket that only reading reveals as dead)
 * and reconnects it, retrying with a short backoff until the acquire
 * timeout; every (re)connect sets statement_timeout and, to the same value,
 * idle_in_transaction_session_timeout (the server ends a session left idle
 * inside a transaction that long, releasing its locks). When no connection
 * can be made the call fails with PG_EUNAVAIL, which the HTTP layer turns
 * into 503 + Retry-After: a database outage is a transient condition, never
 * a crash.
 *
 * Errors: pg_pgpool_check classifies a failed result. Connection loss,
 * SQLSTATE class 08, 57P01/57P02/57P03 (administrator or crash shutdown,
 * cannot connect now), 53300 (too many connections) and 57014 (statement
 * timeout or cancel) are PG_EUNAVAIL; 40001/40P01 (serialization failure,
 * deadlock) are PG_PGPOOL_RETRY, a code that never leaves the PostgreSQL
 * backend: its caller reruns the whole transaction. Everything else is
 * PG_EIO. Messages name the operation and the server's primary message,
 * never the connection string: pg_db_url_redact (service/store/db.h) is the one
 * way a URI may reach a log line.
 */
#ifndef PG_SVC_PGPOOL_H
#define PG_SVC_PGPOOL_H

#include <libpq-fe.h>
#include <stddef.h>

#include "engine/core/error.h"

/* Internal to the PostgreSQL backend: "rerun the transaction". Outside the
 * range of enum pg_status on purpose. */
#define PG_PGPOOL_RETRY 1000

#define PG_PGPOOL_MAX 1024

typedef struct pg_pgpool pg_pgpool;

typedef struct pg_pgpool_opts {
    int size;                 /* connections, 1..PG_PGPOOL_MAX */
    int statement_timeout_ms; /* also the idle-in-transaction bound; 0: no timeout */
    int acquire_timeout_ms;   /* wait for a free or reconnected connection */
    int connect_timeout_s;    /* one connection attempt; <= 0: 5 (the URI may override) */
} pg_pgpool_opts;

/* Opens the pool and one connection (so a wrong URI or password fails here,
 * with PG_EUNAVAIL when the server is unreachable and PG_EINVAL when the
 * URI is malformed); the others connect on first use. conninfo is a libpq
 * URI or key=value string and is copied. */
int pg_pgpool_open(const char *conninfo, const pg_pgpool_opts *opts, pg_pgpool **out,
                   pg_error *err);
/* Closes every connection; no connection may be out. NULL is a no-op. */
void pg_pgpool_close(pg_pgpool *p);

/* A healthy connection, idle and outside any transaction. PG_EUNAVAIL when
 * every connection stayed busy for the acquire timeout or the server cannot
 * be reached within it. */
int pg_pgpool_acquire(pg_pgpool *p, PGconn **out, pg_error *err);
void pg_pgpool_release(pg_pgpool *p, PGconn *c);

/* Number of (re)connects made so far, and connections currently out. */
void pg_pgpool_stats(pg_pgpool *p, long *connects, int *busy);

/* PG_OK when r (which may be NULL) has status `want`; otherwise the
 * classified status (see above) with "database error <what>: <message>" in
 * err. Does not PQclear r. */
int pg_pgpool_check(PGconn *c, const PGresult *r, ExecStatusType want, const char *what,
                    pg_error *err);
/* The classification alone, from a SQLSTATE (NULL or "" when none). */
int pg_pgpool_classify(const char *sqlstate);

/* Runs one statement without parameters and checks it (want
 * PGRES_COMMAND_OK or PGRES_TUPLES_OK, both accepted). */
int pg_pgpool_exec(PGconn *c, const char *sql, const char *what, pg_error *err);

#endif
