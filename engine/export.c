/* export — FOCUS 1.2 CSV rows from invoice lines and days. */
#include "export.h"

#include <cjson/cJSON.h>
#include <csv.h>
#include <stdlib.h>
#include <string.h>

#include "gl_build.h"
#include "util.h"

static const char *const header[] = {
    "BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency",
    "BillingPeriodEnd", "BillingPeriodStart", "ChargeCategory", "ChargeClass",
    "ChargeDescription", "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart",
    "ConsumedQuantity", "ConsumedUnit", "ContractedCost", "ContractedUnitPrice",
    "EffectiveCost", "InvoiceId", "InvoiceIssuerName", "ListCost", "ListUnitPrice",
    "PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "RegionId",
    "RegionName", "ResourceId", "ResourceName", "ResourceType", "ServiceCategory",
    "ServiceName", "ServiceSubcategory", "SkuId", "SkuPriceId", "SubAccountId",
    "SubAccountName", "Tags", "x_ChargeKind", "x_CorrectedPeriod", "x_CostCenter",
    "x_Cluster", "x_GpuModel", "x_ComputeIndicator", "x_Estimated",
};
#define NCOLS (sizeof header / sizeof *header)

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

static void cell_null(struct row *r)
{
    sep(r);
}

static void cell_bare(struct row *r, const char *v)
{
    sep(r);
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

enum gl_status gl_export_focus(const struct gl_invoice_set *set, FILE *out, size_t *rows,
                               struct gl_error *err)
{
    const struct gl_config *c = set->cfg;
    struct row r = {out, 0, NULL};
    *rows = 0;
    for (size_t i = 0; i < NCOLS; i++)
        cell_bare(&r, header[i]);
    end_row(&r);
    char pstart[32], pend[32];
    enum gl_status frc = GL_OK;
    gl_time_format(set->period.start, pstart, sizeof pstart);
    gl_time_format(set->period.end, pend, sizeof pend);
    for (size_t i = 0; i < set->n; i++) {
        const struct gl_invoice *inv = &set->invoices[i];
        cJSON *tags = cJSON_CreateObject();
        cJSON_AddStringToObject(tags, "team", inv->team);
        if (inv->cost_center)
            cJSON_AddStringToObject(tags, "cost_center", inv->cost_center);
        for (size_t j = 0; j < inv->nlines; j++) {
            const struct gl_invoice_line *l = &inv->lines[j];
            cJSON_DeleteItemFromObjectCaseSensitive(tags, "cluster");
            cJSON_AddStringToObject(tags, "cluster", l->cluster);
            char *tags_text = ascii_json(tags);
            /* the model and cluster whole: gl_buf, never a fixed buffer */
            struct gl_buf desc, resid, sku;
            gl_buf_init(&desc);
            gl_buf_init(&resid);
            gl_buf_init(&sku);
            bool ok = gl_buf_printf(&desc, "%s, %s", kind_description(l->kind), l->model) &&
                      gl_buf_printf(&resid, "%s/%s", l->cluster, l->model) &&
                      gl_buf_printf(&sku, "gpu-memory/%s", l->model);
            /* numbers: at most 39 digits, a sign and a point */
            char price[80];
            gl_dec_format_trim(l->unit_price12, GL_PRICE_DECIMALS, price, sizeof price);
            for (size_t d = 0; ok && d < l->ndays; d++) {
                const struct gl_line_day *day = &l->days[d];
                char billed[80], qty[80], list[120], ds[32], de[32];
                gl_dec_format(day->billed, c->minor_digits, billed, sizeof billed);
                gl_i128 qn = gl_day_gbh_nano(l, day);
                gl_dec_format(qn, GL_GBH_DECIMALS, qty, sizeof qty);
                gl_time_format(day->day, ds, sizeof ds);
                /* ListCost = printed unit price × printed quantity, exactly
                 * (it fits whenever the line's amount did; checked anyway). */
                gl_i128 lc;
                if (__builtin_mul_overflow(l->unit_price12, qn, &lc)) {
                    frc = gl_error_set(err, GL_ERR_RUNTIME,
                                       "integer overflow: ListCost of team \"%.300s\", cluster "
                                       "%.200s, GPU model \"%.200s\" on %s (period %s) exceeds "
                                       "128 bits",
                                       inv->team, l->cluster, l->model, ds, set->period.name);
                    break;
                }
                gl_dec_format_trim(lc, GL_PRICE_DECIMALS + GL_GBH_DECIMALS, list, sizeof list);
                gl_time_format(day->day + 86400, de, sizeof de);
                cell_bare(&r, billed);                 /* BilledCost */
                cell_str(&r, c->account_id);           /* BillingAccountId */
                cell_str(&r, c->account_name);         /* BillingAccountName */
                cell_str(&r, c->currency);             /* BillingCurrency */
                cell_bare(&r, pend);                   /* BillingPeriodEnd */
                cell_bare(&r, pstart);                 /* BillingPeriodStart */
                cell_str(&r, "Usage");                 /* ChargeCategory */
                if (l->corrected_period[0])            /* ChargeClass */
                    cell_str(&r, "Correction");
                else
                    cell_null(&r);
                cell_str(&r, desc.data);               /* ChargeDescription */
                cell_str(&r, "Usage-Based");           /* ChargeFrequency */
                cell_bare(&r, de);                     /* ChargePeriodEnd */
                cell_bare(&r, ds);                     /* ChargePeriodStart */
                cell_bare(&r, qty);                    /* ConsumedQuantity */
                cell_str(&r, "GB-Hours");              /* ConsumedUnit */
                cell_bare(&r, list);                   /* ContractedCost */
                cell_bare(&r, price);                  /* ContractedUnitPrice */
                cell_bare(&r, billed);                 /* EffectiveCost */
                cell_str(&r, inv->invoice_id);         /* InvoiceId */
                cell_str(&r, c->provider);             /* InvoiceIssuerName */
                cell_bare(&r, list);                   /* ListCost */
                cell_bare(&r, price);                  /* ListUnitPrice */
                cell_bare(&r, qty);                    /* PricingQuantity */
                cell_str(&r, "GB-Hours");              /* PricingUnit */
                cell_str(&r, c->provider);             /* ProviderName */
                cell_str(&r, c->provider);             /* PublisherName */
                cell_str(&r, l->cluster);              /* RegionId */
                cell_str(&r, l->cluster);              /* RegionName */
                cell_str(&r, resid.data);              /* ResourceId */
                cell_str(&r, l->model);                /* ResourceName */
                cell_str(&r, "GPU");                   /* ResourceType */
                cell_str(&r, "Compute");               /* ServiceCategory */
                cell_str(&r, c->service_name);         /* ServiceName */
                cell_str(&r, "Containers");            /* ServiceSubcategory */
                cell_str(&r, sku.data);                /* SkuId */
                cell_str(&r, l->price->id);            /* SkuPriceId */
                cell_str(&r, inv->team);               /* SubAccountId */
                cell_str(&r, inv->team_name);          /* SubAccountName */
                cell_str(&r, tags_text);               /* Tags */
                cell_str(&r, gl_line_kind_name(l->kind)); /* x_ChargeKind */
                if (l->corrected_period[0])            /* x_CorrectedPeriod */
                    cell_str(&r, l->corrected_period);
                else
                    cell_null(&r);
                cell_str(&r, inv->cost_center);        /* x_CostCenter */
                cell_str(&r, l->cluster);              /* x_Cluster */
                cell_str(&r, l->model);                /* x_GpuModel */
                if (day->busy_steps > 0) {             /* x_ComputeIndicator */
                    char ci[64];
                    gl_dec_format(gl_div_half_even(day->busy_ppm, day->busy_steps), 6, ci, sizeof ci);
                    cell_bare(&r, ci);
                } else {
                    cell_null(&r);
                }
                cell_bare(&r, l->estimated ? "true" : "false"); /* x_Estimated */
                end_row(&r);
                (*rows)++;
            }
            free(tags_text);
            gl_buf_free(&desc);
            gl_buf_free(&resid);
            gl_buf_free(&sku);
            if (!ok && !frc)
                frc = gl_error_set(err, GL_ERR_RUNTIME, "FOCUS export: out of memory");
            if (r.bad || frc)
                break;
        }
        cJSON_Delete(tags);
        if (frc)
            return frc;
        if (r.bad) {
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
    if (fflush(out) != 0 || ferror(out))
        return gl_error_set(err, GL_ERR_RUNTIME, "writing the FOCUS CSV failed");
    return GL_OK;
}

void gl_export_metadata(const struct gl_invoice_set *set, size_t rows, FILE *out)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "FocusVersion", "1.2");
    cJSON_AddStringToObject(o, "DataGenerator", "gpuledger " GL_VERSION);
    cJSON_AddStringToObject(o, "BillingPeriod", set->period.name);
    cJSON_AddStringToObject(o, "BillingCurrency", set->cfg->currency);
    cJSON_AddNumberToObject(o, "Rows", (double)rows);
    char *text = cJSON_Print(o);
    fprintf(out, "%s\n", text);
    free(text);
    cJSON_Delete(o);
}
