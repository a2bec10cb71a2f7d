/* auth_basic — HTTP basic authentication: prometheus.basic_auth_file
 * (user:password in one file) or prometheus.auth basic (a username and a
 * password file: Grafana Cloud's instance ID and access-policy token). */
#include "auth_provider.h"

#include <stdio.h>
#include <string.h>

static bool chosen(const struct gl_prom_cfg *c)
{
    return c->basic_auth_file != NULL || c->auth.type == GL_AUTH_BASIC;
}

static enum gl_status setup(struct gl_auth *a, const struct gl_prom_cfg *c,
                            struct gl_error *err)
{
    enum gl_status rc;
    if (c->basic_auth_file) { /* the older key wins, as it always did */
        a->prov = P_BASIC_FILE;
        snprintf(a->mode, sizeof a->mode, "prometheus.basic_auth_file");
        rc = auth_read_secret("prometheus.basic_auth_file", c->basic_auth_file, &a->userpwd,
                              err);
        if (!rc && !strchr(a->userpwd, ':'))
            rc = gl_error_set(err, GL_ERR_CONFIG, "%s: basic_auth_file must hold user:password",
                              c->basic_auth_file);
        auth_keep_secret(a, a->userpwd);
        if (!rc)
            auth_keep_secret(a, strchr(a->userpwd, ':') + 1);
        return rc;
    }
    const struct gl_auth_cfg *ac = &c->auth;
    a->prov = P_BASIC;
    a->user = gl_strdup(ac->username);
    snprintf(a->mode, sizeof a->mode, "prometheus.auth basic (user %.100s, password "
             "file %.300s)", ac->username, ac->password_file);
    rc = auth_read_secret("prometheus.auth.password_file", ac->password_file, &a->cur.secret,
                          err);
    auth_keep_secret(a, a->cur.secret);
    return rc;
}

static bool apply(struct gl_auth *a, CURL *h, struct curl_slist **l)
{
    (void)l;
    curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
    if (a->prov == P_BASIC_FILE) {
        curl_easy_setopt(h, CURLOPT_USERPWD, a->userpwd);
    } else {
        curl_easy_setopt(h, CURLOPT_USERNAME, a->user);
        curl_easy_setopt(h, CURLOPT_PASSWORD, a->cur.secret);
    }
    return true;
}

static const char *hint(struct gl_auth *a, long status, const char *desc, char *buf, size_t n)
{
    (void)desc, (void)buf, (void)n;
    if (a->prov == P_BASIC_FILE)
        return "check the user:password in prometheus.basic_auth_file";
    return status == 401 ? "check prometheus.auth.username (Grafana Cloud: the stack's "
                           "Prometheus instance ID) and the access-policy token in "
                           "prometheus.auth.password_file (scope metrics:read, not expired "
                           "or revoked)"
                         : "the token's access policy lacks metrics:read on this stack";
}

const struct auth_method auth_basic = {
    .name = "basic", .chosen = chosen, .setup = setup, .apply = apply, .hint = hint,
};
