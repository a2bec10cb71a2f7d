/* store_peakday — the advice's daily groups built (store_peakday.h). A day
 * is built from the advice's own read of its rows (query_peak.c), so a
 * built day reads as its rows; gl_store_clear_peaks (store_peak.c) and the
 * schema's triggers unbuild it when its rows change. */
#include "store_peakday.h"
#include "store_sql.h"

#include <stdbool.h>

#include "query.h"
#include "query_dayfig.h"
#include "timeutil.h"
#include "util.h"

static const char built_sql[] = "SELECT 1 FROM pod_peak_day_built WHERE cluster = ?1 AND day = ?2";
static const char has_rows_sql[] =
    "SELECT 1 FROM pod_peak WHERE cluster = ?1 AND hour >= ?2 AND hour < ?2 + 86400 LIMIT 1";
/* what a day held before (?1 = cluster, [?2, ?3) = the day) */
static const char *const clear_sql[] = {
    "DELETE FROM pod_peak_day WHERE cluster = ?1 AND day >= ?2 AND day < ?3",
    "DELETE FROM node_peak_hour WHERE cluster = ?1 AND hour >= ?2 AND hour < ?3",
};
static const char group_sql[] =
    "INSERT INTO pod_peak_day (cluster, day, namespace, pod, device_id, model, capacity_mib,"
    " bucket, alloc_mib, alloc_ugpu, steps, peak_mib, first_hour)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
static const char node_sql[] =
    "INSERT INTO node_peak_hour (cluster, hour, hostname, model, capacity_mib, sum_peak, devices)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
/* OR REPLACE: a stamp already there (a day built by a concurrent writer
 * between the check and this transaction) is no failure */
static const char stamp_sql[] =
    "INSERT OR REPLACE INTO pod_peak_day_built (cluster, day) VALUES (?1, ?2)";

static const char what[] = "building the advice's daily groups";

struct build {
    struct gl_store *s;
    sqlite3_stmt *node;
};

/* A node-hour of the day's read, stored as read. */
static enum gl_status put_node(void *ctx, const struct gl_node_hour_read *h,
                               struct gl_error *err)
{
    struct build *b = ctx;
    sqlite3_stmt *st = b->node;
    sqlite3_bind_text(st, 1, h->cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, h->hour);
    sqlite3_bind_text(st, 3, h->hostname, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, h->model, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, h->capacity_mib);
    sqlite3_bind_int64(st, 6, h->sum_peak);
    sqlite3_bind_int64(st, 7, h->devices);
    return gl_store_put_row(b->s, st, what, err);
}

static enum gl_status put_groups(struct gl_store *s, int64_t day, const struct gl_peak_groups *g,
                                 struct gl_error *err)
{
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_prepare(s, group_sql, &st, what, err);
    for (size_t i = 0; !rc && i < g->n; i++) {
        const struct gl_peak_read *r = &g->g[i];
        sqlite3_bind_text(st, 1, r->cluster, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, day);
        sqlite3_bind_text(st, 3, r->ns, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, r->pod, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, r->device_id);
        sqlite3_bind_text(st, 6, r->model, -1, SQLITE_STATIC);
        const int64_t v[] = {r->capacity_mib, r->bucket, r->alloc_mib, r->alloc_ugpu,
                             r->steps,        r->peak_mib, r->hour};
        for (int k = 0; k < 7; k++)
            sqlite3_bind_int64(st, k + 7, v[k]);
        rc = gl_store_put_row(s, st, what, err);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The day's figures besides its groups (schema/014): what it held before
 * cleared, then its missing pod-hours and its GPU sizes from its rows, by
 * the read's own SQL (query_dayfig.h). ?1 = cluster, ?2 = day. */
static const char *const figures_sql[] = {
    "DELETE FROM pod_peak_day_figures WHERE cluster = ?1 AND day = ?2",
    "DELETE FROM pod_peak_day_size WHERE cluster = ?1 AND day = ?2",
    "INSERT INTO pod_peak_day_figures (cluster, day, missing_pod_hours) SELECT ?1, ?2, ("
        GL_DAYFIG_MISSING("u.hour >= ?2 AND u.hour < ?2 + 86400 AND u.cluster = ?1") ")",
    "INSERT INTO pod_peak_day_size (cluster, day, model, profile, capacity_mib) SELECT ?1, ?2, *"
    " FROM (" GL_DAYFIG_SIZES("d.cluster = ?1 AND m.hour >= ?2 AND m.hour < ?2 + 86400") ")",
};

static enum gl_status put_figures(struct gl_store *s, const char *cluster, int64_t day,
                                  struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    for (size_t k = 0; !rc && k < sizeof figures_sql / sizeof *figures_sql; k++) {
        sqlite3_stmt *st;
        if ((rc = gl_store_prepare(s, figures_sql[k], &st, what, err)))
            break;
        sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, day);
        rc = gl_store_run_once(s, st, what, err);
    }
    return rc;
}

/* Binds ?1 = cluster and ?2 = day to st, reset first. */
static void bind_day(sqlite3_stmt *st, const char *cluster, int64_t day)
{
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, day);
}

/* One day built in one transaction: what it held before cleared, its rows
 * read and stored as groups and node-hours, then its mark. */
static enum gl_status build_day(struct gl_store *s, sqlite3_stmt *stamp, const char *cluster,
                                int64_t day, struct gl_error *err)
{
    enum gl_status rc = gl_store_begin(s, err);
    if (rc)
        return rc;
    struct build b = {s, NULL};
    struct gl_peak_groups g = {0};
    for (size_t k = 0; !rc && k < sizeof clear_sql / sizeof *clear_sql; k++)
        rc = gl_store_clear_range(s, clear_sql[k], cluster, day, day + 86400, what, err);
    if (!rc && !(rc = gl_store_prepare(s, node_sql, &b.node, what, err)) &&
        !(rc = gl_query_peak_day_rows(s, cluster, day, put_node, &b, &g, err)) &&
        !(rc = put_groups(s, day, &g, err)) && !(rc = put_figures(s, cluster, day, err))) {
        bind_day(stamp, cluster, day);
        rc = gl_store_put_row(s, stamp, what, err);
    }
    sqlite3_finalize(b.node);
    gl_peak_groups_free(&g);
    return gl_store_finish(s, rc, err);
}

/* Is st's row (?1 = cluster, ?2 = day) there? */
static enum gl_status day_has(struct gl_store *s, sqlite3_stmt *st, const char *cluster,
                              int64_t day, bool *yes, struct gl_error *err)
{
    bind_day(st, cluster, day);
    int sr = sqlite3_step(st);
    *yes = sr == SQLITE_ROW;
    return sr == SQLITE_ROW || sr == SQLITE_DONE ? GL_OK : gl_store_fail(s, what, err);
}

enum gl_status gl_store_build_peak_days(struct gl_store *s, const char *cluster, int64_t before,
                                        int64_t *built, struct gl_error *err)
{
    int64_t end = gl_floor_to(before, 86400), n = 0;
    sqlite3_stmt *done = NULL, *rows = NULL, *stamp = NULL;
    enum gl_status rc;
    if (!(rc = gl_store_prepare(s, built_sql, &done, what, err)) &&
        !(rc = gl_store_prepare(s, has_rows_sql, &rows, what, err)) &&
        !(rc = gl_store_prepare(s, stamp_sql, &stamp, what, err)))
        for (int64_t day = end - GL_PEAK_DAYS_BACK * 86400; !rc && day < end; day += 86400) {
            bool is_built, has_rows;
            if ((rc = day_has(s, done, cluster, day, &is_built, err)) || is_built ||
                (rc = day_has(s, rows, cluster, day, &has_rows, err)) || !has_rows)
                continue;
            sqlite3_reset(done); /* no read open across the day's transaction */
            sqlite3_reset(rows);
            if (!(rc = build_day(s, stamp, cluster, day, err)))
                n++;
            else {
                char d[16];
                gl_date_format(day, d, sizeof d);
                gl_error_prefix(err, "day %s", d);
            }
        }
    sqlite3_finalize(done);
    sqlite3_finalize(rows);
    sqlite3_finalize(stamp);
    if (!rc && n)
        gl_log(GL_LOG_INFO, "built advice days cluster=%s days=%lld", cluster, (long long)n);
    if (built)
        *built = n;
    return rc;
}
