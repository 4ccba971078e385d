/* cli/human.c - a few readable lines per API response (see human.h). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cli/human.h"

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "?";
}

static double num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Rounded to 4 significant digits, in a rotating static buffer so several
 * can appear in one printf. */
static const char *r4(double v)
{
    static char b[8][32];
    static int i;
    i = (i + 1) % 8;
    pg_num_round(v, 4, b[i], sizeof b[i]);
    return b[i];
}

/* Exact but short (1e-05 stays 1e-05): for values a person typed. */
static const char *ex(double v)
{
    static char b[8][32];
    static int i;
    i = (i + 1) % 8;
    pg_num_short(v, b[i], sizeof b[i]);
    return b[i];
}

static const char *bytes(double v)
{
    static char b[4][32];
    static int i;
    i = (i + 1) % 4;
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (v >= 1024.0 && u < 4) v /= 1024.0, u++;
    snprintf(b[i], sizeof b[i], u ? "%.1f %s" : "%.0f %s", v, unit[u]);
    return b[i];
}

static void kv(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void kv(const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("  %-12s ", key);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

void pg_human_warning(FILE *f, const char *prefix, json_t *w)
{
    const char *m = json_string_value(w);
    if (!m) m = json_string_value(json_object_get(w, "message"));
    const char *code = json_string_value(json_object_get(w, "code"));
    char *dump = m ? NULL : json_dumps(w, JSON_COMPACT);
    char clean[1024];
    pg_num_denoise(m ? m : dump ? dump : "?", clean, sizeof clean);
    /* a trainer's warning names its code, which the docs explain */
    fprintf(f, "%swarning%s%s%s: %s\n", prefix, code ? " (" : "", code ? code : "", code ? ")" : "",
            clean);
    free(dump);
}

void pg_human_warnings(FILE *f, const char *prefix, json_t *job)
{
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(job, "warnings"), i, w)
    {
        pg_human_warning(f, prefix, w);
    }
}

/* "epsilon 1, delta 1e-05 (poisson_subsampled_gaussian, noise multiplier
 * 1.839, sampling rate 0.05, 50 steps)" or the local/public equivalent. */
static void privacy_line(json_t *p)
{
    if (!json_is_object(p)) {
        kv("privacy", "?");
        return;
    }
    const char *mech = str(p, "mechanism");
    if (json_is_true(json_object_get(p, "charges"))) {
        kv("privacy", "epsilon %s, delta %s (%s: noise multiplier %s, sampling rate %s, %s steps)",
           r4(num(p, "epsilon")), ex(num(p, "delta")), mech, r4(num(p, "noise_multiplier")),
           r4(num(p, "sampling_rate")), ex(num(p, "steps")));
    } else if (!strncmp(mech, "local", 5)) {
        kv("privacy", "local data, epsilon %s per row (%s); training spends no budget",
           r4(num(p, "epsilon")), mech);
        if (!isnan(num(p, "shuffle_epsilon")))
            kv("", "if the rows were shuffled: epsilon %s at delta %s (%s)",
               r4(num(p, "shuffle_epsilon")), ex(num(p, "shuffle_delta")), str(p, "shuffle_bound"));
    } else {
        kv("privacy", "public data: no privacy claim, no budget spent");
    }
}

void pg_human_job(json_t *j)
{
    json_t *pr = json_object_get(j, "progress");
    printf("%s  %s  %s\n", str(j, "id"), str(j, "method"), str(j, "status"));
    kv("dataset", "%s%s%s", str(j, "dataset_id"),
       json_is_string(json_object_get(j, "public_dataset_id")) ? ", public data " : "",
       json_is_string(json_object_get(j, "public_dataset_id")) ? str(j, "public_dataset_id") : "");
    char loss[64] = "";
    if (!isnan(num(pr, "loss"))) snprintf(loss, sizeof loss, ", loss %s", r4(num(pr, "loss")));
    char eta[64] = "";
    if (num(pr, "eta_seconds") > 0)
        snprintf(eta, sizeof eta, ", ETA %.0f s", num(pr, "eta_seconds"));
    kv("progress", "step %s/%s%s%s", ex(num(pr, "step")), ex(num(pr, "total_steps")), loss, eta);
    privacy_line(json_object_get(j, "privacy"));
    if (json_is_true(json_object_get(json_object_get(j, "privacy"), "charges")))
        kv("", "spent so far: epsilon %s", r4(num(pr, "epsilon_spent")));
    json_t *ck = json_object_get(j, "checkpoints");
    if (json_array_size(ck))
        kv("checkpoints", "%zu, latest at step %s", json_array_size(ck),
           ex(num(json_array_get(ck, json_array_size(ck) - 1), "step")));
    else
        kv("checkpoints", "none");
    kv("created", "%s", str(j, "created_at"));
    if (json_is_string(json_object_get(j, "finished_at")))
        kv("finished", "%s", str(j, "finished_at"));
    if (json_is_string(json_object_get(j, "error"))) {
        char clean[1024];
        pg_num_denoise(str(j, "error"), clean, sizeof clean);
        kv("error", "%s", clean);
    }
    pg_human_warnings(stdout, "  ", j);
}

/* A typed table's columns, one line each: type, bounds or categories. */
static void human_columns(json_t *d)
{
    json_t *cols = json_object_get(d, "columns"), *c;
    const char *label = json_string_value(json_object_get(d, "label"));
    size_t i;
    json_array_foreach(cols, i, c)
    {
        const char *type = str(c, "type"), *name = str(c, "name");
        char what[160];
        if (!strcmp(type, "categorical")) {
            json_t *cats = json_object_get(c, "categories");
            snprintf(what, sizeof what, "%zu categories (%s, ...)", json_array_size(cats),
                     json_string_value(json_array_get(cats, 0)));
        } else if (!strcmp(type, "boolean")) {
            snprintf(what, sizeof what, "true/false");
        } else {
            snprintf(what, sizeof what, "%s to %s", ex(num(c, "min")), ex(num(c, "max")));
        }
        kv(i ? "" : "columns", "%s: %s, %s%s%s", name, type, what,
           json_is_true(json_object_get(c, "nullable")) ? ", may be missing" : "",
           label && !strcmp(name, label) ? " (label)" : "");
    }
}

void pg_human_dataset(json_t *d)
{
    json_t *p = json_object_get(d, "privacy"), *range = json_object_get(d, "range");
    char *shape = json_dumps(json_object_get(d, "shape"), JSON_COMPACT);
    printf("%s  %s\n", str(d, "id"), str(d, "name"));
    kv("rows", "%s of shape %s, range [%s, %s]", ex(num(d, "n")), shape ? shape : "?",
       ex(json_number_value(json_array_get(range, 0))),
       ex(json_number_value(json_array_get(range, 1))));
    free(shape);
    if (json_integer_value(json_object_get(d, "num_classes")) > 0)
        kv("classes", "%s", ex(num(d, "num_classes")));
    const char *model = str(p, "model");
    if (!strcmp(model, "central")) {
        json_t *b = json_object_get(p, "budget");
        kv("privacy", "central: raw rows; every job spends from a cap of epsilon %s, delta %s",
           ex(num(b, "epsilon")), ex(num(b, "delta")));
    } else if (!strcmp(model, "local") && !strcmp(str(p, "mechanism"), "per_column")) {
        kv("privacy",
           "local: rows privatized column by column by their owners, epsilon %s per "
           "row (basic composition)",
           ex(num(p, "epsilon")));
    } else if (!strcmp(model, "local")) {
        kv("privacy", "local: rows privatized by their owners with %s noise, epsilon %s per row",
           str(p, "mechanism"), ex(num(p, "epsilon")));
        kv("", "sensitivity %s, noise scale %s%s%s", ex(num(p, "sensitivity")),
           r4(num(p, "noise_scale")), num(p, "delta") > 0 ? ", delta " : "",
           num(p, "delta") > 0 ? ex(num(p, "delta")) : "");
        json_t *clip = json_object_get(p, "clip");
        if (clip)
            kv("", "rows clipped to %s radius %s; appended rows must declare the same",
               str(clip, "norm"), ex(num(clip, "radius")));
    } else {
        kv("privacy", "%s", model);
    }
    human_columns(d);
    kv("stored", "%s", bytes(num(d, "bytes")));
    kv("created", "%s", str(d, "created_at"));
}

void pg_human_append(json_t *a)
{
    double added = num(a, "rows_added"), n = num(a, "n");
    printf("appended %s row%s to %s: %s row%s in all\n", ex(added), added == 1 ? "" : "s",
           str(a, "dataset_id"), ex(n), n == 1 ? "" : "s");
    const char *dc = str(a, "declaration");
    if (!strcmp(dc, "matched"))
        kv("declaration", "matched the dataset's");
    else if (!strcmp(dc, "not checked"))
        kv("declaration", "not checked (none was sent)");
}

void pg_human_budget(const char *dataset_id, json_t *b)
{
    json_t *cap = json_object_get(b, "cap");
    printf("privacy budget of %s (%s)\n", dataset_id, str(b, "accountant"));
    kv("cap", "epsilon %s, delta %s", ex(num(cap, "epsilon")), ex(num(cap, "delta")));
    kv("spent", "epsilon %s", r4(num(b, "spent_epsilon")));
    kv("remaining", "epsilon %s", r4(num(b, "remaining_epsilon")));
    json_t *e = json_object_get(b, "entries");
    if (!json_array_size(e)) {
        kv("entries", "none");
        return;
    }
    printf("  %-22s %8s %9s %8s %8s %7s  %s\n", "JOB", "EPSILON", "DELTA", "NOISE", "RATE", "STEPS",
           "REFUNDED");
    size_t i;
    json_t *x;
    json_array_foreach(e, i, x)
    {
        printf("  %-22s %8s %9s %8s %8s %7s  %s\n", str(x, "job_id"), r4(num(x, "epsilon")),
               ex(num(x, "delta")), r4(num(x, "noise_multiplier")), r4(num(x, "sampling_rate")),
               ex(num(x, "steps")), json_is_true(json_object_get(x, "refunded")) ? "yes" : "no");
    }
}

void pg_human_dry_run(json_t *r)
{
    json_t *spec = json_object_get(r, "spec"), *train = json_object_get(spec, "train");
    json_t *plan = json_object_get(r, "plan"), *bud = json_object_get(r, "budget");
    printf("dry run: %s on %s (nothing was charged)\n", str(spec, "method"),
           str(spec, "dataset_id"));
    char batch[64] = "";
    if (!isnan(num(train, "batch_size")))
        snprintf(batch, sizeof batch, ", batch %s", ex(num(train, "batch_size")));
    kv("training", "%s steps%s", ex(num(plan, "steps")), batch);
    privacy_line(plan);
    if (json_is_object(bud))
        kv("budget", "spent %s + this job %s = %s of the cap %s: %s", r4(num(bud, "spent_epsilon")),
           r4(num(bud, "requested_epsilon")), r4(num(bud, "total_epsilon")),
           ex(num(bud, "cap_epsilon")),
           json_is_true(json_object_get(bud, "admissible")) ? "fits" : "does NOT fit (409)");
    if (!isnan(num(r, "memory_bytes"))) kv("memory", "about %s", bytes(num(r, "memory_bytes")));
    kv("seed", "%s", ex(num(spec, "seed")));
}

void pg_human_checkpoints(const char *job_id, json_t *list)
{
    json_t *items = json_object_get(list, "items");
    if (!json_array_size(items)) {
        printf("%s has no checkpoints\n", job_id);
        return;
    }
    printf("%8s %12s  %s\n", "STEP", "SIZE", "CREATED");
    size_t i;
    json_t *c;
    json_array_foreach(items, i, c)
    {
        printf("%8s %12s  %s\n", ex(num(c, "step")), bytes(num(c, "bytes")), str(c, "created_at"));
    }
}

void pg_human_cancel(const char *job_id, json_t *job)
{
    const char *st = str(job, "status");
    if (!strcmp(st, "cancelled"))
        printf("%s cancelled\n", job_id);
    else
        printf("%s %s (cancellation requested: it stops at its next step)\n", job_id, st);
}

static void param_line(json_t *p)
{
    char extra[512] = "";
    size_t k = 0;
    json_t *d = json_object_get(p, "default");
    if (d) {
        char *s = json_dumps(d, JSON_COMPACT | JSON_ENCODE_ANY);
        char clean[256];
        pg_num_denoise(s ? s : "?", clean, sizeof clean);
        k += (size_t)snprintf(extra + k, sizeof extra - k, "  default %s", clean);
        free(s);
    }
    json_t *en = json_object_get(p, "enum");
    if (json_array_size(en) && k < sizeof extra) {
        k += (size_t)snprintf(extra + k, sizeof extra - k, "  one of ");
        size_t i;
        json_t *v;
        json_array_foreach(en, i, v)
        {
            if (k >= sizeof extra) break;
            k += (size_t)snprintf(extra + k, sizeof extra - k, "%s%s", i ? "|" : "",
                                  json_is_string(v) ? json_string_value(v) : "?");
        }
    }
    double lo = num(p, "minimum"), hi = num(p, "maximum"), xlo = num(p, "exclusive_minimum");
    if ((!isnan(lo) || !isnan(hi) || !isnan(xlo)) && k < sizeof extra)
        k += (size_t)snprintf(extra + k, sizeof extra - k, "  in %s%s, %s]", isnan(xlo) ? "[" : "(",
                              isnan(xlo) ? (isnan(lo) ? "-inf" : ex(lo)) : ex(xlo),
                              isnan(hi) ? "inf" : ex(hi));
    if (json_is_true(json_object_get(p, "required")) && k < sizeof extra)
        snprintf(extra + k, sizeof extra - k, "  required");
    printf("  %-28s %-15s%s\n", str(p, "name"), str(p, "type"), extra);
    const char *desc = json_string_value(json_object_get(p, "description"));
    if (desc) printf("      %s\n", desc);
}

/* A method's "accepts" list joined by sep into acc[cap] (cut to fit; "?"
 * for a member that is not a string). */
static void accepts_text(const json_t *m, const char *sep, char *acc, size_t cap)
{
    acc[0] = '\0';
    size_t j;
    json_t *a;
    json_array_foreach(json_object_get(m, "accepts"), j, a)
    {
        strncat(acc, j ? sep : "", cap - strlen(acc) - 1);
        strncat(acc, json_is_string(a) ? json_string_value(a) : "?", cap - strlen(acc) - 1);
    }
}

int pg_human_methods(json_t *cat, const char *name)
{
    json_t *items = json_object_get(cat, "items"), *m;
    size_t i;
    if (!name) {
        printf("%-14s %-9s %s\n", "METHOD", "ACCEPTS", "SUMMARY");
        json_array_foreach(items, i, m)
        {
            char acc[64];
            accepts_text(m, ",", acc, sizeof acc);
            /* the summary up to its first ": " or ". ", at most 60 columns */
            const char *s = str(m, "summary"), *c1 = strstr(s, ": "), *c2 = strstr(s, ". ");
            size_t cut = strlen(s);
            if (c1 && (size_t)(c1 - s) < cut) cut = (size_t)(c1 - s);
            if (c2 && (size_t)(c2 - s) < cut) cut = (size_t)(c2 - s);
            int more = cut > 60;
            if (more)
                for (cut = 57; cut > 0 && s[cut] != ' ';) cut--;
            printf("%-14s %-9s %.*s%s\n", str(m, "name"), acc, (int)cut, s, more ? "..." : "");
        }
        printf("privgen methods NAME lists a method's parameters and defaults.\n");
        return 0;
    }
    json_array_foreach(items, i, m)
    {
        if (strcmp(str(m, "name"), name)) continue;
        char acc[64];
        accepts_text(m, ", ", acc, sizeof acc);
        printf("%s  (accepts %s data)\n  %s\n", name, acc, str(m, "summary"));
        printf("parameters (--set NAME=VALUE on `privgen jobs create`):\n");
        size_t j;
        json_t *p;
        json_array_foreach(json_object_get(m, "parameters"), j, p) param_line(p);
        return 0;
    }
    return -1;
}
