/* privgend flags and environment: precedence, suffixes, rejection. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service/config.h"
#include "service/store/db.h"
#include "support/pg_test.h"

/* c from its defaults and the environment alone, with name=value set
 * meanwhile. */
static void from_env(pg_svc_config *c, const char *name, const char *value)
{
    setenv(name, value, 1);
    pg_svc_config_defaults(c);
    char *none[] = {"privgend", NULL};
    int help;
    pg_error err = {0};
    ck_assert_msg(pg_svc_config_parse(c, 1, none, &help, &err) == PG_OK, "%s", err.msg);
    unsetenv(name);
}

/* Each {flag, value} of bad (value NULL: the flag alone, with any "=value"
 * in it) given to c is refused: PG_EINVAL and a message naming the flag
 * (its name before any "="); with documented, the usage text names it
 * too. */
static void refused(pg_svc_config *c, const char *const (*bad)[2], size_t n, bool documented)
{
    for (size_t i = 0; i < n; i++) {
        char *a[] = {"privgend", (char *)bad[i][0], (char *)bad[i][1], NULL};
        int help;
        pg_error err = {0};
        ck_assert_int_eq(pg_svc_config_parse(c, bad[i][1] ? 3 : 2, a, &help, &err), PG_EINVAL);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(bad[i][0], "="), bad[i][0]);
        ck_assert_msg(strstr(err.msg, name) != NULL, "%s: %s", name, err.msg);
        if (documented) ck_assert_ptr_nonnull(strstr(pg_svc_config_usage(), name));
    }
}

/* An integer setting: its flag, where c keeps it (an int or a size_t), its
 * default, and a value given on the command line (NULL: the flag alone)
 * with what that sets. */
typedef struct setting {
    const char *flag;
    size_t off, size;
    long dflt;
    const char *value;
    long want;
} setting;
/* A field's place in pg_svc_config, for a setting. */
#define FIELD(f) offsetof(pg_svc_config, f), sizeof(((pg_svc_config *)0)->f)

static long value_of(const pg_svc_config *c, const setting *s)
{
    const char *p = (const char *)c + s->off;
    if (s->size == sizeof(int)) {
        int v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    if (s->size != sizeof(size_t)) ck_abort_msg("%s: neither an int nor a size_t", s->flag);
    size_t v;
    memcpy(&v, p, sizeof v);
    return (long)v;
}

/* c from its defaults, where each of the n settings s has its default;
 * then all of them given on one command line (environment unset), each
 * taking its value. */
static void defaults_then_given(pg_svc_config *c, const setting *s, size_t n)
{
    pg_svc_config_defaults(c);
    char *argv[32] = {"privgend"};
    int argc = 1;
    ck_assert_uint_lt(2 * n + 1, 32);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(value_of(c, &s[i]) == s[i].dflt, "%s: default %ld, want %ld", s[i].flag,
                      value_of(c, &s[i]), s[i].dflt);
        argv[argc++] = (char *)s[i].flag;
        if (s[i].value) argv[argc++] = (char *)s[i].value;
    }
    argv[argc] = NULL;
    int help;
    pg_error err = {0};
    ck_assert_msg(pg_svc_config_parse(c, argc, argv, &help, &err) == PG_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(value_of(c, &s[i]) == s[i].want, "%s %s: %ld, want %ld", s[i].flag,
                      s[i].value ? s[i].value : "", value_of(c, &s[i]), s[i].want);
}

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
    static const char *const bad[][2] = {{"--workers", "0"},
                                         {"--max-body", "12Q"},
                                         {"--bogus", NULL},
                                         {"--data-dir", NULL},
                                         {"--max-rows", "-5"}};
    refused(&c, bad, sizeof bad / sizeof bad[0], false);
    int help;
    pg_error err;
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
    ck_assert_int_eq(pg_svc_config_db_pool(&c), c.http_threads + c.workers + c.report_workers + 2);
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
    ck_assert_int_eq(c.ledger_cache_rows, 8192);
    char *a6[] = {"privgend", "--ledger-cache-rows", "0", NULL};
    ck_assert_int_eq(pg_svc_config_parse(&c, 3, a6, &help, NULL), PG_OK);
    ck_assert_int_eq(c.ledger_cache_rows, 0);
    char *a7[] = {"privgend", "--ledger-cache-rows", "-1", NULL};
    ck_assert_int_eq(pg_svc_config_parse(&c, 3, a7, &help, NULL), PG_EINVAL);
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

/* c parsed from argv (argc of them, "privgend" first), and its node id
 * into node. */
static void node_of(pg_svc_config *c, int argc, char **argv, char node[PG_NODE_MAX])
{
    int help;
    pg_error err = {0};
    ck_assert_msg(pg_svc_config_parse(c, argc, argv, &help, &err) == PG_OK, "%s", err.msg);
    ck_assert_msg(pg_svc_config_node_id(c, node, PG_NODE_MAX, &err) == PG_OK, "%s", err.msg);
}

START_TEST(replica_flags)
{
    pg_svc_config c;
    pg_svc_config_defaults(&c);
    ck_assert_int_eq(c.lease_s, 30);
    ck_assert_int_eq(c.heartbeat_s, 10);
    ck_assert_ptr_null(c.node_id);
    int help;
    pg_error err = {0};
    char node[PG_NODE_MAX], host[256];
    ck_assert_int_eq(gethostname(host, sizeof host), 0);
    /* default: hostname and the port of --listen */
    char *a1[] = {"privgend", "--listen", "10.0.0.1:9001", NULL};
    node_of(&c, 3, a1, node);
    char want[300];
    snprintf(want, sizeof want, "%s:9001", host);
    ck_assert_str_eq(node, want);
    /* port 0: the data dir keeps replicas of one host apart, and a restart
     * on the same data dir (however it is spelled) is the same node */
    char *a2[] = {"privgend", "--listen", "127.0.0.1:0", "--data-dir", "/tmp/../tmp", NULL};
    node_of(&c, 5, a2, node);
    snprintf(want, sizeof want, "%s:0-", host);
    ck_assert_int_eq(strncmp(node, want, strlen(want)), 0);
    ck_assert_uint_eq(strlen(node), strlen(want) + 8);
    char again[PG_NODE_MAX], other[PG_NODE_MAX];
    char *a2b[] = {"privgend", "--listen", "127.0.0.1:0", "--data-dir", "/tmp", NULL};
    node_of(&c, 5, a2b, again);
    ck_assert_str_eq(again, node);
    char *a2c[] = {"privgend", "--listen", "127.0.0.1:0", "--data-dir", "/var/tmp", NULL};
    node_of(&c, 5, a2c, other);
    ck_assert_str_ne(other, node);
    /* the workers' pace flags */
    static const setting pace_ok[] = {{"--claim-poll-ms", FIELD(claim_poll_ms), 500, "50", 50},
                                      {"--progress-seconds", FIELD(progress_s), 2, "0", 0}};
    defaults_then_given(&c, pace_ok, sizeof pace_ok / sizeof pace_ok[0]);
    static const char *const pace[][2] = {
        {"--claim-poll-ms", "5"}, {"--progress-seconds", "-1"}, {"--progress-seconds", "3601"}};
    refused(&c, pace, sizeof pace / sizeof pace[0], true);
    char *a3[] = {
        "privgend", "--node-id", "replica-b", "--lease-seconds", "6", "--heartbeat-seconds=2",
        NULL};
    node_of(&c, 6, a3, node);
    ck_assert_str_eq(node, "replica-b");
    ck_assert_int_eq(c.lease_s, 6);
    ck_assert_int_eq(c.heartbeat_s, 2);
    /* the heartbeat must come before the lease runs out */
    pg_svc_config_defaults(&c);
    char *b1[] = {"privgend", "--lease-seconds", "10", NULL};
    ck_assert_int_eq(pg_svc_config_parse(&c, 3, b1, &help, &err), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "--heartbeat-seconds"));
    char longid[PG_NODE_MAX + 1];
    memset(longid, 'x', PG_NODE_MAX);
    longid[PG_NODE_MAX] = '\0';
    const char *const bad[][2] = {
        {"--heartbeat-seconds", "0"}, {"--node-id", "has space"}, {"--node-id", longid}};
    pg_svc_config_defaults(&c);
    refused(&c, bad, sizeof bad / sizeof bad[0], true);
    ck_assert_ptr_nonnull(strstr(pg_svc_config_usage(), "--lease-seconds"));
}
END_TEST

/* The CPU budget's flags: --cpus (0: online cores), --cpu-follow-load 0|1,
 * --threads-per-job now a cap with 0 (none) as default; bounds refused. */
START_TEST(cpu_budget_flags)
{
    pg_svc_config c;
    static const setting s[] = {{"--cpus", FIELD(cpus), 0, "3", 3},
                                {"--cpu-follow-load", FIELD(cpu_follow_load), 1, "0", 0},
                                {"--threads-per-job", FIELD(threads_per_job), 0, "0", 0}};
    defaults_then_given(&c, s, sizeof s / sizeof s[0]);
    static const char *const bad[][2] = {{"--cpu-follow-load", "2"}, {"--cpus", "-1"}};
    pg_svc_config_defaults(&c);
    refused(&c, bad, sizeof bad / sizeof bad[0], true);
}
END_TEST

/* The snapshot cache's memory cap: MiB, 0 allowed, bounded. */
START_TEST(snapshot_cache_flag)
{
    pg_svc_config c;
    static const setting s[] = {{"--snapshot-cache-mb", FIELD(snapshot_cache_mb), 512, "64", 64}};
    defaults_then_given(&c, s, 1);
    from_env(&c, "PRIVGEN_SNAPSHOT_CACHE_MB", "0");
    ck_assert_int_eq(c.snapshot_cache_mb, 0);
    static const char *const bad[][2] = {{"--snapshot-cache-mb", "-1"},
                                         {"--snapshot-cache-mb", "x"},
                                         {"--snapshot-cache-mb", "1048577"},
                                         {"--snapshot-cache-mb", ""},
                                         {"--snapshot-cache-mb", "1.5"}};
    pg_svc_config_defaults(&c);
    refused(&c, bad, sizeof bad / sizeof bad[0], true);
}
END_TEST

START_TEST(report_flags)
{
    pg_svc_config c;
    static const setting s[] = {{"--report-workers", FIELD(report_workers), 1, "0", 0},
                                {"--max-queued-reports", FIELD(max_queued_reports), 16, "3", 3}};
    defaults_then_given(&c, s, sizeof s / sizeof s[0]);
    static const char *const bad[][2] = {{"--report-workers", "17"},
                                         {"--report-workers", "-1"},
                                         {"--report-workers", "x"},
                                         {"--max-queued-reports", "0"}};
    refused(&c, bad, sizeof bad / sizeof bad[0], false);
    from_env(&c, "PRIVGEN_REPORT_WORKERS", "4");
    ck_assert_int_eq(c.report_workers, 4);
}
END_TEST

/* Slow-client bounds: defaults, flags, env, 0 where it means "off". */
START_TEST(slow_client_flags)
{
    pg_svc_config c;
    static const setting s[] = {
        {"--http-timeout-seconds", FIELD(http_timeout_s), 30, "5", 5},
        {"--max-connections", FIELD(max_connections), 1000, "50", 50},
        {"--max-connections-per-ip", FIELD(max_conns_per_ip), 0, "8", 8},
        {"--max-uploads", FIELD(max_uploads), 16, "3", 3},
        {"--max-uploads-per-token", FIELD(max_uploads_per_token), 4, "2", 2},
        {"--min-body-rate", FIELD(min_body_rate), 1024, "0", 0},
        {"--body-grace-seconds", FIELD(body_grace_s), 10, "4", 4}};
    defaults_then_given(&c, s, sizeof s / sizeof s[0]);
    static const char *const bad[][2] = {
        {"--http-timeout-seconds", "0"},  {"--max-connections", "0"}, {"--max-uploads", "0"},
        {"--max-uploads-per-token", "0"}, {"--min-body-rate", "-1"},  {"--body-grace-seconds", "0"},
        {"--max-connections-per-ip", "x"}};
    refused(&c, bad, sizeof bad / sizeof bad[0], true);
    from_env(&c, "PRIVGEN_MIN_BODY_RATE", "4K");
    ck_assert_int_eq(c.min_body_rate, 4096);
}
END_TEST

/* The header phase's bound and the opt-in to share a port. */
START_TEST(header_timeout_and_reuse_port_flags)
{
    pg_svc_config c;
    /* a flag alone takes no value: the next flag is still parsed */
    static const setting s[] = {{"--reuse-port", FIELD(reuse_port), 0, NULL, 1},
                                {"--header-timeout-seconds", FIELD(header_timeout_s), 20, "7", 7}};
    defaults_then_given(&c, s, sizeof s / sizeof s[0]);
    int help;
    pg_error err;
    char *off[] = {"privgend", "--reuse-port=0", NULL};
    ck_assert_int_eq(pg_svc_config_parse(&c, 2, off, &help, &err), PG_OK);
    ck_assert_int_eq(c.reuse_port, 0);
    static const char *const bad[][2] = {{"--header-timeout-seconds", "0"},
                                         {"--header-timeout-seconds", "x"},
                                         {"--reuse-port=2", NULL}};
    refused(&c, bad, sizeof bad / sizeof bad[0], false);
    ck_assert_ptr_nonnull(strstr(pg_svc_config_usage(), "--header-timeout-seconds"));
    ck_assert_ptr_nonnull(strstr(pg_svc_config_usage(), "--reuse-port"));
    from_env(&c, "PRIVGEN_REUSE_PORT", "1");
    ck_assert_int_eq(c.reuse_port, 1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("config");
    TCase *t = tcase_create("core");
    tcase_add_test(t, defaults_env_flags);
    tcase_add_test(t, bad_values_rejected);
    tcase_add_test(t, replica_flags);
    tcase_add_test(t, database_selection);
    tcase_add_test(t, snapshot_cache_flag);
    tcase_add_test(t, cpu_budget_flags);
    tcase_add_test(t, report_flags);
    tcase_add_test(t, slow_client_flags);
    tcase_add_test(t, header_timeout_and_reuse_port_flags);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
