/* Unit tests: the Prometheus client's credentials (engine/source/auth.c), without
 * network: secret files read and refused, the headers a request gets,
 * static AWS sources, redaction of secrets in messages, the 401/403 hints.
 * (Requests are signed by libcurl, not here: no SigV4 vectors to check.) */
#include <curl/curl.h>
#include <unistd.h>

#include "auth.h"
#include "config.h"
#include "tap.h"
#include "util.h"

static char *path_of(const char *name, const char *text)
{
    return gl_strdup(tap_tmpfile(name, text));
}

/* The AWS variables of the environment, cleared so that only a test's own count. */
static void clear_aws_env(void)
{
    const char *vars[] = {"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID",
                          "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ROLE_ARN",
                          "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_PROFILE",
                          "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                          "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                          "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                          "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AZURE_TENANT_ID",
                          "AZURE_CLIENT_ID", "AZURE_FEDERATED_TOKEN_FILE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
}

/* The headers gl_auth_apply sets on a fresh handle after base, joined by
 * '\n' into out; false when apply fails (err filled). */
static bool applied_headers(struct gl_auth *a, char *out, size_t n, struct gl_error *err)
{
    CURL *h = curl_easy_init();
    struct curl_slist *base = curl_slist_append(NULL, "X-Scope-OrgID: tenant-1");
    struct curl_slist *owned = NULL;
    bool ok = h && gl_auth_apply(a, h, base, &owned, err) == GL_OK;
    out[0] = '\0';
    for (struct curl_slist *s = owned; ok && s; s = s->next)
        snprintf(out + strlen(out), n - strlen(out), "%s\n", s->data);
    gl_auth_headers_free(owned);
    curl_slist_free_all(base);
    curl_easy_cleanup(h);
    return ok;
}

/* text scrubbed by a's redaction (static buffer). */
static const char *scrubbed(struct gl_auth *a, const char *text)
{
    static char out[1024];
    struct gl_buf b;
    gl_buf_init(&b);
    gl_buf_puts(&b, text);
    gl_auth_scrub(a, &b);
    snprintf(out, sizeof out, "%s", b.data ? b.data : "");
    gl_buf_free(&b);
    return out;
}

/* A bearer token file: one line, trailing white space dropped; the header
 * after the configured ones. */
static void test_bearer_file(void)
{
    struct gl_prom_cfg c = {0};
    c.bearer_token_file = path_of("bearer", "tok-123456\n\n");
    struct gl_auth *a = NULL;
    struct gl_error err = {0};
    CHECK(gl_auth_new(&c, &a, &err) == GL_OK && a);
    char hdrs[512];
    CHECK(a && applied_headers(a, hdrs, sizeof hdrs, &err));
    CHECK_STR(hdrs, "X-Scope-OrgID: tenant-1\nAuthorization: Bearer tok-123456\n");
    CHECK(a && !gl_auth_post_form(a));
    /* the token is redacted wherever it appears */
    CHECK(a && strcmp(scrubbed(a, "server said: bad tok-123456!"),
                      "server said: bad [redacted]!") == 0);
    char hint[1024];
    if (a)
        gl_auth_hint(a, 403, "forbidden", hint, sizeof hint);
    CHECK(a && strcmp(hint, "prometheus.bearer_token_file: the token is accepted but lacks "
                            "permission to query") == 0);
    if (a)
        gl_auth_hint(a, 500, "oops", hint, sizeof hint);
    CHECK(a && hint[0] == '\0');
    gl_auth_free(a);
    free(c.bearer_token_file);
}

/* Secret files refused: missing, empty, several lines, a NUL, spaces. */
static void test_bad_secret_files(void)
{
    static const struct {
        const char *text;
        size_t len;
        const char *want;
    } cases[] = {
        {"", 0, "is empty or has several lines"},
        {"  \n", 3, "is empty or has several lines"},
        {"a\nb\n", 4, "is empty or has several lines"},
        {"ab\0cd\n", 6, "holds a NUL byte"},
        {"tok en\n", 7, "the bearer token holds spaces or control characters"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *p = path_of("bad-bearer", "");
        FILE *f = fopen(p, "wb");
        if (f) {
            fwrite(cases[i].text, 1, cases[i].len, f);
            fclose(f);
        }
        struct gl_prom_cfg c = {0};
        c.bearer_token_file = p;
        struct gl_auth *a = (struct gl_auth *)&c;
        struct gl_error err = {0};
        CHECK(gl_auth_new(&c, &a, &err) == GL_ERR_CONFIG && a == NULL);
        CHECK(strstr(err.msg, cases[i].want) != NULL);
        if (!strstr(err.msg, cases[i].want))
            printf("# case %zu: %s\n", i, err.msg);
        free(p);
    }
    /* a missing file names the key */
    struct gl_prom_cfg c = {0};
    char missing[] = "/nonexistent/gl-unit-token";
    c.bearer_token_file = missing;
    struct gl_auth *a = NULL;
    struct gl_error err = {0};
    CHECK(gl_auth_new(&c, &a, &err) == GL_ERR_CONFIG && !a &&
          strstr(err.msg, "prometheus.bearer_token_file") && strstr(err.msg, missing));
    /* a larger file than a secret can be (a wrong path) is refused before reading */
    char *big = gl_xcalloc(70000, 1);
    memset(big, 'x', 69999);
    c.bearer_token_file = path_of("big-bearer", big);
    free(big);
    CHECK(gl_auth_new(&c, &a, &err) == GL_ERR_CONFIG && !a);
    free(c.bearer_token_file);
    /* basic_auth_file needs user:password */
    memset(&c, 0, sizeof c);
    c.basic_auth_file = path_of("basic", "useronly\n");
    CHECK(gl_auth_new(&c, &a, &err) == GL_ERR_CONFIG && !a &&
          strstr(err.msg, "must hold user:password"));
    free(c.basic_auth_file);
}

/* Basic auth: the password (and user:password) redacted; no header added
 * (libcurl's own option). */
static void test_basic_file(void)
{
    struct gl_prom_cfg c = {0};
    c.basic_auth_file = path_of("basic", "alice:s3cr3t-pw\n");
    struct gl_auth *a = NULL;
    struct gl_error err = {0};
    CHECK(gl_auth_new(&c, &a, &err) == GL_OK && a);
    char hdrs[512];
    CHECK(a && applied_headers(a, hdrs, sizeof hdrs, &err));
    CHECK_STR(hdrs, "X-Scope-OrgID: tenant-1\n");
    CHECK(a && strcmp(scrubbed(a, "login alice:s3cr3t-pw failed; pw s3cr3t-pw"),
                      "login [redacted] failed; pw [redacted]") == 0);
    gl_auth_free(a);
    free(c.basic_auth_file);
}

/* What the patterns redact without knowing the secret, and what they keep. */
static void test_patterns(void)
{
    struct gl_prom_cfg c = {0};
    struct gl_auth *a = NULL;
    struct gl_error err = {0};
    CHECK(gl_auth_new(&c, &a, &err) == GL_OK && a);
    if (!a)
        return;
    static const char *const cases[][2] = {
        {"Authorization: Bearer abcdefgh", "Authorization: [redacted]"},
        {"{\"authorization\":[\"Basic QWxhZGRpbg==\"]}", "{\"authorization\":[redacted]"},
        {"use bearer abcdef123 here", "use bearer [redacted] here"},
        {"a=1&password=hunter22&b=2", "a=1&password=[redacted]&b=2"},
        {"{\"client_secret\": \"xyz123\", \"n\": 1}", "{\"client_secret\": \"[redacted]\", \"n\": 1}"},
        {"<SecretAccessKey>wJalrXUtnFEMI</SecretAccessKey>",
         "<SecretAccessKey>[redacted]</SecretAccessKey>"},
        {"jwt eyJhbGciOiJSUzI1.eyJzdWIiOiIxMjM0.c2lnbmF0dXJl end", "jwt [redacted] end"},
        {"token abc.def-123 given", "token [redacted] given"},
        /* ordinary words stay */
        {"no token included in the request", "no token included in the request"},
        {"basic auth failed", "basic auth failed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *got = scrubbed(a, cases[i][0]);
        CHECK_STR(got, cases[i][1]);
    }
    char hint[1024];
    gl_auth_hint(a, 401, "", hint, sizeof hint);
    CHECK_STR(hint, "prometheus (no credentials): the server wants credentials: "
                    "prometheus.bearer_token_file, basic_auth_file or prometheus.auth");
    gl_auth_free(a);
}

/* An excerpt: one line, white space folded, scrubbed, cut at max. */
static void test_excerpt(void)
{
    struct gl_prom_cfg c = {0};
    c.bearer_token_file = path_of("bearer", "tok-abcdef\n");
    struct gl_auth *a = NULL;
    struct gl_error err = {0};
    CHECK(gl_auth_new(&c, &a, &err) == GL_OK && a);
    char out[64];
    const char body[] = "  error:\r\n\ttok-abcdef\0 \x01is \xc3\xa9 bad  ";
    if (a)
        gl_auth_excerpt(a, body, sizeof body - 1, 100, out, sizeof out);
    /* NUL and controls as spaces, runs of white space as one, non-ASCII
     * bytes as spaces, no space at either end */
    CHECK(a && strcmp(out, "error: [redacted] is bad") == 0);
    if (a)
        gl_auth_excerpt(a, body, sizeof body - 1, 9, out, sizeof out);
    CHECK(a && strcmp(out, "error: [r") == 0);
    if (a)
        gl_auth_excerpt(a, "abcdef", 6, 100, out, 4); /* the buffer bounds it too */
    CHECK(a && strcmp(out, "abc") == 0);
    gl_auth_free(a);
    free(c.bearer_token_file);
}

/* AWS from the environment: a signed POST form; the secret and session
 * token redacted; the session token a header; the hints read the answer. */
static void test_aws_env(void)
{
    clear_aws_env();
    struct gl_prom_cfg c = {0};
    c.auth.type = GL_AUTH_AWS_SIGV4;
    struct gl_auth *a = NULL;
    struct gl_error err = {0};
    /* no region anywhere */
    CHECK(gl_auth_new(&c, &a, &err) == GL_ERR_CONFIG && !a && strstr(err.msg, "no region"));
    setenv("AWS_REGION", "us east", 1);
    CHECK(gl_auth_new(&c, &a, &err) == GL_ERR_CONFIG && !a &&
          strstr(err.msg, "is not a region name"));
    setenv("AWS_REGION", "eu-west-1", 1);
    setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
    CHECK(gl_auth_new(&c, &a, &err) == GL_ERR_CONFIG && !a &&
          strstr(err.msg, "set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"));
    setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", 1);
    setenv("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEXAMPLE", 1);
    CHECK(gl_auth_new(&c, &a, &err) == GL_OK && a);
    char hdrs[512];
    CHECK(a && gl_auth_post_form(a) && applied_headers(a, hdrs, sizeof hdrs, &err));
    CHECK_STR(hdrs, "X-Scope-OrgID: tenant-1\nX-Amz-Security-Token: FwoGZXIvYXdzEXAMPLE\n");
    CHECK(a && strcmp(scrubbed(a, "key wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY and "
                                  "FwoGZXIvYXdzEXAMPLE"),
                      "key [redacted] and [redacted]") == 0);
    char hint[1024];
    if (a)
        gl_auth_hint(a, 403, "{\"message\":\"The request signature we calculated does not match\"}",
                     hint, sizeof hint);
    CHECK(a && strstr(hint, "prometheus.auth aws_sigv4 (credentials from the environment") &&
          strstr(hint, "the request signature was refused") && strstr(hint, "region (eu-west-1)"));
    if (a)
        gl_auth_hint(a, 403, "The security token included in the request is expired", hint,
                     sizeof hint);
    CHECK(a && strstr(hint, "the credentials have expired: AWS_SESSION_TOKEN from the "
                            "environment cannot be renewed here"));
    if (a)
        gl_auth_hint(a, 403, "User is not authorized to perform aps:QueryMetrics", hint,
                     sizeof hint);
    CHECK(a && strstr(hint, "lacks aps:QueryMetrics"));
    gl_auth_free(a);
    /* another client of the same providers names its own key */
    CHECK(gl_auth_new_named(&c, "outputs.s3.auth", &a, &err) == GL_OK && a);
    if (a)
        gl_auth_hint(a, 401, "", hint, sizeof hint);
    CHECK(a && strncmp(hint, "outputs.s3.auth aws_sigv4 (", 27) == 0);
    gl_auth_free(a);
    clear_aws_env();
}

/* The shared credentials file: the named profile's keys. */
static void test_aws_profile(void)
{
    clear_aws_env();
    struct gl_prom_cfg c = {0};
    c.auth.type = GL_AUTH_AWS_SIGV4;
    char region[] = "us-east-1", other[] = "other", nope[] = "nope";
    c.auth.region = region;
    c.auth.credentials_file = path_of("aws-credentials",
                                      "[default]\naws_access_key_id = AKIADEFAULT\n"
                                      "aws_secret_access_key = default-secret-1\n\n"
                                      "# comment\n[ other ]\n"
                                      "  aws_access_key_id=AKIAOTHER  \n"
                                      "aws_secret_access_key=other-secret-2\n"
                                      "aws_session_token = other-session-3\n");
    c.auth.profile = other;
    struct gl_auth *a = NULL;
    struct gl_error err = {0};
    CHECK(gl_auth_new(&c, &a, &err) == GL_OK && a);
    char hdrs[512];
    CHECK(a && applied_headers(a, hdrs, sizeof hdrs, &err));
    CHECK_STR(hdrs, "X-Scope-OrgID: tenant-1\nX-Amz-Security-Token: other-session-3\n");
    /* the other profile's secret is not this one's: not known, not redacted */
    CHECK(a && strcmp(scrubbed(a, "other-secret-2 default-secret-1"),
                      "[redacted] default-secret-1") == 0);
    gl_auth_free(a);
    c.auth.profile = nope;
    CHECK(gl_auth_new(&c, &a, &err) == GL_ERR_CONFIG && !a &&
          strstr(err.msg, "no AWS credentials") && strstr(err.msg, "profile nope"));
    free(c.auth.credentials_file);
    c.auth.credentials_file = path_of("aws-credentials",
                                      "[other]\naws_access_key_id = AKIA\n"
                                      "aws_secret_access_key = two words\n");
    c.auth.profile = other;
    CHECK(gl_auth_new(&c, &a, &err) == GL_ERR_CONFIG && !a &&
          strstr(err.msg, ":3: aws_secret_access_key of profile other holds spaces"));
    free(c.auth.credentials_file);
    c.auth.credentials_file = path_of("aws-credentials", "[other]\naws_access_key_id = AKIA\n");
    CHECK(gl_auth_new(&c, &a, &err) == GL_ERR_CONFIG && !a &&
          strstr(err.msg, "the profile lacks aws_access_key_id or aws_secret_access_key"));
    free(c.auth.credentials_file);
}

/* Per-block key files, read again before every request: a rotated secret
 * is used (and redacted) from the next request on; a file gone is an error
 * naming its key. */
static void test_aws_files(void)
{
    clear_aws_env();
    struct gl_prom_cfg c = {0};
    c.auth.type = GL_AUTH_AWS_SIGV4;
    char region[] = "us-east-1";
    c.auth.region = region;
    c.auth.access_key_id_file = path_of("key-id", "AKIAFILES\n");
    c.auth.secret_access_key_file = path_of("key-secret", "first-secret-value\n");
    struct gl_auth *a = NULL;
    struct gl_error err = {0};
    CHECK(gl_auth_new(&c, &a, &err) == GL_OK && a);
    char hdrs[512];
    CHECK(a && applied_headers(a, hdrs, sizeof hdrs, &err));
    CHECK_STR(hdrs, "X-Scope-OrgID: tenant-1\n"); /* no session token */
    tap_tmpfile("key-secret", "second-secret-value\n");
    CHECK(a && applied_headers(a, hdrs, sizeof hdrs, &err));
    /* both the old and the new secret are known now */
    CHECK(a && strcmp(scrubbed(a, "first-secret-value second-secret-value"),
                      "[redacted] [redacted]") == 0);
    unlink(c.auth.secret_access_key_file);
    CHECK(a && !applied_headers(a, hdrs, sizeof hdrs, &err) &&
          strstr(err.msg, "prometheus.auth.secret_access_key_file"));
    gl_auth_free(a);
    /* one file without the other */
    char *secret = c.auth.secret_access_key_file;
    c.auth.secret_access_key_file = NULL;
    CHECK(gl_auth_new(&c, &a, &err) == GL_ERR_CONFIG && !a &&
          strstr(err.msg, "needs access_key_id_file and secret_access_key_file"));
    free(secret);
    free(c.auth.access_key_id_file);
}

/* Providers whose tokens come from a service: set up without a request;
 * their configuration errors name what to set. */
static void test_temporary_setup(void)
{
    clear_aws_env();
    struct gl_prom_cfg c = {0};
    c.auth.type = GL_AUTH_AZURE;
    struct gl_auth *a = NULL;
    struct gl_error err = {0};
    CHECK(gl_auth_new(&c, &a, &err) == GL_ERR_CONFIG && !a &&
          strstr(err.msg, "AZURE_FEDERATED_TOKEN_FILE"));
    setenv("AZURE_FEDERATED_TOKEN_FILE", "/var/run/token", 1);
    CHECK(gl_auth_new(&c, &a, &err) == GL_ERR_CONFIG && !a &&
          strstr(err.msg, "needs the tenant and the client id"));
    setenv("AZURE_TENANT_ID", "bad/tenant", 1);
    setenv("AZURE_CLIENT_ID", "client-1", 1);
    CHECK(gl_auth_new(&c, &a, &err) == GL_ERR_CONFIG && !a &&
          strstr(err.msg, "the tenant id is not a GUID or domain name"));
    setenv("AZURE_TENANT_ID", "contoso.onmicrosoft.com", 1);
    CHECK(gl_auth_new(&c, &a, &err) == GL_OK && a);
    char hint[1024];
    if (a)
        gl_auth_hint(a, 403, "", hint, sizeof hint);
    CHECK(a && strstr(hint, "prometheus.auth azure (workload identity: client client-1, tenant "
                            "contoso.onmicrosoft.com)") &&
          strstr(hint, "Monitoring Data Reader") && strstr(hint, "client-1"));
    CHECK(a && !gl_auth_post_form(a));
    gl_auth_free(a);
    clear_aws_env();
    memset(&c, 0, sizeof c);
    c.auth.type = GL_AUTH_GCP;
    char url[] = "http://127.0.0.1:9";
    c.auth.metadata_url = url;
    CHECK(gl_auth_new(&c, &a, &err) == GL_OK && a);
    if (a)
        gl_auth_hint(a, 403, "", hint, sizeof hint);
    CHECK(a && strstr(hint, "prometheus.auth gcp (metadata server http://127.0.0.1:9, service "
                            "account default)") &&
          strstr(hint, "roles/monitoring.viewer"));
    gl_auth_free(a);
}

int main(void)
{
    gl_log_threshold = GL_LOG_ERROR;
    tap_tmp_begin();
    clear_aws_env();
    setenv("HOME", "/nonexistent", 1); /* no ~/.aws/credentials of the machine's */
    RUN(test_bearer_file);
    RUN(test_bad_secret_files);
    RUN(test_basic_file);
    RUN(test_patterns);
    RUN(test_excerpt);
    RUN(test_aws_env);
    RUN(test_aws_profile);
    RUN(test_aws_files);
    RUN(test_temporary_setup);
    tap_tmp_end();
    return TAP_END();
}
