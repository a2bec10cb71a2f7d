/* Unit tests: parsing a matrix and integrating one chunk (engine/source/parse.c,
 * engine/attribute/integrate.c, engine/attribute/teams.c), with expected values worked by hand. */
#include <math.h>

#include "config.h"
#include "integrate.h"
#include "parse.h"
#include "tap.h"
#include "util.h"

#define T0 1790985600 /* 2026-10-03T00:00:00Z */
#define DEV "\"UUID\":\"GPU-1\",\"modelName\":\"NVIDIA A100-SXM4-80GB\",\"Hostname\":\"n1\""

static struct gl_config *config_billing(const char *billing, const char *extra)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"prometheus\": {\"url\": \"http://127.0.0.1:1\"},"
             " \"prices\": {\"file\": \"p.csv\"}, \"billing\": {%s},"
             " \"teams\": {\"rules\": [{\"pod_label\": \"team\"}, {\"namespace_label\": \"team\"},"
             " {\"namespace_regex\": \"^team-(.+)$\", \"team\": \"$1\"}]}%s}",
             billing, extra);
    struct gl_config *c = NULL;
    struct gl_error err = {0};
    if (gl_config_load(tap_tmpfile("cfg.json", text), &c, &err))
        printf("# config: %s\n", err.msg);
    return c;
}

static struct gl_config *config(const char *extra)
{
    return config_billing("\"currency\": \"USD\"", extra);
}

/* A matrix JSON from "labels|v0,v1,..." lines (v = '-' for no sample) on a
 * grid of step seconds; built in a gl_buf, so labels of any length fit. */
static void matrix_step(struct gl_matrix *m, const char *const *series, size_t n, size_t nsteps,
                        int step)
{
    struct gl_buf json;
    gl_buf_init(&json);
    gl_buf_puts(&json, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[");
    for (size_t i = 0; i < n; i++) {
        const char *bar = strchr(series[i], '|');
        gl_buf_printf(&json, "%s{\"metric\":{%.*s},\"values\":[", i ? "," : "",
                      (int)(bar - series[i]), series[i]);
        const char *v = bar + 1;
        int first = 1;
        for (size_t t = 0; t < nsteps && *v; t++) {
            const char *comma = strchr(v, ',');
            size_t len = comma ? (size_t)(comma - v) : strlen(v);
            if (!(len == 1 && v[0] == '-')) {
                gl_buf_printf(&json, "%s[%d,\"%.*s\"]", first ? "" : ",", T0 + (int)t * step,
                              (int)len, v);
                first = 0;
            }
            v = comma ? comma + 1 : v + len;
        }
        gl_buf_puts(&json, "]}");
    }
    gl_buf_puts(&json, "]}}");
    struct gl_error err = {0};
    if (gl_matrix_parse(json.data, json.len, T0, step, nsteps, "test", m, &err))
        printf("# parse: %s\n", err.msg);
    gl_buf_free(&json);
}

static void matrix(struct gl_matrix *m, const char *const *series, size_t n, size_t nsteps)
{
    matrix_step(m, series, n, nsteps, 60);
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
    const char *s[] = {"\"__name__\":\"x\"," DEV "|1,NaN,+Inf,-5,-Inf,6,1e18"};
    matrix(&m, s, 1, 7);
    CHECK(m.nseries == 1);
    CHECK(m.bad_samples == 5); /* 1e18 is implausible: skipped, never overflows */
    CHECK(m.samples == 2);
    CHECK(m.series[0].values[0] == 1 && isnan(m.series[0].values[1]) &&
          m.series[0].values[5] == 6);
    CHECK(strstr(m.bad[0], "NaN") && strstr(m.bad[2], "-5") && strstr(m.bad[3], "-Inf"));
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
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu, .fb_free = &mf, .fb_reserved = &mr,
                                .pod_labels = &mpl, .ns_labels = &mnl};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, "a", "ml", GL_KIND_MEMORY_USED) == 2 * 1000 * 60); /* max, not sum */
    CHECK(sum(&r, "b", "old", GL_KIND_MEMORY_USED) == 1500 * 60);
    CHECK(sum(&r, "b", "new", GL_KIND_MEMORY_USED) == 0); /* missing sample = 0 */
    CHECK(sum(&r, "c", "z", GL_KIND_MEMORY_USED) == 2 * 200 * 60);
    CHECK(sum(&r, "dcgm-exporter-1", NULL, GL_KIND_MEMORY_USED) == 0);
    /* capacity = 3000 + free + 920; the MIG instance has FB_USED only, so
     * its capacity is its used memory (missing FREE/RESERVED count 0) */
    CHECK(sum(&r, NULL, NULL, GL_KIND_CAPACITY) ==
          (3000 + 76000 + 920 + 3000 + 77500 + 920 + 2 * 200) * 60);
    CHECK(sum(&r, NULL, NULL, GL_KIND_RESERVED) == 2 * 920 * 60);
    /* unattributed = 3000 - 2500, then 3000 - 1000 */
    CHECK(sum(&r, NULL, NULL, GL_KIND_UNATTRIBUTED) == (500 + 2000) * 60);
    /* idle = capacity - reserved - unattributed - pods = free */
    CHECK(sum(&r, NULL, NULL, GL_KIND_IDLE) == (76000 + 77500) * 60);
    gl_rollup_free(&r);
    /* mode "exported": plain labels are the exporter's own, never a workload */
    gl_config_free(c);
    c = config(", \"collection\": {\"identity_labels\": \"exported\"}");
    in.cluster = &c->clusters[0];
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
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu, .pod_labels = &mpl};
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

static struct gl_config *config_with(const char *extra)
{
    return config(extra);
}

static void test_device_mode_split(void)
{
    struct gl_config *c = config_with(", \"memory_source\": {\"attribution\": \"device\"}");
    /* Seven pods each report a copy of the device's 1 MiB: 60 MiB·s split
     * 8 each plus 4 remainders to the first four by namespace/pod. */
    const char *used[7];
    char buf[7][256];
    for (int i = 0; i < 7; i++) {
        snprintf(buf[i], sizeof buf[i], DEV ",\"namespace\":\"ns\",\"pod\":\"p%d\"|1", 6 - i);
        used[i] = buf[i];
    }
    struct gl_matrix mu;
    matrix(&mu, used, 7, 1);
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, NULL, NULL, GL_KIND_MEMORY_USED) == 60);
    CHECK(sum(&r, "p0", NULL, GL_KIND_MEMORY_USED) == 9);
    CHECK(sum(&r, "p3", NULL, GL_KIND_MEMORY_USED) == 9);
    CHECK(sum(&r, "p4", NULL, GL_KIND_MEMORY_USED) == 8);
    CHECK(sum(&r, "p6", NULL, GL_KIND_MEMORY_USED) == 8);
    bool estimated = true;
    for (size_t i = 0; i < r.nslots; i++)
        if (r.slots[i].used && r.slots[i].kind == GL_KIND_MEMORY_USED && !r.slots[i].estimated)
            estimated = false;
    CHECK(estimated);
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_config_free(c);
}

static void test_allocation_and_anomalies(void)
{
    struct gl_config *c = config_billing("\"currency\": \"USD\", \"basis\": \"max\"", "");
    /* n1: one A100 (usable 80000), pod a requests 1 GPU and uses 1000.
     * n2: replicas 4, two A100s; pod b requests 1 replica and uses both
     * devices (excess devices); pod u uses memory with no request. */
#define N1 "\"UUID\":\"GPU-A\",\"modelName\":\"A100\",\"Hostname\":\"n1\""
#define N2A "\"UUID\":\"GPU-B\",\"modelName\":\"A100\",\"Hostname\":\"n2\""
#define N2B "\"UUID\":\"GPU-C\",\"modelName\":\"A100\",\"Hostname\":\"n2\""
    const char *used[] = {N1 "|1000", N1 ",\"namespace\":\"t\",\"pod\":\"a\"|1000",
                          N2A "|3000", N2A ",\"namespace\":\"t\",\"pod\":\"b\"|2000",
                          N2A ",\"namespace\":\"t\",\"pod\":\"u\"|1000",
                          N2B "|500", N2B ",\"namespace\":\"t\",\"pod\":\"b\"|500"};
    const char *free_[] = {N1 "|79000", N2A "|77000", N2B "|79500"};
    const char *reserved[] = {N1 "|920", N2A "|920", N2B "|920"};
    const char *alloc[] = {
        "\"namespace\":\"t\",\"pod\":\"a\",\"node\":\"n1\",\"resource\":\"nvidia_com_gpu\"|1",
        "\"namespace\":\"t\",\"pod\":\"b\",\"node\":\"n2\",\"resource\":\"nvidia_com_gpu\"|1"};
    const char *nodes[] = {"\"node\":\"n2\",\"label_nvidia_com_gpu_replicas\":\"4\"|1"};
    struct gl_matrix mu, mf, mr, ma, mn;
    matrix(&mu, used, 7, 1);
    matrix(&mf, free_, 3, 1);
    matrix(&mr, reserved, 3, 1);
    matrix(&ma, alloc, 2, 1);
    matrix(&mn, nodes, 1, 1);
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu, .fb_free = &mf, .fb_reserved = &mr,
                                .allocation = &ma, .node_labels = &mn};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, "a", NULL, GL_KIND_ALLOCATED) == 80000 * 60);
    CHECK(sum(&r, "a", NULL, GL_KIND_RESERVED_UNUSED) == 79000 * 60);
    CHECK(sum(&r, "a", NULL, GL_KIND_RESERVED_UNUSED_BILLED) == 79000 * 60);
    CHECK(sum(&r, "a", NULL, GL_KIND_ALLOCATED_GPU) == 60 * 1000000LL);
    /* b: one replica of 80000/4 = 20000 MiB; used 2500 on n2 */
    CHECK(sum(&r, "b", NULL, GL_KIND_ALLOCATED) == 20000 * 60);
    CHECK(sum(&r, "b", NULL, GL_KIND_RESERVED_UNUSED) == 17500 * 60);
    CHECK(sum(&r, "b", NULL, GL_KIND_ALLOCATED_GPU) == 60 * 1000000LL / 4);
    /* b holds 1 unit and uses two GPUs: the smaller one is the anomaly */
    CHECK(sum(&r, "b", NULL, GL_KIND_ANOMALY_EXCESS_DEVICES) == 500 * 60);
    CHECK(sum(&r, "u", NULL, GL_KIND_ANOMALY_UNALLOCATED) == 1000 * 60);
    CHECK(sum(&r, "u", NULL, GL_KIND_MEMORY_USED) == 1000 * 60); /* billed anyway */
    CHECK(sum(&r, "a", NULL, GL_KIND_ANOMALY_UNALLOCATED) == 0);
    /* idle on n1 = 79000 free, all taken by a's billed reserved-unused;
     * n2: idle 77000 + 79500 = 156500 minus b's 17500 */
    CHECK(sum(&r, NULL, NULL, GL_KIND_IDLE) == (156500 - 17500) * 60);
    CHECK(sum(&r, NULL, NULL, GL_KIND_EXCESS) == 0);
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_matrix_free(&mf);
    gl_matrix_free(&mr);
    gl_matrix_free(&ma);
    gl_matrix_free(&mn);
    gl_config_free(c);
}

static void test_copy_warning(void)
{
    struct gl_config *c = config("");
    /* Two pods each report the device's 5000 MiB for 12 steps in a source
     * declared "process": warned once; with different values: not. */
    const char *copies[] = {DEV "|5000,5000,5000,5000,5000,5000,5000,5000,5000,5000,5000,5000",
                            DEV ",\"namespace\":\"a\",\"pod\":\"x\"|5000,5000,5000,5000,5000,5000,5000,5000,5000,5000,5000,5000",
                            DEV ",\"namespace\":\"b\",\"pod\":\"y\"|5000,5000,5000,5000,5000,5000,5000,5000,5000,5000,5000,5000"};
    const char *real[] = {DEV "|5000,5000,5000,5000,5000,5000,5000,5000,5000,5000,5000,5000",
                          DEV ",\"namespace\":\"a\",\"pod\":\"x\"|3000,3000,3000,3000,3000,3000,3000,3000,3000,3000,3000,3000",
                          DEV ",\"namespace\":\"b\",\"pod\":\"y\"|2000,2000,2000,2000,2000,2000,2000,2000,2000,2000,2000,2000"};
    struct gl_matrix m1, m2;
    matrix(&m1, copies, 3, 12);
    matrix(&m2, real, 3, 12);
    struct gl_chunk_input in1 = {.cluster = &c->clusters[0], .memory = &m1},
                          in2 = {.cluster = &c->clusters[0], .memory = &m2};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in1, &r, &err) == GL_OK);
    CHECK(r.copy_warnings == 1);
    gl_rollup_free(&r);
    CHECK(gl_integrate(c, &in2, &r, &err) == GL_OK);
    CHECK(r.copy_warnings == 0);
    gl_rollup_free(&r);
    gl_matrix_free(&m1);
    gl_matrix_free(&m2);
    gl_config_free(c);
}

static void test_other_source_capacity(void)
{
    /* HAMi per-pod memory (bytes, device_uuid) beside dcgm's FB_FREE and
     * FB_RESERVED: capacity = the pods' used + FREE + RESERVED, idle = FREE. */
    struct gl_config *c = config(", \"memory_source\": {\"unit\": \"bytes\","
                                 " \"labels\": {\"uuid\": \"device_uuid\"}}");
    const char *used[] = {
        "\"device_uuid\":\"GPU-1\",\"namespace\":\"team-a\",\"pod\":\"x\"|1048576000",
        "\"device_uuid\":\"GPU-1\",\"namespace\":\"team-b\",\"pod\":\"y\"|2097152000"};
    const char *free_[] = {DEV "|70000"};
    const char *reserved[] = {DEV "|920"};
    struct gl_matrix mu, mf, mr;
    matrix(&mu, used, 2, 1);
    matrix(&mf, free_, 1, 1);
    matrix(&mr, reserved, 1, 1);
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu, .fb_free = &mf,
                                .fb_reserved = &mr};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, "x", NULL, GL_KIND_MEMORY_USED) == 1000 * 60);
    CHECK(sum(&r, "y", NULL, GL_KIND_MEMORY_USED) == 2000 * 60);
    CHECK(sum(&r, NULL, NULL, GL_KIND_CAPACITY) == (3000 + 70000 + 920) * 60);
    CHECK(sum(&r, NULL, NULL, GL_KIND_IDLE) == 70000 * 60);
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_matrix_free(&mf);
    gl_matrix_free(&mr);
    gl_config_free(c);
}

static void test_many_pods_one_device(void)
{
    /* 300 pods of 10 MiB on one device: every one billed (no fixed cap). */
    struct gl_config *c = config("");
    static char buf[300][160];
    const char *used[300];
    for (int i = 0; i < 300; i++) {
        snprintf(buf[i], sizeof buf[i], DEV ",\"namespace\":\"ns\",\"pod\":\"p%03d\"|10", i);
        used[i] = buf[i];
    }
    struct gl_matrix mu;
    matrix(&mu, used, 300, 1);
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, NULL, NULL, GL_KIND_MEMORY_USED) == 300 * 10 * 60);
    gl_rollup_free(&r);
    /* integrating the same bytes input twice gives the same result */
    gl_matrix_free(&mu);
    gl_config_free(c);
    c = config(", \"memory_source\": {\"unit\": \"bytes\"}");
    const char *bytes[] = {DEV ",\"namespace\":\"ns\",\"pod\":\"b\"|1048576000"};
    matrix(&mu, bytes, 1, 1);
    struct gl_chunk_input in2 = {.cluster = &c->clusters[0], .memory = &mu};
    CHECK(gl_integrate(c, &in2, &r, &err) == GL_OK);
    CHECK(sum(&r, "b", NULL, GL_KIND_MEMORY_USED) == 1000 * 60);
    gl_rollup_free(&r);
    CHECK(gl_integrate(c, &in2, &r, &err) == GL_OK);
    CHECK(sum(&r, "b", NULL, GL_KIND_MEMORY_USED) == 1000 * 60);
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_config_free(c);
}

/* "<prefix><n × ch><suffix>", malloc'd. */
static char *longstr(const char *prefix, char ch, size_t n, const char *suffix)
{
    struct gl_buf b;
    gl_buf_init(&b);
    gl_buf_puts(&b, prefix);
    for (size_t i = 0; i < n; i++)
        gl_buf_append(&b, &ch, 1);
    gl_buf_puts(&b, suffix);
    return b.data;
}

static void test_long_identities(void)
{
    /* Two pods named "worker" in namespaces of 1,601 characters differing in
     * the last one, on two nodes whose 601-character names differ in the
     * last one; a 300-character team label; a namespace "team-" + 300
     * characters mapped by ^team-(.+)$. Nothing may merge or be cut. */
    struct gl_config *c = config("");
    char *ns_a = longstr("", 'n', 1600, "a"), *ns_b = longstr("", 'n', 1600, "b");
    char *host_a = longstr("", 'h', 600, "a"), *host_b = longstr("", 'h', 600, "b");
    char *team_long = longstr("", 't', 300, ""), *ns_re = longstr("team-", 'r', 300, "");
    struct gl_buf lines[12];
    for (int i = 0; i < 12; i++)
        gl_buf_init(&lines[i]);
#define DEVA "\"UUID\":\"GPU-A\",\"modelName\":\"A100\",\"Hostname\":\"%s\""
#define DEVB "\"UUID\":\"GPU-B\",\"modelName\":\"A100\",\"Hostname\":\"%s\""
    gl_buf_printf(&lines[0], DEVA ",\"namespace\":\"%s\",\"pod\":\"worker\"|1000", host_a, ns_a);
    gl_buf_printf(&lines[1], DEVB ",\"namespace\":\"%s\",\"pod\":\"worker\"|3000", host_b, ns_b);
    gl_buf_printf(&lines[2], DEVA ",\"namespace\":\"ml\",\"pod\":\"trainer\"|5000", host_a);
    gl_buf_printf(&lines[3], DEVB ",\"namespace\":\"%s\",\"pod\":\"job\"|7000", host_b, ns_re);
    gl_buf_printf(&lines[4], DEVA "|70000", host_a);
    gl_buf_printf(&lines[5], DEVB "|70000", host_b);
    gl_buf_printf(&lines[6], "\"namespace\":\"%s\",\"pod\":\"worker\",\"label_team\":\"team-a\"|1",
                  ns_a);
    gl_buf_printf(&lines[7], "\"namespace\":\"%s\",\"pod\":\"worker\",\"label_team\":\"team-b\"|1",
                  ns_b);
    gl_buf_printf(&lines[8], "\"namespace\":\"ml\",\"pod\":\"trainer\",\"label_team\":\"%s\"|1",
                  team_long);
    gl_buf_printf(&lines[9], "\"namespace\":\"%s\",\"pod\":\"worker\",\"node\":\"%s\","
                  "\"resource\":\"nvidia_com_gpu\"|1", ns_a, host_a);
    gl_buf_printf(&lines[10], "\"namespace\":\"%s\",\"pod\":\"worker\",\"node\":\"%s\","
                  "\"resource\":\"nvidia_com_gpu\"|1", ns_b, host_b);
    const char *used[] = {lines[0].data, lines[1].data, lines[2].data, lines[3].data};
    const char *free_[] = {lines[4].data, lines[5].data};
    const char *pl[] = {lines[6].data, lines[7].data, lines[8].data};
    const char *alloc[] = {lines[9].data, lines[10].data};
    struct gl_matrix mu, mf, mpl, ma;
    matrix(&mu, used, 4, 1);
    matrix(&mf, free_, 2, 1);
    matrix(&mpl, pl, 3, 1);
    matrix(&ma, alloc, 2, 1);
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu, .fb_free = &mf,
                                .pod_labels = &mpl, .allocation = &ma};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, "worker", "team-a", GL_KIND_MEMORY_USED) == 1000 * 60);
    CHECK(sum(&r, "worker", "team-b", GL_KIND_MEMORY_USED) == 3000 * 60);
    CHECK(sum(&r, "trainer", team_long, GL_KIND_MEMORY_USED) == 5000 * 60);
    CHECK(sum(&r, "job", ns_re + 5, GL_KIND_MEMORY_USED) == 7000 * 60);
    /* allocation: one GPU each on its own node (usable = 1000 + 5000 + 70000
     * on A, 3000 + 7000 + 70000 on B), never one node's pseudo-device */
    CHECK(sum(&r, "worker", "team-a", GL_KIND_ALLOCATED) == 76000 * 60);
    CHECK(sum(&r, "worker", "team-b", GL_KIND_ALLOCATED) == 80000 * 60);
    int pseudo = 0, ns_ok = 0;
    for (size_t d = 0; d < r.ndevices; d++)
        if (r.devices[d].pseudo) {
            const char *h = gl_intern_str(r.strings, r.devices[d].hostname);
            pseudo++;
            CHECK(strcmp(h, host_a) == 0 || strcmp(h, host_b) == 0);
        }
    CHECK(pseudo == 2);
    for (size_t i = 0; i < r.nslots; i++) {
        const struct gl_rollup_entry *e = &r.slots[i];
        if (!e->used || e->kind != GL_KIND_MEMORY_USED)
            continue;
        const char *ns = gl_intern_str(r.strings, e->ns);
        const char *team = gl_intern_str(r.strings, e->team);
        ns_ok += (strcmp(team, "team-a") == 0 && strcmp(ns, ns_a) == 0) ||
                 (strcmp(team, "team-b") == 0 && strcmp(ns, ns_b) == 0);
    }
    CHECK(ns_ok == 2); /* the namespaces are stored whole, each with its own team */
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_matrix_free(&mf);
    gl_matrix_free(&mpl);
    gl_matrix_free(&ma);
    for (int i = 0; i < 12; i++)
        gl_buf_free(&lines[i]);
    char *f[] = {ns_a, ns_b, host_a, host_b, team_long, ns_re};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        free(f[i]);
    gl_config_free(c);
#undef DEVA
#undef DEVB
}

static void test_overflow_is_an_error(void)
{
    struct gl_config *c = config("");
    struct gl_rollup r;
    struct gl_error err = {0};
    /* Ten pods of 2^48 - 1 MiB on one device for one 3600 s step: each pod's
     * 1.01e18 MiB·s fits, their sum does not. */
    static char buf[10][160];
    const char *used[10];
    for (int i = 0; i < 10; i++) {
        snprintf(buf[i], sizeof buf[i], DEV ",\"namespace\":\"ns\",\"pod\":\"p%d\"|281474976710655",
                 i);
        used[i] = buf[i];
    }
    struct gl_matrix mu;
    matrix_step(&mu, used, 10, 1, 3600);
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_ERR_PROM);
    CHECK(strstr(err.msg, "overflow") && strstr(err.msg, "GPU-1") && strstr(err.msg, "n1") &&
          strstr(err.msg, "2026-10-03T00:00:00Z"));
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    /* One such pod for four hours: every hour's 1.01e18 MiB·s is exact. */
    const char *four[] = {DEV ",\"namespace\":\"ns\",\"pod\":\"p0\"|281474976710655,"
                          "281474976710655,281474976710655,281474976710655"};
    matrix_step(&mu, four, 1, 4, 3600);
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    int hours = 0;
    for (size_t i = 0; i < r.nslots; i++)
        if (r.slots[i].used && r.slots[i].kind == GL_KIND_MEMORY_USED) {
            CHECK(r.slots[i].quantity == 281474976710655LL * 3600);
            hours++;
        }
    CHECK(hours == 4);
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    /* A request of 2^40 GPUs: 2^40 × 80000 MiB × 60 s per step. */
    const char *used2[] = {DEV ",\"namespace\":\"ns\",\"pod\":\"many\"|1000", DEV "|1000"};
    const char *free_[] = {DEV "|79000"};
    const char *alloc[] = {"\"namespace\":\"ns\",\"pod\":\"many\",\"node\":\"n1\","
                           "\"resource\":\"nvidia_com_gpu\"|1099511627776"};
    struct gl_matrix mf, ma;
    matrix(&mu, used2, 2, 1);
    matrix(&mf, free_, 1, 1);
    matrix(&ma, alloc, 1, 1);
    struct gl_chunk_input in2 = {.cluster = &c->clusters[0], .memory = &mu, .fb_free = &mf,
                                 .allocation = &ma};
    CHECK(gl_integrate(c, &in2, &r, &err) == GL_ERR_PROM);
    CHECK(strstr(err.msg, "overflow") && strstr(err.msg, "ns/many") && strstr(err.msg, "n1") &&
          strstr(err.msg, "1099511627776"));
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_matrix_free(&mf);
    gl_matrix_free(&ma);
    gl_config_free(c);
}

/* Σ of kind on the device UUID[/GPU_I_ID] (device rows and pod rows). */
static int64_t sum_dev(const struct gl_rollup *r, const char *uuid, const char *gid, int kind)
{
    int64_t total = 0;
    for (size_t i = 0; i < r->nslots; i++) {
        const struct gl_rollup_entry *e = &r->slots[i];
        const struct gl_chunk_device *d = &r->devices[e->device];
        if (e->used && e->kind == kind && strcmp(gl_intern_str(r->strings, d->uuid), uuid) == 0 &&
            strcmp(gl_intern_str(r->strings, d->gpu_i_id), gid) == 0)
            total += e->quantity;
    }
    return total;
}

#define DEV2 "\"UUID\":\"GPU-2\",\"modelName\":\"NVIDIA A100-SXM4-80GB\",\"Hostname\":\"n1\""

static void test_dra_claims(void)
{
    /* Device copies (DRA outside per-process mode), claim labels renamed.
     * GPU-1: p1, p2, p3 on claim c1, each a copy of 9000 MiB; FREE 72001,
     * RESERVED 919: capacity 81920, usable 81001 MiB = 27000 × 3 + 1: p1
     * (first by namespace/pod) gets the remainder MiB, each share × 100 s
     * (Arithmetic: the MiB split, not the MiB·s). GPU-2: q uses 500 MiB with
     * no claim and no request. */
    struct gl_config *c = config(", \"memory_source\": {\"attribution\": \"device\"},"
                                 " \"dra\": {\"labels\": {\"claim_name\": \"claim\","
                                 " \"claim_namespace\": \"claim_ns\"}}");
    const char *used[] = {
        DEV ",\"namespace\":\"team-d\",\"pod\":\"p1\",\"claim\":\"c1\",\"claim_ns\":\"team-d\"|9000,9000",
        DEV ",\"namespace\":\"team-d\",\"pod\":\"p2\",\"claim\":\"c1\",\"claim_ns\":\"team-d\"|9000,9000",
        DEV ",\"namespace\":\"team-d\",\"pod\":\"p3\",\"claim\":\"c1\",\"claim_ns\":\"team-d\"|9000,9000",
        DEV2 ",\"namespace\":\"team-e\",\"pod\":\"q\"|500,500",
        DEV2 "|500,500",
    };
    const char *free_[] = {DEV "|72001,72001", DEV2 "|80500,80500"};
    const char *res[] = {DEV "|919,919", DEV2 "|920,920"};
    struct gl_matrix mu, mf, mr;
    matrix_step(&mu, used, 5, 2, 100);
    matrix_step(&mf, free_, 2, 2, 100);
    matrix_step(&mr, res, 2, 2, 100);
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu, .fb_free = &mf,
                                .fb_reserved = &mr};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, "p1", NULL, GL_KIND_ALLOCATED) == 2 * 27001 * 100);
    CHECK(sum(&r, "p2", NULL, GL_KIND_ALLOCATED) == 2 * 27000 * 100);
    CHECK(sum(&r, "p3", NULL, GL_KIND_ALLOCATED) == 2 * 27000 * 100);
    /* 100 s × 10^6 µGPU-s split three ways: 33333334, 33333333, 33333333 */
    CHECK(sum(&r, "p1", NULL, GL_KIND_ALLOCATED_GPU) == 2 * 33333334);
    CHECK(sum(&r, "p3", NULL, GL_KIND_ALLOCATED_GPU) == 2 * 33333333);
    /* used: 9000 × 100 split 3 ways = 300000 each: waste = share − used */
    CHECK(sum(&r, "p1", NULL, GL_KIND_RESERVED_UNUSED) == 2 * (2700100 - 300000));
    CHECK(sum(&r, NULL, NULL, GL_KIND_ANOMALY_UNALLOCATED) == 2 * 500 * 100);
    CHECK(sum(&r, "q", NULL, GL_KIND_ANOMALY_UNALLOCATED) == 2 * 500 * 100);
    gl_rollup_free(&r);
    /* dra.enabled false: the claims are ignored, every pod is unallocated */
    gl_config_free(c);
    c = config(", \"memory_source\": {\"attribution\": \"device\"}, \"dra\": {\"enabled\": false,"
               " \"labels\": {\"claim_name\": \"claim\"}}");
    in.cluster = &c->clusters[0];
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, NULL, NULL, GL_KIND_ALLOCATED) == 0);
    CHECK(sum(&r, "p2", NULL, GL_KIND_ANOMALY_UNALLOCATED) == 2 * 300000);
    gl_rollup_free(&r);
    /* the default label names do not match these series: same as disabled */
    gl_config_free(c);
    c = config(", \"memory_source\": {\"attribution\": \"device\"}");
    in.cluster = &c->clusters[0];
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, NULL, NULL, GL_KIND_ALLOCATED) == 0);
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_matrix_free(&mf);
    gl_matrix_free(&mr);
    gl_config_free(c);
    /* a bad dra block names its key */
    CHECK(config(", \"dra\": {\"enabled\": 1}") == NULL);
    CHECK(config(", \"dra\": {\"labels\": {\"claim\": \"x\"}}") == NULL);
}

#define DEV3 "\"UUID\":\"GPU-3\",\"modelName\":\"NVIDIA A100-SXM4-80GB\",\"Hostname\":\"n1\""

static void test_dra_device_placement(void)
{
    /* Per-process memory, basis max, one node n1. GPU-1: capacity 98304
     * (USED 70000 + FREE 27305 + RESERVED 999), usable 97305; claim c1 of
     * p1 and p2 (team-d): 97305 MiB = 48652 × 2 + 1, so p1 48653 and p2
     * 48652 MiB a step. p1 uses 60000 (over its share: no reserved-unused),
     * p2 10000: 38652 MiB reserved-unused billed, of which GPU-1's idle
     * (98304 − 999 − 70000 = 27305) covers 27305 and 11347 are GPU-1's
     * excess. GPU-2 (no claim, no pod) keeps its idle 97305. GPU-3: pod n
     * (no request) uses 1000 MiB under a claim of another DRA driver: the
     * claim allocates nothing, n is unallocated use. */
    struct gl_config *c = config_billing("\"currency\": \"USD\", \"basis\": \"max\"", "");
    const char *used[] = {
        DEV "|70000",
        DEV ",\"namespace\":\"team-d\",\"pod\":\"p1\",\"dra_claim_name\":\"c1\","
            "\"dra_driver_name\":\"gpu.nvidia.com\"|60000",
        DEV ",\"namespace\":\"team-d\",\"pod\":\"p2\",\"dra_claim_name\":\"c1\","
            "\"dra_driver_name\":\"gpu.nvidia.com\"|10000",
        DEV2 "|0",
        DEV3 "|1000",
        DEV3 ",\"namespace\":\"team-n\",\"pod\":\"n\",\"dra_claim_name\":\"port\","
             "\"dra_driver_name\":\"nic.example.com\"|1000",
    };
    const char *free_[] = {DEV "|27305", DEV2 "|97305", DEV3 "|96305"};
    const char *res[] = {DEV "|999", DEV2 "|999", DEV3 "|999"};
    struct gl_matrix mu, mf, mr;
    matrix(&mu, used, 6, 1);
    matrix(&mf, free_, 3, 1);
    matrix(&mr, res, 3, 1);
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu, .fb_free = &mf,
                                .fb_reserved = &mr};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, "p1", NULL, GL_KIND_ALLOCATED) == 48653 * 60);
    CHECK(sum(&r, "p2", NULL, GL_KIND_ALLOCATED) == 48652 * 60);
    CHECK(sum(&r, "p1", NULL, GL_KIND_RESERVED_UNUSED_BILLED) == 0);
    CHECK(sum(&r, "p2", NULL, GL_KIND_RESERVED_UNUSED_BILLED) == 38652 * 60);
    /* every allocation row on the claimed device: no node pseudo-device */
    CHECK(sum_dev(&r, "GPU-1", "", GL_KIND_ALLOCATED) == (48653 + 48652) * 60);
    CHECK(sum_dev(&r, "GPU-1", "", GL_KIND_RESERVED_UNUSED_BILLED) == 38652 * 60);
    for (size_t d = 0; d < r.ndevices; d++)
        CHECK(!r.devices[d].pseudo);
    CHECK(sum_dev(&r, "GPU-1", "", GL_KIND_DEVICE_RU_BILLED) == 38652 * 60);
    CHECK(sum_dev(&r, "GPU-1", "", GL_KIND_EXCESS) == 11347 * 60);
    CHECK(sum_dev(&r, "GPU-1", "", GL_KIND_IDLE) == 0);
    int64_t cap = sum_dev(&r, "GPU-1", "", GL_KIND_CAPACITY);
    CHECK(cap + sum_dev(&r, "GPU-1", "", GL_KIND_EXCESS) ==
          sum_dev(&r, "GPU-1", "", GL_KIND_MEMORY_USED) +
              sum_dev(&r, "GPU-1", "", GL_KIND_DEVICE_RU_BILLED) +
              sum_dev(&r, "GPU-1", "", GL_KIND_RESERVED) +
              sum_dev(&r, "GPU-1", "", GL_KIND_UNATTRIBUTED) +
              sum_dev(&r, "GPU-1", "", GL_KIND_IDLE));
    /* the unclaimed GPU keeps its idle; no excess anywhere else */
    CHECK(sum_dev(&r, "GPU-2", "", GL_KIND_IDLE) == 97305 * 60);
    CHECK(sum_dev(&r, "GPU-2", "", GL_KIND_DEVICE_RU_BILLED) == 0);
    CHECK(sum(&r, NULL, NULL, GL_KIND_EXCESS) == 11347 * 60);
    /* another driver's claim: no allocation, unallocated use */
    CHECK(sum(&r, "n", NULL, GL_KIND_ALLOCATED) == 0);
    CHECK(sum(&r, "n", NULL, GL_KIND_ANOMALY_UNALLOCATED) == 1000 * 60);
    CHECK(sum_dev(&r, "GPU-3", "", GL_KIND_IDLE) == 96305 * 60);
    gl_rollup_free(&r);
    gl_config_free(c);
    /* dra.driver names the driver whose claims count */
    c = config_billing("\"currency\": \"USD\", \"basis\": \"max\"",
                       ", \"dra\": {\"driver\": \"nic.example.com\"}");
    CHECK(c != NULL);
    in.cluster = c ? &c->clusters[0] : NULL;
    CHECK(c && gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(c && sum(&r, "n", NULL, GL_KIND_ALLOCATED) == 97305 * 60); /* usable: 98304 − 999 */
    CHECK(c && sum(&r, "p1", NULL, GL_KIND_ALLOCATED) == 0);
    if (c)
        gl_rollup_free(&r);
    gl_config_free(c);
    gl_matrix_free(&mu);
    gl_matrix_free(&mf);
    gl_matrix_free(&mr);
    CHECK(config(", \"dra\": {\"driver\": \"\"}") == NULL);
}

static void test_hami_device_query(void)
{
    /* The hami preset: HAMi pods a (1024 MiB) and b (2000 MiB) in bytes; the
     * device query's series (marked, in the source's unit, carrying a pod's
     * labels as dcgm-exporter's default mode does) says 3334 MiB: 310 MiB no
     * HAMi container holds are unattributed, capacity = 3334 + FREE 76666 +
     * RESERVED 920 = 80920. At the second step the device series is
     * missing: device used = the pods' 3024, their memory estimated. */
    struct gl_config *c = config(", \"memory_source\": {\"preset\": \"hami\"}");
    CHECK(c && c->mem_device_query && strcmp(c->mem_device_query, "fb_used") == 0);
    CHECK(c && c->mem_limit_query && strcmp(c->mem_limit_query, "hami_limit") == 0);
    CHECK(c && strcmp(c->mem_query, "hami_memory") == 0 && c->mem_unit == GL_UNIT_BYTES);
    if (!c)
        return;
    const char *used[] = {
        "\"device_uuid\":\"GPU-1\",\"namespace\":\"team-h\",\"pod\":\"a\"|1073741824,1073741824",
        "\"device_uuid\":\"GPU-1\",\"namespace\":\"team-h\",\"pod\":\"b\"|2097152000,2097152000",
        DEV ",\"namespace\":\"team-h\",\"pod\":\"a\",\"gpuledger_series\":\"device\"|3495952384,-",
    };
    const char *free_[] = {DEV "|76666,76666"};
    const char *res[] = {DEV "|920,920"};
    struct gl_matrix mu, mf, mr;
    matrix(&mu, used, 3, 2);
    matrix(&mf, free_, 1, 2);
    matrix(&mr, res, 1, 2);
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu, .fb_free = &mf,
                                .fb_reserved = &mr};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, "a", NULL, GL_KIND_MEMORY_USED) == 2 * 1024 * 60);
    CHECK(sum(&r, NULL, NULL, GL_KIND_UNATTRIBUTED) == 310 * 60);
    CHECK(sum(&r, NULL, NULL, GL_KIND_CAPACITY) == (80920 + 80610) * 60);
    int est = 0;
    for (size_t i = 0; i < r.nslots; i++)
        if (r.slots[i].used && r.slots[i].kind == GL_KIND_MEMORY_USED)
            est += r.slots[i].estimated != 0;
    CHECK(est == 2); /* a's and b's hour rows: one step without the device series */
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_matrix_free(&mf);
    gl_matrix_free(&mr);
    gl_config_free(c);
    CHECK(config(", \"memory_source\": {\"preset\": \"nope\"}") == NULL);
    CHECK(config(", \"memory_source\": {\"device_query\": \"fb_used\"}") == NULL);
}

static void test_hami_limit(void)
{
    /* HAMi bytes: pod a's container x uses 2^30 + 2^19 B (1024.5 MiB → 1024,
     * half-even), its limit 4 GiB + 2^19 B (4096.5 → 4096) listed twice
     * (max, not sum); container y's limit 1 GiB: the pod's limit is 5120
     * MiB, which replaces its nvidia.com/gpu request. Pod b has a request
     * and no limit: a whole GPU (usable 81920 − 920 = 81000). */
    struct gl_config *c = config(", \"memory_source\": {\"query\": \"hami_memory\", \"unit\":"
                                 " \"bytes\", \"labels\": {\"uuid\": \"device_uuid\"},"
                                 " \"limit_query\": \"hami_limit\"}");
    CHECK(c && c->mem_limit_query && strcmp(c->mem_limit_query, "hami_limit") == 0);
#define HAMI "\"device_uuid\":\"GPU-1\",\"namespace\":\"team-h\",\"pod\":\"a\""
    const char *used[] = {HAMI ",\"container\":\"x\"|1074266112,1074266112",
                          "\"device_uuid\":\"GPU-1\",\"namespace\":\"team-h\",\"pod\":\"b\","
                          "\"container\":\"z\"|2097152000,2097152000"};
    const char *limit[] = {HAMI ",\"container\":\"x\",\"vdevice_index\":\"0\"|4295491584,4295491584",
                           HAMI ",\"container\":\"x\",\"vdevice_index\":\"1\"|4295491584,4295491584",
                           HAMI ",\"container\":\"y\"|1073741824,1073741824"};
#undef HAMI
    const char *free_[] = {DEV "|76976,76976"};
    const char *res[] = {DEV "|920,920"};
    const char *alloc[] = {"\"namespace\":\"team-h\",\"pod\":\"a\",\"node\":\"n1\","
                           "\"resource\":\"nvidia_com_gpu\"|1,1",
                           "\"namespace\":\"team-h\",\"pod\":\"b\",\"node\":\"n1\","
                           "\"resource\":\"nvidia_com_gpu\"|1,1"};
    struct gl_matrix mu, ml, mf, mr, ma;
    matrix(&mu, used, 2, 2);
    matrix(&ml, limit, 3, 2);
    matrix(&mf, free_, 1, 2);
    matrix(&mr, res, 1, 2);
    matrix(&ma, alloc, 2, 2);
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu, .fb_free = &mf,
                                .fb_reserved = &mr, .allocation = &ma, .mem_limit = &ml};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, "a", NULL, GL_KIND_MEMORY_USED) == 2 * 1024 * 60);
    CHECK(sum(&r, "a", NULL, GL_KIND_ALLOCATED) == 2 * 5120 * 60);
    CHECK(sum(&r, "a", NULL, GL_KIND_RESERVED_UNUSED) == 2 * (5120 - 1024) * 60);
    CHECK(sum(&r, "a", NULL, GL_KIND_ALLOCATED_GPU) == 2 * 60 * 1000000); /* its GPU unit */
    /* capacity = Σ HAMi pods (1024 + 2000) + FREE + RESERVED = 80920 */
    CHECK(sum(&r, NULL, NULL, GL_KIND_CAPACITY) == 2 * 80920 * 60);
    CHECK(sum(&r, "b", NULL, GL_KIND_ALLOCATED) == 2 * (80920 - 920) * 60);
    CHECK(sum(&r, NULL, NULL, GL_KIND_ANOMALY_UNALLOCATED) == 0);
    gl_rollup_free(&r);
    /* without the limit query: the request allocates the whole GPU */
    in.mem_limit = NULL;
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, "a", NULL, GL_KIND_ALLOCATED) == 2 * 80000 * 60);
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_matrix_free(&ml);
    gl_matrix_free(&mf);
    gl_matrix_free(&mr);
    gl_matrix_free(&ma);
    gl_config_free(c);
}

static void test_device_excess(void)
{
    /* Fleet: a time-sliced A100 (replicas 4: 81408 / 4 = 20352 MiB each)
     * in per-process mode; p uses 65000, r 3000, s 2000, a non-pod process
     * 700 (device 70700); RESERVED 512, FREE 10708: capacity 81920. Under
     * basis max r and s leave 17352 + 18352 reserved-unused: 10708 from the
     * idle, 24996 beyond the card: excess on this device, whose row adds up. */
    struct gl_config *c = config_billing("\"currency\": \"USD\", \"basis\": \"max\"", "");
    const char *used[] = {DEV "|70700", DEV ",\"namespace\":\"ns\",\"pod\":\"p\"|65000",
                          DEV ",\"namespace\":\"ns\",\"pod\":\"r\"|3000",
                          DEV ",\"namespace\":\"ns\",\"pod\":\"s\"|2000",
                          DEV2 "|0"};
    const char *free_[] = {DEV "|10708", DEV2 "|81408"};
    const char *res[] = {DEV "|512", DEV2 "|512"};
    const char *nodes[] = {"\"node\":\"n1\",\"label_nvidia_com_gpu_replicas\":\"4\"|1"};
    const char *alloc[] = {
        "\"namespace\":\"ns\",\"pod\":\"p\",\"node\":\"n1\",\"resource\":\"nvidia_com_gpu\"|1",
        "\"namespace\":\"ns\",\"pod\":\"r\",\"node\":\"n1\",\"resource\":\"nvidia_com_gpu\"|1",
        "\"namespace\":\"ns\",\"pod\":\"s\",\"node\":\"n1\",\"resource\":\"nvidia_com_gpu\"|1"};
    struct gl_matrix mu, mf, mr, mn, ma;
    matrix(&mu, used, 5, 1);
    matrix(&mf, free_, 2, 1);
    matrix(&mr, res, 2, 1);
    matrix(&mn, nodes, 1, 1);
    matrix(&ma, alloc, 3, 1);
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu, .fb_free = &mf,
                                .fb_reserved = &mr, .node_labels = &mn, .allocation = &ma};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, NULL, NULL, GL_KIND_RESERVED_UNUSED_BILLED) == (17352 + 18352) * 60);
    /* the spill first takes GPU-2's idle: same node, same model (Attribution rules) */
    int64_t idle2 = sum_dev(&r, "GPU-2", "", GL_KIND_IDLE);
    int64_t ru1 = sum_dev(&r, "GPU-1", "", GL_KIND_DEVICE_RU_BILLED);
    int64_t ru2 = sum_dev(&r, "GPU-2", "", GL_KIND_DEVICE_RU_BILLED);
    CHECK(ru2 == (81408 - 0) * 60 - idle2);
    CHECK(ru1 + ru2 == (17352 + 18352) * 60);
    CHECK(sum_dev(&r, "GPU-1", "", GL_KIND_IDLE) == 0);
    CHECK(sum(&r, NULL, NULL, GL_KIND_EXCESS) == 0);
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_matrix_free(&mf);
    gl_matrix_free(&mr);
    /* the idle A100 on another node: GPU-1 alone on n1 */
    const char *used2[] = {DEV "|70700", DEV ",\"namespace\":\"ns\",\"pod\":\"p\"|65000",
                           DEV ",\"namespace\":\"ns\",\"pod\":\"r\"|3000",
                           DEV ",\"namespace\":\"ns\",\"pod\":\"s\"|2000",
                           "\"UUID\":\"GPU-3\",\"modelName\":\"NVIDIA A100-SXM4-80GB\","
                           "\"Hostname\":\"n2\"|0"};
    const char *free2[] = {DEV "|10708", "\"UUID\":\"GPU-3\",\"Hostname\":\"n2\"|81408"};
    const char *res2[] = {DEV "|512", "\"UUID\":\"GPU-3\",\"Hostname\":\"n2\"|512"};
    matrix(&mu, used2, 5, 1);
    matrix(&mf, free2, 2, 1);
    matrix(&mr, res2, 2, 1);
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    int64_t cap = sum_dev(&r, "GPU-1", "", GL_KIND_CAPACITY);
    int64_t exc = sum_dev(&r, "GPU-1", "", GL_KIND_EXCESS);
    CHECK(cap == 81920 * 60);
    CHECK(exc == 24996 * 60);
    CHECK(sum_dev(&r, "GPU-1", "", GL_KIND_DEVICE_RU_BILLED) == (17352 + 18352) * 60);
    CHECK(sum_dev(&r, "GPU-1", "", GL_KIND_IDLE) == 0);
    CHECK(cap + exc == sum_dev(&r, "GPU-1", "", GL_KIND_MEMORY_USED) +
                           sum_dev(&r, "GPU-1", "", GL_KIND_DEVICE_RU_BILLED) +
                           sum_dev(&r, "GPU-1", "", GL_KIND_RESERVED) +
                           sum_dev(&r, "GPU-1", "", GL_KIND_UNATTRIBUTED));
    CHECK(sum_dev(&r, "GPU-3", "", GL_KIND_IDLE) == 81408 * 60);
    CHECK(sum(&r, NULL, NULL, GL_KIND_EXCESS) == 24996 * 60); /* none elsewhere */
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_matrix_free(&mf);
    gl_matrix_free(&mr);
    gl_matrix_free(&mn);
    gl_matrix_free(&ma);
    gl_config_free(c);
}

static void test_capacity_with_device_series(void)
{
    /* Per-process mode: FREE and RESERVED only on the per-pod series, the
     * device series has USED 30300 (a 20000, b 10000, 300 unattributed).
     * Capacity = 30300 + 51108 + 512 = 81920 (never a's 20000 + FREE +
     * RESERVED = 71620), idle = FB_FREE. */
    struct gl_config *c = config("");
    const char *used[] = {DEV "|30300", DEV ",\"namespace\":\"team-a\",\"pod\":\"a\"|20000",
                          DEV ",\"namespace\":\"team-b\",\"pod\":\"b\"|10000"};
    const char *free_[] = {DEV ",\"namespace\":\"team-a\",\"pod\":\"a\"|51108",
                           DEV ",\"namespace\":\"team-b\",\"pod\":\"b\"|51108"};
    const char *res[] = {DEV ",\"namespace\":\"team-a\",\"pod\":\"a\"|512",
                         DEV ",\"namespace\":\"team-b\",\"pod\":\"b\"|512"};
    struct gl_matrix mu, mf, mr;
    matrix(&mu, used, 3, 1);
    matrix(&mf, free_, 2, 1);
    matrix(&mr, res, 2, 1);
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu, .fb_free = &mf,
                                .fb_reserved = &mr};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum(&r, NULL, NULL, GL_KIND_CAPACITY) == 81920 * 60);
    CHECK(sum(&r, NULL, NULL, GL_KIND_IDLE) == 51108 * 60);
    CHECK(sum(&r, NULL, NULL, GL_KIND_UNATTRIBUTED) == 300 * 60);
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_matrix_free(&mf);
    gl_matrix_free(&mr);
    gl_config_free(c);
}

static void test_unknown_usage_excess(void)
{
    /* A MIG instance with no FB metric, its pod seen on the compute series
     * only and requesting a 1g.10gb slice: billed 10 × 1024 MiB, estimated;
     * capacity 0, so that is the device row's excess (it adds up). */
    struct gl_config *c = config("");
#define MIG "\"UUID\":\"GPU-9\",\"GPU_I_ID\":\"4\",\"GPU_I_PROFILE\":\"1g.10gb\"," \
            "\"modelName\":\"NVIDIA A100-SXM4-80GB\",\"Hostname\":\"n1\""
    const char *busy[] = {"\"__name__\":\"DCGM_FI_PROF_GR_ENGINE_ACTIVE\"," MIG
                          ",\"namespace\":\"team-m\",\"pod\":\"m\"|0.5,0.5"};
#undef MIG
    const char *alloc[] = {"\"namespace\":\"team-m\",\"pod\":\"m\",\"node\":\"n1\","
                           "\"resource\":\"nvidia_com_mig_1g_10gb\"|1,1"};
    const char *none[] = {DEV2 "|-,-"};
    struct gl_matrix mu, mb, ma;
    matrix(&mu, none, 1, 2);
    matrix(&mb, busy, 1, 2);
    matrix(&ma, alloc, 1, 2);
    const struct gl_matrix *compute[] = {&mb};
    struct gl_chunk_input in = {.cluster = &c->clusters[0], .memory = &mu, .allocation = &ma,
                                .compute = compute, .ncompute = 1};
    struct gl_rollup r;
    struct gl_error err = {0};
    CHECK(gl_integrate(c, &in, &r, &err) == GL_OK);
    CHECK(sum_dev(&r, "GPU-9", "4", GL_KIND_MEMORY_USED) == 2 * 10240 * 60);
    CHECK(sum_dev(&r, "GPU-9", "4", GL_KIND_CAPACITY) == 0);
    CHECK(sum_dev(&r, "GPU-9", "4", GL_KIND_EXCESS) == 2 * 10240 * 60);
    CHECK(sum_dev(&r, "GPU-9", "4", GL_KIND_UNKNOWN_STEPS) == 2);
    gl_rollup_free(&r);
    gl_matrix_free(&mu);
    gl_matrix_free(&mb);
    gl_matrix_free(&ma);
    gl_config_free(c);
}


/* The allocation joined in the engine (gl_allocation_join), worked by
 * hand from the joined PromQL it replaces: containers of a pod summed per
 * (namespace, pod, node, resource); a step kept only where the pod's
 * phase Running is 1; the 1024-unit bound on the sum. */
static void test_allocation_join(void)
{
    struct gl_config *c = config("");
    CHECK(c != NULL);
    if (!c)
        return;
    const char *req[] = {
        /* pod a: two containers, 1 and 2 GPUs, the second from step 1 */
        "\"__name__\":\"kube_pod_container_resource_requests\",\"namespace\":\"ns\",\"pod\":\"a\","
        "\"container\":\"c1\",\"node\":\"n1\",\"resource\":\"nvidia_com_gpu\",\"uid\":\"u1\"|1,1,1,1",
        "\"__name__\":\"kube_pod_container_resource_requests\",\"namespace\":\"ns\",\"pod\":\"a\","
        "\"container\":\"c2\",\"node\":\"n1\",\"resource\":\"nvidia_com_gpu\",\"uid\":\"u1\"|-,2,2,2",
        /* pod b: never Running (phase 0), pod c: no phase series at all */
        "\"namespace\":\"ns\",\"pod\":\"b\",\"node\":\"n1\",\"resource\":\"nvidia_com_gpu\"|1,1,1,1",
        "\"namespace\":\"ns\",\"pod\":\"c\",\"node\":\"n1\",\"resource\":\"nvidia_com_gpu\"|1,1,1,1",
        /* pod d: 1000 + 100 units, over the bound at every Running step */
        "\"namespace\":\"ns\",\"pod\":\"d\",\"container\":\"x\",\"node\":\"n1\",\"resource\":\"nvidia_com_gpu\"|1000,1000,1000,1000",
        "\"namespace\":\"ns\",\"pod\":\"d\",\"container\":\"y\",\"node\":\"n1\",\"resource\":\"nvidia_com_gpu\"|100,100,-,-",
    };
    const char *phase[] = {
        /* a Running at steps 0-2, then 0 */
        "\"__name__\":\"kube_pod_status_phase\",\"namespace\":\"ns\",\"pod\":\"a\",\"phase\":\"Running\"|1,1,1,0",
        "\"namespace\":\"ns\",\"pod\":\"b\",\"phase\":\"Running\"|0,0,0,0",
        "\"namespace\":\"ns\",\"pod\":\"d\",\"phase\":\"Running\"|1,1,1,1",
    };
    struct gl_matrix mr, mp, out;
    matrix(&mr, req, 6, 4);
    matrix(&mp, phase, 3, 4);
    struct gl_error err = {0};
    CHECK(gl_allocation_join(c, &mr, &mp, 1024, &out, &err) == GL_OK);
    /* a (steps 0-2) and d (steps 2-3, where its sum is 1000) */
    CHECK(out.nseries == 2);
    if (out.nseries == 2) {
        const struct gl_series *a = &out.series[0], *d = &out.series[1];
        CHECK_STR(gl_series_label(a, "pod"), "a");
        CHECK(a->nlabels == 4); /* namespace, node, pod, resource: no container, uid */
        CHECK(gl_series_label(a, "container") == NULL && gl_series_label(a, "uid") == NULL);
        CHECK(a->values[0] == 1 && a->values[1] == 3 && a->values[2] == 3 && isnan(a->values[3]));
        CHECK(a->first_step == 0 && a->first_seen == T0);
        CHECK_STR(gl_series_label(d, "pod"), "d");
        CHECK(isnan(d->values[0]) && isnan(d->values[1]) && d->values[2] == 1000 &&
              d->values[3] == 1000);
        CHECK(d->first_step == 2);
        for (size_t i = 1; i < 4; i++)
            CHECK(strcmp(a->labels[i - 1].name, a->labels[i].name) < 0);
    }
    CHECK(out.samples == 5);
    CHECK(out.bad_samples == 2 && out.skipped[GL_SKIP_OUT_OF_BOUNDS] == 2);
    CHECK(strstr(out.bad[0], "out_of_bounds: value \"1100\"") != NULL);
    gl_matrix_free(&out);
    gl_matrix_free(&mr);
    gl_matrix_free(&mp);
    gl_config_free(c);
}

int main(void)
{
    RUN(test_allocation_join);
    RUN(test_long_identities);
    RUN(test_overflow_is_an_error);
    RUN(test_many_pods_one_device);
    RUN(test_other_source_capacity);
    RUN(test_copy_warning);
    RUN(test_device_mode_split);
    RUN(test_allocation_and_anomalies);
    RUN(test_parse_bad_samples);
    RUN(test_process_mode);
    RUN(test_label_precedence);
    RUN(test_dra_claims);
    RUN(test_hami_limit);
    RUN(test_dra_device_placement);
    RUN(test_hami_device_query);
    RUN(test_device_excess);
    RUN(test_capacity_with_device_series);
    RUN(test_unknown_usage_excess);
    return TAP_END();
}
