/*
 * invoice — invoices per team and period, priced from the hourly rollups.
 *
 * Reads: usage and device rows of the period (SQL does the grouping), the
 * price table. Builds lines keyed (team, cluster, GPU model, kind, price
 * entry) with exact MiB·s, an amount rounded half-even once per line, and
 * per-UTC-day quantities with the line amount split by largest remainder
 * (what the FOCUS export writes). Computes only: an invoice's JSON and
 * Markdown are render/invoice_codec.h's.
 */
#ifndef GL_INVOICE_H
#define GL_INVOICE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "error.h"
#include "money.h"
#include "price.h"
#include "invoice_model.h"
#include "query.h"
#include "store.h"
#include "timeutil.h"

/* Builds every team's invoice for period p. On success *out is owned by the
 * caller (gl_invoices_free). A GPU model with usage and no price is a config
 * error naming the model; a sum beyond 64 bits (MiB·s) or 128 bits (money)
 * is a runtime error naming team, model and period; so are two team ids
 * whose file names (gl_safe_name) would collide. */
enum gl_status gl_invoices_build(const struct gl_config *c, struct gl_store *s,
                                 const struct gl_price_table *prices, const struct gl_period *p,
                                 struct gl_invoice_set **out, struct gl_error *err);
void gl_invoices_free(struct gl_invoice_set *set);

/* A correction line (days filled by the caller with exact differences):
 * added to team's invoice, created when needed. gl_invoices_finish sorts
 * and re-totals after corrections were added (an error when a total
 * overflows, or when two teams' file names would collide). */
struct gl_invoice_line *gl_invoice_add_correction(struct gl_invoice_set *set, const char *team,
                                                  const char *cluster, const char *model,
                                                  enum gl_line_kind kind,
                                                  const struct gl_price_entry *price,
                                                  const char *corrected_period);
enum gl_status gl_invoices_finish(struct gl_invoice_set *set, struct gl_error *err);

/* GB-hours × 10^9 as printed for a line's day / a line: rounded from MiB·s,
 * or for a correction the difference of printed figures (docs/specification.md "Arithmetic"). */
gl_i128 gl_day_gbh_nano(const struct gl_invoice_line *l, const struct gl_line_day *d);
gl_i128 gl_line_gbh_nano(const struct gl_invoice_line *l);

/* The caveat printed with the compute indicator everywhere. */
extern const char gl_compute_caveat[];

#endif
