/* metrics — gpuledger's own metrics for a Pushgateway and node-exporter's
 * textfile collector (see metrics.h). Reads the run's figures, the
 * watermarks and the open period's statement (run's, or built once here);
 * writes HTTP and one file. */
#include "metrics.h"
#include "frozen_check.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gl_build.h"
#include "close.h"
#include "money.h"
#include "output.h"
#include "queryreg.h"
#include "statement.h"
#include "timeutil.h"

static int64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void gl_run_figures_init(struct gl_run_figures *f, const struct gl_config *c)
{
    memset(f, 0, sizeof *f);
    f->started = (int64_t)time(NULL);
    f->started_ns = mono_ns();
    f->n = c->nclusters;
    f->clusters = gl_xcalloc(f->n ? f->n : 1, sizeof *f->clusters);
    for (size_t i = 0; i < f->n; i++)
        f->clusters[i].name = c->clusters[i].name;
}

void gl_run_figures_free(struct gl_run_figures *f)
{
    if (!f)
        return;
    free(f->clusters);
    f->clusters = NULL;
    f->n = 0;
    free(f->blocked);
    f->blocked = NULL;
    f->nblocked = 0;
    gl_statement_free(f->open);
    f->open = NULL;
}

void gl_metrics_period(const struct gl_config *c, int64_t now, struct gl_period *p)
{
    gl_period_of(gl_floor_to(now - c->run_delay_s, 3600) - 1, p);
}

bool gl_metrics_configured(const struct gl_config *c)
{
    return c->metrics.pushgateway_url || c->metrics.textfile;
}

void gl_run_figures_statement(struct gl_run_figures *f, struct gl_statement *st)
{
    if (!f) {
        gl_statement_free(st);
        return;
    }
    gl_statement_free(f->open);
    f->open = st;
}

void gl_run_figures_blocked(struct gl_run_figures *f, const struct gl_close_blocked *b,
                            size_t n)
{
    if (!f || !n)
        return;
    f->blocked = gl_xrealloc(f->blocked, (f->nblocked + n) * sizeof *f->blocked);
    memcpy(f->blocked + f->nblocked, b, n * sizeof *b);
    f->nblocked += n;
}

void gl_run_figures_cluster(struct gl_run_figures *f, const char *cluster,
                            const struct gl_collect_stats *st, enum gl_status rc, bool no_data)
{
    for (size_t i = 0; f && i < f->n; i++) {
        struct gl_metrics_cluster *m = &f->clusters[i];
        if (strcmp(m->name, cluster) != 0)
            continue;
        m->attempted = true;
        m->rc = rc;
        m->no_data = no_data;
        m->chunks = st->chunks;
        m->hours = st->hours;
        m->samples = st->samples;
        m->bad_samples = st->bad_samples;
        memcpy(m->skipped, st->skipped, sizeof m->skipped);
        return;
    }
}

/* ---- loud when data is missing ---- */

/* The stored counts the error names, in the chunk's order: the registry's
 * queries marked no_data_named that the config runs, under their counts
 * names (the allocation as "allocation", whichever side joins it). */
static size_t query_names(const struct gl_config *c, const char **names, size_t max)
{
    struct gl_qslot list[GL_QR_MAX];
    int nq = gl_qr_list(c, list);
    size_t n = 0;
    for (int q = 0; q < nq && n < max; q++)
        if (list[q].row->no_data_named && gl_qr_counts_name(c, list[q].row, list[q].k))
            names[n++] = gl_qr_counts_name(c, list[q].row, list[q].k);
    return n;
}

enum gl_status gl_metrics_check_no_data(const struct gl_config *c, const struct gl_cluster *cl,
                                        struct gl_store *s, int64_t from, int64_t to,
                                        const struct gl_collect_stats *st, bool *no_data,
                                        struct gl_error *err)
{
    *no_data = false;
    if (st->chunks == 0 || to <= from)
        return GL_OK;
    /* the hours new to this run: re-pulled ones were judged before (and a
     * re-pull that lost them is refused by collect) */
    enum gl_status rc = GL_OK;
    int64_t mem = 0;
    for (int64_t h = gl_floor_to(from, 3600); !rc && h < to; h += 3600) {
        struct gl_query_counts qc;
        if (!(rc = gl_store_query_counts(s, cl->name, h, c->mem_query, &qc, err)) && qc.found)
            mem += qc.samples;
    }
    bool had = false;
    if (rc || mem > 0 || (rc = gl_query_cluster_had_samples(s, cl->name, from, &had, err)) ||
        !had)
        return rc;
    *no_data = true;
    const char *names[64];
    size_t nq = query_names(c, names, sizeof names / sizeof *names);
    struct gl_buf empty;
    gl_buf_init(&empty);
    for (size_t q = 0; !rc && q < nq; q++) {
        int64_t samples = 0;
        for (int64_t h = gl_floor_to(from, 3600); !rc && h < to; h += 3600) {
            struct gl_query_counts qc;
            if (!(rc = gl_store_query_counts(s, cl->name, h, names[q], &qc, err)) && qc.found)
                samples += qc.samples;
        }
        if (!rc && samples == 0 && !gl_buf_printf(&empty, "%s%s", empty.len ? ", " : "", names[q]))
            rc = gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    }
    if (!rc) {
        char a[32], b[32];
        gl_time_format(from, a, sizeof a);
        gl_time_format(to, b, sizeof b);
        rc = gl_error_set(err, GL_ERR_PARTIAL,
                          "cluster %s had data before and returned no samples from %s to %s "
                          "(queries without data: %s): is dcgm-exporter still scraped, and does "
                          "the cluster selector still match? (`gpuledger check` names the "
                          "likely cause)",
                          cl->name, a, b, empty.len ? empty.data : "none recorded");
    }
    gl_buf_free(&empty);
    return rc;
}

/* ---- the exposition format ---- */

bool gl_metrics_escape_label(struct gl_buf *b, const char *s)
{
    for (; *s; s++) {
        bool ok;
        switch (*s) {
        case '\\': ok = gl_buf_puts(b, "\\\\"); break;
        case '"': ok = gl_buf_puts(b, "\\\""); break;
        case '\n': ok = gl_buf_puts(b, "\\n"); break;
        default: ok = gl_buf_append(b, s, 1); break;
        }
        if (!ok)
            return false;
    }
    return true;
}

/* One series: name{k="v",...} value, labels as NULL-terminated pairs. */
struct out {
    struct gl_buf *b;
    bool oom;
};

static void family(struct out *o, const char *name, const char *help)
{
    if (!gl_buf_printf(o->b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name))
        o->oom = true;
}

static void series(struct out *o, const char *name, const char *const *labels,
                   const char *value)
{
    bool ok = gl_buf_puts(o->b, name);
    for (size_t i = 0; ok && labels[i]; i += 2)
        ok = gl_buf_printf(o->b, "%s%s=\"", i ? "," : "{", labels[i]) &&
             gl_metrics_escape_label(o->b, labels[i + 1]) && gl_buf_puts(o->b, "\"");
    if (ok && labels[0])
        ok = gl_buf_puts(o->b, "}");
    ok = ok && gl_buf_printf(o->b, " %s\n", value);
    if (!ok)
        o->oom = true;
}

static void series_int(struct out *o, const char *name, const char *const *labels, int64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)v);
    series(o, name, labels, num);
}

static void series_i128(struct out *o, const char *name, const char *const *labels, gl_i128 v,
                        int scale)
{
    char num[96];
    gl_dec_format(v, scale, num, sizeof num);
    series(o, name, labels, num);
}

static bool wanted(const char *filter, const char *cluster)
{
    return !filter || strcmp(filter, cluster) == 0;
}

/* The run's own figures, per cluster. */
static void render_run(struct out *o, const struct gl_run_figures *f, const char *filter,
                       int64_t end, int64_t dur_ns, int exit_status)
{
    char dur[48];
    snprintf(dur, sizeof dur, "%lld.%09lld", (long long)(dur_ns / 1000000000),
             (long long)(dur_ns % 1000000000));
    struct {
        const char *name, *help;
        int what;
    } fams[] = {
        {"gpuledger_run_start_timestamp_seconds", "When the last run started (Unix time).", 0},
        {"gpuledger_run_end_timestamp_seconds", "When the last run ended (Unix time).", 1},
        {"gpuledger_run_duration_seconds", "How long the last run took.", 2},
        {"gpuledger_run_exit_status",
         "The last run's exit status (0 ok, 5 partial failure; docs/operations.md, exit status).", 3},
        {"gpuledger_run_last_success_timestamp_seconds",
         "When a run last ended with exit status 0 (Unix time).", 4},
        {"gpuledger_run_cluster_collected", "1 when the last run collected a window of the cluster.",
         5},
        {"gpuledger_run_cluster_failed", "1 when the last run's collection of the cluster failed.",
         6},
        {"gpuledger_run_cluster_no_data",
         "1 when the cluster had data before and the last run's window returned no samples.", 7},
        {"gpuledger_run_chunks_stored", "Chunks of collection the last run stored.", 8},
        {"gpuledger_run_chunks_refused",
         "Chunks the last run refused to store (they held clearly less than the stored hours).",
         9},
        {"gpuledger_run_stored_seconds", "Seconds of data (whole hours) the last run stored.", 10},
        {"gpuledger_run_samples_stored", "Memory samples the last run stored.", 11},
    };
    for (size_t k = 0; k < sizeof fams / sizeof *fams; k++) {
        if (fams[k].what == 4 && exit_status != 0)
            continue;
        family(o, fams[k].name, fams[k].help);
        for (size_t i = 0; i < f->n; i++) {
            const struct gl_metrics_cluster *m = &f->clusters[i];
            if (!wanted(filter, m->name))
                continue;
            const char *l[] = {"cluster", m->name, NULL};
            int64_t v = 0;
            switch (fams[k].what) {
            case 0: v = f->started; break;
            case 1: case 4: v = end; break;
            case 2: series(o, fams[k].name, l, dur); continue;
            case 3: v = exit_status; break;
            case 5: v = m->attempted; break;
            case 6: v = m->attempted && m->rc != GL_OK; break;
            case 7: v = m->no_data; break;
            case 8: v = m->chunks; break;
            case 9: v = m->rc == GL_ERR_PARTIAL && !m->no_data; break; /* collect stops there */
            case 10: v = m->hours * 3600; break;
            case 11: v = m->samples; break;
            }
            series_int(o, fams[k].name, l, v);
        }
    }
    family(o, "gpuledger_run_samples_skipped",
           "Samples the last run skipped, by reason (NaN/Inf, negative, beyond bounds).");
    for (size_t i = 0; i < f->n; i++) {
        const struct gl_metrics_cluster *m = &f->clusters[i];
        for (int r = 0; wanted(filter, m->name) && r < GL_SKIP_N; r++) {
            const char *l[] = {"cluster", m->name, "reason", gl_skip_names[r], NULL};
            series_int(o, "gpuledger_run_samples_skipped", l, m->skipped[r]);
        }
    }
}

/* The due periods close.auto could not close: one series per blocking
 * cluster (the log line of the run names the hour ranges). */
static void render_blocked(struct out *o, const struct gl_run_figures *f, const char *filter)
{
    if (!f->nblocked)
        return;
    family(o, "gpuledger_period_close_blocked",
           "1 for a period past its settle delay that the last run could not close "
           "(close.auto): hours of the cluster missing, refused or short of the delay.");
    for (size_t i = 0; i < f->n; i++) {
        const char *cl = f->clusters[i].name;
        if (!wanted(filter, cl))
            continue;
        for (size_t k = 0; k < f->nblocked; k++) {
            const struct gl_close_blocked *b = &f->blocked[k];
            if (b->cluster && strcmp(b->cluster, cl) != 0)
                continue;
            const char *l[] = {"cluster", cl, "period", b->period, NULL};
            series_int(o, "gpuledger_period_close_blocked", l, 1);
        }
    }
}

static enum gl_status render_watermarks(struct out *o, struct gl_store *s,
                                        const struct gl_run_figures *f, const char *filter,
                                        int64_t now, struct gl_error *err)
{
    int64_t *wm = gl_xcalloc(f->n ? f->n : 1, sizeof *wm);
    bool *found = gl_xcalloc(f->n ? f->n : 1, sizeof *found);
    enum gl_status rc = GL_OK;
    for (size_t i = 0; !rc && i < f->n; i++)
        rc = gl_store_watermark(s, f->clusters[i].name, &wm[i], &found[i], err);
    if (!rc) {
        family(o, "gpuledger_watermark_timestamp_seconds",
               "Every hour of the cluster before this instant is stored (Unix time).");
        for (size_t i = 0; i < f->n; i++)
            if (found[i] && wanted(filter, f->clusters[i].name)) {
                const char *l[] = {"cluster", f->clusters[i].name, NULL};
                series_int(o, "gpuledger_watermark_timestamp_seconds", l, wm[i]);
            }
        family(o, "gpuledger_watermark_lag_seconds",
               "How far the cluster's watermark was behind the run's clock.");
        for (size_t i = 0; i < f->n; i++)
            if (found[i] && wanted(filter, f->clusters[i].name)) {
                const char *l[] = {"cluster", f->clusters[i].name, NULL};
                series_int(o, "gpuledger_watermark_lag_seconds", l, now - wm[i]);
            }
    }
    free(wm);
    free(found);
    return rc;
}

/* Billed figures summed per (cluster, team, model, kind) of one invoice. */
struct billed {
    const char *cluster, *model;
    enum gl_line_kind kind;
    gl_i128 gbh_nano, amount;
};

static void render_billing(struct out *o, const struct gl_config *c, const struct gl_statement *st,
                           const char *filter)
{
    const char *period = st->period.name;
    static const char *const names[] = {"gpuledger_billed_memory_byte_seconds",
                                        "gpuledger_billed_amount"};
    static const char *const helps[] = {
        "Billed GPU memory of the open period so far (1 GB-hour = 3.6e12 byte-seconds), as the "
        "invoices show it.",
        "Billed amount of the open period so far, in the currency's units, as the invoices show "
        "it."};
    for (int w = 0; w < 2; w++) {
        family(o, names[w], helps[w]);
        for (size_t i = 0; st->set && i < st->set->n; i++) {
            const struct gl_invoice *inv = &st->set->invoices[i];
            struct billed *b = gl_xcalloc(inv->nlines ? inv->nlines : 1, sizeof *b);
            size_t nb = 0;
            for (size_t k = 0; k < inv->nlines; k++) {
                const struct gl_invoice_line *l = &inv->lines[k];
                if (!wanted(filter, l->cluster))
                    continue;
                size_t j = 0;
                while (j < nb && !(b[j].kind == l->kind && strcmp(b[j].cluster, l->cluster) == 0 &&
                                   strcmp(b[j].model, l->model) == 0))
                    j++;
                if (j == nb)
                    b[nb++] = (struct billed){l->cluster, l->model, l->kind, 0, 0};
                /* i128 of 64-bit figures: a period's lines cannot reach its bound */
                b[j].gbh_nano += gl_line_gbh_nano(l);
                b[j].amount += l->amount;
            }
            for (size_t j = 0; j < nb; j++) {
                const char *lab[] = {"cluster", b[j].cluster, "team", inv->team,
                                     "model", b[j].model, "kind", gl_line_kind_name(b[j].kind),
                                     "period", period, w ? "currency" : NULL, c->currency, NULL};
                if (w)
                    series_i128(o, names[w], lab, b[j].amount, c->minor_digits);
                else /* byte-seconds = GB-h × 10^9 × 3600 = gbh_nano × 3600 */
                    series_i128(o, names[w], lab, b[j].gbh_nano * 3600, 0);
            }
            free(b);
        }
    }
    static const struct {
        int v;
        const char *name, *help;
    } fleet[] = {
        {GL_F_CAP, "gpuledger_fleet_capacity_byte_seconds",
         "GPU memory capacity of the open period so far, per cluster and GPU model."},
        {GL_F_USED, "gpuledger_fleet_used_byte_seconds",
         "GPU memory used by pods in the open period so far."},
        {GL_F_IDLE, "gpuledger_fleet_idle_byte_seconds",
         "Idle GPU memory (capacity nobody used) in the open period so far."},
    };
    for (size_t k = 0; k < sizeof fleet / sizeof *fleet; k++) {
        family(o, fleet[k].name, fleet[k].help);
        for (size_t i = 0; i < st->fleet.n; i++) {
            const struct gl_fleet_model *m = &st->fleet.m[i];
            if (!wanted(filter, m->cluster))
                continue;
            const char *lab[] = {"cluster", m->cluster, "model", m->model, "period", period, NULL};
            series_i128(o, fleet[k].name, lab, (gl_i128)m->v[fleet[k].v] * 1048576, 0);
        }
    }
}

static void render_anomalies(struct out *o, const struct gl_statement *st,
                             const struct gl_run_figures *f, const char *filter)
{
    family(o, "gpuledger_anomalies",
           "Anomalies of the open period so far (unallocated_use: GPU memory used without a GPU "
           "allocation; excess_devices: more whole GPUs than requested).");
    for (size_t i = 0; i < f->n; i++) {
        if (!wanted(filter, f->clusters[i].name))
            continue;
        for (int k = GL_ANOMALY_EXCESS_DEVICES; k <= GL_ANOMALY_UNALLOCATED_USE; k++) {
            int64_t n = 0;
            for (size_t a = 0; a < st->anomalies.n; a++)
                n += (int)st->anomalies.items[a].kind == k &&
                     strcmp(st->anomalies.items[a].cluster, f->clusters[i].name) == 0;
            const char *lab[] = {"cluster", f->clusters[i].name,
                                 "kind", gl_anomaly_kind_name((enum gl_anomaly_kind)k),
                                 "period", st->period.name, NULL};
            series_int(o, "gpuledger_anomalies", lab, n);
        }
    }
}

/* GPU-hours requested by Pending pods (demand waiting, never billed), per
 * cluster, team and model: micro-GPU-seconds × 1000 / 3600, 9 decimals
 * half-even as the summary prints them. */
static void render_pending(struct out *o, const struct gl_statement *st, const char *filter)
{
    static const char name[] = "gpuledger_pending_gpu_hours";
    family(o, name,
           "GPU-hours requested by pods while Pending in the open period so far (demand "
           "waiting, not billed); model \"unknown\" while the pod has no node.");
    for (size_t i = 0; i < st->pending.nk; i++) {
        const struct gl_pending_key *k = &st->pending.k[i];
        if (!wanted(filter, k->cluster))
            continue;
        const char *lab[] = {"cluster", k->cluster, "team", k->team, "model", k->model,
                             "period", st->period.name, NULL};
        series_i128(o, name, lab, gl_div_half_even((gl_i128)k->gpu_us * 1000, 3600),
                    GL_GBH_DECIMALS);
    }
}

enum gl_status gl_metrics_render(const struct gl_config *c, struct gl_store *s,
                                 const struct gl_statement *st, const struct gl_run_figures *f,
                                 const char *cluster, int64_t now, int exit_status,
                                 struct gl_buf *out, struct gl_error *err)
{
    gl_buf_reset(out);
    struct out o = {out, false};
    int64_t end = (int64_t)time(NULL);
    render_run(&o, f, cluster, end, mono_ns() - f->started_ns, exit_status);
    render_blocked(&o, f, cluster);
    enum gl_status rc = render_watermarks(&o, s, f, cluster, now, err);
    if (rc)
        return rc;
    if (st) {
        render_billing(&o, c, st, cluster);
        render_anomalies(&o, st, f, cluster);
        render_pending(&o, st, cluster);
    }
    if (o.oom)
        return gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    return GL_OK;
}

/* The statement the metrics report (gl_metrics_period's period): the one
 * run built for its tree, else one built now into *built (the caller
 * frees it); NULL when the period is closed or could not be built. */
static const struct gl_statement *open_statement(const struct gl_config *c, struct gl_store *s,
                                                 const struct gl_price_table *prices,
                                                 const struct gl_run_figures *f, int64_t now,
                                                 struct gl_statement **built)
{
    struct gl_period p;
    gl_metrics_period(c, now, &p);
    *built = NULL;
    if (f->open && !f->open->closed && strcmp(f->open->period.name, p.name) == 0)
        return f->open;
    bool closed = false;
    struct gl_error serr = {0};
    if (prices && !gl_period_is_closed(s, p.name, &closed, &serr) && !closed &&
        !gl_statement_build_checked(c, s, prices, &p,
                                    GL_ST_INVOICES | GL_ST_FLEET | GL_ST_ANOMALIES,
                                    gl_frozen_verify, built, &serr))
        return *built;
    if (!closed) /* the run's own failure says why; its figures are still worth pushing */
        gl_log(GL_LOG_WARN, "metrics without the billed figures of period=%s error=\"%s\"",
               p.name, serr.msg[0] ? serr.msg : "no prices");
    return NULL;
}

/* ---- delivery ---- */

/* base64url (RFC 4648 §5) of s, for a Pushgateway path segment. */
static void base64url(struct gl_buf *b, const char *s)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)u[i] << 16 | (i + 1 < n ? (unsigned)u[i + 1] << 8 : 0) |
                     (i + 2 < n ? u[i + 2] : 0);
        char q[5] = {tab[v >> 18 & 63], tab[v >> 12 & 63], i + 1 < n ? tab[v >> 6 & 63] : '=',
                     i + 2 < n ? tab[v & 63] : '=', 0};
        gl_buf_puts(b, q);
    }
    if (n == 0)
        gl_buf_puts(b, "=");
}

static void path_label(struct gl_buf *b, const char *name, const char *value)
{
    if (!*value || strchr(value, '/')) {
        gl_buf_printf(b, "/%s@base64/", name);
        base64url(b, value);
        return;
    }
    char *e = curl_easy_escape(NULL, value, 0);
    gl_buf_printf(b, "/%s/%s", name, e ? e : "");
    curl_free(e);
}

char *gl_metrics_group_path(const char *job, const char *cluster)
{
    struct gl_buf b;
    gl_buf_init(&b);
    gl_buf_puts(&b, "/metrics");
    path_label(&b, "job", job);
    path_label(&b, "cluster", cluster);
    return b.data; /* NULL only when out of memory */
}

static size_t keep_body(char *p, size_t size, size_t n, void *ctx)
{
    struct gl_buf *b = ctx;
    if (b->len < 4096)
        gl_buf_append(b, p, size * n < 4096 ? size * n : 4096);
    return size * n;
}

/* A secret file's first line (trailing white space cut); malloc'd. */
static enum gl_status read_secret(const char *path, char **out, struct gl_error *err)
{
    size_t len = 0;
    enum gl_status rc = gl_read_file_max(path, 64 * 1024, out, &len, err);
    if (rc)
        return rc;
    char *nl = strpbrk(*out, "\r\n");
    if (nl)
        *nl = '\0';
    return GL_OK;
}

static enum gl_status push_group(const struct gl_metrics_cfg *m, const char *cluster,
                                 const struct gl_buf *text, bool replace, struct gl_error *err)
{
    struct gl_buf url, body, hdr;
    gl_buf_init(&url);
    gl_buf_init(&body);
    gl_buf_init(&hdr);
    char *path = gl_metrics_group_path(m->job, cluster);
    size_t ul = strlen(m->pushgateway_url);
    gl_buf_printf(&url, "%.*s%s", (int)(ul && m->pushgateway_url[ul - 1] == '/' ? ul - 1 : ul),
                  m->pushgateway_url, path ? path : "");
    free(path);
    char *secret = NULL;
    enum gl_status rc = GL_OK;
    if (m->bearer_token_file)
        rc = read_secret(m->bearer_token_file, &secret, err);
    else if (m->basic_auth_file)
        rc = read_secret(m->basic_auth_file, &secret, err);
    CURL *h = rc ? NULL : curl_easy_init();
    struct curl_slist *headers = NULL;
    char errbuf[CURL_ERROR_SIZE] = "";
    if (!rc && !h)
        rc = gl_error_set(err, GL_ERR_RUNTIME, "curl_easy_init failed");
    if (!rc) {
        headers = curl_slist_append(headers, "Content-Type: text/plain; version=0.0.4");
        if (m->bearer_token_file) {
            gl_buf_printf(&hdr, "Authorization: Bearer %s", secret);
            headers = curl_slist_append(headers, hdr.data);
        } else if (m->basic_auth_file) {
            curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
            curl_easy_setopt(h, CURLOPT_USERPWD, secret);
        }
        curl_easy_setopt(h, CURLOPT_URL, url.data);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, replace ? "PUT" : "POST");
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, text->data ? text->data : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)text->len);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, m->timeout_s);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_USERAGENT, "gpuledger/" GL_VERSION);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
        if (m->ca_file)
            curl_easy_setopt(h, CURLOPT_CAINFO, m->ca_file);
        CURLcode cc = curl_easy_perform(h);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        if (cc != CURLE_OK)
            rc = gl_error_set(err, GL_ERR_PARTIAL, "metrics push %s %s: %s",
                              replace ? "PUT" : "POST", url.data,
                              errbuf[0] ? errbuf : curl_easy_strerror(cc));
        else if (status < 200 || status > 299) {
            char shown[512];
            gl_escape_ascii(body.data ? body.data : "", shown, sizeof shown);
            rc = gl_error_set(err, GL_ERR_PARTIAL, "metrics push %s %s: HTTP %ld%s%s%s",
                              replace ? "PUT" : "POST", url.data, status,
                              status == 401 || status == 403
                                  ? " (check metrics.pushgateway_bearer_token_file or "
                                    "metrics.pushgateway_basic_auth_file)"
                                  : "",
                              shown[0] ? ": " : "", shown);
        }
    }
    curl_slist_free_all(headers);
    if (h)
        curl_easy_cleanup(h);
    if (secret) {
        memset(secret, 0, strlen(secret));
        free(secret);
    }
    if (hdr.data)
        memset(hdr.data, 0, hdr.len);
    gl_buf_free(&hdr);
    gl_buf_free(&url);
    gl_buf_free(&body);
    return rc;
}

/* A failed run keeps the previous file's last-success lines (a textfile has
 * no POST): they are copied as they are, whole lines of our own format. */
static void keep_last_success(const char *path, struct gl_buf *text)
{
    char *old = NULL;
    struct gl_error ignored = {0};
    if (gl_read_file_max(path, 64 * 1024 * 1024, &old, NULL, &ignored))
        return;
    static const char name[] = "gpuledger_run_last_success_timestamp_seconds";
    bool any = false;
    for (char *line = old; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (strncmp(line, name, sizeof name - 1) == 0 && line[sizeof name - 1] == '{') {
            if (!any)
                gl_buf_printf(text,
                              "# HELP %s When a run last ended with exit status 0 (Unix time).\n"
                              "# TYPE %s gauge\n",
                              name, name);
            any = true;
            gl_buf_append(text, line, len);
            gl_buf_puts(text, "\n");
        }
        line = nl ? nl + 1 : NULL;
    }
    free(old);
}

enum gl_status gl_metrics_emit(const struct gl_config *c, struct gl_store *s,
                               const struct gl_price_table *prices,
                               const struct gl_run_figures *f, int64_t now, int exit_status,
                               struct gl_error *err)
{
    const struct gl_metrics_cfg *m = &c->metrics;
    if (!gl_metrics_configured(c))
        return GL_OK;
    struct gl_statement *built = NULL;
    const struct gl_statement *st = open_statement(c, s, prices, f, now, &built);
    struct gl_buf text;
    gl_buf_init(&text);
    enum gl_status rc = GL_OK, first = GL_OK;
    struct gl_error e = {0};
    size_t groups = 0;
    for (size_t i = 0; m->pushgateway_url && i < f->n; i++) {
        if ((rc = gl_metrics_render(c, s, st, f, f->clusters[i].name, now, exit_status, &text,
                                    &e)) ||
            (rc = push_group(m, f->clusters[i].name, &text, exit_status == 0, &e))) {
            gl_log(GL_LOG_ERROR, "metrics push failed cluster=%s error=\"%s\"",
                   f->clusters[i].name, e.msg);
            if (!first) {
                first = rc;
                *err = e;
            }
        } else {
            groups++;
        }
    }
    if (m->pushgateway_url && groups)
        gl_log(GL_LOG_INFO, "pushed metrics url=%s groups=%zu", m->pushgateway_url, groups);
    if (m->textfile) {
        if (!(rc = gl_metrics_render(c, s, st, f, NULL, now, exit_status, &text, &e))) {
            if (exit_status != 0)
                keep_last_success(m->textfile, &text);
            rc = gl_write_atomic(m->textfile, text.data ? text.data : "", text.len, &e);
        }
        if (rc) {
            gl_log(GL_LOG_ERROR, "metrics textfile failed file=%s error=\"%s\"", m->textfile,
                   e.msg);
            if (!first) {
                first = rc;
                *err = e;
            }
        } else {
            gl_log(GL_LOG_INFO, "wrote metrics file=%s bytes=%zu", m->textfile, text.len);
        }
    }
    gl_buf_free(&text);
    gl_statement_free(built);
    if (first)
        return gl_error_set(err, GL_ERR_PARTIAL, "%s", err->msg);
    return GL_OK;
}
