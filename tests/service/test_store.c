/* SQLite store and auth: migrations, tokens, tenancy, datasets, appends,
 * deletes blocked by jobs, idempotency records. */
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/auth.h"
#include "service/block.h"
#include "service/rows.h"
#include "service/store.h"
#include "support/pg_test.h"
#include "test_support.h"

static char dir[64];

static void setup(void)
{
    pg_test_tmpdir(dir, sizeof dir);
}

static void teardown(void)
{
    pg_test_rmrf(dir);
}

START_TEST(migrations_idempotent_and_refuse_newer)
{
    pg_store *s;
    ck_assert_int_eq(pg_store_open(dir, &s, NULL), PG_OK);
    ck_assert_int_eq(pg_store_schema_version(s), 3);
    pg_store_close(s);
    ck_assert_int_eq(pg_store_open(dir, &s, NULL), PG_OK);
    ck_assert_int_eq(pg_store_schema_version(s), 3);
    pg_store_close(s);
    /* a database from a future binary is refused, not silently used */
    char path[128];
    snprintf(path, sizeof path, "%s/privgen.db", dir);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(db, "UPDATE schema_version SET version=99", 0, 0, 0), SQLITE_OK);
    sqlite3_close(db);
    pg_error err;
    ck_assert_int_eq(pg_store_open(dir, &s, &err), PG_ENOTSUP);
}
END_TEST

START_TEST(bootstrap_token_and_verify)
{
    pg_store *s;
    ck_assert_int_eq(pg_store_open(dir, &s, NULL), PG_OK);
    int created;
    ck_assert_int_eq(pg_auth_bootstrap(s, &created, NULL), PG_OK);
    ck_assert_int_eq(created, 1);
    ck_assert_int_eq(pg_auth_bootstrap(s, &created, NULL), PG_OK);
    ck_assert_int_eq(created, 0);
    char path[128], token[128] = {0}, hdr[160];
    snprintf(path, sizeof path, "%s/admin.token", dir);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    FILE *f = fopen(path, "r");
    ck_assert(fgets(token, sizeof token, f) != NULL);
    fclose(f);
    token[strcspn(token, "\n")] = '\0';
    snprintf(hdr, sizeof hdr, "Bearer %s", token);
    pg_token t;
    int ok;
    ck_assert_int_eq(pg_auth_verify(s, hdr, &t, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 1);
    ck_assert_int_eq(t.scope, PG_SCOPE_ADMIN);
    /* the database holds no plaintext */
    sqlite3 *db;
    snprintf(path, sizeof path, "%s/privgen.db", dir);
    sqlite3_open(path, &db);
    sqlite3_stmt *q;
    sqlite3_prepare_v2(db, "SELECT count(*) FROM tokens WHERE instr(hash, ?) > 0 OR id = ?", -1, &q,
                       NULL);
    sqlite3_bind_text(q, 1, token + 21, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, token, -1, SQLITE_STATIC);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(q, 0), 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    /* wrong secret, malformed, missing */
    char bad[160];
    snprintf(bad, sizeof bad, "%s", hdr);
    bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == 'a' ? 'b' : 'a';
    ck_assert_int_eq(pg_auth_verify(s, bad, &t, &ok, NULL), PG_OK);
    ck_assert_int_eq(ok, 0);
    pg_auth_verify(s, "Bearer pgt_nope", &t, &ok, NULL);
    ck_assert_int_eq(ok, 0);
    pg_auth_verify(s, NULL, &t, &ok, NULL);
    ck_assert_int_eq(ok, 0);
    pg_auth_verify(s, token, &t, &ok, NULL); /* no "Bearer " */
    ck_assert_int_eq(ok, 0);
    pg_store_close(s);
}
END_TEST

static void make_dataset(pg_store *s, const char *tenant, const char *id)
{
    pg_store_dataset d = {0};
    snprintf(d.id, sizeof d.id, "%s", id);
    snprintf(d.tenant, sizeof d.tenant, "%s", tenant);
    d.name = "n";
    d.meta = "{}";
    d.d = 2;
    ck_assert_int_eq(pg_store_dataset_insert(s, &d, NULL), PG_OK);
}

static void tmp_block_v(pg_store *s, const char *id, size_t rows, float v0, int labeled, char *path)
{
    char ddir[4096];
    ck_assert_int_eq(pg_store_dataset_dir(s, id, ddir, sizeof ddir, NULL), PG_OK);
    pg_block_writer w;
    ck_assert_int_eq(pg_block_open(&w, ddir, 2, NULL), PG_OK);
    float x[200];
    int32_t lab[100];
    for (size_t i = 0; i < rows * 2; i++) x[i] = v0 + (float)i;
    for (size_t i = 0; i < rows; i++) lab[i] = (int32_t)i;
    ck_assert_int_eq(pg_block_write(&w, x, rows * 2, NULL), PG_OK);
    uint64_t r, b;
    ck_assert_int_eq(pg_block_finish(&w, labeled ? lab : NULL, &r, &b, NULL), PG_OK);
    strcpy(path, w.path);
}

static void tmp_block(pg_store *s, const char *id, size_t rows, char *path)
{
    char ddir[4096];
    ck_assert_int_eq(pg_store_dataset_dir(s, id, ddir, sizeof ddir, NULL), PG_OK);
    pg_block_writer w;
    ck_assert_int_eq(pg_block_open(&w, ddir, 2, NULL), PG_OK);
    float x[200] = {0};
    ck_assert_int_eq(pg_block_write(&w, x, rows * 2, NULL), PG_OK);
    uint64_t r, b;
    ck_assert_int_eq(pg_block_finish(&w, NULL, &r, &b, NULL), PG_OK);
    strcpy(path, w.path);
}

START_TEST(datasets_tenancy_pagination_append_delete)
{
    pg_store *s;
    ck_assert_int_eq(pg_store_open(dir, &s, NULL), PG_OK);
    char id[16];
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof id, "ds_a%d", i);
        make_dataset(s, "ten_a", id);
    }
    make_dataset(s, "ten_b", "ds_b0");
    pg_store_dataset d, *list;
    size_t n;
    int found, conflict;
    ck_assert_int_eq(pg_store_dataset_get(s, "ten_b", "ds_a0", &d, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 0);
    /* pages of 2 over tenant a: 2 + 2 + 1, in creation order */
    int64_t after = 0;
    int seen = 0;
    for (int page = 0; page < 3; page++) {
        ck_assert_int_eq(pg_store_dataset_list(s, "ten_a", after, 2, &list, &n, NULL), PG_OK);
        ck_assert_uint_eq(n, page < 2 ? 2 : 1);
        for (size_t i = 0; i < n; i++) {
            snprintf(id, sizeof id, "ds_a%d", seen++);
            ck_assert_str_eq(list[i].id, id);
        }
        after = list[n - 1].seq;
        pg_store_dataset_list_free(list, n);
    }
    /* append: two blocks, then one that would exceed max_rows */
    char path[4096];
    int64_t nn;
    tmp_block(s, "ds_a1", 10, path);
    ck_assert_int_eq(
        pg_store_dataset_append(s, "ten_a", "ds_a1", path, 10, 112, 0, 25, &found, &nn, NULL),
        PG_OK);
    ck_assert_int_eq((int)nn, 10);
    tmp_block(s, "ds_a1", 10, path);
    pg_store_dataset_append(s, "ten_a", "ds_a1", path, 10, 112, 0, 25, &found, &nn, NULL);
    ck_assert_int_eq((int)nn, 20);
    tmp_block(s, "ds_a1", 10, path);
    ck_assert_int_eq(
        pg_store_dataset_append(s, "ten_a", "ds_a1", path, 10, 112, 0, 25, &found, &nn, NULL),
        PG_ERANGE);
    ck_assert_int_eq(access(path, F_OK), -1); /* the refused block is gone */
    /* another tenant cannot append */
    tmp_block(s, "ds_a1", 1, path);
    pg_store_dataset_append(s, "ten_b", "ds_a1", path, 1, 40, 0, 25, &found, &nn, NULL);
    ck_assert_int_eq(found, 0);
    char **paths;
    ck_assert_int_eq(pg_store_dataset_blocks(s, "ds_a1", &paths, &n, NULL), PG_OK);
    ck_assert_uint_eq(n, 2);
    for (size_t i = 0; i < n; i++) {
        pg_block b;
        ck_assert_int_eq(pg_block_read(paths[i], 1 << 20, &b, NULL), PG_OK);
        ck_assert_uint_eq(b.n, 10);
        pg_block_free(&b);
        free(paths[i]);
    }
    free(paths);
    int64_t nd, nr, nb;
    pg_store_gauges(s, &nd, &nr, &nb, NULL);
    ck_assert_int_eq((int)nd, 6);
    ck_assert_int_eq((int)nr, 20);
    ck_assert_int_eq((int)nb, 224);
    /* delete: blocked by a running job, allowed once it is done */
    ck_assert_int_eq(pg_store_job_insert(s, "job_1", "ten_a", "ds_a1", "running", "{}", NULL),
                     PG_OK);
    pg_store_dataset_delete(s, "ten_b", "ds_a1", &found, &conflict, NULL);
    ck_assert_int_eq(found, 0);
    pg_store_dataset_delete(s, "ten_a", "ds_a1", &found, &conflict, NULL);
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(conflict, 1);
    ck_assert_int_eq(pg_store_dataset_get(s, "ten_a", "ds_a1", &d, &found, NULL), PG_OK);
    ck_assert_int_eq(found, 1);
    pg_store_dataset_free(&d);
    pg_store_dataset_delete(s, "ten_a", "ds_a2", &found, &conflict, NULL);
    ck_assert_int_eq(found && !conflict, 1);
    char ddir[4096];
    pg_store_dataset_dir(s, "ds_a2", ddir, sizeof ddir, NULL);
    ck_assert_int_eq(access(ddir, F_OK), -1);
    pg_store_close(s);
}
END_TEST

START_TEST(idempotency_records)
{
    pg_store *s;
    ck_assert_int_eq(pg_store_open(dir, &s, NULL), PG_OK);
    unsigned char fp1[32] = {1}, fp2[32] = {2};
    pg_idem_response r = {201, "/v1/datasets/x", "{\"a\":1}", 7}, got;
    int state;
    ck_assert_int_eq(pg_store_idem_begin(s, "t", "k", fp1, &state, &got, NULL), PG_OK);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    /* while the first runs, a retry is told so; a different body is refused */
    pg_store_idem_begin(s, "t", "k", fp1, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_BUSY);
    pg_store_idem_begin(s, "t", "k", fp2, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_MISMATCH);
    ck_assert_int_eq(pg_store_idem_finish(s, "t", "k", &r, NULL), PG_OK);
    pg_store_idem_begin(s, "t", "k", fp1, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_REPLAY);
    ck_assert_int_eq(got.status, 201);
    ck_assert_str_eq(got.location, "/v1/datasets/x");
    ck_assert_str_eq(got.body, "{\"a\":1}");
    pg_store_idem_free(&got);
    pg_store_idem_begin(s, "t", "k", fp2, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_MISMATCH);
    /* keys are per tenant; a released reservation is free again */
    pg_store_idem_begin(s, "other", "k", fp2, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    ck_assert_int_eq(pg_store_idem_finish(s, "other", "k", NULL, NULL), PG_OK);
    pg_store_idem_begin(s, "other", "k", fp1, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    /* a reservation orphaned by a crash is dropped on the next open */
    pg_store_close(s);
    ck_assert_int_eq(pg_store_open(dir, &s, NULL), PG_OK);
    pg_store_idem_begin(s, "other", "k", fp2, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_NEW);
    pg_store_idem_begin(s, "t", "k", fp1, &state, &got, NULL);
    ck_assert_int_eq(state, PG_IDEM_REPLAY);
    pg_store_idem_free(&got);
    pg_store_close(s);
}
END_TEST

START_TEST(probe_fails_when_blocks_dir_is_not_a_dir)
{
    pg_store *s;
    ck_assert_int_eq(pg_store_open(dir, &s, NULL), PG_OK);
    ck_assert_int_eq(pg_store_probe(s, NULL), PG_OK);
    char p[128], q[128];
    snprintf(p, sizeof p, "%s/datasets", dir);
    snprintf(q, sizeof q, "%s/datasets.away", dir);
    ck_assert_int_eq(rename(p, q), 0);
    int fd = open(p, O_WRONLY | O_CREAT, 0600);
    close(fd);
    pg_error err;
    ck_assert_int_eq(pg_store_probe(s, &err), PG_EIO);
    unlink(p);
    rename(q, p);
    ck_assert_int_eq(pg_store_probe(s, NULL), PG_OK);
    pg_store_close(s);
}
END_TEST

START_TEST(rows_snapshot_concatenates_blocks)
{
    pg_store *s;
    ck_assert_int_eq(pg_store_open(dir, &s, NULL), PG_OK);
    make_dataset(s, "t", "ds_r");
    char path[4096];
    int found, labeled;
    int64_t nn;
    pg_block all;
    ck_assert_int_eq(pg_svc_rows_load(s, "ds_r", 2, 1 << 20, &all, &labeled, NULL), PG_OK);
    ck_assert_uint_eq(all.n, 0);
    pg_block_free(&all);
    tmp_block_v(s, "ds_r", 3, 0.0f, 1, path);
    pg_store_dataset_append(s, "t", "ds_r", path, 3, 0, 1, 100, &found, &nn, NULL);
    tmp_block_v(s, "ds_r", 2, 100.0f, 1, path);
    pg_store_dataset_append(s, "t", "ds_r", path, 2, 0, 1, 100, &found, &nn, NULL);
    ck_assert_int_eq(pg_svc_rows_load(s, "ds_r", 2, 1 << 20, &all, &labeled, NULL), PG_OK);
    ck_assert_uint_eq(all.n, 5);
    ck_assert_int_eq(labeled, 1);
    const float want[10] = {0, 1, 2, 3, 4, 5, 100, 101, 102, 103};
    ck_assert_mem_eq(all.x, want, sizeof want);
    ck_assert(all.labels[0] == 0 && all.labels[2] == 2 && all.labels[3] == 0 && all.labels[4] == 1);
    pg_block_free(&all);
    /* an unlabeled block drops labels from the snapshot */
    tmp_block_v(s, "ds_r", 1, 7.0f, 0, path);
    pg_store_dataset_append(s, "t", "ds_r", path, 1, 0, 0, 100, &found, &nn, NULL);
    ck_assert_int_eq(pg_svc_rows_load(s, "ds_r", 2, 1 << 20, &all, &labeled, NULL), PG_OK);
    ck_assert_uint_eq(all.n, 6);
    ck_assert_int_eq(labeled, 0);
    ck_assert_ptr_null(all.labels);
    pg_block_free(&all);
    /* byte budget, wrong width and a corrupted block are errors */
    ck_assert_int_eq(pg_svc_rows_load(s, "ds_r", 2, 40, &all, &labeled, NULL), PG_ENOMEM);
    ck_assert_int_eq(pg_svc_rows_load(s, "ds_r", 3, 1 << 20, &all, &labeled, NULL), PG_EFORMAT);
    char blk[4200];
    snprintf(blk, sizeof blk, "%s/datasets/ds_r/rows-1.f32", dir);
    FILE *f = fopen(blk, "r+b");
    fseek(f, 40, SEEK_SET);
    fputc(0x55, f);
    fclose(f);
    pg_error err;
    ck_assert_int_eq(pg_svc_rows_load(s, "ds_r", 2, 1 << 20, &all, &labeled, &err), PG_EFORMAT);
    ck_assert_ptr_null(all.x);
    pg_store_close(s);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("store");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, migrations_idempotent_and_refuse_newer);
    tcase_add_test(t, bootstrap_token_and_verify);
    tcase_add_test(t, datasets_tenancy_pagination_append_delete);
    tcase_add_test(t, idempotency_records);
    tcase_add_test(t, probe_fails_when_blocks_dir_is_not_a_dir);
    tcase_add_test(t, rows_snapshot_concatenates_blocks);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
