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

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "error.h"
#include "parse.h"
#include "util.h"

struct gl_prom;

/* A client of one Prometheus API (static credentials are read now, so a
 * rotated token is picked up by every run; temporary ones are fetched by the
 * first request, gl_auth_new). On success *out is owned by the caller
 * (gl_prom_free). */
enum gl_status gl_prom_new(const struct gl_prom_cfg *c, struct gl_prom **out,
                           struct gl_error *err);
void gl_prom_free(struct gl_prom *p);

/* One query of a batch: its response is parsed as it downloads
 * (gl_matrix_parser), so no body is held whole. */
struct gl_range_query {
    const char *query;                /* in */
    const char *what;                 /* in: names the query in parse messages */
    const struct gl_parse_opts *opts; /* in: borrowed until the batch returns */
    struct gl_matrix m;               /* out: the matrix, when rc is GL_OK */
    enum gl_status rc;                /* out: the parse's outcome */
    struct gl_error err;              /* out: why the parse failed */
    int64_t bytes;                    /* out: the response's bytes, decompressed */
    bool over_budget;                 /* out: this parse ran out of opts' memory budget
                                       * (GL_ERR_TOO_LARGE); the batch's other queries,
                                       * stopped with it, are not */
};

/* The same window for n queries, up to prometheus.max_in_flight requests
 * at once (curl multi); a request that fails is retried on its own with the
 * usual backoff (with a fresh parse). Each 2xx body is parsed into qs[i].m
 * on the grid start + k*step, k <= (end - start) / step, while it arrives;
 * other bodies are kept (their first MiB) for the error message. A request
 * failure (HTTP, transport) fails the batch; GL_ERR_TOO_LARGE wins over
 * every other and ends the batch at once, dropping the other transfers.
 * When the batch succeeds, each query has its own parse outcome (rc, err;
 * free m with gl_matrix_free); when it fails, nothing is left to free. */
enum gl_status gl_prom_query_range_batch(struct gl_prom *p, size_t n,
                                         struct gl_range_query *qs, int64_t start, int64_t end,
                                         int64_t step, struct gl_error *err);

/* GET path (e.g. "/api/v1/status/buildinfo") with the usual retries. */
enum gl_status gl_prom_get(struct gl_prom *p, const char *path, struct gl_buf *body,
                           struct gl_error *err);

/* Instant query at time t, its answer read strictly into v
 * (gl_vector_parse, with prometheus.accept_warnings; free v with
 * gl_vector_free). A failed request and a bad answer both fail with
 * GL_ERR_PROM, naming the URL, /api/v1/query and the query. */
enum gl_status gl_prom_vector(struct gl_prom *p, const char *query, int64_t t,
                              struct gl_vector *v, struct gl_error *err);

/* Base delay of the retry backoff in milliseconds (tests shorten it). */
extern long gl_prom_backoff_ms;

#endif
