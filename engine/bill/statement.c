/* statement — one period's figures for every output, under one snapshot. */
#include "statement.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "period.h"
#include "store_frozen.h"
#include "util.h"

unsigned long gl_statement_builds;

long gl_statement_team(const struct gl_statement *st, const char *team)
{
    for (size_t i = 0; st->set && i < st->set->n; i++)
        if (strcmp(st->set->invoices[i].team, team) == 0)
            return (long)i;
    return -1;
}

static void frozen_one(void *ctx, const char *team, const char *json, const char *md)
{
    struct gl_statement *st = ctx;
    st->frozen = gl_xrealloc(st->frozen, (st->nfrozen + 1) * sizeof *st->frozen);
    st->frozen[st->nfrozen++] =
        (struct gl_frozen_invoice){gl_strdup(team), gl_strdup(json), gl_strdup(md)};
}

static long set_team(const struct gl_invoice_set *set, const char *team)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->invoices[i].team, team) == 0)
            return (long)i;
    return -1;
}

/* A closed period's pages are drawn from the stored rollups, so they are
 * written only while those (live, the recomputation) still give every team
 * the frozen total: from the frozen figures (st->set), or from the frozen
 * texts of a period closed before schema 007. */
static enum gl_status check_frozen(const struct gl_statement *st,
                                   const struct gl_invoice_set *set, struct gl_error *err)
{
    char bad[600] = "";
    size_t nfrozen = st->from_texts ? st->nfrozen : st->set->n;
    for (size_t f = 0; !bad[0] && f < nfrozen; f++) {
        const char *team;
        char frozen_total[96] = "?";
        if (st->from_texts) {
            team = st->frozen[f].team;
            cJSON *o = cJSON_Parse(st->frozen[f].json);
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "total");
            if (cJSON_IsString(t))
                snprintf(frozen_total, sizeof frozen_total, "%s", t->valuestring);
            cJSON_Delete(o);
        } else {
            team = st->set->invoices[f].team;
            gl_dec_format(st->set->invoices[f].total, st->cfg->minor_digits, frozen_total,
                          sizeof frozen_total);
        }
        char now[96] = "none";
        long i = set_team(set, team);
        if (i >= 0)
            gl_dec_format(set->invoices[i].total, st->cfg->minor_digits, now, sizeof now);
        if (strcmp(now, frozen_total) != 0)
            snprintf(bad, sizeof bad, "team %.300s: frozen total %.40s, stored data now give %s",
                     team, frozen_total, now);
    }
    if (!bad[0] && nfrozen != set->n)
        snprintf(bad, sizeof bad, "%zu frozen invoices, %zu teams in the stored data",
                 nfrozen, set->n);
    if (bad[0])
        return gl_error_set(err, GL_ERR_STATE,
                            "period %s is closed and data collected since changed it (%s); the "
                            "difference is billed as corrections in the next open period. "
                            "'gpuledger invoice --period %s' prints the frozen invoices",
                            set->period.name, bad, set->period.name);
    return GL_OK;
}

/* A team's days and pods; its idle and overhead shares from the invoice's
 * own share lines. */
static enum gl_status team_page(struct gl_store *s, const struct gl_statement *st,
                                const struct gl_invoice *inv, struct gl_team_usage *u,
                                struct gl_error *err)
{
    const struct gl_day_axis *ax = &st->axis;
    enum gl_status rc = gl_query_team_usage(s, &st->period, inv->team, ax,
                                            GL_STATEMENT_TOP_PODS, u, err);
    for (size_t j = 0; !rc && j < inv->nlines; j++) {
        const struct gl_invoice_line *l = &inv->lines[j];
        bool idle = l->kind == GL_LINE_IDLE_SHARE;
        if (!idle && l->kind != GL_LINE_OVERHEAD_SHARE)
            continue;
        u->has_shares = true;
        int64_t *all = idle ? &u->idle_share : &u->overhead_share;
        bool ok = !__builtin_add_overflow(*all, l->mib_s, all);
        for (size_t d = 0; ok && d < l->ndays; d++) {
            int64_t i = (l->days[d].day - ax->first) / 86400;
            if (i < 0 || (size_t)i >= ax->n)
                continue;
            int64_t *day = idle ? &u->days[i].idle : &u->days[i].overhead;
            ok = !__builtin_add_overflow(*day, l->days[d].mib_s, day);
        }
        if (!ok) {
            rc = gl_error_set(err, GL_ERR_RUNTIME,
                              "integer overflow: %s (MiB·s) of team \"%.300s\" in period %s "
                              "exceed the 64-bit range (the stored usage holds implausible "
                              "samples)",
                              gl_line_kind_name(l->kind), inv->team, st->period.name);
            gl_team_usage_free(u);
        }
    }
    return rc;
}

/* ---- workloads, trend, waste in money ---- */

struct waste_ctx {
    struct gl_store *s;
    const struct gl_price_table *prices;
    int minor_digits;
    struct gl_team_extra *x;
    int64_t *per_entry; /* MiB·s of the current (cluster, model) per price entry */
};

/* The current (cluster, model)'s amount from its per-entry MiB·s. */
static enum gl_status waste_flush(struct waste_ctx *w, struct gl_error *err)
{
    if (!w->x->nwaste)
        return GL_OK;
    struct gl_waste_money *m = &w->x->waste[w->x->nwaste - 1];
    for (size_t e = 0; e < w->prices->n; e++) {
        if (!w->per_entry[e])
            continue;
        gl_i128 unit, amount;
        enum gl_status rc = gl_price_per_gbh(w->prices, &w->prices->entries[e], m->model,
                                             gl_query_model_capacity(w->s, m->model), &unit,
                                             err);
        if (rc)
            return rc;
        if (!gl_amount_minor(w->per_entry[e], unit, w->minor_digits, &amount) ||
            __builtin_add_overflow(m->amount, amount, &m->amount) ||
            __builtin_add_overflow(w->x->waste_total, amount, &w->x->waste_total))
            return gl_error_set(err, GL_ERR_RUNTIME,
                                "integer overflow: the reserved-unused amount of GPU model "
                                "\"%.200s\" in cluster %.200s", m->model, m->cluster);
        w->per_entry[e] = 0;
    }
    return GL_OK;
}

static enum gl_status waste_row(void *ctx, const struct gl_usage_row *r, struct gl_error *err)
{
    struct waste_ctx *w = ctx;
    struct gl_team_extra *x = w->x;
    struct gl_waste_money *m = x->nwaste ? &x->waste[x->nwaste - 1] : NULL;
    if (!m || strcmp(m->cluster, r->cluster) != 0 || strcmp(m->model, r->model) != 0) {
        enum gl_status rc = waste_flush(w, err);
        if (rc)
            return rc;
        x->waste = gl_xrealloc(x->waste, (x->nwaste + 1) * sizeof *x->waste);
        m = &x->waste[x->nwaste++];
        *m = (struct gl_waste_money){gl_strdup(r->cluster), gl_strdup(r->model), 0, 0, 0};
    }
    int e = gl_prices_find(w->prices, r->model, r->hour);
    int64_t *q = e < 0 ? &m->unpriced : &w->per_entry[e];
    if (__builtin_add_overflow(m->mib_s, r->a, &m->mib_s) ||
        __builtin_add_overflow(*q, r->a, q))
        return gl_error_set(err, GL_ERR_RUNTIME,
                            "integer overflow: reserved-unused MiB·s of team \"%.300s\", GPU "
                            "model \"%.200s\"", r->team, r->model);
    return GL_OK;
}

static enum gl_status team_extra(struct gl_store *s, const struct gl_price_table *prices,
                                 const struct gl_statement *st, const struct gl_invoice *inv,
                                 struct gl_team_extra *x, struct gl_error *err)
{
    enum gl_status rc = gl_query_team_workloads(s, &st->period, inv->team,
                                                GL_STATEMENT_TOP_WORKLOADS, &x->workloads, err);
    if (!rc && prices) {
        struct waste_ctx w = {s, prices, st->cfg->minor_digits, x,
                              gl_xcalloc(prices->n ? prices->n : 1, sizeof(int64_t))};
        rc = gl_query_team_waste_hours(s, &st->period, inv->team, waste_row, &w, err);
        if (!rc)
            rc = waste_flush(&w, err);
        free(w.per_entry);
    }
    return rc;
}

/* Every team page's trend, read at once (one pass per month shown, not
 * per team and month: bench/closed_months.py measures it). */
static enum gl_status team_trends(struct gl_store *s, struct gl_statement *st,
                                  struct gl_error *err)
{
    size_t n = st->set->n, max = GL_STATEMENT_TREND_MONTHS;
    const char **teams = gl_xcalloc(n + 1, sizeof *teams);
    struct gl_trend_row *rows = gl_xcalloc(n * max + 1, sizeof *rows);
    size_t *counts = gl_xcalloc(n + 1, sizeof *counts);
    for (size_t i = 0; i < n; i++)
        teams[i] = st->set->invoices[i].team;
    enum gl_status rc = gl_query_trends(s, &st->period, teams, n, max, rows, counts, err);
    for (size_t i = 0; !rc && i < n; i++) {
        memcpy(st->extra[i].trend, &rows[i * max], counts[i] * sizeof *rows);
        st->extra[i].ntrend = counts[i];
    }
    free(teams);
    free(rows);
    free(counts);
    return rc;
}

/* Every team page's demand waiting and the fleet's, read at once (open
 * months: one pass over the month's rows for both). */
static enum gl_status team_pending(struct gl_store *s, struct gl_statement *st,
                                   struct gl_error *err)
{
    size_t n = st->set->n;
    const char **teams = gl_xcalloc(n + 1, sizeof *teams);
    struct gl_pending *outs = gl_xcalloc(n + 1, sizeof *outs);
    for (size_t i = 0; i < n; i++)
        teams[i] = st->set->invoices[i].team;
    enum gl_status rc = gl_query_team_pending(s, &st->period, teams, n,
                                              GL_STATEMENT_TOP_PENDING, &st->pending, outs,
                                              err);
    for (size_t i = 0; !rc && i < n; i++)
        st->extra[i].pending = outs[i];
    free(teams);
    free(outs);
    return rc;
}

static void team_extra_free(struct gl_team_extra *x)
{
    gl_team_workloads_free(&x->workloads);
    gl_pending_free(&x->pending);
    for (size_t i = 0; i < x->nwaste; i++)
        GL_FREE_EACH(x->waste[i].cluster, x->waste[i].model);
    free(x->waste);
    memset(x, 0, sizeof *x);
}

static void texts_free(struct gl_statement *st)
{
    for (size_t i = 0; i < st->nfrozen; i++)
        GL_FREE_EACH(st->frozen[i].team, st->frozen[i].json, st->frozen[i].md);
    GL_FREE_EACH(st->frozen, st->frozen_focus);
    st->frozen = NULL;
    st->nfrozen = 0;
    st->frozen_focus = NULL;
}

/* A closed period's invoices: from its frozen figures (checked by their
 * digests; one closed before the digests existed is checked against the
 * texts stored at close once, then sealed), else (closed before schema
 * 007) its texts; for the pages, the recomputation under the frozen
 * settings checked against the frozen totals. */
static enum gl_status closed_invoices(const struct gl_config *c, struct gl_store *s,
                                      const struct gl_price_table *prices,
                                      struct gl_statement *st, struct gl_error *err)
{
    const struct gl_period *p = &st->period;
    bool sealed = false;
    enum gl_status rc = gl_store_frozen_load(s, c, p, st->closed_at, &st->set, &sealed, err);
    if (rc)
        return rc;
    st->from_texts = st->set == NULL;
    if (st->from_texts || !sealed) {
        if ((rc = gl_frozen_invoices(s, p->name, NULL, frozen_one, st, err)))
            return rc;
        if ((st->from_texts ? (st->parts & GL_ST_INVOICES) != 0 : true) &&
            (rc = gl_frozen_focus(s, p->name, &st->frozen_focus, err)))
            return rc;
    }
    if (!st->from_texts) {
        st->cfg = st->set->cfg; /* the config as it was at close */
        if (!sealed) {
            rc = st->texts_check
                     ? st->texts_check(st, st->frozen, st->nfrozen, st->frozen_focus, err)
                     : gl_error_set(err, GL_ERR_STATE,
                                    "period %s was closed before its figures carried a digest: "
                                    "it is checked by rendering it, which this caller cannot do",
                                    p->name);
            st->seal = !rc;
        }
        texts_free(st); /* the figures are what is printed */
        if (rc)
            return rc;
    }
    if (!(st->parts & GL_ST_PAGES))
        return GL_OK;
    /* the pages' stored rollups against the frozen totals, under the
     * settings frozen with them (a billing basis changed since is not "data
     * collected since") */
    struct gl_invoice_set *live = NULL;
    if ((rc = gl_invoices_build(st->from_texts ? c : st->cfg, s, prices, p, &live, err)))
        return rc;
    live->closed_at = st->closed_at;
    rc = check_frozen(st, live, err);
    if (st->from_texts && !rc)
        st->set = live; /* pages of a period closed before schema 007 */
    else
        gl_invoices_free(live);
    return rc;
}

static enum gl_status build(const struct gl_config *c, struct gl_store *s,
                            const struct gl_price_table *prices, struct gl_statement *st,
                            struct gl_error *err)
{
    const struct gl_period *p = &st->period;
    enum gl_status rc = gl_period_is_closed(s, p->name, &st->closed, err);
    if (rc)
        return rc;
    if (st->closed && (rc = gl_query_closed_at(s, p->name, &st->closed_at, err)))
        return rc;
    if (st->closed && (st->parts & (GL_ST_INVOICES | GL_ST_PAGES)) &&
        (rc = closed_invoices(c, s, prices, st, err)))
        return rc;
    if (!st->closed && (st->parts & (GL_ST_INVOICES | GL_ST_PAGES))) {
        bool frozen;
        if ((rc = gl_period_invoices(c, s, prices, p, &st->set, &frozen, err)))
            return rc;
    }
    if ((st->parts & GL_ST_ANOMALIES) &&
        (rc = gl_anomalies_load(s, p, NULL, &st->anomalies, err)))
        return rc;
    if ((st->parts & (GL_ST_FLEET | GL_ST_PAGES)) && (rc = gl_query_fleet(s, p, &st->fleet, err)))
        return rc;
    /* an open month's pages read it with the teams' (team_pending) */
    const bool team_pages = (st->parts & GL_ST_PAGES) && !st->closed;
    if ((st->parts & (GL_ST_FLEET | GL_ST_PAGES)) && !team_pages &&
        (rc = gl_query_pending(s, p, GL_STATEMENT_TOP_PENDING, &st->pending, err)))
        return rc;
    /* the pages and run's tree read it when work counters are configured
     * and the period is open (a closed month's pages are its frozen
     * figures: neither unit cost nor advice, which follow today's config,
     * may change them); the unit-cost command always */
    const bool unit_cost = ((st->parts & GL_ST_UNIT_COST) && !(st->parts & GL_ST_PAGES)) ||
                           ((st->parts & (GL_ST_UNIT_COST | GL_ST_PAGES)) && c->nwork > 0 &&
                            !st->closed);
    if (unit_cost && (rc = gl_unit_cost_build(c, s, prices, p, &st->unit_cost, err)))
        return rc;
    if (unit_cost && st->set && (rc = gl_unit_cost_shares(&st->unit_cost, st->set, err)))
        return rc;
    if (st->parts & GL_ST_PAGES) {
        if ((rc = gl_query_axis(s, p, &st->axis, err)))
            return rc;
        st->teams = gl_xcalloc(st->set->n ? st->set->n : 1, sizeof *st->teams);
        for (size_t i = 0; !rc && i < st->set->n; i++)
            rc = team_page(s, st, &st->set->invoices[i], &st->teams[i], err);
        st->extra = gl_xcalloc(st->set->n ? st->set->n : 1, sizeof *st->extra);
        if (!rc)
            rc = team_trends(s, st, err);
        for (size_t i = 0; !rc && i < st->set->n; i++)
            rc = team_extra(s, prices, st, &st->set->invoices[i], &st->extra[i], err);
        if (!rc && team_pages)
            rc = team_pending(s, st, err);
    }
    /* advice follows today's config: the pages show an open month's, the
     * advise command any month's */
    if (!rc && (((st->parts & GL_ST_PAGES) && !st->closed) || (st->parts & GL_ST_ADVICE)))
        rc = gl_advise_read(c, s, prices, p, &st->advice, err);
    return rc;
}

enum gl_status gl_statement_build(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, const struct gl_period *p,
                                  unsigned parts, struct gl_statement **out,
                                  struct gl_error *err)
{
    return gl_statement_build_checked(c, s, prices, p, parts, NULL, out, err);
}

enum gl_status gl_statement_build_checked(const struct gl_config *c, struct gl_store *s,
                                          const struct gl_price_table *prices,
                                          const struct gl_period *p, unsigned parts,
                                          gl_texts_check check, struct gl_statement **out,
                                          struct gl_error *err)
{
    *out = NULL;
    struct gl_statement *st = gl_xcalloc(1, sizeof *st);
    st->cfg = c;
    st->period = *p;
    st->parts = parts;
    st->texts_check = check;
    enum gl_status rc = gl_store_read_begin(s, err);
    if (!rc)
        rc = build(c, s, prices, st, err);
    gl_store_read_end(s);
    /* a period closed before the digests, just checked against its texts:
     * sealed, so that a later wording change renders it from its figures.
     * Not an error when it cannot be written (a read-only copy): it is
     * checked against its texts again next time */
    struct gl_error serr = {0};
    if (!rc && st->seal && gl_store_frozen_seal(s, c, p->name, (int64_t)time(NULL), &serr))
        gl_log(GL_LOG_WARN, "closed period not sealed period=%s error=\"%s\"", p->name,
               serr.msg);
    else if (!rc && st->seal)
        gl_log(GL_LOG_INFO, "closed period sealed period=%s (checked against its stored texts; "
               "its digests stored)", p->name);
    if (rc) {
        gl_statement_free(st);
        return rc;
    }
    gl_statement_builds++;
    gl_log(GL_LOG_DEBUG, "statement built period=%s closed=%d parts=%u invoices=%zu builds=%lu",
           p->name, st->closed, parts, st->set ? st->set->n : st->nfrozen, gl_statement_builds);
    *out = st;
    return GL_OK;
}

void gl_statement_free(struct gl_statement *st)
{
    if (!st)
        return;
    if (st->teams)
        for (size_t i = 0; i < st->set->n; i++)
            gl_team_usage_free(&st->teams[i]);
    free(st->teams);
    if (st->extra)
        for (size_t i = 0; i < st->set->n; i++)
            team_extra_free(&st->extra[i]);
    free(st->extra);
    texts_free(st);
    gl_anomalies_free(&st->anomalies);
    gl_fleet_free(&st->fleet);
    gl_pending_free(&st->pending);
    gl_unit_cost_free(&st->unit_cost);
    gl_advice_free(&st->advice);
    gl_invoices_free(st->set);
    free(st);
}
