/* tests/support/pg_jobs_test.h - running a job in storage tests the way a
 * replica runs it: claimed through the shared queue, then changed only with
 * the fenced writes (service/store/db.h, "the shared job queue"). Storage has
 * no other way to change a job's state, so tests use the same path as the
 * job layer.
 *
 * A claim takes the oldest runnable job of the whole database, and a server
 * database is shared by the tests of a suite: a test that claims first
 * drains what earlier tests left runnable (pg_test_jobs_drain), then claims
 * its own jobs in admission order (pg_test_job_claim checks it got the one
 * it expected).
 */
#ifndef PG_JOBS_TEST_H
#define PG_JOBS_TEST_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service/ledger.h"
#include "service/store/db.h"

/* Far beyond any time a test uses: every lease has run out by then. */
#define PG_TEST_LATE ((int64_t)1 << 50)

/* Claims and finishes (succeeded) every runnable job, so that the next
 * claim takes the caller's oldest job. Only at a test's start: it also takes
 * over the running jobs the test holds. */
static inline void pg_test_jobs_drain(pg_db *db)
{
    for (;;) {
        pg_job_row *r;
        int found, held;
        ck_assert_int_eq(pg_db_job_claim(db, "drainer", PG_TEST_LATE, 1, &r, &found, NULL), PG_OK);
        if (!found) return;
        pg_job_patch p = {.now = PG_TEST_LATE,
                          .status = "succeeded",
                          .finished = 1,
                          .step = -1,
                          .steps_reserved = -1};
        ck_assert_int_eq(pg_db_job_patch_owned(db, r->id, "drainer", &p, &held, NULL), PG_OK);
        ck_assert_int_eq(held, 1);
        pg_job_rows_free(r, 1);
    }
}

/* Claims the oldest runnable job for node now (lease of an hour) and checks
 * it is `want`, now running. */
static inline void pg_test_job_claim(pg_db *db, const char *node, const char *want)
{
    pg_job_row *r;
    int found;
    pg_error err = {0};
    ck_assert_msg(pg_db_job_claim(db, node, (int64_t)time(NULL), 3600, &r, &found, &err) == PG_OK,
                  "%s", err.msg);
    ck_assert_msg(found, "%s claimed nothing, expected %s", node, want);
    ck_assert_str_eq(r->id, want);
    ck_assert_str_eq(r->status, "running");
    pg_job_rows_free(r, 1);
}

/* A fenced patch by the job's owner, now; checks it held. */
static inline void pg_test_job_patch(pg_db *db, const char *id, const char *node, pg_job_patch p)
{
    int held;
    pg_error err = {0};
    p.now = (int64_t)time(NULL);
    ck_assert_msg(pg_db_job_patch_owned(db, id, node, &p, &held, &err) == PG_OK, "%s", err.msg);
    ck_assert_msg(held, "%s does not hold %s", node, id);
}

/* The owner ends the job: status (succeeded, failed, cancelled), finished
 * now, error (NULL: none). */
static inline void pg_test_job_end(pg_db *db, const char *id, const char *node, const char *status,
                                   const char *error)
{
    pg_test_job_patch(
        db, id, node,
        (pg_job_patch){
            .status = status, .finished = 1, .error = error, .step = -1, .steps_reserved = -1});
}

/* Admits job id (queued) on dataset ds of tenant with spec and a plan
 * that charges nothing. */
static inline void pg_test_job_admit(pg_db *db, const char *tenant, const char *ds, const char *id,
                                     const char *spec)
{
    pg_job_row row;
    memset(&row, 0, sizeof row);
    snprintf(row.id, sizeof row.id, "%s", id);
    snprintf(row.tenant, sizeof row.tenant, "%s", tenant);
    snprintf(row.dataset_id, sizeof row.dataset_id, "%s", ds);
    snprintf(row.method, sizeof row.method, "m");
    row.spec = (char *)spec;
    pg_privacy_plan none;
    memset(&none, 0, sizeof none);
    pg_ledger_quote q;
    pg_error err = {0};
    ck_assert_msg(pg_db_job_admit(db, &row, &none, 1.0, 1e-5, &q, &err) == PG_OK, "%s", err.msg);
    ck_assert_int_eq(q.admit, 1);
}

/* A running job for checkpoints and histories: job id admitted as by
 * pg_test_job_admit, then claimed by node (after a drain). */
static inline void pg_test_job_run(pg_db *db, const char *tenant, const char *ds, const char *id,
                                   const char *node)
{
    pg_test_jobs_drain(db);
    pg_test_job_admit(db, tenant, ds, id, "{}");
    pg_test_job_claim(db, node, id);
}

/* pg_db_ckpt_put_owned by the job's owner; checks it held. */
static inline int pg_test_ckpt_put(pg_db *db, const char *job, const char *node, int64_t step,
                                   const unsigned char *bytes, size_t len, uint32_t crc)
{
    int held;
    pg_error err = {0};
    int rc = pg_db_ckpt_put_owned(db, job, node, step, bytes, len, crc, &held, &err);
    ck_assert_msg(rc || held, "%s does not hold %s", node, job);
    return rc;
}

/* Job id's row as pg_db_job_load_all sees it; fails the test when there is
 * none. Caller frees with pg_job_rows_free(row, 1). */
static inline pg_job_row *pg_test_job_row_of(pg_db *db, const char *id)
{
    pg_job_row *rows, *out = NULL;
    size_t n;
    pg_error err = {0};
    ck_assert_msg(pg_db_job_load_all(db, &rows, &n, &err) == PG_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].id, id)) {
            out = malloc(sizeof *out);
            ck_assert_ptr_nonnull(out);
            *out = rows[i];
            rows[i].spec = rows[i].error = NULL; /* now out's */
        }
    pg_job_rows_free(rows, n);
    ck_assert_msg(out != NULL, "no job %s", id);
    return out;
}

#endif
