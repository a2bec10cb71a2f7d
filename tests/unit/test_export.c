/* Unit tests: the FOCUS CSV and its metadata (engine/render/export.c). The CSV
 * the engine writes is read back with libcsv (nulls told from empty
 * strings: CSV_EMPTY_IS_NULL), JSON cells with cJSON. One test prices a
 * line from a database (the daily rows must add up to the line); the others
 * write invoice sets made by hand. */
#include <cjson/cJSON.h>
#include <csv.h>
#include <unistd.h>

#include "config.h"
#include "export.h"
#include "invoice.h"
#include "price.h"
#include "store.h"
#include "tap.h"
#include "util.h"

/* ---- the CSV read back ---- */

struct csv_table {
    char **cells; /* row-major, NULL = a null (empty, unquoted) field */
    size_t ncells, cap;
    size_t *row_start, nrows; /* row i's cells from row_start[i] */
    size_t cur;               /* where the row being read starts */
    size_t ncols;             /* of the header */
    bool ragged;              /* a row with another number of cells */
};

static void csv_field(void *s, size_t len, void *data)
{
    struct csv_table *t = data;
    if (t->ncells == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        t->cells = gl_xrealloc(t->cells, t->cap * sizeof *t->cells);
    }
    char *v = NULL;
    if (s) {
        v = gl_xcalloc(len + 1, 1);
        memcpy(v, s, len);
    }
    t->cells[t->ncells++] = v;
}

static void csv_row(int c, void *data)
{
    (void)c;
    struct csv_table *t = data;
    size_t n = t->ncells - t->cur;
    if (!t->nrows)
        t->ncols = n;
    else if (n != t->ncols)
        t->ragged = true;
    t->row_start = gl_xrealloc(t->row_start, (t->nrows + 1) * sizeof *t->row_start);
    t->row_start[t->nrows++] = t->cur;
    t->cur = t->ncells;
}

static bool csv_read(const char *text, size_t len, struct csv_table *t)
{
    memset(t, 0, sizeof *t);
    struct csv_parser p;
    if (csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_EMPTY_IS_NULL) != 0)
        return false;
    bool ok = csv_parse(&p, text, len, csv_field, csv_row, t) == len &&
              csv_fini(&p, csv_field, csv_row, t) == 0;
    csv_free(&p);
    return ok && !t->ragged && t->nrows > 0;
}

static void csv_table_free(struct csv_table *t)
{
    for (size_t i = 0; i < t->ncells; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t->row_start);
}

/* Cell of data row r (1 = the first after the header) in column name;
 * "(no such column)" when the header lacks it. */
static const char *cell(const struct csv_table *t, size_t r, const char *name)
{
    for (size_t k = 0; k < t->ncols; k++)
        if (t->cells[k] && strcmp(t->cells[k], name) == 0)
            return r < t->nrows ? t->cells[t->row_start[r] + k] : "(no such row)";
    return "(no such column)";
}

/* ---- fixture: a config, a price table, hand-made invoice sets ---- */

struct exp_fx {
    struct gl_config *cfg;
    struct gl_price_table *prices;
    struct gl_period oct;
};

static const char prices_csv[] =
    "model_pattern,unit,price,currency,valid_from,valid_to,capacity_gb\n"
    "^R$,GB-Hours,34.332275390625,USD,2026-01-01T00:00:00Z,2027-01-01T00:00:00Z,\n"
    "^A100$,GPU-Hours,2,USD,2026-01-01T00:00:00Z,,80\n";

/* billing: more keys of the billing object (", \"k\": v"); extra: more
 * top-level keys. */
static bool exp_open(struct exp_fx *f, const char *billing, const char *extra)
{
    memset(f, 0, sizeof *f);
    char prices[512], cfg[2048];
    snprintf(prices, sizeof prices, "%s", tap_tmpfile("exp-prices.csv", prices_csv));
    snprintf(cfg, sizeof cfg,
             "{\"prometheus\": {\"url\": \"http://127.0.0.1:1\"}, \"prices\": {\"file\": \"%s\"},"
             " \"billing\": {\"currency\": \"USD\"%s}%s}",
             prices, billing, extra);
    struct gl_error err = {0};
    gl_period_parse("2026-10", &f->oct);
    if (gl_config_load(tap_tmpfile("exp-cfg.json", cfg), &f->cfg, &err) ||
        gl_prices_load(f->cfg->prices_file, "USD", &f->prices, &err)) {
        printf("# exp_open: %s\n", err.msg);
        return false;
    }
    return f->prices->n == 2;
}

static void exp_close(struct exp_fx *f)
{
    gl_prices_free(f->prices);
    gl_config_free(f->cfg);
}

/* A set of n invoices (teams[i]), each with no lines yet. */
static struct gl_invoice_set *exp_set(struct exp_fx *f, const char *const *teams, size_t n)
{
    struct gl_invoice_set *set = gl_xcalloc(1, sizeof *set);
    set->cfg = f->cfg;
    set->period = f->oct;
    set->invoices = gl_xcalloc(n, sizeof *set->invoices);
    set->n = n;
    for (size_t i = 0; i < n; i++) {
        struct gl_invoice *inv = &set->invoices[i];
        inv->team = gl_strdup(teams[i]);
        inv->team_name = inv->team;
        inv->invoice_id = gl_xcalloc(strlen(teams[i]) + 16, 1);
        sprintf(inv->invoice_id, "GL-2026-10-%s", teams[i]);
    }
    return set;
}

/* Adds a line of one day (October day d) to invoice i. */
static struct gl_invoice_line *exp_line(struct gl_invoice_set *set, size_t i, const char *cluster,
                                        const char *model, enum gl_line_kind kind,
                                        const struct gl_price_entry *pe, gl_i128 unit12, int d,
                                        int64_t mib_s, gl_i128 amount)
{
    struct gl_invoice *inv = &set->invoices[i];
    inv->lines = gl_xrealloc(inv->lines, (inv->nlines + 1) * sizeof *inv->lines);
    struct gl_invoice_line *l = &inv->lines[inv->nlines++];
    memset(l, 0, sizeof *l);
    l->cluster = gl_strdup(cluster);
    l->model = gl_strdup(model);
    l->kind = kind;
    l->price = pe;
    l->unit_price12 = unit12;
    l->mib_s = mib_s;
    l->amount = amount;
    l->days = gl_xcalloc(1, sizeof *l->days);
    l->ndays = 1;
    l->days[0] = (struct gl_line_day){.day = set->period.start + (d - 1) * 86400LL,
                                      .mib_s = mib_s, .billed = amount};
    inv->total += amount;
    return l;
}

/* Writes the CSV of set into *t (the text into *text when not NULL). */
static enum gl_status exp_write(const struct gl_invoice_set *set, struct csv_table *t,
                                size_t *rows, char **text, struct gl_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out)
        return GL_ERR_RUNTIME;
    enum gl_status rc = gl_export_focus(set, set->cfg->focus_version, out, rows, err);
    fclose(out);
    memset(t, 0, sizeof *t);
    if (!rc && !csv_read(buf, len, t)) {
        printf("# the CSV does not read back:\n%s", buf);
        rc = GL_ERR_RUNTIME;
    }
    if (text)
        *text = buf;
    else
        free(buf);
    return rc;
}

/* No number cell has an exponent, a sign but '-' or spaces. */
static bool plain_number(const char *v)
{
    if (!v || !*v)
        return false;
    if (*v == '-')
        v++;
    bool point = false;
    for (; *v; v++)
        if (*v == '.' && !point)
            point = true;
        else if (*v < '0' || *v > '9')
            return false;
    return true;
}

/* ---- tests ---- */

/* A line priced from the database over three days: the daily BilledCost
 * split the line's rounded amount by largest remainder and add up to it;
 * quantities and costs are plain decimals. */
static void test_daily_rows_add_up(void)
{
    struct exp_fx f;
    CHECK(exp_open(&f, "", ""));
    char db[512];
    snprintf(db, sizeof db, "%s", tap_tmpfile("export.db", ""));
    unlink(db);
    struct gl_store *s = NULL;
    struct gl_error err = {0};
    int64_t dev = -1;
    struct gl_device_info di = {"c1", "GPU-1", "", "", "R", "n1", 10000, f.oct.start, f.oct.end};
    CHECK(gl_store_open(db, &s, &err) == GL_OK && gl_store_begin(s, &err) == GL_OK &&
          gl_store_device(s, &di, &dev, &err) == GL_OK);
    /* 1,400 MiB·s on each of Oct 2, 3, 4; at 34.332275390625 per GB-h a
     * line's cents are MiB·s / 1000 (2^20 × 34.332275390625 = 3.6e7):
     * 4,200 → 4.2 → 4 cents (per day 1.4 → 1, three times 3) */
    for (int d = 2; d <= 4 && s; d++) {
        int64_t h = f.oct.start + (d - 1) * 86400LL + 7200;
        CHECK(gl_store_add_usage(s, h, "c1", "ns", "p", dev, "a", "memory_used", 1400, 0, h,
                                 h + 60, &err) == GL_OK);
    }
    CHECK(s && gl_store_commit(s, &err) == GL_OK);
    struct gl_invoice_set *set = NULL;
    CHECK(s && gl_invoices_build(f.cfg, s, f.prices, &f.oct, &set, &err) == GL_OK);
    struct csv_table t;
    size_t rows = 0;
    CHECK(set && exp_write(set, &t, &rows, NULL, &err) == GL_OK);
    CHECK(rows == 3 && t.nrows == 4);
    if (rows == 3 && t.nrows == 4) {
        /* 4 cents over weights 1:1:1: 1.333 each, floors 1, the cent left to
         * the lowest index (ties): 0.02, 0.01, 0.01 */
        CHECK_STR(cell(&t, 1, "BilledCost"), "0.02");
        CHECK_STR(cell(&t, 2, "BilledCost"), "0.01");
        CHECK_STR(cell(&t, 3, "BilledCost"), "0.01");
        CHECK_STR(cell(&t, 1, "EffectiveCost"), "0.02");
        CHECK_STR(cell(&t, 1, "ChargePeriodStart"), "2026-10-02T00:00:00Z");
        CHECK_STR(cell(&t, 1, "ChargePeriodEnd"), "2026-10-03T00:00:00Z");
        CHECK_STR(cell(&t, 3, "ChargePeriodStart"), "2026-10-04T00:00:00Z");
        CHECK_STR(cell(&t, 1, "BillingPeriodStart"), "2026-10-01T00:00:00Z");
        CHECK_STR(cell(&t, 1, "BillingPeriodEnd"), "2026-11-01T00:00:00Z");
        /* 1,400 × 2^20 / 3.6e12 GB-h = 0.000407779555... → 0.000407780 */
        CHECK_STR(cell(&t, 2, "ConsumedQuantity"), "0.000407780");
        CHECK_STR(cell(&t, 2, "PricingQuantity"), "0.000407780");
        CHECK_STR(cell(&t, 2, "ListUnitPrice"), "34.332275390625");
        /* 34.332275390625 × 0.000407780 = 0.0140000152587890625 exactly */
        CHECK_STR(cell(&t, 2, "ListCost"), "0.0140000152587890625");
        CHECK_STR(cell(&t, 2, "ContractedCost"), "0.0140000152587890625");
        CHECK_STR(cell(&t, 2, "PricingUnit"), "GB-Hours");
        CHECK_STR(cell(&t, 2, "ChargeCategory"), "Usage");
        CHECK(cell(&t, 2, "ChargeClass") == NULL);
        CHECK_STR(cell(&t, 2, "SkuPriceId"), "gpu-memory/R|^R$@2026-01-01T00:00:00Z");
        CHECK_STR(cell(&t, 2, "x_Estimated"), "false");
        CHECK(cell(&t, 2, "x_ComputeIndicator") == NULL);
        CHECK_STR(cell(&t, 1, "BillingAccountId"), "gpu-platform");
        CHECK_STR(cell(&t, 1, "ProviderName"), "GPU Platform");
        const char *numeric[] = {"BilledCost", "ConsumedQuantity", "ContractedCost",
                                 "ContractedUnitPrice", "EffectiveCost", "ListCost",
                                 "ListUnitPrice", "PricingQuantity"};
        for (size_t r = 1; r <= 3; r++)
            for (size_t k = 0; k < sizeof numeric / sizeof *numeric; k++)
                CHECK(plain_number(cell(&t, r, numeric[k])));
    }
    csv_table_free(&t);
    gl_invoices_free(set);
    gl_store_close(s);
    exp_close(&f);
}

/* Hostile label text: quoted by libcsv so it reads back whole; a leading
 * = + - @ neutralised with an apostrophe; Tags JSON. */
static void test_quoting(void)
{
    struct exp_fx f;
    CHECK(exp_open(&f, "", ""));
    const char *teams[] = {"=HYPERLINK(\"x\")", "plain"};
    struct gl_invoice_set *set = exp_set(&f, teams, 2);
    set->invoices[0].cost_center = "@cc";
    exp_line(set, 0, "c,\"1\" x", "R", GL_LINE_MEMORY_USED, &f.prices->entries[0],
             f.prices->entries[0].price12, 2, 1000, 1);
    exp_line(set, 1, "-c2", "R", GL_LINE_MEMORY_USED, &f.prices->entries[0],
             f.prices->entries[0].price12, 3, 1000, 1);
    struct csv_table t;
    size_t rows = 0;
    struct gl_error err = {0};
    CHECK(exp_write(set, &t, &rows, NULL, &err) == GL_OK);
    CHECK(rows == 2 && t.nrows == 3);
    if (t.nrows == 3) {
        CHECK_STR(cell(&t, 1, "SubAccountId"), "'=HYPERLINK(\"x\")");
        CHECK_STR(cell(&t, 1, "x_CostCenter"), "'@cc");
        /* quotes and a comma inside one field */
        CHECK_STR(cell(&t, 1, "x_Cluster"), "c,\"1\" x");
        CHECK_STR(cell(&t, 1, "ResourceId"), "c,\"1\" x/R");
        CHECK_STR(cell(&t, 2, "x_Cluster"), "'-c2");
        CHECK_STR(cell(&t, 2, "RegionId"), "'-c2");
        CHECK_STR(cell(&t, 2, "SubAccountId"), "plain");
        CHECK(cell(&t, 2, "x_CostCenter") == NULL); /* none: a null */
        cJSON *tags = cJSON_Parse(cell(&t, 1, "Tags"));
        CHECK(tags != NULL);
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(tags, "gpuledger/team")),
                  "=HYPERLINK(\"x\")");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(tags, "gpuledger/cost_center")),
                  "@cc");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(tags, "gpuledger/cluster")),
                  "c,\"1\" x");
        cJSON_Delete(tags);
        /* the second invoice's Tags: its own team, no cost center */
        tags = cJSON_Parse(cell(&t, 2, "Tags"));
        CHECK(tags && cJSON_GetArraySize(tags) == 2 &&
              !cJSON_GetObjectItem(tags, "gpuledger/cost_center"));
        cJSON_Delete(tags);
        cJSON *pd = cJSON_Parse(cell(&t, 1, "SkuPriceDetails"));
        CHECK(pd && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(pd, "x_ModelPattern")),
                           "^R$") == 0);
        CHECK(pd && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(pd, "x_ValidTo")),
                           "2027-01-01T00:00:00Z") == 0);
        cJSON_Delete(pd);
    }
    csv_table_free(&t);
    gl_invoices_free(set);
    exp_close(&f);
}

/* A non-ASCII string is refused (config error), its bytes shown escaped. */
static void test_non_ascii(void)
{
    struct exp_fx f;
    CHECK(exp_open(&f, "", ""));
    const char *teams[] = {"t\xc3\xa9"};
    struct gl_invoice_set *set = exp_set(&f, teams, 1);
    exp_line(set, 0, "c1", "R", GL_LINE_MEMORY_USED, &f.prices->entries[0],
             f.prices->entries[0].price12, 2, 1000, 1);
    size_t rows = 9;
    struct gl_error err = {0};
    FILE *out = fopen("/dev/null", "w");
    CHECK(out && gl_export_focus(set, set->cfg->focus_version, out, &rows, &err) == GL_ERR_CONFIG);
    if (out)
        fclose(out);
    CHECK(strstr(err.msg, "t\\xc3\\xa9") != NULL && strstr(err.msg, "GL-2026-10-t") != NULL);
    gl_invoices_free(set);
    /* a control character (a line break in a cluster name) too */
    const char *plain[] = {"a"};
    set = exp_set(&f, plain, 1);
    exp_line(set, 0, "c\r\n1", "R", GL_LINE_MEMORY_USED, &f.prices->entries[0],
             f.prices->entries[0].price12, 2, 1000, 1);
    out = fopen("/dev/null", "w");
    CHECK(out && gl_export_focus(set, set->cfg->focus_version, out, &rows, &err) == GL_ERR_CONFIG);
    if (out)
        fclose(out);
    CHECK(strstr(err.msg, "c\\x0d\\x0a1") != NULL);
    gl_invoices_free(set);
    exp_close(&f);
}

/* GPU-Hours rows: PricingQuantity in GPU-hours of the capacity, the list
 * price as written, ListCost = ListUnitPrice × PricingQuantity exactly. */
static void test_gpu_hours(void)
{
    struct exp_fx f;
    CHECK(exp_open(&f, "", ""));
    const char *teams[] = {"a"};
    struct gl_invoice_set *set = exp_set(&f, teams, 1);
    /* 81,920 MiB for 1.5 h; capacity 81,920 MiB = 85.89934592 GB; unit price
     * per GB-h 2 / 85.89934592 → 0.023283064365 */
    struct gl_invoice_line *l =
        exp_line(set, 0, "c1", "A100", GL_LINE_MEMORY_USED, &f.prices->entries[1],
                 23283064365LL, 2, 81920LL * 5400, 300);
    l->capacity_gb12 = (gl_i128)85899345920000LL;
    l->estimated = 1;
    l->days[0].busy_ppm = 1500000; /* Σ ppm over 4 steps: 375,000 ppm = 0.375 */
    l->days[0].busy_steps = 4;
    struct csv_table t;
    size_t rows = 0;
    struct gl_error err = {0};
    CHECK(exp_write(set, &t, &rows, NULL, &err) == GL_OK);
    CHECK(rows == 1 && t.nrows == 2);
    if (t.nrows == 2) {
        CHECK_STR(cell(&t, 1, "PricingUnit"), "GPU-Hours");
        /* 81,920 × 5,400 × 2^20 / 3600 B = 1.5 × 85.89934592 GB → 1.5 GPU-h */
        CHECK_STR(cell(&t, 1, "PricingQuantity"), "1.500000000");
        CHECK_STR(cell(&t, 1, "ConsumedQuantity"), "128.849018880");
        CHECK_STR(cell(&t, 1, "ConsumedUnit"), "GB-Hours");
        CHECK_STR(cell(&t, 1, "ListUnitPrice"), "2");
        CHECK_STR(cell(&t, 1, "ListCost"), "3");
        CHECK_STR(cell(&t, 1, "BilledCost"), "3.00");
        CHECK_STR(cell(&t, 1, "x_ComputeIndicator"), "0.375000");
        CHECK_STR(cell(&t, 1, "x_Estimated"), "true");
        CHECK_STR(cell(&t, 1, "SkuPriceId"), "gpu-memory/A100|^A100$@2026-01-01T00:00:00Z");
        cJSON *pd = cJSON_Parse(cell(&t, 1, "SkuPriceDetails"));
        CHECK(pd && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(pd, "x_GpuCapacityGB")),
                           "85.89934592") == 0);
        CHECK(pd && !cJSON_GetObjectItem(pd, "x_ValidTo")); /* open-ended */
        cJSON_Delete(pd);
    }
    csv_table_free(&t);
    gl_invoices_free(set);
    exp_close(&f);
}

/* FOCUS 1.3: the provider columns renamed, split rows carry their method
 * and ratios that add up to exactly 1 per origin charge. */
static void test_focus13_split(void)
{
    struct exp_fx f;
    CHECK(exp_open(&f, ", \"focus_version\": \"1.3\"",
                   ", \"idle_overhead\": {\"policy\": \"proportional\"}"));
    CHECK(f.cfg && f.cfg->focus_version == 13 && f.cfg->idle_policy == GL_IDLE_PROPORTIONAL);
    const char *teams[] = {"a", "b", "c"};
    struct gl_invoice_set *set = exp_set(&f, teams, 3);
    const struct gl_price_entry *pe = &f.prices->entries[0];
    /* one origin charge (c1, R, idle, Oct 2) split a 2 : b 1 by GB-hours:
     * 7,200,000 and 3,600,000 MiB·s (2.097152 and 1.048576 GB-h) */
    exp_line(set, 0, "c1", "R", GL_LINE_IDLE_SHARE, pe, pe->price12, 2, 7200000, 7200);
    exp_line(set, 1, "c1", "R", GL_LINE_IDLE_SHARE, pe, pe->price12, 2, 3600000, 3600);
    exp_line(set, 2, "c1", "R", GL_LINE_MEMORY_USED, pe, pe->price12, 2, 1000, 1);
    struct csv_table t;
    size_t rows = 0;
    struct gl_error err = {0};
    CHECK(exp_write(set, &t, &rows, NULL, &err) == GL_OK);
    CHECK(rows == 3 && t.nrows == 4);
    CHECK(t.ncols == 52); /* 1.2's 47 - 2 + 2 + 5 split columns */
    CHECK_STR(cell(&t, 0, "ProviderName"), "(no such column)");
    CHECK_STR(cell(&t, 0, "ServiceProviderName"), "ServiceProviderName");
    if (t.nrows == 4) {
        CHECK_STR(cell(&t, 1, "AllocatedMethodId"), "gpuledger/idle-overhead-proportional");
        CHECK_STR(cell(&t, 1, "AllocatedResourceId"), "a");
        CHECK_STR(cell(&t, 1, "HostProviderName"), "GPU Platform");
        CHECK(cell(&t, 3, "AllocatedMethodId") == NULL); /* memory used: not split */
        CHECK(cell(&t, 3, "AllocatedMethodDetails") == NULL);
        CHECK(cell(&t, 1, "AllocatedTags") == NULL);
        /* ratios ×10^9: 666,666,666.67 and 333,333,333.33, floors, the one
         * left to the larger remainder: 0.666666667 + 0.333333333 = 1 */
        cJSON *m1 = cJSON_Parse(cell(&t, 1, "AllocatedMethodDetails"));
        cJSON *m2 = cJSON_Parse(cell(&t, 2, "AllocatedMethodDetails"));
        cJSON *e1 = m1 ? cJSON_GetArrayItem(cJSON_GetObjectItem(m1, "Elements"), 0) : NULL;
        cJSON *e2 = m2 ? cJSON_GetArrayItem(cJSON_GetObjectItem(m2, "Elements"), 0) : NULL;
        CHECK(e1 && e2);
        if (e1 && e2) {
            char *r1 = cJSON_PrintUnformatted(cJSON_GetObjectItem(e1, "AllocatedRatio"));
            char *r2 = cJSON_PrintUnformatted(cJSON_GetObjectItem(e2, "AllocatedRatio"));
            CHECK_STR(r1, "0.666666667");
            CHECK_STR(r2, "0.333333333");
            free(r1);
            free(r2);
            CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(e1, "UsageUnit")), "GB-Hours");
            /* 7,200,000 × 2^20 / 3.6e12 = 2.097152 */
            CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(e1, "UsageQuantity")) == 2.097152);
        }
        cJSON_Delete(m1);
        cJSON_Delete(m2);
    }
    csv_table_free(&t);
    gl_invoices_free(set);
    exp_close(&f);
}

/* An empty set: the header only, CRLF line ends. */
static void test_empty(void)
{
    struct exp_fx f;
    CHECK(exp_open(&f, "", ""));
    struct gl_invoice_set *set = exp_set(&f, NULL, 0);
    struct csv_table t;
    size_t rows = 7;
    char *text = NULL;
    struct gl_error err = {0};
    CHECK(exp_write(set, &t, &rows, &text, &err) == GL_OK);
    CHECK(rows == 0 && t.nrows == 1 && t.ncols == 47);
    CHECK(text && strncmp(text, "BilledCost,BillingAccountId,", 28) == 0);
    CHECK(text && strlen(text) > 2 && strcmp(text + strlen(text) - 2, "\r\n") == 0 &&
          strchr(text, '\n') == text + strlen(text) - 1);
    free(text);
    csv_table_free(&t);
    gl_invoices_free(set);
    exp_close(&f);
}

static cJSON *metadata(const struct gl_config *c, const char *csv, size_t rows)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return NULL;
    /* the version of the CSV given, else the config's */
    int v = csv ? gl_focus_version_of_csv(csv) : c->focus_version;
    struct gl_error err = {0};
    enum gl_status rc = gl_export_metadata(v, c, "2026-10", true, csv, rows, NULL, 0, out, &err);
    fclose(out);
    if (rc) {
        free(text);
        return NULL;
    }
    cJSON *o = cJSON_Parse(text);
    free(text);
    return o;
}

static const char *def_type(cJSON *defs, const char *name)
{
    const cJSON *d;
    cJSON_ArrayForEach(d, defs)
    {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "ColumnName")), name) == 0)
            return cJSON_GetStringValue(cJSON_GetObjectItem(d, "DataType"));
    }
    return NULL;
}

/* The metadata: columns and types of the engine's header or of a CSV's. */
static void test_metadata(void)
{
    struct exp_fx f;
    CHECK(exp_open(&f, "", ""));
    cJSON *o = metadata(f.cfg, NULL, 12);
    CHECK(o != NULL);
    if (o) {
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "FocusVersion")), "1.2");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "BillingPeriod")), "2026-10");
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(o, "Closed")));
        CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "Rows")) == 12);
        cJSON *schema = cJSON_GetObjectItem(o, "Schema");
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(o, "SchemaId"));
        CHECK(id && strncmp(id, "gpuledger-focus-1.2-", 20) == 0 && strlen(id) == 20 + 16);
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(schema, "SchemaId")), id);
        cJSON *defs = cJSON_GetObjectItem(schema, "ColumnDefinition");
        CHECK(cJSON_GetArraySize(defs) == 47);
        CHECK_STR(def_type(defs, "BilledCost"), "DECIMAL");
        CHECK_STR(def_type(defs, "ListUnitPrice"), "DECIMAL");
        CHECK_STR(def_type(defs, "PricingQuantity"), "DECIMAL");
        CHECK_STR(def_type(defs, "x_ComputeIndicator"), "DECIMAL");
        CHECK_STR(def_type(defs, "ChargePeriodStart"), "DATETIME");
        CHECK_STR(def_type(defs, "BillingPeriodEnd"), "DATETIME");
        CHECK_STR(def_type(defs, "Tags"), "JSON");
        CHECK_STR(def_type(defs, "x_Estimated"), "BOOLEAN");
        CHECK_STR(def_type(defs, "SubAccountId"), "STRING");
    }
    /* a CSV written as 1.3 is described as 1.3, whatever the config says */
    cJSON *o13 = metadata(f.cfg, "BilledCost,ServiceProviderName,Tags\r\n1,x,{}\r\n", 1);
    CHECK(o13 && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o13, "FocusVersion")), "1.3") ==
                     0);
    cJSON *defs13 = o13 ? cJSON_GetObjectItem(cJSON_GetObjectItem(o13, "Schema"),
                                              "ColumnDefinition")
                        : NULL;
    CHECK(cJSON_GetArraySize(defs13) == 3);
    cJSON *tags = cJSON_GetArrayItem(defs13, 2);
    cJSON *pfx = tags ? cJSON_GetObjectItem(tags, "ProviderTagPrefixes") : NULL;
    CHECK(cJSON_GetArraySize(pfx) == 1 &&
          strcmp(cJSON_GetStringValue(cJSON_GetArrayItem(pfx, 0)), "gpuledger/") == 0);
    /* another column set, another schema id */
    CHECK(o && o13 &&
          strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "SchemaId")),
                 cJSON_GetStringValue(cJSON_GetObjectItem(o13, "SchemaId"))) != 0);
    cJSON_Delete(o);
    cJSON_Delete(o13);
    exp_close(&f);
}

int main(void)
{
    gl_log_threshold = GL_LOG_ERROR;
    tap_tmp_begin();
    RUN(test_daily_rows_add_up);
    RUN(test_quoting);
    RUN(test_non_ascii);
    RUN(test_gpu_hours);
    RUN(test_focus13_split);
    RUN(test_empty);
    RUN(test_metadata);
    tap_tmp_end();
    return TAP_END();
}
