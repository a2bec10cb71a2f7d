/*
 * auth_provider — what auth.c and the provider files (auth_<method>.c)
 * share, private to source/: the state of a gl_auth, the row each provider
 * fills, and the common plumbing the providers call (secrets kept for
 * redaction, secret files, calls to a credential service). No module
 * outside source/auth*.c includes this header: they call auth.h.
 *
 * A provider is one file holding its row (struct auth_method), its setup
 * from the config block, and for credentials that expire the function that
 * fetches new ones (set in a->fetch by its setup); auth.c lists the rows in
 * the order they are chosen.
 */
#ifndef GL_AUTH_PROVIDER_H
#define GL_AUTH_PROVIDER_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <cjson/cJSON.h>
#include <pcre2.h>
#include <threads.h>

#include "auth.h"

/* Secrets kept for redaction: the live ones and the latest expired ones. */
#define SECRETS_KEPT 64
/* Patterns of credentials redacted from error text (credential_patterns of
 * auth.c, which checks the count). */
#define NPATTERNS 7

/* The variants of the providers, for their messages and hints. */
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

/* One set of credentials. */
struct cred {
    char *token;              /* a bearer token */
    char *key_id, *secret;    /* AWS access key, or basic auth user's password (secret) */
    char *session;            /* AWS session token */
    double issued, expiry;    /* wall-clock seconds (fractional); 0: does not expire */
};

/* One authentication method: a row of auth.c's table, defined in its own
 * file. */
struct auth_method {
    const char *name;
    /* The config selects this method (rows are tried in table order). */
    bool (*chosen)(const struct gl_prom_cfg *c);
    /* Sets a->prov and a->mode, reads static secrets now, and sets a->fetch
     * (credentials that expire) or a->reload (files read before each
     * request). */
    enum gl_status (*setup)(struct gl_auth *a, const struct gl_prom_cfg *c,
                            struct gl_error *err);
    /* Sets the credential options of h and appends the credential headers
     * to *l (a->cur is fresh); false when out of memory. Lock held. */
    bool (*apply)(struct gl_auth *a, CURL *h, struct curl_slist **l);
    /* What to fix after HTTP status (401 or 403; desc: the scrubbed body),
     * written into buf (n bytes) or returned as a constant. Lock held. */
    const char *(*hint)(struct gl_auth *a, long status, const char *desc, char *buf, size_t n);
    /* libcurl signs the requests (SigV4): queries go as a POST form, and
     * duplicated handles get CURLOPT_AWS_SIGV4 again. */
    bool sigv4;
};

struct gl_auth {
    const struct gl_prom_cfg *cfg; /* borrowed */
    const struct auth_method *m;
    enum provider prov;
    /* credentials that expire: fresh ones into out (lock held); NULL for static ones */
    enum gl_status (*fetch)(struct gl_auth *a, struct cred *out, struct gl_error *err);
    /* static credentials read again before every request; NULL when read once */
    enum gl_status (*reload)(struct gl_auth *a, struct gl_error *err);
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

/* The rows, one per provider file. */
extern const struct auth_method auth_bearer, auth_basic, auth_aws, auth_gcp, auth_azure;

/* ---- secrets ---- */

/* Zeroes s, then frees it. */
void auth_wipe_free(char *s);
void auth_cred_wipe(struct cred *c);
/* Remembers s for redaction (a copy; the oldest is forgotten). */
void auth_keep_secret(struct gl_auth *a, const char *s);
/* The environment variable name, NULL when unset or empty. */
const char *auth_env(const char *name);
/* A value that goes into an HTTP header or a credential: printable ASCII
 * without spaces. */
bool auth_header_safe(const char *s);
/* One line of secret text (token or user:password), trailing space removed;
 * what names it in messages. */
enum gl_status auth_read_secret(const char *what, const char *file, char **out,
                                struct gl_error *err);
/* The configuration names no usable credentials: "<mode>: need". */
enum gl_status auth_no_source(struct gl_auth *a, const char *need, struct gl_error *err);

/* ---- requests ---- */

/* Appends "name: value" to *l; false when out of memory. */
bool auth_add_header(struct curl_slist **l, const char *name, const char *value);
/* The apply of bearer tokens (a->cur.token), shared by every method that
 * ends in one. */
bool auth_apply_bearer(struct gl_auth *a, CURL *h, struct curl_slist **l);

/* ---- credential services ---- */

/* GET url (post NULL) or POST the form post, with headers; the answer's
 * status and body whatever the status. Connection failures, 5xx and 429
 * are tried three times. what names the service in messages. */
enum gl_status auth_service_call(struct gl_auth *a, const char *what, const char *url,
                                 const char *post, struct curl_slist *headers,
                                 struct gl_buf *body, long *status, struct gl_error *err);
/* POSTs form to a->endpoint with one header (accept), then wipes and frees
 * form (it holds a secret); status and body as auth_service_call. */
enum gl_status auth_post_form(struct gl_auth *a, const char *what, const char *accept,
                              struct gl_buf *form, struct gl_buf *body, long *status,
                              struct gl_error *err);
/* Wipes and frees a credential service's answer (it holds secrets). */
void auth_body_free(struct gl_buf *body);
/* s escaped for a form (malloc'd). */
char *auth_escape(const char *s);
/* A JSON credential answer, or NULL when the body is not JSON. */
cJSON *auth_parse_answer(const struct gl_buf *body);
/* The string member key of o, NULL when absent or not a string. */
const char *auth_json_str(const cJSON *o, const char *key);
/* An OAuth2 access token answer: {"access_token", "expires_in", ...}. */
enum gl_status auth_take_access_token(struct gl_auth *a, const char *what,
                                      const struct gl_buf *body, struct cred *out,
                                      struct gl_error *err);
/* The error of a credential service that answered status: the mode, the
 * service, the status, its scrubbed message and what to fix. */
enum gl_status auth_service_refused(struct gl_auth *a, const char *what, const char *url,
                                    bool post, long status, const char *msg, size_t len,
                                    const char *fix, struct gl_error *err);
/* A credential service's answer that lacks what it should hold. */
enum gl_status auth_bad_answer(struct gl_auth *a, const char *what, const char *url,
                               const char *why, struct gl_error *err);

#endif
