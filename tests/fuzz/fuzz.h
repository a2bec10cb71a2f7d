/*
 * fuzz — shared pieces of the fuzz targets in this folder.
 *
 * Each fuzz_<stage>.c defines LLVMFuzzerTestOneInput; LLVMFuzzerInitialize
 * (fuzz_util.c, shared) quiets the engine's log unless GL_FUZZ_LOG=1.
 * Built with clang -fsanitize=fuzzer (meson -Dfuzz=true) they are
 * libFuzzer targets; linked with replay.c (any compiler, every build) they
 * replay the seed corpus and the regressions in the ordinary test run. A
 * broken invariant aborts (FUZZ_CHECK), which both count as a finding.
 */
#ifndef GL_FUZZ_H
#define GL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

struct gl_price_table;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with the condition and place when cond is false. */
#define FUZZ_CHECK(cond)                                                                      \
    do {                                                                                      \
        if (!(cond))                                                                          \
            fuzz_fail(__FILE__, __LINE__, #cond);                                             \
    } while (0)
_Noreturn void fuzz_fail(const char *file, int line, const char *what);

/* A path whose file holds exactly data (size bytes), for loaders that read
 * a path: a memfd rewritten for each input, valid until the next call. */
const char *fuzz_input_path(const uint8_t *data, size_t size);

/* Exercises a loaded price table the way invoicing does (overlap check,
 * lookup, price per GB-hour) and checks what it returns. */
void fuzz_use_prices(const struct gl_price_table *t);

#endif
