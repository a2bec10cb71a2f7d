/* outstate — the output folder's state per period (schema/003). */
#include "outstate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "close.h"
#include "gl_build.h"
#include "money.h"
#include "query.h"
#include "util.h"

/* Length-prefixed, so that ("ab","c") and ("a","bc") differ. */
static uint64_t hash_field(uint64_t h, const void *p, size_t n)
{
    uint64_t len = n;
    h = gl_hash_bytes(&len, sizeof len, h);
    return gl_hash_bytes(p, n, h);
}

static uint64_t hash_str(uint64_t h, const char *s)
{
    return hash_field(h, s ? s : "", s ? strlen(s) : 0);
}

static uint64_t hash_i64(uint64_t h, int64_t v)
{
    char buf[32];
    return hash_field(h, buf, (size_t)snprintf(buf, sizeof buf, "%" PRId64, v));
}

static uint64_t hash_dec(uint64_t h, gl_i128 v, int scale)
{
    char buf[96];
    gl_dec_format(v, scale, buf, sizeof buf);
    return hash_str(h, buf);
}

static void hash_hex(uint64_t h, char out[GL_OUTSTATE_HASH])
{
    snprintf(out, GL_OUTSTATE_HASH, "%016" PRIx64, h);
}

enum gl_status gl_outstate_inputs(const struct gl_config *c, const struct gl_price_table *prices,
                                  struct gl_outstate_fp *fp, struct gl_error *err)
{
    uint64_t h = hash_str(GL_HASH_SEED, prices->file);
    for (size_t i = 0; i < prices->n; i++) {
        const struct gl_price_entry *e = &prices->entries[i];
        h = hash_str(h, e->id);
        h = hash_str(h, e->pattern);
        h = hash_i64(h, e->unit);
        h = hash_dec(h, e->price12, GL_PRICE_DECIMALS);
        h = hash_str(h, e->currency);
        h = hash_i64(h, e->valid_from);
        h = hash_i64(h, e->valid_to);
        h = hash_i64(h, e->has_capacity);
        h = hash_dec(h, e->capacity_gb12, GL_PRICE_DECIMALS);
    }
    hash_hex(h, fp->prices);
    if (gl_config_fingerprint(c, fp->config, err))
        return gl_error_prefix(err, "hashing the config for the output state");
    return GL_OK;
}

static enum gl_status data_version(struct gl_store *s, const char *period, int64_t *v,
                                   struct gl_error *err)
{
    return gl_query_data_version(s, period, v, err);
}

static void device_row(void *ctx, const char *const cols[8])
{
    uint64_t *h = ctx;
    for (int i = 0; i < 8; i++)
        *h = hash_str(*h, cols[i]);
}

/* The device rows as p's outputs read them (see outstate.h). */
static enum gl_status devices_hash(struct gl_store *s, const struct gl_period *p,
                                   char out[GL_OUTSTATE_HASH], struct gl_error *err)
{
    uint64_t h = GL_HASH_SEED;
    enum gl_status rc = gl_query_devices_seen(s, p, device_row, &h, err);
    if (rc)
        return rc;
    hash_hex(h, out);
    return GL_OK;
}

enum gl_status gl_outstate_fingerprint(struct gl_store *s, const struct gl_period *p,
                                       struct gl_outstate_fp *fp, struct gl_error *err)
{
    fp->closed = NULL;
    enum gl_status rc = data_version(s, p->name, &fp->data_version, err);
    if (!rc)
        rc = devices_hash(s, p, fp->devices, err);
    /* the closed periods just before p: gl_corrections_add walks the same chain */
    struct gl_buf b;
    gl_buf_init(&b);
    struct gl_period cp;
    gl_period_of(p->start - 1, &cp);
    while (!rc) {
        bool closed;
        int64_t v;
        if ((rc = gl_period_is_closed(s, cp.name, &closed, err)) || !closed)
            break;
        if ((rc = data_version(s, cp.name, &v, err)))
            break;
        if (!gl_buf_printf(&b, "%s%s:%" PRId64, b.len ? " " : "", cp.name, v))
            rc = gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
        struct gl_period prev;
        gl_period_of(cp.start - 1, &prev);
        cp = prev;
    }
    if (rc) {
        gl_buf_free(&b);
        return rc;
    }
    fp->closed = b.data ? b.data : gl_strdup("");
    return GL_OK;
}

void gl_outstate_fp_clear(struct gl_outstate_fp *fp)
{
    free(fp->closed);
    fp->closed = NULL;
}

/* Every file of the list still there with its size; why names the first
 * that is not. */
static void check_files(const char *dir, const char *files, char *why, size_t n, size_t *count)
{
    *count = 0;
    const char *line = files;
    while (*line) {
        const char *tab = strchr(line, '\t');
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        (*count)++;
        if (!tab || tab > end) {
            snprintf(why, n, "the recorded file list is malformed");
            return;
        }
        int rel = (int)(tab - line);
        char *path = NULL;
        struct gl_buf pb;
        gl_buf_init(&pb);
        if (gl_buf_printf(&pb, "%s/%.*s", dir, rel, line))
            path = pb.data;
        long long want = strtoll(tab + 1, NULL, 10);
        struct stat st;
        if (!path) {
            snprintf(why, n, "out of memory checking the files");
        } else if (lstat(path, &st) != 0) {
            snprintf(why, n, "file missing: %.*s (%s)", rel, line, strerror(errno));
        } else if (!S_ISREG(st.st_mode)) {
            snprintf(why, n, "not a regular file: %.*s", rel, line);
        } else if ((long long)st.st_size != want) {
            snprintf(why, n, "file changed: %.*s (%lld bytes, %lld written)", rel, line,
                     (long long)st.st_size, want);
        }
        gl_buf_free(&pb);
        if (*why)
            return;
        line = *end ? end + 1 : end;
    }
}

enum gl_status gl_outstate_check(struct gl_store *s, const char *out_dir, const char *period,
                                 const struct gl_outstate_fp *fp, char *why, size_t n,
                                 size_t *nfiles, struct gl_error *err)
{
    why[0] = '\0';
    *nfiles = 0;
    struct gl_output_state o;
    bool found;
    enum gl_status rc = gl_query_output_state(s, out_dir, period, &o, &found, err);
    if (rc)
        return rc;
    if (!found) {
        snprintf(why, n, "never written to this folder");
    } else if (o.data_version != fp->data_version) {
        snprintf(why, n, "data changed (version %" PRId64 " -> %" PRId64 ")", o.data_version,
                 fp->data_version);
    } else if (strcmp(o.closed, fp->closed) != 0) {
        snprintf(why, n, "closed periods before it changed ('%s' -> '%s')", o.closed,
                 fp->closed);
    } else if (strcmp(o.devices, fp->devices) != 0) {
        snprintf(why, n, "devices changed");
    } else if (strcmp(o.prices, fp->prices) != 0) {
        snprintf(why, n, "price table changed");
    } else if (strcmp(o.config, fp->config) != 0) {
        snprintf(why, n, "config or gpuledger version changed");
    } else {
        struct gl_buf dir;
        gl_buf_init(&dir);
        if (!gl_buf_printf(&dir, "%s/%s", out_dir, period))
            snprintf(why, n, "out of memory checking the files");
        else
            check_files(dir.data, o.files, why, n, nfiles);
        gl_buf_free(&dir);
    }
    gl_output_state_clear(&o);
    return GL_OK;
}

enum gl_status gl_outstate_record(struct gl_store *s, const char *out_dir, const char *period,
                                  const struct gl_outstate_fp *fp, const char *files,
                                  struct gl_error *err)
{
    /* borrowed strings: nothing here to clear */
    struct gl_output_state o = {fp->data_version, fp->closed, (char *)fp->devices,
                                (char *)fp->prices, (char *)fp->config, (char *)files};
    return gl_store_output_state(s, out_dir, period, &o, err);
}

struct known_ctx {
    char (*names)[8];
    size_t n, cap;
};

static void known_one(void *vctx, const char *name)
{
    struct known_ctx *k = vctx;
    struct gl_period p;
    if (!gl_period_parse(name, &p))
        return; /* not a YYYY-MM: nothing a period command could write */
    if (k->n == k->cap) {
        k->cap = k->cap ? k->cap * 2 : 16;
        k->names = gl_xrealloc(k->names, k->cap * sizeof *k->names);
    }
    memcpy(k->names[k->n++], p.name, sizeof p.name);
}

enum gl_status gl_outstate_known_periods(struct gl_store *s, char (**names)[8], size_t *n,
                                         struct gl_error *err)
{
    struct known_ctx k = {0};
    enum gl_status rc = gl_query_known_periods(s, known_one, &k, err);
    if (rc) {
        free(k.names);
        k.names = NULL;
        k.n = 0;
    }
    *names = k.names;
    *n = k.n;
    return rc;
}
