/*
 * close — closed periods and corrections (SPEC §6, §9 "Corrections").
 *
 * `close` freezes a month: its statement (statement.h) is built, its
 * invoices (JSON, Markdown) and FOCUS CSV rendered by the renderer table
 * (render.h) and stored with the exact figures of every FOCUS key
 * (gl_store_freeze) together with the invoice set as figures (schema 007,
 * store_frozen.h): a closed month's statement is loaded from those figures
 * and rendered by the normal renderers, checked against the stored texts
 * (gl_frozen_verify); a month closed before schema 007 prints its stored
 * texts. Data collected later that changes a closed month becomes
 * correction lines of the next open month: per FOCUS key, recomputed −
 * frozen − corrections already frozen in later closed months.
 */
#ifndef GL_CLOSE_H
#define GL_CLOSE_H

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

/* Adds to set (an open period) the correction lines of the closed periods
 * right before it. */
enum gl_status gl_corrections_add(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, struct gl_invoice_set *set,
                                  struct gl_error *err);

/* Builds a period's invoices as they are to be shown: live (with
 * corrections) for an open period. *frozen tells whether p is closed, in
 * which case *out is NULL and the frozen texts must be used. */
enum gl_status gl_period_invoices(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, const struct gl_period *p,
                                  struct gl_invoice_set **out, bool *frozen,
                                  struct gl_error *err);

/* Closes p. Errors (GL_ERR_STATE): already closed, still in progress at now. */
enum gl_status gl_period_close(const struct gl_config *c, struct gl_store *s,
                               const struct gl_price_table *prices, const struct gl_period *p,
                               int64_t now, struct gl_error *err);

/* A closed period's statement loaded from its frozen figures (st->set;
 * schema 007) against the texts stored at close (the audit copy): every
 * stored invoice JSON and Markdown, and the FOCUS CSV, must be what the
 * renderers print from the figures, byte for byte. An empty or missing text
 * is not compared (nothing to compare with). A difference is GL_ERR_STATE
 * (exit 7) naming the period, the format and the team: the database was
 * altered after the close, and neither version is printed (SPEC §10: fail
 * loudly rather than print a figure that may be wrong). */
struct gl_statement;
struct gl_frozen_invoice;
enum gl_status gl_frozen_verify(const struct gl_statement *st,
                                const struct gl_frozen_invoice *texts, size_t ntexts,
                                const char *focus_csv, struct gl_error *err);

/* The frozen FOCUS CSV of a closed period (malloc'd). */
enum gl_status gl_frozen_focus(struct gl_store *s, const char *period, char **csv,
                               struct gl_error *err);

/* Calls fn for each frozen invoice of a closed period (team NULL = all). */
enum gl_status gl_frozen_invoices(struct gl_store *s, const char *period, const char *team,
                                  void (*fn)(void *ctx, const char *team, const char *json,
                                             const char *md),
                                  void *ctx, struct gl_error *err);

#endif
