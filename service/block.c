#include "service/block.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "engine/core/alloc.h"
#include "engine/core/rng.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "block files are written in host order, which must be little-endian"
#endif

static const char MAGIC[4] = {'P', 'G', 'R', 'B'};

static uint32_t crc_update(uint32_t crc, const void *p, size_t len)
{
    const unsigned char *b = p;
    /* zlib takes uInt lengths; feed in bounded pieces. */
    while (len) {
        uInt take = len > (1u << 30) ? (1u << 30) : (uInt)len;
        crc = (uint32_t)crc32(crc, b, take);
        b += take, len -= take;
    }
    return crc;
}

static int write_all(int fd, const void *p, size_t len)
{
    const char *b = p;
    while (len) {
        ssize_t w = write(fd, b, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w, len -= (size_t)w;
    }
    return 0;
}

int pg_block_open(pg_block_writer *w, const char *dir, size_t d, pg_error *err)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    if (d == 0 || d > UINT32_MAX) return pg_error_set(err, PG_EINVAL, "invalid row width %zu", d);
    uint64_t tag;
    if (pg_os_random(&tag, sizeof tag, err)) return PG_EIO;
    if (snprintf(w->path, sizeof w->path, "%s/.tmp-%016llx", dir, (unsigned long long)tag) >=
        (int)sizeof w->path)
        return pg_error_set(err, PG_EINVAL, "block path too long");
    w->fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (w->fd < 0)
        return pg_error_set(err, PG_EIO, "cannot create %s: %s", w->path, strerror(errno));
    /* Held until the file is renamed or removed: pg_block_sweep leaves a
     * locked file alone. The header is written only once the lock is ours,
     * so an unlocked file with a header belongs to no live writer. */
    int lk;
    while ((lk = flock(w->fd, LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (lk) {
        pg_error_set(err, PG_EIO, "cannot lock %s: %s", w->path, strerror(errno));
        pg_block_abort(w);
        return PG_EIO;
    }
    unsigned char zero[PG_BLOCK_HEADER] = {0};
    if (write_all(w->fd, zero, sizeof zero)) {
        pg_error_set(err, PG_EIO, "cannot write %s: %s", w->path, strerror(errno));
        pg_block_abort(w);
        return PG_EIO;
    }
    w->d = d;
    w->crc = (uint32_t)crc32(0L, Z_NULL, 0);
    return PG_OK;
}

int pg_block_write(pg_block_writer *w, const float *x, size_t count, pg_error *err)
{
    if (w->fd < 0) return pg_error_set(err, PG_ESTATE, "block writer is closed");
    size_t bytes;
    if (pg_size_mul(count, sizeof(float), &bytes))
        return pg_error_set(err, PG_ERANGE, "block too large");
    if (write_all(w->fd, x, bytes))
        return pg_error_set(err, PG_EIO, "cannot write %s: %s", w->path, strerror(errno));
    w->crc = crc_update(w->crc, x, bytes);
    w->values += count;
    return PG_OK;
}

static void put32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

int pg_block_finish(pg_block_writer *w, const int32_t *labels, uint64_t *rows, uint64_t *bytes,
                    pg_error *err)
{
    if (w->fd < 0) return pg_error_set(err, PG_ESTATE, "block writer is closed");
    if (w->values % w->d)
        return pg_error_set(err, PG_EINVAL, "%llu values are not a whole number of rows of %zu",
                            (unsigned long long)w->values, w->d);
    uint64_t n = w->values / w->d;
    if (labels && n) {
        if (write_all(w->fd, labels, (size_t)n * sizeof *labels))
            return pg_error_set(err, PG_EIO, "cannot write %s: %s", w->path, strerror(errno));
        w->crc = crc_update(w->crc, labels, (size_t)n * sizeof *labels);
    }
    unsigned char h[PG_BLOCK_HEADER];
    memcpy(h, MAGIC, 4);
    put32(h + 4, 1);
    memcpy(h + 8, &n, 8);
    put32(h + 16, (uint32_t)w->d);
    put32(h + 20, labels ? 1u : 0u);
    put32(h + 24, w->crc);
    put32(h + 28, crc_update((uint32_t)crc32(0L, Z_NULL, 0), h, 28));
    if (pwrite(w->fd, h, sizeof h, 0) != (ssize_t)sizeof h || fsync(w->fd) != 0)
        return pg_error_set(err, PG_EIO, "cannot finish %s: %s", w->path, strerror(errno));
    *rows = n;
    *bytes = PG_BLOCK_HEADER + w->values * 4 + (labels ? n * 4 : 0);
    return PG_OK;
}

void pg_block_close(pg_block_writer *w)
{
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
    w->path[0] = '\0';
}

int pg_block_sweep(const char *dir, int min_age_s, size_t *removed, pg_error *err)
{
    *removed = 0;
    DIR *dh = opendir(dir);
    if (!dh) {
        if (errno == ENOENT) return PG_OK;
        return pg_error_set(err, PG_EIO, "cannot read %s: %s", dir, strerror(errno));
    }
    struct dirent *e;
    time_t now = time(NULL);
    while ((e = readdir(dh))) {
        if (strncmp(e->d_name, ".tmp-", 5)) continue;
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) continue;
        struct stat st;
        /* Locked: a writer (this process or another sharing the dir) is at
         * work. Unlocked and empty: maybe a writer between its open and its
         * lock, so only an old one goes. */
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            (st.st_size >= PG_BLOCK_HEADER || now - st.st_mtime >= min_age_s) && unlink(path) == 0)
            (*removed)++;
        close(fd); /* releases the lock */
    }
    closedir(dh);
    return PG_OK;
}

void pg_block_abort(pg_block_writer *w)
{
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
    if (w->path[0]) unlink(w->path);
    w->path[0] = '\0';
}

/* What a block's header says, checked against itself and the file's length. */
typedef struct {
    uint64_t n;
    uint32_t d32, has_labels, crc;
    size_t vals, vbytes, lbytes, total;
} block_head;

static int head_read(int fd, const char *path, block_head *b, pg_error *err)
{
    struct stat st;
    unsigned char h[PG_BLOCK_HEADER];
    if (fstat(fd, &st) || st.st_size < PG_BLOCK_HEADER ||
        pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h)
        return pg_error_set(err, PG_EFORMAT, "%s: truncated block header", path);
    uint32_t version, hcrc;
    memcpy(&version, h + 4, 4);
    memcpy(&b->n, h + 8, 8);
    memcpy(&b->d32, h + 16, 4);
    memcpy(&b->has_labels, h + 20, 4);
    memcpy(&b->crc, h + 24, 4);
    memcpy(&hcrc, h + 28, 4);
    if (memcmp(h, MAGIC, 4) || version != 1 ||
        hcrc != crc_update((uint32_t)crc32(0L, Z_NULL, 0), h, 28) || b->d32 == 0 ||
        b->has_labels > 1)
        return pg_error_set(err, PG_EFORMAT, "%s: not a valid row block (bad header)", path);
    if (b->n > SIZE_MAX || pg_size_mul((size_t)b->n, b->d32, &b->vals) ||
        pg_size_mul(b->vals, 4, &b->vbytes) ||
        pg_size_mul((size_t)b->n, b->has_labels ? 4 : 0, &b->lbytes) ||
        pg_size_add(b->vbytes, b->lbytes, &b->total) ||
        pg_size_add(b->total, PG_BLOCK_HEADER, &b->total) || (uint64_t)st.st_size != b->total)
        return pg_error_set(err, PG_EFORMAT, "%s: file length does not match its header", path);
    return PG_OK;
}

/* Opens a block file and reads its checked header, for pg_block_read and
 * pg_block_pass: PG_OK with *fd open (the caller closes it), or the error
 * with nothing left open. */
static int head_open(const char *path, int *fd, block_head *b, pg_error *err)
{
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) return pg_error_set(err, PG_EIO, "cannot open %s: %s", path, strerror(errno));
    int rc = head_read(*fd, path, b, err);
    if (rc) close(*fd);
    return rc;
}

int pg_block_read(const char *path, size_t max_bytes, pg_block *out, pg_error *err)
{
    memset(out, 0, sizeof *out);
    int fd;
    block_head bh;
    int rc = head_open(path, &fd, &bh, err);
    if (rc) return rc;
    float *x = NULL;
    int32_t *labels = NULL;
    uint32_t d32 = bh.d32, has_labels = bh.has_labels, crc = bh.crc;
    uint64_t n = bh.n;
    size_t vals = bh.vals, vbytes = bh.vbytes, lbytes = bh.lbytes, total = bh.total;
    if (total > max_bytes) {
        rc = pg_error_set(err, PG_ENOMEM, "%s: block of %zu bytes exceeds the limit", path, total);
        goto done;
    }
    x = pg_alloc_f32(vals ? vals : 1);
    labels = has_labels ? pg_alloc(n ? lbytes : 4) : NULL;
    if (!x || (has_labels && !labels)) {
        rc = pg_error_set(err, PG_ENOMEM, "out of memory reading %s", path);
        goto done;
    }
    if ((vbytes && pread(fd, x, vbytes, PG_BLOCK_HEADER) != (ssize_t)vbytes) ||
        (lbytes &&
         pread(fd, labels, lbytes, (off_t)(PG_BLOCK_HEADER + vbytes)) != (ssize_t)lbytes)) {
        rc = pg_error_set(err, PG_EIO, "%s: short read", path);
        goto done;
    }
    uint32_t c = crc_update((uint32_t)crc32(0L, Z_NULL, 0), x, vbytes);
    c = crc_update(c, labels, lbytes);
    if (c != crc) {
        rc = pg_error_set(err, PG_EFORMAT, "%s: payload checksum mismatch", path);
        goto done;
    }
    out->n = n;
    out->d = d32;
    out->x = x;
    out->labels = labels;
    x = NULL;
    labels = NULL;
done:
    close(fd);
    pg_free(x);
    pg_free(labels);
    return rc;
}

void pg_block_free(pg_block *b)
{
    pg_free(b->x);
    pg_free(b->labels);
    b->x = NULL;
    b->labels = NULL;
}

int pg_block_pass(const char *path, size_t d, int want_labels, uint64_t limit, size_t chunk,
                  pg_rowsrc_fn fn, void *ctx, uint64_t *rows, pg_error *err)
{
    if (chunk == 0) return pg_error_set(err, PG_EINVAL, "chunk must be >= 1");
    int fd;
    block_head bh;
    int rc = head_open(path, &fd, &bh, err);
    if (rc) return rc;
    float *x = NULL;
    int32_t *labels = NULL;
    uint32_t d32 = bh.d32, has_labels = bh.has_labels, crc = bh.crc;
    uint64_t n = bh.n;
    size_t vbytes = bh.vbytes, lbytes = bh.lbytes;
    if (d32 != d) {
        rc = pg_error_set(err, PG_EFORMAT, "%s holds rows of %u values, the dataset has %zu", path,
                          d32, d);
        goto done;
    }
    if (want_labels && !has_labels) {
        rc = pg_error_set(err, PG_EINVAL,
                          "the dataset declares classes but some rows carry no "
                          "labels");
        goto done;
    }
    size_t w = (uint64_t)chunk < n ? chunk : (size_t)(n ? n : 1);
    x = pg_alloc_f32(w * d);
    labels = has_labels ? pg_alloc(w * sizeof *labels) : NULL;
    if (!x || (has_labels && !labels)) {
        rc = pg_error_set(err, PG_ENOMEM, "out of memory reading %s", path);
        goto done;
    }
    /* CRC of values and of labels separately, in file order each, joined at
     * the end: the labels follow all the values in the file. */
    uint32_t cx = (uint32_t)crc32(0L, Z_NULL, 0), cl = cx;
    for (uint64_t r = 0; r < n;) {
        size_t m = n - r < (uint64_t)w ? (size_t)(n - r) : w;
        size_t xb = m * d * 4;
        off_t xo = (off_t)(PG_BLOCK_HEADER + r * d * 4);
        off_t lo = (off_t)(PG_BLOCK_HEADER + vbytes + r * 4);
        if (pread(fd, x, xb, xo) != (ssize_t)xb ||
            (has_labels && pread(fd, labels, m * 4, lo) != (ssize_t)(m * 4))) {
            rc = pg_error_set(err, PG_EIO, "%s: short read", path);
            goto done;
        }
        cx = crc_update(cx, x, xb);
        if (has_labels) cl = crc_update(cl, labels, m * 4);
        if (r < limit) {
            size_t give = limit - r < (uint64_t)m ? (size_t)(limit - r) : m;
            if ((rc = fn(ctx, x, want_labels ? labels : NULL, give, err))) goto done;
        }
        r += m;
    }
    uint32_t c = has_labels ? (uint32_t)crc32_combine(cx, cl, (z_off_t)lbytes) : cx;
    if (c != crc) {
        rc = pg_error_set(err, PG_EFORMAT, "%s: payload checksum mismatch", path);
        goto done;
    }
    if (rows) *rows = n;
done:
    close(fd);
    pg_free(x);
    pg_free(labels);
    return rc;
}
