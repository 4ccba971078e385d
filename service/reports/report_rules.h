/* service/reports/report_rules.h - the privacy rule of quality reports and the
 * validation of a report request (docs/reports.md).
 *
 * A report compares synthetic rows drawn from a job's model with the rows of
 * an `against` dataset. Its privacy is decided by `against` alone:
 *   - public against: the report is a function of the model (post-processing
 *     of whatever guarantee the job has) and of public rows. It is
 *     "private": true, "audience": "tenant"; any scope that can read the job
 *     may create, read and cancel it; only admin may delete it.
 *   - local or central against (or a model this code does not know: fail
 *     closed): the report is a non-private function of the data owner's rows
 *     (a local dataset's rows are noised, but the report is not accounted
 *     against any budget and its ε would be the per-row one, not a figure a
 *     reader should trust as the report's). It is "private": false,
 *     "audience": "data owner", carries no ε, its figures carry the mark
 *     (render/report_png.h), and only the admin scope may touch it. A read-scope
 *     token asking to create one gets 403 (it can list datasets and their
 *     privacy model, so the refusal tells it nothing new); asking to read,
 *     list, cancel or delete one gets 404, exactly like a report that does
 *     not exist, so it never learns that such a report exists.
 * The job's own dataset only decides which ε the report may quote: the
 * job's, for a public `against` and a local or central job (the report is
 * post-processing of its model); none otherwise.
 *
 * Pure functions: no allocation, no I/O, no state.
 */
#ifndef PG_SVC_REPORT_RULES_H
#define PG_SVC_REPORT_RULES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "service/datasets/spec.h"
#include "service/store/db.h"

enum pg_report_action {
    PG_REPORT_CREATE = 1, /* POST /v1/jobs/{id}/reports */
    PG_REPORT_READ = 2,   /* GET one, its figures, or its entry in the list */
    PG_REPORT_CANCEL = 3, /* POST .../reports/{rid}/cancel */
    PG_REPORT_DELETE = 4  /* DELETE .../reports/{rid} */
};

/* The HTTP meaning of a decision: 0 allowed, 403 forbidden, 404 hidden (the
 * caller answers exactly as for a report that does not exist, and a list
 * leaves the report out). */
enum { PG_REPORT_ALLOW = 0, PG_REPORT_FORBIDDEN = 403, PG_REPORT_HIDDEN = 404 };

/* scope: enum pg_scope of the token; against_model: enum
 * pg_svc_privacy_model of the `against` dataset, as stored with the report
 * when it was created (a dataset deleted later changes nothing). Unknown
 * scopes, actions or models never widen access. */
int pg_report_decide(int scope, int action, int against_model);

typedef struct pg_report_marks {
    int is_private;       /* JSON "private": publishing it breaks no guarantee */
    const char *audience; /* "tenant" or "data owner" */
    int figure_mark;      /* figures carry PG_REPORT_MARK */
    int quote_epsilon;    /* the job's ε may be quoted (post-processing) */
    const char *note;     /* one sentence for JSON "privacy_note" */
} pg_report_marks;

void pg_report_marks_for(int job_model, int against_model, pg_report_marks *out);

/* The marks as JSON members added to `report` (an object): "private",
 * "audience", "privacy_note", and "epsilon" = job_epsilon only when
 * quote_epsilon and job_epsilon is finite and positive; any "epsilon"
 * already present is removed otherwise. PG_EINVAL when report is not an
 * object, PG_ENOMEM. */
int pg_report_marks_json(const pg_report_marks *m, double job_epsilon, json_t *report,
                         pg_error *err);

/* ---- the request body {against, n, seed, utility} ---- */

#define PG_REPORT_DEFAULT_N  10000
#define PG_REPORT_MAX_N      100000
#define PG_REPORT_MAX_CELLS  ((size_t)1 << 26) /* rows x d of either side: 256 MiB of floats */
#define PG_REPORT_MAX_SEED   ((UINT64_C(1) << 53) - 1) /* exact in every JSON client */
#define PG_REPORT_MAX_ERRORS 8
#define PG_REPORT_MSG_MAX    200

typedef struct pg_report_field_error {
    char field[PG_FIELD_MAX];
    char message[PG_REPORT_MSG_MAX];
} pg_report_field_error;

typedef struct pg_report_errors {
    int n; /* errors beyond PG_REPORT_MAX_ERRORS are dropped */
    pg_report_field_error e[PG_REPORT_MAX_ERRORS];
} pg_report_errors;

typedef struct pg_report_request {
    char against[PG_ID_MAX];
    size_t n; /* synthetic rows; PG_REPORT_DEFAULT_N (capped by the cell limit) if absent */
    int has_n;
    uint64_t seed; /* valid when has_seed; else the worker draws one and stores it */
    int has_seed;
    int utility; /* 1 (default): the utility figures when both sides have labels; 0 skips
                  * them (on 10 000 images they are about half of the report's time) */
} pg_report_request;

/* Checks the body's form: an object with only these members; against a
 * non-empty id string shorter than PG_ID_MAX; n an integer in [1,
 * PG_REPORT_MAX_N]; seed an integer in [0, PG_REPORT_MAX_SEED]; utility a
 * boolean. Every bad
 * field is listed in errs. Returns PG_OK or PG_EINVAL (errs->n >= 1). */
int pg_report_request_parse(const json_t *body, pg_report_request *out, pg_report_errors *errs);

/* Checks the request against the datasets it names: `against` (NULL: not
 * found in the caller's tenant) must have the job dataset's shape, the same
 * num_classes when both declare classes, at least 2 rows and at most
 * PG_REPORT_MAX_CELLS values; n x d must stay within PG_REPORT_MAX_CELLS.
 * Fills a missing n with the default (capped by the cell limit). Returns
 * PG_OK or PG_EINVAL with errs filled. */
int pg_report_request_check(pg_report_request *req, const pg_datasets_spec *job_ds,
                            const pg_datasets_spec *against, int64_t against_rows,
                            pg_report_errors *errs);

#endif
