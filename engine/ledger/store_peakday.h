/*
 * store_peakday — the advice's daily groups (schema/014_pod_peak_day.sql):
 * a day of pod_peak summed once into the groups and node-hours the advice
 * reads (query_peak.c), so each run reads a month of days, not a month of
 * hourly rows. Built by collect after its window is stored.
 */
#ifndef GL_STORE_PEAKDAY_H
#define GL_STORE_PEAKDAY_H

#include <stdint.h>

#include "error.h"
#include "store.h"

/* How far back a collection looks for days to build: the month read by
 * the advice and, at a month's start, the month before. */
#define GL_PEAK_DAYS_BACK 40

/* Builds cluster's days that have pod_peak rows and no built groups, from
 * the GL_PEAK_DAYS_BACK days before the UTC day of before up to that day
 * (a day's hours all before before: the hours a collection re-pulls are
 * never built, so they never unbuild a day), each in its own transaction.
 * *built: how many were (NULL: not wanted). A failure stops at the day
 * that failed (rolled back, left unbuilt); err names the day. */
enum gl_status gl_store_build_peak_days(struct gl_store *s, const char *cluster, int64_t before,
                                        int64_t *built, struct gl_error *err);

#endif
