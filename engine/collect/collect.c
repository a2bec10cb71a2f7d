/* collect — the collection loop over hour-aligned chunks. */
#include "collect.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include "fetch.h"
#include "integrate.h"
#include "money.h"
#include "parse.h"
#include "plan.h"
#include "queryreg.h"
#include "server.h"
#include "side.h"
#include "store_peak.h"
#include "store_peakday.h"
#include "timeutil.h"
#include "util.h"

/* The queries of one chunk: the registry's rows that the config runs, in
 * its order (queryreg.h); those every config runs at constant positions,
 * the compute queries from Q_FIXED on, then the other configured ones. */
enum {
    Q_MEMORY = GL_QP_MEMORY,
    Q_FREE = GL_QP_FREE,
    Q_RESERVED = GL_QP_RESERVED,
    Q_POD_LABELS = GL_QP_POD_LABELS,
    Q_NS_LABELS = GL_QP_NS_LABELS,
    Q_ALLOCATION = GL_QP_ALLOCATION,
    Q_NODE_LABELS = GL_QP_NODE_LABELS,
    Q_FIXED = GL_QP_FIXED
};
#define Q_MAX GL_QR_MAX
/* Plausibility bound of a pod's allocation (GPU units per resource). */
#define ALLOC_MAX_UNITS 1024
/* The most hours of one unit (collection.chunk_hours <= 24 × 31). */
#define GL_MAX_UNIT_HOURS (24 * 31)

static int compute_count(const struct gl_config *c)
{
    return (int)gl_qr_count(c, gl_qr_row(GL_Q_COMPUTE));
}

/* Query q of the chunk's list: its registry row and name. Every caller
 * asks for a q below query_count: anything else is a bug, stopped here. */
static struct gl_qslot query_slot(const struct gl_config *c, int q)
{
    struct gl_qslot list[GL_QR_MAX];
    int n = gl_qr_list(c, list);
    if (q < 0 || q >= n)
        abort();
    return list[q];
}

/* The registry row of query q. */
static const struct gl_qrow *query_row(const struct gl_config *c, int q)
{
    return query_slot(c, q).row;
}

static const char *query_name(const struct gl_config *c, int q)
{
    return query_slot(c, q).name;
}

/* The name an hour's counts of query q are stored under (docs/specification.md "Integrity"),
 * NULL when they are not (the registry's counts). */
static const char *counts_name(const struct gl_config *c, int q)
{
    struct gl_qslot s = query_slot(c, q);
    return gl_qr_counts_name(c, s.row, s.k);
}

static int query_count(const struct gl_config *c)
{
    struct gl_qslot list[GL_QR_MAX];
    return gl_qr_list(c, list);
}

/* Logs the samples of one response that the parse (or the allocation
 * join) skipped: a count per reason, then the first ones described. */
static void log_skips(const char *query, const char *chunk, const struct gl_matrix *m)
{
    for (int why = 0; why < GL_SKIP_N; why++)
        if (m->skipped[why])
            gl_log(GL_LOG_WARN, "skipped samples query=%s chunk=%s reason=%s count=%zu", query,
                   chunk, gl_skip_names[why], m->skipped[why]);
    size_t shown = sizeof m->bad / sizeof *m->bad;
    for (size_t k = 0; k < m->bad_samples && k < shown; k++)
        gl_log(GL_LOG_WARN, "skipped sample query=%s chunk=%s %s", query, chunk, m->bad[k]);
}

/* Label series' first appearance from the database (the earlier of stored
 * and seen), recorded when record is set (inside the chunk's transaction). */
static enum gl_status label_history(const struct gl_cluster *cluster, struct gl_store *s,
                                    struct gl_matrix *m, bool record, struct gl_error *err)
{
    struct gl_buf key;
    gl_buf_init(&key);
    enum gl_status rc = GL_OK;
    for (size_t i = 0; !rc && i < m->nseries; i++) {
        struct gl_series *se = &m->series[i];
        if (se->first_seen < 0)
            continue;
        gl_buf_reset(&key);
        bool ok = gl_buf_puts(&key, cluster->name);
        for (size_t k = 0; ok && k < se->nlabels; k++)
            ok = gl_buf_puts(&key, "\x1f") && gl_buf_puts(&key, se->labels[k].name) &&
                 gl_buf_puts(&key, "=") && gl_buf_puts(&key, se->labels[k].value);
        rc = ok ? gl_store_label_first_seen(s, key.data, &se->first_seen, record, err)
                : gl_error_set(err, GL_ERR_RUNTIME, "out of memory (a label series' key)");
    }
    gl_buf_free(&key);
    return rc;
}

/* ---- no silent shrink (docs/specification.md "Integrity") ----
 * Per hour of a range and per query: the series with at least one valid
 * sample in the hour and those samples, summed over the range's shards. */
struct range_counts {
    size_t nhours;
    int64_t *series, *samples; /* [h * Q_MAX + q] */
};

static void counts_reset(struct range_counts *n, size_t nhours)
{
    free(n->series);
    free(n->samples);
    n->nhours = nhours;
    n->series = gl_xcalloc(nhours * Q_MAX, sizeof *n->series);
    n->samples = gl_xcalloc(nhours * Q_MAX, sizeof *n->samples);
}

static void counts_free(struct range_counts *n)
{
    free(n->series);
    free(n->samples);
    memset(n, 0, sizeof *n);
}

static void counts_add(struct range_counts *n, int q, const struct gl_matrix *m, int64_t step)
{
    const size_t per_hour = (size_t)(3600 / step);
    for (size_t i = 0; i < m->nseries; i++) {
        const double *v = m->series[i].values;
        for (size_t h = 0; v && h < n->nhours; h++) {
            size_t end = (h + 1) * per_hour < m->nsteps ? (h + 1) * per_hour : m->nsteps;
            int64_t k = 0;
            for (size_t t = h * per_hour; t < end; t++)
                k += !isnan(v[t]);
            if (k) {
                n->series[h * Q_MAX + (size_t)q]++;
                n->samples[h * Q_MAX + (size_t)q] += k;
            }
        }
    }
}

/* The share a stored figure may lose: true when now is below was by more
 * than collection.shrink_tolerance (in millionths) of was. Exact: the
 * products are 128-bit. */
static bool lost(const struct gl_config *c, int64_t was, int64_t now)
{
    if (was <= 0 || now >= was)
        return false;
    return ((gl_i128)was - now) * 1000000 > (gl_i128)was * c->shrink_tolerance_ppm;
}

/* True when replacing what was stored by (series, samples) loses more than
 * collection.shrink_tolerance allows: no samples where samples were
 * stored, or fewer series or fewer samples than the tolerance allows. */
static bool falls_short(const struct gl_config *c, const struct gl_query_counts *was,
                        int64_t series, int64_t samples)
{
    if (was->samples > 0 && samples == 0)
        return true;
    if (!was->found)
        return false;
    return lost(c, was->series, series) || lost(c, was->samples, samples);
}

/* ---- the figures an hour bills ----
 * Per hour of the range: each device's memory attributed to pods (the
 * memory_used rows on it), its unattributed memory and its unknown steps,
 * and each team's memory (MiB·s), as stored (the usage rows the range
 * replaces) and as the new rollup has them. */
enum { FIG_DEVICE, FIG_TEAM };
enum { FIG_USED, FIG_UNATT, FIG_UNKNOWN, FIG_N };
struct fig {
    int64_t hour;
    int kind;
    int32_t cluster, a, b; /* in names: device uuid and gpu_i_id, or team and "" */
    int64_t was[FIG_N], now[FIG_N];
};

struct figs {
    struct gl_intern *keys, *names;
    struct fig *f;
    size_t n, cap;
    struct gl_buf key;
    const char *cluster; /* of the stored rows being read */
};

static void figs_free(struct figs *x)
{
    gl_intern_free(x->keys);
    gl_intern_free(x->names);
    free(x->f);
    gl_buf_free(&x->key);
    memset(x, 0, sizeof *x);
}

/* Adds v to slot `slot` (was or now) of the figure (hour, kind, cluster,
 * a, b), created at 0; a sum past 64 bits is an error naming it. */
static enum gl_status fig_add(struct figs *x, int64_t hour, int kind, const char *cluster,
                              const char *a, const char *b, int slot, bool now, int64_t v,
                              struct gl_error *err)
{
    gl_buf_reset(&x->key);
    if (!gl_buf_printf(&x->key, "%lld\x1f%d\x1f%s\x1f%s\x1f%s", (long long)hour, kind, cluster,
                       a, b))
        return gl_error_set(err, GL_ERR_RUNTIME, "out of memory (the shrink check's figures)");
    int32_t id = gl_intern_get(x->keys, x->key.data);
    if ((size_t)id >= x->n) {
        if ((size_t)id >= x->cap) {
            x->cap = x->cap ? 2 * x->cap : 64;
            x->f = gl_xrealloc(x->f, x->cap * sizeof *x->f);
        }
        x->f[id] = (struct fig){.hour = hour,
                                .kind = kind,
                                .cluster = gl_intern_get(x->names, cluster),
                                .a = gl_intern_get(x->names, a),
                                .b = gl_intern_get(x->names, b)};
        x->n = (size_t)id + 1;
    }
    int64_t *sum = now ? &x->f[id].now[slot] : &x->f[id].was[slot];
    if (__builtin_add_overflow(*sum, v, sum)) {
        char ts[32];
        gl_time_format(hour, ts, sizeof ts);
        return gl_error_set(err, GL_ERR_RUNTIME,
                            "cluster %s, hour %s: the %s MiB·s of %s %s%s%s exceed 64 bits "
                            "(the no-silent-shrink check)",
                            cluster, ts, now ? "collected" : "stored",
                            kind == FIG_DEVICE ? "device" : "team", a, b[0] ? "/" : "", b);
    }
    return GL_OK;
}

static int fig_slot(const char *kind)
{
    return strcmp(kind, GL_K_MEMORY_USED) == 0    ? FIG_USED
           : strcmp(kind, GL_K_UNATTRIBUTED) == 0 ? FIG_UNATT
           : strcmp(kind, GL_K_UNKNOWN_STEPS) == 0 ? FIG_UNKNOWN
                                                : -1;
}

/* A stored row's sum (gl_store_hour_figures). */
static enum gl_status fig_stored(void *ctx, int64_t hour, const char *uuid, const char *gid,
                                 const char *team, const char *kind, int64_t sum,
                                 struct gl_error *err)
{
    struct figs *x = ctx;
    int slot = fig_slot(kind);
    enum gl_status rc = GL_OK;
    if (slot < 0)
        return GL_OK;
    rc = fig_add(x, hour, FIG_DEVICE, x->cluster, uuid, gid, slot, false, sum, err);
    if (!rc && slot == FIG_USED)
        rc = fig_add(x, hour, FIG_TEAM, x->cluster, team, "", FIG_USED, false, sum, err);
    return rc;
}

/* The figures of the range: the new rollup's, then the stored rows' of
 * every cluster the range replaces (the collected one and those its
 * devices report). */
static enum gl_status figs_fill(const struct gl_cluster *cluster, struct gl_store *s,
                                int64_t start, int64_t end, const struct gl_rollup *parts,
                                size_t nparts, struct figs *x, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    struct gl_intern *clusters = gl_intern_new();
    gl_intern_get(clusters, cluster->name);
    for (size_t p = 0; !rc && p < nparts; p++) {
        const struct gl_rollup *r = &parts[p];
        for (size_t d = 0; d < r->ndevices; d++)
            gl_intern_get(clusters, gl_intern_str(r->strings, r->devices[d].cluster));
        for (size_t i = 0; !rc && i < r->nslots; i++) {
            const struct gl_rollup_entry *e = &r->slots[i];
            int slot = !e->used ? -1 : fig_slot(gl_kind_names[e->kind]);
            const struct gl_chunk_device *cd = slot < 0 ? NULL : &r->devices[e->device];
            if (!cd || cd->pseudo)
                continue;
            const int64_t hour = r->start + (int64_t)e->hour * 3600;
            const char *cl = gl_intern_str(r->strings, cd->cluster);
            rc = fig_add(x, hour, FIG_DEVICE, cl, gl_intern_str(r->strings, cd->uuid),
                         gl_intern_str(r->strings, cd->gpu_i_id), slot, true, e->quantity, err);
            if (!rc && slot == FIG_USED)
                rc = fig_add(x, hour, FIG_TEAM, cl, gl_intern_str(r->strings, e->team), "",
                             FIG_USED, true, e->quantity, err);
        }
    }
    for (int32_t i = 0; !rc && i < gl_intern_count(clusters); i++) {
        x->cluster = gl_intern_str(clusters, i);
        rc = gl_store_hour_figures(s, x->cluster, start, end, fig_stored, x, err);
    }
    gl_intern_free(clusters);
    return rc;
}

/* One way the range would replace a stored hour with less. */
struct shortfall {
    int64_t hour;
    int order; /* counts by query, then teams, then devices */
    char text[400];
};

static int shortfall_cmp(const void *pa, const void *pb)
{
    const struct shortfall *a = pa, *b = pb;
    if (a->hour != b->hour)
        return a->hour < b->hour ? -1 : 1;
    if (a->order != b->order)
        return a->order < b->order ? -1 : 1;
    return strcmp(a->text, b->text);
}

struct shortfalls {
    struct shortfall *v;
    size_t n, cap;
};

static struct shortfall *shortfall_new(struct shortfalls *l, int64_t hour, int order)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = gl_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    struct shortfall *s = &l->v[l->n++];
    s->hour = hour;
    s->order = order;
    s->text[0] = '\0';
    return s;
}

/* The shortfalls of a range in one message, in order (as many as it holds,
 * the rest counted): GL_ERR_PARTIAL, or a warning when allowed. Frees l. */
static enum gl_status shortfalls_report(const struct gl_config *c,
                                        const struct gl_cluster *cluster, struct shortfalls *l,
                                        bool allow, struct gl_error *err)
{
    char t1[32], t2[32];
    qsort(l->v, l->n, sizeof *l->v, shortfall_cmp);
    gl_time_format(l->v[0].hour, t1, sizeof t1);
    gl_time_format(l->v[l->n - 1].hour + 3600, t2, sizeof t2);
    char msg[1600];
    int len = snprintf(msg, sizeof msg, "cluster %s, hours %s to %s: ", cluster->name, t1, t2);
    size_t shown = 0;
    for (; shown < l->n; shown++) {
        size_t need = strlen(l->v[shown].text) + 2;
        if (shown > 0 && (size_t)len + need + 160 >= sizeof msg)
            break;
        len += snprintf(msg + len, sizeof msg - (size_t)len, "%s%s", shown ? "; " : "",
                        l->v[shown].text);
    }
    snprintf(msg + len, sizeof msg - (size_t)len, " (collection.shrink_tolerance %.6g)",
             (double)c->shrink_tolerance_ppm / 1e6);
    len = (int)strlen(msg);
    if (shown < l->n)
        snprintf(msg + len, sizeof msg - (size_t)len, "; %zu more shortfall%s in these hours",
                 l->n - shown, l->n - shown > 1 ? "s" : "");
    free(l->v);
    if (allow) {
        gl_log(GL_LOG_WARN, "replacing stored data with less, as allowed: %s", msg);
        return GL_OK;
    }
    return gl_error_set(err, GL_ERR_PARTIAL,
                        "%s; not replaced, the stored hours are kept (a backend that lost data "
                        "or answers partially?); to replace them anyway: collect "
                        "--allow-shrink, or run.allow_shrink in the config",
                        msg);
}

/* Compares the range with what is stored (inside the range's transaction),
 * hour by hour: per query its series and samples; per device the memory
 * attributed to pods (a drop that is not an unknown step becoming known:
 * the memory metrics arrived and replace an estimate); per team its memory
 * when some query of the hour returned fewer samples or series than stored
 * (a team's memory also moves when labels arrive late or the team rules
 * change: then nothing was lost). GL_ERR_PARTIAL naming cluster, hours,
 * queries and figures when any of them loses more than
 * collection.shrink_tolerance, unless allowed (then a warning). */
static enum gl_status check_shrink(const struct gl_config *c, const struct gl_cluster *cluster,
                                   struct gl_store *s, int64_t start, int nq,
                                   const struct range_counts *n, const struct gl_rollup *parts,
                                   size_t nparts, bool allow, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    struct shortfalls l = {0};
    struct figs x = {.keys = gl_intern_new(), .names = gl_intern_new()};
    gl_buf_init(&x.key);
    /* per hour: the first query that returned less than stored (a label
     * query preferred), -1 when none did */
    int *less = gl_xcalloc(n->nhours + 1, sizeof *less);
    bool stored = false;
    char t1[32], t2[32];
    for (size_t h = 0; !rc && h < n->nhours; h++) {
        const int64_t hour = start + (int64_t)h * 3600;
        gl_time_format(hour, t1, sizeof t1);
        gl_time_format(hour + 3600, t2, sizeof t2);
        less[h] = -1;
        for (int q = 0; q < nq; q++) {
            struct gl_query_counts was;
            if (!counts_name(c, q))
                continue; /* counted as the memory source's */
            if ((rc = gl_store_query_counts(s, cluster->name, hour, counts_name(c, q), &was,
                                            err)))
                break;
            stored |= was.found || was.legacy;
            if (was.legacy && q != Q_MEMORY)
                continue; /* before schema 2 only the memory samples were kept */
            int64_t ser = n->series[h * Q_MAX + (size_t)q], smp = n->samples[h * Q_MAX + (size_t)q];
            const bool label = q == Q_POD_LABELS || q == Q_NS_LABELS || q == Q_NODE_LABELS;
            if ((was.found && (ser < was.series || smp < was.samples)) ||
                (was.legacy && smp < was.samples))
                if (less[h] < 0 || (label && !(less[h] == Q_POD_LABELS ||
                                                less[h] == Q_NS_LABELS ||
                                                less[h] == Q_NODE_LABELS)))
                    less[h] = q;
            if (!falls_short(c, &was, ser, smp))
                continue;
            struct shortfall *f = shortfall_new(&l, hour, q);
            if (was.found)
                snprintf(f->text, sizeof f->text,
                         "query %s returned %lld series, %lld samples for the hour %s to %s "
                         "where %lld series, %lld samples are stored",
                         counts_name(c, q), (long long)ser, (long long)smp, t1, t2,
                         (long long)was.series, (long long)was.samples);
            else
                snprintf(f->text, sizeof f->text,
                         "query %s returned %lld series, %lld samples for the hour %s to %s "
                         "where %lld memory samples (collected before schema 2) are stored",
                         counts_name(c, q), (long long)ser, (long long)smp, t1, t2,
                         (long long)was.samples);
        }
    }
    if (!rc && stored)
        rc = figs_fill(cluster, s, start, start + (int64_t)n->nhours * 3600, parts, nparts, &x,
                       err);
    for (size_t i = 0; !rc && i < x.n; i++) {
        const struct fig *g = &x.f[i];
        const size_t h = (size_t)((g->hour - start) / 3600);
        if (g->hour < start || h >= n->nhours || !lost(c, g->was[FIG_USED], g->now[FIG_USED]))
            continue;
        const char *cl = gl_intern_str(x.names, g->cluster);
        const char *a = gl_intern_str(x.names, g->a), *b = gl_intern_str(x.names, g->b);
        char on[160] = "";
        if (strcmp(cl, cluster->name) != 0)
            snprintf(on, sizeof on, " (cluster label %s)", cl);
        gl_time_format(g->hour, t1, sizeof t1);
        gl_time_format(g->hour + 3600, t2, sizeof t2);
        if (g->kind == FIG_DEVICE) {
            if (g->now[FIG_UNKNOWN] < g->was[FIG_UNKNOWN])
                continue; /* an estimate replaced by the memory metrics */
            snprintf(shortfall_new(&l, g->hour, Q_MAX + 1)->text, sizeof l.v->text,
                     "query %s gives device %s%s%s%s %lld MiB·s attributed to pods and %lld "
                     "unattributed for the hour %s to %s where %lld attributed and %lld "
                     "unattributed are stored",
                     counts_name(c, Q_MEMORY), a, b[0] ? "/" : "", b, on,
                     (long long)g->now[FIG_USED], (long long)g->now[FIG_UNATT], t1, t2,
                     (long long)g->was[FIG_USED], (long long)g->was[FIG_UNATT]);
        } else if (less[h] >= 0) {
            snprintf(shortfall_new(&l, g->hour, Q_MAX)->text, sizeof l.v->text,
                     "query %s returned less than stored and team %s%s gets %lld MiB·s of "
                     "memory for the hour %s to %s where %lld are stored",
                     counts_name(c, less[h]), a, on, (long long)g->now[FIG_USED], t1, t2,
                     (long long)g->was[FIG_USED]);
        }
    }
    free(less);
    figs_free(&x);
    if (rc || !l.n) {
        free(l.v);
        return rc;
    }
    return shortfalls_report(c, cluster, &l, allow, err);
}

/* The rollup's per-step memory distribution (advice; never billed). */
static enum gl_status store_peaks(struct gl_store *s, const struct gl_rollup *r,
                                  const int64_t *dev_ids, struct gl_error *err)
{
    const struct gl_peaks *pk = &r->peaks;
    struct gl_peak_row *rows = gl_xcalloc(pk->n ? pk->n : 1, sizeof *rows);
    for (size_t i = 0; i < pk->n; i++) {
        const struct gl_peak_entry *e = &pk->e[i];
        rows[i] = (struct gl_peak_row){
            .hour = r->start + (int64_t)e->hour * 3600,
            .cluster = gl_intern_str(r->strings, r->devices[e->device].cluster),
            .ns = gl_intern_str(r->strings, e->ns),
            .pod = gl_intern_str(r->strings, e->pod),
            .device_id = dev_ids[e->device],
            .bucket = e->bucket, .steps = e->steps, .peak_mib = e->peak_mib,
            .alloc_mib = e->alloc_mib, .alloc_ugpu = e->alloc_ugpu,
        };
    }
    enum gl_status rc = gl_store_put_peaks(s, rows, pk->n, err);
    free(rows);
    return rc;
}

/* Stores a range: the rollups of its shards (one when not split), its
 * counts and label history, in ONE transaction that replaces its hours. */
static enum gl_status store_range(const struct gl_config *c, const struct gl_cluster *cluster,
                                  struct gl_store *s, struct gl_rollup *parts, size_t nparts,
                                  int nq, const struct range_counts *counts, bool advance,
                                  bool allow_shrink, struct gl_matrix *const *labels,
                                  size_t nlabels, struct gl_error *err)
{
    enum gl_status rc = gl_store_begin(s, err);
    if (rc)
        return rc;
    const int64_t start = parts[0].start;
    const size_t nhours = parts[0].nhours;
    const int64_t end = start + (int64_t)nhours * 3600;
    int64_t *dev_ids = NULL;
    if ((rc = check_shrink(c, cluster, s, start, nq, counts, parts, nparts, allow_shrink,
                           err)))
        goto fail;
    for (size_t i = 0; i < nlabels; i++)
        if ((rc = label_history(cluster, s, labels[i], true, err)))
            goto fail;
    /* Replace every row of these hours for each cluster seen, and the
     * configured one (so an hour that lost its data is emptied too). */
    if ((rc = gl_store_clear_hours(s, cluster->name, start, end, err)) ||
        (rc = gl_store_clear_peaks(s, cluster->name, start, end, err)))
        goto fail;
    for (size_t p = 0; p < nparts; p++) {
        const struct gl_rollup *r = &parts[p];
        for (size_t d = 0; d < r->ndevices; d++) {
            const char *cl = gl_intern_str(r->strings, r->devices[d].cluster);
            if (strcmp(cl, cluster->name) != 0 &&
                ((rc = gl_store_clear_hours(s, cl, start, end, err)) ||
                 (rc = gl_store_clear_peaks(s, cl, start, end, err))))
                goto fail;
        }
    }
    for (size_t p = 0; p < nparts; p++) {
        const struct gl_rollup *r = &parts[p];
        free(dev_ids);
        dev_ids = gl_xcalloc(r->ndevices ? r->ndevices : 1, sizeof *dev_ids);
        for (size_t d = 0; d < r->ndevices; d++) {
            const struct gl_chunk_device *cd = &r->devices[d];
            struct gl_device_info info = {
                .cluster = gl_intern_str(r->strings, cd->cluster),
                .uuid = gl_intern_str(r->strings, cd->uuid),
                .gpu_i_id = gl_intern_str(r->strings, cd->gpu_i_id),
                .gpu_i_profile = gl_intern_str(r->strings, cd->profile),
                .model = gl_intern_str(r->strings, cd->model),
                .hostname = gl_intern_str(r->strings, cd->hostname),
                .max_capacity_mib = cd->max_capacity_mib,
                .first_seen = cd->first_seen < 0 ? r->start : cd->first_seen,
                .last_seen = cd->first_seen < 0 ? r->start : cd->last_seen,
            };
            if ((rc = gl_store_device(s, &info, &dev_ids[d], err)))
                goto fail;
        }
        for (size_t i = 0; i < r->nslots; i++) {
            const struct gl_rollup_entry *e = &r->slots[i];
            if (!e->used)
                continue;
            const struct gl_chunk_device *cd = &r->devices[e->device];
            if ((rc = gl_store_add_usage(s, r->start + (int64_t)e->hour * 3600,
                                         gl_intern_str(r->strings, cd->cluster),
                                         gl_intern_str(r->strings, e->ns),
                                         gl_intern_str(r->strings, e->pod), dev_ids[e->device],
                                         gl_intern_str(r->strings, e->team),
                                         gl_kind_names[e->kind], e->quantity, e->estimated,
                                         e->first_t, e->last_t, err)))
                goto fail;
        }
        if ((rc = store_peaks(s, r, dev_ids, err)))
            goto fail;
    }
    for (size_t h = 0; h < nhours; h++) {
        int64_t samples = 0, bad = 0;
        for (size_t p = 0; p < nparts; p++) {
            samples += parts[p].samples_per_hour[h];
            bad += h == 0 ? (int64_t)parts[p].bad_samples : 0;
        }
        int64_t hour = start + (int64_t)h * 3600;
        if ((rc = gl_store_mark_hour(s, cluster->name, hour, samples, bad, err)))
            goto fail;
        for (int q = 0; q < nq; q++)
            if (counts_name(c, q) && /* else counted as the memory source's */
                (rc = gl_store_put_counts(s, cluster->name, hour, counts_name(c, q),
                                          counts->series[h * Q_MAX + (size_t)q],
                                          counts->samples[h * Q_MAX + (size_t)q], err)))
                goto fail;
    }
    if (advance && (rc = gl_store_advance_watermark(s, cluster->name, end, err)))
        goto fail;
    if ((rc = gl_store_commit(s, err)))
        goto fail;
    free(dev_ids);
    return GL_OK;
fail:
    gl_store_rollback(s);
    free(dev_ids);
    return rc;
}

/* What `check` reports about a chunk: devices without FB_RESERVED or
 * without memory metrics, teams produced by rules and absent from the
 * catalogue. */
static void note_findings(const struct gl_config *c, const struct gl_rollup *r,
                          struct gl_intern *notes)
{
    char line[1024];
    for (size_t d = 0; d < r->ndevices; d++) {
        const struct gl_chunk_device *cd = &r->devices[d];
        const char *uuid = gl_intern_str(r->strings, cd->uuid);
        const char *gid = gl_intern_str(r->strings, cd->gpu_i_id);
        const char *host = gl_intern_str(r->strings, cd->hostname);
        if (cd->pseudo)
            continue;
        const char *model = gl_intern_str(r->strings, cd->model);
        if (cd->reserved_missing || cd->free_missing) {
            const struct gl_kv *kv = gl_kv_find(c->model_capacity, c->nmodel_capacity, model);
            bool cfg = kv && !gid[0];
            snprintf(line, sizeof line,
                     "device %s%s%s on %s (%s) lacks %s%s%s: %s", uuid, gid[0] ? "/" : "", gid,
                     host, model, cd->free_missing ? "DCGM_FI_DEV_FB_FREE" : "",
                     cd->free_missing && cd->reserved_missing ? " and " : "",
                     cd->reserved_missing ? "DCGM_FI_DEV_FB_RESERVED" : "",
                     cd->reserved_missing && cfg
                         ? "reserved = allocation.model_capacity_mib - USED - FREE"
                     : cd->reserved_missing && !gid[0]
                         ? "capacity = USED + FREE (set allocation.model_capacity_mib)"
                         : "missing values count as 0 (capacity = USED + FREE + RESERVED)");
            gl_intern_get(notes, line);
        }
        if (!cd->fb_seen) {
            snprintf(line, sizeof line,
                     "device %s%s%s on %s (%s) reports no memory metrics: usage unknown%s", uuid,
                     gid[0] ? "/" : "", gid, host, model,
                     cd->unknown_usage ? "; its pods are billed by allocation (estimated)" : "");
            gl_intern_get(notes, line);
        }
    }
    for (size_t i = 0; i < r->nslots; i++) {
        const struct gl_rollup_entry *e = &r->slots[i];
        if (!e->used || e->kind != GL_KIND_MEMORY_USED)
            continue;
        const char *team = gl_intern_str(r->strings, e->team);
        if (!gl_is_ascii(team)) {
            char shown[200];
            gl_escape_ascii(team, shown, sizeof shown);
            snprintf(line, sizeof line,
                     "team \"%s\" is not printable ASCII: the FOCUS export will refuse it; map "
                     "its pods to an ASCII team with an earlier teams.rules entry",
                     shown);
            gl_intern_get(notes, line);
        } else if (!gl_config_team(c, team)) {
            snprintf(line, sizeof line,
                     "team \"%s\" (from the mapping rules) is not in teams.catalogue: named by its "
                     "id, no cost center",
                     team);
            gl_intern_get(notes, line);
        }
    }
}

/* ---- splitting (docs/specification.md "Integrity", bounded memory) ----
 * A chunk whose response is over prometheus.max_response_bytes is fetched
 * again in fewer hours (halved, down to one); an hour still too large is
 * fetched in shards of the device set: the hosts that the memory query
 * reports (collection.hostname_label) are dealt round-robin into N groups,
 * and every dcgm-exporter query (memory source, FB_FREE, FB_RESERVED,
 * compute) gets a matcher on that label through ${cluster_selector}:
 * shards 0..N-2 the hosts of their group (=~), shard N-1 everything else
 * (!~ all the listed hosts: unlisted hosts and series without the label
 * included), so the shards partition every series whatever the discovery
 * saw. The allocation's requests carry the pod's node: they are asked
 * with the same matchers on `node` (and kept by it, the same rule), so
 * everything integrate needs of one node (its devices, its pods' requests)
 * is in one shard. The other kube-state-metrics queries have no node label
 * (pod and namespace labels, pod phase; node labels, one series a node):
 * the first shard asks them and they are kept for the others, under a
 * bound of their own (kept_whole), so they count once per hour, not once
 * per shard. The shards of an hour are stored in one transaction. */
struct shard_plan {
    struct gl_intern *hosts; /* listed hosts; host i is in shard i % nshards */
    int nshards;
};

static void plan_free(struct shard_plan *p)
{
    gl_intern_free(p->hosts);
    p->hosts = NULL;
    p->nshards = 1;
}

static int shard_of(const struct shard_plan *p, const char *host)
{
    int32_t i = host && p->hosts ? gl_intern_find(p->hosts, host) : -1;
    return i < 0 ? p->nshards - 1 : (int)(i % p->nshards);
}

/* A host that can be listed in a PromQL regex string as it is. */
static bool listable(const char *h)
{
    if (!h[0])
        return false;
    for (const char *p = h; *p; p++)
        if (*p < 0x20 || *p > 0x7e || *p == '"' || *p == '\\')
            return false;
    return true;
}

/* `label=~"a|b"` (a group) or `label!~"..."` (the last shard: every other
 * listed host excluded), regex metacharacters escaped. */
static void shard_matcher(const struct shard_plan *p, int shard, const char *label,
                          struct gl_buf *b)
{
    bool last = shard == p->nshards - 1;
    gl_buf_printf(b, "%s%s\"", label, last ? "!~" : "=~");
    bool first = true;
    for (int32_t i = 0; i < gl_intern_count(p->hosts); i++) {
        if (last ? i % p->nshards == p->nshards - 1 : i % p->nshards != shard)
            continue;
        if (!first)
            gl_buf_puts(b, "|");
        first = false;
        for (const char *h = gl_intern_str(p->hosts, i); *h; h++) {
            if (strchr(".+*?()|[]{}^$", *h))
                gl_buf_puts(b, "\\\\"); /* one backslash in the regex */
            gl_buf_append(b, h, 1);
        }
    }
    gl_buf_puts(b, "\"");
}

/* Keeps m's series whose `node` label is in the shard, in their order;
 * returns the original count: restore m->nseries before gl_matrix_free. */
static size_t keep_shard(struct gl_matrix *m, const struct shard_plan *p, int shard)
{
    size_t n = m->nseries, k = 0, d = n;
    if (!n)
        return 0;
    struct gl_series *tmp = gl_xcalloc(n, sizeof *tmp);
    for (size_t i = n; i-- > 0;)
        if (shard_of(p, gl_series_label(&m->series[i], "node")) != shard)
            tmp[--d] = m->series[i];
    for (size_t i = 0; i < n; i++)
        if (shard_of(p, gl_series_label(&m->series[i], "node")) == shard)
            tmp[k++] = m->series[i];
    memcpy(m->series, tmp, n * sizeof *tmp);
    free(tmp);
    m->nseries = k;
    return n;
}

/* Queries a split hour asks once, in its first shard, and keeps for the
 * others: sharding by host cannot make them smaller, so they get a bound of
 * their own, KEPT_BUDGET × collection.max_samples_in_memory, past which the
 * hour fails naming the query (split_unit). A backend-joined allocation is
 * kept whole too, and each shard keeps its nodes' series (keep_shard). */
#define KEPT_BUDGET 4
static bool kept_whole(const struct gl_config *c, int q)
{
    return query_row(c, q)->shard == GL_QSH_KEPT;
}

/* The engine-joined allocation's requests, asked per shard by `node`. */
static bool node_sharded(const struct gl_config *c, int q)
{
    return query_row(c, q)->shard == GL_QSH_NODE;
}

/* Queries fetched in shards by the device's host label (dcgm-exporter). */
static bool host_sharded(const struct gl_config *c, int q)
{
    return query_row(c, q)->shard == GL_QSH_HOST;
}

struct collector {
    const struct gl_config *c;
    const struct gl_cluster *cluster;
    struct gl_prom *prom;
    char *queries[Q_MAX]; /* unsharded */
    int nq;
    bool metricsql; /* server mode on VictoriaMetrics (server_backend) */
};

/* One unit's requests (a range of hours, or one shard of an hour),
 * fetched and parsed as they download on a thread of their own while the
 * previous unit is integrated and stored: the two overlap, and at most two
 * units' matrices are in memory (never a whole response body). Only one job uses the client at a time (the next starts
 * after the previous was joined). */
struct fetch_job {
    struct gl_prom *prom;
    char *queries[Q_MAX]; /* own[q] or the collector's */
    char *own[Q_MAX];     /* the shard's queries */
    int nq;
    int64_t cs, ce;       /* the unit's hours [cs, ce) */
    int shard;
    struct shard_plan plan;
    int64_t start, end, step;
    struct gl_range_query qs[Q_MAX]; /* the parsed responses */
    char what[Q_MAX][256];           /* names of the queries in parse messages */
    struct gl_parse_opts po[Q_MAX];  /* their plausibility bounds */
    size_t slots_used;               /* the parses' memory (gl_parse_opts) */
    size_t kept_slots;               /* the kept queries' (a split hour's first shard) */
    bool over_budget;                /* rc GL_ERR_TOO_LARGE from the budget */
    int over_q;                      /* the query that ran out of it, else -1 */
    enum gl_status rc;
    struct gl_error err;
    thrd_t th;
    bool running;
    bool server;              /* collection.mode "server" */
    bool metricsql;           /* the backend is VictoriaMetrics: changes_prometheus */
    bool sv_rebuilt[Q_MAX];   /* out: query rebuilt from the hourly figures */
    const struct gl_config *c;
    const struct gl_cluster *cluster;
    struct gl_srv_unit sv;    /* out: the unit's plain hosts (server.h) */
};

static enum gl_status server_fetch(struct fetch_job *j);

/* The unit's queries in one batch; a later shard of a split hour leaves
 * out the kept ones (its first shard's are used, kept_whole). */
static enum gl_status fetch_batch(struct fetch_job *j)
{
    if (j->plan.nshards <= 1 || j->shard == 0)
        return gl_prom_query_range_batch(j->prom, (size_t)j->nq, j->qs, j->start, j->end,
                                         j->step, &j->err);
    struct gl_range_query ask[Q_MAX];
    int idx[Q_MAX], n = 0;
    for (int q = 0; q < j->nq; q++) {
        if (!kept_whole(j->c, q)) {
            idx[n] = q;
            ask[n++] = j->qs[q];
            continue;
        }
        memset(&j->qs[q].m, 0, sizeof j->qs[q].m);
        j->qs[q].rc = GL_OK;
        j->qs[q].bytes = 0;
        j->qs[q].over_budget = false;
    }
    enum gl_status rc =
        gl_prom_query_range_batch(j->prom, (size_t)n, ask, j->start, j->end, j->step, &j->err);
    for (int k = 0; k < n; k++)
        j->qs[idx[k]] = ask[k];
    return rc;
}

static int fetch_main(void *arg)
{
    struct fetch_job *j = arg;
    if (j->server && j->plan.nshards <= 1)
        j->rc = server_fetch(j);
    else
        j->rc = fetch_batch(j);
    /* responses over collection.max_samples_in_memory together: the unit
     * is split like an oversized response, nothing of it is kept; the
     * query named is the one that ran out (the others merely stopped) */
    int over = -1;
    for (int q = 0; !j->rc && q < j->nq; q++)
        if (j->qs[q].rc == GL_ERR_TOO_LARGE && (over < 0 || j->qs[q].over_budget))
            over = q;
    if (over >= 0) {
        j->rc = GL_ERR_TOO_LARGE;
        j->err = j->qs[over].err;
        j->over_budget = true;
        j->over_q = over;
        for (int k = 0; k < j->nq; k++)
            gl_matrix_free(&j->qs[k].m);
    }
    return 0;
}

/* ---- collection.mode "server" (README "Server-side collection") ----
 * Per label or allocation query and hour the backend returns, for every
 * series, its samples on the step grid of that hour + 1000 × the changes
 * of its value between them, and its last value (subqueries evaluated at
 * the hour's last step instant). A series that has a sample at every step
 * of an hour, no change and a value the parse would keep is that constant
 * for the hour; one with no sample is absent. When every
 * series of a query is one or the other in every hour of the unit, the
 * query's matrix is rebuilt from these figures, exactly the matrix the raw
 * query_range returns; otherwise (or when a figure is missing, NaN or Inf)
 * the query is fetched raw for the unit. Integration then runs on the same
 * matrices either way, so server mode cannot change a figure. */
enum { SV_PACK, SV_LAST, SV_N };
#define SV_NAME "gl_srv_metric_name"

/* The subquery of figure f over query q. Its range ends at the hour's last
 * step instant T and starts half a step after the previous hour's last one,
 * so it holds exactly the hour's steps whether the backend's range is
 * closed at its start (Prometheus 2) or open (Prometheus 3); the metric name
 * is kept in a label (the _over_time functions drop __name__). */
static char *server_query(const char *q, int f, int64_t step, const char *changes)
{
    struct gl_buf b, x, r;
    gl_buf_init(&b);
    gl_buf_init(&x);
    gl_buf_init(&r);
    bool ok = gl_buf_printf(&x,
                            "(label_replace((\n%s\n), \"" SV_NAME "\", \"$1\", \"__name__\", "
                            "\"(.+)\"))",
                            q) &&
              gl_buf_printf(&r, "[%lldms:%llds]", (long long)(3600000 - step * 500),
                            (long long)step);
    if (ok && f == SV_PACK)
        ok = gl_buf_printf(&b, "count_over_time(%s%s) + 1000 * %s(%s%s)", x.data, r.data,
                           changes, x.data, r.data);
    else if (ok)
        ok = gl_buf_printf(&b, "last_over_time(%s%s)", x.data, r.data);
    if (!ok) {
        fputs("gpuledger: out of memory\n", stderr);
        abort();
    }
    gl_buf_free(&x);
    gl_buf_free(&r);
    return b.data;
}

/* The value a parse of the raw response would keep (parse.c's bounds). */
static bool sv_valid(const struct gl_parse_opts *po, const struct gl_series *s, double v)
{
    if (!isfinite(v))
        return false;
    if (po->any_finite)
        return true;
    double max = po->max > 0 ? po->max : 281474976710656.0;
    const char *nm = gl_series_label(s, SV_NAME);
    if (po->max_name && nm && strcmp(nm, po->max_name) == 0)
        max = po->named_max;
    return !(v < 0) && v <= max;
}

/* A figure series' label set (last_over_time keeps __name__, the others
 * drop it; the name is in SV_NAME). */
static void sv_key(struct gl_buf *b, const struct gl_series *s)
{
    gl_buf_reset(b);
    for (size_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i].name, "__name__") != 0)
            gl_buf_printf(b, "%zu:%s%zu:%s", strlen(s->labels[i].name), s->labels[i].name,
                      strlen(s->labels[i].value), s->labels[i].value);
}

static int sv_label_cmp(const void *pa, const void *pb)
{
    return strcmp(((const struct gl_label *)pa)->name, ((const struct gl_label *)pb)->name);
}

static char *sv_label(struct gl_label *l, const char *name, const char *value)
{
    size_t n = strlen(name), v = strlen(value);
    char *p = gl_xcalloc(n + v + 2, 1);
    memcpy(p, name, n);
    memcpy(p + n + 1, value, v);
    l->name = p;
    l->value = p + n + 1;
    return p;
}

/* Rebuilds the unit's matrix of one query from its hourly figures st (grid:
 * the hours' last step instants) into out (grid cs + k*step); false when a
 * series is neither constant nor absent in some hour. */
static bool server_rebuild(struct gl_matrix st[SV_N], const struct gl_parse_opts *po,
                           int64_t cs, int64_t step, size_t nhours, struct gl_matrix *out,
                           unsigned char *bad)
{
    const size_t per = (size_t)(3600 / step);
    memset(out, 0, sizeof *out);
    /* SV_PACK's count + 1000 × changes reads uniquely only while an hour has
     * fewer than 1000 steps: at a 1 s step, 2600 steps with one change would
     * read as all 3600 steps and none (the hour rebuilt constant). Below a
     * 4 s step the query comes raw, as the device figures do (global_refusal) */
    if (per >= 1000)
        return false;
    out->start = cs;
    out->step = step;
    out->nsteps = nhours * per;
    struct gl_intern *keys = gl_intern_new();
    struct gl_buf key;
    gl_buf_init(&key);
    /* the figures' series of each count series, by label set */
    size_t n = st[SV_PACK].nseries;
    int32_t *at[SV_N];
    for (int f = 0; f < SV_N; f++) {
        at[f] = gl_xcalloc(n + 1, sizeof *at[f]);
        for (size_t i = 0; i < n; i++)
            at[f][i] = -1;
    }
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        sv_key(&key, &st[SV_PACK].series[i]);
        if (gl_intern_get(keys, key.data ? key.data : "") != (int32_t)i)
            ok = false; /* a repeated label set: not the raw matrix */
        at[SV_PACK][i] = (int32_t)i;
    }
    for (int f = SV_LAST; ok && f < SV_N; f++)
        for (size_t i = 0; i < st[f].nseries; i++) {
            sv_key(&key, &st[f].series[i]);
            int32_t id = gl_intern_find(keys, key.data ? key.data : "");
            if (id < 0 || at[f][id] >= 0) {
                ok = false;
                break;
            }
            at[f][id] = (int32_t)i;
        }
    out->series = gl_xcalloc(n + 1, sizeof *out->series);
    for (size_t i = 0; ok && i < n; i++) {
        const struct gl_series *cs_ = &st[SV_PACK].series[i];
        double *vals = NULL;
        int64_t first = -1;
        for (size_t h = 0; ok && h < nhours; h++) {
            double c = cs_->values[h];
            if (isnan(c) || c == 0)
                continue;
            double last = at[SV_LAST][i] >= 0 ? st[SV_LAST].series[at[SV_LAST][i]].values[h]
                                               : (double)NAN;
            /* every step (count = n), no change (1000 × changes = 0); an
             * hour that is not is fetched raw (server_fetch) */
            if (c != (double)per || isnan(last) || !sv_valid(po, cs_, last)) {
                bad[h] = 1;
                continue;
            }
            if (!vals) {
                vals = gl_xcalloc(out->nsteps, sizeof *vals);
                for (size_t t = 0; t < out->nsteps; t++)
                    vals[t] = (double)NAN;
            }
            for (size_t t = h * per; t < (h + 1) * per; t++)
                vals[t] = last;
            if (first < 0)
                first = (int64_t)(h * per);
            out->samples += per;
        }
        if (!ok || !vals) {
            free(vals);
            continue;
        }
        struct gl_series *o = &out->series[out->nseries++];
        o->values = vals;
        o->first_step = first;
        o->first_seen = cs + first * step;
        o->labels = gl_xcalloc(cs_->nlabels + 1, sizeof *o->labels);
        for (size_t k = 0; k < cs_->nlabels; k++) {
            const struct gl_label *l = &cs_->labels[k];
            sv_label(&o->labels[o->nlabels++],
                     strcmp(l->name, SV_NAME) == 0 ? "__name__" : l->name, l->value);
        }
        qsort(o->labels, o->nlabels, sizeof *o->labels, sv_label_cmp);
    }
    if (ok)
        qsort(out->series, out->nseries, sizeof *out->series, gl_series_cmp);
    else
        gl_matrix_free(out);
    for (int f = 0; f < SV_N; f++)
        free(at[f]);
    gl_intern_free(keys);
    gl_buf_free(&key);
    return ok;
}

/* After the raw hours of a rebuilt query were merged in (gl_srv_merge):
 * the series in the backend's order, without empty ones. */
static void server_finish(struct gl_matrix *m)
{
    size_t k = 0;
    m->samples = 0;
    for (size_t i = 0; i < m->nseries; i++) {
        struct gl_series *s = &m->series[i];
        s->first_step = -1;
        for (size_t t = 0; t < m->nsteps; t++)
            if (!isnan(s->values[t])) {
                if (s->first_step < 0)
                    s->first_step = (int64_t)t;
                m->samples++;
            }
        if (s->first_step < 0) { /* rebuilt or merged: labels allocated one by one */
            for (size_t j = 0; j < s->nlabels; j++)
                free(s->labels[j].name);
            free(s->labels);
            free(s->values);
            continue;
        }
        s->first_seen = m->start + s->first_step * m->step;
        m->series[k++] = *s;
    }
    m->nseries = k;
    qsort(m->series, m->nseries, sizeof *m->series, gl_series_cmp);
}

static int alloc_max_units(void) { return ALLOC_MAX_UNITS; }

/* The unit server mode plans: the window, the queries and their roles. */
static void server_unit_init(struct fetch_job *j)
{
    const struct gl_config *c = j->c;
    struct gl_srv_unit *u = &j->sv;
    gl_srv_unit_free(u);
    memset(u, 0, sizeof *u);
    u->c = c;
    u->cluster = j->cluster;
    u->nq = j->nq;
    u->cs = j->cs;
    u->ce = j->ce;
    u->step = j->step;
    u->nhours = (size_t)((j->ce - j->cs) / 3600);
    u->metricsql = j->metricsql;
    u->alloc_q = Q_ALLOCATION;
    u->phase_q = gl_qr_pos(c, GL_Q_PHASE);
    u->pod_labels_q = Q_POD_LABELS;
    u->ns_labels_q = Q_NS_LABELS;
    u->node_labels_q = Q_NODE_LABELS;
    for (int q = 0; q < j->nq; q++) {
        u->role[q] = query_row(c, q)->srv;
        u->queries[q] = j->queries[q];
        u->query_names[q] = query_name(c, q);
    }
    gl_srv_figures(u);
}

/* The hourly batch of a unit: SV_N statements per label or allocation
 * query (text: their PromQL, owned), then the aggregate figures of server.h
 * from fig0 on. Any finite value parses (the statements' values are
 * packed figures, not memory), with the query's accepted warnings. */
struct srv_batch {
    struct gl_range_query *sq;
    char **text;
    size_t nsq, nper, fig0;
    struct gl_parse_opts fopts[Q_MAX];
};

static void server_batch_build(struct fetch_job *j, struct srv_batch *b)
{
    const struct gl_srv_unit *u = &j->sv;
    static const struct gl_parse_opts any = {.any_finite = true};
    b->nper = (size_t)(j->nq * SV_N);
    b->sq = gl_xcalloc(b->nper + u->nfig, sizeof *b->sq);
    b->text = gl_xcalloc(b->nper, sizeof *b->text);
    b->nsq = 0;
    for (int q = 0; q < j->nq; q++) {
        b->fopts[q] = any;
        b->fopts[q].accept_warnings = j->po[q].accept_warnings;
        b->fopts[q].naccept_warnings = j->po[q].naccept_warnings;
        if (u->role[q] != GL_SRV_OTHER)
            continue;
        for (int f = 0; f < SV_N; f++) {
            b->text[q * SV_N + f] = server_query(j->queries[q], f, j->step, gl_srv_changes(u));
            b->sq[b->nsq++] = (struct gl_range_query){
                .query = b->text[q * SV_N + f], .what = j->what[q], .opts = &b->fopts[q]};
        }
    }
    b->fig0 = b->nsq;
    for (size_t k = 0; k < u->nfig; k++)
        b->sq[b->nsq++] = (struct gl_range_query){
            .query = u->fig_text[k], .what = j->what[u->fig_q[k] >= 0 ? u->fig_q[k] : 0],
            .opts = &b->fopts[u->fig_q[k] >= 0 ? u->fig_q[k] : 0]};
}

static void server_batch_free(struct srv_batch *b)
{
    for (size_t k = 0; k < b->nsq; k++)
        gl_matrix_free(&b->sq[k].m);
    for (size_t k = 0; k < b->nper; k++)
        free(b->text[k]);
    free(b->sq);
    free(b->text);
}

/* The label and allocation queries from the hourly batch (rc: the batch's
 * status): each rebuilt from its hourly statements where its series were
 * constant, the hours they were not marked in badh (NaN, fetched raw later),
 * and fetched raw whole where the statements could not be rebuilt. The
 * figures' bytes are counted under their queries either way. */
static enum gl_status server_label_queries(struct fetch_job *j, const struct srv_batch *b,
                                           enum gl_status rc,
                                           unsigned char (*badh)[GL_MAX_UNIT_HOURS])
{
    const struct gl_srv_unit *u = &j->sv;
    const int64_t step = j->step;
    struct gl_range_query raw[Q_MAX];
    int rawq[Q_MAX], nraw = 0;
    size_t at = 0;
    for (int q = 0; !rc && q < j->nq; q++) {
        if (u->role[q] != GL_SRV_OTHER)
            continue;
        struct gl_matrix st[SV_N];
        bool parsed = true;
        int64_t bytes = 0;
        for (int f = 0; f < SV_N; f++) {
            st[f] = b->sq[at + (size_t)f].m;
            parsed &= b->sq[at + (size_t)f].rc == GL_OK;
            bytes += b->sq[at + (size_t)f].bytes;
        }
        at += SV_N;
        j->qs[q].bytes = bytes;
        j->qs[q].rc = GL_OK;
        memset(badh[q], 0, u->nhours);
        if (parsed &&
            server_rebuild(st, &j->po[q], j->cs, step, u->nhours, &j->qs[q].m, badh[q])) {
            j->sv_rebuilt[q] = true;
            /* the hours some series was not constant in come raw, whole */
            struct gl_matrix *mq = &j->qs[q].m;
            for (size_t i = 0; i < mq->nseries; i++)
                for (size_t t = 0; t < mq->nsteps; t++)
                    if (badh[q][t / (size_t)(3600 / step)])
                        mq->series[i].values[t] = (double)NAN;
        } else {
            rawq[nraw] = q;
            raw[nraw++] = j->qs[q];
            memset(&raw[nraw - 1].m, 0, sizeof raw[nraw - 1].m);
        }
    }
    for (size_t k = b->fig0; k < b->nsq; k++) {
        int q = u->fig_q[k - b->fig0];
        j->qs[q >= 0 ? q : 0].bytes += b->sq[k].bytes;
    }
    if (!rc && nraw > 0)
        rc = gl_prom_query_range_batch(j->prom, (size_t)nraw, raw, j->start, j->end, step,
                                       &j->err);
    for (int k = 0; k < nraw; k++) {
        int64_t bytes = j->qs[rawq[k]].bytes;
        j->qs[rawq[k]] = raw[k];
        j->qs[rawq[k]].bytes += bytes;
    }
    return rc;
}

/* The rebuilt queries' raw hours (badh), one request per run of hours,
 * merged into the rebuilt matrix. */
static enum gl_status server_raw_hours(struct fetch_job *j,
                                       unsigned char (*badh)[GL_MAX_UNIT_HOURS])
{
    const struct gl_srv_unit *u = &j->sv;
    const size_t nhours = u->nhours;
    enum gl_status rc = GL_OK;
    for (int q = 0; !rc && q < j->nq; q++) {
        if (u->role[q] != GL_SRV_OTHER || !j->sv_rebuilt[q])
            continue;
        bool merged = false;
        for (size_t h = 0; h < nhours; h++) {
            if (!badh[q][h])
                continue;
            size_t h1 = h + 1;
            while (h1 < nhours && badh[q][h1])
                h1++;
            struct gl_range_query one = j->qs[q];
            memset(&one.m, 0, sizeof one.m);
            one.bytes = 0;
            rc = gl_prom_query_range_batch(j->prom, 1, &one, j->cs + (int64_t)h * 3600,
                                           j->cs + (int64_t)h1 * 3600 - j->step, j->step,
                                           &j->err);
            j->qs[q].bytes += one.bytes;
            if (!rc)
                gl_srv_merge(&j->qs[q].m, &one.m);
            gl_matrix_free(&one.m);
            merged = true;
            h = h1 - 1;
        }
        if (merged && !rc)
            server_finish(&j->qs[q].m);
    }
    return rc;
}

/* The device queries' raw requests of a unit: one per query (from -1,
 * whole), or one per run of hours with the same plain hosts (from: the
 * run's hours [h, h1) as h | h1 << 32); own: the PromQL made for a run. */
struct srv_raw {
    struct gl_range_query *rq;
    char **own;
    int *q;
    int64_t *from;
    size_t n;
};

static enum gl_status server_device_plan(struct fetch_job *j, bool split, struct srv_raw *r)
{
    struct gl_srv_unit *u = &j->sv;
    const size_t nhours = u->nhours;
    enum gl_status rc = GL_OK;
    for (int q = 0; !rc && q < j->nq; q++) {
        if (u->role[q] == GL_SRV_OTHER)
            continue;
        struct gl_matrix *e = &j->qs[q].m;
        memset(e, 0, sizeof *e);
        e->start = j->start;
        e->step = j->step;
        e->nsteps = (size_t)((j->end - j->start) / j->step + 1);
        j->qs[q].rc = GL_OK;
        if (!split) {
            gl_matrix_free(&u->synth[q]);
            r->rq[r->n] = j->qs[q];
            r->rq[r->n].query = j->queries[q];
            memset(&r->rq[r->n].m, 0, sizeof r->rq[r->n].m);
            r->q[r->n] = q;
            r->from[r->n++] = -1;
            continue;
        }
        for (size_t h = 0; !rc && h < nhours; h++) {
            if (!u->raw_needed_h[(size_t)q * nhours + h])
                continue;
            size_t h1 = h + 1;
            while (h1 < nhours && u->raw_needed_h[(size_t)q * nhours + h1] &&
                   gl_srv_same_hours(u, h, h1))
                h1++;
            if ((rc = gl_srv_raw_query(u, q, h, &r->own[r->n], &j->err)))
                break;
            r->rq[r->n] = j->qs[q];
            r->rq[r->n].query = r->own[r->n];
            memset(&r->rq[r->n].m, 0, sizeof r->rq[r->n].m);
            r->q[r->n] = q;
            r->from[r->n++] = (int64_t)h;
            /* the run's hours [h, h1) */
            r->from[r->n - 1] |= (int64_t)h1 << 32;
            h = h1 - 1;
        }
    }
    return rc;
}

/* Runs of different lengths: one batch per distinct range. */
static enum gl_status server_device_batches(struct fetch_job *j, struct srv_raw *r)
{
    enum gl_status rc = GL_OK;
    for (size_t k = 0; !rc && k < r->n; k++) {
        if (r->rq[k].m.series || r->rq[k].m.nsteps || r->from[k] == -2)
            continue;
        int64_t s0 = j->start, s1 = j->end;
        if (r->from[k] >= 0) {
            s0 = j->cs + (r->from[k] & 0xffffffff) * 3600;
            s1 = j->cs + (r->from[k] >> 32) * 3600 - j->step;
        }
        struct gl_range_query batch[Q_MAX];
        size_t idx[Q_MAX], nb = 0;
        for (size_t i = k; i < r->n && nb < Q_MAX; i++)
            if (r->from[i] == r->from[k] && !r->rq[i].m.nsteps) {
                idx[nb] = i;
                batch[nb++] = r->rq[i];
            }
        rc = gl_prom_query_range_batch(j->prom, nb, batch, s0, s1, j->step, &j->err);
        for (size_t i = 0; i < nb; i++) {
            r->rq[idx[i]] = batch[i];
            if (!r->rq[idx[i]].m.nsteps)
                r->rq[idx[i]].m.nsteps = 1; /* done, even if empty */
        }
    }
    return rc;
}

/* The device queries raw: whole, or per run of hours with the same plain
 * hosts, for the hosts that are not plain then (rc: the status so far;
 * nothing is asked after a failure). */
static enum gl_status server_device_queries(struct fetch_job *j, enum gl_status rc)
{
    struct gl_srv_unit *u = &j->sv;
    const size_t cap = (size_t)j->nq * u->nhours + 1;
    const bool split = !rc && u->enabled && gl_intern_count(u->plain) > 0;
    struct srv_raw r = {.rq = gl_xcalloc(cap, sizeof *r.rq), .own = gl_xcalloc(cap, sizeof *r.own),
                        .q = gl_xcalloc(cap, sizeof *r.q), .from = gl_xcalloc(cap, sizeof *r.from)};
    if (!rc)
        rc = server_device_plan(j, split, &r);
    if (!rc)
        rc = server_device_batches(j, &r);
    for (size_t k = 0; k < r.n; k++) {
        int q = r.q[k];
        j->qs[q].bytes += r.rq[k].bytes;
        if (!rc && r.from[k] == -1) {
            int64_t b = j->qs[q].bytes;
            gl_matrix_free(&j->qs[q].m);
            j->qs[q] = r.rq[k];
            j->qs[q].query = j->queries[q];
            j->qs[q].bytes = b;
            memset(&r.rq[k].m, 0, sizeof r.rq[k].m);
        } else if (!rc) {
            gl_srv_merge(&j->qs[q].m, &r.rq[k].m);
        }
        gl_matrix_free(&r.rq[k].m);
        free(r.own[k]);
    }
    for (int q = 0; split && !rc && q < j->nq; q++) {
        if (u->role[q] == GL_SRV_OTHER)
            continue;
        /* a query without ${cluster_selector} got every host: keep the others */
        struct gl_matrix drop;
        gl_srv_split(u, &j->qs[q].m, j->c->hostname_label, &drop);
        gl_matrix_free(&drop);
    }
    free(r.rq);
    free(r.own);
    free(r.q);
    free(r.from);
    return rc;
}

/* Server mode for one unit: per-series hourly figures of the label and
 * allocation queries (rebuilt when constant, else fetched raw), the
 * aggregate figures of the device queries (server.h), the plain hosts, then
 * the device queries raw for the other hosts. */
static enum gl_status server_fetch(struct fetch_job *j)
{
    const struct gl_config *c = j->c;
    struct gl_srv_unit *u = &j->sv;
    server_unit_init(j);
    struct srv_batch b;
    server_batch_build(j, &b);
    enum gl_status rc = gl_prom_query_range_batch(j->prom, b.nsq, b.sq, j->cs + 3600 - j->step,
                                                  j->ce - j->step, 3600, &j->err);
    unsigned char badh[Q_MAX][GL_MAX_UNIT_HOURS];
    rc = server_label_queries(j, &b, rc, badh);
    if (!rc)
        rc = server_raw_hours(j, badh);
    /* the plain hosts: the allocation of Running pods as integrate sees it */
    struct gl_matrix joined = {0};
    const struct gl_matrix *alloc = &j->qs[Q_ALLOCATION].m;
    if (!rc && u->phase_q >= 0) {
        struct gl_error jerr = {0};
        if (gl_allocation_join(c, &j->qs[Q_ALLOCATION].m, &j->qs[u->phase_q].m,
                               alloc_max_units(), &joined, &jerr) == GL_OK)
            alloc = &joined;
        else
            alloc = NULL; /* the main loop reports it */
    }
    struct gl_matrix mm[Q_MAX];
    for (int q = 0; q < j->nq; q++)
        mm[q] = j->qs[q].m;
    if (!rc)
        rc = gl_srv_decide(u, b.sq + b.fig0, mm, alloc, &j->err);
    if (!rc && !alloc)
        u->enabled = false;
    gl_matrix_free(&joined);
    server_batch_free(&b);
    rc = server_device_queries(j, rc);
    if (!u->enabled || !u->plain || !gl_intern_count(u->plain))
        u->enabled = false;
    if (rc)
        for (int q = 0; q < j->nq; q++)
            gl_matrix_free(&j->qs[q].m);
    return rc;
}

/* The device series of memory_source.device_query go into the memory
 * source's matrix, marked GL_DEVICE_SERIES_LABEL (integrate.c reads them
 * as device totals whatever pod labels they carry) and in the memory
 * source's unit (× or ÷ 2^20: exact in doubles); their skipped samples
 * and counts are the memory source's, as the engine has always reported
 * them. The series stay in label order, as the backend answers. */
static void device_series_merge(const struct gl_config *c, struct gl_matrix *mem,
                                struct gl_matrix *dev)
{
    const enum gl_mem_unit du = c->mq[GL_MQ_FREE].unit, mu = c->mq[GL_MQ_MEMORY].unit;
    const double scale = du == mu ? 1 : mu == GL_UNIT_BYTES ? 1048576.0 : 1 / 1048576.0;
    mem->series = gl_xrealloc(mem->series, (mem->nseries + dev->nseries + 1) * sizeof *mem->series);
    for (size_t i = 0; i < dev->nseries; i++) {
        struct gl_series *s = &dev->series[i], *o = &mem->series[mem->nseries++];
        *o = (struct gl_series){.values = s->values, .first_step = s->first_step,
                                .first_seen = s->first_seen};
        s->values = NULL;
        for (size_t t = 0; t < dev->nsteps; t++)
            o->values[t] *= scale;
        o->labels = gl_xcalloc(s->nlabels + 2, sizeof *o->labels);
        bool marked = false;
        for (size_t k = 0; k <= s->nlabels; k++) {
            const char *n = k < s->nlabels ? s->labels[k].name : NULL;
            const char *v = k < s->nlabels ? s->labels[k].value : NULL;
            if (!marked && (!n || strcmp(n, GL_DEVICE_SERIES_LABEL) >= 0)) {
                marked = true;
                if (n && strcmp(n, GL_DEVICE_SERIES_LABEL) == 0)
                    v = GL_DEVICE_SERIES_VALUE; /* label_replace's overwrite */
                else
                    k--, n = GL_DEVICE_SERIES_LABEL, v = GL_DEVICE_SERIES_VALUE;
            }
            if (!n)
                break;
            size_t nn = strlen(n), vn = strlen(v);
            char *buf = gl_xcalloc(nn + vn + 2, 1);
            memcpy(buf, n, nn);
            memcpy(buf + nn + 1, v, vn);
            o->labels[o->nlabels].name = buf;
            o->labels[o->nlabels++].value = buf + nn + 1;
        }
    }
    mem->samples += dev->samples;
    mem->bad_samples += dev->bad_samples;
    for (int why = 0; why < GL_SKIP_N; why++)
        mem->skipped[why] += dev->skipped[why];
    for (size_t k = 0, at = 0; k < 5 && dev->bad[k][0]; k++) {
        while (at < 5 && mem->bad[at][0])
            at++;
        if (at < 5)
            memcpy(mem->bad[at], dev->bad[k], sizeof mem->bad[at]);
    }
    mem->nwarnings += dev->nwarnings;
    qsort(mem->series, mem->nseries, sizeof *mem->series, gl_series_cmp);
    gl_matrix_free(dev);
}

/* The parse options of query q: plausibility bounds (README "Wire
 * integrity"): a device's memory <= 2^20 MiB (1 TiB) or 2^40 bytes, a
 * pod's GPU units <= 1024, a busy ratio <= 1 (GPU_UTIL <= 100 %), label
 * series: any finite value. */
static struct gl_parse_opts query_opts(const struct gl_config *c,
                                       const struct gl_cluster *cluster, int q)
{
    struct gl_parse_opts po = {.max = 1048576.0,
                               .accept_warnings = cluster->prom.accept_warnings,
                               .naccept_warnings = cluster->prom.naccept_warnings};
    const struct gl_qrow *r = query_row(c, q);
    switch (r->unit) {
    case GL_QU_MEMORY: /* in its exporter schema entry's unit */
        po.max = c->mq[r->schema].unit == GL_UNIT_BYTES ? 1099511627776.0 : 1048576.0;
        break;
    case GL_QU_INFO:
    case GL_QU_REQUEST: /* the bound applies to the joined sum */
        po.any_finite = true;
        break;
    case GL_QU_UNITS:
        po.max = ALLOC_MAX_UNITS;
        break;
    case GL_QU_RATIO:
        po.max = 1, po.max_name = "DCGM_FI_DEV_GPU_UTIL", po.named_max = 100;
        break;
    }
    return po;
}

static void job_start(const struct collector *x, struct fetch_job *j)
{
    char ts[32];
    gl_time_format(j->cs, ts, sizeof ts);
    for (int q = 0; q < j->nq; q++) {
        snprintf(j->what[q], sizeof j->what[q], "%s/api/v1/query_range (%s.promql, chunk %s)",
                 x->cluster->prom.url, query_name(x->c, q), ts);
        j->po[q] = query_opts(x->c, x->cluster, q);
        j->po[q].slots_used = &j->slots_used;
        j->po[q].max_slots = (size_t)x->c->max_samples_in_memory;
        if (j->plan.nshards > 1 && kept_whole(x->c, q)) {
            j->po[q].slots_used = &j->kept_slots;
            j->po[q].max_slots = KEPT_BUDGET * (size_t)x->c->max_samples_in_memory;
        }
        j->qs[q] = (struct gl_range_query){
            .query = j->queries[q], .what = j->what[q], .opts = &j->po[q]};
    }
    j->rc = GL_OK;
    j->err.msg[0] = '\0';
    j->slots_used = 0;
    j->kept_slots = 0;
    j->over_budget = false;
    j->over_q = -1;
    j->server = x->c->server_mode;
    j->c = x->c;
    j->cluster = x->cluster;
    memset(j->sv_rebuilt, 0, sizeof j->sv_rebuilt);
    gl_srv_unit_free(&j->sv);
    memset(&j->sv, 0, sizeof j->sv);
    j->running = thrd_create(&j->th, fetch_main, j) == thrd_success;
    if (!j->running)
        fetch_main(j); /* no thread: fetch now */
}

static void job_wait(struct fetch_job *j)
{
    if (j->running) {
        thrd_join(j->th, NULL);
        j->running = false;
    }
}

static void job_clear(struct fetch_job *j)
{
    gl_srv_unit_free(&j->sv);
    for (int q = 0; q < Q_MAX; q++) {
        free(j->own[q]);
        j->own[q] = NULL;
    }
    plan_free(&j->plan);
}

/* The hosts of [cs, ce): label values of collection.hostname_label on the
 * memory query. Only the split depends on them, never a figure: a host
 * missed here falls in the last shard. */
static enum gl_status discover_hosts(const struct collector *x, int64_t cs, int64_t ce,
                                     struct gl_intern **out, struct gl_error *err)
{
    const struct gl_config *c = x->c;
    struct gl_buf q;
    gl_buf_init(&q);
    /* one instant vector (a sample per host), not a range: the answer stays
     * small whatever the cap that made the hour split */
    gl_buf_printf(&q, "count by (%s) (count_over_time((%s)[%llds:%llds]))", c->hostname_label,
                  x->queries[Q_MEMORY], (long long)(ce - cs), (long long)c->step);
    struct gl_vector hosts;
    enum gl_status rc = gl_prom_vector(x->prom, q.data, ce - c->step, &hosts, err);
    if (rc == GL_ERR_TOO_LARGE) /* internal: never leaves collect */
        rc = gl_error_set(err, GL_ERR_PROM, "%s", err->msg);
    *out = gl_intern_new();
    for (size_t i = 0; !rc && i < hosts.n; i++) {
        const char *h = gl_sample_label(&hosts.samples[i], c->hostname_label);
        if (h && listable(h))
            gl_intern_get(*out, h);
    }
    gl_vector_free(&hosts);
    gl_buf_free(&q);
    if (rc) {
        gl_intern_free(*out);
        *out = NULL;
    }
    return rc;
}

/* Sets j up for [cs, ce), shard `shard` of nshards: the hosts come from
 * same (a shard of the same hour) or are discovered; fewer shards than
 * asked when the hour has fewer hosts. */
static enum gl_status job_prepare(const struct collector *x, struct fetch_job *j, int64_t cs,
                                  int64_t ce, int shard, int nshards,
                                  const struct shard_plan *same, struct gl_error *err)
{
    const struct gl_config *c = x->c;
    job_clear(j);
    j->cs = cs;
    j->ce = ce;
    j->start = cs;
    j->end = ce - c->step;
    j->shard = shard;
    for (int q = 0; q < Q_MAX; q++)
        j->queries[q] = x->queries[q];
    if (nshards <= 1)
        return GL_OK;
    enum gl_status rc = GL_OK;
    if (same) {
        j->plan.hosts = gl_intern_new();
        for (int32_t i = 0; i < gl_intern_count(same->hosts); i++)
            gl_intern_get(j->plan.hosts, gl_intern_str(same->hosts, i));
    } else if ((rc = discover_hosts(x, cs, ce, &j->plan.hosts, err))) {
        return gl_error_prefix(err, "finding the hosts to split the hour");
    }
    int nhosts = (int)gl_intern_count(j->plan.hosts);
    j->plan.nshards = nshards < nhosts ? nshards : nhosts > 0 ? nhosts : 1;
    if (j->plan.nshards <= 1)
        return GL_OK;
    struct gl_buf sel;
    gl_buf_init(&sel);
    for (int q = 0; !rc && q < x->nq; q++) {
        if (!host_sharded(c, q) && !node_sharded(c, q))
            continue;
        gl_buf_reset(&sel);
        if (x->cluster->selector[0])
            gl_buf_printf(&sel, "%s, ", x->cluster->selector);
        shard_matcher(&j->plan, shard, node_sharded(c, q) ? "node" : c->hostname_label, &sel);
        struct gl_cluster shard_cluster = *x->cluster;
        shard_cluster.selector = sel.data;
        if (!(rc = gl_config_query(c, &shard_cluster, query_name(c, q), &j->own[q], err)))
            j->queries[q] = j->own[q];
    }
    gl_buf_free(&sel);
    return rc;
}

/* After GL_ERR_TOO_LARGE for j's unit: fewer hours, else more shards
 * (sticky for the rest of the window); j is set up again for the same
 * start. GL_ERR_PROM when one hour cannot be split further. */
static enum gl_status split_unit(const struct collector *x, struct fetch_job *j,
                                 int64_t *hours, int *nshards, struct gl_error *err)
{
    const struct gl_config *c = x->c;
    const int64_t span = (j->ce - j->cs) / 3600;
    char ts[32];
    gl_time_format(j->cs, ts, sizeof ts);
    if (j->plan.nshards > 1 && j->over_q >= 0 && kept_whole(c, j->over_q))
        return gl_error_set(
            err, GL_ERR_PROM,
            "%s; the hour %s: %s.promql is asked once for all %d host shards, within %d x "
            "collection.max_samples_in_memory (%lld now), and more shards cannot make it "
            "smaller: raise collection.max_samples_in_memory",
            j->err.msg, ts, query_name(c, j->over_q), j->plan.nshards, KEPT_BUDGET,
            (long long)c->max_samples_in_memory);
    if (span > 1) {
        *hours = span / 2;
        gl_log(GL_LOG_INFO, "splitting chunk start=%s hours=%lld into %lld-hour chunks: %s", ts,
               (long long)span, (long long)*hours, j->err.msg);
        return job_prepare(x, j, j->cs, j->cs + *hours * 3600, 0, *nshards, NULL, err);
    }
    const int had = j->plan.nshards > 1 ? j->plan.nshards : 1;
    struct gl_error why = j->err;
    enum gl_status rc = job_prepare(x, j, j->cs, j->ce, 0, had * 2, NULL, err);
    if (rc)
        return gl_error_prefix(err, "%s; splitting the hour %s by host failed", why.msg, ts);
    if (j->plan.nshards <= had)
        return gl_error_set(
            err, GL_ERR_PROM,
            "%s; the hour %s is too large even in %d shard%s of its %d hosts (by %s): raise "
            "%s (%lld now) or check collection.hostname_label",
            why.msg, ts, had, had > 1 ? "s" : "", (int)gl_intern_count(j->plan.hosts),
            c->hostname_label,
            j->over_budget ? "collection.max_samples_in_memory" : "prometheus.max_response_bytes",
            (long long)(j->over_budget ? c->max_samples_in_memory
                                       : x->cluster->prom.max_response_bytes));
    *nshards = j->plan.nshards;
    gl_log(GL_LOG_INFO, "splitting hour start=%s into %d shards of %d hosts by %s: %s", ts,
           *nshards, (int)gl_intern_count(j->plan.hosts), c->hostname_label, why.msg);
    return GL_OK;
}

/* One line per unit in server mode: the label and allocation queries
 * rebuilt from their hourly figures, the hosts whose device queries came
 * as hourly sums (plain) and the device-hours each way, and the first
 * reason a host was fetched raw. */
static void log_server_unit(const struct gl_config *c, const struct fetch_job *j, int nq)
{
    char ts[32];
    gl_time_format(j->cs, ts, sizeof ts);
    int nrebuilt = 0, nother = 0;
    struct gl_buf rawl;
    gl_buf_init(&rawl);
    for (int q = 0; q < nq; q++) {
        if (j->sv.role[q] != GL_SRV_OTHER)
            continue;
        nother++;
        nrebuilt += j->sv_rebuilt[q];
        if (!j->sv_rebuilt[q])
            gl_buf_printf(&rawl, "%s%s", rawl.len ? "," : "", query_name(c, q));
    }
    const struct gl_srv_unit *u = &j->sv;
    gl_log(GL_LOG_INFO,
           "server mode chunk=%s hours=%lld label_queries_server=%d label_queries_raw=%d "
           "raw=%s hosts=%d hosts_server=%d device_hours_server=%lld device_hours_raw=%lld "
           "why_raw=\"%s\"",
           ts, (long long)((j->ce - j->cs) / 3600), nrebuilt, nother - nrebuilt,
           rawl.len ? rawl.data : "-", u->hosts ? (int)gl_intern_count(u->hosts) : 0,
           u->enabled ? (int)gl_intern_count(u->plain) : 0,
           (long long)(u->enabled ? u->device_hours_server : 0),
           (long long)(u->enabled ? u->device_hours_raw
                                  : u->device_hours_raw + u->device_hours_server),
           u->why[0] ? u->why : "-");
    gl_buf_free(&rawl);
}

static void parts_free(struct gl_rollup *parts, size_t *nparts)
{
    for (size_t i = 0; i < *nparts; i++)
        gl_rollup_free(&parts[i]);
    *nparts = 0;
}

/* VictoriaMetrics (MetricsQL) evaluates server mode's subqueries as
 * Prometheus does (the per-hour probe checks their instants) but for
 * changes(), which also counts the step before the window, or the window's
 * first point when the subquery has none before it (a constant series
 * gives 1, not 0). Its changes_prometheus() is Prometheus's changes(): the
 * backend must answer it with 0 on a constant; Prometheus refuses it as an
 * unknown function. */
static enum gl_status metricsql_probe(const struct gl_cluster *cluster, struct gl_prom *p,
                                      int64_t t, struct gl_error *err)
{
    static const char probe[] = "changes_prometheus(vector(1)[10m:1m])";
    struct gl_error why = {0};
    struct gl_vector res;
    enum gl_status rc = gl_prom_vector(p, probe, t, &res, &why);
    if (rc || res.n != 1 || res.samples[0].value != 0)
        rc = gl_error_set(
            err, GL_ERR_PROM,
            "%s/api/v1/status/buildinfo reports no version and the backend does not answer %s "
            "with 0 (%s): collection.mode \"server\" needs Prometheus's engine (Prometheus, "
            "Thanos, Mimir) or VictoriaMetrics' (MetricsQL, for changes_prometheus in place of "
            "its changes, which counts the step before each hour): use collection.mode \"raw\"",
            cluster->prom.url, probe, rc ? why.msg : "another answer");
    gl_vector_free(&res);
    return rc;
}

/* Server mode needs the Prometheus engine's subquery semantics: a backend
 * that reports a version at /api/v1/status/buildinfo (Prometheus, Thanos,
 * Mimir), or VictoriaMetrics, which reports none (its buildinfo's data is
 * empty) and is taken when it answers metricsql_probe (*metricsql). */
static enum gl_status server_backend(const struct gl_cluster *cluster, struct gl_prom *p,
                                     int64_t t, bool *metricsql, struct gl_error *err)
{
    struct gl_buf body;
    gl_buf_init(&body);
    *metricsql = false;
    enum gl_status rc = gl_prom_get(p, "/api/v1/status/buildinfo", &body, err);
    cJSON *doc = rc ? NULL : cJSON_ParseWithLength(body.data ? body.data : "", body.len);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(doc, "data"), "version");
    /* VictoriaMetrics from 1.96 reports a Prometheus version ("2.24.0") at
     * buildinfo: the probe asks every backend; Prometheus, Thanos and Mimir
     * refuse changes_prometheus as an unknown function */
    const bool versioned = !rc && cJSON_IsString(v) && v->valuestring[0];
    struct gl_error perr = {0};
    enum gl_status prc = rc ? GL_OK : metricsql_probe(cluster, p, t, &perr);
    if (rc)
        rc = gl_error_prefix(err, "collection.mode \"server\" asks the backend's version");
    else if (!prc) {
        *metricsql = true;
        gl_log(GL_LOG_INFO,
               "server mode backend=%s engine=metricsql (buildinfo version \"%s\"; "
               "changes_prometheus answered): changes_prometheus in place of changes",
               cluster->prom.url, versioned ? v->valuestring : "");
    } else if (versioned)
        gl_log(GL_LOG_DEBUG, "server mode backend=%s version=%s", cluster->prom.url,
               v->valuestring);
    else {
        *err = perr;
        rc = prc;
    }
    cJSON_Delete(doc);
    gl_buf_free(&body);
    return rc;
}

/* gl_collect's walk over units: two fetch jobs (one prefetching while the
 * other is integrated) and what the shards of the current range share. */
struct walk {
    const struct gl_config *c;
    const struct gl_cluster *cluster;
    struct gl_store *s;
    struct gl_collect_stats *stats;
    struct collector x;
    struct fetch_job jobs[2];
    int cur;
    int64_t from, to;
    /* the unit of collection: `hours` hours in `nshards` shards; both
     * change when a response is too large, and stay for the window */
    int64_t hours;
    int nshards;
    int64_t nchunks;
    bool progress;
    struct timespec t0;
    struct gl_rollup *parts; /* the shards of the current range */
    size_t nparts, capparts;
    struct range_counts counts;
    struct gl_matrix kept[Q_MAX]; /* a split hour's kept queries (kept_whole) */
};

/* One unit taken from its job: the parsed responses (owned, except the
 * kept queries of a split hour: borrowed from w->kept) and outcomes. */
struct unit {
    struct fetch_job *j;
    int64_t cs, ce;
    int shard, shards;
    bool last_shard;
    struct gl_matrix m[Q_MAX];
    bool borrowed[Q_MAX];
    enum gl_status qrc[Q_MAX];
    struct gl_error qerr[Q_MAX];
    int64_t qbytes[Q_MAX];
    size_t alloc_n;               /* m[Q_ALLOCATION]'s series before keep_shard */
    struct gl_matrix alloc_plain; /* the plain hosts' allocation (server mode) */
    bool srv;
};

static void walk_kept_free(struct walk *w)
{
    for (int q = 0; q < Q_MAX; q++)
        gl_matrix_free(&w->kept[q]);
}

/* Takes j's parsed responses into u: the first shard of a split hour
 * hands its kept queries to w->kept, the later shards borrow them. */
static void unit_take(struct walk *w, struct fetch_job *j, struct unit *u)
{
    const int nq = w->x.nq;
    memset(u, 0, sizeof *u);
    u->j = j;
    u->cs = j->cs;
    u->ce = j->ce;
    u->shard = j->shard;
    u->shards = j->plan.nshards;
    u->last_shard = u->shard == u->shards - 1;
    for (int q = 0; q < nq; q++) {
        u->m[q] = j->qs[q].m;
        memset(&j->qs[q].m, 0, sizeof j->qs[q].m);
        u->qrc[q] = j->qs[q].rc;
        u->qerr[q] = j->qs[q].err;
        u->qbytes[q] = j->qs[q].bytes;
        if (u->shards <= 1 || !kept_whole(w->c, q))
            continue;
        if (u->shard == 0) {
            gl_matrix_free(&w->kept[q]);
            w->kept[q] = u->m[q];
        } else {
            u->m[q] = w->kept[q];
        }
        u->borrowed[q] = true;
    }
    if (w->c->server_mode && j->server && u->shards <= 1) {
        log_server_unit(w->c, j, nq);
        for (int q = 0; q < nq; q++)
            gl_log(GL_LOG_DEBUG, "server mode query=%s bytes=%lld", query_name(w->c, q),
                   (long long)j->qs[q].bytes);
    }
}

/* Starts the next unit on the other job: the next shard of the hour, else
 * the next range. */
static enum gl_status walk_next(struct walk *w, const struct unit *u, struct gl_error *err)
{
    struct fetch_job *nj = &w->jobs[w->cur ^ 1];
    const int64_t to = w->to, ce = u->ce;
    enum gl_status rc = GL_OK;
    nj->cs = to;
    if (!u->last_shard)
        rc = job_prepare(&w->x, nj, u->cs, ce, u->shard + 1, u->shards, &u->j->plan, err);
    else if (ce < to)
        rc = job_prepare(&w->x, nj, ce, ce + w->hours * 3600 < to ? ce + w->hours * 3600 : to,
                         0, w->nshards, NULL, err);
    if (!rc && nj->cs < to)
        job_start(&w->x, nj);
    w->cur ^= 1;
    return rc;
}

/* The queries' outcomes and skipped samples (a kept query's once, in the
 * shard that asked it), then the engine's allocation join and the shard's
 * share of the allocation. */
static enum gl_status unit_check(struct walk *w, struct unit *u, struct gl_error *err)
{
    const struct gl_config *c = w->c;
    struct gl_collect_stats *stats = w->stats;
    struct gl_matrix *m = u->m;
    enum gl_status rc = GL_OK;
    char ts[32];
    gl_time_format(u->cs, ts, sizeof ts);
    const int devq = gl_qr_pos(c, GL_Q_MEM_DEVICE);
    if (devq >= 0 && !u->qrc[Q_MEMORY] && !u->qrc[devq])
        device_series_merge(c, &m[Q_MEMORY], &m[devq]);
    for (int q = 0; q < w->x.nq && !rc; q++) {
        stats->bytes += u->qbytes[q];
        if ((rc = u->qrc[q])) {
            *err = u->qerr[q];
            break;
        }
        if (u->borrowed[q] && u->shard > 0)
            continue;
        for (int why = 0; why < GL_SKIP_N; why++)
            stats->skipped[why] += (int64_t)m[q].skipped[why];
        log_skips(query_name(c, q), ts, &m[q]);
        if (q != Q_MEMORY)
            stats->bad_samples += (int64_t)m[q].bad_samples;
    }
    /* the requests of Running pods, joined here (not on the backend) */
    const int phase_q = gl_qr_pos(c, GL_Q_PHASE);
    if (!rc && phase_q >= 0) {
        struct gl_matrix joined;
        if (!(rc = gl_allocation_join(c, &m[Q_ALLOCATION], &m[phase_q], ALLOC_MAX_UNITS,
                                      &joined, err))) {
            log_skips("allocation", ts, &joined);
            for (int why = 0; why < GL_SKIP_N; why++)
                stats->skipped[why] += (int64_t)joined.skipped[why];
            stats->bad_samples += (int64_t)joined.bad_samples;
            gl_matrix_free(&m[Q_ALLOCATION]);
            m[Q_ALLOCATION] = joined;
        }
    }
    /* the allocation series of this shard's nodes (see shard_plan) */
    u->alloc_n = m[Q_ALLOCATION].nseries;
    if (!rc && u->shards > 1)
        u->alloc_n = keep_shard(&m[Q_ALLOCATION], &u->j->plan, u->shard);
    return rc;
}

/* Adds the unit's series and samples per hour and query to the range's
 * counts; the plain hosts' allocation goes to their hourly integration. */
static void unit_count(struct walk *w, struct unit *u)
{
    const struct gl_config *c = w->c;
    struct fetch_job *j = u->j;
    struct range_counts *counts = &w->counts;
    u->srv = j->server && u->shards <= 1 && j->sv.enabled;
    if (w->s) {
        if (u->shard == 0)
            counts_reset(counts, (size_t)((u->ce - u->cs) / 3600));
        /* shards split the dcgm-exporter series and the allocation;
         * the kept queries are whole in each: count them once */
        for (int q = 0; q < w->x.nq; q++)
            if (host_sharded(c, q) || q == Q_ALLOCATION || u->last_shard)
                counts_add(counts, q, &u->m[q], c->step);
        /* the plain hosts' series of the device queries, from the figures */
        for (size_t h = 0; u->srv && h < counts->nhours; h++)
            for (int q = 0; q < w->x.nq; q++) {
                counts->series[h * Q_MAX + (size_t)q] += j->sv.pl_series[h * GL_SRV_QMAX + (size_t)q];
                counts->samples[h * Q_MAX + (size_t)q] += j->sv.pl_samples[h * GL_SRV_QMAX + (size_t)q];
            }
    }
    if (u->srv) {
        gl_srv_split(&j->sv, &u->m[Q_ALLOCATION], "node", &u->alloc_plain);
        u->alloc_n = u->m[Q_ALLOCATION].nseries;
    }
}

/* Integrates the unit into the range's parts; the last shard stores the
 * range in one transaction. */
static enum gl_status unit_integrate(struct walk *w, struct unit *u, struct gl_error *err)
{
    const struct gl_config *c = w->c;
    struct gl_collect_stats *stats = w->stats;
    struct gl_store *s = w->s;
    struct gl_matrix *m = u->m;
    enum gl_status rc = GL_OK;
    const struct gl_matrix *compute[Q_MAX];
    for (int q = Q_FIXED; q < Q_FIXED + compute_count(c); q++)
        compute[q - Q_FIXED] = &m[q];
    int limit_q = gl_qr_pos(c, GL_Q_MEM_LIMIT);
    struct gl_chunk_input in = {
        .cluster = w->cluster,
        .memory = &m[Q_MEMORY], .fb_free = &m[Q_FREE], .fb_reserved = &m[Q_RESERVED],
        .pod_labels = &m[Q_POD_LABELS], .ns_labels = &m[Q_NS_LABELS],
        .allocation = &m[Q_ALLOCATION], .node_labels = &m[Q_NODE_LABELS],
        .compute = compute, .ncompute = (size_t)compute_count(c),
        .mem_limit = limit_q >= 0 ? &m[limit_q] : NULL};
    /* label precedence needs each label series' first appearance
     * across chunks: read (and later record) it in the database */
    struct gl_matrix *labels[] = {&m[Q_POD_LABELS], &m[Q_NS_LABELS], &m[Q_NODE_LABELS]};
    for (size_t i = 0; s && !rc && i < 3; i++)
        rc = label_history(w->cluster, s, labels[i], false, err);
    if (w->nparts + 2 > w->capparts) {
        w->capparts = w->capparts ? 2 * w->capparts : 4;
        w->parts = gl_xrealloc(w->parts, w->capparts * sizeof *w->parts);
    }
    if (u->srv) {
        struct gl_rollup *sr = &w->parts[w->nparts++];
        memset(sr, 0, sizeof *sr);
        if (!rc)
            rc = gl_srv_integrate(&u->j->sv, &m[Q_POD_LABELS], &m[Q_NS_LABELS],
                                  &m[Q_NODE_LABELS], &u->alloc_plain, sr, err);
        /* one point per hour: no per-step peak to keep (advise counts
         * these pod-hours as without peak data) */
        gl_peaks_free(&sr->peaks);
        for (size_t h = 0; !rc && h < sr->nhours; h++)
            stats->samples += sr->samples_per_hour[h];
    }
    struct gl_rollup *r = &w->parts[w->nparts++];
    memset(r, 0, sizeof *r);
    if (!rc)
        rc = gl_integrate(c, &in, r, err);
    if (!rc && stats->notes)
        note_findings(c, r, stats->notes);
    if (!rc && stats->notes && u->srv)
        note_findings(c, &w->parts[w->nparts - 2], stats->notes);
    if (!rc && s && u->last_shard)
        rc = store_range(c, w->cluster, s, w->parts, w->nparts, w->x.nq, &w->counts,
                         stats->advance_watermark, stats->allow_shrink, labels, 3, err);
    /* every query's samples of the stored hours (kept queries once) */
    for (size_t k = 0; !rc && s && u->last_shard && k < w->counts.nhours * Q_MAX; k++)
        stats->query_samples += w->counts.samples[k];
    stats->copy_warnings += (int64_t)r->copy_warnings;
    for (size_t h = 0; !rc && h < r->nhours; h++)
        stats->samples += r->samples_per_hour[h];
    stats->bad_samples += (int64_t)m[Q_MEMORY].bad_samples;
    if (rc || u->last_shard)
        parts_free(w->parts, &w->nparts);
    return rc;
}

/* Frees the unit's own matrices (and, after the last shard, the kept). */
static void unit_free(struct walk *w, struct unit *u)
{
    u->m[Q_ALLOCATION].nseries = u->alloc_n;
    gl_matrix_free(&u->alloc_plain);
    for (int q = 0; q < w->x.nq; q++)
        if (!u->borrowed[q])
            gl_matrix_free(&u->m[q]);
    if (u->last_shard)
        walk_kept_free(w);
}

/* A stored range: counted, with the progress line on a terminal. */
static void unit_stored(struct walk *w, const struct unit *u)
{
    struct gl_collect_stats *stats = w->stats;
    stats->chunks++;
    stats->hours += (u->ce - u->cs) / 3600;
    if (w->progress) {
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double el = (double)(t1.tv_sec - w->t0.tv_sec) + (double)(t1.tv_nsec - w->t0.tv_nsec) / 1e9;
        double rate = el > 0 ? (double)stats->samples / el : 0;
        double eta = el / (double)stats->chunks * (double)(w->nchunks - stats->chunks);
        fprintf(stderr, "\r%s: %lld/%lld chunks, %.0f samples/s, ETA %.0fs   ", w->cluster->name,
                (long long)stats->chunks, (long long)w->nchunks, rate, eta);
        if (stats->chunks == w->nchunks)
            fputc('\n', stderr);
    }
    char ts[32];
    gl_time_format(u->cs, ts, sizeof ts);
    gl_log(GL_LOG_DEBUG, "chunk stored start=%s hours=%lld shards=%d", ts,
           (long long)((u->ce - u->cs) / 3600), u->shards);
}

/* One turn of the walk: waits for the current job, splits its unit when
 * it was too large, else starts the next and integrates (and stores) it. */
static enum gl_status walk_step(struct walk *w, struct gl_error *err)
{
    struct fetch_job *j = &w->jobs[w->cur];
    enum gl_status rc;
    job_wait(j);
    if (j->rc == GL_ERR_TOO_LARGE) {
        parts_free(w->parts, &w->nparts);
        const int64_t cs = j->cs;
        if ((rc = split_unit(&w->x, j, &w->hours, &w->nshards, err)))
            return rc;
        w->nchunks = w->stats->chunks + (w->to - cs + w->hours * 3600 - 1) / (w->hours * 3600);
        job_start(&w->x, j);
        return GL_OK;
    }
    if (j->rc) {
        *err = j->err;
        return j->rc;
    }
    struct unit *u = gl_xcalloc(1, sizeof *u); /* large: off the stack */
    unit_take(w, j, u);
    rc = walk_next(w, u, err);
    if (!rc)
        rc = unit_check(w, u, err);
    if (!rc)
        unit_count(w, u);
    if (!rc)
        rc = unit_integrate(w, u, err);
    unit_free(w, u);
    if (!rc && u->last_shard)
        unit_stored(w, u);
    free(u);
    return rc;
}

/* Sets w up: the queries, the client, the backend's kind, the units of
 * work, and the first unit started. */
static enum gl_status walk_begin(struct walk *w, struct gl_error *err)
{
    const struct gl_config *c = w->c;
    const struct gl_cluster *cluster = w->cluster;
    w->x = (struct collector){.c = c, .cluster = cluster, .nq = query_count(c)};
    for (int k = 0; k < 2; k++)
        plan_free(&w->jobs[k].plan);
    enum gl_status rc = GL_OK;
    for (int q = 0; q < w->x.nq && !rc; q++)
        rc = gl_config_query(c, cluster, query_name(c, q), &w->x.queries[q], err);
    if (!rc)
        rc = gl_prom_new(&cluster->prom, &w->x.prom, err);
    if (!rc && c->server_mode)
        rc = server_backend(cluster, w->x.prom, w->from, &w->x.metricsql, err);
    /* units of work first: a refused counter value stores nothing (side.h) */
    if (!rc)
        rc = gl_side_collect(GL_SIDE_BEFORE_USAGE, c, cluster, w->s, w->from, w->to, err);
    w->hours = c->chunk_hours;
    w->nshards = 1;
    if (!rc) { /* the unit the window starts with (plan.h) */
        const struct gl_plan_in in = {.c = c, .cluster = cluster, .s = w->s,
                                      .prom = w->x.prom, .queries = w->x.queries,
                                      .nq = w->x.nq, .from = w->from, .to = w->to};
        gl_plan_window(&in, &w->hours, &w->nshards);
    }
    w->nchunks = (w->to - w->from + w->hours * 3600 - 1) / (w->hours * 3600);
    w->progress = w->s && isatty(STDERR_FILENO) && gl_log_threshold >= GL_LOG_INFO &&
                  w->nchunks > 1;
    clock_gettime(CLOCK_MONOTONIC, &w->t0);
    for (int k = 0; k < 2; k++) {
        w->jobs[k].prom = w->x.prom;
        w->jobs[k].metricsql = w->x.metricsql;
        w->jobs[k].nq = w->x.nq;
        w->jobs[k].step = c->step;
        w->jobs[k].cs = w->to; /* idle */
    }
    const int64_t first_end = w->from + w->hours * 3600;
    if (!rc && !(rc = job_prepare(&w->x, &w->jobs[0], w->from,
                                  first_end < w->to ? first_end : w->to, 0, w->nshards, NULL,
                                  err)))
        job_start(&w->x, &w->jobs[0]);
    return rc;
}

static void walk_end(struct walk *w)
{
    parts_free(w->parts, &w->nparts);
    free(w->parts);
    counts_free(&w->counts);
    walk_kept_free(w);
    for (int k = 0; k < 2; k++) {
        job_wait(&w->jobs[k]); /* a prefetch may run when a chunk failed */
        for (int q = 0; q < Q_MAX; q++)
            gl_matrix_free(&w->jobs[k].qs[q].m);
        job_clear(&w->jobs[k]);
    }
    gl_prom_free(w->x.prom);
    for (int q = 0; q < w->x.nq; q++)
        free(w->x.queries[q]);
}

enum gl_status gl_collect(const struct gl_config *c, const struct gl_cluster *cluster,
                          struct gl_store *s, int64_t from, int64_t to,
                          struct gl_collect_stats *stats, struct gl_error *err)
{
    struct gl_intern *notes = stats->notes;
    bool advance = stats->advance_watermark;
    /* --allow-shrink, or run.allow_shrink for run (which advances the
     * watermark): replace hours even with clearly less data */
    const bool allow_shrink = stats->allow_shrink || (advance && c->run_allow_shrink);
    memset(stats, 0, sizeof *stats);
    stats->notes = notes;
    stats->advance_watermark = advance;
    stats->allow_shrink = allow_shrink;
    from = gl_floor_to(from, 3600);
    to = gl_floor_to(to + 3599, 3600);
    if (to <= from)
        return gl_error_set(err, GL_ERR_USAGE, "empty window: --to must be after --from");
    struct walk *w = gl_xcalloc(1, sizeof *w); /* two jobs' parse state: off the stack */
    w->c = c;
    w->cluster = cluster;
    w->s = s;
    w->stats = stats;
    w->from = from;
    w->to = to;
    enum gl_status rc = walk_begin(w, err);
    while (!rc && w->jobs[w->cur].cs < to)
        rc = walk_step(w, err);
    if (!rc)
        rc = gl_side_collect(GL_SIDE_AFTER_USAGE, c, cluster, s, from, to, err); /* side.h */
    /* the advice's days before the window, built once each (store_peakday.h);
     * optional (an unbuilt day reads from its hourly rows, exactly), so a
     * failure there never fails the hours already committed */
    if (!rc && s) {
        struct gl_error berr = {0};
        if (gl_store_build_peak_days(s, cluster->name, from, NULL, &berr))
            gl_log(GL_LOG_WARN, "advice days not built cluster=%s: %s (read hourly)",
                   cluster->name, berr.msg);
    }
    if (!rc)
        gl_log(GL_LOG_INFO, "collect transfer cluster=%s mode=%s bytes=%lld", cluster->name,
               c->server_mode ? "server" : "raw", (long long)stats->bytes);
    walk_end(w);
    free(w);
    return rc;
}
