/* parse — Prometheus matrix JSON to series on the step grid. */
#include "parse.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void gl_matrix_free(struct gl_matrix *m)
{
    if (!m)
        return;
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

const char *gl_series_label(const struct gl_series *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i].name, name) == 0)
            return s->labels[i].value[0] ? s->labels[i].value : NULL;
    return NULL;
}

static void note_bad(struct gl_matrix *m, const struct gl_series *s, double ts, const char *v)
{
    size_t k = m->bad_samples++;
    if (k >= sizeof m->bad / sizeof *m->bad)
        return;
    /* Name the series by what identifies it; label values are quoted with
     * %.Ns bounds so hostile values cannot flood the log. */
    struct gl_buf b;
    gl_buf_init(&b);
    const char *name = gl_series_label(s, "__name__");
    gl_buf_printf(&b, "value \"%.32s\" at %.0f on %.64s{", v, ts, name ? name : "series");
    static const char *const keys[] = {"UUID", "GPU_I_ID", "exported_namespace", "exported_pod",
                                       "namespace", "pod"};
    int n = 0;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const char *lv = gl_series_label(s, keys[i]);
        if (lv)
            gl_buf_printf(&b, "%s%s=\"%.64s\"", n++ ? "," : "", keys[i], lv);
    }
    gl_buf_puts(&b, "}");
    snprintf(m->bad[k], sizeof m->bad[k], "%s", b.data ? b.data : "");
    gl_buf_free(&b);
}

enum gl_status gl_matrix_parse(const char *json, size_t len, int64_t start, int64_t step,
                               size_t nsteps, const char *what, struct gl_matrix *m,
                               struct gl_error *err)
{
    memset(m, 0, sizeof *m);
    m->start = start;
    m->step = step;
    m->nsteps = nsteps;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root)
        return gl_error_set(err, GL_ERR_PROM, "%s: response is not valid JSON", what);
    enum gl_status rc = GL_OK;
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(root, "status");
    if (!cJSON_IsString(status) || strcmp(status->valuestring, "success") != 0) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
        rc = gl_error_set(err, GL_ERR_PROM, "%s: status \"%s\": %s", what,
                          cJSON_IsString(status) ? status->valuestring : "(missing)",
                          cJSON_IsString(e) ? e->valuestring : "(no error text)");
        goto out;
    }
    const cJSON *warnings = cJSON_GetObjectItemCaseSensitive(root, "warnings");
    if (cJSON_IsArray(warnings)) {
        for (const cJSON *w = warnings->child; w; w = w->next) {
            m->nwarnings++;
            gl_log(GL_LOG_WARN, "prometheus warning %s: %s", what,
                   cJSON_IsString(w) ? w->valuestring : "(not a string)");
        }
    }
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
    const cJSON *rtype = cJSON_GetObjectItemCaseSensitive(data, "resultType");
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(data, "result");
    if (!cJSON_IsString(rtype) || strcmp(rtype->valuestring, "matrix") != 0 ||
        !cJSON_IsArray(result)) {
        rc = gl_error_set(err, GL_ERR_PROM, "%s: expected data.resultType \"matrix\" with a result array",
                          what);
        goto out;
    }
    size_t n = (size_t)cJSON_GetArraySize(result);
    m->series = gl_xcalloc(n, sizeof *m->series);
    for (const cJSON *it = result->child; it; it = it->next) {
        const cJSON *metric = cJSON_GetObjectItemCaseSensitive(it, "metric");
        const cJSON *values = cJSON_GetObjectItemCaseSensitive(it, "values");
        if (!cJSON_IsObject(metric) || !cJSON_IsArray(values)) {
            rc = gl_error_set(err, GL_ERR_PROM, "%s: result %zu lacks metric or values", what,
                              m->nseries);
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
                rc = gl_error_set(err, GL_ERR_PROM, "%s: malformed sample in result %zu", what,
                                  m->nseries - 1);
                goto out;
            }
            double t = ts->valuedouble;
            double off = (t - (double)start) / (double)step;
            if (off < 0 || off >= (double)nsteps || off != floor(off)) {
                m->off_grid++;
                continue;
            }
            char *end = NULL;
            double x = strtod(v->valuestring, &end);
            /* 2^48 is far above any GPU's memory in MiB or bytes, and keeps
             * MiB × step × 3 sums inside int64 */
            if (end == v->valuestring || *end != '\0' || !isfinite(x) || x < 0 ||
                x > 281474976710656.0) {
                note_bad(m, s, t, v->valuestring);
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
        gl_matrix_free(m);
    return rc;
}
