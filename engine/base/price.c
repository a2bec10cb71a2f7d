/* price — loading and looking up the price table. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "price.h"

#include "pattern.h"

#include <csv.h>
#include <inttypes.h>
#include <stdarg.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "timeutil.h"
#include "util.h"

#define NCOLS 7
static const char *const columns[NCOLS] = {"model_pattern", "unit",     "price",      "currency",
                                           "valid_from",    "valid_to", "capacity_gb"};

struct load_ctx {
    struct gl_price_table *t;
    const char *currency;
    char *fields[NCOLS + 1];
    size_t nfields;
    bool too_many;
    int row;      /* the line a record ends on (header = 1) */
    int line;     /* physical lines fed so far */
    bool entries; /* rows come from the config's prices.entries */
    bool header_seen;
    enum gl_status rc;
    struct gl_error *err;
    const char *base;
};

static void on_field(void *s, size_t len, void *data)
{
    struct load_ctx *x = data;
    if (x->nfields >= NCOLS) {
        x->too_many = true;
        return;
    }
    char *f = gl_xcalloc(len + 1, 1);
    memcpy(f, s, len);
    x->fields[x->nfields++] = f;
}

static enum gl_status row_fail(struct load_ctx *x, const char *col, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum gl_status row_fail(struct load_ctx *x, const char *col, const char *fmt, ...)
{
    struct gl_buf what;
    gl_buf_init(&what);
    va_list ap;
    va_start(ap, fmt);
    gl_buf_vprintf(&what, fmt, ap);
    va_end(ap);
    const char *w = what.data ? what.data : "";
    if (x->entries)
        x->rc = gl_error_set(x->err, GL_ERR_CONFIG, "%s: prices.entries[%d]: %s%s%s", x->t->file,
                             x->row - 2, col ? col : "", col ? ": " : "", w);
    else
        x->rc = gl_error_set(x->err, GL_ERR_CONFIG, "%s:%d: %s%s%s", x->t->file, x->row,
                             col ? col : "", col ? ": " : "", w);
    gl_buf_free(&what);
    return x->rc;
}

static bool whole_hour_time(const char *s, int64_t *out)
{
    return gl_time_parse(s, out) && *out % 3600 == 0;
}

static void parse_row(struct load_ctx *x)
{
    char **f = x->fields;
    if (!x->header_seen) {
        if (x->nfields == 1 && f[0][0] == '\0')
            return; /* blank lines before the header */
        x->header_seen = true;
        if (x->nfields < 6 || x->too_many)
            goto bad_header;
        for (size_t i = 0; i < x->nfields; i++)
            if (strcmp(f[i], columns[i]) != 0)
                goto bad_header;
        return;
    bad_header:
        row_fail(x, NULL, "the first line must be the header %s,%s,%s,%s,%s,%s[,%s]",
                 columns[0], columns[1], columns[2], columns[3], columns[4], columns[5],
                 columns[6]);
        return;
    }
    if (x->nfields == 1 && f[0][0] == '\0')
        return; /* blank line */
    if (x->too_many || x->nfields < 6) {
        row_fail(x, NULL, "expected 6 or 7 fields, got %s%zu", x->too_many ? "more than " : "",
                 x->too_many ? (size_t)NCOLS : x->nfields);
        return;
    }
    struct gl_price_entry e = {0};
    e.row = x->row;
    if (!f[0][0]) {
        row_fail(x, "model_pattern", "empty");
        return;
    }
    char why[256];
    size_t off;
    if (!(e.code = gl_pattern_compile(f[0], why, sizeof why, &off))) {
        row_fail(x, "model_pattern", "\"%s\": %s at offset %zu", f[0], why, off);
        return;
    }
    if (strcmp(f[1], "GB-Hours") == 0) {
        e.unit = GL_PRICE_GB_HOURS;
    } else if (strcmp(f[1], "GPU-Hours") == 0) {
        e.unit = GL_PRICE_GPU_HOURS;
    } else {
        row_fail(x, "unit", "\"%s\" is not GB-Hours or GPU-Hours", f[1]);
        goto fail;
    }
    if (!gl_dec_parse(f[2], GL_PRICE_DECIMALS, &e.price12)) {
        row_fail(x, "price", "\"%s\" is not a decimal number with at most %d decimals", f[2],
                 GL_PRICE_DECIMALS);
        goto fail;
    }
    if (e.price12 >= GL_PRICE_MAX12) {
        /* keeps the GPU-Hours conversion (× 10^12) inside 128 bits */
        row_fail(x, "price", "\"%s\" is too large: prices must be below 10^%d per unit", f[2],
                 GL_PRICE_MAX_DIGITS);
        goto fail;
    }
    if (strcmp(f[3], x->currency) != 0) {
        row_fail(x, "currency", "\"%s\" differs from billing.currency \"%s\"", f[3], x->currency);
        goto fail;
    }
    if (!whole_hour_time(f[4], &e.valid_from)) {
        row_fail(x, "valid_from", "\"%s\" is not an RFC 3339 UTC time on a whole hour", f[4]);
        goto fail;
    }
    e.valid_to = INT64_MAX;
    if (f[5][0] && !whole_hour_time(f[5], &e.valid_to)) {
        row_fail(x, "valid_to", "\"%s\" is not an RFC 3339 UTC time on a whole hour", f[5]);
        goto fail;
    }
    if (e.valid_to <= e.valid_from) {
        row_fail(x, "valid_to", "must be after valid_from");
        goto fail;
    }
    if (x->nfields == 7 && f[6][0]) {
        if (!gl_dec_parse(f[6], GL_PRICE_DECIMALS, &e.capacity_gb12) || e.capacity_gb12 == 0) {
            row_fail(x, "capacity_gb", "\"%s\" is not a positive decimal number", f[6]);
            goto fail;
        }
        e.has_capacity = true;
    }
    e.pattern = gl_strdup(f[0]);
    e.currency = gl_strdup(f[3]);
    struct gl_buf id;
    gl_buf_init(&id);
    bool id_ok = x->entries ? gl_buf_printf(&id, "config:%d", x->row - 1)
                            : gl_buf_printf(&id, "%s:%d", x->base, x->row);
    e.id = id_ok ? id.data : gl_strdup("");
    if (!id_ok)
        gl_buf_free(&id);
    struct gl_price_table *t = x->t;
    t->entries = gl_xrealloc(t->entries, (t->n + 1) * sizeof *t->entries);
    t->entries[t->n++] = e;
    return;
fail:
    pcre2_code_free(e.code);
}

static void on_row(int c, void *data)
{
    (void)c;
    struct load_ctx *x = data;
    x->row = x->entries ? x->row + 1 : x->line;
    if (x->row == 0)
        x->row = 1; /* a last line without newline */
    if (x->rc == GL_OK)
        parse_row(x);
    for (size_t i = 0; i < x->nfields; i++)
        free(x->fields[i]);
    x->nfields = 0;
    x->too_many = false;
}

enum gl_status gl_prices_load(const char *path, const char *currency,
                              struct gl_price_table **out, struct gl_error *err)
{
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    if (gl_read_file(path, &text, &len, err))
        return GL_ERR_CONFIG;
    struct gl_price_table *t = gl_xcalloc(1, sizeof *t);
    t->file = gl_strdup(path);
    const char *slash = strrchr(path, '/');
    struct load_ctx x = {.t = t, .currency = currency, .err = err, .base = slash ? slash + 1 : path};
    struct csv_parser p;
    csv_init(&p, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL);
    /* A UTF-8 byte order mark (spreadsheet exports) is not part of the header. */
    size_t off = len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
    /* Fed one physical line at a time so that a record's number is its line
     * number even with blank lines (libcsv skips those without a callback). */
    bool bad = false;
    while (off < len && !bad) {
        const char *nl = memchr(text + off, '\n', len - off);
        size_t n = nl ? (size_t)(nl - (text + off)) + 1 : len - off;
        x.line++;
        if (csv_parse(&p, text + off, n, on_field, on_row, &x) != n)
            bad = true;
        off += n;
    }
    if (bad || csv_fini(&p, on_field, on_row, &x) != 0) {
        if (x.rc == GL_OK)
            gl_error_set(err, GL_ERR_CONFIG, "%s:%d: %s", path, x.line,
                         csv_strerror(csv_error(&p)));
        x.rc = GL_ERR_CONFIG;
    }
    csv_free(&p);
    for (size_t i = 0; i < x.nfields; i++)
        free(x.fields[i]);
    free(text);
    if (x.rc == GL_OK && x.row == 0)
        x.rc = gl_error_set(err, GL_ERR_CONFIG, "%s: empty price table (no header)", path);
    if (x.rc) {
        gl_prices_free(t);
        return x.rc;
    }
    *out = t;
    return GL_OK;
}

void gl_prices_free(struct gl_price_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        struct gl_price_entry *e = &t->entries[i];
        GL_FREE_EACH(e->id, e->pattern, e->currency);
        pcre2_code_free(e->code);
    }
    GL_FREE_EACH(t->entries, t->file, t);
}

static bool matches(const struct gl_price_entry *e, const char *model)
{
    pcre2_code *code = e->code;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    if (!md)
        return false;
    int rc = pcre2_match(code, (PCRE2_SPTR)model, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    return rc >= 0;
}

enum gl_status gl_prices_check_model(const struct gl_price_table *t, const char *model,
                                     struct gl_error *err)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct gl_price_entry *a = &t->entries[i];
        if (!matches(a, model))
            continue;
        for (size_t j = i + 1; j < t->n; j++) {
            const struct gl_price_entry *b = &t->entries[j];
            if (b->valid_from < a->valid_to && a->valid_from < b->valid_to && matches(b, model)) {
                if (strncmp(a->id, "config:", 7) == 0)
                    return gl_error_set(err, GL_ERR_CONFIG,
                                        "%s: prices.entries[%d] and prices.entries[%d] both price "
                                        "GPU model \"%s\" over overlapping validity",
                                        t->file, a->row - 2, b->row - 2, model);
                return gl_error_set(err, GL_ERR_CONFIG,
                                    "%s: rows %d and %d both price GPU model \"%s\" over "
                                    "overlapping validity",
                                    t->file, a->row, b->row, model);
            }
        }
    }
    return GL_OK;
}

bool gl_price_matches(const struct gl_price_entry *e, const char *model)
{
    return matches(e, model);
}

char *gl_price_key(const struct gl_price_entry *e)
{
    char from[32];
    gl_time_format(e->valid_from, from, sizeof from);
    size_t n = strlen(e->pattern) + strlen(from) + 2;
    char *k = gl_xcalloc(n, 1);
    snprintf(k, n, "%s@%s", e->pattern, from);
    return k;
}

int gl_prices_find(const struct gl_price_table *t, const char *model, int64_t t_at)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct gl_price_entry *e = &t->entries[i];
        if (t_at >= e->valid_from && t_at < e->valid_to && matches(e, model))
            return (int)i;
    }
    return -1;
}

enum gl_status gl_price_capacity_gb12(const struct gl_price_table *t,
                                     const struct gl_price_entry *e, const char *model,
                                     int64_t measured_capacity_mib, gl_i128 *out,
                                     struct gl_error *err)
{
    /* measured first: usage is measured in the same MiB, so a fully occupied
     * GPU-hour is exactly one GPU-hour whatever the marketing name says */
    if (measured_capacity_mib > 0) {
        /* GB × 10^12 = bytes × 10^3 */
        *out = (gl_i128)measured_capacity_mib * 1048576 * 1000;
        return GL_OK;
    }
    if (e->has_capacity) {
        *out = e->capacity_gb12;
        return GL_OK;
    }
    return gl_error_set(err, GL_ERR_CONFIG,
                        "%s:%d: GPU-Hours price for \"%s\" needs a capacity: no full-GPU "
                        "capacity was measured for this model; set capacity_gb",
                        t->file, e->row, model);
}

bool gl_price_capacity_mismatch(const struct gl_price_table *t, const struct gl_price_entry *e,
                                const char *model, int64_t measured_capacity_mib, char *msg,
                                size_t n)
{
    if (e->unit != GL_PRICE_GPU_HOURS || !e->has_capacity || measured_capacity_mib <= 0)
        return false;
    gl_i128 m12 = (gl_i128)measured_capacity_mib * 1048576 * 1000;
    gl_i128 d = m12 > e->capacity_gb12 ? m12 - e->capacity_gb12 : e->capacity_gb12 - m12;
    /* more than 2 % of the measured capacity: d × 50 > m12 */
    if (d * 50 <= m12)
        return false;
    char cfg[80], meas[80], pct[32];
    gl_dec_format_trim(e->capacity_gb12, GL_PRICE_DECIMALS, cfg, sizeof cfg);
    gl_dec_format(gl_div_half_even(m12, 1000000000), 3, meas, sizeof meas);
    gl_dec_format(gl_div_half_even(d * 1000, m12), 1, pct, sizeof pct);
    snprintf(msg, n,
             "%s:%d: capacity_gb %s of the GPU-Hours price for \"%.200s\" differs by "
             "%s %% from the measured capacity %" PRId64 " MiB = %s GB (10^9 bytes); the "
             "measured capacity is used (remove capacity_gb or set it to %s)",
             t->file, e->row, cfg, model, pct, measured_capacity_mib,
             meas, meas);
    return true;
}

enum gl_status gl_price_per_gbh(const struct gl_price_table *t, const struct gl_price_entry *e,
                                const char *model, int64_t measured_capacity_mib,
                                gl_i128 *out, struct gl_error *err)
{
    if (e->unit == GL_PRICE_GB_HOURS) {
        *out = e->price12;
        return GL_OK;
    }
    gl_i128 cap12, num;
    enum gl_status rc = gl_price_capacity_gb12(t, e, model, measured_capacity_mib, &cap12, err);
    if (rc)
        return rc;
    /* price12 / capacity_gb = price12 × 10^12 / capacity_gb12 */
    if (__builtin_mul_overflow(e->price12, gl_pow10(12), &num))
        return gl_error_set(err, GL_ERR_CONFIG,
                            "%s:%d: GPU-Hours price for \"%s\" overflows 128 bits when "
                            "converted to a price per GB-hour",
                            t->file, e->row, model);
    *out = gl_div_half_even(num, cap12);
    return GL_OK;
}

enum gl_status gl_prices_load_config(const struct gl_config *c, struct gl_price_table **out,
                                     struct gl_error *err)
{
    if (c->prices_file)
        return gl_prices_load(c->prices_file, c->currency, out, err);
    *out = NULL;
    struct gl_price_table *t = gl_xcalloc(1, sizeof *t);
    t->file = gl_strdup(c->path);
    struct load_ctx x = {.t = t, .currency = c->currency, .err = err, .base = "config",
                         .entries = true, .header_seen = true, .row = 1};
    for (size_t i = 0; i < c->nprice_entries && x.rc == GL_OK; i++) {
        x.row = (int)i + 2;
        x.nfields = 7;
        for (int k = 0; k < 7; k++)
            x.fields[k] = gl_strdup(c->price_entries[i][k] ? c->price_entries[i][k] : "");
        parse_row(&x);
        for (int k = 0; k < 7; k++)
            free(x.fields[k]);
        x.nfields = 0;
    }
    if (x.rc) {
        gl_prices_free(t);
        return x.rc;
    }
    *out = t;
    return GL_OK;
}

void gl_prices_rename(struct gl_price_table *t, const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    free(t->file);
    t->file = gl_strdup(path);
    for (size_t i = 0; i < t->n; i++) {
        struct gl_price_entry *e = &t->entries[i];
        if (strncmp(e->id, "config:", 7) == 0)
            continue;
        size_t n = strlen(base) + 16;
        free(e->id);
        e->id = gl_xcalloc(n, 1);
        snprintf(e->id, n, "%s:%d", base, e->row);
    }
}

const struct gl_price_entry *gl_prices_by_key(const struct gl_price_table *t, const char *key)
{
    for (size_t i = 0; i < t->n; i++) {
        char *k = gl_price_key(&t->entries[i]);
        bool same = strcmp(k, key) == 0;
        free(k);
        if (same)
            return &t->entries[i];
    }
    return NULL;
}
