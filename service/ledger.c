#include "service/ledger.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/privacy/privacy.h"

void pg_ledger_curve_init(pg_ledger_curve *c)
{
    memset(c, 0, sizeof *c);
    c->norders = pg_rdp_default_orders(c->orders, PG_PLAN_MAX_ORDERS);
}

void pg_ledger_curve_add(pg_ledger_curve *c, const double *orders, const double *rdp, size_t n,
                         double delta_extra)
{
    for (size_t i = 0; i < c->norders; i++) {
        double v = INFINITY;
        for (size_t j = 0; j < n; j++)
            if (orders[j] == c->orders[i]) {
                v = isnan(rdp[j]) ? INFINITY : rdp[j];
                break;
            }
        c->rdp[i] += v;
    }
    c->delta_extra += delta_extra > 0.0 ? delta_extra : 0.0;
    c->entries++;
}

int pg_ledger_curve_epsilon(const pg_ledger_curve *c, double cap_delta, double *eps, pg_error *err)
{
    if (c->entries == 0) {
        *eps = 0.0;
        return PG_OK;
    }
    double d = cap_delta - c->delta_extra;
    if (!(d > 0.0)) {
        *eps = INFINITY;
        return PG_OK;
    }
    int rc = pg_rdp_to_dp(c->orders, c->rdp, c->norders, d, PG_RDP_CONV_IMPROVED, eps, NULL, err);
    if (rc == PG_ENUMERIC) { /* every order infinite: no finite guarantee */
        *eps = INFINITY;
        return PG_OK;
    }
    return rc;
}

int pg_ledger_quote_plan(const pg_ledger_curve *spent, const pg_privacy_plan *plan,
                         double cap_epsilon, double cap_delta, pg_ledger_quote *q, pg_error *err)
{
    memset(q, 0, sizeof *q);
    q->cap_epsilon = cap_epsilon;
    pg_ledger_curve alone, total = *spent;
    pg_ledger_curve_init(&alone);
    pg_ledger_curve_add(&alone, plan->orders, plan->rdp, (size_t)plan->norders, plan->delta_extra);
    pg_ledger_curve_add(&total, plan->orders, plan->rdp, (size_t)plan->norders, plan->delta_extra);
    int rc = pg_ledger_curve_epsilon(&alone, cap_delta, &q->requested_epsilon, err);
    if (!rc) rc = pg_ledger_curve_epsilon(spent, cap_delta, &q->spent_epsilon, err);
    if (!rc) rc = pg_ledger_curve_epsilon(&total, cap_delta, &q->total_epsilon, err);
    if (rc) return rc;
    q->remaining_epsilon = cap_epsilon - q->spent_epsilon;
    if (q->remaining_epsilon < 0.0) q->remaining_epsilon = 0.0;
    q->admit = isfinite(q->total_epsilon) && q->total_epsilon <= cap_epsilon;
    return PG_OK;
}

/* ---- rows ------------------------------------------------------------- */

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

char *pg_ledger_plan_encode(const pg_privacy_plan *p)
{
    json_t *orders = json_array(), *rdp = json_array();
    for (int i = 0; i < p->norders; i++) {
        json_array_append_new(orders, json_real(p->orders[i]));
        json_array_append_new(rdp, num_or_null(p->rdp[i]));
    }
    json_t *o = json_pack("{s:o,s:o,s:f,s:f,s:f,s:I,s:s,s:b}", "orders", orders, "rdp", rdp,
                          "delta_extra", p->delta_extra, "noise_multiplier", p->noise_multiplier,
                          "sampling_rate", p->sampling_rate, "steps", (json_int_t)p->steps,
                          "mechanism", p->mechanism, "approximate", p->approximate);
    char *txt = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(o);
    return txt;
}

void pg_ledger_curve_add_encoded(pg_ledger_curve *c, const char *txt)
{
    json_t *o = txt ? json_loads(txt, 0, NULL) : NULL;
    json_t *orders = json_object_get(o, "orders"), *rdp = json_object_get(o, "rdp");
    size_t n = json_array_size(orders);
    double ov[PG_PLAN_MAX_ORDERS], rv[PG_PLAN_MAX_ORDERS];
    if (!o || n == 0 || n > PG_PLAN_MAX_ORDERS || json_array_size(rdp) != n) {
        pg_ledger_curve_add(c, NULL, NULL, 0, 0.0);
        json_decref(o);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(rdp, i);
        ov[i] = json_number_value(json_array_get(orders, i));
        rv[i] = json_is_number(r) ? json_number_value(r) : INFINITY;
    }
    json_t *de = json_object_get(o, "delta_extra");
    pg_ledger_curve_add(c, ov, rv, n, json_is_number(de) ? json_number_value(de) : 1.0);
    json_decref(o);
}

static int curve_db(sqlite3 *db, const char *dataset_id, pg_ledger_curve *c, pg_error *err)
{
    pg_ledger_curve_init(c);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT rdp FROM ledger WHERE dataset_id=? AND state='reserved'", -1,
                           &st, NULL) != SQLITE_OK)
        return pg_error_set(err, PG_EIO, "database error reading the ledger: %s",
                            sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, dataset_id, -1, SQLITE_STATIC);
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW)
        pg_ledger_curve_add_encoded(c, (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (s != SQLITE_DONE)
        return pg_error_set(err, PG_EIO, "database error reading the ledger: %s",
                            sqlite3_errmsg(db));
    return PG_OK;
}

static int insert_db(sqlite3 *db, const char *dataset_id, const char *job_id,
                     const pg_privacy_plan *p, pg_error *err)
{
    char *txt = pg_ledger_plan_encode(p);
    if (!txt) return pg_error_set(err, PG_ENOMEM, "out of memory encoding a ledger entry");
    sqlite3_stmt *st;
    int rc = PG_OK;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO ledger(dataset_id, job_id, state, rdp, epsilon, delta, "
                           "created_at) VALUES(?,?,'reserved',?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        free(txt);
        return pg_error_set(err, PG_EIO, "database error: %s", sqlite3_errmsg(db));
    }
    sqlite3_bind_text(st, 1, dataset_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, job_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, txt, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, p->epsilon);
    sqlite3_bind_double(st, 5, p->delta);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)time(NULL));
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = pg_error_set(err, PG_EIO, "database error writing the ledger: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    free(txt);
    return rc;
}

int pg_ledger_refund_db(sqlite3 *db, const char *job_id, pg_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "UPDATE ledger SET state='refunded' WHERE job_id=?", -1, &st,
                           NULL) != SQLITE_OK)
        return pg_error_set(err, PG_EIO, "database error: %s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, job_id, -1, SQLITE_STATIC);
    int ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    return ok ? PG_OK
              : pg_error_set(err, PG_EIO, "database error refunding: %s", sqlite3_errmsg(db));
}

/* ---- admission -------------------------------------------------------- */

typedef struct admit_ctx {
    const char *dataset_id, *job_id;
    double cap_epsilon, cap_delta;
    const pg_privacy_plan *plan;
    int (*also)(sqlite3 *, void *, pg_error *);
    void *also_ctx;
    pg_ledger_quote *q;
} admit_ctx;

static int exec_sql(sqlite3 *db, const char *sql, pg_error *err)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return pg_error_set(err, PG_EIO, "database error: %s", sqlite3_errmsg(db));
    return PG_OK;
}

static int admit_tx(sqlite3 *db, void *vctx, pg_error *err)
{
    admit_ctx *a = vctx;
    /* IMMEDIATE takes the write lock before reading the ledger: no other
     * connection can reserve between our read and our insert. */
    if (exec_sql(db, "BEGIN IMMEDIATE", err)) return PG_EIO;
    int rc = PG_OK;
    if (a->plan->charges) {
        pg_ledger_curve spent;
        rc = curve_db(db, a->dataset_id, &spent, err);
        if (!rc)
            rc = pg_ledger_quote_plan(&spent, a->plan, a->cap_epsilon, a->cap_delta, a->q, err);
        if (!rc && a->q->admit) rc = insert_db(db, a->dataset_id, a->job_id, a->plan, err);
    } else {
        memset(a->q, 0, sizeof *a->q);
        a->q->admit = 1;
    }
    if (!rc && a->q->admit && a->also) rc = a->also(db, a->also_ctx, err);
    if (rc || !a->q->admit) {
        exec_sql(db, "ROLLBACK", NULL);
        return rc;
    }
    if (exec_sql(db, "COMMIT", err)) {
        exec_sql(db, "ROLLBACK", NULL);
        return PG_EIO;
    }
    return PG_OK;
}

int pg_ledger_admit(pg_store *s, const char *dataset_id, double cap_epsilon, double cap_delta,
                    const pg_privacy_plan *plan, const char *job_id,
                    int (*also)(sqlite3 *db, void *ctx, pg_error *err), void *also_ctx,
                    pg_ledger_quote *q, pg_error *err)
{
    admit_ctx a = {dataset_id, job_id, cap_epsilon, cap_delta, plan, also, also_ctx, q};
    return pg_store_with_db(s, admit_tx, &a, err);
}

typedef struct spent_ctx {
    const char *dataset_id;
    pg_ledger_curve *c;
} spent_ctx;

static int spent_tx(sqlite3 *db, void *vctx, pg_error *err)
{
    spent_ctx *c = vctx;
    return curve_db(db, c->dataset_id, c->c, err);
}

int pg_ledger_spent(pg_store *s, const char *dataset_id, pg_ledger_curve *c, pg_error *err)
{
    spent_ctx ctx = {dataset_id, c};
    return pg_store_with_db(s, spent_tx, &ctx, err);
}

typedef struct budget_ctx {
    const char *dataset_id;
    json_t *entries;
} budget_ctx;

static int budget_tx(sqlite3 *db, void *vctx, pg_error *err)
{
    budget_ctx *b = vctx;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT job_id, state, rdp, epsilon, delta FROM ledger WHERE "
                           "dataset_id=? ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK)
        return pg_error_set(err, PG_EIO, "database error: %s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, b->dataset_id, -1, SQLITE_STATIC);
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *job = (const char *)sqlite3_column_text(st, 0);
        const char *state = (const char *)sqlite3_column_text(st, 1);
        json_t *p = json_loads((const char *)sqlite3_column_text(st, 2), 0, NULL);
        json_t *e = json_pack("{s:s?,s:O?,s:O?,s:O?,s:f,s:f,s:b}", "job_id", job,
                              "noise_multiplier", json_object_get(p, "noise_multiplier"),
                              "sampling_rate", json_object_get(p, "sampling_rate"), "steps",
                              json_object_get(p, "steps"), "epsilon", sqlite3_column_double(st, 3),
                              "delta", sqlite3_column_double(st, 4), "refunded",
                              state && !strcmp(state, "refunded"));
        json_decref(p);
        if (e) json_array_append_new(b->entries, e);
    }
    sqlite3_finalize(st);
    return s == SQLITE_DONE ? PG_OK
                            : pg_error_set(err, PG_EIO, "database error: %s", sqlite3_errmsg(db));
}

int pg_ledger_budget_json(pg_store *s, const char *dataset_id, double cap_epsilon, double cap_delta,
                          json_t **out, pg_error *err)
{
    pg_ledger_curve c;
    budget_ctx b = {dataset_id, json_array()};
    int rc = pg_ledger_spent(s, dataset_id, &c, err);
    if (!rc) rc = pg_store_with_db(s, budget_tx, &b, err);
    double spent = 0.0;
    if (!rc) rc = pg_ledger_curve_epsilon(&c, cap_delta, &spent, err);
    if (rc) {
        json_decref(b.entries);
        return rc;
    }
    double remaining = cap_epsilon - spent;
    *out = json_pack("{s:{s:f,s:f},s:o,s:o,s:s,s:f,s:o}", "cap", "epsilon", cap_epsilon, "delta",
                     cap_delta, "spent_epsilon", num_or_null(spent), "remaining_epsilon",
                     json_real(remaining > 0.0 ? remaining : 0.0), "accountant",
                     "rdp_improved (per-order RDP sum, delta_rdp = cap delta - sum delta0)",
                     "delta_extra", c.delta_extra, "entries", b.entries);
    return *out ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
}
