/*
 * report_page — what the report pages (report.c) and the team page's
 * sections (report_team.c) share, private to render/: the page's context,
 * its escapers and number formats, the chart colours, and the table model
 * that writes one table as HTML or as Markdown.
 */
#ifndef GL_REPORT_PAGE_H
#define GL_REPORT_PAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "money.h"
#include "statement.h"

#define COLOR_USED "#2563eb"
#define COLOR_ALLOC "#bfdbfe"
#define COLOR_IDLE "#cbd5e1"
#define COLOR_OVERHEAD "#64748b"

/* What a page is written from: a team page's invoice, usage and extras
 * (NULL on the fleet page) and the statement they are of. */
struct page_ctx {
    const struct gl_config *c;
    const struct gl_invoice_set *set;
    const struct gl_invoice *inv;
    const struct gl_team_usage *u;
    const struct gl_day_axis *ax;
    const struct gl_team_extra *e; /* workloads, trend, waste in money */
    const struct gl_statement *st;
};

enum fmt { FMT_HTML, FMT_MD };

/* ---- tables: one model, written as HTML or Markdown ----
 *
 * A section's table is built once (cells as text) and written by either
 * format: the figures and their order cannot differ between the HTML page
 * and its Markdown twin. Label-derived cells are escaped by the format's
 * one escaper (html, md); the rest is our own text and figures. */

enum { COL_N = 1, COL_T = 2, COL_MD_RIGHT = 4 }; /* class "n" / "t" in HTML; ---: in MD */
/* escaped; <code> in HTML; estimated; <b> in HTML (an alarm); a report link (text = the
 * file name without its extension: .html or .md by format) */
enum { CELL_LABEL = 1, CELL_CODE = 2, CELL_EST = 4, CELL_ALERT = 8, CELL_LINK = 16 };

#define TABLE_COLS 12

struct tcell {
    char *text;
    unsigned flags;
    const char *swatch; /* HTML: a colour swatch before the text */
    const char *team;   /* HTML: the cell's data-team attribute */
};

struct table {
    size_t ncols;
    const char *head[TABLE_COLS];
    unsigned col[TABLE_COLS];
    char head_buf[2][96]; /* headings with the currency */
    struct tcell *cells;  /* nrows × ncols */
    size_t nrows, cap;
    bool wide;
    bool sum;             /* a total row: sum_bold sum_rest ... sum_value */
    char sum_bold[96], sum_rest[96], sum_value[96];
};


/* HTML text and attribute values: the five characters that matter, and
 * control characters (never meaningful in a label) as spaces. */
void rp_html(FILE *f, const char *s);
/* Markdown: the one escaper of the format (util.c). */
void rp_md(FILE *f, const char *s);
/* The first max_cp code points of s, with "…" when cut, for SVG labels
 * (the full text goes in the element's <title>). */
void rp_shorten(const char *s, size_t max_cp, char *buf, size_t n);
/* A figure with 9 decimals for reading: rounded half-even to 2 decimals,
 * thousands grouped with commas ("12,345.68"). */
void rp_fmt_read(gl_i128 nano, char *buf, size_t n);
/* MiB·s as GB-hours for reading (rp_fmt_read). */
void rp_fmt_gbh(gl_i128 mib_s, char *buf, size_t n);
/* part / whole as a percentage with one decimal ("12.3%"), "—" when whole
 * is 0. */
void rp_fmt_share(gl_i128 part, gl_i128 whole, char *buf, size_t n);
/* The amount of a figure in minor units as "12.34 EUR". */
void rp_fmt_money(const struct gl_config *c, gl_i128 minor, char *buf, size_t n);
const char *rp_kind_label(enum gl_line_kind kind);
bool rp_is_share(enum gl_line_kind k);
/* Where idle and overhead go under the configured policy, as a phrase. */
const char *rp_policy_text(const struct gl_config *c);
/* v / max of span pixels, floored; 0 when max is 0. */
int rp_px(gl_i128 v, gl_i128 max, int span);
/* A legend's colour swatch and its label (HTML). */
void rp_swatch(FILE *f, const char *color, const char *label);

/* Column head of the next column (flags COL_*); a row at the end; cell k
 * of the last row (flags CELL_*: our text with 0, else a label); the last
 * row's cell k; the table freed; the table written in either format. */
void rp_table_col(struct table *t, const char *head, unsigned flags);
/* Columns from a list: each heading (a literal) and its flags. */
struct rp_col {
    const char *head;
    unsigned flags;
};
void rp_table_cols(struct table *t, const struct rp_col *cols, size_t n);
#define RP_COLS(t, cols) rp_table_cols((t), (cols), sizeof(cols) / sizeof *(cols))
void rp_table_row(struct table *t);
void rp_table_cell(struct table *t, size_t k, unsigned flags, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
struct tcell *rp_table_last(struct table *t, size_t k);
void rp_table_free(struct table *t);
/* Cell k of the last row: MiB·s as GB-hours; part of whole as a share. */
void rp_cell_gbh(struct table *t, size_t k, gl_i128 mib_s);
void rp_cell_share(struct table *t, size_t k, gl_i128 part, gl_i128 whole);
void rp_table_html(FILE *f, const struct table *t);
void rp_table_md(FILE *f, const struct table *t);
/* Builds a table with build and writes it in the format. */
void rp_table_write(FILE *f, enum fmt fmt, const struct page_ctx *x,
                    void (*build)(const struct page_ctx *x, struct table *t));
/* A section's heading in the format (first: the page's first section). */
void rp_heading(FILE *f, enum fmt fmt, bool first, const char *title);
/* `text` as code: <code> in HTML, backquotes in Markdown; escaped. */
void rp_code(FILE *f, enum fmt fmt, const char *text);

#endif
