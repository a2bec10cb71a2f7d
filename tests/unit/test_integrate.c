/* Unit tests: parsing a matrix and integrating one chunk (engine/parse.c,
 * engine/integrate.c, engine/teams.c), with expected values worked by hand. */
#include <math.h>

#include "config.h"
#include "integrate.h"
#include "parse.h"
#include "tap.h"

#define T0 1790985600 /* 2026-10-03T00:00:00Z */
#define DEV "\"UUID\":\"GPU-1\",\"modelName\":\"NVIDIA A100-SXM4-80GB\",\"Hostname\":\"n1\""

static struct gl_config *config(const char *extra)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"prometheus\": {\"url\": \"http://127.0.0.1:1\"},"
             " \"prices\": {\"file\": \"p.csv\"}, \"billing\": {\"currency\": \"USD\"},"
             " \"teams\": {\"rules\": [{\"pod_label\": \"team\"}, {\"namespace_label\": \"team\"},"
             " {\"namespace_regex\": \"^team-(.+)$\", \"team\": \"$1\"}]}%s}",
             extra);
    struct gl_config *c = NULL;
    struct gl_error err = {0};
    if (gl_config_load(tap_tmpfile("cfg.json", text), &c, &err))
        printf("# config: %s\n", err.msg);
    return c;
}

/* A matrix JSON from "labels|v0,v1,..." lines (v = '-' for no sample). */
static void matrix(struct gl_matrix *m, const char *const *series, size_t n, size_t nsteps)
{
    char *json = calloc(1, 65536);
    strcat(json, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[");
    for (size_t i = 0; i < n; i++) {
        const char *bar = strchr(series[i], '|');
        char labels[1024];
        snprintf(labels, sizeof labels, "%.*s", (int)(bar - series[i]), series[i]);
        sprintf(json + strlen(json), "%s{\"metric\":{%s},\"values\":[", i ? "," : "", labels);
        const char *v = bar + 1;
        int first = 1;
        for (size_t t = 0; t < nsteps && *v; t++) {
            const char *comma = strchr(v, ',');
            size_t len = comma ? (size_t)(comma - v) : strlen(v);
            if (!(len == 1 && v[0] == '-')) {
                sprintf(json + strlen(json), "%s[%d,\"%.*s\"]", first ? "" : ",",
                        T0 + (int)t * 60, (int)len, v);
                first = 0;
            }
            v = comma ? comma + 1 : v + len;
        }
        strcat(json, "]}");
    }
    strcat(json, "]}}");
    struct gl_error err = {0};
    if (gl_matrix_parse(json, strlen(json), T0, 60, nsteps, "test", m, &err))
        printf("# parse: %s\n", err.msg);
    free(json);
}

static int64_t sum(const struct gl_rollup *r, const char *pod, const char *team, int kind)
{
    int64_t total = 0;
    for (size_t i = 0; i < r->nslots; i++) {
        const struct gl_rollup_entry *e = &r->slots[i];
        if (!e->used || e->kind != kind)
            continue;
        if (pod && strcmp(gl_intern_str(r->strings, e->pod), pod) != 0)
            continue;
        if (team && strcmp(gl_intern_str(r->strings, e->team), team) != 0)
            continue;
        total += e->quantity;
    }
    return total;
}

static void test_parse_bad_samples(void)
{
    struct gl_matrix m;
    const char *s[] = {"\"__name__\":\"x\"," DEV "|1,NaN,+Inf,-5,abc,6"};
    matrix(&m, s, 1, 6);
    CHECK(m.nseries == 1);
    CHECK(m.bad_samples == 4);
    CHECK(m.samples == 2);
    CHECK(m.series[0].values[0] == 1 && isnan(m.series[0].values[1]) &&
          m.series[0].values[5] == 6);
    CHECK(strstr(m.bad[0], "NaN") && strstr(m.bad[2], "-5") && strstr(m.bad[3], "abc"));
    gl_matrix_free(&m);
    struct gl_error err = {0};
    const char *e = "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"boom\"}";
    CHECK(gl_matrix_parse(e, strlen(e), T0, 60, 4, "Q", &m, &err) == GL_ERR_PROM);
    CHECK(strstr(err.msg, "boom") && strstr(err.msg, "Q"));
    CHECK(gl_matrix_parse("{", 1, T0, 60, 4, "Q", &m, &err) == GL_ERR_PROM);
}

static void test_process_mode(void)
{
    struct gl_config *c = config("");
    /* Device series 3000; pod a 1000 listed twice (vgpu slots), pod b 1500;
     * exported_* identity on pod c of another MIG device. Two steps. */
    const char *used[] = {
        DEV "|3000,3000",
        DEV ",\"namespace\":\"team-x\",\"pod\":\"a\",\"vgpu\":\"1\"|1000,1000",
        DEV ",\"namespace\":\"team-x\",\"pod\":\"a\",\"vgpu\":\"2\"|1000,1000",
        DEV ",\"namespace\":\"team-y\",\"pod\":\"b\"|1500,-",
        "\"UUID\":\"GPU-2\",\"GPU_I_ID\":\"3\",\"modelName\":\"NVIDIA A30\","
        "\"namespace\":\"gpu-operator\",\"pod\":\"dcgm-exporter-1\","
        "\"exported_namespace\":\"team-z\",\"exported_pod\":\"c\"|200,200",
    };
    const char *free_[] = {DEV "|76000,77500"};
    const char *reserved[] = {DEV "|920,920"};
    const char *pl[] = {"\"namespace\":\"team-x\",\"pod\":\"a\",\"label_team\":\"ml\"|1,1"};
    const char *nl[] = {"\"namespace\":\"team-y\",\"label_team\":\"old\"|1,-",
                        "\"namespace\":\"team-y\",\"label_team\":\"new\"|-,1"};
    struct gl_matrix mu, mf, mr, mpl, mnl;
    matrix(&mu, used, 5, 2);
    matrix(&mf, free_, 1, 2);
    matrix(&mr, reserved, 1, 2);
    matrix(&mpl, pl, 1, 2);
    matrix(&mnl, nl, 2, 2);
    struct gl_chunk_input in = {.memory = &mu, .fb_free = &mf, .fb_reserved = &mr,
                                .pod_labels = &mpl, .ns_labels = &mnl};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, "a", "ml", GL_KIND_MEMORY_USED) == 2 * 1000 * 60); /* max, not sum */
    CHECK(sum(&r, "b", "old", GL_KIND_MEMORY_USED) == 1500 * 60);
    CHECK(sum(&r, "b", "new", GL_KIND_MEMORY_USED) == 0); /* missing sample = 0 */
    CHECK(sum(&r, "c", "z", GL_KIND_MEMORY_USED) == 2 * 200 * 60);
    CHECK(sum(&r, "dcgm-exporter-1", NULL, GL_KIND_MEMORY_USED) == 0);
    /* capacity = 3000 + free + 920 */
    CHECK(sum(&r, NULL, NULL, GL_KIND_CAPACITY) == (3000 + 76000 + 920 + 3000 + 77500 + 920) * 60);
    CHECK(sum(&r, NULL, NULL, GL_KIND_RESERVED) == 2 * 920 * 60);
    /* unattributed = 3000 - 2500, then 3000 - 1000 */
    CHECK(sum(&r, NULL, NULL, GL_KIND_UNATTRIBUTED) == (500 + 2000) * 60);
    /* idle = capacity - reserved - unattributed - pods = free */
    CHECK(sum(&r, NULL, NULL, GL_KIND_IDLE) == (76000 + 77500) * 60);
    gl_rollup_free(&r);
    /* mode "exported": plain labels are the exporter's own, never a workload */
    gl_config_free(c);
    c = config(", \"collection\": {\"identity_labels\": \"exported\"}");
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, "a", NULL, GL_KIND_MEMORY_USED) == 0);
    CHECK(sum(&r, "c", NULL, GL_KIND_MEMORY_USED) == 2 * 200 * 60);
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_matrix_free(&mf);
    gl_matrix_free(&mr);
    gl_matrix_free(&mpl);
    gl_matrix_free(&mnl);
    gl_config_free(c);
}

static void test_label_precedence(void)
{
    struct gl_config *c = config("");
    /* Two kube_pod_labels series for one pod at step 1: the newer wins. */
    const char *used[] = {DEV ",\"namespace\":\"team-q\",\"pod\":\"p\"|10,10,10"};
    const char *pl[] = {"\"namespace\":\"team-q\",\"pod\":\"p\",\"label_team\":\"first\"|1,1,1",
                        "\"namespace\":\"team-q\",\"pod\":\"p\",\"label_team\":\"second\"|-,1,1"};
    struct gl_matrix mu, mpl;
    matrix(&mu, used, 1, 3);
    matrix(&mpl, pl, 2, 3);
    struct gl_chunk_input in = {.memory = &mu, .pod_labels = &mpl};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, "p", "first", GL_KIND_MEMORY_USED) == 600);
    CHECK(sum(&r, "p", "second", GL_KIND_MEMORY_USED) == 1200);
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_matrix_free(&mpl);
    gl_config_free(c);
}

int main(void)
{
    RUN(test_parse_bad_samples);
    RUN(test_process_mode);
    RUN(test_label_precedence);
    return TAP_END();
}
