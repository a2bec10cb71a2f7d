/*
 * export — the FOCUS 1.2 CSV for finance (see FOCUS.md).
 *
 * Reads: an invoice set. Writes one row per invoice line × UTC day, FOCUS
 * columns first (alphabetical), then x_ columns. String cells go through
 * libcsv quoting and are neutralised against formula injection; numbers and
 * date-times are bare; nulls are empty unquoted fields.
 */
#ifndef GL_EXPORT_H
#define GL_EXPORT_H

#include <stdio.h>

#include "error.h"
#include "invoice.h"

/* Writes the CSV to out; fails (config error) on non-ASCII strings. */
enum gl_status gl_export_focus(const struct gl_invoice_set *set, FILE *out, size_t *rows,
                               struct gl_error *err);

/* Writes the sidecar metadata JSON (FOCUS version, generator, period). */
void gl_export_metadata(const struct gl_invoice_set *set, size_t rows, FILE *out);

#endif
