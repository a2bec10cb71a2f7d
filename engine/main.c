/*
 * gpuledger — command line entry point.
 *
 * Parses the global options and the subcommand, runs it, prints errors and
 * chooses the exit status (the only place that does either).
 */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "close.h"
#include "collect.h"
#include "config.h"
#include "error.h"
#include "export.h"
#include "fetch.h"
#include "gl_build.h"
#include "invoice.h"
#include "output.h"
#include "parse.h"
#include "price.h"
#include "render.h"
#include "report.h"
#include "statement.h"
#include "run.h"
#include "store.h"
#include "summary.h"
#include "timeutil.h"
#include "util.h"



static const char usage_main[] =
    "usage: gpuledger [--config FILE] [--db FILE] [--quiet|--verbose] COMMAND [options]\n"
    "\n"
    "GPU chargeback for Kubernetes: bills GPU memory (GB-hours) per team.\n"
    "\n"
    "commands:\n"
    "  run     [--out DIR]             the CronJob: collect since the watermark, write outputs\n"
    "  collect --from TIME --to TIME   pull and integrate [from, to) from Prometheus\n"
    "  invoice --period YYYY-MM        invoices per team (JSON or Markdown)\n"
    "  export  --period YYYY-MM        FOCUS 1.2 CSV for finance\n"
    "  summary --period YYYY-MM        fleet summary per cluster, GPU model and device\n"
    "  anomalies --period YYYY-MM      GPU memory used without a matching allocation\n"
    "  report  --period YYYY-MM --out DIR   monthly team reports (HTML, Markdown)\n"
    "  close   --period YYYY-MM        freeze a finished month (later data: corrections)\n"
    "  check   [--at TIME]             validate config and prices, probe Prometheus\n"
    "  prices  [import] [--file CSV]   validate (against stored usage), print or install\n"
    "\n"
    "global options:\n"
    "  --config FILE   configuration (default gpuledger.json)\n"
    "  --db FILE       SQLite database (default gpuledger.db)\n"
    "  --quiet         errors only on stderr;  --verbose  debug events too\n"
    "  --version, --help\n"
    "\n"
    "TIME is RFC 3339 UTC, e.g. 2026-10-01T00:00:00Z. Run 'gpuledger COMMAND --help'.\n"
    "exit status: 0 ok, 1 runtime error, 2 usage, 3 config/prices, 4 Prometheus, 5 partial,\n"
    "  6 locked by another run, 7 period state (closed twice, not finished)\n";

static int load_config(const struct gl_cli *g, struct gl_config **cfg)
{
    struct gl_error err = {0};
    if (gl_config_load(g->config, cfg, &err))
        return gl_cli_fail(&err);
    return 0;
}

/* ---- collect ---- */

static const char usage_collect[] =
    "usage: gpuledger collect --from TIME --to TIME [--cluster NAME] [--allow-shrink]\n"
    "  Pulls the half-open window [from, to), widened to whole UTC hours, and\n"
    "  replaces the stored hours (re-collecting never double counts). Every\n"
    "  configured cluster, or only NAME.\n"
    "  A chunk that would replace stored hours with clearly less data (a query\n"
    "  with no samples where some were stored, or fewer series than\n"
    "  collection.shrink_tolerance allows) is refused (exit 5) and the stored\n"
    "  hours are kept; --allow-shrink replaces them anyway.\n";

static int cmd_collect(const struct gl_cli *g, int argc, char **argv)
{
    static const struct gl_cli_opt specs[] = {
        {"from", true}, {"to", true}, {"cluster", true}, {"allow-shrink", false}};
    const char *v[4] = {0};
    bool help;
    int rc = gl_cli_parse(argc, argv, specs, 4, v, usage_collect, &help);
    if (rc)
        return rc;
    if (help) {
        fputs(usage_collect, stdout);
        return 0;
    }
    int64_t from, to;
    if (!v[0] || !v[1])
        return gl_cli_usage(usage_collect, "%s", "--from and --to are required");
    if (!gl_time_parse(v[0], &from))
        return gl_cli_usage(usage_collect, "--from \"%s\" is not an RFC 3339 UTC time", v[0]);
    if (!gl_time_parse(v[1], &to))
        return gl_cli_usage(usage_collect, "--to \"%s\" is not an RFC 3339 UTC time", v[1]);
    if (to <= from)
        return gl_cli_usage(usage_collect, "%s", "--to must be after --from");
    struct gl_config *cfg = NULL;
    if ((rc = load_config(g, &cfg)))
        return rc;
    struct gl_error err = {0};
    struct gl_store *s = NULL;
    if (v[2] && !gl_config_cluster(cfg, v[2])) {
        gl_config_free(cfg);
        return gl_cli_usage(usage_collect, "no cluster \"%s\" in the config", v[2]);
    }
    struct gl_lock *lock = NULL;
    if (gl_lock_acquire(g->db, &lock, &err) || gl_store_open(g->db, &s, &err))
        rc = gl_cli_fail(&err);
    /* Each cluster on its own: one that fails does not stop the others. */
    int failed = 0, done = 0, first_rc = 0;
    for (size_t i = 0; !rc && i < cfg->nclusters; i++) {
        const struct gl_cluster *cl = &cfg->clusters[i];
        if (v[2] && strcmp(v[2], cl->name) != 0)
            continue;
        struct gl_collect_stats st = {.allow_shrink = v[3] != NULL};
        if (gl_collect(cfg, cl, s, from, to, &st, &err)) {
            int code = gl_cli_fail(&err);
            if (!first_rc)
                first_rc = code;
            failed++;
            continue;
        }
        done++;
        gl_log(GL_LOG_INFO,
               "collected cluster=%s from=%s to=%s hours=%lld chunks=%lld samples=%lld "
               "bad_samples=%lld",
               cl->name, v[0], v[1], (long long)st.hours, (long long)st.chunks,
               (long long)st.samples, (long long)st.bad_samples);
    }
    if (!rc && failed)
        rc = done ? GL_ERR_PARTIAL : first_rc;
    gl_store_close(s);
    gl_lock_release(lock);
    gl_config_free(cfg);
    return rc;
}

/* ---- invoice / export / close ---- */

/* Reading commands must not create an empty database from a mistyped path. */
static bool db_exists(const struct gl_cli *g, struct gl_error *err)
{
    struct stat sb;
    if (stat(g->db, &sb) == 0)
        return true;
    gl_error_set(err, GL_ERR_RUNTIME, "%s: no database (run 'gpuledger collect' first)", g->db);
    return false;
}

/* Loads config, prices and the database a period command needs. */
static int open_for_period(const struct gl_cli *g, const char *period, struct gl_period *p,
                           struct gl_config **cfg, struct gl_store **s,
                           struct gl_price_table **prices, const char *usage)
{
    if (!period)
        return gl_cli_usage(usage, "%s", "--period YYYY-MM is required");
    if (!gl_period_parse(period, p))
        return gl_cli_usage(usage, "--period \"%s\" is not YYYY-MM", period);
    int rc;
    if ((rc = load_config(g, cfg)))
        return rc;
    struct gl_error err = {0};
    if (!db_exists(g, &err))
        return gl_cli_fail(&err);
    if (gl_store_open(g->db, s, &err) ||
        gl_prices_load_config(*cfg, prices, &err))
        return gl_cli_fail(&err);
    return 0;
}

static const char usage_invoice[] =
    "usage: gpuledger invoice --period YYYY-MM [--team ID] [--format json|md] [--out DIR]\n"
    "  One invoice per team with usage in the period. Without --out, prints all\n"
    "  (JSON: {\"period\", \"invoices\": [...]}); with --out, writes\n"
    "  DIR/invoice-<period>-<team>.json or .md. A closed period prints its\n"
    "  frozen invoices; an open one includes corrections of closed periods.\n";

static int cmd_invoice(const struct gl_cli *g, int argc, char **argv)
{
    static const struct gl_cli_opt specs[] = {
        {"period", true}, {"team", true}, {"format", true}, {"out", true}};
    const char *v[4] = {0};
    bool help;
    int rc = gl_cli_parse(argc, argv, specs, 4, v, usage_invoice, &help);
    if (rc)
        return rc;
    if (help) {
        fputs(usage_invoice, stdout);
        return 0;
    }
    const char *format = v[2] ? v[2] : "json";
    bool md = strcmp(format, "md") == 0;
    if (!md && strcmp(format, "json") != 0)
        return gl_cli_usage(usage_invoice, "--format \"%s\" is not json or md", format);
    struct gl_period p;
    struct gl_config *cfg = NULL;
    struct gl_store *s = NULL;
    struct gl_price_table *prices = NULL;
    rc = open_for_period(g, v[0], &p, &cfg, &s, &prices, usage_invoice);
    struct gl_error err = {0};
    size_t n = 0;
    struct gl_statement *st = NULL;
    if (!rc && (gl_statement_build(cfg, s, prices, &p, GL_ST_INVOICES, &st, &err) ||
                gl_output_invoices(st, v[1], md, v[3], &n, &err)))
        rc = gl_cli_fail(&err);
    else if (!rc && v[3])
        gl_log(GL_LOG_INFO, "wrote invoices period=%s count=%zu dir=%s", p.name, n, v[3]);
    gl_statement_free(st);
    gl_prices_free(prices);
    gl_store_close(s);
    gl_config_free(cfg);
    return rc;
}

static const char usage_export[] =
    "usage: gpuledger export --period YYYY-MM [--out FILE]\n"
    "  FOCUS 1.2 CSV, one row per team x cluster x GPU model x kind x price entry\n"
    "  x day, to stdout, or with --out to FILE plus FILE.metadata.json. A closed\n"
    "  period prints its frozen rows; an open one carries correction rows for\n"
    "  closed periods.\n";

static int cmd_export(const struct gl_cli *g, int argc, char **argv)
{
    static const struct gl_cli_opt specs[] = {{"period", true}, {"out", true}};
    const char *v[2] = {0};
    bool help;
    int rc = gl_cli_parse(argc, argv, specs, 2, v, usage_export, &help);
    if (rc)
        return rc;
    if (help) {
        fputs(usage_export, stdout);
        return 0;
    }
    struct gl_period p;
    struct gl_config *cfg = NULL;
    struct gl_store *s = NULL;
    struct gl_price_table *prices = NULL;
    rc = open_for_period(g, v[0], &p, &cfg, &s, &prices, usage_export);
    struct gl_error err = {0};
    size_t rows = 0;
    struct gl_statement *st = NULL;
    if (!rc && (gl_statement_build(cfg, s, prices, &p, GL_ST_INVOICES, &st, &err) ||
                gl_output_focus(st, v[1], &rows, &err)))
        rc = gl_cli_fail(&err);
    else if (!rc && v[1])
        gl_log(GL_LOG_INFO, "wrote FOCUS CSV period=%s file=%s rows=%zu", p.name, v[1], rows);
    gl_statement_free(st);
    gl_prices_free(prices);
    gl_store_close(s);
    gl_config_free(cfg);
    return rc;
}

static bool parse_now(const char *v, int64_t *now)
{
    if (!v) {
        *now = (int64_t)time(NULL);
        return true;
    }
    return gl_time_parse(v, now);
}

static const char usage_close[] =
    "usage: gpuledger close --period YYYY-MM [--now TIME]\n"
    "  Freezes a finished month: its invoices and FOCUS rows never change again.\n"
    "  Data collected later that changes it becomes correction rows of the\n"
    "  next open month. Closing twice, or a month not yet over, is an error.\n";

static int cmd_close(const struct gl_cli *g, int argc, char **argv)
{
    static const struct gl_cli_opt specs[] = {{"period", true}, {"now", true}};
    const char *v[2] = {0};
    bool help;
    int rc = gl_cli_parse(argc, argv, specs, 2, v, usage_close, &help);
    if (rc)
        return rc;
    if (help) {
        fputs(usage_close, stdout);
        return 0;
    }
    int64_t now;
    if (!parse_now(v[1], &now))
        return gl_cli_usage(usage_close, "--now \"%s\" is not an RFC 3339 UTC time", v[1]);
    struct gl_period p;
    struct gl_config *cfg = NULL;
    struct gl_store *s = NULL;
    struct gl_price_table *prices = NULL;
    struct gl_error err = {0};
    struct gl_lock *lock = NULL;
    if (gl_lock_acquire(g->db, &lock, &err))
        return gl_cli_fail(&err); /* before the database is even opened */
    rc = open_for_period(g, v[0], &p, &cfg, &s, &prices, usage_close);
    if (!rc && gl_period_close(cfg, s, prices, &p, now, &err))
        rc = gl_cli_fail(&err);
    else if (!rc)
        gl_log(GL_LOG_INFO, "closed period=%s", p.name);
    gl_prices_free(prices);
    gl_store_close(s);
    gl_lock_release(lock); /* after the store: see gl_lock_acquire */
    gl_config_free(cfg);
    return rc;
}

/* ---- run ---- */

static const char usage_run[] =
    "usage: gpuledger run [--out DIR] [--now TIME]\n"
    "  What the CronJob calls: collects every cluster from its watermark (or\n"
    "  run.start) up to now - run.delay_minutes, re-pulling run.repull_hours for\n"
    "  late samples, then writes the open periods' invoices, FOCUS CSV, summary,\n"
    "  anomalies and reports into DIR/<period>/ (default run.out_dir, else ./out).\n"
    "  Exit 0: all done; 5: partly failed (what succeeded is stored); 6: locked.\n";

static int cmd_run(const struct gl_cli *g, int argc, char **argv)
{
    static const struct gl_cli_opt specs[] = {{"out", true}, {"now", true}};
    const char *v[2] = {0};
    bool help;
    int rc = gl_cli_parse(argc, argv, specs, 2, v, usage_run, &help);
    if (rc)
        return rc;
    if (help) {
        fputs(usage_run, stdout);
        return 0;
    }
    int64_t now;
    if (!parse_now(v[1], &now))
        return gl_cli_usage(usage_run, "--now \"%s\" is not an RFC 3339 UTC time", v[1]);
    struct gl_config *cfg = NULL;
    if ((rc = load_config(g, &cfg)))
        return rc;
    struct gl_error err = {0};
    struct gl_store *s = NULL;
    struct gl_price_table *prices = NULL;
    struct gl_lock *lock = NULL;
    const char *out = v[0] ? v[0] : cfg->run_out_dir ? cfg->run_out_dir : "out";
    if (gl_lock_acquire(g->db, &lock, &err) || gl_store_open(g->db, &s, &err) ||
        gl_prices_load_config(cfg, &prices, &err) ||
        gl_run(cfg, s, prices, out, now, &err))
        rc = gl_cli_fail(&err);
    gl_prices_free(prices);
    gl_store_close(s);
    gl_lock_release(lock);
    gl_config_free(cfg);
    return rc;
}

/* ---- summary ---- */

static const char usage_summary[] =
    "usage: gpuledger summary --period YYYY-MM [--format json|md]\n"
    "  Fleet summary per cluster and GPU model, in GB-hours: capacity, memory\n"
    "  used by pods, driver-reserved, unattributed, idle, and excess.\n";

static int cmd_summary(const struct gl_cli *g, int argc, char **argv)
{
    static const struct gl_cli_opt specs[] = {{"period", true}, {"format", true}};
    const char *v[2] = {0};
    bool help;
    int rc = gl_cli_parse(argc, argv, specs, 2, v, usage_summary, &help);
    if (rc)
        return rc;
    if (help) {
        fputs(usage_summary, stdout);
        return 0;
    }
    struct gl_period p;
    if (!v[0] || !gl_period_parse(v[0], &p))
        return gl_cli_usage(usage_summary, "%s", "--period YYYY-MM is required");
    bool md = v[1] && strcmp(v[1], "md") == 0;
    if (v[1] && !md && strcmp(v[1], "json") != 0)
        return gl_cli_usage(usage_summary, "--format \"%s\" is not json or md", v[1]);
    struct gl_error err = {0};
    struct gl_store *s = NULL;
    struct gl_statement *st = NULL;
    if (!db_exists(g, &err) || gl_store_open(g->db, &s, &err) ||
        gl_statement_build(NULL, s, NULL, &p, GL_ST_FLEET, &st, &err) ||
        (md ? gl_summary_md : gl_summary_json)(st, stdout, &err))
        rc = gl_cli_fail(&err);
    gl_statement_free(st);
    gl_store_close(s);
    return rc;
}

/* ---- anomalies ---- */

static const char usage_anomalies[] =
    "usage: gpuledger anomalies --period YYYY-MM [--team ID] [--format json|md]\n"
    "  Pods that used GPU memory without holding a GPU allocation on that node\n"
    "  (unallocated_use), or on more whole GPUs than they requested there\n"
    "  (excess_devices). Both are billed as used.\n";

static int cmd_anomalies(const struct gl_cli *g, int argc, char **argv)
{
    static const struct gl_cli_opt specs[] = {{"period", true}, {"team", true}, {"format", true}};
    const char *v[3] = {0};
    bool help;
    int rc = gl_cli_parse(argc, argv, specs, 3, v, usage_anomalies, &help);
    if (rc)
        return rc;
    if (help) {
        fputs(usage_anomalies, stdout);
        return 0;
    }
    struct gl_period p;
    if (!v[0] || !gl_period_parse(v[0], &p))
        return gl_cli_usage(usage_anomalies, "%s", "--period YYYY-MM is required");
    bool md = v[2] && strcmp(v[2], "md") == 0;
    if (v[2] && !md && strcmp(v[2], "json") != 0)
        return gl_cli_usage(usage_anomalies, "--format \"%s\" is not json or md", v[2]);
    struct gl_error err = {0};
    struct gl_store *s = NULL;
    struct gl_statement *st = NULL;
    if (!db_exists(g, &err) || gl_store_open(g->db, &s, &err) ||
        gl_statement_build(NULL, s, NULL, &p, GL_ST_ANOMALIES, &st, &err))
        rc = gl_cli_fail(&err);
    else if (md)
        gl_render_anomalies_md(st, v[1], stdout);
    else
        gl_render_anomalies_json(st, v[1], stdout);
    gl_statement_free(st);
    gl_store_close(s);
    return rc;
}

/* ---- report ---- */

static const char usage_report[] =
    "usage: gpuledger report --period YYYY-MM [--team ID] --out DIR\n"
    "  Monthly reports: per team DIR/report-<period>-<team>.html (self-contained,\n"
    "  inline SVG charts) and .md, and the fleet page DIR/fleet-<period>.html and\n"
    "  .md. With --team, only that team's pages (and the fleet page).\n";

static int cmd_report(const struct gl_cli *g, int argc, char **argv)
{
    static const struct gl_cli_opt specs[] = {{"period", true}, {"team", true}, {"out", true}};
    const char *v[3] = {0};
    bool help;
    int rc = gl_cli_parse(argc, argv, specs, 3, v, usage_report, &help);
    if (rc)
        return rc;
    if (help) {
        fputs(usage_report, stdout);
        return 0;
    }
    struct gl_period p;
    if (!v[0])
        return gl_cli_usage(usage_report, "%s", "--period YYYY-MM is required");
    if (!gl_period_parse(v[0], &p))
        return gl_cli_usage(usage_report, "--period \"%s\" is not YYYY-MM", v[0]);
    if (!v[2] || !*v[2])
        return gl_cli_usage(usage_report, "%s", "--out DIR is required");
    struct gl_config *cfg = NULL;
    struct gl_store *s = NULL;
    struct gl_price_table *prices = NULL;
    rc = open_for_period(g, v[0], &p, &cfg, &s, &prices, usage_report);
    struct gl_error err = {0};
    struct gl_statement *st = NULL;
    if (!rc && (gl_statement_build(cfg, s, prices, &p, GL_ST_PAGES, &st, &err) ||
                gl_report_write(st, v[1], v[2], &err)))
        rc = gl_cli_fail(&err);
    gl_statement_free(st);
    gl_prices_free(prices);
    gl_store_close(s);
    gl_config_free(cfg);
    return rc;
}

/* ---- check / prices ---- */

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
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(gl_store_db(s),
                           "SELECT DISTINCT d.model, u.hour FROM usage u JOIN device d "
                           "ON d.id = u.device_id WHERE u.kind IN ('memory_used', "
                           "'reserved_unused_billed', 'idle', 'reserved', 'unattributed') "
                           "ORDER BY d.model, u.hour",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = gl_store_fail(s, "reading models", err);
        gl_store_close(s);
        return rc;
    }
    char last[512] = "";
    int sr;
    while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *model = (const char *)sqlite3_column_text(st, 0);
        int64_t hour = sqlite3_column_int64(st, 1);
        if (strcmp(model, last) != 0) {
            snprintf(last, sizeof last, "%s", model);
            (*models)++;
            if ((rc = gl_prices_check_model(t, model, err)))
                break;
        }
        if (gl_prices_find(t, model, hour) < 0) {
            char ts[32];
            gl_time_format(hour, ts, sizeof ts);
            rc = gl_error_set(err, GL_ERR_CONFIG,
                              "%s: no price for GPU model \"%s\" at %s, which has usage in %s",
                              t->file, model, ts, db);
        }
    }
    sqlite3_finalize(st);
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

static const char usage_check[] =
    "usage: gpuledger check [--at TIME]\n"
    "  Validates the config, the query files and the price table, reaches\n"
    "  Prometheus, reports how many series each query returns at TIME (default:\n"
    "  now), and dry-runs the collection of the hour before TIME: devices\n"
    "  without FB_RESERVED or without memory metrics, process-mode sources that\n"
    "  look like device copies, teams missing from the catalogue. Nothing is\n"
    "  stored.\n";

static int cmd_check(const struct gl_cli *g, int argc, char **argv)
{
    static const struct gl_cli_opt specs[] = {{"at", true}};
    const char *v[1] = {0};
    bool help;
    int rc = gl_cli_parse(argc, argv, specs, 1, v, usage_check, &help);
    if (rc)
        return rc;
    if (help) {
        fputs(usage_check, stdout);
        return 0;
    }
    int64_t at = (int64_t)time(NULL);
    if (v[0] && !gl_time_parse(v[0], &at))
        return gl_cli_usage(usage_check, "--at \"%s\" is not an RFC 3339 UTC time", v[0]);
    struct gl_config *cfg = NULL;
    if ((rc = load_config(g, &cfg)))
        return rc;
    printf("config: %s ok\n", g->config);
    struct gl_error err = {0};
    struct gl_price_table *prices = NULL;
    if (gl_prices_load_config(cfg, &prices, &err)) {
        gl_config_free(cfg);
        return gl_cli_fail(&err);
    }
    size_t models = 0;
    if (prices_against_db(g->db, prices, &models, &err)) {
        gl_prices_free(prices);
        gl_config_free(cfg);
        return gl_cli_fail(&err);
    }
    printf("prices: %s ok (%zu entries%s)\n", prices->file, prices->n,
           models ? ", a price for every model and hour with stored usage" : "");
    gl_prices_free(prices);
    const char *fixed[] = {cfg->mem_query, "fb_free", "fb_reserved", "pod_labels",
                           "namespace_labels", "allocation", "node_labels"};
    size_t nnames = sizeof fixed / sizeof *fixed + cfg->ncompute_queries;
    for (size_t ci = 0; !rc && ci < cfg->nclusters; ci++) {
        const struct gl_cluster *cl = &cfg->clusters[ci];
        printf("cluster %s: %s%s%s\n", cl->name, cl->prom.url, cl->selector[0] ? " selector " : "",
               cl->selector);
        print_watermark(g->db, cl->name, at);
        struct gl_prom *prom = NULL;
        struct gl_buf body;
        gl_buf_init(&body);
        if (gl_prom_new(&cl->prom, &prom, &err)) {
            rc = gl_cli_fail(&err);
            break;
        }
        int missing = 0;
        for (size_t i = 0; i < nnames && !rc; i++) {
            const char *name = i < sizeof fixed / sizeof *fixed
                                   ? fixed[i]
                                   : cfg->compute_queries[i - sizeof fixed / sizeof *fixed];
            char *q = NULL;
            if (gl_config_query(cfg, cl, name, &q, &err) ||
                gl_prom_query(prom, q, at, &body, &err)) {
                rc = gl_cli_fail(&err);
                free(q);
                break;
            }
            cJSON *root = cJSON_ParseWithLength(body.data, body.len);
            const cJSON *res = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(root, "data"), "result");
            int n = cJSON_IsArray(res) ? cJSON_GetArraySize(res) : -1;
            printf("  query %-18s %d series%s\n", name, n,
                   n <= 0 ? "  (NO DATA at the probe time)" : "");
            if (n <= 0)
                missing++;
            cJSON_Delete(root);
            free(q);
        }
        gl_buf_free(&body);
        gl_prom_free(prom);
        if (rc)
            break;
        printf("  prometheus reachable; %d of %zu queries without data\n", missing, nnames);
        struct gl_collect_stats st = {.notes = gl_intern_new()};
        int64_t hour = gl_floor_to(at, 3600);
        if (gl_collect(cfg, cl, NULL, hour - 3600, hour, &st, &err)) {
            rc = gl_cli_fail(&err);
        } else {
            printf("  dry run of the hour before %s: %lld samples, %lld invalid, %lld device(s) "
                   "looking like copies\n",
                   v[0] ? v[0] : "now", (long long)st.samples, (long long)st.bad_samples,
                   (long long)st.copy_warnings);
            for (int32_t i = 0; i < gl_intern_count(st.notes); i++)
                printf("  note: %s\n", gl_intern_str(st.notes, i));
        }
        gl_intern_free(st.notes);
    }
    gl_config_free(cfg);
    return rc;
}

static const char usage_prices[] =
    "usage: gpuledger prices [--file CSV]\n"
    "       gpuledger prices import --file CSV\n"
    "  Validates a price table (default: the configured one) and prints it. With\n"
    "  a database (--db), also checks it against every GPU model and hour with\n"
    "  stored usage: a price for each, and no two overlapping rows. `import`\n"
    "  validates CSV the same way, then installs it as prices.file (atomically).\n";

static int cmd_prices(const struct gl_cli *g, int argc, char **argv)
{
    bool import = argc > 1 && strcmp(argv[1], "import") == 0;
    if (import) {
        argc--;
        argv++;
    }
    static const struct gl_cli_opt specs[] = {{"file", true}};
    const char *v[1] = {0};
    bool help;
    int rc = gl_cli_parse(argc, argv, specs, 1, v, usage_prices, &help);
    if (rc)
        return rc;
    if (help) {
        fputs(usage_prices, stdout);
        return 0;
    }
    if (import && !v[0])
        return gl_cli_usage(usage_prices, "%s", "prices import needs --file CSV");
    struct gl_config *cfg = NULL;
    if ((rc = load_config(g, &cfg)))
        return rc;
    struct gl_error err = {0};
    struct gl_price_table *t = NULL;
    size_t models = 0;
    if ((v[0] ? gl_prices_load(v[0], cfg->currency, &t, &err)
              : gl_prices_load_config(cfg, &t, &err)) ||
        prices_against_db(g->db, t, &models, &err)) {
        gl_prices_free(t);
        gl_config_free(cfg);
        return gl_cli_fail(&err);
    }
    if (import) {
        char *text = NULL;
        size_t len = 0;
        if (!cfg->prices_file)
            gl_error_set(&err, GL_ERR_CONFIG,
                         "%s: prices are configured as prices.entries; import needs prices.file",
                         cfg->path);
        else if (!gl_read_file(v[0], &text, &len, &err))
            gl_write_atomic(cfg->prices_file, text, len, &err);
        free(text);
        if (err.msg[0]) {
            gl_prices_free(t);
            gl_config_free(cfg);
            return gl_cli_fail(&err);
        }
        gl_log(GL_LOG_INFO, "imported prices entries=%zu file=%s models_checked=%zu", t->n,
               cfg->prices_file, models);
        gl_prices_free(t);
        gl_config_free(cfg);
        return 0;
    }
    printf("| id | model pattern | unit | price | valid from | valid to | capacity GB |\n");
    printf("|---|---|---|---:|---|---|---:|\n");
    for (size_t i = 0; i < t->n; i++) {
        const struct gl_price_entry *e = &t->entries[i];
        char price[80], from[32], to[32] = "open", cap[80] = "";
        gl_dec_format_trim(e->price12, GL_PRICE_DECIMALS, price, sizeof price);
        gl_time_format(e->valid_from, from, sizeof from);
        if (e->valid_to != INT64_MAX)
            gl_time_format(e->valid_to, to, sizeof to);
        if (e->has_capacity)
            gl_dec_format_trim(e->capacity_gb12, GL_PRICE_DECIMALS, cap, sizeof cap);
        printf("| %s | `", e->id);
        gl_md_cell(stdout, e->pattern);
        printf("` | %s | %s %s | %s | %s | %s |\n",
               e->unit == GL_PRICE_GB_HOURS ? "GB-Hours" : "GPU-Hours", price, e->currency, from,
               to, cap);
    }
    if (models)
        printf("\nchecked against %zu GPU model(s) with usage in %s: every hour has one price\n",
               models, g->db);
    gl_prices_free(t);
    gl_config_free(cfg);
    return 0;
}

int main(int argc, char **argv)
{
    struct gl_cli g = {"gpuledger.json", "gpuledger.db"};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_main, stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            puts("gpuledger " GL_VERSION);
            return 0;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            gl_log_threshold = GL_LOG_ERROR;
        } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
            gl_log_threshold = GL_LOG_DEBUG;
        } else if (strcmp(a, "--config") == 0 && i + 1 < argc) {
            g.config = argv[++i];
        } else if (strncmp(a, "--config=", 9) == 0) {
            g.config = a + 9;
        } else if (strcmp(a, "--db") == 0 && i + 1 < argc) {
            g.db = argv[++i];
        } else if (strncmp(a, "--db=", 5) == 0) {
            g.db = a + 5;
        } else {
            return gl_cli_usage(usage_main, "unknown or incomplete option \"%s\"", a);
        }
    }
    if (i >= argc)
        return gl_cli_usage(usage_main, "%s", "a command is required");
    const char *cmd = argv[i];
    int sub_argc = argc - i;
    char **sub_argv = argv + i;
    static const struct {
        const char *name;
        int (*fn)(const struct gl_cli *, int, char **);
    } cmds[] = {
        {"collect", cmd_collect}, {"invoice", cmd_invoice}, {"export", cmd_export},
        {"summary", cmd_summary}, {"check", cmd_check},     {"prices", cmd_prices},
        {"anomalies", cmd_anomalies}, {"report", cmd_report},
        {"close", cmd_close},         {"run", cmd_run},
    };
    for (size_t k = 0; k < sizeof cmds / sizeof *cmds; k++)
        if (strcmp(cmd, cmds[k].name) == 0)
            return cmds[k].fn(&g, sub_argc, sub_argv);
    return gl_cli_usage(usage_main, "unknown command \"%s\"", cmd);
}
