/* period — a period's state and its invoices as shown: closed or open,
 * the correction lines an open period carries, the frozen texts of a
 * closed one (period.h). */
#include "period.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query.h"
#include "reprice.h"
#include "util.h"

enum gl_status gl_period_is_closed(struct gl_store *s, const char *period, bool *closed,
                                   struct gl_error *err)
{
    return gl_query_is_closed(s, period, closed, err);
}

enum gl_status gl_period_invoices(const struct gl_config *c, struct gl_store *s,
                                  const struct gl_price_table *prices, const struct gl_period *p,
                                  struct gl_invoice_set **out, bool *frozen,
                                  struct gl_error *err)
{
    *out = NULL;
    enum gl_status rc = gl_period_is_closed(s, p->name, frozen, err);
    if (rc || *frozen)
        return rc;
    if ((rc = gl_invoices_build(c, s, prices, p, out, err)))
        return rc;
    if ((rc = gl_corrections_add(c, s, prices, *out, err))) {
        gl_invoices_free(*out);
        *out = NULL;
    }
    return rc;
}

enum gl_status gl_period_held(struct gl_store *s, const struct gl_period *p,
                              struct gl_error *err)
{
    bool closed = false, any = false;
    enum gl_status rc = gl_period_is_closed(s, p->name, &closed, err);
    if (!rc && !closed)
        rc = gl_query_period_collected(s, p, &any, err);
    if (rc || closed || any)
        return rc;
    struct gl_data_span span;
    if ((rc = gl_query_data_span(s, &span, err)))
        return rc;
    char held[400] = "";
    if (span.any_hour) {
        struct gl_period a, b;
        gl_period_of(span.first_hour, &a);
        gl_period_of(span.last_hour, &b);
        char t1[32], t2[32];
        gl_time_format(span.first_hour, t1, sizeof t1);
        gl_time_format(span.last_hour + 3600, t2, sizeof t2);
        if (strcmp(a.name, b.name) == 0)
            snprintf(held, sizeof held, "the collected hours are in period %s (%s to %s)",
                     a.name, t1, t2);
        else
            snprintf(held, sizeof held, "the collected hours span periods %s to %s (%s to %s)",
                     a.name, b.name, t1, t2);
    } else {
        snprintf(held, sizeof held, "nothing has been collected yet (run 'gpuledger run' or "
                                    "'gpuledger collect' first)");
    }
    if (span.first_closed[0]) {
        size_t n = strlen(held);
        if (strcmp(span.first_closed, span.last_closed) == 0)
            snprintf(held + n, sizeof held - n, "; closed period: %s", span.first_closed);
        else
            snprintf(held + n, sizeof held - n, "; closed periods: %s to %s", span.first_closed,
                     span.last_closed);
    }
    return gl_error_set(err, GL_ERR_STATE,
                        "period %s has no collected hour and is not closed: nothing to show for "
                        "it (%s)",
                        p->name, held);
}

enum gl_status gl_frozen_focus(struct gl_store *s, const char *period, char **csv,
                               struct gl_error *err)
{
    return gl_query_frozen_focus(s, period, csv, err);
}

enum gl_status gl_frozen_invoices(struct gl_store *s, const char *period, const char *team,
                                  void (*fn)(void *ctx, const char *team, const char *json,
                                             const char *md),
                                  void *ctx, struct gl_error *err)
{
    return gl_query_frozen_invoices(s, period, team, fn, ctx, err);
}
