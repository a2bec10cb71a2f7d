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

/* Prepares sql with ?1 = start and ?2 = end bound (a period's hours); on
 * failure *st is NULL and err says what was being read. Finalize *st. */
enum gl_status gl_store_query_period(struct gl_store *s, const char *sql, int64_t start,
                                     int64_t end, sqlite3_stmt **st, const char *what,
                                     struct gl_error *err);

/* Prepares sql; on failure *st is NULL and err (when not NULL) says what
 * was being read. Finalize *st. Only the store layer (store.c, query.c). */
enum gl_status gl_store_prepare(struct gl_store *s, const char *sql, sqlite3_stmt **st,
                                const char *what, struct gl_error *err);

#endif
