/* swd_core - release, flow step, store and replay of the sliced-Wasserstein
 * flows (contract in swd.h). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/core/sort.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/swd.h"
#include "engine/methods/trainer.h"
#include "engine/ot/sliced.h"
#include "engine/privacy/privacy.h"

void pg_swd_ws_free(pg_swd_ws *ws)
{
    if (!ws) return;
    pg_free(ws->px);
    pg_free(ws->disp);
    pg_free(ws->keys);
    pg_free(ws->keys_tmp);
    pg_free(ws->smooth);
    pg_free(ws->idx);
    pg_free(ws->idx_tmp);
    pg_free(ws->py);
    pg_free(ws->py_tmp);
    pg_free(ws->vel);
    pg_free(ws->theta_s);
    pg_free(ws->q_s);
    pg_free(ws->perm);
    pg_free(ws->srng);
    memset(ws, 0, sizeof *ws);
}

int pg_swd_ws_init(pg_swd_ws *ws, size_t n, size_t d, size_t k, size_t m, size_t levels,
                   size_t pool, pg_error *err)
{
    memset(ws, 0, sizeof *ws);
    if (n == 0 || d == 0 || k == 0 || levels == 0)
        return pg_error_set(err, PG_EINVAL, "flow workspace sizes must be positive");
    size_t kn, km, nd, dk, kl;
    if (pg_size_mul(k, n, &kn) || pg_size_mul(k, m ? m : 1, &km) || pg_size_mul(n, d, &nd) ||
        pg_size_mul(d, k, &dk) || pg_size_mul(k, levels, &kl))
        return pg_error_set(err, PG_ENOMEM, "flow workspace sizes overflow");
    int nt = omp_get_max_threads(), np = omp_get_num_procs();
    if (np > nt) nt = np;
    size_t tn, tm;
    if (pg_size_mul((size_t)nt, n, &tn) || pg_size_mul((size_t)nt, m ? m : 1, &tm))
        return pg_error_set(err, PG_ENOMEM, "flow workspace sizes overflow");
    ws->nthreads = nt;
    ws->n = n;
    ws->d = d;
    ws->k = k;
    ws->m = m;
    ws->levels = levels;
    ws->px = pg_alloc_f32(kn);
    ws->disp = pg_alloc_f32(kn);
    ws->keys = pg_alloc_f32(tn);
    ws->keys_tmp = pg_alloc_f32(tn);
    ws->smooth = pg_alloc_f32(tn);
    ws->idx = pg_alloc(tn * sizeof(uint32_t));
    ws->idx_tmp = pg_alloc(tn * sizeof(uint32_t));
    ws->py = pg_alloc_f32(km);
    ws->py_tmp = pg_alloc_f32(tm);
    ws->srng = pg_calloc((size_t)nt, sizeof(pg_rng));
    ws->vel = pg_alloc_f32(nd);
    ws->theta_s = pg_alloc_f32(dk);
    ws->q_s = pg_alloc_f32(kl);
    ws->perm_cap = pool ? pool : 1;
    ws->perm = pg_alloc(ws->perm_cap * sizeof(uint32_t));
    if (!ws->px || !ws->disp || !ws->keys || !ws->keys_tmp || !ws->smooth || !ws->idx ||
        !ws->idx_tmp || !ws->py || !ws->py_tmp || !ws->vel || !ws->theta_s || !ws->q_s ||
        !ws->perm || !ws->srng) {
        pg_swd_ws_free(ws);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the flow workspace");
    }
    return PG_OK;
}

int pg_swd_release(pg_swd_ws *ws, pg_rng *rng, const float *y, size_t m, const float *theta,
                   size_t k, double sigma, float *q, size_t levels, pg_error *err)
{
    if (m == 0 || m > ws->m || k == 0 || k > ws->k || (q && (levels == 0)))
        return pg_error_set(err, PG_EINVAL,
                            "release of %zu rows on %zu directions exceeds the "
                            "workspace",
                            m, k);
    if (!(sigma >= 0.0) || !isfinite(sigma))
        return pg_error_set(err, PG_EINVAL, "release noise must be finite and non-negative");
    if (sigma > 0.0 && (!rng || !pg_rng_is_secure(rng)))
        return pg_error_set(err, PG_EPRIVACY, "release noise must come from the secure generator");
    pg_mat ym = pg_mat_view((float *)y, m, ws->d);
    pg_mat tm = pg_mat_view((float *)theta, ws->d, k);
    pg_mat pm = pg_mat_view(ws->py, k, m);
    int rc = pg_sw_project(&ym, &tm, &pm, err);
    if (rc) return rc;
    /* Directions are independent: each thread noises, sorts and tabulates
     * whole rows. Thread 0 draws from the caller's secure generator, the
     * others from secure generators of their own (keyed once from the OS). */
    int nt = omp_get_max_threads(); /* scratch is sized for max(threads, cores) */
    if (nt > ws->nthreads) nt = ws->nthreads;
    if (sigma > 0.0 && ws->srng_ready < nt) {
        for (int t = ws->srng_ready > 1 ? ws->srng_ready : 1; t < nt; t++)
            if ((rc = pg_rng_secure(&ws->srng[t], err))) return rc;
        ws->srng_ready = nt;
    }
    int bad = PG_OK;
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num();
        pg_rng *tr = t == 0 ? rng : &ws->srng[t];
        float *tmp = ws->py_tmp + (size_t)t * m;
#pragma omp for schedule(dynamic, 4)
        for (size_t j = 0; j < k; j++) {
            float *row = ws->py + j * m;
            if (sigma > 0.0 && pg_privacy_gaussian_noise(tr, row, m, sigma, NULL) != PG_OK) {
#pragma omp atomic write
                bad = PG_EPRIVACY;
            }
            pg_sort_f32(row, m, tmp);
            if (q)
                for (size_t l = 0; l < levels; l++)
                    q[j * levels + l] = pg_sw_quantile(row, m, ((double)l + 0.5) / (double)levels);
        }
    }
    if (bad) return pg_error_set(err, bad, "the release noise could not be drawn");
    return PG_OK;
}

int pg_swd_flow_step(pg_swd_ws *ws, const pg_swd_flow_cfg *cfg, float *x, size_t n,
                     const float *theta, size_t k, const float *q, pg_rng *rng, double *loss,
                     pg_error *err)
{
    size_t d = ws->d, L = cfg->levels;
    if (n == 0 || n > ws->n || k == 0 || k > ws->k || cfg->d != d)
        return pg_error_set(err, PG_EINVAL, "flow step shapes exceed the workspace");
    pg_mat xm = pg_mat_view(x, n, d);
    pg_mat tm = pg_mat_view((float *)theta, d, k);
    pg_mat pm = pg_mat_view(ws->px, k, n);
    int rc = pg_sw_project(&xm, &tm, &pm, err);
    if (rc) return rc;
    /* Smoothing noise of direction j comes from stream j of a per-step seed,
     * so the result does not depend on the thread count. */
    uint64_t sub = pg_rng_u64(rng);
    double acc = 0.0;
    int nt = omp_get_max_threads(); /* scratch is sized for max(threads, cores) */
    if (nt > ws->nthreads) nt = ws->nthreads;
#pragma omp parallel num_threads(nt) reduction(+ : acc)
    {
        int t = omp_get_thread_num();
        float *s = ws->smooth + (size_t)t * n, *keys = ws->keys + (size_t)t * n;
        float *ktmp = ws->keys_tmp + (size_t)t * n;
        uint32_t *idx = ws->idx + (size_t)t * n, *itmp = ws->idx_tmp + (size_t)t * n;
#pragma omp for schedule(dynamic, 4)
        for (size_t j = 0; j < k; j++) {
            const float *pj = ws->px + j * n;
            const float *qj = q + j * L;
            float *dj = ws->disp + j * n;
            /* F_j: the empirical law of the smoothed particle projections,
             * made continuous by linear interpolation between order
             * statistics at the Hazen positions, so with smooth = 0 particle i
             * of rank r sits at level (r + 1/2)/n exactly (matching by rank). */
            pg_rng sr;
            pg_rng_seeded(&sr, sub, (uint64_t)j);
            for (size_t i = 0; i < n; i++)
                s[i] =
                    cfg->smooth > 0.0 ? pj[i] + (float)(cfg->smooth * pg_rng_normal(&sr)) : pj[i];
            pg_sort_f32(s, n, ktmp);
            for (size_t i = 0; i < n; i++) {
                keys[i] = pj[i];
                idx[i] = (uint32_t)i;
            }
            pg_sort_f32_idx(keys, idx, n, ktmp, itmp);
            size_t c = 0; /* #{s <= z}, nondecreasing along sorted z */
            for (size_t r = 0; r < n; r++) {
                float z = keys[r];
                while (c < n && s[c] <= z) c++;
                double pos;
                if (c == 0)
                    pos = 0.0;
                else if (c == n)
                    pos = (double)(n - 1);
                else {
                    double lo = s[c - 1], hi = s[c];
                    pos = (double)(c - 1) + (hi > lo ? ((double)z - lo) / (hi - lo) : 0.0);
                }
                double u = (pos + 0.5) / (double)n;
                float tq = pg_sw_quantile(qj, L, u);
                float dz = z - tq;
                dj[idx[r]] = dz;
                acc += (double)dz * dz;
            }
        }
    }
    /* v = -(1/k) D^T Theta^T (n x d), one GEMM. */
    pg_mat dm = pg_mat_view(ws->disp, k, n);
    pg_mat vm = pg_mat_view(ws->vel, n, d);
    rc = pg_gemm((float)(-cfg->h / (double)k), &dm, true, &tm, true, 0.0f, &vm, err);
    if (rc) return rc;
    /* Label coordinates are clamped (swd.h): drift and diffusion move the
     * feature block only, so a particle keeps alpha onehot(c) exactly. */
    float diff = (float)sqrt(2.0 * cfg->lambda * cfg->h);
    size_t feat = d - cfg->classes;
    bool finite = true;
    for (size_t i = 0; i < n; i++)
        for (size_t a = 0; a < feat; a++) {
            float v = x[i * d + a] + ws->vel[i * d + a];
            if (diff > 0.0f) v += diff * (float)pg_rng_normal(rng);
            if (!isfinite(v)) finite = false;
            x[i * d + a] = v;
        }
    if (!finite) return pg_error_set(err, PG_ENUMERIC, "particles left the finite range");
    if (loss) *loss = acc / ((double)k * (double)n);
    return PG_OK;
}

/* ---- labels -------------------------------------------------------------- */

void pg_swd_augment(const float *x, const int32_t *labels, size_t n, size_t d, size_t classes,
                    double alpha, float *out)
{
    size_t D = d + classes;
    for (size_t i = 0; i < n; i++) {
        float *row = out + i * D;
        memcpy(row, x + i * d, d * sizeof(float));
        if (!classes) continue;
        memset(row + d, 0, classes * sizeof(float));
        row[d + (size_t)labels[i]] = (float)alpha;
    }
}

void pg_swd_init_particles(const pg_swd_flow_cfg *cfg, pg_rng *rng, float *x, size_t n,
                           double init_std)
{
    size_t D = cfg->d, C = cfg->classes;
    pg_rng_fill_normal(rng, x, n * D, 0.0f, (float)init_std);
    if (!C) return;
    /* Classes (off + i) mod C: balanced to within one, the surplus classes
     * drawn through off. The flow treats particles alike, so their order
     * carries nothing and needs no shuffle. */
    size_t off = (size_t)pg_rng_below(rng, C);
    for (size_t i = 0; i < n; i++) {
        float *lab = x + i * D + (D - C);
        memset(lab, 0, C * sizeof(float));
        lab[(off + i) % C] = (float)cfg->alpha;
    }
}

int pg_swd_particle_label(const pg_swd_flow_cfg *cfg, const float *row)
{
    size_t C = cfg->classes;
    if (!C) return -1;
    const float *lab = row + (cfg->d - C);
    for (size_t c = 0; c < C; c++)
        if (lab[c] != 0.0f) return (int)c;
    return -1;
}

bool pg_swd_labels_valid(const pg_swd_flow_cfg *cfg, const float *x, size_t n)
{
    size_t C = cfg->classes, D = cfg->d;
    float a = (float)cfg->alpha;
    for (size_t i = 0; i < n && C; i++) {
        const float *lab = x + i * D + (D - C);
        size_t hot = 0;
        for (size_t c = 0; c < C; c++) {
            if (lab[c] == a)
                hot++;
            else if (lab[c] != 0.0f)
                return false;
        }
        if (hot != 1) return false;
    }
    return true;
}

/* ---- store ------------------------------------------------------------- */

int pg_swd_store_new(size_t d, size_t k, size_t levels, size_t cap, pg_swd_store **out,
                     pg_error *err)
{
    *out = NULL;
    size_t a, b;
    if (pg_size_mul(d, k, &a) || pg_size_mul(a, cap, &a) || pg_size_mul(k, levels, &b) ||
        pg_size_mul(b, cap, &b))
        return pg_error_set(err, PG_ENOMEM, "the flow's release store is too large");
    pg_swd_store *s = calloc(1, sizeof *s);
    if (!s) return pg_error_set(err, PG_ENOMEM, "cannot allocate the release store");
    atomic_init(&s->refs, 1);
    s->d = d;
    s->k = k;
    s->levels = levels;
    s->cap = cap;
    s->theta = pg_alloc_f32(a ? a : 1);
    s->q = pg_alloc_f32(b ? b : 1);
    if (!s->theta || !s->q) {
        pg_free(s->theta);
        pg_free(s->q);
        free(s);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the release store (%zu floats)",
                            a + b);
    }
    *out = s;
    return PG_OK;
}

void pg_swd_store_retain(pg_swd_store *s)
{
    if (s) atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void pg_swd_store_release(pg_swd_store *s)
{
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
    pg_free(s->theta);
    pg_free(s->q);
    free(s);
}

void pg_swd_step_tables(pg_swd_ws *ws, const pg_swd_flow_cfg *cfg, const pg_swd_store *st, long s,
                        const float **theta, const float **q)
{
    size_t d = st->d, L = st->levels;
    if (cfg->pool == 0) {
        *theta = st->theta + (size_t)s * d * st->k;
        *q = st->q + (size_t)s * st->k * L;
        return;
    }
    /* Directions are public: the subset of step s is a partial Fisher-Yates
     * shuffle from its own stream, so a replay sees the same sequence. */
    size_t P = cfg->pool, M = cfg->per_step;
    pg_rng r;
    pg_rng_seeded(&r, cfg->subset_seed, (uint64_t)s);
    for (size_t i = 0; i < P; i++) ws->perm[i] = (uint32_t)i;
    for (size_t c = 0; c < M; c++) {
        size_t j = c + (size_t)pg_rng_below(&r, P - c);
        uint32_t tmp = ws->perm[c];
        ws->perm[c] = ws->perm[j];
        ws->perm[j] = tmp;
        size_t col = ws->perm[c];
        for (size_t a = 0; a < d; a++) ws->theta_s[a * M + c] = st->theta[a * P + col];
        memcpy(ws->q_s + c * L, st->q + col * L, L * sizeof(float));
    }
    *theta = ws->theta_s;
    *q = ws->q_s;
}

int pg_swd_replay(pg_swd_ws *ws, const pg_swd_flow_cfg *cfg, const pg_swd_store *st, long steps,
                  float *x, size_t n, pg_rng *rng, pg_error *err)
{
    for (long s = 0; s < steps; s++) {
        const float *th, *q;
        pg_swd_step_tables(ws, cfg, st, s, &th, &q);
        int rc = pg_swd_flow_step(ws, cfg, x, n, th, cfg->per_step, q, rng, NULL, err);
        if (rc) return rc;
    }
    return PG_OK;
}

/* ---- snapshot ------------------------------------------------------------ */

typedef struct swd_snap {
    pg_swd_flow_cfg cfg;
    pg_swd_store *store;
    long steps;
    double init_std;
    float *x; /* particles x d */
} swd_snap;

static void swd_snap_destroy(void *impl)
{
    swd_snap *s = impl;
    if (!s) return;
    pg_swd_store_release(s->store);
    pg_free(s->x);
    free(s);
}

/* Copies row src (cfg->d wide) of x into out, dropping the label part. */
static void put_row(const pg_swd_flow_cfg *cfg, const float *x, size_t src, float *out, size_t dst)
{
    size_t dout = cfg->d - cfg->classes;
    memcpy(out + dst * dout, x + src * cfg->d, dout * sizeof(float));
}

/* Does particle row (cfg->d wide) answer a request for `label` (-1: any)? */
static bool wanted(const pg_swd_flow_cfg *cfg, const float *row, int label)
{
    return label < 0 || cfg->classes == 0 || pg_swd_particle_label(cfg, row) == label;
}

static int swd_snap_sample(const void *impl, size_t n, uint64_t seed, int label, float *out,
                           pg_error *err)
{
    const swd_snap *s = impl;
    const pg_swd_flow_cfg *cfg = &s->cfg;
    size_t N = cfg->particles, d = cfg->d;
    pg_rng rng;
    pg_rng_seeded(&rng, seed, PG_STREAM_LATENT);
    uint32_t *perm = pg_alloc(N * sizeof(uint32_t));
    if (!perm) return pg_error_set(err, PG_ENOMEM, "cannot allocate sampling scratch");
    /* A seeded partial shuffle of the final particles of the requested
     * class (classes are clamped: a particle's class is its label). */
    size_t cand = 0, done = 0;
    for (size_t i = 0; i < N; i++)
        if (wanted(cfg, s->x + i * d, label)) perm[cand++] = (uint32_t)i;
    for (size_t c = 0; c < cand && done < n; c++) {
        size_t j = c + (size_t)pg_rng_below(&rng, cand - c);
        uint32_t t = perm[c];
        perm[c] = perm[j];
        perm[j] = t;
        put_row(cfg, s->x, perm[c], out, done++);
    }
    pg_free(perm);
    if (done == n) return PG_OK;
    /* More than the trained particles: replay the flow from fresh particles
     * in chunks of N against the stored releases. A chunk needs the
     * training's balanced class mix, not N particles of the requested class:
     * the particles interact through the empirical CDFs, and a chunk of one
     * class would be pulled toward every class's features by the joint
     * quantiles. Each chunk holds at least floor(N / C) >= 1 particles of
     * every class (validation keeps N >= C), so the chunk count is bounded
     * by the request. */
    pg_swd_ws ws;
    int rc = pg_swd_ws_init(&ws, N, d, cfg->per_step, 0, cfg->levels, cfg->pool, err);
    if (rc) return rc;
    float *chunk = pg_alloc_f32(N * d);
    if (!chunk) {
        pg_swd_ws_free(&ws);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate replay particles");
    }
    while (done < n && rc == PG_OK) {
        pg_swd_init_particles(cfg, &rng, chunk, N, s->init_std);
        rc = pg_swd_replay(&ws, cfg, s->store, s->steps, chunk, N, &rng, err);
        for (size_t i = 0; rc == PG_OK && i < N && done < n; i++)
            if (wanted(cfg, chunk + i * d, label)) put_row(cfg, chunk, i, out, done++);
    }
    pg_free(chunk);
    pg_swd_ws_free(&ws);
    return rc;
}

static const pg_snapshot_ops SWD_SNAP_OPS = {swd_snap_sample, swd_snap_destroy, NULL};

int pg_swd_snapshot_new(const pg_swd_flow_cfg *cfg, pg_swd_store *st, long steps, float *x,
                        double init_std, pg_snapshot **out, pg_error *err)
{
    *out = NULL;
    swd_snap *s = calloc(1, sizeof *s);
    if (!s) {
        pg_free(x);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate a snapshot");
    }
    s->cfg = *cfg;
    s->store = st;
    pg_swd_store_retain(st);
    s->steps = steps;
    s->init_std = init_std;
    s->x = x;
    return pg_snapshot_new(&SWD_SNAP_OPS, s, steps, cfg->d - cfg->classes, (int)cfg->classes, out,
                           err);
}

/* ---- privacy --------------------------------------------------------------- */

int pg_swd_privacy_init(pg_swd_privacy *p, pg_error *err)
{
    if (!(p->clip > 0.0) || !isfinite(p->clip))
        return pg_error_set(err, PG_EINVAL, "the clip norm must be positive");
    if (!(p->gamma > 0.0 && p->gamma <= 1.0))
        return pg_error_set(err, PG_EINVAL, "the sampling fraction must be in (0, 1]");
    p->approximate = 0;
    if (p->bound == PG_SWD_ORTHOGONAL) p->delta0 = 0.0;
    int rc =
        pg_swd_sensitivity(p->bound, p->d, p->k, p->bound == PG_SWD_ORTHOGONAL ? 0.5 : p->delta0,
                           &p->w, &p->approximate, err);
    if (rc) return rc;
    /* Replace-one adjacency: clipped rows differ by at most 2R in l2, and
     * ||(y - y') Theta||_F^2 <= (2R)^2 w. On a typed table valid rows differ
     * by at most the schema's diameter, and clipping (a projection onto a
     * ball) never increases a distance: min(2R, diameter). The noise
     * multiplier, hence epsilon, does not depend on which bound is used. */
    double span = 2.0 * p->clip;
    if (p->diameter > 0.0 && isfinite(p->diameter) && p->diameter < span) span = p->diameter;
    p->sensitivity = span * sqrt(p->w);
    return PG_OK;
}

int pg_swd_privacy_curve(const pg_swd_privacy *p, double S, long releases, double *orders,
                         double *rdp, int *norders, pg_error *err)
{
    size_t n = pg_rdp_default_orders(orders, PG_RDP_DEFAULT_ORDERS);
    for (size_t i = 0; i < n; i++) {
        /* A subsampled release is never worse than the same release on all
         * rows, and the WBK bound (Thm 9) is loose for large fractions (its
         * j >= 3 terms do not vanish as S grows): take the smaller of the two
         * valid bounds per order. */
        double r, wbk;
        int rc = pg_rdp_gaussian(S, orders[i], &r, err);
        if (rc == PG_OK && p->gamma < 1.0) {
            rc = pg_rdp_wbk_gaussian(p->gamma, S, orders[i], &wbk, err);
            if (rc == PG_OK && wbk < r) r = wbk;
        }
        if (rc) return rc;
        rdp[i] = r * (double)releases;
        if (p->count_noise > 0.0) {
            /* the label count: Gaussian, l2 sensitivity sqrt(2) */
            rc = pg_rdp_gaussian(p->count_noise / sqrt(2.0), orders[i], &r, err);
            if (rc) return rc;
            rdp[i] += r;
        }
        if (p->qmap_noise > 0.0) {
            /* the quantile map: std s sqrt(2c) on sensitivity sqrt(2c) */
            rc = pg_rdp_gaussian(p->qmap_noise, orders[i], &r, err);
            if (rc) return rc;
            rdp[i] += r;
        }
        if (p->calib_noise > 0.0) {
            /* the class statistics: std sqrt(2) s on sensitivity 2 */
            rc = pg_rdp_gaussian(p->calib_noise / sqrt(2.0), orders[i], &r, err);
            if (rc) return rc;
            rdp[i] += r;
        }
    }
    *norders = (int)n;
    return PG_OK;
}

int pg_swd_privacy_epsilon(const pg_swd_privacy *p, double S, long releases, double *eps,
                           pg_error *err)
{
    double orders[PG_RDP_DEFAULT_ORDERS], rdp[PG_RDP_DEFAULT_ORDERS];
    int n;
    if (releases <= 0 && !(p->count_noise > 0.0) && !(p->qmap_noise > 0.0) &&
        !(p->calib_noise > 0.0)) {
        *eps = 0.0;
        return PG_OK;
    }
    int rc = pg_swd_privacy_curve(p, S, releases, orders, rdp, &n, err);
    if (rc) return rc;
    /* Each probabilistic bound fails with probability delta0 per release;
     * those events are charged to delta once per release (union bound). */
    double dl = p->delta - (double)releases * p->delta0;
    if (!(dl > 0.0))
        return pg_error_set(err, PG_EINVAL,
                            "delta %.3g does not cover %ld releases of delta0 = %.3g", p->delta,
                            releases, p->delta0);
    return pg_rdp_to_dp(orders, rdp, (size_t)n, dl, PG_RDP_CONV_IMPROVED, eps, NULL, err);
}

int pg_swd_privacy_calibrate(const pg_swd_privacy *p, long releases, double target, double *S,
                             pg_error *err)
{
    if (!(target > 0.0) || !isfinite(target))
        return pg_error_set(err, PG_EINVAL, "the target epsilon must be positive");
    double lo = 1e-3, hi = 1e4, e;
    int rc = pg_swd_privacy_epsilon(p, hi, releases, &e, err);
    if (rc) return rc;
    if (e > target)
        return pg_error_set(err, PG_ERANGE, "epsilon %.3g is out of reach for %ld releases", target,
                            releases);
    rc = pg_swd_privacy_epsilon(p, lo, releases, &e, err);
    if (rc) return rc;
    if (e <= target) {
        *S = lo;
        return PG_OK;
    }
    while (hi / lo > 1.0 + 1e-7) {
        double mid = sqrt(lo * hi);
        rc = pg_swd_privacy_epsilon(p, mid, releases, &e, err);
        if (rc) return rc;
        if (e <= target)
            hi = mid;
        else
            lo = mid;
    }
    *S = hi; /* the feasible end */
    return PG_OK;
}

/* Every swd trainer struct starts with {pg_trainer base; long releases;}. */
typedef struct swd_head {
    pg_trainer base;
    long releases;
} swd_head;

long pg_swd_trainer_releases(const pg_trainer *t)
{
    if (!t || !t->method || strncmp(t->method->name, "swd_", 4) != 0) return -1;
    return ((const swd_head *)t)->releases;
}
