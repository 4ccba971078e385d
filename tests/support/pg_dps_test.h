/* tests/support/pg_dps_test.h - fixtures shared by the dp_sinkhorn tests
 * (test_dp_sinkhorn.c, test_calib.c): a labelled central toy set, spec
 * resolution that fails the test on field errors, and trainer creation.
 */
#ifndef PG_DPS_TEST_H
#define PG_DPS_TEST_H

#include "engine/core/alloc.h"
#include "engine/data/dataset.h"
#include "support/pg_method_test.h"

/* A labelled central toy set: two classes, blobs around (-2, 0) and (2, 2)
 * (shifted by `shift` in both coordinates). */
static inline void make_central(size_t n, float shift, pg_dataset *ds, pg_data_desc *desc)
{
    pg_rng r;
    pg_rng_seeded(&r, 91, 0);
    float *x = pg_alloc_f32(n * 2);
    int32_t *lab = pg_calloc(n, sizeof(int32_t));
    for (size_t i = 0; i < n; i++) {
        lab[i] = (int32_t)(i % 2);
        x[2 * i] = (lab[i] ? 2.0f : -2.0f) + shift + 0.3f * (float)pg_rng_normal(&r);
        x[2 * i + 1] = (lab[i] ? 2.0f : 0.0f) + shift + 0.3f * (float)pg_rng_normal(&r);
    }
    pg_test_central_2d(x, lab, n, 2, 1e6, ds, desc);
}

static inline json_t *resolve(const char *text, const pg_data_desc *desc, pg_spec_errors *e)
{
    return pg_test_resolve(pg_method_find("dp_sinkhorn"), text, &(pg_job_data){.desc = desc}, e);
}

static inline json_t *resolve_ok(const char *text, const pg_data_desc *desc)
{
    pg_spec_errors e;
    json_t *r = resolve(text, desc, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.count ? e.items[0].field : "?",
                  e.count ? e.items[0].message : "?");
    return r;
}

static inline pg_trainer *make_trainer(const json_t *r, const pg_data_desc *desc,
                                       const pg_dataset *ds)
{
    const pg_method *m = pg_method_find("dp_sinkhorn");
    pg_trainer *t = NULL;
    pg_error err = {0};
    ck_assert_msg(m->create(r, &(pg_job_data){.desc = desc, .rows = ds}, 1, &t, &err) == PG_OK,
                  "%s", err.msg);
    return t;
}

#endif
