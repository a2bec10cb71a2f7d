/*
 * statement — everything any output shows for one period, built once.
 *
 * Reads (under one read snapshot, so every part agrees whatever a
 * concurrent collect commits): the invoices with their corrections
 * (invoice.c, period.c), the anomalies, the fleet per cluster and GPU model
 * and per device, the GPUs Pending pods waited for, the per-team daily
 * figures and top pods (query.c). A closed period's invoices are loaded
 * from the figures frozen at close (store_frozen.h), checked by the digests
 * stored then (store_digest.h; one closed before them against the texts
 * stored then, frozen_check.h gl_frozen_verify, then sealed); one closed
 * before schema 007 carries its frozen texts (printed from there ever
 * after). Writes nothing: renderers (render.h) are functions of a statement.
 *
 * Adding something every output can show: a field here, filled in
 * gl_statement_build from a typed read in query.c; the renderers that show
 * it read the field.
 */
#ifndef GL_STATEMENT_H
#define GL_STATEMENT_H

#include <stdbool.h>
#include <stddef.h>

#include "advice.h"
#include "config.h"
#include "error.h"
#include "invoice.h"
#include "price.h"
#include "query.h"
#include "store.h"
#include "timeutil.h"
#include "workcost.h"

/* How many pods a team page lists. */
#define GL_STATEMENT_TOP_PODS 10

/* How many workloads a team page lists, and how many earlier months its
 * trend shows. */
#define GL_STATEMENT_TOP_WORKLOADS 10
#define GL_STATEMENT_TREND_MONTHS 5

/* How many of the longest waits of Pending pods the fleet outputs and
 * each team page list. */
#define GL_STATEMENT_TOP_PENDING 10

/* A team's reserved-unused memory in money: per cluster and GPU model, the
 * MiB·s of each price entry's hours at that entry's price per GB-hour,
 * rounded half-even once per entry as an invoice line is. unpriced: MiB·s
 * in hours without a price entry (no amount). */
struct gl_waste_money {
    char *cluster, *model;
    int64_t mib_s, unpriced;
    gl_i128 amount;
};

struct gl_team_extra {
    struct gl_team_workloads workloads;
    struct gl_trend_row trend[GL_STATEMENT_TREND_MONTHS]; /* oldest first */
    size_t ntrend;
    struct gl_waste_money *waste;
    size_t nwaste;
    gl_i128 waste_total; /* Σ amount */
    /* open months: the team's GPUs requested while Pending and its longest
     * waits (a closed month's page shows its frozen figures only) */
    struct gl_pending pending;
};

/* The parts a caller needs (a command builds what its renderers show). */
enum gl_statement_part {
    GL_ST_INVOICES = 1 << 0,  /* invoices (frozen texts when closed) and FOCUS rows */
    GL_ST_FLEET = 1 << 1,     /* per model and per device (summary) */
    GL_ST_ANOMALIES = 1 << 2, /* every team's anomalies */
    GL_ST_PAGES = 1 << 3,     /* team pages and the fleet page: live invoices (checked
                                 against the frozen totals when closed), the day axis,
                                 each team's days and pods, the fleet */
    GL_ST_UNIT_COST = 1 << 4, /* cost per unit of work per workload (workcost.h) */
    GL_ST_ALL = (1 << 5) - 1, /* a period's tree (run): every part above */
    GL_ST_ADVICE = 1 << 5,    /* right-sizing advice, open or closed month (`advise`) */
};

/* A closed period's invoice as frozen at close (the audit copy). */
struct gl_frozen_invoice {
    char *team, *json, *md;
};

/* How a month closed before its figures carried a digest is checked
 * against the texts stored at close: by rendering its figures, which is
 * render/'s (frozen_check.h, gl_frozen_verify), so the caller hands it in. */
struct gl_statement;
struct gl_frozen_invoice;
typedef enum gl_status (*gl_texts_check)(const struct gl_statement *st,
                                         const struct gl_frozen_invoice *texts, size_t ntexts,
                                         const char *focus_csv, struct gl_error *err);

struct gl_statement {
    const struct gl_config *cfg; /* borrowed: outlives the statement */
    struct gl_period period;
    unsigned parts;
    bool closed;
    int64_t closed_at; /* when it was closed (invoice status "final"), 0 while open ("draft") */
    /* open: live invoices with corrections (GL_ST_INVOICES or GL_ST_PAGES);
     * closed: the invoices as frozen, loaded from the figures stored at close
     * (schema 007; set->cfg and cfg are then the config as it was at close);
     * closed before schema 007: the live recomputation (GL_ST_PAGES only),
     * else NULL */
    struct gl_invoice_set *set;
    /* closed before schema 007: the invoices and FOCUS CSV print the texts
     * stored at close (frozen, frozen_focus) */
    bool from_texts;
    /* closed with figures before the digests, checked against its texts:
     * gl_statement_build seals it (store_frozen.h) */
    bool seal;
    gl_texts_check texts_check; /* how such a month is checked (the caller's) */
    /* closed before schema 007, GL_ST_INVOICES: as frozen, by team id */
    struct gl_frozen_invoice *frozen;
    size_t nfrozen;
    char *frozen_focus;
    struct gl_anomaly_list anomalies; /* GL_ST_ANOMALIES: all teams */
    struct gl_fleet fleet;            /* GL_ST_FLEET or GL_ST_PAGES */
    struct gl_pending pending;        /* GL_ST_FLEET or GL_ST_PAGES: GPUs requested while
                                       * Pending (demand, never billed) */
    struct gl_day_axis axis;          /* GL_ST_PAGES */
    struct gl_team_usage *teams;      /* GL_ST_PAGES: teams[i] for set->invoices[i] */
    struct gl_team_extra *extra;      /* GL_ST_PAGES: workloads, trend, waste in money,
                                       * demand waiting (open) */
    struct gl_unit_cost unit_cost;    /* GL_ST_UNIT_COST or GL_ST_PAGES */
    struct gl_advice advice;          /* GL_ST_ADVICE, or GL_ST_PAGES of an open month:
                                       * right-sizing advice (never billed) */
};

/* Builds period p's statement (the parts asked for) under one read
 * snapshot. On success *out is the caller's (gl_statement_free). A closed
 * period asked for GL_ST_PAGES whose stored data no longer give the frozen
 * totals is GL_ERR_STATE (the page would disagree with the invoice finance
 * holds). Every build logs one debug line "statement built period=..." and
 * counts in gl_statement_builds. */
enum gl_status gl_statement_build(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, const struct gl_period *p,
                                  unsigned parts, struct gl_statement **out,
                                  struct gl_error *err);
/* The same with the check of months closed before the digests (check NULL
 * refuses such a month, GL_ERR_STATE): what every command passes. */
enum gl_status gl_statement_build_checked(const struct gl_config *c, struct gl_store *s,
                                          const struct gl_price_table *prices,
                                          const struct gl_period *p, unsigned parts,
                                          gl_texts_check check, struct gl_statement **out,
                                          struct gl_error *err);
void gl_statement_free(struct gl_statement *st);

/* Statements built by this process (tests, the run log). */
extern unsigned long gl_statement_builds;

/* The index of team's invoice in st->set, or -1. */
long gl_statement_team(const struct gl_statement *st, const char *team);

#endif
