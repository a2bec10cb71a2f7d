/*
 * advise (render) — the right-sizing and consolidation advice of a period
 * (engine/bill/advice.h) as JSON and Markdown. Pure functions of the advice.
 */
#ifndef GL_RENDER_ADVISE_H
#define GL_RENDER_ADVISE_H

#include <stdio.h>

#include "advice.h"

void gl_advise_json(const struct gl_advice *a, FILE *out);
/* team: only that team's lines and no consolidation (a team page); NULL: all. */
void gl_advise_md(const struct gl_advice *a, const char *team, FILE *out);

/* The words every output uses for a line's allocation and recommendation,
 * and for what the saving means under the billing basis. */
void gl_advise_alloc_text(const struct gl_advice_line *l, char *buf, size_t n);
void gl_advise_to_text(const struct gl_advice_line *l, char *buf, size_t n);
const char *gl_advise_saving_meaning(const struct gl_advice *a);
#define GL_ADVISE_P99_NOTE "1 GiB buckets: an upper bound"
#define GL_ADVISE_BOUND_NOTE                                                                  \
    "bin-packing lower bound: ceil(sum of the pods' hourly peaks x (100 + headroom) / 100 / "  \
    "capacity); a packing may need more devices; GPU-hours from the per-hour peaks"

#endif
