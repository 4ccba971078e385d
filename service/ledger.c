#include "service/ledger.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/privacy/privacy.h"
#include "service/db.h"

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

int pg_ledger_spent(struct pg_db *db, const char *dataset_id, pg_ledger_curve *c, pg_error *err)
{
    pg_ledger_entry *e;
    size_t n;
    int rc = pg_db_ledger_entries(db, dataset_id, &e, &n, err);
    if (rc) return rc;
    pg_ledger_curve_init(c);
    for (size_t i = 0; i < n; i++)
        if (!e[i].refunded) pg_ledger_curve_add_encoded(c, e[i].plan);
    pg_ledger_entries_free(e, n);
    return PG_OK;
}

int pg_ledger_budget_json(struct pg_db *db, const char *dataset_id, double cap_epsilon,
                          double cap_delta, json_t **out, pg_error *err)
{
    pg_ledger_entry *e;
    size_t n;
    int rc = pg_db_ledger_entries(db, dataset_id, &e, &n, err);
    if (rc) return rc;
    pg_ledger_curve c;
    pg_ledger_curve_init(&c);
    json_t *entries = json_array();
    for (size_t i = 0; i < n; i++) {
        if (!e[i].refunded) pg_ledger_curve_add_encoded(&c, e[i].plan);
        json_t *p = e[i].plan ? json_loads(e[i].plan, 0, NULL) : NULL;
        json_t *o = json_pack(
            "{s:s?,s:O?,s:O?,s:O?,s:f,s:f,s:b}", "job_id", e[i].job_id[0] ? e[i].job_id : NULL,
            "noise_multiplier", json_object_get(p, "noise_multiplier"), "sampling_rate",
            json_object_get(p, "sampling_rate"), "steps", json_object_get(p, "steps"), "epsilon",
            e[i].epsilon, "delta", e[i].delta, "refunded", e[i].refunded);
        json_decref(p);
        if (o) json_array_append_new(entries, o);
    }
    pg_ledger_entries_free(e, n);
    double spent = 0.0;
    rc = pg_ledger_curve_epsilon(&c, cap_delta, &spent, err);
    if (rc) {
        json_decref(entries);
        return rc;
    }
    double remaining = cap_epsilon - spent;
    *out = json_pack("{s:{s:f,s:f},s:o,s:o,s:s,s:f,s:o}", "cap", "epsilon", cap_epsilon, "delta",
                     cap_delta, "spent_epsilon", num_or_null(spent), "remaining_epsilon",
                     json_real(remaining > 0.0 ? remaining : 0.0), "accountant",
                     "rdp_improved (per-order RDP sum, delta_rdp = cap delta - sum delta0)",
                     "delta_extra", c.delta_extra, "entries", entries);
    return *out ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
}
