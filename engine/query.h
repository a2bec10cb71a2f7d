/*
 * query — the typed reads of the ledger (the store's read side).
 *
 * Reads: usage, device and collected_hour rows of one period (SQL does the
 * grouping and summing). Every function here fills plain structs; no
 * sqlite3 handle or statement leaves store.c and query.c. A SUM beyond
 * int64 is SQLite's "integer overflow", turned into an error naming the
 * period and the team, cluster, model and kind (gl_usage_fail).
 *
 * Adding a read: write the SQL and a function filling a struct here, with
 * the struct in this header; callers (statement.c) never see SQL.
 */
#ifndef GL_QUERY_H
#define GL_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "store.h"
#include "timeutil.h"

/* The UTC days the charts span: from the first to the last hour of the
 * period that was collected or has usage (every team shares this axis). */
struct gl_day_axis {
    int64_t first; /* UTC midnight */
    size_t n;
};

enum gl_status gl_query_axis(struct gl_store *s, const struct gl_period *p,
                             struct gl_day_axis *ax, struct gl_error *err);

/* One UTC day of a team: MiB·s. idle and overhead come from the invoice's
 * share lines (statement.c), the rest from usage. */
struct gl_day_row {
    int64_t used, allocated, waste, idle, overhead;
};

struct gl_pod_row {
    char *cluster, *ns, *pod;
    int64_t used, allocated, waste;
    int estimated;
};

/* What one team's page shows besides its invoice. */
struct gl_team_usage {
    struct gl_day_row *days; /* axis.n entries */
    struct gl_pod_row *pods;
    size_t npods;
    int64_t pods_total; /* pods with any row, of which npods are listed */
    int64_t used, allocated, waste;
    bool has_shares;
    int64_t idle_share, overhead_share; /* Σ of the invoice's share lines */
};

/* The team's daily memory_used / allocated / reserved_unused sums and its
 * top max_pods pods into *u (days sized by ax); free with
 * gl_team_usage_free (also on failure: nothing to free then). */
enum gl_status gl_query_team_usage(struct gl_store *s, const struct gl_period *p,
                                   const char *team, const struct gl_day_axis *ax,
                                   size_t max_pods, struct gl_team_usage *u,
                                   struct gl_error *err);
void gl_team_usage_free(struct gl_team_usage *u);

/* The fleet: per cluster and GPU model the MiB·s of capacity, memory_used,
 * reserved_unused_billed, reserved, unattributed, idle, excess; and the
 * billed memory (memory_used + reserved_unused_billed) of each team on it. */
enum { GL_F_CAP, GL_F_USED, GL_F_RUB, GL_F_RESERVED, GL_F_UNATTR, GL_F_IDLE, GL_F_EXCESS,
       GL_F_N };

struct gl_fleet_team {
    int team;  /* index into gl_fleet.teams */
    int64_t q; /* memory_used + reserved_unused_billed, MiB·s */
};

struct gl_fleet_model {
    char *cluster, *model;
    int64_t v[GL_F_N];
    struct gl_fleet_team *teams;
    size_t nteams;
};

/* A device seen in the period (pseudo-devices of nodes left out), with its
 * MiB·s; unknown: steps with pods but no memory metrics, or no capacity. */
struct gl_device_row {
    char *cluster, *uuid, *gpu_i_id, *profile, *model, *node;
    char *device; /* uuid, or uuid/gpu_i_id for a MIG instance */
    int64_t capacity, used, reserved, unattributed, idle, excess;
    bool unknown;
};

struct gl_fleet {
    struct gl_fleet_model *m;
    size_t n;
    char **teams; /* distinct team ids with billed memory, sorted */
    size_t nteams;
    struct gl_device_row *dev; /* every device, by cluster, node, uuid, gpu_i_id */
    size_t ndev;
};

enum gl_status gl_query_fleet(struct gl_store *s, const struct gl_period *p, struct gl_fleet *fl,
                              struct gl_error *err);
void gl_fleet_free(struct gl_fleet *fl);

#endif
