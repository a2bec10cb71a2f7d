/* advice — right-sizing and consolidation advice (advice.h says the rules). */
#include "advice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query.h"
#include "util.h"

/* One workload line while the rows are read: its buckets' steps. */
struct acc {
    int64_t *buckets; /* steps per 1 GiB bucket */
    size_t nbuckets;
    struct gl_intern *pods;
};

struct ctx {
    const struct gl_config *c;
    struct gl_store *s;
    const struct gl_price_table *prices;
    struct gl_advice *a;
    struct gl_intern *line_keys, *node_keys;
    struct acc *acc;
    struct gl_buf key;
    struct gl_fleet_size *sizes;
    size_t nsizes;
    /* MiB·s per price entry, per line: held and recommended */
    int64_t *held_e, *to_e;
    /* consolidation: MiB·s freed per node and price entry (node-major) */
    int64_t *freed;
};

static const char SEP[] = "\x1f";

/* The bucket ladder of schema/013 (engine/attribute/podpeak.h writes it). */
#define GL_LADDER_MIB 1024

static int32_t key_of(struct ctx *x, struct gl_intern *t, const char *const *parts, size_t n,
                      int64_t num)
{
    gl_buf_reset(&x->key);
    for (size_t i = 0; i < n; i++) {
        gl_buf_puts(&x->key, parts[i]);
        gl_buf_puts(&x->key, SEP);
    }
    gl_buf_printf(&x->key, "%lld", (long long)num);
    return gl_intern_xget(t, x->key.data);
}

static enum gl_status overflow(struct gl_error *err, const char *what, const char *where)
{
    return gl_error_set(err, GL_ERR_RUNTIME, "integer overflow: %s of %.300s", what, where);
}

/* ---- lines: the groups of the read summed per workload ---- */

static struct gl_advice_line *line_of(struct ctx *x, const struct gl_peak_read *r, int32_t *id)
{
    const char *wkind = r->owner_kind[0] ? r->owner_kind : "Pod";
    const char *wname = r->owner_kind[0] ? r->owner_name : r->pod;
    gl_buf_reset(&x->key); /* the allocation in both units is part of the key */
    char alloc[64];
    snprintf(alloc, sizeof alloc, "%lld/%lld", (long long)r->alloc_mib, (long long)r->alloc_ugpu);
    const char *parts[] = {r->cluster, r->ns, wkind, wname, r->model, r->profile, alloc};
    *id = key_of(x, x->line_keys, parts, 7, 0);
    struct gl_advice *a = x->a;
    if ((size_t)*id < a->nlines)
        return &a->lines[*id];
    a->lines = gl_xrealloc(a->lines, (a->nlines + 1) * sizeof *a->lines);
    x->acc = gl_xrealloc(x->acc, (a->nlines + 1) * sizeof *x->acc);
    x->acc[a->nlines] = (struct acc){NULL, 0, gl_intern_new()};
    struct gl_advice_line *l = &a->lines[a->nlines++];
    *l = (struct gl_advice_line){
        .cluster = gl_strdup(r->cluster), .ns = gl_strdup(r->ns), .team = gl_strdup(r->team),
        .wkind = gl_strdup(wkind), .wname = gl_strdup(wname), .model = gl_strdup(r->model),
        .profile = gl_strdup(r->profile), .hostname = gl_strdup(r->hostname),
        .capacity_mib = r->capacity_mib, .alloc_mib = r->alloc_mib, .alloc_ugpu = r->alloc_ugpu,
    };
    return l;
}

static enum gl_status line_group(struct ctx *x, const struct gl_peak_read *r,
                                 struct gl_error *err)
{
    int32_t id;
    struct gl_advice_line *l = line_of(x, r, &id);
    struct acc *ac = &x->acc[id];
    if (r->peak_mib > l->peak_mib)
        l->peak_mib = r->peak_mib;
    if (__builtin_add_overflow(l->steps, r->steps, &l->steps))
        return overflow(err, "the steps", l->wname);
    if ((size_t)r->bucket >= ac->nbuckets) {
        size_t n = (size_t)r->bucket + 1;
        ac->buckets = gl_xrealloc(ac->buckets, n * sizeof *ac->buckets);
        memset(ac->buckets + ac->nbuckets, 0, (n - ac->nbuckets) * sizeof *ac->buckets);
        ac->nbuckets = n;
    }
    ac->buckets[r->bucket] += r->steps; /* ≤ the line's steps: checked above */
    gl_buf_reset(&x->key);
    gl_buf_printf(&x->key, "%s%s%s", r->ns, SEP, r->pod);
    gl_intern_xget(ac->pods, x->key.data);
    return GL_OK;
}

/* p99 ≤ the upper edge of the bucket holding the ⌈0.99 N⌉-th step, and ≤ the peak. */
static int64_t p99_bound(const struct acc *ac, int64_t steps, int64_t peak)
{
    int64_t rank = steps / 100 * 99 + (steps % 100 * 99 + 99) / 100, cum = 0;
    for (size_t b = 0; b < ac->nbuckets; b++) {
        cum += ac->buckets[b];
        if (cum >= rank) {
            int64_t edge = ((int64_t)b + 1) * GL_LADDER_MIB;
            return edge < peak ? edge : peak;
        }
    }
    return peak;
}

/* ---- the recommendation ---- */

static void consider(struct gl_advice_line *l, enum gl_advise_to to, const char *name,
                     const char *model, int64_t mib, const char *assumes)
{
    if (mib < l->need_mib || mib >= l->alloc_mib)
        return;
    if (l->to != GL_ADV_NONE && mib >= l->to_mib)
        return; /* the smallest wins; on a tie the first considered (MIG, share, model) */
    free(l->to_name);
    free(l->to_model);
    free(l->assumes);
    l->to = to;
    l->to_name = gl_strdup(name);
    l->to_model = gl_strdup(model);
    l->to_mib = mib;
    l->assumes = gl_strdup(assumes);
}

static void recommend(struct ctx *x, struct gl_advice_line *l)
{
    const struct gl_config *c = x->c;
    gl_i128 need = ((gl_i128)l->peak_mib * (100 + x->a->headroom_pct) + 99) / 100;
    l->need_mib = need > INT64_MAX ? INT64_MAX : (int64_t)need;
    if (l->alloc_mib <= 0 || l->alloc_ugpu > 1000000)
        return; /* no allocation seen, or several GPUs: not advised per device */
    char buf[512];
    int64_t full = 0; /* the model's whole-GPU capacity */
    for (size_t i = 0; i < x->nsizes; i++)
        if (!x->sizes[i].profile[0] && strcmp(x->sizes[i].model, l->model) == 0 &&
            x->sizes[i].capacity_mib > full)
            full = x->sizes[i].capacity_mib;
    for (size_t i = 0; i < x->nsizes; i++) /* measured MIG slices of the model */
        if (x->sizes[i].profile[0] && strcmp(x->sizes[i].model, l->model) == 0)
            consider(l, GL_ADV_MIG, x->sizes[i].profile, l->model, x->sizes[i].capacity_mib,
                     "a MIG slice of this profile as measured on this model in the fleet");
    for (size_t i = 0; i < c->nmig_profiles; i++) { /* configured sizes */
        const struct gl_kv *kv = &c->mig_profiles[i];
        bool measured = false;
        for (size_t k = 0; k < x->nsizes && !measured; k++)
            measured = strcmp(x->sizes[k].profile, kv->key) == 0 &&
                       strcmp(x->sizes[k].model, l->model) == 0;
        if (!measured && (full == 0 || kv->num < full)) {
            snprintf(buf, sizeof buf,
                     "MIG profile %.100s of allocation.mig_profiles_mib (%lld MiB), assuming "
                     "the GPU model supports it (not seen in the fleet)",
                     kv->key, (long long)kv->num);
            consider(l, GL_ADV_MIG, kv->key, l->model, kv->num, buf);
        }
    }
    const struct gl_kv *rep = gl_kv_find(c->replicas, c->nreplicas, l->hostname);
    if (!l->profile[0] && rep && rep->num > 1 && full > 0) {
        char name[256];
        snprintf(name, sizeof name, "1/%lld of a GPU on %.200s", (long long)rep->num,
                 l->hostname);
        snprintf(buf, sizeof buf,
                 "a time-slicing share of the node (allocation.replicas %lld: capacity ÷ "
                 "replicas, floored); shares are not isolated: the headroom is the margin",
                 (long long)rep->num);
        consider(l, GL_ADV_SHARE, name, l->model, full / rep->num, buf);
    }
    for (size_t i = 0; i < x->nsizes; i++)
        if (!x->sizes[i].profile[0] && strcmp(x->sizes[i].model, l->model) != 0)
            consider(l, GL_ADV_MODEL, x->sizes[i].model, x->sizes[i].model,
                     x->sizes[i].capacity_mib,
                     "a whole GPU of a smaller model seen in the fleet (its measured capacity), "
                     "assuming the workload runs on it");
}

/* ---- the saving at the period's prices ---- */

/* A group's hours share one price entry per model (the read cuts them at
 * every entry's bounds), so its first hour finds it. */
static enum gl_status saving_group(struct ctx *x, const struct gl_peak_read *r,
                                   struct gl_error *err)
{
    int32_t id;
    struct gl_advice_line *l = line_of(x, r, &id);
    if (l->to == GL_ADV_NONE)
        return GL_OK;
    int e_cur = gl_prices_find(x->prices, l->model, r->hour);
    int e_to = gl_prices_find(x->prices, l->to_model, r->hour);
    if (e_cur < 0 || e_to < 0) {
        l->unpriced_steps += r->steps;
        return GL_OK;
    }
    int64_t held, to, sec;
    size_t n = x->prices->n;
    if (__builtin_mul_overflow(r->steps, x->a->step, &sec) ||
        __builtin_mul_overflow(l->alloc_mib, sec, &held) ||
        __builtin_mul_overflow(l->to_mib, sec, &to) ||
        __builtin_add_overflow(l->held_mib_s, held, &l->held_mib_s) ||
        __builtin_add_overflow(l->to_mib_s, to, &l->to_mib_s) ||
        __builtin_add_overflow(x->held_e[(size_t)id * n + (size_t)e_cur], held,
                               &x->held_e[(size_t)id * n + (size_t)e_cur]) ||
        __builtin_add_overflow(x->to_e[(size_t)id * n + (size_t)e_to], to,
                               &x->to_e[(size_t)id * n + (size_t)e_to]))
        return overflow(err, "the allocation held (MiB·s)", l->wname);
    return GL_OK;
}

/* amount of mib_s at entry e's price for model (per GB-hour), into *sum. */
static enum gl_status price_add(struct ctx *x, size_t e, const char *model, int64_t mib_s,
                                int sign, gl_i128 *sum, struct gl_error *err)
{
    if (!mib_s)
        return GL_OK;
    gl_i128 unit, amount;
    enum gl_status rc = gl_price_per_gbh(x->prices, &x->prices->entries[e], model,
                                         gl_query_model_capacity(x->s, model), &unit, err);
    if (rc)
        return rc;
    if (!gl_amount_minor(mib_s, unit, x->a->minor_digits, &amount))
        return overflow(err, "the amount", model);
    *sum += sign * amount; /* far below 2^127: amounts of int64 MiB·s */
    return GL_OK;
}

static enum gl_status savings(struct ctx *x, struct gl_error *err)
{
    size_t n = x->prices->n;
    for (size_t i = 0; i < x->a->nlines; i++) {
        struct gl_advice_line *l = &x->a->lines[i];
        if (l->to == GL_ADV_NONE)
            continue;
        for (size_t e = 0; e < n; e++) {
            enum gl_status rc;
            if ((rc = price_add(x, e, l->model, x->held_e[i * n + e], 1, &l->saving, err)) ||
                (rc = price_add(x, e, l->to_model, x->to_e[i * n + e], -1, &l->saving, err)))
                return rc;
        }
        x->a->total_saving += l->saving;
    }
    return GL_OK;
}

/* Consolidation, as the read hands each node-hour over: its devices in use
 * against its lower bound; the GPU-hours above it summed per node and
 * price entry, priced once at the end (node_savings). */
static enum gl_status node_hour(void *ctx, const struct gl_node_hour_read *h,
                                struct gl_error *err)
{
    struct ctx *x = ctx;
    struct gl_advice *a = x->a;
    size_t np = x->prices->n ? x->prices->n : 1;
    const char *parts[] = {h->cluster, h->hostname, h->model};
    size_t node = (size_t)key_of(x, x->node_keys, parts, 3, h->capacity_mib);
    if (node == a->nnodes) {
        a->nodes = gl_xrealloc(a->nodes, (a->nnodes + 1) * sizeof *a->nodes);
        a->nodes[a->nnodes++] = (struct gl_advice_node){
            .cluster = gl_strdup(h->cluster), .hostname = gl_strdup(h->hostname),
            .model = gl_strdup(h->model), .capacity_mib = h->capacity_mib};
        x->freed = gl_xrealloc(x->freed, a->nnodes * np * sizeof *x->freed);
        memset(x->freed + node * np, 0, np * sizeof *x->freed);
    }
    struct gl_advice_node *nd = &a->nodes[node];
    int64_t in_use = h->devices;
    gl_i128 need = ((gl_i128)h->sum_peak * (100 + a->headroom_pct) + 99) / 100;
    gl_i128 bound = (need + nd->capacity_mib - 1) / nd->capacity_mib;
    if (bound < 1)
        bound = 1;
    if (bound > in_use)
        bound = in_use; /* the peaks need every device: none freed */
    nd->hours++;
    nd->gpu_hours += in_use;
    nd->bound_gpu_hours += (int64_t)bound;
    if (in_use > nd->max_devices)
        nd->max_devices = in_use;
    if (bound == in_use)
        return GL_OK;
    int e = gl_prices_find(x->prices, nd->model, h->hour);
    if (e < 0) {
        nd->unpriced_hours += in_use - (int64_t)bound;
        return GL_OK;
    }
    int64_t mib_s, *cell = &x->freed[node * np + (size_t)e];
    if (__builtin_mul_overflow(in_use - (int64_t)bound, nd->capacity_mib * 3600, &mib_s) ||
        __builtin_add_overflow(*cell, mib_s, cell))
        return overflow(err, "the freed capacity", nd->hostname);
    return GL_OK;
}

static enum gl_status node_savings(struct ctx *x, struct gl_error *err)
{
    struct gl_advice *a = x->a;
    size_t np = x->prices->n;
    enum gl_status rc = GL_OK;
    for (size_t n = 0; n < a->nnodes && !rc; n++) {
        struct gl_advice_node *nd = &a->nodes[n];
        for (size_t e = 0; e < np && !rc; e++)
            rc = price_add(x, e, nd->model, x->freed[n * np + e], 1, &nd->saving, err);
        a->total_node_saving += nd->saving;
    }
    return rc;
}

static int line_cmp(const void *pa, const void *pb)
{
    const struct gl_advice_line *a = pa, *b = pb;
    const char *ka[] = {a->cluster, a->ns, a->wkind, a->wname, a->model, a->profile};
    const char *kb[] = {b->cluster, b->ns, b->wkind, b->wname, b->model, b->profile};
    int c = gl_strcmp_n(ka, kb, 6);
    if (c)
        return c;
    if (a->alloc_mib != b->alloc_mib)
        return a->alloc_mib < b->alloc_mib ? -1 : 1;
    return (a->alloc_ugpu > b->alloc_ugpu) - (a->alloc_ugpu < b->alloc_ugpu);
}

static int node_cmp(const void *pa, const void *pb)
{
    const struct gl_advice_node *a = pa, *b = pb;
    const char *ka[] = {a->cluster, a->hostname, a->model};
    const char *kb[] = {b->cluster, b->hostname, b->model};
    int c = gl_strcmp_n(ka, kb, 3);
    /* a model measured at two capacities on one node: two rows, in order */
    return c ? c : (a->capacity_mib > b->capacity_mib) - (a->capacity_mib < b->capacity_mib);
}

/* Every bound of a price entry: the read keeps the hours between two of
 * them apart, so a group is priced by one entry per model. */
static int64_t *price_cuts(const struct gl_price_table *t, size_t *n)
{
    int64_t *cuts = gl_xcalloc(2 * t->n + 1, sizeof *cuts);
    *n = 0;
    for (size_t i = 0; i < t->n; i++) {
        cuts[(*n)++] = t->entries[i].valid_from;
        if (t->entries[i].valid_to != INT64_MAX)
            cuts[(*n)++] = t->entries[i].valid_to;
    }
    return cuts;
}

/* The groups into lines, each line's recommendation, then its saving. */
static enum gl_status lines(struct ctx *x, const struct gl_peak_groups *g, struct gl_error *err)
{
    struct gl_advice *a = x->a;
    enum gl_status rc = GL_OK;
    for (size_t i = 0; !rc && i < g->n; i++)
        rc = line_group(x, &g->g[i], err);
    if (rc)
        return rc;
    for (size_t i = 0; i < a->nlines; i++) {
        struct gl_advice_line *l = &a->lines[i];
        l->p99_bound_mib = p99_bound(&x->acc[i], l->steps, l->peak_mib);
        l->pods = gl_intern_count(x->acc[i].pods);
        recommend(x, l);
    }
    size_t cells = (a->nlines ? a->nlines : 1) * (x->prices->n ? x->prices->n : 1);
    x->held_e = gl_xcalloc(cells, sizeof *x->held_e);
    x->to_e = gl_xcalloc(cells, sizeof *x->to_e);
    for (size_t i = 0; !rc && i < g->n; i++)
        rc = saving_group(x, &g->g[i], err);
    return rc ? rc : savings(x, err);
}

static enum gl_status advise(const struct gl_config *c, struct gl_store *s,
                             const struct gl_price_table *prices, const struct gl_period *p,
                             bool snapshot, struct gl_advice *out, struct gl_error *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->period, sizeof out->period, "%s", p->name);
    out->headroom_pct = c->advise_headroom_pct;
    out->basis = c->basis;
    out->currency = c->currency;
    out->minor_digits = c->minor_digits;
    out->step = c->step;
    struct ctx x = {.c = c, .s = s, .prices = prices, .a = out};
    x.line_keys = gl_intern_new();
    x.node_keys = gl_intern_new();
    gl_buf_init(&x.key);
    struct gl_peak_groups g = {0};
    size_t ncuts;
    int64_t *cuts = price_cuts(prices, &ncuts);
    enum gl_status rc = snapshot ? gl_store_read_begin(s, err) : GL_OK;
    if (rc)
        goto done;
    if (!(rc = gl_query_advise_missing(s, p, &out->missing_pod_hours, err)) &&
        !(rc = gl_query_advise_sizes(s, p, &x.sizes, &x.nsizes, err)) &&
        !(rc = gl_query_advise_peaks(s, p, cuts, ncuts, node_hour, &x, &g, err)) &&
        !(rc = lines(&x, &g, err)))
        rc = node_savings(&x, err);
    if (snapshot)
        gl_store_read_end(s);
    /* sorted after the passes: the line index is the key's intern id until here */
    if (out->nlines) /* qsort takes no NULL, even for nothing */
        qsort(out->lines, out->nlines, sizeof *out->lines, line_cmp);
    if (out->nnodes)
        qsort(out->nodes, out->nnodes, sizeof *out->nodes, node_cmp);
done:
    for (size_t i = 0; i < out->nlines; i++) {
        free(x.acc[i].buckets);
        gl_intern_free(x.acc[i].pods);
    }
    GL_FREE_EACH(x.acc, x.held_e, x.to_e, x.freed, cuts);
    gl_peak_groups_free(&g);
    gl_fleet_sizes_free(x.sizes, x.nsizes);
    gl_intern_free(x.line_keys);
    gl_intern_free(x.node_keys);
    gl_buf_free(&x.key);
    if (rc)
        gl_advice_free(out);
    return rc;
}

enum gl_status gl_advise_build(const struct gl_config *c, struct gl_store *s,
                               const struct gl_price_table *prices, const struct gl_period *p,
                               struct gl_advice *out, struct gl_error *err)
{
    return advise(c, s, prices, p, true, out, err);
}

enum gl_status gl_advise_read(const struct gl_config *c, struct gl_store *s,
                              const struct gl_price_table *prices, const struct gl_period *p,
                              struct gl_advice *out, struct gl_error *err)
{
    return advise(c, s, prices, p, false, out, err);
}

void gl_advice_free(struct gl_advice *a)
{
    for (size_t i = 0; i < a->nlines; i++) {
        struct gl_advice_line *l = &a->lines[i];
        GL_FREE_EACH(l->cluster, l->ns, l->team, l->wkind, l->wname, l->model, l->profile,
                     l->hostname, l->to_name, l->to_model, l->assumes);
    }
    free(a->lines);
    for (size_t i = 0; i < a->nnodes; i++)
        GL_FREE_EACH(a->nodes[i].cluster, a->nodes[i].hostname, a->nodes[i].model);
    free(a->nodes);
    memset(a, 0, sizeof *a);
}
