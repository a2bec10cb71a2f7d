/* invoice — pricing hourly rollups into invoice lines; JSON and Markdown. */
#include "invoice.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "gl_build.h"
#include "util.h"

static struct gl_invoice *invoice_for(struct gl_invoice_set *set, const char *team)
{
    if (set->n > 0 && strcmp(set->invoices[set->n - 1].team, team) == 0)
        return &set->invoices[set->n - 1];
    set->invoices = gl_xrealloc(set->invoices, (set->n + 1) * sizeof *set->invoices);
    struct gl_invoice *inv = &set->invoices[set->n++];
    memset(inv, 0, sizeof *inv);
    inv->team = gl_strdup(team);
    const struct gl_team_info *ti = gl_config_team(set->cfg, team);
    inv->team_name = ti ? ti->name : inv->team;
    inv->cost_center = ti ? ti->cost_center : NULL;
    snprintf(inv->invoice_id, sizeof inv->invoice_id, "GL-%s-%s", set->period.name, team);
    return inv;
}

static struct gl_invoice_line *line_for(struct gl_invoice *inv, const char *cluster,
                                        const char *model, const char *kind,
                                        const struct gl_price_entry *price)
{
    for (size_t i = inv->nlines; i-- > 0;) {
        struct gl_invoice_line *l = &inv->lines[i];
        if (l->price == price && strcmp(l->cluster, cluster) == 0 &&
            strcmp(l->model, model) == 0 && strcmp(l->kind, kind) == 0)
            return l;
    }
    inv->lines = gl_xrealloc(inv->lines, (inv->nlines + 1) * sizeof *inv->lines);
    struct gl_invoice_line *l = &inv->lines[inv->nlines++];
    memset(l, 0, sizeof *l);
    l->cluster = gl_strdup(cluster);
    l->model = gl_strdup(model);
    l->kind = gl_strdup(kind);
    l->price = price;
    return l;
}

static void line_add_day(struct gl_invoice_line *l, int64_t day, int64_t mib_s)
{
    if (l->ndays > 0 && l->days[l->ndays - 1].day == day) {
        l->days[l->ndays - 1].mib_s += mib_s;
        return;
    }
    l->days = gl_xrealloc(l->days, (l->ndays + 1) * sizeof *l->days);
    l->days[l->ndays++] = (struct gl_line_day){day, mib_s, 0};
}

/* Largest measured full-GPU capacity (MiB) of a model, 0 when unknown. */
static int64_t measured_capacity(struct gl_store *s, const char *model)
{
    sqlite3_stmt *st;
    int64_t cap = 0;
    if (sqlite3_prepare_v2(gl_store_db(s),
                           "SELECT MAX(max_capacity_mib) FROM device WHERE model = ? AND gpu_i_id = ''",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        cap = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return cap;
}

static enum gl_status price_lines(const struct gl_config *c, struct gl_store *s,
                                  struct gl_invoice_set *set, const struct gl_price_table *prices,
                                  struct gl_error *err)
{
    for (size_t i = 0; i < set->n; i++) {
        struct gl_invoice *inv = &set->invoices[i];
        inv->total = 0;
        for (size_t j = 0; j < inv->nlines; j++) {
            struct gl_invoice_line *l = &inv->lines[j];
            enum gl_status rc = gl_price_per_gbh(prices, l->price, l->model,
                                                 measured_capacity(s, l->model),
                                                 &l->unit_price12, err);
            if (rc)
                return rc;
            if (!gl_amount_minor(l->mib_s, l->unit_price12, c->minor_digits, &l->amount))
                return gl_error_set(err, GL_ERR_RUNTIME, "amount overflow on team %s model %s",
                                    inv->team, l->model);
            gl_i128 *w = gl_xcalloc(l->ndays, sizeof *w);
            gl_i128 *parts = gl_xcalloc(l->ndays, sizeof *parts);
            for (size_t d = 0; d < l->ndays; d++)
                w[d] = l->days[d].mib_s;
            gl_split_largest_remainder(l->amount, w, l->ndays, parts);
            for (size_t d = 0; d < l->ndays; d++)
                l->days[d].billed = parts[d];
            free(w);
            free(parts);
            inv->total += l->amount;
        }
    }
    return GL_OK;
}

enum gl_status gl_invoices_build(const struct gl_config *c, struct gl_store *s,
                                 const struct gl_price_table *prices, const struct gl_period *p,
                                 struct gl_invoice_set **out, struct gl_error *err)
{
    *out = NULL;
    struct gl_invoice_set *set = gl_xcalloc(1, sizeof *set);
    set->cfg = c;
    set->period = *p;
    /* Pod usage goes to its team; under the platform policy the devices'
     * idle and overhead (driver-reserved + unattributed) go to the platform
     * team as lines of their own, so all invoices add up to capacity. */
    static const char sql[] =
        "SELECT team, cluster, model, kind, hour, SUM(mib), MAX(est) FROM ("
        " SELECT u.team AS team, u.cluster AS cluster, d.model AS model,"
        "  CASE u.kind WHEN 'memory_used' THEN 'memory_used' ELSE 'reserved_unused' END AS kind,"
        "  u.hour AS hour, u.quantity AS mib, u.estimated AS est"
        " FROM usage u JOIN device d ON d.id = u.device_id"
        " WHERE u.hour >= ?1 AND u.hour < ?2"
        "  AND u.kind IN ('memory_used', 'reserved_unused_billed')"
        " UNION ALL"
        " SELECT ?3, u.cluster, d.model,"
        "  CASE u.kind WHEN 'idle' THEN 'idle_share' ELSE 'overhead_share' END,"
        "  u.hour, u.quantity, u.estimated"
        " FROM usage u JOIN device d ON d.id = u.device_id"
        " WHERE ?4 AND u.hour >= ?1 AND u.hour < ?2"
        "  AND u.kind IN ('idle', 'reserved', 'unattributed'))"
        " GROUP BY team, cluster, model, kind, hour"
        " ORDER BY team, cluster, model, kind, hour";
    sqlite3_stmt *st = NULL;
    enum gl_status rc = GL_OK;
    if (sqlite3_prepare_v2(gl_store_db(s), sql, -1, &st, NULL) != SQLITE_OK) {
        rc = gl_store_fail(s, "reading usage", err);
        goto done;
    }
    sqlite3_bind_int64(st, 1, p->start);
    sqlite3_bind_int64(st, 2, p->end);
    sqlite3_bind_text(st, 3, c->platform_team, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, c->idle_policy == GL_IDLE_PLATFORM);
    char last_model[512] = "";
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *team = (const char *)sqlite3_column_text(st, 0);
        const char *cluster = (const char *)sqlite3_column_text(st, 1);
        const char *model = (const char *)sqlite3_column_text(st, 2);
        const char *kind = (const char *)sqlite3_column_text(st, 3);
        int64_t hour = sqlite3_column_int64(st, 4);
        int64_t mib_s = sqlite3_column_int64(st, 5);
        int estimated = sqlite3_column_int(st, 6);
        if (strcmp(model, last_model) != 0) {
            if ((rc = gl_prices_check_model(prices, model, err)))
                goto done;
            snprintf(last_model, sizeof last_model, "%s", model);
        }
        int pi = gl_prices_find(prices, model, hour);
        if (pi < 0) {
            char ts[32];
            gl_time_format(hour, ts, sizeof ts);
            rc = gl_error_set(err, GL_ERR_CONFIG,
                              "%s: no price for GPU model \"%s\" at %s (used by team %s in "
                              "cluster %s)",
                              prices->file, model, ts, team, cluster);
            goto done;
        }
        struct gl_invoice *inv = invoice_for(set, team);
        struct gl_invoice_line *l = line_for(inv, cluster, model, kind, &prices->entries[pi]);
        l->mib_s += mib_s;
        l->estimated |= estimated;
        line_add_day(l, gl_floor_to(hour, 86400), mib_s);
    }
    if (sr != SQLITE_DONE) {
        rc = gl_store_fail(s, "reading usage", err);
        goto done;
    }
    rc = price_lines(c, s, set, prices, err);
done:
    sqlite3_finalize(st);
    if (rc) {
        gl_invoices_free(set);
        return rc;
    }
    *out = set;
    return GL_OK;
}

void gl_invoices_free(struct gl_invoice_set *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->n; i++) {
        struct gl_invoice *inv = &set->invoices[i];
        for (size_t j = 0; j < inv->nlines; j++) {
            free(inv->lines[j].cluster);
            free(inv->lines[j].model);
            free(inv->lines[j].kind);
            free(inv->lines[j].days);
        }
        free(inv->lines);
        free(inv->team);
    }
    free(set->invoices);
    free(set);
}

static void add_dec(cJSON *o, const char *key, gl_i128 v, int scale)
{
    char buf[80];
    gl_dec_format(v, scale, buf, sizeof buf);
    cJSON_AddStringToObject(o, key, buf);
}

static cJSON *invoice_object(const struct gl_invoice_set *set, const struct gl_invoice *inv)
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
        cJSON_AddStringToObject(lo, "kind", l->kind);
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
        add_dec(lo, "gb_hours", gl_gbh_nano(l->mib_s), GL_GBH_DECIMALS);
        add_dec(lo, "amount", l->amount, c->minor_digits);
        cJSON_AddBoolToObject(lo, "estimated", l->estimated != 0);
        cJSON_AddItemToArray(lines, lo);
    }
    add_dec(o, "total", inv->total, c->minor_digits);
    cJSON_AddStringToObject(o, "generator", "gpuledger " GL_VERSION);
    return o;
}

char *gl_invoice_json(const struct gl_invoice_set *set, const struct gl_invoice *inv)
{
    cJSON *root;
    if (inv) {
        root = invoice_object(set, inv);
    } else {
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "period", set->period.name);
        cJSON *arr = cJSON_AddArrayToObject(root, "invoices");
        for (size_t i = 0; i < set->n; i++)
            cJSON_AddItemToArray(arr, invoice_object(set, &set->invoices[i]));
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

/* Markdown table cells: escape the pipe and drop line breaks. */
static void md_cell(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", out);
        else if (*s == '\n' || *s == '\r')
            fputc(' ', out);
        else
            fputc(*s, out);
    }
}

void gl_invoice_markdown(const struct gl_invoice_set *set, const struct gl_invoice *inv,
                         FILE *out)
{
    const struct gl_config *c = set->cfg;
    char a[80], b[80], q[80];
    fprintf(out, "# Invoice %s\n\n", inv->invoice_id);
    fprintf(out, "- Team: **");
    md_cell(out, inv->team_name);
    fprintf(out, "** (`");
    md_cell(out, inv->team);
    fprintf(out, "`)\n- Cost center: %s\n", inv->cost_center ? inv->cost_center : "—");
    gl_time_format(set->period.start, a, sizeof a);
    gl_time_format(set->period.end, b, sizeof b);
    fprintf(out, "- Period: %s (%s to %s, UTC)\n- Currency: %s\n\n", set->period.name, a, b,
            c->currency);
    fprintf(out, "Billed by GPU memory held (GB-hours, GB = 10^9 bytes).\n\n");
    fprintf(out, "| Cluster | GPU model | Kind | GB-hours | Unit price (per GB-hour) | Price entry | Amount |\n");
    fprintf(out, "|---|---|---|---:|---:|---|---:|\n");
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct gl_invoice_line *l = &inv->lines[i];
        gl_dec_format(gl_gbh_nano(l->mib_s), GL_GBH_DECIMALS, q, sizeof q);
        gl_dec_format_trim(l->unit_price12, GL_PRICE_DECIMALS, a, sizeof a);
        gl_dec_format(l->amount, c->minor_digits, b, sizeof b);
        fputs("| ", out);
        md_cell(out, l->cluster);
        fputs(" | ", out);
        md_cell(out, l->model);
        fprintf(out, " | %s%s | %s | %s | %s | %s |\n", l->kind, l->estimated ? " (estimated)" : "",
                q, a, l->price->id, b);
    }
    gl_dec_format(inv->total, c->minor_digits, b, sizeof b);
    fprintf(out, "\n**Total: %s %s**\n", b, c->currency);
}
