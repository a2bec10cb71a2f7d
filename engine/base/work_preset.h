/*
 * work_preset — the built-in sets of work counters (work.presets):
 * configuration data only. Each names a server's published Prometheus
 * counters (docs/configuration.md "Work counters" says where each name
 * comes from) and the unit of work it counts.
 */
#ifndef GL_WORK_PRESET_H
#define GL_WORK_PRESET_H

#include <stddef.h>

/* One counter of a preset (the preset's name), and what a work.counters
 * entry would say. */
struct gl_work_preset_counter {
    const char *preset, *name, *unit, *metric;
};

/* The counters of preset name (*n of them), or NULL when there is no such
 * preset. */
const struct gl_work_preset_counter *gl_work_preset(const char *name, size_t *n);

/* The preset names, comma-separated, for messages. */
const char *gl_work_preset_names(void);

#endif
