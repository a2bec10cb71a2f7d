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
 * Adding an output format (two files, plus tests and docs):
 *   1. write its function, `enum gl_status x(const struct gl_renderer *r,
 *      const struct gl_statement *st, size_t i, FILE *out, struct gl_error
 *      *err)`, in engine/render/ (a new <x>.c listed in meson.build, or beside
 *      its siblings), reading only the statement and the row's attributes
 *      (i = the invoice or team for a per-invoice or per-team scope);
 *   2. add one row to gl_renderers[] in render.c: its name, the command
 *      that prints it and the --format value that picks it there, the file
 *      name pattern (%p = period, %t = the team's file name), folder in a
 *      period's tree, scope, the statement parts it reads, the function
 *      (and a print function when the command's stdout differs from the
 *      file: several outputs in one document, or a --team filter).
 * `run` writes it into every period's tree from then on; the command
 * accepts the new --format value from the table (cli/commands.c resolves
 * (command, --format) to a row in one place, and its usage error lists the
 * row formats of that command). Then an expected file in tests/golden
 * (golden_test.py --regen, then read the diff) and the format in
 * docs/interfaces.md. A FOCUS version is one row per output (CSV,
 * metadata) with its version as the row's `focus`, and its bit on the
 * columns it writes in export.c's column list.
 */
#ifndef GL_RENDER_H
#define GL_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "error.h"
#include "statement.h"
#include "util.h"

enum gl_render_scope {
    GL_SCOPE_PERIOD,  /* one output per period */
    GL_SCOPE_INVOICE, /* one per invoice as shown (the frozen ones when closed) */
    GL_SCOPE_TEAM,    /* one per team page (live invoices: st->set) */
};

struct gl_renderer;
typedef enum gl_status (*gl_render_fn)(const struct gl_renderer *r, const struct gl_statement *st,
                                       size_t i, FILE *out, struct gl_error *err);
/* What a command prints on stdout for a row: every output of it in one
 * document, only team's when team is not NULL. */
typedef enum gl_status (*gl_render_print_fn)(const struct gl_renderer *r,
                                             const struct gl_statement *st, const char *team,
                                             FILE *out, struct gl_error *err);

struct gl_renderer {
    const char *name;    /* "invoice-json", "report-html", ...: one output (a FOCUS
                            output has one row per version under one name) */
    const char *command; /* the command that prints it (NULL: none) */
    const char *format;  /* the value of that command's --format picking it; of a
                            FOCUS row, its version (export --focus-version) */
    int focus;           /* the FOCUS version it writes (12 = 1.2, 13 = 1.3); 0: none.
                            A period's tree holds the version its statement is in */
    const char *file;    /* file name pattern: %p period, %t team file name (gl_safe_name) */
    const char *folder;  /* folder in a period's tree ("" = the tree itself); NULL: not in it */
    enum gl_render_scope scope;
    unsigned parts;      /* statement parts read (enum gl_statement_part) */
    gl_render_fn fn;
    gl_render_print_fn print; /* the command's stdout; NULL: output 0 of fn */
};

extern const struct gl_renderer gl_renderers[];
extern const size_t gl_nrenderers;

/* The renderer named name (a FOCUS output: its first version), or NULL. */
const struct gl_renderer *gl_renderer_find(const char *name);
/* The row of the FOCUS output name in version (12, 13), or NULL. */
const struct gl_renderer *gl_renderer_focus(const char *name, int version);
/* The row command prints for the value format of its --format (export:
 * --focus-version), or NULL when it has none. */
const struct gl_renderer *gl_renderer_of(const char *command, const char *format);
/* The values of --format command accepts, in table order, as text: "json
 * or md", "json, csv or md" (appended to out; false when memory ran out). */
bool gl_renderer_formats(const char *command, struct gl_buf *out);

/* The FOCUS version (12, 13) st is in: a closed period's as closed (its
 * frozen config, or the header of the CSV stored at close), else the
 * config's billing.focus_version. */
int gl_render_focus_version(const struct gl_statement *st);

/* Output i of r (its function, r handed in). */
enum gl_status gl_render_output(const struct gl_renderer *r, const struct gl_statement *st,
                                size_t i, FILE *out, struct gl_error *err);
/* What a command prints for r: r->print, else output 0. */
enum gl_status gl_render_print(const struct gl_renderer *r, const struct gl_statement *st,
                               const char *team, FILE *out, struct gl_error *err);

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

/* The rows of the FOCUS CSV of st in version (12, 13; st built with
 * GL_ST_INVOICES), counted by writing it nowhere: what fails it fails. */
enum gl_status gl_render_focus_rows(const struct gl_statement *st, int version, size_t *rows,
                                    struct gl_error *err);

/* The report pages (report.h) of st: writes DIR/report-<period>-<team>.html and .md for each invoice of set
 * (only team when not NULL; a team with no invoice is a usage error) and
 * DIR/fleet-<period>.html and .md. DIR is created when missing (one level).
 * Team ids go through gl_safe_name, as invoice file names do, so hostile ids
 * never leave DIR. Each file is replaced atomically or not at all. st is
 * built with GL_ST_PAGES. */
enum gl_status gl_report_write(const struct gl_statement *st, const char *team, const char *dir,
                               struct gl_error *err);

/* Output i of renderer name (a FOCUS output: in st's version) into a
 * malloc'd string; NULL on error (err set) or when memory ran out (err
 * untouched). */
char *gl_render_text(const struct gl_statement *st, const char *name, size_t i,
                     struct gl_error *err);

#endif
