/*
 * util — small shared helpers: growable buffers, string interning,
 * whole-file reading and stderr logging.
 */
#ifndef GL_UTIL_H
#define GL_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

/* Growable byte buffer; always NUL-terminated when len > 0. */
struct gl_buf {
    char *data;
    size_t len;
    size_t cap;
};

void gl_buf_init(struct gl_buf *b);
void gl_buf_free(struct gl_buf *b);
void gl_buf_reset(struct gl_buf *b);
/* Return false on allocation failure (the buffer is unchanged). */
/* Room for extra more bytes and a NUL after len (data is then non-NULL). */
bool gl_buf_reserve(struct gl_buf *b, size_t extra);
bool gl_buf_append(struct gl_buf *b, const void *data, size_t n);
bool gl_buf_puts(struct gl_buf *b, const char *s);
/* s as "<decimal length>:<s>", one field of a length-prefixed key (no value
 * can run into the next); a NULL s is the empty field. No printf: keys are
 * built per series and per step. */
bool gl_buf_put_field(struct gl_buf *b, const char *s);
bool gl_buf_printf(struct gl_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
bool gl_buf_vprintf(struct gl_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/*
 * String interning: maps strings to dense ids 0..n-1. Strings are copied
 * and owned by the table; gl_intern_str(t, id) stays valid until free.
 */
struct gl_intern;
struct gl_intern *gl_intern_new(void);
void gl_intern_free(struct gl_intern *t);
/* Returns the id, or -1 on allocation failure. */
int32_t gl_intern_get(struct gl_intern *t, const char *s);
/* The same, aborting when memory runs out (as gl_xrealloc). */
int32_t gl_intern_xget(struct gl_intern *t, const char *s);
/* Returns the id of s or -1 when absent (does not insert). */
int32_t gl_intern_find(const struct gl_intern *t, const char *s);
const char *gl_intern_str(const struct gl_intern *t, int32_t id);
int32_t gl_intern_count(const struct gl_intern *t);

/* strcmp of the first differing of n strings a[i], b[i] (0: all equal):
 * a sort key of several text columns. */
int gl_strcmp_n(const char *const *a, const char *const *b, size_t n);

/* qsort that accepts an empty (possibly NULL) array. */
void gl_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* FNV-1a over n bytes. */
uint64_t gl_hash_bytes(const void *p, size_t n, uint64_t h);
#define GL_HASH_SEED 1469598103934665603ULL

/* Reads a whole file into a NUL-terminated heap string (free()). */
enum gl_status gl_read_file(const char *path, char **out, size_t *len,
                            struct gl_error *err);
/* The same, refusing (GL_ERR_CONFIG, naming path and max) a file of more
 * than max bytes: for files that must be small (secrets), so that a wrong
 * path such as /dev/zero cannot exhaust memory. */
enum gl_status gl_read_file_max(const char *path, size_t max, char **out, size_t *len,
                                struct gl_error *err);

/* Joins dir and path unless path is absolute; returns malloc'd string. */
char *gl_path_join(const char *dir, const char *path);
/* Directory part of path ("." when none); malloc'd. */
char *gl_path_dir(const char *path);

/*
 * A file-name part for an id (a team), malloc'd (free()), never NULL: at
 * most GL_SAFE_NAME_MAX bytes of [A-Za-z0-9._-], never starting with '.', so
 * a hostile or long id can neither leave the output folder nor exceed
 * NAME_MAX with the "invoice-<period>-" / "report-<period>-" prefixes.
 * An id that is already such a name (and does not end like a hashed one)
 * is used as it is; any other id becomes the first GL_SAFE_NAME_PREFIX bytes
 * of its sanitized form (other characters as '_'), '-' and the 16 hex
 * digits of the FNV-1a 64-bit hash of the whole id. Verbatim names never
 * end in "-" + 16 hex digits, so the two kinds cannot meet; two hashed ids
 * meet only when their hashes do (gl_safe_names_check finds that).
 */
#define GL_SAFE_NAME_MAX 128
#define GL_SAFE_NAME_PREFIX 64
char *gl_safe_name(const char *s);
/* GL_OK when the n ids (distinct strings) get distinct gl_safe_name names;
 * else GL_ERR_CONFIG naming both ids and the name. */
enum gl_status gl_safe_names_check(const char *const *ids, size_t n, struct gl_error *err);

/* s for a message: printable ASCII kept, other bytes as \xNN. Returns out. */
const char *gl_escape_ascii(const char *s, char *out, size_t n);

/* Writes s as Markdown text (the one Markdown escaper: table cells, list
 * items, headings): a backslash before what could end a cell or start
 * markup (| \ < > [ ] ` &, so no raw HTML, entity, link or code span);
 * control characters and line breaks as spaces. */
void gl_md_cell(FILE *out, const char *s);

/* strdup that aborts on allocation failure (small config strings only). */
char *gl_strdup(const char *s);
void *gl_xcalloc(size_t n, size_t size);
void *gl_xrealloc(void *p, size_t size);

/* free() of each of n pointers, and GL_FREE_EACH(a, b, ...) its use on a
 * list: the owned fields of one record, freed in one statement. */
void gl_free_each(void *const *p, size_t n);
#define GL_FREE_EACH(...)                                                                      \
    gl_free_each((void *[]){__VA_ARGS__}, sizeof((void *[]){__VA_ARGS__}) / sizeof(void *))
/* Frees the n owned strings of v, then v itself (NULL with n 0 is fine). */
void gl_free_strs(char **v, size_t n);

/* Logging to stderr, one line per event. gl_log's format string is a
 * message followed by key=value fields (`"wrote outputs period=%s
 * reason=\"%s\""`); keys are taken from the format string only. Written
 * as logfmt (ts=... level=... msg="..." key=value, values quoted and
 * escaped when needed), JSON (one object per line) or the older text
 * ("ts level message key=value"). */
enum gl_log_level { GL_LOG_ERROR, GL_LOG_WARN, GL_LOG_INFO, GL_LOG_DEBUG };
enum gl_log_format { GL_LOG_LOGFMT, GL_LOG_JSON, GL_LOG_TEXT };
extern enum gl_log_level gl_log_threshold;
/* The commit this binary was built from (main sets it from gl_vcs.h);
 * "unknown" when the build could not tell: fingerprints of stored figures
 * that depend on the engine's code are then never trusted (reprice.c). */
extern const char *gl_build_commit;
extern enum gl_log_format gl_log_format;
/* "logfmt", "json" or "text" into *out; false for another word. */
bool gl_log_format_parse(const char *s, enum gl_log_format *out);
void gl_log(enum gl_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Writes data to path through path.tmp + rename. */
enum gl_status gl_write_atomic(const char *path, const char *data, size_t len,
                               struct gl_error *err);

#endif
