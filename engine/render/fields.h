/*
 * fields — a row's text fields written the two ways the renderers write a
 * row: as string members of a JSON object, and as the cells that open a
 * Markdown table row (each escaped by gl_md_cell, the format's one
 * escaper).
 */
#ifndef GL_FIELDS_H
#define GL_FIELDS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>

/* Adds each {key, value} of kv[0..n) to o as a string member, in order. */
void gl_json_strings(cJSON *o, const char *const (*kv)[2], size_t n);
#define GL_JSON_STRINGS(o, ...)                                                                \
    gl_json_strings((o), (const char *const[][2]){__VA_ARGS__},                                \
                    sizeof((const char *const[][2]){__VA_ARGS__}) / sizeof(const char *[2]))

/* Opens a Markdown table row: "| " and parts[0..n), each escaped; before
 * part i, seps[i - 1] says how it follows the one before: '|' in a cell
 * of its own (" | "), '/' in the same cell ("a/b"). */
void gl_md_parts(FILE *out, const char *seps, const char *const *parts, size_t n);
#define GL_MD_PARTS(out, seps, ...)                                                            \
    gl_md_parts((out), (seps), (const char *const[]){__VA_ARGS__},                             \
                sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

#endif
