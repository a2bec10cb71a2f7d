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

/* A failed step of a query summing period p's usage: SQLite's "integer
 * overflow" (a SUM beyond int64: SQLite checks every integer SUM) becomes a
 * runtime error naming the period and the team, cluster, model and kind
 * whose MiB·s pass 2^63 (located with TOTAL(), a float used for naming
 * only); any other failure is gl_store_fail's. */
enum gl_status gl_usage_fail(struct gl_store *s, const struct gl_period *p, const char *what,
                             struct gl_error *err);

/* Per device seen in a period (?1 start, ?2 end; node pseudo-devices left
 * out), ordered by cluster, node, uuid, gpu_i_id: cluster, uuid, gpu_i_id,
 * gpu_i_profile, model, hostname, then the MiB·s of capacity, memory_used,
 * reserved, unattributed, idle, excess, and the unknown_steps count. */
extern const char gl_summary_devices_sql[];

/* The summary of a statement built with GL_ST_FLEET, as JSON or Markdown. */
struct gl_statement;
enum gl_status gl_summary_json(const struct gl_statement *st, FILE *out, struct gl_error *err);
enum gl_status gl_summary_md(const struct gl_statement *st, FILE *out, struct gl_error *err);

#endif
