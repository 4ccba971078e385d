/* cli/cmd_methods.c - `privgen methods [NAME]`: the server's training methods
 * (GET /v1/algorithms), their parameters, defaults and privacy models. The
 * server is the authority: it is what validates a job spec. */
#include <string.h>

#include "cli/cli.h"
#include "cli/http.h"
#include "cli/human.h"

int pg_cli_methods(int argc, char **argv)
{
    static const char help[] =
        "usage: privgen methods [NAME] [--json] [--url URL] [--token TOKEN]\n"
        "  Without NAME: every training method, the privacy models it accepts\n"
        "  (local, central, public) and what it does. With NAME: its parameters\n"
        "  (for --set on `privgen jobs create`), their types, defaults and ranges.\n"
        "  --json prints the server's catalogue (or the one method) as JSON.\n";
    pg_args a;
    int prc = pg_args_parse(argc, argv, NULL, NULL, help, &a);
    if (prc) return prc == PG_ARGS_HELP ? PG_CLI_OK : prc;
    if (a.npos > 1) return pg_cli_error(PG_CLI_USAGE, "usage: privgen methods [NAME]");
    const char *name = a.npos ? a.pos[0] : NULL;
    pg_http h;
    int rc = pg_http_open(&a, &h);
    if (rc) return rc;
    json_t *cat = NULL;
    rc = pg_http_json(&h, "GET", "/v1/algorithms", NULL, &cat);
    if (rc) {
        pg_http_close(&h);
        return rc;
    }
    json_t *one = NULL;
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(cat, "items"), i, m)
    {
        const char *mn = json_string_value(json_object_get(m, "name"));
        if (name && mn && !strcmp(mn, name)) one = m;
    }
    if (name && !one) {
        char known[512] = "";
        json_array_foreach(json_object_get(cat, "items"), i, m)
        {
            strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
            const char *mn = json_string_value(json_object_get(m, "name"));
            strncat(known, mn ? mn : "?", sizeof known - strlen(known) - 1);
        }
        rc = pg_cli_error(PG_CLI_USAGE, "no method '%s'; the server has %s", name, known);
    } else if (h.json) {
        rc = pg_http_print(&h, json_incref(one ? one : cat));
    } else {
        pg_human_methods(cat, name);
    }
    json_decref(cat);
    pg_http_close(&h);
    return rc;
}
