/* Unit tests: the strict matrix parser (engine/source/parse.c): shapes, values,
 * timestamps, labels, warnings and plausibility bounds; the instant-vector
 * reader on the same parser (test_vector*). Each case is a body and what
 * must happen (parsed, or the error message's parts). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <math.h>
#include <pcre2.h>
#include <stdarg.h>

#include "parse.h"
#include "tap.h"
#include "util.h"

#define T0 1790985600 /* 2026-10-03T00:00:00Z; the grid: T0 + i*60, i < 4 */
#define NSTEPS 4
#define HEAD "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
#define TAIL "]}}"
#define DEV "\"__name__\":\"DCGM_FI_DEV_FB_USED\",\"UUID\":\"GPU-1\",\"pod\":\"p1\""
#define SERIES(labels, values) "{\"metric\":{" labels "},\"values\":[" values "]}"
#define GOOD HEAD SERIES(DEV, "[1790985600,\"100\"],[1790985660,\"200\"]") TAIL

/* Same series, labels, values and counts. */
static bool same_matrix(const struct gl_matrix *a, const struct gl_matrix *b)
{
    if (a->nseries != b->nseries || a->samples != b->samples ||
        a->bad_samples != b->bad_samples || a->nwarnings != b->nwarnings ||
        memcmp(a->skipped, b->skipped, sizeof a->skipped) != 0 ||
        memcmp(a->bad, b->bad, sizeof a->bad) != 0)
        return false;
    for (size_t i = 0; i < a->nseries; i++) {
        const struct gl_series *x = &a->series[i], *y = &b->series[i];
        if (x->nlabels != y->nlabels || x->first_step != y->first_step ||
            x->first_seen != y->first_seen)
            return false;
        for (size_t k = 0; k < x->nlabels; k++)
            if (strcmp(x->labels[k].name, y->labels[k].name) != 0 ||
                strcmp(x->labels[k].value, y->labels[k].value) != 0)
                return false;
        for (size_t k = 0; k < a->nsteps; k++)
            if (!(x->values[k] == y->values[k] || (isnan(x->values[k]) && isnan(y->values[k]))))
                return false;
    }
    return true;
}

/* The body fed in pieces (as downloaded): the first piece `first` bytes,
 * then pieces of `size`. */
static enum gl_status parse_pieces(const char *body, size_t len, size_t first, size_t size,
                                   const struct gl_parse_opts *o, struct gl_matrix *m,
                                   struct gl_error *err)
{
    err->msg[0] = '\0';
    struct gl_matrix_parser *mp = gl_matrix_parser_new(T0, 60, NSTEPS, "Q", o);
    size_t at = 0;
    for (size_t n = first; at < len; n = size) {
        size_t k = n < len - at ? n : len - at;
        gl_matrix_parser_feed(mp, body + at, k);
        at += k;
    }
    return gl_matrix_parser_finish(mp, m, err);
}

/* Whether a short body's first piece of `first` bytes is followed by 1-byte
 * pieces (besides the rest in one piece, tried for every `first`). Every
 * byte is a piece boundary of the first = 0 run already; other first pieces
 * add the state a long first piece leaves. Under the sanitizers (about 8
 * times slower) that is tried for every 5th size and the first and last
 * 16, the one-split runs still for every byte. */
static bool one_byte_after(size_t first, size_t len)
{
#if defined(__SANITIZE_ADDRESS__)
    return first < 16 || first + 16 >= len || first % 5 == 0;
#else
    (void)len;
    (void)first;
    return true;
#endif
}

/* Every case is also parsed incrementally, split at every byte (long bodies:
 * in a few piece sizes), and must give the same result and message. */
static enum gl_status parse_n(const char *body, size_t len, const struct gl_parse_opts *o,
                              struct gl_matrix *m, struct gl_error *err)
{
    err->msg[0] = '\0';
    enum gl_status rc = gl_matrix_parse_opts(body, len, T0, 60, NSTEPS, "Q", o, m, err);
    static const size_t sizes[] = {1, 2, 7, 64, 4096};
    for (size_t first = 0; first <= len && first < 2048; first++) {
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            if (len >= 2048 && first > 0)
                break;
            if (len > 65536 && sizes[s] < 64)
                continue;
            if (len < 2048 && s > 0)
                break;
            struct gl_matrix pm;
            struct gl_error perr;
            size_t one = len < 2048 ? (first ? first : len ? len : 1) : sizes[s];
            /* short bodies: the first bytes, then 1-byte pieces, and then the
             * rest in one piece (two pieces: a token split once) */
            for (int two = 0; two < (len < 2048 ? 2 : 1); two++) {
                if (len < 2048 && !two && !one_byte_after(first, len))
                    continue;
                size_t rest = len < 2048 ? (two ? (len ? len : 1) : 1) : sizes[s];
                enum gl_status prc = parse_pieces(body, len, one, rest, o, &pm, &perr);
                if (prc != rc || (rc && strcmp(perr.msg, err->msg) != 0) ||
                    (!rc && !same_matrix(&pm, m))) {
                    printf("# in pieces (%zu, then %zu) differs: rc %d vs %d, \"%s\" vs "
                           "\"%s\"\n",
                           one, rest, (int)prc, (int)rc, prc ? perr.msg : "",
                           rc ? err->msg : "");
                    tap_case_failed = 1;
                }
                gl_matrix_free(&pm);
            }
        }
        if (len >= 2048)
            break;
    }
    return rc;
}

static enum gl_status parse(const char *body, const struct gl_parse_opts *o, struct gl_matrix *m,
                            struct gl_error *err)
{
    return parse_n(body, strlen(body), o, m, err);
}

/* body must fail with GL_ERR_PROM, m left empty, the message holding
 * "Q" and every one of the NULL-terminated needles. */
static void fails_n(const char *body, size_t len, const struct gl_parse_opts *o, ...)
{
    struct gl_matrix m;
    struct gl_error err;
    enum gl_status rc = parse_n(body, len, o, &m, &err);
    if (rc != GL_ERR_PROM || m.nseries != 0 || m.series != NULL) {
        printf("# expected a failure (rc %d, %zu series) for: %.200s\n", (int)rc, m.nseries,
               body);
        tap_case_failed = 1;
        gl_matrix_free(&m);
        return;
    }
    if (strncmp(err.msg, "Q: ", 3) != 0) {
        printf("# message does not name the query: %s\n", err.msg);
        tap_case_failed = 1;
    }
    va_list ap;
    va_start(ap, o);
    for (const char *needle; (needle = va_arg(ap, const char *));)
        if (!strstr(err.msg, needle)) {
            printf("# message lacks \"%s\": %s\n", needle, err.msg);
            tap_case_failed = 1;
        }
    va_end(ap);
}

#define FAILS(body, ...) fails_n(body, strlen(body), NULL, __VA_ARGS__, (const char *)NULL)
#define FAILS_OPTS(body, o, ...) fails_n(body, strlen(body), o, __VA_ARGS__, (const char *)NULL)

static void parses(const char *body, const struct gl_parse_opts *o, struct gl_matrix *m)
{
    struct gl_error err;
    if (parse(body, o, m, &err) != GL_OK) {
        printf("# expected to parse: %s\n#   body: %.200s\n", err.msg, body);
        tap_case_failed = 1;
    }
}

static void test_good(void)
{
    struct gl_matrix m;
    parses(GOOD, NULL, &m);
    CHECK(m.nseries == 1 && m.samples == 2 && m.bad_samples == 0);
    CHECK(m.series[0].values[0] == 100 && m.series[0].values[1] == 200);
    CHECK(isnan(m.series[0].values[2]) && isnan(m.series[0].values[3]));
    CHECK(m.series[0].first_step == 0 && m.series[0].first_seen == T0);
    CHECK_STR(gl_series_label(&m.series[0], "pod"), "p1");
    CHECK_STR(gl_series_label(&m.series[0], "UUID"), "GPU-1");
    gl_matrix_free(&m);
    /* values before metric, labels with UTF-8 and an empty label (= absent),
     * an empty result, whitespace around the document */
    parses(" \n" HEAD "{\"values\":[[1790985720,\"5\"]],\"metric\":{\"ns\":\"\\u00e9quipe\",\"e\":\"\","
           "\"x\":\"caf\xc3\xa9\"}}," SERIES("", "") TAIL "\n\t ",
           NULL, &m);
    CHECK(m.nseries == 2 && m.samples == 1);
    CHECK(m.series[0].first_step == 2 && m.series[0].first_seen == T0 + 120);
    CHECK_STR(gl_series_label(&m.series[0], "ns"), "\xc3\xa9quipe");
    CHECK_STR(gl_series_label(&m.series[0], "x"), "caf\xc3\xa9");
    CHECK(gl_series_label(&m.series[0], "e") == NULL);
    CHECK(m.series[1].nlabels == 0 && m.series[1].first_step == -1);
    gl_matrix_free(&m);
    parses(HEAD TAIL, NULL, &m);
    CHECK(m.nseries == 0 && m.samples == 0);
    gl_matrix_free(&m);
    /* keys in any order; VictoriaMetrics' isPartial:false and stats; infos */
    parses("{\"stats\":{\"seriesFetched\":\"3\",\"deep\":[[[[{\"a\":[null,true,1.5]}]]]]},"
           "\"isPartial\":false,\"data\":{\"result\":[],\"resultType\":\"matrix\"},"
           "\"infos\":[\"PromQL info: x\"],\"status\":\"success\",\"warnings\":[]}",
           NULL, &m);
    CHECK(m.nseries == 0 && m.nwarnings == 0);
    gl_matrix_free(&m);
}

static void test_values(void)
{
    struct gl_matrix m;
    /* well-formed floats: sign, fraction, exponent, leading/trailing dot */
    parses(HEAD SERIES(DEV, "[1790985600,\"+5\"],[1790985660,\"1E3\"],[1790985720,\".5\"],"
                            "[1790985780,\"7.\"]")
           "," SERIES("\"__name__\":\"y\"", "[1790985600,\"-0\"],[1790985660,\"2.5e-1\"]") TAIL,
           NULL, &m);
    CHECK(m.samples == 6 && m.bad_samples == 0);
    CHECK(m.series[0].values[0] == 5 && m.series[0].values[1] == 1000 &&
          m.series[0].values[2] == 0.5 && m.series[0].values[3] == 7);
    CHECK(m.series[1].values[0] == 0 && m.series[1].values[1] == 0.25);
    gl_matrix_free(&m);
    /* malformed text is an error naming query, series and timestamp */
    static const char *const bad[] = {"0x10", "", " 5", "5 ", "1e", "e5", ".", "+", "1.2.3",
                                      "infinity", "nan", "inf", "5abc", "1_000", "--1", "0x1p3",
                                      "\\u00005", "5\\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char body[512];
        snprintf(body, sizeof body, HEAD SERIES(DEV, "[1790985600,\"1\"],[1790985660,\"%s\"]") TAIL,
                 bad[i]);
        FAILS(body, "is not a number", "2026-10-03T00:01:00Z", "result #0",
              "DCGM_FI_DEV_FB_USED{", "UUID=\"GPU-1\"", "pod=\"p1\"");
    }
    /* "20000\u0000junk": the NUL is shown, not cut */
    FAILS(HEAD SERIES(DEV, "[1790985600,\"20000\\u0000junk\"]") TAIL, "20000\\x00junk",
          "is not a number");
    /* a sample is exactly [number, "string"] */
    FAILS(HEAD SERIES(DEV, "{\"t\":1790985600,\"v\":\"1\"}") TAIL, "unexpected object",
          "result #0");
    FAILS(HEAD SERIES(DEV, "[1790985600,\"1\",\"2\"]") TAIL, "sample #0", "unexpected string");
    FAILS(HEAD SERIES(DEV, "[1790985600]") TAIL, "sample #0", "end of array");
    FAILS(HEAD SERIES(DEV, "[1790985600,5]") TAIL, "unexpected number 5");
    FAILS(HEAD SERIES(DEV, "[\"1790985600\",\"5\"]") TAIL, "unexpected string");
    FAILS(HEAD SERIES(DEV, "[1790985600,null]") TAIL, "unexpected null");
    FAILS(HEAD SERIES(DEV, "[[1790985600],\"5\"]") TAIL, "unexpected array");
    FAILS(HEAD SERIES(DEV, "[1e20,\"5\"]") TAIL, "not a plausible Unix time");
}

/* The eight-at-a-time digit path (whole_digits): every length 1..15, leading
 * zeros, and a byte just outside '0'-'9' (or another non-digit) at every
 * position, against the slow path's reading (strtod) and its refusal. */
static void test_digits(void)
{
    static const char nondigit[] = {'/', ':', 'a', '_', ' ', '!', '\x7f'};
    const struct gl_parse_opts any = {.any_finite = true}; /* no plausibility bound */
    uint32_t seed = 12345;
    for (size_t n = 1; n <= 15; n++) {
        for (int round = 0; round < 20; round++) {
            char v[16];
            for (size_t i = 0; i < n; i++) {
                seed = seed * 1103515245u + 12345u;
                v[i] = (char)('0' + (round == 0 ? 0 : round == 1 ? 9 : (seed >> 16) % 10));
            }
            v[n] = '\0';
            char body[512];
            snprintf(body, sizeof body, HEAD SERIES(DEV, "[1790985600,\"%s\"]") TAIL, v);
            struct gl_matrix m;
            parses(body, &any, &m);
            CHECK(m.nseries == 1 && m.series[0].values[0] == strtod(v, NULL));
            gl_matrix_free(&m);
        }
        for (size_t at = 0; at < n; at++)
            for (size_t k = 0; k < sizeof nondigit; k++) {
                char v[16];
                memset(v, '7', n);
                v[n] = '\0';
                v[at] = nondigit[k];
                char body[512];
                snprintf(body, sizeof body, HEAD SERIES(DEV, "[1790985600,\"%s\"]") TAIL, v);
                FAILS(body, "is not a number", "2026-10-03T00:00:00Z");
            }
    }
    /* the next step of a series is found without a division: a duplicate is
     * still seen there, after a sample out of order */
    FAILS(HEAD SERIES(DEV, "[1790985660,\"1\"],[1790985600,\"2\"],[1790985660,\"3\"]") TAIL,
          "duplicate timestamp", "2026-10-03T00:01:00Z");
    struct gl_matrix m;
    parses(HEAD SERIES(DEV, "[1790985600,\"1\"],[1790985660,\"2\"],[1790985780,\"4\"]") "," SERIES(
               "\"__name__\":\"y\"", "[1790985660,\"5\"],[1790985720,\"6\"]") TAIL,
           NULL, &m);
    CHECK(m.nseries == 2 && m.samples == 5);
    CHECK(m.series[0].values[0] == 1 && m.series[0].values[1] == 2 &&
          isnan(m.series[0].values[2]) && m.series[0].values[3] == 4);
    CHECK(isnan(m.series[1].values[0]) && m.series[1].values[1] == 5 &&
          m.series[1].values[2] == 6 && isnan(m.series[1].values[3]));
    gl_matrix_free(&m);
    /* the last step, then one past the window: not a "next step" */
    FAILS(HEAD SERIES(DEV, "[1790985780,\"1\"],[1790985840,\"2\"]") TAIL,
          "outside the requested window");
}

static void test_timestamps(void)
{
    FAILS(HEAD SERIES(DEV, "[1790985600,\"1\"],[1790985600,\"2\"]") TAIL, "duplicate timestamp",
          "2026-10-03T00:00:00Z", "UUID=\"GPU-1\"", "pod=\"p1\"");
    FAILS(HEAD SERIES(DEV, "[1790985630,\"1\"]") TAIL, "off the step grid",
          "2026-10-03T00:00:30Z", "pod=\"p1\"");
    FAILS(HEAD SERIES(DEV, "[1790985660.5,\"1\"]") TAIL, "off the step grid", "1790985660.5");
    FAILS(HEAD SERIES(DEV, "[1790985840,\"1\"]") TAIL, "outside the requested window",
          "2026-10-03T00:04:00Z", "2026-10-03T00:00:00Z to 2026-10-03T00:03:00Z");
    FAILS(HEAD SERIES(DEV, "[1790985540,\"1\"]") TAIL, "outside the requested window",
          "2026-10-02T23:59:00Z");
    /* a NaN sample occupies its timestamp too */
    FAILS(HEAD SERIES(DEV, "[1790985600,\"NaN\"],[1790985600,\"2\"]") TAIL,
          "duplicate timestamp");
    /* a whole number written with a fraction is on the grid */
    struct gl_matrix m;
    parses(HEAD SERIES(DEV, "[1790985660.000,\"3\"],[1.79098572e9,\"4\"]") TAIL, NULL, &m);
    CHECK(m.samples == 2 && m.series[0].values[1] == 3 && m.series[0].values[2] == 4);
    gl_matrix_free(&m);
}

static void test_shape(void)
{
    FAILS(GOOD "<html><body>502 Bad Gateway</body></html>", "not valid JSON", "trailing garbage",
          "<html>");
    FAILS(GOOD GOOD, "not valid JSON", "trailing garbage");
    FAILS(GOOD " {}", "trailing garbage");
    FAILS("{\"status\":\"success\",\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
          "\"result\":[]}}",
          "duplicate key \"status\"");
    FAILS("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]},"
          "\"data\":{\"resultType\":\"matrix\",\"result\":[]}}",
          "duplicate key \"data\"");
    FAILS("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"resultType\":\"matrix\","
          "\"result\":[]}}",
          "duplicate key \"resultType\" in data");
    FAILS("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[],"
          "\"result\":[]}}",
          "duplicate key \"result\"");
    FAILS(HEAD "{\"metric\":{" DEV "},\"values\":[],\"values\":[[1790985600,\"1\"]]}" TAIL,
          "duplicate key \"values\"", "pod=\"p1\"");
    FAILS(HEAD "{\"metric\":{},\"metric\":{" DEV "},\"values\":[]}" TAIL,
          "duplicate key \"metric\"");
    FAILS(HEAD SERIES("\"pod\":\"a\",\"pod\":\"b\"", "") TAIL, "label \"pod\" appears twice");
    /* many labels: the sorted check */
    FAILS(HEAD SERIES("\"a1\":\"\",\"a2\":\"\",\"a3\":\"\",\"a4\":\"\",\"a5\":\"\",\"a6\":\"\","
                      "\"a7\":\"\",\"a8\":\"\",\"a9\":\"\",\"b1\":\"\",\"b2\":\"\",\"b3\":\"\","
                      "\"b4\":\"\",\"b5\":\"\",\"b6\":\"\",\"b7\":\"\",\"b8\":\"\",\"a5\":\"x\"",
                      "") TAIL,
          "label \"a5\" appears twice");
    static const char nul[] = HEAD SERIES(DEV, "[1790985600,\"1\0\"]") TAIL;
    fails_n(nul, sizeof nul - 1, NULL, "not valid JSON", (const char *)NULL);
    static const char nul2[] = "\0" GOOD;
    fails_n(nul2, sizeof nul2 - 1, NULL, "not valid JSON at byte", "invalid char", (const char *)NULL);
    FAILS("", "empty response body");
    FAILS("[]", "unexpected array at the top level");
    FAILS("\"x\"", "unexpected string");
    FAILS("{\"status\":\"success\"}", "expected data.resultType \"matrix\"");
    FAILS("{\"data\":{\"resultType\":\"matrix\",\"result\":[]}}", "no \"status\"");
    FAILS("{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"boom\"}",
          "status \"error\"", "bad_data", "boom");
    FAILS("{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}",
          "resultType is \"vector\"");
    FAILS(HEAD "{\"metric\":{},\"value\":[1790985600,\"1\"]}" TAIL, "instant-vector");
    FAILS(HEAD "{\"metric\":{},\"histograms\":[]}" TAIL, "unexpected key \"histograms\"");
    FAILS(HEAD "{\"metric\":{" DEV "}}" TAIL, "needs both \"metric\" and \"values\"", "pod=\"p1\"");
    FAILS("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]},\"x\":1}",
          "unexpected key \"x\"");
    FAILS("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":{}}}",
          "unexpected object at data.result");
    FAILS("{\"status\":1}", "unexpected number 1 at status");
    FAILS(HEAD "1" TAIL, "unexpected number 1 at data.result[]");
    FAILS("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]", "not valid JSON",
          "premature EOF");
    /* text after the document that begins a token (an HTML error page
     * behind a stray quote) is refused too, at its first byte; white space
     * is not text */
    FAILS(GOOD "\"ody><h1>502 Bad Gateway</h1>", "trailing garbage", "byte 183", "502 Bad");
    FAILS(GOOD " \"", "trailing garbage", "byte 184");
    FAILS(GOOD "\n1", "not valid JSON");
    {
        struct gl_matrix m;
        parses(GOOD " \r\n\t", NULL, &m);
        CHECK(m.nseries == 1 && m.samples == 2);
        gl_matrix_free(&m);
    }
    FAILS("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[],}}",
          "not valid JSON");
    {
        /* nesting is bounded (64 levels; a matrix response is 6 deep), even
         * inside a key whose value is skipped; 60 levels still parse */
        char deep[512], ok[512];
        int k = snprintf(deep, sizeof deep, "{\"stats\":");
        int j = snprintf(ok, sizeof ok, "{\"stats\":");
        for (int i = 0; i < 70; i++)
            deep[k++] = '[';
        for (int i = 0; i < 70; i++)
            deep[k++] = ']';
        for (int i = 0; i < 60; i++)
            ok[j++] = '[';
        for (int i = 0; i < 60; i++)
            ok[j++] = ']';
        const char *rest = ",\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
                           "\"result\":[]}}";
        snprintf(deep + k, sizeof deep - (size_t)k, "%s", rest);
        snprintf(ok + j, sizeof ok - (size_t)j, "%s", rest);
        FAILS(deep, "not valid JSON at byte 72", "nested too deeply"); /* the 65th level */
        struct gl_matrix m;
        parses(ok, NULL, &m);
        CHECK(m.nseries == 0);
        gl_matrix_free(&m);
    }
}

static void test_labels(void)
{
    /* invalid UTF-8 in a label value: the series and the label are named */
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"pod\":\"p\xff\"", "") TAIL, "not valid JSON",
          "label \"pod\"", "UUID=\"GPU-1\"", "UTF8");
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"p\xc3\x28\":\"x\"", "") TAIL,
          "a label name after \"UUID\"");
    /* where the body is split (libcurl's pieces) changes neither the answer
     * nor the byte it names: a character cut short at a value's end, two
     * lead bytes, a bad \u escape, a literal or number broken off (the
     * tokenizer stops elsewhere when it had the token whole) */
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"pod\":\"p1\xe2\"", "") TAIL, "label \"pod\"",
          "UTF8", "byte 95");
    FAILS("{\"status\":\"success\",\"stats\":\"\xed\xde,\",\"data\":{}}", "UTF8", "byte 29");
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"pod\":\"a\\u00x1\"", "") TAIL,
          "invalid escape", "byte 94");
    FAILS("{\"status\":\"success\",\"stats\":trux,\"data\":{}}", "invalid literal", "byte 28");
    FAILS("{\"status\":\"success\",\"stats\":[nul],\"data\":{}}", "invalid literal", "byte 29");
    FAILS("{\"status\":\"success\",\"stats\":[-\xed\xa0\x80],\"data\":{}}", "invalid number",
          "byte 29");
    FAILS(HEAD SERIES(DEV, "[1790985600,\"1\"],[17909856.x,\"2\"]") TAIL, "invalid number");
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"pod\":\"a\\u0000b\"", "") TAIL, "label \"pod\"",
          "NUL", "UUID=\"GPU-1\"");
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"a\\u0000b\":\"x\"", "") TAIL, "NUL");
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"pod\":\"\\udc00\"", "") TAIL, "surrogate");
    /* a lone low surrogate in a label name (found by fuzz_matrix) */
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"\\uDDCe\":\"nvidia0\"", "") TAIL,
          "lone UTF-16 surrogate", "byte 87");
    /* a lone high surrogate: a decoder could make it "?", so "p\ud800" and
     * "p\udbff" would become the same pod; followed by another \u escape it
     * could be combined into a wrong character */
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"pod\":\"p\\ud800\"", "") TAIL, "lone UTF-16 surrogate",
          "byte");
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"pod\":\"p\\uD83Dx\"", "") TAIL, "lone UTF-16 surrogate");
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"pod\":\"p\\ud83d\\u0041\"", "") TAIL,
          "lone UTF-16 surrogate");
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"p\\udbff\":\"x\"", "") TAIL, "lone UTF-16 surrogate");
    /* found anywhere in the body, even after an error the tokenizer stopped at (the
     * incremental parse scans on), and at its very end */
    FAILS(GOOD " x \"\\ud800\"", "lone UTF-16 surrogate", "byte 187");
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"pod\":\"p\\ud800", "") , "lone UTF-16 surrogate");
    {
        /* a surrogate pair is one character; an escaped backslash before
         * "ud800" is literal text, not an escape */
        struct gl_matrix m;
        parses(HEAD SERIES("\"UUID\":\"GPU-1\",\"pod\":\"p\\ud83d\\ude00\",\"ns\":\"a\\\\ud800\"",
                           "") TAIL,
               NULL, &m);
        CHECK_STR(gl_series_label(&m.series[0], "pod"), "p\xf0\x9f\x98\x80");
        CHECK_STR(gl_series_label(&m.series[0], "ns"), "a\\ud800");
        gl_matrix_free(&m);
    }
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"gpu\":0", "") TAIL, "unexpected number 0",
          "UUID=\"GPU-1\"");
    FAILS(HEAD SERIES("\"UUID\":\"GPU-1\",\"gpu\":null", "") TAIL, "unexpected null");
    FAILS(HEAD SERIES("\"UUID\":{}", "") TAIL, "unexpected object");
    /* a hostile label value is shown escaped and bounded */
    char body[8192];
    char big[3000];
    memset(big, 'A', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    snprintf(body, sizeof body, HEAD SERIES("\"pod\":\"%s\\n\"", "[1,\"1\"]") TAIL, big);
    struct gl_matrix m;
    struct gl_error err;
    CHECK(parse(body, NULL, &m, &err) == GL_ERR_PROM);
    CHECK(strstr(err.msg, "outside the requested window") && strlen(err.msg) < 1200 &&
          !strchr(err.msg, '\n'));
}

static pcre2_code *compile(const char *re)
{
    int ec;
    PCRE2_SIZE off;
    return pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &ec, &off, NULL);
}

static void test_warnings(void)
{
    const char *body = "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                       SERIES(DEV, "[1790985600,\"1\"]") "]},\"warnings\":[\"No StoreAPIs "
                       "matched for this query\",\"store eu-2 unavailable\"]}";
    FAILS(body, "2 warnings", "No StoreAPIs matched for this query",
          "prometheus.accept_warnings");
    char s0[] = "^No StoreAPIs matched", s1[] = "unavailable$";
    struct gl_pattern pats[2] = {{s0, compile(s0)}, {s1, compile(s1)}};
    struct gl_parse_opts o = {.accept_warnings = pats, .naccept_warnings = 1};
    FAILS_OPTS(body, &o, "1 warning ", "store eu-2 unavailable");
    o.naccept_warnings = 2;
    struct gl_matrix m;
    parses(body, &o, &m);
    CHECK(m.nwarnings == 2 && m.samples == 1);
    gl_matrix_free(&m);
    FAILS("{\"status\":\"success\",\"isPartial\":true,\"data\":{\"resultType\":\"matrix\","
          "\"result\":[]}}",
          "isPartial: true");
    FAILS("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]},"
          "\"warnings\":[1]}",
          "unexpected number 1 at warnings[]");
    FAILS("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]},"
          "\"warnings\":\"x\"}",
          "unexpected string");
    pcre2_code_free(pats[0].code);
    pcre2_code_free(pats[1].code);
}

static void test_bounds(void)
{
    struct gl_matrix m;
    /* MiB bound 2^20: the bound itself is kept, one more skipped; reasons */
    struct gl_parse_opts mib = {.max = 1048576};
    parses(HEAD SERIES(DEV, "[1790985600,\"1048576\"],[1790985660,\"1048577\"],"
                            "[1790985720,\"-1\"],[1790985780,\"NaN\"]")
           "," SERIES("\"UUID\":\"GPU-2\"", "[1790985600,\"+Inf\"],[1790985660,\"-Inf\"],"
                                          "[1790985720,\"1e13\"],[1790985780,\"Inf\"]") TAIL,
           &mib, &m);
    CHECK(m.samples == 1 && m.bad_samples == 7);
    CHECK(m.skipped[GL_SKIP_NAN_INF] == 4 && m.skipped[GL_SKIP_NEGATIVE] == 1 &&
          m.skipped[GL_SKIP_OUT_OF_BOUNDS] == 2);
    CHECK(m.series[0].values[0] == 1048576 && isnan(m.series[0].values[1]));
    CHECK(strstr(m.bad[0], "out_of_bounds: value \"1048577\" at 2026-10-03T00:01:00Z") &&
          strstr(m.bad[0], "pod=\"p1\""));
    CHECK(strstr(m.bad[1], "negative: value \"-1\""));
    CHECK(strstr(m.bad[2], "nan_inf: value \"NaN\""));
    CHECK(strstr(m.bad[3], "nan_inf: value \"+Inf\"") && strstr(m.bad[3], "GPU-2"));
    CHECK(strstr(m.bad[4], "nan_inf: value \"-Inf\""));
    CHECK(m.series[1].first_step == -1);
    gl_matrix_free(&m);
    /* without options: 2^48 */
    parses(HEAD SERIES(DEV, "[1790985600,\"1e13\"],[1790985660,\"1e15\"]") TAIL, NULL, &m);
    CHECK(m.samples == 1 && m.skipped[GL_SKIP_OUT_OF_BOUNDS] == 1);
    gl_matrix_free(&m);
    /* a ratio ≤ 1, GPU_UTIL ≤ 100 by its __name__ (known only at the end) */
    struct gl_parse_opts busy = {.max = 1, .max_name = "DCGM_FI_DEV_GPU_UTIL", .named_max = 100};
    parses(HEAD "{\"values\":[[1790985600,\"91\"],[1790985660,\"100.5\"]],\"metric\":{"
                "\"__name__\":\"DCGM_FI_DEV_GPU_UTIL\"}},"
           SERIES("\"__name__\":\"DCGM_FI_PROF_GR_ENGINE_ACTIVE\"",
                  "[1790985600,\"0.995687\"],[1790985660,\"1\"],[1790985720,\"1.5\"],"
                  "[1790985780,\"1e9\"]") TAIL,
           &busy, &m);
    CHECK(m.samples == 3 && m.skipped[GL_SKIP_OUT_OF_BOUNDS] == 3);
    CHECK(m.series[0].values[0] == 91 && isnan(m.series[0].values[1]));
    CHECK(m.series[1].values[0] == 0.995687 && m.series[1].values[1] == 1);
    gl_matrix_free(&m);
    /* label-info series: any finite value */
    struct gl_parse_opts any = {.any_finite = true};
    parses(HEAD SERIES("\"__name__\":\"kube_pod_labels\"",
                       "[1790985600,\"1\"],[1790985660,\"-1\"],[1790985720,\"1e300\"],"
                       "[1790985780,\"NaN\"]") TAIL,
           &any, &m);
    CHECK(m.samples == 3 && m.skipped[GL_SKIP_NAN_INF] == 1);
    gl_matrix_free(&m);
    /* 1e308 written out in full (309 digits) is well-formed: out of bounds */
    char body[1024], digits[310];
    memset(digits, '0', sizeof digits - 1);
    digits[0] = '1';
    digits[sizeof digits - 1] = '\0';
    snprintf(body, sizeof body, HEAD SERIES(DEV, "[1790985600,\"%s\"]") TAIL, digits);
    parses(body, &mib, &m);
    CHECK(m.samples == 0 && m.skipped[GL_SKIP_OUT_OF_BOUNDS] == 1);
    gl_matrix_free(&m);
    /* 1e400 overflows to Inf */
    parses(HEAD SERIES(DEV, "[1790985600,\"1e400\"]") TAIL, &mib, &m);
    CHECK(m.skipped[GL_SKIP_NAN_INF] == 1);
    gl_matrix_free(&m);
}

/* Many series and steps: the growth paths (series array, labels). */
static void test_large(void)
{
    struct gl_buf b;
    gl_buf_init(&b);
    gl_buf_puts(&b, HEAD);
    size_t nseries = 3000;
    for (size_t i = 0; i < nseries; i++) {
        gl_buf_printf(&b, "%s{\"metric\":{\"__name__\":\"x\",\"pod\":\"p%zu\"", i ? "," : "", i);
        for (int k = 0; k < 20; k++)
            gl_buf_printf(&b, ",\"l%02d\":\"v\"", k);
        gl_buf_puts(&b, "},\"values\":[");
        for (int t = 0; t < NSTEPS; t++)
            gl_buf_printf(&b, "%s[%d,\"%zu\"]", t ? "," : "", T0 + 60 * t, i + (size_t)t);
        gl_buf_puts(&b, "]}");
    }
    gl_buf_puts(&b, TAIL);
    struct gl_matrix m;
    parses(b.data, NULL, &m);
    CHECK(m.nseries == nseries && m.samples == nseries * NSTEPS);
    CHECK(m.series[2999].values[3] == 3002 && m.series[2999].nlabels == 22);
    CHECK_STR(gl_series_label(&m.series[1234], "pod"), "p1234");
    gl_matrix_free(&m);
    gl_buf_free(&b);
}

/* The memory budget (collection.max_samples_in_memory): two series of
 * NSTEPS steps and a few labels each, against budgets below and above
 * what they cost, worked out here: steps + the series' bookkeeping +
 * labels rounded up to 8-byte slots. Over it: GL_ERR_TOO_LARGE naming the
 * budget, no matrix, the slots given back; within it: the slots stay
 * charged while the caller holds the matrix. */
static void test_budget(void)
{
    const char *body = HEAD "{\"metric\":{\"pod\":\"a\"},\"values\":[[1790985600,\"1\"]]},"
                            "{\"metric\":{\"pod\":\"b\"},\"values\":[[1790985600,\"2\"]]}" TAIL;
    /* a label array of 1 (16 bytes) + "pod\0a\0" (6): 22 bytes, 3 slots */
    const size_t per = gl_series_slots(NSTEPS) + 3;
    CHECK(gl_series_slots(NSTEPS) > NSTEPS);
    struct gl_error err;
    struct gl_matrix m;
    size_t used = 0;
    struct gl_parse_opts o = {.slots_used = &used, .max_slots = 2 * per - 1};
    enum gl_status rc = gl_matrix_parse_opts(body, strlen(body), T0, 60, NSTEPS, "Q", &o, &m, &err);
    CHECK(rc == GL_ERR_TOO_LARGE && err.code == GL_ERR_TOO_LARGE && m.nseries == 0);
    CHECK(strstr(err.msg, "memory budget") != NULL && strstr(err.msg, "Q") != NULL);
    CHECK(used == 0);
    o.max_slots = 2 * per;
    rc = gl_matrix_parse_opts(body, strlen(body), T0, 60, NSTEPS, "Q", &o, &m, &err);
    CHECK(rc == GL_OK && m.nseries == 2 && m.series[1].values[0] == 2);
    CHECK(used == 2 * per);
    gl_matrix_free(&m);
    /* a second parse of the same unit shares the budget */
    rc = gl_matrix_parse_opts(body, strlen(body), T0, 60, NSTEPS, "Q", &o, &m, &err);
    CHECK(rc == GL_ERR_TOO_LARGE && used == 2 * per);
}

static struct gl_config *load(const char *prom, struct gl_error *err)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"prometheus\": {\"url\": \"http://127.0.0.1:1\"%s},"
             " \"clusters\": [{\"name\": \"a\"}, {\"name\": \"b\", \"prometheus\":"
             " {\"url\": \"http://127.0.0.1:2\"}}],"
             " \"prices\": {\"file\": \"p.csv\"}, \"billing\": {\"currency\": \"USD\"}}",
             prom);
    struct gl_config *c = NULL;
    err->msg[0] = '\0';
    gl_config_load(tap_tmpfile("wire.json", text), &c, err);
    return c;
}

/* The prometheus.* keys of the wire: defaults, ranges, patterns. */
static void test_config_keys(void)
{
    struct gl_error err;
    struct gl_config *c = load("", &err);
    CHECK(c && c->clusters[0].prom.max_response_bytes == 64 << 20);
    CHECK(c && c->clusters[0].prom.request_deadline_s == 300);
    CHECK(c && c->clusters[0].prom.naccept_warnings == 0);
    gl_config_free(c);
    /* (retries + 1) x timeout when longer than 300 s */
    c = load(", \"timeout_seconds\": 100, \"retries\": 4", &err);
    CHECK(c && c->clusters[0].prom.request_deadline_s == 500);
    gl_config_free(c);
    /* the shared block's patterns reach the cluster without its own prometheus */
    c = load(", \"accept_warnings\": [\"^No StoreAPIs\", \"x|y\"], \"request_deadline_seconds\": 7,"
             " \"max_response_bytes\": 4096",
             &err);
    CHECK(c && c->clusters[0].prom.naccept_warnings == 2 &&
          c->clusters[0].prom.accept_warnings[0].code &&
          strcmp(c->clusters[0].prom.accept_warnings[1].source, "x|y") == 0);
    CHECK(c && c->clusters[0].prom.request_deadline_s == 7 &&
          c->clusters[0].prom.max_response_bytes == 4096);
    CHECK(c && c->clusters[1].prom.naccept_warnings == 0);
    gl_config_free(c);
    c = load(", \"accept_warnings\": [\"ok\", \"(\"]", &err);
    CHECK(!c && strstr(err.msg, "prometheus.accept_warnings[1]") &&
          strstr(err.msg, "missing closing parenthesis"));
    c = load(", \"accept_warnings\": \"x\"", &err);
    CHECK(!c && strstr(err.msg, "prometheus.accept_warnings: expected an array"));
    c = load(", \"accept_warnings\": [\"\"]", &err);
    CHECK(!c && strstr(err.msg, "accept_warnings[0]"));
    c = load(", \"max_response_bytes\": 100", &err);
    CHECK(!c && strstr(err.msg, "prometheus.max_response_bytes") && strstr(err.msg, "1024"));
    c = load(", \"request_deadline_seconds\": 0", &err);
    CHECK(!c && strstr(err.msg, "prometheus.request_deadline_seconds"));
}

/* ---- instant vectors (gl_vector_parse) ---- */

#define VHEAD "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
#define VSERIES(labels, value) "{\"metric\":{" labels "},\"value\":" value "}"
#define VGOOD VHEAD VSERIES(DEV, "[1790985600,\"100\"]") "," \
    VSERIES("\"UUID\":\"GPU-2\",\"pod\":\"p2\"", "[1790985600.25,\"1.5e3\"]") TAIL

/* body must fail with GL_ERR_PROM, v left empty, the message naming "Q"
 * and holding every one of the NULL-terminated needles. */
static void vfails_n(const char *body, size_t len, const struct gl_parse_opts *o, ...)
{
    struct gl_vector v;
    struct gl_error err = {0};
    enum gl_status rc = gl_vector_parse(body, len, "Q", o, &v, &err);
    if (rc != GL_ERR_PROM || v.n != 0 || v.samples != NULL) {
        printf("# expected a failure (rc %d, %zu samples) for: %.200s\n", (int)rc, v.n, body);
        tap_case_failed = 1;
        gl_vector_free(&v);
        return;
    }
    if (strncmp(err.msg, "Q: ", 3) != 0) {
        printf("# message does not name the query: %s\n", err.msg);
        tap_case_failed = 1;
    }
    va_list ap;
    va_start(ap, o);
    for (const char *needle; (needle = va_arg(ap, const char *));)
        if (!strstr(err.msg, needle)) {
            printf("# message lacks \"%s\": %s\n", needle, err.msg);
            tap_case_failed = 1;
        }
    va_end(ap);
}

#define VFAILS(body, ...) vfails_n(body, strlen(body), NULL, __VA_ARGS__, (const char *)NULL)

/* A well-formed vector: every series with its labels (sorted by name), its
 * value and the instant the backend evaluated at, in milliseconds. */
static void test_vector_good(void)
{
    struct gl_vector v;
    struct gl_error err = {0};
    CHECK(gl_vector_parse(VGOOD, strlen(VGOOD), "Q", NULL, &v, &err) == GL_OK);
    CHECK(v.n == 2);
    if (v.n == 2) {
        CHECK(v.samples[0].value == 100 && v.samples[0].t_ms == 1790985600000);
        CHECK(v.samples[1].value == 1500 && v.samples[1].t_ms == 1790985600250);
        CHECK_STR(gl_sample_label(&v.samples[0], "pod"), "p1");
        CHECK_STR(gl_sample_label(&v.samples[1], "UUID"), "GPU-2");
        CHECK(gl_sample_label(&v.samples[1], "__name__") == NULL);
        CHECK(v.samples[0].nlabels == 3 && strcmp(v.samples[0].labels[0].name, "UUID") == 0 &&
              strcmp(v.samples[0].labels[1].name, "__name__") == 0 &&
              strcmp(v.samples[0].labels[2].name, "pod") == 0);
    }
    gl_vector_free(&v);
    /* a sample without labels (the answer of `count(...)`), read whole */
    const char *bare = VHEAD "{\"metric\":{},\"value\":[1790985600,\"7\"]}" TAIL;
    CHECK(gl_vector_parse(bare, strlen(bare), "Q", NULL, &v, &err) == GL_OK && v.n == 1 &&
          v.samples[0].nlabels == 0 && v.samples[0].value == 7);
    gl_vector_free(&v);
    /* an empty vector is an answer: no series at that instant */
    const char *empty = VHEAD TAIL;
    CHECK(gl_vector_parse(empty, strlen(empty), "Q", NULL, &v, &err) == GL_OK && v.n == 0);
    gl_vector_free(&v);
    /* an accepted warning is counted, as for matrices */
    pcre2_code *re = compile("PromQL info");
    struct gl_pattern pat = {.source = (char *)"PromQL info", .code = re};
    struct gl_parse_opts o = {.accept_warnings = &pat, .naccept_warnings = 1};
    const char *warned = "{\"status\":\"success\",\"warnings\":[\"PromQL info: x\"],"
                         "\"data\":{\"resultType\":\"vector\",\"result\":[]}}";
    CHECK(gl_vector_parse(warned, strlen(warned), "Q", &o, &v, &err) == GL_OK &&
          v.nwarnings == 1);
    gl_vector_free(&v);
    pcre2_code_free(re);
}

/* Each fault refuses the whole answer, with the matrices' wording where the
 * fault is the same. */
static void test_vector_faults(void)
{
    /* a value that cannot be used: its series would be lost unseen */
    VFAILS(VHEAD VSERIES(DEV, "[1790985600,\"NaN\"]") TAIL, "nan_inf", "value \"NaN\"",
           "result #0", "pod=\"p1\"", "2026-10-03T00:00:00Z", "refusing the response");
    VFAILS(VHEAD VSERIES(DEV, "[1790985600,\"+Inf\"]") TAIL, "nan_inf", "value \"+Inf\"");
    VFAILS(VHEAD VSERIES(DEV, "[1790985600,\"-Inf\"]") TAIL, "nan_inf", "value \"-Inf\"");
    VFAILS(VHEAD VSERIES(DEV, "[1790985600,\"1e999\"]") TAIL, "nan_inf", "value \"+Inf\"");
    VFAILS(VHEAD VSERIES(DEV, "[1790985600,\"abc\"]") TAIL, "is not a number", "\"abc\"");
    /* the same series twice, labels in another order */
    VFAILS(VHEAD VSERIES(DEV, "[1790985600,\"1\"]") ","
           VSERIES("\"pod\":\"p1\",\"UUID\":\"GPU-1\",\"__name__\":\"DCGM_FI_DEV_FB_USED\"",
                   "[1790985600,\"2\"]") TAIL,
           "duplicate series", "result #1", "as result #0", "pod=\"p1\"");
    VFAILS(VHEAD VSERIES("\"pod\":\"a\",\"pod\":\"b\"", "[1790985600,\"1\"]") TAIL,
           "label \"pod\" appears twice");
    VFAILS(VHEAD "{\"metric\":{" DEV "},\"value\":[1790985600,\"1\"],\"value\":[1790985600,\"2\"]}"
           TAIL, "duplicate key \"value\"");
    VFAILS("{\"status\":\"success\",\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
           "\"result\":[]}}", "duplicate key \"status\" in the response");
    /* bad UTF-8 and lone surrogates in labels */
    VFAILS(VHEAD VSERIES("\"UUID\":\"GPU-1\",\"pod\":\"p\xff\"", "[1790985600,\"1\"]") TAIL,
           "not valid JSON", "(the value of label \"pod\")");
    VFAILS(VHEAD VSERIES("\"UUID\":\"GPU-1\",\"pod\":\"\\ud800\"", "[1790985600,\"1\"]") TAIL,
           "lone UTF-16 surrogate");
    VFAILS(VHEAD VSERIES("\"UUID\":\"GPU-1\",\"pod\":\"a\\u0000b\"", "[1790985600,\"1\"]") TAIL,
           "NUL character");
    /* trailing garbage, a second document */
    VFAILS(VGOOD "<html><body>502 Bad Gateway</body></html>", "not valid JSON",
           "trailing garbage");
    VFAILS(VGOOD VGOOD, "not valid JSON", "trailing garbage");
    VFAILS(VHEAD, "not valid JSON");
    VFAILS("", "empty response body");
    /* the wrong result type, or a matrix's series */
    VFAILS(GOOD, "data.resultType is \"matrix\", expected \"vector\"");
    VFAILS("{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":[1,\"1\"]}}",
           "data.resultType is \"scalar\", expected \"vector\"");
    VFAILS(VHEAD SERIES(DEV, "[1790985600,\"1\"]") TAIL, "range-vector", "(\"values\")");
    VFAILS(VHEAD "{\"metric\":{" DEV "}}" TAIL, "needs both \"metric\" and \"value\"");
    VFAILS("{\"status\":\"success\"}", "expected data.resultType \"vector\"");
    VFAILS(VHEAD VSERIES(DEV, "[1790985600,\"1\",\"2\"]") TAIL, "sample #0",
           "unexpected string");
    VFAILS(VHEAD VSERIES(DEV, "[1e20,\"1\"]") TAIL, "not a plausible Unix time");
    /* status error, partial answers, warnings not accepted */
    VFAILS("{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error at char 3\"}",
           "status \"error\": bad_data: parse error at char 3");
    VFAILS("{\"status\":\"success\",\"isPartial\":true,\"data\":{\"resultType\":\"vector\","
           "\"result\":[]}}", "partial");
    VFAILS("{\"status\":\"success\",\"warnings\":[\"store unavailable\"],\"data\":{\"resultType\":"
           "\"vector\",\"result\":[]}}", "warning", "store unavailable");
}

int main(void)
{
    /* the parser warns through the global logger for every odd sample of
     * every split of every case: quiet, the checks read the counters */
    gl_log_threshold = GL_LOG_ERROR;
    RUN(test_config_keys);
    RUN(test_budget);
    RUN(test_good);
    RUN(test_values);
    RUN(test_digits);
    RUN(test_timestamps);
    RUN(test_shape);
    RUN(test_labels);
    RUN(test_warnings);
    RUN(test_bounds);
    RUN(test_large);
    RUN(test_vector_good);
    RUN(test_vector_faults);
    return TAP_END();
}
