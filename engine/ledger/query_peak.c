/* query_peak — the advice's read of pod_peak (schema/013), summed while it
 * is read (query.h says what is summed). The rows come in the order of the
 * table's hour index, so nothing is sorted in SQLite's memory: a month of
 * rows costs a month of reading, but only the groups are held. */
#include "query.h"
#include "store_sql.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinds.h"
#include "util.h"

static const char SEP[] = "\x1f";

/* model and capacity of the hour; rows of one (hour, cluster, namespace,
 * pod, device) follow each other (the order of the pod_peak_hour index) */
static const char rows_sql[] =
    "SELECT k.hour, k.cluster, k.namespace, k.pod, k.device_id,"
    " coalesce(o.owner_kind, ''), coalesce(o.owner_name, ''),"
    " d.uuid, d.gpu_i_id, d.gpu_i_profile, coalesce(m.model, d.model), d.hostname,"
    " coalesce(m.max_capacity_mib, d.max_capacity_mib),"
    " k.bucket, k.steps, k.peak_mib, k.alloc_mib, k.alloc_ugpu"
    " FROM pod_peak k INDEXED BY pod_peak_hour JOIN device d ON d.id = k.device_id"
    " LEFT JOIN device_model_hour m ON m.hour = k.hour AND m.device_id = k.device_id"
    " LEFT JOIN pod_owner o ON o.cluster = k.cluster AND o.namespace = k.namespace"
    "  AND o.pod = k.pod"
    " WHERE k.hour >= ?1 AND k.hour < ?2"
    " ORDER BY k.hour, k.cluster, k.namespace, k.pod, k.device_id, k.bucket";

/* the pod's used memory that hour on that device is in usage under one
 * team (its labels at the hour) */
static const char team_sql[] =
    "SELECT u.team FROM usage u WHERE u.hour = ?1 AND u.cluster = ?2 AND u.namespace = ?3"
    " AND u.pod = ?4 AND u.device_id = ?5 AND u.kind = '" GL_K_MEMORY_USED "'"
    " ORDER BY u.quantity DESC, u.team LIMIT 1";

struct scan {
    const int64_t *cuts;
    size_t ncuts;
    struct gl_peak_groups *out;
    struct gl_intern *keys; /* group keys: id = index into out->g */
    size_t cap;
    struct gl_buf key;
    gl_node_hour_fn fn;
    void *ctx;
    /* the current hour's node-hours */
    int64_t hour;
    struct gl_intern *nkeys, *ndevs; /* node keys; node × uuid */
    struct gl_node_hour_read *nh;
    size_t nnh, capnh;
    /* the current (hour, pod, device) run: its identity (interned strings,
     * compared by address) and its peak */
    bool in_run;
    const char *run_cluster, *run_ns, *run_pod;
    int64_t run_dev;
    int32_t run_nh;
    int64_t run_peak;
};

/* The groups' strings are held once, whatever the number of rows. */
static const char *str(struct gl_peak_groups *o, const char *s)
{
    return gl_intern_str(o->strs, gl_intern_xget(o->strs, s));
}

/* The run's peak joins its node-hour's sum. */
static enum gl_status end_run(struct scan *x, struct gl_error *err)
{
    bool counted = x->in_run && x->run_nh >= 0;
    x->in_run = false;
    if (!counted)
        return GL_OK;
    struct gl_node_hour_read *h = &x->nh[x->run_nh];
    if (__builtin_add_overflow(h->sum_peak, x->run_peak, &h->sum_peak))
        return gl_error_set(err, GL_ERR_RUNTIME, "integer overflow: the pods' peaks on node %.300s",
                            h->hostname);
    return GL_OK;
}

/* The hour's node-hours to the caller, then forgotten. */
static enum gl_status end_hour(struct scan *x, struct gl_error *err)
{
    enum gl_status rc = end_run(x, err);
    for (size_t i = 0; !rc && i < x->nnh; i++)
        rc = x->fn(x->ctx, &x->nh[i], err);
    x->nnh = 0;
    gl_intern_free(x->nkeys);
    gl_intern_free(x->ndevs);
    x->nkeys = gl_intern_new();
    x->ndevs = gl_intern_new();
    return rc;
}

/* A new run starts at g's row: its node-hour (whole GPUs of known capacity
 * only), with the device counted once per node-hour. */
static void start_run(struct scan *x, const struct gl_peak_read *g, int64_t hour)
{
    x->in_run = true;
    x->run_cluster = g->cluster;
    x->run_ns = g->ns;
    x->run_pod = g->pod;
    x->run_dev = g->device_id;
    x->run_peak = 0;
    x->run_nh = -1;
    if (g->profile[0] || g->capacity_mib <= 0)
        return;
    gl_buf_reset(&x->key);
    gl_buf_printf(&x->key, "%s%s%s%s%s%s%lld", g->cluster, SEP, g->hostname, SEP, g->model, SEP,
                  (long long)g->capacity_mib);
    int32_t id = gl_intern_xget(x->nkeys, x->key.data);
    if ((size_t)id == x->nnh) {
        if (x->nnh == x->capnh) {
            x->capnh = x->capnh ? 2 * x->capnh : 64;
            x->nh = gl_xrealloc(x->nh, x->capnh * sizeof *x->nh);
        }
        x->nh[x->nnh++] = (struct gl_node_hour_read){
            .hour = hour, .cluster = g->cluster, .hostname = g->hostname, .model = g->model,
            .capacity_mib = g->capacity_mib};
    }
    x->run_nh = id;
    gl_buf_reset(&x->key);
    gl_buf_printf(&x->key, "%d%s%s", id, SEP, g->uuid);
    int32_t before = gl_intern_count(x->ndevs);
    gl_intern_xget(x->ndevs, x->key.data);
    if (gl_intern_count(x->ndevs) > before)
        x->nh[id].devices++;
}

/* The group of the row: found by its key, or added with its strings. */
static struct gl_peak_read *group_of(struct scan *x, sqlite3_stmt *st, int64_t hour)
{
    const char *t[18];
    for (int i = 1; i < 12; i++)
        t[i] = (const char *)sqlite3_column_text(st, i);
    int64_t seg = 0;
    for (size_t i = 0; i < x->ncuts; i++)
        seg += x->cuts[i] <= hour;
    gl_buf_reset(&x->key);
    gl_buf_printf(&x->key, "%s%s%s%s%s%s%lld%s%s%s%lld%s%lld%s%lld%s%lld%s%lld", t[1], SEP, t[2],
                  SEP, t[3], SEP, (long long)sqlite3_column_int64(st, 4), SEP, t[10], SEP,
                  (long long)sqlite3_column_int64(st, 12), SEP,
                  (long long)sqlite3_column_int64(st, 13), SEP,
                  (long long)sqlite3_column_int64(st, 16), SEP,
                  (long long)sqlite3_column_int64(st, 17), SEP, (long long)seg);
    int32_t id = gl_intern_xget(x->keys, x->key.data);
    struct gl_peak_groups *o = x->out;
    if ((size_t)id < o->n)
        return &o->g[id];
    if (o->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 256;
        o->g = gl_xrealloc(o->g, x->cap * sizeof *o->g);
    }
    struct gl_peak_read *g = &o->g[o->n++];
    *g = (struct gl_peak_read){
        .hour = hour, .cluster = str(o, t[1]), .ns = str(o, t[2]), .pod = str(o, t[3]),
        .team = "", .owner_kind = str(o, t[5]), .owner_name = str(o, t[6]),
        .uuid = str(o, t[7]), .instance = str(o, t[8]), .profile = str(o, t[9]),
        .model = str(o, t[10]), .hostname = str(o, t[11]),
        .device_id = sqlite3_column_int64(st, 4), .capacity_mib = sqlite3_column_int64(st, 12),
        .bucket = sqlite3_column_int64(st, 13), .alloc_mib = sqlite3_column_int64(st, 16),
        .alloc_ugpu = sqlite3_column_int64(st, 17)};
    return g;
}

static enum gl_status scan_row(struct scan *x, sqlite3_stmt *st, struct gl_error *err)
{
    int64_t hour = sqlite3_column_int64(st, 0);
    enum gl_status rc = GL_OK;
    if (hour != x->hour && x->hour != INT64_MIN)
        rc = end_hour(x, err);
    x->hour = hour;
    if (rc)
        return rc;
    struct gl_peak_read *g = group_of(x, st, hour);
    int64_t steps = sqlite3_column_int64(st, 14), peak = sqlite3_column_int64(st, 15);
    if (__builtin_add_overflow(g->steps, steps, &g->steps))
        return gl_error_set(err, GL_ERR_RUNTIME, "integer overflow: the steps of %.300s", g->pod);
    if (peak > g->peak_mib)
        g->peak_mib = peak;
    if (hour < g->hour)
        g->hour = hour;
    /* a run: one (hour, cluster, namespace, pod, device), any bucket */
    if (!x->in_run || x->run_cluster != g->cluster || x->run_ns != g->ns ||
        x->run_pod != g->pod || x->run_dev != g->device_id) {
        if ((rc = end_run(x, err)))
            return rc;
        start_run(x, g, hour);
    }
    if (peak > x->run_peak)
        x->run_peak = peak;
    return GL_OK;
}

static int group_cmp(const void *pa, const void *pb)
{
    const struct gl_peak_read *a = pa, *b = pb;
    const char *ka[] = {a->cluster, a->ns, a->pod, a->uuid, a->instance};
    const char *kb[] = {b->cluster, b->ns, b->pod, b->uuid, b->instance};
    int c = gl_strcmp_n(ka, kb, 5);
    if (!c)
        c = (a->hour > b->hour) - (a->hour < b->hour);
    return c ? c : (a->bucket > b->bucket) - (a->bucket < b->bucket);
}

/* Each group's team: that of its first hour. */
static enum gl_status teams(struct gl_store *s, struct gl_peak_groups *o, struct gl_error *err)
{
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_prepare(s, team_sql, &st, "advise: reading teams", err);
    for (size_t i = 0; !rc && i < o->n; i++) {
        struct gl_peak_read *g = &o->g[i];
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, g->hour);
        sqlite3_bind_text(st, 2, g->cluster, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, g->ns, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, g->pod, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, g->device_id);
        int sr = sqlite3_step(st);
        if (sr == SQLITE_ROW)
            g->team = str(o, (const char *)sqlite3_column_text(st, 0));
        else if (sr != SQLITE_DONE)
            rc = gl_store_fail(s, "advise: reading teams", err);
    }
    sqlite3_finalize(st);
    return rc;
}

enum gl_status gl_query_advise_peaks(struct gl_store *s, const struct gl_period *p,
                                     const int64_t *cuts, size_t ncuts, gl_node_hour_fn fn,
                                     void *ctx, struct gl_peak_groups *out, struct gl_error *err)
{
    memset(out, 0, sizeof *out);
    out->strs = gl_intern_new();
    struct scan x = {.cuts = cuts, .ncuts = ncuts, .out = out, .fn = fn, .ctx = ctx,
                     .hour = INT64_MIN, .keys = gl_intern_new(), .nkeys = gl_intern_new(),
                     .ndevs = gl_intern_new()};
    gl_buf_init(&x.key);
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_query_period(s, rows_sql, p->start, p->end, &st,
                                              "advise: reading pod peaks", err);
    if (!rc) {
        int sr;
        while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW)
            rc = scan_row(&x, st, err);
        if (!rc && sr != SQLITE_DONE)
            rc = gl_store_fail(s, "advise: reading pod peaks", err);
        sqlite3_finalize(st);
    }
    if (!rc && x.hour != INT64_MIN)
        rc = end_hour(&x, err);
    if (!rc)
        rc = teams(s, out, err);
    if (!rc && out->n) /* the order of the groups' first rows */
        qsort(out->g, out->n, sizeof *out->g, group_cmp);
    struct gl_intern *interns[] = {x.keys, x.nkeys, x.ndevs};
    for (size_t k = 0; k < sizeof interns / sizeof *interns; k++)
        gl_intern_free(interns[k]);
    free(x.nh);
    gl_buf_free(&x.key);
    if (rc) /* nothing half-read is handed back */
        gl_peak_groups_free(out);
    return rc;
}

void gl_peak_groups_free(struct gl_peak_groups *g)
{
    free(g->g);
    gl_intern_free(g->strs);
    memset(g, 0, sizeof *g);
}
