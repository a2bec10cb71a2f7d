/*
 * parse_bench — the matrix parser: the engine's (engine/source/parse.c, streaming, what
 * the engine runs) against the cJSON tree walk it replaced (kept below,
 * as it was at commit ec4e86a, for the comparison only).
 *
 * Usage: parse_bench engine|cjson [SERIES [STEPS]]   (default 10000 x 720)
 *
 * Generates one query_range body of SERIES dcgm-exporter-like series
 * (17 labels) with STEPS samples each, parses it once with the chosen
 * path and prints the body size, µs per sample and peak RSS (getrusage),
 * also net of the body itself. One path per process, so that each peak is
 * its own: bench/parse_bench.sh runs both.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "parse.h"
#include "util.h"

#define T0 1791331200
#define STEP 60

/* ---- the cJSON path as it was (engine/source/parse.c at ec4e86a, without the
 * bad-sample descriptions) ---- */

static void legacy_free(struct gl_matrix *m)
{
    for (size_t i = 0; i < m->nseries; i++) {
        struct gl_series *s = &m->series[i];
        for (size_t j = 0; j < s->nlabels; j++) {
            free(s->labels[j].name);
            free(s->labels[j].value);
        }
        free(s->labels);
        free(s->values);
    }
    free(m->series);
    memset(m, 0, sizeof *m);
}

static int legacy_parse(const char *json, size_t len, int64_t start, int64_t step,
                        size_t nsteps, struct gl_matrix *m)
{
    memset(m, 0, sizeof *m);
    m->start = start;
    m->step = step;
    m->nsteps = nsteps;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root)
        return -1;
    int rc = 0;
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(root, "status");
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
    const cJSON *rtype = cJSON_GetObjectItemCaseSensitive(data, "resultType");
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(data, "result");
    if (!cJSON_IsString(status) || strcmp(status->valuestring, "success") != 0 ||
        !cJSON_IsString(rtype) || strcmp(rtype->valuestring, "matrix") != 0 ||
        !cJSON_IsArray(result)) {
        rc = -1;
        goto out;
    }
    size_t n = (size_t)cJSON_GetArraySize(result);
    m->series = gl_xcalloc(n, sizeof *m->series);
    for (const cJSON *it = result->child; it; it = it->next) {
        const cJSON *metric = cJSON_GetObjectItemCaseSensitive(it, "metric");
        const cJSON *values = cJSON_GetObjectItemCaseSensitive(it, "values");
        if (!cJSON_IsObject(metric) || !cJSON_IsArray(values)) {
            rc = -1;
            goto out;
        }
        struct gl_series *s = &m->series[m->nseries++];
        s->first_step = -1;
        s->first_seen = -1;
        size_t nl = (size_t)cJSON_GetArraySize(metric);
        s->labels = gl_xcalloc(nl, sizeof *s->labels);
        for (const cJSON *l = metric->child; l; l = l->next) {
            if (!cJSON_IsString(l))
                continue;
            s->labels[s->nlabels].name = gl_strdup(l->string);
            s->labels[s->nlabels].value = gl_strdup(l->valuestring);
            s->nlabels++;
        }
        s->values = gl_xcalloc(nsteps, sizeof *s->values);
        for (size_t i = 0; i < nsteps; i++)
            s->values[i] = NAN;
        for (const cJSON *pt = values->child; pt; pt = pt->next) {
            const cJSON *ts = cJSON_GetArrayItem(pt, 0);
            const cJSON *v = cJSON_GetArrayItem(pt, 1);
            if (!cJSON_IsNumber(ts) || !cJSON_IsString(v)) {
                rc = -1;
                goto out;
            }
            double t = ts->valuedouble;
            double off = (t - (double)start) / (double)step;
            if (off < 0 || off >= (double)nsteps || off != floor(off))
                continue;
            char *end = NULL;
            double x = strtod(v->valuestring, &end);
            if (end == v->valuestring || *end != '\0' || !isfinite(x) || x < 0 ||
                x > 281474976710656.0) {
                m->bad_samples++;
                continue;
            }
            size_t idx = (size_t)off;
            s->values[idx] = x;
            if (s->first_step < 0) {
                s->first_step = (int64_t)idx;
                s->first_seen = start + (int64_t)idx * step;
            }
            m->samples++;
        }
    }
out:
    cJSON_Delete(root);
    if (rc)
        legacy_free(m);
    return rc;
}

/* ---- the body ---- */

static void generate(struct gl_buf *b, size_t nseries, size_t nsteps)
{
    gl_buf_puts(b, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[");
    for (size_t i = 0; i < nseries; i++) {
        size_t node = i / 8, gpu = i % 8;
        gl_buf_printf(b,
                      "%s{\"metric\":{\"__name__\":\"DCGM_FI_DEV_FB_USED\",\"DCGM_FI_DRIVER_VERSION\":"
                      "\"550.54.15\",\"Hostname\":\"gpu-node-%04zu\",\"UUID\":\"GPU-%08zx-1f2e-"
                      "4d3c-8b9a-%012zx\",\"container\":\"trainer\",\"device\":\"nvidia%zu\","
                      "\"gpu\":\"%zu\",\"instance\":\"10.1.%zu.%zu:9400\",\"job\":\"dcgm-exporter\","
                      "\"modelName\":\"NVIDIA A100-SXM4-80GB\",\"namespace\":\"team-%02zu\","
                      "\"pci_bus_id\":\"00000000:%02zX:00.0\",\"pod\":\"train-%06zu-0\","
                      "\"cluster\":\"eu-1\",\"endpoint\":\"metrics\",\"service\":\"dcgm\","
                      "\"prometheus\":\"monitoring/k8s\"},\"values\":[",
                      i ? "," : "", node, i, i, gpu, gpu, node / 250, node % 250, i % 40,
                      gpu + 7, i);
        for (size_t t = 0; t < nsteps; t++)
            gl_buf_printf(b, "%s[%lld,\"%zu\"]", t ? "," : "", (long long)T0 + (long long)t * STEP,
                          1000 + (i * 7 + t * 13) % 70000);
        gl_buf_puts(b, "]}");
    }
    gl_buf_puts(b, "]}}");
}

static double rss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "engine") != 0 && strcmp(argv[1], "cjson") != 0)) {
        fprintf(stderr, "usage: parse_bench engine|cjson [SERIES [STEPS]]\n");
        return 2;
    }
    size_t nseries = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000;
    size_t nsteps = argc > 3 ? strtoul(argv[3], NULL, 10) : 720;
    struct gl_buf body;
    gl_buf_init(&body);
    generate(&body, nseries, nsteps);
    double base = rss_mib();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct gl_matrix m;
    int rc;
    struct gl_error err = {0};
    bool stream = strcmp(argv[1], "engine") == 0;
    if (stream)
        rc = gl_matrix_parse(body.data, body.len, T0, STEP, nsteps, "bench", &m, &err) ? -1 : 0;
    else
        rc = legacy_parse(body.data, body.len, T0, STEP, nsteps, &m);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc) {
        fprintf(stderr, "parse failed: %s\n", err.msg);
        return 1;
    }
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    double peak = rss_mib();
    printf("%-5s series=%zu steps=%zu samples=%zu body=%.1f MiB parse=%.3f s %.3f us/sample "
           "peak_rss=%.0f MiB (body alone %.0f MiB, parse +%.0f MiB)\n",
           argv[1], nseries, nsteps, m.samples, (double)body.len / 1048576.0, secs,
           secs * 1e6 / (double)(m.samples ? m.samples : 1), peak, base, peak - base);
    if (m.samples != nseries * nsteps) {
        fprintf(stderr, "expected %zu samples\n", nseries * nsteps);
        return 1;
    }
    if (stream)
        gl_matrix_free(&m);
    else
        legacy_free(&m);
    gl_buf_free(&body);
    return 0;
}
