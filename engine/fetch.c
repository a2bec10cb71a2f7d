/* fetch — libcurl client for the Prometheus HTTP API, with retries. */
#include "fetch.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gl_build.h"
#include "timeutil.h"

long gl_prom_backoff_ms = 500;

struct gl_prom {
    CURL *curl;
    const struct gl_prom_cfg *cfg;
    char *userpwd;
    struct curl_slist *headers;
    long retry_after_s; /* from the last response, -1 when absent */
    char errbuf[CURL_ERROR_SIZE];
};

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    struct gl_buf *b = user;
    if (!gl_buf_append(b, data, size * n))
        return 0;
    return size * n;
}

static size_t on_header(char *data, size_t size, size_t n, void *user)
{
    struct gl_prom *p = user;
    size_t len = size * n;
    if (len > 12 && strncasecmp(data, "Retry-After:", 12) == 0) {
        const char *v = data + 12;
        while (*v == ' ')
            v++;
        if (isdigit((unsigned char)*v))
            p->retry_after_s = strtol(v, NULL, 10);
    }
    return len;
}

/* One line of secret text (token or user:password), trailing space removed. */
static enum gl_status read_secret(const char *what, const char *file, char **out,
                                  struct gl_error *err)
{
    char *tok = NULL;
    if (gl_read_file(file, &tok, NULL, err))
        return gl_error_set(err, GL_ERR_CONFIG, "prometheus.%s: %s", what, err->msg);
    size_t n = strlen(tok);
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
        memset(tok, 0, strlen(tok));
        free(line);
        free(tok);
    }
    p->headers = curl_slist_append(p->headers, "Accept: application/json");
    CURL *h = p->curl;
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, p->headers);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, p->errbuf);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, c->timeout_s);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, c->timeout_s < 10 ? c->timeout_s : 10L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
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

/* "errorType: error" from a Prometheus error body, or a short excerpt. */
static void describe_body(const struct gl_buf *body, char *out, size_t n)
{
    out[0] = '\0';
    if (!body->data || body->len == 0) {
        snprintf(out, n, "(empty body)");
        return;
    }
    cJSON *root = cJSON_ParseWithLength(body->data, body->len);
    const cJSON *et = cJSON_GetObjectItemCaseSensitive(root, "errorType");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
    if (cJSON_IsString(e)) {
        snprintf(out, n, "%s: %s", cJSON_IsString(et) ? et->valuestring : "error",
                 e->valuestring);
    } else {
        size_t k = 0;
        for (size_t i = 0; i < body->len && k + 1 < n && k < 200; i++) {
            unsigned char ch = (unsigned char)body->data[i];
            out[k++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : ' ';
        }
        out[k] = '\0';
    }
    cJSON_Delete(root);
}

/* GET base+path?params with retries. params is already URL-encoded. */
static enum gl_status prom_get_from(struct gl_prom *p, const char *path, const char *params,
                                    const char *what, struct gl_buf *body, int first_attempt,
                                    struct gl_error *err);

static enum gl_status prom_get(struct gl_prom *p, const char *path, const char *params,
                               const char *what, struct gl_buf *body, struct gl_error *err)
{
    return prom_get_from(p, path, params, what, body, 0, err);
}

/* GET with retries, counting first_attempt tries as already made. */
static enum gl_status prom_get_from(struct gl_prom *p, const char *path, const char *params,
                                    const char *what, struct gl_buf *body, int first_attempt,
                                    struct gl_error *err)
{
    const struct gl_prom_cfg *c = p->cfg;
    size_t n = strlen(c->url) + strlen(path) + strlen(params) + 2;
    char *url = gl_xcalloc(n, 1);
    snprintf(url, n, "%s%s?%s", c->url, path, params);
    enum gl_status rc = GL_OK;
    for (int attempt = first_attempt;; attempt++) {
        gl_buf_reset(body);
        p->retry_after_s = -1;
        p->errbuf[0] = '\0';
        curl_easy_setopt(p->curl, CURLOPT_URL, url);
        curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, body);
        CURLcode cr = curl_easy_perform(p->curl);
        long status = 0;
        curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
        bool retry = false;
        char why[600];
        if (cr != CURLE_OK) {
            snprintf(why, sizeof why, "%s%s", p->errbuf[0] ? p->errbuf : curl_easy_strerror(cr),
                     tls_hint(c, cr));
            retry = transient_curl_error(cr);
            rc = GL_ERR_PROM;
        } else if (status >= 200 && status < 300) {
            rc = GL_OK;
        } else {
            char desc[400];
            describe_body(body, desc, sizeof desc);
            snprintf(why, sizeof why, "HTTP %ld: %s", status, desc);
            retry = status >= 500 || status == 429;
            rc = GL_ERR_PROM;
        }
        if (rc == GL_OK)
            break;
        if (!retry || attempt >= c->retries) {
            gl_error_set(err, GL_ERR_PROM, "GET %s%s (%s): %s%s", c->url, path, what, why,
                         retry && c->retries > 0 ? " (retries exhausted)" : "");
            break;
        }
        long delay = gl_prom_backoff_ms << (attempt < 6 ? attempt : 6);
        if (p->retry_after_s >= 0)
            delay = (p->retry_after_s > 300 ? 300 : p->retry_after_s) * 1000;
        gl_log(GL_LOG_WARN, "prometheus request failed, retrying path=%s attempt=%d delay_ms=%ld error=\"%s\"",
               path, attempt + 1, delay, why);
        sleep_ms(delay);
    }
    free(url);
    return rc;
}

static char *escape(CURL *h, const char *s)
{
    char *e = curl_easy_escape(h, s, 0);
    char *copy = gl_strdup(e ? e : "");
    curl_free(e);
    return copy;
}

static void range_params(struct gl_prom *p, const char *query, int64_t start, int64_t end,
                         int64_t step, struct gl_buf *params, char *what, size_t nwhat);

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

static void range_params(struct gl_prom *p, const char *query, int64_t start, int64_t end,
                         int64_t step, struct gl_buf *params, char *what, size_t nwhat)
{
    char *q = escape(p->curl, query);
    gl_buf_printf(params, "query=%s&start=%lld&end=%lld&step=%lld", q, (long long)start,
                  (long long)end, (long long)step);
    free(q);
    char from[32], to[32];
    gl_time_format(start, from, sizeof from);
    gl_time_format(end, to, sizeof to);
    snprintf(what, nwhat, "query=%.300s start=%s end=%s step=%llds", query, from, to,
             (long long)step);
}

enum gl_status gl_prom_query_range_batch(struct gl_prom *p, size_t n, char *const *queries,
                                         int64_t start, int64_t end, int64_t step,
                                         struct gl_buf *bodies, struct gl_error *err)
{
    const struct gl_prom_cfg *c = p->cfg;
    CURLM *multi = curl_multi_init();
    p->retry_after_s = -1;
    CURL **h = gl_xcalloc(n, sizeof *h);
    bool *ok = gl_xcalloc(n, sizeof *ok);
    long *status = gl_xcalloc(n, sizeof *status);
    CURLcode *result = gl_xcalloc(n, sizeof *result);
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
            h[i] = curl_easy_duphandle(p->curl);
            if (!h[i])
                continue;
            curl_easy_setopt(h[i], CURLOPT_URL, urls[i]);
            curl_easy_setopt(h[i], CURLOPT_WRITEDATA, &bodies[i]);
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
    enum gl_status rc = GL_OK;
    bool waited = false;
    for (size_t i = 0; i < n; i++) {
        if (h[i]) {
            curl_multi_remove_handle(multi, h[i]);
            curl_easy_cleanup(h[i]);
        }
        free(urls[i]);
        if (ok[i] || rc)
            continue;
        struct gl_buf params;
        gl_buf_init(&params);
        char what[512];
        range_params(p, queries[i], start, end, step, &params, what, sizeof what);
        bool retry = result[i] == CURLE_OK ? status[i] >= 500 || status[i] == 429
                                           : transient_curl_error(result[i]) ||
                                                 result[i] == CURLE_FAILED_INIT;
        if (retry && (c->retries > 0 || result[i] == CURLE_FAILED_INIT)) {
            /* retried alone, after the server's Retry-After (any response of
             * the batch) or the first backoff */
            if (!waited) {
                long delay = p->retry_after_s >= 0
                                 ? (p->retry_after_s > 300 ? 300 : p->retry_after_s) * 1000
                                 : gl_prom_backoff_ms;
                char why[160];
                if (result[i] != CURLE_OK)
                    snprintf(why, sizeof why, "%s", curl_easy_strerror(result[i]));
                else
                    snprintf(why, sizeof why, "HTTP %ld", status[i]);
                gl_log(GL_LOG_WARN,
                       "prometheus request of a batch failed, retrying it on its own "
                       "path=/api/v1/query_range attempt=1 delay_ms=%ld error=\"%s\"",
                       delay, why);
                sleep_ms(delay);
                waited = true;
            }
            rc = prom_get_from(p, "/api/v1/query_range", params.data, what, &bodies[i],
                               result[i] == CURLE_FAILED_INIT ? 0 : 1, err);
        } else {
            /* a final answer: report it without asking again */
            char why[600];
            if (result[i] != CURLE_OK)
                snprintf(why, sizeof why, "%s%s", curl_easy_strerror(result[i]),
                         tls_hint(c, result[i]));
            else {
                char desc[400];
                describe_body(&bodies[i], desc, sizeof desc);
                snprintf(why, sizeof why, "HTTP %ld: %s", status[i], desc);
            }
            rc = gl_error_set(err, GL_ERR_PROM, "GET %s/api/v1/query_range (%s): %s", c->url,
                              what, why);
        }
        gl_buf_free(&params);
    }
    if (multi)
        curl_multi_cleanup(multi);
    free(h);
    free(ok);
    free(status);
    free(result);
    free(urls);
    return rc;
}

enum gl_status gl_prom_query(struct gl_prom *p, const char *query, int64_t t,
                             struct gl_buf *body, struct gl_error *err)
{
    char *q = escape(p->curl, query);
    struct gl_buf params;
    gl_buf_init(&params);
    gl_buf_printf(&params, "query=%s&time=%lld", q, (long long)t);
    char what[400];
    snprintf(what, sizeof what, "query=%.300s", query);
    enum gl_status rc = prom_get(p, "/api/v1/query", params.data, what, body, err);
    gl_buf_free(&params);
    free(q);
    return rc;
}
