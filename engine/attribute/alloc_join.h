/*
 * alloc_join — the allocation of Running (and Pending) pods, joined in the
 * engine from the requests and the pods' phase, as integrate reads it.
 */
#ifndef GL_ALLOC_JOIN_H
#define GL_ALLOC_JOIN_H

#include "config.h"
#include "error.h"
#include "parse.h"

/* The allocation of Running pods joined in the engine from two plain
 * selectors (queries/alloc_requests.promql, queries/pod_phase.promql), per
 * step exactly as the backend evaluated the joined query before:
 *   sum by (CL, namespace, pod, node, resource) (requests)
 *   * on (CL, namespace, pod) group_left ()
 *   max by (CL, namespace, pod) (phase == 1)
 * (CL = cluster.label; an absent label equals an empty one). A group's value
 * at t is the sum of its series' samples at t, kept where the pod has a phase
 * sample equal to 1 at t (phase="Running", or no phase label); where its
 * phase="Pending" sample is 1 instead, the sum goes to a second series of
 * the group labelled phase="Pending" (demand waiting: integrate stores it as
 * GL_KIND_PENDING_GPU, never as allocation). The allocation bound then
 * applies to the sum, as the parser applied it to the joined series:
 * NaN/Inf, negative or over max is skipped and counted in out (skipped,
 * bad). The requests are parsed
 * with any finite value kept (their sum is what is checked). out's series
 * carry the non-empty grouping labels, sorted like a backend's matrix; free
 * it with gl_matrix_free. */
enum gl_status gl_allocation_join(const struct gl_config *c, const struct gl_matrix *requests,
                                  const struct gl_matrix *phase, double max,
                                  struct gl_matrix *out, struct gl_error *err);

#endif
