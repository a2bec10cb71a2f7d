/* upload — S3-compatible object storage (libcurl SigV4, OpenSSL SHA-256). */
#include "upload.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "auth.h"
#include "gl_build.h"
#include "output.h"
#include "timeutil.h"
#include "util.h"

/* An error answer is a few KiB of XML; more is not read. */
#define ANSWER_MAX 65536
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct gl_uploader {
    const struct gl_s3_cfg *s3;
    struct gl_auth *auth;
    CURL *h;
    struct curl_slist *owned; /* the headers gl_auth_apply made */
    char errbuf[CURL_ERROR_SIZE];
};

enum gl_status gl_uploader_new(const struct gl_s3_cfg *s3, struct gl_uploader **out,
                               struct gl_error *err)
{
    *out = NULL;
    struct gl_uploader *u = gl_xcalloc(1, sizeof *u);
    u->s3 = s3;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    enum gl_status rc = gl_auth_new_named(&s3->conn, "outputs.s3.auth", &u->auth, err);
    if (!rc && !(u->h = curl_easy_init()))
        rc = gl_error_set(err, GL_ERR_RUNTIME, "outputs.s3: cannot create an HTTP handle");
    if (rc)
        gl_uploader_free(u);
    else
        *out = u;
    return rc;
}

void gl_uploader_free(struct gl_uploader *u)
{
    if (!u)
        return;
    if (u->h)
        curl_easy_cleanup(u->h);
    gl_auth_headers_free(u->owned);
    gl_auth_free(u->auth);
    free(u);
}

/* ---- one request ---- */

struct answer {
    struct gl_buf body;
    char sha256[65];   /* x-amz-meta-sha256 of a HEAD, "" when absent */
    curl_off_t length; /* Content-Length of a HEAD: the object's size, -1 when absent */
};

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    struct answer *a = user;
    size_t len = size * n;
    if (a->body.len + len <= ANSWER_MAX)
        gl_buf_append(&a->body, data, len);
    return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *user)
{
    struct answer *a = user;
    size_t len = size * n;
    static const char name[] = "x-amz-meta-sha256:";
    if (len > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
        const char *v = data + sizeof name - 1;
        size_t vl = len - (sizeof name - 1);
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        if (vl == 64) {
            memcpy(a->sha256, v, 64);
            a->sha256[64] = '\0';
        }
    }
    return len;
}

struct reader {
    const char *data;
    size_t len, off;
};

static size_t on_read(char *buf, size_t size, size_t n, void *user)
{
    struct reader *r = user;
    size_t k = r->len - r->off;
    if (k > size * n)
        k = size * n;
    memcpy(buf, r->data + r->off, k);
    r->off += k;
    return k;
}

static int on_seek(void *user, curl_off_t offset, int origin)
{
    struct reader *r = user;
    if (origin != SEEK_SET || offset < 0 || (size_t)offset > r->len)
        return CURL_SEEKFUNC_CANTSEEK;
    r->off = (size_t)offset;
    return CURL_SEEKFUNC_OK;
}

/* The object's URL: path style endpoint/bucket/key, else
 * scheme://bucket.host/key; every key segment percent-encoded as SigV4
 * canonicalises S3 paths (unreserved characters kept). */
static bool object_url(const struct gl_s3_cfg *s3, CURL *h, const char *key, struct gl_buf *url)
{
    const char *ep = s3->endpoint;
    const char *host = strstr(ep, "://");
    bool ok;
    if (s3->path_style)
        ok = gl_buf_printf(url, "%s/%s/", ep, s3->bucket);
    else
        ok = gl_buf_printf(url, "%.*s%s.%s/", (int)(host + 3 - ep), ep, s3->bucket, host + 3);
    struct gl_buf full;
    gl_buf_init(&full);
    ok = ok && gl_buf_printf(&full, "%s%s%s", s3->prefix, s3->prefix[0] ? "/" : "", key);
    for (const char *seg = full.data; ok && seg;) {
        const char *slash = strchr(seg, '/');
        int n = slash ? (int)(slash - seg) : (int)strlen(seg);
        char *e = curl_easy_escape(h, seg, n);
        ok = e && gl_buf_printf(url, "%s%s", e, slash ? "/" : "");
        curl_free(e);
        seg = slash ? slash + 1 : NULL;
    }
    gl_buf_free(&full);
    return ok;
}

static void sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
    for (unsigned int i = 0; i < mdlen && i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    out[64] = '\0';
}

static const char *content_type(const char *key)
{
    const char *dot = strrchr(key, '.');
    static const struct {
        const char *ext, *type;
    } types[] = {{".json", "application/json"},
                 {".csv", "text/csv; charset=utf-8"},
                 {".md", "text/markdown; charset=utf-8"},
                 {".html", "text/html; charset=utf-8"},
                 {".db", "application/vnd.sqlite3"}};
    for (size_t i = 0; dot && i < sizeof types / sizeof *types; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One HEAD (body NULL) or PUT of url, retried on transport errors, 429 and
 * 5xx; *status is the last HTTP status (0: no answer). */
static enum gl_status request(struct gl_uploader *u, const char *method, const char *url,
                              const char *key, const char *body, size_t len,
                              const char *sha, long *status, struct answer *a,
                              struct gl_error *err)
{
    const struct gl_s3_cfg *s3 = u->s3;
    enum gl_status rc = GL_OK;
    for (int attempt = 0;; attempt++) {
        CURL *h = u->h;
        curl_easy_reset(h);
        gl_buf_reset(&a->body);
        a->sha256[0] = '\0';
        u->errbuf[0] = '\0';
        struct curl_slist *base = NULL;
        struct gl_buf line;
        gl_buf_init(&line);
        bool put = body != NULL;
        /* S3 wants the payload's hash on every request, signed (libcurl
         * 7.88 adds it only when asked): the body's for a PUT, that of no
         * body for a HEAD */
        gl_buf_printf(&line, "x-amz-content-sha256: %s", put ? sha : EMPTY_SHA256);
        base = curl_slist_append(base, line.data);
        if (put && base) {
            gl_buf_reset(&line);
            gl_buf_printf(&line, "Content-Type: %s", content_type(key));
            base = curl_slist_append(base, line.data);
            gl_buf_reset(&line);
            gl_buf_printf(&line, "x-amz-meta-sha256: %s", sha);
            base = curl_slist_append(base, line.data);
        }
        gl_buf_free(&line);
        if (!base) {
            rc = gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
            break;
        }
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, u->errbuf);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, s3->conn.timeout_s);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, s3->conn.timeout_s < 10 ? s3->conn.timeout_s
                                                                             : 10L);
        curl_easy_setopt(h, CURLOPT_USERAGENT, "gpuledger/" GL_VERSION);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
        if (s3->conn.ca_file)
            curl_easy_setopt(h, CURLOPT_CAINFO, s3->conn.ca_file);
        struct reader r = {body, len, 0};
        if (put) {
            curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
            curl_easy_setopt(h, CURLOPT_READDATA, &r);
            curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
            curl_easy_setopt(h, CURLOPT_SEEKDATA, &r);
            curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
        } else {
            curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        }
        rc = gl_auth_apply(u->auth, h, base, &u->owned, err);
        curl_slist_free_all(base);
        if (rc)
            break;
        CURLcode cc = curl_easy_perform(h);
        *status = 0;
        a->length = -1;
        if (cc == CURLE_OK) {
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
            curl_easy_getinfo(h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &a->length);
        }
        bool transient = cc != CURLE_OK || *status == 429 || *status >= 500;
        if (!transient || attempt >= s3->conn.retries) {
            if (cc != CURLE_OK)
                rc = gl_error_set(err, GL_ERR_PARTIAL, "outputs.s3: %s %s: %s", method, url,
                                  u->errbuf[0] ? u->errbuf : curl_easy_strerror(cc));
            break;
        }
        long delay = 500L << attempt;
        gl_log(GL_LOG_WARN, "object storage request failed, retrying method=%s url=%s "
                            "attempt=%d status=%ld delay_ms=%ld error=\"%s\"",
               method, url, attempt + 1, *status, delay,
               cc != CURLE_OK ? (u->errbuf[0] ? u->errbuf : curl_easy_strerror(cc)) : "");
        sleep_ms(delay);
    }
    return rc;
}

/* "HTTP 403 SignatureDoesNotMatch: <message>" from an S3 error answer. */
static void describe(struct gl_uploader *u, long status, const struct answer *a, char *out,
                     size_t n)
{
    char text[600];
    gl_auth_excerpt(u->auth, a->body.data ? a->body.data : "", a->body.len, 400, text,
                    sizeof text);
    const char *fix = "";
    if (status == 403)
        fix = " (check the access key, its secret and the region of outputs.s3, and that the "
              "identity may s3:GetObject and s3:PutObject under the prefix)";
    else if (status == 404)
        fix = " (check outputs.s3.bucket and path_style)";
    snprintf(out, n, "HTTP %ld%s%s%s", status, text[0] ? ": " : "", text, fix);
}

/* Whether a HEAD shows the object holding the file's bytes: its size and
 * the SHA-256 stored with it. The hash alone is metadata, which a store can
 * keep while it keeps the body short; the size is the store's own. */
static bool stored_whole(long status, const struct answer *a, size_t len, const char *sha)
{
    return status == 200 && a->length == (curl_off_t)len && strcmp(a->sha256, sha) == 0;
}

/* After a PUT the store's HEAD must show what was sent: a store that
 * answers 200 but keeps less fails the file (the next run sends it again). */
static enum gl_status verify_put(struct gl_uploader *u, const char *url, const char *key,
                                 size_t len, const char *sha, struct answer *a,
                                 struct gl_error *err)
{
    long status = 0;
    enum gl_status rc = request(u, "HEAD", url, key, NULL, 0, sha, &status, a, err);
    if (rc || stored_whole(status, a, len, sha))
        return rc;
    if (status != 200) {
        char why[1024];
        describe(u, status, a, why, sizeof why);
        return gl_error_set(err, GL_ERR_PARTIAL, "outputs.s3: HEAD %s after the upload: %s",
                            url, why);
    }
    return gl_error_set(err, GL_ERR_PARTIAL,
                        "outputs.s3: PUT %s: the store answered 200 but holds %lld bytes "
                        "with x-amz-meta-sha256 \"%s\", not the %zu bytes sent (sha256 %s)",
                        url, (long long)a->length, a->sha256, len, sha);
}

/* The PUT of data (its sha256 given), verified by a HEAD; *sent on success. */
static enum gl_status put_object(struct gl_uploader *u, const char *url, const char *key,
                                 const char *data, size_t len, const char *sha,
                                 struct answer *a, bool *sent, struct gl_error *err)
{
    long status = 0;
    enum gl_status rc = request(u, "PUT", url, key, data, len, sha, &status, a, err);
    if (rc)
        return rc;
    if (status / 100 != 2) {
        char why[1024];
        describe(u, status, a, why, sizeof why);
        return gl_error_set(err, GL_ERR_PARTIAL, "outputs.s3: PUT %s: %s", url, why);
    }
    if ((rc = verify_put(u, url, key, len, sha, a, err)))
        return rc;
    *sent = true;
    gl_log(GL_LOG_DEBUG, "object uploaded key=%s bytes=%zu sha256=%s", key, len, sha);
    return GL_OK;
}

enum gl_status gl_upload_file(struct gl_uploader *u, const char *path, const char *key,
                              bool *sent, struct gl_error *err)
{
    *sent = false;
    char *data = NULL;
    size_t len = 0;
    enum gl_status rc = gl_read_file(path, &data, &len, err);
    if (rc)
        return gl_error_set(err, GL_ERR_PARTIAL, "outputs.s3: %s", err->msg);
    char sha[65];
    sha256_hex(data ? data : "", len, sha);
    struct gl_buf url;
    gl_buf_init(&url);
    struct answer a;
    memset(&a, 0, sizeof a);
    gl_buf_init(&a.body);
    long status = 0;
    char why[1024];
    if (!object_url(u->s3, u->h, key, &url)) {
        rc = gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    } else if (!(rc = request(u, "HEAD", url.data, key, NULL, 0, sha, &status, &a, err))) {
        if (stored_whole(status, &a, len, sha)) {
            gl_log(GL_LOG_DEBUG, "object unchanged key=%s sha256=%s", key, sha);
        } else if (status != 200 && status != 404) {
            describe(u, status, &a, why, sizeof why);
            rc = gl_error_set(err, GL_ERR_PARTIAL, "outputs.s3: HEAD %s: %s", url.data, why);
        } else {
            /* the file's hash on an object of another size: the store lost bytes */
            if (status == 200 && strcmp(a.sha256, sha) == 0)
                gl_log(GL_LOG_WARN, "object size differs from the file, uploading it again "
                                    "key=%s stored_bytes=%lld bytes=%zu",
                       key, (long long)a.length, len);
            rc = put_object(u, url.data, key, data ? data : "", len, sha, &a, sent, err);
        }
    }
    gl_buf_free(&a.body);
    gl_buf_free(&url);
    free(data);
    return rc;
}

/* The files of out_dir/<period>/ to <prefix>/<period>/. */
static void upload_period(struct gl_uploader *u, const char *out_dir, const char *period,
                          struct gl_upload_stats *st, struct gl_error *first)
{
    struct gl_buf dir, files;
    gl_buf_init(&dir);
    gl_buf_init(&files);
    struct gl_error err = {0};
    if (!gl_buf_printf(&dir, "%s/%s", out_dir, period) ||
        gl_output_tree_files(dir.data, &files, &err)) {
        if (!err.msg[0])
            gl_error_set(&err, GL_ERR_RUNTIME, "out of memory");
        st->failed++;
        if (!first->msg[0])
            gl_error_set(first, GL_ERR_PARTIAL, "outputs.s3: %s", err.msg);
    }
    for (char *line = files.data; line && *line;) {
        char *nl = strchr(line, '\n');
        char *tab = strchr(line, '\t');
        if (!nl || !tab || tab > nl)
            break;
        *tab = '\0';
        struct gl_buf path, key;
        gl_buf_init(&path);
        gl_buf_init(&key);
        bool sent = false;
        memset(&err, 0, sizeof err);
        st->files++;
        if (!gl_buf_printf(&path, "%s/%s", dir.data, line) ||
            !gl_buf_printf(&key, "%s/%s", period, line))
            gl_error_set(&err, GL_ERR_RUNTIME, "out of memory");
        else
            gl_upload_file(u, path.data, key.data, &sent, &err);
        if (err.msg[0]) {
            st->failed++;
            gl_log(GL_LOG_ERROR, "upload failed key=%s error=\"%s\"", key.data ? key.data : line,
                   err.msg);
            if (!first->msg[0])
                *first = err;
        } else if (sent) {
            st->sent++;
        } else {
            st->unchanged++;
        }
        gl_buf_free(&path);
        gl_buf_free(&key);
        line = nl + 1;
    }
    gl_buf_free(&dir);
    gl_buf_free(&files);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

enum gl_status gl_upload_outputs(const struct gl_s3_cfg *s3, const char *out_dir,
                                 struct gl_upload_stats *st, struct gl_error *err)
{
    memset(st, 0, sizeof *st);
    struct gl_uploader *u = NULL;
    enum gl_status rc = gl_uploader_new(s3, &u, err);
    if (rc)
        return rc;
    DIR *d = opendir(out_dir);
    if (!d) {
        gl_uploader_free(u);
        return gl_error_set(err, GL_ERR_PARTIAL, "outputs.s3: %s: cannot list: %s", out_dir,
                            strerror(errno));
    }
    char(*names)[8] = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        struct gl_period p;
        if (strlen(e->d_name) != 7 || !gl_period_parse(e->d_name, &p))
            continue;
        names = gl_xrealloc(names, (n + 1) * sizeof *names);
        memcpy(names[n++], e->d_name, 8);
    }
    closedir(d);
    gl_sort(names, n, sizeof *names, name_cmp);
    struct gl_error first = {0};
    for (size_t i = 0; i < n; i++)
        upload_period(u, out_dir, names[i], st, &first);
    free(names);
    gl_uploader_free(u);
    gl_log(GL_LOG_INFO, "uploaded outputs bucket=%s prefix=%s files=%zu sent=%zu unchanged=%zu "
                        "failed=%zu",
           s3->bucket, s3->prefix, st->files, st->sent, st->unchanged, st->failed);
    if (st->failed) {
        char msg[sizeof err->msg];
        memcpy(msg, first.msg, sizeof msg);
        return gl_error_set(err, GL_ERR_PARTIAL, "%zu of %zu file(s) not uploaded (the next run "
                            "retries them); first: %s", st->failed, st->files, msg);
    }
    return GL_OK;
}
