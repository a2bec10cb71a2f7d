/* store_peak — pod_peak rows (schema/013), the store layer's SQL for collect. */
#include "store_peak.h"
#include "store_sql.h"

enum gl_status gl_store_clear_peaks(struct gl_store *s, const char *cluster, int64_t from,
                                    int64_t to, struct gl_error *err)
{
    return gl_store_clear_range(s,
                                "DELETE FROM pod_peak WHERE cluster = ?1 AND hour >= ?2 AND "
                                "hour < ?3",
                                cluster, from, to, "replacing pod peaks", err);
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
