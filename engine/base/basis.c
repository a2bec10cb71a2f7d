/* basis — the billing bases' table (see basis.h). */
#include "basis.h"

#include <string.h>

const struct gl_basis gl_bases[] = {
    {
        .name = "used",
        .bills_reserved_unused = false,
        .saving_means = "billing basis used: the team pays its used memory only, so its bill "
                        "does not change; the amount is the allocation freed for others at the "
                        "period's prices",
        .srv_refusal = NULL,
    },
    {
        .name = "max",
        .bills_reserved_unused = true,
        .saving_means = "billing basis max: the team pays max(allocation, used), so its bill "
                        "would have been lower by this amount at the period's prices",
        /* the hourly sums are of used memory: the per-step max is not */
        .srv_refusal = "billing basis max",
    },
};
const size_t gl_nbases = sizeof gl_bases / sizeof *gl_bases;

const struct gl_basis *gl_basis_find(const char *name)
{
    for (size_t i = 0; name && i < gl_nbases; i++)
        if (strcmp(gl_bases[i].name, name) == 0)
            return &gl_bases[i];
    return NULL;
}
