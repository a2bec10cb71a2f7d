/*
 * output — writing a period's invoices, FOCUS CSV, summary and anomalies
 * to files or stdout, live for an open period and frozen for a closed one.
 * Files are written to a temporary name and renamed, so a reader (or a run
 * killed mid-way) never sees half a file.
 */
#ifndef GL_OUTPUT_H
#define GL_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "error.h"
#include "price.h"
#include "store.h"
#include "timeutil.h"

/* Writes data to path through path.tmp + rename. */
enum gl_status gl_write_atomic(const char *path, const char *data, size_t len,
                               struct gl_error *err);

/* Invoices of p (team NULL = all): to dir as invoice-<period>-<team>.json|.md,
 * or to stdout when dir is NULL (JSON: {"period", "invoices": [...]}).
 * *count receives the number of invoices. A team with no invoice is a usage
 * error when team is given. */
enum gl_status gl_output_invoices(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, const struct gl_period *p,
                                  const char *team, bool md, const char *dir, size_t *count,
                                  struct gl_error *err);

/* The FOCUS CSV of p to path (plus path.metadata.json), or stdout. */
enum gl_status gl_output_focus(const struct gl_config *c, struct gl_store *s,
                               const struct gl_price_table *prices, const struct gl_period *p,
                               const char *path, size_t *rows, struct gl_error *err);

#endif
