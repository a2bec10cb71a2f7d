/*
 * probe — `check`'s test that the exporter schema in the config fits what
 * the backend serves: the memory queries' units and the hostname label,
 * compared with the presets (base/preset).
 */
#ifndef GL_PROBE_H
#define GL_PROBE_H

#include <stdint.h>

#include "config.h"
#include "error.h"
#include "fetch.h"
#include "util.h"

/* Reads the memory queries (memory source, fb_free, fb_reserved) of
 * cluster at instant at and compares each device's USED + FREE +
 * RESERVED, read in the declared units, with a GPU's possible capacity (the
 * configured model capacity when there is one, else 256 MiB to 1 TiB), and
 * the hostname label with the labels the series carry. Appends one line per
 * finding to notes. A unit read wrongly (values that can only be bytes read
 * as MiB, or the reverse) or a hostname label no series carries fails with
 * GL_ERR_CONFIG naming the queries, the device and the preset or key to use;
 * an answer that is not a well-formed instant vector fails with
 * GL_ERR_PROM (gl_prom_vector). */
enum gl_status gl_schema_check(const struct gl_config *c, const struct gl_cluster *cl,
                               struct gl_prom *prom, int64_t at, struct gl_buf *notes,
                               struct gl_error *err);

#endif
