/*
 * parse — a Prometheus "matrix" response (streaming: jsax.h) laid on the step
 * grid; an instant "vector" response (gl_vector_parse) by the same parser.
 *
 * Reads: the JSON body of one query_range chunk. Writes: series with their
 * labels and one value slot per step of the chunk (NAN = no sample). The
 * body is parsed by callbacks straight into the compact form (no tree), so
 * memory is about the size of the result, not a multiple of the body.
 *
 * Strict (docs/specification.md "Integrity"): the body must be exactly one JSON document of the shape
 * {status, data: {resultType: "matrix", result: [{metric, values}]},
 * warnings?, infos?} (plus error/errorType, and VictoriaMetrics' isPartial
 * and stats). These fail the whole response, naming query, series and
 * timestamp: invalid JSON, trailing text or a second document, a duplicate
 * key, a label that is not a string or holds a NUL or invalid UTF-8, a
 * sample that is not [number, "string"], a value that is not a complete
 * Prometheus float, a timestamp off the step grid, outside the window or
 * seen twice in a series, a backend warning not accepted by the options,
 * isPartial: true. A response over the options' memory budget fails with
 * GL_ERR_TOO_LARGE. Well-formed values that cannot be billed are skipped and
 * counted by reason: NaN/±Inf, negative, beyond the query's plausibility
 * bound (see gl_parse_opts).
 */
#ifndef GL_PARSE_H
#define GL_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

struct gl_label {
    char *name;
    char *value; /* both point into the series' labels allocation */
};

struct gl_series {
    struct gl_label *labels;
    size_t nlabels;
    double *values;     /* nsteps slots, NAN where there is no sample */
    int64_t first_step; /* first slot with a sample, -1 when none */
    int64_t first_seen; /* instant of the first sample ever seen (label
                         * series: from the database), -1 when none */
};

/* Why a well-formed sample was skipped. */
enum gl_skip { GL_SKIP_NAN_INF, GL_SKIP_NEGATIVE, GL_SKIP_OUT_OF_BOUNDS, GL_SKIP_N };
/* "nan_inf", "negative", "out_of_bounds" (what logs print). */
extern const char *const gl_skip_names[GL_SKIP_N];

struct gl_matrix {
    struct gl_series *series;
    size_t nseries;
    int64_t start, step;
    size_t nsteps;
    size_t samples;               /* valid samples kept */
    size_t bad_samples;           /* skipped: the sum of skipped[] */
    size_t skipped[GL_SKIP_N];    /* skipped samples by reason */
    char bad[5][256];             /* descriptions of the first skipped samples */
    size_t nwarnings;             /* backend warnings accepted (and logged) */
};

/* Plausibility bounds and accepted warnings of one query. */
struct gl_parse_opts {
    double max;          /* largest plausible value, inclusive (0: 2^48) */
    bool any_finite;     /* label-info series: any finite value (no bound) */
    /* series whose __name__ is max_name get named_max instead of max
     * (DCGM_FI_DEV_GPU_UTIL, in percent, among ratio queries) */
    const char *max_name;
    double named_max;
    /* backend warnings matching one of these are logged and accepted;
     * any other warning fails the response (borrowed) */
    const struct gl_pattern *accept_warnings;
    size_t naccept_warnings;
    /* Memory budget shared by the parses of one unit (NULL: none): each
     * series adds its step slots and its labels, in 8-byte slots, to
     * *slots_used (borrowed; the parses feeding it run on one thread); a
     * series that takes it past max_slots fails the parse with
     * GL_ERR_TOO_LARGE, so that the caller asks for less (a split). A
     * parse that does not hand its matrix over gives its slots back. */
    size_t *slots_used;
    size_t max_slots;
};

/* The slots a series of nsteps steps costs before its labels: the value
 * slots and the series' own bookkeeping. */
size_t gl_series_slots(size_t nsteps);

/* Parses json (len bytes) into m for the grid start + i*step, i < nsteps.
 * `what` names the query in error messages; opts NULL means the 2^48 bound
 * and no accepted warnings. On failure (GL_ERR_PROM, the message names the
 * place) m is left empty; on success free it with gl_matrix_free. */
enum gl_status gl_matrix_parse_opts(const char *json, size_t len, int64_t start, int64_t step,
                                    size_t nsteps, const char *what,
                                    const struct gl_parse_opts *opts, struct gl_matrix *m,
                                    struct gl_error *err);
/* The same parse of a body that arrives in pieces (as it is downloaded):
 * new, feed every piece in order, finish. Pieces may split the body
 * anywhere; the result and every message are those of gl_matrix_parse_opts
 * over the whole body. what and opts are copied (opts' patterns stay
 * borrowed). finish frees the parser and fills m (free it with
 * gl_matrix_free) or err; gl_matrix_parser_free drops an unfinished one. */
struct gl_matrix_parser;
struct gl_matrix_parser *gl_matrix_parser_new(int64_t start, int64_t step, size_t nsteps,
                                              const char *what,
                                              const struct gl_parse_opts *opts);
void gl_matrix_parser_feed(struct gl_matrix_parser *mp, const char *data, size_t n);
enum gl_status gl_matrix_parser_finish(struct gl_matrix_parser *mp, struct gl_matrix *m,
                                       struct gl_error *err);
void gl_matrix_parser_free(struct gl_matrix_parser *mp);
/* Whether the parse already failed on the unit's memory budget (opts): the
 * rest of the body cannot change that, so the transfer may stop. */
bool gl_matrix_parser_over_budget(const struct gl_matrix_parser *mp);

/* gl_matrix_parse_opts with opts NULL. */
enum gl_status gl_matrix_parse(const char *json, size_t len, int64_t start, int64_t step,
                               size_t nsteps, const char *what, struct gl_matrix *m,
                               struct gl_error *err);
void gl_matrix_free(struct gl_matrix *m);

/* One series of an instant vector (/api/v1/query): its labels, sorted by
 * name, and its one sample. */
struct gl_sample {
    struct gl_label *labels; /* one allocation, the sample's */
    size_t nlabels;
    double value;            /* finite: NaN and ±Inf refuse the response */
    int64_t t_ms;            /* the evaluation time the backend reports, ms */
};

struct gl_vector {
    struct gl_sample *samples;
    size_t n;
    size_t nwarnings; /* backend warnings accepted (and logged) */
};

/* Parses an instant-query body into v with the matrix parser's checks and
 * messages (one JSON document, no duplicate key, labels valid UTF-8
 * without NUL, status "success", no partial answer, warnings only when
 * opts accepts them), plus its own: data.resultType must be "vector", each
 * series {metric, value: [timestamp, "value"]}, a value that is not finite
 * (NaN, ±Inf) and two series with the same labels fail the response.
 * Of opts only the accepted warnings and the memory budget apply. On
 * failure (GL_ERR_PROM, naming `what` and the series) v is left empty; on
 * success free it with gl_vector_free. */
enum gl_status gl_vector_parse(const char *json, size_t len, const char *what,
                               const struct gl_parse_opts *opts, struct gl_vector *v,
                               struct gl_error *err);
void gl_vector_free(struct gl_vector *v);

/* Value of a sample's label, NULL when absent or empty. */
const char *gl_sample_label(const struct gl_sample *s, const char *name);

/* Value of a label, NULL when absent or empty (docs/specification.md "Arithmetic": empty = absent). */
const char *gl_series_label(const struct gl_series *s, const char *name);
/* qsort order of series by their labels (name, then value, pair by pair;
 * fewer labels first on a tie), as a backend's matrix is sorted. */
int gl_series_cmp(const void *pa, const void *pb);

#endif
