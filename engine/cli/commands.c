/*
 * commands — the subcommands of gpuledger and their table (see cli.h for
 * the recipe). Each body finds what it declared in its row already set up
 * (config, database, lock, prices, period) and only does its own work;
 * outputs are rendered from a period statement (statement.h, render.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "advise.h"
#include "autoclose.h"
#include "cli.h"
#include "close.h"
#include "collect.h"
#include "fetch.h"
#include "metrics.h"
#include "output.h"
#include "probe.h"
#include "query.h"
#include "queryreg.h"
#include "render.h"
#include "reprice.h"
#include "report.h"
#include "run.h"
#include "side.h"
#include "statement.h"
#include "store_admin.h"
#include "summary.h"
#include "upload.h"
#include "teams.h"
#include "frozen_check.h"
#include "invoice_codec.h"
#include "util.h"

/* A failed step: print err, return its status. */
#define FAIL(err) gl_cli_fail(err)

/* The one place a command's output format is resolved: the row of the
 * renderer table (render.h) that command prints for value, the value of
 * its option opt (--format; export's --focus-version). value NULL: *r
 * NULL (the command's default). A value no row of the command has is a
 * usage error listing the values the command accepts, from the table. */
static int renderer_for(const struct gl_cmd_env *e, const char *opt, const char *value,
                        const struct gl_renderer **r)
{
    *r = value ? gl_renderer_of(e->cmd->name, value) : NULL;
    if (!value || *r)
        return 0;
    struct gl_buf accepted;
    gl_buf_init(&accepted);
    int rc = gl_renderer_formats(e->cmd->name, &accepted)
                 ? gl_cli_usage(e->cmd, "%s \"%s\" is not %s", opt, value, accepted.data)
                 : gl_cli_usage(e->cmd, "%s", "out of memory");
    gl_buf_free(&accepted);
    return rc;
}

/* --format of a command that prints a period (default json). */
static const struct gl_renderer *format_renderer(const struct gl_cmd_env *e)
{
    const struct gl_renderer *r;
    renderer_for(e, "--format", e->o.format ? e->o.format : "json", &r);
    return r;
}

static int check_format(struct gl_cmd_env *e)
{
    const struct gl_renderer *r;
    return renderer_for(e, "--format", e->o.format ? e->o.format : "json", &r);
}

/* Builds the period's statement (the parts asked for); NULL after printing
 * the error, *rc its status. */
static struct gl_statement *statement(struct gl_cmd_env *e, unsigned parts, int *rc)
{
    struct gl_error err = {0};
    struct gl_statement *st = NULL;
    *rc = 0;
    if (gl_period_held(e->store, &e->period, &err) ||
        gl_statement_build_checked(e->cfg, e->store, e->prices, &e->period, parts, gl_frozen_verify, &st, &err))
        *rc = FAIL(&err);
    return st;
}

/* Prints what r renders of the period's statement (built with the parts r
 * reads) to stdout, only --team's when given; 0 or the printed failure's
 * status. */
static int print_period(struct gl_cmd_env *e, const struct gl_renderer *r)
{
    int rc;
    struct gl_statement *st = statement(e, r->parts, &rc);
    struct gl_error err = {0};
    if (st && gl_render_print(r, st, e->o.team, stdout, &err))
        rc = FAIL(&err);
    gl_statement_free(st);
    return rc;
}

/* --reprice-closed on run, invoice, export: accepts, in one transaction,
 * what the configured prices change in closed months (reprice.h), before
 * the command builds anything. Without it, run checks them first, so that
 * a refused repricing stops it (exit 7) before it collects or writes
 * anything (invoice and export refuse while building). 0 or the printed
 * failure's status. */
static int accept_repricing(struct gl_cmd_env *e)
{
    bool accept = e->o.reprice_closed != NULL;
    if (!accept && strcmp(e->cmd->name, "run") != 0)
        return 0;
    struct gl_error err = {0};
    size_t n = 0;
    if (gl_store_begin(e->store, &err))
        return FAIL(&err);
    if (gl_reprice_closed_months(e->cfg, e->store, e->prices, accept, true, e->now, &n, &err) ||
        gl_store_commit(e->store, &err)) {
        gl_store_rollback(e->store);
        return FAIL(&err);
    }
    if (accept)
        gl_log(GL_LOG_INFO, "repricing of closed periods accepted model_days=%zu", n);
    return 0;
}

/* ---- collect ---- */

static const char usage_collect[] =
    "usage: gpuledger collect --from TIME --to TIME [--cluster NAME] [--allow-shrink]\n"
    "  Pulls the half-open window [from, to), widened to whole UTC hours, and\n"
    "  replaces the stored hours (re-collecting never double counts). Every\n"
    "  configured cluster, or only NAME.\n"
    "  A chunk that would replace stored hours with less (a query's series or\n"
    "  samples, a device's memory attributed to pods, or a team's memory while\n"
    "  a query returned less) beyond collection.shrink_tolerance (default 0.01)\n"
    "  is refused (exit 5) and the stored hours are kept; --allow-shrink\n"
    "  replaces them anyway, with a warning naming the same figures.\n";

static int check_collect(struct gl_cmd_env *e)
{
    const struct gl_command *usage = e->cmd;
    int64_t from, to;
    if (!e->o.from || !e->o.to)
        return gl_cli_usage(usage, "%s", "--from and --to are required");
    if (!gl_time_parse(e->o.from, &from))
        return gl_cli_usage(usage, "--from \"%s\" is not an RFC 3339 UTC time", e->o.from);
    if (!gl_time_parse(e->o.to, &to))
        return gl_cli_usage(usage, "--to \"%s\" is not an RFC 3339 UTC time", e->o.to);
    if (to <= from)
        return gl_cli_usage(usage, "%s", "--to must be after --from");
    return 0;
}

static int cmd_collect(struct gl_cmd_env *e)
{
    const struct gl_config *cfg = e->cfg;
    int64_t from, to;
    gl_time_parse(e->o.from, &from);
    gl_time_parse(e->o.to, &to);
    if (e->o.cluster && !gl_config_cluster(cfg, e->o.cluster))
        return gl_cli_usage(e->cmd, "no cluster \"%s\" in the config", e->o.cluster);
    /* Each cluster on its own: one that fails does not stop the others. */
    int failed = 0, done = 0, first_rc = 0;
    for (size_t i = 0; i < cfg->nclusters; i++) {
        const struct gl_cluster *cl = &cfg->clusters[i];
        if (e->o.cluster && strcmp(e->o.cluster, cl->name) != 0)
            continue;
        struct gl_error err = {0};
        struct gl_collect_stats st = {.allow_shrink = e->o.allow_shrink != NULL};
        if (gl_collect(cfg, cl, e->store, from, to, &st, &err)) {
            gl_close_note_refused(cfg, e->store, cl->name, from, to, st.hours, &err, e->now);
            int code = FAIL(&err);
            if (!first_rc)
                first_rc = code;
            failed++;
            continue;
        }
        done++;
        gl_log(GL_LOG_INFO,
               "collected cluster=%s from=%s to=%s hours=%lld chunks=%lld samples=%lld "
               "memory_samples=%lld bad_samples=%lld",
               cl->name, e->o.from, e->o.to, (long long)st.hours, (long long)st.chunks,
               (long long)st.query_samples, (long long)st.samples, (long long)st.bad_samples);
    }
    return failed ? (done ? GL_ERR_PARTIAL : first_rc) : 0;
}

/* ---- the period's outputs: invoice, export, summary, anomalies, report ---- */

static const char usage_invoice[] =
    "usage: gpuledger invoice --period YYYY-MM [--team ID] [--format " GL_USAGE_FORMATS "] [--out DIR]\n"
    "                         [--reprice-closed]\n"
    "  One invoice per team with usage in the period. Without --out, prints all\n"
    "  (JSON: {\"period\", \"invoices\": [...]}); with --out, writes\n"
    "  DIR/invoice-<period>-<team>.json or .md. A closed period prints its\n"
    "  frozen invoices; an open one includes corrections of closed periods.\n"
    "  Prices that would change a closed month are refused (exit 7) unless\n"
    "  --reprice-closed accepts them (recorded in the database).\n";

static int cmd_invoice(struct gl_cmd_env *e)
{
    const struct gl_renderer *r = format_renderer(e);
    int rc = accept_repricing(e);
    if (rc)
        return rc;
    struct gl_statement *st = statement(e, r->parts, &rc);
    struct gl_error err = {0};
    size_t n = 0;
    if (st && gl_output_invoices(st, r, e->o.team, e->o.out, &n, &err))
        rc = FAIL(&err);
    else if (st && e->o.out)
        gl_log(GL_LOG_INFO, "wrote invoices period=%s count=%zu dir=%s", e->period.name, n,
               e->o.out);
    gl_statement_free(st);
    return rc;
}

static const char usage_export[] =
    "usage: gpuledger export --period YYYY-MM [--out FILE] [--focus-version " GL_USAGE_FORMATS "]\n"
    "                        [--reprice-closed]\n"
    "  FOCUS CSV (1.2 unless --focus-version or billing.focus_version says 1.3),\n"
    "  one row per team x cluster x GPU model x kind x price entry\n"
    "  x day, to stdout, or with --out to FILE plus FILE.metadata.json. A closed\n"
    "  period prints its frozen rows; an open one carries correction rows for\n"
    "  closed periods. --reprice-closed: as for invoice.\n";

static int check_export(struct gl_cmd_env *e)
{
    const struct gl_renderer *r;
    return renderer_for(e, "--focus-version", e->o.focus_version, &r);
}

static int cmd_export(struct gl_cmd_env *e)
{
    int rc = accept_repricing(e);
    if (rc)
        return rc;
    const struct gl_renderer *csv;
    renderer_for(e, "--focus-version", e->o.focus_version, &csv);
    struct gl_statement *st = statement(e, GL_ST_INVOICES, &rc);
    struct gl_error err = {0};
    size_t rows = 0;
    /* without --focus-version: the version the period is in (a closed
     * month's as closed) */
    if (st && !csv)
        csv = gl_renderer_focus("focus-csv", gl_render_focus_version(st));
    int v = st ? gl_render_focus_version(st) : 0;
    /* a closed month with figures renders any version from them; one
     * closed before them only the version of its stored text */
    if (st && st->from_texts && csv->focus != v) {
        gl_error_set(&err, GL_ERR_STATE,
                     "period %s was closed by an engine that stored only its FOCUS %d.%d text, "
                     "no figures: --focus-version %s cannot be rendered for it (leave out "
                     "--focus-version, or ask for %d.%d)",
                     e->period.name, v / 10, v % 10, csv->format, v / 10, v % 10);
        rc = FAIL(&err);
    } else if (st && gl_output_focus(st, csv, e->o.out, &rows, &err))
        rc = FAIL(&err);
    else if (st && e->o.out)
        gl_log(GL_LOG_INFO, "wrote FOCUS CSV period=%s file=%s rows=%zu", e->period.name,
               e->o.out, rows);
    gl_statement_free(st);
    return rc;
}

/* summary, anomalies and unit-cost: the period in the renderer row that
 * the command and --format name. */
static int cmd_print(struct gl_cmd_env *e)
{
    return print_period(e, format_renderer(e));
}

static const char usage_summary[] =
    "usage: gpuledger summary --period YYYY-MM [--format " GL_USAGE_FORMATS "]\n"
    "  Fleet summary per cluster and GPU model, in GB-hours: capacity, memory\n"
    "  used by pods, driver-reserved, unattributed, idle, and excess.\n";

static const char usage_anomalies[] =
    "usage: gpuledger anomalies --period YYYY-MM [--team ID] [--format " GL_USAGE_FORMATS "]\n"
    "  Pods that used GPU memory without holding a GPU allocation on that node\n"
    "  (unallocated_use), or on more whole GPUs than they requested there\n"
    "  (excess_devices). Both are billed as used.\n";

static const char usage_unit_cost[] =
    "usage: gpuledger unit-cost --period YYYY-MM [--format " GL_USAGE_FORMATS "]\n"
    "  Cost per unit of work per workload: memory used (GB-hours), its cost at\n"
    "  the period's prices, the units of the work counters (work.counters,\n"
    "  work.presets) and the cost per 1M tokens, 1k requests or inferences, or\n"
    "  1 other unit.\n";

static const char usage_report[] =
    "usage: gpuledger report --period YYYY-MM [--team ID] --out DIR\n"
    "  Monthly reports: per team DIR/report-<period>-<team>.html (self-contained,\n"
    "  inline SVG charts) and .md, and the fleet page DIR/fleet-<period>.html and\n"
    "  .md. With --team, only that team's pages (and the fleet page).\n";

static int cmd_report(struct gl_cmd_env *e)
{
    int rc;
    struct gl_statement *st = statement(e, GL_ST_PAGES, &rc);
    struct gl_error err = {0};
    if (st && gl_report_write(st, e->o.team, e->o.out, &err))
        rc = FAIL(&err);
    gl_statement_free(st);
    return rc;
}

static const char usage_advise[] =
    "usage: gpuledger advise --period YYYY-MM [--format " GL_USAGE_FORMATS "]\n"
    "  Right-sizing per workload (peak and p99 memory per step against its\n"
    "  allocation; the smallest MIG profile, time-slicing share or smaller GPU\n"
    "  model that holds the peak with advise.headroom, and the saving at the\n"
    "  period's prices) and consolidation per node (a bin-packing lower bound).\n"
    "  Advice only: no bill changes.\n";

static int cmd_advise(struct gl_cmd_env *e)
{
    return print_period(e, format_renderer(e));
}

/* ---- close, run ---- */

static const char usage_close[] =
    "usage: gpuledger close --period YYYY-MM [--now TIME] [--force]\n"
    "  Freezes a finished month: its invoices and FOCUS rows never change again.\n"
    "  Data collected later that changes it becomes correction rows of the\n"
    "  next open month. Closing twice, or a month not yet over, is an error.\n"
    "  A month closes only when complete: every hour collected for every\n"
    "  configured cluster (hours the backend had no data for count, and are\n"
    "  listed), no refused collection outstanding, and the collection reaching\n"
    "  close.settle_hours (default 48) past its end. Otherwise it exits 7\n"
    "  naming each cluster's missing, refused or unsettled hour ranges.\n"
    "  --force closes an incomplete month anyway and records what was missing:\n"
    "  every output of the month states it.\n";

static int cmd_close(struct gl_cmd_env *e)
{
    struct gl_error err = {0};
    if (gl_period_close_force(e->cfg, e->store, e->prices, &e->period, e->now,
                              e->o.force != NULL, &err))
        return FAIL(&err);
    gl_log(GL_LOG_INFO, "closed period=%s", e->period.name);
    return 0;
}

static const char usage_run[] =
    "usage: gpuledger run [--out DIR] [--now TIME] [--reprice-closed]\n"
    "  What the CronJob calls: collects every cluster from its watermark (or\n"
    "  run.start) up to now - run.delay_minutes, re-pulling run.repull_hours for\n"
    "  late samples, then writes the open periods' invoices, FOCUS CSV, summary,\n"
    "  anomalies and reports into DIR/<period>/ (default run.out_dir, else ./out).\n"
    "  With close.auto, it then closes each month whose collection is\n"
    "  close.settle_hours past its end and complete (as close does); a due month\n"
    "  it cannot close is logged as an error on every run and exported as\n"
    "  gpuledger_period_close_blocked, without changing the exit status.\n"
    "  Exit 0: all done; 5: partly failed (what succeeded is stored); 6: locked;\n"
    "  7: prices would change a closed month (--reprice-closed accepts them).\n";

static int cmd_run(struct gl_cmd_env *e)
{
    struct gl_error err = {0};
    const char *out = e->o.out ? e->o.out : e->cfg->run_out_dir ? e->cfg->run_out_dir : "out";
    int arc = accept_repricing(e);
    if (arc)
        return arc;
    struct gl_run_figures fig;
    gl_run_figures_init(&fig, e->cfg);
    enum gl_status rc = gl_run(e->cfg, e->store, e->prices, out, e->now, &fig, &err);
    /* its own metrics, whatever the outcome; a good run whose metrics were
     * not delivered is a partial failure (README "Its own metrics") */
    struct gl_error merr = {0};
    if (gl_metrics_emit(e->cfg, e->store, e->prices, &fig, e->now,
                        rc ? (err.code ? (int)err.code : 1) : 0, &merr) &&
        !rc) {
        rc = GL_ERR_PARTIAL;
        gl_error_set(&err, GL_ERR_PARTIAL,
                     "run done, but its metrics were not delivered (partial failure): %s",
                     merr.msg);
    }
    gl_run_figures_free(&fig);
    return rc ? FAIL(&err) : 0;
}

/* ---- check, prices ---- */

struct model_check {
    const struct gl_price_table *t;
    const char *db;
    char *last; /* the model checked last (whole: models may share long prefixes) */
    size_t models;
    struct gl_store *s;
    size_t warnings; /* capacity_gb far from the measured capacity */
};

/* A GPU-Hours capacity_gb more than 2 % off the measured capacity. */
static void warn_capacity(struct model_check *m, const char *model)
{
    int64_t mib = gl_query_model_capacity(m->s, model);
    for (size_t i = 0; i < m->t->n; i++) {
        char msg[1024];
        const struct gl_price_entry *pe = &m->t->entries[i];
        if (gl_price_matches(pe, model) &&
            gl_price_capacity_mismatch(m->t, pe, model, mib, msg, sizeof msg)) {
            gl_log(GL_LOG_WARN, "%s", msg);
            m->warnings++;
        }
    }
}

static enum gl_status check_model_hour(void *ctx, const char *model, int64_t hour,
                                       struct gl_error *err)
{
    struct model_check *m = ctx;
    if (!m->last || strcmp(model, m->last) != 0) {
        free(m->last);
        m->last = gl_strdup(model);
        m->models++;
        enum gl_status rc = gl_prices_check_model(m->t, model, err);
        if (rc)
            return rc;
        warn_capacity(m, model);
    }
    if (gl_prices_find(m->t, model, hour) < 0) {
        char ts[32];
        gl_time_format(hour, ts, sizeof ts);
        return gl_error_set(err, GL_ERR_CONFIG,
                            "%s: no price for GPU model \"%s\" at %s, which has usage in %s",
                            m->t->file, model, ts, m->db);
    }
    return GL_OK;
}

/* Every (model, hour) with something to bill must find exactly one price. */
static enum gl_status prices_against_db(const char *db, const struct gl_price_table *t,
                                        size_t *models, struct gl_error *err)
{
    *models = 0;
    struct stat sb;
    if (stat(db, &sb) != 0)
        return GL_OK; /* nothing stored yet */
    struct gl_store *s = NULL;
    enum gl_status rc = gl_store_open(db, &s, err);
    if (rc)
        return rc;
    struct model_check m = {.t = t, .db = db, .s = s};
    rc = gl_query_billable_hours(s, check_model_hour, &m, err);
    free(m.last);
    *models = m.models;
    gl_store_close(s);
    return rc;
}

/* How far `run` has collected a cluster, for operators reading `check`. */
static void print_watermark(const char *db, const char *cluster, int64_t now)
{
    struct stat sb;
    if (stat(db, &sb) != 0)
        return;
    struct gl_store *s = NULL;
    struct gl_error err = {0};
    int64_t to = 0;
    bool found = false;
    if (gl_store_open(db, &s, &err) || gl_store_watermark(s, cluster, &to, &found, &err)) {
        printf("  watermark: unreadable (%s)\n", err.msg);
    } else if (!found) {
        printf("  watermark: none (run has not collected this cluster yet)\n");
    } else {
        char ts[32];
        gl_time_format(to, ts, sizeof ts);
        printf("  watermark: collected up to %s (%.1f hours before the probe time)\n", ts,
               (double)(now - to) / 3600.0);
    }
    gl_store_close(s);
}

/* A device whose GPU model changed (a board swapped under its UUID): each
 * hour is priced at its own model, but the operator should know. */
static void print_model_change(void *ctx, const char *device, const char *model, int64_t from)
{
    char **last = ctx, ts[32];
    gl_time_format(from, ts, sizeof ts);
    if (!*last || strcmp(*last, device) != 0) {
        printf("%s  model changed: device %s (each hour is priced at the model it reported):",
               *last ? "\n" : "", device);
        free(*last);
        *last = gl_strdup(device);
    }
    printf(" %s from %s;", model, ts);
}

static void print_model_changes(const char *db, const char *cluster)
{
    struct stat sb;
    if (stat(db, &sb) != 0)
        return;
    struct gl_store *s = NULL;
    struct gl_error err = {0};
    char *last = NULL;
    if (gl_store_open(db, &s, &err) ||
        gl_query_model_changes(s, cluster, print_model_change, &last, &err))
        printf("  model changes: unreadable (%s)\n", err.msg);
    else if (last)
        printf("\n");
    free(last);
    gl_store_close(s);
}

/* The team labels the rules read from a label query's series (pods or
 * namespaces): true when one of them is on some series, or no rule reads
 * one; *label names the first rule's label otherwise. */
static bool team_labels_present(const struct gl_config *cfg, enum gl_rule_kind kind,
                                const struct gl_vector *res, const char **label)
{
    *label = NULL;
    for (size_t r = 0; r < cfg->nrules; r++) {
        if (cfg->rules[r].kind != kind)
            continue;
        if (!*label)
            *label = cfg->rules[r].label;
        for (size_t i = 0; i < res->n; i++)
            if (gl_sample_label(&res->samples[i], cfg->rules[r].label))
                return true;
    }
    return *label == NULL;
}

/* check: the likely cause of a query's missing data, from who exports it
 * (the registry's source). */
static const char *query_cause(const struct gl_qslot *q)
{
    enum gl_qsource src = q->row->source;
    if (src == GL_QS_EXPORTER && strncmp(q->name, "fb_", 3) == 0)
        src = GL_QS_DCGM; /* a dcgm-exporter FB field by its name */
    switch (src) {
    case GL_QS_KSM_REQUESTS:
        return "kube-state-metrics is not scraped by this Prometheus (or the cluster selector "
               "does not match its series), or no pod requests a GPU at the probe time";
    case GL_QS_KSM:
        return "kube-state-metrics is not scraped by this Prometheus (or the cluster selector "
               "does not match its series)";
    case GL_QS_DCGM:
        return "dcgm-exporter is not scraped by this Prometheus (ServiceMonitor or scrape "
               "config), the cluster selector does not match its series, or the field is not in "
               "dcgm-exporter's counters CSV (without DCGM_FI_DEV_FB_FREE, set "
               "allocation.model_capacity_mib)";
    case GL_QS_EXPORTER:
        break;
    }
    return "the exporter of this metric is not scraped, or the field is not exported";
}

/* Teams whose rows would carry an empty x_CostCenter. */
static void print_cost_centers(const struct gl_config *cfg)
{
    const char *ids[16];
    size_t n = gl_teams_without_cost_center(cfg, ids, 16);
    if (!n) {
        printf("cost centers: ok (%s)\n", cfg->default_cost_center
                                              ? "teams without their own take "
                                                "teams.default_cost_center"
                                              : "every catalogued team, the default and the "
                                                "platform team have one");
        return;
    }
    printf("cost centers: %zu team(s) without one (x_CostCenter empty):", n);
    for (size_t i = 0; i < n && i < 16; i++)
        printf(" %s", ids[i]);
    printf("%s; teams from rules absent from the catalogue have none either: set "
           "teams.default_cost_center or a cost_center per catalogue entry\n",
           n > 16 ? " ..." : "");
}

static const char usage_check[] =
    "usage: gpuledger check [--at TIME]\n"
    "  Validates the config, the query files and the price table, reaches\n"
    "  Prometheus, reports how many series each query returns at TIME (default:\n"
    "  now), and dry-runs the collection of the hour before TIME: devices\n"
    "  without FB_RESERVED or without memory metrics, process-mode sources that\n"
    "  look like device copies, teams missing from the catalogue. Each work\n"
    "  counter (work.counters, work.presets) is asked too: its series count, or\n"
    "  NO DATA; series without its namespace or pod label exit 3. Nothing is\n"
    "  stored.\n";

static int check_check(struct gl_cmd_env *e)
{
    if (e->o.at && !gl_time_parse(e->o.at, &e->now))
        return gl_cli_usage(e->cmd, "--at \"%s\" is not an RFC 3339 UTC time", e->o.at);
    return 0;
}

/* check: one query of cluster cl at the probe time, printed with its series
 * count and, without data, its likely cause; a required one (the
 * registry's need: nothing can be billed without memory, capacity and
 * allocation) is added to required ("cluster/query"). Returns the exit
 * status (0: go on). */
static int probe_query(const struct gl_config *cfg, const struct gl_cluster *cl,
                       struct gl_prom *prom, const struct gl_qslot *qs, int64_t at,
                       struct gl_buf *required, int *missing)
{
    const char *name = qs->name;
    struct gl_error err = {0};
    char *q = NULL;
    struct gl_vector res;
    if (gl_config_query(cfg, cl, name, &q, &err) || gl_prom_vector(prom, q, at, &res, &err)) {
        free(q);
        return FAIL(&err);
    }
    int rc = 0;
    size_t n = res.n;
    bool req = gl_qr_required(cfg, qs);
    printf("  query %-18s %zu series%s\n", name, n,
           n > 0 ? "" : req ? "  (NO DATA at the probe time: required)"
                            : "  (NO DATA at the probe time)");
    if (n == 0) {
        (*missing)++;
        printf("    likely cause: %s\n", query_cause(qs));
        if (req && !gl_buf_printf(required, "%s%s/%s", required->len ? ", " : "", cl->name,
                                  name))
            rc = FAIL((gl_error_set(&err, GL_ERR_RUNTIME, "out of memory"), &err));
    }
    const char *label = NULL;
    /* the labels the team rules read, on the label queries' series */
    bool pods = qs->row->labels == GL_QL_TEAM_POD;
    if (n > 0 && (pods || qs->row->labels == GL_QL_TEAM_NAMESPACE) &&
        !team_labels_present(cfg, pods ? GL_RULE_POD_LABEL : GL_RULE_NAMESPACE_LABEL, &res,
                             &label))
        printf("    likely cause: no series carries %s, which a team rule reads: "
               "kube-state-metrics runs without --metric-labels-allowlist=%s=[%s] (its "
               "pods then fall to the default team)\n",
               label, pods ? "pods" : "namespaces",
               strncmp(label, "label_", 6) == 0 ? label + 6 : label);
    gl_vector_free(&res);
    free(q);
    return rc;
}

static int cmd_check(struct gl_cmd_env *e)
{
    const struct gl_cli *g = e->g;
    const struct gl_config *cfg = e->cfg;
    int64_t at = e->now;
    int rc = 0;
    printf("config: %s ok\n", g->config);
    struct gl_error err = {0};
    struct gl_price_table *prices = NULL;
    size_t models = 0;
    if (gl_prices_load_config(cfg, &prices, &err) ||
        prices_against_db(g->db, prices, &models, &err)) {
        gl_prices_free(prices);
        return FAIL(&err);
    }
    printf("prices: %s ok (%zu entries%s)\n", prices->file, prices->n,
           models ? ", a price for every model and hour with stored usage" : "");
    gl_prices_free(prices);
    print_cost_centers(cfg);
    /* the queries check probes (the registry's check_rank order; the
     * allocation joined by the backend or by the engine from two
     * selectors); the count printed has always had a place for the device
     * query, configured or not */
    struct gl_qslot probes[GL_QR_MAX];
    const int nprobes = gl_qr_check_list(cfg, probes);
    const size_t nnames = (size_t)nprobes + !cfg->mem_device_query;
    struct gl_buf required; /* cluster/query of each required query without data */
    gl_buf_init(&required);
    for (size_t ci = 0; !rc && ci < cfg->nclusters; ci++) {
        const struct gl_cluster *cl = &cfg->clusters[ci];
        printf("cluster %s: %s%s%s\n", cl->name, cl->prom.url, cl->selector[0] ? " selector " : "",
               cl->selector);
        print_watermark(g->db, cl->name, at);
        print_model_changes(g->db, cl->name);
        struct gl_prom *prom = NULL;
        if (gl_prom_new(&cl->prom, &prom, &err)) {
            rc = FAIL(&err);
            break;
        }
        int missing = 0;
        for (int i = 0; i < nprobes && !rc; i++)
            rc = probe_query(cfg, cl, prom, &probes[i], at, &required, &missing);
        if (!rc) { /* exporter schema: units and the hostname label (probe.h) */
            struct gl_buf notes;
            gl_buf_init(&notes);
            enum gl_status src = gl_schema_check(cfg, cl, prom, at, &notes, &err);
            if (!src) /* the side collectors' probes: DRA claims, work counters (side.h) */
                src = gl_side_check(cfg, cl, prom, at, &notes, &err);
            if (notes.data)
                printf("%s", notes.data);
            rc = src ? FAIL(&err) : 0;
            gl_buf_free(&notes);
        }
        gl_prom_free(prom);
        if (rc)
            break;
        printf("  prometheus reachable; %d of %zu queries without data\n", missing, nnames);
        struct gl_collect_stats st = {.notes = gl_intern_new()};
        int64_t hour = gl_floor_to(at, 3600);
        if (gl_collect(cfg, cl, NULL, hour - 3600, hour, &st, &err)) {
            rc = FAIL(&err);
        } else {
            printf("  dry run of the hour before %s: %lld samples, %lld invalid, %lld device(s) "
                   "looking like copies\n",
                   e->o.at ? e->o.at : "now", (long long)st.samples, (long long)st.bad_samples,
                   (long long)st.copy_warnings);
            for (int32_t i = 0; i < gl_intern_count(st.notes); i++)
                printf("  note: %s\n", gl_intern_str(st.notes, i));
        }
        gl_intern_free(st.notes);
    }
    if (!rc && required.len) {
        struct gl_error merr = {0};
        gl_error_set(&merr, GL_ERR_PROM,
                     "required queries without data at the probe time: %s (see the likely "
                     "causes above; nothing can be billed without memory, capacity and "
                     "allocation)",
                     required.data);
        rc = FAIL(&merr);
    }
    gl_buf_free(&required);
    return rc;
}

static const char usage_prices[] =
    "usage: gpuledger prices [--file CSV] [--reprice-closed]\n"
    "       gpuledger prices import --file CSV [--reprice-closed]\n"
    "  Validates a price table (default: the configured one) and prints it. With\n"
    "  a database (--db), also checks it against every GPU model and hour with\n"
    "  stored usage: a price for each, and no two overlapping rows. `import`\n"
    "  validates CSV the same way, then installs it as prices.file (atomically).\n"
    "  A table that would change the prices of a closed month is refused (exit\n"
    "  7; nothing installed). With --reprice-closed the repricing is accepted\n"
    "  (recorded in the database) and the correction lines it produces are\n"
    "  printed per team before the table is installed; without import, it\n"
    "  accepts the configured table as it stands (after an edit or upgrade).\n";

static int check_prices(struct gl_cmd_env *e)
{
    if (e->o.word && !e->o.file)
        return gl_cli_usage(e->cmd, "%s", "prices import needs --file CSV");
    if (!e->o.word && e->o.file && e->o.reprice_closed)
        return gl_cli_usage(e->cmd, "%s",
                            "--reprice-closed with --file needs import (only the installed "
                            "table is accepted)");
    return 0;
}

/* The closed months against table t (reprice.h): refused when t changes
 * their prices, unless accept, which records the repricing and prints the
 * correction lines of every open period that carries corrections. All in
 * one transaction: nothing is recorded when anything fails. */
static enum gl_status prices_against_closed(struct gl_cmd_env *e, const struct gl_price_table *t,
                                            bool accept, struct gl_error *err)
{
    struct stat sb;
    if (stat(e->g->db, &sb) != 0)
        return GL_OK;
    struct gl_store *s = NULL;
    struct gl_period *open = NULL;
    size_t nopen = 0, accepted = 0, lines = 0;
    enum gl_status rc = gl_store_open(e->g->db, &s, err);
    if (!rc) /* only accepting writes */
        rc = accept ? gl_store_begin(s, err) : gl_store_read_begin(s, err);
    if (!rc)
        rc = gl_reprice_closed_months(e->cfg, s, t, accept, accept, e->now, &accepted, err);
    if (!rc && accept) {
        printf("repricing of closed months accepted: %zu GPU model-day(s)\n", accepted);
        rc = gl_reprice_open_periods(s, &open, &nopen, err);
    }
    for (size_t i = 0; !rc && i < nopen; i++) {
        struct gl_invoice_set *set = NULL;
        bool frozen = false;
        size_t n = 0;
        rc = gl_period_invoices(e->cfg, s, t, &open[i], &set, &frozen, err);
        if (!rc && set)
            gl_invoice_md_corrections(set, stdout, &n);
        lines += n;
        gl_invoices_free(set);
    }
    if (!rc && accept && !lines)
        printf("no correction lines\n");
    if (!rc && accept)
        rc = gl_store_commit(s, err);
    if (!accept && s)
        gl_store_read_end(s);
    else if (rc && s)
        gl_store_rollback(s);
    free(open);
    gl_store_close(s);
    return rc;
}

static int cmd_prices(struct gl_cmd_env *e)
{
    const struct gl_cli *g = e->g;
    const struct gl_config *cfg = e->cfg;
    bool import = e->o.word != NULL;
    struct gl_error err = {0};
    struct gl_price_table *t = NULL;
    size_t models = 0;
    int rc = 0;
    if (import && !cfg->prices_file) {
        gl_error_set(&err, GL_ERR_CONFIG,
                     "%s: prices are configured as prices.entries; import needs prices.file",
                     cfg->path);
        return FAIL(&err);
    }
    if ((e->o.file ? gl_prices_load(e->o.file, cfg->currency, &t, &err)
                   : gl_prices_load_config(cfg, &t, &err)) ||
        prices_against_db(g->db, t, &models, &err)) {
        gl_prices_free(t);
        return FAIL(&err);
    }
    if (import) /* what it prints names the rows as they will be installed */
        gl_prices_rename(t, cfg->prices_file);
    if (prices_against_closed(e, t, e->o.reprice_closed != NULL, &err)) {
        gl_prices_free(t);
        return FAIL(&err);
    }
    if (import) {
        char *text = NULL;
        size_t len = 0;
        if (!gl_read_file(e->o.file, &text, &len, &err))
            gl_write_atomic(cfg->prices_file, text, len, &err);
        free(text);
        if (err.msg[0])
            rc = FAIL(&err);
        else
            gl_log(GL_LOG_INFO, "imported prices entries=%zu file=%s models_checked=%zu", t->n,
                   cfg->prices_file, models);
        gl_prices_free(t);
        return rc;
    }
    printf("| id | model pattern | unit | price | valid from | valid to | capacity GB |\n");
    printf("|---|---|---|---:|---|---|---:|\n");
    for (size_t i = 0; i < t->n; i++) {
        const struct gl_price_entry *pe = &t->entries[i];
        char price[80], from[32], to[32] = "open", cap[80] = "";
        gl_dec_format_trim(pe->price12, GL_PRICE_DECIMALS, price, sizeof price);
        gl_time_format(pe->valid_from, from, sizeof from);
        if (pe->valid_to != INT64_MAX)
            gl_time_format(pe->valid_to, to, sizeof to);
        if (pe->has_capacity)
            gl_dec_format_trim(pe->capacity_gb12, GL_PRICE_DECIMALS, cap, sizeof cap);
        printf("| %s | `", pe->id);
        gl_md_cell(stdout, pe->pattern);
        printf("` | %s | %s %s | %s | %s | %s |\n",
               pe->unit == GL_PRICE_GB_HOURS ? "GB-Hours" : "GPU-Hours", price, pe->currency, from,
               to, cap);
    }
    if (models)
        printf("\nchecked against %zu GPU model(s) with usage in %s: every hour has one price\n",
               models, e->g->db);
    gl_prices_free(t);
    return 0;
}

/* ---- prune, backup (store_admin.h) ---- */

static const char usage_prune[] =
    "usage: gpuledger prune --before YYYY-MM [--dry-run]\n"
    "  Deletes the hourly usage rows of the closed periods before YYYY-MM and\n"
    "  compacts the database. Their frozen invoices, FOCUS rows and CSV stay\n"
    "  (invoice and export print them as before), and the daily aggregates keep\n"
    "  what summary, anomalies and report print; a pruned period takes no more\n"
    "  corrections. An open period before YYYY-MM is refused (exit 7) and\n"
    "  nothing is deleted.\n"
    "  --dry-run prints what would go and changes nothing.\n";

static int check_prune(struct gl_cmd_env *e)
{
    struct gl_period p; /* --before is required (its row) */
    if (!gl_period_parse(e->o.before, &p))
        return gl_cli_usage(e->cmd, "--before \"%s\" is not YYYY-MM", e->o.before);
    return 0;
}

static int cmd_prune(struct gl_cmd_env *e)
{
    struct gl_period before;
    gl_period_parse(e->o.before, &before);
    bool dry = e->o.dry_run != NULL;
    struct gl_error err = {0};
    struct gl_prune_report r;
    if (gl_admin_prune(e->store, &before, dry, true, &r, &err))
        return FAIL(&err);
    int64_t rows = 0;
    for (size_t i = 0; i < r.n; i++) {
        printf("%s period %s: %lld usage rows of %lld collected hours\n",
               dry ? "would prune" : "pruned", r.periods[i].period,
               (long long)r.periods[i].usage_rows, (long long)r.periods[i].hours);
        rows += r.periods[i].usage_rows;
    }
    if (!r.n)
        printf("nothing to prune before %s\n", before.name);
    else if (dry)
        printf("dry run: %zu period(s), %lld usage rows would go; nothing changed\n", r.n,
               (long long)rows);
    else
        printf("database bytes in use: %lld before, %lld after\n", (long long)r.bytes_before,
               (long long)r.bytes_after);
    gl_prune_report_free(&r);
    return 0;
}

static const char usage_backup[] =
    "usage: gpuledger backup --to FILE [--upload]\n"
    "  A consistent copy of the database (SQLite's online backup API; a run may\n"
    "  be writing meanwhile) into FILE, written beside it and renamed into\n"
    "  place. --upload also sends it to outputs.s3 as <prefix>/backups/<name>.\n";

static int cmd_backup(struct gl_cmd_env *e)
{
    struct gl_error err = {0};
    int64_t bytes = 0;
    struct gl_config *cfg = NULL;
    if (e->o.upload && gl_config_load(e->g->config, &cfg, &err))
        return FAIL(&err);
    if (cfg && !cfg->s3) {
        gl_config_free(cfg);
        return gl_cli_usage(e->cmd, "--upload needs outputs.s3 in %s", e->g->config);
    }
    int rc = 0;
    if (gl_admin_backup(e->store, e->o.to, &bytes, &err)) {
        rc = FAIL(&err);
    } else {
        gl_log(GL_LOG_INFO, "backup written file=%s bytes=%lld", e->o.to, (long long)bytes);
        struct gl_uploader *u = NULL;
        bool sent = false;
        const char *slash = strrchr(e->o.to, '/');
        struct gl_buf key;
        gl_buf_init(&key);
        gl_buf_printf(&key, "backups/%s", slash ? slash + 1 : e->o.to);
        if (cfg && (gl_uploader_new(cfg->s3, &u, &err) ||
                    gl_upload_file(u, e->o.to, key.data, &sent, &err)))
            rc = FAIL(&err);
        else if (cfg)
            gl_log(GL_LOG_INFO, "backup uploaded key=%s sent=%d", key.data, sent);
        gl_uploader_free(u);
        gl_buf_free(&key);
    }
    gl_config_free(cfg);
    return rc;
}

/* ---- the table ---- */

#define PERIOD_READ (GL_NEED_PERIOD | GL_NEED_CONFIG | GL_NEED_DB | GL_NEED_PRICES)

/* One row per command, in the order `gpuledger --help` lists them: name,
 * synopsis and summary (that listing), usage, needs, options, words,
 * check, function. */
const struct gl_command gl_commands[] = {
    {"run", "[--out DIR]", "the CronJob: collect since the watermark, write outputs", usage_run,
     GL_NEED_CONFIG | GL_NEED_LOCK | GL_NEED_STORE | GL_NEED_PRICES,
     {GL_OPT(out, "out", true), GL_OPT(now, "now", true),
      GL_OPT(reprice_closed, "reprice-closed", false)},
     NULL, NULL, cmd_run},
    {"collect", "--from TIME --to TIME", "pull and integrate [from, to) from Prometheus",
     usage_collect, GL_NEED_CONFIG | GL_NEED_LOCK | GL_NEED_STORE,
     {GL_OPT(from, "from", true), GL_OPT(to, "to", true), GL_OPT(cluster, "cluster", true),
      GL_OPT(allow_shrink, "allow-shrink", false)},
     NULL, check_collect, cmd_collect},
    {"invoice", "--period YYYY-MM", "invoices per team (JSON or Markdown)", usage_invoice,
     PERIOD_READ,
     {GL_OPT(period, "period", true), GL_OPT(team, "team", true),
      GL_OPT(format, "format", true), GL_OPT(out, "out", true),
      GL_OPT(reprice_closed, "reprice-closed", false)},
     NULL, check_format, cmd_invoice},
    {"export", "--period YYYY-MM", "FOCUS 1.2 CSV for finance", usage_export, PERIOD_READ,
     {GL_OPT(period, "period", true), GL_OPT(out, "out", true),
      GL_OPT(focus_version, "focus-version", true),
      GL_OPT(reprice_closed, "reprice-closed", false)},
     NULL, check_export, cmd_export},
    {"summary", "--period YYYY-MM", "fleet summary per cluster, GPU model and device",
     usage_summary, GL_NEED_PERIOD | GL_NEED_DB,
     {GL_OPT(period, "period", true), GL_OPT(format, "format", true)}, NULL, check_format,
     cmd_print},
    {"anomalies", "--period YYYY-MM", "GPU memory used without a matching allocation",
     usage_anomalies, GL_NEED_PERIOD | GL_NEED_DB,
     {GL_OPT(period, "period", true), GL_OPT(team, "team", true),
      GL_OPT(format, "format", true)},
     NULL, check_format, cmd_print},
    {"unit-cost", "--period YYYY-MM", "cost per unit of work (tokens, requests, steps)",
     usage_unit_cost, PERIOD_READ,
     {GL_OPT(period, "period", true), GL_OPT(format, "format", true)}, NULL, check_format,
     cmd_print},
    {"report", "--period YYYY-MM --out DIR", "monthly team reports (HTML, Markdown)",
     usage_report, PERIOD_READ,
     {GL_OPT(period, "period", true), GL_OPT(team, "team", true), GL_REQ(out, "out", "DIR")},
     NULL, NULL, cmd_report},
    {"advise", "--period YYYY-MM", "right-sizing and consolidation advice (not billed)",
     usage_advise, PERIOD_READ,
     {GL_OPT(period, "period", true), GL_OPT(format, "format", true)}, NULL, check_format,
     cmd_advise},
    {"close", "--period YYYY-MM [--force]", "freeze a complete month (later data: corrections)",
     usage_close, GL_NEED_LOCK_FIRST | PERIOD_READ,
     {GL_OPT(period, "period", true), GL_OPT(now, "now", true), GL_OPT(force, "force", false)},
     NULL, NULL, cmd_close},
    {"check", "[--at TIME]", "validate config and prices, probe Prometheus", usage_check,
     GL_NEED_CONFIG, {GL_OPT(at, "at", true)}, NULL, check_check, cmd_check},
    {"prices", "[import] [--file CSV]", "validate (against stored usage), print or install",
     usage_prices, GL_NEED_CONFIG,
     {GL_OPT(file, "file", true), GL_OPT(reprice_closed, "reprice-closed", false)}, "import",
     check_prices, cmd_prices},
    {"prune", "--before YYYY-MM [--dry-run]", "delete hourly rows of older closed periods",
     usage_prune, GL_NEED_LOCK_FIRST | GL_NEED_DB,
     {GL_REQ(before, "before", "YYYY-MM"), GL_OPT(dry_run, "dry-run", false)}, NULL, check_prune,
     cmd_prune},
    {"backup", "--to FILE [--upload]", "consistent copy of the database (online backup)",
     usage_backup, GL_NEED_DB, {GL_REQ(to, "to", "FILE"), GL_OPT(upload, "upload", false)}, NULL,
     NULL, cmd_backup},
};
const size_t gl_ncommands = sizeof gl_commands / sizeof *gl_commands;
