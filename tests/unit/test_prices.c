/* Unit tests: price table loading, errors and lookups (engine/base/price.c). */
#include "config.h"
#include "price.h"
#include "tap.h"
#include "timeutil.h"

static const char *good =
    "model_pattern,unit,price,currency,valid_from,valid_to,capacity_gb\n"
    "^NVIDIA A100-SXM4-80GB$,GB-Hours,0.05,USD,2026-01-01T00:00:00Z,2026-10-02T12:00:00Z,\n"
    "^NVIDIA A100-SXM4-80GB$,GB-Hours,0.06,USD,2026-10-02T12:00:00Z,,\n"
    "\"^NVIDIA H100.*$\",GPU-Hours,4.00,USD,2026-01-01T00:00:00Z,,80\n"
    "^Tesla T4$,GPU-Hours,0.35,USD,2026-01-01T00:00:00Z,,\n";

static struct gl_price_table *load(const char *text, struct gl_error *err)
{
    struct gl_price_table *t = NULL;
    gl_prices_load(tap_tmpfile("prices.csv", text), "USD", &t, err);
    return t;
}

static void test_load_and_find(void)
{
    struct gl_error err = {0};
    struct gl_price_table *t = load(good, &err);
    CHECK(t != NULL);
    if (!t) {
        printf("# %s\n", err.msg);
        return;
    }
    CHECK(t->n == 4);
    int64_t before, at;
    gl_time_parse("2026-10-02T11:00:00Z", &before);
    gl_time_parse("2026-10-02T12:00:00Z", &at);
    CHECK(gl_prices_find(t, "NVIDIA A100-SXM4-80GB", before) == 0);
    CHECK(gl_prices_find(t, "NVIDIA A100-SXM4-80GB", at) == 1); /* valid_to exclusive */
    CHECK(gl_prices_find(t, "NVIDIA A30", at) == -1);
    CHECK(gl_prices_check_model(t, "NVIDIA A100-SXM4-80GB", &err) == GL_OK);
    CHECK(strstr(t->entries[1].id, ":3") != NULL);
    gl_i128 p;
    CHECK(gl_price_per_gbh(t, &t->entries[2], "NVIDIA H100 80GB HBM3", 0, &p, &err) == GL_OK);
    CHECK(p == (gl_i128)50000000000LL); /* 4.00 / 80 = 0.05 */
    /* T4 GPU-Hours without capacity_gb: measured 15360 MiB = 16.10612736 GB */
    CHECK(gl_price_per_gbh(t, &t->entries[3], "Tesla T4", 15360, &p, &err) == GL_OK);
    /* 0.35 / 16.10612736 = 0.0217308600738... -> 12 decimals (Python Decimal) */
    char buf[64];
    gl_dec_format(p, 12, buf, sizeof buf);
    CHECK_STR(buf, "0.021730860074");
    CHECK(gl_price_per_gbh(t, &t->entries[3], "Tesla T4", 0, &p, &err) == GL_ERR_CONFIG);
    CHECK(strstr(err.msg, "capacity_gb") != NULL);
    gl_prices_free(t);
}

static void expect_error(const char *row, const char *needle)
{
    struct gl_error err = {0};
    char text[1024];
    snprintf(text, sizeof text,
             "model_pattern,unit,price,currency,valid_from,valid_to,capacity_gb\n"
             "^A$,GB-Hours,1,USD,2026-01-01T00:00:00Z,,\n%s\n",
             row);
    struct gl_price_table *t = load(text, &err);
    CHECK(t == NULL);
    CHECK(strstr(err.msg, "prices.csv:3") != NULL);
    if (!strstr(err.msg, needle)) {
        printf("# message \"%s\" lacks \"%s\"\n", err.msg, needle);
        tap_case_failed = 1;
    }
    gl_prices_free(t);
}

static void test_row_errors(void)
{
    expect_error("^B$,GB-Hours,1.2.3,USD,2026-01-01T00:00:00Z,,", "price");
    expect_error("^B$,GB-Hours,1,USD,2026-01-01T00:30:00Z,,", "valid_from");
    expect_error("^B$,GB-Hours,1,USD,yesterday,,", "valid_from");
    expect_error("^B$,GB-Hours,1,USD,2026-01-01T00:00:00Z,2025-01-01T00:00:00Z,", "valid_to");
    expect_error("^B$,GPU-Hour,1,USD,2026-01-01T00:00:00Z,,", "unit");
    expect_error("^B$,GB-Hours,1,EUR,2026-01-01T00:00:00Z,,", "currency");
    expect_error("^B($,GB-Hours,1,USD,2026-01-01T00:00:00Z,,", "model_pattern");
    expect_error("^B$,GB-Hours,1,USD", "fields");
    expect_error("^B$,GB-Hours,1,USD,2026-01-01T00:00:00Z,,0", "capacity_gb");
}

static void test_header_and_overlap(void)
{
    struct gl_error err = {0};
    struct gl_price_table *t = load("pattern,unit,price\n", &err);
    CHECK(t == NULL && strstr(err.msg, "header") != NULL);
    t = load("model_pattern,unit,price,currency,valid_from,valid_to\n"
             "A100,GB-Hours,1,USD,2026-01-01T00:00:00Z,,\n"
             "^NVIDIA A100,GB-Hours,2,USD,2026-06-01T00:00:00Z,2026-07-01T00:00:00Z\n",
             &err);
    CHECK(t != NULL);
    if (t) {
        CHECK(gl_prices_check_model(t, "NVIDIA A100-PCIE-40GB", &err) == GL_ERR_CONFIG);
        CHECK(strstr(err.msg, "rows 2 and 3") && strstr(err.msg, "NVIDIA A100-PCIE-40GB"));
        CHECK(gl_prices_check_model(t, "A100X", &err) == GL_OK); /* only row 2 matches */
    }
    gl_prices_free(t);
    t = load("model_pattern,unit,price,currency,valid_from,valid_to\n\"unterminated,GB-Hours\n",
             &err);
    CHECK(t == NULL);
}

static void test_config_entries(void)
{
    struct gl_error err = {0};
    struct gl_config *c = NULL;
    const char *ok =
        "{\"prometheus\": {\"url\": \"http://x\"}, \"billing\": {\"currency\": \"USD\"},"
        " \"prices\": {\"entries\": [{\"model_pattern\": \"^A$\", \"unit\": \"GB-Hours\","
        " \"price\": \"0.05\", \"currency\": \"USD\", \"valid_from\": \"2026-01-01T00:00:00Z\"},"
        " {\"model_pattern\": \"^B$\", \"unit\": \"GPU-Hours\", \"price\": \"4\","
        " \"currency\": \"USD\", \"valid_from\": \"2026-01-01T00:00:00Z\", \"capacity_gb\": \"80\"}]}}";
    CHECK(gl_config_load(tap_tmpfile("pcfg.json", ok), &c, &err) == GL_OK);
    struct gl_price_table *t = NULL;
    if (c) {
        CHECK(gl_prices_load_config(c, &t, &err) == GL_OK);
        CHECK(t && t->n == 2);
        if (t && t->n == 2) {
            CHECK_STR(t->entries[1].id, "config:2");
            CHECK(t->entries[1].has_capacity);
        }
    }
    gl_prices_free(t);
    gl_config_free(c);
    const char *num =
        "{\"prometheus\": {\"url\": \"http://x\"}, \"billing\": {\"currency\": \"USD\"},"
        " \"prices\": {\"entries\": [{\"model_pattern\": \"^A$\", \"unit\": \"GB-Hours\","
        " \"price\": 0.05, \"currency\": \"USD\", \"valid_from\": \"2026-01-01T00:00:00Z\"}]}}";
    c = NULL;
    CHECK(gl_config_load(tap_tmpfile("pcfg.json", num), &c, &err) == GL_ERR_CONFIG);
    CHECK(strstr(err.msg, "prices.entries[0].price") != NULL);
    const char *bad =
        "{\"prometheus\": {\"url\": \"http://x\"}, \"billing\": {\"currency\": \"USD\"},"
        " \"prices\": {\"entries\": [{\"model_pattern\": \"^A$\", \"unit\": \"GB-Hours\","
        " \"price\": \"1.2.3\", \"currency\": \"USD\", \"valid_from\": \"2026-01-01T00:00:00Z\"}]}}";
    c = NULL;
    CHECK(gl_config_load(tap_tmpfile("pcfg.json", bad), &c, &err) == GL_OK);
    if (c) {
        t = NULL;
        CHECK(gl_prices_load_config(c, &t, &err) == GL_ERR_CONFIG);
        CHECK(strstr(err.msg, "prices.entries[0]") && strstr(err.msg, "price"));
        gl_config_free(c);
    }
}

static void test_blank_lines_bom_crlf(void)
{
    struct gl_error err = {0};
    /* BOM, CRLF, a blank line: row numbers are line numbers */
    struct gl_price_table *t =
        load("\xef\xbb\xbfmodel_pattern,unit,price,currency,valid_from,valid_to\r\n"
             "^A$,GB-Hours,1,USD,2026-01-01T00:00:00Z,\r\n"
             "\r\n"
             "^B$,GB-Hours,2,USD,2026-01-01T00:00:00Z,\r\n",
             &err);
    CHECK(t != NULL);
    if (!t) {
        printf("# %s\n", err.msg);
        return;
    }
    CHECK(t->n == 2 && t->entries[1].row == 4);
    gl_prices_free(t);
    t = load("model_pattern,unit,price,currency,valid_from,valid_to\n"
             "^A$,GB-Hours,1,USD,2026-01-01T00:00:00Z,\n"
             "\n\n"
             "^B$,GB-Hours,1.2.3,USD,2026-01-01T00:00:00Z,\n",
             &err);
    CHECK(t == NULL && strstr(err.msg, "prices.csv:5:") != NULL);
}

static void test_price_bound(void)
{
    /* 340282366920938.463463374608 × 10^12 × 10^12 is 2^128 + a little: in
     * 128 bits the GPU-Hours conversion wrapped to a unit price of 0 */
    expect_error("^B$,GPU-Hours,340282366920938.463463374608,USD,2026-01-01T00:00:00Z,,80",
                 "below 10^14");
    expect_error("^B$,GPU-Hours,340282366920938463.463374607432,USD,2026-01-01T00:00:00Z,,",
                 "price");
    expect_error("^B$,GB-Hours,100000000000000,USD,2026-01-01T00:00:00Z,,", "too large");
    /* the largest price converts exactly (worked with Python fractions) */
    struct gl_error err = {0};
    struct gl_price_table *t =
        load("model_pattern,unit,price,currency,valid_from,valid_to,capacity_gb\n"
             "^B$,GPU-Hours,99999999999999.999999999999,USD,2026-01-01T00:00:00Z,,80\n"
             "^C$,GPU-Hours,99999999999999.999999999999,USD,2026-01-01T00:00:00Z,,\n",
             &err);
    CHECK(t != NULL);
    if (!t) {
        printf("# %s\n", err.msg);
        return;
    }
    gl_i128 p;
    CHECK(gl_price_per_gbh(t, &t->entries[0], "B", 0, &p, &err) == GL_OK);
    CHECK(p == (gl_i128)1250000000000 * 1000000000000); /* / 80 GB */
    CHECK(gl_price_per_gbh(t, &t->entries[1], "C", 81920, &p, &err) == GL_OK);
    CHECK(p == (gl_i128)1164153218269LL * 1000000000000 + 348144531250LL); /* / 85.89934592 GB */
    gl_prices_free(t);
}

int main(void)
{
    RUN(test_price_bound);
    RUN(test_blank_lines_bom_crlf);
    RUN(test_config_entries);
    RUN(test_load_and_find);
    RUN(test_row_errors);
    RUN(test_header_and_overlap);
    return TAP_END();
}
