/* Unit tests: closing a period, frozen figures and corrections
 * (engine/close.c), on a database filled through the store API with
 * figures worked by hand. */
#include <unistd.h>

#include "close.h"
#include "config.h"
#include "invoice.h"
#include "price.h"
#include "store.h"
#include "store_sql.h"
#include "tap.h"

struct fixture {
    struct gl_config *cfg;
    struct gl_store *s;
    struct gl_price_table *prices;
    int64_t dev;
};

static bool setup(struct fixture *f)
{
    memset(f, 0, sizeof *f);
    char prices[512];
    snprintf(prices, sizeof prices, "%s",
             tap_tmpfile("prices.csv", "model_pattern,unit,price,currency,valid_from,valid_to\n"
                                       "^M$,GB-Hours,1.00,USD,2026-01-01T00:00:00Z,,\n"));
    char cfgtext[1024];
    snprintf(cfgtext, sizeof cfgtext,
             "{\"prometheus\": {\"url\": \"http://127.0.0.1:1\"}, \"prices\": {\"file\": \"%s\"},"
             " \"billing\": {\"currency\": \"USD\"}, \"idle_overhead\": {\"policy\": \"unbilled\"}}",
             prices);
    struct gl_error err = {0};
    char db[512];
    snprintf(db, sizeof db, "%s", tap_tmpfile("close.db", ""));
    unlink(db);
    if (gl_config_load(tap_tmpfile("cfg.json", cfgtext), &f->cfg, &err) ||
        gl_store_open(db, &f->s, &err) ||
        gl_prices_load(f->cfg->prices_file, "USD", &f->prices, &err)) {
        printf("# setup: %s\n", err.msg);
        return false;
    }
    struct gl_device_info d = {"default", "GPU-1", "", "", "M", "n1", 81920, 0, 0};
    return gl_store_device(f->s, &d, &f->dev, &err) == GL_OK;
}

static void teardown(struct fixture *f)
{
    gl_prices_free(f->prices);
    gl_store_close(f->s);
    gl_config_free(f->cfg);
}

/* 1000 MiB for one hour of team a. */
static bool add_hour(struct fixture *f, const char *when)
{
    int64_t hour;
    gl_time_parse(when, &hour);
    struct gl_error err = {0};
    return gl_store_begin(f->s, &err) == GL_OK &&
           gl_store_add_usage(f->s, hour, "default", "ns", "p", f->dev, "a", "memory_used",
                              1000LL * 3600, 0, hour, hour + 3540, &err) == GL_OK &&
           gl_store_commit(f->s, &err) == GL_OK;
}

static const struct gl_invoice_line *correction(const struct gl_invoice_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        for (size_t j = 0; j < set->invoices[i].nlines; j++)
            if (set->invoices[i].lines[j].corrected_period[0])
                return &set->invoices[i].lines[j];
    return NULL;
}

static void count_invoice(void *ctx, const char *team, const char *json, const char *md)
{
    (void)json;
    (void)md;
    if (strcmp(team, "a") == 0)
        (*(int *)ctx)++;
}

static void test_close_and_correct(void)
{
    struct fixture f;
    if (!setup(&f)) {
        CHECK(false);
        return;
    }
    struct gl_error err = {0};
    struct gl_period sep, oct, nov;
    gl_period_parse("2026-09", &sep);
    gl_period_parse("2026-10", &oct);
    gl_period_parse("2026-11", &nov);
    CHECK(add_hour(&f, "2026-09-10T00:00:00Z"));
    /* 3 600 000 MiB·s = 1.048576 GB-h at 1.00 → 1.05 */
    CHECK(gl_period_close(f.cfg, f.s, f.prices, &sep, oct.start - 1, &err) == GL_ERR_STATE);
    CHECK(gl_period_close(f.cfg, f.s, f.prices, &sep, oct.start, &err) == GL_OK);
    CHECK(gl_period_close(f.cfg, f.s, f.prices, &sep, oct.start, &err) == GL_ERR_STATE);
    CHECK(strstr(err.msg, "already closed") != NULL);
    int n = 0;
    CHECK(gl_frozen_invoices(f.s, "2026-09", NULL, count_invoice, &n, &err) == GL_OK && n == 1);
    char *csv = NULL;
    CHECK(gl_frozen_focus(f.s, "2026-09", &csv, &err) == GL_OK && csv && strstr(csv, "\r\n1.05,"));
    free(csv);

    /* Late data for the closed month: one more hour the same day. */
    CHECK(add_hour(&f, "2026-09-10T01:00:00Z"));
    struct gl_invoice_set *set = NULL;
    bool frozen = true;
    CHECK(gl_period_invoices(f.cfg, f.s, f.prices, &oct, &set, &frozen, &err) == GL_OK);
    CHECK(!frozen && set);
    const struct gl_invoice_line *l = set ? correction(set) : NULL;
    CHECK(l != NULL);
    if (l) {
        /* recomputed 2.097152 GB-h → 2.10; frozen 1.05; correction 1.05 */
        CHECK_STR(l->corrected_period, "2026-09");
        CHECK(l->mib_s == 3600000 && l->amount == 105 && l->ndays == 1);
        CHECK(set->invoices[0].total == 105);
    }
    gl_invoices_free(set);
    bool closed = false;
    CHECK(gl_period_is_closed(f.s, "2026-09", &closed, &err) == GL_OK && closed);

    /* October carries the correction when it closes; November none. */
    CHECK(gl_period_close(f.cfg, f.s, f.prices, &oct, nov.start, &err) == GL_OK);
    set = NULL;
    CHECK(gl_period_invoices(f.cfg, f.s, f.prices, &nov, &set, &frozen, &err) == GL_OK);
    CHECK(set && set->n == 0);
    gl_invoices_free(set);

    /* A later change of September again: only the new difference. */
    int64_t h;
    gl_time_parse("2026-09-11T00:00:00Z", &h);
    CHECK(add_hour(&f, "2026-09-11T00:00:00Z"));
    set = NULL;
    CHECK(gl_period_invoices(f.cfg, f.s, f.prices, &nov, &set, &frozen, &err) == GL_OK);
    l = set ? correction(set) : NULL;
    CHECK(l && l->mib_s == 3600000 && l->amount == 105 && l->days[0].day == h);
    gl_invoices_free(set);

    /* A row inserted above the price in the table (ids shift) changes
     * nothing: corrections follow the price's pattern and start. */
    gl_prices_free(f.prices);
    f.prices = NULL;
    gl_prices_load(tap_tmpfile("prices2.csv",
                               "model_pattern,unit,price,currency,valid_from,valid_to\n"
                               "^T4$,GB-Hours,9.00,USD,2026-01-01T00:00:00Z,,\n"
                               "^M$,GB-Hours,1.00,USD,2026-01-01T00:00:00Z,,\n"),
                   "USD", &f.prices, &err);
    set = NULL;
    CHECK(f.prices && gl_period_invoices(f.cfg, f.s, f.prices, &nov, &set, &frozen, &err) == GL_OK);
    size_t ncorr = 0;
    for (size_t i = 0; set && i < set->n; i++)
        for (size_t j = 0; j < set->invoices[i].nlines; j++)
            ncorr += set->invoices[i].lines[j].corrected_period[0] != 0;
    CHECK(ncorr == 1);
    gl_invoices_free(set);
    teardown(&f);
}

static void test_device_keeps_known_model(void)
{
    struct fixture f;
    if (!setup(&f)) {
        CHECK(false);
        return;
    }
    /* a later chunk without modelName/Hostname never erases them */
    struct gl_error err = {0};
    struct gl_device_info d = {"default", "GPU-1", "", "", "unknown", "", 0, 10, 20};
    int64_t id = -1;
    CHECK(gl_store_device(f.s, &d, &id, &err) == GL_OK && id == f.dev);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(gl_store_db(f.s), "SELECT model, hostname FROM device WHERE id = ?", -1,
                       &st, NULL);
    sqlite3_bind_int64(st, 1, id);
    CHECK(sqlite3_step(st) == SQLITE_ROW);
    CHECK_STR((const char *)sqlite3_column_text(st, 0), "M");
    CHECK_STR((const char *)sqlite3_column_text(st, 1), "n1");
    sqlite3_finalize(st);
    teardown(&f);
}

/* 1000 MiB for one hour of team. */
static bool add_team_hour(struct fixture *f, const char *team, const char *when)
{
    int64_t hour;
    gl_time_parse(when, &hour);
    struct gl_error err = {0};
    return gl_store_begin(f->s, &err) == GL_OK &&
           gl_store_add_usage(f->s, hour, "default", "ns", team, f->dev, team, "memory_used",
                              1000LL * 3600, 0, hour, hour + 3540, &err) == GL_OK &&
           gl_store_commit(f->s, &err) == GL_OK;
}

static void test_corrections_long_team_ids(void)
{
    /* Two 2,100-character team ids differing in the last character: each
     * FOCUS key of a correction is its own team's (no key may be cut). */
    struct fixture f;
    if (!setup(&f)) {
        CHECK(false);
        return;
    }
    char t1[2101], t2[2101];
    memset(t1, 'a', 2100);
    t1[2100] = '\0';
    memcpy(t2, t1, sizeof t1);
    t1[2099] = '1';
    t2[2099] = '2';
    struct gl_error err = {0};
    struct gl_period sep, oct;
    gl_period_parse("2026-09", &sep);
    gl_period_parse("2026-10", &oct);
    CHECK(add_team_hour(&f, t1, "2026-09-10T00:00:00Z"));
    CHECK(add_team_hour(&f, t2, "2026-09-10T00:00:00Z"));
    CHECK(gl_period_close(f.cfg, f.s, f.prices, &sep, oct.start, &err) == GL_OK);
    CHECK(add_team_hour(&f, t2, "2026-09-10T01:00:00Z")); /* late, team 2 only */
    struct gl_invoice_set *set = NULL;
    bool frozen = true;
    CHECK(gl_period_invoices(f.cfg, f.s, f.prices, &oct, &set, &frozen, &err) == GL_OK);
    CHECK(set && set->n == 1);
    if (set && set->n == 1) {
        CHECK_STR(set->invoices[0].team, t2);
        const struct gl_invoice_line *l = correction(set);
        CHECK(l && l->mib_s == 3600000 && l->amount == 105);
        CHECK(strlen(set->invoices[0].invoice_id) == strlen("GL-2026-10-") + 2100);
    }
    gl_invoices_free(set);
    teardown(&f);
}

int main(void)
{
    RUN(test_corrections_long_team_ids);
    RUN(test_device_keeps_known_model);
    RUN(test_close_and_correct);
    return TAP_END();
}
