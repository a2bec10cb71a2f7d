/* jsax — the streaming JSON tokenizer under the matrix parser (parse.c).
 *
 * Boost.JSON's basic_parser (C++, Debian libboost-json-dev) behind a small
 * C API in the shape of yajl's: the body is fed in pieces of any size as
 * libcurl hands them over, and each token is passed to a callback with its
 * text whole (a string, key or number split across pieces is put together
 * first). It keeps no tree and no copy of the body. Why not yajl, which
 * this replaced: the same work on the same bodies takes 2.1 x fewer
 * instructions and half the CPU (bench/json_eval.sh, RESULTS.md "JSON
 * parsers").
 *
 * Strict like yajl's defaults: one document; invalid JSON, invalid UTF-8,
 * control characters in strings, comments, trailing commas and any text
 * after the document but white space are errors. Nesting deeper than 64 is
 * refused (a matrix response is 6 deep). Lone UTF-16 surrogates in \u
 * escapes are refused (parse.c finds a lone high one first, to name it). */
#ifndef GL_JSAX_H
#define GL_JSAX_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Each returns nonzero to go on, 0 to stop the parse (GL_JSAX_CANCELLED).
 * Strings are the decoded bytes (escapes resolved; may hold NUL). */
struct gl_jsax_callbacks {
    int (*on_null)(void *ctx);
    int (*on_boolean)(void *ctx, int value);
    int (*on_number)(void *ctx, const char *text, size_t n); /* as written */
    int (*on_string)(void *ctx, const unsigned char *s, size_t n);
    int (*on_start_map)(void *ctx);
    int (*on_map_key)(void *ctx, const unsigned char *s, size_t n);
    int (*on_end_map)(void *ctx);
    int (*on_start_array)(void *ctx);
    int (*on_end_array)(void *ctx);
};

enum gl_jsax_status {
    GL_JSAX_OK,        /* all bytes taken (feed), the document complete (finish) */
    GL_JSAX_CANCELLED, /* a callback returned 0 */
    GL_JSAX_ERROR,     /* not valid JSON (gl_jsax_error says why) */
    GL_JSAX_NOMEM,     /* out of memory */
};

struct gl_jsax;

/* A parser calling cb with ctx; NULL when out of memory. Free with
 * gl_jsax_free (NULL is a no-op). cb must outlive it. */
struct gl_jsax *gl_jsax_new(const struct gl_jsax_callbacks *cb, void *ctx);
void gl_jsax_free(struct gl_jsax *j);

/* Parses the next n bytes. After a status other than GL_JSAX_OK the parse
 * is over: later feeds and finish return the same status. */
enum gl_jsax_status gl_jsax_feed(struct gl_jsax *j, const char *data, size_t n);

/* The end of the body: GL_JSAX_ERROR ("premature EOF") unless the
 * document is complete. */
enum gl_jsax_status gl_jsax_finish(struct gl_jsax *j);

/* After a stop: the offset in the body (all pieces fed) of the error, or
 * where the callback that stopped the parse was. An error is placed at the
 * first byte of the token that is not valid (the UTF-8 sequence, \u escape,
 * literal or number), since basic_parser itself stops at a byte that
 * depends on how much of a token it had at once: so the offset and message
 * are the same for any split of the body into pieces (tests/unit/
 * test_parse.c checks every case split at every byte, in two pieces and in
 * one-byte pieces). Known exception: garbage outside any string mixing a
 * literal's or number's first letters with a backslash or a \u escape
 * (`[tr\u00]`) can still be placed a few bytes apart; whether a body is
 * refused never depends on the split. */
size_t gl_jsax_offset(const struct gl_jsax *j);

/* What was wrong, after GL_JSAX_ERROR ("" otherwise); owned by j. */
const char *gl_jsax_error(const struct gl_jsax *j);

#ifdef __cplusplus
}
#endif

#endif
