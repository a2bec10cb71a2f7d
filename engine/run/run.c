/* run — incremental collection per cluster and the open periods' outputs. */
#include "run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autoclose.h"
#include "close.h"
#include "collect.h"
#include "metrics.h"
#include "output.h"
#include "outstate.h"
#include "render.h"
#include "statement.h"
#include "store_admin.h"
#include "timeutil.h"
#include "upload.h"
#include "frozen_check.h"
#include "util.h"

static enum gl_status make_dir(const char *dir, struct gl_error *err)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot create: %s", dir, strerror(errno));
    return GL_OK;
}

/* Every output of one open period into dir (a fresh folder): one
 * statement, every renderer of the table (render.c); a file equal to the
 * one of the tree in place (keep->prev) is linked from it, not written.
 * kept (may be NULL) receives the statement once the tree is written (the
 * metrics are rendered from it, metrics.h). */
static enum gl_status write_tree(const struct gl_config *c, struct gl_store *s,
                                 const struct gl_price_table *prices, const struct gl_period *p,
                                 const char *dir, struct gl_render_keep *keep, size_t *ninvoices,
                                 size_t *nrows, struct gl_statement **kept, struct gl_error *err)
{
    struct gl_statement *st = NULL;
    enum gl_status rc = gl_statement_build_checked(c, s, prices, p, GL_ST_ALL, gl_frozen_verify, &st, err);
    if (!rc)
        rc = gl_render_tree(st, dir, keep, err);
    if (!rc && c->nwork > 0) /* the FOCUS export's companion: cost per unit of work */
        rc = gl_render_all_kept(gl_renderer_find("unit-cost-csv"), st, dir, keep, err);
    if (!rc)
        rc = gl_render_focus_rows(st, gl_render_focus_version(st), nrows, err);
    *ninvoices = st ? gl_render_count(st, GL_SCOPE_INVOICE) : 0;
    if (!rc && kept) {
        *kept = st;
        st = NULL;
    }
    gl_statement_free(st);
    return rc;
}

/* The folder a period's tree is written into before it is swapped in. */
static bool is_temp_name(const char *name)
{
    struct gl_period p;
    char period[8];
    if (name[0] != '.' || strlen(name) < 14)
        return false;
    memcpy(period, name + 1, 7);
    period[7] = '\0';
    const char *rest = name + 8;
    if (!gl_period_parse(period, &p) ||
        (strncmp(rest, ".tmp-", 5) != 0 && strncmp(rest, ".old-", 5) != 0))
        return false;
    rest += 5;
    if (!*rest)
        return false;
    for (; *rest; rest++)
        if (*rest < '0' || *rest > '9')
            return false;
    return true;
}

/* A run killed while writing leaves .<period>.tmp-<pid> (or .old-<pid>)
 * folders: nothing of them is in place, so they go. One database owns an
 * output folder (the lock keeps its runs apart). */
static enum gl_status remove_leftovers(const char *out_dir, struct gl_error *err)
{
    return gl_output_remove_entries(out_dir, is_temp_name, "cannot list", err);
}

/* Writes p's whole tree beside out_dir/<period>, swaps it into place and
 * records what it was written from; fig (may be NULL) keeps its statement
 * for the metrics. */
static enum gl_status write_period(const struct gl_config *c, struct gl_store *s,
                                   const struct gl_price_table *prices, const struct gl_period *p,
                                   const char *out_dir, const struct gl_outstate_fp *fp,
                                   struct gl_run_figures *fig, struct gl_error *err)
{
    struct gl_buf tmp, dir, files;
    gl_buf_init(&tmp);
    gl_buf_init(&dir);
    gl_buf_init(&files);
    enum gl_status rc = GL_OK;
    if (!gl_buf_printf(&tmp, "%s/.%s.tmp-%ld", out_dir, p->name, (long)getpid()) ||
        !gl_buf_printf(&dir, "%s/%s", out_dir, p->name))
        rc = gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    size_t n = 0, rows = 0;
    /* the tree in place: its unchanged files keep their inode and mtime */
    struct stat old;
    struct gl_render_keep keep = {
        .prev = !rc && lstat(dir.data, &old) == 0 && S_ISDIR(old.st_mode) ? dir.data : NULL};
    if (!rc && !(rc = gl_output_tree_remove(tmp.data, err)) && mkdir(tmp.data, 0777) != 0)
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot create: %s", tmp.data,
                          strerror(errno));
    else if (!rc) {
        struct gl_statement *st = NULL;
        rc = write_tree(c, s, prices, p, tmp.data, &keep, &n, &rows, fig ? &st : NULL, err);
        if (st)
            gl_run_figures_statement(fig, st);
        if (!rc)
            rc = gl_output_tree_files(tmp.data, &files, err);
        if (!rc)
            rc = gl_output_tree_swap(tmp.data, dir.data, err);
        if (rc)
            gl_output_tree_remove(tmp.data, NULL); /* nothing of it is in place */
    }
    if (!rc)
        rc = gl_outstate_record(s, out_dir, p->name, fp, files.data, err);
    if (!rc)
        gl_log(GL_LOG_INFO,
               "wrote outputs period=%s dir=%s invoices=%zu focus_rows=%zu files_written=%zu "
               "files_unchanged=%zu",
               p->name, dir.data, n, rows, keep.written, keep.unchanged);
    gl_buf_free(&tmp);
    gl_buf_free(&dir);
    gl_buf_free(&files);
    return rc;
}

/* The periods whose outputs run keeps complete, ascending: every open
 * period with data, the first open period after each closed one (it
 * carries the corrections), and the periods this run collected into. */
struct period_set {
    char (*names)[8];
    size_t n, cap;
};

static void period_set_add(struct period_set *ps, const char *name)
{
    for (size_t i = 0; i < ps->n; i++)
        if (strcmp(ps->names[i], name) == 0)
            return;
    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? ps->cap * 2 : 16;
        ps->names = gl_xrealloc(ps->names, ps->cap * sizeof *ps->names);
    }
    snprintf(ps->names[ps->n++], sizeof *ps->names, "%s", name);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

static enum gl_status periods_to_keep(struct gl_store *s, int64_t from, int64_t last, int64_t now,
                                      struct period_set *ps, struct gl_error *err)
{
    char(*known)[8] = NULL;
    size_t nknown = 0;
    enum gl_status rc = gl_outstate_known_periods(s, &known, &nknown, err);
    for (size_t i = 0; !rc && i < nknown; i++) {
        struct gl_period p;
        bool closed;
        gl_period_parse(known[i], &p);
        if ((rc = gl_period_is_closed(s, p.name, &closed, err)))
            break;
        if (!closed) {
            period_set_add(ps, p.name);
            continue;
        }
        struct gl_period next;
        gl_period_of(p.end, &next);
        if (next.start <= now)
            period_set_add(ps, next.name); /* skipped below when closed too */
    }
    free(known);
    /* the periods collected into, up to the first open one past the newest
     * hour (as before: it carries the corrections of closed ones) */
    struct gl_period p;
    gl_period_of(from, &p);
    while (!rc) {
        bool closed;
        if ((rc = gl_period_is_closed(s, p.name, &closed, err)))
            break;
        if (!closed)
            period_set_add(ps, p.name);
        if (p.end > last && (!closed || p.end > now))
            break;
        struct gl_period next;
        gl_period_of(p.end, &next);
        p = next;
    }
    gl_sort(ps->names, ps->n, sizeof *ps->names, name_cmp);
    return rc;
}

static bool just_closed(const struct gl_autoclose *ac, const char *period)
{
    for (size_t i = 0; i < ac->nclosed; i++)
        if (strcmp(ac->closed[i], period) == 0)
            return true;
    return false;
}

/* The output stage: each period kept complete is written unless the
 * output state says its files already reflect the stored data. */
static enum gl_status write_outputs(const struct gl_config *c, struct gl_store *s,
                                    const struct gl_price_table *prices, const char *out_dir,
                                    int64_t from, int64_t last, int64_t now,
                                    const struct gl_autoclose *ac, struct gl_run_figures *fig,
                                    bool *partial, struct gl_error *err)
{
    enum gl_status rc = make_dir(out_dir, err);
    if (rc)
        return rc;
    char *root = realpath(out_dir, NULL);
    if (!root)
        return gl_error_set(err, GL_ERR_RUNTIME, "%s: %s", out_dir, strerror(errno));
    struct period_set ps = {0};
    struct gl_outstate_fp fp = {0};
    size_t written = 0, skipped = 0;
    if ((rc = remove_leftovers(root, err)) || (rc = gl_outstate_inputs(c, prices, &fp, err)) ||
        (rc = periods_to_keep(s, from, last, now, &ps, err)))
        goto out;
    for (size_t i = 0; i < ac->nclosed; i++)
        period_set_add(&ps, ac->closed[i]);
    gl_sort(ps.names, ps.n, sizeof *ps.names, name_cmp);
    /* the period the metrics report: its statement is kept for them */
    struct gl_period mp;
    gl_metrics_period(c, now, &mp);
    bool metrics = fig && gl_metrics_configured(c);
    for (size_t i = 0; i < ps.n; i++) {
        struct gl_period p;
        bool closed;
        gl_period_parse(ps.names[i], &p);
        if ((rc = gl_period_is_closed(s, p.name, &closed, err)))
            goto out;
        if (closed && !just_closed(ac, p.name)) {
            if (p.end > from) /* the periods this run collected into */
                gl_log(GL_LOG_INFO, "period closed, outputs left as they are period=%s "
                                    "(later data shows as corrections of the next open period)",
                       p.name);
            continue;
        }
        char why[1024] = "closed by this run";
        size_t nfiles = 0;
        if ((rc = gl_outstate_fingerprint(s, &p, &fp, err)))
            goto out;
        /* closed by this run: its folder says FINAL from now on (run leaves
         * closed periods' folders alone after this) */
        if (!closed && (rc = gl_outstate_check(s, root, p.name, &fp, why, sizeof why, &nfiles,
                                               err)))
            goto out;
        if (!why[0]) {
            skipped++;
            gl_log(GL_LOG_INFO, "outputs up to date period=%s dir=%s/%s files=%zu "
                                "(data version %lld; closed periods, devices, prices and config "
                                "unchanged)",
                   p.name, root, p.name, nfiles, (long long)fp.data_version);
        } else {
            gl_log(GL_LOG_INFO, "writing outputs period=%s reason=\"%s\"", p.name, why);
            struct gl_error oerr = {0};
            bool keep = metrics && !closed && strcmp(p.name, mp.name) == 0;
            if (write_period(c, s, prices, &p, root, &fp, keep ? fig : NULL, &oerr)) {
                *partial = true;
                gl_log(GL_LOG_ERROR, "writing outputs failed period=%s error=\"%s\"", p.name,
                       oerr.msg);
                *err = oerr;
            } else {
                written++;
            }
        }
        gl_outstate_fp_clear(&fp);
    }
    gl_log(GL_LOG_INFO, "outputs dir=%s written=%zu up_to_date=%zu", root, written, skipped);
out:
    gl_outstate_fp_clear(&fp);
    free(ps.names);
    free(root);
    return rc;
}

enum gl_status gl_run(const struct gl_config *c, struct gl_store *s,
                      const struct gl_price_table *prices, const char *out_dir, int64_t now,
                      struct gl_run_figures *fig, struct gl_error *err)
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
        enum gl_status crc = gl_collect(c, cl, s, from, to, &st, &cerr);
        if (crc) /* as collect does: close sees the refused hours (autoclose.h) */
            gl_close_note_refused(c, s, cl->name, from, to, st.hours, &cerr, now);
        bool no_data = false; /* metrics.h: loud when a cluster's data stop */
        if (!crc)
            crc = gl_metrics_check_no_data(c, cl, s, found && wm > from ? wm : from, to, &st,
                                           &no_data, &cerr);
        gl_run_figures_cluster(fig, cl->name, &st, crc, no_data);
        if (crc) {
            partial = true;
            if (!failed++)
                first_fail = cerr.code;
            gl_log(GL_LOG_ERROR, "collect failed cluster=%s from=%s to=%s error=\"%s\"", cl->name,
                   a, b, cerr.msg);
            *err = cerr;
            continue;
        }
        gl_log(GL_LOG_INFO,
               "collected cluster=%s from=%s to=%s hours=%lld samples=%lld memory_samples=%lld",
               cl->name, a, b, (long long)st.hours, (long long)st.query_samples,
               (long long)st.samples);
    }
    int64_t last = to > min_from ? to - 1 : min_from;
    /* close.auto: the due months that are complete close before the
     * outputs are written; the others are reported (not a failure) */
    struct gl_autoclose ac;
    if ((rc = gl_autoclose(c, s, prices, now, &ac, err)))
        return rc;
    gl_run_figures_blocked(fig, ac.blocked, ac.nblocked);
    rc = write_outputs(c, s, prices, out_dir, min_from, last, now, &ac, fig, &partial, err);
    gl_autoclose_free(&ac);
    if (rc)
        return rc;
    /* delivery and retention (upload.h, store_admin.h): a failure is partial */
    struct gl_upload_stats up;
    struct gl_error derr = {0};
    if (c->s3 && gl_upload_outputs(c->s3, out_dir, &up, &derr)) {
        partial = true;
        *err = derr;
    }
    memset(&derr, 0, sizeof derr);
    size_t pruned = 0;
    if (c->retention_months &&
        gl_admin_prune_retention(s, c->retention_months, now, &pruned, &derr)) {
        partial = true;
        gl_log(GL_LOG_ERROR, "retention prune failed error=\"%s\"", derr.msg);
        *err = derr;
    }
    /* a pruned period takes no more corrections: the open period's figures
     * may differ from the statement its tree was written from */
    if (pruned)
        gl_run_figures_statement(fig, NULL);
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
