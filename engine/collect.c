/* collect — the collection loop over hour-aligned chunks. */
#include "collect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include "fetch.h"
#include "integrate.h"
#include "parse.h"
#include "timeutil.h"
#include "util.h"

/* The queries of one chunk; compute queries follow Q_FIXED, then the
 * optional ones that are configured (Q_OPT_*, in that order). */
enum { Q_MEMORY, Q_FREE, Q_RESERVED, Q_POD_LABELS, Q_NS_LABELS, Q_ALLOCATION, Q_NODE_LABELS,
       Q_FIXED };
enum { Q_OPT_MEM_LIMIT, Q_OPT_N };
#define Q_MAX (Q_FIXED + 8 + Q_OPT_N)

static int compute_count(const struct gl_config *c)
{
    return (int)(c->ncompute_queries < 8 ? c->ncompute_queries : 8);
}

/* Name of optional query o, NULL when not configured. */
static const char *opt_query(const struct gl_config *c, int o)
{
    return o == Q_OPT_MEM_LIMIT ? c->mem_limit_query : NULL;
}

/* Position of optional query o in the chunk's list, -1 when not configured. */
static int opt_pos(const struct gl_config *c, int o)
{
    if (!opt_query(c, o))
        return -1;
    int pos = Q_FIXED + compute_count(c);
    for (int k = 0; k < o; k++)
        pos += opt_query(c, k) != NULL;
    return pos;
}

static const char *query_name(const struct gl_config *c, int q)
{
    static const char *const fixed[Q_FIXED] = {NULL,         "fb_free",    "fb_reserved",
                                               "pod_labels", "namespace_labels",
                                               "allocation", "node_labels"};
    if (q == Q_MEMORY)
        return c->mem_query;
    if (q < Q_FIXED)
        return fixed[q];
    if (q < Q_FIXED + compute_count(c))
        return c->compute_queries[q - Q_FIXED];
    for (int o = 0; o < Q_OPT_N; o++)
        if (opt_pos(c, o) == q)
            return opt_query(c, o);
    return NULL;
}

static int query_count(const struct gl_config *c)
{
    int n = Q_FIXED + compute_count(c);
    for (int o = 0; o < Q_OPT_N; o++)
        n += opt_query(c, o) != NULL;
    return n;
}

/* Label series' first appearance from the database (the earlier of stored
 * and seen), recorded when record is set (inside the chunk's transaction). */
static enum gl_status label_history(const struct gl_cluster *cluster, struct gl_store *s,
                                    struct gl_matrix *m, bool record, struct gl_error *err)
{
    struct gl_buf key;
    gl_buf_init(&key);
    enum gl_status rc = GL_OK;
    for (size_t i = 0; !rc && i < m->nseries; i++) {
        struct gl_series *se = &m->series[i];
        if (se->first_seen < 0)
            continue;
        gl_buf_reset(&key);
        gl_buf_puts(&key, cluster->name);
        for (size_t k = 0; k < se->nlabels; k++)
            gl_buf_printf(&key, "\x1f%s=%s", se->labels[k].name, se->labels[k].value);
        rc = gl_store_label_first_seen(s, key.data, &se->first_seen, record, err);
    }
    gl_buf_free(&key);
    return rc;
}

static enum gl_status store_chunk(const struct gl_cluster *cluster, struct gl_store *s,
                                  const struct gl_rollup *r, bool advance,
                                  struct gl_matrix *const *labels, size_t nlabels,
                                  struct gl_error *err)
{
    enum gl_status rc = gl_store_begin(s, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < nlabels; i++)
        if ((rc = label_history(cluster, s, labels[i], true, err)))
            goto fail_early;
    int64_t end = r->start + (int64_t)r->nhours * 3600;
    int64_t *dev_ids = gl_xcalloc(r->ndevices, sizeof *dev_ids);
    /* Replace every row of these hours for each cluster seen, and the
     * configured one (so an hour that lost its data is emptied too). */
    if ((rc = gl_store_clear_hours(s, cluster->name, r->start, end, err)))
        goto fail;
    for (size_t d = 0; d < r->ndevices; d++) {
        const struct gl_chunk_device *cd = &r->devices[d];
        const char *cl = gl_intern_str(r->strings, cd->cluster);
        if (strcmp(cl, cluster->name) != 0 &&
            (rc = gl_store_clear_hours(s, cl, r->start, end, err)))
            goto fail;
    }
    for (size_t d = 0; d < r->ndevices; d++) {
        const struct gl_chunk_device *cd = &r->devices[d];
        struct gl_device_info info = {
            .cluster = gl_intern_str(r->strings, cd->cluster),
            .uuid = gl_intern_str(r->strings, cd->uuid),
            .gpu_i_id = gl_intern_str(r->strings, cd->gpu_i_id),
            .gpu_i_profile = gl_intern_str(r->strings, cd->profile),
            .model = gl_intern_str(r->strings, cd->model),
            .hostname = gl_intern_str(r->strings, cd->hostname),
            .max_capacity_mib = cd->max_capacity_mib,
            .first_seen = cd->first_seen < 0 ? r->start : cd->first_seen,
            .last_seen = cd->first_seen < 0 ? r->start : cd->last_seen,
        };
        if ((rc = gl_store_device(s, &info, &dev_ids[d], err)))
            goto fail;
    }
    for (size_t i = 0; i < r->nslots; i++) {
        const struct gl_rollup_entry *e = &r->slots[i];
        if (!e->used)
            continue;
        const struct gl_chunk_device *cd = &r->devices[e->device];
        if ((rc = gl_store_add_usage(s, r->start + (int64_t)e->hour * 3600,
                                     gl_intern_str(r->strings, cd->cluster),
                                     gl_intern_str(r->strings, e->ns),
                                     gl_intern_str(r->strings, e->pod), dev_ids[e->device],
                                     gl_intern_str(r->strings, e->team), gl_kind_names[e->kind],
                                     e->quantity, e->estimated, e->first_t, e->last_t, err)))
            goto fail;
    }
    for (size_t h = 0; h < r->nhours; h++)
        if ((rc = gl_store_mark_hour(s, cluster->name, r->start + (int64_t)h * 3600,
                                     r->samples_per_hour[h], h == 0 ? (int64_t)r->bad_samples : 0,
                                     err)))
            goto fail;
    if (advance && (rc = gl_store_advance_watermark(s, cluster->name, end, err)))
        goto fail;
    if ((rc = gl_store_commit(s, err)))
        goto fail;
    free(dev_ids);
    return GL_OK;
fail:
    gl_store_rollback(s);
    free(dev_ids);
    return rc;
fail_early:
    gl_store_rollback(s);
    return rc;
}

/* What `check` reports about a chunk: devices without FB_RESERVED or
 * without memory metrics, teams produced by rules and absent from the
 * catalogue. */
static void note_findings(const struct gl_config *c, const struct gl_rollup *r,
                          struct gl_intern *notes)
{
    char line[1024];
    for (size_t d = 0; d < r->ndevices; d++) {
        const struct gl_chunk_device *cd = &r->devices[d];
        const char *uuid = gl_intern_str(r->strings, cd->uuid);
        const char *gid = gl_intern_str(r->strings, cd->gpu_i_id);
        const char *host = gl_intern_str(r->strings, cd->hostname);
        if (cd->pseudo)
            continue;
        const char *model = gl_intern_str(r->strings, cd->model);
        if (cd->reserved_missing || cd->free_missing) {
            const struct gl_kv *kv = gl_kv_find(c->model_capacity, c->nmodel_capacity, model);
            bool cfg = kv && !gid[0];
            snprintf(line, sizeof line,
                     "device %s%s%s on %s (%s) lacks %s%s%s: %s", uuid, gid[0] ? "/" : "", gid,
                     host, model, cd->free_missing ? "DCGM_FI_DEV_FB_FREE" : "",
                     cd->free_missing && cd->reserved_missing ? " and " : "",
                     cd->reserved_missing ? "DCGM_FI_DEV_FB_RESERVED" : "",
                     cd->reserved_missing && cfg
                         ? "reserved = allocation.model_capacity_mib - USED - FREE"
                     : cd->reserved_missing && !gid[0]
                         ? "capacity = USED + FREE (set allocation.model_capacity_mib)"
                         : "missing values count as 0 (capacity = USED + FREE + RESERVED)");
            gl_intern_get(notes, line);
        }
        if (!cd->fb_seen) {
            snprintf(line, sizeof line,
                     "device %s%s%s on %s (%s) reports no memory metrics: usage unknown%s", uuid,
                     gid[0] ? "/" : "", gid, host, model,
                     cd->unknown_usage ? "; its pods are billed by allocation (estimated)" : "");
            gl_intern_get(notes, line);
        }
    }
    for (size_t i = 0; i < r->nslots; i++) {
        const struct gl_rollup_entry *e = &r->slots[i];
        if (!e->used || e->kind != GL_KIND_MEMORY_USED)
            continue;
        const char *team = gl_intern_str(r->strings, e->team);
        if (!gl_is_ascii(team)) {
            char shown[200];
            gl_escape_ascii(team, shown, sizeof shown);
            snprintf(line, sizeof line,
                     "team \"%s\" is not printable ASCII: the FOCUS export will refuse it; map "
                     "its pods to an ASCII team with an earlier teams.rules entry",
                     shown);
            gl_intern_get(notes, line);
        } else if (!gl_config_team(c, team)) {
            snprintf(line, sizeof line,
                     "team \"%s\" (from the mapping rules) is not in teams.catalogue: named by its "
                     "id, no cost center",
                     team);
            gl_intern_get(notes, line);
        }
    }
}

/* One chunk's requests, fetched on a thread of their own while the
 * previous chunk is parsed, integrated and stored: the two overlap, and at
 * most two chunks' responses are in memory. Only one job uses the client
 * at a time (the next starts after the previous was joined). */
struct fetch_job {
    struct gl_prom *prom;
    char *const *queries;
    int nq;
    int64_t start, end, step;
    struct gl_buf bodies[Q_MAX];
    enum gl_status rc;
    struct gl_error err;
    thrd_t th;
    bool running;
};

static int fetch_main(void *arg)
{
    struct fetch_job *j = arg;
    j->rc = gl_prom_query_range_batch(j->prom, (size_t)j->nq, j->queries, j->start, j->end,
                                      j->step, j->bodies, &j->err);
    return 0;
}

static void job_start(struct fetch_job *j, int64_t start, int64_t end)
{
    j->start = start;
    j->end = end;
    j->rc = GL_OK;
    j->err.msg[0] = '\0';
    j->running = thrd_create(&j->th, fetch_main, j) == thrd_success;
    if (!j->running)
        fetch_main(j); /* no thread: fetch now */
}

static void job_wait(struct fetch_job *j)
{
    if (j->running) {
        thrd_join(j->th, NULL);
        j->running = false;
    }
}

enum gl_status gl_collect(const struct gl_config *c, const struct gl_cluster *cluster,
                          struct gl_store *s, int64_t from, int64_t to,
                          struct gl_collect_stats *stats, struct gl_error *err)
{
    struct gl_intern *notes = stats->notes;
    bool advance = stats->advance_watermark;
    memset(stats, 0, sizeof *stats);
    stats->notes = notes;
    stats->advance_watermark = advance;
    from = gl_floor_to(from, 3600);
    to = gl_floor_to(to + 3599, 3600);
    if (to <= from)
        return gl_error_set(err, GL_ERR_USAGE, "empty window: --to must be after --from");
    char *queries[Q_MAX] = {0};
    const int nq = query_count(c);
    struct gl_prom *prom = NULL;
    struct fetch_job jobs[2];
    memset(jobs, 0, sizeof jobs);
    for (int k = 0; k < 2; k++)
        for (int q = 0; q < Q_MAX; q++)
            gl_buf_init(&jobs[k].bodies[q]);
    enum gl_status rc = GL_OK;
    for (int q = 0; q < nq && !rc; q++)
        rc = gl_config_query(c, cluster, query_name(c, q), &queries[q], err);
    if (!rc)
        rc = gl_prom_new(&cluster->prom, &prom, err);
    const int64_t chunk = (int64_t)c->chunk_hours * 3600;
    const int64_t nchunks = (to - from + chunk - 1) / chunk;
    bool progress = s && isatty(STDERR_FILENO) && gl_log_threshold >= GL_LOG_INFO && nchunks > 1;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int k = 0; k < 2; k++) {
        jobs[k].prom = prom;
        jobs[k].queries = queries;
        jobs[k].nq = nq;
        jobs[k].step = c->step;
    }
    int cur = 0;
    if (!rc)
        job_start(&jobs[0], from, (from + chunk < to ? from + chunk : to) - c->step);
    for (int64_t cs = from; !rc && cs < to; cs += chunk) {
        int64_t ce = cs + chunk < to ? cs + chunk : to;
        size_t nsteps = (size_t)((ce - cs) / c->step);
        struct gl_matrix m[Q_MAX];
        memset(m, 0, sizeof m);
        job_wait(&jobs[cur]);
        if (jobs[cur].rc) {
            rc = jobs[cur].rc;
            *err = jobs[cur].err;
            break;
        }
        struct gl_buf *bodies = jobs[cur].bodies;
        int64_t next = cs + chunk;
        if (next < to)
            job_start(&jobs[cur ^ 1], next, (next + chunk < to ? next + chunk : to) - c->step);
        cur ^= 1;
        for (int q = 0; q < nq && !rc; q++) {
            struct gl_buf body = bodies[q];
            stats->bytes += (int64_t)body.len;
            char what[256];
            char ts[32];
            gl_time_format(cs, ts, sizeof ts);
            snprintf(what, sizeof what, "%s/api/v1/query_range (%s.promql, chunk %s)",
                     cluster->prom.url, query_name(c, q), ts);
            /* plausibility bounds (README "Wire integrity"): a device's
             * memory ≤ 2^20 MiB (1 TiB) or 2^40 bytes, a pod's GPU units ≤
             * 1024, a busy ratio ≤ 1 (GPU_UTIL ≤ 100 %), label series: any
             * finite value */
            struct gl_parse_opts po = {.max = 1048576.0,
                                       .accept_warnings = cluster->prom.accept_warnings,
                                       .naccept_warnings = cluster->prom.naccept_warnings};
            bool mem = q == Q_MEMORY || q == opt_pos(c, Q_OPT_MEM_LIMIT);
            if (mem && c->mem_unit == GL_UNIT_BYTES)
                po.max = 1099511627776.0;
            else if (mem)
                po.max = 1048576.0;
            else if (q == Q_POD_LABELS || q == Q_NS_LABELS || q == Q_NODE_LABELS)
                po.any_finite = true;
            else if (q == Q_ALLOCATION)
                po.max = 1024;
            else if (q >= Q_FIXED)
                po.max = 1, po.max_name = "DCGM_FI_DEV_GPU_UTIL", po.named_max = 100;
            rc = gl_matrix_parse_opts(body.data, body.len, cs, c->step, nsteps, what, &po, &m[q],
                                      err);
            for (int why = 0; !rc && why < GL_SKIP_N; why++)
                if (m[q].skipped[why])
                    gl_log(GL_LOG_WARN, "skipped samples query=%s chunk=%s reason=%s count=%zu",
                           query_name(c, q), ts, gl_skip_names[why], m[q].skipped[why]);
            size_t shown = sizeof m[q].bad / sizeof *m[q].bad;
            for (size_t k = 0; !rc && k < m[q].bad_samples && k < shown; k++)
                gl_log(GL_LOG_WARN, "skipped sample query=%s chunk=%s %s", query_name(c, q), ts,
                       m[q].bad[k]);
            if (!rc && q != Q_MEMORY)
                stats->bad_samples += (int64_t)m[q].bad_samples;
            gl_buf_free(&bodies[q]); /* parsed: keep memory bounded */
        }
        if (!rc) {
            const struct gl_matrix *compute[Q_MAX];
            for (int q = Q_FIXED; q < Q_FIXED + compute_count(c); q++)
                compute[q - Q_FIXED] = &m[q];
            int limit_q = opt_pos(c, Q_OPT_MEM_LIMIT);
            struct gl_chunk_input in = {
                .cluster = cluster,
                .memory = &m[Q_MEMORY], .fb_free = &m[Q_FREE], .fb_reserved = &m[Q_RESERVED],
                .pod_labels = &m[Q_POD_LABELS], .ns_labels = &m[Q_NS_LABELS],
                .allocation = &m[Q_ALLOCATION], .node_labels = &m[Q_NODE_LABELS],
                .compute = compute, .ncompute = (size_t)compute_count(c),
                .mem_limit = limit_q >= 0 ? &m[limit_q] : NULL};
            /* label precedence needs each label series' first appearance
             * across chunks: read (and later record) it in the database */
            struct gl_matrix *labels[] = {&m[Q_POD_LABELS], &m[Q_NS_LABELS], &m[Q_NODE_LABELS]};
            for (size_t i = 0; s && !rc && i < 3; i++)
                rc = label_history(cluster, s, labels[i], false, err);
            struct gl_rollup r;
            memset(&r, 0, sizeof r);
            if (!rc)
                rc = gl_integrate(c, &in, &r, err);
            if (!rc && s)
                rc = store_chunk(cluster, s, &r, stats->advance_watermark, labels, 3, err);
            if (!rc && stats->notes)
                note_findings(c, &r, stats->notes);
            stats->copy_warnings += (int64_t)r.copy_warnings;
            for (size_t h = 0; !rc && h < r.nhours; h++)
                stats->samples += r.samples_per_hour[h];
            stats->bad_samples += (int64_t)m[Q_MEMORY].bad_samples;
            gl_rollup_free(&r);
        }
        for (int q = 0; q < nq; q++)
            gl_matrix_free(&m[q]);
        if (!rc) {
            stats->chunks++;
            stats->hours += (ce - cs) / 3600;
            if (progress) {
                struct timespec t1;
                clock_gettime(CLOCK_MONOTONIC, &t1);
                double el = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
                double rate = el > 0 ? (double)stats->samples / el : 0;
                double eta = el / (double)stats->chunks * (double)(nchunks - stats->chunks);
                fprintf(stderr, "\r%s: %lld/%lld chunks, %.0f samples/s, ETA %.0fs   ", cluster->name,
                        (long long)stats->chunks, (long long)nchunks, rate, eta);
                if (stats->chunks == nchunks)
                    fputc('\n', stderr);
            }
            char ts[32];
            gl_time_format(cs, ts, sizeof ts);
            gl_log(GL_LOG_DEBUG, "chunk stored start=%s hours=%lld", ts,
                   (long long)((ce - cs) / 3600));
        }
    }
    for (int k = 0; k < 2; k++) {
        job_wait(&jobs[k]); /* a prefetch may run when a chunk failed */
        for (int q = 0; q < Q_MAX; q++)
            gl_buf_free(&jobs[k].bodies[q]);
    }
    gl_prom_free(prom);
    for (int q = 0; q < nq; q++)
        free(queries[q]);
    return rc;
}
