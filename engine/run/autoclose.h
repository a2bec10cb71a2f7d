/*
 * autoclose — run's side of closing months (close.auto).
 *
 * A period is due once run's collection target (now − run.delay_minutes,
 * to the hour) is close.settle_hours past its end. With close.auto on,
 * each run closes every due open period that gl_period_check finds
 * complete (gl_period_close: one transaction, so a killed run leaves the
 * month open or closed, never half) and reports every due period it cannot
 * close, on every run: an error log line naming the period and each
 * cluster's missing, refused or unsettled hour ranges, and a
 * gpuledger_period_close_blocked series per blocking cluster (metrics.h).
 * A blocked period does not change run's exit status.
 *
 * Refused chunks (the shrink guard, a partial or failed response) are
 * recorded by collect and run alike (gl_close_note_refused), so that a
 * period stays blocked until those hours are stored again.
 */
#ifndef GL_AUTOCLOSE_H
#define GL_AUTOCLOSE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "price.h"
#include "store.h"

/* A due period run could not close, and a cluster it lacks hours of
 * (borrowed from the config; NULL: the close failed for another reason,
 * named in the log, and every cluster reports it). */
struct gl_close_blocked {
    char period[8];
    const char *cluster;
};

/* What one run's auto-close did: the periods it closed (ascending) and the
 * due periods it could not close. */
struct gl_autoclose {
    char (*closed)[8];
    size_t nclosed;
    struct gl_close_blocked *blocked;
    size_t nblocked;
};

/* Closes the due, complete open periods at now when c->close_auto is on
 * (nothing otherwise). Only a failure to read the database is an error;
 * a period that cannot be closed is logged and listed in out->blocked. */
enum gl_status gl_autoclose(const struct gl_config *c, struct gl_store *s,
                            const struct gl_price_table *prices, int64_t now,
                            struct gl_autoclose *out, struct gl_error *err);
void gl_autoclose_free(struct gl_autoclose *a);

/* Records the hours of a collection of cluster from..to that failed with
 * why as refused (GL_ERR_PARTIAL: the shrink guard, reason "shrink";
 * GL_ERR_PROM: the backend, e.g. a partial response, reason "backend";
 * other failures record nothing). Collection stops at the failed chunk,
 * which starts after the hours_stored hours stored and spans at most
 * collection.chunk_hours. A failure to record is logged (warning). */
void gl_close_note_refused(const struct gl_config *c, struct gl_store *s, const char *cluster,
                           int64_t from, int64_t to, int64_t hours_stored,
                           const struct gl_error *why, int64_t now);

#endif
