/* cli/cmd_table.h - typed-table commands: `privgen schema` and the --schema
 * path of `privgen privatize` (engine/data/table.h, records.h, table_ldp.h).
 * Input files are read in chunks and fed to the streaming parsers, so the
 * text of a large file never sits in memory whole ("-" reads stdin). */
#ifndef PG_CLI_CMD_TABLE_H
#define PG_CLI_CMD_TABLE_H

#include <stddef.h>

#include "engine/core/error.h"

int pg_cli_schema(int argc, char **argv);
int pg_cli_privatize_table(int argc, char **argv);

/* Records format from a file name: .csv, .json, .ndjson or .jsonl;
 * PG_EINVAL otherwise. */
int pg_cli_records_format(const char *path, int *format, pg_error *err);
/* Calls feed with successive chunks of the file; stops at its first error. */
int pg_cli_stream_file(const char *path,
                       int (*feed)(void *ctx, const void *buf, size_t len, pg_error *err),
                       void *ctx, pg_error *err);

#endif
