/* store_work — work_units rows (schema/012), the store layer's SQL for work.c. */
#include "store_work.h"
#include "store_sql.h"

static enum gl_status put_rows(struct gl_store *s, const char *cluster, int64_t from,
                               int64_t to, const struct gl_work_row *rows, size_t n,
                               struct gl_error *err)
{
    static const char del[] = "DELETE FROM work_units WHERE cluster = ?1 AND hour >= ?2 AND hour < ?3";
    static const char ins[] =
        "INSERT INTO work_units (cluster, hour, namespace, pod, counter, unit, units, gaps)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
    const char *what = "storing units of work";
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_clear_range(s, del, cluster, from, to, what, err);
    if (!rc)
        rc = gl_store_prepare(s, ins, &st, what, err);
    for (size_t i = 0; !rc && i < n; i++) {
        const struct gl_work_row *r = &rows[i];
        sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, r->hour);
        const char *v[] = {r->ns, r->pod, r->counter, r->unit};
        for (int k = 0; k < 4; k++)
            sqlite3_bind_text(st, k + 3, v[k], -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 7, r->units);
        sqlite3_bind_int64(st, 8, r->gaps);
        rc = gl_store_put_row(s, st, what, err);
    }
    sqlite3_finalize(st);
    return rc;
}

enum gl_status gl_store_put_work(struct gl_store *s, const char *cluster, int64_t from,
                                 int64_t to, const struct gl_work_row *rows, size_t n,
                                 struct gl_error *err)
{
    enum gl_status rc = gl_store_begin(s, err);
    if (rc)
        return rc;
    return gl_store_finish(s, put_rows(s, cluster, from, to, rows, n, err), err);
}
