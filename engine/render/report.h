/*
 * report — monthly team reports and the fleet page (HTML with inline SVG,
 * and a Markdown twin), from the invoices and the hourly rollups.
 *
 * Reads: the invoice set (lines, totals, waste, compute indicator,
 * anomalies, price entries) and, through SQL, the team's daily memory_used
 * and allocated rollups, its pods, and the fleet's per-model capacity,
 * idle and overhead. Writes, each atomically (temporary file + rename):
 *   DIR/report-<period>-<team>.html and .md   one pair per team
 *   DIR/fleet-<period>.html and .md           all teams + idle + overhead
 * The HTML is self-contained: inline CSS and SVG, no script, no external
 * URL. Every figure is printed the way the invoice prints it (exact
 * decimal strings, never binary floating point). Label-derived strings
 * (team, namespace, pod, model, cluster, node) are escaped for HTML and
 * Markdown: they are hostile input.
 */
#ifndef GL_REPORT_H
#define GL_REPORT_H

#include <stdio.h>

#include "error.h"
#include "statement.h"

/* How many pods the "top pods" section lists. */
#define GL_REPORT_TOP_PODS GL_STATEMENT_TOP_PODS

/* The pages as renderers (render.h): team page i of st->set; its file
 * name (no directory), malloc'd (free()):
 * report-<period>-<gl_safe_name(team)>.<ext>, far below NAME_MAX; the
 * fleet page. */
enum gl_status gl_report_team_html(const struct gl_statement *st, size_t i, FILE *out,
                                   struct gl_error *err);
enum gl_status gl_report_team_md(const struct gl_statement *st, size_t i, FILE *out,
                                 struct gl_error *err);
char *gl_report_team_file(const char *period, const char *team, const char *ext);
enum gl_status gl_report_fleet_html(const struct gl_statement *st, size_t i, FILE *out,
                                    struct gl_error *err);
enum gl_status gl_report_fleet_md(const struct gl_statement *st, size_t i, FILE *out,
                                  struct gl_error *err);

#endif
