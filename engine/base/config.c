/* config — loading and validating the JSON configuration. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "config.h"

#include "pattern.h"
#include "preset.h"
#include "work_preset.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <strings.h>
#include <unistd.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gl_build.h"
#include "money.h"
#include "timeutil.h"
#include "util.h"

/* Context of one load: the file name for messages. */
struct cfg_ctx {
    const char *file;
    struct gl_error *err;
};

static enum gl_status cfg_fail(struct cfg_ctx *x, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum gl_status cfg_fail(struct cfg_ctx *x, const char *path, const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return gl_error_set(x->err, GL_ERR_CONFIG, "%s: %s: %s", x->file, path, what);
}

/* Every key of obj must be in allowed (NULL-terminated). */
static enum gl_status check_keys(struct cfg_ctx *x, const cJSON *obj, const char *path,
                                 const char *const *allowed)
{
    if (!cJSON_IsObject(obj))
        return cfg_fail(x, path, "expected an object");
    for (const cJSON *it = obj->child; it; it = it->next) {
        for (const cJSON *prev = obj->child; prev != it; prev = prev->next)
            if (strcmp(prev->string, it->string) == 0)
                return cfg_fail(x, path[0] ? path : "(top level)", "duplicate key \"%s\"",
                                it->string);
        bool ok = false;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(it->string, *a) == 0)
                ok = true;
        if (!ok) {
            char list[512] = "";
            for (const char *const *a = allowed; *a; a++) {
                strncat(list, *a, sizeof list - strlen(list) - 3);
                if (a[1])
                    strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            return cfg_fail(x, path[0] ? path : "(top level)",
                            "unknown key \"%s\" (expected one of: %s)", it->string, list);
        }
    }
    return GL_OK;
}

static void join_path(char *buf, size_t n, const char *base, const char *key)
{
    if (base[0])
        snprintf(buf, n, "%s.%s", base, key);
    else
        snprintf(buf, n, "%s", key);
}

/* Optional string: NULL/absent keeps *out; JSON null sets NULL. */
static enum gl_status get_str(struct cfg_ctx *x, const cJSON *obj, const char *base,
                              const char *key, bool required, char **out)
{
    char path[256];
    join_path(path, sizeof path, base, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required)
            return cfg_fail(x, path, "required key is missing");
        return GL_OK;
    }
    if (cJSON_IsNull(v) && !required) {
        free(*out);
        *out = NULL;
        return GL_OK;
    }
    if (!cJSON_IsString(v))
        return cfg_fail(x, path, "expected a string");
    if (required && !v->valuestring[0])
        return cfg_fail(x, path, "must not be empty");
    free(*out);
    *out = gl_strdup(v->valuestring);
    return GL_OK;
}

static enum gl_status get_int(struct cfg_ctx *x, const cJSON *obj, const char *base,
                              const char *key, long min, long max, long *out)
{
    char path[256];
    join_path(path, sizeof path, base, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return GL_OK;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= -1e15 && v->valuedouble <= 1e15) ||
        v->valuedouble != (double)(long)v->valuedouble)
        return cfg_fail(x, path, "expected a whole number");
    long n = (long)v->valuedouble;
    if (n < min || n > max)
        return cfg_fail(x, path, "expected a number from %ld to %ld, got %ld", min, max, n);
    *out = n;
    return GL_OK;
}

static enum gl_status get_enum(struct cfg_ctx *x, const cJSON *obj, const char *base,
                               const char *key, const char *const *names, int *out)
{
    char *s = NULL;
    enum gl_status rc = get_str(x, obj, base, key, false, &s);
    if (rc != GL_OK || !s)
        return rc;
    for (int i = 0; names[i]; i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            free(s);
            return GL_OK;
        }
    }
    char path[256], list[256] = "";
    join_path(path, sizeof path, base, key);
    for (int i = 0; names[i]; i++) {
        strncat(list, names[i], sizeof list - strlen(list) - 3);
        if (names[i + 1])
            strncat(list, ", ", sizeof list - strlen(list) - 1);
    }
    rc = cfg_fail(x, path, "\"%s\" is not one of: %s", s, list);
    free(s);
    return rc;
}

bool gl_prom_compressed(const struct gl_prom_cfg *c)
{
    return c->compression == GL_COMPRESS_ON ||
           (c->compression == GL_COMPRESS_AUTO && c->url && strncmp(c->url, "https://", 8) == 0);
}

static char *resolve(const struct gl_config *c, char *p)
{
    if (!p)
        return NULL;
    char *r = gl_path_join(c->dir, p);
    free(p);
    return r;
}

char *gl_ksm_label_name(const char *key)
{
    if (strncmp(key, "label_", 6) == 0)
        return gl_strdup(key);
    size_t n = strlen(key);
    char *out = gl_xcalloc(6 + 2 * n + 1, 1);
    strcpy(out, "label_");
    size_t j = 6;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)key[i];
        if (isupper(ch)) {
            /* camelCase → camel_case, as kube-state-metrics does */
            if (i > 0 && (islower((unsigned char)key[i - 1]) || isdigit((unsigned char)key[i - 1])))
                out[j++] = '_';
            out[j++] = (char)tolower(ch);
        } else if (isalnum(ch) || ch == '_') {
            out[j++] = (char)ch;
        } else {
            out[j++] = '_';
        }
    }
    out[j] = '\0';
    return out;
}

bool gl_is_ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            return false;
    return true;
}

/* ---- prometheus.max_response_bytes, request_deadline_seconds,
 * accept_warnings (README "Wire integrity") ---- */

#define PROM_MAX_RESPONSE_DEFAULT (64L << 20)
#define PROM_DEADLINE_DEFAULT 300L

static void prom_wire_defaults(struct gl_prom_cfg *p)
{
    p->max_response_bytes = PROM_MAX_RESPONSE_DEFAULT;
    p->request_deadline_s = 0; /* set by prom_wire_load */
}

static void prom_wire_free(struct gl_prom_cfg *p)
{
    for (size_t i = 0; i < p->naccept_warnings; i++) {
        free(p->accept_warnings[i].source);
        pcre2_code_free(p->accept_warnings[i].code);
    }
    free(p->accept_warnings);
    p->accept_warnings = NULL;
    p->naccept_warnings = 0;
}

/* After *dst = *src: dst gets its own patterns. */
static void prom_wire_copy(struct gl_prom_cfg *dst, const struct gl_prom_cfg *src)
{
    dst->accept_warnings = gl_xcalloc(src->naccept_warnings, sizeof *dst->accept_warnings);
    for (size_t i = 0; i < src->naccept_warnings; i++) {
        dst->accept_warnings[i].source = gl_strdup(src->accept_warnings[i].source);
        dst->accept_warnings[i].code = pcre2_code_copy(src->accept_warnings[i].code);
        if (!dst->accept_warnings[i].code)
            abort(); /* out of memory, as gl_strdup */
    }
}

static enum gl_status prom_wire_load(struct cfg_ctx *x, const cJSON *o, const char *base,
                                     struct gl_prom_cfg *p)
{
    enum gl_status rc;
    long max = (long)p->max_response_bytes, deadline = 0;
    if ((rc = get_int(x, o, base, "max_response_bytes", 1024, 1L << 40, &max)) ||
        (rc = get_int(x, o, base, "request_deadline_seconds", 1, 86400, &deadline)))
        return rc;
    p->max_response_bytes = max;
    static const char *const compression[] = {"auto", "on", "off", NULL};
    if ((rc = get_enum(x, o, base, "compression", compression, &p->compression)))
        return rc;
    /* default: 300 s, or what the retries may take by their timeouts */
    long attempts = (long)p->retries + 1;
    p->request_deadline_s = deadline ? deadline
                            : attempts * p->timeout_s > PROM_DEADLINE_DEFAULT
                                ? attempts * p->timeout_s
                                : PROM_DEADLINE_DEFAULT;
    char path[256];
    snprintf(path, sizeof path, "%s.accept_warnings", base);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "accept_warnings");
    if (!a || cJSON_IsNull(a))
        return GL_OK;
    if (!cJSON_IsArray(a))
        return cfg_fail(x, path, "expected an array of PCRE2 patterns");
    prom_wire_free(p);
    p->accept_warnings = gl_xcalloc((size_t)cJSON_GetArraySize(a), sizeof *p->accept_warnings);
    size_t i = 0;
    for (const cJSON *it = a->child; it; it = it->next, i++) {
        char ip[300];
        snprintf(ip, sizeof ip, "%s[%zu]", path, i);
        if (!cJSON_IsString(it) || !it->valuestring[0])
            return cfg_fail(x, ip, "expected a non-empty string (a PCRE2 pattern)");
        char why[256];
        size_t off;
        pcre2_code *code = gl_pattern_compile(it->valuestring, why, sizeof why, &off);
        if (!code)
            return cfg_fail(x, ip, "\"%s\": %s at offset %zu", it->valuestring, why, off);
        p->accept_warnings[p->naccept_warnings].source = gl_strdup(it->valuestring);
        p->accept_warnings[p->naccept_warnings].code = code;
        p->naccept_warnings++;
    }
    return GL_OK;
}

/* ---- prometheus.auth (README "Managed Prometheus") ---- */

/* The string fields of an auth config, for copy and free. */
#define AUTH_NSTR 23
static void auth_strings(struct gl_auth_cfg *a, char **out[AUTH_NSTR])
{
    char **all[AUTH_NSTR] = {&a->region, &a->service, &a->profile, &a->credentials_file,
                             &a->role_arn, &a->web_identity_token_file, &a->role_session_name,
                             &a->sts_endpoint, &a->metadata_url, &a->service_account,
                             &a->tenant_id, &a->client_id, &a->federated_token_file,
                             &a->client_secret_file, &a->authority, &a->scope, &a->username,
                             &a->password_file, &a->access_key_id_file,
                             &a->secret_access_key_file, &a->session_token_file,
                             &a->container_credentials_uri,
                             &a->container_authorization_token_file};
    memcpy(out, all, sizeof all);
}

static void prom_auth_free(struct gl_prom_cfg *p)
{
    char **s[AUTH_NSTR];
    auth_strings(&p->auth, s);
    for (size_t i = 0; i < AUTH_NSTR; i++) {
        free(*s[i]);
        *s[i] = NULL;
    }
}

/* After *dst = *src: dst gets its own strings. */
static void prom_auth_copy(struct gl_prom_cfg *dst)
{
    char **s[AUTH_NSTR];
    auth_strings(&dst->auth, s);
    for (size_t i = 0; i < AUTH_NSTR; i++)
        if (*s[i])
            *s[i] = gl_strdup(*s[i]);
}

/* An endpoint of a credential service: http(s), no credentials in it. */
static enum gl_status auth_url(struct cfg_ctx *x, const char *base, const char *key, char *url)
{
    char path[300];
    snprintf(path, sizeof path, "%s.%s", base, key);
    if (!url)
        return GL_OK;
    if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
        return cfg_fail(x, path, "expected an http:// or https:// URL, got \"%s\"", url);
    if (strchr(url, '@') || strpbrk(url, " \r\n"))
        return cfg_fail(x, path, "not a plain URL (no credentials, no spaces)");
    size_t n = strlen(url);
    while (n > 0 && url[n - 1] == '/')
        url[--n] = '\0';
    return GL_OK;
}

/* A name that goes into a signing scope or a URL path: [A-Za-z0-9._-]. */
static enum gl_status auth_name(struct cfg_ctx *x, const char *base, const char *key,
                                const char *v)
{
    if (!v)
        return GL_OK;
    bool ok = v[0] != '\0';
    for (const char *s = v; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
            ok = false;
    if (ok)
        return GL_OK;
    char path[300];
    snprintf(path, sizeof path, "%s.%s", base, key);
    return cfg_fail(x, path, "\"%s\" is not a plain name ([A-Za-z0-9._-])", v);
}

/* The per-block key files and the Pod Identity keys of an aws_sigv4 block
 * agree with its "credentials" (README "Per-block AWS key files"). */
static enum gl_status aws_sources_check(struct cfg_ctx *x, const char *base,
                                        const struct gl_auth_cfg *a)
{
    static const char *const src_names[] = {"auto", "env", "web_identity", "pod_identity",
                                            "profile", "files"};
    bool files = a->access_key_id_file || a->secret_access_key_file || a->session_token_file;
    bool pod = a->container_credentials_uri || a->container_authorization_token_file;
    char path[300];
    if (files) {
        if (a->aws_source != GL_AWS_AUTO && a->aws_source != GL_AWS_FILES)
            return cfg_fail(x, base, "access_key_id_file, secret_access_key_file and "
                            "session_token_file are credentials \"files\", not \"%s\"",
                            src_names[a->aws_source]);
        if (!a->access_key_id_file || !a->secret_access_key_file) {
            snprintf(path, sizeof path, "%s.%s", base,
                     a->access_key_id_file ? "secret_access_key_file" : "access_key_id_file");
            return cfg_fail(x, path, "missing: per-block keys need both access_key_id_file "
                            "and secret_access_key_file (session_token_file is optional)");
        }
        if (pod)
            return cfg_fail(x, base, "the key files exclude container_credentials_uri and "
                            "container_authorization_token_file (EKS Pod Identity)");
    } else if (a->aws_source == GL_AWS_FILES) {
        snprintf(path, sizeof path, "%s.access_key_id_file", base);
        return cfg_fail(x, path, "missing: credentials \"files\" needs access_key_id_file and "
                        "secret_access_key_file");
    }
    if (pod && a->aws_source != GL_AWS_AUTO && a->aws_source != GL_AWS_POD_IDENTITY)
        return cfg_fail(x, base, "container_credentials_uri and "
                        "container_authorization_token_file are credentials \"pod_identity\", "
                        "not \"%s\"", src_names[a->aws_source]);
    return GL_OK;
}

/* prometheus.auth: {"type": ..., the type's keys}. */
static enum gl_status prom_auth_load(struct cfg_ctx *x, struct gl_config *c, const cJSON *o,
                                     const char *pbase, struct gl_prom_cfg *p)
{
    const cJSON *ao = cJSON_GetObjectItemCaseSensitive(o, "auth");
    if (!ao || cJSON_IsNull(ao))
        return GL_OK;
    char base[256];
    snprintf(base, sizeof base, "%s.auth", pbase);
    static const char *const types[] = {"none", "aws_sigv4", "gcp", "azure", "basic", NULL};
    static const char *const aws_keys[] = {"type", "region", "service", "credentials", "profile",
                                           "credentials_file", "role_arn",
                                           "web_identity_token_file", "role_session_name",
                                           "sts_endpoint", "access_key_id_file",
                                           "secret_access_key_file", "session_token_file",
                                           "container_credentials_uri",
                                           "container_authorization_token_file", NULL};
    static const char *const gcp_keys[] = {"type", "metadata_url", "service_account", NULL};
    static const char *const azure_keys[] = {"type", "tenant_id", "client_id",
                                             "federated_token_file", "client_secret_file",
                                             "authority", "scope", NULL};
    static const char *const basic_keys[] = {"type", "username", "password_file", NULL};
    static const char *const none_keys[] = {"type", NULL};
    static const char *const sources[] = {"auto", "env", "web_identity", "pod_identity",
                                          "profile", "files", NULL};
    static const char *const *const keys_of[] = {none_keys, aws_keys, gcp_keys, azure_keys,
                                                 basic_keys};
    struct gl_auth_cfg *a = &p->auth;
    enum gl_status rc;
    if (!cJSON_IsObject(ao))
        return cfg_fail(x, base, "expected an object with \"type\": one of none, aws_sigv4, "
                                 "gcp, azure, basic");
    if (!cJSON_GetObjectItemCaseSensitive(ao, "type"))
        return cfg_fail(x, base, "needs \"type\": one of none, aws_sigv4, gcp, azure, basic");
    int type = 0, source = 0;
    if ((rc = get_enum(x, ao, base, "type", types, &type)) ||
        (rc = check_keys(x, ao, base, keys_of[type])))
        return rc;
    a->type = (enum gl_auth_type)type;
    if (a->type != GL_AUTH_NONE && (p->bearer_token_file || p->basic_auth_file))
        return cfg_fail(x, base, "excludes %s.bearer_token_file and %s.basic_auth_file", pbase,
                        pbase);
    const char *const *k = keys_of[type];
    char **s[AUTH_NSTR];
    auth_strings(a, s);
    /* every string key of the type; "credentials" is an enum */
    static const char *const names[AUTH_NSTR] = {
        "region", "service", "profile", "credentials_file", "role_arn",
        "web_identity_token_file", "role_session_name", "sts_endpoint", "metadata_url",
        "service_account", "tenant_id", "client_id", "federated_token_file",
        "client_secret_file", "authority", "scope", "username", "password_file",
        "access_key_id_file", "secret_access_key_file", "session_token_file",
        "container_credentials_uri", "container_authorization_token_file"};
    for (size_t i = 0; i < AUTH_NSTR; i++)
        for (const char *const *kk = k; *kk; kk++)
            if (strcmp(*kk, names[i]) == 0 &&
                (rc = get_str(x, ao, base, names[i], false, s[i])))
                return rc;
    for (size_t i = 0; i < AUTH_NSTR; i++) {
        if (*s[i] && !(*s[i])[0]) {
            char path[300];
            snprintf(path, sizeof path, "%s.%s", base, names[i]);
            return cfg_fail(x, path, "must not be empty (leave it out for the default)");
        }
    }
    a->credentials_file = resolve(c, a->credentials_file);
    a->web_identity_token_file = resolve(c, a->web_identity_token_file);
    a->federated_token_file = resolve(c, a->federated_token_file);
    a->client_secret_file = resolve(c, a->client_secret_file);
    a->password_file = resolve(c, a->password_file);
    a->access_key_id_file = resolve(c, a->access_key_id_file);
    a->secret_access_key_file = resolve(c, a->secret_access_key_file);
    a->session_token_file = resolve(c, a->session_token_file);
    a->container_authorization_token_file = resolve(c, a->container_authorization_token_file);
    switch (a->type) {
    case GL_AUTH_AWS_SIGV4:
        if ((rc = get_enum(x, ao, base, "credentials", sources, &source)) ||
            (rc = auth_name(x, base, "region", a->region)) ||
            (rc = auth_name(x, base, "service", a->service)) ||
            (rc = auth_url(x, base, "sts_endpoint", a->sts_endpoint)) ||
            (rc = auth_url(x, base, "container_credentials_uri",
                           a->container_credentials_uri)))
            return rc;
        a->aws_source = (enum gl_aws_source)source;
        if ((rc = aws_sources_check(x, base, a)))
            return rc;
        break;
    case GL_AUTH_GCP:
        if ((rc = auth_url(x, base, "metadata_url", a->metadata_url)) ||
            (rc = auth_name(x, base, "service_account", a->service_account)))
            return rc;
        break;
    case GL_AUTH_AZURE:
        if ((rc = auth_url(x, base, "authority", a->authority)) ||
            (rc = auth_name(x, base, "tenant_id", a->tenant_id)))
            return rc;
        if (a->federated_token_file && a->client_secret_file)
            return cfg_fail(x, base, "federated_token_file (workload identity) and "
                                     "client_secret_file exclude each other");
        if (a->scope && strpbrk(a->scope, "\r\n"))
            return cfg_fail(x, base, "scope holds one line");
        break;
    case GL_AUTH_BASIC:
        if (!a->username || !a->password_file)
            return cfg_fail(x, base, "type basic needs \"username\" and \"password_file\"");
        if (strpbrk(a->username, ":\r\n"))
            return cfg_fail(x, base, "username must not hold a colon or a line break");
        break;
    case GL_AUTH_NONE:
        break;
    }
    return GL_OK;
}

static void prom_defaults(struct gl_prom_cfg *p)
{
    p->timeout_s = 60;
    p->retries = 3;
    p->max_in_flight = 4;
    prom_wire_defaults(p);
}

static void prom_copy(struct gl_prom_cfg *dst, const struct gl_prom_cfg *src)
{
    *dst = *src;
    char **strs[] = {&dst->url, &dst->bearer_token_file, &dst->basic_auth_file, &dst->ca_file,
                     &dst->client_cert_file, &dst->client_key_file};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        if (*strs[i])
            *strs[i] = gl_strdup(*strs[i]);
    dst->headers = gl_xcalloc(src->nheaders, sizeof *dst->headers);
    for (size_t i = 0; i < src->nheaders; i++) {
        dst->headers[i].name = gl_strdup(src->headers[i].name);
        dst->headers[i].value = gl_strdup(src->headers[i].value);
    }
    prom_wire_copy(dst, src);
    prom_auth_copy(dst);
}

static void prom_free(struct gl_prom_cfg *p)
{
    GL_FREE_EACH(p->url, p->bearer_token_file, p->basic_auth_file, p->ca_file,
                 p->client_cert_file, p->client_key_file);
    for (size_t i = 0; i < p->nheaders; i++)
        GL_FREE_EACH(p->headers[i].name, p->headers[i].value);
    free(p->headers);
    prom_wire_free(p);
    prom_auth_free(p);
}

static enum gl_status load_prometheus(struct cfg_ctx *x, struct gl_config *c, const cJSON *o,
                                      const char *base, struct gl_prom_cfg *p)
{
    static const char *const keys[] = {"url", "bearer_token_file", "basic_auth_file", "headers",
                                       "ca_file", "client_cert_file", "client_key_file",
                                       "timeout_seconds", "retries", "max_in_flight",
                                       "max_response_bytes", "request_deadline_seconds",
                                       "accept_warnings", "compression", "auth", NULL};
    enum gl_status rc;
    char path[256];
    if ((rc = check_keys(x, o, base, keys)))
        return rc;
    if ((rc = get_str(x, o, base, "url", true, &p->url)))
        return rc;
    snprintf(path, sizeof path, "%s.url", base);
    if (strncmp(p->url, "http://", 7) != 0 && strncmp(p->url, "https://", 8) != 0)
        return cfg_fail(x, path, "expected an http:// or https:// URL, got \"%s\"", p->url);
    if (strchr(p->url, '@'))
        return cfg_fail(x, path, "put credentials in basic_auth_file, not in the URL");
    size_t ul = strlen(p->url);
    while (ul > 0 && p->url[ul - 1] == '/')
        p->url[--ul] = '\0';
    if ((rc = get_str(x, o, base, "bearer_token_file", false, &p->bearer_token_file)) ||
        (rc = get_str(x, o, base, "basic_auth_file", false, &p->basic_auth_file)) ||
        (rc = get_str(x, o, base, "ca_file", false, &p->ca_file)) ||
        (rc = get_str(x, o, base, "client_cert_file", false, &p->client_cert_file)) ||
        (rc = get_str(x, o, base, "client_key_file", false, &p->client_key_file)))
        return rc;
    p->bearer_token_file = resolve(c, p->bearer_token_file);
    p->basic_auth_file = resolve(c, p->basic_auth_file);
    p->ca_file = resolve(c, p->ca_file);
    p->client_cert_file = resolve(c, p->client_cert_file);
    p->client_key_file = resolve(c, p->client_key_file);
    if (p->bearer_token_file && p->basic_auth_file)
        return cfg_fail(x, base, "bearer_token_file and basic_auth_file exclude each other");
    if (!p->client_cert_file != !p->client_key_file)
        return cfg_fail(x, base, "client_cert_file and client_key_file go together");
    if ((rc = get_int(x, o, base, "timeout_seconds", 1, 3600, &p->timeout_s)))
        return rc;
    long retries = p->retries, inflight = p->max_in_flight;
    if ((rc = get_int(x, o, base, "retries", 0, 20, &retries)) ||
        (rc = get_int(x, o, base, "max_in_flight", 1, 32, &inflight)))
        return rc;
    p->retries = (int)retries;
    p->max_in_flight = (int)inflight;
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "headers");
    snprintf(path, sizeof path, "%s.headers", base);
    if (h && !cJSON_IsNull(h)) {
        if (!cJSON_IsObject(h))
            return cfg_fail(x, path, "expected an object of name: value strings");
        size_t n = (size_t)cJSON_GetArraySize(h);
        p->headers = gl_xcalloc(n, sizeof *p->headers);
        for (const cJSON *it = h->child; it; it = it->next) {
            char hp[512];
            snprintf(hp, sizeof hp, "%s.%s", path, it->string);
            if (!cJSON_IsString(it))
                return cfg_fail(x, hp, "expected a string");
            if (strpbrk(it->string, ":\r\n ") || !it->string[0] ||
                strpbrk(it->valuestring, "\r\n"))
                return cfg_fail(x, hp, "not a valid HTTP header");
            if (strcasecmp(it->string, "Authorization") == 0)
                return cfg_fail(x, hp, "put credentials in bearer_token_file or basic_auth_file, "
                                       "not in headers");
            p->headers[p->nheaders].name = gl_strdup(it->string);
            p->headers[p->nheaders].value = gl_strdup(it->valuestring);
            p->nheaders++;
        }
    }
    if ((rc = prom_auth_load(x, c, o, base, p)))
        return rc;
    return prom_wire_load(x, o, base, p);
}

/* "clusters": [{"name", "selector", "prometheus"}]; a cluster without its
 * own prometheus uses the top-level one (a shared backend). */
static enum gl_status load_clusters(struct cfg_ctx *x, struct gl_config *c, const cJSON *arr,
                                    const struct gl_prom_cfg *shared)
{
    static const char *const keys[] = {"name", "selector", "prometheus", NULL};
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0)
        return cfg_fail(x, "clusters", "expected a non-empty array of clusters");
    c->clusters = gl_xcalloc((size_t)cJSON_GetArraySize(arr), sizeof *c->clusters);
    size_t i = 0;
    enum gl_status rc;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        char path[64], ppath[80];
        snprintf(path, sizeof path, "clusters[%zu]", i);
        snprintf(ppath, sizeof ppath, "clusters[%zu].prometheus", i);
        struct gl_cluster *cl = &c->clusters[i];
        c->nclusters = i + 1;
        prom_defaults(&cl->prom);
        if ((rc = check_keys(x, it, path, keys)) ||
            (rc = get_str(x, it, path, "name", true, &cl->name)) ||
            (rc = get_str(x, it, path, "selector", false, &cl->selector)))
            return rc;
        if (!gl_is_ascii(cl->name) || strpbrk(cl->name, "/\\"))
            return cfg_fail(x, path, "cluster names are printable ASCII without slashes");
        for (size_t j = 0; j < i; j++)
            if (strcmp(c->clusters[j].name, cl->name) == 0)
                return cfg_fail(x, path, "cluster \"%s\" is listed twice", cl->name);
        if (!cl->selector)
            cl->selector = gl_strdup("");
        if (strpbrk(cl->selector, "{}\n"))
            return cfg_fail(x, path, "selector holds label matchers only, e.g. cluster=\"eu\"");
        const cJSON *po = cJSON_GetObjectItemCaseSensitive(it, "prometheus");
        if (po) {
            if ((rc = load_prometheus(x, c, po, ppath, &cl->prom)))
                return rc;
        } else if (shared) {
            prom_copy(&cl->prom, shared);
        } else {
            return cfg_fail(x, path, "needs \"prometheus\" (or a top-level \"prometheus\")");
        }
    }
    return GL_OK;
}

static enum gl_status load_collection(struct cfg_ctx *x, struct gl_config *c, const cJSON *o)
{
    static const char *const keys[] = {"step_seconds", "chunk_hours", "identity_labels",
                                       "hostname_label", "queries_dir", "shrink_tolerance",
                                       "mode", "max_samples_in_memory", NULL};
    static const char *const modes[] = {"auto", "exported", "plain", NULL};
    static const char *const cmodes[] = {"raw", "server", NULL};
    int cmode = c->server_mode ? 1 : 0;
    enum gl_status rc;
    if ((rc = check_keys(x, o, "collection", keys)))
        return rc;
    long step = c->step, chunk = c->chunk_hours, slots = (long)c->max_samples_in_memory;
    int mode = (int)c->identity;
    if ((rc = get_int(x, o, "collection", "step_seconds", 1, 3600, &step)) ||
        (rc = get_int(x, o, "collection", "max_samples_in_memory", 100000, 1L << 36, &slots)) ||
        (rc = get_int(x, o, "collection", "chunk_hours", 1, 24 * 31, &chunk)) ||
        (rc = get_enum(x, o, "collection", "identity_labels", modes, &mode)) ||
        (rc = get_enum(x, o, "collection", "mode", cmodes, &cmode)) ||
        (rc = get_str(x, o, "collection", "hostname_label", false, &c->hostname_label)))
        return rc;
    c->server_mode = cmode == 1;
    if (3600 % step != 0)
        return cfg_fail(x, "collection.step_seconds", "%ld does not divide 3600", step);
    if (chunk * 3600 / step > 11000)
        return cfg_fail(x, "collection.chunk_hours",
                        "%ld hours at a %ld s step is %ld points per series, over "
                        "Prometheus's 11000",
                        chunk, step, chunk * 3600 / step);
    c->step = step;
    c->chunk_hours = (int)chunk;
    c->max_samples_in_memory = (int64_t)slots;
    c->identity = (enum gl_identity_mode)mode;
    char *qd = NULL;
    if ((rc = get_str(x, o, "collection", "queries_dir", false, &qd)))
        return rc;
    if (qd) {
        free(c->queries_dir);
        c->queries_dir = resolve(c, qd);
    }
    /* collection.shrink_tolerance (docs/specification.md "Integrity", no silent shrink) */
    const cJSON *tol = cJSON_GetObjectItemCaseSensitive(o, "shrink_tolerance");
    if (tol && !(cJSON_IsNumber(tol) && tol->valuedouble >= 0 && tol->valuedouble <= 1))
        return cfg_fail(x, "collection.shrink_tolerance",
                        "expected a number from 0 to 1 (the share of an hour's stored series, "
                        "samples or MiB·s that a re-collect may lose)");
    if (tol)
        c->shrink_tolerance_ppm = (int64_t)(tol->valuedouble * 1e6 + 0.5);
    return GL_OK;
}

static enum gl_status load_memory(struct cfg_ctx *x, struct gl_config *c, const cJSON *o)
{
    static const char *const keys[] = {"query", "unit", "attribution", "split", "labels",
                                       "limit_query", "device_query", "preset", NULL};
    static const char *const label_keys[] = {"uuid", "gpu_i_id", "namespace", "pod", NULL};
    static const char *const units[] = {"MiB", "bytes", NULL};
    static const char *const attrs[] = {"process", "device", NULL};
    static const char *const splits[] = {"even", "allocation", NULL};
    enum gl_status rc;
    int unit = (int)c->mem_unit, attr = (int)c->attribution, split = (int)c->split;
    if ((rc = check_keys(x, o, "memory_source", keys)) ||
        (rc = get_str(x, o, "memory_source", "preset", false, &c->mem_preset)) ||
        (rc = get_str(x, o, "memory_source", "query", false, &c->mem_query)) ||
        (rc = get_enum(x, o, "memory_source", "unit", units, &unit)) ||
        (rc = get_enum(x, o, "memory_source", "attribution", attrs, &attr)) ||
        (rc = get_enum(x, o, "memory_source", "split", splits, &split)) ||
        (rc = get_str(x, o, "memory_source", "limit_query", false, &c->mem_limit_query)) ||
        (rc = get_str(x, o, "memory_source", "device_query", false, &c->mem_device_query)))
        return rc;
    if (c->mem_limit_query && !c->mem_limit_query[0])
        return cfg_fail(x, "memory_source.limit_query", "must not be empty (or leave it out)");
    if (c->mem_device_query && !c->mem_device_query[0])
        return cfg_fail(x, "memory_source.device_query", "must not be empty (or leave it out)");
    c->mem_unit = (enum gl_mem_unit)unit;
    c->attribution = (enum gl_attribution)attr;
    c->split = (enum gl_split)split;
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "labels");
    if (l && ((rc = check_keys(x, l, "memory_source.labels", label_keys)) ||
              (rc = get_str(x, l, "memory_source.labels", "uuid", false, &c->uuid_label)) ||
              (rc = get_str(x, l, "memory_source.labels", "gpu_i_id", false, &c->gpu_i_id_label)) ||
              (rc = get_str(x, l, "memory_source.labels", "namespace", false, &c->namespace_label)) ||
              (rc = get_str(x, l, "memory_source.labels", "pod", false, &c->pod_label))))
        return rc;
    if (c->mem_preset) {
        /* the preset fills what the keys above leave out */
        const struct gl_memory_preset *mp = gl_memory_preset_find(c->mem_preset);
        if (!mp)
            return cfg_fail(x, "memory_source.preset", "unknown preset \"%s\" (known: %s)",
                            c->mem_preset, gl_memory_preset_names());
        if (!cJSON_GetObjectItemCaseSensitive(o, "unit"))
            c->mem_unit = mp->unit;
        if (!cJSON_GetObjectItemCaseSensitive(o, "attribution"))
            c->attribution = mp->attribution;
        char **f[] = {&c->mem_query, &c->mem_limit_query, &c->mem_device_query, &c->uuid_label};
        const char *v[] = {mp->query, mp->limit_query, mp->device_query, mp->uuid_label};
        for (size_t i = 0; i < sizeof f / sizeof *f; i++)
            if (!*f[i] && v[i])
                *f[i] = gl_strdup(v[i]);
    }
    if (c->mem_device_query && strcmp(c->mem_device_query, c->mem_query ? c->mem_query
                                                                         : "fb_used") == 0)
        return cfg_fail(x, "memory_source.device_query",
                        "\"%s\" is the memory source itself: name the exporter's device "
                        "memory query (fb_used) beside another source, or leave it out",
                        c->mem_device_query);
    return GL_OK;
}

/* exporter: {"preset", "labels": {"uuid", "gpu_i_id", "hostname"},
 * "queries": {NAME: {"unit", "labels": {...}}}} (README "Exporter schema").
 * Exporter-wide labels: exporter.labels, else the older keys (memory_source.
 * labels, collection.hostname_label; both given and different is an
 * error), else the preset, else UUID / GPU_I_ID / Hostname. Units: the
 * preset's FB unit for fb_free, fb_reserved and an fb_used memory source,
 * under memory_source.unit and exporter.queries.NAME.unit; the limit query
 * takes the memory source's unit unless it declares its own. Per-query
 * labels win over the exporter-wide ones. */
static enum gl_status load_exporter(struct cfg_ctx *x, struct gl_config *c, const cJSON *root)
{
    static const char *const keys[] = {"preset", "labels", "queries", NULL};
    static const char *const label_keys[] = {"uuid", "gpu_i_id", "hostname", NULL};
    static const char *const query_keys[] = {"unit", "labels", NULL};
    static const char *const units[] = {"MiB", "bytes", NULL};
    static const char *const defaults[3] = {"UUID", "GPU_I_ID", "Hostname"};
    static const char *const legacy_paths[3] = {"memory_source.labels.uuid",
                                                "memory_source.labels.gpu_i_id",
                                                "collection.hostname_label"};
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "exporter");
    const struct gl_preset *pr = NULL;
    char *wide[3] = {NULL, NULL, NULL};
    char **legacy[3] = {&c->uuid_label, &c->gpu_i_id_label, &c->hostname_label};
    enum gl_status rc = GL_OK;
    if (o) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "labels");
        if ((rc = check_keys(x, o, "exporter", keys)) ||
            (rc = get_str(x, o, "exporter", "preset", false, &c->exporter_preset)))
            return rc;
        if (c->exporter_preset && !(pr = gl_preset_find(c->exporter_preset)))
            return cfg_fail(x, "exporter.preset", "unknown preset \"%s\" (known: %s)",
                            c->exporter_preset, gl_preset_names());
        if (l && (rc = check_keys(x, l, "exporter.labels", label_keys)))
            return rc;
        for (int i = 0; l && i < 3 && !rc; i++) {
            char path[64];
            snprintf(path, sizeof path, "exporter.labels.%s", label_keys[i]);
            rc = get_str(x, l, "exporter.labels", label_keys[i], false, &wide[i]);
            if (!rc && wide[i] && !wide[i][0])
                rc = cfg_fail(x, path, "must not be empty");
            if (!rc && wide[i] && *legacy[i] && strcmp(wide[i], *legacy[i]) != 0)
                rc = cfg_fail(x, path, "\"%s\" differs from %s \"%s\": give one of them",
                              wide[i], legacy_paths[i], *legacy[i]);
        }
    }
    for (int i = 0; i < 3; i++) {
        if (!rc && wide[i]) {
            free(*legacy[i]);
            *legacy[i] = wide[i];
            wide[i] = NULL;
        } else if (!rc && !*legacy[i]) {
            const char *pv = !pr ? NULL : i == 0 ? pr->uuid_label
                                        : i == 1 ? pr->gpu_i_id_label : pr->hostname_label;
            *legacy[i] = gl_strdup(pv ? pv : defaults[i]);
        }
        free(wide[i]);
    }
    if (rc)
        return rc;
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(root, "memory_source");
    bool mem_explicit = cJSON_GetObjectItemCaseSensitive(ms, "unit") != NULL || c->mem_preset;
    enum gl_mem_unit fb = pr ? pr->fb_unit : GL_UNIT_MIB;
    for (int q = 0; q < GL_MQ_COUNT; q++)
        c->mq[q].unit = GL_UNIT_MIB;
    c->mq[GL_MQ_MEMORY].unit =
        !mem_explicit && strcmp(c->mem_query, "fb_used") == 0 ? fb : c->mem_unit;
    c->mq[GL_MQ_FREE].unit = c->mq[GL_MQ_RESERVED].unit = fb;
    bool limit_explicit = false;
    const cJSON *qo = o ? cJSON_GetObjectItemCaseSensitive(o, "queries") : NULL;
    if (qo && !cJSON_IsObject(qo))
        return cfg_fail(x, "exporter.queries", "expected an object");
    for (const cJSON *it = qo ? qo->child : NULL; it; it = it->next) {
        char path[320], lpath[340];
        snprintf(path, sizeof path, "exporter.queries.%.200s", it->string);
        snprintf(lpath, sizeof lpath, "%s.labels", path);
        for (const cJSON *prev = qo->child; prev != it; prev = prev->next)
            if (strcmp(prev->string, it->string) == 0)
                return cfg_fail(x, "exporter.queries", "duplicate key \"%s\"", it->string);
        int q = strcmp(it->string, c->mem_query) == 0       ? GL_MQ_MEMORY
                : strcmp(it->string, "fb_free") == 0        ? GL_MQ_FREE
                : strcmp(it->string, "fb_reserved") == 0    ? GL_MQ_RESERVED
                : c->mem_limit_query && strcmp(it->string, c->mem_limit_query) == 0 ? GL_MQ_LIMIT
                                                                                     : -1;
        if (q < 0)
            return cfg_fail(x, path, "not a memory query of this config (the memory source "
                            "\"%s\", fb_free, fb_reserved%s%s)", c->mem_query,
                            c->mem_limit_query ? ", the limit query " : "",
                            c->mem_limit_query ? c->mem_limit_query : "");
        struct gl_query_schema *qs = &c->mq[q];
        int u = -1;
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(it, "labels");
        if ((rc = check_keys(x, it, path, query_keys)) ||
            (rc = get_enum(x, it, path, "unit", units, &u)) ||
            (l && (rc = check_keys(x, l, lpath, label_keys))) ||
            (l && (rc = get_str(x, l, lpath, "uuid", false, &qs->uuid_label))) ||
            (l && (rc = get_str(x, l, lpath, "gpu_i_id", false, &qs->gpu_i_id_label))) ||
            (l && (rc = get_str(x, l, lpath, "hostname", false, &qs->hostname_label))))
            return rc;
        if (u >= 0 && q == GL_MQ_MEMORY && mem_explicit && (enum gl_mem_unit)u != c->mem_unit)
            return cfg_fail(x, path, "unit \"%s\" differs from memory_source.unit \"%s\": give "
                            "one of them", units[u], units[c->mem_unit]);
        if (u >= 0)
            qs->unit = (enum gl_mem_unit)u;
        if (u >= 0 && q == GL_MQ_LIMIT)
            limit_explicit = true;
    }
    if (!limit_explicit)
        c->mq[GL_MQ_LIMIT].unit = c->mq[GL_MQ_MEMORY].unit;
    c->mem_unit = c->mq[GL_MQ_MEMORY].unit;
    for (int q = 0; q < GL_MQ_COUNT; q++) {
        char **f[3] = {&c->mq[q].uuid_label, &c->mq[q].gpu_i_id_label, &c->mq[q].hostname_label};
        for (int i = 0; i < 3; i++) {
            if (*f[i] && !(*f[i])[0])
                return cfg_fail(x, "exporter.queries", "a label name must not be empty");
            if (!*f[i])
                *f[i] = gl_strdup(*legacy[i]);
        }
    }
    return GL_OK;
}

/* An object of name: number (whole, > 0) or name: string pairs. */
static enum gl_status get_map(struct cfg_ctx *x, const cJSON *o, const char *base,
                              const char *key, bool numbers, struct gl_kv **out, size_t *n)
{
    char path[256];
    join_path(path, sizeof path, base, key);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!m || cJSON_IsNull(m))
        return GL_OK;
    if (!cJSON_IsObject(m))
        return cfg_fail(x, path, "expected an object");
    *out = gl_xcalloc((size_t)cJSON_GetArraySize(m), sizeof **out);
    for (const cJSON *it = m->child; it; it = it->next) {
        char p2[512];
        snprintf(p2, sizeof p2, "%s.%s", path, it->string);
        struct gl_kv *kv = &(*out)[*n];
        if (numbers) {
            if (!cJSON_IsNumber(it) || it->valuedouble < 1 || it->valuedouble > 1e12 ||
                it->valuedouble != (double)(int64_t)it->valuedouble)
                return cfg_fail(x, p2, "expected a whole number above 0");
            kv->num = (int64_t)it->valuedouble;
        } else {
            if (!cJSON_IsString(it) || !it->valuestring[0])
                return cfg_fail(x, p2, "expected a non-empty string");
            kv->str = gl_strdup(it->valuestring);
        }
        kv->key = gl_strdup(it->string);
        (*n)++;
    }
    return GL_OK;
}

static enum gl_status get_str_list(struct cfg_ctx *x, const cJSON *o, const char *base,
                                   const char *key, char ***out, size_t *n)
{
    char path[256];
    join_path(path, sizeof path, base, key);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!a)
        return GL_OK;
    if (!cJSON_IsArray(a))
        return cfg_fail(x, path, "expected an array of strings");
    for (size_t i = 0; i < *n; i++)
        free((*out)[i]);
    free(*out);
    *n = 0;
    *out = gl_xcalloc((size_t)cJSON_GetArraySize(a), sizeof **out);
    for (const cJSON *it = a->child; it; it = it->next) {
        if (!cJSON_IsString(it) || !it->valuestring[0])
            return cfg_fail(x, path, "expected an array of non-empty strings");
        (*out)[(*n)++] = gl_strdup(it->valuestring);
    }
    return GL_OK;
}

static enum gl_status load_allocation(struct cfg_ctx *x, struct gl_config *c, const cJSON *o)
{
    static const char *const keys[] = {"resources", "replicas", "mig_profiles_mib",
                                       "model_capacity_mib", "node_models", NULL};
    enum gl_status rc;
    if ((rc = check_keys(x, o, "allocation", keys)) ||
        (rc = get_str_list(x, o, "allocation", "resources", &c->extra_resources,
                           &c->nextra_resources)) ||
        (rc = get_map(x, o, "allocation", "replicas", true, &c->replicas, &c->nreplicas)) ||
        (rc = get_map(x, o, "allocation", "mig_profiles_mib", true, &c->mig_profiles,
                      &c->nmig_profiles)) ||
        (rc = get_map(x, o, "allocation", "model_capacity_mib", true, &c->model_capacity,
                      &c->nmodel_capacity)) ||
        (rc = get_map(x, o, "allocation", "node_models", false, &c->node_models,
                      &c->nnode_models)))
        return rc;
    for (size_t i = 0; i < c->nextra_resources; i++)
        for (const char *p = c->extra_resources[i]; *p; p++)
            if (!isalnum((unsigned char)*p) && *p != '_')
                return cfg_fail(x, "allocation.resources",
                                "\"%s\": use the kube-state-metrics spelling (letters, digits, _)",
                                c->extra_resources[i]);
    return GL_OK;
}

/* dra: {"enabled": bool, "driver": name, "labels": {"claim_name",
 * "claim_namespace", "mig_profile", "driver", "pool", "device",
 * "mig_device_uuid"}} (README "DRA and HAMi allocation"). */
static enum gl_status load_dra(struct cfg_ctx *x, struct gl_config *c, const cJSON *o)
{
    static const char *const keys[] = {"enabled", "driver", "labels", NULL};
    static const char *const label_keys[] = {"claim_name", "claim_namespace", "mig_profile",
                                             "driver",     "pool",            "device",
                                             "mig_device_uuid", NULL};
    enum gl_status rc = check_keys(x, o, "dra", keys);
    if (rc)
        return rc;
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(o, "enabled");
    if (en && !cJSON_IsBool(en))
        return cfg_fail(x, "dra.enabled", "expected true or false");
    if (en)
        c->dra_enabled = cJSON_IsTrue(en);
    const cJSON *drv = cJSON_GetObjectItemCaseSensitive(o, "driver");
    if (drv && (!cJSON_IsString(drv) || !drv->valuestring[0]))
        return cfg_fail(x, "dra.driver", "expected a non-empty DRA driver name (gpu.nvidia.com)");
    if ((rc = get_str(x, o, "dra", "driver", false, &c->dra_driver)))
        return rc;
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "labels");
    char **labels[] = {&c->dra_claim_name_label, &c->dra_claim_namespace_label,
                       &c->dra_mig_profile_label, &c->dra_driver_label,
                       &c->dra_pool_label,        &c->dra_device_label,
                       &c->dra_mig_device_uuid_label};
    if (l && (rc = check_keys(x, l, "dra.labels", label_keys)))
        return rc;
    for (size_t i = 0; l && i < sizeof labels / sizeof *labels; i++) {
        char path[64];
        snprintf(path, sizeof path, "dra.labels.%s", label_keys[i]);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(l, label_keys[i]);
        if (v && (!cJSON_IsString(v) || !v->valuestring[0]))
            return cfg_fail(x, path, "expected a non-empty label name");
        if ((rc = get_str(x, l, "dra.labels", label_keys[i], false, labels[i])))
            return rc;
    }
    return GL_OK;
}

const struct gl_kv *gl_kv_find(const struct gl_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kv[i].key, key) == 0)
            return &kv[i];
    return NULL;
}

/* One item of a config array, at path ("teams.rules[2]"): the caller made
 * room for item i. */
typedef enum gl_status (*item_fn)(struct cfg_ctx *x, struct gl_config *c, size_t i,
                                  const cJSON *it, const char *path);

/* Each item of the array a found at key (absent: none) through load; *n
 * counts the items begun, so that gl_config_free sees a half-loaded one. */
static enum gl_status load_items(struct cfg_ctx *x, struct gl_config *c, const cJSON *a,
                                 const char *key, const char *what, size_t *n, item_fn load)
{
    if (!a)
        return GL_OK;
    if (!cJSON_IsArray(a))
        return cfg_fail(x, key, "expected an array of %s", what);
    size_t i = 0;
    for (const cJSON *it = a->child; it; it = it->next, i++) {
        char path[64];
        snprintf(path, sizeof path, "%s[%zu]", key, i);
        *n = i + 1;
        enum gl_status rc = load(x, c, i, it, path);
        if (rc)
            return rc;
    }
    return GL_OK;
}

/* prices.entries: objects with the price table's columns; prices are
 * decimal strings, never JSON numbers (docs/specification.md "Arithmetic"). */
static enum gl_status load_price_entry(struct cfg_ctx *x, struct gl_config *c, size_t i,
                                       const cJSON *it, const char *path)
{
    static const char *const cols[7] = {"model_pattern", "unit",     "price",      "currency",
                                        "valid_from",    "valid_to", "capacity_gb"};
    static const char *const keys[] = {"model_pattern", "unit",     "price",      "currency",
                                       "valid_from",    "valid_to", "capacity_gb", NULL};
    enum gl_status rc;
    if ((rc = check_keys(x, it, path, keys)))
        return rc;
    for (int k = 0; k < 7; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, cols[k]);
        if (cJSON_IsNumber(v)) {
            char p2[96];
            snprintf(p2, sizeof p2, "%s.%s", path, cols[k]);
            return cfg_fail(x, p2, "write it as a string (\"%g\"): prices are exact decimals",
                            v->valuedouble);
        }
        if ((rc = get_str(x, it, path, cols[k], k < 5, &c->price_entries[i][k])))
            return rc;
    }
    return GL_OK;
}

static enum gl_status load_price_entries(struct cfg_ctx *x, struct gl_config *c, const cJSON *a)
{
    c->price_entries = gl_xcalloc((size_t)cJSON_GetArraySize(a), sizeof *c->price_entries);
    return load_items(x, c, a, "prices.entries", "price entries", &c->nprice_entries,
                      load_price_entry);
}

static enum gl_status load_rule(struct cfg_ctx *x, struct gl_config *c, size_t i,
                                const cJSON *o, const char *path)
{
    struct gl_team_rule *r = &c->rules[i];
    static const char *const keys[] = {"pod_label", "namespace_label", "namespace_regex",
                                       "team", NULL};
    enum gl_status rc;
    if ((rc = check_keys(x, o, path, keys)))
        return rc;
    char *pod = NULL, *ns = NULL;
    if ((rc = get_str(x, o, path, "pod_label", false, &pod)) ||
        (rc = get_str(x, o, path, "namespace_label", false, &ns)) ||
        (rc = get_str(x, o, path, "namespace_regex", false, &r->regex)) ||
        (rc = get_str(x, o, path, "team", false, &r->team))) {
        free(pod);
        free(ns);
        return rc;
    }
    int kinds = (pod != NULL) + (ns != NULL) + (r->regex != NULL);
    if (kinds != 1) {
        free(pod);
        free(ns);
        return cfg_fail(x, path,
                        "a rule needs exactly one of pod_label, namespace_label, namespace_regex");
    }
    if (pod) {
        r->kind = GL_RULE_POD_LABEL;
        r->label = gl_ksm_label_name(pod);
        free(pod);
    } else if (ns) {
        r->kind = GL_RULE_NAMESPACE_LABEL;
        r->label = gl_ksm_label_name(ns);
        free(ns);
    } else {
        r->kind = GL_RULE_NAMESPACE_REGEX;
        if (!r->team)
            r->team = gl_strdup("$0");
        char why[256];
        size_t off;
        if (!(r->code = gl_pattern_compile(r->regex, why, sizeof why, &off)))
            return cfg_fail(x, path, "namespace_regex \"%s\": %s at offset %zu", r->regex, why,
                            off);
    }
    if (r->kind != GL_RULE_NAMESPACE_REGEX && r->team)
        return cfg_fail(x, path, "\"team\" only goes with namespace_regex");
    return GL_OK;
}

/* One team of teams.catalogue. */
static enum gl_status load_team(struct cfg_ctx *x, struct gl_config *c, size_t i, const cJSON *it,
                                const char *path)
{
    static const char *const tkeys[] = {"id", "name", "cost_center", NULL};
    struct gl_team_info *t = &c->teams[i];
    enum gl_status rc;
    if ((rc = check_keys(x, it, path, tkeys)) ||
        (rc = get_str(x, it, path, "id", true, &t->id)) ||
        (rc = get_str(x, it, path, "name", false, &t->name)) ||
        (rc = get_str(x, it, path, "cost_center", false, &t->cost_center)))
        return rc;
    if (!t->name)
        t->name = gl_strdup(t->id);
    if (!gl_is_ascii(t->id) || !gl_is_ascii(t->name) ||
        (t->cost_center && !gl_is_ascii(t->cost_center)))
        return cfg_fail(x, path, "team ids, names and cost centers must be printable "
                                 "ASCII (FOCUS string columns)");
    for (size_t j = 0; j < i; j++)
        if (strcmp(c->teams[j].id, t->id) == 0)
            return cfg_fail(x, path, "team \"%s\" is listed twice", t->id);
    return GL_OK;
}

static enum gl_status load_teams(struct cfg_ctx *x, struct gl_config *c, const cJSON *o)
{
    static const char *const keys[] = {"rules", "default", "catalogue", "default_cost_center",
                                       NULL};
    enum gl_status rc;
    if ((rc = check_keys(x, o, "teams", keys)) ||
        (rc = get_str(x, o, "teams", "default", false, &c->default_team)) ||
        (rc = get_str(x, o, "teams", "default_cost_center", false, &c->default_cost_center)))
        return rc;
    if (c->default_cost_center && (!c->default_cost_center[0] ||
                                   !gl_is_ascii(c->default_cost_center)))
        return cfg_fail(x, "teams.default_cost_center",
                        "must be a non-empty printable ASCII cost center (FOCUS x_CostCenter)");
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(o, "rules");
    c->rules = gl_xcalloc((size_t)cJSON_GetArraySize(rules), sizeof *c->rules);
    if ((rc = load_items(x, c, rules, "teams.rules", "rules", &c->nrules, load_rule)))
        return rc;
    const cJSON *cat = cJSON_GetObjectItemCaseSensitive(o, "catalogue");
    c->teams = gl_xcalloc((size_t)cJSON_GetArraySize(cat), sizeof *c->teams);
    if ((rc = load_items(x, c, cat, "teams.catalogue", "teams", &c->nteams, load_team)))
        return rc;
    if (!c->default_team)
        c->default_team = gl_strdup("unallocated");
    if (!c->default_team[0] || !gl_is_ascii(c->default_team))
        return cfg_fail(x, "teams.default", "must be a non-empty printable ASCII team id");
    return GL_OK;
}

static enum gl_status load_billing(struct cfg_ctx *x, struct gl_config *c, const cJSON *o)
{
    static const char *const keys[] = {"currency", "account_id", "account_name", "provider",
                                       "service_name", "basis", "focus_version", NULL};
    enum gl_status rc;
    /* the basis table's names (basis.h), as get_enum reads them */
    const char **bases = gl_xcalloc(gl_nbases + 1, sizeof *bases);
    for (size_t i = 0; i < gl_nbases; i++)
        bases[i] = gl_bases[i].name;
    int basis = (int)(c->basis - gl_bases);
    rc = check_keys(x, o, "billing", keys);
    if (!rc)
        rc = get_enum(x, o, "billing", "basis", bases, &basis);
    free(bases);
    if (rc ||
        (rc = get_str(x, o, "billing", "currency", true, &c->currency)) ||
        (rc = get_str(x, o, "billing", "account_id", false, &c->account_id)) ||
        (rc = get_str(x, o, "billing", "account_name", false, &c->account_name)) ||
        (rc = get_str(x, o, "billing", "provider", false, &c->provider)) ||
        (rc = get_str(x, o, "billing", "service_name", false, &c->service_name)))
        return rc;
    /* billing.focus_version: the FOCUS version of the CSV */
    static const char *const focus_versions[] = {"1.2", "1.3", NULL};
    int fv = c->focus_version == 13;
    if ((rc = get_enum(x, o, "billing", "focus_version", focus_versions, &fv)))
        return rc;
    c->focus_version = fv ? 13 : 12;
    c->basis = &gl_bases[basis];
    c->minor_digits = gl_currency_minor_digits(c->currency);
    if (c->minor_digits < 0)
        return cfg_fail(x, "billing.currency", "\"%s\" is not an ISO 4217 code (three capital letters)",
                        c->currency);
    if (!c->account_id)
        c->account_id = gl_strdup("gpu-platform");
    if (!c->account_name)
        c->account_name = gl_strdup("GPU Platform");
    if (!c->provider)
        c->provider = gl_strdup("GPU Platform");
    if (!c->service_name)
        c->service_name = gl_strdup("GPU Platform");
    const char *strs[] = {c->account_id, c->account_name, c->provider, c->service_name};
    for (size_t i = 0; i < 4; i++)
        if (!gl_is_ascii(strs[i]))
            return cfg_fail(x, "billing", "account and provider names must be printable ASCII");
    return GL_OK;
}

/* ---- metrics (README "Its own metrics") ---- */

static enum gl_status load_metrics(struct cfg_ctx *x, struct gl_config *c, const cJSON *o)
{
    static const char *const keys[] = {"pushgateway_url", "job", "pushgateway_bearer_token_file",
                                       "pushgateway_basic_auth_file", "pushgateway_ca_file",
                                       "timeout_seconds", "textfile", NULL};
    struct gl_metrics_cfg *m = &c->metrics;
    enum gl_status rc;
    if ((rc = check_keys(x, o, "metrics", keys)) ||
        (rc = get_str(x, o, "metrics", "pushgateway_url", false, &m->pushgateway_url)) ||
        (rc = get_str(x, o, "metrics", "job", false, &m->job)) ||
        (rc = get_str(x, o, "metrics", "pushgateway_bearer_token_file", false,
                      &m->bearer_token_file)) ||
        (rc = get_str(x, o, "metrics", "pushgateway_basic_auth_file", false,
                      &m->basic_auth_file)) ||
        (rc = get_str(x, o, "metrics", "pushgateway_ca_file", false, &m->ca_file)) ||
        (rc = get_int(x, o, "metrics", "timeout_seconds", 1, 600, &m->timeout_s)) ||
        (rc = get_str(x, o, "metrics", "textfile", false, &m->textfile)))
        return rc;
    const char *u = m->pushgateway_url;
    if (u && strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0)
        return cfg_fail(x, "metrics.pushgateway_url", "\"%s\" is not an http:// or https:// URL",
                        u);
    if (u && strchr(u, '@'))
        return cfg_fail(x, "metrics.pushgateway_url",
                        "put credentials in pushgateway_basic_auth_file, not in the URL");
    if (m->job && !m->job[0])
        return cfg_fail(x, "metrics.job", "must not be empty");
    if (m->bearer_token_file && m->basic_auth_file)
        return cfg_fail(x, "metrics", "pushgateway_bearer_token_file and "
                                      "pushgateway_basic_auth_file exclude each other");
    if (m->textfile && !m->textfile[0])
        return cfg_fail(x, "metrics.textfile", "must not be empty");
    if (m->textfile && (strlen(m->textfile) < 5 ||
                        strcmp(m->textfile + strlen(m->textfile) - 5, ".prom") != 0))
        return cfg_fail(x, "metrics.textfile",
                        "\"%s\" must end in .prom (node-exporter's textfile collector reads "
                        "only *.prom files)",
                        m->textfile);
    m->bearer_token_file = resolve(c, m->bearer_token_file);
    m->basic_auth_file = resolve(c, m->basic_auth_file);
    m->ca_file = resolve(c, m->ca_file);
    m->textfile = resolve(c, m->textfile);
    return GL_OK;
}

static void metrics_free(struct gl_metrics_cfg *m)
{
    GL_FREE_EACH(m->pushgateway_url, m->job, m->bearer_token_file, m->basic_auth_file,
                 m->ca_file, m->textfile);
}

/* ---- outputs.s3, retention, GPULEDGER_* (README "Delivery, retention and
 * conventions") ---- */

/* The environment variables a Helm chart sets, and the key each fills. The
 * config file wins: a variable fills its key only when the file leaves it
 * out. Paths relative to the working directory. */
static const struct {
    const char *var, *object, *key;
    bool path;
} env_keys[] = {
    {"GPULEDGER_PROMETHEUS_URL", "prometheus", "url", false},
    {"GPULEDGER_PROMETHEUS_BEARER_TOKEN_FILE", "prometheus", "bearer_token_file", true},
    {"GPULEDGER_PROMETHEUS_BASIC_AUTH_FILE", "prometheus", "basic_auth_file", true},
    {"GPULEDGER_PROMETHEUS_CA_FILE", "prometheus", "ca_file", true},
    {"GPULEDGER_PRICES_FILE", "prices", "file", true},
};

/* Fills root from the GPULEDGER_* variables (see env_keys). A credential
 * variable is not applied when the file configures another kind of
 * credential for the same Prometheus (they exclude each other). */
static void apply_env(cJSON *root)
{
    for (size_t i = 0; i < sizeof env_keys / sizeof *env_keys; i++) {
        const char *v = getenv(env_keys[i].var);
        if (!v || !*v)
            continue;
        cJSON *o = cJSON_GetObjectItemCaseSensitive(root, env_keys[i].object);
        if (o && !cJSON_IsObject(o))
            continue; /* the file's wrong type is reported as it is */
        if (!o && strcmp(env_keys[i].object, "prometheus") == 0 &&
            cJSON_GetObjectItemCaseSensitive(root, "clusters") &&
            strcmp(env_keys[i].key, "url") != 0)
            continue; /* per-cluster backends: only a shared URL makes a shared block */
        if (cJSON_GetObjectItemCaseSensitive(o, env_keys[i].key))
            continue;
        if (o && strcmp(env_keys[i].object, "prometheus") == 0 &&
            (strcmp(env_keys[i].key, "bearer_token_file") == 0 ||
             strcmp(env_keys[i].key, "basic_auth_file") == 0) &&
            (cJSON_GetObjectItemCaseSensitive(o, "bearer_token_file") ||
             cJSON_GetObjectItemCaseSensitive(o, "basic_auth_file") ||
             cJSON_GetObjectItemCaseSensitive(o, "auth")))
            continue;
        if (o && strcmp(env_keys[i].object, "prices") == 0 &&
            cJSON_GetObjectItemCaseSensitive(o, "entries"))
            continue;
        if (!o) {
            o = cJSON_AddObjectToObject(root, env_keys[i].object);
            if (!o)
                continue;
        }
        char *val = NULL;
        if (env_keys[i].path && v[0] != '/') {
            char *cwd = getcwd(NULL, 0);
            val = gl_path_join(cwd ? cwd : ".", v);
            free(cwd);
        } else {
            val = gl_strdup(v);
        }
        cJSON_AddStringToObject(o, env_keys[i].key, val);
        free(val);
    }
}

static void s3_free(struct gl_s3_cfg *s)
{
    if (!s)
        return;
    free(s->endpoint);
    free(s->bucket);
    free(s->prefix);
    prom_free(&s->conn);
    free(s);
}

/* outputs: {"s3": {endpoint, bucket, prefix, region, path_style,
 * timeout_seconds, retries, ca_file, auth}}; auth as prometheus.auth, type
 * aws_sigv4 only (the default, with credentials "auto"). */
static enum gl_status load_outputs(struct cfg_ctx *x, struct gl_config *c, const cJSON *o)
{
    static const char *const keys[] = {"s3", NULL};
    static const char *const s3_keys[] = {"endpoint", "bucket", "prefix", "region",
                                          "path_style", "timeout_seconds", "retries",
                                          "ca_file", "auth", NULL};
    enum gl_status rc;
    if ((rc = check_keys(x, o, "outputs", keys)))
        return rc;
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(o, "s3");
    if (!so || cJSON_IsNull(so))
        return GL_OK;
    const char *base = "outputs.s3";
    if ((rc = check_keys(x, so, base, s3_keys)))
        return rc;
    struct gl_s3_cfg *s = gl_xcalloc(1, sizeof *s);
    c->s3 = s;
    prom_defaults(&s->conn);
    s->path_style = true;
    char *region = NULL;
    long timeout = 60, retries = 2;
    if ((rc = get_str(x, so, base, "endpoint", true, &s->endpoint)) ||
        (rc = get_str(x, so, base, "bucket", true, &s->bucket)) ||
        (rc = get_str(x, so, base, "prefix", false, &s->prefix)) ||
        (rc = get_str(x, so, base, "region", false, &region)) ||
        (rc = get_str(x, so, base, "ca_file", false, &s->conn.ca_file)) ||
        (rc = get_int(x, so, base, "timeout_seconds", 1, 3600, &timeout)) ||
        (rc = get_int(x, so, base, "retries", 0, 10, &retries)) ||
        (rc = auth_url(x, base, "endpoint", s->endpoint)) ||
        (rc = auth_name(x, base, "region", region))) {
        free(region);
        return rc;
    }
    s->conn.timeout_s = timeout;
    s->conn.retries = (int)retries;
    s->conn.ca_file = resolve(c, s->conn.ca_file);
    s->conn.url = gl_strdup(s->endpoint);
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(so, "path_style");
    if (ps && !cJSON_IsBool(ps)) {
        free(region);
        return cfg_fail(x, "outputs.s3.path_style", "expected true or false");
    }
    if (ps)
        s->path_style = cJSON_IsTrue(ps);
    /* a bucket name as S3 allows it (3-63 of a-z 0-9 . -), so it is safe in
     * a host name and a path */
    size_t bl = strlen(s->bucket);
    bool ok = bl >= 3 && bl <= 63;
    for (const char *b = s->bucket; *b; b++)
        if (!(islower((unsigned char)*b) || isdigit((unsigned char)*b) || *b == '.' || *b == '-'))
            ok = false;
    if (!ok) {
        free(region);
        return cfg_fail(x, "outputs.s3.bucket", "\"%s\" is not an S3 bucket name (3 to 63 of "
                        "a-z, 0-9, '.', '-')", s->bucket);
    }
    /* the prefix without slashes at either end; no empty or dot segments */
    if (!s->prefix)
        s->prefix = gl_strdup("");
    char *pf = s->prefix;
    while (*pf == '/')
        memmove(pf, pf + 1, strlen(pf));
    size_t pl = strlen(pf);
    while (pl > 0 && pf[pl - 1] == '/')
        pf[--pl] = '\0';
    for (const char *seg = pf; *pf && seg;) {
        const char *slash = strchr(seg, '/');
        size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.') ||
            !gl_is_ascii(pf)) {
            free(region);
            return cfg_fail(x, "outputs.s3.prefix", "\"%s\" is not a key prefix (printable "
                            "ASCII segments, none empty, \".\" or \"..\")", s->prefix);
        }
        seg = slash ? slash + 1 : NULL;
    }
    const cJSON *ao = cJSON_GetObjectItemCaseSensitive(so, "auth");
    if (ao && (rc = prom_auth_load(x, c, so, base, &s->conn))) {
        free(region);
        return rc;
    }
    struct gl_auth_cfg *a = &s->conn.auth;
    if (ao && a->type != GL_AUTH_AWS_SIGV4) {
        free(region);
        return cfg_fail(x, "outputs.s3.auth.type", "object storage takes aws_sigv4 only (S3, "
                        "and GCS or MinIO through their S3 endpoints with HMAC keys)");
    }
    a->type = GL_AUTH_AWS_SIGV4;
    if (region && a->region && strcmp(region, a->region) != 0) {
        free(region);
        return cfg_fail(x, base, "region and auth.region differ: give one");
    }
    if (region && !a->region)
        a->region = region;
    else
        free(region);
    if (!a->service)
        a->service = gl_strdup("s3");
    return GL_OK;
}

/* A section whose one key (keys[0]) is a whole number from min to max;
 * *out is left as it was when the key is absent. */
static enum gl_status load_int_section(struct cfg_ctx *x, const cJSON *o, const char *section,
                                       const char *const *keys, long min, long max, long *out)
{
    enum gl_status rc = check_keys(x, o, section, keys);
    return rc ? rc : get_int(x, o, section, keys[0], min, max, out);
}

static enum gl_status load_retention(struct cfg_ctx *x, struct gl_config *c, const cJSON *o)
{
    static const char *const keys[] = {"months", NULL};
    long months = 0;
    enum gl_status rc = load_int_section(x, o, "retention", keys, 0, 1200, &months);
    c->retention_months = (int)months;
    return rc;
}

/* close.settle_hours: how long after a period's end its collection must
 * reach before `close` accepts it (late scrapes, remote-write lag);
 * close.auto: whether `run` closes each such complete period itself. */
static enum gl_status load_close(struct cfg_ctx *x, struct gl_config *c, const cJSON *o)
{
    static const char *const keys[] = {"settle_hours", "auto", NULL};
    long hours = c->close_settle_s / 3600;
    enum gl_status rc;
    if ((rc = check_keys(x, o, "close", keys)) ||
        (rc = get_int(x, o, "close", "settle_hours", 0, 31 * 24, &hours)))
        return rc;
    c->close_settle_s = (int64_t)hours * 3600;
    const cJSON *au = cJSON_GetObjectItemCaseSensitive(o, "auto");
    if (au && !cJSON_IsBool(au))
        return cfg_fail(x, "close.auto", "expected true or false");
    if (au)
        c->close_auto = cJSON_IsTrue(au);
    return GL_OK;
}

/* advise.headroom: whole percent over the peak (0 to 1000) */
static enum gl_status load_advise(struct cfg_ctx *x, struct gl_config *c, const cJSON *o)
{
    static const char *const keys[] = {"headroom", NULL};
    long h = c->advise_headroom_pct;
    enum gl_status rc = load_int_section(x, o, "advise", keys, 0, 1000, &h);
    c->advise_headroom_pct = (int)h;
    return rc;
}

static void set_defaults(struct gl_config *c)
{
    c->step = 60;
    c->chunk_hours = 6;
    c->basis = &gl_bases[0];
    c->advise_headroom_pct = 10;
    c->max_samples_in_memory = GL_MAX_SAMPLES_IN_MEMORY_DEFAULT;
    c->shrink_tolerance_ppm = 10000; /* 1 % (README "No silent shrink") */
    c->close_settle_s = 48 * 3600;
    c->identity = GL_IDENTITY_AUTO;
    c->mem_unit = GL_UNIT_MIB;
    c->attribution = GL_ATTR_PROCESS;
    c->queries_dir = gl_strdup(GL_QUERIES_DIR);
    c->compute_queries = gl_xcalloc(2, sizeof *c->compute_queries);
    c->compute_queries[0] = gl_strdup("gr_engine_active");
    c->compute_queries[1] = gl_strdup("gpu_util");
    c->ncompute_queries = 2;
}

/* Line and column of a byte offset, for JSON syntax errors. */
static void line_col(const char *text, const char *at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (const char *p = text; p < at && *p; p++) {
        if (*p == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

/* "prometheus", "cluster" and "clusters": the clusters and their backends. */
static enum gl_status load_cluster_section(struct cfg_ctx *x, struct gl_config *c,
                                           const cJSON *root)
{
    static const char *const cluster_keys[] = {"name", "label", NULL};
    struct gl_prom_cfg shared;
    memset(&shared, 0, sizeof shared);
    prom_defaults(&shared);
    const cJSON *o;
    const cJSON *po = cJSON_GetObjectItemCaseSensitive(root, "prometheus");
    const cJSON *clusters = cJSON_GetObjectItemCaseSensitive(root, "clusters");
    enum gl_status rc;
    if (po && (rc = load_prometheus(x, c, po, "prometheus", &shared))) {
        prom_free(&shared);
        return rc;
    }
    char *single_name = NULL;
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "cluster")) &&
        ((rc = check_keys(x, o, "cluster", cluster_keys)) ||
         (rc = get_str(x, o, "cluster", "name", false, &single_name)) ||
         (rc = get_str(x, o, "cluster", "label", false, &c->cluster_label)))) {
        prom_free(&shared);
        free(single_name);
        return rc;
    }
    if (!c->cluster_label)
        c->cluster_label = gl_strdup("cluster");
    rc = GL_OK;
    if (clusters) {
        if (single_name) {
            rc = cfg_fail(x, "cluster.name", "use clusters[].name when \"clusters\" is given");
        } else {
            rc = load_clusters(x, c, clusters, po ? &shared : NULL);
        }
    } else if (!po) {
        rc = cfg_fail(x, "prometheus", "required key is missing (or give \"clusters\")");
    } else {
        /* one cluster: series carrying the cluster label keep their value */
        c->clusters = gl_xcalloc(1, sizeof *c->clusters);
        c->nclusters = 1;
        c->clusters[0].name = single_name ? single_name : gl_strdup("default");
        single_name = NULL;
        c->clusters[0].selector = gl_strdup("");
        c->clusters[0].name_from_label = true;
        prom_copy(&c->clusters[0].prom, &shared);
    }
    free(single_name);
    prom_free(&shared);
    return rc;
}

/* The DRA label names and driver left unset by "dra". */
static void dra_defaults(struct gl_config *c)
{
    const char *const dra_defaults[] = {"dra_claim_name",  "dra_claim_namespace",
                                        "dra_mig_profile", "dra_driver_name",
                                        "dra_pool_name",   "dra_device_name",
                                        "dra_mig_device_uuid", "gpu.nvidia.com"};
    char **dra_labels[] = {&c->dra_claim_name_label, &c->dra_claim_namespace_label,
                           &c->dra_mig_profile_label, &c->dra_driver_label,
                           &c->dra_pool_label,        &c->dra_device_label,
                           &c->dra_mig_device_uuid_label, &c->dra_driver};
    for (size_t i = 0; i < sizeof dra_labels / sizeof *dra_labels; i++)
        if (!*dra_labels[i])
            *dra_labels[i] = gl_strdup(dra_defaults[i]);
}

static enum gl_status load_compute(struct cfg_ctx *x, struct gl_config *c, const cJSON *o)
{
    static const char *const keys[] = {"queries", NULL};
    enum gl_status rc;
    if ((rc = check_keys(x, o, "compute", keys)) ||
        (rc = get_str_list(x, o, "compute", "queries", &c->compute_queries,
                           &c->ncompute_queries)))
        return rc;
    return GL_OK;
}

/* "idle_overhead" (absent: the platform policy and team "platform"). */
static enum gl_status load_idle(struct cfg_ctx *x, struct gl_config *c, const cJSON *root)
{
    static const char *const keys[] = {"policy", "platform_team", NULL};
    static const char *const policies[] = {"platform", "proportional", "unbilled", NULL};
    int policy = GL_IDLE_PLATFORM;
    const cJSON *o;
    enum gl_status rc;
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "idle_overhead")) &&
        ((rc = check_keys(x, o, "idle_overhead", keys)) ||
         (rc = get_enum(x, o, "idle_overhead", "policy", policies, &policy)) ||
         (rc = get_str(x, o, "idle_overhead", "platform_team", false, &c->platform_team))))
        return rc;
    c->idle_policy = (enum gl_idle_policy)policy;
    if (!c->platform_team)
        c->platform_team = gl_strdup("platform");
    if (!c->platform_team[0] || !gl_is_ascii(c->platform_team))
        return cfg_fail(x, "idle_overhead.platform_team",
                        "must be a non-empty printable ASCII team id");
    return GL_OK;
}

static enum gl_status load_run(struct cfg_ctx *x, struct gl_config *c, const cJSON *o)
{
    static const char *const keys[] = {"start", "delay_minutes", "repull_hours", "out_dir",
                                       "allow_shrink", NULL};
    char *start = NULL;
    long delay = 10, repull = 2;
    enum gl_status rc;
    if ((rc = check_keys(x, o, "run", keys)) ||
        (rc = get_str(x, o, "run", "start", false, &start)) ||
        (rc = get_int(x, o, "run", "delay_minutes", 0, 7 * 24 * 60, &delay)) ||
        (rc = get_int(x, o, "run", "repull_hours", 0, 31 * 24, &repull)) ||
        (rc = get_str(x, o, "run", "out_dir", false, &c->run_out_dir))) {
        free(start);
        return rc;
    }
    if (start && !(gl_time_parse(start, &c->run_start) && c->run_start % 3600 == 0)) {
        rc = cfg_fail(x, "run.start", "\"%s\" is not an RFC 3339 UTC time on a whole hour",
                      start);
        free(start);
        return rc;
    }
    free(start);
    /* run.allow_shrink (docs/specification.md "Integrity"): replace hours with clearly less data */
    const cJSON *as = cJSON_GetObjectItemCaseSensitive(o, "allow_shrink");
    if (as && !cJSON_IsBool(as))
        return cfg_fail(x, "run.allow_shrink", "expected true or false");
    c->run_allow_shrink = as && cJSON_IsTrue(as);
    c->run_delay_s = delay * 60;
    c->run_repull_s = repull * 3600;
    c->run_out_dir = resolve(c, c->run_out_dir);
    return GL_OK;
}

/* "prices" (required): a CSV file or the entries inline, exactly one. */
static enum gl_status load_prices(struct cfg_ctx *x, struct gl_config *c, const cJSON *root)
{
    static const char *const keys[] = {"file", "entries", NULL};
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "prices");
    if (!o)
        return cfg_fail(x, "prices", "required key is missing");
    enum gl_status rc;
    if ((rc = check_keys(x, o, "prices", keys)) ||
        (rc = get_str(x, o, "prices", "file", false, &c->prices_file)))
        return rc;
    c->prices_file = resolve(c, c->prices_file);
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(o, "entries");
    if (!c->prices_file == !entries)
        return cfg_fail(x, "prices", "give exactly one of \"file\" (a CSV) or \"entries\"");
    return entries ? load_price_entries(x, c, entries) : GL_OK;
}

/* "work": {"counters": [{"name", "unit", "query", "namespace_label",
 * "pod_label"}], "presets": ["vllm", ...]} (docs/configuration.md "Work
 * counters"): a preset adds its counters, each reading its metric over the
 * cluster's selector. Names are unique; a unit is one lower-case word. */
static enum gl_status load_work_counter(struct cfg_ctx *x, struct gl_config *c, const cJSON *it,
                                        const char *path)
{
    static const char *const keys[] = {"name", "unit", "query", "namespace_label", "pod_label",
                                       NULL};
    struct gl_work_counter *w = &c->work[c->nwork++];
    enum gl_status rc;
    if ((rc = check_keys(x, it, path, keys)) || (rc = get_str(x, it, path, "name", true, &w->name)) ||
        (rc = get_str(x, it, path, "unit", true, &w->unit)) ||
        (rc = get_str(x, it, path, "query", true, &w->query)) ||
        (rc = get_str(x, it, path, "namespace_label", false, &w->namespace_label)) ||
        (rc = get_str(x, it, path, "pod_label", false, &w->pod_label)))
        return rc;
    for (const char *p = w->name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
            return cfg_fail(x, path, "name \"%s\": letters, digits, _ and - only", w->name);
    for (const char *p = w->unit; *p; p++)
        if (!islower((unsigned char)*p))
            return cfg_fail(x, path, "unit \"%s\": one lower-case word (tokens, requests, steps, ...)",
                            w->unit);
    return GL_OK;
}

static enum gl_status load_work(struct cfg_ctx *x, struct gl_config *c, const cJSON *o)
{
    static const char *const keys[] = {"counters", "presets", NULL};
    enum gl_status rc = check_keys(x, o, "work", keys);
    const cJSON *counters = cJSON_GetObjectItemCaseSensitive(o, "counters");
    const cJSON *presets = cJSON_GetObjectItemCaseSensitive(o, "presets");
    if (!rc && counters && !cJSON_IsArray(counters))
        rc = cfg_fail(x, "work.counters", "expected an array of objects");
    if (!rc && presets && !cJSON_IsArray(presets))
        rc = cfg_fail(x, "work.presets", "expected an array of preset names (%s)",
                      gl_work_preset_names());
    if (rc)
        return rc;
    size_t max = (size_t)cJSON_GetArraySize(counters);
    for (const cJSON *it = presets ? presets->child : NULL; it; it = it->next) {
        size_t n = 0;
        if (!cJSON_IsString(it) || !gl_work_preset(it->valuestring, &n))
            return cfg_fail(x, "work.presets", "%s%s%s is not one of: %s",
                            cJSON_IsString(it) ? "\"" : "", cJSON_IsString(it) ? it->valuestring : "an entry",
                            cJSON_IsString(it) ? "\"" : "", gl_work_preset_names());
        max += n;
    }
    c->work = gl_xcalloc(max ? max : 1, sizeof *c->work);
    int i = 0;
    for (const cJSON *it = counters ? counters->child : NULL; it; it = it->next, i++) {
        char path[64];
        snprintf(path, sizeof path, "work.counters[%d]", i);
        if ((rc = load_work_counter(x, c, it, path)))
            return rc;
    }
    for (const cJSON *it = presets ? presets->child : NULL; it; it = it->next) {
        size_t n;
        const struct gl_work_preset_counter *pc = gl_work_preset(it->valuestring, &n);
        for (size_t k = 0; k < n; k++) {
            struct gl_work_counter *w = &c->work[c->nwork++];
            w->name = gl_strdup(pc[k].name);
            w->unit = gl_strdup(pc[k].unit);
            size_t len = strlen(pc[k].metric) + 32;
            w->query = gl_xcalloc(len, 1);
            snprintf(w->query, len, "%s{${cluster_selector}}", pc[k].metric);
        }
    }
    for (size_t k = 0; k < c->nwork; k++) {
        struct gl_work_counter *w = &c->work[k];
        for (size_t j = 0; j < k; j++)
            if (strcmp(c->work[j].name, w->name) == 0)
                return cfg_fail(x, "work", "two counters are named \"%s\" (a preset's counters "
                                "are named after it: vllm_requests, ...)", w->name);
        if (!w->namespace_label)
            w->namespace_label = gl_strdup("namespace");
        if (!w->pod_label)
            w->pod_label = gl_strdup("pod");
    }
    return GL_OK;
}

/* Everything after the clusters, in the order errors are reported. */
static enum gl_status load_sections(struct cfg_ctx *x, struct gl_config *c, const cJSON *root)
{
    const cJSON *o;
    enum gl_status rc;
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "collection")) &&
        (rc = load_collection(x, c, o)))
        return rc;
    /* an allocation.promql in the queries folder: the backend joins */
    char *alloc_file = gl_path_join(c->queries_dir, "allocation.promql");
    if (!alloc_file)
        abort(); /* out of memory, as gl_strdup */
    c->alloc_backend_join = access(alloc_file, F_OK) == 0;
    free(alloc_file);
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "memory_source")) &&
        (rc = load_memory(x, c, o)))
        return rc;
    if (!c->mem_query)
        c->mem_query = gl_strdup("fb_used");
    if ((rc = load_exporter(x, c, root)))
        return rc;
    if (!c->namespace_label)
        c->namespace_label = gl_strdup("namespace");
    if (!c->pod_label)
        c->pod_label = gl_strdup("pod");
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "allocation")) &&
        (rc = load_allocation(x, c, o)))
        return rc;
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "advise")) && (rc = load_advise(x, c, o)))
        return rc;
    c->dra_enabled = true;
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "dra")) && (rc = load_dra(x, c, o)))
        return rc;
    dra_defaults(c);
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "compute")) && (rc = load_compute(x, c, o)))
        return rc;
    if (c->ncompute_queries > 8)
        return cfg_fail(x, "compute.queries", "at most 8 queries");
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "work")) && (rc = load_work(x, c, o)))
        return rc;
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "teams")) && (rc = load_teams(x, c, o)))
        return rc;
    if (!c->default_team)
        c->default_team = gl_strdup("unallocated");
    if ((rc = load_idle(x, c, root)))
        return rc;
    c->run_delay_s = 600;
    c->run_repull_s = 2 * 3600;
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "run")) && (rc = load_run(x, c, o)))
        return rc;
    if ((rc = load_prices(x, c, root)))
        return rc;
    if (!(o = cJSON_GetObjectItemCaseSensitive(root, "billing")))
        return cfg_fail(x, "billing", "required key is missing");
    if ((rc = load_billing(x, c, o)))
        return rc;
    c->metrics.timeout_s = 30;
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "metrics")) &&
        (rc = load_metrics(x, c, o)))
        return rc;
    if (!c->metrics.job)
        c->metrics.job = gl_strdup("gpuledger");
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "outputs")) && (rc = load_outputs(x, c, o)))
        return rc;
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "retention")) &&
        (rc = load_retention(x, c, o)))
        return rc;
    if ((o = cJSON_GetObjectItemCaseSensitive(root, "close")) && (rc = load_close(x, c, o)))
        return rc;
    return GL_OK;
}

enum gl_status gl_config_load(const char *path, struct gl_config **out, struct gl_error *err)
{
    *out = NULL;
    char *text = NULL;
    enum gl_status rc = gl_read_file(path, &text, NULL, err);
    if (rc)
        return gl_error_set(err, GL_ERR_CONFIG, "%s", err->msg);
    struct cfg_ctx x = {path, err};
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, true);
    if (!root) {
        int line, col;
        line_col(text, end ? end : text, &line, &col);
        free(text);
        return gl_error_set(err, GL_ERR_CONFIG, "%s:%d:%d: invalid JSON near here", path, line,
                            col);
    }
    apply_env(root);
    struct gl_config *c = gl_xcalloc(1, sizeof *c);
    c->path = gl_strdup(path);
    c->dir = gl_path_dir(path);
    set_defaults(c);
    static const char *const keys[] = {"prometheus", "cluster", "clusters", "collection",
                                       "memory_source", "teams", "idle_overhead", "allocation",
                                       "compute", "run", "prices", "billing", "dra", "exporter",
                                       "metrics", "outputs", "retention", "close", "work", "advise", NULL};
    if (!(rc = check_keys(&x, root, "", keys)) && !(rc = load_cluster_section(&x, c, root)))
        rc = load_sections(&x, c, root);
    cJSON_Delete(root);
    free(text);
    if (rc) {
        gl_config_free(c);
        return rc;
    }
    *out = c;
    return GL_OK;
}

void gl_config_free(struct gl_config *c)
{
    if (!c)
        return;
    metrics_free(&c->metrics);
    for (size_t i = 0; i < c->nclusters; i++) {
        GL_FREE_EACH(c->clusters[i].name, c->clusters[i].selector);
        prom_free(&c->clusters[i].prom);
    }
    free(c->clusters);
    for (size_t i = 0; i < c->nwork; i++) {
        struct gl_work_counter *w = &c->work[i];
        GL_FREE_EACH(w->name, w->unit, w->query, w->namespace_label, w->pod_label);
    }
    free(c->work);
    for (int q = 0; q < GL_MQ_COUNT; q++)
        GL_FREE_EACH(c->mq[q].uuid_label, c->mq[q].gpu_i_id_label, c->mq[q].hostname_label);
    struct {
        struct gl_kv *kv;
        size_t n;
    } maps[] = {{c->replicas, c->nreplicas},
                {c->mig_profiles, c->nmig_profiles},
                {c->model_capacity, c->nmodel_capacity},
                {c->node_models, c->nnode_models}};
    for (size_t m = 0; m < sizeof maps / sizeof *maps; m++) {
        for (size_t i = 0; i < maps[m].n; i++)
            GL_FREE_EACH(maps[m].kv[i].key, maps[m].kv[i].str);
        free(maps[m].kv);
    }
    gl_free_strs(c->extra_resources, c->nextra_resources);
    gl_free_strs(c->compute_queries, c->ncompute_queries);
    for (size_t i = 0; i < c->nrules; i++) {
        GL_FREE_EACH(c->rules[i].label, c->rules[i].regex, c->rules[i].team);
        pcre2_code_free(c->rules[i].code);
    }
    free(c->rules);
    for (size_t i = 0; i < c->nteams; i++)
        GL_FREE_EACH(c->teams[i].id, c->teams[i].name, c->teams[i].cost_center);
    free(c->teams);
    for (size_t i = 0; i < c->nprice_entries; i++)
        for (int k = 0; k < 7; k++)
            free(c->price_entries[i][k]);
    free(c->price_entries);
    /* the config's own strings */
    GL_FREE_EACH(c->path, c->dir, c->cluster_label, c->hostname_label, c->queries_dir, c->mem_query,
                 c->uuid_label, c->exporter_preset, c->gpu_i_id_label, c->namespace_label,
                 c->pod_label, c->mem_limit_query, c->dra_claim_name_label,
                 c->dra_claim_namespace_label, c->dra_mig_profile_label, c->dra_driver_label,
                 c->dra_pool_label, c->dra_device_label, c->dra_mig_device_uuid_label,
                 c->dra_driver, c->mem_device_query, c->mem_preset, c->default_team,
                 c->default_cost_center, c->platform_team, c->run_out_dir, c->prices_file,
                 c->currency, c->account_id, c->account_name, c->provider, c->service_name);
    s3_free(c->s3);
    free(c);
}

const struct gl_team_info *gl_config_team(const struct gl_config *c, const char *id)
{
    for (size_t i = 0; i < c->nteams; i++)
        if (strcmp(c->teams[i].id, id) == 0)
            return &c->teams[i];
    return NULL;
}

const struct gl_cluster *gl_config_cluster(const struct gl_config *c, const char *name)
{
    for (size_t i = 0; i < c->nclusters; i++)
        if (strcmp(c->clusters[i].name, name) == 0)
            return &c->clusters[i];
    return NULL;
}

static enum gl_status query_text(const struct gl_config *c, const struct gl_cluster *cluster,
                                 const char *name, char **out, struct gl_error *err)
{
    *out = NULL;
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
            return gl_error_set(err, GL_ERR_CONFIG, "query name \"%s\": letters, digits, _ and - only",
                                name);
    char file[512];
    snprintf(file, sizeof file, "%s/%s.promql", c->queries_dir, name);
    char *text = NULL;
    enum gl_status rc = gl_read_file(file, &text, NULL, err);
    if (rc)
        return GL_ERR_CONFIG;
    /* Drop comment lines (#) and substitute the variables. */
    struct gl_buf res;
    gl_buf_init(&res);
    gl_buf_puts(&res, "nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.*");
    for (size_t i = 0; i < c->nextra_resources; i++)
        gl_buf_printf(&res, "|%s", c->extra_resources[i]);
    const char *vars[][2] = {
        {"${cluster_selector}", cluster ? cluster->selector : ""},
        {"${cluster_label}", c->cluster_label},
        {"${gpu_resources}", res.data},
    };
    struct gl_buf b;
    gl_buf_init(&b);
    char *line = text;
    while (line && *line) {
        char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        const char *q = line;
        while (q < line + len && isspace((unsigned char)*q))
            q++;
        if (q < line + len && *q != '#') {
            const char *p = line;
            while (p < line + len) {
                size_t k, vlen = 0;
                for (k = 0; k < sizeof vars / sizeof *vars; k++) {
                    vlen = strlen(vars[k][0]);
                    if ((size_t)(line + len - p) >= vlen && strncmp(p, vars[k][0], vlen) == 0)
                        break;
                }
                if (k < sizeof vars / sizeof *vars) {
                    gl_buf_puts(&b, vars[k][1]);
                    p += vlen;
                } else {
                    gl_buf_append(&b, p++, 1);
                }
            }
            gl_buf_puts(&b, " ");
        }
        line = nl ? nl + 1 : NULL;
    }
    gl_buf_free(&res);
    free(text);
    while (b.len > 0 && b.data[b.len - 1] == ' ')
        b.data[--b.len] = '\0';
    if (!b.data || b.len == 0) {
        gl_buf_free(&b);
        return gl_error_set(err, GL_ERR_CONFIG, "%s: no query in file", file);
    }
    *out = b.data;
    return GL_OK;
}

enum gl_status gl_config_query(const struct gl_config *c, const struct gl_cluster *cluster,
                               const char *name, char **out, struct gl_error *err)
{
    return query_text(c, cluster, name, out, err);
}

const char *gl_team_cost_center(const struct gl_config *c, const char *team)
{
    const struct gl_team_info *ti = gl_config_team(c, team);
    return ti && ti->cost_center ? ti->cost_center : c->default_cost_center;
}

size_t gl_teams_without_cost_center(const struct gl_config *c, const char **ids, size_t max)
{
    size_t n = 0;
    const char *extra[] = {c->default_team, c->platform_team};
    for (size_t i = 0; i < c->nteams + 2; i++) {
        const char *id = i < c->nteams ? c->teams[i].id : extra[i - c->nteams];
        if (!id || gl_team_cost_center(c, id))
            continue;
        bool seen = false; /* the default or platform team may be catalogued */
        for (size_t j = 0; j < n && j < max; j++)
            seen |= strcmp(ids[j], id) == 0;
        if (seen)
            continue;
        if (n < max)
            ids[n] = id;
        n++;
    }
    return n;
}


/* Length-prefixed, so that ("ab","c") and ("a","bc") differ. */
static uint64_t fp_field(uint64_t h, const void *p, size_t n)
{
    uint64_t len = n;
    return gl_hash_bytes(p, n, gl_hash_bytes(&len, sizeof len, h));
}

enum gl_status gl_config_fingerprint(const struct gl_config *c, char out[GL_CONFIG_FP],
                                     struct gl_error *err)
{
    char *text = NULL;
    size_t len = 0;
    /* a config is small: 64 MiB is far past any */
    enum gl_status rc = gl_read_file_max(c->path, 64u << 20, &text, &len, err);
    if (rc)
        return rc;
    static const char version[] = "gpuledger " GL_VERSION;
    uint64_t h = fp_field(GL_HASH_SEED, version, strlen(version));
    h = fp_field(h, gl_build_commit, strlen(gl_build_commit));
    snprintf(out, GL_CONFIG_FP, "%016" PRIx64, fp_field(h, text, len));
    free(text);
    return GL_OK;
}
