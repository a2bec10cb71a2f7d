/*
 * mig — reading a MIG resource name of a Kubernetes request
 * ("nvidia_com_mig_1g_10gb"), the one reading that attribution and server
 * mode share: both must count a request under the same instance profile, or
 * server mode would refuse hours that integration bills.
 */
#ifndef GL_MIG_H
#define GL_MIG_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

/* "nvidia_com_mig_1g_10gb" → g = 1, gb = 10, profile "1g.10gb" (whole, in
 * profile; '_' after it becomes '+': "1g.5gb_me" is the "1g.5gb+me"
 * profile); false if res is not a MIG resource. */
bool gl_mig_resource(const char *res, int64_t *g, int64_t *gb, struct gl_buf *profile);

#endif
