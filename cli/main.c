/* cli/main.c - `privgen` entry point: dispatches to one command group. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_table.h"
#include "cli/http.h"

typedef struct pg_cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    int json_only; /* always prints JSON: --json is accepted and changes nothing */
} pg_cli_command;

/* New command groups (e.g. the HTTP client commands) add a line here. */
static const pg_cli_command commands[] = {
    {"privacy", pg_cli_privacy,
     "epsilon|sigma|calibrate|shuffle|swd-sensitivity: privacy accounting", 1},
    {"privatize", pg_cli_privatize, "clip and noise rows locally before upload", 1},
    {"schema", pg_cli_schema, "propose|check: typed table schemas (columns, types, bounds)", 0},
    {"toy", pg_cli_toy, "halfcircle|rectangle|ellipse|gmm_circle: write public toy data", 0},
    {"login", pg_cli_login, "remember the server URL and token", 0},
    {"tokens", pg_cli_tokens, "list|create|revoke: API tokens and their expiry", 0},
    {"datasets", pg_cli_datasets, "create|append|list|show|delete|budget", 0},
    {"jobs", pg_cli_jobs, "create|dry-run|list|show|cancel|delete|watch", 0},
    {"samples", pg_cli_samples, "download synthetic samples (json, csv, npy, png)", 0},
    {"checkpoints", pg_cli_checkpoints, "list or download a job's checkpoints", 0},
    {"report", pg_cli_report, "quality report of a job against a dataset: JSON and figures", 0},
    {"methods", pg_cli_methods, "the training methods, their parameters and defaults", 0},
};

static int usage(FILE *f)
{
    fputs("usage: privgen <command> [options]\n", f);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fputs("Every command takes --help. Client commands take --json (the server's JSON\n"
          "response instead of readable lines), --url URL and --token TOKEN (see README.md).\n"
          "privgen --version prints the version.\n",
          f);
    return PG_CLI_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        pg_cli_error(PG_CLI_USAGE, "missing command");
        return usage(stderr);
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return PG_CLI_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("privgen %s\n", PG_VERSION);
        return PG_CLI_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name)) continue;
        int n = 0;
        for (int k = 2; k < argc; k++)
            if (!commands[i].json_only || strcmp(argv[k], "--json")) argv[2 + n++] = argv[k];
        return commands[i].run(n, argv + 2);
    }
    pg_cli_error(PG_CLI_USAGE, "unknown command '%s'", argv[1]);
    return usage(stderr);
}
