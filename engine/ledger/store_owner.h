/*
 * store_owner — the ledger's side of pod owners (schema/005_pod_owner.sql):
 * what collect/owner.c stores. The reads are query.h's.
 */
#ifndef GL_STORE_OWNER_H
#define GL_STORE_OWNER_H

#include <stdint.h>

#include "error.h"
#include "store.h"

/* Inserts or replaces the owner of (cluster, namespace, pod). */
enum gl_status gl_store_put_pod_owner(struct gl_store *s, const char *cluster, const char *ns,
                                      const char *pod, const char *kind, const char *name,
                                      int64_t seen_at, struct gl_error *err);

#endif
