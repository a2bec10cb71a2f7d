/* export — FOCUS CSV rows from invoice lines and days, in each version's columns. */
#include "export.h"

#include <cjson/cJSON.h>
#include <csv.h>
#include <stdlib.h>
#include <string.h>

#include "gl_build.h"
#include "price.h"
#include "util.h"

/* The versions' bits: which versions write a column. */
#define V12 1u
#define V13 2u
#define ALL (V12 | V13)

/* Every column any FOCUS version writes, in the order written: FOCUS
 * columns alphabetically, then x_ columns (FOCUS.md); each with the
 * versions that write it. 1.3 adds the split cost allocation columns, and
 * its ServiceProviderName and HostProviderName replace the deprecated
 * ProviderName and PublisherName.
 *
 * Each column's cell in a day row: str (a string, quoted as CSV needs and
 * neutralised against spreadsheet formulas) or bare (a number or time
 * written as it is), of a value over the day row's texts and figures
 * (day_cell: c the config, inv the invoice, l its line, x the line's texts,
 * f the day's figures, d the row); NULL is an empty cell. The allocation
 * columns are a split row's (x->method) and empty for the others;
 * AllocatedTags is always empty, the tags being all in Tags. */
#define COLUMNS(X)                                                                             \
    X(AllocatedMethodDetails, V13, str, d->details)                                            \
    X(AllocatedMethodId, V13, str, x->method)                                                      \
    X(AllocatedResourceId, V13, str, x->method ? inv->team : NULL)                                 \
    X(AllocatedResourceName, V13, str, x->method ? inv->team_name : NULL)                          \
    X(AllocatedTags, V13, str, NULL)                                                           \
    X(BilledCost, ALL, bare, f->billed)                                                        \
    X(BillingAccountId, ALL, str, c->account_id)                                               \
    X(BillingAccountName, ALL, str, c->account_name)                                           \
    X(BillingCurrency, ALL, str, c->currency)                                                  \
    X(BillingPeriodEnd, ALL, bare, d->pend)                                                    \
    X(BillingPeriodStart, ALL, bare, d->pstart)                                                \
    X(ChargeCategory, ALL, str, "Usage")                                                       \
    X(ChargeClass, ALL, str, l->corrected_period[0] ? "Correction" : NULL)                     \
    X(ChargeDescription, ALL, str, x->desc.data)                                               \
    X(ChargeFrequency, ALL, str, "Usage-Based")                                                \
    X(ChargePeriodEnd, ALL, bare, f->de)                                                       \
    X(ChargePeriodStart, ALL, bare, f->ds)                                                     \
    X(ConsumedQuantity, ALL, bare, f->qty)                                                     \
    X(ConsumedUnit, ALL, str, "GB-Hours")                                                      \
    X(ContractedCost, ALL, bare, f->list)                                                      \
    X(ContractedUnitPrice, ALL, bare, x->price)                                                \
    X(EffectiveCost, ALL, bare, f->billed)                                                     \
    X(HostProviderName, V13, str, c->provider)                                                 \
    X(InvoiceId, ALL, str, inv->invoice_id)                                                    \
    X(InvoiceIssuerName, ALL, str, c->provider)                                                \
    X(ListCost, ALL, bare, f->list)                                                            \
    X(ListUnitPrice, ALL, bare, x->price)                                                      \
    X(PricingQuantity, ALL, bare, f->pqty)                                                     \
    X(PricingUnit, ALL, str, x->gpuh ? "GPU-Hours" : "GB-Hours")                               \
    X(ProviderName, V12, str, c->provider)                                                     \
    X(PublisherName, V12, str, c->provider)                                                    \
    X(RegionId, ALL, str, l->cluster)                                                          \
    X(RegionName, ALL, str, l->cluster)                                                        \
    X(ResourceId, ALL, str, x->resid.data)                                                     \
    X(ResourceName, ALL, str, l->model)                                                        \
    X(ResourceType, ALL, str, "GPU")                                                           \
    X(ServiceCategory, ALL, str, "Compute")                                                    \
    X(ServiceName, ALL, str, c->service_name)                                                  \
    X(ServiceProviderName, V13, str, c->provider)                                              \
    X(ServiceSubcategory, ALL, str, "Containers")                                              \
    X(SkuId, ALL, str, x->sku.data)                                                            \
    X(SkuMeter, ALL, str, "GPU memory")                                                        \
    X(SkuPriceDetails, ALL, str, x->price_details)                                             \
    X(SkuPriceId, ALL, str, x->sku_price.data)                                                 \
    X(SubAccountId, ALL, str, inv->team)                                                       \
    X(SubAccountName, ALL, str, inv->team_name)                                                \
    X(Tags, ALL, str, x->tags)                                                                 \
    X(x_ChargeKind, ALL, str, gl_line_kind_name(l->kind))                                      \
    X(x_CorrectedPeriod, ALL, str, l->corrected_period[0] ? l->corrected_period : NULL)        \
    X(x_CostCenter, ALL, str, inv->cost_center)                                                \
    X(x_Cluster, ALL, str, l->cluster)                                                         \
    X(x_GpuModel, ALL, str, l->model)                                                          \
    X(x_ComputeIndicator, ALL, bare, f->busy[0] ? f->busy : NULL)                              \
    X(x_Estimated, ALL, bare, l->estimated ? "true" : "false")

enum col {
#define COL_ID(name, versions, cell, value) C_##name,
    COLUMNS(COL_ID)
#undef COL_ID
    NCOLS
};

static const struct column {
    const char *name;
    unsigned versions;
} columns[NCOLS] = {
#define COL_ROW(name, versions, cell, value) {#name, versions},
    COLUMNS(COL_ROW)
#undef COL_ROW
};

/* The versions written: a new one is a bit, its columns marked above, and
 * a line here (and its renderer rows, render.c). */
static const struct version {
    int number;         /* as the config holds it: 13 = 1.3 */
    const char *name;   /* FocusVersion */
    const char *marker; /* a column only it writes: how a stored CSV's header tells it
                           (NULL: the version a header without any marker is) */
    unsigned bit;
} versions[] = {
    {12, "1.2", NULL, V12},
    {13, "1.3", "ServiceProviderName", V13},
};

static const struct version *version_of(int number)
{
    for (size_t i = 0; i < sizeof versions / sizeof *versions; i++)
        if (versions[i].number == number)
            return &versions[i];
    return NULL;
}

static bool has_col(const struct version *v, enum col k)
{
    return (columns[k].versions & v->bit) != 0;
}

int gl_focus_version_of_csv(const char *csv)
{
    size_t n = strcspn(csv, "\r\n");
    int fallback = 0;
    for (size_t i = 0; i < sizeof versions / sizeof *versions; i++) {
        const char *hit = versions[i].marker ? strstr(csv, versions[i].marker) : NULL;
        if (hit && (size_t)(hit - csv) < n)
            return versions[i].number;
        if (!versions[i].marker)
            fallback = versions[i].number;
    }
    return fallback;
}

/* The provider-defined tag key prefix (metadata ProviderTagPrefixes). */
#define TAG_PREFIX "gpuledger/"

/* When the schema of this release (the columns below) was defined. */
#define GL_FOCUS_SCHEMA_DATE "2026-06-01T00:00:00Z"

/* One output row under construction: each cell is a string column, a bare
 * value, or null. */
struct row {
    FILE *out;
    size_t col;
    const char *bad; /* first non-ASCII string, for the error */
};

static void sep(struct row *r)
{
    if (r->col++ > 0)
        fputc(',', r->out);
}

static void cell_bare(struct row *r, const char *v)
{
    sep(r);
    if (v)
        fputs(v, r->out);
}

static void cell_str(struct row *r, const char *v)
{
    sep(r);
    if (!v)
        return;
    if (!gl_is_ascii(v) && !r->bad)
        r->bad = v;
    if (v[0] == '=' || v[0] == '+' || v[0] == '-' || v[0] == '@') {
        /* Neutralise spreadsheet formulas: a leading apostrophe. */
        size_t n = strlen(v);
        char *p = gl_xcalloc(n + 2, 1);
        p[0] = '\'';
        memcpy(p + 1, v, n);
        csv_fwrite(r->out, p, n + 1);
        free(p);
    } else {
        csv_fwrite(r->out, v, strlen(v));
    }
}

static void end_row(struct row *r)
{
    fputs("\r\n", r->out);
    r->col = 0;
}

/* JSON with every non-ASCII character escaped as \uXXXX. */
static char *ascii_json(cJSON *o)
{
    char *raw = cJSON_PrintUnformatted(o);
    struct gl_buf b;
    gl_buf_init(&b);
    for (const unsigned char *p = (const unsigned char *)raw; *p;) {
        if (*p < 0x80) {
            gl_buf_append(&b, p++, 1);
            continue;
        }
        unsigned cp = 0;
        int extra = 0;
        if ((*p & 0xe0) == 0xc0) {
            cp = *p & 0x1f;
            extra = 1;
        } else if ((*p & 0xf0) == 0xe0) {
            cp = *p & 0x0f;
            extra = 2;
        } else if ((*p & 0xf8) == 0xf0) {
            cp = *p & 0x07;
            extra = 3;
        } else {
            cp = 0xfffd;
        }
        p++;
        for (int i = 0; i < extra && (*p & 0xc0) == 0x80; i++)
            cp = (cp << 6) | (*p++ & 0x3f);
        if (cp >= 0x10000) {
            cp -= 0x10000;
            gl_buf_printf(&b, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
        } else {
            gl_buf_printf(&b, "\\u%04x", cp);
        }
    }
    free(raw);
    return b.data;
}

static const char *kind_description(enum gl_line_kind kind)
{
    switch (kind) {
    case GL_LINE_MEMORY_USED: return "GPU memory used";
    case GL_LINE_RESERVED_UNUSED: return "GPU memory allocated but unused";
    case GL_LINE_IDLE_SHARE: return "Idle GPU memory share";
    case GL_LINE_OVERHEAD_SHARE: return "GPU memory overhead share";
    case GL_LINE_NKINDS: break;
    }
    return "GPU memory";
}

/* Split cost allocation (FOCUS 1.3): the method of a row that results
 * from a split, or NULL. Idle and overhead spread over the teams under
 * `proportional`; a quantity that came from splitting one device value
 * among the pods that share the device. */
#define METHOD_PROPORTIONAL "gpuledger/idle-overhead-proportional"
#define METHOD_DEVICE_COPY "gpuledger/device-copy-split"

static const char *split_method(const struct gl_config *c, const struct gl_invoice_line *l)
{
    if (c->idle_policy == GL_IDLE_PROPORTIONAL &&
        (l->kind == GL_LINE_IDLE_SHARE || l->kind == GL_LINE_OVERHEAD_SHARE))
        return METHOD_PROPORTIONAL;
    if (l->estimated)
        return METHOD_DEVICE_COPY;
    return NULL;
}

/* AllocatedRatio of each proportional split row (× 10^9, in the order rows
 * are written; -1 = none): per origin charge (cluster, model, kind, price
 * entry, day, corrected period) the rows' GB-hours shares, split by largest
 * remainder so that the ratios of one origin charge add up to exactly 1. */
static gl_i128 *split_ratios(const struct gl_invoice_set *set, size_t *nout)
{
    const struct gl_config *c = set->cfg;
    size_t n = 0;
    for (size_t i = 0; i < set->n; i++)
        for (size_t j = 0; j < set->invoices[i].nlines; j++)
            n += set->invoices[i].lines[j].ndays;
    gl_i128 *ratio = gl_xcalloc(n ? n : 1, sizeof *ratio);
    int32_t *group = gl_xcalloc(n ? n : 1, sizeof *group);
    gl_i128 *weight = gl_xcalloc(n ? n : 1, sizeof *weight);
    struct gl_intern *ids = gl_intern_new();
    struct gl_buf key;
    gl_buf_init(&key);
    size_t r = 0;
    for (size_t i = 0; i < set->n; i++)
        for (size_t j = 0; j < set->invoices[i].nlines; j++) {
            const struct gl_invoice_line *l = &set->invoices[i].lines[j];
            bool split = split_method(c, l) && strcmp(split_method(c, l), METHOD_PROPORTIONAL) == 0;
            for (size_t d = 0; d < l->ndays; d++, r++) {
                ratio[r] = -1;
                group[r] = -1;
                if (!split || l->corrected_period[0])
                    continue;
                gl_buf_reset(&key);
                if (!gl_buf_printf(&key, "%zu:%s%zu:%s%d:%p:%lld", strlen(l->cluster), l->cluster,
                                   strlen(l->model), l->model, (int)l->kind, (const void *)l->price,
                                   (long long)l->days[d].day))
                    continue;
                group[r] = gl_intern_get(ids, key.data);
                weight[r] = gl_day_gbh_nano(l, &l->days[d]);
            }
        }
    int32_t ng = gl_intern_count(ids);
    size_t *members = gl_xcalloc(n ? n : 1, sizeof *members);
    gl_i128 *w = gl_xcalloc(n ? n : 1, sizeof *w), *parts = gl_xcalloc(n ? n : 1, sizeof *parts);
    for (int32_t g = 0; g < ng; g++) {
        size_t m = 0;
        for (size_t k = 0; k < n; k++)
            if (group[k] == g) {
                members[m] = k;
                w[m++] = weight[k] < 0 ? 0 : weight[k];
            }
        if (!gl_split_largest_remainder(1000000000, w, m, parts))
            continue;
        for (size_t k = 0; k < m; k++)
            ratio[members[k]] = parts[k];
    }
    free(members);
    free(w);
    free(parts);
    gl_buf_free(&key);
    gl_intern_free(ids);
    free(group);
    free(weight);
    *nout = n;
    return ratio;
}

/* GPU-hours × 10^9 of a GPU-Hours row: from MiB·s for a charge, from the
 * printed GB-hours difference for a correction; false on overflow. */
static bool gpu_hours_nano(const struct gl_invoice_line *l, const struct gl_line_day *d,
                           gl_i128 *out)
{
    gl_i128 num;
    if (l->capacity_gb12 <= 0)
        return false;
    if (l->corrected_period[0]) {
        /* GB-h × 10^9 × 10^12 / (GB × 10^12) */
        if (__builtin_mul_overflow(d->qty_nano, gl_pow10(12), &num))
            return false;
        *out = gl_div_half_even(num, l->capacity_gb12);
        return true;
    }
    /* MiB·s × 2^20 bytes / 3600 s / (capacity_gb12 / 1000) bytes, × 10^9 */
    if (__builtin_mul_overflow((gl_i128)d->mib_s * 1048576, gl_pow10(12), &num))
        return false;
    *out = gl_div_half_even(num, l->capacity_gb12 * 3600);
    return true;
}

/* What every day row of one invoice line repeats: its texts, built once. */
struct line_texts {
    bool gpuh;           /* priced per GPU-hour */
    const char *method;  /* FOCUS 1.3 AllocatedMethodId, or NULL */
    char *tags, *price_details;
    struct gl_buf desc, resid, sku, sku_price;
    char price[80];      /* the printed unit price */
};

static void line_texts_free(struct line_texts *x)
{
    free(x->tags);
    free(x->price_details);
    gl_buf_free(&x->desc);
    gl_buf_free(&x->resid);
    gl_buf_free(&x->sku);
    gl_buf_free(&x->sku_price);
}

/* false when memory ran out (x is then still to be freed). */
static bool line_texts_init(const struct gl_config *c, const struct gl_invoice_line *l,
                            cJSON *tags, struct line_texts *x)
{
    memset(x, 0, sizeof *x);
    x->gpuh = l->price->unit == GL_PRICE_GPU_HOURS;
    x->method = split_method(c, l);
    cJSON_DeleteItemFromObjectCaseSensitive(tags, TAG_PREFIX "cluster");
    cJSON_AddStringToObject(tags, TAG_PREFIX "cluster", l->cluster);
    x->tags = ascii_json(tags);
    /* the SKU price: the price-table entry as written */
    char entry_price[80], from[32], to[32] = "", cap[80] = "";
    gl_dec_format_trim(l->price->price12, GL_PRICE_DECIMALS, entry_price, sizeof entry_price);
    gl_time_format(l->price->valid_from, from, sizeof from);
    if (l->price->valid_to != INT64_MAX)
        gl_time_format(l->price->valid_to, to, sizeof to);
    if (x->gpuh)
        gl_dec_format_trim(l->capacity_gb12, GL_PRICE_DECIMALS, cap, sizeof cap);
    cJSON *pd = cJSON_CreateObject();
    cJSON_AddStringToObject(pd, "x_ModelPattern", l->price->pattern);
    cJSON_AddStringToObject(pd, "x_ValidFrom", from);
    if (to[0])
        cJSON_AddStringToObject(pd, "x_ValidTo", to);
    if (x->gpuh)
        cJSON_AddStringToObject(pd, "x_GpuCapacityGB", cap);
    x->price_details = ascii_json(pd);
    cJSON_Delete(pd);
    char *pkey = gl_price_key(l->price);
    /* the model and cluster whole: gl_buf, never a fixed buffer */
    bool ok = gl_buf_printf(&x->desc, "%s, %s", kind_description(l->kind), l->model) &&
              gl_buf_printf(&x->resid, "%s/%s", l->cluster, l->model) &&
              gl_buf_printf(&x->sku, "gpu-memory/%s", l->model) &&
              gl_buf_printf(&x->sku_price, "gpu-memory/%s|%s", l->model, pkey);
    free(pkey);
    /* numbers: at most 39 digits, a sign and a point */
    gl_dec_format_trim(x->gpuh ? l->price->price12 : l->unit_price12, GL_PRICE_DECIMALS,
                       x->price, sizeof x->price);
    return ok;
}

/* AllocatedMethodDetails of a split row whose ratio is known (row ri of
 * the ratios), else NULL; malloc'd. */
static char *alloc_details(const struct line_texts *x, const gl_i128 *ratio, size_t nratio,
                           size_t ri, const char *qty)
{
    if (!x->method || !ratio || ri >= nratio || ratio[ri] < 0)
        return NULL;
    char rt[40];
    gl_dec_format_trim(ratio[ri], 9, rt, sizeof rt);
    cJSON *md = cJSON_CreateObject();
    cJSON *els = cJSON_AddArrayToObject(md, "Elements");
    cJSON *el = cJSON_CreateObject();
    cJSON_AddItemToObject(el, "AllocatedRatio", cJSON_CreateRaw(rt));
    cJSON_AddStringToObject(el, "UsageUnit", "GB-Hours");
    cJSON_AddItemToObject(el, "UsageQuantity", cJSON_CreateRaw(qty));
    cJSON_AddItemToArray(els, el);
    char *mt = ascii_json(md);
    cJSON_Delete(md);
    return mt;
}

/* The figures of one day row, printed. */
struct day_figures {
    char billed[80], qty[80], pqty[80], list[120], ds[32], de[32];
    char busy[64]; /* x_ComputeIndicator, "" when no step had a busy figure */
};

/* Formats day d of line l; GL_ERR_RUNTIME when ListCost passes 128 bits. */
static enum gl_status day_figures(const struct gl_invoice_set *set, const struct gl_invoice *inv,
                                  const struct gl_invoice_line *l, const struct line_texts *x,
                                  const struct gl_line_day *day, struct day_figures *f,
                                  struct gl_error *err)
{
    gl_dec_format(day->billed, set->cfg->minor_digits, f->billed, sizeof f->billed);
    gl_i128 qn = gl_day_gbh_nano(l, day), pq = qn;
    gl_dec_format(qn, GL_GBH_DECIMALS, f->qty, sizeof f->qty);
    gl_time_format(day->day, f->ds, sizeof f->ds);
    /* ListCost = printed unit price × printed pricing quantity, exactly
     * (checked: 128 bits) */
    gl_i128 lc;
    if ((x->gpuh && !gpu_hours_nano(l, day, &pq)) ||
        __builtin_mul_overflow(x->gpuh ? l->price->price12 : l->unit_price12, pq, &lc))
        return gl_error_set(err, GL_ERR_RUNTIME,
                            "integer overflow: ListCost of team \"%.300s\", cluster %.200s, GPU "
                            "model \"%.200s\" on %s (period %s) exceeds 128 bits",
                            inv->team, l->cluster, l->model, f->ds, set->period.name);
    gl_dec_format(pq, GL_GBH_DECIMALS, f->pqty, sizeof f->pqty);
    gl_dec_format_trim(lc, GL_PRICE_DECIMALS + GL_GBH_DECIMALS, f->list, sizeof f->list);
    gl_time_format(day->day + 86400, f->de, sizeof f->de);
    f->busy[0] = '\0';
    if (day->busy_steps > 0)
        gl_dec_format(gl_div_half_even(day->busy_ppm, day->busy_steps), 6, f->busy,
                      sizeof f->busy);
    return GL_OK;
}

/* What the cells of one day row are drawn from. */
struct day_row {
    const struct gl_config *c;
    const char *pstart, *pend;
    const struct gl_invoice *inv;
    const struct gl_invoice_line *l;
    const struct line_texts *x;
    const struct day_figures *f;
    const char *details; /* AllocatedMethodDetails, or NULL */
};

/* Column k of a day row: its cell and value in COLUMNS. */
static void day_cell(struct row *r, enum col k, const struct day_row *d)
{
    const struct gl_config *c = d->c;
    const struct gl_invoice *inv = d->inv;
    const struct gl_invoice_line *l = d->l;
    const struct line_texts *x = d->x;
    const struct day_figures *f = d->f;
    switch (k) {
#define COL_CELL(name, versions, cell, value)                                                  \
    case C_##name: cell_##cell(r, value); break;
        COLUMNS(COL_CELL)
#undef COL_CELL
    case NCOLS: break;
    }
}

/* A FOCUS version this engine does not write: a caller's mistake, loud. */
static enum gl_status unknown_version(int version, struct gl_error *err)
{
    return gl_error_set(err, GL_ERR_RUNTIME, "FOCUS version %d.%d is not one this engine writes",
                        version / 10, version % 10);
}

enum gl_status gl_export_focus(const struct gl_invoice_set *set, int version, FILE *out,
                               size_t *rows, struct gl_error *err)
{
    const struct gl_config *c = set->cfg;
    const struct version *v = version_of(version);
    *rows = 0;
    if (!v)
        return unknown_version(version, err);
    struct row r = {out, 0, NULL};
    for (enum col k = 0; k < NCOLS; k++)
        if (has_col(v, k))
            cell_bare(&r, columns[k].name);
    end_row(&r);
    const bool allocated = has_col(v, C_AllocatedMethodDetails);
    char pstart[32], pend[32];
    enum gl_status frc = GL_OK;
    gl_time_format(set->period.start, pstart, sizeof pstart);
    gl_time_format(set->period.end, pend, sizeof pend);
    size_t nratio = 0, ri = 0;
    gl_i128 *ratio = allocated ? split_ratios(set, &nratio) : NULL;
    for (size_t i = 0; i < set->n; i++) {
        const struct gl_invoice *inv = &set->invoices[i];
        cJSON *tags = cJSON_CreateObject();
        cJSON_AddStringToObject(tags, TAG_PREFIX "team", inv->team);
        if (inv->cost_center)
            cJSON_AddStringToObject(tags, TAG_PREFIX "cost_center", inv->cost_center);
        for (size_t j = 0; j < inv->nlines; j++) {
            const struct gl_invoice_line *l = &inv->lines[j];
            struct line_texts x;
            bool ok = line_texts_init(c, l, tags, &x);
            for (size_t d = 0; ok && d < l->ndays; d++, ri++) {
                struct day_figures f;
                if ((frc = day_figures(set, inv, l, &x, &l->days[d], &f, err)))
                    break;
                struct day_row dr = {c, pstart, pend, inv, l, &x, &f, NULL};
                char *details = allocated ? alloc_details(&x, ratio, nratio, ri, f.qty) : NULL;
                dr.details = details;
                for (enum col k = 0; k < NCOLS; k++)
                    if (has_col(v, k))
                        day_cell(&r, k, &dr);
                end_row(&r);
                free(details);
                (*rows)++;
            }
            line_texts_free(&x);
            if (!ok && !frc)
                frc = gl_error_set(err, GL_ERR_RUNTIME, "FOCUS export: out of memory");
            if (r.bad || frc)
                break;
        }
        cJSON_Delete(tags);
        if (frc || r.bad) {
            free(ratio);
            if (frc)
                return frc;
            /* show the offending text with its non-printable bytes escaped */
            char shown[160];
            gl_escape_ascii(r.bad, shown, sizeof shown);
            return gl_error_set(err, GL_ERR_CONFIG,
                                "FOCUS string columns must be printable ASCII: \"%s\" (invoice "
                                "%s); map those pods to an ASCII team with an earlier "
                                "teams.rules entry, or rename the label value",
                                shown, inv->invoice_id);
        }
    }
    free(ratio);
    if (fflush(out) != 0 || ferror(out))
        return gl_error_set(err, GL_ERR_RUNTIME, "writing the FOCUS CSV failed");
    return GL_OK;
}

/* The metadata DataType of a column. */
static const char *column_type(const char *name)
{
    static const char *const json[] = {"Tags", "SkuPriceDetails", "AllocatedMethodDetails",
                                       "AllocatedTags", NULL};
    for (size_t i = 0; json[i]; i++)
        if (strcmp(name, json[i]) == 0)
            return "JSON";
    if (strcmp(name, "x_Estimated") == 0)
        return "BOOLEAN";
    size_t n = strlen(name);
    static const char *const dec[] = {"Cost", "Price", "Quantity", "Indicator", NULL};
    for (size_t i = 0; dec[i]; i++) {
        size_t k = strlen(dec[i]);
        if (n >= k && strcmp(name + n - k, dec[i]) == 0)
            return "DECIMAL";
    }
    if ((n >= 5 && strcmp(name + n - 5, "Start") == 0) ||
        (n >= 3 && strcmp(name + n - 3, "End") == 0))
        return "DATETIME";
    return "STRING";
}

enum gl_status gl_export_metadata(int version, const struct gl_config *c, const char *period,
                                  bool closed, const char *csv, size_t rows,
                                  const struct gl_gap *gaps, size_t ngaps, FILE *out,
                                  struct gl_error *err)
{
    const struct version *v = version_of(version);
    if (!v)
        return unknown_version(version, err);
    /* a closed period's frozen CSV keeps the version it was closed with:
     * metadata of another version would describe columns it lacks */
    if (csv && gl_focus_version_of_csv(csv) != version)
        return gl_error_set(err, GL_ERR_STATE,
                            "period %s: its stored FOCUS CSV is not FOCUS %s, the version asked "
                            "for",
                            period, v->name);
    /* the columns as written: the CSV's own header, else this engine's */
    cJSON *cols = cJSON_CreateArray();
    bool tags = false;
    uint64_t h = GL_HASH_SEED;
    if (csv) {
        size_t n = strcspn(csv, "\r\n");
        char *line = gl_xcalloc(n + 1, 1);
        memcpy(line, csv, n);
        for (char *save = NULL, *f = strtok_r(line, ",", &save); f; f = strtok_r(NULL, ",", &save))
            cJSON_AddItemToArray(cols, cJSON_CreateString(f));
        free(line);
    } else {
        for (enum col k = 0; k < NCOLS; k++)
            if (has_col(v, k))
                cJSON_AddItemToArray(cols, cJSON_CreateString(columns[k].name));
    }
    const char *version_name = v->name;
    cJSON *defs = cJSON_CreateArray();
    h = gl_hash_bytes(version_name, strlen(version_name), h);
    const cJSON *it;
    cJSON_ArrayForEach(it, cols)
    {
        const char *name = it->valuestring;
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "ColumnName", name);
        cJSON_AddStringToObject(d, "DataType", column_type(name));
        if (strcmp(name, "Tags") == 0) {
            tags = true;
            cJSON *p = cJSON_AddArrayToObject(d, "ProviderTagPrefixes");
            cJSON_AddItemToArray(p, cJSON_CreateString(TAG_PREFIX));
        }
        if (strcmp(column_type(name), "STRING") == 0)
            cJSON_AddStringToObject(d, "StringEncoding", "UTF-8");
        cJSON_AddItemToArray(defs, d);
        h = gl_hash_bytes(name, strlen(name) + 1, h);
        h = gl_hash_bytes(column_type(name), strlen(column_type(name)) + 1, h);
    }
    cJSON_Delete(cols);
    char schema_id[64];
    snprintf(schema_id, sizeof schema_id, "gpuledger-focus-%s-%016llx", version_name,
             (unsigned long long)h);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "FocusVersion", version_name);
    cJSON_AddStringToObject(o, "DataGenerator", "gpuledger " GL_VERSION);
    cJSON_AddStringToObject(o, "SchemaId", schema_id); /* the data's reference to its schema */
    cJSON_AddStringToObject(o, "BillingPeriod", period);
    cJSON_AddStringToObject(o, "BillingCurrency", c->currency);
    cJSON_AddBoolToObject(o, "Closed", closed);
    if (ngaps) { /* closed with --force: the hours its rows lack */
        cJSON *arr = cJSON_AddArrayToObject(o, "x_IncompleteAtClose");
        for (size_t i = 0; i < ngaps; i++) {
            char t[32];
            cJSON *g = cJSON_CreateObject();
            cJSON_AddStringToObject(g, "Cluster", gaps[i].cluster);
            cJSON_AddStringToObject(g, "Kind", gl_gap_kind_name(gaps[i].kind));
            gl_time_format(gaps[i].from, t, sizeof t);
            cJSON_AddStringToObject(g, "From", t);
            gl_time_format(gaps[i].to, t, sizeof t);
            cJSON_AddStringToObject(g, "To", t);
            cJSON_AddItemToArray(arr, g);
        }
    }
    cJSON_AddNumberToObject(o, "Rows", (double)rows);
    cJSON *schema = cJSON_AddObjectToObject(o, "Schema");
    cJSON_AddStringToObject(schema, "SchemaId", schema_id);
    cJSON_AddStringToObject(schema, "FocusVersion", version_name);
    /* the schema is this release's column set: created with it */
    cJSON_AddStringToObject(schema, "CreationDate", GL_FOCUS_SCHEMA_DATE);
    cJSON_AddStringToObject(schema, "DataGeneratorVersion", GL_VERSION);
    cJSON_AddItemToObject(schema, "ColumnDefinition", defs);
    (void)tags;
    char *text = cJSON_Print(o);
    fprintf(out, "%s\n", text);
    free(text);
    cJSON_Delete(o);
    return GL_OK;
}
