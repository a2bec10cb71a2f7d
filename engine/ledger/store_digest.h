/*
 * store_digest — a closed period's frozen rows checked by their digest
 * (schema 011).
 *
 * At close (in its transaction, after every frozen row is written) a
 * SHA-256 per table is stored over a canonical encoding of the period's
 * rows: closed_at, the FOCUS key figures (frozen_row), the figures and
 * config of schema 007, the settings of schema 011 and what a forced close
 * lacked (closed_gap). Loading a closed month recomputes them: a table
 * whose rows changed is refused naming the period and the table, whatever
 * the renderers print today. The texts stored at close are not digested:
 * they are the audit copy, not what is printed.
 */
#ifndef GL_STORE_DIGEST_H
#define GL_STORE_DIGEST_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "store.h"

/* Computes and stores period's digests (replacing any; inside a write
 * transaction). sealed_at: when (the close, or the first check). */
enum gl_status gl_frozen_digest_store(struct gl_store *s, const char *period, int64_t sealed_at,
                                      struct gl_error *err);

/* Checks period's rows against its stored digests. *have false (GL_OK):
 * the period has no digest (closed before schema 011). A table whose rows
 * differ, or whose digest is missing while others are there, is
 * GL_ERR_STATE (exit 7) naming the period and the table. */
enum gl_status gl_frozen_digest_check(struct gl_store *s, const char *period, bool *have,
                                      struct gl_error *err);

#endif
