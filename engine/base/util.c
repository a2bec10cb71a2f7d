/* util — buffers, interning, files, logging. */
#include "util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

bool gl_buf_put_field(struct gl_buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0, k = 24, x = n;
    char d[24];
    do
        d[--k] = (char)('0' + x % 10);
    while ((x /= 10) > 0);
    size_t len = b->len;
    if (gl_buf_append(b, d + k, sizeof d - k) && gl_buf_append(b, ":", 1) &&
        gl_buf_append(b, s ? s : "", n))
        return true;
    b->len = len; /* unchanged */
    if (b->data)
        b->data[len] = '\0';
    return false;
}

bool gl_buf_vprintf(struct gl_buf *b, const char *fmt, va_list ap)
{
    /* one pass when it fits the room there is, a second after growing */
    va_list ap2;
    va_copy(ap2, ap);
    size_t room = b->data ? b->cap - b->len : 0;
    int n = vsnprintf(room ? b->data + b->len : NULL, room, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        if (room)
            b->data[b->len] = '\0'; /* what the pass wrote: unchanged */
        return false;
    }
    if ((size_t)n < room) {
        b->len += (size_t)n;
        return true;
    }
    if (!buf_reserve(b, (size_t)n)) {
        if (room)
            b->data[b->len] = '\0'; /* the first pass's cut text: unchanged */
        return false;
    }
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

void gl_free_each(void *const *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(p[i]);
}

void gl_free_strs(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
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
    gl_free_strs(t->strs, (size_t)t->count);
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

int gl_strcmp_n(const char *const *a, const char *const *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int c = strcmp(a[i], b[i]);
        if (c)
            return c;
    }
    return 0;
}

int32_t gl_intern_xget(struct gl_intern *t, const char *s)
{
    int32_t id = gl_intern_get(t, s);
    if (id < 0) {
        fputs("gpuledger: out of memory\n", stderr);
        abort();
    }
    return id;
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

const char *gl_build_commit = "unknown";
enum gl_log_level gl_log_threshold = GL_LOG_INFO;
enum gl_log_format gl_log_format = GL_LOG_LOGFMT;

bool gl_log_format_parse(const char *s, enum gl_log_format *out)
{
    static const char *const names[] = {"logfmt", "json", "text"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (enum gl_log_format)i;
            return true;
        }
    return false;
}

/* A formatted event: its bytes, each marked as coming from the format
 * string (literal) or from an argument. Keys are literal, so an argument
 * (a label value, a server's text) can never make a field. */
#define LOG_LINE_MAX 4096
struct log_text {
    char c[LOG_LINE_MAX];
    bool lit[LOG_LINE_MAX];
    size_t n;
};

static void text_add(struct log_text *t, const char *s, size_t n, bool lit)
{
    for (size_t i = 0; i < n && t->n < LOG_LINE_MAX - 1; i++) {
        unsigned char ch = (unsigned char)s[i];
        t->c[t->n] = ch < 0x20 ? ' ' : (char)ch; /* one line per event */
        t->lit[t->n++] = lit;
    }
}

/* vsnprintf, one conversion at a time (each taken from ap by its type). */
static void log_format(struct log_text *t, const char *fmt, va_list ap)
{
    const char *p = fmt;
    while (*p) {
        if (*p != '%') {
            const char *q = strchr(p, '%');
            size_t n = q ? (size_t)(q - p) : strlen(p);
            text_add(t, p, n, true);
            p += n;
            continue;
        }
        if (p[1] == '%') {
            text_add(t, "%", 1, true);
            p += 2;
            continue;
        }
        /* %[flags][width][.precision][length]conversion */
        char spec[32];
        size_t k = 0;
        int star[2], nstar = 0;
        spec[k++] = *p++;
        while (*p && strchr("-+ #0", *p) && k < 20)
            spec[k++] = *p++;
        /* the width, then the precision after a '.': each a '*' (its value
         * taken from ap) or digits, the spec kept short of its end */
        static const size_t digits_end[2] = {20, 24};
        for (int part = 0; part < 2 && (part == 0 || *p == '.'); part++) {
            if (part == 1)
                spec[k++] = *p++;
            if (*p == '*') {
                star[nstar++] = va_arg(ap, int);
                spec[k++] = *p++;
            }
            while (*p >= '0' && *p <= '9' && k < digits_end[part])
                spec[k++] = *p++;
        }
        char len[3] = "";
        size_t ln = 0;
        while (*p && strchr("hlzjtL", *p) && ln < 2) {
            len[ln++] = *p;
            spec[k++] = *p++;
        }
        len[ln] = '\0';
        char conv = *p ? *p++ : 's';
        spec[k++] = conv;
        spec[k] = '\0';
        char out[LOG_LINE_MAX];
        int a0 = nstar > 0 ? star[0] : 0, a1 = nstar > 1 ? star[1] : 0;
#define EMIT(v)                                                                                \
    (nstar == 2   ? snprintf(out, sizeof out, spec, a0, a1, v)                                 \
     : nstar == 1 ? snprintf(out, sizeof out, spec, a0, v)                                     \
                  : snprintf(out, sizeof out, spec, v))
        int w;
        _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wformat-nonliteral\"")
        /* an integer's argument by its length modifier: one ladder for the
         * signed conversions' types and the unsigned ones' */
#define EMIT_INT(ll, l, z, j, i)                                                               \
    (strcmp(len, "ll") == 0 ? EMIT(va_arg(ap, ll))                                             \
     : strcmp(len, "l") == 0 ? EMIT(va_arg(ap, l))                                             \
     : strcmp(len, "z") == 0 || strcmp(len, "t") == 0 ? EMIT(va_arg(ap, z))                    \
     : strcmp(len, "j") == 0 ? EMIT(va_arg(ap, j))                                             \
                             : EMIT(va_arg(ap, i)))
        if (strchr("di", conv)) {
            w = EMIT_INT(long long, long, ptrdiff_t, intmax_t, int);
        } else if (strchr("uxXo", conv)) {
            w = EMIT_INT(unsigned long long, unsigned long, size_t, uintmax_t, unsigned);
        } else if (strchr("fFeEgGaA", conv)) {
            if (strcmp(len, "L") == 0)
                w = EMIT(va_arg(ap, long double));
            else
                w = EMIT(va_arg(ap, double));
        } else if (conv == 'c') {
            w = EMIT(va_arg(ap, int));
        } else if (conv == 'p') {
            w = EMIT(va_arg(ap, void *));
        } else {
            const char *sv = va_arg(ap, const char *);
            w = EMIT(sv ? sv : "(null)");
        }
        _Pragma("GCC diagnostic pop")
#undef EMIT_INT
#undef EMIT
        if (w > 0)
            text_add(t, out, (size_t)w < sizeof out ? (size_t)w : sizeof out - 1, false);
    }
    t->c[t->n] = '\0';
}

/* A token of t: [b, e). */
struct span {
    size_t b, e;
};

static bool key_byte(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

/* logfmt: quoted when empty or holding a space, '=', '"', '\\' or a
 * control character; escaped as in JSON strings. */
static void logfmt_value(struct gl_buf *b, const char *v, size_t n)
{
    bool quote = n == 0;
    for (size_t i = 0; i < n && !quote; i++)
        if ((unsigned char)v[i] <= ' ' || v[i] == '=' || v[i] == '"' || v[i] == '\\' ||
            (unsigned char)v[i] == 0x7f)
            quote = true;
    if (!quote) {
        gl_buf_append(b, v, n);
        return;
    }
    gl_buf_append(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch == '"' || ch == '\\') {
            char e[2] = {'\\', (char)ch};
            gl_buf_append(b, e, 2);
        } else if (ch < 0x20 || ch == 0x7f) {
            gl_buf_printf(b, "\\u%04x", ch);
        } else {
            gl_buf_append(b, v + i, 1);
        }
    }
    gl_buf_append(b, "\"", 1);
}

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
    static _Thread_local struct log_text t; /* not on the stack of deep callers */
    t.n = 0;
    va_list ap;
    va_start(ap, fmt);
    log_format(&t, fmt, ap);
    va_end(ap);
    if (gl_log_format == GL_LOG_TEXT) {
        fprintf(stderr, "%s %s %s\n", ts, names[level], t.c);
        return;
    }
    /* tokens split at literal spaces outside literal quotes */
    struct span tok[256];
    size_t ntok = 0;
    size_t i = 0;
    while (i < t.n && ntok < 256) {
        while (i < t.n && t.lit[i] && t.c[i] == ' ')
            i++;
        if (i >= t.n)
            break;
        size_t b = i;
        bool inq = false;
        for (; i < t.n; i++) {
            if (t.lit[i] && t.c[i] == '"')
                inq = !inq;
            else if (t.lit[i] && t.c[i] == ' ' && !inq)
                break;
        }
        tok[ntok++] = (struct span){b, i};
    }
    struct gl_buf msg, out;
    gl_buf_init(&msg);
    gl_buf_init(&out);
    cJSON *root = gl_log_format == GL_LOG_JSON ? cJSON_CreateObject() : NULL;
    if (root) {
        cJSON_AddStringToObject(root, "ts", ts);
        cJSON_AddStringToObject(root, "level", names[level]);
    } else {
        gl_buf_printf(&out, "ts=%s level=%s", ts, names[level]);
    }
    struct gl_buf fields;
    gl_buf_init(&fields);
    for (size_t k = 0; k < ntok; k++) {
        size_t b = tok[k].b, e = tok[k].e, j = b;
        while (j < e && t.lit[j] && key_byte(t.c[j]))
            j++;
        bool field = j > b && j < e && t.lit[j] && t.c[j] == '=';
        if (!field) {
            /* a word of the message; literal quotes were the author's */
            if (msg.len)
                gl_buf_append(&msg, " ", 1);
            for (size_t x = b; x < e; x++)
                if (!(t.lit[x] && t.c[x] == '"'))
                    gl_buf_append(&msg, &t.c[x], 1);
            continue;
        }
        size_t vb = j + 1, ve = e;
        if (ve - vb >= 2 && t.lit[vb] && t.c[vb] == '"' && t.lit[ve - 1] && t.c[ve - 1] == '"')
            vb++, ve--;
        char key[128];
        size_t kl = j - b < sizeof key - 2 ? j - b : sizeof key - 2;
        memcpy(key, &t.c[b], kl);
        key[kl] = '\0';
        if (strcmp(key, "ts") == 0 || strcmp(key, "level") == 0 || strcmp(key, "msg") == 0)
            memmove(key + 1, key, kl + 1), key[0] = '_';
        if (root) {
            char *v = gl_xcalloc(ve - vb + 1, 1);
            memcpy(v, &t.c[vb], ve - vb);
            cJSON_AddStringToObject(root, key, v);
            free(v);
        } else {
            gl_buf_printf(&fields, " %s=", key);
            logfmt_value(&fields, &t.c[vb], ve - vb);
        }
    }
    if (root) {
        cJSON_AddStringToObject(root, "msg", msg.data ? msg.data : "");
        char *js = cJSON_PrintUnformatted(root);
        if (js)
            fprintf(stderr, "%s\n", js);
        free(js);
        cJSON_Delete(root);
    } else {
        gl_buf_puts(&out, " msg=");
        logfmt_value(&out, msg.data ? msg.data : "", msg.len);
        if (fields.data)
            gl_buf_append(&out, fields.data, fields.len);
        fprintf(stderr, "%s\n", out.data ? out.data : "");
    }
    gl_buf_free(&fields);
    gl_buf_free(&msg);
    gl_buf_free(&out);
}

enum gl_status gl_write_atomic(const char *path, const char *data, size_t len,
                               struct gl_error *err)
{
    size_t n = strlen(path) + 8;
    char *tmp = gl_xcalloc(n, 1);
    snprintf(tmp, n, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    enum gl_status rc = GL_OK;
    if (!f) {
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot write: %s", tmp, strerror(errno));
    } else {
        bool ok = fwrite(data, 1, len, f) == len;
        ok = fflush(f) == 0 && ok;
        ok = fsync(fileno(f)) == 0 && ok;
        ok = fclose(f) == 0 && ok;
        if (!ok || rename(tmp, path) != 0) {
            rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: write failed: %s", path, strerror(errno));
            remove(tmp);
        }
    }
    free(tmp);
    return rc;
}
