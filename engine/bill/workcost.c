/* workcost — cost per unit of work (see workcost.h). */
#include "workcost.h"

#include <stdlib.h>
#include <string.h>

#include "query.h"
#include "util.h"

int64_t gl_unit_scale(const char *unit)
{
    if (strcmp(unit, "tokens") == 0)
        return 1000000;
    /* an inference (Triton's) costs a fraction of a cent: per 1 it would
     * read 0.00 */
    if (strcmp(unit, "requests") == 0 || strcmp(unit, "inferences") == 0)
        return 1000;
    return 1;
}

struct build_ctx {
    struct gl_store *s;
    const struct gl_price_table *prices;
    int minor_digits;
    struct gl_unit_cost *u;
    char *model;        /* the model of per_entry */
    int64_t *per_entry; /* MiB·s of the last row's current model per price entry */
    size_t nsorted;     /* rows[0..nsorted) are in order (the memory used ones) */
};

static int key_cmp(const struct gl_unit_cost_row *r, const struct gl_work_read *w)
{
    int c;
    if ((c = strcmp(r->cluster, w->cluster)) || (c = strcmp(r->ns, w->ns)) ||
        (c = strcmp(r->kind, w->kind)))
        return c;
    return strcmp(r->name, w->name);
}

static int row_cmp(const void *a, const void *b)
{
    const struct gl_unit_cost_row *x = a, *y = b;
    struct gl_work_read w = {.cluster = y->cluster, .ns = y->ns, .kind = y->kind, .name = y->name};
    return key_cmp(x, &w);
}

static struct gl_unit_cost_row *row_add(struct gl_unit_cost *u, const struct gl_work_read *r)
{
    u->rows = gl_xrealloc(u->rows, (u->n + 1) * sizeof *u->rows);
    struct gl_unit_cost_row *x = &u->rows[u->n++];
    *x = (struct gl_unit_cost_row){.cluster = gl_strdup(r->cluster), .ns = gl_strdup(r->ns),
                                   .kind = gl_strdup(r->kind), .name = gl_strdup(r->name)};
    return x;
}

/* The last row's amount of its current model, per price entry. */
static enum gl_status flush(struct build_ctx *b, struct gl_error *err)
{
    if (!b->u->n || !b->model)
        return GL_OK;
    struct gl_unit_cost_row *x = &b->u->rows[b->u->n - 1];
    for (size_t e = 0; b->prices && e < b->prices->n; e++) {
        if (!b->per_entry[e])
            continue;
        gl_i128 unit, amount;
        enum gl_status rc = gl_price_per_gbh(b->prices, &b->prices->entries[e], b->model,
                                             gl_query_model_capacity(b->s, b->model), &unit, err);
        if (rc)
            return rc;
        if (!gl_amount_minor(b->per_entry[e], unit, b->minor_digits, &amount) ||
            __builtin_add_overflow(x->cost_minor, amount, &x->cost_minor))
            return gl_error_set(err, GL_ERR_RUNTIME, "integer overflow: the cost of workload "
                                "%.200s/%.200s", x->ns, x->name);
        b->per_entry[e] = 0;
    }
    free(b->model);
    b->model = NULL;
    return GL_OK;
}

static enum gl_status used_row(void *ctx, const struct gl_work_read *r, struct gl_error *err)
{
    struct build_ctx *b = ctx;
    struct gl_unit_cost *u = b->u;
    struct gl_unit_cost_row *x = u->n ? &u->rows[u->n - 1] : NULL;
    enum gl_status rc;
    if (!x || key_cmp(x, r) != 0 || !b->model || strcmp(b->model, r->model) != 0) {
        if ((rc = flush(b, err)))
            return rc;
        if (!x || key_cmp(x, r) != 0)
            x = row_add(u, r);
        b->model = gl_strdup(r->model);
    }
    struct gl_unit_team *t = NULL;
    for (size_t k = 0; k < x->nteams && !t; k++)
        if (!strcmp(x->teams[k].team, r->team))
            t = &x->teams[k];
    if (!t) {
        x->teams = gl_xrealloc(x->teams, (x->nteams + 1) * sizeof *x->teams);
        t = &x->teams[x->nteams++];
        *t = (struct gl_unit_team){gl_strdup(r->team), 0};
    }
    if (__builtin_add_overflow(t->mib_s, r->a, &t->mib_s))
        return gl_error_set(err, GL_ERR_RUNTIME, "integer overflow: memory used of workload "
                            "%.200s/%.200s", r->ns, r->name);
    int e = b->prices ? gl_prices_find(b->prices, r->model, r->hour) : -1;
    int64_t *q = e < 0 ? &x->unpriced_mib_s : &b->per_entry[e];
    if (__builtin_add_overflow(x->used_mib_s, r->a, &x->used_mib_s) ||
        __builtin_add_overflow(*q, r->a, q))
        return gl_error_set(err, GL_ERR_RUNTIME, "integer overflow: memory used of workload "
                            "%.200s/%.200s", r->ns, r->name);
    return GL_OK;
}

static enum gl_status units_row(void *ctx, const struct gl_work_read *r, struct gl_error *err)
{
    struct build_ctx *b = ctx;
    struct gl_unit_cost *u = b->u;
    struct gl_unit_cost_row key = {.cluster = (char *)r->cluster, .ns = (char *)r->ns,
                                   .kind = (char *)r->kind, .name = (char *)r->name};
    struct gl_unit_cost_row *x = bsearch(&key, u->rows, b->nsorted, sizeof *u->rows, row_cmp);
    for (size_t i = b->nsorted; !x && i < u->n; i++)
        if (key_cmp(&u->rows[i], r) == 0)
            x = &u->rows[i];
    if (!x) /* work without memory used: no cost, 0 (rows re-sorted at the end) */
        x = row_add(u, r);
    x->work = gl_xrealloc(x->work, (x->nwork + 1) * sizeof *x->work);
    struct gl_unit_work *w = &x->work[x->nwork++];
    *w = (struct gl_unit_work){gl_strdup(r->unit), r->a, gl_unit_scale(r->unit), 0, 0};
    (void)err;
    return GL_OK;
}

enum gl_status gl_unit_cost_build(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, const struct gl_period *p,
                                  struct gl_unit_cost *out, struct gl_error *err)
{
    memset(out, 0, sizeof *out);
    struct build_ctx b = {s, prices, c->minor_digits, out, NULL,
                          gl_xcalloc(prices && prices->n ? prices->n : 1, sizeof(int64_t)), 0};
    enum gl_status rc = gl_query_workload_used_hours(s, p, used_row, &b, err);
    if (!rc)
        rc = flush(&b, err);
    /* the units' rows find theirs among the sorted ones read above */
    b.nsorted = out->n;
    if (!rc)
        rc = gl_query_workload_units(s, p, units_row, &b, err);
    free(b.model);
    free(b.per_entry);
    for (size_t i = 0; !rc && i < out->n; i++)
        for (size_t k = 0; k < out->rows[i].nwork; k++) {
            struct gl_unit_work *w = &out->rows[i].work[k];
            if (w->units > 0)
                w->per_minor = gl_div_half_even(out->rows[i].cost_minor * w->scale, w->units);
        }
    if (!rc)
        qsort(out->rows, out->n, sizeof *out->rows, row_cmp);
    else
        gl_unit_cost_free(out);
    return rc;
}

/* The team's idle and overhead amount and its memory used (the period's
 * own lines; corrections of closed months are not this period's use). */
static void team_shares(const struct gl_invoice_set *set, const char *team, gl_i128 *amount,
                        gl_i128 *used)
{
    *amount = *used = 0;
    for (size_t i = 0; i < set->n; i++) {
        const struct gl_invoice *inv = &set->invoices[i];
        if (strcmp(inv->team, team) != 0)
            continue;
        for (size_t k = 0; k < inv->nlines; k++) {
            const struct gl_invoice_line *l = &inv->lines[k];
            if (l->corrected_period[0])
                continue;
            if (l->kind == GL_LINE_IDLE_SHARE || l->kind == GL_LINE_OVERHEAD_SHARE)
                *amount += l->amount;
            else if (l->kind == GL_LINE_MEMORY_USED)
                *used += l->mib_s;
        }
    }
}

enum gl_status gl_unit_cost_shares(struct gl_unit_cost *u, const struct gl_invoice_set *set,
                                   struct gl_error *err)
{
    for (size_t i = 0; i < u->n; i++) {
        struct gl_unit_cost_row *x = &u->rows[i];
        x->with_shares_minor = x->cost_minor;
        for (size_t k = 0; k < x->nteams; k++) {
            gl_i128 amount, used;
            team_shares(set, x->teams[k].team, &amount, &used);
            if (used <= 0 || amount == 0)
                continue;
            /* |amount| < 2^64 and mib_s < 2^63: the product fits 128 bits */
            gl_i128 part = gl_div_half_even(amount * x->teams[k].mib_s, used);
            if (__builtin_add_overflow(x->with_shares_minor, part, &x->with_shares_minor))
                return gl_error_set(err, GL_ERR_RUNTIME, "integer overflow: the cost of "
                                    "workload %.200s/%.200s", x->ns, x->name);
        }
        for (size_t k = 0; k < x->nwork; k++)
            if (x->work[k].units > 0)
                x->work[k].per_with_minor = gl_div_half_even(
                    x->with_shares_minor * x->work[k].scale, x->work[k].units);
    }
    u->shares = true;
    return GL_OK;
}

void gl_unit_cost_free(struct gl_unit_cost *u)
{
    for (size_t i = 0; i < u->n; i++) {
        struct gl_unit_cost_row *x = &u->rows[i];
        free(x->cluster);
        free(x->ns);
        free(x->kind);
        free(x->name);
        for (size_t k = 0; k < x->nwork; k++)
            free(x->work[k].unit);
        free(x->work);
        for (size_t k = 0; k < x->nteams; k++)
            free(x->teams[k].team);
        free(x->teams);
    }
    free(u->rows);
    memset(u, 0, sizeof *u);
}
