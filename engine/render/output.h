/*
 * output — writing a period's invoices, FOCUS CSV, summary and anomalies
 * to files or stdout, live for an open period and frozen for a closed one.
 * Files are written to a temporary name and renamed, so a reader (or a run
 * killed mid-way) never sees half a file; `run` writes a period's whole
 * tree into a temporary folder and swaps it in (gl_output_tree_swap), so
 * a reader never sees half a period either.
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
#include "util.h"

/* The invoices of a statement built with GL_ST_INVOICES (team NULL = all;
 * the frozen ones of a closed period) in r's format (invoice-json or
 * invoice-md): to dir as invoice-<period>-<team>.json|.md, or what the
 * row prints to stdout when dir is NULL (JSON: {"period", "invoices":
 * [...]}). *count receives the number of files written. A team with no
 * invoice is a usage error when team is given. */
struct gl_statement;
struct gl_renderer;
enum gl_status gl_output_invoices(const struct gl_statement *st, const struct gl_renderer *r,
                                  const char *team, const char *dir, size_t *count,
                                  struct gl_error *err);

/* The FOCUS CSV of such a statement in csv's version (a focus-csv row)
 * to path (plus path.metadata.json), or stdout; *rows receives its rows. */
enum gl_status gl_output_focus(const struct gl_statement *st, const struct gl_renderer *csv,
                               const char *path, size_t *rows, struct gl_error *err);

/* Removes path: a file, or a folder with everything under it (symbolic
 * links removed, never followed). A missing path is not an error. */
enum gl_status gl_output_tree_remove(const char *path, struct gl_error *err);
/* Removes the entries of folder dir that match() accepts (NULL: all), each
 * a whole tree; each one removed for match() is logged as the temporary
 * folder of an interrupted run. verb names a failure to open dir. */
enum gl_status gl_output_remove_entries(const char *dir, bool (*match)(const char *name),
                                        const char *verb, struct gl_error *err);

/* The regular files under dir as "<path relative to dir>\t<size>\n" lines,
 * sorted, appended to out (which holds "" at least on success). Every
 * folder of the tree is fsynced on the way. */
enum gl_status gl_output_tree_files(const char *dir, struct gl_buf *out, struct gl_error *err);

/* Puts the folder tmp in place of final in one step: renameat2
 * RENAME_EXCHANGE when final exists (then the old tree, now at tmp, is
 * removed), a plain rename when it does not. On file systems without
 * RENAME_EXCHANGE the old tree is first renamed to .<final>.old-<pid>
 * beside it. The parent folder is fsynced. */
enum gl_status gl_output_tree_swap(const char *tmp, const char *final, struct gl_error *err);

#endif
