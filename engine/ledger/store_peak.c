/* store_peak — pod_peak rows (schema/013), the store layer's SQL for collect. */
#include "store_peak.h"
#include "store_sql.h"

enum gl_status gl_store_clear_peaks(struct gl_store *s, const char *cluster, int64_t from,
                                    int64_t to, struct gl_error *err)
{
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_prepare(
        s, "DELETE FROM pod_peak WHERE cluster = ?1 AND hour >= ?2 AND hour < ?3", &st,
        "replacing pod peaks", err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, to);
    int sr = sqlite3_step(st);
    sqlite3_finalize(st);
    return sr == SQLITE_DONE ? GL_OK : gl_store_fail(s, "replacing pod peaks", err);
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
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++) {
        const struct gl_peak_row *r = &rows[i];
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, r->cluster, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, r->hour);
        sqlite3_bind_text(st, 3, r->ns, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, r->pod, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, r->device_id);
        sqlite3_bind_int64(st, 6, r->bucket);
        sqlite3_bind_int64(st, 7, r->steps);
        sqlite3_bind_int64(st, 8, r->peak_mib);
        sqlite3_bind_int64(st, 9, r->alloc_mib);
        sqlite3_bind_int64(st, 10, r->alloc_ugpu);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            return gl_store_fail(s, "storing pod peaks", err);
        }
    }
    sqlite3_finalize(st);
    return GL_OK;
}
