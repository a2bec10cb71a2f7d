/* Unit tests: the store's schema versions and collect counts
 * (engine/ledger/store.c): a version-1 database is migrated to 2 keeping its
 * rows, its hours' memory samples stand in for the missing counts, counts
 * round-trip, and unknown versions are refused before any change. */
#include <sqlite3.h>
#include <unistd.h>

#include "schema_sql.h"
#include "store.h"
#include "tap.h"

static const char *db_path(const char *name)
{
    static char path[512];
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(path, sizeof path, "%s/gl-unit-%d-%s", dir, (int)getpid(), name);
    unlink(path);
    return path;
}

static int user_version(const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    int v = -12345;
    if (sqlite3_open(path, &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return v;
}

static void migrates_version_1(void)
{
    const char *path = db_path("v1.db");
    sqlite3 *db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, gl_migrations[0], NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       "INSERT INTO collected_hour VALUES ('eu', 7200, 1, 120, 0);"
                       "INSERT INTO collected_hour VALUES ('eu', 10800, 1, 0, 0);"
                       "PRAGMA user_version = 1;",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    struct gl_store *s = NULL;
    struct gl_error err = {0};
    CHECK(gl_store_open(path, &s, &err) == GL_OK);
    CHECK(user_version(path) == gl_store_schema_version()); /* every later schema applied */
    struct gl_query_counts n;
    /* an hour of version 1: its memory samples stand in */
    CHECK(gl_store_query_counts(s, "eu", 7200, "fb_used", &n, &err) == GL_OK);
    CHECK(!n.found && n.legacy && n.samples == 120);
    CHECK(gl_store_query_counts(s, "eu", 10800, "fb_used", &n, &err) == GL_OK);
    CHECK(!n.found && n.legacy && n.samples == 0);
    CHECK(gl_store_query_counts(s, "eu", 14400, "fb_used", &n, &err) == GL_OK);
    CHECK(!n.found && !n.legacy && n.samples == 0);
    /* recorded counts win, and an hour with counts is no longer legacy */
    CHECK(gl_store_put_counts(s, "eu", 7200, "fb_used", 3, 90, &err) == GL_OK);
    CHECK(gl_store_query_counts(s, "eu", 7200, "fb_used", &n, &err) == GL_OK);
    CHECK(n.found && !n.legacy && n.series == 3 && n.samples == 90);
    CHECK(gl_store_query_counts(s, "eu", 7200, "pod_labels", &n, &err) == GL_OK);
    CHECK(!n.found && !n.legacy);
    gl_store_close(s);
    /* opening again changes nothing */
    CHECK(gl_store_open(path, &s, &err) == GL_OK);
    CHECK(gl_store_query_counts(s, "eu", 7200, "fb_used", &n, &err) == GL_OK);
    CHECK(n.found && n.series == 3 && n.samples == 90);
    gl_store_close(s);
    unlink(path);
}

static void refuses_unknown_versions(void)
{
    const int versions[] = {-1, -2147483647 - 1, gl_store_schema_version() + 1, 1000};
    for (size_t i = 0; i < sizeof versions / sizeof *versions; i++) {
        const char *path = db_path("bad.db");
        sqlite3 *db;
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", versions[i]);
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
        sqlite3_close(db);
        struct gl_store *s = NULL;
        struct gl_error err = {0};
        CHECK(gl_store_open(path, &s, &err) == GL_ERR_RUNTIME && s == NULL);
        char want[48];
        snprintf(want, sizeof want, "schema version %d", versions[i]);
        CHECK(strstr(err.msg, want) != NULL);
        CHECK(user_version(path) == versions[i]);
        unlink(path);
    }
}

static void lock_is_on_the_file(void)
{
    const char *path = db_path("lock.db");
    char link[600], lockfile[600];
    snprintf(link, sizeof link, "%s.link", path);
    snprintf(lockfile, sizeof lockfile, "%s.lock", path);
    unlink(link);
    struct gl_lock *a = NULL, *b = NULL;
    struct gl_error err = {0};
    CHECK(gl_lock_acquire(path, &a, &err) == GL_OK && a);
    CHECK(symlink(path, link) == 0);
    CHECK(gl_lock_acquire(link, &b, &err) == GL_ERR_LOCKED && !b);
    CHECK(strstr(err.msg, path) != NULL);
    gl_lock_release(a);
    CHECK(gl_lock_acquire(link, &b, &err) == GL_OK && b);
    gl_lock_release(b);
    gl_lock_release(NULL);
    unlink(link);
    snprintf(link, sizeof link, "%s.link.lock", path);
    unlink(link);
    unlink(lockfile);
    unlink(path);
}

/* ---- the daily aggregates kept by the store (engine/ledger/store.c agg_*) ----
 * Whatever path a chunk takes (new rows summed in C, an upsert meeting a
 * stored row, a row of an hour not replaced, a device not stored in the
 * transaction, a model change, a rollback), every aggregate table equals
 * its definition recomputed from usage (schema 004's backfill), and the
 * triggers other writers rely on are in place after every transaction. */

static const char *const agg_checks[] = {
    "SELECT hour, cluster, model, team, kind, quantity, estimated, rows FROM usage_key_hour",
    "SELECT u.hour, u.cluster, d.model, u.team, u.kind, SUM(u.quantity), MAX(u.estimated),"
    " COUNT(*) FROM usage u JOIN device d ON d.id = u.device_id GROUP BY 1, 2, 3, 4, 5",
    "SELECT day, device_id, kind, quantity, rows FROM device_day",
    "SELECT hour - hour % 86400, device_id, kind, SUM(quantity), COUNT(*) FROM usage"
    " GROUP BY 1, 2, 3",
    "SELECT team, day, cluster, namespace, pod, kind, quantity, estimated, rows FROM pod_day",
    "SELECT team, hour - hour % 86400, cluster, namespace, pod, kind, SUM(quantity),"
    " SUM(estimated <> 0), COUNT(*) FROM usage WHERE pod <> '' AND kind IN ('memory_used',"
    " 'allocated', 'reserved_unused') GROUP BY 1, 2, 3, 4, 5, 6",
    "SELECT day, kind, cluster, namespace, pod, team, device_id, first_seen, last_seen,"
    " quantity, rows FROM anomaly_day",
    "SELECT hour - hour % 86400, kind, cluster, namespace, pod, team, device_id,"
    " MIN(first_seen), MAX(last_seen), SUM(quantity), COUNT(*) FROM usage"
    " WHERE kind IN ('anomaly_unallocated', 'anomaly_excess_devices')"
    " GROUP BY 1, 2, 3, 4, 5, 6, 7",
};

static long long scalar(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    long long v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return v;
}

/* Rows of the aggregates that differ from their definition (both ways),
 * and whether the three usage triggers are there. */
static long long agg_differences(const char *path)
{
    sqlite3 *db;
    long long bad = 0;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    for (size_t i = 0; i < sizeof agg_checks / sizeof *agg_checks; i += 2) {
        char sql[2048];
        snprintf(sql, sizeof sql, "SELECT (SELECT count(*) FROM (%s EXCEPT %s)) + "
                 "(SELECT count(*) FROM (%s EXCEPT %s))", agg_checks[i], agg_checks[i + 1],
                 agg_checks[i + 1], agg_checks[i]);
        long long d = scalar(db, sql);
        if (d != 0)
            fprintf(stderr, "# %s: %lld rows differ\n", agg_checks[i], d);
        bad += d != 0;
    }
    if (scalar(db, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN "
                   "('usage_agg_insert', 'usage_agg_update', 'usage_agg_delete')") != 3) {
        fprintf(stderr, "# the usage triggers are missing\n");
        bad++;
    }
    sqlite3_close(db);
    return bad;
}

static int64_t agg_device(struct gl_store *s, const char *uuid, const char *model)
{
    struct gl_device_info d = {.cluster = "c1", .uuid = uuid, .gpu_i_id = "", .gpu_i_profile = "",
                               .model = model, .hostname = "h", .max_capacity_mib = 81920,
                               .first_seen = 0, .last_seen = 0};
    int64_t id = -1;
    struct gl_error err = {0};
    CHECK(gl_store_device(s, &d, &id, &err) == GL_OK);
    return id;
}

static void agg_row(struct gl_store *s, int64_t hour, const char *pod, int64_t dev,
                    const char *team, const char *kind, int64_t q, int est)
{
    struct gl_error err = {0};
    CHECK(gl_store_add_usage(s, hour, "c1", pod[0] ? "ns" : "", pod, dev, team, kind, q, est,
                             hour + 60, hour + 120, &err) == GL_OK);
}

static void aggregates_match_usage(void)
{
    const char *path = db_path("agg.db");
    const int64_t h0 = 1796083200; /* 2026-12-01T00:00Z */
    struct gl_store *s = NULL;
    struct gl_error err = {0};
    CHECK(gl_store_open(path, &s, &err) == GL_OK);
    /* 1: new rows only (their sums kept in C) */
    CHECK(gl_store_begin(s, &err) == GL_OK);
    int64_t a = agg_device(s, "GPU-a", "A100"), b = agg_device(s, "GPU-b", "H100");
    CHECK(gl_store_clear_hours(s, "c1", h0, h0 + 7200, &err) == GL_OK);
    CHECK(gl_store_clear_hours(s, "c1", h0, h0 + 7200, &err) == GL_OK); /* twice: once */
    agg_row(s, h0, "p1", a, "t1", "memory_used", 1000, 0);
    agg_row(s, h0, "p2", a, "t1", "memory_used", 500, 1);
    agg_row(s, h0, "p1", a, "t1", "allocated", 700, 0);
    agg_row(s, h0, "", a, "unallocated", "device_free", 300, 0);
    agg_row(s, h0 + 3600, "p1", b, "t2", "memory_used", 900, 0);
    agg_row(s, h0 + 3600, "p3", b, "t2", "anomaly_unallocated", 40, 0);
    CHECK(gl_store_commit(s, &err) == GL_OK);
    CHECK(agg_differences(path) == 0);
    /* 2: the hour replaced, a key written twice (an upsert: SQL sums) */
    CHECK(gl_store_begin(s, &err) == GL_OK);
    agg_device(s, "GPU-a", "A100");
    agg_device(s, "GPU-b", "H100");
    CHECK(gl_store_clear_hours(s, "c1", h0 + 3600, h0 + 7200, &err) == GL_OK);
    agg_row(s, h0 + 3600, "p1", b, "t2", "memory_used", 800, 0);
    agg_row(s, h0 + 3600, "p1", b, "t2", "memory_used", 50, 1);
    CHECK(gl_store_commit(s, &err) == GL_OK);
    CHECK(agg_differences(path) == 0);
    /* 3: rows of an hour not replaced, no device stored in the transaction */
    CHECK(gl_store_begin(s, &err) == GL_OK);
    agg_row(s, h0, "p1", a, "t1", "memory_used", 11, 1);
    agg_row(s, h0, "p4", a, "t1", "anomaly_unallocated", 7, 0);
    CHECK(gl_store_commit(s, &err) == GL_OK);
    CHECK(agg_differences(path) == 0);
    /* 4: a device's model changes; the hour is replaced with new rows */
    CHECK(gl_store_begin(s, &err) == GL_OK);
    agg_device(s, "GPU-a", "A100X");
    CHECK(gl_store_clear_hours(s, "c1", h0, h0 + 3600, &err) == GL_OK);
    agg_row(s, h0, "p5", a, "t3", "memory_used", 123, 0);
    CHECK(gl_store_commit(s, &err) == GL_OK);
    CHECK(agg_differences(path) == 0);
    /* 5: a rolled-back chunk changes nothing and leaves the triggers */
    CHECK(gl_store_begin(s, &err) == GL_OK);
    agg_device(s, "GPU-a", "A100X");
    CHECK(gl_store_clear_hours(s, "c1", h0, h0 + 7200, &err) == GL_OK);
    agg_row(s, h0, "p9", a, "t9", "memory_used", 5, 0);
    gl_store_rollback(s);
    CHECK(agg_differences(path) == 0);
    gl_store_close(s);
    /* 6: another writer (the triggers) */
    sqlite3 *db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "INSERT INTO usage SELECT hour + 7200, cluster, namespace, pod,"
                           " device_id, team, kind, quantity, estimated, first_seen, last_seen"
                           " FROM usage; DELETE FROM usage WHERE pod = 'p1';",
                       NULL, NULL, NULL) == SQLITE_OK);
    CHECK(scalar(db, "SELECT count(*) FROM usage WHERE hour >= 1796083200 + 7200") > 0);
    sqlite3_close(db);
    CHECK(agg_differences(path) == 0);
    char aux[600];
    for (const char *sfx = "-wal\0-shm\0.lock\0"; *sfx; sfx += strlen(sfx) + 1) {
        snprintf(aux, sizeof aux, "%s%s", path, sfx);
        unlink(aux);
    }
    unlink(path);
}

int main(void)
{
    RUN(migrates_version_1);
    RUN(refuses_unknown_versions);
    RUN(lock_is_on_the_file);
    RUN(aggregates_match_usage);
    return TAP_END();
}
