/* query_peak — the advice's read of pod_peak (schema/013), summed while it
 * is read (query.h says what is summed). Each cluster's rows are read in
 * the order of the table's primary key (cluster, hour, namespace, pod,
 * device, bucket): one range of the table a cluster, no row looked up
 * through an index and nothing sorted in SQLite's memory. What a row
 * shares with others (its device, the device's model that hour, its pod's
 * owner) is read once per device, run and pod, not joined per row; the
 * groups are keyed in binary. Only the groups are held.
 *
 * A day built into the daily groups and node-hours of schema/014 (a row
 * of pod_peak_day_built; store_peakday.c builds them from this read) is
 * read from those instead of its hourly rows, unless a price bound falls
 * inside it: the groups merge across days as across hours (steps summed,
 * peaks by max, the first hour the least), so a month costs its changed
 * days' rows and the built days' groups. */
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

/* The clusters with rows, each found by one seek of the primary key. */
static const char first_cluster_sql[] = "SELECT cluster FROM pod_peak ORDER BY cluster LIMIT 1";
static const char next_cluster_sql[] =
    "SELECT cluster FROM pod_peak WHERE cluster > ?1 ORDER BY cluster LIMIT 1";

/* One cluster's rows of hours [?1, ?2) (?3: the cluster); rows of one
 * (hour, namespace, pod, device), a run, follow each other. */
static const char rows_sql[] =
    "SELECT hour, namespace, pod, device_id, bucket, steps, peak_mib, alloc_mib, alloc_ugpu"
    " FROM pod_peak WHERE cluster = ?3 AND hour >= ?1 AND hour < ?2"
    " ORDER BY hour, namespace, pod, device_id, bucket";
enum { R_HOUR, R_NS, R_POD, R_DEV, R_BUCKET, R_STEPS, R_PEAK, R_ALLOC, R_UGPU };

/* The cluster's built days wholly inside [?1, ?2), in order. */
static const char days_sql[] =
    "SELECT day FROM pod_peak_day_built WHERE cluster = ?3 AND day >= ?1 AND day <= ?2 - 86400"
    " ORDER BY day";
static const char day_groups_sql[] =
    "SELECT namespace, pod, device_id, model, capacity_mib, bucket, alloc_mib, alloc_ugpu,"
    " steps, peak_mib, first_hour FROM pod_peak_day WHERE cluster = ?1 AND day = ?2";
enum { D_NS, D_POD, D_DEV, D_MODEL, D_CAP, D_BUCKET, D_ALLOC, D_UGPU, D_STEPS, D_PEAK, D_FIRST };
static const char day_nodes_sql[] =
    "SELECT hour, hostname, model, capacity_mib, sum_peak, devices FROM node_peak_hour"
    " WHERE cluster = ?1 AND hour >= ?2 AND hour < ?2 + 86400 ORDER BY hour";

static const char device_sql[] =
    "SELECT uuid, gpu_i_id, gpu_i_profile, model, hostname, max_capacity_mib"
    " FROM device WHERE id = ?1";
/* the device's model and capacity of the hour, when recorded (else the
 * device row's) */
static const char model_sql[] =
    "SELECT model, max_capacity_mib FROM device_model_hour WHERE hour = ?1 AND device_id = ?2";
static const char owner_sql[] =
    "SELECT owner_kind, owner_name FROM pod_owner"
    " WHERE cluster = ?1 AND namespace = ?2 AND pod = ?3";

/* the pod's used memory that hour on that device is in usage under one
 * team (its labels at the hour) */
static const char team_sql[] =
    "SELECT u.team FROM usage u WHERE u.hour = ?1 AND u.cluster = ?2 AND u.namespace = ?3"
    " AND u.pod = ?4 AND u.device_id = ?5 AND u.kind = '" GL_K_MEMORY_USED "'"
    " ORDER BY u.quantity DESC, u.team LIMIT 1";

/* What the device table says of a device (a function of its id alone),
 * and the model and capacity of its current run: the model is interned
 * again only when it is not the last run's. A device id without a device
 * row has no rows in the advice (the read joined the device table). */
struct dev {
    bool exists;
    const char *uuid, *instance, *profile, *hostname, *model;
    int64_t capacity_mib;
    const char *hour_model; /* of the run's hour */
    int64_t hour_capacity_mib;
};

struct owner {
    const char *kind, *name;
};

/* The group key, binary: interned strings by address (one address per
 * string), the rest as read; seg: the price segment of the hour. */
enum { K_CLUSTER, K_NS, K_POD, K_DEV, K_MODEL, K_CAP, K_BUCKET, K_ALLOC, K_UGPU, K_SEG, K_N };

struct scan {
    struct gl_store *s;
    const char *only; /* NULL: every cluster; else this one's rows alone */
    bool use_days;    /* the built days read from schema/014's tables */
    size_t days_read; /* how many were */
    sqlite3_stmt *dev_st, *model_st, *owner_st, *days_st, *dgroups_st, *dnodes_st;
    const int64_t *cuts;
    size_t ncuts;
    struct gl_peak_groups *out;
    struct gl_keymap *keys; /* group keys: id = index into out->g */
    size_t cap;
    struct gl_keymap *dev_ids; /* device_id → index into devs */
    struct dev *devs;
    size_t capdevs;
    struct gl_keymap *pods; /* (cluster, namespace, pod) → index into owners */
    struct owner *owners;
    size_t capowners;
    gl_node_hour_fn fn;
    void *ctx;
    /* the current cluster, hour and price segment */
    const char *cluster;
    int64_t hour, seg;
    /* the current hour's node-hours */
    struct gl_keymap *nkeys, *ndevs; /* node keys; node × uuid */
    struct gl_node_hour_read *nh;
    size_t nnh, capnh;
    /* the current (hour, pod, device) run: its identity (interned strings,
     * compared by address), its owner, its device (NULL: none), its key,
     * its peak */
    bool in_run;
    const char *run_ns, *run_pod;
    struct owner run_owner;
    int64_t run_dev;
    struct dev *run_d;
    int64_t run_key[K_N];
    int32_t run_nh;
    int64_t run_peak;
    const char *day_model; /* a built day's last group's model */
};

/* The groups' strings are held once, whatever the number of rows. */
static const char *str(struct gl_peak_groups *o, const char *s)
{
    return gl_intern_str(o->strs, gl_intern_xget(o->strs, s));
}

static const char *col(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

static int64_t addr(const void *p)
{
    return (int64_t)(intptr_t)p;
}

/* Steps st, a read of at most one row: *found says whether it has one. */
static enum gl_status lookup(struct scan *x, sqlite3_stmt *st, bool *found,
                             struct gl_error *err)
{
    int sr = sqlite3_step(st);
    *found = sr == SQLITE_ROW;
    if (sr == SQLITE_ROW || sr == SQLITE_DONE)
        return GL_OK;
    return gl_store_fail(x->s, "advise: reading pod peaks", err);
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

/* The run's node-hour (whole GPUs of known capacity only), with the device
 * counted once per node-hour. */
static void node_of_run(struct scan *x)
{
    const struct dev *d = x->run_d;
    x->run_nh = -1;
    if (d->profile[0] || d->hour_capacity_mib <= 0)
        return;
    const int64_t nk[] = {addr(x->cluster), addr(d->hostname), addr(d->hour_model),
                          d->hour_capacity_mib};
    int32_t id = gl_keymap_xget(x->nkeys, nk);
    if ((size_t)id == x->nnh) {
        if (x->nnh == x->capnh) {
            x->capnh = x->capnh ? 2 * x->capnh : 64;
            x->nh = gl_xrealloc(x->nh, x->capnh * sizeof *x->nh);
        }
        x->nh[x->nnh++] = (struct gl_node_hour_read){
            .hour = x->hour, .cluster = x->cluster, .hostname = d->hostname,
            .model = d->hour_model, .capacity_mib = d->hour_capacity_mib};
    }
    x->run_nh = id;
    const int64_t dk[] = {id, addr(d->uuid)};
    int32_t before = gl_keymap_count(x->ndevs);
    gl_keymap_xget(x->ndevs, dk);
    if (gl_keymap_count(x->ndevs) > before)
        x->nh[id].devices++;
}

/* The device's row, read once (*out NULL: no device row). */
static enum gl_status dev_row(struct scan *x, int64_t device_id, struct dev **out,
                              struct gl_error *err)
{
    struct gl_peak_groups *o = x->out;
    int32_t known = gl_keymap_count(x->dev_ids), i = gl_keymap_xget(x->dev_ids, &device_id);
    enum gl_status rc = GL_OK;
    bool found;
    if (i == known) {
        if ((size_t)i == x->capdevs) {
            x->capdevs = x->capdevs ? 2 * x->capdevs : 256;
            x->devs = gl_xrealloc(x->devs, x->capdevs * sizeof *x->devs);
        }
        struct dev *d = &x->devs[i];
        *d = (struct dev){0};
        sqlite3_stmt *st = x->dev_st;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, device_id);
        if ((rc = lookup(x, st, &found, err)))
            return rc;
        if (found)
            *d = (struct dev){.exists = true, .uuid = str(o, col(st, 0)),
                              .instance = str(o, col(st, 1)), .profile = str(o, col(st, 2)),
                              .model = str(o, col(st, 3)), .hostname = str(o, col(st, 4)),
                              .capacity_mib = sqlite3_column_int64(st, 5)};
        d->hour_model = d->model;
    }
    *out = x->devs[i].exists ? &x->devs[i] : NULL;
    return GL_OK;
}

/* The device of the run: its row, and its model and capacity of the hour
 * read per run (*out NULL: no device row). */
static enum gl_status dev_of(struct scan *x, int64_t device_id, struct dev **out,
                             struct gl_error *err)
{
    struct gl_peak_groups *o = x->out;
    bool found;
    enum gl_status rc = dev_row(x, device_id, out, err);
    struct dev *d = *out;
    if (rc || !d)
        return rc;
    sqlite3_stmt *st = x->model_st;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, x->hour);
    sqlite3_bind_int64(st, 2, device_id);
    if ((rc = lookup(x, st, &found, err)))
        return rc;
    const char *model = found ? col(st, 0) : d->model;
    if (strcmp(d->hour_model, model))
        d->hour_model = str(o, model);
    d->hour_capacity_mib = found ? sqlite3_column_int64(st, 1) : d->capacity_mib;
    return GL_OK;
}

/* The pod's owner: read once per pod ("" when it has none). */
static enum gl_status owner_of(struct scan *x, struct gl_error *err)
{
    struct gl_peak_groups *o = x->out;
    const int64_t key[] = {addr(x->cluster), addr(x->run_ns), addr(x->run_pod)};
    int32_t known = gl_keymap_count(x->pods), i = gl_keymap_xget(x->pods, key);
    if (i == known) {
        if ((size_t)i == x->capowners) {
            x->capowners = x->capowners ? 2 * x->capowners : 256;
            x->owners = gl_xrealloc(x->owners, x->capowners * sizeof *x->owners);
        }
        sqlite3_stmt *st = x->owner_st;
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, x->cluster, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, x->run_ns, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, x->run_pod, -1, SQLITE_STATIC);
        bool found;
        enum gl_status rc = lookup(x, st, &found, err);
        if (rc)
            return rc;
        x->owners[i] = found ? (struct owner){str(o, col(st, 0)), str(o, col(st, 1))}
                             : (struct owner){str(o, ""), str(o, "")};
    }
    x->run_owner = x->owners[i];
    return GL_OK;
}

/* Does the row continue the run (the same hour, pod and device)? */
static bool same_run(const struct scan *x, sqlite3_stmt *st, int64_t device_id)
{
    return x->in_run && x->run_dev == device_id && !strcmp(x->run_pod, col(st, R_POD)) &&
           !strcmp(x->run_ns, col(st, R_NS));
}

/* A new run starts at the row: its pod's strings and owner (again only
 * when the pod changes), its device, the part of the group key it fixes
 * and its node-hour. */
static enum gl_status start_run(struct scan *x, sqlite3_stmt *st, int64_t device_id,
                                struct gl_error *err)
{
    enum gl_status rc = end_run(x, err);
    if (rc)
        return rc;
    struct gl_peak_groups *o = x->out;
    if (!x->run_pod || strcmp(x->run_pod, col(st, R_POD)) || strcmp(x->run_ns, col(st, R_NS))) {
        x->run_ns = str(o, col(st, R_NS));
        x->run_pod = str(o, col(st, R_POD));
        if ((rc = owner_of(x, err)))
            return rc;
    }
    x->in_run = true;
    x->run_dev = device_id;
    x->run_peak = 0;
    x->run_nh = -1;
    if ((rc = dev_of(x, device_id, &x->run_d, err)) || !x->run_d)
        return rc;
    x->run_key[K_CLUSTER] = addr(x->cluster);
    x->run_key[K_NS] = addr(x->run_ns);
    x->run_key[K_POD] = addr(x->run_pod);
    x->run_key[K_DEV] = device_id;
    x->run_key[K_MODEL] = addr(x->run_d->hour_model);
    x->run_key[K_CAP] = x->run_d->hour_capacity_mib;
    x->run_key[K_SEG] = x->seg;
    node_of_run(x);
    return GL_OK;
}

/* The pod, device, owner and first hour a new group takes. */
struct group_src {
    int64_t hour;
    const char *ns, *pod;
    struct owner owner;
    const struct dev *d;
    const char *model;
    int64_t capacity_mib;
};

/* The group of key k: found, or added from src. */
static struct gl_peak_read *group_at(struct scan *x, const int64_t *k,
                                     const struct group_src *src)
{
    int32_t id = gl_keymap_xget(x->keys, k);
    struct gl_peak_groups *o = x->out;
    if ((size_t)id < o->n)
        return &o->g[id];
    if (o->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 256;
        o->g = gl_xrealloc(o->g, x->cap * sizeof *o->g);
    }
    const struct dev *d = src->d;
    struct gl_peak_read *g = &o->g[o->n++];
    *g = (struct gl_peak_read){
        .hour = src->hour, .cluster = x->cluster, .ns = src->ns, .pod = src->pod,
        .team = "", .owner_kind = src->owner.kind, .owner_name = src->owner.name,
        .uuid = d->uuid, .instance = d->instance, .profile = d->profile,
        .model = src->model, .hostname = d->hostname, .device_id = k[K_DEV],
        .capacity_mib = src->capacity_mib, .bucket = k[K_BUCKET], .alloc_mib = k[K_ALLOC],
        .alloc_ugpu = k[K_UGPU]};
    return g;
}

/* The group of the row: found by its key, or added with the run's strings. */
static struct gl_peak_read *group_of(struct scan *x, sqlite3_stmt *st)
{
    int64_t *k = x->run_key;
    k[K_BUCKET] = sqlite3_column_int64(st, R_BUCKET);
    k[K_ALLOC] = sqlite3_column_int64(st, R_ALLOC);
    k[K_UGPU] = sqlite3_column_int64(st, R_UGPU);
    const struct group_src src = {x->hour, x->run_ns, x->run_pod, x->run_owner, x->run_d,
                                  x->run_d->hour_model, x->run_d->hour_capacity_mib};
    return group_at(x, k, &src);
}

/* steps and a peak added to group g. */
static enum gl_status group_sum(struct gl_peak_read *g, int64_t steps, int64_t peak,
                                struct gl_error *err)
{
    if (__builtin_add_overflow(g->steps, steps, &g->steps))
        return gl_error_set(err, GL_ERR_RUNTIME, "integer overflow: the steps of %.300s", g->pod);
    if (peak > g->peak_mib)
        g->peak_mib = peak;
    return GL_OK;
}

static enum gl_status scan_row(struct scan *x, sqlite3_stmt *st, struct gl_error *err)
{
    int64_t hour = sqlite3_column_int64(st, R_HOUR);
    enum gl_status rc = GL_OK;
    if (hour != x->hour) {
        if (x->hour != INT64_MIN && (rc = end_hour(x, err)))
            return rc;
        x->hour = hour;
        x->seg = 0;
        for (size_t i = 0; i < x->ncuts; i++)
            x->seg += x->cuts[i] <= hour;
    }
    /* a run: one (hour, namespace, pod, device), any bucket */
    int64_t device_id = sqlite3_column_int64(st, R_DEV);
    if (!same_run(x, st, device_id) && (rc = start_run(x, st, device_id, err)))
        return rc;
    if (!x->run_d)
        return GL_OK;
    struct gl_peak_read *g = group_of(x, st);
    int64_t steps = sqlite3_column_int64(st, R_STEPS), peak = sqlite3_column_int64(st, R_PEAK);
    if (peak > x->run_peak)
        x->run_peak = peak;
    return group_sum(g, steps, peak, err);
}

/* One cluster's rows of hours [from, to); its last hour's node-hours
 * handed over at their end. */
static enum gl_status scan_rows(struct scan *x, sqlite3_stmt *st, int64_t from, int64_t to,
                                struct gl_error *err)
{
    if (from >= to)
        return GL_OK;
    x->hour = INT64_MIN;
    x->in_run = false;
    x->run_ns = x->run_pod = NULL;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, from);
    sqlite3_bind_int64(st, 2, to);
    sqlite3_bind_text(st, 3, x->cluster, -1, SQLITE_STATIC);
    enum gl_status rc = GL_OK;
    int sr;
    while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW)
        rc = scan_row(x, st, err);
    if (!rc && sr != SQLITE_DONE)
        rc = gl_store_fail(x->s, "advise: reading pod peaks", err);
    if (!rc && x->hour != INT64_MIN)
        rc = end_hour(x, err);
    return rc;
}

/* A built day's group: merged into the period's groups as a run's rows
 * are (its device's row and its pod's owner read as for the rows). */
static enum gl_status day_group(struct scan *x, sqlite3_stmt *st, int64_t seg,
                                struct gl_error *err)
{
    struct gl_peak_groups *o = x->out;
    enum gl_status rc = GL_OK;
    /* a day's groups come in key order: its pod, device and model are
     * looked up again only when they change */
    int64_t device_id = sqlite3_column_int64(st, D_DEV);
    if (!x->run_d || x->run_dev != device_id) {
        if ((rc = dev_row(x, device_id, &x->run_d, err)))
            return rc;
        x->run_dev = device_id;
    }
    if (!x->run_d)
        return GL_OK;
    if (!x->run_pod || strcmp(x->run_pod, col(st, D_POD)) || strcmp(x->run_ns, col(st, D_NS))) {
        x->run_ns = str(o, col(st, D_NS));
        x->run_pod = str(o, col(st, D_POD));
        if ((rc = owner_of(x, err)))
            return rc;
    }
    if (!x->day_model || strcmp(x->day_model, col(st, D_MODEL)))
        x->day_model = str(o, col(st, D_MODEL));
    const struct group_src src = {sqlite3_column_int64(st, D_FIRST), x->run_ns, x->run_pod,
                                  x->run_owner, x->run_d, x->day_model,
                                  sqlite3_column_int64(st, D_CAP)};
    const int64_t k[K_N] = {
        [K_CLUSTER] = addr(x->cluster), [K_NS] = addr(src.ns), [K_POD] = addr(src.pod),
        [K_DEV] = device_id, [K_MODEL] = addr(src.model), [K_CAP] = src.capacity_mib,
        [K_BUCKET] = sqlite3_column_int64(st, D_BUCKET),
        [K_ALLOC] = sqlite3_column_int64(st, D_ALLOC),
        [K_UGPU] = sqlite3_column_int64(st, D_UGPU), [K_SEG] = seg};
    struct gl_peak_read *g = group_at(x, k, &src);
    if (src.hour < g->hour)
        g->hour = src.hour;
    return group_sum(g, sqlite3_column_int64(st, D_STEPS), sqlite3_column_int64(st, D_PEAK),
                     err);
}

/* A built day of the cluster: its groups, then its node-hours in order. */
static enum gl_status read_day(struct scan *x, int64_t day, struct gl_error *err)
{
    int64_t seg = 0;
    for (size_t i = 0; i < x->ncuts; i++)
        seg += x->cuts[i] <= day;
    struct gl_peak_groups *o = x->out;
    enum gl_status rc = GL_OK;
    sqlite3_stmt *sts[] = {x->dgroups_st, x->dnodes_st};
    for (size_t k = 0; k < 2; k++) {
        sqlite3_reset(sts[k]);
        sqlite3_bind_text(sts[k], 1, x->cluster, -1, SQLITE_STATIC);
        sqlite3_bind_int64(sts[k], 2, day);
    }
    x->run_ns = x->run_pod = x->day_model = NULL;
    x->run_d = NULL;
    int sr;
    sqlite3_stmt *st = x->dgroups_st;
    while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW)
        rc = day_group(x, st, seg, err);
    if (!rc && sr != SQLITE_DONE)
        return gl_store_fail(x->s, "advise: reading pod peaks of a day", err);
    st = x->dnodes_st;
    while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW) {
        const struct gl_node_hour_read h = {
            .hour = sqlite3_column_int64(st, 0), .cluster = x->cluster,
            .hostname = str(o, col(st, 1)), .model = str(o, col(st, 2)),
            .capacity_mib = sqlite3_column_int64(st, 3),
            .sum_peak = sqlite3_column_int64(st, 4), .devices = sqlite3_column_int64(st, 5)};
        rc = x->fn(x->ctx, &h, err);
    }
    if (!rc && sr != SQLITE_DONE)
        return gl_store_fail(x->s, "advise: reading node-hours of a day", err);
    x->days_read += !rc;
    return rc;
}

/* Does a price bound fall inside the day (its hours in two segments)? */
static bool cut_inside(const struct scan *x, int64_t day)
{
    for (size_t i = 0; i < x->ncuts; i++)
        if (x->cuts[i] > day && x->cuts[i] < day + 86400)
            return true;
    return false;
}

/* One cluster's hours [from, to): its built days (without a price bound
 * inside) from schema/014's tables, the hours between them from their
 * rows, in order. */
static enum gl_status scan_cluster(struct scan *x, sqlite3_stmt *rows, int64_t from,
                                   int64_t to, struct gl_error *err)
{
    if (!x->use_days)
        return scan_rows(x, rows, from, to, err);
    sqlite3_stmt *st = x->days_st;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, from);
    sqlite3_bind_int64(st, 2, to);
    sqlite3_bind_text(st, 3, x->cluster, -1, SQLITE_STATIC);
    /* the days first (read_day steps other statements; rows_sql is rows') */
    int64_t *days = NULL;
    size_t n = 0, cap = 0;
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t day = sqlite3_column_int64(st, 0);
        if (cut_inside(x, day))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 32;
            days = gl_xrealloc(days, cap * sizeof *days);
        }
        days[n++] = day;
    }
    enum gl_status rc = sr == SQLITE_DONE ? GL_OK
                                          : gl_store_fail(x->s, "advise: reading built days", err);
    int64_t at = from;
    for (size_t i = 0; !rc && i < n; i++) {
        if (!(rc = scan_rows(x, rows, at, days[i], err)))
            rc = read_day(x, days[i], err);
        at = days[i] + 86400;
    }
    if (!rc)
        rc = scan_rows(x, rows, at, to, err);
    free(days);
    return rc;
}

/* Every cluster with rows, in order: each the next key of the table (or
 * the one cluster asked for). */
static enum gl_status scan_clusters(struct scan *x, int64_t from, int64_t to,
                                    struct gl_error *err)
{
    sqlite3_stmt *first = NULL, *next = NULL, *rows = NULL;
    const char *what = "advise: reading pod peaks";
    enum gl_status rc;
    if ((rc = gl_store_prepare(x->s, first_cluster_sql, &first, what, err)) ||
        (rc = gl_store_prepare(x->s, next_cluster_sql, &next, what, err)) ||
        (rc = gl_store_prepare(x->s, rows_sql, &rows, what, err)))
        goto done;
    if (x->only) {
        x->cluster = str(x->out, x->only);
        rc = scan_cluster(x, rows, from, to, err);
        goto done;
    }
    bool found;
    for (sqlite3_stmt *st = first; !(rc = lookup(x, st, &found, err)) && found; st = next) {
        x->cluster = str(x->out, col(st, 0));
        if ((rc = scan_cluster(x, rows, from, to, err)))
            break;
        sqlite3_reset(next);
        sqlite3_bind_text(next, 1, x->cluster, -1, SQLITE_STATIC);
    }
done:
    sqlite3_finalize(first);
    sqlite3_finalize(next);
    sqlite3_finalize(rows);
    return rc;
}

/* The groups in the order of their first rows: a total order (two groups
 * of one pod, device, first hour and bucket differ in nothing else: that
 * hour has one row there), so the order the clusters were read in does
 * not show. */
static int group_cmp(const void *pa, const void *pb)
{
    const struct gl_peak_read *a = pa, *b = pb;
    const char *ka[] = {a->cluster, a->ns, a->pod, a->uuid, a->instance};
    const char *kb[] = {b->cluster, b->ns, b->pod, b->uuid, b->instance};
    int c = gl_strcmp_n(ka, kb, 5);
    if (!c)
        c = (a->hour > b->hour) - (a->hour < b->hour);
    if (!c)
        c = (a->bucket > b->bucket) - (a->bucket < b->bucket);
    return c ? c : (a->device_id > b->device_id) - (a->device_id < b->device_id);
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

/* The read of hours [from, to): only: one cluster (NULL: all); use_days:
 * the built days from their groups; with_teams: each group's team. */
static enum gl_status read_peaks(struct gl_store *s, const char *only, int64_t from, int64_t to,
                                 bool use_days, bool with_teams, const int64_t *cuts,
                                 size_t ncuts, gl_node_hour_fn fn, void *ctx,
                                 struct gl_peak_groups *out, struct gl_error *err)
{
    memset(out, 0, sizeof *out);
    out->strs = gl_intern_new();
    struct scan x = {.s = s, .only = only, .use_days = use_days, .cuts = cuts, .ncuts = ncuts,
                     .out = out, .fn = fn, .ctx = ctx, .keys = gl_keymap_new(K_N),
                     .dev_ids = gl_keymap_new(1), .pods = gl_keymap_new(3),
                     .nkeys = gl_keymap_new(4), .ndevs = gl_keymap_new(2)};
    const char *what = "advise: reading pod peaks";
    enum gl_status rc;
    if (!(rc = gl_store_prepare(s, device_sql, &x.dev_st, what, err)) &&
        !(rc = gl_store_prepare(s, model_sql, &x.model_st, what, err)) &&
        !(rc = gl_store_prepare(s, owner_sql, &x.owner_st, what, err)) &&
        !(rc = gl_store_prepare(s, days_sql, &x.days_st, what, err)) &&
        !(rc = gl_store_prepare(s, day_groups_sql, &x.dgroups_st, what, err)) &&
        !(rc = gl_store_prepare(s, day_nodes_sql, &x.dnodes_st, what, err)))
        rc = scan_clusters(&x, from, to, err);
    if (!rc && with_teams)
        rc = teams(s, out, err);
    if (!rc && out->n) /* the order of the groups' first rows */
        qsort(out->g, out->n, sizeof *out->g, group_cmp);
    if (!rc && use_days)
        gl_log(GL_LOG_DEBUG, "advise read pod peaks built_days=%zu groups=%zu", x.days_read,
               out->n);
    sqlite3_stmt *sts[] = {x.dev_st, x.model_st, x.owner_st, x.days_st, x.dgroups_st,
                           x.dnodes_st};
    for (size_t k = 0; k < sizeof sts / sizeof *sts; k++)
        sqlite3_finalize(sts[k]);
    struct gl_keymap *maps[] = {x.keys, x.dev_ids, x.pods, x.nkeys, x.ndevs};
    for (size_t k = 0; k < sizeof maps / sizeof *maps; k++)
        gl_keymap_free(maps[k]);
    GL_FREE_EACH(x.nh, x.devs, x.owners);
    if (rc) /* nothing half-read is handed back */
        gl_peak_groups_free(out);
    return rc;
}

enum gl_status gl_query_advise_peaks(struct gl_store *s, const struct gl_period *p,
                                     const int64_t *cuts, size_t ncuts, gl_node_hour_fn fn,
                                     void *ctx, struct gl_peak_groups *out, struct gl_error *err)
{
    return read_peaks(s, NULL, p->start, p->end, true, true, cuts, ncuts, fn, ctx, out, err);
}

enum gl_status gl_query_peak_day_rows(struct gl_store *s, const char *cluster, int64_t day,
                                      gl_node_hour_fn fn, void *ctx, struct gl_peak_groups *out,
                                      struct gl_error *err)
{
    return read_peaks(s, cluster, day, day + 86400, false, false, NULL, 0, fn, ctx, out, err);
}

void gl_peak_groups_free(struct gl_peak_groups *g)
{
    free(g->g);
    gl_intern_free(g->strs);
    memset(g, 0, sizeof *g);
}
