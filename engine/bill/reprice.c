/* reprice — closed months keep their prices (see reprice.h). */
#include "reprice.h"

#include <stdlib.h>
#include <string.h>

#include "query.h"
#include "query.h"
#include "store_admin.h"
#include "timeutil.h"
#include "util.h"

/* One price of a (model, day): an entry's key and its unit per GB-hour. */
struct mprice {
    char *model;
    int64_t day;
    char *key;
    gl_i128 unit12;
    const char *team; /* recomputed prices: a team with that usage (borrowed) */
};

struct mset {
    struct mprice *v;
    size_t n, cap;
};

static void mset_add(struct mset *m, const char *model, int64_t day, const char *key,
                     gl_i128 unit12, const char *team)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->v = gl_xrealloc(m->v, m->cap * sizeof *m->v);
    }
    m->v[m->n++] = (struct mprice){gl_strdup(model), day, gl_strdup(key), unit12, team};
}

static void mset_free(struct mset *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].model);
        free(m->v[i].key);
    }
    free(m->v);
    memset(m, 0, sizeof *m);
}

static int group_cmp(const struct mprice *x, const struct mprice *y)
{
    int c = strcmp(x->model, y->model);
    return c ? c : x->day < y->day ? -1 : x->day > y->day;
}

static int mprice_cmp(const void *a, const void *b)
{
    const struct mprice *x = a, *y = b;
    int c = group_cmp(x, y);
    return c ? c : strcmp(x->key, y->key);
}

/* Sorts by (model, day, key) and drops repeated keys (every team and kind
 * of a model-day has the same price); the first kept. */
static void mset_sort(struct mset *m)
{
    gl_sort(m->v, m->n, sizeof *m->v, mprice_cmp);
    size_t w = 0;
    for (size_t r = 0; r < m->n; r++) {
        if (w && mprice_cmp(&m->v[w - 1], &m->v[r]) == 0) {
            free(m->v[r].model);
            free(m->v[r].key);
            continue;
        }
        m->v[w++] = m->v[r];
    }
    m->n = w;
}

/* [*lo, *hi) of the group of g in sorted m. */
static void mset_group(const struct mset *m, const struct mprice *g, size_t *lo, size_t *hi)
{
    size_t a = 0, b = m->n;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (group_cmp(&m->v[mid], g) < 0)
            a = mid + 1;
        else
            b = mid;
    }
    *lo = a;
    while (a < m->n && group_cmp(&m->v[a], g) == 0)
        a++;
    *hi = a;
}

struct load_ctx {
    struct mset *m;
    const char *period;
};

static enum gl_status bad_unit(const char *period, const char *model, const char *unit,
                               struct gl_error *err)
{
    return gl_error_set(err, GL_ERR_RUNTIME,
                        "a frozen or accepted row of closed period %s (GPU model \"%.200s\") has "
                        "the unreadable unit price \"%.100s\"",
                        period, model, unit ? unit : "");
}

static enum gl_status frozen_fn(void *vctx, const struct gl_frozen_row *r, struct gl_error *err)
{
    struct load_ctx *x = vctx;
    gl_i128 u;
    if (!r->unit_price || !gl_dec_parse(r->unit_price, GL_PRICE_DECIMALS, &u))
        return bad_unit(x->period, r->model, r->unit_price, err);
    mset_add(x->m, r->model, r->day, r->price_key, u, NULL);
    return GL_OK;
}

static enum gl_status accepted_fn(void *vctx, const char *model, int64_t day, const char *key,
                                  const char *unit, struct gl_error *err)
{
    struct load_ctx *x = vctx;
    gl_i128 u;
    if (!unit || !gl_dec_parse(unit, GL_PRICE_DECIMALS, &u))
        return bad_unit(x->period, model, unit, err);
    mset_add(x->m, model, day, key, u, NULL);
    return GL_OK;
}

/* The prices a closed period is held to: per model-day the accepted ones
 * when a repricing of it was accepted, else the frozen ones. */
static enum gl_status held_prices(struct gl_store *s, const char *period, struct mset *out,
                                  struct gl_error *err)
{
    struct mset frozen = {0}, acc = {0};
    struct load_ctx fx = {&frozen, period}, ax = {&acc, period};
    enum gl_status rc = gl_query_frozen_rows(s, period, NULL, frozen_fn, &fx, err);
    if (!rc)
        rc = gl_store_reprice_accepted(s, period, accepted_fn, &ax, err);
    if (!rc) {
        mset_sort(&acc);
        for (size_t i = 0; i < acc.n; i++)
            mset_add(out, acc.v[i].model, acc.v[i].day, acc.v[i].key, acc.v[i].unit12, NULL);
        for (size_t i = 0; i < frozen.n; i++) {
            size_t lo, hi;
            mset_group(&acc, &frozen.v[i], &lo, &hi);
            if (lo == hi)
                mset_add(out, frozen.v[i].model, frozen.v[i].day, frozen.v[i].key,
                         frozen.v[i].unit12, NULL);
        }
        mset_sort(out);
    }
    mset_free(&frozen);
    mset_free(&acc);
    return rc;
}

/* Whether entry e prices some hour of model's UTC day. */
static bool covers_day(const struct gl_price_entry *e, const char *model, int64_t day)
{
    return e->valid_from < day + 86400 && e->valid_to > day && gl_price_matches(e, model);
}

static void change_add(struct gl_reprice_list *out, const char *period, const struct mset *rec,
                       size_t lo, size_t hi, const struct mprice *old, const struct mprice *now)
{
    out->c = gl_xrealloc(out->c, (out->n + 1) * sizeof *out->c);
    struct gl_reprice_change *c = &out->c[out->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->period, sizeof c->period, "%s", period);
    c->team = gl_strdup(now->team ? now->team : "");
    c->model = gl_strdup(now->model);
    c->day = now->day;
    c->old_key = gl_strdup(old->key);
    c->new_key = gl_strdup(now->key);
    c->old_unit12 = old->unit12;
    c->new_unit12 = now->unit12;
    c->nkeys = hi - lo;
    c->keys = gl_xcalloc(c->nkeys ? c->nkeys : 1, sizeof *c->keys);
    c->units = gl_xcalloc(c->nkeys ? c->nkeys : 1, sizeof *c->units);
    for (size_t i = 0; i < c->nkeys; i++) {
        char u[64];
        gl_dec_format(rec->v[lo + i].unit12, GL_PRICE_DECIMALS, u, sizeof u);
        c->keys[i] = gl_strdup(rec->v[lo + i].key);
        c->units[i] = gl_strdup(u);
    }
}

enum gl_status gl_reprice_changes(struct gl_store *s, const struct gl_price_table *prices,
                                  const char *period, const struct gl_invoice_set *rec,
                                  struct gl_reprice_list *out, struct gl_error *err)
{
    struct mset now = {0}, held = {0};
    for (size_t i = 0; i < rec->n; i++) {
        const struct gl_invoice *inv = &rec->invoices[i];
        for (size_t j = 0; j < inv->nlines; j++) {
            const struct gl_invoice_line *l = &inv->lines[j];
            char *key = gl_price_key(l->price);
            for (size_t d = 0; d < l->ndays; d++)
                mset_add(&now, l->model, l->days[d].day, key, l->unit_price12, inv->team);
            free(key);
        }
    }
    mset_sort(&now);
    enum gl_status rc = held_prices(s, period, &held, err);
    for (size_t lo = 0, hi; !rc && lo < now.n; lo = hi) {
        size_t rlo, rhi, glo, ghi;
        mset_group(&now, &now.v[lo], &rlo, &rhi);
        hi = rhi;
        mset_group(&held, &now.v[lo], &glo, &ghi);
        if (glo == ghi)
            continue; /* no usage of the model that day at close: data */
        const struct mprice *old = NULL, *cur = NULL;
        /* an hour priced by an entry or at a unit price the day did not have */
        for (size_t r = rlo; !old && r < rhi; r++) {
            const struct mprice *match = NULL;
            for (size_t g = glo; !match && g < ghi; g++)
                if (strcmp(held.v[g].key, now.v[r].key) == 0)
                    match = &held.v[g];
            if (!match || match->unit12 != now.v[r].unit12) {
                old = match ? match : &held.v[glo];
                cur = &now.v[r];
            }
        }
        /* a held entry that no longer prices the day (one that is gone
         * altogether is close.c's error) */
        for (size_t g = glo; !old && g < ghi; g++) {
            bool used = false;
            for (size_t r = rlo; !used && r < rhi; r++)
                used = strcmp(held.v[g].key, now.v[r].key) == 0;
            const struct gl_price_entry *e = used ? NULL : gl_prices_by_key(prices, held.v[g].key);
            if (e && !covers_day(e, held.v[g].model, held.v[g].day)) {
                old = &held.v[g];
                cur = &now.v[rlo];
            }
        }
        if (old)
            change_add(out, period, &now, rlo, rhi, old, cur);
    }
    mset_free(&now);
    mset_free(&held);
    return rc;
}

void gl_reprice_list_free(struct gl_reprice_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        struct gl_reprice_change *c = &l->c[i];
        for (size_t k = 0; k < c->nkeys; k++)
            GL_FREE_EACH(c->keys[k], c->units[k]);
        GL_FREE_EACH(c->keys, c->units, c->team, c->model, c->old_key, c->new_key);
    }
    free(l->c);
    memset(l, 0, sizeof *l);
}

/* "unit price U per GB-hour (price entry K)" of one side of a change. */
static void describe(const struct gl_reprice_change *c, char *buf, size_t n)
{
    char day[16], o[64], w[64];
    gl_date_format(c->day, day, sizeof day);
    gl_dec_format_trim(c->old_unit12, GL_PRICE_DECIMALS, o, sizeof o);
    gl_dec_format_trim(c->new_unit12, GL_PRICE_DECIMALS, w, sizeof w);
    snprintf(buf, n,
             "closed period %s: team \"%.200s\", GPU model \"%.200s\" on %s: unit price %s per "
             "GB-hour (price entry %.300s) as frozen, %s per GB-hour (price entry %.300s) now",
             c->period, c->team, c->model, day, o, c->old_key, w, c->new_key);
}

enum gl_status gl_reprice_refuse(const struct gl_reprice_list *l, const char *open,
                                 struct gl_error *err)
{
    char what[1200], more[64] = "";
    describe(&l->c[0], what, sizeof what);
    if (l->n > 1)
        snprintf(more, sizeof more, " (and %zu more GPU model-day(s))", l->n - 1);
    return gl_error_set(
        err, GL_ERR_STATE,
        "prices would change a closed month: %s%s; a closed month "
        "keeps its prices: restore the price table, or accept the repricing with "
        "--reprice-closed (prices --reprice-closed, prices import --file CSV --reprice-closed, "
        "or run/invoice/export --reprice-closed), which turns the difference into correction "
        "lines of %s",
        what, more, open);
}

/* The month that carries the corrections of closed[i]: the first one after
 * it that is not closed (closed is ordered). */
static void carrier(char (*closed)[8], size_t n, size_t i, struct gl_period *out)
{
    struct gl_period p;
    gl_period_parse(closed[i], &p);
    gl_period_of(p.end, out);
    for (size_t k = i + 1; k < n && strcmp(closed[k], out->name) == 0; k++) {
        p = *out;
        gl_period_of(p.end, out);
    }
}

/* ---- the check skipped when nothing it reads changed (reprice.h) ---- */

enum gl_status gl_closed_fingerprint(const struct gl_config *c, struct gl_store *s,
                                     const struct gl_price_table *prices,
                                     const struct gl_period *p, char out[GL_CLOSED_FP],
                                     struct gl_error *err)
{
    char config[GL_CONFIG_FP]; /* version, build and config bytes */
    enum gl_status rc = gl_config_fingerprint(c, config, err);
    if (rc)
        return gl_error_prefix(err, "hashing the config for the output state");
    struct gl_buf b;
    gl_buf_init(&b);
    /* the build (its figure code) and the schema too: GL_VERSION alone stays
     * the same across commits that change how figures are computed */
    bool ok = gl_buf_printf(&b, "closed check 1\nbuild %s\nschema %d\nperiod %s\nconfig %s\n"
                            "[prices]\n", gl_build_commit, gl_store_schema_version(), p->name,
                            config);
    for (size_t i = 0; ok && i < prices->n; i++) {
        const struct gl_price_entry *e = &prices->entries[i];
        if (e->valid_from >= p->end || e->valid_to <= p->start)
            continue; /* prices no hour of p */
        char price[96], cap[96];
        gl_dec_format(e->price12, GL_PRICE_DECIMALS, price, sizeof price);
        gl_dec_format(e->capacity_gb12, GL_PRICE_DECIMALS, cap, sizeof cap);
        /* not its id (file:row): rows may move; the checks key entries by
         * pattern@valid_from */
        ok = gl_buf_printf(&b, "%zu:%s\t%d\t%s\t%zu:%s\t%lld\t%lld\t%d\t%s\n",
                           strlen(e->pattern), e->pattern, (int)e->unit,
                           price, strlen(e->currency), e->currency, (long long)e->valid_from,
                           (long long)e->valid_to, (int)e->has_capacity, cap);
    }
    if (!ok)
        rc = gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    if (!rc)
        rc = gl_store_closed_inputs(s, p, &b, err);
    if (!rc)
        snprintf(out, GL_CLOSED_FP, "%016llx",
                 (unsigned long long)gl_hash_bytes(b.data, b.len, GL_HASH_SEED));
    gl_buf_free(&b);
    return rc;
}

/* *same: p's last check was made at the fingerprint fp has now. */
static enum gl_status last_check(const struct gl_config *c, struct gl_store *s,
                                 const struct gl_price_table *prices, const struct gl_period *p,
                                 char fp[GL_CLOSED_FP], bool *same, bool *corrections,
                                 struct gl_error *err)
{
    char was[GL_CLOSED_FP];
    bool found;
    enum gl_status rc = gl_closed_fingerprint(c, s, prices, p, fp, err);
    if (!rc)
        rc = gl_store_closed_check_get(s, p->name, was, corrections, &found, err);
    /* a build that does not know its commit cannot tell its figure code
     * from another's: it always recomputes (meson -Dcommit=... names it) */
    bool known = strcmp(gl_build_commit, "unknown") != 0;
    *same = !rc && found && known && strcmp(was, fp) == 0;
    if (!rc && !*same)
        gl_log(GL_LOG_DEBUG, "closed period to recompute period=%s fingerprint=%s checked=%s%s",
               p->name, fp, found ? was : "never", known ? "" : " (build commit unknown)");
    return rc;
}

enum gl_status gl_closed_settled(const struct gl_config *c, struct gl_store *s,
                                 const struct gl_price_table *prices, const struct gl_period *p,
                                 bool *settled, struct gl_error *err)
{
    char fp[GL_CLOSED_FP];
    bool same, corrections;
    enum gl_status rc = last_check(c, s, prices, p, fp, &same, &corrections, err);
    *settled = !rc && same && !corrections;
    if (*settled)
        gl_log(GL_LOG_DEBUG,
               "closed period not recomputed period=%s fingerprint=%s (checked at it: no "
               "price change, no correction lines)",
               p->name, fp);
    return rc;
}

/* Records the check of each closed[i] with todo[i] (recomputed by
 * gl_reprice_closed_months, prices unchanged or accepted): its fingerprint
 * now and whether the open period after it carries correction lines of it
 * (computed as that period's outputs do: gl_corrections_add). */
static enum gl_status record_checks(const struct gl_config *c, struct gl_store *s,
                                    const struct gl_price_table *prices, char (*closed)[8],
                                    size_t n, const bool *todo, int64_t now,
                                    struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    struct gl_invoice_set *lines = NULL; /* the corrections carried by lines->period */
    for (size_t i = 0; !rc && i < n; i++) {
        if (!todo[i])
            continue;
        struct gl_period p, open;
        gl_period_parse(closed[i], &p);
        carrier(closed, n, i, &open);
        if (!lines || strcmp(lines->period.name, open.name) != 0) {
            gl_invoices_free(lines);
            lines = gl_xcalloc(1, sizeof *lines);
            lines->cfg = c;
            lines->period = open;
            if ((rc = gl_corrections_add(c, s, prices, lines, err)))
                break;
        }
        bool pending = false;
        for (size_t t = 0; !pending && t < lines->n; t++)
            for (size_t j = 0; !pending && j < lines->invoices[t].nlines; j++)
                pending = strcmp(lines->invoices[t].lines[j].corrected_period, p.name) == 0;
        char fp[GL_CLOSED_FP];
        if (!(rc = gl_closed_fingerprint(c, s, prices, &p, fp, err)) &&
            !(rc = gl_store_closed_check_put(s, p.name, fp, pending, now, err)))
            gl_log(GL_LOG_DEBUG, "closed period checked period=%s fingerprint=%s corrections=%d",
                   p.name, fp, (int)pending);
    }
    gl_invoices_free(lines);
    return rc;
}

enum gl_status gl_reprice_closed_months(const struct gl_config *c, struct gl_store *s,
                                        const struct gl_price_table *prices, bool accept,
                                        bool record, int64_t now, size_t *n,
                                        struct gl_error *err)
{
    *n = 0;
    char(*closed)[8] = NULL;
    size_t nclosed = 0, nskipped = 0, nrecomputed = 0;
    enum gl_status rc = gl_store_closed_periods(s, &closed, &nclosed, err);
    bool *todo = gl_xcalloc(nclosed ? nclosed : 1, sizeof *todo);
    for (size_t i = 0; !rc && i < nclosed; i++) {
        struct gl_period p;
        bool pruned;
        if (!gl_period_parse(closed[i], &p)) {
            rc = gl_error_set(err, GL_ERR_RUNTIME, "closed period \"%.20s\" is not YYYY-MM",
                              closed[i]);
            break;
        }
        if ((rc = gl_admin_period_pruned(s, p.name, &pruned, err)) || pruned)
            continue; /* final: it takes no more corrections */
        char fp[GL_CLOSED_FP];
        bool same, corrections;
        if ((rc = last_check(c, s, prices, &p, fp, &same, &corrections, err)))
            break;
        if (same) { /* checked at what it depends on now: no price change */
            nskipped++;
            continue;
        }
        nrecomputed++;
        struct gl_invoice_set *rec = NULL;
        struct gl_reprice_list l = {0};
        if (!(rc = gl_invoices_build(c, s, prices, &p, &rec, err)))
            rc = gl_reprice_changes(s, prices, p.name, rec, &l, err);
        if (!rc && l.n && !accept) {
            struct gl_period open;
            carrier(closed, nclosed, i, &open);
            rc = gl_reprice_refuse(&l, open.name, err);
        }
        for (size_t k = 0; !rc && accept && k < l.n; k++) {
            const struct gl_reprice_change *ch = &l.c[k];
            rc = gl_store_reprice_accept(s, ch->period, ch->model, ch->day, ch->nkeys,
                                         (const char *const *)ch->keys,
                                         (const char *const *)ch->units, now, err);
            if (!rc) {
                char what[1200];
                describe(ch, what, sizeof what);
                gl_log(GL_LOG_INFO, "repricing accepted (--reprice-closed): %s", what);
                (*n)++;
            }
        }
        todo[i] = !rc;
        gl_reprice_list_free(&l);
        gl_invoices_free(rec);
    }
    if (!rc && (record || accept))
        rc = record_checks(c, s, prices, closed, nclosed, todo, now, err);
    if (!rc)
        gl_log(GL_LOG_DEBUG, "closed periods checked recomputed=%zu unchanged=%zu", nrecomputed,
               nskipped);
    free(todo);
    free(closed);
    return rc;
}

enum gl_status gl_reprice_open_periods(struct gl_store *s, struct gl_period **out, size_t *n,
                                       struct gl_error *err)
{
    *out = NULL;
    *n = 0;
    char(*closed)[8] = NULL;
    size_t nclosed = 0;
    enum gl_status rc = gl_store_closed_periods(s, &closed, &nclosed, err);
    for (size_t i = 0; !rc && i < nclosed; i++) {
        struct gl_period p, next;
        if (!gl_period_parse(closed[i], &p))
            continue;
        gl_period_of(p.end, &next);
        bool shut = i + 1 < nclosed && strcmp(closed[i + 1], next.name) == 0;
        if (shut)
            continue;
        *out = gl_xrealloc(*out, (*n + 1) * sizeof **out);
        (*out)[(*n)++] = next;
    }
    free(closed);
    return rc;
}

/* ---- correction lines of an open period (gl_period_invoices, period.h) ---- */

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
    for (size_t i = 0; i < t->n; i++)
        GL_FREE_EACH(t->k[i].team, t->k[i].cluster, t->k[i].model, t->k[i].price_id);
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
        if ((rc = gl_query_is_closed(s, cp.name, &closed, err)) || !closed)
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

