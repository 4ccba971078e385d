/* cli/human.h - what client commands print for people (without --json).
 *
 * Numbers: pg_num_short gives the shortest decimal that reads back as the
 * same double (0.1, not 0.10000000000000001); pg_num_round gives `sig`
 * significant digits for figures a person reads (epsilon 0.9999999 -> 1).
 * pg_num_denoise rewrites every long number in a server message to its
 * shortest form. Printers take a borrowed JSON view (the API response), print
 * a few lines on stdout and never fail on missing fields (they print "?").
 */
#ifndef PG_CLI_HUMAN_H
#define PG_CLI_HUMAN_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

void pg_num_short(double v, char *buf, size_t cap);
void pg_num_round(double v, int sig, char *buf, size_t cap);
/* Copies `in` to `out` (cap bytes, NUL-terminated), numbers with more than
 * 15 significant digits replaced by their shortest round-trip form. */
void pg_num_denoise(const char *in, char *out, size_t cap);

void pg_human_job(json_t *job);
void pg_human_dataset(json_t *ds);
/* The answer of POST /v1/datasets/{id}/rows: rows added, the total, and
 * whether a declaration was checked. */
void pg_human_append(json_t *res);
void pg_human_budget(const char *dataset_id, json_t *budget);
void pg_human_dry_run(json_t *report);
void pg_human_checkpoints(const char *job_id, json_t *list);
void pg_human_cancel(const char *job_id, json_t *job);
/* The algorithm catalogue: a table, or one method's parameters. Returns 0,
 * or -1 when `name` is not in it. */
int pg_human_methods(json_t *catalogue, const char *name);
/* The job view's `warnings` (strings or {message}) as "warning: ..." lines
 * on f, each prefixed with `prefix`; nothing when there are none. */
void pg_human_warnings(FILE *f, const char *prefix, json_t *job);
/* One of them: "warning: ...", or "warning (CODE): ..." for a trainer's. */
void pg_human_warning(FILE *f, const char *prefix, json_t *w);

#endif
