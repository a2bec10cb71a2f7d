/*
 * json_eval_engine — the engine's real matrix parser (engine/source/parse.c,
 * gl_matrix_parser fed in 16 KiB pieces, as engine/source/fetch.c feeds it from
 * libcurl) behind one plain C function for bench/json_eval.cpp.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "parse.h"

#include "json_eval_engine.h"

static int finish(struct gl_matrix_parser *mp, struct json_eval_acc *acc)
{
    struct gl_matrix m;
    struct gl_error err;
    if (gl_matrix_parser_finish(mp, &m, &err) != GL_OK) {
        fprintf(stderr, "engine parser: %s\n", err.msg);
        return -1;
    }
    acc->series += m.nseries;
    acc->samples += m.samples + m.bad_samples;
    for (size_t i = 0; i < m.nseries; i++) {
        const struct gl_series *s = &m.series[i];
        acc->labels += s->nlabels;
        for (size_t j = 0; j < s->nlabels; j++)
            acc->label_bytes += strlen(s->labels[j].name) + strlen(s->labels[j].value);
        for (size_t t = 0; t < m.nsteps; t++)
            if (!isnan(s->values[t]))
                acc->sum += s->values[t];
    }
    gl_matrix_free(&m);
    return 0;
}

int json_eval_engine(const char *body, size_t len, int64_t start, int64_t step, size_t nsteps,
                     struct json_eval_acc *acc)
{
    struct gl_matrix_parser *mp = gl_matrix_parser_new(start, step, nsteps, "bench", NULL);
    for (size_t off = 0; off < len; off += 16384)
        gl_matrix_parser_feed(mp, body + off, len - off < 16384 ? len - off : 16384);
    return finish(mp, acc);
}

int json_eval_engine_file(FILE *f, int64_t start, int64_t step, size_t nsteps,
                          struct json_eval_acc *acc)
{
    struct gl_matrix_parser *mp = gl_matrix_parser_new(start, step, nsteps, "bench", NULL);
    char buf[16384];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        gl_matrix_parser_feed(mp, buf, n);
    return finish(mp, acc);
}
