/*
 * summary — the fleet view of a period: per cluster and GPU model, and per
 * device, capacity = memory billed to teams + idle + overhead (driver-
 * reserved + unattributed), with excess and unknown usage reported.
 */
#ifndef GL_SUMMARY_H
#define GL_SUMMARY_H

#include <stdio.h>

#include "error.h"
#include "store.h"
#include "timeutil.h"

/* Per (cluster, model) of a period (?1 start, ?2 end): cluster, model, then
 * the MiB·s of capacity, memory_used, reserved_unused_billed, reserved,
 * unattributed, idle, excess. The report's fleet page uses it too. */
extern const char gl_summary_models_sql[];

/* Writes the summary as JSON (md = false) or Markdown to out. */
enum gl_status gl_summary_write(struct gl_store *s, const struct gl_period *p, bool md, FILE *out,
                                struct gl_error *err);

#endif
