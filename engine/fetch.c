/* fetch — libcurl client for the Prometheus HTTP API, with retries. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "fetch.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <curl/curl.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gl_build.h"
#include "timeutil.h"

long gl_prom_backoff_ms = 500;

/* Secret files hold one line: a token or user:password. A larger file is
 * a wrong path (/dev/zero, a log), refused before it fills memory. */
#define SECRET_FILE_MAX 65536

/* Patterns of credentials in error bodies (redacted before logging); the
 * first group is kept. */
static const char *const credential_patterns[] = {
    /* header echoes: Authorization: Bearer x, "authorization":["Basic x"] */
    "(?i)(\\b(?:proxy-)?authorization[\"']?\\s*[:=]\\s*)[^\\r\\n]*",
    "(?i)(\\b(?:cookie|set-cookie|x-api-key|api-key)[\"']?\\s*[:=]\\s*)[^\\r\\n]*",
    /* schemes followed by a credential */
    "(?i)(\\b(?:bearer|basic|digest|token)\\s+)[A-Za-z0-9._~+/=-]{6,}",
    /* key=value and "key": "value" */
    "(?i)(\\b(?:access_token|refresh_token|id_token|token|password|passwd|pwd|secret|"
    "client_secret|api_key|apikey)[\"']?\\s*[=:]\\s*[\"']?)[^\\s&,;\"']+",
    /* a JWT (Kubernetes service-account tokens) anywhere */
    "()eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}(?:\\.[A-Za-z0-9_-]*)?",
};
#define NPATTERNS (sizeof credential_patterns / sizeof *credential_patterns)

struct gl_prom {
    CURL *curl;
    const struct gl_prom_cfg *cfg;
    char *userpwd;
    char *token;        /* the bearer token: redacted from messages */
    struct curl_slist *headers;
    long retry_after_s; /* from the last response, -1 when absent */
    char errbuf[CURL_ERROR_SIZE];
    pcre2_code *redact[NPATTERNS];
};

/* Where one response's body goes: at most max bytes as decompressed. */
struct sink {
    struct gl_buf *buf;
    size_t max;
    bool too_large;
};

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    struct sink *k = user;
    if (n && size * n > k->max - k->buf->len) {
        k->too_large = true;
        return 0; /* aborts the transfer: CURLE_WRITE_ERROR */
    }
    if (!gl_buf_append(k->buf, data, size * n))
        return 0;
    return size * n;
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
        if (isdigit((unsigned char)*s)) {
            char *end = NULL;
            long secs = strtol(s, &end, 10);
            if (*end == '\0' && secs >= 0)
                p->retry_after_s = secs;
        } else if (*s) {
            time_t when = curl_getdate(s, NULL);
            if (when != -1) {
                time_t now = time(NULL);
                p->retry_after_s = when > now ? (long)(when - now) : 0;
            }
        }
    }
    return len;
}

/* One line of secret text (token or user:password), trailing space removed. */
static enum gl_status read_secret(const char *what, const char *file, char **out,
                                  struct gl_error *err)
{
    char *tok = NULL;
    size_t len = 0;
    if (gl_read_file_max(file, SECRET_FILE_MAX, &tok, &len, err))
        return gl_error_set(err, GL_ERR_CONFIG, "prometheus.%s: %s (it must hold one line)",
                            what, err->msg);
    size_t n = strlen(tok);
    if (n != len) {
        memset(tok, 0, len);
        free(tok);
        return gl_error_set(err, GL_ERR_CONFIG, "%s: %s holds a NUL byte", file, what);
    }
    while (n > 0 && isspace((unsigned char)tok[n - 1]))
        tok[--n] = '\0';
    if (n == 0 || strpbrk(tok, "\r\n")) {
        free(tok);
        return gl_error_set(err, GL_ERR_CONFIG, "%s: %s is empty or has several lines", file, what);
    }
    *out = tok;
    return GL_OK;
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
    for (size_t i = 0; i < c->nheaders; i++) {
        char line[1024];
        snprintf(line, sizeof line, "%s: %s", c->headers[i].name, c->headers[i].value);
        p->headers = curl_slist_append(p->headers, line);
    }
    if (c->bearer_token_file) {
        char *tok = NULL;
        if (read_secret("bearer_token_file", c->bearer_token_file, &tok, err)) {
            gl_prom_free(p);
            return GL_ERR_CONFIG;
        }
        size_t n = strlen(tok) + 32;
        char *line = gl_xcalloc(n, 1);
        snprintf(line, n, "Authorization: Bearer %s", tok);
        p->headers = curl_slist_append(p->headers, line);
        memset(line, 0, n);
        free(line);
        p->token = tok; /* kept to redact it from messages */
    }
    for (size_t i = 0; i < NPATTERNS; i++) {
        int ec;
        PCRE2_SIZE off;
        p->redact[i] = pcre2_compile((PCRE2_SPTR)credential_patterns[i], PCRE2_ZERO_TERMINATED,
                                     0, &ec, &off, NULL);
        if (!p->redact[i]) {
            gl_prom_free(p);
            return gl_error_set(err, GL_ERR_RUNTIME, "cannot compile a redaction pattern");
        }
    }
    p->headers = curl_slist_append(p->headers, "Accept: application/json");
    CURL *h = p->curl;
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, p->headers);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, p->errbuf);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, c->timeout_s);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, c->timeout_s < 10 ? c->timeout_s : 10L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
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
    if (c->basic_auth_file) {
        if (read_secret("basic_auth_file", c->basic_auth_file, &p->userpwd, err)) {
            gl_prom_free(p);
            return GL_ERR_CONFIG;
        }
        if (!strchr(p->userpwd, ':')) {
            gl_prom_free(p);
            return gl_error_set(err, GL_ERR_CONFIG, "%s: basic_auth_file must hold user:password",
                                c->basic_auth_file);
        }
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERPWD, p->userpwd);
    }
    /* http_proxy / https_proxy / no_proxy from the environment: libcurl's default. */
    *out = p;
    return GL_OK;
}

void gl_prom_free(struct gl_prom *p)
{
    if (!p)
        return;
    curl_slist_free_all(p->headers);
    curl_easy_cleanup(p->curl);
    if (p->userpwd) {
        memset(p->userpwd, 0, strlen(p->userpwd));
        free(p->userpwd);
    }
    if (p->token) {
        memset(p->token, 0, strlen(p->token));
        free(p->token);
    }
    for (size_t i = 0; i < NPATTERNS; i++)
        pcre2_code_free(p->redact[i]);
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

/* Replaces every occurrence of secret in b with [redacted]. */
static void redact_exact(struct gl_buf *b, const char *secret)
{
    size_t k = secret ? strlen(secret) : 0;
    if (k < 4 || !b->data) /* a shorter "secret" would redact ordinary text */
        return;
    struct gl_buf out;
    gl_buf_init(&out);
    const char *s = b->data, *hit;
    while ((hit = strstr(s, secret))) {
        gl_buf_append(&out, s, (size_t)(hit - s));
        gl_buf_puts(&out, "[redacted]");
        s = hit + k;
    }
    if (s == b->data) {
        gl_buf_free(&out);
        return;
    }
    gl_buf_puts(&out, s);
    memset(b->data, 0, b->len);
    gl_buf_free(b);
    *b = out;
}

/* Redacts the configured token and password, then anything that looks
 * like a credential (credential_patterns), in place. */
static void scrub(const struct gl_prom *p, struct gl_buf *b)
{
    redact_exact(b, p->token);
    redact_exact(b, p->userpwd);
    const char *pw = p->userpwd ? strchr(p->userpwd, ':') : NULL;
    redact_exact(b, pw ? pw + 1 : NULL);
    for (size_t i = 0; i < NPATTERNS && b->data; i++) {
        PCRE2_SIZE need = b->len * 2 + 64;
        for (int pass = 0; pass < 2; pass++) {
            PCRE2_UCHAR *out = malloc(need);
            if (!out)
                return;
            PCRE2_SIZE olen = need;
            int rc = pcre2_substitute(p->redact[i], (PCRE2_SPTR)b->data, b->len, 0,
                                      PCRE2_SUBSTITUTE_GLOBAL |
                                          PCRE2_SUBSTITUTE_OVERFLOW_LENGTH,
                                      NULL, NULL, (PCRE2_SPTR) "$1[redacted]",
                                      PCRE2_ZERO_TERMINATED, out, &olen);
            if (rc == PCRE2_ERROR_NOMEMORY) {
                free(out);
                need = olen + 1;
                continue;
            }
            if (rc > 0) {
                gl_buf_reset(b);
                gl_buf_append(b, out, olen);
            }
            free(out);
            break;
        }
    }
}

/* "errorType: error" from a Prometheus error body, or a short excerpt;
 * credentials redacted (scrub) before anything is cut or shown. */
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
    else /* the start of the body, NULs as spaces (the text is a C string) */
        for (size_t i = 0; i < body->len && i < 8192; i++)
            gl_buf_append(&text, body->data[i] ? &body->data[i] : " ", 1);
    cJSON_Delete(root);
    scrub(p, &text);
    size_t k = 0;
    for (size_t i = 0; i < text.len && k + 1 < n && k < 300; i++) {
        unsigned char ch = (unsigned char)text.data[i];
        out[k++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : ' ';
    }
    out[k] = '\0';
    if (text.data)
        memset(text.data, 0, text.len);
    gl_buf_free(&text);
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
 * the deadline: a Retry-After beyond it fails at once. */
static long retry_delay(const struct gl_prom *p, int attempt, int64_t deadline, char *why,
                        size_t nwhy)
{
    const struct gl_prom_cfg *c = p->cfg;
    int64_t left = deadline - now_ms();
    long delay = gl_prom_backoff_ms << (attempt < 6 ? attempt : 6);
    if (p->retry_after_s >= 0) {
        if ((int64_t)p->retry_after_s * 1000 >= left) {
            snprintf(why, nwhy,
                     "the server asks to retry after %lds (Retry-After), beyond the request "
                     "deadline (prometheus.request_deadline_seconds = %lds, %.1fs left): not "
                     "waiting",
                     p->retry_after_s, c->request_deadline_s, left > 0 ? (double)left / 1000 : 0.0);
            return -1;
        }
        delay = p->retry_after_s * 1000;
    }
    if (delay >= left) {
        snprintf(why, nwhy, "request deadline reached (prometheus.request_deadline_seconds = %lds)",
                 c->request_deadline_s);
        return -1;
    }
    return delay;
}

static enum gl_status too_large(const struct gl_prom *p, const char *path, const char *what,
                                struct gl_buf *body, struct gl_error *err)
{
    gl_buf_free(body);
    return gl_error_set(err, GL_ERR_TOO_LARGE,
                        "GET %s%s (%s): response larger than prometheus.max_response_bytes "
                        "(%lld bytes, decompressed)",
                        p->cfg->url, path, what, (long long)p->cfg->max_response_bytes);
}

/* GET base+path?params with retries, counting first_attempt tries as
 * already made, all of them done by deadline (now_ms). params is already
 * URL-encoded. */
static enum gl_status prom_get_from(struct gl_prom *p, const char *path, const char *params,
                                    const char *what, struct gl_buf *body, int first_attempt,
                                    int64_t deadline, struct gl_error *err)
{
    const struct gl_prom_cfg *c = p->cfg;
    size_t n = strlen(c->url) + strlen(path) + strlen(params) + 2;
    char *url = gl_xcalloc(n, 1);
    snprintf(url, n, "%s%s?%s", c->url, path, params);
    enum gl_status rc = GL_OK;
    for (int attempt = first_attempt;; attempt++) {
        gl_buf_reset(body);
        struct sink sink = {body, (size_t)c->max_response_bytes, false};
        p->retry_after_s = -1;
        p->errbuf[0] = '\0';
        curl_easy_setopt(p->curl, CURLOPT_URL, url);
        curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, &sink);
        curl_easy_setopt(p->curl, CURLOPT_TIMEOUT_MS, attempt_timeout_ms(c, deadline));
        CURLcode cr = curl_easy_perform(p->curl);
        curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, NULL);
        long status = 0;
        curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
        if (sink.too_large || cr == CURLE_FILESIZE_EXCEEDED) {
            rc = too_large(p, path, what, body, err);
            break;
        }
        bool retry = false;
        char why[800];
        if (cr != CURLE_OK) {
            snprintf(why, sizeof why, "%s%s", p->errbuf[0] ? p->errbuf : curl_easy_strerror(cr),
                     tls_hint(c, cr));
            retry = transient_curl_error(cr);
            rc = GL_ERR_PROM;
        } else if (status >= 200 && status < 300) {
            rc = GL_OK;
        } else {
            char desc[400];
            describe_body(p, body, desc, sizeof desc);
            snprintf(why, sizeof why, "HTTP %ld: %s", status, desc);
            retry = status >= 500 || status == 429;
            rc = GL_ERR_PROM;
        }
        if (rc == GL_OK)
            break;
        char late[300] = "";
        long delay = retry && attempt < c->retries
                         ? retry_delay(p, attempt, deadline, late, sizeof late) : 0;
        if (!retry || attempt >= c->retries || delay < 0) {
            gl_error_set(err, GL_ERR_PROM, "GET %s%s (%s): %s%s%s", c->url, path, what, why,
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
    return prom_get_from(p, path, params, what, body, 0, request_deadline(p->cfg), err);
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

enum gl_status gl_prom_query_range(struct gl_prom *p, const char *query, int64_t start,
                                   int64_t end, int64_t step, struct gl_buf *body,
                                   struct gl_error *err)
{
    struct gl_buf params;
    gl_buf_init(&params);
    char what[512];
    range_params(p, query, start, end, step, &params, what, sizeof what);
    enum gl_status rc = prom_get(p, "/api/v1/query_range", params.data, what, body, err);
    gl_buf_free(&params);
    return rc;
}

enum gl_status gl_prom_query_range_batch(struct gl_prom *p, size_t n, char *const *queries,
                                         int64_t start, int64_t end, int64_t step,
                                         struct gl_buf *bodies, struct gl_error *err)
{
    const struct gl_prom_cfg *c = p->cfg;
    const int64_t deadline = request_deadline(c);
    CURLM *multi = curl_multi_init();
    p->retry_after_s = -1;
    CURL **h = gl_xcalloc(n, sizeof *h);
    bool *ok = gl_xcalloc(n, sizeof *ok);
    long *status = gl_xcalloc(n, sizeof *status);
    CURLcode *result = gl_xcalloc(n, sizeof *result);
    struct sink *sinks = gl_xcalloc(n, sizeof *sinks);
    for (size_t i = 0; i < n; i++)
        result[i] = CURLE_FAILED_INIT;
    char **urls = gl_xcalloc(n, sizeof *urls);
    if (multi) {
        curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)c->max_in_flight);
        curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)c->max_in_flight);
        for (size_t i = 0; i < n; i++) {
            struct gl_buf params;
            gl_buf_init(&params);
            char what[512];
            range_params(p, queries[i], start, end, step, &params, what, sizeof what);
            gl_buf_reset(&bodies[i]);
            gl_buf_printf(&bodies[i], "%s/api/v1/query_range?%s", c->url, params.data);
            urls[i] = bodies[i].data;
            gl_buf_init(&bodies[i]);
            gl_buf_free(&params);
            sinks[i] = (struct sink){&bodies[i], (size_t)c->max_response_bytes, false};
            h[i] = curl_easy_duphandle(p->curl);
            if (!h[i])
                continue;
            curl_easy_setopt(h[i], CURLOPT_URL, urls[i]);
            curl_easy_setopt(h[i], CURLOPT_WRITEDATA, &sinks[i]);
            /* waiting for a connection counts against the same deadline */
            curl_easy_setopt(h[i], CURLOPT_TIMEOUT_MS, attempt_timeout_ms(c, deadline));
            /* the header callback stays (with NULL, libcurl would hand headers to
             * the body callback with the header data pointer) */
            curl_easy_setopt(h[i], CURLOPT_ERRORBUFFER, NULL);
            curl_easy_setopt(h[i], CURLOPT_PRIVATE, (void *)(uintptr_t)i);
            curl_multi_add_handle(multi, h[i]);
        }
        int running = 1;
        while (running) {
            if (curl_multi_perform(multi, &running) != CURLM_OK)
                break;
            if (running)
                curl_multi_poll(multi, NULL, 0, 1000, NULL);
        }
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(multi, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            void *priv = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
            size_t i = (size_t)(uintptr_t)priv;
            if (i >= n)
                continue;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status[i]);
            result[i] = msg->data.result;
            if (result[i] == CURLE_OK && status[i] >= 200 && status[i] < 300)
                ok[i] = true;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (h[i]) {
            curl_multi_remove_handle(multi, h[i]);
            curl_easy_cleanup(h[i]);
        }
        free(urls[i]);
    }
    enum gl_status rc = GL_OK;
    /* An oversized response wins over every other failure: collect splits
     * the chunk on GL_ERR_TOO_LARGE, and the others may fit then. */
    for (size_t i = 0; i < n && !rc; i++) {
        if (sinks[i].too_large || result[i] == CURLE_FILESIZE_EXCEEDED) {
            struct gl_buf params;
            gl_buf_init(&params);
            char what[512];
            range_params(p, queries[i], start, end, step, &params, what, sizeof what);
            rc = too_large(p, "/api/v1/query_range", what, &bodies[i], err);
            gl_buf_free(&params);
        }
    }
    bool waited = false;
    for (size_t i = 0; i < n && !rc; i++) {
        if (ok[i])
            continue;
        struct gl_buf params;
        gl_buf_init(&params);
        char what[512];
        range_params(p, queries[i], start, end, step, &params, what, sizeof what);
        bool retry = result[i] == CURLE_OK ? status[i] >= 500 || status[i] == 429
                                           : transient_curl_error(result[i]) ||
                                                 result[i] == CURLE_FAILED_INIT;
        char why[800];
        if (result[i] != CURLE_OK)
            snprintf(why, sizeof why, "%s%s", curl_easy_strerror(result[i]),
                     tls_hint(c, result[i]));
        else {
            char desc[400];
            describe_body(p, &bodies[i], desc, sizeof desc);
            snprintf(why, sizeof why, "HTTP %ld: %s", status[i], desc);
        }
        if (retry && (c->retries > 0 || result[i] == CURLE_FAILED_INIT)) {
            /* retried alone, after the server's Retry-After (any response of
             * the batch) or the first backoff, within the same deadline */
            long delay = 0;
            char late[300] = "";
            if (!waited && result[i] != CURLE_FAILED_INIT)
                delay = retry_delay(p, 0, deadline, late, sizeof late);
            if (delay < 0) {
                rc = gl_error_set(err, GL_ERR_PROM, "GET %s/api/v1/query_range (%s): %s; %s",
                                  c->url, what, why, late);
            } else {
                if (!waited) {
                    gl_log(GL_LOG_WARN,
                           "prometheus request of a batch failed, retrying it on its own "
                           "path=/api/v1/query_range attempt=1 delay_ms=%ld error=\"%s\"",
                           delay, why);
                    sleep_ms(delay);
                    waited = true;
                }
                rc = prom_get_from(p, "/api/v1/query_range", params.data, what, &bodies[i],
                                   result[i] == CURLE_FAILED_INIT ? 0 : 1, deadline, err);
            }
        } else {
            /* a final answer: report it without asking again */
            rc = gl_error_set(err, GL_ERR_PROM, "GET %s/api/v1/query_range (%s): %s", c->url,
                              what, why);
        }
        gl_buf_free(&params);
    }
    if (rc) /* nothing of a failed batch is used: give its memory back now */
        for (size_t i = 0; i < n; i++)
            gl_buf_free(&bodies[i]);
    if (multi)
        curl_multi_cleanup(multi);
    free(h);
    free(ok);
    free(status);
    free(result);
    free(sinks);
    free(urls);
    return rc;
}

enum gl_status gl_prom_query(struct gl_prom *p, const char *query, int64_t t,
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
