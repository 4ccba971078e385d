/* privgend flags and environment: precedence, suffixes, rejection. */
#include <stdlib.h>

#include "service/config.h"
#include "support/pg_test.h"

START_TEST(defaults_env_flags)
{
    pg_svc_config c;
    pg_svc_config_defaults(&c);
    ck_assert_str_eq(c.listen, "127.0.0.1:8080");
    ck_assert_str_eq(c.data_dir, "./var");
    setenv("PRIVGEN_MAX_BODY", "2M", 1);
    setenv("PRIVGEN_LISTEN", "127.0.0.1:9", 1);
    char *argv[] = {"privgend", "--listen", "0.0.0.0:7", "--workers=3", "--max-rows", "1K", NULL};
    int help;
    ck_assert_int_eq(pg_svc_config_parse(&c, 6, argv, &help, NULL), PG_OK);
    ck_assert_str_eq(c.listen, "0.0.0.0:7"); /* flag beats env */
    ck_assert_uint_eq(c.max_body, 2u << 20);
    ck_assert_int_eq(c.workers, 3);
    ck_assert_uint_eq(c.max_rows, 1024);
    unsetenv("PRIVGEN_MAX_BODY");
    unsetenv("PRIVGEN_LISTEN");
}
END_TEST

START_TEST(bad_values_rejected)
{
    pg_svc_config c;
    pg_svc_config_defaults(&c);
    int help;
    pg_error err;
    char *a1[] = {"privgend", "--workers", "0", NULL};
    ck_assert_int_eq(pg_svc_config_parse(&c, 3, a1, &help, &err), PG_EINVAL);
    char *a2[] = {"privgend", "--max-body", "12Q", NULL};
    ck_assert_int_eq(pg_svc_config_parse(&c, 3, a2, &help, &err), PG_EINVAL);
    char *a3[] = {"privgend", "--bogus", NULL};
    ck_assert_int_eq(pg_svc_config_parse(&c, 2, a3, &help, &err), PG_EINVAL);
    char *a4[] = {"privgend", "--data-dir", NULL};
    ck_assert_int_eq(pg_svc_config_parse(&c, 2, a4, &help, &err), PG_EINVAL);
    char *a5[] = {"privgend", "--max-rows", "-5", NULL};
    ck_assert_int_eq(pg_svc_config_parse(&c, 3, a5, &help, &err), PG_EINVAL);
    char *a6[] = {"privgend", "--help", NULL};
    ck_assert_int_eq(pg_svc_config_parse(&c, 2, a6, &help, &err), PG_OK);
    ck_assert_int_eq(help, 1);
}
END_TEST

START_TEST(database_selection)
{
    pg_svc_config c;
    pg_svc_config_defaults(&c);
    char url[256];
    /* the default keeps the SQLite database in the data dir, as before */
    ck_assert_int_eq(pg_svc_config_db_url(&c, url, sizeof url, NULL), PG_OK);
    ck_assert_str_eq(url, "sqlite:./var/privgen.db");
    char *a1[] = {"privgend", "--data-dir", "/srv/pg", NULL};
    int help;
    ck_assert_int_eq(pg_svc_config_parse(&c, 3, a1, &help, NULL), PG_OK);
    ck_assert_int_eq(pg_svc_config_db_url(&c, url, sizeof url, NULL), PG_OK);
    ck_assert_str_eq(url, "sqlite:/srv/pg/privgen.db");
    ck_assert_int_eq(pg_svc_config_db_pool(&c), c.http_threads + c.workers + 2);
    /* env, then the flag */
    setenv("PRIVGEN_DB", "postgresql://env/db", 1);
    setenv("PRIVGEN_DB_POOL", "5", 1);
    pg_svc_config_defaults(&c);
    char *a2[] = {"privgend", NULL};
    ck_assert_int_eq(pg_svc_config_parse(&c, 1, a2, &help, NULL), PG_OK);
    ck_assert_int_eq(pg_svc_config_db_url(&c, url, sizeof url, NULL), PG_OK);
    ck_assert_str_eq(url, "postgresql://env/db");
    ck_assert_int_eq(pg_svc_config_db_pool(&c), 5);
    char *a3[] = {"privgend", "--db", "sqlite:/tmp/x.db", "--db-timeout-ms=2500", NULL};
    ck_assert_int_eq(pg_svc_config_parse(&c, 4, a3, &help, NULL), PG_OK);
    ck_assert_int_eq(pg_svc_config_db_url(&c, url, sizeof url, NULL), PG_OK);
    ck_assert_str_eq(url, "sqlite:/tmp/x.db");
    ck_assert_int_eq(c.db_timeout_ms, 2500);
    unsetenv("PRIVGEN_DB");
    unsetenv("PRIVGEN_DB_POOL");
    pg_error err;
    char *a4[] = {"privgend", "--db-pool", "0", NULL};
    ck_assert_int_eq(pg_svc_config_parse(&c, 3, a4, &help, &err), PG_EINVAL);
    char *a5[] = {"privgend", "--db", "", NULL};
    ck_assert_int_eq(pg_svc_config_parse(&c, 3, a5, &help, &err), PG_EINVAL);
    /* a URL that does not fit is an error, not a truncated URL */
    char small[16];
    ck_assert_int_eq(pg_svc_config_db_url(&c, small, sizeof small, &err), PG_EINVAL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("config");
    TCase *t = tcase_create("core");
    tcase_add_test(t, defaults_env_flags);
    tcase_add_test(t, bad_values_rejected);
    tcase_add_test(t, database_selection);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
