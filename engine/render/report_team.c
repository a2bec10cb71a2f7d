/* report_team — the team page's sections: charts, intros and tables in
 * the order a team page shows them, written as HTML or Markdown (the page
 * around them: report.c). */
#include "report_team.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "price.h"
#include "timeutil.h"
#include "unitcost.h"
#include "util.h"

/* ------------------------------------------------------------ SVG charts */

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
        int y = top + height - rp_px(k * step, axis_top, height);
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

/* A daily chart: its height and aria-label, the two figures of a day its
 * titles name, the day's peak the axis must reach, and the bar group drawn
 * in a day's slot [x0, x1) above base (top: the axis' top, ph pixels). */
struct day_chart {
    int h;
    const char *label, *name[2];
    size_t fig[2]; /* offsets in struct gl_day_row of the named figures */
    gl_i128 (*peak)(const struct gl_day_row *d);
    void (*bars)(FILE *f, const struct gl_day_row *d, int x0, int x1, gl_i128 top, int base,
                 int ph);
};

static int64_t day_fig(const struct gl_day_row *d, size_t off)
{
    return *(const int64_t *)(const void *)((const char *)d + off);
}

static void svg_days(FILE *f, const struct day_chart *c, const struct gl_team_usage *u,
                     const struct gl_day_axis *ax)
{
    enum { W = 1000, L = 90, R = 10, T = 12, B = 30 };
    const int pw = W - L - R, ph = c->h - T - B;
    gl_i128 max = 0;
    for (size_t i = 0; i < ax->n; i++)
        if (c->peak(&u->days[i]) > max)
            max = c->peak(&u->days[i]);
    fprintf(f, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">\n", W,
            c->h, c->label);
    gl_i128 top = svg_axis(f, max, L, W - R, T, ph);
    for (size_t i = 0; i < ax->n; i++) {
        const struct gl_day_row *d = &u->days[i];
        int x0 = L + (int)(i * (size_t)pw / ax->n), x1 = L + (int)((i + 1) * (size_t)pw / ax->n);
        char day[16], a[64], b[64];
        gl_date_format(ax->first + (int64_t)i * 86400, day, sizeof day);
        rp_fmt_gbh(day_fig(d, c->fig[0]), a, sizeof a);
        rp_fmt_gbh(day_fig(d, c->fig[1]), b, sizeof b);
        fprintf(f, "<g><title>%s: %s %s GB-h, %s %s GB-h</title>", day, c->name[0], a,
                c->name[1], b);
        c->bars(f, d, x0, x1, top, T + ph, ph);
        fputs("</g>\n", f);
    }
    svg_day_labels(f, ax, L, pw, c->h - 10);
    fputs("</svg>\n", f);
}

static gl_i128 peak_used(const struct gl_day_row *d)
{
    gl_i128 a = gl_gbh_nano(d->used), b = gl_gbh_nano(d->allocated);
    return a > b ? a : b;
}

/* Used (solid) inside allocated (light). */
static void bars_used(FILE *f, const struct gl_day_row *d, int x0, int x1, gl_i128 top, int base,
                      int ph)
{
    int slot = x1 - x0, cx = (x0 + x1) / 2;
    int wa = slot * 8 / 10 < 90 ? slot * 8 / 10 : 90, wu = slot / 2 < 56 ? slot / 2 : 56;
    int ha = rp_px(gl_gbh_nano(d->allocated), top, ph), hu = rp_px(gl_gbh_nano(d->used), top, ph);
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#93c5fd\"/>"
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>",
            cx - wa / 2, base - ha, wa, ha, COLOR_ALLOC, cx - wu / 2, base - hu, wu, hu,
            COLOR_USED);
}

static gl_i128 peak_shares(const struct gl_day_row *d)
{
    return gl_gbh_nano(d->idle + d->overhead);
}

/* Idle (light) under overhead (dark), stacked. */
static void bars_shares(FILE *f, const struct gl_day_row *d, int x0, int x1, gl_i128 top,
                        int base, int ph)
{
    int w = (x1 - x0) * 6 / 10 < 70 ? (x1 - x0) * 6 / 10 : 70;
    int x = (x0 + x1) / 2 - w / 2;
    int hall = rp_px(peak_shares(d), top, ph);
    int ho = rp_px(gl_gbh_nano(d->overhead), top, ph);
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>"
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>",
            x, base - hall, w, hall - ho, COLOR_IDLE, x, base - ho, w, ho, COLOR_OVERHEAD);
}

/* Daily used inside allocated GB-hours per UTC day. */
static const struct day_chart daily_used = {
    280, "Daily GB-hours used and allocated", {"used", "allocated"},
    {offsetof(struct gl_day_row, used), offsetof(struct gl_day_row, allocated)},
    peak_used, bars_used};

/* Daily idle and overhead shares, stacked. */
static const struct day_chart daily_shares = {
    240, "Daily idle and overhead shares", {"idle", "overhead"},
    {offsetof(struct gl_day_row, idle), offsetof(struct gl_day_row, overhead)},
    peak_shares, bars_shares};

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
        int wa = rp_px(r->allocated, max, BAR), wu = rp_px(r->used, max, BAR);
        size_t n = strlen(r->ns) + strlen(r->kind) + strlen(r->name) + 3;
        char *full = gl_xcalloc(n, 1), shortl[200], q[64];
        snprintf(full, n, "%s/%s/%s", r->ns, r->kind, r->name);
        rp_shorten(full, 44, shortl, sizeof shortl);
        rp_fmt_gbh(r->used, q, sizeof q);
        fputs("<g><title>", f);
        rp_html(f, r->cluster);
        fputs(" ", f);
        rp_html(f, full);
        fprintf(f, ": used %s GB-h", q);
        rp_fmt_gbh(r->allocated, q, sizeof q);
        fprintf(f, ", allocated %s GB-h</title>\n<text x=\"0\" y=\"%d\" class=\"lbl\">", q,
                y + 17);
        rp_html(f, shortl);
        rp_fmt_gbh(r->used, q, sizeof q);
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
        rp_fmt_share(r->a, (gl_i128)r->b * 1000000, ratio, sizeof ratio);
        size_t ln = strlen(r->cluster) + strlen(r->model) + 8;
        char *full = gl_xcalloc(ln, 1);
        snprintf(full, ln, "%s · %s", r->cluster, r->model);
        rp_shorten(full, 44, lbl, sizeof lbl);
        fputs("<g><title>", f);
        rp_html(f, full);
        fprintf(f, ": busy %s of %lld device steps (indicator, not billed)</title>",
                ratio, (long long)r->b);
        fprintf(f, "<text x=\"0\" y=\"%d\" class=\"lbl\">", y + 17);
        rp_html(f, lbl);
        fprintf(f,
                "</text><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"18\" fill=\"#f3f4f6\" "
                "stroke=\"#d1d5db\"/><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"18\" "
                "fill=\"#7c3aed\"/><text x=\"%d\" y=\"%d\" class=\"val\">%s</text></g>\n",
                LABEL, y + 3, BAR, LABEL, y + 3, rp_px(ppm, 1000000, BAR), LABEL + BAR + 8, y + 17,
                ratio);
        free(full);
    }
    fputs("</svg>\n", f);
}

/* The reserved-unused money of a (cluster, model), or NULL. */
static const struct gl_waste_money *waste_money(const struct page_ctx *x, const char *cluster,
                                                const char *model)
{
    for (size_t i = 0; x->e && i < x->e->nwaste; i++)
        if (!strcmp(x->e->waste[i].cluster, cluster) && !strcmp(x->e->waste[i].model, model))
            return &x->e->waste[i];
    return NULL;
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
        n += rp_is_share(inv->lines[j].kind);
    return n;
}

/* ---- the team page: its sections' tables ---- */

static void tbl_daily(const struct page_ctx *x, struct table *t)
{
    const struct gl_team_usage *u = x->u;
    static const struct rp_col cols[] = {{"UTC day", 0}, {"Used GB-h", COL_N},
                                         {"Allocated GB-h", COL_N},
                                         {"Reserved-unused GB-h", COL_N}};
    RP_COLS(t, cols);
    if (u->has_shares) {
        rp_table_col(t, "Idle share GB-h", COL_N);
        rp_table_col(t, "Overhead share GB-h", COL_N);
    }
    for (size_t i = 0; i < x->ax->n; i++) {
        const struct gl_day_row *d = &u->days[i];
        char day[16];
        gl_date_format(x->ax->first + (int64_t)i * 86400, day, sizeof day);
        rp_table_row(t);
        rp_table_cell(t, 0, 0, "%s", day);
        const int64_t fig[] = {d->used, d->allocated, d->waste, d->idle, d->overhead};
        for (size_t k = 1; k < t->ncols; k++) {
            rp_cell_gbh(t, k, fig[k - 1]);
        }
    }
}

static void tbl_workloads(const struct page_ctx *x, struct table *t)
{
    const struct gl_team_usage *u = x->u;
    const struct gl_team_workloads *w = &x->e->workloads;
    static const struct rp_col cols[] = {{"#", COL_MD_RIGHT}, {"Cluster", 0}, {"Namespace", 0},
                                         {"Workload", 0}, {"Pods", COL_N}, {"Used GB-h", COL_N},
                                         {"Share of team", COL_N}, {"Allocated GB-h", COL_N},
                                         {"Reserved-unused GB-h", COL_N}};
    RP_COLS(t, cols);
    for (size_t i = 0; i < w->n; i++) {
        const struct gl_workload_row *r = &w->w[i];
        rp_table_row(t);
        rp_table_cell(t, 0, 0, "%zu", i + 1);
        rp_table_cell(t, 1, CELL_LABEL, "%s", r->cluster);
        rp_table_cell(t, 2, CELL_LABEL, "%s", r->ns);
        rp_table_cell(t, 3, CELL_LABEL | (r->estimated ? CELL_EST : 0), "%s/%s", r->kind, r->name);
        rp_table_cell(t, 4, 0, "%lld", (long long)r->pods);
        rp_cell_gbh(t, 5, r->used);
        rp_cell_share(t, 6, r->used, u->used);
        rp_cell_gbh(t, 7, r->allocated);
        rp_cell_gbh(t, 8, r->waste);
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
static void tbl_trend(const struct page_ctx *x, struct table *t)
{
    static const struct rp_col cols[] = {{"Month", 0}, {"Status", 0}, {"Used GB-h", COL_N},
                                         {"Change", COL_N}};
    RP_COLS(t, cols);
    snprintf(t->head_buf[0], sizeof t->head_buf[0], "Invoice total (%s)", x->c->currency);
    rp_table_col(t, t->head_buf[0], COL_N);
    rp_table_col(t, "Change", COL_N);
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
        rp_table_row(t);
        rp_table_cell(t, 0, 0, "%s%s", now ? x->set->period.name : r->period,
                   now ? " (this report)" : "");
        rp_table_cell(t, 1, 0, "%s", now ? (x->st->closed ? "final" : "draft")
                                      : r->closed ? "final" : "open (not totalled here)");
        rp_cell_gbh(t, 2, used);
        fmt_change(i ? prev_used : 0, used, v, sizeof v);
        rp_table_cell(t, 3, 0, "%s", v);
        if (has_total)
            gl_dec_format(total, x->c->minor_digits, v, sizeof v);
        else
            snprintf(v, sizeof v, "—");
        rp_table_cell(t, 4, 0, "%s", v);
        fmt_change(i && prev_has_total && has_total ? prev_total : 0, total, v, sizeof v);
        rp_table_cell(t, 5, 0, "%s", v);
        prev_used = used;
        prev_total = total;
        prev_has_total = has_total;
    }
}

static void tbl_waste(const struct page_ctx *x, struct table *t)
{
    const struct gl_invoice *inv = x->inv;
    static const struct rp_col cols[] = {{"Cluster", 0}, {"GPU model", 0},
                                         {"Allocated GB-h", COL_N}, {"GPU-hours", COL_N},
                                         {"Reserved-unused GB-h", COL_N},
                                         {"Share of allocation", COL_N}};
    RP_COLS(t, cols);
    snprintf(t->head_buf[0], sizeof t->head_buf[0], "At the applicable price (%s)",
             x->c->currency);
    rp_table_col(t, t->head_buf[0], COL_N);
    for (size_t i = 0; i < inv->nallocated; i++) {
        const struct gl_info_row *r = &inv->allocated[i];
        int64_t waste = 0;
        for (size_t k = 0; k < inv->nwaste; k++)
            if (!strcmp(inv->waste[k].cluster, r->cluster) &&
                !strcmp(inv->waste[k].model, r->model))
                waste = inv->waste[k].a;
        char v[96];
        rp_table_row(t);
        rp_table_cell(t, 0, CELL_LABEL, "%s", r->cluster);
        rp_table_cell(t, 1, CELL_LABEL, "%s", r->model);
        rp_cell_gbh(t, 2, r->a);
        rp_fmt_read(gl_div_half_even((gl_i128)r->b * 1000, 3600), v, sizeof v);
        rp_table_cell(t, 3, 0, "%s", v);
        rp_cell_gbh(t, 4, waste);
        rp_cell_share(t, 5, waste, r->a);
        const struct gl_waste_money *m = waste_money(x, r->cluster, r->model);
        if (m)
            gl_dec_format(m->amount, x->c->minor_digits, v, sizeof v);
        else
            snprintf(v, sizeof v, "%s", waste ? "—" : "0");
        rp_table_cell(t, 6, 0, "%s%s", v, m && m->unpriced ? " (hours without a price left out)" : "");
    }
}

/* The invoice's lines (only the idle and overhead shares when shares_only). */
static void tbl_lines(const struct page_ctx *x, struct table *t, bool shares_only)
{
    const struct gl_config *c = x->c;
    const struct gl_invoice *inv = x->inv;
    static const struct rp_col cols[] = {{"Cluster", 0}, {"GPU model", 0}, {"Kind", 0},
                                         {"GB-hours", COL_N}};
    RP_COLS(t, cols);
    if (!shares_only) {
        snprintf(t->head_buf[0], sizeof t->head_buf[0], "Unit price (%s per GB-hour)",
                 c->currency);
        rp_table_col(t, t->head_buf[0], COL_N);
    }
    rp_table_col(t, "Price entry", 0);
    snprintf(t->head_buf[1], sizeof t->head_buf[1], "Amount (%s)", c->currency);
    rp_table_col(t, t->head_buf[1], COL_N);
    for (size_t j = 0; j < inv->nlines; j++) {
        const struct gl_invoice_line *l = &inv->lines[j];
        if (shares_only && !rp_is_share(l->kind))
            continue;
        char v[96];
        size_t k = 0;
        rp_table_row(t);
        rp_table_cell(t, k++, CELL_LABEL, "%s", l->cluster);
        rp_table_cell(t, k++, CELL_LABEL, "%s", l->model);
        rp_table_cell(t, k++, 0, "%s%s%s%s", rp_kind_label(l->kind),
                   !shares_only && l->estimated ? " (estimated)" : "",
                   l->corrected_period[0] ? ", correction of " : "", l->corrected_period);
        rp_cell_gbh(t, k++, l->mib_s);
        if (!shares_only) {
            gl_dec_format_trim(l->unit_price12, GL_PRICE_DECIMALS, v, sizeof v);
            rp_table_cell(t, k++, 0, "%s", v);
        }
        rp_table_cell(t, k++, CELL_LABEL, "%s", l->price->id);
        gl_dec_format(l->amount, c->minor_digits, v, sizeof v);
        rp_table_cell(t, k++, 0, "%s", v);
    }
    if (!shares_only) {
        t->sum = true;
        snprintf(t->sum_bold, sizeof t->sum_bold, "Total");
        snprintf(t->sum_rest, sizeof t->sum_rest, " (sum of the %zu rounded lines)", inv->nlines);
        gl_dec_format(inv->total, c->minor_digits, t->sum_value, sizeof t->sum_value);
    }
}

static void tbl_compute(const struct page_ctx *x, struct table *t)
{
    const struct gl_invoice *inv = x->inv;
    static const struct rp_col cols[] = {{"Cluster", 0}, {"GPU model", 0},
                                         {"Busy (share of device steps)", COL_N},
                                         {"Device steps", COL_N}};
    RP_COLS(t, cols);
    for (size_t i = 0; i < inv->ncompute; i++) {
        const struct gl_info_row *r = &inv->compute[i];
        if (r->b <= 0)
            continue;
        rp_table_row(t);
        rp_table_cell(t, 0, CELL_LABEL, "%s", r->cluster);
        rp_table_cell(t, 1, CELL_LABEL, "%s", r->model);
        rp_cell_share(t, 2, r->a, (gl_i128)r->b * 1000000);
        rp_table_cell(t, 3, 0, "%lld", (long long)r->b);
    }
}

static void tbl_anomalies(const struct page_ctx *x, struct table *t)
{
    const struct gl_invoice *inv = x->inv;
    static const struct rp_col cols[] = {
        {"Kind", 0},          {"Namespace/pod", 0},    {"Node", 0},         {"Device", 0},
        {"GPU model", 0},     {"First seen", COL_T},   {"Last seen", COL_T}, {"GB-hours", COL_N}};
    RP_COLS(t, cols);
    t->wide = true;
    for (size_t i = 0; i < inv->anomalies.n; i++) {
        const struct gl_anomaly *y = &inv->anomalies.items[i];
        char v[96];
        rp_table_row(t);
        rp_table_cell(t, 0, CELL_LABEL, "%s", gl_anomaly_kind_name(y->kind));
        rp_table_cell(t, 1, CELL_LABEL, "%s/%s", y->ns, y->pod);
        rp_table_cell(t, 2, CELL_LABEL, "%s", y->node);
        rp_table_cell(t, 3, CELL_LABEL, "%s", y->device);
        rp_table_cell(t, 4, CELL_LABEL, "%s", y->model);
        gl_time_format(y->first_seen, v, sizeof v);
        rp_table_cell(t, 5, 0, "%s", v);
        gl_time_format(y->last_seen, v, sizeof v);
        rp_table_cell(t, 6, 0, "%s", v);
        rp_cell_gbh(t, 7, y->mib_s);
    }
}

static void tbl_prices(const struct page_ctx *x, struct table *t)
{
    const struct gl_invoice *inv = x->inv;
    static const struct rp_col cols[] = {
        {"Price entry", 0},    {"GPU model", 0}, {"Model pattern", 0},  {"Unit", 0},
        {"List price", COL_N}, {"Per GB-hour", COL_N}, {"Currency", 0}, {"Valid from", COL_T},
        {"Valid to", COL_T}};
    RP_COLS(t, cols);
    t->wide = true;
    for (size_t j = 0; j < inv->nlines; j++) {
        const struct gl_invoice_line *l = &inv->lines[j];
        if (!first_price_use(inv, j))
            continue;
        const struct gl_price_entry *e = l->price;
        char v[96];
        rp_table_row(t);
        rp_table_cell(t, 0, CELL_LABEL, "%s", e->id);
        rp_table_cell(t, 1, CELL_LABEL, "%s", l->model);
        rp_table_cell(t, 2, CELL_LABEL | CELL_CODE, "%s", e->pattern);
        rp_table_cell(t, 3, 0, "%s", e->unit == GL_PRICE_GPU_HOURS ? "GPU-Hours" : "GB-Hours");
        gl_dec_format_trim(e->price12, GL_PRICE_DECIMALS, v, sizeof v);
        rp_table_cell(t, 4, 0, "%s", v);
        gl_dec_format_trim(l->unit_price12, GL_PRICE_DECIMALS, v, sizeof v);
        rp_table_cell(t, 5, 0, "%s", v);
        rp_table_cell(t, 6, CELL_LABEL, "%s", e->currency);
        gl_time_format(e->valid_from, v, sizeof v);
        rp_table_cell(t, 7, 0, "%s", v);
        if (e->valid_to == INT64_MAX)
            snprintf(v, sizeof v, "open");
        else
            gl_time_format(e->valid_to, v, sizeof v);
        rp_table_cell(t, 8, 0, "%s", v);
    }
}

static void tbl_lines_all(const struct page_ctx *x, struct table *t)
{
    tbl_lines(x, t, false);
}

static void tbl_shares(const struct page_ctx *x, struct table *t)
{
    tbl_lines(x, t, true);
}

/* ---- the team page: a list of sections both formats walk ----
 *
 * Each section: its title, whether it has rows (else its note), what comes
 * between the title and the table in each format (charts and legends in
 * HTML, a count or a sentence in both), and its table. */


struct section {
    const char *title;
    bool (*has_rows)(const struct page_ctx *x);
    const char *empty; /* the note without rows */
    void (*intro)(FILE *f, enum fmt fmt, const struct page_ctx *x); /* may be NULL */
    bool intro_always; /* the intro says what the section is: also without rows */
    void (*table)(const struct page_ctx *x, struct table *t);
    bool open_only; /* follows today's config and prices: not on a closed month's page */
};

static bool has_pods(const struct page_ctx *x)
{
    return x->e->workloads.n > 0;
}

static bool has_alloc(const struct page_ctx *x)
{
    return x->inv->nallocated || x->inv->nwaste;
}

static bool has_shares(const struct page_ctx *x)
{
    return share_lines(x->inv) > 0;
}

static bool has_compute(const struct page_ctx *x)
{
    for (size_t i = 0; i < x->inv->ncompute; i++)
        if (x->inv->compute[i].b > 0)
            return true;
    return false;
}

static bool has_anomalies(const struct page_ctx *x)
{
    return x->inv->anomalies.n > 0;
}

static bool always(const struct page_ctx *x)
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

static void intro_daily(FILE *f, enum fmt fmt, const struct page_ctx *x)
{
    const struct gl_team_usage *u = x->u;
    if (fmt != FMT_HTML)
        return;
    if (u->used || u->allocated) {
        svg_days(f, &daily_used, u, x->ax);
        fputs("<p class=\"legend\">", f);
        rp_swatch(f, COLOR_USED, "memory used (billed)");
        rp_swatch(f, COLOR_ALLOC, "allocated (GPU requests of running pods)");
        fputs(" · UTC days; hover a bar for exact figures</p>\n", f);
    } else {
        fputs("<p class=\"note\">No pod of this team held GPU memory or a GPU allocation in "
              "the period.</p>\n",
              f);
    }
    if (u->has_shares) {
        fputs("<h2>Daily idle and overhead shares</h2>\n", f);
        svg_days(f, &daily_shares, u, x->ax);
        fputs("<p class=\"legend\">", f);
        rp_swatch(f, COLOR_IDLE, "idle");
        rp_swatch(f, COLOR_OVERHEAD, "overhead (driver-reserved + unattributed)");
        fputs("</p>\n", f);
    }
}

static void intro_pods(FILE *f, enum fmt fmt, const struct page_ctx *x)
{
    const struct gl_team_workloads *w = &x->e->workloads;
    if (fmt == FMT_HTML) {
        svg_workloads(f, w);
        fputs("<p class=\"legend\">", f);
        rp_swatch(f, COLOR_USED, "memory used");
        rp_swatch(f, COLOR_ALLOC, "allocated");
        fprintf(f, " · %zu of %lld workloads, %lld pods</p>\n", w->n, (long long)w->total,
                (long long)x->u->pods_total);
    } else {
        fprintf(f, "%zu of %lld workloads, %lld pods.\n\n", w->n, (long long)w->total,
                (long long)x->u->pods_total);
    }
    para_open(f, fmt, "note");
    fputs("A workload is the pods of one owner (kube-state-metrics ", f);
    rp_code(f, fmt, "kube_pod_owner");
    fputs(": Deployment, StatefulSet, Job, ...; a ReplicaSet named with a pod-template-hash "
          "shows as its Deployment); a pod without a known owner is its own workload (",
          f);
    rp_code(f, fmt, "Pod/<name>");
    fputs(").", f);
    para_close(f, fmt);
}

/* What idle and overhead are and where they went this period, on every
 * team page: a team that carries no share still reads why the platform's
 * invoice is large (or why its own share is what it is). */
static void intro_idle_explained(FILE *f, enum fmt fmt, const struct page_ctx *x)
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
    rp_fmt_gbh(idle, a, sizeof a);
    rp_fmt_gbh(overhead, b, sizeof b);
    rp_fmt_share(idle, cap, pa, sizeof pa);
    rp_fmt_share(overhead, cap, pb, sizeof pb);
    para_open(f, fmt, "note");
    const char *bo = fmt == FMT_HTML ? "<b>" : "**", *bc = fmt == FMT_HTML ? "</b>" : "**";
    fprintf(f,
            "%sIdle%s is GPU memory that no pod held (capacity minus used minus overhead); "
            "%soverhead%s is memory the driver reserves plus memory in use that no pod "
            "accounts for. This period the fleet had %s GB-h idle (%s of capacity) and %s GB-h "
            "overhead (%s). Both are %s",
            bo, bc, bo, bc, a, pa, b, pb, rp_policy_text(c));
    if (c->idle_policy == GL_IDLE_PLATFORM) {
        fputs(" (", f);
        rp_code(f, fmt, c->platform_team);
        fputs("), so that team's invoice carries them and other teams' do not", f);
    }
    fputs(".", f);
    para_close(f, fmt);
}

static void intro_shares(FILE *f, enum fmt fmt, const struct page_ctx *x)
{
    intro_idle_explained(f, fmt, x);
}

static void intro_trend(FILE *f, enum fmt fmt, const struct page_ctx *x)
{
    (void)x;
    para_open(f, fmt, "note");
    fputs("Earlier months from the ledger: memory used from the stored usage, the invoice total "
          "as frozen when the month was closed (an open month is not totalled here).",
          f);
    para_close(f, fmt);
}

static void intro_waste(FILE *f, enum fmt fmt, const struct page_ctx *x)
{
    para_open(f, fmt, "note");
    fputs(fmt == FMT_HTML ? "Allocated minus used, per pod and step, when positive: memory "
                            "requested and held idle. "
                          : "Allocated minus used, per pod and step, when positive. ",
          f);
    const struct gl_basis *b = x->c->basis;
    fputs(b->bills_reserved_unused ? "Billed (billing basis "
                                   : "Shown as information, not billed (billing basis ",
          f);
    fputs(fmt == FMT_HTML ? "<code>" : "`", f);
    fputs(b->name, f);
    fputs(fmt == FMT_HTML ? "</code>" : "`", f);
    fputs(").", f);
    para_close(f, fmt);
}

static void intro_compute(FILE *f, enum fmt fmt, const struct page_ctx *x)
{
    if (fmt == FMT_HTML) {
        fputs("<p class=\"caveat\">", f);
        rp_html(f, gl_compute_caveat);
        fputs("</p>\n", f);
        if (has_compute(x))
            svg_compute(f, x->inv);
    } else {
        fprintf(f, "> %s\n\n", gl_compute_caveat);
    }
}

static void intro_anomalies(FILE *f, enum fmt fmt, const struct page_ctx *x)
{
    if (fmt == FMT_HTML && has_anomalies(x))
        fputs("<p class=\"warn\">GPU memory used without a matching GPU allocation on that node "
              "(<code>unallocated_use</code>, e.g. a container that sees every GPU), or on more "
              "whole GPUs than requested (<code>excess_devices</code>).</p>\n",
              f);
}

/* ---- cost per unit of work: the team's top workloads with work counters ---- */

/* The unit-cost row of a top workload, or NULL. */
static const struct gl_unit_cost_row *unit_cost_of(const struct page_ctx *x,
                                                   const struct gl_workload_row *w)
{
    const struct gl_unit_cost *u = &x->st->unit_cost;
    for (size_t i = 0; i < u->n; i++)
        if (!strcmp(u->rows[i].cluster, w->cluster) && !strcmp(u->rows[i].ns, w->ns) &&
            !strcmp(u->rows[i].kind, w->kind) && !strcmp(u->rows[i].name, w->name))
            return &u->rows[i];
    return NULL;
}

static bool has_unit_cost(const struct page_ctx *x)
{
    for (size_t i = 0; x->c->nwork > 0 && i < x->e->workloads.n; i++)
        if (unit_cost_of(x, &x->e->workloads.w[i]))
            return true;
    return false;
}

/* The cost (memory used) of each top workload, labelled with its costs per unit. */
static void svg_unit_cost(FILE *f, const struct page_ctx *x)
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
        int y = 4 + (int)row++ * ROW, w = rp_px(r->cost_minor, max, BAR);
        char full[300], shortl[200], cost[96], per[96];
        snprintf(full, sizeof full, "%s/%s/%s", r->ns, r->kind, r->name);
        rp_shorten(full, 44, shortl, sizeof shortl);
        rp_fmt_money(x->c, r->cost_minor, cost, sizeof cost);
        fputs("<g><title>", f);
        rp_html(f, full);
        fprintf(f, ": %s</title>\n<text x=\"0\" y=\"%d\" class=\"lbl\">", cost, y + 17);
        rp_html(f, shortl);
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
            rp_html(f, label);
        }
        fputs(r->nwork ? "</text></g>\n" : " · no work recorded</text></g>\n", f);
    }
    fputs("</svg>\n", f);
}

static void intro_unit_cost(FILE *f, enum fmt fmt, const struct page_ctx *x)
{
    if (fmt == FMT_HTML && has_unit_cost(x))
        svg_unit_cost(f, x);
    para_open(f, fmt, "note");
    fputs("Cost: the memory each workload used at the period's prices; with idle/overhead: "
          "plus its share of its team's idle and overhead lines under the configured policy "
          "(none under platform or unbilled). Units: the increase of its work counters (", f);
    rp_code(f, fmt, "work.counters");
    fputs(", restarts counted from 0, nothing extrapolated). Per 1M tokens, per 1k requests "
          "or inferences, per step, per 1 of any other unit; the team's top workloads.", f);
    para_close(f, fmt);
}

static void tbl_unit_cost(const struct page_ctx *x, struct table *t)
{
    static const struct rp_col cols[] = {{"Cluster", 0}, {"Namespace", 0}, {"Workload", 0},
                                         {"Used GB-h", COL_N}, {"Cost (memory used)", COL_N},
                                         {"With idle/overhead", COL_N}, {"Units", COL_N},
                                         {"Cost per", COL_N}};
    RP_COLS(t, cols);
    for (size_t i = 0; i < x->e->workloads.n; i++) {
        const struct gl_unit_cost_row *r = unit_cost_of(x, &x->e->workloads.w[i]);
        for (size_t k = 0; r && k < (r->nwork ? r->nwork : 1); k++) {
            const struct gl_unit_work *w = r->nwork ? &r->work[k] : NULL;
            char v[96], per[96];
            rp_table_row(t);
            rp_table_cell(t, 0, CELL_LABEL, "%s", r->cluster);
            rp_table_cell(t, 1, CELL_LABEL, "%s", r->ns);
            rp_table_cell(t, 2, CELL_LABEL, "%s/%s", r->kind, r->name);
            rp_cell_gbh(t, 3, r->used_mib_s);
            rp_fmt_money(x->c, r->cost_minor, v, sizeof v);
            rp_table_cell(t, 4, 0, "%s", v);
            rp_fmt_money(x->c, r->with_shares_minor, v, sizeof v);
            rp_table_cell(t, 5, 0, "%s", x->st->unit_cost.shares ? v : "—");
            if (!w || w->units <= 0) {
                rp_table_cell(t, 6, 0, "%s", w ? "0" : "—");
                rp_table_cell(t, 7, 0, "%s", "no work recorded");
                continue;
            }
            rp_table_cell(t, 6, CELL_LABEL, "%lld %s", (long long)w->units, w->unit);
            char label[64];
            gl_unit_cost_per_label(w, label, sizeof label);
            gl_dec_format(w->per_minor, x->c->minor_digits, per, sizeof per);
            rp_table_cell(t, 7, CELL_LABEL, "%s per %s", per, label);
        }
    }
}

/* ---- right-sizing advice (engine/bill/advice.h; never billed) ---- */

static bool advised(const struct page_ctx *x, const struct gl_advice_line *l)
{
    return l->to != GL_ADV_NONE && strcmp(l->team, x->inv->team) == 0;
}

static bool has_advice(const struct page_ctx *x)
{
    for (size_t i = 0; i < x->st->advice.nlines; i++)
        if (advised(x, &x->st->advice.lines[i]))
            return true;
    return false;
}

static void intro_advice(FILE *f, enum fmt fmt, const struct page_ctx *x)
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

static void tbl_advice(const struct page_ctx *x, struct table *t)
{
    char al[256], to[512], v[128];
    static const struct rp_col cols[] = {{"Cluster", 0}, {"Workload", 0}, {"GPU model", 0},
                                         {"Allocation", 0}, {"Peak MiB", COL_N},
                                         {"p99 bound MiB", COL_N}, {"Recommended", 0},
                                         {"Saving", COL_N}, {"Assumes", 0}};
    RP_COLS(t, cols);
    for (size_t i = 0; i < x->st->advice.nlines; i++) {
        const struct gl_advice_line *l = &x->st->advice.lines[i];
        if (!advised(x, l))
            continue;
        gl_advise_alloc_text(l, al, sizeof al);
        gl_advise_to_text(l, to, sizeof to);
        rp_table_row(t);
        rp_table_cell(t, 0, CELL_LABEL, "%s", l->cluster);
        rp_table_cell(t, 1, CELL_LABEL, "%s/%s (%s)", l->ns, l->wname, l->wkind);
        rp_table_cell(t, 2, CELL_LABEL, "%s", l->model);
        rp_table_cell(t, 3, CELL_LABEL, "%s", al);
        rp_table_cell(t, 4, 0, "%lld", (long long)l->peak_mib);
        rp_table_cell(t, 5, 0, "%lld", (long long)l->p99_bound_mib);
        rp_table_cell(t, 6, CELL_LABEL, "%s", to);
        rp_fmt_money(x->c, l->saving, v, sizeof v);
        rp_table_cell(t, 7, 0, "%s", v);
        rp_table_cell(t, 8, CELL_LABEL, "%s", l->assumes);
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
void rp_tbl_pending_keys(const struct gl_pending *pd, bool teams, struct table *t)
{
    if (teams)
        rp_table_col(t, "Team", 0);
    static const struct rp_col cols[] = {{"Cluster", 0}, {"GPU model", 0},
                                         {"GPU-h waiting", COL_N}};
    RP_COLS(t, cols);
    const size_t c = teams ? 1 : 0;
    for (size_t i = 0; i < pd->nk; i++) {
        char v[96];
        rp_table_row(t);
        if (teams)
            rp_table_cell(t, 0, CELL_LABEL, "%s", pd->k[i].team);
        rp_table_cell(t, c, CELL_LABEL, "%s", pd->k[i].cluster);
        rp_table_cell(t, c + 1, CELL_LABEL, "%s", pd->k[i].model);
        fmt_hours(pd->k[i].gpu_us, INT64_C(3600000000), v, sizeof v);
        rp_table_cell(t, c + 2, 0, "%s", v);
    }
}

/* The longest waits, with each pod's team on the fleet's list only. */
void rp_tbl_pending_waits(const struct gl_pending *pd, bool teams, struct table *t)
{
    rp_table_col(t, "Cluster", 0);
    rp_table_col(t, "Pod", 0);
    if (teams)
        rp_table_col(t, "Team", 0);
    static const struct rp_col cols[] = {{"First Pending (UTC)", 0},
                                         {"Hours, first to last Pending", COL_N},
                                         {"GPU-h", COL_N}};
    RP_COLS(t, cols);
    const size_t c = teams ? 3 : 2;
    for (size_t i = 0; i < pd->np; i++) {
        const struct gl_pending_pod *w = &pd->p[i];
        char v[96];
        rp_table_row(t);
        rp_table_cell(t, 0, CELL_LABEL, "%s", w->cluster);
        rp_table_cell(t, 1, CELL_LABEL | CELL_CODE, "%s/%s", w->ns, w->pod);
        if (teams)
            rp_table_cell(t, 2, CELL_LABEL, "%s", w->team);
        gl_time_format(w->first_seen, v, sizeof v);
        rp_table_cell(t, c, 0, "%s", v);
        fmt_hours(w->waited_s, 3600, v, sizeof v);
        rp_table_cell(t, c + 1, 0, "%s", v);
        fmt_hours(w->gpu_us, INT64_C(3600000000), v, sizeof v);
        rp_table_cell(t, c + 2, 0, "%s", v);
    }
}

const char rp_pending_note[] =
    "GPUs requested by pods while Pending (kube-state-metrics): demand the fleet did not "
    "serve, never billed. A MIG profile counts its slices/7 of a GPU; a time-slicing share "
    "1/replicas of its node's GPU, or a whole GPU while the pod has no node.";

static void tbl_team_pending_keys(const struct page_ctx *x, struct table *t)
{
    rp_tbl_pending_keys(&x->e->pending, false, t);
}

static bool has_team_pending(const struct page_ctx *x)
{
    return x->e->pending.nk || x->e->pending.np;
}

/* The team's GPU-hours waiting per cluster and model, then what the table
 * (its longest waits) lists. */
static void intro_team_pending(FILE *f, enum fmt fmt, const struct page_ctx *x)
{
    const struct gl_pending *pd = &x->e->pending;
    rp_table_write(f, fmt, x, tbl_team_pending_keys);
    if (fmt == FMT_MD)
        fputc('\n', f);
    para_open(f, fmt, "note");
    fprintf(f, "%s Longest waits (%zu of %lld pods):", rp_pending_note, pd->np,
            (long long)pd->pods);
    para_close(f, fmt);
}

static void tbl_team_waits(const struct page_ctx *x, struct table *t)
{
    rp_tbl_pending_waits(&x->e->pending, false, t);
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

void rp_team_sections_write(FILE *f, enum fmt fmt, const struct page_ctx *x)
{
    for (size_t i = 0; i < sizeof team_sections / sizeof *team_sections; i++) {
        const struct section *s = &team_sections[i];
        if (s->open_only && x->st->closed)
            continue;
        bool rows = s->has_rows(x);
        if (!rows && !s->empty)
            continue;
        rp_heading(f, fmt, i == 0, s->title);
        if (s->intro && (rows || s->intro_always))
            s->intro(f, fmt, x);
        if (!rows) {
            if (fmt == FMT_HTML)
                fprintf(f, "<p class=\"note\">%s</p>\n", s->empty);
            else
                fprintf(f, "%s\n", s->empty);
            continue;
        }
        rp_table_write(f, fmt, x, s->table);
    }
}
