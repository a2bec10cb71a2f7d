/*
 * store_rows - what one usage row costs to store: the engine's store
 * (engine/ledger/store.c, the path of a collect's chunk transaction) next to
 * SQLite's own floor for the same rows in the same run.
 *
 * Usage: store_rows SOURCE.db MODE OUT.db
 *   SOURCE.db  a database a collect wrote (its usage and device rows are
 *              replayed; bench/store_rows.sh makes one from the bundled
 *              example or takes yours)
 *   MODE       engine       gl_store_begin/clear/device/add_usage/commit
 *                           into a new store (aggregates kept, as collect)
 *              text         a plain INSERT per row into usage as the schema
 *                           has it (7-column text primary key, WITHOUT
 *                           ROWID, its partial index), no triggers, no FK
 *              text-fk      the same with PRAGMA foreign_keys=ON (the
 *                           engine's connection setting)
 *              int          the same key with integer ids for the text
 *                           columns (cluster, namespace, pod, team, kind)
 *              rowid        a rowid table appended in rowid order (no key)
 * Prints rows and CPU microseconds per row of the insert loop alone
 * (getrusage); under callgrind, --toggle-collect=insert_rows counts its
 * instructions (bench/store_rows.sh does both).
 */
#define _DEFAULT_SOURCE
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "error.h"
#include "store.h"

struct row {
    int64_t hour, dev, q, est, fs, ls;
    char *cl, *ns, *pod, *team, *kind;
    int ids[5]; /* int mode: cl, ns, pod, team, kind */
};

static struct row *rows;
static size_t nrows;
static struct gl_device_info *devs;
static int64_t *dev_src; /* the source's device id of devs[i], ascending */
static size_t ndevs;

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "store_rows: %s: %s\n", what, msg);
    exit(1);
}

static char *col(sqlite3_stmt *st, int i) { return strdup((const char *)sqlite3_column_text(st, i)); }

static void load(const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL))
        die(path, sqlite3_errmsg(db));
    if (sqlite3_prepare_v2(db, "SELECT id, cluster, uuid, gpu_i_id, gpu_i_profile, model, hostname,"
                               " max_capacity_mib, first_seen, last_seen FROM device ORDER BY id",
                           -1, &st, NULL))
        die(path, sqlite3_errmsg(db));
    size_t cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (ndevs == cap) {
            cap = cap ? 2 * cap : 1024;
            devs = realloc(devs, cap * sizeof *devs);
            dev_src = realloc(dev_src, cap * sizeof *dev_src);
        }
        dev_src[ndevs] = sqlite3_column_int64(st, 0);
        devs[ndevs++] = (struct gl_device_info){
            .cluster = col(st, 1), .uuid = col(st, 2), .gpu_i_id = col(st, 3),
            .gpu_i_profile = col(st, 4), .model = col(st, 5), .hostname = col(st, 6),
            .max_capacity_mib = sqlite3_column_int64(st, 7),
            .first_seen = sqlite3_column_int64(st, 8), .last_seen = sqlite3_column_int64(st, 9)};
    }
    sqlite3_finalize(st);
    /* the order collect stores a chunk in: hour by hour, devices within */
    if (sqlite3_prepare_v2(db, "SELECT hour, cluster, namespace, pod, device_id, team, kind, quantity,"
                               " estimated, first_seen, last_seen FROM usage"
                               " ORDER BY hour, device_id, namespace, pod, kind", -1, &st, NULL))
        die(path, sqlite3_errmsg(db));
    cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (nrows == cap) {
            cap = cap ? 2 * cap : 65536;
            rows = realloc(rows, cap * sizeof *rows);
        }
        rows[nrows++] = (struct row){
            .hour = sqlite3_column_int64(st, 0), .cl = col(st, 1), .ns = col(st, 2),
            .pod = col(st, 3), .dev = sqlite3_column_int64(st, 4), .team = col(st, 5),
            .kind = col(st, 6), .q = sqlite3_column_int64(st, 7),
            .est = sqlite3_column_int64(st, 8), .fs = sqlite3_column_int64(st, 9),
            .ls = sqlite3_column_int64(st, 10)};
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (!nrows)
        die(path, "no usage rows");
}

/* dense ids for the int mode, assigned before the timed loop */
static void assign_ids(void)
{
    size_t cap = 1;
    while (cap < 4 * nrows)
        cap *= 2;
    const char **keys = calloc(cap, sizeof *keys);
    int *ids = calloc(cap, sizeof *ids), next = 0;
    for (size_t i = 0; i < nrows; i++) {
        char *s[5] = {rows[i].cl, rows[i].ns, rows[i].pod, rows[i].team, rows[i].kind};
        for (int k = 0; k < 5; k++) {
            uint64_t h = 1469598103934665603ULL;
            for (const char *p = s[k]; *p; p++)
                h = (h ^ (unsigned char)*p) * 1099511628211ULL;
            size_t j = (size_t)h & (cap - 1);
            while (keys[j] && strcmp(keys[j], s[k]))
                j = (j + 1) & (cap - 1);
            if (!keys[j]) {
                keys[j] = s[k];
                ids[j] = ++next;
            }
            rows[i].ids[k] = ids[j];
        }
    }
    free(keys);
    free(ids);
}

static size_t dev_index(int64_t src)
{
    size_t lo = 0, hi = ndevs;
    while (lo < hi) {
        size_t m = (lo + hi) / 2;
        if (dev_src[m] < src)
            lo = m + 1;
        else
            hi = m;
    }
    if (lo == ndevs || dev_src[lo] != src)
        die("source", "a usage row names a device that is not in the device table");
    return lo;
}

static const char *mode;
static sqlite3 *raw;
static struct gl_store *store;
static int64_t *dev_ids;

static void exec(const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(raw, sql, NULL, NULL, &msg))
        die(sql, msg);
}

static void step(sqlite3_stmt *st)
{
    if (sqlite3_step(st) != SQLITE_DONE)
        die("insert", sqlite3_errmsg(raw));
    sqlite3_reset(st);
}

__attribute__((noinline)) static void insert_rows(sqlite3_stmt *st)
{
    struct gl_error err = {0};
    if (!st) { /* the engine's store: the chunk transaction of a collect */
        int64_t from = rows[0].hour, to = rows[nrows - 1].hour + 3600;
        if (gl_store_begin(store, &err) || gl_store_clear_hours(store, rows[0].cl, from, to, &err))
            die("engine", err.msg);
        for (size_t i = 0; i < ndevs; i++)
            if (gl_store_device(store, &devs[i], &dev_ids[i], &err))
                die("engine", err.msg);
        for (size_t i = 0; i < nrows; i++) {
            const struct row *r = &rows[i];
            if (gl_store_add_usage(store, r->hour, r->cl, r->ns, r->pod, dev_ids[dev_index(r->dev)],
                                   r->team, r->kind, r->q, (int)r->est, r->fs, r->ls, &err))
                die("engine", err.msg);
        }
        if (gl_store_commit(store, &err))
            die("engine", err.msg);
        return;
    }
    const bool ints = !strcmp(mode, "int"), rowid = !strcmp(mode, "rowid");
    for (size_t i = 0; i < nrows; i++) {
        const struct row *r = &rows[i];
        const char *text[5] = {r->cl, r->ns, r->pod, r->team, r->kind};
        const int pos[5] = {2, 3, 4, 6, 7};
        sqlite3_bind_int64(st, 1, r->hour);
        for (int k = 0; k < 5; k++) {
            if (ints)
                sqlite3_bind_int(st, pos[k], r->ids[k]);
            else
                sqlite3_bind_text(st, pos[k], text[k], -1, SQLITE_STATIC);
        }
        sqlite3_bind_int64(st, 5, r->dev);
        sqlite3_bind_int64(st, 8, r->q);
        sqlite3_bind_int(st, 9, (int)r->est);
        sqlite3_bind_int64(st, 10, r->fs);
        sqlite3_bind_int64(st, 11, r->ls);
        if (rowid)
            sqlite3_bind_int64(st, 12, (int64_t)i + 1);
        step(st);
    }
    exec("COMMIT");
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: store_rows SOURCE.db engine|text|text-fk|int|rowid OUT.db\n");
        return 2;
    }
    mode = argv[2];
    load(argv[1]);
    sqlite3_stmt *st = NULL;
    struct gl_error err = {0};
    if (!strcmp(mode, "engine")) {
        if (gl_store_open(argv[3], &store, &err))
            die(argv[3], err.msg);
        dev_ids = calloc(ndevs, sizeof *dev_ids);
    } else {
        if (sqlite3_open(argv[3], &raw))
            die(argv[3], sqlite3_errmsg(raw));
        exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY");
        sqlite3 *src;
        sqlite3_stmt *q;
        sqlite3_open_v2(argv[1], &src, SQLITE_OPEN_READONLY, NULL);
        /* the source's own usage and device tables and usage's indexes */
        sqlite3_prepare_v2(src, "SELECT sql FROM sqlite_master WHERE tbl_name IN ('usage', 'device')"
                                " AND type IN ('table', 'index') AND sql IS NOT NULL"
                                " ORDER BY tbl_name <> 'device', type <> 'table'", -1, &q, NULL);
        const bool ints = !strcmp(mode, "int"), rowid = !strcmp(mode, "rowid");
        while (sqlite3_step(q) == SQLITE_ROW) {
            const char *sql = (const char *)sqlite3_column_text(q, 0);
            if ((ints || rowid) && strstr(sql, "INDEX"))
                continue;
            exec(sql);
        }
        sqlite3_finalize(q);
        sqlite3_close(src);
        if (ints)
            exec("CREATE TABLE usage_int (hour INTEGER NOT NULL, cluster INTEGER NOT NULL,"
                 " namespace INTEGER NOT NULL, pod INTEGER NOT NULL, device_id INTEGER NOT NULL,"
                 " team INTEGER NOT NULL, kind INTEGER NOT NULL, quantity INTEGER NOT NULL,"
                 " estimated INTEGER NOT NULL, first_seen INTEGER NOT NULL,"
                 " last_seen INTEGER NOT NULL, PRIMARY KEY (hour, cluster, namespace, pod,"
                 " device_id, team, kind)) WITHOUT ROWID");
        if (rowid)
            exec("CREATE TABLE usage_rowid (hour INTEGER NOT NULL, cluster TEXT NOT NULL,"
                 " namespace TEXT NOT NULL, pod TEXT NOT NULL, device_id INTEGER NOT NULL,"
                 " team TEXT NOT NULL, kind TEXT NOT NULL, quantity INTEGER NOT NULL,"
                 " estimated INTEGER NOT NULL, first_seen INTEGER NOT NULL,"
                 " last_seen INTEGER NOT NULL)");
        /* the rows' devices under their source ids (the FK's parents) */
        sqlite3_stmt *d;
        sqlite3_prepare_v2(raw, "INSERT INTO device (id, cluster, uuid, gpu_i_id, gpu_i_profile,"
                                " model, hostname, max_capacity_mib, first_seen, last_seen)"
                                " VALUES (?,?,?,?,?,?,?,?,?,?)", -1, &d, NULL);
        for (size_t i = 0; i < ndevs; i++) {
            const struct gl_device_info *v = &devs[i];
            sqlite3_bind_int64(d, 1, dev_src[i]);
            const char *t[6] = {v->cluster, v->uuid, v->gpu_i_id, v->gpu_i_profile, v->model,
                                v->hostname};
            for (int k = 0; k < 6; k++)
                sqlite3_bind_text(d, 2 + k, t[k], -1, SQLITE_STATIC);
            sqlite3_bind_int64(d, 8, v->max_capacity_mib);
            sqlite3_bind_int64(d, 9, v->first_seen);
            sqlite3_bind_int64(d, 10, v->last_seen);
            step(d);
        }
        sqlite3_finalize(d);
        if (!strcmp(mode, "text-fk"))
            exec("PRAGMA foreign_keys=ON");
        else if (strcmp(mode, "text") && !ints && !rowid)
            die(mode, "unknown mode");
        if (ints)
            assign_ids();
        const char *sql =
            ints ? "INSERT INTO usage_int VALUES (?,?,?,?,?,?,?,?,?,?,?)"
            : rowid ? "INSERT INTO usage_rowid (hour, cluster, namespace, pod, device_id, team,"
                      " kind, quantity, estimated, first_seen, last_seen, rowid)"
                      " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"
                    : "INSERT INTO usage (hour, cluster, namespace, pod, device_id, team, kind,"
                      " quantity, estimated, first_seen, last_seen) VALUES (?,?,?,?,?,?,?,?,?,?,?)";
        if (sqlite3_prepare_v2(raw, sql, -1, &st, NULL))
            die(sql, sqlite3_errmsg(raw));
        exec("BEGIN");
    }
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    insert_rows(st);
    getrusage(RUSAGE_SELF, &b);
    double us = (double)(b.ru_utime.tv_sec - a.ru_utime.tv_sec + b.ru_stime.tv_sec - a.ru_stime.tv_sec) * 1e6 +
                (double)(b.ru_utime.tv_usec - a.ru_utime.tv_usec + b.ru_stime.tv_usec - a.ru_stime.tv_usec);
    printf("%s: %zu rows, %zu devices, %.2f us CPU per row\n", mode, nrows, ndevs, us / (double)nrows);
    sqlite3_finalize(st);
    if (store)
        gl_store_close(store);
    if (raw)
        sqlite3_close(raw);
    return 0;
}
