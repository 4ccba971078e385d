/* tests/pg/pgtest_conn.h - side sessions on the suite's database
 * (pgtest_env.h), for tests that watch or hold rows outside the pool the
 * code under test uses. Each returned connection is the caller's
 * (PQfinish). Failures end the test with libpq's message. */
#ifndef PG_TEST_PGTEST_CONN_H
#define PG_TEST_PGTEST_CONN_H

#include <check.h>
#include <libpq-fe.h>

#include "pg/pgtest_env.h"

/* A session of the app role; notices below warnings are not printed. */
static inline PGconn *pgt_side(void)
{
    PGconn *c = PQconnectdb(pgt_uri());
    ck_assert_msg(PQstatus(c) == CONNECTION_OK, "%s", PQerrorMessage(c));
    PQclear(PQexec(c, "SET client_min_messages = warning"));
    return c;
}

/* sql on c must succeed (a command or a query). */
static inline void pgt_exec_ok(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK,
                  "%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
}

#endif
