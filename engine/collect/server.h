/*
 * server — collection.mode "server": the plain node-hours of a unit come
 * from hourly figures the backend computes (README "Server-side
 * collection").
 *
 * Per unit (a range of whole hours) the backend returns, per device-level
 * aggregate of the memory, FB_FREE, FB_RESERVED and compute queries (the
 * same max-merges the engine applies: per (device, pod) for memory, per
 * device for the rest), each hour's exact sum of the per-step MiB the
 * engine would use (llround per sample, as integers) and a packed check
 * figure (samples, samples with a non-zero value, samples the parse would
 * skip), plus whether the device's USED + FREE and RESERVED changed inside
 * the hour; per host and device query, the raw samples the parse would
 * skip (a host-hour with any is fetched raw, so its skips are counted and
 * logged by reason as in raw mode). A host-hour is plain when it is linear
 * in these sums: gl_srv_decide refuses the unit on the configuration alone
 * (config_refusal: basis, memory source, labels, step), then runs its
 * steps (decide_steps in server.c: one function per rule, each saying what
 * it refuses and why), which mark the host-hours the sums cannot give
 * exactly. A plain host's rows come from gl_integrate run on a
 * one-point-per-hour input made of the sums (step 3600) and rescaled,
 * which is exactly the rows the per-step integration writes. Every other
 * host is fetched raw (its series only) and integrated step by step as in
 * raw mode.
 *
 * Adding a rule: a function `static void rule_NAME(struct plan *p)` that
 * calls hour_bad / host_bad with its reason, and its row in decide_steps
 * (the order of the rows is the order of the reasons in the log).
 */
#ifndef GL_SERVER_H
#define GL_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "fetch.h"
#include "integrate.h"
#include "parse.h"
#include "queryreg.h" /* the queries' planning roles (enum gl_srv_role) */
#include "util.h"

#define GL_SRV_QMAX 32

struct gl_srv_unit {
    /* in */
    const struct gl_config *c;
    const struct gl_cluster *cluster;
    int nq;
    enum gl_srv_role role[GL_SRV_QMAX];
    const char *queries[GL_SRV_QMAX]; /* the unit's query texts (borrowed) */
    const char *query_names[GL_SRV_QMAX]; /* their names (queries/<name>.promql) */
    int alloc_q, phase_q, pod_labels_q, ns_labels_q, node_labels_q; /* -1 when absent */
    int64_t cs, ce, step;
    size_t nhours;
    bool metricsql; /* VictoriaMetrics: changes_prometheus for changes (collect.c) */
    /* figure queries (gl_srv_figures) */
    size_t nfig;
    char **fig_text;
    int *fig_kind, *fig_q;
    /* out of gl_srv_decide */
    bool enabled;              /* some host may be plain (the global rules hold) */
    struct gl_intern *plain;   /* the plain hosts of the unit */
    struct gl_intern *hosts;   /* every host the figures named */
    size_t nhosts;
    unsigned char *ok;            /* [host * nhours + h]: host (in hosts) plain at hour h */
    unsigned char *raw_needed_h;  /* [q * nhours + h]: q has series off the plain hosts */
    struct gl_matrix synth[GL_SRV_QMAX]; /* plain hosts, one point per hour */
    int64_t *pl_series, *pl_samples;    /* [h * GL_SRV_QMAX + q], plain hosts */
    int64_t device_hours_server, device_hours_raw;
    char why[256];             /* the first reason a host was not plain */
};

/* The backend's name of Prometheus's changes(): "changes", or
 * "changes_prometheus" on VictoriaMetrics (whose changes() also counts the
 * step before the window). */
const char *gl_srv_changes(const struct gl_srv_unit *u);

/* Sets u's figure queries up (u's in fields filled). */
void gl_srv_figures(struct gl_srv_unit *u);

/* Decides the plain hosts from the figure responses figs (u->nfig, parsed
 * on the grid of the hours' last step instants) and the unit's full-step
 * matrices m of the GL_SRV_OTHER queries (joined: the allocation of
 * Running pods, or NULL when there is none), and builds u->synth. A
 * backend whose subqueries are not aligned as Prometheus aligns them
 * fails (GL_ERR_PROM). */
enum gl_status gl_srv_decide(struct gl_srv_unit *u, const struct gl_range_query *figs,
                             const struct gl_matrix *m, const struct gl_matrix *joined,
                             struct gl_error *err);

/* The text of query q for the hosts that are not plain at hour h (the
 * collection's host label excluded by a matcher in ${cluster_selector}). */
enum gl_status gl_srv_raw_query(const struct gl_srv_unit *u, int q, size_t h, char **out,
                                struct gl_error *err);

/* True when hosts plain at hour a are those plain at hour b. */
bool gl_srv_same_hours(const struct gl_srv_unit *u, size_t a, size_t b);

/* Splits m (the unit's grid) by label: out gets the samples of the hours
 * where the series' host is plain, m keeps the rest (a series in both is
 * copied). */
void gl_srv_split(const struct gl_srv_unit *u, struct gl_matrix *m, const char *label,
                  struct gl_matrix *out);

/* Adds the series of part (a range of whole hours inside the unit, same
 * step) into m (the unit's grid; series merged by label set). */
void gl_srv_merge(struct gl_matrix *m, const struct gl_matrix *part);

/* The rollup of the plain hosts: gl_integrate on u->synth with the label
 * matrices and the plain hosts' allocation sampled per hour, rescaled to
 * the step grid (quantities, last seen instants, capacities). */
enum gl_status gl_srv_integrate(struct gl_srv_unit *u, const struct gl_matrix *pod_labels,
                                const struct gl_matrix *ns_labels,
                                const struct gl_matrix *node_labels,
                                const struct gl_matrix *alloc, struct gl_rollup *r,
                                struct gl_error *err);

void gl_srv_unit_free(struct gl_srv_unit *u);

#endif
