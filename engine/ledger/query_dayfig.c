/* query_dayfig — the advice's pod-hours without peak data and the fleet's
 * GPU sizes (query_dayfig.h): a day built with its figures (a row in both
 * pod_peak_day_built and pod_peak_day_figures, wholly inside the period)
 * is read from them, every other hour from its rows, so that a month of
 * built days is read without a month of usage and device_model_hour rows.
 * A missing count is a sum, so no hour is read twice: a day built for some
 * clusters reads the others' rows hour by hour, the clusters of each hour
 * found in usage's key. Sizes are distinct values, so a day reads its rows
 * unless every device's cluster is built, and the union is taken. */
#include "query.h"
#include "query_dayfig.h"
#include "store_sql.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* The period's days built with figures, by day then cluster. */
static const char figured_sql[] =
    "SELECT f.day, f.cluster, f.missing_pod_hours FROM pod_peak_day_figures f"
    " JOIN pod_peak_day_built b ON b.cluster = f.cluster AND b.day = f.day"
    " WHERE f.day >= ?1 AND f.day <= ?2 - 86400 ORDER BY 1, 2";

struct figured {
    int64_t day, missing;
    char *cluster;
};

struct figured_days {
    struct figured *d;
    size_t n;
};

static void figured_free(struct figured_days *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->d[i].cluster);
    free(f->d);
}

static enum gl_status read_figured(struct gl_store *s, const struct gl_period *p,
                                   struct figured_days *out, const char *what,
                                   struct gl_error *err)
{
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_query_period(s, figured_sql, p->start, p->end, &st, what, err);
    size_t cap = 0;
    int sr = SQLITE_DONE;
    while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->n == cap) {
            cap = cap ? cap * 2 : 32;
            out->d = gl_xrealloc(out->d, cap * sizeof *out->d);
        }
        const char *c = (const char *)sqlite3_column_text(st, 1);
        out->d[out->n++] = (struct figured){sqlite3_column_int64(st, 0),
                                            sqlite3_column_int64(st, 2), gl_strdup(c ? c : "")};
    }
    if (!rc && sr != SQLITE_DONE)
        rc = gl_store_fail(s, what, err);
    sqlite3_finalize(st);
    return rc;
}

/* The figured entries of day from *i on (sorted by day): [*i, *j). */
static void day_span(const struct figured_days *f, size_t i, size_t *j)
{
    *j = i;
    while (*j < f->n && f->d[*j].day == f->d[i].day)
        (*j)++;
}

/* st (?1, ?2 bound by the caller) stepped to its one integer, added to *sum. */
static enum gl_status add_count(struct gl_store *s, sqlite3_stmt *st, int64_t *sum,
                                const char *what, struct gl_error *err)
{
    int64_t v = 0;
    int sr = sqlite3_step(st);
    if (sr == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    if (sr != SQLITE_ROW)
        return gl_store_fail(s, what, err);
    if (__builtin_add_overflow(*sum, v, sum))
        return gl_error_set(err, GL_ERR_RUNTIME, "%s: the count overflows", what);
    return GL_OK;
}

static void bind2(sqlite3_stmt *st, int64_t a, int64_t b)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
}

/* The hours of a day built for some clusters: each hour's clusters found
 * in usage's key (hour, cluster, ...) one seek each, the rows of those
 * without figures that day counted. */
struct hour_read {
    sqlite3_stmt *first, *next, *count;
};

static enum gl_status missing_day_rows(struct gl_store *s, const struct hour_read *h,
                                       const struct figured_days *f, size_t i, size_t j,
                                       int64_t *sum, const char *what, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    int64_t day = f->d[i].day;
    for (int64_t hour = day; !rc && hour < day + 86400; hour += 3600) {
        char *prev = NULL;
        for (;;) {
            sqlite3_stmt *st = prev ? h->next : h->first;
            sqlite3_reset(st);
            sqlite3_bind_int64(st, 1, hour);
            if (prev)
                sqlite3_bind_text(st, 2, prev, -1, SQLITE_TRANSIENT);
            int sr = sqlite3_step(st);
            if (sr != SQLITE_ROW) {
                if (sr != SQLITE_DONE)
                    rc = gl_store_fail(s, what, err);
                sqlite3_reset(st);
                break;
            }
            const char *c = (const char *)sqlite3_column_text(st, 0);
            free(prev);
            prev = gl_strdup(c ? c : "");
            sqlite3_reset(st);
            bool built = false;
            for (size_t k = i; k < j && !built; k++)
                built = strcmp(f->d[k].cluster, prev) == 0;
            if (built)
                continue;
            bind2(h->count, hour, 0);
            sqlite3_bind_text(h->count, 2, prev, -1, SQLITE_STATIC);
            if ((rc = add_count(s, h->count, sum, what, err)))
                break;
        }
        free(prev);
    }
    return rc;
}

enum gl_status gl_query_advise_missing(struct gl_store *s, const struct gl_period *p,
                                       int64_t *pod_hours, struct gl_error *err)
{
    static const char what[] = "advise: reading hours without peaks";
    static const char range_sql[] = GL_DAYFIG_MISSING("u.hour >= ?1 AND u.hour < ?2");
    static const char first_sql[] =
        "SELECT cluster FROM usage WHERE hour = ?1 ORDER BY cluster LIMIT 1";
    static const char next_sql[] =
        "SELECT cluster FROM usage WHERE hour = ?1 AND cluster > ?2 ORDER BY cluster LIMIT 1";
    static const char hour_sql[] = GL_DAYFIG_MISSING("u.hour = ?1 AND u.cluster = ?2");
    struct figured_days f = {0};
    struct hour_read h = {0};
    sqlite3_stmt *range = NULL;
    int64_t sum = 0;
    enum gl_status rc;
    if (!(rc = read_figured(s, p, &f, what, err)) &&
        !(rc = gl_store_prepare(s, range_sql, &range, what, err)) &&
        !(rc = gl_store_prepare(s, first_sql, &h.first, what, err)) &&
        !(rc = gl_store_prepare(s, next_sql, &h.next, what, err)) &&
        !(rc = gl_store_prepare(s, hour_sql, &h.count, what, err))) {
        int64_t from = p->start; /* the rows read up to here */
        for (size_t i = 0, j; !rc && i < f.n; i = j) {
            day_span(&f, i, &j);
            for (size_t k = i; k < j; k++)
                if (__builtin_add_overflow(sum, f.d[k].missing, &sum))
                    rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: the count overflows", what);
            if (!rc && from < f.d[i].day) {
                bind2(range, from, f.d[i].day);
                rc = add_count(s, range, &sum, what, err);
            }
            if (!rc)
                rc = missing_day_rows(s, &h, &f, i, j, &sum, what, err);
            from = f.d[i].day + 86400;
        }
        if (!rc && from < p->end) {
            bind2(range, from, p->end);
            rc = add_count(s, range, &sum, what, err);
        }
    }
    sqlite3_finalize(range);
    sqlite3_finalize(h.first);
    sqlite3_finalize(h.next);
    sqlite3_finalize(h.count);
    figured_free(&f);
    *pod_hours = rc ? 0 : sum;
    return rc;
}

/* ---- sizes ---- */

/* The fleet's sizes being read: the array, its length and room. */
struct size_read {
    struct gl_fleet_size *x;
    size_t n, cap;
};

static enum gl_status add_sizes(struct gl_store *s, sqlite3_stmt *st, struct size_read *r,
                                const char *what, struct gl_error *err)
{
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        if (r->n == r->cap) {
            r->cap = r->cap ? r->cap * 2 : 16;
            r->x = gl_xrealloc(r->x, r->cap * sizeof *r->x);
        }
        const char *m = (const char *)sqlite3_column_text(st, 0);
        const char *pr = (const char *)sqlite3_column_text(st, 1);
        r->x[r->n++] = (struct gl_fleet_size){gl_strdup(m ? m : ""), gl_strdup(pr ? pr : ""),
                                              sqlite3_column_int64(st, 2)};
    }
    sqlite3_reset(st);
    return sr == SQLITE_DONE ? GL_OK : gl_store_fail(s, what, err);
}

/* SQL's ORDER BY 1, 2, 3 (text by bytes, as SQLite's BINARY collation). */
static int size_cmp(const void *pa, const void *pb)
{
    const struct gl_fleet_size *a = pa, *b = pb;
    int c = strcmp(a->model, b->model);
    if (!c)
        c = strcmp(a->profile, b->profile);
    return c ? c : (a->capacity_mib > b->capacity_mib) - (a->capacity_mib < b->capacity_mib);
}

/* Is every device's cluster built with figures on the day of [i, j)? */
static enum gl_status all_built(struct gl_store *s, sqlite3_stmt *clusters,
                                const struct figured_days *f, size_t i, size_t j, bool *yes,
                                const char *what, struct gl_error *err)
{
    int sr;
    *yes = true;
    while (*yes && (sr = sqlite3_step(clusters)) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(clusters, 0);
        bool found = false;
        for (size_t k = i; k < j && !found; k++)
            found = strcmp(f->d[k].cluster, c ? c : "") == 0;
        *yes = found;
    }
    bool failed = *yes && sr != SQLITE_DONE;
    sqlite3_reset(clusters);
    return failed ? gl_store_fail(s, what, err) : GL_OK;
}

enum gl_status gl_query_advise_sizes(struct gl_store *s, const struct gl_period *p,
                                     struct gl_fleet_size **out, size_t *n,
                                     struct gl_error *err)
{
    static const char what[] = "advise: reading the fleet's GPU sizes";
    static const char range_sql[] = GL_DAYFIG_SIZES("m.hour >= ?1 AND m.hour < ?2");
    static const char clusters_sql[] = "SELECT DISTINCT cluster FROM device";
    static const char stored_sql[] =
        "SELECT DISTINCT z.model, z.profile, z.capacity_mib FROM pod_peak_day_size z"
        " JOIN pod_peak_day_figures f ON f.cluster = z.cluster AND f.day = z.day"
        " JOIN pod_peak_day_built b ON b.cluster = z.cluster AND b.day = z.day"
        " WHERE z.day >= ?1 AND z.day <= ?2 - 86400";
    struct figured_days f = {0};
    struct size_read r = {0};
    sqlite3_stmt *range = NULL, *clusters = NULL, *stored = NULL;
    enum gl_status rc;
    if (!(rc = read_figured(s, p, &f, what, err)) &&
        !(rc = gl_store_prepare(s, range_sql, &range, what, err)) &&
        !(rc = gl_store_prepare(s, clusters_sql, &clusters, what, err)) &&
        !(rc = gl_store_query_period(s, stored_sql, p->start, p->end, &stored, what, err)) &&
        !(rc = add_sizes(s, stored, &r, what, err))) {
        /* the rows of every day not built for all clusters, in spans */
        int64_t from = p->start;
        for (size_t i = 0, j; !rc && i < f.n; i = j) {
            day_span(&f, i, &j);
            bool whole;
            if ((rc = all_built(s, clusters, &f, i, j, &whole, what, err)) || !whole)
                continue;
            if (from < f.d[i].day) {
                bind2(range, from, f.d[i].day);
                rc = add_sizes(s, range, &r, what, err);
            }
            from = f.d[i].day + 86400;
        }
        if (!rc && from < p->end) {
            bind2(range, from, p->end);
            rc = add_sizes(s, range, &r, what, err);
        }
    }
    sqlite3_finalize(range);
    sqlite3_finalize(clusters);
    sqlite3_finalize(stored);
    figured_free(&f);
    if (rc) {
        gl_fleet_sizes_free(r.x, r.n);
        *out = NULL;
        *n = 0;
        return rc;
    }
    /* the union: sorted, each size once */
    if (r.n)
        qsort(r.x, r.n, sizeof *r.x, size_cmp);
    size_t m = 0;
    for (size_t i = 0; i < r.n; i++) {
        if (m && !size_cmp(&r.x[m - 1], &r.x[i])) {
            free(r.x[i].model);
            free(r.x[i].profile);
            continue;
        }
        r.x[m++] = r.x[i];
    }
    *out = r.x;
    *n = m;
    return GL_OK;
}

void gl_fleet_sizes_free(struct gl_fleet_size *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(x[i].model);
        free(x[i].profile);
    }
    free(x);
}
