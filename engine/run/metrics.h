/*
 * metrics — gpuledger's own metrics, the Prometheus way for batch jobs.
 *
 * At the end of every `run` (success or failure) the figures of the run
 * (struct gl_run_figures, filled by run.c) and of the ledger (watermarks,
 * the open period's billed memory and amounts per team and GPU model, the
 * fleet's capacity and idle memory, anomalies: from the statement run
 * built for that period's tree, or one built here when run wrote none)
 * are rendered once in the Prometheus text exposition format (0.0.4,
 * which both the Pushgateway and node-exporter's textfile collector read)
 * and
 *   - PUT to metrics.pushgateway_url as one group per cluster, grouping key
 *     job=<metrics.job>/cluster=<name> (a failed run POSTs instead and leaves
 *     out the last-success timestamp, so the group keeps the previous one);
 *   - written to metrics.textfile atomically (a temporary file in the same
 *     folder, renamed), keeping the previous last-success lines on failure.
 *
 * Every figure is a gauge: a group is replaced by each run, so a count is
 * the last run's count (the `_total` suffix is for counters).
 */
#ifndef GL_METRICS_H
#define GL_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "autoclose.h"
#include "collect.h"
#include "config.h"
#include "error.h"
#include "parse.h"
#include "price.h"
#include "statement.h"
#include "store.h"
#include "util.h"

/* What one run did to one cluster. */
struct gl_metrics_cluster {
    const char *name;   /* borrowed from the config */
    bool attempted;     /* a window was collected (or tried) */
    enum gl_status rc;  /* the collection's outcome */
    bool no_data;       /* collected, no samples at all, and the cluster had data before */
    int64_t chunks, hours, samples, bad_samples;
    int64_t skipped[GL_SKIP_N];
};

/* The figures of one run: gl_run_figures_init, gl_run_figures_cluster per
 * collected cluster, then gl_metrics_emit; gl_run_figures_free (NULL-safe
 * contents) after. */
struct gl_run_figures {
    int64_t started;     /* wall clock, seconds */
    int64_t started_ns;  /* monotonic clock, for the duration */
    struct gl_metrics_cluster *clusters; /* one per configured cluster, in order */
    size_t n;
    /* due periods close.auto could not close (autoclose.h), owned */
    struct gl_close_blocked *blocked;
    size_t nblocked;
    /* the statement run built for the tree of the period the metrics
     * report (gl_metrics_period), owned: the metrics are rendered from it.
     * NULL when run wrote no tree for that period (up to date, closed, or
     * writing failed): gl_metrics_emit then builds one. */
    struct gl_statement *open;
};

void gl_run_figures_init(struct gl_run_figures *f, const struct gl_config *c);
void gl_run_figures_free(struct gl_run_figures *f);

/* The period whose billed figures the metrics report: the one of the
 * newest hour a run collects (now - run.delay_minutes). */
void gl_metrics_period(const struct gl_config *c, int64_t now, struct gl_period *p);

/* Whether c configures metrics (a Pushgateway or a textfile). */
bool gl_metrics_configured(const struct gl_config *c);

/* Hands f the statement of gl_metrics_period's period as run built it for
 * its tree (st owned by f from then on; NULL drops the one held, when the
 * data changed after it was built). f may be NULL: st is freed. */
void gl_run_figures_statement(struct gl_run_figures *f, struct gl_statement *st);
/* Records a cluster's collection (f may be NULL: nothing recorded). */
void gl_run_figures_cluster(struct gl_run_figures *f, const char *cluster,
                            const struct gl_collect_stats *st, enum gl_status rc, bool no_data);

/* Records the due periods the run could not close (f may be NULL): each
 * is a gpuledger_period_close_blocked{cluster,period} 1 series in the
 * groups of the clusters that keep it open (every cluster's when none is
 * named). */
void gl_run_figures_blocked(struct gl_run_figures *f, const struct gl_close_blocked *b,
                            size_t n);

/* "Loud when data is missing": for a cluster that stored samples before
 * `from` and whose collection stored no memory samples in [from, to) (the
 * hours new to the run: from is the old watermark), GL_ERR_PARTIAL with a
 * message naming the cluster, the window and the queries without data
 * (from what collect recorded per hour and query); else GL_OK. */
enum gl_status gl_metrics_check_no_data(const struct gl_config *c, const struct gl_cluster *cl,
                                        struct gl_store *s, int64_t from, int64_t to,
                                        const struct gl_collect_stats *st, bool *no_data,
                                        struct gl_error *err);

/* Appends s to b as a label value of the exposition format: backslash,
 * double quote and line feed escaped (\\, \", \n), everything else as it is
 * (values are UTF-8, checked when parsed). false on allocation failure. */
bool gl_metrics_escape_label(struct gl_buf *b, const char *s);

/* The exposition text of the run's metrics into out (reset first); only
 * cluster's series when cluster is not NULL (one Pushgateway group).
 * st: the statement of gl_metrics_period's period (invoices, fleet,
 * anomalies), or NULL when it is closed or could not be built (the billed
 * figures are left out). exit_status is the run's; success adds the
 * last-success timestamp. */
enum gl_status gl_metrics_render(const struct gl_config *c, struct gl_store *s,
                                 const struct gl_statement *st, const struct gl_run_figures *f,
                                 const char *cluster, int64_t now, int exit_status,
                                 struct gl_buf *out, struct gl_error *err);

/* The Pushgateway path of a group: /metrics/job/<job>/cluster/<cluster>,
 * each value URL-encoded (base64url, "@base64", when it holds a '/' or is
 * empty, as the Pushgateway asks). malloc'd, free(). */
char *gl_metrics_group_path(const char *job, const char *cluster);

/* Pushes and/or writes the run's metrics as configured (nothing when
 * metrics is not configured), every group and the file from one statement
 * of the period they report: f->open, else one built here (the prices are
 * for it). The run's own outcome is exit_status; a
 * failure here is GL_ERR_PARTIAL naming the URL and HTTP status or the
 * file (README "Its own metrics": a good run whose metrics were not
 * delivered exits 5). */
enum gl_status gl_metrics_emit(const struct gl_config *c, struct gl_store *s,
                               const struct gl_price_table *prices,
                               const struct gl_run_figures *f, int64_t now, int exit_status,
                               struct gl_error *err);

#endif
