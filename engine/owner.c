/* owner — pods' workloads from kube_pod_owner (see owner.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "owner.h"

#include <cjson/cJSON.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fetch.h"
#include "timeutil.h"
#include "util.h"

#define OWNER_QUERY "pod_owner"

/* A ReplicaSet named <deployment>-<pod-template-hash>. */
static const char rs_hash[] = "-[bcdfghjklmnpqrstvwxz2456789]{6,10}$";

/* Stores the owners of one instant-query response (a vector). */
static enum gl_status store_vector(const struct gl_cluster *cluster, struct gl_store *s,
                                   pcre2_code *code, const struct gl_buf *body, int64_t at,
                                   const char *where, struct gl_error *err)
{
    cJSON *root = cJSON_ParseWithLength(body->data, body->len);
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(root, "data");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(data, "resultType");
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(data, "result");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "vector") != 0 ||
        !cJSON_IsArray(res)) {
        cJSON_Delete(root);
        return gl_error_set(err, GL_ERR_PROM,
                            "%s: the response is not a Prometheus instant vector", where);
    }
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    if (!md) {
        cJSON_Delete(root);
        return gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    }
    enum gl_status rc = GL_OK;
    size_t k = 0;
    for (const cJSON *it = res->child; !rc && it; it = it->next, k++) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "metric");
        const char *v[5] = {NULL};
        static const char *const names[] = {"namespace", "pod", "owner_kind", "owner_name",
                                            "owner_is_controller"};
        for (int i = 0; i < 5; i++) {
            const cJSON *x = cJSON_GetObjectItemCaseSensitive(m, names[i]);
            v[i] = cJSON_IsString(x) ? x->valuestring : NULL;
        }
        if (!v[0] || !v[1] || !v[0][0] || !v[1][0]) {
            rc = gl_error_set(err, GL_ERR_PROM,
                              "%s: series %zu has no namespace or pod label", where, k);
            break;
        }
        if (!v[2] || !v[3] || !v[2][0] || !v[3][0] || strcmp(v[2], "<none>") == 0 ||
            (v[4] && strcmp(v[4], "false") == 0))
            continue; /* no controlling owner: the pod is its own workload */
        const char *kind = v[2];
        char *name = gl_strdup(v[3]);
        if (strcmp(kind, "ReplicaSet") == 0 &&
            pcre2_match(code, (PCRE2_SPTR)name, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL) >= 0) {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            if (ov[0] > 0) {
                name[ov[0]] = '\0';
                kind = "Deployment";
            }
        }
        rc = gl_store_put_pod_owner(s, cluster->name, v[0], v[1], kind, name, at, err);
        free(name);
    }
    pcre2_match_data_free(md);
    cJSON_Delete(root);
    return rc;
}

enum gl_status gl_owner_collect(const struct gl_config *c, const struct gl_cluster *cluster,
                                struct gl_store *s, int64_t from, int64_t to,
                                struct gl_error *err)
{
    if (!s || to <= from)
        return GL_OK;
    char file[512];
    snprintf(file, sizeof file, "%s/%s.promql", c->queries_dir, OWNER_QUERY);
    if (access(file, R_OK) != 0) {
        gl_log(GL_LOG_WARN, "no %s: pods are shown as their own workloads (cluster %s)", file,
               cluster->name);
        return GL_OK;
    }
    char *tmpl = NULL;
    struct gl_prom *prom = NULL;
    struct gl_buf q, body;
    gl_buf_init(&q);
    gl_buf_init(&body);
    int errcode;
    PCRE2_SIZE off;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)rs_hash, PCRE2_ZERO_TERMINATED, 0, &errcode,
                                     &off, NULL);
    enum gl_status rc = code ? GL_OK : gl_error_set(err, GL_ERR_RUNTIME, "pcre2_compile failed");
    if (!rc)
        rc = gl_config_query(c, cluster, OWNER_QUERY, &tmpl, err);
    if (!rc)
        rc = gl_prom_new(&cluster->prom, &prom, err);
    for (int64_t t = from; !rc && t < to; t += 86400) {
        int64_t end = t + 86400 < to ? t + 86400 : to;
        /* ${window}: the day (or the window's last part) in seconds */
        gl_buf_reset(&q);
        for (const char *p = tmpl; *p;) {
            const char *w = strstr(p, "${window}");
            if (!w) {
                gl_buf_puts(&q, p);
                break;
            }
            gl_buf_printf(&q, "%.*s%llds", (int)(w - p), p, (long long)(end - t));
            p = w + strlen("${window}");
        }
        char ts[32], where[128];
        gl_time_format(end, ts, sizeof ts);
        snprintf(where, sizeof where, "query %s at %s (cluster %.40s)", OWNER_QUERY, ts,
                 cluster->name);
        gl_buf_reset(&body);
        /* a failed answer costs the day's workloads, never the billed
         * figures stored before: a warning naming it, and the next day */
        struct gl_error qerr = {0};
        enum gl_status qrc = gl_prom_query(prom, q.data, end, &body, &qerr);
        if (!qrc && (rc = gl_store_begin(s, err)))
            break;
        if (!qrc) {
            qrc = store_vector(cluster, s, code, &body, end, where, &qerr);
            if (qrc)
                gl_store_rollback(s);
            else if ((rc = gl_store_commit(s, err)))
                break;
        }
        if (qrc) {
            if (qrc != GL_ERR_PROM && qrc != GL_ERR_TOO_LARGE) {
                rc = qrc; /* the store, memory: an error */
                *err = qerr;
                break;
            }
            gl_log(GL_LOG_WARN, "pod owners not collected (%s): %s; its pods show as their own "
                                "workloads", where, qerr.msg);
        }
    }
    gl_prom_free(prom);
    free(tmpl);
    gl_buf_free(&q);
    gl_buf_free(&body);
    pcre2_code_free(code);
    return rc;
}
