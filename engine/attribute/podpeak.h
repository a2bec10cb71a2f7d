/*
 * podpeak — the memory each pod held per step, kept per hour as a sparse
 * distribution on 1 GiB buckets with the exact peak (schema/013).
 *
 * integrate.c adds one sample per (step, device, pod) with memory; the
 * store writes the table (engine/ledger/store_peak.c). Advice reads it:
 * the hourly usage sums cannot give a peak or a percentile.
 */
#ifndef GL_PODPEAK_H
#define GL_PODPEAK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GL_PEAK_BUCKET_MIB 1024 /* the ladder's step: p99 is bounded by 1 GiB */

struct gl_peak_entry {
    int32_t hour;   /* hour index within the chunk */
    int32_t device; /* index into the rollup's devices */
    int32_t ns, pod; /* interned in the rollup's strings */
    int64_t bucket; /* ⌊MiB / 1024⌋ */
    int64_t steps;
    int64_t peak_mib;
    int64_t alloc_mib; /* the largest allocation held on the node at those steps */
    int64_t alloc_ugpu; /* ... in millionths of a GPU */
};

struct gl_peaks {
    struct gl_peak_entry *e; /* in first-insertion order */
    size_t n, cap;
    uint32_t *index; /* open addressing: 1 + entry, 0 empty */
    size_t nindex;
};

/* One step of a pod on a device: mib held (>= 0), alloc_mib and alloc_ugpu
 * its allocation on the node. */
void gl_peaks_add(struct gl_peaks *p, int32_t hour, int32_t device, int32_t ns, int32_t pod,
                  int64_t mib, int64_t alloc_mib, int64_t alloc_ugpu);
void gl_peaks_free(struct gl_peaks *p);

#endif
