/* Unit tests: the exposition format's label escaping and the Pushgateway
 * group path (engine/run/metrics.c). Expected strings follow the Prometheus
 * text format (label values: \\ \" \n escaped) and the Pushgateway's API
 * (a value with '/' or an empty one as label@base64/<base64url>). */
#include <stdlib.h>

#include "metrics.h"
#include "tap.h"
#include "util.h"

static char *escaped(const char *s)
{
    struct gl_buf b;
    gl_buf_init(&b);
    CHECK(gl_metrics_escape_label(&b, s));
    gl_buf_puts(&b, "");
    return b.data;
}

static void test_escape_label(void)
{
    struct {
        const char *in, *out;
    } cases[] = {
        {"plain", "plain"},
        {"", ""},
        {"a\"b", "a\\\"b"},
        {"back\\slash", "back\\\\slash"},
        {"line\nbreak", "line\\nbreak"},
        {"\\\"\n", "\\\\\\\"\\n"},
        {"} 1\nevil_metric{x=\"y\"} 2", "} 1\\nevil_metric{x=\\\"y\\\"} 2"},
        {"tab\tand\rcr", "tab\tand\rcr"}, /* only \\, \" and \n are escaped */
        {"caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac"}, /* UTF-8 as it is */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *got = escaped(cases[i].in);
        CHECK_STR(got ? got : "", cases[i].out);
        free(got);
    }
}

static void test_group_path(void)
{
    struct {
        const char *job, *cluster, *path;
    } cases[] = {
        {"gpuledger", "eu-1", "/metrics/job/gpuledger/cluster/eu-1"},
        {"gpu ledger", "eu\"1", "/metrics/job/gpu%20ledger/cluster/eu%221"},
        {"a/b", "x", "/metrics/job@base64/YS9i/cluster/x"},
        {"gpuledger", "", "/metrics/job/gpuledger/cluster@base64/="},
        {"ab/", "abc/d", "/metrics/job@base64/YWIv/cluster@base64/YWJjL2Q="},
        {"a/", "?#%", "/metrics/job@base64/YS8=/cluster/%3F%23%25"},
        {"\xff\xfe/", "c", "/metrics/job@base64/__4v/cluster/c"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *got = gl_metrics_group_path(cases[i].job, cases[i].cluster);
        CHECK_STR(got, cases[i].path);
        free(got);
    }
}

int main(void)
{
    RUN(test_escape_label);
    RUN(test_group_path);
    return TAP_END();
}
