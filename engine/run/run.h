/*
 * run — what the CronJob calls. For every cluster: collect from its
 * watermark (or run.start), re-pulling run.repull_hours for late samples, up
 * to now − run.delay_minutes; the watermark advances with each stored chunk.
 * Then every open period whose outputs do not reflect the stored data, the
 * prices and the config (outstate.h), or whose files are missing, is
 * written to out_dir/<period>/ (invoices, FOCUS CSV, fleet summary,
 * anomalies and reports) as a whole tree swapped into place. Partial
 * failure (a cluster or an output failed, the rest done) is GL_ERR_PARTIAL.
 */
#ifndef GL_RUN_H
#define GL_RUN_H

#include <stdint.h>

#include "config.h"
#include "error.h"
#include "price.h"
#include "store.h"

/* fig (may be NULL) receives each cluster's collection figures for
 * gl_metrics_emit (metrics.h), which the caller calls whatever the outcome. */
struct gl_run_figures;
enum gl_status gl_run(const struct gl_config *c, struct gl_store *s,
                      const struct gl_price_table *prices, const char *out_dir, int64_t now,
                      struct gl_run_figures *fig, struct gl_error *err);

#endif
