/* invoice_model — the invoice set as data: names of its kinds, the gaps'
 * text, freeing (invoice_model.h). */
#include "invoice_model.h"

#include <stdlib.h>
#include <string.h>

#include "gl_build.h"

#define GL_GENERATOR "gpuledger " GL_VERSION

static const char *const line_kind_names[GL_LINE_NKINDS] = {
    [GL_LINE_IDLE_SHARE] = "idle_share",
    [GL_LINE_MEMORY_USED] = "memory_used",
    [GL_LINE_OVERHEAD_SHARE] = "overhead_share",
    [GL_LINE_RESERVED_UNUSED] = "reserved_unused",
};

const char *gl_line_kind_name(enum gl_line_kind k)
{
    return (unsigned)k < GL_LINE_NKINDS ? line_kind_names[k] : "?";
}

bool gl_line_kind_parse(const char *name, enum gl_line_kind *out)
{
    for (int k = 0; k < GL_LINE_NKINDS; k++)
        if (strcmp(name, line_kind_names[k]) == 0) {
            *out = (enum gl_line_kind)k;
            return true;
        }
    return false;
}

const char *gl_anomaly_kind_name(enum gl_anomaly_kind k)
{
    return k == GL_ANOMALY_UNALLOCATED_USE ? "unallocated_use" : "excess_devices";
}

void gl_anomalies_free(struct gl_anomaly_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        struct gl_anomaly *a = &l->items[i];
        char *f[] = {a->cluster, a->ns, a->pod, a->team, a->node, a->device, a->model};
        for (int k = 0; k < 7; k++)
            free(f[k]);
    }
    free(l->items);
    memset(l, 0, sizeof *l);
}

static void info_free(struct gl_info_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].cluster);
        free(rows[i].model);
    }
    free(rows);
}

static void lines_free(struct gl_invoice_line *lines, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        free(lines[j].cluster);
        free(lines[j].model);
        free(lines[j].days);
    }
    free(lines);
}

void gl_invoices_free(struct gl_invoice_set *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->n; i++) {
        struct gl_invoice *inv = &set->invoices[i];
        lines_free(inv->lines, inv->nlines);
        free(inv->team);
        free(inv->invoice_id);
        info_free(inv->waste, inv->nwaste);
        info_free(inv->allocated, inv->nallocated);
        info_free(inv->compute, inv->ncompute);
        gl_anomalies_free(&inv->anomalies);
        free(inv->own_name);
        free(inv->own_cost_center);
    }
    free(set->invoices);
    free(set->generator);
    gl_gaps_free(set->gaps, set->ngaps);
    if (set->own) {
        for (size_t i = 0; i < sizeof set->own->strs / sizeof *set->own->strs; i++)
            free(set->own->strs[i]);
        for (size_t i = 0; i < set->own->nprices; i++) {
            struct gl_price_entry *e = &set->own->prices[i];
            free(e->id);
            free(e->pattern);
            free(e->currency);
        }
        free(set->own->prices);
        free(set->own);
    }
    free(set);
}

const char gl_generator[] = GL_GENERATOR;

const char *gl_gap_kind_name(enum gl_gap_kind k)
{
    switch (k) {
    case GL_GAP_MISSING: return "missing";
    case GL_GAP_REFUSED: return "refused";
    case GL_GAP_UNSETTLED: return "unsettled";
    case GL_GAP_NO_DATA: return "no_data";
    }
    return "?";
}

bool gl_gaps_describe(const struct gl_gap *g, size_t n, struct gl_buf *out)
{
    static const char *const what[] = {"hours not collected",
                                       "hours whose last collection was refused or failed",
                                       "collection short of the settle delay",
                                       "hours stored with no data from the backend"};
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        char a[32], b[32];
        gl_time_format(g[i].from, a, sizeof a);
        gl_time_format(g[i].to, b, sizeof b);
        bool cluster = i > 0 && strcmp(g[i - 1].cluster, g[i].cluster) == 0;
        bool kind = cluster && g[i - 1].kind == g[i].kind;
        if (!cluster)
            ok = gl_buf_printf(out, "%scluster %s: ", i ? "; " : "", g[i].cluster);
        if (ok && !kind)
            ok = gl_buf_printf(out, "%s%s ", cluster ? "; " : "",
                               (unsigned)g[i].kind < 4 ? what[g[i].kind] : "?");
        else if (ok)
            ok = gl_buf_puts(out, ", ");
        ok = ok && gl_buf_printf(out, "%s to %s (%lld h)", a, b,
                                 (long long)((g[i].to - g[i].from) / 3600));
    }
    return ok;
}

void gl_gaps_free(struct gl_gap *g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(g[i].cluster);
    free(g);
}
