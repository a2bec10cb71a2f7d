/*
 * queryreg — the query registry: one row per Prometheus query a collection
 * runs from the queries folder (queries/<name>.promql), with what every
 * layer above asks of it: the config key naming it, its role (the row's
 * id), its unit (and so the parse's plausibility bound), whether `check`
 * requires it and under which config, the labels it must carry, how a
 * split hour shards it, the name its hourly counts are stored under, and
 * its server-mode rule. collect (the chunk's list, bounds, shards, counts,
 * server roles), `check` (what it probes, required-ness, likely causes,
 * the exporter schema test of the presets), run's missing-data error and
 * server mode (its refusals) loop over it.
 *
 * The queries outside a chunk keep their own owners: the pod owners and
 * DRA claims (collect/owner.c) and the work counters (collect/work.c,
 * PromQL in the config, per counter its namespace and pod labels).
 *
 * Adding a query: its row in rows[] (queryreg.c, at the place it takes in
 * the chunk's list), its id below, the config field naming it when the
 * name is configurable (config.h, config.c), its file in queries/, and
 * its matrix handed to the attribution by collect/collect.c (found by
 * gl_qr_pos, into attribute/integrate.h's gl_chunk_input).
 */
#ifndef GL_QUERYREG_H
#define GL_QUERYREG_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* The rows, in the order of a chunk's list (the ids index rows[]). */
enum gl_qid {
    GL_Q_MEMORY,         /* memory_source.query: the memory source (fb_used) */
    GL_Q_FREE,           /* fb_free: capacity with the source's used memory */
    GL_Q_RESERVED,       /* fb_reserved: the driver's reserve */
    GL_Q_POD_LABELS,     /* pod_labels: the team rules' pod labels */
    GL_Q_NS_LABELS,      /* namespace_labels: the team rules' namespace labels */
    GL_Q_ALLOC_REQUESTS, /* alloc_requests: requests, joined with pod_phase by the engine */
    GL_Q_ALLOCATION,     /* allocation: the backend-joined allocation */
    GL_Q_NODE_LABELS,    /* node_labels: nodes' models and MIG configs */
    GL_Q_COMPUTE,        /* compute.queries: the compute indicator, in preference order */
    GL_Q_MEM_LIMIT,      /* memory_source.limit_query: a per-container limit (HAMi) */
    GL_Q_MEM_DEVICE,     /* memory_source.device_query: device totals beside the source */
    GL_Q_PHASE,          /* pod_phase: the pods' phases, joined with alloc_requests */
    GL_Q_COUNT
};

/* The queries every config runs come first, one slot each (the allocation
 * is alloc_requests or allocation, never both): their positions in a
 * chunk's list are constants. The compute queries follow from
 * GL_QP_FIXED, then the other configured ones. */
enum gl_qpos {
    GL_QP_MEMORY,
    GL_QP_FREE,
    GL_QP_RESERVED,
    GL_QP_POD_LABELS,
    GL_QP_NS_LABELS,
    GL_QP_ALLOCATION,
    GL_QP_NODE_LABELS,
    GL_QP_FIXED
};

/* The most entries a list row runs (compute.queries beyond are refused by
 * config.c), and so the most queries of one chunk. */
#define GL_QR_LIST_MAX 8
#define GL_QR_MAX (GL_Q_COUNT - 1 + GL_QR_LIST_MAX)

/* When a config runs the row's query. */
enum gl_qwhen {
    GL_QW_ALWAYS,
    GL_QW_ENGINE_JOIN,  /* the engine joins the allocation (no allocation.promql) */
    GL_QW_BACKEND_JOIN, /* the queries folder holds allocation.promql */
    GL_QW_CONFIGURED,   /* its config key is set */
    GL_QW_LIST,         /* once per entry of its config list, at most GL_QR_LIST_MAX */
};

/* The unit of its values, which sets the parse's plausibility bound
 * (README "Wire integrity"). */
enum gl_qunit {
    GL_QU_MEMORY,  /* MiB or bytes, as its exporter schema entry says: <= 1 TiB */
    GL_QU_UNITS,   /* GPU units per pod and resource: <= the allocation bound */
    GL_QU_REQUEST, /* GPU units per request: any finite value, the bound is the join's */
    GL_QU_RATIO,   /* a busy ratio: <= 1 (DCGM_FI_DEV_GPU_UTIL: <= 100 %) */
    GL_QU_INFO,    /* label series: the value is not read, any finite one */
};

/* Whether `check` fails when the query has no data at the probe time. */
enum gl_qneed {
    GL_QN_OPTIONAL,
    GL_QN_REQUIRED,
    GL_QN_CAPACITY, /* required unless allocation.model_capacity_mib gives capacity */
};

/* Who exports its series: `check`'s likely cause when it has none. */
enum gl_qsource {
    GL_QS_DCGM,          /* dcgm-exporter (an FB field) */
    GL_QS_KSM,           /* kube-state-metrics */
    GL_QS_KSM_REQUESTS,  /* kube-state-metrics, series only while a pod requests a GPU */
    GL_QS_EXPORTER,      /* a configured exporter (dcgm-exporter's when named fb_*) */
};

/* How a split hour (several shards by host) asks it. */
enum gl_qshard {
    GL_QSH_HOST, /* per shard, by the device's host label (dcgm-exporter) */
    GL_QSH_NODE, /* per shard, by `node` (requests carry the pod's node) */
    GL_QSH_KEPT, /* once, in the first shard, kept for the others (no host label) */
};

/* What a unit's query is for the server planning (collect/server.h). */
enum gl_srv_role {
    GL_SRV_OTHER, /* label and allocation queries: rebuilt when constant, else raw */
    GL_SRV_MEMORY,
    GL_SRV_FREE,
    GL_SRV_RESERVED,
    GL_SRV_COMPUTE, /* in preference order */
};

/* The labels a query's series must carry: the device labels of its
 * exporter schema entry (schema), the labels the team rules of a kind read
 * (GL_QL_TEAM_*: `check` says when none carries them), or the pod's
 * namespace, pod and node (the allocation, sharded by node). */
enum gl_qlabels {
    GL_QL_DEVICE,
    GL_QL_TEAM_POD,
    GL_QL_TEAM_NAMESPACE,
    GL_QL_POD,
    GL_QL_NODE,
};

struct gl_qrow {
    enum gl_qid id;
    const char *name;     /* the query file's name; NULL: the config key's value */
    const char *key;      /* the config key naming it, NULL when the name is fixed */
    size_t field;         /* offsetof the char * (GL_QW_LIST: char **) holding it */
    size_t count_field;   /* GL_QW_LIST: offsetof the size_t counting the list */
    enum gl_qwhen when;
    enum gl_qunit unit;
    enum gl_mq schema;    /* GL_QU_MEMORY, GL_QL_DEVICE: its exporter schema entry */
    enum gl_qlabels labels;
    enum gl_qneed need;
    enum gl_qsource source;
    enum gl_qshard shard;
    const char *counts;   /* the name its hourly counts are stored under: "" its
                           * own name, NULL none (counted as the memory source's) */
    bool capacity;        /* a term of a device's USED + FREE + RESERVED: `check`'s
                           * exporter schema test reads it (collect/probe.c) */
    bool no_data_named;   /* named by run's error when a cluster returns no data */
    int check_rank;       /* its place in `check`'s probe list, 0: not probed */
    enum gl_srv_role srv; /* its server-mode planning role */
    const char *srv_refusal; /* server mode refuses a unit when it runs: why */
};

/* The row of id. */
const struct gl_qrow *gl_qr_row(enum gl_qid id);

/* How many queries row r runs under c (0 or 1; a list row its entries). */
size_t gl_qr_count(const struct gl_config *c, const struct gl_qrow *r);

/* The name of row r's k-th query under c (queries/<name>.promql). */
const char *gl_qr_name(const struct gl_config *c, const struct gl_qrow *r, size_t k);

/* The name its hourly counts are stored under, NULL when they are not. */
const char *gl_qr_counts_name(const struct gl_config *c, const struct gl_qrow *r, size_t k);

/* One query of a list: its row, its entry (list rows) and its name. */
struct gl_qslot {
    const struct gl_qrow *row;
    size_t k;
    const char *name;
};

/* The queries a chunk runs under c, in rows[] order, into out (room for
 * GL_QR_MAX); returns how many. */
int gl_qr_list(const struct gl_config *c, struct gl_qslot *out);

/* The position in that list of row id's first query, -1 when not run. */
int gl_qr_pos(const struct gl_config *c, enum gl_qid id);

/* The queries `check` probes under c, in their check_rank order, into out
 * (room for GL_QR_MAX); returns how many. */
int gl_qr_check_list(const struct gl_config *c, struct gl_qslot *out);

/* Whether query s must have data at the probe time under c. */
bool gl_qr_required(const struct gl_config *c, const struct gl_qslot *s);

#endif
