/*
 * integrate — per step and per device attribution, rolled up by hour.
 *
 * Reads: the parsed matrices of one chunk (memory per pod and device,
 * FB_FREE, FB_RESERVED, kube_pod_labels, kube_namespace_labels, GPU
 * requests of Running pods, kube_node_labels, compute busy metrics).
 * Writes: a gl_rollup of exact integer quantities keyed (hour, device,
 * namespace, pod, team, kind), following docs/specification.md "Attribution" and "Arithmetic": duplicate
 * (device, pod) series merge by max; series without workload identity are
 * device totals; device-mode copies are split by largest remainder;
 * allocation, reserved-unused, anomalies, idle and overhead per step.
 * A device's own allocation record wins where there is one: a DRA claim
 * named on a pod's series of the device (its usable memory, or the MIG
 * slice, split among the claim's pods by largest remainder), or a HAMi
 * memory limit (which replaces the pod's GPU-request allocation on that
 * node). Both name their device: the pod's allocation, reserved-unused and
 * any excess stay on it. Billed reserved-unused and the excess it causes are
 * kept per device, so every device row adds up (docs/specification.md
 * "Arithmetic").
 *
 * Adding a memory source (another exporter's per-process memory):
 *   1. a query file queries/<name>.promql returning one series per pod and
 *      device (the device's UUID/GPU_I_ID labels, the pod's namespace/pod);
 *   2. config: `memory_source.query` names it; its unit (MiB or bytes) and
 *      label names come from `memory_source` / `exporter.queries.<name>`,
 *      a memory preset row in engine/base/preset.c (query, unit, UUID label,
 *      limit and device queries), or a preset row there for a new exporter
 *      generation; a per-pod memory limit it publishes (as HAMi does) is
 *      `memory_source.limit_query`, read by add_limits here;
 *   3. nothing per query elsewhere: the query registry's memory source row
 *      (engine/base/queryreg.c) takes the configured name, and collect (the
 *      chunk's list, the plausibility bound in the schema entry's unit, the
 *      host shards, the stored counts), `check` (its probe, required-ness,
 *      likely cause; the unit-mismatch test of collect/probe.c once its unit
 *      is declared) and run's missing-data error read it there. A new kind
 *      of query beside the source (as the limit and device queries are) is
 *      one row there, with its config field (config.h, config.c), and its
 *      matrix in gl_chunk_input below (handed over by collect.c);
 *   4. a scenario in tests/gen/gencluster.py's shapes with its own expected
 *      figures, collected by tests/integration/run.py;
 *   5. server mode (engine/collect/server.c config_refusal) takes only MiB
 *      sources with the memory query's device labels and no query whose
 *      registry row refuses it (the limit and device queries' srv_refusal):
 *      everything else is collected raw, which needs no change; a source it
 *      should sum is a change to that rule.
 * Adding a billing basis (what a pod pays per step beside used memory):
 *   1. one row of gl_bases[] (engine/base/basis.c): its name (config,
 *      frozen settings, pages and advice read it there), its per-step rule
 *      as the row's fields say it, what an advice's saving means to the
 *      team, and server mode's refusal (server mode sums used memory only:
 *      a basis it should sum needs its hourly figure, gl_srv_figures, and a
 *      rule function of gl_srv_decide saying which host-hours are linear);
 *   2. a per-step rule the row cannot say yet: its field in struct
 *      gl_basis (basis.h) and its code in gl_integrate's attribution here
 *      (pass E of integrate.c, alloc_rows and its callers: a basis with
 *      bills_reserved_unused stores GL_KIND_RESERVED_UNUSED_BILLED and
 *      takes it out of idle, device by device, in place_reserved_unused
 *      and step_claim_rows); a new stored kind is a row in gl_kind_names —
 *      the aggregates (schema/004) sum any kind — and its invoice line
 *      (engine/bill/invoice.c maps stored kinds to enum gl_line_kind; the
 *      fleet summary's SQL reads the billed kinds in engine/ledger/query.c);
 *   3. a generator model case (gencluster.py) with expected figures.
 */
#ifndef GL_INTEGRATE_H
#define GL_INTEGRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the join is read by integrate's callers with it (collect, server mode) */
#include "alloc_join.h"
#include "config.h"
#include "kinds.h"
#include "error.h"
#include "parse.h"
#include "podpeak.h"
#include "util.h"


/* The matrices are read, never changed. */
struct gl_chunk_input {
    const struct gl_cluster *cluster;    /* the cluster collected */
    const struct gl_matrix *memory;      /* memory source, per pod and device */
    const struct gl_matrix *fb_free;     /* each of the rest may be NULL */
    const struct gl_matrix *fb_reserved;
    const struct gl_matrix *pod_labels;
    const struct gl_matrix *ns_labels;
    const struct gl_matrix *allocation;  /* requests of Running pods */
    const struct gl_matrix *node_labels;
    const struct gl_matrix *const *compute; /* in order of preference */
    size_t ncompute;
    const struct gl_matrix *mem_limit;   /* HAMi limit per container and device, or NULL */
};

struct gl_chunk_device {
    int32_t cluster, uuid, gpu_i_id, profile, model, hostname; /* interned */
    bool pseudo;          /* a node's allocation pseudo-device */
    bool reserved_missing;/* memory metrics without FB_RESERVED at some step */
    bool free_missing;    /* memory metrics without FB_FREE at some step */
    bool fb_seen;         /* any memory metric in the chunk */
    bool unknown_usage;   /* pods seen with no memory metrics */
    int64_t max_capacity_mib;
    int64_t first_seen, last_seen; /* -1 when never seen */
};

struct gl_rollup_entry {
    int32_t hour;   /* hour index within the chunk */
    int32_t device; /* index into devices */
    int32_t ns, pod, team; /* interned ("" for device rows) */
    int32_t kind;
    int64_t quantity;
    int64_t first_t, last_t;
    int32_t estimated;
    int32_t used;   /* slot in use */
};

struct gl_rollup {
    int64_t start, step;
    size_t nsteps, nhours;
    struct gl_intern *strings;
    struct gl_chunk_device *devices;
    size_t ndevices;
    struct gl_rollup_entry *slots; /* entries in first-insertion order (every one
                                    * used; loops may still skip !used) */
    size_t nslots, nentries;       /* both the number of entries */
    size_t slots_cap;
    uint32_t *index;               /* open addressing: 1 + entry, 0 empty */
    size_t nindex;
    int64_t *samples_per_hour;     /* memory samples seen per hour */
    size_t bad_samples;
    size_t copy_warnings;          /* process-mode devices that look like copies */
    struct gl_peaks peaks;         /* per-step memory per pod, for advice (not billed) */
};

/* Fills r (owned by the caller, gl_rollup_free) from in. */
enum gl_status gl_integrate(const struct gl_config *c, const struct gl_chunk_input *in,
                            struct gl_rollup *r, struct gl_error *err);
void gl_rollup_free(struct gl_rollup *r);

#endif
