/* libFuzzer target: arbitrary bytes through the graphical-model blob loader
 * (engine/pgm). A load returns an error or a model that works: it saves back
 * to the same bytes, its clique marginals sum to its total, and sampled codes
 * are in range. The checksum gates everything, so each input is also tried
 * with its CRC recomputed, which lets mutations reach the structural checks. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "engine/pgm/pgm.h"
#include "tests/fuzz/fuzz_check.h"

static void run(const unsigned char *buf, size_t len)
{
    pg_pgm_model *m = NULL;
    if (pg_pgm_load(buf, len, &m, NULL) != PG_OK) {
        FUZZ_CHECK(m == NULL);
        return;
    }
    unsigned char *again = NULL;
    size_t n = 0;
    FUZZ_CHECK(pg_pgm_save(m, &again, &n, NULL) == PG_OK);
    FUZZ_CHECK(n == len && memcmp(again, buf, len) == 0);
    free(again);
    const double total = pg_pgm_model_total(m);
    const size_t *sizes = pg_pgm_model_sizes(m), d = pg_pgm_model_nattr(m);
    for (size_t j = 0; j < pg_pgm_model_ncliques(m); j++) {
        size_t k, cells = 1;
        const size_t *a = pg_pgm_model_clique(m, j, &k);
        for (size_t i = 0; i < k; i++) cells *= sizes[a[i]];
        double *out = malloc(cells * sizeof *out), s = 0;
        FUZZ_CHECK(out != NULL);
        FUZZ_CHECK(pg_pgm_marginal(m, a, k, out, NULL) == PG_OK);
        for (size_t c = 0; c < cells; c++) s += out[c];
        FUZZ_CHECK(fabs(s - total) <= 1e-6 * total);
        free(out);
    }
    uint32_t *codes = malloc(16 * d * sizeof *codes);
    FUZZ_CHECK(codes != NULL);
    pg_rng r;
    pg_rng_seeded(&r, 1, 2);
    FUZZ_CHECK(pg_pgm_sample(m, &r, 16, codes, NULL) == PG_OK);
    for (size_t i = 0; i < 16 * d; i++) FUZZ_CHECK(codes[i] < sizes[i % d]);
    free(codes);
    pg_pgm_model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    run(data, size);
    if (size >= 8 && size <= (1u << 20)) {
        unsigned char *b = malloc(size);
        if (!b) return 0;
        memcpy(b, data, size);
        uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), b, (uInt)(size - 4));
        for (int i = 0; i < 4; i++) b[size - 4 + i] = (unsigned char)(crc >> (8 * i));
        run(b, size);
        free(b);
    }
    return 0;
}
