#include "engine/eval/table_cols.h"

#include <math.h>
#include <stdlib.h>

static const char *const BOOL_NAMES[3] = {"false", "true", PG_EVAL_MISSING_NAME};

static int included(const pg_table *t, int with_label, size_t j)
{
    return j != t->label || with_label;
}

int pg_eval_table_columns(const pg_table *t, int with_label, pg_eval_column **cols, size_t *d,
                          pg_error *err)
{
    *cols = NULL;
    *d = 0;
    pg_eval_column *c = calloc(t->ncols ? t->ncols : 1, sizeof *c);
    if (!c) return pg_error_set(err, PG_ENOMEM, "out of memory describing columns");
    size_t k = 0;
    for (size_t j = 0; j < t->ncols; j++) {
        if (!included(t, with_label, j)) continue;
        const pg_table_col *col = &t->cols[j];
        pg_eval_column *e = &c[k++];
        e->name = col->name;
        if (col->type == PG_COL_CONTINUOUS || col->type == PG_COL_INTEGER) {
            e->kind = PG_EVAL_NUMERIC;
            continue;
        }
        e->kind = PG_EVAL_CATEGORICAL;
        int miss = col->nullable && j != t->label;
        if (col->type == PG_COL_BOOLEAN) {
            e->categories = 2 + miss;
            e->category_names = BOOL_NAMES;
            continue;
        }
        e->categories = (int32_t)col->ncat + miss;
        const char **names = calloc((size_t)e->categories, sizeof *names);
        if (!names) {
            pg_eval_table_columns_free(c, k);
            return pg_error_set(err, PG_ENOMEM, "out of memory describing columns");
        }
        for (size_t u = 0; u < col->ncat; u++) names[u] = col->cats[u];
        if (miss) names[col->ncat] = PG_EVAL_MISSING_NAME;
        e->category_names = names;
    }
    *cols = c;
    *d = k;
    return PG_OK;
}

void pg_eval_table_columns_free(pg_eval_column *cols, size_t d)
{
    for (size_t j = 0; cols && j < d; j++)
        if (cols[j].category_names != BOOL_NAMES) free((void *)cols[j].category_names);
    free(cols);
}

void pg_eval_table_decode(const pg_table *t, int with_label, const float *x, const int32_t *labels,
                          size_t n, int clamp, float *out)
{
    size_t d = 0;
    for (size_t j = 0; j < t->ncols; j++) d += (size_t)included(t, with_label, j);
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        for (size_t j = 0; j < t->ncols; j++) {
            if (!included(t, with_label, j)) continue;
            const pg_table_col *col = &t->cols[j];
            float *o = &out[i * d + k++];
            if (j == t->label) {
                *o = (float)labels[i];
                continue;
            }
            pg_table_value v = {0};
            pg_table_decode_value(t, j, x + i * t->width, clamp, &v);
            if (col->type == PG_COL_CONTINUOUS || col->type == PG_COL_INTEGER)
                *o = v.missing ? NAN : (float)v.num;
            else
                *o = (float)(v.missing ? (col->type == PG_COL_BOOLEAN ? 2 : col->ncat) : v.cat);
        }
    }
}
