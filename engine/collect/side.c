/* side — the side collectors' table (see side.h). */
#include "side.h"

/* In the order `check` prints their lines. */
static const struct gl_side_collector *const side_collectors[] = {
    &gl_side_owner,
    &gl_side_work,
};
#define NSIDE (sizeof side_collectors / sizeof *side_collectors)

enum gl_status gl_side_collect(enum gl_side_when when, const struct gl_config *c,
                               const struct gl_cluster *cluster, struct gl_store *s,
                               int64_t from, int64_t to, struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    for (size_t i = 0; i < NSIDE && !rc; i++)
        if (side_collectors[i]->when == when)
            rc = side_collectors[i]->collect(c, cluster, s, from, to, err);
    return rc;
}

enum gl_status gl_side_check(const struct gl_config *c, const struct gl_cluster *cluster,
                             struct gl_prom *prom, int64_t at, struct gl_buf *notes,
                             struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    for (size_t i = 0; i < NSIDE && !rc; i++)
        rc = side_collectors[i]->check(c, cluster, prom, at, notes, err);
    return rc;
}
