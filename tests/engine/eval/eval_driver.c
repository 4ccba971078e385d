/* tests/engine/eval/eval_driver.c - runs the eval metrics on .npy files and
 * prints JSON, so test_eval_reference.py can hold them against SciPy, NumPy
 * and scikit-learn.
 *
 *   eval_driver report SYN.npy REF.npy [--labels YS.npy YR.npy K]
 *               [--columns n,c:3,...] [--units SYNU.npy REFU.npy] [--seed S]
 *               [--sw K] [--sinkhorn-rows N]
 *   eval_driver logreg X.npy Y.npy K L2 XT.npy   fit on (X, Y), predict XT
 *   eval_driver nearest Q.npy R.npy
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/data/npy.h"
#include "engine/eval/logreg.h"
#include "engine/eval/nearest.h"
#include "engine/eval/report.h"

static void die(const char *what, const pg_error *e)
{
    fprintf(stderr, "eval_driver: %s: %s\n", what, e ? e->msg : "");
    exit(1);
}

static float *load(const char *path, size_t *rows, size_t *cols)
{
    FILE *f = fopen(path, "rb");
    if (!f) die(path, NULL);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) die(path, NULL);
    fclose(f);
    pg_npy_header h;
    float *x = NULL;
    pg_error e = {0};
    if (pg_npy_read(buf, (size_t)len, &h, &x, &e)) die(path, &e);
    free(buf);
    *rows = h.shape[0];
    *cols = h.ndim > 1 ? h.count / h.shape[0] : 1;
    return x;
}

static int32_t *load_labels(const char *path, size_t n)
{
    size_t r, c;
    float *y = load(path, &r, &c);
    if (r != n || c != 1) die("label count", NULL);
    int32_t *out = pg_calloc(n, sizeof(int32_t));
    for (size_t i = 0; i < n; i++) out[i] = (int32_t)y[i];
    pg_free(y);
    return out;
}

static void emit(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
    puts(s);
    free(s);
    json_decref(o);
}

static int report(int argc, char **argv)
{
    size_t ns, nr, ds, dr;
    float *syn = load(argv[2], &ns, &ds), *ref = load(argv[3], &nr, &dr);
    if (ds != dr) die("widths differ", NULL);
    pg_eval_input in = {syn, ref, ns, nr, ds, NULL, NULL, NULL, 0, NULL, NULL, 0};
    pg_eval_opts o;
    pg_eval_defaults(&o);
    pg_eval_column *cols = NULL;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--labels") && i + 3 < argc) {
            in.syn_labels = load_labels(argv[i + 1], ns);
            in.ref_labels = load_labels(argv[i + 2], nr);
            in.num_classes = atoi(argv[i + 3]);
            i += 3;
        } else if (!strcmp(argv[i], "--columns") && i + 1 < argc) {
            cols = calloc(ds, sizeof *cols);
            char *spec = argv[++i];
            for (size_t j = 0; j < ds; j++) {
                if (spec[0] == 'c') {
                    cols[j].kind = PG_EVAL_CATEGORICAL;
                    cols[j].categories = atoi(spec + 2);
                }
                spec = strchr(spec, ',');
                if (!spec && j + 1 < ds) die("--columns names fewer columns than d", NULL);
                if (spec) spec++;
            }
            in.columns = cols;
        } else if (!strcmp(argv[i], "--units") && i + 2 < argc) {
            size_t nsu, nru, du, dru;
            in.syn_units = load(argv[i + 1], &nsu, &du);
            in.ref_units = load(argv[i + 2], &nru, &dru);
            if (nsu != ns || nru != nr || du != dru) die("--units shapes", NULL);
            in.units = du;
            i += 2;
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            o.seed = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--sw") && i + 1 < argc) {
            o.sw_directions = (size_t)atol(argv[++i]);
        } else if (!strcmp(argv[i], "--sinkhorn-rows") && i + 1 < argc) {
            o.sinkhorn_rows = (size_t)atol(argv[++i]);
        } else {
            die(argv[i], NULL);
        }
    }
    pg_eval_report r;
    pg_error e = {0};
    json_t *j;
    if (pg_eval_report_run(&in, &o, &r, &e)) die("report", &e);
    if (pg_eval_report_json(&r, cols, (size_t)-1, &j, &e)) die("json", &e);
    emit(j);
    pg_eval_report_free(&r);
    pg_free((void *)in.syn_labels), pg_free((void *)in.ref_labels);
    pg_free(syn), pg_free(ref);
    pg_free((void *)in.syn_units), pg_free((void *)in.ref_units);
    free(cols);
    return 0;
}

static int logreg(char **argv)
{
    size_t n, d, nt, dt;
    float *x = load(argv[2], &n, &d);
    int32_t *y = load_labels(argv[3], n);
    int k = atoi(argv[4]);
    pg_logreg_opts o;
    pg_logreg_defaults(&o);
    o.l2 = atof(argv[5]);
    o.tol = 1e-6;
    o.max_iter = 2000;
    float *xt = load(argv[6], &nt, &dt);
    pg_logreg m = {0};
    pg_logreg_report rep;
    pg_error e = {0};
    if (pg_logreg_fit(&m, x, y, n, d, k, &o, &rep, &e)) die("fit", &e);
    int32_t *pred = pg_calloc(nt, sizeof(int32_t));
    if (pg_logreg_predict(&m, xt, nt, pred, &e)) die("predict", &e);
    json_t *w = json_array(), *p = json_array();
    for (size_t i = 0; i <= d; i++) {
        json_t *row = json_array();
        for (int c = 0; c < k; c++) json_array_append_new(row, json_real(m.w[i * (size_t)k + c]));
        json_array_append_new(w, row);
    }
    for (size_t i = 0; i < nt; i++) json_array_append_new(p, json_integer(pred[i]));
    emit(json_pack("{s:o,s:o,s:f,s:i,s:s,s:f}", "w", w, "pred", p, "loss", rep.loss, "iters",
                   rep.iters, "stop", rep.stop, "grad_norm", rep.grad_norm));
    pg_logreg_free(&m);
    pg_free(x), pg_free(y), pg_free(xt), pg_free(pred);
    return 0;
}

static int nearest(char **argv)
{
    size_t n, d, m, dr;
    float *q = load(argv[2], &n, &d), *r = load(argv[3], &m, &dr);
    double *dist = pg_calloc(n, sizeof(double));
    uint32_t *idx = pg_calloc(n, sizeof(uint32_t));
    pg_error e = {0};
    if (pg_eval_nearest(&(pg_mat){q, n, d, d}, &(pg_mat){r, m, dr, dr}, dist, idx, NULL, NULL, &e))
        die("nearest", &e);
    json_t *a = json_array(), *b = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(a, json_real(dist[i]));
        json_array_append_new(b, json_integer(idx[i]));
    }
    emit(json_pack("{s:o,s:o}", "dist", a, "idx", b));
    pg_free(q), pg_free(r), pg_free(dist), pg_free(idx);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "report")) return report(argc, argv);
    if (argc == 7 && !strcmp(argv[1], "logreg")) return logreg(argv);
    if (argc == 4 && !strcmp(argv[1], "nearest")) return nearest(argv);
    fprintf(stderr, "usage: eval_driver report|logreg|nearest ... (see the source)\n");
    return 2;
}
