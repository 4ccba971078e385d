#include "service/ledger.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/privacy/privacy.h"
#include "service/store/db.h"

void pg_ledger_curve_init(pg_ledger_curve *c)
{
    memset(c, 0, sizeof *c);
    c->norders = pg_rdp_default_orders(c->orders, PG_PLAN_MAX_ORDERS);
}

/* A row's contribution aligned to c's grid: v[i] is what pg_ledger_curve_add
 * adds at order i. Splitting "align" from "add" lets a cached row add the
 * very same doubles in the very same order as a freshly decoded one. */
static void align(const pg_ledger_curve *c, const double *orders, const double *rdp, size_t n,
                  double *v)
{
    for (size_t i = 0; i < c->norders; i++) {
        v[i] = INFINITY;
        for (size_t j = 0; j < n; j++)
            if (orders[j] == c->orders[i]) {
                v[i] = isnan(rdp[j]) ? INFINITY : rdp[j];
                break;
            }
    }
}

static void add_aligned(pg_ledger_curve *c, const double *v, double delta_extra)
{
    for (size_t i = 0; i < c->norders; i++) c->rdp[i] += v[i];
    c->delta_extra += delta_extra > 0.0 ? delta_extra : 0.0;
    c->entries++;
}

void pg_ledger_curve_add(pg_ledger_curve *c, const double *orders, const double *rdp, size_t n,
                         double delta_extra)
{
    double v[PG_PLAN_MAX_ORDERS];
    align(c, orders, rdp, n, v);
    add_aligned(c, v, delta_extra);
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
    /* The stored charge: every order or none (NULL, out of memory; the
     * admission then fails and stores nothing). A curve short of an order,
     * or a text jansson's dump cut short when memory ran out in it, would be
     * stored as the charge for good, so the text is read back and compared
     * first. */
    json_t *orders = json_array(), *rdp = json_array();
    for (int i = 0; orders && rdp && i < p->norders; i++)
        if (json_array_append_new(orders, json_real(p->orders[i])) ||
            json_array_append_new(rdp, num_or_null(p->rdp[i]))) {
            json_decref(orders);
            orders = NULL;
        }
    json_t *o = json_pack("{s:o,s:o,s:f,s:f,s:f,s:I,s:s,s:b}", "orders", orders, "rdp", rdp,
                          "delta_extra", p->delta_extra, "noise_multiplier", p->noise_multiplier,
                          "sampling_rate", p->sampling_rate, "steps", (json_int_t)p->steps,
                          "mechanism", p->mechanism, "approximate", p->approximate);
    char *txt = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_t *back = txt ? json_loads(txt, 0, NULL) : NULL;
    if (txt && !(back && json_equal(o, back))) {
        free(txt);
        txt = NULL;
    }
    json_decref(back);
    json_decref(o);
    return txt;
}

/* The stored text's contribution to c (align), with its δ₀: a missing or
 * corrupt text is every order +∞ and δ₀ = 0 (refuse, never skip). */
static void decode(const pg_ledger_curve *c, const char *txt, double *v, double *delta_extra)
{
    json_t *o = txt ? json_loads(txt, 0, NULL) : NULL;
    json_t *orders = json_object_get(o, "orders"), *rdp = json_object_get(o, "rdp");
    size_t n = json_array_size(orders);
    double ov[PG_PLAN_MAX_ORDERS], rv[PG_PLAN_MAX_ORDERS];
    if (!o || n == 0 || n > PG_PLAN_MAX_ORDERS || json_array_size(rdp) != n) {
        align(c, NULL, NULL, 0, v);
        *delta_extra = 0.0;
        json_decref(o);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(rdp, i);
        ov[i] = json_number_value(json_array_get(orders, i));
        rv[i] = json_is_number(r) ? json_number_value(r) : INFINITY;
    }
    json_t *de = json_object_get(o, "delta_extra");
    align(c, ov, rv, n, v);
    *delta_extra = json_is_number(de) ? json_number_value(de) : 1.0;
    json_decref(o);
}

void pg_ledger_curve_add_encoded(pg_ledger_curve *c, const char *txt)
{
    double v[PG_PLAN_MAX_ORDERS], de;
    decode(c, txt, v, &de);
    add_aligned(c, v, de);
}

/* ---- the parse cache ---------------------------------------------------- */

enum { CACHE_DEFAULT_SLOTS = 8192, CACHE_MAX_TEXT = 64 * 1024 };

typedef struct cache_entry {
    int64_t seq;
    size_t len;
    char *text; /* the exact stored text this entry was decoded from */
    double delta_extra;
    double v[]; /* aligned to the cache's grid */
} cache_entry;

struct pg_ledger_cache {
    pthread_mutex_t mu;
    size_t nslots, norders;
    double orders[PG_PLAN_MAX_ORDERS]; /* the grid v[] is aligned to */
    cache_entry **slot;
    pg_ledger_cache_stats st;
};

int pg_ledger_cache_new(int slots, pg_ledger_cache **out, pg_error *err)
{
    *out = NULL;
    if (slots < 0) return PG_OK;
    pg_ledger_cache *lc = calloc(1, sizeof *lc);
    size_t n = slots ? (size_t)slots : CACHE_DEFAULT_SLOTS;
    if (lc) lc->slot = calloc(n, sizeof *lc->slot);
    if (!lc || !lc->slot) {
        free(lc);
        return pg_error_set(err, PG_ENOMEM, "out of memory for the ledger cache");
    }
    pthread_mutex_init(&lc->mu, NULL);
    lc->nslots = n;
    lc->norders = pg_rdp_default_orders(lc->orders, PG_PLAN_MAX_ORDERS);
    *out = lc;
    return PG_OK;
}

void pg_ledger_cache_free(pg_ledger_cache *lc)
{
    if (!lc) return;
    for (size_t i = 0; i < lc->nslots; i++)
        if (lc->slot[i]) free(lc->slot[i]->text), free(lc->slot[i]);
    free(lc->slot);
    pthread_mutex_destroy(&lc->mu);
    free(lc);
}

void pg_ledger_cache_get_stats(pg_ledger_cache *lc, pg_ledger_cache_stats *s)
{
    memset(s, 0, sizeof *s);
    if (!lc) return;
    pthread_mutex_lock(&lc->mu);
    *s = lc->st;
    pthread_mutex_unlock(&lc->mu);
}

void pg_ledger_curve_add_row(pg_ledger_curve *c, pg_ledger_cache *lc, int64_t seq, const char *txt,
                             size_t len)
{
    /* Only rows with an identity and a text, on the grid the entries were
     * aligned to; anything else takes the uncached path. */
    if (!lc || seq <= 0 || !txt || len > CACHE_MAX_TEXT || c->norders != lc->norders ||
        memcmp(c->orders, lc->orders, c->norders * sizeof *c->orders)) {
        pg_ledger_curve_add_encoded(c, txt);
        return;
    }
    size_t k = (size_t)((uint64_t)seq % lc->nslots);
    pthread_mutex_lock(&lc->mu);
    cache_entry *e = lc->slot[k];
    /* A hit needs the same row AND byte-for-byte the same text: the cached
     * doubles are a pure function of the text, so they are what decoding it
     * again would give. */
    if (e && e->seq == seq && e->len == len && !memcmp(e->text, txt, len)) {
        add_aligned(c, e->v, e->delta_extra);
        lc->st.hits++;
        pthread_mutex_unlock(&lc->mu);
        return;
    }
    lc->st.misses++;
    pthread_mutex_unlock(&lc->mu);
    cache_entry *n = malloc(sizeof *n + lc->norders * sizeof(double));
    char *t = n ? malloc(len + 1) : NULL;
    double v[PG_PLAN_MAX_ORDERS], de;
    decode(c, txt, v, &de);
    add_aligned(c, v, de);
    if (!t) { /* no room to remember it: the sum above is already right */
        free(n);
        return;
    }
    memcpy(t, txt, len);
    t[len] = '\0';
    n->seq = seq;
    n->len = len;
    n->text = t;
    n->delta_extra = de;
    memcpy(n->v, v, lc->norders * sizeof(double));
    pthread_mutex_lock(&lc->mu);
    cache_entry *old = lc->slot[k];
    lc->slot[k] = n;
    if (old) {
        lc->st.evictions++;
        lc->st.bytes -= sizeof *old + lc->norders * sizeof(double) + old->len + 1;
    } else {
        lc->st.entries++;
    }
    lc->st.bytes += sizeof *n + lc->norders * sizeof(double) + len + 1;
    pthread_mutex_unlock(&lc->mu);
    if (old) free(old->text), free(old);
}

int pg_ledger_spent(struct pg_db *db, const char *dataset_id, pg_ledger_curve *c, pg_error *err)
{
    pg_ledger_entry *e;
    size_t n;
    int rc = pg_db_ledger_entries(db, dataset_id, &e, &n, err);
    if (rc) return rc;
    pg_ledger_cache *lc = pg_db_ledger_cache(db);
    pg_ledger_curve_init(c);
    for (size_t i = 0; i < n; i++)
        if (!e[i].refunded)
            pg_ledger_curve_add_row(c, lc, e[i].seq, e[i].plan, e[i].plan ? strlen(e[i].plan) : 0);
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
    if (!entries) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    pg_ledger_cache *lc = pg_db_ledger_cache(db);
    /* Every entry, whole, or none (out of memory: the API's 503): a ledger
     * view missing a charge, or a charge missing its parameters because its
     * text could not be parsed right then, would be a wrong answer. */
    for (size_t i = 0; !rc && i < n; i++) {
        if (!e[i].refunded)
            pg_ledger_curve_add_row(&c, lc, e[i].seq, e[i].plan, e[i].plan ? strlen(e[i].plan) : 0);
        json_error_t je;
        json_t *p = e[i].plan ? json_loads(e[i].plan, 0, &je) : NULL;
        if (e[i].plan && !p && json_error_code(&je) == json_error_out_of_memory) {
            rc = pg_error_set(err, PG_ENOMEM, "out of memory");
            break;
        }
        json_t *o = json_pack(
            "{s:s?,s:O?,s:O?,s:O?,s:f,s:f,s:b}", "job_id", e[i].job_id[0] ? e[i].job_id : NULL,
            "noise_multiplier", json_object_get(p, "noise_multiplier"), "sampling_rate",
            json_object_get(p, "sampling_rate"), "steps", json_object_get(p, "steps"), "epsilon",
            e[i].epsilon, "delta", e[i].delta, "refunded", e[i].refunded);
        json_decref(p);
        if (json_array_append_new(entries, o)) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    pg_ledger_entries_free(e, n);
    double spent = 0.0;
    if (!rc) rc = pg_ledger_curve_epsilon(&c, cap_delta, &spent, err);
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
