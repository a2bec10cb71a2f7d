/* auth_gcp — prometheus.auth gcp: GKE Workload Identity, an OAuth2 access
 * token of the metadata server, renewed before it expires. */
#include "auth_provider.h"

#include <stdio.h>
#include <string.h>

/* GKE Workload Identity: the metadata server's access token. */
static enum gl_status fetch_gcp(struct gl_auth *a, struct cred *out, struct gl_error *err)
{
    struct curl_slist *hd = curl_slist_append(NULL, "Metadata-Flavor: Google");
    struct gl_buf body;
    gl_buf_init(&body);
    long status = 0;
    const char *what = "GKE metadata server token";
    enum gl_status rc = auth_service_call(a, what, a->endpoint, NULL, hd, &body, &status, err);
    curl_slist_free_all(hd);
    if (!rc && status != 200)
        rc = auth_service_refused(a, what, a->endpoint, false, status, body.data, body.len,
                                  "check that Workload Identity is enabled on the node pool, the "
                                  "Kubernetes service account is annotated with "
                                  "iam.gke.io/gcp-service-account and prometheus.auth."
                                  "service_account names it (or \"default\")", err);
    else if (!rc)
        rc = auth_take_access_token(a, what, &body, out, err);
    auth_body_free(&body);
    return rc;
}

static enum gl_status setup(struct gl_auth *a, const struct gl_prom_cfg *c, struct gl_error *err)
{
    (void)err;
    const struct gl_auth_cfg *ac = &c->auth;
    const char *host = auth_env("GCE_METADATA_HOST");
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
    a->fetch = fetch_gcp;
    snprintf(a->mode, sizeof a->mode, "prometheus.auth gcp (metadata server %.300s, service "
             "account %.100s)", base, sa);
    return GL_OK;
}

static bool chosen(const struct gl_prom_cfg *c)
{
    return c->auth.type == GL_AUTH_GCP;
}

static const char *hint(struct gl_auth *a, long status, const char *desc, char *buf, size_t n)
{
    (void)a, (void)desc, (void)buf, (void)n;
    return status == 401 ? "the metadata server's access token was refused: check that "
                           "prometheus.url is https://monitoring.googleapis.com/v1/projects/"
                           "PROJECT/location/global/prometheus and Workload Identity binds "
                           "this service account"
                         : "grant the Google service account roles/monitoring.viewer on the "
                           "project of prometheus.url";
}

const struct auth_method auth_gcp = {
    .name = "gcp", .chosen = chosen, .setup = setup, .apply = auth_apply_bearer, .hint = hint,
};
