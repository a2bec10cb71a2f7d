/* Unit tests: the team and fleet pages (engine/render/report.c), rendered from a
 * statement built on a database filled through the store API. What is
 * stored, one hour (2026-10-02 05:00) on one GPU of model M, capacity
 * 10,000 MiB, price 1.00 USD per GB-hour, idle and overhead to "platform":
 *
 *   team HOSTILE (the id below), pod POD    memory_used 4,000 MiB
 *   team b, pod pb                          memory_used 1,000 MiB
 *   device                                  reserved 500, idle 4,500
 *
 * Figures by hand (GB-h = MiB-h × 1,048,576 / 10^9, one line each,
 * rounded half-even to cents):
 *   HOSTILE   4,000 → 4.194304 → 4.19
 *   b         1,000 → 1.048576 → 1.05
 *   platform  idle 4,500 → 4.718592 → 4.72, overhead 500 → 0.524288 → 0.52;
 *             total 5.24
 *   all invoices 4.19 + 1.05 + 5.24 = 10.48
 *   capacity 10,000 MiB-h → 10.48576 → "10.49" GB-hours */
#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "invoice.h"
#include "price.h"
#include "render.h"
#include "report.h"
#include "statement.h"
#include "store.h"
#include "tap.h"
#include "util.h"

#define S 3600LL

/* Label-derived strings are hostile input. */
#define HOSTILE "\"><svg onload=alert(1)>&x"
#define POD "<img src=x onerror=alert(2)>'"
/* The same, HTML-escaped by hand: " → &quot;, > → &gt;, < → &lt;, & → &amp;,
 * ' → &#39; */
#define HOSTILE_HTML "&quot;&gt;&lt;svg onload=alert(1)&gt;&amp;x"
#define POD_HTML "&lt;img src=x onerror=alert(2)&gt;&#39;"
/* Markdown-escaped by hand: a backslash before < > & */
#define HOSTILE_MD "\"\\>\\<svg onload=alert(1)\\>\\&x"

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
    if (gl_store_add_usage(f->s, hour, "c1", pod[0] ? "ns" : "", pod, f->dev, team, kind,
                           mib * S, 0, hour, hour + 3540, &err)) {
        printf("# add: %s\n", err.msg);
        return false;
    }
    return true;
}

static bool setup(struct fixture *f)
{
    memset(f, 0, sizeof *f);
    char prices[512], cfgtext[1024], db[512];
    snprintf(prices, sizeof prices, "%s",
             tap_tmpfile("rp-prices.csv", "model_pattern,unit,price,currency,valid_from,valid_to\n"
                                          "^M$,GB-Hours,1.00,USD,2026-01-01T00:00:00Z,\n"));
    snprintf(cfgtext, sizeof cfgtext,
             "{\"prometheus\": {\"url\": \"http://127.0.0.1:1\"}, \"prices\": {\"file\": \"%s\"},"
             " \"billing\": {\"currency\": \"USD\"}, \"idle_overhead\": {\"policy\": \"platform\","
             " \"platform_team\": \"platform\"}}",
             prices);
    snprintf(db, sizeof db, "%s", tap_tmpfile("report.db", ""));
    unlink(db);
    gl_period_parse("2026-10", &f->oct);
    struct gl_error err = {0};
    if (gl_config_load(tap_tmpfile("rp-cfg.json", cfgtext), &f->cfg, &err) ||
        gl_store_open(db, &f->s, &err) ||
        gl_prices_load(f->cfg->prices_file, "USD", &f->prices, &err)) {
        printf("# setup: %s\n", err.msg);
        return false;
    }
    struct gl_device_info d = {"c1", "GPU-1", "", "", "M", "n1", 10000, f->oct.start,
                               f->oct.end - 1};
    int64_t h;
    gl_time_parse("2026-10-02T05:00:00Z", &h);
    bool ok = gl_store_device(f->s, &d, &f->dev, &err) == GL_OK &&
              gl_store_begin(f->s, &err) == GL_OK && add(f, h, POD, HOSTILE, "memory_used", 4000) &&
              add(f, h, "pb", "b", "memory_used", 1000) && add(f, h, "", "", "capacity", 10000) &&
              add(f, h, "", "", "reserved", 500) && add(f, h, "", "", "idle", 4500) &&
              gl_store_mark_hour(f->s, "c1", h, 60, 0, &err) == GL_OK &&
              gl_store_commit(f->s, &err) == GL_OK;
    if (!ok)
        printf("# setup: %s\n", err.msg);
    return ok;
}

static void teardown(struct fixture *f)
{
    gl_prices_free(f->prices);
    gl_store_close(f->s);
    gl_config_free(f->cfg);
}

typedef enum gl_status (*page_fn)(const struct gl_statement *, size_t, FILE *,
                                  struct gl_error *);

/* One page into a malloc'd string (free()), NULL on failure. */
static char *page(page_fn fn, const struct gl_statement *st, size_t i)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return NULL;
    struct gl_error err = {0};
    enum gl_status rc = fn(st, i, out, &err);
    fclose(out);
    if (rc) {
        printf("# page: %s\n", err.msg);
        free(text);
        return NULL;
    }
    return text;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; hay && (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Every "<svg" of an HTML page opens one of the engine's charts; every
 * "<" of a Markdown page that is not the engine's own is escaped. */
static bool only_chart_svgs(const char *html)
{
    return html && count(html, "<svg") == count(html, "<svg class=\"chart\"");
}

static bool md_unescaped_lt(const char *md)
{
    for (const char *p = md; md && (p = strchr(p, '<')); p++)
        if (p == md || p[-1] != '\\')
            return true;
    return false;
}

static struct gl_statement *build(struct fixture *f)
{
    struct gl_statement *st = NULL;
    struct gl_error err = {0};
    if (gl_statement_build(f->cfg, f->s, f->prices, &f->oct, GL_ST_PAGES, &st, &err)) {
        printf("# build: %s\n", err.msg);
        return NULL;
    }
    return st;
}

/* The team page of the hostile id: escaped wherever it appears, its total
 * the invoice's, DRAFT while the period is open. */
static void test_team_html(void)
{
    struct fixture f;
    CHECK(setup(&f));
    struct gl_statement *st = build(&f);
    long i = st ? gl_statement_team(st, HOSTILE) : -1;
    CHECK(i >= 0);
    char *h = i >= 0 ? page(gl_report_team_html, st, (size_t)i) : NULL;
    CHECK(h != NULL);
    if (h) {
        CHECK(!strstr(h, "<svg onload") && !strstr(h, "<img") && !strstr(h, HOSTILE) &&
              !strstr(h, POD));
        CHECK(only_chart_svgs(h));
        CHECK(strstr(h, HOSTILE_HTML) != NULL);
        CHECK(strstr(h, "&amp;") && strstr(h, "&lt;") && strstr(h, "&quot;"));
        /* the title, the heading and the code span all carry the id */
        CHECK(count(h, HOSTILE_HTML) >= 3);
        /* the pod is in the top pods table */
        CHECK(strstr(h, POD_HTML) != NULL);
        /* 4,000 MiB-h → 4.194304 GB-h → 4.19 USD */
        CHECK(strstr(h, "id=\"invoice-total\">4.19</div><div class=\"u\">USD</div>") != NULL);
        CHECK(strstr(h, "<title>DRAFT GPU report — ") != NULL);
        CHECK(strstr(h, "<span class=\"status draft\">DRAFT</span>") != NULL);
        CHECK(!strstr(h, "FINAL"));
        CHECK(strstr(h, "</html>\n") != NULL);
    }
    /* the figure the page prints is the statement's invoice total (419 cents) */
    CHECK(i >= 0 && st->set->invoices[i].total == 419);
    free(h);
    gl_statement_free(st);
    teardown(&f);
}

/* Each team page's total is its own invoice's, for every team. */
static void test_team_totals(void)
{
    struct fixture f;
    CHECK(setup(&f));
    struct gl_statement *st = build(&f);
    CHECK(st && st->set && st->set->n == 3); /* HOSTILE, b, platform */
    /* by hand: b 1.05, platform 4.72 + 0.52 = 5.24 */
    const char *team[] = {"b", "platform"};
    const char *card[] = {"id=\"invoice-total\">1.05<", "id=\"invoice-total\">5.24<"};
    const int64_t cents[] = {105, 524};
    for (int k = 0; k < 2; k++) {
        long i = st ? gl_statement_team(st, team[k]) : -1;
        CHECK(i >= 0);
        if (i < 0)
            continue;
        CHECK(st->set->invoices[i].total == cents[k]);
        char *h = page(gl_report_team_html, st, (size_t)i);
        CHECK(h && strstr(h, card[k]));
        free(h);
        char *m = page(gl_report_team_md, st, (size_t)i);
        char line[64];
        snprintf(line, sizeof line, "**Total: %s USD**", k ? "5.24" : "1.05");
        CHECK(m && strstr(m, line) && strstr(m, "**DRAFT**"));
        free(m);
    }
    gl_statement_free(st);
    teardown(&f);
}

/* The Markdown twin escapes the id and the pod with backslashes. */
static void test_team_md(void)
{
    struct fixture f;
    CHECK(setup(&f));
    struct gl_statement *st = build(&f);
    long i = st ? gl_statement_team(st, HOSTILE) : -1;
    char *m = i >= 0 ? page(gl_report_team_md, st, (size_t)i) : NULL;
    CHECK(m != NULL);
    if (m) {
        CHECK(!md_unescaped_lt(m));
        CHECK(strstr(m, HOSTILE_MD) != NULL);
        CHECK(strstr(m, "\\<img src=x onerror=alert(2)\\>") != NULL);
        CHECK(strstr(m, "**Total: 4.19 USD**") != NULL);
        CHECK(strstr(m, "- Status: **DRAFT**") != NULL);
    }
    free(m);
    gl_statement_free(st);
    teardown(&f);
}

/* The fleet page: every team's label escaped (legend, bar titles, tables),
 * the total of all invoices, DRAFT. */
static void test_fleet(void)
{
    struct fixture f;
    CHECK(setup(&f));
    struct gl_statement *st = build(&f);
    char *h = st ? page(gl_report_fleet_html, st, 0) : NULL;
    CHECK(h != NULL);
    if (h) {
        CHECK(!strstr(h, "<svg onload") && !strstr(h, HOSTILE));
        CHECK(only_chart_svgs(h));
        CHECK(count(h, "<svg class=\"chart\"") == 1); /* one model: one chart */
        CHECK(strstr(h, HOSTILE_HTML) != NULL);
        CHECK(strstr(h, "&amp;") && strstr(h, "&lt;") && strstr(h, "&quot;"));
        /* 4.19 + 1.05 + 5.24 = 10.48 */
        CHECK(strstr(h, "id=\"fleet-total\">10.48</div>") != NULL);
        /* capacity 10,000 MiB-h = 10.48576 GB-h → 10.49 */
        CHECK(strstr(h, "<div class=\"k\">Capacity</div><div class=\"v\">10.49</div>") != NULL);
        /* billed 5,000 of 10,000 → 50.0 %; idle 4,500 → 45.0 %; overhead 500 → 5.0 % */
        CHECK(strstr(h, "GB-hours · 50.0% of capacity") && strstr(h, "GB-hours · 45.0% of capacity") &&
              strstr(h, "GB-hours · 5.0% of capacity"));
        CHECK(strstr(h, "<title>DRAFT GPU fleet — 2026-10</title>") != NULL);
        CHECK(strstr(h, "<span class=\"status draft\">DRAFT</span>") != NULL);
        /* the hostile team's report link: its safe file name, no raw quote */
        CHECK(strstr(h, "href=\"report-2026-10-___svg_onload_alert_1___x-") != NULL);
    }
    free(h);
    char *m = st ? page(gl_report_fleet_md, st, 0) : NULL;
    CHECK(m && !md_unescaped_lt(m) && strstr(m, HOSTILE_MD) &&
          strstr(m, "**All invoices: 10.48 USD**") && strstr(m, "- Status: **DRAFT**"));
    free(m);
    gl_statement_free(st);
    teardown(&f);
}

/* File names: a plain id as it is; the hostile one sanitized ('_' for
 * each of " > < space = ( ) > & and a hash suffix), never a '/'. */
static void test_file_names(void)
{
    char *n = gl_report_team_file("2026-10", "a", "html");
    CHECK_STR(n, "report-2026-10-a.html");
    free(n);
    n = gl_report_team_file("2026-10", HOSTILE, "md");
    /* "report-2026-10-" + "___svg_onload_alert_1___x" + "-" + 16 hex + ".md" */
    CHECK(n && strncmp(n, "report-2026-10-___svg_onload_alert_1___x-", 41) == 0 &&
          strlen(n) == 15 + 25 + 1 + 16 + 3 && strcmp(n + strlen(n) - 3, ".md") == 0 &&
          !strchr(n, '/'));
    free(n);
    n = gl_report_team_file("2026-10", "../../etc/passwd", "html");
    CHECK(n && !strchr(n, '/'));
    free(n);
}

/* gl_report_write: one html + md pair per team and the fleet pair, all in
 * DIR; a team without an invoice is a usage error. */
static void test_write(void)
{
    struct fixture f;
    CHECK(setup(&f));
    struct gl_statement *st = build(&f);
    char dir[600];
    snprintf(dir, sizeof dir, "%s", tap_tmpfile("reports", ""));
    unlink(dir);
    struct gl_error err = {0};
    CHECK(st && gl_report_write(st, NULL, dir, &err) == GL_OK);
    /* 3 teams × 2 + fleet × 2 = 8 files */
    size_t files = 0;
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.')
            files++;
    if (d)
        closedir(d);
    CHECK(files == 8);
    char p[800];
    struct stat sb;
    snprintf(p, sizeof p, "%s/fleet-2026-10.html", dir);
    CHECK(stat(p, &sb) == 0 && sb.st_size > 0);
    snprintf(p, sizeof p, "%s/report-2026-10-b.md", dir);
    CHECK(stat(p, &sb) == 0 && sb.st_size > 0);
    CHECK(st && gl_report_write(st, "nobody", dir, &err) == GL_ERR_USAGE);
    /* clean up the folder */
    char pat[700];
    snprintf(pat, sizeof pat, "%s/*", dir);
    glob_t g;
    if (glob(pat, 0, NULL, &g) == 0)
        for (size_t k = 0; k < g.gl_pathc; k++)
            unlink(g.gl_pathv[k]);
    globfree(&g);
    rmdir(dir);
    gl_statement_free(st);
    teardown(&f);
}

int main(void)
{
    gl_log_threshold = GL_LOG_ERROR;
    tap_tmp_begin();
    RUN(test_team_html);
    RUN(test_team_totals);
    RUN(test_team_md);
    RUN(test_fleet);
    RUN(test_file_names);
    RUN(test_write);
    tap_tmp_end();
    return TAP_END();
}
