/*
 * parse — a Prometheus "matrix" response (cJSON) laid on the step grid.
 *
 * Reads: the JSON body of one query_range chunk. Writes: series with their
 * labels and one value slot per step of the chunk (NAN = no sample). NaN,
 * ±Inf, negative and non-numeric samples are counted and skipped.
 */
#ifndef GL_PARSE_H
#define GL_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct gl_label {
    char *name;
    char *value;
};

struct gl_series {
    struct gl_label *labels;
    size_t nlabels;
    double *values;     /* nsteps slots, NAN where there is no sample */
    int64_t first_step; /* first slot with a sample, -1 when none */
    int64_t first_seen; /* instant of the first sample ever seen (label
                         * series: from the database), -1 when none */
};

struct gl_matrix {
    struct gl_series *series;
    size_t nseries;
    int64_t start, step;
    size_t nsteps;
    size_t samples;      /* valid samples kept */
    size_t bad_samples;  /* NaN, Inf, negative, non-numeric */
    size_t off_grid;     /* timestamps not on the step grid */
    char bad[5][256];    /* descriptions of the first bad samples */
    size_t nwarnings;
};

/* Parses json (len bytes) into m for the grid start + i*step, i < nsteps.
 * `what` names the query in error messages. On failure m is left empty. */
enum gl_status gl_matrix_parse(const char *json, size_t len, int64_t start, int64_t step,
                               size_t nsteps, const char *what, struct gl_matrix *m,
                               struct gl_error *err);
void gl_matrix_free(struct gl_matrix *m);

/* Value of a label, NULL when absent or empty (SPEC §9: empty = absent). */
const char *gl_series_label(const struct gl_series *s, const char *name);

#endif
