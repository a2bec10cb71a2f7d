/* fuzz — the input file, the quiet log and the price table walk. */
#define _GNU_SOURCE
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "price.h"
#include "util.h"

void fuzz_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", file, line, what);
    abort();
}

/* The engine's log is quiet while fuzzing (GL_FUZZ_LOG=1 keeps it). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *v = getenv("GL_FUZZ_LOG");
    if (!v || strcmp(v, "1") != 0)
        gl_log_threshold = GL_LOG_ERROR;
    return 0;
}

const char *fuzz_input_path(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("gl-fuzz-input", MFD_CLOEXEC);
        if (fd < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) {
        perror("fuzz input file");
        abort();
    }
    return path;
}

void fuzz_use_prices(const struct gl_price_table *t)
{
    /* models from the example configs and captures, plus every row's own
     * pattern text (often a model name with ^ and $) */
    static const char *const models[] = {"NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3",
                                         "Tesla T4", "NVIDIA A30", "", "NVIDIA H100-20C"};
    static const int64_t capacities_mib[] = {0, 1, 15360, 81920};
    struct gl_error err;
    FUZZ_CHECK(t->file != NULL);
    for (size_t i = 0; i < t->n + sizeof models / sizeof *models; i++) {
        const char *model = i < t->n ? t->entries[i].pattern : models[i - t->n];
        memset(&err, 0, sizeof err);
        if (gl_prices_check_model(t, model, &err) != GL_OK)
            FUZZ_CHECK(err.msg[0] != '\0');
    }
    for (size_t i = 0; i < t->n; i++) {
        const struct gl_price_entry *e = &t->entries[i];
        FUZZ_CHECK(e->id && e->pattern && e->currency && e->code);
        FUZZ_CHECK(e->valid_from < e->valid_to);
        FUZZ_CHECK(e->price12 >= 0);
        FUZZ_CHECK(!e->has_capacity || e->capacity_gb12 > 0);
        const int64_t at[] = {e->valid_from, e->valid_to - 1, e->valid_to};
        for (size_t k = 0; k < sizeof at / sizeof *at; k++) {
            for (size_t j = 0; j < t->n; j++) {
                int f = gl_prices_find(t, t->entries[j].pattern, at[k]);
                FUZZ_CHECK(f >= -1 && f < (int)t->n);
                if (f >= 0)
                    FUZZ_CHECK(t->entries[f].valid_from <= at[k] && at[k] < t->entries[f].valid_to);
            }
        }
        for (size_t k = 0; k < sizeof capacities_mib / sizeof *capacities_mib; k++) {
            gl_i128 per_gbh = -1;
            memset(&err, 0, sizeof err);
            if (gl_price_per_gbh(t, e, "fuzz model", capacities_mib[k], &per_gbh, &err) == GL_OK)
                FUZZ_CHECK(per_gbh >= 0);
            else
                FUZZ_CHECK(err.msg[0] != '\0');
        }
    }
}
