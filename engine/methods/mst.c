/* mst, aim - marginal-based synthesizers (METHODS.md "mst / aim"): MST
 * (McKenna, Miklau, Sheldon 2021) and AIM (McKenna, Mullins, Sheldon,
 * Miklau 2022) on a discretized table (engine/data/discretize.h), with the
 * graphical-model inference of engine/pgm/pgm.h.
 *
 * Privacy (engine/methods/marg.h): add/remove-one neighbours; every marginal
 * has l2 sensitivity 1; Gaussian measurement rho = 1/(2 sigma^2), selection
 * by the exponential mechanism (Gumbel-max, secure generator) rho = eps^2/8,
 * with score sensitivity 1 (MST: the L1 distance of the data's pair marginal
 * to a model fitted on earlier noisy releases moves by at most 1 when one
 * record is added or removed) or the largest workload weight (AIM: the score
 * is that distance times the candidate's weight). The job's rho is the
 * largest whose RDP curve alpha * rho the ledger converts to at most the
 * requested epsilon at delta; that curve is the plan.
 *   MST: rho/3 to the d one-way marginals (sigma = sqrt(3 d / (2 rho))),
 *        rho/3 to the d - 1 tree edges (each eps = sqrt(8 (rho/3) / (d-1))),
 *        rho/3 to the d - 1 chosen pairs (sigma = sqrt(3 (d-1) / (2 rho))).
 *        Levels whose noisy one-way count is below 3 sigma are merged into
 *        one (domain compression, post-processing of that release); decoding
 *        draws a merged level uniformly among the levels it stands for.
 *   AIM: T = rounds (default 16 d). One-way marginals at
 *        sigma = sqrt(T / (2 * 0.9 rho)); then rounds of selection at
 *        eps = sqrt(8 * 0.1 rho / T) and measurement at sigma, each spending
 *        1/(2 sigma^2) + eps^2/8, among candidates (the workload's downward
 *        closure) whose addition keeps the model under
 *        aim.model_cells * rho_used / rho cells; sigma halves and eps doubles when
 *        a measurement moves the fitted marginal by less than
 *        sqrt(2/pi) sigma cells; the round that would leave less than two
 *        rounds' worth spends exactly what remains, and is the last.
 *        Workload: every pair; with a label, every triple holding the label,
 *        weighted by aim.label_weight.
 *   Data-adaptive bins (discretize.adaptive; aim's default, not mst's): the
 *        domain holds discretize.fine_bins equal bins per number, the step-1
 *        one-way release (the same measurement at the same sigma: the plan
 *        is unchanged) is merged into runs of about equal noisy mass
 *        (adaptive_groups: post-processing), and every later marginal is on
 *        the runs. The runs are compression maps like mst's rare levels.
 *
 * A job: step 1 measures the one-way marginals; MST's step 2 selects the
 * tree and step 3 measures it and fits; AIM's every later step is a round.
 * Every step is checkpointed (checkpoint_every is 1): the checkpoint holds
 * the noisy measurements, the chosen sets, the round state and the fitted
 * model, so a restore never draws a measurement again. A step lost in a
 * crash before its checkpoint was written released nothing: its report
 * carries the fit loss of the model *before* its measurement and the epsilon
 * of a schedule fixed before it ran, and snapshots come from checkpoints only.
 * It is redone with fresh noise (the secure generator cannot be restored, by
 * design). The service counts a lost step against the plan's step count, so
 * the plan holds PG_MARG_SPARE steps beyond the schedule's bound, and a job
 * ends (done) when its schedule does, usually before the plan's total.
 *
 * Rows: never held. Every count comes from a pass over the job's row source
 * (engine/data/rowsrc.h; the in-memory rows wrapped in one when the caller
 * lends rows), discretized chunk by chunk (engine/methods/marg_pass.h): MST
 * passes at step 1 (one-ways) and step 2 (every pair, PASS_CELLS at a time;
 * when one pass held them all, step 3 measures the tree from those counts),
 * AIM at create/restore (every candidate's answer) and at step 1 (one-ways).
 * Counts are exact integers, so the passes change no value and no draw.
 *
 * Samples: forward sampling of the model with the job's seeded generator
 * (post-processing), codes decoded to rows valid for the schema. The label is
 * an attribute like any other: rows with label = -1 come from the joint
 * (pg_snapshot_sample_labeled gives their classes); a request for class k
 * keeps the rows of class k from successive draws (rejection), refused when
 * the model gives class k probability below PG_MARG_MIN_CLASS_P.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/checkpoint/checkpoint.h"
#include "engine/data/dataset.h"
#include "engine/data/discretize.h"
#include "engine/data/rowsrc.h"
#include "engine/data/table.h"
#include "engine/methods/marg.h"
#include "engine/methods/marg_pass.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/spec.h"
#include "engine/methods/trainer.h"
#include "engine/pgm/pgm.h"
#include "engine/privacy/privacy.h"

#define PG_MARG_SPARE       3
#define PG_MARG_MAX_UNTYPED 64
#define PG_MARG_MIN_CLASS_P 1e-4
/* 2: compression maps as groups (data-adaptive bins); 1 (rare levels as
 * sup/rare/cum) still loads. */
#define CKPT_FORMAT 2
/* A fine level counts towards its adaptive run's mass (and is decoded)
 * when its noisy count reaches this many sigmas of its release. */
#define ADAPT_SIGMAS 3.0
/* discretize.fine_bins' auto value: this many times discretize.bins. */
#define ADAPT_FINE_FACTOR 4
/* The runs follow the data only when the fine levels that reach
 * ADAPT_SIGMAS hold at least this share of the column's noisy count;
 * otherwise the noise dominates the fine counts and the column keeps equal
 * bins (runs of equal width, decoded uniformly: the fixed bins' behaviour). */
#define ADAPT_CAPTURE 0.5
/* Adaptive bins only when rows / fine_bins >= this many one-way noise sds
 * (spec_adaptive). */
#define ADAPT_MIN_SNR 1.0
#define STREAM_SAMPLE 11
/* AIM's refits between rounds only guide the next selection and the
 * annealing test, whose own noise is far coarser: they stop at a relative
 * duality gap (or stall) of 1e-4; the last round's fit uses the fit's
 * default 1e-6 and fit.iters. */
#define AIM_ROUND_TOL 1e-4
/* Floor and rows factor of aim.model_cells' auto value. */
#define AIM_CELLS_FLOOR   131072.0
#define AIM_CELLS_PER_ROW 32.0
/* Cells of pair tables counted in one pass when scoring MST's candidate
 * edges: more pairs take more passes, so memory stays bounded however many
 * columns (2^22 doubles, 32 MiB). */
#define PASS_CELLS ((size_t)1 << 22)
_Static_assert(PG_MARG_PASS_MAX_SET >= PG_PGM_MAX_CLIQUE, "a clique is a countable set");

extern const pg_method pg_method_mst, pg_method_aim;

/* ---- parameters ----------------------------------------------------------- */

/* clang-format off */
#define COMMON_PARAMS                                                                              \
    {"privacy.epsilon", PG_PARAM_NUM, NULL, 0, 1e4, NULL, 0,                                       \
     PG_PARAM_REQUIRED | PG_PARAM_EXCLUSIVE_MIN,                                                   \
     "Target epsilon of the whole job (zCDP composed exactly, converted at delta by the "          \
     "ledger's rule)."},                                                                           \
    {"privacy.delta", PG_PARAM_NUM, NULL, 0, 0.5, NULL, 0,                                         \
     PG_PARAM_OPTIONAL | PG_PARAM_EXCLUSIVE_MIN,                                                   \
     "Target delta (default: the dataset's cap delta; never above it)."},                          \
    {"discretize.bins", PG_PARAM_INT, "0", 0, PG_DISC_MAX_BINS, NULL, 0, 0,                        \
     "Levels of each number in the model (0: auto from rows x sqrt(2 rho), the count over "        \
     "the noise of one whole-budget measurement: 8 below 2000, 16 below 20000, 32 below "          \
     "200000, 64 above; at epsilon 1 that is 8 below about 8000 rows); with "                      \
     "discretize.adaptive these are runs of fine bins of about equal noisy mass, else equal "      \
     "bins between the declared bounds; integer columns with a small span get one code per "       \
     "value; \"scale\": \"log\" in the schema spaces bins in log(1 + x - min))."},                 \
    {"discretize.fine_bins", PG_PARAM_INT, "0", 0, PG_DISC_MAX_BINS, NULL, 0, 0,                   \
     "Equal bins of each number measured before the adaptive merge (0: auto, 4 x "                 \
     "discretize.bins, at most 1024)."},                                                           \
    {"model.max_cells", PG_PARAM_NUM, "8000000", 1000, PG_PGM_DEFAULT_MAX_CELLS, NULL, 0, 0,       \
     "Bound on the graphical model's size (sum of its clique tables' cells, 8 bytes each); "       \
     "a plan that cannot stay under it is refused at validation."},                                \
    {"fit.iters", PG_PARAM_INT, "0", 0, 100000, NULL, 0, 0,                                        \
     "Mirror-descent iterations of the final fit (0: auto, 2000)."},                               \
    {"sample.support_sigmas", PG_PARAM_NUM, "5", 0, 100, NULL, 0, 0,                               \
     "Samples never fall in a bin of a number column whose fitted count is below this many "       \
     "noise standard deviations (the fit leaves noise mass in empty bins, which would decode "     \
     "to outliers); 0: every bin is sampled. Post-processing: no privacy cost."},                  \
    {"seed", PG_PARAM_INT, NULL, 0, 9007199254740991.0, NULL, 0, PG_PARAM_OPTIONAL,                \
     "Seed of sampling (never of DP noise or selection)."},                                        \
    {"checkpoint_every", PG_PARAM_INT, "1", 1, 1, NULL, 0, 0,                                      \
     "Every step is checkpointed: its noisy measurements must never be drawn twice."}
/* clang-format on */

/* discretize.adaptive's help, up to its "false" case (the defaults differ). */
#define ADAPTIVE_HELP                                                                              \
    "Data-adaptive bins: each number's one-way marginal is measured at discretize.fine_bins "      \
    "equal bins (the one-way release the method makes anyway: no extra privacy cost) and "         \
    "contiguous fine bins are merged into about discretize.bins runs of equal noisy mass; a run "  \
    "decodes to a fine bin in proportion to its noisy count (those below 3 noise sds never), "     \
    "then to a value inside it. Applied only when rows / fine_bins is at least the one-way "       \
    "noise std (the dry run's accounting.fine_bins is null otherwise). "

static const pg_param MST_PARAMS[] = {
    COMMON_PARAMS,
    {"discretize.adaptive", PG_PARAM_BOOL, "false", 0, 0, NULL, 0, 0,
     ADAPTIVE_HELP "false (mst's default: on credit_data it lost 0.005-0.010 of accuracy at "
                   "epsilon 1): equal bins between the declared bounds."},
    {"mst.compress", PG_PARAM_BOOL, "true", 0, 0, NULL, 0, 0,
     "Merge the levels whose noisy one-way count is below 3 sigma into one (the paper's "
     "domain compression)."},
    {0},
};

static const pg_param AIM_PARAMS[] = {
    COMMON_PARAMS,
    {"discretize.adaptive", PG_PARAM_BOOL, "true", 0, 0, NULL, 0, 0,
     ADAPTIVE_HELP "false: equal bins between the declared bounds."},
    {"aim.rounds", PG_PARAM_INT, "0", 0, 100000, NULL, 0, 0,
     "T, the round budget that sets the initial noise (0: auto, 16 x attributes as the paper); "
     "rounds end early as budget annealing spends faster."},
    {"aim.label_weight", PG_PARAM_NUM, "4", 0, 1000, NULL, 0, 0,
     "Weight of the target's triples in the workload (0: pairs only)."},
    {"aim.target", PG_PARAM_STR, NULL, 0, 0, NULL, 0, PG_PARAM_OPTIONAL,
     "Column whose triples (target, a, b) join the workload, e.g. the column a downstream model "
     "predicts (default: the schema's label; none without one)."},
    {"aim.round_iters", PG_PARAM_INT, "250", 10, 100000, NULL, 0, 0,
     "Most mirror-descent iterations of the warm-started refit after each round (it stops "
     "earlier at a relative duality gap or stall of 1e-4: it only guides the next selection)."},
    {"aim.model_cells", PG_PARAM_NUM, "0", 0, PG_PGM_DEFAULT_MAX_CELLS, NULL, 0, 0,
     "The paper's model-size bound: after spending a share s of the budget the model may hold "
     "s x this many cells (0: auto, min(model.max_cells, max(131072, 32 x rows)); a model far "
     "larger than the table costs time, not accuracy)."},
    {0},
};

static const char *const IGNORED[] = {"dataset_id", "method", "public_dataset_id", "accounting",
                                      NULL};

/* ---- resolved-spec helpers ------------------------------------------------ */

/* Few rows or little budget: coarse bins keep each cell's count above the
 * noise. The ladder runs on n sqrt(2 rho), the total count over the noise
 * std of one measurement that spent the whole budget (a signal-to-noise
 * ratio; rho and n are public here, as for every plan): 8 bins below 2000,
 * 16 below 20000, 32 below 200000, 64 above. At epsilon 1 (rho 0.03 at
 * delta 1e-5) that is 8 below about 8000 rows; credit_data (3563 rows) gets 8
 * at epsilon 1 and 16 at epsilon 5. */
static int auto_bins(size_t n, double rho)
{
    double snr = (double)n * sqrt(2.0 * fmax(rho, 0));
    return snr < 2000 ? 8 : snr < 20000 ? 16 : snr < 200000 ? 32 : 64;
}

static double spec_delta(const json_t *r, const pg_data_desc *desc);

static int spec_bins(const json_t *r, const pg_data_desc *desc)
{
    long b = pg_spec_int(r, "discretize.bins", 0);
    if (b > 0) return (int)b;
    double rho = 0;
    if (pg_marg_rho_for(pg_spec_num(r, "privacy.epsilon", 1), spec_delta(r, desc), &rho, NULL))
        rho = 0;
    return auto_bins(desc->n, rho);
}

static double spec_delta(const json_t *r, const pg_data_desc *desc)
{
    return pg_spec_get(r, "privacy.delta") ? pg_spec_num(r, "privacy.delta", 0) : desc->cap_delta;
}

/* discretize.fine_bins resolved: auto ADAPT_FINE_FACTOR x bins, at most
 * PG_DISC_MAX_BINS, never below bins. */
static int spec_fine_raw(const json_t *r, const pg_data_desc *desc)
{
    int b = spec_bins(r, desc);
    long f = pg_spec_int(r, "discretize.fine_bins", 0);
    if (f <= 0) f = (long)ADAPT_FINE_FACTOR * b;
    if (f > PG_DISC_MAX_BINS) f = PG_DISC_MAX_BINS;
    return f < b ? b : (int)f;
}

/* The noise std of the step-1 one-way measurements, from the plan alone
 * (aim: sqrt(T / (2 0.9 rho)); mst: sqrt(3 d / (2 rho))). */
static double spec_oneway_sigma(const json_t *r, const pg_data_desc *desc)
{
    double rho = 0;
    if (pg_marg_rho_for(pg_spec_num(r, "privacy.epsilon", 1), spec_delta(r, desc), &rho, NULL) ||
        !(rho > 0))
        return INFINITY;
    double d = desc->table ? (double)desc->table->ncols
                           : (double)desc->d + (desc->num_classes > 0 ? 1.0 : 0.0);
    if (!pg_spec_get(r, "aim.label_weight")) return sqrt(3.0 * d / (2.0 * rho));
    long T = pg_spec_int(r, "aim.rounds", 0);
    if (T <= 0) T = 16 * (long)d;
    return sqrt((double)T / (2.0 * 0.9 * rho));
}

/* discretize.adaptive in effect: asked for (a resolved spec from before the
 * option, a job checkpointed by older code, lacks it and keeps the fixed
 * bins), and an average fine bin's count n / fine_bins at least
 * ADAPT_MIN_SNR noise sds of the one-way release. Below that the fine
 * counts are mostly noise: on attrition (1176 rows, 31 columns) aim's sigma
 * at epsilon 1 is 96 against 37 rows per fine bin, and the runs decoded
 * columns onto their few fine bins above 3 sigma (a README tutorial run
 * served 51 % of a column as one value). From n, epsilon, delta and the
 * schema only: no row decides it. */
static bool spec_adaptive(const json_t *r, const pg_data_desc *desc)
{
    if (!pg_spec_bool(r, "discretize.adaptive", false)) return false;
    double per_bin = (double)desc->n / (double)spec_fine_raw(r, desc);
    return per_bin >= ADAPT_MIN_SNR * spec_oneway_sigma(r, desc);
}

/* The bins the domain is built with: fine_bins when adaptive. */
static int spec_fine_bins(const json_t *r, const pg_data_desc *desc)
{
    return spec_adaptive(r, desc) ? spec_fine_raw(r, desc) : spec_bins(r, desc);
}

/* Levels attribute a may have in the model: an adaptive number column is
 * merged into at most `bins` runs (plus its missing level). */
static double level_bound(const pg_disc_attr *x, int bins, bool adaptive)
{
    bool numeric = x->kind == PG_DISC_INT || x->kind == PG_DISC_REAL;
    if (adaptive && numeric && x->nvalue > (size_t)bins) return (double)bins + (double)x->nullable;
    return (double)x->levels;
}

/* ---- the trainer ----------------------------------------------------------- */

typedef struct meas {
    size_t k, attrs[PG_PGM_MAX_CLIQUE];
    size_t cells, off;
    double sigma;
} meas;

/* Per attribute: the compressed domain, as groups of original levels. Group
 * (compressed code) c holds the levels mem[start[c] .. start[c+1]), in
 * increasing order, decoded in proportion to cum[] (cumulative weights within
 * the group, the last of each group 1: post-processing of a noisy one-way
 * release; uniform when every weight clips to 0). Two kinds of map:
 *   - MST's rare levels (mst.compress): every level whose noisy one-way count
 *     reaches 3 sigma keeps a group of its own, in order, and the rare ones
 *     share the last group;
 *   - data-adaptive numbers (discretize.adaptive): a number column measured
 *     at fine_bins is cut into about `bins` runs of contiguous fine bins of
 *     roughly equal noisy mass (adaptive_groups); a missing level keeps its
 *     own group, the last.
 * fwd == NULL means the identity. */
typedef struct cmap {
    size_t ngroup, nlev;
    int runs;        /* made by adaptive_groups (the sampling support applies) */
    uint32_t *fwd;   /* nlev: original level -> group */
    uint32_t *start; /* ngroup + 1 offsets into mem */
    uint32_t *mem;   /* nlev original levels, group by group */
    double *cum;     /* nlev cumulative weights within each group */
} cmap;

typedef struct mtr {
    pg_trainer base;
    int aim;
    pg_table *t; /* copy (NULL: untyped) */
    pg_disc D;
    int bins;     /* levels of a number column in the model (adaptive: at most) */
    int adaptive; /* discretize.adaptive: D holds fine bins, merged at step 1 */
    size_t nattr;
    /* The rows, read only by passes (count_sets): the job's source, or
     * own_src over the in-memory rows the caller lent. */
    const pg_rowsrc *src;
    pg_rowsrc own_src;
    size_t *sizes; /* compressed level counts */
    cmap *cm;      /* nattr entries */
    meas *m;
    size_t nm, mcap;
    float *y;
    size_t ylen, ycap;
    pg_pgm_model *model;
    long step, steps_plan;
    int done;
    double rho, rho_used, sigma, eps_sel, delta, max_cells, aim_cells, loss;
    long T;
    size_t iters, round_iters;
    int compress;
    int threads;
    size_t (*edges)[2];
    size_t nedges;
    double *edge_counts; /* the edges' true counts from step 2 (NULL: count again) */
    /* AIM workload */
    size_t ncand;
    meas *cand;      /* k, attrs, cells, off into answers */
    double *weight;  /* per candidate */
    double *answers; /* true marginals of the candidates (counts) */
    double max_weight;
    double label_weight; /* aim.label_weight */
    size_t target;       /* aim.target's attribute (PG_TABLE_NONE: none) */
    double support;      /* sample.support_sigmas (0: every level is sampled) */
    pg_rng secure;
} mtr;

static void cmap_free(cmap *c)
{
    free(c->fwd);
    free(c->start);
    free(c->mem);
    free(c->cum);
    memset(c, 0, sizeof *c);
}

static void mtr_destroy(pg_trainer *tr)
{
    mtr *g = (mtr *)tr;
    if (!g) return;
    pg_table_free(g->t);
    pg_disc_free(&g->D);
    free(g->sizes);
    for (size_t i = 0; g->cm && i < g->nattr; i++) cmap_free(&g->cm[i]);
    free(g->cm);
    free(g->m);
    free(g->y);
    pg_pgm_model_free(g->model);
    free(g->edges);
    free(g->edge_counts);
    free(g->cand);
    free(g->weight);
    free(g->answers);
    free(g);
}

/* ---- domain --------------------------------------------------------------- */

static int copy_table(const pg_table *t, pg_table **out, pg_error *err)
{
    *out = NULL;
    if (!t) return PG_OK;
    json_t *j = pg_table_to_json(t);
    if (!j) return pg_error_set(err, PG_ENOMEM, "cannot copy the schema");
    int rc = pg_table_from_json(j, out, err);
    json_decref(j);
    return rc;
}

/* Identity maps for every attribute. */
static int cmap_identity(mtr *g, pg_error *err)
{
    g->cm = calloc(g->nattr, sizeof *g->cm);
    g->sizes = calloc(g->nattr, sizeof *g->sizes);
    if (!g->cm || !g->sizes) return pg_error_set(err, PG_ENOMEM, "out of memory");
    for (size_t i = 0; i < g->nattr; i++) g->sizes[i] = g->D.a[i].levels;
    return PG_OK;
}

/* Sets c from a group of every level (gid[l] < ngroup; every group must hold
 * a level, else PG_EFORMAT): the groups list their levels in increasing
 * order; decoding weights uniform until cmap_weights. */
static int cmap_groups(cmap *c, size_t levels, const uint32_t *gid, size_t ngroup, pg_error *err)
{
    cmap_free(c);
    c->fwd = malloc(levels * sizeof *c->fwd);
    c->start = calloc(ngroup + 1, sizeof *c->start);
    c->mem = malloc(levels * sizeof *c->mem);
    c->cum = malloc(levels * sizeof *c->cum);
    if (!c->fwd || !c->start || !c->mem || !c->cum) {
        cmap_free(c);
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    c->ngroup = ngroup;
    c->nlev = levels;
    for (size_t l = 0; l < levels; l++) {
        if (gid[l] >= ngroup) {
            cmap_free(c);
            return pg_error_set(err, PG_EFORMAT, "a level maps to no group");
        }
        c->fwd[l] = gid[l];
        c->start[gid[l] + 1]++;
    }
    for (size_t q = 0; q < ngroup; q++) {
        if (c->start[q + 1] == 0) {
            cmap_free(c);
            return pg_error_set(err, PG_EFORMAT, "an empty group");
        }
        c->start[q + 1] += c->start[q];
    }
    /* levels in increasing order within each group (a counting sort) */
    uint32_t *fill = malloc((ngroup ? ngroup : 1) * sizeof *fill);
    if (!fill) {
        cmap_free(c);
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    memcpy(fill, c->start, ngroup * sizeof *fill);
    for (size_t l = 0; l < levels; l++) c->mem[fill[gid[l]]++] = (uint32_t)l;
    free(fill);
    for (size_t q = 0; q < ngroup; q++) {
        size_t n = c->start[q + 1] - c->start[q];
        for (size_t i = 0; i < n; i++) c->cum[c->start[q] + i] = (double)(i + 1) / (double)n;
    }
    return PG_OK;
}

static size_t cmap_group_size(const cmap *c, size_t q)
{
    return c->start[q + 1] - c->start[q];
}

/* MST's rare levels: attribute a's compressed domain from its supported
 * levels (supported[l] nonzero), the rare ones merged into the last code;
 * identity when at most one level is rare. */
static int cmap_set(cmap *c, size_t levels, const unsigned char *supported, size_t *newsize,
                    pg_error *err)
{
    size_t ns = 0;
    for (size_t l = 0; l < levels; l++) ns += supported[l] != 0;
    /* One rare level merged alone is the identity up to a permutation: keep
     * the identity (a map of the same size was once kept while the model
     * stayed on the original codes, which served the levels permuted). */
    if (ns + 1 >= levels) {
        *newsize = levels;
        return PG_OK;
    }
    uint32_t *gid = malloc(levels * sizeof *gid);
    if (!gid) return pg_error_set(err, PG_ENOMEM, "out of memory");
    for (size_t l = 0, k = 0; l < levels; l++) gid[l] = supported[l] ? (uint32_t)k++ : (uint32_t)ns;
    int rc = cmap_groups(c, levels, gid, ns + 1, err);
    free(gid);
    *newsize = rc ? levels : ns + 1;
    return rc;
}

/* Cumulative decoding weights of every group from its levels' weights w
 * (indexed by original level; clipped at 0; uniform within a group when none
 * of its levels is positive). */
static void cmap_weights(cmap *c, const double *w)
{
    for (size_t q = 0; q < c->ngroup; q++) {
        size_t s = c->start[q], n = cmap_group_size(c, q);
        double tot = 0, acc = 0;
        for (size_t i = 0; i < n; i++) tot += fmax(w[c->mem[s + i]], 0);
        for (size_t i = 0; i < n; i++) {
            acc += tot > 0 ? fmax(w[c->mem[s + i]], 0) / tot : 1.0 / (double)n;
            c->cum[s + i] = acc;
        }
        c->cum[s + n - 1] = 1.0;
    }
}

/* The original level of compressed code q: the group's only level, or one
 * drawn in proportion to its weights (a draw only then, so attributes
 * without merged levels consume no randomness). */
static uint32_t cmap_draw(const cmap *c, uint32_t q, pg_rng *rng)
{
    size_t s = c->start[q], n = cmap_group_size(c, q);
    if (n == 1) return c->mem[s];
    double u = pg_rng_uniform(rng);
    size_t i = 0;
    while (i + 1 < n && c->cum[s + i] < u) i++;
    return c->mem[s + i];
}

/* Data-adaptive bins of a number column (discretize.adaptive): its nvalue
 * fine value levels' noisy one-way counts y (one release at sigma) are cut
 * into at most k runs of contiguous levels of roughly equal noisy mass.
 * Post-processing of that release only. A level's weight is its noisy count
 * when that reaches thr (ADAPT_SIGMAS sigma), else 0: an empty level's noise
 * is about sigma / sqrt(2 pi) after clipping, and 32 of them would weigh as
 * much as the data. Runs are closed greedily at the remaining weight over
 * the remaining runs, and only while weight remains beyond the level, so
 * every run holds weight and empty stretches join their neighbour. When
 * few fine levels reach thr the greedy cut leaves runs unused: the widest run
 * is then halved (by levels), again, until k runs or none is wider than one
 * level; a half without weight decodes uniformly, as an equal bin would (the
 * sampling support then drops it when its fitted count is below its
 * threshold). On attrition at epsilon 1 (few rows per fine level) the cut
 * alone left columns with 2-4 runs, decoded onto a few fine levels, and
 * lost accuracy against equal bins; the halving recovered it. When the
 * weighted levels hold less
 * than ADAPT_CAPTURE of the column's noisy count, or would make a single
 * run, the noise decides too much: the levels are cut into k runs of equal
 * width decoded uniformly (the equal bins of a fixed grid). A missing level
 * (nullable) keeps its own group, the last. Fills gid (nvalue + nullable
 * levels) and w (decoding weights per level); returns the group count. */
static size_t adaptive_groups(const float *y, size_t nvalue, int nullable, size_t k, double thr,
                              uint32_t *gid, double *w)
{
    double W = 0, Y = 0;
    for (size_t l = 0; l < nvalue; l++) {
        w[l] = y[l] >= thr ? (double)y[l] : 0;
        W += w[l];
        Y += (double)y[l];
    }
    size_t closed = 0;
    if (W > 0 && W >= ADAPT_CAPTURE * Y) {
        double rem = W, acc = 0;
        for (size_t l = 0; l < nvalue; l++) {
            gid[l] = (uint32_t)closed;
            acc += w[l];
            if (closed + 1 < k && acc > 0 && acc >= rem / (double)(k - closed) &&
                rem - acc > 1e-9 * W) {
                rem -= acc;
                acc = 0;
                closed++;
            }
        }
    }
    /* Runs left over (few fine levels reached thr): split the widest run in
     * two halves of its levels, again, until k runs or none is wider than a
     * level; a half without weight is decoded uniformly (cmap_weights), as
     * an equal bin would be. */
    while (closed > 0 && closed + 1 < k) {
        size_t best = 0, bw = 0, s0 = 0;
        for (size_t l = 0; l < nvalue;) {
            size_t e = l;
            while (e < nvalue && gid[e] == gid[l]) e++;
            if (e - l > bw) bw = e - l, best = gid[l], s0 = l;
            l = e;
        }
        if (bw < 2) break;
        for (size_t l = 0; l < nvalue; l++)
            if (gid[l] > best) gid[l]++;
        for (size_t l = s0 + bw / 2; l < s0 + bw; l++) gid[l]++;
        closed++;
    }
    if (closed == 0) {
        for (size_t l = 0; l < nvalue; l++) {
            gid[l] = (uint32_t)(l * k / nvalue);
            w[l] = 1;
        }
        closed = k - 1;
    }
    size_t ng = closed + 1;
    if (nullable) {
        gid[nvalue] = (uint32_t)ng;
        w[nvalue] = 1;
        ng++;
    }
    return ng;
}

/* ---- counting passes ------------------------------------------------------ */

static size_t set_cells(const size_t *sizes, const size_t *attrs, size_t k)
{
    size_t c = 1;
    for (size_t j = 0; j < k; j++) c *= sizes[attrs[j]];
    return c;
}

/* Counts every set (k, attrs, cells, off into out) in one pass over the
 * rows, on the current (compressed) domain (engine/methods/marg_pass.h). */
static int count_sets(const mtr *g, const meas *sets, size_t ns, double *out, size_t len,
                      pg_error *err)
{
    pg_marg_set *ms = malloc((ns ? ns : 1) * sizeof *ms);
    const uint32_t **fwd = malloc(g->nattr * sizeof *fwd);
    int rc = ms && fwd ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
    for (size_t q = 0; !rc && q < ns; q++) {
        ms[q].k = sets[q].k;
        memcpy(ms[q].attrs, sets[q].attrs, sets[q].k * sizeof *sets[q].attrs);
        ms[q].off = sets[q].off;
        ms[q].cells = sets[q].cells;
    }
    for (size_t a = 0; !rc && a < g->nattr; a++) fwd[a] = g->cm[a].fwd;
    if (!rc) rc = pg_marg_pass_count(g->src, &g->D, g->t, fwd, g->sizes, ms, ns, out, len, err);
    free(ms);
    free(fwd);
    return rc;
}

/* ---- measurements ------------------------------------------------------------ */

static int add_measure(mtr *g, const size_t *attrs, size_t k, double sigma, const float *y,
                       size_t cells, pg_error *err)
{
    if (g->nm == g->mcap) {
        size_t cap = g->mcap ? 2 * g->mcap : 64;
        meas *m = realloc(g->m, cap * sizeof *m);
        if (!m) return pg_error_set(err, PG_ENOMEM, "out of memory");
        g->m = m;
        g->mcap = cap;
    }
    if (g->ylen + cells > g->ycap) {
        size_t cap = g->ycap ? g->ycap : 4096;
        while (cap < g->ylen + cells) cap *= 2;
        float *y2 = realloc(g->y, cap * sizeof *y2);
        if (!y2) return pg_error_set(err, PG_ENOMEM, "out of memory");
        g->y = y2;
        g->ycap = cap;
    }
    meas *m = &g->m[g->nm++];
    memset(m, 0, sizeof *m);
    m->k = k;
    memcpy(m->attrs, attrs, k * sizeof *attrs);
    m->cells = cells;
    m->off = g->ylen;
    m->sigma = sigma;
    memcpy(g->y + g->ylen, y, cells * sizeof *y);
    g->ylen += cells;
    return PG_OK;
}

/* Measures the marginal on attrs, whose true counts are x, with
 * N(0, sigma^2) per cell and records it. */
static int measure(mtr *g, const size_t *attrs, size_t k, const double *x, double sigma,
                   pg_error *err)
{
    size_t cells = 1;
    for (size_t j = 0; j < k; j++) cells *= g->sizes[attrs[j]];
    float *y = malloc(cells * sizeof *y);
    int rc = y ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
    if (!rc) rc = pg_marg_gaussian(&g->secure, x, cells, sigma, y, err);
    if (!rc) rc = add_measure(g, attrs, k, sigma, y, cells, err);
    free(y);
    return rc;
}

/* Counts the sets in one pass, then measures each in order at sigma. */
static int measure_sets(mtr *g, meas *sets, size_t ns, double sigma, pg_error *err)
{
    size_t len = 0;
    for (size_t q = 0; q < ns; q++) {
        sets[q].cells = set_cells(g->sizes, sets[q].attrs, sets[q].k);
        sets[q].off = len;
        len += sets[q].cells;
    }
    double *x = malloc((len ? len : 1) * sizeof *x);
    int rc = x ? count_sets(g, sets, ns, x, len, err)
               : pg_error_set(err, PG_ENOMEM, "out of memory counting marginals");
    for (size_t q = 0; !rc && q < ns; q++)
        rc = measure(g, sets[q].attrs, sets[q].k, x + sets[q].off, sigma, err);
    free(x);
    return rc;
}

/* Levels summed into cell j of measurement i: the one-way measurements taken
 * at step 1 (the first nattr, one per attribute, before the compression) of
 * a compressed attribute hold in each cell the sum of its group's levels'
 * noisy counts, whose noise has variance m sigma^2 for m levels. Every other
 * cell of every measurement was measured as it stands (1). Derived from the
 * compression maps, so checkpoints need no more. */
static size_t merged_levels(const mtr *g, size_t i, size_t j)
{
    const meas *m = &g->m[i];
    if (i >= g->nattr || m->k != 1) return 1;
    const cmap *c = &g->cm[m->attrs[0]];
    return c->fwd && m->cells == c->ngroup ? cmap_group_size(c, j) : 1;
}

/* Fits the model to every measurement so far (warm from the current one). */
static int fit(mtr *g, size_t iters, double tol, bool warm, pg_error *err)
{
    pg_pgm_measure *pm = calloc(g->nm ? g->nm : 1, sizeof *pm);
    double *yd = malloc((g->ylen ? g->ylen : 1) * sizeof *yd);
    double *wd = malloc((g->ylen ? g->ylen : 1) * sizeof *wd);
    if (!pm || !yd || !wd) {
        free(pm);
        free(yd);
        free(wd);
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < g->ylen; i++) yd[i] = g->y[i], wd[i] = 1.0;
    for (size_t i = 0; i < g->nm; i++) {
        pm[i].k = g->m[i].k;
        memcpy(pm[i].attrs, g->m[i].attrs, g->m[i].k * sizeof(size_t));
        pm[i].y = yd + g->m[i].off;
        pm[i].sigma = g->m[i].sigma;
        for (size_t j = 0; j < g->m[i].cells; j++) {
            size_t merged = merged_levels(g, i, j);
            if (merged > 1) {
                /* a merged group: precision 1 / (m sigma^2) */
                wd[g->m[i].off + j] = 1.0 / (double)merged;
                pm[i].w = wd + g->m[i].off;
            }
        }
    }
    pg_pgm_fit_opts o = {
        .max_iters = iters, .tol = tol, .max_cells = g->max_cells, .threads = g->threads};
    pg_pgm_model *nm = NULL;
    int rc = pg_pgm_fit(g->sizes, g->nattr, pm, g->nm, &o, warm ? g->model : NULL, &nm, err);
    free(pm);
    free(yd);
    free(wd);
    if (rc) return rc;
    pg_pgm_model_free(g->model);
    g->model = nm;
    pg_pgm_fit_stats st;
    pg_pgm_model_stats(nm, &st);
    g->loss = st.loss;
    return PG_OK;
}

static double ledger_eps(double rho, double delta)
{
    double e = 0;
    if (rho <= 0) return 0;
    if (pg_marg_ledger_epsilon(rho, delta, &e, NULL)) return NAN;
    return e;
}

/* ---- the schedules ------------------------------------------------------- */

static size_t mst_pairs(size_t d)
{
    return d > 1 ? d - 1 : 0;
}

static int oneway(mtr *g, size_t a, const double *x, double sigma, bool compress, pg_error *err);

/* MST step 1 and AIM step 1: every one-way marginal at sigma. */
static int measure_oneways(mtr *g, double sigma, bool compress, pg_error *err)
{
    /* All one-ways in one pass; measured and compressed attribute by
     * attribute as before (compressing a changes only a's codes). */
    meas *ones = calloc(g->nattr, sizeof *ones);
    size_t len = 0;
    for (size_t a = 0; ones && a < g->nattr; a++) {
        ones[a].k = 1;
        ones[a].attrs[0] = a;
        ones[a].cells = g->sizes[a];
        ones[a].off = len;
        len += g->sizes[a];
    }
    double *x = ones ? malloc((len ? len : 1) * sizeof *x) : NULL;
    int rc = x ? count_sets(g, ones, g->nattr, x, len, err)
               : pg_error_set(err, PG_ENOMEM, "out of memory counting marginals");
    for (size_t a = 0; !rc && a < g->nattr; a++)
        rc = oneway(g, a, x + ones[a].off, sigma, compress, err);
    free(ones);
    free(x);
    return rc;
}

/* Measures attribute a's one-way (counts x) and compresses its domain: a
 * number column with more fine levels than `bins` into data-adaptive runs
 * (g->adaptive, adaptive_groups), else, when `compress`, MST's rare levels
 * into one. Both are post-processing of this release. */
static int oneway(mtr *g, size_t a, const double *x, double sigma, bool compress, pg_error *err)
{
    size_t L = g->sizes[a];
    int rc = measure(g, &a, 1, x, sigma, err);
    if (rc) return rc;
    /* The label keeps its classes (conditional sampling needs them). */
    if (a == g->D.label) return PG_OK;
    const pg_disc_attr *at = &g->D.a[a];
    bool numeric = at->kind == PG_DISC_INT || at->kind == PG_DISC_REAL;
    bool adapt = g->adaptive && numeric && at->nvalue > (size_t)g->bins && L == at->levels;
    if (!adapt && !compress) return PG_OK;
    meas *m = &g->m[g->nm - 1];
    float *y = g->y + m->off;
    uint32_t *gid = malloc(L * sizeof *gid);
    double *w = malloc(L * sizeof *w);
    float *ny = NULL;
    size_t newL = L;
    if (!gid || !w) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    if (!rc && adapt) {
        newL = adaptive_groups(y, at->nvalue, at->nullable, (size_t)g->bins, ADAPT_SIGMAS * sigma,
                               gid, w);
        rc = cmap_groups(&g->cm[a], L, gid, newL, err);
        g->cm[a].runs = 1;
    } else if (!rc) {
        unsigned char *sup = malloc(L);
        if (!sup) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        for (size_t l = 0; !rc && l < L; l++) sup[l] = y[l] >= 3.0 * sigma, w[l] = y[l];
        if (!rc) rc = cmap_set(&g->cm[a], L, sup, &newL, err);
        free(sup);
    }
    if (!rc && newL < L) {
        cmap_weights(&g->cm[a], w);
        /* The measurement re-expressed on the compressed domain: a group's
         * value is the sum of its levels' noisy counts (post-processing).
         * Its noise has std sqrt(m) sigma for m levels: the fit weighs that
         * cell by 1 / m (merged_levels). */
        double *acc = calloc(newL, sizeof *acc);
        ny = malloc(newL * sizeof *ny);
        if (!acc || !ny) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        for (size_t l = 0; !rc && l < L; l++) acc[g->cm[a].fwd[l]] += y[l];
        for (size_t q = 0; !rc && q < newL; q++) ny[q] = (float)acc[q];
        free(acc);
        if (!rc) {
            memcpy(y, ny, newL * sizeof *ny);
            g->ylen = m->off + newL;
            m->cells = newL;
            g->sizes[a] = newL;
        }
    } else if (!rc) {
        cmap_free(&g->cm[a]);
    }
    free(ny);
    free(gid);
    free(w);
    return rc;
}

/* Union-find root. */
static size_t uf_root(size_t *p, size_t x)
{
    while (p[x] != x) x = p[x] = p[p[x]];
    return x;
}

static int mst_select(mtr *g, double rho_sel, pg_error *err)
{
    size_t d = g->nattr, np = d * (d - 1) / 2, r = mst_pairs(d);
    double *score = malloc(np * sizeof *score);
    size_t(*pairs)[2] = malloc(np * sizeof *pairs);
    size_t *uf = malloc(d * sizeof *uf);
    meas *ps = calloc(np ? np : 1, sizeof *ps);
    double *x = NULL, *xh = NULL;
    size_t maxc = 0, p = 0;
    for (size_t a = 0; ps && a < d; a++)
        for (size_t b = a + 1; b < d; b++, p++) {
            ps[p].k = 2, ps[p].attrs[0] = a, ps[p].attrs[1] = b;
            ps[p].cells = g->sizes[a] * g->sizes[b];
            if (ps[p].cells > maxc) maxc = ps[p].cells;
        }
    /* The pairs' counts, PASS_CELLS at a time (one pair at least). */
    size_t xlen = maxc > PASS_CELLS ? maxc : PASS_CELLS;
    x = malloc(xlen * sizeof *x);
    xh = malloc((maxc ? maxc : 1) * sizeof *xh);
    g->edges = malloc((r ? r : 1) * sizeof *g->edges);
    int rc = score && pairs && uf && ps && x && xh && g->edges
                 ? PG_OK
                 : pg_error_set(err, PG_ENOMEM, "out of memory");
    size_t groups = 0;
    for (size_t p0 = 0, p1; !rc && p0 < np; p0 = p1, groups++) {
        size_t len = 0;
        for (p1 = p0; p1 < np && (p1 == p0 || len + ps[p1].cells <= xlen); p1++) {
            ps[p1].off = len;
            len += ps[p1].cells;
        }
        rc = count_sets(g, ps + p0, p1 - p0, x, len, err);
        for (size_t q = p0; !rc && q < p1; q++) {
            const size_t *at = ps[q].attrs;
            pairs[q][0] = at[0], pairs[q][1] = at[1];
            rc = pg_pgm_marginal(g->model, at, 2, xh, err);
            double s = 0;
            for (size_t i = 0; !rc && i < ps[q].cells; i++) s += fabs(x[ps[q].off + i] - xh[i]);
            score[q] = s;
        }
    }
    /* One pass held every pair: keep the chosen ones' counts for step 3 (a
     * pass fewer; a restored trainer counts them again). */
    bool kept = groups == 1;
    size_t *picks = rc ? NULL : malloc((r ? r : 1) * sizeof *picks);
    if (!rc && !picks) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    for (size_t i = 0; i < d && !rc; i++) uf[i] = i;
    double eps = r ? sqrt(8.0 * rho_sel / (double)r) : 0;
    g->eps_sel = eps;
    double *s2 = rc ? NULL : malloc(np * sizeof *s2);
    if (!rc && !s2) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    for (size_t e = 0; !rc && e < r; e++) {
        /* Candidates are the pairs joining two components; the others get
         * -inf (never chosen, and still draw their Gumbel). */
        for (size_t q = 0; q < np; q++)
            s2[q] = uf_root(uf, pairs[q][0]) == uf_root(uf, pairs[q][1]) ? -INFINITY : score[q];
        size_t pick;
        rc = pg_marg_exponential(&g->secure, s2, np, eps, 1.0, &pick, err);
        if (rc) break;
        g->edges[g->nedges][0] = pairs[pick][0];
        g->edges[g->nedges][1] = pairs[pick][1];
        picks[g->nedges++] = pick;
        uf[uf_root(uf, pairs[pick][0])] = uf_root(uf, pairs[pick][1]);
    }
    size_t tot = 0;
    for (size_t e = 0; !rc && kept && e < g->nedges; e++) tot += ps[picks[e]].cells;
    if (!rc && kept && (g->edge_counts = malloc((tot ? tot : 1) * sizeof *g->edge_counts))) {
        tot = 0;
        for (size_t e = 0; e < g->nedges; e++) {
            const meas *q = &ps[picks[e]];
            memcpy(g->edge_counts + tot, x + q->off, q->cells * sizeof *x);
            tot += q->cells;
        }
    }
    free(picks);
    free(ps);
    free(s2);
    free(score);
    free(pairs);
    free(uf);
    free(x);
    free(xh);
    return rc;
}

/* ---- AIM workload --------------------------------------------------------- */

static bool subset(const size_t *a, size_t ka, const size_t *b, size_t kb)
{
    for (size_t i = 0; i < ka; i++) {
        bool f = false;
        for (size_t j = 0; j < kb; j++) f |= a[i] == b[j];
        if (!f) return false;
    }
    return true;
}

static size_t overlap(const size_t *a, size_t ka, const size_t *b, size_t kb)
{
    size_t o = 0;
    for (size_t i = 0; i < ka; i++)
        for (size_t j = 0; j < kb; j++) o += a[i] == b[j];
    return o;
}

/* The attribute of aim.target (a table column name), else the label's. */
static size_t target_attr(const json_t *r, const pg_disc *D, const pg_table *t)
{
    const char *name = pg_spec_str(r, "aim.target", NULL);
    if (!name || !t) return D->label;
    return pg_table_find(t, name, strlen(name));
}

/* The workload's downward closure (sets of 1..3 attributes) with weights
 * w(cl) = sum over workload sets q of w_q |cl & q|, and their true marginals. */
static int aim_workload(mtr *g, size_t cell_cap, pg_error *err)
{
    double label_weight = g->label_weight;
    size_t d = g->nattr, L = g->target;
    bool triples = L != PG_TABLE_NONE && label_weight > 0 && d >= 3;
    size_t nw = d * (d - 1) / 2 + (triples ? (d - 1) * (d - 2) / 2 : 0);
    meas *W = calloc(nw ? nw : 1, sizeof *W);
    double *ww = calloc(nw ? nw : 1, sizeof *ww);
    size_t cap = d + nw;
    g->cand = calloc(cap, sizeof *g->cand);
    g->weight = calloc(cap, sizeof *g->weight);
    if (!W || !ww || !g->cand || !g->weight) {
        free(W), free(ww);
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    size_t k = 0;
    for (size_t a = 0; a < d; a++)
        for (size_t b = a + 1; b < d; b++) {
            W[k].k = 2, W[k].attrs[0] = a, W[k].attrs[1] = b, ww[k++] = 1.0;
        }
    if (triples)
        for (size_t a = 0; a < d; a++)
            for (size_t b = a + 1; b < d; b++) {
                if (a == L || b == L) continue;
                size_t s[3] = {a, b, L};
                /* sorted */
                for (int i = 0; i < 2; i++)
                    for (int j = 0; j < 2 - i; j++)
                        if (s[j] > s[j + 1]) {
                            size_t tt = s[j];
                            s[j] = s[j + 1];
                            s[j + 1] = tt;
                        }
                W[k].k = 3;
                memcpy(W[k].attrs, s, sizeof s);
                ww[k++] = label_weight;
            }
    nw = k;
    /* Candidates: one-ways, then every workload set (pairs and triples are
     * distinct; a triple's sub-pairs are pairs of the workload already). */
    size_t nc = 0, off = 0;
    for (size_t a = 0; a < d; a++) {
        g->cand[nc].k = 1, g->cand[nc].attrs[0] = a;
        nc++;
    }
    for (size_t i = 0; i < nw; i++) g->cand[nc++] = W[i];
    g->max_weight = 0;
    size_t kept = 0;
    for (size_t c = 0; c < nc; c++) {
        meas *m = &g->cand[c];
        double w = 0;
        for (size_t i = 0; i < nw; i++)
            w += ww[i] * (double)overlap(m->attrs, m->k, W[i].attrs, W[i].k);
        size_t cells = 1;
        for (size_t j = 0; j < m->k; j++) cells *= g->sizes[m->attrs[j]];
        if ((double)cells > (double)cell_cap) continue; /* can never fit */
        /* The true answers are held for every candidate: their total is
         * bounded by 4 x model.max_cells (one-ways, then pairs, then triples
         * until the bound; a schema-only rule, so no data decides it). */
        if ((double)(off + cells) > 4.0 * (double)cell_cap) continue;
        m->cells = cells;
        m->off = off;
        off += cells;
        g->weight[kept] = w;
        g->cand[kept++] = *m;
        if (w > g->max_weight) g->max_weight = w;
    }
    g->ncand = kept;
    free(W);
    free(ww);
    g->answers = malloc((off ? off : 1) * sizeof *g->answers);
    if (!g->answers) return pg_error_set(err, PG_ENOMEM, "out of memory");
    /* Every candidate's answer in one pass (their total is bounded above):
     * the rounds measure from these, never reading the rows again. */
    return count_sets(g, g->cand, g->ncand, g->answers, off, err);
}

/* Cells of the model's junction tree with one more set. */
static int cells_with(mtr *g, const meas *c, double *cells, pg_error *err)
{
    size_t nq = g->nm + 1;
    const size_t **cl = malloc(nq * sizeof *cl);
    size_t *ck = malloc(nq * sizeof *ck);
    if (!cl || !ck) {
        free(cl), free(ck);
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < g->nm; i++) cl[i] = g->m[i].attrs, ck[i] = g->m[i].k;
    cl[g->nm] = c->attrs, ck[g->nm] = c->k;
    int rc = pg_pgm_plan_cells(g->sizes, g->nattr, (const size_t *const *)cl, ck, nq, cells, err);
    free(cl), free(ck);
    return rc;
}

static bool in_model(mtr *g, const meas *c)
{
    size_t nc = pg_pgm_model_ncliques(g->model);
    for (size_t j = 0; j < nc; j++) {
        size_t k;
        const size_t *a = pg_pgm_model_clique(g->model, j, &k);
        if (subset(c->attrs, c->k, a, k)) return true;
    }
    return false;
}

static int aim_round(mtr *g, pg_error *err)
{
    double rho_left = g->rho - g->rho_used;
    bool last = false;
    if (rho_left < 2.0 * (0.5 / (g->sigma * g->sigma) + g->eps_sel * g->eps_sel / 8.0)) {
        g->sigma = sqrt(1.0 / (2.0 * 0.9 * rho_left));
        g->eps_sel = sqrt(8.0 * 0.1 * rho_left);
        last = true;
    }
    double spend = 0.5 / (g->sigma * g->sigma) + g->eps_sel * g->eps_sel / 8.0;
    g->rho_used = last ? g->rho : g->rho_used + spend;
    double limit = g->aim_cells * g->rho_used / g->rho;
    double *score = malloc(g->ncand * sizeof *score);
    size_t maxc = 1;
    for (size_t c = 0; c < g->ncand; c++)
        if (g->cand[c].cells > maxc) maxc = g->cand[c].cells;
    double *xh = malloc(maxc * sizeof *xh);
    int rc = score && xh ? PG_OK : pg_error_set(err, PG_ENOMEM, "out of memory");
    size_t feasible = 0;
    for (size_t c = 0; !rc && c < g->ncand; c++) {
        meas *cd = &g->cand[c];
        double cells = 0;
        if (!in_model(g, cd)) {
            rc = cells_with(g, cd, &cells, err);
            if (rc == PG_ERANGE) rc = PG_OK, cells = INFINITY;
            if (rc) break;
            if (cells > limit) {
                score[c] = -INFINITY;
                continue;
            }
        }
        rc = pg_pgm_marginal(g->model, cd->attrs, cd->k, xh, err);
        if (rc) break;
        const double *x = g->answers + cd->off;
        double l1 = 0;
        for (size_t i = 0; i < cd->cells; i++) l1 += fabs(x[i] - xh[i]);
        double bias = sqrt(2.0 / M_PI) * g->sigma * (double)cd->cells;
        score[c] = g->weight[c] * (l1 - bias);
        feasible++;
    }
    size_t pick = 0;
    if (!rc && !feasible) rc = pg_error_set(err, PG_ERANGE, "no candidate fits the model bound");
    if (!rc)
        rc =
            pg_marg_exponential(&g->secure, score, g->ncand, g->eps_sel, g->max_weight, &pick, err);
    meas cd = g->cand[pick];
    double *z = NULL, *w = NULL;
    if (!rc) {
        z = malloc(cd.cells * sizeof *z);
        w = malloc(cd.cells * sizeof *w);
        if (!z || !w) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    if (!rc) rc = pg_pgm_marginal(g->model, cd.attrs, cd.k, z, err);
    if (!rc) rc = measure(g, cd.attrs, cd.k, g->answers + cd.off, g->sigma, err);
    if (!rc) rc = fit(g, last ? g->iters : g->round_iters, last ? 0 : AIM_ROUND_TOL, true, err);
    if (!rc) rc = pg_pgm_marginal(g->model, cd.attrs, cd.k, w, err);
    if (!rc) {
        double ch = 0;
        for (size_t i = 0; i < cd.cells; i++) ch += fabs(w[i] - z[i]);
        if (ch <= g->sigma * sqrt(2.0 / M_PI) * (double)cd.cells) {
            g->sigma /= 2.0;
            g->eps_sel *= 2.0;
        }
        if (last) g->done = 1;
    }
    free(score);
    free(xh);
    free(z);
    free(w);
    return rc;
}

/* ---- validation and plan -------------------------------------------------- */

static int common_validate(const pg_param *params, const char *name, const json_t *spec,
                           const pg_job_data *in, json_t **resolved, pg_spec_errors *errors,
                           pg_error *err)
{
    const pg_data_desc *desc = in->desc;
    *resolved = NULL;
    int before = errors->count;
    pg_job_data_no_public(in, name, errors);
    if (desc->model != PG_PRIVACY_CENTRAL)
        pg_spec_error_add(errors, "dataset_id",
                          "%s measures marginals of central (raw, private) tables only; locally "
                          "privatized data needs entropic_gan or swd_flow",
                          name);
    if (!desc->table && desc->ndim != 1)
        pg_spec_error_add(errors, "dataset_id",
                          "%s synthesizes tables; images are not a marginal method's job (use "
                          "dp_sinkhorn or swd_gen)",
                          name);
    else if (!desc->table && desc->d > PG_MARG_MAX_UNTYPED)
        pg_spec_error_add(errors, "dataset_id",
                          "%s treats an untyped dataset's %zu columns as continuous, which works "
                          "up to %d columns: declare a typed schema, or use another method",
                          name, desc->d, PG_MARG_MAX_UNTYPED);
    json_t *r = NULL;
    pg_spec_resolve(params, spec, IGNORED, &r, errors);
    if (!r || errors->count != before) {
        json_decref(r);
        return PG_EINVAL;
    }
    double delta = spec_delta(r, desc);
    if (pg_spec_get(r, "privacy.delta") && desc->cap_delta > 0 && delta > desc->cap_delta)
        pg_spec_error_add(errors, "privacy.delta", "exceeds the dataset's cap delta %g",
                          desc->cap_delta);
    if (!(delta > 0 && delta < 1))
        pg_spec_error_add(errors, "privacy.delta",
                          "the dataset declares no cap delta: give privacy.delta");
    if (desc->n == 0) pg_spec_error_add(errors, "dataset_id", "the dataset has no rows");
    const char *target = pg_spec_str(r, "aim.target", NULL);
    if (target &&
        (!desc->table || pg_table_find(desc->table, target, strlen(target)) == PG_TABLE_NONE))
        pg_spec_error_add(errors, "aim.target", "names no column of the dataset's schema");
    long bins = pg_spec_int(r, "discretize.bins", 0);
    if (bins == 1) pg_spec_error_add(errors, "discretize.bins", "must be 0 (auto) or >= 2");
    if (errors->count != before) {
        json_decref(r);
        return PG_EINVAL;
    }
    double eps = pg_spec_num(r, "privacy.epsilon", 1), rho;
    pg_error e2 = {0};
    if (pg_marg_rho_for(eps, delta, &rho, &e2)) {
        pg_spec_error_add(errors, "privacy.epsilon", "cannot be reached: %s", e2.msg);
        json_decref(r);
        return PG_EINVAL;
    }
    if (desc->cap_epsilon > 0 && ledger_eps(rho, desc->cap_delta > 0 ? desc->cap_delta : delta) >
                                     desc->cap_epsilon * (1 + 1e-12))
        pg_spec_error_add(errors, "privacy.epsilon",
                          "this job alone would spend epsilon %.4g, above the dataset's cap %.4g",
                          eps, desc->cap_epsilon);
    /* The domain from the schema alone: its size decides what can fit. */
    pg_disc D;
    int b = spec_bins(r, desc), fb = spec_fine_bins(r, desc);
    bool adaptive = spec_adaptive(r, desc);
    int rc =
        pg_disc_build(desc->table, desc->d, desc->lo, desc->hi, desc->num_classes, fb, &D, err);
    if (rc) {
        json_decref(r);
        return rc;
    }
    size_t d = D.nattr;
    double max_cells = pg_spec_num(r, "model.max_cells", 8e6);
    if (d < 2)
        pg_spec_error_add(errors, "dataset_id", "%s needs at least two columns (the label counts)",
                          name);
    /* The largest pair table and the largest tree (MST's model is a tree;
     * AIM needs room for at least one pair). */
    double one = 0, maxpair = 0;
    /* levels in the model: an adaptive number column's runs at most */
    double *lv = malloc((d ? d : 1) * sizeof *lv);
    if (!lv) {
        pg_disc_free(&D);
        json_decref(r);
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    for (size_t a = 0; a < d; a++) lv[a] = level_bound(&D.a[a], b, adaptive);
    for (size_t a = 0; a < d; a++) one += lv[a];
    /* Heaviest spanning tree by Prim on pair cells: an upper bound on any
     * tree MST can pick (compression only shrinks levels). */
    double tree = 0;
    if (d >= 2) {
        double *best = malloc(d * sizeof *best);
        bool *in_t = calloc(d, sizeof *in_t);
        if (best && in_t) {
            in_t[0] = true;
            for (size_t a = 1; a < d; a++) best[a] = lv[0] * lv[a];
            for (size_t it = 1; it < d; it++) {
                size_t bi = 0;
                double bv = -1;
                for (size_t a = 0; a < d; a++)
                    if (!in_t[a] && best[a] > bv) bv = best[a], bi = a;
                in_t[bi] = true;
                tree += bv;
                if (bv > maxpair) maxpair = bv;
                for (size_t a = 0; a < d; a++) {
                    double c = lv[bi] * lv[a];
                    if (!in_t[a] && c > best[a]) best[a] = c;
                }
            }
        }
        free(best);
        free(in_t);
    }
    bool is_aim = params == AIM_PARAMS;
    if (d >= 2 && !is_aim && tree > max_cells)
        pg_spec_error_add(errors, "model.max_cells",
                          "an MST model on this schema may need up to %.0f cells (the heaviest "
                          "spanning tree of pair tables at %d bins), above the bound %.0f: raise "
                          "model.max_cells or lower discretize.bins",
                          tree, b, max_cells);
    if (d >= 2 && is_aim && one + maxpair > max_cells) {
        double minpair = INFINITY;
        for (size_t a = 0; a < d; a++)
            for (size_t c = a + 1; c < d; c++) minpair = fmin(minpair, lv[a] * lv[c]);
        if (one + minpair > max_cells)
            pg_spec_error_add(errors, "model.max_cells",
                              "no pair of columns fits: the smallest needs %.0f cells with the "
                              "one-way tables, above the bound %.0f",
                              one + minpair, max_cells);
    }
    free(lv);
    if (errors->count != before) {
        pg_disc_free(&D);
        json_decref(r);
        return PG_EINVAL;
    }
    /* What the dry run shows: the accounting, derived (never read back). */
    long T = is_aim ? pg_spec_int(r, "aim.rounds", 0) : 0;
    if (is_aim && T <= 0) T = 16 * (long)d;
    json_t *acc =
        json_pack("{s:f,s:f,s:f,s:i,s:I,s:s}", "rho", rho, "epsilon_charged",
                  ledger_eps(rho, delta), "epsilon_zcdp_tight", pg_marg_zcdp_epsilon(rho, delta),
                  "bins", b, "attributes", (json_int_t)d, "neighbouring", "add_remove");
    json_object_set_new(acc, "fine_bins", adaptive ? json_integer(fb) : json_null());
    if (!is_aim) {
        double s1 = sqrt(3.0 * (double)d / (2.0 * rho));
        double s2 = sqrt(3.0 * (double)(d - 1) / (2.0 * rho));
        json_object_set_new(acc, "sigma_one_way", json_real(s1));
        json_object_set_new(acc, "sigma_pairs", json_real(s2));
        json_object_set_new(acc, "selection_epsilon",
                            json_real(sqrt(8.0 * rho / 3.0 / (double)(d - 1))));
        json_object_set_new(acc, "rounds", json_integer(3));
        json_object_set_new(acc, "model_cells_bound", json_real(one + tree));
    } else {
        json_object_set_new(acc, "sigma_initial", json_real(sqrt((double)T / (2 * 0.9 * rho))));
        json_object_set_new(acc, "selection_epsilon_initial",
                            json_real(sqrt(8 * 0.1 * rho / (double)T)));
        json_object_set_new(acc, "rounds_max", json_integer((json_int_t)T + 1));
        double mc = pg_spec_num(r, "aim.model_cells", 0);
        if (!(mc > 0)) mc = fmax(AIM_CELLS_FLOOR, AIM_CELLS_PER_ROW * (double)desc->n);
        json_object_set_new(acc, "model_cells", json_real(fmin(mc, max_cells)));
        json_object_set_new(acc, "T", json_integer((json_int_t)T));
    }
    json_object_set_new(r, "accounting", acc);
    pg_disc_free(&D);
    *resolved = r;
    return PG_OK;
}

static int common_plan(const json_t *r, const pg_job_data *in, bool is_aim, pg_privacy_plan *plan,
                       pg_error *err)
{
    const pg_data_desc *desc = in->desc;
    memset(plan, 0, sizeof *plan);
    double delta = spec_delta(r, desc), rho;
    int rc = pg_marg_rho_for(pg_spec_num(r, "privacy.epsilon", 1), delta, &rho, err);
    if (rc) return rc;
    plan->charges = true;
    plan->delta = delta;
    plan->norders = (int)pg_rdp_default_orders(plan->orders, PG_PLAN_MAX_ORDERS);
    for (int i = 0; i < plan->norders; i++) plan->rdp[i] = plan->orders[i] * rho;
    rc = pg_rdp_to_dp(plan->orders, plan->rdp, (size_t)plan->norders, delta, PG_RDP_CONV_IMPROVED,
                      &plan->epsilon, NULL, err);
    if (rc) {
        memset(plan, 0, sizeof *plan);
        return rc;
    }
    const json_t *acc = json_object_get(r, "accounting");
    long T = (long)json_integer_value(json_object_get(acc, "T"));
    plan->steps = (is_aim ? 1 + T + 1 : 3) + PG_MARG_SPARE;
    plan->sampling_rate = 1.0;
    plan->noise_multiplier = sqrt(1.0 / (2.0 * rho)); /* the whole job as one Gaussian */
    snprintf(plan->mechanism, sizeof plan->mechanism, "%s",
             is_aim ? "zcdp_gaussian+exponential_aim" : "zcdp_gaussian+exponential_mst");
    snprintf(plan->neighbouring, sizeof plan->neighbouring, "add_remove");
    return PG_OK;
}

static int mst_validate(const json_t *s, const pg_job_data *in, json_t **r, pg_spec_errors *e,
                        pg_error *err)
{
    return common_validate(MST_PARAMS, "mst", s, in, r, e, err);
}
static int aim_validate(const json_t *s, const pg_job_data *in, json_t **r, pg_spec_errors *e,
                        pg_error *err)
{
    return common_validate(AIM_PARAMS, "aim", s, in, r, e, err);
}
static int mst_plan(const json_t *r, const pg_job_data *in, pg_privacy_plan *p, pg_error *err)
{
    return common_plan(r, in, false, p, err);
}
static int aim_plan(const json_t *r, const pg_job_data *in, pg_privacy_plan *p, pg_error *err)
{
    return common_plan(r, in, true, p, err);
}
static json_t *mst_catalogue(void)
{
    return pg_spec_catalogue(MST_PARAMS);
}
static json_t *aim_catalogue(void)
{
    return pg_spec_catalogue(AIM_PARAMS);
}

/* ---- create / step ---------------------------------------------------------- */

static int common_new(const json_t *r, const pg_job_data *in, bool is_aim, int threads, mtr **out,
                      pg_error *err)
{
    const pg_data_desc *desc = in->desc;
    *out = NULL;
    const pg_rowsrc *src = in->source;
    bool ok = src ? src->d == desc->d && src->n > 0 && src->chunk > 0 && src->pass
                  : in->rows && in->rows->d == desc->d && in->rows->n > 0;
    if (!ok)
        return pg_error_set(err, PG_EINVAL, "the dataset is empty or changed since validation");
    mtr *g = calloc(1, sizeof *g);
    if (!g) return pg_error_set(err, PG_ENOMEM, "cannot allocate the trainer");
    if (!src) {
        pg_rowsrc_dataset(&g->own_src, in->rows, 0);
        src = &g->own_src;
    }
    g->src = src;
    g->base.method = is_aim ? &pg_method_aim : &pg_method_mst;
    g->aim = is_aim;
    g->threads = threads;
    g->bins = spec_bins(r, desc);
    g->adaptive = spec_adaptive(r, desc);
    g->label_weight = pg_spec_num(r, "aim.label_weight", 4);
    g->delta = spec_delta(r, desc);
    g->max_cells = pg_spec_num(r, "model.max_cells", 8e6);
    g->aim_cells =
        json_number_value(json_object_get(json_object_get(r, "accounting"), "model_cells"));
    if (!(g->aim_cells > 0) || g->aim_cells > g->max_cells) g->aim_cells = g->max_cells;
    long it = pg_spec_int(r, "fit.iters", 0);
    g->iters = it > 0 ? (size_t)it : 2000;
    g->round_iters = (size_t)pg_spec_int(r, "aim.round_iters", 250);
    g->compress = !is_aim && pg_spec_bool(r, "mst.compress", true);
    g->support = pg_spec_num(r, "sample.support_sigmas", 5);
    int rc = pg_marg_rho_for(pg_spec_num(r, "privacy.epsilon", 1), g->delta, &g->rho, err);
    if (!rc) rc = copy_table(desc->table, &g->t, err);
    if (!rc)
        rc = pg_disc_build(g->t, desc->d, desc->lo, desc->hi, desc->num_classes,
                           spec_fine_bins(r, desc), &g->D, err);
    if (!rc) {
        g->nattr = g->D.nattr;
        g->target = target_attr(r, &g->D, g->t);
        rc = cmap_identity(g, err);
    }
    if (!rc) rc = pg_rng_secure(&g->secure, err);
    const json_t *acc = json_object_get(r, "accounting");
    g->T = (long)json_integer_value(json_object_get(acc, "T"));
    g->steps_plan = (is_aim ? 1 + g->T + 1 : 3) + PG_MARG_SPARE;
    if (rc) {
        mtr_destroy(&g->base);
        return rc;
    }
    *out = g;
    return PG_OK;
}

static int common_create(const json_t *r, const pg_job_data *in, int threads, bool is_aim,
                         pg_trainer **out, pg_error *err)
{
    *out = NULL;
    mtr *g;
    int rc = common_new(r, in, is_aim, threads, &g, err);
    if (rc) {
        if (g) mtr_destroy(&g->base);
        return rc;
    }
    *out = &g->base;
    return PG_OK;
}

static int mst_create(const json_t *r, const pg_job_data *in, int threads, pg_trainer **out,
                      pg_error *err)
{
    return common_create(r, in, threads, false, out, err);
}
static int aim_create(const json_t *r, const pg_job_data *in, int threads, pg_trainer **out,
                      pg_error *err)
{
    return common_create(r, in, threads, true, out, err);
}

static int common_step(pg_trainer *tr, pg_step_report *rep, pg_error *err)
{
    mtr *g = (mtr *)tr;
    memset(rep, 0, sizeof *rep);
    /* The report carries the loss of the model before this step's
     * measurement (see the top comment). */
    rep->loss = g->loss;
    if (g->done) {
        rep->step = g->step;
        rep->done = true;
        rep->epsilon_spent = ledger_eps(g->rho_used, g->delta);
        return PG_OK;
    }
    int rc = PG_OK;
    size_t d = g->nattr;
    if (!g->aim) {
        if (g->step == 0) {
            rc = measure_oneways(g, sqrt(3.0 * (double)d / (2.0 * g->rho)), g->compress, err);
            if (!rc) rc = fit(g, g->round_iters, 0, false, err);
            g->rho_used = g->rho / 3.0;
        } else if (g->step == 1) {
            rc = mst_select(g, g->rho / 3.0, err);
            g->rho_used = 2.0 * g->rho / 3.0;
        } else {
            double s2 = sqrt(3.0 * (double)mst_pairs(d) / (2.0 * g->rho));
            meas *es = calloc(g->nedges ? g->nedges : 1, sizeof *es);
            if (!es) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
            for (size_t e = 0, off = 0; !rc && g->edge_counts && e < g->nedges; e++) {
                rc = measure(g, g->edges[e], 2, g->edge_counts + off, s2, err);
                off += set_cells(g->sizes, g->edges[e], 2);
            }
            for (size_t e = 0; !rc && e < g->nedges; e++) {
                es[e].k = 2;
                es[e].attrs[0] = g->edges[e][0];
                es[e].attrs[1] = g->edges[e][1];
            }
            if (!rc && !g->edge_counts) rc = measure_sets(g, es, g->nedges, s2, err);
            free(es);
            if (!rc) rc = fit(g, g->iters, 0, true, err);
            g->rho_used = g->rho;
            g->done = 1;
        }
    } else {
        if (g->step == 0) {
            g->sigma = sqrt((double)g->T / (2.0 * 0.9 * g->rho));
            g->eps_sel = sqrt(8.0 * 0.1 * g->rho / (double)g->T);
            g->rho_used = (double)d * 0.5 / (g->sigma * g->sigma);
            rc = measure_oneways(g, g->sigma, false, err);
            /* the workload on the domain the one-ways just compressed: every
             * candidate's answer in one pass */
            if (!rc) rc = aim_workload(g, (size_t)g->max_cells, err);
            if (!rc) rc = fit(g, g->round_iters, AIM_ROUND_TOL, false, err);
        } else {
            rc = aim_round(g, err);
        }
    }
    if (rc) return rc;
    g->step++;
    rep->step = g->step;
    rep->epsilon_spent = ledger_eps(g->rho_used, g->delta);
    rep->done = g->done;
    return PG_OK;
}

/* ---- snapshots ------------------------------------------------------------ */

typedef struct msnap {
    pg_pgm_model *model;
    pg_table *t;
    pg_disc D;
    cmap *cm;
    size_t nattr, d;
    double *class_p; /* model probability of each class (NULL without label) */
    size_t classes;
    unsigned char **drop; /* per attribute (NULL: none): levels rejected when sampling */
} msnap;

static void msnap_free(void *impl)
{
    msnap *s = impl;
    if (!s) return;
    pg_pgm_model_free(s->model);
    pg_table_free(s->t);
    for (size_t i = 0; s->cm && i < s->nattr; i++) cmap_free(&s->cm[i]);
    free(s->cm);
    pg_disc_free(&s->D);
    free(s->class_p);
    for (size_t i = 0; s->drop && i < s->nattr; i++) free(s->drop[i]);
    free(s->drop);
    free(s);
}

/* Draws n rows from the joint (label < 0) or from class `label` by
 * rejection; classes (may be NULL) receives each row's class. */
static int msnap_draw(const msnap *s, size_t n, uint64_t seed, int label, float *out,
                      int32_t *classes, pg_error *err)
{
    pg_rng rng;
    pg_rng_seeded(&rng, seed, STREAM_SAMPLE);
    size_t A = s->nattr, L = s->D.label;
    if (label >= 0 && (L == PG_TABLE_NONE || (size_t)label >= s->classes))
        return pg_error_set(err, PG_EINVAL, "label %d is not a class of the model", label);
    double p = label >= 0 ? s->class_p[label] : 1.0;
    if (label >= 0 && !(p >= PG_MARG_MIN_CLASS_P))
        return pg_error_set(err, PG_ERANGE,
                            "class %d has probability %.2g under the model, too rare to sample "
                            "conditionally",
                            label, p);
    size_t batch = n < 4096 ? n : 4096;
    if (label >= 0) batch = (size_t)fmin(65536.0, ceil((double)batch / p * 1.2) + 16);
    uint32_t *codes = malloc(batch * A * sizeof *codes);
    uint32_t *orig = malloc(A * sizeof *orig);
    if (!codes || !orig) {
        free(codes), free(orig);
        return pg_error_set(err, PG_ENOMEM, "out of memory drawing samples");
    }
    int rc = PG_OK;
    size_t got = 0;
    /* The support accepts a row with probability >= 1/2 (msnap_support). */
    double tries = 0, max_tries = label >= 0 ? 100.0 * (double)n / p + 1e5 : INFINITY;
    while (!rc && got < n) {
        size_t m = label >= 0 ? batch : (n - got < batch ? n - got : batch);
        if (tries > max_tries) {
            rc = pg_error_set(err, PG_ENUMERIC, "conditional sampling of class %d did not finish",
                              label);
            break;
        }
        tries += (double)m;
        rc = pg_pgm_sample(s->model, &rng, m, codes, err);
        for (size_t i = 0; !rc && i < m && got < n; i++) {
            const uint32_t *c = codes + i * A;
            if (label >= 0 && c[L] != (uint32_t)label) continue;
            bool rej = false;
            for (size_t a = 0; s->drop && a < A; a++) rej |= s->drop[a] && s->drop[a][c[a]];
            if (rej) continue;
            for (size_t a = 0; a < A; a++) {
                const cmap *cm = &s->cm[a];
                uint32_t v = c[a];
                if (cm->fwd) v = cmap_draw(cm, v, &rng);
                orig[a] = v;
            }
            int32_t cls = 0;
            pg_disc_decode(&s->D, s->t, orig, &rng, out + got * s->d, &cls);
            if (classes) classes[got] = cls;
            got++;
        }
    }
    free(codes);
    free(orig);
    return rc;
}

static int msnap_sample(const void *impl, size_t n, uint64_t seed, int label, float *out,
                        pg_error *err)
{
    return msnap_draw(impl, n, seed, label, out, NULL, err);
}

static int msnap_sample_labeled(const void *impl, size_t n, uint64_t seed, float *out,
                                int32_t *labels, pg_error *err)
{
    return msnap_draw(impl, n, seed, -1, out, labels, err);
}

static const pg_snapshot_ops MSNAP = {msnap_sample, msnap_free, msnap_sample_labeled};

static int disc_copy(const pg_disc *src, pg_disc *dst, pg_error *err)
{
    *dst = *src;
    dst->a = calloc(src->nattr, sizeof *dst->a);
    if (!dst->a) {
        memset(dst, 0, sizeof *dst);
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    for (size_t a = 0; a < src->nattr; a++) {
        dst->a[a] = src->a[a];
        dst->a[a].edges = NULL;
        if (!src->a[a].edges) continue;
        size_t ne = src->a[a].nvalue + 1;
        if (!(dst->a[a].edges = malloc(ne * sizeof(double)))) {
            pg_disc_free(dst);
            return pg_error_set(err, PG_ENOMEM, "out of memory");
        }
        memcpy(dst->a[a].edges, src->a[a].edges, ne * sizeof(double));
    }
    return PG_OK;
}

static int cmap_copy(const cmap *src, size_t levels, cmap *dst, pg_error *err)
{
    memset(dst, 0, sizeof *dst);
    if (!src->fwd) return PG_OK;
    int rc = cmap_groups(dst, levels, src->fwd, src->ngroup, err);
    if (!rc) memcpy(dst->cum, src->cum, levels * sizeof *dst->cum);
    dst->runs = src->runs;
    return rc;
}

/* Sampling support (sample.support_sigmas). The fit spreads the Gaussian
 * noise of every measurement over cells whose true count is 0: each such cell
 * of a measurement at sigma keeps about sigma / sqrt(2 pi) of mass (the fit
 * cannot go below 0, so the noise's negative half is cut and its positive
 * half stays). A number column whose data sit in 2 of its 8 bins then gets a
 * few percent of its rows in the empty bins, decoded far out in the range
 * (credit_data's Price, declared up to 20000, lives mostly below 2500): the
 * synthetic rows carry outliers the real ones never had, and a downstream
 * linear model trained on them loses the column. So the snapshot samples
 * from the model conditioned on every number column sitting in a level whose
 * fitted count is at least tau[a] (rejection: a row with a number in a
 * level below it is drawn again). tau[a] = k x the noise std of the most
 * precise measurement of a's one-way: min over measurements i holding a of
 * sigma_i sqrt(cells_i / levels_a) (a's one-way from measurement i sums
 * cells_i / levels_a noisy cells). Post-processing of the released model:
 * no privacy cost. Categorical, boolean and label attributes, compressed
 * attributes (mst merges its rare levels already) and levels that are
 * "missing" keep every level. At most half of the model's mass is cut: if
 * the cut levels' mass summed over attributes exceeds 1/2, attributes are
 * released from the rule, largest cut first, so a row is accepted with
 * probability at least 1/2 and sampling always ends. */
static int support_tau(const meas *m, size_t nm, const size_t *sizes, size_t nattr, double k,
                       double *tau)
{
    for (size_t a = 0; a < nattr; a++) tau[a] = 0;
    if (!(k > 0)) return 0;
    for (size_t a = 0; a < nattr; a++) {
        double best = INFINITY;
        for (size_t i = 0; i < nm; i++)
            for (size_t j = 0; j < m[i].k; j++)
                if (m[i].attrs[j] == a && m[i].sigma > 0)
                    best = fmin(best, m[i].sigma * sqrt((double)m[i].cells / (double)sizes[a]));
        tau[a] = isfinite(best) ? k * best : 0;
    }
    return 1;
}

static int msnap_support(msnap *s, const double *tau, pg_error *err)
{
    const size_t *sz = pg_pgm_model_sizes(s->model);
    double total = pg_pgm_model_total(s->model);
    double *cut = calloc(s->nattr, sizeof *cut);
    s->drop = calloc(s->nattr, sizeof *s->drop);
    if (!cut || !s->drop) {
        free(cut);
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    int rc = PG_OK;
    for (size_t a = 0; !rc && a < s->nattr; a++) {
        const pg_disc_attr *x = &s->D.a[a];
        bool numeric = x->kind == PG_DISC_INT || x->kind == PG_DISC_REAL;
        /* an adaptive number's runs are levels like any other here */
        if (!numeric || !(tau[a] > 0) || (s->cm[a].fwd && !s->cm[a].runs) || !(total > 0)) continue;
        double *m1 = malloc(sz[a] * sizeof *m1);
        unsigned char *dr = calloc(sz[a], 1);
        if (!m1 || !dr) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        if (!rc) rc = pg_pgm_marginal(s->model, &a, 1, m1, err);
        size_t nd = 0;
        size_t nval = s->cm[a].fwd ? sz[a] - (size_t)x->nullable : x->nvalue;
        for (size_t l = 0; !rc && l < nval && l < sz[a]; l++)
            if (m1[l] < tau[a]) dr[l] = 1, nd++, cut[a] += fmax(m1[l], 0) / total;
        if (!rc && nd > 0 && nd < sz[a])
            s->drop[a] = dr, dr = NULL;
        else
            cut[a] = 0;
        free(m1);
        free(dr);
    }
    for (;;) {
        double sum = 0, big = 0;
        size_t bi = 0;
        for (size_t a = 0; a < s->nattr; a++) {
            sum += cut[a];
            if (cut[a] > big) big = cut[a], bi = a;
        }
        if (sum <= 0.5 || big <= 0) break;
        free(s->drop[bi]);
        s->drop[bi] = NULL;
        cut[bi] = 0;
    }
    free(cut);
    return rc;
}

/* A snapshot of `model` (ownership moves in, even on failure) over the
 * domain D (copied) with compression maps cm (copied); tau (NULL: none) the
 * sampling support's thresholds per attribute (support_tau). */
static int msnap_make(pg_pgm_model *model, const pg_table *t, const pg_disc *D, const cmap *cm,
                      const double *tau, long step, pg_snapshot **out, pg_error *err)
{
    *out = NULL;
    msnap *s = calloc(1, sizeof *s);
    if (!s) {
        pg_pgm_model_free(model);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate a snapshot");
    }
    s->model = model;
    s->nattr = D->nattr;
    s->d = D->d;
    int rc = copy_table(t, &s->t, err);
    if (!rc) rc = disc_copy(D, &s->D, err);
    if (!rc) {
        s->cm = calloc(D->nattr, sizeof *s->cm);
        if (!s->cm) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        for (size_t a = 0; !rc && a < D->nattr; a++)
            rc = cmap_copy(&cm[a], D->a[a].levels, &s->cm[a], err);
    }
    size_t L = D->label;
    if (!rc && L != PG_TABLE_NONE) {
        s->classes = D->a[L].nvalue;
        s->class_p = calloc(s->classes, sizeof *s->class_p);
        if (!s->class_p) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        /* The label is never compressed, so its codes are its classes. */
        if (!rc) rc = pg_pgm_marginal(model, &L, 1, s->class_p, err);
        double tot = 0;
        for (size_t k = 0; !rc && k < s->classes; k++) tot += fmax(s->class_p[k], 0);
        for (size_t k = 0; !rc && k < s->classes; k++)
            s->class_p[k] = tot > 0 ? fmax(s->class_p[k], 0) / tot : 0;
    }
    if (!rc && tau) rc = msnap_support(s, tau, err);
    if (rc) {
        msnap_free(s);
        return rc;
    }
    return pg_snapshot_new(&MSNAP, s, step, D->d, (int)s->classes, out, err);
}

static int model_copy(const pg_pgm_model *m, pg_pgm_model **out, pg_error *err)
{
    unsigned char *b = NULL;
    size_t len = 0;
    int rc = pg_pgm_save(m, &b, &len, err);
    if (!rc) rc = pg_pgm_load(b, len, out, err);
    free(b);
    return rc;
}

static int common_snapshot(pg_trainer *tr, pg_snapshot **out, pg_error *err)
{
    mtr *g = (mtr *)tr;
    *out = NULL;
    if (!g->model) return pg_error_set(err, PG_ESTATE, "no model fitted yet");
    pg_pgm_model *copy = NULL;
    int rc = model_copy(g->model, &copy, err);
    if (rc) return rc;
    double *tau = malloc(g->nattr * sizeof *tau);
    if (!tau) {
        pg_pgm_model_free(copy);
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    bool on = support_tau(g->m, g->nm, g->sizes, g->nattr, g->support, tau);
    rc = msnap_make(copy, g->t, &g->D, g->cm, on ? tau : NULL, g->step, out, err);
    free(tau);
    return rc;
}

/* ---- checkpoints ------------------------------------------------------------ */

static json_t *size_array(const size_t *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) json_array_append_new(a, json_integer((json_int_t)v[i]));
    return a;
}

static json_t *real_array(const double *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) json_array_append_new(a, json_real(v[i]));
    return a;
}

static json_t *u32_array(const uint32_t *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) json_array_append_new(a, json_integer((json_int_t)v[i]));
    return a;
}

static int common_save(pg_trainer *tr, unsigned char **bytes, size_t *len, pg_error *err)
{
    mtr *g = (mtr *)tr;
    unsigned char *blob = NULL;
    size_t blen = 0;
    int rc = g->model ? pg_pgm_save(g->model, &blob, &blen, err) : PG_OK;
    if (rc) return rc;
    json_t *h =
        json_pack("{s:s,s:i,s:I,s:b,s:f,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:I}", "method",
                  g->aim ? "aim" : "mst", "format", CKPT_FORMAT, "step", (json_int_t)g->step,
                  "done", g->done, "rho", g->rho, "rho_used", g->rho_used, "sigma", g->sigma,
                  "eps_sel", g->eps_sel, "loss", g->loss, "delta", g->delta, "nattr",
                  (json_int_t)g->nattr, "model_len", (json_int_t)blen, "ylen", (json_int_t)g->ylen);
    if (h) {
        json_object_set_new(h, "table", g->t ? pg_table_to_json(g->t) : json_null());
        json_t *dom = json_pack("{s:I,s:f,s:f}", "d", (json_int_t)g->D.d, "lo", (double)g->D.lo,
                                "hi", (double)g->D.hi);
        json_t *edges = json_array();
        for (size_t a = 0; a < g->nattr; a++) {
            const pg_disc_attr *x = &g->D.a[a];
            json_t *e = json_array();
            for (size_t k = 0; x->edges && k <= x->nvalue; k++)
                json_array_append_new(e, json_real(x->edges[k]));
            json_array_append_new(edges,
                                  json_pack("{s:i,s:I,s:I,s:b,s:o}", "kind", x->kind, "col",
                                            (json_int_t)x->col, "nvalue", (json_int_t)x->nvalue,
                                            "nullable", x->nullable, "edges", e));
        }
        json_object_set_new(dom, "attrs", edges);
        json_object_set_new(dom, "label",
                            g->D.label == PG_TABLE_NONE ? json_null()
                                                        : json_integer((json_int_t)g->D.label));
        json_object_set_new(h, "domain", dom);
        json_object_set_new(h, "sizes", size_array(g->sizes, g->nattr));
        /* format 2: per attribute null (identity) or the groups' levels and
         * their cumulative decoding weights, group by group */
        json_t *cms = json_array();
        for (size_t a = 0; a < g->nattr; a++) {
            const cmap *c = &g->cm[a];
            if (!c->fwd) {
                json_array_append_new(cms, json_null());
                continue;
            }
            json_t *gr = json_array(), *cu = json_array();
            for (size_t q = 0; q < c->ngroup; q++) {
                json_array_append_new(gr, u32_array(c->mem + c->start[q], cmap_group_size(c, q)));
                json_array_append_new(cu, real_array(c->cum + c->start[q], cmap_group_size(c, q)));
            }
            json_array_append_new(
                cms, json_pack("{s:o,s:o,s:b}", "groups", gr, "cum", cu, "runs", c->runs));
        }
        json_object_set_new(h, "compress", cms);
        json_t *ms = json_array();
        for (size_t i = 0; i < g->nm; i++)
            json_array_append_new(ms, json_pack("{s:o,s:f,s:I,s:I}", "attrs",
                                                size_array(g->m[i].attrs, g->m[i].k), "sigma",
                                                g->m[i].sigma, "off", (json_int_t)g->m[i].off,
                                                "cells", (json_int_t)g->m[i].cells));
        json_object_set_new(h, "measures", ms);
        /* the snapshot's sampling support (absent in older checkpoints: off) */
        json_object_set_new(h, "support_sigmas", json_real(g->support));
        json_t *ed = json_array();
        for (size_t e = 0; e < g->nedges; e++)
            json_array_append_new(ed, size_array(g->edges[e], 2));
        json_object_set_new(h, "edges", ed);
    }
    char *text = h ? json_dumps(h, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(h);
    if (!text) {
        free(blob);
        return pg_error_set(err, PG_ENOMEM, "cannot encode the trainer state");
    }
    /* The model blob travels as a float32 tensor of its bytes (the
     * container only holds float32 tensors; pg_pgm_load checks the blob's
     * own length and checksum). */
    size_t nf = (blen + 3) / 4;
    float *mb = calloc(nf ? nf : 1, sizeof *mb);
    if (!mb) {
        free(text), free(blob);
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    if (blen) memcpy(mb, blob, blen);
    free(blob);
    pg_ckpt_tensor ts[2] = {{.name = "y", .ndim = 1, .dims = {g->ylen}, .data = g->y},
                            {.name = "model", .ndim = 1, .dims = {nf}, .data = mb}};
    float zero = 0;
    if (!g->y) ts[0].data = &zero;
    rc = pg_ckpt_encode(text, ts, 2, bytes, len, err);
    free(text);
    free(mb);
    return rc;
}

static bool same(double a, double b)
{
    return fabs(a - b) <= 1e-12 * fabs(b);
}

static int read_sizes(const json_t *a, size_t *out, size_t n, size_t maxv)
{
    if (!json_is_array(a) || json_array_size(a) != n) return -1;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(a, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            (uint64_t)json_integer_value(v) >= maxv)
            return -1;
        out[i] = (size_t)json_integer_value(v);
    }
    return 0;
}

/* Decodes the model blob of a checkpoint. */
static int load_model(const pg_ckpt *c, size_t blen, pg_pgm_model **out, pg_error *err)
{
    *out = NULL;
    const pg_ckpt_tensor *mt = pg_ckpt_find(c, "model");
    if (!mt || mt->ndim != 1 || mt->dims[0] != (blen + 3) / 4)
        return pg_error_set(err, PG_EFORMAT, "the checkpoint's model is missing or malformed");
    if (!blen) return PG_OK;
    return pg_pgm_load((const unsigned char *)mt->data, blen, out, err);
}

/* Reads one group's cumulative weights (n values, non-decreasing in [0, 1],
 * the last 1) into cum. */
static int read_cum(const json_t *a, size_t n, double *cum)
{
    if (!json_is_array(a) || json_array_size(a) != n) return -1;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(a, i);
        double c = json_number_value(v);
        if (!json_is_number(v) || !(c >= (i ? cum[i - 1] : 0.0) && c <= 1.0) ||
            (i + 1 == n && c != 1.0))
            return -1;
        cum[i] = c;
    }
    return 0;
}

/* The compression maps of a checkpoint header (identity when null): format
 * 2's groups, or format 1's rare levels ({sup, rare, cum}). */
static int read_cmaps(const json_t *h, const pg_disc *D, cmap *cm, size_t *sizes, pg_error *err)
{
    const json_t *cms = json_object_get(h, "compress");
    if (!json_is_array(cms) || json_array_size(cms) != D->nattr)
        return pg_error_set(err, PG_EFORMAT, "the checkpoint's compression maps are malformed");
    for (size_t a = 0; a < D->nattr; a++) {
        const json_t *o = json_array_get(cms, a);
        size_t L = D->a[a].levels;
        sizes[a] = L;
        if (json_is_null(o)) continue;
        const json_t *groups = json_object_get(o, "groups");
        if (groups) {
            size_t ng = json_array_size(groups), seen = 0;
            uint32_t *gid = malloc(L * sizeof *gid);
            size_t *v = malloc(L * sizeof *v);
            int bad = !gid || !v || !json_is_array(groups) || ng == 0 || ng >= L;
            for (size_t l = 0; !bad && l < L; l++) gid[l] = UINT32_MAX;
            for (size_t q = 0; !bad && q < ng; q++) {
                const json_t *gq = json_array_get(groups, q);
                size_t n = json_array_size(gq);
                bad = n == 0 || seen + n > L || read_sizes(gq, v, n, L);
                for (size_t i = 0; !bad && i < n; i++) {
                    bad = gid[v[i]] != UINT32_MAX || (i && v[i] <= v[i - 1]);
                    gid[v[i]] = (uint32_t)q;
                }
                seen += n;
            }
            bad = bad || seen != L;
            int rc = bad ? PG_EFORMAT : cmap_groups(&cm[a], L, gid, ng, err);
            free(gid);
            free(v);
            const json_t *cu = json_object_get(o, "cum");
            bad = rc || json_array_size(cu) != ng;
            for (size_t q = 0; !bad && q < ng; q++)
                bad = read_cum(json_array_get(cu, q), cmap_group_size(&cm[a], q),
                               cm[a].cum + cm[a].start[q]);
            if (bad)
                return pg_error_set(err, PG_EFORMAT,
                                    "the checkpoint's compression maps are malformed");
            cm[a].runs = json_is_true(json_object_get(o, "runs"));
            sizes[a] = ng;
            continue;
        }
        const json_t *sup = json_object_get(o, "sup"), *rare = json_object_get(o, "rare");
        size_t ns = json_array_size(sup), nr = json_array_size(rare);
        if (!json_is_array(sup) || !json_is_array(rare) || nr == 0 || ns + nr != L)
            return pg_error_set(err, PG_EFORMAT, "the checkpoint's compression maps are malformed");
        /* A single rare level is no compression (cmap_set); such a map in a
         * checkpoint came with a model on the original codes. */
        if (nr == 1) continue;
        unsigned char *s = calloc(L, 1);
        size_t *v = malloc(L * sizeof *v);
        int bad = !s || !v || read_sizes(sup, v, ns, L);
        for (size_t i = 0; !bad && i < ns; i++) s[v[i]] = 1;
        size_t newL = 0;
        int rc = bad ? PG_EFORMAT : cmap_set(&cm[a], L, s, &newL, err);
        free(s);
        free(v);
        /* the rare levels are the last group, in the levels' order as
         * format 1 listed them */
        if (rc || newL != ns + 1 ||
            read_cum(json_object_get(o, "cum"), nr, cm[a].cum + cm[a].start[ns]))
            return pg_error_set(err, PG_EFORMAT, "the checkpoint's compression maps are malformed");
        sizes[a] = newL;
    }
    return PG_OK;
}

static int common_restore(const json_t *r, const pg_job_data *in, int threads, bool is_aim,
                          const unsigned char *bytes, size_t len, pg_trainer **out, pg_error *err)
{
    *out = NULL;
    mtr *g;
    int rc = common_new(r, in, is_aim, threads, &g, err);
    if (rc) return rc;
    pg_ckpt c = {0};
    json_t *h = NULL;
    rc = pg_ckpt_decode(bytes, len, &c, err);
    if (!rc && !(h = json_loads(c.header, 0, NULL)))
        rc = pg_error_set(err, PG_EFORMAT, "the checkpoint header is not JSON");
    const char *meth = h ? json_string_value(json_object_get(h, "method")) : NULL;
    if (!rc && (!meth || strcmp(meth, is_aim ? "aim" : "mst") ||
                json_integer_value(json_object_get(h, "format")) < 1 ||
                json_integer_value(json_object_get(h, "format")) > CKPT_FORMAT ||
                (size_t)json_integer_value(json_object_get(h, "nattr")) != g->nattr))
        rc = pg_error_set(err, PG_EFORMAT, "not a %s checkpoint of this dataset",
                          is_aim ? "aim" : "mst");
    if (!rc) {
        /* The checkpoint's codes mean nothing under another schema. */
        json_t *mine = g->t ? pg_table_to_json(g->t) : json_null();
        const json_t *theirs = json_object_get(h, "table");
        if (!mine || !theirs || !json_equal(mine, (json_t *)theirs))
            rc = pg_error_set(err, PG_EFORMAT, "the checkpoint was made for another table schema");
        json_decref(mine);
    }
    if (!rc && (!same(json_number_value(json_object_get(h, "rho")), g->rho) ||
                !same(json_number_value(json_object_get(h, "delta")), g->delta)))
        rc = pg_error_set(err, PG_EPRIVACY,
                          "the checkpoint was accounted under a different rho or delta");
    if (!rc) {
        g->step = (long)json_integer_value(json_object_get(h, "step"));
        g->done = json_is_true(json_object_get(h, "done"));
        g->rho_used = json_number_value(json_object_get(h, "rho_used"));
        g->sigma = json_number_value(json_object_get(h, "sigma"));
        g->eps_sel = json_number_value(json_object_get(h, "eps_sel"));
        g->loss = json_number_value(json_object_get(h, "loss"));
        if (g->step < 0 || !(g->rho_used >= 0 && g->rho_used <= g->rho * (1 + 1e-12)))
            rc = pg_error_set(err, PG_EFORMAT, "the checkpoint's round state is malformed");
    }
    if (!rc) rc = read_cmaps(h, &g->D, g->cm, g->sizes, err);
    const pg_ckpt_tensor *yt = rc ? NULL : pg_ckpt_find(&c, "y");
    size_t ylen = h ? (size_t)json_integer_value(json_object_get(h, "ylen")) : 0;
    if (!rc && (!yt || yt->ndim != 1 || yt->dims[0] != ylen))
        rc = pg_error_set(err, PG_EFORMAT, "the checkpoint's measurements are malformed");
    const json_t *ms = h ? json_object_get(h, "measures") : NULL;
    for (size_t i = 0; !rc && i < json_array_size(ms); i++) {
        const json_t *o = json_array_get(ms, i);
        const json_t *at = json_object_get(o, "attrs");
        size_t k = json_array_size(at), attrs[PG_PGM_MAX_CLIQUE];
        size_t off = (size_t)json_integer_value(json_object_get(o, "off"));
        size_t cells = (size_t)json_integer_value(json_object_get(o, "cells"));
        double sigma = json_number_value(json_object_get(o, "sigma"));
        if (k == 0 || k > PG_PGM_MAX_CLIQUE || read_sizes(at, attrs, k, g->nattr) ||
            off != g->ylen || cells != set_cells(g->sizes, attrs, k) || off + cells > ylen ||
            !(sigma > 0))
            rc = pg_error_set(err, PG_EFORMAT, "the checkpoint's measurements are malformed");
        else
            rc = add_measure(g, attrs, k, sigma, yt->data + off, cells, err);
    }
    const json_t *ed = h ? json_object_get(h, "edges") : NULL;
    if (!rc && json_array_size(ed)) {
        g->edges = malloc(json_array_size(ed) * sizeof *g->edges);
        if (!g->edges) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        for (size_t e = 0; !rc && e < json_array_size(ed); e++) {
            if (read_sizes(json_array_get(ed, e), g->edges[e], 2, g->nattr))
                rc = pg_error_set(err, PG_EFORMAT, "the checkpoint's edges are malformed");
            g->nedges++;
        }
    }
    if (!rc)
        rc = load_model(&c, (size_t)json_integer_value(json_object_get(h, "model_len")), &g->model,
                        err);
    /* AIM's workload lives on the domain step 1 compressed (built there). */
    if (!rc && is_aim && g->step >= 1) rc = aim_workload(g, (size_t)g->max_cells, err);
    json_decref(h);
    pg_ckpt_free(&c);
    if (rc) {
        mtr_destroy(&g->base);
        return rc;
    }
    *out = &g->base;
    return PG_OK;
}

static int mst_restore(const json_t *r, const pg_job_data *in, int threads,
                       const unsigned char *bytes, size_t len, pg_trainer **out, pg_error *err)
{
    return common_restore(r, in, threads, false, bytes, len, out, err);
}
static int aim_restore(const json_t *r, const pg_job_data *in, int threads,
                       const unsigned char *bytes, size_t len, pg_trainer **out, pg_error *err)
{
    return common_restore(r, in, threads, true, bytes, len, out, err);
}

/* A snapshot from checkpoint bytes alone: the domain (schema and edges), the
 * compression maps and the model come from the header and tensors. */
static int common_load_snapshot(const char *name, const unsigned char *bytes, size_t len,
                                pg_snapshot **out, pg_error *err)
{
    *out = NULL;
    pg_ckpt c = {0};
    json_t *h = NULL;
    pg_table *t = NULL;
    pg_disc D = {0};
    cmap *cm = NULL;
    size_t *sizes = NULL;
    pg_pgm_model *model = NULL;
    int rc = pg_ckpt_decode(bytes, len, &c, err);
    if (!rc && !(h = json_loads(c.header, 0, NULL)))
        rc = pg_error_set(err, PG_EFORMAT, "the checkpoint header is not JSON");
    const char *meth = h ? json_string_value(json_object_get(h, "method")) : NULL;
    if (!rc && (!meth || strcmp(meth, name)))
        rc = pg_error_set(err, PG_EFORMAT, "not a %s checkpoint", name);
    const json_t *dom = h ? json_object_get(h, "domain") : NULL;
    const json_t *tj = h ? json_object_get(h, "table") : NULL;
    if (!rc && json_is_object(tj)) rc = pg_table_from_json(tj, &t, err);
    const json_t *attrs = json_object_get(dom, "attrs");
    size_t A = json_array_size(attrs);
    if (!rc && (!json_is_object(dom) || A == 0 || A > PG_PGM_MAX_ATTRS))
        rc = pg_error_set(err, PG_EFORMAT, "the checkpoint's domain is malformed");
    if (!rc) {
        D.nattr = A;
        D.d = (size_t)json_integer_value(json_object_get(dom, "d"));
        D.lo = (float)json_number_value(json_object_get(dom, "lo"));
        D.hi = (float)json_number_value(json_object_get(dom, "hi"));
        D.typed = t != NULL;
        const json_t *lb = json_object_get(dom, "label");
        D.label = json_is_integer(lb) ? (size_t)json_integer_value(lb) : PG_TABLE_NONE;
        D.a = calloc(A, sizeof *D.a);
        if (!D.a) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
        if (t && D.d != t->width) rc = pg_error_set(err, PG_EFORMAT, "domain width mismatch");
    }
    for (size_t a = 0; !rc && a < A; a++) {
        const json_t *o = json_array_get(attrs, a);
        pg_disc_attr *x = &D.a[a];
        x->kind = (int)json_integer_value(json_object_get(o, "kind"));
        x->col = (size_t)json_integer_value(json_object_get(o, "col"));
        x->nvalue = (size_t)json_integer_value(json_object_get(o, "nvalue"));
        x->nullable = json_is_true(json_object_get(o, "nullable"));
        x->levels = x->nvalue + (size_t)x->nullable;
        const json_t *e = json_object_get(o, "edges");
        bool numeric = x->kind == PG_DISC_INT || x->kind == PG_DISC_REAL;
        if (x->kind < PG_DISC_CAT || x->kind > PG_DISC_LABEL || x->nvalue == 0 ||
            x->nvalue > 65535 || (numeric && json_array_size(e) != x->nvalue + 1) ||
            (t && (x->col >= t->ncols)) || (!t && x->kind != PG_DISC_LABEL && x->col >= D.d)) {
            rc = pg_error_set(err, PG_EFORMAT, "the checkpoint's domain is malformed");
            break;
        }
        if (numeric) {
            x->edges = malloc((x->nvalue + 1) * sizeof *x->edges);
            if (!x->edges) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
            for (size_t k = 0; !rc && k <= x->nvalue; k++) {
                x->edges[k] = json_number_value(json_array_get(e, k));
                if (!isfinite(x->edges[k]) || (k && !(x->edges[k] > x->edges[k - 1])))
                    rc = pg_error_set(err, PG_EFORMAT, "the checkpoint's bins are malformed");
            }
        }
    }
    if (!rc) {
        cm = calloc(A, sizeof *cm);
        sizes = calloc(A, sizeof *sizes);
        if (!cm || !sizes) rc = pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    if (!rc) rc = read_cmaps(h, &D, cm, sizes, err);
    if (!rc)
        rc = load_model(&c, (size_t)json_integer_value(json_object_get(h, "model_len")), &model,
                        err);
    if (!rc && !model) rc = pg_error_set(err, PG_ESTATE, "the checkpoint holds no model yet");
    if (!rc && pg_pgm_model_nattr(model) != A)
        rc = pg_error_set(err, PG_EFORMAT, "the checkpoint's model does not match its domain");
    for (size_t a = 0; !rc && a < A; a++)
        if (pg_pgm_model_sizes(model)[a] != sizes[a])
            rc = pg_error_set(err, PG_EFORMAT, "the checkpoint's model does not match its domain");
    long step = h ? (long)json_integer_value(json_object_get(h, "step")) : 0;
    /* The sampling support's thresholds from the header's measurements (their
     * sets, sigmas and cells; a malformed entry turns the support off). */
    double k = h ? json_number_value(json_object_get(h, "support_sigmas")) : 0;
    const json_t *ms = h ? json_object_get(h, "measures") : NULL;
    size_t nms = json_array_size(ms);
    meas *mv = !rc && k > 0 && nms ? calloc(nms, sizeof *mv) : NULL;
    double *tau = mv ? calloc(A, sizeof *tau) : NULL;
    bool on = false;
    if (mv && tau) {
        on = true;
        for (size_t i = 0; on && i < nms; i++) {
            const json_t *o = json_array_get(ms, i);
            const json_t *at = json_object_get(o, "attrs");
            mv[i].k = json_array_size(at);
            mv[i].sigma = json_number_value(json_object_get(o, "sigma"));
            on = mv[i].k >= 1 && mv[i].k <= PG_PGM_MAX_CLIQUE &&
                 !read_sizes(at, mv[i].attrs, mv[i].k, A) && mv[i].sigma > 0;
            if (on) mv[i].cells = set_cells(sizes, mv[i].attrs, mv[i].k);
        }
        if (on) on = support_tau(mv, nms, sizes, A, k, tau);
    }
    if (!rc) {
        rc = msnap_make(model, t, &D, cm, on ? tau : NULL, step, out, err);
        model = NULL;
    }
    free(mv);
    free(tau);
    pg_pgm_model_free(model);
    for (size_t a = 0; cm && a < A; a++) cmap_free(&cm[a]);
    free(cm);
    free(sizes);
    pg_disc_free(&D);
    pg_table_free(t);
    json_decref(h);
    pg_ckpt_free(&c);
    return rc;
}

static int mst_load_snapshot(const unsigned char *b, size_t len, pg_snapshot **out, pg_error *err)
{
    return common_load_snapshot("mst", b, len, out, err);
}
static int aim_load_snapshot(const unsigned char *b, size_t len, pg_snapshot **out, pg_error *err)
{
    return common_load_snapshot("aim", b, len, out, err);
}

/* Bytes the trainer holds besides the rows (which it reads in passes and
 * never copies): the model and its fit (about six live copies of max_cells
 * doubles at the bound), AIM's candidate answers or a pass's pair tables. */
static size_t common_memory(const json_t *r, const pg_job_data *in)
{
    const pg_data_desc *desc = in->desc;
    size_t A = desc->table ? desc->table->ncols : desc->d + (desc->num_classes > 0);
    double cells = pg_spec_num(r, "model.max_cells", 8e6);
    double b = 6.0 * 8.0 * cells + 8.0 * (double)PASS_CELLS;
    int bins = spec_bins(r, desc);
    double answers = (double)A * (double)A * (double)A * (double)bins * (double)bins / 2.0;
    b += 8.0 * fmin(answers, 4.0 * cells); /* aim's candidate answers, bounded */
    return b > (double)SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)b;
}

const pg_method pg_method_mst = {
    .name = "mst",
    .summary = "MST (McKenna, Miklau, Sheldon 2021): noisy one-way marginals, a maximum spanning "
               "tree of pairs chosen by the exponential mechanism, those pairs measured, a "
               "graphical model fitted to them (zCDP, Gaussian noise). Central tables: typed, "
               "or untyped up to 64 columns.",
    .accepts = PG_PRIVACY_CENTRAL,
    .streams = true,
    .catalogue = mst_catalogue,
    .validate = mst_validate,
    .plan = mst_plan,
    .create = mst_create,
    .step = common_step,
    .snapshot = common_snapshot,
    .save = common_save,
    .restore = mst_restore,
    .load_snapshot = mst_load_snapshot,
    .destroy = mtr_destroy,
    .memory_estimate = common_memory,
};

const pg_method pg_method_aim = {
    .name = "aim",
    .summary = "AIM (McKenna, Mullins, Sheldon, Miklau 2022): rounds that pick the worst-fitted "
               "marginal of a workload (pairs; label triples) by the exponential mechanism "
               "under a model-size bound, measure it, refit and anneal the noise (zCDP). Central "
               "tables: typed, or untyped up to 64 columns.",
    .accepts = PG_PRIVACY_CENTRAL,
    .streams = true,
    .catalogue = aim_catalogue,
    .validate = aim_validate,
    .plan = aim_plan,
    .create = aim_create,
    .step = common_step,
    .snapshot = common_snapshot,
    .save = common_save,
    .restore = aim_restore,
    .load_snapshot = aim_load_snapshot,
    .destroy = mtr_destroy,
    .memory_estimate = common_memory,
};
