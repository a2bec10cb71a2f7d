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


/* ---- the shared read: prepare, bind, step each row, finalize ---- */

/* A parameter of a read after its bounds: text (NULL binds NULL) or an
 * integer. */
struct qarg {
    const char *text;
    int64_t v;
    bool is_text;
};
#define QTEXT(x) ((struct qarg){(x), 0, true})
#define QINT(x) ((struct qarg){NULL, (int64_t)(x), false})

/* One read: sql with ?1 and ?2 bound to p's bounds when p is set and the
 * args after them (from ?1 without p). what names it in errors (prep_what,
 * when set, a failed prepare). A failed step is gl_usage_fail's when usage
 * (a SUM of the read may pass int64), else gl_store_fail's. */
struct qread {
    const char *sql, *what, *prep_what;
    const struct gl_period *p;
    bool usage;
    int nargs;
    struct qarg arg[6];
};

/* Called per row of a read; a non-zero status stops it and is returned. */
typedef enum gl_status (*qrow_fn)(void *ctx, sqlite3_stmt *st, struct gl_error *err);

static enum gl_status read_rows(struct gl_store *s, const struct qread *q, qrow_fn row,
                                void *ctx, struct gl_error *err)
{
    sqlite3_stmt *st = NULL;
    const char *pw = q->prep_what ? q->prep_what : q->what;
    enum gl_status rc = q->p ? gl_store_query_period(s, q->sql, q->p->start, q->p->end, &st,
                                                     pw, err)
                             : gl_store_prepare(s, q->sql, &st, pw, err);
    if (rc)
        return rc;
    for (int i = 0, at = q->p ? 3 : 1; i < q->nargs; i++, at++)
        if (q->arg[i].is_text)
            sqlite3_bind_text(st, at, q->arg[i].text, -1, SQLITE_STATIC);
        else
            sqlite3_bind_int64(st, at, q->arg[i].v);
    int sr = SQLITE_DONE;
    while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW)
        rc = row(ctx, st, err);
    if (!rc && sr != SQLITE_DONE)
        rc = q->usage ? gl_usage_fail(s, q->p, q->what, err) : gl_store_fail(s, q->what, err);
    sqlite3_finalize(st);
    return rc;
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

/* The column readers: n text columns from first copied into *f[k], n
 * integer columns into *v[k]. */
static void texts_at(sqlite3_stmt *st, int first, char **const f[], int n)
{
    for (int k = 0; k < n; k++)
        *f[k] = gl_strdup(col_text(st, first + k));
}

static void ints_at(sqlite3_stmt *st, int first, int64_t *const v[], int n)
{
    for (int k = 0; k < n; k++)
        *v[k] = sqlite3_column_int64(st, first + k);
}

/* Which field of a gl_usage_row each column of a usage read fills. */
enum ucol { UC_TEAM, UC_CLUSTER, UC_MODEL, UC_KIND, UC_HOUR, UC_A, UC_B, UC_EST, UC_END };

/* A usage read handing rows to fn: cols ends with UC_END; team (may be
 * NULL) is the rows' team when no column gives it. */
struct usage_read {
    const enum ucol *cols;
    const char *team;
    gl_usage_fn fn;
    void *ctx;
};

static enum gl_status usage_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    const struct usage_read *u = ctx;
    struct gl_usage_row r = {.team = u->team};
    for (int i = 0; u->cols[i] != UC_END; i++) {
        switch (u->cols[i]) {
        case UC_TEAM: r.team = col_text(st, i); break;
        case UC_CLUSTER: r.cluster = col_text(st, i); break;
        case UC_MODEL: r.model = col_text(st, i); break;
        case UC_KIND: r.kind = sqlite3_column_int(st, i); break;
        case UC_HOUR: r.hour = sqlite3_column_int64(st, i); break;
        case UC_A: r.a = sqlite3_column_int64(st, i); break;
        case UC_B: r.b = sqlite3_column_int64(st, i); break;
        case UC_EST: r.estimated = sqlite3_column_int(st, i); break;
        case UC_END: break;
        }
    }
    return u->fn(u->ctx, &r, err);
}

/* A caller's callback and its context: fn is cast back to its type by the
 * row function that calls it. */
struct caller {
    void (*fn)(void);
    void *ctx;
};
#define CALLER(f, c) ((struct caller){(void (*)(void))(f), (c)})

/* Appends a zeroed element to array a of n elements: its address. */
#define PUSH(a, n)                                                                           \
    ((a) = gl_xrealloc((a), ((n) + 1) * sizeof *(a)), memset(&(a)[(n)], 0, sizeof *(a)),     \
     &(a)[(n)++])

/* Frees the n blocks of one record. */
static void free_each(void *const f[], size_t n)
{
    for (size_t k = 0; k < n; k++)
        free(f[k]);
}

/* A top-max list being read (the SQL's LIMIT keeps to max; max is the
 * room's guard): fill copies a row's columns into row i of rows (each
 * size bytes); *total the count of all rows (column total_col). */
struct top_read {
    void *rows;
    size_t size, *n, max;
    void (*fill)(void *row, sqlite3_stmt *st);
    int64_t *total;
    int total_col;
};

static enum gl_status top_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    struct top_read *t = ctx;
    if (*t->n < t->max) {
        t->fill((char *)t->rows + *t->n * t->size, st);
        ++*t->n;
        *t->total = sqlite3_column_int64(st, t->total_col);
    }
    return GL_OK;
}

/* The first row's integer columns into v (left as they are when there is
 * no row or the first column is NULL); *found says whether there was a
 * row. */
struct first_ints {
    int64_t *const *v;
    int n;
    bool found;
};

static enum gl_status first_ints_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    struct first_ints *f = ctx;
    if (!f->found && sqlite3_column_type(st, 0) != SQLITE_NULL)
        ints_at(st, 0, f->v, f->n);
    f->found = true;
    return GL_OK;
}

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
            const char *team = col_text(st, 0);
            gl_buf_printf(&where, "%s%.300s%s cluster %.200s, GPU model \"%.200s\", kind %s: ",
                          team[0] ? "team \"" : "all teams,", team, team[0] ? "\"," : "",
                          col_text(st, 1), col_text(st, 2), col_text(st, 3));
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
    int64_t a = p->start, b = p->end - 3600;
    struct first_ints f = {.v = (int64_t *const[]){&a, &b}, .n = 2};
    struct qread q = {.sql = sql, .what = "report: reading the period's hours", .p = p};
    enum gl_status rc = read_rows(s, &q, first_ints_row, &f, err);
    if (rc)
        return rc;
    ax->first = gl_floor_to(a, 86400);
    ax->n = (size_t)((gl_floor_to(b, 86400) - ax->first) / 86400 + 1);
    return GL_OK;
}

void gl_team_usage_free(struct gl_team_usage *u)
{
    for (struct gl_pod_row *r = u->pods; r && r < u->pods + u->npods; r++)
        free_each((void *[]){r->cluster, r->ns, r->pod}, 3);
    free(u->pods);
    free(u->days);
    memset(u, 0, sizeof *u);
}

/* A team's daily usage being read: the period, the team, the day axis. */
struct team_read {
    const struct gl_period *p;
    const char *team;
    const struct gl_day_axis *ax;
    struct gl_team_usage *u;
};

static enum gl_status team_day_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    struct team_read *t = ctx;
    struct gl_team_usage *u = t->u;
    int64_t i = (sqlite3_column_int64(st, 0) - t->ax->first) / 86400;
    if (i < 0 || (size_t)i >= t->ax->n)
        return GL_OK; /* cannot happen: the axis spans every usage hour */
    int64_t q[3] = {sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
                    sqlite3_column_int64(st, 3)};
    int64_t *day[3] = {&u->days[i].used, &u->days[i].allocated, &u->days[i].waste};
    int64_t *all[3] = {&u->used, &u->allocated, &u->waste};
    for (int k = 0; k < 3; k++)
        if (__builtin_add_overflow(*day[k], q[k], day[k]) ||
            __builtin_add_overflow(*all[k], q[k], all[k]))
            return gl_error_set(err, GL_ERR_RUNTIME,
                                "integer overflow: the daily usage (MiB·s) of team \"%.300s\" "
                                "in period %s exceed the 64-bit range (the stored usage holds "
                                "implausible samples)",
                                t->team, t->p->name);
    return GL_OK;
}

static void fill_pod(void *row, sqlite3_stmt *st)
{
    struct gl_pod_row *r = row;
    texts_at(st, 0, (char **const[]){&r->cluster, &r->ns, &r->pod}, 3);
    ints_at(st, 3, (int64_t *const[]){&r->used, &r->allocated, &r->waste}, 3);
    r->estimated = sqlite3_column_int(st, 6);
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
    struct team_read t = {.p = p, .team = team, .ax = ax, .u = u};
    struct qread daily = {.sql = daily_sql, .what = "report: reading daily usage", .p = p,
                          .usage = true, .nargs = 1, .arg = {QTEXT(team)}};
    struct qread pods = {.sql = pods_sql, .what = "report: reading pods", .p = p, .usage = true,
                         .nargs = 2, .arg = {QTEXT(team), QINT(max_pods)}};
    enum gl_status rc = read_rows(s, &daily, team_day_row, &t, err);
    if (!rc) {
        u->pods = gl_xcalloc(max_pods ? max_pods : 1, sizeof *u->pods);
        struct top_read top = {u->pods, sizeof *u->pods, &u->npods, max_pods, fill_pod,
                               &u->pods_total, 7};
        rc = read_rows(s, &pods, top_row, &top, err);
    }
    if (rc)
        gl_team_usage_free(u);
    return rc;
}

void gl_fleet_free(struct gl_fleet *fl)
{
    for (struct gl_fleet_model *m = fl->m; m && m < fl->m + fl->n; m++)
        free_each((void *[]){m->cluster, m->model, m->teams}, 3);
    free(fl->m);
    for (size_t i = 0; i < fl->nteams; i++)
        free(fl->teams[i]);
    free(fl->teams);
    for (struct gl_device_row *d = fl->dev; d && d < fl->dev + fl->ndev; d++) {
        free_each((void *[]){d->cluster, d->uuid, d->gpu_i_id, d->profile, d->model, d->node,
                             d->device, d->model_from},
                  8);
        for (size_t k = 0; k < d->nmodels; k++)
            free(d->models[k]);
        free(d->models);
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

static const char fleet_teams_sql[] =
    "SELECT cluster, model, team, SUM(quantity)"
    " FROM usage_key_hour"
    " WHERE hour >= ?1 AND hour < ?2"
    "  AND kind IN ('" GL_K_MEMORY_USED "', '" GL_K_RESERVED_UNUSED_BILLED "')"
    " GROUP BY 1, 2, 3 HAVING SUM(quantity) <> 0 ORDER BY 3, 1, 2";

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

static enum gl_status fleet_model_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    struct gl_fleet_model *m = fleet_model_for(ctx, col_text(st, 0), col_text(st, 1));
    for (int k = 0; k < GL_F_N; k++)
        m->v[k] = sqlite3_column_int64(st, k + 2);
    return GL_OK;
}

static enum gl_status fleet_device_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    struct gl_fleet *fl = ctx;
    struct gl_device_row *d = PUSH(fl->dev, fl->ndev);
    texts_at(st, 0,
             (char **const[]){&d->cluster, &d->uuid, &d->gpu_i_id, &d->profile, &d->model,
                              &d->node},
             6);
    size_t n = strlen(d->uuid) + strlen(d->gpu_i_id) + 2;
    d->device = gl_xcalloc(n, 1);
    snprintf(d->device, n, "%s%s%s", d->uuid, d->gpu_i_id[0] ? "/" : "", d->gpu_i_id);
    ints_at(st, 6,
            (int64_t *const[]){&d->capacity, &d->used, &d->rub, &d->reserved, &d->unattributed,
                               &d->idle, &d->excess},
            7);
    d->unknown = sqlite3_column_int64(st, 13) > 0 || d->capacity == 0;
    d->id = sqlite3_column_int64(st, 14);
    return GL_OK;
}

static enum gl_status fleet_change_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    struct gl_device_row *d = fleet_device(ctx, sqlite3_column_int64(st, 0));
    if (!d) /* a node's pseudo-device: no row of its own */
        return GL_OK;
    d->models = gl_xrealloc(d->models, (d->nmodels + 1) * sizeof *d->models);
    d->model_from = gl_xrealloc(d->model_from, (d->nmodels + 1) * sizeof *d->model_from);
    d->models[d->nmodels] = gl_strdup(col_text(st, 1));
    d->model_from[d->nmodels++] = sqlite3_column_int64(st, 2);
    return GL_OK;
}

static enum gl_status fleet_team_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    struct gl_fleet *fl = ctx;
    const char *team = col_text(st, 2);
    /* rows come in team order: a new team is the last one or new */
    if (!fl->nteams || strcmp(fl->teams[fl->nteams - 1], team) != 0) {
        fl->teams = gl_xrealloc(fl->teams, (fl->nteams + 1) * sizeof *fl->teams);
        fl->teams[fl->nteams++] = gl_strdup(team);
    }
    struct gl_fleet_model *m = fleet_model_for(fl, col_text(st, 0), col_text(st, 1));
    m->teams = gl_xrealloc(m->teams, (m->nteams + 1) * sizeof *m->teams);
    m->teams[m->nteams++] =
        (struct gl_fleet_team){(int)fl->nteams - 1, sqlite3_column_int64(st, 3)};
    return GL_OK;
}

enum gl_status gl_query_fleet(struct gl_store *s, const struct gl_period *p, struct gl_fleet *fl,
                              struct gl_error *err)
{
    /* the fleet's reads in order: each fills its part of fl */
    const struct {
        struct qread q;
        qrow_fn row;
    } reads[] = {
        {{.sql = models_sql, .what = "summary per model", .prep_what = "summary", .p = p,
          .usage = true},
         fleet_model_row},
        {{.sql = devices_sql, .what = "summary per device", .prep_what = "summary", .p = p,
          .usage = true},
         fleet_device_row},
        {{.sql = model_changes_sql, .what = "summary: model changes", .p = p},
         fleet_change_row},
        {{.sql = fleet_teams_sql, .what = "report: fleet teams", .p = p, .usage = true},
         fleet_team_row},
    };
    memset(fl, 0, sizeof *fl);
    enum gl_status rc = GL_OK;
    for (size_t i = 0; !rc && i < sizeof reads / sizeof *reads; i++)
        rc = read_rows(s, &reads[i].q, reads[i].row, fl, err);
    if (rc) /* nothing half-read is handed back */
        gl_fleet_free(fl);
    return rc;
}

static enum gl_status model_change_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    const struct caller *c = ctx;
    ((void (*)(void *, const char *, const char *, int64_t))c->fn)(
        c->ctx, col_text(st, 0), col_text(st, 1), sqlite3_column_int64(st, 2));
    return GL_OK;
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
    struct caller m = CALLER(fn, ctx);
    struct qread q = {.sql = sql, .what = "reading model changes", .nargs = 1,
                      .arg = {QTEXT(cluster)}};
    return read_rows(s, &q, model_change_row, &m, err);
}

static enum gl_status billable_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    const struct caller *c = ctx;
    return ((enum gl_status(*)(void *, const char *, int64_t, struct gl_error *))c->fn)(
        c->ctx, col_text(st, 0), sqlite3_column_int64(st, 1), err);
}

enum gl_status gl_query_billable_hours(struct gl_store *s,
                                       enum gl_status (*fn)(void *ctx, const char *model,
                                                            int64_t hour, struct gl_error *err),
                                       void *ctx, struct gl_error *err)
{
    /* every stored hour: no period bounds */
    static const char sql[] =
        "SELECT DISTINCT model, hour FROM usage_key_hour"
        " WHERE kind IN ('" GL_K_MEMORY_USED "', '" GL_K_RESERVED_UNUSED_BILLED "', '" GL_K_IDLE "', '" GL_K_RESERVED "',"
        " '" GL_K_UNATTRIBUTED "') ORDER BY model, hour";
    struct caller b = CALLER(fn, ctx);
    struct qread q = {.sql = sql, .what = "reading models"};
    return read_rows(s, &q, billable_row, &b, err);
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
    static const enum ucol cols[] = {UC_TEAM, UC_CLUSTER, UC_MODEL, UC_KIND,
                                     UC_HOUR, UC_A,       UC_EST,   UC_END};
    struct usage_read u = {.cols = cols, .fn = fn, .ctx = ctx};
    /* ?3, ?4: the platform team that idle and overhead go to, if any;
     * ?5 to ?8: the line kinds of memory used, reserved-unused, idle and
     * overhead shares */
    struct qread q = {.sql = sql, .what = "reading usage", .p = p, .usage = true, .nargs = 6,
                      .arg = {QTEXT(platform_team ? platform_team : ""),
                              QINT(platform_team != NULL), QINT(GL_LINE_MEMORY_USED),
                              QINT(GL_LINE_RESERVED_UNUSED), QINT(GL_LINE_IDLE_SHARE),
                              QINT(GL_LINE_OVERHEAD_SHARE)}};
    return read_rows(s, &q, usage_row, &u, err);
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
    static const enum ucol cols[] = {UC_CLUSTER, UC_MODEL, UC_HOUR, UC_A, UC_B, UC_END};
    struct usage_read u = {.cols = cols, .fn = fn, .ctx = ctx};
    struct qread q = {.sql = sql, .what = "reading idle", .p = p, .usage = true};
    return read_rows(s, &q, usage_row, &u, err);
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
    static const enum ucol cols[] = {UC_TEAM, UC_CLUSTER, UC_MODEL, UC_KIND, UC_HOUR, UC_A, UC_END};
    struct usage_read u = {.cols = cols, .fn = fn, .ctx = ctx};
    struct qread q = {.sql = sql, .what = "reading allocation", .p = p, .usage = true, .nargs = 5,
                      .arg = {QINT(GL_INFO_ALLOCATED), QINT(GL_INFO_ALLOCATED_GPU),
                              QINT(GL_INFO_BUSY_PPM), QINT(GL_INFO_BUSY_STEPS),
                              QINT(GL_INFO_WASTE)}};
    return read_rows(s, &q, usage_row, &u, err);
}

int64_t gl_query_model_capacity(struct gl_store *s, const char *model)
{
    int64_t cap = 0;
    if (gl_store_cap_memo(s, model, &cap))
        return cap;
    struct first_ints f = {.v = (int64_t *const[]){&cap}, .n = 1};
    struct qread q = {.sql = "SELECT MAX(max_capacity_mib) FROM device WHERE model = ?1 "
                             "AND gpu_i_id = '' AND uuid NOT LIKE 'node:%'",
                      .what = "reading capacities", .nargs = 1, .arg = {QTEXT(model)}};
    struct gl_error ignored; /* no capacity known reads as 0 */
    if (read_rows(s, &q, first_ints_row, &f, &ignored))
        return 0;
    gl_store_cap_remember(s, model, cap);
    return cap;
}

static enum gl_status anomaly_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    struct gl_anomaly_list *out = ctx;
    struct gl_anomaly *a = PUSH(out->items, out->n);
    a->kind = (enum gl_anomaly_kind)sqlite3_column_int(st, 0);
    texts_at(st, 1,
             (char **const[]){&a->cluster, &a->ns, &a->pod, &a->team, &a->node, &a->device,
                              &a->model},
             7);
    ints_at(st, 8, (int64_t *const[]){&a->first_seen, &a->last_seen, &a->mib_s}, 3);
    return GL_OK;
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
    struct qread q = {.sql = sql, .what = "reading anomalies", .p = p, .usage = true, .nargs = 3,
                      .arg = {QTEXT(team), QINT(GL_ANOMALY_UNALLOCATED_USE),
                              QINT(GL_ANOMALY_EXCESS_DEVICES)}};
    enum gl_status rc = read_rows(s, &q, anomaly_row, out, err);
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
 * remembers the previous team found. max: the waits kept of each. */
struct pending_dest {
    struct gl_pending *fleet, *outs;
    const char *const *teams;
    size_t nteams, last, max;
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
    struct gl_pending_key *k = PUSH(out->k, out->nk);
    texts_at(st, 0, (char **const[]){&k->team, &k->cluster, &k->model}, 3);
    k->gpu_us = sqlite3_column_int64(st, 3);
}

static enum gl_status pending_key_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    struct pending_dest *d = ctx;
    struct gl_pending *t = team_of(d, col_text(st, 0));
    if (d->fleet)
        key_append(d->fleet, st);
    if (t)
        key_append(t, st);
    return GL_OK;
}

static void wait_append(struct gl_pending *out, sqlite3_stmt *st, int pods_col)
{
    struct gl_pending_pod *x = PUSH(out->p, out->np);
    texts_at(st, 0, (char **const[]){&x->cluster, &x->ns, &x->pod, &x->team}, 4);
    x->first_seen = sqlite3_column_int64(st, 4);
    x->last_seen = sqlite3_column_int64(st, 5);
    x->waited_s = x->last_seen - x->first_seen;
    x->gpu_us = sqlite3_column_int64(st, 6);
    out->pods = sqlite3_column_int64(st, pods_col);
}

static enum gl_status pending_wait_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    struct pending_dest *d = ctx;
    if (d->fleet && sqlite3_column_int64(st, 10) <= (sqlite3_int64)d->max)
        wait_append(d->fleet, st, 8);
    struct gl_pending *t = team_of(d, col_text(st, 3));
    if (t && sqlite3_column_int64(st, 9) <= (sqlite3_int64)d->max)
        wait_append(t, st, 7);
    return GL_OK;
}

/* The longest waits, of the fleet and of each team, from one pass over the
 * month's rows (the pages read both): each pod that waited ranked in the
 * fleet (longest first, then GPU time, cluster, namespace, pod, team) and
 * within its team by the same order, so a team's waits keep the fleet's
 * order; the rows within either top max, in the fleet's order. */
static const char pending_waits_sql[] =
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
    struct pending_dest d = {fleet, outs, teams, nteams, 0, max};
    struct qread keys = {.sql = pending_keys_sql, .what = "reading pending GPUs", .p = p,
                         .usage = true};
    struct qread waits = {.sql = pending_waits_sql, .what = "reading pending pods", .p = p,
                          .nargs = 3,
                          .arg = {QINT(max), QINT(fleet != NULL), QINT(nteams > 0)}};
    enum gl_status rc = read_rows(s, &keys, pending_key_row, &d, err);
    if (!rc)
        rc = read_rows(s, &waits, pending_wait_row, &d, err);
    if (rc && fleet)
        gl_pending_free(fleet);
    for (size_t i = 0; rc && i < nteams; i++)
        gl_pending_free(&outs[i]);
    return rc;
}

void gl_pending_free(struct gl_pending *x)
{
    for (struct gl_pending_key *k = x->k; k && k < x->k + x->nk; k++)
        free_each((void *[]){k->team, k->cluster, k->model}, 3);
    for (struct gl_pending_pod *w = x->p; w && w < x->p + x->np; w++)
        free_each((void *[]){w->cluster, w->ns, w->pod, w->team}, 4);
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

/* One integer of the first row of q (read with no period): *v (0 when
 * there is no row) and *found (may be NULL). */
static enum gl_status first_int(struct gl_store *s, const struct qread *q, int64_t *v,
                                bool *found, struct gl_error *err)
{
    *v = 0;
    struct first_ints f = {.v = (int64_t *const[]){v}, .n = 1};
    enum gl_status rc = read_rows(s, q, first_ints_row, &f, err);
    if (found)
        *found = !rc && f.found;
    return rc;
}

static enum gl_status int64_by_key(struct gl_store *s, const char *sql, const char *key,
                                   int64_t *v, bool *found, const char *what,
                                   struct gl_error *err)
{
    struct qread q = {.sql = sql, .what = what, .nargs = 1, .arg = {QTEXT(key)}};
    return first_int(s, &q, v, found, err);
}

/* A cluster's hours read for gl_query_cluster_hours: refused, of the
 * second table. */
struct hour_read {
    gl_hour_fn fn;
    void *ctx;
    bool refused;
};

static enum gl_status hour_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    struct hour_read *h = ctx;
    return h->fn(h->ctx, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), h->refused,
                 col_text(st, 2), err);
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
    enum gl_status rc = GL_OK;
    for (int k = 0; !rc && k < 2; k++) {
        struct hour_read h = {fn, ctx, k == 1};
        struct qread q = {.sql = sql[k], .what = "reading the collected hours", .nargs = 3,
                          .arg = {QINT(from), QINT(to), QTEXT(cluster)}};
        rc = read_rows(s, &q, hour_row, &h, err);
    }
    return rc;
}

enum gl_status gl_query_period_collected(struct gl_store *s, const struct gl_period *p,
                                         bool *any, struct gl_error *err)
{
    int64_t one;
    struct qread q = {.sql = "SELECT 1 FROM collected_hour WHERE hour >= ?1 AND hour < ?2 "
                             "LIMIT 1",
                      .what = "reading the collected hours", .p = p};
    return first_int(s, &q, &one, any, err);
}

static enum gl_status data_span_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    struct gl_data_span *out = ctx;
    out->any_hour = sqlite3_column_type(st, 0) != SQLITE_NULL;
    ints_at(st, 0, (int64_t *const[]){&out->first_hour, &out->last_hour}, 2);
    const char *a = col_text(st, 2), *b = col_text(st, 3);
    snprintf(out->first_closed, sizeof out->first_closed, "%s", a ? a : "");
    snprintf(out->last_closed, sizeof out->last_closed, "%s", b ? b : "");
    return GL_OK;
}

enum gl_status gl_query_data_span(struct gl_store *s, struct gl_data_span *out,
                                  struct gl_error *err)
{
    memset(out, 0, sizeof *out);
    /* one row always: every column is an aggregate */
    struct qread q = {.sql = "SELECT (SELECT MIN(hour) FROM collected_hour), "
                             "(SELECT MAX(hour) FROM collected_hour), "
                             "(SELECT MIN(period) FROM closed_period), "
                             "(SELECT MAX(period) FROM closed_period)",
                      .what = "reading the collected hours"};
    return read_rows(s, &q, data_span_row, out, err);
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
    int64_t one;
    struct qread q = {.sql = "SELECT 1 FROM collected_hour WHERE cluster = ?1 AND hour < ?2 "
                             "AND samples > 0 LIMIT 1",
                      .what = "reading collected hours", .nargs = 2,
                      .arg = {QTEXT(cluster), QINT(before)}};
    return first_int(s, &q, &one, had, err);
}

/* A frozen-rows read: the period (for errors) and the caller's callback. */
struct frozen_read {
    struct gl_store *s;
    const char *period;
    gl_frozen_row_fn fn;
    void *ctx;
};

static enum gl_status frozen_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    struct frozen_read *f = ctx;
    struct gl_frozen_row r = {
        .team = col_text(st, 0),
        .cluster = col_text(st, 1),
        .model = col_text(st, 2),
        .price_key = col_text(st, 4),
        .day = sqlite3_column_int64(st, 5),
        .mib_s = sqlite3_column_int64(st, 6),
        .billed_minor = sqlite3_column_int64(st, 7),
        .unit_price = col_text(st, 8),
        .gbh_nano = sqlite3_column_int64(st, 9),
        .corrected_period = col_text(st, 10),
        .price_id = col_text(st, 11),
    };
    /* the kind's name is the store's format: an enum from here on */
    const char *kname = col_text(st, 3);
    enum gl_line_kind kind;
    if (!gl_line_kind_parse(kname, &kind))
        return gl_error_set(err, GL_ERR_RUNTIME,
                            "%s: a frozen row of period %s has the unknown kind \"%.100s\"",
                            sqlite3_db_filename(gl_store_db(f->s), "main"), f->period, kname);
    r.kind = (int)kind;
    return f->fn(f->ctx, &r, err);
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
    struct frozen_read f = {s, period, fn, ctx};
    struct qread q = {.sql = corrections ? prior_sql : frozen_sql, .what = "reading frozen rows",
                      .nargs = corrections ? 2 : 1, .arg = {QTEXT(period), QTEXT(corrections)}};
    return read_rows(s, &q, frozen_row, &f, err);
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
        *csv = gl_strdup(col_text(st, 0));
    else
        rc = gl_error_set(err, GL_ERR_STATE, "period %s is not closed", period);
    sqlite3_finalize(st);
    return rc;
}

static enum gl_status invoice_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    const struct caller *c = ctx;
    ((void (*)(void *, const char *, const char *, const char *))c->fn)(
        c->ctx, col_text(st, 0), col_text(st, 1), col_text(st, 2));
    return GL_OK;
}

enum gl_status gl_query_frozen_invoices(struct gl_store *s, const char *period,
                                        const char *team,
                                        void (*fn)(void *ctx, const char *team,
                                                   const char *json, const char *md),
                                        void *ctx, struct gl_error *err)
{
    static const char sql[] = "SELECT team, json, md FROM frozen_invoice WHERE period = ?1"
                              " AND (?2 IS NULL OR team = ?2) ORDER BY team";
    struct caller r = CALLER(fn, ctx);
    struct qread q = {
        .sql = sql, .what = "reading frozen invoices", .nargs = 2, .arg = {QTEXT(period), QTEXT(team)}};
    return read_rows(s, &q, invoice_row, &r, err);
}

/* ---- the output state ---- */

enum gl_status gl_query_data_version(struct gl_store *s, const char *period, int64_t *v,
                                     struct gl_error *err)
{
    return int64_by_key(s, "SELECT version FROM data_version WHERE period = ?", period, v, NULL,
                        "reading the data version", err);
}

static enum gl_status device_seen_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    const struct caller *c = ctx;
    const char *cols[8];
    for (int i = 0; i < 8; i++)
        cols[i] = col_text(st, i);
    ((void (*)(void *, const char *const *))c->fn)(c->ctx, cols);
    return GL_OK;
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
    struct caller r = CALLER(fn, ctx);
    struct qread q = {.sql = sql, .what = "reading devices for the output state", .p = p};
    return read_rows(s, &q, device_seen_row, &r, err);
}

void gl_output_state_clear(struct gl_output_state *o)
{
    free_each((void *[]){o->closed, o->devices, o->prices, o->config, o->files}, 5);
    memset(o, 0, sizeof *o);
}

/* The output state's one row (a primary key's). */
struct output_state_read {
    struct gl_output_state *out;
    bool *found;
};

static enum gl_status output_state_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    struct output_state_read *r = ctx;
    struct gl_output_state *out = r->out;
    *r->found = true;
    out->data_version = sqlite3_column_int64(st, 0);
    texts_at(st, 1,
             (char **const[]){&out->closed, &out->devices, &out->prices, &out->config,
                              &out->files},
             5);
    return GL_OK;
}

enum gl_status gl_query_output_state(struct gl_store *s, const char *out_dir, const char *period,
                                     struct gl_output_state *out, bool *found,
                                     struct gl_error *err)
{
    memset(out, 0, sizeof *out);
    *found = false;
    struct output_state_read r = {out, found};
    struct qread q = {.sql = "SELECT data_version, closed, devices, prices, config, files"
                             " FROM output_state WHERE out_dir = ? AND period = ?",
                      .what = "reading the output state", .nargs = 2,
                      .arg = {QTEXT(out_dir), QTEXT(period)}};
    return read_rows(s, &q, output_state_row, &r, err);
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
    return gl_store_finish(s, gl_store_run_once(s, st, "recording the output state", err), err);
}

static enum gl_status period_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    (void)err;
    const struct caller *c = ctx;
    const char *name = col_text(st, 0);
    if (name)
        ((void (*)(void *, const char *))c->fn)(c->ctx, name);
    return GL_OK;
}

enum gl_status gl_query_known_periods(struct gl_store *s,
                                      void (*fn)(void *ctx, const char *period), void *ctx,
                                      struct gl_error *err)
{
    struct caller r = CALLER(fn, ctx);
    struct qread q = {.sql = "SELECT period FROM data_version UNION SELECT period FROM "
                             "closed_period ORDER BY 1",
                      .what = "reading the periods with data"};
    return read_rows(s, &q, period_row, &r, err);
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

static void fill_workload(void *row, sqlite3_stmt *st)
{
    struct gl_workload_row *r = row;
    texts_at(st, 0, (char **const[]){&r->cluster, &r->ns, &r->kind, &r->name}, 4);
    ints_at(st, 4, (int64_t *const[]){&r->used, &r->allocated, &r->waste, &r->pods}, 4);
    r->estimated = sqlite3_column_int(st, 8);
}

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
    struct top_read w = {out->w, sizeof *out->w, &out->n, max, fill_workload, &out->total, 9};
    struct qread q = {.sql = sql, .what = "report: reading workloads", .p = p, .usage = true,
                      .nargs = 2, .arg = {QTEXT(team), QINT(max)}};
    enum gl_status rc = read_rows(s, &q, top_row, &w, err);
    if (rc)
        gl_team_workloads_free(out);
    return rc;
}

void gl_team_workloads_free(struct gl_team_workloads *w)
{
    for (struct gl_workload_row *r = w->w; r && r < w->w + w->n; r++)
        free_each((void *[]){r->cluster, r->ns, r->kind, r->name}, 4);
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


/* A team's reserved-unused MiB·s per cluster, model and hour. */
static const char waste_sql[] =
    "SELECT u.cluster, u.model, u.hour, SUM(u.quantity)"
    " FROM usage_key_hour u"
    " WHERE u.hour >= ?1 AND u.hour < ?2 AND u.team = ?3 AND u.kind = '" GL_K_RESERVED_UNUSED "'"
    " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3";

enum gl_status gl_query_team_waste_hours(struct gl_store *s, const struct gl_period *p,
                                         const char *team, gl_usage_fn fn, void *ctx,
                                         struct gl_error *err)
{
    static const enum ucol cols[] = {UC_CLUSTER, UC_MODEL, UC_HOUR, UC_A, UC_END};
    struct usage_read u = {.cols = cols, .team = team, .fn = fn, .ctx = ctx};
    struct qread q = {.sql = waste_sql, .what = "report: reading waste", .p = p, .usage = true,
                      .nargs = 1, .arg = {QTEXT(team)}};
    return read_rows(s, &q, usage_row, &u, err);
}

/* ---- cost per unit of work ---- */

/* A pod's workload, as gl_query_team_workloads folds it. */
#define WORKLOAD_COLS \
    "u.cluster, u.namespace, COALESCE(o.owner_kind, 'Pod'), COALESCE(o.owner_name, u.pod)"
#define WORKLOAD_JOIN \
    " LEFT JOIN pod_owner o ON o.cluster = u.cluster AND o.namespace = u.namespace" \
    "  AND o.pod = u.pod"

/* A work read: units (column 4 a unit, no team) or memory used (column 4
 * a model, 7 the team). */
struct work_read {
    bool units;
    gl_work_fn fn;
    void *ctx;
};

static enum gl_status work_row(void *ctx, sqlite3_stmt *st, struct gl_error *err)
{
    const struct work_read *w = ctx;
    const char *t[5];
    for (int k = 0; k < 5; k++)
        t[k] = col_text(st, k);
    struct gl_work_read r = {t[0], t[1], t[2], t[3], w->units ? NULL : t[4],
                             w->units ? t[4] : NULL, w->units ? NULL : col_text(st, 7),
                             sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6)};
    return w->fn(w->ctx, &r, err);
}

static enum gl_status work_read(struct gl_store *s, const struct gl_period *p, const char *sql,
                                bool units, gl_work_fn fn, void *ctx, const char *what,
                                struct gl_error *err)
{
    struct work_read w = {units, fn, ctx};
    struct qread q = {.sql = sql, .what = what, .p = p, .usage = true};
    return read_rows(s, &q, work_row, &w, err);
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

/* gl_query_advise_missing, gl_query_advise_sizes: query_dayfig.c */
