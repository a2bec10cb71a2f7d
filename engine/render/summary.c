/* summary — the fleet summary of a statement (per model and per device, and
 * the GPUs Pending pods waited for), as JSON and Markdown. The sums come
 * from query.c (gl_query_fleet, gl_query_pending). */
#include "summary.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "money.h"
#include "statement.h"
#include "timeutil.h"
#include "fields.h"
#include "util.h"

/* The JSON keys of a model row, in gl_fleet_model.v order (GL_F_*). */
static const char *const model_kinds[GL_F_N] = {"capacity", "memory_used",
                                                "reserved_unused_billed", "reserved",
                                                "unattributed", "idle", "excess"};

static void add_gbh(cJSON *o, const char *key, int64_t mib_s)
{
    char q[80];
    gl_dec_format(gl_gbh_nano(mib_s), 9, q, sizeof q);
    cJSON_AddStringToObject(o, key, q);
}

/* capacity = billed + idle + overhead − excess, exactly (128 bits: a sum of
 * int64 terms cannot overflow it) */
static bool model_reconciles(const struct gl_fleet_model *m)
{
    const int64_t *v = m->v;
    gl_i128 rhs = (gl_i128)v[GL_F_USED] + v[GL_F_RUB] + v[GL_F_RESERVED] + v[GL_F_UNATTR] +
                  v[GL_F_IDLE] - v[GL_F_EXCESS];
    return rhs == v[GL_F_CAP];
}

/* the model rows' figures of a device; reserved_unused_billed is the billed
 * reserved-unused placed on it (docs/specification.md "Arithmetic": excess per device) */
#define NDEVICE_FIGURES 7
static int64_t *device_figures(const struct gl_device_row *d, int64_t out[NDEVICE_FIGURES])
{
    const int64_t v[NDEVICE_FIGURES] = {d->capacity, d->used,  d->rub,   d->reserved,
                                        d->unattributed, d->idle, d->excess};
    memcpy(out, v, sizeof v);
    return out;
}

/* capacity + excess = billed + reserved + unattributed + idle */
static bool device_reconciles(const struct gl_device_row *d)
{
    gl_i128 rhs = (gl_i128)d->used + d->rub + d->reserved + d->unattributed + d->idle - d->excess;
    return rhs == d->capacity;
}

/* micro-GPU-seconds as GPU-hours, 9 decimals half-even (the invoices' rule) */
static void gpu_hours(int64_t gpu_us, char *buf, size_t n)
{
    gl_dec_format(gl_div_half_even((gl_i128)gpu_us * 1000, 3600), GL_GBH_DECIMALS, buf, n);
}

/* Seconds as hours, 2 decimals half-even (a wait, for reading). */
static void wait_hours(int64_t s, char *buf, size_t n)
{
    gl_dec_format(gl_div_half_even((gl_i128)s * 100, 3600), 2, buf, n);
}

/* GPUs requested by Pending pods: demand waiting, never billed. The key
 * only when some pod waited, so a summary without any reads as before. */
static void pending_json(cJSON *root, const struct gl_pending *pd)
{
    if (!pd->nk && !pd->np)
        return;
    char q[80];
    cJSON *o = cJSON_AddObjectToObject(root, "pending_gpu");
    cJSON *arr = cJSON_AddArrayToObject(o, "by_team");
    for (size_t i = 0; i < pd->nk; i++) {
        const struct gl_pending_key *k = &pd->k[i];
        cJSON *x = cJSON_CreateObject();
        GL_JSON_STRINGS(x, {"team", k->team}, {"cluster", k->cluster}, {"gpu_model", k->model});
        gpu_hours(k->gpu_us, q, sizeof q);
        cJSON_AddStringToObject(x, "gpu_hours", q);
        cJSON_AddItemToArray(arr, x);
    }
    cJSON_AddNumberToObject(o, "pods", (double)pd->pods);
    arr = cJSON_AddArrayToObject(o, "longest_waits");
    for (size_t i = 0; i < pd->np; i++) {
        const struct gl_pending_pod *p = &pd->p[i];
        cJSON *x = cJSON_CreateObject();
        GL_JSON_STRINGS(x, {"cluster", p->cluster}, {"namespace", p->ns}, {"pod", p->pod},
                           {"team", p->team});
        gl_time_format(p->first_seen, q, sizeof q);
        cJSON_AddStringToObject(x, "first_pending", q);
        gl_time_format(p->last_seen, q, sizeof q);
        cJSON_AddStringToObject(x, "last_pending", q);
        cJSON_AddNumberToObject(x, "waited_seconds", (double)p->waited_s);
        gpu_hours(p->gpu_us, q, sizeof q);
        cJSON_AddStringToObject(x, "gpu_hours", q);
        cJSON_AddItemToArray(arr, x);
    }
}

static void pending_md(FILE *out, const struct gl_pending *pd)
{
    if (!pd->nk && !pd->np)
        return;
    char q[80];
    fprintf(out, "\n## GPUs requested by Pending pods (demand waiting, not billed)\n\n"
                 "| Team | Cluster | GPU model | GPU-hours waiting |\n|---|---|---|---:|\n");
    for (size_t i = 0; i < pd->nk; i++) {
        const struct gl_pending_key *k = &pd->k[i];
        const char *cells[] = {k->team, k->cluster, k->model};
        for (size_t c = 0; c < 3; c++) {
            fputs(c ? " | " : "| ", out);
            gl_md_cell(out, cells[c]);
        }
        gpu_hours(k->gpu_us, q, sizeof q);
        fprintf(out, " | %s |\n", q);
    }
    fprintf(out, "\nLongest waits (%zu of %lld pods):\n\n| Cluster | Pod | Team | First Pending | "
                 "Hours, first to last Pending | GPU-hours |\n|---|---|---|---|---:|---:|\n",
            pd->np, (long long)pd->pods);
    for (size_t i = 0; i < pd->np; i++) {
        const struct gl_pending_pod *p = &pd->p[i];
        GL_MD_PARTS(out, "|/|", p->cluster, p->ns, p->pod, p->team);
        gl_time_format(p->first_seen, q, sizeof q);
        fprintf(out, " | %s", q);
        wait_hours(p->waited_s, q, sizeof q);
        fprintf(out, " | %s", q);
        gpu_hours(p->gpu_us, q, sizeof q);
        fprintf(out, " | %s |\n", q);
    }
}

enum gl_status gl_summary_json(const struct gl_statement *st, FILE *out, struct gl_error *err)
{
    (void)err;
    const struct gl_fleet *fl = &st->fleet;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "period", st->period.name);
    cJSON *arr = cJSON_AddArrayToObject(root, "models");
    for (size_t i = 0; i < fl->n; i++) {
        const struct gl_fleet_model *m = &fl->m[i];
        cJSON *o = cJSON_CreateObject();
        GL_JSON_STRINGS(o, {"cluster", m->cluster}, {"gpu_model", m->model});
        for (int k = 0; k < GL_F_N; k++)
            add_gbh(o, model_kinds[k], m->v[k]);
        cJSON_AddBoolToObject(o, "reconciles", model_reconciles(m));
        cJSON_AddItemToArray(arr, o);
    }
    static const char *const keys[NDEVICE_FIGURES] = {"capacity", "memory_used",
                                                      "reserved_unused_billed", "reserved",
                                                      "unattributed", "idle", "excess"};
    arr = cJSON_AddArrayToObject(root, "devices");
    for (size_t i = 0; i < fl->ndev; i++) {
        const struct gl_device_row *d = &fl->dev[i];
        cJSON *o = cJSON_CreateObject();
        GL_JSON_STRINGS(o, {"cluster", d->cluster}, {"uuid", d->uuid}, {"gpu_i_id", d->gpu_i_id},
                           {"gpu_i_profile", d->profile}, {"gpu_model", d->model},
                           {"node", d->node});
        int64_t v[NDEVICE_FIGURES];
        device_figures(d, v);
        for (int k = 0; k < NDEVICE_FIGURES; k++)
            add_gbh(o, keys[k], v[k]);
        cJSON_AddBoolToObject(o, "reconciles", device_reconciles(d));
        cJSON_AddBoolToObject(o, "unknown_usage", d->unknown);
        cJSON_AddItemToArray(arr, o);
    }
    /* a device that reported more than one GPU model: each hour is priced
     * at its own (the operator should know a UUID changed boards); the key
     * only when there is one, so a summary without changes reads as before */
    arr = NULL;
    for (size_t i = 0; i < fl->ndev; i++) {
        const struct gl_device_row *d = &fl->dev[i];
        if (d->nmodels < 2)
            continue;
        if (!arr)
            arr = cJSON_AddArrayToObject(root, "model_changes");
        cJSON *o = cJSON_CreateObject();
        GL_JSON_STRINGS(o, {"cluster", d->cluster}, {"uuid", d->uuid}, {"gpu_i_id", d->gpu_i_id});
        cJSON *models = cJSON_AddArrayToObject(o, "models");
        cJSON *from = cJSON_AddArrayToObject(o, "from");
        for (size_t k = 0; k < d->nmodels; k++) {
            char ts[32];
            gl_time_format(d->model_from[k], ts, sizeof ts);
            cJSON_AddItemToArray(models, cJSON_CreateString(d->models[k]));
            cJSON_AddItemToArray(from, cJSON_CreateString(ts));
        }
        cJSON_AddItemToArray(arr, o);
    }
    pending_json(root, &st->pending);
    char *text = cJSON_Print(root);
    fprintf(out, "%s\n", text);
    free(text);
    cJSON_Delete(root);
    return GL_OK;
}

static void gbh_cell(FILE *out, int64_t mib_s)
{
    char q[80];
    gl_dec_format(gl_gbh_nano(mib_s), 9, q, sizeof q);
    fprintf(out, " | %s", q);
}

enum gl_status gl_summary_md(const struct gl_statement *st, FILE *out, struct gl_error *err)
{
    (void)err;
    const struct gl_fleet *fl = &st->fleet;
    fprintf(out, "# Fleet summary %s (GB-hours)\n\n", st->period.name);
    fprintf(out, "Capacity = memory billed to teams + idle + overhead (driver-reserved + "
                 "unattributed) − excess.\n\n");
    fprintf(out, "| Cluster | GPU model | Capacity | Used by pods | Reserved-unused billed | "
                 "Driver-reserved | Unattributed | Idle | Excess | Reconciles |\n");
    fprintf(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (size_t i = 0; i < fl->n; i++) {
        const struct gl_fleet_model *m = &fl->m[i];
        GL_MD_PARTS(out, "|", m->cluster, m->model);
        for (int k = 0; k < GL_F_N; k++)
            gbh_cell(out, m->v[k]);
        fprintf(out, " | %s |\n", model_reconciles(m) ? "yes" : "NO");
    }
    fprintf(out, "\n## Devices\n\n| Cluster | Node | Device | Profile | GPU model | Capacity | "
                 "Used by pods | Reserved-unused billed | Driver-reserved | Unattributed | Idle | "
                 "Excess | Reconciles | Usage |\n");
    fprintf(out, "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
    for (size_t i = 0; i < fl->ndev; i++) {
        const struct gl_device_row *d = &fl->dev[i];
        const char *cells[] = {d->cluster, d->node, d->uuid, d->profile, d->model};
        for (size_t k = 0; k < 5; k++) {
            fputs(k ? " | " : "| ", out);
            gl_md_cell(out, cells[k]);
            if (k == 2 && d->gpu_i_id[0]) {
                fputs("/", out);
                gl_md_cell(out, d->gpu_i_id);
            }
        }
        int64_t v[NDEVICE_FIGURES];
        device_figures(d, v);
        for (int k = 0; k < NDEVICE_FIGURES; k++)
            gbh_cell(out, v[k]);
        fprintf(out, " | %s", device_reconciles(d) ? "yes" : "NO");
        fprintf(out, " | %s |\n", d->unknown ? "UNKNOWN (no memory metrics)" : "measured");
    }
    bool heading = false;
    for (size_t i = 0; i < fl->ndev; i++) {
        const struct gl_device_row *d = &fl->dev[i];
        if (d->nmodels < 2)
            continue;
        if (!heading)
            fprintf(out, "\n## Devices whose GPU model changed\n\nEach hour is priced at the "
                         "model the device reported in it.\n\n| Cluster | Device | Models "
                         "(from) |\n|---|---|---|\n");
        heading = true;
        GL_MD_PARTS(out, "|", d->cluster, d->device);
        fputs(" | ", out);
        for (size_t k = 0; k < d->nmodels; k++) {
            char ts[32];
            gl_time_format(d->model_from[k], ts, sizeof ts);
            fputs(k ? ", " : "", out);
            gl_md_cell(out, d->models[k]);
            fprintf(out, " (from %s)", ts);
        }
        fputs(" |\n", out);
    }
    pending_md(out, &st->pending);
    return GL_OK;
}
