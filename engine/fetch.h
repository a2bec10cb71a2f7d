/*
 * fetch — the Prometheus HTTP API client (libcurl).
 *
 * Reads: /api/v1/query_range and /api/v1/query of any Prometheus-compatible
 * backend. Handles extra headers (X-Scope-OrgID), CA file, timeouts and
 * retries with backoff on 5xx, 429 (Retry-After) and transport errors; the
 * credentials of each request come from auth (bearer token or basic auth
 * files, SigV4 for Amazon Managed Service for Prometheus, as a signed POST
 * form, Google and Azure access tokens), renewed before they expire. Error
 * messages name the method, URL path, the query and the HTTP status, and
 * for 401/403 the credential mode and what to fix; secrets never appear in
 * them.
 */
#ifndef GL_FETCH_H
#define GL_FETCH_H

#include <stdint.h>

#include "config.h"
#include "error.h"
#include "util.h"

struct gl_prom;

/* A client of one Prometheus API (static credentials are read now, so a
 * rotated token is picked up by every run; temporary ones are fetched by the
 * first request, gl_auth_new). On success *out is owned by the caller
 * (gl_prom_free). */
enum gl_status gl_prom_new(const struct gl_prom_cfg *c, struct gl_prom **out,
                           struct gl_error *err);
void gl_prom_free(struct gl_prom *p);

/* query_range over [start, end] inclusive at step; the JSON body is left in
 * body (reset first). Fails on HTTP errors and "status":"error" bodies. */
enum gl_status gl_prom_query_range(struct gl_prom *p, const char *query, int64_t start,
                                   int64_t end, int64_t step, struct gl_buf *body,
                                   struct gl_error *err);
/* The same window for n queries, up to prometheus.max_in_flight requests
 * at once (curl multi); a request that fails is retried on its own with the
 * usual backoff. bodies[i] receives query i's JSON. */
enum gl_status gl_prom_query_range_batch(struct gl_prom *p, size_t n, char *const *queries,
                                         int64_t start, int64_t end, int64_t step,
                                         struct gl_buf *bodies, struct gl_error *err);

/* Instant query at time t. */
enum gl_status gl_prom_query(struct gl_prom *p, const char *query, int64_t t,
                             struct gl_buf *body, struct gl_error *err);

/* Base delay of the retry backoff in milliseconds (tests shorten it). */
extern long gl_prom_backoff_ms;

#endif
