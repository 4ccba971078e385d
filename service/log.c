#include "service/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Appends s JSON-escaped and quoted; truncates rather than overflow. */
static size_t put_str(char *buf, size_t at, size_t cap, const char *s)
{
    if (at + 1 < cap) buf[at++] = '"';
    for (; s && *s && at + 8 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            buf[at++] = '\\';
            buf[at++] = (char)ch;
        } else if (ch < 0x20) {
            at += (size_t)snprintf(buf + at, cap - at, "\\u%04x", ch);
        } else {
            buf[at++] = (char)ch;
        }
    }
    if (at + 1 < cap) buf[at++] = '"';
    return at;
}

/* Set once before threads start (pg_log_set_node), read-only afterwards. */
static char log_node[128];

void pg_log_set_node(const char *node)
{
    snprintf(log_node, sizeof log_node, "%s", node ? node : "");
}

static size_t put_str(char *buf, size_t at, size_t cap, const char *s);
static size_t put_ts(char *buf, size_t cap);

/* The opening {"ts":..., then "node":... when one is named. */
static size_t put_head(char *buf, size_t cap, const char *node)
{
    size_t at = put_ts(buf, cap);
    if (node && *node && at + 10 < cap) {
        at += (size_t)snprintf(buf + at, cap - at, ",\"node\":");
        at = put_str(buf, at, cap, node);
    }
    return at;
}

static size_t put_ts(char *buf, size_t cap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char t[32];
    strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%S", &tm);
    int n = snprintf(buf, cap, "{\"ts\":\"%s.%03ldZ\"", t, ts.tv_nsec / 1000000);
    return n < 0 ? 0 : (size_t)n;
}

static void emit(char *buf, size_t at, size_t cap)
{
    if (at + 2 >= cap) at = cap - 3;
    buf[at++] = '}';
    buf[at++] = '\n';
    fwrite(buf, 1, at, stderr);
    fflush(stderr);
}

void pg_log_event(const char *level, const char *msg, const char *extra)
{
    char buf[1024];
    size_t at = put_head(buf, sizeof buf, log_node);
    at += (size_t)snprintf(buf + at, sizeof buf - at, ",\"level\":");
    at = put_str(buf, at, sizeof buf, level);
    at += (size_t)snprintf(buf + at, sizeof buf - at, ",\"msg\":");
    at = put_str(buf, at, sizeof buf, msg);
    if (extra && *extra && at + strlen(extra) + 4 < sizeof buf)
        at += (size_t)snprintf(buf + at, sizeof buf - at, ",%s", extra);
    emit(buf, at, sizeof buf);
}

void pg_log_request(const char *method, const char *route, int status, double ms,
                    const char *token_id)
{
    char buf[1024];
    size_t at = put_head(buf, sizeof buf, log_node);
    at += (size_t)snprintf(buf + at, sizeof buf - at,
                           ",\"level\":\"info\",\"msg\":\"request\","
                           "\"method\":");
    at = put_str(buf, at, sizeof buf, method);
    at += (size_t)snprintf(buf + at, sizeof buf - at, ",\"route\":");
    at = put_str(buf, at, sizeof buf, route);
    at += (size_t)snprintf(buf + at, sizeof buf - at,
                           ",\"status\":%d,\"ms\":%.3f,\"token\":", status, ms);
    if (token_id)
        at = put_str(buf, at, sizeof buf, token_id);
    else
        at += (size_t)snprintf(buf + at, sizeof buf - at, "null");
    emit(buf, at, sizeof buf);
}

void pg_log_job(const char *level, const char *node, const char *job, const char *fmt, ...)
{
    char msg[512], buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t at = put_head(buf, sizeof buf, node && *node ? node : log_node);
    at += (size_t)snprintf(buf + at, sizeof buf - at, ",\"level\":");
    at = put_str(buf, at, sizeof buf, level);
    at += (size_t)snprintf(buf + at, sizeof buf - at, ",\"msg\":");
    at = put_str(buf, at, sizeof buf, msg);
    if (job && at + 10 < sizeof buf) {
        at += (size_t)snprintf(buf + at, sizeof buf - at, ",\"job\":");
        at = put_str(buf, at, sizeof buf, job);
    }
    emit(buf, at, sizeof buf);
}
