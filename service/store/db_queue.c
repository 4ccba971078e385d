/* service/store/db_queue.c - dispatch and argument checks of the shared job queue
 * (service/store/db.h, "the shared job queue"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/store/db.h"
#include "service/store/db_backend.h"

static int bad_node(pg_error *err)
{
    return pg_error_set(err, PG_EINVAL,
                        "invalid node id (1 to %d printable characters without spaces)",
                        PG_NODE_MAX - 1);
}

int pg_db_job_claim(pg_db *db, const char *node, int64_t now, int64_t lease_s, pg_job_row **out,
                    int *found, pg_error *err)
{
    *out = NULL;
    *found = 0;
    if (!pg_db_node_ok(node)) return bad_node(err);
    if (lease_s <= 0) return pg_error_set(err, PG_EINVAL, "lease must be positive");
    return db->ops->job_claim(db, node, now, lease_s, out, found, err);
}

int pg_db_job_heartbeat(pg_db *db, const char *id, const char *node, int64_t now, int64_t lease_s,
                        int *held, pg_error *err)
{
    *held = 0;
    if (!pg_db_node_ok(node)) return bad_node(err);
    if (lease_s <= 0) return pg_error_set(err, PG_EINVAL, "lease must be positive");
    if (!pg_db_id_ok(id)) return PG_OK; /* no such job: not held */
    return db->ops->job_heartbeat(db, id, node, now, lease_s, held, err);
}

int pg_db_job_renew(pg_db *db, const char *node, const char (*ids)[PG_ID_MAX], size_t n,
                    int64_t now, int64_t lease_s, int *state, pg_error *err)
{
    if (!pg_db_node_ok(node)) return bad_node(err);
    if (lease_s <= 0) return pg_error_set(err, PG_EINVAL, "lease must be positive");
    if (n && db->ops->job_renew) {
        /* The backend sees valid ids only (its statements may rely on it). */
        char(*ok)[PG_ID_MAX] = malloc(n * sizeof *ok);
        int *st = malloc(n * sizeof *st);
        size_t k = 0;
        int rc = ok && st ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory renewing leases");
        for (size_t i = 0; !rc && i < n; i++)
            if (pg_db_id_ok(ids[i])) memcpy(ok[k++], ids[i], PG_ID_MAX);
        if (!rc && k)
            rc = db->ops->job_renew(db, node, (const char(*)[PG_ID_MAX])ok, k, now, lease_s, st,
                                    err);
        for (size_t i = 0, t = 0; !rc && i < n; i++)
            state[i] = pg_db_id_ok(ids[i]) ? st[t++] : PG_LEASE_LOST;
        free(ok);
        free(st);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        int held = 0;
        int rc = pg_db_job_heartbeat(db, ids[i], node, now, lease_s, &held, err);
        if (rc) return rc;
        state[i] = held ? PG_LEASE_RENEWED : PG_LEASE_LOST;
    }
    return PG_OK;
}

int pg_db_job_patch_owned(pg_db *db, const char *id, const char *node, const pg_job_patch *p,
                          int *held, pg_error *err)
{
    *held = 0;
    if (!pg_db_node_ok(node)) return bad_node(err);
    if (p->status && strlen(p->status) >= sizeof((pg_job_row *)0)->status)
        return pg_error_set(err, PG_EINVAL, "invalid job status");
    if (!pg_db_id_ok(id)) return PG_OK;
    return db->ops->job_patch_owned(db, id, node, p, held, err);
}

int pg_db_job_release(pg_db *db, const char *id, const char *node, int64_t now, int *held,
                      pg_error *err)
{
    pg_job_patch p = {.now = now, .step = -1, .steps_reserved = -1, .release = 1};
    return pg_db_job_patch_owned(db, id, node, &p, held, err);
}

int pg_db_ckpt_put_owned(pg_db *db, const char *job, const char *node, int64_t step,
                         const unsigned char *bytes, size_t len, uint32_t crc, int *held,
                         pg_error *err)
{
    *held = 0;
    if (!pg_db_node_ok(node)) return bad_node(err);
    if (!pg_db_id_ok(job) || step < 0) return pg_error_set(err, PG_EINVAL, "invalid checkpoint id");
    return db->ops->ckpt_put_owned(db, job, node, step, bytes, len, crc, held, err);
}

int pg_db_job_history_put_owned(pg_db *db, const char *id, const char *node, const char *doc,
                                int *held, pg_error *err)
{
    *held = 0;
    if (!pg_db_node_ok(node)) return bad_node(err);
    if (!doc) return pg_error_set(err, PG_EINVAL, "no history document");
    if (!pg_db_id_ok(id)) return PG_OK;
    return db->ops->job_history_put_owned(db, id, node, doc, held, err);
}

int pg_db_job_release_node(pg_db *db, const char *node, int64_t now, int64_t *released,
                           pg_error *err)
{
    *released = 0;
    if (!pg_db_node_ok(node)) return bad_node(err);
    return db->ops->job_release_node(db, node, now, released, err);
}

int pg_db_job_cancel_running(pg_db *db, const char *id, int64_t now, int *done, pg_error *err)
{
    *done = 0;
    if (!pg_db_id_ok(id)) return PG_OK;
    return db->ops->job_cancel_running(db, id, now, done, err);
}

int pg_db_job_watch(pg_db *db, const char *id, const char *node, int *held, int *cancel,
                    pg_error *err)
{
    *held = *cancel = 0;
    if (!pg_db_node_ok(node)) return bad_node(err);
    if (!pg_db_id_ok(id)) return PG_OK;
    return db->ops->job_watch(db, id, node, held, cancel, err);
}

int pg_db_job_queue_depth(pg_db *db, int64_t *queued, pg_error *err)
{
    *queued = 0;
    return db->ops->job_queue_depth(db, queued, err);
}

int pg_db_ckpt_delete_owned(pg_db *db, const char *job, const char *node, int64_t step, int *held,
                            pg_error *err)
{
    *held = 0;
    if (!pg_db_node_ok(node)) return bad_node(err);
    if (!pg_db_id_ok(job) || step < 0) return PG_OK;
    return db->ops->ckpt_delete_owned(db, job, node, step, held, err);
}
