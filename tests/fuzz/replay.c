/*
 * replay — runs one fuzz target over files, without libFuzzer.
 *
 * Linked with fuzz_<name>.c in every build (gcc, ASan/UBSan or not), so the
 * ordinary test run replays the seed corpus and the fuzzer-found
 * regressions. Each input runs in a child process: a crash, a sanitizer
 * report, a leak or a broken invariant fails that input alone. TAP: one
 * line per regression file, one line for the whole corpus.
 *
 * usage: replay_<name> [FILE|DIR ...]   (default: corpus/<name> and
 *        regressions/<name> beside this source file)
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz.h"
#include "util.h"

#ifndef GL_FUZZ_NAME
#error "GL_FUZZ_NAME and GL_FUZZ_DIR are set by tests/fuzz/meson.build"
#endif

/* The line of a child's stderr that says what went wrong, into why. */
static void first_reason(const char *text, char *why, size_t n)
{
    static const char *const marks[] = {"fuzz invariant broken", "ERROR: AddressSanitizer",
                                        "ERROR: LeakSanitizer", "runtime error", "SUMMARY"};
    for (size_t k = 0; k < sizeof marks / sizeof *marks; k++) {
        const char *p = strstr(text, marks[k]);
        if (!p)
            continue;
        while (p > text && p[-1] != '\n')
            p--;
        size_t len = strcspn(p, "\n");
        snprintf(why, n, ": %.*s", (int)(len < 400 ? len : 400), p);
        return;
    }
    why[0] = '\0';
}

/* 0 when the input ran clean, else a description in why. The child's
 * stderr is passed on and searched for the reason. */
static int replay_file(const char *path, char *why, size_t n)
{
    char *data = NULL;
    size_t len = 0;
    struct gl_error err;
    if (gl_read_file(path, &data, &len, &err)) {
        snprintf(why, n, "%s", err.msg);
        return 1;
    }
    int fds[2];
    if (pipe(fds) != 0) {
        free(data);
        snprintf(why, n, "pipe failed");
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        free(data);
        snprintf(why, n, "fork failed");
        return 1;
    }
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        close(fds[1]);
        LLVMFuzzerTestOneInput((const uint8_t *)data, len);
        free(data);
        exit(0); /* exit, not _exit: LeakSanitizer checks here */
    }
    free(data);
    close(fds[1]);
    struct gl_buf out;
    gl_buf_init(&out);
    char chunk[4096];
    ssize_t got;
    while ((got = read(fds[0], chunk, sizeof chunk)) > 0) {
        fwrite(chunk, 1, (size_t)got, stderr);
        if (out.len < 65536)
            gl_buf_append(&out, chunk, (size_t)got);
    }
    close(fds[0]);
    int st;
    int waited = waitpid(pid, &st, 0) == pid;
    char reason[512];
    first_reason(out.data ? out.data : "", reason, sizeof reason);
    gl_buf_free(&out);
    if (!waited) {
        snprintf(why, n, "waitpid failed");
        return 1;
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFEXITED(st))
        snprintf(why, n, "exit status %d%s", WEXITSTATUS(st), reason);
    else
        snprintf(why, n, "killed by signal %d%s", WIFSIGNALED(st) ? WTERMSIG(st) : 0, reason);
    return 1;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of dir (sorted, dot files skipped), or dir itself when a file. */
static char **list_inputs(const char *dir, size_t *n)
{
    *n = 0;
    char **out = NULL;
    DIR *d = opendir(dir);
    if (!d) {
        out = gl_xcalloc(1, sizeof *out);
        out[(*n)++] = gl_strdup(dir);
        return out;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README.md") == 0)
            continue;
        out = gl_xrealloc(out, (*n + 1) * sizeof *out);
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        out[*n] = gl_xcalloc(len, 1);
        snprintf(out[*n], len, "%s/%s", dir, e->d_name);
        (*n)++;
    }
    closedir(d);
    if (*n)
        qsort(out, *n, sizeof *out, by_name);
    return out;
}

/* One TAP line per file (per_file) or one for the set. Returns failures. */
static int replay_set(const char *label, const char *dir, int per_file)
{
    size_t n;
    char **files = list_inputs(dir, &n);
    int failed = 0;
    char first[4096] = "";
    for (size_t i = 0; i < n; i++) {
        char why[1024];
        fprintf(stderr, "replay %s: %s\n", GL_FUZZ_NAME, files[i]);
        int bad = replay_file(files[i], why, sizeof why);
        if (per_file) {
            if (bad)
                printf("not ok - %s %s: %s\n", label, files[i], why);
            else
                printf("ok - %s %s\n", label, files[i]);
        } else if (bad && !failed++) {
            snprintf(first, sizeof first, "%s: %s", files[i], why);
        }
        free(files[i]);
    }
    free(files);
    if (!per_file) {
        if (failed)
            printf("not ok - %s: %d of %zu inputs of %s failed, first %s\n", label, failed, n,
                   dir, first);
        else if (n)
            printf("ok - %s: %zu inputs of %s replayed clean\n", label, n, dir);
        else
            printf("not ok - %s: no inputs in %s\n", label, dir);
    } else if (!n) {
        printf("# %s: no files in %s\n", label, dir);
    }
    return failed;
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    int failed = 0;
    if (argc > 1) {
        for (int i = 1; i < argc; i++)
            failed += replay_set(GL_FUZZ_NAME, argv[i], 1);
    } else {
        failed += replay_set(GL_FUZZ_NAME " seed corpus", GL_FUZZ_DIR "/corpus/" GL_FUZZ_NAME, 0);
        failed += replay_set(GL_FUZZ_NAME " regression", GL_FUZZ_DIR "/regressions/" GL_FUZZ_NAME,
                             1);
    }
    return failed ? 1 : 0;
}
