/*
 * collect — one collection window: fetch → parse → integrate → store.
 *
 * The window [from, to) is widened to whole UTC hours and walked in chunks
 * of collection.chunk_hours; each chunk is one SQLite transaction that
 * replaces every row of its hours, so re-collecting never double counts and
 * a run killed mid-way leaves whole chunks or nothing.
 *
 * A chunk that would replace stored hours with clearly less (docs/specification.md "Integrity") is
 * refused with GL_ERR_PARTIAL unless allowed. A response over
 * prometheus.max_response_bytes makes the chunk smaller: fewer hours, then
 * shards of one hour by host, all shards stored in one transaction.
 */
#ifndef GL_COLLECT_H
#define GL_COLLECT_H

#include <stdint.h>

#include "config.h"
#include "error.h"
#include "parse.h"
#include "store.h"

struct gl_collect_stats {
    int64_t chunks;
    int64_t hours;
    int64_t samples;       /* memory samples integrated */
    int64_t query_samples; /* every query's samples in the stored hours */
    int64_t bad_samples;
    int64_t skipped[GL_SKIP_N]; /* bad_samples by reason (gl_skip_names) */
    int64_t bytes;
    int64_t copy_warnings;
    /* Input: advance the cluster's watermark with every stored chunk (run). */
    bool advance_watermark;
    /* Input: store hours even when they hold clearly less than before
     * (collect --allow-shrink; run reads run.allow_shrink itself). */
    bool allow_shrink;
    /* Findings for `check` (may be NULL): one human-readable line each. */
    struct gl_intern *notes;
};

/* Collects [from, to) into s; with s == NULL nothing is stored (a dry run
 * for `check`, which reads stats->notes). */
enum gl_status gl_collect(const struct gl_config *c, const struct gl_cluster *cluster,
                          struct gl_store *s, int64_t from, int64_t to,
                          struct gl_collect_stats *stats, struct gl_error *err);

#endif
