/* summary — fleet totals per model and per device, from SQL sums. */
#include "summary.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "money.h"
#include "statement.h"
#include "util.h"

/* The JSON keys of a model row, in gl_fleet_model.v order (GL_F_*). */
static const char *const model_kinds[GL_F_N] = {"capacity", "memory_used",
                                                "reserved_unused_billed", "reserved",
                                                "unattributed", "idle", "excess"};

const char gl_summary_models_sql[] =
    "SELECT u.cluster, d.model,"
    " SUM(CASE u.kind WHEN 'capacity' THEN u.quantity ELSE 0 END),"
    " SUM(CASE u.kind WHEN 'memory_used' THEN u.quantity ELSE 0 END),"
    " SUM(CASE u.kind WHEN 'reserved_unused_billed' THEN u.quantity ELSE 0 END),"
    " SUM(CASE u.kind WHEN 'reserved' THEN u.quantity ELSE 0 END),"
    " SUM(CASE u.kind WHEN 'unattributed' THEN u.quantity ELSE 0 END),"
    " SUM(CASE u.kind WHEN 'idle' THEN u.quantity ELSE 0 END),"
    " SUM(CASE u.kind WHEN 'excess' THEN u.quantity ELSE 0 END)"
    " FROM usage u JOIN device d ON d.id = u.device_id"
    " WHERE u.hour >= ?1 AND u.hour < ?2"
    " GROUP BY u.cluster, d.model ORDER BY u.cluster, d.model";

const char gl_summary_devices_sql[] =
    "SELECT d.cluster, d.uuid, d.gpu_i_id, d.gpu_i_profile, d.model, d.hostname,"
    " SUM(CASE u.kind WHEN 'capacity' THEN u.quantity ELSE 0 END),"
    " SUM(CASE u.kind WHEN 'memory_used' THEN u.quantity ELSE 0 END),"
    " SUM(CASE u.kind WHEN 'reserved' THEN u.quantity ELSE 0 END),"
    " SUM(CASE u.kind WHEN 'unattributed' THEN u.quantity ELSE 0 END),"
    " SUM(CASE u.kind WHEN 'idle' THEN u.quantity ELSE 0 END),"
    " SUM(CASE u.kind WHEN 'excess' THEN u.quantity ELSE 0 END),"
    " SUM(CASE u.kind WHEN 'unknown_steps' THEN u.quantity ELSE 0 END)"
    " FROM device d LEFT JOIN usage u ON u.device_id = d.id AND u.hour >= ?1 AND u.hour < ?2"
    " WHERE d.uuid NOT LIKE 'node:%' AND d.first_seen < ?2 AND d.last_seen >= ?1"
    " GROUP BY d.id ORDER BY d.cluster, d.hostname, d.uuid, d.gpu_i_id";

enum gl_status gl_usage_fail(struct gl_store *s, const struct gl_period *p, const char *what,
                             struct gl_error *err)
{
    if (strcmp(sqlite3_errmsg(gl_store_db(s)), "integer overflow") != 0)
        return gl_store_fail(s, what, err);
    static const char *const locate[] = {
        "SELECT u.team, u.cluster, d.model, u.kind FROM usage u JOIN device d ON d.id = u.device_id"
        " WHERE u.hour >= ?1 AND u.hour < ?2 GROUP BY 1, 2, 3, 4"
        " HAVING TOTAL(u.quantity) >= 9.2e18 ORDER BY TOTAL(u.quantity) DESC LIMIT 1",
        "SELECT '', u.cluster, d.model, u.kind FROM usage u JOIN device d ON d.id = u.device_id"
        " WHERE u.hour >= ?1 AND u.hour < ?2 GROUP BY 2, 3, 4"
        " HAVING TOTAL(u.quantity) >= 9.2e18 ORDER BY TOTAL(u.quantity) DESC LIMIT 1",
    };
    struct gl_buf where;
    gl_buf_init(&where);
    for (size_t i = 0; i < 2 && !where.len; i++) {
        sqlite3_stmt *st = NULL;
        struct gl_error ignored;
        if (gl_store_query_period(s, locate[i], p->start, p->end, &st, what, &ignored))
            break;
        if (sqlite3_step(st) == SQLITE_ROW) {
            const char *team = (const char *)sqlite3_column_text(st, 0);
            gl_buf_printf(&where, "%s%.300s%s cluster %.200s, GPU model \"%.200s\", kind %s: ",
                          team[0] ? "team \"" : "all teams,", team, team[0] ? "\"," : "",
                          (const char *)sqlite3_column_text(st, 1),
                          (const char *)sqlite3_column_text(st, 2),
                          (const char *)sqlite3_column_text(st, 3));
        }
        sqlite3_finalize(st);
    }
    enum gl_status rc = gl_error_set(err, GL_ERR_RUNTIME,
                                     "%s: %s for period %s: integer overflow: %sthe sum of MiB·s "
                                     "exceeds the 64-bit range (the stored usage holds "
                                     "implausible samples)",
                                     sqlite3_db_filename(gl_store_db(s), "main"), what, p->name,
                                     where.data ? where.data : "");
    gl_buf_free(&where);
    return rc;
}

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

static int64_t *device_figures(const struct gl_device_row *d, int64_t out[6])
{
    const int64_t v[6] = {d->capacity, d->used, d->reserved, d->unattributed, d->idle, d->excess};
    memcpy(out, v, sizeof v);
    return out;
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
        cJSON_AddStringToObject(o, "cluster", m->cluster);
        cJSON_AddStringToObject(o, "gpu_model", m->model);
        for (int k = 0; k < GL_F_N; k++)
            add_gbh(o, model_kinds[k], m->v[k]);
        cJSON_AddBoolToObject(o, "reconciles", model_reconciles(m));
        cJSON_AddItemToArray(arr, o);
    }
    static const char *const keys[] = {"capacity", "memory_used", "reserved", "unattributed",
                                       "idle", "excess"};
    arr = cJSON_AddArrayToObject(root, "devices");
    for (size_t i = 0; i < fl->ndev; i++) {
        const struct gl_device_row *d = &fl->dev[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "cluster", d->cluster);
        cJSON_AddStringToObject(o, "uuid", d->uuid);
        cJSON_AddStringToObject(o, "gpu_i_id", d->gpu_i_id);
        cJSON_AddStringToObject(o, "gpu_i_profile", d->profile);
        cJSON_AddStringToObject(o, "gpu_model", d->model);
        cJSON_AddStringToObject(o, "node", d->node);
        int64_t v[6];
        device_figures(d, v);
        for (int k = 0; k < 6; k++)
            add_gbh(o, keys[k], v[k]);
        cJSON_AddBoolToObject(o, "unknown_usage", d->unknown);
        cJSON_AddItemToArray(arr, o);
    }
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
        fputs("| ", out);
        gl_md_cell(out, m->cluster);
        fputs(" | ", out);
        gl_md_cell(out, m->model);
        for (int k = 0; k < GL_F_N; k++)
            gbh_cell(out, m->v[k]);
        fprintf(out, " | %s |\n", model_reconciles(m) ? "yes" : "NO");
    }
    fprintf(out, "\n## Devices\n\n| Cluster | Node | Device | Profile | GPU model | Capacity | "
                 "Used by pods | Driver-reserved | Unattributed | Idle | Excess | Usage |\n");
    fprintf(out, "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---|\n");
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
        int64_t v[6];
        device_figures(d, v);
        for (int k = 0; k < 6; k++)
            gbh_cell(out, v[k]);
        fprintf(out, " | %s |\n", d->unknown ? "UNKNOWN (no memory metrics)" : "measured");
    }
    return GL_OK;
}
