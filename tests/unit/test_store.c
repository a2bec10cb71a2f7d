/* Unit tests: the store's schema versions and collect counts
 * (engine/store.c): a version-1 database is migrated to 2 keeping its
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
    CHECK(sqlite3_exec(db, gl_schema_v1, NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       "INSERT INTO collected_hour VALUES ('eu', 7200, 1, 120, 0);"
                       "INSERT INTO collected_hour VALUES ('eu', 10800, 1, 0, 0);"
                       "PRAGMA user_version = 1;",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    struct gl_store *s = NULL;
    struct gl_error err = {0};
    CHECK(gl_store_open(path, &s, &err) == GL_OK);
    CHECK(user_version(path) == 7); /* schema 002 to 007 applied */
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
    const int versions[] = {-1, -2147483647 - 1, 8, 1000};
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

int main(void)
{
    RUN(migrates_version_1);
    RUN(refuses_unknown_versions);
    RUN(lock_is_on_the_file);
    return TAP_END();
}
