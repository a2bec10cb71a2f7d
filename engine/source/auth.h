/*
 * auth — the credentials of the Prometheus client (README "Managed
 * Prometheus").
 *
 * Reads: prometheus.bearer_token_file / basic_auth_file (static), and the
 * credentials of prometheus.auth: AWS (environment, shared credentials
 * file, IRSA web identity -> STS AssumeRoleWithWebIdentity, EKS Pod
 * Identity), the GKE metadata server, Microsoft Entra (workload identity
 * federated token or client secret), Grafana Cloud basic auth. Temporary
 * credentials are refreshed before they expire, inside one long
 * collection. Requests are signed by libcurl (CURLOPT_AWS_SIGV4), never
 * here. Every secret read or received is kept in a list that scrubs error
 * text before anything is shown (gl_auth_scrub).
 *
 * Thread safety: one gl_auth may be used from several threads (collect's
 * prefetch thread and the main one); each call takes the provider's lock.
 *
 * The providers are one file each behind a table, as curl's vauth/:
 * auth.c holds the table (providers[], in the order they are chosen) and
 * what they share (auth_provider.h, private to these files); auth_bearer.c,
 * auth_basic.c, auth_aws.c, auth_gcp.c and auth_azure.c one provider each.
 * To add a provider: a file auth_<method>.c defining its struct auth_method
 * row (which config selects it, its setup, how it sets a request's
 * credentials, its hint after a 401/403, and a fetch function when its
 * credentials expire), the row in providers[], the file in meson.build,
 * the config block it reads (base/config.c), and a loopback verifier in
 * tests/integration/authserver.py.
 */
#ifndef GL_AUTH_H
#define GL_AUTH_H

#include <curl/curl.h>
#include <stdbool.h>

#include "config.h"
#include "error.h"
#include "util.h"

struct gl_auth;

/* The credentials of c (a borrowed pointer: c must outlive the result).
 * Static secrets are read now; temporary credentials are fetched by the
 * first gl_auth_apply. A configuration that names no usable credentials
 * fails here (GL_ERR_CONFIG, naming the mode and the variables to set). On
 * success *out is owned by the caller (gl_auth_free). */
enum gl_status gl_auth_new(const struct gl_prom_cfg *c, struct gl_auth **out,
                           struct gl_error *err);
void gl_auth_free(struct gl_auth *a);

/* gl_auth_new for another client of the same providers (the object store:
 * outputs.s3): messages name label (a static string) instead of
 * "prometheus.auth". */
enum gl_status gl_auth_new_named(const struct gl_prom_cfg *c, const char *label,
                                 struct gl_auth **out, struct gl_error *err);

/* True when queries go as a POST form body (SigV4: the body is signed,
 * which avoids the query-string canonicalisation of older libcurl). */
bool gl_auth_post_form(const struct gl_auth *a);

/* Sets the credentials of the next request on h: refreshes temporary
 * credentials first when they are close to expiry, then sets the
 * authentication options and CURLOPT_HTTPHEADER to a new list made of base
 * (not modified) and the credential headers. *owned is that list: the
 * previous one is freed (wiped) here, the caller frees the last with
 * gl_auth_headers_free after its last transfer; handles duplicated from h
 * share it. Fails (GL_ERR_PROM, naming the mode and what to fix) when no
 * valid credentials can be had. */
enum gl_status gl_auth_apply(struct gl_auth *a, CURL *h, const struct curl_slist *base,
                             struct curl_slist **owned, struct gl_error *err);
void gl_auth_headers_free(struct curl_slist *l);

/* Completes a handle made by curl_easy_duphandle from one gl_auth_apply
 * prepared: libcurl 7.88 keeps CURLOPT_AWS_SIGV4 after the strings it
 * duplicates, so the copy would sign with a region and service guessed from
 * the host name (127.0.0.1 -> "0", "127"); it is set again here. */
void gl_auth_prepare_copy(struct gl_auth *a, CURL *copy);

/* Replaces every secret the provider has seen, and anything that looks
 * like a credential (a JWT, "Bearer x", "password=x", ...), in b by
 * [redacted]. */
void gl_auth_scrub(struct gl_auth *a, struct gl_buf *b);

/* text as one line for a message: scrubbed, printable ASCII, at most max
 * characters. */
void gl_auth_excerpt(struct gl_auth *a, const char *text, size_t len, size_t max, char *out,
                     size_t n);

/* What to say after an HTTP 401 or 403 of the backend: the mode and what to
 * check (desc: the scrubbed error body). "" for other statuses or when no
 * credentials are configured. */
void gl_auth_hint(struct gl_auth *a, long status, const char *desc, char *out, size_t n);

#endif
