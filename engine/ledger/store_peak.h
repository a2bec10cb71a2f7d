/*
 * store_peak — the ledger's side of pod_peak (schema/013_pod_peak.sql): the
 * per-step memory distribution of each pod and device per hour, written by
 * collect for advice. The reads are query.h's (gl_query_advise_*).
 */
#ifndef GL_STORE_PEAK_H
#define GL_STORE_PEAK_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "store.h"

struct gl_peak_row {
    int64_t hour;
    const char *cluster, *ns, *pod;
    int64_t device_id;
    int64_t bucket, steps, peak_mib, alloc_mib, alloc_ugpu;
};

/* Deletes the rows of cluster's hours [from, to) (before they are written
 * again: a re-pull replaces them), and unbuilds the advice's daily groups
 * of the days they touch (store_peakday.h). Every write of pod_peak must
 * follow this over its range in the same transaction: the schema has no
 * trigger on pod_peak to unbuild a day. */
enum gl_status gl_store_clear_peaks(struct gl_store *s, const char *cluster, int64_t from,
                                    int64_t to, struct gl_error *err);

/* Adds rows; a row meeting a stored one (two shards of one hour) merges:
 * steps summed, peaks by max. */
enum gl_status gl_store_put_peaks(struct gl_store *s, const struct gl_peak_row *rows, size_t n,
                                  struct gl_error *err);

#endif
