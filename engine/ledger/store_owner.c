/* store_owner — pod_owner rows (schema/005), the store layer's SQL for owner.c. */
#include "store_owner.h"
#include "store_sql.h"

enum gl_status gl_store_put_pod_owner(struct gl_store *s, const char *cluster, const char *ns,
                                      const char *pod, const char *kind, const char *name,
                                      int64_t seen_at, struct gl_error *err)
{
    static const char sql[] =
        "INSERT INTO pod_owner (cluster, namespace, pod, owner_kind, owner_name, seen_at)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        " ON CONFLICT (cluster, namespace, pod) DO UPDATE SET owner_kind = ?4, owner_name = ?5,"
        "  seen_at = ?6 WHERE ?6 >= seen_at";
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_prepare(s, sql, &st, "storing pod owners", err);
    if (rc)
        return rc;
    const char *v[] = {cluster, ns, pod, kind, name};
    for (int i = 0; i < 5; i++)
        sqlite3_bind_text(st, i + 1, v[i], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, seen_at);
    return gl_store_run_once(s, st, "storing pod owners", err);
}
