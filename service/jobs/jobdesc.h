/* service/jobs/jobdesc.h - a stored dataset's metadata as a trainer's pg_data_desc.
 *
 * The bridge between service/datasets/spec.h (the declaration) and the
 * method interface: the one place a declaration's privacy model (enum
 * pg_svc_privacy_model, stored numbers) becomes the engine's (enum
 * pg_privacy_model, bit flags).
 */
#ifndef PG_SVC_JOBDESC_H
#define PG_SVC_JOBDESC_H

#include <jansson.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/methods/method.h"

/* desc from the dataset's normalized meta JSON with n rows. For a typed
 * dataset (service/typed.h) it also builds desc->table and, for local typed
 * data, desc->ldp (the declared per-column channel; desc's local fields get
 * the declared totals, mechanism from the numeric columns, sensitivity
 * hi - lo and the largest numeric noise scale, 0 without numeric columns).
 * The desc owns them: pg_jobdesc_release frees them (idempotent), and a
 * copy that takes them over calls pg_jobdesc_disown on the source. */
/* The engine's model for a declaration's (unknown numbers: public, as
 * pg_jobdesc_from_meta has always read them). */
int pg_jobdesc_model(int svc_model);
int pg_jobdesc_from_meta(const char *meta, int64_t n, pg_data_desc *desc, pg_error *err);
void pg_jobdesc_release(pg_data_desc *desc);
void pg_jobdesc_disown(pg_data_desc *desc);
/* A desc released when it goes out of scope (unless disowned). */
#define PG_JOBDESC_SCOPED __attribute__((cleanup(pg_jobdesc_release)))
/* A job's table from its resolved spec's "table" map (PG_JOBDESC_TABLE_KEY)
 * when desc has none: its dataset was deleted. No map: nothing to do. */
#define PG_JOBDESC_TABLE_KEY "table"
int pg_jobdesc_table_from_spec(const json_t *spec, pg_data_desc *desc, pg_error *err);
/* Puts desc's encoder map (pg_table_to_json) into a resolved spec, so the
 * job decodes its samples without its dataset; nothing for untyped data. */
int pg_jobdesc_spec_add_table(json_t *resolved, const pg_data_desc *desc, pg_error *err);

/* For local datasets: the amplification-by-shuffling report for n rows,
 * a new object {shuffle_epsilon, shuffle_delta, shuffle_bound, ...} (see the
 * .c for the Gaussian case), or NULL when not local. */
json_t *pg_jobdesc_shuffle_json(const pg_data_desc *desc);

#endif
