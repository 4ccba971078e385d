/* cli/cmd_schema.c - `privgen schema propose|check`.
 *
 * propose reads a CSV (streamed) and prints a schema the owner edits: types
 * guessed from the values, numeric bounds widened outward to round values,
 * categories listed in sorted order, nullable where a value is missing. It
 * warns that all of this was read from the private file itself: the bounds
 * and the category list leak facts about its rows (the largest income, a
 * rare category) and should be replaced by domain knowledge before the
 * schema is shared. Columns that look like free text or identifiers (more
 * distinct values than --max-categories) are left out, with a warning.
 *
 * The proposal keeps the table's words, so samples read like the table:
 * a yes/no column spelled other than true/false (Yes/No, YES/NO) becomes a
 * categorical column of its two spellings (a boolean would come back as
 * true/false), and a column of at most INT_CATS distinct small integers
 * (codes such as 1..5) becomes a categorical column of those numbers, in
 * numeric order. A binary, never-missing column named like an outcome
 * (OUTCOME_WORDS) is proposed as the schema's label; without one, a note says
 * how to set it.
 *
 * check validates a schema and prints a summary (columns, encoded width, row
 * bounds; --json: the encoding map). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_table.h"
#include "engine/data/file.h"
#include "engine/data/records.h"
#include "engine/data/table.h"

#define CHUNK       65536
#define DEFAULT_CAT 50

static const char LEAK_WARNING[] =
    "the bounds and categories in this schema were read from the private file itself and leak "
    "information about its rows (extremes, rare categories); replace them with values from "
    "domain knowledge before sharing the schema or declaring a dataset with it";

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

int pg_cli_records_format(const char *path, int *format, pg_error *err)
{
    if (ends_with(path, ".csv"))
        *format = PG_RECORDS_CSV;
    else if (ends_with(path, ".json"))
        *format = PG_RECORDS_JSON;
    else if (ends_with(path, ".ndjson") || ends_with(path, ".jsonl"))
        *format = PG_RECORDS_NDJSON;
    else
        return pg_error_set(err, PG_EINVAL, "'%s' is not a .csv, .json, .ndjson or .jsonl file",
                            path);
    return PG_OK;
}

int pg_cli_stream_file(const char *path,
                       int (*feed)(void *ctx, const void *buf, size_t len, pg_error *err),
                       void *ctx, pg_error *err)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return pg_error_set(err, PG_EIO, "cannot open %s: %s", path, strerror(errno));
    char *buf = malloc(CHUNK);
    int rc = buf ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
    while (!rc) {
        size_t n = fread(buf, 1, CHUNK, f);
        if (n) rc = feed(ctx, buf, n, err);
        if (n < CHUNK) {
            if (!rc && ferror(f)) rc = pg_error_set(err, PG_EIO, "cannot read %s", path);
            break;
        }
    }
    free(buf);
    if (f != stdin) fclose(f);
    return rc;
}

/* ---- propose -------------------------------------------------------------- */

/* Integer columns with at most this many distinct values, all within
 * [-INT_CAT_ABS, INT_CAT_ABS], each seen 4 times on average (so a short
 * file's handful of ages stays a number), are proposed as categories. */
#define INT_CATS    10
#define INT_CAT_ABS 100

/* Words of a column name that suggest an outcome (matched case-insensitively
 * inside the name: "Attrition", "loan_status", "is_default"). */
static const char *const OUTCOME_WORDS[] = {"status",  "attrition", "churn", "target", "class",
                                            "outcome", "default",   "label", NULL};

typedef struct colstat {
    char *name;
    uint64_t present, missing;
    int numeric, integral, boolish, smallint;
    double min, max;
    char **distinct; /* up to cap + 1 strings; more = overflow */
    size_t ndistinct;
    int overflow;
} colstat;

typedef struct propose {
    colstat *cols;
    size_t ncols, field, cap;
    uint64_t rows;
    int header_done;
} propose;

static int ci_eq(const char *s, size_t n, const char *lower)
{
    if (strlen(lower) != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != lower[i]) return 0;
    }
    return 1;
}

/* A guess only (the schema is validated when used): strtod after a
 * character check, so hex, nan and inf never count as numbers. */
static int as_number(const char *s, size_t n, double *v)
{
    char txt[128];
    if (n == 0 || n >= sizeof txt) return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr("0123456789+-.eE", s[i])) return 0;
    memcpy(txt, s, n);
    txt[n] = '\0';
    char *end;
    *v = strtod(txt, &end);
    return end == txt + n && isfinite(*v);
}

static int add_distinct(colstat *c, const char *s, size_t n, size_t cap)
{
    if (c->overflow) return PG_OK;
    for (size_t i = 0; i < c->ndistinct; i++)
        if (strlen(c->distinct[i]) == n && !memcmp(c->distinct[i], s, n)) return PG_OK;
    if (c->ndistinct == cap) {
        c->overflow = 1;
        return PG_OK;
    }
    char *d = malloc(n + 1);
    if (!d) return PG_ENOMEM;
    memcpy(d, s, n);
    d[n] = '\0';
    c->distinct[c->ndistinct++] = d;
    return PG_OK;
}

static int propose_field(void *ctx, const char *s, size_t n, int quoted, int eor, uint64_t line,
                         pg_error *err)
{
    propose *p = ctx;
    if (!p->header_done) {
        colstat *cols = realloc(p->cols, (p->ncols + 1) * sizeof *cols);
        if (!cols) return pg_error_set(err, PG_ENOMEM, "out of memory");
        p->cols = cols;
        colstat *c = &cols[p->ncols++];
        memset(c, 0, sizeof *c);
        c->numeric = c->integral = c->boolish = c->smallint = 1;
        c->min = INFINITY, c->max = -INFINITY;
        c->name = malloc(n + 1);
        c->distinct = calloc(p->cap, sizeof *c->distinct);
        if (!c->name || !c->distinct) return pg_error_set(err, PG_ENOMEM, "out of memory");
        memcpy(c->name, s, n);
        c->name[n] = '\0';
        if (eor) p->header_done = 1;
        if (p->ncols > PG_TABLE_MAX_COLS)
            return pg_error_set(err, PG_EINVAL, "more than %d columns", PG_TABLE_MAX_COLS);
        return PG_OK;
    }
    if (p->field >= p->ncols)
        return pg_error_set(err, PG_EFORMAT, "CSV line %llu has more than %zu fields",
                            (unsigned long long)line, p->ncols);
    colstat *c = &p->cols[p->field++];
    if (!quoted && (n == 0 || (n == 2 && !memcmp(s, "NA", 2)) ||
                    (n == 4 && (!memcmp(s, "null", 4) || !memcmp(s, "NULL", 4))))) {
        c->missing++;
    } else {
        double v;
        c->present++;
        if (as_number(s, n, &v)) {
            c->min = fmin(c->min, v), c->max = fmax(c->max, v);
            c->integral &= v == floor(v);
            c->smallint &= v == floor(v) && fabs(v) <= INT_CAT_ABS;
        } else {
            c->numeric = 0;
        }
        c->boolish &=
            ci_eq(s, n, "true") || ci_eq(s, n, "false") || ci_eq(s, n, "yes") || ci_eq(s, n, "no");
        if (add_distinct(c, s, n, p->cap)) return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    if (eor) {
        if (p->field != p->ncols)
            return pg_error_set(err, PG_EFORMAT, "CSV line %llu has %zu fields, expected %zu",
                                (unsigned long long)line, p->field, p->ncols);
        p->field = 0;
        p->rows++;
    }
    return PG_OK;
}

static int feed_tok(void *ctx, const void *buf, size_t len, pg_error *err)
{
    return pg_csv_tok_feed(ctx, buf, len, err);
}

/* Outward to a round value: multiples of the power of ten below the
 * largest magnitude (18..75 -> 10..80, 6..959 -> 0..1000). */
static void widen(double a, double b, double *lo, double *hi)
{
    double m = fmax(fabs(a), fabs(b));
    if (m == 0.0) {
        *lo = 0.0, *hi = 1.0;
        return;
    }
    double s = pow(10.0, floor(log10(m)));
    *lo = floor(a / s) * s;
    *hi = ceil(b / s) * s;
    if (*lo == *hi) *hi += s;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_num_str(const void *a, const void *b)
{
    double x = strtod(*(char *const *)a, NULL), y = strtod(*(char *const *)b, NULL);
    return x < y ? -1 : x > y ? 1 : strcmp(*(char *const *)a, *(char *const *)b);
}

static json_t *categories(colstat *c, int numeric)
{
    qsort(c->distinct, c->ndistinct, sizeof *c->distinct, numeric ? cmp_num_str : cmp_str);
    json_t *cats = json_array();
    for (size_t i = 0; i < c->ndistinct; i++)
        json_array_append_new(cats, json_string(c->distinct[i]));
    return cats;
}

/* A yes/no column whose two spellings are exactly "true" and "false": only
 * those come back unchanged from a boolean column. */
static int true_false(const colstat *c)
{
    for (size_t i = 0; i < c->ndistinct; i++)
        if (strcmp(c->distinct[i], "true") && strcmp(c->distinct[i], "false")) return 0;
    return 1;
}

/* The schema entry for one column, or NULL (with *why) when left out.
 * *note is set for a guess the owner should know about. */
static json_t *guess(colstat *c, const char **why, const char **note)
{
    json_t *j = json_object();
    json_object_set_new(j, "name", json_string(c->name));
    *note = NULL;
    if (c->present == 0) {
        *why = "has no values";
        json_decref(j);
        return NULL;
    }
    if (c->numeric && c->integral && c->smallint && !c->overflow && c->ndistinct >= 2 &&
        c->ndistinct <= INT_CATS && c->present >= 4 * (uint64_t)c->ndistinct) {
        json_object_set_new(j, "type", json_string("categorical"));
        json_object_set_new(j, "categories", categories(c, 1));
        *note = "holds a few small integers: proposed as categorical (codes); make it an integer "
                "column with min and max if the numbers are counts or amounts";
    } else if (c->numeric) {
        double lo, hi;
        widen(c->min, c->max, &lo, &hi);
        int integer = c->integral && hi - lo <= PG_TABLE_INT_SPAN;
        json_object_set_new(j, "type", json_string(integer ? "integer" : "continuous"));
        json_object_set_new(j, "min", integer ? json_integer((json_int_t)lo) : json_real(lo));
        json_object_set_new(j, "max", integer ? json_integer((json_int_t)hi) : json_real(hi));
    } else if (c->boolish && c->ndistinct == 2 && !true_false(c)) {
        /* Yes/No keeps its spellings: a boolean would print true/false. */
        json_object_set_new(j, "type", json_string("categorical"));
        json_object_set_new(j, "categories", categories(c, 0));
    } else if (c->boolish) {
        json_object_set_new(j, "type", json_string("boolean"));
    } else if (c->overflow || c->ndistinct < 2) {
        *why = c->overflow ? "has more distinct values than --max-categories (free text or an "
                             "identifier?)"
                           : "has a single value";
        json_decref(j);
        return NULL;
    } else {
        json_object_set_new(j, "type", json_string("categorical"));
        json_object_set_new(j, "categories", categories(c, 0));
    }
    json_object_set_new(j, "nullable", json_boolean(c->missing > 0));
    return j;
}

/* 2 when the lowercased name is an outcome word, 1 when it contains one. */
static int outcome_name(const char *name)
{
    char low[PG_TABLE_NAME_MAX + 1];
    size_t n = strlen(name);
    if (n > PG_TABLE_NAME_MAX) return 0;
    for (size_t i = 0; i <= n; i++)
        low[i] = name[i] >= 'A' && name[i] <= 'Z' ? (char)(name[i] - 'A' + 'a') : name[i];
    int best = 0;
    for (const char *const *w = OUTCOME_WORDS; *w; w++)
        if (!strcmp(low, *w))
            best = 2;
        else if (strstr(low, *w) && best < 1)
            best = 1;
    return best;
}

/* The column proposed as label: binary (a boolean or two categories), never
 * missing, named like an outcome; an exact name beats a part of one, then
 * the first column wins. NULL when none. */
static const char *propose_label(json_t *cols)
{
    const char *best = NULL;
    int score = 0;
    size_t i;
    json_t *c;
    json_array_foreach(cols, i, c)
    {
        const char *type = json_string_value(json_object_get(c, "type"));
        int binary =
            !strcmp(type, "boolean") || (!strcmp(type, "categorical") &&
                                         json_array_size(json_object_get(c, "categories")) == 2);
        if (!binary || json_is_true(json_object_get(c, "nullable"))) continue;
        const char *name = json_string_value(json_object_get(c, "name"));
        int s = outcome_name(name);
        if (s > score) score = s, best = name;
    }
    return best;
}

static void propose_free(propose *p)
{
    for (size_t i = 0; i < p->ncols; i++) {
        for (size_t k = 0; k < p->cols[i].ndistinct; k++) free(p->cols[i].distinct[k]);
        free(p->cols[i].distinct);
        free(p->cols[i].name);
    }
    free(p->cols);
}

static int cmd_propose(int argc, char **argv)
{
    static const char *const allowed[] = {"in", "out", "max-categories", NULL};
    pg_cli_opts o;
    uint64_t cap = DEFAULT_CAT;
    int rc = pg_cli_parse(argc, argv, allowed, &o);
    if (!rc) rc = pg_cli_u64(&o, "max-categories", 0, &cap);
    if (rc) return rc;
    const char *in = pg_cli_get(&o, "in"), *out = pg_cli_get(&o, "out");
    if (!in) return pg_cli_error(PG_CLI_USAGE, "--in DATA.csv is required");
    if (cap < 2 || cap > PG_TABLE_MAX_CATS)
        return pg_cli_error(PG_CLI_USAGE, "--max-categories must lie in [2, %d]",
                            PG_TABLE_MAX_CATS);
    propose p = {.cap = (size_t)cap};
    pg_csv_tok *tok;
    pg_error e = {0};
    if (pg_csv_tok_new(0, propose_field, &p, &tok, &e))
        return pg_cli_error(PG_CLI_FAIL, "%s", e.msg);
    int erc = pg_cli_stream_file(in, feed_tok, tok, &e);
    if (!erc) erc = pg_csv_tok_finish(tok, &e);
    pg_csv_tok_free(tok);
    if (!erc && !p.header_done) erc = pg_error_set(&e, PG_EFORMAT, "no header row");
    if (erc) {
        propose_free(&p);
        return pg_cli_error(erc == PG_EIO ? PG_CLI_FAIL : PG_CLI_USAGE, "%s: %s", in, e.msg);
    }
    json_t *schema = json_object(), *cols = json_array(), *skipped = json_array();
    for (size_t i = 0; i < p.ncols; i++) {
        const char *why = NULL, *note = NULL;
        json_t *j = guess(&p.cols[i], &why, &note);
        if (j) {
            if (note) fprintf(stderr, "privgen: note: column '%s' %s\n", p.cols[i].name, note);
            json_array_append_new(cols, j);
        } else {
            fprintf(stderr,
                    "privgen: warning: column '%s' %s: left out of the schema (drop it "
                    "from the data too)\n",
                    p.cols[i].name, why);
            json_array_append_new(skipped, json_string(p.cols[i].name));
        }
    }
    json_object_set_new(schema, "columns", cols);
    const char *label = propose_label(cols);
    if (label) {
        json_object_set_new(schema, "label", json_string(label));
        fprintf(stderr,
                "privgen: note: column '%s' looks like an outcome: proposed as the schema's "
                "\"label\" (reports score a classifier on it; methods that do not condition on "
                "the label leave it out of their samples). Delete the \"label\" line if it is "
                "not one\n",
                label);
    } else {
        fprintf(stderr, "privgen: note: no column looks like an outcome (a binary column named "
                        "like status, target or class); to train and report against one, add "
                        "\"label\": \"COLUMN\" (a categorical or boolean column without "
                        "missing values) to the schema\n");
    }
    fprintf(stderr, "privgen: warning: %s\n", LEAK_WARNING);
    /* The proposal must be a valid schema. */
    pg_table *t = NULL;
    int trc = json_array_size(cols) ? pg_table_from_json(schema, &t, &e)
                                    : pg_error_set(&e, PG_EINVAL, "no usable column");
    pg_table_free(t);
    int code = PG_CLI_OK;
    if (trc) {
        code = pg_cli_error(PG_CLI_USAGE, "%s: cannot propose a schema: %s", in, e.msg);
    } else if (out) {
        char *txt = json_dumps(schema, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        int w = txt ? pg_file_write_atomic(out, txt, strlen(txt), &e)
                    : pg_error_set(&e, PG_ENOMEM, "out of memory");
        free(txt);
        if (w) {
            code = pg_cli_error(PG_CLI_FAIL, "cannot write %s: %s", out, e.msg);
        } else {
            json_t *r = json_object();
            json_object_set_new(r, "out", json_string(out));
            json_object_set_new(r, "rows", json_integer((json_int_t)p.rows));
            json_object_set_new(r, "columns", json_integer((json_int_t)json_array_size(cols)));
            json_object_set_new(r, "skipped", json_incref(skipped));
            json_object_set_new(r, "label", label ? json_string(label) : json_null());
            json_object_set_new(r, "warning", json_string(LEAK_WARNING));
            code = pg_cli_emit(r);
        }
    } else {
        code = pg_cli_emit(json_incref(schema));
    }
    json_decref(schema);
    json_decref(skipped);
    propose_free(&p);
    return code;
}

/* ---- check ---------------------------------------------------------------- */

/* One line per column: name, type and bounds or categories, units. */
static void print_check(const char *path, const pg_table *t, json_t *map)
{
    size_t ncls = pg_table_num_classes(t);
    printf("%s: %zu column%s, encoded in %zu units, range [%g, %g]", path, t->ncols,
           t->ncols == 1 ? "" : "s", t->width, t->lo, t->hi);
    if (t->label != PG_TABLE_NONE)
        printf("; label '%s' (%zu classes)\n", t->cols[t->label].name, ncls);
    else
        printf("; no label (reports skip the classifier; add \"label\": \"COLUMN\" to set "
               "one)\n");
    int w = 6;
    for (size_t i = 0; i < t->ncols; i++)
        if ((int)strlen(t->cols[i].name) > w) w = (int)strlen(t->cols[i].name);
    if (w > 32) w = 32;
    for (size_t i = 0; i < t->ncols; i++) {
        const pg_table_col *c = &t->cols[i];
        char what[160];
        if (c->type == PG_COL_CONTINUOUS || c->type == PG_COL_INTEGER) {
            snprintf(what, sizeof what, "%s %g..%g", pg_table_type_name(c->type), c->min, c->max);
        } else if (c->type == PG_COL_CATEGORICAL) {
            int k = snprintf(what, sizeof what, "categorical (%zu):", c->ncat);
            for (size_t j = 0; j < c->ncat && k > 0 && (size_t)k < sizeof what - 8; j++)
                k += snprintf(what + k, sizeof what - (size_t)k, "%s %s", j ? "," : "", c->cats[j]);
            if ((size_t)k >= sizeof what - 8) strcpy(what + sizeof what - 5, "...");
        } else {
            snprintf(what, sizeof what, "boolean");
        }
        char units[32];
        if (i == t->label)
            snprintf(units, sizeof units, "label");
        else
            snprintf(units, sizeof units, "%zu unit%s", c->width, c->width == 1 ? "" : "s");
        printf("  %-*.*s  %-9s  %s%s\n", w, w, c->name, units, what,
               c->nullable ? ", nullable" : "");
    }
    json_t *b = json_object_get(map, "row_bounds");
    printf("encoded row: l2 norm at most %.4g, l1 norm at most %.4g; two rows differ by at most "
           "%.4g (l2), %.4g (l1)\n",
           json_number_value(json_object_get(b, "l2_norm")),
           json_number_value(json_object_get(b, "l1_norm")),
           json_number_value(json_object_get(b, "l2_diameter")),
           json_number_value(json_object_get(b, "l1_diameter")));
}

static int cmd_check(int argc, char **argv, int as_json)
{
    static const char *const allowed[] = {"schema", NULL};
    pg_cli_opts o;
    int rc = pg_cli_parse(argc, argv, allowed, &o);
    if (rc) return rc;
    const char *path = pg_cli_get(&o, "schema");
    if (!path) return pg_cli_error(PG_CLI_USAGE, "--schema FILE is required");
    json_error_t je;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!j) return pg_cli_error(PG_CLI_USAGE, "%s: line %d: %s", path, je.line, je.text);
    pg_table *t;
    pg_error e = {0};
    rc = pg_table_from_json(j, &t, &e);
    json_decref(j);
    if (rc) return pg_cli_error(PG_CLI_USAGE, "%s: %s", path, e.msg);
    json_t *map = pg_table_to_json(t);
    double n1, n2, d1, d2;
    pg_table_norm_bound(t, &n1, &n2);
    pg_table_diameter(t, &d1, &d2);
    json_t *b = json_object();
    json_object_set_new(b, "l1_norm", json_real(n1));
    json_object_set_new(b, "l2_norm", json_real(n2));
    json_object_set_new(b, "l1_diameter", json_real(d1));
    json_object_set_new(b, "l2_diameter", json_real(d2));
    json_object_set_new(map, "row_bounds", b);
    json_object_set_new(map, "classes", json_integer((json_int_t)pg_table_num_classes(t)));
    if (!as_json) {
        print_check(path, t, map);
        json_decref(map);
        pg_table_free(t);
        return PG_CLI_OK;
    }
    pg_table_free(t);
    return pg_cli_emit(map);
}

static const char HELP[] =
    "usage: privgen schema propose --in DATA.csv [--out SCHEMA.json] [--max-categories N]\n"
    "       privgen schema check --schema SCHEMA.json [--json]\n"
    "  propose  guesses a typed schema from a CSV with a header row: integer,\n"
    "           continuous (bounds widened to round values), categorical (at most\n"
    "           N distinct values, default 50), boolean; nullable where values are\n"
    "           missing (empty, NA, null). It is read from the private file itself,\n"
    "           so its bounds and categories leak information: edit them from domain\n"
    "           knowledge. Yes/No columns keep their spellings (two categories),\n"
    "           a few small integers (at most 10 codes) stay categories, and a\n"
    "           binary column named like an outcome (status, attrition, churn,\n"
    "           target, class, outcome, default, label) is proposed as \"label\".\n"
    "           With --out the schema is written (indented) to the file.\n"
    "  check    validates a schema and prints a summary: each column's type,\n"
    "           bounds or categories and encoded units, the label, and the bounds\n"
    "           of an encoded row (--json: the encoding map with its blocks).\n";

int pg_cli_schema(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(HELP, stdout);
            return PG_CLI_OK;
        }
    if (argc < 1) {
        fputs(HELP, stderr);
        return pg_cli_error(PG_CLI_USAGE, "schema needs a subcommand: propose or check");
    }
    /* --json (a flag among --name value pairs): check prints the encoding
     * map; propose prints JSON either way. */
    int as_json = 0, n = 0;
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--json"))
            argv[n++] = argv[i];
        else
            as_json = 1;
    argc = n;
    if (argc < 1) return pg_cli_error(PG_CLI_USAGE, "schema needs a subcommand: propose or check");
    if (!strcmp(argv[0], "propose")) return cmd_propose(argc - 1, argv + 1);
    if (!strcmp(argv[0], "check")) return cmd_check(argc - 1, argv + 1, as_json);
    return pg_cli_error(PG_CLI_USAGE, "unknown schema subcommand '%s' (propose, check)", argv[0]);
}
