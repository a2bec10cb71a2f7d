/*
 * work — units of work per pod and hour from the work counters
 * (work.counters, work.presets), for the cost per unit of work.
 *
 * Reads: each counter as a range query on the collection's step, one UTC
 * day at a time, from an hour before the day (the sample before the
 * window's first one). Writes: work_units rows (schema/012), the window's
 * hours replaced at once, after every counter was read and checked: a
 * refused value leaves the database as it was.
 *
 * The increase is exact and observed only: per series, the sum of the
 * differences between consecutive samples, a decrease being a restart
 * whose new value counts from 0 (Prometheus' increase rule), each
 * difference in the hour of its later sample; nothing is extrapolated to
 * the window's edges (a bill counts the work seen, extrapolation would
 * invent some). A difference across a gap (steps without a sample) is
 * still counted, the counter being cumulative, and the row's gaps says
 * how many. A value that is negative, not a whole number or not below
 * 2^53 is refused, naming the counter, the series and the time.
 */
#ifndef GL_WORK_H
#define GL_WORK_H

#include <stdint.h>

#include "config.h"
#include "error.h"
#include "fetch.h"
#include "store.h"
#include "util.h"

/* Collects cluster's units of work in the hours [from, to) into s (nothing
 * when s is NULL or no counter is configured). */
enum gl_status gl_work_collect(const struct gl_config *c, const struct gl_cluster *cluster,
                               struct gl_store *s, int64_t from, int64_t to,
                               struct gl_error *err);

/* `check`: each work counter of cluster as an instant query at at, one
 * line per counter into notes ("work counter NAME N series", NO DATA with
 * its likely cause when none). A counter whose series lack the configured
 * namespace or pod label fails with GL_ERR_CONFIG naming it and a series
 * (collect would refuse it); the other counters still get their lines. A
 * backend failure is GL_ERR_PROM. */
enum gl_status gl_work_check(const struct gl_config *c, const struct gl_cluster *cluster,
                             struct gl_prom *prom, int64_t at, struct gl_buf *notes,
                             struct gl_error *err);

#endif
