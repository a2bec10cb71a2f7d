/* report_page — the pieces of a report page: escapers, number formats,
 * the table model and its two writers (see report_page.h). */
#include "report_page.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ------------------------------------------------------------ formatting */

/* HTML text and attribute values: the five characters that matter, and
 * control characters (never meaningful in a label) as spaces. */
void rp_html(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        switch (ch) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(ch < 0x20 || ch == 0x7f ? ' ' : ch, f);
        }
    }
}

/* Markdown: the one escaper of the format (util.c). */
void rp_md(FILE *f, const char *s)
{
    gl_md_cell(f, s);
}

/* The first max_cp code points of s, with "…" when cut, for SVG labels
 * (the full text goes in the element's <title>). */
void rp_shorten(const char *s, size_t max_cp, char *buf, size_t n)
{
    size_t i = 0, cp = 0;
    while (s[i] && cp < max_cp) {
        i++;
        while ((s[i] & 0xC0) == 0x80)
            i++;
        cp++;
    }
    if (!s[i] && i < n) {
        memcpy(buf, s, i + 1);
        return;
    }
    if (n < 4) {
        if (n)
            buf[0] = '\0';
        return;
    }
    /* leave room for the ellipsis; cut on a code point boundary */
    size_t keep = i < n - 4 ? i : n - 4;
    while (keep > 0 && (s[keep] & 0xC0) == 0x80)
        keep--;
    memcpy(buf, s, keep);
    memcpy(buf + keep, "\xe2\x80\xa6", 4);
}

/* A figure with 9 decimals for reading: rounded half-even to 2 decimals,
 * thousands grouped with commas ("12,345.68"). The pages are for reading;
 * the invoice JSON and the FOCUS CSV keep the exact figures. */
#define READ_DECIMALS 2
void rp_fmt_read(gl_i128 nano, char *buf, size_t n)
{
    char d[80];
    gl_dec_format(gl_div_half_even(nano, gl_pow10(GL_GBH_DECIMALS - READ_DECIMALS)),
                  READ_DECIMALS, d, sizeof d);
    const char *digits = d[0] == '-' ? d + 1 : d;
    size_t int_len = strcspn(digits, ".");
    size_t o = 0;
    if (digits != d && o + 1 < n)
        buf[o++] = '-';
    for (size_t i = 0; digits[i] && o + 1 < n; i++) {
        if (i && i < int_len && (int_len - i) % 3 == 0 && o + 2 < n)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    if (n)
        buf[o < n ? o : n - 1] = '\0';
}

void rp_fmt_gbh(gl_i128 mib_s, char *buf, size_t n)
{
    rp_fmt_read(gl_gbh_nano(mib_s), buf, n);
}

/* part / whole as a percentage with one decimal ("12.3%"), "—" when whole
 * is 0. */
void rp_fmt_share(gl_i128 part, gl_i128 whole, char *buf, size_t n)
{
    if (whole <= 0) {
        snprintf(buf, n, "—");
        return;
    }
    char d[64];
    gl_dec_format(gl_div_half_even(part * 1000, whole), 1, d, sizeof d);
    snprintf(buf, n, "%s%%", d);
}

const char *rp_kind_label(enum gl_line_kind kind)
{
    switch (kind) {
    case GL_LINE_MEMORY_USED: return "Memory used";
    case GL_LINE_RESERVED_UNUSED: return "Reserved-unused";
    case GL_LINE_IDLE_SHARE: return "Idle share";
    case GL_LINE_OVERHEAD_SHARE: return "Overhead share";
    case GL_LINE_NKINDS: break;
    }
    return gl_line_kind_name(kind);
}

bool rp_is_share(enum gl_line_kind k)
{
    return k == GL_LINE_IDLE_SHARE || k == GL_LINE_OVERHEAD_SHARE;
}

const char *rp_policy_text(const struct gl_config *c)
{
    switch (c->idle_policy) {
    case GL_IDLE_PROPORTIONAL:
        return "spread over the teams billed on each GPU model and day, in proportion to "
               "their billed GB-hours";
    case GL_IDLE_UNBILLED:
        return "reported but not billed";
    case GL_IDLE_PLATFORM:
        break;
    }
    return "billed to the platform team";
}

/* v / max of span pixels, floored; 0 when max is 0. */
int rp_px(gl_i128 v, gl_i128 max, int span)
{
    if (max <= 0 || v <= 0)
        return 0;
    return (int)(v * span / max);
}

void rp_swatch(FILE *f, const char *color, const char *label)
{
    fprintf(f, "<span class=\"sw\" style=\"background:%s\"></span>", color);
    rp_html(f, label);
}

/* The amount of a figure in minor units as "12.34 EUR". */
void rp_fmt_money(const struct gl_config *c, gl_i128 minor, char *buf, size_t n)
{
    char d[80];
    gl_dec_format(minor, c->minor_digits, d, sizeof d);
    snprintf(buf, n, "%s %s", d, c->currency);
}

void rp_table_col(struct table *t, const char *head, unsigned flags)
{
    if (t->ncols == TABLE_COLS) { /* a programming error: raise TABLE_COLS */
        fputs("gpuledger: report table with too many columns\n", stderr);
        abort();
    }
    t->head[t->ncols] = head;
    t->col[t->ncols++] = flags;
}

void rp_table_row(struct table *t)
{
    if (t->nrows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->cells = gl_xrealloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
    }
    memset(&t->cells[t->nrows * t->ncols], 0, t->ncols * sizeof *t->cells);
    t->nrows++;
}

/* Cell k of the last row: our text (flags 0) or a label. */
void rp_table_cell(struct table *t, size_t k, unsigned flags, const char *fmt, ...)
{
    struct gl_buf b;
    gl_buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof small) {
        gl_buf_puts(&b, small);
    } else if (n >= 0) {
        char *big = gl_xcalloc((size_t)n + 1, 1);
        va_start(ap, fmt);
        vsnprintf(big, (size_t)n + 1, fmt, ap);
        va_end(ap);
        gl_buf_puts(&b, big);
        free(big);
    }
    struct tcell *c = &t->cells[(t->nrows - 1) * t->ncols + k];
    c->text = b.data ? b.data : gl_strdup("");
    c->flags = flags;
}

void rp_table_cols(struct table *t, const struct rp_col *cols, size_t n)
{
    for (size_t k = 0; k < n; k++)
        rp_table_col(t, cols[k].head, cols[k].flags);
}

void rp_cell_gbh(struct table *t, size_t k, gl_i128 mib_s)
{
    char v[96];
    rp_fmt_gbh(mib_s, v, sizeof v);
    rp_table_cell(t, k, 0, "%s", v);
}

void rp_cell_share(struct table *t, size_t k, gl_i128 part, gl_i128 whole)
{
    char v[96];
    rp_fmt_share(part, whole, v, sizeof v);
    rp_table_cell(t, k, 0, "%s", v);
}

/* The last row's cell k. */
struct tcell *rp_table_last(struct table *t, size_t k)
{
    return &t->cells[(t->nrows - 1) * t->ncols + k];
}

void rp_table_free(struct table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i].text);
    free(t->cells);
    memset(t, 0, sizeof *t);
}

void rp_table_html(FILE *f, const struct table *t)
{
    fputs(t->wide ? "<div class=\"wide\"><table><tr>" : "<table><tr>", f);
    for (size_t k = 0; k < t->ncols; k++)
        fprintf(f, "<th%s>%s</th>", t->col[k] & COL_N ? " class=\"n\"" : "", t->head[k]);
    fputs("</tr>\n", f);
    for (size_t r = 0; r < t->nrows; r++) {
        fputs("<tr>", f);
        for (size_t k = 0; k < t->ncols; k++) {
            const struct tcell *c = &t->cells[r * t->ncols + k];
            fputs(t->col[k] & COL_N ? "<td class=\"n\"" : t->col[k] & COL_T ? "<td class=\"t\""
                                                                            : "<td",
                  f);
            if (c->team) {
                fputs(" data-team=\"", f);
                rp_html(f, c->team);
                fputs("\"", f);
            }
            fputs(">", f);
            if (c->swatch)
                fprintf(f, "<span class=\"sw\" style=\"background:%s\"></span>", c->swatch);
            fputs(c->flags & CELL_CODE ? "<code>" : c->flags & CELL_ALERT ? "<b>" : "", f);
            if (c->flags & CELL_LINK) {
                fputs("<a href=\"", f);
                rp_html(f, c->text);
                fputs(".html\">report</a>", f);
            } else if (c->flags & CELL_LABEL) {
                rp_html(f, c->text);
            } else {
                fputs(c->text, f);
            }
            fputs(c->flags & CELL_CODE ? "</code>" : c->flags & CELL_ALERT ? "</b>" : "", f);
            if (c->flags & CELL_EST)
                fputs(" <span class=\"note\">(estimated)</span>", f);
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    if (t->sum)
        fprintf(f, "<tr class=\"sum\"><td colspan=\"%zu\">%s%s</td><td class=\"n\">%s</td>"
                   "</tr>\n", t->ncols - 1, t->sum_bold, t->sum_rest, t->sum_value);
    fputs(t->wide ? "</table></div>\n" : "</table>\n", f);
}

void rp_table_md(FILE *f, const struct table *t)
{
    for (size_t k = 0; k < t->ncols; k++)
        fprintf(f, "%s%s", k ? " | " : "| ", t->head[k]);
    fputs(" |\n|", f);
    for (size_t k = 0; k < t->ncols; k++)
        fputs(t->col[k] & (COL_N | COL_MD_RIGHT) ? "---:|" : "---|", f);
    fputc('\n', f);
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t k = 0; k < t->ncols; k++) {
            const struct tcell *c = &t->cells[r * t->ncols + k];
            fputs(k ? " | " : "| ", f);
            if (c->flags & (CELL_LABEL | CELL_LINK))
                rp_md(f, c->text);
            else
                fputs(c->text, f);
            if (c->flags & CELL_LINK)
                fputs(".md", f);
            if (c->flags & CELL_EST)
                fputs(" (estimated)", f);
        }
        fputs(" |\n", f);
    }
    if (t->sum) {
        fprintf(f, "| **%s**%s |", t->sum_bold, t->sum_rest);
        for (size_t k = 2; k < t->ncols; k++)
            fputs(" |", f);
        fprintf(f, " **%s** |\n", t->sum_value);
    }
}

void rp_table_write(FILE *f, enum fmt fmt, const struct page_ctx *x,
                    void (*build)(const struct page_ctx *x, struct table *t))
{
    struct table t = {0};
    build(x, &t);
    (fmt == FMT_HTML ? rp_table_html : rp_table_md)(f, &t);
    rp_table_free(&t);
}

void rp_heading(FILE *f, enum fmt fmt, bool first, const char *title)
{
    if (fmt == FMT_HTML)
        fprintf(f, "<h2>%s</h2>\n", title);
    else
        fprintf(f, "%s## %s\n\n", first ? "" : "\n", title);
}

void rp_code(FILE *f, enum fmt fmt, const char *text)
{
    fputs(fmt == FMT_HTML ? "<code>" : "`", f);
    (fmt == FMT_HTML ? rp_html : rp_md)(f, text);
    fputs(fmt == FMT_HTML ? "</code>" : "`", f);
}
