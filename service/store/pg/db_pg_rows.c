/* service/store/pg/db_pg_rows.c - the PostgreSQL backend's datasets, appends and
 * row reads. A block's payload is the row-block file's payload (n*d
 * float32, then n int32 labels when labelled) cut into PGB_CHUNK-byte bytea
 * rows; the block row keeps its length, CRC-32 and SHA-256. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/core/alloc.h"
#include "service/store/pg/db_pg.h"
#include "service/sha256.h"

/* ---- datasets --------------------------------------------------------- */

static int ds_from(const PGresult *r, int i, pg_db_dataset *d)
{
    memset(d, 0, sizeof *d);
    d->seq = pgb_i64_at(r, i, 0);
    pgb_str_at(r, i, 1, d->id, sizeof d->id);
    pgb_str_at(r, i, 2, d->tenant, sizeof d->tenant);
    d->name = pgb_dup_at(r, i, 3);
    d->meta = pgb_dup_at(r, i, 4);
    d->d = pgb_i64_at(r, i, 5);
    d->n = pgb_i64_at(r, i, 6);
    d->blocks = pgb_i64_at(r, i, 7);
    d->bytes = pgb_i64_at(r, i, 8);
    d->created_at = pgb_i64_at(r, i, 9);
    if (!d->name || !d->meta) {
        free(d->name);
        free(d->meta);
        d->name = d->meta = NULL;
        return PG_ENOMEM;
    }
    return PG_OK;
}

typedef struct ds_ctx {
    pg_db_dataset *d;
    const char *tenant, *id;
    int64_t after;
    size_t limit;
    pg_db_dataset *list;
    size_t count;
    int found, conflict;
} ds_ctx;

static int insert_fn(PGconn *c, void *ctx, pg_error *err)
{
    ds_ctx *x = ctx;
    pgb_args a = {0};
    int64_t now = pgb_now();
    pgb_text(&a, x->d->id);
    pgb_text(&a, x->d->tenant);
    pgb_text(&a, x->d->name ? x->d->name : "");
    pgb_text(&a, x->d->meta ? x->d->meta : "{}");
    pgb_i64(&a, x->d->d);
    pgb_i64(&a, now);
    PGresult *r;
    int rc = pgb_q(c,
                   "INSERT INTO datasets(id, tenant_id, name, meta, d, created_at) "
                   "VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq",
                   &a, "inserting a dataset", &r, err);
    if (rc) return rc;
    x->d->seq = pgb_i64_at(r, 0, 0);
    x->d->created_at = now;
    x->d->n = x->d->blocks = x->d->bytes = 0;
    PQclear(r);
    return PG_OK;
}

int pgb_dataset_insert(pg_db *db, pg_db_dataset *d, pg_error *err)
{
    ds_ctx x = {.d = d};
    return pgb_tx(PGB(db), insert_fn, &x, err);
}

static int get_fn(PGconn *c, void *ctx, pg_error *err)
{
    ds_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->id);
    pgb_text(&a, x->tenant);
    PGresult *r;
    int rc =
        pgb_q(c, "SELECT " PG_DB_DATASET_COLS " FROM datasets WHERE id = $1 AND tenant_id = $2", &a,
              "reading a dataset", &r, err);
    if (rc) return rc;
    if (PQntuples(r) == 1) {
        if (ds_from(r, 0, x->d))
            rc = pg_error_set(err, PG_ENOMEM, "out of memory reading a dataset");
        else
            x->found = 1;
    }
    PQclear(r);
    return rc;
}

int pgb_dataset_get(pg_db *db, const char *tenant, const char *id, pg_db_dataset *out, int *found,
                    pg_error *err)
{
    pg_db_dataset d;
    ds_ctx x = {.d = &d, .tenant = tenant, .id = id};
    int rc = pgb_tx(PGB(db), get_fn, &x, err);
    if (rc) return rc;
    *found = x.found;
    if (x.found) *out = d;
    return PG_OK;
}

static int list_fn(PGconn *c, void *ctx, pg_error *err)
{
    ds_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->tenant);
    pgb_i64(&a, x->after);
    pgb_limit(&a, x->limit);
    PGresult *r;
    int rc = pgb_q(c,
                   "SELECT " PG_DB_DATASET_COLS " FROM datasets WHERE tenant_id = $1 AND seq > $2 "
                   "ORDER BY seq LIMIT $3",
                   &a, "listing datasets", &r, err);
    if (rc) return rc;
    int n = PQntuples(r);
    if (n > 0) {
        x->list = calloc((size_t)n, sizeof *x->list);
        if (!x->list) rc = PG_ENOMEM;
        for (int i = 0; !rc && i < n; i++) {
            if ((rc = ds_from(r, i, &x->list[i]))) break;
            x->count++;
        }
        if (rc) {
            pg_db_dataset_list_free(x->list, x->count);
            x->list = NULL;
            x->count = 0;
            rc = pg_error_set(err, PG_ENOMEM, "out of memory listing datasets");
        }
    }
    PQclear(r);
    return rc;
}

int pgb_dataset_list(pg_db *db, const char *tenant, int64_t after, size_t limit,
                     pg_db_dataset **out, size_t *count, pg_error *err)
{
    ds_ctx x = {.tenant = tenant, .after = after, .limit = limit};
    int rc = pgb_tx(PGB(db), list_fn, &x, err);
    if (rc) return rc;
    *out = x.list;
    *count = x.count;
    return PG_OK;
}

static int delete_fn(PGconn *c, void *ctx, pg_error *err)
{
    ds_ctx *x = ctx;
    x->found = x->conflict = 0;
    pgb_args a = {0};
    pgb_text(&a, x->id);
    pgb_text(&a, x->tenant);
    PGresult *r;
    /* The row lock orders the delete against admissions and appends of the
     * same dataset, which take it too. */
    int rc = pgb_q(c, "SELECT 1 FROM datasets WHERE id = $1 AND tenant_id = $2 FOR UPDATE", &a,
                   "locking a dataset", &r, err);
    if (rc) return rc;
    x->found = PQntuples(r) == 1;
    PQclear(r);
    if (!x->found) return PGB_ROLLBACK;
    a = (pgb_args){0};
    pgb_text(&a, x->id);
    rc = pgb_q(c,
               "SELECT EXISTS (SELECT 1 FROM jobs WHERE (dataset_id = $1 OR public_dataset_id = $1)"
               " AND status IN ('queued', 'running'))",
               &a, "checking a dataset's jobs", &r, err);
    if (rc) return rc;
    x->conflict = pgb_i64_at(r, 0, 0) != 0;
    PQclear(r);
    if (x->conflict) return PGB_ROLLBACK;
    /* row_blocks and their chunks go with it (ON DELETE CASCADE). */
    return pgb_q(c, "DELETE FROM datasets WHERE id = $1", &a, "deleting a dataset", NULL, err);
}

int pgb_dataset_delete(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                       pg_error *err)
{
    ds_ctx x = {.tenant = tenant, .id = id};
    int rc = pgb_tx(PGB(db), delete_fn, &x, err);
    *found = !rc && x.found;
    *conflict = !rc && x.conflict;
    return rc;
}

static int gauges_fn(PGconn *c, void *ctx, pg_error *err)
{
    pg_db_gauges *g = ctx;
    PGresult *r;
    int rc = pgb_q(c,
                   "SELECT count(*), coalesce(sum(n), 0)::bigint, coalesce(sum(bytes), 0)::bigint "
                   "FROM datasets",
                   NULL, "reading gauges", &r, err);
    if (rc) return rc;
    g->datasets = pgb_i64_at(r, 0, 0);
    g->rows = pgb_i64_at(r, 0, 1);
    g->bytes = pgb_i64_at(r, 0, 2);
    PQclear(r);
    return PG_OK;
}

int pgb_gauges(pg_db *db, pg_db_gauges *g, pg_error *err)
{
    return pgb_tx(PGB(db), gauges_fn, g, err);
}

/* ---- appends ---------------------------------------------------------- */

/* An upload may take minutes (a slow or hostile client trickling bytes):
 * holding a pooled connection and an open transaction for that long lets a
 * few such clients exhaust the pool and stall every request. So the payload
 * is spooled to an unlinked temporary file (gone with the process, whatever
 * happens) and a connection is taken only at commit, where the chunks go
 * in at local-disk speed within the one transaction that records the block:
 * still all or nothing. */
typedef struct pgb_append {
    pg_db_append base;
    int fd; /* the spool, -1 when none */
    char tenant[PG_ID_MAX], id[PG_ID_MAX];
    size_t d;
    unsigned char *buf; /* write buffer of the spool, then the chunk read back */
    size_t fill;
    uint64_t values, payload;
    uint32_t crc;
    pg_sha256 sha;
    int broken; /* status of a failed write: nothing can be committed */
} pgb_append;

static void append_free(pgb_append *a)
{
    if (a->fd >= 0) close(a->fd);
    free(a->buf);
    free(a);
}

static int spool_open(pg_error *err)
{
    const char *dir = getenv("TMPDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/privgen-rows-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        pg_error_set(err, PG_EIO, "cannot create a spool file for rows in %s: %s",
                     dir && *dir ? dir : "/tmp", strerror(errno));
        return -1;
    }
    unlink(path);
    return fd;
}

static int spool_put(pgb_append *a, const void *src, size_t n, pg_error *err)
{
    const unsigned char *p = src;
    while (n) {
        ssize_t w = write(a->fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            a->broken = PG_EIO;
            return pg_error_set(err, PG_EIO, "cannot spool rows: %s",
                                w < 0 ? strerror(errno) : "short write");
        }
        p += w;
        n -= (size_t)w;
    }
    return PG_OK;
}

int pgb_append_begin(pg_db *db, const char *tenant, const char *id, size_t d, pg_db_append **out,
                     pg_error *err)
{
    if (d == 0 || d > (1u << 24)) return pg_error_set(err, PG_EINVAL, "invalid row width %zu", d);
    pgb_append *a = calloc(1, sizeof *a);
    if (!a || !(a->buf = malloc(PGB_CHUNK))) {
        free(a);
        return pg_error_set(err, PG_ENOMEM, "out of memory starting an append");
    }
    a->base.db = db;
    a->fd = spool_open(err);
    if (a->fd < 0) {
        append_free(a);
        return PG_EIO;
    }
    snprintf(a->tenant, sizeof a->tenant, "%s", tenant);
    snprintf(a->id, sizeof a->id, "%s", id);
    a->d = d;
    a->crc = pgb_crc32(0, NULL, 0);
    pg_sha256_init(&a->sha);
    *out = &a->base;
    return PG_OK;
}

/* Adds payload bytes, hashing them; buffered writes to the spool. */
static int put_bytes(pgb_append *a, const void *src, size_t n, pg_error *err)
{
    const unsigned char *p = src;
    a->crc = pgb_crc32(a->crc, p, n);
    pg_sha256_update(&a->sha, p, n);
    a->payload += n;
    while (n) {
        size_t take = PGB_CHUNK - a->fill;
        if (take > n) take = n;
        memcpy(a->buf + a->fill, p, take);
        a->fill += take;
        p += take;
        n -= take;
        if (a->fill == PGB_CHUNK) {
            int rc = spool_put(a, a->buf, a->fill, err);
            if (rc) return rc;
            a->fill = 0;
        }
    }
    return PG_OK;
}

int pgb_append_write(pg_db_append *pa, const float *x, size_t count, pg_error *err)
{
    pgb_append *a = (pgb_append *)pa;
    if (a->broken)
        return pg_error_set(err, a->broken, "append failed earlier; abort it and start again");
    if (count > SIZE_MAX / sizeof *x) return pg_error_set(err, PG_ERANGE, "too many values");
    int rc = put_bytes(a, x, count * sizeof *x, err);
    if (!rc) a->values += count;
    return rc;
}

/* Sends the spooled payload as chunks of block_id; *chunks is their count. */
static int send_chunks(pgb_append *a, PGconn *c, int64_t block_id, int *chunks, pg_error *err)
{
    if (lseek(a->fd, 0, SEEK_SET) < 0)
        return pg_error_set(err, PG_EIO, "cannot read the row spool: %s", strerror(errno));
    *chunks = 0;
    for (uint64_t left = a->payload; left;) {
        size_t want = left < PGB_CHUNK ? (size_t)left : PGB_CHUNK, got = 0;
        while (got < want) {
            ssize_t rd = read(a->fd, a->buf + got, want - got);
            if (rd < 0 && errno == EINTR) continue;
            if (rd <= 0)
                return pg_error_set(err, PG_EIO, "cannot read the row spool: %s",
                                    rd < 0 ? strerror(errno) : "short read");
            got += (size_t)rd;
        }
        pgb_args p = {0};
        pgb_i64(&p, block_id);
        pgb_i64(&p, *chunks);
        pgb_bin(&p, a->buf, want);
        int rc = pgb_q(c, "INSERT INTO row_chunks(block_id, i, data) VALUES ($1, $2, $3)", &p,
                       "writing rows", NULL, err);
        if (rc) return rc;
        (*chunks)++;
        left -= want;
    }
    return PG_OK;
}

/* Attempts of an append's commit transaction (as pgb_tx's). */
#define PGB_APPEND_ATTEMPTS 8

typedef struct commit_res {
    int found;
    int64_t rows, new_n;
} commit_res;

/* Completes the spool (labels, the buffered tail) and its digest, once:
 * every attempt of the transaction then sends the same bytes. */
static int commit_prepare(pgb_append *a, const int32_t *labels, unsigned char digest[32],
                          pg_error *err)
{
    if (a->values % a->d)
        return pg_error_set(err, PG_EINVAL, "%llu values are not a whole number of rows of %zu",
                            (unsigned long long)a->values, a->d);
    uint64_t n = a->values / a->d;
    int rc;
    if (labels && n && (rc = put_bytes(a, labels, (size_t)n * sizeof *labels, err))) return rc;
    if (a->fill && (rc = spool_put(a, a->buf, a->fill, err))) return rc;
    a->fill = 0;
    pg_sha256_final(&a->sha, digest);
    return PG_OK;
}

/* One attempt: the whole transaction, from BEGIN to COMMIT (c's release
 * rolls back whatever it left open). */
static int commit_tx(pgb_append *a, PGconn *c, int labels, const unsigned char digest[32],
                     int64_t max_rows, commit_res *res, pg_error *err)
{
    uint64_t n = a->values / a->d;
    int rc;
    *res = (commit_res){0};
    PGresult *r;
    if ((rc = pgb_q(c, "BEGIN", NULL, "starting an append", NULL, err))) return rc;
    if ((rc = pgb_q(c, "SELECT nextval('row_block_ids')", NULL, "starting an append", &r, err)))
        return rc;
    int64_t block_id = pgb_i64_at(r, 0, 0);
    PQclear(r);
    /* The chunks go in before the dataset's row lock is taken, so
     * admissions and deletes wait only for the short bookkeeping below. */
    int chunks = 0;
    if (n && (rc = send_chunks(a, c, block_id, &chunks, err))) return rc;
    pgb_args p = {0};
    pgb_text(&p, a->id);
    pgb_text(&p, a->tenant);
    /* The dataset's row lock: appends, admissions and deletes of this
     * dataset queue here, so k and n advance one commit at a time. */
    if ((rc = pgb_q(c,
                    "SELECT n, blocks, d FROM datasets WHERE id = $1 AND tenant_id = $2 FOR UPDATE",
                    &p, "locking a dataset", &r, err)))
        return rc;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return PG_OK; /* vanished: found = 0, the release rolls back */
    }
    int64_t cur = pgb_i64_at(r, 0, 0), k = pgb_i64_at(r, 0, 1), dd = pgb_i64_at(r, 0, 2);
    PQclear(r);
    res->found = 1;
    if (n == 0) {
        /* Zero rows store nothing (no empty block): report the count. */
        res->new_n = cur;
        return PG_OK;
    }
    if (dd != (int64_t)a->d)
        return pg_error_set(err, PG_EINVAL, "rows of width %zu do not fit dataset %s of width %lld",
                            a->d, a->id, (long long)dd);
    if (cur + (int64_t)n > max_rows)
        return pg_error_set(err, PG_ERANGE,
                            "the dataset would hold %lld rows, more than the limit of %lld",
                            (long long)(cur + (int64_t)n), (long long)max_rows);
    int64_t bytes = PG_BLOCK_HEADER + (int64_t)a->payload;
    p = (pgb_args){0};
    pgb_i64(&p, block_id);
    pgb_text(&p, a->id);
    pgb_i64(&p, k);
    pgb_i64(&p, (int64_t)n);
    pgb_i64(&p, (int64_t)a->d);
    pgb_text(&p, labels ? "true" : "false");
    pgb_i64(&p, (int64_t)a->payload);
    pgb_i64(&p, bytes);
    pgb_i64(&p, chunks);
    pgb_i64(&p, a->crc);
    pgb_bin(&p, digest, 32);
    pgb_i64(&p, pgb_now());
    if ((rc = pgb_q(c,
                    "INSERT INTO row_blocks(id, dataset_id, k, n, d, has_labels, payload, bytes, "
                    "chunks, crc32, sha256, created_at) "
                    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                    &p, "recording a row block", NULL, err)))
        return rc;
    p = (pgb_args){0};
    pgb_i64(&p, (int64_t)n);
    pgb_i64(&p, bytes);
    pgb_text(&p, a->id);
    if ((rc = pgb_q(c,
                    "UPDATE datasets SET n = n + $1, blocks = blocks + 1, bytes = bytes + $2 "
                    "WHERE id = $3",
                    &p, "counting rows", NULL, err)))
        return rc;
    if ((rc = pgb_q(c, "COMMIT", NULL, "committing an append", NULL, err))) return rc;
    res->rows = (int64_t)n;
    res->new_n = cur + (int64_t)n;
    return PG_OK;
}

int pgb_append_commit(pg_db_append *pa, const int32_t *labels, int64_t max_rows, int *found,
                      int64_t *rows, int64_t *new_n, pg_error *err)
{
    pgb_append *a = (pgb_append *)pa;
    commit_res res = {0};
    unsigned char digest[32];
    int rc = a->broken ? pg_error_set(err, a->broken, "append failed earlier; nothing was stored")
                       : commit_prepare(a, labels, digest, err);
    /* A serialization failure or deadlock (PG_PGPOOL_RETRY, which must not
     * leave the backend: pgpool.h) rolled the attempt back whole: run it
     * again from BEGIN, from the spool, as pgb_tx reruns its transactions,
     * and as often. */
    for (int attempt = 0; !rc || rc == PG_PGPOOL_RETRY; attempt++) {
        if (attempt == PGB_APPEND_ATTEMPTS) {
            rc = pg_error_set(err, PG_EUNAVAIL,
                              "database busy: an append kept conflicting (%d attempts); "
                              "nothing was stored",
                              PGB_APPEND_ATTEMPTS);
            break;
        }
        PGconn *c = NULL;
        rc = pg_pgpool_acquire(PGB(a->base.db)->pool, &c, err);
        if (!rc) rc = commit_tx(a, c, labels != NULL, digest, max_rows, &res, err);
        /* After a failure (or a vanished dataset) the release rolls back. */
        if (c) pg_pgpool_release(PGB(a->base.db)->pool, c);
        if (rc != PG_PGPOOL_RETRY) break;
    }
    append_free(a);
    if (rc) return rc;
    *found = res.found;
    if (res.found) {
        *rows = res.rows;
        *new_n = res.new_n;
    }
    return PG_OK;
}

void pgb_append_abort(pg_db_append *pa)
{
    if (pa) append_free((pgb_append *)pa);
}

/* ---- reading ---------------------------------------------------------- */

typedef struct blk {
    int64_t id, n, d, payload, bytes, chunks;
    uint32_t crc;
    int labels;
    unsigned char sha[32];
} blk;

typedef struct pgb_blocks {
    pg_db_blocks base;
    blk *b;
    size_t n, next;
} pgb_blocks;

typedef struct open_ctx {
    const char *id;
    pgb_blocks *it;
} open_ctx;

static int open_fn(PGconn *c, void *ctx, pg_error *err)
{
    open_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->id);
    PGresult *r;
    int rc = pgb_q(c,
                   "SELECT id, n, d, has_labels, payload, bytes, chunks, crc32, sha256 "
                   "FROM row_blocks WHERE dataset_id = $1 ORDER BY k",
                   &a, "listing row blocks", &r, err);
    if (rc) return rc;
    size_t n = (size_t)PQntuples(r);
    free(x->it->b);
    x->it->b = n ? calloc(n, sizeof *x->it->b) : NULL;
    x->it->n = 0;
    if (n && !x->it->b) {
        PQclear(r);
        return pg_error_set(err, PG_ENOMEM, "out of memory listing row blocks");
    }
    for (size_t i = 0; i < n; i++) {
        blk *b = &x->it->b[i];
        b->id = pgb_i64_at(r, (int)i, 0);
        b->n = pgb_i64_at(r, (int)i, 1);
        b->d = pgb_i64_at(r, (int)i, 2);
        b->labels = pgb_i64_at(r, (int)i, 3) != 0;
        b->payload = pgb_i64_at(r, (int)i, 4);
        b->bytes = pgb_i64_at(r, (int)i, 5);
        b->chunks = pgb_i64_at(r, (int)i, 6);
        b->crc = (uint32_t)pgb_i64_at(r, (int)i, 7);
        if (PQgetlength(r, (int)i, 8) == 32) memcpy(b->sha, PQgetvalue(r, (int)i, 8), 32);
    }
    x->it->n = n;
    PQclear(r);
    return PG_OK;
}

void pgb_blocks_close(pg_db_blocks *pit)
{
    pgb_blocks *it = (pgb_blocks *)pit;
    if (!it) return;
    free(it->b);
    free(it);
}

int pgb_blocks_open(pg_db *db, const char *dataset_id, pg_db_blocks **out, size_t *count,
                    pg_error *err)
{
    pgb_blocks *it = calloc(1, sizeof *it);
    if (!it) return pg_error_set(err, PG_ENOMEM, "out of memory");
    it->base.db = db;
    open_ctx x = {.id = dataset_id, .it = it};
    int rc = pgb_tx(PGB(db), open_fn, &x, err);
    if (rc) {
        pgb_blocks_close(&it->base);
        return rc;
    }
    *out = &it->base;
    *count = it->n;
    return PG_OK;
}

/* The end of a read of a block's chunks (read_block, pass_block): rc is
 * the read's status (PG_EFORMAT: a chunk out of order or of the wrong
 * size), whole whether it consumed exactly the block's payload. A layout
 * fault or a digest (CRC-32, SHA-256) unlike the block's is PG_EFORMAT
 * naming the block; another failure is returned as it is. */
static int block_verdict(const blk *b, int rc, int whole, uint32_t crc, pg_sha256 *sha,
                         pg_error *err)
{
    if (rc == PG_EFORMAT || (!rc && !whole))
        return pg_error_set(err, PG_EFORMAT,
                            "row block %lld is corrupt: chunks out of order or of the wrong size",
                            (long long)b->id);
    if (rc) return rc;
    unsigned char digest[32];
    pg_sha256_final(sha, digest);
    if (crc != b->crc || memcmp(digest, b->sha, 32))
        return pg_error_set(err, PG_EFORMAT, "row block %lld fails its CRC-32 or SHA-256 check",
                            (long long)b->id);
    return PG_OK;
}

/* Streams a block's chunks (single-row mode: one chunk in memory at a
 * time besides the destination) into x and labels, checking order, sizes
 * and both digests. */
static int read_block(PGconn *c, const blk *b, float *x, int32_t *labels, pg_error *err)
{
    char idbuf[32];
    snprintf(idbuf, sizeof idbuf, "%lld", (long long)b->id);
    const char *v[1] = {idbuf};
    if (!PQsendQueryParams(c, "SELECT i, data FROM row_chunks WHERE block_id = $1 ORDER BY i", 1,
                           NULL, v, NULL, NULL, 1) ||
        !PQsetSingleRowMode(c))
        return pg_pgpool_check(c, NULL, PGRES_TUPLES_OK, "reading rows", err);
    uint64_t fbytes = (uint64_t)b->n * (uint64_t)b->d * 4, at = 0;
    int64_t want_i = 0;
    uint32_t crc = pgb_crc32(0, NULL, 0);
    pg_sha256 sha;
    pg_sha256_init(&sha);
    int rc = PG_OK;
    PGresult *r;
    while ((r = PQgetResult(c))) {
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_SINGLE_TUPLE && !rc) {
            const unsigned char *p = (const unsigned char *)PQgetvalue(r, 0, 1);
            uint64_t len = (uint64_t)PQgetlength(r, 0, 1);
            if (pgb_i64_at(r, 0, 0) != want_i || at + len > (uint64_t)b->payload) {
                rc = PG_EFORMAT;
            } else {
                crc = pgb_crc32(crc, p, len);
                pg_sha256_update(&sha, p, len);
                uint64_t to_x = at < fbytes ? (fbytes - at < len ? fbytes - at : len) : 0;
                if (to_x) memcpy((unsigned char *)x + at, p, to_x);
                if (len > to_x) {
                    if (!labels)
                        rc = PG_EFORMAT;
                    else
                        memcpy((unsigned char *)labels + (at + to_x - fbytes), p + to_x,
                               len - to_x);
                }
                at += len;
                want_i++;
            }
        } else if (st != PGRES_SINGLE_TUPLE && st != PGRES_TUPLES_OK && !rc) {
            rc = pg_pgpool_check(c, r, PGRES_TUPLES_OK, "reading rows", err);
        }
        PQclear(r);
    }
    if (!rc && PQstatus(c) != CONNECTION_OK)
        rc = pg_pgpool_check(c, NULL, PGRES_TUPLES_OK, "reading rows", err);
    return block_verdict(b, rc, at == (uint64_t)b->payload && want_i == b->chunks, crc, &sha, err);
}

int pgb_blocks_next(pg_db_blocks *pit, size_t max_bytes, pg_block *out, int *end, pg_error *err)
{
    pgb_blocks *it = (pgb_blocks *)pit;
    if (it->next >= it->n) {
        *end = 1;
        return PG_OK;
    }
    const blk *b = &it->b[it->next];
    uint64_t vals = (uint64_t)b->n * (uint64_t)b->d;
    uint64_t want = vals * 4 + (b->labels ? (uint64_t)b->n * 4 : 0);
    if (b->n < 0 || b->d <= 0 || (b->d && vals / (uint64_t)b->d != (uint64_t)b->n) ||
        want != (uint64_t)b->payload)
        return pg_error_set(err, PG_EFORMAT, "row block %lld has inconsistent sizes",
                            (long long)b->id);
    if ((uint64_t)b->bytes > max_bytes)
        return pg_error_set(err, PG_ENOMEM, "row block of %lld bytes exceeds the limit of %zu",
                            (long long)b->bytes, max_bytes);
    pg_block blk_out = {.n = (uint64_t)b->n, .d = (size_t)b->d};
    blk_out.x = pg_alloc_f32(vals ? (size_t)vals : 1);
    blk_out.labels = b->labels ? pg_alloc(b->n ? (size_t)b->n * 4 : 4) : NULL;
    if (!blk_out.x || (b->labels && !blk_out.labels)) {
        pg_block_free(&blk_out);
        return pg_error_set(err, PG_ENOMEM, "out of memory reading a row block");
    }
    PGconn *c;
    int rc = pg_pgpool_acquire(PGB(it->base.db)->pool, &c, err);
    if (!rc) {
        rc = read_block(c, b, blk_out.x, blk_out.labels, err);
        pg_pgpool_release(PGB(it->base.db)->pool, c);
    }
    if (rc) {
        pg_block_free(&blk_out);
        return rc;
    }
    *out = blk_out;
    it->next++;
    return PG_OK;
}

/* ---- passes: windows of rows, bounded memory ------------------------------ */

/* One block read through two cursors of one read-only transaction: `v`
 * walks every chunk in order (values delivered, then every byte hashed for
 * the CRC-32 and SHA-256 checks, which need file order), `l` walks the
 * label chunks alongside so that each window of rows gets its labels. In
 * memory: one chunk of each cursor and one window of rows. */
typedef struct pass_blk {
    PGconn *c;
    const blk *b;
    size_t d, chunk;
    uint64_t limit; /* rows of this block to deliver */
    int want_labels;
    pg_rowsrc_fn fn;
    void *ctx;
    unsigned char *win; /* chunk rows of values being assembled */
    int32_t *lab;
    size_t fill;   /* bytes in win */
    uint64_t row0; /* block row of win's first row */
    PGresult *lr;  /* current label chunk */
    uint64_t lat;  /* payload offset of lr's first byte */
    int64_t li;    /* index of the next label chunk */
} pass_blk;

static int fetch(PGconn *c, const char *cur, int64_t want_i, PGresult **out, pg_error *err)
{
    char sql[64];
    snprintf(sql, sizeof sql, "FETCH FORWARD 1 FROM %s", cur);
    int rc = pgb_q(c, sql, NULL, "reading rows", out, err);
    if (rc) return rc;
    if (PQntuples(*out) != 1 || pgb_i64_at(*out, 0, 0) != want_i) {
        PQclear(*out);
        *out = NULL;
        return PG_EFORMAT;
    }
    return PG_OK;
}

/* The labels of rows [r0, r0 + m) into p->lab. */
static int pass_labels(pass_blk *p, uint64_t r0, size_t m, pg_error *err)
{
    uint64_t from = (uint64_t)p->b->n * p->b->d * 4 + r0 * 4, need = (uint64_t)m * 4, got = 0;
    while (got < need) {
        uint64_t len = p->lr ? (uint64_t)PQgetlength(p->lr, 0, 1) : 0;
        if (!p->lr || from + got >= p->lat + len) {
            if (p->lr) p->lat += len;
            PQclear(p->lr);
            p->lr = NULL;
            int rc = fetch(p->c, "l", p->li++, &p->lr, err);
            if (rc) return rc;
            continue;
        }
        uint64_t at = from + got - p->lat, take = len - at < need - got ? len - at : need - got;
        memcpy((unsigned char *)p->lab + got, PQgetvalue(p->lr, 0, 1) + at, take);
        got += take;
    }
    return PG_OK;
}

/* Delivers the whole rows in win (those below limit). */
static int pass_flush(pass_blk *p, pg_error *err)
{
    size_t rowb = p->d * 4, m = p->fill / rowb;
    if (!m) return PG_OK;
    size_t give = p->row0 >= p->limit ? 0 : p->limit - p->row0 < m ? p->limit - p->row0 : m;
    int rc = PG_OK;
    if (give && p->want_labels) rc = pass_labels(p, p->row0, give, err);
    if (!rc && give)
        rc = p->fn(p->ctx, (const float *)p->win, p->want_labels ? p->lab : NULL, give, err);
    memmove(p->win, p->win + m * rowb, p->fill - m * rowb);
    p->fill -= m * rowb;
    p->row0 += m;
    return rc;
}

static int pass_block(pass_blk *p, pg_error *err)
{
    const blk *b = p->b;
    uint64_t vbytes = (uint64_t)b->n * (uint64_t)b->d * 4, at = 0, rowb = p->d * 4;
    char sql[192];
    snprintf(sql, sizeof sql,
             "DECLARE v NO SCROLL CURSOR FOR SELECT i, data FROM row_chunks WHERE block_id = %lld "
             "ORDER BY i",
             (long long)b->id);
    int rc = pgb_q(p->c, sql, NULL, "reading rows", NULL, err);
    p->li = (int64_t)(vbytes / PGB_CHUNK);
    p->lat = (uint64_t)p->li * PGB_CHUNK;
    if (!rc && p->want_labels && p->limit) {
        snprintf(sql, sizeof sql,
                 "DECLARE l NO SCROLL CURSOR FOR SELECT i, data FROM row_chunks WHERE block_id = "
                 "%lld AND i >= %lld ORDER BY i",
                 (long long)b->id, (long long)p->li);
        rc = pgb_q(p->c, sql, NULL, "reading rows", NULL, err);
    }
    uint32_t crc = pgb_crc32(0, NULL, 0);
    pg_sha256 sha;
    pg_sha256_init(&sha);
    for (int64_t i = 0; !rc && i < b->chunks; i++) {
        PGresult *r;
        if ((rc = fetch(p->c, "v", i, &r, err))) break;
        const unsigned char *d = (const unsigned char *)PQgetvalue(r, 0, 1);
        uint64_t len = (uint64_t)PQgetlength(r, 0, 1);
        /* Every chunk but the last is whole: the label cursor counts on it. */
        if ((i + 1 < b->chunks && len != PGB_CHUNK) || at + len > (uint64_t)b->payload) {
            PQclear(r);
            rc = PG_EFORMAT;
            break;
        }
        crc = pgb_crc32(crc, d, len);
        pg_sha256_update(&sha, d, len);
        /* values into the window, flushed whenever it holds chunk rows */
        for (uint64_t o = at; !rc && o < at + len && o < vbytes;) {
            size_t cap = p->chunk * rowb - p->fill;
            uint64_t take = at + len - o;
            if (vbytes - o < take) take = vbytes - o;
            if (cap < take) take = cap;
            memcpy(p->win + p->fill, d + (o - at), take);
            p->fill += take;
            o += take;
            if (p->fill == p->chunk * rowb) rc = pass_flush(p, err);
        }
        at += len;
        PQclear(r);
    }
    if (!rc) rc = pass_flush(p, err);
    PQclear(p->lr);
    p->lr = NULL;
    return block_verdict(b, rc, at == (uint64_t)b->payload && !p->fill, crc, &sha, err);
}

int pgb_rows_pass(pg_db *db, const char *dataset_id, size_t d, uint64_t n, int labelled,
                  size_t chunk, pg_rowsrc_fn fn, void *ctx, pg_error *err)
{
    pg_db_blocks *pit = NULL;
    size_t nb;
    int rc = pgb_blocks_open(db, dataset_id, &pit, &nb, err);
    if (rc) return rc;
    pgb_blocks *it = (pgb_blocks *)pit;
    pass_blk p = {.d = d, .chunk = chunk, .want_labels = labelled, .fn = fn, .ctx = ctx};
    p.win = malloc(chunk * d * 4);
    p.lab = malloc(chunk * sizeof *p.lab);
    if (!p.win || !p.lab) rc = pg_error_set(err, PG_ENOMEM, "out of memory reading rows");
    uint64_t done = 0;
    for (size_t i = 0; !rc && i < it->n && done < n; i++) {
        const blk *b = &it->b[i];
        uint64_t vals = (uint64_t)b->n * (uint64_t)b->d;
        uint64_t want = vals * 4 + (b->labels ? (uint64_t)b->n * 4 : 0);
        if (b->n < 0 || b->d <= 0 || vals / (uint64_t)b->d != (uint64_t)b->n ||
            want != (uint64_t)b->payload) {
            rc = pg_error_set(err, PG_EFORMAT, "row block %lld has inconsistent sizes",
                              (long long)b->id);
            break;
        }
        if ((size_t)b->d != d) {
            rc =
                pg_error_set(err, PG_EFORMAT,
                             "dataset %s: block %zu holds rows of %lld values, the dataset has %zu",
                             dataset_id, i + 1, (long long)b->d, d);
            break;
        }
        if (labelled && !b->labels) {
            rc = pg_error_set(err, PG_EINVAL,
                              "the dataset declares classes but some rows carry no labels");
            break;
        }
        p.b = b;
        p.limit = n - done;
        p.fill = 0;
        p.row0 = 0;
        if ((rc = pg_pgpool_acquire(PGB(db)->pool, &p.c, err))) break;
        rc = pgb_q(p.c, "BEGIN READ ONLY", NULL, "starting a read", NULL, err);
        if (!rc) rc = pass_block(&p, err);
        if (!rc) rc = pgb_q(p.c, "COMMIT", NULL, "ending a read", NULL, err);
        pg_pgpool_release(PGB(db)->pool, p.c); /* rolls back whatever is still open */
        done += (uint64_t)b->n < n - done ? (uint64_t)b->n : n - done;
    }
    free(p.win);
    free(p.lab);
    pgb_blocks_close(pit);
    if (!rc) rc = pg_db_rows_enough(done, n, err);
    return rc;
}
