/* service/ledger.h - the privacy ledger of central datasets.
 *
 * Each admitted job on a central dataset owns one ledger row holding its
 * planned Rényi-DP curve (per order, on the privacy library's default grid),
 * its additive δ₀ (probabilistic sensitivity bounds) and its own (ε, δ).
 * Rows are `reserved` or `refunded` (a job cancelled while queued: it never
 * read the data). Composition: the RDP curves of every reserved row add up
 * per order (independent mechanisms compose additively in RDP) and their δ₀
 * add up (a union bound over the failure events of the bounds).
 *
 * Conversion to (ε, δ) at the cap's δ: the total failure probability is
 * δ_rdp + Σδ₀, so the RDP curve is converted at δ_rdp = cap_δ − Σδ₀ (with the
 * improved conversion of Balle et al. 2020, PG_RDP_CONV_IMPROVED). When
 * Σδ₀ ≥ cap_δ no δ_rdp is left and ε is +∞: such a job is never admitted.
 * An order an entry does not report counts as +∞ for the sum (skipped by the
 * conversion), so differing grids can only make ε larger, never smaller.
 *
 * Admission itself is one storage operation (pg_db_job_admit in
 * service/store/db.h: this quote, the ledger row and the job row in one
 * transaction). This module is the backend-free part: curve arithmetic, the
 * quote, the stored form of a row's curve, and read-only views over pg_db.
 * Errors are I/O only (a refused admission is PG_OK with q->admit = 0).
 */
#ifndef PG_SVC_LEDGER_H
#define PG_SVC_LEDGER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/methods/method.h"
struct pg_db;

typedef struct pg_ledger_curve {
    size_t norders;
    double orders[PG_PLAN_MAX_ORDERS];
    double rdp[PG_PLAN_MAX_ORDERS];
    double delta_extra;
    int entries;
} pg_ledger_curve;

/* Empty curve on the default order grid. */
void pg_ledger_curve_init(pg_ledger_curve *c);
/* Adds one entry's curve (matched by order value) and its δ₀. */
void pg_ledger_curve_add(pg_ledger_curve *c, const double *orders, const double *rdp, size_t n,
                         double delta_extra);
/* ε of the composed curve at total δ = cap_delta (see above); 0 for no
 * entries, +∞ when Σδ₀ >= cap_delta. */
int pg_ledger_curve_epsilon(const pg_ledger_curve *c, double cap_delta, double *eps, pg_error *err);

typedef struct pg_ledger_quote {
    double requested_epsilon; /* the job alone, at the cap's δ */
    double spent_epsilon;     /* reserved entries so far */
    double total_epsilon;     /* spent + this job, composed */
    double cap_epsilon, remaining_epsilon;
    int admit;
} pg_ledger_quote;

/* Pure decision: would `plan` fit next to `spent`? */
int pg_ledger_quote_plan(const pg_ledger_curve *spent, const pg_privacy_plan *plan,
                         double cap_epsilon, double cap_delta, pg_ledger_quote *q, pg_error *err);

/* The stored text of a ledger row's curve (JSON: orders, rdp, delta_extra
 * and the plan's parameters); malloc'ed, NULL when out of memory. Shared by
 * every storage backend so a row means the same everywhere. */
char *pg_ledger_plan_encode(const pg_privacy_plan *p);
/* Adds a stored row's curve to c; a missing or corrupt text counts as an
 * infinite spend (never as nothing). */
void pg_ledger_curve_add_encoded(pg_ledger_curve *c, const char *text);

/* The parse cache: a stored row's decoded curve, kept in process so an
 * admission does not re-parse every row's JSON. The database stays the
 * only source of which rows exist and which are refunded (read on every
 * admission); the cache only replaces parsing. An entry is found by the
 * row's identity (ledger seq, direct-mapped: seq mod slots, a newer row
 * replaces the one in its slot) and used only when its saved copy of the
 * text is byte-for-byte the text just read, so a hit adds exactly the
 * doubles decoding would (a tampered or rewritten row is decoded again).
 * Bounded: at most `slots` entries of about 1.3 KiB plus their text (about
 * 5 KiB for a default-grid plan; texts over 64 KiB are never kept).
 * Thread-safe (one mutex, never held while parsing). Owned by the pg_db
 * handle (pg_db_ledger_cache). */
typedef struct pg_ledger_cache pg_ledger_cache;
typedef struct pg_ledger_cache_stats {
    unsigned long long hits, misses, evictions;
    size_t entries, bytes;
} pg_ledger_cache_stats;

/* slots 0: the default (8192); < 0: no cache (*out = NULL, PG_OK). */
int pg_ledger_cache_new(int slots, pg_ledger_cache **out, pg_error *err);
void pg_ledger_cache_free(pg_ledger_cache *lc);
void pg_ledger_cache_get_stats(pg_ledger_cache *lc, pg_ledger_cache_stats *s);
/* Exactly pg_ledger_curve_add_encoded(c, text) (text of len bytes, or
 * NULL), through lc when it is not NULL and seq > 0. */
void pg_ledger_curve_add_row(pg_ledger_curve *c, pg_ledger_cache *lc, int64_t seq, const char *text,
                             size_t len);

/* Composed curve of a dataset's reserved rows (pg_db_ledger_entries). */
int pg_ledger_spent(struct pg_db *db, const char *dataset_id, pg_ledger_curve *c, pg_error *err);

/* GET /v1/datasets/{id}/budget body: {cap, spent_epsilon, remaining_epsilon,
 * accountant, entries[]}. *out is a new object. */
int pg_ledger_budget_json(struct pg_db *db, const char *dataset_id, double cap_epsilon,
                          double cap_delta, json_t **out, pg_error *err);

#endif
