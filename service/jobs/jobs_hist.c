/* service/jobs/jobs_hist.c - a job's durable view: the history document stored
 * with pg_db_job_history_put_owned and applied back when the job table is rebuilt
 * at start, so a restart shows what was shown before it.
 *
 * Document (version 1):
 *   {"v":1, "step", "total_steps", "loss", "epsilon_spent", "steps_per_second",
 *    "history": [[step, loss, epsilon_spent], ...], "hist_stride",
 *    "warnings": [...] (finished jobs only), "privacy": {...},
 *    "trainer_warnings": [{source, code, message, step}, ...] (when any: what
 *    the trainer warned of, kept for the rest of the job's life, resumes included),
 *    "node": the replica that ran it (when known)}
 * Non-finite numbers are null. What a job's samples look like (shape, range,
 * classes, privacy model) is not here: it is stored with the spec at
 * submission (jobs_submit.c), which also covers jobs that never checkpointed.
 *
 * Write rate: the worker (the job's owner only: the write is fenced) saves
 * at each checkpoint, at most every --progress-seconds between them (so
 * other replicas can show progress), and once at the end, never per step. The history is
 * bounded by HIST_CAP points (jobs_run.c's rule: when full, every other
 * point is dropped and the sampling stride doubles), so a document stays
 * below ~40 KB whatever the step count.
 */
#include "service/jobs/jobs.h"
#include "service/jobs/jobs_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/methods/warnings.h"

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static double dbl(const json_t *v, double dflt)
{
    return json_is_number(v) ? json_number_value(v) : dflt;
}

json_t *pg_jobs_warnings_json(const job *j, int succeeded)
{
    json_t *w = json_array();
    if (!w) return NULL;
    long steps[HIST_CAP];
    double loss[HIST_CAP];
    for (size_t i = 0; i < j->nhist; i++) steps[i] = j->hist[i].step, loss[i] = j->hist[i].loss;
    const pg_snapshot *snap = succeeded ? j->snap : NULL;
    if (snap && !j->desc.d) snap = NULL; /* no geometry to judge the range by */
    pg_warnings_append(steps, loss, j->nhist, snap, &j->desc, w, NULL);
    /* The trainer's own warnings follow the ones judged from the model. */
    size_t i;
    json_t *o;
    json_array_foreach(j->twarn, i, o)
    {
        if (json_array_append_new(w, json_deep_copy(o))) {
            json_decref(w); /* a list missing a warning is no answer */
            return NULL;
        }
    }
    return w;
}

int pg_jobs_twarn_merge(job *j, const pg_trainer_warnings *w)
{
    if (!w || w->count <= 0) return 0;
    int changed = 0;
    for (int k = 0; k < w->count && k < PG_TRAINER_WARN_MAX; k++) {
        const pg_trainer_warning *tw = &w->items[k];
        json_t *o, *hit = NULL;
        size_t i;
        json_array_foreach(j->twarn, i, o)
        {
            const char *c = json_string_value(json_object_get(o, "code"));
            if (c && !strcmp(c, tw->code)) hit = o;
        }
        if (hit) {
            const char *msg = json_string_value(json_object_get(hit, "message"));
            if (msg && !strcmp(msg, tw->message)) continue;
            json_object_set_new(hit, "message", json_string(tw->message));
            changed = 1;
            continue;
        }
        if (!j->twarn && !(j->twarn = json_array())) return changed;
        if (json_array_size(j->twarn) >= PG_JOBS_TWARN_MAX) continue;
        json_t *n = json_pack("{s:s,s:s,s:s,s:I}", "source", "trainer", "code", tw->code, "message",
                              tw->message, "step", (json_int_t)j->step);
        if (n && !json_array_append_new(j->twarn, n)) changed = 1;
    }
    return changed;
}

static char *encode(const job *j)
{
    /* The stored view is every part or nothing (NULL: out of memory, the
     * write is not made): one stored with a part missing would be shown by
     * every replica, and after a restart, for good. */
    json_t *h = json_array();
    for (size_t i = 0; h && i < j->nhist; i++)
        if (json_array_append_new(h, json_pack("[I,o,o]", (json_int_t)j->hist[i].step,
                                               num(j->hist[i].loss), num(j->hist[i].eps)))) {
            json_decref(h);
            h = NULL;
        }
    json_t *o =
        json_pack("{s:i,s:I,s:I,s:o,s:o,s:o,s:o,s:I,s:o}", "v", 1, "step", (json_int_t)j->step,
                  "total_steps", (json_int_t)j->total, "loss", num(j->loss), "epsilon_spent",
                  num(j->eps_spent), "steps_per_second", num(j->sps), "history", h, "hist_stride",
                  (json_int_t)j->hist_stride, "privacy", pg_jobs_privacy_json(j));
    int bad = !o;
    if (!bad && j->warnings) bad = json_object_set(o, "warnings", j->warnings);
    if (!bad && json_array_size(j->twarn)) bad = json_object_set(o, "trainer_warnings", j->twarn);
    if (!bad && j->node[0]) bad = json_object_set_new(o, "node", json_string(j->node));
    /* jansson's dump may cut a key short when memory runs out in it (as for
     * dataset metadata, service/datasets/spec.c): read back and compared. */
    char *s = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_t *back = s ? json_loads(s, 0, NULL) : NULL;
    if (s && !(back && json_equal(o, back))) {
        free(s);
        s = NULL;
    }
    json_decref(back);
    json_decref(o);
    return s;
}

int pg_jobs_hist_save(pg_jobs *m, job *j, int *held, pg_error *err)
{
    *held = 0;
    pthread_mutex_lock(&m->mu);
    char *doc = encode(j);
    pthread_mutex_unlock(&m->mu);
    if (!doc) return pg_error_set(err, PG_ENOMEM, "out of memory encoding a job's history");
    /* Only the job's owner writes its view: after a takeover a stale owner
     * cannot replace the new owner's progress. */
    int rc = pg_db_job_history_put_owned(m->db, j->id, m->node, doc, held, err);
    free(doc);
    return rc;
}

int pg_jobs_hist_apply(job *j, const char *doc)
{
    json_t *o = json_loads(doc, 0, NULL);
    if (!json_is_object(o) || json_integer_value(json_object_get(o, "v")) != 1) {
        json_decref(o);
        return -1;
    }
    j->step = (long)json_integer_value(json_object_get(o, "step"));
    j->total = (long)json_integer_value(json_object_get(o, "total_steps"));
    j->loss = dbl(json_object_get(o, "loss"), NAN);
    j->eps_spent = dbl(json_object_get(o, "epsilon_spent"), NAN);
    j->sps = dbl(json_object_get(o, "steps_per_second"), NAN);
    j->hist_stride = (long)json_integer_value(json_object_get(o, "hist_stride"));
    json_t *h = json_object_get(o, "history"), *p;
    size_t i;
    j->nhist = 0;
    json_array_foreach(h, i, p)
    {
        if (j->nhist == HIST_CAP) break;
        j->hist[j->nhist++] =
            (hist_pt){(long)json_integer_value(json_array_get(p, 0)),
                      dbl(json_array_get(p, 1), NAN), dbl(json_array_get(p, 2), NAN)};
    }
    /* The jobs row names an owner only for claimed jobs; the document also
     * remembers who ran a job before the shared queue existed. */
    json_t *nd = json_object_get(o, "node");
    if (json_is_string(nd) && !j->node[0])
        snprintf(j->node, sizeof j->node, "%s", json_string_value(nd));
    json_t *w = json_object_get(o, "warnings");
    if (json_is_array(w)) {
        json_decref(j->warnings);
        j->warnings = json_incref(w);
    }
    /* Kept as stored, within the bound, each with a code and a sentence. */
    json_t *tw = json_object_get(o, "trainer_warnings"), *x;
    if (json_is_array(tw)) {
        json_decref(j->twarn);
        j->twarn = NULL;
    }
    json_array_foreach(tw, i, x)
    {
        if (!json_is_string(json_object_get(x, "code")) ||
            !json_is_string(json_object_get(x, "message")))
            continue;
        if (!j->twarn && !(j->twarn = json_array())) break;
        if (json_array_size(j->twarn) >= PG_JOBS_TWARN_MAX) break;
        json_t *c = json_deep_copy(x);
        json_object_set_new(c, "source", json_string("trainer"));
        json_array_append_new(j->twarn, c);
    }
    json_t *pr = json_object_get(o, "privacy");
    if (json_is_object(pr)) {
        json_decref(j->privacy);
        j->privacy = json_incref(pr);
    }
    json_decref(o);
    return 0;
}
