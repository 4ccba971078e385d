/* Backend-parametrized storage tests (service/store/db.h).
 *
 * A suite built on this header runs unchanged against any backend: the URL
 * comes from the environment variable PRIVGEN_TEST_DB (e.g. a PostgreSQL
 * URL of a throwaway cluster), and defaults to a fresh SQLite file in a
 * temporary directory per test. Because a server database is shared by all
 * tests of a run, tests never assume an empty database: every tenant,
 * dataset and job id they create is unique (pg_test_uid), and global counts
 * are compared as differences.
 */
#ifndef PG_TEST_DB_SUPPORT_H
#define PG_TEST_DB_SUPPORT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "service/store/db.h"
#include "support/pg_jobs_test.h"
#include "support/pg_test.h"
#include "test_support.h"

static char pg_test_db_dir[64];
static char pg_test_db_url[512];

/* Checked fixture: picks the URL (and makes the SQLite directory). */
static void pg_test_db_setup(void)
{
    const char *env = getenv("PRIVGEN_TEST_DB");
    pg_test_db_dir[0] = '\0';
    if (env && *env) {
        snprintf(pg_test_db_url, sizeof pg_test_db_url, "%s", env);
        return;
    }
    pg_test_tmpdir(pg_test_db_dir, sizeof pg_test_db_dir);
    snprintf(pg_test_db_url, sizeof pg_test_db_url, "sqlite:%s/privgen.db", pg_test_db_dir);
}

static void pg_test_db_teardown(void)
{
    if (pg_test_db_dir[0]) pg_test_rmrf(pg_test_db_dir);
}

static inline pg_db *pg_test_db_open(void)
{
    pg_db *db = NULL;
    pg_error err = {0};
    int rc = pg_db_open(pg_test_db_url, NULL, &db, &err);
    ck_assert_msg(rc == PG_OK, "cannot open the test database: %s", err.msg);
    return db;
}

/* "<prefix><16 hex>": unique across tests sharing one database. */
static inline void pg_test_uid(char *out, size_t cap, const char *prefix)
{
    uint64_t v;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) abort();
    snprintf(out, cap, "%s%016llx", prefix, (unsigned long long)v);
}

/* A dataset of tenant with rows of width d. */
static inline void pg_test_dataset(pg_db *db, const char *tenant, const char *id, int64_t d)
{
    pg_db_dataset ds = {0};
    snprintf(ds.id, sizeof ds.id, "%.*s", PG_ID_MAX - 1, id);
    snprintf(ds.tenant, sizeof ds.tenant, "%.*s", PG_ID_MAX - 1, tenant);
    ds.name = "n";
    ds.meta = "{}";
    ds.d = d;
    pg_error err = {0};
    ck_assert_msg(pg_db_dataset_insert(db, &ds, &err) == PG_OK, "%s", err.msg);
    ck_assert(ds.seq > 0);
}

/* A job row to admit: a fresh id (prefix and 16 hex digits) of tenant on
 * dataset ds, method "m", spec "{}"; the rest zero. */
static inline void pg_test_job_row(pg_job_row *row, const char *tenant, const char *ds,
                                   const char *prefix)
{
    memset(row, 0, sizeof *row);
    pg_test_uid(row->id, sizeof row->id, prefix);
    snprintf(row->tenant, sizeof row->tenant, "%s", tenant);
    snprintf(row->dataset_id, sizeof row->dataset_id, "%s", ds);
    snprintf(row->method, sizeof row->method, "m");
    row->spec = "{}";
}

/* Appends the n rows of x (n x d values) to dataset id of tenant as one
 * committed block; checks all n were added. */
static inline void pg_test_rows_append(pg_db *db, const char *tenant, const char *id, int64_t d,
                                       const float *x, int64_t n)
{
    pg_db_append *a;
    int found;
    int64_t rows, total;
    pg_error err = {0};
    ck_assert_msg(pg_db_append_begin(db, tenant, id, d, &a, &err) == PG_OK, "%s", err.msg);
    ck_assert_msg(pg_db_append_write(a, x, (size_t)(n * d), &err) == PG_OK, "%s", err.msg);
    ck_assert_msg(pg_db_append_commit(a, NULL, 1000000, &found, &rows, &total, &err) == PG_OK, "%s",
                  err.msg);
    ck_assert_int_eq(rows, n);
}

#endif
