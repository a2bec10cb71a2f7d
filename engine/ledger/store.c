/* store — SQLite schema, migrations and the collect-side writes. */
#include "store.h"
#include "store_sql.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "schema_sql.h" /* gl_migrations: schema/NNN_*.sql in order */
#include "timeutil.h"
#include "kinds.h"
#include "util.h"

/* gl_migrations[i] takes a database at version i to i + 1 (meson.build's
 * schema_files: a schema change is a new file and one line there). */
#define GL_SCHEMA_VERSION ((int)(sizeof gl_migrations / sizeof *gl_migrations))

struct gl_store {
    sqlite3 *db;
    sqlite3_stmt *ins_usage;
    sqlite3_stmt *upsert_device;
    sqlite3_stmt *get_device;
    sqlite3_stmt *clear_hours;
    sqlite3_stmt *pruned_hour; /* the first pruned hour of a range (store_admin.h) */
    sqlite3_stmt *mark_hour;
    sqlite3_stmt *label_get;
    sqlite3_stmt *label_put;
    sqlite3_stmt *counts_get;
    sqlite3_stmt *counts_put;
    sqlite3_stmt *hour_get;
    /* the aggregates of schema 004 (see agg_* below) */
    sqlite3_stmt *agg_anom_del; /* anomaly_day of a day range, recomputed */
    sqlite3_stmt *agg_anom_ins;
    sqlite3_stmt *put_model;    /* device_model_hour of a row's device and hour */
    sqlite3_stmt *clear_models; /* ... of a cluster's hours replaced */
    /* the store's own maintenance of a chunk: schema 004's triggers on
     * usage, dropped inside the chunk's transaction and created again
     * before it commits (their SQL as stored) */
    char *triggers[3];
    sqlite3_stmt *out_dev, *out_pod, *out_key; /* old rows of hours taken out */
    sqlite3_stmt *in_dev, *in_pod, *in_key;    /* new rows of hours added */
    sqlite3_stmt *ins_plain;                   /* a new usage row (no upsert) */
    sqlite3_stmt *put_key, *put_dev, *put_pod; /* the sums of agg_acc written */
    bool gated; /* the open transaction dropped the triggers */
    /* The new rows' sums, kept in C as the rows are written (agg_add)
     * and written at commit; by_sql when a row met a stored one (an
     * upsert: the figures are then summed by SQL from usage at commit). */
    struct agg_tab {
        struct agg_ent {
            int64_t k[6];
            int64_t q, est, rows;
            bool used;
        } *e;
        size_t n, cap;
    } acc_key, acc_dev, acc_pod;
    struct gl_intern *names; /* strings of the sums' keys */
    /* capacities per model read in the open read snapshot (store_sql.h) */
    struct cap_memo {
        char *model;
        int64_t cap;
    } *caps;
    size_t ncaps;
    bool reading;
    /* names' ids by the caller's string address (the callers pass the same
     * interned strings row after row); a hit is checked by strcmp */
    struct {
        const char *p;
        int32_t id;
    } name_cache[512];
    /* the devices stored in the transaction: the model and capacity of the
     * hours [from, to] of each (a device of a chunk split at a model
     * change is stored once per run of hours, integrate.c) */
    struct agg_model {
        int64_t id, from, to, cap;
        int32_t model; /* in names, -1 when out of memory */
        char *name;
    } *models;
    size_t nmodels, cmodels;
    struct agg_tab model_hours; /* (hour, device id) whose device_model_hour is written */
    bool by_sql;
    struct agg_range {
        char *cluster;
        int64_t from, to;
    } *dirty; /* the cluster hours whose rows the transaction replaces */
    size_t ndirty, cdirty;
    /* what the open write transaction recomputes at commit: -1 - day for a
     * UTC day whose anomaly_day is (usage rows cleared); sorted, distinct.
     * (No day's usage_key_hour: a row's model is its hour's, schema 010,
     * which a later hour never changes.) */
    int64_t *rekey;
    size_t nrekey, crekey;
    char *path;
};

enum gl_status gl_store_fail(struct gl_store *s, const char *what, struct gl_error *err)
{
    return gl_error_set(err, GL_ERR_RUNTIME, "%s: %s: %s", s->path, what,
                        s->db ? sqlite3_errmsg(s->db) : "no database");
}

static enum gl_status exec(struct gl_store *s, const char *sql, struct gl_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        gl_error_set(err, GL_ERR_RUNTIME, "%s: %s", s->path, msg ? msg : "sqlite error");
        sqlite3_free(msg);
        return GL_ERR_RUNTIME;
    }
    return GL_OK;
}

static enum gl_status prepare(struct gl_store *s, const char *sql, sqlite3_stmt **st,
                              struct gl_error *err)
{
    if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
        return gl_store_fail(s, "prepare", err);
    return GL_OK;
}

/* The schema version, checked before anything else touches the file: a
 * version this build does not know (newer, or negative: not written by
 * gpuledger) is refused, never migrated from or indexed with. */
int gl_store_schema_version(void)
{
    return GL_SCHEMA_VERSION;
}

static enum gl_status schema_version(struct gl_store *s, int *version, struct gl_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return gl_store_fail(s, "reading schema version", err);
    int rc = sqlite3_step(st);
    *version = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return gl_store_fail(s, "reading schema version", err);
    if (*version < 0)
        return gl_error_set(err, GL_ERR_RUNTIME,
                            "%s: schema version %d (PRAGMA user_version) is not one gpuledger "
                            "writes: not a gpuledger database, or damaged; not opened",
                            s->path, *version);
    if (*version > GL_SCHEMA_VERSION)
        return gl_error_set(err, GL_ERR_RUNTIME,
                            "%s: schema version %d is newer than this gpuledger (%d)", s->path,
                            *version, GL_SCHEMA_VERSION);
    return GL_OK;
}

static enum gl_status migrate(struct gl_store *s, int version, struct gl_error *err)
{
    if (version == GL_SCHEMA_VERSION)
        return GL_OK;
    enum gl_status rc;
    if ((rc = exec(s, "BEGIN IMMEDIATE", err)))
        return rc;
    /* re-read under the write lock: another process may have migrated */
    if ((rc = schema_version(s, &version, err))) {
        exec(s, "ROLLBACK", NULL);
        return rc;
    }
    for (int v = version; v < GL_SCHEMA_VERSION; v++) {
        if ((rc = exec(s, gl_migrations[v], err))) {
            exec(s, "ROLLBACK", NULL);
            return gl_error_prefix(err, "migrating the schema from version %d", v);
        }
    }
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", GL_SCHEMA_VERSION);
    if ((rc = exec(s, sql, err)) || (rc = exec(s, "COMMIT", err))) {
        exec(s, "ROLLBACK", NULL);
        return rc;
    }
    return GL_OK;
}

/* The aggregates' SQL (schema/004_daily.sql; see agg_flush below). */

/* The store's maintenance (schema 004's triggers dropped while a chunk is
 * written): ?1 cluster, [?2, ?3) hours.
 * Taken out before the rows of those hours are deleted or changed (sums
 * and row counts; a key whose rows reach 0 goes, by the _empty triggers);
 * usage_key_hour's rows of those hours go whole (its estimated is a MAX),
 * except hours without usage rows (a pruned hour keeps its figures). */
static const char out_dev_sql[] =
    "UPDATE device_day SET quantity = device_day.quantity - o.q, rows = device_day.rows - o.n"
    " FROM (SELECT hour - hour % 86400 AS day, device_id, kind, SUM(quantity) AS q,"
    "  COUNT(*) AS n FROM usage WHERE hour >= ?2 AND hour < ?3 AND cluster = ?1"
    "  GROUP BY 1, 2, 3) AS o"
    " WHERE device_day.day = o.day AND device_day.device_id = o.device_id"
    "  AND device_day.kind = o.kind";
static const char out_pod_sql[] =
    "UPDATE pod_day SET quantity = pod_day.quantity - o.q, estimated = pod_day.estimated - o.e,"
    " rows = pod_day.rows - o.n"
    " FROM (SELECT team, hour - hour % 86400 AS day, namespace, pod, kind, SUM(quantity) AS q,"
    "  SUM(estimated <> 0) AS e, COUNT(*) AS n FROM usage"
    "  WHERE hour >= ?2 AND hour < ?3 AND cluster = ?1 AND pod <> ''"
    "   AND kind IN ('" GL_K_MEMORY_USED "', '" GL_K_ALLOCATED "', '" GL_K_RESERVED_UNUSED "')"
    "  GROUP BY 1, 2, 3, 4, 5) AS o"
    " WHERE pod_day.team = o.team AND pod_day.day = o.day AND pod_day.cluster = ?1"
    "  AND pod_day.namespace = o.namespace AND pod_day.pod = o.pod AND pod_day.kind = o.kind";
static const char out_key_sql[] =
    "DELETE FROM usage_key_hour WHERE hour >= ?2 AND hour < ?3 AND cluster = ?1"
    " AND hour IN (SELECT hour FROM usage WHERE hour >= ?2 AND hour < ?3 AND cluster = ?1)";
/* ... and the rows those hours hold at commit added */
static const char in_dev_sql[] =
    "INSERT INTO device_day (day, device_id, kind, quantity, rows)"
    " SELECT hour - hour % 86400, device_id, kind, SUM(quantity), COUNT(*) FROM usage"
    " WHERE hour >= ?2 AND hour < ?3 AND cluster = ?1 GROUP BY 1, 2, 3"
    " ON CONFLICT DO UPDATE SET quantity = quantity + excluded.quantity,"
    "  rows = rows + excluded.rows";
static const char in_pod_sql[] =
    "INSERT INTO pod_day (team, day, cluster, namespace, pod, kind, quantity, estimated, rows)"
    " SELECT team, hour - hour % 86400, ?1, namespace, pod, kind, SUM(quantity),"
    "  SUM(estimated <> 0), COUNT(*) FROM usage"
    " WHERE hour >= ?2 AND hour < ?3 AND cluster = ?1 AND pod <> ''"
    "  AND kind IN ('" GL_K_MEMORY_USED "', '" GL_K_ALLOCATED "', '" GL_K_RESERVED_UNUSED "')"
    " GROUP BY 1, 2, 4, 5, 6"
    " ON CONFLICT DO UPDATE SET quantity = quantity + excluded.quantity,"
    "  estimated = estimated + excluded.estimated, rows = rows + excluded.rows";
/* (no conflict: the hours' keys were taken out; a conflict is a bug and
 * fails the chunk) */
static const char in_key_sql[] =
    "INSERT INTO usage_key_hour (hour, cluster, model, team, kind, quantity, estimated, rows)"
    " SELECT u.hour, ?1, coalesce(m.model, d.model), u.team, u.kind, SUM(u.quantity),"
    " MAX(u.estimated), COUNT(*)"
    " FROM usage u JOIN device d ON d.id = u.device_id"
    " LEFT JOIN device_model_hour m ON m.hour = u.hour AND m.device_id = u.device_id"
    " WHERE u.hour >= ?2 AND u.hour < ?3 AND u.cluster = ?1"
    " GROUP BY 1, 3, 4, 5";

/* ... or, when every new row was new (agg_acc), their sums from C */
static const char put_key_sql[] =
    "INSERT INTO usage_key_hour (hour, cluster, model, team, kind, quantity, estimated, rows)"
    " VALUES (?,?,?,?,?,?,?,?)";
static const char put_dev_sql[] =
    "INSERT INTO device_day (day, device_id, kind, quantity, rows) VALUES (?,?,?,?,?)"
    " ON CONFLICT DO UPDATE SET quantity = quantity + excluded.quantity,"
    "  rows = rows + excluded.rows";
static const char put_pod_sql[] =
    "INSERT INTO pod_day (team, day, cluster, namespace, pod, kind, quantity, estimated, rows)"
    " VALUES (?,?,?,?,?,?,?,?,?)"
    " ON CONFLICT DO UPDATE SET quantity = quantity + excluded.quantity,"
    "  estimated = estimated + excluded.estimated, rows = rows + excluded.rows";

/* a day's anomalies recomputed (first/last seen are no sums) */
static const char agg_anom_del_sql[] =
    "DELETE FROM anomaly_day WHERE day >= ?1 AND day < ?2";
static const char agg_anom_sql[] =
    "INSERT INTO anomaly_day (day, kind, cluster, namespace, pod, team, device_id, first_seen,"
    " last_seen, quantity, rows)"
    " SELECT hour - hour % 86400, kind, cluster, namespace, pod, team, device_id,"
    " MIN(first_seen), MAX(last_seen), SUM(quantity), COUNT(*)"
    " FROM usage WHERE kind IN ('" GL_K_ANOMALY_UNALLOCATED "', '" GL_K_ANOMALY_EXCESS_DEVICES "')"
    "  AND hour >= ?1 AND hour < ?2"
    " GROUP BY 1, 2, 3, 4, 5, 6, 7";

/* schema 010's device_model_hour (the triggers read it: written before the
 * rows of its hour) */
static const char put_model_sql[] =
    "INSERT INTO device_model_hour (hour, device_id, model, max_capacity_mib) VALUES (?,?,?,?)"
    " ON CONFLICT DO UPDATE SET model = excluded.model,"
    "  max_capacity_mib = excluded.max_capacity_mib";
static const char clear_models_sql[] =
    "DELETE FROM device_model_hour WHERE hour >= ?2 AND hour < ?3"
    " AND device_id IN (SELECT id FROM device WHERE cluster = ?1)";

/* schema 004's triggers on usage that the store drops while it writes a
 * chunk (agg_take_out_run) */
static const char *const trigger_names[3] = {"usage_agg_insert", "usage_agg_update",
                                             "usage_agg_delete"};

/* schema 014's triggers that unbuild the advice's days when a device or
 * its hourly model changes: a later migration that rebuilds either table
 * would drop them silently, and built days would then read stale groups */
static const char *const peak_day_triggers[5] = {
    "model_hour_day_insert", "model_hour_day_update", "model_hour_day_delete",
    "device_peak_day_update", "device_peak_day_delete"};

/* Trigger name of schema (st: its sql by name), its sql into *sql when
 * wanted; an error when the schema lacks it. */
static enum gl_status schema_trigger(struct gl_store *s, sqlite3_stmt *st, const char *name,
                                     const char *schema, char **sql, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
        if (sql)
            *sql = gl_strdup((const char *)sqlite3_column_text(st, 0));
    } else
        rc = gl_error_set(err, GL_ERR_RUNTIME,
                          "%s: the schema lacks trigger %s (schema %s); the database was "
                          "changed by hand?", s->path, name, schema);
    sqlite3_reset(st);
    return rc;
}

/* The usage triggers' SQL kept, and schema 014's checked there. */
static enum gl_status read_triggers(struct gl_store *s, struct gl_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT sql FROM sqlite_master WHERE type = 'trigger'"
                                  " AND name = ?", -1, &st, NULL) != SQLITE_OK)
        return gl_store_fail(s, "reading the schema", err);
    enum gl_status rc = GL_OK;
    for (size_t i = 0; !rc && i < 3; i++)
        rc = schema_trigger(s, st, trigger_names[i], "004", &s->triggers[i], err);
    for (size_t i = 0; !rc && i < 5; i++)
        rc = schema_trigger(s, st, peak_day_triggers[i], "014", NULL, err);
    sqlite3_finalize(st);
    return rc;
}

/* The store's prepared statements (persistent: used chunk after chunk),
 * each one's field and SQL: prepared at open in this order, finalized at
 * close. */
#define STMT(field, sql) {offsetof(struct gl_store, field), sql}
static const struct {
    size_t at; /* of its sqlite3_stmt * in struct gl_store */
    const char *sql;
} statements[] = {
    STMT(ins_usage,
         "INSERT INTO usage (hour, cluster, namespace, pod, device_id, team, kind, "
         "quantity, estimated, first_seen, last_seen) VALUES (?,?,?,?,?,?,?,?,?,?,?) "
         "ON CONFLICT DO UPDATE SET quantity = quantity + excluded.quantity, "
         "estimated = max(estimated, excluded.estimated), "
         "first_seen = min(first_seen, excluded.first_seen), "
         "last_seen = max(last_seen, excluded.last_seen)"),
    STMT(upsert_device,
         "INSERT INTO device (cluster, uuid, gpu_i_id, gpu_i_profile, model, hostname, "
         "max_capacity_mib, first_seen, last_seen) VALUES (?,?,?,?,?,?,?,?,?) "
         "ON CONFLICT (cluster, uuid, gpu_i_id) DO UPDATE SET "
         /* a chunk that lacks a label never erases what an earlier one knew;
          * the model is the latest hour's (each hour's own is in
          * device_model_hour): an older hour re-collected keeps it */
         "gpu_i_profile = CASE excluded.gpu_i_profile WHEN '' THEN gpu_i_profile "
         "  ELSE excluded.gpu_i_profile END, "
         "model = CASE WHEN excluded.model = 'unknown' "
         "  OR excluded.last_seen < last_seen THEN model ELSE excluded.model END, "
         "hostname = CASE excluded.hostname WHEN '' THEN hostname "
         "  ELSE excluded.hostname END, "
         "max_capacity_mib = max(max_capacity_mib, excluded.max_capacity_mib), "
         "first_seen = min(first_seen, excluded.first_seen), "
         "last_seen = max(last_seen, excluded.last_seen)"),
    STMT(get_device, "SELECT id, model FROM device WHERE cluster = ? AND uuid = ? AND gpu_i_id = ?"),
    STMT(agg_anom_del, agg_anom_del_sql),
    STMT(agg_anom_ins, agg_anom_sql),
    STMT(put_model, put_model_sql),
    STMT(clear_models, clear_models_sql),
    STMT(out_dev, out_dev_sql),
    STMT(out_pod, out_pod_sql),
    STMT(out_key, out_key_sql),
    STMT(in_dev, in_dev_sql),
    STMT(in_pod, in_pod_sql),
    STMT(in_key, in_key_sql),
    STMT(ins_plain,
         "INSERT INTO usage (hour, cluster, namespace, pod, device_id, team, kind, "
         "quantity, estimated, first_seen, last_seen) VALUES (?,?,?,?,?,?,?,?,?,?,?)"),
    STMT(put_key, put_key_sql),
    STMT(put_dev, put_dev_sql),
    STMT(put_pod, put_pod_sql),
    STMT(clear_hours, "DELETE FROM usage WHERE cluster = ? AND hour >= ? AND hour < ?"),
    STMT(pruned_hour,
         "SELECT min(hour) FROM collected_hour WHERE cluster = ? AND hour >= ? AND "
         "hour < ? AND samples = -1"),
    STMT(mark_hour,
         "INSERT OR REPLACE INTO collected_hour (cluster, hour, collected_at, samples, "
         "bad_samples) VALUES (?,?,strftime('%s','now'),?,?)"),
    STMT(label_get, "SELECT first_seen FROM label_series WHERE labels = ?"),
    STMT(label_put,
         "INSERT INTO label_series (labels, first_seen) VALUES (?1, ?2) "
         "ON CONFLICT (labels) DO UPDATE SET first_seen = min(first_seen, ?2)"),
    STMT(counts_get,
         "SELECT series, samples FROM collected_query "
         "WHERE cluster = ? AND hour = ? AND query = ?"),
    STMT(counts_put,
         "INSERT OR REPLACE INTO collected_query (cluster, hour, query, series, "
         "samples) VALUES (?,?,?,?,?)"),
    STMT(hour_get,
         "SELECT h.samples, (SELECT count(*) FROM collected_query q "
         "  WHERE q.cluster = h.cluster AND q.hour = h.hour) "
         "FROM collected_hour h WHERE h.cluster = ? AND h.hour = ?"),
};
#undef STMT

static sqlite3_stmt **statement(struct gl_store *s, size_t i)
{
    return (sqlite3_stmt **)((char *)s + statements[i].at);
}

enum gl_status gl_store_open(const char *path, struct gl_store **out, struct gl_error *err)
{
    *out = NULL;
    struct gl_store *s = gl_xcalloc(1, sizeof *s);
    s->path = gl_strdup(path);
    enum gl_status rc;
    /* NOMUTEX: the connection is used by one thread at a time (collect's
     * fetch thread, collect.c fetch_main, touches no store; no other
     * engine code starts threads), so SQLite's per-call connection mutex
     * is only cost */
    if (sqlite3_open_v2(path, &s->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        rc = gl_store_fail(s, "cannot open database", err);
        gl_store_close(s);
        return rc;
    }
    sqlite3_busy_timeout(s->db, 10000);
    int version = 0;
    rc = schema_version(s, &version, err);
    /* temp_store: statement journals (a statement that fires triggers
     * or upserts needs one) and GROUP BY sorters stay in memory instead
     * of a temporary file written page by page; durability is the
     * WAL's (the database's own writes are unchanged) */
    if (!rc)
        rc = exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
                     "PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY;",
                  err);
    if (!rc)
        rc = migrate(s, version, err);
    if (!rc)
        rc = read_triggers(s, err);
    for (size_t i = 0; !rc && i < sizeof statements / sizeof *statements; i++)
        rc = prepare(s, statements[i].sql, statement(s, i), err);
    if (rc) {
        gl_store_close(s);
        return rc;
    }
    *out = s;
    return GL_OK;
}

static void agg_reset(struct gl_store *s);

static void caps_clear(struct gl_store *s)
{
    for (size_t i = 0; i < s->ncaps; i++)
        free(s->caps[i].model);
    free(s->caps);
    s->caps = NULL;
    s->ncaps = 0;
}

void gl_store_close(struct gl_store *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < sizeof statements / sizeof *statements; i++)
        sqlite3_finalize(*statement(s, i));
    agg_reset(s);
    GL_FREE_EACH(s->dirty, s->acc_key.e, s->acc_dev.e, s->acc_pod.e, s->model_hours.e,
                 s->models);
    gl_intern_free(s->names);
    caps_clear(s);
    for (size_t i = 0; i < sizeof s->triggers / sizeof *s->triggers; i++)
        free(s->triggers[i]);
    free(s->rekey);
    sqlite3_close(s->db);
    free(s->path);
    free(s);
}

sqlite3 *gl_store_db(struct gl_store *s)
{
    return s->db;
}

static enum gl_status agg_flush(struct gl_store *s, struct gl_error *err);

enum gl_status gl_store_begin(struct gl_store *s, struct gl_error *err)
{
    agg_reset(s);
    return exec(s, "BEGIN IMMEDIATE", err);
}

bool gl_store_cap_memo(struct gl_store *s, const char *model, int64_t *cap)
{
    for (size_t i = 0; s->reading && i < s->ncaps; i++)
        if (strcmp(s->caps[i].model, model) == 0) {
            *cap = s->caps[i].cap;
            return true;
        }
    return false;
}

void gl_store_cap_remember(struct gl_store *s, const char *model, int64_t cap)
{
    if (!s->reading)
        return;
    s->caps = gl_xrealloc(s->caps, (s->ncaps + 1) * sizeof *s->caps);
    s->caps[s->ncaps++] = (struct cap_memo){.model = gl_strdup(model), .cap = cap};
}

enum gl_status gl_store_read_begin(struct gl_store *s, struct gl_error *err)
{
    caps_clear(s);
    enum gl_status rc = exec(s, "BEGIN DEFERRED", err);
    s->reading = !rc;
    return rc;
}

void gl_store_read_end(struct gl_store *s)
{
    caps_clear(s);
    s->reading = false;
    if (!sqlite3_get_autocommit(s->db))
        exec(s, "COMMIT", NULL);
}

enum gl_status gl_store_commit(struct gl_store *s, struct gl_error *err)
{
    if (s->gated || s->nrekey) {
        enum gl_status rc = agg_flush(s, err);
        if (rc)
            return rc; /* the caller rolls back */
    }
    return exec(s, "COMMIT", err);
}

void gl_store_rollback(struct gl_store *s)
{
    agg_reset(s);
    if (!sqlite3_get_autocommit(s->db))
        exec(s, "ROLLBACK", NULL);
}

static enum gl_status step_done(struct gl_store *s, sqlite3_stmt *st, const char *what,
                                struct gl_error *err)
{
    int rc = sqlite3_step(st);
    enum gl_status out = GL_OK;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        out = gl_store_fail(s, what, err);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return out;
}

/* ---- the aggregates (schema/004_daily.sql) ----
 *
 * The store keeps them itself for its own writes (the schema's per-row
 * triggers are dropped inside the chunk's transaction and created again
 * before it commits; DDL is transactional, so no other connection ever
 * sees them missing, and a rollback restores them): the hours a chunk
 * replaces have their old rows' contribution taken out in grouped
 * statements before the rows go (agg_take_out), the new rows' sums are kept
 * in C as they are written (agg_add) and written at commit (agg_flush; by
 * grouped statements over the hours instead when a row met a stored one),
 * a cost of one hash update per row instead of four upserts in a trigger.
 * Every other writer gets the triggers. What is no sum is recomputed from usage at commit:
 * anomaly_day of the days a chunk cleared (first / last seen). */

/* Inserts t into the sorted distinct set. */
static void set_add(int64_t **v, size_t *n, size_t *cap, int64_t t)
{
    size_t lo = 0, hi = *n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((*v)[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < *n && (*v)[lo] == t)
        return;
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *v = gl_xrealloc(*v, *cap * sizeof **v);
    }
    memmove(*v + lo + 1, *v + lo, (*n - lo) * sizeof **v);
    (*v)[lo] = t;
    (*n)++;
}

static void tab_clear(struct agg_tab *t)
{
    if (t->n)
        memset(t->e, 0, t->cap * sizeof *t->e);
    t->n = 0;
}

static void agg_reset(struct gl_store *s)
{
    s->nrekey = 0;
    s->gated = false;
    s->by_sql = false;
    tab_clear(&s->acc_key);
    tab_clear(&s->acc_dev);
    tab_clear(&s->acc_pod);
    tab_clear(&s->model_hours);
    for (size_t i = 0; i < s->nmodels; i++)
        free(s->models[i].name);
    s->nmodels = 0;
    gl_intern_free(s->names);
    s->names = NULL;
    memset(s->name_cache, 0, sizeof s->name_cache);
    for (size_t i = 0; i < s->ndirty; i++)
        free(s->dirty[i].cluster);
    s->ndirty = 0;
}

static bool is_overflow(struct gl_store *s)
{
    const char *msg = sqlite3_errmsg(s->db);
    return strstr(msg, "integer overflow") || strstr(msg, "CHECK constraint failed");
}

/* An aggregate of days [from, to) failed: an integer overflow (SUM's
 * error, or the CHECK that keeps a + b from turning REAL) is named so. */
static enum gl_status agg_fail(struct gl_store *s, int64_t from, int64_t to, struct gl_error *err)
{
    if (!is_overflow(s))
        return gl_store_fail(s, "keeping the daily aggregates", err);
    char d0[16], d1[16];
    gl_date_format(from, d0, sizeof d0);
    gl_date_format(to - 1, d1, sizeof d1);
    return gl_error_set(err, GL_ERR_RUNTIME,
                        "%s: integer overflow: a daily sum of MiB·s from %s to %s exceeds the "
                        "64-bit range (the stored samples are implausible); the chunk was not "
                        "stored",
                        s->path, d0, d1);
}

static enum gl_status agg_step(struct gl_store *s, sqlite3_stmt *st, int64_t from, int64_t to,
                               struct gl_error *err)
{
    sqlite3_bind_int64(st, 1, from);
    sqlite3_bind_int64(st, 2, to);
    return step_done(s, st, "keeping the daily aggregates", err);
}

/* One of the store's statements over a cluster's hours [from, to). */
static enum gl_status agg_hours(struct gl_store *s, sqlite3_stmt *st, const char *cluster,
                                int64_t from, int64_t to, struct gl_error *err)
{
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, to);
    if (step_done(s, st, "keeping the daily aggregates", err))
        return agg_fail(s, gl_floor_to(from, 86400), to, err);
    return GL_OK;
}

/* A cluster's hours [from, to) are about to be replaced (their rows
 * deleted, or changed): the store keeps the aggregates from here to the
 * commit (the triggers dropped), their old rows' contribution is taken
 * out now, their new rows are added at commit (agg_flush), and their
 * days' anomalies are recomputed at commit. */
static bool agg_covered(struct gl_store *s, const char *cluster, int64_t hour);

static enum gl_status agg_take_out_run(struct gl_store *s, const char *cluster, int64_t from,
                                       int64_t to, struct gl_error *err)
{
    enum gl_status rc;
    if (!s->gated) {
        char sql[128];
        for (size_t i = 0; i < 3; i++) {
            snprintf(sql, sizeof sql, "DROP TRIGGER %s", trigger_names[i]);
            if ((rc = exec(s, sql, err)))
                return rc;
        }
        s->gated = true;
    }
    if ((rc = agg_hours(s, s->out_dev, cluster, from, to, err)) ||
        (rc = agg_hours(s, s->out_pod, cluster, from, to, err)) ||
        (rc = agg_hours(s, s->out_key, cluster, from, to, err)))
        return rc;
    if (s->ndirty == s->cdirty) {
        s->cdirty = s->cdirty ? s->cdirty * 2 : 4;
        s->dirty = gl_xrealloc(s->dirty, s->cdirty * sizeof *s->dirty);
    }
    s->dirty[s->ndirty++] = (struct agg_range){gl_strdup(cluster), from, to};
    for (int64_t d = gl_floor_to(from, 86400); d < to; d += 86400)
        set_add(&s->rekey, &s->nrekey, &s->crekey, -1 - d);
    return GL_OK;
}

/* ... for the hours of [from, to) not taken out yet in this transaction
 * (a range cleared twice is taken out and added once). */
static enum gl_status agg_take_out(struct gl_store *s, const char *cluster, int64_t from,
                                   int64_t to, struct gl_error *err)
{
    int64_t run = -1;
    for (int64_t h = from; h < to; h += 3600) {
        bool done = agg_covered(s, cluster, h);
        if (!done && run < 0)
            run = h;
        if (done && run >= 0) {
            enum gl_status rc = agg_take_out_run(s, cluster, run, h, err);
            if (rc)
                return rc;
            run = -1;
        }
    }
    return run >= 0 ? agg_take_out_run(s, cluster, run, to, err) : GL_OK;
}

/* Whether the transaction replaces the cluster's hour (agg_take_out):
 * the last range matched is tried first. */
static bool agg_covered(struct gl_store *s, const char *cluster, int64_t hour)
{
    for (size_t k = s->ndirty; k-- > 0;) {
        const struct agg_range *r = &s->dirty[k];
        if (hour >= r->from && hour < r->to && strcmp(r->cluster, cluster) == 0) {
            if (k + 1 != s->ndirty) { /* keep the hit last */
                struct agg_range t = *r;
                s->dirty[k] = s->dirty[s->ndirty - 1];
                s->dirty[s->ndirty - 1] = t;
            }
            return true;
        }
    }
    return false;
}

/* The entry of key k (n of 6 used, the rest 0) in t, added when absent. */
static struct agg_ent *tab_get(struct agg_tab *t, const int64_t k[6])
{
    if (2 * (t->n + 1) > t->cap) {
        struct agg_tab g = {gl_xcalloc(t->cap ? 2 * t->cap : 1024, sizeof *g.e), 0,
                            t->cap ? 2 * t->cap : 1024};
        for (size_t i = 0; i < t->cap; i++)
            if (t->e[i].used)
                *tab_get(&g, t->e[i].k) = t->e[i];
        g.n = t->n;
        free(t->e);
        *t = g;
    }
    size_t i = (size_t)gl_hash_bytes(k, 6 * sizeof *k, GL_HASH_SEED) & (t->cap - 1);
    while (t->e[i].used && memcmp(t->e[i].k, k, 6 * sizeof *k) != 0)
        i = (i + 1) & (t->cap - 1);
    if (!t->e[i].used) {
        memcpy(t->e[i].k, k, 6 * sizeof *k);
        t->e[i].used = true;
        t->n++;
    }
    return &t->e[i];
}

/* -1 when out of memory (the sums are then SQL's). */
static int32_t name_id(struct gl_store *s, const char *str)
{
    if (!s->names)
        s->names = gl_intern_new();
    const size_t nc = sizeof s->name_cache / sizeof *s->name_cache;
    size_t slot = (size_t)(((uintptr_t)str >> 3) ^ ((uintptr_t)str >> 12)) & (nc - 1);
    if (s->name_cache[slot].p == str && s->names &&
        strcmp(gl_intern_str(s->names, s->name_cache[slot].id), str) == 0)
        return s->name_cache[slot].id;
    int32_t id = s->names ? gl_intern_get(s->names, str) : -1;
    if (id >= 0) {
        s->name_cache[slot].p = str;
        s->name_cache[slot].id = id;
    }
    if (id < 0)
        s->by_sql = true;
    return id;
}

/* The first of device id's registrations in s->models (sorted by id, then
 * in the order stored), or where they would go. */
static size_t model_pos(const struct gl_store *s, int64_t id)
{
    size_t lo = 0, hi = s->nmodels;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->models[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The model of device id at hour: the registration whose hours hold it,
 * else the device's last one; NULL when the device was not stored in this
 * transaction. */
static const struct agg_model *model_of(const struct gl_store *s, int64_t id, int64_t hour)
{
    const struct agg_model *last = NULL;
    for (size_t i = model_pos(s, id); i < s->nmodels && s->models[i].id == id; i++) {
        last = &s->models[i];
        if (hour >= last->from && hour <= last->to)
            return last;
    }
    return last;
}

static void model_add(struct gl_store *s, int64_t id, const struct gl_device_info *d)
{
    size_t lo = model_pos(s, id);
    while (lo < s->nmodels && s->models[lo].id == id)
        lo++;
    if (s->nmodels == s->cmodels) {
        s->cmodels = s->cmodels ? 2 * s->cmodels : 256;
        s->models = gl_xrealloc(s->models, s->cmodels * sizeof *s->models);
    }
    memmove(s->models + lo + 1, s->models + lo, (s->nmodels - lo) * sizeof *s->models);
    s->models[lo] = (struct agg_model){id, gl_floor_to(d->first_seen, 3600), d->last_seen,
                                       d->max_capacity_mib, name_id(s, d->model),
                                       gl_strdup(d->model)};
    s->nmodels++;
}

/* The device_model_hour row of the device and hour of a usage row, written
 * once per transaction before the hour's first row. */
static enum gl_status model_hour(struct gl_store *s, const struct agg_model *m, int64_t hour,
                                 struct gl_error *err)
{
    struct agg_ent *e = tab_get(&s->model_hours, (int64_t[6]){hour, m->id, 0, 0, 0, 0});
    if (e->rows)
        return GL_OK;
    e->rows = 1;
    sqlite3_stmt *st = s->put_model;
    sqlite3_bind_int64(st, 1, hour);
    sqlite3_bind_int64(st, 2, m->id);
    sqlite3_bind_text(st, 3, m->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, m->cap);
    return step_done(s, st, "storing a device's model of the hour", err);
}

static bool sum_into(struct agg_ent *e, int64_t q, int64_t est)
{
    e->rows++;
    e->est = est;
    return !__builtin_add_overflow(e->q, q, &e->q);
}

/* A new usage row (no stored row had its key): added to the sums. false
 * on an integer overflow of one. */
static bool agg_add(struct gl_store *s, int64_t hour, const char *cluster, const char *ns,
                    const char *pod, int64_t device_id, int32_t model, const char *team,
                    const char *kind, int64_t quantity, int estimated)
{
    if (model < 0) /* a device of an earlier transaction: SQL sums */
        s->by_sql = true;
    int64_t day = hour - hour % 86400;
    int64_t c = name_id(s, cluster), t = name_id(s, team), k = name_id(s, kind);
    int64_t nsid = name_id(s, ns), podid = name_id(s, pod);
    if (s->by_sql)
        return true;
    struct agg_ent *e = tab_get(&s->acc_key, (int64_t[6]){hour, c, model, t, k, 0});
    int64_t est = e->rows && e->est > estimated ? e->est : estimated; /* MAX */
    if (!sum_into(e, quantity, est))
        return false;
    e = tab_get(&s->acc_dev, (int64_t[6]){day, device_id, k, 0, 0, 0});
    if (!sum_into(e, quantity, 0))
        return false;
    if (pod[0] && (strcmp(kind, GL_K_MEMORY_USED) == 0 || strcmp(kind, GL_K_ALLOCATED) == 0 ||
                   strcmp(kind, GL_K_RESERVED_UNUSED) == 0)) {
        e = tab_get(&s->acc_pod, (int64_t[6]){t, day, c, nsid, podid, k});
        if (!sum_into(e, quantity, e->est + (estimated != 0)))
            return false;
    }
    return true;
}

static enum gl_status put_step(struct gl_store *s, sqlite3_stmt *st, int64_t day,
                               struct gl_error *err)
{
    if (step_done(s, st, "keeping the daily aggregates", err))
        return agg_fail(s, day, day + 86400, err);
    return GL_OK;
}

/* The sums of one table kept in C written by st: the key's columns first
 * (kinds[j] 't': k[j] is a name's id, 'i': a number), then quantity,
 * estimated (with_est) and rows. k[day_k] is the row's hour or day, which
 * an error names the day of. */
static enum gl_status put_sums(struct gl_store *s, const struct agg_tab *t, sqlite3_stmt *st,
                               const char *kinds, bool with_est, int day_k,
                               struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    const int nk = (int)strlen(kinds);
    for (size_t i = 0; !rc && i < t->cap; i++) {
        const struct agg_ent *e = &t->e[i];
        if (!e->used)
            continue;
        for (int j = 0; j < nk; j++)
            if (kinds[j] == 't')
                sqlite3_bind_text(st, j + 1, gl_intern_str(s->names, (int32_t)e->k[j]), -1,
                                  SQLITE_STATIC);
            else
                sqlite3_bind_int64(st, j + 1, e->k[j]);
        int col = nk + 1;
        sqlite3_bind_int64(st, col++, e->q);
        if (with_est)
            sqlite3_bind_int64(st, col++, e->est);
        sqlite3_bind_int64(st, col, e->rows);
        rc = put_step(s, st, e->k[day_k] - e->k[day_k] % 86400, err);
    }
    return rc;
}

/* The sums kept in C written: usage_key_hour (hour, cluster, model, team,
 * kind), device_day (day, device, kind), pod_day (team, day, cluster,
 * namespace, pod, kind). */
static enum gl_status agg_put(struct gl_store *s, struct gl_error *err)
{
    enum gl_status rc = put_sums(s, &s->acc_key, s->put_key, "itttt", true, 0, err);
    if (!rc)
        rc = put_sums(s, &s->acc_dev, s->put_dev, "iit", false, 0, err);
    if (!rc)
        rc = put_sums(s, &s->acc_pod, s->put_pod, "titttt", true, 1, err);
    return rc;
}

/* Before commit: the replaced hours' rows added (from the sums kept in C,
 * or by SQL when a row met a stored one), then the days to recompute
 * (after: a day recomputed includes the rows just added). */
static enum gl_status agg_flush(struct gl_store *s, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    if (!s->by_sql)
        rc = agg_put(s, err);
    for (size_t i = 0; !rc && s->by_sql && i < s->ndirty; i++) {
        const struct agg_range *r = &s->dirty[i];
        if (!(rc = agg_hours(s, s->in_key, r->cluster, r->from, r->to, err)) &&
            !(rc = agg_hours(s, s->in_dev, r->cluster, r->from, r->to, err)))
            rc = agg_hours(s, s->in_pod, r->cluster, r->from, r->to, err);
    }
    for (size_t i = 0; !rc && s->gated && i < 3; i++)
        rc = exec(s, s->triggers[i], err);
    for (size_t i = 0; !rc && i < s->nrekey; i++) {
        int64_t day = -1 - s->rekey[i];
        if (agg_step(s, s->agg_anom_del, day, day + 86400, err) ||
            agg_step(s, s->agg_anom_ins, day, day + 86400, err))
            rc = agg_fail(s, day, day + 86400, err);
    }
    agg_reset(s);
    return rc;
}

/* The id and model of a device; *found false when it is not stored. */
static enum gl_status device_get(struct gl_store *s, const struct gl_device_info *d, int64_t *id,
                                 char **model, bool *found, struct gl_error *err)
{
    sqlite3_stmt *st = s->get_device;
    sqlite3_bind_text(st, 1, d->cluster, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, d->uuid, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, d->gpu_i_id, -1, SQLITE_STATIC);
    int sr = sqlite3_step(st);
    *found = sr == SQLITE_ROW;
    if (*found) {
        *id = sqlite3_column_int64(st, 0);
        *model = gl_strdup((const char *)sqlite3_column_text(st, 1));
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return sr == SQLITE_ROW || sr == SQLITE_DONE ? GL_OK
                                                 : gl_store_fail(s, "reading device id", err);
}

static int64_t info_hour(const struct gl_device_info *d)
{
    return gl_floor_to(d->first_seen, 3600);
}

enum gl_status gl_store_device(struct gl_store *s, const struct gl_device_info *d, int64_t *id,
                               struct gl_error *err)
{
    char *was = NULL, *now = NULL;
    bool known = false, found = false;
    enum gl_status rc = device_get(s, d, id, &was, &known, err);
    if (rc)
        return rc;
    sqlite3_stmt *st = s->upsert_device;
    sqlite3_bind_text(st, 1, d->cluster, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, d->uuid, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, d->gpu_i_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, d->gpu_i_profile, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, d->model, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, d->hostname, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, d->max_capacity_mib);
    sqlite3_bind_int64(st, 8, d->first_seen);
    sqlite3_bind_int64(st, 9, d->last_seen);
    if (!(rc = step_done(s, st, "storing device", err)) &&
        !(rc = device_get(s, d, id, &now, &found, err)) && !found)
        rc = gl_error_set(err, GL_ERR_RUNTIME, "%s: reading device id: the device just stored "
                          "is missing", s->path);
    /* each hour is priced at the model it reported (device_model_hour):
     * a change is no error, but an operator should know of it */
    if (!rc && known && strcmp(was, d->model) != 0 && strcmp(d->model, "unknown") != 0 &&
        strcmp(was, "unknown") != 0 && strncmp(d->uuid, "node:", 5) != 0) {
        char ts[32];
        gl_time_format(info_hour(d), ts, sizeof ts);
        gl_log(GL_LOG_WARN,
               "device model changed cluster=%s uuid=%s%s%s from=\"%s\" to=\"%s\" hour=%s "
               "reason=\"each hour is priced at the model it reported; gpuledger check lists "
               "such devices\"",
               d->cluster, d->uuid, d->gpu_i_id[0] ? "/" : "", d->gpu_i_id, was, d->model, ts);
    }
    if (!rc)
        model_add(s, *id, d);
    free(was);
    free(now);
    return rc;
}

/* A pruned hour of the cluster asked for again. */
static enum gl_status pruned_error(struct gl_store *s, const char *cluster, int64_t hour,
                                   struct gl_error *err)
{
    char ts[32];
    gl_time_format(hour, ts, sizeof ts);
    return gl_error_set(err, GL_ERR_STATE,
                        "%s: cluster %.200s, hour %s was pruned (gpuledger prune): its closed "
                        "period keeps its figures and cannot be re-collected; collect from "
                        "the first hour after the pruned periods",
                        s->path, cluster, ts);
}

/* A pruned hour (prune: its usage rows are gone, its figures kept in the
 * aggregates) cannot be replaced: the old rows are no longer there to be
 * taken out of the aggregates, so new rows would be counted on top. */
static enum gl_status refuse_pruned(struct gl_store *s, const char *cluster, int64_t from,
                                    int64_t to, struct gl_error *err)
{
    sqlite3_stmt *st = s->pruned_hour;
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, to);
    int r = sqlite3_step(st);
    bool pruned = r == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL;
    int64_t hour = pruned ? sqlite3_column_int64(st, 0) : 0;
    enum gl_status rc = r == SQLITE_ROW ? GL_OK : gl_store_fail(s, "reading pruned hours", err);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return !rc && pruned ? pruned_error(s, cluster, hour, err) : rc;
}

enum gl_status gl_store_clear_hours(struct gl_store *s, const char *cluster, int64_t from,
                                    int64_t to, struct gl_error *err)
{
    enum gl_status prc = refuse_pruned(s, cluster, from, to, err);
    if (prc)
        return prc;
    if ((prc = agg_take_out(s, cluster, from, to, err)))
        return prc;
    if ((prc = agg_hours(s, s->clear_models, cluster, from, to, err)))
        return prc;
    sqlite3_stmt *st = s->clear_hours;
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, to);
    enum gl_status rc = step_done(s, st, "clearing hours", err);
    return rc && is_overflow(s) ? agg_fail(s, gl_floor_to(from, 86400), to, err) : rc;
}

enum gl_status gl_store_add_usage(struct gl_store *s, int64_t hour, const char *cluster,
                                  const char *ns, const char *pod, int64_t device_id,
                                  const char *team, const char *kind, int64_t quantity,
                                  int estimated, int64_t first_seen, int64_t last_seen,
                                  struct gl_error *err)
{
    /* a row of an hour not replaced (collect replaces every hour it
     * writes): that hour's aggregates are taken out and added at commit */
    if (!agg_covered(s, cluster, hour)) {
        enum gl_status arc = refuse_pruned(s, cluster, hour, hour + 3600, err);
        if (arc || (arc = agg_take_out(s, cluster, hour, hour + 3600, err)))
            return arc;
    }
    /* a new row is added to the sums kept in C; a row meeting a stored
     * one (SQLITE_CONSTRAINT: nothing written) is upserted, and the sums
     * are then SQL's at commit */
    const struct agg_model *m = model_of(s, device_id, hour);
    enum gl_status mrc = m ? model_hour(s, m, hour, err) : GL_OK;
    if (mrc)
        return mrc;
    sqlite3_stmt *st = s->by_sql ? s->ins_usage : s->ins_plain;
again:
    sqlite3_bind_int64(st, 1, hour);
    sqlite3_bind_text(st, 2, cluster, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, ns, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, pod, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, device_id);
    sqlite3_bind_text(st, 6, team, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, kind, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 8, quantity);
    sqlite3_bind_int(st, 9, estimated);
    sqlite3_bind_int64(st, 10, first_seen);
    sqlite3_bind_int64(st, 11, last_seen);
    if (st == s->ins_plain) {
        int sr = sqlite3_step(st);
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        if (sr == SQLITE_DONE) {
            if (agg_add(s, hour, cluster, ns, pod, device_id, m ? m->model : -1, team, kind,
                        quantity, estimated))
                return GL_OK;
            return agg_fail(s, hour - hour % 86400, hour + 3600, err);
        }
        if (sr != SQLITE_CONSTRAINT)
            return gl_store_fail(s, "storing usage", err);
        s->by_sql = true;
        st = s->ins_usage;
        goto again;
    }
    enum gl_status rc = step_done(s, st, "storing usage", err);
    if (rc && is_overflow(s)) {
        char ts[32];
        gl_time_format(hour, ts, sizeof ts);
        rc = gl_error_set(err, GL_ERR_RUNTIME,
                          "%s: integer overflow: storing %s %.300s%s%.300s (team \"%.300s\", "
                          "cluster %.200s), kind %s at %s: an hourly or daily sum exceeds the "
                          "64-bit range (the samples are implausible); the chunk was not stored",
                          s->path, pod[0] ? "pod" : "device row", ns, pod[0] ? "/" : "", pod,
                          team, cluster, kind, ts);
    }
    return rc;
}

enum gl_status gl_store_mark_hour(struct gl_store *s, const char *cluster, int64_t hour,
                                  int64_t samples, int64_t bad, struct gl_error *err)
{
    sqlite3_stmt *st = s->mark_hour;
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, hour);
    sqlite3_bind_int64(st, 3, samples);
    sqlite3_bind_int64(st, 4, bad);
    return step_done(s, st, "marking hour collected", err);
}

struct gl_lock {
    int file_fd; /* <db>.lock */
    int db_fd;   /* the database itself */
};

/* flock(LOCK_EX | LOCK_NB) on a new descriptor of path (created when
 * missing); what names the file in messages. */
static enum gl_status lock_path(const char *path, const char *what, int *fd,
                                struct gl_error *err)
{
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0)
        return gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot open %s: %s", path, what,
                            strerror(errno));
    if (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(*fd);
        *fd = -1;
        if (e == EWOULDBLOCK)
            return gl_error_set(err, GL_ERR_LOCKED,
                                "%s: another gpuledger process is writing this database; "
                                "try again when it has finished",
                                path);
        return gl_error_set(err, GL_ERR_RUNTIME, "%s: cannot lock %s: %s", path, what,
                            strerror(e));
    }
    return GL_OK;
}

enum gl_status gl_lock_acquire(const char *db_path, struct gl_lock **out, struct gl_error *err)
{
    struct gl_lock *l = gl_xcalloc(1, sizeof *l);
    l->db_fd = -1;
    struct gl_buf path;
    gl_buf_init(&path);
    gl_buf_printf(&path, "%s.lock", db_path);
    /* <db>.lock first: what operators (flock DB.lock) and older gpuledger
     * versions take. It is keyed on the path, so the database file is
     * locked too: flock(2) belongs to the inode, and every path to it (a
     * symlink, a hard link, another relative path) meets the same lock.
     * On Linux flock locks and SQLite's POSIX (fcntl) locks do not
     * interact (except on NFS, where a WAL database does not work
     * anyway: it needs shared memory). */
    enum gl_status rc = lock_path(path.data, "the lock file", &l->file_fd, err);
    if (!rc)
        rc = lock_path(db_path, "the database to lock it", &l->db_fd, err);
    gl_buf_free(&path);
    if (rc) {
        gl_lock_release(l);
        l = NULL;
    }
    *out = l;
    return rc;
}

void gl_lock_release(struct gl_lock *l)
{
    if (!l)
        return;
    /* Closing any descriptor of the database drops this process's POSIX
     * locks on it, SQLite's included: callers close the store first. */
    if (l->db_fd >= 0)
        close(l->db_fd);
    if (l->file_fd >= 0)
        close(l->file_fd);
    free(l);
}

enum gl_status gl_store_watermark(struct gl_store *s, const char *cluster, int64_t *to,
                                  bool *found, struct gl_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT collected_to FROM watermark WHERE cluster = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return gl_store_fail(s, "reading the watermark", err);
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    *found = rc == SQLITE_ROW;
    if (*found)
        *to = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? GL_OK
                                                 : gl_store_fail(s, "reading the watermark", err);
}

enum gl_status gl_store_advance_watermark(struct gl_store *s, const char *cluster, int64_t to,
                                          struct gl_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT INTO watermark (cluster, collected_to, updated_at) "
                           "VALUES (?1, ?2, strftime('%s','now')) ON CONFLICT (cluster) DO UPDATE "
                           "SET collected_to = max(collected_to, excluded.collected_to), "
                           "updated_at = excluded.updated_at",
                           -1, &st, NULL) != SQLITE_OK)
        return gl_store_fail(s, "advancing the watermark", err);
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, to);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? GL_OK : gl_store_fail(s, "advancing the watermark", err);
}

enum gl_status gl_store_label_first_seen(struct gl_store *s, const char *labels, int64_t *first,
                                         bool record, struct gl_error *err)
{
    sqlite3_stmt *st = s->label_get;
    sqlite3_bind_text(st, 1, labels, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    bool same = false; /* the stored first_seen is the answer already */
    if (rc == SQLITE_ROW) {
        int64_t stored = sqlite3_column_int64(st, 0);
        if (*first < 0 || stored < *first)
            *first = stored;
        same = stored == *first;
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return gl_store_fail(s, "reading label series", err);
    /* (the upsert would write the row unchanged: a page and WAL frame per
     * chunk for every label series) */
    if (!record || *first < 0 || same)
        return GL_OK;
    st = s->label_put;
    sqlite3_bind_text(st, 1, labels, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, *first);
    return step_done(s, st, "storing label series", err);
}

enum gl_status gl_store_prepare(struct gl_store *s, const char *sql, sqlite3_stmt **st,
                                const char *what, struct gl_error *err)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK) {
        *st = NULL;
        return err ? gl_store_fail(s, what, err) : GL_ERR_RUNTIME;
    }
    return GL_OK;
}

enum gl_status gl_store_query_period(struct gl_store *s, const char *sql, int64_t start,
                                     int64_t end, sqlite3_stmt **st, const char *what,
                                     struct gl_error *err)
{
    if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK) {
        *st = NULL;
        return gl_store_fail(s, what, err);
    }
    sqlite3_bind_int64(*st, 1, start);
    sqlite3_bind_int64(*st, 2, end);
    return GL_OK;
}

enum gl_status gl_store_query_named(struct gl_store *s, const char *sql, const char *name,
                                    sqlite3_stmt **st, const char *what, struct gl_error *err)
{
    enum gl_status rc = gl_store_prepare(s, sql, st, what, err);
    if (!rc)
        sqlite3_bind_text(*st, 1, name, -1, SQLITE_STATIC);
    return rc;
}

enum gl_status gl_store_run_once(struct gl_store *s, sqlite3_stmt *st, const char *what,
                                 struct gl_error *err)
{
    int sr = sqlite3_step(st);
    sqlite3_finalize(st);
    return sr == SQLITE_DONE ? GL_OK : gl_store_fail(s, what, err);
}

enum gl_status gl_store_read_one(struct gl_store *s, sqlite3_stmt *st, int64_t *v,
                                 const char *what, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    if (sqlite3_step(st) == SQLITE_ROW)
        *v = sqlite3_column_int64(st, 0);
    else
        rc = gl_store_fail(s, what, err);
    sqlite3_finalize(st);
    return rc;
}

enum gl_status gl_store_clear_range(struct gl_store *s, const char *sql, const char *cluster,
                                    int64_t from, int64_t to, const char *what,
                                    struct gl_error *err)
{
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_prepare(s, sql, &st, what, err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, to);
    return gl_store_run_once(s, st, what, err);
}

enum gl_status gl_store_put_row(struct gl_store *s, sqlite3_stmt *st, const char *what,
                                struct gl_error *err)
{
    enum gl_status rc = sqlite3_step(st) == SQLITE_DONE ? GL_OK : gl_store_fail(s, what, err);
    sqlite3_reset(st);
    return rc;
}

enum gl_status gl_store_finish(struct gl_store *s, enum gl_status rc, struct gl_error *err)
{
    if (!rc)
        rc = gl_store_commit(s, err);
    if (rc)
        gl_store_rollback(s);
    return rc;
}

enum gl_status gl_store_query_counts(struct gl_store *s, const char *cluster, int64_t hour,
                                     const char *query, struct gl_query_counts *out,
                                     struct gl_error *err)
{
    *out = (struct gl_query_counts){0};
    sqlite3_stmt *st = s->counts_get;
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, hour);
    sqlite3_bind_text(st, 3, query, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        out->found = true;
        out->series = sqlite3_column_int64(st, 0);
        out->samples = sqlite3_column_int64(st, 1);
    } else if (rc == SQLITE_DONE) {
        /* an hour stored before schema 2: its memory samples stand in */
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        st = s->hour_get;
        sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, hour);
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW && sqlite3_column_int64(st, 1) == 0) {
            out->legacy = true;
            out->samples = sqlite3_column_int64(st, 0);
        }
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return gl_store_fail(s, "reading what was collected", err);
    return GL_OK;
}

enum gl_status gl_store_put_counts(struct gl_store *s, const char *cluster, int64_t hour,
                                   const char *query, int64_t series, int64_t samples,
                                   struct gl_error *err)
{
    sqlite3_stmt *st = s->counts_put;
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, hour);
    sqlite3_bind_text(st, 3, query, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, series);
    sqlite3_bind_int64(st, 5, samples);
    return step_done(s, st, "recording what was collected", err);
}

enum gl_status gl_store_hour_figures(struct gl_store *s, const char *cluster, int64_t from,
                                     int64_t to, gl_hour_figure_fn fn, void *ctx,
                                     struct gl_error *err)
{
    /* sum() of integers fails on overflow ("integer overflow"), never wraps */
    sqlite3_stmt *st;
    enum gl_status rc = gl_store_prepare(
        s,
        "SELECT u.hour, d.uuid, d.gpu_i_id, u.team, u.kind, sum(u.quantity) "
        "FROM usage u JOIN device d ON d.id = u.device_id "
        "WHERE u.cluster = ?1 AND u.hour >= ?2 AND u.hour < ?3 "
        "AND u.kind IN ('" GL_K_MEMORY_USED "', '" GL_K_UNATTRIBUTED "', '" GL_K_UNKNOWN_STEPS "') "
        "GROUP BY u.hour, u.device_id, u.team, u.kind",
        &st, "reading the stored hours' figures", err);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_int64(st, 3, to);
    int r = SQLITE_DONE;
    while (!rc && (r = sqlite3_step(st)) == SQLITE_ROW)
        rc = fn(ctx, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
                (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3),
                (const char *)sqlite3_column_text(st, 4), sqlite3_column_int64(st, 5), err);
    if (!rc && r != SQLITE_DONE)
        rc = gl_store_fail(s, "reading the stored hours' figures", err);
    sqlite3_finalize(st);
    return rc;
}

/* ---- closing a period ---- */

enum gl_status gl_store_note_refused(struct gl_store *s, const char *cluster, int64_t from,
                                     int64_t to, const char *reason, int64_t now,
                                     struct gl_error *err)
{
    const char *what = "recording the refused hours";
    sqlite3_stmt *st = NULL;
    enum gl_status rc = gl_store_begin(s, err);
    if (rc)
        return rc;
    rc = gl_store_prepare(s,
                          "INSERT OR REPLACE INTO refused_hour (cluster, hour, refused_at, "
                          "reason) VALUES (?, ?, ?, ?)",
                          &st, what, err);
    for (int64_t h = from - from % 3600; !rc && h < to; h += 3600) {
        sqlite3_bind_text(st, 1, cluster, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, h);
        sqlite3_bind_int64(st, 3, now);
        sqlite3_bind_text(st, 4, reason, -1, SQLITE_STATIC);
        rc = gl_store_put_row(s, st, what, err);
    }
    sqlite3_finalize(st);
    return gl_store_finish(s, rc, err);
}
