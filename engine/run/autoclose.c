/* autoclose — run closes the due, complete months (see autoclose.h). */
#include "autoclose.h"

#include <stdlib.h>
#include <string.h>

#include "close.h"
#include "query.h"
#include "timeutil.h"
#include "util.h"

void gl_autoclose_free(struct gl_autoclose *a)
{
    free(a->closed);
    free(a->blocked);
    memset(a, 0, sizeof *a);
}

static void add_blocked(struct gl_autoclose *a, const char *period, const char *cluster)
{
    for (size_t i = 0; i < a->nblocked; i++)
        if (strcmp(a->blocked[i].period, period) == 0 && a->blocked[i].cluster == cluster)
            return;
    a->blocked = gl_xrealloc(a->blocked, (a->nblocked + 1) * sizeof *a->blocked);
    struct gl_close_blocked *b = &a->blocked[a->nblocked++];
    memcpy(b->period, period, sizeof b->period);
    b->cluster = cluster;
}

/* The clusters that keep p open (from gl_period_check's gaps, as the config
 * names them); none found (the close failed for another reason): NULL, so
 * that every cluster reports the period. */
static enum gl_status note_blocked(const struct gl_config *c, struct gl_store *s,
                                   const struct gl_period *p, int64_t now,
                                   struct gl_autoclose *out, struct gl_error *err)
{
    struct gl_close_check k;
    enum gl_status rc = gl_period_check(c, s, p, now, &k, err);
    if (rc)
        return rc;
    size_t named = 0;
    for (size_t i = 0; i < c->nclusters; i++)
        for (size_t g = 0; g < k.ngaps; g++)
            if (strcmp(k.gaps[g].cluster, c->clusters[i].name) == 0) {
                add_blocked(out, p->name, c->clusters[i].name);
                named++;
                break;
            }
    if (!named)
        add_blocked(out, p->name, NULL);
    gl_close_check_free(&k);
    return GL_OK;
}

enum gl_status gl_autoclose(const struct gl_config *c, struct gl_store *s,
                            const struct gl_price_table *prices, int64_t now,
                            struct gl_autoclose *out, struct gl_error *err)
{
    memset(out, 0, sizeof *out);
    if (!c->close_auto)
        return GL_OK;
    struct gl_data_span span;
    enum gl_status rc = gl_query_data_span(s, &span, err);
    if (rc || !span.any_hour)
        return rc;
    /* due: the hour run collects up to is the settle delay past the end */
    int64_t target = gl_floor_to(now - c->run_delay_s, 3600);
    struct gl_period p;
    gl_period_of(span.first_hour, &p);
    while (!rc && p.end + c->close_settle_s <= target) {
        bool closed;
        if ((rc = gl_period_is_closed(s, p.name, &closed, err)))
            break;
        struct gl_error cerr = {0};
        if (!closed && !gl_period_close(c, s, prices, &p, now, &cerr)) {
            gl_log(GL_LOG_INFO, "closed period=%s (close.auto: complete, and the collection "
                                "reaches close.settle_hours %lld past its end)",
                   p.name, (long long)(c->close_settle_s / 3600));
            out->closed = gl_xrealloc(out->closed, (out->nclosed + 1) * sizeof *out->closed);
            memcpy(out->closed[out->nclosed++], p.name, sizeof *out->closed);
        } else if (!closed) {
            /* reported on every run until closed; run's exit status stays */
            gl_log(GL_LOG_ERROR, "period due for closing was not closed period=%s error=\"%s\"",
                   p.name, cerr.msg);
            rc = note_blocked(c, s, &p, now, out, err);
        }
        struct gl_period next;
        gl_period_of(p.end, &next);
        p = next;
    }
    if (rc)
        gl_autoclose_free(out);
    return rc;
}

void gl_close_note_refused(const struct gl_config *c, struct gl_store *s, const char *cluster,
                           int64_t from, int64_t to, int64_t hours_stored,
                           const struct gl_error *why, int64_t now)
{
    if (why->code != GL_ERR_PARTIAL && why->code != GL_ERR_PROM)
        return;
    int64_t start = gl_floor_to(from, 3600) + hours_stored * 3600;
    int64_t end = gl_floor_to(to + 3599, 3600);
    if (end > start + (int64_t)c->chunk_hours * 3600)
        end = start + (int64_t)c->chunk_hours * 3600;
    struct gl_error err = {0};
    if (start < end && gl_store_note_refused(s, cluster, start, end,
                                             why->code == GL_ERR_PARTIAL ? "shrink" : "backend",
                                             now, &err))
        gl_log(GL_LOG_WARN, "the refused hours were not recorded cluster=%s: %s", cluster,
               err.msg);
}
