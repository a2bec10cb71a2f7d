/* parse — Prometheus matrix JSON to series on the step grid, streaming;
 * instant vectors (gl_vector_parse) through the same state machine.
 *
 * The tokenizer (jsax.h: Boost.JSON's basic_parser) calls back for each
 * token; a small state machine (the response's shape is fixed, so one state
 * and a few counters suffice, no stack) checks the shape and writes labels
 * and values straight into the gl_matrix. The tokenizer itself refuses
 * invalid JSON, invalid UTF-8 in strings, trailing text and a second
 * document. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "parse.h"

#include <math.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jsax.h"
#include "timeutil.h"
#include "util.h"

const char *const gl_skip_names[GL_SKIP_N] = {"nan_inf", "negative", "out_of_bounds"};

/* 2^48 is far above any GPU's memory in MiB or bytes, and keeps
 * MiB × step × 3 sums inside int64 (the bound when no option gives one). */
#define DEFAULT_MAX 281474976710656.0

/* A finished metric's labels are packed in one allocation: the array, then
 * the strings (pack_labels); while a metric is being read each label has
 * its own (add_label). */
static bool packed(const struct gl_label *l, size_t n)
{
    return n && l[0].name == (char *)(l + n);
}

static bool labels_packed(const struct gl_series *s)
{
    return packed(s->labels, s->nlabels);
}

static void labels_free(struct gl_label *l, size_t n)
{
    for (size_t j = 0; !packed(l, n) && j < n; j++)
        free(l[j].name); /* the value shares the allocation */
    free(l);
}

void gl_matrix_free(struct gl_matrix *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nseries; i++) {
        labels_free(m->series[i].labels, m->series[i].nlabels);
        free(m->series[i].values);
    }
    free(m->series);
    memset(m, 0, sizeof *m);
}

int gl_series_cmp(const void *pa, const void *pb)
{
    const struct gl_series *a = pa, *b = pb;
    for (size_t i = 0; i < a->nlabels && i < b->nlabels; i++) {
        int d = strcmp(a->labels[i].name, b->labels[i].name);
        if (!d)
            d = strcmp(a->labels[i].value, b->labels[i].value);
        if (d)
            return d;
    }
    return (a->nlabels > b->nlabels) - (a->nlabels < b->nlabels);
}

static const char *label_of(const struct gl_label *l, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(l[i].name, name) == 0)
            return l[i].value[0] ? l[i].value : NULL;
    return NULL;
}

const char *gl_series_label(const struct gl_series *s, const char *name)
{
    return label_of(s->labels, s->nlabels, name);
}

const char *gl_sample_label(const struct gl_sample *s, const char *name)
{
    return label_of(s->labels, s->nlabels, name);
}

/* Where the parser is. Value states are named after their key. */
enum state {
    ST_START,       /* before the root object */
    ST_ROOT,        /* in the root object: a key or its end */
    ST_STATUS,      /* root values */
    ST_ERROR,
    ST_ERRTYPE,
    ST_ISPARTIAL,
    ST_DATA,        /* start of data */
    ST_WARNINGS,    /* start of warnings / infos */
    ST_INFOS,
    ST_WARNING,     /* in warnings: a string or the end */
    ST_INFO,
    ST_SKIP,        /* skipping a root value (VictoriaMetrics' stats) */
    ST_IN_DATA,     /* in data: a key or its end */
    ST_RESULTTYPE,
    ST_RESULT,      /* start of result */
    ST_IN_RESULT,   /* in result: a series or the end */
    ST_ITEM,        /* in a series: a key or its end */
    ST_METRIC,      /* start of metric */
    ST_IN_METRIC,   /* in metric: a label name or the end */
    ST_LABEL,       /* a label value */
    ST_VALUES,      /* start of values (an instant vector's value: its sample) */
    ST_IN_VALUES,   /* in values: a sample or the end */
    ST_TS,          /* a sample's timestamp */
    ST_VALUE,       /* a sample's value */
    ST_SAMPLE_END,  /* a sample's end */
    ST_DONE,        /* after the root object */
};

/* Keys seen in one object (duplicates are errors). */
enum {
    K_STATUS = 1 << 0, K_DATA = 1 << 1, K_WARNINGS = 1 << 2, K_INFOS = 1 << 3,
    K_ERROR = 1 << 4, K_ERRTYPE = 1 << 5, K_ISPARTIAL = 1 << 6, K_STATS = 1 << 7,
    K_RESULTTYPE = 1 << 8, K_RESULT = 1 << 9, K_METRIC = 1 << 10, K_VALUES = 1 << 11,
};

struct parser {
    bool vector;            /* an instant vector: "value", one sample per series */
    int64_t t_ms;           /* its current sample's instant, in milliseconds */
    const char *what;
    const struct gl_parse_opts *opts;
    struct gl_matrix *m;
    struct gl_error *err;
    bool failed;            /* err holds the reason */
    enum state st;
    unsigned root_keys, data_keys, item_keys;
    int skip_depth;
    size_t series_cap;      /* of m->series */
    size_t labels_cap;      /* of the current series' labels */
    struct gl_series *cur;  /* the current series */
    unsigned char *present; /* nsteps flags: a sample at this slot (current series) */
    size_t npresent;
    size_t nsample;         /* index of the sample in values, for messages */
    int64_t ts;             /* the current sample's instant */
    size_t slot;            /* its slot */
    char status[32];
    char error[512];
    char errtype[64];
    bool partial;
    size_t nbad_warnings;
    char bad_warning[512];
    struct gl_buf key;      /* the pending label name */
    size_t charged;         /* slots added to opts->slots_used */
    bool too_large;         /* failed on the memory budget */
};

/* Bounded, printable copy of n bytes (other bytes as \xNN). */
static void escape_n(const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0, i = 0;
    for (; i < n && k + 8 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\\')
            out[k++] = (char)ch;
        else
            k += (size_t)snprintf(out + k, cap - k, "\\x%02x", ch);
    }
    if (i < n)
        k += (size_t)snprintf(out + k, cap - k, "...");
    out[k] = '\0';
}

/* "result #N DCGM_FI_DEV_FB_USED{UUID="…",pod="…"}": the labels that
 * identify a series (all labels read so far when none of them is there). */
static void series_desc_of(const struct gl_series *s, size_t index, char *out, size_t n)
{
    static const char *const keys[] = {"cluster", "UUID", "GPU_I_ID", "device_uuid", "Hostname",
                                       "hostname", "node", "exported_namespace", "exported_pod",
                                       "namespace", "pod", "resource"};
    struct gl_buf b;
    gl_buf_init(&b);
    gl_buf_printf(&b, "result #%zu ", index);
    char v[200];
    const char *name = s ? gl_series_label(s, "__name__") : NULL;
    escape_n(name ? name : "series", strlen(name ? name : "series"), v, 100);
    gl_buf_printf(&b, "%s{", v);
    int k = 0;
    for (size_t i = 0; s && i < sizeof keys / sizeof *keys; i++) {
        const char *lv = gl_series_label(s, keys[i]);
        if (!lv)
            continue;
        escape_n(lv, strlen(lv), v, 100);
        gl_buf_printf(&b, "%s%s=\"%s\"", k++ ? "," : "", keys[i], v);
    }
    for (size_t i = 0; s && !k && i < s->nlabels && i < 6; i++) {
        if (strcmp(s->labels[i].name, "__name__") == 0)
            continue;
        char kn[100];
        escape_n(s->labels[i].name, strlen(s->labels[i].name), kn, sizeof kn);
        escape_n(s->labels[i].value, strlen(s->labels[i].value), v, 100);
        gl_buf_printf(&b, "%s%s=\"%s\"", i > 1 ? "," : "", kn, v);
    }
    gl_buf_puts(&b, "}");
    snprintf(out, n, "%s", b.data ? b.data : "");
    gl_buf_free(&b);
}

static void series_desc(const struct parser *p, char *out, size_t n)
{
    series_desc_of(p->cur, p->m->nseries ? p->m->nseries - 1 : 0, out, n);
}

static int fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records the first failure; returns 0 (the tokenizer: stop). */
static int fail(struct parser *p, const char *fmt, ...)
{
    if (!p->failed) {
        char msg[1536];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        gl_error_set(p->err, GL_ERR_PROM, "%s: %s", p->what, msg);
        p->failed = true;
    }
    return 0;
}

/* A failure inside a series: names the series (and the sample). */
static int fail_series(struct parser *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int fail_series(struct parser *p, const char *fmt, ...)
{
    char msg[1024], desc[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    series_desc(p, desc, sizeof desc);
    return fail(p, "%s: %s", desc, msg);
}

size_t gl_series_slots(size_t nsteps)
{
    /* the series' struct and the allocation headers of its values and
     * labels, rounded up to whole slots */
    return nsteps + (sizeof(struct gl_series) + 32 + 7) / 8;
}

/* Adds n slots to the unit's memory budget (opts); past it, the parse
 * fails with GL_ERR_TOO_LARGE naming the series where it ran out. */
static int charge(struct parser *p, size_t n)
{
    const struct gl_parse_opts *o = p->opts;
    if (!o || !o->slots_used)
        return 1;
    *o->slots_used += n;
    p->charged += n;
    if (*o->slots_used <= o->max_slots || p->failed)
        return 1;
    p->too_large = true;
    return fail(p, "response over the memory budget of %zu slots of 8 bytes (series and their "
                   "step values, all queries of the chunk together) after %zu series",
                o->max_slots, p->m->nseries);
}

/* The state that follows a finished value, by the object it belongs to. */
static void value_done(struct parser *p)
{
    switch (p->st) {
    case ST_STATUS: case ST_ERROR: case ST_ERRTYPE: case ST_ISPARTIAL: case ST_DATA:
    case ST_WARNINGS: case ST_INFOS: case ST_WARNING: case ST_INFO: case ST_SKIP:
    case ST_IN_DATA:
        p->st = ST_ROOT;
        break;
    case ST_RESULTTYPE: case ST_RESULT: case ST_IN_RESULT:
        p->st = ST_IN_DATA;
        break;
    case ST_METRIC: case ST_VALUES: case ST_IN_METRIC: case ST_IN_VALUES:
        p->st = ST_ITEM;
        break;
    case ST_LABEL:
        p->st = ST_IN_METRIC;
        break;
    default:
        break;
    }
}

static const char *state_place(const struct parser *p)
{
    switch (p->st) {
    case ST_START: return "the top level (expected an object)";
    case ST_STATUS: return "status (expected a string)";
    case ST_ERROR: return "error (expected a string)";
    case ST_ERRTYPE: return "errorType (expected a string)";
    case ST_ISPARTIAL: return "isPartial (expected true or false)";
    case ST_DATA: return "data (expected an object)";
    case ST_WARNINGS: return "warnings (expected an array of strings)";
    case ST_INFOS: return "infos (expected an array of strings)";
    case ST_WARNING: return "warnings[] (expected a string)";
    case ST_INFO: return "infos[] (expected a string)";
    case ST_RESULTTYPE: return "data.resultType (expected a string)";
    case ST_RESULT: return "data.result (expected an array)";
    case ST_IN_RESULT: return "data.result[] (expected a series object)";
    case ST_METRIC: return "metric (expected an object of label strings)";
    case ST_VALUES:
        return p->vector ? "value (expected a sample [timestamp, \"value\"])"
                         : "values (expected an array of samples)";
    case ST_IN_VALUES: return "values[] (expected a sample [timestamp, \"value\"])";
    case ST_TS: return "a sample's timestamp (expected [number, \"value\"])";
    case ST_VALUE: return "a sample's value (expected [timestamp, \"string\"])";
    case ST_SAMPLE_END: return "a sample (expected exactly [timestamp, \"value\"])";
    default: return "an unexpected place";
    }
}

static int unexpected(struct parser *p, const char *token)
{
    if (p->st >= ST_IN_VALUES && p->st <= ST_SAMPLE_END)
        return fail_series(p, "sample #%zu: unexpected %s at %s", p->nsample, token,
                           state_place(p));
    if (p->st >= ST_ITEM && p->st <= ST_VALUES)
        return fail_series(p, "unexpected %s at %s", token,
                           p->st == ST_ITEM && p->vector
                               ? "a series (expected \"metric\" and \"value\")"
                           : p->st == ST_ITEM ? "a series (expected \"metric\" and \"values\")"
                           : p->st == ST_IN_METRIC ? "metric (expected label names)"
                                                   : state_place(p));
    return fail(p, "unexpected %s at %s", token, state_place(p));
}

/* ---- values ---- */

/* Eight ASCII bytes (the first digit in the lowest byte) as a number
 * 0-99999999; false unless every byte is '0'-'9'. SWAR: a few
 * instructions for the eight, not a loop per digit. */
static inline bool eight_digits(uint64_t x, uint64_t *out)
{
    const uint64_t zeros = 0x3030303030303030ull, hi = 0xF0F0F0F0F0F0F0F0ull;
    /* a digit's high nibble is 3, also after adding 6 (a byte that carries
     * fails itself, so the carry hides nothing) */
    if ((x & hi) != zeros || ((x + 0x0606060606060606ull) & hi) != zeros)
        return false;
    x = (x & 0x0F0F0F0F0F0F0F0Full) * 2561 >> 8;
    x = (x & 0x00FF00FF00FF00FFull) * 6553601 >> 16;
    *out = (uint32_t)((x & 0x0000FFFF0000FFFFull) * 42949672960001ull >> 32);
    return true;
}

/* The value of s[0, n) when it is 1 to 16 digits '0'-'9'; false otherwise
 * (a sign, a point, an exponent, anything else: the callers' slow paths).
 * 9 to 16 digits (a Unix time has 10) are read as two overlapping words. */
static inline bool whole_digits(const char *s, size_t n, uint64_t *out)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n >= 9 && n <= 16) {
        const size_t k = n - 8; /* the leading digits, then the last 8 */
        uint64_t w, lo, hi;
        memcpy(&w, s, 8);
        memcpy(&lo, s + k, 8);
        /* the first k bytes right-aligned behind '0's */
        uint64_t x = k == 8 ? w : w << (8 * (8 - k)) | 0x3030303030303030ull >> (8 * k);
        if (!eight_digits(x, &hi) || !eight_digits(lo, &lo))
            return false;
        *out = hi * 100000000u + lo;
        return true;
    }
#endif
    if (n == 0 || n > 16)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

/* A Prometheus float: [+-]digits[.digits][(e|E)[+-]digits] (at least one
 * digit before the exponent), or NaN, Inf, +Inf, -Inf. No hex, no space,
 * no NUL, nothing after. Returns false when the text is malformed. */
static bool parse_value(const char *s, size_t n, double *out)
{
    if ((n == 3 && memcmp(s, "NaN", 3) == 0)) {
        *out = NAN;
        return true;
    }
    if ((n == 3 && memcmp(s, "Inf", 3) == 0) || (n == 4 && memcmp(s, "+Inf", 4) == 0)) {
        *out = INFINITY;
        return true;
    }
    if (n == 4 && memcmp(s, "-Inf", 4) == 0) {
        *out = -INFINITY;
        return true;
    }
    uint64_t v;
    if (n <= 15 && whole_digits(s, n, &v)) { /* the common case: exact without strtod */
        *out = (double)v; /* < 10^15 < 2^53: exact */
        return true;
    }
    size_t i = 0, digits = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        i++;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++, digits++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++, digits++;
    }
    if (digits == 0)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t ed = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++, ed++;
        if (ed == 0)
            return false;
    }
    if (i != n || n >= 512)
        return false;
    char buf[512];
    memcpy(buf, s, n);
    buf[n] = '\0';
    *out = strtod(buf, NULL); /* overflow gives ±HUGE_VAL = ±Inf: skipped */
    return true;
}

/* The slot of t, a whole timestamp of the text s[0, n), in the window;
 * fails the response when it is outside the window or off the grid. */
static int grid_slot(struct parser *p, const char *s, size_t n, int64_t t, size_t *slot)
{
    const struct gl_matrix *m = p->m;
    char raw[80], when[40];
    int64_t off = t - m->start;
    if (off < 0 || off >= (int64_t)m->nsteps * m->step) {
        char a[40], b[40];
        escape_n(s, n, raw, sizeof raw);
        gl_time_format(t, when, sizeof when);
        gl_time_format(m->start, a, sizeof a);
        gl_time_format(m->start + (int64_t)(m->nsteps - 1) * m->step, b, sizeof b);
        return fail_series(p, "sample at %s (%s) is outside the requested window %s to %s: "
                           "refusing the response", when, raw, a, b);
    }
    if (off % m->step) {
        char a[40];
        escape_n(s, n, raw, sizeof raw);
        gl_time_format(t, when, sizeof when);
        gl_time_format(m->start, a, sizeof a);
        return fail_series(p, "sample at %s (%s) is off the step grid (every %llds from %s): "
                           "refusing the response", when, raw, (long long)m->step, a);
    }
    *slot = (size_t)(off / m->step);
    return 1;
}

/* A timestamp (a JSON number, seconds, possibly with a fraction) to its
 * grid slot; fails the response when it is off the grid, outside the
 * window or seen before in the series. */
static int take_instant(struct parser *p, const char *s, size_t n);

static int take_ts(struct parser *p, const char *s, size_t n)
{
    if (p->vector)
        return take_instant(p, s, n);
    const struct gl_matrix *m = p->m;
    /* the messages' copies of the text and the time are made only on failure */
    char raw[80], when[40];
    uint64_t whole;
    int64_t t = 0;
    if (n <= 16 && whole_digits(s, n, &whole)) {
        t = (int64_t)whole; /* < 10^16 */
    } else {
        char buf[64];
        escape_n(s, n, raw, sizeof raw);
        if (n >= sizeof buf)
            return fail_series(p, "sample #%zu: timestamp %s is not a plausible Unix time",
                               p->nsample, raw);
        memcpy(buf, s, n);
        buf[n] = '\0';
        double d = strtod(buf, NULL);
        if (!(d > -1e15 && d < 1e15))
            return fail_series(p, "sample #%zu: timestamp %s is not a plausible Unix time",
                               p->nsample, raw);
        if (d != floor(d)) {
            char a[40];
            gl_time_format(m->start, a, sizeof a);
            return fail_series(p, "sample at %s is off the step grid (every %llds from %s): "
                               "refusing the response", raw, (long long)m->step, a);
        }
        t = (int64_t)d;
    }
    size_t slot = 0;
    if (p->npresent && t - p->ts == m->step && p->slot + 1 < m->nsteps)
        slot = p->slot + 1; /* the series' next step, the common case: no division */
    else if (!grid_slot(p, s, n, t, &slot))
        return 0;
    if (p->present[slot]) {
        escape_n(s, n, raw, sizeof raw);
        gl_time_format(t, when, sizeof when);
        return fail_series(p, "two samples at %s (%s): duplicate timestamp, refusing the "
                           "response", when, raw);
    }
    p->present[slot] = 1;
    p->npresent++;
    p->ts = t;
    p->slot = slot;
    return 1;
}

/* An instant vector's timestamp: the evaluation time, kept as it came (in
 * milliseconds, the backends' precision): a backend may move it from the
 * time asked (VictoriaMetrics' latency offset near now), so it is not
 * checked against a grid. */
static int take_instant(struct parser *p, const char *s, size_t n)
{
    uint64_t whole;
    if (n <= 16 && whole_digits(s, n, &whole) && whole < 1000000000000000ull) {
        p->t_ms = (int64_t)whole * 1000;
    } else {
        char buf[64], raw[80];
        double d = NAN;
        if (n < sizeof buf) {
            memcpy(buf, s, n);
            buf[n] = '\0';
            d = strtod(buf, NULL);
        }
        if (!(d > -1e15 && d < 1e15)) {
            escape_n(s, n, raw, sizeof raw);
            return fail_series(p, "sample #%zu: timestamp %s is not a plausible Unix time",
                               p->nsample, raw);
        }
        p->t_ms = llround(d * 1000);
    }
    p->slot = 0;
    return 1;
}

static void format_value(double x, char *out, size_t n)
{
    if (isnan(x))
        snprintf(out, n, "NaN");
    else if (isinf(x))
        snprintf(out, n, "%sInf", x > 0 ? "+" : "-");
    else {
        snprintf(out, n, "%.15g", x);
        if (strtod(out, NULL) != x)
            snprintf(out, n, "%.17g", x);
    }
}

static void note_skip(struct parser *p, enum gl_skip why, size_t slot, double x)
{
    struct gl_matrix *m = p->m;
    size_t k = m->bad_samples++;
    m->skipped[why]++;
    if (k >= sizeof m->bad / sizeof *m->bad)
        return;
    char v[40], when[40], desc[600];
    format_value(x, v, sizeof v);
    gl_time_format(m->start + (int64_t)slot * m->step, when, sizeof when);
    series_desc(p, desc, sizeof desc);
    snprintf(m->bad[k], sizeof m->bad[k], "%s: value \"%s\" at %s on %s", gl_skip_names[why], v,
             when, desc);
}

/* The end of a series: skips implausible values (by reason) and counts
 * the rest. The bound may depend on __name__, known only now. */
static int instant_done(struct parser *p);

static int series_done(struct parser *p)
{
    struct gl_series *s = p->cur;
    if (p->vector)
        return instant_done(p);
    if (!(p->item_keys & K_METRIC) || !(p->item_keys & K_VALUES))
        return fail_series(p, "a series needs both \"metric\" and \"values\"");
    const struct gl_parse_opts *o = p->opts;
    double max = o && o->max > 0 ? o->max : DEFAULT_MAX;
    if (o && o->max_name) {
        const char *name = gl_series_label(s, "__name__");
        if (name && strcmp(name, o->max_name) == 0)
            max = o->named_max;
    }
    bool any = o && o->any_finite;
    struct gl_matrix *m = p->m;
    for (size_t i = 0; p->npresent && i < m->nsteps; i++) {
        if (!p->present[i])
            continue;
        double x = s->values[i];
        int why = -1;
        if (!isfinite(x))
            why = GL_SKIP_NAN_INF;
        else if (x < 0 && !any)
            why = GL_SKIP_NEGATIVE;
        else if (x > max && !any)
            why = GL_SKIP_OUT_OF_BOUNDS;
        if (why >= 0) {
            note_skip(p, (enum gl_skip)why, i, x);
            s->values[i] = NAN;
            continue;
        }
        if (s->first_step < 0) {
            s->first_step = (int64_t)i;
            s->first_seen = m->start + (int64_t)i * m->step;
        }
        m->samples++;
    }
    return 1;
}

/* The end of an instant vector's series: its one sample is all there is
 * of it, so a value that cannot be used (NaN, ±Inf) refuses the response
 * rather than dropping the series unseen. */
static int instant_done(struct parser *p)
{
    struct gl_series *s = p->cur;
    if (!(p->item_keys & K_METRIC) || !(p->item_keys & K_VALUES))
        return fail_series(p, "a series needs both \"metric\" and \"value\"");
    double x = s->values[0];
    if (!isfinite(x)) {
        char v[40], when[40];
        format_value(x, v, sizeof v);
        gl_time_format(p->t_ms / 1000 - (p->t_ms % 1000 < 0), when, sizeof when);
        return fail_series(p, "%s: value \"%s\" at %s: refusing the response",
                           gl_skip_names[GL_SKIP_NAN_INF], v, when);
    }
    s->first_seen = p->t_ms; /* handed to the gl_sample (vector_take) */
    s->first_step = 0;
    p->m->samples++;
    return 1;
}

/* ---- labels ---- */

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One allocation for the labels of a series (the array, then every name
 * and value), in place of one per label and a grown array: a large
 * response has millions of labels, and each allocation costs its header. */
static void pack_labels(struct gl_series *s)
{
    if (!s->nlabels || labels_packed(s))
        return;
    size_t bytes = s->nlabels * sizeof *s->labels;
    for (size_t i = 0; i < s->nlabels; i++)
        bytes += strlen(s->labels[i].name) + strlen(s->labels[i].value) + 2;
    struct gl_label *l = malloc(bytes);
    if (!l)
        return; /* stays as it is, freed label by label */
    char *at = (char *)(l + s->nlabels);
    for (size_t i = 0; i < s->nlabels; i++) {
        size_t kn = strlen(s->labels[i].name) + 1, vn = strlen(s->labels[i].value) + 1;
        l[i].name = memcpy(at, s->labels[i].name, kn);
        l[i].value = memcpy(at + kn, s->labels[i].value, vn);
        at += kn + vn;
        free(s->labels[i].name);
    }
    free(s->labels);
    s->labels = l;
}

/* The slots of a series' labels (the array and the text). */
static size_t label_slots(const struct gl_series *s)
{
    size_t bytes = s->nlabels * sizeof *s->labels;
    for (size_t i = 0; i < s->nlabels; i++)
        bytes += strlen(s->labels[i].name) + strlen(s->labels[i].value) + 2;
    return (bytes + 7) / 8;
}

/* At the end of metric: a label name given twice is an error. */
static int labels_done(struct parser *p)
{
    const struct gl_series *s = p->cur;
    const char *dup = NULL;
    if (s->nlabels <= 16) {
        for (size_t i = 0; !dup && i < s->nlabels; i++)
            for (size_t j = 0; !dup && j < i; j++)
                if (strcmp(s->labels[i].name, s->labels[j].name) == 0)
                    dup = s->labels[i].name;
    } else {
        char **names = gl_xcalloc(s->nlabels, sizeof *names);
        for (size_t i = 0; i < s->nlabels; i++)
            names[i] = s->labels[i].name;
        gl_sort(names, s->nlabels, sizeof *names, cmp_names);
        for (size_t i = 1; !dup && i < s->nlabels; i++)
            if (strcmp(names[i - 1], names[i]) == 0)
                dup = names[i];
        free(names);
    }
    if (dup) {
        char d[200];
        escape_n(dup, strlen(dup), d, sizeof d);
        return fail_series(p, "label \"%s\" appears twice in metric", d);
    }
    pack_labels(p->cur);
    return charge(p, label_slots(p->cur));
}

static int add_label(struct parser *p, const char *v, size_t vn)
{
    char k[200]; /* the name as messages show it: made only on failure */
    if (memchr(v, '\0', vn)) {
        escape_n(p->key.data ? p->key.data : "", p->key.len, k, sizeof k);
        return fail_series(p, "label \"%s\" has a NUL character in its value", k);
    }
    /* U+D800..U+DFFF encoded (a lone surrogate's \u escape, which the tokenizer
     * refuses itself; kept for any other path) is not UTF-8 */
    for (size_t i = 0; i + 1 < vn; i++)
        if ((unsigned char)v[i] == 0xed && (unsigned char)v[i + 1] >= 0xa0) {
            escape_n(p->key.data ? p->key.data : "", p->key.len, k, sizeof k);
            return fail_series(p, "label \"%s\": value is not valid UTF-8 (a UTF-16 surrogate)",
                               k);
        }
    struct gl_series *s = p->cur;
    /* one slot is always spare: labels + nlabels is then inside the array,
     * never a label's own allocation (labels_packed) */
    if (s->nlabels + 1 >= p->labels_cap) {
        p->labels_cap = p->labels_cap ? 2 * p->labels_cap : 16;
        s->labels = gl_xrealloc(s->labels, p->labels_cap * sizeof *s->labels);
    }
    size_t kn = p->key.len;
    char *mem = malloc(kn + vn + 2);
    if (!mem)
        return fail(p, "out of memory");
    memcpy(mem, p->key.data ? p->key.data : "", kn);
    mem[kn] = '\0';
    memcpy(mem + kn + 1, v, vn);
    mem[kn + 1 + vn] = '\0';
    s->labels[s->nlabels].name = mem;
    s->labels[s->nlabels].value = mem + kn + 1;
    s->nlabels++;
    return 1;
}

/* ---- the tokenizer's callbacks (jsax.h) ---- */

/* The structural tokens. */
enum token { TK_START_MAP, TK_END_MAP, TK_START_ARRAY, TK_END_ARRAY };

/* A token while skipping a value (ST_SKIP): an opening one (depth +1), a
 * closing one (-1) or a scalar (0); the skipped value is done when it
 * closes its outermost level, or is a scalar at the top. */
static int skip_token(struct parser *p, int depth)
{
    p->skip_depth += depth;
    if (depth <= 0 && p->skip_depth == 0)
        value_done(p);
    return 1;
}

/* The structural tokens that only move the parser to another state. */
static const struct {
    enum state from;
    enum token tok;
    enum state to;
} moves[] = {
    {ST_START, TK_START_MAP, ST_ROOT},         {ST_DATA, TK_START_MAP, ST_IN_DATA},
    {ST_METRIC, TK_START_MAP, ST_IN_METRIC},   {ST_ROOT, TK_END_MAP, ST_DONE},
    {ST_IN_DATA, TK_END_MAP, ST_ROOT},         {ST_WARNINGS, TK_START_ARRAY, ST_WARNING},
    {ST_INFOS, TK_START_ARRAY, ST_INFO},       {ST_RESULT, TK_START_ARRAY, ST_IN_RESULT},
    {ST_IN_VALUES, TK_START_ARRAY, ST_TS},
};

/* Token t skipped or moved by the table: 1; -1 when it is neither (the
 * caller's own states then). */
static int move_token(struct parser *p, enum token t)
{
    if (p->st == ST_SKIP)
        return skip_token(p, t == TK_START_MAP || t == TK_START_ARRAY ? 1 : -1);
    for (size_t i = 0; i < sizeof moves / sizeof *moves; i++)
        if (moves[i].from == p->st && moves[i].tok == t) {
            p->st = moves[i].to;
            return 1;
        }
    return -1;
}

static int on_null(void *ctx)
{
    struct parser *p = ctx;
    if (p->st == ST_SKIP)
        return skip_token(p, 0);
    return unexpected(p, "null");
}

static int on_boolean(void *ctx, int v)
{
    struct parser *p = ctx;
    if (p->st == ST_SKIP)
        return skip_token(p, 0);
    if (p->st == ST_ISPARTIAL) {
        p->partial = v != 0;
        value_done(p);
        return 1;
    }
    return unexpected(p, v ? "true" : "false");
}

static int on_number(void *ctx, const char *s, size_t n)
{
    struct parser *p = ctx;
    if (p->st == ST_TS) {
        if (!take_ts(p, s, n))
            return 0;
        p->st = ST_VALUE;
        return 1;
    }
    if (p->st == ST_SKIP)
        return skip_token(p, 0);
    char raw[40];
    escape_n(s, n, raw, sizeof raw);
    char tok[64];
    snprintf(tok, sizeof tok, "number %s", raw);
    return unexpected(p, tok);
}

static void copy_text(char *dst, size_t cap, const unsigned char *s, size_t n)
{
    escape_n((const char *)s, n, dst, cap);
}

/* A root string value (status, error, errorType) into dst, escaped. */
static int take_text(struct parser *p, char *dst, size_t cap, const unsigned char *s, size_t n)
{
    copy_text(dst, cap, s, n);
    value_done(p);
    return 1;
}

static bool warning_accepted(const struct parser *p, const unsigned char *s, size_t n,
                             const char **pattern)
{
    const struct gl_parse_opts *o = p->opts;
    for (size_t i = 0; o && i < o->naccept_warnings; i++) {
        pcre2_code *re = o->accept_warnings[i].code;
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
        int rc = md ? pcre2_match(re, s, n, 0, 0, md, NULL) : -1;
        pcre2_match_data_free(md);
        if (rc >= 0) {
            *pattern = o->accept_warnings[i].source;
            return true;
        }
    }
    return false;
}

static int on_string(void *ctx, const unsigned char *s, size_t n)
{
    struct parser *p = ctx;
    switch (p->st) {
    case ST_VALUE: {
        double x;
        if (!parse_value((const char *)s, n, &x)) {
            char raw[100], when[40];
            escape_n((const char *)s, n, raw, sizeof raw);
            gl_time_format(p->ts, when, sizeof when);
            return fail_series(p, "sample at %s: value \"%s\" is not a number (a Prometheus "
                               "float: digits with optional sign, fraction and exponent, or "
                               "NaN/Inf)", when, raw);
        }
        p->cur->values[p->slot] = x;
        p->st = ST_SAMPLE_END;
        return 1;
    }
    case ST_LABEL:
        if (!add_label(p, (const char *)s, n))
            return 0;
        value_done(p);
        return 1;
    case ST_STATUS:
        return take_text(p, p->status, sizeof p->status, s, n);
    case ST_ERROR:
        return take_text(p, p->error, sizeof p->error, s, n);
    case ST_ERRTYPE:
        return take_text(p, p->errtype, sizeof p->errtype, s, n);
    case ST_RESULTTYPE: {
        const char *want = p->vector ? "vector" : "matrix";
        if (n != 6 || memcmp(s, want, 6) != 0) {
            char t[80];
            copy_text(t, sizeof t, s, n);
            return fail(p, "data.resultType is \"%s\", expected \"%s\"", t, want);
        }
        value_done(p);
        return 1;
    }
    case ST_WARNING: {
        char t[512];
        copy_text(t, sizeof t, s, n);
        const char *pat = NULL;
        if (warning_accepted(p, s, n, &pat)) {
            p->m->nwarnings++;
            gl_log(GL_LOG_WARN, "backend warning accepted (prometheus.accept_warnings \"%s\") "
                   "%s: %s", pat, p->what, t);
        } else if (p->nbad_warnings++ == 0) {
            snprintf(p->bad_warning, sizeof p->bad_warning, "%s", t);
        }
        return 1;
    }
    case ST_INFO: {
        char t[512];
        copy_text(t, sizeof t, s, n);
        gl_log(GL_LOG_INFO, "backend info %s: %s", p->what, t);
        return 1;
    }
    case ST_SKIP:
        return skip_token(p, 0);
    default: {
        char t[80], tok[100];
        copy_text(t, sizeof t, s, n);
        snprintf(tok, sizeof tok, "string \"%s\"", t);
        return unexpected(p, tok);
    }
    }
}

/* A series' object opens in result: a new series, its steps all NaN. */
static int series_start(struct parser *p)
{
    struct gl_matrix *m = p->m;
    if (!charge(p, gl_series_slots(m->nsteps)))
        return 0;
    if (m->nseries == p->series_cap) {
        p->series_cap = p->series_cap ? 2 * p->series_cap : 64;
        m->series = gl_xrealloc(m->series, p->series_cap * sizeof *m->series);
    }
    struct gl_series *s = &m->series[m->nseries++];
    memset(s, 0, sizeof *s);
    s->first_step = -1;
    s->first_seen = -1;
    s->values = malloc((m->nsteps ? m->nsteps : 1) * sizeof *s->values);
    if (!s->values)
        return fail(p, "out of memory");
    for (size_t i = 0; i < m->nsteps; i++)
        s->values[i] = NAN;
    memset(p->present, 0, m->nsteps);
    p->npresent = 0;
    p->cur = s;
    p->labels_cap = 0;
    p->item_keys = 0;
    p->nsample = 0;
    p->st = ST_ITEM;
    return 1;
}


/* Marks key bit k of *seen; a second time is an error naming where. */
static int key_once(struct parser *p, unsigned *seen, unsigned k, const char *name,
                    const char *where /* NULL: the current series */)
{
    if (*seen & k) {
        if (!where)
            return fail_series(p, "duplicate key \"%s\"", name);
        return fail(p, "duplicate key \"%s\" in %s", name, where);
    }
    *seen |= k;
    return 1;
}

static int on_map_key(void *ctx, const unsigned char *s, size_t n)
{
    struct parser *p = ctx;
#define IS(lit) (n == sizeof lit - 1 && memcmp(s, lit, n) == 0)
    switch (p->st) {
    case ST_SKIP:
        return 1;
    case ST_IN_METRIC:
        if (memchr(s, '\0', n))
            return fail_series(p, "a label name holds a NUL character");
        /* U+D800..U+DFFF encoded (a lone low surrogate's \u escape, which the
         * tokenizer refuses itself) is not UTF-8, in a name as in a value */
        for (size_t i = 0; i + 1 < n; i++)
            if (s[i] == 0xed && s[i + 1] >= 0xa0)
                return fail_series(p, "a label name is not valid UTF-8 (a UTF-16 surrogate)");
        gl_buf_reset(&p->key);
        if (!gl_buf_append(&p->key, s, n))
            return fail(p, "out of memory");
        p->st = ST_LABEL;
        return 1;
    case ST_ROOT: {
        static const struct { const char *name; unsigned bit; enum state next; } keys[] = {
            {"status", K_STATUS, ST_STATUS},       {"data", K_DATA, ST_DATA},
            {"warnings", K_WARNINGS, ST_WARNINGS}, {"infos", K_INFOS, ST_INFOS},
            {"error", K_ERROR, ST_ERROR},          {"errorType", K_ERRTYPE, ST_ERRTYPE},
            {"isPartial", K_ISPARTIAL, ST_ISPARTIAL}, {"stats", K_STATS, ST_SKIP},
        };
        for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
            if (n == strlen(keys[i].name) && memcmp(s, keys[i].name, n) == 0) {
                if (!key_once(p, &p->root_keys, keys[i].bit, keys[i].name, "the response"))
                    return 0;
                p->st = keys[i].next;
                p->skip_depth = 0;
                return 1;
            }
        }
        break;
    }
    case ST_IN_DATA:
        if (IS("resultType")) {
            if (!key_once(p, &p->data_keys, K_RESULTTYPE, "resultType", "data"))
                return 0;
            p->st = ST_RESULTTYPE;
            return 1;
        }
        if (IS("result")) {
            if (!key_once(p, &p->data_keys, K_RESULT, "result", "data"))
                return 0;
            p->st = ST_RESULT;
            return 1;
        }
        break;
    case ST_ITEM:
        if (IS("metric")) {
            if (!key_once(p, &p->item_keys, K_METRIC, "metric", NULL))
                return 0;
            p->st = ST_METRIC;
            return 1;
        }
        if (p->vector ? IS("value") : IS("values")) {
            if (!key_once(p, &p->item_keys, K_VALUES, p->vector ? "value" : "values", NULL))
                return 0;
            p->st = ST_VALUES;
            return 1;
        }
        if (IS("value"))
            return fail_series(p, "an instant-vector sample (\"value\"), expected a matrix "
                               "(\"values\")");
        if (IS("values"))
            return fail_series(p, "a range-vector sample list (\"values\"), expected an "
                               "instant vector (\"value\")");
        break;
    default:
        break;
    }
#undef IS
    char k[100], tok[140];
    copy_text(k, sizeof k, s, n);
    snprintf(tok, sizeof tok, "key \"%s\"", k);
    return unexpected(p, tok);
}




/* A structural token in the states it does more in than move them: 1, or
 * 0 when that failed; -1 when t is unexpected here. */
static int token_in_state(struct parser *p, enum token t)
{
    switch (t) {
    case TK_START_MAP:
        return p->st == ST_IN_RESULT ? series_start(p) : -1;
    case TK_START_ARRAY:
        if (p->st != ST_VALUES)
            return -1;
        p->st = p->vector ? ST_TS : ST_IN_VALUES; /* a vector's value is the sample */
        return 1;
    case TK_END_MAP:
        if (p->st == ST_ITEM) {
            if (!series_done(p))
                return 0;
            p->cur = NULL;
            p->st = ST_IN_RESULT;
            return 1;
        }
        if (p->st != ST_IN_METRIC)
            return -1;
        if (!labels_done(p))
            return 0;
        value_done(p);
        return 1;
    case TK_END_ARRAY:
        switch (p->st) {
        case ST_WARNING: case ST_INFO: case ST_IN_RESULT: case ST_IN_VALUES:
            value_done(p);
            return 1;
        case ST_SAMPLE_END:
            p->nsample++;
            p->st = p->vector ? ST_ITEM : ST_IN_VALUES;
            return 1;
        default:
            return -1;
        }
    }
    return -1;
}

static int on_token(struct parser *p, enum token t)
{
    static const char *const what[] = {[TK_START_MAP] = "object", [TK_END_MAP] = "end of object",
                                       [TK_START_ARRAY] = "array",
                                       [TK_END_ARRAY] = "end of array"};
    int r = move_token(p, t);
    if (r < 0)
        r = token_in_state(p, t);
    return r >= 0 ? r : unexpected(p, what[t]);
}

static int on_start_map(void *ctx)
{
    return on_token(ctx, TK_START_MAP);
}

static int on_end_map(void *ctx)
{
    return on_token(ctx, TK_END_MAP);
}

static int on_start_array(void *ctx)
{
    return on_token(ctx, TK_START_ARRAY);
}

static int on_end_array(void *ctx)
{
    return on_token(ctx, TK_END_ARRAY);
}

static const struct gl_jsax_callbacks callbacks = {
    .on_null = on_null,
    .on_boolean = on_boolean,
    .on_number = on_number,
    .on_string = on_string,
    .on_start_map = on_start_map,
    .on_map_key = on_map_key,
    .on_end_map = on_end_map,
    .on_start_array = on_start_array,
    .on_end_array = on_end_array,
};

/* The tokenizer's own error (invalid JSON, UTF-8, trailing text), with the
 * byte offset `at`, a printable excerpt from 24 bytes before it
 * (near_bytes) and, inside a series, the series. */
static void json_error(struct parser *p, const struct gl_jsax *h, size_t at,
                       const char *near_bytes, size_t nnear)
{
    const char *msg = gl_jsax_error(h);
    char near[200];
    escape_n(near_bytes, nnear, near, sizeof near);
    char where[300] = "";
    if (p->st == ST_LABEL) {
        char kn[100];
        escape_n(p->key.data ? p->key.data : "", p->key.len, kn, sizeof kn);
        snprintf(where, sizeof where, " (the value of label \"%s\")", kn);
    } else if (p->st == ST_IN_METRIC) {
        const struct gl_series *s = p->cur;
        char kn[100] = "";
        if (s && s->nlabels)
            escape_n(s->labels[s->nlabels - 1].name, strlen(s->labels[s->nlabels - 1].name),
                     kn, sizeof kn);
        snprintf(where, sizeof where, " (a label name%s%s%s)", kn[0] ? " after \"" : "", kn,
                 kn[0] ? "\"" : "");
    }
    if (p->cur)
        fail_series(p, "not valid JSON at byte %zu%s: %s, near \"%s\"", at, where, msg, near);
    else
        fail(p, "response is not valid JSON at byte %zu: %s, near \"%s\"", at, msg, near);
}

/* Lone UTF-16 surrogates: a \\u escape of D800-DBFF that is not followed
 * by the escape of a low surrogate (DC00-DFFF), or one of DC00-DFFF without
 * a high one before it. Such an escape is
 * not text (a decoder that makes it "?" lets two label values become one),
 * so the response is refused, and found here, before the tokenizer, so the
 * message names it and its offset the same for any split of the body. Only
 * escapes are looked at: a backslash outside a string is invalid JSON that
 * the tokenizer rejects anyway. The scan runs byte by byte over the stream
 * (any split of the body gives the same answer): after a backslash, a 'u'
 * and four hex digits form an escape; anything else ends it (the byte is
 * looked at again). */
static int hexval(unsigned char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

enum sur_state {
    SUR_TEXT,    /* outside an escape */
    SUR_BACK,    /* after a backslash */
    SUR_HEX,     /* in \uXXXX: `nhex` digits so far */
    SUR_LO_BACK, /* after a high surrogate: expecting a backslash */
    SUR_LO_U,    /* ... then 'u' */
    SUR_LO_HEX,  /* ... then four hex digits of a low surrogate */
};

struct sur_scan {
    enum sur_state st;
    int nhex;
    unsigned v;
    size_t esc_at;       /* offset of the pending high surrogate's escape */
    size_t bad;          /* offset of the first lone one, SIZE_MAX when none */
    char near[48];       /* the bytes from `bad` on, for the message */
    size_t nnear;
    char pending[12];    /* the bytes of the pending escape */
    size_t npending;
};

static void sur_init(struct sur_scan *s)
{
    memset(s, 0, sizeof *s);
    s->bad = SIZE_MAX;
}

/* Scans n bytes at offset `at` of the stream. */
static void sur_feed(struct sur_scan *s, const char *data, size_t n, size_t at)
{
    size_t i = 0;
    if (s->bad != SIZE_MAX) { /* found: only the bytes of the message */
        size_t k = n < sizeof s->near - s->nnear ? n : sizeof s->near - s->nnear;
        memcpy(s->near + s->nnear, data, k);
        s->nnear += k;
        return;
    }
    while (i < n) {
        unsigned char c = (unsigned char)data[i];
        switch (s->st) {
        case SUR_TEXT: {
            const char *b = memchr(data + i, '\\', n - i);
            if (!b)
                return;
            i = (size_t)(b - data) + 1;
            s->st = SUR_BACK;
            s->esc_at = at + (size_t)(b - data);
            s->pending[0] = '\\';
            s->npending = 1;
            continue;
        }
        case SUR_BACK:
            if (c == 'u') {
                s->st = SUR_HEX;
                s->nhex = 0;
                s->v = 0;
                s->pending[s->npending++] = (char)c;
                i++;
            } else {
                s->st = SUR_TEXT; /* another escape: its byte is skipped */
                i++;
            }
            continue;
        case SUR_HEX:
        case SUR_LO_HEX: {
            int d = hexval(c);
            if (d < 0) {
                if (s->st == SUR_LO_HEX)
                    goto lone;
                s->st = SUR_TEXT; /* malformed (the tokenizer reports it): look again */
                continue;
            }
            s->v = s->v << 4 | (unsigned)d;
            s->pending[s->npending++] = (char)c;
            i++;
            if (++s->nhex < 4)
                continue;
            if (s->st == SUR_LO_HEX) {
                if (s->v < 0xDC00 || s->v > 0xDFFF)
                    goto lone;
                s->st = SUR_TEXT;
            } else if (s->v >= 0xD800 && s->v <= 0xDBFF) {
                s->st = SUR_LO_BACK;
            } else if (s->v >= 0xDC00 && s->v <= 0xDFFF) {
                goto lone; /* a low surrogate with no high one before it */
            } else {
                s->st = SUR_TEXT;
            }
            continue;
        }
        case SUR_LO_BACK:
        case SUR_LO_U:
            if (c != (s->st == SUR_LO_BACK ? '\\' : 'u'))
                goto lone;
            s->pending[s->npending++] = (char)c;
            i++;
            if (s->st == SUR_LO_BACK) {
                s->st = SUR_LO_U;
            } else {
                s->st = SUR_LO_HEX;
                s->nhex = 0;
                s->v = 0;
            }
            continue;
        }
    }
    return;
lone:
    /* the escape is not followed by a low surrogate's: the response is
     * refused; keep the bytes from the escape on for the message */
    s->bad = s->esc_at;
    memcpy(s->near, s->pending, s->npending);
    s->nnear = s->npending;
    sur_feed(s, data + i, n - i, at + i);
}

/* At the end of the body: a high surrogate still waiting is lone. */
static void sur_finish(struct sur_scan *s)
{
    if (s->bad == SIZE_MAX && s->st >= SUR_LO_BACK) {
        s->bad = s->esc_at;
        memcpy(s->near, s->pending, s->npending);
        s->nnear = s->npending;
    }
}

/* After the whole document: status, partial hints, warnings, shape. */
static void check_document(struct parser *p)
{
    if (!(p->root_keys & K_STATUS)) {
        fail(p, "response has no \"status\"");
        return;
    }
    if (strcmp(p->status, "success") != 0) {
        fail(p, "status \"%s\": %s%s%s", p->status, p->errtype, p->errtype[0] ? ": " : "",
             p->error[0] ? p->error : "(no error text)");
        return;
    }
    if (p->partial) {
        fail(p, "the backend marked the response as partial (isPartial: true): refusing it");
        return;
    }
    if (p->nbad_warnings) {
        fail(p, "the backend returned %zu warning%s (partial or degraded data): \"%s\"; the "
             "chunk is refused (accept a known benign warning with prometheus.accept_warnings)",
             p->nbad_warnings, p->nbad_warnings > 1 ? "s" : "", p->bad_warning);
        return;
    }
    if (!(p->root_keys & K_DATA) || !(p->data_keys & K_RESULTTYPE) ||
        !(p->data_keys & K_RESULT))
        fail(p, "expected data.resultType \"%s\" with a result array",
             p->vector ? "vector" : "matrix");
}

/* An incremental parse: the body arrives in pieces of any size. The
 * tokenizer takes them as they come; the lone-surrogate scan runs
 * alongside. Every check of the whole-buffer parse is made with the same
 * outcome and message: a failure found early stops the parse, but the rest
 * of the body is still scanned (a lone surrogate anywhere wins, as when the
 * whole body was looked at first) and the excerpt of a JSON error is
 * completed from the bytes that follow. */
struct gl_matrix_parser {
    struct parser p;
    struct gl_matrix m;
    struct gl_error err;        /* the callbacks' failure */
    struct gl_parse_opts opts;
    bool has_opts;
    char *what;
    struct gl_jsax *h;
    struct sur_scan sur;
    size_t len;                 /* bytes fed */
    bool bad_step;
    bool oom;                   /* the tokenizer could not be set up, or ran out of memory */
    bool stopped;               /* the tokenizer or a callback failed: only scanning */
    char head[64];              /* the first bytes */
    size_t nhead;
    char hist[64];              /* the last bytes before the current piece */
    size_t nhist;
    bool json_failed;           /* the tokenizer refused the text at json_at */
    size_t json_at;
    char near[64];              /* the bytes from json_at - 24 on */
    size_t nnear;
};

static struct gl_matrix_parser *parser_new(int64_t start, int64_t step, size_t nsteps,
                                           const char *what, const struct gl_parse_opts *opts,
                                           bool vector)
{
    struct gl_matrix_parser *mp = gl_xcalloc(1, sizeof *mp);
    mp->m.start = start;
    mp->m.step = step;
    mp->m.nsteps = nsteps;
    mp->what = gl_strdup(what ? what : "");
    if (opts) {
        mp->opts = *opts;
        mp->has_opts = true;
    }
    sur_init(&mp->sur);
    mp->bad_step = step <= 0;
    struct parser *p = &mp->p;
    *p = (struct parser){.vector = vector, .what = mp->what,
                         .opts = mp->has_opts ? &mp->opts : NULL, .m = &mp->m, .err = &mp->err,
                         .st = ST_START};
    gl_buf_init(&p->key);
    if (!mp->bad_step) {
        p->present = gl_xcalloc(nsteps ? nsteps : 1, 1);
        mp->h = gl_jsax_new(&callbacks, p);
        mp->oom = !mp->h;
    }
    return mp;
}

struct gl_matrix_parser *gl_matrix_parser_new(int64_t start, int64_t step, size_t nsteps,
                                              const char *what,
                                              const struct gl_parse_opts *opts)
{
    return parser_new(start, step, nsteps, what, opts, false);
}

void gl_matrix_parser_free(struct gl_matrix_parser *mp)
{
    if (!mp)
        return;
    gl_jsax_free(mp->h);
    /* a matrix not handed over gives its slots back (a retry parses anew) */
    if (mp->p.opts && mp->p.opts->slots_used)
        *mp->p.opts->slots_used -= mp->p.charged;
    free(mp->p.present);
    gl_buf_free(&mp->p.key);
    gl_matrix_free(&mp->m);
    free(mp->what);
    free(mp);
}

/* Appends up to cap - *n bytes of data to buf. */
static void keep_bytes(char *buf, size_t cap, size_t *n, const char *data, size_t len)
{
    size_t k = len < cap - *n ? len : cap - *n;
    memcpy(buf + *n, data, k);
    *n += k;
}

bool gl_matrix_parser_over_budget(const struct gl_matrix_parser *mp)
{
    return mp && mp->p.too_large;
}

void gl_matrix_parser_feed(struct gl_matrix_parser *mp, const char *data, size_t n)
{
    if (n == 0)
        return;
    const size_t base = mp->len;
    keep_bytes(mp->head, sizeof mp->head, &mp->nhead, data, n);
    sur_feed(&mp->sur, data, n, base);
    if (mp->json_failed)
        keep_bytes(mp->near, sizeof mp->near, &mp->nnear, data, n);
    if (!mp->stopped && !mp->bad_step && !mp->oom && mp->sur.bad == SIZE_MAX) {
        enum gl_jsax_status st = gl_jsax_feed(mp->h, data, n);
        if (st != GL_JSAX_OK)
            mp->stopped = true;
        if (st == GL_JSAX_NOMEM)
            mp->oom = true;
        if (st == GL_JSAX_ERROR && !mp->p.failed) {
            /* in [base - 32, base + n]: the bad token may begin in the
             * tokenizer's 32-byte tail of the pieces before */
            size_t at = gl_jsax_offset(mp->h);
            if (at > base + n)
                at = base + n;
            size_t from = at > 24 ? at - 24 : 0;
            mp->json_failed = true;
            mp->json_at = at;
            if (from < base) { /* from the bytes before this piece */
                size_t back = base - from; /* <= 56 <= nhist (or all bytes so far) */
                keep_bytes(mp->near, sizeof mp->near, &mp->nnear,
                           mp->hist + mp->nhist - back, back);
            }
            size_t off = from > base ? from - base : 0;
            keep_bytes(mp->near, sizeof mp->near, &mp->nnear, data + off, n - off);
        }
    }
    /* the last bytes, for an error in the next piece */
    if (n >= sizeof mp->hist) {
        memcpy(mp->hist, data + n - sizeof mp->hist, sizeof mp->hist);
        mp->nhist = sizeof mp->hist;
    } else {
        size_t keep = mp->nhist + n <= sizeof mp->hist ? mp->nhist : sizeof mp->hist - n;
        memmove(mp->hist, mp->hist + mp->nhist - keep, keep);
        memcpy(mp->hist + keep, data, n);
        mp->nhist = keep + n;
    }
    mp->len += n;
}

/* The tokenizer ran out of memory at finish: a runtime error, not the
 * response's (the parser is freed). */
static enum gl_status finish_oom(struct gl_matrix_parser *mp, struct gl_error *err)
{
    enum gl_status rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: out of memory", mp->what);
    gl_matrix_parser_free(mp);
    return rc;
}

enum gl_status gl_matrix_parser_finish(struct gl_matrix_parser *mp, struct gl_matrix *m,
                                       struct gl_error *err)
{
    memset(m, 0, sizeof *m);
    m->start = mp->m.start;
    m->step = mp->m.step;
    m->nsteps = mp->m.nsteps;
    struct parser *p = &mp->p;
    enum gl_status rc = GL_OK;
    sur_finish(&mp->sur);
    if (mp->len == 0) {
        rc = gl_error_set(err, GL_ERR_PROM, "%s: empty response body", mp->what);
    } else if (mp->bad_step) {
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: step must be positive", mp->what);
    } else if (mp->sur.bad != SIZE_MAX) {
        char near[200];
        escape_n(mp->sur.near, mp->sur.nnear, near, sizeof near);
        rc = gl_error_set(err, GL_ERR_PROM,
                          "%s: response is not valid JSON text at byte %zu: a \\u escape of a "
                          "lone UTF-16 surrogate (not a character), near \"%s\"",
                          mp->what, mp->sur.bad, near);
    } else if (mp->oom) {
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: out of memory", mp->what);
    } else {
        if (mp->json_failed) {
            json_error(p, mp->h, mp->json_at, mp->near, mp->nnear);
        } else if (!p->failed) {
            enum gl_jsax_status st = gl_jsax_finish(mp->h);
            if (st == GL_JSAX_NOMEM)
                return finish_oom(mp, err);
            if (st == GL_JSAX_ERROR && !p->failed) {
                /* the body ended inside the document: the excerpt is its end */
                size_t at = mp->len;
                size_t from = at > 24 ? at - 24 : 0;
                size_t k = mp->len - from < 64 ? mp->len - from : 64;
                const char *src = from + k <= mp->nhead ? mp->head + from
                                  : mp->hist + mp->nhist - (mp->len - from);
                json_error(p, mp->h, at, src, k);
            } else if (st == GL_JSAX_OK && !p->failed) {
                check_document(p);
            }
        }
        if (p->failed) {
            *err = mp->err;
            rc = p->too_large ? GL_ERR_TOO_LARGE : GL_ERR_PROM;
            err->code = rc;
        }
    }
    if (!rc) {
        *m = mp->m;
        memset(&mp->m, 0, sizeof mp->m);
        p->charged = 0; /* the caller holds them now */
    }
    gl_matrix_parser_free(mp);
    return rc;
}

enum gl_status gl_matrix_parse_opts(const char *json, size_t len, int64_t start, int64_t step,
                                    size_t nsteps, const char *what,
                                    const struct gl_parse_opts *opts, struct gl_matrix *m,
                                    struct gl_error *err)
{
    struct gl_matrix_parser *mp = gl_matrix_parser_new(start, step, nsteps, what, opts);
    gl_matrix_parser_feed(mp, json, json ? len : 0);
    return gl_matrix_parser_finish(mp, m, err);
}

enum gl_status gl_matrix_parse(const char *json, size_t len, int64_t start, int64_t step,
                               size_t nsteps, const char *what, struct gl_matrix *m,
                               struct gl_error *err)
{
    return gl_matrix_parse_opts(json, len, start, step, nsteps, what, NULL, m, err);
}

/* ---- instant vectors ---- */

static int cmp_label(const void *a, const void *b)
{
    return strcmp(((const struct gl_label *)a)->name, ((const struct gl_label *)b)->name);
}

/* The labels sorted by name, packed in one allocation (packed()). */
static struct gl_label *sorted_copy(const struct gl_label *l, size_t n)
{
    size_t bytes = n * sizeof *l;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(l[i].name) + strlen(l[i].value) + 2;
    struct gl_label *c = gl_xcalloc(bytes ? bytes : 1, 1);
    if (n) /* a sample without labels (count(...)) has no array to copy */
        memcpy(c, l, n * sizeof *l);
    gl_sort(c, n, sizeof *c, cmp_label);
    char *at = (char *)(c + n);
    for (size_t i = 0; i < n; i++) {
        size_t kn = strlen(c[i].name) + 1, vn = strlen(c[i].value) + 1;
        c[i].name = memcpy(at, c[i].name, kn);
        c[i].value = memcpy(at + kn, c[i].value, vn);
        at += kn + vn;
    }
    return c;
}

static int cmp_series_ptr(const void *a, const void *b)
{
    return gl_series_cmp(*(const struct gl_series *const *)a,
                         *(const struct gl_series *const *)b);
}

/* The parsed series (one step each) as samples, or a failure when two
 * series have the same labels: an instant vector holds each series once,
 * and a copy would count its pod, host or device twice. */
static enum gl_status vector_take(struct gl_matrix *m, const char *what, struct gl_vector *v,
                                  struct gl_error *err)
{
    const struct gl_series **order = gl_xcalloc(m->nseries ? m->nseries : 1, sizeof *order);
    for (size_t i = 0; i < m->nseries; i++) {
        /* label order is the backend's: compare sets, not sequences */
        struct gl_series *s = &m->series[i];
        struct gl_label *sorted = sorted_copy(s->labels, s->nlabels);
        labels_free(s->labels, s->nlabels);
        s->labels = sorted;
        order[i] = s;
    }
    gl_sort(order, m->nseries, sizeof *order, cmp_series_ptr);
    for (size_t i = 1; i < m->nseries; i++) {
        if (gl_series_cmp(order[i - 1], order[i]) != 0)
            continue;
        size_t a = (size_t)(order[i - 1] - m->series), b = (size_t)(order[i] - m->series);
        char desc[600];
        series_desc_of(order[i], a > b ? a : b, desc, sizeof desc);
        free(order);
        return gl_error_set(err, GL_ERR_PROM, "%s: %s: the same series as result #%zu "
                            "(duplicate series), refusing the response",
                            what ? what : "", desc, a < b ? a : b);
    }
    free(order);
    v->samples = gl_xcalloc(m->nseries ? m->nseries : 1, sizeof *v->samples);
    v->n = m->nseries;
    v->nwarnings = m->nwarnings;
    for (size_t i = 0; i < m->nseries; i++) {
        struct gl_series *s = &m->series[i];
        v->samples[i] = (struct gl_sample){.labels = s->labels, .nlabels = s->nlabels,
                                           .value = s->values[0], .t_ms = s->first_seen};
        s->labels = NULL; /* the sample owns them now */
        s->nlabels = 0;
    }
    return GL_OK;
}

enum gl_status gl_vector_parse(const char *json, size_t len, const char *what,
                               const struct gl_parse_opts *opts, struct gl_vector *v,
                               struct gl_error *err)
{
    memset(v, 0, sizeof *v);
    /* one step per series: the matrix machinery with the vector's shape */
    struct gl_matrix_parser *mp = parser_new(0, 1, 1, what, opts, true);
    gl_matrix_parser_feed(mp, json, json ? len : 0);
    struct gl_matrix m;
    enum gl_status rc = gl_matrix_parser_finish(mp, &m, err);
    if (!rc)
        rc = vector_take(&m, what, v, err);
    gl_matrix_free(&m);
    return rc;
}

void gl_vector_free(struct gl_vector *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++)
        labels_free(v->samples[i].labels, v->samples[i].nlabels);
    free(v->samples);
    memset(v, 0, sizeof *v);
}
