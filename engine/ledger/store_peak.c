/* store_peak — pod_peak rows (schema/013), the store layer's SQL for collect. */
#include "store_peak.h"
#include "store_sql.h"

/* The rows of [from, to), then the built daily groups (schema/014) of
 * every day they touch: once a range rather than a trigger on each row
 * written, since this is the one writer of pod_peak and every write is
 * after a clear of its range in the same transaction. The groups go with
 * their stamp, so a day whose rows are all gone keeps none. */
static const char *const clear_sql[] = {
    "DELETE FROM pod_peak WHERE cluster = ?1 AND hour >= ?2 AND hour < ?3",
    "DELETE FROM pod_peak_day_built WHERE cluster = ?1 AND day >= ?2 - ?2 % 86400 AND day < ?3",
    "DELETE FROM pod_peak_day WHERE cluster = ?1 AND day >= ?2 - ?2 % 86400 AND day < ?3",
    "DELETE FROM pod_peak_day_figures WHERE cluster = ?1 AND day >= ?2 - ?2 % 86400"
    " AND day < ?3",
    "DELETE FROM pod_peak_day_size WHERE cluster = ?1 AND day >= ?2 - ?2 % 86400"
    " AND day < ?3",
    "DELETE FROM node_peak_hour WHERE cluster = ?1 AND hour >= ?2 - ?2 % 86400"
    " AND hour < ?3 + (86400 - ?3 % 86400) % 86400",
};

enum gl_status gl_store_clear_peaks(struct gl_store *s, const char *cluster, int64_t from,
                                    int64_t to, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    for (size_t k = 0; !rc && k < sizeof clear_sql / sizeof *clear_sql; k++)
        rc = gl_store_clear_range(s, clear_sql[k], cluster, from, to, "replacing pod peaks",
                                  err);
    return rc;
}

enum gl_status gl_store_put_peaks(struct gl_store *s, const struct gl_peak_row *rows, size_t n,
                                  struct gl_error *err)
{
    static const char sql[] =
        "INSERT INTO pod_peak (cluster, hour, namespace, pod, device_id, bucket, steps,"
        " peak_mib, alloc_mib, alloc_ugpu) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
        " ON CONFLICT DO UPDATE SET steps = steps + excluded.steps,"
        "  peak_mib = max(peak_mib, excluded.peak_mib),"
        "  alloc_mib = max(alloc_mib, excluded.alloc_mib),"
        "  alloc_ugpu = max(alloc_ugpu, excluded.alloc_ugpu)";
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_prepare(s, sql, &st, "storing pod peaks", err);
    for (size_t i = 0; !rc && i < n; i++) {
        const struct gl_peak_row *r = &rows[i];
        sqlite3_bind_text(st, 1, r->cluster, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, r->hour);
        sqlite3_bind_text(st, 3, r->ns, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, r->pod, -1, SQLITE_STATIC);
        const int64_t v[] = {r->device_id, r->bucket,    r->steps,
                             r->peak_mib,  r->alloc_mib, r->alloc_ugpu};
        for (int k = 0; k < 6; k++)
            sqlite3_bind_int64(st, k + 5, v[k]);
        rc = gl_store_put_row(s, st, "storing pod peaks", err);
    }
    sqlite3_finalize(st);
    return rc;
}
