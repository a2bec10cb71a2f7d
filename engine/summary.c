/* summary — fleet totals per model and per device, from SQL sums. */
#include "summary.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "money.h"
#include "util.h"

static const char *const model_kinds[] = {"capacity", "memory_used", "reserved_unused_billed",
                                          "reserved", "unattributed", "idle", "excess"};
#define NMODEL_KINDS (sizeof model_kinds / sizeof *model_kinds)

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

static enum gl_status models(struct gl_store *s, const struct gl_period *p, cJSON *arr,
                             struct gl_error *err)
{
    const char *sql = gl_summary_models_sql;
    sqlite3_stmt *st;
    enum gl_status qrc = gl_store_query_period(s, sql, p->start, p->end, &st,
                                  "summary", err);
    if (qrc)
        return qrc;
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "cluster", (const char *)sqlite3_column_text(st, 0));
        cJSON_AddStringToObject(o, "gpu_model", (const char *)sqlite3_column_text(st, 1));
        int64_t v[NMODEL_KINDS];
        for (size_t k = 0; k < NMODEL_KINDS; k++) {
            v[k] = sqlite3_column_int64(st, (int)k + 2);
            add_gbh(o, model_kinds[k], v[k]);
        }
        /* capacity = billed + idle + overhead − excess, exactly (128 bits:
         * a sum of int64 terms cannot overflow it) */
        gl_i128 rhs = (gl_i128)v[1] + v[2] + v[3] + v[4] + v[5] - v[6];
        cJSON_AddBoolToObject(o, "reconciles", rhs == v[0]);
        cJSON_AddItemToArray(arr, o);
    }
    enum gl_status rc = src == SQLITE_DONE ? GL_OK : gl_usage_fail(s, p, "summary per model", err);
    sqlite3_finalize(st);
    return rc;
}

static enum gl_status devices(struct gl_store *s, const struct gl_period *p, cJSON *arr,
                              struct gl_error *err)
{
    static const char sql[] =
        "SELECT d.cluster, d.uuid, d.gpu_i_id, d.gpu_i_profile, d.model, d.hostname,"
        " SUM(CASE u.kind WHEN 'capacity' THEN u.quantity ELSE 0 END),"
        " SUM(CASE u.kind WHEN 'memory_used' THEN u.quantity ELSE 0 END),"
        " SUM(CASE u.kind WHEN 'device_reserved_unused_billed' THEN u.quantity ELSE 0 END),"
        " SUM(CASE u.kind WHEN 'reserved' THEN u.quantity ELSE 0 END),"
        " SUM(CASE u.kind WHEN 'unattributed' THEN u.quantity ELSE 0 END),"
        " SUM(CASE u.kind WHEN 'idle' THEN u.quantity ELSE 0 END),"
        " SUM(CASE u.kind WHEN 'excess' THEN u.quantity ELSE 0 END),"
        " SUM(CASE u.kind WHEN 'unknown_steps' THEN u.quantity ELSE 0 END)"
        " FROM device d LEFT JOIN usage u ON u.device_id = d.id AND u.hour >= ?1 AND u.hour < ?2"
        " WHERE d.uuid NOT LIKE 'node:%' AND d.first_seen < ?2 AND d.last_seen >= ?1"
        " GROUP BY d.id ORDER BY d.cluster, d.hostname, d.uuid, d.gpu_i_id";
    /* the model rows' fields; reserved_unused_billed here is the billed
     * reserved-unused placed on the device (SPEC §9: excess per device) */
    static const char *const keys[] = {"capacity", "memory_used", "reserved_unused_billed",
                                       "reserved", "unattributed", "idle", "excess"};
    sqlite3_stmt *st;
    enum gl_status qrc = gl_store_query_period(s, sql, p->start, p->end, &st,
                                  "summary", err);
    if (qrc)
        return qrc;
    int src;
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        cJSON *o = cJSON_CreateObject();
        static const char *const names[] = {"cluster", "uuid", "gpu_i_id", "gpu_i_profile",
                                            "gpu_model", "node"};
        for (int i = 0; i < 6; i++)
            cJSON_AddStringToObject(o, names[i], (const char *)sqlite3_column_text(st, i));
        int64_t v[7];
        for (int k = 0; k < 7; k++) {
            v[k] = sqlite3_column_int64(st, 6 + k);
            add_gbh(o, keys[k], v[k]);
        }
        /* capacity + excess = billed + reserved + unattributed + idle */
        gl_i128 rhs = (gl_i128)v[1] + v[2] + v[3] + v[4] + v[5] - v[6];
        cJSON_AddBoolToObject(o, "reconciles", rhs == v[0]);
        int64_t unknown = sqlite3_column_int64(st, 13);
        cJSON_AddBoolToObject(o, "unknown_usage", unknown > 0 || v[0] == 0);
        cJSON_AddItemToArray(arr, o);
    }
    enum gl_status rc = src == SQLITE_DONE ? GL_OK : gl_usage_fail(s, p, "summary per device", err);
    sqlite3_finalize(st);
    return rc;
}

enum gl_status gl_summary_write(struct gl_store *s, const struct gl_period *p, bool md, FILE *out,
                                struct gl_error *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "period", p->name);
    cJSON *m = cJSON_AddArrayToObject(root, "models");
    cJSON *d = cJSON_AddArrayToObject(root, "devices");
    enum gl_status rc = models(s, p, m, err);
    if (!rc)
        rc = devices(s, p, d, err);
    if (rc) {
        cJSON_Delete(root);
        return rc;
    }
    if (!md) {
        char *text = cJSON_Print(root);
        fprintf(out, "%s\n", text);
        free(text);
        cJSON_Delete(root);
        return GL_OK;
    }
    fprintf(out, "# Fleet summary %s (GB-hours)\n\n", p->name);
    fprintf(out, "Capacity = memory billed to teams + idle + overhead (driver-reserved + "
                 "unattributed) − excess.\n\n");
    fprintf(out, "| Cluster | GPU model | Capacity | Used by pods | Reserved-unused billed | "
                 "Driver-reserved | Unattributed | Idle | Excess | Reconciles |\n");
    fprintf(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (cJSON *r = m->child; r; r = r->next) {
        fputs("| ", out);
        gl_md_cell(out, cJSON_GetObjectItem(r, "cluster")->valuestring);
        fputs(" | ", out);
        gl_md_cell(out, cJSON_GetObjectItem(r, "gpu_model")->valuestring);
        for (size_t k = 0; k < NMODEL_KINDS; k++)
            fprintf(out, " | %s", cJSON_GetObjectItem(r, model_kinds[k])->valuestring);
        fprintf(out, " | %s |\n", cJSON_IsTrue(cJSON_GetObjectItem(r, "reconciles")) ? "yes" : "NO");
    }
    fprintf(out, "\n## Devices\n\n| Cluster | Node | Device | Profile | GPU model | Capacity | "
                 "Used by pods | Reserved-unused billed | Driver-reserved | Unattributed | Idle | "
                 "Excess | Reconciles | Usage |\n");
    fprintf(out, "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
    static const char *const dk[] = {"capacity", "memory_used", "reserved_unused_billed",
                                     "reserved", "unattributed", "idle", "excess"};
    for (cJSON *r = d->child; r; r = r->next) {
        const char *gid = cJSON_GetObjectItem(r, "gpu_i_id")->valuestring;
        static const char *const cells[] = {"cluster", "node", "uuid", "gpu_i_profile",
                                            "gpu_model"};
        for (size_t k = 0; k < 5; k++) {
            fputs(k ? " | " : "| ", out);
            gl_md_cell(out, cJSON_GetObjectItem(r, cells[k])->valuestring);
            if (k == 2 && gid[0]) {
                fputs("/", out);
                gl_md_cell(out, gid);
            }
        }
        for (size_t k = 0; k < 7; k++)
            fprintf(out, " | %s", cJSON_GetObjectItem(r, dk[k])->valuestring);
        fprintf(out, " | %s", cJSON_IsTrue(cJSON_GetObjectItem(r, "reconciles")) ? "yes" : "NO");
        fprintf(out, " | %s |\n",
                cJSON_IsTrue(cJSON_GetObjectItem(r, "unknown_usage")) ? "UNKNOWN (no memory metrics)"
                                                                      : "measured");
    }
    cJSON_Delete(root);
    return GL_OK;
}
