/* store_reprice — reprice_accepted rows (schema/006) and the list of closed
 * periods, the store layer's SQL for reprice.c. */
#include "reprice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_sql.h"
#include "util.h"

enum gl_status gl_store_closed_periods(struct gl_store *s, char (**out)[8], size_t *n,
                                       struct gl_error *err)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_prepare(s, "SELECT period FROM closed_period ORDER BY period",
                                         &st, "reading closed periods", err);
    if (rc)
        return rc;
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *p = (const char *)sqlite3_column_text(st, 0);
        *out = gl_xrealloc(*out, (*n + 1) * sizeof **out);
        snprintf((*out)[*n], sizeof **out, "%s", p ? p : "");
        (*n)++;
    }
    sqlite3_finalize(st);
    if (sr != SQLITE_DONE) {
        free(*out);
        *out = NULL;
        *n = 0;
        return gl_store_fail(s, "reading closed periods", err);
    }
    return GL_OK;
}

enum gl_status gl_store_reprice_accepted(struct gl_store *s, const char *period,
                                         gl_reprice_row_fn fn, void *ctx, struct gl_error *err)
{
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_prepare(s,
                                         "SELECT model, day, price_key, unit_price FROM "
                                         "reprice_accepted WHERE period = ?1",
                                         &st, "reading accepted repricings", err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, period, -1, SQLITE_STATIC);
    int sr;
    while (!rc && (sr = sqlite3_step(st)) == SQLITE_ROW)
        rc = fn(ctx, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
                (const char *)sqlite3_column_text(st, 2),
                (const char *)sqlite3_column_text(st, 3), err);
    sqlite3_finalize(st);
    if (!rc && sr != SQLITE_DONE)
        rc = gl_store_fail(s, "reading accepted repricings", err);
    return rc;
}

enum gl_status gl_store_reprice_accept(struct gl_store *s, const char *period, const char *model,
                                       int64_t day, size_t n, const char *const *keys,
                                       const char *const *units, int64_t now,
                                       struct gl_error *err)
{
    static const char what[] = "storing an accepted repricing";
    sqlite3_stmt *del, *ins;
    enum gl_status rc = gl_store_prepare(
        s, "DELETE FROM reprice_accepted WHERE period = ?1 AND model = ?2 AND day = ?3", &del,
        what, err);
    if (rc)
        return rc;
    sqlite3_bind_text(del, 1, period, -1, SQLITE_STATIC);
    sqlite3_bind_text(del, 2, model, -1, SQLITE_STATIC);
    sqlite3_bind_int64(del, 3, day);
    int sr = sqlite3_step(del);
    sqlite3_finalize(del);
    if (sr != SQLITE_DONE)
        return gl_store_fail(s, what, err);
    if ((rc = gl_store_prepare(s,
                               "INSERT INTO reprice_accepted (period, model, day, price_key, "
                               "unit_price, accepted_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                               &ins, what, err)))
        return rc;
    for (size_t i = 0; !rc && i < n; i++) {
        sqlite3_reset(ins);
        sqlite3_bind_text(ins, 1, period, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 2, model, -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 3, day);
        sqlite3_bind_text(ins, 4, keys[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 5, units[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 6, now);
        if (sqlite3_step(ins) != SQLITE_DONE)
            rc = gl_store_fail(s, what, err);
    }
    sqlite3_finalize(ins);
    return rc;
}
