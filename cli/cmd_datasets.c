/* cli/cmd_datasets.c - `privgen datasets create|append|list|show|delete|budget`. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/http.h"
#include "cli/human.h"

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static int num(const pg_args *a, const char *name, json_t *obj, const char *key)
{
    const char *v = pg_args_get(a, name);
    if (!v) return PG_CLI_OK;
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end || !isfinite(d))
        return pg_cli_error(PG_CLI_USAGE, "--%s must be a number, got '%s'", name, v);
    json_object_set_new(obj, key, json_real(d));
    return PG_CLI_OK;
}

/* "2" or "1,28,28" -> [2] / [1,28,28]. */
static json_t *parse_shape(const char *s)
{
    json_t *arr = json_array();
    const char *p = s;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || (*end && *end != ',' && *end != 'x')) {
            json_decref(arr);
            return NULL;
        }
        json_array_append_new(arr, json_integer(v));
        p = *end ? end + 1 : end;
    }
    return json_array_size(arr) ? arr : (json_decref(arr), NULL);
}

static int load_json_file(const char *path, json_t **out)
{
    json_error_t je;
    *out = strcmp(path, "-") ? json_load_file(path, 0, &je) : json_loadf(stdin, 0, &je);
    if (!*out) return pg_cli_error(PG_CLI_USAGE, "%s: %s (line %d)", path, je.text, je.line);
    return PG_CLI_OK;
}

/* The body: --spec FILE verbatim, or built from flags. --declaration takes
 * the JSON `privgen privatize` printed, so the noise actually added is what
 * the server is told. */
/* A typed table (docs/tables.md): --schema FILE gives columns, label and
 * range; local data sends the per-column --declaration `privgen privatize
 * --schema` printed, as it is. */
static int typed_body(const pg_args *a, const char *schema, json_t **out)
{
    const char *name = pg_args_get(a, "name"), *model = pg_args_get(a, "model");
    if (!name || !model)
        return pg_cli_error(PG_CLI_USAGE, "datasets create --schema FILE needs --name and --model "
                                          "local|central|public");
    if (pg_args_get(a, "shape") || pg_args_get(a, "num-classes"))
        return pg_cli_error(PG_CLI_USAGE,
                            "--shape and --num-classes follow from --schema: leave them out");
    json_t *sc, *b = json_object(), *p = NULL;
    int rc = load_json_file(schema, &sc);
    if (rc) {
        json_decref(b);
        return rc;
    }
    static const char *const keys[] = {"columns", "label", "range", NULL};
    for (size_t i = 0; keys[i]; i++) {
        json_t *v = json_object_get(sc, keys[i]);
        if (v) json_object_set(b, keys[i], v);
    }
    json_decref(sc);
    json_object_set_new(b, "name", json_string(name));
    if (!json_is_array(json_object_get(b, "columns")))
        rc =
            pg_cli_error(PG_CLI_USAGE, "%s: a schema is an object with \"columns\": [...]", schema);
    else if (!strcmp(model, "local")) {
        const char *decl = pg_args_get(a, "declaration");
        if (!decl)
            rc = pg_cli_error(PG_CLI_USAGE,
                              "a local table needs --declaration FILE (what `privgen privatize "
                              "--schema` printed)");
        else if (!(rc = load_json_file(decl, &p)))
            json_object_del(p, "rows");
    } else if (!strcmp(model, "central")) {
        json_t *bud = json_object();
        p = json_pack("{s:s,s:o}", "model", "central", "budget", bud);
        if (!(rc = num(a, "budget-epsilon", bud, "epsilon")))
            rc = num(a, "budget-delta", bud, "delta");
    } else {
        p = json_pack("{s:s}", "model", model);
    }
    if (p) json_object_set_new(b, "privacy", p);
    if (rc) {
        json_decref(b);
        return rc;
    }
    *out = b;
    return PG_CLI_OK;
}

static int create_body(const pg_args *a, json_t **out)
{
    const char *spec = pg_args_get(a, "spec");
    if (spec) return load_json_file(spec, out);
    const char *schema = pg_args_get(a, "schema");
    if (schema) return typed_body(a, schema, out);
    const char *name = pg_args_get(a, "name"), *shape = pg_args_get(a, "shape");
    const char *range = pg_args_get(a, "range"), *model = pg_args_get(a, "model");
    if (!name || !shape || !range || !model)
        return pg_cli_error(PG_CLI_USAGE,
                            "datasets create needs --spec FILE, or --name, --shape, --range and "
                            "--model local|central|public");
    json_t *b = json_object(), *p = json_object();
    json_object_set_new(b, "name", json_string(name));
    json_t *sh = parse_shape(shape);
    double lo, hi;
    char c;
    int rc = PG_CLI_OK;
    if (!sh)
        rc = pg_cli_error(PG_CLI_USAGE, "--shape must look like 2 or 1,28,28, got '%s'", shape);
    else if (sscanf(range, "%lf:%lf%c", &lo, &hi, &c) != 2)
        rc = pg_cli_error(PG_CLI_USAGE, "--range must look like LO:HI, got '%s'", range);
    if (rc) {
        json_decref(sh);
        json_decref(b);
        json_decref(p);
        return rc;
    }
    json_object_set_new(b, "shape", sh);
    json_object_set_new(b, "range", json_pack("[f,f]", lo, hi));
    const char *nc = pg_args_get(a, "num-classes");
    if (nc) json_object_set_new(b, "num_classes", json_integer(strtol(nc, NULL, 10)));
    json_object_set_new(p, "model", json_string(model));
    json_object_set_new(b, "privacy", p);
    if (!strcmp(model, "local")) {
        const char *decl = pg_args_get(a, "declaration");
        if (decl) {
            json_t *d;
            if ((rc = load_json_file(decl, &d))) goto fail;
            static const char *const keys[] = {"mechanism",   "epsilon", "delta", "sensitivity",
                                               "noise_scale", "cols",    "clip",  NULL};
            for (size_t i = 0; keys[i]; i++) {
                json_t *v = json_object_get(d, keys[i]);
                if (v && !json_is_null(v)) json_object_set(p, keys[i], v);
            }
            json_decref(d);
        }
        const char *mech = pg_args_get(a, "mechanism");
        if (mech) json_object_set_new(p, "mechanism", json_string(mech));
        if ((rc = num(a, "epsilon", p, "epsilon")) || (rc = num(a, "delta", p, "delta")) ||
            (rc = num(a, "sensitivity", p, "sensitivity")) ||
            (rc = num(a, "noise-scale", p, "noise_scale")))
            goto fail;
    } else if (!strcmp(model, "central")) {
        json_t *bud = json_object();
        json_object_set_new(p, "budget", bud);
        if ((rc = num(a, "budget-epsilon", bud, "epsilon")) ||
            (rc = num(a, "budget-delta", bud, "delta")))
            goto fail;
    }
    *out = b;
    return PG_CLI_OK;
fail:
    json_decref(b);
    return rc;
}

static const char *content_type(const char *file, const char *fmt)
{
    if (!fmt) {
        if (ends_with(file, ".csv"))
            fmt = "csv";
        else if (ends_with(file, ".npy"))
            fmt = "npy";
        else if (ends_with(file, ".json"))
            fmt = "json";
        else if (ends_with(file, ".ndjson") || ends_with(file, ".jsonl"))
            fmt = "ndjson";
        else if (ends_with(file, "-ubyte") || ends_with(file, ".idx"))
            fmt = "idx";
        else if (ends_with(file, ".f32") || ends_with(file, ".raw"))
            fmt = "raw";
        else
            return NULL;
    }
    if (!strcmp(fmt, "csv")) return "text/csv";
    if (!strcmp(fmt, "npy")) return "application/x-npy";
    if (!strcmp(fmt, "json")) return "application/json";
    if (!strcmp(fmt, "ndjson")) return "application/x-ndjson";
    if (!strcmp(fmt, "idx")) return "application/x-idx";
    if (!strcmp(fmt, "raw")) return "application/octet-stream";
    return NULL;
}

/* The declaration sent with an upload (the Privgen-Declaration header):
 * --declaration FILE, else the FILE.decl.json sidecar `privgen privatize`
 * wrote next to FILE. *hdr is NULL when there is none. */
static int declaration_header(const pg_args *a, const char *file, char **hdr)
{
    *hdr = NULL;
    const char *path = pg_args_get(a, "declaration");
    char side[1024];
    if (!path && strcmp(file, "-")) {
        struct stat st;
        snprintf(side, sizeof side, "%s.decl.json", file);
        if (!stat(side, &st)) path = side;
    }
    if (!path) return PG_CLI_OK;
    if (!strcmp(path, "-") && !strcmp(file, "-"))
        return pg_cli_error(PG_CLI_USAGE, "the rows and the declaration cannot both be stdin");
    json_t *d;
    int rc = load_json_file(path, &d);
    if (rc) return rc;
    char *txt = json_is_object(d) ? json_dumps(d, JSON_COMPACT) : NULL;
    json_decref(d);
    if (!txt) return pg_cli_error(PG_CLI_USAGE, "%s: a declaration must be a JSON object", path);
    size_t n = strlen(txt) + sizeof "Privgen-Declaration: ";
    *hdr = malloc(n);
    if (*hdr) snprintf(*hdr, n, "Privgen-Declaration: %s", txt);
    free(txt);
    return *hdr ? PG_CLI_OK : pg_cli_error(PG_CLI_FAIL, "out of memory");
}

/* Streams the file (or stdin, chunked) to the rows endpoint. Raw float32
 * needs the row count up front: --rows, else the file size over 4*d. */
static int append(pg_http *h, const pg_args *a)
{
    if (a->npos != 3) return pg_cli_error(PG_CLI_USAGE, "usage: privgen datasets append ID FILE|-");
    const char *file = a->pos[2], *fmt = pg_args_get(a, "format");
    const char *ct = content_type(file, fmt);
    if (!ct)
        return pg_cli_error(PG_CLI_USAGE,
                            fmt ? "--format must be csv, npy, json, ndjson, idx or raw"
                                : "cannot tell the format of %s: pass --format "
                                  "csv|npy|json|ndjson|idx|raw",
                            file);
    int from_stdin = !strcmp(file, "-");
    char *decl = NULL;
    int drc = declaration_header(a, file, &decl);
    if (drc) return drc;
    FILE *f = from_stdin ? stdin : fopen(file, "rb");
    if (!f) {
        free(decl);
        return pg_cli_error(PG_CLI_USAGE, "cannot open %s", file);
    }
    struct stat st;
    long long size = !fstat(fileno(f), &st) && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
    if (from_stdin && size >= 0) size -= ftell(f) > 0 ? ftell(f) : 0;
    char path[256], xrows[64] = "";
    int rc = PG_CLI_OK;
    if (!strcmp(ct, "application/octet-stream")) {
        const char *rows = pg_args_get(a, "rows");
        unsigned long long n = 0;
        if (rows) {
            char *end;
            n = strtoull(rows, &end, 10);
            if (!*rows || *end || n == 0) rc = pg_cli_error(PG_CLI_USAGE, "--rows must be >= 1");
        } else if (size < 0) {
            rc = pg_cli_error(PG_CLI_USAGE, "raw float32 from a pipe needs --rows N");
        } else {
            json_t *ds = NULL;
            snprintf(path, sizeof path, "/v1/datasets/%s", a->pos[1]);
            if (!(rc = pg_http_json(h, "GET", path, NULL, &ds))) {
                long long d = json_integer_value(json_object_get(ds, "d"));
                if (d < 1 || size == 0 || size % (4 * d))
                    rc = pg_cli_error(PG_CLI_USAGE,
                                      "%s holds %lld bytes, not a whole number of %lld-float rows",
                                      file, size, d);
                else
                    n = (unsigned long long)(size / (4 * d));
            }
            json_decref(ds);
        }
        snprintf(xrows, sizeof xrows, "X-Rows: %llu", n);
    }
    pg_http_resp r;
    snprintf(path, sizeof path, "/v1/datasets/%s/rows", a->pos[1]);
    const char *extra[3] = {NULL, NULL, NULL};
    int ne = 0;
    if (xrows[0]) extra[ne++] = xrows;
    if (decl) extra[ne++] = decl;
    if (!rc) rc = pg_http_upload(h, path, ct, f, size, extra, &r);
    if (!from_stdin) fclose(f);
    free(decl);
    if (rc) return rc;
    if (r.status / 100 != 2) {
        rc = pg_http_fail(&r);
    } else {
        json_t *j = json_loadb(r.body, r.len, 0, NULL);
        const char *dc = json_string_value(json_object_get(j, "declaration"));
        if (dc && !strcmp(dc, "not checked"))
            fprintf(stderr, "privgen: note: no declaration was sent, so the rows were not checked "
                            "against the dataset's (pass --declaration FILE, or keep the "
                            "FILE.decl.json that privatize writes)\n");
        if (!j) {
            rc = pg_cli_error(PG_CLI_FAIL, "the server sent invalid JSON");
        } else if (h->json) {
            rc = pg_http_print(h, j);
        } else {
            pg_human_append(j);
            json_decref(j);
        }
    }
    pg_http_resp_free(&r);
    return rc;
}

static void print_table(json_t *list)
{
    size_t i;
    json_t *d;
    printf("%-22s %-24s %-8s %10s  %s\n", "ID", "NAME", "MODEL", "ROWS", "SHAPE");
    json_array_foreach(json_object_get(list, "items"), i, d)
    {
        char *shape = json_dumps(json_object_get(d, "shape"), JSON_COMPACT);
        printf("%-22s %-24.24s %-8s %10lld  %s\n", json_string_value(json_object_get(d, "id")),
               json_string_value(json_object_get(d, "name")),
               json_string_value(json_object_get(json_object_get(d, "privacy"), "model")),
               (long long)json_integer_value(json_object_get(d, "n")), shape ? shape : "");
        free(shape);
    }
    const char *next = json_string_value(json_object_get(list, "next_cursor"));
    if (next) fprintf(stderr, "(more: add --cursor %s)\n", next);
}

static const char HELP[] =
    "usage: privgen datasets SUBCOMMAND [options] [--json] [--url URL] [--token TOKEN]\n"
    "  create --name NAME --shape D|C,H,W --range LO:HI --model local|central|public\n"
    "         [--num-classes K]\n"
    "         local:   --declaration FILE (what `privgen privatize` printed) and/or\n"
    "                  --mechanism laplace|gaussian --epsilon E [--delta D]\n"
    "                  --sensitivity S --noise-scale B\n"
    "         central: --budget-epsilon E --budget-delta D\n"
    "         or: --spec FILE (the JSON body of POST /v1/datasets)\n"
    "         typed table: --schema SCHEMA.json --name NAME --model local|central|public\n"
    "                  (central: --budget-*; local: --declaration of privatize --schema)\n"
    "  append ID FILE|- [--format csv|npy|json|ndjson|idx|raw] [--rows N (raw from a pipe)]\n"
    "         typed tables take csv (header row), json records or ndjson\n"
    "         [--declaration DECL.json]  sent with the rows, which the server refuses\n"
    "         (422) unless it matches the dataset's; by default FILE.decl.json, the\n"
    "         sidecar `privgen privatize` writes, when it exists\n"
    "  list [--limit N] [--cursor C]\n"
    "  show ID           shape, rows, privacy model, storage\n"
    "  budget ID         a central dataset's cap, spend and ledger entries\n"
    "  delete ID\n"
    "Without --json, create prints the id and show, budget and list readable lines;\n"
    "--json prints the server's JSON response instead.\n";

int pg_cli_datasets(int argc, char **argv)
{
    static const char *const valued[] = {
        "name",           "shape",        "range",       "num-classes", "model",
        "mechanism",      "epsilon",      "delta",       "sensitivity", "noise-scale",
        "budget-epsilon", "budget-delta", "declaration", "spec",        "format",
        "limit",          "cursor",       "rows",        "schema",      NULL};
    static const char *const usage =
        "usage: privgen datasets create|append|list|show|delete|budget ...";
    if (pg_cli_sub_help(argc, argv, pg_cli_datasets_subhelp)) return PG_CLI_OK;
    pg_args a;
    int prc = pg_args_parse(argc, argv, valued, NULL, HELP, &a);
    if (prc) return prc == PG_ARGS_HELP ? PG_CLI_OK : prc;
    if (a.npos < 1) return pg_cli_error(PG_CLI_USAGE, "%s", usage);
    const char *sub = a.pos[0];
    int needs_id = !strcmp(sub, "show") || !strcmp(sub, "delete") || !strcmp(sub, "budget");
    if (needs_id && a.npos != 2)
        return pg_cli_error(PG_CLI_USAGE, "usage: privgen datasets %s ID", sub);
    if ((!strcmp(sub, "create") || !strcmp(sub, "list")) && a.npos != 1)
        return pg_cli_error(PG_CLI_USAGE, "datasets %s takes no positional arguments", sub);
    if (!needs_id && strcmp(sub, "create") && strcmp(sub, "list") && strcmp(sub, "append"))
        return pg_cli_error(PG_CLI_USAGE, "unknown subcommand '%s'; %s", sub, usage);
    if (a.npos >= 2 && pg_http_check_id(a.pos[1])) return PG_CLI_USAGE;
    json_t *body = NULL;
    int rc;
    if (!strcmp(sub, "create") && (rc = create_body(&a, &body))) return rc;
    pg_http h;
    if ((rc = pg_http_open(&a, &h))) {
        json_decref(body);
        return rc;
    }
    json_t *out = NULL;
    char path[512];
    if (!strcmp(sub, "append")) {
        rc = append(&h, &a);
    } else if (!strcmp(sub, "create")) {
        rc = pg_http_json(&h, "POST", "/v1/datasets", body, &out);
        if (!rc && !h.json) { /* just the id, for DS=$(privgen datasets create ...) */
            printf("%s\n", json_string_value(json_object_get(out, "id")));
            json_decref(out);
            out = NULL;
        }
    } else if (!strcmp(sub, "list")) {
        static const char *const page[] = {"limit", "cursor", NULL};
        pg_http_list_path(path, sizeof path, "/v1/datasets", &a, page, NULL);
        rc = pg_http_json(&h, "GET", path, NULL, &out);
        if (!rc && !h.json) {
            print_table(out);
            json_decref(out);
            out = NULL;
        }
    } else if (!strcmp(sub, "delete")) {
        snprintf(path, sizeof path, "/v1/datasets/%s", a.pos[1]);
        rc = pg_http_json(&h, "DELETE", path, NULL, &out);
        if (!rc) {
            json_decref(out);
            out = json_pack("{s:s,s:b}", "id", a.pos[1], "deleted", 1);
        }
    } else {
        snprintf(path, sizeof path, "/v1/datasets/%s%s", a.pos[1],
                 !strcmp(sub, "budget") ? "/budget" : "");
        rc = pg_http_json(&h, "GET", path, NULL, &out);
        if (!rc && !h.json) {
            if (!strcmp(sub, "budget"))
                pg_human_budget(a.pos[1], out);
            else
                pg_human_dataset(out);
            json_decref(out);
            out = NULL;
        }
    }
    if (!rc && out) rc = pg_http_print(&h, out);
    json_decref(body);
    pg_http_close(&h);
    return rc;
}
