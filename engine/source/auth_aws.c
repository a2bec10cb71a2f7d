/* auth_aws — prometheus.auth aws_sigv4 (Amazon Managed Service for
 * Prometheus): credentials from key files, the environment, IRSA web
 * identity (STS), EKS Pod Identity or a shared credentials profile; the
 * requests are signed by libcurl (CURLOPT_AWS_SIGV4), never here. */
#include "auth_provider.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeutil.h"

/* A shared credentials file is a few KiB; a larger one is a wrong path. */
#define CREDENTIALS_FILE_MAX (1L << 20)

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

/* IRSA: the projected service-account token (re-read: the kubelet renews
 * it) for temporary credentials from STS. The answer is small XML (the
 * documented format): the few text elements are taken with PCRE2. */
static enum gl_status fetch_aws_web(struct gl_auth *a, struct cred *out, struct gl_error *err)
{
    char *tok = NULL;
    enum gl_status rc = auth_read_secret("AWS_WEB_IDENTITY_TOKEN_FILE (IRSA web identity token)",
                                         a->file, &tok, err);
    if (rc)
        return rc;
    auth_keep_secret(a, tok);
    const char *what = "STS AssumeRoleWithWebIdentity";
    long status = 0;
    char *role = auth_escape(a->role_arn), *name = auth_escape(a->session_name);
    char *etok = auth_escape(tok);
    struct gl_buf form, body;
    gl_buf_init(&form);
    gl_buf_init(&body);
    gl_buf_printf(&form, "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=%s"
                  "&RoleSessionName=%s&WebIdentityToken=%s", role, name, etok);
    auth_wipe_free(etok);
    auth_wipe_free(tok);
    free(role);
    free(name);
    rc = auth_post_form(a, what, "Accept: text/xml", &form, &body, &status, err);
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
        rc = auth_service_refused(a, what, a->endpoint, true, status, text, strlen(text), fix, err);
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
            auth_wipe_free(creds);
        }
        if (!auth_header_safe(out->key_id) || !auth_header_safe(out->secret) ||
            !auth_header_safe(out->session) || out->expiry < 0)
            rc = auth_bad_answer(a, what, a->endpoint,
                                 "the answer lacks AssumeRoleWithWebIdentityResult/Credentials "
                                 "with one AccessKeyId, SecretAccessKey, SessionToken and "
                                 "Expiration (RFC 3339)", err);
    }
    auth_body_free(&body);
    return rc;
}
/* EKS Pod Identity (and ECS): GET the container credentials endpoint with
 * the authorization token (file re-read each time). */
static enum gl_status fetch_aws_pod(struct gl_auth *a, struct cred *out, struct gl_error *err)
{
    char *tok = NULL;
    enum gl_status rc = GL_OK;
    if (a->file)
        rc = auth_read_secret(a->file_what, a->file, &tok, err);
    else if (a->env_token)
        tok = gl_strdup(a->env_token);
    if (rc)
        return rc;
    struct curl_slist *hd = curl_slist_append(NULL, "Accept: application/json");
    if (tok) {
        if (!auth_header_safe(tok)) {
            auth_wipe_free(tok);
            curl_slist_free_all(hd);
            return gl_error_set(err, GL_ERR_CONFIG, "%s: the container authorization token "
                                "holds spaces or control characters", a->mode);
        }
        auth_keep_secret(a, tok);
        size_t n = strlen(tok) + 20;
        char *line = gl_xcalloc(n, 1);
        snprintf(line, n, "Authorization: %s", tok);
        hd = curl_slist_append(hd, line);
        auth_wipe_free(line);
        auth_wipe_free(tok);
    }
    struct gl_buf body;
    gl_buf_init(&body);
    long status = 0;
    const char *what = "container credentials (EKS Pod Identity)";
    rc = auth_service_call(a, what, a->endpoint, NULL, hd, &body, &status, err);
    gl_auth_headers_free(hd);
    if (!rc && status != 200) {
        rc = auth_service_refused(a, what, a->endpoint, false, status, body.data, body.len,
                                  "check the pod identity association of this service account "
                                  "(eks-pod-identity-agent running, "
                                  "AWS_CONTAINER_CREDENTIALS_FULL_URI and "
                                  "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE injected)", err);
    } else if (!rc) {
        cJSON *root = auth_parse_answer(&body);
        const char *k = auth_json_str(root, "AccessKeyId");
        const char *s = auth_json_str(root, "SecretAccessKey");
        const char *t = auth_json_str(root, "Token"), *e = auth_json_str(root, "Expiration");
        int64_t when = 0;
        if (auth_header_safe(k) && auth_header_safe(s) && auth_header_safe(t) && e &&
            parse_instant(e, &when)) {
            out->expiry = (double)when;
            out->key_id = gl_strdup(k);
            out->secret = gl_strdup(s);
            out->session = gl_strdup(t);
        } else {
            rc = auth_bad_answer(a, what, a->endpoint,
                                 "the answer is not JSON with AccessKeyId, SecretAccessKey, Token "
                                 "and Expiration (RFC 3339)", err);
        }
        cJSON_Delete(root);
    }
    auth_body_free(&body);
    return rc;
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
        if (!auth_header_safe(val))
            rc = gl_error_set(err, GL_ERR_CONFIG, "%s:%d: %s of profile %s holds spaces or "
                              "control characters", file, lineno, key, profile);
        else {
            auth_wipe_free(*slot);
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
    enum gl_status rc = auth_read_secret(what, file, out, err);
    if (!rc && !auth_header_safe(*out)) {
        auth_wipe_free(*out);
        *out = NULL;
        rc = gl_error_set(err, GL_ERR_CONFIG, "%s: %s holds spaces or control characters",
                          file, what);
    }
    if (!rc)
        auth_keep_secret(a, *out);
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
        auth_cred_wipe(c);
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
        auth_cred_wipe(&fresh);
        return GL_OK;
    }
    gl_log(GL_LOG_INFO, "aws key files changed, signing with the new keys mode=\"%s\"",
           a->mode + strlen(a->label) + 1);
    auth_cred_wipe(&a->cur);
    a->cur = fresh;
    return GL_OK;
}

/* ---- setup ---- */

/* What the block and the environment say, resolved once: the block's keys
 * win over the variables the EKS webhooks and the AWS SDKs set. */
struct aws_inputs {
    const char *region;
    const char *key, *secret;      /* AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY */
    const char *role, *wfile;      /* IRSA */
    const char *full, *rel, *ctok; /* EKS Pod Identity */
    const char *profile;
    char *cfile;                   /* the shared credentials file (malloc'd) */
};

/* The region and the signing scope "aws:amz:REGION:SERVICE". The region
 * goes into every signature: a value that is not a region name is refused
 * here, not as a 403 later. */
static enum gl_status aws_signing(struct gl_auth *a, const struct gl_auth_cfg *ac,
                                  const char **out, struct gl_error *err)
{
    const char *region = ac->region ? ac->region : auth_env("AWS_REGION");
    if (!region)
        region = auth_env("AWS_DEFAULT_REGION");
    snprintf(a->mode, sizeof a->mode, "%s aws_sigv4", a->label);
    if (!region)
        return auth_no_source(a, "no region: set prometheus.auth.region (the workspace's, e.g. "
                                 "us-east-1) or AWS_REGION", err);
    for (const char *s = region; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '-')
            return auth_no_source(a, "the region (AWS_REGION) is not a region name", err);
    a->region = gl_strdup(region);
    const char *service = ac->service ? ac->service : "aps";
    size_t n = strlen(region) + strlen(service) + 16;
    a->sigv4 = gl_xcalloc(n, 1);
    snprintf(a->sigv4, n, "aws:amz:%s:%s", region, service);
    *out = region;
    return GL_OK;
}

static void aws_inputs(const struct gl_auth_cfg *ac, struct aws_inputs *in)
{
    in->key = auth_env("AWS_ACCESS_KEY_ID");
    in->secret = auth_env("AWS_SECRET_ACCESS_KEY");
    in->role = ac->role_arn ? ac->role_arn : auth_env("AWS_ROLE_ARN");
    in->wfile = ac->web_identity_token_file ? ac->web_identity_token_file
                                            : auth_env("AWS_WEB_IDENTITY_TOKEN_FILE");
    /* EKS Pod Identity: the block's keys, else the agent's variables */
    in->full = ac->container_credentials_uri ? ac->container_credentials_uri
                                             : auth_env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    in->rel = ac->container_credentials_uri ? NULL
                                            : auth_env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    in->ctok = ac->container_authorization_token_file
                   ? ac->container_authorization_token_file
                   : auth_env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    in->profile = ac->profile ? ac->profile : auth_env("AWS_PROFILE");
    if (!in->profile)
        in->profile = "default";
    in->cfile = NULL;
    if (ac->credentials_file)
        in->cfile = gl_strdup(ac->credentials_file);
    else if (auth_env("AWS_SHARED_CREDENTIALS_FILE"))
        in->cfile = gl_strdup(auth_env("AWS_SHARED_CREDENTIALS_FILE"));
    else if (auth_env("HOME"))
        in->cfile = gl_path_join(auth_env("HOME"), ".aws/credentials");
}

/* prometheus.auth.credentials; "auto": the block's key files, the
 * environment's keys, IRSA, EKS Pod Identity, then the shared credentials
 * file (key files first: the block names them). */
static enum gl_aws_source aws_source(const struct gl_auth_cfg *ac, const struct aws_inputs *in)
{
    if (ac->aws_source != GL_AWS_AUTO)
        return ac->aws_source;
    return ac->access_key_id_file   ? GL_AWS_FILES
           : in->key || in->secret  ? GL_AWS_ENV
           : in->role || in->wfile  ? GL_AWS_WEB_IDENTITY
           : in->full || in->rel    ? GL_AWS_POD_IDENTITY
                                    : GL_AWS_PROFILE;
}

/* credentials "files": the block's key files, read now and again before
 * every request (reload_aws_files). */
static enum gl_status aws_key_files(struct gl_auth *a, const struct gl_auth_cfg *ac,
                                    const struct aws_inputs *in, struct gl_error *err)
{
    a->prov = P_AWS_FILES;
    a->reload = reload_aws_files;
    snprintf(a->mode, sizeof a->mode, "%s aws_sigv4 (keys from files: access_key_id_file "
             "%.200s, region %s)", a->label,
             ac->access_key_id_file ? ac->access_key_id_file : "(none)", in->region);
    if (!ac->access_key_id_file || !ac->secret_access_key_file)
        return auth_no_source(a, "credentials \"files\" needs access_key_id_file and "
                                 "secret_access_key_file", err);
    a->key_file = gl_strdup(ac->access_key_id_file);
    a->secret_file = gl_strdup(ac->secret_access_key_file);
    if (ac->session_token_file)
        a->session_file = gl_strdup(ac->session_token_file);
    return load_aws_files(a, &a->cur, err);
}

/* The keys of the environment (AWS_ACCESS_KEY_ID, ...), read once: they
 * cannot change under a running process. */
static enum gl_status aws_environment(struct gl_auth *a, const struct aws_inputs *in,
                                      struct gl_error *err)
{
    const char *session = auth_env("AWS_SESSION_TOKEN");
    a->prov = P_AWS_ENV;
    snprintf(a->mode, sizeof a->mode, "%s aws_sigv4 (credentials from the "
             "environment: AWS_ACCESS_KEY_ID, region %s)", a->label, in->region);
    if (!in->key || !in->secret)
        return auth_no_source(a, "set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", err);
    if (!auth_header_safe(in->key) || !auth_header_safe(in->secret) ||
        (session && !auth_header_safe(session)))
        return auth_no_source(a, "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or AWS_SESSION_TOKEN "
                                 "holds spaces or control characters", err);
    a->cur.key_id = gl_strdup(in->key);
    a->cur.secret = gl_strdup(in->secret);
    if (session)
        a->cur.session = gl_strdup(session);
    return GL_OK;
}

/* IRSA: the role and the projected token file; the credentials come from
 * STS at the first request (fetch_aws_web). */
static enum gl_status aws_web_identity(struct gl_auth *a, const struct gl_auth_cfg *ac,
                                       const struct aws_inputs *in, struct gl_error *err)
{
    a->prov = P_AWS_WEB;
    a->fetch = fetch_aws_web;
    snprintf(a->mode, sizeof a->mode, "%s aws_sigv4 (IRSA web identity: role "
             "%.200s, token file %.200s, region %s)", a->label, in->role ? in->role : "(none)",
             in->wfile ? in->wfile : "(none)", in->region);
    if (!in->role || !in->wfile)
        return auth_no_source(a, "web identity needs a role (AWS_ROLE_ARN or prometheus.auth."
                                 "role_arn) and a token file (AWS_WEB_IDENTITY_TOKEN_FILE or "
                                 "prometheus.auth.web_identity_token_file): on EKS, annotate "
                                 "the service account with eks.amazonaws.com/role-arn", err);
    a->role_arn = gl_strdup(in->role);
    a->file = gl_strdup(in->wfile);
    const char *sn = ac->role_session_name ? ac->role_session_name
                                           : auth_env("AWS_ROLE_SESSION_NAME");
    a->session_name = gl_strdup(sn ? sn : "gpuledger");
    if (ac->sts_endpoint) {
        a->endpoint = gl_strdup(ac->sts_endpoint);
    } else if (auth_env("AWS_ENDPOINT_URL_STS")) {
        a->endpoint = gl_strdup(auth_env("AWS_ENDPOINT_URL_STS"));
    } else {
        size_t n = strlen(in->region) + 40;
        a->endpoint = gl_xcalloc(n, 1);
        snprintf(a->endpoint, n, "https://sts.%s.amazonaws.com", in->region);
    }
    return GL_OK;
}

/* EKS Pod Identity: the agent's endpoint and its authorization token;
 * the credentials come from the agent at the first request (fetch_aws_pod). */
static enum gl_status aws_pod_identity(struct gl_auth *a, const struct gl_auth_cfg *ac,
                                       const struct aws_inputs *in, struct gl_error *err)
{
    a->prov = P_AWS_POD;
    a->fetch = fetch_aws_pod;
    if (in->full) {
        a->endpoint = gl_strdup(in->full);
    } else if (in->rel) {
        size_t n = strlen(in->rel) + 32;
        a->endpoint = gl_xcalloc(n, 1);
        snprintf(a->endpoint, n, "http://169.254.170.2%s", in->rel);
    }
    if (in->ctok) {
        a->file = gl_strdup(in->ctok);
        if (ac->container_authorization_token_file)
            snprintf(a->file_what, sizeof a->file_what, "%s.container_authorization_"
                     "token_file (EKS Pod Identity token)", a->label);
        else
            snprintf(a->file_what, sizeof a->file_what, "AWS_CONTAINER_AUTHORIZATION_"
                     "TOKEN_FILE (EKS Pod Identity token)");
    } else if (auth_env("AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
        a->env_token = gl_strdup(auth_env("AWS_CONTAINER_AUTHORIZATION_TOKEN"));
    }
    auth_keep_secret(a, a->env_token);
    snprintf(a->mode, sizeof a->mode, "%s aws_sigv4 (EKS Pod Identity: %.200s, "
             "region %s)", a->label, a->endpoint ? a->endpoint : "(no endpoint)", in->region);
    if (!a->endpoint)
        return auth_no_source(a, "EKS Pod Identity needs AWS_CONTAINER_CREDENTIALS_FULL_URI "
                                 "(set by the pod identity webhook: create a pod identity "
                                 "association for this service account) or "
                                 "container_credentials_uri", err);
    return GL_OK;
}

/* A profile of the shared credentials file, read once. */
static enum gl_status aws_profile(struct gl_auth *a, const struct aws_inputs *in,
                                  struct gl_error *err)
{
    a->prov = P_AWS_PROFILE;
    snprintf(a->mode, sizeof a->mode, "%s aws_sigv4 (profile %.100s of %.300s, "
             "region %s)", a->label, in->profile, in->cfile ? in->cfile : "(no HOME)",
             in->region);
    bool found = false;
    enum gl_status rc = in->cfile ? load_aws_profile(a, in->cfile, in->profile, &found, err)
                                  : GL_OK;
    if (rc)
        return rc;
    if (!found)
        return auth_no_source(a, "no AWS credentials: give access_key_id_file and "
                                 "secret_access_key_file, set AWS_ACCESS_KEY_ID and "
                                 "AWS_SECRET_ACCESS_KEY, AWS_ROLE_ARN and "
                                 "AWS_WEB_IDENTITY_TOKEN_FILE (IRSA), "
                                 "AWS_CONTAINER_CREDENTIALS_FULL_URI (EKS Pod Identity), or a "
                                 "profile in the shared credentials file "
                                 "(prometheus.auth.profile, credentials_file)", err);
    if (!a->cur.key_id || !a->cur.secret)
        return auth_no_source(a, "the profile lacks aws_access_key_id or "
                                 "aws_secret_access_key", err);
    return GL_OK;
}

static bool chosen(const struct gl_prom_cfg *c)
{
    return c->auth.type == GL_AUTH_AWS_SIGV4;
}

/* Chooses the AWS source and reads static credentials now (one function
 * per source above). */
static enum gl_status setup(struct gl_auth *a, const struct gl_prom_cfg *c, struct gl_error *err)
{
    const struct gl_auth_cfg *ac = &c->auth;
    struct aws_inputs in = {.region = NULL};
    enum gl_status rc = aws_signing(a, ac, &in.region, err);
    if (rc)
        return rc;
    aws_inputs(ac, &in);
    switch (aws_source(ac, &in)) {
    case GL_AWS_FILES:
        rc = aws_key_files(a, ac, &in, err);
        break;
    case GL_AWS_ENV:
        rc = aws_environment(a, &in, err);
        break;
    case GL_AWS_WEB_IDENTITY:
        rc = aws_web_identity(a, ac, &in, err);
        break;
    case GL_AWS_POD_IDENTITY:
        rc = aws_pod_identity(a, ac, &in, err);
        break;
    case GL_AWS_PROFILE:
    case GL_AWS_AUTO:
        rc = aws_profile(a, &in, err);
        break;
    }
    free(in.cfile);
    auth_keep_secret(a, a->cur.secret);
    auth_keep_secret(a, a->cur.session);
    return rc;
}

/* ---- requests ---- */

static bool apply(struct gl_auth *a, CURL *h, struct curl_slist **l)
{
    /* libcurl signs: SignedHeaders are host, x-amz-date and every header
     * of the list (the session token and the form's Content-Type too) */
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, a->sigv4);
    curl_easy_setopt(h, CURLOPT_USERNAME, a->cur.key_id);
    curl_easy_setopt(h, CURLOPT_PASSWORD, a->cur.secret);
    if (a->cur.session)
        return auth_add_header(l, "X-Amz-Security-Token", a->cur.session);
    return true;
}

/* Names the likely cause from AWS's message (desc): a signature, expired
 * keys, unknown keys, a missing permission. */
static const char *hint(struct gl_auth *a, long status, const char *desc, char *buf, size_t n)
{
    (void)status;
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
        snprintf(buf, n, "the request signature was refused: check that the "
                 "secret access key belongs to the access key id and that the region (%s) "
                 "is the workspace's", a->region);
    else if (contains_ci(desc, "expired"))
        snprintf(buf, n, "the credentials have expired: %s", renew);
    else if (contains_ci(desc, "security token included in the request is invalid") ||
             contains_ci(desc, "invalidclienttokenid") ||
             contains_ci(desc, "unrecognizedclient"))
        snprintf(buf, n, "AWS does not know the access key id or session token");
    else if (contains_ci(desc, "not authorized") || contains_ci(desc, "accessdenied"))
        snprintf(buf, n, "the identity lacks aps:QueryMetrics on this workspace: "
                 "add it to the IAM policy of the role or user");
    else
        snprintf(buf, n, "check the credentials, the region (%s), the signing "
                 "service (prometheus.auth.service, aps) and the IAM policy "
                 "(aps:QueryMetrics)", a->region);
    return buf;
}

const struct auth_method auth_aws = {
    .name = "aws_sigv4", .chosen = chosen, .setup = setup, .apply = apply, .hint = hint,
    .sigv4 = true,
};
