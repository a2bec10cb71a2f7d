/* invoice — pricing hourly rollups into invoice lines (their JSON and Markdown
 * are render/invoice_codec.c's). */
#include "invoice.h"

#include <stdlib.h>
#include <string.h>

#include "query.h"
#include "util.h"

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

const char gl_compute_caveat[] =
    "Device-level busy ratio (DCGM_FI_PROF_GR_ENGINE_ACTIVE, else DCGM_FI_DEV_GPU_UTIL/100) "
    "over the device steps where the team held memory; a shared device counts once per step. "
    "It cannot tell which of two concurrent pods did the work and is never priced.";
