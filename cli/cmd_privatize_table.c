/* cli/cmd_privatize_table.c - `privgen privatize --schema`: local DP for a
 * typed table, column by column (engine/data/table_ldp.h).
 *
 *   privgen privatize --schema S.json --in DATA.csv|.json|.ndjson
 *                     --out NOISY.csv|.json|.ndjson|- [--epsilon E]
 *                     [--mechanism laplace|gaussian] [--delta D]
 *                     [--split label|even]
 *
 * --epsilon is the row's total. With a label the default split gives the
 * label the share that maximises the features' class-difference
 * signal-to-noise ratio (table_ldp.h; data-independent) and the features the
 * rest evenly; --split even (the default without a label) splits it evenly
 * over every column, label included. Without --epsilon every column needs an
 * "epsilon" in the schema (no --split then).
 * --mechanism is the noise on numeric columns (categorical, boolean and label
 * columns always take randomized response); --delta is the Gaussian total,
 * split evenly over the numeric columns. Values outside the schema's bounds
 * are refused (the noise is calibrated for the bounds). The output is decoded:
 * category names, booleans, empty/null where the reported value is missing,
 * numbers with their noise (not clamped, integers rounded). The declaration
 * printed (stdout; stderr with --out -) is what the server checks per column.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_table.h"
#include "engine/data/file.h"
#include "engine/data/records.h"
#include "engine/data/table_ldp.h"

typedef struct rows {
    size_t width, n, cap;
    float *x;
    int64_t *labels;
} rows;

static int keep_row(void *ctx, const float *row, int64_t label, uint64_t rowno, pg_error *err)
{
    rows *r = ctx;
    (void)rowno;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 1024, bytes;
        if (pg_size_mul(cap, r->width * sizeof(float), &bytes))
            return pg_error_set(err, PG_ENOMEM, "too many rows");
        float *x = realloc(r->x, bytes);
        if (x) r->x = x;
        int64_t *l = realloc(r->labels, cap * sizeof *l);
        if (l) r->labels = l;
        if (!x || !l) return pg_error_set(err, PG_ENOMEM, "out of memory");
        r->cap = cap;
    }
    memcpy(r->x + r->n * r->width, row, r->width * sizeof *row);
    r->labels[r->n++] = label;
    return PG_OK;
}

static int feed_records(void *ctx, const void *buf, size_t len, pg_error *err)
{
    return pg_records_feed(ctx, buf, len, err);
}

typedef struct text {
    char *s;
    size_t n, cap;
} text;

static int to_text(void *ctx, const void *buf, size_t len)
{
    text *t = ctx;
    if (t->n + len > t->cap) {
        size_t cap = (t->n + len) * 2;
        char *s = realloc(t->s, cap);
        if (!s) return 1;
        t->s = s, t->cap = cap;
    }
    memcpy(t->s + t->n, buf, len);
    t->n += len;
    return 0;
}

static int load_table(const char *path, pg_table **t)
{
    json_error_t je;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!j) return pg_cli_error(PG_CLI_USAGE, "%s: line %d: %s", path, je.line, je.text);
    pg_error e = {0};
    int rc = pg_table_from_json(j, t, &e);
    json_decref(j);
    if (rc) return pg_cli_error(PG_CLI_USAGE, "%s: %s", path, e.msg);
    return PG_CLI_OK;
}

int pg_cli_privatize_table(int argc, char **argv)
{
    static const char *const allowed[] = {"schema",    "in",    "out",   "epsilon",
                                          "mechanism", "delta", "split", NULL};
    static const char *const mechs[] = {"laplace", "gaussian", NULL};
    static const char *const splits[] = {"default", "label", "even", NULL};
    pg_cli_opts o;
    const char *mech, *split;
    double eps = 0.0, delta = 0.0;
    int rc = pg_cli_parse(argc, argv, allowed, &o);
    if (!rc) rc = pg_cli_choice(&o, "mechanism", mechs, "laplace", &mech);
    if (!rc) rc = pg_cli_choice(&o, "split", splits, "default", &split);
    if (!rc) rc = pg_cli_double(&o, "epsilon", 0, &eps);
    if (!rc) rc = pg_cli_double(&o, "delta", 0, &delta);
    if (rc) return rc;
    const char *in = pg_cli_get(&o, "in"), *out = pg_cli_get(&o, "out");
    if (!in || !out) return pg_cli_error(PG_CLI_USAGE, "--in and --out are required");
    if (pg_cli_get(&o, "epsilon") && !(eps > 0.0))
        return pg_cli_error(PG_CLI_USAGE, "--epsilon must be > 0, got %g", eps);
    int to_stdout = !strcmp(out, "-"), in_fmt, out_fmt = PG_RECORDS_CSV;
    pg_error e = {0};
    if (pg_cli_records_format(in, &in_fmt, &e) ||
        (!to_stdout && pg_cli_records_format(out, &out_fmt, &e)))
        return pg_cli_error(PG_CLI_USAGE, "%s", e.msg);
    pg_table *t = NULL;
    if ((rc = load_table(pg_cli_get(&o, "schema"), &t))) return rc;
    int numeric = strcmp(mech, "gaussian") ? PG_LDP_LAPLACE : PG_LDP_GAUSSIAN;
    pg_ldp_plan plan = {0};
    rows r = {.width = t->width};
    text txt = {0};
    pg_records_parser *p = NULL;
    int code = PG_CLI_OK;
    int sp = !strcmp(split, "label")  ? PG_LDP_SPLIT_LABEL
             : !strcmp(split, "even") ? PG_LDP_SPLIT_EVEN
                                      : PG_LDP_SPLIT_DEFAULT;
    if (pg_ldp_plan_make_split(t, numeric, eps, delta, sp, &plan, &e)) {
        code = pg_cli_error(PG_CLI_USAGE, "%s", e.msg);
        goto done;
    }
    pg_records_opts ro = {.format = in_fmt, .bounds = PG_TABLE_BOUNDS_REFUSE};
    int erc = pg_records_new(t, &ro, keep_row, &r, &p, &e);
    if (!erc) erc = pg_cli_stream_file(in, feed_records, p, &e);
    if (!erc) erc = pg_records_finish(p, &e);
    if (!erc && r.n == 0) erc = pg_error_set(&e, PG_EINVAL, "no rows");
    if (erc) {
        code = pg_cli_error(erc == PG_EIO ? PG_CLI_FAIL : PG_CLI_USAGE, "%s: %s", in, e.msg);
        goto done;
    }
    pg_rng rng;
    erc = pg_rng_secure(&rng, &e);
    if (!erc) erc = pg_ldp_apply(&rng, t, &plan, r.x, r.labels, r.n, &e);
    if (!erc) erc = pg_records_write(t, out_fmt, r.x, r.labels, r.n, 0, to_text, &txt, &e);
    if (!erc && to_stdout && (fwrite(txt.s, 1, txt.n, stdout) != txt.n || fflush(stdout)))
        erc = pg_error_set(&e, PG_EIO, "short write");
    else if (!erc && !to_stdout)
        erc = pg_file_write_atomic(out, txt.s, txt.n, &e);
    if (erc) {
        code = pg_cli_error(PG_CLI_FAIL, "cannot privatize into %s: %s", out, e.msg);
        goto done;
    }
    json_t *d = pg_ldp_declaration(t, &plan, r.n);
    if (to_stdout) {
        char *s = d ? json_dumps(d, JSON_COMPACT) : NULL;
        json_decref(d);
        if (s) fprintf(stderr, "%s\n", s);
        code = s ? PG_CLI_OK : PG_CLI_FAIL;
        free(s);
    } else {
        code = pg_cli_emit(d);
    }
done:
    pg_records_free(p);
    free(txt.s);
    free(r.x);
    free(r.labels);
    pg_ldp_plan_free(&plan);
    pg_table_free(t);
    return code;
}
