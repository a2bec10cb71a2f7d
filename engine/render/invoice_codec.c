/* invoice_codec — an invoice set's JSON and Markdown (invoice_codec.h). */
#include "invoice_codec.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* The gaps as JSON: [{"cluster", "kind", "from", "to", "hours"}]. */
static cJSON *gaps_json(const struct gl_invoice_set *set)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < set->ngaps; i++) {
        const struct gl_gap *g = &set->gaps[i];
        char buf[32];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "cluster", g->cluster);
        cJSON_AddStringToObject(o, "kind", gl_gap_kind_name(g->kind));
        gl_time_format(g->from, buf, sizeof buf);
        cJSON_AddStringToObject(o, "from", buf);
        gl_time_format(g->to, buf, sizeof buf);
        cJSON_AddStringToObject(o, "to", buf);
        cJSON_AddNumberToObject(o, "hours", (double)((g->to - g->from) / 3600));
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

static void add_dec(cJSON *o, const char *key, gl_i128 v, int scale)
{
    char buf[80];
    gl_dec_format(v, scale, buf, sizeof buf);
    cJSON_AddStringToObject(o, key, buf);
}

/* An information row (waste, allocated): where, and its memory held. */
static cJSON *info_json(const struct gl_info_row *r)
{
    char buf[32];
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "cluster", r->cluster);
    cJSON_AddStringToObject(x, "gpu_model", r->model);
    snprintf(buf, sizeof buf, "%lld", (long long)r->a);
    cJSON_AddStringToObject(x, "mib_seconds", buf);
    add_dec(x, "gb_hours", gl_gbh_nano(r->a), GL_GBH_DECIMALS);
    return x;
}

void *gl_invoice_object(const struct gl_invoice_set *set, const struct gl_invoice *inv)
{
    const struct gl_config *c = set->cfg;
    char buf[80];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "invoice_id", inv->invoice_id);
    cJSON_AddStringToObject(o, "period", set->period.name);
    gl_time_format(set->period.start, buf, sizeof buf);
    cJSON_AddStringToObject(o, "period_start", buf);
    gl_time_format(set->period.end, buf, sizeof buf);
    cJSON_AddStringToObject(o, "period_end", buf);
    cJSON_AddStringToObject(o, "status", set->closed_at ? "final" : "draft");
    if (set->closed_at) {
        gl_time_format(set->closed_at, buf, sizeof buf);
        cJSON_AddStringToObject(o, "closed_at", buf);
    } else {
        cJSON_AddNullToObject(o, "closed_at");
    }
    /* closed with `close --force` although incomplete (only then present) */
    if (set->ngaps)
        cJSON_AddItemToObject(o, "incomplete_at_close", gaps_json(set));
    cJSON_AddStringToObject(o, "team", inv->team);
    cJSON_AddStringToObject(o, "team_name", inv->team_name);
    if (inv->cost_center)
        cJSON_AddStringToObject(o, "cost_center", inv->cost_center);
    else
        cJSON_AddNullToObject(o, "cost_center");
    cJSON_AddStringToObject(o, "currency", c->currency);
    cJSON *lines = cJSON_AddArrayToObject(o, "lines");
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct gl_invoice_line *l = &inv->lines[i];
        cJSON *lo = cJSON_CreateObject();
        cJSON_AddStringToObject(lo, "cluster", l->cluster);
        cJSON_AddStringToObject(lo, "gpu_model", l->model);
        cJSON_AddStringToObject(lo, "kind", gl_line_kind_name(l->kind));
        cJSON_AddStringToObject(lo, "price_id", l->price->id);
        gl_time_format(l->price->valid_from, buf, sizeof buf);
        cJSON_AddStringToObject(lo, "price_valid_from", buf);
        if (l->price->valid_to == INT64_MAX) {
            cJSON_AddNullToObject(lo, "price_valid_to");
        } else {
            gl_time_format(l->price->valid_to, buf, sizeof buf);
            cJSON_AddStringToObject(lo, "price_valid_to", buf);
        }
        gl_dec_format_trim(l->unit_price12, GL_PRICE_DECIMALS, buf, sizeof buf);
        cJSON_AddStringToObject(lo, "unit_price", buf);
        cJSON_AddStringToObject(lo, "pricing_unit", "GB-Hours");
        if (l->price->unit == GL_PRICE_GPU_HOURS) {
            gl_dec_format_trim(l->price->price12, GL_PRICE_DECIMALS, buf, sizeof buf);
            cJSON_AddStringToObject(lo, "list_price_per_gpu_hour", buf);
        }
        snprintf(buf, sizeof buf, "%lld", (long long)l->mib_s);
        cJSON_AddStringToObject(lo, "mib_seconds", buf);
        add_dec(lo, "gb_hours", gl_line_gbh_nano(l), GL_GBH_DECIMALS);
        add_dec(lo, "amount", l->amount, c->minor_digits);
        cJSON_AddBoolToObject(lo, "estimated", l->estimated != 0);
        if (l->corrected_period[0]) {
            cJSON_AddStringToObject(lo, "charge_class", "Correction");
            cJSON_AddStringToObject(lo, "corrected_period", l->corrected_period);
            cJSON *days = cJSON_AddArrayToObject(lo, "days");
            for (size_t d = 0; d < l->ndays; d++) {
                cJSON *x = cJSON_CreateObject();
                gl_date_format(l->days[d].day, buf, sizeof buf);
                cJSON_AddStringToObject(x, "day", buf);
                snprintf(buf, sizeof buf, "%lld", (long long)l->days[d].mib_s);
                cJSON_AddStringToObject(x, "mib_seconds", buf);
                add_dec(x, "gb_hours", l->days[d].qty_nano, GL_GBH_DECIMALS);
                add_dec(x, "amount", l->days[d].billed, c->minor_digits);
                cJSON_AddItemToArray(days, x);
            }
        } else {
            cJSON_AddNullToObject(lo, "charge_class");
            cJSON_AddNullToObject(lo, "corrected_period");
        }
        cJSON_AddItemToArray(lines, lo);
    }
    add_dec(o, "total", inv->total, c->minor_digits);
    cJSON *waste = cJSON_AddArrayToObject(o, "waste");
    for (size_t i = 0; i < inv->nwaste; i++)
        cJSON_AddItemToArray(waste, info_json(&inv->waste[i]));
    cJSON *alloc = cJSON_AddArrayToObject(o, "allocated");
    for (size_t i = 0; i < inv->nallocated; i++) {
        const struct gl_info_row *r = &inv->allocated[i];
        cJSON *x = info_json(r);
        /* micro-GPU-seconds → GPU-hours, 9 decimals */
        add_dec(x, "gpu_hours", gl_div_half_even((gl_i128)r->b * 1000, 3600), GL_GBH_DECIMALS);
        cJSON_AddItemToArray(alloc, x);
    }
    cJSON *comp = cJSON_AddArrayToObject(o, "compute_indicator");
    for (size_t i = 0; i < inv->ncompute; i++) {
        const struct gl_info_row *r = &inv->compute[i];
        if (r->b <= 0)
            continue;
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "cluster", r->cluster);
        cJSON_AddStringToObject(x, "gpu_model", r->model);
        add_dec(x, "busy_ratio", gl_div_half_even(r->a, r->b), 6);
        cJSON_AddNumberToObject(x, "device_steps", (double)r->b);
        cJSON_AddStringToObject(x, "caveat", gl_compute_caveat);
        cJSON_AddItemToArray(comp, x);
    }
    cJSON *an = cJSON_AddArrayToObject(o, "anomalies");
    for (size_t i = 0; i < inv->anomalies.n; i++)
        cJSON_AddItemToArray(an, gl_anomaly_json(&inv->anomalies.items[i]));
    cJSON_AddStringToObject(o, "generator", set->generator ? set->generator : gl_generator);
    return o;
}

void *gl_anomaly_json(const struct gl_anomaly *a)
{
    char buf[64];
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "kind", gl_anomaly_kind_name(a->kind));
    cJSON_AddStringToObject(x, "cluster", a->cluster);
    cJSON_AddStringToObject(x, "namespace", a->ns);
    cJSON_AddStringToObject(x, "pod", a->pod);
    cJSON_AddStringToObject(x, "team", a->team);
    cJSON_AddStringToObject(x, "node", a->node);
    cJSON_AddStringToObject(x, "device", a->device);
    cJSON_AddStringToObject(x, "gpu_model", a->model);
    gl_time_format(a->first_seen, buf, sizeof buf);
    cJSON_AddStringToObject(x, "first_seen", buf);
    gl_time_format(a->last_seen, buf, sizeof buf);
    cJSON_AddStringToObject(x, "last_seen", buf);
    snprintf(buf, sizeof buf, "%lld", (long long)a->mib_s);
    cJSON_AddStringToObject(x, "mib_seconds", buf);
    add_dec(x, "gb_hours", gl_gbh_nano(a->mib_s), GL_GBH_DECIMALS);
    return x;
}

char *gl_invoice_json(const struct gl_invoice_set *set, const struct gl_invoice *inv)
{
    cJSON *root = gl_invoice_object(set, inv);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

/* A Markdown row's first two cells: cluster and GPU model. */
static void md_where(FILE *out, const char *cluster, const char *model)
{
    fputs("| ", out);
    gl_md_cell(out, cluster);
    fputs(" | ", out);
    gl_md_cell(out, model);
}

size_t gl_invoice_md_lines(const struct gl_invoice_set *set, const struct gl_invoice *inv,
                           bool corrections_only, FILE *out)
{
    const struct gl_config *c = set->cfg;
    char a[80], b[80], q[80];
    size_t n = 0;
    fprintf(out, "| Cluster | GPU model | Kind | GB-hours | Unit price (per GB-hour) | Price entry | Amount |\n");
    fprintf(out, "|---|---|---|---:|---:|---|---:|\n");
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct gl_invoice_line *l = &inv->lines[i];
        if (corrections_only && !l->corrected_period[0])
            continue;
        n++;
        gl_dec_format(gl_line_gbh_nano(l), GL_GBH_DECIMALS, q, sizeof q);
        gl_dec_format_trim(l->unit_price12, GL_PRICE_DECIMALS, a, sizeof a);
        gl_dec_format(l->amount, c->minor_digits, b, sizeof b);
        md_where(out, l->cluster, l->model);
        fprintf(out, " | %s%s%s%s | %s | %s | %s | %s |\n", gl_line_kind_name(l->kind),
                l->estimated ? " (estimated)" : "",
                l->corrected_period[0] ? ", correction of " : "", l->corrected_period, q, a,
                l->price->id, b);
    }
    return n;
}

void gl_invoice_markdown(const struct gl_invoice_set *set, const struct gl_invoice *inv,
                         FILE *out)
{
    const struct gl_config *c = set->cfg;
    char a[80], b[80], q[80];
    fprintf(out, "# Invoice %s\n\n", inv->invoice_id);
    fprintf(out, "- Team: **");
    gl_md_cell(out, inv->team_name);
    fprintf(out, "** (`");
    gl_md_cell(out, inv->team);
    fputs("`)\n- Cost center: ", out);
    gl_md_cell(out, inv->cost_center ? inv->cost_center : "—");
    fputc('\n', out);
    gl_time_format(set->period.start, a, sizeof a);
    gl_time_format(set->period.end, b, sizeof b);
    fprintf(out, "- Period: %s (%s to %s, UTC)\n", set->period.name, a, b);
    if (set->closed_at) {
        gl_time_format(set->closed_at, a, sizeof a);
        fprintf(out, "- Status: **FINAL** (period closed %s)\n", a);
        if (set->ngaps) {
            struct gl_buf g;
            gl_buf_init(&g);
            gl_gaps_describe(set->gaps, set->ngaps, &g);
            fputs("- **Incomplete at close** (closed with --force): ", out);
            gl_md_cell(out, g.data ? g.data : "");
            fputs(" (usage of these hours collected later is billed as corrections of a later "
                  "month)\n", out);
            gl_buf_free(&g);
        }
    } else {
        fputs("- Status: **DRAFT** (the period is open: figures may change until it is "
              "closed)\n", out);
    }
    fprintf(out, "- Currency: %s\n\n", c->currency);
    fprintf(out, "Billed by GPU memory held (GB-hours, GB = 10^9 bytes).\n\n");
    gl_invoice_md_lines(set, inv, false, out);
    gl_dec_format(inv->total, c->minor_digits, b, sizeof b);
    fprintf(out, "\n**Total: %s %s**\n", b, c->currency);
    if (inv->nwaste || inv->nallocated) {
        bool billed = false; /* what was collected decides, not today's config */
        for (size_t i = 0; i < inv->nlines; i++)
            billed |= inv->lines[i].kind == GL_LINE_RESERVED_UNUSED;
        fprintf(out, "\n## Allocation (information, %s)\n\n",
                billed ? "reserved-unused is billed above" : "reserved-unused is not billed");
        fprintf(out, "| Cluster | GPU model | Allocated GB-hours | GPU-hours | Reserved-unused GB-hours (waste) |\n");
        fprintf(out, "|---|---|---:|---:|---:|\n");
        for (size_t i = 0; i < inv->nallocated; i++) {
            const struct gl_info_row *r = &inv->allocated[i];
            int64_t waste = 0;
            for (size_t k = 0; k < inv->nwaste; k++)
                if (!strcmp(inv->waste[k].cluster, r->cluster) && !strcmp(inv->waste[k].model, r->model))
                    waste = inv->waste[k].a;
            char gh[80];
            gl_dec_format(gl_gbh_nano(r->a), GL_GBH_DECIMALS, q, sizeof q);
            gl_dec_format(gl_div_half_even((gl_i128)r->b * 1000, 3600), GL_GBH_DECIMALS, gh, sizeof gh);
            gl_dec_format(gl_gbh_nano(waste), GL_GBH_DECIMALS, a, sizeof a);
            md_where(out, r->cluster, r->model);
            fprintf(out, " | %s | %s | %s |\n", q, gh, a);
        }
    }
    if (inv->ncompute) {
        fprintf(out, "\n## Compute indicator (not billed)\n\n> %s\n\n", gl_compute_caveat);
        fprintf(out, "| Cluster | GPU model | Busy ratio | Device steps |\n|---|---|---:|---:|\n");
        for (size_t i = 0; i < inv->ncompute; i++) {
            const struct gl_info_row *r = &inv->compute[i];
            if (r->b <= 0)
                continue;
            gl_dec_format(gl_div_half_even(r->a, r->b), 6, a, sizeof a);
            md_where(out, r->cluster, r->model);
            fprintf(out, " | %s | %lld |\n", a, (long long)r->b);
        }
    }
    if (inv->anomalies.n) {
        fprintf(out, "\n## Anomalies (billed as used)\n\n");
        fprintf(out, "| Kind | Namespace/pod | Node | Device | First seen | Last seen | GB-hours |\n");
        fprintf(out, "|---|---|---|---|---|---|---:|\n");
        for (size_t i = 0; i < inv->anomalies.n; i++) {
            const struct gl_anomaly *x = &inv->anomalies.items[i];
            char f[32], l[32];
            gl_time_format(x->first_seen, f, sizeof f);
            gl_time_format(x->last_seen, l, sizeof l);
            gl_dec_format(gl_gbh_nano(x->mib_s), GL_GBH_DECIMALS, q, sizeof q);
            fprintf(out, "| %s | ", gl_anomaly_kind_name(x->kind));
            gl_md_cell(out, x->ns);
            fputs("/", out);
            gl_md_cell(out, x->pod);
            fputs(" | ", out);
            gl_md_cell(out, x->node);
            fputs(" | ", out);
            gl_md_cell(out, x->device);
            fprintf(out, " | %s | %s | %s |\n", f, l, q);
        }
    }
}

void gl_invoice_md_corrections(const struct gl_invoice_set *set, FILE *out, size_t *nlines)
{
    *nlines = 0;
    for (size_t i = 0; i < set->n; i++) {
        const struct gl_invoice *inv = &set->invoices[i];
        bool any = false;
        for (size_t j = 0; !any && j < inv->nlines; j++)
            any = inv->lines[j].corrected_period[0] != '\0';
        if (!any)
            continue;
        fprintf(out, "\ncorrection lines of %s for team `", set->period.name);
        gl_md_cell(out, inv->team);
        fprintf(out, "` (invoice %s):\n\n", inv->invoice_id);
        *nlines += gl_invoice_md_lines(set, inv, true, out);
    }
}
