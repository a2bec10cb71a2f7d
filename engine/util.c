/* util — buffers, interning, files, logging. */
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void gl_buf_init(struct gl_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void gl_buf_free(struct gl_buf *b)
{
    free(b->data);
    gl_buf_init(b);
}

void gl_buf_reset(struct gl_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static bool buf_reserve(struct gl_buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return false;
    b->data = p;
    b->cap = cap;
    return true;
}

bool gl_buf_append(struct gl_buf *b, const void *data, size_t n)
{
    if (!buf_reserve(b, n))
        return false;
    memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}

bool gl_buf_puts(struct gl_buf *b, const char *s)
{
    return gl_buf_append(b, s, strlen(s));
}

bool gl_buf_printf(struct gl_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !buf_reserve(b, (size_t)n))
        return false;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return true;
}

void gl_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

uint64_t gl_hash_bytes(const void *p, size_t n, uint64_t h)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

struct gl_intern {
    char **strs;
    int32_t count;
    int32_t cap;
    int32_t *slots;     /* open addressing, -1 = empty */
    uint32_t nslots;    /* power of two */
};

struct gl_intern *gl_intern_new(void)
{
    struct gl_intern *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->nslots = 64;
    t->slots = malloc(t->nslots * sizeof *t->slots);
    if (!t->slots) {
        free(t);
        return NULL;
    }
    memset(t->slots, 0xff, t->nslots * sizeof *t->slots);
    return t;
}

void gl_intern_free(struct gl_intern *t)
{
    if (!t)
        return;
    for (int32_t i = 0; i < t->count; i++)
        free(t->strs[i]);
    free(t->strs);
    free(t->slots);
    free(t);
}

static uint32_t intern_slot(const struct gl_intern *t, const char *s)
{
    uint32_t mask = t->nslots - 1;
    uint32_t i = (uint32_t)gl_hash_bytes(s, strlen(s), GL_HASH_SEED) & mask;
    while (t->slots[i] >= 0 && strcmp(t->strs[t->slots[i]], s) != 0)
        i = (i + 1) & mask;
    return i;
}

static bool intern_grow(struct gl_intern *t)
{
    uint32_t n = t->nslots * 2;
    int32_t *slots = malloc(n * sizeof *slots);
    if (!slots)
        return false;
    memset(slots, 0xff, n * sizeof *slots);
    int32_t *old = t->slots;
    t->slots = slots;
    t->nslots = n;
    for (int32_t id = 0; id < t->count; id++)
        t->slots[intern_slot(t, t->strs[id])] = id;
    free(old);
    return true;
}

int32_t gl_intern_find(const struct gl_intern *t, const char *s)
{
    return t->slots[intern_slot(t, s)];
}

int32_t gl_intern_get(struct gl_intern *t, const char *s)
{
    uint32_t i = intern_slot(t, s);
    if (t->slots[i] >= 0)
        return t->slots[i];
    if ((uint32_t)(t->count + 1) * 2 > t->nslots) {
        if (!intern_grow(t))
            return -1;
        i = intern_slot(t, s);
    }
    if (t->count == t->cap) {
        int32_t cap = t->cap ? t->cap * 2 : 32;
        char **p = realloc(t->strs, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        t->strs = p;
        t->cap = cap;
    }
    char *copy = strdup(s);
    if (!copy)
        return -1;
    t->strs[t->count] = copy;
    t->slots[i] = t->count;
    return t->count++;
}

const char *gl_intern_str(const struct gl_intern *t, int32_t id)
{
    return (id >= 0 && id < t->count) ? t->strs[id] : NULL;
}

int32_t gl_intern_count(const struct gl_intern *t)
{
    return t->count;
}

enum gl_status gl_read_file(const char *path, char **out, size_t *len,
                            struct gl_error *err)
{
    return gl_read_file_max(path, SIZE_MAX, out, len, err);
}

enum gl_status gl_read_file_max(const char *path, size_t max, char **out, size_t *len,
                                struct gl_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return gl_error_set(err, GL_ERR_CONFIG, "%s: cannot open: %s", path,
                            strerror(errno));
    struct gl_buf b;
    gl_buf_init(&b);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n > max - b.len) {
            fclose(f);
            gl_buf_free(&b);
            return gl_error_set(err, GL_ERR_CONFIG, "%s: larger than %zu bytes", path, max);
        }
        if (!gl_buf_append(&b, chunk, n)) {
            fclose(f);
            gl_buf_free(&b);
            return gl_error_set(err, GL_ERR_RUNTIME, "%s: out of memory", path);
        }
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        gl_buf_free(&b);
        return gl_error_set(err, GL_ERR_CONFIG, "%s: read error", path);
    }
    if (!b.data && !gl_buf_append(&b, "", 0))
        return gl_error_set(err, GL_ERR_RUNTIME, "%s: out of memory", path);
    *out = b.data;
    if (len)
        *len = b.len;
    return GL_OK;
}

const char *gl_safe_name(const char *s, char *out, size_t n)
{
    const char *orig = s;
    size_t j = 0;
    for (; *s && j + 1 < n; s++) {
        unsigned char ch = (unsigned char)*s;
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || (ch == '.' && j > 0);
        out[j++] = ok ? (char)ch : '_';
    }
    if (j == 0 && n > 1)
        out[j++] = '_';
    out[j] = '\0';
    /* a changed name gets a hash of the original, so that "a|b" and "a_b"
     * do not write the same file */
    if (strcmp(out, orig) != 0 && j + 10 < n)
        snprintf(out + j, n - j, "-%08x",
                 (unsigned)gl_hash_bytes(orig, strlen(orig), GL_HASH_SEED));
    return out;
}

const char *gl_escape_ascii(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; s && *s && k + 5 < n; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch >= 0x20 && ch < 0x7f)
            out[k++] = (char)ch;
        else
            k += (size_t)snprintf(out + k, n - k, "\\x%02x", ch);
    }
    if (n)
        out[k < n ? k : n - 1] = '\0';
    return out;
}

void gl_md_cell(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|')
            fputs("\\|", out);
        else if (*s == '\n' || *s == '\r')
            fputc(' ', out);
        else
            fputc(*s, out);
    }
}

char *gl_strdup(const char *s)
{
    char *p = strdup(s ? s : "");
    if (!p) {
        fputs("gpuledger: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *gl_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fputs("gpuledger: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *gl_xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (!q) {
        fputs("gpuledger: out of memory\n", stderr);
        abort();
    }
    return q;
}

char *gl_path_join(const char *dir, const char *path)
{
    if (path[0] == '/' || !dir || !dir[0] || strcmp(dir, ".") == 0)
        return gl_strdup(path);
    size_t n = strlen(dir) + strlen(path) + 2;
    char *p = gl_xcalloc(n, 1);
    snprintf(p, n, "%s/%s", dir, path);
    return p;
}

char *gl_path_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return gl_strdup(".");
    if (slash == path)
        return gl_strdup("/");
    char *p = gl_xcalloc((size_t)(slash - path) + 1, 1);
    memcpy(p, path, (size_t)(slash - path));
    return p;
}

enum gl_log_level gl_log_threshold = GL_LOG_INFO;

void gl_log(enum gl_log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (level > gl_log_threshold)
        return;
    char ts[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* one line per event, whatever a label value holds */
    for (char *p = line; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = ' ';
    fprintf(stderr, "%s %s %s\n", ts, names[level], line);
}
