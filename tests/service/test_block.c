/* Row-block files: round trip, and every kind of damage is an error. */
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <utime.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "service/block.h"
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

/* Writes n rows of width d in chunks of `chunk` values; returns the path. */
static void write_block(size_t n, size_t d, size_t chunk, int labeled, char *path, size_t cap)
{
    pg_block_writer w;
    ck_assert_int_eq(pg_block_open(&w, dir, d, NULL), PG_OK);
    float *x = malloc(n * d * sizeof *x);
    int32_t *lab = malloc(n * sizeof *lab);
    for (size_t i = 0; i < n * d; i++) x[i] = (float)i * 0.5f - 3.0f;
    for (size_t i = 0; i < n; i++) lab[i] = (int32_t)(i % 7);
    for (size_t at = 0; at < n * d; at += chunk)
        ck_assert_int_eq(pg_block_write(&w, x + at, at + chunk <= n * d ? chunk : n * d - at, NULL),
                         PG_OK);
    uint64_t rows, bytes;
    ck_assert_int_eq(pg_block_finish(&w, labeled ? lab : NULL, &rows, &bytes, NULL), PG_OK);
    ck_assert_uint_eq(rows, n);
    struct stat st;
    ck_assert_int_eq(stat(w.path, &st), 0);
    ck_assert_uint_eq((uint64_t)st.st_size, bytes);
    snprintf(path, cap, "%s", w.path);
    pg_block_close(&w);
    ck_assert_int_eq(access(path, F_OK), 0); /* closing keeps the file */
    free(x);
    free(lab);
}

START_TEST(round_trip)
{
    char path[4096];
    write_block(37, 5, 11, 1, path, sizeof path);
    pg_block b;
    ck_assert_int_eq(pg_block_read(path, 1 << 20, &b, NULL), PG_OK);
    ck_assert_uint_eq(b.n, 37);
    ck_assert_uint_eq(b.d, 5);
    for (size_t i = 0; i < 37 * 5; i++) ck_assert(b.x[i] == (float)i * 0.5f - 3.0f);
    ck_assert_ptr_nonnull(b.labels);
    for (size_t i = 0; i < 37; i++) ck_assert_int_eq(b.labels[i], (int)(i % 7));
    pg_block_free(&b);
    write_block(4, 3, 5, 0, path, sizeof path);
    ck_assert_int_eq(pg_block_read(path, 1 << 20, &b, NULL), PG_OK);
    ck_assert_ptr_null(b.labels);
    pg_block_free(&b);
}
END_TEST

static void flip_byte(const char *path, off_t at)
{
    int fd = open(path, O_RDWR);
    unsigned char c;
    ck_assert_int_eq(pread(fd, &c, 1, at), 1);
    c ^= 0x40;
    ck_assert_int_eq(pwrite(fd, &c, 1, at), 1);
    close(fd);
}

START_TEST(damage_detected)
{
    char path[4096];
    pg_block b;
    pg_error err;
    /* every single-byte flip, header or payload, is caught */
    write_block(3, 2, 6, 1, path, sizeof path);
    struct stat st;
    stat(path, &st);
    for (off_t at = 0; at < st.st_size; at++) {
        flip_byte(path, at);
        ck_assert_int_eq(pg_block_read(path, 1 << 20, &b, &err), PG_EFORMAT);
        flip_byte(path, at);
    }
    ck_assert_int_eq(pg_block_read(path, 1 << 20, &b, NULL), PG_OK);
    pg_block_free(&b);
    /* truncation and extension */
    ck_assert_int_eq(truncate(path, st.st_size - 1), 0);
    ck_assert_int_eq(pg_block_read(path, 1 << 20, &b, NULL), PG_EFORMAT);
    ck_assert_int_eq(truncate(path, st.st_size + 4), 0);
    ck_assert_int_eq(pg_block_read(path, 1 << 20, &b, NULL), PG_EFORMAT);
    ck_assert_int_eq(truncate(path, 10), 0);
    ck_assert_int_eq(pg_block_read(path, 1 << 20, &b, NULL), PG_EFORMAT);
    /* size limit */
    write_block(100, 10, 1000, 0, path, sizeof path);
    ck_assert_int_eq(pg_block_read(path, 1000, &b, NULL), PG_ENOMEM);
}
END_TEST

/* pg_block_pass: what a pass collects, window by window. */
typedef struct got {
    float x[4096];
    int32_t lab[1024];
    size_t rows, calls, max_rows, d;
    int labels_null;
} got;

static int got_fn(void *ctx, const float *x, const int32_t *labels, size_t rows, pg_error *err)
{
    (void)err;
    got *g = ctx;
    ck_assert_uint_le((g->rows + rows) * g->d, 4096);
    memcpy(g->x + g->rows * g->d, x, rows * g->d * sizeof *x);
    if (labels)
        memcpy(g->lab + g->rows, labels, rows * sizeof *labels);
    else
        g->labels_null = 1;
    g->rows += rows;
    g->calls++;
    if (rows > g->max_rows) g->max_rows = rows;
    return PG_OK;
}

START_TEST(pass_reads_windows_and_checks_the_crc)
{
    char path[4096];
    write_block(37, 5, 11, 1, path, sizeof path);
    size_t chunks[] = {1, 2, 5, 36, 37, 100};
    uint64_t limits[] = {37, 36, 10, 1, 0, 1000};
    for (size_t c = 0; c < 6; c++)
        for (size_t l = 0; l < 6; l++) {
            got g = {.d = 5};
            uint64_t rows = 0;
            pg_error err = {0};
            ck_assert_msg(
                pg_block_pass(path, 5, 1, limits[l], chunks[c], got_fn, &g, &rows, &err) == PG_OK,
                "%s", err.msg);
            size_t want = limits[l] < 37 ? (size_t)limits[l] : 37;
            ck_assert_uint_eq(rows, 37);
            ck_assert_uint_eq(g.rows, want);
            ck_assert_uint_le(g.max_rows, chunks[c]);
            ck_assert(!g.labels_null || want == 0);
            for (size_t i = 0; i < want * 5; i++) ck_assert(g.x[i] == (float)i * 0.5f - 3.0f);
            for (size_t i = 0; i < want; i++) ck_assert_int_eq(g.lab[i], (int)(i % 7));
        }
    /* labels not asked for: NULL; asked for on an unlabelled block: refused */
    got g = {.d = 5};
    ck_assert_int_eq(pg_block_pass(path, 5, 0, 37, 8, got_fn, &g, NULL, NULL), PG_OK);
    ck_assert(g.labels_null);
    char path2[4096];
    write_block(4, 3, 5, 0, path2, sizeof path2);
    got g2 = {.d = 3};
    ck_assert_int_eq(pg_block_pass(path2, 3, 1, 4, 2, got_fn, &g2, NULL, NULL), PG_EINVAL);
    ck_assert_uint_eq(g2.calls, 0);
    /* another width: refused before any row */
    ck_assert_int_eq(pg_block_pass(path, 4, 1, 37, 8, got_fn, &g2, NULL, NULL), PG_EFORMAT);
    ck_assert_uint_eq(g2.calls, 0);
    /* every single-byte flip is caught, values and labels included (the
     * CRCs of the two parts are joined), also when the flip lies past the
     * rows delivered */
    struct stat st;
    stat(path, &st);
    for (off_t at = 0; at < st.st_size; at++) {
        flip_byte(path, at);
        got h = {.d = 5};
        ck_assert_msg(pg_block_pass(path, 5, 1, at % 3 ? 37 : 2, 4, got_fn, &h, NULL, NULL) ==
                          PG_EFORMAT,
                      "flip at %ld not caught", (long)at);
        flip_byte(path, at);
    }
    ck_assert_int_eq(truncate(path, st.st_size - 1), 0);
    ck_assert_int_eq(pg_block_pass(path, 5, 1, 37, 4, got_fn, &g2, NULL, NULL), PG_EFORMAT);
}
END_TEST

START_TEST(partial_row_refused_and_abort_removes)
{
    pg_block_writer w;
    ck_assert_int_eq(pg_block_open(&w, dir, 3, NULL), PG_OK);
    float x[4] = {1, 2, 3, 4};
    ck_assert_int_eq(pg_block_write(&w, x, 4, NULL), PG_OK);
    uint64_t rows, bytes;
    ck_assert_int_eq(pg_block_finish(&w, NULL, &rows, &bytes, NULL), PG_EINVAL);
    char path[4096];
    snprintf(path, sizeof path, "%s", w.path);
    pg_block_abort(&w);
    ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

static void plant(const char *name, size_t bytes, int age_s, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    char zero[64] = {0};
    ck_assert_int_eq((int)write(fd, zero, bytes), (int)bytes);
    close(fd);
    struct utimbuf t = {time(NULL) - age_s, time(NULL) - age_s};
    ck_assert_int_eq(utime(path, &t), 0);
}

/* A spool file left by a writer that died (kill -9 mid-upload) is removed;
 * one a live writer holds (this process, or another sharing the data dir)
 * stays, and so does a just-created empty one; finished blocks are never
 * touched. Fails on the old code: no sweep, no lock. */
START_TEST(sweep_removes_only_dead_spools)
{
    char stale[4096], stale_empty[4096], fresh_empty[4096], kept[4096];
    plant(".tmp-00000000deadbeef", 48, 5, stale, sizeof stale); /* crashed seconds ago */
    plant(".tmp-00000000deadbee0", 0, 3600, stale_empty, sizeof stale_empty);
    plant(".tmp-00000000deadbee1", 0, 0, fresh_empty, sizeof fresh_empty);
    char tmp[4096];
    write_block(3, 2, 6, 0, tmp, sizeof tmp);
    snprintf(kept, sizeof kept, "%s/rows-0.f32", dir);
    ck_assert_int_eq(rename(tmp, kept), 0);
    /* a live writer's file, and one held by another process's lock */
    pg_block_writer w;
    ck_assert_int_eq(pg_block_open(&w, dir, 2, NULL), PG_OK);
    float x[4] = {1, 2, 3, 4};
    ck_assert_int_eq(pg_block_write(&w, x, 4, NULL), PG_OK);
    char held[4096];
    plant(".tmp-00000000deadbee2", 48, 3600, held, sizeof held);
    int pipefd[2];
    ck_assert_int_eq(pipe(pipefd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(held, O_RDONLY);
        char c = flock(fd, LOCK_EX) == 0 ? 'y' : 'n';
        if (write(pipefd[1], &c, 1) != 1) _exit(1);
        pause();
        _exit(0);
    }
    char c = 0;
    ck_assert_int_eq((int)read(pipefd[0], &c, 1), 1);
    ck_assert_int_eq(c, 'y');
    size_t removed = 99;
    ck_assert_int_eq(pg_block_sweep(dir, 60, &removed, NULL), PG_OK);
    ck_assert_uint_eq(removed, 2);
    ck_assert_int_eq(access(stale, F_OK), -1);
    ck_assert_int_eq(access(stale_empty, F_OK), -1);
    ck_assert_int_eq(access(fresh_empty, F_OK), 0);
    ck_assert_int_eq(access(held, F_OK), 0);
    ck_assert_int_eq(access(w.path, F_OK), 0);
    ck_assert_int_eq(access(kept, F_OK), 0);
    /* the live writer goes on and finishes normally */
    uint64_t rows, bytes;
    ck_assert_int_eq(pg_block_write(&w, x, 2, NULL), PG_OK);
    ck_assert_int_eq(pg_block_finish(&w, NULL, &rows, &bytes, NULL), PG_OK);
    ck_assert_uint_eq(rows, 3);
    pg_block_abort(&w);
    /* once the other process died its file is stale */
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    ck_assert_int_eq(pg_block_sweep(dir, 60, &removed, NULL), PG_OK);
    ck_assert_uint_eq(removed, 1);
    ck_assert_int_eq(access(held, F_OK), -1);
    /* a missing directory is no error */
    char none[4200];
    snprintf(none, sizeof none, "%s/absent", dir);
    ck_assert_int_eq(pg_block_sweep(none, 60, &removed, NULL), PG_OK);
    ck_assert_uint_eq(removed, 0);
    close(pipefd[0]);
    close(pipefd[1]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("block");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, round_trip);
    tcase_add_test(t, damage_detected);
    tcase_add_test(t, pass_reads_windows_and_checks_the_crc);
    tcase_add_test(t, partial_row_refused_and_abort_removes);
    tcase_add_test(t, sweep_removes_only_dead_spools);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
