/*
 * store_sql — the raw SQLite handle of a store, for the store layer only
 * (store.c, query.c; a unit test may read a database through it). No other
 * module includes this header: they call the typed functions of store.h
 * and query.h.
 */
#ifndef GL_STORE_SQL_H
#define GL_STORE_SQL_H

#include <sqlite3.h>

#include "store.h"

sqlite3 *gl_store_db(struct gl_store *s);

/* A GPU model's capacity as read before in the same read snapshot
 * (gl_store_read_begin .. gl_store_read_end): nothing collected can change
 * it there, and a statement asks it for every advice and unit-cost row.
 * Outside a snapshot nothing is remembered. */
bool gl_store_cap_memo(struct gl_store *s, const char *model, int64_t *cap);
void gl_store_cap_remember(struct gl_store *s, const char *model, int64_t cap);

/* Prepares sql with ?1 = start and ?2 = end bound (a period's hours); on
 * failure *st is NULL and err says what was being read. Finalize *st. */
enum gl_status gl_store_query_period(struct gl_store *s, const char *sql, int64_t start,
                                     int64_t end, sqlite3_stmt **st, const char *what,
                                     struct gl_error *err);

/* Prepares sql; on failure *st is NULL and err (when not NULL) says what
 * was being read. Finalize *st. Only the store layer (store.c, query.c). */
enum gl_status gl_store_prepare(struct gl_store *s, const char *sql, sqlite3_stmt **st,
                                const char *what, struct gl_error *err);

/* Prepares sql with ?1 = name bound (a period's name: it outlives *st);
 * on failure *st is NULL and err says what was being read. Finalize *st. */
enum gl_status gl_store_query_named(struct gl_store *s, const char *sql, const char *name,
                                    sqlite3_stmt **st, const char *what, struct gl_error *err);

/* Steps st, prepared for one write, and finalizes it: GL_OK when it is
 * done, else err says what was being written. */
enum gl_status gl_store_run_once(struct gl_store *s, sqlite3_stmt *st, const char *what,
                                 struct gl_error *err);

/* Steps st, a read of one row, and finalizes it: *v is the row's first
 * column as an integer; err says what was being read when there is none. */
enum gl_status gl_store_read_one(struct gl_store *s, sqlite3_stmt *st, int64_t *v,
                                 const char *what, struct gl_error *err);

/* Deletes a cluster's hours [from, to) of a table: sql deletes with
 * ?1 = cluster, ?2 = from and ?3 = to bound. */
enum gl_status gl_store_clear_range(struct gl_store *s, const char *sql, const char *cluster,
                                    int64_t from, int64_t to, const char *what,
                                    struct gl_error *err);

/* Steps st, a write of one row of a loop, and resets it for the next
 * row; err says what was being written when it is not done. */
enum gl_status gl_store_put_row(struct gl_store *s, sqlite3_stmt *st, const char *what,
                                struct gl_error *err);

/* Ends the write transaction of gl_store_begin: committed when rc is
 * GL_OK, else (or when the commit fails) rolled back; returns the first
 * failure. */
enum gl_status gl_store_finish(struct gl_store *s, enum gl_status rc, struct gl_error *err);

#endif
