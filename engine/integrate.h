/*
 * integrate — per step and per device attribution, rolled up by hour.
 *
 * Reads: the parsed matrices of one chunk (memory per pod and device,
 * FB_FREE, FB_RESERVED, kube_pod_labels, kube_namespace_labels).
 * Writes: a gl_rollup of exact integer MiB·s keyed (hour, device, namespace,
 * pod, team, kind), following SPEC §3 and §9 in process attribution mode:
 * duplicate (device, pod) series merge by max; series without workload
 * identity are device totals; capacity = used + free + reserved.
 */
#ifndef GL_INTEGRATE_H
#define GL_INTEGRATE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "parse.h"
#include "util.h"

enum gl_kind {
    GL_KIND_MEMORY_USED,  /* per pod, billed */
    GL_KIND_CAPACITY,     /* per device */
    GL_KIND_RESERVED,     /* per device: driver-reserved (overhead) */
    GL_KIND_UNATTRIBUTED, /* per device: used by no pod (overhead) */
    GL_KIND_IDLE,         /* per device: capacity - overhead - billed, >= 0 */
    GL_KIND_EXCESS,       /* per device: billed + overhead beyond capacity */
    GL_KIND_COUNT
};
extern const char *const gl_kind_names[GL_KIND_COUNT];

struct gl_chunk_input {
    const struct gl_matrix *memory;     /* memory source, per pod and device */
    const struct gl_matrix *fb_free;    /* may be NULL */
    const struct gl_matrix *fb_reserved;/* may be NULL */
    const struct gl_matrix *pod_labels; /* may be NULL */
    const struct gl_matrix *ns_labels;  /* may be NULL */
};

struct gl_chunk_device {
    int32_t cluster, uuid, gpu_i_id, profile, model, hostname; /* interned */
    int64_t max_capacity_mib;
    int64_t first_seen, last_seen;
};

struct gl_rollup_entry {
    int32_t hour;   /* hour index within the chunk */
    int32_t device; /* index into devices */
    int32_t ns, pod, team; /* interned ("" for device rows) */
    int32_t kind;
    int64_t mib_s;
    int32_t estimated;
    int32_t used;   /* slot in use */
};

struct gl_rollup {
    int64_t start, step;
    size_t nsteps, nhours;
    struct gl_intern *strings;
    struct gl_chunk_device *devices;
    size_t ndevices;
    struct gl_rollup_entry *slots; /* hash table; iterate and skip !used */
    size_t nslots, nentries;
    int64_t *samples_per_hour;     /* memory samples seen per hour */
    size_t bad_samples;
};

/* Fills r (owned by the caller, gl_rollup_free) from in. */
enum gl_status gl_integrate(const struct gl_config *c, const struct gl_chunk_input *in,
                            struct gl_rollup *r, struct gl_error *err);
void gl_rollup_free(struct gl_rollup *r);

#endif
