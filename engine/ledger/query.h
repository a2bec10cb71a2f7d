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
 * the struct in this header; callers (statement.c) never see SQL. In
 * query.c a read is one read_rows call (its SQL, parameters and what a
 * failure names) and a function per row.
 */
#ifndef GL_QUERY_H
#define GL_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "invoice_model.h"
#include "money.h"
#include "store.h"
#include "timeutil.h"

/* A failed step of a query summing period p's usage: SQLite's "integer
 * overflow" (a SUM beyond int64: SQLite checks every integer SUM) becomes a
 * runtime error naming the period and the team, cluster, model and kind
 * whose MiB·s pass 2^63 (located with TOTAL(), a float used for naming
 * only); any other failure is gl_store_fail's. */
enum gl_status gl_usage_fail(struct gl_store *s, const struct gl_period *p, const char *what,
                             struct gl_error *err);

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
    int64_t rub; /* billed reserved-unused placed on the device (docs/specification.md "Arithmetic": excess per device) */
    bool unknown;
    int64_t id;
    /* the GPU models it reported in the period when more than one (a model
     * change: each hour is priced at its own), in order of their first hour */
    char **models;
    int64_t *model_from; /* that first hour */
    size_t nmodels;
};

struct gl_fleet {
    struct gl_fleet_model *m;
    size_t n;
    char **teams; /* distinct team ids with billed memory, sorted */
    size_t nteams;
    struct gl_device_row *dev; /* every device, by cluster, node, uuid, gpu_i_id */
    size_t ndev;
};

/* The devices of cluster whose stored hours name more than one GPU model
 * (schema 010): fn per device and model with the model's first hour, by
 * device then hour. */
enum gl_status gl_query_model_changes(struct gl_store *s, const char *cluster,
                                      void (*fn)(void *ctx, const char *device,
                                                 const char *model, int64_t from),
                                      void *ctx, struct gl_error *err);

enum gl_status gl_query_fleet(struct gl_store *s, const struct gl_period *p, struct gl_fleet *fl,
                              struct gl_error *err);
void gl_fleet_free(struct gl_fleet *fl);

/* Each distinct (GPU model, hour) with something to bill (memory used,
 * billed reserved-unused, idle, overhead), by model then hour: fn is
 * called with each until it returns non-zero (that status is returned). */
enum gl_status gl_query_billable_hours(struct gl_store *s,
                                       enum gl_status (*fn)(void *ctx, const char *model,
                                                            int64_t hour, struct gl_error *err),
                                       void *ctx, struct gl_error *err);

/* One grouped row of a period's usage; which fields are set depends on
 * the read. The strings are borrowed: valid only during the callback. */
struct gl_usage_row {
    const char *team, *cluster, *model;
    int kind;     /* enum gl_line_kind or enum gl_info_kind */
    int64_t hour; /* an hour, or a UTC day (gl_query_team_info) */
    int64_t a, b;
    int estimated;
};
/* Called per row; a non-zero status stops the read and is returned. */
typedef enum gl_status (*gl_usage_fn)(void *ctx, const struct gl_usage_row *r,
                                      struct gl_error *err);

/* What is billed per (team, cluster, model, line kind, hour), ordered so:
 * memory_used and reserved_unused_billed of each team (kind
 * GL_LINE_MEMORY_USED / GL_LINE_RESERVED_UNUSED), and when platform_team
 * is not NULL the devices' idle and overhead as that team's
 * GL_LINE_IDLE_SHARE / GL_LINE_OVERHEAD_SHARE. a = MiB·s. */
enum gl_status gl_query_billed(struct gl_store *s, const struct gl_period *p,
                               const char *platform_team, gl_usage_fn fn, void *ctx,
                               struct gl_error *err);

/* Idle (a) and overhead (b: driver-reserved + unattributed) MiB·s per
 * (cluster, model, hour), ordered so. */
enum gl_status gl_query_idle(struct gl_store *s, const struct gl_period *p, gl_usage_fn fn,
                             void *ctx, struct gl_error *err);

/* Information per (team, cluster, model, kind, UTC day), ordered so; a =
 * MiB·s (waste, allocated), micro-GPU-seconds (allocated GPUs), Σ busy ppm
 * or device steps. */
enum gl_info_kind {
    GL_INFO_ALLOCATED,
    GL_INFO_ALLOCATED_GPU,
    GL_INFO_BUSY_PPM,
    GL_INFO_BUSY_STEPS,
    GL_INFO_WASTE,
};
enum gl_status gl_query_team_info(struct gl_store *s, const struct gl_period *p, gl_usage_fn fn,
                                  void *ctx, struct gl_error *err);

/* Largest measured full-GPU capacity (MiB) of a model, 0 when unknown. */
int64_t gl_query_model_capacity(struct gl_store *s, const char *model);

/* Whether cluster has an hour before `before` with stored memory samples
 * (metrics.c: a cluster that had data and now returns none). */
enum gl_status gl_query_cluster_had_samples(struct gl_store *s, const char *cluster,
                                            int64_t before, bool *had, struct gl_error *err);
/* ---- demand waiting: GPUs requested by Pending pods ---- */

/* Per team, cluster and GPU model ("unknown" for an unscheduled pod's
 * request): micro-GPU-seconds requested while Pending (kind pending_gpu). */
struct gl_pending_key {
    char *team, *cluster, *model;
    int64_t gpu_us;
};

/* A pod's wait within the period: its first and last Pending sample
 * (instants), waited = last − first (the store keeps instants, not the
 * step), and what it requested. */
struct gl_pending_pod {
    char *cluster, *ns, *pod, *team;
    int64_t first_seen, last_seen, waited_s, gpu_us;
};

struct gl_pending {
    struct gl_pending_key *k; /* by team, cluster, model */
    size_t nk;
    struct gl_pending_pod *p; /* the longest waits first (then GPU time, cluster, pod) */
    size_t np;
    int64_t pods;             /* pods that waited, of which np are listed */
};

/* Period p's GPUs requested while Pending and its max longest waits. Free with
 * gl_pending_free (also after a failure). The waits are read from the
 * hourly usage rows: a pruned month keeps its sums, not its waits. */
enum gl_status gl_query_pending(struct gl_store *s, const struct gl_period *p, size_t max,
                                struct gl_pending *out, struct gl_error *err);
/* The same for the fleet (when fleet is not NULL) and each of
 * teams[0..nteams) at once, from one pass over the period's rows (the
 * pages show both): outs[i] gets team i's keys, its max longest waits (in
 * the fleet's order) and its pods that waited. */
enum gl_status gl_query_team_pending(struct gl_store *s, const struct gl_period *p,
                                     const char *const *teams, size_t nteams, size_t max,
                                     struct gl_pending *fleet, struct gl_pending *outs,
                                     struct gl_error *err);
void gl_pending_free(struct gl_pending *x);

/* ---- the reports' workloads, trend and waste in money ---- */

/* A workload of a team: the pods with one owner (pod_owner, schema/005),
 * or a pod without one as its own workload (kind "Pod"). MiB·s. */
struct gl_workload_row {
    char *cluster, *ns, *kind, *name;
    int64_t used, allocated, waste;
    int64_t pods; /* distinct pods folded in */
    int estimated;
};

struct gl_team_workloads {
    struct gl_workload_row *w;
    size_t n;
    int64_t total; /* workloads with any row, of which n are listed */
};

/* The team's top max workloads of period p by memory used (then
 * allocated, cluster, namespace, kind, name); free with
 * gl_team_workloads_free (also after a failure). */
enum gl_status gl_query_team_workloads(struct gl_store *s, const struct gl_period *p,
                                       const char *team, size_t max,
                                       struct gl_team_workloads *out, struct gl_error *err);
void gl_team_workloads_free(struct gl_team_workloads *w);

/* One earlier month of a team: memory_used MiB·s in the month's hours
 * and, when the month is closed, its frozen total (minor units, the sum of
 * its frozen rows: charged and corrections). */
struct gl_trend_row {
    char period[8]; /* YYYY-MM */
    int64_t used;
    bool closed;
    gl_i128 total_minor;
};

/* The up to max months before p with usage or a frozen invoice of team,
 * oldest first, into rows (max entries); *n receives how many. */
enum gl_status gl_query_team_trend(struct gl_store *s, const struct gl_period *p,
                                   const char *team, size_t max, struct gl_trend_row *rows,
                                   size_t *n, struct gl_error *err);

/* The same of each of teams[0..nteams) at once (a statement's pages): team
 * i's rows into rows[i * max ...] (nteams * max entries), their number into
 * n[i]. Each month shown is read once for all the teams that show it, and
 * only for them (query.c). On failure every n[i] is 0. */
enum gl_status gl_query_trends(struct gl_store *s, const struct gl_period *p,
                               const char *const *teams, size_t nteams, size_t max,
                               struct gl_trend_row *rows, size_t *n, struct gl_error *err);

/* The team's reserved-unused MiB·s of period p per (cluster, model, hour),
 * ordered so; fn gets team, cluster, model, hour and a = MiB·s. */
enum gl_status gl_query_team_waste_hours(struct gl_store *s, const struct gl_period *p,
                                         const char *team, gl_usage_fn fn, void *ctx,
                                         struct gl_error *err);

/* ---- what a period's collection holds (close.c, the commands) ---- */

/* An hour of cluster in [from, to) as stored: samples (0: the backend had
 * no data; -1: pruned), or refused (schema 009 refused_hour: its last
 * collection was refused or failed, reason "shrink" or "backend"). Calls
 * fn in hour order, for the collected hours and then for the refused ones
 * (refused = true; samples 0). */
typedef enum gl_status (*gl_hour_fn)(void *ctx, int64_t hour, int64_t samples, bool refused,
                                     const char *reason, struct gl_error *err);
enum gl_status gl_query_cluster_hours(struct gl_store *s, const char *cluster, int64_t from,
                                      int64_t to, gl_hour_fn fn, void *ctx,
                                      struct gl_error *err);

/* Whether any cluster has a collected hour in period p. */
enum gl_status gl_query_period_collected(struct gl_store *s, const struct gl_period *p,
                                         bool *any, struct gl_error *err);

/* The first and last hour collected by any cluster, and the first and last
 * closed period (YYYY-MM, "" when none): what a period that holds nothing
 * is told about. */
struct gl_data_span {
    bool any_hour;
    int64_t first_hour, last_hour;
    char first_closed[8], last_closed[8];
};
enum gl_status gl_query_data_span(struct gl_store *s, struct gl_data_span *out,
                                  struct gl_error *err);

/* ---- closed periods (close.c) ---- */

/* When period (YYYY-MM) was closed (unix seconds), 0 when it is open. */
enum gl_status gl_query_closed_at(struct gl_store *s, const char *period, int64_t *closed_at,
                                  struct gl_error *err);

/* Whether period (YYYY-MM) is closed. */
enum gl_status gl_query_is_closed(struct gl_store *s, const char *period, bool *closed,
                                  struct gl_error *err);

/* One frozen_row: a FOCUS key of a closed period with its exact figures.
 * Strings borrowed (valid during the callback) when read. */
struct gl_frozen_row {
    const char *corrected_period; /* "" or the YYYY-MM a correction row corrects */
    const char *team, *cluster, *model;
    int kind;                     /* enum gl_line_kind */
    const char *price_id;         /* as shown (file:row) */
    const char *price_key;        /* pattern@valid_from */
    int64_t day;
    const char *unit_price;       /* per GB-hour, 12 decimals */
    int64_t mib_s, billed_minor, gbh_nano;
};
typedef enum gl_status (*gl_frozen_row_fn)(void *ctx, const struct gl_frozen_row *r,
                                           struct gl_error *err);

/* The charged rows frozen by closing period (corrections == NULL), or the
 * correction rows of period frozen by the closed periods after it and
 * before corrections (exclusive). */
enum gl_status gl_query_frozen_rows(struct gl_store *s, const char *period,
                                    const char *corrections, gl_frozen_row_fn fn, void *ctx,
                                    struct gl_error *err);

/* The frozen FOCUS CSV of a closed period (malloc'd; GL_ERR_STATE when
 * period is not closed). */
enum gl_status gl_query_frozen_focus(struct gl_store *s, const char *period, char **csv,
                                     struct gl_error *err);

/* Calls fn for each frozen invoice of a closed period (team NULL = all),
 * by team id. */
enum gl_status gl_query_frozen_invoices(struct gl_store *s, const char *period,
                                        const char *team,
                                        void (*fn)(void *ctx, const char *team,
                                                   const char *json, const char *md),
                                        void *ctx, struct gl_error *err);

/* ---- the output state (outstate.c) ---- */

/* The data version of period (0 when nothing was ever stored). */
enum gl_status gl_query_data_version(struct gl_store *s, const char *period, int64_t *v,
                                     struct gl_error *err);

/* Every device row as period p's outputs see it: cluster, uuid, gpu_i_id,
 * gpu_i_profile, model, hostname, max_capacity_mib and whether it was seen
 * in p (always 0 for a node's pseudo-device), as text, by cluster, uuid,
 * gpu_i_id; fn gets the 8 columns (borrowed). */
enum gl_status gl_query_devices_seen(struct gl_store *s, const struct gl_period *p,
                                     void (*fn)(void *ctx, const char *const cols[8]), void *ctx,
                                     struct gl_error *err);

/* What an output folder's period was last written from (owned strings:
 * gl_output_state_clear). */
struct gl_output_state {
    int64_t data_version;
    char *closed, *devices, *prices, *config, *files;
};
enum gl_status gl_query_output_state(struct gl_store *s, const char *out_dir, const char *period,
                                     struct gl_output_state *out, bool *found,
                                     struct gl_error *err);
void gl_output_state_clear(struct gl_output_state *o);
/* Records it (one transaction). */
enum gl_status gl_store_output_state(struct gl_store *s, const char *out_dir, const char *period,
                                     const struct gl_output_state *o, struct gl_error *err);

/* Each period name with stored data or a closed state, ascending. */
enum gl_status gl_query_known_periods(struct gl_store *s,
                                      void (*fn)(void *ctx, const char *period), void *ctx,
                                      struct gl_error *err);

/* Anomalies of a period (all teams when team is NULL), ordered by kind,
 * cluster, namespace, pod, device. Free with gl_anomalies_free. */
enum gl_status gl_anomalies_load(struct gl_store *s, const struct gl_period *p, const char *team,
                                 struct gl_anomaly_list *out, struct gl_error *err);

/* ---- cost per unit of work (schema/012 work_units) ---- */

/* One row of a workload (the pods of one owner, pod_owner, or a pod of its
 * own, kind "Pod"): memory used MiB·s of a GPU model in an hour (unit
 * NULL), or the units of work of one unit word in the period (model NULL,
 * hour 0, a = units). */
struct gl_work_read {
    const char *cluster, *ns, *kind, *name;
    const char *model, *unit;
    const char *team; /* memory used: the team of the rows */
    int64_t hour, a;
};
typedef enum gl_status (*gl_work_fn)(void *ctx, const struct gl_work_read *r,
                                     struct gl_error *err);

/* Period p's memory used per workload, GPU model, hour and team, ordered so. */
enum gl_status gl_query_workload_used_hours(struct gl_store *s, const struct gl_period *p,
                                            gl_work_fn fn, void *ctx, struct gl_error *err);
/* Period p's units of work per workload and unit word, ordered so. */
enum gl_status gl_query_workload_units(struct gl_store *s, const struct gl_period *p,
                                       gl_work_fn fn, void *ctx, struct gl_error *err);
/* ---- advice (schema/013 pod_peak; engine/bill/advice.c) ---- */

/* One group of the period's pod_peak rows (query_peak.c): the steps of a
 * pod on a device, with the device's model and capacity of the hour and
 * the allocation held, in one 1 GiB bucket and one price segment. */
struct gl_peak_read {
    int64_t hour;                          /* the group's first hour */
    const char *cluster, *ns, *pod, *team; /* team: of the pod's memory that first hour */
    const char *owner_kind, *owner_name;   /* "" when the pod has no owner row */
    const char *uuid, *instance, *profile, *model, *hostname; /* model: of the hours */
    int64_t device_id;
    int64_t capacity_mib;                  /* the device's capacity those hours */
    int64_t bucket, steps, peak_mib, alloc_mib, alloc_ugpu; /* steps: Σ; peak_mib: max */
};

/* One hour of one node's whole GPUs of known capacity (cluster, hostname,
 * model and capacity of the hour): the pods' peaks of the hour (each pod's
 * largest MiB on each device) summed, and the devices with a pod step. */
struct gl_node_hour_read {
    int64_t hour;
    const char *cluster, *hostname, *model;
    int64_t capacity_mib, sum_peak, devices;
};
typedef enum gl_status (*gl_node_hour_fn)(void *ctx, const struct gl_node_hour_read *r,
                                          struct gl_error *err);

struct gl_peak_groups {
    struct gl_peak_read *g;
    size_t n;
    struct gl_intern *strs; /* the groups' strings */
};

/* The period's pod_peak rows in one pass, summed per (cluster, namespace,
 * pod, device, model and capacity of the hour, allocation, bucket, price
 * segment): a segment is the hours between two of cuts (any order; the
 * caller's price boundaries), so a group's hours share one price entry.
 * out is sorted by cluster, namespace, pod, uuid, instance, first hour,
 * bucket, device id: the order of the groups' first rows, a total order.
 * A day built into schema/014's tables (and without a bound of cuts
 * inside) is read from them. Memory follows the groups and one hour's
 * node-hours, not the rows: fn
 * receives each cluster-hour's node-hours as it ends, a cluster's hours in
 * order, the clusters in order (a node-hour is of one cluster); within an
 * hour in no set order (a built day's by hostname, an hourly read's by its
 * rows), so fn must not depend on it. */
enum gl_status gl_query_advise_peaks(struct gl_store *s, const struct gl_period *p,
                                     const int64_t *cuts, size_t ncuts, gl_node_hour_fn fn,
                                     void *ctx, struct gl_peak_groups *out,
                                     struct gl_error *err);
void gl_peak_groups_free(struct gl_peak_groups *g);

/* One cluster's day [day, day + 86400) from its hourly rows alone, as
 * gl_query_advise_peaks reads it without price bounds and without teams
 * (team ""): what store_peakday.c builds the day's groups of schema/014
 * from, so a built day reads exactly as its rows. */
enum gl_status gl_query_peak_day_rows(struct gl_store *s, const char *cluster, int64_t day,
                                      gl_node_hour_fn fn, void *ctx, struct gl_peak_groups *out,
                                      struct gl_error *err);

/* Pod-hours of the period with used memory and no pod_peak row (collected
 * in server mode, or before schema 013): advice cannot see them. */
enum gl_status gl_query_advise_missing(struct gl_store *s, const struct gl_period *p,
                                       int64_t *pod_hours, struct gl_error *err);

/* The GPU sizes seen in the period's fleet: per model, its whole-GPU
 * capacity (profile "") and each MIG profile's measured capacity. */
struct gl_fleet_size {
    char *model, *profile;
    int64_t capacity_mib;
};
enum gl_status gl_query_advise_sizes(struct gl_store *s, const struct gl_period *p,
                                     struct gl_fleet_size **out, size_t *n,
                                     struct gl_error *err);
void gl_fleet_sizes_free(struct gl_fleet_size *x, size_t n);

#endif
