/* run — incremental collection per cluster and the open periods' outputs. */
#include "run.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "close.h"
#include "collect.h"
#include "invoice.h"
#include "output.h"
#include "report.h"
#include "summary.h"
#include "timeutil.h"
#include "util.h"

static enum gl_status make_dir(const char *dir, struct gl_error *err)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot create: %s", dir, strerror(errno));
    return GL_OK;
}

/* Writes what fill() prints to a FILE into path, atomically. */
static enum gl_status write_with(const char *path,
                                 enum gl_status (*fill)(void *ctx, FILE *f, struct gl_error *err),
                                 void *ctx, struct gl_error *err)
{
    char *data = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&data, &len);
    if (!f)
        return gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    enum gl_status rc = fill(ctx, f, err);
    fclose(f);
    if (!rc)
        rc = gl_write_atomic(path, data, len, err);
    free(data);
    return rc;
}

struct period_ctx {
    struct gl_store *s;
    const struct gl_period *p;
    bool md;
};

static enum gl_status fill_summary(void *ctx, FILE *f, struct gl_error *err)
{
    struct period_ctx *x = ctx;
    return gl_summary_write(x->s, x->p, x->md, f, err);
}

static enum gl_status fill_anomalies(void *ctx, FILE *f, struct gl_error *err)
{
    struct period_ctx *x = ctx;
    struct gl_anomaly_list list;
    enum gl_status rc = gl_anomalies_load(x->s, x->p, NULL, &list, err);
    if (rc)
        return rc;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "period", x->p->name);
    cJSON *arr = cJSON_AddArrayToObject(root, "anomalies");
    for (size_t i = 0; i < list.n; i++)
        cJSON_AddItemToArray(arr, gl_anomaly_json(&list.items[i]));
    char *text = cJSON_Print(root);
    fprintf(f, "%s\n", text);
    free(text);
    cJSON_Delete(root);
    gl_anomalies_free(&list);
    return GL_OK;
}

/* Every output of one open period into out_dir/<period>/. */
static enum gl_status write_period(const struct gl_config *c, struct gl_store *s,
                                   const struct gl_price_table *prices, const struct gl_period *p,
                                   const char *out_dir, struct gl_error *err)
{
    char dir[4096], sub[4200], path[4300];
    snprintf(dir, sizeof dir, "%s/%s", out_dir, p->name);
    enum gl_status rc = make_dir(dir, err);
    size_t n;
    snprintf(sub, sizeof sub, "%s/invoices", dir);
    if (!rc)
        rc = gl_output_invoices(c, s, prices, p, NULL, false, sub, &n, err);
    if (!rc)
        rc = gl_output_invoices(c, s, prices, p, NULL, true, sub, &n, err);
    snprintf(path, sizeof path, "%s/focus-%s.csv", dir, p->name);
    size_t rows;
    if (!rc)
        rc = gl_output_focus(c, s, prices, p, path, &rows, err);
    struct period_ctx x = {s, p, false};
    snprintf(path, sizeof path, "%s/summary-%s.json", dir, p->name);
    if (!rc)
        rc = write_with(path, fill_summary, &x, err);
    x.md = true;
    snprintf(path, sizeof path, "%s/summary-%s.md", dir, p->name);
    if (!rc)
        rc = write_with(path, fill_summary, &x, err);
    snprintf(path, sizeof path, "%s/anomalies-%s.json", dir, p->name);
    if (!rc)
        rc = write_with(path, fill_anomalies, &x, err);
    if (!rc) {
        /* the same invoices as the files above, corrections included */
        struct gl_invoice_set *set = NULL;
        bool frozen = false;
        snprintf(sub, sizeof sub, "%s/reports", dir);
        if (!(rc = make_dir(sub, err)) &&
            !(rc = gl_period_invoices(c, s, prices, p, &set, &frozen, err)) && set)
            rc = gl_report_write(c, s, set, NULL, sub, err);
        gl_invoices_free(set);
    }
    if (!rc)
        gl_log(GL_LOG_INFO, "wrote outputs period=%s dir=%s invoices=%zu focus_rows=%zu", p->name,
               dir, n, rows);
    return rc;
}

enum gl_status gl_run(const struct gl_config *c, struct gl_store *s,
                      const struct gl_price_table *prices, const char *out_dir, int64_t now,
                      struct gl_error *err)
{
    int64_t to = gl_floor_to(now - c->run_delay_s, 3600);
    int64_t min_from = to;
    bool partial = false;
    size_t failed = 0, attempted = 0;
    enum gl_status first_fail = GL_OK;
    enum gl_status rc;
    for (size_t i = 0; i < c->nclusters; i++) {
        const struct gl_cluster *cl = &c->clusters[i];
        int64_t wm = 0;
        bool found = false;
        if ((rc = gl_store_watermark(s, cl->name, &wm, &found, err)))
            return rc;
        if (!found && !c->run_start)
            return gl_error_set(err, GL_ERR_CONFIG,
                                "%s: run.start: cluster %s has never been collected by run; set "
                                "run.start to the first hour to collect",
                                c->path, cl->name);
        int64_t from = found ? wm - c->run_repull_s : c->run_start;
        if (c->run_start && from < c->run_start)
            from = c->run_start;
        from = gl_floor_to(from, 3600);
        if (from < min_from)
            min_from = from;
        if (to <= from) {
            gl_log(GL_LOG_INFO, "nothing to collect cluster=%s", cl->name);
            continue;
        }
        char a[32], b[32];
        gl_time_format(from, a, sizeof a);
        gl_time_format(to, b, sizeof b);
        struct gl_collect_stats st = {.advance_watermark = true};
        struct gl_error cerr = {0};
        attempted++;
        if (gl_collect(c, cl, s, from, to, &st, &cerr)) {
            partial = true;
            if (!failed++)
                first_fail = cerr.code;
            gl_log(GL_LOG_ERROR, "collect failed cluster=%s from=%s to=%s error=\"%s\"", cl->name,
                   a, b, cerr.msg);
            *err = cerr;
            continue;
        }
        gl_log(GL_LOG_INFO, "collected cluster=%s from=%s to=%s hours=%lld samples=%lld",
               cl->name, a, b, (long long)st.hours, (long long)st.samples);
    }
    /* The open periods from the earliest hour re-collected to the newest. */
    struct gl_period p;
    gl_period_of(min_from, &p);
    int64_t last = to > min_from ? to - 1 : min_from;
    if ((rc = make_dir(out_dir, err)))
        return rc;
    for (;;) {
        bool closed;
        if ((rc = gl_period_is_closed(s, p.name, &closed, err)))
            return rc;
        struct gl_error oerr = {0};
        if (closed)
            gl_log(GL_LOG_INFO, "period closed, outputs left as they are period=%s "
                                "(later data shows as corrections of the next open period)",
                   p.name);
        if (!closed && write_period(c, s, prices, &p, out_dir, &oerr)) {
            partial = true;
            gl_log(GL_LOG_ERROR, "writing outputs failed period=%s error=\"%s\"", p.name, oerr.msg);
            *err = oerr;
        }
        /* past the newest hour, stop at the first open period: it carries
         * the corrections of the closed ones re-collected */
        if (p.end > last && (!closed || p.end > now))
            break;
        struct gl_period next;
        gl_period_of(p.end, &next);
        p = next;
    }
    if (attempted > 0 && failed == attempted)
        return gl_error_set(err, first_fail ? first_fail : GL_ERR_PROM,
                            "run collected nothing (every cluster failed); last error: %s",
                            err->msg);
    if (partial) {
        char msg[sizeof err->msg];
        memcpy(msg, err->msg, sizeof msg);
        return gl_error_set(err, GL_ERR_PARTIAL, "run partly failed (what succeeded is stored); "
                                                 "last error: %s", msg);
    }
    return GL_OK;
}
