/*
 * basis — the billing bases (billing.basis): what a pod pays for beside its
 * used memory, one row each, read by every layer that depends on the
 * basis: config (its name), the attribution (its per-step rule, a field
 * of the row), the frozen settings of a closed period (its name), server
 * mode (whether it can sum it) and the pages and advice (its name and
 * what the team pays). The invoice needs nothing of it: it bills the
 * stored kinds the rule wrote.
 *
 * Adding a basis: one row of gl_bases[] (basis.c). A per-step rule the
 * fields below cannot say is a field here, read by gl_integrate's
 * attribution (attribute/integrate.c, which says where), and a stored kind
 * it writes is a row of gl_kind_names (kinds.h) with its invoice line in
 * bill/invoice.c.
 */
#ifndef GL_BASIS_H
#define GL_BASIS_H

#include <stdbool.h>
#include <stddef.h>

struct gl_basis {
    /* billing.basis, the frozen setting of a closed period, and the name
     * the pages and the advice print */
    const char *name;
    /* The per-step rule: a pod also pays for its allocated memory beyond
     * its used memory (allocated − used when positive: stored as
     * GL_KIND_RESERVED_UNUSED_BILLED and taken out of its device's idle),
     * max(allocation, used) in all; without it the reserved-unused memory
     * is information only. */
    bool bills_reserved_unused;
    /* What an advice's saving means to the team under this basis. */
    const char *saving_means;
    /* Server mode cannot sum this basis: the reason it gives for
     * collecting raw; NULL when it can. */
    const char *srv_refusal;
};

/* The bases, the default first. */
extern const struct gl_basis gl_bases[];
extern const size_t gl_nbases;

/* The basis named name, or NULL. */
const struct gl_basis *gl_basis_find(const char *name);

#endif
