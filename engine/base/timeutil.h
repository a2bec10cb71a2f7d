/* timeutil — RFC 3339 UTC instants, UTC months (billing periods) and days. */
#ifndef GL_TIMEUTIL_H
#define GL_TIMEUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parses "YYYY-MM-DDTHH:MM:SSZ" (or "+00:00"); false when malformed. */
bool gl_time_parse(const char *s, int64_t *out);
/* Writes "YYYY-MM-DDTHH:MM:SSZ" into buf (at least 21 bytes). */
void gl_time_format(int64_t t, char *buf, size_t n);
/* Writes "YYYY-MM-DD". */
void gl_date_format(int64_t t, char *buf, size_t n);

/* A UTC calendar month. */
struct gl_period {
    int year, month;
    int64_t start, end; /* [start, end) */
    char name[8];       /* "YYYY-MM" */
};
bool gl_period_parse(const char *s, struct gl_period *p);
void gl_period_of(int64_t t, struct gl_period *p);

int64_t gl_floor_to(int64_t t, int64_t unit);

#endif
