/*
 * kinds — what a stored usage row measures (usage.kind and the aggregates'
 * kind column): one table of names. C code uses enum gl_kind and
 * gl_kind_names; SQL text in the ledger names a kind through its GL_K_*
 * string (`"kind = '" GL_K_IDLE "'"`), so a misspelt kind is a compile
 * error, not a query that silently matches nothing. The schema files'
 * triggers (schema/004_daily.sql) spell the names they sum once more: they
 * are migration history and cannot change.
 */
#ifndef GL_KINDS_H
#define GL_KINDS_H

#define GL_K_MEMORY_USED                   "memory_used"
#define GL_K_ALLOCATED                     "allocated"
#define GL_K_ALLOCATED_GPU                 "allocated_gpu"
#define GL_K_RESERVED_UNUSED               "reserved_unused"
#define GL_K_RESERVED_UNUSED_BILLED        "reserved_unused_billed"
#define GL_K_ANOMALY_UNALLOCATED           "anomaly_unallocated"
#define GL_K_ANOMALY_EXCESS_DEVICES        "anomaly_excess_devices"
#define GL_K_BUSY_PPM                      "busy_ppm"
#define GL_K_BUSY_STEPS                    "busy_steps"
#define GL_K_CAPACITY                      "capacity"
#define GL_K_RESERVED                      "reserved"
#define GL_K_UNATTRIBUTED                  "unattributed"
#define GL_K_IDLE                          "idle"
#define GL_K_EXCESS                        "excess"
#define GL_K_UNKNOWN_STEPS                 "unknown_steps"
#define GL_K_DEVICE_RESERVED_UNUSED_BILLED "device_reserved_unused_billed"
#define GL_K_PENDING_GPU                   "pending_gpu"

enum gl_kind {
    /* per pod (MiB·s unless said) */
    GL_KIND_MEMORY_USED,
    GL_KIND_ALLOCATED,
    GL_KIND_ALLOCATED_GPU,          /* micro-GPU-seconds */
    GL_KIND_RESERVED_UNUSED,        /* allocated − used, > 0: waste */
    GL_KIND_RESERVED_UNUSED_BILLED, /* the same, billed under basis max */
    GL_KIND_ANOMALY_UNALLOCATED,
    GL_KIND_ANOMALY_EXCESS_DEVICES,
    /* per team and device */
    GL_KIND_BUSY_PPM,               /* Σ busy ratio × 10^6 */
    GL_KIND_BUSY_STEPS,
    /* per device */
    GL_KIND_CAPACITY,
    GL_KIND_RESERVED,
    GL_KIND_UNATTRIBUTED,
    GL_KIND_IDLE,
    GL_KIND_EXCESS,
    GL_KIND_UNKNOWN_STEPS,          /* steps with pods but no memory metrics */
    GL_KIND_DEVICE_RU_BILLED,       /* billed reserved-unused placed on this device
                                     * (taken from its idle, or beyond it: excess) */
    /* per pod, on its node's pseudo-device (or the nameless node's while
     * unscheduled): GPUs requested while Pending, micro-GPU-seconds as
     * allocated_gpu. Demand, never billed: no invoice line reads it. */
    GL_KIND_PENDING_GPU,
    GL_KIND_COUNT
};
extern const char *const gl_kind_names[GL_KIND_COUNT];

#endif
