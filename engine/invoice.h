/*
 * invoice — invoices per team and period, priced from the hourly rollups.
 *
 * Reads: usage and device rows of the period (SQL does the grouping), the
 * price table. Builds lines keyed (team, cluster, GPU model, kind, price
 * entry) with exact MiB·s, an amount rounded half-even once per line, and
 * per-UTC-day quantities with the line amount split by largest remainder
 * (what the FOCUS export writes). Writes invoices as JSON and Markdown.
 */
#ifndef GL_INVOICE_H
#define GL_INVOICE_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "error.h"
#include "money.h"
#include "price.h"
#include "store.h"
#include "timeutil.h"

struct gl_line_day {
    int64_t day;     /* UTC midnight */
    int64_t mib_s;
    gl_i128 billed;  /* minor units */
};

struct gl_invoice_line {
    char *cluster;
    char *model;
    char *kind;
    const struct gl_price_entry *price;
    gl_i128 unit_price12; /* per GB-hour × 10^12 */
    int64_t mib_s;
    gl_i128 amount;       /* minor units */
    int estimated;
    struct gl_line_day *days;
    size_t ndays;
};

struct gl_invoice {
    char *team;
    const char *team_name;   /* catalogue name, else the id */
    const char *cost_center; /* NULL when unknown */
    char invoice_id[300];
    struct gl_invoice_line *lines;
    size_t nlines;
    gl_i128 total;
};

struct gl_invoice_set {
    const struct gl_config *cfg;
    struct gl_period period;
    struct gl_invoice *invoices;
    size_t n;
};

/* Builds every team's invoice for period p. On success *out is owned by the
 * caller (gl_invoices_free). A GPU model with usage and no price is a config
 * error naming the model. */
enum gl_status gl_invoices_build(const struct gl_config *c, struct gl_store *s,
                                 const struct gl_price_table *prices, const struct gl_period *p,
                                 struct gl_invoice_set **out, struct gl_error *err);
void gl_invoices_free(struct gl_invoice_set *set);

/* JSON of one invoice (cJSON); NULL team = every invoice in one object. */
char *gl_invoice_json(const struct gl_invoice_set *set, const struct gl_invoice *inv);
/* Markdown of one invoice. */
void gl_invoice_markdown(const struct gl_invoice_set *set, const struct gl_invoice *inv,
                         FILE *out);

#endif
