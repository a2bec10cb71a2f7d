/* query — typed reads of one period's rollups (see query.h). */
#include "query.h"
#include "store_sql.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "invoice_model.h"
#include "kinds.h"
#include "util.h"

/* The reads below use the aggregates of schema/004_daily.sql (kept by
 * store.c with every chunk): usage_key_hour per (hour, cluster, model,
 * team, kind), device_day, pod_day and anomaly_day per UTC day. A
 * period is a month: whole UTC days. */
static const char models_sql[] =
    "SELECT cluster, model,"
    " SUM(CASE kind WHEN '" GL_K_CAPACITY "' THEN quantity ELSE 0 END),"
    " SUM(CASE kind WHEN '" GL_K_MEMORY_USED "' THEN quantity ELSE 0 END),"
    " SUM(CASE kind WHEN '" GL_K_RESERVED_UNUSED_BILLED "' THEN quantity ELSE 0 END),"
    " SUM(CASE kind WHEN '" GL_K_RESERVED "' THEN quantity ELSE 0 END),"
    " SUM(CASE kind WHEN '" GL_K_UNATTRIBUTED "' THEN quantity ELSE 0 END),"
    " SUM(CASE kind WHEN '" GL_K_IDLE "' THEN quantity ELSE 0 END),"
    " SUM(CASE kind WHEN '" GL_K_EXCESS "' THEN quantity ELSE 0 END)"
    " FROM usage_key_hour"
    " WHERE hour >= ?1 AND hour < ?2"
    /* demand waiting is no fleet figure: its "unknown" model is no row */
    "  AND kind <> '" GL_K_PENDING_GPU "'"
    " GROUP BY cluster, model ORDER BY cluster, model";

static const char devices_sql[] =
    /* the model of the device's last hour in the period (device.model is
     * the latest hour's, which a later month may have changed) */
    "SELECT d.cluster, d.uuid, d.gpu_i_id, d.gpu_i_profile,"
    " coalesce((SELECT m.model FROM device_model_hour m WHERE m.device_id = d.id"
    "  AND m.hour >= ?1 AND m.hour < ?2 ORDER BY m.hour DESC LIMIT 1), d.model), d.hostname,"
    " u.c0, u.c1, u.c2, u.c3, u.c4, u.c5, u.c6, u.c7, d.id"
    " FROM device d LEFT JOIN (SELECT device_id,"
    "  SUM(CASE kind WHEN '" GL_K_CAPACITY "' THEN quantity ELSE 0 END) AS c0,"
    "  SUM(CASE kind WHEN '" GL_K_MEMORY_USED "' THEN quantity ELSE 0 END) AS c1,"
    "  SUM(CASE kind WHEN '" GL_K_DEVICE_RESERVED_UNUSED_BILLED "' THEN quantity ELSE 0 END) AS c2,"
    "  SUM(CASE kind WHEN '" GL_K_RESERVED "' THEN quantity ELSE 0 END) AS c3,"
    "  SUM(CASE kind WHEN '" GL_K_UNATTRIBUTED "' THEN quantity ELSE 0 END) AS c4,"
    "  SUM(CASE kind WHEN '" GL_K_IDLE "' THEN quantity ELSE 0 END) AS c5,"
    "  SUM(CASE kind WHEN '" GL_K_EXCESS "' THEN quantity ELSE 0 END) AS c6,"
    "  SUM(CASE kind WHEN '" GL_K_UNKNOWN_STEPS "' THEN quantity ELSE 0 END) AS c7"
    "  FROM device_day WHERE day >= ?1 AND day < ?2 GROUP BY device_id) u"
    " ON u.device_id = d.id"
    " WHERE d.uuid NOT LIKE 'node:%' AND d.first_seen < ?2 AND d.last_seen >= ?1"
    " ORDER BY d.cluster, d.hostname, d.uuid, d.gpu_i_id";

enum gl_status gl_usage_fail(struct gl_store *s, const struct gl_period *p, const char *what,
                             struct gl_error *err)
{
    if (strcmp(sqlite3_errmsg(gl_store_db(s)), "integer overflow") != 0)
        return gl_store_fail(s, what, err);
    static const char *const locate[] = {
        "SELECT team, cluster, model, kind FROM usage_key_hour"
        " WHERE hour >= ?1 AND hour < ?2 GROUP BY 1, 2, 3, 4"
        " HAVING TOTAL(quantity) >= 9.2e18 ORDER BY TOTAL(quantity) DESC LIMIT 1",
        "SELECT '', cluster, model, kind FROM usage_key_hour"
        " WHERE hour >= ?1 AND hour < ?2 GROUP BY 2, 3, 4"
        " HAVING TOTAL(quantity) >= 9.2e18 ORDER BY TOTAL(quantity) DESC LIMIT 1",
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


enum gl_status gl_query_axis(struct gl_store *s, const struct gl_period *p,
                             struct gl_day_axis *ax, struct gl_error *err)
{
    static const char sql[] =
        "SELECT MIN(a), MAX(b) FROM ("
        " SELECT MIN(hour) AS a, MAX(hour) AS b FROM usage_key_hour WHERE hour >= ?1 AND hour < ?2"
        " UNION ALL"
        " SELECT MIN(hour), MAX(hour) FROM collected_hour WHERE hour >= ?1 AND hour < ?2)";
    sqlite3_stmt *st;
    enum gl_status qrc = gl_store_query_period(s, sql, p->start, p->end, &st,
                                               "report: reading the period's hours", err);
    if (qrc)
        return qrc;
    int64_t a = p->start, b = p->end - 3600;
    int sr = sqlite3_step(st);
    if (sr == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        a = sqlite3_column_int64(st, 0);
        b = sqlite3_column_int64(st, 1);
    }
    enum gl_status rc = sr == SQLITE_ROW || sr == SQLITE_DONE
                            ? GL_OK
                            : gl_store_fail(s, "report: reading the period's hours", err);
    sqlite3_finalize(st);
    if (rc)
        return rc;
    ax->first = gl_floor_to(a, 86400);
    ax->n = (size_t)((gl_floor_to(b, 86400) - ax->first) / 86400 + 1);
    return GL_OK;
}

void gl_team_usage_free(struct gl_team_usage *u)
{
    for (size_t i = 0; i < u->npods; i++) {
        free(u->pods[i].cluster);
        free(u->pods[i].ns);
        free(u->pods[i].pod);
    }
    free(u->pods);
    free(u->days);
    memset(u, 0, sizeof *u);
}

static enum gl_status team_overflow(const struct gl_period *p, const char *team,
                                    const char *what, struct gl_error *err)
{
    return gl_error_set(err, GL_ERR_RUNTIME,
                        "integer overflow: %s (MiB·s) of team \"%.300s\" in period %s exceed "
                        "the 64-bit range (the stored usage holds implausible samples)",
                        what, team, p->name);
}

enum gl_status gl_query_team_usage(struct gl_store *s, const struct gl_period *p,
                                   const char *team, const struct gl_day_axis *ax,
                                   size_t max_pods, struct gl_team_usage *u,
                                   struct gl_error *err)
{
    static const char daily_sql[] =
        "SELECT hour - hour % 86400,"
        " SUM(CASE kind WHEN '" GL_K_MEMORY_USED "' THEN quantity ELSE 0 END),"
        " SUM(CASE kind WHEN '" GL_K_ALLOCATED "' THEN quantity ELSE 0 END),"
        " SUM(CASE kind WHEN '" GL_K_RESERVED_UNUSED "' THEN quantity ELSE 0 END)"
        " FROM usage_key_hour WHERE hour >= ?1 AND hour < ?2 AND team = ?3"
        "  AND kind IN ('" GL_K_MEMORY_USED "', '" GL_K_ALLOCATED "', '" GL_K_RESERVED_UNUSED "')"
        " GROUP BY 1 ORDER BY 1";
    static const char pods_sql[] =
        "SELECT cluster, namespace, pod,"
        " SUM(CASE kind WHEN '" GL_K_MEMORY_USED "' THEN quantity ELSE 0 END) AS used,"
        " SUM(CASE kind WHEN '" GL_K_ALLOCATED "' THEN quantity ELSE 0 END) AS alloc,"
        " SUM(CASE kind WHEN '" GL_K_RESERVED_UNUSED "' THEN quantity ELSE 0 END),"
        " MAX(CASE kind WHEN '" GL_K_MEMORY_USED "' THEN estimated > 0 ELSE 0 END),"
        " COUNT(*) OVER ()"
        " FROM pod_day WHERE team = ?3 AND day >= ?1 AND day < ?2"
        " GROUP BY cluster, namespace, pod"
        " ORDER BY used DESC, alloc DESC, cluster, namespace, pod LIMIT ?4";
    memset(u, 0, sizeof *u);
    u->days = gl_xcalloc(ax->n, sizeof *u->days);
    sqlite3_stmt *st = NULL;
    enum gl_status rc = GL_OK;
    int sr;
    if ((rc = gl_store_query_period(s, daily_sql, p->start, p->end, &st,
                                    "report: reading daily usage", err)))
        goto done;
    sqlite3_bind_text(st, 3, team, -1, SQLITE_STATIC);
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t i = (sqlite3_column_int64(st, 0) - ax->first) / 86400;
        if (i < 0 || (size_t)i >= ax->n)
            continue; /* cannot happen: the axis spans every usage hour */
        int64_t q[3] = {sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
                        sqlite3_column_int64(st, 3)};
        int64_t *day[3] = {&u->days[i].used, &u->days[i].allocated, &u->days[i].waste};
        int64_t *all[3] = {&u->used, &u->allocated, &u->waste};
        for (int k = 0; k < 3; k++)
            if (__builtin_add_overflow(*day[k], q[k], day[k]) ||
                __builtin_add_overflow(*all[k], q[k], all[k])) {
                rc = team_overflow(p, team, "the daily usage", err);
                goto done;
            }
    }
    if (sr != SQLITE_DONE) {
        rc = gl_usage_fail(s, p, "report: reading daily usage", err);
        goto done;
    }
    sqlite3_finalize(st);
    st = NULL;
    if ((rc = gl_store_query_period(s, pods_sql, p->start, p->end, &st, "report: reading pods",
                                    err)))
        goto done;
    sqlite3_bind_text(st, 3, team, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)max_pods);
    u->pods = gl_xcalloc(max_pods ? max_pods : 1, sizeof *u->pods);
    while ((sr = sqlite3_step(st)) == SQLITE_ROW && u->npods < max_pods) {
        struct gl_pod_row *r = &u->pods[u->npods++];
        r->cluster = gl_strdup((const char *)sqlite3_column_text(st, 0));
        r->ns = gl_strdup((const char *)sqlite3_column_text(st, 1));
        r->pod = gl_strdup((const char *)sqlite3_column_text(st, 2));
        r->used = sqlite3_column_int64(st, 3);
        r->allocated = sqlite3_column_int64(st, 4);
        r->waste = sqlite3_column_int64(st, 5);
        r->estimated = sqlite3_column_int(st, 6);
        u->pods_total = sqlite3_column_int64(st, 7);
    }
    if (sr != SQLITE_DONE && sr != SQLITE_ROW)
        rc = gl_usage_fail(s, p, "report: reading pods", err);
done:
    sqlite3_finalize(st);
    if (rc)
        gl_team_usage_free(u);
    return rc;
}

void gl_fleet_free(struct gl_fleet *fl)
{
    for (size_t i = 0; i < fl->n; i++) {
        free(fl->m[i].cluster);
        free(fl->m[i].model);
        free(fl->m[i].teams);
    }
    free(fl->m);
    for (size_t i = 0; i < fl->nteams; i++)
        free(fl->teams[i]);
    free(fl->teams);
    for (size_t i = 0; i < fl->ndev; i++) {
        struct gl_device_row *d = &fl->dev[i];
        char *f[] = {d->cluster, d->uuid, d->gpu_i_id, d->profile, d->model, d->node, d->device};
        for (size_t k = 0; k < sizeof f / sizeof *f; k++)
            free(f[k]);
        for (size_t k = 0; k < d->nmodels; k++)
            free(d->models[k]);
        free(d->models);
        free(d->model_from);
    }
    free(fl->dev);
    memset(fl, 0, sizeof *fl);
}

/* The devices that reported more than one model in the period: per model
 * its first hour (schema 010). */
static const char model_changes_sql[] =
    "SELECT device_id, model, MIN(hour) FROM device_model_hour"
    " WHERE hour >= ?1 AND hour < ?2 AND device_id IN (SELECT device_id FROM device_model_hour"
    "  WHERE hour >= ?1 AND hour < ?2 GROUP BY device_id HAVING COUNT(DISTINCT model) > 1)"
    " GROUP BY device_id, model ORDER BY device_id, 3, model";

static struct gl_device_row *fleet_device(struct gl_fleet *fl, int64_t id)
{
    for (size_t i = 0; i < fl->ndev; i++)
        if (fl->dev[i].id == id)
            return &fl->dev[i];
    return NULL;
}

static struct gl_fleet_model *fleet_model_for(struct gl_fleet *fl, const char *cluster,
                                              const char *model)
{
    for (size_t i = 0; i < fl->n; i++)
        if (strcmp(fl->m[i].cluster, cluster) == 0 && strcmp(fl->m[i].model, model) == 0)
            return &fl->m[i];
    fl->m = gl_xrealloc(fl->m, (fl->n + 1) * sizeof *fl->m);
    struct gl_fleet_model *m = &fl->m[fl->n++];
    memset(m, 0, sizeof *m);
    m->cluster = gl_strdup(cluster);
    m->model = gl_strdup(model);
    return m;
}

enum gl_status gl_query_fleet(struct gl_store *s, const struct gl_period *p, struct gl_fleet *fl,
                              struct gl_error *err)
{
    static const char teams_sql[] =
        "SELECT cluster, model, team, SUM(quantity)"
        " FROM usage_key_hour"
        " WHERE hour >= ?1 AND hour < ?2"
        "  AND kind IN ('" GL_K_MEMORY_USED "', '" GL_K_RESERVED_UNUSED_BILLED "')"
        " GROUP BY 1, 2, 3 HAVING SUM(quantity) <> 0 ORDER BY 3, 1, 2";
    memset(fl, 0, sizeof *fl);
    sqlite3_stmt *st = NULL;
    enum gl_status rc = GL_OK;
    int sr;
    if ((rc = gl_store_query_period(s, models_sql, p->start, p->end, &st, "summary",
                                    err)))
        goto done;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        struct gl_fleet_model *m = fleet_model_for(fl, (const char *)sqlite3_column_text(st, 0),
                                                   (const char *)sqlite3_column_text(st, 1));
        for (int k = 0; k < GL_F_N; k++)
            m->v[k] = sqlite3_column_int64(st, k + 2);
    }
    if (sr != SQLITE_DONE) {
        rc = gl_usage_fail(s, p, "summary per model", err);
        goto done;
    }
    sqlite3_finalize(st);
    if ((rc = gl_store_query_period(s, devices_sql, p->start, p->end, &st, "summary",
                                    err)))
        goto done;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        fl->dev = gl_xrealloc(fl->dev, (fl->ndev + 1) * sizeof *fl->dev);
        struct gl_device_row *d = &fl->dev[fl->ndev++];
        memset(d, 0, sizeof *d);
        char **f[] = {&d->cluster, &d->uuid, &d->gpu_i_id, &d->profile, &d->model, &d->node};
        for (int i = 0; i < 6; i++)
            *f[i] = gl_strdup((const char *)sqlite3_column_text(st, i));
        size_t n = strlen(d->uuid) + strlen(d->gpu_i_id) + 2;
        d->device = gl_xcalloc(n, 1);
        snprintf(d->device, n, "%s%s%s", d->uuid, d->gpu_i_id[0] ? "/" : "", d->gpu_i_id);
        int64_t *v[] = {&d->capacity, &d->used, &d->rub, &d->reserved, &d->unattributed,
                        &d->idle, &d->excess};
        for (int k = 0; k < 7; k++)
            *v[k] = sqlite3_column_int64(st, 6 + k);
        d->unknown = sqlite3_column_int64(st, 13) > 0 || d->capacity == 0;
        d->id = sqlite3_column_int64(st, 14);
    }
    if (sr != SQLITE_DONE) {
        rc = gl_usage_fail(s, p, "summary per device", err);
        goto done;
    }
    sqlite3_finalize(st);
    if ((rc = gl_store_query_period(s, model_changes_sql, p->start, p->end, &st,
                                    "summary: model changes", err)))
        goto done;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        struct gl_device_row *d = fleet_device(fl, sqlite3_column_int64(st, 0));
        if (!d) /* a node's pseudo-device: no row of its own */
            continue;
        d->models = gl_xrealloc(d->models, (d->nmodels + 1) * sizeof *d->models);
        d->model_from = gl_xrealloc(d->model_from, (d->nmodels + 1) * sizeof *d->model_from);
        d->models[d->nmodels] = gl_strdup((const char *)sqlite3_column_text(st, 1));
        d->model_from[d->nmodels++] = sqlite3_column_int64(st, 2);
    }
    if (sr != SQLITE_DONE) {
        rc = gl_store_fail(s, "summary: model changes", err);
        goto done;
    }
    sqlite3_finalize(st);
    if ((rc = gl_store_query_period(s, teams_sql, p->start, p->end, &st, "report: fleet teams",
                                    err)))
        goto done;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *team = (const char *)sqlite3_column_text(st, 2);
        /* rows come in team order: a new team is the last one or new */
        if (!fl->nteams || strcmp(fl->teams[fl->nteams - 1], team) != 0) {
            fl->teams = gl_xrealloc(fl->teams, (fl->nteams + 1) * sizeof *fl->teams);
            fl->teams[fl->nteams++] = gl_strdup(team);
        }
        struct gl_fleet_model *m = fleet_model_for(fl, (const char *)sqlite3_column_text(st, 0),
                                                   (const char *)sqlite3_column_text(st, 1));
        m->teams = gl_xrealloc(m->teams, (m->nteams + 1) * sizeof *m->teams);
        m->teams[m->nteams++] =
            (struct gl_fleet_team){(int)fl->nteams - 1, sqlite3_column_int64(st, 3)};
    }
    if (sr != SQLITE_DONE)
        rc = gl_usage_fail(s, p, "report: fleet teams", err);
done:
    sqlite3_finalize(st);
    if (rc)
        gl_fleet_free(fl);
    return rc;
}

enum gl_status gl_query_model_changes(struct gl_store *s, const char *cluster,
                                      void (*fn)(void *ctx, const char *device,
                                                 const char *model, int64_t from),
                                      void *ctx, struct gl_error *err)
{
    static const char sql[] =
        "SELECT d.uuid || CASE d.gpu_i_id WHEN '' THEN '' ELSE '/' || d.gpu_i_id END,"
        " m.model, MIN(m.hour) FROM device_model_hour m JOIN device d ON d.id = m.device_id"
        " WHERE d.cluster = ?1 AND d.uuid NOT LIKE 'node:%' AND m.device_id IN ("
        "  SELECT device_id FROM device_model_hour GROUP BY device_id"
        "  HAVING COUNT(DISTINCT model) > 1)"
        " GROUP BY m.device_id, m.model ORDER BY 1, 3, 2";
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_prepare(s, sql, &st, "reading model changes", err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW)
        fn(ctx, (const char *)sqlite3_column_text(st, 0),
           (const char *)sqlite3_column_text(st, 1), sqlite3_column_int64(st, 2));
    sqlite3_finalize(st);
    return sr == SQLITE_DONE ? GL_OK : gl_store_fail(s, "reading model changes", err);
}

enum gl_status gl_query_billable_hours(struct gl_store *s,
                                       enum gl_status (*fn)(void *ctx, const char *model,
                                                            int64_t hour, struct gl_error *err),
                                       void *ctx, struct gl_error *err)
{
    static const char sql[] =
        "SELECT DISTINCT model, hour FROM usage_key_hour"
        " WHERE kind IN ('" GL_K_MEMORY_USED "', '" GL_K_RESERVED_UNUSED_BILLED "', '" GL_K_IDLE "', '" GL_K_RESERVED "',"
        " '" GL_K_UNATTRIBUTED "') ORDER BY model, hour";
    sqlite3_stmt *st = NULL;
    /* the period bounds are unused: every stored hour */
    enum gl_status rc = gl_store_query_period(s, sql, 0, 0, &st, "reading models", err);
    if (rc)
        return rc;
    int sr;
    while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW)
        rc = fn(ctx, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1), err);
    if (!rc && sr != SQLITE_DONE)
        rc = gl_store_fail(s, "reading models", err);
    sqlite3_finalize(st);
    return rc;
}

/* Steps st, calling fn with each row as read (read: fills r from st);
 * finalizes st. */
static enum gl_status each_row(struct gl_store *s, const struct gl_period *p, sqlite3_stmt *st,
                               void (*read)(sqlite3_stmt *st, struct gl_usage_row *r),
                               gl_usage_fn fn, void *ctx, const char *what,
                               struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        struct gl_usage_row r = {0};
        read(st, &r);
        if ((rc = fn(ctx, &r, err)))
            break;
    }
    if (!rc && sr != SQLITE_DONE)
        rc = gl_usage_fail(s, p, what, err);
    sqlite3_finalize(st);
    return rc;
}

static void read_billed(sqlite3_stmt *st, struct gl_usage_row *r)
{
    r->team = (const char *)sqlite3_column_text(st, 0);
    r->cluster = (const char *)sqlite3_column_text(st, 1);
    r->model = (const char *)sqlite3_column_text(st, 2);
    r->kind = sqlite3_column_int(st, 3);
    r->hour = sqlite3_column_int64(st, 4);
    r->a = sqlite3_column_int64(st, 5);
    r->estimated = sqlite3_column_int(st, 6);
}

enum gl_status gl_query_billed(struct gl_store *s, const struct gl_period *p,
                               const char *platform_team, gl_usage_fn fn, void *ctx,
                               struct gl_error *err)
{
    static const char sql[] =
        "SELECT team, cluster, model, kind, hour, SUM(q), MAX(est) FROM ("
        " SELECT u.team AS team, u.cluster AS cluster, u.model AS model,"
        "  CASE u.kind WHEN '" GL_K_MEMORY_USED "' THEN ?5 ELSE ?6 END AS kind,"
        "  u.hour AS hour, u.quantity AS q, u.estimated AS est"
        " FROM usage_key_hour u"
        " WHERE u.hour >= ?1 AND u.hour < ?2"
        "  AND u.kind IN ('" GL_K_MEMORY_USED "', '" GL_K_RESERVED_UNUSED_BILLED "')"
        " UNION ALL"
        " SELECT ?3, u.cluster, u.model,"
        "  CASE u.kind WHEN '" GL_K_IDLE "' THEN ?7 ELSE ?8 END,"
        "  u.hour, u.quantity, u.estimated"
        " FROM usage_key_hour u"
        " WHERE ?4 AND u.hour >= ?1 AND u.hour < ?2"
        "  AND u.kind IN ('" GL_K_IDLE "', '" GL_K_RESERVED "', '" GL_K_UNATTRIBUTED "'))"
        " GROUP BY team, cluster, model, kind, hour"
        " ORDER BY team, cluster, model, kind, hour";
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_query_period(s, sql, p->start, p->end, &st, "reading usage",
                                              err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 3, platform_team ? platform_team : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, platform_team != NULL);
    static const enum gl_line_kind kinds[] = {GL_LINE_MEMORY_USED, GL_LINE_RESERVED_UNUSED,
                                              GL_LINE_IDLE_SHARE, GL_LINE_OVERHEAD_SHARE};
    for (int k = 0; k < 4; k++)
        sqlite3_bind_int(st, 5 + k, (int)kinds[k]);
    return each_row(s, p, st, read_billed, fn, ctx, "reading usage", err);
}

static void read_idle(sqlite3_stmt *st, struct gl_usage_row *r)
{
    r->cluster = (const char *)sqlite3_column_text(st, 0);
    r->model = (const char *)sqlite3_column_text(st, 1);
    r->hour = sqlite3_column_int64(st, 2);
    r->a = sqlite3_column_int64(st, 3);
    r->b = sqlite3_column_int64(st, 4);
}

enum gl_status gl_query_idle(struct gl_store *s, const struct gl_period *p, gl_usage_fn fn,
                             void *ctx, struct gl_error *err)
{
    static const char sql[] =
        "SELECT cluster, model, hour,"
        " SUM(CASE kind WHEN '" GL_K_IDLE "' THEN quantity ELSE 0 END),"
        " SUM(CASE kind WHEN '" GL_K_IDLE "' THEN 0 ELSE quantity END)"
        " FROM usage_key_hour"
        " WHERE hour >= ?1 AND hour < ?2 AND kind IN ('" GL_K_IDLE "', '" GL_K_RESERVED "', '" GL_K_UNATTRIBUTED "')"
        " GROUP BY cluster, model, hour ORDER BY cluster, model, hour";
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_query_period(s, sql, p->start, p->end, &st, "reading idle",
                                              err);
    if (rc)
        return rc;
    return each_row(s, p, st, read_idle, fn, ctx, "reading idle", err);
}

static void read_info(sqlite3_stmt *st, struct gl_usage_row *r)
{
    r->team = (const char *)sqlite3_column_text(st, 0);
    r->cluster = (const char *)sqlite3_column_text(st, 1);
    r->model = (const char *)sqlite3_column_text(st, 2);
    r->kind = sqlite3_column_int(st, 3);
    r->hour = sqlite3_column_int64(st, 4);
    r->a = sqlite3_column_int64(st, 5);
}

enum gl_status gl_query_team_info(struct gl_store *s, const struct gl_period *p, gl_usage_fn fn,
                                  void *ctx, struct gl_error *err)
{
    /* the kinds' names sort as enum gl_info_kind: the order stays the names' */
    static const char sql[] =
        "SELECT u.team, u.cluster, u.model,"
        " CASE u.kind WHEN '" GL_K_ALLOCATED "' THEN ?3 WHEN '" GL_K_ALLOCATED_GPU "' THEN ?4"
        "  WHEN '" GL_K_BUSY_PPM "' THEN ?5 WHEN '" GL_K_BUSY_STEPS "' THEN ?6 ELSE ?7 END,"
        " u.hour - u.hour % 86400, SUM(u.quantity)"
        " FROM usage_key_hour u"
        " WHERE u.hour >= ?1 AND u.hour < ?2"
        "  AND u.kind IN ('" GL_K_RESERVED_UNUSED "', '" GL_K_ALLOCATED "', '" GL_K_ALLOCATED_GPU "', '" GL_K_BUSY_PPM "', '" GL_K_BUSY_STEPS "')"
        " GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5";
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_query_period(s, sql, p->start, p->end, &st,
                                              "reading allocation", err);
    if (rc)
        return rc;
    static const enum gl_info_kind kinds[] = {GL_INFO_ALLOCATED, GL_INFO_ALLOCATED_GPU,
                                              GL_INFO_BUSY_PPM, GL_INFO_BUSY_STEPS,
                                              GL_INFO_WASTE};
    for (int k = 0; k < 5; k++)
        sqlite3_bind_int(st, 3 + k, (int)kinds[k]);
    return each_row(s, p, st, read_info, fn, ctx, "reading allocation", err);
}

int64_t gl_query_model_capacity(struct gl_store *s, const char *model)
{
    sqlite3_stmt *st = NULL;
    int64_t cap = 0;
    if (gl_store_prepare(s, "SELECT MAX(max_capacity_mib) FROM device WHERE model = ?1 "
                            "AND gpu_i_id = '' AND uuid NOT LIKE 'node:%'",
                         &st, "reading capacities", NULL))
        return 0;
    sqlite3_bind_text(st, 1, model, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        cap = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return cap;
}

/* Declared in invoice.h, with struct gl_anomaly. */
enum gl_status gl_anomalies_load(struct gl_store *s, const struct gl_period *p, const char *team,
                                 struct gl_anomaly_list *out, struct gl_error *err)
{
    static const char sql[] =
        "SELECT CASE u.kind WHEN '" GL_K_ANOMALY_UNALLOCATED "' THEN ?4 ELSE ?5 END, u.cluster, u.namespace, u.pod, u.team, d.hostname,"
        " d.uuid || CASE d.gpu_i_id WHEN '' THEN '' ELSE '/' || d.gpu_i_id END, d.model,"
        " MIN(u.first_seen), MAX(u.last_seen), SUM(u.quantity)"
        " FROM anomaly_day u JOIN device d ON d.id = u.device_id"
        " WHERE u.day >= ?1 AND u.day < ?2"
        "  AND (?3 IS NULL OR u.team = ?3)"
        " GROUP BY u.kind, u.cluster, u.namespace, u.pod, u.team, u.device_id"
        " ORDER BY 1, 2, 3, 4, 7, 5";
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = NULL;
    enum gl_status qrc = gl_store_query_period(s, sql, p->start, p->end, &st,
                                  "reading anomalies", err);
    if (qrc)
        return qrc;
    if (team)
        sqlite3_bind_text(st, 3, team, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, GL_ANOMALY_UNALLOCATED_USE);
    sqlite3_bind_int(st, 5, GL_ANOMALY_EXCESS_DEVICES);
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        out->items = gl_xrealloc(out->items, (out->n + 1) * sizeof *out->items);
        struct gl_anomaly *a = &out->items[out->n++];
        a->kind = (enum gl_anomaly_kind)sqlite3_column_int(st, 0);
        char **f[] = {&a->cluster, &a->ns, &a->pod, &a->team, &a->node, &a->device, &a->model};
        for (int i = 0; i < 7; i++)
            *f[i] = gl_strdup((const char *)sqlite3_column_text(st, i + 1));
        a->first_seen = sqlite3_column_int64(st, 8);
        a->last_seen = sqlite3_column_int64(st, 9);
        a->mib_s = sqlite3_column_int64(st, 10);
    }
    enum gl_status rc = sr == SQLITE_DONE ? GL_OK : gl_usage_fail(s, p, "reading anomalies", err);
    sqlite3_finalize(st);
    if (rc)
        gl_anomalies_free(out);
    return rc;
}


/* ---- demand waiting ---- */

static const char pending_keys_sql[] =
    "SELECT team, cluster, model, SUM(quantity) FROM usage_key_hour"
    " WHERE hour >= ?1 AND hour < ?2 AND kind = '" GL_K_PENDING_GPU "'"
    " GROUP BY 1, 2, 3 HAVING SUM(quantity) <> 0 ORDER BY 1, 2, 3";

/* Where the rows go: the fleet's (NULL when not asked for) and outs[i] of
 * teams[i]. Rows come ordered by team or by the fleet's ranking: *last
 * remembers the previous team found. */
struct pending_dest {
    struct gl_pending *fleet, *outs;
    const char *const *teams;
    size_t nteams, last;
};

static struct gl_pending *team_of(struct pending_dest *d, const char *team)
{
    for (size_t k = 0; k < d->nteams; k++) {
        size_t i = (d->last + k) % d->nteams;
        if (!strcmp(d->teams[i], team)) {
            d->last = i;
            return &d->outs[i];
        }
    }
    return NULL;
}

static void key_append(struct gl_pending *out, sqlite3_stmt *st)
{
    out->k = gl_xrealloc(out->k, (out->nk + 1) * sizeof *out->k);
    struct gl_pending_key *k = &out->k[out->nk++];
    k->team = gl_strdup((const char *)sqlite3_column_text(st, 0));
    k->cluster = gl_strdup((const char *)sqlite3_column_text(st, 1));
    k->model = gl_strdup((const char *)sqlite3_column_text(st, 2));
    k->gpu_us = sqlite3_column_int64(st, 3);
}

static enum gl_status pending_keys(struct gl_store *s, const struct gl_period *p,
                                   struct pending_dest *d, struct gl_error *err)
{
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_query_period(s, pending_keys_sql, p->start, p->end, &st,
                                              "reading pending GPUs", err);
    int sr = SQLITE_DONE;
    while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW) {
        struct gl_pending *t = team_of(d, (const char *)sqlite3_column_text(st, 0));
        if (d->fleet)
            key_append(d->fleet, st);
        if (t)
            key_append(t, st);
    }
    if (!rc && sr != SQLITE_DONE)
        rc = gl_usage_fail(s, p, "reading pending GPUs", err);
    sqlite3_finalize(st);
    return rc;
}

static void wait_append(struct gl_pending *out, sqlite3_stmt *st, int pods_col)
{
    out->p = gl_xrealloc(out->p, (out->np + 1) * sizeof *out->p);
    struct gl_pending_pod *x = &out->p[out->np++];
    char **f[] = {&x->cluster, &x->ns, &x->pod, &x->team};
    for (int i = 0; i < 4; i++)
        *f[i] = gl_strdup((const char *)sqlite3_column_text(st, i));
    x->first_seen = sqlite3_column_int64(st, 4);
    x->last_seen = sqlite3_column_int64(st, 5);
    x->waited_s = x->last_seen - x->first_seen;
    x->gpu_us = sqlite3_column_int64(st, 6);
    out->pods = sqlite3_column_int64(st, pods_col);
}

/* The longest waits, of the fleet and of each team, from one pass over the
 * month's rows (the pages read both): each pod that waited ranked in the
 * fleet (longest first, then GPU time, cluster, namespace, pod, team) and
 * within its team by the same order, so a team's waits keep the fleet's
 * order; the rows within either top max, in the fleet's order. */
static enum gl_status pending_waits(struct gl_store *s, const struct gl_period *p, size_t max,
                                    struct pending_dest *d, struct gl_error *err)
{
    static const char sql[] =
        "SELECT cluster, namespace, pod, team, f, l, q, n_team, n_fleet, r_team, r_fleet FROM ("
        " SELECT cluster, namespace, pod, team, MIN(first_seen) AS f, MAX(last_seen) AS l,"
        "  SUM(quantity) AS q, COUNT(*) OVER (PARTITION BY team) AS n_team,"
        "  COUNT(*) OVER () AS n_fleet,"
        "  ROW_NUMBER() OVER (PARTITION BY team ORDER BY MAX(last_seen) - MIN(first_seen) DESC,"
        "   SUM(quantity) DESC, cluster, namespace, pod) AS r_team,"
        "  ROW_NUMBER() OVER (ORDER BY MAX(last_seen) - MIN(first_seen) DESC, SUM(quantity) DESC,"
        "   cluster, namespace, pod, team) AS r_fleet"
        " FROM usage WHERE hour >= ?1 AND hour < ?2 AND kind = '" GL_K_PENDING_GPU "'"
        " GROUP BY 1, 2, 3, 4)"
        " WHERE (?4 AND r_fleet <= ?3) OR (?5 AND r_team <= ?3) ORDER BY r_fleet";
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_query_period(s, sql, p->start, p->end, &st,
                                              "reading pending pods", err);
    if (!rc) {
        sqlite3_bind_int64(st, 3, (sqlite3_int64)max);
        sqlite3_bind_int(st, 4, d->fleet != NULL);
        sqlite3_bind_int(st, 5, d->nteams > 0);
    }
    int sr = SQLITE_DONE;
    while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW) {
        if (d->fleet && sqlite3_column_int64(st, 10) <= (sqlite3_int64)max)
            wait_append(d->fleet, st, 8);
        struct gl_pending *t = team_of(d, (const char *)sqlite3_column_text(st, 3));
        if (t && sqlite3_column_int64(st, 9) <= (sqlite3_int64)max)
            wait_append(t, st, 7);
    }
    if (!rc && sr != SQLITE_DONE)
        rc = gl_store_fail(s, "reading pending pods", err);
    sqlite3_finalize(st);
    return rc;
}

enum gl_status gl_query_pending(struct gl_store *s, const struct gl_period *p, size_t max,
                                struct gl_pending *out, struct gl_error *err)
{
    return gl_query_team_pending(s, p, NULL, 0, max, out, NULL, err);
}

enum gl_status gl_query_team_pending(struct gl_store *s, const struct gl_period *p,
                                     const char *const *teams, size_t nteams, size_t max,
                                     struct gl_pending *fleet, struct gl_pending *outs,
                                     struct gl_error *err)
{
    if (fleet)
        memset(fleet, 0, sizeof *fleet);
    if (nteams)
        memset(outs, 0, nteams * sizeof *outs);
    struct pending_dest d = {fleet, outs, teams, nteams, 0};
    enum gl_status rc = pending_keys(s, p, &d, err);
    if (!rc)
        rc = pending_waits(s, p, max, &d, err);
    if (rc && fleet)
        gl_pending_free(fleet);
    for (size_t i = 0; rc && i < nteams; i++)
        gl_pending_free(&outs[i]);
    return rc;
}

void gl_pending_free(struct gl_pending *x)
{
    for (size_t i = 0; i < x->nk; i++) {
        free(x->k[i].team);
        free(x->k[i].cluster);
        free(x->k[i].model);
    }
    for (size_t i = 0; i < x->np; i++) {
        free(x->p[i].cluster);
        free(x->p[i].ns);
        free(x->p[i].pod);
        free(x->p[i].team);
    }
    free(x->k);
    free(x->p);
    memset(x, 0, sizeof *x);
}

/* ---- closed periods ---- */

/* CLOSED_SCAN: a closed_period row holds the month's FOCUS CSV at close
 * (megabytes) and the table is WITHOUT ROWID, so its rows are the keys of
 * its b-tree: a search by period compares whole records and reads the CSVs
 * of the rows it passes, overflow pages included (about 5 ms per search at
 * 256 GPUs, bench/RESULTS.md). `+period` makes SQLite scan the few rows
 * instead, reading only their first columns (about 0.05 ms for 12 months).
 * gl_query_frozen_focus reads the CSV of the one row it scans to. */

/* One integer of the first row of sql, whose ?1 is key: *v (0 when there is
 * no row) and *found (may be NULL). */
static enum gl_status int64_by_key(struct gl_store *s, const char *sql, const char *key,
                                   int64_t *v, bool *found, const char *what,
                                   struct gl_error *err)
{
    sqlite3_stmt *st;
    *v = 0;
    if (found)
        *found = false;
    if (gl_store_prepare(s, sql, &st, what, err))
        return GL_ERR_RUNTIME;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *v = sqlite3_column_int64(st, 0);
        if (found)
            *found = true;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? GL_OK : gl_store_fail(s, what, err);
}

enum gl_status gl_query_cluster_hours(struct gl_store *s, const char *cluster, int64_t from,
                                      int64_t to, gl_hour_fn fn, void *ctx,
                                      struct gl_error *err)
{
    static const char *const sql[] = {
        "SELECT hour, samples, '' FROM collected_hour WHERE cluster = ?3 AND hour >= ?1 "
        "AND hour < ?2 ORDER BY hour",
        "SELECT hour, 0, reason FROM refused_hour WHERE cluster = ?3 AND hour >= ?1 "
        "AND hour < ?2 ORDER BY hour"};
    const char *what = "reading the collected hours";
    enum gl_status rc = GL_OK;
    for (int k = 0; !rc && k < 2; k++) {
        sqlite3_stmt *st;
        if ((rc = gl_store_query_period(s, sql[k], from, to, &st, what, err)))
            break;
        sqlite3_bind_text(st, 3, cluster, -1, SQLITE_STATIC);
        int sr;
        while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW)
            rc = fn(ctx, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), k == 1,
                    (const char *)sqlite3_column_text(st, 2), err);
        if (!rc && sr != SQLITE_DONE)
            rc = gl_store_fail(s, what, err);
        sqlite3_finalize(st);
    }
    return rc;
}

enum gl_status gl_query_period_collected(struct gl_store *s, const struct gl_period *p,
                                         bool *any, struct gl_error *err)
{
    const char *what = "reading the collected hours";
    sqlite3_stmt *st;
    *any = false;
    if (gl_store_query_period(s,
                              "SELECT 1 FROM collected_hour WHERE hour >= ?1 AND hour < ?2 "
                              "LIMIT 1",
                              p->start, p->end, &st, what, err))
        return GL_ERR_RUNTIME;
    int sr = sqlite3_step(st);
    *any = sr == SQLITE_ROW;
    sqlite3_finalize(st);
    return sr == SQLITE_ROW || sr == SQLITE_DONE ? GL_OK : gl_store_fail(s, what, err);
}

enum gl_status gl_query_data_span(struct gl_store *s, struct gl_data_span *out,
                                  struct gl_error *err)
{
    const char *what = "reading the collected hours";
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st;
    if (gl_store_prepare(s,
                         "SELECT (SELECT MIN(hour) FROM collected_hour), "
                         "(SELECT MAX(hour) FROM collected_hour), "
                         "(SELECT MIN(period) FROM closed_period), "
                         "(SELECT MAX(period) FROM closed_period)",
                         &st, what, err))
        return GL_ERR_RUNTIME;
    int sr = sqlite3_step(st);
    if (sr == SQLITE_ROW) {
        out->any_hour = sqlite3_column_type(st, 0) != SQLITE_NULL;
        out->first_hour = sqlite3_column_int64(st, 0);
        out->last_hour = sqlite3_column_int64(st, 1);
        const char *a = (const char *)sqlite3_column_text(st, 2);
        const char *b = (const char *)sqlite3_column_text(st, 3);
        snprintf(out->first_closed, sizeof out->first_closed, "%s", a ? a : "");
        snprintf(out->last_closed, sizeof out->last_closed, "%s", b ? b : "");
    }
    sqlite3_finalize(st);
    return sr == SQLITE_ROW ? GL_OK : gl_store_fail(s, what, err);
}

enum gl_status gl_query_is_closed(struct gl_store *s, const char *period, bool *closed,
                                  struct gl_error *err)
{
    int64_t one;
    /* `+period`: CLOSED_SCAN */
    return int64_by_key(s, "SELECT 1 FROM closed_period WHERE +period = ?", period, &one, closed,
                        "reading closed periods", err);
}

/* ---- metrics (loud when data is missing) ---- */

enum gl_status gl_query_cluster_had_samples(struct gl_store *s, const char *cluster,
                                            int64_t before, bool *had, struct gl_error *err)
{
    sqlite3_stmt *st;
    if (gl_store_prepare(s,
                         "SELECT 1 FROM collected_hour WHERE cluster = ?1 AND hour < ?2 "
                         "AND samples > 0 LIMIT 1",
                         &st, "reading collected hours", err))
        return GL_ERR_RUNTIME;
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, before);
    int rc = sqlite3_step(st);
    *had = rc == SQLITE_ROW;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? GL_OK
                                                 : gl_store_fail(s, "reading collected hours", err);
}

enum gl_status gl_query_frozen_rows(struct gl_store *s, const char *period,
                                    const char *corrections, gl_frozen_row_fn fn, void *ctx,
                                    struct gl_error *err)
{
    static const char frozen_sql[] =
        "SELECT team, cluster, model, kind, price_key, day, mib_seconds, billed_minor, unit_price,"
        " gb_hours_nano, corrected_period, price_id FROM frozen_row"
        " WHERE period = ?1 AND corrected_period = ''";
    static const char prior_sql[] =
        "SELECT team, cluster, model, kind, price_key, day, mib_seconds, billed_minor, unit_price,"
        " gb_hours_nano, corrected_period, price_id FROM frozen_row"
        " WHERE corrected_period = ?1 AND period > ?1 AND period < ?2";
    sqlite3_stmt *st;
    if (gl_store_prepare(s, corrections ? prior_sql : frozen_sql, &st, "reading frozen rows",
                         err))
        return GL_ERR_RUNTIME;
    sqlite3_bind_text(st, 1, period, -1, SQLITE_STATIC);
    if (corrections)
        sqlite3_bind_text(st, 2, corrections, -1, SQLITE_STATIC);
    int sr;
    enum gl_status rc = GL_OK;
    while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW) {
        struct gl_frozen_row r = {
            .team = (const char *)sqlite3_column_text(st, 0),
            .cluster = (const char *)sqlite3_column_text(st, 1),
            .model = (const char *)sqlite3_column_text(st, 2),
            .price_key = (const char *)sqlite3_column_text(st, 4),
            .day = sqlite3_column_int64(st, 5),
            .mib_s = sqlite3_column_int64(st, 6),
            .billed_minor = sqlite3_column_int64(st, 7),
            .unit_price = (const char *)sqlite3_column_text(st, 8),
            .gbh_nano = sqlite3_column_int64(st, 9),
            .corrected_period = (const char *)sqlite3_column_text(st, 10),
            .price_id = (const char *)sqlite3_column_text(st, 11),
        };
        /* the kind's name is the store's format: an enum from here on */
        const char *kname = (const char *)sqlite3_column_text(st, 3);
        enum gl_line_kind kind;
        if (!gl_line_kind_parse(kname, &kind)) {
            rc = gl_error_set(err, GL_ERR_RUNTIME,
                              "%s: a frozen row of period %s has the unknown kind \"%.100s\"",
                              sqlite3_db_filename(gl_store_db(s), "main"), period, kname);
            break;
        }
        r.kind = (int)kind;
        rc = fn(ctx, &r, err);
    }
    if (!rc && sr != SQLITE_DONE)
        rc = gl_store_fail(s, "reading frozen rows", err);
    sqlite3_finalize(st);
    return rc;
}

enum gl_status gl_query_frozen_focus(struct gl_store *s, const char *period, char **csv,
                                     struct gl_error *err)
{
    /* `+period`: CLOSED_SCAN */
    *csv = NULL;
    sqlite3_stmt *st;
    if (gl_store_prepare(s, "SELECT focus_csv FROM closed_period WHERE +period = ?", &st,
                         "reading the frozen export", err))
        return GL_ERR_RUNTIME;
    sqlite3_bind_text(st, 1, period, -1, SQLITE_STATIC);
    enum gl_status rc = GL_OK;
    if (sqlite3_step(st) == SQLITE_ROW)
        *csv = gl_strdup((const char *)sqlite3_column_text(st, 0));
    else
        rc = gl_error_set(err, GL_ERR_STATE, "period %s is not closed", period);
    sqlite3_finalize(st);
    return rc;
}

enum gl_status gl_query_frozen_invoices(struct gl_store *s, const char *period,
                                        const char *team,
                                        void (*fn)(void *ctx, const char *team,
                                                   const char *json, const char *md),
                                        void *ctx, struct gl_error *err)
{
    sqlite3_stmt *st;
    if (gl_store_prepare(s,
                         "SELECT team, json, md FROM frozen_invoice WHERE period = ?1 "
                         "AND (?2 IS NULL OR team = ?2) ORDER BY team",
                         &st, "reading frozen invoices", err))
        return GL_ERR_RUNTIME;
    sqlite3_bind_text(st, 1, period, -1, SQLITE_STATIC);
    if (team)
        sqlite3_bind_text(st, 2, team, -1, SQLITE_STATIC);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn(ctx, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
           (const char *)sqlite3_column_text(st, 2));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? GL_OK : gl_store_fail(s, "reading frozen invoices", err);
}

/* ---- the output state ---- */

enum gl_status gl_query_data_version(struct gl_store *s, const char *period, int64_t *v,
                                     struct gl_error *err)
{
    return int64_by_key(s, "SELECT version FROM data_version WHERE period = ?", period, v, NULL,
                        "reading the data version", err);
}

enum gl_status gl_query_devices_seen(struct gl_store *s, const struct gl_period *p,
                                     void (*fn)(void *ctx, const char *const cols[8]), void *ctx,
                                     struct gl_error *err)
{
    static const char sql[] =
        "SELECT cluster, uuid, gpu_i_id, gpu_i_profile, model, hostname, max_capacity_mib,"
        /* a node's pseudo-device (allocation rows) has no samples of its own:
         * its first/last seen are chunk starts, which no output reads */
        " CASE WHEN uuid LIKE 'node:%' THEN 0 ELSE first_seen < ?2 AND last_seen >= ?1 END"
        " FROM device ORDER BY cluster, uuid, gpu_i_id";
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_query_period(s, sql, p->start, p->end, &st,
                                              "reading devices for the output state", err);
    if (rc)
        return rc;
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *cols[8];
        for (int i = 0; i < 8; i++)
            cols[i] = (const char *)sqlite3_column_text(st, i);
        fn(ctx, cols);
    }
    sqlite3_finalize(st);
    if (sr != SQLITE_DONE)
        return gl_store_fail(s, "reading devices for the output state", err);
    return GL_OK;
}

void gl_output_state_clear(struct gl_output_state *o)
{
    free(o->closed);
    free(o->devices);
    free(o->prices);
    free(o->config);
    free(o->files);
    memset(o, 0, sizeof *o);
}

enum gl_status gl_query_output_state(struct gl_store *s, const char *out_dir, const char *period,
                                     struct gl_output_state *out, bool *found,
                                     struct gl_error *err)
{
    memset(out, 0, sizeof *out);
    *found = false;
    sqlite3_stmt *st;
    if (gl_store_prepare(s,
                         "SELECT data_version, closed, devices, prices, config, files"
                         " FROM output_state WHERE out_dir = ? AND period = ?",
                         &st, "reading the output state", err))
        return GL_ERR_RUNTIME;
    sqlite3_bind_text(st, 1, out_dir, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, period, -1, SQLITE_STATIC);
    int sr = sqlite3_step(st);
    if (sr == SQLITE_ROW) {
        *found = true;
        out->data_version = sqlite3_column_int64(st, 0);
        char **f[] = {&out->closed, &out->devices, &out->prices, &out->config, &out->files};
        for (int i = 0; i < 5; i++)
            *f[i] = gl_strdup((const char *)sqlite3_column_text(st, i + 1));
    }
    sqlite3_finalize(st);
    if (sr != SQLITE_ROW && sr != SQLITE_DONE)
        return gl_store_fail(s, "reading the output state", err);
    return GL_OK;
}

enum gl_status gl_store_output_state(struct gl_store *s, const char *out_dir, const char *period,
                                     const struct gl_output_state *o, struct gl_error *err)
{
    enum gl_status rc = gl_store_begin(s, err);
    if (rc)
        return rc;
    sqlite3_stmt *st;
    if (gl_store_prepare(s,
                         "INSERT OR REPLACE INTO output_state (out_dir, period, data_version,"
                         " closed, devices, prices, config, files, written_at)"
                         " VALUES (?,?,?,?,?,?,?,?,strftime('%s','now'))",
                         &st, "recording the output state", err)) {
        gl_store_rollback(s);
        return GL_ERR_RUNTIME;
    }
    sqlite3_bind_text(st, 1, out_dir, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, period, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, o->data_version);
    sqlite3_bind_text(st, 4, o->closed, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, o->devices, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, o->prices, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, o->config, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, o->files, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = gl_store_fail(s, "recording the output state", err);
    sqlite3_finalize(st);
    if (!rc)
        rc = gl_store_commit(s, err);
    if (rc)
        gl_store_rollback(s);
    return rc;
}

enum gl_status gl_query_known_periods(struct gl_store *s,
                                      void (*fn)(void *ctx, const char *period), void *ctx,
                                      struct gl_error *err)
{
    sqlite3_stmt *st;
    if (gl_store_prepare(s,
                         "SELECT period FROM data_version UNION SELECT period FROM closed_period"
                         " ORDER BY 1",
                         &st, "reading the periods with data", err))
        return GL_ERR_RUNTIME;
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (name)
            fn(ctx, name);
    }
    sqlite3_finalize(st);
    return sr == SQLITE_DONE ? GL_OK : gl_store_fail(s, "reading the periods with data", err);
}

/* ---- invoice status, trend, workloads (report) ---- */

enum gl_status gl_query_closed_at(struct gl_store *s, const char *period, int64_t *closed_at,
                                  struct gl_error *err)
{
    /* `+period`: CLOSED_SCAN */
    return int64_by_key(s, "SELECT closed_at FROM closed_period WHERE +period = ?", period,
                        closed_at, NULL, "reading closed periods", err);
}

/* usage kinds the workloads sum, in one place */
#define WL_KINDS "('" GL_K_MEMORY_USED "', '" GL_K_ALLOCATED "', '" GL_K_RESERVED_UNUSED "')"

enum gl_status gl_query_team_workloads(struct gl_store *s, const struct gl_period *p,
                                       const char *team, size_t max,
                                       struct gl_team_workloads *out, struct gl_error *err)
{
    static const char sql[] =
        "SELECT u.cluster, u.namespace, COALESCE(o.owner_kind, 'Pod'),"
        " COALESCE(o.owner_name, u.pod),"
        " SUM(CASE u.kind WHEN '" GL_K_MEMORY_USED "' THEN u.quantity ELSE 0 END) AS used,"
        " SUM(CASE u.kind WHEN '" GL_K_ALLOCATED "' THEN u.quantity ELSE 0 END) AS alloc,"
        " SUM(CASE u.kind WHEN '" GL_K_RESERVED_UNUSED "' THEN u.quantity ELSE 0 END),"
        " COUNT(DISTINCT u.pod),"
        " MAX(CASE WHEN u.kind = '" GL_K_MEMORY_USED "' AND u.estimated > 0 THEN 1 ELSE 0 END),"
        " COUNT(*) OVER ()"
        /* pod_day (schema/004): the pods' daily figures, kept after prune */
        " FROM pod_day u LEFT JOIN pod_owner o"
        "  ON o.cluster = u.cluster AND o.namespace = u.namespace AND o.pod = u.pod"
        " WHERE u.day >= ?1 AND u.day < ?2 AND u.team = ?3"
        "  AND u.kind IN " WL_KINDS
        " GROUP BY 1, 2, 3, 4"
        " ORDER BY used DESC, alloc DESC, 1, 2, 3, 4 LIMIT ?4";
    memset(out, 0, sizeof *out);
    out->w = gl_xcalloc(max ? max : 1, sizeof *out->w);
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_query_period(s, sql, p->start, p->end, &st,
                                              "report: reading workloads", err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 3, team, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)max);
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW && out->n < max) {
        struct gl_workload_row *r = &out->w[out->n++];
        r->cluster = gl_strdup((const char *)sqlite3_column_text(st, 0));
        r->ns = gl_strdup((const char *)sqlite3_column_text(st, 1));
        r->kind = gl_strdup((const char *)sqlite3_column_text(st, 2));
        r->name = gl_strdup((const char *)sqlite3_column_text(st, 3));
        r->used = sqlite3_column_int64(st, 4);
        r->allocated = sqlite3_column_int64(st, 5);
        r->waste = sqlite3_column_int64(st, 6);
        r->pods = sqlite3_column_int64(st, 7);
        r->estimated = sqlite3_column_int(st, 8);
        out->total = sqlite3_column_int64(st, 9);
    }
    if (sr != SQLITE_DONE && sr != SQLITE_ROW)
        rc = gl_usage_fail(s, p, "report: reading workloads", err);
    sqlite3_finalize(st);
    if (rc)
        gl_team_workloads_free(out);
    return rc;
}

void gl_team_workloads_free(struct gl_team_workloads *w)
{
    for (size_t i = 0; w->w && i < w->n; i++) {
        free(w->w[i].cluster);
        free(w->w[i].ns);
        free(w->w[i].kind);
        free(w->w[i].name);
    }
    free(w->w);
    memset(w, 0, sizeof *w);
}

/* The trend of every team of a statement at once: the
 * cost is that of the months shown, whatever the age of the database and
 * without a pass per team and month.
 *
 * First each team's months (before p, newest first, at most max) are found
 * by seeks alone, no sum: of usage_key_hour_team (team, hour) for its
 * latest memory-used hour before a bound (kind is in the index: no row is
 * read), of frozen_row's primary key (period, corrected_period, team, ...)
 * for the latest frozen period before a bound and whether it has a row of
 * the team (a skip over the few corrected periods of a period); so a month
 * before those shown is found by at most one seek and never summed.
 *
 * Then each month shown by any team is read once for all the teams that
 * show it: its memory-used rows (the primary key's hour range: covering,
 * read in order; no row lookup per hour as a sum per team in
 * usage_key_hour_team has), its frozen rows (the primary key's period), one
 * lookup of closed_period (CLOSED_SCAN). The rows are summed here, checked,
 * into the slots of the teams that show the month, and the rows of other
 * teams skipped: a team's month before those it shows is never summed for
 * it because another team shows that month (a month whose sum overflows
 * stays unread), and a SQL GROUP BY team would sort every row (about twice
 * the instructions: bench/RESULTS.md, with the EXPLAIN QUERY PLAN). */
enum trend_stmt {
    TR_USED_LAST, TR_FROZEN_LAST, TR_FROZEN_ANY, TR_USED, TR_FROZEN, TR_CLOSED, TR_N
};

/* The distinct corrected periods of frozen period ?1, one seek each. */
#define TR_CORRECTED_PERIODS                                                                    \
    "WITH RECURSIVE cp(v) AS ("                                                                 \
    "  SELECT (SELECT corrected_period FROM frozen_row WHERE period = ?1"                       \
    "          ORDER BY corrected_period LIMIT 1)"                                              \
    "  UNION ALL"                                                                               \
    "  SELECT (SELECT corrected_period FROM frozen_row"                                         \
    "          WHERE period = ?1 AND corrected_period > cp.v"                                   \
    "          ORDER BY corrected_period LIMIT 1)"                                              \
    "  FROM cp WHERE cp.v IS NOT NULL)"

static const char *const trend_sql[TR_N] = {
    /* the latest hour before ?2 with memory used by team ?1 */
    [TR_USED_LAST] = "SELECT hour FROM usage_key_hour"
                     " WHERE team = ?1 AND hour < ?2 AND kind = '" GL_K_MEMORY_USED "'"
                     " ORDER BY hour DESC LIMIT 1",
    /* the latest period before ?1 with frozen rows (of any team) */
    [TR_FROZEN_LAST] = "SELECT period FROM frozen_row WHERE period < ?1"
                       " ORDER BY period DESC LIMIT 1",
    /* whether period ?1 has a frozen row of team ?2 */
    [TR_FROZEN_ANY] = TR_CORRECTED_PERIODS
                      " SELECT 1 FROM cp CROSS JOIN frozen_row f"
                      " WHERE f.period = ?1 AND f.corrected_period = cp.v AND f.team = ?2"
                      " LIMIT 1",
    /* the memory used in [?1, ?2), every team's (the primary key's hour
     * range: covering, read in order; summed in C for the teams that show
     * the month: a GROUP BY team would sort every row) */
    [TR_USED] = "SELECT team, quantity FROM usage_key_hour"
                " WHERE hour >= ?1 AND hour < ?2 AND kind = '" GL_K_MEMORY_USED "'",
    /* the frozen rows of period ?1, every team's */
    [TR_FROZEN] = "SELECT team, billed_minor FROM frozen_row WHERE period = ?1",
    [TR_CLOSED] = "SELECT 1 FROM closed_period WHERE +period = ?1", /* CLOSED_SCAN */
};

/* One month of a team's trend: the month (an index into the reader's
 * months) and, once read, its sums (0 of a figure it does not show). */
struct trend_slot {
    size_t month;
    int64_t used_sum, frozen_sum;
};

/* One month shown by some teams: its name (frozen_row's period, else the
 * usage month's name), the usage month (when a team shows its memory
 * used), whether it is closed, and the teams (indexes into the caller's
 * teams, in the order of their names) that show its memory used and its
 * frozen total. */
struct trend_month {
    char *name;
    struct gl_period month;
    bool closed;
    size_t *used, nused, *frozen, nfrozen;
};

/* A team of the caller's, for sorting by name. */
struct trend_team {
    const char *name;
    size_t i;
};

struct trend_reader {
    struct gl_store *s;
    const struct gl_period *p;
    sqlite3_stmt *st[TR_N];
    const char *const *teams;
    size_t nteams, max;
    struct trend_slot *slots; /* max per team, newest first */
    size_t *n;                /* months per team */
    struct trend_month *months;
    size_t nmonths;
    /* the current team's next usage month (an hour of memory used before
     * used_before) and next frozen period (before frozen_before), newest
     * first; looked up only when the next month is asked for (stale) */
    bool used_stale, frozen_stale, has_used, has_frozen;
    struct gl_period used_month;
    int64_t used_before;
    char *frozen_before; /* after a lookup: the period found */
};

/* Steps st once: *row says whether it gave a row. */
static enum gl_status trend_step(struct trend_reader *t, sqlite3_stmt *st, bool *row,
                                 struct gl_error *err)
{
    int sr = sqlite3_step(st);
    *row = sr == SQLITE_ROW;
    if (sr != SQLITE_ROW && sr != SQLITE_DONE)
        return gl_usage_fail(t->s, t->p, "report: reading the trend", err);
    return GL_OK;
}

static enum gl_status trend_find_used(struct trend_reader *t, struct gl_error *err)
{
    sqlite3_stmt *st = t->st[TR_USED_LAST];
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 2, t->used_before);
    enum gl_status rc = trend_step(t, st, &t->has_used, err);
    if (!rc && t->has_used)
        gl_period_of(sqlite3_column_int64(st, 0), &t->used_month);
    sqlite3_reset(st);
    t->used_stale = false;
    return rc;
}

static enum gl_status trend_find_frozen(struct trend_reader *t, struct gl_error *err)
{
    sqlite3_stmt *last = t->st[TR_FROZEN_LAST], *any = t->st[TR_FROZEN_ANY];
    enum gl_status rc = GL_OK;
    t->has_frozen = false;
    while (!rc && !t->has_frozen) { /* a period without the team: one seek each */
        bool row;
        sqlite3_reset(last);
        sqlite3_bind_text(last, 1, t->frozen_before, -1, SQLITE_TRANSIENT);
        if ((rc = trend_step(t, last, &row, err)) || !row)
            break;
        free(t->frozen_before);
        t->frozen_before = gl_strdup((const char *)sqlite3_column_text(last, 0));
        sqlite3_reset(last);
        sqlite3_reset(any);
        sqlite3_bind_text(any, 1, t->frozen_before, -1, SQLITE_TRANSIENT);
        rc = trend_step(t, any, &t->has_frozen, err);
    }
    sqlite3_reset(last);
    sqlite3_reset(any);
    t->frozen_stale = false;
    return rc;
}

/* The index of the month named name (added when new). */
static size_t trend_month_of(struct trend_reader *t, const char *name)
{
    for (size_t i = 0; i < t->nmonths; i++)
        if (strcmp(t->months[i].name, name) == 0)
            return i;
    t->months = gl_xrealloc(t->months, (t->nmonths + 1) * sizeof *t->months);
    struct trend_month *m = &t->months[t->nmonths];
    *m = (struct trend_month){.name = gl_strdup(name)};
    m->used = gl_xcalloc(t->nteams, sizeof *m->used);
    m->frozen = gl_xcalloc(t->nteams, sizeof *m->frozen);
    return t->nmonths++;
}

/* Team i's months (newest first, at most max) into its slots, without
 * their figures; each month notes that team i shows it. Called for the
 * teams in the order of their names, so the months' lists are too. */
static enum gl_status trend_team_months(struct trend_reader *t, size_t i, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    t->used_stale = t->frozen_stale = true;
    t->used_before = t->p->start;
    free(t->frozen_before);
    t->frozen_before = gl_strdup(t->p->name);
    sqlite3_bind_text(t->st[TR_USED_LAST], 1, t->teams[i], -1, SQLITE_STATIC);
    sqlite3_bind_text(t->st[TR_FROZEN_ANY], 2, t->teams[i], -1, SQLITE_STATIC);
    while (!rc && t->n[i] < t->max) {
        if ((t->used_stale && (rc = trend_find_used(t, err))) ||
            (t->frozen_stale && (rc = trend_find_frozen(t, err))) ||
            (!t->has_used && !t->has_frozen))
            break;
        /* the later of the two; both when they are the same month */
        int c = !t->has_used     ? -1
                : !t->has_frozen ? 1
                                 : strcmp(t->used_month.name, t->frozen_before);
        size_t mi = trend_month_of(t, c >= 0 ? t->used_month.name : t->frozen_before);
        struct trend_month *m = &t->months[mi];
        t->slots[i * t->max + t->n[i]++] = (struct trend_slot){.month = mi};
        if (c >= 0) {
            m->month = t->used_month;
            m->used[m->nused++] = i;
            t->used_before = t->used_month.start;
            t->used_stale = true;
        }
        if (c <= 0) {
            m->frozen[m->nfrozen++] = i;
            t->frozen_stale = true;
        }
    }
    return rc;
}

/* The first of ix[0..n) (team indexes in the order of their names)
 * whose team is name, n when none; hint: where the last one was (the rows
 * of an hour come in the order of the teams too). */
static size_t trend_find(const struct trend_reader *t, const size_t *ix, size_t n,
                         const char *name, size_t hint)
{
    size_t lo = 0, hi = n;
    if (hint < n && strcmp(t->teams[ix[hint]], name) == 0 &&
        (hint == 0 || strcmp(t->teams[ix[hint - 1]], name) != 0))
        return hint;
    while (lo < hi) { /* the first not before name */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(t->teams[ix[mid]], name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && strcmp(t->teams[ix[lo]], name) == 0 ? lo : n;
}

/* Steps st (bound; rows of team, quantity) and adds each quantity of a
 * team of ix[0..n) (those that show month mi) to its slot of mi, checked;
 * the rows of other teams are skipped, never summed (a team's month
 * before those it shows is not read for it). A listed team without a row
 * is an error (each had one when its months were found): a figure is
 * never silently 0. */
static enum gl_status trend_sums(struct trend_reader *t, sqlite3_stmt *st, size_t mi,
                                 const size_t *ix, size_t n, bool used, struct gl_error *err)
{
    const char *what = used ? "memory used (MiB·s)" : "frozen total (minor units)";
    bool *seen = gl_xcalloc(n + 1, sizeof *seen);
    enum gl_status rc = GL_OK;
    size_t hint = 0;
    bool row;
    while (!rc && !(rc = trend_step(t, st, &row, err)) && row) {
        const char *team = (const char *)sqlite3_column_text(st, 0);
        int64_t q = sqlite3_column_int64(st, 1);
        size_t k = trend_find(t, ix, n, team, hint);
        if (k < n)
            hint = k + 1;
        for (; !rc && k < n && strcmp(t->teams[ix[k]], team) == 0; k++) {
            struct trend_slot *sl = &t->slots[ix[k] * t->max];
            while (sl->month != mi)
                sl++;
            int64_t *sum = used ? &sl->used_sum : &sl->frozen_sum;
            seen[k] = true;
            if (__builtin_add_overflow(*sum, q, sum))
                rc = gl_error_set(err, GL_ERR_RUNTIME,
                                  "report: reading the trend of period %s: integer overflow: "
                                  "the %s of team \"%.300s\" in %s exceeds the 64-bit range "
                                  "(the stored figures hold implausible values)",
                                  t->p->name, what, team, t->months[mi].name);
        }
    }
    for (size_t k = 0; !rc && k < n; k++)
        if (!seen[k])
            rc = gl_error_set(err, GL_ERR_RUNTIME,
                              "report: reading the trend of period %s: no %s of team \"%.300s\" "
                              "in %s, which its months were found by", t->p->name, what,
                              t->teams[ix[k]], t->months[mi].name);
    sqlite3_reset(st);
    free(seen);
    return rc;
}

/* Month mi's figures into the slots of the teams that show it. */
static enum gl_status trend_month_read(struct trend_reader *t, size_t mi, struct gl_error *err)
{
    struct trend_month *m = &t->months[mi];
    sqlite3_stmt *st = t->st[TR_CLOSED];
    sqlite3_bind_text(st, 1, m->name, -1, SQLITE_STATIC);
    enum gl_status rc = trend_step(t, st, &m->closed, err);
    sqlite3_reset(st);
    m->closed = m->closed && strcmp(m->name, t->p->name) < 0;
    if (!rc && m->nused) {
        st = t->st[TR_USED];
        sqlite3_bind_int64(st, 1, m->month.start);
        sqlite3_bind_int64(st, 2, m->month.end < t->p->start ? m->month.end : t->p->start);
        rc = trend_sums(t, st, mi, m->used, m->nused, true, err);
    }
    if (!rc && m->nfrozen) {
        st = t->st[TR_FROZEN];
        sqlite3_bind_text(st, 1, m->name, -1, SQLITE_STATIC);
        rc = trend_sums(t, st, mi, m->frozen, m->nfrozen, false, err);
    }
    return rc;
}

static int trend_team_cmp(const void *a, const void *b)
{
    const struct trend_team *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

enum gl_status gl_query_trends(struct gl_store *s, const struct gl_period *p,
                               const char *const *teams, size_t nteams, size_t max,
                               struct gl_trend_row *rows, size_t *n, struct gl_error *err)
{
    struct trend_reader t = {.s = s, .p = p, .teams = teams, .nteams = nteams, .max = max,
                             .slots = gl_xcalloc(nteams * max + 1, sizeof *t.slots), .n = n};
    struct trend_team *order = gl_xcalloc(nteams + 1, sizeof *order);
    enum gl_status rc = GL_OK;
    memset(n, 0, nteams * sizeof *n);
    for (size_t i = 0; i < nteams; i++)
        order[i] = (struct trend_team){teams[i], i};
    qsort(order, nteams, sizeof *order, trend_team_cmp);
    for (int i = 0; i < TR_N && !rc; i++)
        rc = gl_store_prepare(s, trend_sql[i], &t.st[i], "report: reading the trend", err);
    for (size_t i = 0; !rc && i < nteams; i++)
        rc = trend_team_months(&t, order[i].i, err);
    for (size_t mi = 0; !rc && mi < t.nmonths; mi++)
        rc = trend_month_read(&t, mi, err);
    for (size_t i = 0; !rc && i < nteams; i++)
        for (size_t k = 0; k < n[i]; k++) { /* oldest first */
            const struct trend_slot *sl = &t.slots[i * max + n[i] - 1 - k];
            const struct trend_month *m = &t.months[sl->month];
            struct gl_trend_row *r = &rows[i * max + k];
            memset(r, 0, sizeof *r);
            snprintf(r->period, sizeof r->period, "%.7s", m->name);
            r->closed = m->closed;
            r->used = sl->used_sum;
            r->total_minor = sl->frozen_sum;
        }
    for (int i = 0; i < TR_N; i++)
        sqlite3_finalize(t.st[i]);
    for (size_t mi = 0; mi < t.nmonths; mi++) {
        free(t.months[mi].name);
        free(t.months[mi].used);
        free(t.months[mi].frozen);
    }
    free(t.months);
    free(t.frozen_before);
    free(t.slots);
    free(order);
    if (rc)
        memset(n, 0, nteams * sizeof *n);
    return rc;
}

enum gl_status gl_query_team_trend(struct gl_store *s, const struct gl_period *p,
                                   const char *team, size_t max, struct gl_trend_row *rows,
                                   size_t *n, struct gl_error *err)
{
    return gl_query_trends(s, p, &team, 1, max, rows, n, err);
}

enum gl_status gl_query_team_waste_hours(struct gl_store *s, const struct gl_period *p,
                                         const char *team, gl_usage_fn fn, void *ctx,
                                         struct gl_error *err)
{
    static const char sql[] =
        "SELECT u.cluster, u.model, u.hour, SUM(u.quantity)"
        " FROM usage_key_hour u"
        " WHERE u.hour >= ?1 AND u.hour < ?2 AND u.team = ?3 AND u.kind = '" GL_K_RESERVED_UNUSED "'"
        " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3";
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_query_period(s, sql, p->start, p->end, &st,
                                              "report: reading waste", err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 3, team, -1, SQLITE_STATIC);
    int sr;
    while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW) {
        struct gl_usage_row r = {.team = team,
                                 .cluster = (const char *)sqlite3_column_text(st, 0),
                                 .model = (const char *)sqlite3_column_text(st, 1),
                                 .hour = sqlite3_column_int64(st, 2),
                                 .a = sqlite3_column_int64(st, 3)};
        rc = fn(ctx, &r, err);
    }
    if (!rc && sr != SQLITE_DONE)
        rc = gl_usage_fail(s, p, "report: reading waste", err);
    sqlite3_finalize(st);
    return rc;
}

/* ---- cost per unit of work ---- */

/* A pod's workload, as gl_query_team_workloads folds it. */
#define WORKLOAD_COLS \
    "u.cluster, u.namespace, COALESCE(o.owner_kind, 'Pod'), COALESCE(o.owner_name, u.pod)"
#define WORKLOAD_JOIN \
    " LEFT JOIN pod_owner o ON o.cluster = u.cluster AND o.namespace = u.namespace" \
    "  AND o.pod = u.pod"

static enum gl_status work_read(struct gl_store *s, const struct gl_period *p, const char *sql,
                                bool units, gl_work_fn fn, void *ctx, const char *what,
                                struct gl_error *err)
{
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_query_period(s, sql, p->start, p->end, &st, what, err);
    if (rc)
        return rc;
    int sr;
    while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *t[5];
        for (int k = 0; k < 5; k++)
            t[k] = (const char *)sqlite3_column_text(st, k);
        struct gl_work_read r = {t[0], t[1], t[2], t[3], units ? NULL : t[4], units ? t[4] : NULL,
                                 units ? NULL : (const char *)sqlite3_column_text(st, 7),
                                 sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6)};
        rc = fn(ctx, &r, err);
    }
    if (!rc && sr != SQLITE_DONE)
        rc = gl_usage_fail(s, p, what, err);
    sqlite3_finalize(st);
    return rc;
}

enum gl_status gl_query_workload_used_hours(struct gl_store *s, const struct gl_period *p,
                                            gl_work_fn fn, void *ctx, struct gl_error *err)
{
    /* each hour at the model its device reported then (schema/010) */
    static const char sql[] =
        "SELECT " WORKLOAD_COLS ", COALESCE(m.model, d.model), u.hour, SUM(u.quantity), u.team"
        " FROM usage u JOIN device d ON d.id = u.device_id"
        " LEFT JOIN device_model_hour m ON m.hour = u.hour AND m.device_id = u.device_id"
        WORKLOAD_JOIN
        " WHERE u.hour >= ?1 AND u.hour < ?2 AND u.kind = '" GL_K_MEMORY_USED "' AND u.pod <> ''"
        " GROUP BY 1, 2, 3, 4, 5, 6, 8 ORDER BY 1, 2, 3, 4, 5, 6, 8";
    return work_read(s, p, sql, false, fn, ctx, "unit cost: reading memory used", err);
}

enum gl_status gl_query_workload_units(struct gl_store *s, const struct gl_period *p,
                                       gl_work_fn fn, void *ctx, struct gl_error *err)
{
    static const char sql[] =
        "SELECT " WORKLOAD_COLS ", u.unit, 0, SUM(u.units)"
        " FROM work_units u" WORKLOAD_JOIN
        " WHERE u.hour >= ?1 AND u.hour < ?2"
        " GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5";
    return work_read(s, p, sql, true, fn, ctx, "unit cost: reading units of work", err);
}

/* ---- advice (schema/013 pod_peak; its rows: query_peak.c) ---- */

enum gl_status gl_query_advise_missing(struct gl_store *s, const struct gl_period *p,
                                       int64_t *pod_hours, struct gl_error *err)
{
    static const char sql[] =
        "SELECT count(*) FROM (SELECT DISTINCT u.hour, u.cluster, u.namespace, u.pod"
        " FROM usage u WHERE u.hour >= ?1 AND u.hour < ?2 AND u.kind = '" GL_K_MEMORY_USED "'"
        "  AND u.pod <> '' AND NOT EXISTS (SELECT 1 FROM pod_peak k WHERE k.cluster = u.cluster"
        "   AND k.hour = u.hour AND k.namespace = u.namespace AND k.pod = u.pod))";
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_query_period(s, sql, p->start, p->end, &st,
                                              "advise: reading hours without peaks", err);
    if (rc)
        return rc;
    int sr = sqlite3_step(st);
    *pod_hours = sr == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if (sr != SQLITE_ROW)
        rc = gl_store_fail(s, "advise: reading hours without peaks", err);
    sqlite3_finalize(st);
    return rc;
}

enum gl_status gl_query_advise_sizes(struct gl_store *s, const struct gl_period *p,
                                     struct gl_fleet_size **out, size_t *n,
                                     struct gl_error *err)
{
    /* real devices only: an allocation pseudo-device's uuid is "node:<host>" */
    static const char sql[] =
        "SELECT DISTINCT m.model, d.gpu_i_profile, m.max_capacity_mib"
        " FROM device_model_hour m JOIN device d ON d.id = m.device_id"
        " WHERE m.hour >= ?1 AND m.hour < ?2 AND m.max_capacity_mib > 0"
        "  AND d.uuid NOT LIKE 'node:%'"
        " ORDER BY 1, 2, 3";
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_query_period(s, sql, p->start, p->end, &st,
                                              "advise: reading the fleet's GPU sizes", err);
    if (rc)
        return rc;
    size_t cap = 0;
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *out = gl_xrealloc(*out, cap * sizeof **out);
        }
        (*out)[(*n)++] = (struct gl_fleet_size){
            gl_strdup((const char *)sqlite3_column_text(st, 0)),
            gl_strdup((const char *)sqlite3_column_text(st, 1)), sqlite3_column_int64(st, 2)};
    }
    if (sr != SQLITE_DONE)
        rc = gl_store_fail(s, "advise: reading the fleet's GPU sizes", err);
    sqlite3_finalize(st);
    return rc;
}

void gl_fleet_sizes_free(struct gl_fleet_size *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(x[i].model);
        free(x[i].profile);
    }
    free(x);
}
