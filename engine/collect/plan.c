/* plan — the unit a window starts with, from its stored or counted series. */
#include "plan.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "parse.h"
#include "queryreg.h"
#include "timeutil.h"
#include "util.h"

/* A series costs its step slots, its own bookkeeping (gl_series_slots) and
 * its labels, estimated at PLAN_LABEL_SLOTS (a dcgm-exporter series' dozen
 * labels are about 500 bytes); the plan fills PLAN_FILL_PCT of the budget,
 * the rest is room for uneven shards and hours with more series. */
#define PLAN_LABEL_SLOTS 64
#define PLAN_FILL_PCT 75
/* The stored hours read: the hour before the window and its first ones. */
#define PLAN_LOOKUP_HOURS 8
/* A counted query's series are taken up to this bound: the figure only
 * sizes the split, and the planner's products stay far from overflow. */
#define PLAN_MAX_SERIES 4294967296.0

/* The most series each query had in a stored hour among the hour before
 * the window and its first PLAN_LOOKUP_HOURS hours; false when none was
 * stored (a first collect of these hours). */
static bool stored_series(const struct gl_plan_in *in, int64_t series[GL_QR_MAX])
{
    struct gl_qslot list[GL_QR_MAX];
    gl_qr_list(in->c, list);
    bool found = false;
    memset(series, 0, GL_QR_MAX * sizeof *series);
    for (int64_t h = in->from - 3600; h < in->to && h < in->from + PLAN_LOOKUP_HOURS * 3600;
         h += 3600) {
        for (int q = 0; q < in->nq; q++) {
            const char *name = gl_qr_counts_name(in->c, list[q].row, list[q].k);
            struct gl_query_counts n;
            struct gl_error e;
            if (!name || /* counted as the memory source's */
                gl_store_query_counts(in->s, in->cluster->name, h, name, &n, &e) || !n.found)
                continue;
            found = true;
            /* bounded as a counted one is: a stored figure is only as sane
             * as the database (a hand-edited count must not overflow) */
            const int64_t m = n.series < (int64_t)PLAN_MAX_SERIES ? n.series
                                                                  : (int64_t)PLAN_MAX_SERIES;
            if (m > series[q])
                series[q] = m;
        }
    }
    return found;
}

/* Each query's series at instant t: one instant `count` of the query as
 * collect asks it (a count of nothing is no sample: 0 series). */
static enum gl_status counted_series(const struct gl_plan_in *in, int64_t t,
                                     int64_t series[GL_QR_MAX], struct gl_error *err)
{
    enum gl_status rc = GL_OK;
    struct gl_buf q;
    gl_buf_init(&q);
    memset(series, 0, GL_QR_MAX * sizeof *series);
    for (int k = 0; !rc && k < in->nq; k++) {
        gl_buf_reset(&q);
        gl_buf_printf(&q, "count((%s))", in->queries[k]);
        struct gl_vector v;
        if ((rc = gl_prom_vector(in->prom, q.data, t, &v, err)))
            break;
        double n = 0;
        for (size_t i = 0; i < v.n; i++)
            n += v.samples[i].value;
        gl_vector_free(&v);
        series[k] = n > 0 ? (int64_t)fmin(n, PLAN_MAX_SERIES) : 0;
    }
    gl_buf_free(&q);
    return rc;
}

/* The unit that `series` (per query, of an hour) need under the budget
 * into *hours and *nshards; false when the configured unit fits (or no
 * number of host shards can help: the kept queries alone are over, and
 * the first shard fails naming them, split_unit). *all and *sharded: the
 * series summed, and those of the sharded queries. */
static bool plan_unit(const struct gl_plan_in *in, const int64_t series[GL_QR_MAX],
                      int64_t *hours, int *nshards, int64_t *all, int64_t *sharded)
{
    const struct gl_config *c = in->c;
    struct gl_qslot list[GL_QR_MAX];
    gl_qr_list(c, list);
    /* a unit of h hours holds each series' h * per_hour steps and its
     * fixed cost (bookkeeping and labels) */
    const int64_t per_hour = 3600 / c->step;
    const int64_t fixed = (int64_t)gl_series_slots(0) + PLAN_LABEL_SLOTS;
    *all = *sharded = 0;
    for (int q = 0; q < in->nq; q++) {
        *all += series[q];
        if (list[q].row->shard == GL_QSH_HOST || list[q].row->shard == GL_QSH_NODE)
            *sharded += series[q];
    }
    const int64_t fill = c->max_samples_in_memory / 100 * PLAN_FILL_PCT;
    if (*all <= 0 || fill <= 0 || *all * (*hours * per_hour + fixed) <= fill)
        return false;
    int64_t h = (fill / *all - fixed) / per_hour, n = 1;
    if (h < 1) {
        if (*sharded <= 0)
            return false;
        h = 1;
        n = (*sharded * (per_hour + fixed) + fill - 1) / fill;
        n = n < 2 ? 2 : n > 4096 ? 4096 : n;
    }
    *hours = h;
    *nshards = (int)n;
    return true;
}

/* Plans from `series`, logging the plan and what it was read from. */
static void plan_log(const struct gl_plan_in *in, const int64_t series[GL_QR_MAX],
                     const char *from, const char *per, int64_t *hours, int *nshards)
{
    int64_t all, sharded;
    if (!plan_unit(in, series, hours, nshards, &all, &sharded))
        return;
    gl_log(GL_LOG_INFO,
           "planning the window from %s: %lld-hour units in %d host shard%s "
           "(%lld series %s, %lld of them sharded; collection.max_samples_in_memory %lld)",
           from, (long long)*hours, *nshards, *nshards > 1 ? "s" : "", (long long)all, per,
           (long long)sharded, (long long)in->c->max_samples_in_memory);
}

void gl_plan_window(const struct gl_plan_in *in, int64_t *hours, int *nshards)
{
    const struct gl_config *c = in->c;
    int64_t series[GL_QR_MAX];
    if (c->server_mode) {
        gl_log(GL_LOG_DEBUG, "server mode: the window's unit is not planned");
        return;
    }
    if (in->s && stored_series(in, series)) {
        plan_log(in, series, "its stored hours", "an hour", hours, nshards);
        return;
    }
    /* the window's last step, or the present's when the window ends later
     * (a future instant has no samples to count) */
    int64_t t = in->to - c->step;
    const int64_t now = gl_floor_to((int64_t)time(NULL), c->step);
    if (t > now)
        t = now;
    char at[32], from[64];
    gl_time_format(t, at, sizeof at);
    struct gl_error err = {0};
    if (counted_series(in, t, series, &err)) {
        gl_log(GL_LOG_WARN,
               "the window's series were not counted (%s): its unit is learned by "
               "splitting the asks that are too large",
               err.msg);
        return;
    }
    snprintf(from, sizeof from, "its series count at %s", at);
    plan_log(in, series, from, "at that instant", hours, nshards);
}
