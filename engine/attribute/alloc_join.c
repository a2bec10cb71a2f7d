/*
 * alloc_join — requests × phase of Running pods, joined in the engine
 * (docs/specification.md "Inputs": requests of Running pods).
 *
 * Three passes, as the backend evaluated the joined query: the pods'
 * phase per step (join_phase), the requests summed per group
 * (join_groups), then each group's Running series and Pending series
 * (join_emit), bounded as the parser bounds a matrix.
 */
#include "alloc_join.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeutil.h"
#include "util.h"

/* A length-prefixed key of labels (absent = empty, as in PromQL), so no
 * value can run into the next. */
static void join_key(struct gl_buf *b, const struct gl_series *s, const char *const *names,
                     size_t n)
{
    gl_buf_reset(b);
    for (size_t i = 0; i < n; i++) {
        const char *v = names[i] ? gl_series_label(s, names[i]) : NULL;
        gl_buf_put_field(b, v);
    }
}

struct join_group {
    const struct gl_series *first; /* its labels */
    int32_t pod;                   /* key in the phase table, -1 when absent */
    double *values;
};

/* The joined query's labels: the pod's, and the group's. */
struct join_names {
    const char *pod[3];
    const char *group[5];
};

static int name_cmp(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* phase (or NULL) adds the label phase="<phase>" (the Pending series). */
static const char *join_value(const struct gl_series *first, const char *name, const char *phase)
{
    return phase && strcmp(name, "phase") == 0 ? phase : gl_series_label(first, name);
}

/* The output series of a group: its non-empty grouping labels, sorted by
 * name, in one allocation (packed as parse.c packs them). */
static void join_labels(struct gl_series *out, const struct gl_series *first,
                        const char *const *names, size_t n, const char *phase)
{
    const char *sorted[9];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool dup = false;
        for (size_t j = 0; j < k; j++)
            dup |= strcmp(sorted[j], names[i]) == 0;
        if (!dup && gl_series_label(first, names[i]))
            sorted[k++] = names[i];
    }
    if (phase)
        sorted[k++] = "phase";
    qsort(sorted, k, sizeof *sorted, name_cmp);
    size_t size = k * sizeof(struct gl_label);
    for (size_t i = 0; i < k; i++)
        size += strlen(sorted[i]) + strlen(join_value(first, sorted[i], phase)) + 2;
    out->nlabels = k;
    out->labels = k ? gl_xcalloc(1, size) : NULL;
    char *p = (char *)(out->labels + k);
    for (size_t i = 0; i < k; i++) {
        const char *v = join_value(first, sorted[i], phase);
        size_t nl = strlen(sorted[i]) + 1, vl = strlen(v) + 1;
        out->labels[i].name = memcpy(p, sorted[i], nl);
        out->labels[i].value = memcpy(p + nl, v, vl);
        p += nl + vl;
    }
}

static void join_skip(struct gl_matrix *m, const struct gl_series *s, size_t t, double x,
                      enum gl_skip why)
{
    size_t k = m->bad_samples++;
    m->skipped[why]++;
    if (k >= sizeof m->bad / sizeof *m->bad)
        return;
    char when[40], desc[200];
    gl_time_format(m->start + (int64_t)t * m->step, when, sizeof when);
    size_t len = 0;
    desc[0] = '\0';
    for (size_t i = 0; i < s->nlabels && len < sizeof desc; i++)
        len += (size_t)snprintf(desc + len, sizeof desc - len, "%s%s=\"%s\"", i ? "," : "",
                                s->labels[i].name, s->labels[i].value);
    snprintf(m->bad[k], sizeof m->bad[k], "%s: value \"%.17g\" at %s on the joined {%s}",
             gl_skip_names[why], x, when, desc);
}

/* The id in t of series s's key of labels names; -1 for a series without
 * samples. Out of memory aborts (as gl_xcalloc does): no series is ever
 * left out of the join. */
static int32_t join_id(struct gl_buf *key, const struct gl_series *s, const char *const *names,
                       size_t n, struct gl_intern *t)
{
    if (!s->values || s->first_step < 0)
        return -1;
    join_key(key, s, names, n);
    int32_t id = gl_intern_get(t, key->data);
    if (id < 0) {
        fputs("gpuledger: out of memory\n", stderr);
        abort();
    }
    return id;
}

/* max by (cluster, namespace, pod) (phase == 1): per pod of pods (its key)
 * and step, bit 1 where Running (a series phase="Running", or without a
 * phase label as a custom query may return) and bit 2 where Pending (which
 * goes out as series of its own labelled phase="Pending"). Free it. */
static unsigned char *join_phase(const struct gl_matrix *phase, const struct join_names *jn,
                                 struct gl_intern *pods, struct gl_buf *key)
{
    const size_t nsteps = phase->nsteps;
    unsigned char *running = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < phase->nseries; i++) {
        const struct gl_series *s = &phase->series[i];
        int32_t sid = join_id(key, s, jn->pod, 3, pods);
        if (sid < 0)
            continue;
        size_t id = (size_t)sid;
        if (id >= cap) {
            size_t ncap = cap ? 2 * cap : 64;
            while (ncap <= id)
                ncap *= 2;
            running = gl_xrealloc(running, ncap * nsteps + 1);
            memset(running + cap * nsteps, 0, (ncap - cap) * nsteps);
            cap = ncap;
        }
        const char *ph = gl_series_label(s, "phase");
        unsigned char bit = !ph || strcmp(ph, "Running") == 0 ? 1
                          : strcmp(ph, "Pending") == 0       ? 2
                                                             : 0;
        for (size_t t = (size_t)s->first_step; t < nsteps; t++)
            if (s->values[t] == 1.0)
                running[id * nsteps + t] |= bit;
    }
    return running;
}

/* sum by (cluster, namespace, pod, node, resource) (requests): the groups
 * in first-seen order (*ng of them), each with its pod's key in pods. */
static struct join_group *join_groups(const struct gl_matrix *requests,
                                      const struct join_names *jn, struct gl_intern *pods,
                                      struct gl_buf *key, size_t *ng_out)
{
    const size_t nsteps = requests->nsteps;
    struct gl_intern *gids = gl_intern_new();
    struct join_group *g = NULL;
    size_t ng = 0, gcap = 0;
    for (size_t i = 0; i < requests->nseries; i++) {
        int32_t gid = join_id(key, &requests->series[i], jn->group, 5, gids);
        if (gid < 0)
            continue;
        const struct gl_series *s = &requests->series[i];
        size_t id = (size_t)gid;
        if (id == ng) {
            if (ng == gcap) {
                gcap = gcap ? 2 * gcap : 64;
                g = gl_xrealloc(g, gcap * sizeof *g);
            }
            g[ng].first = s;
            g[ng].values = gl_xcalloc(nsteps, sizeof *g[ng].values);
            for (size_t t = 0; t < nsteps; t++)
                g[ng].values[t] = NAN;
            join_key(key, s, jn->pod, 3);
            g[ng].pod = gl_intern_find(pods, key->data);
            ng++;
        }
        double *v = g[id].values;
        for (size_t t = (size_t)s->first_step; t < nsteps; t++)
            if (!isnan(s->values[t]))
                v[t] = isnan(v[t]) ? s->values[t] : v[t] + s->values[t];
    }
    gl_intern_free(gids);
    *ng_out = ng;
    return g;
}

/* The allocation bound on the joined sum at t, as the parser applies it
 * to a series: NaN/Inf, negative or over max is skipped (NaN in o, counted
 * in out); false then. */
static bool join_bound(struct gl_matrix *out, struct gl_series *o, size_t t, double max)
{
    double x = o->values[t];
    int why = !isfinite(x) ? GL_SKIP_NAN_INF
            : x < 0        ? GL_SKIP_NEGATIVE
            : x > max      ? GL_SKIP_OUT_OF_BOUNDS
                           : -1;
    if (why < 0)
        return true;
    join_skip(out, o, t, x, (enum gl_skip)why);
    o->values[t] = NAN;
    return false;
}

/* * on (cluster, namespace, pod) group_left (): group g's series kept where
 * Running, or (pend) the second series of the group where Pending and not
 * Running, appended to out when it has a sample. The Running series copies
 * g's values; the Pending one, which comes second, takes them over. */
static void join_emit(struct gl_matrix *out, struct join_group *g, const unsigned char *run,
                      bool pend, const struct join_names *jn, double max)
{
    const size_t nsteps = out->nsteps;
    struct gl_series *o = &out->series[out->nseries];
    if (pend) {
        bool any = false;
        for (size_t t = 0; run && t < nsteps && !any; t++)
            any = run[t] == 2 && !isnan(g->values[t]);
        if (!any) {
            free(g->values);
            return;
        }
    }
    join_labels(o, g->first, jn->group, 5, pend ? "Pending" : NULL);
    o->values = pend ? g->values : gl_xcalloc(nsteps + 1, sizeof *o->values);
    if (!pend)
        memcpy(o->values, g->values, nsteps * sizeof *o->values);
    o->first_step = -1;
    o->first_seen = -1;
    for (size_t t = 0; t < nsteps; t++) {
        double x = o->values[t];
        if (isnan(x))
            continue;
        if (!run || (pend ? run[t] != 2 : !(run[t] & 1))) {
            o->values[t] = NAN;
            continue;
        }
        if (!join_bound(out, o, t, max))
            continue;
        if (o->first_step < 0) {
            o->first_step = (int64_t)t;
            o->first_seen = out->start + (int64_t)t * out->step;
        }
        out->samples++;
    }
    if (o->first_step < 0) { /* never Running (Pending) in the chunk: no series */
        free(o->labels);
        free(o->values);
        memset(o, 0, sizeof *o);
        return;
    }
    out->nseries++;
}

enum gl_status gl_allocation_join(const struct gl_config *c, const struct gl_matrix *requests,
                                  const struct gl_matrix *phase, double max,
                                  struct gl_matrix *out, struct gl_error *err)
{
    memset(out, 0, sizeof *out);
    if (requests->nsteps != phase->nsteps || requests->start != phase->start ||
        requests->step != phase->step)
        return gl_error_set(err, GL_ERR_RUNTIME,
                            "allocation join: the requests and phase grids differ");
    const size_t nsteps = requests->nsteps;
    const struct join_names jn = {
        .pod = {c->cluster_label, "namespace", "pod"},
        .group = {c->cluster_label, "namespace", "pod", "node", "resource"},
    };
    struct gl_buf key;
    gl_buf_init(&key);
    struct gl_intern *pods = gl_intern_new();
    unsigned char *running = join_phase(phase, &jn, pods, &key);
    size_t ng;
    struct join_group *g = join_groups(requests, &jn, pods, &key, &ng);
    out->start = requests->start;
    out->step = requests->step;
    out->nsteps = nsteps;
    out->series = gl_xcalloc(2 * ng + 1, sizeof *out->series);
    for (size_t gi = 0; gi < 2 * ng; gi++) {
        struct join_group *gr = &g[gi / 2];
        const unsigned char *run = gr->pod >= 0 ? running + (size_t)gr->pod * nsteps : NULL;
        join_emit(out, gr, run, gi % 2, &jn, max);
    }
    qsort(out->series, out->nseries, sizeof *out->series, gl_series_cmp);
    free(g);
    free(running);
    gl_intern_free(pods);
    gl_buf_free(&key);
    return GL_OK;
}
