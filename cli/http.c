/* cli/http.c - argument parsing, server resolution and libcurl requests. */
#include "cli/http.h"

#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cli/cli.h"
#include "cli/human.h"

#define MAX_SLURP ((size_t)1 << 32)

static int in_list(const char *const *l, const char *s)
{
    for (size_t i = 0; l && l[i]; i++)
        if (!strcmp(l[i], s)) return 1;
    return 0;
}

int pg_args_parse(int argc, char **argv, const char *const *valued, const char *const *flags,
                  const char *help, pg_args *out)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(help, stdout);
            return PG_ARGS_HELP;
        }
    static const char *const common_valued[] = {"url", "token", NULL};
    pg_args a = {0};
    int only_pos = 0;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        if (only_pos || s[0] != '-' || !strcmp(s, "-")) {
            if (a.npos == PG_ARGS_MAX) return pg_cli_error(PG_CLI_USAGE, "too many arguments");
            a.pos[a.npos++] = s;
            continue;
        }
        if (!strcmp(s, "--")) {
            only_pos = 1;
            continue;
        }
        const char *name = !strcmp(s, "-n") ? "n" : !strcmp(s, "-o") ? "out" : s + 2;
        if (s[1] != '-' && strcmp(s, "-n") && strcmp(s, "-o"))
            return pg_cli_error(PG_CLI_USAGE, "unknown option %s", s);
        if (a.n == PG_ARGS_MAX) return pg_cli_error(PG_CLI_USAGE, "too many options");
        if (!strcmp(name, "json") || in_list(flags, name)) {
            a.name[a.n] = name;
            a.value[a.n++] = NULL;
        } else if (in_list(valued, name) || in_list(common_valued, name)) {
            if (i + 1 >= argc) return pg_cli_error(PG_CLI_USAGE, "option --%s needs a value", name);
            if (strcmp(name, "set") && pg_args_has(&a, name))
                return pg_cli_error(PG_CLI_USAGE, "option --%s given twice", name);
            a.name[a.n] = name;
            a.value[a.n++] = argv[++i];
        } else {
            return pg_cli_error(PG_CLI_USAGE, "unknown option %s", s);
        }
    }
    *out = a;
    return PG_CLI_OK;
}

const char *pg_args_get(const pg_args *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->name[i], name)) return a->value[i];
    return NULL;
}

int pg_args_has(const pg_args *a, const char *name)
{
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->name[i], name)) return 1;
    return 0;
}

int pg_http_config_path(char *buf, size_t cap)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && *xdg)
        n = snprintf(buf, cap, "%s/privgen/config", xdg);
    else if (home && *home)
        n = snprintf(buf, cap, "%s/.config/privgen/config", home);
    else
        return -1;
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* Reads "key value" lines of the login config into url/token when found. */
static void read_config(char *url, size_t ucap, char *token, size_t tcap, int *have_url,
                        int *have_token)
{
    char path[1024], line[1600];
    if (pg_http_config_path(path, sizeof path)) return;
    FILE *f = fopen(path, "r");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!strncmp(line, "url ", 4) && !*have_url) {
            snprintf(url, ucap, "%.*s", (int)(ucap - 1), line + 4);
            *have_url = 1;
        } else if (!strncmp(line, "token ", 6) && !*have_token) {
            snprintf(token, tcap, "%.*s", (int)(tcap - 1), line + 6);
            *have_token = 1;
        }
    }
    fclose(f);
}

static int copy_checked(char *dst, size_t cap, const char *src, const char *what)
{
    if (strlen(src) >= cap) return pg_cli_error(PG_CLI_USAGE, "%s is too long", what);
    strcpy(dst, src);
    return PG_CLI_OK;
}

int pg_http_open(const pg_args *a, pg_http *h)
{
    memset(h, 0, sizeof *h);
    h->json = pg_args_has(a, "json");
    int have_url = 0, have_token = 0;
    const char *u = pg_args_get(a, "url"), *t = pg_args_get(a, "token");
    if (!u) u = getenv("PRIVGEN_URL");
    if (!t) t = getenv("PRIVGEN_TOKEN");
    if (u && *u) {
        if (copy_checked(h->url, sizeof h->url, u, "the URL")) return PG_CLI_USAGE;
        have_url = 1;
    }
    if (t && *t) {
        if (copy_checked(h->token, sizeof h->token, t, "the token")) return PG_CLI_USAGE;
        have_token = 1;
    }
    if (!have_url || !have_token)
        read_config(h->url, sizeof h->url, h->token, sizeof h->token, &have_url, &have_token);
    if (!have_url) strcpy(h->url, "http://127.0.0.1:8080");
    if (!have_token) {
        FILE *f = fopen("var/admin.token", "r");
        if (f) {
            if (!fgets(h->token, sizeof h->token, f)) h->token[0] = '\0';
            h->token[strcspn(h->token, "\r\n")] = '\0';
            fclose(f);
        }
    }
    size_t ul = strlen(h->url);
    while (ul && h->url[ul - 1] == '/') h->url[--ul] = '\0';
    h->curl = curl_easy_init();
    if (!h->curl) return pg_cli_error(PG_CLI_FAIL, "cannot initialise libcurl");
    return PG_CLI_OK;
}

void pg_http_close(pg_http *h)
{
    if (h->curl) curl_easy_cleanup(h->curl);
    h->curl = NULL;
}

typedef struct sink {
    char *buf;
    size_t len, cap;
} sink;

static size_t on_data(char *p, size_t size, size_t nmemb, void *ctx)
{
    sink *s = ctx;
    size_t n = size * nmemb;
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n + 1) cap *= 2;
        char *b = realloc(s->buf, cap);
        if (!b) return 0;
        s->buf = b, s->cap = cap;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len] = '\0';
    return n;
}

static struct curl_slist *setup(pg_http *h, const char *method, const char *path, const char *ctype)
{
    CURL *c = h->curl;
    char url[2048], hdr[600];
    snprintf(url, sizeof url, "%s%s", h->url, path);
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "privgen-cli/0.1");
    struct curl_slist *hs = NULL;
    if (h->token[0]) {
        snprintf(hdr, sizeof hdr, "Authorization: Bearer %s", h->token);
        hs = curl_slist_append(hs, hdr);
    }
    if (ctype) {
        snprintf(hdr, sizeof hdr, "Content-Type: %s", ctype);
        hs = curl_slist_append(hs, hdr);
    }
    hs = curl_slist_append(hs, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
    return hs;
}

static size_t on_read(char *p, size_t size, size_t nmemb, void *ctx)
{
    FILE *f = ctx;
    size_t n = fread(p, 1, size * nmemb, f);
    return n == 0 && ferror(f) ? CURL_READFUNC_ABORT : n;
}

/* A failure after the server answered (or at least took the connection and
 * then closed it) is the server's doing, not an unreachable server: say so,
 * with what arrived, instead of "is privgend running?". */
static int cut_by_server(pg_http *h, CURLcode cc, const sink *s)
{
    long status = 0;
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
    int connected = cc == CURLE_GOT_NOTHING || cc == CURLE_PARTIAL_FILE || cc == CURLE_RECV_ERROR ||
                    cc == CURLE_SEND_ERROR || status > 0 || s->len > 0;
    if (!connected) return 0;
    if (status > 0 || s->len > 0)
        pg_cli_error(PG_CLI_FAIL,
                     "%s cut its answer short (HTTP %ld, %zu bytes received): %s; the server "
                     "ended the response (a server limit such as --http-timeout-seconds, or a "
                     "restart); ask for less (e.g. a smaller -n) or see the server's log",
                     h->url, status, s->len, curl_easy_strerror(cc));
    else
        pg_cli_error(PG_CLI_FAIL,
                     "%s accepted the connection but closed it without an answer (%s): the "
                     "server ended the request (a server limit, or a restart); see its log",
                     h->url, curl_easy_strerror(cc));
    return 1;
}

static int finish(pg_http *h, CURLcode cc, sink *s, pg_http_resp *r)
{
    if (cc != CURLE_OK) {
        int cut = cut_by_server(h, cc, s);
        free(s->buf);
        if (cut) return PG_CLI_FAIL;
        return pg_cli_error(PG_CLI_FAIL, "cannot reach %s: %s (is privgend running? see --url)",
                            h->url, curl_easy_strerror(cc));
    }
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &r->status);
    char *ct = NULL;
    curl_easy_getinfo(h->curl, CURLINFO_CONTENT_TYPE, &ct);
    if (ct) snprintf(r->content_type, sizeof r->content_type, "%s", ct);
    if (!s->buf) s->buf = calloc(1, 1);
    r->body = s->buf;
    r->len = s->len;
    return r->body ? PG_CLI_OK : pg_cli_error(PG_CLI_FAIL, "out of memory");
}

int pg_http_upload(pg_http *h, const char *path, const char *ctype, FILE *f, long long size,
                   const char *const *extra_headers, pg_http_resp *r)
{
    memset(r, 0, sizeof *r);
    struct curl_slist *hs = setup(h, "POST", path, ctype);
    for (size_t i = 0; extra_headers && extra_headers[i]; i++)
        hs = curl_slist_append(hs, extra_headers[i]);
    if (size < 0) hs = curl_slist_append(hs, "Transfer-Encoding: chunked");
    CURL *c = h->curl;
    sink s = {0};
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(c, CURLOPT_READDATA, f);
    if (size >= 0) curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)size);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    CURLcode cc = curl_easy_perform(c);
    curl_slist_free_all(hs);
    return finish(h, cc, &s, r);
}

int pg_http_do(pg_http *h, const char *method, const char *path, const char *ctype,
               const void *body, size_t len, pg_http_resp *r)
{
    memset(r, 0, sizeof *r);
    struct curl_slist *hs = setup(h, method, path, ctype);
    CURL *c = h->curl;
    sink s = {0};
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    } else if (!strcmp(method, "POST")) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    CURLcode cc = curl_easy_perform(c);
    curl_slist_free_all(hs);
    return finish(h, cc, &s, r);
}

void pg_http_resp_free(pg_http_resp *r)
{
    free(r->body);
    r->body = NULL;
}

int pg_http_fail(const pg_http_resp *r)
{
    json_t *p = json_loadb(r->body, r->len, 0, NULL);
    const char *detail = json_string_value(json_object_get(p, "detail"));
    if (!detail) detail = json_string_value(json_object_get(p, "title"));
    /* Servers may print doubles with 17 digits; people read 0.3, not
     * 0.29999999999999999 (the same double). */
    char clean[2048];
    if (detail) {
        pg_num_denoise(detail, clean, sizeof clean);
        pg_cli_error(PG_CLI_FAIL, "%s (HTTP %ld)", clean, r->status);
    } else {
        pg_cli_error(PG_CLI_FAIL, "the server answered HTTP %ld", r->status);
    }
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(p, "errors"), i, e)
    {
        const char *msg = json_string_value(json_object_get(e, "message"));
        pg_num_denoise(msg ? msg : "", clean, sizeof clean);
        fprintf(stderr, "  %s: %s\n", json_string_value(json_object_get(e, "field")), clean);
    }
    json_decref(p);
    return PG_CLI_FAIL;
}

int pg_http_json(pg_http *h, const char *method, const char *path, json_t *body, json_t **out)
{
    char *txt = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body && !txt) return pg_cli_error(PG_CLI_FAIL, "out of memory");
    pg_http_resp r;
    int rc = pg_http_do(h, method, path, body ? "application/json" : NULL, txt,
                        txt ? strlen(txt) : 0, &r);
    free(txt);
    if (rc) return rc;
    if (r.status < 200 || r.status > 299) {
        rc = pg_http_fail(&r);
        pg_http_resp_free(&r);
        return rc;
    }
    json_error_t je;
    *out = r.len ? json_loadb(r.body, r.len, 0, &je) : json_object();
    pg_http_resp_free(&r);
    if (!*out) return pg_cli_error(PG_CLI_FAIL, "the server sent invalid JSON: %s", je.text);
    return PG_CLI_OK;
}

int pg_http_print(const pg_http *h, json_t *v)
{
    int rc =
        json_dumpf(v, stdout, h->json ? JSON_COMPACT : JSON_INDENT(2)) ? PG_CLI_FAIL : PG_CLI_OK;
    fputc('\n', stdout);
    json_decref(v);
    return rc;
}

int pg_http_slurp(const char *path, char **buf, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return pg_cli_error(PG_CLI_USAGE, "cannot open %s", path);
    sink s = {0};
    char chunk[65536];
    size_t n;
    int rc = PG_CLI_OK;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (s.len + n > MAX_SLURP || on_data(chunk, 1, n, &s) != n) {
            rc = pg_cli_error(PG_CLI_USAGE, "%s is too large", path);
            break;
        }
    }
    if (!rc && ferror(f)) rc = pg_cli_error(PG_CLI_USAGE, "cannot read %s", path);
    if (f != stdin) fclose(f);
    if (rc) {
        free(s.buf);
        return rc;
    }
    if (!s.buf) s.buf = calloc(1, 1);
    *buf = s.buf;
    *len = s.len;
    return PG_CLI_OK;
}

int pg_http_stream(pg_http *h, const char *path, const char *const *headers,
                   size_t (*fn)(char *, size_t, size_t, void *), void *ctx, long *status,
                   const char **why)
{
    struct curl_slist *hs = setup(h, "GET", path, NULL);
    for (int i = 0; headers && headers[i]; i++) hs = curl_slist_append(hs, headers[i]);
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hs);
    curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, fn);
    curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, ctx);
    CURLcode cc = curl_easy_perform(h->curl);
    curl_slist_free_all(hs);
    *status = 0;
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, status);
    *why = cc == CURLE_OK ? NULL : curl_easy_strerror(cc);
    return *status || cc == CURLE_OK ? PG_CLI_OK : PG_CLI_FAIL;
}

void pg_http_list_path(char *path, size_t cap, const char *base, const pg_args *a,
                       const char *const *opts, const char *const *names)
{
    size_t k = (size_t)snprintf(path, cap, "%s", base);
    char sep = '?';
    for (size_t i = 0; opts[i]; i++) {
        const char *v = pg_args_get(a, opts[i]);
        char *e = v ? pg_http_escape(v) : NULL;
        if (e && k < cap) {
            k += (size_t)snprintf(path + k, cap - k, "%c%s=%s", sep, names ? names[i] : opts[i], e);
            sep = '&';
        }
        free(e);
    }
}

char *pg_http_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    char *o = malloc(strlen(s) * 3 + 1), *p = o;
    if (!o) return NULL;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            *p++ = (char)c;
        } else {
            *p++ = '%';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 15];
        }
    }
    *p = '\0';
    return o;
}

int pg_http_check_id(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > 64 ||
        strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != n)
        return pg_cli_error(PG_CLI_USAGE, "'%s' is not an id (like ds_... or job_...)", id);
    return PG_CLI_OK;
}
