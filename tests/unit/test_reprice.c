/* Unit tests: closed months keep their prices (engine/bill/reprice.c). A
 * database with team a's 1,000 MiB-h on GPU model M on 2026-09-10 and on
 * 2026-09-20 (12:00 each), September closed at 1.00 per GB-hour; then price
 * tables that change September's prices, or do not. */
#include <unistd.h>

#include "close.h"
#include "config.h"
#include "invoice.h"
#include "invoice_codec.h"
#include "price.h"
#include "reprice.h"
#include "store.h"
#include "tap.h"
#include "util.h"

#define H 3600LL

static struct gl_config *cfg;
static struct gl_store *st;
static struct gl_price_table *p_one; /* the table September was closed with */
static struct gl_period sep;
static int64_t d10, d20; /* UTC midnights of Sep 10 and Sep 20 */
static char db[512];

static const char header[] = "model_pattern,unit,price,currency,valid_from,valid_to\n";

/* A price table from rows (after the header). */
static struct gl_price_table *table(const char *name, const char *rows)
{
    char text[1024];
    snprintf(text, sizeof text, "%s%s", header, rows);
    struct gl_price_table *t = NULL;
    struct gl_error err = {0};
    if (gl_prices_load(tap_tmpfile(name, text), "USD", &t, &err))
        printf("# table %s: %s\n", name, err.msg);
    return t;
}

static bool add_hour(int64_t dev, int64_t hour, int64_t mib_h)
{
    struct gl_error err = {0};
    bool ok = gl_store_begin(st, &err) == GL_OK &&
              gl_store_add_usage(st, hour, "c1", "ns", "pa", dev, "a", "memory_used",
                                 mib_h * H, 0, hour, hour + 3540, &err) == GL_OK &&
              gl_store_mark_hour(st, "c1", hour, 60, 0, &err) == GL_OK &&
              gl_store_commit(st, &err) == GL_OK;
    if (!ok)
        printf("# add_hour: %s\n", err.msg);
    return ok;
}

static int64_t dev_id;

static bool setup(void)
{
    gl_period_parse("2026-09", &sep);
    d10 = sep.start + 9 * 86400;
    d20 = sep.start + 19 * 86400;
    p_one = table("rp-one.csv", "^M$,GB-Hours,1.00,USD,2026-01-01T00:00:00Z,\n");
    char text[1024];
    snprintf(text, sizeof text,
             "{\"prometheus\": {\"url\": \"http://127.0.0.1:1\"}, \"prices\": {\"file\": \"%s\"},"
             " \"billing\": {\"currency\": \"USD\"}, \"teams\": {\"default_cost_center\": \"x\"}}",
             p_one ? p_one->file : "none");
    snprintf(db, sizeof db, "%s", tap_tmpfile("reprice.db", ""));
    unlink(db);
    struct gl_error err = {0};
    struct gl_device_info d = {"c1", "GPU-1", "", "", "M", "n1", 10000, sep.start,
                               sep.end + 86400 * 90};
    int64_t now;
    gl_time_parse("2026-10-05T00:00:00Z", &now);
    if (!p_one || gl_config_load(tap_tmpfile("rp-cfg.json", text), &cfg, &err) ||
        gl_store_open(db, &st, &err) || gl_store_begin(st, &err) ||
        gl_store_device(st, &d, &dev_id, &err) || gl_store_commit(st, &err) ||
        !add_hour(dev_id, d10 + 12 * H, 1000) || !add_hour(dev_id, d20 + 12 * H, 1000) ||
        gl_period_close_force(cfg, st, p_one, &sep, now, true, &err)) {
        printf("# setup: %s\n", err.msg);
        return false;
    }
    return true;
}

static void teardown(void)
{
    gl_store_close(st);
    gl_prices_free(p_one);
    gl_config_free(cfg);
}

/* September's price changes under prices (its invoices rebuilt with them). */
static enum gl_status changes(const struct gl_price_table *prices, struct gl_reprice_list *l,
                              struct gl_error *err)
{
    struct gl_invoice_set *rec = NULL;
    memset(l, 0, sizeof *l);
    enum gl_status rc = gl_invoices_build(cfg, st, prices, &sep, &rec, err);
    if (!rc)
        rc = gl_reprice_changes(st, prices, sep.name, rec, l, err);
    gl_invoices_free(rec);
    return rc;
}

static void test_store_lists(void)
{
    char(*closed)[8] = NULL;
    size_t n = 0;
    struct gl_error err = {0};
    CHECK(gl_store_closed_periods(st, &closed, &n, &err) == GL_OK);
    CHECK(n == 1 && strcmp(closed[0], "2026-09") == 0);
    free(closed);
    /* September closed: October carries its corrections */
    struct gl_period *open = NULL;
    CHECK(gl_reprice_open_periods(st, &open, &n, &err) == GL_OK);
    CHECK(n == 1 && strcmp(open[0].name, "2026-10") == 0);
    free(open);
}

/* The same prices: no change. */
static void test_no_change(void)
{
    struct gl_reprice_list l;
    struct gl_error err = {0};
    CHECK(changes(p_one, &l, &err) == GL_OK && l.n == 0);
    gl_reprice_list_free(&l);
    /* the same rows in another file (other ids), and a row that prices no
     * hour of September: no change either */
    struct gl_price_table *t = table("rp-same.csv",
                                     "^Z$,GB-Hours,9,USD,2026-01-01T00:00:00Z,\n"
                                     "^M$,GB-Hours,1.000,USD,2026-01-01T00:00:00Z,\n");
    CHECK(t && changes(t, &l, &err) == GL_OK && l.n == 0);
    gl_reprice_list_free(&l);
    gl_prices_free(t);
}

/* A new unit price: one change per model-day with usage, ordered by day;
 * the refusal names both prices, the entry and the carrier month. */
static void test_new_price(void)
{
    struct gl_price_table *two = table("rp-two.csv", "^M$,GB-Hours,2.00,USD,2026-01-01T00:00:00Z,\n");
    struct gl_reprice_list l;
    struct gl_error err = {0};
    CHECK(two && changes(two, &l, &err) == GL_OK);
    CHECK(l.n == 2);
    if (l.n == 2) {
        const char *key = "^M$@2026-01-01T00:00:00Z";
        CHECK(l.c[0].day == d10 && l.c[1].day == d20);
        CHECK(strcmp(l.c[0].period, "2026-09") == 0 && strcmp(l.c[0].team, "a") == 0 &&
              strcmp(l.c[0].model, "M") == 0);
        CHECK(l.c[0].old_unit12 == (gl_i128)1000000000000LL &&
              l.c[0].new_unit12 == (gl_i128)2000000000000LL);
        CHECK(strcmp(l.c[0].old_key, key) == 0 && strcmp(l.c[0].new_key, key) == 0);
        CHECK(l.c[0].nkeys == 1 && strcmp(l.c[0].keys[0], key) == 0 &&
              strcmp(l.c[0].units[0], "2.000000000000") == 0);
        CHECK(gl_reprice_refuse(&l, "2026-10", &err) == GL_ERR_STATE);
        CHECK(strstr(err.msg, "closed period 2026-09: team \"a\", GPU model \"M\" on 2026-09-10: "
                              "unit price 1 per GB-hour (price entry ^M$@2026-01-01T00:00:00Z) "
                              "as frozen, 2 per GB-hour (price entry "
                              "^M$@2026-01-01T00:00:00Z) now") != NULL);
        CHECK(strstr(err.msg, "(and 1 more GPU model-day(s))") != NULL);
        CHECK(strstr(err.msg, "--reprice-closed") && strstr(err.msg, "correction lines of 2026-10"));
    }
    gl_reprice_list_free(&l);
    CHECK(l.n == 0 && l.c == NULL);
    gl_prices_free(two);
}

/* The same unit price from another entry from Sep 15: Sep 20 is priced by
 * an entry it was not frozen with (a change), Sep 10 is not. */
static void test_new_entry(void)
{
    struct gl_price_table *t = table("rp-split.csv",
                                     "^M$,GB-Hours,1.00,USD,2026-01-01T00:00:00Z,"
                                     "2026-09-15T00:00:00Z\n"
                                     "^M$,GB-Hours,1.00,USD,2026-09-15T00:00:00Z,\n");
    struct gl_reprice_list l;
    struct gl_error err = {0};
    CHECK(t && changes(t, &l, &err) == GL_OK);
    CHECK(l.n == 1 && l.c[0].day == d20 &&
          strcmp(l.c[0].old_key, "^M$@2026-01-01T00:00:00Z") == 0 &&
          strcmp(l.c[0].new_key, "^M$@2026-09-15T00:00:00Z") == 0 &&
          l.c[0].old_unit12 == l.c[0].new_unit12);
    gl_reprice_list_free(&l);
    gl_prices_free(t);
}

/* The check of every closed month: refused, accepted (the new prices held
 * from then on), the old table now refused in turn. */
static void test_closed_months(void)
{
    struct gl_price_table *two = table("rp-two.csv", "^M$,GB-Hours,2.00,USD,2026-01-01T00:00:00Z,\n");
    struct gl_error err = {0};
    size_t n = 99;
    int64_t now;
    gl_time_parse("2026-10-06T00:00:00Z", &now);
    CHECK(gl_reprice_closed_months(cfg, st, p_one, false, false, now, &n, &err) == GL_OK &&
          n == 0);
    CHECK(two && gl_reprice_closed_months(cfg, st, two, false, false, now, &n, &err) ==
                     GL_ERR_STATE);
    CHECK(strstr(err.msg, "2026-09-10") != NULL);
    CHECK(gl_store_begin(st, &err) == GL_OK);
    CHECK(gl_reprice_closed_months(cfg, st, two, true, false, now, &n, &err) == GL_OK && n == 2);
    CHECK(gl_store_commit(st, &err) == GL_OK);
    CHECK(gl_reprice_closed_months(cfg, st, two, false, false, now, &n, &err) == GL_OK && n == 0);
    struct gl_reprice_list l;
    CHECK(changes(two, &l, &err) == GL_OK && l.n == 0);
    gl_reprice_list_free(&l);
    /* the table September was closed with now differs from what was accepted */
    CHECK(changes(p_one, &l, &err) == GL_OK && l.n == 2 &&
          l.c[0].old_unit12 == (gl_i128)2000000000000LL &&
          l.c[0].new_unit12 == (gl_i128)1000000000000LL);
    gl_reprice_list_free(&l);
    gl_prices_free(two);
}

/* The fingerprint: the same inputs, the same figure; a price of the month
 * or its data changes it, a row that prices no hour of it does not; a
 * recorded check settles the month until then. */
static void test_fingerprint(void)
{
    gl_build_commit = "unit-test"; /* a known build: its checks are trusted */
    struct gl_price_table *later = table("rp-later.csv",
                                         "^M$,GB-Hours,1.00,USD,2026-01-01T00:00:00Z,\n"
                                         "^Z$,GB-Hours,5,USD,2027-01-01T00:00:00Z,\n");
    struct gl_price_table *three = table("rp-three.csv",
                                         "^M$,GB-Hours,3.00,USD,2026-01-01T00:00:00Z,\n");
    char a[GL_CLOSED_FP], b[GL_CLOSED_FP], c[GL_CLOSED_FP], d[GL_CLOSED_FP];
    struct gl_error err = {0};
    CHECK(gl_closed_fingerprint(cfg, st, p_one, &sep, a, &err) == GL_OK && strlen(a) == 16);
    CHECK(gl_closed_fingerprint(cfg, st, p_one, &sep, b, &err) == GL_OK && strcmp(a, b) == 0);
    CHECK(later && gl_closed_fingerprint(cfg, st, later, &sep, c, &err) == GL_OK &&
          strcmp(a, c) == 0);
    CHECK(three && gl_closed_fingerprint(cfg, st, three, &sep, d, &err) == GL_OK &&
          strcmp(a, d) != 0);
    /* settled only once checked and recorded, at these inputs */
    bool settled = true;
    CHECK(gl_closed_settled(cfg, st, p_one, &sep, &settled, &err) == GL_OK && !settled);
    size_t n = 0;
    int64_t now;
    gl_time_parse("2026-10-05T12:00:00Z", &now);
    CHECK(gl_store_begin(st, &err) == GL_OK);
    CHECK(gl_reprice_closed_months(cfg, st, p_one, false, true, now, &n, &err) == GL_OK);
    CHECK(gl_store_commit(st, &err) == GL_OK);
    CHECK(gl_closed_settled(cfg, st, p_one, &sep, &settled, &err) == GL_OK && settled);
    /* at other prices it is not */
    CHECK(gl_closed_settled(cfg, st, three, &sep, &settled, &err) == GL_OK && !settled);
    /* late data of September: another fingerprint, no longer settled */
    CHECK(add_hour(dev_id, d20 + 13 * H, 10));
    CHECK(gl_closed_fingerprint(cfg, st, p_one, &sep, b, &err) == GL_OK && strcmp(a, b) != 0);
    CHECK(gl_closed_settled(cfg, st, p_one, &sep, &settled, &err) == GL_OK && !settled);
    /* checked again: the late data are correction lines for October, so
     * the month is recorded but not settled (its corrections are pending) */
    CHECK(gl_store_begin(st, &err) == GL_OK);
    CHECK(gl_reprice_closed_months(cfg, st, p_one, false, true, now, &n, &err) == GL_OK);
    CHECK(gl_store_commit(st, &err) == GL_OK);
    CHECK(gl_closed_settled(cfg, st, p_one, &sep, &settled, &err) == GL_OK && !settled);
    gl_build_commit = "unknown";
    gl_prices_free(later);
    gl_prices_free(three);
}

/* The correction lines printed per team in the invoice's line format. */
static void test_print_corrections(void)
{
    struct gl_invoice_set *set = gl_xcalloc(1, sizeof *set);
    set->cfg = cfg;
    gl_period_parse("2026-10", &set->period);
    struct gl_invoice_line *l = gl_invoice_add_correction(set, "a|b", "c1", "M",
                                                          GL_LINE_MEMORY_USED,
                                                          &p_one->entries[0], "2026-09");
    l->amount = 105; /* 1.05 */
    l->qty_nano = 1048576000;
    gl_invoice_add_correction(set, "z", "c1", "M", GL_LINE_MEMORY_USED, &p_one->entries[0], "")
        ->amount = 1; /* a charged line: no correction of team z */
    struct gl_error err = {0};
    CHECK(gl_invoices_finish(set, &err) == GL_OK);
    char *text = NULL;
    size_t len = 0, nlines = 99;
    FILE *out = open_memstream(&text, &len);
    if (out) {
        gl_invoice_md_corrections(set, out, &nlines);
        fclose(out);
    }
    CHECK(nlines == 1);
    CHECK(text && strstr(text, "correction lines of 2026-10 for team `a\\|b` (invoice "
                               "GL-2026-10-a|b):") != NULL);
    /* 1.048576000 GB-h, 1.05 */
    CHECK(text && strstr(text, "| memory_used, correction of 2026-09 | 1.048576000 |") &&
          strstr(text, "| 1.05 |"));
    CHECK(text && !strstr(text, "team `z`"));
    free(text);
    gl_invoices_free(set);
}

int main(void)
{
    gl_log_threshold = GL_LOG_ERROR;
    tap_tmp_begin();
    if (!setup()) {
        printf("not ok - setup\n");
        return 1;
    }
    RUN(test_store_lists);
    RUN(test_no_change);
    RUN(test_new_price);
    RUN(test_new_entry);
    RUN(test_fingerprint); /* before any repricing is accepted */
    RUN(test_closed_months);
    RUN(test_print_corrections);
    teardown();
    tap_tmp_end();
    return TAP_END();
}
