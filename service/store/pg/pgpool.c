#include "service/store/pg/pgpool.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct slot {
    PGconn *c; /* NULL: connect on next acquire */
    int busy;
} slot;

struct pg_pgpool {
    pthread_mutex_t mu;
    pthread_cond_t freed;
    char *conninfo;
    pg_pgpool_opts o;
    long connects;
    int busy;
    slot s[];
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

/* libpq's own message for a failed connect (it names host and socket, never
 * the password), trimmed of its trailing newline. */
static int conn_fail(PGconn *c, const char *what, pg_error *err)
{
    char msg[200];
    snprintf(msg, sizeof msg, "%s", c ? PQerrorMessage(c) : "out of memory");
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) msg[--n] = '\0';
    return pg_error_set(err, PG_EUNAVAIL, "database unavailable %s: %s", what,
                        n ? msg : "connection lost");
}

int pg_pgpool_classify(const char *st)
{
    if (!st || !st[0]) return PG_EIO;
    if (!strncmp(st, "08", 2)) return PG_EUNAVAIL;
    if (!strcmp(st, "57P01") || !strcmp(st, "57P02") || !strcmp(st, "57P03") ||
        !strcmp(st, "53300") || !strcmp(st, "57014"))
        return PG_EUNAVAIL;
    if (!strcmp(st, "40001") || !strcmp(st, "40P01")) return PG_PGPOOL_RETRY;
    return PG_EIO;
}

int pg_pgpool_check(PGconn *c, const PGresult *r, ExecStatusType want, const char *what,
                    pg_error *err)
{
    if (r && PQresultStatus(r) == want) return PG_OK;
    /* No result, a dead connection, or a failure libpq made up itself (no
     * SQLSTATE: "server closed the connection unexpectedly", a failed send)
     * all mean the server went away, whatever the partial result says. */
    const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (!r || PQstatus(c) == CONNECTION_BAD || (!st && PQresultStatus(r) == PGRES_FATAL_ERROR))
        return conn_fail(c, what, err);
    const char *m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    int code = pg_pgpool_classify(st);
    if (!st && PQresultStatus(r) != PGRES_FATAL_ERROR && PQresultStatus(r) != PGRES_NONFATAL_ERROR)
        return pg_error_set(err, PG_EIO, "database error %s: unexpected result %s", what,
                            PQresStatus(PQresultStatus(r)));
    pg_error_set(err, code, "database %s %s: %s (SQLSTATE %s)",
                 code == PG_EUNAVAIL ? "unavailable" : "error", what,
                 m ? m : PQresultErrorMessage(r), st ? st : "none");
    return code;
}

int pg_pgpool_exec(PGconn *c, const char *sql, const char *what, pg_error *err)
{
    PGresult *r = PQexec(c, sql);
    int rc = PG_OK;
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = pg_pgpool_check(c, r, PGRES_COMMAND_OK, what, err);
    PQclear(r);
    return rc;
}

/* Quiet notices: a RAISE NOTICE or a "table exists, skipping" from a
 * migration must not reach stderr. */
static void no_notice(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static int setup(pg_pgpool *p, PGconn *c, pg_error *err)
{
    PQsetNoticeProcessor(c, no_notice, NULL);
    /* The same bound for a session idle inside a transaction: a client
     * frozen between two statements (SIGSTOP, a hung VM, a cut network)
     * would otherwise keep its transaction and every row lock it took
     * (a dataset's for an admission or an append, a tenant's for a mint)
     * until the server noticed the dead peer, hours later; others waiting
     * on those rows would fail at their own statement timeout meanwhile.
     * No transaction of privgend idles anywhere near that long between its
     * statements; the ones that lock a job row bound it to 1 s
     * (pgb_tx_row, db_pg.h). */
    char sql[160];
    snprintf(sql, sizeof sql,
             "SET statement_timeout = %d; SET idle_in_transaction_session_timeout = %d",
             p->o.statement_timeout_ms, p->o.statement_timeout_ms);
    return pg_pgpool_exec(c, sql, "setting statement_timeout", err);
}

static PGconn *connect_new(pg_pgpool *p, pg_error *err)
{
    /* Defaults first, then the user's string: expand_dbname lets any of its
     * settings override ours. */
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d",
             p->o.connect_timeout_s > 0 ? p->o.connect_timeout_s : 5);
    const char *const keys[] = {"application_name", "connect_timeout", "dbname", NULL};
    const char *const vals[] = {"privgend", timeout, p->conninfo, NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        conn_fail(c, "connecting", err);
        PQfinish(c);
        return NULL;
    }
    if (setup(p, c, err)) {
        PQfinish(c);
        return NULL;
    }
    pthread_mutex_lock(&p->mu);
    p->connects++;
    pthread_mutex_unlock(&p->mu);
    return c;
}

/* A connection the server closed (restart, pg_terminate_backend) still
 * looks fine until something reads from it: the terminate message and the
 * end of file may arrive in two reads, hence two non-blocking polls. */
static int healthy(PGconn *c)
{
    if (!c || PQstatus(c) != CONNECTION_OK) return 0;
    for (int i = 0; i < 2; i++) {
        if (!PQconsumeInput(c) || PQstatus(c) != CONNECTION_OK) return 0;
    }
    PGresult *r;
    while ((r = PQgetResult(c))) PQclear(r);
    return PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) == PQTRANS_IDLE;
}

int pg_pgpool_open(const char *conninfo, const pg_pgpool_opts *opts, pg_pgpool **out, pg_error *err)
{
    if (!conninfo || !opts || opts->size < 1 || opts->size > PG_PGPOOL_MAX ||
        opts->statement_timeout_ms < 0 || opts->acquire_timeout_ms < 0)
        return pg_error_set(err, PG_EINVAL, "database pool: size must be 1..%d and timeouts >= 0",
                            PG_PGPOOL_MAX);
    char *perr = NULL;
    PQconninfoOption *parsed = PQconninfoParse(conninfo, &perr);
    if (!parsed) {
        /* libpq's parse message quotes no values, only the offending key. */
        pg_error_set(err, PG_EINVAL, "invalid database URI: %s", perr ? perr : "cannot be parsed");
        PQfreemem(perr);
        return PG_EINVAL;
    }
    PQconninfoFree(parsed);
    pg_pgpool *p = calloc(1, sizeof *p + (size_t)opts->size * sizeof(slot));
    if (!p || !(p->conninfo = strdup(conninfo))) {
        free(p);
        return pg_error_set(err, PG_ENOMEM, "out of memory opening the database pool");
    }
    p->o = *opts;
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->freed, &ca);
    pthread_condattr_destroy(&ca);
    p->s[0].c = connect_new(p, err);
    if (!p->s[0].c) {
        pg_pgpool_close(p);
        return err ? err->code : PG_EUNAVAIL;
    }
    *out = p;
    return PG_OK;
}

void pg_pgpool_close(pg_pgpool *p)
{
    if (!p) return;
    for (int i = 0; i < p->o.size; i++) PQfinish(p->s[i].c);
    pthread_cond_destroy(&p->freed);
    pthread_mutex_destroy(&p->mu);
    free(p->conninfo);
    free(p);
}

/* Takes a free slot, preferring one that already holds a connection. */
static int take_slot(pg_pgpool *p, int64_t deadline)
{
    pthread_mutex_lock(&p->mu);
    int got = -1;
    for (;;) {
        for (int i = 0; i < p->o.size; i++) {
            if (p->s[i].busy) continue;
            if (got < 0 || (p->s[i].c && !p->s[got].c)) got = i;
        }
        if (got >= 0) break;
        int64_t left = deadline - now_ms();
        if (left <= 0) break;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += left / 1000;
        ts.tv_nsec += (left % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&p->freed, &p->mu, &ts);
    }
    if (got >= 0) {
        p->s[got].busy = 1;
        p->busy++;
    }
    pthread_mutex_unlock(&p->mu);
    return got;
}

static void give_back(pg_pgpool *p, int i, PGconn *c)
{
    pthread_mutex_lock(&p->mu);
    p->s[i].c = c;
    p->s[i].busy = 0;
    p->busy--;
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->mu);
}

int pg_pgpool_acquire(pg_pgpool *p, PGconn **out, pg_error *err)
{
    int64_t deadline = now_ms() + p->o.acquire_timeout_ms;
    int i = take_slot(p, deadline);
    if (i < 0)
        return pg_error_set(err, PG_EUNAVAIL,
                            "database unavailable: all %d connections stayed busy for %d ms",
                            p->o.size, p->o.acquire_timeout_ms);
    PGconn *c = p->s[i].c; /* ours alone while the slot is busy */
    if (c && healthy(c)) {
        *out = c;
        return PG_OK;
    }
    pthread_mutex_lock(&p->mu);
    p->s[i].c = NULL;
    pthread_mutex_unlock(&p->mu);
    PQfinish(c);
    c = NULL;
    /* Reconnect with backoff until the deadline, at least once: a server
     * that is restarting comes back within a second or two. */
    long backoff = 50;
    pg_error e = {0};
    for (;;) {
        c = connect_new(p, &e);
        if (c) break;
        int64_t left = deadline - now_ms();
        if (left <= 0) break;
        sleep_ms(backoff < left ? backoff : (long)left);
        if (backoff < 800) backoff *= 2;
    }
    if (!c) {
        give_back(p, i, NULL);
        if (err) *err = e;
        return e.code ? e.code : PG_EUNAVAIL;
    }
    pthread_mutex_lock(&p->mu);
    p->s[i].c = c;
    pthread_mutex_unlock(&p->mu);
    *out = c;
    return PG_OK;
}

void pg_pgpool_release(pg_pgpool *p, PGconn *c)
{
    if (!c) return;
    int i;
    pthread_mutex_lock(&p->mu);
    for (i = 0; i < p->o.size; i++)
        if (p->s[i].busy && p->s[i].c == c) break;
    pthread_mutex_unlock(&p->mu);
    if (PQstatus(c) == CONNECTION_OK) {
        PGTransactionStatusType ts = PQtransactionStatus(c);
        if (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR) {
            PGresult *r = PQexec(c, "ROLLBACK");
            PQclear(r);
            ts = PQtransactionStatus(c);
        }
        /* Mid-COPY or with a query in flight there is no cheap way back to
         * a clean state: drop the connection, the next acquire reconnects. */
        if (ts != PQTRANS_IDLE || PQstatus(c) != CONNECTION_OK) {
            PQfinish(c);
            c = NULL;
        }
    } else {
        PQfinish(c);
        c = NULL;
    }
    if (i < p->o.size)
        give_back(p, i, c);
    else
        PQfinish(c); /* not ours: never happens with a correct caller */
}

void pg_pgpool_stats(pg_pgpool *p, long *connects, int *busy)
{
    pthread_mutex_lock(&p->mu);
    if (connects) *connects = p->connects;
    if (busy) *busy = p->busy;
    pthread_mutex_unlock(&p->mu);
}
