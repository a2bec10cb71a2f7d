/* mig — the MIG resource name of a request, read once for attribution and
 * server mode. */
#include "mig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool gl_mig_resource(const char *res, int64_t *g, int64_t *gb, struct gl_buf *profile)
{
    static const char prefix[] = "nvidia_com_mig_";
    if (strncmp(res, prefix, sizeof prefix - 1) != 0)
        return false;
    const char *p = res + sizeof prefix - 1;
    char *end;
    long a = strtol(p, &end, 10);
    if (end == p || strncmp(end, "g_", 2) != 0)
        return false;
    p = end + 2;
    long b = strtol(p, &end, 10);
    if (end == p || strncmp(end, "gb", 2) != 0)
        return false;
    *g = a;
    *gb = b;
    gl_buf_reset(profile);
    if (!gl_buf_printf(profile, "%ldg.%ldgb%s", a, b, end[2] == '_' ? end + 2 : "")) {
        fputs("gpuledger: out of memory\n", stderr);
        abort();
    }
    for (char *q = profile->data; *q; q++)
        if (*q == '_')
            *q = '+'; /* "1g.5gb_me" is the "1g.5gb+me" profile */
    return true;
}
