/* service/store/pg/db_pg_schema.c - the PostgreSQL schema and its migrations.
 *
 * Migration k brings the schema from version k to k+1. Append only: never
 * edit a shipped migration, add the next one. All of them run in one
 * transaction holding a transaction-level advisory lock, so replicas that
 * start together queue on the lock and the later ones find the work done;
 * DDL is transactional in PostgreSQL, so a failed migration leaves the
 * previous version intact.
 */
#include <stdio.h>

#include "service/store/pg/db_pg.h"

/* 'priv' 'gen\0' as one bigint: the key of the schema lock. */
#define SCHEMA_LOCK "8245935278387130112"

static const char *const MIGRATIONS[] = {
    /* 1: everything privgend keeps. jobs.owner / jobs.lease_until are for
     * the shared job queue of many replicas (a claim takes owner and a
     * lease; NULL = nobody holds it). Row and checkpoint payloads are
     * chunked bytea (storage EXTERNAL: float data does not compress, so
     * PostgreSQL should not try). */
    "CREATE TABLE tenants(id text PRIMARY KEY, created_at bigint NOT NULL);"
    "CREATE TABLE tokens(id text PRIMARY KEY, tenant_id text NOT NULL REFERENCES tenants(id),"
    " scope text NOT NULL CHECK (scope IN ('admin','read')),"
    " hash bytea NOT NULL CHECK (length(hash) = 32), created_at bigint NOT NULL,"
    " revoked boolean NOT NULL DEFAULT false);"
    "CREATE TABLE datasets(seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " id text NOT NULL UNIQUE, tenant_id text NOT NULL, name text NOT NULL, meta text NOT NULL,"
    " d bigint NOT NULL CHECK (d > 0), n bigint NOT NULL DEFAULT 0 CHECK (n >= 0),"
    " blocks bigint NOT NULL DEFAULT 0, bytes bigint NOT NULL DEFAULT 0,"
    " created_at bigint NOT NULL);"
    "CREATE INDEX datasets_tenant ON datasets(tenant_id, seq);"
    "CREATE SEQUENCE row_block_ids;"
    "CREATE TABLE row_blocks(id bigint PRIMARY KEY,"
    " dataset_id text NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,"
    " k bigint NOT NULL, n bigint NOT NULL CHECK (n > 0), d bigint NOT NULL,"
    " has_labels boolean NOT NULL, payload bigint NOT NULL, bytes bigint NOT NULL,"
    " chunks integer NOT NULL, crc32 bigint NOT NULL, sha256 bytea NOT NULL,"
    " created_at bigint NOT NULL, UNIQUE (dataset_id, k));"
    "CREATE TABLE row_chunks(block_id bigint NOT NULL"
    " REFERENCES row_blocks(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,"
    " i integer NOT NULL, data bytea NOT NULL, PRIMARY KEY (block_id, i));"
    "ALTER TABLE row_chunks ALTER COLUMN data SET STORAGE EXTERNAL;"
    "CREATE TABLE jobs(seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " id text NOT NULL UNIQUE, tenant_id text NOT NULL, dataset_id text NOT NULL,"
    " method text NOT NULL DEFAULT '', status text NOT NULL, spec text NOT NULL, error text,"
    " created_at bigint NOT NULL, updated_at bigint NOT NULL, started_at bigint,"
    " finished_at bigint, step bigint NOT NULL DEFAULT 0,"
    " steps_reserved bigint NOT NULL DEFAULT 0, data_n bigint NOT NULL DEFAULT 0,"
    " public_dataset_id text, public_n bigint NOT NULL DEFAULT 0,"
    " owner text, lease_until bigint);"
    "CREATE INDEX jobs_tenant ON jobs(tenant_id, seq);"
    "CREATE INDEX jobs_dataset ON jobs(dataset_id, status);"
    "CREATE INDEX jobs_public ON jobs(public_dataset_id, status);"
    "CREATE INDEX jobs_active ON jobs(seq) WHERE status IN ('queued', 'running');"
    "CREATE TABLE ledger(seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " dataset_id text NOT NULL, job_id text UNIQUE,"
    " state text NOT NULL CHECK (state IN ('reserved', 'refunded')), rdp text,"
    " epsilon double precision, delta double precision, created_at bigint NOT NULL);"
    "CREATE INDEX ledger_dataset ON ledger(dataset_id, state);"
    "CREATE TABLE checkpoints(job_id text NOT NULL, step bigint NOT NULL,"
    " bytes bigint NOT NULL, chunks integer NOT NULL, crc32 bigint NOT NULL,"
    " sha256 bytea NOT NULL, created_at bigint NOT NULL, PRIMARY KEY (job_id, step));"
    "CREATE TABLE checkpoint_chunks(job_id text NOT NULL, step bigint NOT NULL,"
    " i integer NOT NULL, data bytea NOT NULL, PRIMARY KEY (job_id, step, i),"
    " FOREIGN KEY (job_id, step) REFERENCES checkpoints(job_id, step)"
    " ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED);"
    "ALTER TABLE checkpoint_chunks ALTER COLUMN data SET STORAGE EXTERNAL;"
    "CREATE TABLE idempotency(tenant_id text NOT NULL, key text NOT NULL,"
    " fp bytea NOT NULL, status integer NOT NULL, location text, body bytea NOT NULL,"
    " created_at bigint NOT NULL, PRIMARY KEY (tenant_id, key));",
    /* 2: a job's durable view (service/jobs/jobs_hist.c), one JSON document. */
    "CREATE TABLE job_history(job_id text PRIMARY KEY, doc text NOT NULL,"
    " updated_at bigint NOT NULL);",
    /* 3: token list order, expiry, revocation and last use (db_pg.h). */
    PGB_MIGRATION_TOKENS,
    /* 4: a cancel of a running job asked through any replica (service/store/db.h,
     * pg_db_job_cancel_running); its owner acts on it. */
    "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS cancel_requested boolean NOT NULL DEFAULT false;",
    /* 5: quality reports and their figures (db_pg.h). */
    PGB_MIGRATION_REPORTS,
    /* 6: who minted a token; idempotency keys owned by a token (db_pg.h). */
    PGB_MIGRATION_OWNERS,
};
#define NMIGRATIONS ((int)(sizeof MIGRATIONS / sizeof MIGRATIONS[0]))
const int PGB_SCHEMA_LATEST = NMIGRATIONS;

int pgb_schema_version(PGconn *c, int *version, pg_error *err)
{
    PGresult *r;
    /* A database never migrated has no table yet: version 0, not an error. */
    int rc = pgb_q(c, "SELECT to_regclass('schema_version') IS NOT NULL", NULL,
                   "reading the schema version", &r, err);
    if (rc) return rc;
    int exists = pgb_i64_at(r, 0, 0) != 0;
    PQclear(r);
    *version = 0;
    if (!exists) return PG_OK;
    rc = pgb_q(c, "SELECT coalesce(max(version), 0)::bigint FROM schema_version", NULL,
               "reading the schema version", &r, err);
    if (rc) return rc;
    *version = (int)pgb_i64_at(r, 0, 0);
    PQclear(r);
    return PG_OK;
}

static int migrate_locked(PGconn *c, pg_error *err)
{
    /* A migration may rewrite big tables, and a replica starting meanwhile
     * waits for it on the lock: neither is a runaway statement, so the
     * pool's statement timeout does not apply; a lock held for more than
     * ten minutes means something is stuck, and start-up fails instead. */
    int rc = pgb_q(c, "SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = '10min'", NULL,
                   "preparing the migration", NULL, err);
    if (rc) return rc;
    rc = pgb_q(c, "SELECT pg_advisory_xact_lock(" SCHEMA_LOCK ")", NULL, "taking the schema lock",
               NULL, err);
    if (rc) return rc;
    int v;
    if ((rc = pgb_schema_version(c, &v, err))) return rc;
    if (v > NMIGRATIONS)
        return pg_error_set(err, PG_ENOTSUP,
                            "database schema version %d is newer than this privgend (which knows "
                            "up to %d): upgrade privgend, or point it at another database",
                            v, NMIGRATIONS);
    if (v == NMIGRATIONS) return PG_OK;
    if (v == 0 && (rc = pgb_q(c,
                              "CREATE TABLE IF NOT EXISTS schema_version(version integer NOT NULL);"
                              "DELETE FROM schema_version; INSERT INTO schema_version VALUES (0)",
                              NULL, "creating schema_version", NULL, err)))
        return rc;
    for (; v < NMIGRATIONS; v++) {
        char what[48];
        snprintf(what, sizeof what, "applying migration %d", v + 1);
        if ((rc = pgb_q(c, MIGRATIONS[v], NULL, what, NULL, err))) return rc;
    }
    pgb_args a = {0};
    pgb_i64(&a, NMIGRATIONS);
    return pgb_q(c, "UPDATE schema_version SET version = $1", &a, "recording the schema version",
                 NULL, err);
}

int pgb_migrate(PGconn *c, pg_error *err)
{
    int rc = pgb_q(c, "BEGIN", NULL, "starting the migration", NULL, err);
    if (rc) return rc;
    rc = migrate_locked(c, err);
    if (!rc) rc = pgb_q(c, "COMMIT", NULL, "committing the migration", NULL, err);
    if (rc) {
        PGresult *r = PQexec(c, "ROLLBACK");
        PQclear(r);
    }
    return rc;
}
