/*
 * outstate — what an output folder's period files were last written from
 * (schema/003_output_state.sql), so that `run` rewrites exactly the open
 * periods whose outputs no longer reflect the stored data (docs/specification.md "Integrity").
 *
 * Reads: data_version (a counter per period that every stored chunk bumps,
 * kept by SQL triggers on collected_hour), closed_period, device, the price
 * table and the config file. Writes: output_state, one row per (output
 * folder, period), only once that period's whole tree is in place.
 *
 * A period's fingerprint: its data version; the closed periods just before
 * it whose corrections it carries (with their data versions: late data of a
 * closed period lands here, and closing one changes this list); the device
 * rows as it sees them (model, node, capacity and whether the device's
 * first/last seen overlap the period: the summary lists and the GPU-Hours
 * capacity come from there, and a chunk of another period can change them);
 * the price table's entries; the gpuledger version and the config file's
 * bytes (idle policy, basis, catalogue, currency...: any edit rewrites).
 */
#ifndef GL_OUTSTATE_H
#define GL_OUTSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "price.h"
#include "store.h"
#include "timeutil.h"

#define GL_OUTSTATE_HASH 17 /* 16 hex digits + NUL */

/* The inputs a period's outputs depend on. closed is owned (gl_outstate_fp_clear). */
struct gl_outstate_fp {
    int64_t data_version;
    char *closed;
    char devices[GL_OUTSTATE_HASH];
    char prices[GL_OUTSTATE_HASH];
    char config[GL_OUTSTATE_HASH];
};

/* The run-wide parts (price table, config file) into fp->prices and
 * fp->config; read the config file once per run, before any output. */
enum gl_status gl_outstate_inputs(const struct gl_config *c, const struct gl_price_table *prices,
                                  struct gl_outstate_fp *fp, struct gl_error *err);

/* The period-specific parts of p into fp (its prices/config kept). On
 * failure fp->closed is NULL. */
enum gl_status gl_outstate_fingerprint(struct gl_store *s, const struct gl_period *p,
                                       struct gl_outstate_fp *fp, struct gl_error *err);
void gl_outstate_fp_clear(struct gl_outstate_fp *fp);

/* Whether the files of period in out_dir (absolute) are up to date for fp:
 * why receives "" when they are, else the reason to write them ("never
 * written to this folder", "data changed (version 4 -> 9)", "file missing:
 * invoices/x.json", ...). *nfiles: files recorded. */
enum gl_status gl_outstate_check(struct gl_store *s, const char *out_dir, const char *period,
                                 const struct gl_outstate_fp *fp, char *why, size_t n,
                                 size_t *nfiles, struct gl_error *err);

/* Records fp and the file list ("<path>\t<size>\n" lines, as
 * gl_output_tree_files gives) of period in out_dir, in one transaction. */
enum gl_status gl_outstate_record(struct gl_store *s, const char *out_dir, const char *period,
                                  const struct gl_outstate_fp *fp, const char *files,
                                  struct gl_error *err);

/* Periods with stored data or a closed state, ascending, without
 * duplicates: *names is an array of *n "YYYY-MM" strings (free()). */
enum gl_status gl_outstate_known_periods(struct gl_store *s, char (**names)[8], size_t *n,
                                         struct gl_error *err);

#endif
