/*
 * price — the price table (CSV read with libcsv, patterns with PCRE2).
 *
 * Header: model_pattern,unit,price,currency,valid_from,valid_to[,capacity_gb]
 * (docs/specification.md "Arithmetic"). Prices are decimal text kept exactly (×10^12). Rows match in
 * file order; two rows matching one model with overlapping validity are a
 * config error. Errors name the file and row.
 */
#ifndef GL_PRICE_H
#define GL_PRICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "money.h"

enum gl_price_unit { GL_PRICE_GB_HOURS, GL_PRICE_GPU_HOURS };

/* Prices are below 10^14 per unit (a config error otherwise), so that
 * price12 × 10^12 (the GPU-Hours conversion) fits 128 bits. */
#define GL_PRICE_MAX_DIGITS 14
#define GL_PRICE_MAX12 ((gl_i128)100000000000000 * 1000000000000)

struct gl_price_entry {
    int row;             /* CSV row, header = 1 */
    char *id;            /* "<basename>:<row>" */
    char *pattern;
    void *code;          /* pcre2_code * */
    enum gl_price_unit unit;
    gl_i128 price12;     /* price per unit × 10^12 */
    char *currency;
    int64_t valid_from;
    int64_t valid_to;    /* INT64_MAX when open */
    bool has_capacity;
    gl_i128 capacity_gb12; /* capacity_gb × 10^12 */
};

struct gl_price_table {
    char *file;
    struct gl_price_entry *entries;
    size_t n;
};

/* Loads path; every row's currency must equal currency. On success *out is
 * owned by the caller (gl_prices_free). */
enum gl_status gl_prices_load(const char *path, const char *currency,
                              struct gl_price_table **out, struct gl_error *err);
void gl_prices_free(struct gl_price_table *t);

/* Names t (file and row ids) as the file path it is about to be installed
 * as (`prices import`), so that what it prints is what is shown later. */
void gl_prices_rename(struct gl_price_table *t, const char *path);

/* The configured price table: prices.file, or prices.entries (whose errors
 * name "prices.entries[i]"). */
struct gl_config;
enum gl_status gl_prices_load_config(const struct gl_config *c, struct gl_price_table **out,
                                     struct gl_error *err);

/* Checks that no two rows matching model overlap in validity. */
enum gl_status gl_prices_check_model(const struct gl_price_table *t, const char *model,
                                     struct gl_error *err);

/* Index of the first row matching model and valid at instant t, or -1. */
int gl_prices_find(const struct gl_price_table *t, const char *model, int64_t t_at);

/* The capacity (GB × 10^12, 1 GB = 10^9 bytes) a GPU-Hours entry converts
 * with: the measured full-GPU capacity in MiB when known (usage is in the
 * same MiB, so a fully occupied GPU-hour costs the entry's price exactly),
 * else capacity_gb; neither = config error naming the row. */
enum gl_status gl_price_capacity_gb12(const struct gl_price_table *t,
                                     const struct gl_price_entry *e, const char *model,
                                     int64_t measured_capacity_mib, gl_i128 *out,
                                     struct gl_error *err);

/* True (msg filled) when e is GPU-Hours with a capacity_gb that differs from
 * the measured capacity of model by more than 2 %. */
bool gl_price_capacity_mismatch(const struct gl_price_table *t, const struct gl_price_entry *e,
                                const char *model, int64_t measured_capacity_mib, char *msg,
                                size_t n);

/* The entry's price per GB-hour × 10^12: GB-Hours as written; GPU-Hours
 * divided by the capacity above, rounded half-even to 12 decimals. */
enum gl_status gl_price_per_gbh(const struct gl_price_table *t, const struct gl_price_entry *e,
                                const char *model, int64_t measured_capacity_mib,
                                gl_i128 *out, struct gl_error *err);

/* Whether the entry matches model (its pattern). */
bool gl_price_matches(const struct gl_price_entry *e, const char *model);

/* The entry's identity across edits of the table (malloc'd):
 * "<pattern>@<valid_from>", the FOCUS SkuPriceId and the frozen rows' key. */
char *gl_price_key(const struct gl_price_entry *e);

/* The entry whose gl_price_key is key, or NULL. */
const struct gl_price_entry *gl_prices_by_key(const struct gl_price_table *t, const char *key);

#endif
