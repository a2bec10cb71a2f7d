/* Unit tests: the period statement (engine/bill/statement.c) and the renderer
 * table (engine/render/render.c), on a database filled through the store API with
 * figures worked by hand: two teams on one GPU (capacity 10,000 MiB) for
 * one hour of 2026-10, 4,000 and 1,000 MiB used, 500 MiB driver-reserved,
 * the rest idle; price 1.00 per GB-hour; idle and overhead to "platform". */
#include <unistd.h>

#include "close.h"
#include "config.h"
#include "invoice.h"
#include "price.h"
#include "render.h"
#include "statement.h"
#include "store.h"
#include "tap.h"

#define S 3600LL

struct fixture {
    struct gl_config *cfg;
    struct gl_store *s;
    struct gl_price_table *prices;
    int64_t dev;
    struct gl_period oct;
};

static bool add(struct fixture *f, int64_t hour, const char *pod, const char *team,
                const char *kind, int64_t mib)
{
    struct gl_error err = {0};
    return gl_store_add_usage(f->s, hour, "c1", pod[0] ? "ns" : "", pod, f->dev, team, kind,
                              mib * S, 0, hour, hour + 3540, &err) == GL_OK;
}

static bool fill_hour(struct fixture *f, const char *when, int64_t used_a)
{
    int64_t h;
    gl_time_parse(when, &h);
    struct gl_error err = {0};
    bool ok = gl_store_begin(f->s, &err) == GL_OK && add(f, h, "pa", "a", "memory_used", used_a) &&
              add(f, h, "pb", "b", "memory_used", 1000) && add(f, h, "", "", "capacity", 10000) &&
              add(f, h, "", "", "reserved", 500) &&
              add(f, h, "", "", "idle", 10000 - used_a - 1000 - 500) &&
              add(f, h, "pb", "b", "anomaly_unallocated", 1000) &&
              gl_store_mark_hour(f->s, "c1", h, 60, 0, &err) == GL_OK &&
              gl_store_commit(f->s, &err) == GL_OK;
    if (!ok)
        printf("# fill_hour: %s\n", err.msg);
    return ok;
}

static bool setup(struct fixture *f)
{
    memset(f, 0, sizeof *f);
    char prices[512];
    snprintf(prices, sizeof prices, "%s",
             tap_tmpfile("st-prices.csv", "model_pattern,unit,price,currency,valid_from,valid_to\n"
                                          "^M$,GB-Hours,1.00,USD,2026-01-01T00:00:00Z,,\n"));
    char cfgtext[1024];
    snprintf(cfgtext, sizeof cfgtext,
             "{\"prometheus\": {\"url\": \"http://127.0.0.1:1\"}, \"prices\": {\"file\": \"%s\"},"
             " \"billing\": {\"currency\": \"USD\"}, \"idle_overhead\": {\"policy\": \"platform\","
             " \"platform_team\": \"platform\"}}",
             prices);
    struct gl_error err = {0};
    char db[512];
    snprintf(db, sizeof db, "%s", tap_tmpfile("statement.db", ""));
    unlink(db);
    gl_period_parse("2026-10", &f->oct);
    if (gl_config_load(tap_tmpfile("st-cfg.json", cfgtext), &f->cfg, &err) ||
        gl_store_open(db, &f->s, &err) ||
        gl_prices_load(f->cfg->prices_file, "USD", &f->prices, &err)) {
        printf("# setup: %s\n", err.msg);
        return false;
    }
    struct gl_device_info d = {"c1", "GPU-1", "", "", "M", "n1", 10000, f->oct.start,
                               f->oct.end - 1};
    return gl_store_device(f->s, &d, &f->dev, &err) == GL_OK &&
           fill_hour(f, "2026-10-02T05:00:00Z", 4000);
}

static void teardown(struct fixture *f)
{
    gl_prices_free(f->prices);
    gl_store_close(f->s);
    gl_config_free(f->cfg);
}

static const struct gl_invoice *invoice(const struct gl_statement *st, const char *team)
{
    long i = gl_statement_team(st, team);
    return i < 0 ? NULL : &st->set->invoices[i];
}

/* Every part from one build: invoices, fleet, anomalies, pages. */
static void test_build_all(void)
{
    struct fixture f;
    CHECK(setup(&f));
    struct gl_statement *st = NULL;
    struct gl_error err = {0};
    unsigned long before = gl_statement_builds;
    CHECK(gl_statement_build(f.cfg, f.s, f.prices, &f.oct, GL_ST_ALL, &st, &err) == GL_OK);
    CHECK(gl_statement_builds == before + 1);
    CHECK(st && !st->closed && st->set && st->set->n == 3); /* a, b, platform */
    const struct gl_invoice *a = st ? invoice(st, "a") : NULL;
    const struct gl_invoice *pl = st ? invoice(st, "platform") : NULL;
    CHECK(a && a->nlines == 1 && a->lines[0].kind == GL_LINE_MEMORY_USED &&
          a->lines[0].mib_s == 4000 * S);
    /* 4000 MiB·h = 4000 × 1048576 × 3600 B·s / 3600 / 10^9 = 4.194304 GB-h → 4.19 */
    CHECK(a && a->total == 419);
    /* platform: idle 4500 MiB-h (4.71859 GB-h) and overhead 500 MiB-h (0.524288) */
    CHECK(pl && pl->nlines == 2 && pl->lines[0].kind == GL_LINE_IDLE_SHARE &&
          pl->lines[0].mib_s == 4500 * S && pl->lines[1].kind == GL_LINE_OVERHEAD_SHARE &&
          pl->lines[1].mib_s == 500 * S);
    CHECK(st && st->anomalies.n == 1 && strcmp(st->anomalies.items[0].team, "b") == 0 &&
          st->anomalies.items[0].kind == GL_ANOMALY_UNALLOCATED_USE);
    CHECK(st && st->fleet.n == 1 && st->fleet.m[0].v[GL_F_CAP] == 10000 * S &&
          st->fleet.m[0].v[GL_F_USED] == 5000 * S && st->fleet.m[0].v[GL_F_IDLE] == 4500 * S);
    CHECK(st && st->fleet.ndev == 1 && !st->fleet.dev[0].unknown);
    CHECK(st && st->axis.n == 1 && st->teams);
    long ia = st ? gl_statement_team(st, "a") : -1;
    CHECK(ia >= 0 && st->teams[ia].used == 4000 * S && st->teams[ia].npods == 1);
    long ip = st ? gl_statement_team(st, "platform") : -1;
    CHECK(ip >= 0 && st->teams[ip].has_shares && st->teams[ip].idle_share == 4500 * S);
    gl_statement_free(st);
    teardown(&f);
}

/* Only the parts asked for. */
static void test_parts(void)
{
    struct fixture f;
    CHECK(setup(&f));
    struct gl_statement *st = NULL;
    struct gl_error err = {0};
    CHECK(gl_statement_build(NULL, f.s, NULL, &f.oct, GL_ST_FLEET, &st, &err) == GL_OK);
    CHECK(st && !st->set && st->anomalies.n == 0 && st->fleet.n == 1 && !st->teams);
    gl_statement_free(st);
    teardown(&f);
}

/* A closed period: its invoices loaded from the frozen figures (schema 007,
 * the texts checked and let go); its pages refused once later data
 * changed it (the page would disagree with the invoice finance holds). */
static void test_closed(void)
{
    struct fixture f;
    CHECK(setup(&f));
    struct gl_error err = {0};
    int64_t now;
    gl_time_parse("2026-11-05T00:00:00Z", &now);
    /* one hour collected: closed as it is (--force), the statement is the point */
    CHECK(gl_period_close_force(f.cfg, f.s, f.prices, &f.oct, now, true, &err) == GL_OK);
    struct gl_statement *st = NULL;
    CHECK(gl_statement_build(f.cfg, f.s, f.prices, &f.oct, GL_ST_INVOICES, &st, &err) == GL_OK);
    CHECK(st && st->closed && !st->from_texts && st->set && st->set->n == 3 &&
          st->set->closed_at == now && st->nfrozen == 0);
    CHECK(st && gl_render_count(st, GL_SCOPE_INVOICE) == 3);
    gl_statement_free(st);
    st = NULL;
    CHECK(gl_statement_build(f.cfg, f.s, f.prices, &f.oct, GL_ST_PAGES, &st, &err) == GL_OK);
    gl_statement_free(st);
    st = NULL;
    CHECK(fill_hour(&f, "2026-10-03T05:00:00Z", 2000));
    CHECK(gl_statement_build(f.cfg, f.s, f.prices, &f.oct, GL_ST_PAGES, &st, &err) ==
          GL_ERR_STATE);
    CHECK(!st && strstr(err.msg, "frozen total"));
    teardown(&f);
}

/* A renderer added after the close (not in the table, nothing frozen for
 * it): it reads only the statement, and a closed month's statement holds
 * the frozen figures, so it renders the closed month. */
static enum gl_status render_totals(const struct gl_statement *st, size_t i, FILE *out,
                                    struct gl_error *err)
{
    (void)i;
    (void)err;
    if (!st->set)
        return gl_error_set(err, GL_ERR_STATE, "no invoice set");
    fprintf(out, "%s %s\n", st->period.name, st->closed_at ? "final" : "draft");
    for (size_t k = 0; k < st->set->n; k++) {
        const struct gl_invoice *inv = &st->set->invoices[k];
        char total[64];
        gl_dec_format(inv->total, st->cfg->minor_digits, total, sizeof total);
        fprintf(out, "%s %s %s", inv->team, total, st->cfg->currency);
        for (size_t j = 0; j < inv->nlines; j++) {
            char a[64];
            gl_dec_format(inv->lines[j].amount, st->cfg->minor_digits, a, sizeof a);
            fprintf(out, " %s=%s", gl_line_kind_name(inv->lines[j].kind), a);
        }
        fputc('\n', out);
    }
    return GL_OK;
}

static void test_closed_new_renderer(void)
{
    struct fixture f;
    CHECK(setup(&f));
    struct gl_error err = {0};
    int64_t now;
    gl_time_parse("2026-11-05T00:00:00Z", &now);
    /* one hour collected: closed as it is (--force), the statement is the point */
    CHECK(gl_period_close_force(f.cfg, f.s, f.prices, &f.oct, now, true, &err) == GL_OK);
    /* the config changes after the close: the closed month keeps its own */
    free(f.cfg->currency);
    f.cfg->currency = strdup("EUR");
    struct gl_statement *st = NULL;
    CHECK(gl_statement_build(f.cfg, f.s, f.prices, &f.oct, GL_ST_INVOICES, &st, &err) == GL_OK);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    CHECK(st && out && render_totals(st, 0, out, &err) == GL_OK);
    if (out)
        fclose(out);
    /* by hand: GB-h = MiB × 1,048,576 / 10^9 for one hour, at 1.00 per GB-h:
     * a 4,000 MiB → 4.194304 → 4.19; b 1,000 → 1.048576 → 1.05; platform idle
     * 4,500 → 4.718592 → 4.72 and driver-reserved overhead 500 → 0.524288 → 0.52 */
    const char *want = "2026-10 final\n"
                       "a 4.19 USD memory_used=4.19\n"
                       "b 1.05 USD memory_used=1.05\n"
                       "platform 5.24 USD idle_share=4.72 overhead_share=0.52\n";
    CHECK(text && strcmp(text, want) == 0);
    if (text && strcmp(text, want) != 0)
        printf("# got:\n%s", text);
    free(text);
    gl_statement_free(st);
    teardown(&f);
}

/* Whether a and b are both NULL or the same string. */
static bool same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* The table: a name once per FOCUS version, a (command, format) once;
 * file names from the patterns. */
static void test_table(void)
{
    for (size_t i = 0; i < gl_nrenderers; i++)
        for (size_t j = i + 1; j < gl_nrenderers; j++) {
            const struct gl_renderer *a = &gl_renderers[i], *b = &gl_renderers[j];
            CHECK(strcmp(a->name, b->name) != 0 || a->focus != b->focus);
            CHECK(!a->command || !same(a->command, b->command) || !same(a->format, b->format));
        }
    CHECK(gl_renderer_find("report-html") && !gl_renderer_find("nope"));
    CHECK(gl_renderer_of("unit-cost", "csv") == gl_renderer_find("unit-cost-csv"));
    CHECK(gl_renderer_of("invoice", "csv") == NULL);
    CHECK(gl_renderer_of("report", "html") == NULL); /* report writes every page */
    const struct gl_renderer *f12 = gl_renderer_of("export", "1.2");
    const struct gl_renderer *f13 = gl_renderer_of("export", "1.3");
    CHECK(f12 && f12->focus == 12 && f12 == gl_renderer_focus("focus-csv", 12));
    CHECK(f13 && f13->focus == 13 && f13 == gl_renderer_focus("focus-csv", 13));
    CHECK(gl_renderer_focus("focus-metadata", 13) != NULL);
    const char *lists[][2] = {{"invoice", "json or md"}, {"unit-cost", "json, csv or md"},
                              {"export", "1.2 or 1.3"}, {"advise", "json or md"}};
    for (size_t k = 0; k < sizeof lists / sizeof *lists; k++) {
        struct gl_buf b;
        gl_buf_init(&b);
        CHECK(gl_renderer_formats(lists[k][0], &b));
        CHECK_STR(b.data, lists[k][1]);
        gl_buf_free(&b);
    }
    struct fixture f;
    CHECK(setup(&f));
    struct gl_statement *st = NULL;
    struct gl_error err = {0};
    CHECK(gl_statement_build(f.cfg, f.s, f.prices, &f.oct, GL_ST_ALL, &st, &err) == GL_OK);
    char *name = st ? gl_render_file_name(gl_renderer_find("invoice-json"), st, 0) : NULL;
    CHECK_STR(name, "invoice-2026-10-a.json");
    free(name);
    name = st ? gl_render_file_name(gl_renderer_find("fleet-md"), st, 0) : NULL;
    CHECK_STR(name, "fleet-2026-10.md");
    free(name);
    /* the FOCUS rows: each writes its own version's columns, whatever the
     * config's (1.2 here, what the tree and gl_render_text write) */
    CHECK(st && gl_render_focus_version(st) == 12);
    const struct {
        int version;
        const char *starts, *has;
    } focus[] = {
        {12, "BilledCost,BillingAccountId,", ",ProviderName,PublisherName,RegionId,"},
        {13, "AllocatedMethodDetails,AllocatedMethodId,", ",ServiceName,ServiceProviderName,"},
    };
    for (size_t k = 0; st && k < sizeof focus / sizeof *focus; k++) {
        char *text = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&text, &len);
        CHECK(out && gl_render_output(gl_renderer_focus("focus-csv", focus[k].version), st, 0,
                                      out, &err) == GL_OK);
        if (out)
            fclose(out);
        CHECK(text && strncmp(text, focus[k].starts, strlen(focus[k].starts)) == 0);
        const char *eol = text ? strstr(text, "\r\n") : NULL; /* the header's end */
        const char *hit = text ? strstr(text, focus[k].has) : NULL;
        CHECK(eol && hit && hit < eol);
        free(text);
    }
    char *dflt = st ? gl_render_text(st, "focus-csv", 0, &err) : NULL;
    CHECK(dflt && strncmp(dflt, "BilledCost,", 11) == 0);
    free(dflt);
    gl_statement_free(st);
    teardown(&f);
}

/* `invoice` without --out, of a month closed before its figures were
 * stored: the texts stored at close, read back into one document; a text
 * that is no JSON object is an error, never an invoice left out. */
static void test_invoices_from_texts(void)
{
    char ta[] = "a", tb[] = "b", ja[] = "{\n\t\"team\":\t\"a\"\n}", jb[] = "{\n\t\"team\":\t\"b\"\n}";
    char ma[] = "# a\n", mb[] = "# b\n", bad[] = "{\"team\": \"b\", truncated";
    struct gl_frozen_invoice texts[] = {{ta, ja, ma}, {tb, jb, mb}};
    struct gl_statement st = {.closed = true, .from_texts = true, .frozen = texts, .nfrozen = 2};
    gl_period_parse("2026-08", &st.period);
    const struct gl_renderer *json = gl_renderer_of("invoice", "json");
    const struct gl_renderer *md = gl_renderer_of("invoice", "md");
    char *text = NULL;
    size_t len = 0;
    struct gl_error err = {0};
    FILE *out = open_memstream(&text, &len);
    CHECK(out && json && gl_render_print(json, &st, NULL, out, &err) == GL_OK);
    CHECK(out && md && gl_render_print(md, &st, "b", out, &err) == GL_OK);
    if (out)
        fclose(out);
    CHECK_STR(text, "{\n\t\"period\":\t\"2026-08\",\n\t\"invoices\":\t[{\n\t\t\t\"team\":\t\"a\"\n"
                    "\t\t}, {\n\t\t\t\"team\":\t\"b\"\n\t\t}]\n}\n# b\n");
    free(text);
    texts[1].json = bad;
    out = fopen("/dev/null", "w");
    CHECK(out && gl_render_print(json, &st, NULL, out, &err) == GL_ERR_STATE);
    CHECK(strstr(err.msg, "team \"b\"") != NULL);
    if (out)
        fclose(out);
}

int main(void)
{
    RUN(test_build_all);
    RUN(test_parts);
    RUN(test_closed);
    RUN(test_closed_new_renderer);
    RUN(test_table);
    RUN(test_invoices_from_texts);
    return TAP_END();
}
