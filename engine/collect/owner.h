/*
 * owner — the workload each pod belongs to, from kube-state-metrics'
 * kube_pod_owner (queries/pod_owner.promql), for the reports' "top
 * workloads".
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
 */
#ifndef GL_OWNER_H
#define GL_OWNER_H

#include <stdint.h>

#include "config.h"
#include "error.h"
#include "fetch.h"
#include "store.h"
#include "store_owner.h"
#include "util.h"

/* Collects the owners of cluster's pods in [from, to) into s (nothing when
 * s is NULL: a dry run). The query file missing from queries_dir, and a
 * day whose query fails or answers something else than an instant vector,
 * are warnings naming the query and the day (those pods show as their own
 * workloads; billed figures never depend on owners). A store failure or a
 * config error is an error. */
enum gl_status gl_owner_collect(const struct gl_config *c, const struct gl_cluster *cluster,
                                struct gl_store *s, int64_t from, int64_t to,
                                struct gl_error *err);

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
enum gl_status gl_claims_check(const struct gl_config *c, const struct gl_cluster *cluster,
                               struct gl_prom *prom, int64_t at, struct gl_buf *notes,
                               struct gl_error *err);

#endif
