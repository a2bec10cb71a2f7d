/*
 * error — the one error convention of gpuledger.
 *
 * Functions that can fail return a gl_status and fill a caller-owned
 * struct gl_error with a message naming the place (file:line, key path,
 * URL and status, CSV row). Only main() prints it and picks the exit code.
 */
#ifndef GL_ERROR_H
#define GL_ERROR_H

#include <stddef.h>

enum gl_status {
    GL_OK = 0,
    GL_ERR_RUNTIME = 1,   /* database, I/O, memory */
    GL_ERR_USAGE = 2,     /* command line */
    GL_ERR_CONFIG = 3,    /* config file, price table, query files, missing price */
    GL_ERR_PROM = 4,      /* Prometheus: HTTP, API error, malformed response */
    GL_ERR_PARTIAL = 5,   /* some windows failed, the rest stored */
    GL_ERR_LOCKED = 6,    /* another run holds the database lock */
    GL_ERR_STATE = 7,     /* period state: closing a closed or unfinished month */
    /* Internal, never an exit status: a response larger than
     * prometheus.max_response_bytes (decompressed). collect splits the chunk
     * (fewer hours, then device shards) and reports GL_ERR_PROM when it
     * cannot split further. */
    GL_ERR_TOO_LARGE = 8,
};

struct gl_error {
    enum gl_status code;
    char msg[2048];
};

/* Sets err (when not NULL) and returns code. */
enum gl_status gl_error_set(struct gl_error *err, enum gl_status code,
                            const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes the message already in err with more context: "ctx: old". */
enum gl_status gl_error_prefix(struct gl_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
