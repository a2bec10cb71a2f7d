/*
 * config — the JSON configuration file (cJSON), validated key by key.
 *
 * Reads: the config file. Every key is documented in README.md; unknown
 * keys and wrong types are errors naming the key path (and file:line for
 * JSON syntax errors). Relative paths resolve against the file's folder.
 */
#ifndef GL_CONFIG_H
#define GL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basis.h"
#include "error.h"
#include "preset.h" /* the memory units and attributions the presets name */

enum gl_identity_mode { GL_IDENTITY_AUTO, GL_IDENTITY_EXPORTED, GL_IDENTITY_PLAIN };
/* collection.max_samples_in_memory by default: 1 M slots of 8 bytes, about
 * 8 MiB of parsed responses per unit; with the next unit's fetch, the
 * integration (about 30 bytes a slot) and the stored hour's per-pod sums
 * beside it, a collect stays under 256 MiB (README "Performance") */
#define GL_MAX_SAMPLES_IN_MEMORY_DEFAULT 1000000

/* The memory queries whose unit and labels the exporter schema declares
 * (README "Exporter schema"); GL_MQ_OTHER: every other dcgm query (compute). */
/* memory_source.device_query: its device series join the memory source's
 * matrix with this label (collect.c), read as device totals. */
#define GL_DEVICE_SERIES_LABEL "gpuledger_series"
#define GL_DEVICE_SERIES_VALUE "device"
enum gl_mq { GL_MQ_MEMORY, GL_MQ_FREE, GL_MQ_RESERVED, GL_MQ_LIMIT, GL_MQ_OTHER, GL_MQ_COUNT };
struct gl_query_schema {
    enum gl_mem_unit unit;
    char *uuid_label, *gpu_i_id_label, *hostname_label; /* set for every entry after load */
};
enum gl_idle_policy { GL_IDLE_PLATFORM, GL_IDLE_PROPORTIONAL, GL_IDLE_UNBILLED };
enum gl_split { GL_SPLIT_EVEN, GL_SPLIT_ALLOCATION };
enum gl_rule_kind { GL_RULE_POD_LABEL, GL_RULE_NAMESPACE_LABEL, GL_RULE_NAMESPACE_REGEX };

struct gl_team_rule {
    enum gl_rule_kind kind;
    char *label;    /* kube-state-metrics label name (label_team) */
    char *regex;    /* namespace_regex source */
    char *team;     /* replacement template ("$1"), regex rules only */
    void *code;     /* compiled pcre2_code * */
};

struct gl_team_info {
    char *id;
    char *name;
    char *cost_center; /* NULL when not given */
};

/* A configured key with a number or a string value. */
struct gl_kv {
    char *key;
    char *str;
    int64_t num;
};

struct gl_header {
    char *name;
    char *value;
};

/* A compiled PCRE2 pattern with its source (for messages). */
struct gl_pattern {
    char *source;
    void *code; /* pcre2_code * */
};

/* prometheus.auth (README "Managed Prometheus"): native authentication to
 * a managed Prometheus. A NULL string takes the environment's value (the
 * variable the platform injects: AWS_ROLE_ARN, AZURE_CLIENT_ID, ...) or the
 * default when the client starts (engine/source/auth.c). */
enum gl_auth_type { GL_AUTH_NONE, GL_AUTH_AWS_SIGV4, GL_AUTH_GCP, GL_AUTH_AZURE, GL_AUTH_BASIC };
enum gl_aws_source { GL_AWS_AUTO, GL_AWS_ENV, GL_AWS_WEB_IDENTITY, GL_AWS_POD_IDENTITY,
                     GL_AWS_PROFILE, GL_AWS_FILES };
struct gl_auth_cfg {
    enum gl_auth_type type;
    /* aws_sigv4 (Amazon Managed Service for Prometheus) */
    enum gl_aws_source aws_source;
    char *region, *service, *profile, *credentials_file, *role_arn, *web_identity_token_file,
        *role_session_name, *sts_endpoint;
    /* per-block access keys read from files (credentials "files"; README
     * "Per-block AWS key files"), and the EKS Pod Identity endpoint/token */
    char *access_key_id_file, *secret_access_key_file, *session_token_file,
        *container_credentials_uri, *container_authorization_token_file;
    /* gcp (Google Managed Service for Prometheus) */
    char *metadata_url, *service_account;
    /* azure (Azure Monitor managed service for Prometheus) */
    char *tenant_id, *client_id, *federated_token_file, *client_secret_file, *authority, *scope;
    /* basic (Grafana Cloud: instance id and an access-policy token file) */
    char *username, *password_file;
};

/* How to reach one Prometheus-compatible API. */
struct gl_prom_cfg {
    char *url;
    char *bearer_token_file; /* re-read by every run: service-account tokens rotate */
    char *basic_auth_file;   /* one line "user:password" */
    char *ca_file;
    char *client_cert_file;
    char *client_key_file;
    struct gl_header *headers;
    size_t nheaders;
    long timeout_s;
    int retries;
    int max_in_flight;
    /* integrity of the wire (README "Wire integrity") */
    int64_t max_response_bytes;  /* decompressed bytes of one response */
    long request_deadline_s;     /* all attempts and waits of one request */
    struct gl_pattern *accept_warnings; /* backend warnings accepted (logged) */
    size_t naccept_warnings;
    int compression;             /* enum gl_compression (README "Wire integrity") */
    struct gl_auth_cfg auth;
};

/* prometheus.compression: whether responses are asked compressed
 * (Accept-Encoding). auto: not over http:// (an in-cluster or loopback
 * backend, where compressing costs the backend more CPU than it saves
 * anything), compressed over https:// (a managed or remote service). */
enum gl_compression { GL_COMPRESS_AUTO, GL_COMPRESS_ON, GL_COMPRESS_OFF };

/* Whether c's requests ask for compressed responses. */
bool gl_prom_compressed(const struct gl_prom_cfg *c);

/* outputs.s3: the object store the period trees (and backups) go to. The
 * connection is a gl_prom_cfg so that auth.c reads its credentials:
 * conn.url = the endpoint, conn.auth = AWS SigV4 with service "s3". */
struct gl_s3_cfg {
    char *endpoint;  /* http(s)://host[:port], no trailing slash */
    char *bucket;
    char *prefix;    /* "" or "a/b" (no leading or trailing slash) */
    bool path_style; /* endpoint/bucket/key (default); false: bucket.host/key */
    struct gl_prom_cfg conn;
};

/* A cluster to collect: its own Prometheus or a shared backend (Thanos,
 * Mimir) with a label selector. */
struct gl_cluster {
    char *name;
    char *selector;    /* PromQL matchers for ${cluster_selector}, "" for none */
    bool name_from_label; /* single-cluster configs: a series' cluster label wins */
    struct gl_prom_cfg prom;
};

/* metrics (README "Its own metrics"): where `run` delivers its metrics. */
struct gl_metrics_cfg {
    char *pushgateway_url;   /* NULL: no push */
    char *job;               /* grouping key job, "gpuledger" */
    char *bearer_token_file; /* Pushgateway credentials (one of the two), re-read by every run */
    char *basic_auth_file;   /* one line "user:password" */
    char *ca_file;
    long timeout_s;
    char *textfile;          /* node-exporter textfile collector file, NULL: none */
};

/* One work counter: PromQL answering a counter per pod (namespace_label,
 * pod_label), integrated per hour (engine/collect/work.c). */
struct gl_work_counter {
    char *name, *unit, *query, *namespace_label, *pod_label;
};

struct gl_config {
    char *path;
    char *dir;

    struct gl_cluster *clusters;
    size_t nclusters;
    char *cluster_label; /* cluster label name (cluster.label) */

    /* collection */
    int64_t step;
    int chunk_hours;
    /* collection.max_samples_in_memory: the step slots (8 bytes; a series'
     * labels count as slots too) the responses of one unit may hold; more
     * splits the unit like an oversized response (collect.c) */
    int64_t max_samples_in_memory;
    /* collection.mode "server": series the backend can summarise exactly
     * per hour come as hourly subquery figures (collect.c) */
    bool server_mode;
    /* no silent shrink (docs/specification.md "Integrity"): the share, in millionths, of what an
     * hour stored that a re-collect may lose: each query's series and
     * samples, a device's attributed MiB·s, a team's MiB·s (collect.c);
     * run.allow_shrink lifts it */
    int64_t shrink_tolerance_ppm;
    bool run_allow_shrink;
    enum gl_identity_mode identity;
    char *hostname_label;
    char *queries_dir;
    /* queries_dir has allocation.promql (the joined query of before, or an
     * edited copy): it runs as it is, else the engine joins
     * alloc_requests.promql and pod_phase.promql itself */
    bool alloc_backend_join;

    /* memory source */
    char *mem_query;   /* query name: <queries_dir>/<name>.promql */
    enum gl_mem_unit mem_unit;
    enum gl_attribution attribution;
    enum gl_split split;
    char *uuid_label;       /* "UUID" (HAMi: "device_uuid") */
    char *gpu_i_id_label;   /* "GPU_I_ID" */
    char *namespace_label;  /* "namespace" (exported_<name> too) */
    char *pod_label;        /* "pod" */
    char *mem_limit_query;  /* HAMi: per-container memory limit, the pod's allocation on
                             * that device (same unit and labels), NULL: none */
    char *mem_device_query; /* the exporter's device memory series read beside a
                             * per-pod source (HAMi: "fb_used"): device used, and with
                             * FREE and RESERVED the capacity; NULL: none (device used
                             * = the source's own device series, else its pods' sum) */
    char *mem_preset;       /* memory_source.preset ("hami"), NULL: none */

    /* exporter schema (engine/base/preset.c): exporter.preset, then per query its
     * unit and labels (mem_unit == mq[GL_MQ_MEMORY].unit) */
    char *exporter_preset;  /* NULL: none */
    struct gl_query_schema mq[GL_MQ_COUNT];

    /* allocation */
    char **extra_resources;
    size_t nextra_resources;
    struct gl_kv *replicas;      /* node → replicas */
    size_t nreplicas;
    struct gl_kv *mig_profiles;  /* profile → MiB */
    size_t nmig_profiles;
    struct gl_kv *model_capacity;/* model → MiB */
    size_t nmodel_capacity;
    struct gl_kv *node_models;   /* node → model */
    size_t nnode_models;

    /* DRA (docs/specification.md "Arithmetic"): a claim named on a pod's series of a device allocates
     * that device to the pod */
    bool dra_enabled;
    char *dra_claim_name_label;      /* "dra_claim_name" */
    char *dra_claim_namespace_label; /* "dra_claim_namespace" */
    char *dra_mig_profile_label;     /* "dra_mig_profile" */
    char *dra_driver_label;          /* "dra_driver_name" */
    char *dra_pool_label;            /* "dra_pool_name" */
    char *dra_device_label;          /* "dra_device_name" */
    char *dra_mig_device_uuid_label; /* "dra_mig_device_uuid" */
    char *dra_driver;                /* the GPU driver whose claims count: "gpu.nvidia.com" */

    /* compute indicator: query names, in order of preference */
    char **compute_queries;
    size_t ncompute_queries;

    /* work counters (work.counters and work.presets' counters): the units
     * of work per pod whose cost unit-cost shows */
    struct gl_work_counter *work;
    size_t nwork;

    /* teams */
    struct gl_team_rule *rules;
    size_t nrules;
    char *default_team;
    char *default_cost_center; /* teams.default_cost_center: a team without its own; NULL */
    struct gl_team_info *teams;
    size_t nteams;

    /* idle and overhead (docs/specification.md "Attribution") */
    enum gl_idle_policy idle_policy;
    char *platform_team;

    /* run (the CronJob) */
    int64_t run_start;      /* first instant to collect, 0 = none (then run needs a watermark) */
    int64_t run_delay_s;    /* leave the newest minutes: samples may still arrive */
    int64_t run_repull_s;   /* re-pull this much before the watermark (late samples) */
    char *run_out_dir;

    /* delivery and retention (README "Delivery, retention and conventions") */
    struct gl_s3_cfg *s3;   /* outputs.s3, NULL when not configured */
    int retention_months;   /* retention.months: run prunes closed periods older; 0 = never */
    /* close.settle_hours (default 48): a period closes only once every
     * cluster's collection reaches this far past its end */
    int64_t close_settle_s;
    /* close.auto (default false): run closes each period past its settle
     * delay that is complete, and reports the ones it cannot close */
    bool close_auto;

    /* prices: a CSV file, or entries in the config (7 strings each, in the
     * CSV's column order; NULL for an empty optional field) */
    char *prices_file;
    char *(*price_entries)[7];
    size_t nprice_entries;

    /* billing */
    const struct gl_basis *basis; /* a row of gl_bases (basis.h), the first by default */
    char *currency;
    int minor_digits;
    char *account_id;
    char *account_name;
    char *provider;
    char *service_name;

    struct gl_metrics_cfg metrics;
    /* FOCUS version of the export: 12 (1.2, default) or 13 (1.3) */
    int focus_version;

    /* advise: the margin over a workload's peak a smaller allocation must
     * keep, in whole percent (advise.headroom, default 10) */
    int advise_headroom_pct;
};

/* Loads and validates path. On success *out is owned by the caller
 * (gl_config_free); on failure nothing is left to free. */
enum gl_status gl_config_load(const char *path, struct gl_config **out,
                              struct gl_error *err);
void gl_config_free(struct gl_config *c);

/* The catalogue entry of a team id, or NULL. */
const struct gl_team_info *gl_config_team(const struct gl_config *c, const char *id);

/* The cost center a team's rows carry: its catalogue entry's, else
 * teams.default_cost_center, else NULL (x_CostCenter empty: `check` lists
 * such teams and the FOCUS export warns). Borrowed from c. */
const char *gl_team_cost_center(const struct gl_config *c, const char *team);

/* The teams the config knows of without a cost center, in this order: the
 * catalogue's, the default team, the platform team (each once). Fills up to
 * max ids (borrowed from c) and returns how many there are. */
size_t gl_teams_without_cost_center(const struct gl_config *c, const char **ids, size_t max);

/* Reads <queries_dir>/<name>.promql with ${cluster_selector} (of cluster),
 * ${cluster_label} and ${gpu_resources} substituted. Returns a malloc'd
 * string. */
enum gl_status gl_config_query(const struct gl_config *c, const struct gl_cluster *cluster,
                               const char *name, char **out, struct gl_error *err);

/* The cluster named name, or NULL. */
const struct gl_cluster *gl_config_cluster(const struct gl_config *c, const char *name);

/* Looks a key up in a configured map; NULL when absent. */
const struct gl_kv *gl_kv_find(const struct gl_kv *kv, size_t n, const char *key);

/* kube-state-metrics label name for a Kubernetes label key. malloc'd. */
char *gl_ksm_label_name(const char *key);

/* True when s is printable ASCII (what FOCUS string columns accept). */
bool gl_is_ascii(const char *s);

/* 16 hex digits and NUL: the config file's bytes (read again) and the
 * build (version and commit: outputs of another build are rewritten once
 * after an upgrade, even when its version is the same), hashed. What `run`'s
 * output state and the closed-month checks compare to see a config edit. */
#define GL_CONFIG_FP 17
enum gl_status gl_config_fingerprint(const struct gl_config *c, char out[GL_CONFIG_FP],
                                     struct gl_error *err);

#endif
