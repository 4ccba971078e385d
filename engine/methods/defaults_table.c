/* defaults_table - the typed-table defaults of the paper methods that follow
 * the table (defaults.h, "Typed tables": pg_defaults_table_fill). Kept apart
 * from the small-vector rules of defaults.c. */
#include <string.h>

#include "engine/data/table.h"
#include "engine/methods/defaults.h"
#include "engine/methods/spec.h"

static void fill(json_t *s, const char *path, json_t *v)
{
    const json_t *cur = pg_spec_get(s, path);
    if (cur && !json_is_null(cur))
        json_decref(v);
    else
        pg_spec_set(s, path, v); /* null counts as absent, as in the resolver */
}

void pg_defaults_table_fill(json_t *s, const char *method, const pg_data_desc *desc)
{
    const pg_table *t = desc->table;
    if (!t) return;
    bool labelled = t->label != PG_TABLE_NONE && desc->num_classes > 0;
    /* dp_sinkhorn conditions on the schema's label, as paper 001 conditions
     * on the class: the rows of each class are matched to that class's
     * rows, so the class's dependence on the other columns is what the
     * model learns, and samples carry the label with the proportions of a
     * DP count (label_count.h). */
    if (strcmp(method, "dp_sinkhorn") == 0 && labelled && desc->model == PG_PRIVACY_CENTRAL)
        fill(s, "model.conditional", json_true());
}
