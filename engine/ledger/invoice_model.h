/*
 * invoice_model — the invoice set as data: what bill/ computes (invoice.h),
 * what the ledger freezes and loads for a closed period (store_frozen.h)
 * and what render/ prints. Types, the names of their kinds (the only place
 * the stored kind strings are spelled), the gaps' text, and freeing; no
 * figure is computed here.
 */
#ifndef GL_INVOICE_MODEL_H
#define GL_INVOICE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "money.h"
#include "price.h"
#include "timeutil.h"
#include "util.h"

/* What an invoice line bills. The names (gl_line_kind_name: "memory_used",
 * "reserved_unused", "idle_share", "overhead_share") exist only where a
 * line leaves the engine (JSON, Markdown, CSV, HTML, frozen rows); the
 * order is the names' order, which lines sort by. */
enum gl_line_kind {
    GL_LINE_IDLE_SHARE,
    GL_LINE_MEMORY_USED,
    GL_LINE_OVERHEAD_SHARE,
    GL_LINE_RESERVED_UNUSED,
    GL_LINE_NKINDS
};
const char *gl_line_kind_name(enum gl_line_kind k);
/* false when name is none of them */
bool gl_line_kind_parse(const char *name, enum gl_line_kind *out);

/* Anomaly kinds, in their names' order ("excess_devices", "unallocated_use"). */
enum gl_anomaly_kind { GL_ANOMALY_EXCESS_DEVICES, GL_ANOMALY_UNALLOCATED_USE };
const char *gl_anomaly_kind_name(enum gl_anomaly_kind k);

struct gl_line_day {
    int64_t day;     /* UTC midnight */
    int64_t mib_s;
    gl_i128 billed;  /* minor units */
    int64_t busy_ppm, busy_steps; /* the team's compute indicator that day */
    gl_i128 qty_nano; /* corrections: the printed GB-h × 10^9 difference */
};

struct gl_invoice_line {
    char *cluster;
    char *model;
    enum gl_line_kind kind;
    const struct gl_price_entry *price;
    gl_i128 unit_price12; /* per GB-hour × 10^12 */
    int64_t mib_s;
    gl_i128 amount;       /* minor units */
    int estimated;
    struct gl_line_day *days;
    size_t ndays;
    char corrected_period[8]; /* "" or the closed YYYY-MM a correction line corrects */
    gl_i128 qty_nano;         /* corrections: Σ of the days' qty_nano */
    gl_i128 capacity_gb12;    /* GPU-Hours lines: the GPU's capacity (price.h), else 0 */
};

/* Information (never priced) per cluster and GPU model: reserved-unused
 * waste (a = MiB·s), allocation (a = MiB·s, b = micro-GPU-seconds), the
 * compute indicator (a = Σ busy ppm, b = device steps). */
struct gl_info_row {
    char *cluster;
    char *model;
    int64_t a, b;
};

struct gl_anomaly {
    enum gl_anomaly_kind kind;
    char *cluster, *ns, *pod, *team, *node, *device, *model;
    int64_t first_seen, last_seen, mib_s;
};

struct gl_anomaly_list {
    struct gl_anomaly *items;
    size_t n;
};

struct gl_invoice {
    char *team;
    const char *team_name;   /* catalogue name, else the id */
    const char *cost_center; /* NULL when unknown */
    char *invoice_id;        /* "GL-<period>-<team>", whole */
    struct gl_invoice_line *lines;
    size_t nlines;
    gl_i128 total;
    struct gl_info_row *waste, *allocated, *compute;
    size_t nwaste, nallocated, ncompute;
    struct gl_anomaly_list anomalies;
    char *own_name, *own_cost_center; /* a frozen set's team_name and cost_center */
};

/* What a closed period's invoice set loaded from its figures (schema 007,
 * store_frozen.h) owns: the config as it was at close (a copy of the
 * current one with the fields the renderers read as frozen), the price
 * entries its lines point to, the generator that closed it. */
struct gl_frozen_own {
    struct gl_config cfg;
    char *strs[6]; /* the frozen config strings */
    struct gl_price_entry *prices;
    size_t nprices;
};

/* A range of hours [from, to) of a cluster that a period's collection
 * lacked when it was closed with `close --force` (close.h): not collected,
 * its collection refused, or short of the settle delay. Every output of
 * the period states them (gl_gaps_describe). */
enum gl_gap_kind {
    GL_GAP_MISSING,   /* no stored chunk */
    GL_GAP_REFUSED,   /* its last collection was refused or failed (schema 009) */
    GL_GAP_UNSETTLED, /* after the period: the settle delay the collection had not reached */
    GL_GAP_NO_DATA,   /* stored, the backend had no data: collected (only listed, never frozen) */
};
struct gl_gap {
    char *cluster;
    enum gl_gap_kind kind;
    int64_t from, to;
};

/* "missing", "refused", "unsettled", "no_data" (the frozen rows and the JSON). */
const char *gl_gap_kind_name(enum gl_gap_kind k);
/* One line of text for every output: "cluster east: hours not collected
 * 2026-09-15T00:00:00Z to 2026-10-01T00:00:00Z (384 h); ..." into out
 * (appended; gl_buf). */
struct gl_buf;
bool gl_gaps_describe(const struct gl_gap *g, size_t n, struct gl_buf *out);
void gl_gaps_free(struct gl_gap *g, size_t n);

struct gl_invoice_set {
    const struct gl_config *cfg;
    struct gl_period period;
    /* 0 while the period is open (status "draft"); when it was closed, the
     * invoices are final ("final", closed_at): set by the statement for a
     * closed period and by close for the texts it freezes */
    int64_t closed_at;
    struct gl_invoice *invoices;
    size_t n;
    /* the invoice JSON's "generator": NULL = this engine ("gpuledger
     * <version>"); a closed period's frozen set: the one that closed it */
    char *generator;
    struct gl_frozen_own *own; /* NULL unless loaded from frozen figures */
    /* a period closed with `close --force` although incomplete: what its
     * collection lacked (set by close, loaded with the frozen figures) */
    struct gl_gap *gaps;
    size_t ngaps;
};

void gl_invoices_free(struct gl_invoice_set *set);
void gl_anomalies_free(struct gl_anomaly_list *l);

/* "gpuledger <version>": what this engine writes as an invoice's generator. */
extern const char gl_generator[];

#endif
