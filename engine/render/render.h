/*
 * render — the output formats: pure functions of a period statement,
 * registered in one table (gl_renderers).
 *
 * Reads: a statement (statement.h). Writes: text to a FILE; the helpers
 * below put a renderer's output into a file atomically (temporary name +
 * rename), or every renderer of the table into a period's folder (`run`).
 * Each format has one escaper: HTML (report.c html), Markdown (util.c
 * gl_md_cell), CSV (libcsv, export.c), JSON (cJSON).
 *
 * Adding an output format:
 *   1. write `enum gl_status render_x(const struct gl_statement *st, size_t i,
 *      FILE *out, struct gl_error *err)` in a new engine/render/<x>.c (or
 *      beside its siblings), reading only the statement (i = the team for
 *      a per-team scope);
 *   2. add one row to gl_renderers[] in render.c: name, file name pattern
 *      (%p = period, %t = the team's file name), folder in a period's tree,
 *      scope, the statement parts it reads, the function;
 *   3. add the source to meson.build and an expected file to
 *      tests/golden (golden_test.py --regen, then read the diff).
 * `run` writes it into every period's tree from then on; a command that
 * prints it names it with gl_renderer_find (today `--format` of invoice,
 * summary and anomalies knows json|md only: cli/commands.c format_md).
 */
#ifndef GL_RENDER_H
#define GL_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "error.h"
#include "statement.h"

enum gl_render_scope {
    GL_SCOPE_PERIOD,  /* one output per period */
    GL_SCOPE_INVOICE, /* one per invoice as shown (the frozen ones when closed) */
    GL_SCOPE_TEAM,    /* one per team page (live invoices: st->set) */
};

typedef enum gl_status (*gl_render_fn)(const struct gl_statement *st, size_t i, FILE *out,
                                       struct gl_error *err);

struct gl_renderer {
    const char *name;   /* "invoice-json", "report-html", ... */
    const char *file;   /* file name pattern: %p period, %t team file name (gl_safe_name) */
    const char *folder; /* folder in a period's tree ("" = the tree itself); NULL: not in it */
    enum gl_render_scope scope;
    unsigned parts;     /* statement parts read (enum gl_statement_part) */
    gl_render_fn fn;
};

extern const struct gl_renderer gl_renderers[];
extern const size_t gl_nrenderers;

/* The renderer named name, or NULL. */
const struct gl_renderer *gl_renderer_find(const char *name);

/* How many outputs of scope st has, and the team id of output i. */
size_t gl_render_count(const struct gl_statement *st, enum gl_render_scope scope);
const char *gl_render_team(const struct gl_statement *st, enum gl_render_scope scope, size_t i);

/* The file name of output i of r (malloc'd, free()). */
char *gl_render_file_name(const struct gl_renderer *r, const struct gl_statement *st, size_t i);

/* Renders output i of r into path atomically. */
enum gl_status gl_render_to_file(const struct gl_renderer *r, const struct gl_statement *st,
                                 size_t i, const char *path, struct gl_error *err);

/* Renders every output of r (only team's when not NULL) into dir under its
 * file name; *count receives how many were written. dir must exist. */
enum gl_status gl_render_all(const struct gl_renderer *r, const struct gl_statement *st,
                             const char *team, const char *dir, size_t *count,
                             struct gl_error *err);

/* A tree written beside the one it replaces: prev is that tree (NULL:
 * none); a file whose bytes equal prev's file of the same name is
 * hard-linked from it, not written (keepfile.h). The counts of both. */
struct gl_render_keep {
    const char *prev;
    size_t written, unchanged;
};

/* Every renderer of the table with a folder into dir/<folder>/ (folders
 * created): a period's whole tree, from one statement; keep: NULL, or the
 * tree it replaces and the counts. */
enum gl_status gl_render_tree(const struct gl_statement *st, const char *dir,
                              struct gl_render_keep *keep, struct gl_error *err);

/* gl_render_all of every team into dir, a folder of such a tree. */
enum gl_status gl_render_all_kept(const struct gl_renderer *r, const struct gl_statement *st,
                                  const char *dir, struct gl_render_keep *keep,
                                  struct gl_error *err);

/* Outputs a command prints with a team filter (NULL = every team). */
enum gl_status gl_render_anomalies_json(const struct gl_statement *st, const char *team,
                                        FILE *out);
enum gl_status gl_render_anomalies_md(const struct gl_statement *st, const char *team,
                                      FILE *out);
/* The FOCUS rows of a statement built with GL_ST_INVOICES. */
enum gl_status gl_render_focus_rows(const struct gl_statement *st, size_t *rows,
                                    struct gl_error *err);

/* The report pages (report.h) of st: writes DIR/report-<period>-<team>.html and .md for each invoice of set
 * (only team when not NULL; a team with no invoice is a usage error) and
 * DIR/fleet-<period>.html and .md. DIR is created when missing (one level).
 * Team ids go through gl_safe_name, as invoice file names do, so hostile ids
 * never leave DIR. Each file is replaced atomically or not at all. st is
 * built with GL_ST_PAGES. */
enum gl_status gl_report_write(const struct gl_statement *st, const char *team, const char *dir,
                               struct gl_error *err);

/* Output i of renderer name into a malloc'd string; NULL on error (err
 * set) or when memory ran out (err untouched). */
char *gl_render_text(const struct gl_statement *st, const char *name, size_t i,
                     struct gl_error *err);

#endif
