/* Unit tests: closing a period, frozen figures and corrections
 * (engine/bill/close.c), on a database filled through the store API with
 * figures worked by hand. */
#include <unistd.h>

#include "close.h"
#include "config.h"
#include "invoice.h"
#include "invoice_codec.h"
#include "price.h"
#include "store.h"
#include "statement.h"
#include "store_sql.h"
#include "tap.h"

struct fixture {
    struct gl_config *cfg;
    struct gl_store *s;
    struct gl_price_table *prices;
    int64_t dev;
};

static bool setup_settle(struct fixture *f, int settle_hours)
{
    memset(f, 0, sizeof *f);
    char prices[512];
    snprintf(prices, sizeof prices, "%s",
             tap_tmpfile("prices.csv", "model_pattern,unit,price,currency,valid_from,valid_to\n"
                                       "^M$,GB-Hours,1.00,USD,2026-01-01T00:00:00Z,,\n"));
    char cfgtext[1024];
    snprintf(cfgtext, sizeof cfgtext,
             "{\"prometheus\": {\"url\": \"http://127.0.0.1:1\"}, \"prices\": {\"file\": \"%s\"},"
             " \"billing\": {\"currency\": \"USD\"}, \"idle_overhead\": {\"policy\": \"unbilled\"},"
             " \"close\": {\"settle_hours\": %d}}",
             prices, settle_hours);
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

static bool setup(struct fixture *f)
{
    return setup_settle(f, 48);
}

static void teardown(struct fixture *f)
{
    gl_prices_free(f->prices);
    gl_store_close(f->s);
    gl_config_free(f->cfg);
}

/* Closing with --force: the tests of corrections collect an hour or two,
 * not whole months (completeness has its own tests below). */
#define CLOSE(p, now) gl_period_close_force(f.cfg, f.s, f.prices, p, now, true, &err)

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
    CHECK(CLOSE(&sep, oct.start - 1) == GL_ERR_STATE);
    CHECK(CLOSE(&sep, oct.start) == GL_OK);
    CHECK(CLOSE(&sep, oct.start) == GL_ERR_STATE);
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
    CHECK(CLOSE(&oct, nov.start) == GL_OK);
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
    CHECK(CLOSE(&sep, oct.start) == GL_OK);
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

/* ---- completeness before close ---- */

/* Marks the hours [from, to) of cluster "default" collected, samples each
 * (0: the backend had no data). */
static bool mark(struct fixture *f, const char *from, const char *to, int64_t samples)
{
    int64_t a, b;
    struct gl_error err = {0};
    if (!gl_time_parse(from, &a) || !gl_time_parse(to, &b) || gl_store_begin(f->s, &err))
        return false;
    bool ok = true;
    for (int64_t h = a; ok && h < b; h += 3600)
        ok = gl_store_mark_hour(f->s, "default", h, samples, 0, &err) == GL_OK;
    if (ok)
        ok = gl_store_commit(f->s, &err) == GL_OK;
    else
        gl_store_rollback(f->s);
    return ok;
}

static int64_t at(const char *t)
{
    int64_t v = 0;
    gl_time_parse(t, &v);
    return v;
}

static bool closed_now(struct fixture *f, const char *period)
{
    bool closed = false;
    struct gl_error err = {0};
    return gl_period_is_closed(f->s, period, &closed, &err) == GL_OK && closed;
}

/* A month with an hole, a refused collection, hours with no data and a
 * collection short of the settle delay: refused (exit 7), naming each range;
 * closed once complete. */
static void test_close_needs_complete(void)
{
    struct fixture f;
    if (!setup(&f)) {
        CHECK(false);
        return;
    }
    struct gl_error err = {0};
    struct gl_period sep;
    gl_period_parse("2026-09", &sep);
    CHECK(add_hour(&f, "2026-09-10T00:00:00Z"));
    /* collected: all of September but 15T00-15T03, 05T00-05T02 with no data */
    CHECK(mark(&f, "2026-09-01T00:00:00Z", "2026-09-15T00:00:00Z", 60));
    CHECK(mark(&f, "2026-09-15T03:00:00Z", "2026-10-01T00:00:00Z", 60));
    CHECK(mark(&f, "2026-09-05T00:00:00Z", "2026-09-05T02:00:00Z", 0));
    int64_t late = at("2026-10-10T00:00:00Z");
    CHECK(gl_period_close(f.cfg, f.s, f.prices, &sep, late, &err) == GL_ERR_STATE);
    CHECK(strstr(err.msg, "period 2026-09 is not complete") != NULL);
    CHECK(strstr(err.msg, "cluster default: hours not collected 2026-09-15T00:00:00Z to "
                          "2026-09-15T03:00:00Z (3 h)") != NULL);
    /* nothing collected after the end, no watermark: the settle delay */
    CHECK(strstr(err.msg, "collection short of the settle delay 2026-10-01T00:00:00Z to "
                          "2026-10-03T00:00:00Z (48 h)") != NULL);
    CHECK(strstr(err.msg, "no data from the backend 2026-09-05T00:00:00Z to "
                          "2026-09-05T02:00:00Z (2 h)") != NULL);
    CHECK(strstr(err.msg, "--force") != NULL);
    CHECK(!closed_now(&f, "2026-09"));

    /* the hole collected; run's watermark 24 h past the end: still short */
    CHECK(mark(&f, "2026-09-15T00:00:00Z", "2026-09-15T03:00:00Z", 60));
    CHECK(gl_store_advance_watermark(f.s, "default", at("2026-10-02T00:00:00Z"), &err) == GL_OK);
    CHECK(gl_period_close(f.cfg, f.s, f.prices, &sep, late, &err) == GL_ERR_STATE);
    CHECK(strstr(err.msg, "not collected") == NULL);
    CHECK(strstr(err.msg, "short of the settle delay 2026-10-02T00:00:00Z to "
                          "2026-10-03T00:00:00Z (24 h)") != NULL);

    /* a refused collection of two hours (the shrink guard kept them) */
    CHECK(gl_store_note_refused(f.s, "default", at("2026-09-20T00:00:00Z"),
                                at("2026-09-20T02:00:00Z"), "shrink", late, &err) == GL_OK);
    /* the watermark past the settle delay; now before it: refused */
    CHECK(gl_store_advance_watermark(f.s, "default", at("2026-10-04T00:00:00Z"), &err) == GL_OK);
    CHECK(gl_period_close(f.cfg, f.s, f.prices, &sep, at("2026-10-02T12:00:00Z"), &err) ==
          GL_ERR_STATE);
    CHECK(strstr(err.msg, "short of the settle delay 2026-10-02T12:00:00Z to "
                          "2026-10-03T00:00:00Z (12 h)") != NULL);
    CHECK(strstr(err.msg, "hours whose last collection was refused or failed "
                          "2026-09-20T00:00:00Z to 2026-09-20T02:00:00Z (2 h)") != NULL);
    /* one refused hour stored again: the other still refuses */
    CHECK(mark(&f, "2026-09-20T00:00:00Z", "2026-09-20T01:00:00Z", 60));
    CHECK(gl_period_close(f.cfg, f.s, f.prices, &sep, late, &err) == GL_ERR_STATE);
    CHECK(strstr(err.msg, "refused or failed 2026-09-20T01:00:00Z to 2026-09-20T02:00:00Z (1 h)"));
    CHECK(strstr(err.msg, "settle") == NULL);
    CHECK(mark(&f, "2026-09-20T01:00:00Z", "2026-09-20T02:00:00Z", 60));
    CHECK(gl_period_close(f.cfg, f.s, f.prices, &sep, late, &err) == GL_OK);
    CHECK(closed_now(&f, "2026-09"));
    teardown(&f);
}

/* Hours collected by `collect` without a gap after the end stand for the
 * watermark; close.settle_hours 0 needs only the period's own hours. */
static void test_close_settle_by_hours(void)
{
    struct fixture f;
    if (!setup(&f)) {
        CHECK(false);
        return;
    }
    struct gl_error err = {0};
    struct gl_period sep;
    gl_period_parse("2026-09", &sep);
    CHECK(mark(&f, "2026-09-01T00:00:00Z", "2026-10-02T23:00:00Z", 60));
    int64_t late = at("2026-10-10T00:00:00Z");
    CHECK(gl_period_close(f.cfg, f.s, f.prices, &sep, late, &err) == GL_ERR_STATE);
    CHECK(strstr(err.msg, "settle delay 2026-10-02T23:00:00Z to 2026-10-03T00:00:00Z (1 h)"));
    CHECK(mark(&f, "2026-10-02T23:00:00Z", "2026-10-03T00:00:00Z", 0));
    CHECK(gl_period_close(f.cfg, f.s, f.prices, &sep, late, &err) == GL_OK);
    teardown(&f);

    CHECK(setup_settle(&f, 0));
    CHECK(mark(&f, "2026-09-01T00:00:00Z", "2026-10-01T00:00:00Z", 60));
    CHECK(gl_period_close(f.cfg, f.s, f.prices, &sep, sep.end, &err) == GL_OK);
    teardown(&f);
}

/* --force closes an incomplete month and freezes what was missing: loaded
 * back with the figures, in the JSON and Markdown invoice. */
static void test_close_force_records(void)
{
    struct fixture f;
    if (!setup(&f)) {
        CHECK(false);
        return;
    }
    struct gl_error err = {0};
    struct gl_period sep;
    gl_period_parse("2026-09", &sep);
    CHECK(add_hour(&f, "2026-09-10T00:00:00Z"));
    CHECK(mark(&f, "2026-09-01T00:00:00Z", "2026-09-11T00:00:00Z", 60));
    int64_t now = at("2026-10-01T06:00:00Z");
    CHECK(gl_period_close_force(f.cfg, f.s, f.prices, &sep, now, true, &err) == GL_OK);
    struct gl_statement *st = NULL;
    CHECK(gl_statement_build(f.cfg, f.s, f.prices, &sep, GL_ST_INVOICES, &st, &err) == GL_OK);
    CHECK(st && st->set && st->set->ngaps == 2);
    if (st && st->set && st->set->ngaps == 2) {
        const struct gl_gap *g = st->set->gaps;
        CHECK_STR(g[0].cluster, "default");
        CHECK(g[0].kind == GL_GAP_MISSING && g[0].from == at("2026-09-11T00:00:00Z") &&
              g[0].to == sep.end);
        /* nothing collected after the end: short from the end itself */
        CHECK(g[1].kind == GL_GAP_UNSETTLED && g[1].from == sep.end &&
              g[1].to == at("2026-10-03T00:00:00Z"));
        char *json = gl_invoice_json(st->set, &st->set->invoices[0]);
        CHECK(json && strstr(json, "\"incomplete_at_close\"") &&
              strstr(json, "\"kind\":\t\"missing\"") && strstr(json, "\"hours\":\t480"));
        free(json);
        char *md = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&md, &len);
        gl_invoice_markdown(st->set, &st->set->invoices[0], out);
        fclose(out);
        CHECK(md && strstr(md, "**Incomplete at close** (closed with --force): cluster default: "
                               "hours not collected 2026-09-11T00:00:00Z to "
                               "2026-10-01T00:00:00Z (480 h); collection short of the settle "
                               "delay 2026-10-01T00:00:00Z to 2026-10-03T00:00:00Z (48 h)"));
        free(md);
    }
    gl_statement_free(st);
    /* a month closed complete carries none */
    struct gl_period oct;
    gl_period_parse("2026-10", &oct);
    CHECK(mark(&f, "2026-09-11T00:00:00Z", "2026-11-03T00:00:00Z", 0));
    CHECK(gl_period_close(f.cfg, f.s, f.prices, &oct, at("2026-11-04T00:00:00Z"), &err) == GL_OK);
    st = NULL;
    CHECK(gl_statement_build(f.cfg, f.s, f.prices, &oct, GL_ST_INVOICES, &st, &err) == GL_OK);
    CHECK(st && st->set && st->set->ngaps == 0);
    gl_statement_free(st);
    teardown(&f);
}

/* A period never collected and not closed is refused, naming it and the
 * periods the database holds. */
static void test_period_held(void)
{
    struct fixture f;
    if (!setup(&f)) {
        CHECK(false);
        return;
    }
    struct gl_error err = {0};
    struct gl_period jan, sep;
    gl_period_parse("2025-01", &jan);
    gl_period_parse("2026-09", &sep);
    CHECK(gl_period_held(f.s, &jan, &err) == GL_ERR_STATE);
    CHECK(strstr(err.msg, "period 2025-01 has no collected hour") &&
          strstr(err.msg, "nothing has been collected yet"));
    CHECK(mark(&f, "2026-09-03T00:00:00Z", "2026-09-03T02:00:00Z", 0));
    CHECK(mark(&f, "2026-10-07T00:00:00Z", "2026-10-07T01:00:00Z", 60));
    CHECK(gl_period_held(f.s, &sep, &err) == GL_OK);
    CHECK(gl_period_held(f.s, &jan, &err) == GL_ERR_STATE);
    CHECK(strstr(err.msg, "period 2025-01") &&
          strstr(err.msg, "periods 2026-09 to 2026-10 (2026-09-03T00:00:00Z to "
                          "2026-10-07T01:00:00Z)"));
    teardown(&f);
}

int main(void)
{
    RUN(test_close_needs_complete);
    RUN(test_close_settle_by_hours);
    RUN(test_close_force_records);
    RUN(test_period_held);
    RUN(test_corrections_long_team_ids);
    RUN(test_device_keeps_known_model);
    RUN(test_close_and_correct);
    return TAP_END();
}
