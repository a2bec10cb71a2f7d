/*
 * report — monthly team reports and the fleet page (HTML with inline SVG,
 * and a Markdown twin), from the invoices and the hourly rollups.
 */
#ifndef GL_REPORT_H
#define GL_REPORT_H

#include "config.h"
#include "error.h"
#include "invoice.h"
#include "store.h"

/* Writes DIR/report-<period>-<team>.html and .md for each invoice of set
 * (only team when not NULL) and DIR/fleet-<period>.html and .md. */
enum gl_status gl_report_write(const struct gl_config *c, struct gl_store *s,
                               const struct gl_invoice_set *set, const char *team,
                               const char *dir, struct gl_error *err);

#endif
