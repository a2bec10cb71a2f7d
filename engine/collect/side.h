/*
 * side — the side collectors: what a collection gathers beside the
 * attributed usage, from queries of its own, each with its `check` probe.
 * One row each, defined in its own file: `owner` (owner.c: pods' workloads
 * for the reports; its probe compares DRA claims and the device query) and
 * `work` (work.c: units of work for the cost per unit of work; its probe
 * asks each work counter). collect walks the rows around the usage and
 * `check` walks them after the exporter schema test.
 *
 * Adding one: a file collect/<name>.c holding its row (its collect and
 * check functions static there), one entry of side_collectors[] (side.c),
 * the file in meson.build.
 */
#ifndef GL_SIDE_H
#define GL_SIDE_H

#include <stdint.h>

#include "config.h"
#include "error.h"
#include "fetch.h"
#include "store.h"
#include "util.h"

/* When a row collects, against the usage of the same window. */
enum gl_side_when {
    /* first: a refusal stores nothing of the window, usage included */
    GL_SIDE_BEFORE_USAGE,
    /* once the usage is stored: only a window collected whole gets them */
    GL_SIDE_AFTER_USAGE,
};

struct gl_side_collector {
    enum gl_side_when when;
    /* Collects cluster's figures of [from, to) into s (nothing when s is
     * NULL: a dry run). */
    enum gl_status (*collect)(const struct gl_config *c, const struct gl_cluster *cluster,
                              struct gl_store *s, int64_t from, int64_t to,
                              struct gl_error *err);
    /* `check` at instant at: one line per finding appended to notes; only
     * what collect would refuse, or a backend failure, fails. */
    enum gl_status (*check)(const struct gl_config *c, const struct gl_cluster *cluster,
                            struct gl_prom *prom, int64_t at, struct gl_buf *notes,
                            struct gl_error *err);
};

/* The rows, one per file. */
extern const struct gl_side_collector gl_side_owner, gl_side_work;

/* Runs the collect of every row collecting when, in table order; the first
 * failure ends the walk. */
enum gl_status gl_side_collect(enum gl_side_when when, const struct gl_config *c,
                               const struct gl_cluster *cluster, struct gl_store *s,
                               int64_t from, int64_t to, struct gl_error *err);

/* Runs the check of every row in table order; the first failure ends the
 * walk (the lines already appended stay). */
enum gl_status gl_side_check(const struct gl_config *c, const struct gl_cluster *cluster,
                             struct gl_prom *prom, int64_t at, struct gl_buf *notes,
                             struct gl_error *err);

#endif
