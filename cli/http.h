/* cli/http.h - the HTTP side of the `privgen` client: argument parsing with
 * positionals and flags, server/token resolution, one libcurl request.
 *
 * Server and token precedence: --url/--token, then PRIVGEN_URL/PRIVGEN_TOKEN,
 * then the file written by `privgen login` ($XDG_CONFIG_HOME/privgen/config or
 * ~/.config/privgen/config), then http://127.0.0.1:8080 and ./var/admin.token.
 * Exit codes follow cli.h: 1 for an API or transport error (the problem+json
 * detail and field errors are printed on stderr), 2 for usage.
 * Ownership: a pg_http_resp owns its body (free with pg_http_resp_free); a
 * pg_http owns its curl handle (pg_http_close). */
#ifndef PG_CLI_HTTP_H
#define PG_CLI_HTTP_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#define PG_ARGS_MAX 32

/* Parsed command line: positionals in order, options as name/value pairs
 * (value NULL for flags). Options in `valued` take a value (repeatable ones
 * such as --set are kept in order); `flags` take none. -n and -o are aliases
 * of --n and --out. --url, --token (valued) and --json (flag) are always
 * accepted. */
typedef struct pg_args {
    const char *pos[PG_ARGS_MAX];
    size_t npos;
    const char *name[PG_ARGS_MAX];
    const char *value[PG_ARGS_MAX];
    size_t n;
} pg_args;

#define PG_ARGS_HELP (-1)
/* --help/-h anywhere prints `help` on stdout and returns PG_ARGS_HELP (the
 * command then exits 0); other problems print a message and return
 * PG_CLI_USAGE. */
int pg_args_parse(int argc, char **argv, const char *const *valued, const char *const *flags,
                  const char *help, pg_args *out);
const char *pg_args_get(const pg_args *a, const char *name);
int pg_args_has(const pg_args *a, const char *name);

typedef struct pg_http {
    void *curl;
    char url[1024];
    char token[512];
    int json; /* --json given */
} pg_http;

typedef struct pg_http_resp {
    long status;
    char *body; /* NUL-terminated */
    size_t len;
    char content_type[128];
} pg_http_resp;

/* The config file path (no I/O); 0 on success. */
int pg_http_config_path(char *buf, size_t cap);
/* Resolves URL and token; 0 or PG_CLI_USAGE with a message. */
int pg_http_open(const pg_args *a, pg_http *h);
void pg_http_close(pg_http *h);

/* One request. body may be NULL. Returns 0 when a response arrived (any
 * status), PG_CLI_FAIL after printing the transport error. */
int pg_http_do(pg_http *h, const char *method, const char *path, const char *ctype,
               const void *body, size_t len, pg_http_resp *r);
void pg_http_resp_free(pg_http_resp *r);

/* POSTs the rest of f as the body, streamed: size bytes when known, chunked
 * when size < 0. extra_headers (e.g. {"X-Rows: 10", NULL}) may be NULL. */
int pg_http_upload(pg_http *h, const char *path, const char *ctype, FILE *f, long long size,
                   const char *const *extra_headers, pg_http_resp *r);

/* Prints "privgen: <detail>" and any field errors from a problem+json body
 * and returns PG_CLI_FAIL. */
int pg_http_fail(const pg_http_resp *r);

/* Request + JSON decode: 0 with *out set (caller decrefs) when the status is
 * 2xx and the body is JSON; otherwise prints the error and returns 1. */
int pg_http_json(pg_http *h, const char *method, const char *path, json_t *body, json_t **out);

/* Prints a JSON value on stdout (compact with --json, indented otherwise),
 * decrefs it and returns 0. */
int pg_http_print(const pg_http *h, json_t *v);

/* Reads a whole file ("-" = stdin), malloc'ed; 0 or PG_CLI_USAGE. */
int pg_http_slurp(const char *path, char **buf, size_t *len);

/* Streams GET path into a callback as it arrives (for SSE), with the extra
 * request headers (e.g. {"Last-Event-ID: x", NULL}; may be NULL). Prints
 * nothing: 0 when a response arrived (*status set; the body may have been
 * cut short, *why then says how), PG_CLI_FAIL with *status = 0 and *why when
 * the server could not be reached. */
int pg_http_stream(pg_http *h, const char *path, const char *const *headers,
                   size_t (*fn)(char *, size_t, size_t, void *), void *ctx, long *status,
                   const char **why);

/* PG_CLI_USAGE (with a message) unless id is 1-64 of [A-Za-z0-9_-]: ids go
 * into URL paths verbatim. */
int pg_http_check_id(const char *id);

/* Percent-encodes a query value or path segment; malloc'ed (NULL on OOM). */
char *pg_http_escape(const char *s);

/* A list route's path into path[cap]: base, then "?name=value&..." for each
 * option opts[i] (NULL-terminated) the arguments hold, sent as names[i]
 * (names NULL: the option's own name), values percent-encoded; base alone
 * when none is given. Like every path here, cut at cap (the server then
 * refuses it); a value that cannot be encoded (no memory) is left out. */
void pg_http_list_path(char *path, size_t cap, const char *base, const pg_args *a,
                       const char *const *opts, const char *const *names);

int pg_cli_login(int argc, char **argv);
int pg_cli_datasets(int argc, char **argv);
int pg_cli_tokens(int argc, char **argv);
int pg_cli_jobs(int argc, char **argv);
int pg_cli_samples(int argc, char **argv);
int pg_cli_checkpoints(int argc, char **argv);
int pg_cli_toy(int argc, char **argv);
int pg_cli_report(int argc, char **argv); /* cli/cmd_report.c */

#endif
