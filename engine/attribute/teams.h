/*
 * teams — mapping a pod to a team at one step (docs/specification.md "Teams").
 *
 * Rules are tried in config order, first match wins: a pod label
 * (kube_pod_labels), a namespace label (kube_namespace_labels), a PCRE2
 * regex on the namespace with capture substitution, then the default team.
 */
#ifndef GL_TEAMS_H
#define GL_TEAMS_H

#include <stddef.h>

#include "config.h"
#include "parse.h"
#include "util.h"

/* Sets out to the whole team id of a pod in namespace ns, given the
 * kube_pod_labels and kube_namespace_labels series valid at the step (either
 * may be NULL). Returns out->data, or NULL when memory ran out. */
const char *gl_team_resolve(const struct gl_config *c, const struct gl_series *pod_labels,
                            const struct gl_series *ns_labels, const char *ns,
                            struct gl_buf *out);

#endif
