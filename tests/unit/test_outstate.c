/* Unit tests: what an output folder's period was last written from
 * (engine/run/outstate.c): the fingerprint's parts, each reason to rewrite,
 * the files' check, the known periods. */
#include <sys/stat.h>
#include <unistd.h>

#include "close.h"
#include "config.h"
#include "outstate.h"
#include "price.h"
#include "store.h"
#include "tap.h"
#include "util.h"

#define H 3600LL

static struct gl_config *cfg;
static struct gl_store *st;
static struct gl_price_table *prices;
static struct gl_period aug, sep, oct;
static char db[512], cfg_path[512], out_dir[512];
static int64_t dev;

static const char cfg_fmt[] =
    "{\"prometheus\": {\"url\": \"http://127.0.0.1:1\"}, \"prices\": {\"file\": \"%s\"},"
    " \"billing\": {\"currency\": \"USD\"}, \"teams\": {\"default_cost_center\": \"x\"}%s}";

static const char prices_one[] = "model_pattern,unit,price,currency,valid_from,valid_to\n"
                                 "^M$,GB-Hours,1.00,USD,2026-01-01T00:00:00Z,\n";

/* Writes the config file (with extra top-level keys) at cfg_path. */
static void write_config(const char *extra)
{
    char text[1024];
    snprintf(text, sizeof text, cfg_fmt, prices ? prices->file : "p.csv", extra);
    FILE *f = fopen(cfg_path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* One hour of usage of team a (one chunk: its data version moves). */
static bool hour(int64_t t, int64_t mib_h)
{
    struct gl_error err = {0};
    bool ok = gl_store_begin(st, &err) == GL_OK &&
              gl_store_add_usage(st, t, "c1", "ns", "p", dev, "a", "memory_used", mib_h * H, 0,
                                 t, t + 60, &err) == GL_OK &&
              gl_store_mark_hour(st, "c1", t, 60, 0, &err) == GL_OK &&
              gl_store_commit(st, &err) == GL_OK;
    if (!ok)
        printf("# hour: %s\n", err.msg);
    return ok;
}

static bool put_device(const char *model, int64_t cap)
{
    struct gl_device_info d = {"c1", "GPU-1", "", "", model, "n1", cap, aug.start, oct.end - 1};
    struct gl_error err = {0};
    bool ok = gl_store_begin(st, &err) == GL_OK && gl_store_device(st, &d, &dev, &err) == GL_OK &&
              gl_store_commit(st, &err) == GL_OK;
    if (!ok)
        printf("# put_device: %s\n", err.msg);
    return ok;
}

static bool setup(void)
{
    gl_period_parse("2026-08", &aug);
    gl_period_parse("2026-09", &sep);
    gl_period_parse("2026-10", &oct);
    struct gl_error err = {0};
    if (gl_prices_load(tap_tmpfile("os-prices.csv", prices_one), "USD", &prices, &err))
        return false;
    snprintf(cfg_path, sizeof cfg_path, "%s", tap_tmpfile("os-cfg.json", ""));
    write_config("");
    snprintf(db, sizeof db, "%s", tap_tmpfile("outstate.db", ""));
    unlink(db);
    snprintf(out_dir, sizeof out_dir, "%s", tap_tmpfile("os-out", ""));
    unlink(out_dir);
    if (gl_config_load(cfg_path, &cfg, &err) || gl_store_open(db, &st, &err) ||
        mkdir(out_dir, 0700) != 0) {
        printf("# setup: %s\n", err.msg);
        return false;
    }
    return put_device("M", 10000) && hour(oct.start + 5 * H, 100);
}

static void rm(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (unlink(path) != 0)
        rmdir(path);
}

static void teardown(void)
{
    char period_dir[600];
    snprintf(period_dir, sizeof period_dir, "%s/2026-10", out_dir);
    rm(period_dir, "a.csv");
    rm(period_dir, "invoices/x.json");
    rm(period_dir, "invoices");
    rmdir(period_dir);
    rmdir(out_dir);
    gl_store_close(st);
    gl_prices_free(prices);
    gl_config_free(cfg);
    unlink(cfg_path);
}

/* October's whole fingerprint now. */
static bool fp_now(struct gl_outstate_fp *fp)
{
    struct gl_error err = {0};
    memset(fp, 0, sizeof *fp);
    bool ok = gl_outstate_inputs(cfg, prices, fp, &err) == GL_OK &&
              gl_outstate_fingerprint(st, &oct, fp, &err) == GL_OK;
    if (!ok)
        printf("# fp_now: %s\n", err.msg);
    return ok;
}

/* The reason October's files in out_dir are to be written ("" = none). */
static const char *why_now(size_t *nfiles)
{
    static char why[512];
    struct gl_outstate_fp fp;
    struct gl_error err = {0};
    size_t n = 0;
    snprintf(why, sizeof why, "(failed)");
    if (fp_now(&fp) &&
        gl_outstate_check(st, out_dir, "2026-10", &fp, why, sizeof why, &n, &err) != GL_OK)
        snprintf(why, sizeof why, "(failed: %s)", err.msg);
    gl_outstate_fp_clear(&fp);
    if (nfiles)
        *nfiles = n;
    return why;
}

static bool write_file(const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/2026-10/%s", out_dir, rel);
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    fputs(text, f);
    return fclose(f) == 0;
}

/* Records October as written now with files. */
static bool record(const char *files)
{
    struct gl_outstate_fp fp;
    struct gl_error err = {0};
    bool ok = fp_now(&fp) &&
              gl_outstate_record(st, out_dir, "2026-10", &fp, files, &err) == GL_OK;
    gl_outstate_fp_clear(&fp);
    return ok;
}

/* The run-wide parts: the same inputs hash the same; any price field or
 * config byte, or another build, changes them. */
static void test_inputs(void)
{
    struct gl_outstate_fp a = {0}, b = {0};
    struct gl_error err = {0};
    CHECK(gl_outstate_inputs(cfg, prices, &a, &err) == GL_OK);
    CHECK(gl_outstate_inputs(cfg, prices, &b, &err) == GL_OK);
    CHECK(strlen(a.prices) == 16 && strlen(a.config) == 16);
    CHECK(strcmp(a.prices, b.prices) == 0 && strcmp(a.config, b.config) == 0);
    struct gl_price_table *other = NULL;
    CHECK(gl_prices_load(tap_tmpfile("os-prices.csv",
                                     "model_pattern,unit,price,currency,valid_from,valid_to\n"
                                     "^M$,GB-Hours,1.01,USD,2026-01-01T00:00:00Z,\n"),
                         "USD", &other, &err) == GL_OK);
    CHECK(other && gl_outstate_inputs(cfg, other, &b, &err) == GL_OK &&
          strcmp(a.prices, b.prices) != 0 && strcmp(a.config, b.config) == 0);
    gl_prices_free(other);
    tap_tmpfile("os-prices.csv", prices_one); /* as it was */
    /* one more byte of config */
    write_config(" ");
    CHECK(gl_outstate_inputs(cfg, prices, &b, &err) == GL_OK && strcmp(a.config, b.config) != 0);
    write_config("");
    gl_build_commit = "another";
    CHECK(gl_outstate_inputs(cfg, prices, &b, &err) == GL_OK && strcmp(a.config, b.config) != 0);
    gl_build_commit = "unknown";
    CHECK(gl_outstate_inputs(cfg, prices, &b, &err) == GL_OK && strcmp(a.config, b.config) == 0);
    /* the config file gone: an error saying what it was for */
    unlink(cfg_path);
    CHECK(gl_outstate_inputs(cfg, prices, &b, &err) != GL_OK &&
          strstr(err.msg, "hashing the config for the output state") != NULL);
    write_config("");
}

/* The period's parts: data version, devices, closed periods before it. */
static void test_fingerprint(void)
{
    struct gl_outstate_fp a, b;
    CHECK(fp_now(&a));
    CHECK(a.data_version == 1 && a.closed && strcmp(a.closed, "") == 0);
    /* another chunk of October */
    CHECK(hour(oct.start + 6 * H, 50));
    CHECK(fp_now(&b) && b.data_version == 2 && strcmp(a.devices, b.devices) == 0);
    gl_outstate_fp_clear(&b);
    /* the device's capacity is measured anew */
    CHECK(put_device("M", 10240));
    CHECK(fp_now(&b) && strcmp(a.devices, b.devices) != 0);
    gl_outstate_fp_clear(&b);
    gl_outstate_fp_clear(&a);
    CHECK(a.closed == NULL);
    /* August and September closed: both before October, newest first, with
     * their data versions (August 1 chunk, September 2) */
    CHECK(hour(aug.start + 3 * H, 10) && hour(sep.start + 3 * H, 10) &&
          hour(sep.start + 4 * H, 10));
    struct gl_error err = {0};
    int64_t now;
    gl_time_parse("2026-10-03T00:00:00Z", &now);
    CHECK(gl_period_close_force(cfg, st, prices, &aug, now, true, &err) == GL_OK);
    CHECK(fp_now(&b) && strcmp(b.closed, "") == 0); /* September open: the chain stops */
    gl_outstate_fp_clear(&b);
    CHECK(gl_period_close_force(cfg, st, prices, &sep, now, true, &err) == GL_OK);
    CHECK(fp_now(&b) && strcmp(b.closed, "2026-09:2 2026-08:1") == 0);
    gl_outstate_fp_clear(&b);
    /* late data of September: its version in the chain moves */
    CHECK(hour(sep.start + 5 * H, 10));
    CHECK(fp_now(&b) && strcmp(b.closed, "2026-09:3 2026-08:1") == 0);
    gl_outstate_fp_clear(&b);
}

/* Every reason to rewrite, in the order checked, then the files. */
static void test_check(void)
{
    size_t n = 9;
    CHECK_STR(why_now(&n), "never written to this folder");
    CHECK(n == 0);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/2026-10", out_dir);
    CHECK(mkdir(dir, 0700) == 0);
    snprintf(dir, sizeof dir, "%s/2026-10/invoices", out_dir);
    CHECK(mkdir(dir, 0700) == 0);
    CHECK(write_file("a.csv", "abc") && write_file("invoices/x.json", "{}\n"));
    CHECK(record("a.csv\t3\ninvoices/x.json\t3\n"));
    CHECK_STR(why_now(&n), "");
    CHECK(n == 2);
    /* a file of another size, then gone, then a folder in its place */
    CHECK(write_file("a.csv", "abcde"));
    CHECK_STR(why_now(NULL), "file changed: a.csv (5 bytes, 3 written)");
    CHECK(write_file("a.csv", "abc"));
    CHECK_STR(why_now(NULL), "");
    char path[700];
    snprintf(path, sizeof path, "%s/2026-10/invoices/x.json", out_dir);
    unlink(path);
    CHECK_STR(why_now(NULL), "file missing: invoices/x.json (No such file or directory)");
    CHECK(mkdir(path, 0700) == 0);
    CHECK_STR(why_now(NULL), "not a regular file: invoices/x.json");
    rmdir(path);
    CHECK(write_file("invoices/x.json", "{}\n"));
    /* a list without sizes */
    CHECK(record("a.csv\n"));
    CHECK_STR(why_now(NULL), "the recorded file list is malformed");
    CHECK(record("a.csv\t3\ninvoices/x.json\t3\n"));
    /* the inputs, each */
    CHECK(hour(oct.start + 7 * H, 1));
    CHECK(strncmp(why_now(NULL), "data changed (version ", 22) == 0);
    CHECK(record("a.csv\t3\n"));
    CHECK(put_device("M2", 10240));
    CHECK_STR(why_now(NULL), "devices changed");
    CHECK(record("a.csv\t3\n"));
    struct gl_price_table *keep = prices, *other = NULL;
    struct gl_error err = {0};
    CHECK(gl_prices_load(tap_tmpfile("os-other.csv",
                                     "model_pattern,unit,price,currency,valid_from,valid_to\n"
                                     "^M.*$,GB-Hours,1.00,USD,2026-01-01T00:00:00Z,\n"),
                         "USD", &other, &err) == GL_OK);
    prices = other;
    CHECK_STR(why_now(NULL), "price table changed");
    prices = keep;
    gl_prices_free(other);
    write_config("  ");
    CHECK_STR(why_now(NULL), "config or gpuledger version changed");
    write_config("");
    CHECK_STR(why_now(NULL), "");
    /* late data of a closed period before it: the chain changed */
    CHECK(hour(sep.start + 9 * H, 1));
    CHECK_STR(why_now(NULL),
              "closed periods before it changed ('2026-09:3 2026-08:1' -> '2026-09:4 2026-08:1')");
}

static void test_known_periods(void)
{
    char(*names)[8] = NULL;
    size_t n = 0;
    struct gl_error err = {0};
    CHECK(gl_outstate_known_periods(st, &names, &n, &err) == GL_OK);
    /* data in August, September (closed) and October, each once */
    CHECK(n == 3 && strcmp(names[0], "2026-08") == 0 && strcmp(names[1], "2026-09") == 0 &&
          strcmp(names[2], "2026-10") == 0);
    free(names);
}

int main(void)
{
    gl_log_threshold = GL_LOG_ERROR;
    tap_tmp_begin();
    if (!setup()) {
        printf("not ok - setup\n");
        return 1;
    }
    RUN(test_inputs);
    RUN(test_fingerprint);
    RUN(test_check);
    RUN(test_known_periods);
    teardown();
    tap_tmp_end();
    return TAP_END();
}
