/*
 * store — the SQLite database: schema, devices, hourly rollups.
 *
 * Writes: device, usage, collected_hour and collected_query rows
 * (schema/NNN_*.sql, compiled in and applied by version through PRAGMA
 * user_version; a version this build does not know is refused on open). The
 * database runs in WAL mode; every chunk of collection is one transaction,
 * so a run killed at any point leaves whole hours or nothing.
 *
 * The store layer is store.c (schema, collect-side writes, closing) and
 * query.c (every typed read); only they see SQLite, through store_sql.h.
 */
#ifndef GL_STORE_H
#define GL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct gl_store;

/* Opens (creating when needed) and migrates the database at path. */
enum gl_status gl_store_open(const char *path, struct gl_store **out, struct gl_error *err);
/* The schema version this build writes (the number of migrations). */
int gl_store_schema_version(void);
void gl_store_close(struct gl_store *s);

enum gl_status gl_store_begin(struct gl_store *s, struct gl_error *err);
/* A read snapshot (WAL): every SELECT until gl_store_read_end sees the same
 * data, whatever a concurrent run commits. */
enum gl_status gl_store_read_begin(struct gl_store *s, struct gl_error *err);
void gl_store_read_end(struct gl_store *s);
enum gl_status gl_store_commit(struct gl_store *s, struct gl_error *err);
void gl_store_rollback(struct gl_store *s);

struct gl_device_info {
    const char *cluster;
    const char *uuid;
    const char *gpu_i_id;
    const char *gpu_i_profile;
    const char *model;
    const char *hostname;
    int64_t max_capacity_mib;
    int64_t first_seen, last_seen;
};

/* Inserts or refreshes a device and returns its id. */
enum gl_status gl_store_device(struct gl_store *s, const struct gl_device_info *d,
                               int64_t *id, struct gl_error *err);

/* Deletes the usage rows of cluster for hours in [from, to). */
enum gl_status gl_store_clear_hours(struct gl_store *s, const char *cluster, int64_t from,
                                    int64_t to, struct gl_error *err);

enum gl_status gl_store_add_usage(struct gl_store *s, int64_t hour, const char *cluster,
                                  const char *ns, const char *pod, int64_t device_id,
                                  const char *team, const char *kind, int64_t quantity,
                                  int estimated, int64_t first_seen, int64_t last_seen,
                                  struct gl_error *err);

enum gl_status gl_store_mark_hour(struct gl_store *s, const char *cluster, int64_t hour,
                                  int64_t samples, int64_t bad, struct gl_error *err);

/* What one query returned for one collected hour (schema/002). found is
 * false when nothing was recorded; legacy then says the hour was stored
 * before schema 2, with samples = its memory samples (collected_hour). */
struct gl_query_counts {
    bool found, legacy;
    int64_t series, samples;
};

enum gl_status gl_store_query_counts(struct gl_store *s, const char *cluster, int64_t hour,
                                     const char *query, struct gl_query_counts *out,
                                     struct gl_error *err);
/* Records them (inside the chunk's transaction). */
enum gl_status gl_store_put_counts(struct gl_store *s, const char *cluster, int64_t hour,
                                   const char *query, int64_t series, int64_t samples,
                                   struct gl_error *err);

/* What the stored usage rows of one cluster bill in the hours [from, to),
 * for the no-silent-shrink check (collect.c): per hour, device (uuid,
 * gpu_i_id) and team, the sums of the memory_used, unattributed and
 * unknown_steps rows, given to fn one at a time (kind is one of those three
 * names). A sum past 64 bits is an error naming the database. fn's error
 * ends the walk. */
typedef enum gl_status (*gl_hour_figure_fn)(void *ctx, int64_t hour, const char *uuid,
                                             const char *gpu_i_id, const char *team,
                                             const char *kind, int64_t sum,
                                             struct gl_error *err);
enum gl_status gl_store_hour_figures(struct gl_store *s, const char *cluster, int64_t from,
                                     int64_t to, gl_hour_figure_fn fn, void *ctx,
                                     struct gl_error *err);

/* Takes the exclusive lock that keeps two writers (run, collect, close)
 * off one database: flock(2) on <db>.lock (as before, for `flock DB.lock`
 * and older versions) and on the database file itself (created when
 * missing), so a symlink or hard link to it meets the same lock.
 * GL_ERR_LOCKED, naming the file, when another process holds either. The
 * lock goes with the process, even when it is killed. On success *out is
 * released with gl_lock_release (NULL-safe), and only after
 * gl_store_close: closing a descriptor of the database drops the
 * process's POSIX locks on it, SQLite's included. */
struct gl_lock;
enum gl_status gl_lock_acquire(const char *db_path, struct gl_lock **out, struct gl_error *err);
void gl_lock_release(struct gl_lock *l);

/* Watermark of a cluster: every hour before *to is stored; *found false
 * when the cluster was never run. */
enum gl_status gl_store_watermark(struct gl_store *s, const char *cluster, int64_t *to,
                                  bool *found, struct gl_error *err);
/* Advances it (never backwards); call inside the chunk's transaction. */
enum gl_status gl_store_advance_watermark(struct gl_store *s, const char *cluster, int64_t to,
                                          struct gl_error *err);

/* First-seen instants of label series: *first becomes the earlier of the
 * stored value and *first; record stores it (inside the chunk's
 * transaction). */
enum gl_status gl_store_label_first_seen(struct gl_store *s, const char *labels, int64_t *first,
                                         bool record, struct gl_error *err);

/* Records the hours [from, to) of cluster as refused (schema 009
 * refused_hour; reason "shrink" or "backend"), in its own transaction: a
 * collect whose chunk was refused or failed. They count against closing
 * their period until stored again. */
enum gl_status gl_store_note_refused(struct gl_store *s, const char *cluster, int64_t from,
                                     int64_t to, const char *reason, int64_t now,
                                     struct gl_error *err);

/* Formats "<what>: <sqlite message>" into err and returns GL_ERR_RUNTIME. */
enum gl_status gl_store_fail(struct gl_store *s, const char *what, struct gl_error *err);

#endif
