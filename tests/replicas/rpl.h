/* tests/replicas/rpl.h - several real privgend replicas on one PostgreSQL.
 *
 * rpl_up starts RPL_N replicas on loopback (ephemeral ports) against one
 * database of their own, created on the throwaway cluster that
 * `pgtest.sh exec` names in PRIVGEN_TEST_DB_URL / PRIVGEN_TEST_DB_CREATE
 * (one database per test, so one test's jobs never meet another's). Each
 * replica has its own data dir, --node-id r1..rN and the lease periods of
 * its test (rpl_up). Replica 1 starts first: it migrates the schema and
 * writes the admin token the tests use on every replica (tokens live in
 * the shared database).
 *
 * Cleanup always: each replica gets PR_SET_PDEATHSIG = SIGKILL, so it dies
 * with the test process however that ends (a failed assertion, a Check
 * timeout's SIGKILL); rpl_down (and an atexit handler) kill what is left,
 * stopped ones included. Scratch dirs live under one root that
 * rpl_run_suite creates in the runner process before Check forks the tests
 * and removes after the last one, whatever they did. The databases go with
 * the cluster, which the CTest fixture removes.
 *
 * The tests read the durable truth (job rows, ledger, checkpoints) through
 * service/store/db.h on the same database, not through one replica's view.
 */
#ifndef PG_RPL_H
#define PG_RPL_H

#include <check.h>
#include <errno.h>
#include <libpq-fe.h>
#include <math.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include "integration/itest.h"

#define RPL_N   3
#define RPL_MAX 8 /* servers one test may start (replicas + reference boxes) */

typedef struct rpl {
    pg_srv r[RPL_N];
    char node[RPL_N][16];
    char db_url[512];
    char url[RPL_N][600]; /* db_url naming replica k's sessions (rpl_app) */
    char admin[96];
    char lease[12], heartbeat[12]; /* --lease-seconds, --heartbeat-seconds */
    pg_db *db;                     /* the test's own handle on the shared database */
} rpl;

/* Every server started in this process, for the atexit cleanup. */
static pg_srv *rpl_started[RPL_MAX];
static int rpl_nstarted;
/* The scratch root of this run (rpl_run_suite), inherited by the tests. */
static char rpl_root[32];

static inline void rpl_reap(void)
{
    for (int i = 0; i < rpl_nstarted; i++) {
        pg_srv *s = rpl_started[i];
        if (s->pid > 0) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
            s->pid = 0;
        }
        if (s->dir[0]) {
            char cmd[128];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
            if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", s->dir);
            s->dir[0] = '\0';
        }
    }
    rpl_nstarted = 0;
}

static inline void rpl_track(pg_srv *s)
{
    static int registered;
    if (!registered) {
        atexit(rpl_reap);
        registered = 1;
    }
    for (int i = 0; i < rpl_nstarted; i++)
        if (rpl_started[i] == s) return;
    ck_assert_int_lt(rpl_nstarted, RPL_MAX);
    rpl_started[rpl_nstarted++] = s;
}

/* 200 from GET /readyz within secs seconds. */
static inline int rpl_wait_ready(const pg_srv *s, int secs)
{
    for (int i = 0; i < secs * 20; i++) {
        pg_resp r;
        pg_http(s, "GET", "/readyz", NULL, NULL, NULL, 0, NULL, &r);
        long st = r.status;
        pg_resp_free(&r);
        if (st == 200) return 0;
        pg_sleep_ms(50);
    }
    return -1;
}

/* Starts (or restarts, keeping its dir) server s with storage db_url (NULL:
 * SQLite in its data dir, a single box), node name node (NULL: the default)
 * and extra flags (NULL-terminated). Waits for its port and /readyz. */
static inline void rpl_spawn(pg_srv *s, const char *db_url, const char *node,
                             const char *const *extra)
{
    rpl_track(s);
    if (!s->dir[0]) {
        char dir[sizeof s->dir];
        snprintf(dir, sizeof dir, "%.32s/XXXXXX", rpl_root[0] ? rpl_root : "/tmp");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        memcpy(s->dir, dir, sizeof dir);
        snprintf(s->data, sizeof s->data, "%s/data", dir);
    }
    char port_file[128], log[128], sqlite[160];
    if (!db_url) {
        snprintf(sqlite, sizeof sqlite, "sqlite:%s/privgen.db", s->data);
        db_url = sqlite;
    }
    snprintf(port_file, sizeof port_file, "%s/port", s->dir);
    snprintf(log, sizeof log, "%s/privgend.log", s->dir);
    unlink(port_file);
    const char *argv[40] = {PRIVGEND_PATH, "--listen", "127.0.0.1:0", "--data-dir", s->data,
                            "--port-file", port_file,  "--db",        db_url};
    int argc = 9;
    if (node) {
        argv[argc++] = "--node-id";
        argv[argc++] = node;
    }
    for (int i = 0; extra && extra[i] && argc < 39; i++) argv[argc++] = extra[i];
    argv[argc] = NULL;
    pid_t parent = getpid();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* dies with the test process, whatever kills it */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) dup2(fd, 2);
        execv(PRIVGEND_PATH, (char *const *)argv);
        _exit(127);
    }
    s->pid = pid;
    s->port = 0;
    for (int i = 0; i < 3000 && !s->port; i++) {
        FILE *f = fopen(port_file, "r");
        if (f) {
            if (fscanf(f, "%u", &s->port) != 1) s->port = 0;
            fclose(f);
        }
        int st;
        if (!s->port && waitpid(pid, &st, WNOHANG) == pid) {
            s->pid = 0;
            ck_abort_msg("privgend exited at start (see %s)", log);
        }
        if (!s->port) pg_sleep_ms(10);
    }
    ck_assert_msg(s->port, "privgend wrote no port (see %s)", log);
    ck_assert_msg(rpl_wait_ready(s, 60) == 0, "privgend not ready (see %s)", log);
}

/* s->admin from the admin token the server's first start wrote. */
static inline void rpl_read_token(pg_srv *s)
{
    char tp[160];
    snprintf(tp, sizeof tp, "%s/admin.token", s->data);
    FILE *f = fopen(tp, "r");
    ck_assert_msg(f != NULL, "no admin token in %s", s->data);
    ck_assert_ptr_nonnull(fgets(s->admin, sizeof s->admin, f));
    fclose(f);
    s->admin[strcspn(s->admin, "\n")] = '\0';
}

/* The application_name of replica k's database sessions: each replica
 * connects with its own (rpl_up), so a test can tell which of them a
 * session in pg_stat_activity belongs to (rpl_settle). */
static inline void rpl_app(const rpl *c, int k, char out[32])
{
    snprintf(out, 32, "rpl-%s", c->node[k]);
}

/* Starts replica k (0-based) of c, or restarts it after a kill. */
static inline void rpl_start_one(rpl *c, int k)
{
    const char *const flags[] = {
        "--lease-seconds", c->lease, "--heartbeat-seconds", c->heartbeat, "--workers", "1", NULL};
    rpl_spawn(&c->r[k], c->url[k], c->node[k], flags);
    snprintf(c->r[k].admin, sizeof c->r[k].admin, "%s", c->admin);
}

/* A fresh database named rpl_<name> and RPL_N replicas on it, with lease
 * and heartbeat periods lease_s and heartbeat_s. Short ones (2-4 s / 1 s)
 * make takeovers quick to test, but on a loaded machine (CI runs suites
 * two at a time on two cores) a heartbeat can come late: the replica then
 * loses a lease nobody meant it to lose, and the job ends a reserved chunk
 * short (by design: see service/store/db.h). Tests that need no expiry use long
 * leases so that cannot happen to them. */
static inline void rpl_up(rpl *c, const char *name, int lease_s, int heartbeat_s)
{
    memset(c, 0, sizeof *c);
    snprintf(c->lease, sizeof c->lease, "%d", lease_s);
    snprintf(c->heartbeat, sizeof c->heartbeat, "%d", heartbeat_s);
    const char *url = getenv("PRIVGEN_TEST_DB_URL"), *create = getenv("PRIVGEN_TEST_DB_CREATE");
    ck_assert_msg(url && *url && create && *create,
                  "run through scripts/pgtest.sh exec (ctest -L postgres)");
    char db[64], cmd[640];
    snprintf(db, sizeof db, "rpl_%s", name);
    snprintf(cmd, sizeof cmd, "%s %s", create, db);
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    size_t at = 0;
    for (const char *p = url; *p && at + 64 < sizeof c->db_url; p++) {
        if (p[0] == '%' && p[1] == 's') {
            at += (size_t)snprintf(c->db_url + at, sizeof c->db_url - at, "%s", db);
            p++;
        } else {
            c->db_url[at++] = *p;
        }
    }
    c->db_url[at] = '\0';
    for (int k = 0; k < RPL_N; k++) {
        snprintf(c->node[k], sizeof c->node[k], "r%d", k + 1);
        char app[32];
        rpl_app(c, k, app);
        /* a URL setting overrides privgend's own application_name (service/store/pg/pgpool.c) */
        snprintf(c->url[k], sizeof c->url[k], "%s%sapplication_name=%s", c->db_url,
                 strchr(c->db_url, '?') ? "&" : "?", app);
    }
    rpl_start_one(c, 0);
    rpl_read_token(&c->r[0]);
    snprintf(c->admin, sizeof c->admin, "%s", c->r[0].admin);
    for (int k = 1; k < RPL_N; k++) rpl_start_one(c, k);
    pg_error err = {0};
    ck_assert_msg(pg_db_open(c->db_url, NULL, &c->db, &err) == PG_OK, "%s", err.msg);
}

static inline void rpl_down(rpl *c)
{
    if (c->db) pg_db_close(c->db);
    c->db = NULL;
    rpl_reap();
}

/* Index of the replica named node, -1 when none. */
static inline int rpl_index(const rpl *c, const char *node)
{
    for (int k = 0; k < RPL_N; k++)
        if (!strcmp(c->node[k], node)) return k;
    return -1;
}

/* ---- HTTP --------------------------------------------------------------- */

static inline void rpl_req(const pg_srv *s, const char *method, const char *path, const char *body,
                           const char *const *headers, pg_resp *r)
{
    pg_http(s, method, path, s->admin, body ? "application/json" : NULL, body,
            body ? strlen(body) : 0, headers, r);
}

/* A central 2-D dataset with budget cap (epsilon, delta 1e-5), created
 * through s, and n rows on a circle appended through s. */
static inline void rpl_dataset(const pg_srv *s, double cap, int n, char id[64])
{
    char body[256];
    snprintf(body, sizeof body,
             "{\"name\":\"c\",\"shape\":[2],\"range\":[-1,1],\"privacy\":{\"model\":"
             "\"central\",\"budget\":{\"epsilon\":%.17g,\"delta\":1e-5}}}",
             cap);
    pg_resp r;
    rpl_req(s, "POST", "/v1/datasets", body, NULL, &r);
    ck_assert_msg(r.status == 201, "%ld %s", r.status, r.body);
    snprintf(id, 64, "%s", json_string_value(json_object_get(r.json, "id")));
    pg_resp_free(&r);
    size_t bc = (size_t)n * 40 + 64, k = 0;
    char *b = malloc(bc);
    ck_assert_ptr_nonnull(b);
    k += (size_t)snprintf(b + k, bc - k, "{\"rows\":[");
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(b + k, bc - k, "%s[%.4f,%.4f]", i ? "," : "", 0.8 * cos(0.05 * i),
                              0.8 * sin(0.05 * i));
    snprintf(b + k, bc - k, "]}");
    char path[128];
    snprintf(path, sizeof path, "/v1/datasets/%.64s/rows", id);
    rpl_req(s, "POST", path, b, NULL, &r);
    free(b);
    ck_assert_msg(r.status == 200, "%ld %s", r.status, r.body);
    pg_resp_free(&r);
}

/* A dp_sinkhorn job: batch 20, so q = 20 / rows. */
static inline void rpl_job_body(char *buf, size_t cap, const char *ds, long steps, double sigma,
                                long every)
{
    snprintf(buf, cap,
             "{\"dataset_id\":\"%s\",\"method\":\"dp_sinkhorn\",\"model\":{\"hidden\":[16]},"
             "\"train\":{\"steps\":%ld,\"batch_size\":20},\"ot\":{\"max_iter\":20},"
             "\"privacy\":{\"noise_multiplier\":%.17g},\"checkpoint_every\":%ld,\"seed\":3}",
             ds, steps, sigma, every);
}

/* POST /v1/jobs through s; 202 expected; the id into id. */
static inline void rpl_submit(const pg_srv *s, const char *body, char id[64])
{
    pg_resp r;
    rpl_req(s, "POST", "/v1/jobs", body, NULL, &r);
    ck_assert_msg(r.status == 202, "%ld %s", r.status, r.body);
    snprintf(id, 64, "%s", json_string_value(json_object_get(r.json, "id")));
    pg_resp_free(&r);
}

/* ---- the durable truth -------------------------------------------------- */

/* The job's row; 0 when there is none. */
static inline int rpl_row(rpl *c, const char *id, pg_job_row *out)
{
    pg_job_row *rows;
    size_t n;
    pg_error err = {0};
    ck_assert_msg(pg_db_job_load_all(c->db, &rows, &n, &err) == PG_OK, "%s", err.msg);
    int hit = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].id, id)) {
            *out = rows[i];
            out->spec = NULL; /* the copy keeps scalars only */
            out->error = NULL;
            hit = 1;
        }
    pg_job_rows_free(rows, n);
    return hit;
}

static inline int rpl_terminal(const char *st)
{
    return !strcmp(st, "succeeded") || !strcmp(st, "failed") || !strcmp(st, "cancelled");
}

/* Waits (up to secs) until the job's row has status `status`, failing at
 * once on another terminal status. */
static inline void rpl_wait_status(rpl *c, const char *id, const char *status, int secs)
{
    for (int i = 0; i < secs * 50; i++) {
        pg_job_row j;
        if (rpl_row(c, id, &j)) {
            if (!strcmp(j.status, status)) return;
            ck_assert_msg(!rpl_terminal(j.status), "job %s ended %s, waiting for %s", id, j.status,
                          status);
        }
        pg_sleep_ms(20);
    }
    ck_abort_msg("job %s never reached %s in %d s", id, status, secs);
}

/* The replica that runs or last ran the job: the row's owner (the shared
 * queue's lease holder), else the `node` of the job view of any replica
 * that knows the job. "" when nobody says. */
static inline void rpl_node_of(rpl *c, const char *id, char node[PG_NODE_MAX])
{
    node[0] = '\0';
    pg_job_row j;
    if (rpl_row(c, id, &j) && j.owner[0]) {
        snprintf(node, PG_NODE_MAX, "%s", j.owner);
        return;
    }
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%.64s", id);
    for (int k = 0; k < RPL_N && !node[0]; k++) {
        if (c->r[k].pid <= 0) continue;
        pg_resp r;
        rpl_req(&c->r[k], "GET", path, NULL, NULL, &r);
        const char *nd =
            r.status == 200 ? json_string_value(json_object_get(r.json, "node")) : NULL;
        if (nd) snprintf(node, PG_NODE_MAX, "%s", nd);
        pg_resp_free(&r);
    }
}

/* The job's resolved spec as stored in its row (json_decref); NULL when
 * there is no such job. */
static inline json_t *rpl_spec_of(rpl *c, const char *id)
{
    pg_job_row *rows;
    size_t n;
    pg_error err = {0};
    ck_assert_msg(pg_db_job_load_all(c->db, &rows, &n, &err) == PG_OK, "%s", err.msg);
    json_t *o = NULL;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].id, id) && rows[i].spec) o = json_loads(rows[i].spec, 0, NULL);
    pg_job_rows_free(rows, n);
    return o;
}

/* Drops the top-level keys starting with '_' (the service's own notes in a
 * stored spec, never shown in a view). */
static inline void rpl_public_keys(json_t *o)
{
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(o, tmp, k, v)
    {
        (void)v;
        if (k[0] == '_') json_object_del(o, k);
    }
}

/* The epsilon (at the cap's delta) of job id's ledger row; NAN when none. */
static inline double rpl_ledger_epsilon_of(rpl *c, const char *ds, const char *id)
{
    pg_ledger_entry *e;
    size_t n;
    pg_error err = {0};
    ck_assert_msg(pg_db_ledger_entries(c->db, ds, &e, &n, &err) == PG_OK, "%s", err.msg);
    double eps = NAN;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(e[i].job_id, id)) eps = e[i].epsilon;
    pg_ledger_entries_free(e, n);
    return eps;
}

/* Ledger rows of a dataset: total and reserved (not refunded). */
static inline void rpl_ledger(rpl *c, const char *ds, int *total, int *reserved)
{
    pg_ledger_entry *e;
    size_t n;
    pg_error err = {0};
    ck_assert_msg(pg_db_ledger_entries(c->db, ds, &e, &n, &err) == PG_OK, "%s", err.msg);
    *total = (int)n;
    *reserved = 0;
    for (size_t i = 0; i < n; i++) *reserved += !e[i].refunded;
    pg_ledger_entries_free(e, n);
}

/* How many ledger rows name job id. */
static inline int rpl_ledger_rows_of(rpl *c, const char *ds, const char *id)
{
    pg_ledger_entry *e;
    size_t n;
    pg_error err = {0};
    ck_assert_msg(pg_db_ledger_entries(c->db, ds, &e, &n, &err) == PG_OK, "%s", err.msg);
    int k = 0;
    for (size_t i = 0; i < n; i++) k += !strcmp(e[i].job_id, id);
    pg_ledger_entries_free(e, n);
    return k;
}

/* ---- waiting on jobs --------------------------------------------------- */

/* GET /v1/jobs/{id} through replica s; NULL unless 200 (json_decref). */
static inline json_t *rpl_view(const pg_srv *s, const char *id)
{
    char path[128];
    snprintf(path, sizeof path, "/v1/jobs/%.64s", id);
    pg_resp r;
    rpl_req(s, "GET", path, NULL, NULL, &r);
    json_t *o = r.status == 200 ? json_incref(r.json) : NULL;
    pg_resp_free(&r);
    return o;
}

static inline double rpl_num(json_t *o, const char *a, const char *b)
{
    json_t *x = json_object_get(o, a);
    return json_number_value(b ? json_object_get(x, b) : x);
}

static inline void rpl_same_json(json_t *a, json_t *b)
{
    char *ta = json_dumps(a, JSON_SORT_KEYS | JSON_COMPACT),
         *tb = json_dumps(b, JSON_SORT_KEYS | JSON_COMPACT);
    ck_assert_msg(json_equal(a, b), "%s\n  differs from\n%s", ta ? ta : "null", tb ? tb : "null");
    free(ta);
    free(tb);
}

/* A live replica other than k (the first one). */
static inline int rpl_other_than(const rpl *c, int k)
{
    for (int i = 0; i < RPL_N; i++)
        if (i != k && c->r[i].pid > 0) return i;
    return -1;
}

/* Waits until the job runs under some owner with a checkpoint at step
 * >= at_least stored; returns the owner's index. */
static inline int rpl_wait_running(rpl *c, const char *id, int64_t at_least, int secs,
                                   pg_job_row *row)
{
    for (int i = 0; i < secs * 50; i++) {
        if (rpl_row(c, id, row)) {
            ck_assert_msg(!rpl_terminal(row->status), "job %s ended %s too early", id, row->status);
            if (!strcmp(row->status, "running") && row->owner[0] && row->step >= at_least)
                return rpl_index(c, row->owner);
        }
        pg_sleep_ms(20);
    }
    ck_abort_msg("job %s never ran past step %lld", id, (long long)at_least);
    return -1;
}

/* Waits until a node other than gone owns the running (or finished) job. */
static inline int rpl_wait_new_owner(rpl *c, const char *id, const char *gone, int secs,
                                     pg_job_row *row)
{
    for (int i = 0; i < secs * 50; i++) {
        if (rpl_row(c, id, row) && row->owner[0] && strcmp(row->owner, gone)) {
            ck_assert_msg(strcmp(row->status, "failed") && strcmp(row->status, "cancelled"),
                          "job %s ended %s", id, row->status);
            return rpl_index(c, row->owner);
        }
        pg_sleep_ms(20);
    }
    ck_abort_msg("no replica took job %s over from %s in %d s", id, gone, secs);
    return -1;
}

/* A job for rpl_start_job: replicas named `name` with lease_s and
 * heartbeat_s (rpl_up); a dp_sinkhorn job (rpl_job_body, sigma 5) of
 * `steps` steps checkpointed every `every` (every checkpoint kept when
 * keep_all: the owner's next write to the table is a put) submitted through
 * r[via]; the test goes on once it runs with a checkpoint at step >=
 * at_least. */
typedef struct rpl_job_case {
    const char *name;
    int lease_s, heartbeat_s, via;
    long steps, every;
    int64_t at_least;
    bool keep_all;
} rpl_job_case;

/* rpl_up, a dataset of `rows` rows (cap epsilon 100) through r[0] (into
 * ds) and j's job (into id); returns its owner's index once it runs as j
 * asks (row filled; 60 s at most). */
static inline int rpl_start_job(rpl *c, const rpl_job_case *j, int rows, char ds[64], char id[64],
                                pg_job_row *row)
{
    char body[512];
    rpl_up(c, j->name, j->lease_s, j->heartbeat_s);
    rpl_dataset(&c->r[0], 100.0, rows, ds);
    rpl_job_body(body, sizeof body, ds, j->steps, 5.0, j->every);
    if (j->keep_all) {
        size_t k = strlen(body) - 1; /* before the closing brace */
        snprintf(body + k, sizeof body - k, ",\"keep_checkpoints\":100}");
    }
    rpl_submit(&c->r[j->via], body, id);
    return rpl_wait_running(c, id, j->at_least, 60, row);
}

/* ---- stopping a replica and what it left -------------------------------- */

/* SIGSTOP replica k and wait until every thread of it has stopped. kill()
 * returns before that: the signal stops a multithreaded process only once
 * one of its threads gets a CPU and stops the group, and meanwhile the
 * others run on. On a loaded machine a worker woken by the database's
 * answer went on to commit a checkpoint "after" its SIGSTOP, so
 * a stop is not a point in the replica's history until waitpid says so. */
static inline void rpl_stop(rpl *c, int k)
{
    ck_assert_int_gt(c->r[k].pid, 0);
    ck_assert_int_eq(kill(c->r[k].pid, SIGSTOP), 0);
    int st = 0;
    pid_t w;
    do w = waitpid(c->r[k].pid, &st, WUNTRACED);
    while (w < 0 && errno == EINTR);
    ck_assert_msg(w == c->r[k].pid && WIFSTOPPED(st), "replica %s did not stop", c->node[k]);
}

static inline void rpl_cont(rpl *c, int k)
{
    ck_assert_int_eq(kill(c->r[k].pid, SIGCONT), 0);
}

/* Sessions of replica k on the test's database; writing: only those that can
 * still change something (a statement running, other than one stuck sending
 * its result to the stopped client, or a transaction that wrote and has not
 * ended; a writer waiting for a row lock already has its xid). */
static inline int rpl_sessions(rpl *c, int k, int writing)
{
    PGconn *q = PQconnectdb(c->db_url);
    ck_assert_msg(PQstatus(q) == CONNECTION_OK, "%s", PQerrorMessage(q));
    char app[32];
    rpl_app(c, k, app);
    const char *v[1] = {app};
    PGresult *r = PQexecParams(
        q,
        writing ? "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                  "application_name = $1 AND ((state = 'active' AND wait_event IS DISTINCT "
                  "FROM 'ClientWrite') OR (state <> 'idle' AND backend_xid IS NOT NULL))"
                : "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
                  "application_name = $1",
        1, NULL, v, NULL, NULL, 0);
    ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQerrorMessage(q));
    int n = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(q);
    return n;
}

/* Waits (up to secs) until what replica k (stopped or killed) sent the
 * database has landed or been rolled back: killed, until its sessions are
 * gone (each ends at the end of file, after any COMMIT it had already
 * received); stopped, until none runs a statement or holds a transaction
 * that wrote (the server rolls those back after 1 s idle: service/store/pg/db_pg_queue.c).
 * Twice in a row, 50 ms apart: a message still unread by its session shows
 * as idle for that long. Only then is the row and checkpoint list the
 * final word of that replica until it runs again. */
static inline void rpl_settle(rpl *c, int k, int killed, int secs)
{
    int quiet = 0;
    for (int i = 0; i < secs * 20 && quiet < 2; i++) {
        quiet = rpl_sessions(c, k, !killed) == 0 ? quiet + 1 : 0;
        if (quiet < 2) pg_sleep_ms(50);
    }
    ck_assert_msg(quiet == 2, "the sessions of %s did not settle in %d s", c->node[k], secs);
}

/* The newest stored checkpoint of job id (-1: none). A worker stores a
 * checkpoint, then the step in the job row in a transaction of its own: one
 * stopped or killed between the two leaves the row one checkpoint behind,
 * and a takeover resumes from the checkpoint, not from the row's step. */
static inline int64_t rpl_last_ckpt(rpl *c, const char *id)
{
    pg_ckpt_row *rows;
    size_t n;
    pg_error err = {0};
    ck_assert_msg(pg_db_ckpt_list(c->db, id, &rows, &n, &err) == PG_OK, "%s", err.msg);
    int64_t last = n ? rows[n - 1].step : -1;
    free(rows);
    return last;
}

/* privgen_job_steps_total of a live replica: the training steps (mechanism
 * invocations) it ran, over all jobs. */
static inline long rpl_steps_run(const pg_srv *s)
{
    pg_resp r;
    pg_http(s, "GET", "/metrics", NULL, NULL, NULL, 0, NULL, &r);
    ck_assert_msg(r.status == 200, "/metrics: %ld", r.status);
    const char *key = "\nprivgen_job_steps_total ";
    const char *p = r.body ? strstr(r.body, key) : NULL;
    ck_assert_msg(p != NULL, "no privgen_job_steps_total in /metrics");
    long n = strtol(p + strlen(key), NULL, 10);
    pg_resp_free(&r);
    return n;
}

/* The job's checkpoints: strictly increasing steps, each one readable and
 * verified (length and digests) from the database; returns the count. */
static inline size_t rpl_check_ckpts(rpl *c, const char *id, int64_t last_step)
{
    pg_ckpt_row *rows;
    size_t n;
    ck_assert_int_eq(pg_db_ckpt_list(c->db, id, &rows, &n, NULL), PG_OK);
    ck_assert_uint_ge(n, 1);
    for (size_t i = 0; i < n; i++) {
        if (i) ck_assert_int_gt(rows[i].step, rows[i - 1].step);
        unsigned char *bytes = NULL;
        size_t len = 0;
        int found = 0;
        pg_error err = {0};
        ck_assert_msg(pg_db_ckpt_get(c->db, id, rows[i].step, (size_t)1 << 30, &bytes, &len, &found,
                                     &err) == PG_OK,
                      "checkpoint %lld: %s", (long long)rows[i].step, err.msg);
        ck_assert(found);
        ck_assert_uint_eq(len, (size_t)rows[i].bytes);
        free(bytes);
    }
    ck_assert_int_eq(rows[n - 1].step, last_step);
    free(rows);
    return n;
}

/* Runs the suite in fork mode under a fresh scratch root, removed after. */
static inline int rpl_run_suite(Suite *suite)
{
    snprintf(rpl_root, sizeof rpl_root, "/tmp/rpl-XXXXXX");
    if (!mkdtemp(rpl_root)) {
        perror("mkdtemp");
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    SRunner *sr = srunner_create(suite);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    curl_global_cleanup();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", rpl_root);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", rpl_root);
    return failed ? 1 : 0;
}

#endif
