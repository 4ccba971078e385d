/* cli/cli.h - shared plumbing of the `privgen` command-line tool.
 *
 * Every command prints exactly one JSON object on stdout when it succeeds and
 * nothing otherwise. Exit codes: PG_CLI_OK (0) success, PG_CLI_FAIL (1) the
 * request was valid but could not be served (I/O, numerical failure),
 * PG_CLI_USAGE (2) bad arguments or bad input, with one clear sentence on
 * stderr and no file written. A command group is a function
 * `int fn(int argc, char **argv)` registered in main.c's table, so later
 * groups (e.g. HTTP client commands) plug in without touching the others.
 */
#ifndef PG_CLI_CLI_H
#define PG_CLI_CLI_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

enum { PG_CLI_OK = 0, PG_CLI_FAIL = 1, PG_CLI_USAGE = 2 };

#define PG_CLI_MAX_OPTS 16

/* Parsed `--name value` pairs. `allowed` is a NULL-terminated list of option
 * names without the dashes; anything else, a missing value or a repeated
 * option is a usage error. */
typedef struct pg_cli_opts {
    const char *name[PG_CLI_MAX_OPTS];
    const char *value[PG_CLI_MAX_OPTS];
    size_t n;
} pg_cli_opts;

int pg_cli_parse(int argc, char **argv, const char *const *allowed, pg_cli_opts *out);
const char *pg_cli_get(const pg_cli_opts *o, const char *name);

/* Typed getters: return PG_CLI_OK, or print a usage error and return
 * PG_CLI_USAGE. `required` = 0 leaves *out untouched when the option is absent. */
int pg_cli_double(const pg_cli_opts *o, const char *name, int required, double *out);
int pg_cli_u64(const pg_cli_opts *o, const char *name, int required, uint64_t *out);
int pg_cli_choice(const pg_cli_opts *o, const char *name, const char *const *choices,
                  const char *dflt, const char **out);

/* 1 (after printing `help` on stdout) when argv holds --help or -h: the
 * command then exits PG_CLI_OK without doing anything else. */
int pg_cli_help(int argc, char **argv, const char *help);

/* A subcommand's own help: usage, its options, an example. */
typedef struct pg_cli_subhelp {
    const char *name, *text;
} pg_cli_subhelp;

/* 1 (after printing the subcommand's text on stdout) when argv holds --help or
 * -h and a word that is not an option names an entry of `subs` (terminated by
 * {NULL, NULL}; the first such word counts); 0 otherwise, so the caller falls
 * back to the group's help. */
int pg_cli_sub_help(int argc, char **argv, const pg_cli_subhelp *subs);

/* cli/subhelp.c */
extern const pg_cli_subhelp pg_cli_datasets_subhelp[], pg_cli_jobs_subhelp[];

/* Prints "privgen: <message>" on stderr and returns `code`. */
int pg_cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the object as one line of JSON, releases it, returns PG_CLI_OK
 * (PG_CLI_FAIL if it is NULL or cannot be printed). */
int pg_cli_emit(json_t *obj);

int pg_cli_privacy(int argc, char **argv);
int pg_cli_privatize(int argc, char **argv);
int pg_cli_methods(int argc, char **argv);

#endif
