/* cli/cli.c - option parsing and output helpers shared by all commands. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int pg_cli_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("privgen: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

int pg_cli_help(int argc, char **argv, const char *help)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(help, stdout);
            return 1;
        }
    return 0;
}

int pg_cli_sub_help(int argc, char **argv, const pg_cli_subhelp *subs)
{
    int help = 0;
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) help = 1;
    if (!help) return 0;
    /* The first word naming a subcommand: options and their values may come
     * before it (privgen jobs --url URL show ID --help). */
    for (int i = 0; i < argc; i++) {
        if (argv[i][0] == '-') continue;
        for (size_t k = 0; subs[k].name; k++)
            if (!strcmp(subs[k].name, argv[i])) {
                fputs(subs[k].text, stdout);
                return 1;
            }
    }
    return 0;
}

int pg_cli_parse(int argc, char **argv, const char *const *allowed, pg_cli_opts *out)
{
    pg_cli_opts o = {0};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || !a[2])
            return pg_cli_error(PG_CLI_USAGE, "unexpected argument '%s'", a);
        const char *name = a + 2;
        int known = 0;
        for (size_t k = 0; allowed[k]; k++)
            if (strcmp(allowed[k], name) == 0) known = 1;
        if (!known) return pg_cli_error(PG_CLI_USAGE, "unknown option --%s", name);
        if (i + 1 >= argc) return pg_cli_error(PG_CLI_USAGE, "option --%s needs a value", name);
        for (size_t k = 0; k < o.n; k++)
            if (strcmp(o.name[k], name) == 0)
                return pg_cli_error(PG_CLI_USAGE, "option --%s given twice", name);
        if (o.n == PG_CLI_MAX_OPTS) return pg_cli_error(PG_CLI_USAGE, "too many options");
        o.name[o.n] = name;
        o.value[o.n++] = argv[++i];
    }
    *out = o;
    return PG_CLI_OK;
}

const char *pg_cli_get(const pg_cli_opts *o, const char *name)
{
    for (size_t k = 0; k < o->n; k++)
        if (strcmp(o->name[k], name) == 0) return o->value[k];
    return NULL;
}

int pg_cli_double(const pg_cli_opts *o, const char *name, int required, double *out)
{
    const char *v = pg_cli_get(o, name);
    if (!v) return required ? pg_cli_error(PG_CLI_USAGE, "missing --%s", name) : PG_CLI_OK;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno == ERANGE || !isfinite(x))
        return pg_cli_error(PG_CLI_USAGE, "--%s must be a finite number, got '%s'", name, v);
    *out = x;
    return PG_CLI_OK;
}

int pg_cli_u64(const pg_cli_opts *o, const char *name, int required, uint64_t *out)
{
    const char *v = pg_cli_get(o, name);
    if (!v) return required ? pg_cli_error(PG_CLI_USAGE, "missing --%s", name) : PG_CLI_OK;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (end == v || *end || errno == ERANGE || v[0] == '-' || v[0] == '+' || v[0] == ' ')
        return pg_cli_error(PG_CLI_USAGE, "--%s must be a non-negative integer, got '%s'", name, v);
    *out = (uint64_t)x;
    return PG_CLI_OK;
}

int pg_cli_choice(const pg_cli_opts *o, const char *name, const char *const *choices,
                  const char *dflt, const char **out)
{
    const char *v = pg_cli_get(o, name);
    if (!v) {
        if (!dflt) return pg_cli_error(PG_CLI_USAGE, "missing --%s", name);
        *out = dflt;
        return PG_CLI_OK;
    }
    for (size_t k = 0; choices[k]; k++)
        if (strcmp(choices[k], v) == 0) {
            *out = choices[k];
            return PG_CLI_OK;
        }
    char list[256] = "";
    for (size_t k = 0; choices[k]; k++) {
        strncat(list, k ? "|" : "", sizeof list - strlen(list) - 1);
        strncat(list, choices[k], sizeof list - strlen(list) - 1);
    }
    return pg_cli_error(PG_CLI_USAGE, "--%s must be one of %s, got '%s'", name, list, v);
}

int pg_cli_emit(json_t *obj)
{
    if (!obj) return pg_cli_error(PG_CLI_FAIL, "out of memory building the JSON output");
    char *s = json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(17));
    json_decref(obj);
    if (!s) return pg_cli_error(PG_CLI_FAIL, "could not serialize the JSON output");
    int ok = puts(s) >= 0 && fflush(stdout) == 0;
    free(s);
    return ok ? PG_CLI_OK : pg_cli_error(PG_CLI_FAIL, "could not write to stdout");
}
