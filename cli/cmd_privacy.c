/* cli/cmd_privacy.c - `privgen privacy <sub>`: offline privacy accounting. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/privacy/privacy.h"

/* Domain errors from the engine are the user's arguments: usage exit code. */
static int engine_fail(int rc, const pg_error *e)
{
    int code = (rc == PG_EINVAL || rc == PG_ERANGE) ? PG_CLI_USAGE : PG_CLI_FAIL;
    return pg_cli_error(code, "%s", e->msg[0] ? e->msg : pg_status_str(rc));
}

static const char *const conversions[] = {"improved", "classic", NULL};

static int conv_code(const char *c)
{
    return strcmp(c, "classic") == 0 ? PG_RDP_CONV_CLASSIC : PG_RDP_CONV_IMPROVED;
}

static json_t *report_json(double q, double sigma, uint64_t steps, double delta, double eps,
                           const char *conv)
{
    pg_privacy_report r;
    char acc[PG_PRIVACY_NAME_MAX];
    snprintf(acc, sizeof acc, "rdp_%s", conv);
    if (pg_privacy_report_init(&r, q < 1.0 ? "sampled_gaussian" : "gaussian", "add_remove_one", acc,
                               NULL))
        return NULL;
    r.epsilon = eps, r.delta = delta, r.noise_multiplier = sigma, r.sampling_rate = q;
    r.steps = steps;
    return pg_privacy_report_json(&r);
}

/* The arguments `epsilon` and `sigma` share: `first` (the one required
 * number they differ in) into *x, then --sampling-rate, --steps, --delta
 * and --conversion (default improved). Returns 0 or the parse's exit code
 * (its message printed). */
static int rdp_args(int argc, char **argv, const char *first, double *x, double *q, uint64_t *steps,
                    double *delta, const char **conv)
{
    const char *const allowed[] = {first, "sampling-rate", "steps", "delta", "conversion", NULL};
    pg_cli_opts o;
    int rc = pg_cli_parse(argc, argv, allowed, &o);
    if (!rc) rc = pg_cli_double(&o, first, 1, x);
    if (!rc) rc = pg_cli_double(&o, "sampling-rate", 1, q);
    if (!rc) rc = pg_cli_u64(&o, "steps", 1, steps);
    if (!rc) rc = pg_cli_double(&o, "delta", 1, delta);
    if (!rc) rc = pg_cli_choice(&o, "conversion", conversions, "improved", conv);
    return rc;
}

static int cmd_epsilon(int argc, char **argv)
{
    double sigma, q, delta, eps, order;
    uint64_t steps;
    const char *conv;
    int rc = rdp_args(argc, argv, "noise-multiplier", &sigma, &q, &steps, &delta, &conv);
    if (rc) return rc;
    pg_error e = {0};
    int erc = pg_rdp_epsilon(q, sigma, steps, delta, conv_code(conv), &eps, &order, &e);
    if (erc) return engine_fail(erc, &e);
    json_t *j = report_json(q, sigma, steps, delta, eps, conv);
    if (j) json_object_set_new(j, "order", json_real(order));
    return pg_cli_emit(j);
}

static int cmd_sigma(int argc, char **argv)
{
    double target, q, delta, sigma, eps;
    uint64_t steps;
    const char *conv;
    int rc = rdp_args(argc, argv, "epsilon", &target, &q, &steps, &delta, &conv);
    if (rc) return rc;
    pg_error e = {0};
    int erc = pg_rdp_calibrate_sigma(target, delta, q, steps, conv_code(conv), &sigma, &e);
    if (!erc) erc = pg_rdp_epsilon(q, sigma, steps, delta, conv_code(conv), &eps, NULL, &e);
    if (erc) return engine_fail(erc, &e);
    /* Report the epsilon actually reached (<= the target), not the target. */
    return pg_cli_emit(report_json(q, sigma, steps, delta, eps, conv));
}

static int cmd_calibrate(int argc, char **argv)
{
    static const char *const allowed[] = {"mechanism",   "epsilon", "delta",
                                          "sensitivity", "method",  NULL};
    static const char *const mechs[] = {"laplace", "gaussian", NULL};
    static const char *const methods[] = {"analytic", "paper", "classic", NULL};
    pg_cli_opts o;
    double eps, delta = NAN, sens, scale;
    const char *mech, *method;
    int rc = pg_cli_parse(argc, argv, allowed, &o);
    if (!rc) rc = pg_cli_choice(&o, "mechanism", mechs, NULL, &mech);
    if (!rc) rc = pg_cli_double(&o, "epsilon", 1, &eps);
    if (!rc) rc = pg_cli_double(&o, "sensitivity", 1, &sens);
    if (rc) return rc;
    pg_error e = {0};
    int erc;
    json_t *j = json_object();
    if (strcmp(mech, "laplace") == 0) {
        if (pg_cli_get(&o, "delta") || pg_cli_get(&o, "method"))
            return json_decref(j),
                   pg_cli_error(PG_CLI_USAGE, "the Laplace mechanism is pure DP (b = sensitivity "
                                              "/ epsilon): --delta and --method do not apply");
        erc = pg_privacy_laplace_b(eps, sens, &scale, &e);
        method = "laplace";
    } else {
        rc = pg_cli_double(&o, "delta", 1, &delta);
        if (!rc) rc = pg_cli_choice(&o, "method", methods, "analytic", &method);
        if (rc) return json_decref(j), rc;
        if (strcmp(method, "analytic") == 0)
            erc = pg_privacy_gaussian_analytic(eps, delta, sens, &scale, &e);
        else if (strcmp(method, "paper") == 0)
            erc = pg_privacy_gaussian_paper(eps, delta, sens, &scale, &e);
        else
            erc = pg_privacy_gaussian_classic(eps, delta, sens, &scale, &e);
    }
    if (erc) return json_decref(j), engine_fail(erc, &e);
    json_object_set_new(j, "mechanism", json_string(mech));
    json_object_set_new(j, "method", json_string(method));
    json_object_set_new(j, "epsilon", json_real(eps));
    json_object_set_new(j, "delta", isnan(delta) ? json_null() : json_real(delta));
    json_object_set_new(j, "sensitivity", json_real(sens));
    json_object_set_new(j, "noise_scale", json_real(scale));
    return pg_cli_emit(j);
}

static int cmd_shuffle(int argc, char **argv)
{
    static const char *const allowed[] = {"epsilon0", "n", "delta", "bound", NULL};
    static const char *const bounds[] = {"numerical", "closed", NULL};
    pg_cli_opts o;
    double eps0, delta, eps;
    uint64_t n;
    const char *bound;
    int rc = pg_cli_parse(argc, argv, allowed, &o);
    if (!rc) rc = pg_cli_double(&o, "epsilon0", 1, &eps0);
    if (!rc) rc = pg_cli_u64(&o, "n", 1, &n);
    if (!rc) rc = pg_cli_double(&o, "delta", 1, &delta);
    if (!rc) rc = pg_cli_choice(&o, "bound", bounds, "numerical", &bound);
    if (rc) return rc;
    pg_error e = {0};
    int erc = strcmp(bound, "closed") == 0 ? pg_shuffle_closed_form(eps0, n, delta, &eps, &e)
                                           : pg_shuffle_numerical(eps0, n, delta, &eps, &e);
    if (erc) return engine_fail(erc, &e);
    json_t *j = json_object();
    json_object_set_new(j, "epsilon", json_real(eps));
    json_object_set_new(j, "delta", json_real(delta));
    json_object_set_new(j, "epsilon0", json_real(eps0));
    json_object_set_new(j, "n", json_integer((json_int_t)n));
    json_object_set_new(
        j, "bound",
        json_string(strcmp(bound, "closed") == 0 ? "fmt21_closed_form" : "fmt21_numerical"));
    return pg_cli_emit(j);
}

static int cmd_swd(int argc, char **argv)
{
    static const char *const allowed[] = {"dim", "projections", "delta", "bound", NULL};
    static const char *const bounds[] = {"chernoff", "bernstein", "clt", "orthogonal", NULL};
    pg_cli_opts o;
    uint64_t d, k;
    double delta = 0.5, w;
    const char *bound;
    int rc = pg_cli_parse(argc, argv, allowed, &o);
    if (!rc) rc = pg_cli_u64(&o, "dim", 1, &d);
    if (!rc) rc = pg_cli_u64(&o, "projections", 1, &k);
    if (!rc) rc = pg_cli_choice(&o, "bound", bounds, "chernoff", &bound);
    if (!rc) rc = pg_cli_double(&o, "delta", strcmp(bound, "orthogonal") != 0, &delta);
    if (rc) return rc;
    int kind = strcmp(bound, "bernstein") == 0    ? PG_SWD_BERNSTEIN
               : strcmp(bound, "clt") == 0        ? PG_SWD_CLT
               : strcmp(bound, "orthogonal") == 0 ? PG_SWD_ORTHOGONAL
                                                  : PG_SWD_CHERNOFF;
    int approx = 0;
    pg_error e = {0};
    int erc = pg_swd_sensitivity(kind, (size_t)d, (size_t)k, delta, &w, &approx, &e);
    if (erc) return engine_fail(erc, &e);
    json_t *j = json_object();
    json_object_set_new(j, "w", json_real(w));
    json_object_set_new(j, "approximate", json_boolean(approx));
    json_object_set_new(j, "bound", json_string(bound));
    json_object_set_new(j, "dim", json_integer((json_int_t)d));
    json_object_set_new(j, "projections", json_integer((json_int_t)k));
    json_object_set_new(j, "delta", kind == PG_SWD_ORTHOGONAL ? json_null() : json_real(delta));
    return pg_cli_emit(j);
}

static const char HELP_EPSILON[] =
    "  epsilon --noise-multiplier SIGMA --sampling-rate Q --steps T --delta D\n"
    "          [--conversion improved|classic]\n"
    "      epsilon of T steps of the Poisson-subsampled Gaussian (RDP accountant)\n";
static const char HELP_SIGMA[] = "  sigma --epsilon E --sampling-rate Q --steps T --delta D\n"
                                 "        [--conversion improved|classic]\n"
                                 "      the smallest noise multiplier whose epsilon is at most E\n";
static const char HELP_CALIBRATE[] =
    "  calibrate --mechanism laplace|gaussian --epsilon E --sensitivity S\n"
    "            [--delta D --method analytic|paper|classic]   (gaussian)\n"
    "      the noise scale of one release\n";
static const char HELP_SHUFFLE[] =
    "  shuffle --epsilon0 E0 --n N --delta D [--bound numerical|closed]\n"
    "      central epsilon of N shuffled E0-local reports (Feldman, McMillan, Talwar)\n";
static const char HELP_SWD[] =
    "  swd-sensitivity --dim D --projections K [--delta P]\n"
    "                  [--bound chernoff|bernstein|clt|orthogonal]\n"
    "      sensitivity of K random projections of one row (sliced Wasserstein)\n";

static int help_of(const char *sub, const char *text)
{
    printf("usage: privgen privacy %s [options]   (prints one JSON line)\n%s", sub, text);
    return PG_CLI_OK;
}

int pg_cli_privacy(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(int, char **);
        const char *help;
    } subs[] = {{"epsilon", cmd_epsilon, HELP_EPSILON},
                {"sigma", cmd_sigma, HELP_SIGMA},
                {"calibrate", cmd_calibrate, HELP_CALIBRATE},
                {"shuffle", cmd_shuffle, HELP_SHUFFLE},
                {"swd-sensitivity", cmd_swd, HELP_SWD}};
    enum { NSUB = sizeof subs / sizeof subs[0] };
    int known = 0;
    for (size_t i = 0; argc >= 1 && i < NSUB; i++) known |= !strcmp(argv[0], subs[i].name);
    if (!known && pg_cli_help(argc, argv, "")) {
        printf("usage: privgen privacy SUBCOMMAND [options]\n"
               "  Offline privacy accounting; every subcommand prints one JSON line.\n");
        for (size_t i = 0; i < NSUB; i++) fputs(subs[i].help, stdout);
        return PG_CLI_OK;
    }
    if (argc < 1)
        return pg_cli_error(PG_CLI_USAGE, "usage: privgen privacy epsilon|sigma|calibrate|shuffle|"
                                          "swd-sensitivity [options] (see --help)");
    for (size_t i = 0; i < NSUB; i++) {
        if (strcmp(argv[0], subs[i].name)) continue;
        for (int k = 1; k < argc; k++)
            if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h"))
                return help_of(subs[i].name, subs[i].help);
        return subs[i].run(argc - 1, argv + 1);
    }
    return pg_cli_error(PG_CLI_USAGE, "unknown privacy command '%s' (see privgen privacy --help)",
                        argv[0]);
}
