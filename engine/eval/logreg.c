#include "engine/eval/logreg.h"

#include <math.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"

/* Scratch for one objective evaluation, allocated once per fit. */
typedef struct lr_work {
    float *wf;     /* (d + 1) x k parameters as float for the GEMMs */
    float *logits; /* n x k, then the softmax residual (P - Y) / n */
    float *gw;     /* d x k */
} lr_work;

static int lr_work_alloc(lr_work *w, size_t n, size_t d, int k)
{
    w->wf = pg_alloc_f32((d + 1) * (size_t)k);
    w->logits = pg_alloc_f32(n * (size_t)k);
    w->gw = pg_alloc_f32(d * (size_t)k);
    return w->wf && w->logits && w->gw ? PG_OK : PG_ENOMEM;
}

static void lr_work_free(lr_work *w)
{
    pg_free(w->wf);
    pg_free(w->logits);
    pg_free(w->gw);
}

static double lr_eval(lr_work *w, const float *x, const int32_t *y, size_t n, size_t d, int k,
                      double l2, const double *theta, double *grad)
{
    size_t nk = (size_t)k;
    for (size_t i = 0; i < (d + 1) * nk; i++) w->wf[i] = (float)theta[i];
    pg_mat X = pg_mat_view((float *)x, n, d), W = pg_mat_view(w->wf, d, nk);
    pg_mat L = pg_mat_view(w->logits, n, nk);
    pg_gemm(1.0f, &X, false, &W, false, 0.0f, &L, NULL);
    const float *bias = w->wf + d * nk;
    double loss = 0.0;
    double inv_n = 1.0 / (double)n;
#pragma omp parallel for reduction(+ : loss) schedule(static)
    for (size_t i = 0; i < n; i++) {
        float *row = w->logits + i * nk;
        double mx = -INFINITY;
        for (int c = 0; c < k; c++) {
            row[c] += bias[c];
            if (row[c] > mx) mx = row[c];
        }
        double z = 0.0;
        for (int c = 0; c < k; c++) z += exp((double)row[c] - mx);
        double lse = mx + log(z);
        loss += lse - (double)row[y[i]];
        for (int c = 0; c < k; c++) {
            double p = exp((double)row[c] - lse);
            row[c] = (float)((p - (c == y[i])) * inv_n);
        }
    }
    double f = loss * inv_n, reg = 0.0;
    for (size_t i = 0; i < d * nk; i++) reg += theta[i] * theta[i];
    f += 0.5 * l2 * reg;
    if (grad) {
        pg_mat G = pg_mat_view(w->gw, d, nk);
        pg_gemm(1.0f, &X, true, &L, false, 0.0f, &G, NULL);
        for (size_t i = 0; i < d * nk; i++) grad[i] = (double)w->gw[i] + l2 * theta[i];
        for (int c = 0; c < k; c++) {
            double s = 0.0;
            for (size_t i = 0; i < n; i++) s += w->logits[i * nk + (size_t)c];
            grad[d * nk + (size_t)c] = s;
        }
    }
    return f;
}

static int lr_check(const float *x, const int32_t *y, size_t n, size_t d, int k, pg_error *err)
{
    if (n == 0 || d == 0)
        return pg_error_set(err, PG_EINVAL, "logistic regression needs rows and features");
    if (k < 2) return pg_error_set(err, PG_EINVAL, "logistic regression needs at least 2 classes");
    for (size_t i = 0; i < n; i++)
        if (y[i] < 0 || y[i] >= k)
            return pg_error_set(err, PG_EINVAL, "label %d of row %zu is outside [0, %d)", (int)y[i],
                                i + 1, k);
    for (size_t i = 0; i < n * d; i++)
        if (!isfinite(x[i]))
            return pg_error_set(err, PG_EINVAL, "feature %zu of row %zu is not finite", i % d + 1,
                                i / d + 1);
    return PG_OK;
}

void pg_logreg_defaults(pg_logreg_opts *o)
{
    o->l2 = 1e-4;
    o->max_iter = 300;
    o->tol = 1e-4;
    o->memory = 10;
    o->progress = NULL;
    o->progress_ctx = NULL;
}

int pg_logreg_objective(const float *x, const int32_t *y, size_t n, size_t d, int k, double l2,
                        const double *theta, double *f, double *grad, pg_error *err)
{
    int rc = lr_check(x, y, n, d, k, err);
    if (rc) return rc;
    lr_work w;
    if (lr_work_alloc(&w, n, d, k)) {
        lr_work_free(&w);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate logistic-regression scratch");
    }
    *f = lr_eval(&w, x, y, n, d, k, l2, theta, grad);
    lr_work_free(&w);
    return PG_OK;
}

static double dot(const double *a, const double *b, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static double supnorm(const double *a, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s = fmax(s, fabs(a[i]));
    return s;
}

int pg_logreg_fit(pg_logreg *m, const float *x, const int32_t *y, size_t n, size_t d, int k,
                  const pg_logreg_opts *opts, pg_logreg_report *report, pg_error *err)
{
    memset(m, 0, sizeof *m);
    pg_logreg_opts o;
    if (opts)
        o = *opts;
    else
        pg_logreg_defaults(&o);
    if (!(o.l2 >= 0.0) || o.max_iter < 1 || !(o.tol > 0.0) || o.memory < 1)
        return pg_error_set(err, PG_EINVAL, "invalid logistic-regression options");
    int rc = lr_check(x, y, n, d, k, err);
    if (rc) return rc;

    size_t p = (d + 1) * (size_t)k, mem = (size_t)o.memory;
    lr_work w;
    double *buf = pg_calloc(p * (5 + 2 * mem) + 2 * mem, sizeof(double));
    if (lr_work_alloc(&w, n, d, k) || !buf) {
        lr_work_free(&w);
        pg_free(buf);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate logistic-regression state");
    }
    double *theta = buf, *g = theta + p, *dir = g + p, *tnew = dir + p, *gnew = tnew + p;
    double *S = gnew + p, *Y = S + p * mem, *rho = Y + p * mem, *alpha = rho + mem;
    size_t npairs = 0, head = 0;

    double f = lr_eval(&w, x, y, n, d, k, o.l2, theta, g);
    const char *stop = "max_iter";
    int it = 0;
    for (; it < o.max_iter; it++) {
        if (supnorm(g, p) <= o.tol) {
            stop = "gradient";
            break;
        }
        /* Two-loop recursion: dir = -H g. */
        memcpy(dir, g, p * sizeof(double));
        for (size_t j = 0; j < npairs; j++) {
            size_t idx = (head + mem - 1 - j) % mem;
            alpha[idx] = rho[idx] * dot(S + idx * p, dir, p);
            for (size_t i = 0; i < p; i++) dir[i] -= alpha[idx] * Y[idx * p + i];
        }
        double gamma = 1.0;
        if (npairs > 0) {
            size_t last = (head + mem - 1) % mem;
            gamma = dot(S + last * p, Y + last * p, p) / dot(Y + last * p, Y + last * p, p);
        } else {
            gamma = 1.0 / fmax(1.0, sqrt(dot(g, g, p)));
        }
        for (size_t i = 0; i < p; i++) dir[i] *= gamma;
        for (size_t j = npairs; j-- > 0;) {
            size_t idx = (head + mem - 1 - j) % mem;
            double beta = rho[idx] * dot(Y + idx * p, dir, p);
            for (size_t i = 0; i < p; i++) dir[i] += (alpha[idx] - beta) * S[idx * p + i];
        }
        for (size_t i = 0; i < p; i++) dir[i] = -dir[i];
        double slope = dot(g, dir, p);
        if (!(slope < 0.0)) { /* not a descent direction: restart from steepest descent */
            for (size_t i = 0; i < p; i++) dir[i] = -g[i] * gamma;
            slope = dot(g, dir, p);
            npairs = 0;
        }
        /* Backtracking Armijo line search (c1 = 1e-4). */
        double step = 1.0, fnew = f;
        int ls;
        for (ls = 0; ls < 40; ls++) {
            for (size_t i = 0; i < p; i++) tnew[i] = theta[i] + step * dir[i];
            fnew = lr_eval(&w, x, y, n, d, k, o.l2, tnew, gnew);
            if (isfinite(fnew) && fnew <= f + 1e-4 * step * slope) break;
            step *= 0.5;
        }
        if (ls == 40) {
            stop = "stalled";
            break;
        }
        /* Store the curvature pair only when it keeps H positive definite. */
        double *s = S + head * p, *yv = Y + head * p;
        for (size_t i = 0; i < p; i++) s[i] = tnew[i] - theta[i], yv[i] = gnew[i] - g[i];
        double sy = dot(s, yv, p);
        if (sy > 1e-12 * sqrt(dot(s, s, p) * dot(yv, yv, p))) {
            rho[head] = 1.0 / sy;
            head = (head + 1) % mem;
            if (npairs < mem) npairs++;
        }
        double improvement = f - fnew;
        memcpy(theta, tnew, p * sizeof(double));
        memcpy(g, gnew, p * sizeof(double));
        f = fnew;
        if (improvement < 1e-10 * fmax(1.0, fabs(f))) {
            it++;
            stop = "stalled";
            break;
        }
        if (o.progress && o.progress(o.progress_ctx, "logreg", (double)(it + 1) / o.max_iter)) {
            lr_work_free(&w);
            pg_free(buf);
            return pg_error_set(err, PG_ECANCELLED, "logistic regression cancelled");
        }
    }
    if (strcmp(stop, "max_iter") == 0 && supnorm(g, p) <= o.tol) stop = "gradient";

    m->d = d;
    m->k = k;
    m->w = w.wf; /* already float, sized (d + 1) x k */
    for (size_t i = 0; i < p; i++) m->w[i] = (float)theta[i];
    w.wf = NULL;
    if (report) {
        report->iters = it;
        report->loss = f;
        report->grad_norm = supnorm(g, p);
        report->stop = stop;
    }
    lr_work_free(&w);
    pg_free(buf);
    return PG_OK;
}

int pg_logreg_predict(const pg_logreg *m, const float *x, size_t n, int32_t *out, pg_error *err)
{
    if (!m->w) return pg_error_set(err, PG_ESTATE, "logistic regression is not fitted");
    size_t nk = (size_t)m->k;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float *row = x + i * m->d;
        int best = 0;
        double bestv = -INFINITY;
        for (int c = 0; c < m->k; c++) {
            double s = m->w[m->d * nk + (size_t)c];
            for (size_t j = 0; j < m->d; j++) s += (double)row[j] * m->w[j * nk + (size_t)c];
            if (s > bestv) bestv = s, best = c;
        }
        out[i] = best;
    }
    return PG_OK;
}

int pg_logreg_accuracy(const pg_logreg *m, const float *x, const int32_t *y, size_t n,
                       double *accuracy, pg_error *err)
{
    if (n == 0) return pg_error_set(err, PG_EINVAL, "accuracy of an empty set is undefined");
    int32_t *pred = pg_calloc(n, sizeof *pred);
    if (!pred) return pg_error_set(err, PG_ENOMEM, "cannot allocate predictions");
    int rc = pg_logreg_predict(m, x, n, pred, err);
    if (rc == PG_OK) {
        size_t hit = 0;
        for (size_t i = 0; i < n; i++) hit += pred[i] == y[i];
        *accuracy = (double)hit / (double)n;
    }
    pg_free(pred);
    return rc;
}

void pg_logreg_free(pg_logreg *m)
{
    if (!m) return;
    pg_free(m->w);
    memset(m, 0, sizeof *m);
}
