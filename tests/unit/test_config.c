/* Unit tests: config loading and its error messages (engine/base/config.c). */
#include "config.h"
#include "tap.h"

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

static void test_minimal_defaults(void)
{
    struct gl_config *c = NULL;
    struct gl_error err = {0};
    CHECK(load(minimal, &c, &err) == GL_OK);
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

int main(void)
{
    RUN(test_minimal_defaults);
    RUN(test_unknown_key);
    RUN(test_duplicate_key);
    RUN(test_syntax_error_line);
    RUN(test_bad_values);
    RUN(test_ksm_label_names);
    RUN(test_compression);
    return TAP_END();
}
