/* server — plain node-hours from hourly backend figures (server.h). */
#include "server.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mig.h"
#include "money.h"
#include "timeutil.h"

enum fig_kind {
    F_G,     /* packed check: Σ (1 + 1000·nonzero + 10^6·skipped) per aggregate series */
    F_R,     /* Σ llround(value) (compute: Σ llround(busy × 10^6)) */
    F_N,     /* samples of a lower-preference compute query's aggregate */
    F_KC,    /* changes of USED + FREE per device */
    F_HC,    /* per host: Σ over raw series (1 + 2^20 × samples) */
    F_PROBE, /* count_over_time(vector(1)[S]): the subquery alignment */
    F_U,     /* per device: Σ 1000^(sign(device USED - Σ pods) + 1) */
    F_SK,    /* per host: raw samples the parse would skip (NaN, negative, out of bounds) */
};

#define SV_NAME "gl_srv_metric_name"
#define UTIL_NAME "DCGM_FI_DEV_GPU_UTIL"

static void oom(void)
{
    fputs("gpuledger: out of memory\n", stderr);
    abort();
}

/* "<length>:<str>", the keys' unambiguous parts (util.h, no printf) */
static void key_part(struct gl_buf *b, const char *str)
{
    if (!gl_buf_put_field(b, str))
        oom();
}

static void add_label(struct gl_buf *b, const char *name)
{
    if (!name || !name[0])
        return;
    /* a name listed once: ", name," not yet in ", list," */
    struct gl_buf probe;
    gl_buf_init(&probe);
    gl_buf_printf(&probe, ", %s,", name);
    struct gl_buf hay;
    gl_buf_init(&hay);
    gl_buf_printf(&hay, ", %s,", b->data ? b->data : "");
    bool have = strstr(hay.data, probe.data) != NULL;
    gl_buf_free(&probe);
    gl_buf_free(&hay);
    if (!have && !gl_buf_printf(b, "%s%s", b->len ? ", " : "", name))
        oom();
}

/* The device labels the engine reads (integrate.c device_of); with dra,
 * the DRA labels integrate.c reads of a claim too (name, namespace,
 * driver, MIG profile), so that a plain host's hourly series still name
 * the claim the per-step integration places on its device. */
static void device_labels(const struct gl_config *c, struct gl_buf *b, bool dra)
{
    add_label(b, c->cluster_label);
    for (int k = 0; k < GL_MQ_COUNT; k++) {
        add_label(b, c->mq[k].uuid_label);
        add_label(b, c->mq[k].gpu_i_id_label);
        add_label(b, c->mq[k].hostname_label);
    }
    add_label(b, "UUID");
    add_label(b, "GPU_I_ID");
    add_label(b, "hostname");
    add_label(b, "Hostname");
    add_label(b, c->hostname_label);
    add_label(b, "modelName");
    add_label(b, "GPU_I_PROFILE");
    if (c->dra_enabled && dra) {
        add_label(b, c->dra_claim_name_label);
        add_label(b, c->dra_claim_namespace_label);
        add_label(b, c->dra_driver_label);
        add_label(b, c->dra_mig_profile_label);
    }
}

static void identity_labels(const struct gl_config *c, struct gl_buf *b);

static void pair_labels(const struct gl_config *c, struct gl_buf *b)
{
    device_labels(c, b, true);
    identity_labels(c, b);
}

static void identity_labels(const struct gl_config *c, struct gl_buf *b)
{
    add_label(b, c->namespace_label);
    add_label(b, c->pod_label);
    struct gl_buf e;
    gl_buf_init(&e);
    gl_buf_printf(&e, "exported_%s", c->namespace_label);
    add_label(b, e.data);
    gl_buf_reset(&e);
    gl_buf_printf(&e, "exported_%s", c->pod_label);
    add_label(b, e.data);
    gl_buf_free(&e);
}

static void push_fig(struct gl_srv_unit *u, int kind, int q, struct gl_buf *text)
{
    u->fig_text = gl_xrealloc(u->fig_text, (u->nfig + 1) * sizeof *u->fig_text);
    u->fig_kind = gl_xrealloc(u->fig_kind, (u->nfig + 1) * sizeof *u->fig_kind);
    u->fig_q = gl_xrealloc(u->fig_q, (u->nfig + 1) * sizeof *u->fig_q);
    u->fig_text[u->nfig] = text->data;
    u->fig_kind[u->nfig] = kind;
    u->fig_q[u->nfig] = q;
    u->nfig++;
    gl_buf_init(text);
}

static int first_compute(const struct gl_srv_unit *u)
{
    for (int q = 0; q < u->nq; q++)
        if (u->role[q] == GL_SRV_COMPUTE)
            return q;
    return -1;
}

static int role_q(const struct gl_srv_unit *u, enum gl_srv_role r)
{
    for (int q = 0; q < u->nq; q++)
        if (u->role[q] == r)
            return q;
    return -1;
}

/* The parse bound of a memory query (collect.c query_opts). */
static double mem_bound(const struct gl_config *c, enum gl_mq mq)
{
    return c->mq[mq].unit == GL_UNIT_BYTES ? 1099511627776.0 : 1048576.0;
}

const char *gl_srv_changes(const struct gl_srv_unit *u)
{
    return u->metricsql ? "changes_prometheus" : "changes";
}

/* Query q's raw series as one selection (all: every sample; the compute
 * series keep their metric name in SV_NAME, as the _over_time functions
 * drop __name__) and the samples of it the parse keeps (valid: parse.c's
 * bounds, GPU_UTIL's 100 by that name). */
static void raw_selections(const struct gl_srv_unit *u, int q, struct gl_buf *all,
                           struct gl_buf *valid)
{
    const struct gl_config *c = u->c;
    const enum gl_srv_role r = u->role[q];
    /* the compute series the parse bounds by 100 (GPU_UTIL, in %), else 1 */
    const char *U = "label_replace(vector(1), \"" SV_NAME "\", \"" UTIL_NAME "\", \"\", \"\")";
    if (r == GL_SRV_COMPUTE) {
        gl_buf_printf(all,
                      "label_replace((\n%s\n), \"" SV_NAME "\", \"$1\", \"__name__\", \"(.+)\")",
                      u->queries[q]);
        gl_buf_printf(valid,
                      "((((%s) and on (" SV_NAME ") %s) >= 0 <= 100) or (((%s) unless on (" SV_NAME
                      ") %s) >= 0 <= 1))",
                      all->data, U, all->data, U);
        return;
    }
    gl_buf_printf(all, "(\n%s\n)", u->queries[q]);
    gl_buf_printf(valid, "(%s >= 0 <= %.17g)", all->data,
                  mem_bound(c, r == GL_SRV_MEMORY ? GL_MQ_MEMORY
                               : r == GL_SRV_FREE ? GL_MQ_FREE
                                                  : GL_MQ_RESERVED));
}

/* Per host, the raw series and their valid samples (F_HC), and the samples
 * the parse would skip (F_SK): a host with any in an hour is raw for it, so
 * that server mode counts and logs them by reason as raw mode does. */
static void raw_counts(struct gl_srv_unit *u, int q, const char *sub)
{
    const char *H = u->c->hostname_label;
    struct gl_buf all, valid, t;
    gl_buf_init(&all);
    gl_buf_init(&valid);
    gl_buf_init(&t);
    raw_selections(u, q, &all, &valid);
    gl_buf_printf(&t, "sum by (%s) (1 + 1048576 * count_over_time(%s%s))", H, valid.data, sub);
    push_fig(u, F_HC, q, &t);
    /* all - valid, or all where no sample is valid (the difference has no
     * series for such a host) */
    gl_buf_printf(&t,
                  "(sum by (%s) (count_over_time((%s)%s)) - sum by (%s) (count_over_time(%s%s))) "
                  "or sum by (%s) (count_over_time((%s)%s))",
                  H, all.data, sub, H, valid.data, sub, H, all.data, sub);
    push_fig(u, F_SK, q, &t);
    gl_buf_free(&all);
    gl_buf_free(&valid);
    gl_buf_free(&t);
}

void gl_srv_figures(struct gl_srv_unit *u)
{
    const struct gl_config *c = u->c;
    struct gl_buf dl, dk, pl, sub, a, f, t;
    struct gl_buf *bufs[] = {&dl, &dk, &pl, &sub, &a, &f, &t};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        gl_buf_init(bufs[i]);
    device_labels(c, &dl, true);
    /* the device alone: in per-process mode a claim labels the pod's series
     * only, and the per-device checks set the pods' sum against the device
     * series */
    device_labels(c, &dk, false);
    pair_labels(c, &pl);
    /* the hour's step instants: (T - 3600 + step/2, T] whether the range is
     * closed at its start (Prometheus 2) or open (Prometheus 3) */
    gl_buf_printf(&sub, "[%lldms:%llds]", (long long)(3600000 - u->step * 500),
                  (long long)u->step);
    const int c0 = first_compute(u);
    for (int q = 0; q < u->nq; q++) {
        enum gl_srv_role r = u->role[q];
        if (r == GL_SRV_OTHER)
            continue;
        const char *Q = u->queries[q];
        raw_counts(u, q, sub.data);
        gl_buf_reset(&a);
        gl_buf_reset(&f);
        if (r == GL_SRV_COMPUTE && q != c0) {
            gl_buf_printf(&t, "count_over_time((max by (%s) ((\n%s\n)))%s)", dl.data, Q,
                          sub.data);
            push_fig(u, F_N, q, &t);
            continue;
        }
        if (r == GL_SRV_MEMORY)
            gl_buf_printf(&a, "max by (%s) ((\n%s\n))", pl.data, Q);
        else if (r == GL_SRV_COMPUTE)
            gl_buf_printf(&a,
                          "max by (%s, " SV_NAME ") (label_replace((\n%s\n), \"" SV_NAME
                          "\", \"$1\", \"__name__\", \"(.+)\"))",
                          dl.data, Q);
        else
            gl_buf_printf(&a, "max by (%s) ((\n%s\n))", dl.data, Q);
        /* the samples the parse keeps (a GPU_UTIL aggregate is never plain);
         * compute: busy × 10^6 as the engine computes it for a ratio */
        if (r == GL_SRV_COMPUTE)
            gl_buf_printf(&f, "((%s >= 0 <= 1) * 1000000)", a.data);
        else
            gl_buf_printf(&f, "(%s >= 0 <= %.17g)", a.data,
                          mem_bound(c, r == GL_SRV_MEMORY ? GL_MQ_MEMORY
                                       : r == GL_SRV_FREE ? GL_MQ_FREE
                                                          : GL_MQ_RESERVED));
        /* samples + 1000 × samples >= 0.5 (llround >= 1) */
        gl_buf_printf(&t, "sum_over_time((1 + 1000 * (%s >= bool 0.5))%s)", f.data, sub.data);
        if (r == GL_SRV_RESERVED) /* + 10^9 × changes inside the hour */
            gl_buf_printf(&t, " + 1000000000 * %s((%s)%s)", gl_srv_changes(u), a.data, sub.data);
        push_fig(u, F_G, q, &t);
        /* Σ floor(v + 0.5): llround(v) but for v = 0.5 - 2^-54 (gl_srv_decide) */
        gl_buf_printf(&t, "sum_over_time(round(%s)%s)", f.data, sub.data);
        push_fig(u, F_R, q, &t);
    }
    int mq_ = role_q(u, GL_SRV_MEMORY), fq = role_q(u, GL_SRV_FREE);
    if (mq_ >= 0 && fq >= 0) {
        /* the device's USED as the engine takes it: its device series, else
         * the pods' sum (process) or max (device); + FREE */
        struct gl_buf il, am, dt, pods;
        gl_buf_init(&il);
        gl_buf_init(&am);
        gl_buf_init(&dt);
        gl_buf_init(&pods);
        identity_labels(c, &il);
        gl_buf_printf(&am, "max by (%s) ((\n%s\n))", pl.data, u->queries[mq_]);
        gl_buf_printf(&dt, "round(%s and on (%s) vector(1))", am.data, il.data);
        gl_buf_printf(&pods, "round(%s unless on (%s) vector(1))", am.data, il.data);
        const char *agg = c->attribution == GL_ATTR_DEVICE ? "max" : "sum";
        gl_buf_printf(&t,
                      "%s(((max by (%s) (%s) or %s by (%s) (%s)) + round(max by (%s) ((\n%s\n))))%s)",
                      gl_srv_changes(u), dk.data, dt.data, agg, dk.data, pods.data, dk.data,
                      u->queries[fq], sub.data);
        push_fig(u, F_KC, -1, &t);
        if (c->attribution == GL_ATTR_PROCESS) {
            /* unattributed = device series - the pods' sum: its sign per step */
            gl_buf_printf(&t,
                          "sum_over_time((1000 ^ (clamp(max by (%s) (%s) - sum by (%s) (%s), -1, "
                          "1) + 1))%s)",
                          dk.data, dt.data, dk.data, pods.data, sub.data);
            push_fig(u, F_U, -1, &t);
        }
        gl_buf_free(&il);
        gl_buf_free(&am);
        gl_buf_free(&dt);
        gl_buf_free(&pods);
    }
    gl_buf_printf(&t, "count_over_time(vector(1)%s)", sub.data);
    push_fig(u, F_PROBE, -1, &t);
    gl_buf_printf(&t, "sum_over_time(timestamp(vector(1))%s)", sub.data);
    push_fig(u, F_PROBE, -2, &t);
    /* the changes function counts exactly the changes between the hour's
     * steps: one between each two (not one more from before the window, as
     * MetricsQL's changes does) */
    gl_buf_printf(&t, "%s(timestamp(vector(1))%s)", gl_srv_changes(u), sub.data);
    push_fig(u, F_PROBE, -3, &t);
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        gl_buf_free(bufs[i]);
}

/* ---- planning ---- */

struct sdev {
    int32_t host;       /* in u->hosts */
    bool mig;
    int32_t model;      /* in strings, -1 none */
    int32_t profile;    /* GPU_I_PROFILE (strings), -1 none */
    /* per hour */
    unsigned char *mem, *devtot, *nz_pairs, *free_, *free_nz, *res, *kc_ok, *c0, *c0_ok, *ck,
        *u_ok,
        *seen,   /* memory or FB_FREE figures in the hour (the log's device-hours) */
        *claim;  /* a pod's memory series names a DRA claim of the GPU driver */
};

/* A pod on a host in one hour: its devices with memory and its requests. */
struct ph {
    int32_t pod, host, hour;
    int32_t ndev, ndev_mig;   /* whole GPUs / MIG instances with memory > 0 */
    int32_t dev_prof;         /* their MIG profile (strings), -1 none, -2 several */
    int64_t units, mig_units; /* requested whole GPUs / MIG instances */
    int32_t mig_prof;         /* the requested MIG profile, -1 none, -2 several */
    bool alloc;
    bool claim;               /* holds a device by a DRA claim */
    int32_t unclaimed;        /* its memory series on devices it holds by no claim */
};

struct plan {
    struct gl_srv_unit *u;
    struct gl_intern *devkeys, *strings, *podkeys;
    struct sdev *devs;
    size_t ndevs;
    unsigned char **bad; /* per host: per hour, not plain */
    size_t nbad;
    /* (pod, host, hour) → devices with non-zero memory; alloc whole units */
    struct gl_intern *phkeys;
    struct ph *ph;
    size_t nph;
    struct gl_intern *pairkeys; /* (device, pod, hour) of a pod's memory aggregate */
    /* gl_srv_decide's inputs */
    const struct gl_range_query *figs;
    const struct gl_matrix *m, *joined;
};

static unsigned char *hours_new(size_t n)
{
    return gl_xcalloc(n + 1, 1);
}

/* Host h is not plain at hour `hour` (-1: any hour of the unit). */
static void hour_bad(struct plan *p, int32_t h, long hour, const char *fmt, const char *what)
{
    if (h < 0)
        return;
    const size_t nh = p->u->nhours;
    if ((size_t)h >= p->nbad) {
        size_t n = (size_t)h + 64;
        p->bad = gl_xrealloc(p->bad, n * sizeof *p->bad);
        for (size_t i = p->nbad; i < n; i++)
            p->bad[i] = hours_new(nh);
        p->nbad = n;
    }
    bool was = true;
    for (size_t k = 0; k < nh; k++)
        if (hour < 0 || (size_t)hour == k) {
            was &= p->bad[h][k] != 0;
            p->bad[h][k] = 1;
        }
    if (was)
        return;
    char ts[32];
    gl_time_format(p->u->cs + (hour < 0 ? 0 : hour * 3600), ts, sizeof ts);
    gl_log(GL_LOG_DEBUG, "server mode %s=%s host=%s raw: %s %s", hour < 0 ? "chunk" : "hour", ts,
           gl_intern_str(p->u->hosts, h), fmt, what ? what : "");
    if (!p->u->why[0])
        snprintf(p->u->why, sizeof p->u->why, "host %.80s%s%s: %s %.100s",
                 gl_intern_str(p->u->hosts, h), hour < 0 ? "" : " hour ", hour < 0 ? "" : ts, fmt,
                 what ? what : "");
}

static void host_bad(struct plan *p, int32_t h, const char *fmt, const char *what)
{
    hour_bad(p, h, -1, fmt, what);
}

static bool is_bad(const struct plan *p, int32_t h, size_t hour)
{
    return h < 0 || ((size_t)h < p->nbad && p->bad[h][hour]);
}

static int32_t host_of(struct plan *p, const struct gl_series *s, const char *label)
{
    const char *h = gl_series_label(s, label);
    if (!h || !h[0])
        return -1;
    return gl_intern_get(p->u->hosts, h);
}

static const char *uuid_of(const struct gl_config *c, const struct gl_series *s,
                           const char **gid)
{
    /* the labels of every schema are the same in the supported setups
     * (gl_srv_decide checks); the memory schema names them */
    const struct gl_query_schema *qs = &c->mq[GL_MQ_MEMORY];
    const char *uuid = gl_series_label(s, qs->uuid_label);
    if (!uuid && strcmp(qs->uuid_label, "UUID") != 0)
        uuid = gl_series_label(s, "UUID");
    *gid = gl_series_label(s, qs->gpu_i_id_label);
    if (!*gid && strcmp(qs->gpu_i_id_label, "GPU_I_ID") != 0)
        *gid = gl_series_label(s, "GPU_I_ID");
    return uuid;
}

/* The device of an aggregate series (created on first sight), -1 without
 * a UUID; marks its host bad when it is on two hosts. */
static int32_t sdev_of(struct plan *p, const struct gl_series *s, int32_t host)
{
    const struct gl_config *c = p->u->c;
    const char *gid, *uuid = uuid_of(c, s, &gid);
    if (!uuid)
        return -1;
    const char *cl = p->u->cluster->name_from_label ? gl_series_label(s, c->cluster_label) : NULL;
    struct gl_buf k;
    gl_buf_init(&k);
    key_part(&k, cl ? cl : "");
    key_part(&k, uuid);
    key_part(&k, gid ? gid : "");
    int32_t id = gl_intern_get(p->devkeys, k.data);
    gl_buf_free(&k);
    if ((size_t)id >= p->ndevs) {
        p->devs = gl_xrealloc(p->devs, ((size_t)id + 1) * sizeof *p->devs);
        struct sdev *d = &p->devs[id];
        memset(d, 0, sizeof *d);
        size_t n = p->u->nhours;
        d->host = host;
        d->mig = gid != NULL;
        d->model = -1;
        const char *prof = gl_series_label(s, "GPU_I_PROFILE");
        d->profile = prof ? gl_intern_get(p->strings, prof) : -1;
        if (d->mig && !prof)
            host_bad(p, host, "a MIG instance without GPU_I_PROFILE", uuid);
        unsigned char **a[] = {&d->mem, &d->devtot, &d->nz_pairs, &d->free_, &d->free_nz,
                               &d->res, &d->kc_ok, &d->c0, &d->c0_ok, &d->ck, &d->u_ok,
                               &d->seen, &d->claim};
        for (size_t i = 0; i < sizeof a / sizeof *a; i++)
            *a[i] = hours_new(n);
        p->ndevs = (size_t)id + 1;
    }
    struct sdev *d = &p->devs[id];
    if (d->host != host) {
        host_bad(p, d->host, "a device on two hosts:", uuid);
        host_bad(p, host, "a device on two hosts:", uuid);
    }
    const char *model = gl_series_label(s, "modelName");
    if (!model)
        host_bad(p, host, "a series without modelName of", uuid);
    else if (d->model < 0)
        d->model = gl_intern_get(p->strings, model);
    else if (strcmp(gl_intern_str(p->strings, d->model), model) != 0)
        host_bad(p, host, "two models on device", uuid);
    return id;
}

/* The engine's workload identity of a series (integrate.c identity). */
static bool srv_identity(const struct gl_config *c, const struct gl_series *s, const char **ns,
                         const char **pod)
{
    char en[256], ep[256];
    snprintf(en, sizeof en, "exported_%s", c->namespace_label);
    snprintf(ep, sizeof ep, "exported_%s", c->pod_label);
    const char *ens = gl_series_label(s, en), *epod = gl_series_label(s, ep);
    const char *pns = gl_series_label(s, c->namespace_label), *ppod = gl_series_label(s, c->pod_label);
    switch (c->identity) {
    case GL_IDENTITY_EXPORTED:
        *ns = ens, *pod = epod;
        break;
    case GL_IDENTITY_PLAIN:
        *ns = pns, *pod = ppod;
        break;
    default:
        *ns = epod ? ens : pns;
        *pod = epod ? epod : ppod;
    }
    return *ns && *pod;
}

static int32_t ph_of(struct plan *p, int32_t pod, int32_t host, size_t h)
{
    char k[64];
    snprintf(k, sizeof k, "%d/%d/%zu", pod, host, h);
    int32_t id = gl_intern_get(p->phkeys, k);
    if ((size_t)id >= p->nph) {
        p->ph = gl_xrealloc(p->ph, ((size_t)id + 1) * sizeof *p->ph);
        p->ph[id] = (struct ph){.pod = pod, .host = host, .hour = (int32_t)h, .dev_prof = -1,
                                .mig_prof = -1};
        p->nph = (size_t)id + 1;
    }
    return id;
}

/* The key of a MIG instance profile on a host at an hour. */
struct mig_key_text {
    char k[48];
};

static struct mig_key_text mig_key(int32_t host, int32_t profile, size_t hour)
{
    struct mig_key_text t;
    snprintf(t.k, sizeof t.k, "%d/%d/%zu", host, profile, hour);
    return t;
}

static int32_t pod_key(struct plan *p, const char *ns, const char *pod)
{
    struct gl_buf k;
    gl_buf_init(&k);
    key_part(&k, ns);
    key_part(&k, pod);
    int32_t id = gl_intern_get(p->podkeys, k.data);
    gl_buf_free(&k);
    return id;
}

/* A series that names part of a workload identity (integrate.c takes it
 * for a device series; the figures' device-series selection would not). */
static bool partial_identity(const struct gl_config *c, const struct gl_series *s)
{
    char en[256], ep[256];
    snprintf(en, sizeof en, "exported_%s", c->namespace_label);
    snprintf(ep, sizeof ep, "exported_%s", c->pod_label);
    const char *names[] = {c->namespace_label, c->pod_label, en, ep};
    for (size_t i = 0; i < 4; i++) {
        const char *v = gl_series_label(s, names[i]);
        if (v && v[0])
            return true;
    }
    return false;
}

/* A pod's series naming a claim of the GPU driver (integrate.c
 * series_claim: another driver's claim, or none, allocates nothing). */
static bool srv_claim(const struct gl_config *c, const struct gl_series *s)
{
    if (!c->dra_enabled || !gl_series_label(s, c->dra_claim_name_label))
        return false;
    const char *driver = gl_series_label(s, c->dra_driver_label);
    return !driver || strcmp(driver, c->dra_driver) == 0;
}

/* An exact non-negative integer below 2^53 held by a double. */
static bool exact_int(double v, int64_t *out)
{
    if (!(v >= 0 && v < 9007199254740992.0) || v != floor(v))
        return false;
    *out = (int64_t)v;
    return true;
}

/* The figure of kind k and query q, or NULL. */
static const struct gl_matrix *fig(const struct gl_srv_unit *u, const struct gl_range_query *f,
                                   int kind, int q)
{
    for (size_t i = 0; i < u->nfig; i++)
        if (u->fig_kind[i] == kind && u->fig_q[i] == q)
            return f[i].rc == GL_OK ? &f[i].m : NULL;
    return NULL;
}

static void series_key(struct gl_buf *b, const struct gl_series *s)
{
    gl_buf_reset(b);
    for (size_t i = 0; i < s->nlabels; i++) {
        key_part(b, s->labels[i].name);
        key_part(b, s->labels[i].value);
    }
}

/* Σ figures of g's series, by label set, from r (same labels): -1 absent. */
static double *sums_for(const struct gl_matrix *g, const struct gl_matrix *r)
{
    struct gl_intern *keys = gl_intern_new();
    struct gl_buf k;
    gl_buf_init(&k);
    for (size_t i = 0; r && i < r->nseries; i++) {
        series_key(&k, &r->series[i]);
        gl_intern_get(keys, k.data ? k.data : "");
    }
    double *idx = gl_xcalloc(g->nseries + 1, sizeof *idx);
    for (size_t i = 0; i < g->nseries; i++) {
        series_key(&k, &g->series[i]);
        int32_t id = r ? gl_intern_find(keys, k.data ? k.data : "") : -1;
        idx[i] = id;
    }
    gl_buf_free(&k);
    gl_intern_free(keys);
    return idx;
}

static void synth_init(struct gl_matrix *m, int64_t cs, size_t nhours)
{
    memset(m, 0, sizeof *m);
    m->start = cs;
    m->step = 3600;
    m->nsteps = nhours;
}

/* o's labels: copies of s's (each name and value one allocation), without
 * __name__ when drop_name. */
static void copy_labels(struct gl_series *o, const struct gl_series *s, bool drop_name)
{
    o->labels = gl_xcalloc(s->nlabels + 1, sizeof *o->labels);
    o->nlabels = 0;
    for (size_t i = 0; i < s->nlabels; i++) {
        if (drop_name && strcmp(s->labels[i].name, SV_NAME) == 0)
            continue;
        size_t n = strlen(s->labels[i].name), v = strlen(s->labels[i].value);
        char *buf = gl_xcalloc(n + v + 2, 1);
        memcpy(buf, s->labels[i].name, n);
        memcpy(buf + n + 1, s->labels[i].value, v);
        o->labels[o->nlabels].name = buf;
        o->labels[o->nlabels++].value = buf + n + 1;
    }
}

static struct gl_series *synth_add(struct gl_matrix *m, const struct gl_series *s, bool drop_name)
{
    m->series = gl_xrealloc(m->series, (m->nseries + 1) * sizeof *m->series);
    struct gl_series *o = &m->series[m->nseries++];
    memset(o, 0, sizeof *o);
    o->values = gl_xcalloc(m->nsteps + 1, sizeof *o->values);
    for (size_t h = 0; h < m->nsteps; h++)
        o->values[h] = (double)NAN;
    o->first_step = -1;
    o->first_seen = -1;
    copy_labels(o, s, drop_name);
    return o;
}

/* Presence of series s constant inside hour `only` (-1: each of the nhours). */
static bool presence_constant(const struct gl_series *s, size_t per, size_t nhours, long only)
{
    for (size_t h = 0; h < nhours; h++) {
        if (only >= 0 && (size_t)only != h)
            continue;
        bool first = !isnan(s->values[h * per]);
        for (size_t t = h * per + 1; t < (h + 1) * per; t++)
            if (!isnan(s->values[t]) != first)
                return false;
    }
    return true;
}

/* s's value (or absence) the same at every step of hour h. */
static bool values_constant(const struct gl_series *s, size_t per, size_t h)
{
    double v = s->values[h * per];
    for (size_t t = h * per + 1; t < (h + 1) * per; t++)
        if (isnan(v) ? !isnan(s->values[t]) : s->values[t] != v)
            return false;
    return true;
}

/* The series' host in u->hosts, -1 none (looked up once per series: the
 * per-hour and per-step tests below are then an index). */
static int32_t srv_host(const struct gl_srv_unit *u, const struct gl_series *s, const char *label)
{
    const char *h = gl_series_label(s, label);
    return u->hosts && h && h[0] ? gl_intern_find(u->hosts, h) : -1;
}

static bool plain_host_at(const struct gl_srv_unit *u, int32_t id, size_t hour)
{
    return id >= 0 && u->ok && hour < u->nhours && u->ok[(size_t)id * u->nhours + hour];
}

/* ---- gl_srv_decide: the figures read into the plan, then the rules ----
 *
 * Each rule below marks the host-hours (or hosts) whose rows the sums
 * cannot give exactly as the per-step integration does, with the reason
 * (hour_bad: the first reason is u->why); those are fetched raw. They run
 * in the order of decide_steps, which is also the order of the reasons in
 * the debug log. */

/* A host-hour with raw samples the parse skips is raw: its skips are then
 * counted and logged by reason from the raw response, as in raw mode (the
 * sums would integrate the hour and say nothing of them). */
static void rule_skipped_samples(struct plan *p)
{
    const struct gl_srv_unit *u = p->u;
    for (int q = 0; q < u->nq; q++) {
        const struct gl_matrix *sk = fig(u, p->figs, F_SK, q);
        for (size_t i = 0; sk && i < sk->nseries; i++) {
            const struct gl_series *s = &sk->series[i];
            int32_t host = host_of(p, s, u->c->hostname_label);
            for (size_t h = 0; host >= 0 && h < u->nhours; h++)
                if (!isnan(s->values[h]) && s->values[h] != 0)
                    hour_bad(p, host, (long)h, "samples the parse skips in",
                             u->query_names[q]);
        }
    }
}

/* The hours where query q has skipped samples are fetched raw: F_HC counts
 * only valid samples, so a host whose samples were all skipped is not in it. */
static void skipped_raw_needed(struct gl_srv_unit *u, const struct gl_range_query *figs, int q)
{
    const struct gl_matrix *sk = fig(u, figs, F_SK, q);
    for (size_t i = 0; sk && i < sk->nseries; i++)
        for (size_t h = 0; h < u->nhours; h++)
            if (!isnan(sk->series[i].values[h]) && sk->series[i].values[h] != 0)
                u->raw_needed_h[(size_t)q * u->nhours + h] = 1;
}

/* What the configuration alone rules out: the sums are of the used-memory
 * basis, without a query whose registry row refuses server mode (a limit
 * or device query beside the memory source: queryreg.c), of MiB sources,
 * one device-label schema, at most 999 steps an hour (the packed figures'
 * fields), and FB_FREE beside the memory. */
static const char *config_refusal(const struct gl_srv_unit *u)
{
    const struct gl_config *c = u->c;
    if (c->basis->srv_refusal) /* the basis' own rule (basis.h) */
        return c->basis->srv_refusal;
    for (int i = 0; i < GL_Q_COUNT; i++) { /* the registry's srv_refusal */
        const struct gl_qrow *r = gl_qr_row((enum gl_qid)i);
        if (r->srv_refusal && gl_qr_count(c, r))
            return r->srv_refusal;
    }
    for (int k = 0; k < GL_MQ_COUNT; k++) {
        if (k != GL_MQ_LIMIT && c->mq[k].unit == GL_UNIT_BYTES)
            return "a bytes source";
        if (strcmp(c->mq[k].uuid_label, c->mq[GL_MQ_MEMORY].uuid_label) != 0 ||
            strcmp(c->mq[k].gpu_i_id_label, c->mq[GL_MQ_MEMORY].gpu_i_id_label) != 0 ||
            strcmp(c->mq[k].hostname_label, c->hostname_label) != 0)
            return "exporter schemas with other device labels";
    }
    if (3600 / u->step >= 1000)
        return "a step under 4 s";
    if (role_q(u, GL_SRV_MEMORY) < 0 || role_q(u, GL_SRV_FREE) < 0)
        return "no FB_FREE query";
    return NULL;
}

/* What rules out every host of the unit: the configuration, a figure
 * query that failed, or a device series without
 * collection.hostname_label (dcgm-exporter's hostname beside Hostname):
 * the engine takes its host from the other label (integrate.c device_of),
 * the plan could not, so nothing of the unit comes from the figures. */
static const char *unit_refusal(const struct gl_srv_unit *u, const struct gl_range_query *figs)
{
    const char *why = config_refusal(u);
    for (size_t i = 0; !why && i < u->nfig; i++)
        if (figs[i].rc != GL_OK)
            why = "a figure query failed";
    for (size_t i = 0; !why && i < u->nfig; i++) {
        if (u->fig_kind[i] != F_HC)
            continue;
        for (size_t k = 0; !why && k < figs[i].m.nseries; k++) {
            const char *h = gl_series_label(&figs[i].m.series[k], u->c->hostname_label);
            if (!h || !h[0])
                why = "device series without collection.hostname_label";
        }
    }
    return why;
}

/* Fails the unit (GL_ERR_PROM) when the backend's subqueries do not hold
 * exactly the hour's step instants T, T - step, ..., T - 3600 + step, or
 * its changes() does not count one change between each two of them:
 * every figure is read on that grid (VictoriaMetrics aligns otherwise). */
static enum gl_status backend_aligned(const struct gl_srv_unit *u,
                                      const struct gl_range_query *figs, struct gl_error *err)
{
    const size_t per = (size_t)(3600 / u->step);
    const struct gl_matrix *probe = fig(u, figs, F_PROBE, -1), *tsum = fig(u, figs, F_PROBE, -2),
                           *chg = fig(u, figs, F_PROBE, -3);
    for (size_t h = 0; h < u->nhours; h++) {
        double v = probe && probe->nseries == 1 ? probe->series[0].values[h] : (double)NAN;
        double ts = tsum && tsum->nseries == 1 ? tsum->series[0].values[h] : (double)NAN;
        double ch = chg && chg->nseries == 1 ? chg->series[0].values[h] : (double)NAN;
        int64_t T = u->cs + (int64_t)h * 3600 + 3600 - u->step;
        double want = (double)((int64_t)per * T - u->step * (int64_t)per * ((int64_t)per - 1) / 2);
        char tstr[32];
        gl_time_format(u->cs + (int64_t)h * 3600, tstr, sizeof tstr);
        if (v != (double)per || ts != want)
            return gl_error_set(
                err, GL_ERR_PROM,
                "%s: collection.mode \"server\": the backend's subquery "
                "count_over_time(vector(1)[3600s-step/2:step]) for the hour %s gave %g samples "
                "at instants summing to %.17g where Prometheus gives %zu at the hour's step "
                "instants (%.17g): its subquery alignment differs (VictoriaMetrics?); server "
                "mode needs Prometheus-aligned subqueries: use collection.mode \"raw\"",
                u->cluster->prom.url, tstr, v, ts, per, want);
        if (ch != (double)(per - 1))
            return gl_error_set(
                err, GL_ERR_PROM,
                "%s: collection.mode \"server\": the backend's %s(timestamp(vector(1))"
                "[3600s-step/2:step]) for the hour %s gave %g where Prometheus's changes gives "
                "%zu (one between each two of the hour's steps): server mode finds what is "
                "constant in an hour by it: use collection.mode \"raw\"",
                u->cluster->prom.url, gl_srv_changes(u), tstr, ch, per - 1);
    }
    return GL_OK;
}

/* Every host with raw series, in the order of the per-host counts (plain
 * hosts' counts are stored, the others' fetched raw). */
static void read_hosts(struct plan *p)
{
    const struct gl_srv_unit *u = p->u;
    for (size_t i = 0; i < u->nfig; i++) {
        if (u->fig_kind[i] != F_HC)
            continue;
        for (size_t k = 0; k < p->figs[i].m.nseries; k++)
            (void)host_of(p, &p->figs[i].m.series[k], u->c->hostname_label);
    }
}

/* A lower-preference compute query: only where it has samples (a device
 * busy by it and not by the first query is raw's to take). */
static void read_lower_compute(struct plan *p, int q)
{
    const struct gl_matrix *n = fig(p->u, p->figs, F_N, q);
    for (size_t i = 0; n && i < n->nseries; i++) {
        const struct gl_series *s = &n->series[i];
        int32_t host = host_of(p, s, p->u->c->hostname_label);
        int32_t d = sdev_of(p, s, host);
        for (size_t h = 0; d >= 0 && h < p->u->nhours; h++)
            if (!isnan(s->values[h]))
                p->devs[d].ck[h] = 1;
    }
}

/* One aggregate series of a memory, FB_FREE, FB_RESERVED or first compute
 * query, as read by read_aggregate. */
struct agg {
    enum gl_srv_role r;
    int32_t host, d;
    bool pair;  /* a pod's memory aggregate (pk its pod) */
    bool claim; /* ... naming a DRA claim of the GPU driver */
    int32_t pk;
    bool util;  /* a compute aggregate of GPU_UTIL (never plain) */
};

/* A pod's memory aggregate at hour h (whole at every step, nz: non-zero):
 * two series of one pod on a device are refused (raw takes the max of the
 * two per step, the sums cannot); the pod's devices with memory and its
 * claims are counted for the request rules. */
static void memory_pair_hour(struct plan *p, const struct agg *a, size_t h, int64_t nz)
{
    struct sdev *dv = &p->devs[a->d];
    dv->mem[h]++;
    char k[64];
    snprintf(k, sizeof k, "%d:%d:%zu", (int)a->d, (int)a->pk, h);
    int32_t before = gl_intern_count(p->pairkeys);
    if (gl_intern_get(p->pairkeys, k) < before)
        hour_bad(p, a->host, (long)h, "two memory series of one pod on a device", NULL);
    const int32_t xi = ph_of(p, a->pk, a->host, h); /* (may move p->ph) */
    struct ph *x = &p->ph[xi];
    if (nz) {
        dv->nz_pairs[h]++;
        if (dv->mig) {
            x->ndev_mig++;
            x->dev_prof = x->dev_prof == -1 || x->dev_prof == dv->profile ? dv->profile : -2;
        } else {
            x->ndev++;
        }
    }
    if (a->claim) {
        dv->claim[h] = 1;
        x->claim = true;
    } else {
        x->unclaimed++;
    }
}

/* An aggregate's hour from its packed check G and rounded sum R: refuses
 * a figure that is not an exact integer, FB_RESERVED changing inside the
 * hour, and a series with a gap, skipped samples or a value zero at some
 * steps only (the sum of llround per step is then not the hour's figure);
 * a device with two device-level aggregates of one query. */
static void aggregate_hour(struct plan *p, const struct agg *a, size_t h, double gv, double rv)
{
    struct sdev *dv = &p->devs[a->d];
    const int64_t per = 3600 / p->u->step;
    if (a->r == GL_SRV_MEMORY || a->r == GL_SRV_FREE)
        dv->seen[h] = 1; /* (a raw hour too when a check below fails) */
    int64_t G, R;
    if (!exact_int(gv, &G) || !exact_int(rv, &R)) {
        hour_bad(p, a->host, (long)h, "a figure that is not an exact integer", NULL);
        return;
    }
    if (a->r == GL_SRV_RESERVED) {
        if (G / 1000000000)
            hour_bad(p, a->host, (long)h, "FB_RESERVED changing inside an hour", NULL);
        G %= 1000000000;
    }
    int64_t cnt = G % 1000, nz = G / 1000 % 1000, skipped = G / 1000000;
    /* round() is floor(v + 0.5): llround but at v = 0.5 - 2^-54,
     * which only an hour with no sample >= 0.5 can hold */
    if (nz == 0 && R != 0)
        skipped = 1;
    if (a->r == GL_SRV_COMPUTE) {
        /* only the hours where a pod has memory on it need it (rule_device_hours) */
        bool ok = cnt == per && !skipped && (nz == 0 || nz == cnt) && !a->util &&
                  llround(((double)R / 1e6) * 1e6) == R;
        dv->c0_ok[h] = !dv->c0[h] && ok;
        dv->c0[h] = 1;
        return;
    }
    if (cnt != per || skipped || (nz != 0 && nz != cnt)) {
        hour_bad(p, a->host, (long)h,
                 cnt != per  ? "a series with a gap inside an hour"
                 : skipped   ? "samples the parse skips"
                             : "a value that is zero at some steps only",
                 NULL);
        return;
    }
    if (a->r == GL_SRV_MEMORY && a->pair) {
        memory_pair_hour(p, a, h, nz);
    } else if (a->r == GL_SRV_MEMORY) {
        if (dv->devtot[h])
            hour_bad(p, a->host, (long)h, "two device series", NULL);
        dv->devtot[h] = 1;
    } else if (a->r == GL_SRV_FREE) {
        if (dv->free_[h])
            hour_bad(p, a->host, (long)h, "two FB_FREE aggregates of a device", NULL);
        dv->free_[h] = 1;
        dv->free_nz[h] = nz != 0;
    } else if (a->r == GL_SRV_RESERVED) {
        if (dv->res[h])
            hour_bad(p, a->host, (long)h, "two FB_RESERVED aggregates of a device", NULL);
        dv->res[h] = 1;
    }
}

/* The aggregate series s of query q (role r): refuses a series without a
 * device UUID, a memory series with part of a pod identity (integrate.c
 * takes it for a device series, the figures would not) and a DRA claim on
 * a MIG instance (its GPU share, g/7 of a step, is floored per step: the
 * hour's is not the floor of the hour's product). */
static void read_aggregate_series(struct plan *p, enum gl_srv_role r, const struct gl_series *s,
                                  const struct gl_series *sr)
{
    const struct gl_config *c = p->u->c;
    struct agg a = {.r = r, .pk = -1};
    a.host = host_of(p, s, c->hostname_label);
    if (a.host < 0)
        return; /* raw (no host label) */
    a.d = sdev_of(p, s, a.host);
    if (a.d < 0) {
        host_bad(p, a.host, "a series without a device UUID", NULL);
        return;
    }
    const char *ns = NULL, *pod = NULL;
    a.pair = r == GL_SRV_MEMORY && srv_identity(c, s, &ns, &pod);
    if (r == GL_SRV_MEMORY && !a.pair && partial_identity(c, s))
        host_bad(p, a.host, "a memory series with part of a pod identity", NULL);
    a.pk = a.pair ? pod_key(p, ns, pod) : -1;
    a.claim = a.pair && srv_claim(c, s);
    if (a.claim && p->devs[a.d].mig)
        host_bad(p, a.host, "a DRA claim on a MIG instance:", gl_series_label(s, "UUID"));
    const char *nm = gl_series_label(s, SV_NAME);
    a.util = nm && strcmp(nm, UTIL_NAME) == 0;
    for (size_t h = 0; h < p->u->nhours; h++)
        if (!isnan(s->values[h]))
            aggregate_hour(p, &a, h, s->values[h], sr ? sr->values[h] : (double)NAN);
}

/* The aggregates of memory, FB_FREE, FB_RESERVED and compute, query by
 * query. */
static void read_aggregates(struct plan *p)
{
    const struct gl_srv_unit *u = p->u;
    const int c0 = first_compute(u);
    for (int q = 0; q < u->nq; q++) {
        enum gl_srv_role r = u->role[q];
        if (r == GL_SRV_OTHER)
            continue;
        if (r == GL_SRV_COMPUTE && q != c0) {
            read_lower_compute(p, q);
            continue;
        }
        const struct gl_matrix *g = fig(u, p->figs, F_G, q), *rs = fig(u, p->figs, F_R, q);
        if (!g)
            continue;
        double *idx = sums_for(g, rs);
        for (size_t i = 0; i < g->nseries; i++)
            read_aggregate_series(p, r, &g->series[i],
                                  idx[i] >= 0 ? &rs->series[(size_t)idx[i]] : NULL);
        free(idx);
    }
}

/* The hours where a device's USED + FREE and RESERVED did not change. */
static void read_used_changes(struct plan *p)
{
    const struct gl_matrix *kc = fig(p->u, p->figs, F_KC, -1);
    for (size_t i = 0; kc && i < kc->nseries; i++) {
        const struct gl_series *s = &kc->series[i];
        int32_t host = host_of(p, s, p->u->c->hostname_label);
        int32_t d = host >= 0 ? sdev_of(p, s, host) : -1;
        for (size_t h = 0; d >= 0 && h < p->u->nhours; h++)
            if (s->values[h] == 0)
                p->devs[d].kc_ok[h] = 1;
    }
}

/* The hours where a device series' USED is below the pods' sum at no step
 * and equal to it at every step or above it at every step (per process). */
static void read_used_split(struct plan *p)
{
    const int64_t per = 3600 / p->u->step;
    const struct gl_matrix *uf = fig(p->u, p->figs, F_U, -1);
    for (size_t i = 0; uf && i < uf->nseries; i++) {
        const struct gl_series *s = &uf->series[i];
        int32_t host = host_of(p, s, p->u->c->hostname_label);
        int32_t d = host >= 0 ? sdev_of(p, s, host) : -1;
        for (size_t h = 0; d >= 0 && h < p->u->nhours; h++) {
            int64_t v;
            if (!exact_int(s->values[h], &v))
                continue;
            /* steps with USED below, equal to and above the pods' sum */
            int64_t below = v % 1000, equal = v / 1000 % 1000, above = v / 1000000;
            p->devs[d].u_ok[h] = below == 0 && (equal == per || above == per);
        }
    }
}

/* Refuses a host with GPUs of two models: the pods' allocation cells are
 * one per node only with one model. */
static void rule_one_model(struct plan *p)
{
    const struct gl_srv_unit *u = p->u;
    int32_t *hmodel = gl_xcalloc((size_t)gl_intern_count(u->hosts) + 1, sizeof *hmodel);
    for (int32_t i = 0; i < gl_intern_count(u->hosts); i++)
        hmodel[i] = -1;
    for (size_t d = 0; d < p->ndevs; d++) {
        const struct sdev *dv = &p->devs[d];
        if (dv->host < 0 || dv->model < 0)
            continue;
        if (hmodel[dv->host] >= 0 && hmodel[dv->host] != dv->model)
            host_bad(p, dv->host, "GPUs of two models", NULL);
        hmodel[dv->host] = dv->model;
    }
    free(hmodel);
}

/* One device-hour with memory figures: it is linear in the sums (README
 * "Server-side collection") only with USED and FREE, pods' series under
 * a device series split one way at every step, one pod on a DRA-claimed
 * device (a shared claim is split per step by largest remainder), one pod
 * on a device in device-copy attribution, USED + FREE and RESERVED
 * constant, and a busy figure the engine takes whole. */
static void device_hour_rules(struct plan *p, const struct sdev *dv, size_t h)
{
    const enum gl_attribution attr = p->u->c->attribution;
    if (!(dv->mem[h] || dv->devtot[h]) || !dv->free_[h])
        hour_bad(p, dv->host, (long)h, "a device without FB_USED or FB_FREE in an hour", NULL);
    if (dv->devtot[h] && dv->mem[h] && !dv->u_ok[h])
        hour_bad(p, dv->host, (long)h,
                 "pod series next to a device series, not below it at every step or "
                 "equal at every step",
                 NULL);
    if (dv->claim[h] && dv->mem[h] > 1)
        hour_bad(p, dv->host, (long)h, "a DRA-claimed device with more than one pod", NULL);
    if (attr == GL_ATTR_DEVICE && dv->mem[h] > 1)
        hour_bad(p, dv->host, (long)h, "device-copy pods sharing a device", NULL);
    if (!dv->kc_ok[h])
        hour_bad(p, dv->host, (long)h, "USED + FREE or RESERVED changing inside an hour", NULL);
    if (dv->nz_pairs[h] && (dv->c0[h] ? !dv->c0_ok[h] : dv->ck[h] != 0))
        hour_bad(p, dv->host, (long)h, "a busy figure the engine cannot take whole", NULL);
}

/* Refuses, per device: a whole GPU's allocation.model_capacity_mib (an
 * override the figures do not carry); per device-hour: compute without
 * memory metrics, and device_hour_rules. */
static void rule_device_hours(struct plan *p)
{
    const struct gl_config *c = p->u->c;
    for (size_t d = 0; d < p->ndevs; d++) {
        const struct sdev *dv = &p->devs[d];
        const char *model = dv->model >= 0 ? gl_intern_str(p->strings, dv->model) : "";
        if (!dv->mig && gl_kv_find(c->model_capacity, c->nmodel_capacity, model))
            host_bad(p, dv->host, "allocation.model_capacity_mib for", model);
        for (size_t h = 0; h < p->u->nhours; h++) {
            if (dv->mem[h] || dv->devtot[h] || dv->free_[h])
                device_hour_rules(p, dv, h);
            else if (dv->c0[h] || dv->ck[h])
                hour_bad(p, dv->host, (long)h, "a device with compute and no memory metrics",
                         NULL);
        }
    }
}

/* The measured MIG instances: (host, profile, hour) of an instance with
 * memory and free memory (one lookup per request instead of a scan of the
 * devices). */
static struct gl_intern *measured_instances(const struct plan *p)
{
    struct gl_intern *measured = gl_intern_new();
    for (size_t d = 0; d < p->ndevs; d++) {
        const struct sdev *dv = &p->devs[d];
        for (size_t h = 0; dv->mig && h < p->u->nhours; h++)
            if ((dv->mem[h] || dv->devtot[h]) && dv->free_nz[h])
                (void)gl_intern_get(measured, mig_key(dv->host, dv->profile, h).k);
    }
    return measured;
}

/* One allocation series (a Running pod's request of resource res on a
 * host): refuses an allocation changing inside an hour, requests summed
 * beyond the 64-bit range (integrate.c takes a request from 9·10^18 as
 * beyond it and fails the chunk: the hour is raw's to refuse) and a MIG
 * request without a measured instance of its profile on the node (its
 * size is that instance's). */
static void allocation_series(struct plan *p, const struct gl_series *s, int32_t host,
                              const char *res, int32_t prof, const struct gl_intern *measured)
{
    const size_t per = (size_t)(3600 / p->u->step);
    const bool mig = prof >= 0;
    int32_t pk = pod_key(p, gl_series_label(s, "namespace"), gl_series_label(s, "pod"));
    for (size_t h = 0; h < p->u->nhours; h++) {
        if (!values_constant(s, per, h)) {
            hour_bad(p, host, (long)h, "an allocation changing inside an hour", NULL);
            continue;
        }
        double v = s->values[h * per];
        /* llround of v >= 2^63 is unspecified: the range check below first */
        if (isnan(v) || v <= 0 || (v < 9.0e18 && llround(v) <= 0))
            continue;
        const int32_t xi = ph_of(p, pk, host, h); /* (may move p->ph) */
        struct ph *x = &p->ph[xi];
        x->alloc = true;
        int64_t *units = mig ? &x->mig_units : &x->units;
        if (!(v < 9.0e18) || __builtin_add_overflow(*units, (int64_t)llround(v), units)) {
            hour_bad(p, host, (long)h, "GPU requests beyond the 64-bit range:", res);
            continue;
        }
        if (!mig)
            continue;
        x->mig_prof = x->mig_prof == -1 || x->mig_prof == prof ? prof : -2;
        if (gl_intern_find(measured, mig_key(host, prof, h).k) < 0)
            hour_bad(p, host, (long)h, "a MIG request without a measured instance:", res);
    }
}

/* The allocation on each node, per pod-hour, constant per hour; refuses a
 * MIG resource the engine reads as a whole GPU (a name gl_mig_resource,
 * attribution's reading, does not take). */
static void rule_allocation(struct plan *p)
{
    struct gl_intern *measured = measured_instances(p);
    struct gl_buf mp;
    gl_buf_init(&mp);
    for (size_t i = 0; p->joined && i < p->joined->nseries; i++) {
        const struct gl_series *s = &p->joined->series[i];
        int32_t host = host_of(p, s, "node");
        const char *ns = gl_series_label(s, "namespace"), *pod = gl_series_label(s, "pod");
        const char *res = gl_series_label(s, "resource");
        if (host < 0 || !ns || !pod || !res)
            continue;
        int64_t g = 0, gb = 0;
        bool mig = gl_mig_resource(res, &g, &gb, &mp);
        if (!mig && strncmp(res, "nvidia_com_mig_", 15) == 0)
            host_bad(p, host, "a MIG resource the engine reads as a whole GPU:", res);
        int32_t prof = mig ? gl_intern_get(p->strings, mp.data) : -1;
        allocation_series(p, s, host, res, prof, measured);
    }
    gl_buf_free(&mp);
    gl_intern_free(measured);
}

/* Refuses a pod-hour whose devices with memory are more than, or other
 * than, its requests (whole GPUs, or MIG instances of the requested
 * profile), and a DRA claim's pod with a GPU request or memory on another
 * device (its rows are its claims' only, one pod per claimed device). */
static void rule_requests(struct plan *p)
{
    for (size_t k = 0; k < p->nph; k++) {
        const struct ph *x = &p->ph[k];
        if (x->claim && (x->alloc || x->unclaimed))
            hour_bad(p, x->host, x->hour,
                     "a DRA claim's pod with a GPU request or memory on another device", NULL);
        if (!x->alloc || (!x->ndev && !x->ndev_mig))
            continue;
        bool ok = x->ndev_mig ? !x->ndev && !x->units && x->mig_prof >= 0 &&
                                    x->dev_prof == x->mig_prof && x->ndev_mig <= x->mig_units
                              : !x->mig_units && x->ndev <= x->units;
        if (!ok)
            hour_bad(p, x->host, x->hour,
                     "a pod with memory on more or other GPUs than it requested", NULL);
    }
}

/* Refuses a device-hour where a pod has memory and the device no free
 * memory: reserved-unused must stay above zero at every step for the
 * pod's memory to stay below its allocation. */
static void rule_free_memory(struct plan *p)
{
    for (size_t d = 0; d < p->ndevs; d++) {
        const struct sdev *dv = &p->devs[d];
        for (size_t h = 0; h < p->u->nhours; h++)
            if (dv->nz_pairs[h] && !dv->free_nz[h])
                hour_bad(p, dv->host, (long)h, "a pod's device with no free memory", NULL);
    }
}

/* Refuses a host with time-slicing replicas (configured, or the node's
 * label_nvidia_com_gpu_replicas): a replica's share is floored per step. */
static void rule_time_slicing(struct plan *p)
{
    const struct gl_srv_unit *u = p->u;
    const struct gl_config *c = u->c;
    for (int32_t h = 0; h < gl_intern_count(u->hosts); h++) {
        const struct gl_kv *kv = gl_kv_find(c->replicas, c->nreplicas, gl_intern_str(u->hosts, h));
        if (kv && kv->num > 1)
            host_bad(p, h, "time-slicing replicas", NULL);
    }
    const struct gl_matrix *nl = u->node_labels_q >= 0 ? &p->m[u->node_labels_q] : NULL;
    for (size_t i = 0; nl && i < nl->nseries; i++) {
        const struct gl_series *s = &nl->series[i];
        const char *v = gl_series_label(s, "label_nvidia_com_gpu_replicas");
        int32_t host = host_of(p, s, "node");
        if (v && strtoll(v, NULL, 10) > 1)
            host_bad(p, host, "time-slicing replicas", NULL);
    }
}

/* Refuses the pod-hours whose team inputs (pod labels, w = 0, or their
 * namespace's labels, w = 1) are present part of the hour only. */
static void team_label_rule(struct plan *p, const struct gl_matrix *lab, int w)
{
    const size_t per = (size_t)(3600 / p->u->step), nh = p->u->nhours;
    for (size_t i = 0; lab && i < lab->nseries; i++) {
        const struct gl_series *s = &lab->series[i];
        if (presence_constant(s, per, nh, -1))
            continue;
        const char *ns = gl_series_label(s, "namespace"), *pod = gl_series_label(s, "pod");
        for (size_t k = 0; ns && k < p->nph; k++) {
            const char *key = gl_intern_str(p->podkeys, p->ph[k].pod);
            char pre[512];
            if (w == 0 && pod)
                snprintf(pre, sizeof pre, "%zu:%s%zu:%s", strlen(ns), ns, strlen(pod), pod);
            else
                snprintf(pre, sizeof pre, "%zu:%s", strlen(ns), ns);
            if ((w == 0 ? strcmp(key, pre) == 0 : strncmp(key, pre, strlen(pre)) == 0) &&
                !presence_constant(s, per, nh, p->ph[k].hour))
                hour_bad(p, p->ph[k].host, p->ph[k].hour, "a team label changing inside an hour",
                         NULL);
        }
    }
}

static void rule_team_labels(struct plan *p)
{
    const struct gl_srv_unit *u = p->u;
    team_label_rule(p, u->pod_labels_q >= 0 ? &p->m[u->pod_labels_q] : NULL, 0);
    team_label_rule(p, u->ns_labels_q >= 0 ? &p->m[u->ns_labels_q] : NULL, 1);
}

/* The plain host-hours: not refused, and a host name the raw queries'
 * exclusion matcher can list (printable ASCII without '"' or '\'); the
 * device-hours each way for the log. */
static void mark_plain(struct plan *p)
{
    struct gl_srv_unit *u = p->u;
    const size_t nh = u->nhours;
    u->nhosts = (size_t)gl_intern_count(u->hosts);
    u->ok = gl_xcalloc(u->nhosts * nh + 1, 1);
    u->raw_needed_h = gl_xcalloc((size_t)GL_SRV_QMAX * nh + 1, 1);
    for (int32_t h = 0; h < (int32_t)u->nhosts; h++) {
        const char *name = gl_intern_str(u->hosts, h);
        bool listable = true;
        for (const char *x = name; *x; x++)
            if (*x < 0x20 || *x > 0x7e || *x == '"' || *x == '\\')
                listable = false;
        for (size_t k = 0; k < nh; k++)
            if (!is_bad(p, h, k) && listable) {
                u->ok[(size_t)h * nh + k] = 1;
                gl_intern_get(u->plain, name);
            }
    }
    for (size_t d = 0; d < p->ndevs; d++)
        for (size_t h = 0; h < nh; h++)
            if (p->devs[d].seen[h]) {
                if (p->devs[d].host < 0 || !u->ok[(size_t)p->devs[d].host * nh + h])
                    u->device_hours_raw++;
                else
                    u->device_hours_server++;
            }
}

/* The steps of gl_srv_decide, in order: the figures read into the plan
 * and the rules over it (each says what it refuses and why). */
static void (*const decide_steps[])(struct plan *) = {
    read_hosts,       rule_skipped_samples, read_aggregates,  read_used_changes,
    read_used_split,  rule_one_model,       rule_device_hours, rule_allocation,
    rule_requests,    rule_free_memory,     rule_time_slicing, rule_team_labels,
    mark_plain,
};

/* The plain hosts' series and sample counts of query q per hour (summed
 * over the hosts: *overflow is 1 + the hour that overflows), and the hours
 * whose series off the plain hosts are fetched raw. False when a count is
 * not an exact integer. */
static bool plain_counts(struct gl_srv_unit *u, const struct gl_range_query *figs, int q,
                         int *overflow)
{
    bool exact = true;
    const size_t nh = u->nhours;
    skipped_raw_needed(u, figs, q);
    const struct gl_matrix *hc = fig(u, figs, F_HC, q);
    for (size_t i = 0; hc && i < hc->nseries; i++) {
        const struct gl_series *s = &hc->series[i];
        const int32_t host = srv_host(u, s, u->c->hostname_label);
        for (size_t h = 0; h < nh; h++) {
            int64_t v;
            if (isnan(s->values[h]))
                continue;
            if (!plain_host_at(u, host, h)) {
                u->raw_needed_h[(size_t)q * nh + h] = 1;
                continue;
            }
            if (!exact_int(s->values[h], &v)) {
                exact = false;
                continue;
            }
            /* (each below 2^53; their sum over the hosts checked) */
            int64_t *ns = &u->pl_series[h * GL_SRV_QMAX + (size_t)q],
                    *nsm = &u->pl_samples[h * GL_SRV_QMAX + (size_t)q];
            if (__builtin_add_overflow(*ns, v % 1048576, ns) ||
                __builtin_add_overflow(*nsm, v / 1048576, nsm))
                *overflow = (int)h + 1;
        }
    }
    return exact;
}

/* u->synth[q]: the plain hosts' hourly sums of query q, one point per
 * hour (compute: the busy ratio's sum, × 10^6 in the figure). */
static void synth_sums(struct gl_srv_unit *u, const struct gl_range_query *figs, int q)
{
    const struct gl_matrix *g = fig(u, figs, F_G, q), *rs = fig(u, figs, F_R, q);
    if (!g)
        return;
    double *idx = sums_for(g, rs);
    for (size_t i = 0; i < g->nseries; i++) {
        const struct gl_series *s = &g->series[i];
        if (idx[i] < 0)
            continue;
        const struct gl_series *sr = &rs->series[(size_t)idx[i]];
        const int32_t host = srv_host(u, s, u->c->hostname_label);
        struct gl_series *o = NULL;
        for (size_t h = 0; h < u->nhours; h++) {
            if (isnan(s->values[h]) || !plain_host_at(u, host, h))
                continue;
            if (!o)
                o = synth_add(&u->synth[q], s, true);
            o->values[h] = u->role[q] == GL_SRV_COMPUTE ? sr->values[h] / 1e6 : sr->values[h];
            if (o->first_step < 0) {
                o->first_step = (int64_t)h;
                o->first_seen = u->cs + (int64_t)h * 3600;
            }
            u->synth[q].samples++;
        }
    }
    free(idx);
}

/* The plain host-hours' counts and one-point-per-hour matrices; fails on
 * count figures that are not exact integers or overflow (an implausible
 * backend). */
static enum gl_status build_synth(struct gl_srv_unit *u, const struct gl_range_query *figs,
                                  struct gl_error *err)
{
    const int c0 = first_compute(u);
    bool exact = true;
    int count_overflow = 0; /* 1 + the hour whose series counts overflow */
    for (int q = 0; q < u->nq; q++) {
        if (u->role[q] == GL_SRV_OTHER)
            continue;
        synth_init(&u->synth[q], u->cs, u->nhours);
        exact &= plain_counts(u, figs, q, &count_overflow);
        /* plain devices take their busy ratio from the first compute query */
        if (u->role[q] != GL_SRV_COMPUTE || q == c0)
            synth_sums(u, figs, q);
    }
    if (!exact)
        return gl_error_set(err, GL_ERR_PROM,
                            "server mode: a count figure is not an exact integer");
    if (count_overflow) {
        char ts[32];
        gl_time_format(u->cs + (int64_t)(count_overflow - 1) * 3600, ts, sizeof ts);
        return gl_error_set(err, GL_ERR_PROM,
                            "%s: server mode: the plain hosts' series or sample counts of the "
                            "hour %s exceed the 64-bit range (the backend's count figures are "
                            "implausible)",
                            u->cluster->prom.url, ts);
    }
    return GL_OK;
}

static void plan_free(struct plan *p)
{
    for (size_t d = 0; d < p->ndevs; d++) {
        struct sdev *dv = &p->devs[d];
        GL_FREE_EACH(dv->mem, dv->devtot, dv->nz_pairs, dv->free_, dv->free_nz, dv->res,
                     dv->kc_ok, dv->c0, dv->c0_ok, dv->ck, dv->u_ok, dv->seen, dv->claim);
    }
    for (size_t i = 0; i < p->nbad; i++)
        free(p->bad[i]);
    GL_FREE_EACH(p->devs, p->ph, p->bad);
    gl_intern_free(p->devkeys);
    gl_intern_free(p->strings);
    gl_intern_free(p->podkeys);
    gl_intern_free(p->phkeys);
    gl_intern_free(p->pairkeys);
}

enum gl_status gl_srv_decide(struct gl_srv_unit *u, const struct gl_range_query *figs,
                             const struct gl_matrix *m, const struct gl_matrix *joined,
                             struct gl_error *err)
{
    const size_t nh = u->nhours;
    u->hosts = gl_intern_new();
    u->plain = gl_intern_new();
    u->pl_series = gl_xcalloc(nh * GL_SRV_QMAX + 1, sizeof *u->pl_series);
    u->pl_samples = gl_xcalloc(nh * GL_SRV_QMAX + 1, sizeof *u->pl_samples);
    enum gl_status rc = backend_aligned(u, figs, err);
    if (rc)
        return rc;
    const char *why = unit_refusal(u, figs);
    if (why) {
        snprintf(u->why, sizeof u->why, "%s", why);
        return GL_OK;
    }
    u->enabled = true;
    struct plan p = {.u = u, .figs = figs, .m = m, .joined = joined};
    p.devkeys = gl_intern_new();
    p.strings = gl_intern_new();
    p.podkeys = gl_intern_new();
    p.phkeys = gl_intern_new();
    p.pairkeys = gl_intern_new();
    for (size_t i = 0; i < sizeof decide_steps / sizeof *decide_steps; i++)
        decide_steps[i](&p);
    rc = build_synth(u, figs, err);
    plan_free(&p);
    return rc;
}

enum gl_status gl_srv_raw_query(const struct gl_srv_unit *u, int q, size_t hour, char **out,
                                struct gl_error *err)
{
    struct gl_buf sel;
    gl_buf_init(&sel);
    if (u->cluster->selector[0])
        gl_buf_printf(&sel, "%s, ", u->cluster->selector);
    gl_buf_printf(&sel, "%s!~\"", u->c->hostname_label);
    bool first = true;
    for (size_t i = 0; i < u->nhosts; i++) {
        if (!u->ok[i * u->nhours + hour])
            continue;
        if (!first)
            gl_buf_puts(&sel, "|");
        first = false;
        for (const char *h = gl_intern_str(u->hosts, (int32_t)i); *h; h++) {
            if (strchr(".+*?()|[]{}^$", *h))
                gl_buf_puts(&sel, "\\\\"); /* one backslash in the regex */
            gl_buf_append(&sel, h, 1);
        }
    }
    gl_buf_puts(&sel, "\"");
    struct gl_cluster cl = *u->cluster;
    cl.selector = first ? u->cluster->selector : sel.data;
    enum gl_status rc = gl_config_query(u->c, &cl, u->query_names[q], out, err);
    gl_buf_free(&sel);
    return rc;
}

bool gl_srv_same_hours(const struct gl_srv_unit *u, size_t a, size_t b)
{
    for (size_t i = 0; i < u->nhosts; i++)
        if (u->ok[i * u->nhours + a] != u->ok[i * u->nhours + b])
            return false;
    return true;
}

static void first_of(struct gl_series *o, int64_t start, int64_t step, size_t nsteps)
{
    o->first_step = -1;
    for (size_t t = 0; t < nsteps; t++)
        if (!isnan(o->values[t])) {
            o->first_step = (int64_t)t;
            if (o->first_seen < 0)
                o->first_seen = start + (int64_t)t * step;
            return;
        }
}

void gl_srv_split(const struct gl_srv_unit *u, struct gl_matrix *m, const char *label,
                  struct gl_matrix *out)
{
    memset(out, 0, sizeof *out);
    out->start = m->start;
    out->step = m->step;
    out->nsteps = m->nsteps;
    out->series = gl_xcalloc(m->nseries + 1, sizeof *out->series);
    const size_t per = (size_t)(3600 / m->step);
    size_t k = 0;
    for (size_t i = 0; i < m->nseries; i++) {
        struct gl_series *s = &m->series[i];
        const int32_t host = srv_host(u, s, label);
        bool any_plain = false, any_raw = false;
        for (size_t t = 0; t < m->nsteps; t++)
            if (!isnan(s->values[t])) {
                if (plain_host_at(u, host, t / per))
                    any_plain = true;
                else
                    any_raw = true;
            }
        if (!any_plain) {
            m->series[k++] = *s;
            continue;
        }
        if (!any_raw) {
            out->series[out->nseries++] = *s;
            continue;
        }
        struct gl_series *o = &out->series[out->nseries++];
        memset(o, 0, sizeof *o);
        copy_labels(o, s, false);
        o->first_seen = s->first_seen;
        o->values = gl_xcalloc(m->nsteps + 1, sizeof *o->values);
        for (size_t t = 0; t < m->nsteps; t++) {
            bool pl = plain_host_at(u, host, t / per);
            o->values[t] = pl ? s->values[t] : (double)NAN;
            if (pl)
                s->values[t] = (double)NAN;
        }
        first_of(o, m->start, m->step, m->nsteps);
        first_of(s, m->start, m->step, m->nsteps);
        m->series[k++] = *s;
    }
    m->nseries = k;
}

void gl_srv_merge(struct gl_matrix *m, const struct gl_matrix *part)
{
    struct gl_intern *keys = gl_intern_new();
    struct gl_buf k;
    gl_buf_init(&k);
    for (size_t i = 0; i < m->nseries; i++) {
        series_key(&k, &m->series[i]);
        gl_intern_get(keys, k.data ? k.data : "");
    }
    const size_t off = (size_t)((part->start - m->start) / m->step);
    m->series = gl_xrealloc(m->series, (m->nseries + part->nseries + 1) * sizeof *m->series);
    for (size_t i = 0; i < part->nseries; i++) {
        const struct gl_series *s = &part->series[i];
        series_key(&k, s);
        int32_t id = gl_intern_get(keys, k.data ? k.data : "");
        if ((size_t)id == m->nseries) {
            struct gl_series *o = &m->series[m->nseries++];
            memset(o, 0, sizeof *o);
            copy_labels(o, s, false);
            o->first_seen = -1;
            o->values = gl_xcalloc(m->nsteps + 1, sizeof *o->values);
            for (size_t t = 0; t < m->nsteps; t++)
                o->values[t] = (double)NAN;
        }
        struct gl_series *o = &m->series[id];
        for (size_t t = 0; t < part->nsteps && off + t < m->nsteps; t++)
            if (!isnan(s->values[t]))
                o->values[off + t] = s->values[t];
        o->first_seen = -1;
        first_of(o, m->start, m->step, m->nsteps);
    }
    /* the first skipped samples described, as one response's parse keeps them */
    const size_t shown = sizeof m->bad / sizeof *m->bad;
    for (size_t i = 0, have = m->bad_samples < shown ? m->bad_samples : shown;
         i < part->bad_samples && i < shown && have < shown; i++, have++)
        memcpy(m->bad[have], part->bad[i], sizeof m->bad[have]);
    m->samples += part->samples;
    m->bad_samples += part->bad_samples;
    for (int w = 0; w < GL_SKIP_N; w++)
        m->skipped[w] += part->skipped[w];
    gl_buf_free(&k);
    gl_intern_free(keys);
}

/* m sampled at each hour's first step (labels shared with m: free only
 * the series array and the values). */
static void sample_hours(const struct gl_matrix *m, size_t per, size_t nhours,
                         struct gl_matrix *out)
{
    memset(out, 0, sizeof *out);
    out->start = m->start;
    out->step = 3600;
    out->nsteps = nhours;
    out->series = gl_xcalloc(m->nseries + 1, sizeof *out->series);
    out->nseries = m->nseries;
    for (size_t i = 0; i < m->nseries; i++) {
        struct gl_series *o = &out->series[i];
        *o = m->series[i];
        o->values = gl_xcalloc(nhours + 1, sizeof *o->values);
        for (size_t h = 0; h < nhours; h++)
            o->values[h] = h * per < m->nsteps ? m->series[i].values[h * per] : (double)NAN;
    }
}

/* The key of a pod's GPU time row on a node at an hour. */
static void gpu_row_key(struct gl_buf *k, int32_t hour, const char *node, const char *ns,
                        const char *pod)
{
    gl_buf_reset(k);
    if (!gl_buf_printf(k, "%d/%zu:%s%zu:%s%zu:%s", hour, strlen(node), node, strlen(ns), ns,
                       strlen(pod), pod))
        oom();
}

static void sampled_free(struct gl_matrix *m)
{
    for (size_t i = 0; i < m->nseries; i++)
        free(m->series[i].values);
    free(m->series);
    memset(m, 0, sizeof *m);
}

/* The rows of gl_integrate on one point per hour back on the step grid: a
 * sum over the hour's steps × 3600 is n × the per-step integration; GPU
 * time is per second already; busy steps count once per hour. */
static enum gl_status rescale_rows(const struct gl_srv_unit *u, struct gl_rollup *r,
                                   struct gl_error *err)
{
    const int64_t n = 3600 / u->step;
    for (size_t i = 0; i < r->nslots; i++) {
        struct gl_rollup_entry *e = &r->slots[i];
        if (!e->used)
            continue;
        if (e->kind == GL_KIND_BUSY_STEPS) {
            if (__builtin_mul_overflow(e->quantity, n, &e->quantity))
                return gl_error_set(err, GL_ERR_RUNTIME, "server mode: busy steps overflow");
        } else if (e->kind != GL_KIND_ALLOCATED_GPU && e->kind != GL_KIND_BUSY_PPM) {
            if (e->quantity % n)
                return gl_error_set(err, GL_ERR_RUNTIME,
                                    "server mode: an hourly %s of %lld MiB·s is not a whole "
                                    "number of steps (internal)",
                                    gl_kind_names[e->kind], (long long)e->quantity);
            e->quantity /= n;
        }
        e->last_t = e->first_t + 3600 - u->step;
    }
    return GL_OK;
}

/* (hour, node, ns, pod) → the first GPU time row of a pseudo-device (the
 * one a scan of the rows finds), its slot in *row. */
static struct gl_intern *gpu_row_index(const struct gl_rollup *r, size_t **row)
{
    struct gl_intern *rows = gl_intern_new();
    struct gl_buf key;
    gl_buf_init(&key);
    *row = gl_xcalloc(r->nslots + 1, sizeof **row);
    for (size_t k = 0; k < r->nslots; k++) {
        const struct gl_rollup_entry *e = &r->slots[k];
        if (!e->used || e->kind != GL_KIND_ALLOCATED_GPU || !r->devices[e->device].pseudo)
            continue;
        gpu_row_key(&key, e->hour, gl_intern_str(r->strings, r->devices[e->device].hostname),
                    gl_intern_str(r->strings, e->ns), gl_intern_str(r->strings, e->pod));
        int32_t was = gl_intern_count(rows);
        int32_t id = gl_intern_get(rows, key.data);
        if (id == was)
            (*row)[id] = k;
    }
    gl_buf_free(&key);
    return rows;
}

/* A MIG request's GPU time is floored per step (units × step × 10^6 × g
 * / 7): the hour's is n × that, not the floor of the hour's product; the
 * difference is added to the pod's GPU time row of the hour. */
static enum gl_status mig_gpu_time(const struct gl_srv_unit *u, const struct gl_matrix *alloc,
                                   struct gl_rollup *r, struct gl_error *err)
{
    const size_t nh = u->nhours, per = (size_t)(3600 / u->step);
    const int64_t n = (int64_t)per;
    enum gl_status rc = GL_OK;
    struct gl_buf mp, key;
    gl_buf_init(&mp);
    gl_buf_init(&key);
    struct gl_intern *gpu_rows = NULL; /* built on the first request that needs it */
    size_t *gpu_row = NULL;
    for (size_t i = 0; !rc && alloc && i < alloc->nseries; i++) {
        const struct gl_series *s = &alloc->series[i];
        const char *res = gl_series_label(s, "resource"), *node = gl_series_label(s, "node");
        const char *ns = gl_series_label(s, "namespace"), *pod = gl_series_label(s, "pod");
        int64_t g, gb;
        if (!res || !node || !ns || !pod || !gl_mig_resource(res, &g, &gb, &mp))
            continue;
        for (size_t h = 0; !rc && h < nh; h++) {
            double v = s->values[h * per];
            /* llround of v >= 2^63 is unspecified: the range check below first */
            if (isnan(v) || v <= 0 || (v < 9.0e18 && llround(v) <= 0))
                continue;
            char ts[32];
            gl_time_format(u->cs + (int64_t)h * 3600, ts, sizeof ts);
            /* (gl_integrate took the hour: units below 9·10^18, and in 128
             * bits neither product can overflow) */
            if (!(v < 9.0e18)) {
                rc = gl_error_set(err, GL_ERR_RUNTIME,
                                  "server mode: the MIG request %g of pod %s/%s on %s at %s "
                                  "is beyond the 64-bit range (internal)", v, ns, pod, node, ts);
                break;
            }
            gl_i128 units = llround(v);
            gl_i128 delta = n * (units * u->step * 1000000 * g / 7) -
                            units * 3600 * 1000000 * g / 7;
            if (delta == 0)
                continue;
            if (!gpu_rows)
                gpu_rows = gpu_row_index(r, &gpu_row);
            gpu_row_key(&key, (int32_t)h, node, ns, pod);
            int32_t id = gl_intern_find(gpu_rows, key.data);
            if (id < 0) {
                rc = gl_error_set(err, GL_ERR_RUNTIME,
                                  "server mode: no GPU time row for the MIG request of pod "
                                  "%s/%s on %s at %s (internal)", ns, pod, node, ts);
                break;
            }
            struct gl_rollup_entry *hit = &r->slots[gpu_row[id]];
            gl_i128 q = (gl_i128)hit->quantity + delta;
            if (q < INT64_MIN || q > INT64_MAX) {
                rc = gl_error_set(err, GL_ERR_RUNTIME,
                                  "integer overflow: the GPU time of the MIG request of pod "
                                  "%s/%s on %s at %s exceeds the 64-bit range (%lld units); "
                                  "the samples are beyond any plausible GPU fleet",
                                  ns, pod, node, ts, (long long)units);
                break;
            }
            hit->quantity = (int64_t)q;
        }
    }
    gl_buf_free(&mp);
    gl_buf_free(&key);
    gl_intern_free(gpu_rows);
    free(gpu_row);
    return rc;
}

/* The devices' last sample instants (the hour's last step) and capacities
 * (an hour's sum of n equal steps) back on the step grid. */
static enum gl_status rescale_devices(const struct gl_srv_unit *u, struct gl_rollup *r,
                                      struct gl_error *err)
{
    const int64_t n = 3600 / u->step;
    for (size_t d = 0; d < r->ndevices; d++) {
        struct gl_chunk_device *cd = &r->devices[d];
        if (cd->last_seen >= 0 &&
            __builtin_add_overflow(cd->last_seen, 3600 - u->step, &cd->last_seen))
            return gl_error_set(err, GL_ERR_RUNTIME,
                                "server mode: the last sample instant of device %s overflows "
                                "(internal)", gl_intern_str(r->strings, cd->uuid));
        if (cd->max_capacity_mib % n)
            return gl_error_set(err, GL_ERR_RUNTIME,
                                "server mode: a device capacity that is not constant (internal)");
        cd->max_capacity_mib /= n;
    }
    r->step = u->step;
    r->nsteps = u->nhours * (size_t)n;
    for (size_t h = 0; h < u->nhours; h++) {
        int q = role_q(u, GL_SRV_MEMORY);
        r->samples_per_hour[h] = u->pl_samples[h * GL_SRV_QMAX + (size_t)q];
    }
    return GL_OK;
}

enum gl_status gl_srv_integrate(struct gl_srv_unit *u, const struct gl_matrix *pod_labels,
                                const struct gl_matrix *ns_labels,
                                const struct gl_matrix *node_labels,
                                const struct gl_matrix *alloc, struct gl_rollup *r,
                                struct gl_error *err)
{
    const size_t nh = u->nhours, per = (size_t)(3600 / u->step);
    struct gl_matrix s_pl = {0}, s_nl = {0}, s_nodel = {0}, s_al = {0}, empty;
    synth_init(&empty, u->cs, nh);
    if (pod_labels)
        sample_hours(pod_labels, per, nh, &s_pl);
    if (ns_labels)
        sample_hours(ns_labels, per, nh, &s_nl);
    if (node_labels)
        sample_hours(node_labels, per, nh, &s_nodel);
    if (alloc)
        sample_hours(alloc, per, nh, &s_al);
    const struct gl_matrix *compute[GL_SRV_QMAX];
    size_t ncompute = 0;
    const struct gl_matrix *mem = &empty, *fr = &empty, *rs = &empty;
    for (int q = 0; q < u->nq; q++) {
        if (u->role[q] == GL_SRV_MEMORY)
            mem = &u->synth[q];
        else if (u->role[q] == GL_SRV_FREE)
            fr = &u->synth[q];
        else if (u->role[q] == GL_SRV_RESERVED)
            rs = &u->synth[q];
        else if (u->role[q] == GL_SRV_COMPUTE)
            compute[ncompute++] = &u->synth[q];
    }
    struct gl_chunk_input in = {.cluster = u->cluster, .memory = mem, .fb_free = fr,
                                .fb_reserved = rs, .pod_labels = pod_labels ? &s_pl : NULL,
                                .ns_labels = ns_labels ? &s_nl : NULL,
                                .allocation = alloc ? &s_al : NULL,
                                .node_labels = node_labels ? &s_nodel : NULL,
                                .compute = compute, .ncompute = ncompute};
    enum gl_status rc = gl_integrate(u->c, &in, r, err);
    sampled_free(&s_pl);
    sampled_free(&s_nl);
    sampled_free(&s_nodel);
    sampled_free(&s_al);
    if (!rc)
        rc = rescale_rows(u, r, err);
    if (!rc)
        rc = mig_gpu_time(u, alloc, r, err);
    if (!rc)
        rc = rescale_devices(u, r, err);
    return rc;
}

void gl_srv_unit_free(struct gl_srv_unit *u)
{
    if (!u)
        return;
    gl_free_strs(u->fig_text, u->nfig);
    GL_FREE_EACH(u->fig_kind, u->fig_q);
    for (int q = 0; q < GL_SRV_QMAX; q++)
        gl_matrix_free(&u->synth[q]);
    gl_intern_free(u->plain);
    gl_intern_free(u->hosts);
    GL_FREE_EACH(u->ok, u->raw_needed_h, u->pl_series, u->pl_samples);
    u->ok = u->raw_needed_h = NULL;
    u->nfig = 0;
    u->fig_text = NULL;
    u->fig_kind = u->fig_q = NULL;
    u->plain = u->hosts = NULL;
    u->pl_series = u->pl_samples = NULL;
}
