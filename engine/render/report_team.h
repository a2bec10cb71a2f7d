/*
 * report_team — the team page's sections (report_team.c), private to
 * render/: report.c writes them between a team page's head and its
 * footer, and shows the demand-waiting tables on the fleet page too.
 */
#ifndef GL_REPORT_TEAM_H
#define GL_REPORT_TEAM_H

#include <stdbool.h>
#include <stdio.h>

#include "report_page.h"

/* The team page's sections, in order, in the format. */
void rp_team_sections_write(FILE *f, enum fmt fmt, const struct page_ctx *x);
/* GPU demand waiting, also on the fleet page (teams: with a team column):
 * GPU-hours waiting per cluster and model; the longest waits; what both
 * mean. */
void rp_tbl_pending_keys(const struct gl_pending *pd, bool teams, struct table *t);
void rp_tbl_pending_waits(const struct gl_pending *pd, bool teams, struct table *t);
extern const char rp_pending_note[];

#endif
