/*
 * report — the monthly team report and the fleet page (see report.h).
 *
 * Figures come from two places only: the invoice set (lines, total, waste,
 * compute indicator, anomalies, prices — so the page can never disagree
 * with the invoice) and SQL sums over the hourly rollups (daily used and
 * allocated, pods, the fleet's capacity split). Charts are scaled with
 * integer arithmetic on nano-GB-hours; labels print the exact decimal
 * strings. Nothing here uses floating point. This file writes the pages
 * around their sections: a team page's head and headline figures (its
 * sections: report_team.c) and the fleet page; the pieces both use are
 * report_page.c's.
 */
#include "report.h"
#include "report_page.h"
#include "report_team.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "gl_build.h"
#include "money.h"
#include "statement.h"
#include "timeutil.h"
#include "util.h"

static const char *month_name(int month)
{
    static const char *const m[] = {"January", "February", "March",     "April",
                                    "May",     "June",     "July",      "August",
                                    "September", "October", "November", "December"};
    return month >= 1 && month <= 12 ? m[month - 1] : "";
}

/* Team colours of the fleet chart, in team id order. */
static const char *const palette[] = {"#2563eb", "#16a34a", "#9333ea", "#ea580c", "#0891b2",
                                      "#db2777", "#65a30d", "#4f46e5", "#b45309", "#0d9488"};
#define NPALETTE (sizeof palette / sizeof *palette)

/* ------------------------------------------------------------- file names */

char *gl_report_team_file(const char *period, const char *team, const char *ext)
{
    char *safe = gl_safe_name(team);
    size_t n = strlen(period) + strlen(safe) + strlen(ext) + 10;
    char *name = gl_xcalloc(n, 1);
    snprintf(name, n, "report-%s-%s.%s", period, safe, ext);
    free(safe);
    return name;
}

/* Capacity of each GPU model split into teams, overhead and idle. */
static void svg_fleet(FILE *f, const struct gl_fleet *fl)
{
    enum { W = 1000, ROW = 66, BARH = 30 };
    fprintf(f, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
               "aria-label=\"Capacity per GPU model\">\n", W, ROW * (int)fl->n + 4);
    for (size_t i = 0; i < fl->n; i++) {
        const struct gl_fleet_model *m = &fl->m[i];
        int y = (int)i * ROW;
        /* 128-bit sums of int64 figures: cannot overflow */
        gl_i128 overhead = (gl_i128)m->v[GL_F_RESERVED] + m->v[GL_F_UNATTR];
        gl_i128 billed = 0;
        for (size_t k = 0; k < m->nteams; k++)
            billed += m->teams[k].q;
        /* Segments tile the bar by cumulative position; when Σ billed
         * exceeds capacity (excess), the bar is that sum and a line marks
         * capacity. */
        gl_i128 denom = billed + overhead + m->v[GL_F_IDLE];
        if (denom < m->v[GL_F_CAP])
            denom = m->v[GL_F_CAP];
        char cap[64], lbl[300];
        rp_fmt_gbh(m->v[GL_F_CAP], cap, sizeof cap);
        size_t ln = strlen(m->cluster) + strlen(m->model) + 8;
        char *full = gl_xcalloc(ln, 1);
        snprintf(full, ln, "%s · %s", m->cluster, m->model);
        rp_shorten(full, 80, lbl, sizeof lbl);
        fprintf(f, "<text x=\"0\" y=\"%d\" class=\"lbl\"><tspan font-weight=\"600\">", y + 16);
        rp_html(f, lbl);
        fprintf(f, "</tspan> — capacity %s GB-h</text>\n", cap);
        free(full);
        gl_i128 cum = 0;
        int by = y + 24;
        for (size_t k = 0; k <= m->nteams + 1; k++) {
            const char *name, *color;
            gl_i128 q;
            if (k < m->nteams) {
                name = fl->teams[m->teams[k].team];
                color = palette[(size_t)m->teams[k].team % NPALETTE];
                q = m->teams[k].q;
            } else if (k == m->nteams) {
                name = "overhead (driver-reserved + unattributed)";
                color = COLOR_OVERHEAD;
                q = overhead;
            } else {
                name = "idle";
                color = COLOR_IDLE;
                q = m->v[GL_F_IDLE];
            }
            if (q <= 0)
                continue;
            int x0 = rp_px(cum, denom, W);
            cum += q;
            int x1 = rp_px(cum, denom, W);
            char g[64], sh[64], tl[64];
            rp_fmt_gbh(q, g, sizeof g);
            rp_fmt_share(q, m->v[GL_F_CAP], sh, sizeof sh);
            fputs("<g><title>", f);
            rp_html(f, name);
            fprintf(f, ": %s GB-h (%s of capacity)</title>", g, sh);
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
                       "stroke=\"#fff\"/>", x0, by, x1 - x0, BARH, color);
            if (x1 - x0 >= 70) {
                rp_shorten(name, (size_t)(x1 - x0 - 12) / 8, tl, sizeof tl);
                fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"seg%s\">", x0 + 6, by + 20,
                        k == m->nteams + 1 ? " dark" : "");
                rp_html(f, tl);
                fputs("</text>", f);
            }
            fputs("</g>\n", f);
        }
        if (denom > m->v[GL_F_CAP]) {
            int xc = rp_px(m->v[GL_F_CAP], denom, W);
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#dc2626\" "
                       "stroke-width=\"3\"><title>capacity</title></line>\n",
                    xc, by - 4, xc, by + BARH + 4);
        }
    }
    fputs("</svg>\n", f);
}

/* --------------------------------------------------------------- pages */

static const char css[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;"
    "color:#111827;background:#f9fafb;margin:0}"
    "main{max-width:1240px;margin:0 auto;padding:20px 24px 48px}"
    "h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 8px;"
    "border-bottom:1px solid #e5e7eb;padding-bottom:4px}"
    ".meta{color:#4b5563;margin:0 0 16px}"
    ".cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}"
    ".card{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:10px 14px;"
    "min-width:160px}.card .k{color:#6b7280;font-size:12px;text-transform:uppercase;"
    "letter-spacing:.04em}.card .v{font-size:20px;font-weight:600;font-variant-numeric:"
    "tabular-nums}.card .u{color:#6b7280;font-size:12px}"
    ".card.total{border-color:#2563eb;background:#eff6ff}"
    "table{border-collapse:collapse;background:#fff;margin:8px 0;font-size:13px}"
    "th,td{border:1px solid #e5e7eb;padding:4px 8px;text-align:left;vertical-align:top}"
    "th{background:#f3f4f6;font-weight:600}th.n{text-align:right}td.n{text-align:right;"
    "font-variant-numeric:tabular-nums;white-space:nowrap}"
    "tr.sum td{font-weight:700;background:#f9fafb}"
    ".chart{width:100%;box-sizing:border-box;height:auto;background:#fff;border:1px solid #e5e7eb;border-radius:8px;"
    "display:block}"
    ".chart text{font-family:system-ui,'DejaVu Sans',sans-serif}"
    ".tick{font-size:12px;fill:#6b7280}.lbl{font-size:13px;fill:#111827}"
    ".val{font-size:12px;fill:#374151}.seg{font-size:13px;fill:#fff}.seg.dark{fill:#111827}"
    ".legend{margin:6px 0 0;color:#374151;font-size:13px}"
    ".sw{display:inline-block;width:12px;height:12px;border-radius:2px;margin:0 4px -1px 12px;"
    "border:1px solid #9ca3af}"
    ".note{color:#4b5563}.caveat{border-left:4px solid #7c3aed;background:#f5f3ff;"
    "padding:8px 12px;margin:8px 0}"
    ".warn{border-left:4px solid #f59e0b;background:#fffbeb;padding:8px 12px;margin:8px 0}"
    "code{background:#f3f4f6;padding:0 3px;border-radius:3px}"
    ".wide{overflow-x:auto}td.t{white-space:nowrap}"
    "footer{margin-top:40px;color:#6b7280;font-size:12px}"
    ".status{font-weight:700;padding:1px 6px;border-radius:4px;margin-right:4px}"
    ".status.draft{background:#fef3c7;color:#92400e;border:1px solid #f59e0b}"
    ".status.final{background:#dcfce7;color:#166534;border:1px solid #16a34a}"
    /* phones (a 420 px screen): tables scroll inside their own box, never the page */
    "@media (max-width:640px){main{padding:12px 10px 32px}h1{font-size:20px}"
    ".card{min-width:0;flex:1 1 40%}.card .v{font-size:17px}"
    "table{display:block;max-width:100%;overflow-x:auto}td.n{white-space:normal}"
    ".meta{overflow-wrap:anywhere}code{overflow-wrap:anywhere}}"
    /* print and PDF: white paper, no scroll boxes, charts and rows kept whole */
    "@media print{@page{size:A4;margin:12mm}body{background:#fff;font-size:11px}"
    "main{max-width:none;padding:0}.card{border-color:#9ca3af}"
    ".wide{overflow:visible}table{font-size:10px}tr,.chart,.card,.caveat,.warn"
    "{break-inside:avoid}h2{break-after:avoid}a{color:inherit;text-decoration:none}"
    ".chart{border-color:#9ca3af}*{-webkit-print-color-adjust:exact;print-color-adjust:exact}}";

static void html_head(FILE *f, const char *title1, const char *title2)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          f);
    rp_html(f, title1);
    rp_html(f, title2);
    fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", css);
}

static void html_foot(FILE *f, const struct gl_config *c)
{
    fprintf(f,
            "<footer>Generated by gpuledger %s. GB-hours (GB = 10<sup>9</sup> bytes) and "
            "percentages are rounded for reading (2 and 1 decimals); the invoice JSON and the "
            "FOCUS CSV hold the exact figures from integer MiB·s. Amounts are exact: rounded "
            "half-even once per line to the currency's minor unit (%s); a total is the sum of "
            "its rounded lines.</footer>\n"
            "</main>\n</body>\n</html>\n",
            GL_VERSION, c->currency);
}

static void html_card(FILE *f, const char *cls, const char *key, const char *id,
                      const char *value, const char *unit)
{
    fprintf(f, "<div class=\"card%s%s\"><div class=\"k\">%s</div><div class=\"v\"", *cls ? " " : "",
            cls, key);
    if (id)
        fprintf(f, " id=\"%s\"", id);
    fprintf(f, ">%s</div><div class=\"u\">%s</div></div>\n", value, unit);
}

/* DRAFT until the period is closed, then FINAL with the closing time. */
static void status_text(const struct gl_statement *st, bool html_fmt, char *buf, size_t n)
{
    if (st->closed) {
        char t[32];
        gl_time_format(st->closed_at, t, sizeof t);
        snprintf(buf, n, html_fmt ? "<span class=\"status final\">FINAL</span> closed %s"
                                  : "**FINAL** (closed %s)", t);
    } else {
        snprintf(buf, n, html_fmt ? "<span class=\"status draft\">DRAFT</span> the period is "
                                    "open: figures change until it is closed"
                                  : "**DRAFT** (the period is open: figures change until it is "
                                    "closed)");
    }
}

/* A month closed with `close --force` although incomplete: what its
 * collection lacked, under the status line (nothing otherwise). */
static void incomplete_note(FILE *f, const struct gl_statement *st, bool html_fmt)
{
    if (!st->closed || !st->set || !st->set->ngaps)
        return;
    struct gl_buf b;
    gl_buf_init(&b);
    gl_gaps_describe(st->set->gaps, st->set->ngaps, &b);
    if (html_fmt) {
        fputs("<p class=\"meta\" id=\"incomplete-at-close\"><strong>Incomplete at "
              "close</strong> (closed with --force): ", f);
        rp_html(f, b.data ? b.data : "");
        fputs(" (usage of these hours collected later is billed as corrections of a later "
              "month)</p>\n", f);
    } else {
        fputs("- **Incomplete at close** (closed with --force): ", f);
        rp_md(f, b.data ? b.data : "");
        fputs(" (usage of these hours collected later is billed as corrections of a later "
              "month)\n", f);
    }
    gl_buf_free(&b);
}

static void day_range_text(const struct gl_day_axis *ax, char *buf, size_t n)
{
    char a[16], b[16];
    gl_date_format(ax->first, a, sizeof a);
    gl_date_format(ax->first + (int64_t)(ax->n - 1) * 86400, b, sizeof b);
    snprintf(buf, n, "%s to %s", a, b);
}

/* The headline figures of a team page, shared by the HTML cards and the
 * Markdown list so that both show the same: memory and allocation when the
 * team had pods, its idle and overhead shares when it carries them. */
struct keyfig {
    const char *label;
    char value[96];
    char unit[128];
};

/* Key figure k: label and MiB·s as GB-hours. */
static struct keyfig *keyfig_gbh(struct keyfig *k, const char *label, gl_i128 mib_s)
{
    k->label = label;
    rp_fmt_gbh(mib_s, k->value, sizeof k->value);
    snprintf(k->unit, sizeof k->unit, "GB-hours");
    return k;
}

static size_t team_keyfigs(const struct page_ctx *x, struct keyfig *k)
{
    const struct gl_team_usage *u = x->u;
    size_t n = 0;
    char sh[32];
    if (u->used || u->allocated || !u->has_shares) {
        keyfig_gbh(&k[n++], "Memory used", u->used);
        keyfig_gbh(&k[n++], "Allocated", u->allocated);
        struct keyfig *w = keyfig_gbh(&k[n++], "Reserved-unused (waste)", u->waste);
        rp_fmt_share(u->waste, u->allocated, sh, sizeof sh);
        char money[64] = "";
        if (x->e && x->e->nwaste)
            rp_fmt_money(x->c, x->e->waste_total, money, sizeof money);
        snprintf(w->unit, sizeof w->unit, "GB-hours · %s of allocation%s%s", sh,
                 money[0] ? " · " : "", money);
    }
    if (u->has_shares) {
        keyfig_gbh(&k[n++], "Idle share", u->idle_share);
        keyfig_gbh(&k[n++], "Overhead share", u->overhead_share);
    }
    k[n].label = "Anomalies";
    snprintf(k[n].value, sizeof k[n].value, "%zu", x->inv->anomalies.n);
    snprintf(k[n++].unit, sizeof k->unit, "%s",
             x->inv->anomalies.n ? "billed as used, listed below" : "billed as used");
    return n;
}

static void team_html(FILE *f, const struct page_ctx *x)
{
    const struct gl_invoice *inv = x->inv;
    const struct gl_period *p = &x->set->period;
    char a[96];

    html_head(f, x->st->closed ? "GPU report — " : "DRAFT GPU report — ", inv->team_name);
    fputs("<h1>GPU report: ", f);
    rp_html(f, inv->team_name);
    fprintf(f, " <span class=\"note\">(<code>");
    rp_html(f, inv->team);
    fprintf(f, "</code>)</span></h1>\n<p class=\"meta\">%s %d · invoice <code>", month_name(p->month),
            p->year);
    rp_html(f, inv->invoice_id);
    fputs("</code> · cost center ", f);
    rp_html(f, inv->cost_center ? inv->cost_center : "—");
    day_range_text(x->ax, a, sizeof a);
    fprintf(f, " · data for %s (UTC) · <a href=\"fleet-%s.html\">fleet page</a></p>\n", a,
            p->name);
    char stt[200];
    status_text(x->st, true, stt, sizeof stt);
    fprintf(f, "<p class=\"meta\" id=\"invoice-status\">Status: %s</p>\n", stt);
    incomplete_note(f, x->st, true);

    fputs("<div class=\"cards\">\n", f);
    gl_dec_format(inv->total, x->c->minor_digits, a, sizeof a);
    html_card(f, "total", "Invoice total", "invoice-total", a, x->c->currency);
    struct keyfig kf[6];
    size_t nkf = team_keyfigs(x, kf);
    for (size_t i = 0; i < nkf; i++)
        html_card(f, "", kf[i].label, NULL, kf[i].value, kf[i].unit);
    fputs("</div>\n", f);

    rp_team_sections_write(f, FMT_HTML, x);
    html_foot(f, x->c);
}

static void team_md(FILE *f, const struct page_ctx *x)
{
    char a[96];
    const struct gl_invoice *inv = x->inv;
    const struct gl_period *p = &x->set->period;
    fputs("# GPU report: ", f);
    rp_md(f, inv->team_name);
    fputs(" (`", f);
    rp_md(f, inv->team);
    fprintf(f, "`), %s %d\n\n- Invoice: ", month_name(p->month), p->year);
    rp_md(f, inv->invoice_id);
    fputs("\n- Cost center: ", f);
    rp_md(f, inv->cost_center ? inv->cost_center : "—");
    day_range_text(x->ax, a, sizeof a);
    fprintf(f, "\n- Data for: %s (UTC)\n", a);
    char stt[200];
    status_text(x->st, false, stt, sizeof stt);
    fprintf(f, "- Status: %s\n", stt);
    incomplete_note(f, x->st, false);
    gl_dec_format(inv->total, x->c->minor_digits, a, sizeof a);
    fprintf(f, "- Fleet page: fleet-%s.md\n\n**Total: %s %s**\n\n", p->name, a,
            x->c->currency);
    struct keyfig kf[6];
    size_t nkf = team_keyfigs(x, kf);
    for (size_t i = 0; i < nkf; i++)
        fprintf(f, "- %s: %s %s\n", kf[i].label, kf[i].value, kf[i].unit);
    fputc('\n', f);

    rp_team_sections_write(f, FMT_MD, x);
    fprintf(f, "\n---\nGenerated by gpuledger %s. GB = 10^9 bytes; GB-hours rounded to 2 "
               "decimals for reading (exact in the invoice JSON and the FOCUS CSV); amounts "
               "rounded half-even once per line; the total is the sum of the rounded lines.\n",
            GL_VERSION);
}

/* The devices the fleet page lists: usage unknown, or billed beyond capacity. */
static bool needs_attention(const struct gl_device_row *d)
{
    return d->unknown || d->excess != 0;
}

static size_t attention_count(const struct gl_fleet *fl)
{
    size_t n = 0;
    for (size_t i = 0; i < fl->ndev; i++)
        n += needs_attention(&fl->dev[i]);
    return n;
}

static bool fleet_reconciles(const struct gl_fleet_model *m)
{
    gl_i128 billed = 0; /* 128-bit sums of int64 figures: cannot overflow */
    for (size_t k = 0; k < m->nteams; k++)
        billed += m->teams[k].q;
    /* capacity = billed teams + idle + overhead − excess, exactly (as summary.c) */
    return billed == (gl_i128)m->v[GL_F_USED] + m->v[GL_F_RUB] &&
           m->v[GL_F_CAP] == billed + m->v[GL_F_IDLE] + m->v[GL_F_RESERVED] + m->v[GL_F_UNATTR] -
                              m->v[GL_F_EXCESS];
}

/* The per-model table's figures, the same in HTML and Markdown. The
 * reserved-unused column is left out while it is all zero under basis
 * used (it can only be billed under basis max). */
#define FLEET_COLS 8
static const char *const fleet_heads[FLEET_COLS] = {
    "Capacity", "Billed to teams", "of which reserved-unused", "Idle", "Overhead",
    "of which driver-reserved", "of which unattributed", "Excess"};

static void fleet_values(const struct gl_fleet_model *m, gl_i128 v[FLEET_COLS])
{
    v[0] = m->v[GL_F_CAP];
    v[1] = (gl_i128)m->v[GL_F_USED] + m->v[GL_F_RUB];
    v[2] = m->v[GL_F_RUB];
    v[3] = m->v[GL_F_IDLE];
    v[4] = (gl_i128)m->v[GL_F_RESERVED] + m->v[GL_F_UNATTR];
    v[5] = m->v[GL_F_RESERVED];
    v[6] = m->v[GL_F_UNATTR];
    v[7] = m->v[GL_F_EXCESS];
}

static bool fleet_col_shown(const struct gl_config *c, const struct gl_fleet *fl, int k)
{
    if (k != 2 || c->basis->bills_reserved_unused)
        return true;
    for (size_t i = 0; i < fl->n; i++)
        if (fl->m[i].v[GL_F_RUB])
            return true;
    return false;
}

static gl_i128 fleet_total(const struct gl_invoice_set *set)
{
    gl_i128 t = 0;
    for (size_t i = 0; i < set->n; i++)
        t += set->invoices[i].total;
    return t;
}

/* ---- the fleet page's tables ---- */

static void tbl_fleet_models(const struct page_ctx *x, struct table *t)
{
    const struct gl_config *c = x->c;
    const struct gl_fleet *fl = &x->st->fleet;
    rp_table_col(t, "Cluster", COL_T);
    rp_table_col(t, "GPU model", COL_T);
    for (int k = 0; k < FLEET_COLS; k++)
        if (fleet_col_shown(c, fl, k))
            rp_table_col(t, fleet_heads[k], COL_N);
    rp_table_col(t, "Reconciles", 0);
    t->wide = true;
    for (size_t i = 0; i < fl->n; i++) {
        const struct gl_fleet_model *m = &fl->m[i];
        size_t col = 0;
        char q[96];
        rp_table_row(t);
        rp_table_cell(t, col++, CELL_LABEL, "%s", m->cluster);
        rp_table_cell(t, col++, CELL_LABEL, "%s", m->model);
        gl_i128 v[FLEET_COLS];
        fleet_values(m, v);
        for (int k = 0; k < FLEET_COLS; k++) {
            if (!fleet_col_shown(c, fl, k))
                continue;
            rp_fmt_gbh(v[k], q, sizeof q);
            rp_table_cell(t, col++, 0, "%s", q);
        }
        bool ok = fleet_reconciles(m);
        rp_table_cell(t, col, ok ? 0 : CELL_ALERT, "%s", ok ? "yes" : "NO");
    }
}

static void tbl_fleet_teams(const struct page_ctx *x, struct table *t)
{
    const struct gl_fleet *fl = &x->st->fleet;
    static const struct rp_col cols[] = {{"Cluster", 0}, {"GPU model", 0}, {"Team", 0},
                                         {"Billed GB-h", COL_N}, {"Share of capacity", COL_N}};
    RP_COLS(t, cols);
    for (size_t i = 0; i < fl->n; i++) {
        const struct gl_fleet_model *m = &fl->m[i];
        for (size_t k = 0; k < m->nteams; k++) {
            rp_table_row(t);
            rp_table_cell(t, 0, CELL_LABEL, "%s", m->cluster);
            rp_table_cell(t, 1, CELL_LABEL, "%s", m->model);
            rp_table_cell(t, 2, CELL_LABEL, "%s", fl->teams[m->teams[k].team]);
            rp_table_last(t, 2)->swatch = palette[(size_t)m->teams[k].team % NPALETTE];
            rp_cell_gbh(t, 3, m->teams[k].q);
            rp_cell_share(t, 4, m->teams[k].q, m->v[GL_F_CAP]);
        }
    }
}

static void tbl_fleet_invoices(const struct page_ctx *x, struct table *t)
{
    const struct gl_config *c = x->c;
    const struct gl_period *p = &x->set->period;
    static const char *const heads[] = {"Team", "Name", "Cost center", "Invoice", "Report"};
    for (size_t k = 0; k < 5; k++)
        rp_table_col(t, heads[k], 0);
    snprintf(t->head_buf[0], sizeof t->head_buf[0], "Total (%s)", c->currency);
    rp_table_col(t, t->head_buf[0], COL_N);
    for (size_t i = 0; i < x->set->n; i++) {
        const struct gl_invoice *inv = &x->set->invoices[i];
        char v[96];
        rp_table_row(t);
        rp_table_cell(t, 0, CELL_LABEL | CELL_CODE, "%s", inv->team);
        rp_table_cell(t, 1, CELL_LABEL, "%s", inv->team_name);
        rp_table_cell(t, 2, CELL_LABEL, "%s", inv->cost_center ? inv->cost_center : "—");
        rp_table_cell(t, 3, CELL_LABEL, "%s", inv->invoice_id);
        char *file = gl_report_team_file(p->name, inv->team, "x");
        file[strlen(file) - 2] = '\0'; /* without ".x": the format adds its own */
        rp_table_cell(t, 4, CELL_LINK, "%s", file);
        free(file);
        gl_dec_format(inv->total, c->minor_digits, v, sizeof v);
        rp_table_cell(t, 5, 0, "%s", v);
        rp_table_last(t, 5)->team = inv->team;
    }
    t->sum = true;
    snprintf(t->sum_bold, sizeof t->sum_bold, "Sum of %zu invoices", x->set->n);
    gl_dec_format(fleet_total(x->set), c->minor_digits, t->sum_value, sizeof t->sum_value);
}

static void tbl_fleet_devices(const struct page_ctx *x, struct table *t)
{
    const struct gl_fleet *fl = &x->st->fleet;
    static const struct rp_col cols[] = {
        {"Cluster", 0},   {"Node", 0},     {"Device", 0},
        {"Profile", 0},   {"GPU model", 0}, {"Capacity GB-h", COL_N},
        {"Excess GB-h", COL_N}, {"Why", 0}};
    RP_COLS(t, cols);
    for (size_t i = 0; i < fl->ndev; i++) {
        const struct gl_device_row *d = &fl->dev[i];
        if (!needs_attention(d))
            continue;
        const char *cells[] = {d->cluster, d->node, d->device, d->profile, d->model};
        rp_table_row(t);
        for (size_t k = 0; k < 5; k++)
            rp_table_cell(t, k, CELL_LABEL, "%s", cells[k]);
        rp_cell_gbh(t, 5, d->capacity);
        rp_cell_gbh(t, 6, d->excess);
        rp_table_cell(t, 7, 0, "%s%s%s",
                   d->unknown ? "usage unknown (no memory metrics; pods billed by allocation)" : "",
                   d->unknown && d->excess ? "; " : "",
                   d->excess ? "memory billed beyond capacity" : "");
    }
}

static bool has_pending(const struct gl_statement *st)
{
    return st->pending.nk || st->pending.np;
}

static void tbl_fleet_pending(const struct page_ctx *x, struct table *t)
{
    rp_tbl_pending_keys(&x->st->pending, true, t);
}

static void tbl_fleet_waits(const struct page_ctx *x, struct table *t)
{
    rp_tbl_pending_waits(&x->st->pending, true, t);
}

/* The fleet's figures: 128-bit sums of int64 figures (cannot overflow). */
struct fleet_sums {
    gl_i128 cap, billed, idle, overhead, excess;
};

static struct fleet_sums fleet_sums(const struct gl_fleet *fl)
{
    struct fleet_sums t = {0};
    for (size_t i = 0; i < fl->n; i++) {
        const int64_t *v = fl->m[i].v;
        t.cap += v[GL_F_CAP];
        t.billed += (gl_i128)v[GL_F_USED] + v[GL_F_RUB];
        t.idle += v[GL_F_IDLE];
        t.overhead += (gl_i128)v[GL_F_RESERVED] + v[GL_F_UNATTR];
        t.excess += v[GL_F_EXCESS];
    }
    return t;
}

/* The capacity chart and its legend (HTML), the per-model table, what its
 * columns add up to. */
static void fleet_models_body(FILE *f, enum fmt fmt, const struct page_ctx *x)
{
    const struct gl_fleet *fl = &x->st->fleet;
    if (fmt == FMT_HTML && fl->n) {
        svg_fleet(f, fl);
        fputs("<p class=\"legend\">", f);
        for (size_t t = 0; t < fl->nteams; t++)
            rp_swatch(f, palette[t % NPALETTE], fl->teams[t]);
        rp_swatch(f, COLOR_OVERHEAD, "overhead");
        rp_swatch(f, COLOR_IDLE, "idle");
        fputs("</p>\n", f);
    }
    rp_table_write(f, fmt, x, tbl_fleet_models);
    fputs(fmt == FMT_HTML
              ? "<p class=\"note\">GB-hours. Capacity = billed to teams + idle + overhead "
                "(driver-reserved + unattributed) − excess, per GPU model, exactly. Excess is "
                "memory billed beyond capacity (reported, never hidden).</p>\n"
              : "\nCapacity = billed to teams + idle + overhead (driver-reserved + unattributed) "
                "− excess.\n",
          f);
}

/* GPU-hours waiting, then the longest waits. */
static void fleet_pending_body(FILE *f, enum fmt fmt, const struct page_ctx *x)
{
    const struct gl_pending *pd = &x->st->pending;
    rp_table_write(f, fmt, x, tbl_fleet_pending);
    fprintf(f,
            fmt == FMT_HTML ? "<p class=\"note\">%s Longest waits (%zu of %lld pods):</p>\n"
                            : "\n%s\n\nLongest waits (%zu of %lld pods):\n\n",
            rp_pending_note, pd->np, (long long)pd->pods);
    rp_table_write(f, fmt, x, tbl_fleet_waits);
}

static void fleet_devices_body(FILE *f, enum fmt fmt, const struct page_ctx *x)
{
    const struct gl_fleet *fl = &x->st->fleet;
    if (attention_count(fl))
        rp_table_write(f, fmt, x, tbl_fleet_devices);
    else if (fmt == FMT_HTML)
        fprintf(f, "<p class=\"note\">None: all %zu devices reported memory metrics and none was "
                   "billed beyond capacity. Per-device figures: <code>gpuledger summary --period "
                   "%s</code>.</p>\n", fl->ndev, x->set->period.name);
    else
        fprintf(f, "None: all %zu devices reported memory metrics and none was billed beyond "
                   "capacity.\n", fl->ndev);
}

static bool fleet_has_pending(const struct page_ctx *x)
{
    return has_pending(x->st);
}

/* The fleet page's sections after its headline figures: a heading (per
 * format), whether shown (NULL: always), and what follows it: body, or
 * else the one table. */
static const struct fleet_section {
    const char *title[2];
    bool (*shown)(const struct page_ctx *x);
    void (*body)(FILE *f, enum fmt fmt, const struct page_ctx *x);
    void (*table)(const struct page_ctx *x, struct table *t);
} fleet_sections[] = {
    {{"Capacity per GPU model: teams + idle + overhead",
      "Capacity per GPU model: teams + idle + overhead (GB-hours)"},
     NULL, fleet_models_body, NULL},
    {{"Teams per GPU model", "Teams per GPU model"}, NULL, NULL, tbl_fleet_teams},
    {{"Invoices", "Invoices"}, NULL, NULL, tbl_fleet_invoices},
    {{"GPU demand waiting (Pending pods)", "GPU demand waiting (Pending pods)"},
     fleet_has_pending, fleet_pending_body, NULL},
    {{"Devices needing attention", "Devices needing attention"}, NULL, fleet_devices_body,
     NULL},
};

static void fleet_sections_write(FILE *f, enum fmt fmt, const struct page_ctx *x)
{
    for (size_t i = 0; i < sizeof fleet_sections / sizeof *fleet_sections; i++) {
        const struct fleet_section *s = &fleet_sections[i];
        if (s->shown && !s->shown(x))
            continue;
        rp_heading(f, fmt, i == 0, s->title[fmt]);
        if (s->body)
            s->body(f, fmt, x);
        else
            rp_table_write(f, fmt, x, s->table);
    }
}

/* The idle policy after its phrase: the platform team, as code. */
static void platform_team(FILE *f, enum fmt fmt, const struct gl_config *c)
{
    if (c->idle_policy != GL_IDLE_PLATFORM)
        return;
    fputs(" (", f);
    rp_code(f, fmt, c->platform_team);
    fputs(")", f);
}

/* A card of a share of capacity: GB-hours, and the share as its unit. */
static void share_card(FILE *f, const char *key, gl_i128 part, gl_i128 cap)
{
    char q[96], b[96], a[96];
    rp_fmt_gbh(part, q, sizeof q);
    rp_fmt_share(part, cap, b, sizeof b);
    snprintf(a, sizeof a, "GB-hours · %s of capacity", b);
    html_card(f, "", key, NULL, q, a);
}

static void fleet_html(FILE *f, const struct page_ctx *x)
{
    const struct gl_config *c = x->c;
    const struct gl_period *p = &x->set->period;
    char a[96];
    struct fleet_sums sum = fleet_sums(&x->st->fleet);
    snprintf(a, sizeof a, "%s", p->name);
    html_head(f, x->st->closed ? "GPU fleet — " : "DRAFT GPU fleet — ", a);
    day_range_text(x->ax, a, sizeof a);
    fprintf(f, "<h1>GPU fleet: %s %d</h1>\n<p class=\"meta\">Data for %s (UTC) · idle and "
               "overhead are %s", month_name(p->month), p->year, a, rp_policy_text(c));
    platform_team(f, FMT_HTML, c);
    char stt[200];
    status_text(x->st, true, stt, sizeof stt);
    fprintf(f, " · billing basis <code>%s</code></p>\n<p class=\"meta\" id=\"invoice-status\">"
               "Status: %s</p>\n",
            c->basis->name, stt);
    incomplete_note(f, x->st, true);
    fputs("<div class=\"cards\">\n", f);
    gl_dec_format(fleet_total(x->set), c->minor_digits, a, sizeof a);
    html_card(f, "total", "All invoices", "fleet-total", a, c->currency);
    rp_fmt_gbh(sum.cap, a, sizeof a);
    html_card(f, "", "Capacity", NULL, a, "GB-hours");
    share_card(f, "Billed to teams", sum.billed, sum.cap);
    share_card(f, "Idle", sum.idle, sum.cap);
    share_card(f, "Overhead", sum.overhead, sum.cap);
    fputs("</div>\n", f);
    fleet_sections_write(f, FMT_HTML, x);
    html_foot(f, c);
}

static void fleet_md(FILE *f, const struct page_ctx *x)
{
    const struct gl_config *c = x->c;
    const struct gl_period *p = &x->set->period;
    char a[96], b[96], stt[200];
    day_range_text(x->ax, a, sizeof a);
    fprintf(f, "# GPU fleet: %s %d\n\n- Data for: %s (UTC)\n- Idle and overhead: %s",
            month_name(p->month), p->year, a, rp_policy_text(c));
    platform_team(f, FMT_MD, c);
    status_text(x->st, false, stt, sizeof stt);
    fprintf(f, "\n- Billing basis: `%s`\n- Status: %s\n",
            c->basis->name, stt);
    incomplete_note(f, x->st, false);
    gl_dec_format(fleet_total(x->set), c->minor_digits, a, sizeof a);
    fprintf(f, "\n**All invoices: %s %s**\n\n", a, c->currency);
    struct fleet_sums sum = fleet_sums(&x->st->fleet);
    rp_fmt_gbh(sum.cap, a, sizeof a);
    fprintf(f, "| Capacity GB-h | Billed to teams GB-h | Idle GB-h | Overhead GB-h |\n"
               "|---:|---:|---:|---:|\n| %s", a);
    gl_i128 parts[] = {sum.billed, sum.idle, sum.overhead};
    for (int k = 0; k < 3; k++) {
        rp_fmt_gbh(parts[k], a, sizeof a);
        rp_fmt_share(parts[k], sum.cap, b, sizeof b);
        fprintf(f, " | %s (%s)", a, b);
    }
    fputs(" |\n\n", f);
    fleet_sections_write(f, FMT_MD, x);
    fprintf(f, "\n---\nGenerated by gpuledger %s. GB = 10^9 bytes; GB-hours rounded to 2 "
               "decimals for reading (exact in the summary JSON).\n", GL_VERSION);
}

/* ------------------------------------------------------------ entry points */

/* Page i of st written by page: team i's, or (team false) the fleet's. */
static enum gl_status write_page(const struct gl_statement *st, bool team, size_t i, FILE *out,
                                 void (*page)(FILE *f, const struct page_ctx *x),
                                 struct gl_error *err)
{
    (void)err;
    struct page_ctx x = {st->cfg, st->set, NULL, NULL, &st->axis, NULL, st};
    if (team) {
        x.inv = &st->set->invoices[i];
        x.u = &st->teams[i];
        x.e = &st->extra[i];
    }
    page(out, &x);
    return GL_OK;
}

enum gl_status gl_report_team_html(const struct gl_statement *st, size_t i, FILE *out,
                                   struct gl_error *err)
{
    return write_page(st, true, i, out, team_html, err);
}

enum gl_status gl_report_team_md(const struct gl_statement *st, size_t i, FILE *out,
                                 struct gl_error *err)
{
    return write_page(st, true, i, out, team_md, err);
}

enum gl_status gl_report_fleet_html(const struct gl_statement *st, size_t i, FILE *out,
                                    struct gl_error *err)
{
    (void)i; /* one fleet page */
    return write_page(st, false, 0, out, fleet_html, err);
}

enum gl_status gl_report_fleet_md(const struct gl_statement *st, size_t i, FILE *out,
                                  struct gl_error *err)
{
    (void)i; /* one fleet page */
    return write_page(st, false, 0, out, fleet_md, err);
}
