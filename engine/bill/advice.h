/*
 * advice — right-sizing and consolidation advice over a period, from the
 * per-step memory distribution of schema/013 (pod_peak). Writes nothing
 * and changes no bill: renderers (engine/render/advise.c, report.c) are
 * functions of struct gl_advice.
 *
 * Right-sizing, per workload (the pod's owner from pod_owner, else the pod
 * itself), GPU model and allocation: the peak MiB held in any step (exact),
 * p99 bounded by its 1 GiB bucket, and the smallest allocation at least
 * need = ⌈peak × (100 + advise.headroom) / 100⌉ MiB and below the current
 * one among: MIG profiles of the same model (measured in the fleet, or
 * allocation.mig_profiles_mib, then assumed supported by the model), the
 * node's time-slicing share (capacity ÷ allocation.replicas of the node,
 * floored), a smaller whole-GPU model seen in the fleet. None: right-sized,
 * nothing recommended. Saving = the allocation held at the current model's
 * prices − the recommended allocation at the target model's prices, over
 * the steps the pods held memory (steps × collection.step), each price
 * entry's MiB·s rounded half-even once, as an invoice line is.
 *
 * Consolidation, per cluster, node and whole-GPU model and hour: devices in
 * use vs bound = ⌈Σ the pods' hourly peaks × (100 + headroom) / 100 ÷
 * capacity⌉, a bin-packing LOWER bound (a packing may need more); the
 * GPU-hours above it, and their full capacity at the model's price.
 */
#ifndef GL_ADVICE_H
#define GL_ADVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "money.h"
#include "price.h"
#include "store.h"
#include "timeutil.h"

enum gl_advise_to { GL_ADV_NONE, GL_ADV_MIG, GL_ADV_SHARE, GL_ADV_MODEL };

struct gl_advice_line {
    char *cluster, *ns, *team, *wkind, *wname; /* wkind "Pod" when the pod has no owner */
    char *model, *profile, *hostname;          /* profile "" unless a MIG slice */
    int64_t capacity_mib;                      /* the device's (the slice's for MIG) */
    int64_t alloc_mib;                         /* the allocation held, 0 when none */
    int64_t alloc_ugpu;                        /* ... in millionths of a GPU */
    int64_t peak_mib, p99_bound_mib;           /* p99 ≤ p99_bound_mib (1 GiB buckets) */
    int64_t steps, pods;
    int64_t need_mib;
    enum gl_advise_to to;
    char *to_name;    /* "1g.10gb", "1/4 of gpu-n1", a model name */
    char *to_model;
    int64_t to_mib;
    char *assumes;    /* what the line assumes, in words */
    int64_t held_mib_s, to_mib_s, unpriced_steps;
    gl_i128 saving;   /* minor units */
};

struct gl_advice_node {
    char *cluster, *hostname, *model;
    int64_t capacity_mib;
    int64_t gpu_hours;       /* device-hours in use (a device with any pod step) */
    int64_t bound_gpu_hours; /* Σ per hour of the lower bound */
    int64_t hours, max_devices;
    int64_t unpriced_hours;
    gl_i128 saving;          /* the freed GPU-hours' capacity at the model's price */
};

struct gl_advice {
    char period[8];
    int headroom_pct;
    const struct gl_basis *basis; /* basis.h */
    const char *currency;
    int minor_digits;
    int64_t step;
    int64_t missing_pod_hours; /* used memory without peak rows (server mode, older data) */
    struct gl_advice_line *lines; /* sorted by cluster, namespace, workload */
    size_t nlines;
    struct gl_advice_node *nodes;
    size_t nnodes;
    gl_i128 total_saving, total_node_saving;
};

enum gl_status gl_advise_build(const struct gl_config *c, struct gl_store *s,
                               const struct gl_price_table *prices, const struct gl_period *p,
                               struct gl_advice *out, struct gl_error *err);
/* The same inside a read snapshot the caller holds (the statement's). */
enum gl_status gl_advise_read(const struct gl_config *c, struct gl_store *s,
                              const struct gl_price_table *prices, const struct gl_period *p,
                              struct gl_advice *out, struct gl_error *err);
void gl_advice_free(struct gl_advice *a);

#endif
