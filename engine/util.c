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
    size_t need;
    if (__builtin_add_overflow(b->len, extra, &need) || __builtin_add_overflow(need, 1, &need))
        return false;
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        if (__builtin_mul_overflow(cap, 2, &cap))
            return false;
    char *p = realloc(b->data, cap);
    if (!p)
        return false;
    b->data = p;
    b->cap = cap;
    return true;
}

bool gl_buf_reserve(struct gl_buf *b, size_t extra)
{
    if (!buf_reserve(b, extra))
        return false;
    b->data[b->len] = '\0';
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

bool gl_buf_vprintf(struct gl_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || !buf_reserve(b, (size_t)n))
        return false;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return true;
}

bool gl_buf_printf(struct gl_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bool ok = gl_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return ok;
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

static bool safe_char(unsigned char ch, size_t at)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '_' || (ch == '.' && at > 0);
}

/* Ends in '-' and 16 lowercase hex digits: the suffix of a hashed name. */
static bool looks_hashed(const char *s, size_t len)
{
    if (len < 17 || s[len - 17] != '-')
        return false;
    for (size_t i = len - 16; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

char *gl_safe_name(const char *s)
{
    size_t len = strlen(s);
    bool verbatim = len > 0 && len <= GL_SAFE_NAME_MAX && !looks_hashed(s, len);
    for (size_t i = 0; verbatim && i < len; i++)
        verbatim = safe_char((unsigned char)s[i], i);
    if (verbatim)
        return gl_strdup(s);
    size_t keep = len < GL_SAFE_NAME_PREFIX ? len : GL_SAFE_NAME_PREFIX;
    char *out = gl_xcalloc(keep + 18, 1);
    for (size_t i = 0; i < keep; i++)
        out[i] = safe_char((unsigned char)s[i], i) ? s[i] : '_';
    snprintf(out + keep, 18, "-%016llx",
             (unsigned long long)gl_hash_bytes(s, len, GL_HASH_SEED));
    return out;
}

struct named {
    const char *id;
    char *name;
};

static int named_cmp(const void *a, const void *b)
{
    return strcmp(((const struct named *)a)->name, ((const struct named *)b)->name);
}

enum gl_status gl_safe_names_check(const char *const *ids, size_t n, struct gl_error *err)
{
    struct named *v = gl_xcalloc(n, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = (struct named){ids[i], gl_safe_name(ids[i])};
    gl_sort(v, n, sizeof *v, named_cmp);
    enum gl_status rc = GL_OK;
    for (size_t i = 1; i < n && !rc; i++)
        if (strcmp(v[i - 1].name, v[i].name) == 0)
            rc = gl_error_set(err, GL_ERR_CONFIG,
                              "teams \"%.200s\" and \"%.200s\" would be written to the same "
                              "file name \"%s\" (their hashes collide): rename one of them",
                              v[i - 1].id, v[i].id, v[i].name);
    for (size_t i = 0; i < n; i++)
        free(v[i].name);
    free(v);
    return rc;
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
        unsigned char ch = (unsigned char)*s;
        if (strchr("\\|<>[]`&", ch))
            fputc('\\', out);
        fputc(ch < 0x20 || ch == 0x7f ? ' ' : ch, out);
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
