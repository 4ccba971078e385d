/* tests/pg/pgtest_env.h - the throwaway cluster a PostgreSQL suite runs on.
 *
 * CTest runs every `postgres` suite through `scripts/pgtest.sh exec`, which
 * creates a fresh database for it and sets PRIVGEN_TEST_DB (the app role's
 * URI, with password), PRIVGEN_TEST_PG_ADMIN (the superuser's URI of the
 * same database) and PRIVGEN_TEST_PG_DIR (the cluster directory, for fault
 * tests that stop and start the server). A suite run by hand without them
 * fails at once with a message saying how to get them.
 */
#ifndef PG_TEST_PGTEST_ENV_H
#define PG_TEST_PGTEST_ENV_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "support/pg_test.h"

static inline const char *pgt_env(const char *name)
{
    const char *v = getenv(name);
    ck_assert_msg(v && v[0],
                  "%s is not set: run through ctest -L postgres, or "
                  "scripts/pgtest.sh exec DIR NAME <this binary>",
                  name);
    return v;
}

static inline const char *pgt_uri(void)
{
    return pgt_env("PRIVGEN_TEST_DB");
}

/* scripts/pgtest.sh ACTION on the suite's cluster (restart, halt, resume);
 * returns the script's exit status. */
static inline int pgt_cluster(const char *action)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/scripts/pgtest.sh' %s '%s' >/dev/null 2>&1",
             pg_test_source_dir(), action, pgt_env("PRIVGEN_TEST_PG_DIR"));
    int st = system(cmd);
    return st == -1 ? -1 : WEXITSTATUS(st);
}

#endif
