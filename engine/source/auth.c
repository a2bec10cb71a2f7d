/* auth — credential providers of the Prometheus client (libcurl, cJSON, PCRE2). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "auth.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <threads.h>
#include <time.h>

#include "gl_build.h"
#include "timeutil.h"

/* Secret files hold one line: a token or user:password. A larger file is
 * a wrong path (/dev/zero, a log), refused before it fills memory. */
#define SECRET_FILE_MAX 65536
#define CREDENTIALS_FILE_MAX (1L << 20)
/* A credential service's answer is a few KiB. */
#define TOKEN_RESPONSE_MAX (1L << 20)
/* Temporary credentials are renewed this long before they expire (at most
 * half their lifetime): what the AWS SDKs and Google's libraries do. */
#define REFRESH_MARGIN_S 300
/* A refresh that failed while the credentials are still valid is tried
 * again after this long. */
#define REFRESH_RETRY_S 10
/* Secrets kept for redaction: the live ones and the latest expired ones. */
#define SECRETS_KEPT 64

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
#define NPATTERNS (sizeof credential_patterns / sizeof *credential_patterns)

enum provider {
    P_NONE,
    P_BEARER_FILE,  /* prometheus.bearer_token_file */
    P_BASIC_FILE,   /* prometheus.basic_auth_file */
    P_BASIC,        /* auth basic: username + password_file (Grafana Cloud) */
    P_AWS_ENV,      /* AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY [/ AWS_SESSION_TOKEN] */
    P_AWS_PROFILE,  /* shared credentials file */
    P_AWS_FILES,    /* per-block key files (access_key_id_file, ...), read before each request */
    P_AWS_WEB,      /* IRSA: web identity token -> STS AssumeRoleWithWebIdentity */
    P_AWS_POD,      /* EKS Pod Identity: container credentials endpoint */
    P_GCP,          /* GKE metadata server */
    P_AZURE_FED,    /* AKS workload identity: federated token -> client_assertion */
    P_AZURE_SECRET, /* client secret */
};

static bool temporary(enum provider p)
{
    return p == P_AWS_WEB || p == P_AWS_POD || p == P_GCP || p == P_AZURE_FED ||
           p == P_AZURE_SECRET;
}

static bool is_aws(enum provider p)
{
    return p == P_AWS_ENV || p == P_AWS_PROFILE || p == P_AWS_WEB || p == P_AWS_POD ||
           p == P_AWS_FILES;
}

/* One set of credentials. */
struct cred {
    char *token;              /* a bearer token */
    char *key_id, *secret;    /* AWS access key, or basic auth user's password (secret) */
    char *session;            /* AWS session token */
    double issued, expiry;    /* wall-clock seconds (fractional); 0: does not expire */
};

struct gl_auth {
    const struct gl_prom_cfg *cfg; /* borrowed */
    enum provider prov;
    char mode[600];     /* "prometheus.auth aws_sigv4 (IRSA web identity: ...)" */
    const char *label;  /* the config key messages name: "prometheus.auth", "outputs.s3.auth" */
    char *sigv4;        /* "aws:amz:REGION:SERVICE" */
    char *region;
    char *endpoint;     /* STS, container credentials, metadata token or Entra token URL */
    char *file;         /* the token or secret file read at each refresh */
    char file_what[200]; /* what names a->file in messages */
    char *key_file, *secret_file, *session_file; /* P_AWS_FILES */
    char *role_arn, *session_name, *client_id, *scope;
    char *env_token;    /* AWS_CONTAINER_AUTHORIZATION_TOKEN */
    char *user;         /* basic: the username */
    char *userpwd;      /* basic_auth_file: "user:password" */
    struct cred cur;
    bool have;
    double retry_at;
    char *secrets[SECRETS_KEPT];
    size_t next_secret;
    pcre2_code *redact[NPATTERNS];
    mtx_t lock;
    bool locked_init;
};

static void wipe_free(char *s)
{
    if (s) {
        memset(s, 0, strlen(s));
        free(s);
    }
}

static void cred_wipe(struct cred *c)
{
    wipe_free(c->token);
    wipe_free(c->key_id);
    wipe_free(c->secret);
    wipe_free(c->session);
    memset(c, 0, sizeof *c);
}

/* Remembers s for redaction (a copy; the oldest is forgotten). */
static void keep_secret(struct gl_auth *a, const char *s)
{
    if (!s || strlen(s) < 4)
        return;
    for (size_t i = 0; i < SECRETS_KEPT; i++)
        if (a->secrets[i] && strcmp(a->secrets[i], s) == 0)
            return;
    size_t k = a->next_secret++ % SECRETS_KEPT;
    wipe_free(a->secrets[k]);
    a->secrets[k] = gl_strdup(s);
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

/* A value that goes into an HTTP header or a credential: printable ASCII
 * without spaces. */
static bool header_safe(const char *s)
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
static enum gl_status read_secret(const char *what, const char *file, char **out,
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
        wipe_free(tok);
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
static enum gl_status service_call(struct gl_auth *a, const char *what, const char *url,
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

static char *escape(const char *s)
{
    char *e = curl_easy_escape(NULL, s, 0);
    char *copy = gl_strdup(e ? e : "");
    curl_free(e);
    return copy;
}

/* "2026-12-01T10:00:00Z", fractional seconds allowed. */
static bool parse_instant(const char *s, int64_t *out)
{
    char buf[40];
    if (!s || strlen(s) >= sizeof buf)
        return false;
    strcpy(buf, s);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *z = dot + 1;
        while (isdigit((unsigned char)*z))
            z++;
        memmove(dot, z, strlen(z) + 1);
    }
    return gl_time_parse(buf, out);
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

static const char *json_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

enum xml_kind { XML_VALUE, XML_TEXT, XML_ELEMENTS };

/* The content of the one <elem> in xml (NULL when absent or repeated):
 * XML_VALUE refuses entities and markup (credentials never hold them),
 * XML_TEXT takes text as it is, XML_ELEMENTS the elements inside.
 * malloc'd. */
static char *xml_text(const char *xml, const char *elem, enum xml_kind kind)
{
    char pat[160];
    if (kind == XML_VALUE)
        snprintf(pat, sizeof pat, "<%s>\\s*([^<&]*?)\\s*</%s>", elem, elem);
    else if (kind == XML_TEXT)
        snprintf(pat, sizeof pat, "<%s>\\s*([^<]*?)\\s*</%s>", elem, elem);
    else
        snprintf(pat, sizeof pat, "<%s>(.*?)</%s>", elem, elem);
    int ec;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
                                   kind == XML_ELEMENTS ? PCRE2_DOTALL : 0, &ec, &off, NULL);
    if (!re)
        return NULL;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    char *out = NULL;
    size_t len = strlen(xml);
    if (md && pcre2_match(re, (PCRE2_SPTR)xml, len, 0, 0, md, NULL) > 0) {
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t s = ov[2], e = ov[3], after = ov[1];
        if (pcre2_match(re, (PCRE2_SPTR)xml, len, after, 0, md, NULL) < 0) {
            out = gl_xcalloc(e - s + 1, 1);
            memcpy(out, xml + s, e - s);
        }
    }
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return out;
}

/* A lower-case copy of s contains needle (lower case). */
static bool contains_ci(const char *s, const char *needle)
{
    if (!s)
        return false;
    size_t n = strlen(s);
    char *low = gl_xcalloc(n + 1, 1);
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)s[i]);
    bool hit = strstr(low, needle) != NULL;
    free(low);
    return hit;
}

/* The error of a credential service that answered status: the mode, the
 * service, the status, its scrubbed message and what to fix. */
static enum gl_status service_refused(struct gl_auth *a, const char *what, const char *url,
                                      bool post, long status, const char *msg, size_t len,
                                      const char *fix, struct gl_error *err)
{
    char desc[400];
    gl_auth_excerpt(a, msg, len, 300, desc, sizeof desc);
    return gl_error_set(err, GL_ERR_PROM, "%s: %s %s (%s): HTTP %ld: %s: %s", a->mode,
                        post ? "POST" : "GET", url, what, status, desc[0] ? desc : "(empty)",
                        fix);
}

static enum gl_status bad_answer(struct gl_auth *a, const char *what, const char *url,
                                 const char *why, struct gl_error *err)
{
    return gl_error_set(err, GL_ERR_PROM, "%s: %s (%s): %s", a->mode, url, what, why);
}

/* ---- providers ---- */

/* IRSA: the projected service-account token (re-read: the kubelet renews
 * it) for temporary credentials from STS. The answer is small XML (the
 * documented format): the few text elements are taken with PCRE2. */
static enum gl_status fetch_aws_web(struct gl_auth *a, struct cred *out, struct gl_error *err)
{
    char *tok = NULL;
    enum gl_status rc = read_secret("AWS_WEB_IDENTITY_TOKEN_FILE (IRSA web identity token)",
                                    a->file, &tok, err);
    if (rc)
        return rc;
    keep_secret(a, tok);
    char *role = escape(a->role_arn), *name = escape(a->session_name), *etok = escape(tok);
    struct gl_buf form, body;
    gl_buf_init(&form);
    gl_buf_init(&body);
    gl_buf_printf(&form, "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=%s"
                  "&RoleSessionName=%s&WebIdentityToken=%s", role, name, etok);
    wipe_free(etok);
    wipe_free(tok);
    free(role);
    free(name);
    struct curl_slist *hd = curl_slist_append(NULL, "Accept: text/xml");
    long status = 0;
    const char *what = "STS AssumeRoleWithWebIdentity";
    rc = service_call(a, what, a->endpoint, form.data, hd, &body, &status, err);
    memset(form.data, 0, form.len);
    gl_buf_free(&form);
    curl_slist_free_all(hd);
    const char *xml = body.data ? body.data : "";
    if (!rc && status != 200) {
        char *code = xml_text(xml, "Code", XML_TEXT), *msg = xml_text(xml, "Message", XML_TEXT);
        char text[1200];
        snprintf(text, sizeof text, "%s%s%s", code ? code : "", code && msg ? ": " : "",
                 msg ? msg : (code ? "" : xml));
        const char *fix =
            "check AWS_ROLE_ARN and the role's trust policy (the cluster's IAM OIDC provider, "
            "audience sts.amazonaws.com, subject system:serviceaccount:NAMESPACE:NAME)";
        if (code && strcmp(code, "InvalidIdentityToken") == 0)
            fix = "STS does not accept the token: check the cluster's IAM OIDC provider and the "
                  "role's trust policy (audience sts.amazonaws.com, subject "
                  "system:serviceaccount:NAMESPACE:NAME)";
        else if (code && (strcmp(code, "ExpiredTokenException") == 0 ||
                          strcmp(code, "ExpiredToken") == 0))
            fix = "the web identity token has expired: AWS_WEB_IDENTITY_TOKEN_FILE must be the "
                  "projected service-account token that the kubelet renews";
        else if (code && strcmp(code, "AccessDenied") == 0)
            fix = "the role's trust policy does not allow this service account "
                  "(sts:AssumeRoleWithWebIdentity)";
        rc = service_refused(a, what, a->endpoint, true, status, text, strlen(text), fix, err);
        free(code);
        free(msg);
    } else if (!rc) {
        char *creds = NULL;
        if (strstr(xml, "<AssumeRoleWithWebIdentityResult>"))
            creds = xml_text(xml, "Credentials", XML_ELEMENTS);
        if (creds) {
            out->key_id = xml_text(creds, "AccessKeyId", XML_VALUE);
            out->secret = xml_text(creds, "SecretAccessKey", XML_VALUE);
            out->session = xml_text(creds, "SessionToken", XML_VALUE);
            char *exp = xml_text(creds, "Expiration", XML_VALUE);
            int64_t t = 0;
            out->expiry = exp && parse_instant(exp, &t) ? (double)t : -1;
            free(exp);
            wipe_free(creds);
        }
        if (!header_safe(out->key_id) || !header_safe(out->secret) ||
            !header_safe(out->session) || out->expiry < 0)
            rc = bad_answer(a, what, a->endpoint,
                            "the answer lacks AssumeRoleWithWebIdentityResult/Credentials with "
                            "one AccessKeyId, SecretAccessKey, SessionToken and Expiration "
                            "(RFC 3339)", err);
    }
    if (body.data)
        memset(body.data, 0, body.len);
    gl_buf_free(&body);
    return rc;
}

/* A JSON credential answer, or NULL when the body is not JSON. */
static cJSON *parse_answer(const struct gl_buf *body)
{
    return body->data ? cJSON_ParseWithLength(body->data, body->len) : NULL;
}

/* EKS Pod Identity (and ECS): GET the container credentials endpoint with
 * the authorization token (file re-read each time). */
static enum gl_status fetch_aws_pod(struct gl_auth *a, struct cred *out, struct gl_error *err)
{
    char *tok = NULL;
    enum gl_status rc = GL_OK;
    if (a->file)
        rc = read_secret(a->file_what, a->file, &tok, err);
    else if (a->env_token)
        tok = gl_strdup(a->env_token);
    if (rc)
        return rc;
    struct curl_slist *hd = curl_slist_append(NULL, "Accept: application/json");
    if (tok) {
        if (!header_safe(tok)) {
            wipe_free(tok);
            curl_slist_free_all(hd);
            return gl_error_set(err, GL_ERR_CONFIG, "%s: the container authorization token "
                                "holds spaces or control characters", a->mode);
        }
        keep_secret(a, tok);
        size_t n = strlen(tok) + 20;
        char *line = gl_xcalloc(n, 1);
        snprintf(line, n, "Authorization: %s", tok);
        hd = curl_slist_append(hd, line);
        wipe_free(line);
        wipe_free(tok);
    }
    struct gl_buf body;
    gl_buf_init(&body);
    long status = 0;
    const char *what = "container credentials (EKS Pod Identity)";
    rc = service_call(a, what, a->endpoint, NULL, hd, &body, &status, err);
    gl_auth_headers_free(hd);
    if (!rc && status != 200) {
        rc = service_refused(a, what, a->endpoint, false, status, body.data, body.len,
                             "check the pod identity association of this service account "
                             "(eks-pod-identity-agent running, AWS_CONTAINER_CREDENTIALS_FULL_URI "
                             "and AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE injected)", err);
    } else if (!rc) {
        cJSON *root = parse_answer(&body);
        const char *k = json_str(root, "AccessKeyId"), *s = json_str(root, "SecretAccessKey"),
                   *t = json_str(root, "Token"), *e = json_str(root, "Expiration");
        int64_t when = 0;
        if (header_safe(k) && header_safe(s) && header_safe(t) && e && parse_instant(e, &when)) {
            out->expiry = (double)when;
            out->key_id = gl_strdup(k);
            out->secret = gl_strdup(s);
            out->session = gl_strdup(t);
        } else {
            rc = bad_answer(a, what, a->endpoint,
                            "the answer is not JSON with AccessKeyId, SecretAccessKey, Token "
                            "and Expiration (RFC 3339)", err);
        }
        cJSON_Delete(root);
    }
    if (body.data)
        memset(body.data, 0, body.len);
    gl_buf_free(&body);
    return rc;
}

/* An OAuth2 access token answer: {"access_token", "expires_in", ...}. */
static enum gl_status take_access_token(struct gl_auth *a, const char *what,
                                        const struct gl_buf *body, struct cred *out,
                                        struct gl_error *err)
{
    cJSON *root = parse_answer(body);
    const char *tok = json_str(root, "access_token"), *type = json_str(root, "token_type");
    int64_t in = 0;
    enum gl_status rc = GL_OK;
    if (!header_safe(tok) || !parse_expires_in(cJSON_GetObjectItemCaseSensitive(root,
                                                                              "expires_in"),
                                               &in) ||
        (type && strcasecmp(type, "Bearer") != 0))
        rc = bad_answer(a, what, a->endpoint,
                        "the answer is not JSON with a Bearer access_token and expires_in "
                        "(seconds)", err);
    else {
        out->token = gl_strdup(tok);
        out->expiry = out->issued + (double)in; /* from before the request: never late */
    }
    cJSON_Delete(root);
    return rc;
}

/* GKE Workload Identity: the metadata server's access token. */
static enum gl_status fetch_gcp(struct gl_auth *a, struct cred *out, struct gl_error *err)
{
    struct curl_slist *hd = curl_slist_append(NULL, "Metadata-Flavor: Google");
    struct gl_buf body;
    gl_buf_init(&body);
    long status = 0;
    const char *what = "GKE metadata server token";
    enum gl_status rc = service_call(a, what, a->endpoint, NULL, hd, &body, &status, err);
    curl_slist_free_all(hd);
    if (!rc && status != 200)
        rc = service_refused(a, what, a->endpoint, false, status, body.data, body.len,
                             "check that Workload Identity is enabled on the node pool, the "
                             "Kubernetes service account is annotated with "
                             "iam.gke.io/gcp-service-account and prometheus.auth."
                             "service_account names it (or \"default\")", err);
    else if (!rc)
        rc = take_access_token(a, what, &body, out, err);
    if (body.data)
        memset(body.data, 0, body.len);
    gl_buf_free(&body);
    return rc;
}

/* Microsoft Entra client credentials grant: a federated token (AKS
 * workload identity, re-read: the kubelet renews it) as client_assertion,
 * or a client secret. */
static enum gl_status fetch_azure(struct gl_auth *a, struct cred *out, struct gl_error *err)
{
    bool fed = a->prov == P_AZURE_FED;
    char *secret = NULL;
    enum gl_status rc = read_secret(fed ? "AZURE_FEDERATED_TOKEN_FILE (workload identity token)"
                                        : "prometheus.auth.client_secret_file",
                                    a->file, &secret, err);
    if (rc)
        return rc;
    keep_secret(a, secret);
    char *es = escape(secret), *cid = escape(a->client_id), *scope = escape(a->scope);
    wipe_free(secret);
    struct gl_buf form, body;
    gl_buf_init(&form);
    gl_buf_init(&body);
    gl_buf_printf(&form, "grant_type=client_credentials&client_id=%s&scope=%s", cid, scope);
    if (fed)
        gl_buf_printf(&form, "&client_assertion_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3A"
                      "client-assertion-type%%3Ajwt-bearer&client_assertion=%s", es);
    else
        gl_buf_printf(&form, "&client_secret=%s", es);
    wipe_free(es);
    free(cid);
    free(scope);
    struct curl_slist *hd = curl_slist_append(NULL, "Accept: application/json");
    long status = 0;
    const char *what = "Microsoft Entra token endpoint";
    rc = service_call(a, what, a->endpoint, form.data, hd, &body, &status, err);
    memset(form.data, 0, form.len);
    gl_buf_free(&form);
    curl_slist_free_all(hd);
    if (!rc && status != 200) {
        cJSON *root = parse_answer(&body);
        const char *code = json_str(root, "error"), *d = json_str(root, "error_description");
        char text[1200];
        snprintf(text, sizeof text, "%s%s%s", code ? code : "", code && d ? ": " : "",
                 d ? d : (code ? "" : (body.data ? body.data : "")));
        const char *fix = fed ? "check AZURE_CLIENT_ID, AZURE_TENANT_ID and the federated "
                                "identity credential of the app or managed identity"
                              : "check the client id, the tenant id and the client secret";
        if (d && strstr(d, "AADSTS700024"))
            fix = "the federated token has expired: AZURE_FEDERATED_TOKEN_FILE must be the "
                  "projected service-account token that the kubelet renews "
                  "(azure.workload.identity/use: \"true\" on the pod)";
        else if (d && strstr(d, "AADSTS70021"))
            fix = "no federated identity credential matches the token: check its issuer (the "
                  "cluster's OIDC issuer URL) and subject system:serviceaccount:NAMESPACE:NAME";
        else if (d && strstr(d, "AADSTS7000215"))
            fix = "the client secret is wrong or expired: create a new one and update "
                  "prometheus.auth.client_secret_file";
        else if (d && (strstr(d, "AADSTS700016") || strstr(d, "AADSTS90002")))
            fix = "no such application or tenant: check AZURE_CLIENT_ID / "
                  "prometheus.auth.client_id and AZURE_TENANT_ID / prometheus.auth.tenant_id";
        rc = service_refused(a, what, a->endpoint, true, status, text, strlen(text), fix, err);
        cJSON_Delete(root);
    } else if (!rc) {
        rc = take_access_token(a, what, &body, out, err);
    }
    if (body.data)
        memset(body.data, 0, body.len);
    gl_buf_free(&body);
    return rc;
}

static enum gl_status fetch_temporary(struct gl_auth *a, struct cred *out, struct gl_error *err)
{
    switch (a->prov) {
    case P_AWS_WEB:
        return fetch_aws_web(a, out, err);
    case P_AWS_POD:
        return fetch_aws_pod(a, out, err);
    case P_GCP:
        return fetch_gcp(a, out, err);
    default:
        return fetch_azure(a, out, err);
    }
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

static enum gl_status reload_aws_files(struct gl_auth *a, struct gl_error *err);

static enum gl_status ensure_fresh(struct gl_auth *a, struct gl_error *err)
{
    if (a->prov == P_AWS_FILES)
        return reload_aws_files(a, err);
    if (!temporary(a->prov))
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
    enum gl_status rc = fetch_temporary(a, &fresh, err);
    if (!rc && fresh.expiry <= wall_now()) {
        char when[32];
        gl_time_format((int64_t)fresh.expiry, when, sizeof when);
        rc = gl_error_set(err, GL_ERR_PROM,
                          "%s: the credential service issued credentials that expired at %s, "
                          "before now: check this host's clock", a->mode, when);
    }
    if (rc) {
        cred_wipe(&fresh);
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
    cred_wipe(&a->cur);
    a->cur = fresh;
    a->have = true;
    a->retry_at = 0;
    keep_secret(a, fresh.token);
    keep_secret(a, fresh.secret);
    keep_secret(a, fresh.session);
    char when[32];
    gl_time_format((int64_t)fresh.expiry, when, sizeof when);
    gl_log(GL_LOG_INFO, "prometheus credentials obtained mode=\"%s\" expires=%s in_s=%.0f",
           a->mode + strlen(a->label) + 1, when, fresh.expiry - now);
    return GL_OK;
}

/* ---- setup ---- */

static enum gl_status no_source(struct gl_auth *a, const char *need, struct gl_error *err)
{
    return gl_error_set(err, GL_ERR_CONFIG, "%s: %s", a->mode, need);
}

/* The [profile] section of an AWS shared credentials file. */
static enum gl_status load_aws_profile(struct gl_auth *a, const char *file, const char *profile,
                                       bool *found, struct gl_error *err)
{
    *found = false;
    char *text = NULL;
    size_t len = 0;
    FILE *probe = fopen(file, "r");
    if (!probe)
        return GL_OK; /* no file: not this source */
    fclose(probe);
    if (gl_read_file_max(file, CREDENTIALS_FILE_MAX, &text, &len, err))
        return GL_ERR_CONFIG;
    bool in = false;
    int lineno = 0;
    enum gl_status rc = GL_OK;
    for (char *line = text, *next; line && !rc; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        size_t n = strlen(line);
        while (n > 0 && isspace((unsigned char)line[n - 1]))
            line[--n] = '\0';
        while (isspace((unsigned char)*line))
            line++;
        if (!*line || *line == '#' || *line == ';')
            continue;
        if (*line == '[') {
            char *end = strchr(line, ']');
            if (!end)
                continue;
            *end = '\0';
            char *name = line + 1;
            while (isspace((unsigned char)*name))
                name++;
            size_t k = strlen(name);
            while (k > 0 && isspace((unsigned char)name[k - 1]))
                name[--k] = '\0';
            in = strcmp(name, profile) == 0;
            if (in)
                *found = true;
            continue;
        }
        char *eq = strchr(line, '=');
        if (!in || !eq)
            continue;
        *eq = '\0';
        char *key = line, *val = eq + 1;
        size_t k = strlen(key);
        while (k > 0 && isspace((unsigned char)key[k - 1]))
            key[--k] = '\0';
        while (isspace((unsigned char)*val))
            val++;
        char **slot = strcmp(key, "aws_access_key_id") == 0       ? &a->cur.key_id
                      : strcmp(key, "aws_secret_access_key") == 0 ? &a->cur.secret
                      : strcmp(key, "aws_session_token") == 0     ? &a->cur.session
                                                                  : NULL;
        if (!slot)
            continue;
        if (!header_safe(val))
            rc = gl_error_set(err, GL_ERR_CONFIG, "%s:%d: %s of profile %s holds spaces or "
                              "control characters", file, lineno, key, profile);
        else {
            wipe_free(*slot);
            *slot = gl_strdup(val);
        }
    }
    memset(text, 0, len);
    free(text);
    return rc;
}

/* One key file of a P_AWS_FILES block: "<label>.<key>" names it. */
static enum gl_status read_key_file(struct gl_auth *a, const char *key, const char *file,
                                    char **out, struct gl_error *err)
{
    char what[160];
    snprintf(what, sizeof what, "%s.%s", a->label, key);
    enum gl_status rc = read_secret(what, file, out, err);
    if (!rc && !header_safe(*out)) {
        wipe_free(*out);
        *out = NULL;
        rc = gl_error_set(err, GL_ERR_CONFIG, "%s: %s holds spaces or control characters",
                          file, what);
    }
    if (!rc)
        keep_secret(a, *out);
    return rc;
}

/* The per-block key files into c. */
static enum gl_status load_aws_files(struct gl_auth *a, struct cred *c, struct gl_error *err)
{
    enum gl_status rc = read_key_file(a, "access_key_id_file", a->key_file, &c->key_id, err);
    if (!rc)
        rc = read_key_file(a, "secret_access_key_file", a->secret_file, &c->secret, err);
    if (!rc && a->session_file)
        rc = read_key_file(a, "session_token_file", a->session_file, &c->session, err);
    if (rc)
        cred_wipe(c);
    return rc;
}

static bool same_str(const char *x, const char *y)
{
    return (!x && !y) || (x && y && strcmp(x, y) == 0);
}

/* The key files read again before every request (a few bytes): a rotated
 * Secret (Kubernetes swaps a volume's files at once) is used from the next
 * request on. A file that went missing or empty is an error naming its
 * key. Lock held. */
static enum gl_status reload_aws_files(struct gl_auth *a, struct gl_error *err)
{
    struct cred fresh;
    memset(&fresh, 0, sizeof fresh);
    enum gl_status rc = load_aws_files(a, &fresh, err);
    if (rc)
        return rc;
    if (same_str(fresh.key_id, a->cur.key_id) && same_str(fresh.secret, a->cur.secret) &&
        same_str(fresh.session, a->cur.session)) {
        cred_wipe(&fresh);
        return GL_OK;
    }
    gl_log(GL_LOG_INFO, "aws key files changed, signing with the new keys mode=\"%s\"",
           a->mode + strlen(a->label) + 1);
    cred_wipe(&a->cur);
    a->cur = fresh;
    return GL_OK;
}

/* Chooses the AWS source (prometheus.auth.credentials; "auto": the
 * environment's keys, IRSA, EKS Pod Identity, then the shared credentials
 * file) and reads static credentials now. */
static enum gl_status setup_aws(struct gl_auth *a, const struct gl_auth_cfg *ac,
                                struct gl_error *err)
{
    const char *region = ac->region ? ac->region : env("AWS_REGION");
    if (!region)
        region = env("AWS_DEFAULT_REGION");
    snprintf(a->mode, sizeof a->mode, "%s aws_sigv4", a->label);
    if (!region)
        return no_source(a, "no region: set prometheus.auth.region (the workspace's, e.g. "
                            "us-east-1) or AWS_REGION", err);
    for (const char *s = region; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '-')
            return no_source(a, "the region (AWS_REGION) is not a region name", err);
    a->region = gl_strdup(region);
    const char *service = ac->service ? ac->service : "aps";
    size_t n = strlen(region) + strlen(service) + 16;
    a->sigv4 = gl_xcalloc(n, 1);
    snprintf(a->sigv4, n, "aws:amz:%s:%s", region, service);

    const char *key = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
    const char *role = ac->role_arn ? ac->role_arn : env("AWS_ROLE_ARN");
    const char *wfile = ac->web_identity_token_file ? ac->web_identity_token_file
                                                    : env("AWS_WEB_IDENTITY_TOKEN_FILE");
    /* EKS Pod Identity: the block's keys, else the agent's variables */
    const char *full = ac->container_credentials_uri ? ac->container_credentials_uri
                                                     : env("AWS_CONTAINER_CREDENTIALS_FULL_URI"),
               *rel = ac->container_credentials_uri
                          ? NULL
                          : env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    const char *ctok = ac->container_authorization_token_file
                           ? ac->container_authorization_token_file
                           : env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    const char *profile = ac->profile ? ac->profile : env("AWS_PROFILE");
    if (!profile)
        profile = "default";
    char *cfile = NULL;
    if (ac->credentials_file)
        cfile = gl_strdup(ac->credentials_file);
    else if (env("AWS_SHARED_CREDENTIALS_FILE"))
        cfile = gl_strdup(env("AWS_SHARED_CREDENTIALS_FILE"));
    else if (env("HOME"))
        cfile = gl_path_join(env("HOME"), ".aws/credentials");
    enum gl_aws_source src = ac->aws_source;
    if (src == GL_AWS_AUTO)
        src = ac->access_key_id_file ? GL_AWS_FILES
              : key || secret    ? GL_AWS_ENV
              : role || wfile    ? GL_AWS_WEB_IDENTITY
              : full || rel      ? GL_AWS_POD_IDENTITY
                                 : GL_AWS_PROFILE;
    enum gl_status rc = GL_OK;
    switch (src) {
    case GL_AWS_FILES:
        a->prov = P_AWS_FILES;
        snprintf(a->mode, sizeof a->mode, "%s aws_sigv4 (keys from files: access_key_id_file "
                 "%.200s, region %s)", a->label,
                 ac->access_key_id_file ? ac->access_key_id_file : "(none)", region);
        if (!ac->access_key_id_file || !ac->secret_access_key_file)
            rc = no_source(a, "credentials \"files\" needs access_key_id_file and "
                              "secret_access_key_file", err);
        else {
            a->key_file = gl_strdup(ac->access_key_id_file);
            a->secret_file = gl_strdup(ac->secret_access_key_file);
            if (ac->session_token_file)
                a->session_file = gl_strdup(ac->session_token_file);
            rc = load_aws_files(a, &a->cur, err);
        }
        break;
    case GL_AWS_ENV:
        a->prov = P_AWS_ENV;
        snprintf(a->mode, sizeof a->mode, "%s aws_sigv4 (credentials from the "
                 "environment: AWS_ACCESS_KEY_ID, region %s)", a->label, region);
        if (!key || !secret)
            rc = no_source(a, "set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", err);
        else if (!header_safe(key) || !header_safe(secret) ||
                 (env("AWS_SESSION_TOKEN") && !header_safe(env("AWS_SESSION_TOKEN"))))
            rc = no_source(a, "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or AWS_SESSION_TOKEN "
                              "holds spaces or control characters", err);
        else {
            a->cur.key_id = gl_strdup(key);
            a->cur.secret = gl_strdup(secret);
            if (env("AWS_SESSION_TOKEN"))
                a->cur.session = gl_strdup(env("AWS_SESSION_TOKEN"));
        }
        break;
    case GL_AWS_WEB_IDENTITY:
        a->prov = P_AWS_WEB;
        snprintf(a->mode, sizeof a->mode, "%s aws_sigv4 (IRSA web identity: role "
                 "%.200s, token file %.200s, region %s)", a->label, role ? role : "(none)",
                 wfile ? wfile : "(none)", region);
        if (!role || !wfile)
            rc = no_source(a, "web identity needs a role (AWS_ROLE_ARN or prometheus.auth."
                              "role_arn) and a token file (AWS_WEB_IDENTITY_TOKEN_FILE or "
                              "prometheus.auth.web_identity_token_file): on EKS, annotate the "
                              "service account with eks.amazonaws.com/role-arn", err);
        else {
            a->role_arn = gl_strdup(role);
            a->file = gl_strdup(wfile);
            const char *sn = ac->role_session_name ? ac->role_session_name
                                                   : env("AWS_ROLE_SESSION_NAME");
            a->session_name = gl_strdup(sn ? sn : "gpuledger");
            if (ac->sts_endpoint)
                a->endpoint = gl_strdup(ac->sts_endpoint);
            else if (env("AWS_ENDPOINT_URL_STS"))
                a->endpoint = gl_strdup(env("AWS_ENDPOINT_URL_STS"));
            else {
                n = strlen(region) + 40;
                a->endpoint = gl_xcalloc(n, 1);
                snprintf(a->endpoint, n, "https://sts.%s.amazonaws.com", region);
            }
        }
        break;
    case GL_AWS_POD_IDENTITY:
        a->prov = P_AWS_POD;
        if (full)
            a->endpoint = gl_strdup(full);
        else if (rel) {
            n = strlen(rel) + 32;
            a->endpoint = gl_xcalloc(n, 1);
            snprintf(a->endpoint, n, "http://169.254.170.2%s", rel);
        }
        if (ctok) {
            a->file = gl_strdup(ctok);
            if (ac->container_authorization_token_file)
                snprintf(a->file_what, sizeof a->file_what, "%s.container_authorization_"
                         "token_file (EKS Pod Identity token)", a->label);
            else
                snprintf(a->file_what, sizeof a->file_what, "AWS_CONTAINER_AUTHORIZATION_"
                         "TOKEN_FILE (EKS Pod Identity token)");
        } else if (env("AWS_CONTAINER_AUTHORIZATION_TOKEN"))
            a->env_token = gl_strdup(env("AWS_CONTAINER_AUTHORIZATION_TOKEN"));
        keep_secret(a, a->env_token);
        snprintf(a->mode, sizeof a->mode, "%s aws_sigv4 (EKS Pod Identity: %.200s, "
                 "region %s)", a->label, a->endpoint ? a->endpoint : "(no endpoint)", region);
        if (!a->endpoint)
            rc = no_source(a, "EKS Pod Identity needs AWS_CONTAINER_CREDENTIALS_FULL_URI (set "
                              "by the pod identity webhook: create a pod identity association "
                              "for this service account) or container_credentials_uri", err);
        break;
    case GL_AWS_PROFILE:
    case GL_AWS_AUTO: {
        a->prov = P_AWS_PROFILE;
        snprintf(a->mode, sizeof a->mode, "%s aws_sigv4 (profile %.100s of %.300s, "
                 "region %s)", a->label, profile, cfile ? cfile : "(no HOME)", region);
        bool found = false;
        if (cfile)
            rc = load_aws_profile(a, cfile, profile, &found, err);
        if (!rc && !found)
            rc = no_source(a, "no AWS credentials: give access_key_id_file and "
                              "secret_access_key_file, set AWS_ACCESS_KEY_ID and "
                              "AWS_SECRET_ACCESS_KEY, AWS_ROLE_ARN and "
                              "AWS_WEB_IDENTITY_TOKEN_FILE (IRSA), "
                              "AWS_CONTAINER_CREDENTIALS_FULL_URI (EKS Pod Identity), or a "
                              "profile in the shared credentials file "
                              "(prometheus.auth.profile, credentials_file)", err);
        else if (!rc && (!a->cur.key_id || !a->cur.secret))
            rc = no_source(a, "the profile lacks aws_access_key_id or aws_secret_access_key",
                           err);
        break;
    }
    }
    free(cfile);
    keep_secret(a, a->cur.secret);
    keep_secret(a, a->cur.session);
    return rc;
}

static enum gl_status setup_azure(struct gl_auth *a, const struct gl_auth_cfg *ac,
                                  struct gl_error *err)
{
    const char *tenant = ac->tenant_id ? ac->tenant_id : env("AZURE_TENANT_ID");
    const char *client = ac->client_id ? ac->client_id : env("AZURE_CLIENT_ID");
    const char *fed = ac->client_secret_file ? NULL
                      : ac->federated_token_file ? ac->federated_token_file
                                                 : env("AZURE_FEDERATED_TOKEN_FILE");
    const char *authority = ac->authority ? ac->authority : env("AZURE_AUTHORITY_HOST");
    if (!authority)
        authority = "https://login.microsoftonline.com";
    a->prov = fed ? P_AZURE_FED : P_AZURE_SECRET;
    a->file = gl_strdup(fed ? fed : ac->client_secret_file ? ac->client_secret_file : "");
    a->scope = gl_strdup(ac->scope ? ac->scope : "https://prometheus.monitor.azure.com/.default");
    snprintf(a->mode, sizeof a->mode, "prometheus.auth azure (%s: client %.100s, tenant %.100s)",
             fed ? "workload identity" : "client secret", client ? client : "(none)",
             tenant ? tenant : "(none)");
    if (!fed && !ac->client_secret_file)
        return no_source(a, "no credential: AKS workload identity sets "
                            "AZURE_FEDERATED_TOKEN_FILE (label the pod "
                            "azure.workload.identity/use: \"true\"), or give "
                            "prometheus.auth.client_secret_file", err);
    if (!tenant || !client)
        return no_source(a, "needs the tenant and the client id: AZURE_TENANT_ID and "
                            "AZURE_CLIENT_ID (workload identity sets both) or "
                            "prometheus.auth.tenant_id and client_id", err);
    for (const char *s = tenant; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr(".-", *s))
            return no_source(a, "the tenant id is not a GUID or domain name", err);
    a->client_id = gl_strdup(client);
    size_t n = strlen(authority) + strlen(tenant) + 32;
    a->endpoint = gl_xcalloc(n, 1);
    snprintf(a->endpoint, n, "%s", authority);
    size_t k = strlen(a->endpoint);
    while (k > 0 && a->endpoint[k - 1] == '/')
        a->endpoint[--k] = '\0';
    snprintf(a->endpoint + k, n - k, "/%s/oauth2/v2.0/token", tenant);
    return GL_OK;
}

static enum gl_status setup_gcp(struct gl_auth *a, const struct gl_auth_cfg *ac)
{
    const char *host = env("GCE_METADATA_HOST");
    char base[512];
    if (ac->metadata_url)
        snprintf(base, sizeof base, "%s", ac->metadata_url);
    else if (host)
        snprintf(base, sizeof base, "http://%s", host);
    else
        snprintf(base, sizeof base, "http://metadata.google.internal");
    const char *sa = ac->service_account ? ac->service_account : "default";
    size_t n = strlen(base) + strlen(sa) + 80;
    a->endpoint = gl_xcalloc(n, 1);
    snprintf(a->endpoint, n, "%s/computeMetadata/v1/instance/service-accounts/%s/token", base,
             sa);
    a->prov = P_GCP;
    snprintf(a->mode, sizeof a->mode, "prometheus.auth gcp (metadata server %.300s, service "
             "account %.100s)", base, sa);
    return GL_OK;
}

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
    const struct gl_auth_cfg *ac = &c->auth;
    enum gl_status rc = GL_OK;
    snprintf(a->mode, sizeof a->mode, "prometheus (no credentials)");
    if (c->bearer_token_file) {
        a->prov = P_BEARER_FILE;
        snprintf(a->mode, sizeof a->mode, "prometheus.bearer_token_file");
        rc = read_secret("prometheus.bearer_token_file", c->bearer_token_file, &a->cur.token,
                         err);
        if (!rc && !header_safe(a->cur.token))
            rc = gl_error_set(err, GL_ERR_CONFIG, "%s: the bearer token holds spaces or "
                              "control characters", c->bearer_token_file);
        keep_secret(a, a->cur.token);
    } else if (c->basic_auth_file) {
        a->prov = P_BASIC_FILE;
        snprintf(a->mode, sizeof a->mode, "prometheus.basic_auth_file");
        rc = read_secret("prometheus.basic_auth_file", c->basic_auth_file, &a->userpwd, err);
        if (!rc && !strchr(a->userpwd, ':'))
            rc = gl_error_set(err, GL_ERR_CONFIG, "%s: basic_auth_file must hold user:password",
                              c->basic_auth_file);
        keep_secret(a, a->userpwd);
        if (!rc)
            keep_secret(a, strchr(a->userpwd, ':') + 1);
    } else {
        switch (ac->type) {
        case GL_AUTH_NONE:
            break;
        case GL_AUTH_BASIC:
            a->prov = P_BASIC;
            a->user = gl_strdup(ac->username);
            snprintf(a->mode, sizeof a->mode, "prometheus.auth basic (user %.100s, password "
                     "file %.300s)", ac->username, ac->password_file);
            rc = read_secret("prometheus.auth.password_file", ac->password_file,
                             &a->cur.secret, err);
            keep_secret(a, a->cur.secret);
            break;
        case GL_AUTH_AWS_SIGV4:
            rc = setup_aws(a, ac, err);
            break;
        case GL_AUTH_GCP:
            rc = setup_gcp(a, ac);
            break;
        case GL_AUTH_AZURE:
            rc = setup_azure(a, ac, err);
            break;
        }
    }
    if (rc) {
        gl_auth_free(a);
        return rc;
    }
    a->have = !temporary(a->prov);
    gl_log(GL_LOG_DEBUG, "prometheus authentication mode=\"%s\"", a->mode);
    *out = a;
    return GL_OK;
}

void gl_auth_free(struct gl_auth *a)
{
    if (!a)
        return;
    cred_wipe(&a->cur);
    for (size_t i = 0; i < SECRETS_KEPT; i++)
        wipe_free(a->secrets[i]);
    for (size_t i = 0; i < NPATTERNS; i++)
        pcre2_code_free(a->redact[i]);
    free(a->sigv4);
    free(a->region);
    free(a->endpoint);
    free(a->file);
    free(a->key_file);
    free(a->secret_file);
    free(a->session_file);
    free(a->role_arn);
    free(a->session_name);
    free(a->client_id);
    free(a->scope);
    wipe_free(a->env_token);
    free(a->user);
    wipe_free(a->userpwd);
    if (a->locked_init)
        mtx_destroy(&a->lock);
    free(a);
}

bool gl_auth_post_form(const struct gl_auth *a)
{
    return is_aws(a->prov);
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
    if (is_aws(a->prov))
        curl_easy_setopt(copy, CURLOPT_AWS_SIGV4, a->sigv4);
    mtx_unlock(&a->lock);
}

/* Appends "name: value" to *l; false when out of memory. */
static bool add_header(struct curl_slist **l, const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 4;
    char *line = gl_xcalloc(n, 1);
    snprintf(line, n, "%s: %s", name, value);
    struct curl_slist *r = curl_slist_append(*l, line);
    wipe_free(line);
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
    if (!rc && ok) {
        switch (a->prov) {
        case P_NONE:
            break;
        case P_BEARER_FILE:
        case P_GCP:
        case P_AZURE_FED:
        case P_AZURE_SECRET: {
            size_t n = strlen(a->cur.token) + 8;
            char *v = gl_xcalloc(n, 1);
            snprintf(v, n, "Bearer %s", a->cur.token);
            ok = add_header(&l, "Authorization", v);
            wipe_free(v);
            break;
        }
        case P_BASIC_FILE:
            curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
            curl_easy_setopt(h, CURLOPT_USERPWD, a->userpwd);
            break;
        case P_BASIC:
            curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
            curl_easy_setopt(h, CURLOPT_USERNAME, a->user);
            curl_easy_setopt(h, CURLOPT_PASSWORD, a->cur.secret);
            break;
        case P_AWS_ENV:
        case P_AWS_PROFILE:
        case P_AWS_WEB:
        case P_AWS_POD:
        case P_AWS_FILES:
            /* libcurl signs: SignedHeaders are host, x-amz-date and every header
             * of the list (the session token and the form's Content-Type too) */
            curl_easy_setopt(h, CURLOPT_AWS_SIGV4, a->sigv4);
            curl_easy_setopt(h, CURLOPT_USERNAME, a->cur.key_id);
            curl_easy_setopt(h, CURLOPT_PASSWORD, a->cur.secret);
            if (a->cur.session)
                ok = add_header(&l, "X-Amz-Security-Token", a->cur.session);
            break;
        }
    }
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
    const char *fix = NULL;
    char buf[700];
    switch (a->prov) {
    case P_NONE:
        fix = "the server wants credentials: prometheus.bearer_token_file, basic_auth_file or "
              "prometheus.auth";
        break;
    case P_BEARER_FILE:
        fix = status == 401 ? "check that prometheus.bearer_token_file holds a token the server "
                              "accepts (it is read again by every run)"
                            : "the token is accepted but lacks permission to query";
        break;
    case P_BASIC_FILE:
        fix = "check the user:password in prometheus.basic_auth_file";
        break;
    case P_BASIC:
        fix = status == 401 ? "check prometheus.auth.username (Grafana Cloud: the stack's "
                              "Prometheus instance ID) and the access-policy token in "
                              "prometheus.auth.password_file (scope metrics:read, not expired "
                              "or revoked)"
                            : "the token's access policy lacks metrics:read on this stack";
        break;
    case P_GCP:
        fix = status == 401 ? "the metadata server's access token was refused: check that "
                              "prometheus.url is https://monitoring.googleapis.com/v1/projects/"
                              "PROJECT/location/global/prometheus and Workload Identity binds "
                              "this service account"
                            : "grant the Google service account roles/monitoring.viewer on the "
                              "project of prometheus.url";
        break;
    case P_AZURE_FED:
    case P_AZURE_SECRET:
        if (status == 401)
            fix = "the Microsoft Entra token was refused: check prometheus.auth.scope "
                  "(https://prometheus.monitor.azure.com/.default) and that prometheus.url is "
                  "the Azure Monitor workspace's query endpoint";
        else {
            snprintf(buf, sizeof buf, "assign the role Monitoring Data Reader on the Azure "
                     "Monitor workspace to client %.100s", a->client_id ? a->client_id : "");
            fix = buf;
        }
        break;
    case P_AWS_ENV:
    case P_AWS_PROFILE:
    case P_AWS_WEB:
    case P_AWS_POD:
    case P_AWS_FILES: {
        const char *renew = a->prov == P_AWS_FILES
                                ? "update the Secret behind session_token_file (the key files "
                                  "are read again before every request)"
                            : a->prov == P_AWS_ENV
                                ? "AWS_SESSION_TOKEN from the environment cannot be renewed "
                                  "here: renew it, or use IRSA or EKS Pod Identity"
                            : a->prov == P_AWS_PROFILE
                                ? "renew the profile's session token"
                                : "they are renewed before expiry: check this host's clock";
        if (contains_ci(desc, "signature") && (contains_ci(desc, "not match") ||
                                               contains_ci(desc, "signaturedoesnotmatch")))
            snprintf(buf, sizeof buf, "the request signature was refused: check that the "
                     "secret access key belongs to the access key id and that the region (%s) "
                     "is the workspace's", a->region);
        else if (contains_ci(desc, "expired"))
            snprintf(buf, sizeof buf, "the credentials have expired: %s", renew);
        else if (contains_ci(desc, "security token included in the request is invalid") ||
                 contains_ci(desc, "invalidclienttokenid") ||
                 contains_ci(desc, "unrecognizedclient"))
            snprintf(buf, sizeof buf, "AWS does not know the access key id or session token");
        else if (contains_ci(desc, "not authorized") || contains_ci(desc, "accessdenied"))
            snprintf(buf, sizeof buf, "the identity lacks aps:QueryMetrics on this workspace: "
                     "add it to the IAM policy of the role or user");
        else
            snprintf(buf, sizeof buf, "check the credentials, the region (%s), the signing "
                     "service (prometheus.auth.service, aps) and the IAM policy "
                     "(aps:QueryMetrics)", a->region);
        fix = buf;
        break;
    }
    }
    snprintf(out, n, "%s: %s", a->mode, fix);
    mtx_unlock(&a->lock);
}
