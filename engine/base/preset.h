/*
 * preset — dcgm-exporter schema generations (exporter.preset) and the
 * `check` test that a memory query's values fit its declared unit.
 *
 * A preset names, for one exporter generation, the unit of the FB memory
 * queries and the labels that name a device and its node; config.c applies
 * it under every explicit key (README "Exporter schema").
 */
#ifndef GL_PRESET_H
#define GL_PRESET_H

#include <stdio.h>

#include "config.h"
#include "error.h"
#include "fetch.h"
#include "util.h"

struct gl_preset {
    const char *name;
    const char *versions;     /* the dcgm-exporter releases it describes */
    enum gl_mem_unit fb_unit; /* DCGM_FI_DEV_FB_USED / FREE / RESERVED */
    const char *uuid_label, *gpu_i_id_label, *hostname_label;
};

/* The preset called name, or NULL. */
const struct gl_preset *gl_preset_find(const char *name);

/* The preset names, comma-separated, for messages. */
const char *gl_preset_names(void);

/* A memory source preset (memory_source.preset): the query of a per-pod
 * memory source, its unit, attribution, UUID label, the per-container
 * limit query and the exporter's device query read beside it. Explicit
 * memory_source keys win. */
struct gl_memory_preset {
    const char *name;
    const char *query;
    enum gl_mem_unit unit;
    enum gl_attribution attribution;
    const char *uuid_label, *limit_query, *device_query;
};

/* The memory source preset called name, or NULL; the names for messages. */
const struct gl_memory_preset *gl_memory_preset_find(const char *name);
const char *gl_memory_preset_names(void);

/* `check`: reads the memory queries (memory source, fb_free, fb_reserved)
 * of cluster at instant at and compares each device's USED + FREE +
 * RESERVED, read in the declared units, with a GPU's possible capacity (the
 * configured model capacity when there is one, else 256 MiB to 1 TiB), and
 * the hostname label with the labels the series carry. Appends one line per
 * finding to notes. A unit read wrongly (values that can only be bytes read
 * as MiB, or the reverse) or a hostname label no series carries fails with
 * GL_ERR_CONFIG naming the queries, the device and the preset or key to use. */
enum gl_status gl_schema_check(const struct gl_config *c, const struct gl_cluster *cl,
                               struct gl_prom *prom, int64_t at, struct gl_buf *notes,
                               struct gl_error *err);

#endif
