/*
 * money — exact fixed-point decimal arithmetic for quantities and prices.
 *
 * Quantities are integer MiB·s; prices are integers scaled by 10^12
 * (GL_PRICE_SCALE); amounts are integers in the currency's minor unit.
 * Everything uses 128-bit integers, never binary floating point.
 */
#ifndef GL_MONEY_H
#define GL_MONEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

__extension__ typedef __int128 gl_i128;

#define GL_PRICE_DECIMALS 12
#define GL_GBH_DECIMALS 9

/* Parses unsigned decimal text ("12", "0.05", "4.000") into value*10^scale.
 * False when malformed or when it has more significant decimals than scale. */
bool gl_dec_parse(const char *s, int scale, gl_i128 *out);

/* num/den rounded half to even; den > 0. */
gl_i128 gl_div_half_even(gl_i128 num, gl_i128 den);

/* Formats v/10^scale with exactly scale decimals (scale 0: no point). */
void gl_dec_format(gl_i128 v, int scale, char *buf, size_t n);
/* Same, trailing fractional zeros removed ("1.500" -> "1.5", "2.000" -> "2"). */
void gl_dec_format_trim(gl_i128 v, int scale, char *buf, size_t n);

/* 10^k for 0 <= k <= 38. */
gl_i128 gl_pow10(int k);

/* GB-hours ×10^9 of a MiB·s quantity (|mib_s| < 2^100: a sum of int64
 * figures), half-even. */
gl_i128 gl_gbh_nano(gl_i128 mib_s);

/* Amount in minor units of mib_s at price12 (per GB-hour ×10^12), half-even.
 * False on overflow. */
bool gl_amount_minor(int64_t mib_s, gl_i128 price12, int minor_digits, gl_i128 *out);

/* Splits total (>= 0 or < 0) into n parts proportional to weights (>= 0)
 * by floor shares plus largest remainder, ties to the lower index. When all
 * weights are 0 the whole goes to part 0. Parts always sum to total. False
 * (parts unusable) when a weight is negative or |total| × a weight or the
 * sum of the weights does not fit 128 bits. */
bool gl_split_largest_remainder(gl_i128 total, const gl_i128 *weights, size_t n,
                                gl_i128 *parts) __attribute__((warn_unused_result));

/* Minor-unit digits of an ISO 4217 code; -1 when not three A-Z letters. */
int gl_currency_minor_digits(const char *code);

#endif
