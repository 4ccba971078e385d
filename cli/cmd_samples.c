/* cli/cmd_samples.c - `privgen samples`, `privgen checkpoints`.
 *
 * Binary downloads (PNG, NPY, checkpoints) go to -o FILE, written atomically,
 * or to stdout when it is not a terminal; text formats default to stdout. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/http.h"
#include "cli/human.h"
#include "engine/data/file.h"

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
        "usage: privgen samples JOB_ID [-n N] [--format json|csv|npy|png] [--seed S]\n"
        "                       [--label K] [--checkpoint STEP] [--frame data|range]\n"
        "                       [-o FILE] [--json]\n"
        "  json and csv go to stdout unless -o; png and npy need -o FILE or a pipe.\n"
        "  png: an image grid, or for 2-D rows a scatter plot framed on the samples\n"
        "  (--frame data, the default) or on the dataset's declared range (--frame\n"
        "  range); the range is drawn and the samples outside it are counted.\n";
    static const char *const valued[] = {"n",          "format", "seed",  "label",
                                         "checkpoint", "out",    "frame", NULL};
    pg_args a;
    int prc = pg_args_parse(argc, argv, valued, NULL, help, &a);
    if (prc) return prc == PG_ARGS_HELP ? PG_CLI_OK : prc;
    if (a.npos != 1)
        return pg_cli_error(PG_CLI_USAGE,
                            "usage: privgen samples JOB_ID [-n N] [--format json|csv|npy|png] "
                            "[--seed S] [--label K] [--checkpoint STEP] [-o FILE]");
    if (pg_http_check_id(a.pos[0])) return PG_CLI_USAGE;
    const char *fmt = pg_args_get(&a, "format");
    if (!fmt) fmt = "json";
    if (strcmp(fmt, "json") && strcmp(fmt, "csv") && strcmp(fmt, "npy") && strcmp(fmt, "png"))
        return pg_cli_error(PG_CLI_USAGE, "--format must be json, csv, npy or png, got '%s'", fmt);
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
        if (!*v || strspn(v, "0123456789") != strlen(v))
            return pg_cli_error(PG_CLI_USAGE, "--%s must be a non-negative integer, got '%s'", q[i],
                                v);
        k += (size_t)snprintf(path + k, sizeof path - k, "&%s=%s", q[i], v);
    }
    pg_http h;
    int rc = pg_http_open(&a, &h);
    if (rc) return rc;
    rc = get_to(&h, &a, path, !strcmp(fmt, "png") || !strcmp(fmt, "npy"));
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
