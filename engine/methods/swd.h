/* engine/methods/swd.h - the sliced-Wasserstein flow core shared by swd_flow,
 * swd_flow_r, swd_gen, their tests and the gaussians5 benchmark.
 *
 * The one data access (paper 004 eq. 23, paper 002 eq. 8) is pg_swd_release:
 * projections of clipped rows on directions Theta (d x k) plus N(0, sigma^2)
 * from the secure generator, reduced to quantile tables: row j of q (k x L)
 * holds the Hazen quantiles (engine/ot/sliced.h convention) of the noisy
 * projections on theta_j at levels (l + 1/2)/L. Everything after the release
 * is post-processing.
 *
 * A flow step (eq. 17, 20-21) moves particles x (n x d) by
 *   v_i = -(1/k) sum_j (z_ij - Q_j(F_j(z_ij))) theta_j,  z_ij = x_i . theta_j,
 * where F_j is the piecewise-linear CDF of the particles' projections smoothed
 * with N(0, smooth^2) and Q_j the target quantile table, then adds
 * sqrt(2 lambda h) xi. With smooth = 0 and L = n this is matching by rank.
 *
 * A store keeps the released tables for replay (sampling more particles than
 * were trained): entry s holds the directions and tables of step s (resampled
 * flow) or the single pool release (fixed pool). Entries below the trainer's
 * step are immutable, so snapshots share the store by reference count.
 *
 * Typed tables (desc->table, central, not in latent mode): the default clip
 * radius R (privacy.clip_norm) is the schema's l2 norm bound of one encoded
 * row, sqrt(nb^2 + alpha^2) with labels (defaults.h), so clipping never
 * changes a valid row; the release's sensitivity is min(2R, diameter) sqrt(w)
 * with the schema's l2 diameter (pg_table_diameter, plus 2 alpha^2 for the
 * label part): clipping is a projection, so it never increases a distance.
 * Trainers refuse rows that are not valid encodings (the diameter assumes
 * them). The noise multiplier S, hence epsilon, does not depend on the
 * bound; only the noise std S * sensitivity does. Particle flows keep their
 * particles; samples are clamped to [lo, hi] and decode categories by their
 * largest unit (table.h); checkpoints carry the table map ("table") and a
 * restore refuses a different one.
 *
 * Ownership: workspaces are sized once (pg_swd_ws_init, for the OpenMP
 * thread count in effect) and freed with pg_swd_ws_free; not thread-safe
 * (kernels parallelize over directions inside). Errors: PG_EINVAL for shapes beyond the
 * workspace, PG_EPRIVACY for noise from a non-secure generator, PG_ENUMERIC
 * when particles stop being finite; outputs untouched on argument errors.
 */
#ifndef PG_METHODS_SWD_H
#define PG_METHODS_SWD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/methods/method.h"

typedef struct pg_swd_ws {
    size_t n, d, k, m, levels; /* capacities: particles, dim, directions, release rows, levels */
    float *px;                 /* k x n particle projections */
    float *disp;               /* k x n displacements z - t */
    float *keys, *keys_tmp, *smooth; /* n each */
    uint32_t *idx, *idx_tmp;         /* n each */
    float *py, *py_tmp;              /* k x m noisy data projections; m scratch */
    float *vel;                      /* n x d */
    float *theta_s, *q_s;            /* d x k, k x levels: the current step's pool subset */
    uint32_t *perm;                  /* pool index scratch (pool entries) */
    size_t perm_cap;
    int nthreads;   /* per-thread scratch: keys .. idx_tmp (n each), py_tmp (m each) */
    pg_rng *srng;   /* secure generators of threads 1.. (release noise) */
    int srng_ready; /* srng[1 .. srng_ready-1] are keyed (the team may grow between
                     * releases: the CPU budget grants threads step by step) */
} pg_swd_ws;

int pg_swd_ws_init(pg_swd_ws *ws, size_t n, size_t d, size_t k, size_t m, size_t levels,
                   size_t pool, pg_error *err);
void pg_swd_ws_free(pg_swd_ws *ws);

/* The data access. y: m x d clipped rows; theta: d x k. sigma > 0 needs a
 * secure rng (PG_EPRIVACY otherwise); sigma == 0 is the non-private flow used
 * by tests and the benchmark only (the methods refuse it at validation).
 * Leaves the noisy projections in ws->py (k x m, each row sorted) and, when q
 * is not NULL, writes the k x levels quantile tables into q. */
int pg_swd_release(pg_swd_ws *ws, pg_rng *rng, const float *y, size_t m, const float *theta,
                   size_t k, double sigma, float *q, size_t levels, pg_error *err);

typedef struct pg_swd_flow_cfg {
    size_t d, particles;
    size_t per_step; /* directions used per step */
    size_t pool;     /* 0: resampled (store entry per step); else the pool size */
    size_t levels;
    double h, lambda, smooth;
    uint64_t subset_seed; /* public: the pool subset of step s is stream s of it */
    /* Class conditioning: the last `classes` of the d coordinates are label
     * coordinates (0: unlabelled). Each particle has a fixed class c, its
     * label coordinates are alpha onehot(c) forever (drift and diffusion
     * move the feature block only), and the classes are balanced: the
     * data's class proportions are private, so the flow assumes uniform
     * ones (on imbalanced data, particles of a frequent class are pulled
     * partly toward other classes' features). The flow still matches the
     * joint law through directions that mix both blocks, which pushes
     * class-c particles toward class c's features. Samples are the first
     * d - classes coordinates. */
    size_t classes;
    double alpha;
} pg_swd_flow_cfg;

/* [x ; alpha onehot(label)] rows (n x (d + classes)) from x (n x d). */
void pg_swd_augment(const float *x, const int32_t *labels, size_t n, size_t d, size_t classes,
                    double alpha, float *out);

/* Initial particles (n x cfg->d): N(0, init_std^2) on every coordinate,
 * then label coordinates set to alpha onehot(c_i), c_i = (off + i) mod C
 * with off drawn from rng (balanced to within one particle). */
void pg_swd_init_particles(const pg_swd_flow_cfg *cfg, pg_rng *rng, float *x, size_t n,
                           double init_std);

/* Class of a particle (its hot label coordinate; -1 if unlabelled). */
int pg_swd_particle_label(const pg_swd_flow_cfg *cfg, const float *row);

/* Are the label blocks of n particles exactly alpha onehot(c)? (Checks
 * untrusted checkpoints; true when unlabelled.) */
bool pg_swd_labels_valid(const pg_swd_flow_cfg *cfg, const float *x, size_t n);

/* One Euler-Maruyama step of n <= ws->n particles against theta (d x k) and
 * tables q (k x levels); label coordinates stay as they are. rng draws the smoothing and diffusion
 * noise (seeded: neither touches data). *loss (may be NULL) receives the mean squared displacement
 * (1/(k n)) sum (z - t)^2, the sliced W2^2 estimate. */
int pg_swd_flow_step(pg_swd_ws *ws, const pg_swd_flow_cfg *cfg, float *x, size_t n,
                     const float *theta, size_t k, const float *q, pg_rng *rng, double *loss,
                     pg_error *err);

typedef struct pg_swd_store {
    atomic_long refs;
    size_t d, k, levels, cap; /* k directions per entry, cap entries */
    float *theta;             /* cap x d x k */
    float *q;                 /* cap x k x levels */
} pg_swd_store;

int pg_swd_store_new(size_t d, size_t k, size_t levels, size_t cap, pg_swd_store **out,
                     pg_error *err);
void pg_swd_store_retain(pg_swd_store *s);
void pg_swd_store_release(pg_swd_store *s);

/* Directions and tables of flow step s (0-based): entry s of a resampled
 * store, or the pool subset of step s gathered into ws->theta_s / ws->q_s. */
void pg_swd_step_tables(pg_swd_ws *ws, const pg_swd_flow_cfg *cfg, const pg_swd_store *st, long s,
                        const float **theta, const float **q);

/* Replays `steps` flow steps from particles x (n <= cfg->particles, already
 * initialized) against the store: post-processing, no data. */
int pg_swd_replay(pg_swd_ws *ws, const pg_swd_flow_cfg *cfg, const pg_swd_store *st, long steps,
                  float *x, size_t n, pg_rng *rng, pg_error *err);

/* A particle-flow snapshot: final particles plus the store for replay.
 * Ownership of x (pg_alloc'ed, particles x d) moves in; the store is
 * retained. Samples: n <= particles rows of a seeded permutation of the
 * final particles; beyond that, all of them followed by replayed chunks.
 * With classes, rows are d - classes wide and label k returns particles of
 * class k: final ones first, then those of replayed chunks (each chunk has
 * the training's balanced classes, so it yields about N / C of them;
 * cfg->particles >= cfg->classes is required). */
int pg_swd_snapshot_new(const pg_swd_flow_cfg *cfg, pg_swd_store *st, long steps, float *x,
                        double init_std, pg_snapshot **out, pg_error *err);

/* ---- privacy of the projection release ---------------------------------- */

typedef struct pg_swd_privacy {
    int bound;          /* enum pg_swd_bound (engine/privacy) */
    size_t d, k;        /* dimension, directions per release */
    double clip;        /* R */
    double delta;       /* the job's total delta */
    double delta0;      /* failure probability of the bound per release (0 if exact) */
    double gamma;       /* m/n for fixed-size subsamples without replacement, 1 for all rows */
    double w;           /* filled by pg_swd_privacy_init */
    double diameter;    /* typed tables: l2 bound on the distance of two released rows
                           (pg_table_diameter, plus the label part), else 0 */
    double sensitivity; /* min(2 R, diameter) sqrt(w), replace-one */
    double count_noise; /* noise multiplier of the job's one DP label count
                           (label_count.h), 0 without; replace-one changes two
                           counts by 1: l2 sensitivity sqrt(2), RDP alpha / s^2,
                           composed once into the curve below */
    double qmap_noise;  /* noise multiplier s of the job's quantile map
                           (engine/data/qmap.h), 0 without: RDP alpha / (2 s^2)
                           under replace-one, composed once like the count */
    double calib_noise; /* noise multiplier s of the job's per-class table
                           statistics (calib_table.h, calib_wire.h), 0 without:
                           replace-one moves the released vector by 2 in l2
                           against noise std sqrt(2) s, RDP alpha / s^2 */
    int approximate;
} pg_swd_privacy;

/* Computes w and the sensitivity. */
int pg_swd_privacy_init(pg_swd_privacy *p, pg_error *err);
/* RDP of `releases` releases at noise multiplier S (noise std = S * sensitivity)
 * on the default order grid; returns the count of orders. */
int pg_swd_privacy_curve(const pg_swd_privacy *p, double S, long releases, double *orders,
                         double *rdp, int *norders, pg_error *err);
/* Epsilon at delta - releases * delta0 (improved conversion). */
int pg_swd_privacy_epsilon(const pg_swd_privacy *p, double S, long releases, double *eps,
                           pg_error *err);
/* Smallest S (relative precision 1e-6, rounded up) whose epsilon <= target. */
int pg_swd_privacy_calibrate(const pg_swd_privacy *p, long releases, double target, double *S,
                             pg_error *err);

/* ---- test hooks ----------------------------------------------------------- */

/* Data releases a swd_flow / swd_flow_r / swd_gen trainer has made so far
 * (-1 for another method). */
long pg_swd_trainer_releases(const pg_trainer *t);

#endif
