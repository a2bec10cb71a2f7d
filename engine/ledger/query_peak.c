/* query_peak — the advice's read of pod_peak (schema/013), summed while it
 * is read (query.h says what is summed). The rows come in the order of the
 * table's hour index, so nothing is sorted in SQLite's memory: a month of
 * rows costs a month of reading, but only the groups are held. */
#include "query.h"
#include "store_sql.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keymap.h"
#include "kinds.h"
#include "util.h"

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

/* What the device table says of a device (a function of its id alone),
 * read from its first row, and the model and capacity of its latest hour
 * (device_model_hour), compared per run so a model is interned when it
 * changes, not per row. Strings: interned in the groups' table. */
struct dev {
    const char *uuid, *instance, *profile, *hostname;
    const char *model;
    int64_t capacity_mib;
};

/* The group key, binary: interned strings by address (one address per
 * string), the rest as read; seg: the price segment of the hour. */
enum { K_CLUSTER, K_NS, K_POD, K_DEV, K_MODEL, K_CAP, K_BUCKET, K_ALLOC, K_UGPU, K_SEG, K_N };

struct scan {
    const int64_t *cuts;
    size_t ncuts;
    struct gl_peak_groups *out;
    struct gl_keymap *keys; /* group keys: id = index into out->g */
    size_t cap;
    struct gl_keymap *dev_ids; /* device_id → index into devs */
    struct dev *devs;
    size_t capdevs;
    gl_node_hour_fn fn;
    void *ctx;
    /* the current hour and its price segment */
    int64_t hour, seg;
    /* the current hour's node-hours */
    struct gl_keymap *nkeys, *ndevs; /* node keys; node × uuid */
    struct gl_node_hour_read *nh;
    size_t nnh, capnh;
    /* the current (hour, pod, device) run: its identity (interned strings,
     * compared by address), its owner, its device, its key, its peak */
    bool in_run;
    const char *run_cluster, *run_ns, *run_pod, *run_okind, *run_oname;
    int64_t run_dev;
    const struct dev *run_d;
    int64_t run_key[K_N];
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
    gl_keymap_clear(x->nkeys);
    gl_keymap_clear(x->ndevs);
    return rc;
}

static int64_t addr(const void *p)
{
    return (int64_t)(intptr_t)p;
}

/* The run's node-hour (whole GPUs of known capacity only), with the device
 * counted once per node-hour. */
static void node_of_run(struct scan *x, int64_t hour)
{
    const struct dev *d = x->run_d;
    x->run_nh = -1;
    if (d->profile[0] || d->capacity_mib <= 0)
        return;
    const int64_t nk[] = {addr(x->run_cluster), addr(d->hostname), addr(d->model),
                          d->capacity_mib};
    int32_t id = gl_keymap_xget(x->nkeys, nk);
    if ((size_t)id == x->nnh) {
        if (x->nnh == x->capnh) {
            x->capnh = x->capnh ? 2 * x->capnh : 64;
            x->nh = gl_xrealloc(x->nh, x->capnh * sizeof *x->nh);
        }
        x->nh[x->nnh++] = (struct gl_node_hour_read){
            .hour = hour, .cluster = x->run_cluster, .hostname = d->hostname, .model = d->model,
            .capacity_mib = d->capacity_mib};
    }
    x->run_nh = id;
    const int64_t dk[] = {id, addr(d->uuid)};
    int32_t before = gl_keymap_count(x->ndevs);
    gl_keymap_xget(x->ndevs, dk);
    if (gl_keymap_count(x->ndevs) > before)
        x->nh[id].devices++;
}

static const char *col(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

/* The device of the row: its facts read once, its model and capacity of
 * the hour kept when they are those of its last run. */
static const struct dev *dev_of(struct scan *x, sqlite3_stmt *st, int64_t device_id)
{
    struct gl_peak_groups *o = x->out;
    int32_t known = gl_keymap_count(x->dev_ids), i = gl_keymap_xget(x->dev_ids, &device_id);
    if (i == known) {
        if ((size_t)i == x->capdevs) {
            x->capdevs = x->capdevs ? 2 * x->capdevs : 256;
            x->devs = gl_xrealloc(x->devs, x->capdevs * sizeof *x->devs);
        }
        x->devs[i] = (struct dev){.uuid = str(o, col(st, 7)), .instance = str(o, col(st, 8)),
                                  .profile = str(o, col(st, 9)),
                                  .hostname = str(o, col(st, 11))};
    }
    struct dev *d = &x->devs[i];
    const char *model = col(st, 10);
    if (!d->model || strcmp(d->model, model))
        d->model = str(o, model);
    d->capacity_mib = sqlite3_column_int64(st, 12);
    return d;
}

/* Does the row continue the run (the same hour, pod and device)? */
static bool same_run(const struct scan *x, sqlite3_stmt *st, int64_t device_id)
{
    return x->in_run && x->run_dev == device_id && !strcmp(x->run_pod, col(st, 3)) &&
           !strcmp(x->run_ns, col(st, 2)) && !strcmp(x->run_cluster, col(st, 1));
}

/* A new run starts at the row: its pod's strings (interned again only when
 * the pod changes), its device, the part of the group key it fixes and its
 * node-hour. */
static enum gl_status start_run(struct scan *x, sqlite3_stmt *st, int64_t hour,
                                int64_t device_id, struct gl_error *err)
{
    enum gl_status rc = end_run(x, err);
    if (rc)
        return rc;
    struct gl_peak_groups *o = x->out;
    if (!x->run_pod || strcmp(x->run_pod, col(st, 3)) || strcmp(x->run_ns, col(st, 2)) ||
        strcmp(x->run_cluster, col(st, 1))) {
        x->run_cluster = str(o, col(st, 1));
        x->run_ns = str(o, col(st, 2));
        x->run_pod = str(o, col(st, 3));
        x->run_okind = str(o, col(st, 5));
        x->run_oname = str(o, col(st, 6));
    }
    x->in_run = true;
    x->run_dev = device_id;
    x->run_d = dev_of(x, st, device_id);
    x->run_peak = 0;
    x->run_key[K_CLUSTER] = addr(x->run_cluster);
    x->run_key[K_NS] = addr(x->run_ns);
    x->run_key[K_POD] = addr(x->run_pod);
    x->run_key[K_DEV] = device_id;
    x->run_key[K_MODEL] = addr(x->run_d->model);
    x->run_key[K_CAP] = x->run_d->capacity_mib;
    x->run_key[K_SEG] = x->seg;
    node_of_run(x, hour);
    return GL_OK;
}

/* The group of the row: found by its key, or added with the run's strings. */
static struct gl_peak_read *group_of(struct scan *x, sqlite3_stmt *st, int64_t hour)
{
    int64_t *k = x->run_key;
    k[K_BUCKET] = sqlite3_column_int64(st, 13);
    k[K_ALLOC] = sqlite3_column_int64(st, 16);
    k[K_UGPU] = sqlite3_column_int64(st, 17);
    int32_t id = gl_keymap_xget(x->keys, k);
    struct gl_peak_groups *o = x->out;
    if ((size_t)id < o->n)
        return &o->g[id];
    if (o->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 256;
        o->g = gl_xrealloc(o->g, x->cap * sizeof *o->g);
    }
    const struct dev *d = x->run_d;
    struct gl_peak_read *g = &o->g[o->n++];
    *g = (struct gl_peak_read){
        .hour = hour, .cluster = x->run_cluster, .ns = x->run_ns, .pod = x->run_pod,
        .team = "", .owner_kind = x->run_okind, .owner_name = x->run_oname, .uuid = d->uuid,
        .instance = d->instance, .profile = d->profile, .model = d->model,
        .hostname = d->hostname, .device_id = x->run_dev, .capacity_mib = d->capacity_mib,
        .bucket = k[K_BUCKET], .alloc_mib = k[K_ALLOC], .alloc_ugpu = k[K_UGPU]};
    return g;
}

static enum gl_status scan_row(struct scan *x, sqlite3_stmt *st, struct gl_error *err)
{
    int64_t hour = sqlite3_column_int64(st, 0);
    enum gl_status rc = GL_OK;
    if (hour != x->hour) {
        if (x->hour != INT64_MIN && (rc = end_hour(x, err)))
            return rc;
        x->hour = hour;
        x->seg = 0;
        for (size_t i = 0; i < x->ncuts; i++)
            x->seg += x->cuts[i] <= hour;
    }
    /* a run: one (hour, cluster, namespace, pod, device), any bucket */
    int64_t device_id = sqlite3_column_int64(st, 4);
    if (!same_run(x, st, device_id) && (rc = start_run(x, st, hour, device_id, err)))
        return rc;
    struct gl_peak_read *g = group_of(x, st, hour);
    int64_t steps = sqlite3_column_int64(st, 14), peak = sqlite3_column_int64(st, 15);
    if (__builtin_add_overflow(g->steps, steps, &g->steps))
        return gl_error_set(err, GL_ERR_RUNTIME, "integer overflow: the steps of %.300s", g->pod);
    if (peak > g->peak_mib)
        g->peak_mib = peak;
    if (hour < g->hour)
        g->hour = hour;
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
                     .hour = INT64_MIN, .keys = gl_keymap_new(K_N),
                     .dev_ids = gl_keymap_new(1), .nkeys = gl_keymap_new(4),
                     .ndevs = gl_keymap_new(2)};
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
    struct gl_keymap *maps[] = {x.keys, x.dev_ids, x.nkeys, x.ndevs};
    for (size_t k = 0; k < sizeof maps / sizeof *maps; k++)
        gl_keymap_free(maps[k]);
    free(x.nh);
    free(x.devs);
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
