/* Serving samples from a generator snapshot: pooled workspaces, the
 * single-thread path for small calls and concurrent callers give the same
 * bits as the plain path (a fresh workspace per call, the team's thread
 * count), which is what main served before the pool. */
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/methods/generator.h"
#include "engine/methods/snapshot.h"
#include "support/pg_test.h"

#define LATENT 8
#define OUT    5
/* The sampler's constants (generator.c): chunk rows and latent stream. */
#define CHUNK  256
#define STREAM 0x53414d50ull

static const char *ARCH = "{\"input\": 8, \"layers\": ["
                          "{\"type\": \"linear\", \"out\": 96}, {\"type\": \"relu\"},"
                          "{\"type\": \"linear\", \"out\": 80}, {\"type\": \"relu\"},"
                          "{\"type\": \"linear\", \"out\": 5}, {\"type\": \"tanh\"}]}";

static pg_generator gen_desc(void)
{
    pg_generator g = {.latent = {PG_NN_LATENT_UNIFORM, -1.0f, 1.0f},
                      .latent_dim = LATENT,
                      .num_classes = 0,
                      .d = OUT,
                      .out_scale = 2.5f,
                      .out_shift = 0.25f};
    strcpy(g.arch, "mlp");
    return g;
}

/* The sampler as it was before pooling: a new workspace per call, the
 * caller's thread count, chunks of CHUNK rows from one latent stream. */
static void reference(const pg_nn *net, const pg_generator *g, size_t n, uint64_t seed, float *out)
{
    pg_error err = {0};
    pg_nn_snapshot *nn;
    ck_assert_int_eq(pg_nn_snapshot_take(net, &nn, &err), PG_OK);
    pg_nn_ws *ws;
    ck_assert_int_eq(pg_nn_ws_create(nn, CHUNK, &ws, &err), PG_OK);
    float *z = pg_alloc_f32(CHUNK * g->latent_dim);
    pg_rng rng;
    pg_rng_seeded(&rng, seed, STREAM);
    for (size_t done = 0; done < n;) {
        size_t b = n - done < CHUNK ? n - done : CHUNK;
        pg_nn_latent_sample(&g->latent, &rng, z, b * g->latent_dim);
        const float *y;
        ck_assert_int_eq(pg_nn_snapshot_forward(nn, ws, z, NULL, b, &y, &err), PG_OK);
        memcpy(out + done * g->d, y, b * g->d * sizeof(float));
        pg_generator_to_data(g, NULL, out + done * g->d, g->d, b); /* no heads: no draws */
        done += b;
    }
    pg_free(z);
    pg_nn_ws_free(ws);
    pg_nn_snapshot_free(nn);
}

static pg_nn *make_net(void)
{
    pg_nn *net;
    pg_error err = {0};
    ck_assert_int_eq(pg_nn_create(ARCH, 4, 17, &net, &err), PG_OK);
    pg_nn_set_train(net, false);
    return net;
}

START_TEST(pooled_samples_equal_the_plain_path)
{
    pg_nn *net = make_net();
    pg_generator g = gen_desc();
    pg_snapshot *s;
    pg_error err = {0};
    ck_assert_int_eq(pg_generator_snapshot(&g, net, 3, &s, &err), PG_OK);
    /* A small call (one thread), a partial chunk, several chunks, repeated
     * so that later calls run on a pooled workspace. */
    const size_t ns[] = {1, 64, 255, 256, 257, 700, 64, 1};
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
        size_t n = ns[c];
        float *a = pg_alloc_f32(n * OUT), *b = pg_alloc_f32(n * OUT);
        for (int threads = 1; threads <= 2; threads++) {
            omp_set_num_threads(threads);
            ck_assert_int_eq(pg_snapshot_sample(s, n, 1000 + c, -1, a, &err), PG_OK);
            reference(net, &g, n, 1000 + c, b);
            ck_assert_mem_eq(a, b, n * OUT * sizeof(float));
            /* the caller's thread count is left as it was */
            ck_assert_int_eq(omp_get_max_threads(), threads);
        }
        pg_free(a);
        pg_free(b);
    }
    pg_snapshot_release(s);
    pg_nn_free(net);
}
END_TEST

typedef struct job {
    pg_snapshot *s;
    size_t n;
    uint64_t seed;
    const float *want;
    int bad;
} job;

static void *run(void *arg)
{
    job *j = arg;
    pg_error err = {0};
    float *x = pg_alloc_f32(j->n * OUT);
    for (int rep = 0; rep < 20; rep++) {
        if (pg_snapshot_sample(j->s, j->n, j->seed, -1, x, &err) ||
            memcmp(x, j->want, j->n * OUT * sizeof(float)))
            j->bad++;
    }
    pg_free(x);
    return NULL;
}

/* More concurrent callers than the pool keeps (8): each gets its own
 * workspace, and every result is the plain path's. */
START_TEST(concurrent_callers_share_the_pool)
{
    pg_nn *net = make_net();
    pg_generator g = gen_desc();
    pg_snapshot *s;
    pg_error err = {0};
    ck_assert_int_eq(pg_generator_snapshot(&g, net, 3, &s, &err), PG_OK);
    enum { T = 10 };
    job jobs[T];
    pthread_t th[T];
    float *want[T];
    for (int t = 0; t < T; t++) {
        size_t n = 40 + 61 * (size_t)t;
        want[t] = pg_alloc_f32(n * OUT);
        reference(net, &g, n, (uint64_t)t, want[t]);
        jobs[t] = (job){s, n, (uint64_t)t, want[t], 0};
    }
    for (int t = 0; t < T; t++) pthread_create(&th[t], NULL, run, &jobs[t]);
    for (int t = 0; t < T; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < T; t++) {
        ck_assert_int_eq(jobs[t].bad, 0);
        pg_free(want[t]);
    }
    /* The snapshot outlives none of its workspaces: release frees them. */
    pg_snapshot_release(s);
    pg_nn_free(net);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("methods/generator_sample");
    TCase *tc = tcase_create("sample");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, pooled_samples_equal_the_plain_path);
    tcase_add_test(tc, concurrent_callers_share_the_pool);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
