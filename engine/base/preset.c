/*
 * preset — dcgm-exporter schema generations and memory source presets.
 */
#include "preset.h"

#include <string.h>

/* Checked against dcgm-exporter's label template (internal/pkg/
 * rendermetrics/render_metrics.go: UUID, GPU_I_PROFILE, GPU_I_ID,
 * Hostname) and the published captures of fixtures/real; NVIDIA/
 * dcgm-exporter#655 renamed Hostname to hostname after 4.8.2 (README
 * "Exporter schema"). DCGM reports FB fields in MiB in every release; the
 * bytes preset is for exporters reported to convert them. */
static const struct gl_preset presets[] = {
    {"dcgm-exporter-3.x", "3.1.x to 3.3.9-3.6.1", GL_UNIT_MIB, "UUID", "GPU_I_ID", "Hostname"},
    {"dcgm-exporter-4.x", "4.0.0-4.0.0 to 4.5.3-4.8.2", GL_UNIT_MIB, "UUID", "GPU_I_ID",
     "Hostname"},
    {"dcgm-exporter-4.8.3", "4.6.0-4.8.3 and later", GL_UNIT_MIB, "UUID", "GPU_I_ID",
     "hostname"},
    {"dcgm-exporter-bytes", "exporters reporting FB fields in bytes, hostname label", GL_UNIT_BYTES,
     "UUID", "GPU_I_ID", "hostname"},
};
#define NPRESETS (sizeof presets / sizeof *presets)

const struct gl_preset *gl_preset_find(const char *name)
{
    for (size_t i = 0; i < NPRESETS; i++)
        if (strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

const char *gl_preset_names(void)
{
    return "dcgm-exporter-3.x, dcgm-exporter-4.x, dcgm-exporter-4.8.3, dcgm-exporter-bytes";
}

/* HAMi's vGPU monitor: each container's memory and limit in bytes on the
 * device named by device_uuid; dcgm-exporter's FB_USED (with FREE and
 * RESERVED) gives the device totals, so memory that no HAMi container
 * holds stays the device's overhead (README "DRA and HAMi allocation"). */
static const struct gl_memory_preset memory_presets[] = {
    {"hami", "hami_memory", GL_UNIT_BYTES, GL_ATTR_PROCESS, "device_uuid", "hami_limit",
     "fb_used"},
};

const struct gl_memory_preset *gl_memory_preset_find(const char *name)
{
    for (size_t i = 0; i < sizeof memory_presets / sizeof *memory_presets; i++)
        if (strcmp(memory_presets[i].name, name) == 0)
            return &memory_presets[i];
    return NULL;
}

const char *gl_memory_preset_names(void)
{
    return "hami";
}

const struct gl_preset *gl_preset_fit(enum gl_mem_unit fb_unit, const char *hostname_label)
{
    for (size_t i = 0; i < NPRESETS; i++)
        if (presets[i].fb_unit == fb_unit && strcmp(presets[i].hostname_label, hostname_label) == 0)
            return &presets[i];
    return NULL;
}
