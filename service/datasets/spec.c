#include "service/datasets/spec.h"

#include <jansson.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/calib.h"

#include "engine/core/fmt.h"

static int bad(char field[PG_FIELD_MAX], const char *f, pg_error *err, int code, const char *msg)
{
    snprintf(field, PG_FIELD_MAX, "%s", f);
    return pg_error_set(err, code, "%s", msg);
}

/* A noise scale within this relative margin below the computed minimum is
 * accepted: clients compute b = Δ/ε or bisect σ in floating point too, and a
 * 1e-10 relative shortfall moves ε by the same negligible relative amount. */
#define NOISE_REL_TOL 1e-10

int pg_datasets_spec_check(pg_datasets_spec *s, size_t max_dim, char field[PG_FIELD_MAX],
                           pg_error *err)
{
    field[0] = '\0';
    if (!s->name[0]) return bad(field, "name", err, PG_EINVAL, "name must not be empty");
    if (s->ndim != 1 && s->ndim != 3)
        return bad(field, "shape", err, PG_EINVAL, "shape must be [d] or [c,h,w]");
    size_t d = 1;
    for (int i = 0; i < s->ndim; i++) {
        if (s->shape[i] < 1 || (uint64_t)s->shape[i] > max_dim ||
            pg_size_mul(d, (size_t)s->shape[i], &d) || d > max_dim) {
            snprintf(field, PG_FIELD_MAX, "shape");
            return pg_error_set(err, PG_EINVAL,
                                "shape entries must be positive with a product of at most %zu",
                                max_dim);
        }
    }
    s->d = d;
    if (!isfinite(s->lo) || !isfinite(s->hi) || !(s->lo < s->hi))
        return bad(field, "range", err, PG_EINVAL, "range must be [lo, hi] with finite lo < hi");
    /* Rows are float32 and trainers square distances within the range: a
     * range like [-1e308, 1e308] (width inf) broke every job much later. */
    if (!(fabs(s->lo) <= PG_DATASETS_RANGE_MAX && fabs(s->hi) <= PG_DATASETS_RANGE_MAX) ||
        !isfinite(s->hi - s->lo))
        return bad(field, "range", err, PG_EINVAL,
                   "range must lie within [-1e15, 1e15] (rows are float32): rescale the data");
    if (s->num_classes < 0 || s->num_classes == 1 || s->num_classes > 1000000)
        return bad(field, "num_classes", err, PG_EINVAL, "num_classes must be in [2, 1000000]");
    switch (s->model) {
    case PG_PRIV_PUBLIC:
        return PG_OK;
    case PG_PRIV_CENTRAL:
        if (!(s->budget_epsilon > 0.0) || !(s->budget_epsilon <= PG_CALIB_MAX_EPSILON))
            return bad(field, "privacy.budget.epsilon", err, PG_EINVAL,
                       "budget epsilon must be in (0, 100]");
        if (!(s->budget_delta > 0.0) || !(s->budget_delta < 1.0))
            return bad(field, "privacy.budget.delta", err, PG_EINVAL,
                       "budget delta must be in (0, 1)");
        return PG_OK;
    case PG_PRIV_LOCAL: {
        /* Checked column by column against the schema (service/typed.h). */
        if (s->per_column) return PG_OK;
        pg_error e = {0};
        if (pg_svc_min_noise_scale(s->mechanism, s->epsilon, s->delta, s->sensitivity,
                                   &s->min_noise_scale, &e)) {
            const char *f = strstr(e.msg, "epsilon")       ? "privacy.epsilon"
                            : strstr(e.msg, "delta")       ? "privacy.delta"
                            : strstr(e.msg, "sensitivity") ? "privacy.sensitivity"
                                                           : "privacy.mechanism";
            return bad(field, f, err, PG_EINVAL, e.msg);
        }
        if (!isfinite(s->noise_scale) ||
            s->noise_scale < s->min_noise_scale * (1.0 - NOISE_REL_TOL)) {
            snprintf(field, PG_FIELD_MAX, "privacy.noise_scale");
            char f1[PG_FMT_F64_MAX], f2[PG_FMT_F64_MAX];
            return pg_error_set(err, PG_EPRIVACY,
                                "noise_scale %s is below the minimum %s for this epsilon, "
                                "delta and sensitivity",
                                pg_fmt_f64(s->noise_scale, f1), pg_fmt_f64(s->min_noise_scale, f2));
        }
        /* A declaration made for rows of another width describes other data
         * (and, for Laplace, a noise scale computed for that width). */
        if (s->cols && (uint64_t)s->cols != (uint64_t)s->d) {
            snprintf(field, PG_FIELD_MAX, "privacy.cols");
            return pg_error_set(err, PG_EINVAL,
                                "the declaration is for rows of %lld values but shape holds %zu",
                                (long long)s->cols, s->d);
        }
        if (s->clip_norm) {
            int want = s->mechanism == PG_MECH_LAPLACE ? 1 : 2;
            if (s->clip_norm != want)
                return bad(field, "privacy.clip.norm", err, PG_EINVAL,
                           want == 1 ? "the laplace mechanism clips in the l1 norm"
                                     : "the gaussian mechanism clips in the l2 norm");
            /* Two rows clipped to radius R are up to 2R apart. */
            if (!isfinite(s->clip_radius) || !(s->clip_radius > 0.0) ||
                2.0 * s->clip_radius > s->sensitivity * (1.0 + NOISE_REL_TOL)) {
                snprintf(field, PG_FIELD_MAX, "privacy.clip.radius");
                return pg_error_set(err, PG_EINVAL,
                                    "clip radius must be > 0 and at most sensitivity/2 (%.15g)",
                                    s->sensitivity / 2.0);
            }
        }
        return PG_OK;
    }
    default:
        return bad(field, "privacy.model", err, PG_EINVAL,
                   "privacy.model must be local, central or public");
    }
}

static const char *model_name(int m)
{
    return m == PG_PRIV_LOCAL ? "local" : m == PG_PRIV_CENTRAL ? "central" : "public";
}

int pg_datasets_spec_to_json(const pg_datasets_spec *s, char **out, pg_error *err)
{
    /* Every field or nothing: metadata missing one (an allocation that
     * failed) would be stored, and the dataset read back as corrupt for
     * ever. So each set is checked and any failure is out of memory. */
    json_t *shape = json_array();
    int bad = !shape;
    for (int i = 0; !bad && i < s->ndim; i++)
        bad = json_array_append_new(shape, json_integer(s->shape[i]));
    json_t *priv = json_pack("{s:s}", "model", model_name(s->model));
    bad |= !priv;
    if (bad) {
    } else if (s->model == PG_PRIV_LOCAL && s->per_column) {
        /* The declaration's columns are added by service/typed.c. */
        bad |= json_object_set_new(priv, "mechanism", json_string("per_column"));
        bad |= json_object_set_new(priv, "epsilon", json_real(s->epsilon));
        bad |=
            json_object_set_new(priv, "delta", s->delta > 0.0 ? json_real(s->delta) : json_null());
    } else if (s->model == PG_PRIV_LOCAL) {
        bad |= json_object_set_new(
            priv, "mechanism",
            json_string(s->mechanism == PG_MECH_LAPLACE ? "laplace" : "gaussian"));
        bad |= json_object_set_new(priv, "epsilon", json_real(s->epsilon));
        bad |= json_object_set_new(priv, "delta", json_real(s->delta));
        bad |= json_object_set_new(priv, "sensitivity", json_real(s->sensitivity));
        bad |= json_object_set_new(priv, "noise_scale", json_real(s->noise_scale));
        bad |= json_object_set_new(priv, "min_noise_scale", json_real(s->min_noise_scale));
        if (s->cols) bad |= json_object_set_new(priv, "cols", json_integer(s->cols));
        if (s->clip_norm)
            bad |=
                json_object_set_new(priv, "clip",
                                    json_pack("{s:s,s:f}", "norm", s->clip_norm == 1 ? "l1" : "l2",
                                              "radius", s->clip_radius));
    } else if (s->model == PG_PRIV_CENTRAL) {
        bad |= json_object_set_new(
            priv, "budget",
            json_pack("{s:f,s:f}", "epsilon", s->budget_epsilon, "delta", s->budget_delta));
    }
    json_t *o = NULL;
    if (!bad) { /* "o" steals shape and priv, also when it fails */
        o = json_pack("{s:s,s:o,s:[f,f],s:o}", "name", s->name, "shape", shape, "range", s->lo,
                      s->hi, "privacy", priv);
        shape = priv = NULL;
    }
    bad |= !o;
    if (!bad && s->num_classes)
        bad |= json_object_set_new(o, "num_classes", json_integer(s->num_classes));
    int rc = bad ? pg_error_set(err, PG_ENOMEM, "out of memory encoding a dataset")
                 : pg_datasets_meta_dump(o, out, err);
    json_decref(o);
    json_decref(shape);
    json_decref(priv);
    return rc;
}

int pg_datasets_meta_dump(const json_t *o, char **out, pg_error *err)
{
    /* jansson's dump does not check every write it makes (an object's keys):
     * when memory runs out in the middle of one, it may return a text with
     * a key cut short, which would be stored as the dataset for good. So the
     * text is read back and compared before anyone stores it. */
    char *txt = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_t *back = txt ? json_loads(txt, 0, NULL) : NULL;
    int same = back && json_equal((json_t *)o, back);
    json_decref(back);
    if (!same) {
        free(txt);
        return pg_error_set(err, PG_ENOMEM, "out of memory encoding a dataset");
    }
    *out = txt;
    return PG_OK;
}

/* Is p well-formed JSON text (RFC 8259 syntax; UTF-8 is not checked)?
 * Allocates nothing, so it can judge a text jansson failed to parse while
 * memory ran out. */
static const char *jv_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

static const char *jv_string(const char *p)
{
    if (*p++ != '"') return NULL;
    for (; *p != '"'; p++) {
        if (!*p || (unsigned char)*p < 0x20) return NULL;
        if (*p != '\\') continue;
        p++;
        if (*p == 'u') {
            for (int i = 1; i <= 4; i++)
                if (!isxdigit((unsigned char)p[i])) return NULL;
            p += 4;
        } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
            return NULL;
        }
    }
    return p + 1;
}

static const char *jv_number(const char *p)
{
    if (*p == '-') p++;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (isdigit((unsigned char)*p)) p++;
    else
        return NULL;
    if (*p == '.') {
        if (!isdigit((unsigned char)*++p)) return NULL;
        while (isdigit((unsigned char)*p)) p++;
    }
    if (*p == 'e' || *p == 'E') {
        if (*++p == '+' || *p == '-') p++;
        if (!isdigit((unsigned char)*p)) return NULL;
        while (isdigit((unsigned char)*p)) p++;
    }
    return p;
}

static const char *jv_value(const char *p, int depth)
{
    p = jv_ws(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        if (depth > 2048) return NULL; /* jansson's own nesting limit */
        p = jv_ws(p + 1);
        if (*p == close) return p + 1;
        for (;;) {
            if (close == '}') {
                if (!(p = jv_string(jv_ws(p)))) return NULL;
                p = jv_ws(p);
                if (*p++ != ':') return NULL;
            }
            if (!(p = jv_value(p, depth + 1))) return NULL;
            p = jv_ws(p);
            if (*p == close) return p + 1;
            if (*p++ != ',') return NULL;
        }
    }
    if (*p == '"') return jv_string(p);
    static const char *const LIT[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++)
        if (!strncmp(p, LIT[i], strlen(LIT[i]))) return p + strlen(LIT[i]);
    return jv_number(p);
}

int pg_datasets_meta_load(const char *meta, json_t **out, pg_error *err)
{
    json_error_t je;
    *out = json_loads(meta, 0, &je);
    if (*out) return PG_OK;
    /* jansson reports some allocation failures as out of memory, others as
     * whatever syntax error the lexer was left with, and some not at all:
     * only the text itself tells a corrupt row from a parse that ran out of
     * memory. */
    const char *end = meta ? jv_value(meta, 1) : NULL;
    if (json_error_code(&je) == json_error_out_of_memory || (end && !*jv_ws(end)))
        return pg_error_set(err, PG_ENOMEM, "out of memory reading a dataset's metadata");
    return pg_error_set(err, PG_EFORMAT, "stored dataset metadata is corrupt");
}

/* A failed json_unpack_ex on stored metadata: its key checks allocate, so
 * running out of memory is not the row's fault. */
static int unpack_failed(const json_error_t *je, const char *corrupt, pg_error *err)
{
    if (json_error_code(je) == json_error_out_of_memory)
        return pg_error_set(err, PG_ENOMEM, "out of memory reading a dataset's metadata");
    return pg_error_set(err, PG_EFORMAT, "%s", corrupt);
}

int pg_datasets_spec_from_json(const char *json, pg_datasets_spec *s, pg_error *err)
{
    memset(s, 0, sizeof *s);
    json_error_t je;
    json_t *o;
    int rc = pg_datasets_meta_load(json, &o, err);
    if (rc) return rc;
    json_t *shape, *priv;
    const char *name, *model;
    if (json_unpack_ex(o, &je, 0, "{s:s,s:o,s:[FF],s:o}", "name", &name, "shape", &shape, "range",
                       &s->lo, &s->hi, "privacy", &priv) ||
        json_unpack_ex(priv, &je, 0, "{s:s}", "model", &model)) {
        json_decref(o);
        return unpack_failed(&je, "stored dataset metadata is corrupt", err);
    }
    if (!json_is_array(shape) || json_array_size(shape) > 3) {
        json_decref(o);
        return pg_error_set(err, PG_EFORMAT, "stored dataset metadata is corrupt");
    }
    snprintf(s->name, sizeof s->name, "%s", name);
    s->ndim = (int)json_array_size(shape);
    s->d = 1;
    for (int i = 0; i < s->ndim; i++) {
        s->shape[i] = json_integer_value(json_array_get(shape, (size_t)i));
        s->d *= (size_t)(s->shape[i] > 0 ? s->shape[i] : 0);
    }
    json_t *nc = json_object_get(o, "num_classes");
    s->num_classes = nc ? json_integer_value(nc) : 0;
    s->typed = json_is_array(json_object_get(o, "columns"));
    const char *pmech = json_string_value(json_object_get(priv, "mechanism"));
    if (!strcmp(model, "local") && pmech && !strcmp(pmech, "per_column")) {
        s->model = PG_PRIV_LOCAL;
        s->per_column = 1;
        s->epsilon = json_number_value(json_object_get(priv, "epsilon"));
        s->delta = json_number_value(json_object_get(priv, "delta")); /* 0 for null */
        if (!s->typed || !(s->epsilon > 0.0)) {
            json_decref(o);
            return pg_error_set(err, PG_EFORMAT, "stored dataset privacy metadata is corrupt");
        }
    } else if (!strcmp(model, "local")) {
        const char *mech;
        s->model = PG_PRIV_LOCAL;
        if (json_unpack_ex(priv, &je, 0, "{s:s,s:F,s:F,s:F,s:F,s:F}", "mechanism", &mech, "epsilon",
                           &s->epsilon, "delta", &s->delta, "sensitivity", &s->sensitivity,
                           "noise_scale", &s->noise_scale, "min_noise_scale",
                           &s->min_noise_scale)) {
            json_decref(o);
            return unpack_failed(&je, "stored dataset privacy metadata is corrupt", err);
        }
        s->mechanism = !strcmp(mech, "laplace") ? PG_MECH_LAPLACE : PG_MECH_GAUSSIAN;
        json_t *cols = json_object_get(priv, "cols"), *clip = json_object_get(priv, "clip");
        s->cols = json_is_integer(cols) ? json_integer_value(cols) : 0;
        const char *norm = json_string_value(json_object_get(clip, "norm"));
        if (norm) {
            s->clip_norm = !strcmp(norm, "l1") ? 1 : 2;
            s->clip_radius = json_number_value(json_object_get(clip, "radius"));
        }
    } else if (!strcmp(model, "central")) {
        s->model = PG_PRIV_CENTRAL;
        if (json_unpack_ex(priv, &je, 0, "{s:{s:F,s:F}}", "budget", "epsilon", &s->budget_epsilon,
                           "delta", &s->budget_delta)) {
            json_decref(o);
            return unpack_failed(&je, "stored dataset budget is corrupt", err);
        }
    } else {
        s->model = PG_PRIV_PUBLIC;
    }
    json_decref(o);
    if (s->d == 0) return pg_error_set(err, PG_EFORMAT, "stored dataset shape is corrupt");
    return PG_OK;
}

int pg_datasets_check_values(const pg_datasets_spec *s, const float *x, size_t count,
                             uint64_t first, uint64_t *bad_row, pg_error *err)
{
    int central = s->model == PG_PRIV_CENTRAL;
    float lo = (float)s->lo, hi = (float)s->hi;
    for (size_t i = 0; i < count; i++) {
        float v = x[i];
        /* One comparison chain per value: finite and (central) in range. */
        if (isfinite(v) && (!central || (v >= lo && v <= hi))) continue;
        uint64_t idx = first + i;
        *bad_row = idx / s->d;
        size_t col = (size_t)(idx % s->d);
        if (!isfinite(v))
            return pg_error_set(err, PG_EINVAL, "row %llu, column %zu: value is %s",
                                (unsigned long long)*bad_row + 1, col + 1,
                                isnan(v) ? "NaN" : "infinite");
        return pg_error_set(err, PG_EINVAL,
                            "row %llu, column %zu: value %g is outside the range [%g, %g]",
                            (unsigned long long)*bad_row + 1, col + 1, (double)v, s->lo, s->hi);
    }
    return PG_OK;
}

int pg_datasets_check_labels(const pg_datasets_spec *s, const int64_t *labels, size_t n,
                             uint64_t *bad_row, pg_error *err)
{
    if (n && !s->num_classes) {
        *bad_row = 0;
        return pg_error_set(err, PG_EINVAL, "labels given but the dataset declares no num_classes");
    }
    for (size_t i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= s->num_classes) {
            *bad_row = i;
            return pg_error_set(err, PG_EINVAL, "row %zu: label %lld is outside [0, %lld)", i + 1,
                                (long long)labels[i], (long long)s->num_classes);
        }
    return PG_OK;
}

/* Equal up to a relative 1e-12: both sides went through JSON with 17
 * significant digits, so this only absorbs a client's last-bit rounding. */
static int same(double a, double b)
{
    return a == b || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

static void diff(pg_datasets_diff *d, int *n, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void diff(pg_datasets_diff *d, int *n, const char *field, const char *fmt, ...)
{
    if (*n >= PG_DATASETS_DIFF_MAX) return;
    snprintf(d[*n].field, sizeof d[*n].field, "declaration.%s", field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d[*n].message, sizeof d[*n].message, fmt, ap);
    va_end(ap);
    (*n)++;
}

static void num_diff(pg_datasets_diff *d, int *n, const char *field, double got, double want)
{
    if (!same(got, want)) diff(d, n, field, "declared %.15g, the dataset's is %.15g", got, want);
}

static int decl_num(json_t *o, const char *key, int required, double *out, char field[PG_FIELD_MAX],
                    pg_error *err)
{
    json_t *v = json_object_get(o, key);
    if ((!v || json_is_null(v)) && !required) return PG_OK;
    if (!json_is_number(v) || !isfinite(json_number_value(v))) {
        snprintf(field, PG_FIELD_MAX, "declaration.%s", key);
        return pg_error_set(err, PG_EINVAL, "declaration.%s must be a finite number", key);
    }
    *out = json_number_value(v);
    return PG_OK;
}

int pg_datasets_decl_match(const pg_datasets_spec *s, const char *decl,
                           pg_datasets_diff diffs[PG_DATASETS_DIFF_MAX], int *ndiff, uint64_t *rows,
                           char field[PG_FIELD_MAX], pg_error *err)
{
    *ndiff = 0;
    *rows = 0;
    field[0] = '\0';
    json_t *o = json_loads(decl, JSON_REJECT_DUPLICATES, NULL);
    int rc = PG_OK;
    if (!json_is_object(o)) {
        rc = bad(field, "declaration", err, PG_EINVAL, "the declaration must be a JSON object");
        goto out;
    }
    const char *mech = json_string_value(json_object_get(o, "mechanism"));
    if (!mech || (strcmp(mech, "laplace") && strcmp(mech, "gaussian"))) {
        rc = bad(field, "declaration.mechanism", err, PG_EINVAL,
                 "declaration.mechanism must be laplace or gaussian");
        goto out;
    }
    int laplace = !strcmp(mech, "laplace");
    double eps = 0, delta = 0, sens = 0, scale = 0, radius = 0;
    if ((rc = decl_num(o, "epsilon", 1, &eps, field, err)) ||
        (rc = decl_num(o, "delta", !laplace, &delta, field, err)) ||
        (rc = decl_num(o, "sensitivity", 1, &sens, field, err)) ||
        (rc = decl_num(o, "noise_scale", 1, &scale, field, err)))
        goto out;
    json_t *cols = json_object_get(o, "cols"), *nrows = json_object_get(o, "rows");
    json_t *clip = json_object_get(o, "clip");
    if ((cols && (!json_is_integer(cols) || json_integer_value(cols) < 1)) ||
        (nrows && (!json_is_integer(nrows) || json_integer_value(nrows) < 1))) {
        rc = bad(field,
                 cols && !(json_is_integer(cols) && json_integer_value(cols) >= 1)
                     ? "declaration.cols"
                     : "declaration.rows",
                 err, PG_EINVAL, "declaration.cols and .rows must be positive integers");
        goto out;
    }
    const char *norm = NULL;
    if (clip) {
        norm = json_string_value(json_object_get(clip, "norm"));
        if (!norm || (strcmp(norm, "l1") && strcmp(norm, "l2"))) {
            rc = bad(field, "declaration.clip.norm", err, PG_EINVAL,
                     "declaration.clip must be an object with \"norm\" (\"l1\" or \"l2\") and "
                     "\"radius\" (a positive number)");
            goto out;
        }
        if ((rc = decl_num(clip, "radius", 1, &radius, field, err))) {
            snprintf(field, PG_FIELD_MAX, "declaration.clip.radius");
            goto out;
        }
    }
    *rows = nrows ? (uint64_t)json_integer_value(nrows) : 0;
    if (s->model != PG_PRIV_LOCAL) {
        diff(diffs, ndiff, "model",
             "declared local (privatized rows), the dataset's privacy model is %s",
             model_name(s->model));
        goto out;
    }
    const char *dmech = s->mechanism == PG_MECH_LAPLACE ? "laplace" : "gaussian";
    if (strcmp(mech, dmech))
        diff(diffs, ndiff, "mechanism", "declared %s, the dataset's is %s", mech, dmech);
    num_diff(diffs, ndiff, "epsilon", eps, s->epsilon);
    if (!laplace || s->mechanism != PG_MECH_LAPLACE)
        num_diff(diffs, ndiff, "delta", delta, s->delta);
    num_diff(diffs, ndiff, "sensitivity", sens, s->sensitivity);
    num_diff(diffs, ndiff, "noise_scale", scale, s->noise_scale);
    if (norm && s->clip_norm) {
        const char *dnorm = s->clip_norm == 1 ? "l1" : "l2";
        if (strcmp(norm, dnorm) || !same(radius, s->clip_radius))
            diff(diffs, ndiff, "clip", "declared %s:%.15g, the dataset's is %s:%.15g", norm, radius,
                 dnorm, s->clip_radius);
    }
    if (cols && (uint64_t)json_integer_value(cols) != (uint64_t)s->d)
        diff(diffs, ndiff, "cols", "declared rows of %lld values, the dataset's rows hold %zu",
             (long long)json_integer_value(cols), s->d);
out:
    json_decref(o);
    return rc;
}
