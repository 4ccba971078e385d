/* cli/cmd_jobs.c - `privgen jobs create|dry-run|list|show|cancel|delete|watch`.
 *
 * A spec comes from --spec FILE (JSON, "-" = stdin) and/or flags; flags are
 * applied on top of the file: --dataset, --method, --steps (train.steps),
 * --batch (train.batch_size), --seed, --checkpoint-every and any number of
 * --set dotted.key=value (the value is parsed as JSON when it is JSON, e.g.
 * --set model.hidden=[64,64], else taken as a string). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/http.h"
#include "cli/human.h"

/* Sets obj.a.b.c = v, creating the intermediate objects. Steals v. */
static int set_path(json_t *obj, const char *key, json_t *v)
{
    char buf[256];
    if (strlen(key) >= sizeof buf || !*key) {
        json_decref(v);
        return pg_cli_error(PG_CLI_USAGE, "--set key '%s' is not valid", key);
    }
    strcpy(buf, key);
    char *p = buf;
    for (char *dot; (dot = strchr(p, '.')); p = dot + 1) {
        *dot = '\0';
        json_t *next = json_object_get(obj, p);
        if (!json_is_object(next)) {
            next = json_object();
            json_object_set_new(obj, p, next);
        }
        obj = next;
    }
    json_object_set_new(obj, p, v);
    return PG_CLI_OK;
}

static json_t *parse_value(const char *s)
{
    json_t *v = json_loads(s, JSON_DECODE_ANY, NULL);
    return v ? v : json_string(s);
}

static int int_flag(const pg_args *a, const char *flag, json_t *spec, const char *key)
{
    const char *v = pg_args_get(a, flag);
    if (!v) return PG_CLI_OK;
    char *end;
    long long n = strtoll(v, &end, 10);
    if (end == v || *end || n < 0)
        return pg_cli_error(PG_CLI_USAGE, "--%s must be a non-negative integer, got '%s'", flag, v);
    return set_path(spec, key, json_integer(n));
}

static int build_spec(const pg_args *a, json_t **out)
{
    json_t *spec;
    const char *file = pg_args_get(a, "spec");
    if (file) {
        json_error_t je;
        spec = strcmp(file, "-") ? json_load_file(file, 0, &je) : json_loadf(stdin, 0, &je);
        if (!spec) return pg_cli_error(PG_CLI_USAGE, "%s: %s (line %d)", file, je.text, je.line);
        if (!json_is_object(spec)) {
            json_decref(spec);
            return pg_cli_error(PG_CLI_USAGE, "%s must hold a JSON object", file);
        }
    } else {
        spec = json_object();
    }
    int rc = PG_CLI_OK;
    const char *ds = pg_args_get(a, "dataset"), *m = pg_args_get(a, "method");
    const char *pub = pg_args_get(a, "public-dataset");
    if (ds) json_object_set_new(spec, "dataset_id", json_string(ds));
    if (pub) json_object_set_new(spec, "public_dataset_id", json_string(pub));
    if (m) json_object_set_new(spec, "method", json_string(m));
    if ((rc = int_flag(a, "steps", spec, "train.steps")) ||
        (rc = int_flag(a, "batch", spec, "train.batch_size")) ||
        (rc = int_flag(a, "seed", spec, "seed")) ||
        (rc = int_flag(a, "checkpoint-every", spec, "checkpoint_every")))
        goto fail;
    for (size_t i = 0; i < a->n; i++) {
        if (strcmp(a->name[i], "set")) continue;
        const char *eq = strchr(a->value[i], '=');
        if (!eq) {
            rc = pg_cli_error(PG_CLI_USAGE, "--set needs key=value, got '%s'", a->value[i]);
            goto fail;
        }
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)(eq - a->value[i]), a->value[i]);
        if ((rc = set_path(spec, key, parse_value(eq + 1)))) goto fail;
    }
    if (!json_object_get(spec, "dataset_id") || !json_object_get(spec, "method")) {
        rc = pg_cli_error(PG_CLI_USAGE, "a job needs --dataset ID and --method NAME (or --spec)");
        goto fail;
    }
    *out = spec;
    return PG_CLI_OK;
fail:
    json_decref(spec);
    return rc;
}

static double jnum(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static int utf8_locale(void)
{
    const char *v = getenv("LC_ALL");
    if (!v || !*v) v = getenv("LC_CTYPE");
    if (!v || !*v) v = getenv("LANG");
    return v &&
           (strstr(v, "UTF-8") || strstr(v, "utf8") || strstr(v, "UTF8") || strstr(v, "utf-8"));
}

/* One status line: "job_x running 120/400 [####....] loss 0.1234 eps 0 ETA 12s". */
static void render(FILE *f, json_t *job, int tty)
{
    json_t *p = json_object_get(job, "progress");
    double step = jnum(p, "step"), total = jnum(p, "total_steps"), loss = jnum(p, "loss");
    double eps = jnum(p, "epsilon_spent"), eta = jnum(p, "eta_seconds");
    const char *st = json_string_value(json_object_get(job, "status"));
    char bar[33] = "";
    if (tty) {
        int fill = total > 0 && step >= 0 ? (int)(30.0 * step / total) : 0;
        if (fill > 30) fill = 30;
        bar[0] = '[';
        for (int i = 0; i < 30; i++) bar[1 + i] = i < fill ? '#' : '.';
        bar[31] = ']';
        bar[32] = '\0';
    }
    fprintf(f, "%s%-9s %s step %.0f/%.0f", tty ? "\r\033[K" : "", st ? st : "?", bar,
            isnan(step) ? 0.0 : step, isnan(total) ? 0.0 : total);
    if (!isnan(loss)) fprintf(f, "  loss %.4g", loss);
    if (!isnan(eps)) fprintf(f, "  %s spent %.4g", utf8_locale() ? "\u03b5" : "eps", eps);
    if (!isnan(eta) && eta > 0) fprintf(f, "  ETA %.0fs", eta);
    if (!tty) fputc('\n', f);
    fflush(f);
}

typedef struct watch {
    char line[1 << 20];
    size_t len;
    char event[32];
    char id[128];      /* the SSE "last event ID buffer": the latest id: line */
    char last_id[128]; /* the id of the last event handled: Last-Event-ID */
    json_t *last;
    int tty, quiet, done;
    long events;    /* events handled so far */
    int shown_tick; /* piped output: the last WATCH_TICKS bucket printed, -1 none */
    char shown_status[16];
} watch;

/* Piped output (not a terminal) prints a line per 1 / WATCH_TICKS of the
 * steps, plus every change of status: a log, not one line per event. */
#define WATCH_TICKS 20

/* Whether a piped watch prints this update. */
static int worth_a_line(watch *w, json_t *j)
{
    const char *st = json_string_value(json_object_get(j, "status"));
    json_t *p = json_object_get(j, "progress");
    double step = jnum(p, "step"), total = jnum(p, "total_steps");
    int tick = total > 0 && step >= 0 ? (int)(WATCH_TICKS * fmin(step / total, 1.0)) : 0;
    int changed = st && strcmp(st, w->shown_status);
    if (!changed && tick <= w->shown_tick) return 0;
    w->shown_tick = tick;
    snprintf(w->shown_status, sizeof w->shown_status, "%s", st ? st : "");
    return 1;
}

static void on_line(watch *w)
{
    if (!w->line[0]) { /* end of an event */
        w->event[0] = '\0';
    } else if (!strncmp(w->line, "id:", 3)) {
        const char *e = w->line + 3;
        if (*e == ' ') e++;
        snprintf(w->id, sizeof w->id, "%s", e);
    } else if (!strncmp(w->line, "event:", 6)) {
        const char *e = w->line + 6;
        while (*e == ' ') e++;
        snprintf(w->event, sizeof w->event, "%s", e);
    } else if (!strncmp(w->line, "data:", 5)) {
        json_t *j = json_loads(w->line + 5, 0, NULL);
        if (!j) return;
        if (!strcmp(w->event, "warning")) {
            /* A trainer's warning, as it is recorded (no id: not a state;
             * the final view lists it again). */
            if (!w->quiet) {
                if (w->tty && w->events) fputc('\n', stderr);
                pg_human_warning(stderr, "privgen: ", j);
            }
            json_decref(j);
            return;
        }
        if (!strcmp(w->event, "closed")) {
            /* The server ended the stream with a problem object (the token
             * was revoked, the job deleted): not a state. The reconnect
             * that follows gets the same answer as an HTTP status. */
            const char *d = json_string_value(json_object_get(j, "detail"));
            if (!w->quiet)
                fprintf(stderr, "\nprivgen: the server closed the event stream: %s\n", d ? d : "");
            json_decref(j);
            return;
        }
        int same = w->last && json_equal(w->last, j); /* `done` repeats the last update */
        json_decref(w->last);
        w->last = j;
        /* Only now, with its data handled, is the event seen: a stream cut
         * between its id and its data resumes before it. */
        snprintf(w->last_id, sizeof w->last_id, "%s", w->id);
        w->events++;
        if (!w->quiet && !same && (w->tty || worth_a_line(w, j))) render(stderr, j, w->tty);
        if (!strcmp(w->event, "done")) w->done = 1;
    }
}

static size_t on_sse(char *p, size_t size, size_t nmemb, void *ctx)
{
    watch *w = ctx;
    size_t n = size * nmemb;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n') {
            w->line[w->len] = '\0';
            if (w->len && w->line[w->len - 1] == '\r') w->line[w->len - 1] = '\0';
            on_line(w);
            w->len = 0;
        } else if (w->len + 1 < sizeof w->line) {
            w->line[w->len++] = p[i];
        }
    }
    return n;
}

static int is_terminal(const char *st)
{
    return st && (!strcmp(st, "succeeded") || !strcmp(st, "failed") || !strcmp(st, "cancelled"));
}

/* How long a watch keeps trying to reach a server it was connected to
 * (a restart, a failover behind a balancer) before it gives up. */
#define WATCH_OUTAGE_S 60

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* A note on stderr between progress lines (a terminal's bar is ended first,
 * and redrawn by the next update). */
static void say(watch *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(watch *w, const char *fmt, ...)
{
    if (w->quiet) return;
    if (w->tty && w->events) fputc('\n', stderr);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

/* Follows the SSE stream until the job ends, then prints the final job. Exit
 * 1 unless it succeeded. The stream may end early (a replica shutting down,
 * a proxy's timeout, a cut connection): the watch reconnects, sending the
 * id of the last event it handled as Last-Event-ID, so the server (any
 * replica) sends only later states: none is shown twice and none after it
 * is skipped. A server that stops answering, or a balancer answering 502 to
 * 504 meanwhile, is retried every second for WATCH_OUTAGE_S; a server that
 * cannot be reached at the first attempt is an error at once. */
static int do_watch(pg_http *h, const char *id)
{
    watch *w = calloc(1, sizeof *w);
    if (!w) return pg_cli_error(PG_CLI_FAIL, "out of memory");
    w->tty = isatty(2);
    w->shown_tick = -1;
    char path[256];
    snprintf(path, sizeof path, "/v1/jobs/%s/events", id);
    int rc = PG_CLI_OK, connected = 0, idle = 0;
    double down_since = -1;
    while (!w->done) {
        char hdr[160];
        const char *hdrs[2] = {NULL, NULL};
        if (w->last_id[0]) {
            snprintf(hdr, sizeof hdr, "Last-Event-ID: %s", w->last_id);
            hdrs[0] = hdr;
        }
        long status = 0, before = w->events;
        const char *why = NULL;
        w->len = 0;
        w->event[0] = '\0';
        int unreachable = pg_http_stream(h, path, hdrs, on_sse, w, &status, &why) != PG_CLI_OK;
        int transient = unreachable || status == 502 || status == 503 || status == 504;
        if (transient && !connected) {
            rc = unreachable
                     ? pg_cli_error(PG_CLI_FAIL,
                                    "cannot reach %s: %s (is privgend running? see --url)", h->url,
                                    why)
                     : pg_cli_error(PG_CLI_FAIL, "the event stream answered HTTP %ld", status);
            break;
        }
        if (transient) {
            if (down_since < 0) {
                down_since = mono_s();
                say(w, "privgen: lost the server (%s); retrying every second for up to %d s\n",
                    why      ? why
                    : status ? "a gateway error"
                             : "no answer",
                    WATCH_OUTAGE_S);
            }
            if (mono_s() - down_since > WATCH_OUTAGE_S) {
                rc = pg_cli_error(PG_CLI_FAIL, "lost %s for more than %d s (%s)", h->url,
                                  WATCH_OUTAGE_S, why ? why : "no answer");
                break;
            }
            sleep(1);
            continue;
        }
        if (status != 200) {
            json_t *j = NULL;
            snprintf(path, sizeof path, "/v1/jobs/%s", id);
            rc = pg_http_json(h, "GET", path, NULL, &j); /* prints the problem */
            json_decref(j);
            if (!rc) rc = pg_cli_error(PG_CLI_FAIL, "the event stream answered HTTP %ld", status);
            break;
        }
        if (down_since >= 0) say(w, "privgen: reconnected\n");
        connected = 1;
        down_since = -1;
        if (w->last && is_terminal(json_string_value(json_object_get(w->last, "status")))) break;
        if (!w->done)
            say(w, "privgen: the event stream ended; reconnecting%s%s%s\n",
                w->last_id[0] ? " (resuming after event " : "", w->last_id,
                w->last_id[0] ? ")" : "");
        /* A stream that keeps ending without anything new (a server that
         * answers and closes) is not followed forever. */
        idle = w->events > before ? 0 : idle + 1;
        if (idle >= 1000) {
            rc = pg_cli_error(PG_CLI_FAIL, "the event stream keeps ending without news");
            break;
        }
        if (!w->done) sleep(1);
    }
    if (w->tty && !w->quiet) fputc('\n', stderr);
    if (!rc && w->last) {
        const char *st = json_string_value(json_object_get(w->last, "status"));
        const char *err = json_string_value(json_object_get(w->last, "error"));
        int ok = st && !strcmp(st, "succeeded");
        if (!ok)
            pg_cli_error(PG_CLI_FAIL, "job %s %s%s%s", id, st ? st : "ended", err ? ": " : "",
                         err ? err : "");
        if (h->json) {
            pg_http_print(h, json_incref(w->last));
        } else {
            pg_human_warnings(stderr, "privgen: ", w->last);
            if (ok) printf("job %s succeeded\n", id);
        }
        rc = ok ? PG_CLI_OK : PG_CLI_FAIL;
    } else if (!rc) {
        rc = pg_cli_error(PG_CLI_FAIL, "the event stream ended without a job update");
    }
    json_decref(w->last);
    free(w);
    return rc;
}

static void print_jobs(json_t *list)
{
    size_t i;
    json_t *j;
    printf("%-22s %-13s %-10s %-22s %s\n", "ID", "METHOD", "STATUS", "DATASET", "STEP");
    json_array_foreach(json_object_get(list, "items"), i, j)
    {
        json_t *p = json_object_get(j, "progress");
        printf("%-22s %-13s %-10s %-22s %.0f/%.0f\n", json_string_value(json_object_get(j, "id")),
               json_string_value(json_object_get(j, "method")),
               json_string_value(json_object_get(j, "status")),
               json_string_value(json_object_get(j, "dataset_id")), jnum(p, "step"),
               jnum(p, "total_steps"));
    }
    const char *next = json_string_value(json_object_get(list, "next_cursor"));
    if (next) fprintf(stderr, "(more: add --cursor %s)\n", next);
}

static const char HELP[] =
    "usage: privgen jobs SUBCOMMAND [options] [--json] [--url URL] [--token TOKEN]\n"
    "  create | dry-run  [--spec FILE] [--dataset ID] [--method NAME] [--steps N]\n"
    "                    [--batch N] [--seed S] [--checkpoint-every N]\n"
    "                    [--public-dataset ID]   (public data for latent flows)\n"
    "                    [--set key.path=VALUE ...]   (VALUE is JSON when it parses)\n"
    "  list [--status S] [--dataset ID] [--limit N] [--cursor C]\n"
    "  show ID           status, progress, privacy, checkpoints, warnings\n"
    "  cancel ID         request cancellation; prints the job's new state\n"
    "  delete ID         delete a finished job, its checkpoints and history (a queued\n"
    "                    one is cancelled and refunded first; a running one is\n"
    "                    refused: cancel it first). Its ledger entry stays: the\n"
    "                    dataset's budget is unchanged\n"
    "  watch ID          follow progress until the job ends (exit 1 unless it succeeded);\n"
    "                    a dropped stream is resumed after its last event (Last-Event-ID)\n"
    "Without --json, create prints the job id, and show, dry-run, cancel and list a\n"
    "few readable lines; --json prints the server's JSON response instead.\n"
    "The parameters --set accepts, with their defaults: privgen methods METHOD.\n";

int pg_cli_jobs(int argc, char **argv)
{
    static const char *const valued[] = {
        "spec",  "dataset", "method",           "steps",          "batch", "seed", "set", "status",
        "limit", "cursor",  "checkpoint-every", "public-dataset", NULL};
    static const char *const usage =
        "usage: privgen jobs create|dry-run|list|show|cancel|delete|watch ... (see README)";
    if (pg_cli_sub_help(argc, argv, pg_cli_jobs_subhelp)) return PG_CLI_OK;
    pg_args a;
    int prc = pg_args_parse(argc, argv, valued, NULL, HELP, &a);
    if (prc) return prc == PG_ARGS_HELP ? PG_CLI_OK : prc;
    if (a.npos < 1) return pg_cli_error(PG_CLI_USAGE, "%s", usage);
    const char *sub = a.pos[0];
    int with_id = !strcmp(sub, "show") || !strcmp(sub, "cancel") || !strcmp(sub, "watch") ||
                  !strcmp(sub, "delete");
    int creating = !strcmp(sub, "create") || !strcmp(sub, "dry-run");
    if (!with_id && !creating && strcmp(sub, "list"))
        return pg_cli_error(PG_CLI_USAGE, "unknown subcommand '%s'; %s", sub, usage);
    if (with_id && a.npos != 2) return pg_cli_error(PG_CLI_USAGE, "usage: privgen jobs %s ID", sub);
    if (!with_id && a.npos != 1)
        return pg_cli_error(PG_CLI_USAGE, "jobs %s takes no positional arguments", sub);
    if (with_id && pg_http_check_id(a.pos[1])) return PG_CLI_USAGE;
    json_t *spec = NULL, *out = NULL;
    int rc;
    if (creating && (rc = build_spec(&a, &spec))) return rc;
    pg_http h;
    if ((rc = pg_http_open(&a, &h))) {
        json_decref(spec);
        return rc;
    }
    char path[768];
    if (creating) {
        rc = pg_http_json(&h, "POST", !strcmp(sub, "create") ? "/v1/jobs" : "/v1/jobs?dry_run=true",
                          spec, &out);
        if (!rc && !h.json) {
            if (!strcmp(sub, "create"))
                printf("%s\n", json_string_value(json_object_get(out, "id")));
            else
                pg_human_dry_run(out);
            json_decref(out);
            out = NULL;
        }
    } else if (!strcmp(sub, "list")) {
        static const char *const q[] = {"status", "dataset", "limit", "cursor", NULL};
        static const char *const qn[] = {"status", "dataset_id", "limit", "cursor", NULL};
        pg_http_list_path(path, sizeof path, "/v1/jobs", &a, q, qn);
        rc = pg_http_json(&h, "GET", path, NULL, &out);
        if (!rc && !h.json) {
            print_jobs(out);
            json_decref(out);
            out = NULL;
        }
    } else if (!strcmp(sub, "watch")) {
        rc = do_watch(&h, a.pos[1]);
    } else if (!strcmp(sub, "delete")) {
        snprintf(path, sizeof path, "/v1/jobs/%s", a.pos[1]);
        rc = pg_http_json(&h, "DELETE", path, NULL, &out);
        json_decref(out);
        out = NULL;
        if (!rc && !h.json)
            printf("%s deleted\n", a.pos[1]);
        else if (!rc)
            out = json_pack("{s:s,s:b}", "id", a.pos[1], "deleted", 1);
    } else {
        snprintf(path, sizeof path, "/v1/jobs/%s%s", a.pos[1],
                 !strcmp(sub, "cancel") ? "/cancel" : "");
        rc = pg_http_json(&h, !strcmp(sub, "cancel") ? "POST" : "GET", path, NULL, &out);
        if (!rc && !h.json) {
            if (!strcmp(sub, "cancel"))
                pg_human_cancel(a.pos[1], out);
            else
                pg_human_job(out);
            json_decref(out);
            out = NULL;
        }
    }
    if (!rc && out) rc = pg_http_print(&h, out);
    json_decref(spec);
    pg_http_close(&h);
    return rc;
}
