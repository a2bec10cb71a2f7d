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
#include "invoice_model.h"
#include "period.h"
#include "price.h"
#include "store.h"
#include "timeutil.h"

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

#endif
