/* podpeak — per-hour memory distribution of each pod on each device. */
#include "podpeak.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static uint64_t key_hash(int32_t hour, int32_t dev, int32_t ns, int32_t pod, int64_t bucket)
{
    uint64_t h = 1469598103934665603ull;
    const int64_t k[] = {hour, dev, ns, pod, bucket};
    for (size_t i = 0; i < 5; i++)
        h = (h ^ (uint64_t)k[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static bool same(const struct gl_peak_entry *e, int32_t hour, int32_t dev, int32_t ns,
                 int32_t pod, int64_t bucket)
{
    return e->hour == hour && e->device == dev && e->ns == ns && e->pod == pod &&
           e->bucket == bucket;
}

static void reindex(struct gl_peaks *p)
{
    p->nindex = p->nindex ? p->nindex * 2 : 1024;
    free(p->index);
    p->index = gl_xcalloc(p->nindex, sizeof *p->index);
    for (size_t i = 0; i < p->n; i++) {
        const struct gl_peak_entry *e = &p->e[i];
        size_t s = key_hash(e->hour, e->device, e->ns, e->pod, e->bucket) & (p->nindex - 1);
        while (p->index[s])
            s = (s + 1) & (p->nindex - 1);
        p->index[s] = (uint32_t)(i + 1);
    }
}

void gl_peaks_add(struct gl_peaks *p, int32_t hour, int32_t device, int32_t ns, int32_t pod,
                  int64_t mib, int64_t alloc_mib, int64_t alloc_ugpu)
{
    int64_t bucket = mib / GL_PEAK_BUCKET_MIB;
    if (2 * (p->n + 1) > p->nindex)
        reindex(p);
    size_t s = key_hash(hour, device, ns, pod, bucket) & (p->nindex - 1);
    for (; p->index[s]; s = (s + 1) & (p->nindex - 1)) {
        struct gl_peak_entry *e = &p->e[p->index[s] - 1];
        if (same(e, hour, device, ns, pod, bucket)) {
            e->steps++; /* at most the chunk's steps: no overflow */
            if (mib > e->peak_mib)
                e->peak_mib = mib;
            if (alloc_mib > e->alloc_mib)
                e->alloc_mib = alloc_mib;
            if (alloc_ugpu > e->alloc_ugpu)
                e->alloc_ugpu = alloc_ugpu;
            return;
        }
    }
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 256;
        p->e = gl_xrealloc(p->e, p->cap * sizeof *p->e);
    }
    p->e[p->n] = (struct gl_peak_entry){hour, device, ns, pod, bucket, 1, mib, alloc_mib,
                                        alloc_ugpu};
    p->index[s] = (uint32_t)(++p->n);
}

void gl_peaks_free(struct gl_peaks *p)
{
    free(p->e);
    free(p->index);
    memset(p, 0, sizeof *p);
}
