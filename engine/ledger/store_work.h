/*
 * store_work — the ledger's side of units of work (schema/012_work_units.sql):
 * what collect/work.c stores. The reads are query.h's.
 */
#ifndef GL_STORE_WORK_H
#define GL_STORE_WORK_H

#include <stdint.h>

#include "error.h"
#include "store.h"

/* One pod's units of one counter in one hour. */
struct gl_work_row {
    int64_t hour;
    const char *ns, *pod, *counter, *unit;
    int64_t units, gaps;
};

/* Replaces cluster's rows of the hours [from, to) with rows[0..n) in one
 * transaction: a re-collected hour ends with exactly its new rows. */
enum gl_status gl_store_put_work(struct gl_store *s, const char *cluster, int64_t from,
                                 int64_t to, const struct gl_work_row *rows, size_t n,
                                 struct gl_error *err);

#endif
