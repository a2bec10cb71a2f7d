/*
 * frozen_check — a month closed before its figures carried a digest is
 * trusted once its stored texts are what today's renderers print from its
 * figures (then the statement seals it). Rendering is this layer's, so the
 * statement (bill/) is handed this check by its callers.
 */
#ifndef GL_FROZEN_CHECK_H
#define GL_FROZEN_CHECK_H

#include <stddef.h>

#include "error.h"
#include "statement.h"

/* A closed period's statement loaded from its frozen figures (st->set;
 * schema 007) against the texts stored at close (the audit copy), for a
 * period closed before the digests (schema 011) existed: every
 * stored invoice JSON and Markdown, and the FOCUS CSV, must be what the
 * renderers print from the figures, byte for byte. An empty or missing text
 * is not compared (nothing to compare with). A difference is GL_ERR_STATE
 * (exit 7) naming the period, the format and the team: the database was
 * altered after the close, and neither version is printed (docs/specification.md "Integrity": fail
 * loudly rather than print a figure that may be wrong). */
enum gl_status gl_frozen_verify(const struct gl_statement *st,
                                const struct gl_frozen_invoice *texts, size_t ntexts,
                                const char *focus_csv, struct gl_error *err);

#endif
