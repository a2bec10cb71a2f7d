/* advise (render) — the advice as JSON (cJSON) and Markdown. */
#include "advise.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "money.h"
#include "fields.h"
#include "util.h"

static const char *const to_kinds[] = {"none", "mig", "time-slicing share", "gpu model"};

void gl_advise_alloc_text(const struct gl_advice_line *l, char *buf, size_t n)
{
    if (l->alloc_mib <= 0)
        snprintf(buf, n, "no allocation seen");
    else if (l->profile[0])
        snprintf(buf, n, "MIG %s (%lld MiB)", l->profile, (long long)l->alloc_mib);
    else if (l->alloc_ugpu > 1000000)
        snprintf(buf, n, "several GPUs (%lld MiB usable)", (long long)l->alloc_mib);
    else if (l->alloc_ugpu == 1000000)
        snprintf(buf, n, "whole GPU (%lld MiB usable)", (long long)l->alloc_mib);
    else
        snprintf(buf, n, "time-slicing share (%lld MiB usable)", (long long)l->alloc_mib);
}

void gl_advise_to_text(const struct gl_advice_line *l, char *buf, size_t n)
{
    switch (l->to) {
    case GL_ADV_MIG:
        snprintf(buf, n, "MIG %s (%lld MiB)", l->to_name, (long long)l->to_mib);
        break;
    case GL_ADV_SHARE:
        snprintf(buf, n, "time-slicing share %s (%lld MiB)", l->to_name, (long long)l->to_mib);
        break;
    case GL_ADV_MODEL:
        snprintf(buf, n, "whole GPU %s (%lld MiB)", l->to_name, (long long)l->to_mib);
        break;
    default:
        snprintf(buf, n, "nothing (right-sized)");
    }
}

const char *gl_advise_saving_meaning(const struct gl_advice *a)
{
    return a->basis->saving_means;
}

static void money(cJSON *o, const char *key, const struct gl_advice *a, gl_i128 v)
{
    char b[80];
    gl_dec_format(v, a->minor_digits, b, sizeof b);
    cJSON_AddStringToObject(o, key, b);
}

static void num(cJSON *o, const char *key, int64_t v)
{
    cJSON_AddNumberToObject(o, key, (double)v); /* MiB and steps: far below 2^53 */
}

static void p99_text(const struct gl_advice_line *l, char *b, size_t n)
{
    snprintf(b, n, "p99 ≤ %lld MiB (%s)", (long long)l->p99_bound_mib, GL_ADVISE_P99_NOTE);
}

static cJSON *line_json(const struct gl_advice *a, const struct gl_advice_line *l)
{
    char b[512];
    cJSON *o = cJSON_CreateObject();
    GL_JSON_STRINGS(o, {"cluster", l->cluster}, {"namespace", l->ns}, {"team", l->team},
                       {"workload_kind", l->wkind}, {"workload", l->wname});
    num(o, "pods", l->pods);
    cJSON_AddStringToObject(o, "gpu_model", l->model);
    gl_advise_alloc_text(l, b, sizeof b);
    cJSON_AddStringToObject(o, "allocation", b);
    num(o, "allocation_mib", l->alloc_mib);
    num(o, "peak_mib", l->peak_mib);
    num(o, "p99_bound_mib", l->p99_bound_mib);
    p99_text(l, b, sizeof b);
    cJSON_AddStringToObject(o, "p99", b);
    num(o, "steps", l->steps);
    num(o, "need_mib", l->need_mib);
    if (l->to == GL_ADV_NONE) {
        cJSON_AddNullToObject(o, "recommendation");
        cJSON_AddStringToObject(o, "note", l->alloc_mib <= 0 ? "no allocation seen: nothing to resize"
                                           : l->alloc_ugpu > 1000000
                                               ? "several GPUs: not advised per device"
                                               : "right-sized: no smaller allocation holds the "
                                                 "peak with the headroom");
        return o;
    }
    cJSON *r = cJSON_AddObjectToObject(o, "recommendation");
    GL_JSON_STRINGS(r, {"kind", to_kinds[l->to]}, {"name", l->to_name},
                       {"gpu_model", l->to_model});
    num(r, "mib", l->to_mib);
    cJSON_AddStringToObject(r, "assumes", l->assumes);
    num(r, "allocation_mib_seconds", l->held_mib_s);
    num(r, "recommended_mib_seconds", l->to_mib_s);
    money(r, "saving", a, l->saving);
    num(r, "unpriced_steps", l->unpriced_steps);
    return o;
}

void gl_advise_json(const struct gl_advice *a, FILE *out)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "period", a->period);
    num(root, "headroom_percent", a->headroom_pct);
    cJSON_AddStringToObject(root, "billing_basis", a->basis->name);
    cJSON_AddStringToObject(root, "currency", a->currency ? a->currency : "");
    num(root, "step_seconds", a->step);
    cJSON_AddStringToObject(root, "saving_means", gl_advise_saving_meaning(a));
    cJSON_AddStringToObject(root, "peak",
                            "the largest MiB a pod held in one step (its attributed memory); a "
                            "workload's is the largest of its pods'");
    num(root, "pod_hours_without_peak_data", a->missing_pod_hours);
    if (a->missing_pod_hours)
        cJSON_AddStringToObject(root, "warning",
                                "no peak data for hours collected in server mode (or before "
                                "this version): those pod-hours are not in the advice");
    cJSON *arr = cJSON_AddArrayToObject(root, "right_sizing");
    for (size_t i = 0; i < a->nlines; i++)
        cJSON_AddItemToArray(arr, line_json(a, &a->lines[i]));
    money(root, "right_sizing_saving", a, a->total_saving);
    arr = cJSON_AddArrayToObject(root, "consolidation");
    for (size_t i = 0; i < a->nnodes; i++) {
        const struct gl_advice_node *n = &a->nodes[i];
        cJSON *o = cJSON_CreateObject();
        GL_JSON_STRINGS(o, {"cluster", n->cluster}, {"node", n->hostname},
                           {"gpu_model", n->model});
        num(o, "capacity_mib", n->capacity_mib);
        num(o, "hours", n->hours);
        num(o, "max_devices_in_use", n->max_devices);
        num(o, "gpu_hours_in_use", n->gpu_hours);
        num(o, "lower_bound_gpu_hours", n->bound_gpu_hours);
        num(o, "gpu_hours_above_bound", n->gpu_hours - n->bound_gpu_hours);
        money(o, "saving", a, n->saving);
        num(o, "unpriced_gpu_hours", n->unpriced_hours);
        cJSON_AddStringToObject(o, "bound", GL_ADVISE_BOUND_NOTE);
        cJSON_AddItemToArray(arr, o);
    }
    money(root, "consolidation_saving", a, a->total_node_saving);
    char *text = cJSON_Print(root);
    fprintf(out, "%s\n", text);
    free(text);
    cJSON_Delete(root);
}

void gl_advise_md(const struct gl_advice *a, const char *team, FILE *out)
{
    char al[256], to[512], sv[80], p99[128];
    fprintf(out, "Headroom %d %% over the peak; %s.\n\n", a->headroom_pct,
            gl_advise_saving_meaning(a));
    if (a->missing_pod_hours)
        fprintf(out, "**No peak data for hours collected in server mode** (or before this "
                     "version): %lld pod-hours are not in the advice.\n\n",
                (long long)a->missing_pod_hours);
    size_t shown = 0, right = 0;
    for (size_t i = 0; i < a->nlines; i++) {
        const struct gl_advice_line *l = &a->lines[i];
        if (team && strcmp(team, l->team) != 0)
            continue;
        if (l->to == GL_ADV_NONE) {
            right++;
            continue;
        }
        if (!shown++)
            fputs("| Cluster | Workload | Team | GPU model | Allocation | Peak MiB | p99 | "
                  "Recommended | Saving | Assumes |\n|---|---|---|---|---|---:|---|---|---:|---|\n",
                  out);
        gl_advise_alloc_text(l, al, sizeof al);
        gl_advise_to_text(l, to, sizeof to);
        gl_dec_format(l->saving, a->minor_digits, sv, sizeof sv);
        p99_text(l, p99, sizeof p99);
        const char *cells[] = {l->cluster, NULL, l->team, l->model, al, NULL, p99, to, sv,
                               l->assumes};
        for (size_t c = 0; c < sizeof cells / sizeof *cells; c++) {
            fputs(c ? " | " : "| ", out);
            if (c == 1) {
                gl_md_cell(out, l->ns);
                fputs("/", out);
                gl_md_cell(out, l->wname);
                fprintf(out, " (%s)", l->wkind);
            } else if (c == 5) {
                fprintf(out, "%lld", (long long)l->peak_mib);
            } else {
                gl_md_cell(out, cells[c]);
            }
        }
        fputs(" |\n", out);
    }
    fprintf(out, "%s%zu right-sized workload line(s): nothing recommended.\n", shown ? "\n" : "",
            right);
    if (team)
        return;
    fprintf(out, "\nConsolidation per node and GPU model (%s):\n\n", GL_ADVISE_BOUND_NOTE);
    size_t nshown = 0;
    for (size_t i = 0; i < a->nnodes; i++) {
        const struct gl_advice_node *n = &a->nodes[i];
        if (n->gpu_hours == n->bound_gpu_hours)
            continue;
        if (!nshown++)
            fputs("| Cluster | Node | GPU model | Max devices in use | GPU-hours in use | Lower "
                  "bound | Above bound | Saving |\n|---|---|---|---:|---:|---:|---:|---:|\n",
                  out);
        gl_dec_format(n->saving, a->minor_digits, sv, sizeof sv);
        GL_MD_PARTS(out, "||", n->cluster, n->hostname, n->model);
        fprintf(out, " | %lld | %lld | %lld | %lld | %s |\n", (long long)n->max_devices,
                (long long)n->gpu_hours, (long long)n->bound_gpu_hours,
                (long long)(n->gpu_hours - n->bound_gpu_hours), sv);
    }
    if (!nshown)
        fputs("No node's devices would have fit on fewer.\n", out);
    fprintf(out, "\nTotal: right-sizing %s", (gl_dec_format(a->total_saving, a->minor_digits, sv,
                                                           sizeof sv), sv));
    gl_dec_format(a->total_node_saving, a->minor_digits, sv, sizeof sv);
    fprintf(out, " %s, consolidation %s %s (not additive: a resized workload also packs "
                 "tighter).\n", a->currency ? a->currency : "", sv,
            a->currency ? a->currency : "");
}
