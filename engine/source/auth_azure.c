/* auth_azure — prometheus.auth azure: a Microsoft Entra access token from
 * the client credentials grant (AKS workload identity's federated token, or
 * a client secret), renewed before it expires. */
#include "auth_provider.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Microsoft Entra client credentials grant: a federated token (AKS
 * workload identity, re-read: the kubelet renews it) as client_assertion,
 * or a client secret. */
static enum gl_status fetch_azure(struct gl_auth *a, struct cred *out, struct gl_error *err)
{
    bool fed = a->prov == P_AZURE_FED;
    char *secret = NULL;
    const char *secret_what = fed ? "AZURE_FEDERATED_TOKEN_FILE (workload identity token)"
                                  : "prometheus.auth.client_secret_file";
    enum gl_status rc = auth_read_secret(secret_what, a->file, &secret, err);
    if (rc)
        return rc;
    auth_keep_secret(a, secret);
    char *es = auth_escape(secret), *cid = auth_escape(a->client_id);
    char *scope = auth_escape(a->scope);
    auth_wipe_free(secret);
    struct gl_buf form, body;
    gl_buf_init(&form);
    gl_buf_init(&body);
    gl_buf_printf(&form, "grant_type=client_credentials&client_id=%s&scope=%s", cid, scope);
    if (fed)
        gl_buf_printf(&form, "&client_assertion_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3A"
                      "client-assertion-type%%3Ajwt-bearer&client_assertion=%s", es);
    else
        gl_buf_printf(&form, "&client_secret=%s", es);
    auth_wipe_free(es);
    free(cid);
    free(scope);
    long status = 0;
    const char *what = "Microsoft Entra token endpoint";
    rc = auth_post_form(a, what, "Accept: application/json", &form, &body, &status, err);
    if (!rc && status != 200) {
        cJSON *root = auth_parse_answer(&body);
        const char *code = auth_json_str(root, "error");
        const char *d = auth_json_str(root, "error_description");
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
        rc = auth_service_refused(a, what, a->endpoint, true, status, text, strlen(text), fix, err);
        cJSON_Delete(root);
    } else if (!rc) {
        rc = auth_take_access_token(a, what, &body, out, err);
    }
    auth_body_free(&body);
    return rc;
}

static enum gl_status setup(struct gl_auth *a, const struct gl_prom_cfg *c, struct gl_error *err)
{
    const struct gl_auth_cfg *ac = &c->auth;
    const char *tenant = ac->tenant_id ? ac->tenant_id : auth_env("AZURE_TENANT_ID");
    const char *client = ac->client_id ? ac->client_id : auth_env("AZURE_CLIENT_ID");
    const char *fed = ac->client_secret_file ? NULL
                      : ac->federated_token_file ? ac->federated_token_file
                                                 : auth_env("AZURE_FEDERATED_TOKEN_FILE");
    const char *authority = ac->authority ? ac->authority : auth_env("AZURE_AUTHORITY_HOST");
    if (!authority)
        authority = "https://login.microsoftonline.com";
    a->prov = fed ? P_AZURE_FED : P_AZURE_SECRET;
    a->fetch = fetch_azure;
    a->file = gl_strdup(fed ? fed : ac->client_secret_file ? ac->client_secret_file : "");
    a->scope = gl_strdup(ac->scope ? ac->scope : "https://prometheus.monitor.azure.com/.default");
    snprintf(a->mode, sizeof a->mode, "prometheus.auth azure (%s: client %.100s, tenant %.100s)",
             fed ? "workload identity" : "client secret", client ? client : "(none)",
             tenant ? tenant : "(none)");
    if (!fed && !ac->client_secret_file)
        return auth_no_source(a, "no credential: AKS workload identity sets "
                              "AZURE_FEDERATED_TOKEN_FILE (label the pod "
                              "azure.workload.identity/use: \"true\"), or give "
                              "prometheus.auth.client_secret_file", err);
    if (!tenant || !client)
        return auth_no_source(a, "needs the tenant and the client id: AZURE_TENANT_ID and "
                              "AZURE_CLIENT_ID (workload identity sets both) or "
                              "prometheus.auth.tenant_id and client_id", err);
    for (const char *s = tenant; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr(".-", *s))
            return auth_no_source(a, "the tenant id is not a GUID or domain name", err);
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

static bool chosen(const struct gl_prom_cfg *c)
{
    return c->auth.type == GL_AUTH_AZURE;
}

static const char *hint(struct gl_auth *a, long status, const char *desc, char *buf, size_t n)
{
    (void)desc;
    if (status == 401)
        return "the Microsoft Entra token was refused: check prometheus.auth.scope "
               "(https://prometheus.monitor.azure.com/.default) and that prometheus.url is "
               "the Azure Monitor workspace's query endpoint";
    snprintf(buf, n, "assign the role Monitoring Data Reader on the Azure "
             "Monitor workspace to client %.100s", a->client_id ? a->client_id : "");
    return buf;
}

const struct auth_method auth_azure = {
    .name = "azure", .chosen = chosen, .setup = setup, .apply = auth_apply_bearer, .hint = hint,
};
