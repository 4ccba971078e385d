/* cli/cmd_tokens.c - `privgen tokens list|create|revoke`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/http.h"

/* "3600", "90s", "30m", "12h", "7d" -> seconds; -1 when malformed. */
static long long parse_duration(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v <= 0) return -1;
    long long mul = !*end               ? 1
                    : !strcmp(end, "s") ? 1
                    : !strcmp(end, "m") ? 60
                    : !strcmp(end, "h") ? 3600
                    : !strcmp(end, "d") ? 86400
                                        : -1;
    if (mul < 0 || v > 1000000000000LL / mul) return -1;
    return v * mul;
}

/* Unix seconds as "2026-11-25 03:55" (UTC), or `none` for null. */
static void when(json_t *v, const char *none, char *buf, size_t cap)
{
    if (!json_is_integer(v)) {
        snprintf(buf, cap, "%s", none);
        return;
    }
    time_t t = (time_t)json_integer_value(v);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%d %H:%M", &tm))
        snprintf(buf, cap, "%lld", (long long)t);
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "?";
}

static void print_list(json_t *list)
{
    size_t i;
    json_t *t;
    printf("  %-22s %-6s %-8s %-17s %-17s %s\n", "ID", "SCOPE", "STATUS", "CREATED (UTC)",
           "EXPIRES", "LAST USED");
    json_array_foreach(json_object_get(list, "items"), i, t)
    {
        char created[32], expires[32], used[32];
        when(json_object_get(t, "created_at"), "?", created, sizeof created);
        when(json_object_get(t, "expires_at"), "never", expires, sizeof expires);
        when(json_object_get(t, "last_used_at"), "never", used, sizeof used);
        printf("%c %-22s %-6s %-8s %-17s %-17s %s\n",
               json_is_true(json_object_get(t, "current")) ? '*' : ' ', str(t, "id"),
               str(t, "scope"), str(t, "status"), created, expires, used);
    }
    if (json_array_size(json_object_get(list, "items")))
        printf("(* = the token making this request)\n");
    const char *next = json_string_value(json_object_get(list, "next_cursor"));
    if (next) fprintf(stderr, "(more: add --cursor %s)\n", next);
}

static int create_body(const pg_args *a, json_t **out)
{
    const char *scope = pg_args_get(a, "scope");
    const char *in = pg_args_get(a, "expires-in"), *at = pg_args_get(a, "expires-at");
    if (!scope || (strcmp(scope, "admin") && strcmp(scope, "read")))
        return pg_cli_error(PG_CLI_USAGE, "tokens create needs --scope admin|read");
    if (in && at) return pg_cli_error(PG_CLI_USAGE, "give --expires-in or --expires-at, not both");
    json_t *b = json_pack("{s:s}", "scope", scope);
    if (pg_args_has(a, "new-tenant")) json_object_set_new(b, "new_tenant", json_true());
    if (in) {
        long long s = parse_duration(in);
        if (s < 0) {
            json_decref(b);
            return pg_cli_error(PG_CLI_USAGE,
                                "--expires-in must look like 3600, 90s, 30m, 12h or 7d, got '%s'",
                                in);
        }
        json_object_set_new(b, "expires_in", json_integer((json_int_t)s));
    }
    if (at) {
        char *end;
        long long v = strtoll(at, &end, 10);
        if (end == at || *end || v <= 0) {
            json_decref(b);
            return pg_cli_error(PG_CLI_USAGE,
                                "--expires-at must be a unix time in seconds, got '%s'", at);
        }
        json_object_set_new(b, "expires_at", json_integer((json_int_t)v));
    }
    *out = b;
    return PG_CLI_OK;
}

static const char HELP[] =
    "usage: privgen tokens SUBCOMMAND [options] [--json] [--url URL] [--token TOKEN]\n"
    "  list [--limit N] [--cursor C]   the tenant's tokens (admin scope): id, scope,\n"
    "                                  status (active, expired, revoked), times;\n"
    "                                  never a secret\n"
    "  create --scope admin|read [--new-tenant] [--expires-in 3600|90s|30m|12h|7d |\n"
    "         --expires-at UNIX_SECONDS]\n"
    "                                  prints the new token (shown only once) on\n"
    "                                  stdout, its id and expiry on stderr\n"
    "  revoke ID                       at once; an admin revokes any token of its\n"
    "                                  tenant, any token itself; the tenant's last\n"
    "                                  usable admin token cannot be revoked\n"
    "Without --json, list prints a table; --json prints the server's JSON response.\n";

int pg_cli_tokens(int argc, char **argv)
{
    static const char *const valued[] = {"scope", "expires-in", "expires-at",
                                         "limit", "cursor",     NULL};
    static const char *const flags[] = {"new-tenant", NULL};
    static const char *const usage = "usage: privgen tokens list|create|revoke ...";
    pg_args a;
    int prc = pg_args_parse(argc, argv, valued, flags, HELP, &a);
    if (prc) return prc == PG_ARGS_HELP ? PG_CLI_OK : prc;
    if (a.npos < 1) return pg_cli_error(PG_CLI_USAGE, "%s", usage);
    const char *sub = a.pos[0];
    if (strcmp(sub, "list") && strcmp(sub, "create") && strcmp(sub, "revoke"))
        return pg_cli_error(PG_CLI_USAGE, "unknown subcommand '%s'; %s", sub, usage);
    if (!strcmp(sub, "revoke") && a.npos != 2)
        return pg_cli_error(PG_CLI_USAGE, "usage: privgen tokens revoke ID");
    if (strcmp(sub, "revoke") && a.npos != 1)
        return pg_cli_error(PG_CLI_USAGE, "tokens %s takes no positional arguments", sub);
    if (a.npos == 2 && pg_http_check_id(a.pos[1])) return PG_CLI_USAGE;
    json_t *body = NULL, *out = NULL;
    int rc;
    if (!strcmp(sub, "create") && (rc = create_body(&a, &body))) return rc;
    pg_http h;
    if ((rc = pg_http_open(&a, &h))) {
        json_decref(body);
        return rc;
    }
    char path[512];
    if (!strcmp(sub, "create")) {
        rc = pg_http_json(&h, "POST", "/v1/tokens", body, &out);
        if (!rc && !h.json) { /* just the token, for TOK=$(privgen tokens create ...) */
            char expires[32];
            when(json_object_get(out, "expires_at"), "never", expires, sizeof expires);
            printf("%s\n", str(out, "token"));
            fprintf(stderr,
                    "%s: %s token of tenant %s, expires %s%s (the token is shown only once)\n",
                    str(out, "id"), str(out, "scope"), str(out, "tenant"), expires,
                    json_is_integer(json_object_get(out, "expires_at")) ? " UTC" : "");
            json_decref(out);
            out = NULL;
        }
    } else if (!strcmp(sub, "list")) {
        static const char *const page[] = {"limit", "cursor", NULL};
        pg_http_list_path(path, sizeof path, "/v1/tokens", &a, page, NULL);
        rc = pg_http_json(&h, "GET", path, NULL, &out);
        if (!rc && !h.json) {
            print_list(out);
            json_decref(out);
            out = NULL;
        }
    } else {
        snprintf(path, sizeof path, "/v1/tokens/%s", a.pos[1]);
        rc = pg_http_json(&h, "DELETE", path, NULL, &out);
        if (!rc) {
            json_decref(out);
            out = NULL;
            if (h.json)
                out = json_pack("{s:s,s:b}", "id", a.pos[1], "revoked", 1);
            else
                printf("revoked %s\n", a.pos[1]);
        }
    }
    if (!rc && out) rc = pg_http_print(&h, out);
    json_decref(body);
    pg_http_close(&h);
    return rc;
}
