/*
 * summary — the fleet view of a period: per cluster and GPU model, and per
 * device, capacity = memory billed to teams + idle + overhead (driver-
 * reserved + unattributed), with excess and unknown usage reported.
 * Renderers of a statement (render.h); the sums are query.c's.
 */
#ifndef GL_SUMMARY_H
#define GL_SUMMARY_H

#include <stdio.h>

#include "error.h"

/* The summary of a statement built with GL_ST_FLEET, as JSON or Markdown. */
struct gl_statement;
enum gl_status gl_summary_json(const struct gl_statement *st, FILE *out, struct gl_error *err);
enum gl_status gl_summary_md(const struct gl_statement *st, FILE *out, struct gl_error *err);

#endif
