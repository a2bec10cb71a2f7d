/* query — typed reads of one period's rollups (see query.h). */
#include "query.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "summary.h"
#include "util.h"

enum gl_status gl_query_axis(struct gl_store *s, const struct gl_period *p,
                             struct gl_day_axis *ax, struct gl_error *err)
{
    static const char sql[] =
        "SELECT MIN(a), MAX(b) FROM ("
        " SELECT MIN(hour) AS a, MAX(hour) AS b FROM usage WHERE hour >= ?1 AND hour < ?2"
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
        " SUM(CASE kind WHEN 'memory_used' THEN quantity ELSE 0 END),"
        " SUM(CASE kind WHEN 'allocated' THEN quantity ELSE 0 END),"
        " SUM(CASE kind WHEN 'reserved_unused' THEN quantity ELSE 0 END)"
        " FROM usage WHERE hour >= ?1 AND hour < ?2 AND team = ?3"
        "  AND kind IN ('memory_used', 'allocated', 'reserved_unused')"
        " GROUP BY 1 ORDER BY 1";
    static const char pods_sql[] =
        "SELECT cluster, namespace, pod,"
        " SUM(CASE kind WHEN 'memory_used' THEN quantity ELSE 0 END) AS used,"
        " SUM(CASE kind WHEN 'allocated' THEN quantity ELSE 0 END) AS alloc,"
        " SUM(CASE kind WHEN 'reserved_unused' THEN quantity ELSE 0 END),"
        " MAX(CASE kind WHEN 'memory_used' THEN estimated ELSE 0 END),"
        " COUNT(*) OVER ()"
        " FROM usage WHERE hour >= ?1 AND hour < ?2 AND team = ?3 AND pod <> ''"
        "  AND kind IN ('memory_used', 'allocated', 'reserved_unused')"
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
    }
    free(fl->dev);
    memset(fl, 0, sizeof *fl);
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
        "SELECT u.cluster, d.model, u.team, SUM(u.quantity)"
        " FROM usage u JOIN device d ON d.id = u.device_id"
        " WHERE u.hour >= ?1 AND u.hour < ?2"
        "  AND u.kind IN ('memory_used', 'reserved_unused_billed')"
        " GROUP BY 1, 2, 3 HAVING SUM(u.quantity) <> 0 ORDER BY 3, 1, 2";
    memset(fl, 0, sizeof *fl);
    sqlite3_stmt *st = NULL;
    enum gl_status rc = GL_OK;
    int sr;
    if ((rc = gl_store_query_period(s, gl_summary_models_sql, p->start, p->end, &st, "summary",
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
    if ((rc = gl_store_query_period(s, gl_summary_devices_sql, p->start, p->end, &st, "summary",
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
        int64_t *v[] = {&d->capacity, &d->used, &d->reserved, &d->unattributed, &d->idle,
                        &d->excess};
        for (int k = 0; k < 6; k++)
            *v[k] = sqlite3_column_int64(st, 6 + k);
        d->unknown = sqlite3_column_int64(st, 12) > 0 || d->capacity == 0;
    }
    if (sr != SQLITE_DONE) {
        rc = gl_usage_fail(s, p, "summary per device", err);
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
