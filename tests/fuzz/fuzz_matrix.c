/*
 * fuzz_matrix — libFuzzer target of the matrix parser (engine/source/parse.c).
 *
 * Input: a query_range response body, parsed on the engine's usual chunk
 * grid: start 2026-10-03T12:00:00Z (the seeds' time), step 60 s, 360 steps
 * (6 hours). An input starting with a NUL byte carries its own grid in a
 * 5-byte header instead, then the body:
 *   byte 1      step: index into the divisors of 3600 (what
 *               collection.step_seconds accepts), modulo their count
 *   byte 2      chunk hours, 1 + byte % 24; the step count is capped at 11000
 *               like collection.chunk_hours
 *   bytes 3-4   int16 little endian: hours from the fixed start
 * After a successful parse the result is checked against what parse.h and
 * the integrity rules promise: the body is exactly one JSON document (cJSON as the
 * oracle: nothing but white space after it, no NUL byte in it), values are
 * finite and in bounds, first_step and the sample count agree with the
 * slots (a duplicate timestamp cannot be a kept sample).
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "parse.h"
#include "util.h"

#define GRID_T0 1791028800 /* 2026-10-03T12:00:00Z */
#define VALUE_MAX 281474976710656.0 /* 2^48: parse.c's plausibility bound */

/* The one call of the parser (its signature may grow options). */
static enum gl_status parse_body(const char *body, size_t len, int64_t start, int64_t step,
                                 size_t nsteps, struct gl_matrix *m, struct gl_error *err)
{
    return gl_matrix_parse(body, len, start, step, nsteps, "fuzz", m, err);
}

static void check_matrix(const struct gl_matrix *m, int64_t start, int64_t step, size_t nsteps)
{
    FUZZ_CHECK(m->start == start && m->step == step && m->nsteps == nsteps);
    FUZZ_CHECK(m->nseries == 0 || m->series != NULL);
    size_t kept = 0;
    for (size_t i = 0; i < m->nseries; i++) {
        const struct gl_series *s = &m->series[i];
        FUZZ_CHECK(s->nlabels == 0 || s->labels != NULL);
        for (size_t j = 0; j < s->nlabels; j++) {
            FUZZ_CHECK(s->labels[j].name != NULL && s->labels[j].value != NULL);
            const char *v = gl_series_label(s, s->labels[j].name);
            FUZZ_CHECK(v == NULL || strlen(v) > 0);
        }
        FUZZ_CHECK(nsteps == 0 || s->values != NULL);
        int64_t first = -1;
        for (size_t k = 0; k < nsteps; k++) {
            double x = s->values[k];
            if (isnan(x))
                continue;
            FUZZ_CHECK(isfinite(x) && x >= 0 && x <= VALUE_MAX);
            if (first < 0)
                first = (int64_t)k;
            kept++;
        }
        FUZZ_CHECK(s->first_step == first);
        FUZZ_CHECK(first < 0 ? s->first_seen == -1 : s->first_seen == start + first * step);
    }
    /* every kept sample is in exactly one slot: a second sample for a slot
     * (duplicate timestamp) must not be counted as kept */
    FUZZ_CHECK(kept == m->samples);
    size_t nbad = m->bad_samples < 5 ? m->bad_samples : 5;
    for (size_t k = 0; k < nbad; k++)
        FUZZ_CHECK(memchr(m->bad[k], '\0', sizeof m->bad[k]) != NULL);
}

/* The body holds one JSON document and nothing else (no trailing HTML of a
 * proxy, no second document, no NUL byte). */
static int one_json_document(const char *body, size_t len)
{
    if (memchr(body, '\0', len))
        return 0;
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!doc)
        return 0;
    cJSON_Delete(doc);
    for (; end < body + len; end++)
        if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r')
            return 0;
    return 1;
}

static void run_one(const uint8_t *data, size_t size, int64_t start, int64_t step, size_t nsteps)
{
    /* an exact-size copy: any read past len is an ASan finding */
    char *body = malloc(size ? size : 1);
    FUZZ_CHECK(body != NULL);
    if (size)
        memcpy(body, data, size);
    else
        body[0] = '\0'; /* not part of the input (len 0) */
    struct gl_matrix m;
    struct gl_error err;
    memset(&err, 0, sizeof err);
    enum gl_status rc = parse_body(body, size, start, step, nsteps, &m, &err);
    if (rc == GL_OK) {
        FUZZ_CHECK(one_json_document(body, size));
        check_matrix(&m, start, step, nsteps);
    } else {
        gl_log(GL_LOG_INFO, "fuzz: rejected: %s", err.msg);
        FUZZ_CHECK(err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof err.msg) != NULL);
        FUZZ_CHECK(m.nseries == 0 && m.series == NULL);
    }
    gl_matrix_free(&m);
    free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= 5 && data[0] == 0) {
        static int64_t divisors[64];
        static size_t ndiv;
        if (!ndiv)
            for (int64_t d = 1; d <= 3600; d++)
                if (3600 % d == 0)
                    divisors[ndiv++] = d;
        int64_t step = divisors[data[1] % ndiv];
        int64_t hours = 1 + data[2] % 24;
        size_t nsteps = (size_t)(hours * 3600 / step);
        if (nsteps > 11000)
            nsteps = 11000;
        int16_t off = (int16_t)(data[3] | data[4] << 8);
        run_one(data + 5, size - 5, GRID_T0 + (int64_t)off * 3600, step, nsteps);
        return 0;
    }
    run_one(data, size, GRID_T0, 60, 360);
    return 0;
}
