#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/methods/trainer.h"

extern const pg_method pg_method_entropic_gan;
extern const pg_method pg_method_dp_sinkhorn;
extern const pg_method pg_method_swd_flow, pg_method_swd_flow_r, pg_method_swd_gen;
extern const pg_method pg_method_mst, pg_method_aim;

static const pg_method *const ALL[] = {
    &pg_method_entropic_gan, &pg_method_dp_sinkhorn, &pg_method_swd_flow, &pg_method_swd_flow_r,
    &pg_method_swd_gen,      &pg_method_mst,         &pg_method_aim,      NULL,
};

const pg_method *const *pg_methods_all(void)
{
    return ALL;
}

const pg_method *pg_method_find(const char *name)
{
    for (const pg_method *const *m = ALL; *m; m++)
        if (strcmp((*m)->name, name) == 0) return *m;
    return NULL;
}

/* Cuts s (a NUL-terminated string in a buffer of cap bytes, cap >= 4) to end
 * in "..." within the buffer, never inside a UTF-8 sequence. */
static void cut_utf8(char *s, size_t cap)
{
    size_t k = cap - 4;
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--; /* s[k] starts a character */
    memcpy(s + k, "...", 4);
}

int pg_trainer_warnings_add(pg_trainer_warnings *w, const char *code, const char *fmt, ...)
{
    if (!w || !code || !fmt) return PG_EINVAL;
    size_t cl = strlen(code);
    if (cl == 0 || cl >= PG_TRAINER_WARN_CODE) return PG_EINVAL;
    for (size_t i = 0; i < cl; i++)
        if (!((code[i] >= 'a' && code[i] <= 'z') || (code[i] >= '0' && code[i] <= '9') ||
              code[i] == '_'))
            return PG_EINVAL;
    char msg[PG_TRAINER_WARN_TEXT];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n <= 0) return PG_EINVAL;
    if ((size_t)n >= sizeof msg) cut_utf8(msg, sizeof msg);
    int at = -1;
    for (int i = 0; i < w->count && i < PG_TRAINER_WARN_MAX; i++)
        if (!strcmp(w->items[i].code, code)) at = i;
    if (at < 0) {
        if (w->count >= PG_TRAINER_WARN_MAX) {
            w->dropped++;
            return PG_ERANGE;
        }
        at = w->count++;
        memcpy(w->items[at].code, code, cl + 1);
        w->items[at].message[0] = '\0';
    }
    if (strcmp(w->items[at].message, msg)) {
        memcpy(w->items[at].message, msg, strlen(msg) + 1);
        w->version++;
    }
    return PG_OK;
}

const pg_trainer_warnings *pg_trainer_warnings_of(const pg_trainer *t)
{
    return t ? &t->warnings : NULL;
}

static json_t *hex64(uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%016" PRIx64, v);
    return json_string(buf);
}

static int parse_hex64(const json_t *j, uint64_t *out)
{
    const char *s = json_string_value(j);
    if (!s || strlen(s) != 16) return -1;
    char *end;
    *out = strtoull(s, &end, 16);
    return *end ? -1 : 0;
}

json_t *pg_rng_state_to_json(const pg_rng *r)
{
    pg_rng_state st;
    if (pg_rng_save(r, &st, NULL) != PG_OK) return NULL;
    json_t *buf = json_array();
    for (int i = 0; i < 16; i++) json_array_append_new(buf, json_integer(st.buf[i]));
    char spare[40];
    snprintf(spare, sizeof spare, "%a", st.spare); /* hex float: exact round trip */
    return json_pack("{s:o,s:o,s:o,s:o,s:i,s:b,s:s}", "seed", hex64(st.seed), "stream",
                     hex64(st.stream), "block", hex64(st.block), "buf", buf, "avail", st.avail,
                     "has_spare", st.has_spare, "spare", spare);
}

int pg_rng_state_from_json(const json_t *j, pg_rng *r, pg_error *err)
{
    pg_rng_state st;
    memset(&st, 0, sizeof st);
    const json_t *buf = json_object_get(j, "buf");
    const json_t *avail = json_object_get(j, "avail");
    const char *spare = json_string_value(json_object_get(j, "spare"));
    if (!json_is_object(j) || parse_hex64(json_object_get(j, "seed"), &st.seed) ||
        parse_hex64(json_object_get(j, "stream"), &st.stream) ||
        parse_hex64(json_object_get(j, "block"), &st.block) || !json_is_array(buf) ||
        json_array_size(buf) != 16 || !json_is_integer(avail) || !spare ||
        !json_is_boolean(json_object_get(j, "has_spare")))
        return pg_error_set(err, PG_EFORMAT, "checkpoint RNG state is malformed");
    for (int i = 0; i < 16; i++) {
        json_int_t v = json_integer_value(json_array_get(buf, (size_t)i));
        if (v < 0 || v > (json_int_t)UINT32_MAX)
            return pg_error_set(err, PG_EFORMAT, "checkpoint RNG state is malformed");
        st.buf[i] = (uint32_t)v;
    }
    json_int_t a = json_integer_value(avail);
    if (a < 0 || a > 16) return pg_error_set(err, PG_EFORMAT, "checkpoint RNG state is malformed");
    st.avail = (int32_t)a;
    st.has_spare = json_is_true(json_object_get(j, "has_spare"));
    char *end;
    st.spare = strtod(spare, &end);
    if (*end) return pg_error_set(err, PG_EFORMAT, "checkpoint RNG state is malformed");
    pg_rng_restore(r, &st);
    return PG_OK;
}

void pg_job_data_no_public(const pg_job_data *in, const char *method, pg_spec_errors *e)
{
    if (in->public_desc)
        pg_spec_error_add(e, "public_dataset_id",
                          "%s cannot use public data: drop public_dataset_id", method);
}
