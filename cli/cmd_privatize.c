/* cli/cmd_privatize.c - `privgen privatize`: local DP on the data owner's side.
 *
 * Sensitivity (local model: the neighbouring inputs are any two rows). Every
 * row is clipped into the ball of radius R of the mechanism's norm (l1 for
 * Laplace, l2 for Gaussian); two clipped rows are then at most 2R apart, so
 * the sensitivity is 2R:
 *   --clip N:R only          sensitivity = 2R
 *   --sensitivity S only     rows are clipped to R = S/2 (never unclipped:
 *                            nothing else guarantees the declared S)
 *   both                     S >= 2R is required (S < 2R is refused)
 * The clip norm must be the mechanism's norm. The noise comes from the secure
 * generator; the Laplace noise is the grid-exact discrete Laplace (see
 * engine/privacy/privacy.h), whose scale b is marginally above S/epsilon; the
 * Gaussian std is the analytic-Gaussian calibration (Balle & Wang 2018). The
 * declaration printed is what the service checks at dataset creation; it is
 * also written next to the output as OUT.decl.json, which `datasets append`
 * sends with the rows (numpy refuses extra keys in an NPY header, so the
 * declaration cannot live inside the file). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cmd_table.h"
#include "engine/core/alloc.h"
#include "engine/data/file.h"
#include "engine/data/npy.h"
#include "engine/data/rows.h"
#include "engine/privacy/privacy.h"

#define MAX_INPUT_BYTES ((size_t)1 << 32)

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static int parse_clip(const char *v, int *l1, double *R)
{
    if (!(strncmp(v, "l1:", 3) == 0 || strncmp(v, "l2:", 3) == 0))
        return pg_cli_error(PG_CLI_USAGE, "--clip must look like l1:R or l2:R, got '%s'", v);
    *l1 = v[1] == '1';
    char *end;
    double r = strtod(v + 3, &end);
    if (end == v + 3 || *end || !isfinite(r) || !(r > 0.0))
        return pg_cli_error(PG_CLI_USAGE, "clip radius must be a finite number > 0, got '%s'",
                            v + 3);
    *R = r;
    return PG_CLI_OK;
}

/* Loads the rows through the same decoder the service uses for uploads; every
 * problem with the input is a usage error. A CSV `label` column is refused:
 * this command privatizes features only, and shipping raw labels next to
 * privatized features would leak them. */
static int load_rows(const char *path, float **data, size_t *rows, size_t *cols)
{
    int format = ends_with(path, ".csv") ? PG_ROWS_CSV : PG_ROWS_NPY;
    if (format == PG_ROWS_NPY && !ends_with(path, ".npy"))
        return pg_cli_error(PG_CLI_USAGE, "--in must be a .npy or .csv file, got '%s'", path);
    unsigned char *buf = NULL;
    size_t len = 0;
    pg_error e = {0};
    if (pg_file_read(path, MAX_INPUT_BYTES, &buf, &len, &e))
        return pg_cli_error(PG_CLI_USAGE, "cannot read %s: %s", path, e.msg);
    pg_rows_limits lim = {0};
    pg_rows r;
    int rc = pg_rows_decode(buf, len, format, &lim, &r, &e);
    free(buf);
    if (rc) return pg_cli_error(PG_CLI_USAGE, "%s: %s", path, e.msg);
    if (r.labels) {
        pg_rows_free(&r);
        return pg_cli_error(PG_CLI_USAGE,
                            "%s has a 'label' column; this command privatizes features only, so "
                            "drop the label column first",
                            path);
    }
    if (r.n == 0 || r.d == 0 || r.ndim != 1) {
        pg_rows_free(&r);
        return pg_cli_error(PG_CLI_USAGE,
                            "%s: expected a non-empty table of rows x columns (a 2-D array)", path);
    }
    *data = r.x, *rows = r.n, *cols = r.d;
    r.x = NULL;
    pg_rows_free(&r);
    return PG_CLI_OK;
}

static const char PRIVATIZE_HELP[] =
    "usage: privgen privatize --mechanism laplace|gaussian --epsilon E [--delta D]\n"
    "                         (--clip l1:R|l2:R and/or --sensitivity S)\n"
    "                         --in ROWS.npy|ROWS.csv --out OUT.npy|- [--cols N]\n"
    "  Clips every row into the mechanism's norm ball (l1 for laplace, l2 for\n"
    "  gaussian) and adds noise from the secure generator: local differential\n"
    "  privacy on the data owner's side. Prints the declaration (one JSON line)\n"
    "  that `privgen datasets create --declaration FILE` sends to the server.\n"
    "  --epsilon E       per-row epsilon (> 0)\n"
    "  --delta D         gaussian only, in (0, 1)\n"
    "  --clip N:R        clip radius R in norm N; the sensitivity is then 2R\n"
    "  --sensitivity S   declared sensitivity (>= 2R; alone, rows are clipped to S/2)\n"
    "  --in FILE         a 2-D .npy or a .csv (header optional, no label column)\n"
    "  --out FILE        the noisy rows as .npy, and the declaration in\n"
    "                    FILE.decl.json (which `privgen datasets append` sends with\n"
    "                    the rows); - streams NPY to stdout (the declaration then\n"
    "                    goes to stderr)\n"
    "  --cols N          refuse input that does not have N columns\n"
    "Typed tables (docs/tables.md), column by column:\n"
    "  privgen privatize --schema S.json --in DATA.csv --out NOISY.csv --epsilon E\n"
    "                    [--mechanism laplace|gaussian] [--delta D] [--split label|even]\n"
    "  --split label     (default with a label) the label gets the share of E that\n"
    "                    maximises the class-difference signal of the features, which\n"
    "                    split the rest evenly; even: E / columns each\n";

int pg_cli_privatize(int argc, char **argv)
{
    if (pg_cli_help(argc, argv, PRIVATIZE_HELP)) return PG_CLI_OK;
    static const char *const allowed[] = {"mechanism", "epsilon", "delta", "sensitivity", "clip",
                                          "in",        "out",     "cols",  NULL};
    static const char *const mechs[] = {"laplace", "gaussian", NULL};
    pg_cli_opts o;
    const char *mech;
    double eps, delta = NAN, sens = NAN, R = NAN;
    uint64_t want_cols = 0;
    /* Typed tables: column by column, in cli/cmd_privatize_table.c. */
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--schema")) return pg_cli_privatize_table(argc, argv);
    int rc = pg_cli_parse(argc, argv, allowed, &o);
    if (!rc) rc = pg_cli_choice(&o, "mechanism", mechs, NULL, &mech);
    if (!rc) rc = pg_cli_double(&o, "epsilon", 1, &eps);
    if (!rc) rc = pg_cli_double(&o, "sensitivity", 0, &sens);
    if (!rc) rc = pg_cli_u64(&o, "cols", 0, &want_cols);
    if (rc) return rc;
    int laplace = strcmp(mech, "laplace") == 0;
    const char *in = pg_cli_get(&o, "in"), *out = pg_cli_get(&o, "out");
    if (!in || !out) return pg_cli_error(PG_CLI_USAGE, "--in and --out are required");
    /* --out - streams the NPY to stdout (to pipe into `privgen datasets
     * append ID - --format npy`); the declaration then goes to stderr. */
    int to_stdout = strcmp(out, "-") == 0;
    if (!to_stdout && !ends_with(out, ".npy"))
        return pg_cli_error(PG_CLI_USAGE, "--out must name a .npy file or be -, got '%s'", out);
    if (to_stdout && isatty(1))
        return pg_cli_error(PG_CLI_USAGE, "--out - writes binary NPY: redirect or pipe stdout");
    if (!(eps > 0.0)) return pg_cli_error(PG_CLI_USAGE, "--epsilon must be > 0, got %g", eps);
    if (laplace) {
        if (pg_cli_get(&o, "delta"))
            return pg_cli_error(PG_CLI_USAGE, "the Laplace mechanism is pure DP: drop --delta");
    } else {
        if ((rc = pg_cli_double(&o, "delta", 1, &delta))) return rc;
        if (!(delta > 0.0 && delta < 1.0))
            return pg_cli_error(PG_CLI_USAGE, "--delta must lie in (0, 1), got %g", delta);
    }
    if (pg_cli_get(&o, "sensitivity") && !(sens > 0.0))
        return pg_cli_error(PG_CLI_USAGE, "--sensitivity must be > 0, got %g", sens);
    int l1 = laplace;
    const char *clip = pg_cli_get(&o, "clip");
    if (clip) {
        if ((rc = parse_clip(clip, &l1, &R))) return rc;
        if (l1 != laplace)
            return pg_cli_error(PG_CLI_USAGE,
                                "the %s mechanism needs --clip %s:R (its "
                                "sensitivity is in the %s norm)",
                                mech, laplace ? "l1" : "l2", laplace ? "l1" : "l2");
        if (isnan(sens)) {
            sens = 2.0 * R;
        } else if (sens < 2.0 * R) {
            return pg_cli_error(PG_CLI_USAGE,
                                "--sensitivity %g is below 2R = %g, the largest distance between "
                                "two rows clipped to radius %g; use --sensitivity %g or omit it",
                                sens, 2.0 * R, R, 2.0 * R);
        }
    } else if (!isnan(sens)) {
        R = sens / 2.0;
    } else {
        return pg_cli_error(PG_CLI_USAGE, "give --clip N:R and/or --sensitivity S");
    }

    float *x = NULL;
    size_t rows = 0, cols = 0;
    if ((rc = load_rows(in, &x, &rows, &cols))) return rc;
    int code = PG_CLI_OK;
    double *scratch = NULL;
    unsigned char *npy = NULL;
    if (want_cols && want_cols != cols) {
        code = pg_cli_error(PG_CLI_USAGE, "%s has %zu columns, expected %llu", in, cols,
                            (unsigned long long)want_cols);
        goto done;
    }
    for (size_t i = 0; i < rows * cols; i++)
        if (!isfinite(x[i])) {
            code = pg_cli_error(PG_CLI_USAGE, "%s: row %zu column %zu is not a finite number", in,
                                i / cols + 1, i % cols + 1);
            goto done;
        }
    pg_error e = {0};
    double scale = 0.0;
    int erc = laplace ? pg_privacy_laplace_scale(sens, eps, cols, &scale, NULL, &e)
                      : pg_privacy_gaussian_analytic(eps, delta, sens, &scale, &e);
    if (!erc && laplace) {
        scratch = pg_alloc(cols * sizeof *scratch);
        if (!scratch) erc = pg_error_set(&e, PG_ENOMEM, "out of memory");
    }
    if (!erc)
        erc = laplace ? pg_privacy_clip_l1(x, rows, cols, R, scratch, &e)
                      : pg_privacy_clip_l2(x, rows, cols, R, &e);
    pg_rng rng;
    if (!erc) erc = pg_rng_secure(&rng, &e);
    if (!erc)
        erc = laplace ? pg_privacy_laplace_mech(&rng, x, rows, cols, sens, eps, &scale, &e)
                      : pg_privacy_gaussian_noise(&rng, x, rows * cols, scale, &e);
    if (erc) {
        code = pg_cli_error(erc == PG_EINVAL || erc == PG_ERANGE ? PG_CLI_USAGE : PG_CLI_FAIL, "%s",
                            e.msg);
        goto done;
    }
    size_t shape[2] = {rows, cols}, size = pg_npy_size(shape, 2);
    npy = malloc(size);
    int wrc = !npy || pg_npy_write(x, shape, 2, npy, size, &e);
    if (!wrc && to_stdout && (fwrite(npy, 1, size, stdout) != size || fflush(stdout)))
        wrc = pg_error_set(&e, PG_EIO, "short write");
    else if (!wrc && !to_stdout)
        wrc = pg_file_write_atomic(out, npy, size, &e);
    if (wrc) {
        code = pg_cli_error(PG_CLI_FAIL, "cannot write %s: %s", out, npy ? e.msg : "out of memory");
        goto done;
    }
    json_t *j = json_object(), *c = json_object();
    json_object_set_new(j, "mechanism", json_string(mech));
    json_object_set_new(j, "epsilon", json_real(eps));
    json_object_set_new(j, "delta", laplace ? json_null() : json_real(delta));
    json_object_set_new(j, "sensitivity", json_real(sens));
    json_object_set_new(j, "noise_scale", json_real(scale));
    json_object_set_new(j, "rows", json_integer((json_int_t)rows));
    json_object_set_new(j, "cols", json_integer((json_int_t)cols));
    json_object_set_new(c, "norm", json_string(laplace ? "l1" : "l2"));
    json_object_set_new(c, "radius", json_real(R));
    json_object_set_new(j, "clip", c);
    json_object_set_new(j, "calibration",
                        json_string(laplace ? "discrete_laplace_grid" : "analytic_gaussian"));
    json_object_set_new(j, "neighbouring", json_string("any_two_rows"));
    if (to_stdout) {
        char *txt = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        if (txt) fprintf(stderr, "%s\n", txt);
        code = txt ? PG_CLI_OK : PG_CLI_FAIL;
        free(txt);
    } else {
        /* The sidecar ties the rows to their declaration on upload. */
        char *txt = json_dumps(j, JSON_INDENT(2));
        size_t plen = strlen(out) + sizeof ".decl.json";
        char *side = malloc(plen);
        int src = !txt || !side;
        if (!src) {
            snprintf(side, plen, "%s.decl.json", out);
            src = pg_file_write_atomic(side, txt, strlen(txt), &e);
        }
        if (src) {
            json_decref(j);
            code = pg_cli_error(PG_CLI_FAIL, "cannot write %s.decl.json: %s", out,
                                txt && side ? e.msg : "out of memory");
        } else {
            code = pg_cli_emit(j);
        }
        free(txt);
        free(side);
    }
done:
    free(npy);
    pg_free(scratch);
    pg_free(x);
    return code;
}
