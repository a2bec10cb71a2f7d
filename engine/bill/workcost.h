/*
 * workcost — cost per unit of work of a period: per workload, the memory
 * it used, what that memory cost, its units of work (work_units, schema
 * 012) and the cost per unit of each unit word. Figures only; engine/render/
 * unitcost.c prints them.
 *
 * Cost: the workload's memory_used MiB·s of each hour at the price entry
 * of the hour's GPU model, rounded half-even once per (workload, model,
 * price entry) as an invoice line is; hours without a price are counted
 * apart (unpriced, no amount). The cost is the memory used share alone:
 * idle and overhead are not in it. Cost per unit: cost × scale / units,
 * half-even to the minor unit, per 10^6 tokens, per 10^3 requests, per 1
 * of any other word; no units, no figure (never a division by zero).
 */
#ifndef GL_WORKCOST_H
#define GL_WORKCOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "money.h"
#include "period.h"
#include "price.h"
#include "store.h"

struct gl_unit_work {
    char *unit;
    int64_t units;
    int64_t scale;         /* units the cost per unit is given for */
    gl_i128 per_minor;     /* cost of scale units, minor units (0 when units is 0) */
};

struct gl_unit_cost_row {
    char *cluster, *ns, *kind, *name;
    int64_t used_mib_s, unpriced_mib_s;
    gl_i128 cost_minor;
    struct gl_unit_work *work;
    size_t nwork;          /* 0: no work recorded */
};

struct gl_unit_cost {
    struct gl_unit_cost_row *rows; /* by cluster, namespace, kind, name */
    size_t n;
};

/* The units a cost per unit is given for: 10^6 tokens, 10^3 requests, 1. */
int64_t gl_unit_scale(const char *unit);

enum gl_status gl_unit_cost_build(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, const struct gl_period *p,
                                  struct gl_unit_cost *out, struct gl_error *err);
void gl_unit_cost_free(struct gl_unit_cost *u);

#endif
