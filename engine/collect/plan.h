/*
 * plan — the unit a collection window starts with: how many hours a unit
 * holds and in how many host shards an hour is asked, so that each unit's
 * responses fit collection.max_samples_in_memory without being refused
 * first. Each refused ask costs the backend a whole evaluation and the
 * engine a parse up to the budget; collect (split_unit) learns the split
 * that way when nothing is planned.
 *
 * Reads: the stored hours' series per query (the shrink guard's counts,
 * ledger/store.h) when the window has any; otherwise (a first collect of
 * these hours) one instant `count(...)` per query of the chunk at the
 * window's last step (not after the present). A backend that does not
 * answer the count leaves the window unplanned (logged). Server mode's
 * units hold hourly figures, not steps: never planned.
 *
 * Only the split depends on the plan, never a figure: a plan too small
 * still splits further (collect's split_unit), one too large asks more,
 * smaller units.
 */
#ifndef GL_PLAN_H
#define GL_PLAN_H

#include <stdint.h>

#include "config.h"
#include "fetch.h"
#include "store.h"

/* What a window's plan reads. */
struct gl_plan_in {
    const struct gl_config *c;
    const struct gl_cluster *cluster;
    struct gl_store *s;       /* NULL: no stored hours to plan from */
    struct gl_prom *prom;     /* the client asking the counts */
    char *const *queries;     /* the chunk's queries in gl_qr_list order, selector applied */
    int nq;
    int64_t from, to;         /* the window, whole hours */
};

/* Sets *hours (in: collection.chunk_hours) and *nshards (in: 1) to the
 * window's planned unit; leaves them when nothing is planned or needed. */
void gl_plan_window(const struct gl_plan_in *in, int64_t *hours, int *nshards);

#endif
