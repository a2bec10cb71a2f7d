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
#include "invoice_model.h"
#include "money.h"
#include "period.h"
#include "price.h"
#include "store.h"

struct gl_unit_work {
    char *unit;
    int64_t units;
    int64_t scale;         /* units the cost per unit is given for */
    gl_i128 per_minor;     /* cost of scale units, minor units (0 when units is 0) */
    gl_i128 per_with_minor; /* the same of with_shares_minor */
};

/* A workload's memory used in one team's rows. */
struct gl_unit_team {
    char *team;
    int64_t mib_s;
};

struct gl_unit_cost_row {
    char *cluster, *ns, *kind, *name;
    int64_t used_mib_s, unpriced_mib_s;
    gl_i128 cost_minor;
    /* cost plus its share of its teams' idle and overhead lines (policy
     * proportional: the teams carry them; platform, unbilled: none, so the
     * same as cost): per team, the team's idle and overhead amount × the
     * workload's memory used / the team's, half-even */
    gl_i128 with_shares_minor;
    struct gl_unit_team *teams;
    size_t nteams;
    struct gl_unit_work *work;
    size_t nwork;          /* 0: no work recorded */
};

struct gl_unit_cost {
    struct gl_unit_cost_row *rows; /* by cluster, namespace, kind, name */
    size_t n;
    bool shares; /* with_shares_minor computed (the period's invoices were read) */
};

/* The units a cost per unit is given for: 10^6 tokens, 10^3 requests or
 * inferences, else 1. */
int64_t gl_unit_scale(const char *unit);

enum gl_status gl_unit_cost_build(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, const struct gl_period *p,
                                  struct gl_unit_cost *out, struct gl_error *err);
/* Each row's with_shares_minor from the period's invoices (set). */
enum gl_status gl_unit_cost_shares(struct gl_unit_cost *u, const struct gl_invoice_set *set,
                                   struct gl_error *err);
void gl_unit_cost_free(struct gl_unit_cost *u);

#endif
