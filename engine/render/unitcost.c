/* unitcost — cost per unit of work as JSON, CSV and Markdown (see unitcost.h). */
#include "unitcost.h"

#include <cjson/cJSON.h>
#include <csv.h>
#include <stdlib.h>
#include <string.h>

#include "money.h"
#include "fields.h"
#include "util.h"

#define NO_WORK "no work recorded"

/* The figures of a row as text: GB-hours (9 decimals), money (minor digits). */
struct figs {
    char gbh[48], unpriced[48], cost[64], with[64]; /* with: "" when not computed */
};

static const char *const policy_names[] = {"platform", "proportional", "unbilled"};

static void row_figs(const struct gl_statement *st, const struct gl_unit_cost_row *r,
                     struct figs *f)
{
    gl_dec_format(gl_gbh_nano(r->used_mib_s), GL_GBH_DECIMALS, f->gbh, sizeof f->gbh);
    gl_dec_format(gl_gbh_nano(r->unpriced_mib_s), GL_GBH_DECIMALS, f->unpriced,
                  sizeof f->unpriced);
    gl_dec_format(r->cost_minor, st->cfg->minor_digits, f->cost, sizeof f->cost);
    f->with[0] = '\0';
    if (st->unit_cost.shares)
        gl_dec_format(r->with_shares_minor, st->cfg->minor_digits, f->with, sizeof f->with);
}

/* A cost per unit as text: "" without units (or without the shares). */
static void per_text(const struct gl_statement *st, const struct gl_unit_work *w, bool with,
                     char *buf, size_t n)
{
    buf[0] = '\0';
    if (w && w->units > 0 && (!with || st->unit_cost.shares))
        gl_dec_format(with ? w->per_with_minor : w->per_minor, st->cfg->minor_digits, buf, n);
}

void gl_unit_cost_per_label(const struct gl_unit_work *w, char *buf, size_t n)
{
    if (w->scale == 1000000)
        snprintf(buf, n, "1M %s", w->unit);
    else if (w->scale == 1000)
        snprintf(buf, n, "1k %s", w->unit);
    else if (strcmp(w->unit, "steps") == 0)
        snprintf(buf, n, "step");
    else
        snprintf(buf, n, "1 %s", w->unit);
}

enum gl_status gl_unit_cost_json(const struct gl_statement *st, size_t i, FILE *out,
                                 struct gl_error *err)
{
    (void)i;
    (void)err;
    cJSON *root = cJSON_CreateObject();
    GL_JSON_STRINGS(root, {"period", st->period.name}, {"currency", st->cfg->currency},
                          {"cost_basis", "memory_used"},
                          {"idle_overhead_policy", policy_names[st->cfg->idle_policy]});
    cJSON *arr = cJSON_AddArrayToObject(root, "workloads");
    for (size_t k = 0; k < st->unit_cost.n; k++) {
        const struct gl_unit_cost_row *r = &st->unit_cost.rows[k];
        struct figs f;
        row_figs(st, r, &f);
        cJSON *o = cJSON_CreateObject();
        GL_JSON_STRINGS(o, {"cluster", r->cluster}, {"namespace", r->ns}, {"kind", r->kind},
                           {"name", r->name}, {"memory_used_gb_hours", f.gbh},
                           {"unpriced_gb_hours", f.unpriced}, {"cost", f.cost});
        if (f.with[0])
            cJSON_AddStringToObject(o, "cost_with_idle_overhead", f.with);
        cJSON *work = cJSON_AddArrayToObject(o, "work");
        for (size_t j = 0; j < r->nwork; j++) {
            const struct gl_unit_work *w = &r->work[j];
            char per[64], per_with[64];
            per_text(st, w, false, per, sizeof per);
            per_text(st, w, true, per_with, sizeof per_with);
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "unit", w->unit);
            char units[32];
            snprintf(units, sizeof units, "%lld", (long long)w->units);
            cJSON_AddStringToObject(x, "units", units);
            cJSON_AddNumberToObject(x, "per_units", (double)w->scale);
            if (per[0])
                cJSON_AddStringToObject(x, "cost_per", per);
            else
                cJSON_AddNullToObject(x, "cost_per");
            if (per_with[0])
                cJSON_AddStringToObject(x, "cost_per_with_idle_overhead", per_with);
            cJSON_AddItemToArray(work, x);
        }
        if (!r->nwork)
            cJSON_AddStringToObject(o, "note", NO_WORK);
        cJSON_AddItemToArray(arr, o);
    }
    char *text = cJSON_Print(root);
    fprintf(out, "%s\n", text);
    free(text);
    cJSON_Delete(root);
    return GL_OK;
}

static void csv_cell(FILE *out, bool first, const char *v)
{
    if (!first)
        fputc(',', out);
    csv_fwrite(out, v, strlen(v));
}

enum gl_status gl_unit_cost_csv(const struct gl_statement *st, size_t i, FILE *out,
                                struct gl_error *err)
{
    (void)i;
    (void)err;
    static const char *const head[] = {"period", "cluster", "namespace", "workload_kind",
                                       "workload", "memory_used_gb_hours", "unpriced_gb_hours",
                                       "cost", "cost_with_idle_overhead",
                                       "idle_overhead_policy", "currency", "unit", "units",
                                       "per_units", "cost_per", "cost_per_with_idle_overhead",
                                       "note"};
    for (size_t k = 0; k < sizeof head / sizeof *head; k++)
        csv_cell(out, k == 0, head[k]);
    fputs("\r\n", out);
    for (size_t k = 0; k < st->unit_cost.n; k++) {
        const struct gl_unit_cost_row *r = &st->unit_cost.rows[k];
        struct figs f;
        row_figs(st, r, &f);
        for (size_t j = 0; j < (r->nwork ? r->nwork : 1); j++) {
            const struct gl_unit_work *w = r->nwork ? &r->work[j] : NULL;
            char units[32] = "", scale[32] = "", per[64], per_with[64];
            if (w) {
                snprintf(units, sizeof units, "%lld", (long long)w->units);
                snprintf(scale, sizeof scale, "%lld", (long long)w->scale);
            }
            per_text(st, w, false, per, sizeof per);
            per_text(st, w, true, per_with, sizeof per_with);
            const char *v[] = {st->period.name, r->cluster, r->ns, r->kind, r->name, f.gbh,
                               f.unpriced, f.cost, f.with, policy_names[st->cfg->idle_policy],
                               st->cfg->currency, w ? w->unit : "", units, scale, per, per_with,
                               w ? "" : NO_WORK};
            for (size_t c = 0; c < sizeof v / sizeof *v; c++)
                csv_cell(out, c == 0, v[c]);
            fputs("\r\n", out);
        }
    }
    return GL_OK;
}

enum gl_status gl_unit_cost_md(const struct gl_statement *st, size_t i, FILE *out,
                               struct gl_error *err)
{
    (void)i;
    (void)err;
    fprintf(out, "# Cost per unit of work — %s\n\n"
                 "Cost: the memory each workload used, at the period's prices (%s). With "
                 "idle/overhead: plus its share of its teams' idle and overhead lines (policy "
                 "%s). Units: the increase of its work counters.\n\n"
                 "| Cluster | Namespace | Workload | Memory used (GB-h) | Cost | "
                 "With idle/overhead | Units | Cost per | With idle/overhead |\n"
                 "|---|---|---|---:|---:|---:|---:|---|---|\n",
            st->period.name, st->cfg->currency, policy_names[st->cfg->idle_policy]);
    for (size_t k = 0; k < st->unit_cost.n; k++) {
        const struct gl_unit_cost_row *r = &st->unit_cost.rows[k];
        struct figs f;
        row_figs(st, r, &f);
        for (size_t j = 0; j < (r->nwork ? r->nwork : 1); j++) {
            GL_MD_PARTS(out, "||/", r->cluster, r->ns, r->kind, r->name);
            fprintf(out, " | %s | %s | %s | ", f.gbh, f.cost, f.with[0] ? f.with : "—");
            if (!r->nwork) {
                fputs("— | " NO_WORK " | — |\n", out);
                continue;
            }
            const struct gl_unit_work *w = &r->work[j];
            char label[64], per[64], per_with[64];
            gl_unit_cost_per_label(w, label, sizeof label);
            per_text(st, w, false, per, sizeof per);
            per_text(st, w, true, per_with, sizeof per_with);
            fprintf(out, "%lld ", (long long)w->units);
            gl_md_cell(out, w->unit);
            for (int with = 0; with < 2; with++) {
                const char *v = with ? per_with : per;
                fputs(" | ", out);
                if (v[0]) {
                    fprintf(out, "%s per ", v);
                    gl_md_cell(out, label);
                } else {
                    fputs(w->units > 0 ? "—" : NO_WORK, out);
                }
            }
            fputs(" |\n", out);
        }
    }
    return GL_OK;
}
