/* statement — one period's figures for every output, under one snapshot. */
#include "statement.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "close.h"
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

/* A closed period's pages are drawn from the stored rollups, so they are
 * written only while those still give every team the frozen total. */
static enum gl_status check_frozen(const struct gl_statement *st, struct gl_error *err)
{
    const struct gl_invoice_set *set = st->set;
    char bad[600] = "";
    for (size_t f = 0; !bad[0] && f < st->nfrozen; f++) {
        const char *team = st->frozen[f].team;
        cJSON *o = cJSON_Parse(st->frozen[f].json);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "total");
        const char *frozen_total = cJSON_IsString(t) ? t->valuestring : "?";
        char now[96] = "none";
        long i = gl_statement_team(st, team);
        if (i >= 0)
            gl_dec_format(set->invoices[i].total, st->cfg->minor_digits, now, sizeof now);
        if (strcmp(now, frozen_total) != 0)
            snprintf(bad, sizeof bad, "team %.300s: frozen total %.40s, stored data now give %s",
                     team, frozen_total, now);
        cJSON_Delete(o);
    }
    if (!bad[0] && st->nfrozen != set->n)
        snprintf(bad, sizeof bad, "%zu frozen invoices, %zu teams in the stored data",
                 st->nfrozen, set->n);
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

static enum gl_status build(const struct gl_config *c, struct gl_store *s,
                            const struct gl_price_table *prices, struct gl_statement *st,
                            struct gl_error *err)
{
    const struct gl_period *p = &st->period;
    enum gl_status rc = gl_period_is_closed(s, p->name, &st->closed, err);
    if (rc)
        return rc;
    if (st->closed && (st->parts & (GL_ST_INVOICES | GL_ST_PAGES))) {
        if ((rc = gl_frozen_invoices(s, p->name, NULL, frozen_one, st, err)))
            return rc;
        if ((st->parts & GL_ST_INVOICES) && (rc = gl_frozen_focus(s, p->name, &st->frozen_focus,
                                                                  err)))
            return rc;
    }
    if (!st->closed && (st->parts & (GL_ST_INVOICES | GL_ST_PAGES))) {
        bool frozen;
        if ((rc = gl_period_invoices(c, s, prices, p, &st->set, &frozen, err)))
            return rc;
    } else if (st->closed && (st->parts & GL_ST_PAGES)) {
        if ((rc = gl_invoices_build(c, s, prices, p, &st->set, err)) ||
            (rc = check_frozen(st, err)))
            return rc;
    }
    if ((st->parts & GL_ST_ANOMALIES) &&
        (rc = gl_anomalies_load(s, p, NULL, &st->anomalies, err)))
        return rc;
    if ((st->parts & (GL_ST_FLEET | GL_ST_PAGES)) && (rc = gl_query_fleet(s, p, &st->fleet, err)))
        return rc;
    if (st->parts & GL_ST_PAGES) {
        if ((rc = gl_query_axis(s, p, &st->axis, err)))
            return rc;
        st->teams = gl_xcalloc(st->set->n ? st->set->n : 1, sizeof *st->teams);
        for (size_t i = 0; !rc && i < st->set->n; i++)
            rc = team_page(s, st, &st->set->invoices[i], &st->teams[i], err);
    }
    return rc;
}

enum gl_status gl_statement_build(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, const struct gl_period *p,
                                  unsigned parts, struct gl_statement **out,
                                  struct gl_error *err)
{
    *out = NULL;
    struct gl_statement *st = gl_xcalloc(1, sizeof *st);
    st->cfg = c;
    st->period = *p;
    st->parts = parts;
    enum gl_status rc = gl_store_read_begin(s, err);
    if (!rc)
        rc = build(c, s, prices, st, err);
    gl_store_read_end(s);
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
    for (size_t i = 0; i < st->nfrozen; i++) {
        free(st->frozen[i].team);
        free(st->frozen[i].json);
        free(st->frozen[i].md);
    }
    free(st->frozen);
    free(st->frozen_focus);
    gl_anomalies_free(&st->anomalies);
    gl_fleet_free(&st->fleet);
    gl_invoices_free(st->set);
    free(st);
}
