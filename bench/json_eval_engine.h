/* json_eval_engine — see json_eval_engine.c; shared with json_eval.cpp. */
#ifndef JSON_EVAL_ENGINE_H
#define JSON_EVAL_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What every parser must find in the same bodies. */
struct json_eval_acc {
    size_t series, samples, labels, label_bytes;
    double sum; /* values that the engine keeps: finite, >= 0, <= 2^48 */
};

int json_eval_engine(const char *body, size_t len, int64_t start, int64_t step, size_t nsteps,
                     struct json_eval_acc *acc);
/* The same, the body read from f in 16 KiB pieces (never whole). */
int json_eval_engine_file(FILE *f, int64_t start, int64_t step, size_t nsteps,
                          struct json_eval_acc *acc);

#ifdef __cplusplus
}
#endif
#endif
