/* service/store/sqlite/db_sqlite_rows.c - the SQLite backend's datasets: rows, row-block
 * files (service/block.h) under DIR/datasets/<id>/rows-<k>.f32, appends and
 * the block iterator. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/store/sqlite/db_sqlite.h"

int sq_dataset_insert(pg_db *db, pg_db_dataset *d, pg_error *err)
{
    sq_db *s = SQ(db);
    /* Directory first: a dataset row never exists without its directory. */
    char dir[PATH_MAX];
    if (sq_dataset_dir(s, d->id, dir, sizeof dir, err)) return PG_EINVAL;
    if (mkdir(dir, 0700) && errno != EEXIST)
        return pg_error_set(err, PG_EIO, "cannot create %s: %s", dir, strerror(errno));
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    d->created_at = sq_now();
    int rc = sq_prep(s,
                     "INSERT INTO datasets(id, tenant_id, name, meta, d, created_at) "
                     "VALUES(?,?,?,?,?,?)",
                     &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, d->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, d->tenant, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, d->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, d->meta, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, d->d);
        sqlite3_bind_int64(st, 6, d->created_at);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sq_fail(s, err, "creating a dataset");
        else
            d->seq = sqlite3_last_insert_rowid(s->db);
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc) rmdir(dir);
    return rc;
}

static int read_dataset(sqlite3_stmt *st, pg_db_dataset *d)
{
    memset(d, 0, sizeof *d);
    d->seq = sqlite3_column_int64(st, 0);
    snprintf(d->id, sizeof d->id, "%s", (const char *)sqlite3_column_text(st, 1));
    snprintf(d->tenant, sizeof d->tenant, "%s", (const char *)sqlite3_column_text(st, 2));
    d->name = strdup((const char *)sqlite3_column_text(st, 3));
    d->meta = strdup((const char *)sqlite3_column_text(st, 4));
    d->d = sqlite3_column_int64(st, 5);
    d->n = sqlite3_column_int64(st, 6);
    d->blocks = sqlite3_column_int64(st, 7);
    d->bytes = sqlite3_column_int64(st, 8);
    d->created_at = sqlite3_column_int64(st, 9);
    if (!d->name || !d->meta) {
        pg_db_dataset_free(d);
        return -1;
    }
    return 0;
}

static int dataset_row_read(sqlite3_stmt *st, void *out, pg_error *err)
{
    return read_dataset(st, out) ? pg_error_set(err, PG_ENOMEM, "out of memory") : PG_OK;
}

int sq_dataset_get(pg_db *db, const char *tenant, const char *id, pg_db_dataset *out, int *found,
                   pg_error *err)
{
    return sq_get_by_id(SQ(db),
                        "SELECT " PG_DB_DATASET_COLS " FROM datasets WHERE id=? AND tenant_id=?",
                        id, tenant, dataset_row_read, out, found, "reading a dataset", err);
}

int sq_dataset_list(pg_db *db, const char *tenant, int64_t after, size_t limit, pg_db_dataset **out,
                    size_t *count, pg_error *err)
{
    sq_db *s = SQ(db);
    pg_db_dataset *list = calloc(limit, sizeof *list);
    if (!list) return pg_error_set(err, PG_ENOMEM, "out of memory listing datasets");
    size_t n = 0;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s,
                     "SELECT " PG_DB_DATASET_COLS " FROM datasets WHERE tenant_id=? AND seq>? "
                     "ORDER BY seq LIMIT ?",
                     &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, after);
        sqlite3_bind_int64(st, 3, (int64_t)limit);
        int r = SQLITE_DONE;
        while (!rc && n < limit && (r = sqlite3_step(st)) == SQLITE_ROW) {
            if (read_dataset(st, &list[n]))
                rc = pg_error_set(err, PG_ENOMEM, "out of memory");
            else
                n++;
        }
        if (!rc && r != SQLITE_ROW && r != SQLITE_DONE) rc = sq_fail(s, err, "listing datasets");
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc || !n) {
        pg_db_dataset_list_free(list, n);
        return rc;
    }
    *out = list;
    *count = n;
    return PG_OK;
}

static void remove_dir(const char *dir)
{
    DIR *dh = opendir(dir);
    if (!dh) return;
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(dh)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
            unlink(path);
    closedir(dh);
    rmdir(dir);
}

int sq_dataset_delete(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                      pg_error *err)
{
    sq_db *s = SQ(db);
    char dir[PATH_MAX];
    if (sq_dataset_dir(s, id, dir, sizeof dir, NULL)) return PG_OK; /* cannot exist */
    pthread_mutex_lock(&s->mu);
    int rc = sq_tx_begin(s, err);
    sqlite3_stmt *st;
    if (!rc && !(rc = sq_prep(s,
                              "SELECT (SELECT count(*) FROM datasets WHERE id=?1 AND "
                              "tenant_id=?2), (SELECT count(*) FROM jobs WHERE (dataset_id=?1 OR "
                              "public_dataset_id=?1) AND status IN ('queued','running'))",
                              &st, err))) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) {
            *found = sqlite3_column_int(st, 0) > 0;
            *conflict = *found && sqlite3_column_int(st, 1) > 0;
        } else {
            rc = sq_fail(s, err, "checking a dataset");
        }
        sqlite3_finalize(st);
    }
    if (!rc && *found && !*conflict) {
        rc = sq_run(s, "DELETE FROM datasets WHERE id=?1", id, NULL, 0, "deleting a dataset", NULL,
                    err);
        if (!rc)
            rc = sq_run(s, "DELETE FROM row_blocks WHERE dataset_id=?1", id, NULL, 0,
                        "deleting row blocks", NULL, err);
    }
    rc = sq_tx_end(s, rc, err);
    /* Files go after the commit: a crash in between leaves only orphan files,
     * never a dataset row pointing at missing blocks. */
    if (!rc && *found && !*conflict) remove_dir(dir);
    pthread_mutex_unlock(&s->mu);
    if (rc) *found = *conflict = 0;
    return rc;
}

int sq_gauges(pg_db *db, pg_db_gauges *g, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s, "SELECT count(*), coalesce(sum(n),0), coalesce(sum(bytes),0) FROM datasets",
                     &st, err);
    if (!rc) {
        if (sqlite3_step(st) == SQLITE_ROW) {
            g->datasets = sqlite3_column_int64(st, 0);
            g->rows = sqlite3_column_int64(st, 1);
            g->bytes = sqlite3_column_int64(st, 2);
        } else {
            rc = sq_fail(s, err, "reading gauges");
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ---- appends: a temporary block file, renamed and recorded at commit ---- */

typedef struct sq_append {
    pg_db_append base;
    char tenant[PG_ID_MAX], id[PG_ID_MAX];
    char dir[PATH_MAX];
    pg_block_writer w;
} sq_append;

int sq_append_begin(pg_db *db, const char *tenant, const char *id, size_t d, pg_db_append **out,
                    pg_error *err)
{
    sq_db *s = SQ(db);
    sq_append *a = calloc(1, sizeof *a);
    if (!a) return pg_error_set(err, PG_ENOMEM, "out of memory starting an append");
    snprintf(a->tenant, sizeof a->tenant, "%s", tenant);
    snprintf(a->id, sizeof a->id, "%s", id);
    int rc = sq_dataset_dir(s, id, a->dir, sizeof a->dir, err);
    if (!rc) rc = pg_block_open(&a->w, a->dir, d, err);
    if (rc) {
        free(a);
        return rc;
    }
    *out = &a->base;
    return PG_OK;
}

int sq_append_write(pg_db_append *pa, const float *x, size_t count, pg_error *err)
{
    return pg_block_write(&((sq_append *)pa)->w, x, count, err);
}

void sq_append_abort(pg_db_append *pa)
{
    sq_append *a = (sq_append *)pa;
    pg_block_abort(&a->w);
    free(a);
}

/* Renames the finished block to rows-<k>.f32 (the next k) and records it in
 * one transaction; the file is only visible through its row, so removing
 * it after a failed commit restores the previous state exactly. */
static int record(sq_db *s, sq_append *a, const char *tmp, int64_t rows, int64_t bytes, int labeled,
                  int64_t max_rows, int *found, int64_t *new_n, pg_error *err)
{
    char final[PATH_MAX + 32];
    pthread_mutex_lock(&s->mu);
    int renamed = 0;
    int rc = sq_tx_begin(s, err);
    sqlite3_stmt *st;
    int64_t n = 0, k = 0;
    if (!rc &&
        !(rc = sq_prep(s, "SELECT n, blocks FROM datasets WHERE id=? AND tenant_id=?", &st, err))) {
        sqlite3_bind_text(st, 1, a->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, a->tenant, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            *found = 1;
            n = sqlite3_column_int64(st, 0);
            k = sqlite3_column_int64(st, 1);
        } else if (r != SQLITE_DONE) {
            rc = sq_fail(s, err, "reading a dataset");
        }
        sqlite3_finalize(st);
    }
    if (!rc && *found && n + rows > max_rows)
        rc = pg_error_set(err, PG_ERANGE,
                          "the dataset would hold %lld rows, more than the limit of %lld",
                          (long long)(n + rows), (long long)max_rows);
    if (!rc && *found) {
        snprintf(final, sizeof final, "%s/rows-%lld.f32", a->dir, (long long)k);
        if (rename(tmp, final) || sq_fsync_dir(a->dir))
            rc = pg_error_set(err, PG_EIO, "cannot store row block %s: %s", final, strerror(errno));
        else
            renamed = 1;
    }
    if (!rc && *found &&
        !(rc = sq_prep(s, "UPDATE datasets SET n=n+?1, blocks=blocks+1, bytes=bytes+?2 WHERE id=?3",
                       &st, err))) {
        sqlite3_bind_int64(st, 1, rows);
        sqlite3_bind_int64(st, 2, bytes);
        sqlite3_bind_text(st, 3, a->id, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, "appending rows");
        sqlite3_finalize(st);
    }
    if (!rc && *found &&
        !(rc = sq_prep(s,
                       "INSERT INTO row_blocks(dataset_id, k, n, bytes, has_labels, created_at) "
                       "VALUES(?,?,?,?,?,?)",
                       &st, err))) {
        sqlite3_bind_text(st, 1, a->id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, k);
        sqlite3_bind_int64(st, 3, rows);
        sqlite3_bind_int64(st, 4, bytes);
        sqlite3_bind_int(st, 5, labeled);
        sqlite3_bind_int64(st, 6, sq_now());
        if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, "recording a row block");
        sqlite3_finalize(st);
    }
    rc = sq_tx_end(s, rc, err);
    if (rc) {
        unlink(renamed ? final : tmp);
        *found = 0;
    } else if (!*found) {
        unlink(tmp);
    } else {
        *new_n = n + rows;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sq_append_commit(pg_db_append *pa, const int32_t *labels, int64_t max_rows, int *found,
                     int64_t *rows, int64_t *new_n, pg_error *err)
{
    sq_append *a = (sq_append *)pa;
    sq_db *s = SQ(pa->db);
    uint64_t n, bytes;
    int rc = pg_block_finish(&a->w, labels, &n, &bytes, err);
    if (!rc && n == 0) { /* nothing to store: report the current count */
        pg_block_abort(&a->w);
        pg_db_dataset d;
        rc = sq_dataset_get(pa->db, a->tenant, a->id, &d, found, err);
        if (!rc && *found) {
            *new_n = d.n;
            pg_db_dataset_free(&d);
        }
    } else if (!rc) {
        rc = record(s, a, a->w.path, (int64_t)n, (int64_t)bytes, labels != NULL, max_rows, found,
                    new_n, err);
        pg_block_close(&a->w); /* renamed, or removed by record: only unlock */
    } else {
        pg_block_abort(&a->w);
    }
    if (!rc && *found) *rows = (int64_t)n;
    free(a);
    return rc;
}

/* ---- reading: the block list at open, files read one by one ----------- */

typedef struct sq_blocks {
    pg_db_blocks base;
    char **paths;
    size_t n, next;
} sq_blocks;

void sq_blocks_close(pg_db_blocks *pit)
{
    sq_blocks *it = (sq_blocks *)pit;
    for (size_t i = 0; i < it->n; i++) free(it->paths[i]);
    free(it->paths);
    free(it);
}

int sq_blocks_open(pg_db *db, const char *dataset_id, pg_db_blocks **out, size_t *count,
                   pg_error *err)
{
    sq_db *s = SQ(db);
    char dir[PATH_MAX];
    if (sq_dataset_dir(s, dataset_id, dir, sizeof dir, err)) return PG_EINVAL;
    sq_blocks *it = calloc(1, sizeof *it);
    if (!it) return pg_error_set(err, PG_ENOMEM, "out of memory");
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s, "SELECT k FROM row_blocks WHERE dataset_id=? ORDER BY k", &st, err);
    size_t cap = 0;
    if (!rc) {
        sqlite3_bind_text(st, 1, dataset_id, -1, SQLITE_STATIC);
        int r = SQLITE_DONE;
        while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW) {
            if (it->n == cap &&
                (rc = sq_grow(&it->paths, &cap, sizeof *it->paths, "listing row blocks", err)))
                break;
            char p[PATH_MAX + 32];
            snprintf(p, sizeof p, "%s/rows-%lld.f32", dir, (long long)sqlite3_column_int64(st, 0));
            if (!(it->paths[it->n] = strdup(p)))
                rc = pg_error_set(err, PG_ENOMEM, "out of memory");
            else
                it->n++;
        }
        if (!rc && r != SQLITE_DONE) rc = sq_fail(s, err, "listing row blocks");
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc) {
        sq_blocks_close(&it->base);
        return rc;
    }
    *out = &it->base;
    *count = it->n;
    return PG_OK;
}

int sq_blocks_next(pg_db_blocks *pit, size_t max_bytes, pg_block *out, int *end, pg_error *err)
{
    sq_blocks *it = (sq_blocks *)pit;
    if (it->next >= it->n) {
        *end = 1;
        return PG_OK;
    }
    int rc = pg_block_read(it->paths[it->next], max_bytes, out, err);
    if (!rc) it->next++;
    return rc;
}

/* Block files read in windows (pg_block_pass): one window in memory. */
int sq_rows_pass(pg_db *db, const char *dataset_id, size_t d, uint64_t n, int labelled,
                 size_t chunk, pg_rowsrc_fn fn, void *ctx, pg_error *err)
{
    pg_db_blocks *pit;
    size_t nb;
    int rc = sq_blocks_open(db, dataset_id, &pit, &nb, err);
    if (rc) return rc;
    sq_blocks *it = (sq_blocks *)pit;
    uint64_t done = 0;
    for (size_t i = 0; !rc && i < it->n && done < n; i++) {
        uint64_t rows = 0;
        rc = pg_block_pass(it->paths[i], d, labelled, n - done, chunk, fn, ctx, &rows, err);
        done += rows < n - done ? rows : n - done;
    }
    sq_blocks_close(pit);
    if (!rc) rc = pg_db_rows_enough(done, n, err);
    return rc;
}
