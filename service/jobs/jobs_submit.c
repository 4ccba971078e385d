/* service/jobs/jobs_submit.c - POST /v1/jobs: resolve, plan, admit, queue. */
#include "service/auth.h"
#include "service/jobs/jobdesc.h"
#include "service/jobs/jobs.h"
#include "service/jobs/jobs_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>

/* A privacy accountant that overflows (a noise multiplier like 1e-300 makes
 * every Renyi order infinite or NaN) is refused as the spec's fault, on the
 * noise multiplier the spec gave, whichever method runs it. */
static void numeric_refusal(const json_t *spec, pg_spec_errors *fe, const pg_error *err)
{
    const json_t *cal = json_object_get(json_object_get(spec, "calibration"), "noise_multiplier");
    const json_t *nm = json_object_get(json_object_get(spec, "privacy"), "noise_multiplier");
    /* Both given: the smaller one overflowed. */
    int use_cal = cal && (!nm || json_number_value(cal) < json_number_value(nm));
    const char *field = use_cal ? "calibration.noise_multiplier"
                        : nm    ? "privacy.noise_multiplier"
                                : "privacy";
    pg_spec_error_add(fe, field,
                      "is too small: the privacy loss it gives is not a finite number (%s); "
                      "raise it, or give a target epsilon",
                      err && err->msg[0] ? err->msg : "the accountant overflowed");
}

static int draw_seed(uint64_t *seed, pg_error *err)
{
    uint64_t v;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
        return pg_error_set(err, PG_EIO, "getrandom failed: %s", strerror(errno));
    *seed = v & ((UINT64_C(1) << 53) - 1); /* exact in a JSON number */
    return PG_OK;
}

/* The job's public dataset: same tenant, declared public, same row shape as
 * the private one, not empty. Problems become field errors. */
static int public_desc(pg_jobs *m, const char *tenant, const char *ds_id, const char *pub_id,
                       const pg_data_desc *priv, pg_data_desc *out, pg_spec_errors *fe,
                       pg_error *err)
{
    static const char *const F = "public_dataset_id";
    if (!strcmp(pub_id, ds_id)) {
        pg_spec_error_add(fe, F, "must name a dataset other than dataset_id");
        return PG_OK;
    }
    pg_db_dataset ds;
    int found;
    int rc = pg_db_dataset_get(m->db, tenant, pub_id, &ds, &found, err);
    if (rc) return rc;
    if (!found) {
        pg_spec_error_add(fe, F, "no such dataset");
        return PG_OK;
    }
    rc = pg_jobdesc_from_meta(ds.meta, ds.n, out, err);
    pg_db_dataset_free(&ds);
    if (rc) return rc;
    if (out->model != PG_PRIVACY_PUBLIC) {
        pg_spec_error_add(fe, F,
                          "the dataset is declared %s, not public: only a public dataset may be "
                          "read without privacy accounting",
                          pg_jobs_model_name(out->model));
        return PG_OK;
    }
    bool same = out->d == priv->d && out->ndim == priv->ndim;
    for (int i = 0; same && i < out->ndim && i < 3; i++) same = out->shape[i] == priv->shape[i];
    if (!same)
        pg_spec_error_add(fe, F,
                          "its rows (%zu values) do not have the shape of dataset_id's rows "
                          "(%zu values)",
                          out->d, priv->d);
    else if (out->n == 0)
        pg_spec_error_add(fe, F, "the public dataset has no rows yet");
    return PG_OK;
}

/* The row's spec: the resolved spec plus the shape, range and classes the
 * job's samples have and its data's privacy model (PG_JOBS_GEOMETRY_KEY), so a finished job still
 * serves them, PNG included, after its dataset is deleted (job_from_row reads and removes the key:
 * the job view shows the resolved spec only). */
static char *stored_spec(const json_t *resolved, const pg_data_desc *desc)
{
    json_t *copy = json_copy((json_t *)resolved);
    json_t *shape = json_array();
    for (int i = 0; shape && i < desc->ndim && i < 3; i++)
        json_array_append_new(shape, json_integer((json_int_t)desc->shape[i]));
    json_t *g = json_pack("{s:o,s:[f,f],s:i,s:i}", "shape", shape, "range", (double)desc->lo,
                          (double)desc->hi, "num_classes", desc->num_classes, "model", desc->model);
    char *txt = NULL;
    if (copy && g && !json_object_set_new(copy, PG_JOBS_GEOMETRY_KEY, g))
        txt = json_dumps(copy, JSON_COMPACT | JSON_REAL_PRECISION(17));
    else
        json_decref(g);
    json_decref(copy);
    return txt;
}

int pg_jobs_submit(pg_jobs *m, const char *tenant, const json_t *spec, int dry_run,
                   pg_submit_result *res, pg_error *err)
{
    memset(res, 0, sizeof *res);
    res->outcome = PG_SUBMIT_INVALID;
    pg_spec_errors *fe = &res->errors;
    const char *ds_id = json_string_value(json_object_get(spec, "dataset_id"));
    const char *mname = json_string_value(json_object_get(spec, "method"));
    const json_t *pub_j = json_object_get(spec, "public_dataset_id");
    const char *pub_id = json_string_value(pub_j);
    if (pub_j && !pub_id) pg_spec_error_add(fe, "public_dataset_id", "must be a string");
    if (!ds_id) pg_spec_error_add(fe, "dataset_id", "is required (a string)");
    if (!mname) pg_spec_error_add(fe, "method", "is required (see GET /v1/algorithms)");
    if (fe->count) return PG_OK;
    pg_db_dataset ds;
    int found;
    int rc = pg_db_dataset_get(m->db, tenant, ds_id, &ds, &found, err);
    if (rc) return rc;
    if (!found) {
        pg_spec_error_add(fe, "dataset_id", "no such dataset");
        return PG_OK;
    }
    PG_JOBDESC_SCOPED pg_data_desc desc = {0};
    rc = pg_jobdesc_from_meta(ds.meta, ds.n, &desc, err);
    pg_db_dataset_free(&ds);
    if (rc) return rc;
    const pg_method *mt = pg_method_find(mname);
    if (!mt) {
        pg_spec_error_add(fe, "method", "unknown method '%.60s' (see GET /v1/algorithms)", mname);
        return PG_OK;
    }
    if (!(mt->accepts & (unsigned)desc.model)) {
        pg_spec_error_add(fe, "method", "%s does not train on %s datasets", mt->name,
                          pg_jobs_model_name(desc.model));
        return PG_OK;
    }
    if (desc.n == 0) {
        pg_spec_error_add(fe, "dataset_id", "the dataset has no rows yet");
        return PG_OK;
    }
    PG_JOBDESC_SCOPED pg_data_desc pdesc = {0};
    if (pub_id && (rc = public_desc(m, tenant, ds_id, pub_id, &desc, &pdesc, fe, err))) return rc;
    if (fe->count) return PG_OK;
    pg_job_data in = {.desc = &desc, .public_desc = pub_id ? &pdesc : NULL};
    json_t *copy = json_deep_copy(spec);
    if (!copy) return pg_error_set(err, PG_ENOMEM, "out of memory");
    /* keep_checkpoints is the service's (retention, jobs_run.c), not the
     * method's: taken out before the method validates the rest. */
    json_int_t keep = DEFAULT_KEEP_CKPT;
    json_t *keep_j = json_object_get(copy, "keep_checkpoints");
    if (keep_j) {
        if (!json_is_integer(keep_j) || json_integer_value(keep_j) < 0 ||
            json_integer_value(keep_j) > MAX_KEEP_CKPT)
            pg_spec_error_add(fe, "keep_checkpoints",
                              "must be an integer in [0, %d]: the checkpoints kept besides the "
                              "newest",
                              MAX_KEEP_CKPT);
        else
            keep = json_integer_value(keep_j);
        json_object_del(copy, "keep_checkpoints");
        if (fe->count) {
            json_decref(copy);
            return PG_OK;
        }
    }
    if (!json_object_get(copy, "seed")) {
        uint64_t seed = 0;
        if ((rc = draw_seed(&seed, err))) {
            json_decref(copy);
            return rc;
        }
        json_object_set_new(copy, "seed", json_integer((json_int_t)seed));
    }
    json_t *resolved = NULL;
    rc = mt->validate(copy, &in, &resolved, fe, err);
    json_decref(copy);
    if (rc == PG_EINVAL && fe->count) return PG_OK;
    if (rc == PG_EINVAL || rc == PG_ERANGE) { /* e.g. no sigma reaches the target */
        pg_spec_error_add(fe, "privacy", "%s", err ? err->msg : "the spec cannot be planned");
        return PG_OK;
    }
    if (rc == PG_ENUMERIC) { /* the accountant overflowed: a spec problem, never a 500 */
        numeric_refusal(spec, fe, err);
        return PG_OK;
    }
    if (rc) return rc;
    json_object_set_new(resolved, "dataset_id", json_string(ds_id));
    json_object_set_new(resolved, "method", json_string(mt->name));
    if (pub_id) json_object_set_new(resolved, "public_dataset_id", json_string(pub_id));
    json_object_set_new(resolved, "keep_checkpoints", json_integer(keep));
    if ((rc = pg_jobdesc_spec_add_table(resolved, &desc, err))) goto out;
    pg_privacy_plan plan;
    rc = mt->plan(resolved, &in, &plan, err);
    if (rc == PG_EINVAL || rc == PG_ERANGE) {
        pg_spec_error_add(fe, "privacy", "%s", err ? err->msg : "the spec cannot be planned");
        rc = PG_OK;
        goto out;
    }
    if (rc == PG_ENUMERIC || (rc == PG_OK && plan.charges && !isfinite(plan.epsilon))) {
        numeric_refusal(spec, fe, err);
        rc = PG_OK;
        goto out;
    }
    if (rc) goto out;
    if (desc.model == PG_PRIVACY_CENTRAL && !plan.charges) {
        /* The method should have refused already; the service never lets a
         * model trained on raw central rows out without a charge. */
        pg_spec_error_add(fe, "privacy", "central data needs a differentially private job");
        goto out;
    }
    if (desc.model == PG_PRIVACY_CENTRAL && plan.approximate) {
        /* The cap is a guarantee; a non-rigorous bound (e.g. the CLT
         * sensitivity) cannot be charged against it. */
        pg_spec_error_add(fe, "privacy",
                          "this configuration uses a bound that is not rigorous (approximate); "
                          "central datasets only admit rigorous accounting");
        goto out;
    }
    size_t mem = mt->memory_estimate ? mt->memory_estimate(resolved, &in) : GENERIC_MEMORY;
    size_t rows = desc.n * desc.d * sizeof(float) + desc.n * sizeof(int32_t);
    if (mt->streams) /* one window of rows read from storage (jobs_run.c) */
        rows = (desc.d * sizeof(float) + sizeof(int32_t)) * (desc.n < 4096 ? desc.n : 4096);
    if (pub_id) /* held next to the private rows while the trainer is created */
        rows += pdesc.n * pdesc.d * sizeof(float) + pdesc.n * sizeof(int32_t);
    mem = mem > SIZE_MAX - rows ? SIZE_MAX : mem + rows;
    if (mem > m->cfg->max_job_memory) {
        pg_spec_error_add(fe, "model",
                          "the job needs about %zu MiB, above the server's limit of %zu MiB "
                          "(--max-job-memory)",
                          mem >> 20, m->cfg->max_job_memory >> 20);
        goto out;
    }
    if (dry_run) {
        json_t *body = json_pack("{s:O,s:o,s:I}", "spec", resolved, "plan",
                                 pg_jobs_plan_json(&plan, &desc), "memory_bytes", (json_int_t)mem);
        if (plan.charges && desc.model == PG_PRIVACY_CENTRAL) {
            pg_ledger_curve spent;
            rc = pg_ledger_spent(m->db, ds_id, &spent, err);
            if (!rc)
                rc = pg_ledger_quote_plan(&spent, &plan, desc.cap_epsilon, desc.cap_delta,
                                          &res->quote, err);
            if (rc) {
                json_decref(body);
                goto out;
            }
            /* NULL body: out of memory (the API's 503), never one without its budget */
            if (body && json_object_set_new(body, "budget", pg_jobs_quote_json(&res->quote))) {
                json_decref(body);
                body = NULL;
            }
        }
        res->body = body;
        res->outcome = PG_SUBMIT_DRY_RUN;
        goto out;
    }
    /* --max-queued bounds the shared queue: the queued rows of every
     * replica (jobs.h), plus this replica's admissions in flight. */
    int64_t depth;
    if ((rc = pg_db_job_queue_depth(m->db, &depth, err))) goto out;
    pthread_mutex_lock(&m->mu);
    if ((size_t)depth + m->pending >= m->cfg->max_queued || m->stopping) {
        pthread_mutex_unlock(&m->mu);
        res->outcome = PG_SUBMIT_QUEUE_FULL;
        goto out;
    }
    m->pending++;
    pthread_mutex_unlock(&m->mu);
    pg_job_row row;
    memset(&row, 0, sizeof row);
    rc = pg_auth_random_id("job_", row.id, err);
    snprintf(row.tenant, sizeof row.tenant, "%s", tenant);
    snprintf(row.dataset_id, sizeof row.dataset_id, "%s", ds_id);
    snprintf(row.method, sizeof row.method, "%s", mt->name);
    row.data_n = (int64_t)desc.n;
    if (pub_id) {
        snprintf(row.public_dataset_id, sizeof row.public_dataset_id, "%s", pub_id);
        row.public_n = (int64_t)pdesc.n;
    }
    row.spec = rc ? NULL : stored_spec(resolved, &desc);
    if (!rc && !row.spec) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    job *j = NULL;
    int gone = 0;
    double submitted = pg_jobs_wall();
    if (!rc) {
        int central = desc.model == PG_PRIVACY_CENTRAL;
        pg_privacy_plan none = plan;
        none.charges = false;
        rc = pg_db_job_admit(m->db, &row, central ? &plan : &none, desc.cap_epsilon, desc.cap_delta,
                             &res->quote, err);
        if (rc == PG_ESTATE) { /* deleted since it was looked up: nothing written */
            gone = 1;
            rc = PG_OK;
            pg_spec_error_add(fe, "dataset_id", "no such dataset");
        }
    }
    if (!rc && !gone && res->quote.admit) {
        j = calloc(1, sizeof *j);
        if (!j) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    json_t *priv = j ? pg_jobs_plan_json(&plan, &desc) : NULL;
    pthread_mutex_lock(&m->mu);
    m->pending--;
    if (gone) {
        res->outcome = PG_SUBMIT_INVALID;
    } else if (!rc && !res->quote.admit) {
        res->outcome = PG_SUBMIT_OVER_BUDGET;
    } else if (!rc) {
        j->seq = row.seq;
        memcpy(j->id, row.id, sizeof j->id);
        memcpy(j->tenant, row.tenant, sizeof j->tenant);
        memcpy(j->dataset_id, row.dataset_id, sizeof j->dataset_id);
        snprintf(j->method_name, sizeof j->method_name, "%s", mt->name);
        j->method = mt;
        j->spec = json_incref(resolved);
        j->desc = desc;
        pg_jobdesc_disown(&desc);
        memcpy(j->public_dataset_id, row.public_dataset_id, sizeof j->public_dataset_id);
        if (pub_id) j->public_desc = pdesc;
        pg_jobdesc_disown(&pdesc);
        j->plan = plan;
        j->privacy = priv; /* NULL: rendered when shown (pg_jobs_privacy_json) */
        priv = NULL;
        j->total = plan.steps;
        j->loss = NAN;
        j->sps = j->eta = NAN;
        j->created_at = row.created_at;
        j->submitted_at = submitted;
        /* The row is committed and in the shared queue whatever happens
         * here: a worker of any replica may already have claimed it (and
         * taken it into this table). */
        job *known = pg_jobs_by_id(m, j->id);
        if (known) {
            pg_jobs_job_free(j);
            j = known;
        } else if (pg_jobs_table_add(m, j)) {
            pg_jobs_job_free(j);
            j = NULL;
            rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        }
        if (j) {
            pg_jobs_wake_worker(m);
            res->outcome = PG_SUBMIT_ACCEPTED;
            memcpy(res->job_id, j->id, sizeof res->job_id);
            res->body = pg_jobs_job_json(j);
        }
    }
    pthread_mutex_unlock(&m->mu);
    json_decref(priv);
    free(row.spec);
out:
    json_decref(resolved);
    return rc;
}
