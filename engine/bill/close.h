/*
 * close — closed periods and corrections (docs/specification.md "Periods and corrections", "Arithmetic").
 *
 * `close` freezes a month: its statement (statement.h) is built, its
 * invoices (JSON, Markdown) and FOCUS CSV rendered by the renderer table
 * (render.h) and stored with the exact figures of every FOCUS key
 * (gl_store_freeze) together with the invoice set as figures (schema 007,
 * store_frozen.h) and a digest of them (schema 011, store_digest.h): a
 * closed month's statement is loaded from those figures, checked by the
 * digest, and rendered by today's renderers; one closed with figures but
 * before the digests is checked against the stored texts once
 * (gl_frozen_verify), then sealed; a month closed before schema 007 prints
 * its stored texts. Data collected later that changes a closed month becomes
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

/* GL_OK when period p is closed or any cluster has a collected hour in it;
 * else GL_ERR_STATE (exit 7) naming p and the periods the database holds:
 * the commands that print a period refuse one never collected rather than
 * print an empty answer. */
enum gl_status gl_period_held(struct gl_store *s, const struct gl_period *p,
                              struct gl_error *err);

/* Whether p may be closed at now: for every configured cluster, every hour
 * of p stored (collected_hour; an hour the backend had no data for counts,
 * listed in no_data), none with a refused collection outstanding (schema
 * 009 refused_hour), and the collection reaching settles = p's end +
 * close.settle_hours (run's watermark, or hours stored without a gap after
 * the end; never beyond now). gaps: what is lacking, per cluster in
 * order: missing, refused, then unsettled (from the point reached). */
struct gl_close_check {
    struct gl_gap *gaps;
    size_t ngaps;
    struct gl_gap *no_data; /* GL_GAP_NO_DATA ranges: collected, listed only */
    size_t nno_data;
    int64_t settles;
};
enum gl_status gl_period_check(const struct gl_config *c, struct gl_store *s,
                               const struct gl_period *p, int64_t now,
                               struct gl_close_check *out, struct gl_error *err);
void gl_close_check_free(struct gl_close_check *k);

/* Closes p. Errors (GL_ERR_STATE, exit 7): already closed, still in
 * progress at now, or incomplete (gl_period_check: the message names each
 * cluster's ranges). With force an incomplete period is closed anyway and
 * its gaps are frozen with it (schema 009 closed_gap): every output of the
 * month states them. */
enum gl_status gl_period_close(const struct gl_config *c, struct gl_store *s,
                               const struct gl_price_table *prices, const struct gl_period *p,
                               int64_t now, struct gl_error *err);
enum gl_status gl_period_close_force(const struct gl_config *c, struct gl_store *s,
                                     const struct gl_price_table *prices,
                                     const struct gl_period *p, int64_t now, bool force,
                                     struct gl_error *err);

/* A closed period's statement loaded from its frozen figures (st->set;
 * schema 007) against the texts stored at close (the audit copy), for a
 * period closed before the digests (schema 011) existed: every
 * stored invoice JSON and Markdown, and the FOCUS CSV, must be what the
 * renderers print from the figures, byte for byte. An empty or missing text
 * is not compared (nothing to compare with). A difference is GL_ERR_STATE
 * (exit 7) naming the period, the format and the team: the database was
 * altered after the close, and neither version is printed (docs/specification.md "Integrity": fail
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
