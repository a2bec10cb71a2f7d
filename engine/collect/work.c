/*
 * work — units of work per pod and hour from the work counters
 * (work.counters, work.presets), for the cost per unit of work: a side
 * collector (side.h), collected before the usage.
 *
 * Reads: each counter as a range query on the collection's step, one UTC
 * day at a time, from an hour before the day (the sample before the
 * window's first one). Writes: work_units rows (schema/012), the window's
 * hours replaced at once, after every counter was read and checked: a
 * refused value leaves the database as it was, and since the side
 * collector runs first, the window's usage too.
 *
 * The increase is exact and observed only: per series, the sum of the
 * differences between consecutive samples, a decrease being a restart
 * whose new value counts from 0 (Prometheus' increase rule), each
 * difference in the hour of its later sample; nothing is extrapolated to
 * the window's edges (a bill counts the work seen, extrapolation would
 * invent some). A difference across a gap (steps without a sample) is
 * still counted, the counter being cumulative, and the row's gaps says
 * how many. A value that is negative, not a whole number or not below
 * 2^53 is refused, naming the counter, the series and the time.
 */
#include "side.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch.h"
#include "parse.h"
#include "store_work.h"
#include "timeutil.h"
#include "util.h"

/* The sample before a day's first one is looked for this far back. */
#define WORK_LOOKBACK 3600
/* Counter values are exact in a double below 2^53. */
#define WORK_MAX_VALUE 9007199254740992.0

struct rows {
    struct gl_work_row *r;
    size_t n, cap;
};

static void rows_free(struct rows *x)
{
    for (size_t i = 0; i < x->n; i++) {
        free((char *)x->r[i].ns);
        free((char *)x->r[i].pod);
    }
    free(x->r);
    memset(x, 0, sizeof *x);
}

/* Labels as {a="b",...}, for messages. */
static void labels_text(const struct gl_label *l, size_t nl, char *buf, size_t n)
{
    size_t at = (size_t)snprintf(buf, n, "{");
    for (size_t k = 0; k < nl && at < n; k++)
        at += (size_t)snprintf(buf + at, n - at, "%s%s=\"%s\"", k ? "," : "", l[k].name,
                               l[k].value);
    if (at < n)
        snprintf(buf + at, n - at, "}");
}

static void series_text(const struct gl_series *se, char *buf, size_t n)
{
    labels_text(se->labels, se->nlabels, buf, n);
}

static enum gl_status refuse(const struct gl_work_counter *w, const struct gl_series *se,
                             int64_t t, const char *why, struct gl_error *err)
{
    char lab[512], ts[32];
    series_text(se, lab, sizeof lab);
    gl_time_format(t, ts, sizeof ts);
    /* the configured query answers something else than a counter of whole
     * units per pod: a config error (exit 3), not a backend failure (the
     * hours are not marked refused: nothing was stored) */
    return gl_error_set(err, GL_ERR_CONFIG,
                        "work counter %s: series %s at %s: %s; a counter of units of work "
                        "counts whole units per pod, nothing stored", w->name, lab, ts, why);
}

/* One series of a day [lo, hi): its hours' differences appended to out. */
static enum gl_status integrate(const struct gl_work_counter *w, const struct gl_matrix *m,
                                const struct gl_series *se, int64_t lo, int64_t hi,
                                struct rows *out, struct gl_error *err)
{
    const char *ns = gl_series_label(se, w->namespace_label);
    const char *pod = gl_series_label(se, w->pod_label);
    int64_t prev = -1, prev_t = 0;
    struct gl_work_row *row = NULL;
    for (size_t i = 0; i < m->nsteps; i++) {
        double v = se->values[i];
        int64_t t = m->start + (int64_t)i * m->step;
        if (isnan(v))
            continue;
        if (!(v >= 0 && v < WORK_MAX_VALUE))
            return refuse(w, se, t, "a negative or too large value", err);
        if (v != floor(v)) {
            char why[64];
            snprintf(why, sizeof why, "value %.17g is not a whole number", v);
            return refuse(w, se, t, why, err);
        }
        if (t >= lo && t < hi && (!ns || !pod))
            return refuse(w, se, t, "no namespace or pod label (work.counters' "
                          "namespace_label, pod_label)", err);
        const int64_t u = (int64_t)v;
        if (t >= lo && t < hi) {
            const int64_t hour = gl_floor_to(t, 3600);
            if (!row || row->hour != hour) {
                if (out->n == out->cap) {
                    out->cap = out->cap ? 2 * out->cap : 256;
                    out->r = gl_xrealloc(out->r, out->cap * sizeof *out->r);
                }
                row = &out->r[out->n++];
                *row = (struct gl_work_row){hour, gl_strdup(ns), gl_strdup(pod), w->name,
                                            w->unit, 0, 0};
            }
            if (prev >= 0) {
                /* a decrease: the counter restarted, its value counts from 0 */
                const int64_t d = u >= prev ? u - prev : u;
                if (__builtin_add_overflow(row->units, d, &row->units))
                    return refuse(w, se, t, "the hour's units overflow", err);
                row->gaps += t - prev_t > m->step;
            }
        }
        prev = u;
        prev_t = t;
    }
    return GL_OK;
}

/* The query's text with ${cluster_selector} replaced by the cluster's. */
static char *query_text(const struct gl_work_counter *w, const struct gl_cluster *cluster)
{
    static const char var[] = "${cluster_selector}";
    struct gl_buf q;
    gl_buf_init(&q);
    for (const char *p = w->query; *p;) {
        const char *at = strstr(p, var);
        if (!at) {
            gl_buf_puts(&q, p);
            break;
        }
        gl_buf_printf(&q, "%.*s%s", (int)(at - p), p, cluster->selector);
        p = at + strlen(var);
    }
    return q.data ? q.data : gl_strdup("");
}

/* Sorts by (hour, namespace, pod, counter) and merges the series of a pod. */
static int row_cmp(const void *a, const void *b)
{
    const struct gl_work_row *x = a, *y = b;
    int c;
    if (x->hour != y->hour)
        return x->hour < y->hour ? -1 : 1;
    if ((c = strcmp(x->ns, y->ns)) || (c = strcmp(x->pod, y->pod)))
        return c;
    return strcmp(x->counter, y->counter);
}

static enum gl_status merge(struct rows *x, struct gl_error *err)
{
    qsort(x->r, x->n, sizeof *x->r, row_cmp);
    size_t k = 0;
    for (size_t i = 0; i < x->n; i++) {
        if (k > 0 && row_cmp(&x->r[k - 1], &x->r[i]) == 0) {
            struct gl_work_row *r = &x->r[k - 1];
            if (__builtin_add_overflow(r->units, x->r[i].units, &r->units) ||
                __builtin_add_overflow(r->gaps, x->r[i].gaps, &r->gaps))
                return gl_error_set(err, GL_ERR_RUNTIME, "integer overflow: units of work of "
                                    "pod %s/%s", r->ns, r->pod);
            free((char *)x->r[i].ns);
            free((char *)x->r[i].pod);
            continue;
        }
        x->r[k++] = x->r[i];
    }
    x->n = k;
    return GL_OK;
}

/* One counter over [from, to), a day per range query. */
static enum gl_status read_counter(const struct gl_config *c, const struct gl_cluster *cluster,
                                   struct gl_prom *prom, const struct gl_work_counter *w,
                                   int64_t from, int64_t to, struct rows *out,
                                   struct gl_error *err)
{
    char *text = query_text(w, cluster);
    char what[160];
    snprintf(what, sizeof what, "work counter %s", w->name);
    /* any finite value parses: the checks above name what is refused */
    static const struct gl_parse_opts opts = {.any_finite = true};
    enum gl_status rc = GL_OK;
    for (int64_t lo = from; !rc && lo < to; lo += 86400) {
        int64_t hi = lo + 86400 < to ? lo + 86400 : to;
        struct gl_range_query q = {.query = text, .what = what, .opts = &opts};
        rc = gl_prom_query_range_batch(prom, 1, &q, lo - WORK_LOOKBACK, hi - c->step, c->step,
                                       err);
        if (rc)
            break;
        if ((rc = q.rc)) {
            *err = q.err;
            break;
        }
        if (q.m.bad_samples)
            rc = gl_error_set(err, GL_ERR_CONFIG, "work counter %s: %zu samples not finite, "
                              "first %s; nothing stored", w->name, q.m.bad_samples, q.m.bad[0]);
        for (size_t i = 0; !rc && i < q.m.nseries; i++)
            rc = integrate(w, &q.m, &q.m.series[i], lo, hi, out, err);
        gl_matrix_free(&q.m);
    }
    free(text);
    return rc;
}

/* Collects cluster's units of work in the hours [from, to) into s (nothing
 * when s is NULL or no counter is configured). */
static enum gl_status work_collect(const struct gl_config *c, const struct gl_cluster *cluster,
                                   struct gl_store *s, int64_t from, int64_t to,
                                   struct gl_error *err)
{
    if (!s || to <= from || c->nwork == 0)
        return GL_OK;
    struct gl_prom *prom = NULL;
    struct rows rows = {0};
    enum gl_status rc = gl_prom_new(&cluster->prom, &prom, err);
    for (size_t k = 0; !rc && k < c->nwork; k++)
        rc = read_counter(c, cluster, prom, &c->work[k], from, to, &rows, err);
    if (!rc)
        rc = merge(&rows, err);
    int64_t gaps = 0;
    for (size_t i = 0; !rc && i < rows.n; i++)
        gaps += rows.r[i].gaps;
    if (!rc && gaps)
        gl_log(GL_LOG_WARN, "work counters cluster=%s: %lld differences taken across a gap "
               "(counted in the later sample's hour)", cluster->name, (long long)gaps);
    if (!rc)
        rc = gl_store_put_work(s, cluster->name, from, to, rows.r, rows.n, err);
    gl_prom_free(prom);
    rows_free(&rows);
    return rc;
}

/* One counter at the probe time: its line in notes; a series without the
 * pod's labels is a config error (collect would refuse it). */
static enum gl_status check_counter(const struct gl_work_counter *w,
                                    const struct gl_cluster *cluster, struct gl_prom *prom,
                                    int64_t at, struct gl_buf *notes, struct gl_error *err)
{
    char *text = query_text(w, cluster);
    struct gl_vector vec;
    enum gl_status rc = gl_prom_vector(prom, text, at, &vec, err);
    free(text);
    if (rc)
        return rc;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < vec.n; i++)
        if (!gl_sample_label(&vec.samples[i], w->namespace_label) ||
            !gl_sample_label(&vec.samples[i], w->pod_label))
            first = bad++ ? first : i;
    gl_buf_printf(notes, "  work counter %-18s %zu series%s\n", w->name, vec.n,
                  vec.n ? "" : "  (NO DATA at the probe time)");
    if (!vec.n)
        gl_buf_printf(notes, "    likely cause: the server exporting it is not scraped by this "
                      "Prometheus (or the cluster selector does not match its series), or it "
                      "served nothing yet; no unit cost without it\n");
    if (bad) {
        char lab[512];
        labels_text(vec.samples[first].labels, vec.samples[first].nlabels, lab, sizeof lab);
        rc = gl_error_set(err, GL_ERR_CONFIG,
                          "work counter %s: %zu of %zu series carry no \"%s\" or \"%s\" label "
                          "(work.counters' namespace_label, pod_label), first %s: their units "
                          "cannot be given to a pod and collect refuses them; relabel the "
                          "scrape (the pod's namespace and name) or set the label names",
                          w->name, bad, vec.n, w->namespace_label, w->pod_label, lab);
    }
    gl_vector_free(&vec);
    return rc;
}

/* `check`: each work counter of cluster as an instant query at at, one
 * line per counter into notes ("work counter NAME N series", NO DATA with
 * its likely cause when none). A counter whose series lack the configured
 * namespace or pod label fails with GL_ERR_CONFIG naming it and a series
 * (collect would refuse it); the other counters still get their lines. A
 * backend failure is GL_ERR_PROM. */
static enum gl_status work_check(const struct gl_config *c, const struct gl_cluster *cluster,
                                 struct gl_prom *prom, int64_t at, struct gl_buf *notes,
                                 struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    /* every counter gets its line; the first refusal is the one returned,
     * unless the backend fails, which ends the probe */
    for (size_t k = 0; k < c->nwork; k++) {
        struct gl_error e = {0};
        enum gl_status r = check_counter(&c->work[k], cluster, prom, at, notes, &e);
        if (r && (!rc || r == GL_ERR_PROM)) {
            rc = r;
            *err = e;
        }
        if (r == GL_ERR_PROM)
            break;
    }
    return rc;
}

const struct gl_side_collector gl_side_work = {
    .when = GL_SIDE_BEFORE_USAGE,
    .collect = work_collect,
    .check = work_check,
};
