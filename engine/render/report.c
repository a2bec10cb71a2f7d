/*
 * report — the monthly team report and the fleet page (see report.h).
 *
 * Figures come from two places only: the invoice set (lines, total, waste,
 * compute indicator, anomalies, prices — so the page can never disagree
 * with the invoice) and SQL sums over the hourly rollups (daily used and
 * allocated, pods, the fleet's capacity split). Charts are scaled with
 * integer arithmetic on nano-GB-hours; labels print the exact decimal
 * strings. Nothing here uses floating point.
 */
#include "report.h"


#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "advise.h"
#include "gl_build.h"
#include "money.h"
#include "price.h"
#include "statement.h"
#include "timeutil.h"
#include "unitcost.h"
#include "util.h"

/* ------------------------------------------------------------ formatting */

/* HTML text and attribute values: the five characters that matter, and
 * control characters (never meaningful in a label) as spaces. */
static void html(FILE *f, const char *s)
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
static void md(FILE *f, const char *s)
{
    gl_md_cell(f, s);
}

/* The first max_cp code points of s, with "…" when cut, for SVG labels
 * (the full text goes in the element's <title>). */
static void shorten(const char *s, size_t max_cp, char *buf, size_t n)
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
static void fmt_read(gl_i128 nano, char *buf, size_t n)
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

static void fmt_gbh(gl_i128 mib_s, char *buf, size_t n)
{
    fmt_read(gl_gbh_nano(mib_s), buf, n);
}

/* part / whole as a percentage with one decimal ("12.3%"), "—" when whole
 * is 0. */
static void fmt_share(gl_i128 part, gl_i128 whole, char *buf, size_t n)
{
    if (whole <= 0) {
        snprintf(buf, n, "—");
        return;
    }
    char d[64];
    gl_dec_format(gl_div_half_even(part * 1000, whole), 1, d, sizeof d);
    snprintf(buf, n, "%s%%", d);
}

static const char *kind_label(enum gl_line_kind kind)
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

static bool is_share(enum gl_line_kind k)
{
    return k == GL_LINE_IDLE_SHARE || k == GL_LINE_OVERHEAD_SHARE;
}

static const char *month_name(int month)
{
    static const char *const m[] = {"January", "February", "March",     "April",
                                    "May",     "June",     "July",      "August",
                                    "September", "October", "November", "December"};
    return month >= 1 && month <= 12 ? m[month - 1] : "";
}

static const char *policy_text(const struct gl_config *c)
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

/* Team colours of the fleet chart, in team id order. */
static const char *const palette[] = {"#2563eb", "#16a34a", "#9333ea", "#ea580c", "#0891b2",
                                      "#db2777", "#65a30d", "#4f46e5", "#b45309", "#0d9488"};
#define NPALETTE (sizeof palette / sizeof *palette)
#define COLOR_USED "#2563eb"
#define COLOR_ALLOC "#bfdbfe"
#define COLOR_IDLE "#cbd5e1"
#define COLOR_OVERHEAD "#64748b"

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

/* ------------------------------------------------------------ SVG charts */

/* v / max of span pixels, floored; 0 when max is 0. */
static int px(gl_i128 v, gl_i128 max, int span)
{
    if (max <= 0 || v <= 0)
        return 0;
    return (int)(v * span / max);
}

/* The smallest 1-2-5 step (nano-GB-hours) that covers max in five steps. */
static gl_i128 nice_step(gl_i128 max)
{
    static const int mult[] = {1, 2, 5};
    for (gl_i128 p = 1;; p *= 10)
        for (int i = 0; i < 3; i++)
            if (p * mult[i] * 5 >= max)
                return p * mult[i];
}

/* Gridlines and GB-hour tick labels of a vertical axis; returns its top. */
static gl_i128 svg_axis(FILE *f, gl_i128 max, int left, int right, int top, int height)
{
    gl_i128 step = nice_step(max > 0 ? max : 1000000000);
    gl_i128 axis_top = step * ((max + step - 1) / step);
    if (axis_top <= 0)
        axis_top = step;
    for (gl_i128 k = 0; k * step <= axis_top; k++) {
        int y = top + height - px(k * step, axis_top, height);
        char t[64];
        gl_dec_format_trim(k * step, GL_GBH_DECIMALS, t, sizeof t);
        fprintf(f,
                "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\"/>"
                "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"tick\">%s</text>\n",
                left, y, right, y, k ? "#e5e7eb" : "#9ca3af", left - 8, y + 4, t);
    }
    return axis_top;
}

static void svg_day_labels(FILE *f, const struct gl_day_axis *ax, int left, int width, int y)
{
    for (size_t i = 0; i < ax->n; i++) {
        char d[16];
        gl_date_format(ax->first + (int64_t)i * 86400, d, sizeof d);
        int x0 = left + (int)(i * (size_t)width / ax->n);
        int x1 = left + (int)((i + 1) * (size_t)width / ax->n);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" class=\"tick\">%s</text>\n",
                (x0 + x1) / 2, y, d + 8);
    }
}

/* Daily used (solid) inside allocated (light) GB-hours per UTC day. */
static void svg_daily_used(FILE *f, const struct gl_team_usage *u, const struct gl_day_axis *ax)
{
    enum { W = 1000, H = 280, L = 90, R = 10, T = 12, B = 30 };
    const int pw = W - L - R, ph = H - T - B;
    gl_i128 max = 0;
    for (size_t i = 0; i < ax->n; i++) {
        gl_i128 a = gl_gbh_nano(u->days[i].used), b = gl_gbh_nano(u->days[i].allocated);
        if (a > max)
            max = a;
        if (b > max)
            max = b;
    }
    fprintf(f, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
               "aria-label=\"Daily GB-hours used and allocated\">\n", W, H);
    gl_i128 top = svg_axis(f, max, L, W - R, T, ph);
    for (size_t i = 0; i < ax->n; i++) {
        const struct gl_day_row *d = &u->days[i];
        int x0 = L + (int)(i * (size_t)pw / ax->n), x1 = L + (int)((i + 1) * (size_t)pw / ax->n);
        int slot = x1 - x0, cx = (x0 + x1) / 2;
        int wa = slot * 8 / 10 < 90 ? slot * 8 / 10 : 90, wu = slot / 2 < 56 ? slot / 2 : 56;
        int ha = px(gl_gbh_nano(d->allocated), top, ph), hu = px(gl_gbh_nano(d->used), top, ph);
        char day[16], a[64], b[64];
        gl_date_format(ax->first + (int64_t)i * 86400, day, sizeof day);
        fmt_gbh(d->used, a, sizeof a);
        fmt_gbh(d->allocated, b, sizeof b);
        fprintf(f,
                "<g><title>%s: used %s GB-h, allocated %s GB-h</title>"
                "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#93c5fd\"/>"
                "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/></g>\n",
                day, a, b, cx - wa / 2, T + ph - ha, wa, ha, COLOR_ALLOC, cx - wu / 2, T + ph - hu,
                wu, hu, COLOR_USED);
    }
    svg_day_labels(f, ax, L, pw, H - 10);
    fputs("</svg>\n", f);
}

/* Daily idle (light) and overhead (dark) shares, stacked. */
static void svg_daily_shares(FILE *f, const struct gl_team_usage *u, const struct gl_day_axis *ax)
{
    enum { W = 1000, H = 240, L = 90, R = 10, T = 12, B = 30 };
    const int pw = W - L - R, ph = H - T - B;
    gl_i128 max = 0;
    for (size_t i = 0; i < ax->n; i++) {
        gl_i128 v = gl_gbh_nano(u->days[i].idle + u->days[i].overhead);
        if (v > max)
            max = v;
    }
    fprintf(f, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
               "aria-label=\"Daily idle and overhead shares\">\n", W, H);
    gl_i128 top = svg_axis(f, max, L, W - R, T, ph);
    for (size_t i = 0; i < ax->n; i++) {
        const struct gl_day_row *d = &u->days[i];
        int x0 = L + (int)(i * (size_t)pw / ax->n), x1 = L + (int)((i + 1) * (size_t)pw / ax->n);
        int slot = x1 - x0, w = slot * 6 / 10 < 70 ? slot * 6 / 10 : 70;
        int x = (x0 + x1) / 2 - w / 2;
        int hall = px(gl_gbh_nano(d->idle + d->overhead), top, ph);
        int ho = px(gl_gbh_nano(d->overhead), top, ph);
        char day[16], a[64], b[64];
        gl_date_format(ax->first + (int64_t)i * 86400, day, sizeof day);
        fmt_gbh(d->idle, a, sizeof a);
        fmt_gbh(d->overhead, b, sizeof b);
        fprintf(f,
                "<g><title>%s: idle %s GB-h, overhead %s GB-h</title>"
                "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>"
                "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/></g>\n",
                day, a, b, x, T + ph - hall, w, hall - ho, COLOR_IDLE, x, T + ph - ho, w, ho,
                COLOR_OVERHEAD);
    }
    svg_day_labels(f, ax, L, pw, H - 10);
    fputs("</svg>\n", f);
}

/* Top workloads: used (solid) over allocated (light), one row each. */
static void svg_workloads(FILE *f, const struct gl_team_workloads *u)
{
    enum { W = 1000, ROW = 28, LABEL = 330, BAR = 500 };
    const int h = ROW * (int)u->n + 8;
    gl_i128 max = 0;
    for (size_t i = 0; i < u->n; i++) {
        if (u->w[i].used > max)
            max = u->w[i].used;
        if (u->w[i].allocated > max)
            max = u->w[i].allocated;
    }
    fprintf(f, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
               "aria-label=\"Top workloads by GB-hours\">\n", W, h);
    for (size_t i = 0; i < u->n; i++) {
        const struct gl_workload_row *r = &u->w[i];
        int y = 4 + (int)i * ROW;
        int wa = px(r->allocated, max, BAR), wu = px(r->used, max, BAR);
        size_t n = strlen(r->ns) + strlen(r->kind) + strlen(r->name) + 3;
        char *full = gl_xcalloc(n, 1), shortl[200], q[64];
        snprintf(full, n, "%s/%s/%s", r->ns, r->kind, r->name);
        shorten(full, 44, shortl, sizeof shortl);
        fmt_gbh(r->used, q, sizeof q);
        fputs("<g><title>", f);
        html(f, r->cluster);
        fputs(" ", f);
        html(f, full);
        fprintf(f, ": used %s GB-h", q);
        fmt_gbh(r->allocated, q, sizeof q);
        fprintf(f, ", allocated %s GB-h</title>\n<text x=\"0\" y=\"%d\" class=\"lbl\">", q,
                y + 17);
        html(f, shortl);
        fmt_gbh(r->used, q, sizeof q);
        fprintf(f,
                "</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"20\" fill=\"%s\"/>"
                "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%d\" y=\"%d\" class=\"val\">%s</text></g>\n",
                LABEL, y + 2, wa, COLOR_ALLOC, LABEL, y + 6, wu, COLOR_USED,
                LABEL + (wa > wu ? wa : wu) + 8, y + 17, q);
        free(full);
    }
    fputs("</svg>\n", f);
}

/* The compute indicator of each GPU model as a 0–1 meter. */
static void svg_compute(FILE *f, const struct gl_invoice *inv)
{
    enum { W = 1000, ROW = 30, LABEL = 330, BAR = 500 };
    size_t n = 0;
    for (size_t i = 0; i < inv->ncompute; i++)
        n += inv->compute[i].b > 0;
    fprintf(f, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
               "aria-label=\"Compute indicator\">\n", W, ROW * (int)n + 8);
    size_t row = 0;
    for (size_t i = 0; i < inv->ncompute; i++) {
        const struct gl_info_row *r = &inv->compute[i];
        if (r->b <= 0)
            continue;
        int y = 4 + (int)row++ * ROW;
        gl_i128 ppm = gl_div_half_even(r->a, r->b);
        char ratio[64], lbl[200];
        fmt_share(r->a, (gl_i128)r->b * 1000000, ratio, sizeof ratio);
        size_t ln = strlen(r->cluster) + strlen(r->model) + 8;
        char *full = gl_xcalloc(ln, 1);
        snprintf(full, ln, "%s · %s", r->cluster, r->model);
        shorten(full, 44, lbl, sizeof lbl);
        fputs("<g><title>", f);
        html(f, full);
        fprintf(f, ": busy %s of %lld device steps (indicator, not billed)</title>",
                ratio, (long long)r->b);
        fprintf(f, "<text x=\"0\" y=\"%d\" class=\"lbl\">", y + 17);
        html(f, lbl);
        fprintf(f,
                "</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"18\" fill=\"#f3f4f6\" "
                "stroke=\"#d1d5db\"/><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"18\" "
                "fill=\"#7c3aed\"/><text x=\"%d\" y=\"%d\" class=\"val\">%s</text></g>\n",
                LABEL, y + 3, BAR, LABEL, y + 3, px(ppm, 1000000, BAR), LABEL + BAR + 8, y + 17,
                ratio);
        free(full);
    }
    fputs("</svg>\n", f);
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
        fmt_gbh(m->v[GL_F_CAP], cap, sizeof cap);
        size_t ln = strlen(m->cluster) + strlen(m->model) + 8;
        char *full = gl_xcalloc(ln, 1);
        snprintf(full, ln, "%s · %s", m->cluster, m->model);
        shorten(full, 80, lbl, sizeof lbl);
        fprintf(f, "<text x=\"0\" y=\"%d\" class=\"lbl\"><tspan font-weight=\"600\">", y + 16);
        html(f, lbl);
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
            int x0 = px(cum, denom, W);
            cum += q;
            int x1 = px(cum, denom, W);
            char g[64], sh[64], tl[64];
            fmt_gbh(q, g, sizeof g);
            fmt_share(q, m->v[GL_F_CAP], sh, sizeof sh);
            fputs("<g><title>", f);
            html(f, name);
            fprintf(f, ": %s GB-h (%s of capacity)</title>", g, sh);
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
                       "stroke=\"#fff\"/>", x0, by, x1 - x0, BARH, color);
            if (x1 - x0 >= 70) {
                shorten(name, (size_t)(x1 - x0 - 12) / 8, tl, sizeof tl);
                fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"seg%s\">", x0 + 6, by + 20,
                        k == m->nteams + 1 ? " dark" : "");
                html(f, tl);
                fputs("</text>", f);
            }
            fputs("</g>\n", f);
        }
        if (denom > m->v[GL_F_CAP]) {
            int xc = px(m->v[GL_F_CAP], denom, W);
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
    html(f, title1);
    html(f, title2);
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

static void swatch(FILE *f, const char *color, const char *label)
{
    fprintf(f, "<span class=\"sw\" style=\"background:%s\"></span>", color);
    html(f, label);
}

struct team_ctx {
    const struct gl_config *c;
    const struct gl_invoice_set *set;
    const struct gl_invoice *inv;
    const struct gl_team_usage *u;
    const struct gl_day_axis *ax;
    const struct gl_team_extra *e; /* workloads, trend, waste in money */
    const struct gl_statement *st;
};

/* The amount of a figure in minor units as "12.34 EUR". */
static void fmt_money(const struct gl_config *c, gl_i128 minor, char *buf, size_t n)
{
    char d[80];
    gl_dec_format(minor, c->minor_digits, d, sizeof d);
    snprintf(buf, n, "%s %s", d, c->currency);
}

/* The reserved-unused money of a (cluster, model), or NULL. */
static const struct gl_waste_money *waste_money(const struct team_ctx *x, const char *cluster,
                                                const char *model)
{
    for (size_t i = 0; x->e && i < x->e->nwaste; i++)
        if (!strcmp(x->e->waste[i].cluster, cluster) && !strcmp(x->e->waste[i].model, model))
            return &x->e->waste[i];
    return NULL;
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
        html(f, b.data ? b.data : "");
        fputs(" (usage of these hours collected later is billed as corrections of a later "
              "month)</p>\n", f);
    } else {
        fputs("- **Incomplete at close** (closed with --force): ", f);
        md(f, b.data ? b.data : "");
        fputs(" (usage of these hours collected later is billed as corrections of a later "
              "month)\n", f);
    }
    gl_buf_free(&b);
}

/* Price entries of the invoice's lines, one row per (entry, model): a
 * GPU-Hours entry's per-GB-hour price depends on the model's capacity. */
static bool first_price_use(const struct gl_invoice *inv, size_t j)
{
    const struct gl_invoice_line *l = &inv->lines[j];
    for (size_t i = 0; i < j; i++)
        if (inv->lines[i].price == l->price && strcmp(inv->lines[i].model, l->model) == 0)
            return false;
    return true;
}

static size_t share_lines(const struct gl_invoice *inv)
{
    size_t n = 0;
    for (size_t j = 0; j < inv->nlines; j++)
        n += is_share(inv->lines[j].kind);
    return n;
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

static size_t team_keyfigs(const struct team_ctx *x, struct keyfig *k)
{
    const struct gl_team_usage *u = x->u;
    size_t n = 0;
    char sh[32];
    if (u->used || u->allocated || !u->has_shares) {
        k[n].label = "Memory used";
        fmt_gbh(u->used, k[n].value, sizeof k[n].value);
        snprintf(k[n++].unit, sizeof k->unit, "GB-hours");
        k[n].label = "Allocated";
        fmt_gbh(u->allocated, k[n].value, sizeof k[n].value);
        snprintf(k[n++].unit, sizeof k->unit, "GB-hours");
        k[n].label = "Reserved-unused (waste)";
        fmt_gbh(u->waste, k[n].value, sizeof k[n].value);
        fmt_share(u->waste, u->allocated, sh, sizeof sh);
        char money[64] = "";
        if (x->e && x->e->nwaste)
            fmt_money(x->c, x->e->waste_total, money, sizeof money);
        snprintf(k[n++].unit, sizeof k->unit, "GB-hours · %s of allocation%s%s", sh,
                 money[0] ? " · " : "", money);
    }
    if (u->has_shares) {
        k[n].label = "Idle share";
        fmt_gbh(u->idle_share, k[n].value, sizeof k[n].value);
        snprintf(k[n++].unit, sizeof k->unit, "GB-hours");
        k[n].label = "Overhead share";
        fmt_gbh(u->overhead_share, k[n].value, sizeof k[n].value);
        snprintf(k[n++].unit, sizeof k->unit, "GB-hours");
    }
    k[n].label = "Anomalies";
    snprintf(k[n].value, sizeof k[n].value, "%zu", x->inv->anomalies.n);
    snprintf(k[n++].unit, sizeof k->unit, "%s",
             x->inv->anomalies.n ? "billed as used, listed below" : "billed as used");
    return n;
}

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

static void table_col(struct table *t, const char *head, unsigned flags)
{
    if (t->ncols == TABLE_COLS) { /* a programming error: raise TABLE_COLS */
        fputs("gpuledger: report table with too many columns\n", stderr);
        abort();
    }
    t->head[t->ncols] = head;
    t->col[t->ncols++] = flags;
}

static void table_row(struct table *t)
{
    if (t->nrows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->cells = gl_xrealloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
    }
    memset(&t->cells[t->nrows * t->ncols], 0, t->ncols * sizeof *t->cells);
    t->nrows++;
}

/* Cell k of the last row: our text (flags 0) or a label. */
static void table_cell(struct table *t, size_t k, unsigned flags, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void table_cell(struct table *t, size_t k, unsigned flags, const char *fmt, ...)
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

/* The last row's cell k. */
static struct tcell *table_last(struct table *t, size_t k)
{
    return &t->cells[(t->nrows - 1) * t->ncols + k];
}

static void table_free(struct table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i].text);
    free(t->cells);
    memset(t, 0, sizeof *t);
}

static void table_html(FILE *f, const struct table *t)
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
                html(f, c->team);
                fputs("\"", f);
            }
            fputs(">", f);
            if (c->swatch)
                fprintf(f, "<span class=\"sw\" style=\"background:%s\"></span>", c->swatch);
            fputs(c->flags & CELL_CODE ? "<code>" : c->flags & CELL_ALERT ? "<b>" : "", f);
            if (c->flags & CELL_LINK) {
                fputs("<a href=\"", f);
                html(f, c->text);
                fputs(".html\">report</a>", f);
            } else if (c->flags & CELL_LABEL) {
                html(f, c->text);
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

static void table_md(FILE *f, const struct table *t)
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
                md(f, c->text);
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

/* ---- the team page: its sections' tables ---- */

static void tbl_daily(const struct team_ctx *x, struct table *t)
{
    const struct gl_team_usage *u = x->u;
    table_col(t, "UTC day", 0);
    table_col(t, "Used GB-h", COL_N);
    table_col(t, "Allocated GB-h", COL_N);
    table_col(t, "Reserved-unused GB-h", COL_N);
    if (u->has_shares) {
        table_col(t, "Idle share GB-h", COL_N);
        table_col(t, "Overhead share GB-h", COL_N);
    }
    for (size_t i = 0; i < x->ax->n; i++) {
        const struct gl_day_row *d = &u->days[i];
        char day[16], v[96];
        gl_date_format(x->ax->first + (int64_t)i * 86400, day, sizeof day);
        table_row(t);
        table_cell(t, 0, 0, "%s", day);
        const int64_t fig[] = {d->used, d->allocated, d->waste, d->idle, d->overhead};
        for (size_t k = 1; k < t->ncols; k++) {
            fmt_gbh(fig[k - 1], v, sizeof v);
            table_cell(t, k, 0, "%s", v);
        }
    }
}

static void tbl_workloads(const struct team_ctx *x, struct table *t)
{
    const struct gl_team_usage *u = x->u;
    const struct gl_team_workloads *w = &x->e->workloads;
    table_col(t, "#", COL_MD_RIGHT);
    table_col(t, "Cluster", 0);
    table_col(t, "Namespace", 0);
    table_col(t, "Workload", 0);
    table_col(t, "Pods", COL_N);
    table_col(t, "Used GB-h", COL_N);
    table_col(t, "Share of team", COL_N);
    table_col(t, "Allocated GB-h", COL_N);
    table_col(t, "Reserved-unused GB-h", COL_N);
    for (size_t i = 0; i < w->n; i++) {
        const struct gl_workload_row *r = &w->w[i];
        char v[96];
        table_row(t);
        table_cell(t, 0, 0, "%zu", i + 1);
        table_cell(t, 1, CELL_LABEL, "%s", r->cluster);
        table_cell(t, 2, CELL_LABEL, "%s", r->ns);
        table_cell(t, 3, CELL_LABEL | (r->estimated ? CELL_EST : 0), "%s/%s", r->kind, r->name);
        table_cell(t, 4, 0, "%lld", (long long)r->pods);
        fmt_gbh(r->used, v, sizeof v);
        table_cell(t, 5, 0, "%s", v);
        fmt_share(r->used, u->used, v, sizeof v);
        table_cell(t, 6, 0, "%s", v);
        fmt_gbh(r->allocated, v, sizeof v);
        table_cell(t, 7, 0, "%s", v);
        fmt_gbh(r->waste, v, sizeof v);
        table_cell(t, 8, 0, "%s", v);
    }
}

/* Change of b against a as a signed percentage ("+12.3%"), "—" without a. */
static void fmt_change(gl_i128 a, gl_i128 b, char *buf, size_t n)
{
    if (a <= 0) {
        snprintf(buf, n, "—");
        return;
    }
    char d[64];
    gl_dec_format(gl_div_half_even((b - a) * 1000, a), 1, d, sizeof d);
    snprintf(buf, n, "%s%s%%", b >= a ? "+" : "", d);
}

/* Earlier months, then this one: memory used and the invoice total. */
static void tbl_trend(const struct team_ctx *x, struct table *t)
{
    table_col(t, "Month", 0);
    table_col(t, "Status", 0);
    table_col(t, "Used GB-h", COL_N);
    table_col(t, "Change", COL_N);
    snprintf(t->head_buf[0], sizeof t->head_buf[0], "Invoice total (%s)", x->c->currency);
    table_col(t, t->head_buf[0], COL_N);
    table_col(t, "Change", COL_N);
    int64_t prev_used = 0;
    gl_i128 prev_total = 0;
    bool prev_has_total = false;
    for (size_t i = 0; i <= x->e->ntrend; i++) {
        bool now = i == x->e->ntrend;
        const struct gl_trend_row *r = now ? NULL : &x->e->trend[i];
        int64_t used = now ? x->u->used : r->used;
        bool has_total = now || r->closed;
        gl_i128 total = now ? x->inv->total : r->total_minor;
        char v[96];
        table_row(t);
        table_cell(t, 0, 0, "%s%s", now ? x->set->period.name : r->period,
                   now ? " (this report)" : "");
        table_cell(t, 1, 0, "%s", now ? (x->st->closed ? "final" : "draft")
                                      : r->closed ? "final" : "open (not totalled here)");
        fmt_gbh(used, v, sizeof v);
        table_cell(t, 2, 0, "%s", v);
        fmt_change(i ? prev_used : 0, used, v, sizeof v);
        table_cell(t, 3, 0, "%s", v);
        if (has_total)
            gl_dec_format(total, x->c->minor_digits, v, sizeof v);
        else
            snprintf(v, sizeof v, "—");
        table_cell(t, 4, 0, "%s", v);
        fmt_change(i && prev_has_total && has_total ? prev_total : 0, total, v, sizeof v);
        table_cell(t, 5, 0, "%s", v);
        prev_used = used;
        prev_total = total;
        prev_has_total = has_total;
    }
}

static void tbl_waste(const struct team_ctx *x, struct table *t)
{
    const struct gl_invoice *inv = x->inv;
    table_col(t, "Cluster", 0);
    table_col(t, "GPU model", 0);
    table_col(t, "Allocated GB-h", COL_N);
    table_col(t, "GPU-hours", COL_N);
    table_col(t, "Reserved-unused GB-h", COL_N);
    table_col(t, "Share of allocation", COL_N);
    snprintf(t->head_buf[0], sizeof t->head_buf[0], "At the applicable price (%s)",
             x->c->currency);
    table_col(t, t->head_buf[0], COL_N);
    for (size_t i = 0; i < inv->nallocated; i++) {
        const struct gl_info_row *r = &inv->allocated[i];
        int64_t waste = 0;
        for (size_t k = 0; k < inv->nwaste; k++)
            if (!strcmp(inv->waste[k].cluster, r->cluster) &&
                !strcmp(inv->waste[k].model, r->model))
                waste = inv->waste[k].a;
        char v[96];
        table_row(t);
        table_cell(t, 0, CELL_LABEL, "%s", r->cluster);
        table_cell(t, 1, CELL_LABEL, "%s", r->model);
        fmt_gbh(r->a, v, sizeof v);
        table_cell(t, 2, 0, "%s", v);
        fmt_read(gl_div_half_even((gl_i128)r->b * 1000, 3600), v, sizeof v);
        table_cell(t, 3, 0, "%s", v);
        fmt_gbh(waste, v, sizeof v);
        table_cell(t, 4, 0, "%s", v);
        fmt_share(waste, r->a, v, sizeof v);
        table_cell(t, 5, 0, "%s", v);
        const struct gl_waste_money *m = waste_money(x, r->cluster, r->model);
        if (m)
            gl_dec_format(m->amount, x->c->minor_digits, v, sizeof v);
        else
            snprintf(v, sizeof v, "%s", waste ? "—" : "0");
        table_cell(t, 6, 0, "%s%s", v, m && m->unpriced ? " (hours without a price left out)" : "");
    }
}

/* The invoice's lines (only the idle and overhead shares when shares_only). */
static void tbl_lines(const struct team_ctx *x, struct table *t, bool shares_only)
{
    const struct gl_config *c = x->c;
    const struct gl_invoice *inv = x->inv;
    table_col(t, "Cluster", 0);
    table_col(t, "GPU model", 0);
    table_col(t, "Kind", 0);
    table_col(t, "GB-hours", COL_N);
    if (!shares_only) {
        snprintf(t->head_buf[0], sizeof t->head_buf[0], "Unit price (%s per GB-hour)",
                 c->currency);
        table_col(t, t->head_buf[0], COL_N);
    }
    table_col(t, "Price entry", 0);
    snprintf(t->head_buf[1], sizeof t->head_buf[1], "Amount (%s)", c->currency);
    table_col(t, t->head_buf[1], COL_N);
    for (size_t j = 0; j < inv->nlines; j++) {
        const struct gl_invoice_line *l = &inv->lines[j];
        if (shares_only && !is_share(l->kind))
            continue;
        char v[96];
        size_t k = 0;
        table_row(t);
        table_cell(t, k++, CELL_LABEL, "%s", l->cluster);
        table_cell(t, k++, CELL_LABEL, "%s", l->model);
        table_cell(t, k++, 0, "%s%s%s%s", kind_label(l->kind),
                   !shares_only && l->estimated ? " (estimated)" : "",
                   l->corrected_period[0] ? ", correction of " : "", l->corrected_period);
        fmt_gbh(l->mib_s, v, sizeof v);
        table_cell(t, k++, 0, "%s", v);
        if (!shares_only) {
            gl_dec_format_trim(l->unit_price12, GL_PRICE_DECIMALS, v, sizeof v);
            table_cell(t, k++, 0, "%s", v);
        }
        table_cell(t, k++, CELL_LABEL, "%s", l->price->id);
        gl_dec_format(l->amount, c->minor_digits, v, sizeof v);
        table_cell(t, k++, 0, "%s", v);
    }
    if (!shares_only) {
        t->sum = true;
        snprintf(t->sum_bold, sizeof t->sum_bold, "Total");
        snprintf(t->sum_rest, sizeof t->sum_rest, " (sum of the %zu rounded lines)", inv->nlines);
        gl_dec_format(inv->total, c->minor_digits, t->sum_value, sizeof t->sum_value);
    }
}

static void tbl_compute(const struct team_ctx *x, struct table *t)
{
    const struct gl_invoice *inv = x->inv;
    table_col(t, "Cluster", 0);
    table_col(t, "GPU model", 0);
    table_col(t, "Busy (share of device steps)", COL_N);
    table_col(t, "Device steps", COL_N);
    for (size_t i = 0; i < inv->ncompute; i++) {
        const struct gl_info_row *r = &inv->compute[i];
        if (r->b <= 0)
            continue;
        char v[96];
        table_row(t);
        table_cell(t, 0, CELL_LABEL, "%s", r->cluster);
        table_cell(t, 1, CELL_LABEL, "%s", r->model);
        fmt_share(r->a, (gl_i128)r->b * 1000000, v, sizeof v);
        table_cell(t, 2, 0, "%s", v);
        table_cell(t, 3, 0, "%lld", (long long)r->b);
    }
}

static void tbl_anomalies(const struct team_ctx *x, struct table *t)
{
    const struct gl_invoice *inv = x->inv;
    static const char *const heads[] = {"Kind", "Namespace/pod", "Node", "Device", "GPU model"};
    for (size_t k = 0; k < 5; k++)
        table_col(t, heads[k], 0);
    table_col(t, "First seen", COL_T);
    table_col(t, "Last seen", COL_T);
    table_col(t, "GB-hours", COL_N);
    t->wide = true;
    for (size_t i = 0; i < inv->anomalies.n; i++) {
        const struct gl_anomaly *y = &inv->anomalies.items[i];
        char v[96];
        table_row(t);
        table_cell(t, 0, CELL_LABEL, "%s", gl_anomaly_kind_name(y->kind));
        table_cell(t, 1, CELL_LABEL, "%s/%s", y->ns, y->pod);
        table_cell(t, 2, CELL_LABEL, "%s", y->node);
        table_cell(t, 3, CELL_LABEL, "%s", y->device);
        table_cell(t, 4, CELL_LABEL, "%s", y->model);
        gl_time_format(y->first_seen, v, sizeof v);
        table_cell(t, 5, 0, "%s", v);
        gl_time_format(y->last_seen, v, sizeof v);
        table_cell(t, 6, 0, "%s", v);
        fmt_gbh(y->mib_s, v, sizeof v);
        table_cell(t, 7, 0, "%s", v);
    }
}

static void tbl_prices(const struct team_ctx *x, struct table *t)
{
    const struct gl_invoice *inv = x->inv;
    static const char *const heads[] = {"Price entry", "GPU model", "Model pattern", "Unit"};
    for (size_t k = 0; k < 4; k++)
        table_col(t, heads[k], 0);
    table_col(t, "List price", COL_N);
    table_col(t, "Per GB-hour", COL_N);
    table_col(t, "Currency", 0);
    table_col(t, "Valid from", COL_T);
    table_col(t, "Valid to", COL_T);
    t->wide = true;
    for (size_t j = 0; j < inv->nlines; j++) {
        const struct gl_invoice_line *l = &inv->lines[j];
        if (!first_price_use(inv, j))
            continue;
        const struct gl_price_entry *e = l->price;
        char v[96];
        table_row(t);
        table_cell(t, 0, CELL_LABEL, "%s", e->id);
        table_cell(t, 1, CELL_LABEL, "%s", l->model);
        table_cell(t, 2, CELL_LABEL | CELL_CODE, "%s", e->pattern);
        table_cell(t, 3, 0, "%s", e->unit == GL_PRICE_GPU_HOURS ? "GPU-Hours" : "GB-Hours");
        gl_dec_format_trim(e->price12, GL_PRICE_DECIMALS, v, sizeof v);
        table_cell(t, 4, 0, "%s", v);
        gl_dec_format_trim(l->unit_price12, GL_PRICE_DECIMALS, v, sizeof v);
        table_cell(t, 5, 0, "%s", v);
        table_cell(t, 6, CELL_LABEL, "%s", e->currency);
        gl_time_format(e->valid_from, v, sizeof v);
        table_cell(t, 7, 0, "%s", v);
        if (e->valid_to == INT64_MAX)
            snprintf(v, sizeof v, "open");
        else
            gl_time_format(e->valid_to, v, sizeof v);
        table_cell(t, 8, 0, "%s", v);
    }
}

static void tbl_lines_all(const struct team_ctx *x, struct table *t)
{
    tbl_lines(x, t, false);
}

static void tbl_shares(const struct team_ctx *x, struct table *t)
{
    tbl_lines(x, t, true);
}

/* ---- the team page: a list of sections both formats walk ----
 *
 * Each section: its title, whether it has rows (else its note), what comes
 * between the title and the table in each format (charts and legends in
 * HTML, a count or a sentence in both), and its table. */

enum fmt { FMT_HTML, FMT_MD };

struct section {
    const char *title;
    bool (*has_rows)(const struct team_ctx *x);
    const char *empty; /* the note without rows */
    void (*intro)(FILE *f, enum fmt fmt, const struct team_ctx *x); /* may be NULL */
    bool intro_always; /* the intro says what the section is: also without rows */
    void (*table)(const struct team_ctx *x, struct table *t);
    bool open_only; /* follows today's config and prices: not on a closed month's page */
};

static bool has_pods(const struct team_ctx *x)
{
    return x->e->workloads.n > 0;
}

static bool has_alloc(const struct team_ctx *x)
{
    return x->inv->nallocated || x->inv->nwaste;
}

static bool has_shares(const struct team_ctx *x)
{
    return share_lines(x->inv) > 0;
}

static bool has_compute(const struct team_ctx *x)
{
    for (size_t i = 0; i < x->inv->ncompute; i++)
        if (x->inv->compute[i].b > 0)
            return true;
    return false;
}

static bool has_anomalies(const struct team_ctx *x)
{
    return x->inv->anomalies.n > 0;
}

static bool always(const struct team_ctx *x)
{
    (void)x;
    return true;
}

/* A sentence of the page: in HTML a <p class=cls>, in Markdown a paragraph. */
static void para_open(FILE *f, enum fmt fmt, const char *cls)
{
    if (fmt == FMT_HTML)
        fprintf(f, "<p class=\"%s\">", cls);
}

static void para_close(FILE *f, enum fmt fmt)
{
    fputs(fmt == FMT_HTML ? "</p>\n" : "\n\n", f);
}

/* `text` as code: <code> in HTML, backquotes in Markdown; escaped. */
static void code(FILE *f, enum fmt fmt, const char *text)
{
    fputs(fmt == FMT_HTML ? "<code>" : "`", f);
    (fmt == FMT_HTML ? html : md)(f, text);
    fputs(fmt == FMT_HTML ? "</code>" : "`", f);
}

static void intro_daily(FILE *f, enum fmt fmt, const struct team_ctx *x)
{
    const struct gl_team_usage *u = x->u;
    if (fmt != FMT_HTML)
        return;
    if (u->used || u->allocated) {
        svg_daily_used(f, u, x->ax);
        fputs("<p class=\"legend\">", f);
        swatch(f, COLOR_USED, "memory used (billed)");
        swatch(f, COLOR_ALLOC, "allocated (GPU requests of running pods)");
        fputs(" · UTC days; hover a bar for exact figures</p>\n", f);
    } else {
        fputs("<p class=\"note\">No pod of this team held GPU memory or a GPU allocation in "
              "the period.</p>\n",
              f);
    }
    if (u->has_shares) {
        fputs("<h2>Daily idle and overhead shares</h2>\n", f);
        svg_daily_shares(f, u, x->ax);
        fputs("<p class=\"legend\">", f);
        swatch(f, COLOR_IDLE, "idle");
        swatch(f, COLOR_OVERHEAD, "overhead (driver-reserved + unattributed)");
        fputs("</p>\n", f);
    }
}

static void intro_pods(FILE *f, enum fmt fmt, const struct team_ctx *x)
{
    const struct gl_team_workloads *w = &x->e->workloads;
    if (fmt == FMT_HTML) {
        svg_workloads(f, w);
        fputs("<p class=\"legend\">", f);
        swatch(f, COLOR_USED, "memory used");
        swatch(f, COLOR_ALLOC, "allocated");
        fprintf(f, " · %zu of %lld workloads, %lld pods</p>\n", w->n, (long long)w->total,
                (long long)x->u->pods_total);
    } else {
        fprintf(f, "%zu of %lld workloads, %lld pods.\n\n", w->n, (long long)w->total,
                (long long)x->u->pods_total);
    }
    para_open(f, fmt, "note");
    fputs("A workload is the pods of one owner (kube-state-metrics ", f);
    code(f, fmt, "kube_pod_owner");
    fputs(": Deployment, StatefulSet, Job, ...; a ReplicaSet named with a pod-template-hash "
          "shows as its Deployment); a pod without a known owner is its own workload (",
          f);
    code(f, fmt, "Pod/<name>");
    fputs(").", f);
    para_close(f, fmt);
}

/* What idle and overhead are and where they went this period, on every
 * team page: a team that carries no share still reads why the platform's
 * invoice is large (or why its own share is what it is). */
static void intro_idle_explained(FILE *f, enum fmt fmt, const struct team_ctx *x)
{
    const struct gl_config *c = x->c;
    const struct gl_fleet *fl = &x->st->fleet;
    gl_i128 cap = 0, idle = 0, overhead = 0; /* 128-bit sums of int64: no overflow */
    for (size_t i = 0; i < fl->n; i++) {
        cap += fl->m[i].v[GL_F_CAP];
        idle += fl->m[i].v[GL_F_IDLE];
        overhead += (gl_i128)fl->m[i].v[GL_F_RESERVED] + fl->m[i].v[GL_F_UNATTR];
    }
    char a[96], b[96], pa[32], pb[32];
    fmt_gbh(idle, a, sizeof a);
    fmt_gbh(overhead, b, sizeof b);
    fmt_share(idle, cap, pa, sizeof pa);
    fmt_share(overhead, cap, pb, sizeof pb);
    para_open(f, fmt, "note");
    const char *bo = fmt == FMT_HTML ? "<b>" : "**", *bc = fmt == FMT_HTML ? "</b>" : "**";
    fprintf(f,
            "%sIdle%s is GPU memory that no pod held (capacity minus used minus overhead); "
            "%soverhead%s is memory the driver reserves plus memory in use that no pod "
            "accounts for. This period the fleet had %s GB-h idle (%s of capacity) and %s GB-h "
            "overhead (%s). Both are %s",
            bo, bc, bo, bc, a, pa, b, pb, policy_text(c));
    if (c->idle_policy == GL_IDLE_PLATFORM) {
        fputs(" (", f);
        code(f, fmt, c->platform_team);
        fputs("), so that team's invoice carries them and other teams' do not", f);
    }
    fputs(".", f);
    para_close(f, fmt);
}

static void intro_shares(FILE *f, enum fmt fmt, const struct team_ctx *x)
{
    intro_idle_explained(f, fmt, x);
}

static void intro_trend(FILE *f, enum fmt fmt, const struct team_ctx *x)
{
    (void)x;
    para_open(f, fmt, "note");
    fputs("Earlier months from the ledger: memory used from the stored usage, the invoice total "
          "as frozen when the month was closed (an open month is not totalled here).",
          f);
    para_close(f, fmt);
}

static void intro_waste(FILE *f, enum fmt fmt, const struct team_ctx *x)
{
    para_open(f, fmt, "note");
    fputs(fmt == FMT_HTML ? "Allocated minus used, per pod and step, when positive: memory "
                            "requested and held idle. "
                          : "Allocated minus used, per pod and step, when positive. ",
          f);
    bool max = x->c->basis == GL_BASIS_MAX;
    fputs(max ? "Billed (billing basis " : "Shown as information, not billed (billing basis ", f);
    fputs(fmt == FMT_HTML ? "<code>" : "`", f);
    fputs(max ? "max" : "used", f);
    fputs(fmt == FMT_HTML ? "</code>" : "`", f);
    fputs(max ? ")." : ").", f);
    para_close(f, fmt);
}

static void intro_compute(FILE *f, enum fmt fmt, const struct team_ctx *x)
{
    if (fmt == FMT_HTML) {
        fputs("<p class=\"caveat\">", f);
        html(f, gl_compute_caveat);
        fputs("</p>\n", f);
        if (has_compute(x))
            svg_compute(f, x->inv);
    } else {
        fprintf(f, "> %s\n\n", gl_compute_caveat);
    }
}

static void intro_anomalies(FILE *f, enum fmt fmt, const struct team_ctx *x)
{
    if (fmt == FMT_HTML && has_anomalies(x))
        fputs("<p class=\"warn\">GPU memory used without a matching GPU allocation on that node "
              "(<code>unallocated_use</code>, e.g. a container that sees every GPU), or on more "
              "whole GPUs than requested (<code>excess_devices</code>).</p>\n",
              f);
}

/* ---- cost per unit of work: the team's top workloads with work counters ---- */

/* The unit-cost row of a top workload, or NULL. */
static const struct gl_unit_cost_row *unit_cost_of(const struct team_ctx *x,
                                                   const struct gl_workload_row *w)
{
    const struct gl_unit_cost *u = &x->st->unit_cost;
    for (size_t i = 0; i < u->n; i++)
        if (!strcmp(u->rows[i].cluster, w->cluster) && !strcmp(u->rows[i].ns, w->ns) &&
            !strcmp(u->rows[i].kind, w->kind) && !strcmp(u->rows[i].name, w->name))
            return &u->rows[i];
    return NULL;
}

static bool has_unit_cost(const struct team_ctx *x)
{
    for (size_t i = 0; x->c->nwork > 0 && i < x->e->workloads.n; i++)
        if (unit_cost_of(x, &x->e->workloads.w[i]))
            return true;
    return false;
}

/* The cost (memory used) of each top workload, labelled with its costs per unit. */
static void svg_unit_cost(FILE *f, const struct team_ctx *x)
{
    enum { W = 1000, ROW = 28, LABEL = 330, BAR = 220 }; /* the rest for the costs per unit */
    const struct gl_team_workloads *u = &x->e->workloads;
    gl_i128 max = 0;
    for (size_t i = 0; i < u->n; i++) {
        const struct gl_unit_cost_row *r = unit_cost_of(x, &u->w[i]);
        if (r && r->cost_minor > max)
            max = r->cost_minor;
    }
    fprintf(f, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" "
               "aria-label=\"Cost per unit of work\">\n", W, ROW * (int)u->n + 8);
    for (size_t i = 0, row = 0; i < u->n; i++) {
        const struct gl_unit_cost_row *r = unit_cost_of(x, &u->w[i]);
        if (!r)
            continue;
        int y = 4 + (int)row++ * ROW, w = px(r->cost_minor, max, BAR);
        char full[300], shortl[200], cost[96], per[96];
        snprintf(full, sizeof full, "%s/%s/%s", r->ns, r->kind, r->name);
        shorten(full, 44, shortl, sizeof shortl);
        fmt_money(x->c, r->cost_minor, cost, sizeof cost);
        fputs("<g><title>", f);
        html(f, full);
        fprintf(f, ": %s</title>\n<text x=\"0\" y=\"%d\" class=\"lbl\">", cost, y + 17);
        html(f, shortl);
        fprintf(f, "</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"20\" fill=\"%s\"/>"
                   "<text x=\"%d\" y=\"%d\" class=\"val\">%s", LABEL, y + 2, w, COLOR_USED,
                LABEL + w + 8, y + 17, cost);
        for (size_t k = 0; k < r->nwork; k++) {
            if (r->work[k].units <= 0)
                continue;
            char label[64];
            gl_unit_cost_per_label(&r->work[k], label, sizeof label);
            gl_dec_format(r->work[k].per_minor, x->c->minor_digits, per, sizeof per);
            fprintf(f, " · %s per ", per);
            html(f, label);
        }
        fputs(r->nwork ? "</text></g>\n" : " · no work recorded</text></g>\n", f);
    }
    fputs("</svg>\n", f);
}

static void intro_unit_cost(FILE *f, enum fmt fmt, const struct team_ctx *x)
{
    if (fmt == FMT_HTML && has_unit_cost(x))
        svg_unit_cost(f, x);
    para_open(f, fmt, "note");
    fputs("Cost: the memory each workload used at the period's prices; with idle/overhead: "
          "plus its share of its team's idle and overhead lines under the configured policy "
          "(none under platform or unbilled). Units: the increase of its work counters (", f);
    code(f, fmt, "work.counters");
    fputs(", restarts counted from 0, nothing extrapolated). Per 1M tokens, per 1k requests "
          "or inferences, per step, per 1 of any other unit; the team's top workloads.", f);
    para_close(f, fmt);
}

static void tbl_unit_cost(const struct team_ctx *x, struct table *t)
{
    table_col(t, "Cluster", 0);
    table_col(t, "Namespace", 0);
    table_col(t, "Workload", 0);
    table_col(t, "Used GB-h", COL_N);
    table_col(t, "Cost (memory used)", COL_N);
    table_col(t, "With idle/overhead", COL_N);
    table_col(t, "Units", COL_N);
    table_col(t, "Cost per", COL_N);
    for (size_t i = 0; i < x->e->workloads.n; i++) {
        const struct gl_unit_cost_row *r = unit_cost_of(x, &x->e->workloads.w[i]);
        for (size_t k = 0; r && k < (r->nwork ? r->nwork : 1); k++) {
            const struct gl_unit_work *w = r->nwork ? &r->work[k] : NULL;
            char v[96], per[96];
            table_row(t);
            table_cell(t, 0, CELL_LABEL, "%s", r->cluster);
            table_cell(t, 1, CELL_LABEL, "%s", r->ns);
            table_cell(t, 2, CELL_LABEL, "%s/%s", r->kind, r->name);
            fmt_gbh(r->used_mib_s, v, sizeof v);
            table_cell(t, 3, 0, "%s", v);
            fmt_money(x->c, r->cost_minor, v, sizeof v);
            table_cell(t, 4, 0, "%s", v);
            fmt_money(x->c, r->with_shares_minor, v, sizeof v);
            table_cell(t, 5, 0, "%s", x->st->unit_cost.shares ? v : "—");
            if (!w || w->units <= 0) {
                table_cell(t, 6, 0, "%s", w ? "0" : "—");
                table_cell(t, 7, 0, "%s", "no work recorded");
                continue;
            }
            table_cell(t, 6, CELL_LABEL, "%lld %s", (long long)w->units, w->unit);
            char label[64];
            gl_unit_cost_per_label(w, label, sizeof label);
            gl_dec_format(w->per_minor, x->c->minor_digits, per, sizeof per);
            table_cell(t, 7, CELL_LABEL, "%s per %s", per, label);
        }
    }
}

/* ---- right-sizing advice (engine/bill/advice.h; never billed) ---- */

static bool advised(const struct team_ctx *x, const struct gl_advice_line *l)
{
    return l->to != GL_ADV_NONE && strcmp(l->team, x->inv->team) == 0;
}

static bool has_advice(const struct team_ctx *x)
{
    for (size_t i = 0; i < x->st->advice.nlines; i++)
        if (advised(x, &x->st->advice.lines[i]))
            return true;
    return false;
}

static void intro_advice(FILE *f, enum fmt fmt, const struct team_ctx *x)
{
    const struct gl_advice *a = &x->st->advice;
    para_open(f, fmt, "note");
    fprintf(f, "The smallest allocation that held each workload's peak memory per step with "
               "%d %% headroom; p99 is bounded by 1 GiB buckets. Advice only: %s.",
            a->headroom_pct, gl_advise_saving_meaning(a));
    if (a->missing_pod_hours)
        fprintf(f, " No peak data for %lld pod-hours (collected in server mode, or by an earlier "
                   "version): not advised.",
                (long long)a->missing_pod_hours);
    para_close(f, fmt);
}

static void tbl_advice(const struct team_ctx *x, struct table *t)
{
    char al[256], to[512], v[128];
    table_col(t, "Cluster", 0);
    table_col(t, "Workload", 0);
    table_col(t, "GPU model", 0);
    table_col(t, "Allocation", 0);
    table_col(t, "Peak MiB", COL_N);
    table_col(t, "p99 bound MiB", COL_N);
    table_col(t, "Recommended", 0);
    table_col(t, "Saving", COL_N);
    table_col(t, "Assumes", 0);
    for (size_t i = 0; i < x->st->advice.nlines; i++) {
        const struct gl_advice_line *l = &x->st->advice.lines[i];
        if (!advised(x, l))
            continue;
        gl_advise_alloc_text(l, al, sizeof al);
        gl_advise_to_text(l, to, sizeof to);
        table_row(t);
        table_cell(t, 0, CELL_LABEL, "%s", l->cluster);
        table_cell(t, 1, CELL_LABEL, "%s/%s (%s)", l->ns, l->wname, l->wkind);
        table_cell(t, 2, CELL_LABEL, "%s", l->model);
        table_cell(t, 3, CELL_LABEL, "%s", al);
        table_cell(t, 4, 0, "%lld", (long long)l->peak_mib);
        table_cell(t, 5, 0, "%lld", (long long)l->p99_bound_mib);
        table_cell(t, 6, CELL_LABEL, "%s", to);
        fmt_money(x->c, l->saving, v, sizeof v);
        table_cell(t, 7, 0, "%s", v);
        table_cell(t, 8, CELL_LABEL, "%s", l->assumes);
    }
}

/* ---- GPU demand waiting (Pending pods; never billed) ---- */

/* Micro-GPU-seconds, or seconds waited, as hours to 2 decimals for reading
 * (exact GPU-hours in the summary JSON). */
static void fmt_hours(int64_t v, int64_t per_hour, char *buf, size_t n)
{
    gl_dec_format(gl_div_half_even((gl_i128)v * 100, per_hour), 2, buf, n);
}

/* GPU-hours waiting per team (the fleet's only), cluster and GPU model. */
static void tbl_pending_keys(const struct gl_pending *pd, bool teams, struct table *t)
{
    if (teams)
        table_col(t, "Team", 0);
    table_col(t, "Cluster", 0);
    table_col(t, "GPU model", 0);
    table_col(t, "GPU-h waiting", COL_N);
    const size_t c = teams ? 1 : 0;
    for (size_t i = 0; i < pd->nk; i++) {
        char v[96];
        table_row(t);
        if (teams)
            table_cell(t, 0, CELL_LABEL, "%s", pd->k[i].team);
        table_cell(t, c, CELL_LABEL, "%s", pd->k[i].cluster);
        table_cell(t, c + 1, CELL_LABEL, "%s", pd->k[i].model);
        fmt_hours(pd->k[i].gpu_us, INT64_C(3600000000), v, sizeof v);
        table_cell(t, c + 2, 0, "%s", v);
    }
}

/* The longest waits, with each pod's team on the fleet's list only. */
static void tbl_pending_waits(const struct gl_pending *pd, bool teams, struct table *t)
{
    table_col(t, "Cluster", 0);
    table_col(t, "Pod", 0);
    if (teams)
        table_col(t, "Team", 0);
    table_col(t, "First Pending (UTC)", 0);
    table_col(t, "Hours, first to last Pending", COL_N);
    table_col(t, "GPU-h", COL_N);
    const size_t c = teams ? 3 : 2;
    for (size_t i = 0; i < pd->np; i++) {
        const struct gl_pending_pod *w = &pd->p[i];
        char v[96];
        table_row(t);
        table_cell(t, 0, CELL_LABEL, "%s", w->cluster);
        table_cell(t, 1, CELL_LABEL | CELL_CODE, "%s/%s", w->ns, w->pod);
        if (teams)
            table_cell(t, 2, CELL_LABEL, "%s", w->team);
        gl_time_format(w->first_seen, v, sizeof v);
        table_cell(t, c, 0, "%s", v);
        fmt_hours(w->waited_s, 3600, v, sizeof v);
        table_cell(t, c + 1, 0, "%s", v);
        fmt_hours(w->gpu_us, INT64_C(3600000000), v, sizeof v);
        table_cell(t, c + 2, 0, "%s", v);
    }
}

static const char pending_note[] =
    "GPUs requested by pods while Pending (kube-state-metrics): demand the fleet did not "
    "serve, never billed. A MIG profile counts its slices/7 of a GPU; a time-slicing share "
    "1/replicas of its node's GPU, or a whole GPU while the pod has no node.";

static bool has_team_pending(const struct team_ctx *x)
{
    return x->e->pending.nk || x->e->pending.np;
}

/* The team's GPU-hours waiting per cluster and model, then what the table
 * (its longest waits) lists. */
static void intro_team_pending(FILE *f, enum fmt fmt, const struct team_ctx *x)
{
    const struct gl_pending *pd = &x->e->pending;
    struct table t = {0};
    tbl_pending_keys(pd, false, &t);
    (fmt == FMT_HTML ? table_html : table_md)(f, &t);
    table_free(&t);
    if (fmt == FMT_MD)
        fputc('\n', f);
    para_open(f, fmt, "note");
    fprintf(f, "%s Longest waits (%zu of %lld pods):", pending_note, pd->np,
            (long long)pd->pods);
    para_close(f, fmt);
}

static void tbl_team_waits(const struct team_ctx *x, struct table *t)
{
    tbl_pending_waits(&x->e->pending, false, t);
}

static const struct section team_sections[] = {
    {"Daily GB-hours: used vs allocated", always, NULL, intro_daily, true, tbl_daily, false},
    {"Month over month", always, NULL, intro_trend, true, tbl_trend, false},
    {"Top workloads by GB-hours", has_pods,
     "No pods: this invoice holds fleet shares only.", intro_pods, false, tbl_workloads, false},
    {"Reserved-unused memory (waste)", has_alloc, "No GPU allocation in the period.",
     intro_waste, true, tbl_waste, false},
    {"Idle and overhead shares", has_shares, "This team carries no idle or overhead share.",
     intro_shares, true, tbl_shares, false},
    {"Compute indicator (not billed)", has_compute, "No busy samples for this team's devices.",
     intro_compute, true, tbl_compute, false},
    {"Right-sizing advice (not billed)", has_advice,
     "Nothing to recommend: every workload's allocation fits its peak with the headroom.",
     intro_advice, true, tbl_advice, true},
    {"Anomalies (billed as used)", has_anomalies, "None.", intro_anomalies, false,
     tbl_anomalies, false},
    /* no empty note: left out of the page without rows (no work counters) */
    {"Cost per unit of work", has_unit_cost, NULL, intro_unit_cost, false, tbl_unit_cost, true},
    /* left out without Pending pods, as on the fleet page */
    {"GPU demand waiting (Pending pods)", has_team_pending, NULL, intro_team_pending, false,
     tbl_team_waits, true},
    {"Invoice lines", always, NULL, NULL, false, tbl_lines_all, false},
    {"Prices applied", always, NULL, NULL, false, tbl_prices, false},
};

static void team_sections_write(FILE *f, enum fmt fmt, const struct team_ctx *x)
{
    for (size_t i = 0; i < sizeof team_sections / sizeof *team_sections; i++) {
        const struct section *s = &team_sections[i];
        if (s->open_only && x->st->closed)
            continue;
        bool rows = s->has_rows(x);
        if (!rows && !s->empty)
            continue;
        if (fmt == FMT_HTML)
            fprintf(f, "<h2>%s</h2>\n", s->title);
        else
            fprintf(f, "%s## %s\n\n", i ? "\n" : "", s->title);
        if (s->intro && (rows || s->intro_always))
            s->intro(f, fmt, x);
        if (!rows) {
            if (fmt == FMT_HTML)
                fprintf(f, "<p class=\"note\">%s</p>\n", s->empty);
            else
                fprintf(f, "%s\n", s->empty);
            continue;
        }
        struct table t = {0};
        s->table(x, &t);
        (fmt == FMT_HTML ? table_html : table_md)(f, &t);
        table_free(&t);
    }
}

static void team_html(FILE *f, const void *vctx)
{
    const struct team_ctx *x = vctx;
    const struct gl_config *c = x->c;
    const struct gl_invoice *inv = x->inv;
    const struct gl_period *p = &x->set->period;
    char a[96];

    html_head(f, x->st->closed ? "GPU report — " : "DRAFT GPU report — ", inv->team_name);
    fputs("<h1>GPU report: ", f);
    html(f, inv->team_name);
    fprintf(f, " <span class=\"note\">(<code>");
    html(f, inv->team);
    fprintf(f, "</code>)</span></h1>\n<p class=\"meta\">%s %d · invoice <code>", month_name(p->month),
            p->year);
    html(f, inv->invoice_id);
    fputs("</code> · cost center ", f);
    html(f, inv->cost_center ? inv->cost_center : "—");
    day_range_text(x->ax, a, sizeof a);
    fprintf(f, " · data for %s (UTC) · <a href=\"fleet-%s.html\">fleet page</a></p>\n", a,
            p->name);
    char stt[200];
    status_text(x->st, true, stt, sizeof stt);
    fprintf(f, "<p class=\"meta\" id=\"invoice-status\">Status: %s</p>\n", stt);
    incomplete_note(f, x->st, true);

    fputs("<div class=\"cards\">\n", f);
    gl_dec_format(inv->total, c->minor_digits, a, sizeof a);
    html_card(f, "total", "Invoice total", "invoice-total", a, c->currency);
    struct keyfig kf[6];
    size_t nkf = team_keyfigs(x, kf);
    for (size_t i = 0; i < nkf; i++)
        html_card(f, "", kf[i].label, NULL, kf[i].value, kf[i].unit);
    fputs("</div>\n", f);

    team_sections_write(f, FMT_HTML, x);
    html_foot(f, c);
}

static void team_md(FILE *f, const void *vctx)
{
    const struct team_ctx *x = vctx;
    const struct gl_config *c = x->c;
    const struct gl_invoice *inv = x->inv;
    const struct gl_period *p = &x->set->period;
    char a[96];

    fputs("# GPU report: ", f);
    md(f, inv->team_name);
    fputs(" (`", f);
    md(f, inv->team);
    fprintf(f, "`), %s %d\n\n- Invoice: ", month_name(p->month), p->year);
    md(f, inv->invoice_id);
    fputs("\n- Cost center: ", f);
    md(f, inv->cost_center ? inv->cost_center : "—");
    day_range_text(x->ax, a, sizeof a);
    fprintf(f, "\n- Data for: %s (UTC)\n", a);
    char stt[200];
    status_text(x->st, false, stt, sizeof stt);
    fprintf(f, "- Status: %s\n", stt);
    incomplete_note(f, x->st, false);
    gl_dec_format(inv->total, c->minor_digits, a, sizeof a);
    fprintf(f, "- Fleet page: fleet-%s.md\n\n**Total: %s %s**\n\n", p->name, a, c->currency);
    struct keyfig kf[6];
    size_t nkf = team_keyfigs(x, kf);
    for (size_t i = 0; i < nkf; i++)
        fprintf(f, "- %s: %s %s\n", kf[i].label, kf[i].value, kf[i].unit);
    fputc('\n', f);

    team_sections_write(f, FMT_MD, x);
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

struct fleet_ctx {
    const struct gl_config *c;
    const struct gl_invoice_set *set;
    const struct gl_fleet *fl;
    const struct gl_day_axis *ax;
    const struct gl_statement *st;
};

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
    if (k != 2 || c->basis == GL_BASIS_MAX)
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

static void tbl_fleet_models(const struct fleet_ctx *x, struct table *t)
{
    const struct gl_config *c = x->c;
    const struct gl_fleet *fl = x->fl;
    table_col(t, "Cluster", COL_T);
    table_col(t, "GPU model", COL_T);
    for (int k = 0; k < FLEET_COLS; k++)
        if (fleet_col_shown(c, fl, k))
            table_col(t, fleet_heads[k], COL_N);
    table_col(t, "Reconciles", 0);
    t->wide = true;
    for (size_t i = 0; i < fl->n; i++) {
        const struct gl_fleet_model *m = &fl->m[i];
        size_t col = 0;
        char q[96];
        table_row(t);
        table_cell(t, col++, CELL_LABEL, "%s", m->cluster);
        table_cell(t, col++, CELL_LABEL, "%s", m->model);
        gl_i128 v[FLEET_COLS];
        fleet_values(m, v);
        for (int k = 0; k < FLEET_COLS; k++) {
            if (!fleet_col_shown(c, fl, k))
                continue;
            fmt_gbh(v[k], q, sizeof q);
            table_cell(t, col++, 0, "%s", q);
        }
        bool ok = fleet_reconciles(m);
        table_cell(t, col, ok ? 0 : CELL_ALERT, "%s", ok ? "yes" : "NO");
    }
}

static void tbl_fleet_teams(const struct fleet_ctx *x, struct table *t)
{
    const struct gl_fleet *fl = x->fl;
    table_col(t, "Cluster", 0);
    table_col(t, "GPU model", 0);
    table_col(t, "Team", 0);
    table_col(t, "Billed GB-h", COL_N);
    table_col(t, "Share of capacity", COL_N);
    for (size_t i = 0; i < fl->n; i++) {
        const struct gl_fleet_model *m = &fl->m[i];
        for (size_t k = 0; k < m->nteams; k++) {
            char v[96];
            table_row(t);
            table_cell(t, 0, CELL_LABEL, "%s", m->cluster);
            table_cell(t, 1, CELL_LABEL, "%s", m->model);
            table_cell(t, 2, CELL_LABEL, "%s", fl->teams[m->teams[k].team]);
            table_last(t, 2)->swatch = palette[(size_t)m->teams[k].team % NPALETTE];
            fmt_gbh(m->teams[k].q, v, sizeof v);
            table_cell(t, 3, 0, "%s", v);
            fmt_share(m->teams[k].q, m->v[GL_F_CAP], v, sizeof v);
            table_cell(t, 4, 0, "%s", v);
        }
    }
}

static void tbl_fleet_invoices(const struct fleet_ctx *x, struct table *t)
{
    const struct gl_config *c = x->c;
    const struct gl_period *p = &x->set->period;
    static const char *const heads[] = {"Team", "Name", "Cost center", "Invoice", "Report"};
    for (size_t k = 0; k < 5; k++)
        table_col(t, heads[k], 0);
    snprintf(t->head_buf[0], sizeof t->head_buf[0], "Total (%s)", c->currency);
    table_col(t, t->head_buf[0], COL_N);
    for (size_t i = 0; i < x->set->n; i++) {
        const struct gl_invoice *inv = &x->set->invoices[i];
        char v[96];
        table_row(t);
        table_cell(t, 0, CELL_LABEL | CELL_CODE, "%s", inv->team);
        table_cell(t, 1, CELL_LABEL, "%s", inv->team_name);
        table_cell(t, 2, CELL_LABEL, "%s", inv->cost_center ? inv->cost_center : "—");
        table_cell(t, 3, CELL_LABEL, "%s", inv->invoice_id);
        char *file = gl_report_team_file(p->name, inv->team, "x");
        file[strlen(file) - 2] = '\0'; /* without ".x": the format adds its own */
        table_cell(t, 4, CELL_LINK, "%s", file);
        free(file);
        gl_dec_format(inv->total, c->minor_digits, v, sizeof v);
        table_cell(t, 5, 0, "%s", v);
        table_last(t, 5)->team = inv->team;
    }
    t->sum = true;
    snprintf(t->sum_bold, sizeof t->sum_bold, "Sum of %zu invoices", x->set->n);
    gl_dec_format(fleet_total(x->set), c->minor_digits, t->sum_value, sizeof t->sum_value);
}

static void tbl_fleet_devices(const struct fleet_ctx *x, struct table *t)
{
    const struct gl_fleet *fl = x->fl;
    static const char *const heads[] = {"Cluster", "Node", "Device", "Profile", "GPU model"};
    for (size_t k = 0; k < 5; k++)
        table_col(t, heads[k], 0);
    table_col(t, "Capacity GB-h", COL_N);
    table_col(t, "Excess GB-h", COL_N);
    table_col(t, "Why", 0);
    for (size_t i = 0; i < fl->ndev; i++) {
        const struct gl_device_row *d = &fl->dev[i];
        if (!needs_attention(d))
            continue;
        const char *cells[] = {d->cluster, d->node, d->device, d->profile, d->model};
        char v[96];
        table_row(t);
        for (size_t k = 0; k < 5; k++)
            table_cell(t, k, CELL_LABEL, "%s", cells[k]);
        fmt_gbh(d->capacity, v, sizeof v);
        table_cell(t, 5, 0, "%s", v);
        fmt_gbh(d->excess, v, sizeof v);
        table_cell(t, 6, 0, "%s", v);
        table_cell(t, 7, 0, "%s%s%s",
                   d->unknown ? "usage unknown (no memory metrics; pods billed by allocation)" : "",
                   d->unknown && d->excess ? "; " : "",
                   d->excess ? "memory billed beyond capacity" : "");
    }
}

static bool has_pending(const struct gl_statement *st)
{
    return st->pending.nk || st->pending.np;
}

static void tbl_fleet_pending(const struct fleet_ctx *x, struct table *t)
{
    tbl_pending_keys(&x->st->pending, true, t);
}

static void tbl_fleet_waits(const struct fleet_ctx *x, struct table *t)
{
    tbl_pending_waits(&x->st->pending, true, t);
}

/* Builds a table with fn and writes it in the format. */
static void fleet_table(FILE *f, enum fmt fmt, const struct fleet_ctx *x,
                        void (*fn)(const struct fleet_ctx *x, struct table *t))
{
    struct table t = {0};
    fn(x, &t);
    (fmt == FMT_HTML ? table_html : table_md)(f, &t);
    table_free(&t);
}

static void fleet_html(FILE *f, const void *vctx)
{
    const struct fleet_ctx *x = vctx;
    const struct gl_config *c = x->c;
    const struct gl_fleet *fl = x->fl;
    const struct gl_period *p = &x->set->period;
    char a[96], b[96], q[96];
    /* 128-bit sums of int64 figures: cannot overflow */
    gl_i128 cap = 0, billed = 0, idle = 0, overhead = 0, excess = 0;
    for (size_t i = 0; i < fl->n; i++) {
        cap += fl->m[i].v[GL_F_CAP];
        billed += (gl_i128)fl->m[i].v[GL_F_USED] + fl->m[i].v[GL_F_RUB];
        idle += fl->m[i].v[GL_F_IDLE];
        overhead += (gl_i128)fl->m[i].v[GL_F_RESERVED] + fl->m[i].v[GL_F_UNATTR];
        excess += fl->m[i].v[GL_F_EXCESS];
    }
    snprintf(a, sizeof a, "%s", p->name);
    html_head(f, x->st->closed ? "GPU fleet — " : "DRAFT GPU fleet — ", a);
    day_range_text(x->ax, a, sizeof a);
    fprintf(f, "<h1>GPU fleet: %s %d</h1>\n<p class=\"meta\">Data for %s (UTC) · idle and "
               "overhead are %s", month_name(p->month), p->year, a, policy_text(c));
    if (c->idle_policy == GL_IDLE_PLATFORM) {
        fputs(" (<code>", f);
        html(f, c->platform_team);
        fputs("</code>)", f);
    }
    char stt[200];
    status_text(x->st, true, stt, sizeof stt);
    fprintf(f, " · billing basis <code>%s</code></p>\n<p class=\"meta\" id=\"invoice-status\">"
               "Status: %s</p>\n",
            c->basis == GL_BASIS_MAX ? "max" : "used", stt);
    incomplete_note(f, x->st, true);
    fputs("<div class=\"cards\">\n", f);
    gl_dec_format(fleet_total(x->set), c->minor_digits, a, sizeof a);
    html_card(f, "total", "All invoices", "fleet-total", a, c->currency);
    fmt_gbh(cap, q, sizeof q);
    html_card(f, "", "Capacity", NULL, q, "GB-hours");
    fmt_gbh(billed, q, sizeof q);
    fmt_share(billed, cap, b, sizeof b);
    snprintf(a, sizeof a, "GB-hours · %s of capacity", b);
    html_card(f, "", "Billed to teams", NULL, q, a);
    fmt_gbh(idle, q, sizeof q);
    fmt_share(idle, cap, b, sizeof b);
    snprintf(a, sizeof a, "GB-hours · %s of capacity", b);
    html_card(f, "", "Idle", NULL, q, a);
    fmt_gbh(overhead, q, sizeof q);
    fmt_share(overhead, cap, b, sizeof b);
    snprintf(a, sizeof a, "GB-hours · %s of capacity", b);
    html_card(f, "", "Overhead", NULL, q, a);
    fputs("</div>\n", f);

    fputs("<h2>Capacity per GPU model: teams + idle + overhead</h2>\n", f);
    if (fl->n) {
        svg_fleet(f, fl);
        fputs("<p class=\"legend\">", f);
        for (size_t t = 0; t < fl->nteams; t++)
            swatch(f, palette[t % NPALETTE], fl->teams[t]);
        swatch(f, COLOR_OVERHEAD, "overhead");
        swatch(f, COLOR_IDLE, "idle");
        fputs("</p>\n", f);
    }
    fleet_table(f, FMT_HTML, x, tbl_fleet_models);
    fputs("<p class=\"note\">GB-hours. Capacity = billed to teams + idle + overhead "
          "(driver-reserved + unattributed) − excess, per GPU model, exactly. Excess is memory billed beyond "
          "capacity (reported, never hidden).</p>\n",
          f);

    fputs("<h2>Teams per GPU model</h2>\n", f);
    fleet_table(f, FMT_HTML, x, tbl_fleet_teams);
    fputs("<h2>Invoices</h2>\n", f);
    fleet_table(f, FMT_HTML, x, tbl_fleet_invoices);

    if (has_pending(x->st)) {
        fputs("<h2>GPU demand waiting (Pending pods)</h2>\n", f);
        fleet_table(f, FMT_HTML, x, tbl_fleet_pending);
        fprintf(f, "<p class=\"note\">%s Longest waits (%zu of %lld pods):</p>\n", pending_note,
                x->st->pending.np, (long long)x->st->pending.pods);
        fleet_table(f, FMT_HTML, x, tbl_fleet_waits);
    }
    fputs("<h2>Devices needing attention</h2>\n", f);
    if (attention_count(fl)) {
        fleet_table(f, FMT_HTML, x, tbl_fleet_devices);
    } else {
        fprintf(f, "<p class=\"note\">None: all %zu devices reported memory metrics and none was "
                   "billed beyond capacity. Per-device figures: <code>gpuledger summary --period "
                   "%s</code>.</p>\n", fl->ndev, p->name);
    }
    html_foot(f, c);
}

static void fleet_md(FILE *f, const void *vctx)
{
    const struct fleet_ctx *x = vctx;
    const struct gl_config *c = x->c;
    const struct gl_fleet *fl = x->fl;
    const struct gl_period *p = &x->set->period;
    char a[96], b[96], q[96];
    day_range_text(x->ax, a, sizeof a);
    fprintf(f, "# GPU fleet: %s %d\n\n- Data for: %s (UTC)\n- Idle and overhead: %s",
            month_name(p->month), p->year, a, policy_text(c));
    if (c->idle_policy == GL_IDLE_PLATFORM) {
        fputs(" (`", f);
        md(f, c->platform_team);
        fputs("`)", f);
    }
    gl_dec_format(fleet_total(x->set), c->minor_digits, a, sizeof a);
    char stt[200];
    status_text(x->st, false, stt, sizeof stt);
    fprintf(f, "\n- Billing basis: `%s`\n- Status: %s\n",
            c->basis == GL_BASIS_MAX ? "max" : "used", stt);
    incomplete_note(f, x->st, false);
    fprintf(f, "\n**All invoices: %s %s**\n\n", a, c->currency);
    {
        gl_i128 cap = 0, billed = 0, idle = 0, overhead = 0; /* cannot overflow */
        for (size_t i = 0; i < fl->n; i++) {
            cap += fl->m[i].v[GL_F_CAP];
            billed += (gl_i128)fl->m[i].v[GL_F_USED] + fl->m[i].v[GL_F_RUB];
            idle += fl->m[i].v[GL_F_IDLE];
            overhead += (gl_i128)fl->m[i].v[GL_F_RESERVED] + fl->m[i].v[GL_F_UNATTR];
        }
        fmt_gbh(cap, q, sizeof q);
        fprintf(f, "| Capacity GB-h | Billed to teams GB-h | Idle GB-h | Overhead GB-h |\n"
                   "|---:|---:|---:|---:|\n| %s", q);
        gl_i128 parts[] = {billed, idle, overhead};
        for (int k = 0; k < 3; k++) {
            fmt_gbh(parts[k], a, sizeof a);
            fmt_share(parts[k], cap, b, sizeof b);
            fprintf(f, " | %s (%s)", a, b);
        }
        fputs(" |\n\n", f);
    }

    fputs("## Capacity per GPU model: teams + idle + overhead (GB-hours)\n\n", f);
    fleet_table(f, FMT_MD, x, tbl_fleet_models);
    fputs("\nCapacity = billed to teams + idle + overhead (driver-reserved + unattributed) − "
          "excess.\n\n## Teams per GPU model\n\n",
          f);
    fleet_table(f, FMT_MD, x, tbl_fleet_teams);
    fputs("\n## Invoices\n\n", f);
    fleet_table(f, FMT_MD, x, tbl_fleet_invoices);
    if (has_pending(x->st)) {
        fputs("\n## GPU demand waiting (Pending pods)\n\n", f);
        fleet_table(f, FMT_MD, x, tbl_fleet_pending);
        fprintf(f, "\n%s\n\nLongest waits (%zu of %lld pods):\n\n", pending_note,
                x->st->pending.np, (long long)x->st->pending.pods);
        fleet_table(f, FMT_MD, x, tbl_fleet_waits);
    }
    fputs("\n## Devices needing attention\n\n", f);
    if (attention_count(fl)) {
        fleet_table(f, FMT_MD, x, tbl_fleet_devices);
    } else {
        fprintf(f, "None: all %zu devices reported memory metrics and none was billed beyond "
                   "capacity.\n", fl->ndev);
    }
    fprintf(f, "\n---\nGenerated by gpuledger %s. GB = 10^9 bytes; GB-hours rounded to 2 "
               "decimals for reading (exact in the summary JSON).\n", GL_VERSION);
}

/* ------------------------------------------------------------ entry points */

enum gl_status gl_report_team_html(const struct gl_statement *st, size_t i, FILE *out,
                                   struct gl_error *err)
{
    (void)err;
    struct team_ctx ctx = {st->cfg, st->set, &st->set->invoices[i], &st->teams[i], &st->axis,
                           &st->extra[i], st};
    team_html(out, &ctx);
    return GL_OK;
}

enum gl_status gl_report_team_md(const struct gl_statement *st, size_t i, FILE *out,
                                 struct gl_error *err)
{
    (void)err;
    struct team_ctx ctx = {st->cfg, st->set, &st->set->invoices[i], &st->teams[i], &st->axis,
                           &st->extra[i], st};
    team_md(out, &ctx);
    return GL_OK;
}

enum gl_status gl_report_fleet_html(const struct gl_statement *st, size_t i, FILE *out,
                                    struct gl_error *err)
{
    (void)i;
    (void)err;
    struct fleet_ctx ctx = {st->cfg, st->set, &st->fleet, &st->axis, st};
    fleet_html(out, &ctx);
    return GL_OK;
}

enum gl_status gl_report_fleet_md(const struct gl_statement *st, size_t i, FILE *out,
                                  struct gl_error *err)
{
    (void)i;
    (void)err;
    struct fleet_ctx ctx = {st->cfg, st->set, &st->fleet, &st->axis, st};
    fleet_md(out, &ctx);
    return GL_OK;
}

