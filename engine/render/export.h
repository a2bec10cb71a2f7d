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

#include <stdbool.h>
#include <stdio.h>

#include "error.h"
#include "invoice.h"

/* Writes the CSV to out; fails (config error) on non-ASCII strings. */
enum gl_status gl_export_focus(const struct gl_invoice_set *set, FILE *out, size_t *rows,
                               struct gl_error *err);

/* Writes the sidecar metadata JSON (FOCUS 1.2 metadata): FocusVersion,
 * DataGenerator, the SchemaId the data references, the Schema (SchemaId,
 * CreationDate, ColumnDefinition with ColumnName/DataType, ProviderTagPrefixes
 * on Tags) and the period. csv: the CSV written (its header gives the
 * columns), or NULL for this engine's columns of c->focus_version. gaps: a
 * period closed with `close --force` although incomplete (invoice.h), listed
 * as x_IncompleteAtClose; none otherwise (the key is then absent). */
void gl_export_metadata(const struct gl_config *c, const char *period, bool closed,
                        const char *csv, size_t rows, const struct gl_gap *gaps, size_t ngaps,
                        FILE *out);

#endif
