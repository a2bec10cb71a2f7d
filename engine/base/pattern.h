/*
 * pattern — compiling a regular expression the configuration or the price
 * table gives (PCRE2, UTF): one place for the options and for what PCRE2
 * says when it refuses one.
 */
#ifndef GL_PATTERN_H
#define GL_PATTERN_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>
#include <stddef.h>

/* pattern compiled (free with pcre2_code_free), or NULL when PCRE2 refuses
 * it: why (n bytes) then holds PCRE2's reason and *offset where in pattern
 * it stopped; the caller's message names the setting. */
pcre2_code *gl_pattern_compile(const char *pattern, char *why, size_t n, size_t *offset);

#endif
