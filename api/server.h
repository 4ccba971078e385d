/* api/server.h - privgend's HTTP server (libmicrohttpd, internal thread pool).
 *
 * The server borrows the database, metrics and config: they must outlive it.
 * Start binds and serves; stop quiesces (no new connections), lets in-flight
 * requests finish for up to grace_ms, then closes everything.
 */
#ifndef PG_API_SERVER_H
#define PG_API_SERVER_H

#include "engine/core/error.h"
#include "service/config.h"
#include "service/metrics.h"
#include "service/store/db.h"

typedef struct pg_api_server pg_api_server;

/* Binds cfg->listen ("host:port", IPv4; port 0 = any) and starts serving.
 * *port receives the bound port. */
int pg_api_server_start(const pg_svc_config *cfg, pg_db *db, pg_metrics *metrics,
                        pg_api_server **out, unsigned *port, pg_error *err);
/* Same, serving the job routes from `jobs` (which must outlive the server). */
struct pg_jobs;
int pg_api_server_start_jobs(const pg_svc_config *cfg, pg_db *db, pg_metrics *metrics,
                             struct pg_jobs *jobs, pg_api_server **out, unsigned *port,
                             pg_error *err);
/* Same, also serving the report routes from `reports` (may be NULL). */
struct pg_reports;
int pg_api_server_start_all(const pg_svc_config *cfg, pg_db *db, pg_metrics *metrics,
                            struct pg_jobs *jobs, struct pg_reports *reports, pg_api_server **out,
                            unsigned *port, pg_error *err);
void pg_api_server_stop(pg_api_server *s, int grace_ms);

/* The routing table, for the spec-coverage test: method and path pattern
 * ("/v1/datasets/{id}") of route i < pg_api_route_count(). */
size_t pg_api_route_count(void);
void pg_api_route_at(size_t i, const char **method, const char **pattern);

#endif
