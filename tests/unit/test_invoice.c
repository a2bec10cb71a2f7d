/* Unit tests: invoices (engine/bill/invoice.c; their text,
 * engine/render/invoice_codec.c) built from a database filled through the
 * store API, every figure worked by hand.
 *
 * The price 34.332275390625 per GB-hour makes a line's amount in cents
 * exactly MiB·s / 1000: GB-h = MiB·s × 2^20 / (3600 × 10^9), and
 * 2^20 × 34.332275390625 = 36,000,000, so cents = MiB·s × 36e6 × 100 / 3.6e12
 * = MiB·s / 1000. Ties (x.5 cents) are then easy to place. */
#include <cjson/cJSON.h>
#include <unistd.h>

#include "config.h"
#include "invoice.h"
#include "invoice_codec.h"
#include "price.h"
#include "store.h"
#include "tap.h"
#include "util.h"

#define H 3600LL

struct inv_fx {
    struct gl_config *cfg;
    struct gl_store *s;
    struct gl_price_table *prices;
    struct gl_period oct;
    char db[512];
};

/* A config with prices (CSV text), currency and extra top-level keys
 * (",\"key\": ..." or ""), a fresh database. */
static bool inv_open(struct inv_fx *f, const char *prices_csv, const char *currency,
                     const char *extra)
{
    memset(f, 0, sizeof *f);
    char prices[512], cfg[2048];
    snprintf(prices, sizeof prices, "%s", tap_tmpfile("inv-prices.csv", prices_csv));
    snprintf(cfg, sizeof cfg,
             "{\"prometheus\": {\"url\": \"http://127.0.0.1:1\"}, \"prices\": {\"file\": \"%s\"},"
             " \"billing\": {\"currency\": \"%s\"}%s}",
             prices, currency, extra);
    snprintf(f->db, sizeof f->db, "%s", tap_tmpfile("invoice.db", ""));
    unlink(f->db);
    struct gl_error err = {0};
    gl_period_parse("2026-10", &f->oct);
    if (gl_config_load(tap_tmpfile("inv-cfg.json", cfg), &f->cfg, &err) ||
        gl_store_open(f->db, &f->s, &err) ||
        gl_prices_load(f->cfg->prices_file, currency, &f->prices, &err)) {
        printf("# inv_open: %s\n", err.msg);
        return false;
    }
    return gl_store_begin(f->s, &err) == GL_OK;
}

static int64_t inv_device(struct inv_fx *f, const char *cluster, const char *uuid,
                          const char *model, int64_t cap_mib)
{
    struct gl_device_info d = {cluster, uuid, "", "", model, "node-1", cap_mib, f->oct.start,
                               f->oct.end - 1};
    int64_t id = -1;
    struct gl_error err = {0};
    if (gl_store_device(f->s, &d, &id, &err))
        printf("# inv_device: %s\n", err.msg);
    return id;
}

/* One usage row of hour "2026-10-DDTHH" (day, hour of day). */
static bool inv_use(struct inv_fx *f, int day, int hour, const char *cluster, int64_t dev,
                    const char *pod, const char *team, const char *kind, int64_t mib_s)
{
    int64_t t = f->oct.start + (day - 1) * 86400LL + hour * H;
    struct gl_error err = {0};
    if (gl_store_add_usage(f->s, t, cluster, pod[0] ? "ns" : "", pod, dev, team, kind, mib_s, 0,
                           t + 60, t + 3540, &err)) {
        printf("# inv_use: %s\n", err.msg);
        return false;
    }
    return true;
}

/* Commits what was added and builds the invoices. */
static enum gl_status inv_build(struct inv_fx *f, struct gl_invoice_set **set,
                                struct gl_error *err)
{
    *set = NULL;
    enum gl_status rc = gl_store_commit(f->s, err);
    return rc ? rc : gl_invoices_build(f->cfg, f->s, f->prices, &f->oct, set, err);
}

static void inv_close(struct inv_fx *f)
{
    gl_prices_free(f->prices);
    gl_store_close(f->s);
    gl_config_free(f->cfg);
}

static const struct gl_invoice *inv_team(const struct gl_invoice_set *set, const char *team)
{
    for (size_t i = 0; set && i < set->n; i++)
        if (strcmp(set->invoices[i].team, team) == 0)
            return &set->invoices[i];
    return NULL;
}

static const char ties_csv[] = "model_pattern,unit,price,currency,valid_from,valid_to\n"
                               "^R$,GB-Hours,34.332275390625,USD,2026-01-01T00:00:00Z,\n";

/* A line is rounded once, from its exact MiB·s, half to even; its days
 * split the rounded amount by largest remainder; a total is the sum of the
 * rounded lines. */
static void test_rounding_once(void)
{
    struct inv_fx f;
    CHECK(inv_open(&f, ties_csv, "USD", ""));
    int64_t d1 = inv_device(&f, "c1", "GPU-1", "R", 10000);
    int64_t d2 = inv_device(&f, "c2", "GPU-2", "R", 10000);
    int64_t d3 = inv_device(&f, "c3", "GPU-3", "R", 10000);
    /* a: 1,600 MiB·s on Oct 2 and 1,600 on Oct 3 = 3,200 → 3.2 cents → 3
     * (per hour it would be 1.6 → 2 twice = 4) */
    CHECK(inv_use(&f, 2, 5, "c1", d1, "pa", "a", "memory_used", 1600));
    CHECK(inv_use(&f, 3, 5, "c1", d1, "pa", "a", "memory_used", 1600));
    /* b: 2,500 on c1 → 2.5 → 2 and 2,500 on c2 → 2; total 4 (the exact
     * 5,000 rounded once would be 5) */
    CHECK(inv_use(&f, 4, 0, "c1", d1, "pb", "b", "memory_used", 2500));
    CHECK(inv_use(&f, 4, 0, "c2", d2, "pb", "b", "memory_used", 2500));
    /* c: 3,500 → 3.5 → 4 (the tie to even, upwards); 4,500 → 4.5 → 4 */
    CHECK(inv_use(&f, 5, 0, "c1", d1, "pc", "c", "memory_used", 3500));
    CHECK(inv_use(&f, 5, 0, "c3", d3, "pc", "c", "memory_used", 4500));
    struct gl_invoice_set *set = NULL;
    struct gl_error err = {0};
    CHECK(inv_build(&f, &set, &err) == GL_OK);
    CHECK(set && set->n == 3); /* a, b, c: no idle stored, no platform invoice */
    const struct gl_invoice *a = inv_team(set, "a"), *b = inv_team(set, "b"),
                            *c = inv_team(set, "c");
    CHECK(a && a->nlines == 1 && a->lines[0].mib_s == 3200 && a->lines[0].amount == 3 &&
          a->total == 3);
    /* unit price as written: 34.332275390625 × 10^12 */
    CHECK(a && a->lines[0].unit_price12 == (gl_i128)34332275390625LL);
    /* days: 3 cents by weights 1,600 : 1,600 → 1.5 each; floors 1 + 1, the
     * one left to the lower index on the tie: 2 and 1 */
    CHECK(a && a->lines[0].ndays == 2 && a->lines[0].days[0].day == f.oct.start + 86400 &&
          a->lines[0].days[0].billed == 2 && a->lines[0].days[1].billed == 1 &&
          a->lines[0].days[0].mib_s == 1600 && a->lines[0].days[1].mib_s == 1600);
    CHECK(b && b->nlines == 2 && b->lines[0].amount == 2 && b->lines[1].amount == 2 &&
          b->total == 4);
    CHECK(b && strcmp(b->lines[0].cluster, "c1") == 0 && strcmp(b->lines[1].cluster, "c2") == 0);
    CHECK(c && c->nlines == 2 && c->lines[0].amount == 4 && c->lines[1].amount == 4 &&
          c->total == 8);
    CHECK(c && c->lines[0].kind == GL_LINE_MEMORY_USED && !c->lines[0].estimated);
    CHECK(a && strcmp(a->invoice_id, "GL-2026-10-a") == 0);
    gl_invoices_free(set);
    inv_close(&f);
}

/* Currencies with other minor units: JPY (0) and KWD (3). */
static void test_minor_units(void)
{
    struct inv_fx f;
    CHECK(inv_open(&f, "model_pattern,unit,price,currency,valid_from,valid_to\n"
                       "^R$,GB-Hours,34.332275390625,JPY,2026-01-01T00:00:00Z,\n",
                   "JPY", ""));
    int64_t d = inv_device(&f, "c1", "GPU-1", "R", 10000);
    /* yen = MiB·s / 100,000: 250,000 → 2.5 → 2; 350,000 → 3.5 → 4 */
    CHECK(inv_use(&f, 2, 0, "c1", d, "p", "a", "memory_used", 250000));
    CHECK(inv_use(&f, 2, 0, "c1", d, "p", "b", "memory_used", 350000));
    struct gl_invoice_set *set = NULL;
    struct gl_error err = {0};
    CHECK(inv_build(&f, &set, &err) == GL_OK);
    const struct gl_invoice *a = inv_team(set, "a"), *b = inv_team(set, "b");
    CHECK(a && a->total == 2 && b && b->total == 4);
    char *json = set && a ? gl_invoice_json(set, a) : NULL;
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    /* no decimal point at 0 minor digits */
    CHECK(o && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "total")), "2") == 0);
    CHECK(o && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "currency")), "JPY") == 0);
    cJSON_Delete(o);
    free(json);
    gl_invoices_free(set);
    inv_close(&f);

    CHECK(inv_open(&f, "model_pattern,unit,price,currency,valid_from,valid_to\n"
                       "^R$,GB-Hours,34.332275390625,KWD,2026-01-01T00:00:00Z,\n",
                   "KWD", ""));
    d = inv_device(&f, "c1", "GPU-1", "R", 10000);
    /* fils = MiB·s / 100: 1,250 → 12.5 → 12; 1,350 → 13.5 → 14 */
    CHECK(inv_use(&f, 2, 0, "c1", d, "p", "a", "memory_used", 1250));
    CHECK(inv_use(&f, 2, 0, "c1", d, "p", "b", "memory_used", 1350));
    CHECK(inv_build(&f, &set, &err) == GL_OK);
    a = inv_team(set, "a");
    b = inv_team(set, "b");
    CHECK(a && a->total == 12 && b && b->total == 14);
    json = set && b ? gl_invoice_json(set, b) : NULL;
    o = json ? cJSON_Parse(json) : NULL;
    CHECK(o && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "total")), "0.014") == 0);
    cJSON_Delete(o);
    free(json);
    gl_invoices_free(set);
    inv_close(&f);
}

/* GPU-Hours: a fully occupied GPU-hour costs the entry's price. */
static void test_gpu_hours(void)
{
    struct inv_fx f;
    CHECK(inv_open(&f, "model_pattern,unit,price,currency,valid_from,valid_to\n"
                       "^A100$,GPU-Hours,2.00,USD,2026-01-01T00:00:00Z,\n",
                   "USD", ""));
    int64_t d = inv_device(&f, "c1", "GPU-1", "A100", 81920);
    /* one full hour (81,920 MiB × 3600 s) and half of another */
    CHECK(inv_use(&f, 2, 0, "c1", d, "p", "a", "memory_used", 81920 * H));
    CHECK(inv_use(&f, 2, 1, "c1", d, "p", "b", "memory_used", 81920 * 1800));
    struct gl_invoice_set *set = NULL;
    struct gl_error err = {0};
    CHECK(inv_build(&f, &set, &err) == GL_OK);
    const struct gl_invoice *a = inv_team(set, "a"), *b = inv_team(set, "b");
    /* capacity 81,920 MiB = 85.89934592 GB; 2 / 85.89934592 =
     * 0.025 × 10^9 / 2^30 = 0.023283064365386962890625 → 0.023283064365 */
    CHECK(a && a->nlines == 1 && a->lines[0].unit_price12 == (gl_i128)23283064365LL);
    CHECK(a && a->lines[0].capacity_gb12 == (gl_i128)85899345920000LL);
    /* 85.89934592 GB-h × 0.023283064365 = 1.99999999996... → 2.00 */
    CHECK(a && a->total == 200);
    /* half an hour: 0.99999999998... → 1.00 */
    CHECK(b && b->total == 100);
    char *json = set && a ? gl_invoice_json(set, a) : NULL;
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    cJSON *l0 = o ? cJSON_GetArrayItem(cJSON_GetObjectItem(o, "lines"), 0) : NULL;
    CHECK(l0 && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(l0, "unit_price")),
                       "0.023283064365") == 0);
    CHECK(l0 && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(l0, "list_price_per_gpu_hour")),
                       "2") == 0);
    CHECK(l0 && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(l0, "pricing_unit")),
                       "GB-Hours") == 0);
    /* 81,920 × 3,600 = 294,912,000 MiB·s; GB-h = that × 2^20 / 3.6e12 = 85.89934592 */
    CHECK(l0 && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(l0, "mib_seconds")),
                       "294912000") == 0);
    CHECK(l0 && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(l0, "gb_hours")),
                       "85.899345920") == 0);
    CHECK(l0 && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(l0, "amount")), "2.00") == 0);
    cJSON_Delete(o);
    free(json);
    gl_invoices_free(set);
    inv_close(&f);
}

static const char one_csv[] = "model_pattern,unit,price,currency,valid_from,valid_to\n"
                              "^M$,GB-Hours,1.00,USD,2026-01-01T00:00:00Z,\n";

/* One hour of a 10,000 MiB GPU: a uses 3,000, b 1,000; 18,000,001 MiB·s idle
 * (5,000 MiB for the hour and one more MiB·s); 1,000 MiB driver-reserved. */
static bool fill_shared_hour(struct inv_fx *f)
{
    int64_t d = inv_device(f, "c1", "GPU-1", "M", 10000);
    return inv_use(f, 2, 5, "c1", d, "pa", "a", "memory_used", 3000 * H) &&
           inv_use(f, 2, 5, "c1", d, "pb", "b", "memory_used", 1000 * H) &&
           inv_use(f, 2, 5, "c1", d, "", "", "capacity", 10000 * H) &&
           inv_use(f, 2, 5, "c1", d, "", "", "idle", 5000 * H + 1) &&
           inv_use(f, 2, 5, "c1", d, "", "", "reserved", 1000 * H);
}

/* proportional: idle and overhead spread by the teams' billed MiB·s
 * (largest remainder: the parts add up to the whole exactly). */
static void test_proportional(void)
{
    struct inv_fx f;
    CHECK(inv_open(&f, one_csv, "USD", ", \"idle_overhead\": {\"policy\": \"proportional\"}"));
    CHECK(fill_shared_hour(&f));
    struct gl_invoice_set *set = NULL;
    struct gl_error err = {0};
    CHECK(inv_build(&f, &set, &err) == GL_OK);
    CHECK(set && set->n == 2); /* no platform invoice: every bucket had billed teams */
    const struct gl_invoice *a = inv_team(set, "a"), *b = inv_team(set, "b");
    /* lines sort by kind name: idle_share, memory_used, overhead_share */
    CHECK(a && a->nlines == 3 && a->lines[0].kind == GL_LINE_IDLE_SHARE &&
          a->lines[1].kind == GL_LINE_MEMORY_USED && a->lines[2].kind == GL_LINE_OVERHEAD_SHARE);
    CHECK(b && b->nlines == 3);
    if (!a || !b || a->nlines != 3 || b->nlines != 3) {
        gl_invoices_free(set);
        inv_close(&f);
        return;
    }
    /* idle 18,000,001 at 3:1 → 13,500,000.75 and 4,500,000.25: floors, the
     * one left to the larger remainder (a) */
    CHECK(a->lines[0].mib_s == 13500001 && b->lines[0].mib_s == 4500000);
    /* overhead 3,600,000 at 3:1 → 2,700,000 and 900,000 */
    CHECK(a->lines[2].mib_s == 2700000 && b->lines[2].mib_s == 900000);
    /* cents = MiB·s × 2^20 × 100 / 3.6e12: a memory 3,000 MiB-h → 314.5728 → 315;
     * idle 13,500,001 → 393.2160291... → 393; overhead 2,700,000 → 78.6432 → 79 */
    CHECK(a->lines[1].amount == 315 && a->lines[0].amount == 393 && a->lines[2].amount == 79);
    CHECK(a->total == 315 + 393 + 79);
    /* b: memory 1,000 MiB-h → 104.8576 → 105; idle 4,500,000 → 131.072 → 131;
     * overhead 900,000 → 26.2144 → 26 */
    CHECK(b->lines[1].amount == 105 && b->lines[0].amount == 131 && b->lines[2].amount == 26);
    CHECK(b->total == 262);
    gl_invoices_free(set);
    inv_close(&f);
}

/* platform: the devices' idle and overhead on the platform team's invoice;
 * unbilled: nowhere. */
static void test_platform_and_unbilled(void)
{
    struct inv_fx f;
    CHECK(inv_open(&f, one_csv, "USD",
                   ", \"idle_overhead\": {\"policy\": \"platform\", \"platform_team\": \"ops\"}"));
    CHECK(fill_shared_hour(&f));
    struct gl_invoice_set *set = NULL;
    struct gl_error err = {0};
    CHECK(inv_build(&f, &set, &err) == GL_OK);
    const struct gl_invoice *ops = inv_team(set, "ops");
    CHECK(set && set->n == 3 && ops && ops->nlines == 2);
    /* idle 18,000,001 MiB·s → 524.288029... cents → 524; overhead 3,600,000
     * → 104.8576 → 105 */
    CHECK(ops && ops->nlines == 2 && ops->lines[0].kind == GL_LINE_IDLE_SHARE &&
          ops->lines[0].mib_s == 18000001 && ops->lines[0].amount == 524 &&
          ops->lines[1].kind == GL_LINE_OVERHEAD_SHARE && ops->lines[1].amount == 105 &&
          ops->total == 629);
    gl_invoices_free(set);
    inv_close(&f);

    CHECK(inv_open(&f, one_csv, "USD", ", \"idle_overhead\": {\"policy\": \"unbilled\"}"));
    CHECK(fill_shared_hour(&f));
    CHECK(inv_build(&f, &set, &err) == GL_OK);
    CHECK(set && set->n == 2 && inv_team(set, "platform") == NULL);
    const struct gl_invoice *a = inv_team(set, "a");
    CHECK(a && a->nlines == 1 && a->total == 315);
    gl_invoices_free(set);
    inv_close(&f);
}

/* A model used without a price is a config error naming it; an hour
 * outside every row's validity too. */
static void test_missing_price(void)
{
    struct inv_fx f;
    CHECK(inv_open(&f, "model_pattern,unit,price,currency,valid_from,valid_to\n"
                       "^M$,GB-Hours,1.00,USD,2026-10-05T00:00:00Z,\n",
                   "USD", ""));
    int64_t d = inv_device(&f, "c1", "GPU-1", "Unpriced-X", 10000);
    CHECK(inv_use(&f, 6, 0, "c1", d, "p", "a", "memory_used", 1000));
    struct gl_invoice_set *set = NULL;
    struct gl_error err = {0};
    CHECK(inv_build(&f, &set, &err) == GL_ERR_CONFIG && set == NULL);
    CHECK(strstr(err.msg, "\"Unpriced-X\"") != NULL && strstr(err.msg, "team a") != NULL);
    inv_close(&f);

    CHECK(inv_open(&f, "model_pattern,unit,price,currency,valid_from,valid_to\n"
                       "^M$,GB-Hours,1.00,USD,2026-10-05T00:00:00Z,\n",
                   "USD", ""));
    d = inv_device(&f, "c1", "GPU-1", "M", 10000);
    /* Oct 4, 23:00: before the row's valid_from */
    CHECK(inv_use(&f, 4, 23, "c1", d, "p", "a", "memory_used", 1000));
    err.msg[0] = 0;
    CHECK(inv_build(&f, &set, &err) == GL_ERR_CONFIG && set == NULL);
    CHECK(strstr(err.msg, "2026-10-04T23:00:00Z") != NULL);
    inv_close(&f);
}

/* Sums beyond int64 MiB·s are an error naming the team, never wrapped. */
static void test_overflow(void)
{
    struct inv_fx f;
    CHECK(inv_open(&f, one_csv, "USD", ""));
    int64_t d = inv_device(&f, "c1", "GPU-1", "M", 10000);
    /* an hour of 2^62 on each of two days (each day's aggregates fit): the
     * line's sum 2^63 does not fit int64 */
    CHECK(inv_use(&f, 2, 0, "c1", d, "p", "huge", "memory_used", (int64_t)1 << 62));
    CHECK(inv_use(&f, 3, 0, "c1", d, "p", "huge", "memory_used", (int64_t)1 << 62));
    struct gl_invoice_set *set = NULL;
    struct gl_error err = {0};
    CHECK(inv_build(&f, &set, &err) == GL_ERR_RUNTIME && set == NULL);
    CHECK(strstr(err.msg, "integer overflow") && strstr(err.msg, "\"huge\"") &&
          strstr(err.msg, "2026-10"));
    inv_close(&f);
}

/* The JSON of an invoice: the catalogue's name and cost center, draft
 * status, lines and total as exact decimal strings. */
static void test_json(void)
{
    struct inv_fx f;
    CHECK(inv_open(&f, ties_csv, "USD",
                   ", \"teams\": {\"catalogue\": [{\"id\": \"a\", \"name\": \"Team A\","
                   " \"cost_center\": \"CC-7\"}]}"));
    int64_t d = inv_device(&f, "c1", "GPU-1", "R", 10000);
    CHECK(inv_use(&f, 2, 5, "c1", d, "pa", "a", "memory_used", 123456));
    CHECK(inv_use(&f, 2, 5, "c1", d, "pb", "b", "memory_used", 1000));
    struct gl_invoice_set *set = NULL;
    struct gl_error err = {0};
    CHECK(inv_build(&f, &set, &err) == GL_OK);
    const struct gl_invoice *a = inv_team(set, "a");
    char *json = a ? gl_invoice_json(set, a) : NULL;
    cJSON *o = json ? cJSON_Parse(json) : NULL;
    CHECK(o != NULL);
    if (o) {
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "invoice_id")), "GL-2026-10-a");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "team_name")), "Team A");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "cost_center")), "CC-7");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "status")), "draft");
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(o, "closed_at")));
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "period_start")),
                  "2026-10-01T00:00:00Z");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "period_end")),
                  "2026-11-01T00:00:00Z");
        /* 123,456 MiB·s / 1000 = 123.456 cents → 123 → "1.23" */
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "total")), "1.23");
        cJSON *lines = cJSON_GetObjectItem(o, "lines");
        CHECK(cJSON_GetArraySize(lines) == 1);
        cJSON *l = cJSON_GetArrayItem(lines, 0);
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(l, "kind")), "memory_used");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(l, "amount")), "1.23");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(l, "unit_price")), "34.332275390625");
        /* 123,456 × 1,048,576 / 3.6e12 = 0.0359591663 → 9 decimals 0.035959166 */
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(l, "gb_hours")), "0.035959166");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(l, "price_valid_from")),
                  "2026-01-01T00:00:00Z");
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(l, "price_valid_to")));
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(l, "charge_class")));
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(l, "estimated")));
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "generator")), gl_generator);
    }
    cJSON_Delete(o);
    free(json);
    /* b: not in the catalogue: named by its id, no cost center */
    const struct gl_invoice *b = inv_team(set, "b");
    CHECK(b && strcmp(b->team_name, "b") == 0 && b->cost_center == NULL);
    gl_invoices_free(set);
    inv_close(&f);
}

/* Markdown: label text escaped (no cell can be ended, no markup started),
 * figures as in the JSON. */
static void test_markdown(void)
{
    struct inv_fx f;
    CHECK(inv_open(&f, "model_pattern,unit,price,currency,valid_from,valid_to\n"
                       ".*,GB-Hours,34.332275390625,USD,2026-01-01T00:00:00Z,\n",
                   "USD", ""));
    int64_t d = inv_device(&f, "c|1", "GPU-1", "<b>M</b>", 10000);
    CHECK(inv_use(&f, 2, 5, "c|1", d, "pa", "a", "memory_used", 2500));
    struct gl_invoice_set *set = NULL;
    struct gl_error err = {0};
    CHECK(inv_build(&f, &set, &err) == GL_OK);
    const struct gl_invoice *a = inv_team(set, "a");
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (a && out)
        gl_invoice_markdown(set, a, out);
    if (out)
        fclose(out);
    CHECK(text && strstr(text, "# Invoice GL-2026-10-a\n"));
    CHECK(text && strstr(text, "**DRAFT**"));
    CHECK(text && strstr(text, "| c\\|1 | \\<b\\>M\\</b\\> | memory_used |"));
    /* 2,500 MiB·s → 2.5 cents → 2 → 0.02; GB-h 2,500 × 2^20 / 3.6e12 =
     * 0.000728177... → 0.000728178 (9 decimals, half-even of ...1777) */
    CHECK(text && strstr(text, "| 0.000728178 |"));
    CHECK(text && strstr(text, "**Total: 0.02 USD**"));
    CHECK(text && !strstr(text, "<b>"));
    free(text);
    text = NULL;
    out = open_memstream(&text, &len);
    size_t n = a && out ? gl_invoice_md_lines(set, a, true, out) : 99;
    if (out)
        fclose(out);
    CHECK(n == 0); /* no correction lines */
    free(text);
    gl_invoices_free(set);
    inv_close(&f);
}

/* Correction lines: added by the caller, sorted after the charged lines,
 * re-totalled by gl_invoices_finish; a new team gets an invoice. */
static void test_corrections(void)
{
    struct inv_fx f;
    CHECK(inv_open(&f, ties_csv, "USD", ""));
    int64_t d = inv_device(&f, "c1", "GPU-1", "R", 10000);
    CHECK(inv_use(&f, 2, 5, "c1", d, "pa", "a", "memory_used", 7000)); /* 7 cents */
    struct gl_invoice_set *set = NULL;
    struct gl_error err = {0};
    CHECK(inv_build(&f, &set, &err) == GL_OK);
    if (!set || !f.prices->n) {
        gl_invoices_free(set);
        inv_close(&f);
        return;
    }
    const struct gl_price_entry *pe = &f.prices->entries[0];
    struct gl_invoice_line *l = gl_invoice_add_correction(set, "a", "c0", "R",
                                                          GL_LINE_MEMORY_USED, pe, "2026-09");
    l->amount = -5;
    l->qty_nano = -123;
    struct gl_invoice_line *z = gl_invoice_add_correction(set, "0new", "c1", "R",
                                                          GL_LINE_MEMORY_USED, pe, "2026-09");
    z->amount = 11;
    /* the same key again: the same line */
    CHECK(gl_invoice_add_correction(set, "0new", "c1", "R", GL_LINE_MEMORY_USED, pe,
                                    "2026-09") == z);
    CHECK(gl_invoices_finish(set, &err) == GL_OK);
    /* invoices sorted by team id: "0new" before "a" */
    CHECK(set->n == 2 && strcmp(set->invoices[0].team, "0new") == 0 &&
          set->invoices[0].total == 11);
    const struct gl_invoice *a = inv_team(set, "a");
    /* 7 - 5 = 2; the correction (cluster c0) after the charged line (c1) */
    CHECK(a && a->total == 2 && a->nlines == 2 && a->lines[0].corrected_period[0] == 0 &&
          strcmp(a->lines[1].corrected_period, "2026-09") == 0);
    CHECK(a && gl_line_gbh_nano(&a->lines[1]) == -123);
    /* a charged line's GB-h from MiB·s: 7,000 × 2^20 / 3.6e12 × 10^9 =
     * 2,038,897.78 → 2,038,898 */
    CHECK(a && gl_line_gbh_nano(&a->lines[0]) == 2038898);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    size_t n = a && out ? gl_invoice_md_lines(set, a, true, out) : 0;
    if (out)
        fclose(out);
    CHECK(n == 1 && text && strstr(text, "memory_used, correction of 2026-09") &&
          strstr(text, "| -0.05 |"));
    free(text);
    gl_invoices_free(set);
    inv_close(&f);
}

/* Anomalies: per team or all, ordered by kind; their JSON. */
static void test_anomalies(void)
{
    struct inv_fx f;
    CHECK(inv_open(&f, one_csv, "USD", ""));
    int64_t d = inv_device(&f, "c1", "GPU-9", "M", 10000);
    CHECK(inv_use(&f, 2, 5, "c1", d, "pb", "b", "memory_used", 1000 * H));
    CHECK(inv_use(&f, 2, 5, "c1", d, "pb", "b", "anomaly_unallocated", 1000 * H));
    CHECK(inv_use(&f, 2, 6, "c1", d, "pb", "b", "anomaly_unallocated", 500 * H));
    CHECK(inv_use(&f, 3, 0, "c1", d, "px", "x", "anomaly_excess_devices", 10));
    struct gl_error err = {0};
    CHECK(gl_store_commit(f.s, &err) == GL_OK);
    struct gl_anomaly_list all = {0}, b = {0}, none = {0};
    CHECK(gl_anomalies_load(f.s, &f.oct, NULL, &all, &err) == GL_OK);
    CHECK(gl_anomalies_load(f.s, &f.oct, "b", &b, &err) == GL_OK);
    CHECK(gl_anomalies_load(f.s, &f.oct, "nobody", &none, &err) == GL_OK);
    /* excess_devices sorts before unallocated_use */
    CHECK(all.n == 2 && all.items[0].kind == GL_ANOMALY_EXCESS_DEVICES &&
          all.items[1].kind == GL_ANOMALY_UNALLOCATED_USE);
    CHECK(none.n == 0);
    /* b's two hours as one: 1,500 MiB-h = 5,400,000 MiB·s, seen 05:01 to 06:59 */
    CHECK(b.n == 1 && b.items[0].mib_s == 5400000 && strcmp(b.items[0].pod, "pb") == 0 &&
          strcmp(b.items[0].device, "GPU-9") == 0 && strcmp(b.items[0].node, "node-1") == 0);
    cJSON *o = b.n ? gl_anomaly_json(&b.items[0]) : NULL;
    CHECK(o != NULL);
    if (o) {
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "kind")), "unallocated_use");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "first_seen")),
                  "2026-10-02T05:01:00Z");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "last_seen")),
                  "2026-10-02T06:59:00Z");
        /* 1,500 MiB-h × 1.048576 / 1000 = 1.572864 GB-h */
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "gb_hours")), "1.572864000");
        CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(o, "mib_seconds")), "5400000");
    }
    cJSON_Delete(o);
    gl_anomalies_free(&all);
    gl_anomalies_free(&b);
    gl_anomalies_free(&none);
    CHECK(all.n == 0 && all.items == NULL);
    inv_close(&f);
}

/* Kind names: the order of the enum is the names' order. */
static void test_kind_names(void)
{
    const char *prev = "";
    for (int k = 0; k < GL_LINE_NKINDS; k++) {
        enum gl_line_kind back;
        const char *name = gl_line_kind_name((enum gl_line_kind)k);
        CHECK(strcmp(prev, name) < 0);
        CHECK(gl_line_kind_parse(name, &back) && back == (enum gl_line_kind)k);
        prev = name;
    }
    enum gl_line_kind x = GL_LINE_MEMORY_USED;
    CHECK(!gl_line_kind_parse("memory", &x) && x == GL_LINE_MEMORY_USED);
    CHECK_STR(gl_line_kind_name(GL_LINE_NKINDS), "?");
    CHECK_STR(gl_line_kind_name(GL_LINE_RESERVED_UNUSED), "reserved_unused");
    CHECK_STR(gl_anomaly_kind_name(GL_ANOMALY_EXCESS_DEVICES), "excess_devices");
}

int main(void)
{
    gl_log_threshold = GL_LOG_ERROR;
    tap_tmp_begin();
    RUN(test_rounding_once);
    RUN(test_minor_units);
    RUN(test_gpu_hours);
    RUN(test_proportional);
    RUN(test_platform_and_unbilled);
    RUN(test_missing_price);
    RUN(test_overflow);
    RUN(test_json);
    RUN(test_markdown);
    RUN(test_corrections);
    RUN(test_anomalies);
    RUN(test_kind_names);
    tap_tmp_end();
    return TAP_END();
}
