/* service/store/db.c - backend selection, dispatch and the backend-neutral parts of
 * the storage contract (service/store/db.h). */
#include "service/store/db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "service/store/db_backend.h"
#include "service/store/pg/db_pg.h"

/* URL scheme -> backend. Adding a backend is one line here. */
static const struct {
    const char *prefix;
    pg_db_open_fn open;
} BACKENDS[] = {
    {"sqlite:", pg_db_sqlite_open},
    {"postgresql://", pg_db_postgres_open},
    {"postgres://", pg_db_postgres_open},
};

int pg_db_open(const char *url, const pg_db_options *opt, pg_db **out, pg_error *err)
{
    *out = NULL;
    if (!url || !*url) return pg_error_set(err, PG_EINVAL, "empty database URL");
    pg_db_options o = {0};
    if (opt) o = *opt;
    if (o.pool_size <= 0) o.pool_size = 8;
    if (o.statement_timeout_ms <= 0) o.statement_timeout_ms = 30000;
    if (o.connect_timeout_s <= 0) o.connect_timeout_s = 5;
    for (size_t i = 0; i < sizeof BACKENDS / sizeof BACKENDS[0]; i++)
        if (!strncmp(url, BACKENDS[i].prefix, strlen(BACKENDS[i].prefix))) {
            pg_ledger_cache *lc;
            int rc = pg_ledger_cache_new(o.ledger_cache_slots, &lc, err);
            if (rc) return rc;
            if ((rc = BACKENDS[i].open(url, &o, out, err))) {
                pg_ledger_cache_free(lc);
                return rc;
            }
            (*out)->ledger_cache = lc;
            return PG_OK;
        }
    size_t scheme = strcspn(url, ":");
    return pg_error_set(err, PG_EINVAL,
                        "unsupported database URL scheme '%.*s' (expected sqlite:PATH or "
                        "postgresql://...)",
                        (int)(scheme < 32 ? scheme : 32), url);
}

void pg_db_close(pg_db *db)
{
    if (!db) return;
    pg_ledger_cache *lc = db->ledger_cache;
    db->ops->close(db);
    pg_ledger_cache_free(lc);
}

pg_ledger_cache *pg_db_ledger_cache(pg_db *db)
{
    return db ? db->ledger_cache : NULL;
}

const char *pg_db_backend(const pg_db *db)
{
    return db->ops->name;
}

static int put(char *out, size_t cap, size_t *at, const char *s, size_t n)
{
    int trunc = 0;
    if (*at + n >= cap) {
        n = *at < cap - 1 ? cap - 1 - *at : 0;
        trunc = 1;
    }
    memcpy(out + *at, s, n);
    *at += n;
    out[*at] = '\0';
    return trunc;
}

int pg_db_url_redact(const char *url, char *out, size_t cap)
{
    if (!cap) return -1;
    out[0] = '\0';
    if (!url) return 0;
    size_t at = 0;
    int trunc = 0;
    const char *p = url;
    const char *sep = strstr(url, "://");
    if (sep) {
        /* Authority: [user[:password]@]host...; the last '@' before the path
         * ends the userinfo (a password may itself contain '@' unescaped). */
        const char *auth = sep + 3;
        size_t alen = strcspn(auth, "/?#");
        const char *at_sign = NULL;
        for (const char *q = auth; q < auth + alen; q++)
            if (*q == '@') at_sign = q;
        const char *colon = at_sign ? memchr(auth, ':', (size_t)(at_sign - auth)) : NULL;
        if (colon) {
            trunc |= put(out, cap, &at, url, (size_t)(colon + 1 - url));
            trunc |= put(out, cap, &at, "***", 3);
            p = at_sign;
        }
    }
    /* password=VALUE as a URI query parameter (after '?' or '&'), or as a
     * libpq keyword=value word (after blanks, '=' possibly spaced, the value
     * possibly quoted with backslash escapes). "xpassword=" and
     * "passwordless=" are other keys and stay. */
    static const char key[] = "password";
    while (*p) {
        const char *hit = strstr(p, key);
        if (!hit) break;
        int start_ok = hit == url || strchr("?& \t", hit[-1]);
        const char *q = hit + sizeof key - 1;
        while (*q == ' ' || *q == '\t') q++;
        if (!start_ok || *q != '=') {
            trunc |= put(out, cap, &at, p, (size_t)(hit + 1 - p));
            p = hit + 1;
            continue;
        }
        q++;
        while (*q == ' ' || *q == '\t') q++;
        trunc |= put(out, cap, &at, p, (size_t)(q - p));
        trunc |= put(out, cap, &at, "***", 3);
        if (*q == '\'') {
            for (q++; *q && *q != '\''; q++)
                if (*q == '\\' && q[1]) q++;
            if (*q) q++;
        } else {
            while (*q && !strchr("&# \t", *q)) q++;
        }
        p = q;
    }
    trunc |= put(out, cap, &at, p, strlen(p));
    return trunc ? -1 : 0;
}

int pg_db_schema_version(pg_db *db, int *version, pg_error *err)
{
    return db->ops->schema_version(db, version, err);
}

int pg_db_probe(pg_db *db, pg_error *err)
{
    return db->ops->probe(db, err);
}

int pg_db_gauges_get(pg_db *db, pg_db_gauges *g, pg_error *err)
{
    memset(g, 0, sizeof *g);
    return db->ops->gauges(db, g, err);
}

int pg_db_token_count(pg_db *db, int64_t *n, pg_error *err)
{
    return db->ops->token_count(db, n, err);
}

int pg_db_token_insert(pg_db *db, const pg_token *t, int new_tenant, pg_error *err)
{
    return db->ops->token_insert(db, t, new_tenant, err);
}

int pg_db_token_bootstrap(pg_db *db, const pg_token *t, int *created, pg_token *first,
                          int *has_first, pg_error *err)
{
    *created = *has_first = 0;
    memset(first, 0, sizeof *first);
    return db->ops->token_bootstrap(db, t, created, first, has_first, err);
}

int pg_db_token_get(pg_db *db, const char *id, pg_token *out, int *found, pg_error *err)
{
    *found = 0;
    return db->ops->token_get(db, id, out, found, err);
}

int pg_db_token_list(pg_db *db, const char *tenant, int64_t after, size_t limit, pg_token **out,
                     size_t *count, pg_error *err)
{
    *out = NULL;
    *count = 0;
    if (!limit) return PG_OK;
    return db->ops->token_list(db, tenant, after, limit, out, count, err);
}

int pg_db_token_revoke(pg_db *db, const char *tenant, const char *id, int64_t now, int *found,
                       int *last_admin, pg_error *err)
{
    *found = 0;
    *last_admin = 0;
    return db->ops->token_revoke(db, tenant, id, now, found, last_admin, err);
}

int pg_db_token_touch(pg_db *db, const char *id, int64_t now, pg_error *err)
{
    return db->ops->token_touch(db, id, now, err);
}

int pg_db_id_ok(const char *id)
{
    if (!id || !*id || strlen(id) >= PG_ID_MAX) return 0;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) return 0;
    return 1;
}

int pg_db_node_ok(const char *node)
{
    if (!node || !*node || strlen(node) >= PG_NODE_MAX) return 0;
    for (const char *p = node; *p; p++)
        if (*p < 0x21 || *p > 0x7e) return 0;
    return 1;
}

int pg_db_dataset_insert(pg_db *db, pg_db_dataset *d, pg_error *err)
{
    if (!pg_db_id_ok(d->id)) return pg_error_set(err, PG_EINVAL, "invalid dataset id");
    return db->ops->dataset_insert(db, d, err);
}

int pg_db_dataset_get(pg_db *db, const char *tenant, const char *id, pg_db_dataset *out, int *found,
                      pg_error *err)
{
    *found = 0;
    if (!pg_db_id_ok(id)) return PG_OK;
    return db->ops->dataset_get(db, tenant, id, out, found, err);
}

int pg_db_dataset_list(pg_db *db, const char *tenant, int64_t after, size_t limit,
                       pg_db_dataset **out, size_t *count, pg_error *err)
{
    *out = NULL;
    *count = 0;
    if (!limit) return PG_OK;
    return db->ops->dataset_list(db, tenant, after, limit, out, count, err);
}

void pg_db_dataset_free(pg_db_dataset *d)
{
    if (!d) return;
    free(d->name);
    free(d->meta);
    d->name = d->meta = NULL;
}

void pg_db_dataset_list_free(pg_db_dataset *list, size_t count)
{
    for (size_t i = 0; list && i < count; i++) pg_db_dataset_free(&list[i]);
    free(list);
}

int pg_db_dataset_delete(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                         pg_error *err)
{
    *found = *conflict = 0;
    if (!pg_db_id_ok(id)) return PG_OK;
    return db->ops->dataset_delete(db, tenant, id, found, conflict, err);
}

int pg_db_append_begin(pg_db *db, const char *tenant, const char *id, size_t d, pg_db_append **out,
                       pg_error *err)
{
    *out = NULL;
    if (!pg_db_id_ok(id)) return pg_error_set(err, PG_EINVAL, "invalid dataset id");
    if (d == 0 || d > UINT32_MAX) return pg_error_set(err, PG_EINVAL, "invalid row width %zu", d);
    int rc = db->ops->append_begin(db, tenant, id, d, out, err);
    if (!rc) (*out)->db = db;
    return rc;
}

int pg_db_append_write(pg_db_append *a, const float *x, size_t count, pg_error *err)
{
    return count ? a->db->ops->append_write(a, x, count, err) : PG_OK;
}

int pg_db_append_commit(pg_db_append *a, const int32_t *labels, int64_t max_rows, int *found,
                        int64_t *rows, int64_t *new_n, pg_error *err)
{
    *found = 0;
    *rows = 0;
    return a->db->ops->append_commit(a, labels, max_rows, found, rows, new_n, err);
}

void pg_db_append_abort(pg_db_append *a)
{
    if (a) a->db->ops->append_abort(a);
}

int pg_db_blocks_open(pg_db *db, const char *dataset_id, pg_db_blocks **it, size_t *count,
                      pg_error *err)
{
    *it = NULL;
    *count = 0;
    if (!pg_db_id_ok(dataset_id)) return pg_error_set(err, PG_EINVAL, "invalid dataset id");
    int rc = db->ops->blocks_open(db, dataset_id, it, count, err);
    if (!rc) (*it)->db = db;
    return rc;
}

int pg_db_blocks_next(pg_db_blocks *it, size_t max_bytes, pg_block *out, int *end, pg_error *err)
{
    memset(out, 0, sizeof *out);
    *end = 0;
    return it->db->ops->blocks_next(it, max_bytes, out, end, err);
}

void pg_db_blocks_close(pg_db_blocks *it)
{
    if (it) it->db->ops->blocks_close(it);
}

int pg_db_rows_enough(uint64_t done, uint64_t n, pg_error *err)
{
    if (done >= n) return PG_OK;
    return pg_error_set(err, PG_ESTATE,
                        "the dataset has %llu rows, fewer than the %llu the job was planned for",
                        (unsigned long long)done, (unsigned long long)n);
}

int pg_db_rows_pass(pg_db *db, const char *dataset_id, size_t d, uint64_t n, int labelled,
                    size_t chunk, size_t max_bytes, pg_rowsrc_fn fn, void *ctx, pg_error *err)
{
    if (!pg_db_id_ok(dataset_id)) return pg_error_set(err, PG_EINVAL, "invalid dataset id");
    if (chunk == 0 || d == 0) return pg_error_set(err, PG_EINVAL, "chunk and d must be >= 1");
    if (db->ops->rows_pass)
        return db->ops->rows_pass(db, dataset_id, d, n, labelled, chunk, fn, ctx, err);
    /* Generic: whole blocks, one at a time, cut into chunks. */
    pg_db_blocks *it;
    size_t nb;
    int rc = pg_db_blocks_open(db, dataset_id, &it, &nb, err);
    if (rc) return rc;
    uint64_t done = 0;
    for (size_t i = 0; !rc && i < nb && done < n; i++) {
        pg_block b;
        int end;
        rc = pg_db_blocks_next(it, max_bytes, &b, &end, err);
        if (rc) break;
        if (end) {
            rc = pg_error_set(err, PG_EIO, "dataset %s: block %zu of %zu is missing", dataset_id,
                              i + 1, nb);
            break;
        }
        if (b.d != d)
            rc = pg_error_set(err, PG_EFORMAT,
                              "dataset %s: block %zu holds rows of %zu values, the dataset has %zu",
                              dataset_id, i + 1, b.d, d);
        else if (labelled && !b.labels)
            rc = pg_error_set(err, PG_EINVAL,
                              "the dataset declares classes but some rows carry no labels");
        uint64_t take = n - done < b.n ? n - done : b.n;
        for (uint64_t r = 0; !rc && r < take; r += chunk) {
            size_t m = take - r < (uint64_t)chunk ? (size_t)(take - r) : chunk;
            rc = fn(ctx, b.x + r * d, labelled ? b.labels + r : NULL, m, err);
        }
        done += take;
        pg_block_free(&b);
    }
    pg_db_blocks_close(it);
    if (!rc) rc = pg_db_rows_enough(done, n, err);
    return rc;
}

int pg_db_rows_load(pg_db *db, const char *dataset_id, size_t d, size_t max_bytes, pg_block *out,
                    int *all_labeled, pg_error *err)
{
    memset(out, 0, sizeof *out);
    *all_labeled = 0;
    pg_db_blocks *it;
    size_t nb;
    int rc = pg_db_blocks_open(db, dataset_id, &it, &nb, err);
    if (rc) return rc;
    pg_block *blocks = calloc(nb ? nb : 1, sizeof *blocks);
    if (!blocks) rc = pg_error_set(err, PG_ENOMEM, "out of memory loading rows");
    size_t total = 0, loaded = 0, budget = max_bytes;
    int labeled = nb > 0;
    for (size_t i = 0; !rc && i < nb; i++) {
        int end;
        rc = pg_db_blocks_next(it, budget, &blocks[i], &end, err);
        if (rc) break;
        if (end) {
            rc = pg_error_set(err, PG_EIO, "dataset %s: block %zu of %zu is missing", dataset_id,
                              i + 1, nb);
            break;
        }
        loaded++;
        if (blocks[i].d != d) {
            rc = pg_error_set(err, PG_EFORMAT,
                              "dataset %s: block %zu holds rows of %zu values, the dataset has %zu",
                              dataset_id, i + 1, blocks[i].d, d);
            break;
        }
        size_t bytes =
            (size_t)blocks[i].n * d * 4 + (blocks[i].labels ? (size_t)blocks[i].n * 4 : 0);
        budget = bytes <= budget ? budget - bytes : 0;
        total += (size_t)blocks[i].n;
        labeled &= blocks[i].labels != NULL;
    }
    pg_db_blocks_close(it);
    if (!rc) {
        size_t vals;
        if (pg_size_mul(total, d, &vals)) rc = pg_error_set(err, PG_ERANGE, "too many rows");
        float *x = rc ? NULL : pg_alloc_f32(vals ? vals : 1);
        int32_t *lab = !rc && labeled ? pg_alloc(total ? total * sizeof *lab : 4) : NULL;
        if (!rc && (!x || (labeled && !lab))) {
            pg_free(x);
            pg_free(lab);
            rc = pg_error_set(err, PG_ENOMEM, "out of memory loading %zu rows", total);
        } else if (!rc) {
            size_t at = 0;
            for (size_t i = 0; i < nb; i++) {
                memcpy(x + at * d, blocks[i].x, (size_t)blocks[i].n * d * sizeof *x);
                if (lab) memcpy(lab + at, blocks[i].labels, (size_t)blocks[i].n * sizeof *lab);
                at += (size_t)blocks[i].n;
            }
            out->n = total;
            out->d = d;
            out->x = x;
            out->labels = lab;
            *all_labeled = labeled;
        }
    }
    for (size_t i = 0; blocks && i < loaded; i++) pg_block_free(&blocks[i]);
    free(blocks);
    return rc;
}

int pg_db_idem_begin(pg_db *db, const char *tenant, const char *token, const char *key,
                     const unsigned char fp[32], int *state, pg_idem_response *prev, pg_error *err)
{
    memset(prev, 0, sizeof *prev);
    *state = 0;
    return db->ops->idem_begin(db, tenant, token, key, fp, state, prev, err);
}

int pg_db_idem_finish(pg_db *db, const char *tenant, const char *token, const char *key,
                      const pg_idem_response *r, pg_error *err)
{
    return db->ops->idem_finish(db, tenant, token, key, r, err);
}

void pg_idem_free(pg_idem_response *r)
{
    free(r->location);
    free(r->body);
    r->location = r->body = NULL;
}

int pg_db_job_admit(pg_db *db, pg_job_row *job, const pg_privacy_plan *plan, double cap_epsilon,
                    double cap_delta, struct pg_ledger_quote *q, pg_error *err)
{
    return db->ops->job_admit(db, job, plan, cap_epsilon, cap_delta, q, err);
}

int pg_db_job_cancel_queued(pg_db *db, const char *id, int *done, pg_error *err)
{
    *done = 0;
    return db->ops->job_cancel_queued(db, id, done, err);
}

int pg_db_job_load_all(pg_db *db, pg_job_row **rows, size_t *count, pg_error *err)
{
    *rows = NULL;
    *count = 0;
    return db->ops->job_load_all(db, rows, count, err);
}

void pg_job_rows_free(pg_job_row *rows, size_t count)
{
    for (size_t i = 0; rows && i < count; i++) {
        free(rows[i].spec);
        free(rows[i].error);
    }
    free(rows);
}

int pg_db_ledger_entries(pg_db *db, const char *dataset_id, pg_ledger_entry **out, size_t *count,
                         pg_error *err)
{
    *out = NULL;
    *count = 0;
    return db->ops->ledger_entries(db, dataset_id, out, count, err);
}

void pg_ledger_entries_free(pg_ledger_entry *e, size_t count)
{
    for (size_t i = 0; e && i < count; i++) free(e[i].plan);
    free(e);
}

int pg_db_ckpt_list(pg_db *db, const char *job, pg_ckpt_row **rows, size_t *count, pg_error *err)
{
    *rows = NULL;
    *count = 0;
    if (!pg_db_id_ok(job)) return PG_OK;
    return db->ops->ckpt_list(db, job, rows, count, err);
}

int pg_db_ckpt_get(pg_db *db, const char *job, int64_t step, size_t max_bytes,
                   unsigned char **bytes, size_t *len, int *found, pg_error *err)
{
    *bytes = NULL;
    *len = 0;
    *found = 0;
    if (!pg_db_id_ok(job) || step < 0) return PG_OK;
    return db->ops->ckpt_get(db, job, step, max_bytes, bytes, len, found, err);
}

int pg_db_job_history_get(pg_db *db, const char *id, char **doc, int *found, pg_error *err)
{
    *doc = NULL;
    *found = 0;
    if (!pg_db_id_ok(id)) return PG_OK;
    return db->ops->job_history_get(db, id, doc, found, err);
}

int pg_db_job_delete(pg_db *db, const char *id, int *found, int *conflict, pg_error *err)
{
    *found = 0;
    *conflict = 0;
    if (!pg_db_id_ok(id)) return PG_OK;
    return db->ops->job_delete(db, id, found, conflict, err);
}

int pg_db_job_get(pg_db *db, const char *tenant, const char *id, pg_job_row **row, char **doc,
                  int *found, pg_error *err)
{
    *row = NULL;
    *doc = NULL;
    *found = 0;
    if (!pg_db_id_ok(id)) return PG_OK;
    return db->ops->job_get(db, tenant, id, row, doc, found, err);
}

int pg_db_job_list(pg_db *db, const char *tenant, const char *status, const char *dataset_id,
                   int64_t after, size_t limit, pg_job_row **out, size_t *count, pg_error *err)
{
    *out = NULL;
    *count = 0;
    if (!limit) return PG_OK;
    return db->ops->job_list(db, tenant, status, dataset_id, after, limit, out, count, err);
}
