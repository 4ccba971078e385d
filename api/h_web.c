/* The dashboard's static files, embedded at build time (api/CMakeLists.txt):
 * served without authentication because they hold no data; the page asks
 * for a token and sends it with every /v1 call. */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

extern const unsigned char pg_web_index_html[], pg_web_style_css[];
extern const size_t pg_web_index_html_len, pg_web_style_css_len;

static void send_static(pg_req *r, const char *type, const unsigned char *data, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy) {
        pg_api_problem(r, 503, "out of memory", NULL, NULL);
        return;
    }
    memcpy(copy, data, len);
    copy[len] = '\0';
    pg_api_send_text(r, 200, type, copy, len);
}

void pg_h_web_index(pg_req *r)
{
    send_static(r, "text/html; charset=utf-8", pg_web_index_html, pg_web_index_html_len);
}

void pg_h_web_script(pg_req *r)
{
    for (const pg_web_file *f = pg_web_scripts; f->name; f++)
        if (!strcmp(f->name, r->params[0])) {
            send_static(r, "text/javascript; charset=utf-8", f->data, *f->len);
            return;
        }
    pg_api_problem(r, 404, "no such script", NULL, NULL);
}

void pg_h_web_style(pg_req *r)
{
    send_static(r, "text/css; charset=utf-8", pg_web_style_css, pg_web_style_css_len);
}
