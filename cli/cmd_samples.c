/* cli/cmd_samples.c - `privgen samples`, `privgen checkpoints`.
 *
 * Binary downloads (PNG, NPY, checkpoints) go to -o FILE, written atomically,
 * or to stdout when it is not a terminal; text formats default to stdout. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/http.h"
#include "cli/human.h"
#include "engine/data/file.h"
#include "engine/data/records.h"

/* ---- typed jobs: the first rows as a table --------------------------------- */

#define TABLE_CELL_MAX 24 /* wider cells are cut with "~" */

typedef struct cells {
    char **v;
    size_t n, cap, ncols; /* ncols: fields of the first record */
} cells;

static int on_field(void *ctx, const char *s, size_t len, int quoted, int eor, uint64_t line,
                    pg_error *err)
{
    cells *c = ctx;
    (void)quoted, (void)line;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        char **v = realloc(c->v, cap * sizeof *v);
        if (!v) return pg_error_set(err, PG_ENOMEM, "out of memory");
        c->v = v, c->cap = cap;
    }
    char *f = malloc(len + 2); /* + room for the "-" of an empty field */
    if (!f) return pg_error_set(err, PG_ENOMEM, "out of memory");
    memcpy(f, s, len);
    f[len] = '\0';
    c->v[c->n++] = f;
    if (eor && !c->ncols) c->ncols = c->n;
    return PG_OK;
}

/* Display width of UTF-8 text: one column per code point. */
static size_t width_of(const char *s)
{
    size_t w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static void print_cell(const char *s, size_t w, int last)
{
    size_t n = width_of(s);
    if (n > w) { /* cut at a code point boundary, mark it */
        size_t k = 0, cols = 0;
        while (s[k] && cols < w - 1) {
            k++;
            while (((unsigned char)s[k] & 0xC0) == 0x80) k++;
            cols++;
        }
        fwrite(s, 1, k, stdout);
        fputc('~', stdout);
        n = w;
    } else {
        fputs(s, stdout);
    }
    if (!last)
        for (size_t i = n; i < w + 2; i++) fputc(' ', stdout);
}

/* Prints a CSV body as aligned columns (missing values as "-"). */
static int print_csv_table(const char *body, size_t len)
{
    cells c = {0};
    pg_csv_tok *k;
    pg_error err = {0};
    int rc = pg_csv_tok_new(0, on_field, &c, &k, &err);
    if (!rc) rc = pg_csv_tok_feed(k, body, len, &err);
    if (!rc) rc = pg_csv_tok_finish(k, &err);
    if (!rc) pg_csv_tok_free(k);
    if (!rc && (!c.ncols || c.n % c.ncols)) rc = pg_error_set(&err, PG_EFORMAT, "ragged CSV");
    if (!rc) {
        size_t *w = calloc(c.ncols, sizeof *w);
        for (size_t i = 0; w && i < c.n; i++) {
            if (!c.v[i][0]) c.v[i][0] = '-', c.v[i][1] = '\0';
            size_t n = width_of(c.v[i]), j = i % c.ncols;
            if (n > w[j]) w[j] = n > TABLE_CELL_MAX ? TABLE_CELL_MAX : n;
        }
        for (size_t i = 0; w && i < c.n; i++) {
            size_t j = i % c.ncols;
            print_cell(c.v[i], w[j] ? w[j] : 1, j + 1 == c.ncols);
            if (j + 1 == c.ncols) fputc('\n', stdout);
        }
        free(w);
    }
    for (size_t i = 0; i < c.n; i++) free(c.v[i]);
    free(c.v);
    if (rc) return pg_cli_error(PG_CLI_FAIL, "the server sent unreadable CSV: %s", err.msg);
    return PG_CLI_OK;
}

/* 1 when the job trains on a typed table (its spec carries the map). */
static int job_is_typed(pg_http *h, const char *id, int *typed)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/jobs/%s", id);
    json_t *j;
    int rc = pg_http_json(h, "GET", path, NULL, &j);
    if (rc) return rc;
    *typed = json_is_object(json_object_get(json_object_get(j, "spec"), "table"));
    json_decref(j);
    return PG_CLI_OK;
}

/* The row count of the job's dataset (--rows-like-dataset). */
static int dataset_rows(pg_http *h, const char *job, long long *rows)
{
    char path[256];
    snprintf(path, sizeof path, "/v1/jobs/%s", job);
    json_t *j, *d;
    int rc = pg_http_json(h, "GET", path, NULL, &j);
    if (rc) return rc;
    const char *ds = json_string_value(json_object_get(j, "dataset_id"));
    if (!ds || pg_http_check_id(ds)) {
        json_decref(j);
        return pg_cli_error(PG_CLI_FAIL, "job %s names no dataset", job);
    }
    snprintf(path, sizeof path, "/v1/datasets/%s", ds);
    json_decref(j);
    rc = pg_http_json(h, "GET", path, NULL, &d); /* a deleted dataset: its 404 is printed */
    if (rc) return rc;
    json_t *n = json_object_get(d, "n");
    *rows = json_is_integer(n) ? (long long)json_integer_value(n) : 0;
    json_decref(d);
    if (*rows < 1) return pg_cli_error(PG_CLI_FAIL, "the job's dataset holds no rows: give -n");
    return PG_CLI_OK;
}

/* Writes a successful body to -o or stdout; with --json reports where. */
static int deliver(pg_http *h, const pg_args *a, pg_http_resp *r, int binary)
{
    const char *out = pg_args_get(a, "out");
    if (!out || !strcmp(out, "-")) {
        if (binary && isatty(1))
            return pg_cli_error(PG_CLI_USAGE,
                                "refusing to write binary data to a terminal: pass -o FILE");
        if (fwrite(r->body, 1, r->len, stdout) != r->len)
            return pg_cli_error(PG_CLI_FAIL, "cannot write to stdout");
        if (!binary && r->len && r->body[r->len - 1] != '\n') fputc('\n', stdout);
        return PG_CLI_OK;
    }
    pg_error e = {0};
    if (pg_file_write_atomic(out, r->body, r->len, &e))
        return pg_cli_error(PG_CLI_FAIL, "cannot write %s: %s", out, e.msg);
    if (h->json)
        return pg_http_print(h, json_pack("{s:s,s:I,s:s}", "file", out, "bytes", (json_int_t)r->len,
                                          "content_type", r->content_type));
    fprintf(stderr, "wrote %s (%zu bytes)\n", out, r->len);
    return PG_CLI_OK;
}

static int get_to(pg_http *h, const pg_args *a, const char *path, int binary)
{
    pg_http_resp r;
    int rc = pg_http_do(h, "GET", path, NULL, NULL, 0, &r);
    if (rc) return rc;
    rc = r.status == 200 ? deliver(h, a, &r, binary) : pg_http_fail(&r);
    pg_http_resp_free(&r);
    return rc;
}

int pg_cli_samples(int argc, char **argv)
{
    static const char help[] =
        "usage: privgen samples JOB_ID [-n N] [--format json|csv|ndjson|npy|png] [--seed S]\n"
        "                       [--label K] [--checkpoint STEP] [--frame data|range]\n"
        "                       [-o FILE] [--json]\n"
        "  json and csv go to stdout unless -o; png and npy need -o FILE or a pipe.\n"
        "  A job on a typed table: without --format, -o or --json the first rows\n"
        "  (-n, default 10) print as a table; csv, json and ndjson are decoded records\n"
        "  (write them with -o FILE), png a histogram per column, --label K or a\n"
        "  category name of the label column.\n"
        "  png: an image grid, or for 2-D rows a scatter plot framed on the samples\n"
        "  (--frame data, the default) or on the dataset's declared range (--frame\n"
        "  range); the range is drawn and the samples outside it are counted.\n"
        "  --rows-like-dataset: as many rows as the job's dataset holds (instead of\n"
        "  -n): a whole synthetic table in one download. Streamed formats (json, csv,\n"
        "  ndjson, npy) allow up to the server's --max-stream-samples (default\n"
        "  1000000) rows, png up to --max-samples (default 10000).\n";
    static const char *const valued[] = {"n",          "format", "seed",  "label",
                                         "checkpoint", "out",    "frame", NULL};
    static const char *const flags[] = {"rows-like-dataset", NULL};
    pg_args a;
    int prc = pg_args_parse(argc, argv, valued, flags, help, &a);
    if (prc) return prc == PG_ARGS_HELP ? PG_CLI_OK : prc;
    if (a.npos != 1)
        return pg_cli_error(PG_CLI_USAGE,
                            "usage: privgen samples JOB_ID [-n N] [--format json|csv|npy|png] "
                            "[--seed S] [--label K] [--checkpoint STEP] [-o FILE]");
    if (pg_http_check_id(a.pos[0])) return PG_CLI_USAGE;
    const char *fmt = pg_args_get(&a, "format");
    int fmt_given = fmt != NULL;
    if (!fmt) fmt = "json";
    if (strcmp(fmt, "json") && strcmp(fmt, "csv") && strcmp(fmt, "npy") && strcmp(fmt, "png") &&
        strcmp(fmt, "ndjson"))
        return pg_cli_error(PG_CLI_USAGE,
                            "--format must be json, csv, ndjson, npy or png, got '%s'", fmt);
    const char *frame = pg_args_get(&a, "frame");
    if (frame && strcmp(frame, "data") && strcmp(frame, "range"))
        return pg_cli_error(PG_CLI_USAGE, "--frame must be data or range, got '%s'", frame);
    if (frame && strcmp(fmt, "png"))
        return pg_cli_error(PG_CLI_USAGE, "--frame applies to --format png only");
    char path[1024];
    size_t k = (size_t)snprintf(path, sizeof path, "/v1/jobs/%s/samples?format=%s%s%s", a.pos[0],
                                fmt, frame ? "&frame=" : "", frame ? frame : "");
    static const char *const q[] = {"n", "seed", "label", "checkpoint"};
    for (int i = 0; i < 4; i++) {
        const char *v = pg_args_get(&a, q[i]);
        if (!v) continue;
        if (i == 2 && *v && strspn(v, "0123456789") != strlen(v)) { /* a category name */
            char *esc = curl_easy_escape(NULL, v, 0);
            if (!esc) return pg_cli_error(PG_CLI_FAIL, "out of memory");
            k += (size_t)snprintf(path + k, sizeof path - k, "&label=%s", esc);
            curl_free(esc);
            continue;
        }
        if (!*v || strspn(v, "0123456789") != strlen(v))
            return pg_cli_error(PG_CLI_USAGE, "--%s must be a non-negative integer, got '%s'", q[i],
                                v);
        k += (size_t)snprintf(path + k, sizeof path - k, "&%s=%s", q[i], v);
    }
    int like = pg_args_has(&a, "rows-like-dataset");
    if (like && pg_args_get(&a, "n"))
        return pg_cli_error(PG_CLI_USAGE, "give -n or --rows-like-dataset, not both");
    pg_http h;
    int rc = pg_http_open(&a, &h);
    if (rc) return rc;
    char nbuf[32];
    if (like) {
        long long rows = 0;
        rc = dataset_rows(&h, a.pos[0], &rows);
        if (rc) {
            pg_http_close(&h);
            return rc;
        }
        snprintf(nbuf, sizeof nbuf, "%lld", rows);
        k += (size_t)snprintf(path + k, sizeof path - k, "&n=%s", nbuf);
    }
    int typed = 0;
    if (!fmt_given && !pg_args_get(&a, "out") && !h.json) rc = job_is_typed(&h, a.pos[0], &typed);
    if (!rc && typed) {
        /* the same query as csv, 10 rows unless -n says otherwise */
        char tpath[1100];
        const char *rest = strchr(path, '&');
        snprintf(tpath, sizeof tpath, "/v1/jobs/%s/samples?format=csv%s%s", a.pos[0],
                 pg_args_get(&a, "n") || like ? "" : "&n=10", rest ? rest : "");
        pg_http_resp r;
        rc = pg_http_do(&h, "GET", tpath, NULL, NULL, 0, &r);
        if (!rc) {
            rc = r.status == 200 ? print_csv_table(r.body, r.len) : pg_http_fail(&r);
            pg_http_resp_free(&r);
        }
    } else if (!rc) {
        rc = get_to(&h, &a, path, !strcmp(fmt, "png") || !strcmp(fmt, "npy"));
    }
    pg_http_close(&h);
    return rc;
}

int pg_cli_checkpoints(int argc, char **argv)
{
    static const char help[] =
        "usage: privgen checkpoints JOB_ID [--download STEP -o FILE] [--json]\n"
        "  Lists the job's checkpoints (step, size, time), or with --download STEP\n"
        "  writes that checkpoint's file to -o FILE.\n";
    static const char *const valued[] = {"download", "out", NULL};
    pg_args a;
    int prc = pg_args_parse(argc, argv, valued, NULL, help, &a);
    if (prc) return prc == PG_ARGS_HELP ? PG_CLI_OK : prc;
    if (a.npos != 1)
        return pg_cli_error(PG_CLI_USAGE,
                            "usage: privgen checkpoints JOB_ID [--download STEP -o FILE]");
    if (pg_http_check_id(a.pos[0])) return PG_CLI_USAGE;
    const char *step = pg_args_get(&a, "download");
    if (step && (!*step || strspn(step, "0123456789") != strlen(step)))
        return pg_cli_error(PG_CLI_USAGE, "--download takes a step number, got '%s'", step);
    pg_http h;
    int rc = pg_http_open(&a, &h);
    if (rc) return rc;
    char path[512];
    if (step) {
        snprintf(path, sizeof path, "/v1/jobs/%s/checkpoints/%s", a.pos[0], step);
        rc = get_to(&h, &a, path, 1);
    } else {
        json_t *out;
        snprintf(path, sizeof path, "/v1/jobs/%s/checkpoints", a.pos[0]);
        rc = pg_http_json(&h, "GET", path, NULL, &out);
        if (!rc && !h.json) {
            pg_human_checkpoints(a.pos[0], out);
            json_decref(out);
        } else if (!rc) {
            rc = pg_http_print(&h, out);
        }
    }
    pg_http_close(&h);
    return rc;
}
