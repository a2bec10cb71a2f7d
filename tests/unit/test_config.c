/* Unit tests: config loading and its error messages (engine/base/config.c),
 * and the query registry over a loaded config (engine/base/queryreg.c). */
#include "config.h"
#include "queryreg.h"
#include "tap.h"
#include "util.h"
#include "work_preset.h"

static enum gl_status load(const char *text, struct gl_config **c, struct gl_error *err)
{
    const char *path = tap_tmpfile("cfg.json", text);
    enum gl_status rc = gl_config_load(path, c, err);
    return rc;
}

static const char *minimal =
    "{\"prometheus\": {\"url\": \"http://127.0.0.1:9090/\"},\n"
    " \"prices\": {\"file\": \"prices.csv\"},\n"
    " \"billing\": {\"currency\": \"EUR\"}}\n";

/* The minimal config loaded (a check), NULL when it failed to load. */
static struct gl_config *load_minimal(void)
{
    struct gl_config *c = NULL;
    struct gl_error err = {0};
    CHECK(load(minimal, &c, &err) == GL_OK);
    return c;
}

static void test_minimal_defaults(void)
{
    struct gl_config *c = load_minimal();
    if (!c)
        return;
    CHECK_STR(c->clusters[0].prom.url, "http://127.0.0.1:9090"); /* trailing slash dropped */
    CHECK(c->step == 60);
    CHECK(c->chunk_hours == 6);
    CHECK_STR(c->default_team, "unallocated");
    CHECK_STR(c->cluster_label, "cluster");
    CHECK(c->minor_digits == 2);
    CHECK(c->prices_file[0] == '/'); /* resolved against the config's folder */
    gl_config_free(c);
}

static void test_unknown_key(void)
{
    struct gl_config *c = NULL;
    struct gl_error err = {0};
    CHECK(load("{\"prometheus\": {\"url\": \"http://x\", \"tiemout\": 3},"
               " \"prices\": {\"file\": \"p\"}, \"billing\": {\"currency\": \"USD\"}}",
               &c, &err) == GL_ERR_CONFIG);
    CHECK(c == NULL);
    CHECK(strstr(err.msg, "prometheus") && strstr(err.msg, "unknown key \"tiemout\""));
}

static void test_duplicate_key(void)
{
    struct gl_config *c = NULL;
    struct gl_error err = {0};
    CHECK(load("{\"prometheus\": {\"url\": \"http://x\"}, \"prices\": {\"file\": \"p\"},"
               " \"billing\": {\"currency\": \"USD\"}, \"billing\": {\"currency\": \"EUR\"}}",
               &c, &err) == GL_ERR_CONFIG);
    CHECK(strstr(err.msg, "duplicate key \"billing\"") != NULL);
}

static void test_syntax_error_line(void)
{
    struct gl_config *c = NULL;
    struct gl_error err = {0};
    CHECK(load("{\n  \"prometheus\": {\"url\": \"http://x\"},\n  \"prices\": {\"file\" \"p\"}\n}",
               &c, &err) == GL_ERR_CONFIG);
    CHECK(strstr(err.msg, ":3:") != NULL);
}

static void test_bad_values(void)
{
    struct gl_config *c = NULL;
    struct gl_error err = {0};
    CHECK(load("{\"prometheus\": {\"url\": \"http://x\"}, \"collection\": {\"step_seconds\": 7},"
               " \"prices\": {\"file\": \"p\"}, \"billing\": {\"currency\": \"USD\"}}",
               &c, &err) == GL_ERR_CONFIG);
    CHECK(strstr(err.msg, "collection.step_seconds") && strstr(err.msg, "3600"));
    CHECK(load("{\"prometheus\": {\"url\": \"http://x\"}, \"collection\": {\"chunk_hours\": 200},"
               " \"prices\": {\"file\": \"p\"}, \"billing\": {\"currency\": \"USD\"}}",
               &c, &err) == GL_ERR_CONFIG);
    CHECK(strstr(err.msg, "11000") != NULL);
    CHECK(load("{\"prometheus\": {\"url\": \"ftp://x\"}, \"prices\": {\"file\": \"p\"},"
               " \"billing\": {\"currency\": \"USD\"}}",
               &c, &err) == GL_ERR_CONFIG);
    CHECK(strstr(err.msg, "prometheus.url") != NULL);
    CHECK(load("{\"prometheus\": {\"url\": \"http://x\"}, \"prices\": {\"file\": \"p\"},"
               " \"billing\": {\"currency\": \"dollars\"}}",
               &c, &err) == GL_ERR_CONFIG);
    CHECK(strstr(err.msg, "billing.currency") != NULL);
    CHECK(load("{\"prometheus\": {\"url\": \"http://x\"}, \"prices\": {\"file\": \"p\"}}", &c,
               &err) == GL_ERR_CONFIG);
    CHECK(strstr(err.msg, "billing") && strstr(err.msg, "missing"));
    CHECK(load("{\"prometheus\": {\"url\": \"http://x\"}, \"prices\": {\"file\": \"p\"},"
               " \"billing\": {\"currency\": \"USD\"},"
               " \"teams\": {\"rules\": [{\"namespace_regex\": \"^team-(\"}]}}",
               &c, &err) == GL_ERR_CONFIG);
    CHECK(strstr(err.msg, "teams.rules[0]") && strstr(err.msg, "offset"));
    CHECK(load("{\"prometheus\": {\"url\": \"http://x\"}, \"prices\": {\"file\": \"p\"},"
               " \"billing\": {\"currency\": \"USD\"},"
               " \"teams\": {\"rules\": [{\"pod_label\": \"a\", \"namespace_label\": \"b\"}]}}",
               &c, &err) == GL_ERR_CONFIG);
    CHECK(strstr(err.msg, "exactly one") != NULL);
}

/* prometheus.compression: auto asks compressed responses over https only */
static void test_compression(void)
{
    static const struct {
        const char *url, *value;
        bool compressed;
    } cases[] = {
        {"http://127.0.0.1:9090", NULL, false},  {"https://prom.example", NULL, true},
        {"http://prom:9090", "\"auto\"", false}, {"https://prom.example", "\"auto\"", true},
        {"http://prom:9090", "\"on\"", true},    {"https://prom.example", "\"off\"", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{\"prometheus\": {\"url\": \"%s\"%s%s},"
                 " \"prices\": {\"file\": \"p\"}, \"billing\": {\"currency\": \"USD\"}}",
                 cases[i].url, cases[i].value ? ", \"compression\": " : "",
                 cases[i].value ? cases[i].value : "");
        struct gl_config *c = NULL;
        struct gl_error err = {0};
        CHECK(load(text, &c, &err) == GL_OK);
        CHECK(c && gl_prom_compressed(&c->clusters[0].prom) == cases[i].compressed);
        gl_config_free(c);
    }
    /* a cluster without a prometheus block shares the top level's (its
     * setting); a cluster's own block starts from the defaults, as for
     * every key (auto: by its own URL's scheme) */
    struct gl_config *c = NULL;
    struct gl_error err = {0};
    CHECK(load("{\"prometheus\": {\"url\": \"http://a\", \"compression\": \"on\"},"
               " \"clusters\": [{\"name\": \"x\"},"
               " {\"name\": \"y\", \"prometheus\": {\"url\": \"http://b\", \"compression\": \"off\"}},"
               " {\"name\": \"z\", \"prometheus\": {\"url\": \"http://c\"}},"
               " {\"name\": \"s\", \"prometheus\": {\"url\": \"https://d\"}}],"
               " \"prices\": {\"file\": \"p\"}, \"billing\": {\"currency\": \"USD\"}}",
               &c, &err) == GL_OK);
    CHECK(c && c->nclusters == 4 && gl_prom_compressed(&c->clusters[0].prom) &&
          !gl_prom_compressed(&c->clusters[1].prom) && !gl_prom_compressed(&c->clusters[2].prom) &&
          gl_prom_compressed(&c->clusters[3].prom));
    gl_config_free(c);
    c = NULL;
    CHECK(load("{\"prometheus\": {\"url\": \"http://x\", \"compression\": \"gzip\"},"
               " \"prices\": {\"file\": \"p\"}, \"billing\": {\"currency\": \"USD\"}}",
               &c, &err) == GL_ERR_CONFIG);
    CHECK(strstr(err.msg, "prometheus.compression") && strstr(err.msg, "\"gzip\"") &&
          strstr(err.msg, "auto, on, off"));
    CHECK(load("{\"prometheus\": {\"url\": \"http://x\", \"compression\": true},"
               " \"prices\": {\"file\": \"p\"}, \"billing\": {\"currency\": \"USD\"}}",
               &c, &err) == GL_ERR_CONFIG);
    CHECK(strstr(err.msg, "prometheus.compression") != NULL);
}

static void test_ksm_label_names(void)
{
    char *a = gl_ksm_label_name("costCenter");
    char *b = gl_ksm_label_name("app.kubernetes.io/team");
    char *d = gl_ksm_label_name("label_team");
    CHECK_STR(a, "label_cost_center");
    CHECK_STR(b, "label_app_kubernetes_io_team");
    CHECK_STR(d, "label_team");
    free(a);
    free(b);
    free(d);
}

/* The query names of a list, comma-separated, into buf. */
static const char *names_of(const struct gl_qslot *l, int n, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++)
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? "," : "", l[i].name);
    return buf;
}

/* The query registry (engine/base/queryreg.c) against the chunk's list as
 * the engine runs it: the memory source, FB_FREE, FB_RESERVED, the label
 * queries, the allocation, node labels, the compute queries, the limit and
 * device queries, pod_phase; and the order `check` probes them in. */
static void test_query_registry(void)
{
    struct gl_config *c = load_minimal();
    if (!c)
        return;
    for (int i = 0; i < GL_Q_COUNT; i++) /* the ids index the rows */
        CHECK(gl_qr_row((enum gl_qid)i)->id == (enum gl_qid)i);
    struct gl_qslot l[GL_QR_MAX];
    char buf[512];
    /* the engine joins the allocation; no limit or device query */
    c->alloc_backend_join = false;
    int n = gl_qr_list(c, l);
    CHECK_STR(names_of(l, n, buf, sizeof buf),
              "fb_used,fb_free,fb_reserved,pod_labels,namespace_labels,alloc_requests,"
              "node_labels,gr_engine_active,gpu_util,pod_phase");
    CHECK(n == 10);
    CHECK_STR(gl_qr_counts_name(c, l[5].row, l[5].k), "allocation");
    CHECK_STR(gl_qr_counts_name(c, l[9].row, l[9].k), "pod_phase");
    CHECK(gl_qr_pos(c, GL_Q_PHASE) == 9 && gl_qr_pos(c, GL_Q_ALLOCATION) == -1 &&
          gl_qr_pos(c, GL_Q_MEM_DEVICE) == -1 && gl_qr_pos(c, GL_Q_COMPUTE) == GL_QP_FIXED);
    n = gl_qr_check_list(c, l);
    CHECK_STR(names_of(l, n, buf, sizeof buf),
              "fb_used,fb_free,fb_reserved,pod_labels,namespace_labels,alloc_requests,"
              "node_labels,pod_phase,gr_engine_active,gpu_util");
    /* required: memory, capacity (FB_FREE without model capacities), the
     * allocation's requests and the pods' phases */
    for (int i = 0; i < n; i++)
        CHECK(gl_qr_required(c, &l[i]) == (i == 0 || i == 1 || i == 5 || i == 7));
    c->nmodel_capacity = 1;
    CHECK(!gl_qr_required(c, &l[1]));
    c->nmodel_capacity = 0;
    /* the backend joins it; a HAMi source with its limit and device queries */
    c->alloc_backend_join = true;
    free(c->mem_query);
    c->mem_query = gl_strdup("hami_memory");
    c->mem_limit_query = gl_strdup("hami_limit");
    c->mem_device_query = gl_strdup("fb_used");
    n = gl_qr_list(c, l);
    CHECK_STR(names_of(l, n, buf, sizeof buf),
              "hami_memory,fb_free,fb_reserved,pod_labels,namespace_labels,allocation,"
              "node_labels,gr_engine_active,gpu_util,hami_limit,fb_used");
    CHECK(gl_qr_counts_name(c, l[10].row, l[10].k) == NULL); /* counted as the source's */
    CHECK_STR(gl_qr_counts_name(c, l[5].row, l[5].k), "allocation");
    const enum gl_qid fixed[GL_QP_FIXED] = {GL_Q_MEMORY,     GL_Q_FREE,       GL_Q_RESERVED,
                                            GL_Q_POD_LABELS, GL_Q_NS_LABELS,  GL_Q_ALLOCATION,
                                            GL_Q_NODE_LABELS};
    for (int p = 0; p < GL_QP_FIXED; p++)
        CHECK(gl_qr_pos(c, fixed[p]) == p);
    c->alloc_backend_join = false;
    CHECK(gl_qr_pos(c, GL_Q_ALLOC_REQUESTS) == GL_QP_ALLOCATION);
    n = gl_qr_check_list(c, l);
    CHECK_STR(names_of(l, n, buf, sizeof buf),
              "hami_memory,fb_free,fb_reserved,pod_labels,namespace_labels,alloc_requests,"
              "node_labels,pod_phase,fb_used,gr_engine_active,gpu_util");
    /* a split hour: host-sharded device queries, the requests by node, the
     * kube-state-metrics label and phase queries kept whole */
    n = gl_qr_list(c, l);
    const enum gl_qshard sh[] = {GL_QSH_HOST, GL_QSH_HOST, GL_QSH_HOST, GL_QSH_KEPT,
                                 GL_QSH_KEPT, GL_QSH_NODE, GL_QSH_KEPT, GL_QSH_HOST,
                                 GL_QSH_HOST, GL_QSH_HOST, GL_QSH_HOST, GL_QSH_KEPT};
    CHECK(n == 12);
    for (int i = 0; i < n && i < 12; i++)
        CHECK(l[i].row->shard == sh[i]);
    /* server mode: the limit and device queries refuse it */
    CHECK(gl_qr_row(GL_Q_MEM_LIMIT)->srv_refusal && gl_qr_row(GL_Q_MEM_DEVICE)->srv_refusal);
    for (int i = 0; i < GL_Q_COUNT; i++)
        CHECK(!gl_qr_row((enum gl_qid)i)->srv_refusal ||
              i == GL_Q_MEM_LIMIT || i == GL_Q_MEM_DEVICE);
    gl_config_free(c);
}

/* billing.basis: the table's rows by name, the default the first ("used"),
 * and the names a wrong value is told. */
static void test_basis(void)
{
    struct gl_config *c = load_minimal();
    if (c) {
        CHECK_STR(c->basis->name, "used");
        CHECK(!c->basis->bills_reserved_unused && !c->basis->srv_refusal);
        gl_config_free(c);
    }
    c = NULL;
    struct gl_error err = {0};
    CHECK(load("{\"prometheus\": {\"url\": \"http://x\"}, \"prices\": {\"file\": \"p\"},"
               " \"billing\": {\"currency\": \"USD\", \"basis\": \"max\"}}",
               &c, &err) == GL_OK);
    if (c) {
        CHECK(c->basis == gl_basis_find("max"));
        CHECK(c->basis->bills_reserved_unused);
        CHECK_STR(c->basis->srv_refusal, "billing basis max");
        CHECK(strstr(c->basis->saving_means, "max(allocation, used)") != NULL);
        gl_config_free(c);
    }
    c = NULL;
    CHECK(load("{\"prometheus\": {\"url\": \"http://x\"}, \"prices\": {\"file\": \"p\"},"
               " \"billing\": {\"currency\": \"USD\", \"basis\": \"maximum\"}}",
               &c, &err) == GL_ERR_CONFIG);
    CHECK(c == NULL);
    CHECK(strstr(err.msg, "billing.basis") &&
          strstr(err.msg, "\"maximum\" is not one of: used, max"));
    CHECK(gl_basis_find("Max") == NULL && gl_basis_find(NULL) == NULL);
}

/* work.presets: each preset's counters, as its documentation names them,
 * and the names listed in messages (vllm 3, sglang 3, tgi 3, triton 2). */
static void test_work_presets(void)
{
    CHECK_STR(gl_work_preset_names(), "vllm, sglang, tgi, triton");
    static const struct {
        const char *preset;
        size_t n;
        const char *first_metric, *last_unit;
    } want[] = {
        {"vllm", 3, "vllm:prompt_tokens_total", "requests"},
        {"sglang", 3, "sglang:prompt_tokens_total", "requests"},
        {"tgi", 3, "tgi_request_input_length_sum", "requests"},
        {"triton", 2, "nv_inference_request_success", "inferences"},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        size_t n = 99;
        const struct gl_work_preset_counter *pc = gl_work_preset(want[i].preset, &n);
        CHECK(pc && n == want[i].n);
        if (!pc || n != want[i].n)
            continue;
        CHECK_STR(pc[0].metric, want[i].first_metric);
        CHECK_STR(pc[n - 1].unit, want[i].last_unit);
        for (size_t k = 0; k < n; k++)
            CHECK_STR(pc[k].preset, want[i].preset);
    }
    size_t n = 99;
    CHECK(gl_work_preset("vllm2", &n) == NULL && n == 0);
}

int main(void)
{
    RUN(test_minimal_defaults);
    RUN(test_unknown_key);
    RUN(test_duplicate_key);
    RUN(test_syntax_error_line);
    RUN(test_bad_values);
    RUN(test_ksm_label_names);
    RUN(test_compression);
    RUN(test_query_registry);
    RUN(test_basis);
    RUN(test_work_presets);
    return TAP_END();
}
