/* libFuzzer target: the Privgen-Declaration header of a rows upload (any
 * bytes a client sends) against a local and a central dataset. Properties:
 * a malformed declaration names a `declaration...` field; a well-formed one
 * lists at most PG_DATASETS_DIFF_MAX differences, each naming its field. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "service/calib.h"
#include "service/datasets/spec.h"
#include "tests/fuzz/fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *txt = malloc(size + 1);
    if (!txt) return 0;
    memcpy(txt, data, size);
    txt[size] = '\0'; /* a header value is a C string */
    pg_datasets_spec s = {.name = "f",
                          .ndim = 1,
                          .shape = {2},
                          .d = 2,
                          .lo = -1,
                          .hi = 1,
                          .model = PG_PRIV_LOCAL,
                          .mechanism = PG_MECH_LAPLACE,
                          .epsilon = 2,
                          .sensitivity = 2,
                          .noise_scale = 1,
                          .cols = 2,
                          .clip_norm = 1,
                          .clip_radius = 1};
    for (int model = 0; model < 2; model++) {
        s.model = model ? PG_PRIV_CENTRAL : PG_PRIV_LOCAL;
        pg_datasets_diff d[PG_DATASETS_DIFF_MAX];
        int n = -1;
        uint64_t rows;
        char field[PG_FIELD_MAX];
        pg_error err = {0};
        if (pg_datasets_decl_match(&s, txt, d, &n, &rows, field, &err)) {
            FUZZ_CHECK(!strncmp(field, "declaration", 11) && err.msg[0]);
        } else {
            FUZZ_CHECK(n >= 0 && n <= PG_DATASETS_DIFF_MAX);
            for (int i = 0; i < n; i++)
                FUZZ_CHECK(!strncmp(d[i].field, "declaration.", 12) && d[i].message[0]);
            if (model) FUZZ_CHECK(n == 1 && !strcmp(d[0].field, "declaration.model"));
        }
    }
    free(txt);
    return 0;
}
