/* Unit tests: exact decimal arithmetic (engine/base/money.c). */
#include "money.h"
#include "tap.h"

static const char *fmt(gl_i128 v, int scale)
{
    static char buf[8][80];
    static int k;
    k = (k + 1) % 8;
    gl_dec_format(v, scale, buf[k], sizeof buf[k]);
    return buf[k];
}

static void test_parse_decimal(void)
{
    gl_i128 v;
    CHECK(gl_dec_parse("0.05", 12, &v) && v == (gl_i128)50000000000LL);
    CHECK(gl_dec_parse("12", 2, &v) && v == 1200);
    CHECK(gl_dec_parse("4.000", 2, &v) && v == 400); /* trailing zeros beyond scale ok */
    CHECK(!gl_dec_parse("4.001", 2, &v));             /* more precision than kept */
    CHECK(!gl_dec_parse("1.2.3", 12, &v));
    CHECK(!gl_dec_parse("", 12, &v));
    CHECK(!gl_dec_parse("12.", 12, &v));
    CHECK(!gl_dec_parse(".5", 12, &v));
    CHECK(!gl_dec_parse("-1", 12, &v));
    CHECK(!gl_dec_parse("1e3", 12, &v));
    CHECK(!gl_dec_parse("0x10", 12, &v));
    CHECK(!gl_dec_parse("99999999999999999999999999999", 12, &v)); /* would overflow */
    CHECK(gl_dec_parse("999999999999999999", 12, &v) && v > 0);
}

static void test_half_even(void)
{
    CHECK(gl_div_half_even(5, 2) == 2);   /* 2.5 -> 2 */
    CHECK(gl_div_half_even(7, 2) == 4);   /* 3.5 -> 4 */
    CHECK(gl_div_half_even(-5, 2) == -2);
    CHECK(gl_div_half_even(-7, 2) == -4);
    CHECK(gl_div_half_even(26, 10) == 3);
    CHECK(gl_div_half_even(24, 10) == 2);
}

static void test_format(void)
{
    char b[80];
    CHECK_STR(fmt(12345, 2), "123.45");
    CHECK_STR(fmt(5, 2), "0.05");
    CHECK_STR(fmt(-5, 2), "-0.05");
    CHECK_STR(fmt(7, 0), "7");
    gl_dec_format_trim(1500, 3, b, sizeof b);
    CHECK_STR(b, "1.5");
    gl_dec_format_trim(2000, 3, b, sizeof b);
    CHECK_STR(b, "2");
    gl_dec_format_trim(0, 3, b, sizeof b);
    CHECK_STR(b, "0");
}

static void test_gb_hours(void)
{
    /* 1 GiB held for one hour = 1024 MiB × 3600 s = 1.073741824 GB-h */
    CHECK_STR(fmt(gl_gbh_nano(1024 * 3600), 9), "1.073741824");
    /* 1 MiB·s = 1048576 / 3.6e12 GB-h = 0.000000291 (half-even of 0.29127) */
    CHECK_STR(fmt(gl_gbh_nano(1), 9), "0.000000291");
}

static void test_amount(void)
{
    gl_i128 a, price;
    gl_dec_parse("0.05", 12, &price);
    /* 1000 MiB for 3 hours at 0.05/GB-h: 3.145728 GB-h -> 0.1572864 -> 0.16 */
    CHECK(gl_amount_minor(1000LL * 3 * 3600, price, 2, &a) && a == 16);
    /* 0.465661287308 × 1.073741824 GB-h = 0.500000000000 + 2.7e-13: rounds up */
    gl_dec_parse("0.465661287308", 12, &price);
    CHECK(gl_amount_minor(1024LL * 3600, price, 0, &a) && a == 1);
    gl_dec_parse("0.465661287307", 12, &price); /* just under one half */
    CHECK(gl_amount_minor(1024LL * 3600, price, 0, &a) && a == 0);
    /* 3 decimals currency */
    gl_dec_parse("2.5", 12, &price);
    CHECK(gl_amount_minor(1024LL * 3600, price, 3, &a) && a == 2684); /* 2.68435456 */
    CHECK(gl_amount_minor(1024LL * 3600, price, 0, &a) && a == 3);
}

static void test_largest_remainder(void)
{
    gl_i128 w[3] = {1, 1, 1}, p[3];
    CHECK(gl_split_largest_remainder(100, w, 3, p));
    CHECK(p[0] == 34 && p[1] == 33 && p[2] == 33); /* tie -> lowest index */
    gl_i128 w2[4] = {10, 0, 25, 65}, p2[4];
    CHECK(gl_split_largest_remainder(7, w2, 4, p2));
    CHECK(p2[0] + p2[1] + p2[2] + p2[3] == 7);
    CHECK(p2[1] == 0);
    CHECK(p2[0] == 1 && p2[2] == 2 && p2[3] == 4); /* 0.7,1.75,4.55 -> 0,1,4 + rems */
    gl_i128 w3[2] = {0, 0}, p3[2];
    CHECK(gl_split_largest_remainder(5, w3, 2, p3));
    CHECK(p3[0] == 5 && p3[1] == 0);
    gl_i128 w4[2] = {1, 3}, p4[2];
    CHECK(gl_split_largest_remainder(-10, w4, 2, p4));
    CHECK(p4[0] + p4[1] == -10);
}

static void test_checked(void)
{
    /* a split whose products pass 128 bits, or with a negative weight, fails */
    gl_i128 big = (gl_i128)1 << 100, w[2] = {(gl_i128)1 << 40, 1}, p[2];
    CHECK(!gl_split_largest_remainder(big, w, 2, p));
    gl_i128 wn[2] = {-1, 2};
    CHECK(!gl_split_largest_remainder(10, wn, 2, p));
    gl_i128 wm[2] = {(gl_i128)1 << 126, (gl_i128)1 << 126};
    CHECK(!gl_split_largest_remainder(1, wm, 2, p)); /* Σ weights = 2^127 */
    /* the largest int64 day split by int64 weights: exact */
    gl_i128 w64[2] = {INT64_MAX, INT64_MAX};
    CHECK(gl_split_largest_remainder(INT64_MAX, w64, 2, p));
    CHECK(p[0] + p[1] == INT64_MAX && p[0] == p[1] + 1);
    /* GB-hours of sums beyond int64 (128-bit accumulators) */
    gl_i128 k = (gl_i128)1 << 62;
    CHECK(gl_gbh_nano(k * 3600) == k * 1048576);
    /* an amount whose product passes 128 bits is refused, never wrapped */
    gl_i128 a;
    CHECK(!gl_amount_minor(INT64_MAX, (gl_i128)1000000000000 * 100000000000000, 2, &a));
    CHECK(gl_amount_minor(INT64_MAX, 50000000000LL, 2, &a)); /* 0.05 per GB-h */
    /* 9223372036854775807 × 2^20 / 3.6e12 GB-h × 0.05 = 134325091068.29213... */
    char buf[64];
    gl_dec_format(a, 2, buf, sizeof buf);
    CHECK_STR(buf, "134325091068.29");
}

static void test_currency(void)
{
    CHECK(gl_currency_minor_digits("USD") == 2);
    CHECK(gl_currency_minor_digits("JPY") == 0);
    CHECK(gl_currency_minor_digits("KWD") == 3);
    CHECK(gl_currency_minor_digits("usd") == -1);
    CHECK(gl_currency_minor_digits("US") == -1);
}

int main(void)
{
    RUN(test_checked);
    RUN(test_parse_decimal);
    RUN(test_half_even);
    RUN(test_format);
    RUN(test_gb_hours);
    RUN(test_amount);
    RUN(test_largest_remainder);
    RUN(test_currency);
    return TAP_END();
}
