/*
 * query_dayfig — the advice's count of pod-hours without peak data and the
 * fleet's GPU sizes (gl_query_advise_missing, gl_query_advise_sizes in
 * query.h): a built day's from the figures stored when it was built
 * (schema/014: pod_peak_day_figures, pod_peak_day_size), any other hour's
 * from its rows. The SQL below is both the build's (store_peakday.c, one
 * cluster and day) and the rows' read, so a built day reads as its rows.
 */
#ifndef GL_QUERY_DAYFIG_H
#define GL_QUERY_DAYFIG_H

#include "kinds.h"

/* The distinct pod-hours (hour, cluster, namespace, pod) with used memory
 * and no pod_peak row, of the rows that WHERE-clause x selects (alias u). */
#define GL_DAYFIG_MISSING(x)                                                                   \
    "SELECT count(*) FROM (SELECT DISTINCT u.hour, u.cluster, u.namespace, u.pod"              \
    " FROM usage u WHERE " x " AND u.kind = '" GL_K_MEMORY_USED "' AND u.pod <> ''"            \
    "  AND NOT EXISTS (SELECT 1 FROM pod_peak k WHERE k.cluster = u.cluster"                   \
    "   AND k.hour = u.hour AND k.namespace = u.namespace AND k.pod = u.pod))"

/* The GPU sizes (model, profile, capacity) of the device_model_hour rows
 * (alias m, device d) that WHERE-clause x selects: real devices only (an
 * allocation pseudo-device's uuid is "node:<host>"), capacity known. CROSS
 * JOIN keeps m first, read by its hour range: given a cluster, SQLite would
 * otherwise walk each of the cluster's devices through every hour it has
 * (device_model_hour_device), a month of rows for each day built. */
#define GL_DAYFIG_SIZES(x)                                                                     \
    "SELECT DISTINCT m.model, d.gpu_i_profile, m.max_capacity_mib"                             \
    " FROM device_model_hour m CROSS JOIN device d ON d.id = m.device_id"                      \
    " WHERE " x " AND m.max_capacity_mib > 0 AND d.uuid NOT LIKE 'node:%'"

#endif
