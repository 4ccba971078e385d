/* service/store/pg/db_pg.c - the PostgreSQL backend: open, the statement helpers,
 * the transaction runner, probe and idempotency keys (tokens: db_pg_tokens.c). */
#include "service/store/pg/db_pg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "row payloads are stored as little-endian float32, byte for byte");

int64_t pgb_now(void)
{
    return (int64_t)time(NULL);
}

uint32_t pgb_crc32(uint32_t crc, const void *p, size_t n)
{
    const unsigned char *b = p;
    uLong c = crc;
    while (n) {
        uInt take = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, b, take);
        b += take;
        n -= take;
    }
    return (uint32_t)c;
}

/* ---- statement helpers ------------------------------------------------ */

static void arg(pgb_args *a, const char *v, int len, int fmt)
{
    if (a->n >= PGB_MAXARGS) return; /* a programming error; the statement then fails */
    a->v[a->n] = v;
    a->len[a->n] = len;
    a->fmt[a->n] = fmt;
    a->n++;
}

void pgb_text(pgb_args *a, const char *s)
{
    arg(a, s, 0, 0);
}

void pgb_i64(pgb_args *a, int64_t x)
{
    if (a->n >= PGB_MAXARGS) return;
    snprintf(a->num[a->n], sizeof a->num[a->n], "%lld", (long long)x);
    arg(a, a->num[a->n], 0, 0);
}

void pgb_limit(pgb_args *a, size_t limit)
{
    pgb_i64(a, (int64_t)(limit > PGB_PAGE_MAX ? PGB_PAGE_MAX : limit));
}

void pgb_f64(pgb_args *a, double x)
{
    if (a->n >= PGB_MAXARGS) return;
    if (isnan(x))
        snprintf(a->num[a->n], sizeof a->num[a->n], "NaN");
    else if (isinf(x))
        snprintf(a->num[a->n], sizeof a->num[a->n], "%sInfinity", x < 0 ? "-" : "");
    else
        snprintf(a->num[a->n], sizeof a->num[a->n], "%.17g", x);
    arg(a, a->num[a->n], 0, 0);
}

void pgb_bin(pgb_args *a, const void *p, size_t n)
{
    arg(a, p ? (const char *)p : "", (int)n, 1);
}

int pgb_q(PGconn *c, const char *sql, const pgb_args *a, const char *what, PGresult **out,
          pg_error *err)
{
    PGresult *r;
    if (!a && !out)
        r = PQexec(c, sql); /* may hold several statements (migrations) */
    else
        r = PQexecParams(c, sql, a ? a->n : 0, NULL, a ? a->v : NULL, a ? a->len : NULL,
                         a ? a->fmt : NULL, 1);
    /* A command that returns rows (SELECT pg_advisory_xact_lock) is a
     * command too. */
    ExecStatusType want = out ? PGRES_TUPLES_OK : PGRES_COMMAND_OK;
    if (!out && r && PQresultStatus(r) == PGRES_TUPLES_OK) want = PGRES_TUPLES_OK;
    int rc = pg_pgpool_check(c, r, want, what, err);
    if (rc == PG_OK && out) {
        *out = r;
        return PG_OK;
    }
    PQclear(r);
    return rc;
}

static uint64_t be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

int64_t pgb_i64_at(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col)) return 0;
    const unsigned char *p = (const unsigned char *)PQgetvalue(r, row, col);
    int n = PQgetlength(r, row, col);
    if (PQfformat(r, col) == 0) return strtoll((const char *)p, NULL, 10);
    switch (n) {
    case 1:
        return p[0];
    case 2:
        return (int16_t)be(p, 2);
    case 4:
        return (int32_t)be(p, 4);
    case 8:
        return (int64_t)be(p, 8);
    default:
        return 0;
    }
}

double pgb_f64_at(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col)) return 0.0;
    if (PQfformat(r, col) == 0) return strtod(PQgetvalue(r, row, col), NULL);
    if (PQgetlength(r, row, col) != 8) return NAN;
    uint64_t bits = be((const unsigned char *)PQgetvalue(r, row, col), 8);
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

void pgb_str_at(const PGresult *r, int row, int col, char *dst, size_t cap)
{
    snprintf(dst, cap, "%s", PQgetisnull(r, row, col) ? "" : PQgetvalue(r, row, col));
}

char *pgb_dup_at(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : strdup(PQgetvalue(r, row, col));
}

/* ---- transactions ----------------------------------------------------- */

int pgb_tx(pgb *b, pgb_fn fn, void *ctx, pg_error *err)
{
    int rc = PG_OK;
    for (int attempt = 0; attempt < 8; attempt++) {
        PGconn *c;
        if ((rc = pg_pgpool_acquire(b->pool, &c, err))) return rc;
        rc = pgb_q(c, "BEGIN", NULL, "starting a transaction", NULL, err);
        int began = rc == PG_OK;
        if (!rc) rc = fn(c, ctx, err);
        if (rc == PGB_ROLLBACK) {
            rc = pgb_q(c, "ROLLBACK", NULL, "rolling back", NULL, err);
        } else if (!rc) {
            rc = pgb_q(c, "COMMIT", NULL, "committing", NULL, err);
        }
        pg_pgpool_release(b->pool, c); /* rolls back whatever is still open */
        /* Rerun: a serialization failure or deadlock, or a connection that
         * died before BEGIN got through (nothing was sent). */
        if (rc == PG_PGPOOL_RETRY || (!began && rc == PG_EUNAVAIL && attempt == 0)) continue;
        return rc;
    }
    if (rc == PG_PGPOOL_RETRY)
        rc = pg_error_set(err, PG_EUNAVAIL, "database busy: a transaction kept conflicting");
    return rc;
}

#define ROW_IDLE_MS "1000"

typedef struct row_tx_ctx {
    pgb_fn fn;
    void *ctx;
} row_tx_ctx;

static int row_tx_fn(PGconn *c, void *ctx, pg_error *err)
{
    row_tx_ctx *f = ctx;
    int rc = pgb_q(c, "SET LOCAL idle_in_transaction_session_timeout = " ROW_IDLE_MS, NULL,
                   "bounding a transaction on a job row", NULL, err);
    return rc ? rc : f->fn(c, f->ctx, err);
}

int pgb_tx_row(pgb *b, pgb_fn fn, void *ctx, pg_error *err)
{
    row_tx_ctx f = {fn, ctx};
    return pgb_tx(b, row_tx_fn, &f, err);
}

/* ---- lifecycle -------------------------------------------------------- */

static void pgb_close(pg_db *db)
{
    pgb *b = PGB(db);
    pg_pgpool_close(b->pool);
    free(b);
}

int pgb_with_conn(pgb *b, pgb_fn fn, void *ctx, pg_error *err)
{
    PGconn *c;
    int rc = pg_pgpool_acquire(b->pool, &c, err);
    if (rc) return rc;
    rc = fn(c, ctx, err);
    pg_pgpool_release(b->pool, c);
    /* Not rerun (its statements expect no conflict), but the code must not
     * leave the backend (pgpool.h): a conflict is "busy, retry later". */
    if (rc == PG_PGPOOL_RETRY)
        rc = pg_error_set(err, PG_EUNAVAIL, "database busy: a statement conflicted; retry");
    return rc;
}

static int version_fn(PGconn *c, void *ctx, pg_error *err)
{
    return pgb_schema_version(c, ctx, err);
}

static int pgb_schema_version_op(pg_db *db, int *version, pg_error *err)
{
    return pgb_with_conn(PGB(db), version_fn, version, err);
}

/* Readiness: a write the server accepts (a read-only standby or a full
 * disk refuses it), rolled back. */
static int probe_fn(PGconn *c, void *ctx, pg_error *err)
{
    (void)ctx;
    int rc = pgb_q(c, "UPDATE schema_version SET version = version", NULL, "probing", NULL, err);
    return rc ? rc : PGB_ROLLBACK;
}

static int pgb_probe(pg_db *db, pg_error *err)
{
    return pgb_tx(PGB(db), probe_fn, NULL, err);
}

/* ---- idempotency keys ------------------------------------------------- */

typedef struct idem_ctx {
    const char *tenant, *token, *key;
    const unsigned char *fp;
    int state;
    pg_idem_response prev;
    const pg_idem_response *r;
} idem_ctx;

static int idem_begin_fn(PGconn *c, void *ctx, pg_error *err)
{
    idem_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->tenant);
    pgb_text(&a, x->key);
    pgb_bin(&a, x->fp, 32);
    pgb_i64(&a, pgb_now());
    pgb_i64(&a, pgb_now() - PGB_IDEM_STALE_S);
    pgb_text(&a, x->token);
    /* One statement decides: insert a reservation, or take over a stale
     * one; concurrent begins on one key queue on the row, and exactly one
     * of them sees its insert (or takeover) happen. */
    PGresult *r;
    int rc = pgb_q(c,
                   "INSERT INTO idempotency AS t(tenant_id, token_id, key, fp, status, body, "
                   "created_at) VALUES ($1, $6, $2, $3, 0, ''::bytea, $4) "
                   "ON CONFLICT (tenant_id, token_id, key) DO UPDATE SET fp = EXCLUDED.fp, "
                   "created_at = EXCLUDED.created_at "
                   "WHERE t.status = 0 AND t.created_at < $5 RETURNING 1",
                   &a, "reserving an idempotency key", &r, err);
    if (rc) return rc;
    int reserved = PQntuples(r) == 1;
    PQclear(r);
    if (reserved) {
        x->state = PG_IDEM_NEW;
        return PG_OK;
    }
    a = (pgb_args){0};
    pgb_text(&a, x->tenant);
    pgb_text(&a, x->key);
    pgb_text(&a, x->token);
    rc = pgb_q(c,
               "SELECT fp, status, location, body FROM idempotency "
               "WHERE tenant_id = $1 AND token_id = $3 AND key = $2",
               &a, "reading an idempotency key", &r, err);
    if (rc) return rc;
    if (PQntuples(r) != 1) {
        /* Deleted (a released reservation) between the two statements:
         * rerun the whole decision. */
        PQclear(r);
        return PG_PGPOOL_RETRY;
    }
    int same = PQgetlength(r, 0, 0) == 32 && !memcmp(PQgetvalue(r, 0, 0), x->fp, 32);
    int status = (int)pgb_i64_at(r, 0, 1);
    x->state = !same ? PG_IDEM_MISMATCH : status == 0 ? PG_IDEM_BUSY : PG_IDEM_REPLAY;
    if (x->state == PG_IDEM_REPLAY) {
        size_t bl = (size_t)PQgetlength(r, 0, 3);
        x->prev.status = status;
        x->prev.location = pgb_dup_at(r, 0, 2);
        x->prev.body = malloc(bl + 1);
        if (x->prev.body) {
            memcpy(x->prev.body, PQgetvalue(r, 0, 3), bl);
            x->prev.body[bl] = '\0';
            x->prev.body_len = bl;
        }
        if (!x->prev.body || (!PQgetisnull(r, 0, 2) && !x->prev.location)) {
            pg_idem_free(&x->prev);
            rc = pg_error_set(err, PG_ENOMEM, "out of memory reading an idempotent reply");
        }
    }
    PQclear(r);
    return rc;
}

static int pgb_idem_begin(pg_db *db, const char *tenant, const char *token, const char *key,
                          const unsigned char fp[32], int *state, pg_idem_response *prev,
                          pg_error *err)
{
    idem_ctx x = {.tenant = tenant, .token = token, .key = key, .fp = fp};
    int rc = pgb_tx(PGB(db), idem_begin_fn, &x, err);
    if (rc) {
        pg_idem_free(&x.prev);
        return rc;
    }
    *state = x.state;
    if (x.state == PG_IDEM_REPLAY) *prev = x.prev;
    return PG_OK;
}

static int idem_finish_fn(PGconn *c, void *ctx, pg_error *err)
{
    idem_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->tenant);
    pgb_text(&a, x->key);
    pgb_text(&a, x->token);
    if (!x->r)
        return pgb_q(c,
                     "DELETE FROM idempotency WHERE tenant_id = $1 AND token_id = $3 AND key = $2 "
                     "AND status = 0",
                     &a, "releasing an idempotency key", NULL, err);
    pgb_i64(&a, x->r->status);
    pgb_text(&a, x->r->location);
    pgb_bin(&a, x->r->body, x->r->body_len);
    return pgb_q(c,
                 "UPDATE idempotency SET status = $4, location = $5, body = $6 "
                 "WHERE tenant_id = $1 AND token_id = $3 AND key = $2 AND status = 0",
                 &a, "storing an idempotent reply", NULL, err);
}

static int pgb_idem_finish(pg_db *db, const char *tenant, const char *token, const char *key,
                           const pg_idem_response *r, pg_error *err)
{
    idem_ctx x = {.tenant = tenant, .token = token, .key = key, .r = r};
    return pgb_tx(PGB(db), idem_finish_fn, &x, err);
}

/* ---- ops table and open ----------------------------------------------- */

static const pg_db_ops PGB_OPS = {
    .name = "postgres",
    .close = pgb_close,
    .schema_version = pgb_schema_version_op,
    .probe = pgb_probe,
    .gauges = pgb_gauges,
    .token_count = pgb_token_count,
    .token_insert = pgb_token_insert,
    .token_bootstrap = pgb_token_bootstrap,
    .token_get = pgb_token_get,
    .token_list = pgb_token_list,
    .token_revoke = pgb_token_revoke,
    .token_touch = pgb_token_touch,
    .dataset_insert = pgb_dataset_insert,
    .dataset_get = pgb_dataset_get,
    .dataset_list = pgb_dataset_list,
    .dataset_delete = pgb_dataset_delete,
    .append_begin = pgb_append_begin,
    .append_write = pgb_append_write,
    .append_commit = pgb_append_commit,
    .append_abort = pgb_append_abort,
    .blocks_open = pgb_blocks_open,
    .blocks_next = pgb_blocks_next,
    .blocks_close = pgb_blocks_close,
    .rows_pass = pgb_rows_pass,
    .idem_begin = pgb_idem_begin,
    .idem_finish = pgb_idem_finish,
    .job_admit = pgb_job_admit,
    .job_cancel_queued = pgb_job_cancel_queued,
    .job_load_all = pgb_job_load_all,
    .ledger_entries = pgb_ledger_entries,
    .ckpt_list = pgb_ckpt_list,
    .ckpt_get = pgb_ckpt_get,
    .job_history_get = pgb_job_history_get,
    .job_delete = pgb_job_delete,
    .job_claim = pgb_job_claim,
    .job_heartbeat = pgb_job_heartbeat,
    .job_renew = pgb_job_renew,
    .job_patch_owned = pgb_job_patch_owned,
    .ckpt_put_owned = pgb_ckpt_put_owned,
    .job_get = pgb_job_get,
    .job_list = pgb_job_list,
    .job_history_put_owned = pgb_job_history_put_owned,
    .job_release_node = pgb_job_release_node,
    .job_cancel_running = pgb_job_cancel_running,
    .job_watch = pgb_job_watch,
    .job_queue_depth = pgb_job_queue_depth,
    .ckpt_delete_owned = pgb_ckpt_delete_owned,
    .report_insert = pgb_report_insert,
    .report_get = pgb_report_get,
    .report_list = pgb_report_list,
    .report_claim = pgb_report_claim,
    .report_progress = pgb_report_progress,
    .report_finish = pgb_report_finish,
    .report_cancel = pgb_report_cancel,
    .report_delete = pgb_report_delete,
    .report_figure_get = pgb_report_figure_get,
};

static int migrate_fn(PGconn *c, void *ctx, pg_error *err)
{
    (void)ctx;
    return pgb_migrate(c, err);
}

int pg_db_postgres_open(const char *url, const pg_db_options *opt, pg_db **out, pg_error *err)
{
    pgb *b = calloc(1, sizeof *b);
    if (!b) return pg_error_set(err, PG_ENOMEM, "out of memory opening the database");
    b->base.ops = &PGB_OPS;
    pg_pgpool_opts po = {
        .size = opt && opt->pool_size > 0 ? opt->pool_size : 8,
        .statement_timeout_ms =
            opt && opt->statement_timeout_ms > 0 ? opt->statement_timeout_ms : 30000,
        .acquire_timeout_ms =
            1000 * (opt && opt->connect_timeout_s > 0 ? opt->connect_timeout_s : 5),
        .connect_timeout_s = opt && opt->connect_timeout_s > 0 ? opt->connect_timeout_s : 5,
    };
    if (po.size > PG_PGPOOL_MAX) po.size = PG_PGPOOL_MAX;
    int rc = pg_pgpool_open(url, &po, &b->pool, err);
    if (!rc) rc = pgb_with_conn(b, migrate_fn, NULL, err);
    if (rc) {
        char safe[160];
        pg_db_url_redact(url, safe, sizeof safe);
        pg_error_wrap(err, "opening %s", safe);
        pg_pgpool_close(b->pool);
        free(b);
        return rc;
    }
    *out = &b->base;
    return PG_OK;
}
