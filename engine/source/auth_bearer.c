/* auth_bearer — prometheus.bearer_token_file: a static token sent as
 * "Authorization: Bearer", read once per run. */
#include "auth_provider.h"

#include <stdio.h>
#include <string.h>

static bool chosen(const struct gl_prom_cfg *c)
{
    return c->bearer_token_file != NULL;
}

static enum gl_status setup(struct gl_auth *a, const struct gl_prom_cfg *c,
                            struct gl_error *err)
{
    a->prov = P_BEARER_FILE;
    snprintf(a->mode, sizeof a->mode, "prometheus.bearer_token_file");
    enum gl_status rc = auth_read_secret("prometheus.bearer_token_file", c->bearer_token_file,
                                         &a->cur.token, err);
    if (!rc && !auth_header_safe(a->cur.token))
        rc = gl_error_set(err, GL_ERR_CONFIG, "%s: the bearer token holds spaces or "
                          "control characters", c->bearer_token_file);
    auth_keep_secret(a, a->cur.token);
    return rc;
}

bool auth_apply_bearer(struct gl_auth *a, CURL *h, struct curl_slist **l)
{
    (void)h;
    size_t n = strlen(a->cur.token) + 8;
    char *v = gl_xcalloc(n, 1);
    snprintf(v, n, "Bearer %s", a->cur.token);
    bool ok = auth_add_header(l, "Authorization", v);
    auth_wipe_free(v);
    return ok;
}

static const char *hint(struct gl_auth *a, long status, const char *desc, char *buf, size_t n)
{
    (void)a, (void)desc, (void)buf, (void)n;
    return status == 401 ? "check that prometheus.bearer_token_file holds a token the server "
                           "accepts (it is read again by every run)"
                         : "the token is accepted but lacks permission to query";
}

const struct auth_method auth_bearer = {
    .name = "bearer_token_file", .chosen = chosen, .setup = setup,
    .apply = auth_apply_bearer, .hint = hint,
};
