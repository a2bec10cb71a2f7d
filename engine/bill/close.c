/* close — freezing periods and computing correction lines. */
#include "close.h"
#include "store_admin.h"
#include "store_frozen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "reprice.h"
#include "statement.h"
#include "query.h"
#include "util.h"

enum gl_status gl_period_is_closed(struct gl_store *s, const char *period, bool *closed,
                                   struct gl_error *err)
{
    return gl_query_is_closed(s, period, closed, err);
}

static void period_before(const struct gl_period *p, struct gl_period *out)
{
    gl_period_of(p->start - 1, out);
}

/* Figures per FOCUS key: recomputed, frozen, corrections already frozen. */
struct key_figures {
    char *team, *cluster, *model, *price_id; /* price_id holds the price key */
    enum gl_line_kind kind;
    int64_t day;
    int64_t mib[3];
    gl_i128 billed[3];
    gl_i128 nano[3];
    gl_i128 unit12;
    bool have_unit;
};

struct key_table {
    struct gl_intern *ids;
    struct key_figures *k;
    size_t n, cap;
    struct gl_buf key;
};

/* The figures of a FOCUS key; the key's parts are length-prefixed, so no
 * two keys meet whatever their lengths. */
static struct key_figures *key_get(struct key_table *t, const char *team, const char *cluster,
                                   const char *model, enum gl_line_kind kind,
                                   const char *price_id, int64_t day)
{
    const char *parts[] = {team, cluster, model, gl_line_kind_name(kind), price_id};
    gl_buf_reset(&t->key);
    bool ok = true;
    for (size_t i = 0; ok && i < sizeof parts / sizeof *parts; i++)
        ok = gl_buf_put_field(&t->key, parts[i]);
    ok = ok && gl_buf_printf(&t->key, "%lld", (long long)day);
    int32_t id = ok ? gl_intern_get(t->ids, t->key.data) : -1;
    if (id < 0) {
        fputs("gpuledger: out of memory\n", stderr);
        abort();
    }
    if ((size_t)id < t->n)
        return &t->k[id];
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        t->k = gl_xrealloc(t->k, t->cap * sizeof *t->k);
    }
    struct key_figures *f = &t->k[t->n++];
    memset(f, 0, sizeof *f);
    f->team = gl_strdup(team);
    f->cluster = gl_strdup(cluster);
    f->model = gl_strdup(model);
    f->kind = kind;
    f->price_id = gl_strdup(price_id);
    f->day = day;
    return f;
}

static void key_table_free(struct key_table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->k[i].team);
        free(t->k[i].cluster);
        free(t->k[i].model);
        free(t->k[i].price_id);
    }
    free(t->k);
    gl_intern_free(t->ids);
    gl_buf_free(&t->key);
}

static enum gl_status key_overflow(const struct key_figures *f, const char *period,
                                   const char *what, struct gl_error *err)
{
    char day[16];
    gl_date_format(f->day, day, sizeof day);
    return gl_error_set(err, GL_ERR_RUNTIME,
                        "integer overflow: %s of team \"%.300s\", cluster %.200s, GPU model "
                        "\"%.200s\", kind %s on %s (closed period %s) exceed the 64-bit range",
                        what, f->team, f->cluster, f->model, gl_line_kind_name(f->kind), day,
                        period);
}

struct frozen_ctx {
    struct key_table *t;
    const char *period;
    int which;
};

static enum gl_status frozen_row(void *vctx, const struct gl_frozen_row *r, struct gl_error *err)
{
    struct frozen_ctx *x = vctx;
    int which = x->which;
    struct key_figures *f = key_get(x->t, r->team, r->cluster, r->model,
                                    (enum gl_line_kind)r->kind, r->price_key, r->day);
    if (__builtin_add_overflow(f->mib[which], r->mib_s, &f->mib[which]))
        return key_overflow(f, x->period, "the frozen MiB·s", err);
    /* 128-bit sums of int64 rows: no overflow */
    f->billed[which] += r->billed_minor;
    f->nano[which] += r->gbh_nano;
    if (!f->have_unit && gl_dec_parse(r->unit_price, GL_PRICE_DECIMALS, &f->unit12))
        f->have_unit = true;
    return GL_OK;
}

/* Reads frozen_row figures into slot which (1 frozen, 2 prior corrections). */
static enum gl_status load_frozen(struct gl_store *s, struct key_table *t, const char *period,
                                  const char *corrections, int which, struct gl_error *err)
{
    struct frozen_ctx x = {t, period, which};
    return gl_query_frozen_rows(s, period, corrections, frozen_row, &x, err);
}

/* A price entry's identity across edits of the table: its pattern and the
 * instant it starts (rows may move or the file be renamed); malloc'd, the
 * pattern whole. */
static char *price_key(const struct gl_price_entry *e)
{
    return gl_price_key(e);
}

static int day_cmp(const void *a, const void *b)
{
    const struct gl_line_day *x = a, *y = b;
    return x->day < y->day ? -1 : x->day > y->day;
}

/* Corrections of closed period cp, carried by the open period set->period. */
static enum gl_status correct_one(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, const struct gl_period *cp,
                                  struct gl_invoice_set *set, struct gl_error *err)
{
    struct gl_invoice_set *rec = NULL;
    enum gl_status rc = gl_invoices_build(c, s, prices, cp, &rec, err);
    if (rc)
        return rc;
    /* prices that change the closed month are refused unless accepted (reprice.h) */
    struct gl_reprice_list changed = {0};
    rc = gl_reprice_changes(s, prices, cp->name, rec, &changed, err);
    if (!rc && changed.n)
        rc = gl_reprice_refuse(&changed, set->period.name, err);
    gl_reprice_list_free(&changed);
    if (rc) {
        gl_invoices_free(rec);
        return rc;
    }
    struct key_table t = {.ids = gl_intern_new()};
    gl_buf_init(&t.key);
    for (size_t i = 0; i < rec->n; i++) {
        const struct gl_invoice *inv = &rec->invoices[i];
        for (size_t j = 0; !rc && j < inv->nlines; j++) {
            const struct gl_invoice_line *l = &inv->lines[j];
            char *pk = price_key(l->price);
            for (size_t d = 0; !rc && d < l->ndays; d++) {
                struct key_figures *f = key_get(&t, inv->team, l->cluster, l->model, l->kind, pk,
                                                l->days[d].day);
                if (__builtin_add_overflow(f->mib[0], l->days[d].mib_s, &f->mib[0]))
                    rc = key_overflow(f, cp->name, "the recomputed MiB·s", err);
                f->billed[0] += l->days[d].billed; /* money of one day: far from 2^127 */
                f->nano[0] += gl_day_gbh_nano(l, &l->days[d]);
                f->unit12 = l->unit_price12;
                f->have_unit = true;
            }
            free(pk);
        }
    }
    if (!rc && !(rc = load_frozen(s, &t, cp->name, NULL, 1, err)))
        rc = load_frozen(s, &t, cp->name, set->period.name, 2, err);
    for (size_t i = 0; !rc && i < t.n; i++) {
        struct key_figures *f = &t.k[i];
        /* the differences of what was printed (docs/specification.md "Arithmetic": both rounded) */
        int64_t dm;
        if (__builtin_sub_overflow(f->mib[0], f->mib[1], &dm) ||
            __builtin_sub_overflow(dm, f->mib[2], &dm)) {
            rc = key_overflow(f, cp->name, "the corrected MiB·s", err);
            break;
        }
        gl_i128 db = f->billed[0] - f->billed[1] - f->billed[2];
        gl_i128 dq = f->nano[0] - f->nano[1] - f->nano[2];
        if (dq == 0 && db == 0)
            continue;
        const struct gl_price_entry *price = gl_prices_by_key(prices, f->price_id);
        if (!price) {
            rc = gl_error_set(err, GL_ERR_CONFIG,
                              "%s: the price entry %s (pattern@valid_from), used by closed "
                              "period %s, is gone; keep the rows of closed periods in the price "
                              "table",
                              prices->file, f->price_id, cp->name);
            break;
        }
        struct gl_invoice_line *l = gl_invoice_add_correction(set, f->team, f->cluster, f->model,
                                                              f->kind, price, cp->name);
        if (__builtin_add_overflow(l->mib_s, dm, &l->mib_s)) {
            rc = key_overflow(f, cp->name, "the correction line's MiB·s", err);
            break;
        }
        l->days = gl_xrealloc(l->days, (l->ndays + 1) * sizeof *l->days);
        l->days[l->ndays++] =
            (struct gl_line_day){.day = f->day, .mib_s = dm, .billed = db, .qty_nano = dq};
        l->qty_nano += dq; /* 128-bit sums of differences of 64-bit figures */
        l->amount += db;
        l->unit_price12 = f->unit12;
        if (price->unit == GL_PRICE_GPU_HOURS && !l->capacity_gb12 &&
            (rc = gl_price_capacity_gb12(prices, price, f->model,
                                         gl_query_model_capacity(s, f->model), &l->capacity_gb12,
                                         err)))
            break;
    }
    for (size_t i = 0; i < set->n; i++)
        for (size_t j = 0; j < set->invoices[i].nlines; j++) {
            struct gl_invoice_line *l = &set->invoices[i].lines[j];
            if (strcmp(l->corrected_period, cp->name) == 0)
                gl_sort(l->days, l->ndays, sizeof *l->days, day_cmp);
        }
    key_table_free(&t);
    gl_invoices_free(rec);
    return rc;
}

enum gl_status gl_corrections_add(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, struct gl_invoice_set *set,
                                  struct gl_error *err)
{
    struct gl_period cp;
    period_before(&set->period, &cp);
    enum gl_status rc = GL_OK;
    for (;;) {
        bool closed;
        if ((rc = gl_period_is_closed(s, cp.name, &closed, err)) || !closed)
            break;
        /* a pruned period (store_admin.h) is final: its hourly rows are gone;
         * a settled one (reprice.h) has no correction lines */
        bool pruned, settled = false;
        if ((rc = gl_admin_period_pruned(s, cp.name, &pruned, err)) ||
            (!pruned && (rc = gl_closed_settled(c, s, prices, &cp, &settled, err))) ||
            (!pruned && !settled && (rc = correct_one(c, s, prices, &cp, set, err))))
            break;
        struct gl_period prev;
        period_before(&cp, &prev);
        cp = prev;
    }
    enum gl_status frc = gl_invoices_finish(set, rc ? NULL : err);
    return rc ? rc : frc;
}

enum gl_status gl_period_invoices(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, const struct gl_period *p,
                                  struct gl_invoice_set **out, bool *frozen,
                                  struct gl_error *err)
{
    *out = NULL;
    enum gl_status rc = gl_period_is_closed(s, p->name, frozen, err);
    if (rc || *frozen)
        return rc;
    if ((rc = gl_invoices_build(c, s, prices, p, out, err)))
        return rc;
    if ((rc = gl_corrections_add(c, s, prices, *out, err))) {
        gl_invoices_free(*out);
        *out = NULL;
    }
    return rc;
}

/* Text written to a FILE, collected in memory (open_memstream). */
struct memfile {
    char *data;
    size_t len;
    FILE *f;
};

static bool mem_open(struct memfile *m)
{
    m->data = NULL;
    m->len = 0;
    m->f = open_memstream(&m->data, &m->len);
    return m->f != NULL;
}

static void mem_close(struct memfile *m)
{
    if (m->f)
        fclose(m->f);
    m->f = NULL;
}

/* Stores the closed period: the texts as they print now (the audit copy)
 * and the exact figures of every FOCUS key. */
/* Output i of renderer name into a malloc'd string (NULL when out of memory). */
static char *render_text(const struct gl_statement *st, const char *name, size_t i,
                         struct gl_error *err)
{
    struct memfile m;
    if (!mem_open(&m))
        return NULL;
    enum gl_status rc = gl_renderer_find(name)->fn(st, i, m.f, err);
    mem_close(&m);
    if (rc) {
        free(m.data);
        return NULL;
    }
    return m.data ? m.data : gl_strdup("");
}

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
        char *json = render_text(st, "invoice-json", i, err);
        char *md = json ? render_text(st, "invoice-md", i, err) : NULL;
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
            char *pk = owned[nowned++] = price_key(l->price);
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

enum gl_status gl_period_held(struct gl_store *s, const struct gl_period *p,
                              struct gl_error *err)
{
    bool closed = false, any = false;
    enum gl_status rc = gl_period_is_closed(s, p->name, &closed, err);
    if (!rc && !closed)
        rc = gl_query_period_collected(s, p, &any, err);
    if (rc || closed || any)
        return rc;
    struct gl_data_span span;
    if ((rc = gl_query_data_span(s, &span, err)))
        return rc;
    char held[400] = "";
    if (span.any_hour) {
        struct gl_period a, b;
        gl_period_of(span.first_hour, &a);
        gl_period_of(span.last_hour, &b);
        char t1[32], t2[32];
        gl_time_format(span.first_hour, t1, sizeof t1);
        gl_time_format(span.last_hour + 3600, t2, sizeof t2);
        if (strcmp(a.name, b.name) == 0)
            snprintf(held, sizeof held, "the collected hours are in period %s (%s to %s)",
                     a.name, t1, t2);
        else
            snprintf(held, sizeof held, "the collected hours span periods %s to %s (%s to %s)",
                     a.name, b.name, t1, t2);
    } else {
        snprintf(held, sizeof held, "nothing has been collected yet (run 'gpuledger run' or "
                                    "'gpuledger collect' first)");
    }
    if (span.first_closed[0]) {
        size_t n = strlen(held);
        if (strcmp(span.first_closed, span.last_closed) == 0)
            snprintf(held + n, sizeof held - n, "; closed period: %s", span.first_closed);
        else
            snprintf(held + n, sizeof held - n, "; closed periods: %s to %s", span.first_closed,
                     span.last_closed);
    }
    return gl_error_set(err, GL_ERR_STATE,
                        "period %s has no collected hour and is not closed: nothing to show for "
                        "it (%s)",
                        p->name, held);
}

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
    if ((rc = gl_statement_build(c, s, prices, p, GL_ST_INVOICES, &st, err))) {
        gl_close_check_free(&k);
        return rc;
    }
    st->set->closed_at = now; /* the frozen texts say "final" */
    /* a forced close: what was missing, in every output (the set owns it) */
    st->set->gaps = k.gaps;
    st->set->ngaps = k.ngaps;
    k.gaps = NULL;
    k.ngaps = 0;
    char *csv = render_text(st, "focus-csv", 0, err);
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

/* The first line where a and b differ (1-based). */
static size_t first_diff_line(const char *a, const char *b)
{
    size_t line = 1;
    for (; *a && *a == *b; a++, b++)
        line += *a == '\n';
    return line;
}

/* Renders output i of renderer name and compares it with the stored text
 * want (plus the line break a JSON file gets). */
static enum gl_status verify_one(const struct gl_statement *st, const char *name, size_t i,
                                 const char *want, bool add_newline, const char *team,
                                 struct gl_error *err)
{
    char *got = render_text(st, name, i, err);
    if (!got)
        return err->msg[0] ? err->code : gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    size_t n = strlen(want);
    bool same = strncmp(got, want, n) == 0 &&
                strcmp(got + n, add_newline ? "\n" : "") == 0;
    size_t line = same ? 0 : first_diff_line(got, want);
    free(got);
    if (same)
        return GL_OK;
    return gl_error_set(err, GL_ERR_STATE,
                        "period %s is closed and its %s%s%.300s%s rendered from the frozen "
                        "figures differs from the text stored at close (line %zu): the database "
                        "was altered after the close; nothing was printed (restore it from a "
                        "backup)",
                        st->period.name, name, team ? " of team \"" : "", team ? team : "",
                        team ? "\"" : "", line);
}

enum gl_status gl_frozen_verify(const struct gl_statement *st,
                                const struct gl_frozen_invoice *texts, size_t ntexts,
                                const char *focus_csv, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    for (size_t k = 0; !rc && k < ntexts; k++) {
        const struct gl_frozen_invoice *t = &texts[k];
        long i = gl_statement_team(st, t->team);
        if (i < 0) {
            rc = gl_error_set(err, GL_ERR_STATE,
                              "period %s is closed and team \"%.300s\" has an invoice text "
                              "stored at close but no frozen figures: the database was altered "
                              "after the close (restore it from a backup)",
                              st->period.name, t->team);
            break;
        }
        if (t->json[0])
            rc = verify_one(st, "invoice-json", (size_t)i, t->json, true, t->team, err);
        if (!rc && t->md[0])
            rc = verify_one(st, "invoice-md", (size_t)i, t->md, false, t->team, err);
    }
    if (!rc && focus_csv && focus_csv[0])
        rc = verify_one(st, "focus-csv", 0, focus_csv, false, NULL, err);
    return rc;
}

enum gl_status gl_frozen_focus(struct gl_store *s, const char *period, char **csv,
                               struct gl_error *err)
{
    return gl_query_frozen_focus(s, period, csv, err);
}

enum gl_status gl_frozen_invoices(struct gl_store *s, const char *period, const char *team,
                                  void (*fn)(void *ctx, const char *team, const char *json,
                                             const char *md),
                                  void *ctx, struct gl_error *err)
{
    return gl_query_frozen_invoices(s, period, team, fn, ctx, err);
}
