/*
 * queryreg — the table of a chunk's Prometheus queries (see queryreg.h).
 */
#include "queryreg.h"

#include <string.h>

#define CFG(f) offsetof(struct gl_config, f)

/* In the order of a chunk's list: the first rows are the queries every
 * config runs (GL_QP_*), alloc_requests and allocation taking one slot
 * between them. `check` probes in check_rank order, which puts pod_phase
 * and the device query before the compute queries and leaves the limit
 * query out. Server mode sums memory, FB_FREE, FB_RESERVED and compute
 * per hour; a limit or device query is a shape its sums cannot give. */
static const struct gl_qrow rows[GL_Q_COUNT] = {
    [GL_Q_MEMORY] = {.id = GL_Q_MEMORY, .key = "memory_source.query", .field = CFG(mem_query),
                     .when = GL_QW_ALWAYS, .unit = GL_QU_MEMORY, .schema = GL_MQ_MEMORY,
                     .labels = GL_QL_DEVICE, .need = GL_QN_REQUIRED, .source = GL_QS_DCGM,
                     .shard = GL_QSH_HOST, .counts = "", .capacity = true, .no_data_named = true,
                     .check_rank = 1, .srv = GL_SRV_MEMORY},
    [GL_Q_FREE] = {.id = GL_Q_FREE, .name = "fb_free", .when = GL_QW_ALWAYS,
                   .unit = GL_QU_MEMORY, .schema = GL_MQ_FREE, .labels = GL_QL_DEVICE,
                   .need = GL_QN_CAPACITY, .source = GL_QS_DCGM, .shard = GL_QSH_HOST,
                   .counts = "", .capacity = true, .no_data_named = true, .check_rank = 2, .srv = GL_SRV_FREE},
    [GL_Q_RESERVED] = {.id = GL_Q_RESERVED, .name = "fb_reserved", .when = GL_QW_ALWAYS,
                       .unit = GL_QU_MEMORY, .schema = GL_MQ_RESERVED, .labels = GL_QL_DEVICE,
                       .need = GL_QN_OPTIONAL, .source = GL_QS_DCGM, .shard = GL_QSH_HOST,
                       .counts = "", .capacity = true, .no_data_named = true, .check_rank = 3,
                       .srv = GL_SRV_RESERVED},
    [GL_Q_POD_LABELS] = {.id = GL_Q_POD_LABELS, .name = "pod_labels", .when = GL_QW_ALWAYS,
                         .unit = GL_QU_INFO, .labels = GL_QL_TEAM_POD, .need = GL_QN_OPTIONAL,
                         .source = GL_QS_KSM, .shard = GL_QSH_KEPT, .counts = "",
                         .no_data_named = true, .check_rank = 4, .srv = GL_SRV_OTHER},
    [GL_Q_NS_LABELS] = {.id = GL_Q_NS_LABELS, .name = "namespace_labels", .when = GL_QW_ALWAYS,
                        .unit = GL_QU_INFO, .labels = GL_QL_TEAM_NAMESPACE,
                        .need = GL_QN_OPTIONAL, .source = GL_QS_KSM, .shard = GL_QSH_KEPT,
                        .counts = "", .no_data_named = true, .check_rank = 5,
                        .srv = GL_SRV_OTHER},
    /* the allocation is counted once joined, whichever side joined it */
    [GL_Q_ALLOC_REQUESTS] = {.id = GL_Q_ALLOC_REQUESTS, .name = "alloc_requests",
                             .when = GL_QW_ENGINE_JOIN, .unit = GL_QU_REQUEST,
                             .labels = GL_QL_NODE, .need = GL_QN_REQUIRED,
                             .source = GL_QS_KSM_REQUESTS, .shard = GL_QSH_NODE,
                             .counts = "allocation", .no_data_named = true, .check_rank = 6,
                             .srv = GL_SRV_OTHER},
    [GL_Q_ALLOCATION] = {.id = GL_Q_ALLOCATION, .name = "allocation",
                         .when = GL_QW_BACKEND_JOIN, .unit = GL_QU_UNITS, .labels = GL_QL_NODE,
                         .need = GL_QN_REQUIRED, .source = GL_QS_KSM_REQUESTS,
                         .shard = GL_QSH_KEPT, .counts = "", .no_data_named = true,
                         .check_rank = 6, .srv = GL_SRV_OTHER},
    [GL_Q_NODE_LABELS] = {.id = GL_Q_NODE_LABELS, .name = "node_labels", .when = GL_QW_ALWAYS,
                          .unit = GL_QU_INFO, .labels = GL_QL_NODE, .need = GL_QN_OPTIONAL,
                          .source = GL_QS_KSM_REQUESTS, .shard = GL_QSH_KEPT, .counts = "",
                          .no_data_named = true, .check_rank = 7, .srv = GL_SRV_OTHER},
    [GL_Q_COMPUTE] = {.id = GL_Q_COMPUTE, .key = "compute.queries",
                      .field = CFG(compute_queries), .count_field = CFG(ncompute_queries),
                      .when = GL_QW_LIST, .unit = GL_QU_RATIO, .schema = GL_MQ_OTHER,
                      .labels = GL_QL_DEVICE, .need = GL_QN_OPTIONAL, .source = GL_QS_EXPORTER,
                      .shard = GL_QSH_HOST, .counts = "", .no_data_named = true,
                      .check_rank = 10, .srv = GL_SRV_COMPUTE},
    [GL_Q_MEM_LIMIT] = {.id = GL_Q_MEM_LIMIT, .key = "memory_source.limit_query",
                        .field = CFG(mem_limit_query), .when = GL_QW_CONFIGURED,
                        .unit = GL_QU_MEMORY, .schema = GL_MQ_LIMIT, .labels = GL_QL_DEVICE,
                        .need = GL_QN_OPTIONAL, .source = GL_QS_EXPORTER, .shard = GL_QSH_HOST,
                        .counts = "", .no_data_named = true, .srv = GL_SRV_OTHER,
                        .srv_refusal = "a memory limit query (HAMi)"},
    /* the exporter's device series, read as FB_FREE's (its unit and labels);
     * merged into the memory source's matrix (collect.c device_series_merge),
     * so counted as the source's */
    [GL_Q_MEM_DEVICE] = {.id = GL_Q_MEM_DEVICE, .key = "memory_source.device_query",
                         .field = CFG(mem_device_query), .when = GL_QW_CONFIGURED,
                         .unit = GL_QU_MEMORY, .schema = GL_MQ_FREE, .labels = GL_QL_DEVICE,
                         .need = GL_QN_OPTIONAL, .source = GL_QS_EXPORTER,
                         .shard = GL_QSH_HOST, .counts = NULL, .check_rank = 9,
                         .srv = GL_SRV_OTHER,
                         .srv_refusal = "a device query beside the memory source"},
    /* kube_pod_status_phase, joined with alloc_requests by the engine
     * (attribute/alloc_join.h); kube-state-metrics without a node label:
     * kept whole, not host-sharded; left out of run's missing-data error,
     * which names the device, label and allocation queries */
    [GL_Q_PHASE] = {.id = GL_Q_PHASE, .name = "pod_phase", .when = GL_QW_ENGINE_JOIN,
                    .unit = GL_QU_INFO, .labels = GL_QL_POD, .need = GL_QN_REQUIRED,
                    .source = GL_QS_KSM, .shard = GL_QSH_KEPT, .counts = "",
                    .check_rank = 8, .srv = GL_SRV_OTHER},
};

const struct gl_qrow *gl_qr_row(enum gl_qid id)
{
    return &rows[id];
}

static const char *field_str(const struct gl_config *c, size_t off)
{
    return *(char *const *)(const void *)((const char *)c + off);
}

size_t gl_qr_count(const struct gl_config *c, const struct gl_qrow *r)
{
    switch (r->when) {
    case GL_QW_ALWAYS:
        return 1;
    case GL_QW_ENGINE_JOIN:
        return !c->alloc_backend_join;
    case GL_QW_BACKEND_JOIN:
        return c->alloc_backend_join;
    case GL_QW_CONFIGURED:
        return field_str(c, r->field) != NULL;
    case GL_QW_LIST: {
        size_t n = *(const size_t *)(const void *)((const char *)c + r->count_field);
        return n < GL_QR_LIST_MAX ? n : GL_QR_LIST_MAX;
    }
    }
    return 0;
}

const char *gl_qr_name(const struct gl_config *c, const struct gl_qrow *r, size_t k)
{
    if (r->name)
        return r->name;
    if (r->when == GL_QW_LIST)
        return (*(char *const *const *)(const void *)((const char *)c + r->field))[k];
    return field_str(c, r->field);
}

const char *gl_qr_counts_name(const struct gl_config *c, const struct gl_qrow *r, size_t k)
{
    return !r->counts ? NULL : r->counts[0] ? r->counts : gl_qr_name(c, r, k);
}

int gl_qr_list(const struct gl_config *c, struct gl_qslot *out)
{
    int n = 0;
    for (int i = 0; i < GL_Q_COUNT; i++)
        for (size_t k = 0; k < gl_qr_count(c, &rows[i]); k++)
            out[n++] = (struct gl_qslot){&rows[i], k, gl_qr_name(c, &rows[i], k)};
    return n;
}

int gl_qr_pos(const struct gl_config *c, enum gl_qid id)
{
    if (!gl_qr_count(c, &rows[id]))
        return -1;
    int pos = 0;
    for (int i = 0; i < (int)id; i++)
        pos += (int)gl_qr_count(c, &rows[i]);
    return pos;
}

int gl_qr_check_list(const struct gl_config *c, struct gl_qslot *out)
{
    int n = 0, top = 0;
    for (int i = 0; i < GL_Q_COUNT; i++)
        top = rows[i].check_rank > top ? rows[i].check_rank : top;
    for (int rank = 1; rank <= top; rank++)
        for (int i = 0; i < GL_Q_COUNT; i++)
            for (size_t k = 0; rows[i].check_rank == rank && k < gl_qr_count(c, &rows[i]); k++)
                out[n++] = (struct gl_qslot){&rows[i], k, gl_qr_name(c, &rows[i], k)};
    return n;
}

bool gl_qr_required(const struct gl_config *c, const struct gl_qslot *s)
{
    return s->row->need == GL_QN_REQUIRED ||
           (s->row->need == GL_QN_CAPACITY && c->nmodel_capacity == 0);
}
