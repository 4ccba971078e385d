/* cli/cmd_report.c - `privgen report`: start a quality report of a job
 * against a dataset, follow it, and write report.json and its figures into
 * a directory (docs/reports.md); `privgen report delete` removes one. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/http.h"
#include "engine/data/file.h"

static const char help[] =
    "usage: privgen report JOB_ID --against DATASET_ID [-n N] [--seed S] [-o DIR]\n"
    "                      [--no-utility] [--no-wait] [--json]\n"
    "  Compares N synthetic rows of the job (default 10000) with the rows of\n"
    "  DATASET_ID (same shape): per-column KS/W1 (TV for categories), correlations,\n"
    "  sliced W2 and Sinkhorn with their noise floors, utility, a memorisation\n"
    "  check, figures. A job on a typed table is reported by schema column (names,\n"
    "  categories, the label's accuracy beside the majority rate); its synthetic\n"
    "  rows are those `privgen samples JOB_ID -n N --seed S` gives.\n"
    "  Follows the report (progress on stderr), then writes DIR/report.json and\n"
    "  every figure as DIR/<name>.png (DIR defaults to the report id; it is\n"
    "  created). --no-wait prints the queued report and returns. --no-utility\n"
    "  skips the train-on-synthetic accuracy (about half the time on images).\n"
    "  Against a public dataset any token that reads the job may ask; against a\n"
    "  private one only an admin token, and the report is not differentially\n"
    "  private (it says so in report.json and on every figure).\n"
    "usage: privgen report delete JOB_ID REPORT_ID [--json]\n"
    "  Deletes the report and its figures (admin token). A running report is\n"
    "  refused: cancel it first (POST .../reports/REPORT_ID/cancel).\n";

/* `privgen report delete JOB_ID REPORT_ID`. */
static int delete_report(pg_args *a)
{
    if (a->npos != 3 || pg_args_get(a, "against") || pg_args_get(a, "n") ||
        pg_args_get(a, "seed") || pg_args_get(a, "out") || pg_args_has(a, "no-wait") ||
        pg_args_has(a, "no-utility"))
        return pg_cli_error(PG_CLI_USAGE, "usage: privgen report delete JOB_ID REPORT_ID [--json]");
    if (pg_http_check_id(a->pos[1]) || pg_http_check_id(a->pos[2])) return PG_CLI_USAGE;
    pg_http h;
    int rc = pg_http_open(a, &h);
    if (rc) return rc;
    char path[512];
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s", a->pos[1], a->pos[2]);
    json_t *out = NULL;
    rc = pg_http_json(&h, "DELETE", path, NULL, &out);
    json_decref(out);
    pg_http_close(&h);
    if (rc) return rc;
    if (!h.json) {
        printf("%s deleted\n", a->pos[2]);
        return PG_CLI_OK;
    }
    return pg_http_print(&h, json_pack("{s:s,s:b}", "id", a->pos[2], "deleted", 1));
}

static int mkdir_p(const char *dir)
{
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

static int digits(const char *v)
{
    return v && *v && strspn(v, "0123456789") == strlen(v) && strlen(v) < 20;
}

static double num_at(json_t *o, const char *a, const char *b, const char *c)
{
    json_t *v = json_object_get(json_object_get(json_object_get(o, a), b), c);
    return json_is_number(v) ? json_number_value(v) : -1;
}

static double num_of(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* One line per named column (typed jobs): the column's figure and its
 * real and synthetic summary (mean, or the most frequent category). */
static void column_lines(json_t *cols)
{
    size_t i;
    json_t *c;
    json_array_foreach(cols, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        const char *kind = json_string_value(json_object_get(c, "kind"));
        if (!name || !kind) continue;
        if (!strcmp(kind, "numeric")) {
            fprintf(stderr, "    %-26s KS %-6.3f W1 %-9.4g mean real %.4g, synthetic %.4g", name,
                    num_of(c, "ks"), num_of(c, "w1"), num_of(c, "mean_real"),
                    num_of(c, "mean_synthetic"));
            double mr = num_of(c, "missing_real"), ms = num_of(c, "missing_synthetic");
            if (mr > 0 || ms > 0) fprintf(stderr, "; missing real %.3f, synthetic %.3f", mr, ms);
            fputc('\n', stderr);
            continue;
        }
        json_t *fr = json_object_get(c, "freq_real"), *fs = json_object_get(c, "freq_synthetic");
        json_t *names = json_object_get(c, "categories");
        size_t top_r = 0, top_s = 0;
        for (size_t k = 1; k < json_array_size(fr); k++) {
            if (json_number_value(json_array_get(fr, k)) >
                json_number_value(json_array_get(fr, top_r)))
                top_r = k;
            if (json_number_value(json_array_get(fs, k)) >
                json_number_value(json_array_get(fs, top_s)))
                top_s = k;
        }
        const char *nr = json_string_value(json_array_get(names, top_r)),
                   *ns = json_string_value(json_array_get(names, top_s));
        char br[32], bs[32];
        snprintf(br, sizeof br, "%zu", top_r);
        snprintf(bs, sizeof bs, "%zu", top_s);
        fprintf(
            stderr, "    %-26s TV %-6.3f %-12s most frequent real %s (%.2f), synthetic %s (%.2f)\n",
            name, num_of(c, "tv"), "", nr ? nr : br, json_number_value(json_array_get(fr, top_r)),
            ns ? ns : bs, json_number_value(json_array_get(fs, top_s)));
    }
}

/* The headline figures on stderr (readable mode). */
static void summary(json_t *view)
{
    json_t *res = json_object_get(view, "result");
    json_t *m = json_object_get(res, "marginals");
    if (m && json_is_number(json_object_get(m, "mean_ks")))
        fprintf(stderr, "  per column: mean KS %.4g, max KS %.4g, mean W1 %.4g\n",
                json_number_value(json_object_get(m, "mean_ks")),
                json_number_value(json_object_get(m, "max_ks")),
                json_number_value(json_object_get(m, "mean_w1")));
    if (m && json_is_number(json_object_get(m, "mean_tv"))) {
        size_t i, nc = 0;
        json_t *c;
        json_array_foreach(json_object_get(m, "columns"), i, c)
        {
            const char *kind = json_string_value(json_object_get(c, "kind"));
            nc += kind && !strcmp(kind, "categorical");
        }
        fprintf(stderr, "  categories: mean TV %.4g over %zu categorical columns\n",
                num_of(m, "mean_tv"), nc);
    }
    json_t *p = json_object_get(res, "pairwise");
    if (p && json_is_number(json_object_get(p, "pearson_mean_abs_diff")))
        fprintf(stderr, "  correlations: mean |difference| %.4g over %lld pairs\n",
                json_number_value(json_object_get(p, "pearson_mean_abs_diff")),
                (long long)json_integer_value(json_object_get(p, "pearson_pairs")));
    if (p && json_is_number(json_object_get(p, "cramer_mean_abs_diff")))
        fprintf(stderr, "  Cramer's V: mean |difference| %.4g over %lld category pairs\n",
                json_number_value(json_object_get(p, "cramer_mean_abs_diff")),
                (long long)json_integer_value(json_object_get(p, "cramer_pairs")));
    double sw = num_at(res, "distribution", "sliced_w2", "synthetic");
    if (sw >= 0)
        fprintf(stderr, "  sliced W2 %.4g (noise floor %.4g)\n", sw,
                num_at(res, "distribution", "sliced_w2", "noise_floor"));
    double sk = num_at(res, "distribution", "sinkhorn_divergence", "synthetic");
    if (sk >= 0)
        fprintf(stderr, "  Sinkhorn divergence %.4g (noise floor %.4g)\n", sk,
                num_at(res, "distribution", "sinkhorn_divergence", "noise_floor"));
    json_t *u = json_object_get(res, "utility");
    if (u) {
        const char *label = json_string_value(json_object_get(u, "label"));
        char what[200] = "";
        if (label) snprintf(what, sizeof what, " of %.150s", label);
        fprintf(stderr,
                "  utility: accuracy%s trained on synthetic %.4g, on real %.4g; always guessing "
                "the most frequent class %.4g\n",
                what, num_of(u, "train_synthetic_accuracy"), num_of(u, "train_real_accuracy"),
                num_of(u, "majority_rate"));
    }
    json_t *mem = json_object_get(res, "memorisation");
    if (mem)
        fprintf(stderr,
                "  memorisation: %.1f%% of synthetic rows closer than real-to-real's 5th "
                "percentile (about 5%% expected)\n",
                100 * json_number_value(json_object_get(mem, "share_below")));
    json_t *cols = json_object_get(m, "columns");
    if (json_is_array(cols) && json_array_size(cols) > 0 &&
        json_is_string(json_object_get(json_array_get(cols, 0), "name"))) {
        fprintf(stderr, "  by column (real vs synthetic):\n");
        column_lines(cols);
    }
}

int pg_cli_report(int argc, char **argv)
{
    static const char *const valued[] = {"against", "n", "seed", "out", NULL};
    static const char *const flags[] = {"no-wait", "no-utility", NULL};
    pg_args a;
    int prc = pg_args_parse(argc, argv, valued, flags, help, &a);
    if (prc) return prc == PG_ARGS_HELP ? PG_CLI_OK : prc;
    /* No job id reads "delete" (ids are job_<hex>). */
    if (a.npos >= 1 && !strcmp(a.pos[0], "delete")) return delete_report(&a);
    if (a.npos != 1 || !pg_args_get(&a, "against"))
        return pg_cli_error(PG_CLI_USAGE, "usage: privgen report JOB_ID --against DATASET_ID "
                                          "[-n N] [--seed S] [-o DIR] (see --help)");
    if (pg_http_check_id(a.pos[0]) || pg_http_check_id(pg_args_get(&a, "against")))
        return PG_CLI_USAGE;
    json_t *body = json_pack("{s:s}", "against", pg_args_get(&a, "against"));
    if (pg_args_has(&a, "no-utility")) json_object_set_new(body, "utility", json_false());
    static const char *const ints[] = {"n", "seed"};
    for (int i = 0; i < 2; i++) {
        const char *v = pg_args_get(&a, ints[i]);
        if (!v) continue;
        if (!digits(v)) {
            json_decref(body);
            return pg_cli_error(PG_CLI_USAGE, "--%s must be a non-negative integer, got '%s'",
                                ints[i], v);
        }
        json_object_set_new(body, ints[i], json_integer((json_int_t)strtoll(v, NULL, 10)));
    }
    pg_http h;
    int rc = pg_http_open(&a, &h);
    if (rc) {
        json_decref(body);
        return rc;
    }
    char path[512];
    snprintf(path, sizeof path, "/v1/jobs/%s/reports", a.pos[0]);
    json_t *view = NULL;
    rc = pg_http_json(&h, "POST", path, body, &view);
    json_decref(body);
    if (rc) {
        pg_http_close(&h);
        return rc;
    }
    char rid[64];
    snprintf(rid, sizeof rid, "%s", json_string_value(json_object_get(view, "id")));
    if (pg_args_has(&a, "no-wait")) {
        pg_http_close(&h);
        if (h.json) return pg_http_print(&h, view);
        printf("%s queued\n", rid);
        json_decref(view);
        return PG_CLI_OK;
    }
    /* Follow it: one line per stage (a rewritten line on a terminal). */
    snprintf(path, sizeof path, "/v1/jobs/%s/reports/%s", a.pos[0], rid);
    int tty = isatty(2);
    char last[64] = "";
    const char *st = "queued";
    for (;;) {
        st = json_string_value(json_object_get(view, "status"));
        if (!st) st = "failed";
        if (strcmp(st, "queued") && strcmp(st, "running")) break;
        const char *stage = json_string_value(json_object_get(view, "stage"));
        double p = json_number_value(json_object_get(view, "progress"));
        char line[64];
        snprintf(line, sizeof line, "%s %s", st, stage ? stage : "");
        if (tty)
            fprintf(stderr, "\r%s: %-28s %3.0f%%", rid, line, 100 * p);
        else if (strcmp(line, last))
            fprintf(stderr, "%s: %s\n", rid, line);
        snprintf(last, sizeof last, "%s", line);
        struct timespec ts = {0, 500 * 1000000L};
        nanosleep(&ts, NULL);
        json_decref(view);
        view = NULL;
        if ((rc = pg_http_json(&h, "GET", path, NULL, &view))) {
            pg_http_close(&h);
            return rc;
        }
    }
    if (tty) fputc('\n', stderr);
    if (strcmp(st, "succeeded")) {
        const char *e = json_string_value(json_object_get(view, "error"));
        rc = pg_cli_error(PG_CLI_FAIL, "report %s %s%s%s", rid, st, e ? ": " : "", e ? e : "");
        json_decref(view);
        pg_http_close(&h);
        return rc;
    }
    const char *dir = pg_args_get(&a, "out");
    if (!dir) dir = rid;
    if (mkdir_p(dir)) {
        json_decref(view);
        pg_http_close(&h);
        return pg_cli_error(PG_CLI_FAIL, "cannot create %s: %s", dir, strerror(errno));
    }
    char file[1024];
    pg_error e = {0};
    char *text = json_dumps(view, JSON_INDENT(2) | JSON_SORT_KEYS);
    snprintf(file, sizeof file, "%s/report.json", dir);
    if (!text || pg_file_write_atomic(file, text, strlen(text), &e)) {
        free(text);
        json_decref(view);
        pg_http_close(&h);
        return pg_cli_error(PG_CLI_FAIL, "cannot write %s: %s", file, e.msg);
    }
    free(text);
    json_t *files = json_array();
    json_array_append_new(files, json_string(file));
    json_t *figs = json_object_get(view, "figures");
    size_t i;
    json_t *f;
    json_array_foreach(figs, i, f)
    {
        const char *name = json_string_value(f);
        if (!name || strchr(name, '/') || name[0] == '.') continue;
        char fp[1024];
        snprintf(fp, sizeof fp, "%s/figures/%s", path, name);
        pg_http_resp r;
        if ((rc = pg_http_do(&h, "GET", fp, NULL, NULL, 0, &r))) break;
        if (r.status != 200) {
            rc = pg_http_fail(&r);
            pg_http_resp_free(&r);
            break;
        }
        snprintf(file, sizeof file, "%s/%s", dir, name);
        if (pg_file_write_atomic(file, r.body, r.len, &e)) {
            pg_http_resp_free(&r);
            rc = pg_cli_error(PG_CLI_FAIL, "cannot write %s: %s", file, e.msg);
            break;
        }
        pg_http_resp_free(&r);
        json_array_append_new(files, json_string(file));
    }
    if (!rc && json_is_false(json_object_get(view, "private")))
        fprintf(stderr, "privgen: note: %s\n",
                json_string_value(json_object_get(view, "privacy_note")));
    if (!rc && !h.json) {
        fprintf(stderr, "%s succeeded; wrote %zu files to %s\n", rid, json_array_size(files), dir);
        summary(view);
    }
    json_t *out =
        rc ? NULL
           : json_pack("{s:s,s:s,s:s,s:O}", "id", rid, "status", st, "dir", dir, "files", files);
    json_decref(files);
    json_decref(view);
    pg_http_close(&h);
    if (rc) return rc;
    if (h.json) return pg_http_print(&h, out);
    json_decref(out);
    return PG_CLI_OK;
}
