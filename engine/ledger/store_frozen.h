/*
 * store_frozen — a closed period's statement as figures (schema 007).
 *
 * Writes (in close's transaction, gl_store_freeze): every figure of the
 * period's invoice set — the config fields the renderers read, the price
 * entries its lines use, each invoice's header and total, its lines (charged
 * and the corrections it carried) with their days, information rows and
 * anomalies. Reads them back into the same in-memory invoice set an open
 * period's build gives (invoice.h), so the normal renderers print a closed
 * month and a format added later can render it. A period closed before
 * schema 007 has no figures (*out NULL): its stored texts are printed.
 */
#ifndef GL_STORE_FROZEN_H
#define GL_STORE_FROZEN_H

#include "config.h"
#include "error.h"
#include "invoice_model.h"
#include "store.h"
#include "timeutil.h"

/* Stores set's figures as period set->period.name's (call inside the
 * transaction that writes closed_period). */
enum gl_status gl_store_freeze_figures(struct gl_store *s, const struct gl_invoice_set *set,
                                       struct gl_error *err);

/* Loads closed period p's invoice set from its figures: *out NULL (GL_OK)
 * when it has none. First its digests are checked (store_digest.h): rows
 * altered after the close are GL_ERR_STATE naming period and table;
 * *sealed tells whether it had digests (false: closed before schema 011,
 * to be checked against its stored texts, then gl_store_frozen_seal). The
 * set's config (set->cfg, owned by it) is a copy of live with every field
 * a renderer reads taken from the frozen record (frozen_period,
 * frozen_setting); closed_at is set. Figures that do not add up (a line's
 * days against its amount, MiB·s or GB-hours, the lines against the total)
 * or do not fit together are GL_ERR_STATE naming period and team. */
enum gl_status gl_store_frozen_load(struct gl_store *s, const struct gl_config *live,
                                    const struct gl_period *p, int64_t closed_at,
                                    struct gl_invoice_set **out, bool *sealed,
                                    struct gl_error *err);

/* Seals a period closed before schema 011 whose figures were just checked
 * against its stored texts: stores the settings (from live: that close
 * did not record them) and the digests, in their own write transaction.
 * A period sealed meanwhile is left as it is. */
enum gl_status gl_store_frozen_seal(struct gl_store *s, const struct gl_config *live,
                                    const char *period, int64_t now, struct gl_error *err);

/* What closing a period stores, in one transaction (close.c builds it):
 * the closed_period row with its FOCUS CSV, each invoice's texts, and the
 * exact figures of every FOCUS key (struct gl_frozen_row, query.h). */
struct gl_frozen_text {
    const char *team, *json, *md;
};
struct gl_frozen_row;
struct gl_invoice_set;
struct gl_freeze {
    const char *period;
    int64_t closed_at;
    const char *focus_csv;
    const struct gl_frozen_text *invoices;
    size_t ninvoices;
    const struct gl_frozen_row *rows;
    size_t nrows;
    const struct gl_invoice_set *figures; /* the invoice set as figures (store_frozen.h) */
};
enum gl_status gl_store_freeze(struct gl_store *s, const struct gl_freeze *f,
                               struct gl_error *err);

#endif
