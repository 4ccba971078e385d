/* openapi.yaml and the router name exactly the same operations, every
 * $ref in the spec resolves, and the embedded copy equals the file. */
#include "api/internal.h"
#include "api/openapi_lite.h"
#include "api/server.h"
#include "support/pg_test.h"

static pg_oa oa;

static void load(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/openapi.yaml", pg_test_source_dir());
    ck_assert_int_eq(pg_oa_load(&oa, path), 0);
}

typedef struct seen {
    int missing_in_router;
    int count;
    char first[300];
} seen;

static void check_in_router(const char *method, const char *path, void *ctx)
{
    seen *s = ctx;
    s->count++;
    for (size_t i = 0; i < pg_api_route_count(); i++) {
        const char *m, *p;
        pg_api_route_at(i, &m, &p);
        if (!strcmp(m, method) && !strcmp(p, path)) return;
    }
    if (!s->missing_in_router++) snprintf(s->first, sizeof s->first, "%.16s %.250s", method, path);
}

typedef struct want {
    const char *method, *path;
    int found;
} want;

static void find_op(const char *method, const char *path, void *ctx)
{
    want *w = ctx;
    if (!strcmp(method, w->method) && !strcmp(path, w->path)) w->found = 1;
}

START_TEST(spec_operations_are_routes)
{
    load();
    seen s = {0};
    ck_assert_int_gt(pg_oa_operations(&oa, check_in_router, &s), 0);
    ck_assert_msg(s.missing_in_router == 0, "in the spec but not the router: %s", s.first);
    ck_assert_int_eq(s.count, (int)pg_api_route_count());
    pg_oa_free(&oa);
}
END_TEST

START_TEST(routes_are_spec_operations)
{
    load();
    for (size_t i = 0; i < pg_api_route_count(); i++) {
        want w = {0};
        pg_api_route_at(i, &w.method, &w.path);
        pg_oa_operations(&oa, find_op, &w);
        ck_assert_msg(w.found, "route %s %s is missing from openapi.yaml", w.method, w.path);
    }
    pg_oa_free(&oa);
}
END_TEST

START_TEST(refs_resolve)
{
    load();
    for (int i = 0; i < oa.n; i++) {
        const char *r = strstr(oa.line[i], "$ref:");
        if (!r) continue;
        const char *slash = strrchr(r, '/');
        char name[128];
        snprintf(name, sizeof name, "%s", slash + 1);
        name[strcspn(name, "\"'")] = '\0';
        const char *section = strstr(r, "/schemas/")      ? "schemas"
                              : strstr(r, "/responses/")  ? "responses"
                              : strstr(r, "/parameters/") ? "parameters"
                                                          : "?";
        int c = pg_oa_find(&oa, 0, oa.n, 0, "components");
        int s = pg_oa_find(&oa, c + 1, pg_oa_end(&oa, c), 2, section);
        ck_assert_msg(s >= 0 && pg_oa_find(&oa, s + 1, pg_oa_end(&oa, s), 4, name) >= 0,
                      "unresolved $ref %s on line '%s'", name, oa.line[i]);
    }
    pg_oa_free(&oa);
}
END_TEST

/* The validator itself must reject what it should, or the integration
 * checks built on it prove nothing. */
START_TEST(validator_rejects_bad_bodies)
{
    load();
    char why[256];
    json_t *ok =
        json_pack("{s:s,s:s,s:i,s:s}", "type", "/p", "title", "T", "status", 400, "detail", "d");
    ck_assert_int_eq(pg_oa_validate(&oa, "Problem", ok, why, sizeof why), 0);
    json_object_del(ok, "detail");
    ck_assert_int_eq(pg_oa_validate(&oa, "Problem", ok, why, sizeof why), -1);
    json_object_set_new(ok, "detail", json_string("d"));
    json_object_set_new(ok, "status", json_string("400"));
    ck_assert_int_eq(pg_oa_validate(&oa, "Problem", ok, why, sizeof why), -1);
    json_decref(ok);
    json_t *list = json_pack("{s:[{s:s}],s:n}", "items", "id", "x", "next_cursor");
    ck_assert_int_eq(pg_oa_validate(&oa, "DatasetList", list, why, sizeof why), -1);
    json_decref(list);
    list = json_pack("{s:[],s:n}", "items", "next_cursor");
    ck_assert_int_eq(pg_oa_validate(&oa, "DatasetList", list, why, sizeof why), 0);
    json_decref(list);
    pg_oa_free(&oa);
}
END_TEST

START_TEST(embedded_copy_matches_file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/openapi.yaml", pg_test_source_dir());
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    ck_assert_uint_eq(n, pg_openapi_yaml_len);
    ck_assert_mem_eq(buf, pg_openapi_yaml, n);
    ck_assert_int_eq(memcmp(pg_openapi_yaml, "openapi: 3.1", 12), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("openapi");
    TCase *t = tcase_create("core");
    tcase_add_test(t, spec_operations_are_routes);
    tcase_add_test(t, routes_are_spec_operations);
    tcase_add_test(t, refs_resolve);
    tcase_add_test(t, validator_rejects_bad_bodies);
    tcase_add_test(t, embedded_copy_matches_file);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
