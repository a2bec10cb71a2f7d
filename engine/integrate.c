/* integrate — SPEC §3/§9 attribution per step, rolled up per hour. */
#include "integrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "money.h"
#include "teams.h"

const char *const gl_kind_names[GL_KIND_COUNT] = {
    "memory_used", "capacity", "reserved", "unattributed", "idle", "excess",
};

/* Per-chunk working state. */
struct dev_state {
    double *used;     /* device series (no workload identity), max */
    double *free_mib; /* FB_FREE, max over the group */
    double *reserved; /* FB_RESERVED, max over the group */
    int32_t first_pair;
};

struct pair {
    int32_t device, ns, pod;
    int32_t key;      /* interned "cluster\x1fns\x1fpod" for label look-ups */
    int32_t ns_key;   /* interned "cluster\x1fns" */
    double *values;   /* max over duplicate series */
    int32_t next;     /* next pair of the same device */
};

/* Series of a label metric grouped by object key. */
struct label_index {
    const struct gl_matrix *m;
    int32_t *head;    /* by key id, -1 = none */
    int32_t *next;    /* by series index */
    size_t nheads;
};

struct work {
    const struct gl_config *c;
    struct gl_rollup *r;
    struct gl_intern *keys; /* device keys, pair keys, label keys */
    struct dev_state *ds;
    size_t cap_dev;
    struct pair *pairs;
    size_t npairs, cap_pairs;
    int32_t *pair_of_key; /* by key id, -1 */
    size_t npair_of_key;
    struct label_index pl, nl;
    int32_t empty; /* interned "" */
};

static void rollup_grow(struct gl_rollup *r);

static uint64_t entry_hash(int32_t hour, int32_t dev, int32_t ns, int32_t pod, int32_t team,
                           int32_t kind)
{
    int32_t k[6] = {hour, dev, ns, pod, team, kind};
    return gl_hash_bytes(k, sizeof k, GL_HASH_SEED);
}

static void rollup_add(struct gl_rollup *r, int32_t hour, int32_t dev, int32_t ns, int32_t pod,
                       int32_t team, int32_t kind, int64_t mib_s, int32_t estimated)
{
    if ((r->nentries + 1) * 2 > r->nslots)
        rollup_grow(r);
    size_t mask = r->nslots - 1;
    size_t i = entry_hash(hour, dev, ns, pod, team, kind) & mask;
    for (;; i = (i + 1) & mask) {
        struct gl_rollup_entry *e = &r->slots[i];
        if (!e->used) {
            *e = (struct gl_rollup_entry){hour, dev, ns, pod, team, kind, mib_s, estimated, 1};
            r->nentries++;
            return;
        }
        if (e->hour == hour && e->device == dev && e->ns == ns && e->pod == pod &&
            e->team == team && e->kind == kind) {
            e->mib_s += mib_s;
            e->estimated |= estimated;
            return;
        }
    }
}

static void rollup_grow(struct gl_rollup *r)
{
    size_t old_n = r->nslots;
    struct gl_rollup_entry *old = r->slots;
    r->nslots = old_n ? old_n * 2 : 1024;
    r->slots = gl_xcalloc(r->nslots, sizeof *r->slots);
    r->nentries = 0;
    for (size_t i = 0; i < old_n; i++)
        if (old[i].used)
            rollup_add(r, old[i].hour, old[i].device, old[i].ns, old[i].pod, old[i].team,
                       old[i].kind, old[i].mib_s, old[i].estimated);
    free(old);
}

void gl_rollup_free(struct gl_rollup *r)
{
    if (!r)
        return;
    gl_intern_free(r->strings);
    free(r->devices);
    free(r->slots);
    free(r->samples_per_hour);
    memset(r, 0, sizeof *r);
}

static int32_t intern(struct work *w, const char *s)
{
    int32_t id = gl_intern_get(w->r->strings, s ? s : "");
    if (id < 0) {
        fputs("gpuledger: out of memory\n", stderr);
        abort();
    }
    return id;
}

static int32_t intern_key(struct work *w, const char *a, const char *b, const char *c)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s\x1f%s\x1f%s", a ? a : "", b ? b : "", c ? c : "");
    int32_t id = gl_intern_get(w->keys, buf);
    if (id < 0) {
        fputs("gpuledger: out of memory\n", stderr);
        abort();
    }
    return id;
}

static const char *series_cluster(const struct gl_config *c, const struct gl_series *s)
{
    const char *v = gl_series_label(s, c->cluster_label);
    return v ? v : c->cluster_name;
}

/* Workload identity (SPEC §9): exported_* when present (auto), else plain. */
static bool identity(const struct gl_config *c, const struct gl_series *s, const char **ns,
                     const char **pod)
{
    *ns = *pod = NULL;
    const char *ens = gl_series_label(s, "exported_namespace");
    const char *epod = gl_series_label(s, "exported_pod");
    const char *pns = gl_series_label(s, "namespace");
    const char *ppod = gl_series_label(s, "pod");
    switch (c->identity) {
    case GL_IDENTITY_EXPORTED:
        *ns = ens;
        *pod = epod;
        break;
    case GL_IDENTITY_PLAIN:
        *ns = pns;
        *pod = ppod;
        break;
    case GL_IDENTITY_AUTO:
        if (epod) {
            *ns = ens;
            *pod = epod;
        } else {
            *ns = pns;
            *pod = ppod;
        }
        break;
    }
    return *ns && *pod;
}

static double *new_values(size_t n)
{
    double *v = gl_xcalloc(n, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = NAN;
    return v;
}

static void merge_max(double *dst, const double *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isnan(src[i]) && (isnan(dst[i]) || src[i] > dst[i]))
            dst[i] = src[i];
}

/* The device index of a series, creating it on first sight. */
static int32_t device_of(struct work *w, const struct gl_series *s)
{
    const struct gl_config *c = w->c;
    const char *uuid = gl_series_label(s, "UUID");
    if (!uuid)
        return -1;
    const char *cluster = series_cluster(c, s);
    const char *gid = gl_series_label(s, "GPU_I_ID");
    int32_t key = intern_key(w, cluster, uuid, gid);
    struct gl_rollup *r = w->r;
    if ((size_t)key < w->cap_dev && w->ds[key].used)
        return key;
    if ((size_t)key >= w->cap_dev) {
        size_t cap = w->cap_dev ? w->cap_dev : 64;
        while (cap <= (size_t)key)
            cap *= 2;
        w->ds = gl_xrealloc(w->ds, cap * sizeof *w->ds);
        memset(w->ds + w->cap_dev, 0, (cap - w->cap_dev) * sizeof *w->ds);
        r->devices = gl_xrealloc(r->devices, cap * sizeof *r->devices);
        memset(r->devices + w->cap_dev, 0, (cap - w->cap_dev) * sizeof *r->devices);
        w->cap_dev = cap;
    }
    /* Keys are shared with pairs and labels: device ids are key ids, and
     * ndevices is the highest + 1. Unused slots have used == NULL. */
    struct dev_state *d = &w->ds[key];
    d->used = new_values(r->nsteps);
    d->free_mib = new_values(r->nsteps);
    d->reserved = new_values(r->nsteps);
    d->first_pair = -1;
    struct gl_chunk_device *cd = &r->devices[key];
    const char *host = gl_series_label(s, c->hostname_label);
    if (!host)
        host = gl_series_label(s, "hostname");
    const char *model = gl_series_label(s, "modelName");
    cd->cluster = intern(w, cluster);
    cd->uuid = intern(w, uuid);
    cd->gpu_i_id = intern(w, gid);
    cd->profile = intern(w, gl_series_label(s, "GPU_I_PROFILE"));
    cd->model = intern(w, model ? model : "unknown");
    cd->hostname = intern(w, host);
    cd->first_seen = -1;
    if ((size_t)key + 1 > r->ndevices)
        r->ndevices = (size_t)key + 1;
    return key;
}

static enum gl_status add_memory(struct work *w, const struct gl_matrix *m)
{
    const struct gl_config *c = w->c;
    struct gl_rollup *r = w->r;
    for (size_t i = 0; i < m->nseries; i++) {
        const struct gl_series *s = &m->series[i];
        int32_t dev = device_of(w, s);
        if (dev < 0)
            continue; /* no UUID: not a GPU series */
        if (c->mem_unit == GL_UNIT_BYTES)
            for (size_t t = 0; t < r->nsteps; t++)
                if (!isnan(s->values[t]))
                    s->values[t] = (double)gl_div_half_even((gl_i128)s->values[t], 1048576);
        const char *ns, *pod;
        if (!identity(c, s, &ns, &pod)) {
            merge_max(w->ds[dev].used, s->values, r->nsteps);
            continue;
        }
        const char *cluster = gl_intern_str(r->strings, r->devices[dev].cluster);
        char devkey[32];
        snprintf(devkey, sizeof devkey, "#%d", dev);
        int32_t pk = intern_key(w, devkey, ns, pod);
        if ((size_t)pk >= w->npair_of_key) {
            size_t n = w->npair_of_key ? w->npair_of_key : 64;
            while (n <= (size_t)pk)
                n *= 2;
            w->pair_of_key = gl_xrealloc(w->pair_of_key, n * sizeof *w->pair_of_key);
            for (size_t k = w->npair_of_key; k < n; k++)
                w->pair_of_key[k] = -1;
            w->npair_of_key = n;
        }
        int32_t p = w->pair_of_key[pk];
        if (p < 0) {
            if (w->npairs == w->cap_pairs) {
                w->cap_pairs = w->cap_pairs ? w->cap_pairs * 2 : 64;
                w->pairs = gl_xrealloc(w->pairs, w->cap_pairs * sizeof *w->pairs);
            }
            p = (int32_t)w->npairs++;
            struct pair *pp = &w->pairs[p];
            pp->device = dev;
            pp->ns = intern(w, ns);
            pp->pod = intern(w, pod);
            pp->key = intern_key(w, cluster, ns, pod);
            pp->ns_key = intern_key(w, cluster, ns, NULL);
            pp->values = new_values(r->nsteps);
            pp->next = w->ds[dev].first_pair;
            w->ds[dev].first_pair = p;
            w->pair_of_key[pk] = p;
        }
        merge_max(w->pairs[p].values, s->values, r->nsteps);
    }
    return GL_OK;
}

static void add_device_metric(struct work *w, const struct gl_matrix *m, bool is_free)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nseries; i++) {
        const struct gl_series *s = &m->series[i];
        int32_t dev = device_of(w, s);
        if (dev < 0)
            continue;
        merge_max(is_free ? w->ds[dev].free_mib : w->ds[dev].reserved, s->values, w->r->nsteps);
    }
}

static void index_labels(struct work *w, struct label_index *li, const struct gl_matrix *m,
                         bool pods)
{
    li->m = m;
    if (!m)
        return;
    li->next = gl_xcalloc(m->nseries, sizeof *li->next);
    int32_t *keys = gl_xcalloc(m->nseries, sizeof *keys);
    int32_t maxkey = -1;
    for (size_t i = 0; i < m->nseries; i++) {
        const struct gl_series *s = &m->series[i];
        const char *ns = gl_series_label(s, "namespace");
        const char *pod = pods ? gl_series_label(s, "pod") : NULL;
        keys[i] = (ns && (!pods || pod)) ? intern_key(w, series_cluster(w->c, s), ns, pod) : -1;
        if (keys[i] > maxkey)
            maxkey = keys[i];
    }
    li->nheads = (size_t)(maxkey + 1);
    li->head = gl_xcalloc(li->nheads, sizeof *li->head);
    for (size_t k = 0; k < li->nheads; k++)
        li->head[k] = -1;
    for (size_t i = m->nseries; i-- > 0;) {
        li->next[i] = -1;
        if (keys[i] < 0)
            continue;
        li->next[i] = li->head[keys[i]];
        li->head[keys[i]] = (int32_t)i;
    }
    free(keys);
}

/* The label series of key valid at step t: present at t, the one that
 * first appeared latest wins (SPEC §9). -1 when none. */
static int32_t label_at(const struct label_index *li, int32_t key, size_t t)
{
    if (!li->m || key < 0 || (size_t)key >= li->nheads)
        return -1;
    int32_t best = -1;
    int64_t best_first = -1;
    for (int32_t i = li->head[key]; i >= 0; i = li->next[i]) {
        const struct gl_series *s = &li->m->series[i];
        if (isnan(s->values[t]))
            continue;
        if (best < 0 || s->first_step > best_first) {
            best = i;
            best_first = s->first_step;
        }
    }
    return best;
}

static int64_t to_mib(double v)
{
    return (int64_t)llround(v);
}

static void integrate_device(struct work *w, int32_t dev)
{
    struct gl_rollup *r = w->r;
    struct dev_state *d = &w->ds[dev];
    struct gl_chunk_device *cd = &r->devices[dev];
    const int64_t step = r->step;
    const size_t steps_per_hour = (size_t)(3600 / step);
    const int32_t e = w->empty;
    /* team cache per pair: last label series seen and the team they gave */
    int32_t npairs = 0;
    for (int32_t p = d->first_pair; p >= 0; p = w->pairs[p].next)
        npairs++;
    int32_t *last_pl = gl_xcalloc((size_t)npairs + 1, sizeof *last_pl);
    int32_t *last_nl = gl_xcalloc((size_t)npairs + 1, sizeof *last_nl);
    int32_t *last_team = gl_xcalloc((size_t)npairs + 1, sizeof *last_team);
    for (int32_t k = 0; k < npairs; k++)
        last_pl[k] = last_nl[k] = last_team[k] = -2;
    for (size_t t = 0; t < r->nsteps; t++) {
        int32_t hour = (int32_t)(t / steps_per_hour);
        int64_t sum_pods = 0;
        bool any = false;
        int32_t k = 0;
        for (int32_t p = d->first_pair; p >= 0; p = w->pairs[p].next, k++) {
            struct pair *pp = &w->pairs[p];
            double v = pp->values[t];
            if (isnan(v))
                continue;
            int64_t mib = to_mib(v);
            any = true;
            sum_pods += mib;
            int32_t pl = label_at(&w->pl, pp->key, t);
            int32_t nl = label_at(&w->nl, pp->ns_key, t);
            if (pl != last_pl[k] || nl != last_nl[k]) {
                char team[256];
                gl_team_resolve(w->c, pl >= 0 ? &w->pl.m->series[pl] : NULL,
                                nl >= 0 ? &w->nl.m->series[nl] : NULL,
                                gl_intern_str(r->strings, pp->ns), team, sizeof team);
                last_pl[k] = pl;
                last_nl[k] = nl;
                last_team[k] = intern(w, team);
            }
            if (mib > 0)
                rollup_add(r, hour, dev, pp->ns, pp->pod, last_team[k], GL_KIND_MEMORY_USED,
                           mib * step, 0);
        }
        bool has_dev = !isnan(d->used[t]);
        bool has_free = !isnan(d->free_mib[t]);
        if (has_dev || any || has_free) {
            int64_t ts = r->start + (int64_t)t * step;
            if (cd->first_seen < 0)
                cd->first_seen = ts;
            cd->last_seen = ts;
        }
        if (!has_free)
            continue; /* capacity unknown at this step */
        int64_t used_dev = has_dev ? to_mib(d->used[t]) : sum_pods;
        int64_t reserved = isnan(d->reserved[t]) ? 0 : to_mib(d->reserved[t]);
        int64_t capacity = used_dev + to_mib(d->free_mib[t]) + reserved;
        if (capacity > cd->max_capacity_mib)
            cd->max_capacity_mib = capacity;
        int64_t unattributed = used_dev > sum_pods ? used_dev - sum_pods : 0;
        int64_t taken = reserved + unattributed + sum_pods;
        int64_t idle = capacity > taken ? capacity - taken : 0;
        int64_t excess = taken > capacity ? taken - capacity : 0;
        int64_t vals[] = {capacity, reserved, unattributed, idle, excess};
        int32_t kinds[] = {GL_KIND_CAPACITY, GL_KIND_RESERVED, GL_KIND_UNATTRIBUTED, GL_KIND_IDLE,
                           GL_KIND_EXCESS};
        for (size_t i = 0; i < 5; i++)
            if (vals[i] > 0)
                rollup_add(r, hour, dev, e, e, e, kinds[i], vals[i] * step, 0);
    }
    free(last_pl);
    free(last_nl);
    free(last_team);
}

enum gl_status gl_integrate(const struct gl_config *c, const struct gl_chunk_input *in,
                            struct gl_rollup *r, struct gl_error *err)
{
    (void)err;
    memset(r, 0, sizeof *r);
    const struct gl_matrix *m = in->memory;
    r->start = m->start;
    r->step = m->step;
    r->nsteps = m->nsteps;
    r->nhours = (size_t)((int64_t)m->nsteps * m->step / 3600);
    r->strings = gl_intern_new();
    r->samples_per_hour = gl_xcalloc(r->nhours + 1, sizeof *r->samples_per_hour);
    r->bad_samples = m->bad_samples;
    struct work w = {.c = c, .r = r};
    w.keys = gl_intern_new();
    w.empty = intern(&w, "");
    size_t steps_per_hour = (size_t)(3600 / m->step);
    for (size_t i = 0; i < m->nseries; i++)
        for (size_t t = 0; t < m->nsteps; t++)
            if (!isnan(m->series[i].values[t]))
                r->samples_per_hour[t / steps_per_hour]++;
    add_memory(&w, m);
    add_device_metric(&w, in->fb_free, true);
    add_device_metric(&w, in->fb_reserved, false);
    index_labels(&w, &w.pl, in->pod_labels, true);
    index_labels(&w, &w.nl, in->ns_labels, false);
    for (size_t dev = 0; dev < r->ndevices; dev++)
        if (w.ds[dev].used)
            integrate_device(&w, (int32_t)dev);
    /* Device slots are key ids shared with pairs and labels: the slots that
     * are not devices get uuid = -1, and the collector skips them. */
    for (size_t dev = 0; dev < r->ndevices; dev++) {
        if (!w.ds[dev].used) {
            r->devices[dev].uuid = -1;
            continue;
        }
        free(w.ds[dev].used);
        free(w.ds[dev].free_mib);
        free(w.ds[dev].reserved);
    }
    for (size_t p = 0; p < w.npairs; p++)
        free(w.pairs[p].values);
    free(w.pairs);
    free(w.pair_of_key);
    free(w.ds);
    free(w.pl.head);
    free(w.pl.next);
    free(w.nl.head);
    free(w.nl.next);
    gl_intern_free(w.keys);
    return GL_OK;
}
