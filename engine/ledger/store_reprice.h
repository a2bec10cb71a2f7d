/*
 * store_reprice — the ledger's side of repricing checks (schema/006 and
 * 008): accepted prices of closed months and the last check of each, for
 * bill/reprice.c.
 */
#ifndef GL_STORE_REPRICE_H
#define GL_STORE_REPRICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "store.h"
#include "timeutil.h"
#include "util.h"

#define GL_CLOSED_FP 17 /* 16 hex digits + NUL */

/* The closed periods (YYYY-MM), ordered; free *out. */
enum gl_status gl_store_closed_periods(struct gl_store *s, char (**out)[8], size_t *n,
                                       struct gl_error *err);

typedef enum gl_status (*gl_reprice_row_fn)(void *ctx, const char *model, int64_t day,
                                            const char *price_key, const char *unit_price,
                                            struct gl_error *err);
/* The accepted prices of period's model-days (strings borrowed during fn). */
enum gl_status gl_store_reprice_accepted(struct gl_store *s, const char *period,
                                         gl_reprice_row_fn fn, void *ctx, struct gl_error *err);
/* Replaces the accepted prices of (period, model, day) by the n entries. */
enum gl_status gl_store_reprice_accept(struct gl_store *s, const char *period, const char *model,
                                       int64_t day, size_t n, const char *const *keys,
                                       const char *const *units, int64_t now,
                                       struct gl_error *err);

/* Appends to b what closed period p's figures depend on in the store
 * (the store's part of gl_closed_fingerprint), as text. */
enum gl_status gl_store_closed_inputs(struct gl_store *s, const struct gl_period *p,
                                      struct gl_buf *b, struct gl_error *err);
/* p's last check (schema/008): its fingerprint and whether correction lines
 * were to be carried; *found false when it was never checked. */
enum gl_status gl_store_closed_check_get(struct gl_store *s, const char *period,
                                         char fp[GL_CLOSED_FP], bool *corrections, bool *found,
                                         struct gl_error *err);
/* Records p's check (replacing the last one). */
enum gl_status gl_store_closed_check_put(struct gl_store *s, const char *period,
                                         const char *fp, bool corrections, int64_t now,
                                         struct gl_error *err);

#endif
