/* invoice — pricing hourly rollups into invoice lines; JSON and Markdown. */
#include "invoice.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "gl_build.h"
#include "query.h"
#include "util.h"

#define GL_GENERATOR "gpuledger " GL_VERSION

/* Overflow checks (docs/specification.md "Integrity" "No wrapped arithmetic"): line and day MiB·s
 * are int64 sums of hourly SQL sums, checked on every addition; amounts
 * and totals are 128-bit and checked too. An overflow is an error naming
 * the team, cluster, model, kind and period, never a wrapped figure. */
static enum gl_status overflow(const struct gl_invoice_set *set, const char *team,
                               const char *cluster, const char *model, const char *what,
                               struct gl_error *err)
{
    return gl_error_set(err, GL_ERR_RUNTIME,
                        "integer overflow: %s of team \"%.300s\", cluster %.200s, GPU model "
                        "\"%.200s\" in period %s exceed the 64-bit range (the stored usage "
                        "holds implausible samples)",
                        what, team, cluster, model, set->period.name);
}

static struct gl_invoice *invoice_for(struct gl_invoice_set *set, const char *team)
{
    for (size_t i = set->n; i-- > 0;)
        if (strcmp(set->invoices[i].team, team) == 0)
            return &set->invoices[i];
    set->invoices = gl_xrealloc(set->invoices, (set->n + 1) * sizeof *set->invoices);
    struct gl_invoice *inv = &set->invoices[set->n++];
    memset(inv, 0, sizeof *inv);
    inv->team = gl_strdup(team);
    const struct gl_team_info *ti = gl_config_team(set->cfg, team);
    inv->team_name = ti ? ti->name : inv->team;
    inv->cost_center = gl_team_cost_center(set->cfg, team);
    size_t n = strlen(set->period.name) + strlen(team) + 5;
    inv->invoice_id = gl_xcalloc(n, 1);
    snprintf(inv->invoice_id, n, "GL-%s-%s", set->period.name, team);
    return inv;
}

/* The line of a key (corrected: "" for a charged line, else the closed
 * YYYY-MM it corrects), created when missing. */
static struct gl_invoice_line *line_key(struct gl_invoice *inv, const char *cluster,
                                        const char *model, enum gl_line_kind kind,
                                        const struct gl_price_entry *price, const char *corrected)
{
    for (size_t i = inv->nlines; i-- > 0;) {
        struct gl_invoice_line *l = &inv->lines[i];
        if (l->price == price && strcmp(l->corrected_period, corrected) == 0 &&
            strcmp(l->cluster, cluster) == 0 && strcmp(l->model, model) == 0 && l->kind == kind)
            return l;
    }
    inv->lines = gl_xrealloc(inv->lines, (inv->nlines + 1) * sizeof *inv->lines);
    struct gl_invoice_line *l = &inv->lines[inv->nlines++];
    memset(l, 0, sizeof *l);
    l->cluster = gl_strdup(cluster);
    l->model = gl_strdup(model);
    l->kind = kind;
    l->price = price;
    snprintf(l->corrected_period, sizeof l->corrected_period, "%s", corrected);
    return l;
}

static struct gl_invoice_line *line_for(struct gl_invoice *inv, const char *cluster,
                                        const char *model, enum gl_line_kind kind,
                                        const struct gl_price_entry *price)
{
    return line_key(inv, cluster, model, kind, price, "");
}

/* Adds MiB·s to a line and to one of its days (days kept in ascending
 * order); false, the line unchanged, when a sum would not fit int64. */
static bool line_add(struct gl_invoice_line *l, int64_t day, int64_t mib_s)
{
    int64_t total;
    if (__builtin_add_overflow(l->mib_s, mib_s, &total))
        return false;
    size_t i = l->ndays;
    while (i > 0 && l->days[i - 1].day > day)
        i--;
    if (i > 0 && l->days[i - 1].day == day) {
        if (__builtin_add_overflow(l->days[i - 1].mib_s, mib_s, &l->days[i - 1].mib_s))
            return false;
        l->mib_s = total;
        return true;
    }
    l->days = gl_xrealloc(l->days, (l->ndays + 1) * sizeof *l->days);
    memmove(&l->days[i + 1], &l->days[i], (l->ndays - i) * sizeof *l->days);
    l->days[i] = (struct gl_line_day){.day = day, .mib_s = mib_s};
    l->ndays++;
    l->mib_s = total;
    return true;
}

static enum gl_status price_lines(const struct gl_config *c, struct gl_store *s,
                                  struct gl_invoice_set *set, const struct gl_price_table *prices,
                                  struct gl_error *err)
{
    for (size_t i = 0; i < set->n; i++) {
        struct gl_invoice *inv = &set->invoices[i];
        inv->total = 0;
        for (size_t j = 0; j < inv->nlines; j++) {
            struct gl_invoice_line *l = &inv->lines[j];
            if (l->corrected_period[0]) {
                /* differences computed by the caller */
                if (__builtin_add_overflow(inv->total, l->amount, &inv->total))
                    return overflow(set, inv->team, l->cluster, l->model, "the invoice total",
                                    err);
                continue;
            }
            int64_t cap_mib = gl_query_model_capacity(s, l->model);
            enum gl_status rc = gl_price_per_gbh(prices, l->price, l->model, cap_mib,
                                                 &l->unit_price12, err);
            if (!rc && l->price->unit == GL_PRICE_GPU_HOURS)
                rc = gl_price_capacity_gb12(prices, l->price, l->model, cap_mib,
                                            &l->capacity_gb12, err);
            if (rc)
                return rc;
            if (!gl_amount_minor(l->mib_s, l->unit_price12, c->minor_digits, &l->amount))
                return overflow(set, inv->team, l->cluster, l->model,
                                "the amount (MiB·s × price)", err);
            gl_i128 *w = gl_xcalloc(l->ndays, sizeof *w);
            gl_i128 *parts = gl_xcalloc(l->ndays, sizeof *parts);
            for (size_t d = 0; d < l->ndays; d++)
                w[d] = l->days[d].mib_s;
            bool ok = gl_split_largest_remainder(l->amount, w, l->ndays, parts);
            for (size_t d = 0; ok && d < l->ndays; d++)
                l->days[d].billed = parts[d];
            free(w);
            free(parts);
            if (!ok || __builtin_add_overflow(inv->total, l->amount, &inv->total))
                return overflow(set, inv->team, l->cluster, l->model,
                                ok ? "the invoice total" : "the daily split of the amount", err);
        }
    }
    return GL_OK;
}

/* The price entry of a model at an hour, with the overlap check once per
 * model; a model without a price is an error naming it. */
struct price_lookup {
    const struct gl_price_table *prices;
    char *last_model; /* NULL before the first */
};

/* team NULL: the devices' idle and overhead. */
static enum gl_status find_price(struct price_lookup *pl, const char *model, int64_t hour,
                                 const char *team, const char *cluster, int *out,
                                 struct gl_error *err)
{
    if (!pl->last_model || strcmp(model, pl->last_model) != 0) {
        enum gl_status rc = gl_prices_check_model(pl->prices, model, err);
        if (rc)
            return rc;
        free(pl->last_model);
        pl->last_model = gl_strdup(model);
    }
    *out = gl_prices_find(pl->prices, model, hour);
    if (*out < 0) {
        char ts[32];
        gl_time_format(hour, ts, sizeof ts);
        return gl_error_set(err, GL_ERR_CONFIG,
                            "%s: no price for GPU model \"%s\" at %s (used by %s%.300s in "
                            "cluster %s)",
                            pl->prices->file, model, ts, team ? "team " : "idle and overhead",
                            team ? team : "", cluster);
    }
    return GL_OK;
}

struct billed_ctx {
    struct gl_invoice_set *set;
    struct price_lookup *pl;
};

static enum gl_status billed_row(void *vctx, const struct gl_usage_row *r, struct gl_error *err)
{
    struct billed_ctx *x = vctx;
    int pi;
    enum gl_status rc = find_price(x->pl, r->model, r->hour, r->team, r->cluster, &pi, err);
    if (rc)
        return rc;
    struct gl_invoice *inv = invoice_for(x->set, r->team);
    struct gl_invoice_line *l = line_for(inv, r->cluster, r->model, (enum gl_line_kind)r->kind,
                                         &x->pl->prices->entries[pi]);
    l->estimated |= r->estimated;
    if (!line_add(l, gl_floor_to(r->hour, 86400), r->a))
        return overflow(x->set, r->team, r->cluster, r->model, "the MiB·s", err);
    return GL_OK;
}

/* Team usage (memory used, billed reserved-unused) and, under the platform
 * policy, the devices' idle and overhead as lines of the platform team. */
static enum gl_status load_billed(const struct gl_config *c, struct gl_store *s,
                                  struct gl_invoice_set *set, struct price_lookup *pl,
                                  struct gl_error *err)
{
    struct billed_ctx x = {set, pl};
    return gl_query_billed(s, &set->period,
                           c->idle_policy == GL_IDLE_PLATFORM ? c->platform_team : NULL,
                           billed_row, &x, err);
}

/* One (cluster, model, day, price entry) bucket of idle and overhead. */
struct bucket {
    char *cluster, *model;
    int64_t day;
    int price;
    int64_t idle, overhead;
};

static int bucket_cmp(const void *a, const void *b)
{
    const struct bucket *x = a, *y = b;
    int c = strcmp(x->cluster, y->cluster);
    if (!c)
        c = strcmp(x->model, y->model);
    if (!c)
        c = x->day < y->day ? -1 : x->day > y->day;
    if (!c)
        c = x->price - y->price;
    return c;
}

struct idle_ctx {
    struct gl_invoice_set *set;
    struct price_lookup *pl;
    struct bucket *b;
    size_t nb;
};

static enum gl_status idle_row(void *vctx, const struct gl_usage_row *r, struct gl_error *err)
{
    struct idle_ctx *x = vctx;
    int pi;
    enum gl_status rc = find_price(x->pl, r->model, r->hour, NULL, r->cluster, &pi, err);
    if (rc)
        return rc;
    int64_t day = gl_floor_to(r->hour, 86400);
    struct bucket *b = x->b;
    size_t nb = x->nb;
    if (!nb || b[nb - 1].day != day || b[nb - 1].price != pi ||
        strcmp(b[nb - 1].cluster, r->cluster) != 0 || strcmp(b[nb - 1].model, r->model) != 0) {
        x->b = b = gl_xrealloc(b, (nb + 1) * sizeof *b);
        b[nb++] = (struct bucket){gl_strdup(r->cluster), gl_strdup(r->model), day, pi, 0, 0};
        x->nb = nb;
    }
    if (__builtin_add_overflow(b[nb - 1].idle, r->a, &b[nb - 1].idle) ||
        __builtin_add_overflow(b[nb - 1].overhead, r->b, &b[nb - 1].overhead))
        return overflow(x->set, "(idle and overhead)", r->cluster, r->model, "the daily MiB·s",
                        err);
    return GL_OK;
}

/* Proportional policy: each bucket's idle and overhead are split among the
 * teams billed in it, by their billed MiB·s (largest remainder, ties by team
 * id); with no such team they go to the platform team. */
static enum gl_status spread_proportional(const struct gl_config *c, struct gl_store *s,
                                          struct gl_invoice_set *set, struct price_lookup *pl,
                                          struct gl_error *err)
{
    struct idle_ctx x = {set, pl, NULL, 0};
    enum gl_status rc = gl_query_idle(s, &set->period, idle_row, &x, err);
    struct bucket *b = x.b;
    size_t nb = x.nb;
    if (!rc)
        gl_sort(b, nb, sizeof *b, bucket_cmp);
    /* Teams billed per bucket, in team id order (invoices are sorted). */
    size_t ninv = set->n;
    gl_i128 *w = gl_xcalloc(ninv + 1, sizeof *w);
    gl_i128 *parts = gl_xcalloc(ninv + 1, sizeof *parts);
    for (size_t k = 0; !rc && k < nb; k++) {
        const struct gl_price_entry *price = &pl->prices->entries[b[k].price];
        gl_i128 total_w = 0;
        for (size_t i = 0; i < ninv; i++) {
            w[i] = 0;
            const struct gl_invoice *inv = &set->invoices[i];
            for (size_t j = 0; j < inv->nlines; j++) {
                const struct gl_invoice_line *l = &inv->lines[j];
                if (l->price != price || strcmp(l->cluster, b[k].cluster) != 0 ||
                    strcmp(l->model, b[k].model) != 0 ||
                    (l->kind != GL_LINE_MEMORY_USED && l->kind != GL_LINE_RESERVED_UNUSED))
                    continue;
                for (size_t d = 0; d < l->ndays; d++)
                    if (l->days[d].day == b[k].day)
                        w[i] += l->days[d].mib_s; /* a few int64 terms: fits 128 bits */
            }
            total_w += w[i];
        }
        const enum gl_line_kind kinds[2] = {GL_LINE_IDLE_SHARE, GL_LINE_OVERHEAD_SHARE};
        int64_t qty[2] = {b[k].idle, b[k].overhead};
        for (int kk = 0; kk < 2 && !rc; kk++) {
            if (qty[kk] == 0)
                continue;
            if (total_w == 0) {
                struct gl_invoice *inv = invoice_for(set, c->platform_team);
                struct gl_invoice_line *l = line_for(inv, b[k].cluster, b[k].model, kinds[kk], price);
                if (!line_add(l, b[k].day, qty[kk]))
                    rc = overflow(set, inv->team, b[k].cluster, b[k].model,
                                  gl_line_kind_name(kinds[kk]), err);
                continue;
            }
            if (!gl_split_largest_remainder(qty[kk], w, ninv, parts)) {
                rc = overflow(set, "(idle and overhead)", b[k].cluster, b[k].model,
                              "the proportional split", err);
                break;
            }
            for (size_t i = 0; !rc && i < ninv; i++) {
                if (parts[i] == 0)
                    continue;
                struct gl_invoice_line *l =
                    line_for(&set->invoices[i], b[k].cluster, b[k].model, kinds[kk], price);
                /* a part is at most qty[kk]: it fits int64 */
                if (!line_add(l, b[k].day, (int64_t)parts[i]))
                    rc = overflow(set, set->invoices[i].team, b[k].cluster, b[k].model,
                                  gl_line_kind_name(kinds[kk]), err);
            }
        }
    }
    free(w);
    free(parts);
    for (size_t k = 0; k < nb; k++) {
        free(b[k].cluster);
        free(b[k].model);
    }
    free(b);
    return rc;
}

/* Every team's files get a name of their own (gl_safe_name). */
static enum gl_status check_file_names(const struct gl_invoice_set *set, struct gl_error *err)
{
    const char **ids = gl_xcalloc(set->n, sizeof *ids);
    for (size_t i = 0; i < set->n; i++)
        ids[i] = set->invoices[i].team;
    enum gl_status rc = gl_safe_names_check(ids, set->n, err);
    free(ids);
    return rc;
}

static int invoice_cmp(const void *a, const void *b)
{
    return strcmp(((const struct gl_invoice *)a)->team, ((const struct gl_invoice *)b)->team);
}

static int line_cmp(const void *a, const void *b)
{
    const struct gl_invoice_line *x = a, *y = b;
    int c = strcmp(x->corrected_period, y->corrected_period); /* corrections last */
    if (!c)
        c = strcmp(x->cluster, y->cluster);
    if (!c)
        c = strcmp(x->model, y->model);
    if (!c)
        c = (int)x->kind - (int)y->kind; /* the names' order */
    if (!c)
        c = x->price->valid_from < y->price->valid_from ? -1 : x->price->valid_from > y->price->valid_from;
    if (!c)
        c = x->price->row - y->price->row;
    return c;
}

/* False when a sum would not fit int64. */
static bool info_add(struct gl_info_row **rows, size_t *n, const char *cluster, const char *model,
                     int64_t a, int64_t b)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*rows)[i].cluster, cluster) == 0 && strcmp((*rows)[i].model, model) == 0)
            return !__builtin_add_overflow((*rows)[i].a, a, &(*rows)[i].a) &&
                   !__builtin_add_overflow((*rows)[i].b, b, &(*rows)[i].b);
    *rows = gl_xrealloc(*rows, (*n + 1) * sizeof **rows);
    (*rows)[(*n)++] = (struct gl_info_row){gl_strdup(cluster), gl_strdup(model), a, b};
    return true;
}

static struct gl_invoice *find_invoice(struct gl_invoice_set *set, const char *team)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->invoices[i].team, team) == 0)
            return &set->invoices[i];
    return NULL;
}

static enum gl_status info_row(void *vctx, const struct gl_usage_row *r, struct gl_error *err)
{
    struct gl_invoice_set *set = vctx;
    struct gl_invoice *inv = find_invoice(set, r->team);
    if (!inv)
        return GL_OK; /* teams with nothing billed get no invoice */
    const char *cluster = r->cluster, *model = r->model;
    int64_t day = r->hour, q = r->a;
    bool ok;
    switch ((enum gl_info_kind)r->kind) {
    case GL_INFO_WASTE:
        ok = info_add(&inv->waste, &inv->nwaste, cluster, model, q, 0);
        break;
    case GL_INFO_ALLOCATED:
        ok = info_add(&inv->allocated, &inv->nallocated, cluster, model, q, 0);
        break;
    case GL_INFO_ALLOCATED_GPU:
        ok = info_add(&inv->allocated, &inv->nallocated, cluster, model, 0, q);
        break;
    case GL_INFO_BUSY_PPM:
    case GL_INFO_BUSY_STEPS:
    default: {
        bool ppm = r->kind == GL_INFO_BUSY_PPM;
        ok = info_add(&inv->compute, &inv->ncompute, cluster, model, ppm ? q : 0, ppm ? 0 : q);
        for (size_t j = 0; ok && j < inv->nlines; j++) {
            struct gl_invoice_line *l = &inv->lines[j];
            if (strcmp(l->cluster, cluster) != 0 || strcmp(l->model, model) != 0 ||
                (l->kind != GL_LINE_MEMORY_USED && l->kind != GL_LINE_RESERVED_UNUSED))
                continue;
            for (size_t d = 0; ok && d < l->ndays; d++)
                if (l->days[d].day == day) {
                    int64_t *x = ppm ? &l->days[d].busy_ppm : &l->days[d].busy_steps;
                    ok = !__builtin_add_overflow(*x, q, x);
                }
        }
    }
    }
    if (!ok) {
        static const char *const names[] = {"allocated", "allocated_gpu", "busy_ppm",
                                            "busy_steps", "reserved_unused"};
        return overflow(set, inv->team, cluster, model,
                        (unsigned)r->kind < 5 ? names[r->kind] : "?", err);
    }
    return GL_OK;
}

/* Waste, allocation and compute indicator per team; the indicator per day
 * on the team's memory lines (for FOCUS). */
static enum gl_status load_info(struct gl_store *s, struct gl_invoice_set *set,
                                struct gl_error *err)
{
    return gl_query_team_info(s, &set->period, info_row, set, err);
}

enum gl_status gl_invoices_build(const struct gl_config *c, struct gl_store *s,
                                 const struct gl_price_table *prices, const struct gl_period *p,
                                 struct gl_invoice_set **out, struct gl_error *err)
{
    *out = NULL;
    struct gl_invoice_set *set = gl_xcalloc(1, sizeof *set);
    set->cfg = c;
    set->period = *p;
    struct price_lookup pl = {.prices = prices};
    enum gl_status rc = load_billed(c, s, set, &pl, err);
    if (!rc) {
        gl_sort(set->invoices, set->n, sizeof *set->invoices, invoice_cmp);
        if (c->idle_policy == GL_IDLE_PROPORTIONAL)
            rc = spread_proportional(c, s, set, &pl, err);
    }
    if (!rc) {
        gl_sort(set->invoices, set->n, sizeof *set->invoices, invoice_cmp);
        for (size_t i = 0; i < set->n; i++)
            gl_sort(set->invoices[i].lines, set->invoices[i].nlines, sizeof *set->invoices[i].lines,
                  line_cmp);
        rc = price_lines(c, s, set, prices, err);
    }
    free(pl.last_model);
    if (!rc)
        rc = load_info(s, set, err);
    for (size_t i = 0; !rc && i < set->n; i++)
        rc = gl_anomalies_load(s, p, set->invoices[i].team, &set->invoices[i].anomalies, err);
    if (!rc)
        rc = check_file_names(set, err);
    if (rc) {
        gl_invoices_free(set);
        return rc;
    }
    *out = set;
    return GL_OK;
}

struct gl_invoice_line *gl_invoice_add_correction(struct gl_invoice_set *set, const char *team,
                                                  const char *cluster, const char *model,
                                                  enum gl_line_kind kind,
                                                  const struct gl_price_entry *price,
                                                  const char *corrected_period)
{
    return line_key(invoice_for(set, team), cluster, model, kind, price, corrected_period);
}

gl_i128 gl_day_gbh_nano(const struct gl_invoice_line *l, const struct gl_line_day *d)
{
    return l->corrected_period[0] ? d->qty_nano : gl_gbh_nano(d->mib_s);
}

gl_i128 gl_line_gbh_nano(const struct gl_invoice_line *l)
{
    return l->corrected_period[0] ? l->qty_nano : gl_gbh_nano(l->mib_s);
}

enum gl_status gl_invoices_finish(struct gl_invoice_set *set, struct gl_error *err)
{
    gl_sort(set->invoices, set->n, sizeof *set->invoices, invoice_cmp);
    for (size_t i = 0; i < set->n; i++) {
        struct gl_invoice *inv = &set->invoices[i];
        gl_sort(inv->lines, inv->nlines, sizeof *inv->lines, line_cmp);
        inv->total = 0;
        for (size_t j = 0; j < inv->nlines; j++)
            if (__builtin_add_overflow(inv->total, inv->lines[j].amount, &inv->total))
                return overflow(set, inv->team, inv->lines[j].cluster, inv->lines[j].model,
                                "the invoice total", err);
    }
    return check_file_names(set, err);
}

/* The gaps as JSON: [{"cluster", "kind", "from", "to", "hours"}]. */
static cJSON *gaps_json(const struct gl_invoice_set *set)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < set->ngaps; i++) {
        const struct gl_gap *g = &set->gaps[i];
        char buf[32];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "cluster", g->cluster);
        cJSON_AddStringToObject(o, "kind", gl_gap_kind_name(g->kind));
        gl_time_format(g->from, buf, sizeof buf);
        cJSON_AddStringToObject(o, "from", buf);
        gl_time_format(g->to, buf, sizeof buf);
        cJSON_AddStringToObject(o, "to", buf);
        cJSON_AddNumberToObject(o, "hours", (double)((g->to - g->from) / 3600));
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

const char gl_compute_caveat[] =
    "Device-level busy ratio (DCGM_FI_PROF_GR_ENGINE_ACTIVE, else DCGM_FI_DEV_GPU_UTIL/100) "
    "over the device steps where the team held memory; a shared device counts once per step. "
    "It cannot tell which of two concurrent pods did the work and is never priced.";

static void add_dec(cJSON *o, const char *key, gl_i128 v, int scale)
{
    char buf[80];
    gl_dec_format(v, scale, buf, sizeof buf);
    cJSON_AddStringToObject(o, key, buf);
}

static cJSON *invoice_object(const struct gl_invoice_set *set, const struct gl_invoice *inv)
{
    const struct gl_config *c = set->cfg;
    char buf[80];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "invoice_id", inv->invoice_id);
    cJSON_AddStringToObject(o, "period", set->period.name);
    gl_time_format(set->period.start, buf, sizeof buf);
    cJSON_AddStringToObject(o, "period_start", buf);
    gl_time_format(set->period.end, buf, sizeof buf);
    cJSON_AddStringToObject(o, "period_end", buf);
    cJSON_AddStringToObject(o, "status", set->closed_at ? "final" : "draft");
    if (set->closed_at) {
        gl_time_format(set->closed_at, buf, sizeof buf);
        cJSON_AddStringToObject(o, "closed_at", buf);
    } else {
        cJSON_AddNullToObject(o, "closed_at");
    }
    /* closed with `close --force` although incomplete (only then present) */
    if (set->ngaps)
        cJSON_AddItemToObject(o, "incomplete_at_close", gaps_json(set));
    cJSON_AddStringToObject(o, "team", inv->team);
    cJSON_AddStringToObject(o, "team_name", inv->team_name);
    if (inv->cost_center)
        cJSON_AddStringToObject(o, "cost_center", inv->cost_center);
    else
        cJSON_AddNullToObject(o, "cost_center");
    cJSON_AddStringToObject(o, "currency", c->currency);
    cJSON *lines = cJSON_AddArrayToObject(o, "lines");
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct gl_invoice_line *l = &inv->lines[i];
        cJSON *lo = cJSON_CreateObject();
        cJSON_AddStringToObject(lo, "cluster", l->cluster);
        cJSON_AddStringToObject(lo, "gpu_model", l->model);
        cJSON_AddStringToObject(lo, "kind", gl_line_kind_name(l->kind));
        cJSON_AddStringToObject(lo, "price_id", l->price->id);
        gl_time_format(l->price->valid_from, buf, sizeof buf);
        cJSON_AddStringToObject(lo, "price_valid_from", buf);
        if (l->price->valid_to == INT64_MAX) {
            cJSON_AddNullToObject(lo, "price_valid_to");
        } else {
            gl_time_format(l->price->valid_to, buf, sizeof buf);
            cJSON_AddStringToObject(lo, "price_valid_to", buf);
        }
        gl_dec_format_trim(l->unit_price12, GL_PRICE_DECIMALS, buf, sizeof buf);
        cJSON_AddStringToObject(lo, "unit_price", buf);
        cJSON_AddStringToObject(lo, "pricing_unit", "GB-Hours");
        if (l->price->unit == GL_PRICE_GPU_HOURS) {
            gl_dec_format_trim(l->price->price12, GL_PRICE_DECIMALS, buf, sizeof buf);
            cJSON_AddStringToObject(lo, "list_price_per_gpu_hour", buf);
        }
        snprintf(buf, sizeof buf, "%lld", (long long)l->mib_s);
        cJSON_AddStringToObject(lo, "mib_seconds", buf);
        add_dec(lo, "gb_hours", gl_line_gbh_nano(l), GL_GBH_DECIMALS);
        add_dec(lo, "amount", l->amount, c->minor_digits);
        cJSON_AddBoolToObject(lo, "estimated", l->estimated != 0);
        if (l->corrected_period[0]) {
            cJSON_AddStringToObject(lo, "charge_class", "Correction");
            cJSON_AddStringToObject(lo, "corrected_period", l->corrected_period);
            cJSON *days = cJSON_AddArrayToObject(lo, "days");
            for (size_t d = 0; d < l->ndays; d++) {
                cJSON *x = cJSON_CreateObject();
                gl_date_format(l->days[d].day, buf, sizeof buf);
                cJSON_AddStringToObject(x, "day", buf);
                snprintf(buf, sizeof buf, "%lld", (long long)l->days[d].mib_s);
                cJSON_AddStringToObject(x, "mib_seconds", buf);
                add_dec(x, "gb_hours", l->days[d].qty_nano, GL_GBH_DECIMALS);
                add_dec(x, "amount", l->days[d].billed, c->minor_digits);
                cJSON_AddItemToArray(days, x);
            }
        } else {
            cJSON_AddNullToObject(lo, "charge_class");
            cJSON_AddNullToObject(lo, "corrected_period");
        }
        cJSON_AddItemToArray(lines, lo);
    }
    add_dec(o, "total", inv->total, c->minor_digits);
    cJSON *waste = cJSON_AddArrayToObject(o, "waste");
    for (size_t i = 0; i < inv->nwaste; i++) {
        const struct gl_info_row *r = &inv->waste[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "cluster", r->cluster);
        cJSON_AddStringToObject(x, "gpu_model", r->model);
        snprintf(buf, sizeof buf, "%lld", (long long)r->a);
        cJSON_AddStringToObject(x, "mib_seconds", buf);
        add_dec(x, "gb_hours", gl_gbh_nano(r->a), GL_GBH_DECIMALS);
        cJSON_AddItemToArray(waste, x);
    }
    cJSON *alloc = cJSON_AddArrayToObject(o, "allocated");
    for (size_t i = 0; i < inv->nallocated; i++) {
        const struct gl_info_row *r = &inv->allocated[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "cluster", r->cluster);
        cJSON_AddStringToObject(x, "gpu_model", r->model);
        snprintf(buf, sizeof buf, "%lld", (long long)r->a);
        cJSON_AddStringToObject(x, "mib_seconds", buf);
        add_dec(x, "gb_hours", gl_gbh_nano(r->a), GL_GBH_DECIMALS);
        /* micro-GPU-seconds → GPU-hours, 9 decimals */
        add_dec(x, "gpu_hours", gl_div_half_even((gl_i128)r->b * 1000, 3600), GL_GBH_DECIMALS);
        cJSON_AddItemToArray(alloc, x);
    }
    cJSON *comp = cJSON_AddArrayToObject(o, "compute_indicator");
    for (size_t i = 0; i < inv->ncompute; i++) {
        const struct gl_info_row *r = &inv->compute[i];
        if (r->b <= 0)
            continue;
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "cluster", r->cluster);
        cJSON_AddStringToObject(x, "gpu_model", r->model);
        add_dec(x, "busy_ratio", gl_div_half_even(r->a, r->b), 6);
        cJSON_AddNumberToObject(x, "device_steps", (double)r->b);
        cJSON_AddStringToObject(x, "caveat", gl_compute_caveat);
        cJSON_AddItemToArray(comp, x);
    }
    cJSON *an = cJSON_AddArrayToObject(o, "anomalies");
    for (size_t i = 0; i < inv->anomalies.n; i++)
        cJSON_AddItemToArray(an, gl_anomaly_json(&inv->anomalies.items[i]));
    cJSON_AddStringToObject(o, "generator", set->generator ? set->generator : GL_GENERATOR);
    return o;
}

void *gl_anomaly_json(const struct gl_anomaly *a)
{
    char buf[64];
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "kind", gl_anomaly_kind_name(a->kind));
    cJSON_AddStringToObject(x, "cluster", a->cluster);
    cJSON_AddStringToObject(x, "namespace", a->ns);
    cJSON_AddStringToObject(x, "pod", a->pod);
    cJSON_AddStringToObject(x, "team", a->team);
    cJSON_AddStringToObject(x, "node", a->node);
    cJSON_AddStringToObject(x, "device", a->device);
    cJSON_AddStringToObject(x, "gpu_model", a->model);
    gl_time_format(a->first_seen, buf, sizeof buf);
    cJSON_AddStringToObject(x, "first_seen", buf);
    gl_time_format(a->last_seen, buf, sizeof buf);
    cJSON_AddStringToObject(x, "last_seen", buf);
    snprintf(buf, sizeof buf, "%lld", (long long)a->mib_s);
    cJSON_AddStringToObject(x, "mib_seconds", buf);
    add_dec(x, "gb_hours", gl_gbh_nano(a->mib_s), GL_GBH_DECIMALS);
    return x;
}

char *gl_invoice_json(const struct gl_invoice_set *set, const struct gl_invoice *inv)
{
    cJSON *root = invoice_object(set, inv);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

size_t gl_invoice_md_lines(const struct gl_invoice_set *set, const struct gl_invoice *inv,
                           bool corrections_only, FILE *out)
{
    const struct gl_config *c = set->cfg;
    char a[80], b[80], q[80];
    size_t n = 0;
    fprintf(out, "| Cluster | GPU model | Kind | GB-hours | Unit price (per GB-hour) | Price entry | Amount |\n");
    fprintf(out, "|---|---|---|---:|---:|---|---:|\n");
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct gl_invoice_line *l = &inv->lines[i];
        if (corrections_only && !l->corrected_period[0])
            continue;
        n++;
        gl_dec_format(gl_line_gbh_nano(l), GL_GBH_DECIMALS, q, sizeof q);
        gl_dec_format_trim(l->unit_price12, GL_PRICE_DECIMALS, a, sizeof a);
        gl_dec_format(l->amount, c->minor_digits, b, sizeof b);
        fputs("| ", out);
        gl_md_cell(out, l->cluster);
        fputs(" | ", out);
        gl_md_cell(out, l->model);
        fprintf(out, " | %s%s%s%s | %s | %s | %s | %s |\n", gl_line_kind_name(l->kind),
                l->estimated ? " (estimated)" : "",
                l->corrected_period[0] ? ", correction of " : "", l->corrected_period, q, a,
                l->price->id, b);
    }
    return n;
}

void gl_invoice_markdown(const struct gl_invoice_set *set, const struct gl_invoice *inv,
                         FILE *out)
{
    const struct gl_config *c = set->cfg;
    char a[80], b[80], q[80];
    fprintf(out, "# Invoice %s\n\n", inv->invoice_id);
    fprintf(out, "- Team: **");
    gl_md_cell(out, inv->team_name);
    fprintf(out, "** (`");
    gl_md_cell(out, inv->team);
    fputs("`)\n- Cost center: ", out);
    gl_md_cell(out, inv->cost_center ? inv->cost_center : "—");
    fputc('\n', out);
    gl_time_format(set->period.start, a, sizeof a);
    gl_time_format(set->period.end, b, sizeof b);
    fprintf(out, "- Period: %s (%s to %s, UTC)\n", set->period.name, a, b);
    if (set->closed_at) {
        gl_time_format(set->closed_at, a, sizeof a);
        fprintf(out, "- Status: **FINAL** (period closed %s)\n", a);
        if (set->ngaps) {
            struct gl_buf g;
            gl_buf_init(&g);
            gl_gaps_describe(set->gaps, set->ngaps, &g);
            fputs("- **Incomplete at close** (closed with --force): ", out);
            gl_md_cell(out, g.data ? g.data : "");
            fputs(" (usage of these hours collected later is billed as corrections of a later "
                  "month)\n", out);
            gl_buf_free(&g);
        }
    } else {
        fputs("- Status: **DRAFT** (the period is open: figures may change until it is "
              "closed)\n", out);
    }
    fprintf(out, "- Currency: %s\n\n", c->currency);
    fprintf(out, "Billed by GPU memory held (GB-hours, GB = 10^9 bytes).\n\n");
    gl_invoice_md_lines(set, inv, false, out);
    gl_dec_format(inv->total, c->minor_digits, b, sizeof b);
    fprintf(out, "\n**Total: %s %s**\n", b, c->currency);
    if (inv->nwaste || inv->nallocated) {
        bool billed = false; /* what was collected decides, not today's config */
        for (size_t i = 0; i < inv->nlines; i++)
            billed |= inv->lines[i].kind == GL_LINE_RESERVED_UNUSED;
        fprintf(out, "\n## Allocation (information, %s)\n\n",
                billed ? "reserved-unused is billed above" : "reserved-unused is not billed");
        fprintf(out, "| Cluster | GPU model | Allocated GB-hours | GPU-hours | Reserved-unused GB-hours (waste) |\n");
        fprintf(out, "|---|---|---:|---:|---:|\n");
        for (size_t i = 0; i < inv->nallocated; i++) {
            const struct gl_info_row *r = &inv->allocated[i];
            int64_t waste = 0;
            for (size_t k = 0; k < inv->nwaste; k++)
                if (!strcmp(inv->waste[k].cluster, r->cluster) && !strcmp(inv->waste[k].model, r->model))
                    waste = inv->waste[k].a;
            char gh[80];
            gl_dec_format(gl_gbh_nano(r->a), GL_GBH_DECIMALS, q, sizeof q);
            gl_dec_format(gl_div_half_even((gl_i128)r->b * 1000, 3600), GL_GBH_DECIMALS, gh, sizeof gh);
            gl_dec_format(gl_gbh_nano(waste), GL_GBH_DECIMALS, a, sizeof a);
            fputs("| ", out);
            gl_md_cell(out, r->cluster);
            fputs(" | ", out);
            gl_md_cell(out, r->model);
            fprintf(out, " | %s | %s | %s |\n", q, gh, a);
        }
    }
    if (inv->ncompute) {
        fprintf(out, "\n## Compute indicator (not billed)\n\n> %s\n\n", gl_compute_caveat);
        fprintf(out, "| Cluster | GPU model | Busy ratio | Device steps |\n|---|---|---:|---:|\n");
        for (size_t i = 0; i < inv->ncompute; i++) {
            const struct gl_info_row *r = &inv->compute[i];
            if (r->b <= 0)
                continue;
            gl_dec_format(gl_div_half_even(r->a, r->b), 6, a, sizeof a);
            fputs("| ", out);
            gl_md_cell(out, r->cluster);
            fputs(" | ", out);
            gl_md_cell(out, r->model);
            fprintf(out, " | %s | %lld |\n", a, (long long)r->b);
        }
    }
    if (inv->anomalies.n) {
        fprintf(out, "\n## Anomalies (billed as used)\n\n");
        fprintf(out, "| Kind | Namespace/pod | Node | Device | First seen | Last seen | GB-hours |\n");
        fprintf(out, "|---|---|---|---|---|---|---:|\n");
        for (size_t i = 0; i < inv->anomalies.n; i++) {
            const struct gl_anomaly *x = &inv->anomalies.items[i];
            char f[32], l[32];
            gl_time_format(x->first_seen, f, sizeof f);
            gl_time_format(x->last_seen, l, sizeof l);
            gl_dec_format(gl_gbh_nano(x->mib_s), GL_GBH_DECIMALS, q, sizeof q);
            fprintf(out, "| %s | ", gl_anomaly_kind_name(x->kind));
            gl_md_cell(out, x->ns);
            fputs("/", out);
            gl_md_cell(out, x->pod);
            fputs(" | ", out);
            gl_md_cell(out, x->node);
            fputs(" | ", out);
            gl_md_cell(out, x->device);
            fprintf(out, " | %s | %s | %s |\n", f, l, q);
        }
    }
}
