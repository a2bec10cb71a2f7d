/*
 * store_admin — retention and backup of the database (part of the store
 * layer: it includes store_sql.h; README "Delivery, retention and
 * conventions").
 *
 * Pruning deletes the hourly `usage` rows of CLOSED periods: their frozen
 * invoices, FOCUS rows and CSV stay, so invoice and export print them as
 * before. A pruned period is marked by its collected_hour rows carrying
 * samples = -1 (the hours stay listed; their detail is gone): it takes no
 * more corrections (the corrections skip it; late data for it can no longer be
 * compared with what was billed) and what needs the hourly rows (summary,
 * anomalies, report) is refused for it rather than shown empty. Open
 * periods are never pruned.
 *
 * Backup copies the database with SQLite's online backup API in one read
 * transaction: a consistent snapshot while a run may be writing (WAL).
 */
#ifndef GL_STORE_ADMIN_H
#define GL_STORE_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "store.h"
#include "timeutil.h"

/* One period that prune takes (or would take). */
struct gl_prune_period {
    char period[8];
    int64_t usage_rows;
    int64_t hours; /* collected cluster-hours whose rows go */
};

struct gl_prune_report {
    struct gl_prune_period *periods;
    size_t n;
    int64_t bytes_before, bytes_after; /* the database's pages in use, after VACUUM */
};

void gl_prune_report_free(struct gl_prune_report *r);

/* Prunes the closed periods before `before` that still have usage rows.
 * An open period before it with usage rows is GL_ERR_STATE (nothing is
 * pruned). dry_run: only fills r. vacuum: compacts the file afterwards
 * (bytes_after). */
enum gl_status gl_admin_prune(struct gl_store *s, const struct gl_period *before, bool dry_run,
                              bool vacuum, struct gl_prune_report *r, struct gl_error *err);

/* retention.months for run: prunes the closed periods that ended more than
 * months whole months before the period of now; open ones are kept (and
 * logged), no VACUUM (freed pages are reused). *pruned: how many periods
 * it pruned (a pruned period takes no more corrections: the open period
 * that carried them reads differently from then on). */
enum gl_status gl_admin_prune_retention(struct gl_store *s, int months, int64_t now,
                                        size_t *pruned, struct gl_error *err);

/* Whether period (YYYY-MM) has been pruned. */
enum gl_status gl_admin_period_pruned(struct gl_store *s, const char *period, bool *pruned,
                                      struct gl_error *err);

/* A consistent copy of the database into path (written beside it and
 * renamed into place; a single file, journal mode DELETE). *bytes: its
 * size. */
enum gl_status gl_admin_backup(struct gl_store *s, const char *path, int64_t *bytes,
                               struct gl_error *err);

#endif
