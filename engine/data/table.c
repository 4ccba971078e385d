#include "engine/core/fmt.h"
#include "engine/data/table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[] = {NULL, "continuous", "integer", "categorical", "boolean"};
static const char *const kind_names[] = {NULL, "numeric", "numeric", "one_hot", "binary"};

const char *pg_table_type_name(int type)
{
    return type >= PG_COL_CONTINUOUS && type <= PG_COL_BOOLEAN ? type_names[type] : "unknown";
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

void pg_table_free(pg_table *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->ncols; i++) {
        pg_table_col *c = &t->cols[i];
        for (size_t k = 0; k < c->ncat; k++) free(c->cats[k]);
        free(c->cats);
        free(c->name);
    }
    free(t->cols);
    free(t);
}

size_t pg_table_find(const pg_table *t, const char *name, size_t len)
{
    for (size_t i = 0; i < t->ncols; i++)
        if (strlen(t->cols[i].name) == len && memcmp(t->cols[i].name, name, len) == 0) return i;
    return PG_TABLE_NONE;
}

size_t pg_table_num_classes(const pg_table *t)
{
    if (t->label == PG_TABLE_NONE) return 0;
    const pg_table_col *c = &t->cols[t->label];
    return c->type == PG_COL_BOOLEAN ? 2 : c->ncat;
}

/* Names are printed into messages and CSV headers: no control characters. */
static const char *name_problem(const char *s, size_t n)
{
    if (n == 0) return "is empty";
    if (n > PG_TABLE_NAME_MAX) return "is longer than 128 bytes";
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return "contains a control character";
    return NULL;
}

static int number_field(const json_t *col, const char *key, const char *cname, double *out,
                        pg_error *err)
{
    const json_t *v = json_object_get(col, key);
    if (!v) return pg_error_set(err, PG_EINVAL, "column '%s': '%s' is required", cname, key);
    if (!json_is_number(v))
        return pg_error_set(err, PG_EINVAL, "column '%s': '%s' must be a number", cname, key);
    *out = json_number_value(v);
    if (!isfinite(*out))
        return pg_error_set(err, PG_EINVAL, "column '%s': '%s' must be finite", cname, key);
    return PG_OK;
}

static int parse_categories(const json_t *arr, pg_table_col *c, pg_error *err)
{
    if (!json_is_array(arr))
        return pg_error_set(err, PG_EINVAL, "column '%s': 'categories' must be an array of strings",
                            c->name);
    size_t k = json_array_size(arr);
    if (k < 2 || k > PG_TABLE_MAX_CATS)
        return pg_error_set(err, PG_EINVAL, "column '%s': needs 2 to %d categories, got %zu",
                            c->name, PG_TABLE_MAX_CATS, k);
    c->cats = calloc(k, sizeof *c->cats);
    if (!c->cats) return pg_error_set(err, PG_ENOMEM, "out of memory");
    for (size_t i = 0; i < k; i++) {
        const json_t *s = json_array_get(arr, i);
        if (!json_is_string(s))
            return pg_error_set(err, PG_EINVAL, "column '%s': category %zu is not a string",
                                c->name, i + 1);
        const char *txt = json_string_value(s);
        size_t n = json_string_length(s);
        /* Any text (even empty or multi-line: CSV quotes it) but NUL. */
        if (memchr(txt, '\0', n) || n > PG_TABLE_NAME_MAX)
            return pg_error_set(err, PG_EINVAL,
                                "column '%s': category %zu must be at most %d bytes, without NUL",
                                c->name, i + 1, PG_TABLE_NAME_MAX);
        for (size_t j = 0; j < c->ncat; j++)
            if (strcmp(c->cats[j], txt) == 0)
                return pg_error_set(err, PG_EINVAL, "column '%s': category '%s' appears twice",
                                    c->name, txt);
        if (!(c->cats[i] = dup_n(txt, n))) return pg_error_set(err, PG_ENOMEM, "out of memory");
        c->ncat++;
    }
    return PG_OK;
}

static int parse_column(const json_t *col, size_t idx, pg_table_col *c, pg_error *err)
{
    if (!json_is_object(col))
        return pg_error_set(err, PG_EINVAL, "column %zu must be an object", idx + 1);
    const json_t *nm = json_object_get(col, "name");
    if (!json_is_string(nm))
        return pg_error_set(err, PG_EINVAL, "column %zu: 'name' must be a string", idx + 1);
    const char *name = json_string_value(nm);
    size_t nlen = json_string_length(nm);
    const char *why = memchr(name, '\0', nlen) ? "contains a NUL" : name_problem(name, nlen);
    if (why) return pg_error_set(err, PG_EINVAL, "column %zu: name %s", idx + 1, why);
    if (!(c->name = dup_n(name, nlen))) return pg_error_set(err, PG_ENOMEM, "out of memory");

    const json_t *ty = json_object_get(col, "type");
    const char *tname = json_is_string(ty) ? json_string_value(ty) : "";
    for (int k = PG_COL_CONTINUOUS; k <= PG_COL_BOOLEAN; k++)
        if (strcmp(tname, type_names[k]) == 0) c->type = k;
    if (!c->type)
        return pg_error_set(err, PG_EINVAL,
                            "column '%s': 'type' must be continuous, integer, categorical or "
                            "boolean",
                            c->name);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)col, key, v)
    {
        int numeric = c->type == PG_COL_CONTINUOUS || c->type == PG_COL_INTEGER;
        if (!strcmp(key, "name") || !strcmp(key, "type") || !strcmp(key, "nullable") ||
            !strcmp(key, "epsilon") ||
            (numeric && (!strcmp(key, "min") || !strcmp(key, "max") || !strcmp(key, "scale"))) ||
            (c->type == PG_COL_CATEGORICAL && !strcmp(key, "categories")))
            continue;
        return pg_error_set(err, PG_EINVAL, "column '%s': unknown field '%.40s' for a %s column",
                            c->name, key, type_names[c->type]);
    }
    const json_t *nl = json_object_get(col, "nullable");
    if (nl && !json_is_boolean(nl))
        return pg_error_set(err, PG_EINVAL, "column '%s': 'nullable' must be true or false",
                            c->name);
    c->nullable = nl && json_is_true(nl);
    const json_t *ep = json_object_get(col, "epsilon");
    if (ep) {
        c->epsilon = json_is_number(ep) ? json_number_value(ep) : NAN;
        if (!(c->epsilon > 0.0) || !isfinite(c->epsilon))
            return pg_error_set(err, PG_EINVAL,
                                "column '%s': 'epsilon' must be a finite number > 0", c->name);
    }
    const json_t *sc = json_object_get(col, "scale");
    if (sc) {
        const char *sv = json_string_value(sc);
        if (!sv || (strcmp(sv, "linear") && strcmp(sv, "log")))
            return pg_error_set(err, PG_EINVAL,
                                "column '%s': 'scale' must be \"linear\" or \"log\"", c->name);
        c->log_scale = !strcmp(sv, "log");
    }
    int rc;
    switch (c->type) {
    case PG_COL_CONTINUOUS:
    case PG_COL_INTEGER:
        if ((rc = number_field(col, "min", c->name, &c->min, err)) ||
            (rc = number_field(col, "max", c->name, &c->max, err)))
            return rc;
        if (!(c->min < c->max))
            return pg_error_set(err, PG_EINVAL, "column '%s': 'min' must be below 'max'", c->name);
        if (!isfinite(c->max - c->min))
            return pg_error_set(err, PG_EINVAL, "column '%s': 'max' - 'min' overflows a double",
                                c->name);
        if (c->type == PG_COL_INTEGER) {
            if (c->min != floor(c->min) || c->max != floor(c->max))
                return pg_error_set(err, PG_EINVAL,
                                    "column '%s': integer bounds must be whole numbers", c->name);
            if (c->max - c->min > PG_TABLE_INT_SPAN)
                return pg_error_set(err, PG_EINVAL,
                                    "column '%s': an integer column spans at most 2^22 values; "
                                    "declare it continuous",
                                    c->name);
        }
        c->width = 1;
        break;
    case PG_COL_CATEGORICAL:
        if ((rc = parse_categories(json_object_get(col, "categories"), c, err))) return rc;
        c->width = c->ncat;
        break;
    default:
        c->width = 1;
    }
    c->width += (size_t)c->nullable;
    return PG_OK;
}

/* Checks the "width"/"blocks" of a serialized map against the layout. */
static int check_layout(const json_t *schema, const pg_table *t, pg_error *err)
{
    const json_t *w = json_object_get(schema, "width");
    if (w && (!json_is_integer(w) || (uint64_t)json_integer_value(w) != t->width))
        return pg_error_set(err, PG_EINVAL, "map 'width' does not match the columns (%zu)",
                            t->width);
    const json_t *blocks = json_object_get(schema, "blocks");
    if (!blocks) return PG_OK;
    size_t expect = t->ncols - (t->label != PG_TABLE_NONE);
    if (!json_is_array(blocks) || json_array_size(blocks) != expect)
        return pg_error_set(err, PG_EINVAL, "map 'blocks' must list the %zu encoded columns",
                            expect);
    size_t b = 0;
    for (size_t i = 0; i < t->ncols; i++) {
        const pg_table_col *c = &t->cols[i];
        if (i == t->label) continue;
        const json_t *o = json_array_get(blocks, b++);
        const json_t *col = json_object_get(o, "column"), *off = json_object_get(o, "offset"),
                     *wd = json_object_get(o, "width"), *kind = json_object_get(o, "kind"),
                     *mu = json_object_get(o, "missing_unit");
        int ok = json_is_string(col) && strcmp(json_string_value(col), c->name) == 0 &&
                 json_is_integer(off) && (uint64_t)json_integer_value(off) == c->offset &&
                 json_is_integer(wd) && (uint64_t)json_integer_value(wd) == c->width &&
                 json_is_string(kind) && strcmp(json_string_value(kind), kind_names[c->type]) == 0;
        if (ok && c->nullable)
            ok =
                json_is_integer(mu) && (uint64_t)json_integer_value(mu) == c->offset + c->width - 1;
        else if (ok)
            ok = mu == NULL || json_is_null(mu);
        if (!ok)
            return pg_error_set(err, PG_EINVAL,
                                "column '%s': map block does not match the column's encoding",
                                c->name);
    }
    return PG_OK;
}

static int parse_table(const json_t *schema, pg_table *t, pg_error *err)
{
    if (!json_is_object(schema)) return pg_error_set(err, PG_EINVAL, "schema must be an object");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)schema, key, v)
    {
        if (strcmp(key, "columns") && strcmp(key, "label") && strcmp(key, "range") &&
            strcmp(key, "version") && strcmp(key, "width") && strcmp(key, "blocks"))
            return pg_error_set(err, PG_EINVAL, "schema: unknown field '%.40s'", key);
    }
    const json_t *ver = json_object_get(schema, "version");
    if (ver && (!json_is_integer(ver) || json_integer_value(ver) != PG_TABLE_MAP_VERSION))
        return pg_error_set(err, PG_ENOTSUP, "schema: map version must be %d",
                            PG_TABLE_MAP_VERSION);
    t->lo = -1.0, t->hi = 1.0;
    const json_t *range = json_object_get(schema, "range");
    if (range) {
        const json_t *a = json_array_get(range, 0), *b = json_array_get(range, 1);
        if (!json_is_array(range) || json_array_size(range) != 2 || !json_is_number(a) ||
            !json_is_number(b))
            return pg_error_set(err, PG_EINVAL, "schema: 'range' must be [lo, hi]");
        t->lo = json_number_value(a), t->hi = json_number_value(b);
        if (!(t->lo <= 0.0 && t->hi >= 1.0) || !isfinite(t->lo) || !isfinite(t->hi))
            return pg_error_set(err, PG_EINVAL,
                                "schema: 'range' must satisfy lo <= 0 and hi >= 1 (one-hot and "
                                "indicator units are 0/1), finite");
    }
    const json_t *cols = json_object_get(schema, "columns");
    if (!json_is_array(cols) || json_array_size(cols) == 0)
        return pg_error_set(err, PG_EINVAL, "schema: 'columns' must be a non-empty array");
    size_t n = json_array_size(cols);
    if (n > PG_TABLE_MAX_COLS)
        return pg_error_set(err, PG_EINVAL, "schema: at most %d columns, got %zu",
                            PG_TABLE_MAX_COLS, n);
    t->cols = calloc(n, sizeof *t->cols);
    if (!t->cols) return pg_error_set(err, PG_ENOMEM, "out of memory");
    t->label = PG_TABLE_NONE;
    for (size_t i = 0; i < n; i++) {
        t->ncols = i + 1; /* the partial column is freed with the table */
        int rc = parse_column(json_array_get(cols, i), i, &t->cols[i], err);
        if (rc) return rc;
        for (size_t j = 0; j < i; j++)
            if (strcmp(t->cols[j].name, t->cols[i].name) == 0)
                return pg_error_set(err, PG_EINVAL, "column '%s' is declared twice",
                                    t->cols[i].name);
    }
    const json_t *lab = json_object_get(schema, "label");
    if (lab && !json_is_null(lab)) {
        if (!json_is_string(lab))
            return pg_error_set(err, PG_EINVAL, "schema: 'label' must name a column");
        t->label = pg_table_find(t, json_string_value(lab), json_string_length(lab));
        if (t->label == PG_TABLE_NONE)
            return pg_error_set(err, PG_EINVAL, "schema: label column '%.64s' is not declared",
                                json_string_value(lab));
        pg_table_col *c = &t->cols[t->label];
        if ((c->type != PG_COL_CATEGORICAL && c->type != PG_COL_BOOLEAN) || c->nullable)
            return pg_error_set(err, PG_EINVAL,
                                "column '%s': a label must be categorical or boolean and not "
                                "nullable",
                                c->name);
        c->width = 0;
    }
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        t->cols[i].offset = off;
        off += t->cols[i].width;
        if (off > PG_TABLE_MAX_WIDTH)
            return pg_error_set(err, PG_EINVAL, "schema: encoded width exceeds %zu units",
                                PG_TABLE_MAX_WIDTH);
    }
    if (off == 0) return pg_error_set(err, PG_EINVAL, "schema: needs a column besides the label");
    t->width = off;
    return check_layout(schema, t, err);
}

int pg_table_from_json(const json_t *schema, pg_table **out, pg_error *err)
{
    *out = NULL;
    pg_table *t = calloc(1, sizeof *t);
    if (!t) return pg_error_set(err, PG_ENOMEM, "out of memory");
    int rc = parse_table(schema, t, err);
    if (rc) {
        pg_table_free(t);
        return rc;
    }
    *out = t;
    return PG_OK;
}

static int set(json_t *o, const char *k, json_t *v)
{
    return v ? json_object_set_new(o, k, v) : -1;
}

json_t *pg_table_to_json(const pg_table *t)
{
    json_t *o = json_object(), *cols = json_array(), *blocks = json_array();
    int bad = !o || !cols || !blocks;
    bad |= set(o, "version", json_integer(PG_TABLE_MAP_VERSION));
    json_t *range = json_pack("[ff]", t->lo, t->hi);
    bad |= set(o, "range", range);
    for (size_t i = 0; !bad && i < t->ncols; i++) {
        const pg_table_col *c = &t->cols[i];
        json_t *j = json_object();
        bad |= json_array_append_new(cols, j);
        bad |= set(j, "name", json_string(c->name));
        bad |= set(j, "type", json_string(type_names[c->type]));
        if (c->type == PG_COL_CONTINUOUS || c->type == PG_COL_INTEGER) {
            bad |= set(j, "min",
                       c->type == PG_COL_INTEGER ? json_integer((json_int_t)c->min)
                                                 : json_real(c->min));
            bad |= set(j, "max",
                       c->type == PG_COL_INTEGER ? json_integer((json_int_t)c->max)
                                                 : json_real(c->max));
        }
        if (c->type == PG_COL_CATEGORICAL) {
            json_t *cats = json_array();
            bad |= set(j, "categories", cats);
            for (size_t k = 0; !bad && k < c->ncat; k++)
                bad |= json_array_append_new(cats, json_string(c->cats[k]));
        }
        bad |= set(j, "nullable", json_boolean(c->nullable));
        if (c->epsilon > 0.0) bad |= set(j, "epsilon", json_real(c->epsilon));
        if (c->log_scale) bad |= set(j, "scale", json_string("log"));
        if (i == t->label) continue;
        json_t *b = json_object();
        bad |= json_array_append_new(blocks, b);
        bad |= set(b, "column", json_string(c->name));
        bad |= set(b, "offset", json_integer((json_int_t)c->offset));
        bad |= set(b, "width", json_integer((json_int_t)c->width));
        bad |= set(b, "kind", json_string(kind_names[c->type]));
        bad |=
            set(b, "missing_unit",
                c->nullable ? json_integer((json_int_t)(c->offset + c->width - 1)) : json_null());
    }
    bad |= set(o, "columns", cols);
    cols = NULL;
    if (!bad && t->label != PG_TABLE_NONE)
        bad |= set(o, "label", json_string(t->cols[t->label].name));
    bad |= set(o, "width", json_integer((json_int_t)t->width));
    bad |= set(o, "blocks", blocks);
    blocks = NULL;
    if (bad) {
        json_decref(cols);
        json_decref(blocks);
        json_decref(o);
        return NULL;
    }
    return o;
}

int pg_table_encode_value(const pg_table *t, size_t col, const pg_table_value *v, int bounds,
                          float *row, pg_error *err)
{
    const pg_table_col *c = &t->cols[col];
    float *u = row + c->offset;
    size_t vw = c->width - (size_t)c->nullable;
    if (col == t->label)
        return pg_error_set(err, PG_EINVAL, "column '%s' is the label: it has no units", c->name);
    if (v->missing) {
        if (!c->nullable)
            return pg_error_set(err, PG_EINVAL,
                                "column '%s': missing value in a column that is "
                                "not nullable",
                                c->name);
        for (size_t k = 0; k < vw; k++) u[k] = 0.0f;
        u[vw] = 1.0f;
        return PG_OK;
    }
    switch (c->type) {
    case PG_COL_CONTINUOUS:
    case PG_COL_INTEGER: {
        double x = v->num;
        char f1[PG_FMT_F64_MAX], f2[PG_FMT_F64_MAX], f3[PG_FMT_F64_MAX];
        if (!isfinite(x))
            return pg_error_set(err, PG_EINVAL, "column '%s': not a finite number", c->name);
        if (c->type == PG_COL_INTEGER && x != floor(x))
            return pg_error_set(err, PG_EINVAL, "column '%s': %s is not an integer", c->name,
                                pg_fmt_f64(x, f1));
        if (x < c->min || x > c->max) {
            if (bounds == PG_TABLE_BOUNDS_REFUSE)
                return pg_error_set(err, PG_ERANGE, "column '%s': %s is outside [%s, %s]", c->name,
                                    pg_fmt_f64(x, f1), pg_fmt_f64(c->min, f2),
                                    pg_fmt_f64(c->max, f3));
            if (bounds == PG_TABLE_BOUNDS_CLAMP) x = x < c->min ? c->min : c->max;
        }
        double s = (x - c->min) / (c->max - c->min);
        double e = t->lo + s * (t->hi - t->lo);
        u[0] = (float)e;
        /* Bounded data must stay inside [lo, hi] after float32 rounding too. */
        if (x >= c->min && x <= c->max) {
            while ((double)u[0] < t->lo) u[0] = nextafterf(u[0], INFINITY);
            while ((double)u[0] > t->hi) u[0] = nextafterf(u[0], -INFINITY);
        }
        if (!isfinite(u[0]))
            return pg_error_set(err, PG_ERANGE, "column '%s': %s is too far out of bounds", c->name,
                                pg_fmt_f64(x, f1));
        break;
    }
    case PG_COL_CATEGORICAL:
        if (v->cat >= c->ncat)
            return pg_error_set(err, PG_EINVAL, "column '%s': category index %zu out of range",
                                c->name, v->cat);
        for (size_t k = 0; k < c->ncat; k++) u[k] = k == v->cat ? 1.0f : 0.0f;
        break;
    default:
        if (v->cat > 1)
            return pg_error_set(err, PG_EINVAL, "column '%s': a boolean is 0 or 1", c->name);
        u[0] = (float)v->cat;
    }
    if (c->nullable) u[vw] = 0.0f;
    return PG_OK;
}

void pg_table_decode_value(const pg_table *t, size_t col, const float *row, int clamp,
                           pg_table_value *v)
{
    const pg_table_col *c = &t->cols[col];
    const float *u = row + c->offset;
    size_t vw = c->width - (size_t)c->nullable;
    memset(v, 0, sizeof *v);
    if (c->nullable && u[vw] > 0.5f) {
        v->missing = 1;
        return;
    }
    switch (c->type) {
    case PG_COL_CONTINUOUS:
    case PG_COL_INTEGER: {
        double e = (double)u[0];
        double x = c->min + (e - t->lo) / (t->hi - t->lo) * (c->max - c->min);
        if (!isfinite(x)) x = e > 0 ? c->max : c->min;
        if (clamp) x = x < c->min ? c->min : x > c->max ? c->max : x;
        if (c->type == PG_COL_INTEGER) x = nearbyint(x);
        v->num = x == 0.0 ? 0.0 : x; /* never -0 (it would print as "-0") */
        break;
    }
    case PG_COL_CATEGORICAL: {
        size_t best = 0;
        for (size_t k = 1; k < c->ncat; k++)
            if (u[k] > u[best]) best = k;
        v->cat = best;
        break;
    }
    default:
        v->cat = u[0] > 0.5f;
    }
}

/* Per-column bounds: the table in table.h. */
static void col_bounds(const pg_table *t, size_t col, double out[4])
{
    const pg_table_col *c = &t->cols[col];
    double M = fmax(-t->lo, t->hi), span = t->hi - t->lo;
    memset(out, 0, 4 * sizeof *out);
    if (col == t->label) return;
    if (c->type == PG_COL_CONTINUOUS || c->type == PG_COL_INTEGER) {
        out[0] = M, out[1] = M * M;
        out[2] = c->nullable ? fmax(span, M + 1.0) : span;
        out[3] = c->nullable ? fmax(span * span, M * M + 1.0) : span * span;
    } else if (c->type == PG_COL_BOOLEAN) {
        out[0] = 1, out[1] = 1;
        out[2] = c->nullable ? 2 : 1, out[3] = c->nullable ? 2 : 1;
    } else {
        out[0] = 1, out[1] = 1, out[2] = 2, out[3] = 2;
    }
}

void pg_table_col_norm_bound(const pg_table *t, size_t col, double *l1, double *l2)
{
    double b[4];
    col_bounds(t, col, b);
    *l1 = b[0], *l2 = sqrt(b[1]);
}

void pg_table_col_diameter(const pg_table *t, size_t col, double *l1, double *l2)
{
    double b[4];
    col_bounds(t, col, b);
    *l1 = b[2], *l2 = sqrt(b[3]);
}

void pg_table_norm_bound(const pg_table *t, double *l1, double *l2)
{
    double a = 0, s = 0, b[4];
    for (size_t i = 0; i < t->ncols; i++) col_bounds(t, i, b), a += b[0], s += b[1];
    *l1 = a, *l2 = sqrt(s);
}

void pg_table_diameter(const pg_table *t, double *l1, double *l2)
{
    double a = 0, s = 0, b[4];
    for (size_t i = 0; i < t->ncols; i++) col_bounds(t, i, b), a += b[2], s += b[3];
    *l1 = a, *l2 = sqrt(s);
}
