/* fetch — libcurl client for the Prometheus HTTP API, with retries. */
#include "fetch.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "auth.h"
#include "gl_build.h"
#include "timeutil.h"

long gl_prom_backoff_ms = 500;

struct gl_prom {
    CURL *curl;
    const struct gl_prom_cfg *cfg;
    struct gl_auth *auth;       /* credentials, refreshed as they near expiry */
    bool post;                  /* queries as a POST form body (SigV4) */
    struct curl_slist *base;    /* configured headers, Accept, Content-Type */
    struct curl_slist *headers; /* base and the credentials' (gl_auth_apply) */
    long long retry_after_s; /* from the last response, -1 when absent; saturated */
    char retry_after_shown[48]; /* the wait as messages show it ("300s") */
    char errbuf[CURL_ERROR_SIZE];
};

/* What a parsed query's 2xx body is parsed into (gl_matrix_parser). */
struct parse_spec {
    int64_t start, step;
    size_t nsteps;
    const char *what;
    const struct gl_parse_opts *opts;
};

/* The first bytes of an error body kept for its message (the rest is only
 * counted): an error answer is small, and never needs holding whole. */
#define ERROR_BODY_KEEP (1024 * 1024)

/* Where one response's body goes: at most max bytes as decompressed. With
 * a spec, a 2xx body is parsed as it arrives (never held whole) and only
 * other bodies are kept, for the error message. */
struct sink {
    struct gl_buf *buf;
    size_t max;
    size_t total;                   /* bytes of the body so far */
    bool too_large;
    bool over_budget;               /* the parse ran out of the memory budget: stopped */
    bool *stop;                     /* set on too_large: the batch ends (may be NULL) */
    CURL *h;                        /* the transfer (its status) */
    const struct parse_spec *spec;  /* NULL: keep the body */
    int mode;                       /* 0: status unknown yet, 1: parsing, 2: keeping */
    struct gl_matrix_parser *mp;
    bool refused;                   /* on_body took less than it was given */
    bool trailing;                  /* the decoder found bytes after the compressed body */
    char encoding[40];              /* the Content-Encoding then */
};

/* Ready for a new attempt: nothing of the last one is kept. */
static void sink_reset(struct sink *k)
{
    gl_buf_reset(k->buf);
    gl_matrix_parser_free(k->mp);
    k->mp = NULL;
    k->mode = 0;
    k->total = 0;
    k->too_large = false;
    k->over_budget = false;
    k->refused = false;
    k->trailing = false;
    k->encoding[0] = '\0';
}

static size_t take_body(struct sink *k, char *data, size_t len)
{
    if (len && len > k->max - k->total) {
        k->too_large = true;
        if (k->stop)
            *k->stop = true;
        return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
    }
    k->total += len;
    if (k->spec && k->mode == 0) {
        long status = 0;
        curl_easy_getinfo(k->h, CURLINFO_RESPONSE_CODE, &status);
        /* only a 200 is a whole answer: any other body (206 included) is
         * kept for the error message */
        k->mode = status == 200 ? 1 : 2;
        if (k->mode == 1)
            k->mp = gl_matrix_parser_new(k->spec->start, k->spec->step, k->spec->nsteps,
                                         k->spec->what, k->spec->opts);
    }
    if (k->mode == 1) {
        gl_matrix_parser_feed(k->mp, data, len);
        if (gl_matrix_parser_over_budget(k->mp)) {
            /* the unit is split and asked again: the rest of this body (and
             * of its batch) would be downloaded for nothing */
            k->over_budget = true;
            if (k->stop)
                *k->stop = true;
            return 0;
        }
        return len;
    }
    if (k->spec && k->buf->len + len > ERROR_BODY_KEEP) {
        size_t room = ERROR_BODY_KEEP - k->buf->len;
        if (room && !gl_buf_append(k->buf, data, room))
            return 0;
        return len;
    }
    if (!gl_buf_append(k->buf, data, len))
        return 0;
    return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    struct sink *k = user;
    size_t len = size * n;
    size_t took = take_body(k, data, len);
    /* a refusal here, and only here, is this program's write error */
    if (took != len)
        k->refused = true;
    return took;
}

/* libcurl's decoders (gzip, deflate, br) report bytes after the end of the
 * compressed stream (a second gzip member, garbage) as CURLE_WRITE_ERROR,
 * the code of a body callback that refused data: noted while the handle's
 * headers can still be read, to be named as what it is (transfer_error). */
static void note_result(struct sink *k, CURL *h, CURLcode cr)
{
    k->trailing = cr == CURLE_WRITE_ERROR && !k->refused;
    if (!k->trailing)
        return;
    struct curl_header *enc = NULL;
    if (curl_easy_header(h, "Content-Encoding", 0, CURLH_HEADER, -1, &enc) == CURLHE_OK)
        snprintf(k->encoding, sizeof k->encoding, "%s", enc->value);
    else
        snprintf(k->encoding, sizeof k->encoding, "unknown");
}

/* Retry-After's delay-seconds, checked: a value too large for a long long
 * saturates (it is beyond any deadline either way) instead of wrapping. The
 * digits are shown as sent, so the message never states a clamped figure. */
static void retry_after_seconds(struct gl_prom *p, const char *s)
{
    char *end = NULL;
    errno = 0;
    long long secs = strtoll(s, &end, 10);
    if (*end != '\0')
        return;
    p->retry_after_s = errno == ERANGE ? LLONG_MAX : secs;
    snprintf(p->retry_after_shown, sizeof p->retry_after_shown, "%.40ss", s);
}

/* Retry-After's HTTP-date, as the seconds from now (0 when past). */
static void retry_after_date(struct gl_prom *p, const char *s)
{
    time_t when = curl_getdate(s, NULL);
    if (when == -1)
        return;
    time_t now = time(NULL);
    p->retry_after_s = when > now ? (long long)(when - now) : 0;
    snprintf(p->retry_after_shown, sizeof p->retry_after_shown, "%llds", p->retry_after_s);
}

/* Retry-After: delay-seconds or an HTTP-date (RFC 9110 10.2.3). */
static size_t on_header(char *data, size_t size, size_t n, void *user)
{
    struct gl_prom *p = user;
    size_t len = size * n;
    if (len > 12 && strncasecmp(data, "Retry-After:", 12) == 0) {
        char v[128];
        size_t k = len - 12 < sizeof v - 1 ? len - 12 : sizeof v - 1;
        memcpy(v, data + 12, k);
        v[k] = '\0';
        while (k > 0 && isspace((unsigned char)v[k - 1]))
            v[--k] = '\0';
        const char *s = v;
        while (*s == ' ' || *s == '\t')
            s++;
        if (isdigit((unsigned char)*s))
            retry_after_seconds(p, s);
        else if (*s)
            retry_after_date(p, s);
    }
    return len;
}

enum gl_status gl_prom_new(const struct gl_prom_cfg *c, struct gl_prom **out, struct gl_error *err)
{
    *out = NULL;
    static int inited;
    if (!inited) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        inited = 1;
    }
    struct gl_prom *p = gl_xcalloc(1, sizeof *p);
    p->cfg = c;
    p->curl = curl_easy_init();
    if (!p->curl) {
        free(p);
        return gl_error_set(err, GL_ERR_RUNTIME, "cannot initialise libcurl");
    }
    enum gl_status rc = gl_auth_new(c, &p->auth, err);
    if (rc) {
        gl_prom_free(p);
        return rc;
    }
    p->post = gl_auth_post_form(p->auth);
    for (size_t i = 0; i < c->nheaders; i++) {
        char line[1024];
        snprintf(line, sizeof line, "%s: %s", c->headers[i].name, c->headers[i].value);
        p->base = curl_slist_append(p->base, line);
    }
    p->base = curl_slist_append(p->base, "Accept: application/json");
    if (p->post) /* in the list, so that SigV4 signs it */
        p->base = curl_slist_append(p->base, "Content-Type: application/x-www-form-urlencoded");
    CURL *h = p->curl;
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, p->errbuf);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, c->timeout_s);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, c->timeout_s < 10 ? c->timeout_s : 10L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    /* every encoding libcurl decodes, or "identity": either way libcurl
     * decodes what a server sends regardless, so the response cap counts
     * decompressed bytes in both */
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, gl_prom_compressed(c) ? "" : "identity");
    /* Content-Length beyond the cap fails at once (CURLE_FILESIZE_EXCEEDED);
     * the write callback counts decompressed bytes for the rest */
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_response_bytes);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "gpuledger/" GL_VERSION);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, p);
    if (c->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    if (c->client_cert_file) {
        curl_easy_setopt(h, CURLOPT_SSLCERT, c->client_cert_file);
        curl_easy_setopt(h, CURLOPT_SSLKEY, c->client_key_file);
    }
    /* http_proxy / https_proxy / no_proxy from the environment: libcurl's default. */
    *out = p;
    return GL_OK;
}

void gl_prom_free(struct gl_prom *p)
{
    if (!p)
        return;
    curl_easy_cleanup(p->curl);
    gl_auth_headers_free(p->headers);
    curl_slist_free_all(p->base);
    gl_auth_free(p->auth);
    free(p);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static bool transient_curl_error(CURLcode rc)
{
    switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_COULDNT_CONNECT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_COULDNT_RESOLVE_HOST:
        return true;
    default:
        return false;
    }
}

/* A hint for transport errors on https URLs, where the cause is usually
 * the CA or the client certificate. */
static const char *tls_hint(const struct gl_prom_cfg *c, CURLcode rc)
{
    if (strncmp(c->url, "https://", 8) != 0)
        return "";
    switch (rc) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
        return " (TLS: check prometheus.ca_file)";
    case CURLE_SSL_CERTPROBLEM:
        return " (TLS: check prometheus.client_cert_file and client_key_file)";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
        return " (TLS: the server may require a client certificate: "
               "prometheus.client_cert_file)";
    default:
        return "";
    }
}

/* "errorType: error" from a Prometheus error body, or a short excerpt;
 * credentials redacted (gl_auth_scrub) before anything is cut or shown. */
static void describe_body(const struct gl_prom *p, const struct gl_buf *body, char *out,
                          size_t n)
{
    out[0] = '\0';
    if (!body->data || body->len == 0) {
        snprintf(out, n, "(empty body)");
        return;
    }
    struct gl_buf text;
    gl_buf_init(&text);
    cJSON *root = cJSON_ParseWithLength(body->data, body->len);
    const cJSON *et = cJSON_GetObjectItemCaseSensitive(root, "errorType");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
    if (cJSON_IsString(e))
        gl_buf_printf(&text, "%s: %.8000s", cJSON_IsString(et) ? et->valuestring : "error",
                      e->valuestring);
    else
        gl_buf_append(&text, body->data, body->len < 8192 ? body->len : 8192);
    cJSON_Delete(root);
    gl_auth_excerpt(p->auth, text.data, text.len, 300, out, n);
    if (text.data)
        memset(text.data, 0, text.len);
    gl_buf_free(&text);
}

/* "HTTP 403: desc" and, for 401 and 403, what to fix for the configured
 * credentials (gl_auth_hint). */
static void describe_status(const struct gl_prom *p, long status, const struct gl_buf *body,
                            char *why, size_t n)
{
    char desc[400], hint[800];
    describe_body(p, body, desc, sizeof desc);
    gl_auth_hint(p->auth, status, desc, hint, sizeof hint);
    snprintf(why, n, "HTTP %ld: %s%s%s", status, desc, hint[0] ? "; " : "", hint);
}

/* Why a transfer failed: libcurl's words (and a TLS hint), or what a
 * decoder's write error really was (note_result). */
static void transfer_error(const struct gl_prom_cfg *c, const struct sink *k, CURLcode cr,
                           const char *errbuf, char *why, size_t n)
{
    if (k->trailing)
        snprintf(why, n,
                 "trailing data after the compressed body (Content-Encoding: %s): a second "
                 "compressed member or garbage follows the end of the stream",
                 k->encoding);
    else
        snprintf(why, n, "%s%s", errbuf && errbuf[0] ? errbuf : curl_easy_strerror(cr),
                 tls_hint(c, cr));
}

/* A 2xx other than 200 (206 Partial Content, 204 No Content, ...): no
 * Prometheus API answers so, and what came may be a part of an answer. */
static void unexpected_success(long status, char *why, size_t n)
{
    snprintf(why, n, "HTTP %ld: an unexpected status (only 200 is accepted as a whole answer)",
             status);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The instant (now_ms) by which a request started now must be done. */
static int64_t request_deadline(const struct gl_prom_cfg *c)
{
    long s = c->request_deadline_s > 0 ? c->request_deadline_s : 300;
    return now_ms() + (int64_t)s * 1000;
}

/* The timeout of one attempt: timeout_seconds, or what is left. */
static long attempt_timeout_ms(const struct gl_prom_cfg *c, int64_t deadline)
{
    int64_t left = deadline - now_ms();
    int64_t t = (int64_t)c->timeout_s * 1000;
    if (left < t)
        t = left;
    return t < 1 ? 1 : (long)t;
}

/* The wait before the next attempt, or -1 (why set) when it would pass
 * the deadline: a Retry-After beyond it fails at once. Compared in whole
 * seconds, so that no Retry-After can overflow a product. */
static long retry_delay(const struct gl_prom *p, int attempt, int64_t deadline, char *why,
                        size_t nwhy)
{
    const struct gl_prom_cfg *c = p->cfg;
    int64_t left = deadline - now_ms();
    long delay = gl_prom_backoff_ms << (attempt < 6 ? attempt : 6);
    if (p->retry_after_s >= 0) {
        /* retry_after_s * 1000 >= left, for whole seconds against ms */
        if (left <= 0 || p->retry_after_s >= (left + 999) / 1000) {
            snprintf(why, nwhy,
                     "the server asks to retry after %s (Retry-After), beyond the request "
                     "deadline (prometheus.request_deadline_seconds = %lds, %.1fs left): not "
                     "waiting",
                     p->retry_after_shown, c->request_deadline_s,
                     left > 0 ? (double)left / 1000 : 0.0);
            return -1;
        }
        delay = (long)p->retry_after_s * 1000;
    }
    if (delay >= left) {
        snprintf(why, nwhy, "request deadline reached (prometheus.request_deadline_seconds = %lds)",
                 c->request_deadline_s);
        return -1;
    }
    return delay;
}

static const char *method(const struct gl_prom *p)
{
    return p->post ? "POST" : "GET";
}

static enum gl_status too_large(const struct gl_prom *p, const char *path, const char *what,
                                struct sink *k, struct gl_error *err)
{
    sink_reset(k);
    gl_buf_free(k->buf);
    return gl_error_set(err, GL_ERR_TOO_LARGE,
                        "%s %s%s (%s): response larger than prometheus.max_response_bytes "
                        "(%lld bytes, decompressed)",
                        method(p), p->cfg->url, path, what, (long long)p->cfg->max_response_bytes);
}

/* GET base+path?params with retries, counting first_attempt tries as
 * already made, all of them done by deadline (now_ms). params is already
 * URL-encoded. */
/* GET base+path?params (or POST the params as a form body, for SigV4)
 * with retries, counting first_attempt tries as already made, all of them
 * done by deadline (now_ms). params is already URL-encoded. Credentials are
 * set (and refreshed when near expiry) before each attempt. */
static enum gl_status prom_get_from(struct gl_prom *p, const char *path, const char *params,
                                    const char *what, struct sink *k, int first_attempt,
                                    int64_t deadline, struct gl_error *err)
{
    const struct gl_prom_cfg *c = p->cfg;
    size_t n = strlen(c->url) + strlen(path) + strlen(params) + 2;
    char *url = gl_xcalloc(n, 1);
    if (p->post)
        snprintf(url, n, "%s%s", c->url, path);
    else
        snprintf(url, n, "%s%s?%s", c->url, path, params);
    enum gl_status rc = GL_OK;
    for (int attempt = first_attempt;; attempt++) {
        sink_reset(k);
        if ((rc = gl_auth_apply(p->auth, p->curl, p->base, &p->headers, err)))
            break;
        k->h = p->curl;
        k->max = (size_t)c->max_response_bytes;
        p->retry_after_s = -1;
        p->errbuf[0] = '\0';
        curl_easy_setopt(p->curl, CURLOPT_URL, url);
        if (p->post)
            curl_easy_setopt(p->curl, CURLOPT_COPYPOSTFIELDS, params);
        curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, k);
        curl_easy_setopt(p->curl, CURLOPT_TIMEOUT_MS, attempt_timeout_ms(c, deadline));
        CURLcode cr = curl_easy_perform(p->curl);
        note_result(k, p->curl, cr);
        curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, NULL);
        /* a batch copies this handle (batch_add): libcurl 7.88 copies a
         * form of unset size as SIZE_MAX bytes, so none stays on it */
        if (p->post)
            curl_easy_setopt(p->curl, CURLOPT_COPYPOSTFIELDS, NULL);
        long status = 0;
        curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
        if (k->too_large || cr == CURLE_FILESIZE_EXCEEDED) {
            rc = too_large(p, path, what, k, err);
            break;
        }
        if (k->over_budget) {
            rc = GL_OK; /* the parser holds the error (GL_ERR_TOO_LARGE) */
            break;
        }
        bool retry = false;
        char why[1400];
        if (cr != CURLE_OK) {
            transfer_error(c, k, cr, p->errbuf, why, sizeof why);
            retry = transient_curl_error(cr);
            rc = GL_ERR_PROM;
        } else if (status == 200) {
            rc = GL_OK;
        } else if (status >= 200 && status < 300) {
            unexpected_success(status, why, sizeof why);
            rc = GL_ERR_PROM;
        } else {
            describe_status(p, status, k->buf, why, sizeof why);
            retry = status >= 500 || status == 429;
            rc = GL_ERR_PROM;
        }
        if (rc == GL_OK)
            break;
        char late[300] = "";
        long delay = retry && attempt < c->retries
                         ? retry_delay(p, attempt, deadline, late, sizeof late) : 0;
        if (!retry || attempt >= c->retries || delay < 0) {
            gl_error_set(err, GL_ERR_PROM, "%s %s%s (%s): %s%s%s", method(p), c->url, path, what,
                         why,
                         late[0] ? "; " : retry && c->retries > 0 ? " (retries exhausted)" : "",
                         late);
            break;
        }
        gl_log(GL_LOG_WARN, "prometheus request failed, retrying path=%s attempt=%d delay_ms=%ld error=\"%s\"",
               path, attempt + 1, delay, why);
        sleep_ms(delay);
    }
    free(url);
    return rc;
}

static enum gl_status prom_get(struct gl_prom *p, const char *path, const char *params,
                               const char *what, struct gl_buf *body, struct gl_error *err)
{
    struct sink k = {.buf = body};
    return prom_get_from(p, path, params, what, &k, 0, request_deadline(p->cfg), err);
}

static char *escape(CURL *h, const char *s)
{
    char *e = curl_easy_escape(h, s, 0);
    char *copy = gl_strdup(e ? e : "");
    curl_free(e);
    return copy;
}

/* partial_response=false: Thanos then fails a query when a store is down
 * instead of answering with partial data (Prometheus ignores it). */
static void range_params(struct gl_prom *p, const char *query, int64_t start, int64_t end,
                         int64_t step, struct gl_buf *params, char *what, size_t nwhat)
{
    char *q = escape(p->curl, query);
    gl_buf_printf(params, "query=%s&start=%lld&end=%lld&step=%lld&partial_response=false", q,
                  (long long)start, (long long)end, (long long)step);
    free(q);
    char from[32], to[32];
    gl_time_format(start, from, sizeof from);
    gl_time_format(end, to, sizeof to);
    snprintf(what, nwhat, "query=%.300s start=%s end=%s step=%llds", query, from, to,
             (long long)step);
}

enum gl_status gl_prom_get(struct gl_prom *p, const char *path, struct gl_buf *body,
                           struct gl_error *err)
{
    return prom_get(p, path, "", path, body, err);
}

/* One batch of range queries in flight together (gl_prom_query_range_batch). */
struct batch {
    struct gl_prom *p;
    size_t n;
    struct gl_range_query *qs;
    int64_t start, end, step, deadline;
    size_t nsteps;
    CURLM *multi;
    CURL **h;
    bool *ok;
    long *status;
    CURLcode *result;
    struct sink *sinks;
    struct parse_spec *specs;
    struct gl_buf *bodies;
    char **urls;
    bool stop; /* a response is too large: the batch is of no use */
};

static void batch_init(struct batch *b)
{
    const size_t n = b->n;
    b->h = gl_xcalloc(n, sizeof *b->h);
    b->ok = gl_xcalloc(n, sizeof *b->ok);
    b->status = gl_xcalloc(n, sizeof *b->status);
    b->result = gl_xcalloc(n, sizeof *b->result);
    b->sinks = gl_xcalloc(n, sizeof *b->sinks);
    b->specs = gl_xcalloc(n, sizeof *b->specs);
    b->bodies = gl_xcalloc(n, sizeof *b->bodies);
    b->urls = gl_xcalloc(n, sizeof *b->urls);
    b->nsteps = b->end >= b->start && b->step > 0
                    ? (size_t)((b->end - b->start) / b->step) + 1 : 0;
    for (size_t i = 0; i < n; i++) {
        b->result[i] = CURLE_FAILED_INIT;
        gl_buf_init(&b->bodies[i]);
        b->specs[i] = (struct parse_spec){b->start, b->step, b->nsteps, b->qs[i].what,
                                          b->qs[i].opts};
        b->sinks[i] = (struct sink){.buf = &b->bodies[i],
                                    .max = (size_t)b->p->cfg->max_response_bytes,
                                    .stop = &b->stop, .spec = &b->specs[i]};
    }
}

static void batch_free(struct batch *b)
{
    if (b->multi)
        curl_multi_cleanup(b->multi);
    GL_FREE_EACH(b->h, b->ok, b->status, b->result, b->sinks, b->specs, b->bodies, b->urls);
}

/* Query i's transfer: a copy of p->curl with its URL (or form), sink and
 * the batch's deadline, added to the multi handle. */
static void batch_add(struct batch *b, size_t i)
{
    struct gl_prom *p = b->p;
    const struct gl_prom_cfg *c = p->cfg;
    struct gl_buf params, url;
    gl_buf_init(&params);
    gl_buf_init(&url);
    char what[512];
    range_params(p, b->qs[i].query, b->start, b->end, b->step, &params, what, sizeof what);
    gl_buf_printf(&url, "%s/api/v1/query_range%s%s", c->url, p->post ? "" : "?",
                  p->post ? "" : params.data);
    b->urls[i] = url.data;
    CURL *h = b->h[i] = curl_easy_duphandle(p->curl);
    if (h)
        gl_auth_prepare_copy(p->auth, h);
    if (h && p->post) /* libcurl keeps its own copy of the form */
        curl_easy_setopt(h, CURLOPT_COPYPOSTFIELDS, params.data);
    gl_buf_free(&params);
    if (!h)
        return;
    b->sinks[i].h = h;
    curl_easy_setopt(h, CURLOPT_URL, b->urls[i]);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b->sinks[i]);
    /* waiting for a connection counts against the same deadline */
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, attempt_timeout_ms(c, b->deadline));
    /* the header callback stays (with NULL, libcurl would hand headers to
     * the body callback with the header data pointer) */
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(h, CURLOPT_PRIVATE, (void *)(uintptr_t)i);
    curl_multi_add_handle(b->multi, h);
}

/* Every transfer of the batch, together, until all ended or one was too
 * large; then the handles go. */
static void batch_transfer(struct batch *b)
{
    const size_t n = b->n;
    if (b->multi) {
        const struct gl_prom_cfg *c = b->p->cfg;
        curl_multi_setopt(b->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)c->max_in_flight);
        curl_multi_setopt(b->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)c->max_in_flight);
        for (size_t i = 0; i < n; i++)
            batch_add(b, i);
        int running = 1;
        while (running && !b->stop) {
            if (curl_multi_perform(b->multi, &running) != CURLM_OK)
                break;
            CURLMsg *msg;
            int left;
            while ((msg = curl_multi_info_read(b->multi, &left))) {
                if (msg->msg != CURLMSG_DONE)
                    continue;
                void *priv = NULL;
                curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
                size_t i = (size_t)(uintptr_t)priv;
                if (i >= n)
                    continue;
                curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &b->status[i]);
                b->result[i] = msg->data.result;
                note_result(&b->sinks[i], msg->easy_handle, b->result[i]);
                if (b->result[i] == CURLE_OK && b->status[i] == 200)
                    b->ok[i] = true;
                if (b->result[i] == CURLE_FILESIZE_EXCEEDED)
                    b->stop = true;
            }
            /* an oversized response ends the batch at once: the chunk is
             * split anyway, so the other transfers are dropped unfinished */
            if (running && !b->stop)
                curl_multi_poll(b->multi, NULL, 0, 1000, NULL);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (b->h[i]) {
            curl_multi_remove_handle(b->multi, b->h[i]);
            curl_easy_cleanup(b->h[i]);
        }
        b->sinks[i].h = NULL;
        free(b->urls[i]);
    }
}

/* Query i did not end in a 200: asked again on its own when the failure
 * is transient (after the server's Retry-After or the first backoff, once
 * per batch: *waited), else reported. */
static enum gl_status batch_retry(struct batch *b, size_t i, bool *waited, struct gl_error *err)
{
    struct gl_prom *p = b->p;
    const struct gl_prom_cfg *c = p->cfg;
    const CURLcode res = b->result[i];
    const long status = b->status[i];
    struct gl_buf params;
    gl_buf_init(&params);
    char what[512];
    range_params(p, b->qs[i].query, b->start, b->end, b->step, &params, what, sizeof what);
    bool retry = res == CURLE_OK ? status >= 500 || status == 429
                                 : transient_curl_error(res) || res == CURLE_FAILED_INIT;
    char why[1400];
    if (res != CURLE_OK)
        transfer_error(c, &b->sinks[i], res, NULL, why, sizeof why);
    else if (status >= 200 && status < 300)
        unexpected_success(status, why, sizeof why);
    else
        describe_status(p, status, &b->bodies[i], why, sizeof why);
    enum gl_status rc;
    if (retry && (c->retries > 0 || res == CURLE_FAILED_INIT)) {
        long delay = 0;
        char late[300] = "";
        if (!*waited && res != CURLE_FAILED_INIT)
            delay = retry_delay(p, 0, b->deadline, late, sizeof late);
        if (delay < 0) {
            rc = gl_error_set(err, GL_ERR_PROM, "%s %s/api/v1/query_range (%s): %s; %s",
                              method(p), c->url, what, why, late);
        } else {
            if (!*waited) {
                gl_log(GL_LOG_WARN,
                       "prometheus request of a batch failed, retrying it on its own "
                       "path=/api/v1/query_range attempt=1 delay_ms=%ld error=\"%s\"",
                       delay, why);
                sleep_ms(delay);
                *waited = true;
            }
            /* a fresh parser for the new attempt (prom_get_from resets the sink) */
            rc = prom_get_from(p, "/api/v1/query_range", params.data, what, &b->sinks[i],
                               res == CURLE_FAILED_INIT ? 0 : 1, b->deadline, err);
        }
    } else {
        /* a final answer: report it without asking again */
        rc = gl_error_set(err, GL_ERR_PROM, "%s %s/api/v1/query_range (%s): %s", method(p),
                          c->url, what, why);
    }
    gl_buf_free(&params);
    return rc;
}

/* Every response is in: the parses end (each query's outcome its own);
 * with budget < n, query budget ran out of collection.max_samples_in_memory
 * and the others were not read whole. */
static void batch_finish(struct batch *b, enum gl_status rc, size_t budget)
{
    struct gl_range_query *qs = b->qs;
    for (size_t i = 0; i < b->n; i++) {
        if (!rc && budget < b->n && i != budget) {
            qs[i].rc = gl_error_set(&qs[i].err, GL_ERR_TOO_LARGE,
                                    "%s: not read: %s ran out of the memory budget", qs[i].what,
                                    qs[budget].what);
        } else if (!rc) {
            struct gl_matrix_parser *mp = b->sinks[i].mp;
            b->sinks[i].mp = NULL;
            if (!mp) /* an empty body: no byte came */
                mp = gl_matrix_parser_new(b->start, b->step, b->nsteps, qs[i].what, qs[i].opts);
            qs[i].bytes = (int64_t)b->sinks[i].total;
            qs[i].rc = gl_matrix_parser_finish(mp, &qs[i].m, &qs[i].err);
            qs[i].over_budget = !rc && budget < b->n && i == budget;
        }
        sink_reset(&b->sinks[i]);
        gl_buf_free(&b->bodies[i]);
    }
}

enum gl_status gl_prom_query_range_batch(struct gl_prom *p, size_t n,
                                         struct gl_range_query *qs, int64_t start, int64_t end,
                                         int64_t step, struct gl_error *err)
{
    for (size_t i = 0; i < n; i++) {
        memset(&qs[i].m, 0, sizeof qs[i].m);
        qs[i].bytes = 0;
        qs[i].rc = GL_OK;
        qs[i].over_budget = false;
        qs[i].err.msg[0] = '\0';
    }
    /* the handles of the batch are copies of p->curl: its credentials are
     * set (refreshed when near expiry) first, and shared by them */
    enum gl_status rc = gl_auth_apply(p->auth, p->curl, p->base, &p->headers, err);
    if (rc)
        return rc;
    struct batch b = {.p = p, .n = n, .qs = qs, .start = start, .end = end, .step = step,
                      .deadline = request_deadline(p->cfg)};
    b.multi = curl_multi_init();
    p->retry_after_s = -1;
    batch_init(&b);
    batch_transfer(&b);
    /* An oversized response wins over every other failure: collect splits
     * the chunk on GL_ERR_TOO_LARGE, and the others may fit then. */
    for (size_t i = 0; i < n && !rc; i++) {
        if (b.sinks[i].too_large || b.result[i] == CURLE_FILESIZE_EXCEEDED) {
            struct gl_buf params;
            gl_buf_init(&params);
            char what[512];
            range_params(p, qs[i].query, start, end, step, &params, what, sizeof what);
            rc = too_large(p, "/api/v1/query_range", what, &b.sinks[i], err);
            gl_buf_free(&params);
        }
    }
    /* A parse out of collection.max_samples_in_memory stopped the batch: its
     * query carries the parser's error (GL_ERR_TOO_LARGE), the others are
     * marked with it too (none was read whole), and nothing is asked again:
     * the caller splits the unit. */
    size_t budget = n;
    for (size_t i = 0; i < n && !rc && budget == n; i++)
        if (b.sinks[i].over_budget)
            budget = i;
    bool waited = false;
    for (size_t i = 0; i < n && !rc && budget == n; i++)
        if (!b.ok[i])
            rc = batch_retry(&b, i, &waited, err);
    batch_finish(&b, rc, budget);
    batch_free(&b);
    return rc;
}

/* GET /api/v1/query at t: the body, left in body. */
static enum gl_status prom_query(struct gl_prom *p, const char *query, int64_t t,
                                 struct gl_buf *body, struct gl_error *err)
{
    char *q = escape(p->curl, query);
    struct gl_buf params;
    gl_buf_init(&params);
    gl_buf_printf(&params, "query=%s&time=%lld&partial_response=false", q, (long long)t);
    char what[400];
    snprintf(what, sizeof what, "query=%.300s", query);
    enum gl_status rc = prom_get(p, "/api/v1/query", params.data, what, body, err);
    gl_buf_free(&params);
    free(q);
    return rc;
}

enum gl_status gl_prom_vector(struct gl_prom *p, const char *query, int64_t t,
                              struct gl_vector *v, struct gl_error *err)
{
    memset(v, 0, sizeof *v);
    struct gl_buf body;
    gl_buf_init(&body);
    enum gl_status rc = prom_query(p, query, t, &body, err);
    if (!rc) {
        /* the answer is held whole (an instant vector is small) and read
         * with the matrices' checks and the configured accepted warnings */
        struct gl_parse_opts o = {.accept_warnings = p->cfg->accept_warnings,
                                  .naccept_warnings = p->cfg->naccept_warnings};
        char what[400];
        snprintf(what, sizeof what, "%s/api/v1/query (query=%.300s)", p->cfg->url, query);
        rc = gl_vector_parse(body.data, body.len, what, &o, v, err);
    }
    gl_buf_free(&body);
    return rc;
}
