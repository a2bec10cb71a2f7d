/* store_admin — prune and backup (SQLite; store layer). */
#include "store_admin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_sql.h"
#include "util.h"

void gl_prune_report_free(struct gl_prune_report *r)
{
    if (!r)
        return;
    free(r->periods);
    memset(r, 0, sizeof *r);
}

static enum gl_status db_fail(struct gl_store *s, const char *what, struct gl_error *err)
{
    return gl_store_fail(s, what, err);
}

static enum gl_status exec(struct gl_store *s, const char *sql, const char *what,
                           struct gl_error *err)
{
    if (sqlite3_exec(gl_store_db(s), sql, NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(s, what, err);
    return GL_OK;
}

static enum gl_status used_bytes(struct gl_store *s, int64_t *bytes, struct gl_error *err)
{
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_prepare(
        s,
        "SELECT (p.page_count - f.freelist_count) * s.page_size "
        "FROM pragma_page_count() p, pragma_freelist_count() f, pragma_page_size() s",
        &st, "reading the database size", err);
    return rc ? rc : gl_store_read_one(s, st, bytes, "reading the database size", err);
}

/* The periods before `before` with usage rows: name, closed, rows, hours. */
static const char periods_sql[] =
    "SELECT u.period, EXISTS (SELECT 1 FROM closed_period c WHERE c.period = u.period), "
    "  u.n, (SELECT count(*) FROM collected_hour h "
    "        WHERE strftime('%Y-%m', h.hour, 'unixepoch') = u.period) "
    "FROM (SELECT strftime('%Y-%m', hour, 'unixepoch') AS period, count(*) AS n "
    "      FROM usage WHERE hour < ?1 GROUP BY 1) u ORDER BY 1";

/* keep_open: an open period is skipped (logged) instead of refused. */
static enum gl_status prune(struct gl_store *s, const struct gl_period *before, bool dry_run,
                            bool vacuum, bool keep_open, struct gl_prune_report *r,
                            struct gl_error *err)
{
    memset(r, 0, sizeof *r);
    enum gl_status rc = used_bytes(s, &r->bytes_before, err);
    if (rc)
        return rc;
    r->bytes_after = r->bytes_before;
    /* the write lock first: nothing changes between the check and the delete */
    if ((rc = dry_run ? gl_store_read_begin(s, err) : gl_store_begin(s, err)))
        return rc;
    sqlite3_stmt *st = NULL;
    if ((rc = gl_store_prepare(s, periods_sql, &st, "listing the periods to prune", err)))
        goto out;
    sqlite3_bind_int64(st, 1, before->start);
    int sr;
    while ((sr = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        bool closed = sqlite3_column_int(st, 1) != 0;
        if (!closed && keep_open) {
            gl_log(GL_LOG_WARN, "retention: period not closed, its hourly rows are kept "
                                "period=%s (close it: gpuledger close --period %s)",
                   name, name);
            continue;
        }
        if (!closed) {
            rc = gl_error_set(err, GL_ERR_STATE,
                              "period %s is not closed: only closed periods are pruned (their "
                              "invoices and FOCUS rows are frozen); close it first (gpuledger "
                              "close --period %s) or prune --before %s",
                              name, name, name);
            break;
        }
        r->periods = gl_xrealloc(r->periods, (r->n + 1) * sizeof *r->periods);
        struct gl_prune_period *p = &r->periods[r->n++];
        snprintf(p->period, sizeof p->period, "%s", name);
        p->usage_rows = sqlite3_column_int64(st, 2);
        p->hours = sqlite3_column_int64(st, 3);
    }
    if (!rc && sr != SQLITE_DONE)
        rc = db_fail(s, "listing the periods to prune", err);
    sqlite3_finalize(st);
    st = NULL;
    for (size_t i = 0; !rc && !dry_run && i < r->n; i++) {
        struct gl_period p;
        gl_period_parse(r->periods[i].period, &p);
        /* the aggregates keep the period's figures (schema/004_daily.sql:
         * a DELETE while usage_prune holds a row leaves them as they are) */
        static const char *const sql[] = {
            "INSERT INTO usage_prune (reason) SELECT 'prune' WHERE ?1 < ?2",
            "DELETE FROM usage WHERE hour >= ?1 AND hour < ?2",
            "DELETE FROM usage_prune WHERE ?1 < ?2",
            /* the mark of a pruned period (store_admin.h) */
            "UPDATE collected_hour SET samples = -1 WHERE hour >= ?1 AND hour < ?2",
            /* a built day's advice figures count its usage rows (schema/014) */
            "DELETE FROM pod_peak_day_built WHERE day > ?1 - 86400 AND day < ?2",
            "DELETE FROM pod_peak_day_figures WHERE day > ?1 - 86400 AND day < ?2",
            "DELETE FROM pod_peak_day_size WHERE day > ?1 - 86400 AND day < ?2",
        };
        for (size_t k = 0; !rc && k < sizeof sql / sizeof *sql; k++) {
            if ((rc = gl_store_query_period(s, sql[k], p.start, p.end, &st, "pruning", err)))
                break;
            if (sqlite3_step(st) != SQLITE_DONE)
                rc = db_fail(s, "pruning", err);
            sqlite3_finalize(st);
            st = NULL;
        }
    }
out:
    if (dry_run) {
        gl_store_read_end(s);
    } else if (rc) {
        gl_store_rollback(s);
    } else if ((rc = gl_store_commit(s, err))) {
        gl_store_rollback(s);
    }
    if (!rc && !dry_run && r->n && vacuum && !(rc = exec(s, "VACUUM", "VACUUM after pruning", err)))
        rc = used_bytes(s, &r->bytes_after, err);
    if (rc)
        gl_prune_report_free(r);
    return rc;
}

enum gl_status gl_admin_prune(struct gl_store *s, const struct gl_period *before, bool dry_run,
                              bool vacuum, struct gl_prune_report *r, struct gl_error *err)
{
    return prune(s, before, dry_run, vacuum, false, r, err);
}

enum gl_status gl_admin_prune_retention(struct gl_store *s, int months, int64_t now,
                                        size_t *pruned, struct gl_error *err)
{
    *pruned = 0;
    struct gl_period p;
    gl_period_of(now, &p);
    for (int i = 0; i < months; i++)
        gl_period_of(p.start - 1, &p);
    struct gl_prune_report r;
    enum gl_status rc = prune(s, &p, false, false, true, &r, err);
    for (size_t i = 0; !rc && i < r.n; i++)
        gl_log(GL_LOG_INFO, "retention: pruned period=%s usage_rows=%lld hours=%lld "
                            "(retention.months %d)",
               r.periods[i].period, (long long)r.periods[i].usage_rows,
               (long long)r.periods[i].hours, months);
    if (!rc)
        *pruned = r.n;
    gl_prune_report_free(&r);
    return rc;
}

enum gl_status gl_admin_period_pruned(struct gl_store *s, const char *period, bool *pruned,
                                      struct gl_error *err)
{
    *pruned = false;
    struct gl_period p;
    if (!gl_period_parse(period, &p))
        return gl_error_set(err, GL_ERR_RUNTIME, "\"%s\" is not a period", period);
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_query_period(
        s, "SELECT EXISTS (SELECT 1 FROM collected_hour WHERE hour >= ?1 AND hour < ?2 "
           "AND samples = -1)",
        p.start, p.end, &st, "reading whether a period was pruned", err);
    int64_t any = 0;
    if (!rc)
        rc = gl_store_read_one(s, st, &any, "reading whether a period was pruned", err);
    *pruned = any != 0;
    return rc;
}

/* fsync of a file or folder by path. */
static enum gl_status sync_path(const char *path, int flags, struct gl_error *err)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot sync: %s", path, strerror(e));
    }
    close(fd);
    return GL_OK;
}

enum gl_status gl_admin_backup(struct gl_store *s, const char *path, int64_t *bytes,
                               struct gl_error *err)
{
    *bytes = 0;
    struct gl_buf tmp;
    gl_buf_init(&tmp);
    if (!gl_buf_printf(&tmp, "%s.tmp-%ld", path, (long)getpid()))
        return gl_error_set(err, GL_ERR_RUNTIME, "out of memory");
    unlink(tmp.data);
    sqlite3 *dst = NULL;
    enum gl_status rc = GL_OK;
    if (sqlite3_open_v2(tmp.data, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot create: %s", tmp.data,
                          dst ? sqlite3_errmsg(dst) : "out of memory");
        goto out;
    }
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", gl_store_db(s), "main");
    if (!b) {
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: backup: %s", tmp.data, sqlite3_errmsg(dst));
        goto out;
    }
    /* every page in one step: one read transaction of the source, so the
     * copy is one consistent state however the writers go on (WAL) */
    int sr = sqlite3_backup_step(b, -1);
    int fr = sqlite3_backup_finish(b);
    if (sr != SQLITE_DONE || fr != SQLITE_OK) {
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: backup of the database failed: %s",
                          tmp.data, sqlite3_errstr(sr != SQLITE_DONE ? sr : fr));
        goto out;
    }
    /* one self-contained file, checked before it replaces anything */
    sqlite3_stmt *st = NULL;
    if (sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(dst, "PRAGMA quick_check", -1, &st, NULL) != SQLITE_OK) {
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: %s", tmp.data, sqlite3_errmsg(dst));
        goto out;
    }
    const char *verdict = sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0)
                                                         : NULL;
    if (!verdict || strcmp(verdict, "ok") != 0)
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: the copy fails PRAGMA quick_check: %s",
                          tmp.data, verdict ? verdict : sqlite3_errmsg(dst));
    sqlite3_finalize(st);
    if (rc)
        goto out;
    if (sqlite3_close(dst) != SQLITE_OK) {
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot close the copy", tmp.data);
        dst = NULL;
        goto out;
    }
    dst = NULL;
    struct stat sb;
    if ((rc = sync_path(tmp.data, O_RDONLY, err)))
        goto out;
    if (rename(tmp.data, path) != 0) {
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot rename %s into place: %s", path,
                          tmp.data, strerror(errno));
        goto out;
    }
    char *dir = gl_path_dir(path);
    rc = sync_path(dir, O_RDONLY | O_DIRECTORY, err);
    free(dir);
    if (!rc && stat(path, &sb) == 0)
        *bytes = (int64_t)sb.st_size;
out:
    if (dst)
        sqlite3_close(dst);
    if (rc)
        unlink(tmp.data);
    gl_buf_free(&tmp);
    return rc;
}
