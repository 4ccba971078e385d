/* libFuzzer target: POST /v1/datasets bodies through the strict parser, the
 * semantic check (privacy calibration included) and the metadata round trip. */
#include <stdint.h>
#include <stdlib.h>

#include "api/internal.h"
#include "tests/fuzz/fuzz_check.h"
#include "service/datasets/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pg_req r = {0};
    r.body = (char *)(uintptr_t)data; /* read only */
    r.body_len = size;
    json_t *b = pg_api_body_json(&r);
    if (b) {
        pg_datasets_spec s;
        if (!pg_api_parse_dataset(&r, b, &s)) {
            char field[PG_FIELD_MAX];
            if (!pg_datasets_spec_check(&s, 1 << 16, field, NULL)) {
                char *js;
                if (!pg_datasets_spec_to_json(&s, &js, NULL)) {
                    pg_datasets_spec t;
                    FUZZ_CHECK(pg_datasets_spec_from_json(js, &t, NULL) == PG_OK && t.d == s.d);
                    free(js);
                }
            }
        }
        json_decref(b);
    }
    free(r.resp);
    return 0;
}
