/*
 * period — a period's state and its invoices as they are to be shown: open
 * (live, with the correction lines of the closed months before it) or
 * closed (its frozen texts and figures); a period never collected refused.
 * Closing one is run/close.h.
 */
#ifndef GL_PERIOD_H
#define GL_PERIOD_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "invoice.h"
#include "price.h"
#include "store.h"
#include "timeutil.h"

/* Whether period (YYYY-MM) is closed. */
enum gl_status gl_period_is_closed(struct gl_store *s, const char *period, bool *closed,
                                   struct gl_error *err);

/* Builds a period's invoices as they are to be shown: live (with
 * corrections) for an open period. *frozen tells whether p is closed, in
 * which case *out is NULL and the frozen texts must be used. */
enum gl_status gl_period_invoices(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, const struct gl_period *p,
                                  struct gl_invoice_set **out, bool *frozen,
                                  struct gl_error *err);

/* GL_OK when period p is closed or any cluster has a collected hour in it;
 * else GL_ERR_STATE (exit 7) naming p and the periods the database holds:
 * the commands that print a period refuse one never collected rather than
 * print an empty answer. */
enum gl_status gl_period_held(struct gl_store *s, const struct gl_period *p,
                              struct gl_error *err);

/* The frozen FOCUS CSV of a closed period (malloc'd). */
enum gl_status gl_frozen_focus(struct gl_store *s, const char *period, char **csv,
                               struct gl_error *err);

/* Calls fn for each frozen invoice of a closed period (team NULL = all). */
enum gl_status gl_frozen_invoices(struct gl_store *s, const char *period, const char *team,
                                  void (*fn)(void *ctx, const char *team, const char *json,
                                             const char *md),
                                  void *ctx, struct gl_error *err);

#endif
