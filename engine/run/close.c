/* close — closing a period: completeness, the freeze (texts and figures
 * in one transaction), close --force (close.h). */
#include "close.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "reprice.h"
#include "statement.h"
#include "store_admin.h"
#include "store_frozen.h"
#include "query.h"
#include "frozen_check.h"
#include "util.h"

/* Stores the closed period: the texts as they print now (the audit copy)
 * and the exact figures of every FOCUS key. */

static enum gl_status freeze(struct gl_store *s, const struct gl_statement *st, int64_t now,
                             const char *csv, struct gl_error *err)
{
    const struct gl_invoice_set *set = st->set;
    const char *period = set->period.name;
    struct gl_frozen_text *texts = gl_xcalloc(set->n ? set->n : 1, sizeof *texts);
    struct gl_frozen_row *rows = NULL;
    size_t nrows = 0, cap = 0;
    char **owned = NULL; /* unit prices and price keys of the rows */
    size_t nowned = 0;
    enum gl_status rc = GL_OK;
    for (size_t i = 0; !rc && i < set->n; i++) {
        const struct gl_invoice *inv = &set->invoices[i];
        /* the texts exactly as `invoice` prints them (the JSON without the
         * line break a file gets) */
        char *json = gl_render_text(st, "invoice-json", i, err);
        char *md = json ? gl_render_text(st, "invoice-md", i, err) : NULL;
        texts[i].team = inv->team;
        texts[i].json = json;
        texts[i].md = md;
        if (!md) {
            rc = err->msg[0] ? err->code : gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
            break;
        }
        size_t n = strlen(json);
        if (n && json[n - 1] == '\n')
            json[n - 1] = '\0';
        for (size_t j = 0; !rc && j < inv->nlines; j++) {
            const struct gl_invoice_line *l = &inv->lines[j];
            char unit[64]; /* at most 39 digits, a sign and a point */
            gl_dec_format(l->unit_price12, GL_PRICE_DECIMALS, unit, sizeof unit);
            owned = gl_xrealloc(owned, (nowned + 2) * sizeof *owned);
            char *u = owned[nowned++] = gl_strdup(unit);
            char *pk = owned[nowned++] = gl_price_key(l->price);
            for (size_t d = 0; d < l->ndays; d++) {
                /* frozen_row keeps int64: a figure beyond it is refused */
                gl_i128 billed = l->days[d].billed, nano = gl_day_gbh_nano(l, &l->days[d]);
                if (billed > INT64_MAX || billed < INT64_MIN || nano > INT64_MAX ||
                    nano < INT64_MIN) {
                    char day[16];
                    gl_date_format(l->days[d].day, day, sizeof day);
                    rc = gl_error_set(err, GL_ERR_RUNTIME,
                                      "integer overflow: the amount or GB-hours of team "
                                      "\"%.300s\", GPU model \"%.200s\" on %s (period %s) "
                                      "exceed the 64-bit range of the frozen rows",
                                      inv->team, l->model, day, period);
                    break;
                }
                if (nrows == cap) {
                    cap = cap ? cap * 2 : 64;
                    rows = gl_xrealloc(rows, cap * sizeof *rows);
                }
                rows[nrows++] = (struct gl_frozen_row){
                    .corrected_period = l->corrected_period, .team = inv->team,
                    .cluster = l->cluster, .model = l->model, .kind = (int)l->kind,
                    .price_id = l->price->id, .price_key = pk, .day = l->days[d].day,
                    .unit_price = u, .mib_s = l->days[d].mib_s, .billed_minor = (int64_t)billed,
                    .gbh_nano = (int64_t)nano};
            }
        }
    }
    if (!rc) {
        struct gl_freeze f = {period, now, csv, texts, set->n, rows, nrows, set};
        rc = gl_store_freeze(s, &f, err);
    }
    for (size_t i = 0; i < set->n; i++) {
        free((char *)texts[i].json);
        free((char *)texts[i].md);
    }
    free(texts);
    for (size_t i = 0; i < nowned; i++)
        free(owned[i]);
    free(owned);
    free(rows);
    return rc;
}

/* ---- completeness before close ---- */

void gl_close_check_free(struct gl_close_check *k)
{
    gl_gaps_free(k->gaps, k->ngaps);
    gl_gaps_free(k->no_data, k->nno_data);
    memset(k, 0, sizeof *k);
}

static void gap_add(struct gl_gap **g, size_t *n, const char *cluster, enum gl_gap_kind kind,
                    int64_t from, int64_t to)
{
    *g = gl_xrealloc(*g, (*n + 1) * sizeof **g);
    (*g)[(*n)++] = (struct gl_gap){gl_strdup(cluster), kind, from, to};
}

/* Per hour of [start, start + n h): bit 0 stored, bit 1 stored with no
 * samples, bit 2 refused. */
enum { H_STORED = 1, H_EMPTY = 2, H_REFUSED = 4 };
struct hours {
    int64_t start;
    size_t n;
    unsigned char *h;
};

static enum gl_status hour_seen(void *ctx, int64_t hour, int64_t samples, bool refused,
                                const char *reason, struct gl_error *err)
{
    (void)reason;
    (void)err;
    struct hours *x = ctx;
    int64_t i = (hour - x->start) / 3600;
    if (i < 0 || (size_t)i >= x->n)
        return GL_OK;
    x->h[i] |= refused ? H_REFUSED : samples == 0 ? (H_STORED | H_EMPTY) : H_STORED;
    return GL_OK;
}

/* Adds the ranges of hours [0, upto) of x where want(h) holds. */
static void ranges(const struct hours *x, size_t upto, bool (*want)(unsigned char),
                   const char *cluster, enum gl_gap_kind kind, struct gl_gap **g, size_t *n)
{
    for (size_t i = 0; i < upto;) {
        if (!want(x->h[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < upto && want(x->h[j]))
            j++;
        gap_add(g, n, cluster, kind, x->start + (int64_t)i * 3600, x->start + (int64_t)j * 3600);
        i = j;
    }
}

static bool is_missing(unsigned char h) { return !(h & H_STORED); }
static bool is_refused(unsigned char h) { return (h & H_STORED) && (h & H_REFUSED); }
static bool is_empty(unsigned char h) { return (h & H_EMPTY) && !(h & H_REFUSED); }

enum gl_status gl_period_check(const struct gl_config *c, struct gl_store *s,
                               const struct gl_period *p, int64_t now,
                               struct gl_close_check *out, struct gl_error *err)
{
    memset(out, 0, sizeof *out);
    out->settles = p->end + c->close_settle_s;
    size_t nperiod = (size_t)((p->end - p->start) / 3600);
    struct hours x = {p->start, (size_t)((out->settles - p->start) / 3600), NULL};
    x.h = gl_xcalloc(x.n ? x.n : 1, 1);
    enum gl_status rc = GL_OK;
    for (size_t k = 0; !rc && k < c->nclusters; k++) {
        const char *cl = c->clusters[k].name;
        memset(x.h, 0, x.n ? x.n : 1);
        int64_t wm = 0;
        bool found = false;
        if ((rc = gl_query_cluster_hours(s, cl, p->start, out->settles, hour_seen, &x, err)) ||
            (rc = gl_store_watermark(s, cl, &wm, &found, err)))
            break;
        ranges(&x, nperiod, is_missing, cl, GL_GAP_MISSING, &out->gaps, &out->ngaps);
        ranges(&x, nperiod, is_refused, cl, GL_GAP_REFUSED, &out->gaps, &out->ngaps);
        ranges(&x, nperiod, is_empty, cl, GL_GAP_NO_DATA, &out->no_data, &out->nno_data);
        /* how far the collection reaches past the end: run's watermark, or
         * the hours stored without a gap after the end (collect); never
         * beyond now */
        size_t i = nperiod;
        while (i < x.n && (x.h[i] & H_STORED))
            i++;
        int64_t reached = p->start + (int64_t)i * 3600;
        if (found && wm > reached)
            reached = wm;
        if (reached > now)
            reached = gl_floor_to(now, 3600);
        if (reached < out->settles)
            gap_add(&out->gaps, &out->ngaps, cl, GL_GAP_UNSETTLED,
                    reached > p->end ? reached : p->end, out->settles);
    }
    free(x.h);
    if (rc)
        gl_close_check_free(out);
    return rc;
}

/* "<ranges>" of g into b, at most about limit bytes: the ranges that do
 * not fit are counted ("and N more ranges"). */
static void describe_limited(const struct gl_gap *g, size_t n, size_t limit, struct gl_buf *b)
{
    size_t shown = 0;
    struct gl_buf one;
    gl_buf_init(&one);
    while (shown < n) {
        gl_buf_reset(&one);
        gl_gaps_describe(g, shown + 1, &one);
        if (shown && one.len > limit)
            break;
        shown++;
    }
    gl_buf_reset(&one);
    gl_gaps_describe(g, shown, &one);
    gl_buf_puts(b, one.data ? one.data : "");
    if (shown < n)
        gl_buf_printf(b, " and %zu more range%s", n - shown, n - shown == 1 ? "" : "s");
    gl_buf_free(&one);
}

/* The refusal: GL_ERR_STATE naming each cluster's ranges and what to do. */
static enum gl_status refuse_incomplete(const struct gl_config *c, const struct gl_period *p,
                                        const struct gl_close_check *k, struct gl_error *err)
{
    struct gl_buf b;
    gl_buf_init(&b);
    describe_limited(k->gaps, k->ngaps, 1000, &b);
    int64_t from = INT64_MAX, to = 0;
    bool collect = false, settle = false;
    for (size_t i = 0; i < k->ngaps; i++) {
        if (k->gaps[i].kind == GL_GAP_UNSETTLED) {
            settle = true;
            continue;
        }
        collect = true;
        from = k->gaps[i].from < from ? k->gaps[i].from : from;
        to = k->gaps[i].to > to ? k->gaps[i].to : to;
    }
    if (k->nno_data) {
        gl_buf_puts(&b, "; also listed (collected, they count as complete): ");
        describe_limited(k->no_data, k->nno_data, 250, &b);
    }
    char a[32], z[32], settles[32], hint[200] = "", wait[160] = "";
    gl_time_format(from, a, sizeof a);
    gl_time_format(to, z, sizeof z);
    gl_time_format(k->settles, settles, sizeof settles);
    if (collect)
        snprintf(hint, sizeof hint, "collect the hours named ('gpuledger collect --from %s --to "
                 "%s'), ", a, z);
    if (settle)
        snprintf(wait, sizeof wait, "let the collection reach %s (close.settle_hours %lld after "
                 "the period's end: run catches up, or collect those hours), ",
                 settles, (long long)(c->close_settle_s / 3600));
    enum gl_status rc = gl_error_set(
        err, GL_ERR_STATE,
        "period %s is not complete and was not closed: %s. To close it: %s%sor close it as it "
        "is with 'close --period %s --force' (every output of the month then states what was "
        "missing)",
        p->name, b.data ? b.data : "", hint, wait, p->name);
    gl_buf_free(&b);
    return rc;
}

enum gl_status gl_period_close(const struct gl_config *c, struct gl_store *s,
                               const struct gl_price_table *prices, const struct gl_period *p,
                               int64_t now, struct gl_error *err)
{
    return gl_period_close_force(c, s, prices, p, now, false, err);
}

enum gl_status gl_period_close_force(const struct gl_config *c, struct gl_store *s,
                                     const struct gl_price_table *prices,
                                     const struct gl_period *p, int64_t now, bool force,
                                     struct gl_error *err)
{
    bool closed;
    enum gl_status rc = gl_period_is_closed(s, p->name, &closed, err);
    if (rc)
        return rc;
    if (closed)
        return gl_error_set(err, GL_ERR_STATE, "period %s is already closed", p->name);
    if (p->end > now) {
        char end[32];
        gl_time_format(p->end, end, sizeof end);
        return gl_error_set(err, GL_ERR_STATE, "period %s is still in progress (it ends %s)",
                            p->name, end);
    }
    struct gl_close_check k;
    if ((rc = gl_period_check(c, s, p, now, &k, err)))
        return rc;
    if (k.ngaps && !force) {
        rc = refuse_incomplete(c, p, &k, err);
        gl_close_check_free(&k);
        return rc;
    }
    /* the statement every output of the period shows, frozen as rendered */
    struct gl_statement *st = NULL;
    if ((rc = gl_statement_build_checked(c, s, prices, p, GL_ST_INVOICES, gl_frozen_verify, &st, err))) {
        gl_close_check_free(&k);
        return rc;
    }
    st->set->closed_at = now; /* the frozen texts say "final" */
    /* a forced close: what was missing, in every output (the set owns it) */
    st->set->gaps = k.gaps;
    st->set->ngaps = k.ngaps;
    k.gaps = NULL;
    k.ngaps = 0;
    char *csv = gl_render_text(st, "focus-csv", 0, err);
    if (!csv)
        rc = err->msg[0] ? err->code : gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    else
        rc = freeze(s, st, now, csv, err);
    if (!rc) {
        struct gl_buf b;
        gl_buf_init(&b);
        if (st->set->ngaps) {
            describe_limited(st->set->gaps, st->set->ngaps, 1500, &b);
            gl_log(GL_LOG_WARN, "period closed although incomplete (--force) period=%s gaps=\"%s\"",
                   p->name, b.data ? b.data : "");
        }
        if (k.nno_data) {
            gl_buf_reset(&b);
            describe_limited(k.no_data, k.nno_data, 1500, &b);
            gl_log(GL_LOG_WARN, "period closed with hours the backend had no data for period=%s "
                   "hours=\"%s\"", p->name, b.data ? b.data : "");
        }
        gl_buf_free(&b);
    }
    free(csv);
    gl_statement_free(st);
    gl_close_check_free(&k);
    return rc;
}
