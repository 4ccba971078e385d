/* service/store/db_backend.h - what a storage backend implements (backends only).
 *
 * A backend is one open function registered by URL scheme in service/store/db.c
 * (one line per scheme) plus an ops table. Its handle type embeds `pg_db` as
 * its first member (so a pg_db * casts to it); appenders and block iterators
 * likewise embed pg_db_append / pg_db_blocks first. The public functions in
 * service/store/db.c dispatch to these with the arguments unchanged after the
 * shared checks (ids well formed, outputs reset), so each op has exactly the
 * contract of its namesake in service/store/db.h. Every op is required, except
 * that pg_db_rows_load is generic (built on blocks_open/next/close) and
 * rows_pass is optional (NULL: generic, one whole block at a time).
 */
#ifndef PG_SVC_DB_BACKEND_H
#define PG_SVC_DB_BACKEND_H

#include "service/store/db.h"

typedef struct pg_db_ops {
    const char *name; /* "sqlite", "postgres" */
    void (*close)(pg_db *db);
    int (*schema_version)(pg_db *db, int *version, pg_error *err);
    int (*probe)(pg_db *db, pg_error *err);
    int (*gauges)(pg_db *db, pg_db_gauges *g, pg_error *err);

    int (*token_count)(pg_db *db, int64_t *n, pg_error *err);
    int (*token_insert)(pg_db *db, const pg_token *t, int new_tenant, pg_error *err);
    int (*token_bootstrap)(pg_db *db, const pg_token *t, int *created, pg_token *first,
                           int *has_first, pg_error *err);
    int (*token_get)(pg_db *db, const char *id, pg_token *out, int *found, pg_error *err);
    int (*token_list)(pg_db *db, const char *tenant, int64_t after, size_t limit, pg_token **out,
                      size_t *count, pg_error *err);
    int (*token_revoke)(pg_db *db, const char *tenant, const char *id, int64_t now, int *found,
                        int *last_admin, pg_error *err);
    int (*token_touch)(pg_db *db, const char *id, int64_t now, pg_error *err);

    int (*dataset_insert)(pg_db *db, pg_db_dataset *d, pg_error *err);
    int (*dataset_get)(pg_db *db, const char *tenant, const char *id, pg_db_dataset *out,
                       int *found, pg_error *err);
    int (*dataset_list)(pg_db *db, const char *tenant, int64_t after, size_t limit,
                        pg_db_dataset **out, size_t *count, pg_error *err);
    int (*dataset_delete)(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                          pg_error *err);

    int (*append_begin)(pg_db *db, const char *tenant, const char *id, size_t d, pg_db_append **out,
                        pg_error *err);
    int (*append_write)(pg_db_append *a, const float *x, size_t count, pg_error *err);
    int (*append_commit)(pg_db_append *a, const int32_t *labels, int64_t max_rows, int *found,
                         int64_t *rows, int64_t *new_n, pg_error *err);
    void (*append_abort)(pg_db_append *a);

    int (*blocks_open)(pg_db *db, const char *dataset_id, pg_db_blocks **it, size_t *count,
                       pg_error *err);
    int (*blocks_next)(pg_db_blocks *it, size_t max_bytes, pg_block *out, int *end, pg_error *err);
    void (*blocks_close)(pg_db_blocks *it);
    int (*rows_pass)(pg_db *db, const char *dataset_id, size_t d, uint64_t n, int labelled,
                     size_t chunk, pg_rowsrc_fn fn, void *ctx, pg_error *err);

    int (*idem_begin)(pg_db *db, const char *tenant, const char *token, const char *key,
                      const unsigned char fp[32], int *state, pg_idem_response *prev,
                      pg_error *err);
    int (*idem_finish)(pg_db *db, const char *tenant, const char *token, const char *key,
                       const pg_idem_response *r, pg_error *err);

    int (*job_admit)(pg_db *db, pg_job_row *job, const pg_privacy_plan *plan, double cap_epsilon,
                     double cap_delta, struct pg_ledger_quote *q, pg_error *err);
    int (*job_cancel_queued)(pg_db *db, const char *id, int *done, pg_error *err);
    int (*job_load_all)(pg_db *db, pg_job_row **rows, size_t *count, pg_error *err);
    int (*ledger_entries)(pg_db *db, const char *dataset_id, pg_ledger_entry **out, size_t *count,
                          pg_error *err);

    int (*ckpt_list)(pg_db *db, const char *job, pg_ckpt_row **rows, size_t *count, pg_error *err);
    int (*ckpt_get)(pg_db *db, const char *job, int64_t step, size_t max_bytes,
                    unsigned char **bytes, size_t *len, int *found, pg_error *err);

    int (*job_history_get)(pg_db *db, const char *id, char **doc, int *found, pg_error *err);
    int (*job_delete)(pg_db *db, const char *id, int *found, int *conflict, pg_error *err);
    /* The shared job queue (node ids checked, *held / *found reset). */
    int (*job_claim)(pg_db *db, const char *node, int64_t now, int64_t lease_s, pg_job_row **out,
                     int *found, pg_error *err);
    int (*job_heartbeat)(pg_db *db, const char *id, const char *node, int64_t now, int64_t lease_s,
                         int *held, pg_error *err);
    /* Optional (NULL: job_heartbeat per id): ids valid, n > 0. */
    int (*job_renew)(pg_db *db, const char *node, const char (*ids)[PG_ID_MAX], size_t n,
                     int64_t now, int64_t lease_s, int *state, pg_error *err);
    int (*job_patch_owned)(pg_db *db, const char *id, const char *node, const pg_job_patch *p,
                           int *held, pg_error *err);
    int (*ckpt_put_owned)(pg_db *db, const char *job, const char *node, int64_t step,
                          const unsigned char *bytes, size_t len, uint32_t crc, int *held,
                          pg_error *err);
    /* Reading jobs from any replica. */
    int (*job_get)(pg_db *db, const char *tenant, const char *id, pg_job_row **row, char **doc,
                   int *found, pg_error *err);
    int (*job_list)(pg_db *db, const char *tenant, const char *status, const char *dataset_id,
                    int64_t after, size_t limit, pg_job_row **out, size_t *count, pg_error *err);
    int (*job_history_put_owned)(pg_db *db, const char *id, const char *node, const char *doc,
                                 int *held, pg_error *err);
    int (*job_release_node)(pg_db *db, const char *node, int64_t now, int64_t *released,
                            pg_error *err);
    int (*job_cancel_running)(pg_db *db, const char *id, int64_t now, int *done, pg_error *err);
    int (*job_watch)(pg_db *db, const char *id, const char *node, int *held, int *cancel,
                     pg_error *err);
    int (*job_queue_depth)(pg_db *db, int64_t *queued, pg_error *err);
    int (*ckpt_delete_owned)(pg_db *db, const char *job, const char *node, int64_t step, int *held,
                             pg_error *err);
    /* Quality reports. */
    int (*report_insert)(pg_db *db, pg_report_row *r, int64_t max_queued, int *full, pg_error *err);
    int (*report_get)(pg_db *db, const char *tenant, const char *id, pg_report_row *out, int *found,
                      pg_error *err);
    int (*report_list)(pg_db *db, const char *tenant, const char *job_id, int public_only,
                       int64_t after, size_t limit, pg_report_row **out, size_t *count,
                       pg_error *err);
    int (*report_claim)(pg_db *db, int64_t now, int64_t stale_s, pg_report_row **out, int *found,
                        pg_error *err);
    int (*report_progress)(pg_db *db, const char *id, const char *stage, double progress,
                           int64_t now, int *held, pg_error *err);
    int (*report_finish)(pg_db *db, const char *id, const char *status, const char *error,
                         const char *result, const pg_report_figure *figs, size_t nfig, int64_t now,
                         int *held, pg_error *err);
    int (*report_cancel)(pg_db *db, const char *tenant, const char *id, int64_t now, int *found,
                         int *done, pg_error *err);
    int (*report_delete)(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                         pg_error *err);
    int (*report_figure_get)(pg_db *db, const char *id, const char *name, size_t max_bytes,
                             unsigned char **bytes, size_t *len, int *found, pg_error *err);
} pg_db_ops;

struct pg_db {
    const pg_db_ops *ops;
    struct pg_ledger_cache *ledger_cache; /* set by pg_db_open, freed by pg_db_close */
};
struct pg_db_append {
    pg_db *db;
};
struct pg_db_blocks {
    pg_db *db;
};

/* The shared argument checks (dispatch in db.c, db_queue.c, db_reports.c,
 * and the backends). Dataset, job and report ids: [a-z0-9_]+, shorter than
 * PG_ID_MAX (the SQLite backend names directories after them). */
int pg_db_id_ok(const char *id);
/* Node ids: 1 to PG_NODE_MAX-1 printable ASCII characters, no spaces. */
int pg_db_node_ok(const char *node);
/* The end of every rows pass (db.c's generic one and the backends'), so the
 * sentence users see is the same whichever storage ran it: PG_ESTATE when
 * the dataset gave fewer rows (done) than the job was planned for (n), else
 * PG_OK. */
int pg_db_rows_enough(uint64_t done, uint64_t n, pg_error *err);

/* The columns each backend selects for a row of the contract's types, in
 * the order its row readers take them (the statements differ by dialect;
 * the lists do not). */
#define PG_DB_TOKEN_COLS                                                                           \
    "seq, id, tenant_id, scope, hash, created_at, expires_at, revoked_at, last_used_at, "          \
    "coalesce(minted_by, '')"
#define PG_DB_DATASET_COLS "seq, id, tenant_id, name, meta, d, n, blocks, bytes, created_at"
#define PG_DB_JOB_COLS                                                                             \
    "seq, id, tenant_id, dataset_id, method, status, spec, error, created_at, started_at, "        \
    "finished_at, step, steps_reserved, data_n, public_dataset_id, public_n, owner"
#define PG_DB_REPORT_COLS                                                                          \
    "seq, id, tenant_id, job_id, against_id, against_model, against_n, job_step, n, seed, "        \
    "status, stage, progress, error, created_at, started_at, finished_at, updated_at, "            \
    "job_model, job_epsilon, utility"
#define PG_DB_REPORT_COLS_FULL PG_DB_REPORT_COLS ", result, figures"

/* Opens a backend from the full URL (scheme included). */
typedef int (*pg_db_open_fn)(const char *url, const pg_db_options *opt, pg_db **out, pg_error *err);

/* The SQLite backend (service/store/sqlite/db_sqlite*.c). */
int pg_db_sqlite_open(const char *url, const pg_db_options *opt, pg_db **out, pg_error *err);

/* Shared by backends: the ledger row codec lives in service/ledger.h
 * (pg_ledger_plan_encode, pg_ledger_curve_add_encoded); the row-block codec
 * in service/block.h. */

#endif
