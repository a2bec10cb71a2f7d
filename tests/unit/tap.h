/* tap — a minimal test harness printing TAP lines ("ok - name"). */
#ifndef GL_TAP_H
#define GL_TAP_H

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int tap_failed_cases, tap_passed_cases, tap_case_failed;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            printf("# %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);        \
            tap_case_failed = 1;                                                       \
        }                                                                              \
    } while (0)

#define CHECK_STR(a, b)                                                                \
    do {                                                                               \
        const char *a_ = (a), *b_ = (b);                                               \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                       \
            printf("# %s:%d: \"%s\" != \"%s\" (%s vs %s)\n", __FILE__, __LINE__,       \
                   a_ ? a_ : "(null)", b_ ? b_ : "(null)", #a, #b);                    \
            tap_case_failed = 1;                                                       \
        }                                                                              \
    } while (0)

#define RUN(fn)                                                                        \
    do {                                                                               \
        tap_case_failed = 0;                                                           \
        fn();                                                                          \
        if (tap_case_failed) {                                                         \
            printf("not ok - %s\n", #fn);                                              \
            tap_failed_cases++;                                                        \
        } else {                                                                       \
            printf("ok - %s\n", #fn);                                                  \
            tap_passed_cases++;                                                        \
        }                                                                              \
    } while (0)

#define TAP_END() (printf("# %d passed, %d failed\n", tap_passed_cases, tap_failed_cases), \
                   tap_failed_cases ? 1 : 0)

/* Writes text to a fresh temporary file and returns its path (static). */
static inline const char *tap_tmpfile(const char *name, const char *text)
{
    static char path[512];
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(path, sizeof path, "%s/gl-unit-%d-%s", dir, (int)getpid(), name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

/* Temporary files (tap_tmpfile's gl-unit-<pid>-*) on tmpfs when the caller
 * named no folder (the test databases take a third of the time there), all
 * removed by tap_tmp_end. */
static inline void tap_tmp_begin(void)
{
    if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0)
        setenv("TMPDIR", "/dev/shm", 1);
}

static inline void tap_tmp_end(void)
{
    char pat[600];
    snprintf(pat, sizeof pat, "%s/gl-unit-%d-*", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    glob_t g;
    if (glob(pat, 0, NULL, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; i++)
            unlink(g.gl_pathv[i]);
    globfree(&g);
}

#endif
