/*
 * owner — the workload each pod belongs to, from kube-state-metrics'
 * kube_pod_owner (queries/pod_owner.promql), for the reports' "top
 * workloads": a side collector (side.h), collected once the usage is.
 *
 * Reads: one instant query per UTC day of a collected window
 * (last_over_time over the day). Writes: pod_owner rows (schema/005), one
 * per (cluster, namespace, pod), the latest owner winning. Never touches
 * usage: an owner is a label of the report, not a billed figure, and a pod
 * without one is shown as its own workload.
 *
 * Folding: the controlling owner (owner_is_controller="true"; a series
 * without that label counts as controlling). A ReplicaSet whose name ends
 * in a pod-template-hash ("-" + 6 to 10 characters of Kubernetes'
 * SafeEncodeString alphabet bcdfghjklmnpqrstvwxz2456789) is shown as its
 * Deployment (the name without the suffix); any other owner is kept as
 * kube-state-metrics reports it. owner_kind "<none>" is no owner.
 *
 * Its `check` probe is the DRA claims and the device query beside a HAMi
 * source (claims_check below).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "side.h"

#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fetch.h"
#include "store_owner.h"
#include "timeutil.h"
#include "util.h"

#define OWNER_QUERY "pod_owner"

/* A ReplicaSet named <deployment>-<pod-template-hash>. */
static const char rs_hash[] = "-[bcdfghjklmnpqrstvwxz2456789]{6,10}$";

/* Stores the owners of one instant-query answer. */
static enum gl_status store_vector(const struct gl_cluster *cluster, struct gl_store *s,
                                   pcre2_code *code, const struct gl_vector *vec, int64_t at,
                                   const char *where, struct gl_error *err)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    if (!md)
        return gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    enum gl_status rc = GL_OK;
    for (size_t k = 0; !rc && k < vec->n; k++) {
        const char *v[5] = {NULL};
        static const char *const names[] = {"namespace", "pod", "owner_kind", "owner_name",
                                            "owner_is_controller"};
        for (int i = 0; i < 5; i++) /* an empty label is an absent one */
            v[i] = gl_sample_label(&vec->samples[k], names[i]);
        if (!v[0] || !v[1]) {
            rc = gl_error_set(err, GL_ERR_PROM,
                              "%s: series %zu has no namespace or pod label", where, k);
            break;
        }
        if (!v[2] || !v[3] || strcmp(v[2], "<none>") == 0 ||
            (v[4] && strcmp(v[4], "false") == 0))
            continue; /* no controlling owner: the pod is its own workload */
        const char *kind = v[2];
        char *name = gl_strdup(v[3]);
        if (strcmp(kind, "ReplicaSet") == 0 &&
            pcre2_match(code, (PCRE2_SPTR)name, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL) >= 0) {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            if (ov[0] > 0) {
                name[ov[0]] = '\0';
                kind = "Deployment";
            }
        }
        rc = gl_store_put_pod_owner(s, cluster->name, v[0], v[1], kind, name, at, err);
        free(name);
    }
    pcre2_match_data_free(md);
    return rc;
}

/* Collects the owners of cluster's pods in [from, to) into s (nothing when
 * s is NULL: a dry run). The query file missing from queries_dir, and a
 * day whose query fails or answers something else than an instant vector,
 * are warnings naming the query and the day (those pods show as their own
 * workloads; billed figures never depend on owners). A store failure or a
 * config error is an error. */
static enum gl_status owner_collect(const struct gl_config *c, const struct gl_cluster *cluster,
                                    struct gl_store *s, int64_t from, int64_t to,
                                    struct gl_error *err)
{
    if (!s || to <= from)
        return GL_OK;
    char file[512];
    snprintf(file, sizeof file, "%s/%s.promql", c->queries_dir, OWNER_QUERY);
    if (access(file, R_OK) != 0) {
        gl_log(GL_LOG_WARN, "no %s: pods are shown as their own workloads (cluster %s)", file,
               cluster->name);
        return GL_OK;
    }
    char *tmpl = NULL;
    struct gl_prom *prom = NULL;
    struct gl_buf q;
    gl_buf_init(&q);
    int errcode;
    PCRE2_SIZE off;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)rs_hash, PCRE2_ZERO_TERMINATED, 0, &errcode,
                                     &off, NULL);
    enum gl_status rc = code ? GL_OK : gl_error_set(err, GL_ERR_RUNTIME, "pcre2_compile failed");
    if (!rc)
        rc = gl_config_query(c, cluster, OWNER_QUERY, &tmpl, err);
    if (!rc)
        rc = gl_prom_new(&cluster->prom, &prom, err);
    for (int64_t t = from; !rc && t < to; t += 86400) {
        int64_t end = t + 86400 < to ? t + 86400 : to;
        /* ${window}: the day (or the window's last part) in seconds */
        gl_buf_reset(&q);
        for (const char *p = tmpl; *p;) {
            const char *w = strstr(p, "${window}");
            if (!w) {
                gl_buf_puts(&q, p);
                break;
            }
            gl_buf_printf(&q, "%.*s%llds", (int)(w - p), p, (long long)(end - t));
            p = w + strlen("${window}");
        }
        char ts[32], where[128];
        gl_time_format(end, ts, sizeof ts);
        snprintf(where, sizeof where, "query %s at %s (cluster %.40s)", OWNER_QUERY, ts,
                 cluster->name);
        /* a failed answer costs the day's workloads, never the billed
         * figures stored before: a warning naming it, and the next day */
        struct gl_error qerr = {0};
        struct gl_vector vec;
        enum gl_status qrc = gl_prom_vector(prom, q.data, end, &vec, &qerr);
        if (!qrc && (rc = gl_store_begin(s, err))) {
            gl_vector_free(&vec);
            break;
        }
        if (!qrc) {
            qrc = store_vector(cluster, s, code, &vec, end, where, &qerr);
            gl_vector_free(&vec);
            if (qrc)
                gl_store_rollback(s);
            else if ((rc = gl_store_commit(s, err)))
                break;
        }
        if (qrc) {
            if (qrc != GL_ERR_PROM && qrc != GL_ERR_TOO_LARGE) {
                rc = qrc; /* the store, memory: an error */
                *err = qerr;
                break;
            }
            gl_log(GL_LOG_WARN, "pod owners not collected (%s): %s; its pods show as their own "
                                "workloads", where, qerr.msg);
        }
    }
    gl_prom_free(prom);
    free(tmpl);
    gl_buf_free(&q);
    pcre2_code_free(code);
    return rc;
}

/* ---- check: DRA claims and the device query ---- */

#define CLAIM_QUERY "pod_resourceclaim"
#define CLAIM_LINES 20 /* findings listed per kind; the rest counted */

/* The named query of cluster at instant at, read into *v (empty on failure). */
static enum gl_status instant(const struct gl_config *c, const struct gl_cluster *cluster,
                              struct gl_prom *prom, const char *name, int64_t at,
                              struct gl_vector *v, struct gl_error *err)
{
    char *text = NULL;
    memset(v, 0, sizeof *v);
    enum gl_status rc = gl_config_query(c, cluster, name, &text, err);
    if (!rc)
        rc = gl_prom_vector(prom, text, at, v, err);
    free(text);
    return rc;
}

/* One finding, indented as `check` prints its notes. */
static void note_line(struct gl_buf *notes, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note_line(struct gl_buf *notes, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gl_buf_puts(notes, "  ");
    gl_buf_vprintf(notes, fmt, ap);
    gl_buf_puts(notes, "\n");
    va_end(ap);
}

/* What the memory source's series say of devices and DRA claims: the
 * devices that have pods (pod_devs, by UUID) and the claims of the
 * configured driver (seen: "ns/pod claim ns/claim", where[i] naming the
 * device of seen's i-th). */
struct claims {
    struct gl_intern *pod_devs, *seen;
    char **where;
};

static void claims_of_memory_source(const struct gl_config *c, const struct gl_vector *res,
                                    struct claims *cl)
{
    struct gl_buf key, line;
    gl_buf_init(&key);
    gl_buf_init(&line);
    for (size_t i = 0; i < res->n; i++) {
        const struct gl_sample *m = &res->samples[i];
        const char *uuid = gl_sample_label(m, c->mq[GL_MQ_MEMORY].uuid_label);
        if (!uuid)
            uuid = gl_sample_label(m, "UUID");
        if (!uuid)
            continue;
        const char *ns = gl_sample_label(m, "exported_pod") ? gl_sample_label(m, "exported_namespace")
                                                         : gl_sample_label(m, c->namespace_label);
        const char *pod = gl_sample_label(m, "exported_pod") ? gl_sample_label(m, "exported_pod")
                                                          : gl_sample_label(m, c->pod_label);
        if (!ns || !pod)
            continue;
        gl_intern_get(cl->pod_devs, uuid);
        const char *claim = gl_sample_label(m, c->dra_claim_name_label);
        const char *driver = gl_sample_label(m, c->dra_driver_label);
        if (!c->dra_enabled || !claim || (driver && strcmp(driver, c->dra_driver) != 0))
            continue;
        const char *cns = gl_sample_label(m, c->dra_claim_namespace_label);
        gl_buf_reset(&key);
        gl_buf_printf(&key, "%s/%s claim %s/%s", ns, pod, cns ? cns : ns, claim);
        if (gl_intern_find(cl->seen, key.data) < 0) {
            gl_intern_get(cl->seen, key.data);
            const char *pool = gl_sample_label(m, c->dra_pool_label);
            const char *dname = gl_sample_label(m, c->dra_device_label);
            const char *mig = gl_sample_label(m, c->dra_mig_device_uuid_label);
            gl_buf_reset(&line);
            gl_buf_printf(&line, "device %s%s%s%s%s%s", uuid, pool || dname ? " (" : "",
                          pool ? pool : "", pool && dname ? "/" : "", dname ? dname : "",
                          pool || dname ? ")" : "");
            if (mig)
                gl_buf_printf(&line, " MIG %s", mig);
            size_t nseen = (size_t)gl_intern_count(cl->seen);
            cl->where = gl_xrealloc(cl->where, nseen * sizeof *cl->where);
            cl->where[gl_intern_count(cl->seen) - 1] = gl_strdup(line.data);
        }
    }
    gl_buf_free(&key);
    gl_buf_free(&line);
}

/* The exporter's device series, read beside the memory source: a device
 * with pods but no device series has its device used estimated. */
static enum gl_status device_series_notes(const struct gl_config *c,
                                          const struct gl_cluster *cluster, struct gl_prom *prom,
                                          int64_t at, const struct claims *cl,
                                          struct gl_buf *notes, struct gl_error *err)
{
    struct gl_vector res;
    struct gl_intern *with_dev = gl_intern_new();
    size_t ndevice_series = 0;
    enum gl_status rc = instant(c, cluster, prom, c->mem_device_query, at, &res, err);
    for (size_t i = 0; i < res.n; i++) {
        const struct gl_sample *m = &res.samples[i];
        const char *uuid = gl_sample_label(m, c->mq[GL_MQ_FREE].uuid_label);
        if (!uuid)
            uuid = gl_sample_label(m, "UUID");
        if (!uuid)
            continue;
        ndevice_series++;
        gl_intern_get(with_dev, uuid);
    }
    gl_vector_free(&res);
    if (!rc && ndevice_series == 0) {
        note_line(notes, "memory_source.device_query %s: no series at the probe time: "
                  "device used falls back to the sum of the memory source's pods (memory "
                  "no pod holds is missed from overhead and capacity; those figures are "
                  "marked estimated)", c->mem_device_query);
    } else if (!rc) {
        size_t missing = 0;
        for (int32_t i = 0; i < gl_intern_count(cl->pod_devs); i++) {
            const char *uuid = gl_intern_str(cl->pod_devs, i);
            if (gl_intern_find(with_dev, uuid) >= 0)
                continue;
            if (missing++ < CLAIM_LINES)
                note_line(notes, "device %s: memory source pods but no %s series: its "
                          "device used is its pods' sum (estimated)", uuid,
                          c->mem_device_query);
        }
        if (missing > CLAIM_LINES)
            note_line(notes, "... and %zu more device(s) without %s series",
                      missing - CLAIM_LINES, c->mem_device_query);
        if (!missing)
            note_line(notes, "memory_source.device_query %s: %zu device series, one for "
                      "every device of the memory source", c->mem_device_query,
                      ndevice_series);
    }
    gl_intern_free(with_dev);
    return rc;
}

/* The claims on dcgm-exporter series (seen) against kube-state-metrics'
 * (ksm): each side's claims the other lacks, then the counts. */
static void claims_compare(const struct gl_config *c, const struct claims *cl,
                           const struct gl_intern *ksm, struct gl_buf *notes)
{
    const struct gl_intern *seen = cl->seen;
    size_t only_dcgm = 0, only_ksm = 0;
    for (int32_t i = 0; i < gl_intern_count(seen); i++)
        if (gl_intern_find(ksm, gl_intern_str(seen, i)) < 0 && only_dcgm++ < CLAIM_LINES)
            note_line(notes, "DRA: pod %s on %s: seen on dcgm-exporter series but not in "
                      "kube_pod_resourceclaim_info", gl_intern_str(seen, i),
                      cl->where[i]);
    for (int32_t i = 0; i < gl_intern_count(ksm); i++)
        if (gl_intern_find(seen, gl_intern_str(ksm, i)) < 0 && only_ksm++ < CLAIM_LINES)
            note_line(notes, "DRA: pod %s: in kube_pod_resourceclaim_info but on no "
                      "dcgm-exporter series of driver %s (another driver's claim, or a "
                      "device without memory series)", gl_intern_str(ksm, i),
                      c->dra_driver);
    if (only_dcgm > CLAIM_LINES || only_ksm > CLAIM_LINES)
        note_line(notes, "DRA: ... %zu claim(s) only on dcgm-exporter series and %zu "
                  "only in kube-state-metrics in all", only_dcgm, only_ksm);
    note_line(notes, "DRA: %d claim(s) of %s on dcgm-exporter series, %d in "
              "kube_pod_resourceclaim_info, %zu only on dcgm-exporter, %zu only in "
              "kube-state-metrics", gl_intern_count(seen), c->dra_driver,
              gl_intern_count(ksm), only_dcgm, only_ksm);
}

/* The DRA claims against kube-state-metrics (the CLAIM_QUERY file, when
 * the queries folder has it). */
static enum gl_status dra_claim_notes(const struct gl_config *c, const struct gl_cluster *cluster,
                                      struct gl_prom *prom, int64_t at, const struct claims *cl,
                                      struct gl_buf *notes, struct gl_error *err)
{
    char file[512];
    snprintf(file, sizeof file, "%s/%s.promql", c->queries_dir, CLAIM_QUERY);
    if (gl_intern_count(cl->seen) > 0 && access(file, R_OK) != 0) {
        note_line(notes, "DRA: %d claim(s) on dcgm-exporter series; no %s: not compared with "
                  "kube-state-metrics", gl_intern_count(cl->seen), file);
        return GL_OK;
    }
    if (access(file, R_OK) != 0)
        return GL_OK;
    struct gl_vector res;
    enum gl_status rc = instant(c, cluster, prom, CLAIM_QUERY, at, &res, err);
    struct gl_intern *ksm = gl_intern_new();
    struct gl_buf key;
    gl_buf_init(&key);
    for (size_t i = 0; i < res.n; i++) {
        const struct gl_sample *m = &res.samples[i];
        const char *ns = gl_sample_label(m, "namespace"), *pod = gl_sample_label(m, "pod");
        const char *claim = gl_sample_label(m, "resourceclaim_name");
        if (!ns || !pod || !claim)
            continue;
        gl_buf_reset(&key);
        gl_buf_printf(&key, "%s/%s claim %s/%s", ns, pod, ns, claim);
        gl_intern_get(ksm, key.data);
    }
    if (!rc && gl_intern_count(ksm) == 0 && gl_intern_count(cl->seen) > 0)
        note_line(notes, "DRA: %d claim(s) on dcgm-exporter series; kube_pod_resourceclaim_info "
                  "has no series (kube-state-metrics before 2.20, or not scraped): not "
                  "compared", gl_intern_count(cl->seen));
    else if (!rc && (gl_intern_count(ksm) > 0 || gl_intern_count(cl->seen) > 0))
        claims_compare(c, cl, ksm, notes);
    gl_buf_free(&key);
    gl_intern_free(ksm);
    gl_vector_free(&res);
    return rc;
}

/* `check` on a DRA or HAMi cluster at instant at, one line per finding
 * appended to notes:
 *  - memory_source.device_query: no device series at all, or devices of
 *    the memory source's pods without one (their device used is then the
 *    pods' sum, figures estimated);
 *  - DRA (dra.enabled): the claims of dra.driver named on the memory
 *    source's series joined with kube-state-metrics' kube_pod_resourceclaim_info
 *    (queries/pod_resourceclaim.promql) on (namespace, pod, claim): claims
 *    seen on dcgm-exporter series but not in kube-state-metrics, and the
 *    reverse; a missing query file or no series is said, not an error.
 * Only a config, memory or Prometheus transport error fails. */
static enum gl_status claims_check(const struct gl_config *c, const struct gl_cluster *cluster,
                                   struct gl_prom *prom, int64_t at, struct gl_buf *notes,
                                   struct gl_error *err)
{
    if (!c->mem_device_query && !c->dra_enabled)
        return GL_OK;
    struct gl_vector res;
    enum gl_status rc = instant(c, cluster, prom, c->mem_query, at, &res, err);
    struct claims cl = {.pod_devs = gl_intern_new(), .seen = gl_intern_new(), .where = NULL};
    claims_of_memory_source(c, &res, &cl);
    gl_vector_free(&res);
    if (!rc && c->mem_device_query)
        rc = device_series_notes(c, cluster, prom, at, &cl, notes, err);
    if (!rc && c->dra_enabled)
        rc = dra_claim_notes(c, cluster, prom, at, &cl, notes, err);
    gl_intern_free(cl.pod_devs);
    for (int32_t i = 0; cl.where && i < gl_intern_count(cl.seen); i++)
        free(cl.where[i]);
    free(cl.where);
    gl_intern_free(cl.seen);
    return rc;
}

const struct gl_side_collector gl_side_owner = {
    .when = GL_SIDE_AFTER_USAGE,
    .collect = owner_collect,
    .check = claims_check,
};
