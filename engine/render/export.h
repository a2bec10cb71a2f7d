/*
 * export — the FOCUS CSV for finance (see FOCUS.md), in each FOCUS version
 * this engine writes (1.2, 1.3: each its list of columns, export.c).
 *
 * Reads: an invoice set. Writes one row per invoice line × UTC day, FOCUS
 * columns first (alphabetical), then x_ columns. String cells go through
 * libcsv quoting and are neutralised against formula injection; numbers and
 * date-times are bare; nulls are empty unquoted fields. The version is the
 * caller's (a renderer row's attribute, render.c), never read from the
 * config here.
 */
#ifndef GL_EXPORT_H
#define GL_EXPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "error.h"
#include "invoice.h"

/* Writes the CSV of FOCUS version (12 = 1.2, 13 = 1.3) to out; fails
 * (config error) on non-ASCII strings, (runtime error) on a version this
 * engine does not write. */
enum gl_status gl_export_focus(const struct gl_invoice_set *set, int version, FILE *out,
                               size_t *rows, struct gl_error *err);

/* The FOCUS version (12, 13) of a CSV as written, told by its header: what
 * a period closed before its figures were stored kept. */
int gl_focus_version_of_csv(const char *csv);

/* Writes the sidecar metadata JSON (FOCUS metadata) of version: FocusVersion,
 * DataGenerator, the SchemaId the data references, the Schema (SchemaId,
 * CreationDate, ColumnDefinition with ColumnName/DataType, ProviderTagPrefixes
 * on Tags) and the period. csv: the CSV written (its header gives the
 * columns; a state error when it is not of version), or NULL for this
 * engine's columns of version. gaps: a period closed with `close --force`
 * although incomplete (invoice.h), listed as x_IncompleteAtClose; none
 * otherwise (the key is then absent). */
enum gl_status gl_export_metadata(int version, const struct gl_config *c, const char *period,
                                  bool closed, const char *csv, size_t rows,
                                  const struct gl_gap *gaps, size_t ngaps, FILE *out,
                                  struct gl_error *err);

#endif
