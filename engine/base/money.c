/* money — exact decimal arithmetic on 128-bit integers. */
#include "money.h"

#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gl_i128 gl_pow10(int k)
{
    gl_i128 v = 1;
    for (int i = 0; i < k; i++)
        v *= 10;
    return v;
}

bool gl_dec_parse(const char *s, int scale, gl_i128 *out)
{
    gl_i128 v = 0;
    int frac = -1; /* digits after the point, -1 before the point */
    int ndigits = 0;
    if (!s || !*s)
        return false;
    for (const char *p = s; *p; p++) {
        if (*p == '.') {
            if (frac >= 0 || ndigits == 0)
                return false;
            frac = 0;
            continue;
        }
        if (*p < '0' || *p > '9')
            return false;
        if (frac >= 0) {
            if (frac >= scale) {
                if (*p != '0')
                    return false; /* more precision than we keep */
                continue;
            }
            frac++;
        }
        if (++ndigits > 30)
            return false;
        v = v * 10 + (*p - '0');
    }
    if (ndigits == 0 || frac == 0)
        return false; /* "" or "12." */
    int have = frac < 0 ? 0 : frac;
    if (ndigits + (scale - have) > 30)
        return false; /* beyond 10^30 scaled: no price or capacity is that large */
    *out = v * gl_pow10(scale - have);
    return true;
}

gl_i128 gl_div_half_even(gl_i128 num, gl_i128 den)
{
    bool neg = num < 0;
    if (neg)
        num = -num;
    gl_i128 q = num / den;
    gl_i128 r = num % den;
    gl_i128 twice = r * 2;
    if (twice > den || (twice == den && (q & 1)))
        q++;
    return neg ? -q : q;
}

static void u128_to_str(gl_i128 v, char *buf, size_t n)
{
    char tmp[64];
    int i = 0;
    do {
        tmp[i++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v > 0 && i < 60);
    size_t j = 0;
    while (i > 0 && j + 1 < n)
        buf[j++] = tmp[--i];
    buf[j] = '\0';
}

void gl_dec_format(gl_i128 v, int scale, char *buf, size_t n)
{
    bool neg = v < 0;
    if (neg)
        v = -v;
    gl_i128 p = gl_pow10(scale);
    char ip[64], fp[64];
    u128_to_str(v / p, ip, sizeof ip);
    if (scale == 0) {
        snprintf(buf, n, "%s%s", neg ? "-" : "", ip);
        return;
    }
    gl_i128 f = v % p;
    for (int i = scale - 1; i >= 0; i--) {
        fp[i] = (char)('0' + (int)(f % 10));
        f /= 10;
    }
    fp[scale] = '\0';
    snprintf(buf, n, "%s%s.%s", neg ? "-" : "", ip, fp);
}

void gl_dec_format_trim(gl_i128 v, int scale, char *buf, size_t n)
{
    gl_dec_format(v, scale, buf, n);
    if (scale == 0)
        return;
    size_t len = strlen(buf);
    while (len > 0 && buf[len - 1] == '0')
        buf[--len] = '\0';
    if (len > 0 && buf[len - 1] == '.')
        buf[--len] = '\0';
    if (strcmp(buf, "-0") == 0)
        strcpy(buf, "0");
}

gl_i128 gl_gbh_nano(gl_i128 mib_s)
{
    /* GB-h = MiB·s × 2^20 / (10^9 × 3600); ×10^9 → MiB·s × 2^20 / 3600. */
    return gl_div_half_even(mib_s * 1048576, 3600);
}

bool gl_amount_minor(int64_t mib_s, gl_i128 price12, int minor_digits, gl_i128 *out)
{
    /* amount = mib_s × 2^20 × (price12 / 10^12) / 3.6×10^12, in 10^-minor units */
    gl_i128 num;
    if (__builtin_mul_overflow((gl_i128)mib_s * 1048576, price12, &num))
        return false;
    /* Denominator 3.6e12 × 1e12 / 10^minor = 36 × 10^(23 - minor). */
    gl_i128 den = 36 * gl_pow10(23 - minor_digits);
    *out = gl_div_half_even(num, den);
    return true;
}

bool gl_split_largest_remainder(gl_i128 total, const gl_i128 *weights, size_t n,
                                gl_i128 *parts)
{
    if (n == 0)
        return true;
    bool neg = total < 0;
    gl_i128 t = neg ? -total : total;
    gl_i128 w = 0;
    for (size_t i = 0; i < n; i++)
        if (weights[i] < 0 || __builtin_add_overflow(w, weights[i], &w))
            return false;
    if (w == 0) {
        for (size_t i = 0; i < n; i++)
            parts[i] = 0;
        parts[0] = total;
        return true;
    }
    gl_i128 *rem = gl_xcalloc(n, sizeof *rem);
    gl_i128 given = 0;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        gl_i128 prod;
        ok = !__builtin_mul_overflow(t, weights[i], &prod);
        parts[i] = ok ? prod / w : 0;
        rem[i] = ok ? prod % w : 0;
        given += parts[i]; /* Σ floor(t × w_i / w) ≤ t */
    }
    gl_i128 left = ok ? t - given : 0; /* < n */
    while (left > 0) {
        size_t best = 0;
        gl_i128 best_rem = -1;
        for (size_t i = 0; i < n; i++)
            if (rem[i] > best_rem) {
                best_rem = rem[i];
                best = i;
            }
        parts[best]++;
        rem[best] = -1;
        left--;
    }
    free(rem);
    if (neg)
        for (size_t i = 0; i < n; i++)
            parts[i] = -parts[i];
    return ok;
}

int gl_currency_minor_digits(const char *code)
{
    if (!code || strlen(code) != 3)
        return -1;
    for (int i = 0; i < 3; i++)
        if (code[i] < 'A' || code[i] > 'Z')
            return -1;
    static const char *const zero[] = {"BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF",
                                       "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV",
                                       "XAF", "XOF", "XPF"};
    static const char *const three[] = {"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"};
    for (size_t i = 0; i < sizeof zero / sizeof *zero; i++)
        if (strcmp(code, zero[i]) == 0)
            return 0;
    for (size_t i = 0; i < sizeof three / sizeof *three; i++)
        if (strcmp(code, three[i]) == 0)
            return 3;
    return 2;
}
