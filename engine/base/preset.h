/*
 * preset — dcgm-exporter schema generations (exporter.preset) and memory
 * source presets (memory_source.preset): configuration data only (the
 * `check` probe that compares them with what a backend serves is
 * collect/probe).
 *
 * A preset names, for one exporter generation, the unit of the FB memory
 * queries and the labels that name a device and its node; config.c applies
 * it under every explicit key (README "Exporter schema").
 */
#ifndef GL_PRESET_H
#define GL_PRESET_H

/* How a memory source's values are read: the unit of its numbers, and
 * whether a series is one process's memory or the whole device's. Defined
 * here, below config, which includes this file for them. */
enum gl_attribution { GL_ATTR_PROCESS, GL_ATTR_DEVICE };
enum gl_mem_unit { GL_UNIT_MIB, GL_UNIT_BYTES };

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

/* The first preset (in the order of gl_preset_names) whose FB fields are
 * in fb_unit and whose hostname label is hostname_label, or NULL. */
const struct gl_preset *gl_preset_fit(enum gl_mem_unit fb_unit, const char *hostname_label);

#endif
