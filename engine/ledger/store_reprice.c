/* store_reprice — reprice_accepted rows (schema/006) and the list of closed
 * periods, the store layer's SQL for reprice.c. */
#include "store_reprice.h"

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
    enum gl_status rc = gl_store_query_named(s,
                                             "SELECT model, day, price_key, unit_price FROM "
                                             "reprice_accepted WHERE period = ?1",
                                             period, &st, "reading accepted repricings", err);
    if (rc)
        return rc;
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

/* ---- closed_check (schema/008) ---- */

/* Appends the rows of sql (its parameters :period, :start, :end bound to
 * p's) to b: a tag line, then each row's columns as "<length>:<text>",
 * tab-separated, one row a line (so that no two row sets read alike). */
static enum gl_status append_rows(struct gl_store *s, const char *tag, const char *sql,
                                  const struct gl_period *p, struct gl_buf *b,
                                  struct gl_error *err)
{
    static const char what[] = "reading what a closed period's figures depend on";
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_prepare(s, sql, &st, what, err);
    if (rc)
        return rc;
    int i;
    if ((i = sqlite3_bind_parameter_index(st, ":period")))
        sqlite3_bind_text(st, i, p->name, -1, SQLITE_STATIC);
    if ((i = sqlite3_bind_parameter_index(st, ":start")))
        sqlite3_bind_int64(st, i, p->start);
    if ((i = sqlite3_bind_parameter_index(st, ":end")))
        sqlite3_bind_int64(st, i, p->end);
    bool ok = gl_buf_printf(b, "[%s]\n", tag);
    int sr = SQLITE_DONE;
    while (ok && (sr = sqlite3_step(st)) == SQLITE_ROW) {
        for (int c = 0, n = sqlite3_column_count(st); ok && c < n; c++) {
            const char *v = (const char *)sqlite3_column_text(st, c);
            ok = gl_buf_printf(b, "%s%zu:%s", c ? "\t" : "", v ? strlen(v) : 0, v ? v : "");
        }
        ok = ok && gl_buf_puts(b, "\n");
    }
    sqlite3_finalize(st);
    if (!ok)
        return gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    return sr == SQLITE_DONE ? GL_OK : gl_store_fail(s, what, err);
}

enum gl_status gl_store_closed_inputs(struct gl_store *s, const struct gl_period *p,
                                      struct gl_buf *b, struct gl_error *err)
{
    static const struct {
        const char *tag, *sql;
    } q[] = {
        /* `+period`: a scan, not a search (CLOSED_SCAN in query.c) */
        {"closed", "SELECT closed_at FROM closed_period WHERE +period = :period"},
        /* every stored chunk of one of its hours bumps it (schema/003) */
        {"data", "SELECT version FROM data_version WHERE period = :period"},
        {"accepted", "SELECT model, day, price_key, unit_price FROM reprice_accepted"
                     " WHERE period = :period ORDER BY model, day, price_key"},
        /* its correction rows frozen in later closed periods */
        {"corrections",
         "SELECT period, team, cluster, model, kind, price_key, day, unit_price, mib_seconds,"
         " gb_hours_nano, billed_minor FROM frozen_row"
         " WHERE corrected_period = :period AND period > :period"
         " ORDER BY period, team, cluster, model, kind, price_key, day"},
        /* a device whose model changes moves its rows' aggregates (store.c);
         * a node's pseudo-device has its model in its key */
        {"devices", "SELECT cluster, uuid, gpu_i_id, model FROM device"
                    " WHERE uuid NOT LIKE 'node:%' AND first_seen < :end AND last_seen >= :start"
                    " ORDER BY cluster, uuid, gpu_i_id"},
        /* the capacity GPU-Hours prices convert with (gl_query_model_capacity) */
        {"capacity", "SELECT model, MAX(max_capacity_mib) FROM device"
                     " WHERE gpu_i_id = '' AND uuid NOT LIKE 'node:%' GROUP BY model ORDER BY model"},
    };
    enum gl_status rc = GL_OK;
    for (size_t i = 0; !rc && i < sizeof q / sizeof *q; i++)
        rc = append_rows(s, q[i].tag, q[i].sql, p, b, err);
    return rc;
}

enum gl_status gl_store_closed_check_get(struct gl_store *s, const char *period,
                                         char fp[GL_CLOSED_FP], bool *corrections, bool *found,
                                         struct gl_error *err)
{
    static const char what[] = "reading the last check of a closed period";
    *found = false;
    *corrections = true;
    fp[0] = '\0';
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_query_named(
        s, "SELECT fingerprint, corrections FROM closed_check WHERE period = ?1", period, &st,
        what, err);
    if (rc)
        return rc;
    int sr = sqlite3_step(st);
    if (sr == SQLITE_ROW) {
        const char *f = (const char *)sqlite3_column_text(st, 0);
        snprintf(fp, GL_CLOSED_FP, "%s", f ? f : "");
        *corrections = sqlite3_column_int64(st, 1) != 0;
        *found = true;
    }
    sqlite3_finalize(st);
    return sr == SQLITE_ROW || sr == SQLITE_DONE ? GL_OK : gl_store_fail(s, what, err);
}

enum gl_status gl_store_closed_check_put(struct gl_store *s, const char *period,
                                         const char *fp, bool corrections, int64_t now,
                                         struct gl_error *err)
{
    static const char what[] = "storing the check of a closed period";
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_prepare(s,
                                         "INSERT OR REPLACE INTO closed_check (period, "
                                         "fingerprint, corrections, checked_at) VALUES (?1, ?2, "
                                         "?3, ?4)",
                                         &st, what, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, period, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, fp, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, corrections ? 1 : 0);
    sqlite3_bind_int64(st, 4, now);
    return gl_store_run_once(s, st, what, err);
}
