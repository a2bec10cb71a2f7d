/* auth — the providers table of the Prometheus client's credentials and
 * what every provider shares: secrets kept for redaction, secret files,
 * calls to a credential service, the refresh of expiring credentials.
 * Each provider is a file of its own, auth_<method>.c (auth_provider.h). */
#include "auth_provider.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "gl_build.h"
#include "timeutil.h"

/* A credential service's answer is a few KiB. */
#define TOKEN_RESPONSE_MAX (1L << 20)
/* Temporary credentials are renewed this long before they expire (at most
 * half their lifetime): what the AWS SDKs and Google's libraries do. */
#define REFRESH_MARGIN_S 300
/* A refresh that failed while the credentials are still valid is tried
 * again after this long. */
#define REFRESH_RETRY_S 10
/* Secret files hold one line: a token or user:password. A larger file is
 * a wrong path (/dev/zero, a log), refused before it fills memory. */
#define SECRET_FILE_MAX 65536


/* Patterns of credentials in error bodies (redacted before logging); the
 * first group is kept. */
static const char *const credential_patterns[] = {
    /* header echoes: Authorization: Bearer x, "authorization":["Basic x"] */
    "(?i)(\\b(?:proxy-)?authorization[\"']?\\s*[:=]\\s*)[^\\r\\n]*",
    "(?i)(\\b(?:cookie|set-cookie|x-api-key|api-key|x-amz-security-token)"
    "[\"']?\\s*[:=]\\s*)[^\\r\\n]*",
    /* schemes followed by a credential */
    "(?i)(\\b(?:bearer|basic|digest)\\s+)[A-Za-z0-9._~+/=-]{6,}",
    /* "token X" when X holds a digit or a symbol, or is long: not "token included" */
    "(?i)(\\btoken\\s+)(?:(?=[a-z]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{6,}|[a-z]{20,})",
    /* key=value and "key": "value" */
    "(?i)(\\b(?:access_token|refresh_token|id_token|token|password|passwd|pwd|secret|"
    "client_secret|client_assertion|assertion|api_key|apikey|secretaccesskey|"
    "secret_access_key|sessiontoken|session_token|webidentitytoken)[\"']?\\s*[=:]\\s*[\"']?)"
    "[^\\s&,;\"']+",
    /* XML elements of STS answers */
    "(?i)(<(?:SecretAccessKey|SessionToken)>)[^<]*",
    /* a JWT (Kubernetes service-account tokens) anywhere */
    "()eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}(?:\\.[A-Za-z0-9_-]*)?",
};
_Static_assert(sizeof credential_patterns / sizeof *credential_patterns == NPATTERNS,
               "NPATTERNS of auth_provider.h counts credential_patterns");

void auth_wipe_free(char *s)
{
    if (s) {
        memset(s, 0, strlen(s));
        free(s);
    }
}

void auth_cred_wipe(struct cred *c)
{
    auth_wipe_free(c->token);
    auth_wipe_free(c->key_id);
    auth_wipe_free(c->secret);
    auth_wipe_free(c->session);
    memset(c, 0, sizeof *c);
}

/* Remembers s for redaction (a copy; the oldest is forgotten). */
void auth_keep_secret(struct gl_auth *a, const char *s)
{
    if (!s || strlen(s) < 4)
        return;
    for (size_t i = 0; i < SECRETS_KEPT; i++)
        if (a->secrets[i] && strcmp(a->secrets[i], s) == 0)
            return;
    size_t k = a->next_secret++ % SECRETS_KEPT;
    auth_wipe_free(a->secrets[k]);
    a->secrets[k] = gl_strdup(s);
}

const char *auth_env(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

/* A value that goes into an HTTP header or a credential: printable ASCII
 * without spaces. */
bool auth_header_safe(const char *s)
{
    if (!s || !s[0])
        return false;
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
            return false;
    return true;
}

/* One line of secret text (token or user:password), trailing space removed;
 * what names it in messages. */
enum gl_status auth_read_secret(const char *what, const char *file, char **out,
                                struct gl_error *err)
{
    char *tok = NULL;
    size_t len = 0;
    *out = NULL;
    if (gl_read_file_max(file, SECRET_FILE_MAX, &tok, &len, err))
        return gl_error_set(err, GL_ERR_CONFIG, "%s: %s (it must hold one line)", what,
                            err->msg);
    size_t n = strlen(tok);
    if (n != len) {
        memset(tok, 0, len);
        free(tok);
        return gl_error_set(err, GL_ERR_CONFIG, "%s: %s holds a NUL byte", file, what);
    }
    while (n > 0 && isspace((unsigned char)tok[n - 1]))
        tok[--n] = '\0';
    if (n == 0 || strpbrk(tok, "\r\n")) {
        auth_wipe_free(tok);
        return gl_error_set(err, GL_ERR_CONFIG, "%s: %s is empty or has several lines", file,
                            what);
    }
    *out = tok;
    return GL_OK;
}

/* ---- redaction ---- */

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

void gl_auth_scrub(struct gl_auth *a, struct gl_buf *b)
{
    mtx_lock(&a->lock);
    for (size_t i = 0; i < SECRETS_KEPT; i++)
        redact_exact(b, a->secrets[i]);
    for (size_t i = 0; i < NPATTERNS && b->data; i++) {
        PCRE2_SIZE need = b->len * 2 + 64;
        for (int pass = 0; pass < 2; pass++) {
            PCRE2_UCHAR *out = malloc(need);
            if (!out)
                break;
            PCRE2_SIZE olen = need;
            int rc = pcre2_substitute(a->redact[i], (PCRE2_SPTR)b->data, b->len, 0,
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
                memset(b->data, 0, b->len);
                gl_buf_reset(b);
                gl_buf_append(b, out, olen);
            }
            free(out);
            break;
        }
    }
    mtx_unlock(&a->lock);
}

void gl_auth_excerpt(struct gl_auth *a, const char *text, size_t len, size_t max, char *out,
                     size_t n)
{
    struct gl_buf t;
    gl_buf_init(&t);
    for (size_t i = 0; text && i < len && i < 8192; i++) /* NULs as spaces: a C string */
        gl_buf_append(&t, text[i] ? &text[i] : " ", 1);
    gl_auth_scrub(a, &t);
    size_t k = 0;
    int space = 1;
    for (size_t i = 0; i < t.len && k + 1 < n && k < max; i++) {
        unsigned char ch = (unsigned char)t.data[i];
        if (ch < 0x20 || ch >= 0x7f || ch == ' ') { /* white space folded */
            if (!space)
                out[k++] = ' ';
            space = 1;
            continue;
        }
        out[k++] = (char)ch;
        space = 0;
    }
    while (k > 0 && out[k - 1] == ' ')
        k--;
    if (n)
        out[k] = '\0';
    if (t.data)
        memset(t.data, 0, t.len);
    gl_buf_free(&t);
}

/* ---- HTTP to a credential service ---- */
struct sink {
    struct gl_buf *buf;
    bool too_large;
};

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    struct sink *k = user;
    if (n && size * n > (size_t)TOKEN_RESPONSE_MAX - k->buf->len) {
        k->too_large = true;
        return 0;
    }
    return gl_buf_append(k->buf, data, size * n) ? size * n : 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* GET url (post NULL) or POST the form post, with headers; the answer's
 * status and body whatever the status. Connection failures, 5xx and 429
 * are tried three times. what names the service in messages. */
enum gl_status auth_service_call(struct gl_auth *a, const char *what, const char *url,
                                 const char *post, struct curl_slist *headers,
                                 struct gl_buf *body, long *status, struct gl_error *err)
{
    CURL *h = curl_easy_init();
    if (!h)
        return gl_error_set(err, GL_ERR_RUNTIME, "cannot initialise libcurl");
    char errbuf[CURL_ERROR_SIZE];
    long timeout = a->cfg->timeout_s < 30 ? a->cfg->timeout_s : 30;
    enum gl_status rc = GL_OK;
    for (int attempt = 0;; attempt++) {
        gl_buf_reset(body);
        struct sink sink = {body, false};
        errbuf[0] = '\0';
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, timeout < 10 ? timeout : 10L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_USERAGENT, "gpuledger/" GL_VERSION);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
        curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)TOKEN_RESPONSE_MAX);
        if (post)
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, post);
        CURLcode cr = curl_easy_perform(h);
        *status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
        bool retry = false;
        if (sink.too_large || cr == CURLE_FILESIZE_EXCEEDED) {
            rc = gl_error_set(err, GL_ERR_PROM, "%s: %s %s (%s): answer larger than %ld bytes",
                              a->mode, post ? "POST" : "GET", url, what, TOKEN_RESPONSE_MAX);
        } else if (cr != CURLE_OK) {
            retry = cr == CURLE_OPERATION_TIMEDOUT || cr == CURLE_COULDNT_CONNECT ||
                    cr == CURLE_RECV_ERROR || cr == CURLE_SEND_ERROR ||
                    cr == CURLE_GOT_NOTHING || cr == CURLE_COULDNT_RESOLVE_HOST;
            rc = gl_error_set(err, GL_ERR_PROM, "%s: %s %s (%s): %s", a->mode,
                              post ? "POST" : "GET", url, what,
                              errbuf[0] ? errbuf : curl_easy_strerror(cr));
        } else {
            rc = GL_OK;
            retry = *status >= 500 || *status == 429;
        }
        if (!retry || attempt >= 2)
            break;
        gl_log(GL_LOG_WARN, "credential service failed, retrying service=\"%s\" attempt=%d",
               what, attempt + 1);
        sleep_ms(250L << (2 * attempt));
    }
    curl_easy_cleanup(h);
    return rc;
}
char *auth_escape(const char *s)
{
    char *e = curl_easy_escape(NULL, s, 0);
    char *copy = gl_strdup(e ? e : "");
    curl_free(e);
    return copy;
}

/* expires_in: a whole number of seconds (a JSON number, or a string of
 * digits as some Entra endpoints send). */
static bool parse_expires_in(const cJSON *v, int64_t *out)
{
    double d = -1;
    if (cJSON_IsNumber(v))
        d = v->valuedouble;
    else if (cJSON_IsString(v) && v->valuestring[0] &&
             strspn(v->valuestring, "0123456789") == strlen(v->valuestring) &&
             strlen(v->valuestring) < 10)
        d = (double)atol(v->valuestring);
    if (!(d >= 1 && d <= 1e8) || d != (double)(int64_t)d)
        return false;
    *out = (int64_t)d;
    return true;
}

const char *auth_json_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The error of a credential service that answered status: the mode, the
 * service, the status, its scrubbed message and what to fix. */
enum gl_status auth_service_refused(struct gl_auth *a, const char *what, const char *url,
                                    bool post, long status, const char *msg, size_t len,
                                    const char *fix, struct gl_error *err)
{
    char desc[400];
    gl_auth_excerpt(a, msg, len, 300, desc, sizeof desc);
    return gl_error_set(err, GL_ERR_PROM, "%s: %s %s (%s): HTTP %ld: %s: %s", a->mode,
                        post ? "POST" : "GET", url, what, status, desc[0] ? desc : "(empty)",
                        fix);
}

enum gl_status auth_bad_answer(struct gl_auth *a, const char *what, const char *url,
                               const char *why, struct gl_error *err)
{
    return gl_error_set(err, GL_ERR_PROM, "%s: %s (%s): %s", a->mode, url, what, why);
}


/* A JSON credential answer, or NULL when the body is not JSON. */
enum gl_status auth_post_form(struct gl_auth *a, const char *what, const char *accept,
                              struct gl_buf *form, struct gl_buf *body, long *status,
                              struct gl_error *err)
{
    struct curl_slist *hd = curl_slist_append(NULL, accept);
    enum gl_status rc = auth_service_call(a, what, a->endpoint, form->data, hd, body, status,
                                          err);
    memset(form->data, 0, form->len);
    gl_buf_free(form);
    curl_slist_free_all(hd);
    return rc;
}

void auth_body_free(struct gl_buf *body)
{
    if (body->data)
        memset(body->data, 0, body->len);
    gl_buf_free(body);
}

cJSON *auth_parse_answer(const struct gl_buf *body)
{
    return body->data ? cJSON_ParseWithLength(body->data, body->len) : NULL;
}

/* An OAuth2 access token answer: {"access_token", "expires_in", ...}. */
enum gl_status auth_take_access_token(struct gl_auth *a, const char *what,
                                      const struct gl_buf *body, struct cred *out,
                                      struct gl_error *err)
{
    cJSON *root = auth_parse_answer(body);
    const char *tok = auth_json_str(root, "access_token");
    const char *type = auth_json_str(root, "token_type");
    const cJSON *expires_in = cJSON_GetObjectItemCaseSensitive(root, "expires_in");
    int64_t in = 0;
    enum gl_status rc = GL_OK;
    if (!auth_header_safe(tok) || !parse_expires_in(expires_in, &in) ||
        (type && strcasecmp(type, "Bearer") != 0))
        rc = auth_bad_answer(a, what, a->endpoint,
                             "the answer is not JSON with a Bearer access_token and expires_in "
                             "(seconds)", err);
    else {
        out->token = gl_strdup(tok);
        out->expiry = out->issued + (double)in; /* from before the request: never late */
    }
    cJSON_Delete(root);
    return rc;
}

/* Fresh credentials when the current ones are within their refresh margin
 * (the smaller of REFRESH_MARGIN_S and half their lifetime) of expiry. A
 * refresh that fails while they are still valid is logged and tried again
 * later; once they expired it is an error. Lock held. */
static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static enum gl_status ensure_fresh(struct gl_auth *a, struct gl_error *err)
{
    if (a->reload)
        return a->reload(a, err);
    if (!a->fetch)
        return GL_OK;
    double now = wall_now();
    if (a->have) {
        double life = a->cur.expiry - a->cur.issued;
        double margin = life / 2 < REFRESH_MARGIN_S ? life / 2 : REFRESH_MARGIN_S;
        if (now < a->cur.expiry - margin || (now < a->retry_at && now < a->cur.expiry))
            return GL_OK;
    }
    struct cred fresh;
    memset(&fresh, 0, sizeof fresh);
    fresh.issued = now;
    enum gl_status rc = a->fetch(a, &fresh, err);
    if (!rc && fresh.expiry <= wall_now()) {
        char when[32];
        gl_time_format((int64_t)fresh.expiry, when, sizeof when);
        rc = gl_error_set(err, GL_ERR_PROM,
                          "%s: the credential service issued credentials that expired at %s, "
                          "before now: check this host's clock", a->mode, when);
    }
    if (rc) {
        auth_cred_wipe(&fresh);
        if (a->have && now < a->cur.expiry) {
            gl_log(GL_LOG_WARN, "credential refresh failed, the current credentials stay valid "
                   "for %.0fs: %s", a->cur.expiry - now, err->msg);
            a->retry_at = now + REFRESH_RETRY_S;
            return GL_OK;
        }
        if (a->have)
            gl_error_prefix(err, "the credentials expired and cannot be renewed");
        return rc;
    }
    auth_cred_wipe(&a->cur);
    a->cur = fresh;
    a->have = true;
    a->retry_at = 0;
    auth_keep_secret(a, fresh.token);
    auth_keep_secret(a, fresh.secret);
    auth_keep_secret(a, fresh.session);
    char when[32];
    gl_time_format((int64_t)fresh.expiry, when, sizeof when);
    gl_log(GL_LOG_INFO, "prometheus credentials obtained mode=\"%s\" expires=%s in_s=%.0f",
           a->mode + strlen(a->label) + 1, when, fresh.expiry - now);
    return GL_OK;
}

/* ---- setup ---- */

enum gl_status auth_no_source(struct gl_auth *a, const char *need, struct gl_error *err)
{
    return gl_error_set(err, GL_ERR_CONFIG, "%s: %s", a->mode, need);
}


/* ---- the providers ---- */

/* No credentials configured: requests go as they are. */
static bool none_chosen(const struct gl_prom_cfg *c)
{
    (void)c;
    return true;
}

static enum gl_status none_setup(struct gl_auth *a, const struct gl_prom_cfg *c,
                                 struct gl_error *err)
{
    (void)a, (void)c, (void)err;
    return GL_OK;
}

static bool none_apply(struct gl_auth *a, CURL *h, struct curl_slist **l)
{
    (void)a, (void)h, (void)l;
    return true;
}

static const char *none_hint(struct gl_auth *a, long status, const char *desc, char *buf,
                             size_t n)
{
    (void)a, (void)status, (void)desc, (void)buf, (void)n;
    return "the server wants credentials: prometheus.bearer_token_file, basic_auth_file or "
           "prometheus.auth";
}

static const struct auth_method auth_none = {
    .name = "none", .chosen = none_chosen, .setup = none_setup, .apply = none_apply,
    .hint = none_hint,
};

/* The first row whose config is set is the method: the static files of
 * prometheus first (bearer_token_file, then basic_auth_file, whatever
 * prometheus.auth says), then prometheus.auth's type; none when nothing
 * matches. A new provider is one file and one row here. */
static const struct auth_method *const providers[] = {
    &auth_bearer, &auth_basic, &auth_aws, &auth_gcp, &auth_azure,
};

enum gl_status gl_auth_new(const struct gl_prom_cfg *c, struct gl_auth **out,
                           struct gl_error *err)
{
    return gl_auth_new_named(c, "prometheus.auth", out, err);
}

enum gl_status gl_auth_new_named(const struct gl_prom_cfg *c, const char *label,
                                 struct gl_auth **out, struct gl_error *err)
{
    *out = NULL;
    struct gl_auth *a = gl_xcalloc(1, sizeof *a);
    a->cfg = c;
    a->label = label;
    if (mtx_init(&a->lock, mtx_plain | mtx_recursive) != thrd_success) {
        free(a);
        return gl_error_set(err, GL_ERR_RUNTIME, "cannot create a lock");
    }
    a->locked_init = true;
    for (size_t i = 0; i < NPATTERNS; i++) {
        int ec;
        PCRE2_SIZE off;
        a->redact[i] = pcre2_compile((PCRE2_SPTR)credential_patterns[i], PCRE2_ZERO_TERMINATED,
                                     0, &ec, &off, NULL);
        if (!a->redact[i]) {
            gl_auth_free(a);
            return gl_error_set(err, GL_ERR_RUNTIME, "cannot compile a redaction pattern");
        }
    }
    snprintf(a->mode, sizeof a->mode, "prometheus (no credentials)");
    a->m = &auth_none;
    for (size_t i = 0; i < sizeof providers / sizeof *providers; i++)
        if (providers[i]->chosen(c)) {
            a->m = providers[i];
            break;
        }
    enum gl_status rc = a->m->setup(a, c, err);
    if (rc) {
        gl_auth_free(a);
        return rc;
    }
    a->have = !a->fetch;
    gl_log(GL_LOG_DEBUG, "prometheus authentication mode=\"%s\"", a->mode);
    *out = a;
    return GL_OK;
}

void gl_auth_free(struct gl_auth *a)
{
    if (!a)
        return;
    auth_cred_wipe(&a->cur);
    for (size_t i = 0; i < SECRETS_KEPT; i++)
        auth_wipe_free(a->secrets[i]);
    for (size_t i = 0; i < NPATTERNS; i++)
        pcre2_code_free(a->redact[i]);
    auth_wipe_free(a->env_token);
    auth_wipe_free(a->userpwd);
    GL_FREE_EACH(a->sigv4, a->region, a->endpoint, a->file, a->key_file, a->secret_file,
                 a->session_file, a->role_arn, a->session_name, a->client_id, a->scope, a->user);
    if (a->locked_init)
        mtx_destroy(&a->lock);
    free(a);
}

bool gl_auth_post_form(const struct gl_auth *a)
{
    return a->m->sigv4;
}

void gl_auth_headers_free(struct curl_slist *l)
{
    for (struct curl_slist *s = l; s; s = s->next)
        if (s->data)
            memset(s->data, 0, strlen(s->data));
    curl_slist_free_all(l);
}

void gl_auth_prepare_copy(struct gl_auth *a, CURL *copy)
{
    mtx_lock(&a->lock);
    if (a->m->sigv4)
        curl_easy_setopt(copy, CURLOPT_AWS_SIGV4, a->sigv4);
    mtx_unlock(&a->lock);
}

/* Appends "name: value" to *l; false when out of memory. */
bool auth_add_header(struct curl_slist **l, const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 4;
    char *line = gl_xcalloc(n, 1);
    snprintf(line, n, "%s: %s", name, value);
    struct curl_slist *r = curl_slist_append(*l, line);
    auth_wipe_free(line);
    if (!r)
        return false;
    *l = r;
    return true;
}

enum gl_status gl_auth_apply(struct gl_auth *a, CURL *h, const struct curl_slist *base,
                             struct curl_slist **owned, struct gl_error *err)
{
    mtx_lock(&a->lock);
    enum gl_status rc = ensure_fresh(a, err);
    struct curl_slist *l = NULL;
    bool ok = true;
    for (const struct curl_slist *b = base; !rc && ok && b; b = b->next) {
        struct curl_slist *r = curl_slist_append(l, b->data);
        ok = r != NULL;
        if (r)
            l = r;
    }
    if (!rc && ok)
        ok = a->m->apply(a, h, &l);
    if (!rc && !ok)
        rc = gl_error_set(err, GL_ERR_RUNTIME, "out of memory building request headers");
    if (rc) {
        gl_auth_headers_free(l);
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
        gl_auth_headers_free(*owned);
        *owned = l;
    }
    mtx_unlock(&a->lock);
    return rc;
}

void gl_auth_hint(struct gl_auth *a, long status, const char *desc, char *out, size_t n)
{
    out[0] = '\0';
    if (status != 401 && status != 403)
        return;
    mtx_lock(&a->lock);
    char buf[700];
    const char *fix = a->m->hint(a, status, desc, buf, sizeof buf);
    snprintf(out, n, "%s: %s", a->mode, fix);
    mtx_unlock(&a->lock);
}
