/*
 * integrate — docs/specification.md "Attribution"/"Arithmetic" attribution per step, rolled up per hour.
 *
 * The chunk's series are first indexed (devices, pods, nodes, (pod, node,
 * model) allocation cells: index_inputs); then every step is attributed in
 * these passes, in this order (run_steps):
 *   A. device totals: pod values, device used, capacity, reserved, usable;
 *   B. allocation of Running pods per (pod, node, model);
 *   B'. per-device allocation records: HAMi limits, DRA claims (a shared
 *      claim's MiB split by largest remainder);
 *   C. pod memory per device (process value, device-copy split, or the
 *      allocation of a device with no memory metrics), anomalies, busy;
 *   D. reserved-unused per (pod, node, model), excess devices, and
 *   E. idle (reduced by billed reserved-unused under basis max: a DRA
 *      claim's or HAMi limit's on the device it names, a request's over the
 *      node's devices), excess, both per device;
 *   P. GPUs requested by Pending pods (demand, never billed).
 * The allocation series themselves are joined from requests and phase in
 * alloc_join.c.
 * All quantities of a step are integers in MiB·s (MiB × step seconds).
 * Every product and sum of quantities is checked (__builtin_*_overflow):
 * the first overflow is kept with the device, pod and hour it happened at
 * and gl_integrate fails with it, so no wrapped figure is ever stored. Keys
 * of the index tables are length-prefixed and unbounded, so two identities
 * never meet however long their labels are.
 */
#include "integrate.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mig.h"
#include "money.h"
#include "teams.h"
#include "timeutil.h"

enum res_kind { RES_GPU, RES_SHARED, RES_MIG };

struct dev {
    int32_t node;
    bool mig;
    double *used;      /* device series (no workload identity), max */
    double *free_mib;  /* FB_FREE, max over the group */
    double *reserved;  /* FB_RESERVED, max over the group */
    double *busy;      /* busy ratio 0..1 from the preferred compute query; NULL: none */
    int32_t first_pair;
    int32_t copy_run;
    bool copy_warned;
    /* per-step scratch */
    bool fb;           /* memory metrics present at this step */
    bool unknown;      /* pods present, no memory metrics */
    bool dev_estimated;/* device used = its pods' sum for want of the device query's series */
    int64_t used_dev, free_v, reserved_v, capacity, usable;
    int64_t sum_q;     /* Σ pod MiB·s this step */
    int64_t idle_q;
    int32_t rank;      /* position in ascending (UUID, GPU_I_ID) order */
    bool multi_model;  /* its series name more than one modelName in the chunk */
    int64_t *hour_cap; /* max capacity per hour (multi_model devices only) */
};

struct pair {
    int32_t dev, pod;
    int32_t pnode, pn;  /* (pod, node) and (pod, node, model) cells */
    double *values;     /* memory, max over duplicate series; NULL if none */
    unsigned char *seen;/* presence from compute series (no memory metric) */
    int32_t *claim;     /* per step: DRA claim on its series (w->claimkeys id), -1;
                         * NULL when none of its series names a claim */
    double *limit;      /* per step: HAMi memory limit (MiB), Σ over containers;
                         * NULL when it has none */
    int32_t next;       /* next pair of the same device */
    double cur;         /* scratch: values[t] (NaN without values), read once per
                         * step by step_devices for step_pods */
    int64_t q;          /* scratch: MiB·s this step */
    int64_t dev_q;      /* scratch: its allocation of this device (MiB·s) */
    int64_t dev_gpu;    /* scratch: a DRA claim's GPU time of this device (micro-GPU-s) */
    bool dev_alloc;     /* scratch: holds this very device (claim or limit) */
    bool claimed;       /* scratch: by a DRA claim or a HAMi limit: allocation,
                         * reserved-unused and excess stay on this device
                         * (docs/specification.md "Arithmetic") */
};

struct ctr_limit {      /* HAMi limit of one container on one device */
    int32_t pair;
    double *values;     /* max over duplicate series */
};

struct pod {
    int32_t ns, name;   /* interned */
    int32_t pl_key, nl_key;
    int32_t cache_pl, cache_nl, team;
    int64_t team_t;
    int32_t pl_at, nl_at;       /* label_at's answers, good for [from, until) */
    size_t pl_from, pl_until, nl_from, nl_until;
};

struct node {
    int32_t cluster, host;  /* interned */
    int32_t model;          /* model of its full GPUs, -1 when unknown */
    int32_t labels_key;
    int64_t usable;         /* scratch: max usable MiB of a full GPU */
    int64_t replicas;       /* scratch */
    int64_t rep_label;      /* its replicas label, good for steps [rep_from, rep_until) */
    size_t rep_from, rep_until;
};

struct pn {                 /* (pod, node, model) */
    int32_t pod, node, model;
    int32_t pseudo_dev;
    int64_t alloc_q, used_q, gpu_u;
    int64_t claim_q;        /* its DRA claims' shares and HAMi limits (split weights only) */
    bool limited;           /* scratch: a HAMi limit replaced its request's allocation
                             * this step; the request's GPU time stays its row */
    bool touched;
    int32_t ndev, capdev;   /* devices it holds memory or a device allocation on, this step */
    int32_t *devs;
    int64_t *devq;          /* its memory there (MiB·s) */
};

struct pnode {              /* (pod, node) */
    int32_t pod, node;
    bool has_alloc, touched;
    int64_t whole_units;
    int64_t limited_t;      /* step with a HAMi limit on the node (wins over requests) */
    int32_t ndev, capdev;   /* devices of the node the pod used this step */
    int32_t *devs;
    int64_t *devq;
    bool *devok;            /* that device's own allocation record (claim, limit) */
};

struct aser {               /* one allocation series */
    const double *values;
    int32_t pod, node, pnode, pn;
    enum res_kind kind;
    int32_t profile;        /* interned MIG profile, -1 */
    int64_t mig_g, mig_gb;
};

struct label_index {
    const struct gl_matrix *m;
    int32_t *head;
    int32_t *next;
    size_t nheads;
    /* per series: its samples are exactly the steps [lo, hi] (lo > hi:
     * none), or lo = -1 when they are not one run; label_at then need not
     * read the series' values at every step (a cache miss per series per
     * step on a large fleet) */
    int32_t *lo, *hi;
};

struct vec {
    void *data;
    size_t n, cap, size;
};

static void *vec_push(struct vec *v)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 32;
        v->data = gl_xrealloc(v->data, v->cap * v->size);
    }
    void *p = (char *)v->data + v->n * v->size;
    memset(p, 0, v->size);
    v->n++;
    return p;
}

struct work {
    const struct gl_config *c;
    const struct gl_query_schema *qs; /* labels of the query being read (exporter schema) */
    const struct gl_chunk_input *in;
    struct gl_rollup *r;
    struct gl_intern *devkeys, *podkeys, *nodekeys, *pnkeys, *pnodekeys, *pairkeys, *labelkeys;
    struct gl_intern *claimkeys, *ctrkeys;
    struct vec devs, pairs, pods, nodes, pns, pnodes, asers, ctrs;
    int32_t *dev_order;           /* real devices in ascending (UUID, GPU_I_ID) */
    size_t ndev_order;
    struct label_index pl, nl, nodel;
    int32_t empty;
    char *ens_label, *epod_label; /* "exported_" + the namespace / pod label */
    struct gl_buf keybuf, teambuf, scratch;
    bool overflow;                /* the first overflow, in why */
    struct gl_buf why;
    /* scratch per step */
    int32_t *touched_pn, *touched_pnode;
    int32_t *claimed;             /* pairs holding their device by a DRA claim or a
                                   * HAMi limit this step */
    size_t nclaimed;
    int32_t *scratch_members, *scratch_teams;
    gl_i128 *scratch_weights, *scratch_parts, *scratch_parts2;
    size_t ntouched_pn, ntouched_pnode;
    /* add(): the current hour's entries, summed here and moved into r when
     * the hour changes (stage_flush), so a step touches a table of one hour
     * (cache-sized) instead of the chunk's */
    struct gl_rollup_entry *stage; /* the hour's entries in first-insertion order */
    size_t nstage, stage_cap;
    uint32_t *stage_slots;        /* open addressing: 1 + index into stage, 0 empty */
    size_t nstage_slots;
    size_t stage_next;            /* the entry after the last one matched: a step adds
                                   * its keys in nearly the order of the step before */
    int32_t stage_hour;
    size_t hour_t;                /* add(): the step whose hour is hour_of_t */
    int32_t hour_of_t;
    /* mig_usable(): real devices per node (CSR), built at its first call */
    int32_t *node_dev_start, *node_dev_list;
    size_t node_dev_nodes;
    /* the series naming a modelName (struct model_note), read again when
     * a device names two (split_model_hours) */
    struct vec model_notes;
    bool multi_model;
    /* the requests of Pending pods (the join's phase="Pending" series) */
    struct vec psers;
};

#define DEV(w, i) (((struct dev *)(w)->devs.data)[i])
#define PAIR(w, i) (((struct pair *)(w)->pairs.data)[i])
#define POD(w, i) (((struct pod *)(w)->pods.data)[i])
#define NODE(w, i) (((struct node *)(w)->nodes.data)[i])
#define PN(w, i) (((struct pn *)(w)->pns.data)[i])
#define PNODE(w, i) (((struct pnode *)(w)->pnodes.data)[i])
#define ASER(w, i) (((struct aser *)(w)->asers.data)[i])
#define CTR(w, i) (((struct ctr_limit *)(w)->ctrs.data)[i])
#define PSER(w, i) (((struct aser *)(w)->psers.data)[i])

/* The work's intern tables, for making and freeing them alike. */
enum { WORK_TABLES = 9 };
static void work_tables(struct work *w, struct gl_intern **t[WORK_TABLES])
{
    struct gl_intern **all[WORK_TABLES] = {&w->devkeys,   &w->podkeys,  &w->nodekeys,
                                           &w->pnkeys,    &w->pnodekeys, &w->pairkeys,
                                           &w->labelkeys, &w->claimkeys, &w->ctrkeys};
    memcpy(t, all, sizeof all);
}

/* ---- rollup hash table ---- */

static void rollup_grow(struct gl_rollup *r);

static uint64_t entry_hash(int32_t hour, int32_t dev, int32_t ns, int32_t pod, int32_t team,
                           int32_t kind)
{
    int32_t k[6] = {hour, dev, ns, pod, team, kind};
    return gl_hash_bytes(k, sizeof k, GL_HASH_SEED);
}

static bool same_key(const struct gl_rollup_entry *e, const struct gl_rollup_entry *x)
{
    return e->hour == x->hour && e->device == x->device && e->ns == x->ns && e->pod == x->pod &&
           e->team == x->team && e->kind == x->kind;
}

/* Adds x to e (same key); false when the sum would not fit (the chunk then fails). */
static bool entry_sum(struct gl_rollup_entry *e, const struct gl_rollup_entry *x)
{
    if (__builtin_add_overflow(e->quantity, x->quantity, &e->quantity))
        return false;
    e->estimated |= x->estimated;
    if (x->first_t < e->first_t)
        e->first_t = x->first_t;
    if (x->last_t > e->last_t)
        e->last_t = x->last_t;
    return true;
}

static size_t entry_slot(const struct gl_rollup *r, const struct gl_rollup_entry *x)
{
    return (size_t)entry_hash(x->hour, x->device, x->ns, x->pod, x->team, x->kind) &
           (r->nindex - 1);
}

/* Adds x to its entry; false (nothing changed) when the sum would not fit.
 * The entries are a dense array (a chunk's table of 56-byte slots at half
 * load, doubled while it grew, was the largest block at the peak); the
 * hash index holds 4-byte positions. */
static bool rollup_put(struct gl_rollup *r, const struct gl_rollup_entry *x)
{
    if ((r->nentries + 1) * 2 > r->nindex)
        rollup_grow(r);
    size_t mask = r->nindex - 1;
    for (size_t i = entry_slot(r, x);; i = (i + 1) & mask) {
        uint32_t k = r->index[i];
        if (!k) {
            if (r->nentries == r->slots_cap) {
                r->slots_cap = r->slots_cap ? 2 * r->slots_cap : 1024;
                r->slots = gl_xrealloc(r->slots, r->slots_cap * sizeof *r->slots);
            }
            struct gl_rollup_entry *e = &r->slots[r->nentries];
            *e = *x;
            e->used = 1;
            r->index[i] = (uint32_t)++r->nentries;
            r->nslots = r->nentries;
            return true;
        }
        struct gl_rollup_entry *e = &r->slots[k - 1];
        if (same_key(e, x))
            return entry_sum(e, x);
    }
}

/* The index rebuilt from the entries (their keys changed). */
static void rollup_reindex(struct gl_rollup *r)
{
    free(r->index);
    r->index = gl_xcalloc(r->nindex, sizeof *r->index);
    size_t mask = r->nindex - 1;
    for (size_t k = 0; k < r->nentries; k++) {
        size_t i = entry_slot(r, &r->slots[k]);
        while (r->index[i])
            i = (i + 1) & mask;
        r->index[i] = (uint32_t)(k + 1);
    }
}

/* The index doubled and rebuilt from the entries. */
static void rollup_grow(struct gl_rollup *r)
{
    r->nindex = r->nindex ? 2 * r->nindex : 2048;
    if (r->nindex > (size_t)UINT32_MAX)
        abort(); /* 2^31 entries of 56 bytes: memory ran out long before */
    rollup_reindex(r);
}

static const char *S(const struct work *w, int32_t id);
static void overflow_at(struct work *w, size_t t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static const char *device_name(struct work *w, int32_t dev);

/* ---- the hour's staging table of add() ---- */

static size_t stage_hash(const struct gl_rollup_entry *x, size_t mask)
{
    uint64_t h = (uint32_t)x->device;
    const int32_t k[4] = {x->ns, x->pod, x->team, x->kind};
    for (int i = 0; i < 4; i++) {
        h = (h ^ (uint32_t)k[i]) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 31;
    }
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return (size_t)h & mask;
}

/* Adds x to the staged entry of its key (a new one at the end); false
 * (nothing changed) when the sum would not fit. */
static bool stage_put(struct work *w, const struct gl_rollup_entry *x)
{
    if (w->stage_next < w->nstage && same_key(&w->stage[w->stage_next], x))
        return entry_sum(&w->stage[w->stage_next++], x);
    if ((w->nstage + 1) * 2 > w->nstage_slots) {
        size_t n = w->nstage_slots ? w->nstage_slots * 2 : 4096;
        free(w->stage_slots);
        w->stage_slots = gl_xcalloc(n, sizeof *w->stage_slots);
        w->nstage_slots = n;
        for (size_t k = 0; k < w->nstage; k++) {
            size_t i = stage_hash(&w->stage[k], n - 1);
            while (w->stage_slots[i])
                i = (i + 1) & (n - 1);
            w->stage_slots[i] = (uint32_t)k + 1;
        }
    }
    size_t mask = w->nstage_slots - 1;
    size_t i = stage_hash(x, mask);
    for (; w->stage_slots[i]; i = (i + 1) & mask) {
        size_t k = w->stage_slots[i] - 1;
        if (same_key(&w->stage[k], x)) {
            w->stage_next = k + 1;
            return entry_sum(&w->stage[k], x);
        }
    }
    if (w->nstage == w->stage_cap) {
        w->stage_cap = w->stage_cap ? w->stage_cap * 2 : 2048;
        w->stage = gl_xrealloc(w->stage, w->stage_cap * sizeof *w->stage);
    }
    w->stage[w->nstage] = *x;
    w->stage[w->nstage].used = 1;
    w->stage_slots[i] = (uint32_t)++w->nstage;
    w->stage_next = w->nstage;
    return true;
}

/* Moves the staged entries into the chunk's rollup, in the order add()
 * first saw them (so r is filled in the very order it was without the
 * stage), and empties the stage. */
static void stage_flush(struct work *w)
{
    struct gl_rollup *r = w->r;
    for (size_t k = 0; k < w->nstage; k++) {
        struct gl_rollup_entry *e = &w->stage[k];
        if (!rollup_put(r, e) && !w->overflow) {
            /* only when the hour's key was also added outside add() */
            size_t t = (size_t)((e->last_t - r->start) / r->step);
            overflow_at(w, t,
                        "the hourly %s of pod %.200s/%.200s (team %.200s) on %s exceeds the "
                        "64-bit range of MiB·s",
                        gl_kind_names[e->kind], S(w, e->ns), S(w, e->pod), S(w, e->team),
                        device_name(w, e->device));
        }
    }
    if (w->nstage)
        memset(w->stage_slots, 0, w->nstage_slots * sizeof *w->stage_slots);
    w->nstage = 0;
    w->stage_next = 0;
}

/* Keeps the first overflow: "<what> at <step instant>". */
static void overflow_at(struct work *w, size_t t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void overflow_at(struct work *w, size_t t, const char *fmt, ...)
{
    if (w->overflow)
        return;
    w->overflow = true;
    va_list ap;
    va_start(ap, fmt);
    gl_buf_vprintf(&w->why, fmt, ap);
    va_end(ap);
    char ts[32];
    gl_time_format(w->r->start + (int64_t)t * w->r->step, ts, sizeof ts);
    gl_buf_printf(&w->why, " at %s", ts);
}

/* "device UUID[/GPU_I_ID] on node HOST (MODEL)" of a device index, for
 * messages; label values are cut at 200 bytes there (a message, not a key). */
static const char *device_name(struct work *w, int32_t dev)
{
    const struct gl_chunk_device *cd = &w->r->devices[dev];
    gl_buf_reset(&w->scratch);
    gl_buf_printf(&w->scratch, "device %.200s%s%.200s on node %.200s (%.200s)", S(w, cd->uuid),
                  S(w, cd->gpu_i_id)[0] ? "/" : "", S(w, cd->gpu_i_id),
                  cd->hostname >= 0 ? S(w, cd->hostname) : "",
                  cd->model >= 0 ? S(w, cd->model) : "unknown");
    return w->scratch.data;
}

static void add(struct work *w, size_t t, int32_t dev, int32_t ns, int32_t pod, int32_t team,
                int32_t kind, int64_t q, bool estimated)
{
    if (q == 0)
        return;
    struct gl_rollup *r = w->r;
    int64_t ts = r->start + (int64_t)t * r->step;
    if (t != w->hour_t) { /* one division per step, not per add */
        w->hour_t = t;
        w->hour_of_t = (int32_t)((int64_t)t * r->step / 3600);
    }
    struct gl_rollup_entry e = {
        .hour = w->hour_of_t,
        .device = dev, .ns = ns, .pod = pod, .team = team, .kind = kind,
        .quantity = q, .first_t = ts, .last_t = ts, .estimated = estimated,
    };
    if (w->nstage && e.hour != w->stage_hour)
        stage_flush(w);
    w->stage_hour = e.hour;
    if (!stage_put(w, &e))
        overflow_at(w, t,
                    "the hourly %s of pod %.200s/%.200s (team %.200s) on %s exceeds the 64-bit "
                    "range of MiB·s",
                    gl_kind_names[kind], S(w, ns), S(w, pod), S(w, team), device_name(w, dev));
}

/* a × b and a + b of quantities at step t; false (and the overflow kept,
 * with what it was and where) when the result does not fit int64. */
static bool q_overflow(struct work *w, size_t t, int64_t a, const char *op, int64_t b,
                       int64_t *out, const char *what, int32_t dev)
{
    overflow_at(w, t, "%s on %s exceeds the 64-bit range (%lld %s %lld)", what,
                device_name(w, dev), (long long)a, op, (long long)b);
    *out = 0;
    return false;
}

static bool q_mul(struct work *w, size_t t, int64_t a, int64_t b, int64_t *out, const char *what,
                  int32_t dev)
{
    return !__builtin_mul_overflow(a, b, out) || q_overflow(w, t, a, "×", b, out, what, dev);
}

static bool q_add(struct work *w, size_t t, int64_t a, int64_t b, int64_t *out, const char *what,
                  int32_t dev)
{
    return !__builtin_add_overflow(a, b, out) || q_overflow(w, t, a, "+", b, out, what, dev);
}

void gl_rollup_free(struct gl_rollup *r)
{
    if (!r)
        return;
    gl_intern_free(r->strings);
    void *blocks[] = {r->devices, r->slots, r->index, r->samples_per_hour};
    for (size_t i = 0; i < sizeof blocks / sizeof *blocks; i++)
        free(blocks[i]);
    gl_peaks_free(&r->peaks);
    memset(r, 0, sizeof *r);
}

/* ---- indexing ---- */

static int32_t intern_in(struct gl_intern *t, const char *s)
{
    int32_t id = gl_intern_get(t, s ? s : "");
    if (id < 0) {
        fputs("gpuledger: out of memory\n", stderr);
        abort();
    }
    return id;
}

static int32_t str(struct work *w, const char *s)
{
    return intern_in(w->r->strings, s);
}

/* The id in t of the key (a, b, c), NULL counting as "": each part
 * length-prefixed ("7:default5:ns-ml3:pod"), so distinct triples never share
 * a key whatever their lengths or bytes. */
static int32_t key3(struct work *w, struct gl_intern *t, const char *a, const char *b,
                    const char *c)
{
    const char *parts[3] = {a ? a : "", b ? b : "", c ? c : ""};
    struct gl_buf *k = &w->keybuf;
    gl_buf_reset(k);
    for (int i = 0; i < 3; i++)
        if (!gl_buf_put_field(k, parts[i])) {
            fputs("gpuledger: out of memory\n", stderr);
            abort();
        }
    return intern_in(t, k->data);
}

static const char *S(const struct work *w, int32_t id)
{
    return gl_intern_str(w->r->strings, id);
}

/* The cluster of a series: the configured cluster, or in a single-cluster
 * config the series' cluster label when it carries one. */
static const char *series_cluster_of(const struct gl_config *c, const struct gl_cluster *cl,
                                     const struct gl_series *s)
{
    const char *v = cl->name_from_label ? gl_series_label(s, c->cluster_label) : NULL;
    return v ? v : cl->name;
}
#define series_cluster(c, s) series_cluster_of((c), w->in->cluster, (s))

/* Workload identity (docs/specification.md "Arithmetic"): exported_* when present (auto), else plain. */
static bool identity(const struct work *w, const struct gl_series *s, const char **ns,
                     const char **pod)
{
    const struct gl_config *c = w->c;
    const char *ens = gl_series_label(s, w->ens_label);
    const char *epod = gl_series_label(s, w->epod_label);
    const char *pns = gl_series_label(s, c->namespace_label);
    const char *ppod = gl_series_label(s, c->pod_label);
    *ns = *pod = NULL;
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
        *ns = epod ? ens : pns;
        *pod = epod ? epod : ppod;
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

/* Each *_of returns the cell of a key, made (its fields set, the rest
 * zero) the first time the key is seen: intern ids are dense, so a new
 * key's id is the count of cells. */
static int32_t node_of(struct work *w, const char *cluster, const char *host)
{
    int32_t k = key3(w, w->nodekeys, cluster, host, NULL);
    if ((size_t)k == w->nodes.n) {
        int32_t cl = str(w, cluster), h = str(w, host);
        int32_t labels = key3(w, w->labelkeys, cluster, host, "node");
        *(struct node *)vec_push(&w->nodes) =
            (struct node){.cluster = cl, .host = h, .model = -1, .labels_key = labels};
    }
    return k;
}

static int32_t pod_of(struct work *w, const char *cluster, const char *ns, const char *name)
{
    int32_t k = key3(w, w->podkeys, cluster, ns, name);
    if ((size_t)k == w->pods.n) {
        int32_t ns_id = str(w, ns), name_id = str(w, name);
        int32_t pl = key3(w, w->labelkeys, cluster, ns, name);
        int32_t nl = key3(w, w->labelkeys, cluster, ns, NULL);
        *(struct pod *)vec_push(&w->pods) = (struct pod){
            .ns = ns_id, .name = name_id, .pl_key = pl, .nl_key = nl,
            .cache_pl = -2, .cache_nl = -2, .team_t = -1};
    }
    return k;
}

/* The id in t of the key "pod/node" of two cell indices, or with_model
 * "pod/node/model" (one snprintf: a cell is looked up per series). */
static int32_t ids_key(struct gl_intern *t, int32_t pod, int32_t node, bool with_model,
                       int32_t model)
{
    char buf[48]; /* three int32: bounded */
    if (with_model)
        snprintf(buf, sizeof buf, "%d/%d/%d", pod, node, model);
    else
        snprintf(buf, sizeof buf, "%d/%d", pod, node);
    return intern_in(t, buf);
}

static int32_t pnode_of(struct work *w, int32_t pod, int32_t node)
{
    int32_t k = ids_key(w->pnodekeys, pod, node, false, 0);
    if ((size_t)k == w->pnodes.n)
        *(struct pnode *)vec_push(&w->pnodes) =
            (struct pnode){.pod = pod, .node = node, .limited_t = -1};
    return k;
}

static int32_t pn_of(struct work *w, int32_t pod, int32_t node, int32_t model)
{
    int32_t k = ids_key(w->pnkeys, pod, node, true, model);
    if ((size_t)k == w->pns.n)
        *(struct pn *)vec_push(&w->pns) =
            (struct pn){.pod = pod, .node = node, .model = model, .pseudo_dev = -1};
    return k;
}

static struct gl_chunk_device *new_chunk_device(struct work *w)
{
    struct gl_rollup *r = w->r;
    r->devices = gl_xrealloc(r->devices, (r->ndevices + 1) * sizeof *r->devices);
    struct gl_chunk_device *cd = &r->devices[r->ndevices++];
    memset(cd, 0, sizeof *cd);
    cd->first_seen = cd->last_seen = -1;
    struct dev *d = vec_push(&w->devs);
    d->first_pair = -1;
    d->node = -1;
    return cd;
}

/* A series of device dev names model: kept for split_model_hours, and
 * the device marked when that is not the model it took. */
struct model_note {
    int32_t dev, model;
    const double *values; /* the series' (a caller may pass a copy of the series) */
};

static void note_model(struct work *w, int32_t dev, int32_t model, const struct gl_series *s)
{
    struct model_note *n = vec_push(&w->model_notes);
    n->dev = dev;
    n->model = model;
    n->values = s->values;
    if (w->r->devices[dev].model != model)
        DEV(w, dev).multi_model = w->multi_model = true;
}

/* The device index of a series, creating it on first sight; -1 without a
 * device UUID. A later series fills a model or host the first one lacked. */
static int32_t device_of(struct work *w, const struct gl_series *s)
{
    const struct gl_config *c = w->c;
    const struct gl_query_schema *qs = w->qs;
    const char *uuid = gl_series_label(s, qs->uuid_label);
    if (!uuid && strcmp(qs->uuid_label, "UUID") != 0)
        uuid = gl_series_label(s, "UUID");
    if (!uuid)
        return -1;
    const char *cluster = series_cluster(c, s);
    const char *gid = gl_series_label(s, qs->gpu_i_id_label);
    if (!gid && strcmp(qs->gpu_i_id_label, "GPU_I_ID") != 0)
        gid = gl_series_label(s, "GPU_I_ID");
    int32_t key = key3(w, w->devkeys, cluster, uuid, gid);
    const char *host = gl_series_label(s, qs->hostname_label);
    if (!host)
        host = gl_series_label(s, "hostname");
    if (!host)
        host = gl_series_label(s, "Hostname");
    const char *model = gl_series_label(s, "modelName");
    const char *profile = gl_series_label(s, "GPU_I_PROFILE");
    if (!profile && gid && c->dra_enabled)
        profile = gl_series_label(s, c->dra_mig_profile_label);
    struct gl_chunk_device *cd;
    if ((size_t)key >= w->devs.n) {
        cd = new_chunk_device(w);
        struct dev *d = &DEV(w, key);
        size_t n = w->r->nsteps;
        d->used = new_values(n);
        d->free_mib = new_values(n);
        d->reserved = new_values(n);
        d->mig = gid != NULL;
        cd->cluster = str(w, cluster);
        cd->uuid = str(w, uuid);
        cd->gpu_i_id = str(w, gid);
        cd->profile = str(w, profile);
        cd->model = -1;
        cd->hostname = -1;
    } else {
        cd = &w->r->devices[key];
    }
    if (cd->model < 0 && model)
        cd->model = str(w, model);
    if (model)
        note_model(w, key, str(w, model), s);
    if (cd->hostname < 0 && host)
        cd->hostname = str(w, host);
    if (profile && !S(w, cd->profile)[0])
        cd->profile = str(w, profile);
    return key;
}

static int32_t pair_of(struct work *w, int32_t dev, const struct gl_series *s, const char *ns,
                       const char *podname)
{
    char devkey[24]; /* an int32: bounded */
    snprintf(devkey, sizeof devkey, "#%d", dev);
    int32_t k = key3(w, w->pairkeys, devkey, ns, podname);
    if ((size_t)k < w->pairs.n)
        return k;
    struct pair *p = vec_push(&w->pairs);
    p->dev = dev;
    p->pod = pod_of(w, series_cluster(w->c, s), ns, podname);
    p->pnode = p->pn = -1;
    p->next = DEV(w, dev).first_pair;
    DEV(w, dev).first_pair = k;
    return k;
}

/* A sample (finite, >= 0: parse skips the rest) as whole MiB; beyond int64
 * it saturates, so the checked products and sums after it fail. */
static int64_t to_mib(double v)
{
    if (!(v < 9.0e18))
        return INT64_MAX;
    if (!(v >= 0))
        return (int64_t)llround(v); /* never a sample (parse refuses them); as before */
    int64_t i = (int64_t)v; /* DCGM's whole MiB, the common case: no llround call */
    return (double)i == v ? i : (int64_t)llround(v);
}

/* A bytes source's values rounded half-even to MiB per sample (docs/specification.md "Arithmetic")
 * into mib (n slots); the input stays as parsed. */
static void bytes_to_mib(const double *in, double *mib, size_t n)
{
    for (size_t t = 0; t < n; t++)
        mib[t] = isnan(in[t])     ? (double)NAN
                 : in[t] >= 9.0e18 ? in[t] / 1048576 /* saturates later: to_mib */
                                   : (double)gl_div_half_even((gl_i128)in[t], 1048576);
}

/* The DRA claim a pod's series names, as its w->claimkeys id: (cluster,
 * claim namespace (else the pod's), claim name); -1 when it names none or
 * names another driver's claim (dra.driver; a series without the driver
 * label counts). */
static int32_t series_claim(struct work *w, const struct gl_series *s, const char *ns)
{
    const struct gl_config *c = w->c;
    if (!c->dra_enabled)
        return -1;
    const char *name = gl_series_label(s, c->dra_claim_name_label);
    if (!name)
        return -1;
    /* another driver's claim (a NIC, an FPGA) allocates no GPU memory */
    const char *driver = gl_series_label(s, c->dra_driver_label);
    if (driver && strcmp(driver, c->dra_driver) != 0)
        return -1;
    const char *cns = gl_series_label(s, c->dra_claim_namespace_label);
    return key3(w, w->claimkeys, series_cluster(c, s), cns ? cns : ns, name);
}

/* Records claim on pair p at the steps where values has a sample. */
static void pair_claim(struct work *w, int32_t p, int32_t claim, const double *values)
{
    if (claim < 0)
        return;
    struct pair *pp = &PAIR(w, p);
    size_t n = w->r->nsteps;
    if (!pp->claim) {
        pp->claim = gl_xcalloc(n, sizeof *pp->claim);
        for (size_t t = 0; t < n; t++)
            pp->claim[t] = -1;
    }
    for (size_t t = 0; t < n; t++)
        if (!isnan(values[t]))
            pp->claim[t] = claim;
}

/* A series of memory_source.device_query in the memory source's answer
 * (gl_config_query marks them): a device total whatever pod labels it
 * carries (dcgm-exporter puts a busy GPU's pod on its only series). */
static bool device_series(const struct gl_config *c, const struct gl_series *s)
{
    const char *v;
    return c->mem_device_query && (v = gl_series_label(s, GL_DEVICE_SERIES_LABEL)) &&
           strcmp(v, GL_DEVICE_SERIES_VALUE) == 0;
}

static void add_memory(struct work *w, const struct gl_matrix *m)
{
    const struct gl_config *c = w->c;
    size_t n = w->r->nsteps;
    w->qs = &c->mq[GL_MQ_MEMORY];
    double *mib = w->qs->unit == GL_UNIT_BYTES ? gl_xcalloc(n, sizeof *mib) : NULL;
    for (size_t i = 0; i < m->nseries; i++) {
        struct gl_series conv = m->series[i];
        const struct gl_series *s = &conv;
        /* the device query's series name their device with the exporter's labels */
        w->qs = &c->mq[device_series(c, s) ? GL_MQ_FREE : GL_MQ_MEMORY];
        int32_t dev = device_of(w, s);
        if (dev < 0)
            continue; /* no UUID: not a GPU series */
        if (mib) {
            bytes_to_mib(conv.values, mib, n);
            conv.values = mib;
        }
        const char *ns, *pod;
        if (device_series(c, s) || !identity(w, s, &ns, &pod)) {
            merge_max(DEV(w, dev).used, s->values, n);
            continue;
        }
        int32_t p = pair_of(w, dev, s, ns, pod);
        if (!PAIR(w, p).values)
            PAIR(w, p).values = new_values(n);
        merge_max(PAIR(w, p).values, s->values, n);
        pair_claim(w, p, series_claim(w, s, ns), s->values);
    }
    free(mib);
}

/* HAMi limits (memory_source.limit_query): per (device, pod, container) the
 * max over duplicate series, then per (device, pod) the sum over its
 * containers, in MiB (bytes rounded half-even per sample). Series without a
 * pod or device are ignored (nothing to allocate). */
static void add_limits(struct work *w)
{
    const struct gl_matrix *m = w->in->mem_limit;
    if (!m)
        return;
    const struct gl_config *c = w->c;
    size_t n = w->r->nsteps;
    w->qs = &c->mq[GL_MQ_LIMIT];
    double *mib = gl_xcalloc(n, sizeof *mib);
    for (size_t i = 0; i < m->nseries; i++) {
        const struct gl_series *s = &m->series[i];
        int32_t dev = device_of(w, s);
        const char *ns, *pod;
        if (dev < 0 || !identity(w, s, &ns, &pod))
            continue;
        int32_t p = pair_of(w, dev, s, ns, pod);
        bool exported = c->identity != GL_IDENTITY_PLAIN && gl_series_label(s, w->epod_label);
        const char *ctr = gl_series_label(s, exported ? "exported_container" : "container");
        char pk[24]; /* an int32: bounded */
        snprintf(pk, sizeof pk, "#%d", p);
        int32_t k = key3(w, w->ctrkeys, pk, ctr, NULL);
        if ((size_t)k >= w->ctrs.n) {
            struct ctr_limit *cl = vec_push(&w->ctrs);
            cl->pair = p;
            cl->values = new_values(n);
        }
        if (w->qs->unit == GL_UNIT_BYTES)
            bytes_to_mib(s->values, mib, n);
        else
            memcpy(mib, s->values, n * sizeof *mib);
        merge_max(CTR(w, k).values, mib, n);
    }
    for (size_t k = 0; k < w->ctrs.n; k++) {
        struct ctr_limit *cl = &CTR(w, k);
        struct pair *pp = &PAIR(w, cl->pair);
        if (!pp->limit)
            pp->limit = new_values(n);
        for (size_t t = 0; t < n; t++)
            if (!isnan(cl->values[t]))
                pp->limit[t] = (isnan(pp->limit[t]) ? 0 : pp->limit[t]) + cl->values[t];
        free(cl->values);
        cl->values = NULL;
    }
    free(mib);
}

/* FB_FREE / FB_RESERVED per device, max over the group, in MiB (a bytes
 * query rounded half-even per sample, as the memory source). */
static void add_device_metric(struct work *w, const struct gl_matrix *m, bool is_free)
{
    if (!m)
        return;
    size_t n = w->r->nsteps;
    w->qs = &w->c->mq[is_free ? GL_MQ_FREE : GL_MQ_RESERVED];
    double *mib = w->qs->unit == GL_UNIT_BYTES ? gl_xcalloc(n, sizeof *mib) : NULL;
    for (size_t i = 0; i < m->nseries; i++) {
        const struct gl_series *s = &m->series[i];
        int32_t dev = device_of(w, s);
        if (dev < 0)
            continue;
        if (mib)
            bytes_to_mib(s->values, mib, n);
        merge_max(is_free ? DEV(w, dev).free_mib : DEV(w, dev).reserved, mib ? mib : s->values,
                  n);
    }
    free(mib);
}

/* Busy ratio per device: the first query (in preference order) with a
 * value at the step wins; GPU_UTIL is in percent. Pods named on compute
 * series make them known on devices that have no memory metrics. */
static void add_compute(struct work *w)
{
    size_t n = w->r->nsteps;
    w->qs = &w->c->mq[GL_MQ_OTHER];
    for (size_t q = 0; q < w->in->ncompute; q++) {
        const struct gl_matrix *m = w->in->compute[q];
        if (!m)
            continue;
        for (size_t i = 0; i < m->nseries; i++) {
            const struct gl_series *s = &m->series[i];
            int32_t dev = device_of(w, s);
            if (dev < 0)
                continue;
            const char *name = gl_series_label(s, "__name__");
            double scale = (name && strcmp(name, "DCGM_FI_DEV_GPU_UTIL") == 0) ? 0.01 : 1.0;
            if (!DEV(w, dev).busy) /* only devices with compute series: read at every step */
                DEV(w, dev).busy = new_values(n);
            double *busy = DEV(w, dev).busy;
            for (size_t t = 0; t < n; t++) {
                double v = s->values[t] * scale;
                if (!isnan(v) && (isnan(busy[t]) || (int)q == 0 || v > busy[t])) {
                    /* keep the preferred query's value at t */
                    if (isnan(busy[t]) || q == 0)
                        busy[t] = isnan(busy[t]) ? v : (v > busy[t] ? v : busy[t]);
                }
            }
            const char *ns, *pod;
            if (!identity(w, s, &ns, &pod))
                continue;
            int32_t p = pair_of(w, dev, s, ns, pod);
            if (!PAIR(w, p).seen)
                PAIR(w, p).seen = gl_xcalloc(n, 1);
            for (size_t t = 0; t < n; t++)
                if (!isnan(s->values[t]))
                    PAIR(w, p).seen[t] = 1;
            pair_claim(w, p, series_claim(w, s, ns), s->values);
        }
    }
}

static void index_labels(struct work *w, struct label_index *li, const struct gl_matrix *m,
                         int what /* 0 pod, 1 namespace, 2 node */)
{
    li->m = m;
    if (!m)
        return;
    li->next = gl_xcalloc(m->nseries, sizeof *li->next);
    int32_t *keys = gl_xcalloc(m->nseries, sizeof *keys);
    int32_t maxkey = -1;
    for (size_t i = 0; i < m->nseries; i++) {
        const struct gl_series *s = &m->series[i];
        const char *cl = series_cluster(w->c, s);
        keys[i] = -1;
        if (what == 2) {
            const char *node = gl_series_label(s, "node");
            if (node)
                keys[i] = key3(w, w->labelkeys, cl, node, "node");
        } else {
            const char *ns = gl_series_label(s, "namespace");
            const char *pod = what == 0 ? gl_series_label(s, "pod") : NULL;
            if (ns && (what == 1 || pod))
                keys[i] = key3(w, w->labelkeys, cl, ns, pod);
        }
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
    li->lo = gl_xcalloc(m->nseries ? m->nseries : 1, sizeof *li->lo);
    li->hi = gl_xcalloc(m->nseries ? m->nseries : 1, sizeof *li->hi);
    for (size_t i = 0; i < m->nseries; i++) {
        const double *v = m->series[i].values;
        size_t a = 0, b, n = m->nsteps;
        while (a < n && isnan(v[a]))
            a++;
        for (b = a; b < n && !isnan(v[b]); b++)
            ;
        size_t c = b;
        while (c < n && isnan(v[c]))
            c++;
        bool run = c == n && n <= (size_t)INT32_MAX;
        li->lo[i] = run ? (int32_t)a : -1;
        li->hi[i] = run ? (int32_t)b - 1 : 0; /* a == b: none, lo > hi */
    }
}

/* The label series of key valid at step t: present at t, the one that
 * first appeared latest wins (docs/specification.md "Arithmetic"). -1 when none. */
/* *until: the first step after t where the answer may differ (no series of
 * key starts or ends before it), so callers reuse it for [t, *until). */
static int32_t label_at(const struct label_index *li, int32_t key, size_t t, size_t *until)
{
    *until = SIZE_MAX;
    if (!li->m || key < 0 || (size_t)key >= li->nheads)
        return -1;
    int32_t best = -1;
    int64_t best_first = -1;
    for (int32_t i = li->head[key]; i >= 0; i = li->next[i]) {
        const struct gl_series *s = &li->m->series[i];
        bool absent;
        if (li->lo[i] < 0) { /* not one run of steps: this step only */
            *until = t + 1;
            absent = isnan(s->values[t]);
        } else if ((int64_t)t < li->lo[i]) {
            if ((size_t)li->lo[i] < *until)
                *until = (size_t)li->lo[i];
            absent = true;
        } else if ((int64_t)t > li->hi[i]) {
            absent = true;
        } else {
            if ((size_t)li->hi[i] + 1 < *until)
                *until = (size_t)li->hi[i] + 1;
            absent = false;
        }
        if (absent)
            continue;
        if (best < 0 || s->first_seen > best_first) {
            best = i;
            best_first = s->first_seen;
        }
    }
    return best;
}

static int32_t team_at(struct work *w, int32_t podi, size_t t)
{
    struct pod *p = &POD(w, podi);
    if (p->team_t == (int64_t)t)
        return p->team;
    /* the label series in force change rarely: found again only after their run */
    if (t < p->pl_from || t >= p->pl_until) {
        p->pl_at = label_at(&w->pl, p->pl_key, t, &p->pl_until);
        p->pl_from = t;
    }
    if (t < p->nl_from || t >= p->nl_until) {
        p->nl_at = label_at(&w->nl, p->nl_key, t, &p->nl_until);
        p->nl_from = t;
    }
    int32_t pl = p->pl_at, nl = p->nl_at;
    if (pl != p->cache_pl || nl != p->cache_nl) {
        const char *team = gl_team_resolve(w->c, pl >= 0 ? &w->pl.m->series[pl] : NULL,
                                           nl >= 0 ? &w->nl.m->series[nl] : NULL, S(w, p->ns),
                                           &w->teambuf);
        if (!team) {
            fputs("gpuledger: out of memory\n", stderr);
            abort();
        }
        p->cache_pl = pl;
        p->cache_nl = nl;
        p->team = str(w, team);
    }
    p->team_t = (int64_t)t;
    return p->team;
}


/* ---- setup after indexing ---- */

static void resolve_nodes(struct work *w)
{
    struct gl_rollup *r = w->r;
    size_t ndev = w->devs.n;
    for (size_t d = 0; d < ndev; d++) {
        struct gl_chunk_device *cd = &r->devices[d];
        struct dev *dv = &DEV(w, d);
        const char *host = cd->hostname >= 0 ? S(w, cd->hostname) : "";
        dv->node = node_of(w, S(w, cd->cluster), host);
        if (cd->hostname < 0)
            cd->hostname = str(w, "");
    }
    for (size_t d = 0; d < ndev; d++) {
        struct gl_chunk_device *cd = &r->devices[d];
        struct node *n = &NODE(w, DEV(w, d).node);
        if (cd->model >= 0 && !DEV(w, d).mig && n->model < 0)
            n->model = cd->model;
    }
    for (size_t i = 0; i < w->nodes.n; i++) {
        struct node *n = &NODE(w, i);
        const struct gl_kv *kv = gl_kv_find(w->c->node_models, w->c->nnode_models, S(w, n->host));
        if (n->model < 0 && kv)
            n->model = str(w, kv->str);
    }
    for (size_t d = 0; d < ndev; d++) {
        struct gl_chunk_device *cd = &r->devices[d];
        struct node *n = &NODE(w, DEV(w, d).node);
        if (cd->model < 0)
            cd->model = n->model >= 0 ? n->model : str(w, "unknown");
        if (n->model < 0)
            n->model = cd->model;
    }
    for (size_t p = 0; p < w->pairs.n; p++) {
        struct pair *pp = &PAIR(w, p);
        int32_t node = DEV(w, pp->dev).node;
        pp->pnode = pnode_of(w, pp->pod, node);
        pp->pn = pn_of(w, pp->pod, node, r->devices[pp->dev].model);
    }
}

static bool add_pending(struct work *w, const struct gl_series *s, const char *ns,
                        const char *pod, const char *host, const char *res);
static void step_pending(struct work *w, size_t t);

/* A request series' kind (whole GPU, shared replica, MIG profile) and the
 * GPU model it is counted under: a MIG profile's measured instance on the
 * node, else the node's model, else "unknown"; sets a->pn. */
static void request_kind(struct work *w, struct aser *a, const char *res)
{
    a->profile = -1;
    int32_t model = NODE(w, a->node).model;
    if (gl_mig_resource(res, &a->mig_g, &a->mig_gb, &w->scratch)) {
        a->kind = RES_MIG;
        a->profile = str(w, w->scratch.data);
        for (size_t d = 0; d < w->devs.n; d++)
            if (DEV(w, d).node == a->node && DEV(w, d).mig &&
                w->r->devices[d].profile == a->profile) {
                model = w->r->devices[d].model;
                break;
            }
    } else {
        a->kind = strcmp(res, "nvidia_com_gpu_shared") == 0 ? RES_SHARED : RES_GPU;
    }
    if (model < 0)
        model = str(w, "unknown");
    a->pn = pn_of(w, a->pod, a->node, model);
}

static void add_allocations(struct work *w)
{
    const struct gl_matrix *m = w->in->allocation;
    if (!m)
        return;
    for (size_t i = 0; i < m->nseries; i++) {
        const struct gl_series *s = &m->series[i];
        const char *ns = gl_series_label(s, "namespace");
        const char *pod = gl_series_label(s, "pod");
        const char *host = gl_series_label(s, "node");
        const char *res = gl_series_label(s, "resource");
        /* an unscheduled pod's requests have no node (node="" is no label) */
        if (ns && pod && res && add_pending(w, s, ns, pod, host ? host : "", res))
            continue;
        if (!ns || !pod || !host || !res)
            continue;
        const char *cl = series_cluster(w->c, s);
        struct aser *a = vec_push(&w->asers);
        a->values = s->values;
        a->pod = pod_of(w, cl, ns, pod);
        a->node = node_of(w, cl, host);
        a->pnode = pnode_of(w, a->pod, a->node);
        request_kind(w, a, res);
    }
}

/* ---- per step ---- */

static void touch_pn(struct work *w, int32_t pn)
{
    if (!PN(w, pn).touched) {
        PN(w, pn).touched = true;
        w->touched_pn[w->ntouched_pn++] = pn;
    }
}

static void touch_pnode(struct work *w, int32_t pnode)
{
    if (!PNODE(w, pnode).touched) {
        PNODE(w, pnode).touched = true;
        w->touched_pnode[w->ntouched_pnode++] = pnode;
    }
}

/* A. Device totals at t. */

/* Each device's and pair's values are an array over the steps, read one
 * value per step: at a fleet's size the lines of step t are gone from the
 * cache by the time the loop comes back to them (a step touches every
 * device), so step_devices asks for them AHEAD devices before it reads
 * them, at this very step. */
enum { AHEAD = 6 };

static void prefetch_device(struct work *w, size_t d, size_t t)
{
    const struct dev *nx = &DEV(w, d);
    if (!nx->used)
        return;
    __builtin_prefetch(nx->used + t);
    __builtin_prefetch(nx->free_mib + t);
    __builtin_prefetch(nx->reserved + t);
    for (int32_t p = nx->first_pair; p >= 0; p = PAIR(w, p).next)
        if (PAIR(w, p).values)
            __builtin_prefetch(PAIR(w, p).values + t);
}

/* The pods' memory on a device at t (MiB). */
struct pods_at {
    int64_t sum, v_max;  /* v_max -1 when no pod has a value */
    int npods;
    bool all_equal, any_seen;
};

/* Reads each pair's value at t once (pair cur, for step_pods) and sums
 * the pods' memory on device d. */
static struct pods_at device_pods(struct work *w, const struct dev *dv, int32_t d, size_t t)
{
    struct pods_at pa = {.v_max = -1, .all_equal = true};
    for (int32_t p = dv->first_pair; p >= 0; p = PAIR(w, p).next) {
        struct pair *pp = &PAIR(w, p);
        if (pp->seen && pp->seen[t])
            pa.any_seen = true;
        pp->cur = pp->values ? pp->values[t] : (double)NAN;
        if (isnan(pp->cur))
            continue;
        int64_t v = to_mib(pp->cur);
        if (pa.v_max >= 0 && v != pa.v_max)
            pa.all_equal = false;
        if (v > pa.v_max)
            pa.v_max = v;
        q_add(w, t, pa.sum, v, &pa.sum, "the sum of the pods' memory (MiB)", d);
        pa.npods++;
    }
    return pa;
}

/* Process-mode sources that look like per-pod copies of the device: warned
 * once per device after 10 steps in a row. */
static void copy_check(struct work *w, struct dev *dv, int32_t d, const struct pods_at *pa,
                       bool has_dev)
{
    if (pa->npods >= 2 && pa->all_equal && pa->v_max > 0 &&
        (!has_dev || pa->v_max == dv->used_dev))
        dv->copy_run++;
    else
        dv->copy_run = 0;
    if (dv->copy_run < 10 || dv->copy_warned)
        return;
    const struct gl_chunk_device *cd = &w->r->devices[d];
    dv->copy_warned = true;
    w->r->copy_warnings++;
    gl_log(GL_LOG_WARN,
           "memory source is declared \"process\" but every pod on device %s%s%s "
           "(node %s) reports the same value as the device for 10+ steps: these "
           "look like device copies (attribution \"device\")",
           S(w, cd->uuid), S(w, cd->gpu_i_id)[0] ? "/" : "", S(w, cd->gpu_i_id),
           S(w, cd->hostname));
}

/* Capacity, reserved and usable memory of device d at t (MiB). */
static void device_capacity(struct work *w, struct dev *dv, int32_t d, size_t t, bool has_free)
{
    const struct gl_config *c = w->c;
    const struct gl_chunk_device *cd = &w->r->devices[d];
    const struct gl_kv *cap_cfg =
        gl_kv_find(c->model_capacity, c->nmodel_capacity, S(w, cd->model));
    bool has_res = !isnan(dv->reserved[t]);
    /* docs/specification.md "Arithmetic": capacity = device used + FREE + RESERVED, FREE and
     * RESERVED each the max over the group (dcgm-exporter copies them
     * onto per-pod series, sometimes only there), device used = the
     * device series, else the pods' value (device) or their sum
     * (process); never one per-pod series' USED plus the copied
     * FREE/RESERVED. A missing FREE or RESERVED counts 0. */
    int64_t cap_ls = -1;
    if (dv->fb) {
        cap_ls = dv->used_dev;
        if (has_free)
            q_add(w, t, cap_ls, dv->free_v, &cap_ls, "USED + FREE + RESERVED (capacity)", d);
        if (has_res)
            q_add(w, t, cap_ls, to_mib(dv->reserved[t]), &cap_ls,
                  "USED + FREE + RESERVED (capacity)", d);
    }
    if (cap_ls < 0) {
        dv->reserved_v = dv->capacity = 0; /* no memory metrics: capacity unknown */
    } else if (cap_cfg && !dv->mig && !has_res) {
        /* docs/specification.md "Missing data": the configured capacity stands in for
         * a missing FB_RESERVED only (reserved = configured capacity −
         * USED − FREE); a reported FB_RESERVED wins, so idle stays FREE */
        int64_t rest = cap_cfg->num > cap_ls ? cap_cfg->num - cap_ls : 0;
        dv->reserved_v = rest;
        dv->capacity = cap_cfg->num;
    } else if (has_res) {
        dv->reserved_v = to_mib(dv->reserved[t]);
        dv->capacity = cap_ls;
    } else {
        dv->reserved_v = 0;
        dv->capacity = cap_ls;
    }
    dv->usable = dv->capacity > dv->reserved_v ? dv->capacity - dv->reserved_v : 0;
}

static void step_devices(struct work *w, size_t t)
{
    const struct gl_config *c = w->c;
    for (size_t d = 0; d < w->devs.n; d++) {
        struct dev *dv = &DEV(w, d);
        if (d + AHEAD < w->devs.n)
            prefetch_device(w, d + AHEAD, t);
        if (!dv->used)
            continue; /* pseudo-device */
        struct pods_at pa = device_pods(w, dv, (int32_t)d, t);
        bool has_dev = !isnan(dv->used[t]);
        bool has_free = !isnan(dv->free_mib[t]);
        dv->fb = has_dev || has_free || pa.npods > 0;
        dv->unknown = !dv->fb && pa.any_seen;
        if (c->attribution == GL_ATTR_DEVICE)
            dv->used_dev = has_dev ? to_mib(dv->used[t]) : (pa.v_max > 0 ? pa.v_max : 0);
        else
            dv->used_dev = has_dev ? to_mib(dv->used[t]) : pa.sum;
        /* a device query configured and silent here: the pods' sum stands in
         * (memory no pod holds is missed), so its pods' figures are estimated */
        dv->dev_estimated = c->mem_device_query && !has_dev && pa.npods > 0;
        if (c->attribution == GL_ATTR_PROCESS)
            copy_check(w, dv, (int32_t)d, &pa, has_dev);
        /* docs/specification.md "Arithmetic" "Missing data": an absent FB_FREE or FB_RESERVED counts as 0;
         * without FB_RESERVED a configured model capacity sets it. */
        struct gl_chunk_device *cdw = &w->r->devices[d];
        if (dv->fb) {
            cdw->fb_seen = true;
            if (!has_free)
                cdw->free_missing = true;
            if (isnan(dv->reserved[t]))
                cdw->reserved_missing = true;
        }
        if (dv->unknown)
            cdw->unknown_usage = true;
        dv->free_v = has_free ? to_mib(dv->free_mib[t]) : 0;
        device_capacity(w, dv, (int32_t)d, t, has_free);
        dv->sum_q = 0;
        dv->idle_q = 0;
        struct node *n = &NODE(w, dv->node);
        if (dv->fb && !dv->mig && dv->usable > n->usable)
            n->usable = dv->usable;
    }
}

/* Usable MiB of one MIG instance of a profile on a node at t. */
static int64_t mig_usable(struct work *w, const struct aser *a, size_t t)
{
    if (!w->node_dev_start) {
        /* the MIG instances of each node: devices with memory series (only
         * those match below; none is added once the steps run) */
        size_t nn = w->nodes.n;
        w->node_dev_nodes = nn;
        w->node_dev_start = gl_xcalloc(nn + 2, sizeof *w->node_dev_start);
        for (size_t d = 0; d < w->devs.n; d++) {
            const struct dev *dv = &DEV(w, d);
            if (dv->mig && dv->used && dv->node >= 0 && (size_t)dv->node < nn)
                w->node_dev_start[dv->node + 2]++;
        }
        for (size_t i = 2; i < nn + 2; i++)
            w->node_dev_start[i] += w->node_dev_start[i - 1];
        w->node_dev_list = gl_xcalloc(w->node_dev_start[nn + 1] + 1, sizeof *w->node_dev_list);
        for (size_t d = 0; d < w->devs.n; d++) {
            const struct dev *dv = &DEV(w, d);
            if (dv->mig && dv->used && dv->node >= 0 && (size_t)dv->node < nn)
                w->node_dev_list[w->node_dev_start[dv->node + 1]++] = (int32_t)d;
        }
    }
    int64_t best = 0;
    if (a->node < 0 || (size_t)a->node >= w->node_dev_nodes) {
        for (size_t d = 0; d < w->devs.n; d++) {
            const struct dev *dv = &DEV(w, d);
            if (dv->node == a->node && dv->mig && dv->used &&
                w->r->devices[d].profile == a->profile && dv->capacity > 0 && dv->usable > best)
                best = dv->usable;
        }
    } else
        for (int32_t k = w->node_dev_start[a->node]; k < w->node_dev_start[a->node + 1]; k++) {
            int32_t d = w->node_dev_list[k];
            const struct dev *dv = &DEV(w, d);
            if (w->r->devices[d].profile == a->profile && dv->capacity > 0 && dv->usable > best)
                best = dv->usable;
        }
    if (best > 0)
        return best;
    const struct gl_kv *kv =
        gl_kv_find(w->c->mig_profiles, w->c->nmig_profiles, S(w, a->profile));
    if (kv)
        return kv->num;
    int64_t mib;
    if (__builtin_mul_overflow(a->mig_gb, 1024, &mib)) {
        overflow_at(w, t, "the MIG profile %.200s of pod %.200s/%.200s on node %.200s exceeds "
                    "the 64-bit range of MiB", S(w, a->profile), S(w, POD(w, a->pod).ns),
                    S(w, POD(w, a->pod).name), S(w, NODE(w, a->node).host));
        return 0;
    }
    return mib;
}

/* Per-unit allocation (MiB) of an allocation series at t. */
static int64_t unit_alloc(struct work *w, const struct aser *a, size_t t)
{
    const struct node *n = &NODE(w, a->node);
    switch (a->kind) {
    case RES_MIG:
        return mig_usable(w, a, t);
    case RES_SHARED:
        return n->usable / n->replicas;
    case RES_GPU:
    default:
        return n->replicas > 1 ? n->usable / n->replicas : n->usable;
    }
}

/* Each node's replicas at t (time-slicing): the configured number, else
 * its replicas label; 1 when neither says more. */
static void step_replicas(struct work *w, size_t t)
{
    const struct gl_config *c = w->c;
    for (size_t i = 0; i < w->nodes.n; i++) {
        struct node *n = &NODE(w, i);
        const struct gl_kv *kv = gl_kv_find(c->replicas, c->nreplicas, S(w, n->host));
        int64_t replicas = kv ? kv->num : 0;
        if (!replicas) {
            if (t < n->rep_from || t >= n->rep_until) { /* its label series' run */
                int32_t li = label_at(&w->nodel, n->labels_key, t, &n->rep_until);
                const char *v = li >= 0 ? gl_series_label(&w->nodel.m->series[li],
                                                          "label_nvidia_com_gpu_replicas")
                                        : NULL;
                n->rep_label = v ? strtoll(v, NULL, 10) : 0;
                n->rep_from = t;
            }
            replicas = n->rep_label;
        }
        n->replicas = replicas >= 1 ? replicas : 1;
    }
}

/* The units an allocation series requests at t; 0 or less for none. */
static int64_t units_at(const struct aser *a, size_t t)
{
    double v = a->values[t];
    return isnan(v) || v <= 0 ? 0 : to_mib(v);
}

/* The GPU time of units of a request for one step, micro-GPU-seconds =
 * units × step × 10^6 × (MIG g/7 | 1/replicas when shared or the node is
 * time-sliced | 1), in 128 bits; false when it overflows. */
static bool gpu_time(const struct aser *a, const struct node *n, int64_t units, int64_t step,
                     gl_i128 *u)
{
    if (__builtin_mul_overflow((gl_i128)units, (gl_i128)step * 1000000, u))
        return false;
    if (a->kind == RES_MIG) {
        bool bad = __builtin_mul_overflow(*u, (gl_i128)a->mig_g, u);
        *u /= 7;
        return !bad;
    }
    if (a->kind == RES_SHARED || n->replicas > 1)
        *u /= n->replicas;
    return true;
}

/* B. Allocation of Running pods at t. */
static void step_allocation(struct work *w, size_t t)
{
    step_replicas(w, t);
    /* a HAMi limit on a node replaces the pod's request allocation there */
    for (size_t k = 0; k < w->ctrs.n; k++) {
        const struct pair *pp = &PAIR(w, CTR(w, k).pair);
        if (!isnan(pp->limit[t]))
            PNODE(w, pp->pnode).limited_t = (int64_t)t;
    }
    const int64_t step = w->r->step;
    for (size_t i = 0; i < w->asers.n; i++) {
        struct aser *a = &ASER(w, i);
        if (i + 16 < w->asers.n) { /* misses a few series ahead: value, cells */
            const struct aser *ahead = &ASER(w, i + 16);
            __builtin_prefetch(ahead->values + t);
            __builtin_prefetch(&PN(w, ahead->pn));
            __builtin_prefetch(&PNODE(w, ahead->pnode));
        }
        int64_t units = units_at(a, t);
        if (units <= 0)
            continue;
        struct pn *pn = &PN(w, a->pn);
        struct pnode *pnode = &PNODE(w, a->pnode);
        const struct node *n = &NODE(w, a->node);
        /* allocation MiB·s = units × per-unit MiB × step, and its GPU time */
        gl_i128 q, u, aq = 0, gu = 0, wu = (gl_i128)pnode->whole_units + units;
        bool bad = __builtin_mul_overflow((gl_i128)units, (gl_i128)unit_alloc(w, a, t), &q) ||
                   __builtin_mul_overflow(q, (gl_i128)step, &q) ||
                   !gpu_time(a, n, units, step, &u);
        if (!bad && pnode->limited_t == (int64_t)t) {
            q = 0; /* the limit is the allocation (its GPU units stay) */
            pn->limited = true;
        }
        if (!bad) {
            aq = pn->alloc_q + q; /* both below 2^63: no 128-bit overflow */
            gu = pn->gpu_u + u;
        }
        if (bad || aq > INT64_MAX || gu > INT64_MAX || wu > INT64_MAX || aq < 0 || gu < 0) {
            const struct pod *po = &POD(w, a->pod);
            overflow_at(w, t,
                        "the allocation of pod %.200s/%.200s on node %.200s (%lld units of "
                        "%.200s) exceeds the 64-bit range of MiB·s or micro-GPU-seconds",
                        S(w, po->ns), S(w, po->name), S(w, n->host), (long long)units,
                        a->kind == RES_MIG ? S(w, a->profile) : "GPU");
            continue;
        }
        pn->alloc_q = (int64_t)aq;
        pn->gpu_u = (int64_t)gu;
        pnode->has_alloc = true;
        if (a->kind != RES_MIG)
            pnode->whole_units = (int64_t)wu;

        touch_pn(w, a->pn);
        touch_pnode(w, a->pnode);
    }
}

/* Allocation of a pod for one device with no memory metrics (MiB·s): one
 * instance of the device's MIG profile, or one whole GPU. */
static int64_t unknown_device_alloc(struct work *w, const struct pair *pp, size_t t)
{
    const struct gl_chunk_device *cd = &w->r->devices[pp->dev];
    const struct dev *dv = &DEV(w, pp->dev);
    if (pp->dev_alloc)
        return pp->dev_q; /* its claim share or HAMi limit */
    for (size_t i = 0; i < w->asers.n; i++) {
        struct aser *a = &ASER(w, i);
        if (a->pnode != pp->pnode || isnan(a->values[t]) || a->values[t] <= 0)
            continue;
        if (dv->mig ? (a->kind == RES_MIG && a->profile == cd->profile) : a->kind != RES_MIG) {
            int64_t q;
            q_mul(w, t, unit_alloc(w, a, t), w->r->step, &q, "the allocation (MiB·s) of a pod",
                  pp->dev);
            return q;
        }
    }
    return 0;
}

static void pnode_add_dev(struct pnode *pn, int32_t dev, int64_t q, bool ok)
{
    if (pn->ndev == pn->capdev) {
        pn->capdev = pn->capdev ? pn->capdev * 2 : 4;
        pn->devs = gl_xrealloc(pn->devs, (size_t)pn->capdev * sizeof *pn->devs);
        pn->devq = gl_xrealloc(pn->devq, (size_t)pn->capdev * sizeof *pn->devq);
        pn->devok = gl_xrealloc(pn->devok, (size_t)pn->capdev * sizeof *pn->devok);
    }
    pn->devs[pn->ndev] = dev;
    pn->devq[pn->ndev] = q;
    pn->devok[pn->ndev] = ok;
    pn->ndev++;
}

/* Adds q MiB·s of the pod's memory on dev to a (pod, node, model)'s
 * devices of this step. */
static void pn_add_dev(struct pn *pn, int32_t dev, int64_t q)
{
    for (int k = 0; k < pn->ndev; k++)
        if (pn->devs[k] == dev) {
            pn->devq[k] += q; /* ≤ the device's memory: fits */
            return;
        }
    if (pn->ndev == pn->capdev) {
        pn->capdev = pn->capdev ? pn->capdev * 2 : 4;
        pn->devs = gl_xrealloc(pn->devs, (size_t)pn->capdev * sizeof *pn->devs);
        pn->devq = gl_xrealloc(pn->devq, (size_t)pn->capdev * sizeof *pn->devq);
    }
    pn->devs[pn->ndev] = dev;
    pn->devq[pn->ndev] = q;
    pn->ndev++;
}

/* "1g.10gb" (any suffix) → g = 1, gb = 10; false when not a MIG profile. */
static bool parse_mig_profile(const char *p, int64_t *g, int64_t *gb)
{
    char *end;
    long a = strtol(p, &end, 10);
    if (end == p || *end != 'g' || end[1] != '.')
        return false;
    p = end + 2;
    long b = strtol(p, &end, 10);
    if (end == p || strncmp(end, "gb", 2) != 0 || a <= 0 || b <= 0)
        return false;
    *g = a;
    *gb = b;
    return true;
}

/* Memory (MiB) a DRA claim allocates on device d at t: the device's usable
 * memory (capacity − reserved) when measured, else for a MIG instance
 * allocation.mig_profiles_mib of its profile or the profile's size × 1024,
 * and for a whole GPU the node's usable memory (0 when nothing says). */
static int64_t claim_mib(struct work *w, int32_t d)
{
    const struct dev *dv = &DEV(w, d);
    if (dv->capacity > 0)
        return dv->usable;
    if (!dv->mig)
        return NODE(w, dv->node).usable;
    const char *prof = S(w, w->r->devices[d].profile);
    const struct gl_kv *kv = gl_kv_find(w->c->mig_profiles, w->c->nmig_profiles, prof);
    int64_t g, gb;
    if (kv)
        return kv->num;
    return parse_mig_profile(prof, &g, &gb) && gb < INT64_MAX / 1024 ? gb * 1024 : 0;
}

/* Order of two pairs of a device: by namespace/pod, first by DRA claim at
 * t when by_claim. */
static int member_cmp(struct work *w, int32_t pa, int32_t pb, size_t t, bool by_claim)
{
    const struct pair *a = &PAIR(w, pa), *b = &PAIR(w, pb);
    if (by_claim && a->claim[t] != b->claim[t])
        return a->claim[t] < b->claim[t] ? -1 : 1;
    const struct pod *x = &POD(w, a->pod), *y = &POD(w, b->pod);
    int cmp = strcmp(S(w, x->ns), S(w, y->ns));
    return cmp ? cmp : strcmp(S(w, x->name), S(w, y->name));
}

/* Insertion sort: a device has a few pods, already nearly in order. */
static void sort_members(struct work *w, int32_t *members, int nm, size_t t, bool by_claim)
{
    for (int i = 1; i < nm; i++)
        for (int j = i; j > 0; j--) {
            if (member_cmp(w, members[j - 1], members[j], t, by_claim) <= 0)
                break;
            int32_t tmp = members[j];
            members[j] = members[j - 1];
            members[j - 1] = tmp;
        }
}

/* Pair p holds its device at t by its own record: q MiB·s of it and gpu
 * micro-GPU-seconds; its rows are the device's (step_claim_rows). */
static void claim_device(struct work *w, int32_t p, int64_t q, int64_t gpu)
{
    struct pair *pp = &PAIR(w, p);
    pp->dev_q = q;
    pp->dev_gpu = gpu;
    pp->dev_alloc = pp->claimed = true;
    w->claimed[w->nclaimed++] = p;
    touch_pn(w, pp->pn);
    touch_pnode(w, pp->pnode);
}

/* The pairs of device d at t: a HAMi limit claims the device at once; the
 * pairs on a DRA claim go to members (returns how many). */
static int limits_and_claims(struct work *w, int32_t d, size_t t, int32_t *members)
{
    const int64_t step = w->r->step;
    int nm = 0;
    for (int32_t p = DEV(w, d).first_pair; p >= 0; p = PAIR(w, p).next) {
        struct pair *pp = &PAIR(w, p);
        pp->dev_alloc = pp->claimed = false;
        pp->dev_q = pp->dev_gpu = 0;
        if (pp->limit && !isnan(pp->limit[t])) {
            struct pn *pn = &PN(w, pp->pn);
            int64_t q;
            if (q_mul(w, t, to_mib(pp->limit[t]), step, &q, "a pod's HAMi memory limit (MiB·s)",
                      d) &&
                q_add(w, t, pn->claim_q, q, &pn->claim_q, "a pod's allocation (MiB·s)", d))
                claim_device(w, p, q, 0);
        } else if (pp->claim && pp->claim[t] >= 0) {
            members[nm++] = p;
        }
    }
    return nm;
}

/* One DRA claim on device d at t, held by the k pairs of members (in
 * namespace/pod order): its MiB split among them, then × step, GPU time
 * likewise (g sevenths of a GPU); false on overflow. */
static bool split_claim(struct work *w, size_t t, int32_t d, const int32_t *members, int k,
                        int64_t g)
{
    const int64_t step = w->r->step;
    gl_i128 *weights = w->scratch_weights, *parts = w->scratch_parts;
    int64_t q;
    /* the claim's MiB split among its pods, then × step (docs/specification.md "Arithmetic") */
    int64_t mib = claim_mib(w, d);
    if (!q_mul(w, t, mib, step, &q, "a DRA claim's allocation (MiB·s)", d))
        return false;
    for (int m = 0; m < k; m++)
        weights[m] = 1;
    if (!gl_split_largest_remainder(mib, weights, (size_t)k, parts))
        overflow_at(w, t, "splitting a DRA claim on %s among %d pods exceeds 128 bits",
                    device_name(w, d), k);
    gl_i128 gq = (gl_i128)step * 1000000 * g / 7;
    gl_i128 *gparts = w->scratch_parts2;
    if (!gl_split_largest_remainder(gq, weights, (size_t)k, gparts))
        overflow_at(w, t, "splitting a DRA claim on %s among %d pods exceeds 128 bits",
                    device_name(w, d), k);
    for (int m = 0; m < k && !w->overflow; m++) {
        struct pn *pn = &PN(w, PAIR(w, members[m]).pn);
        /* each part is at most the claim's MiB: × step fits; the (pod,
         * node, model) keeps the share only as a split weight */
        claim_device(w, members[m], (int64_t)parts[m] * step, (int64_t)gparts[m]);
        q_add(w, t, pn->claim_q, PAIR(w, members[m]).dev_q, &pn->claim_q,
              "a pod's allocation (MiB·s)", d);
    }
    return true;
}

/* B'. Per-device allocation records at t: a HAMi limit is the pod's
 * allocation of the device its series names (device_uuid); a DRA claim on a
 * pod's series allocates the device (its usable memory, a MIG instance its
 * slice), the MiB split among the pods on that claim by floor shares plus
 * the largest remainder, ties by namespace/pod, each share × step
 * (docs/specification.md "Arithmetic"), GPU time likewise (a MIG slice:
 * g/7). Both name their device, so their rows stay on it (step_claim_rows);
 * a HAMi pod's GPU time is its request's, on the node's row. */
static void step_device_alloc(struct work *w, size_t t)
{
    int32_t *members = w->scratch_members;
    for (size_t d = 0; d < w->devs.n; d++) {
        struct dev *dv = &DEV(w, d);
        if (!dv->used)
            continue;
        int nm = limits_and_claims(w, (int32_t)d, t, members);
        /* group by claim, each group in namespace/pod order */
        if (nm > 1) /* most devices have one pod or none: no call */
            sort_members(w, members, nm, t, true);
        int64_t g = 7, gb;
        if (dv->mig && !parse_mig_profile(S(w, w->r->devices[d].profile), &g, &gb))
            g = 0; /* an unknown profile: no GPU share */
        for (int i = 0; i < nm && !w->overflow;) {
            int j = i + 1;
            while (j < nm && PAIR(w, members[j]).claim[t] == PAIR(w, members[i]).claim[t])
                j++;
            if (!split_claim(w, t, (int32_t)d, members + i, j - i, dv->mig ? g : 7))
                break;
            i = j;
        }
    }
}

/* C. Pod memory per device at t. */

/* The pods present on device d at t (their memory, or for a device with no
 * memory metrics their compute series), to members; returns how many. */
static int pods_present(struct work *w, const struct dev *dv, size_t t, int32_t *members)
{
    int nm = 0;
    for (int32_t p = dv->first_pair; p >= 0; p = PAIR(w, p).next) {
        struct pair *pp = &PAIR(w, p);
        pp->q = 0;
        bool present = dv->unknown ? (pp->seen && pp->seen[t]) : !isnan(pp->cur);
        if (present)
            members[nm++] = p;
    }
    return nm;
}

/* Attribution "device": every pod reports the device's memory, so its
 * largest value × step is split among them by largest remainder (weights:
 * their allocation under split "allocation", else equal), ties by
 * namespace/pod. */
static void split_device_copies(struct work *w, int32_t d, size_t t, int32_t *members, int nm)
{
    const struct gl_config *c = w->c;
    gl_i128 *weights = w->scratch_weights, *parts = w->scratch_parts;
    sort_members(w, members, nm, t, false);
    int64_t v = 0;
    for (int k = 0; k < nm; k++) {
        int64_t x = to_mib(PAIR(w, members[k]).cur);
        if (x > v)
            v = x;
    }
    bool any_w = false;
    for (int k = 0; k < nm; k++) {
        weights[k] = 1;
        if (c->split == GL_SPLIT_ALLOCATION) {
            const struct pn *wpn = &PN(w, PAIR(w, members[k]).pn);
            weights[k] = (gl_i128)wpn->alloc_q + wpn->claim_q;
            any_w |= weights[k] > 0;
        }
    }
    if (c->split == GL_SPLIT_ALLOCATION && !any_w)
        for (int k = 0; k < nm; k++)
            weights[k] = 1;
    int64_t vq;
    /* the parts are at most v × step: they fit when it does */
    if (q_mul(w, t, v, w->r->step, &vq, "the device's memory (MiB·s)", d) &&
        !gl_split_largest_remainder(vq, weights, (size_t)nm, parts)) {
        overflow_at(w, t, "splitting the memory of %s among %d pods exceeds 128 bits",
                    device_name(w, d), nm);
    }
    for (int k = 0; k < nm; k++)
        PAIR(w, members[k]).q = w->overflow ? 0 : (int64_t)parts[k];
}

/* memory_used rows, advice peaks, anomalies' cells and usage per (pod,
 * node, model) of the members of device d at t; the teams with memory on
 * it go to teams (returns how many). */
static int pod_rows(struct work *w, struct dev *dv, int32_t d, size_t t, const int32_t *members,
                    int nm, bool estimated, int32_t *teams)
{
    const int64_t step = w->r->step;
    int nteams = 0;
    for (int k = 0; k < nm; k++) {
        struct pair *pp = &PAIR(w, members[k]);
        if (pp->q <= 0)
            continue;
        const struct pod *po = &POD(w, pp->pod);
        int32_t team = team_at(w, pp->pod, t);
        add(w, t, d, po->ns, po->name, team, GL_KIND_MEMORY_USED, pp->q, estimated);
        /* advice (never billed): the MiB the pod held at t and its allocation */
        gl_peaks_add(&w->r->peaks, w->hour_of_t, d, po->ns, po->name, pp->q / step,
                     (pp->claimed ? pp->dev_q : PN(w, pp->pn).alloc_q) / step,
                     (pp->claimed ? pp->dev_gpu : PN(w, pp->pn).gpu_u) / step);
        q_add(w, t, dv->sum_q, pp->q, &dv->sum_q, "the pods' memory (MiB·s)", d);
        struct pn *pn = &PN(w, pp->pn);
        if (!pp->claimed) { /* a claimed device's memory is set against its claim */
            q_add(w, t, pn->used_q, pp->q, &pn->used_q, "a pod's memory on its node (MiB·s)", d);
            touch_pn(w, pp->pn);
            pn_add_dev(pn, d, pp->q);
        }
        struct pnode *pnode = &PNODE(w, pp->pnode);
        touch_pnode(w, pp->pnode);
        if (!dv->mig)
            pnode_add_dev(pnode, d, pp->q, pp->dev_alloc);
        int i;
        for (i = 0; i < nteams && teams[i] != team; i++)
            ;
        if (i == nteams)
            teams[nteams++] = team;
    }
    return nteams;
}

/* compute indicator: one (device, step) per team with memory on it */
static void busy_rows(struct work *w, const struct dev *dv, int32_t d, size_t t,
                      const int32_t *teams, int nteams)
{
    const int32_t e = w->empty;
    if (!dv->busy || isnan(dv->busy[t]))
        return;
    double b = dv->busy[t] < 0 ? 0 : dv->busy[t] * 1e6;
    if (!(b < 9.0e15)) {
        overflow_at(w, t, "the busy ratio %g of %s is beyond any plausible value", dv->busy[t],
                    device_name(w, d));
        b = 0;
    }
    int64_t ppm = (int64_t)llround(b);
    for (int i = 0; i < nteams; i++) {
        add(w, t, d, e, e, teams[i], GL_KIND_BUSY_PPM, ppm, false);
        add(w, t, d, e, e, teams[i], GL_KIND_BUSY_STEPS, 1, false);
    }
}

/* device rows; idle is written after pass D may reduce it */
static void device_rows(struct work *w, struct dev *dv, int32_t d, size_t t)
{
    const int64_t step = w->r->step;
    const int32_t e = w->empty;
    if (dv->capacity <= 0) {
        /* capacity unknown (0 in the reconciliation): what its pods are
         * billed is beyond it, so the device row adds up (docs/specification.md "Arithmetic") */
        add(w, t, d, e, e, e, GL_KIND_EXCESS, dv->sum_q, false);
        return;
    }
    int64_t cap, res, used_dev, taken;
    q_mul(w, t, dv->capacity, step, &cap, "the capacity (MiB·s)", d);
    q_mul(w, t, dv->reserved_v, step, &res, "the driver-reserved memory (MiB·s)", d);
    q_mul(w, t, dv->used_dev, step, &used_dev, "the device's memory (MiB·s)", d);
    int64_t unatt = used_dev > dv->sum_q ? used_dev - dv->sum_q : 0;
    q_add(w, t, res, unatt, &taken, "reserved + unattributed (MiB·s)", d);
    q_add(w, t, taken, dv->sum_q, &taken, "reserved + unattributed + used (MiB·s)", d);
    add(w, t, d, e, e, e, GL_KIND_CAPACITY, cap, false);
    add(w, t, d, e, e, e, GL_KIND_RESERVED, res, false);
    add(w, t, d, e, e, e, GL_KIND_UNATTRIBUTED, unatt, false);
    add(w, t, d, e, e, e, GL_KIND_EXCESS, taken > cap ? taken - cap : 0, false);
    dv->idle_q = cap > taken ? cap - taken : 0;
}

static void step_pods(struct work *w, size_t t)
{
    const struct gl_config *c = w->c;
    const int64_t step = w->r->step;
    const int32_t e = w->empty;
    /* scratch sized for the most pods on one device (prepare_steps) */
    int32_t *teams = w->scratch_teams;
    int32_t *members = w->scratch_members;
    for (size_t d = 0; d < w->devs.n; d++) {
        struct dev *dv = &DEV(w, d);
        if (!dv->used)
            continue;
        bool estimated = dv->dev_estimated;
        int nm = pods_present(w, dv, t, members);
        if (nm == 0 && !dv->fb)
            continue;
        if (dv->unknown) {
            for (int k = 0; k < nm; k++) {
                struct pair *pp = &PAIR(w, members[k]);
                pp->q = unknown_device_alloc(w, pp, t);
            }
            estimated = true;
            add(w, t, (int32_t)d, e, e, e, GL_KIND_UNKNOWN_STEPS, 1, false);
        } else if (c->attribution == GL_ATTR_DEVICE && nm > 0) {
            split_device_copies(w, (int32_t)d, t, members, nm);
            estimated = true;
        } else {
            for (int k = 0; k < nm; k++)
                q_mul(w, t, to_mib(PAIR(w, members[k]).cur), step, &PAIR(w, members[k]).q,
                      "a pod's memory (MiB·s)", (int32_t)d);
        }
        int nteams = pod_rows(w, dv, (int32_t)d, t, members, nm, estimated, teams);
        busy_rows(w, dv, (int32_t)d, t, teams, nteams);
        device_rows(w, dv, (int32_t)d, t);
    }
}

static int32_t pseudo_device(struct work *w, struct pn *pn)
{
    if (pn->pseudo_dev >= 0)
        return pn->pseudo_dev;
    const struct node *n = &NODE(w, pn->node);
    gl_buf_reset(&w->scratch);
    if (!gl_buf_printf(&w->scratch, "node:%s", S(w, n->host))) {
        fputs("gpuledger: out of memory\n", stderr);
        abort();
    }
    int32_t uuid = str(w, w->scratch.data);
    int32_t key = key3(w, w->devkeys, S(w, n->cluster), S(w, uuid), S(w, pn->model));
    if ((size_t)key >= w->devs.n) {
        struct gl_chunk_device *cd = new_chunk_device(w);
        cd->pseudo = true;
        cd->cluster = n->cluster;
        cd->uuid = uuid;
        cd->gpu_i_id = pn->model;
        cd->profile = w->empty;
        cd->model = pn->model;
        cd->hostname = n->host;
        DEV(w, key).node = pn->node;
    }
    pn->pseudo_dev = key;
    return key;
}

/* Billed reserved-unused ru of pn at t, placed on devices (docs/specification.md "Arithmetic": excess
 * is kept per device). It is taken from the idle of the node's devices of
 * that model in ascending (UUID, GPU_I_ID) order (Kubernetes does not say
 * which device of the node the pod got, docs/specification.md "Attribution"); what no idle covers is
 * excess on the device where the pod holds the most memory this step (ties:
 * that order), else on the node's first device of that model with a known
 * capacity, else on the node's allocation row (pseudo). */
static void place_reserved_unused(struct work *w, size_t t, struct pn *pn, int64_t ru,
                                  int32_t pseudo)
{
    const int32_t e = w->empty;
    int32_t target = -1;
    for (int k = 0; k < pn->ndev; k++)
        if (target < 0 || pn->devq[k] > pn->devq[target] ||
            (pn->devq[k] == pn->devq[target] &&
             DEV(w, pn->devs[k]).rank < DEV(w, pn->devs[target]).rank))
            target = k;
    target = target >= 0 ? pn->devs[target] : -1;
    for (size_t i = 0; i < w->ndev_order && ru > 0; i++) {
        int32_t d = w->dev_order[i];
        struct dev *dv = &DEV(w, d);
        if (dv->node != pn->node || w->r->devices[d].model != pn->model)
            continue;
        if (target < 0 && dv->capacity > 0)
            target = d;
        int64_t take = dv->idle_q < ru ? dv->idle_q : ru;
        dv->idle_q -= take;
        ru -= take;
        add(w, t, d, e, e, e, GL_KIND_DEVICE_RU_BILLED, take, false);
    }
    if (ru > 0) {
        add(w, t, target >= 0 ? target : pseudo, e, e, e, GL_KIND_EXCESS, ru, false);
        if (target >= 0)
            add(w, t, target, e, e, e, GL_KIND_DEVICE_RU_BILLED, ru, false);
    }
}

/* D. Reserved-unused per (pod, node, model); excess devices per (pod,
 * node); E. idle after billed reserved-unused. */
static _Thread_local struct work *sort_work; /* qsort has no context argument */

/* (cluster, namespace, pod, node, model) order of two (pod, node, model). */
static int pn_cmp(const void *pa, const void *pb)
{
    const struct work *w = sort_work;
    const struct pn *a = &PN(w, *(const int32_t *)pa), *b = &PN(w, *(const int32_t *)pb);
    const struct node *na = &NODE(w, a->node), *nb = &NODE(w, b->node);
    const struct pod *oa = &POD(w, a->pod), *ob = &POD(w, b->pod);
    int32_t ka[5] = {na->cluster, oa->ns, oa->name, na->host, a->model};
    int32_t kb[5] = {nb->cluster, ob->ns, ob->name, nb->host, b->model};
    for (int i = 0; i < 5; i++) {
        int cmp = strcmp(S(w, ka[i]), S(w, kb[i]));
        if (cmp)
            return cmp;
    }
    return 0;
}

/* (UUID, GPU_I_ID) order of two devices. */
static int dev_cmp(const void *pa, const void *pb)
{
    const struct work *w = sort_work;
    const struct gl_chunk_device *a = &w->r->devices[*(const int32_t *)pa];
    const struct gl_chunk_device *b = &w->r->devices[*(const int32_t *)pb];
    int cmp = strcmp(S(w, a->uuid), S(w, b->uuid));
    return cmp ? cmp : strcmp(S(w, a->gpu_i_id), S(w, b->gpu_i_id));
}

/* A pod's allocation rows at t on dev: allocated, its GPU time,
 * reserved-unused = allocated − used when positive, and under a basis that
 * bills it (basis.h: max) the same billed; returns the billed
 * reserved-unused (0 under the others). */
static int64_t alloc_rows(struct work *w, size_t t, int32_t dev, int32_t podi, int64_t alloc,
                          int64_t gpu, int64_t used)
{
    const struct pod *po = &POD(w, podi);
    int32_t team = team_at(w, podi, t);
    int64_t ru = alloc > used ? alloc - used : 0;
    add(w, t, dev, po->ns, po->name, team, GL_KIND_ALLOCATED, alloc, false);
    add(w, t, dev, po->ns, po->name, team, GL_KIND_ALLOCATED_GPU, gpu, false);
    add(w, t, dev, po->ns, po->name, team, GL_KIND_RESERVED_UNUSED, ru, false);
    if (!w->c->basis->bills_reserved_unused || ru == 0)
        return 0;
    add(w, t, dev, po->ns, po->name, team, GL_KIND_RESERVED_UNUSED_BILLED, ru, false);
    return ru;
}

/* The rows at t of a DRA claim or a HAMi limit, on the device it names
 * (docs/specification.md "Arithmetic"): the pod's allocated share or limit,
 * a claim's GPU time, reserved-unused = allocation − its memory there;
 * under basis max the billed reserved-unused comes out of that device's
 * idle and what idle does not cover is that device's excess, never another
 * device's. */
static void step_claim_rows(struct work *w, size_t t)
{
    const int32_t e = w->empty;
    for (size_t i = 0; i < w->nclaimed; i++) {
        struct pair *pp = &PAIR(w, w->claimed[i]);
        int32_t d = pp->dev;
        struct dev *dv = &DEV(w, d);
        int64_t ru = alloc_rows(w, t, d, pp->pod, pp->dev_q, pp->dev_gpu, pp->q);
        if (ru > 0) {
            int64_t take = dv->idle_q < ru ? dv->idle_q : ru;
            dv->idle_q -= take;
            add(w, t, d, e, e, e, GL_KIND_DEVICE_RU_BILLED, ru, false);
            if (ru > take)
                add(w, t, d, e, e, e, GL_KIND_EXCESS, ru - take, false);
        }
    }
    w->nclaimed = 0;
}

/* The rows of each (pod, node, model) touched at t on its node's
 * allocation row, its billed reserved-unused placed on devices; the cells
 * emptied for the next step. */
static void pn_rows(struct work *w, size_t t)
{
    /* a basis billing reserved-unused takes idle pod by pod: in a fixed
     * order, whatever the series order */
    if (w->c->basis->bills_reserved_unused && w->ntouched_pn > 1) {
        sort_work = w;
        qsort(w->touched_pn, w->ntouched_pn, sizeof *w->touched_pn, pn_cmp);
    }
    for (size_t i = 0; i < w->ntouched_pn; i++) {
        struct pn *pn = &PN(w, w->touched_pn[i]);
        if (i + 8 < w->ntouched_pn) /* cells in touch order: a miss each, asked ahead */
            __builtin_prefetch(&PN(w, w->touched_pn[i + 8]));
        if (pn->alloc_q > 0 || pn->limited) {
            int32_t dev = pseudo_device(w, pn);
            int64_t ru = alloc_rows(w, t, dev, pn->pod, pn->alloc_q, pn->gpu_u, pn->used_q);
            if (ru > 0)
                place_reserved_unused(w, t, pn, ru, dev);
        }
        pn->alloc_q = pn->used_q = pn->gpu_u = pn->claim_q = 0;
        pn->limited = false;
        pn->ndev = 0;
        pn->touched = false;
    }
    w->ntouched_pn = 0;
}

/* A (pod, node)'s devices by memory, largest first (ties: UUID). */
static void sort_by_memory(struct work *w, struct pnode *pnode)
{
    for (int a = 1; a < pnode->ndev; a++)
        for (int b = a; b > 0; b--) {
            int64_t qa = pnode->devq[b - 1], qb = pnode->devq[b];
            int cmp = qa != qb ? (qa < qb ? 1 : -1)
                               : strcmp(S(w, w->r->devices[pnode->devs[b - 1]].uuid),
                                        S(w, w->r->devices[pnode->devs[b]].uuid));
            if (cmp <= 0)
                break;
            int32_t td = pnode->devs[b];
            pnode->devs[b] = pnode->devs[b - 1];
            pnode->devs[b - 1] = td;
            int64_t tq = pnode->devq[b];
            pnode->devq[b] = pnode->devq[b - 1];
            pnode->devq[b - 1] = tq;
        }
}

/* The anomalies of a (pod, node) at t on full GPUs: memory without any
 * allocation on the node, or on more devices than it was allocated. */
static void pnode_anomalies(struct work *w, size_t t, struct pnode *pnode)
{
    const struct pod *po = &POD(w, pnode->pod);
    int64_t r_whole = pnode->whole_units;
    /* devices with their own allocation record (a DRA claim, a HAMi
     * limit) are allocated: neither unallocated use nor excess */
    int nk = 0;
    for (int k = 0; k < pnode->ndev; k++)
        if (!pnode->devok[k]) {
            pnode->devs[nk] = pnode->devs[k];
            pnode->devq[nk] = pnode->devq[k];
            pnode->devok[nk++] = false;
        }
    pnode->ndev = nk;
    if (pnode->ndev == 0)
        return;
    int32_t team = team_at(w, pnode->pod, t);
    if (!pnode->has_alloc) {
        for (int k = 0; k < pnode->ndev; k++)
            add(w, t, pnode->devs[k], po->ns, po->name, team, GL_KIND_ANOMALY_UNALLOCATED,
                pnode->devq[k], false);
    } else if (pnode->ndev > r_whole) {
        /* keep the r largest (by memory, then UUID); flag the rest */
        sort_by_memory(w, pnode);
        for (int k = (int)r_whole; k < pnode->ndev; k++)
            add(w, t, pnode->devs[k], po->ns, po->name, team, GL_KIND_ANOMALY_EXCESS_DEVICES,
                pnode->devq[k], false);
    }
}

/* D. and E. at t: the allocation rows, anomalies and idle; every cell
 * touched is emptied for the next step. */
static void step_allocation_rows(struct work *w, size_t t)
{
    const int32_t e = w->empty;
    step_claim_rows(w, t);
    pn_rows(w, t);
    for (size_t i = 0; i < w->ntouched_pnode; i++) {
        struct pnode *pnode = &PNODE(w, w->touched_pnode[i]);
        if (i + 8 < w->ntouched_pnode)
            __builtin_prefetch(&PNODE(w, w->touched_pnode[i + 8]));
        if (i + 4 < w->ntouched_pnode) { /* its cell arrays, the cell being near */
            const struct pnode *ahead = &PNODE(w, w->touched_pnode[i + 4]);
            __builtin_prefetch(ahead->devok);
            __builtin_prefetch(ahead->devs);
            __builtin_prefetch(ahead->devq);
        }
        pnode_anomalies(w, t, pnode);
        pnode->ndev = 0;
        pnode->whole_units = 0;
        pnode->has_alloc = false;
        pnode->touched = false;
    }
    w->ntouched_pnode = 0;
    for (size_t d = 0; d < w->devs.n; d++) {
        struct dev *dv = &DEV(w, d);
        if (dv->used)
            add(w, t, (int32_t)d, e, e, e, GL_KIND_IDLE, dv->idle_q, false);
    }
}

/* Unallocated use on MIG instances: memory on a device of a node where the
 * pod holds no allocation (the whole-GPU case is handled with the pnode's
 * device list in step_allocation_rows). */
static void step_mig_unallocated(struct work *w, size_t t)
{
    for (size_t d = 0; d < w->devs.n; d++) {
        struct dev *dv = &DEV(w, d);
        if (!dv->used || !dv->mig)
            continue;
        for (int32_t p = dv->first_pair; p >= 0; p = PAIR(w, p).next) {
            struct pair *pp = &PAIR(w, p);
            if (pp->q <= 0 || PNODE(w, pp->pnode).has_alloc || pp->dev_alloc)
                continue;
            const struct pod *po = &POD(w, pp->pod);
            add(w, t, (int32_t)d, po->ns, po->name, team_at(w, pp->pod, t),
                GL_KIND_ANOMALY_UNALLOCATED, pp->q, false);
        }
    }
}

static void seen_range(struct work *w, size_t t)
{
    int64_t ts = w->r->start + (int64_t)t * w->r->step;
    for (size_t d = 0; d < w->devs.n; d++) {
        struct dev *dv = &DEV(w, d);
        if (!dv->used || !(dv->fb || dv->unknown))
            continue;
        struct gl_chunk_device *cd = &w->r->devices[d];
        if (cd->first_seen < 0)
            cd->first_seen = ts;
        cd->last_seen = ts;
        if (dv->capacity > cd->max_capacity_mib)
            cd->max_capacity_mib = dv->capacity;
        if (dv->multi_model) {
            size_t h = (size_t)((int64_t)t * w->r->step / 3600);
            if (!dv->hour_cap)
                dv->hour_cap = gl_xcalloc(w->r->nhours + 1, sizeof *dv->hour_cap);
            if (dv->capacity > dv->hour_cap[h])
                dv->hour_cap[h] = dv->capacity;
        }
    }
}

/* ---- a device's model per hour ----
 *
 * A GPU's model is a fact of each hour, not of the device: a UUID whose
 * series name another modelName from some hour on (a board swapped under
 * the same UUID, a relabelled exporter) is priced at each hour's model.
 * The chunk is attributed with one model per device (the first series'),
 * then split here: the device's rows of the hours of another model move to
 * a copy of the device carrying that model (same cluster, UUID and
 * GPU_I_ID; the store keeps the model per device and hour), so a chunk of
 * several hours stores what chunks of one hour would. An hour's model is
 * that of the device's last sample in the hour (a model that starts
 * mid-hour takes the whole hour); an hour without a named sample keeps the
 * hour before's. A node's allocation pseudo-devices follow the hours of
 * the node's first full GPU that changed. */

/* The model of each hour of device d (nh slots, -1 when none is named),
 * from the series naming one; false when no hour names one. */
static bool hour_models(struct work *w, int32_t d, int32_t *hm, int64_t *last)
{
    size_t nh = w->r->nhours, sph = (size_t)(3600 / w->r->step);
    for (size_t h = 0; h < nh; h++) {
        hm[h] = -1;
        last[h] = -1;
    }
    for (size_t i = 0; i < w->model_notes.n; i++) {
        const struct model_note *n = &((struct model_note *)w->model_notes.data)[i];
        if (n->dev != d)
            continue;
        for (size_t h = 0; h < nh; h++)
            for (size_t t = (h + 1) * sph; t-- > h * sph;)
                if (!isnan(n->values[t])) {
                    if ((int64_t)t > last[h]) { /* a tie keeps the series read first */
                        last[h] = (int64_t)t;
                        hm[h] = n->model;
                    }
                    break;
                }
    }
    int32_t prev = -1;
    for (size_t h = 0; h < nh; h++)
        prev = hm[h] = hm[h] >= 0 ? hm[h] : prev;
    if (prev < 0)
        return false;
    for (size_t h = nh; h-- > 0;) /* leading hours: the first model named */
        prev = hm[h] = hm[h] >= 0 ? hm[h] : prev;
    return true;
}

/* Device d split into runs of hours of one model (hm): run k > 0 becomes
 * a copy of d; map[h] = the device of hour h. */
static void split_device(struct work *w, int32_t d, const int32_t *hm, int32_t *map)
{
    struct gl_rollup *r = w->r;
    size_t nh = r->nhours;
    int64_t first = r->devices[d].first_seen, last = r->devices[d].last_seen;
    bool pseudo = r->devices[d].pseudo;
    for (size_t h0 = 0; h0 < nh;) {
        size_t h1 = h0 + 1;
        while (h1 < nh && hm[h1] == hm[h0])
            h1++;
        int32_t dev = d;
        if (h0 > 0) {
            struct gl_chunk_device copy = r->devices[d];
            new_chunk_device(w);
            dev = (int32_t)(r->ndevices - 1);
            r->devices[dev] = copy;
            DEV(w, dev).node = DEV(w, d).node;
        }
        struct gl_chunk_device *cd = &r->devices[dev];
        cd->model = hm[h0];
        if (pseudo)
            cd->gpu_i_id = hm[h0]; /* a node's pseudo-device is one per model */
        int64_t from = r->start + (int64_t)h0 * 3600, to = r->start + (int64_t)h1 * 3600;
        /* seen within the run's hours (the store reads each run's model for them) */
        cd->first_seen = pseudo || first < from || first >= to ? from : first;
        cd->last_seen = pseudo || last < from || last >= to ? to - 1 : last;
        if (DEV(w, d).hour_cap) {
            cd->max_capacity_mib = 0;
            for (size_t h = h0; h < h1; h++)
                if (DEV(w, d).hour_cap[h] > cd->max_capacity_mib)
                    cd->max_capacity_mib = DEV(w, d).hour_cap[h];
        }
        for (size_t h = h0; h < h1; h++)
            map[h] = dev;
        h0 = h1;
    }
}

static void split_model_hours(struct work *w)
{
    if (!w->multi_model)
        return;
    struct gl_rollup *r = w->r;
    size_t nh = r->nhours, ndev = r->ndevices;
    if (!nh)
        return;
    int32_t *hm = gl_xcalloc(ndev * nh, sizeof *hm);
    int32_t *map = gl_xcalloc(ndev * nh, sizeof *map);
    int64_t *last = gl_xcalloc(nh, sizeof *last);
    bool *split = gl_xcalloc(ndev, sizeof *split);
    int32_t *node_src = gl_xcalloc(w->nodes.n + 1, sizeof *node_src);
    for (size_t i = 0; i < w->nodes.n; i++)
        node_src[i] = -1;
    for (size_t d = 0; d < ndev; d++)
        if (DEV(w, d).multi_model && hour_models(w, (int32_t)d, &hm[d * nh], last)) {
            split[d] = true;
            int32_t node = DEV(w, d).node;
            if (!DEV(w, d).mig && node >= 0 && node_src[node] < 0)
                node_src[node] = (int32_t)d;
        }
    for (size_t d = 0; d < ndev; d++) {
        int32_t node = DEV(w, d).node;
        if (r->devices[d].pseudo && node >= 0 && node_src[node] >= 0 &&
            r->devices[d].model == NODE(w, node).model) {
            memcpy(&hm[d * nh], &hm[(size_t)node_src[node] * nh], nh * sizeof *hm);
            split[d] = true;
        }
    }
    for (size_t d = 0; d < ndev; d++)
        if (split[d])
            split_device(w, (int32_t)d, &hm[d * nh], &map[d * nh]);
    for (size_t i = 0; i < r->nentries; i++) {
        struct gl_rollup_entry *e = &r->slots[i];
        if ((size_t)e->device < ndev && split[e->device])
            e->device = map[(size_t)e->device * nh + (size_t)e->hour];
    }
    if (r->nindex)
        rollup_reindex(r);
    GL_FREE_EACH(hm, map, last, split, node_src);
}

static char *prefixed(const char *prefix, const char *s)
{
    size_t n = strlen(prefix) + strlen(s) + 1;
    char *p = gl_xcalloc(n, 1);
    snprintf(p, n, "%s%s", prefix, s);
    return p;
}

/* The work's tables, empty, for a chunk of in's grid. */
static void work_init(struct work *w, const struct gl_config *c, const struct gl_chunk_input *in,
                      struct gl_rollup *r)
{
    memset(r, 0, sizeof *r);
    const struct gl_matrix *m = in->memory;
    r->start = m->start;
    r->step = m->step;
    r->nsteps = m->nsteps;
    r->nhours = (size_t)((int64_t)m->nsteps * m->step / 3600);
    r->strings = gl_intern_new();
    r->samples_per_hour = gl_xcalloc(r->nhours + 1, sizeof *r->samples_per_hour);
    r->bad_samples = m->bad_samples;
    *w = (struct work){.c = c, .in = in, .r = r, .hour_t = SIZE_MAX};
    w->ens_label = prefixed("exported_", c->namespace_label);
    w->epod_label = prefixed("exported_", c->pod_label);
    gl_buf_init(&w->keybuf);
    gl_buf_init(&w->teambuf);
    gl_buf_init(&w->scratch);
    gl_buf_init(&w->why);
    w->devs.size = sizeof(struct dev);
    w->pairs.size = sizeof(struct pair);
    w->pods.size = sizeof(struct pod);
    w->nodes.size = sizeof(struct node);
    w->pns.size = sizeof(struct pn);
    w->pnodes.size = sizeof(struct pnode);
    w->asers.size = sizeof(struct aser);
    w->ctrs.size = sizeof(struct ctr_limit);
    w->model_notes.size = sizeof(struct model_note);
    w->psers.size = sizeof(struct aser);
    struct gl_intern **tables[WORK_TABLES];
    work_tables(w, tables);
    for (size_t i = 0; i < WORK_TABLES; i++)
        *tables[i] = gl_intern_new();
    w->empty = str(w, "");
}

/* The chunk's series indexed: memory samples per hour, devices and pairs,
 * limits, FB_FREE/FB_RESERVED, busy, labels, nodes, allocation series. */
static void index_inputs(struct work *w)
{
    const struct gl_chunk_input *in = w->in;
    const struct gl_matrix *m = in->memory;
    size_t steps_per_hour = (size_t)(3600 / m->step);
    for (size_t i = 0; i < m->nseries; i++)
        for (size_t t = 0; t < m->nsteps; t++)
            if (!isnan(m->series[i].values[t]))
                w->r->samples_per_hour[t / steps_per_hour]++;
    add_memory(w, m);
    add_limits(w);
    add_device_metric(w, in->fb_free, true);
    add_device_metric(w, in->fb_reserved, false);
    add_compute(w);
    index_labels(w, &w->pl, in->pod_labels, 0);
    index_labels(w, &w->nl, in->ns_labels, 1);
    index_labels(w, &w->nodel, in->node_labels, 2);
    resolve_nodes(w);
    add_allocations(w);
}

/* The devices' (UUID, GPU_I_ID) order and the per-step scratch, sized
 * for the most pods on one device and every cell. */
static void prepare_steps(struct work *w)
{
    w->dev_order = gl_xcalloc(w->devs.n + 1, sizeof *w->dev_order);
    for (size_t d = 0; d < w->devs.n; d++)
        if (DEV(w, d).used)
            w->dev_order[w->ndev_order++] = (int32_t)d;
    sort_work = w;
    qsort(w->dev_order, w->ndev_order, sizeof *w->dev_order, dev_cmp);
    for (size_t i = 0; i < w->ndev_order; i++)
        DEV(w, w->dev_order[i]).rank = (int32_t)i;
    size_t max_pairs = 1;
    for (size_t d = 0; d < w->devs.n; d++) {
        size_t k = 0;
        for (int32_t p = DEV(w, d).first_pair; p >= 0; p = PAIR(w, p).next)
            k++;
        if (k > max_pairs)
            max_pairs = k;
    }
    w->scratch_members = gl_xcalloc(max_pairs, sizeof *w->scratch_members);
    w->scratch_teams = gl_xcalloc(max_pairs, sizeof *w->scratch_teams);
    w->scratch_weights = gl_xcalloc(max_pairs, sizeof *w->scratch_weights);
    w->scratch_parts = gl_xcalloc(max_pairs, sizeof *w->scratch_parts);
    w->scratch_parts2 = gl_xcalloc(max_pairs, sizeof *w->scratch_parts2);
    w->touched_pn = gl_xcalloc(w->pns.n + 1, sizeof *w->touched_pn);
    w->touched_pnode = gl_xcalloc(w->pnodes.n + 1, sizeof *w->touched_pnode);
    w->claimed = gl_xcalloc(w->pairs.n + 1, sizeof *w->claimed);
}

/* Every step attributed, in the passes' order, until the first overflow;
 * then the last hour staged out and the devices split by model. */
static void run_steps(struct work *w)
{
    for (size_t t = 0; t < w->r->nsteps && !w->overflow; t++) {
        for (size_t i = 0; i < w->nodes.n; i++)
            NODE(w, i).usable = 0;
        step_devices(w, t);
        step_allocation(w, t);
        step_device_alloc(w, t);
        step_pods(w, t);
        step_mig_unallocated(w, t);
        step_allocation_rows(w, t);
        step_pending(w, t);
        seen_range(w, t);
    }
    stage_flush(w);
    if (!w->overflow)
        split_model_hours(w);
}

/* The series copies of the devices, pairs and cells. */
static void work_free_cells(struct work *w)
{
    for (size_t d = 0; d < w->devs.n; d++) {
        struct dev *dv = &DEV(w, d);
        GL_FREE_EACH(dv->used, dv->free_mib, dv->reserved, dv->busy, dv->hour_cap);
    }
    for (size_t p = 0; p < w->pairs.n; p++) {
        free(PAIR(w, p).values);
        free(PAIR(w, p).seen);
        free(PAIR(w, p).claim);
        free(PAIR(w, p).limit);
    }
    for (size_t p = 0; p < w->pnodes.n; p++) {
        free(PNODE(w, p).devs);
        free(PNODE(w, p).devq);
        free(PNODE(w, p).devok);
    }
    for (size_t p = 0; p < w->pns.n; p++) {
        free(PN(w, p).devs);
        free(PN(w, p).devq);
    }
}

/* Everything of w but r (the caller's); the overflow kept, if any, is the
 * error. */
static enum gl_status work_free(struct work *w, struct gl_error *err)
{
    free(w->stage);
    free(w->stage_slots);
    free(w->node_dev_start);
    free(w->node_dev_list);
    work_free_cells(w);
    free(w->dev_order);
    struct vec *vecs[] = {&w->devs, &w->pairs,  &w->pods,  &w->nodes, &w->pns,
                          &w->pnodes, &w->asers, &w->ctrs, &w->model_notes, &w->psers};
    for (size_t i = 0; i < sizeof vecs / sizeof *vecs; i++)
        free(vecs[i]->data);
    void *scratch[] = {w->touched_pn,      w->touched_pnode, w->claimed,
                       w->scratch_members, w->scratch_teams, w->scratch_weights,
                       w->scratch_parts,   w->scratch_parts2};
    for (size_t i = 0; i < sizeof scratch / sizeof *scratch; i++)
        free(scratch[i]);
    struct label_index *lis[] = {&w->pl, &w->nl, &w->nodel};
    for (size_t i = 0; i < 3; i++) {
        free(lis[i]->head);
        free(lis[i]->next);
        free(lis[i]->lo);
        free(lis[i]->hi);
    }
    struct gl_intern **tables[WORK_TABLES];
    work_tables(w, tables);
    for (size_t i = 0; i < WORK_TABLES; i++)
        gl_intern_free(*tables[i]);
    enum gl_status rc = GL_OK;
    if (w->overflow)
        rc = gl_error_set(err, GL_ERR_PROM,
                          "integer overflow: %s; the samples are beyond any plausible GPU "
                          "memory or GPU count (nothing of this chunk is stored)",
                          w->why.data ? w->why.data : "");
    free(w->ens_label);
    free(w->epod_label);
    struct gl_buf *bufs[] = {&w->keybuf, &w->teambuf, &w->scratch, &w->why};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        gl_buf_free(bufs[i]);
    return rc;
}

enum gl_status gl_integrate(const struct gl_config *c, const struct gl_chunk_input *in,
                            struct gl_rollup *r, struct gl_error *err)
{
    struct work w;
    work_init(&w, c, in, r);
    index_inputs(&w);
    prepare_steps(&w);
    run_steps(&w);
    return work_free(&w, err);
}

/* ---- demand waiting: GPUs requested by Pending pods ---- */

/* A phase="Pending" series of the join (gl_allocation_join) is kept apart
 * from the allocation: true when s is one. Its model is its node's when the
 * pod is scheduled, the MIG profile's model on that node, else "unknown"
 * (an unscheduled pod's request names no model). */
static bool add_pending(struct work *w, const struct gl_series *s, const char *ns,
                        const char *pod, const char *host, const char *res)
{
    const char *phase = gl_series_label(s, "phase");
    if (!phase || strcmp(phase, "Pending") != 0)
        return false;
    const char *cl = series_cluster(w->c, s);
    struct aser *a = vec_push(&w->psers);
    a->values = s->values;
    a->pod = pod_of(w, cl, ns, pod);
    a->node = node_of(w, cl, host);
    a->pnode = -1;
    request_kind(w, a, res);
    return true;
}

/* P. GPUs requested by Pending pods at t, micro-GPU-seconds by the
 * allocation's rule (step_allocation): units × step × 10^6 × (MIG g/7 |
 * 1/replicas when shared or the node is time-sliced | 1); an unscheduled
 * pod's node has no replicas, so a share counts whole. Stored per pod on
 * the pseudo-device of its (node, model): demand, never billed. */
static void step_pending(struct work *w, size_t t)
{
    const int64_t step = w->r->step;
    for (size_t i = 0; i < w->psers.n; i++) {
        const struct aser *a = &PSER(w, i);
        int64_t units = units_at(a, t);
        if (units <= 0)
            continue;
        gl_i128 u;
        bool bad = !gpu_time(a, &NODE(w, a->node), units, step, &u);
        const struct pod *po = &POD(w, a->pod);
        if (bad || u > INT64_MAX) {
            overflow_at(w, t,
                        "the GPUs pod %.200s/%.200s requests while Pending (%lld units of "
                        "%.200s) exceed the 64-bit range of micro-GPU-seconds",
                        S(w, po->ns), S(w, po->name), (long long)units,
                        a->kind == RES_MIG ? S(w, a->profile) : "GPU");
            continue;
        }
        int32_t dev = pseudo_device(w, &PN(w, a->pn));
        add(w, t, dev, po->ns, po->name, team_at(w, a->pod, t), GL_KIND_PENDING_GPU,
            (int64_t)u, false);
    }
}
