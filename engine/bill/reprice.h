/*
 * reprice — closed months keep their prices.
 *
 * A closed period's frozen rows record, per FOCUS key and UTC day, the price
 * entry (pattern@valid_from) and the unit price per GB-hour it was billed
 * at. Recomputing a closed period (reprice.c, for its corrections) with the
 * current prices may change its figures for two reasons: the quantities
 * changed (late or re-collected data: correction lines, as always), or the
 * prices did (an edited price table, `prices import`, a different GB-hour
 * conversion of a GPU-Hours price after an upgrade or a newly measured
 * capacity). The second is refused (GL_ERR_STATE, exit 7) unless it was
 * accepted with --reprice-closed, which stores the new prices of each
 * changed (period, GPU model, day) in reprice_accepted (schema/006): they
 * replace the frozen prices for the check from then on.
 *
 * A price change of a (model, day) is: an hour with usage now and at close
 * priced by a price entry or at a unit price that the day's frozen (or
 * accepted) rows do not have, or a frozen entry that no longer covers the
 * day. Prices depend on model and hour only, so the check is per (model,
 * day), whatever team or kind the usage is. A model-day without frozen rows
 * (usage first collected after the close) is data.
 */
#ifndef GL_REPRICE_H
#define GL_REPRICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "error.h"
#include "invoice.h"
#include "money.h"
#include "price.h"
#include "store.h"
#include "store_reprice.h"
#include "timeutil.h"
#include "util.h"

/* One (model, day) of a closed period whose prices changed: the frozen (or
 * accepted) entry and unit price, and the current ones. */
struct gl_reprice_change {
    char period[8];
    char *team; /* a team with usage of the model that day */
    char *model;
    int64_t day;
    char *old_key, *new_key;
    gl_i128 old_unit12, new_unit12;
    /* the current entries and unit prices of the model-day (what accepting stores) */
    char **keys, **units;
    size_t nkeys;
};

struct gl_reprice_list {
    struct gl_reprice_change *c;
    size_t n;
};
void gl_reprice_list_free(struct gl_reprice_list *l);

/* The price changes of closed period `period`, whose invoices recomputed
 * with prices are rec, appended to out (ordered by model, day). */
enum gl_status gl_reprice_changes(struct gl_store *s, const struct gl_price_table *prices,
                                  const char *period, const struct gl_invoice_set *rec,
                                  struct gl_reprice_list *out, struct gl_error *err);

/* The refusal (GL_ERR_STATE) of the changes in l (n > 0): names period,
 * team, model, day, old and new unit price and entry, and --reprice-closed;
 * open = the period that would carry the corrections. */
enum gl_status gl_reprice_refuse(const struct gl_reprice_list *l, const char *open,
                                 struct gl_error *err);

/* Checks every closed, unpruned period against prices: a change is
 * refused (gl_reprice_refuse) unless accept, which stores the changed
 * model-days; record stores the checks' fingerprints (below). Both need a
 * write transaction; with neither the check only reads (prices without
 * --reprice-closed). *n receives how many were accepted, each logged. */
enum gl_status gl_reprice_closed_months(const struct gl_config *c, struct gl_store *s,
                                        const struct gl_price_table *prices, bool accept,
                                        bool record, int64_t now, size_t *n,
                                        struct gl_error *err);

/* The open periods that carry corrections of closed periods (the month
 * after each closed month that is not closed itself), ordered; free *out. */
enum gl_status gl_reprice_open_periods(struct gl_store *s, struct gl_period **out, size_t *n,
                                       struct gl_error *err);

/* ---- the check skipped when nothing it reads changed (schema/008) ----
 *
 * Recomputing a closed month costs as much as building it: gl_reprice_
 * closed_months (every run) and the corrections of every open month's
 * outputs (the corrections) would rebuild every closed month each time. A closed
 * period's fingerprint hashes everything its recomputed figures depend on:
 * the build (its commit: none known, never trusted) and schema version, the
 * gpuledger version and the config file's bytes, the price entries in
 * force on some hour of the month (every field but the file:row id, in
 * table order), and from the store its closed_at and data version (every
 * stored chunk of one of its hours bumps it), its accepted repricings, the
 * correction rows of it frozen in later closed periods, the GPU model of
 * each device seen in it and the measured capacity per GPU model. gl_reprice_closed_months
 * records, per period it recomputed and found without a price change (or
 * accepted), that fingerprint and whether correction lines are to be
 * carried; while the fingerprint is unchanged the period is not recomputed
 * (the check passes again, the corrections are none or are recomputed). */

/* Closed period p's fingerprint now (above). */
enum gl_status gl_closed_fingerprint(const struct gl_config *c, struct gl_store *s,
                                     const struct gl_price_table *prices,
                                     const struct gl_period *p, char out[GL_CLOSED_FP],
                                     struct gl_error *err);

/* *settled: p's last check found no price change and no correction lines,
 * at the fingerprint p has now: its corrections are none and p need not be
 * recomputed (logged at debug level either way). */
enum gl_status gl_closed_settled(const struct gl_config *c, struct gl_store *s,
                                 const struct gl_price_table *prices, const struct gl_period *p,
                                 bool *settled, struct gl_error *err);

/* Adds to set (an open period) the correction lines of the closed periods
 * right before it. */
enum gl_status gl_corrections_add(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, struct gl_invoice_set *set,
                                  struct gl_error *err);

#endif
