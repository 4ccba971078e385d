/* libFuzzer target: {"rows":..,"labels":..} bodies against a labeled central
 * dataset (width 3, range [0,1], 4 classes). Accepted output must satisfy
 * the rules the parser enforces. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "api/internal.h"
#include "tests/fuzz/fuzz_check.h"
#include "engine/core/alloc.h"
#include "service/datasets/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pg_datasets_spec spec = {.name = "f",
                             .ndim = 1,
                             .shape = {3},
                             .d = 3,
                             .lo = 0,
                             .hi = 1,
                             .num_classes = 4,
                             .model = PG_PRIV_CENTRAL,
                             .budget_epsilon = 1,
                             .budget_delta = 1e-5};
    pg_req r = {0};
    r.body = (char *)(uintptr_t)data;
    r.body_len = size;
    json_t *b = pg_api_body_json(&r);
    if (b) {
        float *x;
        int64_t *lab;
        size_t n;
        if (!pg_api_parse_rows(&r, b, &spec, &x, &lab, &n)) {
            for (size_t i = 0; i < n * 3; i++) FUZZ_CHECK(x[i] >= 0.0f && x[i] <= 1.0f);
            for (size_t i = 0; lab && i < n; i++) FUZZ_CHECK(lab[i] >= 0 && lab[i] < 4);
            pg_free(x);
            pg_free(lab);
        }
        json_decref(b);
    }
    free(r.resp);
    return 0;
}
