/*
 * unitcost — the cost per unit of work of a statement (GL_ST_UNIT_COST) as
 * JSON, CSV (the `run` companion file beside the FOCUS export) and
 * Markdown: one row per workload and unit word; a workload with cost and
 * no work says "no work recorded" (no figure per unit).
 */
#ifndef GL_RENDER_UNITCOST_H
#define GL_RENDER_UNITCOST_H

#include <stdio.h>

#include "error.h"
#include "statement.h"

/* What a cost per unit is given per: "1M tokens", "1k requests", "step",
 * "1 <unit>" (the pages share it). */
void gl_unit_cost_per_label(const struct gl_unit_work *w, char *buf, size_t n);

enum gl_status gl_unit_cost_json(const struct gl_statement *st, size_t i, FILE *out,
                                 struct gl_error *err);
enum gl_status gl_unit_cost_csv(const struct gl_statement *st, size_t i, FILE *out,
                                struct gl_error *err);
enum gl_status gl_unit_cost_md(const struct gl_statement *st, size_t i, FILE *out,
                               struct gl_error *err);

#endif
